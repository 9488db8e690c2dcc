/* test_locality.c — locality-aware sampling (docs/algorithms.md §4): s = 1 and
 * unboosted requests bit-identical to fs_sample_cpu, block invariants of
 * boosted samples, the water-filled probabilities (sum preserved, clamping),
 * Monte-Carlo unbiasedness of the importance-weighted estimator (and that
 * the test would catch the plain weights' bias), the preferred sets on a
 * hand graph and against a naive propagation, B from a plan, Algorithm 2's
 * transitions, and bad input. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "argsort.h"
#include "dataset.h"
#include "fs_chunked.h"
#include "fs_locality.h"
#include "fs_pool.h"
#include "fs_rng.h"
#include "fs_sample.h"
#include "gen.h"
#include "hardware.h"
#include "locality.h"
#include "plan.h"
#include "test_util.h"

static char *dir;
static fs_dataset_t *rmat;
static fs_sampler_t *plain, *las;

static void setup(void)
{
    dir = tu_mkdtemp();
    fs_error_t err = {0};
    fs_rmat_opts_t g;
    fs_rmat_defaults(&g);
    g.scale = 12, g.edge_factor = 8, g.dim = 0, g.edges.symmetrize = 1;
    rmat = tu_gen_rmat(dir, "rmat", &g);
    cr_assert_eq(fs_sampler_create(&plain, &err), FS_OK);
    cr_assert_eq(fs_sampler_create(&las, &err), FS_OK);
}

static void teardown(void)
{
    fs_sampler_destroy(plain);
    fs_sampler_destroy(las);
    fs_dataset_close(rmat);
    tu_rm_rf(dir);
    free(dir);
}

TestSuite(locality, .init = setup, .fini = teardown, .timeout = 120);

/* ---- helpers ----------------------------------------------------------------- */

static fs_csr_view_t view_of(const fs_dataset_t *ds)
{
    fs_csr_view_t g;
    fs_csr_view_init(&g, ds->num_nodes, ds->indptr, ds->indices, ds->index_dtype, NULL);
    return g;
}

static fs_csr_ref_t ref_of(const fs_dataset_t *ds)
{
    return (fs_csr_ref_t){ds->num_nodes, ds->indptr, ds->indices, ds->index_dtype, NULL};
}

static int64_t nbr(const fs_csr_view_t *g, int64_t pos)
{
    return g->index_dtype == FS_DTYPE_I32 ? ((const int32_t *)g->part[0].indices)[pos]
                                          : ((const int64_t *)g->part[0].indices)[pos];
}

static fs_sample_req_t req_of(int hops, const int *fanout, uint64_t seed)
{
    fs_sample_req_t r = {.num_hops = hops, .seed = seed, .want_edge_ids = 1};
    for (int h = 0; h < hops; h++) r.fanout[h] = fanout[h], r.mode[h] = FS_SAMPLE_UNIFORM;
    return r;
}

static int64_t *random_seeds(int64_t n, int64_t num_nodes, uint64_t s)
{
    int64_t *v = malloc(sizeof *v * (size_t)n);
    fs_rng_t r = fs_rng_make(s, 91);
    for (int64_t i = 0; i < n; i++) v[i] = (int64_t)fs_rng_below(&r, (uint64_t)num_nodes);
    return v;
}

/* B = the top `frac` of nodes by degree (the plan a GPU budget would give). */
static int64_t *top_degree_rows(const fs_dataset_t *ds, double frac, int64_t *count)
{
    int64_t n = ds->num_nodes, *order = malloc(sizeof *order * (size_t)n);
    double *deg = malloc(sizeof *deg * (size_t)n);
    for (int64_t v = 0; v < n; v++) deg[v] = (double)(ds->indptr[v + 1] - ds->indptr[v]);
    fs_error_t err = {0};
    cr_assert_eq(fs_argsort_desc(deg, n, 1, order, &err), FS_OK, "%s", err.msg);
    free(deg);
    *count = (int64_t)(frac * (double)n);
    return order;
}

static fs_las_sets_t *build_sets(const fs_dataset_t *ds, const int64_t *b, int64_t nb, int levels, int64_t k,
                                 int threads)
{
    fs_csr_ref_t g = ref_of(ds);
    fs_las_opts_t o;
    fs_las_defaults(&o);
    o.num_levels = levels, o.k = k, o.threads = threads;
    fs_las_sets_t *sets;
    fs_error_t err = {0};
    cr_assert_eq(fs_las_sets_build(&g, b, nb, &o, &sets, &err), FS_OK, "%s", err.msg);
    return sets;
}

static void compare(const fs_sample_result_t *a, const fs_sample_result_t *b)
{
    cr_assert_eq(a->num_hops, b->num_hops);
    cr_assert_eq(a->num_nodes, b->num_nodes);
    cr_assert_arr_eq(a->nodes, b->nodes, sizeof(int64_t) * (size_t)a->num_nodes);
    cr_assert_eq(a->num_seeds, b->num_seeds);
    cr_assert_arr_eq(a->seed_local, b->seed_local, sizeof(int64_t) * (size_t)a->num_seeds);
    for (int h = 0; h < a->num_hops; h++) {
        const fs_block_t *x = &a->block[h], *y = &b->block[h];
        cr_assert_eq(x->num_edges, y->num_edges, "hop %d", h);
        cr_assert_eq(x->num_dst, y->num_dst);
        cr_assert_eq(x->num_src, y->num_src);
        cr_assert_arr_eq(x->dst_offsets, y->dst_offsets, sizeof(int64_t) * (size_t)(x->num_dst + 1));
        cr_assert_arr_eq(x->edge_src, y->edge_src, sizeof(int64_t) * (size_t)x->num_edges);
        cr_assert_arr_eq(x->edge_dst, y->edge_dst, sizeof(int64_t) * (size_t)x->num_edges);
        cr_assert_arr_eq(x->edge_ids, y->edge_ids, sizeof(int64_t) * (size_t)x->num_edges);
    }
}

/* Plain rows weigh deg / min(fanout, deg) — what s = 1 must return. */
static void check_plain_weights(const fs_csr_view_t *g, const fs_sample_req_t *req, const fs_sample_result_t *res,
                                const fs_las_weights_t *w)
{
    cr_assert_eq(w->num_hops, req->num_hops);
    for (int h = 0; h < req->num_hops; h++) {
        const fs_block_t *b = &res->block[h];
        for (int64_t d = 0; d < b->num_dst; d++) {
            int64_t v = res->nodes[d], deg = g->part[0].indptr[v + 1] - g->part[0].indptr[v];
            int64_t k = req->fanout[h] < 0 || req->fanout[h] > deg ? deg : req->fanout[h];
            for (int64_t e = b->dst_offsets[d]; e < b->dst_offsets[d + 1]; e++)
                cr_assert_float_eq(w->weight[h][e], (float)((double)deg / (double)k), 1e-6,
                                   "hop %d node %lld: weight %g", h, (long long)v, (double)w->weight[h][e]);
        }
    }
}

/* Block invariants of a boosted sample, and its weights: 1/q of the row's
 * class (plain rows: deg / k), never below 1. */
static void check_boosted(const fs_csr_view_t *g, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
                          const fs_locality_t *loc, const fs_sample_result_t *res, const fs_las_weights_t *w)
{
    for (int64_t i = 0; i < n; i++) cr_assert_eq(res->nodes[res->seed_local[i]], seeds[i]);
    for (int h = 0; h < req->num_hops; h++) {
        const fs_block_t *b = &res->block[h];
        const uint64_t *pref = loc->pref[fs_las_level(h, req->num_hops) - 1];
        if (h) cr_assert_eq(b->num_dst, res->block[h - 1].num_src);
        cr_assert_eq(b->dst_offsets[b->num_dst], b->num_edges);
        for (int64_t d = 0; d < b->num_dst; d++) {
            int64_t v = res->nodes[d], lo = g->part[0].indptr[v], deg = g->part[0].indptr[v + 1] - lo;
            int64_t k = req->fanout[h] < 0 || req->fanout[h] > deg ? deg : req->fanout[h], m = 0;
            for (int64_t p = 0; p < deg; p++) m += fs_las_bit(pref, nbr(g, lo + p));
            double qp, qo;
            fs_las_uniform_probs(deg, m, k, loc->s, &qp, &qo);
            int boosted = deg > k && m > 0 && m < deg;
            int64_t lo_e = b->dst_offsets[d], hi_e = b->dst_offsets[d + 1];
            if (!boosted) cr_assert_eq(hi_e - lo_e, k, "plain rows take min(fanout, deg)");
            for (int64_t e = lo_e; e < hi_e; e++) {
                cr_assert_eq(b->edge_dst[e], d, "CSC order");
                int64_t id = b->edge_ids[e];
                cr_assert(id >= lo && id < lo + deg, "edge id inside the row");
                cr_assert_eq(nbr(g, id), res->nodes[b->edge_src[e]], "edge id names the sampled neighbour");
                if (boosted && e > lo_e) cr_assert_gt(id, b->edge_ids[e - 1], "Poisson picks in row order");
                for (int64_t f = lo_e; !boosted && f < e; f++) cr_assert_neq(b->edge_ids[f], id, "distinct");
                double want = !boosted ? (double)deg / (double)k : 1 / (fs_las_bit(pref, nbr(g, id)) ? qp : qo);
                cr_assert_float_eq(w->weight[h][e], (float)want, 1e-6 * want, "hop %d node %lld", h, (long long)v);
            }
        }
    }
}

static const int fan_a[3] = {15, 10, 5}, fan_b[2] = {25, 10}, fan_c[2] = {FS_FANOUT_ALL, 3}, fan_d[2] = {100, 2};

/* ---- s = 1 and unboosted requests are the plain sampler ---------------------------- */

Test(locality, s1_is_bit_identical_to_the_plain_sampler)
{
    fs_csr_view_t g = view_of(rmat);
    int64_t nb;
    int64_t *b = top_degree_rows(rmat, 0.1, &nb);
    fs_las_sets_t *sets = build_sets(rmat, b, nb, 3, 256, 2);
    fs_locality_t loc;
    fs_las_locality(sets, 1.0, &loc);
    const int *fans[4] = {fan_a, fan_b, fan_c, fan_d};
    int hops[4] = {3, 2, 2, 2};
    for (uint64_t s = 1; s <= 4; s++)
        for (int f = 0; f < 4; f++) {
            int64_t *seeds = random_seeds(300, rmat->num_nodes, s);
            fs_sample_req_t req = req_of(hops[f], fans[f], s * 7);
            fs_sample_result_t a, x;
            fs_las_weights_t w;
            fs_gather_counters_t ca = {0}, cx = {0};
            fs_error_t err = {0};
            cr_assert_eq(fs_sample_cpu(plain, &g, seeds, 300, &req, &a, &ca, &err), FS_OK, "%s", err.msg);
            cr_assert_eq(fs_sample_locality_cpu(las, &g, seeds, 300, &req, &loc, &x, &w, &cx, &err), FS_OK, "%s",
                         err.msg);
            compare(&a, &x);
            cr_assert_arr_eq(&ca, &cx, sizeof ca, "same topology counters");
            check_plain_weights(&g, &req, &x, &w);
            for (int h = 0; h < req.num_hops; h++) cr_assert_eq(w.boosted_rows[h], 0);
            free(seeds);
        }
    fs_las_sets_free(sets);
    free(b);
}

Test(locality, boosted_engine_without_preferred_rows_equals_the_plain_sampler)
{
    /* s = 4 but nothing preferred: the boosted engine's own hop loop, id map
     * and Floyd picks must reproduce fs_sample_cpu bit for bit. */
    fs_csr_view_t g = view_of(rmat);
    fs_las_sets_t *empty = build_sets(rmat, NULL, 0, 3, 64, 1);
    fs_locality_t loc;
    fs_las_locality(empty, 4.0, &loc);
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            for (int l = 0; l < 3; l++) loc.count[l] = NULL; /* no counts: every row is scanned */
        for (uint64_t s = 1; s <= 3; s++) {
            int64_t *seeds = random_seeds(500, rmat->num_nodes, s + 10);
            fs_sample_req_t req = req_of(3, fan_a, s);
            fs_sample_result_t a, x;
            fs_las_weights_t w;
            fs_error_t err = {0};
            cr_assert_eq(fs_sample_cpu(plain, &g, seeds, 500, &req, &a, NULL, &err), FS_OK, "%s", err.msg);
            cr_assert_eq(fs_sample_locality_cpu(las, &g, seeds, 500, &req, &loc, &x, &w, NULL, &err), FS_OK, "%s",
                         err.msg);
            compare(&a, &x);
            check_plain_weights(&g, &req, &x, &w);
            free(seeds);
        }
    }
    fs_las_sets_free(empty);
}

/* ---- boosted samples ------------------------------------------------------------- */

Test(locality, boosted_samples_are_valid_deterministic_and_local)
{
    fs_csr_view_t g = view_of(rmat);
    int64_t nb;
    int64_t *b = top_degree_rows(rmat, 0.1, &nb);
    fs_las_sets_t *sets = build_sets(rmat, b, nb, 3, 256, 2);
    uint8_t *in_b = calloc((size_t)rmat->num_nodes, 1);
    for (int64_t i = 0; i < nb; i++) in_b[b[i]] = 1;
    double hit[3] = {0}, gathered[3] = {0}, ehit[3] = {0}, edges[3] = {0}, boosted = 0;
    double svals[3] = {1, 4, 8};
    fs_sampler_t *other;
    fs_error_t err = {0};
    cr_assert_eq(fs_sampler_create(&other, &err), FS_OK);
    for (int si = 0; si < 3; si++) {
        fs_locality_t loc;
        fs_las_locality(sets, svals[si], &loc);
        for (uint64_t s = 1; s <= 20; s++) {
            int64_t *seeds = random_seeds(256, rmat->num_nodes, s + 100);
            fs_sample_req_t req = req_of(3, fan_a, s);
            fs_sample_result_t x, y;
            fs_las_weights_t w, w2;
            cr_assert_eq(fs_sample_locality_cpu(las, &g, seeds, 256, &req, &loc, &x, &w, NULL, &err), FS_OK, "%s",
                         err.msg);
            if (svals[si] > 1) {
                check_boosted(&g, seeds, 256, &req, &loc, &x, &w);
                for (int h = 0; h < 3; h++) boosted += (double)w.boosted_rows[h];
                if (s <= 3) { /* same request, another sampler: the same sample and weights */
                    cr_assert_eq(fs_sample_locality_cpu(other, &g, seeds, 256, &req, &loc, &y, &w2, NULL, &err),
                                 FS_OK);
                    compare(&x, &y);
                    for (int h = 0; h < 3; h++)
                        cr_assert_arr_eq(w.weight[h], w2.weight[h], sizeof(float) * (size_t)x.block[h].num_edges);
                }
            }
            /* every row the batch gathers (all local ids), and the last hop's edges */
            for (int64_t l = 0; l < x.num_nodes; l++) hit[si] += in_b[x.nodes[l]];
            gathered[si] += (double)x.num_nodes;
            for (int64_t e = 0; e < x.block[2].num_edges; e++) ehit[si] += in_b[x.nodes[x.block[2].edge_src[e]]];
            edges[si] += (double)x.block[2].num_edges;
            free(seeds);
        }
    }
    cr_assert_gt(boosted, 0, "some rows were boosted");
    double r1 = hit[0] / gathered[0], r4 = hit[1] / gathered[1], r8 = hit[2] / gathered[2];
    cr_log_info("gathered rows in B: s=1 %.3f, s=4 %.3f, s=8 %.3f; last-hop edges into B: %.3f, %.3f, %.3f", r1, r4,
                r8, ehit[0] / edges[0], ehit[1] / edges[1], ehit[2] / edges[2]);
    cr_assert_gt(r4, r1 + 0.05, "s = 4 brings more GPU rows (%.3f vs %.3f)", r4, r1);
    cr_assert_gt(r8, r4, "s = 8 more still (%.3f vs %.3f)", r8, r4);
    fs_sampler_destroy(other);
    fs_las_sets_free(sets);
    free(in_b), free(b);
}

/* The count arrays only save the scan: with or without them, and with a
 * saturated count, the same sample. */
Test(locality, counts_and_scans_give_the_same_sample)
{
    fs_csr_view_t g = view_of(rmat);
    int64_t nb;
    int64_t *b = top_degree_rows(rmat, 0.1, &nb);
    fs_las_sets_t *sets = build_sets(rmat, b, nb, 3, 256, 2);
    fs_locality_t with, without;
    fs_las_locality(sets, 4, &with);
    fs_las_locality(sets, 4, &without);
    for (int l = 0; l < 3; l++) without.count[l] = NULL;
    fs_sampler_t *other;
    fs_error_t err = {0};
    cr_assert_eq(fs_sampler_create(&other, &err), FS_OK);
    for (uint64_t s = 1; s <= 5; s++) {
        int64_t *seeds = random_seeds(400, rmat->num_nodes, s + 50);
        fs_sample_req_t req = req_of(3, fan_a, s);
        fs_sample_result_t x, y;
        fs_las_weights_t wx, wy;
        cr_assert_eq(fs_sample_locality_cpu(las, &g, seeds, 400, &req, &with, &x, &wx, NULL, &err), FS_OK, "%s",
                     err.msg);
        cr_assert_eq(fs_sample_locality_cpu(other, &g, seeds, 400, &req, &without, &y, &wy, NULL, &err), FS_OK);
        compare(&x, &y);
        for (int h = 0; h < 3; h++) {
            cr_assert_arr_eq(wx.weight[h], wy.weight[h], sizeof(float) * (size_t)x.block[h].num_edges);
            cr_assert_eq(wx.boosted_rows[h], wy.boosted_rows[h]);
        }
        free(seeds);
    }
    fs_las_sets_free(sets);
    free(b);

    /* a hub with more preferred neighbours than a count can hold */
    enum { LEAVES = 70000, PREF = 66000 };
    int64_t *ip = malloc(sizeof *ip * (LEAVES + 2)), *bl = malloc(sizeof *bl * PREF);
    int32_t *ix = malloc(sizeof *ix * LEAVES);
    ip[0] = 0;
    for (int64_t v = 1; v <= LEAVES + 1; v++) ip[v] = LEAVES;
    for (int64_t j = 0; j < LEAVES; j++) ix[j] = (int32_t)(j + 1);
    for (int64_t j = 0; j < PREF; j++) bl[j] = j + 1;
    fs_csr_ref_t ref = {LEAVES + 1, ip, ix, FS_DTYPE_I32, NULL};
    fs_las_opts_t o = {.num_levels = 1, .k = 8, .threads = 2};
    cr_assert_eq(fs_las_sets_build(&ref, bl, PREF, &o, &sets, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(sets->count[0][0], FS_LAS_COUNT_SAT, "saturated");
    cr_assert_eq(sets->size[0], PREF);
    fs_csr_view_init(&g, LEAVES + 1, ip, ix, FS_DTYPE_I32, NULL);
    fs_las_locality(sets, 2, &with);
    fs_las_locality(sets, 2, &without);
    without.count[0] = NULL;
    int64_t hub = 0;
    double prefs = 0, edges = 0;
    for (uint64_t s = 1; s <= 200; s++) {
        int fan[1] = {10};
        fs_sample_req_t req = req_of(1, fan, s);
        fs_sample_result_t x, y;
        fs_las_weights_t wx, wy;
        cr_assert_eq(fs_sample_locality_cpu(las, &g, &hub, 1, &req, &with, &x, &wx, NULL, &err), FS_OK, "%s", err.msg);
        cr_assert_eq(wx.boosted_rows[0], 1);
        cr_assert_eq(fs_sample_locality_cpu(plain, &g, &hub, 1, &req, &without, &y, &wy, NULL, &err), FS_OK);
        compare(&x, &y);
        for (int64_t e = 0; e < x.block[0].num_edges; e++) prefs += x.nodes[x.block[0].edge_src[e]] <= PREF;
        edges += (double)x.block[0].num_edges;
    }
    double qp, qo;
    fs_las_uniform_probs(LEAVES, PREF, 10, 2, &qp, &qo);
    cr_assert(fabs(edges / 200 - 10) < 1.0, "%g edges per sample, 10 expected", edges / 200);
    cr_assert(fabs(prefs / edges - qp * PREF / 10) < 0.02, "share of preferred picks %g, expected %g",
              prefs / edges, qp * PREF / 10);
    fs_sampler_destroy(other);
    fs_las_sets_free(sets);
    free(ip), free(ix), free(bl);
}

/* A routed view (even nodes' lists in a second part, as a placed store
 * serves them) samples exactly like the plain CSR, and the topology
 * counters split by part. */
Test(locality, routed_views_sample_the_same)
{
    fs_csr_view_t g = view_of(rmat), routed = g;
    int64_t n = rmat->num_nodes, nb;
    cr_assert_eq(rmat->index_dtype, FS_DTYPE_I32, "the copy below is int32 like the dataset");
    int64_t *ip1 = malloc(sizeof *ip1 * (size_t)(n / 2 + 2));
    int32_t *ix1 = malloc(sizeof *ix1 * (size_t)rmat->num_edges);
    uint64_t *route = malloc(sizeof *route * (size_t)n);
    int64_t rows = 0;
    ip1[0] = 0;
    for (int64_t v = 0; v < n; v++) {
        if (v % 2) {
            route[v] = FS_ROUTE(0, v);
            continue;
        }
        for (int64_t e = rmat->indptr[v]; e < rmat->indptr[v + 1]; e++)
            ix1[ip1[rows] + e - rmat->indptr[v]] = (int32_t)nbr(&g, e);
        ip1[rows + 1] = ip1[rows] + rmat->indptr[v + 1] - rmat->indptr[v];
        route[v] = FS_ROUTE(1, rows++);
    }
    routed.num_parts = 2;
    routed.part[1] = (fs_csr_part_t){.indptr = ip1, .indices = ix1, .rows = rows};
    routed.route = route;
    int64_t *b = top_degree_rows(rmat, 0.1, &nb);
    fs_las_sets_t *sets = build_sets(rmat, b, nb, 3, 256, 2);
    fs_locality_t loc;
    fs_las_locality(sets, 4, &loc);
    int64_t *seeds = random_seeds(300, n, 3);
    fs_sample_req_t req = req_of(3, fan_a, 3);
    fs_sample_result_t x, y;
    fs_las_weights_t wx, wy;
    fs_gather_counters_t cx = {0}, cy = {0};
    fs_error_t err = {0};
    cr_assert_eq(fs_sample_locality_cpu(plain, &g, seeds, 300, &req, &loc, &x, &wx, &cx, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_sample_locality_cpu(las, &routed, seeds, 300, &req, &loc, &y, &wy, &cy, &err), FS_OK, "%s",
                 err.msg);
    compare(&x, &y);
    for (int h = 0; h < 3; h++)
        cr_assert_arr_eq(wx.weight[h], wy.weight[h], sizeof(float) * (size_t)x.block[h].num_edges);
    cr_assert_eq(cx.rows[0], cy.rows[0] + cy.rows[1], "every list read once, from one part or the other");
    cr_assert_eq(cx.bytes[0], cy.bytes[0] + cy.bytes[1]);
    cr_assert_gt(cy.rows[1], 0);
    cr_assert_gt(cy.rows[0], 0);
    fs_las_sets_free(sets);
    free(seeds), free(b), free(ip1), free(ix1), free(route);
}

/* Boosted requests split over a pool (fs_chunked.h) are bit for bit the
 * one-thread ones: blocks, ids, weights, counters and boosted rows, at 2,
 * 3 and 8 threads, with the default threshold (hops switching to the pool
 * mid-request) and with every hop on the pool; routed views too. */
Test(locality, boosted_samples_are_bit_identical_at_any_thread_count)
{
    fs_csr_view_t g = view_of(rmat);
    int64_t nb;
    int64_t *b = top_degree_rows(rmat, 0.1, &nb);
    fs_las_sets_t *sets = build_sets(rmat, b, nb, 3, 256, 2);
    static const int threads[3] = {2, 3, 8};
    const int *fans[3] = {fan_a, fan_b, fan_d};
    fs_sampler_t *par;
    fs_error_t err = {0};
    cr_assert_eq(fs_sampler_create(&par, &err), FS_OK);
    for (int t = 0; t < 3; t++) {
        fs_pool_t *pool;
        cr_assert_eq(fs_pool_create(threads[t], &pool, &err), FS_OK);
        fs_sampler_set_pool(par, pool);
        for (int f = 0; f < 3; f++)
            for (int every = 0; every < 2; every++) {
                fs_locality_t loc;
                fs_las_locality(sets, 4 + f, &loc);
                int64_t n = f == 2 ? 300 : 1200;
                int64_t *seeds = random_seeds(n, rmat->num_nodes, (uint64_t)(7 + f));
                fs_sample_req_t req = req_of(f == 0 ? 3 : 2, fans[f], 5 + (uint64_t)f);
                fs_sample_result_t x, y;
                fs_las_weights_t wx, wy;
                fs_gather_counters_t cx = {0}, cy = {0};
                fs_chunk_parallel_min = FS_CHUNK_PARALLEL_MIN;
                cr_assert_eq(fs_sample_locality_cpu(las, &g, seeds, n, &req, &loc, &x, &wx, &cx, &err), FS_OK, "%s",
                             err.msg);
                fs_chunk_parallel_min = every ? 1 : FS_CHUNK_PARALLEL_MIN;
                cr_assert_eq(fs_sample_locality_cpu(par, &g, seeds, n, &req, &loc, &y, &wy, &cy, &err), FS_OK, "%s",
                             err.msg);
                compare(&x, &y);
                for (int h = 0; h < req.num_hops; h++) {
                    cr_assert_arr_eq(wx.weight[h], wy.weight[h], sizeof(float) * (size_t)x.block[h].num_edges,
                                     "%d threads, fanouts %d, hop %d: weights", threads[t], f, h);
                    cr_assert_eq(wx.boosted_rows[h], wy.boosted_rows[h]);
                }
                cr_assert_arr_eq(&cx, &cy, sizeof cx, "%d threads: topology counters", threads[t]);
                free(seeds);
            }
        fs_sampler_set_pool(par, NULL);
        fs_pool_destroy(pool);
    }
    fs_chunk_parallel_min = FS_CHUNK_PARALLEL_MIN;
    fs_sampler_destroy(par);
    fs_las_sets_free(sets);
    free(b);
}

Test(locality, int64_indices_sample_the_same)
{
    fs_csr_view_t g = view_of(rmat), wide;
    int64_t *ix = malloc(sizeof *ix * (size_t)rmat->num_edges), nb;
    for (int64_t e = 0; e < rmat->num_edges; e++) ix[e] = nbr(&g, e);
    fs_csr_view_init(&wide, rmat->num_nodes, rmat->indptr, ix, FS_DTYPE_I64, NULL);
    int64_t *b = top_degree_rows(rmat, 0.1, &nb);
    fs_las_sets_t *sets = build_sets(rmat, b, nb, 2, 128, 1);
    fs_locality_t loc;
    fs_las_locality(sets, 8, &loc);
    int64_t *seeds = random_seeds(300, rmat->num_nodes, 4);
    fs_sample_req_t req = req_of(2, fan_b, 4);
    fs_sample_result_t x, y;
    fs_las_weights_t wx, wy;
    fs_error_t err = {0};
    cr_assert_eq(fs_sample_locality_cpu(plain, &g, seeds, 300, &req, &loc, &x, &wx, NULL, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_sample_locality_cpu(las, &wide, seeds, 300, &req, &loc, &y, &wy, NULL, &err), FS_OK, "%s", err.msg);
    compare(&x, &y);
    for (int h = 0; h < 2; h++)
        cr_assert_arr_eq(wx.weight[h], wy.weight[h], sizeof(float) * (size_t)x.block[h].num_edges);
    cr_assert_gt(wy.boosted_rows[0] + wy.boosted_rows[1], 0);
    fs_las_sets_free(sets);
    free(seeds), free(b), free(ix);
}

/* ---- probabilities ------------------------------------------------------------------ */

Test(locality, rescale_preserves_the_sum_and_ratios_with_clamping)
{
    enum { MAXN = 200 };
    double q[MAXN], qn[MAXN], svals[5] = {1, 1.5, 2, 8, 1000};
    uint8_t pref[MAXN];
    fs_rng_t r = fs_rng_make(5, 5);
    int clamped_rows = 0;
    fs_error_t err = {0};
    for (int row = 0; row < 2000; row++) {
        int64_t n = 1 + (int64_t)fs_rng_below(&r, MAXN);
        double s = svals[row % 5], sum = 0, sum_new = 0;
        for (int64_t j = 0; j < n; j++) {
            q[j] = row % 3 == 0 ? 0.5 : fs_rng_unit(&r); /* equal q (the uniform sampler) or arbitrary */
            pref[j] = fs_rng_below(&r, 4) == 0;
            sum += q[j];
        }
        cr_assert_eq(fs_las_rescale(q, pref, n, s, qn, &err), FS_OK, "%s", err.msg);
        int clamped = 0;
        double ratio = -1;
        for (int64_t j = 0; j < n; j++) {
            cr_assert(qn[j] >= 0 && qn[j] <= 1, "q_new[%lld] = %g", (long long)j, qn[j]);
            sum_new += qn[j];
            if (qn[j] == 1 && q[j] < 1) clamped = 1;
            if (qn[j] < 1 && q[j] > 0) { /* unclamped: q_new / (w q) is one constant c */
                double c = qn[j] / ((pref[j] ? s : 1) * q[j]);
                if (ratio < 0) ratio = c;
                cr_assert_float_eq(c, ratio, 1e-12 * ratio, "row %d: ratios preserved", row);
                if (pref[j]) cr_assert_geq(qn[j], q[j] * (1 - 1e-12), "preferred never lose probability");
            }
        }
        cr_assert_float_eq(sum_new, sum, 1e-9 * sum, "row %d (n %lld, s %g): %.17g vs %.17g", row, (long long)n, s,
                           sum_new, sum);
        clamped_rows += clamped;
        if (s == 1)
            for (int64_t j = 0; j < n; j++) cr_assert_float_eq(qn[j], q[j], 1e-15, "s = 1 changes nothing");
    }
    cr_assert_gt(clamped_rows, 100, "clamping was exercised (%d rows)", clamped_rows);
}

Test(locality, uniform_probs_closed_form_and_clamping)
{
    double qp, qo;
    /* deg 40, 8 preferred, fanout 10, s 2: c = 10 / (2*8*.25 + 32*.25) = 5/6 */
    fs_las_uniform_probs(40, 8, 10, 2, &qp, &qo);
    cr_assert_float_eq(qp, 2 * 0.25 * 10 / 12.0, 1e-15);
    cr_assert_float_eq(qo, 0.25 * 10 / 12.0, 1e-15);
    /* deg 10, 2 preferred, fanout 5, s 8: 8*.5*5/12 > 1 clamps; the rest share 3 */
    fs_las_uniform_probs(10, 2, 5, 8, &qp, &qo);
    cr_assert_float_eq(qp, 1.0, 1e-15);
    cr_assert_float_eq(qo, 3.0 / 8, 1e-15);
    /* the §4 normaliser: M = (Σ_Q s q + Σ_rest q) / Σ q, q_new = s q / M */
    for (int64_t deg = 2; deg <= 60; deg += 3)
        for (int64_t m = 0; m <= deg; m++)
            for (int64_t k = 1; k <= deg + 2; k += 4)
                for (double s = 1; s <= 16; s *= 2) {
                    fs_las_uniform_probs(deg, m, k, s, &qp, &qo);
                    double q = (double)(k < deg ? k : deg) / (double)deg;
                    double M = (s * q * (double)m + q * (double)(deg - m)) / (q * (double)deg);
                    if (s * q / M <= 1) {
                        if (m > 0) cr_assert_float_eq(qp, s * q / M, 1e-12);
                        if (m < deg) cr_assert_float_eq(qo, q / M, 1e-12);
                    } else {
                        cr_assert_float_eq(qp, 1.0, 1e-12, "clamped: deg %lld m %lld k %lld s %g: %.17g",
                                           (long long)deg, (long long)m, (long long)k, s, qp);
                    }
                    double total = (double)m * qp + (double)(deg - m) * qo, want = q * (double)deg;
                    cr_assert_float_eq(total, want, 1e-9 * want, "deg %lld m %lld k %lld s %g", (long long)deg,
                                       (long long)m, (long long)k, s);
                    /* and the general water-filling agrees */
                    double qq[64], qn[64];
                    uint8_t pf[64];
                    for (int64_t j = 0; j < deg; j++) qq[j] = q, pf[j] = j < m;
                    fs_error_t err = {0};
                    cr_assert_eq(fs_las_rescale(qq, pf, deg, s, qn, &err), FS_OK);
                    if (m > 0) cr_assert_float_eq(qn[0], qp, 1e-12);
                    if (m < deg) cr_assert_float_eq(qn[deg - 1], qo, 1e-12);
                }
}

/* ---- Monte-Carlo unbiasedness -------------------------------------------------------- */

/* A star: node 0 -> 1..deg, the first `m` leaves preferred; leaf j carries
 * x_j, large on preferred leaves so a boost without the right weights is
 * visibly biased. */
typedef struct {
    int64_t indptr[66];
    int32_t indices[64];
    uint64_t pref[2];
    double x[66];
    int64_t deg, m;
} star_t;

static void star_init(star_t *st, int64_t deg, int64_t m)
{
    memset(st, 0, sizeof *st);
    st->deg = deg, st->m = m;
    for (int64_t j = 0; j < deg; j++) st->indices[j] = (int32_t)(j + 1);
    st->indptr[0] = 0;
    for (int64_t v = 1; v <= deg + 1; v++) st->indptr[v] = deg;
    for (int64_t j = 1; j <= deg; j++) {
        int pref = j <= m;
        if (pref) st->pref[j >> 6] |= 1ULL << (j & 63);
        st->x[j] = pref ? 10.0 + (double)j : 0.1 * (double)j;
    }
}

typedef struct {
    double mean, se, biased_mean, biased_se, pref_per_sample;
} mc_t;

/* R requests of one hop from node 0; the estimator (1/deg) Σ x_j w_j, and
 * for contrast the same samples weighted as if plain (deg / k). */
static mc_t monte_carlo(const star_t *st, int fanout, double s, int R)
{
    fs_csr_view_t g;
    fs_csr_view_init(&g, st->deg + 1, st->indptr, st->indices, FS_DTYPE_I32, NULL);
    fs_locality_t loc = {.s = s, .num_levels = 1, .num_nodes = st->deg + 1, .pref = {st->pref}};
    int64_t seed = 0, k = fanout < st->deg ? fanout : st->deg;
    double sum = 0, sum2 = 0, bsum = 0, bsum2 = 0, prefs = 0;
    for (int r = 0; r < R; r++) {
        int fan[1] = {fanout};
        fs_sample_req_t req = req_of(1, fan, (uint64_t)r * 2654435761ULL + 17);
        fs_sample_result_t res;
        fs_las_weights_t w;
        fs_error_t err = {0};
        cr_assert_eq(fs_sample_locality_cpu(las, &g, &seed, 1, &req, &loc, &res, &w, NULL, &err), FS_OK, "%s",
                     err.msg);
        double y = 0, yb = 0;
        for (int64_t e = 0; e < res.block[0].num_edges; e++) {
            int64_t j = res.nodes[res.block[0].edge_src[e]];
            y += st->x[j] * w.weight[0][e];
            yb += st->x[j] * (double)st->deg / (double)k;
            prefs += j <= st->m;
        }
        y /= (double)st->deg, yb /= (double)st->deg;
        sum += y, sum2 += y * y, bsum += yb, bsum2 += yb * yb;
    }
    mc_t out;
    out.mean = sum / R;
    out.se = sqrt((sum2 / R - out.mean * out.mean) / (R - 1));
    out.biased_mean = bsum / R;
    out.biased_se = sqrt((bsum2 / R - out.biased_mean * out.biased_mean) / (R - 1));
    out.pref_per_sample = prefs / R;
    return out;
}

static double star_mean(const star_t *st)
{
    double m = 0;
    for (int64_t j = 1; j <= st->deg; j++) m += st->x[j];
    return m / (double)st->deg;
}

Test(locality, weighted_estimator_is_unbiased_and_the_boost_is_real)
{
    enum { R = 20000 };
    star_t st;
    /* deg 40, 8 preferred, fanout 10 (no clamping); deg 10, 2 preferred,
     * fanout 5 (preferred clamp to 1 for s >= 4) */
    int64_t degs[2] = {40, 10}, ms[2] = {8, 2};
    int fans[2] = {10, 5};
    for (int c = 0; c < 2; c++) {
        star_init(&st, degs[c], ms[c]);
        double mu = star_mean(&st), plain_pref = (double)ms[c] * fans[c] / (double)degs[c];
        mc_t base = monte_carlo(&st, fans[c], 1, R);
        cr_assert(fabs(base.mean - mu) < 5 * base.se, "s = 1: %g vs %g (se %g)", base.mean, mu, base.se);
        cr_assert(fabs(base.pref_per_sample - plain_pref) < 0.05 * plain_pref, "plain picks %g preferred, want %g",
                  base.pref_per_sample, plain_pref);
        double svals[3] = {2, 4, 8};
        for (int i = 0; i < 3; i++) {
            mc_t r = monte_carlo(&st, fans[c], svals[i], R);
            cr_log_info("deg %lld s %g: estimate %.4f +- %.4f (true %.4f), plain-weighted %.4f, %.2f preferred "
                        "per sample (plain %.2f)", (long long)degs[c], svals[i], r.mean, r.se, mu, r.biased_mean,
                        r.pref_per_sample, plain_pref);
            cr_assert(fabs(r.mean - mu) < 5 * r.se, "s = %g: estimate %g vs mean %g (se %g)", svals[i], r.mean, mu,
                      r.se);
            /* the boost is real: more preferred picks, and the plain weights would be biased */
            cr_assert_gt(r.pref_per_sample, plain_pref * 1.3, "s = %g: %g preferred picks vs plain %g", svals[i],
                         r.pref_per_sample, plain_pref);
            cr_assert(fabs(r.biased_mean - mu) > 5 * r.biased_se, "s = %g: plain weights should be biased",
                      svals[i]);
            double qp, qo;
            fs_las_uniform_probs(degs[c], ms[c], fans[c], svals[i], &qp, &qo);
            double want = qp * (double)ms[c];
            cr_assert(fabs(r.pref_per_sample - want) < 0.03 * want + 0.01, "s = %g: %g preferred, expected %g",
                      svals[i], r.pref_per_sample, want);
        }
    }
}

/* ---- preferred sets --------------------------------------------------------------------- */

/* 0 -> {1,2}, 1 -> {0,2,3}, 2 -> {1,3,4,5}, 3 -> {2}, 4 -> {2,5}, 5 -> {4}; B = {3, 5}.
 * v1 = [0,0,0,1,0,1]; v2 = [0,1,2,0,1,0]; v3 = [3,2,2,2,2,1]. */
static const int64_t hand_ip[7] = {0, 2, 5, 9, 10, 12, 13};
static const int32_t hand_ix32[13] = {1, 2, 0, 2, 3, 1, 3, 4, 5, 2, 2, 5, 4};
static const int64_t hand_ix64[13] = {1, 2, 0, 2, 3, 1, 3, 4, 5, 2, 2, 5, 4};

static uint64_t bits_of(const uint64_t *bm)
{
    return bm[0];
}

Test(locality, preferred_sets_on_a_hand_graph)
{
    int64_t b[3] = {5, 3, 5}; /* duplicates count once */
    for (int wide = 0; wide < 2; wide++)
        for (int threads = 1; threads <= 2; threads++) {
            fs_csr_ref_t g = {6, hand_ip, wide ? (const void *)hand_ix64 : (const void *)hand_ix32,
                              wide ? FS_DTYPE_I64 : FS_DTYPE_I32, NULL};
            fs_las_opts_t o = {.num_levels = 3, .k = 2, .threads = threads};
            fs_las_sets_t *sets;
            fs_error_t err = {0};
            cr_assert_eq(fs_las_sets_build(&g, b, 3, &o, &sets, &err), FS_OK, "%s", err.msg);
            cr_assert_eq(bits_of(sets->pref[0]), (1u << 3) | (1u << 5), "Q_1 = B");
            cr_assert_eq(sets->size[0], 2);
            cr_assert_eq(bits_of(sets->pref[1]), (1u << 2) | (1u << 1), "Q_2 = top-2 of v2: 2, then 1 (tie 1/4)");
            cr_assert_eq(bits_of(sets->pref[2]), (1u << 0) | (1u << 1), "Q_3 = top-2 of v3: 0, then 1 (ties)");
            const uint16_t c1[6] = {0, 1, 2, 0, 1, 0}, c2[6] = {2, 1, 1, 1, 1, 0}, c3[6] = {1, 1, 1, 0, 0, 0};
            cr_assert_arr_eq(sets->count[0], c1, sizeof c1, "neighbours in B");
            cr_assert_arr_eq(sets->count[1], c2, sizeof c2, "neighbours in Q_2");
            cr_assert_arr_eq(sets->count[2], c3, sizeof c3, "neighbours in Q_3");
            fs_las_sets_free(sets);
            o.k = 10; /* only nodes with v > 0 qualify */
            cr_assert_eq(fs_las_sets_build(&g, b, 3, &o, &sets, &err), FS_OK, "%s", err.msg);
            cr_assert_eq(bits_of(sets->pref[1]), (1u << 1) | (1u << 2) | (1u << 4));
            cr_assert_eq(sets->size[1], 3);
            cr_assert_eq(bits_of(sets->pref[2]), 0x3f);
            fs_las_sets_free(sets);
        }
}

/* Naive v_l by dense loops, top-K by a selection pass: the same sets. */
Test(locality, preferred_sets_match_a_naive_propagation)
{
    int64_t n = rmat->num_nodes, nb;
    int64_t *b = top_degree_rows(rmat, 0.02, &nb);
    fs_las_sets_t *s1 = build_sets(rmat, b, nb, 4, 300, 1), *s2 = build_sets(rmat, b, nb, 4, 300, 2);
    double *v = calloc((size_t)n, sizeof *v), *nv = calloc((size_t)n, sizeof *nv);
    uint8_t *in = calloc((size_t)n, 1), *taken = calloc((size_t)n, 1);
    for (int64_t i = 0; i < nb; i++) v[b[i]] = 1;
    fs_csr_view_t g = view_of(rmat);
    for (int l = 1; l <= 4; l++) {
        if (l == 1) {
            for (int64_t i = 0; i < n; i++) in[i] = v[i] > 0;
        } else {
            memset(in, 0, (size_t)n);
            memset(taken, 0, (size_t)n);
            for (int64_t t = 0; t < 300; t++) { /* the next largest (smallest id on ties), v > 0 only */
                int64_t best = -1;
                for (int64_t i = 0; i < n; i++)
                    if (!taken[i] && v[i] > 0 && (best < 0 || v[i] > v[best])) best = i;
                if (best < 0) break;
                taken[best] = in[best] = 1;
            }
        }
        for (int64_t i = 0; i < n; i++) {
            cr_assert_eq(fs_las_bit(s1->pref[l - 1], i), in[i], "Q_%d node %lld", l, (long long)i);
            cr_assert_eq(fs_las_bit(s2->pref[l - 1], i), in[i], "threads do not change Q_%d", l);
            int64_t cnt = 0;
            double sum = 0;
            for (int64_t e = rmat->indptr[i]; e < rmat->indptr[i + 1]; e++) {
                cnt += in[nbr(&g, e)];
                sum += v[nbr(&g, e)];
            }
            cr_assert_eq(s1->count[l - 1][i], cnt, "count_%d node %lld", l, (long long)i);
            cr_assert_eq(s2->count[l - 1][i], cnt);
            nv[i] = sum;
        }
        double *t = v;
        v = nv, nv = t;
    }
    fs_las_sets_free(s1), fs_las_sets_free(s2);
    free(v), free(nv), free(in), free(taken), free(b);
}

Test(locality, b_from_a_plan_is_the_reader_groups_gpu_rows)
{
    fs_hardware_t hw;
    fs_error_t err = {0};
    cr_assert_eq(fs_hw_preset("nvlink-pairs", &hw, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_hw_set_memory(&hw, 150 * 32, &err), FS_OK, "%s", err.msg);
    int64_t N = 2000;
    double *p = malloc(sizeof *p * (size_t)N);
    for (int64_t v = 0; v < N; v++) p[v] = 1e6 / pow((double)(fs_rng_at(2, 0, (uint64_t)v) % N) + 1, 1.1);
    fs_plan_input_t in = {.num_nodes = N, .p = p, .row_bytes = 32};
    fs_plan_opts_t o;
    fs_plan_defaults(&o);
    fs_plan_t *plan;
    cr_assert_eq(fs_plan_build(&hw, &in, &o, &plan, &err), FS_OK, "%s", err.msg);
    for (int reader = 0; reader < plan->num_gpus; reader++) {
        int64_t *rows, count;
        cr_assert_eq(fs_las_reader_rows(plan, reader, &rows, &count, &err), FS_OK, "%s", err.msg);
        uint8_t *want = calloc((size_t)N, 1);
        for (int gpu = 0; gpu < plan->num_gpus; gpu++) /* rows of its own GPU and its NVLink pair */
            if (gpu == reader || fs_hw_linked(&hw, reader, gpu))
                for (int64_t k = 0; k < plan->gpu[gpu].num_rows; k++) want[plan->gpu[gpu].rows[k]] = 1;
        int64_t expect = 0;
        for (int64_t v = 0; v < N; v++) expect += want[v];
        cr_assert_eq(count, expect, "reader %d: %lld rows, want %lld", reader, (long long)count, (long long)expect);
        cr_assert_gt(count, plan->gpu[reader].num_rows, "the peer adds rows");
        for (int64_t i = 0; i < count; i++) {
            cr_assert(want[rows[i]], "row %lld is on the group's GPUs", (long long)rows[i]);
            if (i) cr_assert_gt(rows[i], rows[i - 1], "ascending");
        }
        free(rows), free(want);
    }
    int64_t *rows, count;
    cr_assert_eq(fs_las_reader_rows(plan, 7, &rows, &count, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "reader 7"), "%s", err.msg);
    cr_assert_eq(fs_las_reader_rows(NULL, 0, &rows, &count, &err), FS_ERR_INVALID_ARGUMENT);
    fs_plan_free(plan);
    free(p);
}

/* ---- Algorithm 2 ------------------------------------------------------------------------ */

static double step(fs_las_ctl_t *c, double r)
{
    double s = -1;
    fs_error_t err = {0};
    cr_assert_eq(fs_las_ctl_update(c, r, &s, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(s, c->s);
    return s;
}

Test(locality, algorithm2_transitions)
{
    fs_las_ctl_t c;
    fs_error_t err = {0};
    /* doubling while loading dominates, fixed at MAXS */
    cr_assert_eq(fs_las_ctl_init(&c, NULL, &err), FS_OK);
    cr_assert_eq(c.s, 1);
    cr_assert_eq(step(&c, 0.5), 2);
    cr_assert_eq(c.pre, 1);
    cr_assert_eq(step(&c, 0.5), 4);
    cr_assert_eq(step(&c, 0.5), 8);
    cr_assert(!c.fixed);
    cr_assert_eq(step(&c, 0.5), 8, "s >= MAXS fixes s");
    cr_assert(c.fixed);
    cr_assert_eq(step(&c, 0.01), 8, "fixed stays fixed");
    cr_assert_eq(c.epochs, 5);
    /* overshoot, halve back towards pre, then fixed inside [lt, ut] */
    fs_las_ctl_init(&c, NULL, &err);
    cr_assert_eq(step(&c, 0.3), 2);
    cr_assert_eq(step(&c, 0.1), 1.5, "(s + pre) / 2");
    cr_assert_eq(step(&c, 0.1), 1.25);
    cr_assert_eq(step(&c, 0.17), 1.25);
    cr_assert(c.fixed, "r in [lt, ut] fixes s");
    cr_assert_eq(step(&c, 0.9), 1.25);
    /* thresholds are inclusive bounds of the fixed band */
    fs_las_ctl_init(&c, NULL, &err);
    cr_assert_eq(step(&c, 0.2), 1);
    cr_assert(c.fixed, "r = ut is not above ut");
    fs_las_ctl_init(&c, NULL, &err);
    cr_assert_eq(step(&c, 0.05), 1, "fast already at s = 1: keep the plain sampler");
    cr_assert(c.fixed);
    /* doubling is capped at MAXS: 1, 2, 1.5, 3, 6, then 8 (not 12) */
    fs_las_ctl_init(&c, NULL, &err);
    cr_assert_eq(step(&c, 0.3), 2);
    cr_assert_eq(step(&c, 0.1), 1.5);
    cr_assert_eq(step(&c, 0.3), 3);
    cr_assert_eq(c.pre, 1.5);
    cr_assert_eq(step(&c, 0.3), 6);
    cr_assert_eq(step(&c, 0.3), 8);
    cr_assert_eq(step(&c, 0.3), 8);
    cr_assert(c.fixed);
    /* custom thresholds and MAXS */
    fs_las_ctl_opts_t o = {.lt = 0.3, .ut = 0.4, .maxs = 5};
    cr_assert_eq(fs_las_ctl_init(&c, &o, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(step(&c, 0.5), 2);
    cr_assert_eq(step(&c, 0.35), 2);
    cr_assert(c.fixed);
}

Test(locality, algorithm2_bad_input)
{
    fs_las_ctl_t c;
    fs_error_t err = {0};
    double s;
    cr_assert_eq(fs_las_ctl_init(&c, NULL, &err), FS_OK);
    cr_assert_eq(fs_las_ctl_update(&c, NAN, &s, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "loading ratio"), "%s", err.msg);
    cr_assert_eq(fs_las_ctl_update(&c, 1.5, &s, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fs_las_ctl_update(&c, -0.1, &s, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(c.s, 1);
    cr_assert_eq(c.epochs, 0, "a bad ratio leaves the state alone");
    cr_assert_eq(fs_las_ctl_update(NULL, 0.5, &s, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fs_las_ctl_init(NULL, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    fs_las_ctl_opts_t o = {.lt = 0.3, .ut = 0.2, .maxs = 8};
    cr_assert_eq(fs_las_ctl_init(&c, &o, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "lt = 0.3"), "%s", err.msg);
    o = (fs_las_ctl_opts_t){.lt = 0.1, .ut = 0.2, .maxs = 0.5};
    cr_assert_eq(fs_las_ctl_init(&c, &o, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "MAXS"), "%s", err.msg);
    o.maxs = NAN;
    cr_assert_eq(fs_las_ctl_init(&c, &o, &err), FS_ERR_INVALID_ARGUMENT);
    o = (fs_las_ctl_opts_t){.lt = NAN, .ut = 0.2, .maxs = 8};
    cr_assert_eq(fs_las_ctl_init(&c, &o, &err), FS_ERR_INVALID_ARGUMENT);
}

/* ---- bad input ---------------------------------------------------------------------------- */

Test(locality, bad_sampling_input_is_named)
{
    fs_csr_view_t g = view_of(rmat);
    int64_t nb;
    int64_t *b = top_degree_rows(rmat, 0.1, &nb);
    fs_las_sets_t *sets = build_sets(rmat, b, nb, 2, 64, 1);
    fs_locality_t loc;
    int64_t seeds[2] = {1, 2};
    fs_sample_req_t req = req_of(2, fan_b, 1);
    fs_sample_result_t res;
    fs_las_weights_t w;
    fs_error_t err = {0};
    struct {
        double s;
        const char *msg;
    } bad_s[4] = {{0.5, "boost s = 0.5"}, {NAN, "boost s = nan"}, {INFINITY, "boost s = inf"}, {-2, "boost s = -2"}};
    for (int i = 0; i < 4; i++) {
        fs_las_locality(sets, bad_s[i].s, &loc);
        cr_assert_eq(fs_sample_locality_cpu(las, &g, seeds, 2, &req, &loc, &res, &w, NULL, &err),
                     FS_ERR_INVALID_ARGUMENT);
        cr_assert(strstr(err.msg, bad_s[i].msg), "%s", err.msg);
    }
    fs_las_locality(sets, 2, &loc);
    fs_sample_req_t three = req_of(3, fan_a, 1);
    cr_assert_eq(fs_sample_locality_cpu(las, &g, seeds, 2, &three, &loc, &res, &w, NULL, &err),
                 FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "2 preferred levels for a 3-hop request"), "%s", err.msg);
    loc.pref[1] = NULL;
    cr_assert_eq(fs_sample_locality_cpu(las, &g, seeds, 2, &req, &loc, &res, &w, NULL, &err),
                 FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "Q_2 is NULL"), "%s", err.msg);
    fs_las_locality(sets, 2, &loc);
    loc.num_nodes = 17;
    cr_assert_eq(fs_sample_locality_cpu(las, &g, seeds, 2, &req, &loc, &res, &w, NULL, &err),
                 FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "cover 17 nodes"), "%s", err.msg);
    fs_las_locality(sets, 2, &loc);
    req.mode[1] = FS_SAMPLE_WEIGHTED;
    cr_assert_eq(fs_sample_locality_cpu(las, &g, seeds, 2, &req, &loc, &res, &w, NULL, &err),
                 FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "hop 1 has mode"), "%s", err.msg);
    req = req_of(2, fan_b, 1);
    cr_assert_eq(fs_sample_locality_cpu(las, &g, seeds, 2, &req, NULL, &res, &w, NULL, &err),
                 FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "NULL option"), "%s", err.msg);
    cr_assert_eq(fs_sample_locality_cpu(las, &g, seeds, 2, &req, &loc, &res, NULL, NULL, &err),
                 FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "NULL sampler, result or weights"), "%s", err.msg);
    cr_assert_eq(fs_sample_locality_cpu(NULL, &g, seeds, 2, &req, &loc, &res, &w, NULL, &err),
                 FS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fs_sample_locality_cpu(las, NULL, seeds, 2, &req, &loc, &res, &w, NULL, &err),
                 FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "NULL option, graph or request"), "%s", err.msg);
    seeds[1] = rmat->num_nodes;
    cr_assert_eq(fs_sample_locality_cpu(las, &g, seeds, 2, &req, &loc, &res, &w, NULL, &err),
                 FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "at position 1"), "%s", err.msg);
    /* s = 1 needs no sets at all */
    seeds[1] = 2;
    fs_las_locality(NULL, 1, &loc);
    cr_assert_eq(fs_sample_locality_cpu(las, &g, seeds, 2, &req, &loc, &res, &w, NULL, &err), FS_OK, "%s", err.msg);
    fs_las_locality(NULL, 2, &loc);
    cr_assert_eq(fs_sample_locality_cpu(las, &g, seeds, 2, &req, &loc, &res, &w, NULL, &err),
                 FS_ERR_INVALID_ARGUMENT, "s > 1 without sets");
    /* probabilities */
    double q[3] = {0.5, 1.5, 0.2}, qn[3];
    uint8_t pf[3] = {1, 0, 0};
    cr_assert_eq(fs_las_rescale(q, pf, 3, 2, qn, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "q[1] = 1.5"), "%s", err.msg);
    q[1] = NAN;
    cr_assert_eq(fs_las_rescale(q, pf, 3, 2, qn, &err), FS_ERR_INVALID_ARGUMENT);
    q[1] = 0.3;
    cr_assert_eq(fs_las_rescale(q, pf, 3, 0.9, qn, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fs_las_rescale(q, pf, 3, 2, q, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "alias"), "%s", err.msg);
    cr_assert_eq(fs_las_rescale(NULL, pf, 3, 2, qn, &err), FS_ERR_INVALID_ARGUMENT);
    fs_las_sets_free(sets);
    free(b);
}

Test(locality, bad_set_building_input_is_named)
{
    fs_csr_ref_t g = {6, hand_ip, hand_ix32, FS_DTYPE_I32, NULL};
    fs_las_opts_t o = {.num_levels = 3, .k = 2, .threads = 1};
    fs_las_sets_t *sets = (fs_las_sets_t *)&g; /* any non-NULL value: a failure must clear it */
    fs_error_t err = {0};
    int64_t b[2] = {1, 6};
    cr_assert_eq(fs_las_sets_build(&g, b, 2, &o, &sets, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "GPU row 6 at position 1"), "%s", err.msg);
    cr_assert_null(sets, "nothing is handed out on failure");
    cr_assert_eq(fs_las_sets_build(&g, NULL, 2, &o, &sets, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fs_las_sets_build(&g, b, 1, NULL, &sets, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fs_las_sets_build(&g, b, 1, &o, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    o.num_levels = 0;
    cr_assert_eq(fs_las_sets_build(&g, b, 1, &o, &sets, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "0 levels"), "%s", err.msg);
    o.num_levels = FS_MAX_HOPS + 1;
    cr_assert_eq(fs_las_sets_build(&g, b, 1, &o, &sets, &err), FS_ERR_INVALID_ARGUMENT);
    o.num_levels = 2, o.k = 0;
    cr_assert_eq(fs_las_sets_build(&g, b, 1, &o, &sets, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "K = 0"), "%s", err.msg);
    o.k = 2;
    int32_t broken[13];
    memcpy(broken, hand_ix32, sizeof broken);
    broken[4] = 9;
    g.indices = broken;
    cr_assert_eq(fs_las_sets_build(&g, b, 1, &o, &sets, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "indices[4] = 9"), "%s", err.msg);
    cr_assert_null(sets);
    cr_assert_eq(fs_las_sets_build(NULL, b, 1, &o, &sets, &err), FS_ERR_INVALID_ARGUMENT);
}
