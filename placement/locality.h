/* locality.h — the planning side of locality-aware sampling (docs/algorithms.md §4,
 * P0 §4, docs/papers.md): the preferred sets a reader's sampler boosts, and
 * Algorithm 2, the per-epoch controller of the boost s.
 *
 * Preferred sets, per reader (a GPU, or a group of linked GPUs that share
 * their memory): B = the rows the reader reads from GPU memory, its own or a
 * peer's (fs_las_reader_rows takes them from a plan's routes). Then
 *     Q_1 = B,  v_1 = 1_B,  v_{l+1}[i] = sum_{j in row i} v_l[j],
 *     Q_l = the top-K nodes of v_l (l > 1), nodes with v_l = 0 never,
 *           ties broken by ascending id,
 * where row i is i's CSR neighbour list — the direction the sampler walks —
 * so v_{l+1}[i] counts the paths of l edges from i into B (the paper's
 * v_{l+1} = v_l A with A[i][j] = 1 for an edge i -> j). Each set is a dense
 * bitmap (N/8 bytes) plus a count per node, |row i ∩ Q_l| saturated at
 * FS_LAS_COUNT_SAT (uint16, 2N bytes), which lets the sampler size a boosted
 * row's probabilities without scanning it (fs_locality.h, Cost). Kept:
 * L x 2.125 N bytes per reader group (26 MB for 4M nodes and 3 levels).
 * Cost: L-1 sparse matrix-vector products (pull: each row sums its
 * neighbours' values, so workers own disjoint output rows — no atomics, no
 * partial arrays, results independent of the thread count) and L counting
 * passes, fused, plus one O(N) top-K sort per level > 1, on `threads`
 * workers; two doubles and one int64 per node more while building.
 *
 * Algorithm 2, the per-epoch controller of s (fs_las_ctl_*), lives with
 * the sampler in kernels/fs_locality.h, so the client library — which
 * runs it for each connection — needs nothing from the planner.
 *
 * Ownership: fs_las_sets_build allocates the sets (fs_las_sets_free);
 * fs_las_reader_rows allocates *rows (free()). Thread-safety: reentrant;
 * built sets are read-only and may be shared by every sampler of the
 * reader. */
#ifndef FS_LOCALITY_PLAN_H
#define FS_LOCALITY_PLAN_H

#include "fs_locality.h"
#include "hotness.h"
#include "plan.h"

#define FS_LAS_DEFAULT_K 8192

typedef struct {
    int num_levels;   /* L = the most hops a request will have, 1..FS_MAX_HOPS (default 3) */
    int64_t k;        /* |Q_l| for l > 1, >= 1 (default FS_LAS_DEFAULT_K) */
    int threads;      /* <= 0: every CPU */
} fs_las_opts_t;

void fs_las_defaults(fs_las_opts_t *o);

typedef struct {
    int64_t num_nodes;
    int num_levels;
    int64_t size[FS_MAX_HOPS];      /* |Q_l| at [l-1] */
    uint64_t *pref[FS_MAX_HOPS];    /* Q_l at [l-1], (num_nodes + 63) / 64 words */
    uint16_t *count[FS_MAX_HOPS];   /* [l-1][i] = |row i ∩ Q_l|, saturated at FS_LAS_COUNT_SAT */
} fs_las_sets_t;

/* Builds Q_1..Q_L for B = b_rows[0..num_b) (ids in [0, N); duplicates count
 * once). The CSR is checked first (fs_csr_ref_check). */
fs_status_t fs_las_sets_build(const fs_csr_ref_t *g, const int64_t *b_rows, int64_t num_b, const fs_las_opts_t *o,
                              fs_las_sets_t **out, fs_error_t *err);
void fs_las_sets_free(fs_las_sets_t *sets);

/* B for reader GPU `reader` of a plan: the rows fs_plan_route sends to a
 * GPU (its own copy or a peer's), ascending. *rows is malloc'ed. */
fs_status_t fs_las_reader_rows(const fs_plan_t *plan, int reader, int64_t **rows, int64_t *count, fs_error_t *err);

/* The sampler's option for boost s over these sets. */
void fs_las_locality(const fs_las_sets_t *sets, double s, fs_locality_t *out);

#endif
