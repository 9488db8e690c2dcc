/* bench_grpc.c — feature gather over gRPC loopback: the client library's
 * fs_gather over grpc:// against an in-process featstore server, compared in
 * the same run with raw gRPC streaming of the same bytes (a minimal streaming
 * method defined here that sends preallocated buffers of the same message
 * size, zero-copy, read by a bare receive loop). The ratio says what the
 * featstore path (request decode, id check, random-row gather, chunk framing,
 * decode into one contiguous buffer) costs over gRPC's own transfer.
 *
 *   bench_grpc [--dataset DIR] [--scale 18] [--dim 128] [--ids 262144] [--reps 10] [--threads 2]
 *              [--iso-calls 2000] [--iso-rounds 10] [--iso-ids 4096] [--stalled 4]
 *
 * Without --dataset it generates (once, cached under /tmp/featstore-bench)
 * an R-MAT graph of 2^scale nodes with a float32 table of `dim` columns.
 * Prints `RESULT bench=grpc_gather ... gbps=... raw_grpc_gbps=...
 * ratio_vs_raw_grpc=...` (best of reps each, runs interleaved; rep 0 is a
 * warm-up), and on stderr each rep's time, busy cores and page faults. Both
 * ends share 2 cores here, so the ratio measures CPU spent per byte: the
 * featstore path adds the random-row gather and one copy into the batch.
 *
 * Isolation: a trainer's fs_gather of --iso-ids random rows, --iso-calls
 * times, alone and then while --stalled other clients (each its own TCP
 * connection, gRPC's default receive window) have each started a Gather of
 * 1M rows and never read a byte of it. --iso-rounds rounds of each,
 * interleaved (the stalled calls are started afresh each round, and timing
 * starts once they are parked: the server's gathered rows stop growing; they
 * are cancelled after the round), the latencies pooled per condition: with
 * 2000 calls, p99 is the 20th slowest, not one scheduler hiccup on a shared
 * VM. Prints `RESULT bench=grpc_isolation ...
 * p99_solo_ms=... p99_loaded_ms=... ratio_p99_vs_solo=...` (p50 alike). With
 * at least as many stalled clients as server workers, a server whose workers
 * wait on their calls' sends would never answer the trainer at all. */
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_common.h"
#include "bench_util.h"
#include "engine.h"
#include "featstore/client.h"
#include "fs_rng.h"
#include "fs_wire.h"
#include "gen.h"
#include "grpc_server.h"
#include "metrics.h"

#define RAW_METHOD "/featstore.bench.Raw/Stream"

/* ---- the dataset -------------------------------------------------------------- */


/* ---- the raw baseline: a server that streams preallocated buffers ---------------- */

typedef struct {
    grpc_server *server;
    grpc_completion_queue *cq, *shutdown_cq;
    pthread_t thread;
    const char *payload;
    size_t chunk_bytes, total_bytes;
} raw_server_t;

static int raw_wait(grpc_completion_queue *cq)
{
    grpc_event ev = grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    return ev.type == GRPC_OP_COMPLETE && ev.success;
}

static void op_set(grpc_op *op, grpc_op_type t)
{
    memset(op, 0, sizeof *op);
    op->op = t;
}

/* Streams total_bytes in chunk_bytes messages that reference the payload. */
static void raw_serve(raw_server_t *r, grpc_call *call)
{
    grpc_byte_buffer *req = NULL;
    grpc_op ops[3];
    op_set(&ops[0], GRPC_OP_RECV_MESSAGE);
    ops[0].data.recv_message.recv_message = &req;
    op_set(&ops[1], GRPC_OP_SEND_INITIAL_METADATA);
    int ok = grpc_call_start_batch(call, ops, 2, r, NULL) == GRPC_CALL_OK && raw_wait(r->cq);
    if (req) grpc_byte_buffer_destroy(req);
    for (size_t sent = 0; ok && sent < r->total_bytes; sent += r->chunk_bytes) {
        size_t len = r->total_bytes - sent < r->chunk_bytes ? r->total_bytes - sent : r->chunk_bytes;
        grpc_slice s = grpc_slice_from_static_buffer(r->payload, len);
        grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&s, 1);
        op_set(&ops[0], GRPC_OP_SEND_MESSAGE);
        ops[0].data.send_message.send_message = bb;
        ok = grpc_call_start_batch(call, ops, 1, r, NULL) == GRPC_CALL_OK && raw_wait(r->cq);
        grpc_byte_buffer_destroy(bb);
    }
    int cancelled;
    op_set(&ops[0], GRPC_OP_SEND_STATUS_FROM_SERVER);
    ops[0].data.send_status_from_server.status = GRPC_STATUS_OK;
    op_set(&ops[1], GRPC_OP_RECV_CLOSE_ON_SERVER);
    ops[1].data.recv_close_on_server.cancelled = &cancelled;
    if (grpc_call_start_batch(call, ops, 2, r, NULL) == GRPC_CALL_OK) raw_wait(r->cq);
}

static void *raw_server_main(void *p)
{
    raw_server_t *r = p;
    for (;;) {
        grpc_call *call = NULL;
        grpc_call_details details;
        grpc_metadata_array md;
        grpc_call_details_init(&details);
        grpc_metadata_array_init(&md);
        int ok = grpc_server_request_call(r->server, &call, &details, &md, r->cq, r->cq, r) == GRPC_CALL_OK &&
                 raw_wait(r->cq) && call;
        if (ok) raw_serve(r, call);
        if (call) grpc_call_unref(call);
        grpc_call_details_destroy(&details);
        grpc_metadata_array_destroy(&md);
        if (!ok) return NULL;
    }
}

static int raw_server_start(raw_server_t *r)
{
    grpc_arg args[FS_WIRE_MAX_ARGS];
    grpc_channel_args ca = {.num_args = fs_wire_channel_args(args, -1, 1), .args = args};
    r->server = grpc_server_create(&ca, NULL);
    r->cq = grpc_completion_queue_create_for_next(NULL);
    grpc_server_register_completion_queue(r->server, r->cq, NULL);
    r->shutdown_cq = grpc_completion_queue_create_for_next(NULL);
    grpc_server_register_completion_queue(r->server, r->shutdown_cq, NULL);
    grpc_server_credentials *creds = grpc_insecure_server_credentials_create();
    int port = grpc_server_add_http2_port(r->server, "127.0.0.1:0", creds);
    grpc_server_credentials_release(creds);
    grpc_server_start(r->server);
    pthread_create(&r->thread, NULL, raw_server_main, r);
    return port;
}

static void drain(grpc_completion_queue *cq)
{
    grpc_completion_queue_shutdown(cq);
    while (grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type != GRPC_QUEUE_SHUTDOWN) {
    }
    grpc_completion_queue_destroy(cq);
}

static void raw_server_stop(raw_server_t *r)
{
    grpc_server_shutdown_and_notify(r->server, r->shutdown_cq, r); /* fails the pending request: the thread exits */
    grpc_completion_queue_next(r->shutdown_cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    pthread_join(r->thread, NULL);
    grpc_server_destroy(r->server);
    drain(r->cq);
    drain(r->shutdown_cq);
}

/* The raw client: one call, every message received and its slices walked. */
static size_t raw_fetch(grpc_channel *ch, grpc_completion_queue *cq)
{
    grpc_call *call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
                                               grpc_slice_from_static_string(RAW_METHOD), NULL,
                                               gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    grpc_slice s = grpc_slice_from_static_string("go");
    grpc_byte_buffer *req = grpc_raw_byte_buffer_create(&s, 1), *msg = NULL;
    grpc_metadata_array md0, md1;
    grpc_metadata_array_init(&md0);
    grpc_metadata_array_init(&md1);
    grpc_op ops[4];
    op_set(&ops[0], GRPC_OP_SEND_INITIAL_METADATA);
    op_set(&ops[1], GRPC_OP_SEND_MESSAGE);
    ops[1].data.send_message.send_message = req;
    op_set(&ops[2], GRPC_OP_SEND_CLOSE_FROM_CLIENT);
    op_set(&ops[3], GRPC_OP_RECV_INITIAL_METADATA);
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &md0;
    grpc_call_start_batch(call, ops, 4, NULL, NULL);
    raw_wait(cq);
    size_t bytes = 0;
    for (;;) {
        op_set(&ops[0], GRPC_OP_RECV_MESSAGE);
        ops[0].data.recv_message.recv_message = &msg;
        msg = NULL;
        if (grpc_call_start_batch(call, ops, 1, NULL, NULL) != GRPC_CALL_OK || !raw_wait(cq) || !msg) break;
        grpc_byte_buffer_reader rd;
        grpc_slice sl;
        grpc_byte_buffer_reader_init(&rd, msg);
        while (grpc_byte_buffer_reader_next(&rd, &sl)) {
            bytes += GRPC_SLICE_LENGTH(sl);
            grpc_slice_unref(sl);
        }
        grpc_byte_buffer_reader_destroy(&rd);
        grpc_byte_buffer_destroy(msg);
    }
    grpc_status_code code;
    grpc_slice details;
    op_set(&ops[0], GRPC_OP_RECV_STATUS_ON_CLIENT);
    ops[0].data.recv_status_on_client.trailing_metadata = &md1;
    ops[0].data.recv_status_on_client.status = &code;
    ops[0].data.recv_status_on_client.status_details = &details;
    grpc_call_start_batch(call, ops, 1, NULL, NULL);
    raw_wait(cq);
    grpc_slice_unref(details);
    grpc_metadata_array_destroy(&md0);
    grpc_metadata_array_destroy(&md1);
    grpc_byte_buffer_destroy(req);
    grpc_call_unref(call);
    return code == GRPC_STATUS_OK ? bytes : 0;
}

/* ---- isolation: clients that never read ------------------------------------------- */

/* A client that asks for a big Gather and never reads the answer. */
typedef struct {
    grpc_channel *ch;
    grpc_completion_queue *cq;
    grpc_call *call;
    grpc_byte_buffer *req;
} stalled_t;

static void stalled_open(stalled_t *s, const char *target, const char *table, const int64_t *ids, int64_t n)
{
    grpc_arg args[2];
    args[0].type = args[1].type = GRPC_ARG_INTEGER;
    args[0].key = GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, args[0].value.integer = 1; /* a connection of its own */
    args[1].key = GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, args[1].value.integer = -1;
    grpc_channel_args ca = {.num_args = 2, .args = args};
    grpc_channel_credentials *creds = grpc_insecure_credentials_create();
    s->ch = grpc_channel_create(target, creds, &ca);
    grpc_channel_credentials_release(creds);
    s->cq = grpc_completion_queue_create_for_next(NULL);
    s->call = grpc_channel_create_call(s->ch, NULL, GRPC_PROPAGATE_DEFAULTS, s->cq,
                                       grpc_slice_from_static_string(FS_WIRE_METHOD_GATHER), NULL,
                                       gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    featstore_v1_GatherRequest req = featstore_v1_GatherRequest_init_zero;
    req.api_version = FS_WIRE_API_VERSION;
    snprintf(req.table, sizeof req.table, "%s", table);
    fs_wire_bytes_t bytes;
    fs_wire_set_bytes(&req.ids, &bytes, ids, (size_t)n * sizeof *ids);
    fs_error_t err = {0};
    s->req = fs_wire_encode(featstore_v1_GatherRequest_fields, &req, &err);
    grpc_op ops[3];
    op_set(&ops[0], GRPC_OP_SEND_INITIAL_METADATA);
    op_set(&ops[1], GRPC_OP_SEND_MESSAGE);
    ops[1].data.send_message.send_message = s->req;
    op_set(&ops[2], GRPC_OP_SEND_CLOSE_FROM_CLIENT);
    if (!s->req || grpc_call_start_batch(s->call, ops, 3, s, NULL) != GRPC_CALL_OK || !raw_wait(s->cq)) {
        fprintf(stderr, "bench_grpc: a stalled client could not send its request %s\n", err.msg);
        exit(1);
    }
}

static void stalled_close(stalled_t *s)
{
    grpc_call_cancel(s->call, NULL);
    grpc_call_unref(s->call);
    grpc_byte_buffer_destroy(s->req);
    grpc_channel_destroy(s->ch);
    drain(s->cq);
}

/* The sum of a metric's samples (every label set); -1 when absent. */
static double metric_sum(fs_metrics_t *m, const char *name)
{
    char *text = fs_metrics_render(m), pat[128];
    snprintf(pat, sizeof pat, "\n%s", name);
    double sum = -1;
    for (const char *p = text ? strstr(text, pat) : NULL; p; p = strstr(p + 1, pat)) {
        const char *v = strchr(p + 1, ' ');
        if (v && (p[strlen(pat)] == ' ' || p[strlen(pat)] == '{')) sum = (sum < 0 ? 0 : sum) + strtod(v + 1, NULL);
    }
    free(text);
    return sum;
}

static long long grpc_in_flight(fs_metrics_t *m) { return (long long)metric_sum(m, "featstore_grpc_calls_in_flight"); }

/* Waits (5 s at most) until the stalled calls are parked: the server's
 * gathered rows stop growing for 100 ms. What is measured is then the steady
 * state beside clients that never read, not the moment they arrive. */
static void wait_parked(fs_metrics_t *m)
{
    double last = metric_sum(m, "featstore_feature_rows_read_total");
    for (int still = 0, i = 0; still < 5 && i < 250; i++) {
        usleep(20000);
        double now = metric_sum(m, "featstore_feature_rows_read_total");
        still = now == last ? still + 1 : 0;
        last = now;
    }
}

/* One round of `calls` timed fs_gathers, latencies appended to lat[*n]. */
static void timed_gathers(fs_client_t *c, const fs_table_t *t, const int64_t *ids, int64_t n, int calls, double *lat,
                          int *count)
{
    for (int k = 0; k < calls; k++) {
        fs_batch_t *b;
        double t0 = bench_now();
        if (fs_gather(c, ids + (size_t)k % 64 * (size_t)n, n, t->name, FS_DTYPE_INVALID, &b) != FS_OK) {
            fprintf(stderr, "bench_grpc: isolation: %s\n", fs_client_errstr(c));
            exit(1);
        }
        lat[(*count)++] = bench_now() - t0;
        fs_batch_free(b);
    }
}

static void isolation(int argc, char **argv, int port, fs_metrics_t *metrics, const fs_table_t *t, int threads)
{
    int calls = (int)bench_arg(argc, argv, "--iso-calls", 2000), stalled_n = (int)bench_arg(argc, argv, "--stalled", 4);
    int64_t n = bench_arg(argc, argv, "--iso-ids", 4096), big = 1 << 20;
    int rounds = (int)bench_arg(argc, argv, "--iso-rounds", 10), per = (calls + rounds - 1) / rounds;
    int64_t *ids = malloc((size_t)(64 * n > big ? 64 * n : big) * sizeof *ids);
    fs_rng_t rng = fs_rng_make(11, 1);
    for (int64_t i = 0; i < (64 * n > big ? 64 * n : big); i++) ids[i] = (int64_t)fs_rng_below(&rng, (uint64_t)t->rows);
    char uri[64], target[64];
    snprintf(uri, sizeof uri, "grpc://127.0.0.1:%d", port);
    snprintf(target, sizeof target, "127.0.0.1:%d", port);
    fs_connect_opts_t o = FS_CONNECT_OPTS_INIT;
    o.timeout_ms = 60000; /* a blocked server fails the run instead of hanging it */
    fs_client_t *c;
    if (fs_connect(uri, &o, &c) != FS_OK) {
        fprintf(stderr, "bench_grpc: %s\n", fs_client_errstr(c));
        exit(1);
    }
    double *solo = malloc((size_t)per * rounds * sizeof *solo), *loaded = malloc((size_t)per * rounds * sizeof *loaded);
    int ns = 0, nl = 0;
    stalled_t *st = calloc((size_t)stalled_n, sizeof *st);
    timed_gathers(c, t, ids, n, 10, solo, &ns); /* warm-up, not kept */
    ns = 0;
    fprintf(stderr, "grpc_isolation: %d x fs_gather of %lld rows (%.1f MB) alone and beside %d clients that never read "
            "(each asked for %lld rows), %d server workers, %d rounds\n", per * rounds, (long long)n,
            (double)n * (double)t->row_bytes / 1e6, stalled_n, (long long)big, threads, rounds);
    for (int r = 0; r < rounds; r++) {
        double t0 = bench_now();
        timed_gathers(c, t, ids, n, per, solo, &ns);
        double t1 = bench_now();
        for (int i = 0; i < stalled_n; i++) stalled_open(&st[i], target, t->name, ids, big);
        long long in_flight = grpc_in_flight(metrics);
        for (int i = 0; i < 500 && in_flight < stalled_n; i++, in_flight = grpc_in_flight(metrics)) usleep(10000);
        wait_parked(metrics);
        double t2 = bench_now();
        timed_gathers(c, t, ids, n, per, loaded, &nl);
        double t3 = bench_now();
        long long parked = grpc_in_flight(metrics);
        for (int i = 0; i < stalled_n; i++) stalled_close(&st[i]);
        fprintf(stderr, "  round %d: alone %.3f s, beside the stalled clients %.3f s (then %lld gRPC calls in flight "
                "on the server: the stalled ones stay parked)\n", r, t1 - t0, t3 - t2, parked);
    }
    double p50s = bench_percentile(solo, ns, 0.50), p99s = bench_percentile(solo, ns, 0.99);
    double p50l = bench_percentile(loaded, nl, 0.50), p99l = bench_percentile(loaded, nl, 0.99);
    printf("RESULT bench=grpc_isolation calls=%d rows=%lld stalled_clients=%d server_threads=%d p50_solo_ms=%.2f "
           "p50_loaded_ms=%.2f ratio_p50_vs_solo=%.2f p99_solo_ms=%.2f p99_loaded_ms=%.2f ratio_p99_vs_solo=%.2f\n",
           ns, (long long)n, stalled_n, threads, p50s * 1e3, p50l * 1e3, p50l / p50s, p99s * 1e3, p99l * 1e3,
           p99l / p99s);
    fflush(stdout);
    fs_close(c);
    free(st), free(solo), free(loaded), free(ids);
}

static long faults_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

static double cpu_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec * 1e-6;
}

/* ---- the benchmark ------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    int scale = (int)bench_arg(argc, argv, "--scale", 18), dim = (int)bench_arg(argc, argv, "--dim", 128);
    int64_t n = bench_arg(argc, argv, "--ids", 256 * 1024);
    int reps = (int)bench_arg(argc, argv, "--reps", 10), threads = (int)bench_arg(argc, argv, "--threads", 2);
    const char *dir = bench_dataset_rmat(argc, argv, scale, 4, dim, 0);
    fs_error_t err = {0};
    fs_dataset_t *ds;
    fs_store_t *store;
    fs_engine_t *engine;
    fs_grpc_server_t *srv;
    fs_metrics_t *metrics = NULL;
    int port;
    if (fs_dataset_open(dir, 0, 1, &ds, &err) != FS_OK || fs_store_create(ds, &store, &err) != FS_OK ||
        fs_engine_create(ds, store, NULL, &engine, &err) != FS_OK || !(metrics = fs_metrics_create(ds, store)) ||
        fs_grpc_server_start("127.0.0.1:0", engine, metrics, threads, &srv, &port, &err) != FS_OK) {
        fprintf(stderr, "bench_grpc: %s\n", err.msg);
        return 1;
    }
    const fs_table_t *t = &ds->tables[0];
    size_t row_bytes = t->row_bytes, total = (size_t)n * row_bytes;
    size_t chunk = (FS_WIRE_CHUNK_BYTES / row_bytes ? FS_WIRE_CHUNK_BYTES / row_bytes : 1) * row_bytes;
    int64_t *ids = malloc((size_t)n * sizeof *ids);
    fs_rng_t rng = fs_rng_make(7, 1);
    for (int64_t i = 0; i < n; i++) ids[i] = (int64_t)fs_rng_below(&rng, (uint64_t)t->rows);

    char uri[64];
    snprintf(uri, sizeof uri, "grpc://127.0.0.1:%d", port);
    fs_client_t *c;
    if (fs_connect(uri, NULL, &c) != FS_OK) {
        fprintf(stderr, "bench_grpc: %s\n", fs_client_errstr(c));
        return 1;
    }
    /* the raw baseline: same process, same channel settings, same message size */
    grpc_init();
    char *payload = malloc(chunk);
    memset(payload, 1, chunk);
    raw_server_t raw = {.payload = payload, .chunk_bytes = chunk, .total_bytes = total};
    char target[64];
    snprintf(target, sizeof target, "127.0.0.1:%d", raw_server_start(&raw));
    grpc_arg args[FS_WIRE_MAX_ARGS];
    grpc_channel_args ca = {.num_args = fs_wire_channel_args(args, -1, 0), .args = args};
    grpc_channel_credentials *creds = grpc_insecure_credentials_create();
    grpc_channel *ch = grpc_channel_create(target, creds, &ca);
    grpc_channel_credentials_release(creds);
    grpc_completion_queue *cq = grpc_completion_queue_create_for_next(NULL);

    fprintf(stderr, "grpc_gather: %s, table %lld x %lld %s, %lld random ids (%.1f MB), %zu-byte messages, "
            "best of %d\n", dir, (long long)t->rows, (long long)t->dim, fs_dtype_name(t->dtype), (long long)n,
            (double)total / 1e6, chunk, reps);
    double ours = 1e30, base = 1e30;
    for (int k = 0; k <= reps; k++) { /* k = 0 warms both paths up */
        fs_batch_t *b;
        long f0 = faults_now();
        double c0 = cpu_now(), t0 = bench_now();
        if (fs_gather(c, ids, n, t->name, FS_DTYPE_INVALID, &b) != FS_OK) {
            fprintf(stderr, "bench_grpc: gather: %s\n", fs_client_errstr(c));
            return 1;
        }
        double t1 = bench_now(), c1 = cpu_now();
        long f1 = faults_now();
        if (memcmp((const char *)b->features + (size_t)(n - 1) * row_bytes,
                   (const char *)t->data + (size_t)ids[n - 1] * row_bytes, row_bytes) != 0) {
            fprintf(stderr, "bench_grpc: wrong rows\n");
            return 1;
        }
        fs_batch_free(b);
        double c2 = cpu_now(), t2 = bench_now();
        size_t got = raw_fetch(ch, cq);
        double t3 = bench_now(), c3 = cpu_now();
        if (got != total) {
            fprintf(stderr, "bench_grpc: raw stream delivered %zu of %zu bytes\n", got, total);
            return 1;
        }
        if (k > 0 && t1 - t0 < ours) ours = t1 - t0;
        if (k > 0 && t3 - t2 < base) base = t3 - t2;
        fprintf(stderr, "  rep %d: featstore %.3f s (%.2f cores busy, %ld faults), raw gRPC %.3f s (%.2f cores busy, "
                "%ld faults)\n", k, t1 - t0, (c1 - c0) / (t1 - t0), f1 - f0, t3 - t2, (c3 - c2) / (t3 - t2),
                faults_now() - f1);
    }
    double gbps = (double)total / ours / 1e9, raw_gbps = (double)total / base / 1e9;
    printf("RESULT bench=grpc_gather rows=%lld dim=%lld ids=%lld server_threads=%d chunk_bytes=%zu gbps=%.2f "
           "raw_grpc_gbps=%.2f ratio_vs_raw_grpc=%.2f\n",
           (long long)t->rows, (long long)t->dim, (long long)n, threads, chunk, gbps, raw_gbps, gbps / raw_gbps);
    fflush(stdout);

    isolation(argc, argv, port, metrics, t, threads);

    grpc_channel_destroy(ch);
    drain(cq);
    raw_server_stop(&raw);
    grpc_shutdown();
    free(payload);
    fs_close(c);
    fs_grpc_server_stop(srv);
    fs_metrics_destroy(metrics);
    fs_engine_destroy(engine);
    fs_store_destroy(store);
    fs_dataset_close(ds);
    free(ids);
    return 0;
}
