/* fs_reorder.h — FastGL's Match and Reorder (docs/algorithms.md §6) as a pure
 * CPU module: the overlap of a window of mini-batches' input rows, a greedy
 * order of the window that keeps consecutive batches' overlaps large, and the
 * delta of one batch against the previous one (which rows to reuse, which to
 * load).
 *
 * A batch's input rows are a list of global ids; ids may repeat, and a set
 * counts distinct ids. Everything is deterministic: the same inputs give the
 * same order and the same delta.
 *
 * Ownership: the workspace owns its hash maps and grows them as needed; every
 * output goes to caller-owned arrays. Thread-safety: one workspace per
 * thread; the inputs are only read. */
#ifndef FS_REORDER_H
#define FS_REORDER_H

#include <stdint.h>

#include "fs_types.h"

/* The most batches one window may hold (a set's membership is one bit of a
 * 64-bit mask). */
#define FS_REORDER_MAX_WINDOW 64

/* A batch's input rows: n global ids (may repeat; a set counts distinct ids). */
typedef struct {
    int64_t n;
    const int64_t *ids;
} fs_rowset_t;

/* Opaque reusable workspace (hash maps); one thread at a time. */
typedef struct fs_reorder_ws fs_reorder_ws_t;

fs_status_t fs_reorder_ws_create(fs_reorder_ws_t **out, fs_error_t *err);
void fs_reorder_ws_destroy(fs_reorder_ws_t *ws);

/* ov[i*n + j] = |S_i ∩ S_j| (distinct ids) for i != j; 0 on the diagonal.
 * 1 <= n <= FS_REORDER_MAX_WINDOW. O(total ids + distinct masks * popcount^2). */
fs_status_t fs_reorder_overlap(fs_reorder_ws_t *ws, const fs_rowset_t *sets, int n, int64_t *ov, fs_error_t *err);

/* Greedy order of a window. prev: the batch emitted just before the window
 * (NULL for none).
 * Path: start at prev if given (the first pick is the set with the largest
 * overlap with prev), else at sets[0]; then repeatedly the unvisited set with
 * the largest overlap with the current one, ties to the lowest index. The
 * path's total overlap (sum over consecutive pairs, including prev->first
 * when prev is given) is compared with the identity order's
 * (prev->0->1->...->n-1); the identity order is returned when it is at least
 * as good, so the result never has less total overlap than the identity order.
 * order[n] receives a permutation of 0..n-1; *total (may be NULL) its total
 * overlap; *identity_total (may be NULL) the identity's. */
fs_status_t fs_reorder_window(fs_reorder_ws_t *ws, const fs_rowset_t *prev, const fs_rowset_t *sets, int n, int *order,
                              int64_t *total, int64_t *identity_total, fs_error_t *err);

/* The delta of batch C (ids[n]) against the previous batch P
 * (prev_ids[prev_n], may be prev_n = 0).
 * take[i] (for each of C's n rows) indexes concat(P's rows, new rows):
 * take[i] < prev_n is the position in P of an id equal to ids[i] (the FIRST
 * such position), take[i] >= prev_n is new row take[i] - prev_n.
 * New rows are C's ids not in P, distinct, in order of first appearance in C;
 * new_pos[k] is the position in C of new row k's first appearance (so new
 * rows = C's feature rows at new_pos). *num_new receives their count.
 * take and new_pos have room for n entries (either may be NULL when n = 0).
 * Match degree of the pair = (n - *num_new)/n counted over rows. */
fs_status_t fs_reorder_delta(fs_reorder_ws_t *ws, const int64_t *prev_ids, int64_t prev_n, const int64_t *ids,
                             int64_t n, int64_t *take, int64_t *new_pos, int64_t *num_new, fs_error_t *err);

#endif
