/* client_grpc_typed.c — the grpc:// typed methods, HeteroSample and
 * LinkSample: the request encoded from the public structs
 * (proto/fs_wire_typed.c), and the answer, a stream of BatchImageChunks,
 * received into one buffer that is then checked and indexed in place.
 * Its own file: a typed batch is one image (fs_hetero.h), not the arrays
 * of an fs_batch_t, and arrives by its own sink. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_grpc_internal.h"
#include "fs_hetero.h"

/* ---- typed batches: a stream of BatchImageChunks into one image ---------------- */

/* What the first chunk's total_bytes is trusted with up front (from the
 * connection's buffer cache, as rows are); past it the buffer grows with
 * the bytes that actually arrive, so a server announcing more than it
 * sends costs no more than it sent. No image is larger than IMAGE_MAX. */
#define IMAGE_PREALLOC ((uint64_t)256 << 20)
#define IMAGE_MAX ((uint64_t)1 << 46)

typedef struct {
    const featstore_v1_BatchImageChunk *hdr; /* the chunk being decoded */
    rowbuf_cache_t *cache;
    rowbuf_t buf;                   /* cap bytes allocated; owned until handed to the batch */
    uint64_t total, done;           /* done: the end of the last chunk */
    uint64_t at, received;          /* this chunk's offset; bytes received */
    int holes;                      /* chunks may skip bytes (the cached rows: fs_gc_hot_spread fills them) */
    int started, placed;            /* placed: this chunk's data went to its place (placed_len bytes) */
    size_t placed_len;
    fs_wire_buf_t early;            /* data that came before its chunk's head */
    char problem[160];
} image_sink_t;

/* Room for the image's bytes up to `end` (<= total). */
static int image_reserve(image_sink_t *s, uint64_t end)
{
    if (end <= s->buf.cap) return 1;
    uint64_t cap = 2 * (uint64_t)s->buf.cap;
    if (cap < end) cap = end;
    if (cap > s->total) cap = s->total;
    void *p = realloc(s->buf.p, (size_t)cap);
    if (!p) {
        snprintf(s->problem, sizeof s->problem, "out of memory for %llu bytes of a typed batch", (unsigned long long)cap);
        return 0;
    }
    s->buf.p = p, s->buf.cap = (size_t)cap;
    return 1;
}

/* Checks a chunk's head against the stream (set up by the first one) and
 * makes room for its `len` bytes at its offset: where the last one ended,
 * or past it where the trainer caches the rows in between. */
static int image_accept(image_sink_t *s, const featstore_v1_BatchImageChunk *h, size_t len)
{
    if (!s->started) {
        uint64_t t = h->total_bytes;
        if (t < FS_HETERO_HEADER_BYTES || t % 8 || t > IMAGE_MAX || t > SIZE_MAX / 2) {
            snprintf(s->problem, sizeof s->problem, "the image announces %llu bytes (a typed batch is a multiple of 8, "
                     "at least %d)", (unsigned long long)t, FS_HETERO_HEADER_BYTES);
            return 0;
        }
        s->total = t;
        int ok = t <= IMAGE_PREALLOC ? fs_gc_cache_take(s->cache, (size_t)t, &s->buf)
                                     : fs_gc_rowbuf_alloc(&s->buf, IMAGE_PREALLOC);
        if (!ok) {
            snprintf(s->problem, sizeof s->problem, "out of memory for a typed batch of %llu bytes", (unsigned long long)t);
            return 0;
        }
        if (t > IMAGE_PREALLOC) s->buf.bytes = 0;
        s->started = 1;
    }
    if (h->total_bytes != s->total || h->offset < s->done || (h->offset > s->done && !s->holes) || len == 0 ||
        h->offset > s->total || len > s->total - h->offset) {
        snprintf(s->problem, sizeof s->problem, "chunk (%zu bytes at %llu of %llu) does not continue the image at "
                 "byte %llu", len, (unsigned long long)h->offset, (unsigned long long)h->total_bytes,
                 (unsigned long long)s->done);
        return 0;
    }
    s->at = h->offset;
    return image_reserve(s, s->at + len);
}

static bool image_data_cb(pb_istream_t *stream, const pb_field_t *field, void **arg)
{
    (void)field;
    image_sink_t *s = *arg;
    size_t len = stream->bytes_left;
    if (!s->hdr->total_bytes) return fs_wire_read_buf(stream, &s->early); /* head not seen yet: keep the bytes */
    if (!image_accept(s, s->hdr, len)) PB_RETURN_ERROR(stream, "image chunk does not fit the stream");
    s->placed = 1, s->placed_len = len;
    return pb_read(stream, (pb_byte_t *)s->buf.p + s->at, len);
}

/* After a chunk decoded: place data that came early, count its bytes. */
static int image_chunk_done(image_sink_t *s, const featstore_v1_BatchImageChunk *h)
{
    size_t len = s->placed_len;
    if (s->early.seen && s->placed) {
        snprintf(s->problem, sizeof s->problem, "a chunk carries its data twice at byte %llu", (unsigned long long)s->done);
        return 0;
    }
    if (s->early.seen) {
        len = s->early.len;
        if (!image_accept(s, h, len)) return 0;
        memcpy((char *)s->buf.p + s->at, s->early.data, len);
        fs_wire_buf_free(&s->early);
        s->early.seen = 0;
    } else if (!s->placed) {
        snprintf(s->problem, sizeof s->problem, "a chunk without data at byte %llu", (unsigned long long)s->done);
        return 0;
    }
    s->placed = 0, s->placed_len = 0;
    s->done = s->at + len, s->received += len;
    return 1;
}

typedef struct {
    fs_hetero_priv_t priv;
    rowbuf_t rows;            /* the image, from ... */
    rowbuf_cache_t *cache;    /* ... this cache (referenced while rows is set) */
} grpc_hetero_t;

static void release_hetero(fs_hetero_priv_t *p)
{
    grpc_hetero_t *b = (grpc_hetero_t *)p;
    free(p->index_mem);
    fs_gc_cache_give_back(b->cache, &b->rows);
    free(b);
}

/* The cached table's rows (node type 0's first table) put in place: the
 * bytes the server left out are its cached rows' (TypedSampling.cached). */
static fs_status_t spread_cached(fs_client_t *c, const char *method, const image_sink_t *s, const fs_hetero_index_t *ix)
{
    const fs_hetero_nodes_t *t = &ix->batch.types[0];
    const fs_rows_t *rows = ix->batch.num_node_types > 0 && t->tables ? &t->tables[0] : NULL;
    uint64_t missing = s->total - s->received;
    size_t row = rows && rows->data ? (size_t)rows->dim * fs_dtype_size(rows->dtype) : 0;
    if (!row || missing % row || missing / row > (uint64_t)t->num_nodes) {
        if (missing == 0) return FS_OK;
        return fs_client_fail(c, FS_ERR_FORMAT, "%s: %llu bytes of the typed batch did not come, not a number of its "
                              "cached rows", fs_gc_method_name(method), (unsigned long long)missing);
    }
    return fs_gc_hot_spread(c, t->nodes, t->num_nodes, (char *)rows->data, row,
                            t->num_nodes - (int64_t)(missing / row), fs_gc_method_name(method));
}

/* A typed batch over gRPC: the request (HeteroSampleRequest or
 * LinkSampleRequest) from the public structs, the image received into one
 * buffer, checked and indexed in place (fs_hetero_index: bytes from the
 * network are untrusted), as the unix:// client indexes its slot. */
fs_status_t fs_gc_hetero(fs_client_t *c, const fs_hetero_seeds_t *groups, size_t num_groups,
                         const fs_link_req_t *link, const fs_hetero_req_t *req, fs_hetero_batch_t **out)
{
    const char *method = link ? FS_WIRE_METHOD_LINK_SAMPLE : FS_WIRE_METHOD_HETERO_SAMPLE;
    fs_wire_hetero_out_t enc;
    featstore_v1_HeteroSampleRequest hmsg;
    featstore_v1_LinkSampleRequest lmsg;
    fs_error_t err = {0};
    fs_status_t st = link ? fs_wire_link_request(link, req, &enc, &lmsg, &err)
                          : fs_wire_hetero_request(groups, num_groups, req, &enc, &hmsg, &err);
    if (st != FS_OK) return fs_client_fail(c, st, "%s: %s", fs_gc_method_name(method), err.msg);
    featstore_v1_TypedSampling *sm = link ? &lmsg.sampling : &hmsg.sampling;
    if (req->num_node_tables > 0 && req->node_tables[0] &&
        (st = fs_gc_hot_ready(c, req->node_tables[0], req->out_dtype, &sm->cached, &sm->cache_instance)) != FS_OK)
        return st;
    image_sink_t sink;
    memset(&sink, 0, sizeof sink);
    sink.cache = conn_of(c)->rows_cache;
    sink.holes = sm->cached > 0;
    stream_t s;
    st = link ? fs_gc_stream_open(&s, c, method, featstore_v1_LinkSampleRequest_fields, &lmsg)
              : fs_gc_stream_open(&s, c, method, featstore_v1_HeteroSampleRequest_fields, &hmsg);
    grpc_byte_buffer *bb;
    while (st == FS_OK && s.open && (bb = fs_gc_stream_next(&s))) {
        featstore_v1_BatchImageChunk chunk = featstore_v1_BatchImageChunk_init_zero;
        sink.hdr = &chunk;
        chunk.data.funcs.decode = image_data_cb;
        chunk.data.arg = &sink;
        st = fs_wire_decode(bb, featstore_v1_BatchImageChunk_fields, &chunk, "chunk", &err);
        grpc_byte_buffer_destroy(bb);
        if (st != FS_OK)
            st = fs_client_fail(c, st, "%s: %s%s%s", fs_gc_method_name(method), err.msg, sink.problem[0] ? ": " : "",
                                sink.problem);
        else if (!image_chunk_done(&sink, &chunk))
            st = fs_client_fail(c, FS_ERR_FORMAT, "%s: %s", fs_gc_method_name(method), sink.problem);
    }
    st = fs_gc_stream_close(&s, st);
    if (st == FS_OK && (!sink.started || (sink.done != sink.total && !sink.holes)))
        st = fs_client_fail(c, FS_ERR_FORMAT, "%s: the stream ended after %llu of %llu bytes of the typed batch",
                            fs_gc_method_name(method), (unsigned long long)sink.done, (unsigned long long)sink.total);
    if (st == FS_OK && sink.holes && sink.total > sink.buf.cap && !image_reserve(&sink, sink.total))
        st = fs_client_fail(c, FS_ERR_NOMEM, "%s: %s", fs_gc_method_name(method), sink.problem);
    fs_hetero_index_t ix;
    if (st == FS_OK && (st = fs_hetero_index(sink.buf.p, (size_t)sink.total, 1, &ix, &err)) != FS_OK)
        st = fs_client_fail(c, st, "%s: %s", fs_gc_method_name(method), err.msg);
    if (st == FS_OK && sink.holes && (st = spread_cached(c, method, &sink, &ix)) != FS_OK) fs_hetero_index_free(&ix);
    grpc_hetero_t *b = NULL;
    if (st == FS_OK && !(b = calloc(1, sizeof *b))) {
        fs_hetero_index_free(&ix);
        st = fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    }
    fs_wire_buf_free(&sink.early);
    if (st != FS_OK) {
        fs_gc_rowbuf_free(&sink.buf);
        return st;
    }
    sink.buf.bytes = (size_t)sink.total;
    b->rows = sink.buf;
    b->cache = sink.cache;
    pthread_mutex_lock(&b->cache->mu);
    b->cache->refs++;
    pthread_mutex_unlock(&b->cache->mu);
    b->priv = (fs_hetero_priv_t){.pub = ix.batch, .index_mem = ix.mem, .release = release_hetero,
                                 .region = b->rows.p, .region_len = (size_t)sink.total};
    *out = &b->priv.pub;
    return FS_OK;
}
