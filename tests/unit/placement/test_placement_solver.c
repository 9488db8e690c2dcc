/* test_placement_solver.c — choosing the rows each GPU holds
 * (placement/plan.h): Rule 1 and the corrected Algorithm 1 on the paper's
 * example (B1={1,3}, B2={4,2}) and at its limits (alpha 0: disjoint, alpha
 * near 1: replicated; capacity and distinctness for any parameters), the XGNN
 * solver (DGX-1: 2 partitions per GPU, one hop to all; a clique: no replicas;
 * MinBandwidth equal to a brute-force search on 60 random topologies of 3-6
 * GPUs), and the topology split's hot prefix within budget. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fs_rng.h"
#include "hardware.h"
#include "placement_fixture.h"
#include "plan.h"

/* ==== Rule 1 and Algorithm 1 ================================================ */

Test(algo1, the_papers_example)
{
    /* argsort gives V = [1, 2, 3, 4, 5, 0] */
    double p[6] = {1, 10, 8, 6, 4, 2};
    int64_t *V = sorted_order(p, 6), want_v[6] = {1, 2, 3, 4, 5, 0};
    cr_assert_arr_eq(V, want_v, sizeof want_v);
    int64_t B[2][2], count;
    fs_error_t err = {0};
    cr_assert_eq(fs_algo1(p, V, 6, 2, 2, 0.3, &B[0][0], &count, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(count, 2);
    int64_t b1[2] = {1, 3}, b2[2] = {4, 2}; /* B1 = {1, 3}, B2 = {4, 2} */
    cr_assert_arr_eq(B[0], b1, sizeof b1);
    cr_assert_arr_eq(B[1], b2, sizeof b2);
    free(V);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

Test(algo1, alpha_zero_partitions_the_top_rows)
{
    int64_t N = 10000, bsize = 100;
    int n = 4;
    double *p = malloc(sizeof *p * (size_t)N);
    for (int64_t v = 0; v < N; v++) p[v] = 1.0 + (double)((v * 7919) % N); /* distinct, positive */
    int64_t *V = sorted_order(p, N), *B = malloc(sizeof *B * (size_t)(n * bsize)), count;
    fs_error_t err = {0};
    cr_assert_eq(fs_algo1(p, V, N, n, bsize, 0.0, B, &count, &err), FS_OK, "%s", err.msg);
    qsort(B, (size_t)(n * bsize), sizeof *B, cmp_i64);
    int64_t *top = malloc(sizeof *top * (size_t)(n * bsize));
    memcpy(top, V, sizeof *top * (size_t)(n * bsize));
    qsort(top, (size_t)(n * bsize), sizeof *top, cmp_i64);
    cr_assert_arr_eq(B, top, sizeof *B * (size_t)(n * bsize), "disjoint sets covering the top n*BSIZE");
    free(p), free(V), free(B), free(top);
}

Test(algo1, alpha_near_one_replicates)
{
    int64_t N = 5000, bsize = 100;
    int n = 3;
    double *p = malloc(sizeof *p * (size_t)N);
    for (int64_t v = 0; v < N; v++) p[v] = 1.0 / (double)(v + 1); /* p[V[100]] / p[V[99]] = 100/101 < 0.999 */
    int64_t *V = sorted_order(p, N), *B = malloc(sizeof *B * (size_t)(n * bsize)), count;
    fs_error_t err = {0};
    cr_assert_eq(fs_algo1(p, V, N, n, bsize, 0.999, B, &count, &err), FS_OK);
    for (int d = 0; d < n; d++) cr_assert_arr_eq(B + d * bsize, V, sizeof *B * (size_t)bsize, "device %d", d);
    free(p), free(V), free(B);
}

Test(algo1, capacity_and_distinctness_hold_for_any_parameters)
{
    fs_rng_t r = fs_rng_make(3, 3);
    fs_error_t err = {0};
    for (int trial = 0; trial < 200; trial++) {
        int64_t N = 1 + (int64_t)fs_rng_below(&r, 300), bsize = (int64_t)fs_rng_below(&r, 120);
        int n = 1 + (int)fs_rng_below(&r, 8);
        double alpha = fs_rng_unit(&r);
        double *p = malloc(sizeof *p * (size_t)N);
        for (int64_t v = 0; v < N; v++) p[v] = (double)fs_rng_below(&r, 20); /* ties and zeros */
        int64_t *V = sorted_order(p, N), *B = malloc(sizeof *B * (size_t)(n * (bsize + 1))), count;
        cr_assert_eq(fs_algo1(p, V, N, n, bsize, alpha, B, &count, &err), FS_OK, "%s", err.msg);
        cr_assert_eq(count, bsize < N ? bsize : N);
        char *seen = calloc((size_t)N, 1), *any = calloc((size_t)N, 1);
        for (int d = 0; d < n; d++) {
            memset(seen, 0, (size_t)N);
            for (int64_t k = 0; k < count; k++) {
                int64_t v = B[d * bsize + k];
                cr_assert(v >= 0 && v < N);
                cr_assert_not(seen[v], "trial %d: row %lld twice on device %d", trial, (long long)v, d);
                seen[v] = any[v] = 1;
            }
        }
        /* every device holds a subset of the top n*count rows */
        int64_t limit = n * count < N ? n * count : N;
        for (int64_t k = limit; k < N; k++) cr_assert_not(any[V[k]]);
        free(p), free(V), free(B), free(seen), free(any);
    }
    cr_assert_eq(fs_algo1(NULL, NULL, 10, 2, 2, 1.5, NULL, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "alpha"), "%s", err.msg);
    cr_assert_eq(fs_algo1(NULL, NULL, 10, 0, 2, 0.2, NULL, NULL, &err), FS_ERR_INVALID_ARGUMENT);
}

Test(algo1, rule1_takes_the_top_bsize)
{
    double p[6] = {1, 10, 8, 6, 4, 2};
    int64_t *V = sorted_order(p, 6), rows[6], count;
    fs_error_t err = {0};
    cr_assert_eq(fs_rule1(V, 6, 3, rows, &count, &err), FS_OK);
    int64_t want[3] = {1, 2, 3};
    cr_assert_eq(count, 3);
    cr_assert_arr_eq(rows, want, sizeof want);
    cr_assert_eq(fs_rule1(V, 6, 60, rows, &count, &err), FS_OK);
    cr_assert_eq(count, 6);
    cr_assert_eq(fs_rule1(V, 6, -1, rows, &count, &err), FS_ERR_INVALID_ARGUMENT);
    free(V);
}

/* ==== the XGNN solver ======================================================= */

static void check_one_hop(const fs_hardware_t *hw, const fs_xgnn_t *x)
{
    for (int i = 0; i < hw->num_gpus; i++)
        for (int q = 0; q < hw->num_gpus; q++) {
            int s = x->source[i][q];
            cr_assert(s == i || fs_hw_linked(hw, i, s), "reader %d reads partition %d from %d", i, q, s);
            cr_assert(x->holds[s] & (1u << q), "GPU %d does not hold partition %d", s, q);
        }
}

Test(xgnn, dgx1_stores_two_partitions_per_gpu)
{
    fs_hardware_t hw = preset("dgx1-v100");
    fs_xgnn_t x;
    fs_error_t err = {0};
    cr_assert_eq(fs_xgnn_solve(&hw, 0, &x, &err), FS_OK, "%s", err.msg);
    cr_assert(x.exact);
    for (int g = 0; g < 8; g++) {
        cr_assert_eq(__builtin_popcount(x.holds[g]), 2, "GPU %d holds %x", g, x.holds[g]);
        cr_assert(x.holds[g] & (1u << g));
    }
    cr_assert_eq(x.max_load, 2);
    cr_assert_eq(x.replicas, 8);
    check_one_hop(&hw, &x);
    cr_assert_gt(x.min_bandwidth, 0);
}

Test(xgnn, a_clique_needs_no_replicas)
{
    const char *clique4 = "{\"gpus\": [{\"memory_bytes\": 1}, {\"memory_bytes\": 1}, {\"memory_bytes\": 1},"
                          " {\"memory_bytes\": 1}], \"links\": [[0,1,50],[0,2,50],[0,3,50],[1,2,50],[1,3,50],"
                          "[2,3,50]], \"host_gbps\": 16}";
    fs_hardware_t hw;
    fs_error_t err = {0};
    cr_assert_eq(fs_hw_parse_json(clique4, &hw, &err), FS_OK, "%s", err.msg);
    fs_xgnn_t x;
    cr_assert_eq(fs_xgnn_solve(&hw, 0, &x, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(x.replicas, 0);
    for (int g = 0; g < 4; g++) cr_assert_eq(x.holds[g], 1u << g);
    check_one_hop(&hw, &x);
    cr_assert_float_eq(x.min_bandwidth, 50.0, 1e-9);
    /* pairs: each pair holds every partition; PCIe: every GPU holds all */
    fs_hardware_t pairs = preset("nvlink-pairs"), pcie = preset("pcie4");
    cr_assert_eq(fs_xgnn_solve(&pairs, 0, &x, &err), FS_OK);
    cr_assert_eq(x.max_load, 2);
    cr_assert_eq(x.holds[0] | x.holds[1], 0xfu);
    check_one_hop(&pairs, &x);
    cr_assert_eq(fs_xgnn_solve(&pcie, 0, &x, &err), FS_OK);
    for (int g = 0; g < 4; g++) cr_assert_eq(x.holds[g], 0xfu);
}

/* ---- brute force: every plan made of inclusion-minimal dominating holder
 * sets (a plan with a useless replica has more replicas at no lower max
 * load, so it never wins), ranked by (max load, replicas, MinBandwidth). ---- */

typedef struct {
    const fs_hardware_t *hw;
    int n;
    uint32_t closed[8];
    uint32_t sets[8][64];
    int nsets[8];
    uint32_t holders[8];
    int best_max, best_rep;
    double best_mb;
} brute_t;

/* Best a_i over every assignment of remote partitions to holding peers. */
static double brute_reader(const brute_t *b, const uint32_t *holds, int i, int q, int *cnt)
{
    if (q == b->n) {
        double a = INFINITY;
        int local = __builtin_popcount(holds[i]);
        if (local) a = b->hw->local_gbps[i] / local;
        for (int j = 0; j < b->n; j++)
            if (j != i && cnt[j]) a = fmin(a, b->hw->link_gbps[i][j] / cnt[j]);
        return a;
    }
    if (holds[i] & (1u << q)) return brute_reader(b, holds, i, q + 1, cnt);
    double best = -1;
    for (int j = 0; j < b->n; j++) {
        if (j == i || !fs_hw_linked(b->hw, i, j) || !(holds[j] & (1u << q))) continue;
        cnt[j]++;
        best = fmax(best, brute_reader(b, holds, i, q + 1, cnt));
        cnt[j]--;
    }
    return best;
}

static void brute_leaf(brute_t *b)
{
    uint32_t holds[8] = {0};
    int maxl = 0, rep = 0;
    for (int q = 0; q < b->n; q++) {
        rep += __builtin_popcount(b->holders[q]) - 1;
        for (int g = 0; g < b->n; g++)
            if (b->holders[q] & (1u << g)) holds[g] |= 1u << q;
    }
    for (int g = 0; g < b->n; g++) maxl = maxl > __builtin_popcount(holds[g]) ? maxl : __builtin_popcount(holds[g]);
    if (maxl > b->best_max || (maxl == b->best_max && rep > b->best_rep)) return;
    double mb = INFINITY;
    for (int i = 0; i < b->n; i++) {
        int cnt[8] = {0};
        mb = fmin(mb, brute_reader(b, holds, i, 0, cnt));
    }
    if (maxl < b->best_max || rep < b->best_rep || mb > b->best_mb) b->best_mb = mb;
    b->best_max = maxl, b->best_rep = rep;
}

static void brute_walk(brute_t *b, int q)
{
    if (q == b->n) {
        brute_leaf(b);
        return;
    }
    for (int s = 0; s < b->nsets[q]; s++) {
        b->holders[q] = b->sets[q][s];
        brute_walk(b, q + 1);
    }
}

static int dominates(const brute_t *b, uint32_t set)
{
    for (int i = 0; i < b->n; i++)
        if (!(b->closed[i] & set)) return 0;
    return 1;
}

static void brute_force(const fs_hardware_t *hw, int *max_load, int *replicas, double *mb)
{
    brute_t b = {.hw = hw, .n = hw->num_gpus, .best_max = 1 << 30, .best_rep = 1 << 30, .best_mb = -1};
    for (int i = 0; i < b.n; i++) b.closed[i] = fs_hw_peer_mask(hw, i) | 1u << i;
    for (int q = 0; q < b.n; q++)
        for (uint32_t set = 0; set < (1u << b.n); set++) {
            if (!(set & (1u << q)) || !dominates(&b, set)) continue;
            int minimal = 1;
            for (int j = 0; j < b.n && minimal; j++)
                if (j != q && (set & (1u << j)) && dominates(&b, set & ~(1u << j))) minimal = 0;
            if (minimal) b.sets[q][b.nsets[q]++] = set;
        }
    brute_walk(&b, 0);
    *max_load = b.best_max, *replicas = b.best_rep, *mb = b.best_mb;
}

Test(xgnn, min_bandwidth_equals_brute_force_on_small_topologies, .timeout = 300)
{
    static const double speeds[] = {10, 25, 50, 100};
    fs_rng_t r = fs_rng_make(2024, 0);
    for (int trial = 0; trial < 60; trial++) {
        fs_hardware_t hw;
        memset(&hw, 0, sizeof hw);
        hw.num_gpus = 3 + trial % 4; /* 3..6 GPUs */
        hw.fabric = FS_FABRIC_NVLINK;
        for (int i = 0; i < hw.num_gpus; i++) {
            hw.memory_bytes[i] = 1 << 20, hw.host_gbps[i] = 16;
            hw.local_gbps[i] = fs_rng_below(&r, 3) ? 900 : 30; /* sometimes the local term decides */
            for (int j = i + 1; j < hw.num_gpus; j++)
                if (fs_rng_below(&r, 100) < 55) hw.link_gbps[i][j] = hw.link_gbps[j][i] = speeds[fs_rng_below(&r, 4)];
        }
        fs_xgnn_t x;
        fs_error_t err = {0};
        cr_assert_eq(fs_xgnn_solve(&hw, 0, &x, &err), FS_OK, "%s", err.msg);
        cr_assert(x.exact, "trial %d", trial);
        check_one_hop(&hw, &x);
        int want_max, want_rep;
        double want_mb;
        brute_force(&hw, &want_max, &want_rep, &want_mb);
        cr_assert_eq(x.max_load, want_max, "trial %d", trial);
        cr_assert_eq(x.replicas, want_rep, "trial %d", trial);
        cr_assert_float_eq(x.min_bandwidth, want_mb, 1e-9 * want_mb, "trial %d: %g vs brute force %g", trial,
                           x.min_bandwidth, want_mb);
        /* and the reported bandwidth is what the plan's own sources give */
        fs_xgnn_t again = x;
        cr_assert_eq(fs_xgnn_evaluate(&hw, &again, &err), FS_OK);
        cr_assert_float_eq(again.min_bandwidth, x.min_bandwidth, 1e-12 * want_mb);
    }
}

/* ==== topology split ======================================================== */

Test(topo, hot_prefix_mod_n_within_budget)
{
    /* 6 nodes, degrees 3,1,0,2,5,1; hotness = degree */
    int64_t indptr[] = {0, 3, 4, 4, 6, 11, 12};
    double hot[] = {3, 1, 0, 2, 5, 1};
    uint32_t holds[2] = {1u << 0, 1u << 1};
    int64_t big[2] = {1 << 20, 1 << 20};
    fs_topo_split_t t;
    fs_error_t err = {0};
    cr_assert_eq(fs_topo_split(hot, NULL, 6, indptr, 4, 2, holds, big, 1, &t, &err), FS_OK, "%s", err.msg);
    int64_t want_order[] = {4, 0, 3, 1, 5, 2}; /* ties by id */
    cr_assert_arr_eq(t.old_of_new, want_order, sizeof want_order);
    cr_assert_eq(t.hot, 6);
    cr_assert_eq(fs_topo_part_of(&t, 4), 0);
    cr_assert_eq(fs_topo_local_of(&t, 4), 0);
    cr_assert_eq(fs_topo_part_of(&t, 0), 1);
    cr_assert_eq(fs_topo_part_of(&t, 3), 0);
    cr_assert_eq(fs_topo_local_of(&t, 3), 1);
    cr_assert_eq(t.part_rows[0], 3);
    cr_assert_eq(t.part_bytes[0], 8 + (8 + 20) + (8 + 8) + (8 + 4)); /* nodes 4, 3, 5 */
    fs_topo_split_free(&t);
    /* GPU0 fits node 4 (28 B) and the closing entry (8 B) but not node 3: prefix stops at new id 2 */
    int64_t tight[2] = {8 + 28 + 10, 1 << 20};
    cr_assert_eq(fs_topo_split(hot, NULL, 6, indptr, 4, 2, holds, tight, 1, &t, &err), FS_OK);
    cr_assert_eq(t.hot, 2);
    cr_assert_eq(fs_topo_part_of(&t, 3), -1);
    cr_assert_eq(fs_topo_local_of(&t, 3), 0); /* first cold node: host row 0 */
    fs_topo_split_free(&t);
    int64_t negative[2] = {-1, 5};
    cr_assert_eq(fs_topo_split(hot, NULL, 6, indptr, 4, 2, holds, negative, 1, &t, &err), FS_ERR_INVALID_ARGUMENT);
}
