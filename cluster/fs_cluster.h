/* fs_cluster.h — a trainer's view of a sharded cluster: what it reads once
 * to see the shards as one store (docs/design.md, "Owner-routed sampling").
 *
 * Opening a cluster reads its shard map from etcd (fs_member.h's
 * fs_cluster_read_map) and, from one of its shards (ShardFile), the
 * partitioning's book (partition.json: every node type's ranges, tables
 * and splits, every edge type) and each node type's node map (source id ->
 * global id), whose inverse is kept too: trainers name nodes by their own
 * (source) ids, the shards by global ids. It is immutable once open and
 * shared by every connection of a process to that cluster (refcounted): a
 * stream's producers connect anew, and the node maps are 16 bytes a node.
 *
 * The cache (fs_cluster_cache.c): the book lists each type's hottest
 * nodes (those the most neighbour lists hold, `featstore partition`'s hot
 * list). At the first connection the rows of every table of as many of
 * them as FEATSTORE_CACHE_MB (default FS_CACHE_DEFAULT_MB,
 * 0: none) holds are read from their shards, other machines' shards' rows
 * first (HopGNN's cache of other servers' hot rows), then this machine's
 * with what the budget leaves (a compact copy reads faster than the part
 * files); a map that moves a shard onto or off this machine invalidates
 * it, and it is filled anew. Gathers take those rows from it instead of a
 * shard:
 * on a power-law graph a small share of the nodes is most of what batches
 * read (XGNN and Quiver's degree-ordered cache, docs/papers.md). The rows
 * are the shards' own, so batches stay bit for bit one server's.
 *
 * Degree-weighted negatives read each edge type's degree arrays (the
 * root's, written by `featstore partition`) from a shard at their first
 * use, once per process.
 *
 * A connection's own part is fs_cluster_conn_t: a gRPC connection per
 * shard and the router over them (fs_route.h), one call at a time, and the
 * hooks the views call it through.
 *
 * The view is immutable once open but for its shard map, which its watch
 * on etcd replaces under map_lock as etcd's changes (fs_cluster_watch.h),
 * and fs_cluster_remap when a shard says it is stale;
 * a connection copies what it needs of the map when it opens.
 *
 * Every remote call has the given deadline; a shard map naming no shard,
 * a part no shard holds, or a book that contradicts the map (another
 * partitioning, another number of parts) is an error naming it. */
#ifndef FS_CLUSTER_H
#define FS_CLUSTER_H

#include <pthread.h>

#include "fs_gather.h"
#include "fs_route.h"
#include "fs_shardmap.h"

#define FS_CLUSTER_DEFAULT_TIMEOUT_MS 10000
/* The rows of the hottest nodes a process keeps (its cache, shared by its
 * connections to one cluster; a grpc:// connection's, client-lib/
 * client_grpc_hot.c): FEATSTORE_CACHE_MB, else this. */
#define FS_CACHE_DEFAULT_MB 256

/* FEATSTORE_CACHE_MB in bytes, or why it cannot be used: not a whole number
 * of MiB, or more than this machine's memory (the cache would be paged out,
 * or the process killed, before it helped). */
fs_status_t fs_cache_budget(size_t *bytes, fs_error_t *err);
/* The book's largest size a trainer accepts (a partitioning of 4,096 parts
 * and many types stays far below). */
#define FS_CLUSTER_BOOK_MAX (64 << 20)

typedef struct {
    char name[64];
    fs_dtype_t dtype;
    int64_t dim;
    size_t row_bytes;
    fs_codec_t codec;            /* a compressed table's (kernels/fs_codec.h); dtype and dim as stored */
} fs_cluster_table_t;

typedef struct {
    char name[64];               /* the split's name, and the root file with its ids in the source's order */
    char file[256];
} fs_cluster_split_t;

typedef struct {
    char name[64];
    int64_t count;
    int64_t *first;              /* [parts + 1]: part p owns global ids [first[p], first[p + 1]) */
    int64_t *global_of;          /* [count] source id -> global id (the node map) */
    int64_t *source_of;          /* [count] global id -> source id */
    int num_tables;
    fs_cluster_table_t *tables;  /* features, then "labels" when labelled */
    char hot[160];               /* the hot list's file, or "" */
    int64_t num_classes;
    int timed;
    int num_splits;
    fs_cluster_split_t *splits;
} fs_cluster_type_t;

typedef struct {
    char src[64], rel[64], dst[64];
    int src_type, dst_type;
    int64_t num_edges;
    int weighted, timed;
    int reverse;                 /* the edge type holding each edge reversed, or -1 */
    /* The root's degree arrays (global ids' order): [0] the sources'
     * out-degrees, [1] the destinations' in-degrees; "" when the book
     * names none (a root partitioned before they were written). Read at
     * the first degree-weighted negatives (fs_cluster_degrees), under
     * degree_lock. */
    char degree_file[2][160];
    int64_t *degree[2];
} fs_cluster_etype_t;

/* A link split (source ids, the source's order): its arrays' files,
 * "" where it has none (src, dst, label, time, neg_dst). */
#define FS_CLUSTER_LINK_ARRAYS 5
typedef struct {
    char name[64];
    int etype;
    int64_t count, num_neg;
    char file[FS_CLUSTER_LINK_ARRAYS][160];
} fs_cluster_link_t;

/* What this process's batches read from where, since it opened the
 * cluster (every connection's, bumped atomically): destinations asked for
 * picks and rows gathered, of shards answered in this process (local, the
 * unix:// path), of shards over gRPC (remote), and rows the cache held;
 * the calls sent over gRPC; the calls that made a batch. */
typedef struct {
    uint64_t pick_ids_local, pick_ids_remote;
    uint64_t rows_local, rows_remote, rows_cached;
    uint64_t calls_remote;        /* ShardPicks and ShardRows sent */
    uint64_t calls;               /* calls that made a batch (samples, gathers, typed and link batches) */
    int shards_local;             /* shards the newest connection answers itself */
    /* HopGNN's (client-lib/client_hopgnn.c): micrographs' (node, root)
     * pairs, and those on the root's shard (R_micro); pre-gathers' rows
     * requested (the micrographs one by one) and gathered (each once) */
    uint64_t micro_pairs, micro_pairs_colocated;
    uint64_t pregather_requested, pregather_rows;
    uint64_t cache_fills;         /* caches filled: the first, and one per map that moved a shard on or off this machine */
    uint64_t map_updates;         /* maps its watch on etcd installed (fs_cluster_watch.h) */
    uint64_t shard_failures;      /* calls to a shard that failed unreachable or late (asked of another holder) */
    int map_watched;              /* that watch is open: the map held is etcd's */
} fs_cluster_counts_t;

typedef struct fs_cluster {
    char endpoint[FS_ADDR_HOST_MAX + 10], name[64]; /* etcd's host:port (fs_addr_t.target), the cluster's name */
    char map_file[FS_ADDR_FILE_MAX]; /* or a static cluster's map file ("" on etcd) */
    int timeout_ms;
    fs_shard_map_t map;             /* the one part that changes (fs_cluster_remap): read under map_lock */
    pthread_mutex_t map_lock;
    char dataset[128], partitioning[32];
    int parts;
    int num_types, num_etypes;
    fs_cluster_type_t *types;
    fs_cluster_etype_t *etypes;
    int num_links;
    fs_cluster_link_t *links;
    fs_cluster_counts_t counts;
    pthread_mutex_t degree_lock;    /* the edge types' degree arrays, read once when first needed */
    const struct fs_cluster_local *local; /* the shards this process answers in place (for the cache), or NULL */
    struct fs_cluster_cache *cache; /* the current cache (fs_cluster_cache_for), under cache_lock */
    pthread_mutex_t cache_lock;
    struct fs_cluster_watch *watch; /* the map's watch on etcd (fs_cluster_watch.h), NULL for a file's map */
} fs_cluster_t;

/* Reads the map (from etcd, or a static cluster's file: where's
 * map_file) and the book and node maps from the shards, and fills the
 * cache, putting the rows of the shards `local` answers in process
 * (NULL: none) last; timeout_ms <= 0: FS_CLUSTER_DEFAULT_TIMEOUT_MS.
 * The result has one reference. */
struct fs_cluster_local;
fs_status_t fs_cluster_open(const fs_addr_t *where, int timeout_ms, const struct fs_cluster_local *local,
                            fs_cluster_t **out, fs_error_t *err);

/* A static cluster's map, from its file (revision 0): FS_ERR_NOT_FOUND or
 * FS_ERR_IO naming the file, FS_ERR_FORMAT as fs_shard_map_parse. */
fs_status_t fs_cluster_read_map_file(const char *path, fs_shard_map_t *out, fs_error_t *err);
/* The map of the cluster at `where`: etcd's key, or the file. */
fs_status_t fs_cluster_read_map_at(const fs_addr_t *where, int timeout_ms, fs_shard_map_t *out, fs_error_t *err);

/* The cluster's metrics in one text (fs_cluster_stats.c): a trainer's own
 * counters first when `trainer` is given (featstore_trainer_X,
 * docs/metrics.md), whether each shard answered its Stats, the shards'
 * counters summed (featstore_shard_X as featstore_cluster_X), then every
 * shard's series with a shard="N" label. A new string (the caller's to
 * free()). */
fs_status_t fs_cluster_stats(const fs_shard_map_t *m, const fs_cluster_counts_t *trainer, int timeout_ms, char **text,
                             fs_error_t *err);
fs_cluster_t *fs_cluster_ref(fs_cluster_t *c);
void fs_cluster_unref(fs_cluster_t *c);

/* The map read again, after a shard refused a call routed by revision
 * `seen` as stale: kept when etcd's is newer than `seen` (another
 * connection may have read it already). FS_ERR_FORMAT when the cluster now
 * serves another partitioning (reconnect), or when the map's revision went
 * backwards; a part without a shard is FS_ERR_UNAVAILABLE naming it. */
fs_status_t fs_cluster_remap(fs_cluster_t *c, int64_t seen, fs_error_t *err);
/* What remap does with the map it read, for a map from elsewhere (the
 * watch, fs_cluster_watch.c): *m is taken (emptied), kept when newer. */
fs_status_t fs_cluster_install(fs_cluster_t *c, fs_shard_map_t *m, int64_t seen, fs_error_t *err);

/* A split of node type t as the source orders it (source ids), fetched
 * from a shard: *ids is the caller's to free(). FS_ERR_NOT_FOUND naming
 * the split when the type has none of that name. */
fs_status_t fs_cluster_split(const fs_cluster_t *c, int t, const char *name, int64_t **ids, int64_t *n,
                             fs_error_t *err);

/* Array `array` ("src", "dst", "label", "time", "neg_dst") of link split
 * `name`, as fs_cluster_split (source ids); FS_ERR_NOT_FOUND naming what
 * is missing. */
fs_status_t fs_cluster_link_array(const fs_cluster_t *c, const char *name, const char *array, int64_t **ids,
                                  int64_t *n, fs_error_t *err);

/* Edge type e's degrees by global id, side 1 the destinations' in-degrees
 * and side 0 the sources' out-degrees (fs_typed_remote_t.degrees): read
 * from a shard at the first call (the root's degree arrays) and kept, so
 * *deg lives as long as the view. Checked: one value per node of the
 * side's type, none negative, summing to the edge type's edges
 * (FS_ERR_FORMAT naming the file); a root without them is FS_ERR_NOT_FOUND
 * (partition it again). */
fs_status_t fs_cluster_degrees(fs_cluster_t *c, int e, int side, const int64_t **deg, fs_error_t *err);

/* A degree array's bytes (an int64 [count] .npy summing to num_edges)
 * checked, its values pointing into data: what fs_cluster_degrees reads,
 * for the fuzz harness too. */
fs_status_t fs_cluster_degree_parse(const char *name, const char *data, int64_t len, int64_t count, int64_t num_edges,
                                    const int64_t **vals, fs_error_t *err);

/* Source ids to global ids of type t (in may equal out); an id outside
 * [0, count) is FS_ERR_INVALID_ARGUMENT naming it and its position. */
fs_status_t fs_cluster_to_global(const fs_cluster_t *c, int t, const int64_t *in, int64_t n, int64_t *out,
                                 fs_error_t *err);
/* Global ids to source ids, in place (every id valid: the engine's). */
void fs_cluster_to_source(const fs_cluster_t *c, int t, int64_t *ids, int64_t n);

/* The parsers of what a shard sends at open, for the fuzz harness
 * (tests/fuzz/fuzz_book.c): a book's text against a map (a new cluster
 * without node maps or cache; fs_cluster_unref frees it), and an int64 [n]
 * .npy file's values (pointing into data). */
fs_status_t fs_cluster_book_parse(const char *text, size_t len, const fs_shard_map_t *map, fs_cluster_t **out,
                                  fs_error_t *err);
fs_status_t fs_cluster_npy_i64(const char *name, const char *data, int64_t len, const int64_t **vals, int64_t *n,
                               fs_error_t *err);

/* One connection's shards and router. */
typedef struct fs_cluster_conn fs_cluster_conn_t;

/* Shards this process answers itself instead of over gRPC: a trainer on a
 * shard's machine runs the shard's engine on the shard's own files
 * (client-lib/client_cluster_local.c, the unix:// path). */
typedef struct fs_cluster_local {
    /* Shard a (holding parts[0..n) by the connection's map): its answers
     * in this process for one connection (*conn), or *conn NULL to ask it
     * over gRPC. An error fails the connection. */
    fs_status_t (*open)(void *ctx, const fs_cluster_t *c, const fs_shard_addr_t *a, const int *parts, int n,
                        void **conn, fs_error_t *err);
    void (*close)(void *conn);
    /* As fs_route_transport_t's, for that shard. */
    fs_status_t (*picks)(void *conn, const fs_typed_picks_req_t *q, const int64_t *ids, int64_t n,
                         fs_typed_picks_t *out, fs_error_t *err);
    fs_status_t (*rows)(void *conn, int t, const char *table, const int64_t *ids, int64_t n, size_t row_bytes,
                        void *out, fs_error_t *err);
    fs_status_t (*edges)(void *conn, int etype, const int64_t *dst, const int64_t *src, int64_t n, uint8_t *is_edge,
                         fs_error_t *err);
    /* Whether open would answer shard a in process (its machine is this
     * one): the cache takes such shards' rows last. */
    int (*mine)(void *ctx, const fs_shard_addr_t *a);
    void *ctx;
} fs_cluster_local_t;

/* local: NULL, or the shards answered in process (copied). */
fs_status_t fs_cluster_conn_open(fs_cluster_t *c, const fs_cluster_local_t *local, fs_cluster_conn_t **out,
                                 fs_error_t *err);
/* Opens a connection that fills a cache: no cache of its own, its reads
 * not counted (fs_cluster_cache.c). */
fs_status_t fs_cluster_conn_open_filler(fs_cluster_t *c, fs_cluster_conn_t **out, fs_error_t *err);

/* The hot-row cache (fs_cluster_cache.c): the cluster's current one for a
 * connection's map m, a reference the caller drops with
 * fs_cluster_cache_unref (NULL: FEATSTORE_CACHE_MB=0). Filled
 * anew when m leaves out other parts than the current one (a shard moved
 * onto or off this machine), else kept at m's revision. */
typedef struct fs_cluster_cache fs_cluster_cache_t;
fs_status_t fs_cluster_cache_for(fs_cluster_t *c, const fs_shard_map_t *m, fs_cluster_cache_t **out, fs_error_t *err);
fs_cluster_cache_t *fs_cluster_cache_ref(fs_cluster_cache_t *x);
void fs_cluster_cache_unref(fs_cluster_cache_t *x);
/* The revision of the map the current cache serves (-1: none yet). */
int64_t fs_cluster_cache_revision(fs_cluster_t *c);
/* Table `table` of type t's rows of ids[0..n) that x holds, into out;
 * the others into miss / miss_at (their ids and places). Returns how many
 * it lacks. */
int64_t fs_cluster_cache_rows(const fs_cluster_cache_t *x, int t, int table, const int64_t *ids, int64_t n, void *out,
                              size_t row_bytes, int64_t *miss, int64_t *miss_at);

/* The whole of file `name` of the partitioning root, at most max bytes,
 * from the first shard of the map that answers (ShardFile); *data the
 * caller's to free(). */
fs_status_t fs_cluster_file(const fs_cluster_t *c, const char *name, int64_t max, char **data, int64_t *len,
                            fs_error_t *err);

/* The process's counters so far (a consistent-enough copy: each is read
 * atomically). */
void fs_cluster_counts(const fs_cluster_t *c, fs_cluster_counts_t *out);
/* Adds a batch's micrograph pairs and a pre-gather's rows to them. */
void fs_cluster_count_hopgnn(fs_cluster_t *c, int64_t pairs, int64_t colocated, int64_t requested, int64_t rows);
void fs_cluster_conn_close(fs_cluster_conn_t *k);
fs_router_t *fs_cluster_conn_router(fs_cluster_conn_t *k);
int64_t fs_cluster_conn_revision(const fs_cluster_conn_t *k); /* the map revision it routes by */
/* Whether global id x of node type t lies in a part of a shard this
 * connection answers in process (fs_cluster_local_t). */
int fs_cluster_conn_is_local(const fs_cluster_conn_t *k, int t, int64_t x);
/* How many shards it answers in process. */
int fs_cluster_conn_num_local(const fs_cluster_conn_t *k);

/* The remote hooks of a connection's views: the edge types' picks, edge
 * tests and degrees (fs_typed_remote_t, for fs_csr_view_t.remote or
 * fs_typed_etype_t.remote), the node types' timestamps
 * (fs_typed_remote_times_t, for fs_typed_view_t.remote_time: the
 * FS_CLUSTER_NODE_TIME_TABLE rows of the book's timed types) and table i
 * of node type t (fs_table_remote_t, for fs_table_view_t.remote), valid
 * while the connection is. */
const fs_typed_remote_t *fs_cluster_conn_remote(fs_cluster_conn_t *k);
const fs_typed_remote_times_t *fs_cluster_conn_times(fs_cluster_conn_t *k);
const fs_table_remote_t *fs_cluster_conn_table(fs_cluster_conn_t *k, int t, int i);

#endif
