/* test_gather.c — the CPU gather engine against a naive loop: every dtype
 * path, routed multi-tier views, counters, pools, and bad ids. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_gather.h"
#include "fs_rng.h"

#define N 5000
#define DIM 37 /* odd on purpose: rows are not a multiple of 16 bytes */

static float *make_table(void)
{
    float *t = malloc(sizeof(float) * N * DIM);
    for (int v = 0; v < N; v++)
        for (int j = 0; j < DIM; j++) t[v * DIM + j] = (float)v + (float)j / 64.0f;
    return t;
}

static int64_t *random_ids(int64_t n, uint64_t seed)
{
    int64_t *ids = malloc(sizeof *ids * (size_t)n);
    fs_rng_t r = fs_rng_make(seed, 0);
    for (int64_t i = 0; i < n; i++) ids[i] = (int64_t)fs_rng_below(&r, N);
    return ids;
}

static fs_table_view_t host_view(const void *data, fs_dtype_t dt)
{
    fs_table_view_t v = {.dtype = dt, .num_rows = N, .dim = DIM, .row_bytes = DIM * fs_dtype_size(dt),
                         .num_tiers = 1};
    v.tier[0] = (fs_tier_ref_t){.kind = FS_TIER_HOST, .device = -1, .base = data, .rows = N};
    return v;
}

Test(gather, matches_naive_loop_on_1_2_4_threads)
{
    float *t = make_table();
    int64_t n = 20011, *ids = random_ids(n, 1);
    float *want = malloc(sizeof(float) * (size_t)n * DIM), *got = malloc(sizeof(float) * (size_t)n * DIM);
    for (int64_t i = 0; i < n; i++) memcpy(want + i * DIM, t + ids[i] * DIM, sizeof(float) * DIM);
    fs_table_view_t v = host_view(t, FS_DTYPE_F32);
    for (int threads = 1; threads <= 4; threads *= 2) {
        fs_pool_t *pool;
        fs_error_t err = {0};
        cr_assert_eq(fs_pool_create(threads, &pool, &err), FS_OK);
        memset(got, 0xab, sizeof(float) * (size_t)n * DIM);
        fs_gather_counters_t c = {0};
        cr_assert_eq(fs_gather_cpu(&v, ids, n, FS_DTYPE_F32, got, pool, &c, &err), FS_OK, "%s", err.msg);
        cr_assert_arr_eq(got, want, sizeof(float) * (size_t)n * DIM, "%d threads", threads);
        cr_assert_eq(c.rows[0], (uint64_t)n);
        cr_assert_eq(c.bytes[0], (uint64_t)n * DIM * 4);
        fs_pool_destroy(pool);
    }
    free(t), free(ids), free(want), free(got);
}

/* Runs of consecutive ids (copied as blocks) mixed with random ids, runs
 * crossing the pool's blocks and the end: the naive loop's rows exactly. */
Test(gather, runs_of_consecutive_ids_match_the_naive_loop)
{
    float *t = make_table();
    int64_t n = 20011, *ids = random_ids(n, 7);
    fs_rng_t r = fs_rng_make(8, 0);
    for (int64_t i = 0; i < n;) { /* every few ids, a run of 1..600 */
        int64_t len = 1 + (int64_t)fs_rng_below(&r, 600), start = (int64_t)fs_rng_below(&r, N - len);
        for (int64_t k = 0; k < len && i + k < n; k++) ids[i + k] = start + k;
        i += len + (int64_t)fs_rng_below(&r, 20);
    }
    for (int64_t k = 0; k < 300; k++) ids[n - 300 + k] = N - 300 + k; /* a run to the last row and the end */
    float *want = malloc(sizeof(float) * (size_t)n * DIM), *got = malloc(sizeof(float) * (size_t)n * DIM);
    for (int64_t i = 0; i < n; i++) memcpy(want + i * DIM, t + ids[i] * DIM, sizeof(float) * DIM);
    fs_table_view_t v = host_view(t, FS_DTYPE_F32);
    for (int threads = 1; threads <= 3; threads++) {
        fs_pool_t *pool;
        fs_error_t err = {0};
        cr_assert_eq(fs_pool_create(threads, &pool, &err), FS_OK);
        memset(got, 0xab, sizeof(float) * (size_t)n * DIM);
        fs_gather_counters_t c = {0};
        cr_assert_eq(fs_gather_cpu(&v, ids, n, FS_DTYPE_F32, got, pool, &c, &err), FS_OK, "%s", err.msg);
        cr_assert_arr_eq(got, want, sizeof(float) * (size_t)n * DIM, "%d threads", threads);
        cr_assert_eq(c.rows[0], (uint64_t)n, "runs count their rows");
        cr_assert_eq(c.bytes[0], (uint64_t)n * DIM * 4);
        fs_pool_destroy(pool);
    }
    free(t), free(ids), free(want), free(got);
}

Test(gather, half_precision_served_as_float32_exactly)
{
    uint16_t *h = malloc(2 * N * DIM), *b = malloc(2 * N * DIM);
    fs_rng_t r = fs_rng_make(9, 9);
    for (int i = 0; i < N * DIM; i++) h[i] = (uint16_t)fs_rng_next(&r), b[i] = (uint16_t)fs_rng_next(&r);
    int64_t n = 3001, *ids = random_ids(n, 2);
    float *out = malloc(sizeof(float) * (size_t)n * DIM);
    uint16_t *raw = malloc(2 * (size_t)n * DIM);
    fs_error_t err = {0};
    fs_table_view_t v = host_view(h, FS_DTYPE_F16);
    cr_assert_eq(fs_gather_cpu(&v, ids, n, FS_DTYPE_F32, out, NULL, NULL, &err), FS_OK, "%s", err.msg);
    for (int64_t i = 0; i < n * DIM; i++) {
        float want = fs_f16_to_f32(h[ids[i / DIM] * DIM + i % DIM]);
        cr_assert(memcmp(&out[i], &want, 4) == 0, "f16 element %lld", (long long)i); /* NaNs compare by bits */
    }
    cr_assert_eq(fs_gather_cpu(&v, ids, n, FS_DTYPE_F16, raw, NULL, NULL, &err), FS_OK, "pass-through");
    for (int64_t i = 0; i < n; i++) cr_assert_arr_eq(raw + i * DIM, h + ids[i] * DIM, 2 * DIM);
    v = host_view(b, FS_DTYPE_BF16);
    cr_assert_eq(fs_gather_cpu(&v, ids, n, FS_DTYPE_F32, out, NULL, NULL, &err), FS_OK);
    for (int64_t i = 0; i < n * DIM; i++) {
        float want = fs_bf16_to_f32(b[ids[i / DIM] * DIM + i % DIM]);
        cr_assert(memcmp(&out[i], &want, 4) == 0, "bf16 element %lld", (long long)i);
    }
    cr_assert_eq(fs_gather_cpu(&v, ids, n, FS_DTYPE_F16, raw, NULL, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "bfloat16"), "%s", err.msg);
    free(h), free(b), free(ids), free(out), free(raw);
}

Test(gather, three_tier_route_is_bit_identical_to_host)
{
    float *t = make_table();
    /* tier 1 (simulated device) holds even ids, tier 2 (simulated peer) ids % 3 == 1 */
    float *dev = malloc(sizeof(float) * N * DIM), *peer = malloc(sizeof(float) * N * DIM);
    uint64_t *route = malloc(sizeof *route * N);
    int64_t nd = 0, np = 0, expect[3] = {0};
    for (int64_t v = 0; v < N; v++) {
        if (v % 2 == 0) {
            memcpy(dev + nd * DIM, t + v * DIM, sizeof(float) * DIM);
            route[v] = FS_ROUTE(1, nd++);
        } else if (v % 3 == 1) {
            memcpy(peer + np * DIM, t + v * DIM, sizeof(float) * DIM);
            route[v] = FS_ROUTE(2, np++);
        } else {
            route[v] = FS_ROUTE(0, v);
        }
    }
    fs_table_view_t host = host_view(t, FS_DTYPE_F32), tiered = host;
    tiered.num_tiers = 3;
    tiered.tier[1] = (fs_tier_ref_t){FS_TIER_SIM_DEVICE, 0, dev, nd};
    tiered.tier[2] = (fs_tier_ref_t){FS_TIER_SIM_DEVICE, 1, peer, np};
    tiered.route = route;
    int64_t n = 10000, *ids = random_ids(n, 3);
    for (int64_t i = 0; i < n; i++) expect[FS_ROUTE_TIER(route[ids[i]])]++;
    float *a = malloc(sizeof(float) * (size_t)n * DIM), *b = malloc(sizeof(float) * (size_t)n * DIM);
    fs_gather_counters_t c = {0};
    fs_pool_t *pool;
    fs_error_t err = {0};
    cr_assert_eq(fs_pool_create(2, &pool, &err), FS_OK);
    cr_assert_eq(fs_gather_cpu(&host, ids, n, FS_DTYPE_F32, a, pool, NULL, &err), FS_OK);
    cr_assert_eq(fs_gather_cpu(&tiered, ids, n, FS_DTYPE_F32, b, pool, &c, &err), FS_OK);
    cr_assert_arr_eq(a, b, sizeof(float) * (size_t)n * DIM);
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(c.rows[k], (uint64_t)expect[k], "tier %d rows", k);
        cr_assert_eq(c.bytes[k], (uint64_t)expect[k] * DIM * 4);
    }
    fs_pool_destroy(pool);
    free(t), free(dev), free(peer), free(route), free(ids), free(a), free(b);
}

Test(gather, bad_ids_fail_with_position)
{
    float *t = make_table();
    fs_table_view_t v = host_view(t, FS_DTYPE_F32);
    int64_t ids[5] = {1, 2, 3, N, -1};
    float out[5 * DIM];
    fs_error_t err = {0};
    cr_assert_eq(fs_gather_cpu(&v, ids, 5, FS_DTYPE_F32, out, NULL, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "id 5000 at position 3"), "%s", err.msg);
    ids[3] = 0;
    cr_assert_eq(fs_gather_cpu(&v, ids, 5, FS_DTYPE_F32, out, NULL, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "id -1 at position 4"), "%s", err.msg);
    cr_assert_eq(fs_gather_cpu(&v, ids, 0, FS_DTYPE_F32, out, NULL, NULL, &err), FS_OK, "empty gather");
    free(t);
}

/* Ids are checked block by block inside the pooled copy: a bad id in any
 * block, on any worker, fails the whole gather, names the first bad id, and
 * leaves the counters untouched. */
Test(gather, bad_ids_in_late_blocks_fail_on_a_pool)
{
    float *t = make_table();
    fs_table_view_t v = host_view(t, FS_DTYPE_F32);
    const int64_t n = 20000;
    int64_t *ids = random_ids(n, 9);
    float *out = malloc(sizeof(float) * (size_t)n * DIM);
    fs_pool_t *pool;
    fs_error_t err = {0};
    cr_assert_eq(fs_pool_create(4, &pool, &err), FS_OK);
    const int64_t bad_at[] = {n - 1, 9000, 2047, 2048};
    for (size_t k = 0; k < sizeof bad_at / sizeof *bad_at; k++) {
        int64_t keep = ids[bad_at[k]];
        ids[bad_at[k]] = N + (int64_t)k;
        fs_gather_counters_t c = {0};
        char want[64];
        snprintf(want, sizeof want, "id %d at position %lld ", N + (int)k, (long long)bad_at[k]);
        cr_assert_eq(fs_gather_cpu(&v, ids, n, FS_DTYPE_F32, out, pool, &c, &err), FS_ERR_INVALID_ARGUMENT);
        cr_assert_not_null(strstr(err.msg, want), "want '%s' in '%s'", want, err.msg);
        cr_assert_eq(c.rows[0], 0, "counters moved on a failed gather");
        ids[bad_at[k]] = keep;
    }
    cr_assert_eq(fs_gather_cpu(&v, ids, n, FS_DTYPE_F32, out, pool, NULL, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(out[(n - 1) * DIM], t[ids[n - 1] * DIM]);
    fs_pool_destroy(pool);
    free(t), free(ids), free(out);
}

/* A routed gather reads route[id] to find a row, and looks rows ahead of
 * the one it copies: an id far outside the table just past a block
 * boundary must be refused, never read through (it would fault), at 1 and
 * 2 threads, in the plain loop and the routed one. */
Test(gather, wild_ids_past_a_block_boundary_are_never_read)
{
    float *t = make_table();
    uint64_t *route = malloc(sizeof *route * N);
    for (int64_t v = 0; v < N; v++) route[v] = FS_ROUTE(0, v);
    fs_table_view_t plain = host_view(t, FS_DTYPE_F32), routed = plain;
    routed.route = route;
    const int64_t n = 4096;
    int64_t *ids = random_ids(n, 5);
    float *out = malloc(sizeof(float) * (size_t)n * DIM);
    const int64_t wild[] = {(int64_t)1 << 60, -((int64_t)1 << 60), INT64_MAX, INT64_MIN};
    const int64_t at[] = {511, 512, 513, 520, 1024, 2048, 2050};
    for (int threads = 1; threads <= 2; threads++) {
        fs_pool_t *pool;
        fs_error_t err = {0};
        cr_assert_eq(fs_pool_create(threads, &pool, &err), FS_OK);
        for (size_t w = 0; w < sizeof wild / sizeof *wild; w++)
            for (size_t k = 0; k < sizeof at / sizeof *at; k++) {
                int64_t keep = ids[at[k]];
                ids[at[k]] = wild[w];
                cr_assert_eq(fs_gather_cpu(&routed, ids, n, FS_DTYPE_F32, out, pool, NULL, &err), FS_ERR_INVALID_ARGUMENT);
                cr_assert_eq(fs_gather_cpu(&plain, ids, n, FS_DTYPE_F32, out, pool, NULL, &err), FS_ERR_INVALID_ARGUMENT);
                char want[64];
                snprintf(want, sizeof want, "at position %lld ", (long long)at[k]);
                cr_assert_not_null(strstr(err.msg, want), "want '%s' in '%s'", want, err.msg);
                ids[at[k]] = keep;
            }
        fs_pool_destroy(pool);
    }
    free(t), free(route), free(ids), free(out);
}

Test(gather, pool_survives_many_small_jobs)
{
    float *t = make_table();
    fs_table_view_t v = host_view(t, FS_DTYPE_F32);
    fs_pool_t *pool;
    fs_error_t err = {0};
    cr_assert_eq(fs_pool_create(3, &pool, &err), FS_OK);
    int64_t *ids = random_ids(5000, 4);
    float *out = malloc(sizeof(float) * 5000 * DIM);
    for (int rep = 0; rep < 300; rep++) {
        int64_t n = 1 + rep * 13 % 5000;
        cr_assert_eq(fs_gather_cpu(&v, ids, n, FS_DTYPE_F32, out, pool, NULL, &err), FS_OK);
        cr_assert_arr_eq(out + (n - 1) * DIM, t + ids[n - 1] * DIM, sizeof(float) * DIM);
    }
    fs_pool_destroy(pool);
    free(t), free(ids), free(out);
}
