/* test_locality_sample.c — the locality-aware sampler
 * (fs_sample_locality_cpu, docs/algorithms.md §4) on a generated R-MAT
 * graph: s = 1 and unboosted requests bit-identical to fs_sample_cpu (plain
 * rows weighing deg / k), boosted samples valid (block invariants, weights
 * 1/q), deterministic and more local, counts and scans giving the same
 * sample, routed views, int64 indices and any thread count alike; and every
 * bad sampling argument named. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fs_chunked.h"
#include "fs_locality.h"
#include "fs_pool.h"
#include "fs_rng.h"
#include "fs_sample.h"
#include "locality.h"
#include "locality_fixture.h"

TestSuite(locality, .init = setup, .fini = teardown, .timeout = 120);
static int64_t *random_seeds(int64_t n, int64_t num_nodes, uint64_t s)
{
    int64_t *v = malloc(sizeof *v * (size_t)n);
    fs_rng_t r = fs_rng_make(s, 91);
    for (int64_t i = 0; i < n; i++) v[i] = (int64_t)fs_rng_below(&r, (uint64_t)num_nodes);
    return v;
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
