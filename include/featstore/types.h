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
    FS_END,                  /* not an error: a stream's epoch is over (since 1.4) */
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

/* Since 1.5, an out_dtype only: a table's stored form, whatever it is. A
 * gather's out_dtype FS_DTYPE_INVALID is the table's default form: as
 * stored, but float32 for a compressed table (`featstore compress`), whose
 * stored form this asks for instead: an int8 table's rows of scale, bias
 * and codes (docs/format.md, "Compressed tables"), or its float16. */
#define FS_DTYPE_STORED ((fs_dtype_t)64)

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
 * controller currently holds (fs_report_load_ratio in featstore/client.h;
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

/* ---- heterogeneous graphs: hetero, temporal and link-prediction sampling (since 1.3) */

/* How hop h's destinations are chosen (docs/algorithms.md §9). */
typedef enum {
    FS_FRONTIER_NEW = 0,  /* PyG: hop h expands the nodes first reached at hop h-1 (the seeds at
                             hop 0); the blocks together are one subgraph */
    FS_FRONTIER_ALL,      /* DGL blocks: hop h expands every node reached so far, so block h's
                             destinations are a prefix of its sources */
} fs_frontier_t;

typedef enum {
    FS_TEMPORAL_OFF = 0,  /* time is ignored */
    FS_TEMPORAL_UNIFORM,  /* a uniform (or weighted) pick among the eligible edges */
    FS_TEMPORAL_LAST,     /* the most recent k eligible edges */
    FS_TEMPORAL_COUNT_
} fs_temporal_t;

typedef enum {
    FS_NEG_NONE = 0,      /* only the given edges (their labels, or 1) */
    FS_NEG_BINARY,        /* round(amount * count) corrupted pairs labelled 0 */
    FS_NEG_TRIPLET,       /* amount (an integer k) negative destinations per positive */
    FS_NEG_COUNT_
} fs_neg_mode_t;

/* One edge type's fanouts, PyG's num_neighbors entry for it: per hop > 0,
 * FS_FANOUT_ALL (-1) for every eligible neighbour, or 0 for none. Edge
 * types a request does not list take no neighbours. */
typedef struct {
    const char *src, *rel, *dst;     /* the edge type (src, rel, dst) */
    int fanout[FS_MAX_HOPS];         /* [num_hops] */
} fs_hetero_fanout_t;

/* A hetero k-hop sampling request and the gather done in the same call.
 *
 *   fs_hetero_fanout_t f[] = {{"paper", "cites", "paper", {10, 5}},
 *                             {"author", "writes", "paper", {5, 0}}};
 *   const char *tables[] = {"feat", "labels"};
 *   fs_hetero_req_t req = FS_HETERO_REQ_INIT;
 *   req.num_hops = 2, req.fanouts = f, req.num_fanouts = 2, req.seed = step;
 *   req.node_tables = tables, req.num_node_tables = 2;
 *
 * Time: with `temporal` set each seed carries a time (given, or its node
 * timestamp); only edges no newer than it are eligible (`strict`: older;
 * `window` > 0: also no older than time - window), sampled nodes inherit
 * their seed's time, and every seed grows its own tree (disjoint). A graph
 * without edge times refuses a temporal request by name.
 *
 * Tables: every node type that has a table named in node_tables returns
 * its rows for all of that type's sampled nodes; likewise edge_tables for
 * every sampled edge of an edge type that has the table (by the edge ids
 * the sampler returned, which it then returns too). out_dtype: INVALID =
 * as stored, FS_DTYPE_F32 converts half tables; integer tables (labels) are
 * always served as stored. */
typedef struct {
    size_t struct_size;              /* sizeof(fs_hetero_req_t): FS_HETERO_REQ_INIT */
    int num_hops;                    /* 1..FS_MAX_HOPS */
    size_t num_fanouts;
    const fs_hetero_fanout_t *fanouts;
    fs_sample_mode_t mode[FS_MAX_HOPS]; /* per hop, for every edge type (weighted: edge weights) */
    uint64_t seed;                   /* the same request and seed give the same batch */
    int want_edge_ids;               /* return each sampled edge's id (implied by edge_tables) */
    fs_frontier_t frontier;
    int disjoint;                    /* each seed grows its own tree (implied by temporal) */
    fs_temporal_t temporal;
    int strict;                      /* temporal: only edges strictly older than the seed */
    fs_dtype_t out_dtype;            /* the tables' rows (see above) */
    int64_t window;                  /* temporal: > 0 keeps edges with time >= t - window */
    size_t num_node_tables;
    const char *const *node_tables;
    size_t num_edge_tables;
    const char *const *edge_tables;
} fs_hetero_req_t;

#define FS_HETERO_REQ_INIT FS_STRUCT_INIT(fs_hetero_req_t)

/* Seeds of one node type. time: each seed's time for a temporal request
 * (NULL: the nodes' timestamps); ignored otherwise. */
typedef struct {
    const char *type;
    int64_t count;
    const int64_t *ids;
    const int64_t *time;
} fs_hetero_seeds_t;

/* A link-prediction batch's seed edges and negatives (PyG's
 * LinkNeighborLoader). The neighbourhoods of all endpoints are sampled
 * with fs_hetero_req_t; unless keep_seed_edges, no seed edge, nor its
 * reverse on the reverse edge type (or on the same edge type when it joins
 * a type to itself), is in the sampled subgraph (no label leakage). */
typedef struct {
    size_t struct_size;              /* sizeof(fs_link_req_t): FS_LINK_REQ_INIT */
    const char *src, *rel, *dst;     /* the seed edges' edge type */
    int64_t count;
    const int64_t *src_ids, *dst_ids; /* [count] */
    const int64_t *label;            /* [count] or NULL (all positive) */
    const int64_t *time;             /* [count] or NULL: every seed its own node's timestamp (temporal) */
    fs_neg_mode_t neg;
    int neg_weighted;                /* negative endpoints drawn by degree^0.75, not uniformly */
    double amount;                   /* binary: ratio r >= 0; triplet: k >= 1 (an integer) */
    int strict;                      /* a negative is never an existing edge */
    int keep_seed_edges;             /* 1: leave seed edges in the subgraph (no exclusion) */
} fs_link_req_t;

#define FS_LINK_REQ_INIT FS_STRUCT_INIT(fs_link_req_t)

/* Rows of one table for a list of nodes or edges. data is NULL when the
 * type has no table of that name (then dim is 0). */
typedef struct {
    int64_t rows, dim;
    fs_dtype_t dtype;
    const void *data;                /* [rows][dim] of dtype, row-major */
} fs_rows_t;

/* One node type's part of a hetero batch. Local ids are per type: seeds
 * first (duplicates merged), then first appearance. */
typedef struct {
    const char *name;
    int64_t num_nodes;
    const int64_t *nodes;            /* [num_nodes] global id (of this type) of each local id */
    const int64_t *batch;            /* [num_nodes] disjoint: the seed each node descends from; else NULL */
    const int64_t *time;             /* [num_nodes] temporal: each node's time; else NULL */
    const int64_t *count_after;      /* [num_hops + 1] nodes after the seeds and after each hop */
    const fs_rows_t *tables;         /* [num_node_tables] in the request's order */
} fs_hetero_nodes_t;

typedef struct {
    const char *src, *rel, *dst;
    int src_type, dst_type;          /* indices into fs_hetero_batch_t.types */
} fs_hetero_etype_t;

/* A hetero (or link-prediction) batch, allocated by the library (fields are
 * only ever added at the end). Every node type and edge type of the graph
 * appears, in the server's order (fs_info_t.node_types / edge_types).
 *
 * blocks[h * num_edge_types + e]: hop h of edge type e. Its destinations
 * are local ids of e's dst type, its sources of e's src type. With
 * FS_FRONTIER_ALL destinations are [0, num_dst) (DGL blocks); with
 * FS_FRONTIER_NEW hop h's destinations are that type's nodes from
 * count_after[h-1] (0 at hop 0), and edge_dst holds their local ids while
 * dst_offsets counts from the first of them. */
typedef struct {
    int num_hops, num_node_types, num_edge_types;
    const fs_hetero_nodes_t *types;       /* [num_node_types] */
    const fs_hetero_etype_t *etypes;      /* [num_edge_types] */
    const fs_block_t *blocks;             /* [num_hops * num_edge_types] */
    size_t num_node_tables, num_edge_tables;
    const fs_rows_t *edge_tables;         /* [(h * num_edge_types + e) * num_edge_tables + k]: rows of
                                             block (h, e)'s edges, in its edge order */
    int num_groups;                       /* seed groups, in the request's order */
    const int *group_type;                /* [num_groups] node type of each group */
    const int64_t *group_count;           /* [num_groups] */
    const int64_t *const *seed_local;     /* [num_groups][group_count]: each seed's local id */
    /* link prediction (fs_link_sample); zero otherwise */
    int link_src_type, link_dst_type;
    int64_t num_labels;
    const int64_t *label_src, *label_dst; /* binary/none: [num_labels] local ids (edge_label_index) */
    const int64_t *label;                 /* binary/none: [num_labels] (edge_label) */
    const int64_t *label_time;            /* [num_labels] when the seeds carry times; else NULL */
    int64_t num_pos, num_neg_per_src;     /* triplet: positives and k */
    const int64_t *src_index, *dst_pos_index; /* triplet: [num_pos] */
    const int64_t *dst_neg_index;         /* triplet: [num_pos][k] */
} fs_hetero_batch_t;

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

/* A node type (since 1.3). Its splits are fetched with fs_split as
 * "TYPE/NAME" ("paper/train"). */
typedef struct {
    const char *name;
    int64_t count;                    /* ids 0..count-1 */
    size_t num_tables;
    const fs_table_info_t *tables;    /* features, then "labels" when labelled */
    int64_t num_classes;
    int timed;                        /* has node timestamps */
    size_t num_splits;
    const char *const *splits;
} fs_node_type_info_t;

/* An edge type (since 1.3), stored toward its destination. */
typedef struct {
    const char *src, *rel, *dst;
    int64_t num_edges;
    int weighted, timed;
    int reverse;                      /* the edge type holding each edge reversed, or -1 */
    size_t num_tables;
    const fs_table_info_t *tables;    /* edge features, by edge id */
} fs_edge_type_info_t;

/* A link-prediction split (since 1.3): positive edges of one edge type.
 * Its arrays are fetched with fs_split as "link/NAME/src", ".../dst", and
 * when present ".../label", ".../time" and ".../neg_dst" ([count][num_neg],
 * flattened). */
typedef struct {
    const char *name;
    int edge_type;                    /* index into fs_info_t.edge_types */
    int64_t count;
    int labelled, timed;
    int64_t num_neg;                  /* given negative destinations per edge; 0 = none */
} fs_link_split_info_t;

/* Since 1.5: a split's rows in the row tables of a labelled layout
 * (`featstore propagate --rows labelled`): hop_0 .. hop_R and "hop_node"
 * hold only the splits' nodes, one row each, and this split's are the
 * rows [offset, offset + count), contiguous, in one seeded random order. */
typedef struct {
    const char *name;
    int64_t offset, count;
} fs_row_split_info_t;

/* The row table served beside a labelled layout's hop tables: each row's
 * node id (int64, dim 1), so a reader of rows [a, b) learns their nodes. */
#define FS_ROW_NODE_TABLE "hop_node"

/* Since 1.5: a compressed table (`featstore compress`). `tables` lists it
 * in the form a gather serves by default, float32 [rows][dim]; this is its
 * stored form, which an out_dtype of FS_DTYPE_STORED asks for. */
typedef struct {
    const char *table;
    const char *codec;                /* "narrow" (a float16/bfloat16 copy) or "int8" (docs/format.md) */
    fs_dtype_t stored_dtype;          /* float16, bfloat16 or int8 */
    int64_t stored_dim;               /* an int8 table's rows are 8 + dim bytes: scale, bias, codes */
} fs_compressed_info_t;

/* Every list is a counted array of any length, owned by the fs_info_t. */
typedef struct {
    const char *server_version;
    const char *dataset;
    int64_t num_nodes, num_edges, num_classes;
    int symmetric, weighted;
    size_t num_tables;
    const fs_table_info_t *tables;    /* the feature tables, then "labels" when labelled, then row tables */
    size_t num_splits;
    const char *const *splits;        /* split names ("train", "valid", "test", ...) */
    size_t num_tiers;
    const fs_tier_info_t *tiers;
    size_t num_readers;               /* reader GPUs with a prediction (0 without a placement) */
    const fs_reader_info_t *readers;
    uint64_t placement_generation;    /* 1 at start, +1 per re-plan; measurements count from its start */
    /* Since 1.3: the graph's types. A version-1 (homogeneous) dataset is one
     * node type "node" and one edge type ("node", "to", "node"); a
     * heterogeneous one leaves the version-1 fields above zero and empty.
     * `typed` is set for a heterogeneous graph (the field keeps its 1.3
     * name: renaming it would break programs that read it). */
    int typed;                        /* heterogeneous: more than one node or edge type; only fs_hetero_* calls apply */
    size_t num_node_types;
    const fs_node_type_info_t *node_types;
    size_t num_edge_types;
    const fs_edge_type_info_t *edge_types;
    size_t num_link_splits;
    const fs_link_split_info_t *link_splits;
    /* Since 1.5: the row tables of a labelled layout (also listed in
     * `tables`, after the feature tables, with their own row count; gathered
     * by row, not node id) and each split's rows in them; none without one. */
    size_t num_row_tables;
    const char *const *row_tables;
    size_t num_row_splits;
    const fs_row_split_info_t *row_splits;
    /* Since 1.5: the compressed tables among `tables`; none on a typed graph. */
    size_t num_compressed;
    const fs_compressed_info_t *compressed;
} fs_info_t;

/* Frees an fs_info_t and everything it points to. NULL is a no-op. */
FS_API void fs_info_free(fs_info_t *info);

#ifdef __cplusplus
}
#endif

#endif
