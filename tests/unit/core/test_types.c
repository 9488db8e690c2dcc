/* test_types.c — status strings, error context, and the exactness of the
 * dtype conversions (exhaustive over all 2^16 half and bfloat16 values). */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "fs_types.h"

Test(types, every_status_has_a_message)
{
    for (int s = 0; s < FS_STATUS_COUNT_; s++) {
        cr_assert_not_null(fs_strerror((fs_status_t)s));
        cr_assert_neq(strcmp(fs_strerror((fs_status_t)s), "unknown status"), 0);
    }
    cr_assert_str_eq(fs_strerror((fs_status_t)999), "unknown status");
}

Test(types, error_records_code_and_prefix)
{
    fs_error_t e = {0};
    cr_assert_eq(fs_error(&e, FS_ERR_FORMAT, "offset %d", 7), FS_ERR_FORMAT);
    fs_error_prefix(&e, "file.npy");
    cr_assert_str_eq(e.msg, "file.npy: offset 7");
    cr_assert_eq(e.code, FS_ERR_FORMAT);
    cr_assert_eq(fs_error(NULL, FS_ERR_IO, "ignored"), FS_ERR_IO);
}

Test(types, f16_round_trips_every_value)
{
    for (uint32_t h = 0; h < 65536; h++) {
        float f = fs_f16_to_f32((uint16_t)h);
        if (isnan(f)) {
            cr_assert(isnan(fs_f16_to_f32(fs_f32_to_f16(f))));
            continue;
        }
        cr_assert_eq(fs_f32_to_f16(f), h, "half 0x%04x -> %g -> 0x%04x", h, f, fs_f32_to_f16(f));
    }
}

Test(types, f16_rounds_to_nearest_even)
{
    cr_assert_eq(fs_f32_to_f16(1.0f), 0x3c00);
    cr_assert_eq(fs_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);              /* tie -> even */
    cr_assert_eq(fs_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);          /* tie -> even (up) */
    cr_assert_eq(fs_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);   /* above tie */
    cr_assert_eq(fs_f32_to_f16(65504.0f), 0x7bff);
    cr_assert_eq(fs_f32_to_f16(65520.0f), 0x7c00);                      /* overflow -> inf */
    cr_assert_eq(fs_f32_to_f16(0x1p-24f), 0x0001);                      /* smallest subnormal */
    cr_assert_eq(fs_f32_to_f16(0x1p-25f), 0x0000);                      /* tie -> even (zero) */
    cr_assert_eq(fs_f32_to_f16(-0.0f), 0x8000);
    cr_assert_eq(fs_f32_to_f16(INFINITY), 0x7c00);
}

Test(types, bf16_round_trips_every_value)
{
    for (uint32_t b = 0; b < 65536; b++) {
        float f = fs_bf16_to_f32((uint16_t)b);
        if (isnan(f)) continue;
        cr_assert_eq(fs_f32_to_bf16(f), b);
    }
    cr_assert_eq(fs_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);               /* tie -> even */
    cr_assert_eq(fs_f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
    cr_assert(isnan(fs_bf16_to_f32(fs_f32_to_bf16(NAN))));
}

Test(types, convert_to_i64_rejects_lossy_values)
{
    double ok[3] = {1.0, -2.0, 3e9}, frac[2] = {1.0, 2.5};
    int64_t out[3];
    size_t bad = 99;
    cr_assert_eq(fs_convert_to_i64(FS_DTYPE_F64, ok, 3, out, &bad), FS_OK);
    cr_assert_eq(out[2], 3000000000LL);
    cr_assert_eq(fs_convert_to_i64(FS_DTYPE_F64, frac, 2, out, &bad), FS_ERR_FORMAT);
    cr_assert_eq(bad, 1);
    uint64_t big = UINT64_MAX;
    cr_assert_eq(fs_convert_to_i64(FS_DTYPE_U64, &big, 1, out, &bad), FS_ERR_FORMAT);
    int8_t small[2] = {-5, 7};
    cr_assert_eq(fs_convert_to_i64(FS_DTYPE_I8, small, 2, out, NULL), FS_OK);
    cr_assert_eq(out[0], -5);
}

Test(types, convert_f32_round_trip_through_half_types)
{
    float src[4] = {0.5f, -1.25f, 1024.0f, 3.0f}, back[4];
    uint16_t h[4];
    fs_convert_from_f32(src, 4, FS_DTYPE_F16, h);
    fs_convert_to_f32(FS_DTYPE_F16, h, 4, back);
    cr_assert_arr_eq(src, back, sizeof src);
    fs_convert_from_f32(src, 4, FS_DTYPE_BF16, h);
    fs_convert_to_f32(FS_DTYPE_BF16, h, 4, back);
    cr_assert_arr_eq(src, back, sizeof src);
}

Test(types, dtype_names_round_trip)
{
    for (int d = 1; d < FS_DTYPE_COUNT_; d++) {
        cr_assert_eq(fs_dtype_from_name(fs_dtype_name((fs_dtype_t)d)), d);
        cr_assert_gt(fs_dtype_size((fs_dtype_t)d), 0);
    }
    cr_assert_eq(fs_dtype_from_name("complex64"), FS_DTYPE_INVALID);
}

/* The extensible-struct rule (featstore/types.h): a v1 struct and its v2,
 * which adds one field at the end (and grows: see client.c's asserts). */
typedef struct { size_t struct_size; int64_t a; } v1_t;
typedef struct { size_t struct_size; int64_t a; int64_t b; } v2_t;

Test(types, versioned_structs_older_newer_and_bad_sizes)
{
    fs_error_t err = {0};
    /* an older program's v1 read by a v2 library: the new field reads as 0 */
    v1_t old = {sizeof old, 7};
    v2_t got = {0, -1, -1};
    cr_assert_eq(fs_struct_read(&got, sizeof got, &old, sizeof old, "v2_t", &err), FS_OK, "%s", err.msg);
    cr_assert_eq(got.a, 7);
    cr_assert_eq(got.b, 0);
    cr_assert_eq(got.struct_size, sizeof got, "the copy says what it now is");
    /* a newer program's v2 read by a v1 library: fine while the new field is 0 */
    v2_t newer = {sizeof newer, 8, 0};
    v1_t mine = {0, -1};
    cr_assert_eq(fs_struct_read(&mine, sizeof mine, &newer, sizeof mine, "v1_t", &err), FS_OK, "%s", err.msg);
    cr_assert_eq(mine.a, 8);
    newer.b = 1; /* an option this library does not know: refused, never ignored */
    cr_assert_eq(fs_struct_read(&mine, sizeof mine, &newer, sizeof mine, "v1_t", &err), FS_ERR_UNSUPPORTED);
    cr_assert_not_null(strstr(err.msg, "upgrade libfeatstore"), "%s", err.msg);
    v1_t zero = {0, 1};
    cr_assert_eq(fs_struct_read(&mine, sizeof mine, &zero, sizeof mine, "v1_t", &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "struct_size is 0"), "%s", err.msg);
    v1_t tiny = {4, 1};
    _Static_assert(sizeof(v2_t) > sizeof(v1_t), "the test needs a v2 that grows");
    cr_assert_eq(fs_struct_read(&mine, sizeof mine, &tiny, sizeof mine, "v1_t", &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "smaller than any version"), "%s", err.msg);
}

Test(types, sizes_for_people_take_the_largest_binary_unit_below_them)
{
    char b[32];
    cr_assert_str_eq(fs_format_bytes(0, b, sizeof b), "0 B");
    cr_assert_str_eq(fs_format_bytes(1023, b, sizeof b), "1023 B");
    cr_assert_str_eq(fs_format_bytes(1024, b, sizeof b), "1.00 KiB");
    cr_assert_str_eq(fs_format_bytes(4.0 * 1048576, b, sizeof b), "4.00 MiB");
    cr_assert_str_eq(fs_format_bytes(1.25 * 1073741824.0, b, sizeof b), "1.25 GiB");
    cr_assert_str_eq(fs_format_bytes(2048.0 * 1099511627776.0, b, sizeof b), "2048.00 TiB", "TiB is the largest");
    char tiny[6];
    cr_assert_str_eq(fs_format_bytes(4.0 * 1048576, tiny, sizeof tiny), "4.00 ", "cut to the buffer");
}
