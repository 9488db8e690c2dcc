/* bench_locality.c — what locality-aware sampling (docs/algorithms.md §4) buys and
 * costs: for boost s = 1, 2, 4, 8 the share of a batch's gathered rows that
 * are GPU-resident for the reader (its local hit rate), the host rows left
 * per batch, and sampled edges/s — each with its ratio against s = 1 in the
 * same run (s = 1 is the plain engine, fs_sample_cpu, plus weights).
 *
 *   bench_locality [--dataset DIR] [--scale 21] [--batches 100] [--batch 1024]
 *                  [--gpu-fraction 0.1] [--k 8192] [--threads 2]
 *
 * The plan is a real one: degree hotness, the pcie4 preset with each GPU's
 * memory set to --gpu-fraction of a 512-byte-row table, Rule 1 — so GPU 0
 * holds the top 10% rows by degree — and B = the rows reader GPU 0 reads
 * from GPU memory (fs_las_reader_rows). The preferred sets (3 levels, K)
 * are built on --threads workers and timed. Sampling runs on one thread,
 * [15,10,5] uniform, seeds uniform over non-isolated nodes, the better of
 * two timed passes per s; the graph is docs/performance.md's R-MAT (symmetrised,
 * dedup'ed, not permuted). Boosting concentrates a batch on fewer, hotter
 * rows, so it has fewer distinct rows to expand and fewer edges per batch:
 * edges_vs_min_fanout_deg (edges / the sum of min(fanout, deg) over the
 * frontier rows) shows the per-row expectation is kept (Σ q_new = Σ q). */
#include <math.h>

#include "bench_common.h"
#include "bench_util.h"
#include "dataset.h"
#include "fs_locality.h"
#include "fs_rng.h"
#include "hardware.h"
#include "hotness.h"
#include "locality.h"
#include "plan.h"

typedef struct {
    double seconds, edges, rows, gpu_rows, boosted, dst_rows, expected;
} run_t;

static run_t run(fs_sampler_t *s, const fs_csr_view_t *g, const int64_t *seeds, int batches, int batch,
                 const fs_locality_t *loc, const uint8_t *in_b)
{
    run_t r = {0};
    fs_sample_req_t req = {.num_hops = 3, .fanout = {15, 10, 5}};
    double t0 = bench_now();
    for (int b = 0; b < batches; b++) {
        fs_sample_result_t res;
        fs_las_weights_t w;
        fs_error_t err = {0};
        req.seed = (uint64_t)b + 1;
        if (fs_sample_locality_cpu(s, g, seeds + (size_t)b * batch, batch, &req, loc, &res, &w, NULL, &err) != FS_OK) {
            fprintf(stderr, "bench_locality: %s\n", err.msg);
            exit(1);
        }
        for (int h = 0; h < res.num_hops; h++) {
            r.edges += (double)res.block[h].num_edges;
            r.dst_rows += (double)res.block[h].num_dst;
            for (int64_t d = 0; d < res.block[h].num_dst; d++) { /* the plain sampler's count, min(fanout, deg) */
                int64_t deg = g->part[0].indptr[res.nodes[d] + 1] - g->part[0].indptr[res.nodes[d]];
                r.expected += (double)(deg < req.fanout[h] ? deg : req.fanout[h]);
            }
            r.boosted += (double)w.boosted_rows[h];
        }
        r.rows += (double)res.num_nodes;
        for (int64_t l = 0; l < res.num_nodes; l++) r.gpu_rows += in_b[res.nodes[l]];
    }
    r.seconds = bench_now() - t0;
    return r;
}

static fs_plan_t *top_rows_plan(const fs_dataset_t *ds, double frac, int threads)
{
    fs_csr_ref_t ref = {ds->num_nodes, ds->indptr, ds->indices, ds->index_dtype, NULL};
    double *p = malloc(sizeof *p * (size_t)ds->num_nodes);
    fs_hardware_t hw;
    fs_plan_opts_t o;
    fs_plan_t *plan = NULL;
    fs_error_t err = {0};
    int64_t row_bytes = 512;
    fs_plan_defaults(&o);
    o.threads = threads;
    o.budget.reserve_bytes = 0;
    fs_plan_input_t in = {.num_nodes = ds->num_nodes, .p = p, .row_bytes = row_bytes};
    if (!p || fs_hotness_degree(&ref, threads, p, &err) != FS_OK || fs_hw_preset("pcie4", &hw, &err) != FS_OK ||
        fs_hw_set_memory(&hw, (int64_t)(frac * (double)ds->num_nodes) * row_bytes, &err) != FS_OK ||
        fs_plan_build(&hw, &in, &o, &plan, &err) != FS_OK) {
        fprintf(stderr, "bench_locality: plan: %s\n", err.msg);
        exit(1);
    }
    free(p);
    return plan;
}

int main(int argc, char **argv)
{
    int scale = (int)bench_arg(argc, argv, "--scale", 21), batches = (int)bench_arg(argc, argv, "--batches", 100);
    int batch = (int)bench_arg(argc, argv, "--batch", 1024), threads = (int)bench_arg(argc, argv, "--threads", 2);
    int64_t k = bench_arg(argc, argv, "--k", FS_LAS_DEFAULT_K);
    double frac = atof(bench_str(argc, argv, "--gpu-fraction", "0.1"));
    const char *dir = bench_dataset(argc, argv, scale);
    fs_dataset_t *ds;
    fs_error_t err = {0};
    if (fs_dataset_open(dir, 0, 0, &ds, &err) != FS_OK) {
        fprintf(stderr, "bench_locality: %s\n", err.msg);
        return 1;
    }
    fs_plan_t *plan = top_rows_plan(ds, frac, threads);
    int64_t *b_rows, nb;
    if (fs_las_reader_rows(plan, 0, &b_rows, &nb, &err) != FS_OK) {
        fprintf(stderr, "bench_locality: %s\n", err.msg);
        return 1;
    }
    uint8_t *in_b = calloc((size_t)ds->num_nodes, 1);
    for (int64_t i = 0; i < nb; i++) in_b[b_rows[i]] = 1;

    fs_csr_ref_t ref = {ds->num_nodes, ds->indptr, ds->indices, ds->index_dtype, NULL};
    fs_las_opts_t lo = {.num_levels = 3, .k = k, .threads = threads};
    fs_las_sets_t *sets;
    double t0 = bench_now();
    if (fs_las_sets_build(&ref, b_rows, nb, &lo, &sets, &err) != FS_OK) {
        fprintf(stderr, "bench_locality: %s\n", err.msg);
        return 1;
    }
    double build_s = bench_now() - t0;
    printf("RESULT bench=locality_sets nodes=%lld edges=%lld gpu_rows=%lld levels=3 k=%lld threads=%d seconds=%.3f\n",
           (long long)ds->num_nodes, (long long)ds->num_edges, (long long)nb, (long long)k, threads, build_s);

    int64_t *seeds = malloc(sizeof *seeds * (size_t)batches * (size_t)batch);
    fs_rng_t r = fs_rng_make(2024, 0);
    for (int64_t i = 0; i < (int64_t)batches * batch;) {
        int64_t v = (int64_t)fs_rng_below(&r, (uint64_t)ds->num_nodes);
        if (ds->indptr[v + 1] > ds->indptr[v]) seeds[i++] = v;
    }
    volatile int64_t sink = 0; /* fault the topology in before timing */
    for (int64_t e = 0; e < ds->num_edges; e += 512) sink += fs_dataset_neighbor(ds, e);
    (void)sink;
    fprintf(stderr, "locality: %s: %lld nodes, %lld edges; B = %lld rows (%.1f%%); %d batches x %d seeds\n", dir,
            (long long)ds->num_nodes, (long long)ds->num_edges, (long long)nb,
            100.0 * (double)nb / (double)ds->num_nodes, batches, batch);

    fs_csr_view_t g;
    fs_csr_view_init(&g, ds->num_nodes, ds->indptr, ds->indices, ds->index_dtype, NULL);
    fs_sampler_t *s;
    fs_sampler_create(&s, &err);
    double svals[4] = {1, 2, 4, 8};
    run_t base = {0};
    for (int i = 0; i < 4; i++) {
        fs_locality_t loc;
        fs_las_locality(sets, svals[i], &loc);
        run(s, &g, seeds, batches < 5 ? batches : 5, batch, &loc, in_b); /* warm the workspace */
        run_t x = run(s, &g, seeds, batches, batch, &loc, in_b), again = run(s, &g, seeds, batches, batch, &loc, in_b);
        if (again.seconds < x.seconds) x.seconds = again.seconds; /* the better of two: the machine is shared */
        if (i == 0) base = x;
        double hit = x.gpu_rows / x.rows, host = (x.rows - x.gpu_rows) / batches;
        double bhit = base.gpu_rows / base.rows, bhost = (base.rows - base.gpu_rows) / batches;
        double eps = x.edges / x.seconds, beps = base.edges / base.seconds;
        printf("RESULT bench=locality s=%g fanouts=15,10,5 batches=%d batch=%d gpu_fraction=%.2f k=%lld "
               "local_hit_rate=%.4f hit_ratio_vs_s1=%.3f host_rows_per_batch=%.0f host_rows_ratio_vs_s1=%.3f "
               "edges_per_batch=%.0f edges_ratio_vs_s1=%.4f edges_per_row=%.3f edges_vs_min_fanout_deg=%.4f "
               "boosted_rows_per_batch=%.0f medges_per_s=%.2f ratio_vs_s1=%.3f\n",
               svals[i], batches, batch, frac, (long long)k, hit, hit / bhit, host, host / bhost, x.edges / batches,
               x.edges / base.edges, x.edges / x.dst_rows, x.edges / x.expected, x.boosted / batches, eps / 1e6,
               eps / beps);
        fflush(stdout);
    }
    fs_sampler_destroy(s);
    fs_las_sets_free(sets);
    fs_plan_free(plan);
    free(seeds), free(in_b), free(b_rows);
    fs_dataset_close(ds);
    return 0;
}
