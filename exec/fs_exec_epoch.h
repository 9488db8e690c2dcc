/* fs_exec_epoch.h — the steps of an epoch stream's node batches, shared by
 * both stream makers: the trainer's producers (client-lib/stream.c) and
 * the server's Stream call (server/epoch_run.c). A trainer checks each
 * batch the server sent against its own plan and matches it as the server
 * did, so both must make the very same batches: these are the one
 * definition of how.
 *
 *   seeds    plan batch p's seeds and its request seed (kernels/fs_epoch.h:
 *            fs_epoch_batch, fs_epoch_batch_seed)
 *   sample   through the executor (fs_exec.h), with that request seed
 *   order    a window of sampled batches, from the window's first batch
 *            (never the previous window's last, so a stream resumed at a
 *            window orders it as the uninterrupted one did)
 *   delta    each batch in that order against the one handed out before:
 *            which rows it takes from it, and the new ids to gather
 *
 * Thread-safety: a workspace is one stream's; the rest is pure. */
#ifndef FS_EXEC_EPOCH_H
#define FS_EXEC_EPOCH_H

#include "fs_reorder.h"

/* The order of a window's k sampled batches (their node sets): order[j]
 * is the batch handed out j-th (fs_reorder_window; k = 1: as planned). */
fs_status_t fs_exec_epoch_order(fs_reorder_ws_t *ws, const fs_rowset_t *sets, int k, int *order, fs_error_t *err);

/* A batch's nodes ids[0..n) matched against the previous batch's
 * prev[0..prev_n) (prev_n 0 at a stream's or a call's start): take and
 * new_pos as fs_reorder_delta, and the new nodes' ids in
 * new_ids[0..*num_new), the rows to gather. */
fs_status_t fs_exec_epoch_delta(fs_reorder_ws_t *ws, const int64_t *prev, int64_t prev_n, const int64_t *ids,
                                int64_t n, int64_t *take, int64_t *new_pos, int64_t *new_ids, int64_t *num_new,
                                fs_error_t *err);

#endif
