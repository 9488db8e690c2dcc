/* test_sample.c — the sampling engine against the naive reference (bit for
 * bit, Cora and R-MAT, every mode), the block invariants, edge cases, and
 * chi-square tests of the sampling distributions. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "fs_rng.h"
#include "fs_sample.h"
#include "gen.h"
#include "test_util.h"

static char *dir;
static fs_dataset_t *cora, *rmat;
static fs_sampler_t *fast, *ref;

static void setup(void)
{
    dir = tu_mkdtemp();
    fs_error_t err = {0};
    cora = tu_import_cora(dir);
    fs_rmat_opts_t g;
    fs_rmat_defaults(&g);
    g.scale = 13, g.edge_factor = 8, g.dim = 0, g.edges.symmetrize = 1;
    rmat = tu_gen_rmat(dir, "rmat", &g);
    cr_assert_eq(fs_sampler_create(&fast, &err), FS_OK);
    cr_assert_eq(fs_sampler_create(&ref, &err), FS_OK);
}

static void teardown(void)
{
    fs_sampler_destroy(fast);
    fs_sampler_destroy(ref);
    fs_dataset_close(cora);
    fs_dataset_close(rmat);
    tu_rm_rf(dir);
    free(dir);
}

TestSuite(sample, .init = setup, .fini = teardown, .timeout = 120);

static fs_csr_view_t view_of(const fs_dataset_t *ds)
{
    fs_csr_view_t g;
    fs_csr_view_init(&g, ds->num_nodes, ds->indptr, ds->indices, ds->index_dtype, ds->edge_weights);
    return g;
}

static fs_sample_req_t req3(int f0, int f1, int f2, fs_sample_mode_t mode, uint64_t seed)
{
    fs_sample_req_t r = {.num_hops = f2 ? 3 : 2, .fanout = {f0, f1, f2}, .seed = seed, .want_edge_ids = 1};
    for (int h = 0; h < 3; h++) r.mode[h] = mode;
    return r;
}

static int64_t nbr(const fs_csr_view_t *g, int64_t pos)
{
    return g->index_dtype == FS_DTYPE_I32 ? ((const int32_t *)g->part[0].indices)[pos]
                                          : ((const int64_t *)g->part[0].indices)[pos];
}

/* Every invariant a block must hold, checked against the graph. */
static void check_result(const fs_csr_view_t *g, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
                         const fs_sample_result_t *res)
{
    /* relabelling is a bijection: nodes[] distinct, seeds map back */
    int64_t *seen = calloc((size_t)g->num_nodes, sizeof *seen);
    for (int64_t l = 0; l < res->num_nodes; l++) {
        cr_assert(res->nodes[l] >= 0 && res->nodes[l] < g->num_nodes);
        cr_assert_eq(seen[res->nodes[l]]++, 0, "global %lld has two local ids", (long long)res->nodes[l]);
    }
    int64_t max_seed_local = -1;
    for (int64_t i = 0; i < n; i++) {
        cr_assert_eq(res->nodes[res->seed_local[i]], seeds[i]);
        if (res->seed_local[i] > max_seed_local) max_seed_local = res->seed_local[i];
    }
    cr_assert_eq(res->block[0].num_dst, max_seed_local + 1, "seeds own the first local ids");
    for (int h = 0; h < req->num_hops; h++) {
        const fs_block_t *b = &res->block[h];
        if (h) cr_assert_eq(b->num_dst, res->block[h - 1].num_src, "hop %d dst = previous src", h);
        cr_assert_geq(b->num_src, b->num_dst);
        cr_assert_eq(b->dst_offsets[0], 0);
        cr_assert_eq(b->dst_offsets[b->num_dst], b->num_edges);
        for (int64_t d = 0; d < b->num_dst; d++) {
            int64_t v = res->nodes[d], deg = g->part[0].indptr[v + 1] - g->part[0].indptr[v];
            int64_t lo = b->dst_offsets[d], hi = b->dst_offsets[d + 1], k = req->fanout[h];
            int64_t want = req->mode[h] == FS_SAMPLE_UNIFORM_REPLACE ? (deg ? (k < 0 ? deg : k) : 0)
                                                                     : (k < 0 || deg < k ? deg : k);
            if (req->mode[h] <= FS_SAMPLE_UNIFORM_REPLACE)
                cr_assert_eq(hi - lo, want, "hop %d node %lld: %lld edges, want %lld", h, (long long)v,
                             (long long)(hi - lo), (long long)want);
            for (int64_t e = lo; e < hi; e++) {
                cr_assert_eq(b->edge_dst[e], d, "CSC order");
                cr_assert(b->edge_src[e] >= 0 && b->edge_src[e] < b->num_src);
                int64_t id = b->edge_ids[e];
                cr_assert(id >= g->part[0].indptr[v] && id < g->part[0].indptr[v + 1], "edge id inside the row");
                cr_assert_eq(nbr(g, id), res->nodes[b->edge_src[e]], "edge id names the sampled neighbour");
                if (req->mode[h] == FS_SAMPLE_UNIFORM || req->mode[h] == FS_SAMPLE_WEIGHTED)
                    for (int64_t f = lo; f < e; f++) cr_assert_neq(b->edge_ids[f], id, "duplicate without replacement");
            }
        }
    }
    free(seen);
}

static void compare(const fs_sample_result_t *a, const fs_sample_result_t *b)
{
    cr_assert_eq(a->num_nodes, b->num_nodes);
    cr_assert_arr_eq(a->nodes, b->nodes, sizeof(int64_t) * (size_t)a->num_nodes);
    cr_assert_arr_eq(a->seed_local, b->seed_local, sizeof(int64_t) * (size_t)a->num_seeds);
    for (int h = 0; h < a->num_hops; h++) {
        const fs_block_t *x = &a->block[h], *y = &b->block[h];
        cr_assert_eq(x->num_edges, y->num_edges, "hop %d", h);
        cr_assert_eq(x->num_dst, y->num_dst);
        cr_assert_arr_eq(x->dst_offsets, y->dst_offsets, sizeof(int64_t) * (size_t)(x->num_dst + 1));
        cr_assert_arr_eq(x->edge_src, y->edge_src, sizeof(int64_t) * (size_t)x->num_edges);
        cr_assert_arr_eq(x->edge_dst, y->edge_dst, sizeof(int64_t) * (size_t)x->num_edges);
        cr_assert_arr_eq(x->edge_ids, y->edge_ids, sizeof(int64_t) * (size_t)x->num_edges);
    }
}

static void run_both(const fs_dataset_t *ds, const int64_t *seeds, int64_t n, fs_sample_req_t req)
{
    fs_csr_view_t g = view_of(ds);
    fs_sample_result_t a, b;
    fs_error_t err = {0};
    cr_assert_eq(fs_sample_cpu(fast, &g, seeds, n, &req, &a, NULL, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_sample_reference(ref, &g, seeds, n, &req, &b, &err), FS_OK, "%s", err.msg);
    compare(&a, &b);
    check_result(&g, seeds, n, &req, &a);
}

static int64_t *seeds_of(const fs_dataset_t *ds, int64_t n, uint64_t s)
{
    int64_t *v = malloc(sizeof *v * (size_t)n);
    fs_rng_t r = fs_rng_make(s, 77);
    for (int64_t i = 0; i < n; i++) v[i] = (int64_t)fs_rng_below(&r, (uint64_t)ds->num_nodes);
    return v;
}

Test(sample, engine_equals_reference_on_cora_and_rmat)
{
    const fs_dataset_t *sets[2] = {cora, rmat};
    for (int d = 0; d < 2; d++)
        for (uint64_t s = 1; s <= 3; s++) {
            int64_t *seeds = seeds_of(sets[d], 256, s);
            run_both(sets[d], seeds, 256, req3(15, 10, 5, FS_SAMPLE_UNIFORM, s));
            run_both(sets[d], seeds, 256, req3(25, 10, 0, FS_SAMPLE_UNIFORM, s));
            run_both(sets[d], seeds, 64, req3(7, 3, 2, FS_SAMPLE_UNIFORM_REPLACE, s));
            run_both(sets[d], seeds, 32, req3(FS_FANOUT_ALL, 2, 0, FS_SAMPLE_UNIFORM, s));
            run_both(sets[d], seeds, 256, req3(100, 2, 0, FS_SAMPLE_UNIFORM, s)); /* large fanout path */
            free(seeds);
        }
}

Test(sample, same_request_same_result_other_seed_differs)
{
    fs_csr_view_t g = view_of(rmat);
    int64_t *seeds = seeds_of(rmat, 512, 5);
    fs_sample_req_t r = req3(10, 5, 0, FS_SAMPLE_UNIFORM, 42);
    fs_sample_result_t a, b;
    fs_sampler_t *other;
    fs_error_t err = {0};
    fs_sampler_create(&other, &err);
    cr_assert_eq(fs_sample_cpu(fast, &g, seeds, 512, &r, &a, NULL, &err), FS_OK);
    cr_assert_eq(fs_sample_cpu(other, &g, seeds, 512, &r, &b, NULL, &err), FS_OK);
    compare(&a, &b);
    int64_t edges = a.block[1].num_edges;
    r.seed = 43;
    cr_assert_eq(fs_sample_cpu(fast, &g, seeds, 512, &r, &a, NULL, &err), FS_OK);
    cr_assert(a.block[1].num_edges != edges || memcmp(a.nodes, b.nodes, 8 * 600) != 0, "seed changes the sample");
    fs_sampler_destroy(other);
    free(seeds);
}

Test(sample, edge_cases_isolated_small_degree_repeated_seeds)
{
    /* 0: isolated, 1 -> {2}, 2 -> {1,3,4}, 3 -> {2}, 4 -> {2} */
    int64_t ip[6] = {0, 0, 1, 4, 5, 6};
    int32_t ix[6] = {2, 1, 3, 4, 2, 2};
    fs_csr_view_t g;
    fs_csr_view_init(&g, 5, ip, ix, FS_DTYPE_I32, NULL);
    int64_t seeds[5] = {2, 0, 2, 1, 2};
    fs_sample_req_t r = req3(5, 5, 0, FS_SAMPLE_UNIFORM, 1);
    fs_sample_result_t res;
    fs_error_t err = {0};
    cr_assert_eq(fs_sample_cpu(fast, &g, seeds, 5, &r, &res, NULL, &err), FS_OK, "%s", err.msg);
    check_result(&g, seeds, 5, &r, &res);
    cr_assert_eq(res.block[0].num_dst, 3, "repeated seeds share a local id");
    cr_assert_eq(res.seed_local[2], 0);
    cr_assert_eq(res.seed_local[4], 0);
    cr_assert_eq(res.block[0].dst_offsets[2] - res.block[0].dst_offsets[1], 0, "isolated seed has no edges");
    cr_assert_eq(res.block[0].num_edges, 4, "degree < fanout takes every neighbour");
    cr_assert_eq(res.num_nodes, 5);
    fs_sample_result_t b;
    cr_assert_eq(fs_sample_reference(ref, &g, seeds, 5, &r, &b, &err), FS_OK);
    compare(&res, &b);
    cr_assert_eq(fs_sample_cpu(fast, &g, seeds, 0, &r, &res, NULL, &err), FS_OK, "no seeds is a valid request");
    cr_assert_eq(res.num_nodes, 0);
}

/* ---- output memory (fs_sampler_set_output) ---------------------------------- */

static int inside(const void *p, size_t bytes, const char *base, size_t cap)
{
    return (const char *)p >= base && (const char *)p + bytes <= base + cap;
}

/* How many of the result's arrays lie in [base, base + cap); *total gets
 * how many it has. */
static int arrays_inside(const fs_sample_result_t *r, const char *base, size_t cap, int *total)
{
    int in = inside(r->nodes, 8 * (size_t)r->num_nodes, base, cap) + inside(r->seed_local, 8 * (size_t)r->num_seeds, base, cap);
    *total = 2;
    for (int h = 0; h < r->num_hops; h++) {
        const fs_block_t *b = &r->block[h];
        size_t eb = 8 * (size_t)b->num_edges;
        in += inside(b->dst_offsets, 8 * (size_t)(b->num_dst + 1), base, cap) + inside(b->edge_dst, eb, base, cap) +
              inside(b->edge_src, eb, base, cap) + inside(b->edge_ids, eb, base, cap);
        *total += 4;
    }
    return in;
}

/* The engine (on `pool`, or one thread) with output memory of `cap` bytes
 * against the reference; returns how many arrays landed in it. */
static int sample_into(fs_sampler_t *s, char *mem, size_t cap, const int64_t *seeds, int64_t n, fs_sample_req_t req,
                       int *total)
{
    fs_csr_view_t g = view_of(rmat);
    fs_sample_result_t a, b;
    fs_error_t err = {0};
    if (mem) memset(mem, 0xab, cap);
    fs_sampler_set_output(s, mem, cap);
    cr_assert_eq(fs_sample_cpu(s, &g, seeds, n, &req, &a, NULL, &err), FS_OK, "%s", err.msg);
    cr_assert_leq(fs_sampler_output_used(s), cap);
    cr_assert_eq(fs_sample_reference(ref, &g, seeds, n, &req, &b, &err), FS_OK, "%s", err.msg);
    compare(&a, &b);
    check_result(&g, seeds, n, &req, &a);
    int in = arrays_inside(&a, mem, cap, total);
    if (in == *total) cr_assert_gt(fs_sampler_output_used(s), 0);
    return in;
}

Test(sample, output_memory_holds_the_result_as_far_as_it_has_room)
{
    size_t cap = 64 << 20;
    char *mem = malloc(cap);
    int64_t *seeds = seeds_of(rmat, 512, 5);
    fs_sample_req_t req = req3(15, 10, 5, FS_SAMPLE_UNIFORM, 5);
    int total, in = sample_into(fast, mem, cap, seeds, 512, req, &total);
    cr_assert_eq(in, total, "with room, every array is in the output memory (%d of %d)", in, total);
    size_t used = fs_sampler_output_used(fast);

    /* the next request was given none: the sampler's own memory, the old untouched */
    memset(mem, 0xcd, cap);
    fs_csr_view_t g = view_of(rmat);
    fs_sample_result_t r;
    fs_error_t err = {0};
    cr_assert_eq(fs_sample_cpu(fast, &g, seeds, 512, &req, &r, NULL, &err), FS_OK);
    cr_assert_eq(fs_sampler_output_used(fast), 0);
    cr_assert_eq(arrays_inside(&r, mem, cap, &total), 0, "a request given no output memory keeps out of the last one's");
    for (size_t i = 0; i < cap; i += 4093) cr_assert_eq((unsigned char)mem[i], 0xcd);

    /* a third of the room: some arrays there, the rest the sampler's, the same result */
    in = sample_into(fast, mem, used / 3, seeds, 512, req, &total);
    cr_assert(in > 0 && in < total, "%d of %d arrays in a third of the room", in, total);
    /* too little for any array, and none at all */
    cr_assert_eq(sample_into(fast, mem, 16, seeds, 512, req, &total), 0);
    cr_assert_eq(sample_into(fast, NULL, 0, seeds, 512, req, &total), 0);
    /* the reference takes it too, and a pool's chunked hops write into it */
    fs_sample_result_t b;
    fs_sampler_set_output(ref, mem, cap);
    cr_assert_eq(fs_sample_reference(ref, &g, seeds, 512, &req, &b, &err), FS_OK);
    cr_assert_eq(arrays_inside(&b, mem, cap, &total), total);
    fs_pool_t *pool;
    cr_assert_eq(fs_pool_create(4, &pool, &err), FS_OK);
    fs_sampler_set_pool(fast, pool);
    fs_sample_req_t big = req3(25, 15, 10, FS_SAMPLE_UNIFORM, 9); /* past the parallel threshold */
    cr_assert_eq(sample_into(fast, mem, cap, seeds, 512, big, &total), total);
    in = sample_into(fast, mem, fs_sampler_output_used(fast) / 2, seeds, 512, big, &total);
    cr_assert(in > 0 && in < total);
    fs_sampler_set_pool(fast, NULL);
    fs_pool_destroy(pool);
    free(seeds);
    free(mem);
}

Test(sample, bad_requests_are_clear_errors)
{
    fs_csr_view_t g = view_of(cora);
    int64_t seeds[2] = {1, 2708};
    fs_sample_req_t r = req3(5, 5, 0, FS_SAMPLE_UNIFORM, 1);
    fs_sample_result_t res;
    fs_error_t err = {0};
    cr_assert_eq(fs_sample_cpu(fast, &g, seeds, 2, &r, &res, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "seed 2708 at position 1"), "%s", err.msg);
    seeds[1] = 3;
    r.fanout[1] = 0;
    cr_assert_eq(fs_sample_cpu(fast, &g, seeds, 2, &r, &res, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "fanout[1]"), "%s", err.msg);
    r = req3(5, 5, 0, FS_SAMPLE_WEIGHTED, 1);
    cr_assert_eq(fs_sample_cpu(fast, &g, seeds, 2, &r, &res, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "no edge weights"), "%s", err.msg);
    r.num_hops = 9;
    cr_assert_eq(fs_sample_cpu(fast, &g, seeds, 2, &r, &res, NULL, &err), FS_ERR_INVALID_ARGUMENT);
}

/* Pearson chi-square of observed counts against expected ones. */
static double chi2(const double *obs, const double *exp, int k)
{
    double x = 0;
    for (int i = 0; i < k; i++) x += (obs[i] - exp[i]) * (obs[i] - exp[i]) / exp[i];
    return x;
}

/* A star: node 0 -> 1..D, with weights 1..D when weighted. */
#define D 20
static int64_t star_ip[D + 2];
static int32_t star_ix[D];
static float star_w[D];

static fs_csr_view_t star(int weighted)
{
    star_ip[0] = 0;
    for (int i = 0; i < D; i++) star_ix[i] = i + 1, star_w[i] = (float)(i + 1);
    for (int v = 1; v <= D + 1; v++) star_ip[v] = D;
    fs_csr_view_t g;
    fs_csr_view_init(&g, D + 1, star_ip, star_ix, FS_DTYPE_I32, weighted ? star_w : NULL);
    return g;
}

/* Counts how often each neighbour of node 0 is picked over `trials` seeds. */
static void tally(fs_csr_view_t *g, int fanout, fs_sample_mode_t mode, int trials, double *count)
{
    int64_t seed = 0;
    fs_sample_req_t r = {.num_hops = 1, .fanout = {fanout}, .mode = {mode}, .want_edge_ids = 1};
    fs_sample_result_t res;
    fs_error_t err = {0};
    memset(count, 0, sizeof(double) * D);
    for (int t = 0; t < trials; t++) {
        r.seed = (uint64_t)t * 7919 + 1;
        cr_assert_eq(fs_sample_cpu(fast, g, &seed, 1, &r, &res, NULL, &err), FS_OK, "%s", err.msg);
        for (int64_t e = 0; e < res.block[0].num_edges; e++) count[res.block[0].edge_ids[e]] += 1;
    }
}

/* 19 degrees of freedom: P(chi2 > 43.82) = 0.001. The RNG is seeded, so
 * the verdict is the same on every run. */
#define CHI2_19_P001 43.82

Test(sample, uniform_without_replacement_is_fanout_over_degree)
{
    fs_csr_view_t g = star(0);
    double count[D], exp[D];
    const int trials = 40000, fanouts[3] = {1, 5, 15};
    for (int f = 0; f < 3; f++) {
        tally(&g, fanouts[f], FS_SAMPLE_UNIFORM, trials, count);
        for (int i = 0; i < D; i++) exp[i] = (double)trials * fanouts[f] / D;
        double x = chi2(count, exp, D);
        cr_assert_lt(x, CHI2_19_P001, "fanout %d: chi2 %.2f", fanouts[f], x);
    }
}

Test(sample, uniform_with_replacement_is_uniform)
{
    fs_csr_view_t g = star(0);
    double count[D], exp[D];
    tally(&g, 30, FS_SAMPLE_UNIFORM_REPLACE, 20000, count);
    for (int i = 0; i < D; i++) exp[i] = 20000.0 * 30 / D;
    cr_assert_lt(chi2(count, exp, D), CHI2_19_P001);
}

Test(sample, weighted_picks_follow_weights)
{
    fs_csr_view_t g = star(1);
    double count[D], exp[D], total = D * (D + 1) / 2.0;
    tally(&g, 1, FS_SAMPLE_WEIGHTED, 40000, count); /* one pick: P = w / sum w */
    for (int i = 0; i < D; i++) exp[i] = 40000.0 * (i + 1) / total;
    double x = chi2(count, exp, D);
    cr_assert_lt(x, CHI2_19_P001, "weighted without replacement: chi2 %.2f", x);
    tally(&g, 10, FS_SAMPLE_WEIGHTED_REPLACE, 8000, count);
    for (int i = 0; i < D; i++) exp[i] = 80000.0 * (i + 1) / total;
    x = chi2(count, exp, D);
    cr_assert_lt(x, CHI2_19_P001, "weighted with replacement: chi2 %.2f", x);
    /* and the weighted modes agree with the reference */
    int64_t seeds[3] = {0, 0, 5};
    fs_sample_req_t r = {.num_hops = 2, .fanout = {4, 2}, .mode = {FS_SAMPLE_WEIGHTED, FS_SAMPLE_WEIGHTED_REPLACE},
                         .seed = 3, .want_edge_ids = 1};
    fs_sample_result_t a, b;
    fs_error_t err = {0};
    cr_assert_eq(fs_sample_cpu(fast, &g, seeds, 3, &r, &a, NULL, &err), FS_OK);
    cr_assert_eq(fs_sample_reference(ref, &g, seeds, 3, &r, &b, &err), FS_OK);
    compare(&a, &b);
    check_result(&g, seeds, 3, &r, &a);
}

Test(sample, zero_weight_edges_are_never_picked)
{
    fs_csr_view_t g = star(1);
    float w[D];
    for (int i = 0; i < D; i++) w[i] = i % 2 ? 1.0f : 0.0f;
    g.part[0].weights = w;
    double count[D];
    tally(&g, 15, FS_SAMPLE_WEIGHTED, 500, count); /* only 10 positive: at most 10 picks */
    for (int i = 0; i < D; i += 2) cr_assert_eq(count[i], 0, "zero-weight edge %d picked", i);
    for (int i = 1; i < D; i += 2) cr_assert_eq(count[i], 500);
}

/* A routed view reads a node's list (and weights) from the part that holds
 * it: a weighted request must be refused, not crash, when any part lacks
 * weights. */
Test(sample, weighted_request_on_a_routed_view_needs_weights_in_every_part)
{
    fs_csr_view_t g = star(1);
    uint64_t route[D + 1];
    for (int i = 0; i <= D; i++) route[i] = FS_ROUTE(i == 0 ? 1 : 0, i); /* the hub's list lives in part 1 */
    g.part[1] = g.part[0];
    g.part[1].weights = NULL;
    g.num_parts = 2;
    g.route = route;
    int64_t seeds[1] = {0};
    fs_sample_req_t r = {.num_hops = 1, .fanout = {3}, .mode = {FS_SAMPLE_WEIGHTED}, .seed = 1};
    fs_sample_result_t res;
    fs_error_t err = {0};
    cr_assert_eq(fs_sample_cpu(fast, &g, seeds, 1, &r, &res, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "no edge weights"), "%s", err.msg);
    r.mode[0] = FS_SAMPLE_UNIFORM; /* uniform needs no weights */
    cr_assert_eq(fs_sample_cpu(fast, &g, seeds, 1, &r, &res, NULL, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(res.block[0].num_edges, 3);
}

/* ---- the picks the CUDA kernel shares (fs_sample_pick.h) ------------------ */
#include "fs_sample_pick.h"

/* The libm-free log against libm: the weighted keys depend on it. */
Test(pick, portable_log_is_within_a_few_ulp_of_libm)
{
    fs_rng_t rng = fs_rng_make(11, 0);
    double worst = 0;
    for (int i = 0; i < 200000; i++) {
        double x = 1.0 - fs_rng_unit(&rng); /* the keys' domain, (0, 1] */
        if (i % 4 == 0) x = ldexp(x, -(int)(i % 1000)); /* and far below it */
        double want = log(x), got = fs_pick_log(x);
        double rel = want == 0 ? fabs(got) : fabs(got - want) / fabs(want);
        if (rel > worst) worst = rel;
    }
    cr_assert_lt(worst, 1e-15, "worst relative error %g", worst);
    cr_assert_eq(fs_pick_log(1.0), 0.0);
    cr_assert_float_eq(fs_pick_log(0.5), -0.69314718055994530942, 1e-16);
}

/* The GPU's sort-and-walk must land on the CPU's binary-search positions,
 * draw by draw: zero weights, one positive weight, huge spreads, k up to
 * 256, and rows where every weight is zero. */
Test(pick, weighted_replacement_walk_equals_the_cdf_search)
{
    enum { DEG = 300, K = 256 };
    float w[DEG];
    double cdf[DEG], r[K];
    int order[K];
    int64_t a[K], b[K];
    fs_rng_t gen = fs_rng_make(12, 0);
    for (int row = 0; row < 4000; row++) {
        int64_t deg = 1 + (int64_t)fs_rng_below(&gen, DEG), k = 1 + (int64_t)fs_rng_below(&gen, K);
        int shape = row % 4;
        for (int64_t p = 0; p < deg; p++) {
            double u = fs_rng_unit(&gen);
            w[p] = shape == 0 ? (float)u
                 : shape == 1 ? (u < 0.5 ? 0.0f : (float)ldexp(u, (int)fs_rng_below(&gen, 60) - 30))
                 : shape == 2 ? (p == deg / 2 ? 1.0f : 0.0f)
                              : (u < 0.9 ? 0.0f : (float)u);
        }
        fs_rng_t r1 = fs_pick_rng(99, 1, row), r2 = r1;
        int64_t na = fs_pick_weighted_replace_cdf(&r1, w, deg, k, cdf, a);
        int64_t nb = fs_pick_weighted_replace_walk(&r2, w, deg, k, r, order, b);
        cr_assert_eq(na, nb, "row %d", row);
        for (int64_t q = 0; q < na; q++) {
            cr_assert_eq(a[q], b[q], "row %d draw %lld", row, (long long)q);
            cr_assert_gt(w[a[q]], 0.0f, "row %d draw %lld picked a zero weight", row, (long long)q);
        }
    }
    float zero[3] = {0, -1, 0};
    fs_rng_t r3 = fs_pick_rng(1, 0, 0);
    cr_assert_eq(fs_pick_weighted_replace_walk(&r3, zero, 3, 5, r, order, b), 0);
}
