/* fs_pool.h — a persistent worker pool for the engines' hot loops.
 *
 * fs_pool_run() splits [0, n) into blocks of `grain` items claimed
 * dynamically by the pool's threads plus the calling thread, and returns when
 * all are done. Unlike fs_parallel_for it creates no threads per call, so a
 * gather of a few hundred rows pays microseconds, not a thread spawn.
 *
 * Thread-safety: fs_pool_run may be called from several threads; calls are
 * serialised (one job at a time), so give each concurrent request stream its
 * own pool or none. A NULL pool runs everything on the calling thread. */
#ifndef FS_POOL_H
#define FS_POOL_H

#include "fs_parallel.h"
#include "fs_types.h"

typedef struct fs_pool fs_pool_t;

/* threads = total workers including the caller (<= 0: CPU count). */
fs_status_t fs_pool_create(int threads, fs_pool_t **out, fs_error_t *err);
void fs_pool_destroy(fs_pool_t *pool);
int fs_pool_size(const fs_pool_t *pool); /* 1 for NULL */

/* fn(ctx, begin, end, worker) with worker in [0, fs_pool_size). */
void fs_pool_run(fs_pool_t *pool, int64_t n, int64_t grain, fs_range_fn fn, void *ctx);

#endif
