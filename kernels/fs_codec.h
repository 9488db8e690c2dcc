/* fs_codec.h — compressed feature tables: how a table's rows are coded, the
 * form a gather serves them in, and the int8 row code itself.
 *
 * A table written by `featstore compress` keeps its stored dtype and row
 * size like any other table, so everything that moves rows as stored (the
 * placement's tiers, the disk tier and its cache, shards, the wire's stored
 * form) handles it unchanged. Only a gather that widens it to float32 needs
 * its codec:
 *   - FS_CODEC_NARROW: a float16 or bfloat16 copy of a float32 table; rows
 *     as for any half table.
 *   - FS_CODEC_INT8: a stored row of D + 8 bytes (stored dtype int8, stored
 *     dim D + 8): float32 scale, float32 bias (little-endian), then D int8
 *     codes; value j is (float)code[j] * scale + bias, one rounding per
 *     operation (no fused multiply-add: the GPU gather rounds the same way,
 *     so the CPU twin matches it bit for bit).
 * A compressed table is served as float32 unless a request asks for its
 * stored form (FS_DTYPE_STORED, or its stored dtype by name).
 *
 * Thread-safety: all functions are pure or write only to their arguments. */
#ifndef FS_CODEC_H
#define FS_CODEC_H

#include "fs_types.h"

typedef enum {
    FS_CODEC_NONE = 0,
    FS_CODEC_NARROW,   /* float16/bfloat16 from float32 */
    FS_CODEC_INT8,     /* int8 codes with a float32 scale and bias per row */
    FS_CODEC_COUNT_
} fs_codec_t;

/* The bytes before an int8 row's codes: its scale and bias. */
#define FS_CODEC_INT8_HEAD 8

/* "none", "narrow", "int8": the manifest's and the wires' one spelling. */
const char *fs_codec_name(fs_codec_t c);
/* FS_CODEC_COUNT_ when name is none of them (NULL or "" is FS_CODEC_NONE). */
fs_codec_t fs_codec_from_name(const char *name);

/* Whether a table of this stored dtype and dim can carry codec c: NARROW
 * needs float16/bfloat16, INT8 int8 with dim > FS_CODEC_INT8_HEAD. */
int fs_codec_fits(fs_codec_t c, fs_dtype_t stored, int64_t stored_dim);

/* Whether out_dtype is a request a gather can take at all: FS_DTYPE_INVALID
 * (the table's default form), FS_DTYPE_STORED, or a real dtype. */
int fs_out_dtype_valid(fs_dtype_t out_dtype);
/* fs_dtype_from_name, plus "stored" (FS_DTYPE_STORED) and "" (INVALID: the
 * default); *ok is 0 for any other unknown name. The wires' out_dtype. */
fs_dtype_t fs_out_dtype_from_name(const char *name, int *ok);
/* "stored" for FS_DTYPE_STORED, "" for INVALID, else fs_dtype_name. */
const char *fs_out_dtype_name(fs_dtype_t out_dtype);

/* The one rule for what a gather of a table returns. `request` is the
 * caller's out_dtype: INVALID = the default (as stored; float32 for a
 * compressed table), FS_DTYPE_STORED or the stored dtype = as stored,
 * FS_DTYPE_F32 = widened. Writes the served dtype and dim; anything else
 * is FS_ERR_INVALID_ARGUMENT naming the table (`name`, may be NULL). */
fs_status_t fs_codec_served(fs_codec_t c, fs_dtype_t stored, int64_t stored_dim, fs_dtype_t request,
                            const char *name, fs_dtype_t *out_dtype, int64_t *out_dim, fs_error_t *err);

/* The int8 row code. quantize: src [dim] float32 (all finite) -> dst
 * [dim + FS_CODEC_INT8_HEAD] bytes; an affine code over the row's [min, max]
 * (every code used: a zero point always helps rows that are not centred on
 * 0). Returns the row's largest |x - decoded x| and adds the row's sum of
 * them to *sum (may be NULL). dequantize: the inverse, src [dim + 8] bytes
 * -> dst [dim] float32 (dst any alignment). */
double fs_int8_quantize_row(const float *src, int64_t dim, void *dst, double *sum);
void fs_int8_dequantize_row(const void *src, int64_t dim, float *dst);

#endif
