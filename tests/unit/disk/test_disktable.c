/* test_disktable.c — a table served from disk (disk/fs_disktable.h) against
 * pread of its file: ids in any order with repeats, caches large, small and
 * none, four threads on one table and four processes on one shared cache;
 * a row changed on disk fails its checksum and is never cached; a truncated
 * file fails the calls past its end and leaves no pin behind. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs_disktable.h"
#include "test_util.h"

TU_SCRATCH_DIR
TestSuite(disktable, .init = setup, .fini = teardown);

enum { OFFSET = 4096, ROWS = 20000 };

static char path[4200];
static int table_fd;

static int make_table(uint64_t rb)
{
    snprintf(path, sizeof path, "%s/table_feat.npy", dir);
    size_t len = OFFSET + rb * ROWS;
    unsigned char *b = malloc(len);
    for (size_t k = 0; k < len; k++) b[k] = (unsigned char)((k * 2654435761u) >> 9);
    tu_write(path, b, len);
    free(b);
    char sp[4300];
    snprintf(sp, sizeof sp, "%s.rowsums", path);
    unlink(sp); /* a table of other rows: its checksums would be refused, by name */
    table_fd = open(path, O_RDONLY | O_CLOEXEC);
    cr_assert_geq(table_fd, 0);
    return table_fd;
}

static fs_rowsums_t *sums_of(uint64_t rb)
{
    char sp[4300];
    snprintf(sp, sizeof sp, "%s.rowsums", path);
    fs_rowsums_spec_t spec = {.dataset = "g", .table = "feat", .data_offset = OFFSET, .row_bytes = rb, .rows = ROWS};
    fs_rowsums_t *rs;
    fs_rowsums_origin_t origin;
    fs_error_t err = {0};
    cr_assert_eq(fs_rowsums_load(table_fd, "feat", sp, &spec, &rs, &origin, NULL, 0, &err), FS_OK, "%s", err.msg);
    return rs;
}

/* A cache of `slots` rows in shared anonymous memory (forked children share it). */
static fs_rowcache_t *shared_cache(uint64_t slots, uint64_t rb, size_t *bytes)
{
    *bytes = fs_rowcache_region_bytes(slots, rb);
    void *m = mmap(NULL, *bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(m, MAP_FAILED);
    fs_error_t err = {0};
    cr_assert_eq(fs_rowcache_format(m, *bytes, slots, rb, FS_CACHE_SIEVE, &err), FS_OK, "%s", err.msg);
    fs_rowcache_t *c;
    cr_assert_eq(fs_rowcache_attach(m, *bytes, &c, &err), FS_OK, "%s", err.msg);
    return c;
}

static fs_disktable_t *open_table(uint64_t rb, fs_rowcache_t *cache, const fs_rowsums_t *sums)
{
    fs_disktable_opts_t o = {.fd = table_fd, .what = "table 'feat'", .data_offset = OFFSET, .row_bytes = rb,
                             .rows = ROWS, .cache = cache, .sums = sums, .io = {.queue_depth = 16}};
    fs_disktable_t *t;
    fs_error_t err = {0};
    cr_assert_eq(fs_disktable_open(&o, &t, &err), FS_OK, "%s", err.msg);
    return t;
}

/* n ids of [0, ROWS), skewed and with repeats, in no order. */
static void some_ids(int64_t *ids, int64_t n, unsigned *seed)
{
    for (int64_t i = 0; i < n; i++) {
        unsigned r = (unsigned)rand_r(seed);
        ids[i] = r % 4 ? (int64_t)(r % 500) : (int64_t)(r % ROWS);
    }
}

/* 0 when every row of a call matches pread of the file. */
static int call_and_check(fs_disktable_t *t, uint64_t rb, const int64_t *ids, int64_t n)
{
    char *out = malloc((size_t)n * rb), *want = malloc(rb);
    fs_error_t err = {0};
    int bad = fs_disktable_rows(t, ids, n, out, &err) != FS_OK;
    for (int64_t i = 0; !bad && i < n; i++)
        bad = pread(table_fd, want, rb, (off_t)(OFFSET + (uint64_t)ids[i] * rb)) != (ssize_t)rb ||
              memcmp(out + (size_t)i * rb, want, rb) != 0;
    free(out), free(want);
    return bad;
}

Test(disktable, rows_in_any_order_through_caches_large_small_and_none)
{
    const uint64_t row_bytes[] = {100, 512};
    for (int r = 0; r < 2; r++) {
        uint64_t rb = row_bytes[r];
        make_table(rb);
        fs_rowsums_t *sums = sums_of(rb);
        const uint64_t slots[] = {ROWS, 300, 0};
        for (int s = 0; s < 3; s++) {
            size_t bytes = 0;
            fs_rowcache_t *cache = slots[s] ? shared_cache(slots[s], rb, &bytes) : NULL;
            fs_disktable_t *t = open_table(rb, cache, s == 2 ? NULL : sums);
            unsigned seed = 7;
            int64_t ids[3000];
            for (int b = 0; b < 20; b++) {
                some_ids(ids, 3000, &seed);
                cr_assert_eq(call_and_check(t, rb, ids, 3000), 0, "row bytes %llu, %llu slots, batch %d",
                             (unsigned long long)rb, (unsigned long long)slots[s], b);
            }
            fs_disktable_stats_t st;
            fs_disktable_stats(t, &st);
            cr_assert_eq(st.checksum_failures, 0);
            cr_assert_eq(st.cache_hits + st.disk_rows, st.rows);
            if (s == 0) {
                /* The same batch again: all from the cache. */
                fs_disktable_stats_t again;
                cr_assert_eq(call_and_check(t, rb, ids, 3000), 0);
                fs_disktable_stats(t, &again);
                cr_assert_eq(again.disk_rows, st.disk_rows, "a batch in a cache that holds it read the disk");
            }
            if (s == 2) cr_assert_eq(st.cache_hits, 0);
            if (cache) {
                fs_rowcache_stats_t cs;
                fs_rowcache_stats(cache, &cs);
                cr_assert_eq(cs.pinned, 0, "pins left behind");
                munmap(cache, bytes);
            }
            fs_disktable_close(t);
        }
        fs_rowsums_close(sums);
        close(table_fd);
    }
}

Test(disktable, a_row_changed_on_disk_fails_its_checksum_and_is_not_cached)
{
    make_table(512);
    fs_rowsums_t *sums = sums_of(512);
    size_t bytes;
    fs_rowcache_t *cache = shared_cache(1000, 512, &bytes);
    fs_disktable_t *t = open_table(512, cache, sums);
    int w = open(path, O_WRONLY);
    char junk[512];
    memset(junk, 0x77, sizeof junk);
    cr_assert_eq(pwrite(w, junk, 512, OFFSET + 42 * 512), 512);
    close(w);
    int64_t ids[] = {7, 42, 9000, 42};
    char out[4 * 512];
    fs_error_t err = {0};
    for (int k = 0; k < 2; k++) { /* twice: the bad row was not cached */
        cr_assert_eq(fs_disktable_rows(t, ids, 4, out, &err), FS_ERR_FORMAT);
        cr_assert(strstr(err.msg, "table 'feat': row 42 read from disk does not match its checksum"), "%s", err.msg);
    }
    fs_disktable_stats_t st;
    fs_disktable_stats(t, &st);
    cr_assert_eq(st.checksum_failures, 2);
    int64_t good[] = {7, 9000};
    cr_assert_eq(call_and_check(t, 512, good, 2), 0, "the other rows still serve");
    fs_rowcache_stats_t cs;
    fs_rowcache_stats(cache, &cs);
    cr_assert_eq(cs.pinned, 0);
    fs_disktable_close(t);
    fs_rowsums_close(sums);
    munmap(cache, bytes);
    close(table_fd);
}

Test(disktable, a_file_truncated_under_it_fails_the_calls_past_its_end)
{
    make_table(512);
    size_t bytes;
    fs_rowcache_t *cache = shared_cache(100, 512, &bytes);
    fs_disktable_t *t = open_table(512, cache, NULL);
    cr_assert_eq(truncate(path, OFFSET + 512 * 1000), 0);
    int64_t ids[] = {5, 15000, 6};
    char out[3 * 512];
    fs_error_t err = {0};
    cr_assert_eq(fs_disktable_rows(t, ids, 3, out, &err), FS_ERR_IO);
    cr_assert(strstr(err.msg, "before row 15000"), "%s", err.msg);
    int64_t inside[] = {5, 999, 6};
    cr_assert_eq(call_and_check(t, 512, inside, 3), 0);
    fs_rowcache_stats_t cs;
    fs_rowcache_stats(cache, &cs);
    cr_assert_eq(cs.pinned, 0, "pins left behind by the failed call");
    fs_disktable_close(t);
    munmap(cache, bytes);
    close(table_fd);
}

typedef struct {
    fs_disktable_t *t;
    unsigned seed;
    int bad;
} worker_t;

static void *work(void *p)
{
    worker_t *w = p;
    int64_t ids[2000];
    for (int b = 0; b < 15 && !w->bad; b++) {
        some_ids(ids, 2000, &w->seed);
        w->bad = call_and_check(w->t, 256, ids, 2000);
    }
    return NULL;
}

Test(disktable, four_threads_on_one_table_and_four_processes_on_one_cache)
{
    make_table(256);
    fs_rowsums_t *sums = sums_of(256);
    size_t bytes;
    fs_rowcache_t *cache = shared_cache(2000, 256, &bytes);
    fs_disktable_t *t = open_table(256, cache, sums);
    pthread_t th[4];
    worker_t w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (worker_t){t, (unsigned)i + 1, 0};
        cr_assert_eq(pthread_create(&th[i], NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(w[i].bad, 0, "thread %d", i);
    }
    fs_disktable_close(t);
    pid_t kids[4];
    for (int i = 0; i < 4; i++) {
        if ((kids[i] = fork()) == 0) {
            worker_t me = {open_table(256, cache, sums), (unsigned)i + 11, 0};
            work(&me);
            fs_disktable_close(me.t);
            _exit(me.bad);
        }
    }
    for (int i = 0; i < 4; i++) {
        int status;
        cr_assert_eq(waitpid(kids[i], &status, 0), kids[i]);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "process %d", i);
    }
    fs_rowcache_stats_t cs;
    fs_rowcache_stats(cache, &cs);
    cr_assert_eq(cs.pinned, 0);
    cr_assert_gt(cs.hits, 0, "the processes shared nothing");
    fs_rowsums_close(sums);
    munmap(cache, bytes);
    close(table_fd);
}

Test(disktable, pinned_rows_stay_in_the_cache_whatever_else_is_read)
{
    make_table(512);
    size_t bytes;
    fs_rowcache_t *cache = shared_cache(400, 512, &bytes);
    fs_disktable_t *t = open_table(512, cache, NULL);
    int64_t hot[300], pinned;
    for (int i = 0; i < 300; i++) hot[i] = 3 * i + 1;
    fs_error_t err = {0};
    cr_assert_eq(fs_disktable_pin(t, hot, 300, &pinned, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(pinned, 300);
    unsigned seed = 4;
    int64_t ids[2000];
    for (int b = 0; b < 10; b++) { /* far more rows than the 100 slots left */
        for (int i = 0; i < 2000; i++) ids[i] = 1000 + (int64_t)(rand_r(&seed) % (ROWS - 1000));
        cr_assert_eq(call_and_check(t, 512, ids, 2000), 0);
    }
    fs_disktable_stats_t before, after;
    fs_disktable_stats(t, &before);
    cr_assert_eq(call_and_check(t, 512, hot, 300), 0);
    fs_disktable_stats(t, &after);
    cr_assert_eq(after.disk_rows, before.disk_rows, "a pinned row was evicted and read again");
    cr_assert_eq(after.cache_hits - before.cache_hits, 300);
    /* A cache too small for all: what fits is pinned, the rest said so. */
    fs_rowcache_stats_t cs;
    fs_rowcache_stats(cache, &cs);
    cr_assert_eq(cs.pinned, 300);
    int64_t more[200];
    for (int i = 0; i < 200; i++) more[i] = 2 * i + 10000;
    cr_assert_eq(fs_disktable_pin(t, more, 200, &pinned, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(pinned, 100, "pinned %lld of 200 with 100 slots free", (long long)pinned);
    fs_disktable_close(t);
    fs_rowcache_stats(cache, &cs);
    cr_assert_eq(cs.pinned, 0, "the table's pins outlived it");
    munmap(cache, bytes);
    close(table_fd);
}
