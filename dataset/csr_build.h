/* csr_build.h — turns a stream of edges into the dataset's CSR topology with
 * memory bounded by O(N), not O(E).
 *
 * Pass 1 (fs_csr_builder_add): edges are checked, optionally reversed and
 * remapped to compact ids, counted per row, and spilled to a scratch file.
 * With ids kept as given and N unknown, nothing is allocated per id in pass
 * 1: the ids are only measured (id_census.h), so the caller can refuse
 * sparse ids first, and the rows are counted at finish from the spill.
 * Pass 2 (fs_csr_builder_finish): the spill is streamed back and scattered
 * into the writer's mapped indices array; rows are then sorted (so output is
 * deterministic whatever the scatter order) and optionally deduplicated
 * (parallel edges merged, weights summed).
 *
 * Row v lists the edges (v, u) as given (src -> dst); --reverse stores
 * dst -> src instead, --symmetrize stores both.
 * Thread-safety: one thread drives a builder; finish uses `threads` workers. */
#ifndef FS_CSR_BUILD_H
#define FS_CSR_BUILD_H

#include "fs_types.h"
#include "id_census.h"
#include "writer.h"

typedef struct {
    int symmetrize;      /* store every edge in both directions */
    int drop_self_loops;
    int dedup;           /* merge parallel edges (weights summed) */
    int reverse;         /* store dst -> src */
    int compact_ids;     /* map sparse ids to 0..N-1 in ascending order */
} fs_edge_opts_t;

typedef struct {
    int64_t num_nodes, num_edges;
    int64_t input_edges, self_loops_dropped, duplicates_merged;
    fs_dtype_t index_dtype;
} fs_csr_stats_t;

typedef struct fs_csr_builder fs_csr_builder_t;

/* num_nodes < 0: N is the largest id seen + 1 (or the number of distinct
 * ids with compact_ids). Otherwise every id must be < num_nodes. */
fs_status_t fs_csr_builder_create(fs_writer_t *w, const fs_edge_opts_t *opts, int64_t num_nodes,
                                  int weighted, fs_csr_builder_t **out, fs_error_t *err);

/* Adds n edges (w may be NULL when the builder is unweighted). */
fs_status_t fs_csr_builder_add(fs_csr_builder_t *b, const int64_t *src, const int64_t *dst,
                               const float *w, size_t n, fs_error_t *err);

/* The ids added so far, measured: only when N is unknown and ids are kept
 * as given (NULL otherwise). */
const fs_id_census_t *fs_csr_builder_census(const fs_csr_builder_t *b);

/* Writes indptr, indices [, edge_weights] [, node_ids] into the writer and
 * frees the builder. */
fs_status_t fs_csr_builder_finish(fs_csr_builder_t *b, int threads, fs_csr_stats_t *stats,
                                  fs_error_t *err);

void fs_csr_builder_free(fs_csr_builder_t *b);

#endif
