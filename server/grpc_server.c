/* grpc_server.c — the gRPC transport (see grpc_server.h), on gRPC's C core.
 *
 * Calls are state machines on one completion queue: a call is requested,
 * admitted (token, then the concurrency cap), its request received, its
 * answer computed, then sent — one message per step for streams — and
 * finished. Each step starts one gRPC batch whose tag is the call, and the
 * worker that started it goes back to the queue at once: whichever worker
 * polls next takes whichever call's batch completed. So no worker ever
 * waits for a client: a call whose send does not complete (a client that
 * stops reading) is simply parked in gRPC holding at most two chunks, and
 * the other calls go on. Workers only ever block on CPU work (sampling,
 * gathering one ~1 MiB chunk), never on the network.
 *
 * A call has at most one batch pending, so only the worker handling its
 * completion touches it. Streaming: gRPC writes a message to the socket
 * inside start_batch, on the calling thread, so a stream's next chunk is
 * gathered meanwhile by a gatherer thread (a small pool, one per worker):
 * the random-row gather overlaps the socket copy. The chunk is asked for
 * before the send starts, and the worker that next needs it takes the job
 * over if no gatherer has started it, else waits for it: CPU work of one
 * chunk, never a client.
 *
 * Stream calls (an epoch stream, server/epoch_run.c) chain such streams:
 * each batch is a head message and then its rows chunks, and the next
 * batch is made (sampled, on the worker that saw the last chunk's send
 * complete) only then, so a reader that stops reading parks the call like
 * any other stream. Every batch renews the call's server deadline.
 *
 * Admission: the bearer token (when the server has one) is checked against
 * the call's `authorization` metadata before anything else, in constant
 * time, and a refusal never echoes it. Then at most max_calls calls are
 * served at once; the next ones are refused with RESOURCE_EXHAUSTED at once,
 * so a flood of calls (or of stalled ones) bounds the server's memory
 * instead of queueing without end. What a client sees of all this is
 * docs/api.md §6 ("Security and admission").
 *
 * Deadlines: a call's deadline is the client's, or the server's own request
 * timeout counted from admission, whichever comes first — so a client that
 * sends no deadline and stops reading cannot hold one of the max_calls
 * places for ever. Both are checked before the compute, after it and before
 * every chunk; a call past either answers DEADLINE_EXCEEDED. A call parked on
 * a send cannot check anything: gRPC's server cancels it when the client's
 * deadline passes (its deadline filter, even when the client is frozen; test_grpc
 * checks this), and the reaper thread cancels it when the server's passes.
 * Admitted calls are listed in admission order, which is the order of the
 * server's deadlines (one timeout for all), so the reaper stops at the first
 * call not yet due and sleeps until then. The pending send then fails, and the call is finished and freed like
 * any other, and counted once.
 *
 * Connected clients: gRPC's C core reports calls, not connections, so a
 * client is a peer address (one per channel: ip:port) with a call in flight
 * or one that ended within the last FS_GRPC_IDLE_S seconds (settable). A
 * janitor thread forgets idle peers, so the gauge falls when trainers go away.
 *
 * TLS: gRPC's own SSL credentials (OpenSSL underneath), with client
 * certificates required and verified against a CA for mTLS.
 *
 * Shutdown: grpc_server_shutdown_and_notify -> wait for its tag (calls being
 * served finish; after a grace period they are cancelled) -> wait until
 * every call object is freed -> grpc_server_destroy -> shut down the queue
 * (workers see it drained and exit) -> destroy it -> grpc_shutdown, which
 * only tears gRPC down when this was its last user (grpc_init/grpc_shutdown
 * are reference counted). */
#include "grpc_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "epoch_run.h"
#include "fs_addr.h"
#include "fs_pb.h"
#include "fs_wire.h"
#include "grpc_log.h"
#include "listen.h"

#define SHUTDOWN_GRACE_MS 5000
#define FS_GRPC_IDLE_S 30.0
#define MAX_PEERS 4096
#define REQUESTS_POSTED 8          /* calls asked of gRPC ahead, so new calls never wait for a worker */
#define MAX_TOKEN_BYTES 4096
#define TAG_SHUTDOWN ((void *)3)

typedef struct {
    struct fs_grpc_server *srv;
    fs_sampler_t *sampler;
    fs_typed_sampler_t *typed;     /* HeteroSample and LinkSample */
    pthread_t thread;
    int running;
} worker_t;

typedef struct {
    char *addr;       /* gRPC's peer string, whole: one cut short would never match its calls again */
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

struct call;

/* The gatherer threads and their queue of calls wanting a chunk made ahead. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;             /* a job queued or finished, or quit */
    struct call *head, *tail;
    int quit, num;
    pthread_t *threads;
} gatherers_t;

struct fs_grpc_server {
    grpc_server *server;
    peers_t peers;
    gatherers_t gatherers;
    grpc_completion_queue *cq;          /* every call's batches, polled by every worker */
    grpc_completion_queue *shutdown_cq;
    fs_engine_t *engine;
    fs_metrics_t *metrics;
    int num_workers;
    worker_t *workers;
    fs_pool_t *pool;                    /* one request's sampling split over the cores (fs_pool.h: a request
                                         * finding it busy samples on its own worker thread) */
    int grpc_initialised;
    int max_calls;
    double request_timeout_s;           /* the server's deadline for every call, from its admission */
    char *bearer;                       /* "Bearer <token>", or NULL: no token asked for */
    /* the calls: every call object alive (live), those admitted (in_flight) */
    pthread_mutex_t calls_mu;
    pthread_cond_t calls_cv;
    int live, in_flight, stopping;
    struct call *admitted_head, *admitted_tail; /* admitted calls, oldest first (calls_mu) */
    pthread_t reaper;                   /* cancels calls past the server's deadline */
    pthread_cond_t reaper_cv;           /* (calls_mu, CLOCK_MONOTONIC) wakes the reaper to quit; nothing else */
    int reaper_running, reaper_quit;
};

typedef enum { CALL_REQUESTED, CALL_RECEIVING, CALL_STREAMING, CALL_FINISHING } call_state_t;

/* A typed batch's image, shared by the call and by every chunk message
 * that sends a piece of it: a chunk's slice points into the image instead
 * of copying it (a [15,10,5] x 1024 batch is ~20 MB), and holds a
 * reference, since gRPC may keep a sent slice past the call's end. */
typedef struct image_ref {
    char *mem;
    size_t cap;
    atomic_int refs;
} image_ref_t;

/* Images the calls are done with, kept for the next ones: a fresh 20 MB
 * allocation is ~5,000 first-touch page faults per batch (~12% of the
 * server's time for a typed batch over loopback, in perf), a kept one is
 * mapped already. Process-wide, so a slice gRPC releases late never
 * outlives its pool; bounded in count and bytes. */
#define IMAGE_POOL_SLOTS 8
#define IMAGE_POOL_BYTES ((size_t)512 << 20)

static struct {
    pthread_mutex_t mu;
    char *mem[IMAGE_POOL_SLOTS];
    size_t cap[IMAGE_POOL_SLOTS];
    int n;
    size_t bytes;
} image_pool = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* The smallest kept image of at least `bytes` (NULL if none); when none is
 * big enough the smallest is dropped, so the pool follows the batch size. */
static char *image_pool_take(size_t bytes, size_t *cap)
{
    pthread_mutex_lock(&image_pool.mu);
    int best = -1, smallest = -1;
    for (int i = 0; i < image_pool.n; i++) {
        if (image_pool.cap[i] >= bytes && (best < 0 || image_pool.cap[i] < image_pool.cap[best])) best = i;
        if (smallest < 0 || image_pool.cap[i] < image_pool.cap[smallest]) smallest = i;
    }
    int k = best >= 0 ? best : smallest;
    char *mem = NULL;
    if (k >= 0) {
        mem = image_pool.mem[k], *cap = image_pool.cap[k];
        image_pool.bytes -= *cap;
        image_pool.n--;
        image_pool.mem[k] = image_pool.mem[image_pool.n], image_pool.cap[k] = image_pool.cap[image_pool.n];
    }
    pthread_mutex_unlock(&image_pool.mu);
    if (mem && best < 0) {
        free(mem);
        mem = NULL;
    }
    return mem;
}

static void image_pool_give(char *mem, size_t cap)
{
    pthread_mutex_lock(&image_pool.mu);
    if (image_pool.n < IMAGE_POOL_SLOTS && image_pool.bytes + cap <= IMAGE_POOL_BYTES) {
        image_pool.mem[image_pool.n] = mem, image_pool.cap[image_pool.n] = cap;
        image_pool.n++;
        image_pool.bytes += cap;
        mem = NULL;
    }
    pthread_mutex_unlock(&image_pool.mu);
    free(mem);
}

static void image_unref(void *p)
{
    image_ref_t *r = p;
    if (r && atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) == 1) {
        image_pool_give(r->mem, r->cap);
        free(r);
    }
}

/* A stream of feature rows (or of a split's ids, or of a typed batch
 * image), one chunk per message. */
typedef struct rows_job {
    char table[64];
    const char *contig;            /* rows stored back to back instead (a split's ids); table unused */
    image_ref_t *image;            /* contig is this typed batch image, rows of 8 bytes: BatchImageChunk messages */
    const int64_t *ids;
    int64_t n;
    fs_dtype_t dtype;              /* resolved: never INVALID */
    size_t row_bytes;
    int64_t dim;
    int wrap;                      /* SampleGatherChunk messages */
    const featstore_v1_SampleResponse *sample; /* first message's sample (wrap only; chunk 0 only) */
} rows_job_t;

/* One call, from its request to its freeing (see the top of the file). */
typedef struct call {
    struct fs_grpc_server *srv;
    worker_t *w;                   /* the worker running the current step */
    call_state_t state;
    grpc_call *call;
    grpc_call_details details;
    grpc_metadata_array request_md;
    grpc_byte_buffer *request;
    grpc_byte_buffer *response;    /* unary: sent with the status */
    int method;                    /* index into methods[]; -1 unknown */
    int sent_initial_md, admitted;
    double server_deadline;        /* admission + the request timeout (now_s clock) */
    struct call *aprev, *anext;    /* in the server's admitted list */
    int reaped;                    /* cancelled by the reaper (calls_mu) */
    atomic_int timeout_counted;    /* the deadline metric counts a call once */
    grpc_status_code code_override; /* OK = derive the code from the fs_status_t */
    fs_error_t err;
    double t0;
    char *peer;
    int peer_tracked;
    int recv_cancelled;            /* RECV_CLOSE_ON_SERVER's flag */
    /* a stream in progress */
    rows_job_t job;
    int64_t next_chunk, chunks;    /* the chunk `ready` holds; how many in all */
    int64_t sent_chunks;           /* sends completed */
    int ahead;                     /* AHEAD_*: chunk ahead_k asked of the gatherers (s->gatherers.mu) */
    int64_t ahead_k;
    struct call *qprev, *qnext;    /* in the gatherers' queue */
    grpc_byte_buffer *sending, *ready;
    fs_error_t ready_err;          /* why `ready` could not be made */
    fs_wire_buf_t ids_buf;         /* Gather's ids, borrowed from `request` */
    int64_t *nodes;                /* SampleGather's nodes, copied out of the worker's sampler */
    struct image_ref *image;       /* HeteroSample's and LinkSample's batch image */
    /* Stream: the epoch's batches, each a head message and then its rows job */
    fs_epoch_run_t *run;
    int sending_head;              /* the send in flight is a batch's head */
    int64_t batches_sent;
} call_t;

/* A method: decodes c->request and computes the answer, into c->response
 * (unary), or starts the stream and sets *streaming (the step is then over). */
typedef fs_status_t (*handler_fn)(call_t *c, int *streaming);

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

/* addr's slot, or p->num when it has none (under p->mu). */
static int find_peer(const peers_t *p, const char *addr)
{
    int i = 0;
    while (i < p->num && strcmp(p->peer[i].addr, addr) != 0) i++;
    return i;
}

/* A call from addr starts; returns its slot (-1 when the table is full). */
static int peer_enter(peers_t *p, const char *addr)
{
    pthread_mutex_lock(&p->mu);
    int i = find_peer(p, addr);
    if (i == p->num && p->num < MAX_PEERS && (p->peer[i].addr = strdup(addr))) {
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
    int i = find_peer(p, addr);
    if (i < p->num) {
        p->peer[i].active--;
        p->peer[i].last = now_s();
    }
    pthread_mutex_unlock(&p->mu);
}

/* Forgets peers idle for longer than FS_GRPC_IDLE_S (under p->mu). */
static void peers_prune(peers_t *p, double now)
{
    for (int i = 0; i < p->num;)
        if (p->peer[i].active == 0 && now - p->peer[i].last > p->idle_s) {
            free(p->peer[i].addr);
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
        for (int i = 0; i < p->num; i++) free(p->peer[i].addr);
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->cv);
    }
    free(p->peer);
}

/* ---- batches ------------------------------------------------------------------ */

/* Starts one batch tagged with the call: its completion is the call's next
 * step, on whichever worker polls it. Nothing may touch the call after a
 * successful start but that step. */
static int start_batch(call_t *c, grpc_op *ops, size_t n)
{
    return grpc_call_start_batch(c->call, ops, n, c, NULL) == GRPC_CALL_OK;
}

static void op_initial_md(call_t *c, grpc_op *op)
{
    memset(op, 0, sizeof *op);
    op->op = GRPC_OP_SEND_INITIAL_METADATA;
    c->sent_initial_md = 1;
}

static int past_client_deadline(const call_t *c)
{
    gpr_timespec deadline = gpr_convert_clock_type(c->details.deadline, GPR_CLOCK_MONOTONIC);
    return gpr_time_cmp(gpr_now(GPR_CLOCK_MONOTONIC), deadline) > 0;
}

static int past_server_deadline(const call_t *c) { return c->admitted && now_s() > c->server_deadline; }

static int past_deadline(const call_t *c) { return past_client_deadline(c) || past_server_deadline(c); }

static void count_timeout(call_t *c)
{
    if (c->srv->metrics && !atomic_exchange(&c->timeout_counted, 1)) fs_metrics_grpc_deadline_exceeded(c->srv->metrics);
}

static fs_status_t check_deadline(call_t *c, const char *when)
{
    if (past_client_deadline(c)) return fs_error(&c->err, FS_ERR_TIMEOUT, "the call's deadline passed %s", when);
    if (past_server_deadline(c))
        return fs_error(&c->err, FS_ERR_TIMEOUT, "the server's request timeout of %.0f ms passed %s (serve "
                        "--request-timeout)", c->srv->request_timeout_s * 1e3, when);
    return FS_OK;
}

static void call_done(call_t *c);
static fs_method_t method_metric(int m);

/* Sends the final status (with the unary response, if any) and takes the
 * client's close; the call is freed when that batch completes (whether it
 * succeeds or not: failure only means the client is gone). The call is
 * counted first, so a client that has its answer also sees it counted (the
 * final write is not in the latency). */
static void finish_call(call_t *c, fs_status_t st)
{
    fs_metrics_t *metrics = c->srv->metrics;
    if (st == FS_ERR_TIMEOUT) count_timeout(c);
    if (metrics && c->admitted && c->method >= 0)
        fs_metrics_request(metrics, method_metric(c->method), FS_TRANSPORT_GRPC, st, now_s() - c->t0);
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
    ops[n++].data.send_status_from_server.status_details = &details; /* gRPC takes its own reference */
    memset(&ops[n], 0, sizeof ops[n]);
    ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    ops[n++].data.recv_close_on_server.cancelled = &c->recv_cancelled;
    c->state = CALL_FINISHING;
    int started = start_batch(c, ops, n);
    grpc_slice_unref(details);
    if (!started) call_done(c);
}

static fs_status_t decode_request(call_t *c, const pb_msgdesc_t *fields, void *msg, const char *what)
{
    if (fs_wire_decode(c->request, fields, msg, what, &c->err) == FS_OK) return FS_OK;
    return c->err.code = FS_ERR_INVALID_ARGUMENT; /* undecodable bytes are the caller's mistake */
}

/* The version-1 methods: api_version 1, or 2 (a client speaking 2 sends it everywhere). */
static fs_status_t check_api(call_t *c, uint32_t version)
{
    if (version >= FS_WIRE_API_VERSION && version <= FS_WIRE_API_VERSION_MAX) return FS_OK;
    c->code_override = GRPC_STATUS_FAILED_PRECONDITION;
    return fs_error(&c->err, FS_ERR_UNSUPPORTED, "api_version %u is not supported: this server speaks "
                    "featstore.v1 api_version %d and %d", (unsigned)version, FS_WIRE_API_VERSION,
                    FS_WIRE_API_VERSION_MAX);
}

/* The typed methods exist since api_version 2; 1 does not have them. */
static fs_status_t check_api_typed(call_t *c, uint32_t version, const char *method)
{
    if (version >= FS_WIRE_API_VERSION_TYPED && version <= FS_WIRE_API_VERSION_MAX) return FS_OK;
    c->code_override = GRPC_STATUS_FAILED_PRECONDITION;
    return fs_error(&c->err, FS_ERR_UNSUPPORTED, "api_version %u is not supported by %s: it needs api_version %d "
                    "(this server speaks featstore.v1 api_version %d and %d; %s is new in %d)", (unsigned)version,
                    method, FS_WIRE_API_VERSION_TYPED, FS_WIRE_API_VERSION, FS_WIRE_API_VERSION_MAX, method,
                    FS_WIRE_API_VERSION_TYPED);
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

static void free_rows(void *p) { free(p); }

/* Chunk k of a typed batch image: a slice of the image itself. */
static grpc_byte_buffer *image_chunk(const rows_job_t *j, int64_t first, int64_t rows, fs_error_t *err)
{
    size_t bytes = (size_t)rows * j->row_bytes, offset = (size_t)first * j->row_bytes;
    atomic_fetch_add_explicit(&j->image->refs, 1, memory_order_relaxed);
    grpc_slice data = grpc_slice_new_with_user_data(j->image->mem + offset, bytes, image_unref, j->image);
    grpc_byte_buffer *bb = fs_wire_image_chunk((uint64_t)j->n * j->row_bytes, offset, data, err);
    grpc_slice_unref(data);
    return bb;
}

static int64_t rows_per_chunk(const rows_job_t *j)
{
    int64_t per = j->row_bytes ? (int64_t)(FS_WIRE_CHUNK_BYTES / j->row_bytes) : j->n;
    return per < 1 ? 1 : per;
}

/* Gathers chunk k into a fresh buffer and wraps it in a message. */
static grpc_byte_buffer *make_chunk(fs_engine_t *e, const rows_job_t *j, int64_t k, fs_error_t *err)
{
    int64_t per = rows_per_chunk(j), first = k * per, rows = j->n - first < per ? j->n - first : per;
    if (j->image) return image_chunk(j, first, rows, err);
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

static int64_t chunk_count(const rows_job_t *j)
{
    int64_t per = rows_per_chunk(j);
    return j->n == 0 ? 1 : (j->n + per - 1) / per;
}

/* Makes chunk k into c->ready (NULL with c->ready_err on failure). */
static void make_ready(call_t *c, int64_t k)
{
    fs_error_clear(&c->ready_err);
    c->ready = make_chunk(c->srv->engine, &c->job, k, &c->ready_err);
    c->next_chunk = k;
}

/* ---- gathering ahead (see "Streaming" at the top) ---- */

enum { AHEAD_NONE, AHEAD_QUEUED, AHEAD_RUNNING };

static void ahead_unlink(gatherers_t *g, call_t *c)
{
    if (c->qprev) c->qprev->qnext = c->qnext;
    else g->head = c->qnext;
    if (c->qnext) c->qnext->qprev = c->qprev;
    else g->tail = c->qprev;
    c->qprev = c->qnext = NULL;
}

static void ahead_submit(gatherers_t *g, call_t *c, int64_t k)
{
    pthread_mutex_lock(&g->mu);
    c->ahead = AHEAD_QUEUED, c->ahead_k = k;
    c->qprev = g->tail, c->qnext = NULL;
    if (g->tail) g->tail->qnext = c;
    else g->head = c;
    g->tail = c;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* Ends the call's job: waits while a gatherer runs it; a job still queued
 * is taken back, and returned (1) for the caller to do or drop. */
static int ahead_take_back(gatherers_t *g, call_t *c)
{
    pthread_mutex_lock(&g->mu);
    while (c->ahead == AHEAD_RUNNING) pthread_cond_wait(&g->cv, &g->mu);
    int queued = c->ahead == AHEAD_QUEUED;
    if (queued) ahead_unlink(g, c);
    c->ahead = AHEAD_NONE;
    pthread_mutex_unlock(&g->mu);
    return queued;
}

static void *gatherer_main(void *arg)
{
    gatherers_t *g = arg;
    pthread_mutex_lock(&g->mu);
    for (;;) {
        while (!g->head && !g->quit) pthread_cond_wait(&g->cv, &g->mu);
        if (!g->head) break; /* quit, and nothing queued */
        call_t *c = g->head;
        ahead_unlink(g, c);
        c->ahead = AHEAD_RUNNING;
        pthread_mutex_unlock(&g->mu);
        make_ready(c, c->ahead_k);
        pthread_mutex_lock(&g->mu);
        c->ahead = AHEAD_NONE;
        pthread_cond_broadcast(&g->cv);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

static fs_status_t gatherers_start(gatherers_t *g, int num, fs_error_t *err)
{
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    if (!(g->threads = calloc((size_t)num, sizeof *g->threads)))
        return fs_error(err, FS_ERR_NOMEM, "grpc: out of memory for the gatherers");
    for (; g->num < num; g->num++)
        if (pthread_create(&g->threads[g->num], NULL, gatherer_main, g) != 0)
            return fs_error(err, FS_ERR_NOMEM, "grpc: cannot start gatherer thread %d", g->num);
    return FS_OK;
}

/* After the last call is gone: nothing is queued any more. */
static void gatherers_stop(gatherers_t *g)
{
    if (!g->threads) return;
    pthread_mutex_lock(&g->mu);
    g->quit = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    for (int i = 0; i < g->num; i++) pthread_join(g->threads[i], NULL);
    free(g->threads);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
}

/* Sends one message of a stream (the call owns bb until the send completes).
 * When this returns FS_OK the step is over and the call must not be touched. */
static fs_status_t send_message(call_t *c, grpc_byte_buffer *bb)
{
    c->sending = bb;
    grpc_op ops[2];
    size_t n = 0;
    if (!c->sent_initial_md) op_initial_md(c, &ops[n++]);
    memset(&ops[n], 0, sizeof ops[n]);
    ops[n].op = GRPC_OP_SEND_MESSAGE;
    ops[n++].data.send_message.send_message = c->sending;
    c->state = CALL_STREAMING;
    if (!start_batch(c, ops, n)) return fs_error(&c->err, FS_ERR_INTERNAL, "grpc: cannot start a send");
    return FS_OK;
}

/* Hands the chunk made ahead to gRPC, after asking the gatherers for the
 * next one: once the send is started, another worker may already be
 * handling its completion. When this returns FS_OK the step is over and the
 * call must not be touched. */
static fs_status_t send_ready(call_t *c)
{
    if (ahead_take_back(&c->srv->gatherers, c)) make_ready(c, c->ahead_k); /* no gatherer got to it: do it here */
    if (!c->ready) {
        c->err = c->ready_err;
        return c->err.code;
    }
    grpc_byte_buffer *bb = c->ready;
    c->ready = NULL;
    if (c->next_chunk + 1 < c->chunks) ahead_submit(&c->srv->gatherers, c, c->next_chunk + 1);
    return send_message(c, bb);
}

/* Starts streaming c->job: chunk 0 (with the sample, if any) here, chunk 1
 * by a gatherer. ids_in_sampler: c->job.ids lie in this worker's sampler,
 * which the worker reuses for its next call, so the gatherers need a copy.
 * *streaming = 1 once the first send is started (the step is then over). */
static fs_status_t stream_begin(call_t *c, int ids_in_sampler, int *streaming)
{
    rows_job_t *j = &c->job;
    c->chunks = chunk_count(j);
    if (ids_in_sampler && c->chunks > 1) {
        if (!(c->nodes = malloc((size_t)j->n * sizeof *c->nodes)))
            return fs_error(&c->err, FS_ERR_NOMEM, "out of memory for %lld node ids", (long long)j->n);
        memcpy(c->nodes, j->ids, (size_t)j->n * sizeof *c->nodes);
        j->ids = c->nodes;
    }
    make_ready(c, 0);
    j->sample = NULL; /* only chunk 0 carries it, and it is the caller's */
    fs_status_t st = send_ready(c);
    *streaming = st == FS_OK;
    return st;
}

static void epoch_sent(call_t *c, int ok);

/* A send completed (ok) or failed: the next chunk, or the end. */
static void call_sent(call_t *c, int ok)
{
    grpc_byte_buffer_destroy(c->sending);
    c->sending = NULL;
    if (c->run) {
        epoch_sent(c, ok);
        return;
    }
    fs_status_t st;
    if (!ok) {
        int64_t rows = c->sent_chunks * rows_per_chunk(&c->job), unit = c->job.image ? 8 : 1;
        st = past_deadline(c) ? check_deadline(c, "while streaming rows")
                              : fs_error(&c->err, FS_ERR_UNAVAILABLE, "the client went away after %lld of %lld %s",
                                         (long long)((rows < c->job.n ? rows : c->job.n) * unit),
                                         (long long)(c->job.n * unit), c->job.image ? "bytes" : "rows");
    } else if (++c->sent_chunks == c->chunks) {
        finish_call(c, FS_OK);
        return;
    } else if ((st = check_deadline(c, "while streaming rows")) == FS_OK && (st = send_ready(c)) == FS_OK) {
        return;
    }
    finish_call(c, st);
}

/* ---- the methods ---------------------------------------------------------------- */

static fs_status_t do_info(call_t *c, int *streaming)
{
    (void)streaming;
    featstore_v1_InfoRequest req = featstore_v1_InfoRequest_init_zero;
    fs_status_t st = decode_request(c, featstore_v1_InfoRequest_fields, &req, "InfoRequest");
    if (st == FS_OK) st = check_api(c, req.api_version);
    if (st != FS_OK) return st;
    fs_info_t *info;
    if ((st = fs_engine_info(c->srv->engine, &info, &c->err)) != FS_OK) return st;
    if (c->srv->metrics && fs_metrics_info(c->srv->metrics, info) != FS_OK)
        st = fs_error(&c->err, FS_ERR_NOMEM, "out of memory describing the placement");
    featstore_v1_InfoResponse resp;
    fs_pb_info_out_t enc;
    fs_pb_info_prepare_encode(info, &resp, &enc);
    if (st == FS_OK) c->response = fs_wire_encode(featstore_v1_InfoResponse_fields, &resp, &c->err);
    fs_info_free(info);
    return st != FS_OK ? st : c->response ? FS_OK : c->err.code;
}

static fs_status_t do_sample(call_t *c, int *streaming)
{
    (void)streaming;
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
    if (st == FS_OK)
        st = fs_engine_sample(c->srv->engine, c->w->sampler, seeds, n, &sreq, NULL, FS_DTYPE_INVALID, &res, &c->err);
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

static fs_status_t do_gather(call_t *c, int *streaming)
{
    featstore_v1_GatherRequest req = featstore_v1_GatherRequest_init_zero;
    c->ids_buf = (fs_wire_buf_t){.flags = FS_WIRE_BORROW, .align = sizeof(int64_t)}; /* freed with the call */
    fs_wire_set_buf(&req.ids, &c->ids_buf);
    fs_engine_t *e = c->srv->engine;
    rows_job_t *j = &c->job;
    fs_status_t st = decode_request(c, featstore_v1_GatherRequest_fields, &req, "GatherRequest");
    if (st == FS_OK) st = check_api(c, req.api_version);
    if (st == FS_OK) st = parse_out_dtype(c, req.out_dtype, &j->dtype);
    if (st == FS_OK) st = fs_wire_int64s(&c->ids_buf, "ids", &j->ids, &j->n, &c->err);
    if (st == FS_OK) st = fs_engine_table(e, req.table, &j->dtype, &j->row_bytes, &j->dim, &c->err);
    if (st == FS_OK) st = fs_engine_gather_check(e, req.table, j->ids, j->n, j->dtype, &c->err);
    if (st == FS_OK) st = check_deadline(c, "before gathering");
    snprintf(j->table, sizeof j->table, "%s", req.table);
    return st == FS_OK ? stream_begin(c, 0, streaming) : st; /* the ids stay in the request, which the call keeps */
}

static fs_status_t do_sample_gather(call_t *c, int *streaming)
{
    featstore_v1_SampleGatherRequest req = featstore_v1_SampleGatherRequest_init_zero;
    fs_wire_buf_t seeds_buf = {.flags = FS_WIRE_BORROW, .align = sizeof(int64_t)};
    fs_wire_set_buf(&req.sample.seeds, &seeds_buf);
    fs_engine_t *e = c->srv->engine;
    rows_job_t *j = &c->job;
    const int64_t *seeds = NULL;
    int64_t n = 0;
    fs_sample_req_t sreq;
    fs_sample_result_t res;
    fs_status_t st = decode_request(c, featstore_v1_SampleGatherRequest_fields, &req, "SampleGatherRequest");
    if (st == FS_OK) st = check_api(c, req.api_version);
    if (st == FS_OK && !req.has_sample)
        st = fs_error(&c->err, FS_ERR_INVALID_ARGUMENT, "SampleGatherRequest has no sample request");
    if (st == FS_OK) st = parse_out_dtype(c, req.out_dtype, &j->dtype);
    if (st == FS_OK) st = fs_engine_table(e, req.table, &j->dtype, &j->row_bytes, &j->dim, &c->err);
    if (st == FS_OK) st = fs_wire_sample_req_from_msg(&req.sample, &sreq, &c->err);
    if (st == FS_OK) st = fs_wire_int64s(&seeds_buf, "seeds", &seeds, &n, &c->err);
    if (st == FS_OK) st = check_deadline(c, "before sampling");
    if (st == FS_OK) st = fs_engine_sample(e, c->w->sampler, seeds, n, &sreq, req.table, j->dtype, &res, &c->err);
    if (st == FS_OK) st = check_deadline(c, "after sampling");
    if (st == FS_OK) {
        fs_wire_sample_src_t src;
        featstore_v1_SampleResponse sample;
        fs_wire_sample_response(&res, &src, &sample);
        snprintf(j->table, sizeof j->table, "%s", req.table);
        j->wrap = 1, j->ids = res.nodes, j->n = res.num_nodes, j->sample = &sample;
        st = stream_begin(c, 1, streaming); /* the nodes lie in this worker's sampler: copied if needed later */
    }
    fs_wire_buf_free(&seeds_buf);
    return st;
}

static fs_status_t do_split(call_t *c, int *streaming)
{
    featstore_v1_SplitRequest req = featstore_v1_SplitRequest_init_zero;
    fs_status_t st = decode_request(c, featstore_v1_SplitRequest_fields, &req, "SplitRequest");
    if (st == FS_OK) st = check_api(c, req.api_version);
    const fs_idset_t *split = NULL;
    if (st == FS_OK) st = fs_engine_split(c->srv->engine, req.name, &split, &c->err);
    if (st != FS_OK) return st;
    c->job = (rows_job_t){.contig = (const char *)split->ids, .n = split->count, .dtype = FS_DTYPE_I64,
                          .row_bytes = sizeof(int64_t), .dim = 1}; /* the dataset's memory: lives as long as the server */
    return stream_begin(c, 0, streaming);
}

/* ---- typed graphs: HeteroSample and LinkSample ---------------------------------- */

/* A typed batch's image goes to the call (the executor's region), which
 * drops its reference however the call ends; chunks in flight keep theirs
 * (image_ref_t). */
static fs_status_t alloc_image(fs_exec_region_t *into, size_t bytes, fs_error_t *err)
{
    call_t *c = into->ctx;
    image_unref(c->image);
    into->base = NULL, into->cap = 0;
    if (!bytes) bytes = 1;
    c->image = calloc(1, sizeof *c->image);
    if (c->image && !(c->image->mem = image_pool_take(bytes, &c->image->cap))) {
        c->image->mem = malloc(bytes);
        c->image->cap = bytes;
    }
    if (c->image && !c->image->mem) {
        free(c->image);
        c->image = NULL;
    }
    if (!c->image) return fs_error(err, FS_ERR_NOMEM, "out of memory for a typed batch of %zu bytes", bytes);
    atomic_init(&c->image->refs, 1);
    into->base = c->image->mem, into->cap = c->image->cap;
    return FS_OK;
}

/* A decode that failed on a list too long says which. */
static fs_status_t decode_typed(call_t *c, const pb_msgdesc_t *fields, void *msg, const char *what,
                                const fs_wire_hetero_in_t *in)
{
    fs_status_t st = decode_request(c, fields, msg, what);
    if (st != FS_OK && in->problem[0]) st = fs_error(&c->err, FS_ERR_INVALID_ARGUMENT, "%s: %s", what, in->problem);
    return st;
}

/* Samples, gathers and lays the batch out as one image (fs_engine_typed),
 * then streams it as rows of 8 bytes: BatchImageChunks of about 1 MiB. */
static fs_status_t run_typed(call_t *c, const fs_wire_hetero_in_t *in, int link, int *streaming)
{
    fs_exec_region_t image = {.ctx = c, .grow = alloc_image};
    size_t len = 0;
    fs_status_t st = check_deadline(c, "before sampling");
    if (st == FS_OK) /* the pool splits the gathers too */
        st = fs_engine_typed(c->srv->engine, c->w->typed, c->srv->pool, link ? NULL : in->groups,
                             link ? 0 : in->num_groups, link ? &in->link : NULL, &in->req, in->joined_edges, &image,
                             &len, &c->err);
    if (st == FS_OK) st = check_deadline(c, "after sampling");
    if (st != FS_OK) return st;
    c->job = (rows_job_t){.contig = image.base, .image = c->image, .n = (int64_t)(len / 8), .dtype = FS_DTYPE_I64,
                          .row_bytes = 8, .dim = 1}; /* an image is whole 8-byte words */
    return stream_begin(c, 0, streaming);
}

static fs_status_t do_hetero_sample(call_t *c, int *streaming)
{
    featstore_v1_HeteroSampleRequest req;
    fs_wire_hetero_in_t in;
    fs_wire_hetero_prepare(&req, &in);
    fs_status_t st = decode_typed(c, featstore_v1_HeteroSampleRequest_fields, &req, "HeteroSampleRequest", &in);
    if (st == FS_OK) st = check_api_typed(c, req.api_version, "HeteroSample");
    if (st == FS_OK) st = fs_wire_hetero_take(&req, &in, &c->err);
    if (st == FS_OK) st = run_typed(c, &in, 0, streaming); /* in's ids point into c->request, which the call keeps */
    fs_wire_hetero_in_free(&in);
    return st;
}

static fs_status_t do_link_sample(call_t *c, int *streaming)
{
    featstore_v1_LinkSampleRequest req;
    fs_wire_hetero_in_t in;
    fs_wire_link_prepare(&req, &in);
    fs_status_t st = decode_typed(c, featstore_v1_LinkSampleRequest_fields, &req, "LinkSampleRequest", &in);
    if (st == FS_OK) st = check_api_typed(c, req.api_version, "LinkSample");
    if (st == FS_OK) st = fs_wire_link_take(&req, &in, &c->err);
    if (st == FS_OK) st = run_typed(c, &in, 1, streaming);
    fs_wire_hetero_in_free(&in);
    return st;
}

static bool encode_text_cb(pb_ostream_t *stream, const pb_field_t *field, void *const *arg)
{
    const char *text = *arg;
    return pb_encode_tag_for_field(stream, field) && pb_encode_string(stream, (const pb_byte_t *)text, strlen(text));
}

static fs_status_t do_stats(call_t *c, int *streaming)
{
    (void)streaming;
    featstore_v1_StatsRequest req = featstore_v1_StatsRequest_init_zero;
    fs_status_t st = decode_request(c, featstore_v1_StatsRequest_fields, &req, "StatsRequest");
    if (st == FS_OK) st = check_api(c, req.api_version);
    if (st != FS_OK) return st;
    fs_metrics_t *m = c->srv->metrics;
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

/* ---- Stream: an epoch's batches in one call -------------------------------------- */

static void renew_deadline(call_t *c);

/* Makes the run's next batch and sends its head (the sample, the batch's
 * numbers and labels), with the gatherers asked for its first rows chunk;
 * FS_END after the last batch. On FS_OK the step is over. */
static fs_status_t epoch_send_next(call_t *c)
{
    renew_deadline(c); /* a stream lasts an epoch: the server's timeout counts from each batch */
    fs_epoch_run_batch_t b;
    fs_status_t st = fs_epoch_run_next(c->run, c->w->sampler, &b, &c->err);
    if (st == FS_OK) st = check_deadline(c, "after sampling");
    if (st != FS_OK) return st;
    featstore_v1_StreamChunk head = featstore_v1_StreamChunk_init_zero;
    fs_wire_sample_src_t src;
    fs_wire_bytes_t labels;
    head.api_version = FS_WIRE_API_VERSION_TYPED;
    head.has_sample = true;
    fs_wire_sample_response(&b.sample, &src, &head.sample);
    for (int h = 0; h < b.sample.num_hops; h++) /* implied by dst_offsets: the receiver rebuilds it */
        fs_wire_set_bytes(&head.sample.blocks[h].edge_dst, &src.arr[h][1], NULL, 0);
    head.batch = b.index, head.plan_batch = b.plan_index;
    if (b.labels) fs_wire_set_bytes(&head.labels, &labels, b.labels, sizeof(int64_t) * (size_t)b.sample.num_seeds);
    grpc_byte_buffer *bb = fs_wire_encode(featstore_v1_StreamChunk_fields, &head, &c->err);
    if (!bb) return c->err.code;
    c->job.ids = b.rows, c->job.n = b.num_rows; /* the run's memory, until its next batch */
    c->chunks = c->job.table[0] ? chunk_count(&c->job) : 0;
    c->sent_chunks = 0;
    if (c->chunks) ahead_submit(&c->srv->gatherers, c, 0);
    c->sending_head = 1;
    return send_message(c, bb);
}

/* A Stream call's send completed (ok) or failed: the batch's next rows
 * chunk, or the next batch, or the end. */
static void epoch_sent(call_t *c, int ok)
{
    fs_status_t st;
    if (!ok) {
        st = past_deadline(c) ? check_deadline(c, "while streaming batches")
                              : fs_error(&c->err, FS_ERR_UNAVAILABLE, "the client went away after %lld of %lld "
                                         "batches", (long long)c->batches_sent,
                                         (long long)fs_epoch_run_num_batches(c->run));
    } else if (c->sending_head ? c->chunks > 0 : ++c->sent_chunks < c->chunks) {
        c->sending_head = 0;
        if ((st = check_deadline(c, "while streaming rows")) == FS_OK && (st = send_ready(c)) == FS_OK) return;
    } else {
        c->sending_head = 0;
        c->batches_sent++;
        if ((st = epoch_send_next(c)) == FS_OK) return;
        if (st == FS_END) st = FS_OK;
    }
    finish_call(c, st);
}

/* The request's plan (fs_epoch_plan checks the values). */
static fs_status_t plan_from_msg(call_t *c, const featstore_v1_StreamRequest *m, fs_epoch_opts_t *p)
{
    *p = (fs_epoch_opts_t){.batch_size = m->batch_size, .drop_last = m->drop_last, .chunk = m->chunk,
                           .seed = m->shuffle_seed, .epoch = m->epoch, .rank = m->rank,
                           .world_size = m->world_size ? m->world_size : 1};
    return fs_wire_order_from_name(m->order, &p->order, &c->err);
}

static fs_status_t do_stream(call_t *c, int *streaming)
{
    featstore_v1_StreamRequest req = featstore_v1_StreamRequest_init_zero;
    fs_wire_buf_t seeds_buf = {.flags = FS_WIRE_BORROW, .align = sizeof(int64_t)};
    fs_wire_set_buf(&req.seeds, &seeds_buf);
    fs_epoch_run_opts_t o = {.window = 1};
    fs_status_t st = decode_request(c, featstore_v1_StreamRequest_fields, &req, "StreamRequest");
    if (st == FS_OK) st = check_api_typed(c, req.api_version, "Stream");
    if (st == FS_OK && !req.has_sample)
        st = fs_error(&c->err, FS_ERR_INVALID_ARGUMENT, "StreamRequest has no sample request");
    if (st == FS_OK) st = fs_wire_sample_req_from_msg(&req.sample, &o.sample, &c->err);
    if (st == FS_OK) st = fs_wire_int64s(&seeds_buf, "seeds", &o.seeds, &o.num_seeds, &c->err);
    if (st == FS_OK) st = parse_out_dtype(c, req.out_dtype, &o.out_dtype);
    if (st == FS_OK) st = plan_from_msg(c, &req, &o.plan);
    if (st == FS_OK) {
        o.split = req.split, o.table = req.table, o.labels = req.labels, o.delta = req.delta;
        o.window = req.window ? req.window : 1, o.start_batch = req.start_batch;
        st = fs_epoch_run_open(c->srv->engine, &o, &c->run, &c->err); /* the seeds are copied */
    }
    fs_wire_buf_free(&seeds_buf);
    if (st != FS_OK) return st;
    rows_job_t *j = &c->job;
    snprintf(j->table, sizeof j->table, "%s", req.table);
    fs_epoch_run_rows(c->run, &j->dtype, &j->row_bytes, &j->dim);
    j->wrap = 1; /* rows messages are SampleGatherChunks with features alone: StreamChunk's fields 1 and 3 */
    st = epoch_send_next(c);
    *streaming = st == FS_OK;
    return st == FS_END ? FS_OK : st; /* resumed at the end: no batch */
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
    {FS_WIRE_METHOD_HETERO_SAMPLE, FS_METHOD_HETERO_SAMPLE, do_hetero_sample},
    {FS_WIRE_METHOD_LINK_SAMPLE, FS_METHOD_LINK_SAMPLE, do_link_sample},
    {FS_WIRE_METHOD_STREAM, FS_METHOD_STREAM, do_stream},
};

static int find_method(grpc_slice path)
{
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
        if (grpc_slice_str_cmp(path, methods[i].path) == 0) return (int)i;
    return -1;
}

static fs_method_t method_metric(int m) { return methods[m].method; }

/* ---- one call, step by step --------------------------------------------------- */

static void request_call(fs_grpc_server_t *s);

/* ---- the server's deadline: the admitted list and its reaper ----------------- */

static void admitted_append(fs_grpc_server_t *s, call_t *c) /* calls_mu held */
{
    c->aprev = s->admitted_tail, c->anext = NULL;
    if (s->admitted_tail) s->admitted_tail->anext = c;
    else s->admitted_head = c;
    s->admitted_tail = c;
}

static void admitted_remove(fs_grpc_server_t *s, call_t *c) /* calls_mu held */
{
    if (c->aprev) c->aprev->anext = c->anext;
    else s->admitted_head = c->anext;
    if (c->anext) c->anext->aprev = c->aprev;
    else s->admitted_tail = c->aprev;
    c->aprev = c->anext = NULL;
}

/* A Stream call's deadline starts again with each batch; the call moves to
 * the list's end, which keeps the list in deadline order. */
static void renew_deadline(call_t *c)
{
    fs_grpc_server_t *s = c->srv;
    pthread_mutex_lock(&s->calls_mu);
    if (!c->reaped) {
        c->server_deadline = now_s() + s->request_timeout_s;
        admitted_remove(s, c);
        admitted_append(s, c);
    }
    pthread_mutex_unlock(&s->calls_mu);
}

/* Cancels the calls past the server's deadline; returns when the next one
 * falls due. The call cannot be freed meanwhile: call_done takes it off the
 * list under calls_mu before releasing it. gRPC's cancel only queues the
 * failure of the call's pending batch for a worker; it never runs our code. */
static double reap_due(fs_grpc_server_t *s, double now) /* calls_mu held */
{
    for (call_t *c = s->admitted_head; c; c = c->anext) {
        if (c->reaped) continue;
        if (c->server_deadline > now) return c->server_deadline;
        c->reaped = 1;
        count_timeout(c);
        grpc_call_cancel_with_status(c->call, GRPC_STATUS_DEADLINE_EXCEEDED,
                                     "the server's request timeout passed (serve --request-timeout)", NULL);
    }
    return now + s->request_timeout_s;
}

/* Sleeps on a condition of its own, on now_s's clock, so that calls coming
 * and going (calls_cv) never wake it: it wakes when a call falls due. */
static void *reaper_main(void *arg)
{
    fs_grpc_server_t *s = arg;
    pthread_mutex_lock(&s->calls_mu);
    while (!s->reaper_quit) {
        /* a call admitted while it sleeps falls due a whole timeout from now, at the earliest */
        double next = reap_due(s, now_s());
        struct timespec t = {.tv_sec = (time_t)next, .tv_nsec = (long)((next - (double)(time_t)next) * 1e9)};
        pthread_cond_timedwait(&s->reaper_cv, &s->calls_mu, &t);
    }
    pthread_mutex_unlock(&s->calls_mu);
    return NULL;
}

static fs_status_t reaper_start(fs_grpc_server_t *s, fs_error_t *err)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&s->reaper_cv, &a);
    pthread_condattr_destroy(&a);
    if (pthread_create(&s->reaper, NULL, reaper_main, s) != 0) {
        pthread_cond_destroy(&s->reaper_cv);
        return fs_error(err, FS_ERR_NOMEM, "grpc: cannot start the request-timeout thread");
    }
    s->reaper_running = 1;
    return FS_OK;
}

/* After every call is gone: nothing is left to cancel. */
static void reaper_stop(fs_grpc_server_t *s)
{
    if (!s->reaper_running) return;
    pthread_mutex_lock(&s->calls_mu);
    s->reaper_quit = 1;
    pthread_cond_signal(&s->reaper_cv);
    pthread_mutex_unlock(&s->calls_mu);
    pthread_join(s->reaper, NULL);
    pthread_cond_destroy(&s->reaper_cv);
}

/* Releases everything the call holds; the server may stop once every call
 * object is gone. */
static void call_free(call_t *c)
{
    fs_grpc_server_t *s = c->srv;
    if (c->call) grpc_call_unref(c->call);
    if (c->request) grpc_byte_buffer_destroy(c->request);
    if (c->response) grpc_byte_buffer_destroy(c->response);
    if (c->sending) grpc_byte_buffer_destroy(c->sending);
    if (c->ready) grpc_byte_buffer_destroy(c->ready);
    fs_wire_buf_free(&c->ids_buf);
    fs_epoch_run_free(c->run);
    free(c->nodes);
    image_unref(c->image);
    gpr_free(c->peer);
    grpc_call_details_destroy(&c->details);
    grpc_metadata_array_destroy(&c->request_md);
    free(c);
    pthread_mutex_lock(&s->calls_mu);
    s->live--;
    pthread_cond_broadcast(&s->calls_cv);
    pthread_mutex_unlock(&s->calls_mu);
}

/* The call's last batch completed (or could not start). */
static void call_done(call_t *c)
{
    fs_grpc_server_t *s = c->srv;
    ahead_take_back(&s->gatherers, c); /* a chunk no one will send: dropped */
    if (c->peer_tracked) peer_leave(&s->peers, c->peer);
    pthread_mutex_lock(&s->calls_mu);
    if (c->admitted) {
        s->in_flight--;
        admitted_remove(s, c);
    }
    pthread_mutex_unlock(&s->calls_mu);
    if (c->admitted && s->metrics) fs_metrics_grpc_in_flight(s->metrics, -1);
    call_free(c);
}

/* Compares a received secret with ours in time that depends on ours only. */
static int same_secret(grpc_slice got, const char *want)
{
    size_t n = GRPC_SLICE_LENGTH(got), m = strlen(want);
    const unsigned char *g = GRPC_SLICE_START_PTR(got);
    unsigned diff = n != m;
    for (size_t i = 0; i < m; i++) diff |= (unsigned)(unsigned char)want[i] ^ (i < n ? g[i] : 0u);
    return diff == 0;
}

/* The bearer token, when the server asks for one. The refusal says what to
 * send, never what was expected or received. */
static fs_status_t authenticate(call_t *c)
{
    const char *want = c->srv->bearer;
    if (!want) return FS_OK;
    const grpc_slice *got = NULL;
    for (size_t i = 0; i < c->request_md.count; i++)
        if (grpc_slice_str_cmp(c->request_md.metadata[i].key, "authorization") == 0) got = &c->request_md.metadata[i].value;
    if (got && same_secret(*got, want)) return FS_OK;
    if (c->srv->metrics) fs_metrics_grpc_refused(c->srv->metrics, FS_GRPC_REFUSED_UNAUTHENTICATED);
    c->code_override = GRPC_STATUS_UNAUTHENTICATED;
    if (got) return fs_error(&c->err, FS_ERR_PERMISSION, "the bearer token in 'authorization' is not this server's");
    return fs_error(&c->err, FS_ERR_PERMISSION, "this server requires a bearer token: send metadata 'authorization: "
                    "Bearer <token>' (featstore clients: the token option or $FEATSTORE_TOKEN)");
}

/* At most max_calls calls at once: the rest are refused at once (see the top). */
static fs_status_t admit(call_t *c)
{
    fs_grpc_server_t *s = c->srv;
    pthread_mutex_lock(&s->calls_mu);
    int room = s->in_flight < s->max_calls;
    if (room) {
        s->in_flight++;
        c->server_deadline = now_s() + s->request_timeout_s;
        admitted_append(s, c);
    }
    pthread_mutex_unlock(&s->calls_mu);
    if (!room) {
        if (s->metrics) fs_metrics_grpc_refused(s->metrics, FS_GRPC_REFUSED_MAX_CALLS);
        return fs_error(&c->err, FS_ERR_RESOURCE, "the server is serving its maximum of %d gRPC calls at once "
                        "(serve --grpc-max-calls); retry later", s->max_calls);
    }
    c->admitted = 1;
    if (s->metrics) fs_metrics_grpc_in_flight(s->metrics, +1);
    return FS_OK;
}

/* A new call: checked, then its request asked for. */
static void call_begin(call_t *c)
{
    fs_grpc_server_t *s = c->srv;
    request_call(s); /* keep REQUESTS_POSTED asked for */
    c->t0 = now_s();
    c->peer = grpc_call_get_peer(c->call);
    c->peer_tracked = c->peer && peer_enter(&s->peers, c->peer) >= 0;
    c->method = find_method(c->details.method);
    fs_status_t st = authenticate(c);
    if (st == FS_OK) st = admit(c);
    if (st == FS_OK && c->method < 0) {
        char *path = grpc_slice_to_c_string(c->details.method);
        st = fs_error(&c->err, FS_ERR_UNSUPPORTED, "unknown method '%s' (featstore.v1.FeatStore has Info, Sample, "
                      "Gather, SampleGather, Stats, Split, HeteroSample, LinkSample and Stream)", path);
        gpr_free(path);
    }
    if (st != FS_OK) {
        finish_call(c, st);
        return;
    }
    grpc_op op;
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_RECV_MESSAGE;
    op.data.recv_message.recv_message = &c->request;
    c->state = CALL_RECEIVING;
    if (!start_batch(c, &op, 1))
        finish_call(c, fs_error(&c->err, FS_ERR_INTERNAL, "grpc: cannot start receiving the request"));
}

/* The request arrived (or the client gave up): compute, then answer or stream. */
static void call_received(call_t *c, int ok)
{
    fs_status_t st;
    int streaming = 0;
    if (!ok)
        st = fs_error(&c->err, FS_ERR_UNAVAILABLE, "the request never arrived (client cancelled)");
    else if (!c->request)
        st = fs_error(&c->err, FS_ERR_INVALID_ARGUMENT, "%s: the client sent no request message", methods[c->method].path);
    else
        st = methods[c->method].fn(c, &streaming);
    if (!streaming) finish_call(c, st);
}

static void call_step(call_t *c, worker_t *w, int ok)
{
    c->w = w;
    switch (c->state) {
    case CALL_REQUESTED:
        if (ok && c->call) call_begin(c);
        else call_free(c); /* the server is shutting down */
        break;
    case CALL_RECEIVING: call_received(c, ok); break;
    case CALL_STREAMING: call_sent(c, ok); break;
    case CALL_FINISHING: call_done(c); break;
    }
}

/* Asks gRPC for one more incoming call on the server's queue. */
static void request_call(fs_grpc_server_t *s)
{
    call_t *c = calloc(1, sizeof *c);
    if (!c) return; /* the calls already asked for keep the server serving */
    c->srv = s;
    c->state = CALL_REQUESTED;
    c->method = -1;
    grpc_call_details_init(&c->details);
    grpc_metadata_array_init(&c->request_md);
    pthread_mutex_lock(&s->calls_mu);
    int stopping = s->stopping;
    if (!stopping) s->live++;
    pthread_mutex_unlock(&s->calls_mu);
    if (stopping) {
        grpc_call_details_destroy(&c->details);
        grpc_metadata_array_destroy(&c->request_md);
        free(c);
        return;
    }
    if (grpc_server_request_call(s->server, &c->call, &c->details, &c->request_md, s->cq, s->cq, c) != GRPC_CALL_OK)
        call_free(c);
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    for (;;) {
        grpc_event ev = grpc_completion_queue_next(w->srv->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN) break;
        if (ev.type == GRPC_OP_COMPLETE) call_step(ev.tag, w, ev.success);
    }
    return NULL;
}

/* ---- files: certificates, keys, the token ----------------------------------------- */

/* The token file's first line, trailing blanks dropped, as "Bearer <token>".
 * A token travels in an HTTP/2 header: visible ASCII only. Messages name
 * the file and the offending byte's position, never the token. */
static fs_status_t load_token(const char *path, char **bearer, fs_error_t *err)
{
    *bearer = NULL;
    if (!path) return FS_OK;
    char *text;
    fs_status_t st = fs_wire_read_file(path, "token file", &text, err);
    if (st != FS_OK) return st;
    size_t n = strcspn(text, "\r\n");
    while (n > 0 && (text[n - 1] == ' ' || text[n - 1] == '\t')) n--;
    text[n] = '\0';
    if (n == 0 || n > MAX_TOKEN_BYTES)
        st = fs_error(err, FS_ERR_FORMAT, "token file '%s': the token (its first line) is %s", path,
                      n ? "longer than 4096 bytes" : "empty");
    for (size_t i = 0; st == FS_OK && i < n; i++)
        if ((unsigned char)text[i] < 0x21 || (unsigned char)text[i] > 0x7e)
            st = fs_error(err, FS_ERR_FORMAT, "token file '%s': character %zu of the token is not visible ASCII "
                          "(a token travels in an HTTP/2 header)", path, i + 1);
    if (st == FS_OK && !(*bearer = malloc(n + 8))) st = fs_error(err, FS_ERR_NOMEM, "out of memory");
    if (st == FS_OK) snprintf(*bearer, n + 8, "Bearer %s", text);
    fs_wire_free_secret(text);
    return st;
}

/* Plaintext, TLS, or mTLS (client certificates required and verified). */
static fs_status_t make_credentials(const fs_grpc_server_opts_t *o, grpc_server_credentials **out, fs_error_t *err)
{
    *out = NULL;
    if (!o->tls_cert && !o->tls_key) {
        if (o->tls_client_ca)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "grpc: a client CA (mTLS) needs TLS: give the server's "
                            "certificate and key too");
        *out = grpc_insecure_server_credentials_create();
        return FS_OK;
    }
    if (!o->tls_cert || !o->tls_key)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "grpc: TLS needs both a certificate and its private key (got "
                        "only the %s)", o->tls_cert ? "certificate" : "key");
    char *cert = NULL, *key = NULL, *ca = NULL;
    fs_status_t st = fs_wire_read_pem(o->tls_cert, "TLS certificate", "-----BEGIN CERTIFICATE-----", &cert, err);
    if (st == FS_OK) st = fs_wire_read_pem(o->tls_key, "TLS private key", "PRIVATE KEY-----", &key, err);
    if (st == FS_OK && o->tls_client_ca)
        st = fs_wire_read_pem(o->tls_client_ca, "TLS client CA", "-----BEGIN CERTIFICATE-----", &ca, err);
    if (st == FS_OK) {
        grpc_ssl_pem_key_cert_pair pair = {.private_key = key, .cert_chain = cert};
        *out = grpc_ssl_server_credentials_create_ex(ca, &pair, 1, ca ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                                                                        : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE, NULL);
        if (!*out) st = fs_error(err, FS_ERR_FORMAT, "grpc: TLS credentials from '%s' and '%s' were refused", o->tls_cert,
                                 o->tls_key);
    }
    free(cert);
    fs_wire_free_secret(key);
    free(ca);
    return st;
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
    /* the workers finish every call's last step; then no call object is left */
    pthread_mutex_lock(&s->calls_mu);
    while (s->live > 0) pthread_cond_wait(&s->calls_cv, &s->calls_mu);
    pthread_mutex_unlock(&s->calls_mu);
}

void fs_grpc_server_stop(fs_grpc_server_t *s)
{
    if (!s) return;
    if (s->server) {
        pthread_mutex_lock(&s->calls_mu);
        s->stopping = 1;
        pthread_mutex_unlock(&s->calls_mu);
        grpc_server_shutdown_and_notify(s->server, s->shutdown_cq, TAG_SHUTDOWN);
        wait_shutdown(s);
        grpc_server_destroy(s->server);
    }
    if (s->cq) grpc_completion_queue_shutdown(s->cq); /* the workers drain it and exit */
    for (int i = 0; i < s->num_workers; i++)
        if (s->workers[i].running) pthread_join(s->workers[i].thread, NULL);
    if (s->cq) drain_and_destroy(s->cq);
    reaper_stop(s);
    gatherers_stop(&s->gatherers);
    peers_stop(&s->peers);
    for (int i = 0; i < s->num_workers; i++) {
        fs_sampler_destroy(s->workers[i].sampler);
        fs_typed_sampler_destroy(s->workers[i].typed);
    }
    fs_pool_destroy(s->pool);
    drain_and_destroy(s->shutdown_cq);
    free(s->workers);
    fs_wire_free_secret(s->bearer);
    pthread_mutex_destroy(&s->calls_mu);
    pthread_cond_destroy(&s->calls_cv);
    if (s->grpc_initialised) grpc_shutdown();
    free(s);
}

/* Requests carry at most max_ids int64 ids plus a head; typed ones a time
 * beside each seed (link requests: src, dst, label and time per seed edge,
 * with two seeds per edge), so 2 * max_ids int64 values, and their head
 * names types, relations and tables. */
static int max_request_bytes(const fs_limits_t *l)
{
    double bytes = (double)l->max_ids * 16.0 + (double)(1 << 20);
    return bytes > (double)INT_MAX ? INT_MAX : (int)bytes;
}

static fs_status_t create_server(fs_grpc_server_t *s, const fs_grpc_server_opts_t *o, const fs_addr_t *addr,
                                 const fs_limits_t *limits, int *bound_port, fs_error_t *err)
{
    grpc_server_credentials *creds;
    fs_status_t st = make_credentials(o, &creds, err);
    if (st != FS_OK) return st;
    grpc_arg args[FS_WIRE_MAX_ARGS];
    grpc_channel_args chargs = {.num_args = fs_wire_channel_args(args, max_request_bytes(limits), 1), .args = args};
    s->server = grpc_server_create(&chargs, NULL);
    if (!s->server) {
        grpc_server_credentials_release(creds);
        return fs_error(err, FS_ERR_INTERNAL, "grpc_server_create failed");
    }
    s->cq = grpc_completion_queue_create_for_next(NULL);
    grpc_server_register_completion_queue(s->server, s->cq, NULL);
    s->shutdown_cq = grpc_completion_queue_create_for_next(NULL);
    grpc_server_register_completion_queue(s->server, s->shutdown_cq, NULL);
    if (st == FS_OK) st = fs_pool_create(s->num_workers, &s->pool, err);
    for (int i = 0; i < s->num_workers && st == FS_OK; i++) {
        s->workers[i].srv = s;
        st = fs_sampler_create(&s->workers[i].sampler, err);
        if (st == FS_OK) st = fs_typed_sampler_create(&s->workers[i].typed, err);
        if (st == FS_OK) {
            fs_sampler_set_pool(s->workers[i].sampler, s->pool);
            fs_typed_sampler_set_pool(s->workers[i].typed, s->pool);
        }
    }
    /* gRPC binds and listens here; it accepts from grpc_server_start on */
    int port = st == FS_OK ? grpc_server_add_http2_port(s->server, o->listen, creds) : 0;
    grpc_server_credentials_release(creds);
    if (st != FS_OK) return st;
    if (port <= 0 && (st = fs_listen_probe("gRPC", addr, err)) != FS_OK) return st; /* it says why */
    if (port <= 0)
        return fs_error(err, FS_ERR_IO, "grpc: cannot listen on '%s': %s", o->listen,
                        o->tls_cert ? "the port is free, so the TLS certificate and key do not belong together (or "
                                      "gRPC refused them: its log line above says why)"
                                    : "the port is free; gRPC's log line above says why");
    if (bound_port) *bound_port = port;
    return FS_OK;
}

void fs_grpc_server_defaults(fs_grpc_server_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->threads = FS_GRPC_DEFAULT_THREADS;
    o->max_calls = FS_GRPC_DEFAULT_MAX_CALLS;
    o->request_timeout_ms = FS_GRPC_DEFAULT_REQUEST_TIMEOUT_MS;
}

fs_status_t fs_grpc_server_listen(const fs_grpc_server_opts_t *o, const fs_limits_t *limits, fs_grpc_server_t **out,
                                  int *bound_port, fs_error_t *err)
{
    *out = NULL;
    if (!o || !o->listen || !limits) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "grpc: no listen address or limits");
    fs_addr_t addr; /* HOST:PORT or [IPv6]:PORT, nothing else (kernels/fs_addr.h), before anything starts */
    fs_status_t parsed = fs_addr_listen("--listen", o->listen, &addr, err);
    if (parsed != FS_OK) return parsed;
    int threads = o->threads > 0 ? o->threads : FS_GRPC_DEFAULT_THREADS;
    fs_grpc_server_t *s = calloc(1, sizeof *s);
    if (s) s->workers = calloc((size_t)threads, sizeof *s->workers);
    if (!s || !s->workers) {
        if (s) free(s);
        return fs_error(err, FS_ERR_NOMEM, "out of memory");
    }
    s->num_workers = threads;
    s->max_calls = o->max_calls > 0 ? o->max_calls : FS_GRPC_DEFAULT_MAX_CALLS;
    s->request_timeout_s = (o->request_timeout_ms > 0 ? o->request_timeout_ms : FS_GRPC_DEFAULT_REQUEST_TIMEOUT_MS) * 1e-3;
    pthread_mutex_init(&s->calls_mu, NULL);
    pthread_cond_init(&s->calls_cv, NULL);
    fs_grpc_log_to_featstore();
    grpc_init();
    s->grpc_initialised = 1;
    fs_status_t st = load_token(o->token_file, &s->bearer, err);
    if (st == FS_OK) st = gatherers_start(&s->gatherers, threads, err);
    if (st == FS_OK) st = reaper_start(s, err);
    if (st == FS_OK) st = create_server(s, o, &addr, limits, bound_port, err);
    if (st != FS_OK) {
        fs_grpc_server_stop(s); /* a server never started shuts down at once */
        return st;
    }
    *out = s;
    return FS_OK;
}

fs_status_t fs_grpc_server_serve(fs_grpc_server_t *s, fs_engine_t *engine, fs_metrics_t *metrics, fs_error_t *err)
{
    if (!engine) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "grpc: no engine");
    s->engine = engine;
    s->metrics = metrics;
    fs_status_t st = peers_start(&s->peers, metrics, err);
    if (st != FS_OK) return st;
    grpc_server_start(s->server);
    for (int i = 0; i < s->num_workers; i++) {
        if (pthread_create(&s->workers[i].thread, NULL, worker_main, &s->workers[i]) != 0)
            return fs_error(err, FS_ERR_NOMEM, "grpc: cannot start worker thread %d", i);
        s->workers[i].running = 1;
    }
    for (int i = 0; i < REQUESTS_POSTED; i++) request_call(s);
    return FS_OK;
}

fs_status_t fs_grpc_server_start_opts(const fs_grpc_server_opts_t *o, fs_engine_t *engine, fs_metrics_t *metrics,
                                      fs_grpc_server_t **out, int *bound_port, fs_error_t *err)
{
    if (!engine) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "grpc: no listen address or engine");
    fs_status_t st = fs_grpc_server_listen(o, fs_engine_limits(engine), out, bound_port, err);
    if (st == FS_OK && (st = fs_grpc_server_serve(*out, engine, metrics, err)) != FS_OK) {
        fs_grpc_server_stop(*out);
        *out = NULL;
    }
    return st;
}

fs_status_t fs_grpc_server_start(const char *listen_addr, fs_engine_t *engine, fs_metrics_t *metrics, int threads,
                                 fs_grpc_server_t **out, int *bound_port, fs_error_t *err)
{
    fs_grpc_server_opts_t o;
    fs_grpc_server_defaults(&o);
    o.listen = listen_addr, o.threads = threads;
    return fs_grpc_server_start_opts(&o, engine, metrics, out, bound_port, err);
}

void fs_grpc_server_idle_timeout(fs_grpc_server_t *s, double seconds)
{
    pthread_mutex_lock(&s->peers.mu);
    s->peers.idle_s = seconds;
    pthread_mutex_unlock(&s->peers.mu);
}

int fs_grpc_listen_is_loopback(const char *listen)
{
    if (!listen) return 0;
    if (strncmp(listen, "unix:", 5) == 0 || strncmp(listen, "unix-abstract:", 14) == 0) return 1;
    char host[256];
    const char *start = listen, *end;
    if (listen[0] == '[') {
        start = listen + 1;
        end = strchr(start, ']');
    } else {
        end = strrchr(listen, ':');
    }
    if (!end || end - start >= (ptrdiff_t)sizeof host) return 0;
    snprintf(host, sizeof host, "%.*s", (int)(end - start), start);
    if (strcasecmp(host, "localhost") == 0) return 1;
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, host, &a4) == 1) return ntohl(a4.s_addr) >> 24 == 127;
    if (inet_pton(AF_INET6, host, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6) || (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
    return 0;
}
