/* fs_types.h — the vocabulary every featstore layer shares: status codes,
 * the error context, feature dtypes and their conversions.
 *
 * Ownership: nothing here allocates. fs_error_t is a caller-owned value.
 * Thread-safety: all functions are pure or write only to their arguments. */
#ifndef FS_TYPES_H
#define FS_TYPES_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    FS_OK = 0,
    FS_ERR_INVALID_ARGUMENT, /* a caller's argument or request is wrong    */
    FS_ERR_NOT_FOUND,        /* a file, table, id or name does not exist   */
    FS_ERR_IO,               /* the operating system refused a read/write  */
    FS_ERR_FORMAT,           /* input data is malformed or corrupt         */
    FS_ERR_UNSUPPORTED,      /* well-formed but not something we handle    */
    FS_ERR_NOMEM,            /* an allocation or mapping failed            */
    FS_ERR_EXISTS,           /* refusing to overwrite                      */
    FS_ERR_RESOURCE,         /* a configured limit was exceeded            */
    FS_ERR_NO_DEVICE,        /* no usable GPU / driver                     */
    FS_ERR_INTERNAL,         /* a bug: an invariant did not hold           */
    FS_STATUS_COUNT_
} fs_status_t;

/* A short fixed message for a status ("invalid argument", ...). */
const char *fs_strerror(fs_status_t status);

/* A status plus a message naming the problem (file, offset, value). */
typedef struct {
    fs_status_t code;
    char msg[512];
} fs_error_t;

/* Records code and a printf-style message in err (if non-NULL) and returns
 * code, so call sites read `return fs_error(err, FS_ERR_IO, "...", ...)`. */
fs_status_t fs_error(fs_error_t *err, fs_status_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
fs_status_t fs_verror(fs_error_t *err, fs_status_t code, const char *fmt, va_list ap);
/* Prepends "prefix: " to err->msg (used to add context while unwinding). */
void fs_error_prefix(fs_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fs_error_clear(fs_error_t *err);

typedef enum {
    FS_DTYPE_INVALID = 0,
    FS_DTYPE_BOOL,
    FS_DTYPE_I8, FS_DTYPE_U8, FS_DTYPE_I16, FS_DTYPE_U16,
    FS_DTYPE_I32, FS_DTYPE_U32, FS_DTYPE_I64, FS_DTYPE_U64,
    FS_DTYPE_F16, FS_DTYPE_BF16, FS_DTYPE_F32, FS_DTYPE_F64,
    FS_DTYPE_COUNT_
} fs_dtype_t;

size_t fs_dtype_size(fs_dtype_t dt);           /* 0 for INVALID */
const char *fs_dtype_name(fs_dtype_t dt);      /* "float32", ... */
fs_dtype_t fs_dtype_from_name(const char *name); /* INVALID if unknown */
int fs_dtype_is_float(fs_dtype_t dt);
int fs_dtype_is_int(fs_dtype_t dt);            /* BOOL counts as int */

/* IEEE binary16 and bfloat16 <-> binary32, round-to-nearest-even; NaN stays
 * NaN, overflow goes to infinity. Widening is exact. */
uint16_t fs_f32_to_f16(float f);
float fs_f16_to_f32(uint16_t h);
uint16_t fs_f32_to_bf16(float f);
float fs_bf16_to_f32(uint16_t b);

/* Converts n elements from any dtype to int64 or float32. Float->int fails
 * (returns FS_ERR_FORMAT with the offending index in *bad) on non-integral or
 * out-of-range values, and U64 values above INT64_MAX fail the same way. */
fs_status_t fs_convert_to_i64(fs_dtype_t src_dt, const void *src, size_t n,
                              int64_t *dst, size_t *bad);
void fs_convert_to_f32(fs_dtype_t src_dt, const void *src, size_t n, float *dst);
/* Converts float32 to a float dtype (F32 copy, F16, BF16, F64). */
void fs_convert_from_f32(const float *src, size_t n, fs_dtype_t dst_dt, void *dst);

#endif
