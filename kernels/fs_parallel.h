/* fs_parallel.h — a minimal fork-join helper: split [0, n) into contiguous
 * chunks and run them on up to `threads` threads (the caller's thread takes
 * the first chunk). Chunk boundaries depend only on (n, threads), never on
 * timing, so deterministic per-chunk work stays deterministic.
 *
 * Thread-safety: reentrant; fn must be safe to run concurrently on disjoint
 * ranges. */
#ifndef FS_PARALLEL_H
#define FS_PARALLEL_H

#include <stddef.h>
#include <stdint.h>

typedef void (*fs_range_fn)(void *ctx, int64_t begin, int64_t end, int worker);

/* Runs fn over [0, n) in `threads` contiguous ranges (threads <= 0: the
 * number of online CPUs). Returns the number of workers used. */
int fs_parallel_for(int threads, int64_t n, fs_range_fn fn, void *ctx);

/* Runs fn over [0, n) in dynamically claimed blocks of `grain` items —
 * better balance when item costs are skewed (hub rows). Worker ids are
 * 0..threads-1. */
int fs_parallel_for_dynamic(int threads, int64_t n, int64_t grain, fs_range_fn fn, void *ctx);

/* The cores this thread may run on (its CPU affinity: taskset, cpusets),
 * else the machine's online cores: every "0 = all cores" default. */
int fs_cpu_count(void);

#endif
