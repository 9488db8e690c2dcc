/* compress.h — `featstore compress`: compressed copies of feature tables
 * added to a dataset in place (the codecs: kernels/fs_codec.h; the
 * all-or-nothing commit: amend.h).
 *
 * Each source table T (float32, float16 or bfloat16, not itself
 * compressed) gets a new table, T_int8, T_float16 or T_bfloat16 by default:
 *   - int8: rows of scale, bias and int8 codes (codec "int8"), a quarter of
 *     float32's bytes plus 8 a row; the report gives the largest error, the
 *     mean error and the bound (half a step of the widest row);
 *   - float16 / bfloat16: the values rounded to nearest (codec "narrow"); a
 *     value beyond float16's range is refused, naming it.
 * The manifest entry records the codec and the source table. The server
 * serves a compressed table as float32 unless the stored form is asked for.
 * Rows are coded in blocks on `threads` threads, straight from the source's
 * mapping into the new file's: memory stays page cache, whatever the size.
 *
 * Errors (the dataset is then unchanged): FS_ERR_NOT_FOUND for an unknown
 * table, FS_ERR_INVALID_ARGUMENT for a table that cannot be compressed so
 * (integers, compressed already, a non-finite value, a value float16 cannot
 * hold), FS_ERR_EXISTS when the new name is taken (by an earlier compress
 * only replaced with force), FS_ERR_IO when stopped (rep->stopped) or the
 * disk fails. */
#ifndef FS_COMPRESS_H
#define FS_COMPRESS_H

#include <signal.h>

#include "dataset.h"

#define FS_COMPRESS_MAX_TABLES 64

typedef struct {
    const char *dir;                  /* the dataset, changed in place */
    const char *const *tables;        /* the source tables */
    int num_tables;                   /* 1..FS_COMPRESS_MAX_TABLES */
    fs_dtype_t to;                    /* FS_DTYPE_I8, FS_DTYPE_F16 or FS_DTYPE_BF16 */
    const char *name;                 /* the new table's name (one table only); NULL: T_<to> */
    int threads;                      /* <= 0: every CPU */
    int force;                        /* replace a table an earlier compress made under the new name */
    int quiet;                        /* no progress lines */
    const volatile sig_atomic_t *stop; /* may be NULL; non-zero: stop and change nothing */
} fs_compress_opts_t;

typedef struct {
    char source[64], name[64];
    int64_t rows, dim;
    fs_dtype_t from;
    uint64_t bytes_in, bytes_out;     /* the rows' bytes, before and after */
    double max_abs_error;             /* over every value */
    double mean_abs_error;
    double bound;                     /* int8: half a step of the widest row; narrow: the largest half ulp met */
} fs_compress_table_report_t;

typedef struct {
    int num_tables;
    fs_compress_table_report_t table[FS_COMPRESS_MAX_TABLES];
    double seconds;
    int stopped;                      /* 1: *stop was seen; nothing was changed */
} fs_compress_report_t;

fs_status_t fs_compress(const fs_compress_opts_t *o, fs_compress_report_t *rep, fs_error_t *err);

#endif
