/* bench_common.h — the benchmark graph, generated once and cached. */
#ifndef FS_BENCH_COMMON_H
#define FS_BENCH_COMMON_H

/* --dataset DIR if given, else R-MAT(scale, edge factor 16), symmetrised and
 * deduplicated, not permuted (docs/performance.md's reference graph), cached
 * under /tmp/featstore-bench. Exits on failure. */
const char *bench_dataset(int argc, char **argv, int scale);

/* The same graph with a float32 feature table of `dim` columns. */
const char *bench_dataset_dim(int argc, char **argv, int scale, int dim);

/* Any R-MAT benchmark graph, cached by its parameters. */
const char *bench_dataset_rmat(int argc, char **argv, int scale, int edge_factor, int dim, int symmetrize);

#endif
