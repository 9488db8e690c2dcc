/* test_oracle_invariants.c — the k-hop sampler against the oracle of
 * oracle_fixture.h, exactly:
 *   A. the invariants of every result against the graph's CSR (check_result:
 *      the seed map, block shapes, CSC order, every edge a real edge of its
 *      dst's row, per-dst edge counts, no repeated position without
 *      replacement, no zero-weight pick, and the relabel redone in
 *      first-appearance order, seeds first) on random requests in every mode
 *      and index width, and on small rows, fanout -1, repeated seeds and empty
 *      requests, where the counts are known;
 *   C. a routed three-part view (rows copied into other parts, reordered)
 *      giving exactly the single-part view's results, with per-part counts. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "fs_sample.h"
#include "oracle_fixture.h"

TestSuite(oracle, .init = setup, .fini = teardown, .timeout = 120);
static int64_t first_diff(const int64_t *a, const int64_t *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (a[i] != b[i]) return i;
    return -1;
}

#define SAME_ARRAY(x, y, n, what, ...)                                                                         \
    do {                                                                                                     \
        int64_t i_ = first_diff(x, y, n);                                                                    \
        CHECK(i_ < 0, "%s: " what "[%lld]: expected %lld (%s), found %lld (%s)", ctx, __VA_ARGS__, (long long)i_, \
              (long long)(x)[i_ < 0 ? 0 : i_], wa, (long long)(y)[i_ < 0 ? 0 : i_], wb);                    \
    } while (0)

/* Two results of one request must be equal, array for array. */
static void compare(const fs_sample_result_t *a, const fs_sample_result_t *b, const char *wa, const char *wb)
{
    CHECK(a->num_nodes == b->num_nodes, "%s: expected num_nodes %lld (%s), found %lld (%s)", ctx,
          (long long)a->num_nodes, wa, (long long)b->num_nodes, wb);
    SAME_ARRAY(a->nodes, b->nodes, a->num_nodes, "%s", "nodes");
    SAME_ARRAY(a->seed_local, b->seed_local, a->num_seeds, "%s", "seed_local");
    for (int h = 0; h < a->num_hops; h++) {
        const fs_block_t *x = &a->block[h], *y = &b->block[h];
        CHECK(x->num_dst == y->num_dst && x->num_src == y->num_src && x->num_edges == y->num_edges,
              "%s: hop %d: expected (dst, src, edges) = (%lld, %lld, %lld) (%s), found (%lld, %lld, %lld) (%s)", ctx,
              h, (long long)x->num_dst, (long long)x->num_src, (long long)x->num_edges, wa, (long long)y->num_dst,
              (long long)y->num_src, (long long)y->num_edges, wb);
        SAME_ARRAY(x->dst_offsets, y->dst_offsets, x->num_dst + 1, "hop %d dst_offsets", h);
        SAME_ARRAY(x->edge_dst, y->edge_dst, x->num_edges, "hop %d edge_dst", h);
        SAME_ARRAY(x->edge_src, y->edge_src, x->num_edges, "hop %d edge_src", h);
        CHECK(!x->edge_ids == !y->edge_ids, "%s: hop %d: expected edge ids on both or neither, found one", ctx, h);
        if (x->edge_ids) SAME_ARRAY(x->edge_ids, y->edge_ids, x->num_edges, "hop %d edge_ids", h);
    }
}

/* A random request: 1-3 hops, fanouts 1..25 (-1 now and then on hop 0 or
 * the last hop, with small fanouts around it), modes from `modes`. */
static fs_sample_req_t random_req(orng_t *r, int modes)
{
    static const int fan[6] = {1, 2, 3, 5, 10, 25};
    fs_sample_req_t q = {REQ_SIZE.num_hops = 1 + (int)obelow(r, 3), .seed = onext(r),
                         .want_edge_ids = obelow(r, 4) != 0};
    for (int h = 0; h < q.num_hops; h++) {
        q.fanout[h] = fan[obelow(r, q.num_hops == 3 ? 5 : 6)];
        q.mode[h] = (fs_sample_mode_t)obelow(r, modes);
    }
    int64_t all = obelow(r, 6);
    if (all == 0) {
        q.fanout[0] = FS_FANOUT_ALL;
        for (int h = 1; h < q.num_hops; h++) q.fanout[h] = 1 + (int)obelow(r, 3);
    } else if (all == 1 && q.num_hops > 1) {
        for (int h = 0; h < q.num_hops - 1; h++) q.fanout[h] = 1 + (int)obelow(r, 3);
        q.fanout[q.num_hops - 1] = FS_FANOUT_ALL;
    }
    return q;
}

/* 0..32 seeds, some repeated, the hub and a small-degree node now and then. */
static int64_t random_seeds(orng_t *r, const og_t *g, int64_t *seeds)
{
    int64_t n = obelow(r, 33);
    for (int64_t i = 0; i < n; i++) {
        int64_t c = obelow(r, 8);
        seeds[i] = i && c == 0 ? seeds[obelow(r, i)] : c == 1 ? 0 : c == 2 ? obelow(r, 10) : obelow(r, g->n);
    }
    return n;
}

/* ---- A. invariants on random requests ---------------------------------------- */

Test(oracle, invariants_hold_on_random_requests_in_every_mode_and_index_width)
{
    og_t *gs[3] = {&hubs, &plaw, &wtd};
    orng_t r = orng(0xa11);
    int64_t seeds[40];
    for (int gi = 0; gi < 3; gi++)
        for (int t = 0; t < 70; t++) {
            fs_sample_req_t q = random_req(&r, gs[gi]->w ? 4 : 2);
            int64_t n = random_seeds(&r, gs[gi], seeds);
            fs_csr_view_t v32 = view_of(gs[gi], FS_DTYPE_I32), v64 = view_of(gs[gi], FS_DTYPE_I64);
            fs_sample_result_t a, b;
            set_ctx(gs[gi], "int32", &q, n);
            run(sa, &v32, seeds, n, &q, &a, NULL);
            check_result(gs[gi], seeds, n, &q, &a);
            set_ctx(gs[gi], "int64", &q, n);
            run(sb, &v64, seeds, n, &q, &b, NULL);
            check_result(gs[gi], seeds, n, &q, &b);
            compare(&a, &b, "int32 indices", "int64 indices"); /* choices depend on (seed, hop, node) only */
        }
}

Test(oracle, small_rows_fanout_all_repeated_seeds_and_empty_requests_are_exact)
{
    fs_csr_view_t v = view_of(&hubs, FS_DTYPE_I32);
    fs_sample_result_t res;
    /* repeated seeds share a local id; rows of degree < = > fanout */
    int64_t seeds[9] = {3, 8, 3, 2, 4, 3, 5, 7, 9};
    fs_sample_req_t q = {REQ_SIZE.num_hops = 2, .fanout = {10, 10}, .seed = 77, .want_edge_ids = 1};
    set_ctx(&hubs, "int32", &q, 9);
    run(sa, &v, seeds, 9, &q, &res, NULL);
    check_result(&hubs, seeds, 9, &q, &res);
    static const int64_t local[9] = {0, 1, 0, 2, 3, 0, 4, 5, 6}, count[7] = {10, 0, 3, 10, 10, 7, 1};
    for (int i = 0; i < 9; i++)
        CHECK(res.seed_local[i] == local[i], "%s: seed_local[%d]: expected %lld, found %lld", ctx, i,
              (long long)local[i], (long long)res.seed_local[i]);
    for (int d = 0; d < 7; d++) {
        int64_t got = res.block[0].dst_offsets[d + 1] - res.block[0].dst_offsets[d];
        CHECK(got == count[d], "%s: dst %d (node %lld): expected %lld edges, found %lld", ctx, d,
              (long long)res.nodes[d], (long long)count[d], (long long)got);
    }
    /* degree <= fanout: every position of the row exactly once */
    for (int d = 0; d < 7; d++) {
        int64_t v0 = res.nodes[d], deg = deg_of(&hubs, v0);
        if (deg > 10) continue;
        char *seen = calloc((size_t)deg + 1, 1);
        for (int64_t e = res.block[0].dst_offsets[d]; e < res.block[0].dst_offsets[d + 1]; e++)
            seen[res.block[0].edge_ids[e] - hubs.ip[v0]]++;
        for (int64_t p = 0; p < deg; p++)
            CHECK(seen[p] == 1, "%s: node %lld (degree %lld <= fanout 10): expected row position %lld once, found "
                  "%d times", ctx, (long long)v0, (long long)deg, (long long)p, seen[p]);
        free(seen);
    }
    /* fanout -1: the hub's whole row, each position once */
    int64_t hub = 0;
    q = (fs_sample_req_t){REQ_SIZE.num_hops = 1, .fanout = {FS_FANOUT_ALL}, .seed = 5, .want_edge_ids = 1};
    set_ctx(&hubs, "int32", &q, 1);
    run(sa, &v, &hub, 1, &q, &res, NULL);
    check_result(&hubs, &hub, 1, &q, &res);
    CHECK(res.block[0].num_edges == 1000 && res.num_nodes == 1001,
          "%s: expected 1000 edges and 1001 nodes for fanout -1 on the hub, found %lld and %lld", ctx,
          (long long)res.block[0].num_edges, (long long)res.num_nodes);
    /* weighted: -1 takes exactly the positive-weight edges; an all-zero row
     * gives nothing in either weighted mode */
    fs_csr_view_t w = view_of(&wtd, FS_DTYPE_I64);
    int64_t wseeds[3] = {0, 4, 3};
    for (int m = FS_SAMPLE_WEIGHTED; m <= FS_SAMPLE_WEIGHTED_REPLACE; m++) {
        q = (fs_sample_req_t){REQ_SIZE.num_hops = 1, .fanout = {FS_FANOUT_ALL}, .mode = {(fs_sample_mode_t)m},
                              .seed = 6, .want_edge_ids = 1};
        set_ctx(&wtd, "int64", &q, 3);
        run(sa, &w, wseeds, 3, &q, &res, NULL);
        check_result(&wtd, wseeds, 3, &q, &res);
        int64_t e0 = res.block[0].dst_offsets[1] - res.block[0].dst_offsets[0];
        int64_t e1 = res.block[0].dst_offsets[2] - res.block[0].dst_offsets[1];
        int64_t e2 = res.block[0].dst_offsets[3] - res.block[0].dst_offsets[2];
        int64_t want0 = m == FS_SAMPLE_WEIGHTED ? 37 : 40, want2 = m == FS_SAMPLE_WEIGHTED ? 1 : 5;
        CHECK(e0 == want0 && e1 == 0 && e2 == want2,
              "%s: expected %lld / 0 / %lld edges for node 0 (37 of 40 positive) / 4 (all zero) / 3 (1 of 5 "
              "positive), found %lld / %lld / %lld",
              ctx, (long long)want0, (long long)want2, (long long)e0, (long long)e1, (long long)e2);
        for (int64_t e = res.block[0].dst_offsets[2]; e < res.block[0].dst_offsets[3]; e++)
            CHECK(res.block[0].edge_ids[e] == wtd.ip[3] + 2, "%s: node 3: expected its one positive edge %lld, found %lld",
                  ctx, (long long)(wtd.ip[3] + 2), (long long)res.block[0].edge_ids[e]);
    }
    /* no seeds: a valid, empty result */
    q = (fs_sample_req_t){REQ_SIZE.num_hops = 3, .fanout = {5, 5, 5}, .seed = 1};
    set_ctx(&hubs, "int32", &q, 0);
    run(sa, &v, seeds, 0, &q, &res, NULL);
    check_result(&hubs, seeds, 0, &q, &res);
    for (int h = 0; h < 3; h++)
        CHECK(res.block[h].num_dst == 0 && res.block[h].num_edges == 0,
              "%s: hop %d: expected an empty block, found %lld dst and %lld edges", ctx, h,
              (long long)res.block[h].num_dst, (long long)res.block[h].num_edges);
}

/* ---- C. a routed multi-part view ------------------------------------------------ */

/* Part 1 holds copies of the rows of every third node in reverse node
 * order, part 2 those of the other multiples of 5 in order; the route sends
 * those nodes there and the rest to part 0 at their own id. */
typedef struct {
    fs_csr_view_t v;
    int64_t *ip[3], *ix64[3];
    int32_t *ix32[3];
    float *w[3];
    uint64_t *route;
} routed_t;

static void routed_build(routed_t *rt, const og_t *g, fs_dtype_t dt)
{
    memset(rt, 0, sizeof *rt);
    rt->v = view_of(g, dt);
    rt->route = malloc(sizeof *rt->route * (size_t)g->n);
    for (int64_t v = 0; v < g->n; v++) rt->route[v] = (uint64_t)v; /* part 0, row v */
    for (int p = 1; p <= 2; p++) {
        int64_t rows = 0, m = 0;
        rt->ip[p] = calloc((size_t)g->n + 1, sizeof *rt->ip[p]);
        rt->ix64[p] = malloc(sizeof *rt->ix64[p] * (size_t)(g->m + 1));
        rt->ix32[p] = malloc(sizeof *rt->ix32[p] * (size_t)(g->m + 1));
        rt->w[p] = g->w ? malloc(sizeof *rt->w[p] * (size_t)(g->m + 1)) : NULL;
        for (int64_t j = 0; j < g->n; j++) {
            int64_t v = p == 1 ? g->n - 1 - j : j;
            if (p == 1 ? v % 3 != 0 : v % 3 == 0 || v % 5 != 0) continue;
            for (int64_t e = g->ip[v]; e < g->ip[v + 1]; e++, m++) {
                rt->ix64[p][m] = g->ix64[e], rt->ix32[p][m] = g->ix32[e];
                if (g->w) rt->w[p][m] = g->w[e];
            }
            rt->route[v] = FS_ROUTE(p, rows);
            rt->ip[p][++rows] = m;
        }
        rt->v.part[p] = (fs_csr_part_t){.indptr = rt->ip[p],
                                        .indices = dt == FS_DTYPE_I32 ? (const void *)rt->ix32[p] : rt->ix64[p],
                                        .weights = rt->w[p], .rows = rows};
    }
    rt->v.num_parts = 3;
    rt->v.route = rt->route;
}

static void routed_free(routed_t *rt)
{
    for (int p = 1; p <= 2; p++) free(rt->ip[p]), free(rt->ix64[p]), free(rt->ix32[p]), free(rt->w[p]);
    free(rt->route);
}

Test(oracle, routed_multi_part_view_samples_exactly_like_the_single_part_view)
{
    og_t *gs[3] = {&hubs, &plaw, &wtd};
    orng_t r = orng(0xc0de);
    int64_t seeds[40];
    for (int gi = 0; gi < 3; gi++)
        for (int dti = 0; dti < 2; dti++) {
            fs_dtype_t dt = dti ? FS_DTYPE_I64 : FS_DTYPE_I32;
            const char *dn = dti ? "int64" : "int32";
            routed_t rt;
            routed_build(&rt, gs[gi], dt);
            fs_csr_view_t plain = view_of(gs[gi], dt), ident = plain;
            uint64_t *id_route = malloc(sizeof *id_route * (size_t)gs[gi]->n);
            for (int64_t v = 0; v < gs[gi]->n; v++) id_route[v] = (uint64_t)v;
            ident.route = id_route;
            for (int t = 0; t < 25; t++) {
                fs_sample_req_t q = random_req(&r, gs[gi]->w ? 4 : 2);
                int64_t n = random_seeds(&r, gs[gi], seeds);
                fs_sample_result_t a, b;
                fs_gather_counters_t topo = {{0}, {0}};
                char view[64];
                snprintf(view, sizeof view, "routed 3-part %s", dn);
                set_ctx(gs[gi], view, &q, n);
                run(sa, &plain, seeds, n, &q, &a, NULL);
                run(sb, &rt.v, seeds, n, &q, &b, &topo);
                check_result(gs[gi], seeds, n, &q, &b);
                compare(&a, &b, "single-part view", "routed view");
                /* one neighbour list read per dst per hop, from the part its route names */
                uint64_t want[3] = {0, 0, 0};
                for (int h = 0; h < q.num_hops; h++)
                    for (int64_t d = 0; d < b.block[h].num_dst; d++) want[rt.route[b.nodes[d]] >> 48]++;
                for (int p = 0; p < 3; p++)
                    CHECK(topo.rows[p] == want[p], "%s: expected %llu neighbour lists read from part %d, found %llu",
                          ctx, (unsigned long long)want[p], p, (unsigned long long)topo.rows[p]);
                for (int p = 3; p < FS_MAX_TIERS; p++)
                    CHECK(topo.rows[p] == 0, "%s: expected no reads from absent part %d, found %llu", ctx, p,
                          (unsigned long long)topo.rows[p]);
                snprintf(view, sizeof view, "identity-routed %s", dn);
                set_ctx(gs[gi], view, &q, n);
                run(sb, &ident, seeds, n, &q, &b, NULL);
                compare(&a, &b, "single-part view", "identity route");
            }
            free(id_route);
            routed_free(&rt);
        }
}
