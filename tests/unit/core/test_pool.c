/* test_pool.c — the worker pool (kernels/fs_pool.h): every item of a job
 * runs exactly once at any grain; a pool whose process may use one core
 * runs its jobs on the caller (worker 0) and says so in
 * fs_pool_parallelism, also when it was pinned after it was made; and it
 * sees cores given back within SPIN_RECHECK (256) jobs. Pinning uses
 * sched_setaffinity on this test's own process, restored afterwards. */
#include <criterion/criterion.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "fs_pool.h"

#define ITEMS 100000

typedef struct {
    _Atomic int hits[ITEMS];
    _Atomic int workers_seen; /* bit w: worker w ran something */
} tally_t;

static void count(void *ctx, int64_t b, int64_t e, int worker)
{
    tally_t *t = ctx;
    for (int64_t i = b; i < e; i++) atomic_fetch_add(&t->hits[i], 1);
    atomic_fetch_or(&t->workers_seen, 1 << worker);
}

static tally_t *run_job(fs_pool_t *p, int64_t grain)
{
    tally_t *t = calloc(1, sizeof *t);
    fs_pool_run(p, ITEMS, grain, count, t);
    int bad = -1;
    for (int i = 0; i < ITEMS && bad < 0; i++)
        if (t->hits[i] != 1) bad = i;
    cr_assert_eq(bad, -1, "item %d ran %d times (grain %lld)", bad, bad < 0 ? 1 : t->hits[bad], (long long)grain);
    return t;
}

static int pin_to_one_core(cpu_set_t *saved)
{
    if (sched_getaffinity(0, sizeof *saved, saved) != 0) return 0;
    cpu_set_t one;
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, saved)) {
            CPU_SET(c, &one);
            break;
        }
    return sched_setaffinity(0, sizeof one, &one) == 0;
}

Test(pool, every_item_runs_once_at_any_grain)
{
    fs_pool_t *p;
    fs_error_t err = {0};
    cr_assert_eq(fs_pool_create(4, &p, &err), FS_OK);
    cr_assert_eq(fs_pool_size(p), 4);
    int64_t grains[] = {1, 7, 2048, ITEMS, ITEMS * 2};
    for (size_t g = 0; g < sizeof grains / sizeof *grains; g++) free(run_job(p, grains[g]));
    fs_pool_destroy(p);
    cr_assert_eq(fs_pool_parallelism(NULL), 1);
    cr_assert_eq(fs_pool_size(NULL), 1);
}

Test(pool, one_core_runs_jobs_on_the_caller_and_cores_given_back_are_seen)
{
    cpu_set_t saved;
    if (!pin_to_one_core(&saved)) cr_skip_test("cannot change this process's CPU affinity");
    fs_pool_t *p;
    fs_error_t err = {0};
    cr_assert_eq(fs_pool_create(4, &p, &err), FS_OK);
    cr_assert_eq(fs_pool_size(p), 4, "the threads exist; only their parallelism is limited");
    cr_assert_eq(fs_pool_parallelism(p), 1);
    tally_t *t = run_job(p, 64);
    cr_assert_eq(t->workers_seen, 1, "only worker 0 (the caller) ran: %#x", t->workers_seen);
    free(t);
    cr_assert_eq(sched_setaffinity(0, sizeof saved, &saved), 0);
    int cores = CPU_COUNT(&saved), want = cores < 4 ? cores : 4;
    for (int j = 0; j < 256 + 1; j++) free(run_job(p, 4096));
    cr_assert_eq(fs_pool_parallelism(p), want, "after 257 jobs on %d cores: %d", cores, fs_pool_parallelism(p));
    fs_pool_destroy(p);
}

Test(pool, pinned_after_it_was_made_it_stops_splitting)
{
    fs_pool_t *p;
    fs_error_t err = {0};
    cr_assert_eq(fs_pool_create(4, &p, &err), FS_OK);
    cpu_set_t saved;
    if (!pin_to_one_core(&saved)) {
        fs_pool_destroy(p);
        cr_skip_test("cannot change this process's CPU affinity");
    }
    for (int j = 0; j < 256 + 1; j++) free(run_job(p, 4096));
    cr_assert_eq(fs_pool_parallelism(p), 1);
    tally_t *t = run_job(p, 64);
    cr_assert_eq(t->workers_seen, 1, "%#x", t->workers_seen);
    free(t);
    sched_setaffinity(0, sizeof saved, &saved);
    fs_pool_destroy(p);
}
