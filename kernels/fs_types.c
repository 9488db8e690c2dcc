/* fs_types.c — status messages, error context, dtype table and the scalar
 * half-precision conversions. The conversions are bit-exact software versions
 * (no F16C dependency) so results are identical on every x86 and ARM host;
 * the engines vectorise their own hot loops. */
#include "fs_types.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static const char *const status_text[FS_STATUS_COUNT_] = {
    [FS_OK] = "success",
    [FS_ERR_INVALID_ARGUMENT] = "invalid argument",
    [FS_ERR_NOT_FOUND] = "not found",
    [FS_ERR_IO] = "I/O error",
    [FS_ERR_FORMAT] = "malformed or corrupt data",
    [FS_ERR_UNSUPPORTED] = "unsupported",
    [FS_ERR_NOMEM] = "out of memory",
    [FS_ERR_EXISTS] = "already exists",
    [FS_ERR_RESOURCE] = "resource limit exceeded",
    [FS_ERR_NO_DEVICE] = "no usable GPU",
    [FS_ERR_INTERNAL] = "internal error",
    [FS_ERR_UNAVAILABLE] = "server unavailable",
    [FS_ERR_TIMEOUT] = "deadline exceeded",
    [FS_ERR_VERSION] = "incompatible versions",
    [FS_ERR_PERMISSION] = "permission denied",
    [FS_END] = "end of stream",
};

const char *fs_strerror(fs_status_t status)
{
    if ((unsigned)status >= FS_STATUS_COUNT_) return "unknown status";
    return status_text[status];
}

fs_status_t fs_verror(fs_error_t *err, fs_status_t code, const char *fmt, va_list ap)
{
    if (err) {
        err->code = code;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    }
    return code;
}

fs_status_t fs_error(fs_error_t *err, fs_status_t code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fs_verror(err, code, fmt, ap);
    va_end(ap);
    return code;
}

void fs_error_prefix(fs_error_t *err, const char *fmt, ...)
{
    if (!err) return;
    char joined[2 * sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(joined, sizeof err->msg, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n > sizeof err->msg - 1) n = (int)sizeof err->msg - 1;
    snprintf(joined + n, sizeof joined - (size_t)n, ": %s", err->msg);
    memcpy(err->msg, joined, sizeof err->msg - 1);
    err->msg[sizeof err->msg - 1] = '\0';
}

void fs_error_clear(fs_error_t *err)
{
    if (!err) return;
    err->code = FS_OK;
    err->msg[0] = '\0';
}

/* ---- dtypes ------------------------------------------------------------- */

static const struct { const char *name; size_t size; } dtype_info[FS_DTYPE_COUNT_] = {
    [FS_DTYPE_INVALID] = {"invalid", 0},
    [FS_DTYPE_BOOL] = {"bool", 1},     [FS_DTYPE_I8] = {"int8", 1},
    [FS_DTYPE_U8] = {"uint8", 1},      [FS_DTYPE_I16] = {"int16", 2},
    [FS_DTYPE_U16] = {"uint16", 2},    [FS_DTYPE_I32] = {"int32", 4},
    [FS_DTYPE_U32] = {"uint32", 4},    [FS_DTYPE_I64] = {"int64", 8},
    [FS_DTYPE_U64] = {"uint64", 8},    [FS_DTYPE_F16] = {"float16", 2},
    [FS_DTYPE_BF16] = {"bfloat16", 2}, [FS_DTYPE_F32] = {"float32", 4},
    [FS_DTYPE_F64] = {"float64", 8},
};

size_t fs_dtype_size(fs_dtype_t dt)
{
    return (unsigned)dt < FS_DTYPE_COUNT_ ? dtype_info[dt].size : 0;
}

const char *fs_dtype_name(fs_dtype_t dt)
{
    if (dt == FS_DTYPE_STORED) return "stored";
    return (unsigned)dt < FS_DTYPE_COUNT_ ? dtype_info[dt].name : "invalid";
}

fs_dtype_t fs_dtype_from_name(const char *name)
{
    for (int i = 1; i < FS_DTYPE_COUNT_; i++)
        if (strcmp(name, dtype_info[i].name) == 0) return (fs_dtype_t)i;
    return FS_DTYPE_INVALID;
}

int fs_dtype_is_float(fs_dtype_t dt)
{
    return dt == FS_DTYPE_F16 || dt == FS_DTYPE_BF16 || dt == FS_DTYPE_F32 || dt == FS_DTYPE_F64;
}

int fs_dtype_is_int(fs_dtype_t dt)
{
    return dt >= FS_DTYPE_BOOL && dt <= FS_DTYPE_U64;
}

/* ---- half precision ----------------------------------------------------- */

static uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

uint16_t fs_f32_to_f16(float f)
{
    uint32_t x = f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u)                       /* inf or NaN */
        return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0));
    if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds past 65504 */
    if (absx < 0x38800000u) {                      /* result is subnormal or zero */
        if (absx < 0x33000000u) return (uint16_t)sign; /* < half the smallest subnormal */
        uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
        int shift = 126 - (int)(absx >> 23);       /* 14..24 */
        uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) q++;
        return (uint16_t)(sign | q);
    }
    uint32_t r = absx - 0x38000000u;               /* rebias exponent 127 -> 15 */
    uint32_t q = r >> 13, rem = r & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1))) q++; /* may carry into exp: correct */
    return (uint16_t)(sign | q);
}

float fs_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
        if (mant == 0) return bits_f32(sign);
        float v = (float)mant * 0x1p-24f;          /* exact: subnormal half */
        return sign ? -v : v;
    }
    return bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

uint16_t fs_f32_to_bf16(float f)
{
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
    x += 0x7fffu + ((x >> 16) & 1u);               /* round to nearest even */
    return (uint16_t)(x >> 16);
}

float fs_bf16_to_f32(uint16_t b) { return bits_f32((uint32_t)b << 16); }

/* ---- bulk conversions --------------------------------------------------- */

#define LOAD_CASES(src, i, OUT)                                                  \
    case FS_DTYPE_BOOL: OUT(((const uint8_t *)src)[i] != 0); break;             \
    case FS_DTYPE_I8: OUT(((const int8_t *)src)[i]); break;                     \
    case FS_DTYPE_U8: OUT(((const uint8_t *)src)[i]); break;                    \
    case FS_DTYPE_I16: OUT(((const int16_t *)src)[i]); break;                   \
    case FS_DTYPE_U16: OUT(((const uint16_t *)src)[i]); break;                  \
    case FS_DTYPE_I32: OUT(((const int32_t *)src)[i]); break;                   \
    case FS_DTYPE_U32: OUT(((const uint32_t *)src)[i]); break;                  \
    case FS_DTYPE_I64: OUT(((const int64_t *)src)[i]); break;

fs_status_t fs_convert_to_i64(fs_dtype_t src_dt, const void *src, size_t n,
                              int64_t *dst, size_t *bad)
{
    for (size_t i = 0; i < n; i++) {
        double d;
        switch (src_dt) {
#define STORE(v) dst[i] = (int64_t)(v)
            LOAD_CASES(src, i, STORE)
#undef STORE
        case FS_DTYPE_U64: {
            uint64_t u = ((const uint64_t *)src)[i];
            if (u > (uint64_t)INT64_MAX) goto fail;
            dst[i] = (int64_t)u;
            break;
        }
        case FS_DTYPE_F16: d = fs_f16_to_f32(((const uint16_t *)src)[i]); goto from_double;
        case FS_DTYPE_BF16: d = fs_bf16_to_f32(((const uint16_t *)src)[i]); goto from_double;
        case FS_DTYPE_F32: d = ((const float *)src)[i]; goto from_double;
        case FS_DTYPE_F64: d = ((const double *)src)[i]; goto from_double;
        default: goto fail;
        from_double:
            if (!(d == floor(d)) || d < -0x1p63 || d >= 0x1p63) goto fail;
            dst[i] = (int64_t)d;
        }
        continue;
    fail:
        if (bad) *bad = i;
        return FS_ERR_FORMAT;
    }
    return FS_OK;
}

void fs_convert_to_f32(fs_dtype_t src_dt, const void *src, size_t n, float *dst)
{
    if (src_dt == FS_DTYPE_F32) {
        memmove(dst, src, n * sizeof(float));
        return;
    }
    for (size_t i = 0; i < n; i++) {
        switch (src_dt) {
#define STORE(v) dst[i] = (float)(v)
            LOAD_CASES(src, i, STORE)
#undef STORE
        case FS_DTYPE_U64: dst[i] = (float)((const uint64_t *)src)[i]; break;
        case FS_DTYPE_F16: dst[i] = fs_f16_to_f32(((const uint16_t *)src)[i]); break;
        case FS_DTYPE_BF16: dst[i] = fs_bf16_to_f32(((const uint16_t *)src)[i]); break;
        case FS_DTYPE_F64: dst[i] = (float)((const double *)src)[i]; break;
        default: dst[i] = NAN; break;
        }
    }
}

void fs_convert_from_f32(const float *src, size_t n, fs_dtype_t dst_dt, void *dst)
{
    switch (dst_dt) {
    case FS_DTYPE_F32: memmove(dst, src, n * sizeof(float)); break;
    case FS_DTYPE_F64: for (size_t i = 0; i < n; i++) ((double *)dst)[i] = src[i]; break;
    case FS_DTYPE_F16:
        for (size_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = fs_f32_to_f16(src[i]);
        break;
    case FS_DTYPE_BF16:
        for (size_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = fs_f32_to_bf16(src[i]);
        break;
    default: break;
    }
}

void fs_list_name(char *list, size_t len, int *listed, int most, int total, const char *name)
{
    size_t at = strlen(list);
    if (*listed < most) snprintf(list + at, len - at, "%s%s", *listed ? ", " : "", name);
    else if (*listed == most) snprintf(list + at, len - at, " and %d more", total - most);
    (*listed)++;
}

const char *fs_format_bytes(double bytes, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) bytes /= 1024, u++;
    snprintf(buf, len, u ? "%.2f %s" : "%.0f %s", bytes, units[u]);
    return buf;
}

fs_status_t fs_table_not_found(fs_error_t *err, const char *dataset, const char *kind, const char *name, int n,
                               const char *(*name_at)(const void *ctx, int i), const void *ctx)
{
    char list[512] = "";
    int listed = 0, total = 0;
    for (int i = 0; i < n; i++) total += name_at(ctx, i) != NULL;
    for (int i = 0; i < n; i++)
        if (name_at(ctx, i)) fs_list_name(list, sizeof list, &listed, 16, total, name_at(ctx, i));
    return fs_error(err, FS_ERR_NOT_FOUND, "dataset '%s' has no %s table '%s'; its %s tables: %s", dataset, kind, name,
                    kind, listed ? list : "none");
}

int fs_type_name_valid(const char *s)
{
    size_t n = s ? strnlen(s, FS_TYPE_NAME_MAX) : 0;
    if (n == 0 || n >= FS_TYPE_NAME_MAX) return 0;
    for (size_t i = 0; i < n; i++)
        if (!(s[i] == '_' || (s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
            return 0;
    return 1;
}

double fs_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

fs_status_t fs_struct_read(void *dst, size_t dst_size, const void *src, size_t min_size, const char *what,
                           fs_error_t *err)
{
    size_t size;
    memcpy(&size, src, sizeof size);
    if (size == 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s.struct_size is 0: set it to sizeof(%s) (the header's "
                        "*_INIT macro does)", what, what);
    if (size < min_size)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s.struct_size is %zu, smaller than any version of %s (%zu)",
                        what, size, what, min_size);
    for (size_t i = dst_size; i < size; i++)
        if (((const unsigned char *)src)[i] != 0)
            return fs_error(err, FS_ERR_UNSUPPORTED, "%s is %zu bytes and sets an option this library (%zu bytes) "
                            "does not know: upgrade libfeatstore to the version the program was built with", what,
                            size, dst_size);
    size_t n = size < dst_size ? size : dst_size;
    memcpy(dst, src, n);
    memset((char *)dst + n, 0, dst_size - n);
    memcpy(dst, &dst_size, sizeof dst_size);
    return FS_OK;
}
