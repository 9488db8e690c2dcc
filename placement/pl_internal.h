/* pl_internal.h — helpers shared by the placement sources (not installed,
 * not part of the placement API). */
#ifndef FS_PL_INTERNAL_H
#define FS_PL_INTERNAL_H

#include <stdint.h>

#include "fs_parallel.h"
#include "fs_types.h"

/* Workers to use for n items: threads <= 0 means every CPU; never more than
 * n or the 256 fs_parallel_for supports. Per-worker scratch is sized by it. */
static inline int fs_pl_workers(int threads, int64_t n)
{
    if (threads <= 0) threads = fs_cpu_count();
    if (threads > 256) threads = 256;
    if (n < threads) threads = n > 0 ? (int)n : 1;
    return threads;
}

/* The [begin, end) range of chunk w of T over n items (fs_parallel_for's split). */
static inline void fs_pl_chunk(int64_t n, int w, int T, int64_t *begin, int64_t *end)
{
    *begin = n * w / T;
    *end = n * (w + 1) / T;
}

/* Training ids: at least one, each a node id; errors start with `who`. */
fs_status_t fs_pl_check_train(const char *who, const int64_t *train, int64_t num_train, int64_t num_nodes,
                              fs_error_t *err);

/* split[0..workers] = row ranges of a CSR with about equal edge counts. */
void fs_pl_edge_split(const int64_t *indptr, int64_t n, int workers, int64_t *split);

/* out[v] = sum over workers of count[w][v], v < n, on `threads` workers. */
void fs_pl_sum_counts(uint32_t *const *count, int workers, int64_t n, int threads, double *out);

static inline int fs_pl_popcount(uint32_t m)
{
    return __builtin_popcount(m);
}

#endif
