/* client_grpc_epoch.c — the grpc:// Stream method: an epoch's batches made
 * by the server, for client-lib/stream.c (the transport's epoch_open, _next
 * and _close). One call stays open for the whole epoch: it has no deadline
 * of its own, but with timeout_ms set each message must come within it.
 * Its own file: the one method whose call outlives the function that
 * opened it, read a batch at a time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_grpc_internal.h"

/* ---- epoch streams: the Stream method -------------------------------------------- */

/* One Stream call: its batches are read one at a time, each a head message
 * (sample, numbers, labels) and then its rows messages, so the server
 * runs at most gRPC's flow-control window ahead of the stream's producer. */
struct fs_epoch_call {
    fs_client_t *c;
    stream_t s;
    fs_sample_req_t req;          /* what fs_gc_adopt_sample reads */
    int has_table, delta, has_labels, done;
    int cached;                   /* the Stream names the connection's hot rows (client_grpc_hot.c) */
    int64_t batch_size, next;     /* the index the next batch must carry */
    featstore_v1_StreamChunk msg; /* about 1 KB: off the stack */
};

fs_status_t fs_gc_epoch_open(fs_client_t *c, const fs_epoch_call_req_t *q, struct fs_epoch_call **out)
{
    *out = NULL;
    struct fs_epoch_call *e = calloc(1, sizeof *e);
    featstore_v1_StreamRequest *m = calloc(1, sizeof *m);
    fs_status_t st = e && m ? FS_OK : fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    if (st == FS_OK) st = fs_gc_table_args(c, q->table, q->out_dtype, m->table, sizeof m->table, m->out_dtype,
                                           sizeof m->out_dtype);
    if (st == FS_OK && (strlen(q->labels) >= sizeof m->labels || (q->split && strlen(q->split) >= sizeof m->split)))
        st = fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "Stream: a table or split name is too long");
    if (st != FS_OK) {
        free(e), free(m);
        return st;
    }
    fs_wire_bytes_t no_seeds, seeds;
    m->api_version = FS_WIRE_API_VERSION_TYPED;
    m->has_sample = true;
    fs_wire_sample_request(q->sample, NULL, 0, &no_seeds, &m->sample);
    snprintf(m->labels, sizeof m->labels, "%s", q->labels);
    snprintf(m->split, sizeof m->split, "%s", q->split ? q->split : "");
    if (!m->split[0]) fs_wire_set_bytes(&m->seeds, &seeds, q->seeds, sizeof(int64_t) * (size_t)q->num_seeds);
    const fs_epoch_opts_t *p = q->plan;
    m->batch_size = p->batch_size, m->drop_last = p->drop_last, m->chunk = p->chunk, m->shuffle_seed = p->seed;
    m->epoch = p->epoch, m->rank = p->rank, m->world_size = p->world_size;
    snprintf(m->order, sizeof m->order, "%s", fs_wire_order_name(p->order));
    m->delta = q->delta, m->window = q->window, m->start_batch = q->start_batch;
    if (q->table[0] && !q->delta) st = fs_gc_hot_ready(c, q->table, q->out_dtype, &m->cached, &m->cache_instance);
    if (st != FS_OK) {
        free(e), free(m);
        return st;
    }
    *e = (struct fs_epoch_call){.c = c, .req = *q->sample, .has_table = q->table[0] != 0, .delta = q->delta,
                                .has_labels = q->labels[0] != 0, .batch_size = p->batch_size, .next = q->start_batch,
                                .cached = m->cached > 0};
    st = fs_gc_stream_open_within(&e->s, c, FS_WIRE_METHOD_STREAM, featstore_v1_StreamRequest_fields, m,
                                  c->opts.timeout_ms > 0 ? c->opts.timeout_ms : 0);
    free(m);
    if (st != FS_OK) {
        fs_gc_stream_close(&e->s, st);
        free(e);
        return st;
    }
    *out = e;
    return FS_OK;
}

/* The call ended (no next message): its status, or `clean` when that is OK
 * (FS_END between batches; inside one, the server broke the format). */
static fs_status_t epoch_ended(struct fs_epoch_call *e, fs_status_t clean)
{
    e->done = 1;
    fs_status_t st = fs_gc_stream_close(&e->s, FS_OK);
    if (e->s.timed_out)
        return fs_client_fail(e->c, FS_ERR_TIMEOUT, "Stream: no message from the server for %d ms (timeout_ms); "
                              "the call was cancelled", e->s.recv_ms);
    if (st != FS_OK || clean == FS_END) return st == FS_OK ? FS_END : st;
    return fs_client_fail(e->c, clean, "Stream: the server ended the call inside batch %lld", (long long)e->next);
}

/* A batch's head: its sample into b, its labels, its numbers. */
static fs_status_t epoch_head(struct fs_epoch_call *e, grpc_byte_buffer *bb, grpc_batch_t *b, int64_t *labels,
                              fs_epoch_call_batch_t *out)
{
    featstore_v1_StreamChunk *m = &e->msg;
    *m = (featstore_v1_StreamChunk)featstore_v1_StreamChunk_init_zero;
    fs_wire_sample_dst_t dst;
    memset(&dst, 0, sizeof dst);
    fs_wire_sample_response_prepare(&m->sample, &dst);
    fs_wire_buf_t lbuf = {.flags = FS_WIRE_FIXED, .mem = labels, .cap = sizeof(int64_t) * (size_t)e->batch_size};
    fs_wire_set_buf(&m->labels, &lbuf);
    fs_status_t st = fs_gc_decode_response(e->c, FS_WIRE_METHOD_STREAM, bb, featstore_v1_StreamChunk_fields, m);
    if (st == FS_OK && (!m->has_sample || m->has_features || m->batch != e->next))
        st = fs_client_fail(e->c, FS_ERR_FORMAT, "Stream: batch %lld must open with its sample and no rows (got "
                            "batch %lld%s%s)", (long long)e->next, (long long)m->batch,
                            m->has_sample ? "" : ", no sample", m->has_features ? ", rows" : "");
    fs_error_t err = {0};
    if (st == FS_OK && fs_wire_sample_fill_edge_dst(&m->sample, &dst, &err) != FS_OK)
        st = fs_client_fail(e->c, err.code, "Stream: %s", err.msg);
    if (st == FS_OK) st = fs_gc_adopt_sample(e->c, FS_WIRE_METHOD_STREAM, &m->sample, &dst, &e->req, b);
    if (st == FS_OK && lbuf.len != (e->has_labels ? sizeof(int64_t) * (size_t)b->priv.pub.num_seeds : 0))
        st = fs_client_fail(e->c, FS_ERR_FORMAT, "Stream: batch %lld has %zu bytes of labels for %lld seeds",
                            (long long)e->next, lbuf.len, (long long)b->priv.pub.num_seeds);
    fs_wire_sample_dst_free(&dst);
    out->index = m->batch, out->plan_index = m->plan_batch;
    return st;
}

/* A batch's rows messages, until its rows are complete. */
static fs_status_t epoch_rows(struct fs_epoch_call *e, rows_sink_t *sink)
{
    fs_status_t st = FS_OK;
    while (st == FS_OK && !(sink->started && sink->rows_done == sink->total_rows)) {
        grpc_byte_buffer *bb = fs_gc_stream_next(&e->s);
        if (!bb) return epoch_ended(e, FS_ERR_FORMAT);
        featstore_v1_StreamChunk *m = &e->msg;
        *m = (featstore_v1_StreamChunk)featstore_v1_StreamChunk_init_zero;
        fs_gc_sink_prepare(sink, &m->features);
        st = fs_gc_decode_chunk(e->c, FS_WIRE_METHOD_STREAM, bb, featstore_v1_StreamChunk_fields, m, &m->features,
                                sink);
        grpc_byte_buffer_destroy(bb);
        if (st == FS_OK && (m->has_sample || !m->has_features))
            st = fs_client_fail(e->c, FS_ERR_FORMAT, "Stream: batch %lld's rows message has %s", (long long)e->next,
                                m->has_sample ? "a sample" : "no rows");
    }
    return st;
}

fs_status_t fs_gc_epoch_next(struct fs_epoch_call *e, fs_epoch_call_batch_t *out, int64_t *labels)
{
    memset(out, 0, sizeof *out);
    if (e->done) return fs_client_fail(e->c, FS_ERR_INVALID_ARGUMENT, "Stream: the call has ended");
    grpc_byte_buffer *bb = fs_gc_stream_next(&e->s);
    if (!bb) return epoch_ended(e, FS_END);
    grpc_batch_t *b = fs_gc_batch_new(e->c), *rows = NULL;
    fs_status_t st = b ? epoch_head(e, bb, b, labels, out) : FS_ERR_NOMEM;
    grpc_byte_buffer_destroy(bb);
    if (st == FS_OK && e->has_table) {
        rows_sink_t sink;
        memset(&sink, 0, sizeof sink);
        sink.cache = conn_of(e->c)->rows_cache;
        sink.reserve_rows = e->cached ? b->priv.pub.num_nodes : 0; /* the cached rows join the received */
        st = epoch_rows(e, &sink);
        if (st == FS_OK && e->delta && !(rows = fs_gc_batch_new(e->c))) st = FS_ERR_NOMEM;
        if (st == FS_OK) st = fs_gc_finish_rows(e->c, FS_WIRE_METHOD_STREAM, &sink, rows ? rows : b);
        fs_batch_t *p = &b->priv.pub;
        if (st == FS_OK && e->cached &&
            (st = fs_gc_hot_spread(e->c, p->nodes, p->num_nodes, (char *)p->features,
                                   (size_t)p->dim * fs_dtype_size(p->dtype), p->rows, "Stream")) == FS_OK)
            p->rows = p->num_nodes;
        if (st == FS_OK && !e->delta && b->priv.pub.rows != b->priv.pub.num_nodes)
            st = fs_client_fail(e->c, FS_ERR_FORMAT, "Stream: %lld feature rows for %lld nodes",
                                (long long)b->priv.pub.rows, (long long)b->priv.pub.num_nodes);
        fs_gc_sink_free(&sink);
    }
    if (st != FS_OK) {
        if (b) fs_gc_batch_release(&b->priv);
        if (rows) fs_gc_batch_release(&rows->priv);
        return st;
    }
    e->next++;
    out->batch = &b->priv.pub;
    out->rows = rows ? &rows->priv.pub : NULL;
    return FS_OK;
}

void fs_gc_epoch_close(struct fs_epoch_call *e)
{
    if (!e) return;
    if (!e->done) fs_gc_stream_close(&e->s, FS_ERR_UNAVAILABLE); /* cancels a call still running */
    free(e);
}
