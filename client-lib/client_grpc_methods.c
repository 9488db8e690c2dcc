/* client_grpc_methods.c — the grpc:// methods of 1.0-1.2: Info, Sample,
 * Gather, Split, SampleGather and Stats, and the two decoders they share
 * with Stream (client_grpc_epoch.c): a stream of feature rows into one
 * buffer, and a sample into a batch. Its own file: the methods every
 * trainer calls, on the call machinery of client_grpc_call.c.
 *
 * Feature rows are decoded straight from gRPC's slices into the batch's row
 * buffer: the `data` field's callback reads the chunk head decoded just
 * before it (first_row, rows, dtype) and copies the bytes to their place, so
 * every byte is copied once on this side. Everything a batch points at is
 * owned by the batch and freed by fs_batch_free. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_grpc_internal.h"
#include "fs_pb.h"

/* ---- streams of feature rows ---------------------------------------------------- */

/* Checks a chunk's head against the stream (set up by the first one). */
static int sink_accept_head(rows_sink_t *s, const featstore_v1_GatherChunk *h, size_t data_len)
{
    if (!s->started) {
        s->dtype = fs_dtype_from_name(h->dtype);
        if (s->dtype == FS_DTYPE_INVALID || h->dim < 0 || h->total_rows < 0) {
            snprintf(s->problem, sizeof s->problem, "chunk has dtype '%s', dim %lld, total_rows %lld", h->dtype,
                     (long long)h->dim, (long long)h->total_rows);
            return 0;
        }
        s->dim = h->dim, s->total_rows = h->total_rows;
        s->row_bytes = (size_t)h->dim * fs_dtype_size(s->dtype);
        int64_t room = s->total_rows > s->reserve_rows ? s->total_rows : s->reserve_rows;
        if (s->row_bytes && (uint64_t)room > SIZE_MAX / s->row_bytes) {
            snprintf(s->problem, sizeof s->problem, "chunk announces %lld rows of %zu bytes", (long long)h->total_rows,
                     s->row_bytes);
            return 0;
        }
        size_t bytes = (size_t)room * s->row_bytes;
        if (!fs_gc_cache_take(s->cache, bytes, &s->buf)) {
            snprintf(s->problem, sizeof s->problem, "out of memory for %zu bytes of rows", bytes);
            return 0;
        }
        s->rows = s->buf.p;
        s->started = 1;
    }
    if (fs_dtype_from_name(h->dtype) != s->dtype || h->dim != s->dim || h->total_rows != s->total_rows ||
        h->first_row != s->rows_done || h->rows < 0 || h->rows > s->total_rows - h->first_row ||
        data_len != (size_t)h->rows * s->row_bytes) {
        snprintf(s->problem, sizeof s->problem, "chunk (rows %lld+%lld of %lld, %zu bytes) does not continue the "
                 "stream at row %lld", (long long)h->first_row, (long long)h->rows, (long long)h->total_rows,
                 data_len, (long long)s->rows_done);
        return 0;
    }
    return 1;
}

static bool sink_data_cb(pb_istream_t *stream, const pb_field_t *field, void **arg)
{
    (void)field;
    rows_sink_t *s = *arg;
    size_t len = stream->bytes_left;
    if (!s->hdr->dtype[0]) return fs_wire_read_buf(stream, &s->early); /* head not seen yet: keep the bytes */
    if (!sink_accept_head(s, s->hdr, len)) PB_RETURN_ERROR(stream, "feature chunk does not fit the stream");
    s->placed = 1;
    return pb_read(stream, (pb_byte_t *)s->rows + (size_t)s->rows_done * s->row_bytes, len);
}

void fs_gc_sink_prepare(rows_sink_t *s, featstore_v1_GatherChunk *hdr)
{
    s->hdr = hdr;
    hdr->data.funcs.decode = sink_data_cb;
    hdr->data.arg = s;
}

/* After a chunk decoded: place data that came early, count its rows. */
static int sink_chunk_done(rows_sink_t *s, const featstore_v1_GatherChunk *h)
{
    if (s->early.seen) {
        if (!sink_accept_head(s, h, s->early.len)) return 0;
        if (s->early.len) memcpy(s->rows + (size_t)s->rows_done * s->row_bytes, s->early.data, s->early.len);
        fs_wire_buf_free(&s->early);
        s->early.seen = 0;
    } else if (!s->placed && !sink_accept_head(s, h, 0)) { /* no data field: only right for 0 rows */
        return 0;
    }
    s->placed = 0;
    s->rows_done += h->rows;
    return 1;
}

void fs_gc_sink_free(rows_sink_t *s)
{
    if (s->buf.p) fs_gc_rowbuf_free(&s->buf);
    fs_wire_buf_free(&s->early);
}

/* Decodes one message of a rows stream; `chunk` is its GatherChunk. */
fs_status_t fs_gc_decode_chunk(fs_client_t *c, const char *method, grpc_byte_buffer *bb, const pb_msgdesc_t *fields,
                               void *msg, const featstore_v1_GatherChunk *chunk, rows_sink_t *sink)
{
    fs_error_t err = {0};
    fs_status_t st = fs_wire_decode(bb, fields, msg, "chunk", &err);
    if (st != FS_OK)
        return fs_client_fail(c, st, "%s: %s%s%s", fs_gc_method_name(method), err.msg, sink->problem[0] ? ": " : "",
                              sink->problem);
    if (!sink_chunk_done(sink, chunk))
        return fs_client_fail(c, FS_ERR_FORMAT, "%s: %s", fs_gc_method_name(method), sink->problem);
    return FS_OK;
}

/* Moves the stream's rows into the batch. */
fs_status_t fs_gc_finish_rows(fs_client_t *c, const char *method, rows_sink_t *sink, grpc_batch_t *b)
{
    if (!sink->started || sink->rows_done != sink->total_rows)
        return fs_client_fail(c, FS_ERR_FORMAT, "%s: the stream ended after %lld of %lld rows",
                              fs_gc_method_name(method), (long long)sink->rows_done, (long long)sink->total_rows);
    fs_batch_t *p = &b->priv.pub;
    p->kind |= FS_BATCH_GATHER;
    p->rows = sink->total_rows, p->dim = sink->dim, p->dtype = sink->dtype;
    p->features = sink->rows;
    b->rows = sink->buf;
    b->priv.region = b->rows.p;
    b->priv.region_len = b->rows.bytes;
    b->cache = sink->cache;
    pthread_mutex_lock(&b->cache->mu);
    b->cache->refs++;
    pthread_mutex_unlock(&b->cache->mu);
    memset(&sink->buf, 0, sizeof sink->buf);
    sink->rows = NULL;
    return FS_OK;
}

/* ---- sample results ------------------------------------------------------------ */

static const int64_t no_values[1]; /* what empty arrays point at */
static const float no_weights[1];

/* Moves a decoded sample into the batch (arrays and ownership). */
fs_status_t fs_gc_adopt_sample(fs_client_t *c, const char *method, const featstore_v1_SampleResponse *msg,
                               fs_wire_sample_dst_t *dst, const fs_sample_req_t *req, grpc_batch_t *b)
{
    fs_sample_result_t res;
    fs_error_t err = {0};
    if (fs_wire_sample_result(msg, dst, &res, &err) != FS_OK)
        return fs_client_fail(c, err.code, "%s: %s", fs_gc_method_name(method), err.msg);
    fs_batch_t *p = &b->priv.pub;
    p->kind |= FS_BATCH_SAMPLE;
    p->num_hops = res.num_hops;
    p->num_nodes = res.num_nodes;
    p->nodes = res.nodes ? res.nodes : no_values;
    p->num_seeds = res.num_seeds;
    p->seed_local = res.seed_local ? res.seed_local : no_values;
    for (int h = 0; h < res.num_hops; h++) {
        fs_block_t *o = &b->priv.blocks[h];
        *o = res.block[h];
        if (!o->edge_dst) o->edge_dst = no_values;
        if (!o->edge_src) o->edge_src = no_values;
        if (!o->edge_ids && req->want_edge_ids) o->edge_ids = no_values;
        if (!o->edge_weights && req->locality > 1) o->edge_weights = no_weights; /* a hop without edges */
    }
    /* detach hands over the very blocks the pointers above point into */
    fs_gc_batch_own(b, fs_wire_buf_detach(&dst->nodes));
    fs_gc_batch_own(b, fs_wire_buf_detach(&dst->seed_local));
    for (int h = 0; h < FS_MAX_HOPS; h++)
        for (int k = 0; k < FS_WIRE_BLOCK_ARRAYS; k++) fs_gc_batch_own(b, fs_wire_buf_detach(&dst->arr[h][k]));
    return FS_OK;
}

/* ---- the transport's operations ------------------------------------------------ */

fs_status_t fs_gc_info(fs_client_t *c, fs_info_t **out)
{
    featstore_v1_InfoRequest req = {.api_version = FS_WIRE_API_VERSION};
    grpc_byte_buffer *bb;
    fs_status_t st = fs_gc_unary(c, FS_WIRE_METHOD_INFO, featstore_v1_InfoRequest_fields, &req, &bb);
    if (st != FS_OK) return st;
    featstore_v1_InfoResponse resp;
    fs_pb_info_in_t in;
    fs_error_t err = {0};
    st = fs_pb_info_prepare_decode(&resp, &in, &err);
    if (st != FS_OK) st = fs_client_fail(c, st, "%s", err.msg);
    if (st == FS_OK) st = fs_gc_decode_response(c, FS_WIRE_METHOD_INFO, bb, featstore_v1_InfoResponse_fields, &resp);
    if (st == FS_OK && fs_pb_info_take(&resp, &in, out, &err) != FS_OK) st = fs_client_fail(c, err.code, "%s", err.msg);
    if (st != FS_OK) fs_pb_info_abandon(&in);
    grpc_byte_buffer_destroy(bb);
    return st;
}

fs_status_t fs_gc_stats(fs_client_t *c, char **text)
{
    featstore_v1_StatsRequest req = {.api_version = FS_WIRE_API_VERSION};
    grpc_byte_buffer *bb;
    fs_status_t st = fs_gc_unary(c, FS_WIRE_METHOD_STATS, featstore_v1_StatsRequest_fields, &req, &bb);
    if (st != FS_OK) return st;
    featstore_v1_StatsResponse resp = featstore_v1_StatsResponse_init_zero;
    fs_wire_buf_t buf = {0};
    fs_wire_set_buf(&resp.prometheus_text, &buf);
    st = fs_gc_decode_response(c, FS_WIRE_METHOD_STATS, bb, featstore_v1_StatsResponse_fields, &resp);
    grpc_byte_buffer_destroy(bb);
    if (st == FS_OK) {
        *text = malloc(buf.len + 1);
        if (!*text) st = fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
        else {
            if (buf.len) memcpy(*text, buf.data, buf.len);
            (*text)[buf.len] = 0;
        }
    }
    fs_wire_buf_free(&buf);
    return st;
}

fs_status_t fs_gc_sample(fs_client_t *c, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
                         fs_batch_t **out)
{
    if (req->num_hops < 1 || req->num_hops > FS_MAX_HOPS)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "%d hops requested, must be 1..%d", req->num_hops,
                              FS_MAX_HOPS);
    featstore_v1_SampleRequest msg;
    fs_wire_bytes_t seed_bytes;
    fs_wire_sample_request(req, seeds, n, &seed_bytes, &msg);
    grpc_byte_buffer *bb;
    fs_status_t st = fs_gc_unary(c, FS_WIRE_METHOD_SAMPLE, featstore_v1_SampleRequest_fields, &msg, &bb);
    if (st != FS_OK) return st;
    featstore_v1_SampleResponse resp = featstore_v1_SampleResponse_init_zero;
    fs_wire_sample_dst_t dst;
    memset(&dst, 0, sizeof dst);
    fs_wire_sample_response_prepare(&resp, &dst);
    st = fs_gc_decode_response(c, FS_WIRE_METHOD_SAMPLE, bb, featstore_v1_SampleResponse_fields, &resp);
    grpc_byte_buffer_destroy(bb);
    grpc_batch_t *b = st == FS_OK ? fs_gc_batch_new(c) : NULL;
    if (st == FS_OK && !b) st = FS_ERR_NOMEM;
    if (st == FS_OK) st = fs_gc_adopt_sample(c, FS_WIRE_METHOD_SAMPLE, &resp, &dst, req, b);
    fs_wire_sample_dst_free(&dst);
    if (st != FS_OK) {
        if (b) fs_gc_batch_release(&b->priv);
        return st;
    }
    *out = &b->priv.pub;
    return FS_OK;
}

fs_status_t fs_gc_table_args(fs_client_t *c, const char *table, fs_dtype_t out_dtype, char *name, size_t name_size,
                             char *dtype, size_t dtype_size)
{
    if (strlen(table) >= name_size)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "table name '%s' is longer than %zu bytes", table,
                              name_size - 1);
    if (!fs_out_dtype_valid(out_dtype))
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "out_dtype %d is not a dtype", (int)out_dtype);
    snprintf(name, name_size, "%s", table);
    snprintf(dtype, dtype_size, "%s", fs_out_dtype_name(out_dtype));
    return FS_OK;
}

/* A call whose answer is a stream of GatherChunks: its rows, in a batch. */
static fs_status_t recv_rows(fs_client_t *c, const char *method, const pb_msgdesc_t *fields, const void *req,
                             grpc_batch_t **out, uint64_t *instance)
{
    grpc_batch_t *b = fs_gc_batch_new(c);
    if (!b) return FS_ERR_NOMEM;
    rows_sink_t sink;
    memset(&sink, 0, sizeof sink);
    sink.cache = conn_of(c)->rows_cache;
    stream_t s;
    fs_status_t st = fs_gc_stream_open(&s, c, method, fields, req);
    grpc_byte_buffer *bb;
    while (st == FS_OK && s.open && (bb = fs_gc_stream_next(&s))) {
        featstore_v1_GatherChunk chunk = featstore_v1_GatherChunk_init_zero;
        fs_gc_sink_prepare(&sink, &chunk);
        st = fs_gc_decode_chunk(c, method, bb, featstore_v1_GatherChunk_fields, &chunk, &chunk, &sink);
        grpc_byte_buffer_destroy(bb);
        if (instance) *instance = chunk.instance;
    }
    st = fs_gc_stream_close(&s, st);
    if (st == FS_OK) st = fs_gc_finish_rows(c, method, &sink, b);
    fs_gc_sink_free(&sink);
    if (st != FS_OK) {
        fs_gc_batch_release(&b->priv);
        return st;
    }
    *out = b;
    return FS_OK;
}

fs_status_t fs_gc_gather(fs_client_t *c, const int64_t *ids, int64_t n, const char *table, fs_dtype_t out_dtype,
                         fs_batch_t **out)
{
    featstore_v1_GatherRequest req = featstore_v1_GatherRequest_init_zero;
    fs_status_t st = fs_gc_table_args(c, table, out_dtype, req.table, sizeof req.table, req.out_dtype,
                                      sizeof req.out_dtype);
    if (st != FS_OK) return st;
    req.api_version = FS_WIRE_API_VERSION;
    fs_wire_bytes_t id_bytes;
    fs_wire_set_bytes(&req.ids, &id_bytes, ids, (size_t)n * sizeof(int64_t));
    grpc_batch_t *b;
    st = recv_rows(c, FS_WIRE_METHOD_GATHER, featstore_v1_GatherRequest_fields, &req, &b, NULL);
    if (st == FS_OK) *out = &b->priv.pub;
    return st;
}

/* ---- splits: a stream of int64 rows, kept in a batch --------------------------- */

typedef struct {
    fs_ids_priv_t priv;
    grpc_batch_t *rows;
} grpc_ids_t;

static void release_ids(fs_ids_priv_t *p)
{
    grpc_ids_t *g = (grpc_ids_t *)p;
    fs_gc_batch_release(&g->rows->priv);
    free(g);
}

fs_status_t fs_gc_split(fs_client_t *c, const char *name, fs_ids_t **out)
{
    return fs_gc_ids(c, name, 0, out, NULL);
}

fs_status_t fs_gc_ids(fs_client_t *c, const char *name, int64_t hot, fs_ids_t **out, uint64_t *instance)
{
    featstore_v1_SplitRequest req = featstore_v1_SplitRequest_init_zero;
    req.api_version = FS_WIRE_API_VERSION;
    snprintf(req.name, sizeof req.name, "%s", name);
    req.hot = hot;
    grpc_batch_t *b;
    if (instance) *instance = 0;
    fs_status_t st = recv_rows(c, FS_WIRE_METHOD_SPLIT, featstore_v1_SplitRequest_fields, &req, &b, instance);
    if (st != FS_OK) return st;
    grpc_ids_t *g = NULL;
    if (b->priv.pub.dtype != FS_DTYPE_I64 || b->priv.pub.dim != 1)
        st = fs_client_fail(c, FS_ERR_FORMAT, "Split: the server sent %s rows of dim %lld, not int64 ids",
                            fs_dtype_name(b->priv.pub.dtype), (long long)b->priv.pub.dim);
    else if (!(g = calloc(1, sizeof *g)))
        st = fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    if (st != FS_OK) {
        fs_gc_batch_release(&b->priv);
        return st;
    }
    g->priv.release = release_ids;
    g->priv.pub.n = b->priv.pub.rows;
    g->priv.pub.ids = b->priv.pub.features;
    g->rows = b;
    *out = &g->priv.pub;
    return FS_OK;
}

fs_status_t fs_gc_sample_gather(fs_client_t *c, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
                                const char *table, fs_dtype_t out_dtype, fs_batch_t **out)
{
    if (req->num_hops < 1 || req->num_hops > FS_MAX_HOPS)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "%d hops requested, must be 1..%d", req->num_hops,
                              FS_MAX_HOPS);
    featstore_v1_SampleGatherRequest msg = featstore_v1_SampleGatherRequest_init_zero;
    fs_status_t st = fs_gc_table_args(c, table, out_dtype, msg.table, sizeof msg.table, msg.out_dtype,
                                      sizeof msg.out_dtype);
    if (st != FS_OK) return st;
    msg.api_version = FS_WIRE_API_VERSION;
    msg.has_sample = true;
    fs_wire_bytes_t seed_bytes;
    fs_wire_sample_request(req, seeds, n, &seed_bytes, &msg.sample);
    grpc_batch_t *b = fs_gc_batch_new(c);
    if (!b) return FS_ERR_NOMEM;
    rows_sink_t sink;
    memset(&sink, 0, sizeof sink);
    sink.cache = conn_of(c)->rows_cache;
    fs_wire_sample_dst_t dst;
    memset(&dst, 0, sizeof dst);
    featstore_v1_SampleGatherChunk *chunk = malloc(sizeof *chunk); /* about 1 KB: keep it off the stack */
    if (!chunk) st = fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    stream_t s;
    if (st == FS_OK)
        st = fs_gc_stream_open(&s, c, FS_WIRE_METHOD_SAMPLE_GATHER, featstore_v1_SampleGatherRequest_fields, &msg);
    else memset(&s, 0, sizeof s);
    grpc_byte_buffer *bb;
    int have_sample = 0;
    while (st == FS_OK && s.open && (bb = fs_gc_stream_next(&s))) {
        *chunk = (featstore_v1_SampleGatherChunk)featstore_v1_SampleGatherChunk_init_zero;
        fs_wire_sample_response_prepare(&chunk->sample, &dst);
        fs_gc_sink_prepare(&sink, &chunk->features);
        st = fs_gc_decode_chunk(c, FS_WIRE_METHOD_SAMPLE_GATHER, bb, featstore_v1_SampleGatherChunk_fields, chunk,
                                &chunk->features, &sink);
        grpc_byte_buffer_destroy(bb);
        if (st == FS_OK && chunk->has_sample != !have_sample)
            st = fs_client_fail(c, FS_ERR_FORMAT, "SampleGather: the sample must come in the first message, once");
        if (st == FS_OK && chunk->has_sample) {
            st = fs_gc_adopt_sample(c, FS_WIRE_METHOD_SAMPLE_GATHER, &chunk->sample, &dst, req, b);
            have_sample = 1;
        }
    }
    st = fs_gc_stream_close(&s, st);
    if (st == FS_OK && !have_sample) st = fs_client_fail(c, FS_ERR_FORMAT, "SampleGather: no sample received");
    if (st == FS_OK) st = fs_gc_finish_rows(c, FS_WIRE_METHOD_SAMPLE_GATHER, &sink, b);
    if (st == FS_OK && b->priv.pub.rows != b->priv.pub.num_nodes)
        st = fs_client_fail(c, FS_ERR_FORMAT, "SampleGather: %lld feature rows for %lld nodes",
                            (long long)b->priv.pub.rows, (long long)b->priv.pub.num_nodes);
    fs_gc_sink_free(&sink);
    fs_wire_sample_dst_free(&dst);
    free(chunk);
    if (st != FS_OK) {
        fs_gc_batch_release(&b->priv);
        return st;
    }
    *out = &b->priv.pub;
    return FS_OK;
}
