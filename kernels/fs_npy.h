/* fs_npy.h — numpy's .npy array header: parse (versions 1.0–3.0) and write
 * (version 1.0 with a fixed header of 4096 bytes: a streamed file's shape
 * can be patched in place once its length is known, and the data starts on
 * a page, so a row read with O_DIRECT costs no more than its own blocks:
 * disk/fs_diskio.h). */
#ifndef FS_NPY_H
#define FS_NPY_H

#include "fs_types.h"

#define FS_NPY_MAX_DIMS 2
#define FS_NPY_WRITE_HEADER_LEN 4096

typedef struct {
    fs_dtype_t dtype;          /* INVALID for object/struct/unknown descr */
    char descr[32];            /* as written, e.g. "<f4", "|O" */
    int ndim;                  /* 0, 1 or 2 */
    int64_t shape[FS_NPY_MAX_DIMS];
    size_t header_len;         /* bytes before the data */
    size_t data_len;           /* product of shape * itemsize */
} fs_npy_header_t;

/* Parses the header at buf[0..len). `what` names the file in errors.
 * Object arrays ("|O") parse with dtype INVALID and FS_ERR_UNSUPPORTED so
 * importers can skip them; big-endian, Fortran order and more than two
 * dimensions are FS_ERR_UNSUPPORTED; anything malformed is FS_ERR_FORMAT. */
fs_status_t fs_npy_parse(const void *buf, size_t len, const char *what,
                         fs_npy_header_t *out, fs_error_t *err);

/* Writes a v1.0 header of FS_NPY_WRITE_HEADER_LEN bytes into buf. ndim is 1 or 2. */
void fs_npy_format(char buf[FS_NPY_WRITE_HEADER_LEN], fs_dtype_t dt, int ndim,
                   const int64_t *shape);

#endif
