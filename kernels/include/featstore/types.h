/* featstore/types.h — the vocabulary shared by every featstore library and
 * installed with the client library: status codes, feature dtypes, and the
 * shapes of a sampling request and of a sampled block.
 *
 * Thread-safety: everything here is a plain value or a pure function. */
#ifndef FEATSTORE_TYPES_H
#define FEATSTORE_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

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
    FS_ERR_UNAVAILABLE,      /* the server cannot be reached or went away  */
    FS_ERR_TIMEOUT,          /* a deadline passed                          */
    FS_STATUS_COUNT_
} fs_status_t;

/* A short fixed message for a status ("invalid argument", ...). */
const char *fs_strerror(fs_status_t status);

typedef enum {
    FS_DTYPE_INVALID = 0,
    FS_DTYPE_BOOL,
    FS_DTYPE_I8, FS_DTYPE_U8, FS_DTYPE_I16, FS_DTYPE_U16,
    FS_DTYPE_I32, FS_DTYPE_U32, FS_DTYPE_I64, FS_DTYPE_U64,
    FS_DTYPE_F16, FS_DTYPE_BF16, FS_DTYPE_F32, FS_DTYPE_F64,
    FS_DTYPE_COUNT_
} fs_dtype_t;

size_t fs_dtype_size(fs_dtype_t dt);              /* 0 for INVALID */
const char *fs_dtype_name(fs_dtype_t dt);         /* "float32", ... */
fs_dtype_t fs_dtype_from_name(const char *name);  /* INVALID if unknown */

#define FS_MAX_HOPS 8
#define FS_FANOUT_ALL (-1)

typedef enum {
    FS_SAMPLE_UNIFORM = 0,       /* without replacement */
    FS_SAMPLE_UNIFORM_REPLACE,
    FS_SAMPLE_WEIGHTED,          /* without replacement, P ~ edge weight */
    FS_SAMPLE_WEIGHTED_REPLACE,
    FS_SAMPLE_MODE_COUNT_
} fs_sample_mode_t;

/* A k-hop sampling request. The same request (seed included) always gives
 * the same result. */
typedef struct {
    int num_hops;                    /* 1..FS_MAX_HOPS */
    int fanout[FS_MAX_HOPS];         /* > 0, or FS_FANOUT_ALL */
    fs_sample_mode_t mode[FS_MAX_HOPS];
    uint64_t seed;
    int want_edge_ids;
} fs_sample_req_t;

/* One hop of a sample, DGL-block style: dst nodes are local ids
 * [0, num_dst), a prefix of the src nodes [0, num_src); edges are
 * (edge_dst[e], edge_src[e]) grouped by dst: dst d owns edges
 * [dst_offsets[d], dst_offsets[d+1]). edge_ids (global CSR positions) is
 * NULL unless requested. */
typedef struct {
    int64_t num_dst, num_src, num_edges;
    const int64_t *dst_offsets;  /* [num_dst + 1] */
    const int64_t *edge_dst;     /* [num_edges] */
    const int64_t *edge_src;     /* [num_edges] */
    const int64_t *edge_ids;     /* [num_edges] or NULL */
} fs_block_t;

#ifdef __cplusplus
}
#endif

#endif
