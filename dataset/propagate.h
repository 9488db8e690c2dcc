/* propagate.h — `featstore propagate`: pre-propagation's hop tables
 * X_r = B^r X_0, r = 0..R, added to a dataset in place as tables hop_0 ..
 * hop_R, with the manifest recording how they were made
 * (docs/algorithms.md §8; the products are kernels/fs_propagate.h).
 *
 * All or nothing: the tables are written under a scratch directory inside
 * the dataset, then moved in under names no file has, and the new manifest
 * replaces the old one by one rename, last. Until that rename the dataset
 * is what it was; a stop request (the caller's signal handler setting
 * *stop) is honoured at every block until then and removes the scratch
 * directory. One propagate at a time per dataset (an exclusive flock on the
 * directory).
 *
 * Memory: two N x F float32 buffers (the ping-pong), N floats of scales (two
 * for sym), threads x 64 KiB of row blocks; a directed graph symmetrised
 * first adds its union (8(N+1) + up to 2E indices; 16N more while building
 * it); --rows labelled adds 8(N + k) bytes. Each table is written through a
 * mapping of its file (page cache, not heap), mapped only while its hop
 * runs; the source table is read in place. Nothing grows with R. */
#ifndef FS_PROPAGATE_DS_H
#define FS_PROPAGATE_DS_H

#include <signal.h>

#include "dataset.h"
#include "fs_propagate.h"

typedef struct {
    const char *dir;               /* the dataset, changed in place */
    int hops;                      /* R, 1..FS_PROP_MAX_HOPS */
    fs_prop_norm_t norm;           /* default FS_PROP_SYM */
    int self_loops;                /* 1: A + I (the default); 0: A */
    int as_stored;                 /* 1: a directed graph's rows as stored; 0: symmetrise it first (default) */
    const char *table;             /* X_0; NULL: "feat", or the dataset's only float table */
    fs_dtype_t dtype;              /* of the hop tables; FS_DTYPE_INVALID: the source table's; FS_DTYPE_I8:
                                      int8 rows of scale, bias and codes (kernels/fs_codec.h), served as float32 */
    int labelled;                  /* 1: only the splits' nodes' rows (--rows labelled) */
    uint64_t seed;                 /* of the labelled rows' order */
    int threads;                   /* <= 0: every CPU */
    int force;                     /* replace the hop tables of an earlier propagate */
    int quiet;                     /* no progress lines */
    const volatile sig_atomic_t *stop; /* may be NULL; non-zero: stop and change nothing */
} fs_propagate_opts_t;

typedef struct {
    int64_t rows;                  /* per hop table */
    int64_t edges;                 /* of the graph propagated over (after symmetrising) */
    int64_t dim;
    fs_dtype_t dtype;
    char source_table[64];
    char graph[16];                /* "stored" or "symmetrized" */
    double seconds;                /* the products and their tables, commit included */
    int stopped;                   /* 1: *stop was seen; nothing was changed */
} fs_propagate_report_t;

void fs_propagate_defaults(fs_propagate_opts_t *o);

/* Adds hop_0 .. hop_R to o->dir. FS_ERR_NOT_FOUND for an unknown table;
 * FS_ERR_INVALID_ARGUMENT for --rows labelled without splits (or with
 * overlapping ones) and bad options; FS_ERR_UNSUPPORTED for a typed dataset
 * (several node or edge types: the message says so); FS_ERR_EXISTS when
 * hop tables exist and o->force is 0, or a table named hop_r was not made
 * by propagate; FS_ERR_IO when stopped (rep->stopped) or the disk fails.
 * On any error the dataset is unchanged. */
fs_status_t fs_propagate(const fs_propagate_opts_t *o, fs_propagate_report_t *rep, fs_error_t *err);

#endif
