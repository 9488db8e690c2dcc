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

/* The typed R-MAT (fs_gen_rmat_typed: papers, authors, venues and six edge
 * types) of 2^scale papers, cached under /tmp/featstore-bench. */
const char *bench_typed_dataset(int scale, int edge_factor);

/* A child running `sh -c cmd`, its stdout readable and its stdin writable
 * (close `in` to end a --hold). Exits on failure to create the pipes. */
#include <stdio.h>
#include <sys/types.h>

typedef struct {
    pid_t pid;
    FILE *out;   /* its stdout */
    int in;      /* its stdin */
} bench_child_t;

void bench_spawn(bench_child_t *c, const char *cmd);

/* Reads the child's stdout up to a line containing `word` (left in line);
 * -1 if it ends first. */
int bench_wait_line(bench_child_t *c, const char *word, char *line, size_t len);

#endif
