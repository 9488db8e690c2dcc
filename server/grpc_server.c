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
 * completion touches it. What a method computes is grpc_methods.c's; how a
 * streamed answer's chunks are made ahead and sent, grpc_stream.c's.
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
 * deadline passes (its deadline filter, even when the client is frozen; test_grpc_isolation
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
#include "grpc_internal.h"

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
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "fs_addr.h"
#include "grpc_log.h"
#include "listen.h"

#define SHUTDOWN_GRACE_MS 5000
#define FS_GRPC_IDLE_S 30.0
#define MAX_PEERS 4096
#define REQUESTS_POSTED 8          /* calls asked of gRPC ahead, so new calls never wait for a worker */
#define MAX_TOKEN_BYTES 4096
#define TAG_SHUTDOWN ((void *)3)

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
        p->peer[i].last = fs_grpc_now();
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
        peers_prune(p, fs_grpc_now());
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
int fs_grpc_start_batch(call_t *c, grpc_op *ops, size_t n)
{
    return grpc_call_start_batch(c->call, ops, n, c, NULL) == GRPC_CALL_OK;
}

void fs_grpc_op_initial_md(call_t *c, grpc_op *op)
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

static int past_server_deadline(const call_t *c) { return c->admitted && fs_grpc_now() > c->server_deadline; }

int fs_grpc_past_deadline(const call_t *c) { return past_client_deadline(c) || past_server_deadline(c); }

static void count_timeout(call_t *c)
{
    if (c->srv->metrics && !atomic_exchange(&c->timeout_counted, 1)) fs_metrics_grpc_deadline_exceeded(c->srv->metrics);
}

fs_status_t fs_grpc_check_deadline(call_t *c, const char *when)
{
    if (past_client_deadline(c)) return fs_error(&c->err, FS_ERR_TIMEOUT, "the call's deadline passed %s", when);
    if (past_server_deadline(c))
        return fs_error(&c->err, FS_ERR_TIMEOUT, "the server's request timeout of %.0f ms passed %s (serve "
                        "--request-timeout)", c->srv->request_timeout_s * 1e3, when);
    return FS_OK;
}

static void call_done(call_t *c);

/* Sends the final status (with the unary response, if any) and takes the
 * client's close; the call is freed when that batch completes (whether it
 * succeeds or not: failure only means the client is gone). The call is
 * counted first, so a client that has its answer also sees it counted (the
 * final write is not in the latency). */
void fs_grpc_finish_call(call_t *c, fs_status_t st)
{
    fs_metrics_t *metrics = c->srv->metrics;
    if (st == FS_ERR_TIMEOUT) count_timeout(c);
    if (metrics && c->admitted && c->method >= 0)
        fs_metrics_request(metrics, fs_grpc_methods[c->method].method, FS_TRANSPORT_GRPC, st, fs_grpc_now() - c->t0);
    grpc_op ops[4];
    size_t n = 0;
    if (!c->sent_initial_md) fs_grpc_op_initial_md(c, &ops[n++]);
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
    int started = fs_grpc_start_batch(c, ops, n);
    grpc_slice_unref(details);
    if (!started) call_done(c);
}

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
void fs_grpc_renew_deadline(call_t *c)
{
    fs_grpc_server_t *s = c->srv;
    pthread_mutex_lock(&s->calls_mu);
    if (!c->reaped) {
        c->server_deadline = fs_grpc_now() + s->request_timeout_s;
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

/* Sleeps on a condition of its own, on fs_grpc_now's clock, so that calls coming
 * and going (calls_cv) never wake it: it wakes when a call falls due. */
static void *reaper_main(void *arg)
{
    fs_grpc_server_t *s = arg;
    pthread_mutex_lock(&s->calls_mu);
    while (!s->reaper_quit) {
        /* a call admitted while it sleeps falls due a whole timeout from now, at the earliest */
        double next = reap_due(s, fs_grpc_now());
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
    fs_grpc_image_unref(c->image);
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
    fs_grpc_ahead_take_back(&s->gatherers, c); /* a chunk no one will send: dropped */
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
        c->server_deadline = fs_grpc_now() + s->request_timeout_s;
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
    c->t0 = fs_grpc_now();
    c->peer = grpc_call_get_peer(c->call);
    c->peer_tracked = c->peer && peer_enter(&s->peers, c->peer) >= 0;
    c->method = fs_grpc_find_method(c->details.method);
    fs_status_t st = authenticate(c);
    if (st == FS_OK) st = admit(c);
    if (st == FS_OK && c->method < 0) {
        char *path = grpc_slice_to_c_string(c->details.method);
        st = fs_error(&c->err, FS_ERR_UNSUPPORTED, "unknown method '%s' (featstore.v1.FeatStore has Info, Sample, "
                      "Gather, SampleGather, Stats, Split, HeteroSample, LinkSample, Stream, ShardPicks, ShardRows, "
                      "ShardFile and ShardEdges)", path);
        gpr_free(path);
    } else if (st == FS_OK && fs_grpc_methods[c->method].shard != 2 && (!s->engine) != fs_grpc_methods[c->method].shard) {
        st = fs_error(&c->err, FS_ERR_UNSUPPORTED, s->engine
                      ? "%s: this server serves a whole dataset, not a shard of a partitioned one"
                      : "%s: this server is a shard of a partitioned dataset: it answers ShardPicks, ShardRows, "
                        "ShardFile, ShardEdges and Stats only (trainers reach the shards through owner routing)",
                      fs_grpc_methods[c->method].path);
    }
    if (st != FS_OK) {
        fs_grpc_finish_call(c, st);
        return;
    }
    grpc_op op;
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_RECV_MESSAGE;
    op.data.recv_message.recv_message = &c->request;
    c->state = CALL_RECEIVING;
    if (!fs_grpc_start_batch(c, &op, 1))
        fs_grpc_finish_call(c, fs_error(&c->err, FS_ERR_INTERNAL, "grpc: cannot start receiving the request"));
}

/* The request arrived (or the client gave up): compute, then answer or stream. */
static void call_received(call_t *c, int ok)
{
    fs_status_t st;
    int streaming = 0;
    if (!ok)
        st = fs_error(&c->err, FS_ERR_UNAVAILABLE, "the request never arrived (client cancelled)");
    else if (!c->request)
        st = fs_error(&c->err, FS_ERR_INVALID_ARGUMENT, "%s: the client sent no request message",
                      fs_grpc_methods[c->method].path);
    else
        st = fs_grpc_methods[c->method].fn(c, &streaming);
    if (!streaming) fs_grpc_finish_call(c, st);
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
    case CALL_STREAMING: fs_grpc_call_sent(c, ok); break;
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
    fs_grpc_gatherers_stop(&s->gatherers);
    peers_stop(&s->peers);
    for (int i = 0; i < s->num_workers; i++) {
        fs_sampler_destroy(s->workers[i].sampler);
        fs_typed_sampler_destroy(s->workers[i].typed);
        fs_shard_ws_destroy(s->workers[i].shard_ws);
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
    s->limits = *limits;
    if (getrandom(&s->instance, sizeof s->instance, 0) != sizeof s->instance)
        s->instance = (uint64_t)getpid() * 0x9e3779b97f4a7c15ULL ^ (uint64_t)time(NULL);
    s->instance |= 1; /* 0 means "no instance" on the wire */
    s->max_calls = o->max_calls > 0 ? o->max_calls : FS_GRPC_DEFAULT_MAX_CALLS;
    s->request_timeout_s = (o->request_timeout_ms > 0 ? o->request_timeout_ms : FS_GRPC_DEFAULT_REQUEST_TIMEOUT_MS) * 1e-3;
    pthread_mutex_init(&s->calls_mu, NULL);
    pthread_cond_init(&s->calls_cv, NULL);
    fs_grpc_log_to_featstore();
    grpc_init();
    s->grpc_initialised = 1;
    fs_status_t st = load_token(o->token_file, &s->bearer, err);
    if (st == FS_OK) st = fs_grpc_gatherers_start(&s->gatherers, threads, err);
    if (st == FS_OK) st = reaper_start(s, err);
    if (st == FS_OK) st = create_server(s, o, &addr, limits, bound_port, err);
    if (st != FS_OK) {
        fs_grpc_server_stop(s); /* a server never started shuts down at once */
        return st;
    }
    *out = s;
    return FS_OK;
}

/* Starts answering: the peers' janitor, gRPC, the workers, the first requests. */
static fs_status_t start_answering(fs_grpc_server_t *s, fs_metrics_t *metrics, fs_error_t *err)
{
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

fs_status_t fs_grpc_server_serve(fs_grpc_server_t *s, fs_engine_t *engine, fs_metrics_t *metrics, fs_error_t *err)
{
    if (!engine) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "grpc: no engine");
    s->engine = engine;
    return start_answering(s, metrics, err);
}

void fs_grpc_server_set_map_revision(fs_grpc_server_t *s, int64_t revision)
{
    __atomic_store_n(&s->map_revision, revision, __ATOMIC_RELAXED);
}

fs_status_t fs_grpc_server_serve_shard(fs_grpc_server_t *s, fs_shard_live_t *shard, fs_shard_metrics_t *metrics,
                                       fs_error_t *err)
{
    if (!shard) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "grpc: no shard");
    s->shard = shard, s->shard_metrics = metrics;
    return start_answering(s, NULL, err);
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
