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
 *                [--naive-batches 20] [--max-threads 2]
 *
 * Without --dataset it generates (once, cached under /tmp/featstore-bench)
 * the reference graph of docs/performance.md: R-MAT scale 21, edge factor 16,
 * symmetrised, deduplicated, node 0 the hub (not permuted). Seeds are drawn
 * uniformly from non-isolated nodes. */
#include <pthread.h>

#include "bench_common.h"
#include "bench_util.h"
#include "dataset.h"
#include "fs_pool.h"
#include "fs_rng.h"
#include "fs_sample.h"
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

/* One trainer's view: batches one after another, each split over a pool of
 * `threads` (docs/algorithms.md §6, parallel relabel). Edges per second. */
static double measure_one_batch(const fs_csr_view_t *g, const int64_t *seeds, int b0, int batches, int batch,
                                int threads, const fs_sample_req_t *req)
{
    fs_sampler_t *s;
    fs_pool_t *pool = NULL;
    fs_error_t err = {0};
    fs_sampler_create(&s, &err);
    if (threads > 1) fs_pool_create(threads, &pool, &err);
    fs_sampler_set_pool(s, pool);
    int64_t edges = 0;
    double t0 = bench_now();
    for (int b = b0; b < b0 + batches; b++) {
        fs_sample_result_t res;
        fs_sample_req_t r = *req;
        r.seed = (uint64_t)b + 1;
        if (fs_sample_cpu(s, g, seeds + (size_t)b * batch, batch, &r, &res, NULL, &err) != FS_OK) {
            fprintf(stderr, "sample failed: %s\n", err.msg);
            exit(1);
        }
        for (int h = 0; h < res.num_hops; h++) edges += res.block[h].num_edges;
    }
    double rate = (double)edges / (bench_now() - t0);
    fs_sampler_destroy(s);
    fs_pool_destroy(pool);
    return rate;
}

/* sample_one_batch at 1, 2 and every core, interleaved in rounds so drift
 * on a noisy machine hits every thread count alike. */
static void one_batch_lines(const fs_csr_view_t *g, const int64_t *seeds, int batches, int batch,
                            const fs_sample_req_t *req, const char *fanouts)
{
    int counts[3] = {1, 2, fs_cpu_count()}, n = counts[2] > 2 ? 3 : 2, rounds = 5, per = batches / rounds;
    double secs[3] = {0}, edges[3] = {0};
    if (per < 1) per = 1;
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < n; i++) {
            double t0 = bench_now(), rate = measure_one_batch(g, seeds, r * per, per, batch, counts[i], req);
            double dt = bench_now() - t0;
            secs[i] += dt;
            edges[i] += rate * dt;
        }
    for (int i = 0; i < n; i++) {
        double rate = edges[i] / secs[i], one = edges[0] / secs[0];
        printf("RESULT bench=sample_one_batch threads=%d fanouts=%s batch=%d batches=%d medges_per_s=%.2f "
               "batches_per_s=%.1f ratio_vs_1_thread=%.2f\n", counts[i], fanouts, batch, per * rounds, rate / 1e6,
               rate / (edges[i] / (per * rounds)) , rate / one);
        fflush(stdout);
    }
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

    const struct { int hops, f[3]; const char *name; } cfg[2] = {{3, {15, 10, 5}, "15,10,5"}, {2, {25, 10, 0}, "25,10"}};
    for (int c = 0; c < 2; c++) {
        fs_sample_req_t req = {.num_hops = cfg[c].hops};
        for (int h = 0; h < cfg[c].hops; h++) req.fanout[h] = cfg[c].f[h], req.mode[h] = FS_SAMPLE_UNIFORM;
        one_batch_lines(&g, seeds, batches, batch, &req, cfg[c].name);
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
    return 0;
}
