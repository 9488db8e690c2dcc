/* fs_pool.c — persistent workers parked on a condition variable. A job is
 * published by bumping a generation counter; blocks are claimed with one
 * atomic add each, so skewed blocks (hub rows) balance themselves. */
#include "fs_pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

struct fs_pool {
    int threads;
    pthread_t *tid;
    pthread_mutex_t run_lock;   /* one job at a time */
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    uint64_t generation;
    int stopping, busy;         /* busy = helper threads still in the job */
    /* the current job */
    fs_range_fn fn;
    void *ctx;
    int64_t n, grain;
    _Atomic int64_t next;
};

typedef struct {
    fs_pool_t *pool;
    int worker;
} arg_t;

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
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->generation == seen && !p->stopping) pthread_cond_wait(&p->wake, &p->mu);
        if (p->stopping) break;
        seen = p->generation;
        pthread_mutex_unlock(&p->mu);
        work(p, a.worker);
        pthread_mutex_lock(&p->mu);
        if (--p->busy == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
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
    *out = p;
    return FS_OK;
}

void fs_pool_destroy(fs_pool_t *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
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

void fs_pool_run(fs_pool_t *p, int64_t n, int64_t grain, fs_range_fn fn, void *ctx)
{
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    if (!p || p->threads == 1 || n <= grain) {
        fn(ctx, 0, n, 0);
        return;
    }
    pthread_mutex_lock(&p->run_lock);
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->grain = grain;
    atomic_store(&p->next, 0);
    p->busy = p->threads - 1;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    work(p, 0);
    pthread_mutex_lock(&p->mu);
    while (p->busy > 0) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    pthread_mutex_unlock(&p->run_lock);
}
