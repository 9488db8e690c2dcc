/* test_codec.c — compressed tables (kernels/fs_codec.h): the int8 row code
 * against an independent oracle in double precision, the one rule for the
 * form a gather serves, and the gather engine decoding int8 rows (plain,
 * routed, remote, into unaligned memory). The CUDA decode is held to this
 * CPU twin bit for bit in test_cuda. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fs_codec.h"
#include "fs_gather.h"
#include "fs_rng.h"

#define ROWS 3000
#define DIM 37 /* stored rows of 45 bytes: scale and bias land unaligned in most rows */

static double uniform(fs_rng_t *r) { return (double)(fs_rng_next(r) >> 11) / 9007199254740992.0; }

/* Rows of every shape the code meets: spread, all equal, one outlier,
 * negative only, tiny, huge. */
static void fill_row(float *x, int64_t dim, int kind, fs_rng_t *r)
{
    for (int64_t j = 0; j < dim; j++) {
        double u = uniform(r);
        x[j] = kind == 0 ? (float)(u * 2 - 1)
               : kind == 1 ? 0.25f
               : kind == 2 ? (j == 3 ? 1000.0f : (float)u)
               : kind == 3 ? (float)(-5 - u)
               : kind == 4 ? (float)(u * 1e-30)
                           : (float)((u - 0.5) * 1e30);
    }
}

/* The oracle: the decoded value from the stored bytes, computed in double
 * from the definition (code * scale + bias), and the bound (max - min) / 510. */
static void check_row(const float *x, int64_t dim, const unsigned char *stored, double returned_max)
{
    float scale, bias;
    memcpy(&scale, stored, 4);
    memcpy(&bias, stored + 4, 4);
    double lo = x[0], hi = x[0];
    for (int64_t j = 1; j < dim; j++) lo = fmin(lo, x[j]), hi = fmax(hi, x[j]);
    double bound = (hi - lo) / 510 * (1 + 1e-6) + fmax(fabs(lo), fabs(hi)) * FLT_EPSILON * 2, worst = 0;
    int saw_lo = 0, saw_hi = 0;
    for (int64_t j = 0; j < dim; j++) {
        int8_t q = (int8_t)stored[FS_CODEC_INT8_HEAD + j];
        double v = (double)q * scale + bias;
        worst = fmax(worst, fabs(v - x[j]));
        cr_assert_leq(fabs(v - x[j]), bound, "value %lld: %g decoded as %g (bound %g)", (long long)j, x[j], v, bound);
        saw_lo |= q == -128, saw_hi |= q == 127;
    }
    if (hi > lo) cr_assert(saw_lo && saw_hi, "a spread row uses the whole code range");
    cr_assert_leq(fabs(returned_max - worst), bound, "the reported error is the row's");
}

Test(codec, int8_rows_within_half_a_step_of_every_value)
{
    fs_rng_t r = fs_rng_make(3, 3);
    float x[DIM];
    unsigned char stored[DIM + FS_CODEC_INT8_HEAD];
    for (int kind = 0; kind < 6; kind++)
        for (int t = 0; t < 50; t++) {
            fill_row(x, DIM, kind, &r);
            double sum = 0, max = fs_int8_quantize_row(x, DIM, stored, &sum);
            check_row(x, DIM, stored, max);
            cr_assert_leq(sum, max * DIM + 1e-30);
        }
}

Test(codec, a_row_of_equal_values_is_exact)
{
    float x[DIM], back[DIM];
    unsigned char stored[DIM + FS_CODEC_INT8_HEAD];
    for (int j = 0; j < DIM; j++) x[j] = -3.75f;
    cr_assert_eq(fs_int8_quantize_row(x, DIM, stored, NULL), 0.0);
    fs_int8_dequantize_row(stored, DIM, back);
    cr_assert_arr_eq(back, x, sizeof x);
}

/* The decode is a float32 multiply then a float32 add (no fused
 * multiply-add): the GPU kernel rounds the same, so the two match. */
Test(codec, decode_rounds_each_operation)
{
    unsigned char stored[3 + FS_CODEC_INT8_HEAD];
    float scale = 0.1f, bias = 1.0f / 3.0f, got[3];
    memcpy(stored, &scale, 4), memcpy(stored + 4, &bias, 4);
    int8_t codes[3] = {-128, 7, 127};
    memcpy(stored + FS_CODEC_INT8_HEAD, codes, 3);
    fs_int8_dequantize_row(stored, 3, got);
    for (int j = 0; j < 3; j++) {
        volatile float p = (float)codes[j] * scale; /* volatile: rounded to float32 here */
        float want = p + bias;
        cr_assert_eq(memcmp(&got[j], &want, 4), 0, "code %d: %a, want %a", codes[j], (double)got[j], (double)want);
    }
}

Test(codec, names_and_fits)
{
    for (int c = 0; c < FS_CODEC_COUNT_; c++) cr_assert_eq(fs_codec_from_name(fs_codec_name((fs_codec_t)c)), c);
    cr_assert_eq(fs_codec_from_name(""), FS_CODEC_NONE);
    cr_assert_eq(fs_codec_from_name(NULL), FS_CODEC_NONE);
    cr_assert_eq(fs_codec_from_name("int4"), FS_CODEC_COUNT_);
    cr_assert(fs_codec_fits(FS_CODEC_INT8, FS_DTYPE_I8, 9));
    cr_assert_not(fs_codec_fits(FS_CODEC_INT8, FS_DTYPE_I8, 8), "no codes");
    cr_assert_not(fs_codec_fits(FS_CODEC_INT8, FS_DTYPE_F32, 20));
    cr_assert(fs_codec_fits(FS_CODEC_NARROW, FS_DTYPE_BF16, 4));
    cr_assert_not(fs_codec_fits(FS_CODEC_NARROW, FS_DTYPE_F32, 4));
    int ok;
    cr_assert_eq(fs_out_dtype_from_name("stored", &ok), FS_DTYPE_STORED);
    cr_assert(ok);
    cr_assert_eq(fs_out_dtype_from_name("", &ok), FS_DTYPE_INVALID);
    cr_assert(ok);
    fs_out_dtype_from_name("float17", &ok);
    cr_assert_not(ok);
    cr_assert_str_eq(fs_out_dtype_name(FS_DTYPE_STORED), "stored");
    cr_assert(fs_out_dtype_valid(FS_DTYPE_STORED));
    cr_assert_not(fs_out_dtype_valid((fs_dtype_t)99));
}

/* The served form: the default is as stored, float32 for a compressed
 * table; "stored" and the stored dtype are as stored; float32 widens what
 * can be widened; anything else names the table. */
Test(codec, served_form)
{
    fs_dtype_t dt;
    int64_t dim;
    fs_error_t err = {0};
    struct {
        fs_codec_t c;
        fs_dtype_t stored;
        int64_t sdim;
        fs_dtype_t req, want_dt;
        int64_t want_dim;
    } ok[] = {
        {FS_CODEC_NONE, FS_DTYPE_F32, 16, FS_DTYPE_INVALID, FS_DTYPE_F32, 16},
        {FS_CODEC_NONE, FS_DTYPE_F16, 16, FS_DTYPE_INVALID, FS_DTYPE_F16, 16},
        {FS_CODEC_NONE, FS_DTYPE_F16, 16, FS_DTYPE_F32, FS_DTYPE_F32, 16},
        {FS_CODEC_NONE, FS_DTYPE_I64, 1, FS_DTYPE_STORED, FS_DTYPE_I64, 1},
        {FS_CODEC_NARROW, FS_DTYPE_BF16, 16, FS_DTYPE_INVALID, FS_DTYPE_F32, 16},
        {FS_CODEC_NARROW, FS_DTYPE_BF16, 16, FS_DTYPE_STORED, FS_DTYPE_BF16, 16},
        {FS_CODEC_INT8, FS_DTYPE_I8, 24, FS_DTYPE_INVALID, FS_DTYPE_F32, 16},
        {FS_CODEC_INT8, FS_DTYPE_I8, 24, FS_DTYPE_F32, FS_DTYPE_F32, 16},
        {FS_CODEC_INT8, FS_DTYPE_I8, 24, FS_DTYPE_STORED, FS_DTYPE_I8, 24},
        {FS_CODEC_INT8, FS_DTYPE_I8, 24, FS_DTYPE_I8, FS_DTYPE_I8, 24},
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        cr_assert_eq(fs_codec_served(ok[i].c, ok[i].stored, ok[i].sdim, ok[i].req, "t", &dt, &dim, &err), FS_OK,
                     "case %zu: %s", i, err.msg);
        cr_assert_eq(dt, ok[i].want_dt, "case %zu", i);
        cr_assert_eq(dim, ok[i].want_dim, "case %zu", i);
    }
    cr_assert_eq(fs_codec_served(FS_CODEC_INT8, FS_DTYPE_I8, 24, FS_DTYPE_F16, "feat_int8", &dt, &dim, &err),
                 FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "table 'feat_int8' is int8") && strstr(err.msg, "not float16"), "%s", err.msg);
    cr_assert_eq(fs_codec_served(FS_CODEC_NONE, FS_DTYPE_F32, 4, FS_DTYPE_F16, NULL, &dt, &dim, &err),
                 FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "this table is float32: it can be served as float32, not float16"), "%s", err.msg);
    cr_assert_eq(fs_codec_served(FS_CODEC_NONE, FS_DTYPE_I64, 1, FS_DTYPE_F32, "labels", &dt, &dim, &err),
                 FS_ERR_INVALID_ARGUMENT);
}

/* ---- the gather engine decoding int8 rows ---------------------------------------------- */

typedef struct {
    unsigned char *stored;       /* [ROWS][DIM + 8] */
    float *decoded;              /* [ROWS][DIM]: the oracle's float32 rows */
} coded_t;

static coded_t make_coded(void)
{
    coded_t t = {malloc((size_t)ROWS * (DIM + FS_CODEC_INT8_HEAD)), malloc(sizeof(float) * ROWS * DIM)};
    fs_rng_t r = fs_rng_make(11, 0);
    float x[DIM];
    for (int v = 0; v < ROWS; v++) {
        unsigned char *row = t.stored + (size_t)v * (DIM + FS_CODEC_INT8_HEAD);
        fill_row(x, DIM, v % 6, &r);
        fs_int8_quantize_row(x, DIM, row, NULL);
        float scale, bias;
        memcpy(&scale, row, 4), memcpy(&bias, row + 4, 4);
        for (int j = 0; j < DIM; j++) {
            volatile float p = (float)(int8_t)row[FS_CODEC_INT8_HEAD + j] * scale;
            t.decoded[v * DIM + j] = p + bias;
        }
    }
    return t;
}

static fs_table_view_t coded_view(const coded_t *t)
{
    fs_table_view_t v = {.dtype = FS_DTYPE_I8, .num_rows = ROWS, .dim = DIM + FS_CODEC_INT8_HEAD,
                         .row_bytes = DIM + FS_CODEC_INT8_HEAD, .num_tiers = 1, .codec = FS_CODEC_INT8};
    v.tier[0] = (fs_tier_ref_t){.kind = FS_TIER_HOST, .device = -1, .base = t->stored, .rows = ROWS};
    return v;
}

static int64_t *some_ids(int64_t n)
{
    int64_t *ids = malloc(sizeof *ids * (size_t)n);
    fs_rng_t r = fs_rng_make(12, 0);
    for (int64_t i = 0; i < n; i++) ids[i] = i % 5 == 0 ? i % ROWS : (int64_t)fs_rng_below(&r, ROWS);
    return ids;
}

static void expect_decoded(const coded_t *t, const int64_t *ids, int64_t n, const char *out)
{
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(memcmp(out + (size_t)i * DIM * 4, t->decoded + ids[i] * DIM, DIM * 4), 0, "row %lld (id %lld)",
                     (long long)i, (long long)ids[i]);
}

Test(codec, gather_decodes_int8_rows_and_passes_them_through)
{
    coded_t t = make_coded();
    fs_table_view_t v = coded_view(&t);
    int64_t n = 7001, *ids = some_ids(n);
    char *out = malloc((size_t)n * DIM * 4 + 1);
    fs_pool_t *pool;
    fs_error_t err = {0};
    cr_assert_eq(fs_pool_create(3, &pool, &err), FS_OK);
    fs_dtype_t asks[] = {FS_DTYPE_F32, FS_DTYPE_INVALID};
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(fs_gather_cpu(&v, ids, n, asks[k], out + 1, pool, NULL, &err), FS_OK, "%s", err.msg);
        expect_decoded(&t, ids, n, out + 1); /* out + 1: an unaligned result slot */
    }
    unsigned char *raw = malloc((size_t)n * (DIM + 8));
    cr_assert_eq(fs_gather_cpu(&v, ids, n, FS_DTYPE_STORED, raw, pool, NULL, &err), FS_OK, "%s", err.msg);
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(memcmp(raw + i * (DIM + 8), t.stored + ids[i] * (DIM + 8), DIM + 8), 0);
    cr_assert_eq(fs_gather_cpu(&v, ids, n, FS_DTYPE_F16, out, pool, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "gather: ") && strstr(err.msg, "not float16"), "%s", err.msg);
    fs_pool_destroy(pool);
    free(t.stored), free(t.decoded), free(ids), free(out), free(raw);
}

/* A placement's view: odd rows in a second tier, reached through the route. */
Test(codec, gather_decodes_routed_rows)
{
    coded_t t = make_coded();
    size_t rb = DIM + FS_CODEC_INT8_HEAD;
    unsigned char *odd = malloc((ROWS / 2 + 1) * rb);
    uint64_t *route = malloc(sizeof *route * ROWS);
    for (int v = 0; v < ROWS; v++) {
        if (v % 2 == 0) {
            route[v] = FS_ROUTE(0, v);
            continue;
        }
        memcpy(odd + (size_t)(v / 2) * rb, t.stored + (size_t)v * rb, rb);
        route[v] = FS_ROUTE(1, v / 2);
    }
    fs_table_view_t v = coded_view(&t);
    v.num_tiers = 2, v.route = route;
    v.tier[1] = (fs_tier_ref_t){.kind = FS_TIER_SIM_DEVICE, .device = 0, .base = odd, .rows = ROWS / 2 + 1};
    int64_t n = 4000, *ids = some_ids(n);
    char *out = malloc((size_t)n * DIM * 4);
    fs_gather_counters_t c = {0};
    fs_error_t err = {0};
    cr_assert_eq(fs_gather_cpu(&v, ids, n, FS_DTYPE_F32, out, NULL, &c, &err), FS_OK, "%s", err.msg);
    expect_decoded(&t, ids, n, out);
    cr_assert_eq(c.rows[0] + c.rows[1], (uint64_t)n);
    cr_assert_eq(c.bytes[0] + c.bytes[1], (uint64_t)n * rb, "bytes read are stored bytes");
    free(t.stored), free(t.decoded), free(ids), free(out), free(odd), free(route);
}

/* A remote table (the disk tier, a shard) hands over stored rows; the
 * engine decodes them. */
static fs_status_t remote_rows(void *ctx, const int64_t *ids, int64_t n, void *out, fs_error_t *err)
{
    (void)err;
    const coded_t *t = ctx;
    size_t rb = DIM + FS_CODEC_INT8_HEAD;
    for (int64_t i = 0; i < n; i++) memcpy((char *)out + (size_t)i * rb, t->stored + (size_t)ids[i] * rb, rb);
    return FS_OK;
}

Test(codec, gather_decodes_remote_rows)
{
    coded_t t = make_coded();
    fs_table_remote_t rem = {remote_rows, &t};
    fs_table_view_t v = coded_view(&t);
    v.num_tiers = 0, v.remote = &rem;
    int64_t n = 2500, *ids = some_ids(n);
    char *out = malloc((size_t)n * DIM * 4);
    fs_error_t err = {0};
    cr_assert_eq(fs_gather_cpu(&v, ids, n, FS_DTYPE_INVALID, out, NULL, NULL, &err), FS_OK, "%s", err.msg);
    expect_decoded(&t, ids, n, out);
    free(t.stored), free(t.decoded), free(ids), free(out);
}
