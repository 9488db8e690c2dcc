/* fs_pool.c — persistent workers. A job is published by bumping an atomic
 * generation; blocks are claimed with one atomic add each, so skewed blocks
 * (hub rows) balance themselves. A worker that finishes a job spins on the
 * generation for up to SPIN_NS before parking on a condition variable, and
 * the caller spins the same way for the last workers: a sampled batch runs
 * a dozen short phases back to back, and a futex wake per phase would cost
 * more than some phases do. Spinning pays only while every thread of the
 * pool has a core of its own: a pool with more threads than the cores the
 * process may use (pinned after the pool was made, by taskset or a cpuset)
 * parks at once, rechecked every SPIN_RECHECK jobs; a pool left with one
 * core runs every job on its caller (fs_pool_parallelism). */
#include "fs_pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#define SPIN_NS 200000 /* 0.2 ms: spans the gaps between one batch's phases */
#define SPIN_RECHECK 256 /* jobs between two looks at the cores the process may use */

struct fs_pool {
    int threads;
    pthread_t *tid;
    pthread_mutex_t run_lock;   /* held for the duration of a job */
    pthread_mutex_t mu;         /* guards sleeping on wake/done */
    pthread_cond_t wake, done;
    _Atomic uint64_t generation;
    _Atomic int stopping;
    _Atomic int busy;           /* helper threads still in the job */
    _Atomic int64_t spin_ns;    /* how long to spin before parking: SPIN_NS, or 0 when oversubscribed */
    _Atomic int usable;         /* threads that can run at once: min(threads, cores the process may use) */
    uint64_t jobs;              /* jobs run (under run_lock) */
    /* the current job, written before generation is bumped */
    fs_range_fn fn;
    void *ctx;
    int64_t n, grain;
    _Atomic int64_t next;
};

typedef struct {
    fs_pool_t *pool;
    int worker;
} arg_t;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Spins until cond(p) is false or limit_ns pass; returns 1 if it became false. */
#define SPIN_WHILE(cond, limit_ns)                                                \
    ({                                                                            \
        int64_t t0_ = 0, limit_ = (limit_ns);                                     \
        int ok_ = 0;                                                              \
        for (unsigned i_ = 1;; i_++) {                                            \
            if (!(cond)) { ok_ = 1; break; }                                      \
            if (!limit_) break;                                                   \
            cpu_relax();                                                          \
            if ((i_ & 255) == 0) {                                                \
                int64_t t_ = now_ns();                                            \
                if (!t0_) t0_ = t_;                                               \
                else if (t_ - t0_ > limit_) break;                                \
            }                                                                     \
        }                                                                         \
        ok_;                                                                      \
    })

static void work(fs_pool_t *p, int worker)
{
    for (;;) {
        int64_t b = atomic_fetch_add(&p->next, p->grain);
        if (b >= p->n) return;
        int64_t e = b + p->grain < p->n ? b + p->grain : p->n;
        p->fn(p->ctx, b, e, worker);
    }
}

static void *worker_main(void *v)
{
    arg_t a = *(arg_t *)v;
    free(v);
    fs_pool_t *p = a.pool;
    uint64_t seen = 0;
    for (;;) {
        if (!SPIN_WHILE(atomic_load(&p->generation) == seen && !atomic_load(&p->stopping),
                        atomic_load(&p->spin_ns))) {
            pthread_mutex_lock(&p->mu); /* park: the publisher broadcasts under mu */
            while (atomic_load(&p->generation) == seen && !atomic_load(&p->stopping))
                pthread_cond_wait(&p->wake, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->stopping)) return NULL;
        seen = atomic_load(&p->generation);
        work(p, a.worker);
        if (atomic_fetch_sub(&p->busy, 1) == 1) { /* the last helper out wakes a parked caller */
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

/* Looks at the cores the process may use now: whether to spin, and how
 * many threads can run at once. */
static void cores_changed(fs_pool_t *p)
{
    int cores = fs_cpu_count();
    atomic_store(&p->spin_ns, cores >= p->threads ? SPIN_NS : 0);
    atomic_store(&p->usable, cores < p->threads ? cores : p->threads);
}

fs_status_t fs_pool_create(int threads, fs_pool_t **out, fs_error_t *err)
{
    *out = NULL;
    if (threads <= 0) threads = fs_cpu_count();
    fs_pool_t *p = calloc(1, sizeof *p);
    if (!p || !(p->tid = calloc((size_t)threads, sizeof *p->tid))) {
        free(p);
        return fs_error(err, FS_ERR_NOMEM, "out of memory creating a %d-thread pool", threads);
    }
    pthread_mutex_init(&p->run_lock, NULL);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    p->threads = 1;
    for (int w = 1; w < threads; w++) {
        arg_t *a = malloc(sizeof *a);
        if (!a) break;
        *a = (arg_t){p, w};
        if (pthread_create(&p->tid[w], NULL, worker_main, a) != 0) {
            free(a);
            break;
        }
        p->threads++;
    }
    cores_changed(p);
    *out = p;
    return FS_OK;
}

void fs_pool_destroy(fs_pool_t *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stopping, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int w = 1; w < p->threads; w++) pthread_join(p->tid[w], NULL);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
    pthread_mutex_destroy(&p->run_lock);
    free(p->tid);
    free(p);
}

int fs_pool_size(const fs_pool_t *p) { return p ? p->threads : 1; }

int fs_pool_parallelism(const fs_pool_t *p) { return p ? atomic_load(&p->usable) : 1; }

void fs_pool_run(fs_pool_t *p, int64_t n, int64_t grain, fs_range_fn fn, void *ctx)
{
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    if (!p || p->threads == 1 || n <= grain || pthread_mutex_trylock(&p->run_lock) != 0) {
        fn(ctx, 0, n, 0); /* nothing to split, or the pool is busy: run here */
        return;
    }
    if (++p->jobs % SPIN_RECHECK == 0) cores_changed(p);
    if (atomic_load(&p->usable) == 1) { /* one core for all the threads: no one to split with */
        pthread_mutex_unlock(&p->run_lock);
        fn(ctx, 0, n, 0);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->grain = grain;
    atomic_store(&p->next, 0);
    atomic_store(&p->busy, p->threads - 1);
    atomic_fetch_add(&p->generation, 1);
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    work(p, 0);
    if (!SPIN_WHILE(atomic_load(&p->busy) > 0, atomic_load(&p->spin_ns))) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->busy) > 0) pthread_cond_wait(&p->done, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
    pthread_mutex_unlock(&p->run_lock);
}
