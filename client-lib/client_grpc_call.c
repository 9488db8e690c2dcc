/* client_grpc_call.c — the grpc:// transport's machinery: the row buffers a
 * connection lends its batches, the batch a result becomes, and the calls
 * every method makes (client_grpc_internal.h). Its own file because every
 * family of methods builds on it, while gRPC's call ops stay in here.
 *
 * Calls are blocking: each connection has one channel and one completion
 * queue, and the calling thread waits on the queue for its own batch (the
 * connection is used by one thread at a time, client.h). Unary methods are a
 * single six-op batch; streams send the request, then receive one message at
 * a time until the end, then read the status.
 *
 * Errors: a gRPC status maps back to an fs_status_t (fs_wire_fs_status) and
 * the server's detail string becomes the connection's errstr.
 *
 * Row buffers: first-touch page faults on a fresh 128 MiB buffer cost more
 * than copying the rows into it (and large blocks go straight back to the
 * system when freed), so the connection keeps the last buffer a batch
 * released for its next call: a training loop that frees each batch before
 * asking for the next one reuses memory that is already mapped.
 * The cache is shared by the connection and its batches (reference counted),
 * because batches may outlive the connection and be freed from any thread. */
#include <grpc/support/alloc.h>
#include <stdlib.h>
#include <string.h>

#include "client_grpc_internal.h"

/* ---- row buffers ------------------------------------------------------------ */

int fs_gc_rowbuf_alloc(rowbuf_t *r, size_t bytes)
{
    r->p = malloc(bytes ? bytes : 1);
    r->bytes = r->cap = r->p ? bytes : 0;
    return r->p != NULL;
}

void fs_gc_rowbuf_free(rowbuf_t *r)
{
    free(r->p);
    memset(r, 0, sizeof *r);
}

rowbuf_cache_t *fs_gc_cache_new(void)
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
        fs_gc_rowbuf_free(&k->spare);
        pthread_mutex_destroy(&k->mu);
        free(k);
    }
}

/* A buffer of `bytes`: the spare if it fits without wasting more than half. */
int fs_gc_cache_take(rowbuf_cache_t *k, size_t bytes, rowbuf_t *out)
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
    return fs_gc_rowbuf_alloc(out, bytes);
}

/* Hands a batch's buffer back (kept as the spare if the connection is open
 * and it is the biggest seen) and drops the batch's reference. */
void fs_gc_cache_give_back(rowbuf_cache_t *k, rowbuf_t *r)
{
    rowbuf_t drop = *r;
    pthread_mutex_lock(&k->mu);
    if (k->open && r->p && r->cap >= k->spare.cap) {
        drop = k->spare;
        k->spare = *r;
    }
    memset(r, 0, sizeof *r);
    fs_gc_rowbuf_free(&drop);
    cache_unref_locked_then_unlock(k);
}

void fs_gc_cache_close(rowbuf_cache_t *k)
{
    pthread_mutex_lock(&k->mu);
    k->open = 0;
    fs_gc_rowbuf_free(&k->spare);
    cache_unref_locked_then_unlock(k);
}

/* ---- batches ----------------------------------------------------------------- */

void fs_gc_batch_release(fs_batch_priv_t *p)
{
    grpc_batch_t *b = (grpc_batch_t *)p;
    for (int i = 0; i < b->num_owned; i++) free(b->owned[i]);
    if (b->cache) fs_gc_cache_give_back(b->cache, &b->rows);
    free(b);
}

grpc_batch_t *fs_gc_batch_new(fs_client_t *c)
{
    grpc_batch_t *b = calloc(1, sizeof *b);
    if (!b) {
        fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    b->priv.release = fs_gc_batch_release;
    b->priv.pub.blocks = b->priv.blocks;
    b->priv.pub.features_device = -1; /* host memory, always, over the network */
    return b;
}

void fs_gc_batch_own(grpc_batch_t *b, void *p)
{
    if (p) b->owned[b->num_owned++] = p;
}

/* ---- calls ------------------------------------------------------------------- */

gpr_timespec fs_gc_deadline_in(int ms)
{
    if (ms <= 0) return gpr_inf_future(GPR_CLOCK_REALTIME);
    return gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_millis(ms, GPR_TIMESPAN));
}

/* The queue only holds this connection's one pending batch. */
int fs_gc_wait_tag(conn_t *k)
{
    grpc_event ev = grpc_completion_queue_next(k->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    return ev.type == GRPC_OP_COMPLETE && ev.success;
}

const char *fs_gc_method_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

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
                                       grpc_slice_from_static_string(method), NULL, fs_gc_deadline_in(deadline_ms),
                                       NULL);
    if (!r->call) return fs_client_fail(c, FS_ERR_INTERNAL, "%s: cannot create a gRPC call", fs_gc_method_name(method));
    return FS_OK;
}

/* The call's outcome as an fs_status_t, with the server's detail. */
static fs_status_t rpc_status(rpc_t *r)
{
    if (r->status == GRPC_STATUS_OK) return FS_OK;
    char *details = grpc_slice_to_c_string(r->details);
    fs_status_t st = fs_wire_fs_status(r->status);
    fs_client_fail(r->c, st, "%s: %s", fs_gc_method_name(r->method), details && details[0] ? details : fs_strerror(st));
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
    if (!bb) fs_client_fail(c, err.code, "%s: %s", fs_gc_method_name(method), err.msg);
    return bb;
}

/* One request, one response message. */
fs_status_t fs_gc_unary(fs_client_t *c, const char *method, const pb_msgdesc_t *req_fields, const void *req,
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
        if (grpc_call_start_batch(r.call, ops, n, TAG_CALL, NULL) != GRPC_CALL_OK || !fs_gc_wait_tag(conn_of(c)))
            st = fs_client_fail(c, FS_ERR_INTERNAL, "%s: the gRPC batch failed", fs_gc_method_name(method));
        else st = rpc_status(&r);
        if (st == FS_OK && !*resp)
            st = fs_client_fail(c, FS_ERR_FORMAT, "%s: the server sent no response message", fs_gc_method_name(method));
    }
    rpc_close(&r);
    grpc_byte_buffer_destroy(send);
    if (st != FS_OK && *resp) {
        grpc_byte_buffer_destroy(*resp);
        *resp = NULL;
    }
    return st;
}

fs_status_t fs_gc_decode_response(fs_client_t *c, const char *method, grpc_byte_buffer *bb,
                                  const pb_msgdesc_t *fields, void *msg)
{
    fs_error_t err = {0};
    fs_status_t st = fs_wire_decode(bb, fields, msg, "response", &err);
    if (st != FS_OK) fs_client_fail(c, st, "%s: %s", fs_gc_method_name(method), err.msg);
    return st;
}

/* ---- server-streaming calls --------------------------------------------------- */

/* recv_ms 0: the call has the connection's deadline (timeout_ms); > 0: the
 * call has none (an epoch stream lasts as long as its trainer), each
 * message must come within recv_ms instead. */
fs_status_t fs_gc_stream_open_within(stream_t *s, fs_client_t *c, const char *method, const pb_msgdesc_t *fields,
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
        return fs_client_fail(c, FS_ERR_INTERNAL, "%s: the gRPC batch failed", fs_gc_method_name(method));
    fs_gc_wait_tag(conn_of(c)); /* a failure here shows in the status */
    return FS_OK;
}

fs_status_t fs_gc_stream_open(stream_t *s, fs_client_t *c, const char *method, const pb_msgdesc_t *fields,
                              const void *req)
{
    return fs_gc_stream_open_within(s, c, method, fields, req, 0);
}

/* Waits for the pending receive, at most recv_ms when set: a late message
 * cancels the call (its batch then completes, failed). */
static int wait_recv(stream_t *s)
{
    conn_t *k = conn_of(s->r.c);
    if (s->recv_ms <= 0) return fs_gc_wait_tag(k);
    grpc_event ev = grpc_completion_queue_next(k->cq, fs_gc_deadline_in(s->recv_ms), NULL);
    if (ev.type != GRPC_QUEUE_TIMEOUT) return ev.type == GRPC_OP_COMPLETE && ev.success;
    s->timed_out = 1;
    grpc_call_cancel(s->r.call, NULL);
    fs_gc_wait_tag(k);
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
grpc_byte_buffer *fs_gc_stream_next(stream_t *s)
{
    if (!s->pending) stream_start_recv(s);
    grpc_byte_buffer *bb = stream_finish_recv(s);
    if (bb) stream_start_recv(s);
    return bb;
}

/* Ends the stream: reads the status (cancelling first if we stop early). */
fs_status_t fs_gc_stream_close(stream_t *s, fs_status_t st)
{
    if (s->open) {
        if (st != FS_OK) grpc_call_cancel(s->r.call, NULL);
        grpc_byte_buffer *left = stream_finish_recv(s); /* a receive still pending completes (cancelled) */
        if (left) grpc_byte_buffer_destroy(left);
        grpc_op op;
        op_recv_status(&s->r, &op);
        int ok = grpc_call_start_batch(s->r.call, &op, 1, TAG_CALL, NULL) == GRPC_CALL_OK &&
                 fs_gc_wait_tag(conn_of(s->r.c));
        if (st == FS_OK) {
            if (!ok) st = fs_client_fail(s->r.c, FS_ERR_INTERNAL, "%s: no status", fs_gc_method_name(s->r.method));
            else st = rpc_status(&s->r);
        }
        rpc_close(&s->r);
    }
    if (s->send) grpc_byte_buffer_destroy(s->send);
    return st;
}
