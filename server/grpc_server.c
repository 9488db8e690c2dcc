/* grpc_server.c — the gRPC transport (see grpc_server.h), on gRPC's C core.
 *
 * Workers: each worker thread owns a completion queue registered with the
 * server and a sampler. It asks gRPC for the next call on its own queue,
 * serves that call to the end, and asks again; gRPC hands each incoming call
 * to one waiting worker, so N workers serve N calls at once and a worker's
 * queue only ever holds events of its own call, one batch at a time. That
 * keeps each call a straight-line function instead of a state machine.
 *
 * Streaming: feature rows are gathered one ~1 MiB chunk at a time into a
 * fresh buffer that gRPC sends without a copy (a slice that frees it when
 * sent). gRPC allows one SEND_MESSAGE in flight per call, and it writes to
 * the socket inside start_batch, on the worker's thread; so each worker has
 * a helper thread that gathers chunk k+1 while the worker sends chunk k, and
 * the random-row gather overlaps the socket copies instead of adding to them.
 * All ids are checked before the first chunk, so a bad id fails the call
 * cleanly instead of mid-stream.
 *
 * Deadlines: checked before the compute, after it and before every chunk; a
 * call past its deadline answers DEADLINE_EXCEEDED (gRPC also cancels it).
 *
 * Connected clients: gRPC's C core reports calls, not connections, so a
 * client is a peer address (one per channel: ip:port) with a call in flight
 * or one that ended within the last FS_GRPC_IDLE_S seconds (settable). A janitor
 * thread forgets idle peers, so the gauge falls when trainers go away.
 *
 * Shutdown: grpc_server_shutdown_and_notify -> wait for its tag (calls being
 * served finish; after a grace period they are cancelled) -> join workers ->
 * grpc_server_destroy -> shut down and drain every queue -> destroy ->
 * grpc_shutdown, which only tears gRPC down when this was its last user
 * (grpc_init/grpc_shutdown are reference counted). */
#include "grpc_server.h"

#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs_pb.h"
#include "fs_wire.h"

#define SHUTDOWN_GRACE_MS 5000
#define FS_GRPC_IDLE_S 30.0
#define MAX_PEERS 4096
#define TAG_NEW_CALL ((void *)1)
#define TAG_BATCH ((void *)2)
#define TAG_SHUTDOWN ((void *)3)

struct rows_job;
enum { HELPER_IDLE, HELPER_QUEUED, HELPER_DONE, HELPER_QUIT };

/* A worker's chunk gatherer (see helper_main). */
typedef struct {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state, running;
    fs_engine_t *engine;
    const struct rows_job *job;
    int64_t k;
    grpc_byte_buffer *out;
    fs_error_t err;
} helper_t;

typedef struct {
    struct fs_grpc_server *srv;
    grpc_completion_queue *cq;
    fs_sampler_t *sampler;
    helper_t helper;
    pthread_t thread;
    int running;
} worker_t;

typedef struct {
    char addr[64];
    int active;       /* calls in flight */
    double last;      /* when its last call ended */
} peer_t;

/* The peers seen lately (see "Connected clients" above). */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    peer_t *peer;
    int num, quit, running;
    double idle_s;
    pthread_t janitor;
    fs_metrics_t *metrics;
} peers_t;

struct fs_grpc_server {
    grpc_server *server;
    peers_t peers;
    grpc_completion_queue *shutdown_cq;
    fs_engine_t *engine;
    fs_metrics_t *metrics;
    int num_workers;
    worker_t *workers;
    int grpc_initialised;
};

/* One call being served by one worker. */
typedef struct {
    worker_t *w;
    grpc_call *call;
    grpc_call_details details;
    grpc_metadata_array request_md;
    grpc_byte_buffer *request;
    grpc_byte_buffer *response;    /* unary: sent with the status */
    int sent_initial_md;
    grpc_status_code code_override; /* OK = derive the code from the fs_status_t */
    fs_error_t err;
} call_t;

typedef fs_status_t (*handler_fn)(call_t *c);

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- connected clients ------------------------------------------------------ */

static void peers_metric(peers_t *p, int delta)
{
    if (p->metrics) fs_metrics_client(p->metrics, FS_TRANSPORT_GRPC, delta);
}

/* A call from addr starts; returns its slot (-1 when the table is full). */
static int peer_enter(peers_t *p, const char *addr)
{
    pthread_mutex_lock(&p->mu);
    int i = 0;
    while (i < p->num && strcmp(p->peer[i].addr, addr) != 0) i++;
    if (i == p->num && p->num < MAX_PEERS) {
        snprintf(p->peer[p->num].addr, sizeof p->peer[0].addr, "%s", addr);
        p->peer[p->num++].active = 0;
        peers_metric(p, +1);
    }
    if (i < p->num) p->peer[i].active++;
    pthread_mutex_unlock(&p->mu);
    return i < p->num ? i : -1;
}

static void peer_leave(peers_t *p, const char *addr)
{
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < p->num; i++)
        if (strcmp(p->peer[i].addr, addr) == 0) {
            p->peer[i].active--;
            p->peer[i].last = now_s();
            break;
        }
    pthread_mutex_unlock(&p->mu);
}

/* Forgets peers idle for longer than FS_GRPC_IDLE_S (under p->mu). */
static void peers_prune(peers_t *p, double now)
{
    for (int i = 0; i < p->num;)
        if (p->peer[i].active == 0 && now - p->peer[i].last > p->idle_s) {
            p->peer[i] = p->peer[--p->num];
            peers_metric(p, -1);
        } else {
            i++;
        }
}

static void *janitor_main(void *arg)
{
    peers_t *p = arg;
    pthread_mutex_lock(&p->mu);
    while (!p->quit) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        t.tv_sec += 1;
        pthread_cond_timedwait(&p->cv, &p->mu, &t);
        peers_prune(p, now_s());
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static fs_status_t peers_start(peers_t *p, fs_metrics_t *metrics, fs_error_t *err)
{
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->metrics = metrics;
    p->idle_s = FS_GRPC_IDLE_S;
    p->running = 1;
    if (!(p->peer = calloc(MAX_PEERS, sizeof *p->peer)) || pthread_create(&p->janitor, NULL, janitor_main, p) != 0) {
        p->running = 0;
        return fs_error(err, FS_ERR_NOMEM, "grpc: cannot start the peer janitor");
    }
    return FS_OK;
}

/* Stops the janitor; the peers still listed leave the gauge. */
static void peers_stop(peers_t *p)
{
    if (p->running) {
        pthread_mutex_lock(&p->mu);
        p->quit = 1;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->janitor, NULL);
        peers_metric(p, -p->num);
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->cv);
    }
    free(p->peer);
}

/* ---- batches on the worker's queue ---------------------------------------- */

static int start_batch(call_t *c, grpc_op *ops, size_t n)
{
    return grpc_call_start_batch(c->call, ops, n, TAG_BATCH, NULL) == GRPC_CALL_OK;
}

/* The worker's queue holds only this call's single pending batch. */
static int wait_batch(call_t *c)
{
    grpc_event ev = grpc_completion_queue_next(c->w->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    return ev.type == GRPC_OP_COMPLETE && ev.tag == TAG_BATCH && ev.success;
}

static int run_batch(call_t *c, grpc_op *ops, size_t n) { return start_batch(c, ops, n) && wait_batch(c); }

static void op_initial_md(call_t *c, grpc_op *op)
{
    memset(op, 0, sizeof *op);
    op->op = GRPC_OP_SEND_INITIAL_METADATA;
    c->sent_initial_md = 1;
}

static int past_deadline(const call_t *c)
{
    gpr_timespec deadline = gpr_convert_clock_type(c->details.deadline, GPR_CLOCK_MONOTONIC);
    return gpr_time_cmp(gpr_now(GPR_CLOCK_MONOTONIC), deadline) > 0;
}

static fs_status_t check_deadline(call_t *c, const char *when)
{
    if (!past_deadline(c)) return FS_OK;
    return fs_error(&c->err, FS_ERR_TIMEOUT, "the call's deadline passed %s", when);
}

/* Sends the final status (with the unary response, if any) and waits for
 * the client's close. Failure only means the client is gone. */
static void finish_call(call_t *c, fs_status_t st)
{
    grpc_op ops[4];
    size_t n = 0;
    if (!c->sent_initial_md) op_initial_md(c, &ops[n++]);
    if (st == FS_OK && c->response) {
        memset(&ops[n], 0, sizeof ops[n]);
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n++].data.send_message.send_message = c->response;
    }
    grpc_slice details = grpc_slice_from_copied_string(st == FS_OK ? "" : c->err.msg);
    memset(&ops[n], 0, sizeof ops[n]);
    ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[n].data.send_status_from_server.status =
        st == FS_OK ? GRPC_STATUS_OK : c->code_override != GRPC_STATUS_OK ? c->code_override : fs_wire_grpc_status(st);
    ops[n++].data.send_status_from_server.status_details = &details;
    int cancelled = 0;
    memset(&ops[n], 0, sizeof ops[n]);
    ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    ops[n++].data.recv_close_on_server.cancelled = &cancelled;
    run_batch(c, ops, n);
    grpc_slice_unref(details);
}

static fs_status_t decode_request(call_t *c, const pb_msgdesc_t *fields, void *msg, const char *what)
{
    if (fs_wire_decode(c->request, fields, msg, what, &c->err) == FS_OK) return FS_OK;
    return c->err.code = FS_ERR_INVALID_ARGUMENT; /* undecodable bytes are the caller's mistake */
}

static fs_status_t check_api(call_t *c, uint32_t version)
{
    if (version == FS_WIRE_API_VERSION) return FS_OK;
    c->code_override = GRPC_STATUS_FAILED_PRECONDITION;
    return fs_error(&c->err, FS_ERR_UNSUPPORTED, "api_version %u is not supported: this server speaks "
                    "featstore.v1 api_version %d", (unsigned)version, FS_WIRE_API_VERSION);
}

/* "" = as stored; otherwise a dtype name. */
static fs_status_t parse_out_dtype(call_t *c, const char *name, fs_dtype_t *out)
{
    *out = name[0] ? fs_dtype_from_name(name) : FS_DTYPE_INVALID;
    if (name[0] && *out == FS_DTYPE_INVALID)
        return fs_error(&c->err, FS_ERR_INVALID_ARGUMENT, "out_dtype '%s' is not a dtype name", name);
    return FS_OK;
}

/* ---- streaming feature rows ------------------------------------------------ */

typedef struct rows_job {
    const char *table;
    const char *contig;            /* rows stored back to back instead (a split's ids); table unused */
    const int64_t *ids;
    int64_t n;
    fs_dtype_t dtype;              /* resolved: never INVALID */
    size_t row_bytes;
    int64_t dim;
    int wrap;                      /* SampleGatherChunk messages */
    const featstore_v1_SampleResponse *sample; /* first message's sample (wrap only) */
} rows_job_t;

static void free_rows(void *p) { free(p); }

static int64_t rows_per_chunk(const rows_job_t *j)
{
    int64_t per = j->row_bytes ? (int64_t)(FS_WIRE_CHUNK_BYTES / j->row_bytes) : j->n;
    return per < 1 ? 1 : per;
}

/* Gathers chunk k into a fresh buffer and wraps it in a message. */
static grpc_byte_buffer *make_chunk(fs_engine_t *e, const rows_job_t *j, int64_t k, fs_error_t *err)
{
    int64_t per = rows_per_chunk(j), first = k * per, rows = j->n - first < per ? j->n - first : per;
    size_t bytes = (size_t)rows * j->row_bytes;
    void *buf = malloc(bytes ? bytes : 1);
    if (!buf) {
        fs_error(err, FS_ERR_NOMEM, "out of memory for a chunk of %zu bytes", bytes);
        return NULL;
    }
    if (rows > 0 && j->contig) memcpy(buf, j->contig + (size_t)first * j->row_bytes, bytes);
    else if (rows > 0 && fs_engine_gather(e, j->table, j->ids + first, rows, j->dtype, buf, err) != FS_OK) {
        free(buf);
        return NULL;
    }
    featstore_v1_GatherChunk hdr = featstore_v1_GatherChunk_init_zero;
    hdr.api_version = FS_WIRE_API_VERSION;
    snprintf(hdr.dtype, sizeof hdr.dtype, "%s", fs_dtype_name(j->dtype));
    hdr.dim = j->dim;
    hdr.total_rows = j->n;
    hdr.first_row = first;
    hdr.rows = rows;
    grpc_slice data = grpc_slice_new(buf, bytes, free_rows);
    grpc_byte_buffer *bb = fs_wire_gather_chunk(&hdr, data, j->wrap, k == 0 ? j->sample : NULL, err);
    grpc_slice_unref(data);
    return bb;
}

/* The worker's gather helper: makes chunk k+1 on its own thread while the
 * worker sends chunk k (the send runs in the worker's thread: gRPC writes to
 * the socket inside start_batch). One job at a time. */
static void *helper_main(void *arg)
{
    helper_t *h = arg;
    pthread_mutex_lock(&h->mu);
    for (;;) {
        while (h->state != HELPER_QUEUED && h->state != HELPER_QUIT) pthread_cond_wait(&h->cv, &h->mu);
        if (h->state == HELPER_QUIT) break;
        pthread_mutex_unlock(&h->mu);
        fs_error_clear(&h->err);
        grpc_byte_buffer *bb = make_chunk(h->engine, h->job, h->k, &h->err);
        pthread_mutex_lock(&h->mu);
        h->out = bb;
        h->state = HELPER_DONE;
        pthread_cond_broadcast(&h->cv);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

static void helper_submit(helper_t *h, const rows_job_t *j, int64_t k)
{
    pthread_mutex_lock(&h->mu);
    h->job = j, h->k = k, h->out = NULL;
    h->state = HELPER_QUEUED;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

/* The chunk the helper made (NULL with *err set on failure). */
static grpc_byte_buffer *helper_wait(helper_t *h, fs_error_t *err)
{
    pthread_mutex_lock(&h->mu);
    while (h->state != HELPER_DONE) pthread_cond_wait(&h->cv, &h->mu);
    h->state = HELPER_IDLE;
    grpc_byte_buffer *bb = h->out;
    if (!bb) *err = h->err;
    pthread_mutex_unlock(&h->mu);
    return bb;
}

/* Sends every chunk; the helper gathers chunk k+1 while chunk k is sent. */
static fs_status_t stream_rows(call_t *c, const rows_job_t *j)
{
    int64_t per = rows_per_chunk(j), chunks = j->n == 0 ? 1 : (j->n + per - 1) / per;
    grpc_byte_buffer *cur = make_chunk(c->w->srv->engine, j, 0, &c->err);
    if (!cur) return c->err.code;
    fs_status_t st = FS_OK;
    for (int64_t k = 0; k < chunks && cur; k++) {
        int ahead = k + 1 < chunks;
        if (ahead) helper_submit(&c->w->helper, j, k + 1);
        st = check_deadline(c, "while streaming rows");
        grpc_op ops[2];
        size_t n = 0;
        if (!c->sent_initial_md) op_initial_md(c, &ops[n++]);
        memset(&ops[n], 0, sizeof ops[n]);
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n++].data.send_message.send_message = cur;
        int sent = st == FS_OK && run_batch(c, ops, n);
        grpc_byte_buffer_destroy(cur);
        cur = NULL;
        fs_error_t herr = {0};
        if (ahead && !(cur = helper_wait(&c->w->helper, &herr)) && st == FS_OK) { /* always collect the helper */
            c->err = herr;
            st = herr.code;
        }
        if (st == FS_OK && !sent)
            st = past_deadline(c) ? check_deadline(c, "while streaming rows")
                                  : fs_error(&c->err, FS_ERR_UNAVAILABLE, "the client went away after %lld of %lld "
                                             "rows", (long long)(k * per), (long long)j->n);
    }
    if (cur) grpc_byte_buffer_destroy(cur);
    return st;
}

/* ---- the methods ---------------------------------------------------------------- */

static fs_status_t do_info(call_t *c)
{
    featstore_v1_InfoRequest req = featstore_v1_InfoRequest_init_zero;
    fs_status_t st = decode_request(c, featstore_v1_InfoRequest_fields, &req, "InfoRequest");
    if (st == FS_OK) st = check_api(c, req.api_version);
    if (st != FS_OK) return st;
    fs_info_t *info;
    if ((st = fs_engine_info(c->w->srv->engine, &info, &c->err)) != FS_OK) return st;
    if (c->w->srv->metrics && fs_metrics_info(c->w->srv->metrics, info) != FS_OK)
        st = fs_error(&c->err, FS_ERR_NOMEM, "out of memory describing the placement");
    featstore_v1_InfoResponse resp;
    fs_pb_info_out_t enc;
    fs_pb_info_prepare_encode(info, &resp, &enc);
    if (st == FS_OK) c->response = fs_wire_encode(featstore_v1_InfoResponse_fields, &resp, &c->err);
    fs_info_free(info);
    return st != FS_OK ? st : c->response ? FS_OK : c->err.code;
}

static fs_status_t do_sample(call_t *c)
{
    featstore_v1_SampleRequest req = featstore_v1_SampleRequest_init_zero;
    fs_wire_buf_t seeds_buf = {.flags = FS_WIRE_BORROW, .align = sizeof(int64_t)};
    fs_wire_set_buf(&req.seeds, &seeds_buf);
    const int64_t *seeds = NULL;
    int64_t n = 0;
    fs_sample_req_t sreq;
    fs_sample_result_t res;
    fs_status_t st = decode_request(c, featstore_v1_SampleRequest_fields, &req, "SampleRequest");
    if (st == FS_OK) st = check_api(c, req.api_version);
    if (st == FS_OK) st = fs_wire_sample_req_from_msg(&req, &sreq, &c->err);
    if (st == FS_OK) st = fs_wire_int64s(&seeds_buf, "seeds", &seeds, &n, &c->err);
    if (st == FS_OK) st = check_deadline(c, "before sampling");
    if (st == FS_OK) st = fs_engine_sample(c->w->srv->engine, c->w->sampler, seeds, n, &sreq, &res, &c->err);
    if (st == FS_OK) st = check_deadline(c, "while sampling");
    if (st == FS_OK) {
        fs_wire_sample_src_t src;
        featstore_v1_SampleResponse resp;
        fs_wire_sample_response(&res, &src, &resp);
        c->response = fs_wire_encode(featstore_v1_SampleResponse_fields, &resp, &c->err);
        if (!c->response) st = c->err.code;
    }
    fs_wire_buf_free(&seeds_buf);
    return st;
}

static fs_status_t do_gather(call_t *c)
{
    featstore_v1_GatherRequest req = featstore_v1_GatherRequest_init_zero;
    fs_wire_buf_t ids_buf = {.flags = FS_WIRE_BORROW, .align = sizeof(int64_t)};
    fs_wire_set_buf(&req.ids, &ids_buf);
    fs_engine_t *e = c->w->srv->engine;
    rows_job_t j = {.wrap = 0};
    fs_table_view_t view;
    fs_status_t st = decode_request(c, featstore_v1_GatherRequest_fields, &req, "GatherRequest");
    if (st == FS_OK) st = check_api(c, req.api_version);
    if (st == FS_OK) st = parse_out_dtype(c, req.out_dtype, &j.dtype);
    if (st == FS_OK) st = fs_wire_int64s(&ids_buf, "ids", &j.ids, &j.n, &c->err);
    if (st == FS_OK) st = fs_engine_table(e, req.table, &j.dtype, &j.row_bytes, &j.dim, &c->err);
    if (st == FS_OK) st = fs_limits_check(fs_engine_limits(e), j.n, NULL, j.row_bytes, &c->err);
    if (st == FS_OK) { /* every id checked before the first chunk is sent */
        fs_store_t *store = fs_engine_acquire(e, NULL);
        st = fs_store_table_view(store, req.table, FS_READER_CPU, &view, &c->err);
        if (st == FS_OK) st = fs_gather_check_ids(&view, j.ids, j.n, &c->err);
        fs_store_destroy(store);
    }
    if (st == FS_OK) st = check_deadline(c, "before gathering");
    j.table = req.table;
    if (st == FS_OK) st = stream_rows(c, &j);
    fs_wire_buf_free(&ids_buf);
    return st;
}

static fs_status_t do_sample_gather(call_t *c)
{
    featstore_v1_SampleGatherRequest req = featstore_v1_SampleGatherRequest_init_zero;
    fs_wire_buf_t seeds_buf = {.flags = FS_WIRE_BORROW, .align = sizeof(int64_t)};
    fs_wire_set_buf(&req.sample.seeds, &seeds_buf);
    fs_engine_t *e = c->w->srv->engine;
    rows_job_t j = {.wrap = 1};
    const int64_t *seeds = NULL;
    int64_t n = 0;
    fs_sample_req_t sreq;
    fs_sample_result_t res;
    fs_status_t st = decode_request(c, featstore_v1_SampleGatherRequest_fields, &req, "SampleGatherRequest");
    if (st == FS_OK) st = check_api(c, req.api_version);
    if (st == FS_OK && !req.has_sample)
        st = fs_error(&c->err, FS_ERR_INVALID_ARGUMENT, "SampleGatherRequest has no sample request");
    if (st == FS_OK) st = parse_out_dtype(c, req.out_dtype, &j.dtype);
    if (st == FS_OK) st = fs_engine_table(e, req.table, &j.dtype, &j.row_bytes, &j.dim, &c->err);
    if (st == FS_OK) st = fs_wire_sample_req_from_msg(&req.sample, &sreq, &c->err);
    if (st == FS_OK) st = fs_wire_int64s(&seeds_buf, "seeds", &seeds, &n, &c->err);
    if (st == FS_OK) st = check_deadline(c, "before sampling");
    if (st == FS_OK) st = fs_engine_sample(e, c->w->sampler, seeds, n, &sreq, &res, &c->err);
    if (st == FS_OK) st = fs_limits_check(fs_engine_limits(e), res.num_nodes, NULL, j.row_bytes, &c->err);
    if (st == FS_OK) {
        double total = (double)fs_sample_result_bytes(&res) + (double)res.num_nodes * (double)j.row_bytes;
        if (total > (double)fs_engine_limits(e)->max_response_bytes)
            st = fs_error(&c->err, FS_ERR_RESOURCE, "sample and features of %.0f bytes exceed the response limit %lld",
                          total, (long long)fs_engine_limits(e)->max_response_bytes);
    }
    if (st == FS_OK) st = check_deadline(c, "after sampling");
    if (st == FS_OK) {
        fs_wire_sample_src_t src;
        featstore_v1_SampleResponse sample;
        fs_wire_sample_response(&res, &src, &sample);
        j.table = req.table, j.ids = res.nodes, j.n = res.num_nodes, j.sample = &sample;
        st = stream_rows(c, &j); /* the sample's arrays stay in this worker's sampler meanwhile */
    }
    fs_wire_buf_free(&seeds_buf);
    return st;
}

static fs_status_t do_split(call_t *c)
{
    featstore_v1_SplitRequest req = featstore_v1_SplitRequest_init_zero;
    fs_status_t st = decode_request(c, featstore_v1_SplitRequest_fields, &req, "SplitRequest");
    if (st == FS_OK) st = check_api(c, req.api_version);
    const fs_idset_t *split = NULL;
    if (st == FS_OK) st = fs_engine_split(c->w->srv->engine, req.name, &split, &c->err);
    if (st != FS_OK) return st;
    rows_job_t j = {.contig = (const char *)split->ids, .n = split->count, .dtype = FS_DTYPE_I64,
                    .row_bytes = sizeof(int64_t), .dim = 1};
    return stream_rows(c, &j);
}

static bool encode_text_cb(pb_ostream_t *stream, const pb_field_t *field, void *const *arg)
{
    const char *text = *arg;
    return pb_encode_tag_for_field(stream, field) && pb_encode_string(stream, (const pb_byte_t *)text, strlen(text));
}

static fs_status_t do_stats(call_t *c)
{
    featstore_v1_StatsRequest req = featstore_v1_StatsRequest_init_zero;
    fs_status_t st = decode_request(c, featstore_v1_StatsRequest_fields, &req, "StatsRequest");
    if (st == FS_OK) st = check_api(c, req.api_version);
    if (st != FS_OK) return st;
    fs_metrics_t *m = c->w->srv->metrics;
    char *text = m ? fs_metrics_render(m) : NULL;
    if (m && !text) return fs_error(&c->err, FS_ERR_NOMEM, "out of memory rendering the metrics");
    featstore_v1_StatsResponse resp = featstore_v1_StatsResponse_init_zero;
    resp.api_version = FS_WIRE_API_VERSION;
    resp.prometheus_text.funcs.encode = encode_text_cb;
    resp.prometheus_text.arg = text ? text : "";
    c->response = fs_wire_encode(featstore_v1_StatsResponse_fields, &resp, &c->err);
    free(text);
    return c->response ? FS_OK : c->err.code;
}

static const struct {
    const char *path;
    fs_method_t method;
    handler_fn fn;
} methods[] = {
    {FS_WIRE_METHOD_INFO, FS_METHOD_INFO, do_info},
    {FS_WIRE_METHOD_SAMPLE, FS_METHOD_SAMPLE, do_sample},
    {FS_WIRE_METHOD_GATHER, FS_METHOD_GATHER, do_gather},
    {FS_WIRE_METHOD_SAMPLE_GATHER, FS_METHOD_SAMPLE_GATHER, do_sample_gather},
    {FS_WIRE_METHOD_STATS, FS_METHOD_STATS, do_stats},
    {FS_WIRE_METHOD_SPLIT, FS_METHOD_SPLIT, do_split},
};

static int find_method(grpc_slice path)
{
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
        if (grpc_slice_str_cmp(path, methods[i].path) == 0) return (int)i;
    return -1;
}

/* ---- one call, start to end ---------------------------------------------------- */

static void serve_method(call_t *c)
{
    double t0 = now_s();
    int m = find_method(c->details.method);
    fs_status_t st;
    if (m < 0) {
        char *path = grpc_slice_to_c_string(c->details.method);
        st = fs_error(&c->err, FS_ERR_UNSUPPORTED, "unknown method '%s' (featstore.v1.FeatStore has Info, Sample, "
                      "Gather, SampleGather, Stats and Split)", path);
        gpr_free(path);
        finish_call(c, st);
        return;
    }
    grpc_op op;
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_RECV_MESSAGE;
    op.data.recv_message.recv_message = &c->request;
    if (!run_batch(c, &op, 1))
        st = fs_error(&c->err, FS_ERR_UNAVAILABLE, "the request never arrived (client cancelled)");
    else if (!c->request)
        st = fs_error(&c->err, FS_ERR_INVALID_ARGUMENT, "%s: the client sent no request message", methods[m].path);
    else
        st = methods[m].fn(c);
    /* Recorded before the status goes out, so a client that has its answer
     * also sees it counted (the final write is not in the latency). */
    fs_metrics_t *metrics = c->w->srv->metrics;
    if (metrics) fs_metrics_request(metrics, methods[m].method, FS_TRANSPORT_GRPC, st, now_s() - t0);
    finish_call(c, st);
}

static void serve_call(call_t *c)
{
    char *peer = grpc_call_get_peer(c->call);
    peers_t *peers = &c->w->srv->peers;
    int tracked = peer && peer_enter(peers, peer) >= 0;
    serve_method(c);
    if (tracked) peer_leave(peers, peer);
    gpr_free(peer);
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    for (;;) {
        call_t c;
        memset(&c, 0, sizeof c);
        c.w = w;
        grpc_call_details_init(&c.details);
        grpc_metadata_array_init(&c.request_md);
        grpc_call_error e = grpc_server_request_call(w->srv->server, &c.call, &c.details, &c.request_md, w->cq,
                                                     w->cq, TAG_NEW_CALL);
        grpc_event ev = {.type = GRPC_QUEUE_SHUTDOWN};
        if (e == GRPC_CALL_OK) ev = grpc_completion_queue_next(w->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        int got_call = ev.type == GRPC_OP_COMPLETE && ev.success && c.call;
        if (got_call) serve_call(&c);
        if (c.call) grpc_call_unref(c.call);
        if (c.request) grpc_byte_buffer_destroy(c.request);
        if (c.response) grpc_byte_buffer_destroy(c.response);
        grpc_call_details_destroy(&c.details);
        grpc_metadata_array_destroy(&c.request_md);
        if (!got_call) break; /* the server is shutting down */
    }
    return NULL;
}

/* ---- start and stop ------------------------------------------------------------- */

static void drain_and_destroy(grpc_completion_queue *cq)
{
    if (!cq) return;
    grpc_completion_queue_shutdown(cq);
    while (grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type != GRPC_QUEUE_SHUTDOWN) {
    }
    grpc_completion_queue_destroy(cq);
}

static void wait_shutdown(fs_grpc_server_t *s)
{
    gpr_timespec grace = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(SHUTDOWN_GRACE_MS, GPR_TIMESPAN));
    grpc_event ev = grpc_completion_queue_next(s->shutdown_cq, grace, NULL);
    if (ev.type == GRPC_QUEUE_TIMEOUT) {
        fprintf(stderr, "featstore: grpc: calls still running %d ms after shutdown began; cancelling them\n",
                SHUTDOWN_GRACE_MS);
        grpc_server_cancel_all_calls(s->server);
        grpc_completion_queue_next(s->shutdown_cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    }
}

static fs_status_t helper_start(helper_t *h, fs_engine_t *e, fs_error_t *err)
{
    h->engine = e;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    if (pthread_create(&h->thread, NULL, helper_main, h) != 0)
        return fs_error(err, FS_ERR_NOMEM, "grpc: cannot start a gather helper thread");
    h->running = 1;
    return FS_OK;
}

static void helper_stop(helper_t *h)
{
    if (!h->running) return;
    pthread_mutex_lock(&h->mu);
    h->state = HELPER_QUIT;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->thread, NULL);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    h->running = 0;
}

void fs_grpc_server_stop(fs_grpc_server_t *s)
{
    if (!s) return;
    if (s->server) {
        grpc_server_shutdown_and_notify(s->server, s->shutdown_cq, TAG_SHUTDOWN);
        wait_shutdown(s);
    }
    for (int i = 0; i < s->num_workers; i++)
        if (s->workers[i].running) pthread_join(s->workers[i].thread, NULL);
    if (s->server) grpc_server_destroy(s->server);
    peers_stop(&s->peers);
    for (int i = 0; i < s->num_workers; i++) {
        drain_and_destroy(s->workers[i].cq);
        fs_sampler_destroy(s->workers[i].sampler);
        helper_stop(&s->workers[i].helper);
    }
    drain_and_destroy(s->shutdown_cq);
    free(s->workers);
    if (s->grpc_initialised) grpc_shutdown();
    free(s);
}

/* Requests carry at most max_ids int64 ids plus a small head. */
static int max_request_bytes(const fs_limits_t *l)
{
    double bytes = (double)l->max_ids * 8.0 + 65536.0;
    return bytes > (double)INT_MAX ? INT_MAX : (int)bytes;
}

static fs_status_t create_server(fs_grpc_server_t *s, const char *listen_addr, int *bound_port, fs_error_t *err)
{
    grpc_arg args[FS_WIRE_MAX_ARGS];
    grpc_channel_args chargs = {.num_args = fs_wire_channel_args(args, max_request_bytes(fs_engine_limits(s->engine)), 1),
                                .args = args};
    s->server = grpc_server_create(&chargs, NULL);
    if (!s->server) return fs_error(err, FS_ERR_INTERNAL, "grpc_server_create failed");
    for (int i = 0; i < s->num_workers; i++) {
        worker_t *w = &s->workers[i];
        w->srv = s;
        w->cq = grpc_completion_queue_create_for_next(NULL);
        grpc_server_register_completion_queue(s->server, w->cq, NULL);
        fs_status_t st = fs_sampler_create(&w->sampler, err);
        if (st == FS_OK) st = helper_start(&w->helper, s->engine, err);
        if (st != FS_OK) return st;
    }
    s->shutdown_cq = grpc_completion_queue_create_for_next(NULL);
    grpc_server_register_completion_queue(s->server, s->shutdown_cq, NULL);
    grpc_server_credentials *creds = grpc_insecure_server_credentials_create();
    int port = grpc_server_add_http2_port(s->server, listen_addr, creds);
    grpc_server_credentials_release(creds);
    if (port <= 0)
        return fs_error(err, FS_ERR_IO, "grpc: cannot listen on '%s' (address in use, not local, or not host:port)",
                        listen_addr);
    if (bound_port) *bound_port = port;
    return FS_OK;
}

fs_status_t fs_grpc_server_start(const char *listen_addr, fs_engine_t *engine, fs_metrics_t *metrics, int threads,
                                 fs_grpc_server_t **out, int *bound_port, fs_error_t *err)
{
    *out = NULL;
    if (!listen_addr || !engine) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "grpc: no listen address or engine");
    fs_grpc_server_t *s = calloc(1, sizeof *s);
    if (s) s->workers = calloc((size_t)(threads > 0 ? threads : 4), sizeof *s->workers);
    if (!s || !s->workers) {
        if (s) free(s);
        return fs_error(err, FS_ERR_NOMEM, "out of memory");
    }
    s->engine = engine;
    s->metrics = metrics;
    s->num_workers = threads > 0 ? threads : 4;
    grpc_init();
    s->grpc_initialised = 1;
    fs_status_t st = peers_start(&s->peers, metrics, err);
    if (st == FS_OK) st = create_server(s, listen_addr, bound_port, err);
    if (st != FS_OK) {
        fs_grpc_server_stop(s); /* a server never started shuts down at once */
        return st;
    }
    grpc_server_start(s->server);
    for (int i = 0; i < s->num_workers; i++) {
        if (pthread_create(&s->workers[i].thread, NULL, worker_main, &s->workers[i]) != 0) {
            fs_grpc_server_stop(s);
            return fs_error(err, FS_ERR_NOMEM, "grpc: cannot start worker thread %d", i);
        }
        s->workers[i].running = 1;
    }
    *out = s;
    return FS_OK;
}

void fs_grpc_server_idle_timeout(fs_grpc_server_t *s, double seconds)
{
    pthread_mutex_lock(&s->peers.mu);
    s->peers.idle_s = seconds;
    pthread_mutex_unlock(&s->peers.mu);
}
