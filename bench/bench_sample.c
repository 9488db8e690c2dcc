/* bench_sample.c — k-hop neighbour sampling throughput, relabel included,
 * in the same run against two baselines: the textbook sampler of
 * naive_sample.c (O(degree) reservoir per node, sort-based dedup, binary-
 * search relabel) and the test oracle fs_sample_reference (the engine's own
 * O(fanout) picks, but a full copy of each neighbour list and a dense
 * N-entry relabel array). At 1..max-threads threads (one batch per thread at a time, as a
 * server runs concurrent requests; PyG's figure in docs/performance.md was taken
 * the same way).
 *
 *   bench_sample [--dataset DIR] [--scale 21] [--batches 200] [--batch 1024]
 *                [--naive-batches 20] [--max-threads 2] [--only homogeneous|typed]
 *                [--typed-scale 18]
 *
 * Without --dataset it generates (once, cached under /tmp/featstore-bench)
 * the reference graph of docs/performance.md: R-MAT scale 21, edge factor 16,
 * symmetrised, deduplicated, node 0 the hub (not permuted). Seeds are drawn
 * uniformly from non-isolated nodes. */
#include <pthread.h>
#include <string.h>

#include "bench_common.h"
#include "bench_util.h"
#include "dataset.h"
#include "fs_pool.h"
#include "fs_rng.h"
#include "fs_sample.h"
#include "fs_typed.h"
#include "typed_view.h"
#include "naive_sample.h"

typedef struct {
    const fs_csr_view_t *g;
    const int64_t *seeds;
    int batches, batch, threads, worker, kind; /* 0 engine, 1 oracle, 2 textbook */
    const fs_sample_req_t *req;
    int64_t edges;
    int failed;
} job_t;

static void *run_batches(void *p)
{
    job_t *j = p;
    fs_sampler_t *s;
    fs_error_t err = {0};
    fs_sampler_create(&s, &err);
    naive_sampler_t *ns = naive_create();
    for (int b = j->worker; b < j->batches; b += j->threads) {
        fs_sample_result_t res;
        fs_sample_req_t req = *j->req;
        req.seed = (uint64_t)b + 1;
        const int64_t *seeds = j->seeds + (size_t)b * j->batch;
        if (j->kind == 2) {
            int64_t e = naive_sample(ns, j->g, seeds, j->batch, &req);
            if (e < 0) j->failed = 1;
            j->edges += e;
            continue;
        }
        fs_status_t st = j->kind == 1 ? fs_sample_reference(s, j->g, seeds, j->batch, &req, &res, &err)
                                      : fs_sample_cpu(s, j->g, seeds, j->batch, &req, &res, NULL, &err);
        if (st != FS_OK) {
            fprintf(stderr, "sample failed: %s\n", err.msg);
            j->failed = 1;
            break;
        }
        for (int h = 0; h < res.num_hops; h++) j->edges += res.block[h].num_edges;
    }
    naive_destroy(ns);
    fs_sampler_destroy(s);
    return NULL;
}

/* Sampled edges per second over `batches` batches on `threads` threads. */
static double measure(const fs_csr_view_t *g, const int64_t *seeds, int batches, int batch, int threads,
                      const fs_sample_req_t *req, int kind)
{
    job_t jobs[64];
    pthread_t tid[64];
    double t0 = bench_now();
    for (int t = 0; t < threads; t++) {
        jobs[t] = (job_t){.g = g, .seeds = seeds, .batches = batches, .batch = batch, .threads = threads,
                          .worker = t, .kind = kind, .req = req};
        pthread_create(&tid[t], NULL, run_batches, &jobs[t]);
    }
    int64_t edges = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(tid[t], NULL);
        if (jobs[t].failed) exit(1);
        edges += jobs[t].edges;
    }
    return (double)edges / (bench_now() - t0);
}

/* ---- one trainer's batch on every core ----------------------------------
 * Batches one after another, each split over a pool of `threads`
 * (docs/algorithms.md §6, parallel relabel). */

typedef struct {
    const fs_csr_view_t *g;             /* homogeneous, or */
    const fs_typed_view_t *tv;          /* typed (seeds: node type 0) */
    const int64_t *seeds;
    int batch;
    const fs_sample_req_t *req;
    const fs_typed_req_t *treq;
} one_batch_t;

/* One thread count's samplers and pool, kept across rounds. */
typedef struct {
    fs_sampler_t *s;
    fs_typed_sampler_t *ts;
    fs_pool_t *pool;
} one_batch_ws_t;

static void one_batch_ws(one_batch_ws_t *w, int threads)
{
    fs_error_t err = {0};
    memset(w, 0, sizeof *w);
    fs_sampler_create(&w->s, &err);
    fs_typed_sampler_create(&w->ts, &err);
    if (threads > 1) fs_pool_create(threads, &w->pool, &err);
    fs_sampler_set_pool(w->s, w->pool);
    fs_typed_sampler_set_pool(w->ts, w->pool);
}

static void one_batch_ws_free(one_batch_ws_t *w)
{
    fs_sampler_destroy(w->s);
    fs_typed_sampler_destroy(w->ts);
    fs_pool_destroy(w->pool);
}

/* Sampled edges of batches b0..; *secs the time taken. */
static double one_batch_run(const one_batch_t *o, one_batch_ws_t *w, int b0, int batches, double *secs)
{
    fs_error_t err = {0};
    int64_t edges = 0;
    double t0 = bench_now();
    for (int b = b0; b < b0 + batches; b++) {
        const int64_t *seeds = o->seeds + (size_t)b * o->batch;
        fs_status_t st;
        if (o->tv) {
            fs_typed_req_t r = *o->treq;
            r.seed = (uint64_t)b + 1;
            fs_typed_seeds_t grp = {.type = 0, .count = o->batch, .ids = seeds};
            fs_typed_result_t res;
            st = fs_typed_sample_cpu(w->ts, o->tv, &r, &grp, 1, NULL, 0, &res, &err);
            for (int i = 0; st == FS_OK && i < res.num_hops * res.num_edge_types; i++) edges += res.block[i].num_edges;
        } else {
            fs_sample_req_t r = *o->req;
            r.seed = (uint64_t)b + 1;
            fs_sample_result_t res;
            st = fs_sample_cpu(w->s, o->g, seeds, o->batch, &r, &res, NULL, &err);
            for (int h = 0; st == FS_OK && h < res.num_hops; h++) edges += res.block[h].num_edges;
        }
        if (st != FS_OK) {
            fprintf(stderr, "sample failed: %s\n", err.msg);
            exit(1);
        }
    }
    *secs = bench_now() - t0;
    return (double)edges;
}

/* RESULT lines at 1, 2 and every core, interleaved in rounds (each thread
 * count on the same batches, in turn) so drift on a noisy machine hits every
 * count alike. ratio_vs_1_thread is the median over rounds of the round's
 * ratio, robust to a burst of noise in one round; the rates are totals. */
static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void one_batch_lines(const char *bench, const char *fanouts, const one_batch_t *o, int batches)
{
    enum { ROUNDS = 10 };
    int counts[3] = {1, 2, fs_cpu_count()}, n = counts[2] > 2 ? 3 : 2, per = batches / ROUNDS;
    double secs[3] = {0}, edges[3] = {0}, rate[3][ROUNDS], dt;
    one_batch_ws_t ws[3];
    if (per < 1) per = 1;
    for (int i = 0; i < n; i++) { /* a warm-up round grows each workspace to size */
        one_batch_ws(&ws[i], counts[i]);
        one_batch_run(o, &ws[i], 0, per, &dt);
    }
    for (int r = 0; r < ROUNDS; r++)
        for (int k = 0; k < n; k++) {
            int i = (k + r) % n; /* rotate which count goes first */
            double e = one_batch_run(o, &ws[i], r * per, per, &dt);
            edges[i] += e, secs[i] += dt, rate[i][r] = e / dt;
        }
    for (int i = 0; i < n; i++) one_batch_ws_free(&ws[i]);
    for (int i = 0; i < n; i++) {
        double ratio[ROUNDS];
        for (int r = 0; r < ROUNDS; r++) ratio[r] = rate[i][r] / rate[0][r];
        qsort(ratio, ROUNDS, sizeof *ratio, cmp_double);
        printf("RESULT bench=%s threads=%d fanouts=%s batch=%d batches=%d medges_per_s=%.2f batches_per_s=%.1f "
               "ratio_vs_1_thread=%.2f\n", bench, counts[i], fanouts, o->batch, per * ROUNDS, edges[i] / secs[i] / 1e6,
               per * ROUNDS / secs[i], (ratio[ROUNDS / 2 - 1] + ratio[ROUNDS / 2]) / 2);
    }
    fflush(stdout);
}

/* The typed line: the typed R-MAT's papers as seeds, every edge type at
 * [15,10,5]. */
static void typed_one_batch(int scale, int batches, int batch)
{
    fs_dataset_t *ds;
    fs_typed_graph_t tg;
    fs_error_t err = {0};
    if (fs_dataset_open(bench_typed_dataset(scale, 8), 0, 0, &ds, &err) != FS_OK ||
        fs_typed_graph_init(&tg, ds, &err) != FS_OK) {
        fprintf(stderr, "bench_sample: %s\n", err.msg);
        exit(1);
    }
    const fs_typed_view_t *tv = &tg.view;
    int hops = 3, f[3] = {15, 10, 5}, *fan = malloc(sizeof *fan * (size_t)(tv->num_edge_types * hops));
    for (int e = 0; e < tv->num_edge_types; e++)
        for (int h = 0; h < hops; h++) fan[e * hops + h] = f[h];
    int64_t *seeds = malloc(sizeof *seeds * (size_t)batches * (size_t)batch);
    fs_rng_t r = fs_rng_make(2025, 0);
    for (int64_t i = 0; i < (int64_t)batches * batch; i++) seeds[i] = (int64_t)fs_rng_below(&r, (uint64_t)tv->count[0]);
    volatile int64_t sink = 0; /* page the topology in before timing */
    for (int e = 0; e < tv->num_edge_types; e++)
        for (int64_t q = 0; q < tv->etype[e].num_edges; q += 512) sink += fs_typed_source(&tv->etype[e], q);
    fprintf(stderr, "sample: typed R-MAT scale %d: %d node types, %d edge types\n", scale, tv->num_node_types,
            tv->num_edge_types);
    fs_typed_req_t treq = {.num_hops = hops, .fanout = fan};
    one_batch_t o = {.tv = tv, .seeds = seeds, .batch = batch, .treq = &treq};
    one_batch_lines("typed_one_batch", "15,10,5", &o, batches);
    free(seeds);
    free(fan);
    fs_typed_graph_free(&tg);
    fs_dataset_close(ds);
}

int main(int argc, char **argv)
{
    int scale = (int)bench_arg(argc, argv, "--scale", 21), batches = (int)bench_arg(argc, argv, "--batches", 200);
    int batch = (int)bench_arg(argc, argv, "--batch", 1024), naive_batches = (int)bench_arg(argc, argv, "--naive-batches", 20);
    int max_threads = (int)bench_arg(argc, argv, "--max-threads", 2);
    const char *dir = bench_dataset(argc, argv, scale);
    fs_dataset_t *ds;
    fs_error_t err = {0};
    if (fs_dataset_open(dir, 0, 0, &ds, &err) != FS_OK) {
        fprintf(stderr, "bench_sample: %s\n", err.msg);
        return 1;
    }
    fs_csr_view_t g;
    fs_csr_view_init(&g, ds->num_nodes, ds->indptr, ds->indices, ds->index_dtype, NULL);
    int64_t *seeds = malloc(sizeof *seeds * (size_t)batches * (size_t)batch);
    fs_rng_t r = fs_rng_make(2024, 0);
    for (int64_t i = 0; i < (int64_t)batches * batch;) {
        int64_t v = (int64_t)fs_rng_below(&r, (uint64_t)ds->num_nodes);
        if (ds->indptr[v + 1] > ds->indptr[v]) seeds[i++] = v;
    }
    /* touch the topology once so the first measurement does not pay page faults */
    volatile int64_t sink = 0;
    for (int64_t e = 0; e < ds->num_edges; e += 512) sink += fs_dataset_neighbor(ds, e);
    fprintf(stderr, "sample: %s: %lld nodes, %lld edges; %d batches x %d seeds\n", dir, (long long)ds->num_nodes,
            (long long)ds->num_edges, batches, batch);

    const char *only = bench_str(argc, argv, "--only", ""); /* "homogeneous" or "typed": one part */
    const struct { int hops, f[3]; const char *name; } cfg[2] = {{3, {15, 10, 5}, "15,10,5"}, {2, {25, 10, 0}, "25,10"}};
    for (int c = 0; c < 2 && strcmp(only, "typed") != 0; c++) {
        fs_sample_req_t req = {.num_hops = cfg[c].hops};
        for (int h = 0; h < cfg[c].hops; h++) req.fanout[h] = cfg[c].f[h], req.mode[h] = FS_SAMPLE_UNIFORM;
        one_batch_t o = {.g = &g, .seeds = seeds, .batch = batch, .req = &req};
        one_batch_lines("sample_one_batch", cfg[c].name, &o, batches);
        for (int t = 1; t <= max_threads; t++) {
            double ours = measure(&g, seeds, batches, batch, t, &req, 0);
            double oracle = measure(&g, seeds, naive_batches, batch, t, &req, 1);
            double naive = measure(&g, seeds, naive_batches, batch, t, &req, 2);
            printf("RESULT bench=sample threads=%d fanouts=%s batches=%d batch=%d medges_per_s=%.2f "
                   "medges_per_s_per_core=%.2f naive_medges_per_s=%.2f ratio_vs_naive=%.2f "
                   "oracle_medges_per_s=%.2f ratio_vs_oracle=%.2f\n",
                   t, cfg[c].name, batches, batch, ours / 1e6, ours / 1e6 / t, naive / 1e6, ours / naive,
                   oracle / 1e6, ours / oracle);
            fflush(stdout);
        }
    }
    fs_dataset_close(ds);
    free(seeds);
    if (strcmp(only, "homogeneous") != 0) typed_one_batch((int)bench_arg(argc, argv, "--typed-scale", 18), batches, batch);
    return 0;
}
