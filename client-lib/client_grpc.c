/* client_grpc.c — the grpc:// transport: featstore.proto over gRPC's C core.
 *
 * Calls are blocking: each connection has one channel and one completion
 * queue, and the calling thread waits on the queue for its own batch (the
 * connection is used by one thread at a time, client.h). Unary methods are a
 * single six-op batch; streams send the request, then receive one message at
 * a time until the end, then read the status.
 *
 * Feature rows are decoded straight from gRPC's slices into the batch's row
 * buffer: the `data` field's callback reads the chunk head decoded just
 * before it (first_row, rows, dtype) and copies the bytes to their place, so
 * every byte is copied once on this side. Everything a batch points at is
 * owned by the batch and freed by fs_batch_free.
 *
 * Row buffers: first-touch page faults on a fresh 128 MiB buffer cost more
 * than copying the rows into it (and large blocks go straight back to the
 * system when freed), so the connection keeps the last buffer a batch
 * released for its next call: a training loop that frees each batch before
 * asking for the next one reuses memory that is already mapped.
 * The cache is shared by the connection and its batches (reference counted),
 * because batches may outlive the connection and be freed from any thread.
 *
 * Errors: a gRPC status maps back to an fs_status_t (fs_wire_fs_status) and
 * the server's detail string becomes the connection's errstr.
 *
 * Security: grpcs:// is gRPC's SSL channel credentials (the server checked
 * against tls_ca_file or gRPC's default roots; a client certificate for
 * mTLS); grpc:// is plaintext and refuses TLS files rather than ignore them.
 * A token goes out as `authorization: Bearer <token>` initial metadata on
 * every call. Each option falls back to its environment variable
 * (client.h); a token is never written into an error message.
 *
 * Fork: a forked child's fs_close leaves the inherited channel to the
 * parent (g_close), and the child can open a channel of its own only if
 * gRPC was not running in the parent when it forked (grpc_start).
 *
 * Built into the static library, and on its own into libfeatstore-grpc.so,
 * which the shared library loads on the first grpc:// connection
 * (client_internal.h); the plugin exports only FS_GRPC_PLUGIN_SYMBOL. */
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_internal.h"
#include "fs_addr.h"
#include "fs_hetero.h"
#include "fs_pb.h"
#include "fs_wire.h"

#define CONNECT_TIMEOUT_MS 10000
#define MAX_TOKEN_BYTES 4096
#define TAG_CALL ((void *)1)
#define TAG_CONNECT ((void *)2)

/* ---- row buffers ------------------------------------------------------------ */

typedef struct {
    void *p;
    size_t bytes;   /* in use */
    size_t cap;     /* allocated */
} rowbuf_t;

static int rowbuf_alloc(rowbuf_t *r, size_t bytes)
{
    r->p = malloc(bytes ? bytes : 1);
    r->bytes = r->cap = r->p ? bytes : 0;
    return r->p != NULL;
}

static void rowbuf_free(rowbuf_t *r)
{
    free(r->p);
    memset(r, 0, sizeof *r);
}

typedef struct {
    pthread_mutex_t mu;
    int refs;        /* the connection (while open) + every batch holding a buffer */
    int open;
    rowbuf_t spare;
} rowbuf_cache_t;

static rowbuf_cache_t *cache_new(void)
{
    rowbuf_cache_t *k = calloc(1, sizeof *k);
    if (!k) return NULL;
    pthread_mutex_init(&k->mu, NULL);
    k->refs = 1, k->open = 1;
    return k;
}

static void cache_unref_locked_then_unlock(rowbuf_cache_t *k)
{
    int last = --k->refs == 0;
    pthread_mutex_unlock(&k->mu);
    if (last) {
        rowbuf_free(&k->spare);
        pthread_mutex_destroy(&k->mu);
        free(k);
    }
}

/* A buffer of `bytes`: the spare if it fits without wasting more than half. */
static int cache_take(rowbuf_cache_t *k, size_t bytes, rowbuf_t *out)
{
    pthread_mutex_lock(&k->mu);
    if (k->spare.p && k->spare.cap >= bytes && k->spare.cap / 2 <= bytes) {
        *out = k->spare;
        out->bytes = bytes;
        memset(&k->spare, 0, sizeof k->spare);
        pthread_mutex_unlock(&k->mu);
        return 1;
    }
    pthread_mutex_unlock(&k->mu);
    return rowbuf_alloc(out, bytes);
}

/* Hands a batch's buffer back (kept as the spare if the connection is open
 * and it is the biggest seen) and drops the batch's reference. */
static void cache_give_back(rowbuf_cache_t *k, rowbuf_t *r)
{
    rowbuf_t drop = *r;
    pthread_mutex_lock(&k->mu);
    if (k->open && r->p && r->cap >= k->spare.cap) {
        drop = k->spare;
        k->spare = *r;
    }
    memset(r, 0, sizeof *r);
    rowbuf_free(&drop);
    cache_unref_locked_then_unlock(k);
}

static void cache_close(rowbuf_cache_t *k)
{
    pthread_mutex_lock(&k->mu);
    k->open = 0;
    rowbuf_free(&k->spare);
    cache_unref_locked_then_unlock(k);
}

/* ---- connections and batches ------------------------------------------------ */

typedef struct {
    grpc_channel *channel;
    grpc_completion_queue *cq;
    rowbuf_cache_t *rows_cache;
    char target[sizeof ((fs_addr_t *)0)->target]; /* host:port, as fs_addr_uri wrote it */
    const char *scheme;          /* "grpc" or "grpcs" (TLS), for messages */
    grpc_metadata auth;          /* authorization: Bearer <token> ... */
    int has_auth;                /* ... when a token was given */
} conn_t;

/* A result: the public batch plus every block it owns: at most what
 * adopt_sample detaches, nodes, seed_local and each hop's every array. */
#define MAX_OWNED (2 + FS_WIRE_BLOCK_ARRAYS * FS_MAX_HOPS)
typedef struct {
    fs_batch_priv_t priv;
    void *owned[MAX_OWNED];
    int num_owned;
    rowbuf_t rows;            /* the features, from ... */
    rowbuf_cache_t *cache;    /* ... this cache (referenced while rows is set) */
} grpc_batch_t;

static const int64_t no_values[1]; /* what empty arrays point at */
static const float no_weights[1];

static void batch_release(fs_batch_priv_t *p)
{
    grpc_batch_t *b = (grpc_batch_t *)p;
    for (int i = 0; i < b->num_owned; i++) free(b->owned[i]);
    if (b->cache) cache_give_back(b->cache, &b->rows);
    free(b);
}

static grpc_batch_t *batch_new(fs_client_t *c)
{
    grpc_batch_t *b = calloc(1, sizeof *b);
    if (!b) {
        fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    b->priv.release = batch_release;
    b->priv.pub.blocks = b->priv.blocks;
    b->priv.pub.features_device = -1; /* host memory, always, over the network */
    return b;
}

static void batch_own(grpc_batch_t *b, void *p)
{
    if (p) b->owned[b->num_owned++] = p;
}

/* ---- calls ------------------------------------------------------------------- */

static conn_t *conn_of(fs_client_t *c) { return c->impl; }

static gpr_timespec deadline_in(int ms)
{
    if (ms <= 0) return gpr_inf_future(GPR_CLOCK_REALTIME);
    return gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_millis(ms, GPR_TIMESPAN));
}

/* The queue only holds this connection's one pending batch. */
static int wait_tag(conn_t *k)
{
    grpc_event ev = grpc_completion_queue_next(k->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    return ev.type == GRPC_OP_COMPLETE && ev.success;
}

static const char *method_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

typedef struct {
    fs_client_t *c;
    const char *method;
    grpc_call *call;
    grpc_metadata auth;           /* this call's copy: gRPC writes into a sent grpc_metadata */
    grpc_metadata_array initial_md, trailing_md;
    grpc_status_code status;
    grpc_slice details;
} rpc_t;

/* A call with the given deadline (ms from now; 0 = none). */
static fs_status_t rpc_open(rpc_t *r, fs_client_t *c, const char *method, int deadline_ms)
{
    memset(r, 0, sizeof *r);
    r->c = c;
    r->method = method;
    grpc_metadata_array_init(&r->initial_md);
    grpc_metadata_array_init(&r->trailing_md);
    r->details = grpc_empty_slice();
    conn_t *k = conn_of(c);
    r->call = grpc_channel_create_call(k->channel, NULL, GRPC_PROPAGATE_DEFAULTS, k->cq,
                                       grpc_slice_from_static_string(method), NULL, deadline_in(deadline_ms),
                                       NULL);
    if (!r->call) return fs_client_fail(c, FS_ERR_INTERNAL, "%s: cannot create a gRPC call", method_name(method));
    return FS_OK;
}

/* The call's outcome as an fs_status_t, with the server's detail. */
static fs_status_t rpc_status(rpc_t *r)
{
    if (r->status == GRPC_STATUS_OK) return FS_OK;
    char *details = grpc_slice_to_c_string(r->details);
    fs_status_t st = fs_wire_fs_status(r->status);
    fs_client_fail(r->c, st, "%s: %s", method_name(r->method), details && details[0] ? details : fs_strerror(st));
    gpr_free(details);
    return st;
}

static void rpc_close(rpc_t *r)
{
    if (r->call) grpc_call_unref(r->call);
    grpc_metadata_array_destroy(&r->initial_md);
    grpc_metadata_array_destroy(&r->trailing_md);
    grpc_slice_unref(r->details);
}

static void op_set(grpc_op *op, grpc_op_type type)
{
    memset(op, 0, sizeof *op);
    op->op = type;
}

/* Fills the ops that send the request (with the token, if any) and half-close. */
static size_t ops_send_request(rpc_t *r, grpc_op *ops, grpc_byte_buffer *req)
{
    op_set(&ops[0], GRPC_OP_SEND_INITIAL_METADATA);
    conn_t *k = conn_of(r->c);
    if (k->has_auth) {
        r->auth = k->auth;
        ops[0].data.send_initial_metadata.count = 1;
        ops[0].data.send_initial_metadata.metadata = &r->auth;
    }
    op_set(&ops[1], GRPC_OP_SEND_MESSAGE);
    ops[1].data.send_message.send_message = req;
    op_set(&ops[2], GRPC_OP_SEND_CLOSE_FROM_CLIENT);
    op_set(&ops[3], GRPC_OP_RECV_INITIAL_METADATA);
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &r->initial_md;
    return 4;
}

static void op_recv_status(rpc_t *r, grpc_op *op)
{
    op_set(op, GRPC_OP_RECV_STATUS_ON_CLIENT);
    op->data.recv_status_on_client.trailing_metadata = &r->trailing_md;
    op->data.recv_status_on_client.status = &r->status;
    op->data.recv_status_on_client.status_details = &r->details;
}

static grpc_byte_buffer *encode_request(fs_client_t *c, const char *method, const pb_msgdesc_t *fields, const void *msg)
{
    fs_error_t err = {0};
    grpc_byte_buffer *bb = fs_wire_encode(fields, msg, &err);
    if (!bb) fs_client_fail(c, err.code, "%s: %s", method_name(method), err.msg);
    return bb;
}

/* One request, one response message. */
static fs_status_t unary(fs_client_t *c, const char *method, const pb_msgdesc_t *req_fields, const void *req,
                         grpc_byte_buffer **resp)
{
    *resp = NULL;
    grpc_byte_buffer *send = encode_request(c, method, req_fields, req);
    if (!send) return FS_ERR_NOMEM;
    rpc_t r;
    fs_status_t st = rpc_open(&r, c, method, c->opts.timeout_ms);
    if (st == FS_OK) {
        grpc_op ops[6];
        size_t n = ops_send_request(&r, ops, send);
        op_set(&ops[n], GRPC_OP_RECV_MESSAGE);
        ops[n++].data.recv_message.recv_message = resp;
        op_recv_status(&r, &ops[n++]);
        if (grpc_call_start_batch(r.call, ops, n, TAG_CALL, NULL) != GRPC_CALL_OK || !wait_tag(conn_of(c)))
            st = fs_client_fail(c, FS_ERR_INTERNAL, "%s: the gRPC batch failed", method_name(method));
        else st = rpc_status(&r);
        if (st == FS_OK && !*resp)
            st = fs_client_fail(c, FS_ERR_FORMAT, "%s: the server sent no response message", method_name(method));
    }
    rpc_close(&r);
    grpc_byte_buffer_destroy(send);
    if (st != FS_OK && *resp) {
        grpc_byte_buffer_destroy(*resp);
        *resp = NULL;
    }
    return st;
}

static fs_status_t decode_response(fs_client_t *c, const char *method, grpc_byte_buffer *bb,
                                   const pb_msgdesc_t *fields, void *msg)
{
    fs_error_t err = {0};
    fs_status_t st = fs_wire_decode(bb, fields, msg, "response", &err);
    if (st != FS_OK) fs_client_fail(c, st, "%s: %s", method_name(method), err.msg);
    return st;
}

/* ---- streams of feature rows ---------------------------------------------------- */

/* Where the rows of a stream go; fed by the `data` callback of each chunk. */
typedef struct {
    const featstore_v1_GatherChunk *hdr; /* the chunk being decoded */
    rowbuf_cache_t *cache;
    rowbuf_t buf;                         /* total_rows * row_bytes, owned until handed to the batch */
    char *rows;                           /* = buf.p */
    int64_t total_rows, dim, rows_done;
    fs_dtype_t dtype;
    size_t row_bytes;
    int started, placed;
    fs_wire_buf_t early;                  /* data that came before its chunk's head */
    char problem[160];
} rows_sink_t;

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
        if (s->row_bytes && (uint64_t)s->total_rows > SIZE_MAX / s->row_bytes) {
            snprintf(s->problem, sizeof s->problem, "chunk announces %lld rows of %zu bytes", (long long)h->total_rows,
                     s->row_bytes);
            return 0;
        }
        size_t bytes = (size_t)s->total_rows * s->row_bytes;
        if (!cache_take(s->cache, bytes, &s->buf)) {
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

static void sink_prepare(rows_sink_t *s, featstore_v1_GatherChunk *hdr)
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

static void sink_free(rows_sink_t *s)
{
    if (s->buf.p) rowbuf_free(&s->buf);
    fs_wire_buf_free(&s->early);
}

/* A server-streaming call: request sent, then messages one by one, the
 * receive of the next one already started while the caller decodes. */
typedef struct {
    rpc_t r;
    grpc_byte_buffer *send;
    grpc_byte_buffer *incoming; /* target of the pending receive */
    int open, pending;
    int recv_ms;                /* > 0: no call deadline, but each message within this */
    int timed_out;              /* a message did not come in time: the call was cancelled */
} stream_t;

/* recv_ms 0: the call has the connection's deadline (timeout_ms); > 0: the
 * call has none (an epoch stream lasts as long as its trainer), each
 * message must come within recv_ms instead. */
static fs_status_t stream_open_within(stream_t *s, fs_client_t *c, const char *method, const pb_msgdesc_t *fields,
                                      const void *req, int recv_ms)
{
    memset(s, 0, sizeof *s);
    s->recv_ms = recv_ms;
    s->send = encode_request(c, method, fields, req);
    if (!s->send) return FS_ERR_NOMEM;
    fs_status_t st = rpc_open(&s->r, c, method, recv_ms > 0 ? 0 : c->opts.timeout_ms);
    if (st != FS_OK) return st;
    s->open = 1;
    grpc_op ops[4];
    size_t n = ops_send_request(&s->r, ops, s->send);
    if (grpc_call_start_batch(s->r.call, ops, n, TAG_CALL, NULL) != GRPC_CALL_OK)
        return fs_client_fail(c, FS_ERR_INTERNAL, "%s: the gRPC batch failed", method_name(method));
    wait_tag(conn_of(c)); /* a failure here shows in the status */
    return FS_OK;
}

static fs_status_t stream_open(stream_t *s, fs_client_t *c, const char *method, const pb_msgdesc_t *fields,
                               const void *req)
{
    return stream_open_within(s, c, method, fields, req, 0);
}

/* Waits for the pending receive, at most recv_ms when set: a late message
 * cancels the call (its batch then completes, failed). */
static int wait_recv(stream_t *s)
{
    conn_t *k = conn_of(s->r.c);
    if (s->recv_ms <= 0) return wait_tag(k);
    grpc_event ev = grpc_completion_queue_next(k->cq, deadline_in(s->recv_ms), NULL);
    if (ev.type != GRPC_QUEUE_TIMEOUT) return ev.type == GRPC_OP_COMPLETE && ev.success;
    s->timed_out = 1;
    grpc_call_cancel(s->r.call, NULL);
    wait_tag(k);
    return 0;
}

static void stream_start_recv(stream_t *s)
{
    grpc_op op;
    op_set(&op, GRPC_OP_RECV_MESSAGE);
    op.data.recv_message.recv_message = &s->incoming;
    s->incoming = NULL;
    s->pending = grpc_call_start_batch(s->r.call, &op, 1, TAG_CALL, NULL) == GRPC_CALL_OK;
}

/* Waits for the pending receive; its message (or NULL). */
static grpc_byte_buffer *stream_finish_recv(stream_t *s)
{
    int ok = s->pending && wait_recv(s);
    s->pending = 0;
    grpc_byte_buffer *bb = s->incoming;
    s->incoming = NULL;
    if (!ok && bb) {
        grpc_byte_buffer_destroy(bb);
        bb = NULL;
    }
    return bb;
}

/* The next message, or NULL at the end of the stream. gRPC allows one
 * receive in flight: the next one starts as soon as this one is in, so the
 * transport can read ahead while the caller decodes. */
static grpc_byte_buffer *stream_next(stream_t *s)
{
    if (!s->pending) stream_start_recv(s);
    grpc_byte_buffer *bb = stream_finish_recv(s);
    if (bb) stream_start_recv(s);
    return bb;
}

/* Ends the stream: reads the status (cancelling first if we stop early). */
static fs_status_t stream_close(stream_t *s, fs_status_t st)
{
    if (s->open) {
        if (st != FS_OK) grpc_call_cancel(s->r.call, NULL);
        grpc_byte_buffer *left = stream_finish_recv(s); /* a receive still pending completes (cancelled) */
        if (left) grpc_byte_buffer_destroy(left);
        grpc_op op;
        op_recv_status(&s->r, &op);
        int ok = grpc_call_start_batch(s->r.call, &op, 1, TAG_CALL, NULL) == GRPC_CALL_OK && wait_tag(conn_of(s->r.c));
        if (st == FS_OK) {
            if (!ok) st = fs_client_fail(s->r.c, FS_ERR_INTERNAL, "%s: no status", method_name(s->r.method));
            else st = rpc_status(&s->r);
        }
        rpc_close(&s->r);
    }
    if (s->send) grpc_byte_buffer_destroy(s->send);
    return st;
}

/* Decodes one message of a rows stream; `chunk` is its GatherChunk. */
static fs_status_t decode_chunk(fs_client_t *c, const char *method, grpc_byte_buffer *bb, const pb_msgdesc_t *fields,
                                void *msg, const featstore_v1_GatherChunk *chunk, rows_sink_t *sink)
{
    fs_error_t err = {0};
    fs_status_t st = fs_wire_decode(bb, fields, msg, "chunk", &err);
    if (st != FS_OK)
        return fs_client_fail(c, st, "%s: %s%s%s", method_name(method), err.msg, sink->problem[0] ? ": " : "",
                              sink->problem);
    if (!sink_chunk_done(sink, chunk))
        return fs_client_fail(c, FS_ERR_FORMAT, "%s: %s", method_name(method), sink->problem);
    return FS_OK;
}

/* Moves the stream's rows into the batch. */
static fs_status_t finish_rows(fs_client_t *c, const char *method, rows_sink_t *sink, grpc_batch_t *b)
{
    if (!sink->started || sink->rows_done != sink->total_rows)
        return fs_client_fail(c, FS_ERR_FORMAT, "%s: the stream ended after %lld of %lld rows", method_name(method),
                              (long long)sink->rows_done, (long long)sink->total_rows);
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

/* Moves a decoded sample into the batch (arrays and ownership). */
static fs_status_t adopt_sample(fs_client_t *c, const char *method, const featstore_v1_SampleResponse *msg,
                                fs_wire_sample_dst_t *dst, const fs_sample_req_t *req, grpc_batch_t *b)
{
    fs_sample_result_t res;
    fs_error_t err = {0};
    if (fs_wire_sample_result(msg, dst, &res, &err) != FS_OK)
        return fs_client_fail(c, err.code, "%s: %s", method_name(method), err.msg);
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
    batch_own(b, fs_wire_buf_detach(&dst->nodes));
    batch_own(b, fs_wire_buf_detach(&dst->seed_local));
    for (int h = 0; h < FS_MAX_HOPS; h++)
        for (int k = 0; k < FS_WIRE_BLOCK_ARRAYS; k++) batch_own(b, fs_wire_buf_detach(&dst->arr[h][k]));
    return FS_OK;
}

/* ---- the transport's operations ------------------------------------------------ */

static fs_status_t g_info(fs_client_t *c, fs_info_t **out)
{
    featstore_v1_InfoRequest req = {.api_version = FS_WIRE_API_VERSION};
    grpc_byte_buffer *bb;
    fs_status_t st = unary(c, FS_WIRE_METHOD_INFO, featstore_v1_InfoRequest_fields, &req, &bb);
    if (st != FS_OK) return st;
    featstore_v1_InfoResponse resp;
    fs_pb_info_in_t in;
    fs_error_t err = {0};
    st = fs_pb_info_prepare_decode(&resp, &in, &err);
    if (st != FS_OK) st = fs_client_fail(c, st, "%s", err.msg);
    if (st == FS_OK) st = decode_response(c, FS_WIRE_METHOD_INFO, bb, featstore_v1_InfoResponse_fields, &resp);
    if (st == FS_OK && fs_pb_info_take(&resp, &in, out, &err) != FS_OK) st = fs_client_fail(c, err.code, "%s", err.msg);
    if (st != FS_OK) fs_pb_info_abandon(&in);
    grpc_byte_buffer_destroy(bb);
    return st;
}

static fs_status_t g_sample(fs_client_t *c, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
                            fs_batch_t **out)
{
    if (req->num_hops < 1 || req->num_hops > FS_MAX_HOPS)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "%d hops requested, must be 1..%d", req->num_hops,
                              FS_MAX_HOPS);
    featstore_v1_SampleRequest msg;
    fs_wire_bytes_t seed_bytes;
    fs_wire_sample_request(req, seeds, n, &seed_bytes, &msg);
    grpc_byte_buffer *bb;
    fs_status_t st = unary(c, FS_WIRE_METHOD_SAMPLE, featstore_v1_SampleRequest_fields, &msg, &bb);
    if (st != FS_OK) return st;
    featstore_v1_SampleResponse resp = featstore_v1_SampleResponse_init_zero;
    fs_wire_sample_dst_t dst;
    memset(&dst, 0, sizeof dst);
    fs_wire_sample_response_prepare(&resp, &dst);
    st = decode_response(c, FS_WIRE_METHOD_SAMPLE, bb, featstore_v1_SampleResponse_fields, &resp);
    grpc_byte_buffer_destroy(bb);
    grpc_batch_t *b = st == FS_OK ? batch_new(c) : NULL;
    if (st == FS_OK && !b) st = FS_ERR_NOMEM;
    if (st == FS_OK) st = adopt_sample(c, FS_WIRE_METHOD_SAMPLE, &resp, &dst, req, b);
    fs_wire_sample_dst_free(&dst);
    if (st != FS_OK) {
        if (b) batch_release(&b->priv);
        return st;
    }
    *out = &b->priv.pub;
    return FS_OK;
}

static fs_status_t table_args(fs_client_t *c, const char *table, fs_dtype_t out_dtype, char *name, size_t name_size,
                              char *dtype, size_t dtype_size)
{
    if (strlen(table) >= name_size)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "table name '%s' is longer than %zu bytes", table,
                              name_size - 1);
    if (out_dtype != FS_DTYPE_INVALID && !fs_dtype_size(out_dtype))
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "out_dtype %d is not a dtype", (int)out_dtype);
    snprintf(name, name_size, "%s", table);
    snprintf(dtype, dtype_size, "%s", out_dtype == FS_DTYPE_INVALID ? "" : fs_dtype_name(out_dtype));
    return FS_OK;
}

/* A call whose answer is a stream of GatherChunks: its rows, in a batch. */
static fs_status_t recv_rows(fs_client_t *c, const char *method, const pb_msgdesc_t *fields, const void *req,
                             grpc_batch_t **out)
{
    grpc_batch_t *b = batch_new(c);
    if (!b) return FS_ERR_NOMEM;
    rows_sink_t sink;
    memset(&sink, 0, sizeof sink);
    sink.cache = conn_of(c)->rows_cache;
    stream_t s;
    fs_status_t st = stream_open(&s, c, method, fields, req);
    grpc_byte_buffer *bb;
    while (st == FS_OK && s.open && (bb = stream_next(&s))) {
        featstore_v1_GatherChunk chunk = featstore_v1_GatherChunk_init_zero;
        sink_prepare(&sink, &chunk);
        st = decode_chunk(c, method, bb, featstore_v1_GatherChunk_fields, &chunk, &chunk, &sink);
        grpc_byte_buffer_destroy(bb);
    }
    st = stream_close(&s, st);
    if (st == FS_OK) st = finish_rows(c, method, &sink, b);
    sink_free(&sink);
    if (st != FS_OK) {
        batch_release(&b->priv);
        return st;
    }
    *out = b;
    return FS_OK;
}

static fs_status_t g_gather(fs_client_t *c, const int64_t *ids, int64_t n, const char *table, fs_dtype_t out_dtype,
                            fs_batch_t **out)
{
    featstore_v1_GatherRequest req = featstore_v1_GatherRequest_init_zero;
    fs_status_t st = table_args(c, table, out_dtype, req.table, sizeof req.table, req.out_dtype, sizeof req.out_dtype);
    if (st != FS_OK) return st;
    req.api_version = FS_WIRE_API_VERSION;
    fs_wire_bytes_t id_bytes;
    fs_wire_set_bytes(&req.ids, &id_bytes, ids, (size_t)n * sizeof(int64_t));
    grpc_batch_t *b;
    st = recv_rows(c, FS_WIRE_METHOD_GATHER, featstore_v1_GatherRequest_fields, &req, &b);
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
    batch_release(&g->rows->priv);
    free(g);
}

static fs_status_t g_split(fs_client_t *c, const char *name, fs_ids_t **out)
{
    featstore_v1_SplitRequest req = featstore_v1_SplitRequest_init_zero;
    req.api_version = FS_WIRE_API_VERSION;
    snprintf(req.name, sizeof req.name, "%s", name);
    grpc_batch_t *b;
    fs_status_t st = recv_rows(c, FS_WIRE_METHOD_SPLIT, featstore_v1_SplitRequest_fields, &req, &b);
    if (st != FS_OK) return st;
    grpc_ids_t *g = NULL;
    if (b->priv.pub.dtype != FS_DTYPE_I64 || b->priv.pub.dim != 1)
        st = fs_client_fail(c, FS_ERR_FORMAT, "Split: the server sent %s rows of dim %lld, not int64 ids",
                            fs_dtype_name(b->priv.pub.dtype), (long long)b->priv.pub.dim);
    else if (!(g = calloc(1, sizeof *g)))
        st = fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    if (st != FS_OK) {
        batch_release(&b->priv);
        return st;
    }
    g->priv.release = release_ids;
    g->priv.pub.n = b->priv.pub.rows;
    g->priv.pub.ids = b->priv.pub.features;
    g->rows = b;
    *out = &g->priv.pub;
    return FS_OK;
}

static fs_status_t g_sample_gather(fs_client_t *c, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
                                   const char *table, fs_dtype_t out_dtype, fs_batch_t **out)
{
    if (req->num_hops < 1 || req->num_hops > FS_MAX_HOPS)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "%d hops requested, must be 1..%d", req->num_hops,
                              FS_MAX_HOPS);
    featstore_v1_SampleGatherRequest msg = featstore_v1_SampleGatherRequest_init_zero;
    fs_status_t st = table_args(c, table, out_dtype, msg.table, sizeof msg.table, msg.out_dtype, sizeof msg.out_dtype);
    if (st != FS_OK) return st;
    msg.api_version = FS_WIRE_API_VERSION;
    msg.has_sample = true;
    fs_wire_bytes_t seed_bytes;
    fs_wire_sample_request(req, seeds, n, &seed_bytes, &msg.sample);
    grpc_batch_t *b = batch_new(c);
    if (!b) return FS_ERR_NOMEM;
    rows_sink_t sink;
    memset(&sink, 0, sizeof sink);
    sink.cache = conn_of(c)->rows_cache;
    fs_wire_sample_dst_t dst;
    memset(&dst, 0, sizeof dst);
    featstore_v1_SampleGatherChunk *chunk = malloc(sizeof *chunk); /* about 1 KB: keep it off the stack */
    if (!chunk) st = fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    stream_t s;
    if (st == FS_OK) st = stream_open(&s, c, FS_WIRE_METHOD_SAMPLE_GATHER, featstore_v1_SampleGatherRequest_fields, &msg);
    else memset(&s, 0, sizeof s);
    grpc_byte_buffer *bb;
    int have_sample = 0;
    while (st == FS_OK && s.open && (bb = stream_next(&s))) {
        *chunk = (featstore_v1_SampleGatherChunk)featstore_v1_SampleGatherChunk_init_zero;
        fs_wire_sample_response_prepare(&chunk->sample, &dst);
        sink_prepare(&sink, &chunk->features);
        st = decode_chunk(c, FS_WIRE_METHOD_SAMPLE_GATHER, bb, featstore_v1_SampleGatherChunk_fields, chunk,
                          &chunk->features, &sink);
        grpc_byte_buffer_destroy(bb);
        if (st == FS_OK && chunk->has_sample != !have_sample)
            st = fs_client_fail(c, FS_ERR_FORMAT, "SampleGather: the sample must come in the first message, once");
        if (st == FS_OK && chunk->has_sample) {
            st = adopt_sample(c, FS_WIRE_METHOD_SAMPLE_GATHER, &chunk->sample, &dst, req, b);
            have_sample = 1;
        }
    }
    st = stream_close(&s, st);
    if (st == FS_OK && !have_sample) st = fs_client_fail(c, FS_ERR_FORMAT, "SampleGather: no sample received");
    if (st == FS_OK) st = finish_rows(c, FS_WIRE_METHOD_SAMPLE_GATHER, &sink, b);
    if (st == FS_OK && b->priv.pub.rows != b->priv.pub.num_nodes)
        st = fs_client_fail(c, FS_ERR_FORMAT, "SampleGather: %lld feature rows for %lld nodes",
                            (long long)b->priv.pub.rows, (long long)b->priv.pub.num_nodes);
    sink_free(&sink);
    fs_wire_sample_dst_free(&dst);
    free(chunk);
    if (st != FS_OK) {
        batch_release(&b->priv);
        return st;
    }
    *out = &b->priv.pub;
    return FS_OK;
}

/* ---- epoch streams: the Stream method -------------------------------------------- */

/* One Stream call: its batches are read one at a time, each a head message
 * (sample, numbers, labels) and then its rows messages, so the server
 * runs at most gRPC's flow-control window ahead of the stream's producer. */
struct fs_epoch_call {
    fs_client_t *c;
    stream_t s;
    fs_sample_req_t req;          /* what adopt_sample reads */
    int has_table, delta, has_labels, done;
    int64_t batch_size, next;     /* the index the next batch must carry */
    featstore_v1_StreamChunk msg; /* about 1 KB: off the stack */
};

static fs_status_t g_epoch_open(fs_client_t *c, const fs_epoch_call_req_t *q, struct fs_epoch_call **out)
{
    *out = NULL;
    struct fs_epoch_call *e = calloc(1, sizeof *e);
    featstore_v1_StreamRequest *m = calloc(1, sizeof *m);
    fs_status_t st = e && m ? FS_OK : fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    if (st == FS_OK) st = table_args(c, q->table, q->out_dtype, m->table, sizeof m->table, m->out_dtype,
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
    *e = (struct fs_epoch_call){.c = c, .req = *q->sample, .has_table = q->table[0] != 0, .delta = q->delta,
                                .has_labels = q->labels[0] != 0, .batch_size = p->batch_size, .next = q->start_batch};
    st = stream_open_within(&e->s, c, FS_WIRE_METHOD_STREAM, featstore_v1_StreamRequest_fields, m,
                            c->opts.timeout_ms > 0 ? c->opts.timeout_ms : 0);
    free(m);
    if (st != FS_OK) {
        stream_close(&e->s, st);
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
    fs_status_t st = stream_close(&e->s, FS_OK);
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
    fs_status_t st = decode_response(e->c, FS_WIRE_METHOD_STREAM, bb, featstore_v1_StreamChunk_fields, m);
    if (st == FS_OK && (!m->has_sample || m->has_features || m->batch != e->next))
        st = fs_client_fail(e->c, FS_ERR_FORMAT, "Stream: batch %lld must open with its sample and no rows (got "
                            "batch %lld%s%s)", (long long)e->next, (long long)m->batch,
                            m->has_sample ? "" : ", no sample", m->has_features ? ", rows" : "");
    fs_error_t err = {0};
    if (st == FS_OK && fs_wire_sample_fill_edge_dst(&m->sample, &dst, &err) != FS_OK)
        st = fs_client_fail(e->c, err.code, "Stream: %s", err.msg);
    if (st == FS_OK) st = adopt_sample(e->c, FS_WIRE_METHOD_STREAM, &m->sample, &dst, &e->req, b);
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
        grpc_byte_buffer *bb = stream_next(&e->s);
        if (!bb) return epoch_ended(e, FS_ERR_FORMAT);
        featstore_v1_StreamChunk *m = &e->msg;
        *m = (featstore_v1_StreamChunk)featstore_v1_StreamChunk_init_zero;
        sink_prepare(sink, &m->features);
        st = decode_chunk(e->c, FS_WIRE_METHOD_STREAM, bb, featstore_v1_StreamChunk_fields, m, &m->features, sink);
        grpc_byte_buffer_destroy(bb);
        if (st == FS_OK && (m->has_sample || !m->has_features))
            st = fs_client_fail(e->c, FS_ERR_FORMAT, "Stream: batch %lld's rows message has %s", (long long)e->next,
                                m->has_sample ? "a sample" : "no rows");
    }
    return st;
}

static fs_status_t g_epoch_next(struct fs_epoch_call *e, fs_epoch_call_batch_t *out, int64_t *labels)
{
    memset(out, 0, sizeof *out);
    if (e->done) return fs_client_fail(e->c, FS_ERR_INVALID_ARGUMENT, "Stream: the call has ended");
    grpc_byte_buffer *bb = stream_next(&e->s);
    if (!bb) return epoch_ended(e, FS_END);
    grpc_batch_t *b = batch_new(e->c), *rows = NULL;
    fs_status_t st = b ? epoch_head(e, bb, b, labels, out) : FS_ERR_NOMEM;
    grpc_byte_buffer_destroy(bb);
    if (st == FS_OK && e->has_table) {
        rows_sink_t sink;
        memset(&sink, 0, sizeof sink);
        sink.cache = conn_of(e->c)->rows_cache;
        st = epoch_rows(e, &sink);
        if (st == FS_OK && e->delta && !(rows = batch_new(e->c))) st = FS_ERR_NOMEM;
        if (st == FS_OK) st = finish_rows(e->c, FS_WIRE_METHOD_STREAM, &sink, rows ? rows : b);
        if (st == FS_OK && !e->delta && b->priv.pub.rows != b->priv.pub.num_nodes)
            st = fs_client_fail(e->c, FS_ERR_FORMAT, "Stream: %lld feature rows for %lld nodes",
                                (long long)b->priv.pub.rows, (long long)b->priv.pub.num_nodes);
        sink_free(&sink);
    }
    if (st != FS_OK) {
        if (b) batch_release(&b->priv);
        if (rows) batch_release(&rows->priv);
        return st;
    }
    e->next++;
    out->batch = &b->priv.pub;
    out->rows = rows ? &rows->priv.pub : NULL;
    return FS_OK;
}

static void g_epoch_close(struct fs_epoch_call *e)
{
    if (!e) return;
    if (!e->done) stream_close(&e->s, FS_ERR_UNAVAILABLE); /* cancels a call still running */
    free(e);
}

static fs_status_t g_stats(fs_client_t *c, char **text)
{
    featstore_v1_StatsRequest req = {.api_version = FS_WIRE_API_VERSION};
    grpc_byte_buffer *bb;
    fs_status_t st = unary(c, FS_WIRE_METHOD_STATS, featstore_v1_StatsRequest_fields, &req, &bb);
    if (st != FS_OK) return st;
    featstore_v1_StatsResponse resp = featstore_v1_StatsResponse_init_zero;
    fs_wire_buf_t buf = {0};
    fs_wire_set_buf(&resp.prometheus_text, &buf);
    st = decode_response(c, FS_WIRE_METHOD_STATS, bb, featstore_v1_StatsResponse_fields, &resp);
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
    uint64_t total, done;
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
 * makes room for its `len` bytes at s->done. */
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
        int ok = t <= IMAGE_PREALLOC ? cache_take(s->cache, (size_t)t, &s->buf) : rowbuf_alloc(&s->buf, IMAGE_PREALLOC);
        if (!ok) {
            snprintf(s->problem, sizeof s->problem, "out of memory for a typed batch of %llu bytes", (unsigned long long)t);
            return 0;
        }
        if (t > IMAGE_PREALLOC) s->buf.bytes = 0;
        s->started = 1;
    }
    if (h->total_bytes != s->total || h->offset != s->done || len == 0 || len > s->total - s->done) {
        snprintf(s->problem, sizeof s->problem, "chunk (%zu bytes at %llu of %llu) does not continue the image at "
                 "byte %llu", len, (unsigned long long)h->offset, (unsigned long long)h->total_bytes,
                 (unsigned long long)s->done);
        return 0;
    }
    return image_reserve(s, s->done + len);
}

static bool image_data_cb(pb_istream_t *stream, const pb_field_t *field, void **arg)
{
    (void)field;
    image_sink_t *s = *arg;
    size_t len = stream->bytes_left;
    if (!s->hdr->total_bytes) return fs_wire_read_buf(stream, &s->early); /* head not seen yet: keep the bytes */
    if (!image_accept(s, s->hdr, len)) PB_RETURN_ERROR(stream, "image chunk does not fit the stream");
    s->placed = 1, s->placed_len = len;
    return pb_read(stream, (pb_byte_t *)s->buf.p + s->done, len);
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
        memcpy((char *)s->buf.p + s->done, s->early.data, len);
        fs_wire_buf_free(&s->early);
        s->early.seen = 0;
    } else if (!s->placed) {
        snprintf(s->problem, sizeof s->problem, "a chunk without data at byte %llu", (unsigned long long)s->done);
        return 0;
    }
    s->placed = 0, s->placed_len = 0;
    s->done += len;
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
    cache_give_back(b->cache, &b->rows);
    free(b);
}

/* A typed batch over gRPC: the request (HeteroSampleRequest or
 * LinkSampleRequest) from the public structs, the image received into one
 * buffer, checked and indexed in place (fs_hetero_index: bytes from the
 * network are untrusted), as the unix:// client indexes its slot. */
static fs_status_t g_hetero(fs_client_t *c, const fs_hetero_seeds_t *groups, size_t num_groups,
                            const fs_link_req_t *link, const fs_hetero_req_t *req, fs_hetero_batch_t **out)
{
    const char *method = link ? FS_WIRE_METHOD_LINK_SAMPLE : FS_WIRE_METHOD_HETERO_SAMPLE;
    fs_wire_hetero_out_t enc;
    featstore_v1_HeteroSampleRequest hmsg;
    featstore_v1_LinkSampleRequest lmsg;
    fs_error_t err = {0};
    fs_status_t st = link ? fs_wire_link_request(link, req, &enc, &lmsg, &err)
                          : fs_wire_hetero_request(groups, num_groups, req, &enc, &hmsg, &err);
    if (st != FS_OK) return fs_client_fail(c, st, "%s: %s", method_name(method), err.msg);
    image_sink_t sink;
    memset(&sink, 0, sizeof sink);
    sink.cache = conn_of(c)->rows_cache;
    stream_t s;
    st = link ? stream_open(&s, c, method, featstore_v1_LinkSampleRequest_fields, &lmsg)
              : stream_open(&s, c, method, featstore_v1_HeteroSampleRequest_fields, &hmsg);
    grpc_byte_buffer *bb;
    while (st == FS_OK && s.open && (bb = stream_next(&s))) {
        featstore_v1_BatchImageChunk chunk = featstore_v1_BatchImageChunk_init_zero;
        sink.hdr = &chunk;
        chunk.data.funcs.decode = image_data_cb;
        chunk.data.arg = &sink;
        st = fs_wire_decode(bb, featstore_v1_BatchImageChunk_fields, &chunk, "chunk", &err);
        grpc_byte_buffer_destroy(bb);
        if (st != FS_OK)
            st = fs_client_fail(c, st, "%s: %s%s%s", method_name(method), err.msg, sink.problem[0] ? ": " : "",
                                sink.problem);
        else if (!image_chunk_done(&sink, &chunk))
            st = fs_client_fail(c, FS_ERR_FORMAT, "%s: %s", method_name(method), sink.problem);
    }
    st = stream_close(&s, st);
    if (st == FS_OK && (!sink.started || sink.done != sink.total))
        st = fs_client_fail(c, FS_ERR_FORMAT, "%s: the stream ended after %llu of %llu bytes of the typed batch",
                            method_name(method), (unsigned long long)sink.done, (unsigned long long)sink.total);
    fs_hetero_index_t ix;
    if (st == FS_OK && (st = fs_hetero_index(sink.buf.p, (size_t)sink.total, 1, &ix, &err)) != FS_OK)
        st = fs_client_fail(c, st, "%s: %s", method_name(method), err.msg);
    grpc_hetero_t *b = NULL;
    if (st == FS_OK && !(b = calloc(1, sizeof *b))) {
        fs_hetero_index_free(&ix);
        st = fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    }
    fs_wire_buf_free(&sink.early);
    if (st != FS_OK) {
        rowbuf_free(&sink.buf);
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

/* gRPC's threads (timers, executor) start with grpc_init and exist only in
 * the process that started them. A process forked while gRPC was running
 * (a connection open, or a gRPC server in the same process) inherits
 * gRPC's state without them: a channel made there never connects, not even
 * by its deadline, whose timer thread is gone. A fork handler notes whether
 * gRPC was running at the fork, and such a child's connections are refused
 * at once, with the reason, rather than left to hang. A child forked while
 * gRPC was not running starts its own. The handler is installed by the
 * process's first grpc:// connection: forks before it are not watched. The
 * Python binding closes its grpc:// connections before os.fork, so that
 * its children can connect (client-lib/python/featstore/client.py). */
static pthread_once_t watch_once = PTHREAD_ONCE_INIT;
static int running_at_fork; /* fork_prepare's reading, in the forking process */
static pid_t forking_pid;
static pid_t forked_from;   /* in a child forked while gRPC ran: its parent; else 0 */

static void fork_prepare(void)
{
    running_at_fork = grpc_is_initialized(); /* every thread still exists here: its lock is safe to take */
    forking_pid = getpid();
}

static void fork_child(void)
{
    if (running_at_fork) forked_from = forking_pid;
}

static void watch_forks(void) { pthread_atfork(fork_prepare, NULL, fork_child); }

static fs_status_t grpc_start(fs_client_t *c, const char *scheme)
{
    pthread_once(&watch_once, watch_forks);
    if (forked_from)
        return fs_client_fail(c, FS_ERR_UNSUPPORTED, "%s:// cannot connect in process %ld: it was forked from process "
                              "%ld while that was running gRPC, whose threads do not survive fork() (a channel here "
                              "would never connect). Fork while no grpc:// connection is open (close them first; the "
                              "Python binding does), start workers with spawn, or use unix://", scheme,
                              (long)getpid(), (long)forked_from);
    grpc_init();
    return FS_OK;
}

static void conn_destroy(conn_t *k)
{
    if (k->channel) grpc_channel_destroy(k->channel);
    if (k->cq) {
        grpc_completion_queue_shutdown(k->cq);
        while (grpc_completion_queue_next(k->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
               GRPC_QUEUE_SHUTDOWN) {
        }
        grpc_completion_queue_destroy(k->cq);
    }
    if (k->rows_cache) cache_close(k->rows_cache);
    if (k->has_auth) grpc_slice_unref(k->auth.value);
    free(k);
    grpc_shutdown(); /* pairs with fs_grpc_connect's grpc_start */
}

/* In a forked child the channel and queue are left alone: gRPC's threads,
 * which they depend on, exist only in the opener, and shutting them down
 * here could wait forever. Only the child's plain memory is freed. */
static void g_close(fs_client_t *c)
{
    conn_t *k = c->impl;
    c->impl = NULL;
    if (!k) return;
    if (!fs_client_foreign(c)) {
        conn_destroy(k);
        return;
    }
    if (k->rows_cache) cache_close(k->rows_cache);
    free(k);
}

static const fs_transport_ops_t grpc_ops = {
    .name = "grpc",
    .info = g_info,
    .sample = g_sample,
    .gather = g_gather,
    .sample_gather = g_sample_gather,
    .stats = g_stats,
    .split = g_split,
    .hetero = g_hetero,
    .epoch_open = g_epoch_open,
    .epoch_next = g_epoch_next,
    .epoch_close = g_epoch_close,
    .close = g_close,
};

/* ---- connecting ---------------------------------------------------------------- */

/* Waits until the channel is connected; a refused or unreachable server
 * shows as TRANSIENT_FAILURE at once. */
static fs_status_t wait_connected(fs_client_t *c, conn_t *k)
{
    /* timeout_ms is meant for calls; a tiny one must not make connecting fail */
    int ms = c->opts.timeout_ms > CONNECT_TIMEOUT_MS ? c->opts.timeout_ms : CONNECT_TIMEOUT_MS;
    gpr_timespec deadline = deadline_in(ms);
    grpc_connectivity_state state = grpc_channel_check_connectivity_state(k->channel, 1);
    while (state != GRPC_CHANNEL_READY) {
        if (state == GRPC_CHANNEL_TRANSIENT_FAILURE || state == GRPC_CHANNEL_SHUTDOWN)
            return fs_client_fail(c, FS_ERR_UNAVAILABLE, "%s://%s: cannot connect: %s", k->scheme, k->target,
                                  strcmp(k->scheme, "grpcs") == 0
                                      ? "no TLS connection could be made (no server there, a server without TLS, a "
                                        "certificate not signed by the trusted CA or not for this host name, or a "
                                        "client certificate required)"
                                      : "no featstore server answers there (refused or unreachable; or a server that "
                                        "wants TLS: grpcs://)");
        grpc_channel_watch_connectivity_state(k->channel, state, deadline, k->cq, TAG_CONNECT);
        if (!wait_tag(k))
            return fs_client_fail(c, FS_ERR_UNAVAILABLE, "%s://%s: cannot connect: no connection within %d ms",
                                  k->scheme, k->target, ms);
        state = grpc_channel_check_connectivity_state(k->channel, 0);
    }
    return FS_OK;
}

/* An option, or its environment variable when the option is unset (client.h). */
static const char *opt_or_env(const char *opt, const char *env)
{
    if (opt) return opt;
    const char *v = getenv(env);
    return v && v[0] ? v : NULL;
}

/* A PEM file (certificates, a key), whole, into a string the caller frees. */
static fs_status_t read_pem(fs_client_t *c, const char *path, const char *what, char **out)
{
    fs_error_t err = {0};
    fs_status_t st = fs_wire_read_pem(path, what, "-----BEGIN ", out, &err);
    return st == FS_OK ? FS_OK : fs_client_fail(c, st, "grpcs://: %s", err.msg);
}

/* Plaintext for grpc://; for grpcs:// TLS with the CA, and the client's
 * certificate and key when given (mTLS). */
static fs_status_t channel_credentials(fs_client_t *c, const char *target, int tls, grpc_channel_credentials **out)
{
    const fs_connect_opts_t *o = &c->opts;
    *out = NULL;
    if (!tls) {
        const char *set = o->tls_ca_file ? "tls_ca_file" : o->tls_cert_file ? "tls_cert_file"
                        : o->tls_key_file ? "tls_key_file" : NULL;
        if (set)
            return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "grpc://%s is plaintext, but %s is set: use grpcs://%s "
                                  "for TLS", target, set, target);
        *out = grpc_insecure_credentials_create();
        return FS_OK;
    }
    const char *ca = opt_or_env(o->tls_ca_file, "FEATSTORE_TLS_CA");
    const char *cert = opt_or_env(o->tls_cert_file, "FEATSTORE_TLS_CERT");
    const char *key = opt_or_env(o->tls_key_file, "FEATSTORE_TLS_KEY");
    if (!cert != !key)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "grpcs://%s: a client certificate needs its private key and "
                              "a key its certificate (tls_cert_file and tls_key_file, or $FEATSTORE_TLS_CERT and "
                              "$FEATSTORE_TLS_KEY): only the %s is given", target, cert ? "certificate" : "key");
    char *ca_pem = NULL, *cert_pem = NULL, *key_pem = NULL;
    fs_status_t st = ca ? read_pem(c, ca, "CA file", &ca_pem) : FS_OK;
    if (st == FS_OK && cert) st = read_pem(c, cert, "client certificate", &cert_pem);
    if (st == FS_OK && key) st = read_pem(c, key, "client key", &key_pem);
    if (st == FS_OK) {
        grpc_ssl_pem_key_cert_pair pair = {.private_key = key_pem, .cert_chain = cert_pem};
        *out = grpc_ssl_credentials_create(ca_pem, cert_pem ? &pair : NULL, NULL, NULL);
        if (!*out) st = fs_client_fail(c, FS_ERR_INTERNAL, "grpcs://%s: gRPC refused the TLS settings", target);
    }
    free(ca_pem);
    free(cert_pem);
    fs_wire_free_secret(key_pem);
    return st;
}

/* The token (option or $FEATSTORE_TOKEN) as the metadata every call sends.
 * It must fit an HTTP/2 header; the message never shows it. */
static fs_status_t set_token(fs_client_t *c, conn_t *k)
{
    const char *token = opt_or_env(c->opts.token, "FEATSTORE_TOKEN");
    if (!token) return FS_OK;
    size_t n = strlen(token);
    if (n == 0 || n > MAX_TOKEN_BYTES)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "the token is %s", n ? "longer than 4096 bytes" : "empty");
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)token[i] < 0x21 || (unsigned char)token[i] > 0x7e)
            return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "character %zu of the token is not visible ASCII (a "
                                  "token travels in an HTTP/2 header)", i + 1);
    char *value = malloc(n + 8);
    if (!value) return fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    snprintf(value, n + 8, "Bearer %s", token);
    k->auth.key = grpc_slice_from_static_string("authorization");
    k->auth.value = grpc_slice_from_copied_string(value);
    k->has_auth = 1;
    fs_wire_free_secret(value);
    return FS_OK;
}

fs_status_t fs_grpc_connect(struct fs_client *c, const char *target, int tls)
{
    const char *scheme = tls ? "grpcs" : "grpc";
    if (!target) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "%s:// needs host:port", scheme);
    if (!target[0] || strlen(target) >= sizeof ((conn_t *)0)->target)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "%s:// needs host:port (got '%s')", scheme, target);
    conn_t *k = calloc(1, sizeof *k);
    if (!k) return fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    if (grpc_start(c, scheme) != FS_OK) {
        free(k);
        return FS_ERR_UNSUPPORTED;
    }
    snprintf(k->target, sizeof k->target, "%s", target);
    k->scheme = scheme;
    grpc_arg args[FS_WIRE_MAX_ARGS];
    grpc_channel_args chargs = {.num_args = fs_wire_channel_args(args, -1, 0), .args = args};
    grpc_channel_credentials *creds = NULL;
    fs_status_t st = set_token(c, k);
    if (st == FS_OK) st = channel_credentials(c, target, tls, &creds);
    if (st == FS_OK) {
        k->channel = grpc_channel_create(target, creds, &chargs);
        grpc_channel_credentials_release(creds);
    }
    k->cq = grpc_completion_queue_create_for_next(NULL);
    k->rows_cache = cache_new();
    if (st == FS_OK)
        st = !k->rows_cache ? fs_client_fail(c, FS_ERR_NOMEM, "out of memory")
           : k->channel    ? wait_connected(c, k)
                           : fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "%s://%s: not a valid target", scheme, target);
    if (st != FS_OK) {
        conn_destroy(k);
        return st;
    }
    c->impl = k;
    c->ops = &grpc_ops;
    return FS_OK;
}

#ifdef FS_GRPC_PLUGIN
/* The plugin's one exported symbol (client_internal.h). */
__attribute__((visibility("default"))) const fs_grpc_plugin_t fs_grpc_plugin_v1 = {
    .version = FS_LIB_VERSION,
    .client_size = sizeof(struct fs_client),
    .connect = fs_grpc_connect,
};
#endif
