/* fs_parallel.c — fork-join over pthreads. Threads are created per call:
 * callers here (generator, importers, validation) run for milliseconds to
 * minutes, so a persistent pool would buy nothing; the request engines keep
 * their own long-lived workers. */
#include "fs_parallel.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

typedef struct {
    fs_range_fn fn;
    void *ctx;
    int64_t n, grain;
    int threads, dynamic;
    _Atomic int64_t next;
} job_t;

typedef struct {
    job_t *job;
    int worker;
} worker_arg_t;

int fs_cpu_count(void)
{
    /* the cores this thread may run on (taskset, cpusets), not the machine's */
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c > 0 ? (int)c : 1;
}

static void run_worker(job_t *job, int w)
{
    if (!job->dynamic) {
        int64_t begin = job->n * w / job->threads, end = job->n * (w + 1) / job->threads;
        if (begin < end) job->fn(job->ctx, begin, end, w);
        return;
    }
    for (;;) {
        int64_t begin = atomic_fetch_add(&job->next, job->grain);
        if (begin >= job->n) return;
        int64_t end = begin + job->grain < job->n ? begin + job->grain : job->n;
        job->fn(job->ctx, begin, end, w);
    }
}

static void *worker_main(void *p)
{
    worker_arg_t *a = p;
    run_worker(a->job, a->worker);
    return NULL;
}

static int run_job(job_t *job)
{
    enum { MAX_THREADS = 256 };
    pthread_t tid[MAX_THREADS];
    worker_arg_t args[MAX_THREADS];
    int started = 1;
    for (int w = 1; w < job->threads; w++) {
        args[w] = (worker_arg_t){job, w};
        if (pthread_create(&tid[w], NULL, worker_main, &args[w]) != 0) break;
        started++;
    }
    if (started < job->threads && !job->dynamic) {
        /* Static split: run the ranges of threads that failed to start here. */
        for (int w = started; w < job->threads; w++) run_worker(job, w);
    }
    run_worker(job, 0);
    for (int w = 1; w < started; w++) pthread_join(tid[w], NULL);
    return started;
}

static int clamp_threads(int threads, int64_t n)
{
    if (threads <= 0) threads = fs_cpu_count();
    if (threads > 256) threads = 256;
    if (n < threads) threads = n > 0 ? (int)n : 1;
    return threads;
}

int fs_parallel_for(int threads, int64_t n, fs_range_fn fn, void *ctx)
{
    job_t job = {.fn = fn, .ctx = ctx, .n = n, .threads = clamp_threads(threads, n)};
    if (n <= 0) return 0;
    if (job.threads == 1) {
        fn(ctx, 0, n, 0);
        return 1;
    }
    return run_job(&job);
}

int fs_parallel_for_dynamic(int threads, int64_t n, int64_t grain, fs_range_fn fn, void *ctx)
{
    if (grain < 1) grain = 1;
    job_t job = {.fn = fn, .ctx = ctx, .n = n, .grain = grain, .dynamic = 1,
                 .threads = clamp_threads(threads, (n + grain - 1) / grain)};
    if (n <= 0) return 0;
    atomic_init(&job.next, 0);
    return run_job(&job);
}
