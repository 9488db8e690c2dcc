/* fs_types.h — the internal side of the shared vocabulary: the error
 * context and the dtype conversions. Status codes and dtypes themselves are
 * public, in featstore/types.h.
 *
 * Ownership: nothing here allocates. fs_error_t is a caller-owned value.
 * Thread-safety: all functions are pure or write only to their arguments. */
#ifndef FS_TYPES_H
#define FS_TYPES_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "featstore/types.h" /* fs_status_t, fs_dtype_t, ... (public) */

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

/* Reads a caller's versioned struct (featstore/types.h: `size_t
 * struct_size` first) into dst, dst_size bytes being the struct as this
 * library knows it: copies what the caller has and zeroes what it lacks
 * (zero is every field's default). FS_ERR_INVALID_ARGUMENT when struct_size
 * is 0 or below min_size (the struct's first published size);
 * FS_ERR_UNSUPPORTED when it is larger than dst_size and the part this
 * library does not know is not all zero (the caller was built against a
 * newer featstore and uses an option this one lacks). `what` names the
 * struct in the error. dst's struct_size becomes dst_size. */
fs_status_t fs_struct_read(void *dst, size_t dst_size, const void *src, size_t min_size, const char *what,
                           fs_error_t *err);

/* For errors that name what there is ("its tables: feat, labels"): appends
 * name to list (after ", ") while fewer than `most` are listed, then
 * " and N more" once, N counted from `total`, the names there are in all.
 * *listed counts the calls; it starts at 0 with list "". */
void fs_list_name(char *list, size_t len, int *listed, int most, int total, const char *name);
/* A size for people: "512 B", "4.00 MiB", "1.25 GiB" (binary units up to
 * TiB, two decimals beyond bytes) into buf; returns buf. */
const char *fs_format_bytes(double bytes, char *buf, size_t len);
/* FS_ERR_NOT_FOUND: "dataset 'D' has no <kind> table 'name'; its <kind>
 * tables: a, b, c" (kind: "feature", "node", "edge"), the list made of
 * name_at(ctx, 0..n-1), skipping NULLs (repeats the caller leaves out). */
fs_status_t fs_table_not_found(fs_error_t *err, const char *dataset, const char *kind, const char *name, int n,
                               const char *(*name_at)(const void *ctx, int i), const void *ctx);

/* Node type and relation names: 1..FS_TYPE_NAME_MAX - 1 characters of
 * [A-Za-z0-9_]. The one rule: datasets store them, importers and the typed
 * builder accept them, and the wire's name fields hold them (their nanopb
 * max_size is FS_TYPE_NAME_MAX: proto/fs_wire_typed.c asserts it). */
#define FS_TYPE_NAME_MAX 64
/* Whether s (NUL-terminated; NULL is no name) is such a name. */
int fs_type_name_valid(const char *s);

/* A partitioned dataset's limits (`featstore partition`, dataset/partition.h),
 * defined once for its writer and reader and for the cluster that serves it
 * (cluster/fs_shardmap.h): the most parts, and the length of a
 * partitioning's id (hex digits; a buffer needs one more). */
#define FS_PARTITION_MAX_PARTS 4096
#define FS_PARTITION_ID_LEN 16
/* The ShardRows "table" of a node type's timestamps (int64, one a node): a
 * cluster's trainer reads its seeds' times with it (exec/fs_shard.h). */
#define FS_CLUSTER_NODE_TIME_TABLE "@time"

/* Monotonic seconds, for latencies and progress. */
double fs_now(void);

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
