/* engine.h — the server as a host of the request executor (exec/fs_exec.h):
 * requests against the store for any transport run through the one
 * pipeline — limits (all of them from the request alone, before any work
 * or allocation: fs_limits.h), sample, the result check, gather — on the
 * CPU reader's views of the store, and what they read is counted in the
 * store, where /metrics finds the server's reads. The gRPC transport and
 * the server's epoch streams call it; local clients host the same executor
 * in their own process on the shared mappings, with the same limits (sent
 * to them at connect time).
 *
 * The store can be replaced while requests run (a re-plan): every call
 * holds a reference to the store it started with, so an old store lives
 * until its last request ends. Placements differ only in where rows are
 * read from, never in what is read, so results do not change.
 *
 * Thread-safety: an engine is shared by all workers; each worker passes its
 * own samplers. */
#ifndef FS_ENGINE_H
#define FS_ENGINE_H

#include "fs_exec.h"
#include "fs_limits.h"
#include "fs_sample.h"
#include "store.h"

typedef struct fs_engine fs_engine_t;

fs_status_t fs_engine_create(const fs_dataset_t *ds, fs_store_t *store, const fs_limits_t *limits, fs_engine_t **out,
                             fs_error_t *err);
void fs_engine_destroy(fs_engine_t *e);

const fs_limits_t *fs_engine_limits(const fs_engine_t *e);
const fs_dataset_t *fs_engine_dataset(const fs_engine_t *e);
/* The tables served from disk (server/disk_tables.h) that local trainers
 * share: set once before serving (borrowed; NULL: none). */
struct fs_disk_tables;
void fs_engine_set_disk_tables(fs_engine_t *e, const struct fs_disk_tables *disk);
const struct fs_disk_tables *fs_engine_disk_tables(const fs_engine_t *e);

/* One typed batch (fs_exec_typed) on the dataset's typed graph (every
 * dataset: a version-1 one is node type "node" and edge type ("node",
 * "to", "node"), built once at fs_engine_create), with the worker's typed
 * sampler, its gathers split over `pool` (may be NULL): the image goes to
 * `into`, *len bytes. What it read is counted in the current store as the
 * CPU reader's. The graph reads the dataset's tables directly (not through
 * the store), which re-plans never change. `cached` (may be NULL): the
 * caller's trainer holds the rows of the hot list's first cached->rows
 * nodes (fs_engine_hot; 0: none) of node table cached->table (the
 * request's index): that array gets only the other nodes' rows, packed at
 * its start, and [hole_at, hole_end) are the image's bytes after them,
 * for the trainer to fill (equal: none). */
typedef struct {
    int64_t rows;
    int table;
    size_t hole_at, hole_end;      /* out */
} fs_engine_cached_t;

fs_status_t fs_engine_typed(fs_engine_t *e, fs_typed_sampler_t *s, fs_pool_t *pool, const fs_hetero_seeds_t *groups,
                            size_t num_groups, const fs_link_req_t *link, const fs_hetero_req_t *req, int joined,
                            fs_engine_cached_t *cached, fs_exec_region_t *into, size_t *len, fs_error_t *err);

/* The current store, retained for the caller (release with
 * fs_store_destroy), and its placement generation (1 = the first; may be
 * NULL). */
fs_store_t *fs_engine_acquire(fs_engine_t *e, uint64_t *generation);
/* Makes `store` (frozen; the engine takes over the caller's reference) the
 * current one and returns its generation. The previous store is released:
 * freed once requests still using it end. */
uint64_t fs_engine_replace_store(fs_engine_t *e, fs_store_t *store);

/* Dataset and placement facts: a new fs_info_t (featstore/types.h) with the
 * dataset, its tables and splits, its node types, edge types and link
 * splits (a version-1 dataset: node type "node", edge type ("node", "to",
 * "node")) and the served store's tiers; the caller
 * frees it (fs_info_free). Placement readers come from the metrics
 * (fs_metrics_info). */
fs_status_t fs_engine_info(fs_engine_t *e, fs_info_t **out, fs_error_t *err);

/* Samples as the CPU reader (gRPC callers, epoch streams): the executor's
 * limits, sample and result check (fs_exec_check, fs_exec_sample). A
 * caller that then gathers the result's rows (SampleGather) names the
 * table (else NULL) and its served dtype (fs_engine_table), so the rows
 * count in the worst case and in the result. A request with locality > 1
 * is FS_ERR_UNSUPPORTED: the CPU reads no row from GPU memory, so there is
 * nothing to prefer — locality-aware sampling is for local trainers with a
 * reader GPU, which sample in their own process. */
fs_status_t fs_engine_sample(fs_engine_t *e, fs_sampler_t *s, const int64_t *seeds, int64_t n,
                             const fs_sample_req_t *req, const char *table, fs_dtype_t dtype, fs_sample_result_t *res,
                             fs_error_t *err);

/* The named split's ids (also "TYPE/NAME" and "link/NAME/ARRAY":
 * fs_dataset_split); FS_ERR_NOT_FOUND naming it, and what exists, when
 * there is none. */
fs_status_t fs_engine_split(const fs_engine_t *e, const char *name, const fs_idset_t **out, fs_error_t *err);

/* The hot list (the gRPC SplitRequest.hot, a remote trainer's cache): the
 * nodes the most neighbour lists hold, hottest first, ties by id, the first
 * FS_HOT_LIST_LEN of them, and each node's place in it (rank[v], INT32_MAX
 * for a node not in it). Made at the first call (one pass over the edges
 * and a sort, 20 bytes a node while made, 4 bytes a node kept) and kept,
 * so the arrays live as long as the engine (order and len may be NULL).
 * FS_ERR_UNSUPPORTED on a typed dataset. */
fs_status_t fs_engine_hot(fs_engine_t *e, const int64_t **order, int64_t *len, const int32_t **rank,
                          fs_error_t *err);

/* Looks up a table and resolves *out_dtype (a request: fs_codec_served) to
 * the dtype served, with the served row size and dim.
 * On a typed dataset this, fs_engine_sample and fs_engine_gather are
 * FS_ERR_UNSUPPORTED (the homogeneous calls read one graph): typed
 * requests name their types (HeteroSample). */
fs_status_t fs_engine_table(const fs_engine_t *e, const char *table, fs_dtype_t *out_dtype, size_t *out_row_bytes,
                            int64_t *dim, fs_error_t *err);

/* A gather sent in pieces (gRPC's chunks, each an fs_engine_gather),
 * checked whole before the first: its limits, and every id in range. */
fs_status_t fs_engine_gather_check(fs_engine_t *e, const char *table, const int64_t *ids, int64_t n, fs_dtype_t dtype,
                                   fs_error_t *err);

/* Gathers into out (n * out_row_bytes), after fs_engine_table: the
 * executor's limits and gather (fs_exec_check, fs_exec_gather). */
fs_status_t fs_engine_gather(fs_engine_t *e, const char *table, const int64_t *ids, int64_t n, fs_dtype_t out_dtype,
                             void *out, fs_error_t *err);

#endif
