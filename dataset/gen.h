/* gen.h — synthetic datasets for benchmarks and demos.
 *
 * R-MAT (Chakrabarti et al., 2004) with Graph500's default quadrant
 * probabilities a, b, c = 0.57, 0.19, 0.19: N = 2^scale nodes and
 * edge_factor * N generated edges with a power-law degree distribution.
 * Node features are Gaussian noise plus a label-dependent signal, so a model
 * trained on them learns something; labels and splits are seeded too.
 *
 * Output is a pure function of the options (seed included): identical bytes
 * whatever the thread count. Memory is O(N); edges are regenerated in chunks
 * and spilled rather than held. */
#ifndef FS_GEN_H
#define FS_GEN_H

#include "csr_build.h"

typedef struct {
    const char *out_dir;
    const char *name;
    int force;
    int threads;
    int scale;               /* N = 2^scale, 1..36 */
    int edge_factor;         /* edges = edge_factor * N */
    double a, b, c;
    uint64_t seed;
    int permute;             /* Graph500-style random relabelling of nodes */
    fs_edge_opts_t edges;
    int64_t dim;             /* feature width; 0 = no feature table */
    fs_dtype_t dtype;        /* F32, F16 or BF16 */
    int num_classes;
    int split_pct[3];
} fs_rmat_opts_t;

void fs_rmat_defaults(fs_rmat_opts_t *o);
fs_status_t fs_gen_rmat(const fs_rmat_opts_t *o, fs_error_t *err);
/* The checks both generators make: scale, edge factor, a/b/c, dim, dtype,
 * classes, each refusal naming its option. */
fs_status_t fs_rmat_check_common(const fs_rmat_opts_t *o, fs_error_t *err);

/* R-MAT's quadrant thresholds out of 2^16, and edge k under seed: (u, v)
 * in [0, 2^scale)^2, a pure function of (seed, k). Shared by both generators. */
typedef struct {
    uint32_t ta, tab, tabc;
} fs_rmat_quadrants_t;
fs_rmat_quadrants_t fs_rmat_quadrants(double a, double b, double c);
void fs_rmat_edge(uint64_t seed, int scale, fs_rmat_quadrants_t q, uint64_t k, int64_t *src, int64_t *dst);

/* ---- the typed R-MAT generator (gen_typed.c; `featstore gen rmat --typed`) ----
 *
 * A dataset of format version 2, a small bibliography with N = 2^scale:
 *   node types  paper  N        features, labels (--classes), time, train/valid/test splits
 *               author N/2      features
 *               venue  max(16, N/256)   features
 *   edge types  (author, writes, paper)        1-3 distinct authors per paper, prolific
 *                                              authors favoured; time = the paper's
 *               (paper, written_by, author)    its reverse
 *               (paper, cites, paper)          edge_factor * N R-MAT edges (a, b, c; the
 *                                              multigraph as drawn, self-loops included);
 *                                              weights in (0, 1]; time = the citing
 *                                              paper's; edge table "feat" float32 [E, 8]
 *               (paper, cited_by, paper)       its reverse
 *               (paper, published_in, venue)   exactly one per paper (edge id = paper id);
 *                                              time = the paper's
 *               (venue, publishes, paper)      its reverse
 *   link splits train/valid/test: a seeded 85/5/10 partition of the cites edges
 *               (src, dst, time), each sorted by edge id
 * Paper times are years in 1990..2025. Features have width --dim (0: none)
 * and --dtype; papers' carry their label's signal as fs_gen_rmat's do,
 * authors' and venues' are noise. The cites edge type holds every cites
 * edge, held-out ones too: the link splits say which are which.
 *
 * Output is a pure function of the options (seed included): identical bytes
 * whatever --threads. Memory is O(N + E): the edges are held while each
 * edge type is laid out. Takes o's out_dir, name, force, threads, scale,
 * edge_factor, a/b/c, seed, dim, dtype, num_classes and split_pct; not
 * permute or the edge options. */
#define FS_TYPED_YEAR_MIN 1990
#define FS_TYPED_YEAR_MAX 2025
#define FS_TYPED_EDGE_DIM 8
fs_status_t fs_gen_rmat_typed(const fs_rmat_opts_t *o, fs_error_t *err);

#endif
