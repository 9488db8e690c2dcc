/* hotness.h — estimators of how often each node's feature row (or neighbour
 * list) will be read during training: p[v] for every node v (docs/algorithms.md §1).
 *
 *   degree      p[v] = in-degree(v), the number of times v appears in the
 *               CSR's indices (Quiver, GLT and XGNN's default);
 *   reach       p = A^L t / N_t: t = indicator of the training nodes, one
 *               step moves each node's mass to its CSR neighbours (the
 *               direction sampling walks), so p[v] counts length-L paths from
 *               training nodes to v per training node (P0, docs/papers.md);
 *   presample   K epochs of the real sampler (fs_sample_cpu) over the
 *               shuffled training nodes; p[v] = how many times v was in a
 *               batch's result.nodes, i.e. a row a gather would fetch
 *               (GNNLab PreSC). Raw counts: divide by epochs x batches for the
 *               expected reads per mini-batch.
 *
 * All three are O(N + E) per pass and run on `threads` workers (<= 0: every
 * CPU) with per-worker partial counts summed afterwards — no atomics, and
 * results independent of the thread count. Per-worker arrays cost N counters
 * each, so the worker count is capped to keep them within 2 GiB.
 *
 * Input is a plain CSR (row v = v's out-neighbours), never a dataset, so the
 * planners stay independent of the server. Bad input (NULL arrays, indptr
 * not starting at 0 or decreasing, neighbour ids out of range, unknown index
 * dtype, bad training ids) is FS_ERR_INVALID_ARGUMENT naming the position.
 *
 * Ownership: the caller owns every array, p included ([num_nodes] doubles).
 * Thread-safety: reentrant. */
#ifndef FS_HOTNESS_H
#define FS_HOTNESS_H

#include "fs_sample.h"
#include "fs_types.h"

typedef struct {
    int64_t num_nodes;
    const int64_t *indptr;   /* [num_nodes + 1], indptr[0] = 0, non-decreasing */
    const void *indices;     /* [indptr[num_nodes]] neighbour ids */
    fs_dtype_t index_dtype;  /* FS_DTYPE_I32 or FS_DTYPE_I64 */
    const float *weights;    /* per edge or NULL; only the weighted sampling modes read it */
} fs_csr_ref_t;

/* Checks indptr and every neighbour id. */
fs_status_t fs_csr_ref_check(const fs_csr_ref_t *g, int threads, fs_error_t *err);

fs_status_t fs_hotness_degree(const fs_csr_ref_t *g, int threads, double *p, fs_error_t *err);

/* hops >= 1; train ids in [0, num_nodes) (duplicates count twice). */
fs_status_t fs_hotness_reach(const fs_csr_ref_t *g, const int64_t *train, int64_t num_train, int hops, int threads,
                             double *p, fs_error_t *err);

typedef struct {
    int num_hops;                  /* 1..FS_MAX_HOPS */
    int fanout[FS_MAX_HOPS];       /* > 0 or FS_FANOUT_ALL */
    fs_sample_mode_t mode;         /* every hop */
    int64_t batch_size;            /* seeds per mini-batch, > 0 */
    int epochs;                    /* K >= 1 (1..3 in practice) */
    uint64_t seed;
    int threads;
} fs_presample_opts_t;

/* fanout [15,10,5], uniform, batch 1024, 1 epoch, seed 1, every CPU. */
void fs_presample_defaults(fs_presample_opts_t *o);

fs_status_t fs_hotness_presample(const fs_csr_ref_t *g, const int64_t *train, int64_t num_train,
                                 const fs_presample_opts_t *o, double *p, fs_error_t *err);

/* The exact batches presampling runs, so a caller (or a test) can replay
 * them: epoch e visits the training ids in the order fs_presample_epoch_order
 * writes (a seeded Fisher-Yates shuffle), batch b is positions
 * [b*batch_size, min((b+1)*batch_size, num_train)) of it, sampled with
 * fs_presample_request(o, e, b). */
void fs_presample_epoch_order(const int64_t *train, int64_t num_train, uint64_t seed, int epoch, int64_t *out);
void fs_presample_request(const fs_presample_opts_t *o, int epoch, int64_t batch, fs_sample_req_t *req);

#endif
