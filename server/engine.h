/* engine.h — executes requests against the store for any transport: checks
 * per-request limits (all of them from the request alone, before any work
 * or allocation: fs_limits.h), runs the kernels through the CPU reader's
 * view, counts what was read. The gRPC transport calls it on the server; local clients run
 * the same kernels in their own process on the shared mappings, with the
 * same limits (sent to them at connect time).
 *
 * The store can be replaced while requests run (a re-plan): every call
 * holds a reference to the store it started with, so an old store lives
 * until its last request ends. Placements differ only in where rows are
 * read from, never in what is read, so results do not change.
 *
 * Thread-safety: an engine is shared by all workers; each worker passes its
 * own fs_sampler_t. */
#ifndef FS_ENGINE_H
#define FS_ENGINE_H

#include "fs_hetero.h"
#include "fs_limits.h"
#include "fs_sample.h"
#include "store.h"

typedef struct fs_engine fs_engine_t;

fs_status_t fs_engine_create(const fs_dataset_t *ds, fs_store_t *store, const fs_limits_t *limits, fs_engine_t **out,
                             fs_error_t *err);
void fs_engine_destroy(fs_engine_t *e);

const fs_limits_t *fs_engine_limits(const fs_engine_t *e);
const fs_dataset_t *fs_engine_dataset(const fs_engine_t *e);

/* The dataset's typed graph (every dataset: a version-1 one is node type
 * "node" and edge type ("node", "to", "node")), built once at
 * fs_engine_create and read-only after: typed calls run fs_hetero_run on
 * it with fs_engine_limits, each worker with its own fs_typed_sampler_t. It
 * reads the dataset's tables directly (not through the store), which
 * re-plans never change. */
const fs_hetero_graph_t *fs_engine_hetero(const fs_engine_t *e);
/* Adds what a call read outside fs_engine_sample and fs_engine_gather (a
 * typed batch: fs_hetero_run's reads) to the current store's counters, as
 * the CPU reader, where /metrics finds the server's reads. */
void fs_engine_count(fs_engine_t *e, const fs_hetero_reads_t *reads);

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

/* Samples as the CPU reader (gRPC callers). Its limits, the worst-case
 * response included, are checked before sampling; a caller that also
 * gathers the result's rows (SampleGather) first checks
 * fs_limits_check(fs_engine_limits(e), n, req, row_bytes), so the rows
 * count in that worst case. A request with locality > 1
 * is FS_ERR_UNSUPPORTED: the CPU reads no row from GPU memory, so there is
 * nothing to prefer — locality-aware sampling is for local trainers with a
 * reader GPU, which sample in their own process. */
fs_status_t fs_engine_sample(fs_engine_t *e, fs_sampler_t *s, const int64_t *seeds, int64_t n,
                             const fs_sample_req_t *req, fs_sample_result_t *res, fs_error_t *err);

/* The named split's ids (also "TYPE/NAME" and "link/NAME/ARRAY":
 * fs_dataset_split); FS_ERR_NOT_FOUND naming it, and what exists, when
 * there is none. */
fs_status_t fs_engine_split(const fs_engine_t *e, const char *name, const fs_idset_t **out, fs_error_t *err);

/* Looks up a table and the served row size; out_dtype INVALID = as stored.
 * On a typed dataset this, fs_engine_sample and fs_engine_gather are
 * FS_ERR_UNSUPPORTED (the homogeneous calls read one graph): typed
 * requests name their types (HeteroSample). */
fs_status_t fs_engine_table(const fs_engine_t *e, const char *table, fs_dtype_t *out_dtype, size_t *out_row_bytes,
                            int64_t *dim, fs_error_t *err);

/* Gathers into out (n * out_row_bytes), after fs_engine_table. */
fs_status_t fs_engine_gather(fs_engine_t *e, const char *table, const int64_t *ids, int64_t n, fs_dtype_t out_dtype,
                             void *out, fs_error_t *err);

#endif
