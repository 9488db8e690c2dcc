/* test_reorder.c — Match-Reorder and delta batches (kernels/fs_reorder.h,
 * docs/algorithms.md §6) against naive oracles: overlaps by sorting and a
 * two-pointer intersection, the greedy order re-derived from those overlaps,
 * hand-worked windows (prev, ties, identity fallback), deltas reassembled
 * into the batch's feature rows byte for byte, and bad arguments named. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "fs_reorder.h"
#include "fs_rng.h"

static fs_reorder_ws_t *ws;

static void setup(void)
{
    fs_error_t err = {0};
    cr_assert_eq(fs_reorder_ws_create(&ws, &err), FS_OK, "%s", err.msg);
}

static void teardown(void)
{
    fs_reorder_ws_destroy(ws);
}

TestSuite(reorder, .init = setup, .fini = teardown, .timeout = 120);

/* ---- the naive oracle ------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* A set's distinct ids, sorted (a malloc'ed copy; *m receives the count). */
static int64_t *sorted_distinct(const fs_rowset_t *s, int64_t *m)
{
    int64_t *v = malloc(sizeof *v * (size_t)(s->n + 1));
    if (s->n) memcpy(v, s->ids, sizeof *v * (size_t)s->n);
    qsort(v, (size_t)s->n, sizeof *v, cmp_i64);
    int64_t k = 0;
    for (int64_t i = 0; i < s->n; i++)
        if (k == 0 || v[k - 1] != v[i]) v[k++] = v[i];
    *m = k;
    return v;
}

static int64_t naive_intersection(const fs_rowset_t *a, const fs_rowset_t *b)
{
    int64_t na, nb, i = 0, j = 0, common = 0;
    int64_t *x = sorted_distinct(a, &na), *y = sorted_distinct(b, &nb);
    while (i < na && j < nb) {
        if (x[i] < y[j]) i++;
        else if (x[i] > y[j]) j++;
        else common++, i++, j++;
    }
    free(x);
    free(y);
    return common;
}

static void naive_overlap(const fs_rowset_t *sets, int n, int64_t *ov)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) ov[i * n + j] = i == j ? 0 : naive_intersection(&sets[i], &sets[j]);
}

/* The total overlap of visiting `order`, after prev when given. */
static int64_t naive_path_total(const fs_rowset_t *prev, const fs_rowset_t *sets, int n, const int *order)
{
    int64_t t = prev ? naive_intersection(prev, &sets[order[0]]) : 0;
    for (int k = 0; k + 1 < n; k++) t += naive_intersection(&sets[order[k]], &sets[order[k + 1]]);
    return t;
}

/* The documented rule, written out again: greedy path from prev (or set 0),
 * ties to the lowest index; identity when at least as good. */
static void naive_order(const fs_rowset_t *prev, const fs_rowset_t *sets, int n, int *order)
{
    int64_t *ov = malloc(sizeof *ov * (size_t)(n * n));
    naive_overlap(sets, n, ov);
    int path[FS_REORDER_MAX_WINDOW], seen[FS_REORDER_MAX_WINDOW] = {0}, cur = 0;
    if (prev) {
        int64_t best = -1;
        for (int j = 0; j < n; j++) {
            int64_t o = naive_intersection(prev, &sets[j]);
            if (o > best) best = o, cur = j;
        }
    }
    path[0] = cur, seen[cur] = 1;
    for (int k = 1; k < n; k++) {
        int next = -1;
        for (int j = 0; j < n; j++)
            if (!seen[j] && (next < 0 || ov[cur * n + j] > ov[cur * n + next])) next = j;
        path[k] = cur = next, seen[next] = 1;
    }
    int identity[FS_REORDER_MAX_WINDOW];
    for (int k = 0; k < n; k++) identity[k] = k;
    int keep = naive_path_total(prev, sets, n, identity) >= naive_path_total(prev, sets, n, path);
    memcpy(order, keep ? identity : path, sizeof *order * (size_t)n);
    free(ov);
}

/* ---- random windows -------------------------------------------------------- */

#define MAX_SET 48

typedef struct {
    int n;
    fs_rowset_t sets[FS_REORDER_MAX_WINDOW], prev;
    int64_t ids[FS_REORDER_MAX_WINDOW][MAX_SET], prev_ids[MAX_SET];
} window_t;

/* A set of 0..MAX_SET-1 ids drawn from a pool of `pool` ids (so sets overlap
 * and ids repeat); about one set in eight is empty. Ids are spread over
 * int64 (negative ones too) so the map sees more than small integers. */
static void random_set(fs_rng_t *r, int64_t pool, int64_t *ids, fs_rowset_t *s)
{
    s->n = fs_rng_below(r, 8) == 0 ? 0 : (int64_t)fs_rng_below(r, MAX_SET);
    s->ids = s->n ? ids : NULL;
    for (int64_t k = 0; k < s->n; k++) ids[k] = ((int64_t)fs_rng_below(r, (uint64_t)pool) - pool / 3) * 1000003;
}

/* A window of min_n..max_n sets and a previous batch, from one pool. */
static void random_window(fs_rng_t *r, int min_n, int max_n, window_t *w)
{
    w->n = min_n + (int)fs_rng_below(r, (uint64_t)(max_n - min_n + 1));
    int64_t pool = 4 + (int64_t)fs_rng_below(r, 120);
    for (int i = 0; i < w->n; i++) random_set(r, pool, w->ids[i], &w->sets[i]);
    random_set(r, pool, w->prev_ids, &w->prev);
}

static void check_overlap(const window_t *w)
{
    int64_t got[FS_REORDER_MAX_WINDOW * FS_REORDER_MAX_WINDOW], want[FS_REORDER_MAX_WINDOW * FS_REORDER_MAX_WINDOW];
    fs_error_t err = {0};
    cr_assert_eq(fs_reorder_overlap(ws, w->sets, w->n, got, &err), FS_OK, "%s", err.msg);
    naive_overlap(w->sets, w->n, want);
    for (int i = 0; i < w->n; i++)
        for (int j = 0; j < w->n; j++)
            cr_assert_eq(got[i * w->n + j], want[i * w->n + j], "window of %d: ov[%d][%d] = %lld, want %lld", w->n, i,
                         j, (long long)got[i * w->n + j], (long long)want[i * w->n + j]);
}

Test(reorder, overlap_equals_the_naive_intersections)
{
    fs_rng_t r = fs_rng_make(2, 0);
    window_t w;
    for (int t = 0; t < 300; t++) {
        random_window(&r, 1, 16, &w);
        check_overlap(&w);
    }
    for (int t = 0; t < 10; t++) { /* full windows: bit 63 of the masks */
        random_window(&r, FS_REORDER_MAX_WINDOW, FS_REORDER_MAX_WINDOW, &w);
        check_overlap(&w);
    }
}

Test(reorder, overlap_counts_distinct_ids_and_empty_sets)
{
    int64_t a[6] = {7, 7, 7, 8, 9, 7}, b[4] = {7, 9, 9, 100}, ov[9];
    fs_rowset_t sets[3] = {{6, a}, {4, b}, {0, NULL}};
    fs_error_t err = {0};
    cr_assert_eq(fs_reorder_overlap(ws, sets, 3, ov, &err), FS_OK, "%s", err.msg);
    int64_t want[9] = {0, 2, 0, 2, 0, 0, 0, 0, 0}; /* {7,9}; the empty set meets nothing */
    cr_assert_arr_eq(ov, want, sizeof want);
    cr_assert_eq(fs_reorder_overlap(ws, sets, 1, ov, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(ov[0], 0, "a window of one: only the diagonal");
}

/* A fresh workspace whose window has no ids at all still answers lookups
 * for the previous batch's ids. */
Test(reorder, empty_window_with_a_previous_batch)
{
    int64_t p[3] = {1, 2, 3};
    fs_rowset_t prev = {3, p}, sets[3] = {{0, NULL}, {0, NULL}, {0, NULL}};
    int order[3], want[3] = {0, 1, 2};
    int64_t total = -1, id_total = -1;
    fs_error_t err = {0};
    cr_assert_eq(fs_reorder_window(ws, &prev, sets, 3, order, &total, &id_total, &err), FS_OK, "%s", err.msg);
    cr_assert_arr_eq(order, want, sizeof want);
    cr_assert_eq(total, 0);
    cr_assert_eq(id_total, 0);
}

static int is_permutation(const int *order, int n)
{
    int seen[FS_REORDER_MAX_WINDOW] = {0};
    for (int k = 0; k < n; k++) {
        if (order[k] < 0 || order[k] >= n || seen[order[k]]) return 0;
        seen[order[k]] = 1;
    }
    return 1;
}

/* Checks one window's order against the oracle; 1 if it is not the identity's total. */
static int check_window(const window_t *w, int with_prev)
{
    const fs_rowset_t *prev = with_prev ? &w->prev : NULL;
    int order[FS_REORDER_MAX_WINDOW], want[FS_REORDER_MAX_WINDOW], identity[FS_REORDER_MAX_WINDOW];
    int64_t total = -1, id_total = -1;
    fs_error_t err = {0};
    cr_assert_eq(fs_reorder_window(ws, prev, w->sets, w->n, order, &total, &id_total, &err), FS_OK, "%s", err.msg);
    cr_assert(is_permutation(order, w->n), "window of %d: not a permutation", w->n);
    for (int k = 0; k < w->n; k++) identity[k] = k;
    cr_assert_eq(total, naive_path_total(prev, w->sets, w->n, order), "*total is the returned order's");
    cr_assert_eq(id_total, naive_path_total(prev, w->sets, w->n, identity), "*identity_total");
    cr_assert_geq(total, id_total, "never worse than the identity order");
    naive_order(prev, w->sets, w->n, want);
    cr_assert_arr_eq(order, want, sizeof *order * (size_t)w->n, "window of %d (prev %d): not the documented order",
                     w->n, with_prev);
    return total > id_total;
}

Test(reorder, greedy_order_on_random_windows)
{
    fs_rng_t r = fs_rng_make(3, 0);
    window_t w;
    int reordered = 0;
    for (int t = 0; t < 400; t++) {
        random_window(&r, 1, 16, &w);
        reordered += check_window(&w, t % 2);
    }
    cr_assert_gt(reordered, 50, "only %d windows reordered: the test draws too little overlap", reordered);
    for (int t = 0; t < 10; t++) {
        random_window(&r, FS_REORDER_MAX_WINDOW, FS_REORDER_MAX_WINDOW, &w);
        reordered += check_window(&w, 1); /* 64 sets and the previous batch */
    }
}

/* ---- hand-worked windows ----------------------------------------------------- */

static int64_t s_a[4] = {1, 2, 3, 4}, s_b[2] = {10, 11}, s_c[4] = {3, 4, 5, 6}, s_d[4] = {5, 6, 7, 10};

Test(reorder, hand_worked_window_without_prev)
{
    /* Overlaps: 0-1 0, 0-2 2 {3,4}, 0-3 0, 1-2 0, 1-3 1 {10}, 2-3 2 {5,6}.
     * Start at 0: 0-2 = 2 beats 0-1 = 0 and 0-3 = 0 -> 2; from 2: 2-3 = 2
     * beats 2-1 = 0 -> 3; then 1 (3-1 = 1). Total 2 + 2 + 1 = 5 against the
     * identity's 0 + 0 + 2 = 2, so the order is 0, 2, 3, 1. */
    fs_rowset_t sets[4] = {{4, s_a}, {2, s_b}, {4, s_c}, {4, s_d}};
    int order[4], want[4] = {0, 2, 3, 1};
    int64_t total, id_total;
    fs_error_t err = {0};
    cr_assert_eq(fs_reorder_window(ws, NULL, sets, 4, order, &total, &id_total, &err), FS_OK, "%s", err.msg);
    cr_assert_arr_eq(order, want, sizeof want);
    cr_assert_eq(total, 5);
    cr_assert_eq(id_total, 2);
    cr_assert_eq(fs_reorder_window(ws, NULL, sets, 4, order, NULL, NULL, &err), FS_OK, "totals may be NULL");
    cr_assert_arr_eq(order, want, sizeof want);
}

Test(reorder, hand_worked_window_with_prev)
{
    /* prev = {10, 11, 12} meets 0: 0, 1: 2 {10,11}, 2: 0, 3: 1 {10}: first 1.
     * From 1: 0 -> 0, 2 -> 0, 3 -> 1: 3. From 3: 0 -> 0, 2 -> 2: 2. Then 0
     * (2-0 = 2). Total 2 + 1 + 2 + 2 = 7; identity prev->0 = 0, then 0 + 0 + 2
     * = 2. Order 1, 3, 2, 0. */
    int64_t p[3] = {10, 11, 12};
    fs_rowset_t prev = {3, p}, sets[4] = {{4, s_a}, {2, s_b}, {4, s_c}, {4, s_d}};
    int order[4], want[4] = {1, 3, 2, 0};
    int64_t total, id_total;
    fs_error_t err = {0};
    cr_assert_eq(fs_reorder_window(ws, &prev, sets, 4, order, &total, &id_total, &err), FS_OK, "%s", err.msg);
    cr_assert_arr_eq(order, want, sizeof want);
    cr_assert_eq(total, 7);
    cr_assert_eq(id_total, 2);
    fs_rowset_t empty = {0, NULL}; /* an empty prev meets nothing: ties to set 0, as without prev */
    cr_assert_eq(fs_reorder_window(ws, &empty, sets, 4, order, &total, &id_total, &err), FS_OK, "%s", err.msg);
    int from0[4] = {0, 2, 3, 1};
    cr_assert_arr_eq(order, from0, sizeof from0);
    cr_assert_eq(total, 5);
}

Test(reorder, ties_go_to_the_lowest_index)
{
    /* 0 = {1,2}, 1 = {5,6}, 2 = {1,9}, 3 = {2,8}. From 0: 1 -> 0, 2 -> 1,
     * 3 -> 1: the tie goes to 2. From 2: 1 -> 0, 3 -> 0: the tie goes to 1.
     * Then 3. Total 1 + 0 + 0 = 1 > identity 0 + 0 + 0 = 0: order 0, 2, 1, 3. */
    int64_t a[2] = {1, 2}, b[2] = {5, 6}, c[2] = {1, 9}, d[2] = {2, 8};
    fs_rowset_t sets[4] = {{2, a}, {2, b}, {2, c}, {2, d}};
    int order[4], want[4] = {0, 2, 1, 3};
    int64_t total, id_total;
    fs_error_t err = {0};
    cr_assert_eq(fs_reorder_window(ws, NULL, sets, 4, order, &total, &id_total, &err), FS_OK, "%s", err.msg);
    cr_assert_arr_eq(order, want, sizeof want);
    cr_assert_eq(total, 1);
    cr_assert_eq(id_total, 0);
}

Test(reorder, identity_is_kept_when_greedy_is_not_better)
{
    /* Overlaps 0-2 = 3 {1,2,3}, 0-1 = 2 {4,5}, 1-2 = 2 {6,7}, 2-3 = 2 {8,9},
     * 3-4 = 2 {10,11}, every other pair 0. Greedy: 0 -> 2 (3 beats 2);
     * from 2, 1 and 3 tie at 2 -> 1; from 1, 3 and 4 tie at 0 -> 3; then 4 (2):
     * 3 + 2 + 0 + 2 = 7. The identity 0-1-2-3-4 has 2 + 2 + 2 + 2 = 8: kept. */
    int64_t s0[5] = {1, 2, 3, 4, 5}, s1[4] = {4, 5, 6, 7}, s2[7] = {1, 2, 3, 6, 7, 8, 9}, s3[4] = {8, 9, 10, 11},
            s4[2] = {10, 11};
    fs_rowset_t sets[5] = {{5, s0}, {4, s1}, {7, s2}, {4, s3}, {2, s4}};
    int order[5], want[5] = {0, 1, 2, 3, 4};
    int64_t total, id_total;
    fs_error_t err = {0};
    cr_assert_eq(fs_reorder_window(ws, NULL, sets, 5, order, &total, &id_total, &err), FS_OK, "%s", err.msg);
    cr_assert_arr_eq(order, want, sizeof want);
    cr_assert_eq(total, 8);
    cr_assert_eq(id_total, 8);
    /* A tie between different paths: 0-1 = 1 {1}, 0-2 = 2 {2,3}, 1-2 = 1 {4},
     * 2-3 = 2 {5,6}, others 0. Greedy 0 -> 2 (2) -> 3 (2) -> 1 (0) = 4; the
     * identity 1 + 1 + 2 = 4 is as good: kept. */
    int64_t t0[3] = {1, 2, 3}, t1[2] = {1, 4}, t2[5] = {2, 3, 4, 5, 6}, t3[2] = {5, 6};
    fs_rowset_t tie[4] = {{3, t0}, {2, t1}, {5, t2}, {2, t3}};
    cr_assert_eq(fs_reorder_window(ws, NULL, tie, 4, order, &total, &id_total, &err), FS_OK, "%s", err.msg);
    cr_assert_arr_eq(order, want, sizeof *order * 4);
    cr_assert_eq(total, 4);
    cr_assert_eq(id_total, 4);
    /* Disjoint sets: greedy and identity both 0, a tie: the identity. */
    int64_t x[1] = {1}, y[1] = {2}, z[1] = {3};
    fs_rowset_t disjoint[3] = {{1, z}, {1, y}, {1, x}};
    cr_assert_eq(fs_reorder_window(ws, NULL, disjoint, 3, order, &total, &id_total, &err), FS_OK, "%s", err.msg);
    cr_assert_arr_eq(order, want, sizeof *order * 3);
    cr_assert_eq(total, 0);
}

/* ---- delta ------------------------------------------------------------------- */

#define DIM 3

/* A feature row as a pure function of its id. */
static void row_of(int64_t id, float *row)
{
    row[0] = (float)id * 0.5f;
    row[1] = -(float)(id % 1009);
    row[2] = (float)(id ^ 0x5a5a) + 0.25f;
}

static float *rows_of(const int64_t *ids, int64_t n)
{
    float *rows = malloc(sizeof *rows * DIM * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++) row_of(ids[i], rows + DIM * i);
    return rows;
}

/* Runs the delta, checks take/new_pos against their definitions, reassembles
 * C's rows from P's and the new ones, and returns the new-row count. */
static int64_t check_delta(const int64_t *p, int64_t pn, const int64_t *c, int64_t cn)
{
    int64_t *take = malloc(sizeof *take * (size_t)(cn + 1)), *new_pos = malloc(sizeof *new_pos * (size_t)(cn + 1));
    int64_t num_new = -1;
    fs_error_t err = {0};
    cr_assert_eq(fs_reorder_delta(ws, p, pn, c, cn, take, new_pos, &num_new, &err), FS_OK, "%s", err.msg);
    cr_assert(num_new >= 0 && num_new <= cn);
    for (int64_t i = 0; i < cn; i++) {
        cr_assert(take[i] >= 0 && take[i] < pn + num_new, "take[%lld] = %lld", (long long)i, (long long)take[i]);
        if (take[i] < pn) {
            cr_assert_eq(p[take[i]], c[i], "take[%lld] names a row of P with another id", (long long)i);
            for (int64_t j = 0; j < take[i]; j++) cr_assert_neq(p[j], c[i], "take[%lld]: not P's first", (long long)i);
        } else {
            for (int64_t j = 0; j < pn; j++) cr_assert_neq(p[j], c[i], "id %lld is in P, yet new", (long long)c[i]);
        }
    }
    for (int64_t k = 0; k < num_new; k++) {
        int64_t at = new_pos[k];
        cr_assert(at >= 0 && at < cn);
        cr_assert(k == 0 || new_pos[k - 1] < at, "new rows in order of first appearance");
        for (int64_t i = 0; i < at; i++) cr_assert_neq(c[i], c[at], "new_pos[%lld]: not the first", (long long)k);
        cr_assert_eq(take[at], pn + k);
    }
    float *prow = rows_of(p, pn), *crow = rows_of(c, cn);
    float *concat = malloc(sizeof *concat * DIM * (size_t)(pn + num_new + 1));
    float *full = malloc(sizeof *full * DIM * (size_t)(cn + 1));
    if (pn) memcpy(concat, prow, sizeof *concat * DIM * (size_t)pn);
    for (int64_t k = 0; k < num_new; k++)
        memcpy(concat + DIM * (pn + k), crow + DIM * new_pos[k], sizeof *concat * DIM);
    for (int64_t i = 0; i < cn; i++) memcpy(full + DIM * i, concat + DIM * take[i], sizeof *full * DIM);
    cr_assert(memcmp(full, crow, sizeof *full * DIM * (size_t)cn) == 0, "reassembled rows differ from C's");
    free(take), free(new_pos), free(prow), free(crow), free(concat), free(full);
    return num_new;
}

/* The number of C's distinct ids not in P, by sorting. */
static int64_t naive_new_count(const int64_t *p, int64_t pn, const int64_t *c, int64_t cn)
{
    fs_rowset_t ps = {pn, p}, cs = {cn, c};
    int64_t m;
    free(sorted_distinct(&cs, &m));
    return m - naive_intersection(&ps, &cs);
}

Test(reorder, delta_reassembles_the_batch_exactly)
{
    fs_rng_t r = fs_rng_make(4, 0);
    enum { MAXN = 300 };
    int64_t p[MAXN], c[MAXN];
    for (int t = 0; t < 300; t++) {
        int64_t pool = 1 + (int64_t)fs_rng_below(&r, 400);
        int64_t pn = (int64_t)fs_rng_below(&r, MAXN), cn = (int64_t)fs_rng_below(&r, MAXN);
        for (int64_t j = 0; j < pn; j++) p[j] = (int64_t)fs_rng_below(&r, (uint64_t)pool) * 7919 - 5000;
        for (int64_t i = 0; i < cn; i++) c[i] = (int64_t)fs_rng_below(&r, (uint64_t)pool) * 7919 - 5000;
        cr_assert_eq(check_delta(p, pn, c, cn), naive_new_count(p, pn, c, cn), "trial %d", t);
    }
}

Test(reorder, delta_edge_cases)
{
    int64_t p[6] = {5, 9, 5, 2, 9, 7}, c[7] = {9, 4, 4, 5, 8, 4, 2};
    /* Repeats on both sides: 9 -> P's 1, 4 -> new 0, 5 -> P's 0, 8 -> new 1, 2 -> P's 3. */
    int64_t take[7], new_pos[7], num_new;
    fs_error_t err = {0};
    cr_assert_eq(fs_reorder_delta(ws, p, 6, c, 7, take, new_pos, &num_new, &err), FS_OK, "%s", err.msg);
    int64_t want_take[7] = {1, 6, 6, 0, 7, 6, 3}, want_pos[2] = {1, 4};
    cr_assert_eq(num_new, 2);
    cr_assert_arr_eq(take, want_take, sizeof want_take);
    cr_assert_arr_eq(new_pos, want_pos, sizeof want_pos);
    check_delta(p, 6, c, 7);
    cr_assert_eq(check_delta(NULL, 0, c, 7), 5, "no previous batch: every distinct id is new");
    cr_assert_eq(check_delta(p, 6, p, 6), 0, "C == P: nothing new");
    cr_assert_eq(check_delta(p, 6, NULL, 0), 0, "an empty batch");
    cr_assert_eq(fs_reorder_delta(ws, p, 6, NULL, 0, NULL, NULL, &num_new, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(num_new, 0);
}

/* The workspace serves windows and deltas alternately, growing as needed. */
Test(reorder, one_workspace_serves_windows_and_deltas)
{
    fs_rng_t r = fs_rng_make(5, 0);
    enum { BIG = 4000 }; /* past the map's first capacity: it grows */
    int64_t *p = malloc(sizeof *p * BIG), *c = malloc(sizeof *c * BIG);
    window_t w;
    for (int t = 0; t < 6; t++) {
        int64_t n = t % 2 ? BIG : 50;
        for (int64_t i = 0; i < n; i++) {
            p[i] = (int64_t)fs_rng_below(&r, 6000);
            c[i] = (int64_t)fs_rng_below(&r, 6000);
        }
        cr_assert_eq(check_delta(p, n, c, n), naive_new_count(p, n, c, n));
        random_window(&r, 1, 16, &w);
        check_overlap(&w);
        check_window(&w, 1);
    }
    free(p);
    free(c);
}

/* ---- bad arguments ------------------------------------------------------------ */

Test(reorder, bad_arguments_are_named)
{
    int64_t ids[2] = {1, 2}, ov[4], take[2], new_pos[2], num_new;
    int order[2];
    fs_rowset_t sets[FS_REORDER_MAX_WINDOW + 1];
    for (int i = 0; i <= FS_REORDER_MAX_WINDOW; i++) sets[i] = (fs_rowset_t){2, ids};
    fs_error_t err = {0};
    cr_assert_eq(fs_reorder_overlap(ws, sets, 0, ov, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "a window of 0 batches"), "%s", err.msg);
    cr_assert_eq(fs_reorder_window(ws, NULL, sets, 65, order, NULL, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "a window of 65 batches, must be 1..64"), "%s", err.msg);
    sets[1] = (fs_rowset_t){3, NULL};
    cr_assert_eq(fs_reorder_overlap(ws, sets, 2, ov, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "set 1 has 3 ids but a NULL id array"), "%s", err.msg);
    sets[1] = (fs_rowset_t){-1, ids};
    cr_assert_eq(fs_reorder_window(ws, NULL, sets, 2, order, NULL, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "set 1 has n = -1"), "%s", err.msg);
    sets[1] = (fs_rowset_t){2, ids};
    fs_rowset_t prev = {4, NULL};
    cr_assert_eq(fs_reorder_window(ws, &prev, sets, 2, order, NULL, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "the previous batch has 4 ids but a NULL id array"), "%s", err.msg);
    cr_assert_eq(fs_reorder_overlap(ws, sets, 2, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "overlap matrix (ov) is NULL"), "%s", err.msg);
    cr_assert_eq(fs_reorder_window(ws, NULL, sets, 2, NULL, NULL, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "order array is NULL"), "%s", err.msg);
    cr_assert_eq(fs_reorder_overlap(NULL, sets, 2, ov, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "workspace is NULL"), "%s", err.msg);

    cr_assert_eq(fs_reorder_delta(ws, ids, 2, NULL, 2, take, new_pos, &num_new, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "the batch has 2 ids but a NULL id array"), "%s", err.msg);
    cr_assert_eq(fs_reorder_delta(ws, NULL, 3, ids, 2, take, new_pos, &num_new, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "previous batch has 3 ids but a NULL id array"), "%s", err.msg);
    cr_assert_eq(fs_reorder_delta(ws, ids, 2, ids, -2, take, new_pos, &num_new, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "n = -2"), "%s", err.msg);
    cr_assert_eq(fs_reorder_delta(ws, ids, 2, ids, 2, NULL, new_pos, &num_new, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "take array is NULL"), "%s", err.msg);
    cr_assert_eq(fs_reorder_delta(ws, ids, 2, ids, 2, take, NULL, &num_new, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "new_pos array is NULL"), "%s", err.msg);
    cr_assert_eq(fs_reorder_delta(ws, ids, 2, ids, 2, take, new_pos, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "num_new is NULL"), "%s", err.msg);
}
