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

/* fs_sample_req_t.locality: use the boost the connection's Algorithm 2
 * controller currently holds (fs_report_load_ratio; 1 until reported).
 * Resolved by the client library: a server never receives it. */
#define FS_LOCALITY_AUTO (-1.0)

/* A k-hop sampling request. The same request (seed included) always gives
 * the same result.
 *
 * locality: locality-aware sampling (ALGORITHMS §4). 0 or 1 = off: the
 * plain sampler, bit for bit. s > 1 (finite) boosts the inclusion
 * probability of neighbours that lead to rows in GPU memory for the
 * connection's reader (its own GPU or its peers') by s, keeping each row's
 * expected edge count; each edge then carries an importance weight
 * (fs_block_t.edge_weights) that keeps aggregations unbiased. Needs every
 * hop FS_SAMPLE_UNIFORM, a unix:// connection with a reader GPU
 * (fs_connect_opts_t.device = "gpu:N") to a server with a placement, and
 * no more hops than the server's preferred-set levels (3); otherwise
 * FS_ERR_UNSUPPORTED or FS_ERR_INVALID_ARGUMENT naming the reason.
 * FS_LOCALITY_AUTO: the connection's current boost. Anything else (NaN,
 * negative, between 0 and 1) is FS_ERR_INVALID_ARGUMENT. Appended last so
 * initialisers written before it still compile and mean "off". */
typedef struct {
    int num_hops;                    /* 1..FS_MAX_HOPS */
    int fanout[FS_MAX_HOPS];         /* > 0, or FS_FANOUT_ALL */
    fs_sample_mode_t mode[FS_MAX_HOPS];
    uint64_t seed;
    int want_edge_ids;
    double locality;                 /* 0 or 1 = off; > 1 = boost s; FS_LOCALITY_AUTO */
} fs_sample_req_t;

/* One hop of a sample, DGL-block style: dst nodes are local ids
 * [0, num_dst), a prefix of the src nodes [0, num_src); edges are
 * (edge_dst[e], edge_src[e]) grouped by dst: dst d owns edges
 * [dst_offsets[d], dst_offsets[d+1]). edge_ids (global CSR positions) is
 * NULL unless requested.
 *
 * edge_weights: with locality-aware sampling (a request whose boost, after
 * FS_LOCALITY_AUTO is resolved, is > 1) each edge's importance weight
 * 1/q_new, q_new the probability that the edge was sampled, in the same
 * (CSC) order; sum_e w_e x_src(e) estimates the sum over dst's whole
 * neighbour list without bias — divide by the row's degree for a mean.
 * NULL otherwise: the plain sampler's weights are deg / min(fanout, deg)
 * for every edge of a row, i.e. a plain mean over the sampled edges. */
typedef struct {
    int64_t num_dst, num_src, num_edges;
    const int64_t *dst_offsets;  /* [num_dst + 1] */
    const int64_t *edge_dst;     /* [num_edges] */
    const int64_t *edge_src;     /* [num_edges] */
    const int64_t *edge_ids;     /* [num_edges] or NULL */
    const float *edge_weights;   /* [num_edges] or NULL (see above) */
} fs_block_t;

#ifdef __cplusplus
}
#endif

#endif
