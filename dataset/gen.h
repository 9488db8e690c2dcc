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

#endif
