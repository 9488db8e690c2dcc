/* test_locality_sets.c — the preferred sets a boost favours
 * (fs_las_sets_build): on a hand graph, against a naive propagation on a
 * generated R-MAT graph at any thread count, B from a plan as the reader
 * group's GPU rows, and bad set-building input named. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fs_locality.h"
#include "fs_rng.h"
#include "hardware.h"
#include "locality.h"
#include "locality_fixture.h"
#include "plan.h"

TestSuite(locality, .init = setup, .fini = teardown, .timeout = 120);
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
