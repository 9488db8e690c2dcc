/* fs_exec_epoch.c — see fs_exec_epoch.h. */
#include "fs_exec_epoch.h"

fs_status_t fs_exec_epoch_order(fs_reorder_ws_t *ws, const fs_rowset_t *sets, int k, int *order, fs_error_t *err)
{
    for (int j = 0; j < k; j++) order[j] = j;
    return k > 1 ? fs_reorder_window(ws, NULL, sets, k, order, NULL, NULL, err) : FS_OK;
}

fs_status_t fs_exec_epoch_delta(fs_reorder_ws_t *ws, const int64_t *prev, int64_t prev_n, const int64_t *ids,
                                int64_t n, int64_t *take, int64_t *new_pos, int64_t *new_ids, int64_t *num_new,
                                fs_error_t *err)
{
    fs_status_t st = fs_reorder_delta(ws, prev, prev_n, ids, n, take, new_pos, num_new, err);
    for (int64_t k = 0; st == FS_OK && k < *num_new; k++) new_ids[k] = ids[new_pos[k]];
    return st;
}
