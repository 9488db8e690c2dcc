/* test_prefetch.c — a served open's copies made ahead (dataset/prefetch.c):
 * the served dataset holds every file's bytes whichever side copied it, an
 * open that fails still names the file a sequential open would name, and
 * a copy of a file replaced since is never handed out. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset.h"
#include "dataset_internal.h"
#include "fs_hash.h"
#include "gen.h"
#include "test_util.h"

TU_SCRATCH_DIR
TestSuite(prefetch, .init = setup, .fini = teardown, .timeout = 120);

static char *make_dataset(void)
{
    char *data = tu_path(dir, "data");
    fs_rmat_opts_t o;
    fs_rmat_defaults(&o);
    o.out_dir = data, o.scale = 12, o.edge_factor = 8, o.dim = 8, o.threads = 2;
    fs_error_t err = {0};
    cr_assert_eq(fs_gen_rmat(&o, &err), FS_OK, "%s", err.msg);
    return data;
}

static void expect_same(const void *a, const void *b, size_t bytes, const char *what)
{
    cr_assert(a && b, "%s: missing", what);
    cr_assert_eq(memcmp(a, b, bytes), 0, "%s differs from the file", what);
}

static void expect_served_equals_files(const fs_dataset_t *s, const fs_dataset_t *f)
{
    cr_assert_eq(s->num_nodes, f->num_nodes);
    expect_same(s->indptr, f->indptr, (size_t)(f->num_nodes + 1) * 8, "indptr");
    expect_same(s->indices, f->indices, (size_t)f->num_edges * fs_dtype_size(f->index_dtype), "indices");
    expect_same(s->labels, f->labels, (size_t)f->num_nodes * 8, "labels");
    cr_assert_eq(s->num_splits, f->num_splits);
    for (int i = 0; i < f->num_splits; i++) {
        cr_assert_eq(s->splits[i].count, f->splits[i].count);
        expect_same(s->splits[i].ids, f->splits[i].ids, (size_t)f->splits[i].count * 8, f->splits[i].name);
    }
}

/* Opened many times, so that the two sides meet at different files. */
Test(prefetch, a_served_open_holds_every_files_bytes_whoever_copied_it)
{
    char *data = make_dataset(), *copies = tu_path(dir, "copies");
    cr_assert_eq(mkdir(copies, 0700), 0);
    fs_dataset_t *files = tu_open_dataset(data);
    for (int round = 0; round < 24; round++) {
        fs_copy_opts_t copy = {.medium = round % 3 == 2 ? FS_COPY_FILE : FS_COPY_MEMFD, .dir = copies};
        fs_dataset_t *served;
        fs_error_t err = {0};
        cr_assert_eq(fs_dataset_open_served(data, &copy, 0, 2, &served, &err), FS_OK, "%s", err.msg);
        expect_served_equals_files(served, files);
        fs_dataset_close(served);
    }
    fs_dataset_close(files);
    free(data), free(copies);
}

static void flip_last_byte(const char *path)
{
    size_t n;
    char *b = tu_read(path, &n);
    b[n - 1] ^= 1;
    tu_write(path, b, n);
    free(b);
}

/* The same refusal as without copies made ahead: the file is named. */
Test(prefetch, a_corrupt_or_missing_file_is_refused_by_name)
{
    char *data = make_dataset();
    char *split = tu_path(data, "split_valid.npy"), *labels = tu_path(data, "labels.npy");
    flip_last_byte(split);
    for (int round = 0; round < 8; round++) {
        fs_dataset_t *ds;
        fs_error_t err = {0};
        cr_assert_eq(fs_dataset_open_served(data, NULL, 0, 2, &ds, &err), FS_ERR_FORMAT);
        cr_assert(strstr(err.msg, "split_valid.npy") && strstr(err.msg, "checksum mismatch"), "%s", err.msg);
    }
    flip_last_byte(split);
    cr_assert_eq(unlink(labels), 0);
    for (int round = 0; round < 8; round++) {
        fs_dataset_t *ds;
        fs_error_t err = {0};
        cr_assert_eq(fs_dataset_open_served(data, NULL, 0, 2, &ds, &err), FS_ERR_NOT_FOUND);
        cr_assert(strstr(err.msg, "labels.npy"), "%s", err.msg);
    }
    free(split), free(labels), free(data);
}

/* Entries of a /proc directory: the process's descriptors or its threads. */
static int entries(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    while (d && readdir(d)) n++;
    if (d) closedir(d);
    return n;
}

static int open_fds(void) { return entries("/proc/self/fd"); }
static int threads_now(void) { return entries("/proc/self/task"); }

static json_t *manifest_of(const char *data)
{
    char *path = tu_path(data, "manifest.json");
    json_t *m = json_load_file(path, 0, NULL);
    cr_assert(m);
    free(path);
    return m;
}

static fs_file_state_t state_of(const char *data, const char *file)
{
    char *path = tu_path(data, file);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    free(path);
    fs_file_state_t s;
    ds_file_state(&st, &s);
    return s;
}

/* Every copy made: the prefetch thread has finished (it exits once its
 * list is done). */
static void wait_for_copies(int threads_before)
{
    for (int i = 0; i < 1000 && threads_now() > threads_before; i++) usleep(10000);
    cr_assert_eq(threads_now(), threads_before, "the prefetch thread did not finish");
}

/* The copies are taken only for the file as the open saw it; what is not
 * taken (an open that failed first) is released. Pass 0 takes every copy,
 * pass 1 refuses each (its file changed), pass 2 takes none. */
Test(prefetch, a_copy_is_handed_out_only_for_the_file_the_open_saw)
{
    char *data = make_dataset();
    json_t *m = manifest_of(data);
    static const char *const files[] = {"indptr.npy", "indices.npy", "labels.npy", "split_train.npy",
                                        "split_valid.npy", "split_test.npy"};
    for (int changed = 0; changed < 3; changed++) {
        fs_dataset_t ds = {.version = 1};
        fs_error_t err = {0};
        open_ctx_t c = {.ds = &ds, .dir = data, .flags = FS_OPEN_COPY, .err = &err};
        cr_assert_eq(ds_copy_choose(NULL, &c.copy, &err), FS_OK, "%s", err.msg);
        int fds = open_fds(), threads = threads_now();
        ds_prefetch_t *p = ds_prefetch_start(&c, m);
        cr_assert(p);
        wait_for_copies(threads);
        for (size_t i = 0; changed < 2 && i < sizeof files / sizeof files[0]; i++) {
            fs_file_state_t seen = state_of(data, files[i]);
            seen.mtime_ns += changed; /* as if rewritten between the copy and the open */
            fs_mapping_t got = {.fd = -1};
            uint64_t hash = 0;
            int taken = ds_prefetch_take(p, files[i], &seen, &got, &hash);
            cr_assert_eq(taken, !changed, "%s", files[i]);
            cr_assert_eq(ds_prefetch_take(p, files[i], &seen, &got, &hash), 0, "%s is handed out once", files[i]);
            if (!taken) continue;
            char *path = tu_path(data, files[i]);
            size_t n;
            char *bytes = tu_read(path, &n);
            cr_assert_eq(got.len, n);
            expect_same(got.addr, bytes, n, files[i]);
            cr_assert_eq(hash, fs_hash64(bytes, n), "%s: the checksum of what was copied", files[i]);
            munmap(got.addr, got.len), close(got.fd);
            free(bytes), free(path);
        }
        cr_assert_eq(ds_prefetch_take(p, "table_feat.npy", &(fs_file_state_t){0}, &(fs_mapping_t){0}, &(uint64_t){0}),
                     0, "tables are not copied ahead");
        ds_prefetch_stop(p);
        cr_assert_eq(open_fds(), fds, "every copy not taken is released (pass %d)", changed);
    }
    json_decref(m);
    free(data);
}

/* A given memory budget checks each file before its copy, in order: nothing
 * is copied ahead of it, and a typed dataset's open copies its own files. */
Test(prefetch, nothing_is_copied_ahead_under_a_given_budget_or_of_other_opens)
{
    char *data = make_dataset();
    json_t *m = manifest_of(data);
    fs_dataset_t ds = {.version = 1};
    fs_error_t err = {0};
    open_ctx_t c = {.ds = &ds, .dir = data, .flags = FS_OPEN_COPY, .err = &err, .budget_given = 1};
    cr_assert_eq(ds_copy_choose(NULL, &c.copy, &err), FS_OK, "%s", err.msg);
    cr_assert_null(ds_prefetch_start(&c, m), "a given budget");
    c.budget_given = 0, ds.version = 2;
    cr_assert_null(ds_prefetch_start(&c, m), "a typed dataset");
    ds.version = 1, c.flags = 0;
    cr_assert_null(ds_prefetch_start(&c, m), "an open that copies nothing");
    json_decref(m);
    free(data);
}
