/* fs_propagate.h — pre-propagation's sparse x dense products (docs/algorithms.md
 * §8): X_{r+1} = B X_r over a CSR graph, with B one of
 *
 *   sym   D~^{-1/2} A~ D~^{-1/2}     (the default: GCN's normalisation)
 *   rw    D~^{-1} A~                 (row-stochastic: the mean over a row)
 *   none  A~                         (plain sums)
 *
 * where A~ = A + I with self-loops (the default) or A without, A_ij the
 * number of times j is stored in row i, and D~ the row sums of A~. Every
 * norm is y_i = r_i * sum_j A~_ij c_j x_j with per-row and per-column scale
 * vectors r and c (fs_prop_scales_t), so the caller keeps z = c ⊙ X (the
 * "scaled source rows") in its ping-pong buffer and a hop is pure row sums:
 *
 *   x_i   = r_i * (z_i [self-loop] + sum_{j in row i} z_j)   -> the sink
 *   z'_i  = c_i * x_i                                         -> next buffer
 *
 * Accumulation is float32, each row summed in CSR order (edges in pairs),
 * so the result is the same bits for any thread count. Rows are computed in
 * blocks claimed dynamically by the threads (hub rows balance out); each
 * block is handed to a sink (convert, write a table) from the thread that
 * made it. Memory: the two N x dim buffers belong to the caller; a hop
 * itself takes threads x block x dim floats.
 *
 * Ownership: nothing here keeps a pointer past the call. Thread-safety:
 * reentrant; the sink runs concurrently on disjoint blocks. */
#ifndef FS_PROPAGATE_H
#define FS_PROPAGATE_H

#include <signal.h>
#include <stdint.h>

#include "fs_types.h"

typedef enum { FS_PROP_SYM = 0, FS_PROP_RW = 1, FS_PROP_NONE = 2 } fs_prop_norm_t;

const char *fs_prop_norm_name(fs_prop_norm_t n);   /* "sym", "rw", "none" */
int fs_prop_norm_from_name(const char *s);         /* -1 if unknown */

/* A CSR graph: row i's entries are indices[indptr[i] .. indptr[i+1]). */
typedef struct {
    int64_t num_nodes;
    const int64_t *indptr;     /* [N+1] */
    const void *indices;       /* [E], index_dtype, each < N */
    fs_dtype_t index_dtype;    /* I32 or I64 */
} fs_prop_graph_t;

/* A graph this module allocated (fs_prop_symmetrize). */
typedef struct {
    fs_prop_graph_t g;
    int64_t *indptr;
    void *indices;
} fs_prop_owned_graph_t;

/* out = the union A ∪ A^T of in's pattern, every pair (i, j) once, each
 * row sorted (a stored self-loop is kept, once). O(E) extra memory: 2E
 * indices while building, then the union. */
fs_status_t fs_prop_symmetrize(const fs_prop_graph_t *in, int threads, fs_prop_owned_graph_t *out, fs_error_t *err);
void fs_prop_graph_free(fs_prop_owned_graph_t *g);

typedef struct {
    fs_prop_norm_t norm;
    int self_loops;
    float *row_scale;          /* [N] r, or NULL: all ones (none) */
    float *col_scale;          /* [N] c, or NULL: all ones (rw, none) */
} fs_prop_scales_t;

/* The scales of `norm` from the row lengths (+1 with self-loops); a row of
 * degree 0 gets scale 0 (PyG's convention for 0^{-1/2}). */
fs_status_t fs_prop_scales_make(const fs_prop_graph_t *g, fs_prop_norm_t norm, int self_loops, fs_prop_scales_t *out,
                                fs_error_t *err);
void fs_prop_scales_free(fs_prop_scales_t *s);

/* A ping-pong buffer of `floats` floats, 2 MiB-aligned and asking for
 * transparent huge pages (MADV_HUGEPAGE): a product's random row reads then
 * rarely miss the TLB (measured: ~25% faster at R-MAT scale 20). Free it
 * with free(). NULL when out of memory. */
float *fs_prop_buffer(size_t floats);

/* Rows [begin, end) of an iteration (node nodes[p], or p when nodes is
 * NULL), as float32, row-major, `dim` columns each. */
typedef void (*fs_prop_sink_fn)(void *ctx, int64_t begin, int64_t end, const float *rows, int worker);
/* Rows done so far in this pass; called from the caller's thread only. */
typedef void (*fs_prop_progress_fn)(void *ctx, int64_t rows_done);

typedef struct {
    const fs_prop_graph_t *graph;
    const fs_prop_scales_t *scales;
    int64_t dim;
    int threads;               /* <= 0: every CPU */
    const int64_t *nodes;      /* rows to make, in this order, or NULL: 0..N-1 */
    int64_t num_rows;          /* with nodes; else ignored (N) */
    fs_prop_sink_fn sink;      /* may be NULL */
    void *sink_ctx;
    fs_prop_progress_fn progress; /* may be NULL */
    void *progress_ctx;
    const volatile sig_atomic_t *stop; /* when it becomes non-zero, blocks not yet started are skipped */
} fs_prop_pass_t;

/* X_0 from a feature table (float32, float16 or bfloat16; row v at
 * x0 + v * dim): the sink gets X_0's rows (float32), z0 (N x dim, or NULL)
 * gets c ⊙ X_0. *stopped is set when `stop` cut the pass short. */
fs_status_t fs_prop_start(const fs_prop_pass_t *p, const void *x0, fs_dtype_t x0_dtype, float *z0, int *stopped,
                          fs_error_t *err);

/* One product: from z_in = c ⊙ X_r, the sink gets X_{r+1}'s rows and
 * z_out (N x dim, or NULL on the last hop) gets c ⊙ X_{r+1}. Only the rows
 * of p->nodes are made when it is given (then z_out must be NULL: the
 * other rows of the next hop would be missing). */
fs_status_t fs_prop_hop(const fs_prop_pass_t *p, const float *z_in, float *z_out, int *stopped, fs_error_t *err);

#endif
