/* featstore/types.h — the vocabulary shared by every featstore library and
 * installed with the client library: status codes, feature dtypes, the
 * shapes of a sampling request and of a sampled block, and the facts a
 * server reports about itself (fs_info_t).
 *
 * Versioning (docs/api.md): structs the CALLER allocates and passes in
 * (fs_sample_req_t here; the option structs in client.h and admin.h) start
 * with `struct_size`, which the caller sets to sizeof the struct it was
 * compiled with (the *_INIT macros do it). A library reads only that many
 * bytes and treats fields it did not receive as zero, which always means
 * "the default"; a struct larger than the library knows is accepted when
 * the unknown tail is all zero. Structs the LIBRARY allocates and returns
 * (fs_info_t, fs_batch_t, ...) only ever grow at their end.
 *
 * Thread-safety: everything here is a plain value or a pure function. */
#ifndef FEATSTORE_TYPES_H
#define FEATSTORE_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An initializer for a versioned struct T: struct_size set, everything
 * else zero (the defaults). */
#ifdef __cplusplus
#define FS_STRUCT_INIT(T) {sizeof(T)}
#else
#define FS_STRUCT_INIT(T) {.struct_size = sizeof(T)}
#endif

/* Marks the functions libfeatstore exports; everything else is hidden. */
#if defined(__GNUC__)
#define FS_API __attribute__((visibility("default")))
#else
#define FS_API
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
    FS_ERR_VERSION,          /* the two sides' versions do not interoperate */
    FS_ERR_PERMISSION,       /* the caller may not do this (since 1.1)     */
    FS_STATUS_COUNT_
} fs_status_t;

/* A short fixed message for a status ("invalid argument", ...). */
FS_API const char *fs_strerror(fs_status_t status);

typedef enum {
    FS_DTYPE_INVALID = 0,
    FS_DTYPE_BOOL,
    FS_DTYPE_I8, FS_DTYPE_U8, FS_DTYPE_I16, FS_DTYPE_U16,
    FS_DTYPE_I32, FS_DTYPE_U32, FS_DTYPE_I64, FS_DTYPE_U64,
    FS_DTYPE_F16, FS_DTYPE_BF16, FS_DTYPE_F32, FS_DTYPE_F64,
    FS_DTYPE_COUNT_
} fs_dtype_t;

FS_API size_t fs_dtype_size(fs_dtype_t dt);              /* 0 for INVALID */
FS_API const char *fs_dtype_name(fs_dtype_t dt);         /* "float32", ... */
FS_API fs_dtype_t fs_dtype_from_name(const char *name);  /* INVALID if unknown */

/* ---- sampling ----------------------------------------------------------------- */

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
 * controller currently holds (fs_report_load_ratio in featstore/admin.h;
 * 1 until reported). Resolved by the client library: a server never
 * receives it. */
#define FS_LOCALITY_AUTO (-1.0)

/* A k-hop sampling request. The same request (seed included) always gives
 * the same result.
 *
 *   fs_sample_req_t req = FS_SAMPLE_REQ_INIT;
 *   req.num_hops = 2, req.fanout[0] = 25, req.fanout[1] = 10, req.seed = step;
 *
 * (or {.struct_size = sizeof req, .num_hops = 2, .fanout = {25, 10}}).
 *
 * locality: locality-aware sampling (docs/algorithms.md §4). 0 or 1 = off:
 * the plain sampler, bit for bit. s > 1 (finite) boosts the inclusion
 * probability of neighbours that lead to rows in GPU memory for the
 * connection's reader (its own GPU or its peers') by s, keeping each row's
 * expected edge count; each edge then carries an importance weight
 * (fs_block_t.edge_weights) that keeps aggregations unbiased. Needs every
 * hop FS_SAMPLE_UNIFORM, a unix:// connection with a reader GPU
 * (fs_connect_opts_t.device = "gpu:N") to a server with a placement, and
 * no more hops than the server's preferred-set levels (3); otherwise
 * FS_ERR_UNSUPPORTED or FS_ERR_INVALID_ARGUMENT naming the reason.
 * FS_LOCALITY_AUTO: the connection's current boost. Anything else (NaN,
 * negative, between 0 and 1) is FS_ERR_INVALID_ARGUMENT. */
typedef struct {
    size_t struct_size;              /* sizeof(fs_sample_req_t): see the top of this file */
    int num_hops;                    /* 1..FS_MAX_HOPS */
    int fanout[FS_MAX_HOPS];         /* > 0, or FS_FANOUT_ALL */
    fs_sample_mode_t mode[FS_MAX_HOPS];
    uint64_t seed;
    int want_edge_ids;
    double locality;                 /* 0 or 1 = off; > 1 = boost s; FS_LOCALITY_AUTO */
} fs_sample_req_t;

#define FS_SAMPLE_REQ_INIT FS_STRUCT_INIT(fs_sample_req_t)

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

/* ---- what a server reports about itself (fs_info) -------------------------------- */

typedef struct {
    const char *name;
    fs_dtype_t dtype;
    int64_t rows, dim;
} fs_table_info_t;

/* One memory tier of the served placement: tier 0 is the dataset's mapped
 * files; a placement adds one per (simulated) GPU. */
typedef struct {
    const char *kind;            /* "host", "pinned", "device" or "sim_device" */
    int device;                  /* GPU (or simulated GPU) id; -1 for host tiers */
    uint64_t capacity_bytes;     /* 0 = unlimited */
    uint64_t used_bytes;
} fs_tier_info_t;

/* Where one reader GPU's feature bytes come from ([0] its own GPU, [1]
 * peer GPUs, [2] host memory): the placement's prediction per mini-batch
 * of the workload it was costed with, and what its trainers read since
 * that placement started serving. Compare shares: trainers' batches need
 * not match that workload. */
typedef struct {
    int reader;
    double predicted_bytes[3];
    uint64_t measured_bytes[3];
} fs_reader_info_t;

/* Every list is a counted array of any length, owned by the fs_info_t. */
typedef struct {
    const char *server_version;
    const char *dataset;
    int64_t num_nodes, num_edges, num_classes;
    int symmetric, weighted;
    size_t num_tables;
    const fs_table_info_t *tables;    /* the feature tables, then "labels" when labelled */
    size_t num_splits;
    const char *const *splits;        /* split names ("train", "valid", "test", ...) */
    size_t num_tiers;
    const fs_tier_info_t *tiers;
    size_t num_readers;               /* reader GPUs with a prediction (0 without a placement) */
    const fs_reader_info_t *readers;
    uint64_t placement_generation;    /* 1 at start, +1 per re-plan; measurements count from its start */
} fs_info_t;

/* Frees an fs_info_t and everything it points to. NULL is a no-op. */
FS_API void fs_info_free(fs_info_t *info);

#ifdef __cplusplus
}
#endif

#endif
