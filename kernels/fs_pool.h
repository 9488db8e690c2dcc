/* fs_pool.h — a persistent worker pool for the engines' hot loops.
 *
 * fs_pool_run() splits [0, n) into blocks of `grain` items claimed
 * dynamically by the pool's threads plus the calling thread, and returns when
 * all are done. Unlike fs_parallel_for it creates no threads per call, so a
 * gather of a few hundred rows pays microseconds, not a thread spawn; and
 * idle workers spin briefly before they park, so the several short phases
 * of one sampled batch (fs_typed_pass.c) each start in well under a microsecond.
 *
 * Thread-safety: fs_pool_run may be called from several threads. One job
 * runs on the pool at a time; a call that finds the pool busy (another
 * caller's job, or a job of its own from inside a worker) runs its whole
 * range on the calling thread as worker 0, so concurrent requests never wait
 * on each other. Callers must therefore give each concurrent job its own
 * per-worker scratch. A NULL pool runs everything on the calling thread. */
#ifndef FS_POOL_H
#define FS_POOL_H

#include "fs_parallel.h"
#include "fs_types.h"

typedef struct fs_pool fs_pool_t;

/* threads = total workers including the caller (<= 0: CPU count). */
fs_status_t fs_pool_create(int threads, fs_pool_t **out, fs_error_t *err);
void fs_pool_destroy(fs_pool_t *pool);
int fs_pool_size(const fs_pool_t *pool); /* 1 for NULL */
/* How many of its threads can run at once: fs_pool_size, or fewer when the
 * process may use fewer cores (taskset, cpusets; rechecked as jobs run, so
 * a process pinned after the pool was made is seen within a few batches).
 * At 1 fs_pool_run runs every job on the calling thread, and an engine
 * should take its serial or in-order path: splitting a batch over threads
 * that share one core only adds the splitting. 1 for NULL. */
int fs_pool_parallelism(const fs_pool_t *pool);

/* fn(ctx, begin, end, worker) with worker in [0, fs_pool_size). */
void fs_pool_run(fs_pool_t *pool, int64_t n, int64_t grain, fs_range_fn fn, void *ctx);

#endif
