/* place_las.h — the server side of locality-aware sampling (docs/algorithms.md §4):
 * once a plan is applied, each planned reader GPU gets its preferred sets
 * (placement/locality.h: B = the feature rows the plan routes that GPU to
 * GPU memory — its own copy or a peer's — then Q_1 = B and Q_2..Q_L the
 * top-K nodes by paths into B), built here and handed to the store, which
 * seals them and shares them with that reader's local clients
 * (fs_store_set_locality). Readers with the same B (a replicated group)
 * get one build and one copy.
 *
 * Levels: a request may boost only when it has at most L hops (the sets of
 * level l serve hop H - l); FS_PLACE_LAS_LEVELS = 3 covers the usual 2- and
 * 3-hop GNNs at 2.125 N bytes per level and reader group (26 MB per group
 * for 4M nodes). Build cost: L - 1 sparse matrix-vector products, about
 * 0.5 s per group for 2M nodes on 2 threads.
 *
 * Thread-safety: a setup call, like fs_place_apply (before the store is
 * frozen). */
#ifndef FS_PLACE_LAS_H
#define FS_PLACE_LAS_H

#include <stdio.h>

#include "dataset.h"
#include "locality.h"
#include "plan.h"
#include "store.h"

#define FS_PLACE_LAS_LEVELS 3

/* Builds and stores the preferred sets of every GPU of `plan` (reader g =
 * GPU g, as fs_place_apply numbers them). o NULL: fs_las_defaults with
 * FS_PLACE_LAS_LEVELS levels on every CPU. log (may be NULL) gets one line. */
fs_status_t fs_place_locality(fs_store_t *st, const fs_dataset_t *ds, const fs_plan_t *plan, const fs_las_opts_t *o,
                              FILE *log, fs_error_t *err);

#endif
