/* bench_stream.c — what an epoch stream hides from a trainer, measured in
 * one run (docs/api.md §11).
 *
 * A trainer loop over one rank's epoch: take a batch (the seeds' sample,
 * features and labels), then a simulated compute step. The compute step
 * is the trainer's thread waiting compute_ms, as it waits on a GPU; it is
 * set to the measured mean load time of a batch, the case the
 * pre-propagation GNN study's (P4 in docs/papers.md) double buffering
 * targets. Two loops over the same batches (the same
 * plan, fs_epoch.h, so the same seeds and request seeds):
 *
 *   sync    fs_sample_gather + fs_gather(labels) in the trainer's thread;
 *           the whole load is visible.
 *   stream  fs_stream_next on a stream with --prefetch; only the wait for
 *           a batch not yet made is visible.
 *
 * visible_load_ms is the mean per batch time the trainer spends getting
 * batches (the stream's pipeline fill included); the ratio is sync over
 * stream, per transport, the median of --rounds interleaved rounds.
 *
 * FastGL's Match-Reorder (P2 in docs/papers.md; docs/algorithms.md §6): on a permuted R-MAT
 * (hubs scattered, --match-scale), a grpc:// stream whose batches fetch
 * only the rows the previous batch lacks, against the same stream fetching
 * every batch whole (FS_DELTA_OFF), consumed as fast as it comes,
 * interleaved over --rounds rounds (the median): FS_DELTA_FULL (the trainer
 * still gets full host matrices, assembled) at window 1 (Match alone) and
 * --window (Match-Reorder), and FS_DELTA_ONLY at --window (a GPU trainer
 * keeping the previous rows on its GPU). Reported: the match degree,
 * feature bytes fetched whole over bytes fetched as deltas, the same for
 * everything a batch carries (its sample, labels and rows: what the wire
 * carries, less framing), and batches per second over the whole-batch
 * stream's. Over loopback the "network" is a memory copy, so the ratio
 * shows CPU work saved; bench/with_link.sh runs this with the server's
 * port limited to a link rate (Linux tc), where bytes are the cost.
 *
 *   bench_stream [--scale 17] [--dim 128] [--batch 1024] [--batches 0 = the epoch]
 *                [--prefetch 2] [--rounds 3] [--dataset DIR]
 *                [--match-scale 20] [--match-edge-factor 16] [--match-graph permuted|clustered]
 *                [--match-batches 40] [--window 8] [--only stream|match_reorder]
 *                [--port 0 = any: the server's gRPC port] [--link loopback: a label for the RESULT lines]
 *
 * RESULT bench=stream transport=unix|grpc prefetch=P compute_ms=...
 *        visible_load_ms=... sync_visible_load_ms=... ratio_visible_load_vs_sync=...
 * RESULT bench=match_reorder graph=rmat-sS-eE-permuted|clustered link=L delta=full|only window=W match_degree=...
 *        ratio_bytes_full_vs_delta=... ratio_wire_bytes_full_vs_delta=... ratio_grpc_batches_per_s_vs_full=... */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_common.h"
#include "bench_util.h"
#include "featstore/client.h"
#include "fs_epoch.h"
#include "gen.h"

static const fs_sample_req_t request = {.struct_size = sizeof(fs_sample_req_t), .num_hops = 2, .fanout = {10, 5}};

typedef struct {
    fs_client_t *c;
    const char *uri;
    fs_ids_t *train;
    int batch, batches, prefetch;
} setup_t;

static void wait_ms(double ms)
{
    struct timespec t = {(time_t)(ms / 1000), (long)(((long long)(ms * 1e6)) % 1000000000LL)};
    nanosleep(&t, NULL);
}

static void fail(const char *what, fs_client_t *c)
{
    fprintf(stderr, "bench_stream: %s: %s\n", what, fs_client_errstr(c));
    exit(1);
}

static fs_epoch_t plan(const setup_t *s)
{
    fs_epoch_opts_t o = {.num_items = s->train->n, .batch_size = s->batch, .order = FS_EPOCH_RANDOM, .seed = 1,
                         .epoch = 0, .rank = 0, .world_size = 1};
    fs_epoch_t e;
    fs_error_t err = {0};
    if (fs_epoch_plan(&o, &e, &err) != FS_OK) {
        fprintf(stderr, "bench_stream: %s\n", err.msg);
        exit(1);
    }
    return e;
}

/* The synchronous loop; returns the mean visible load per batch (ms). */
static double sync_loop(const setup_t *s, double compute_ms)
{
    fs_epoch_t e = plan(s);
    int64_t *seeds = malloc(sizeof *seeds * (size_t)s->batch);
    double visible = 0;
    int n = s->batches > 0 && s->batches < e.num_batches ? s->batches : (int)e.num_batches;
    for (int b = 0; b < n; b++) {
        double t0 = bench_now();
        int64_t m = fs_epoch_batch(&e, b, seeds);
        for (int64_t i = 0; i < m; i++) seeds[i] = s->train->ids[seeds[i]];
        fs_sample_req_t r = request;
        r.seed = fs_epoch_batch_seed(&e, b);
        fs_batch_t *x, *labels;
        if (fs_sample_gather(s->c, seeds, m, &r, "feat", FS_DTYPE_INVALID, &x) != FS_OK) fail("sample_gather", s->c);
        if (fs_gather(s->c, seeds, m, "labels", FS_DTYPE_INVALID, &labels) != FS_OK) fail("labels", s->c);
        visible += bench_now() - t0;
        wait_ms(compute_ms);
        fs_batch_free(x), fs_batch_free(labels);
    }
    free(seeds);
    return visible * 1e3 / n;
}

/* The stream loop over the same batches. */
static double stream_loop(const setup_t *s, double compute_ms)
{
    fs_stream_opts_t o = FS_STREAM_OPTS_INIT;
    o.split = "train", o.batch_size = s->batch, o.sample = &request, o.table = "feat", o.seed = 1;
    o.prefetch = s->prefetch;
    double t0 = bench_now(), visible = 0;
    fs_stream_t *st;
    if (fs_stream_open(s->c, &o, &st) != FS_OK) fail("stream", s->c);
    int n = 0;
    fs_stream_batch_t *b;
    while ((s->batches <= 0 || n < s->batches) && fs_stream_next(st, &b) == FS_OK) {
        visible += bench_now() - t0;
        wait_ms(compute_ms);
        fs_stream_batch_free(b);
        n++;
        t0 = bench_now();
    }
    if (n == 0) {
        fprintf(stderr, "bench_stream: %s\n", fs_stream_errstr(st));
        exit(1);
    }
    fs_stream_close(st);
    return visible * 1e3 / n;
}

static int cmp(const void *a, const void *b) { return bench_cmp_double(a, b); }

static void run_transport(setup_t *s, const char *name, int rounds)
{
    if (fs_connect(s->uri, NULL, &s->c) != FS_OK) fail("connect", s->c);
    if (fs_split(s->c, "train", &s->train) != FS_OK) fail("split", s->c);
    fs_epoch_t e = plan(s);
    if (s->batches <= 0 || s->batches > e.num_batches) s->batches = (int)e.num_batches; /* 0: the whole epoch */
    sync_loop(s, 0);                          /* warm: mappings, slots, server caches */
    double compute_ms = sync_loop(s, 0);      /* the load a batch costs */
    double sv[16], st[16], ratio[16];
    for (int r = 0; r < rounds; r++) {
        sv[r] = sync_loop(s, compute_ms);
        st[r] = stream_loop(s, compute_ms);
        ratio[r] = sv[r] / (st[r] > 1e-6 ? st[r] : 1e-6);
    }
    qsort(sv, (size_t)rounds, sizeof *sv, cmp), qsort(st, (size_t)rounds, sizeof *st, cmp);
    qsort(ratio, (size_t)rounds, sizeof *ratio, cmp);
    printf("RESULT bench=stream transport=%s prefetch=%d batch=%d batches=%d compute_ms=%.2f visible_load_ms=%.3f "
           "sync_visible_load_ms=%.2f ratio_visible_load_vs_sync=%.1f\n",
           name, s->prefetch, s->batch, s->batches, compute_ms, st[rounds / 2], sv[rounds / 2], ratio[rounds / 2]);
    fflush(stdout);
    fs_ids_free(s->train);
    fs_close(s->c);
}

/* ---- Match-Reorder --------------------------------------------------------------- */

typedef struct {
    double batches_per_s, match, bytes_full, bytes_delta, sample_bytes;
} delta_run_t;

/* The bytes of a batch's sample and labels in a Stream call (featstore.proto:
 * int64 nodes, seed positions, labels, offsets and edge sources; the edges'
 * destinations are implied by the offsets). */
static double sample_bytes(const fs_stream_batch_t *b)
{
    const fs_batch_t *x = b->batch;
    double words = (double)x->num_nodes + 2.0 * (double)b->num_seeds;
    for (int h = 0; h < x->num_hops; h++) words += (double)(x->blocks[h].num_dst + 1) + (double)x->blocks[h].num_edges;
    return 8 * words;
}

static fs_sample_req_t match_request = {.struct_size = sizeof(fs_sample_req_t), .num_hops = 2, .fanout = {10, 5}};

static delta_run_t delta_run(fs_client_t *c, int batch, int batches, fs_delta_t mode, int window)
{
    fs_stream_opts_t o = FS_STREAM_OPTS_INIT;
    o.split = "train", o.batch_size = batch, o.sample = &match_request, o.table = "feat", o.seed = 3;
    o.delta = mode, o.window = window, o.prefetch = 2;
    fs_stream_t *st;
    double t0 = bench_now();
    if (fs_stream_open(c, &o, &st) != FS_OK) fail("stream", c);
    delta_run_t r = {0};
    fs_stream_batch_t *b;
    int n = 0;
    while (n < batches && fs_stream_next(st, &b) == FS_OK) {
        size_t row = (size_t)b->dim * fs_dtype_size(b->dtype);
        r.bytes_full += (double)b->batch->num_nodes * (double)row;
        r.bytes_delta += (double)b->num_new * (double)row;
        r.sample_bytes += sample_bytes(b);
        if (n > 0) r.match += b->match; /* the first batch has no previous one */
        fs_stream_batch_free(b);
        n++;
    }
    if (n < 2) {
        fprintf(stderr, "bench_stream: %s\n", fs_stream_errstr(st));
        exit(1);
    }
    fs_stream_close(st);
    r.batches_per_s = n / (bench_now() - t0);
    r.match /= n - 1;
    return r;
}

/* R-MAT with hubs scattered (permuted ids), or as generated: its recursive
 * quadrants keep low ids together, the clustering a denser graph like
 * ogbn-products shows. */
static const char *match_rmat(int scale, int edge_factor, int permute, int dim)
{
    static char path[256];
    snprintf(path, sizeof path, "/tmp/featstore-bench/rmat-s%d-e%d-sym%s-d%d", scale, edge_factor,
             permute ? "-perm" : "", dim);
    char manifest[300];
    snprintf(manifest, sizeof manifest, "%s/manifest.json", path);
    if (access(manifest, F_OK) == 0) return path;
    mkdir("/tmp/featstore-bench", 0755);
    fs_rmat_opts_t o;
    fs_rmat_defaults(&o);
    o.out_dir = path, o.scale = scale, o.edge_factor = edge_factor, o.dim = dim, o.force = 1, o.permute = permute;
    o.edges.symmetrize = o.edges.dedup = 1;
    fs_error_t err = {0};
    if (fs_gen_rmat(&o, &err) != FS_OK) {
        fprintf(stderr, "bench_stream: %s\n", err.msg);
        exit(1);
    }
    return path;
}

static void match_reorder(const char *grpc_uri, const char *link, const char *graph, int batch, int batches,
                          int window, int rounds)
{
    static const struct {
        fs_delta_t mode;
        int window;
        const char *name;
    } runs[] = {{FS_DELTA_FULL, 1, "full"}, {FS_DELTA_FULL, 0, "full"}, {FS_DELTA_ONLY, 0, "only"}};
    enum { RUNS = sizeof runs / sizeof *runs };
    fs_client_t *c;
    if (fs_connect(grpc_uri, NULL, &c) != FS_OK) fail("connect", c);
    delta_run(c, batch, 3, FS_DELTA_OFF, 1); /* warm */
    double full[16], match[RUNS][16], bytes[RUNS][16], wire[RUNS][16], speed[RUNS][16];
    for (int r = 0; r < rounds; r++) {
        full[r] = delta_run(c, batch, batches, FS_DELTA_OFF, 1).batches_per_s;
        for (int k = 0; k < RUNS; k++) {
            delta_run_t d = delta_run(c, batch, batches, runs[k].mode, runs[k].window ? runs[k].window : window);
            match[k][r] = d.match, bytes[k][r] = d.bytes_full / d.bytes_delta, speed[k][r] = d.batches_per_s / full[r];
            wire[k][r] = (d.sample_bytes + d.bytes_full) / (d.sample_bytes + d.bytes_delta);
        }
    }
    qsort(full, (size_t)rounds, sizeof(double), cmp);
    for (int k = 0; k < RUNS; k++) {
        qsort(match[k], (size_t)rounds, sizeof(double), cmp), qsort(bytes[k], (size_t)rounds, sizeof(double), cmp);
        qsort(speed[k], (size_t)rounds, sizeof(double), cmp), qsort(wire[k], (size_t)rounds, sizeof(double), cmp);
        int mid = rounds / 2;
        printf("RESULT bench=match_reorder graph=%s link=%s batch=%d batches=%d delta=%s window=%d "
               "match_degree=%.3f ratio_bytes_full_vs_delta=%.2f ratio_wire_bytes_full_vs_delta=%.2f "
               "full_batches_per_s=%.1f ratio_grpc_batches_per_s_vs_full=%.2f\n", graph, link, batch, batches,
               runs[k].name, runs[k].window ? runs[k].window : window, match[k][mid], bytes[k][mid], wire[k][mid],
               full[mid], speed[k][mid]);
    }
    fflush(stdout);
    fs_close(c);
}

/* ---- main ------------------------------------------------------------------------ */

typedef struct {
    bench_child_t child;
    char sock[64], unix_uri[128], grpc_uri[64];
} server_t;

static void serve(server_t *sv, const char *data, int grpc_port)
{
    char cmd[1024], line[512];
    static int n;
    snprintf(sv->sock, sizeof sv->sock, "/tmp/bench-stream-%d-%d.sock", (int)getpid(), n++);
    snprintf(cmd, sizeof cmd, "exec %s serve %s --socket %s --listen 127.0.0.1:%d --metrics 127.0.0.1:0 2>/dev/null",
             FS_BIN, data, sv->sock, grpc_port);
    bench_spawn(&sv->child, cmd);
    int port;
    if (bench_wait_line(&sv->child, "READY", line, sizeof line) ||
        sscanf(line, "READY unix=%*s grpc=%*[^:]:%d", &port) != 1) {
        fprintf(stderr, "bench_stream: the server did not start\n");
        exit(1);
    }
    snprintf(sv->unix_uri, sizeof sv->unix_uri, "unix://%s", sv->sock);
    snprintf(sv->grpc_uri, sizeof sv->grpc_uri, "grpc://127.0.0.1:%d", port);
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    int scale = (int)bench_arg(argc, argv, "--scale", 17), dim = (int)bench_arg(argc, argv, "--dim", 128);
    int rounds = (int)bench_arg(argc, argv, "--rounds", 3), batch = (int)bench_arg(argc, argv, "--batch", 1024);
    if (rounds < 1 || rounds > 16) rounds = 3;
    const char *only = bench_str(argc, argv, "--only", "");
    server_t sv;
    if (!*only || strcmp(only, "stream") == 0) {
        serve(&sv, bench_dataset_rmat(argc, argv, scale, 16, dim, 1), 0);
        setup_t s = {.batch = batch, .batches = (int)bench_arg(argc, argv, "--batches", 0),
                     .prefetch = (int)bench_arg(argc, argv, "--prefetch", 2)};
        s.uri = sv.unix_uri;
        run_transport(&s, "unix", rounds);
        s.uri = sv.grpc_uri;
        run_transport(&s, "grpc", rounds);
        kill(sv.child.pid, SIGTERM);
    }
    if (!*only || strcmp(only, "match_reorder") == 0) {
        int mscale = (int)bench_arg(argc, argv, "--match-scale", 20);
        int ef = (int)bench_arg(argc, argv, "--match-edge-factor", 16);
        int clustered = strcmp(bench_str(argc, argv, "--match-graph", "permuted"), "clustered") == 0;
        char graph[96];
        snprintf(graph, sizeof graph, "rmat-s%d-e%d-%s", mscale, ef, clustered ? "clustered" : "permuted");
        if (clustered) /* ogbn-products-like: PyG's products sampler, [15,10,5] */
            match_request = (fs_sample_req_t){.struct_size = sizeof(fs_sample_req_t), .num_hops = 3,
                                              .fanout = {15, 10, 5}};
        serve(&sv, match_rmat(mscale, ef, !clustered, dim), (int)bench_arg(argc, argv, "--port", 0));
        match_reorder(sv.grpc_uri, bench_str(argc, argv, "--link", "loopback"), graph, batch, (int)bench_arg(argc, argv, "--match-batches", 40),
                      (int)bench_arg(argc, argv, "--window", 8), rounds);
        kill(sv.child.pid, SIGTERM);
    }
    return 0;
}
