/* featstore/client.h — the featstore client library: what trainers link.
 *
 * QUICK REFERENCE (every call returns fs_status_t; FS_OK = 0, fs_strerror names the rest)
 *
 *   fs_client_t *c;  fs_connect("unix:///run/featstore.sock", NULL, &c);  // or grpc://, grpcs://
 *   fs_client_errstr(c)             the last failure's detail; fs_close(c), even after a failed connect
 *   fs_info(c, &info) / fs_info_free(info)          tables, splits, node and edge types
 *   fs_split(c, "train", &ids) / fs_ids_free(ids)   a split's node ids ("TYPE/NAME" when hetero)
 *
 *   fs_sample_req_t req = FS_SAMPLE_REQ_INIT;  req.num_hops = 2, req.fanout[0] = 25, ...;
 *   fs_sample_gather(c, seeds, n, &req, "feat", FS_DTYPE_INVALID, &b)    a mini-batch (fs_batch_t)
 *   fs_sample(...) / fs_gather(c, ids, n, "feat", dtype, &b)             either half alone
 *   fs_batch_free(b)                the batch and its result slot back
 *
 *   fs_hetero_sample(c, groups, num_groups, &hreq, &hb)  a hetero batch (several node and edge
 *                                   types, PyG's HeteroData): fs_hetero_req_t in featstore/types.h
 *   fs_link_sample(c, &link, &hreq, &hb)                 link prediction with negatives
 *   fs_hetero_batch_free(hb)
 *
 *   fs_stream_open_nodes(c, &common, &node_opts, &s)   one DDP rank's epoch, made ahead by
 *                                   producer threads (_hetero, _link, _rows: the other kinds)
 *   while (fs_stream_next(s, &sb) == FS_OK) { ...; fs_stream_batch_free(sb); }  // then FS_END
 *   fs_stream_close(s)              fs_stream_errstr(s) says why a next failed
 *   fs_report_load_ratio(c, r, &s)  once per epoch: locality-aware sampling's controller
 *   fs_split_by_owner(c, NULL, roots, n, &g), fs_batch_micrographs(c, b, &m),
 *   fs_pregather(c, b, m, ...)      HopGNN's owner-routed batches over a sharded cluster
 *
 * From the papers (docs/papers.md): streams' delta and window are FastGL's Match and
 * Reorder (P2; docs/algorithms.md §6); locality-aware sampling and its controller are
 * Algorithm 2 of "Rethinking Graph Data Placement for Graph Neural Network Training on
 * Multiple GPUs" (P0; §4); row streams and the chunked order are "Graph Learning at
 * Scale: Characterizing and Optimizing Pre-Propagation GNNs" (P4; §8).
 *
 * Read more: docs/api.md (the contract: §9 every function, §10 hetero graphs, §11
 * streams), docs/serving.md ("The client library"), examples/trainer.c (a whole
 * trainer). Administration (re-planning) is in featstore/admin.h.
 *
 * Example:
 *
 *   fs_client_t *c;
 *   if (fs_connect("unix:///run/featstore.sock", NULL, &c) != FS_OK) {
 *       fprintf(stderr, "%s\n", fs_client_errstr(c));   // c may be NULL only on OOM
 *       fs_close(c);
 *       return;
 *   }
 *   fs_sample_req_t req = {.struct_size = sizeof req, .num_hops = 2, .fanout = {25, 10}, .seed = step};
 *   fs_batch_t *b;
 *   if (fs_sample_gather(c, seeds, n, &req, "feat", FS_DTYPE_F32, &b) == FS_OK) {
 *       train(b->blocks, b->num_hops, b->features, b->num_nodes, b->dim);
 *       fs_batch_free(b);
 *   }
 *   fs_close(c);
 *
 * Transports: "unix:///path/to/socket" for trainers on the server's machine
 * (the dataset is mapped read-only into this process and shared with every
 * other trainer; results land in shared slots, zero copies) and
 * "grpc://host:port" for remote trainers ("grpcs://host:port": the same
 * over TLS, see fs_connect_opts_t). Every call behaves the same over
 * both and returns bit-identical results. Since 1.5, "etcd://host:port/
 * CLUSTER" reaches a sharded cluster (featstore partition, shard servers
 * registered on that etcd) as one store: the same batches as one server
 * for fs_sample, fs_gather, fs_sample_gather, fs_hetero_sample,
 * fs_link_sample (negatives of every kind; temporal ones with or without
 * the edges' times),
 * fs_split, fs_info and their streams; the rest is
 * FS_ERR_UNSUPPORTED for now (docs/api.md). `threads` splits its gathers'
 * conversions; the other options are ignored. The gRPC part of the library is
 * loaded on the first grpc:// or etcd:// connection, so a unix-only trainer
 * never loads gRPC.
 *
 * Calls: one per operation, each returning an fs_status_t (fs_strerror()
 * names it) with the detail of a failure in fs_client_errstr(). Arguments
 * come in one order: the connection, the input ids and their count, what
 * to do with them (request, table, dtype), then the result.
 *
 * Ownership: a batch, info, id set or stats text belongs to the caller
 * until its free call; its arrays stay valid until then and are read-only.
 * Over unix:// a connection has a fixed number of result slots (see
 * fs_connect_opts_t.slots): holding that many batches makes the next call
 * fail with FS_ERR_RESOURCE until one is freed. A closed connection's slots
 * stay mapped for the process's next connection while another one is open
 * (at most 16 slots, 1 GiB); the last fs_close frees them.
 *
 * Thread-safety: a connection may be used by one thread at a time (give each
 * thread its own, or lock around calls); results may be read and freed from
 * any thread, and batches may outlive fs_close. Nothing here is signal-safe.
 *
 * Fork-safety: a connection belongs to the process that opened it. In a
 * child forked after fs_connect (a data-loader worker) every call on the
 * inherited connection fails with FS_ERR_INVALID_ARGUMENT ("this connection
 * was opened by process P ...: a forked child must fs_connect again"),
 * because parent and child would share one socket: their requests and
 * replies would interleave. The child connects anew; fs_close on the inherited connection
 * (and fs_batch_free on inherited batches) frees only the child's copies,
 * sends nothing and leaves the parent's connection working. Batches made
 * before the fork must not be read in the child: over unix:// they lie in
 * the child's copy of the parent's slots (private memory, copied on write),
 * which holds what the parent had written by then. gRPC's threads do
 * not survive fork(): a child forked while its parent was running gRPC
 * cannot connect over grpc:// (FS_ERR_UNSUPPORTED, at once); close grpc://
 * connections before forking workers (docs/api.md section 8).
 *
 * Versions: FS_VERSION_* is the release this header belongs to; option
 * structs carry their size (featstore/types.h), so a program built against
 * an older header runs with a newer library. Administration (re-planning)
 * is in featstore/admin.h. */
#ifndef FEATSTORE_CLIENT_H
#define FEATSTORE_CLIENT_H

#include "featstore/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FS_VERSION_MAJOR 1
#define FS_VERSION_MINOR 5
#define FS_VERSION_PATCH 0

/* The library's version, "MAJOR.MINOR.PATCH": compare with FS_VERSION_* to
 * see that a program runs with the library it was built for. */
FS_API const char *fs_version(void);

typedef struct fs_client fs_client_t;

#define FS_DEFAULT_SLOTS 4
#define FS_MAX_SLOTS 64

/* Connection options (zero = the default for every field). */
typedef struct {
    size_t struct_size; /* sizeof(fs_connect_opts_t): FS_CONNECT_OPTS_INIT sets it */
    int slots;          /* unix://: result slots, 1..FS_MAX_SLOTS; 0 = FS_DEFAULT_SLOTS */
    int threads;        /* unix://: threads of this process that split each call's
                           sampling hops and gathers (bit-identical results at
                           any count); 0 = 1 */
    int timeout_ms;     /* per call deadline; 0 = none */
    const char *device; /* unix://: the device this trainer computes on, whose
                           placement it reads through: NULL or "cpu", or
                           "gpu:N" (a GPU or simulated GPU id) */
    /* Since 1.1: remote security (unix:// ignores these four). Each NULL
     * field takes its environment variable, if set. Files are read at
     * fs_connect; the strings need not outlive it. */
    const char *tls_ca_file;   /* grpcs://: PEM roots the server's certificate must chain to;
                                  NULL = $FEATSTORE_TLS_CA, else gRPC's default roots */
    const char *tls_cert_file; /* grpcs://: this client's certificate chain (mTLS), with ... */
    const char *tls_key_file;  /* ... its private key (PEM); NULL = $FEATSTORE_TLS_CERT / $FEATSTORE_TLS_KEY */
    const char *token;         /* grpc:// and grpcs://: bearer token sent with every call
                                  ("authorization: Bearer <token>"); NULL = $FEATSTORE_TOKEN */
} fs_connect_opts_t;

#define FS_CONNECT_OPTS_INIT FS_STRUCT_INIT(fs_connect_opts_t)

/* Connects; opts may be NULL (every default). On failure *out is still set
 * (unless out of memory) so the reason can be read with
 * fs_client_errstr(); always fs_close() it. */
FS_API fs_status_t fs_connect(const char *uri, const fs_connect_opts_t *opts, fs_client_t **out);
FS_API void fs_close(fs_client_t *c);

/* The detail of the last failed call on this connection ("" if none). */
FS_API const char *fs_client_errstr(const fs_client_t *c);
/* "unix" or "grpc". */
FS_API const char *fs_client_transport(const fs_client_t *c);

/* ---- dataset facts (fs_info_t: featstore/types.h) ---------------------------------- */

/* The server's dataset, tables, splits, tiers and placement; every list
 * whole, whatever its length. Free with fs_info_free. */
FS_API fs_status_t fs_info(fs_client_t *c, fs_info_t **out);

/* ---- mini-batches ------------------------------------------------------------ */

/* What a batch holds: test `kind & FS_BATCH_SAMPLE` and `kind & FS_BATCH_GATHER`. */
typedef enum {
    FS_BATCH_SAMPLE = 1,         /* the sample part: fs_sample */
    FS_BATCH_GATHER = 2,         /* the feature part: fs_gather */
    FS_BATCH_SAMPLE_GATHER = 3,  /* both: fs_sample_gather, features[i] the row of nodes[i] */
} fs_batch_kind_t;

/* Where a batch's array lives. */
typedef enum {
    FS_MEM_HOST = 0,    /* this process's memory */
    FS_MEM_DEVICE = 1,  /* device memory of one GPU (fs_batch_t.features_device) */
} fs_memory_t;

/* One result, allocated by the library (fields are only ever added at the
 * end). Parts a kind does not hold are zero/NULL. */
typedef struct {
    fs_batch_kind_t kind;
    /* sample */
    int num_hops;
    const fs_block_t *blocks;    /* [num_hops]: blocks[0] is the hop from the seeds */
    int64_t num_nodes;
    const int64_t *nodes;        /* [num_nodes] global id of each local id */
    int64_t num_seeds;
    const int64_t *seed_local;   /* [num_seeds] local id of each input seed */
    /* features */
    int64_t rows, dim;
    fs_dtype_t dtype;
    const void *features;        /* [rows][dim] of dtype, row-major */
    /* Since 1.2: where `features` lives. A unix:// trainer connected with
     * device "gpu:N" whose placement puts rows in that GPU's memory gathers
     * on the GPU, into a device result slot: FS_MEM_DEVICE and N. Every
     * other batch, and the sample part of every batch (the CUDA sampler
     * copies its result back), is host memory: FS_MEM_HOST and -1. */
    fs_memory_t features_memory;
    int features_device;
} fs_batch_t;

/* Uniform/weighted k-hop sampling from `seeds` (see fs_sample_req_t). */
FS_API fs_status_t fs_sample(fs_client_t *c, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
                             fs_batch_t **out);

/* Rows `ids` of feature table `table`. out_dtype: the stored dtype
 * (FS_DTYPE_INVALID means "as stored") or FS_DTYPE_F32 for half tables.
 * Labels, when the dataset has them, are the table "labels" (int64, dim 1,
 * -1 = unlabelled). */
FS_API fs_status_t fs_gather(fs_client_t *c, const int64_t *ids, int64_t n, const char *table, fs_dtype_t out_dtype,
                             fs_batch_t **out);

/* One mini-batch: sample, then gather the sampled nodes' features. */
FS_API fs_status_t fs_sample_gather(fs_client_t *c, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
                                    const char *table, fs_dtype_t out_dtype, fs_batch_t **out);

/* Releases a batch (and its result slot). NULL is a no-op. */
FS_API void fs_batch_free(fs_batch_t *b);

/* The host memory a batch's arrays live in: over unix:// its shared result
 * slot (every host array of the batch is inside it; device features are
 * in the slot's device twin), over grpc:// the buffer the feature rows
 * were received into. For checking zero-copy claims and for
 * pinning or registering the memory; valid until fs_batch_free. */
FS_API fs_status_t fs_batch_region(const fs_batch_t *b, const void **base, size_t *len);

/* ---- locality-aware sampling: the per-epoch controller (Algorithm 2) ------------- */

/* Requests with fs_sample_req_t.locality > 1 boost neighbours that lead to
 * rows in the reader's GPU memory and return per-edge importance weights
 * (fs_block_t.edge_weights); see featstore/types.h. Over unix:// with
 * device "gpu:N" and a server with a placement; elsewhere such a request
 * fails with FS_ERR_UNSUPPORTED and a message saying what is missing.
 *
 * Algorithm 2 (docs/algorithms.md §4) picks s per epoch from the time the
 * trainer spends loading: call this once per epoch with r = loading time /
 * total time of that epoch, in [0, 1]. The connection's controller (s starts
 * at 1; thresholds 0.15 and 0.2; at most 8) updates s — doubling while
 * r > 0.2, backing off halfway to the previous s after an overshoot
 * (r < 0.15), settling for good once r is in range or s reached 8 — and
 * writes the s for the next epoch to *locality (may be NULL). Requests with
 * locality = FS_LOCALITY_AUTO use the current s (plain sampling while it
 * is 1). A bad r (NaN, outside [0, 1]) is FS_ERR_INVALID_ARGUMENT and
 * changes nothing. Kept per connection on both transports.
 *
 * A trainer's call, once per epoch (in admin.h before 1.5). Thread-safety
 * as every call on c: one thread at a time; no memory changes hands. */
FS_API fs_status_t fs_report_load_ratio(fs_client_t *c, double load_ratio, double *locality);

/* ---- heterogeneous graphs (since 1.3) ------------------------------------------- */

/* Hetero k-hop sampling from seed groups (one per node type, or several of
 * one type), and the gather of the request's node and edge tables, in one
 * call (fs_hetero_req_t, fs_hetero_batch_t: featstore/types.h). Works on
 * every dataset: a homogeneous one is the node type "node" and the edge
 * type ("node", "to", "node"). Refusals name what is wrong: an unknown
 * node type, edge type or table, fanouts for a relation the graph does not
 * have, time on a graph without times, a negative ratio. */
FS_API fs_status_t fs_hetero_sample(fs_client_t *c, const fs_hetero_seeds_t *groups, size_t num_groups,
                                    const fs_hetero_req_t *req, fs_hetero_batch_t **out);

/* A link-prediction batch: link's seed edges and negatives, both endpoints'
 * neighbourhoods sampled as req says (fs_link_req_t). */
FS_API fs_status_t fs_link_sample(fs_client_t *c, const fs_link_req_t *link, const fs_hetero_req_t *req,
                                  fs_hetero_batch_t **out);

/* Releases a hetero batch (and its result slot). NULL is a no-op. */
FS_API void fs_hetero_batch_free(fs_hetero_batch_t *b);

/* As fs_batch_region: the one buffer every array of the batch lies in. */
FS_API fs_status_t fs_hetero_batch_region(const fs_hetero_batch_t *b, const void **base, size_t *len);

/* ---- epoch streams (since 1.4) ------------------------------------------------ */

/* A stream hands one rank of a training job its share of an epoch, batch
 * after batch, made ahead of time by background threads of this process
 * (producers, each on a connection of its own to the same server) while
 * the trainer computes:
 *
 *   fs_stream_common_t o = FS_STREAM_COMMON_INIT;
 *   o.split = "train", o.batch_size = 1024, o.seed = 42, o.epoch = epoch, o.rank = rank, o.world_size = world;
 *   fs_stream_node_opts_t n = FS_STREAM_NODE_OPTS_INIT;
 *   n.sample = &req, n.table = "feat";
 *   fs_stream_t *s;
 *   if (fs_stream_open_nodes(c, &o, &n, &s) != FS_OK) { ... fs_client_errstr(c) ... }
 *   fs_stream_batch_t *b;
 *   while (fs_stream_next(s, &b) == FS_OK) {
 *       train(b->batch, b->labels);
 *       fs_stream_batch_free(b);
 *   }
 *   // FS_END: the epoch is over; anything else failed (fs_stream_errstr)
 *   fs_stream_close(s);
 *
 * The epoch's plan follows torch's DistributedSampler (docs/api.md §11):
 * every rank gets an equal, disjoint share of one permutation of the
 * seeds, the same on every rank for the same seed and epoch; without
 * drop_last the permutation is padded by repeating its start, with it the
 * uneven tail and a share's last short batch are dropped. Every rank gets
 * the same number of batches. Batch i is exactly fs_sample_gather on its
 * seeds with the request's seed set to its request_seed, so a stream is
 * reproducible, and resumable: a stream opened with the same options and
 * start_batch = fs_stream_position() of an earlier one continues it bit
 * for bit (after a server restart, or the trainer's own). A connection the
 * server broke is re-opened and the batch retried, within timeout_ms.
 * Over grpc:// to a 1.5 server a node stream is one server-streaming call
 * (the server makes the batches, the same ones); fs_stream_node_opts_t.calls
 * = FS_STREAM_CALLS_BATCH makes it use one call per batch, as older servers
 * get (with FS_STREAM_CALLS_AUTO, FEATSTORE_STREAM_CALLS=batch in the
 * environment does the same: the fallback of 1.5's first form).
 *
 * Ownership and threads: a stream is used by one thread at a time; its
 * batches may be freed from any thread, and outlive fs_stream_close.
 * fs_stream_open reads everything it needs from the options (they need
 * not outlive the call); the connection c must outlive the stream. */
typedef struct fs_stream fs_stream_t;

typedef enum {
    FS_ORDER_RANDOM = 0,     /* a fresh permutation for each (seed, epoch) */
    FS_ORDER_SEQUENTIAL = 1, /* the seeds in their order */
    FS_ORDER_CHUNKED = 2,    /* runs of `chunk` consecutive seeds, the runs shuffled
                                (chunk reshuffling from the pre-propagation GNN
                                study, P4 in docs/papers.md; over DDP ranks each
                                rank gets whole chunks, dealt in that order) */
} fs_stream_order_t;

/* FastGL's Match (P2 in docs/papers.md; docs/algorithms.md §6): consecutive
 * batches of one trainer share many rows, so a stream can fetch only the
 * rows the previous batch it handed out lacks. Over grpc:// only those rows
 * travel. */
typedef enum {
    FS_DELTA_OFF = 0,  /* every batch's rows fetched whole (one fs_sample_gather) */
    FS_DELTA_FULL = 1, /* new rows fetched; the full matrix assembled from them and
                          the previous batch's (fs_stream_batch_t.features) */
    FS_DELTA_ONLY = 2, /* new rows fetched and handed out with the take map, no full
                          matrix: for callers keeping the previous rows on their GPU */
} fs_delta_t;

/* The 1.4 form's options (fs_stream_open, deprecated since 1.5): every
 * kind's fields in one struct. The per-kind calls below take
 * fs_stream_common_t and one struct per kind instead; fields of the same
 * names mean the same. */
typedef struct {
    size_t struct_size;          /* sizeof(fs_stream_opts_t): FS_STREAM_OPTS_INIT sets it */
    /* the seeds: a split's name, or an array (copied) */
    const char *split;
    const int64_t *seeds;
    int64_t num_seeds;
    int64_t batch_size;          /* >= 1 */
    int drop_last;
    const fs_sample_req_t *sample; /* the sampling request; its seed is replaced per batch */
    const char *table;           /* the feature table to gather for the sampled nodes */
    fs_dtype_t out_dtype;        /* as fs_gather's */
    const char *labels;          /* the seeds' label table: NULL = "labels" when the dataset
                                    has it, "" = none */
    uint64_t seed;               /* the shuffle seed */
    int64_t epoch;               /* >= 0 */
    int rank, world_size;        /* 0 <= rank < world_size; 0, 0 = a single trainer */
    int prefetch;                /* batches made ahead, 1..16; 0 = two per producer (since 1.5; 2 before) */
    fs_stream_order_t order;
    int64_t chunk;               /* FS_ORDER_CHUNKED: seeds per run */
    int64_t start_batch;         /* resume: the first batch to hand out */
    int hold;                    /* batches the caller may hold at once, 1..16; 0 = 2 */
    fs_delta_t delta;            /* Match: fetch only the rows the previous batch lacks */
    int window;                  /* Reorder (needs delta): batches made and reordered per
                                    window, 1..16; 0 or 1 = the plan's order */
    /* Hetero batches, instead of sample/table (delta and window do not apply):
     * hetero alone: node seeds of seed_type (NULL = the split's "TYPE/"
     *   prefix), each batch fs_hetero_sample; the tables are the request's
     *   (put "labels" in node_tables), so labels must be NULL or "";
     * link and hetero: `split` names a link split (fs_info's link_splits),
     *   each batch fs_link_sample on its edges (with their labels and times
     *   when the split has them), link giving the edge type and negatives
     *   (its count and arrays are the stream's). */
    const fs_hetero_req_t *hetero;
    const char *seed_type;
    const fs_link_req_t *link;
    /* Row batches (pre-propagation GNNs, P4 in docs/papers.md), instead of
     * sample/table: no sampling; each batch gathers its seeds' rows of every
     * one of these tables (hop_0 .. hop_R of `featstore propagate`), with
     * their labels.
     * Row tables (a labelled layout, since 1.5) are read by row: the epoch
     * is the rows of `split` (fs_info_t's row_splits), a batch's seeds are
     * its rows' nodes (the "hop_node" table), and consecutive rows are
     * copied as one run (fs_stream_batch_t.ranges). All the tables are row
     * tables or none are. */
    const char *const *tables;
    size_t num_tables;
    /* Since 1.5: producers, the background threads making batches, each a
     * whole batch at a time on a connection of its own, 1..16, at most
     * prefetch (no more batches are made at once); 0 = automatic: over
     * unix:// the connection's `threads` if given, else one per
     * core this process may use, up to 4; else 1. Several producers share
     * the connection's threads (threads / producers each): several batches
     * made at once on as many cores scale better than one batch split over
     * them. Each producer's connection has its own result slots. Delta
     * streams and grpc:// node streams (one call, made by the server) have
     * one. */
    int producers;
} fs_stream_opts_t;

#define FS_STREAM_OPTS_INIT FS_STRUCT_INIT(fs_stream_opts_t)

/* One batch of a stream (fields are only ever added at the end). */
typedef struct {
    const fs_batch_t *batch;     /* the sample and the features: fs_sample_gather's batch */
    int64_t index;               /* its place in this rank's epoch, 0..num_batches-1 */
    uint64_t request_seed;       /* the sampling seed it was made with */
    int64_t num_seeds;
    const int64_t *seeds;        /* [num_seeds] global ids, the batch's seeds in order */
    const int64_t *labels;       /* [num_seeds] their labels, or NULL without a label table */
    int64_t plan_index;          /* the plan's batch number (index, unless reordered) */
    /* the features, row i for batch->nodes[i]: NULL with FS_DELTA_ONLY or
     * without a table (with FS_DELTA_OFF, batch->features) */
    const void *features;
    int64_t dim;
    fs_dtype_t dtype;
    /* Match: this batch against the previous one the stream handed out.
     * Row i of the batch is row take[i] of concat(the previous batch's
     * prev_rows rows, new_rows). The first batch after fs_stream_open has
     * prev_rows = 0: every row new. With FS_DELTA_OFF take is NULL and
     * new_rows the whole matrix. */
    int64_t num_new;
    const void *new_rows;        /* [num_new][dim] of dtype */
    const int64_t *take;         /* [batch->num_nodes] */
    int64_t prev_rows;
    double match;                /* |this ∩ previous| / |this| over rows: the match degree */
    const fs_hetero_batch_t *hetero; /* hetero and link streams: the batch (batch is NULL) */
    size_t num_tables;           /* row streams: tables[k] holds the seeds' rows of the */
    const fs_batch_t *const *tables; /* options' tables[k], row i for seeds[i] (batch is NULL) */
    /* Since 1.5, row streams over row tables (a labelled layout, fs_info_t's
     * row_tables): the batch's rows, as runs [first row, first row + rows)
     * in the order they were read, each copied in bulk; one run per chunk
     * with FS_ORDER_CHUNKED. 0 and NULL otherwise. */
    int64_t num_ranges;
    const int64_t *ranges;       /* [num_ranges][2]: first row, rows */
    /* Since 1.5: each seed's position in the stream's seed list (the
     * options' seeds, the split's ids, a link split's edges): seeds[i] is
     * that list's element positions[i]. What PyG calls input_id. */
    const int64_t *positions;    /* [num_seeds] */
} fs_stream_batch_t;

/* The 1.4 form, compatible and deprecated since 1.5: one struct for every
 * kind of stream. It forwards to the per-kind calls below (the kind: link
 * set -> link, else hetero -> hetero, else tables -> rows, else nodes),
 * with the same batches bit for bit, after refusing by name every field
 * that does not apply to that kind ("delta applies to node streams only;
 * this is a link stream"). Failures: fs_client_errstr(c). */
FS_API fs_status_t fs_stream_open(fs_client_t *c, const fs_stream_opts_t *opts, fs_stream_t **out);

/* ---- epoch streams, one open call per kind (since 1.5) ---------------------- */

/* Each kind of batch has its own open call and options, so a field of
 * another kind cannot be given: fs_stream_common_t for what every stream
 * takes (the seeds and the epoch's plan, the pipeline), and one struct for
 * the kind's own requests. The fields mean what fs_stream_opts_t's fields of
 * the same names mean; each struct starts with struct_size (its _INIT macro
 * sets it; docs/api.md section 3). Ownership and threads: as fs_stream_open
 * (the options are read at the call and need not outlive it; c must outlive
 * the stream, one thread at a time on c). Failures: fs_client_errstr(c), the
 * options named (FS_ERR_INVALID_ARGUMENT "stream: a delta mode fetches a
 * table's rows: give a table", "stream: seeds (an array) do not apply to link
 * streams: ...", an unknown split or table, ...). */
typedef struct {
    size_t struct_size;          /* sizeof(fs_stream_common_t): FS_STREAM_COMMON_INIT sets it */
    const char *split;           /* the seeds: a split's name (a link split's for link streams), or ... */
    const int64_t *seeds;        /* ... an array (copied; not for link streams) */
    int64_t num_seeds;
    int64_t batch_size;          /* >= 1 */
    int drop_last;
    uint64_t seed;               /* the shuffle seed */
    int64_t epoch;               /* >= 0 */
    int64_t chunk;               /* FS_ORDER_CHUNKED: seeds per run */
    int64_t start_batch;         /* resume: the first batch to hand out */
    fs_stream_order_t order;
    int rank, world_size;        /* 0 <= rank < world_size; 0, 0 = a single trainer */
    int prefetch;                /* batches made ahead, 1..16; 0 = two per producer */
    int hold;                    /* batches the caller may hold at once, 1..16; 0 = 2 */
    int producers;               /* threads making batches, 1..16 (at most prefetch); 0 = automatic */
} fs_stream_common_t;

#define FS_STREAM_COMMON_INIT FS_STRUCT_INIT(fs_stream_common_t)

/* Who makes a grpc:// node stream's batches. */
typedef enum {
    FS_STREAM_CALLS_AUTO = 0,   /* the server, in one Stream call, when it is 1.5 or later (unless
                                   FEATSTORE_STREAM_CALLS=batch); else one call per batch */
    FS_STREAM_CALLS_STREAM = 1, /* the server, in one call; refused where it cannot be (unix://,
                                   where the trainer makes its own, or a server before 1.5) */
    FS_STREAM_CALLS_BATCH = 2,  /* this process, one call per batch, as every server answers */
} fs_stream_calls_t;

/* Node batches: each is fs_sample_gather of its seeds plus their labels. */
typedef struct {
    size_t struct_size;          /* sizeof(fs_stream_node_opts_t): FS_STREAM_NODE_OPTS_INIT sets it */
    const fs_sample_req_t *sample; /* the sampling request (required); its seed is replaced per batch */
    const char *table;           /* the feature table to gather for the sampled nodes; NULL = sample only */
    const char *labels;          /* the seeds' label table: NULL = "labels" when the dataset has it, "" = none */
    fs_dtype_t out_dtype;        /* as fs_gather's */
    fs_delta_t delta;            /* Match: fetch only the rows the previous batch lacks (needs table) */
    int window;                  /* Reorder (needs delta): batches per window, 1..16; 0 = 1 */
    fs_stream_calls_t calls;     /* grpc://: who makes the batches */
} fs_stream_node_opts_t;

#define FS_STREAM_NODE_OPTS_INIT FS_STRUCT_INIT(fs_stream_node_opts_t)

/* Hetero batches: each is fs_hetero_sample of seed_type seeds with the
 * request (deep-copied); its tables are the request's ("labels" in
 * node_tables). */
typedef struct {
    size_t struct_size;          /* sizeof(fs_stream_hetero_opts_t): FS_STREAM_HETERO_OPTS_INIT sets it */
    const fs_hetero_req_t *request; /* required */
    const char *seed_type;       /* the seeds' node type; NULL = the split's "TYPE/" prefix */
} fs_stream_hetero_opts_t;

#define FS_STREAM_HETERO_OPTS_INIT FS_STRUCT_INIT(fs_stream_hetero_opts_t)

/* Link batches: each is fs_link_sample of the link split's edges (common's
 * split; with their labels and times when it has them), link giving the edge
 * type and negatives (its count and arrays are the stream's). */
typedef struct {
    size_t struct_size;          /* sizeof(fs_stream_link_opts_t): FS_STREAM_LINK_OPTS_INIT sets it */
    const fs_hetero_req_t *request; /* required: samples both endpoints' neighbourhoods */
    const fs_link_req_t *link;   /* required */
} fs_stream_link_opts_t;

#define FS_STREAM_LINK_OPTS_INIT FS_STRUCT_INIT(fs_stream_link_opts_t)

/* Row batches (pre-propagation): no sampling; each gathers its seeds' rows
 * of every table, with their labels (row tables: by row, common's split). */
typedef struct {
    size_t struct_size;          /* sizeof(fs_stream_rows_opts_t): FS_STREAM_ROWS_OPTS_INIT sets it */
    fs_dtype_t out_dtype;        /* as fs_gather's (first: the struct then ends without padding) */
    const char *const *tables;   /* 1..16 tables (required) */
    size_t num_tables;
    const char *labels;          /* as fs_stream_node_opts_t's */
} fs_stream_rows_opts_t;

#define FS_STREAM_ROWS_OPTS_INIT FS_STRUCT_INIT(fs_stream_rows_opts_t)

/* Opens a stream of one kind on c; *out is NULL on failure. */
FS_API fs_status_t fs_stream_open_nodes(fs_client_t *c, const fs_stream_common_t *common,
                                        const fs_stream_node_opts_t *opts, fs_stream_t **out);
FS_API fs_status_t fs_stream_open_hetero(fs_client_t *c, const fs_stream_common_t *common,
                                         const fs_stream_hetero_opts_t *opts, fs_stream_t **out);
FS_API fs_status_t fs_stream_open_link(fs_client_t *c, const fs_stream_common_t *common,
                                       const fs_stream_link_opts_t *opts, fs_stream_t **out);
FS_API fs_status_t fs_stream_open_rows(fs_client_t *c, const fs_stream_common_t *common,
                                       const fs_stream_rows_opts_t *opts, fs_stream_t **out);

/* The next batch, waiting for it if it is not made yet: FS_OK, or FS_END
 * once the epoch is over (then *out is NULL), or a failure
 * (fs_stream_errstr). Free each batch with fs_stream_batch_free. */
FS_API fs_status_t fs_stream_next(fs_stream_t *s, fs_stream_batch_t **out);
FS_API void fs_stream_batch_free(fs_stream_batch_t *b);

/* This rank's number of batches in the epoch, and the index of the batch
 * the next fs_stream_next returns (the cursor to resume from). */
FS_API int64_t fs_stream_num_batches(const fs_stream_t *s);
FS_API int64_t fs_stream_position(const fs_stream_t *s);

/* Batches made ahead and waiting (0..prefetch): how far the loader is
 * ahead of the trainer. */
FS_API int fs_stream_ready(const fs_stream_t *s);

/* The detail of the stream's last failure ("" if none). */
FS_API const char *fs_stream_errstr(const fs_stream_t *s);

/* Stops the producer threads; batches not yet freed stay valid. Over
 * unix:// the stream's connections stay with c for its next stream (since
 * 1.5: docs/api.md §11), which takes those whose batches are freed;
 * fs_close(c) closes them. NULL is a no-op. */
FS_API void fs_stream_close(fs_stream_t *s);

/* The prefetch fs_stream_open gives a stream on c with these options when
 * their prefetch is 0 (opts NULL: every option's default): two batches per
 * producer, at most 16; 2 for a NULL c (since 1.5). For callers that
 * pipeline explicit calls themselves and want a stream's depth. */
FS_API int fs_stream_default_prefetch(const fs_client_t *c, const fs_stream_opts_t *opts);

/* ---- epoch plans (since 1.5) ----------------------------------------------------- */

/* The plan a stream follows (docs/api.md §11, "Plans"), without a stream:
 * for callers that make each batch with an explicit call (featstore.pyg's
 * loaders on explicit seed edges), so that their epochs are dealt, ordered
 * and seeded exactly as a stream over the same seed list would be:
 *
 *   fs_stream_plan_opts_t po = FS_STREAM_PLAN_OPTS_INIT;
 *   po.num_seeds = n, po.batch_size = 512, po.seed = 42, po.epoch = epoch;
 *   po.rank = rank, po.world_size = world;
 *   fs_stream_plan_t *p;
 *   if (fs_stream_plan_open(&po, &p) != FS_OK) { ... fs_stream_plan_errstr(p) ... }
 *   for (int64_t b = 0; b < fs_stream_plan_num_batches(p); b++) {
 *       int64_t k = fs_stream_plan_batch(p, b, pos);   // pos: batch_size entries
 *       // seeds[pos[0..k)], sampled with request seed fs_stream_plan_batch_seed(p, b)
 *   }
 *   fs_stream_plan_free(p);
 *
 * Ownership and threads: a plan is immutable once open (any thread may
 * read it) and holds O(1) memory whatever num_seeds. */
typedef struct fs_stream_plan fs_stream_plan_t;

/* What a plan is made of: fs_stream_opts_t's fields of the same names. */
typedef struct {
    size_t struct_size;          /* sizeof(fs_stream_plan_opts_t): FS_STREAM_PLAN_OPTS_INIT sets it */
    int64_t num_seeds;           /* the seed list's length: positions 0..num_seeds-1 */
    int64_t batch_size;          /* >= 1 */
    int drop_last;
    fs_stream_order_t order;
    int64_t chunk;               /* FS_ORDER_CHUNKED: seeds per run */
    uint64_t seed;               /* the shuffle seed */
    int64_t epoch;               /* >= 0 */
    int rank, world_size;        /* 0 <= rank < world_size; 0, 0 = a single trainer */
} fs_stream_plan_opts_t;

#define FS_STREAM_PLAN_OPTS_INIT FS_STRUCT_INIT(fs_stream_plan_opts_t)

/* Plans one rank's epoch. On failure (options named as fs_stream_open
 * names them) *out is still set, unless out of memory, so that
 * fs_stream_plan_errstr can say why: always fs_stream_plan_free it. */
FS_API fs_status_t fs_stream_plan_open(const fs_stream_plan_opts_t *opts, fs_stream_plan_t **out);

/* This rank's number of batches (fs_stream_num_batches of the stream). */
FS_API int64_t fs_stream_plan_num_batches(const fs_stream_plan_t *p);

/* Writes batch b's positions into the seed list to positions (room for
 * batch_size) and returns how many: batch_size, fewer for a short last
 * batch, 0 when b is outside 0..num_batches-1. */
FS_API int64_t fs_stream_plan_batch(const fs_stream_plan_t *p, int64_t b, int64_t *positions);

/* Batch b's request seed (fs_stream_batch_t.request_seed). */
FS_API uint64_t fs_stream_plan_batch_seed(const fs_stream_plan_t *p, int64_t b);

/* Why fs_stream_plan_open failed ("" if it did not; "out of memory" for NULL). */
FS_API const char *fs_stream_plan_errstr(const fs_stream_plan_t *p);

/* NULL is a no-op. */
FS_API void fs_stream_plan_free(fs_stream_plan_t *p);

/* ---- splits -------------------------------------------------------------------- */

typedef struct {
    int64_t n;
    const int64_t *ids;          /* [n] node ids */
} fs_ids_t;

/* The node ids of a named split ("train", "valid", "test"; fs_info lists
 * them; on a heterogeneous graph "TYPE/NAME", and a link split's arrays
 * "link/NAME/src" and so on: fs_link_split_info_t). Over unix:// the ids are the dataset's file, mapped read-only.
 * FS_ERR_NOT_FOUND for an unknown name. Free with fs_ids_free. */
FS_API fs_status_t fs_split(fs_client_t *c, const char *name, fs_ids_t **out);
/* Since 1.5. A node split's share on this machine, over a sharded cluster
 * (etcd:// or file:): its ids ("NAME" or "TYPE/NAME") that the shards this
 * process answers itself hold (those on its machine: docs/api.md section
 * 13), in the split's order. A trainer per machine that trains on it starts
 * its batches where its rows are (DistDGL's node_split); give it to a
 * stream as its seeds. FS_ERR_NOT_FOUND when no shard is on this machine
 * or for an unknown split; FS_ERR_UNSUPPORTED on other connections and for
 * a link split's arrays. Free with fs_ids_free. */
FS_API fs_status_t fs_split_local(fs_client_t *c, const char *name, fs_ids_t **out);
FS_API void fs_ids_free(fs_ids_t *ids);

/* ---- owner-routed batches and micrographs (HopGNN; since 1.5) ------------------ */

/* A global batch's roots grouped by the shard that owns them
 * (fs_split_by_owner): HopGNN's owner-routed training runs each group on
 * its owner's machine, where most of its micrographs' rows are. */
typedef struct {
    int num_groups;              /* the shard map's shards, by ascending id; a group may be empty */
    const int *owner;            /* [num_groups] each group's shard id */
    const int64_t *offsets;      /* [num_groups + 1]: group g is seeds[offsets[g] .. offsets[g + 1]) */
    const int64_t *seeds;        /* [n] the input's ids, grouped, each group in the input's order */
    const int64_t *positions;    /* [n] each one's position in the input: its tag (a label, a trainer) */
    int64_t map_revision;        /* the shard map the grouping follows */
} fs_owner_groups_t;

/* Groups seeds[0..n) (node ids of type node_type; NULL on a graph of one
 * node type) by owning shard, over a sharded cluster (etcd:// or file:),
 * by the shard map as it is now: etcd's, which the process watches (read
 * anew while the watch is down), or the file's, read anew.
 * A seed whose part no shard holds (its shard is down) is
 * FS_ERR_UNAVAILABLE naming it; an id out of range is
 * FS_ERR_INVALID_ARGUMENT; other connections FS_ERR_UNSUPPORTED. Free
 * with fs_owner_groups_free. */
FS_API fs_status_t fs_split_by_owner(fs_client_t *c, const char *node_type, const int64_t *seeds, int64_t n,
                                     fs_owner_groups_t **out);
FS_API void fs_owner_groups_free(fs_owner_groups_t *g);

/* A sampled batch's micrographs: root r's micrograph is every node that
 * r's output depends on through the blocks (blocks[0]'s edges from r, then
 * blocks[1]'s from those, ...). A model run on one root's micrograph gives
 * that root the output it has in the whole batch, so per-root (or
 * per-owner) losses' gradients sum to the batch's. Node-major: node v's
 * roots (seed positions, ascending) are roots[root_offsets[v] ..
 * root_offsets[v + 1]). Over a sharded cluster each node's owning shard
 * and R_micro, the share of (node, root) pairs, the root itself left out,
 * whose node lives on the root's shard; elsewhere owner is NULL and
 * r_micro NaN. */
typedef struct {
    int64_t num_nodes, num_roots;   /* the batch's nodes and seeds */
    const int64_t *root_offsets;    /* [num_nodes + 1] */
    const int64_t *roots;           /* [root_offsets[num_nodes]] */
    const int *owner;               /* [num_nodes] each node's shard id, or NULL */
    int64_t pairs, pairs_colocated; /* (node, root) pairs but the roots', and those on the root's shard */
    double r_micro;                 /* pairs_colocated / pairs (NaN without owners or pairs) */
} fs_micrographs_t;

/* Root sets are at most FS_MICROGRAPH_PAIRS_MAX pairs (FS_ERR_RESOURCE past
 * it: sample fewer seeds per batch). */
#define FS_MICROGRAPH_PAIRS_MAX ((int64_t)1 << 28)

/* The micrographs of batch b (a sample of connection c: fs_sample or
 * fs_sample_gather, or a node stream's batch). FS_ERR_INVALID_ARGUMENT for
 * a batch without a sample or with ids outside it; the owners' errors as
 * fs_split_by_owner's. Free with fs_micrographs_free. */
FS_API fs_status_t fs_batch_micrographs(fs_client_t *c, const fs_batch_t *b, fs_micrographs_t **out);
FS_API void fs_micrographs_free(fs_micrographs_t *m);

/* What a pre-gather read (fs_pregather): the union's rows, the rows that
 * fetching each micrograph on its own would have read, and the union's
 * rows held by a shard other than the roots' (remote: with the
 * micrographs' owners; 0 without), with the number of those shards (one
 * request each). */
typedef struct {
    int64_t rows;               /* rows gathered: the micrographs' union, each node once */
    int64_t rows_requested;     /* the micrographs' sizes summed */
    int64_t rows_saved;         /* rows_requested - rows: what deduplication saved */
    int64_t rows_remote;        /* rows on a shard none of the roots is on */
    int64_t remote_shards;      /* the shards holding them */
} fs_pregather_stats_t;

/* HopGNN's pre-gathering: the rows of table (as fs_gather: dtype
 * FS_DTYPE_INVALID as stored) of every node of the micrographs of roots
 * roots[0..n) (positions among b's seeds), each node once, in one gather:
 * over a sharded cluster one request per owning shard, all at once. *out
 * is a gather batch whose row i is the i-th node of the union in local-id
 * order (the nodes v with a root among `roots`); *stats (may be NULL)
 * what it read. max_rows bounds the union (the iteration's staging
 * buffer): more is FS_ERR_RESOURCE naming both counts, before anything is
 * gathered. A root outside b's seeds is FS_ERR_INVALID_ARGUMENT. */
FS_API fs_status_t fs_pregather(fs_client_t *c, const fs_batch_t *b, const fs_micrographs_t *m, const int64_t *roots,
                                int64_t n, const char *table, fs_dtype_t dtype, int64_t max_rows, fs_batch_t **out,
                                fs_pregather_stats_t *stats);

/* ---- operations ---------------------------------------------------------------- */

/* The server's metrics in Prometheus text format (as GET /metrics). Free the
 * string with fs_stats_free. */
FS_API fs_status_t fs_stats(fs_client_t *c, char **text);
FS_API void fs_stats_free(char *text);

#ifdef __cplusplus
}
#endif

#endif
