/* bench_plan.c — how long planning takes at scale: degree hotness plus a
 * full Algorithm 1 plan (sort, placement, routes) for a 10M-node graph,
 * which must stay within 10 s on 2 cores. The same-run baseline is the sort
 * a plain implementation would use (qsort with a comparator), since the
 * sort dominates Algorithm 1's O(N log N).
 *
 *   bench_plan [--nodes 10000000] [--degree 8] [--threads 2]
 *              [--preset nvlink-pairs] [--row-bytes 512] [--gpu-fraction 0.05]
 *              [--baseline 1]
 *
 * The graph is synthesised in memory (not timed): every node has --degree
 * out-edges whose targets follow a Zipf(1) law over ranks, and ranks are
 * scattered over ids by a bijective hash, so hot nodes are spread like a
 * permuted (Graph500-style) graph. --degree 0 skips the graph and
 * synthesises the hotness array directly (the degree phase is then 0).
 * GPU memory is set so each GPU's feature budget is --gpu-fraction of the
 * table. Also timed, for scale: the XGNN solver on dgx1-v100 and an XGNN
 * plan that partitions half the topology too. Prints a RESULT line
 * (docs/performance.md) and per-phase timings. */
#include <math.h>
#include <stdint.h>

#include "argsort.h"
#include "bench_util.h"
#include "fs_parallel.h"
#include "fs_rng.h"
#include "hotness.h"
#include "plan.h"

typedef struct {
    int64_t n, degree, mult;
    int32_t *indices;
    double *p;
} synth_t;

static int64_t gcd(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b, b = t;
    }
    return a;
}

/* rank -> id by x * mult + 12345 mod n, a bijection when gcd(mult, n) = 1. */
static int64_t coprime_multiplier(int64_t n)
{
    int64_t a = 2654435761LL % n;
    while (a < 2 || gcd(a, n) != 1) a = (a + 1) % n;
    return a;
}

static int64_t zipf_rank(uint64_t bits, int64_t n)
{
    double u = (double)(bits >> 11) * 0x1p-53;
    int64_t r = (int64_t)floor(pow((double)n, u)) - 1; /* P(r) ~ 1 / (r + 1) */
    return r < 0 ? 0 : (r >= n ? n - 1 : r);
}

static void synth_edges(void *vctx, int64_t b, int64_t e, int worker)
{
    (void)worker;
    synth_t *s = vctx;
    for (int64_t i = b; i < e; i++) {
        int64_t rank = zipf_rank(fs_rng_at(1, 0, (uint64_t)i), s->n);
        s->indices[i] = (int32_t)(((__int128)rank * s->mult + 12345) % s->n);
    }
}

static void synth_hotness(void *vctx, int64_t b, int64_t e, int worker)
{
    (void)worker;
    synth_t *s = vctx;
    for (int64_t v = b; v < e; v++) { /* Zipf(1) over scattered ranks, as the degree graph would give */
        int64_t rank = (int64_t)(fs_rng_at(2, 0, (uint64_t)v) % (uint64_t)s->n);
        s->p[v] = floor(1e6 / (double)(rank + 1));
    }
}

static const double *qsort_p;
static int by_p_desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    if (qsort_p[x] != qsort_p[y]) return qsort_p[x] > qsort_p[y] ? -1 : 1;
    return (x > y) - (x < y);
}

static void die(const char *what, const fs_error_t *err)
{
    fprintf(stderr, "bench_plan: %s: %s\n", what, err->msg);
    exit(1);
}

int main(int argc, char **argv)
{
    int64_t n = bench_arg(argc, argv, "--nodes", 10000000), degree = bench_arg(argc, argv, "--degree", 8);
    int threads = (int)bench_arg(argc, argv, "--threads", 2), baseline = (int)bench_arg(argc, argv, "--baseline", 1);
    int64_t row_bytes = bench_arg(argc, argv, "--row-bytes", 512);
    const char *preset = bench_str(argc, argv, "--preset", "nvlink-pairs");
    double fraction = atof(bench_str(argc, argv, "--gpu-fraction", "0.05"));
    if (n < 2 || n > INT32_MAX || degree < 0 || row_bytes < 1) {
        fprintf(stderr, "bench_plan: bad --nodes/--degree/--row-bytes\n");
        return 2;
    }
    fs_error_t err = {0};
    fs_hardware_t hw;
    if (fs_hw_preset(preset, &hw, &err) != FS_OK) die("preset", &err);
    if (fs_hw_set_memory(&hw, (int64_t)(fraction * (double)n) * row_bytes, &err) != FS_OK) die("memory", &err);

    synth_t s = {.n = n, .degree = degree, .mult = coprime_multiplier(n), .p = malloc(sizeof(double) * (size_t)n)};
    int64_t *indptr = NULL;
    double t0 = bench_now();
    if (degree > 0) {
        s.indices = malloc(sizeof(int32_t) * (size_t)(n * degree));
        indptr = malloc(sizeof(int64_t) * (size_t)(n + 1));
        if (!s.indices || !indptr) return fprintf(stderr, "bench_plan: out of memory\n"), 1;
        for (int64_t v = 0; v <= n; v++) indptr[v] = v * degree;
        fs_parallel_for(threads, n * degree, synth_edges, &s);
    }
    printf("synthesised %lld nodes, %lld edges in %.2f s (not timed)\n", (long long)n, (long long)(n * degree),
           bench_now() - t0);

    double t_degree = 0;
    t0 = bench_now();
    if (degree > 0) {
        fs_csr_ref_t g = {.num_nodes = n, .indptr = indptr, .indices = s.indices, .index_dtype = FS_DTYPE_I32};
        if (fs_hotness_degree(&g, threads, s.p, &err) != FS_OK) die("degree", &err);
        t_degree = bench_now() - t0;
    } else {
        fs_parallel_for(threads, n, synth_hotness, &s);
    }

    /* the phases of a plan, timed one by one */
    int64_t *order = malloc(sizeof(int64_t) * (size_t)n);
    t0 = bench_now();
    if (fs_argsort_desc(s.p, n, threads, order, &err) != FS_OK) die("argsort", &err);
    double t_sort = bench_now() - t0;
    int64_t bsize = (int64_t)(fraction * (double)n);
    int64_t *B = malloc(sizeof(int64_t) * (size_t)(2 * bsize)), count;
    t0 = bench_now();
    if (fs_algo1(s.p, order, n, 2, bsize, 0.2, B, &count, &err) != FS_OK) die("algo1", &err);
    double t_algo1 = bench_now() - t0;

    /* the whole plan as a server builds it: budgets, sort, Algorithm 1, routes */
    fs_plan_opts_t o;
    fs_plan_defaults(&o);
    o.threads = threads;
    o.policy = FS_FEAT_ALGO1;
    fs_plan_input_t in = {.num_nodes = n, .p = s.p, .row_bytes = row_bytes};
    fs_plan_t *plan;
    t0 = bench_now();
    if (fs_plan_build(&hw, &in, &o, &plan, &err) != FS_OK) die("plan", &err);
    double t_plan = bench_now() - t0;

    /* XGNN on the DGX-1 mesh: the solver alone, then a plan that also
     * partitions the topology (half of it on GPUs) */
    fs_hardware_t dgx;
    fs_xgnn_t x;
    fs_hw_preset("dgx1-v100", &dgx, &err);
    t0 = bench_now();
    if (fs_xgnn_solve(&dgx, 0, &x, &err) != FS_OK) die("xgnn", &err);
    double t_solver = bench_now() - t0, t_xgnn_plan = 0;
    fs_plan_t *xplan = NULL;
    if (degree > 0) {
        int64_t topo_bytes = (n + 1) * 8 + n * degree * 4;
        fs_hw_set_memory(&dgx, topo_bytes / 8 + (int64_t)(fraction * (double)n) * row_bytes, &err);
        fs_plan_input_t xin = {.num_nodes = n, .p = s.p, .row_bytes = row_bytes, .indptr = indptr, .index_bytes = 4};
        fs_plan_opts_t xo;
        fs_plan_defaults(&xo);
        xo.threads = threads;
        xo.budget.topo_ratio = 0.5;
        t0 = bench_now();
        if (fs_plan_build(&dgx, &xin, &xo, &xplan, &err) != FS_OK) die("xgnn plan", &err);
        t_xgnn_plan = bench_now() - t0;
    }

    double t_qsort = 0;
    if (baseline) {
        for (int64_t v = 0; v < n; v++) order[v] = v;
        qsort_p = s.p;
        t0 = bench_now();
        qsort(order, (size_t)n, sizeof *order, by_p_desc);
        t_qsort = bench_now() - t0;
    }

    printf("phase degree_hotness seconds=%.3f\n", t_degree);
    printf("phase argsort seconds=%.3f\n", t_sort);
    printf("phase algorithm1 gpus=2 bsize=%lld seconds=%.3f\n", (long long)bsize, t_algo1);
    printf("phase plan_build preset=%s policy=%s seconds=%.3f replication=%.3f\n", preset,
           fs_feat_policy_name(plan->policy), t_plan, plan->replication);
    printf("phase xgnn_solver preset=dgx1-v100 ms=%.3f search_nodes=%lld exact=%d\n", t_solver * 1e3,
           (long long)x.search_nodes, x.exact);
    if (xplan)
        printf("phase plan_build preset=dgx1-v100 policy=%s topology_hot=%lld feature_hot=%lld seconds=%.3f\n",
               fs_feat_policy_name(xplan->policy), (long long)xplan->topo.hot, (long long)xplan->feat_hot, t_xgnn_plan);
    if (baseline) printf("phase qsort_argsort seconds=%.3f\n", t_qsort);
    printf("RESULT bench=plan_time nodes=%lld edges=%lld threads=%d preset=%s seconds=%.3f degree_seconds=%.3f "
           "plan_seconds=%.3f",
           (long long)n, (long long)(n * degree), threads, preset, t_degree + t_plan, t_degree, t_plan);
    if (baseline) printf(" ratio_vs_qsort_argsort=%.2f", t_qsort / t_sort);
    printf("\n");
    fs_plan_free(plan);
    fs_plan_free(xplan);
    free(order), free(B), free(s.p), free(s.indices), free(indptr);
    return 0;
}
