/* fs_codec.c — compressed tables: the codec names, the served-form rule and
 * the int8 row code (fs_codec.h). Built with -ffp-contract=off like the
 * rest of kernels/: the decode is a multiply then an add, each rounded, as
 * the GPU gather does it. */
#include "fs_codec.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const codec_names[FS_CODEC_COUNT_] = {"none", "narrow", "int8"};

const char *fs_codec_name(fs_codec_t c)
{
    return (unsigned)c < FS_CODEC_COUNT_ ? codec_names[c] : "unknown";
}

fs_codec_t fs_codec_from_name(const char *name)
{
    if (!name || !name[0]) return FS_CODEC_NONE;
    for (int i = 0; i < FS_CODEC_COUNT_; i++)
        if (strcmp(name, codec_names[i]) == 0) return (fs_codec_t)i;
    return FS_CODEC_COUNT_;
}

int fs_codec_fits(fs_codec_t c, fs_dtype_t stored, int64_t stored_dim)
{
    switch (c) {
    case FS_CODEC_NONE: return 1;
    case FS_CODEC_NARROW: return stored == FS_DTYPE_F16 || stored == FS_DTYPE_BF16;
    case FS_CODEC_INT8: return stored == FS_DTYPE_I8 && stored_dim > FS_CODEC_INT8_HEAD;
    default: return 0;
    }
}

int fs_out_dtype_valid(fs_dtype_t out_dtype)
{
    return out_dtype == FS_DTYPE_INVALID || out_dtype == FS_DTYPE_STORED || fs_dtype_size(out_dtype) > 0;
}

fs_dtype_t fs_out_dtype_from_name(const char *name, int *ok)
{
    *ok = 1;
    if (!name || !name[0]) return FS_DTYPE_INVALID;
    if (strcmp(name, "stored") == 0) return FS_DTYPE_STORED;
    fs_dtype_t dt = fs_dtype_from_name(name);
    *ok = dt != FS_DTYPE_INVALID;
    return dt;
}

const char *fs_out_dtype_name(fs_dtype_t out_dtype)
{
    return out_dtype == FS_DTYPE_STORED ? "stored" : out_dtype == FS_DTYPE_INVALID ? "" : fs_dtype_name(out_dtype);
}

fs_status_t fs_codec_served(fs_codec_t c, fs_dtype_t stored, int64_t stored_dim, fs_dtype_t request,
                            const char *name, fs_dtype_t *out_dtype, int64_t *out_dim, fs_error_t *err)
{
    if (request == FS_DTYPE_INVALID) request = c == FS_CODEC_NONE ? stored : FS_DTYPE_F32;
    if (request == FS_DTYPE_STORED || request == stored) {
        *out_dtype = stored, *out_dim = stored_dim;
        return FS_OK;
    }
    int can_widen = stored == FS_DTYPE_F16 || stored == FS_DTYPE_BF16 || c == FS_CODEC_INT8;
    if (request != FS_DTYPE_F32 || !can_widen) {
        char who[96];
        if (name) snprintf(who, sizeof who, "table '%s'", name);
        else snprintf(who, sizeof who, "this table");
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s is %s%s: it can be served as %s%s, not %s", who,
                        fs_dtype_name(stored), c == FS_CODEC_INT8 ? " (int8 codes with a scale and bias per row)" : "",
                        fs_dtype_name(stored), can_widen ? " or float32" : "", fs_dtype_name(request));
    }
    *out_dtype = FS_DTYPE_F32;
    *out_dim = c == FS_CODEC_INT8 ? stored_dim - FS_CODEC_INT8_HEAD : stored_dim;
    return FS_OK;
}

/* ---- the int8 row code ------------------------------------------------------------ */

double fs_int8_quantize_row(const float *src, int64_t dim, void *dst, double *sum)
{
    float lo = dim > 0 ? src[0] : 0.0f, hi = lo;
    for (int64_t j = 1; j < dim; j++) {
        lo = src[j] < lo ? src[j] : lo;
        hi = src[j] > hi ? src[j] : hi;
    }
    /* 255 steps over [lo, hi], code -128 at lo: bias is the value of code 0. */
    float scale = (float)(((double)hi - (double)lo) / 255.0);
    float bias = (float)((double)lo + 128.0 * (double)scale);
    unsigned char *out = dst;
    int8_t *code = (int8_t *)(out + FS_CODEC_INT8_HEAD);
    memcpy(out, &scale, 4);
    memcpy(out + 4, &bias, 4);
    double worst = 0, total = 0;
    for (int64_t j = 0; j < dim; j++) {
        double q = scale > 0 ? nearbyint(((double)src[j] - (double)bias) / (double)scale) : 0;
        q = q < -128 ? -128 : q > 127 ? 127 : q;
        code[j] = (int8_t)q;
        /* the decode's own arithmetic, so the bound is what readers get */
        float back = (float)code[j] * scale;
        back = back + bias;
        double e = fabs((double)back - (double)src[j]);
        worst = e > worst ? e : worst;
        total += e;
    }
    if (sum) *sum += total;
    return worst;
}

void fs_int8_dequantize_row(const void *src, int64_t dim, float *dst)
{
    const unsigned char *in = src;
    const int8_t *code = (const int8_t *)(in + FS_CODEC_INT8_HEAD);
    float scale, bias;
    memcpy(&scale, in, 4);
    memcpy(&bias, in + 4, 4);
    for (int64_t j = 0; j < dim; j++) {
        float v = (float)code[j] * scale;
        v = v + bias;
        memcpy(dst + j, &v, 4); /* dst may be unaligned (a shared result slot) */
    }
}
