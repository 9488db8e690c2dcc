/* test_scans.c — the checks a dataset's open runs over its large arrays
 * (dataset/dataset.c: neighbour ids in range, indptr monotone, weights
 * finite and non-negative) test blocks of 4096 elements branch-free and
 * search only a block that holds a bad one: the error must still name the
 * first bad offset, whether it lies in a full block, in the short last
 * one, or behind a later bad one in another thread's range, on one thread
 * and on several. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataset.h"
#include "fs_npy.h"
#include "test_util.h"
#include "writer.h"

#define N 10000       /* nodes: indptr has 10001 entries, two full blocks and a short one */
#define DEG 5         /* E = 50000 edges: 12 full blocks and a short one */
#define E ((int64_t)N * DEG)

TU_SCRATCH_DIR

TestSuite(scans, .init = setup, .fini = teardown, .timeout = 60);

/* A valid weighted graph; its files' paths. */
static char *make(const char *name, fs_dtype_t index_dtype)
{
    char *out = tu_path(dir, name);
    fs_writer_t *w;
    fs_error_t err = {0};
    cr_assert_eq(fs_writer_create(out, 0, &w, &err), FS_OK, "%s", err.msg);
    int64_t *ip, shape[1] = {N + 1};
    cr_assert_eq(fs_writer_array(w, FS_ROLE_INDPTR, NULL, FS_DTYPE_I64, 1, shape, (void **)&ip, &err), FS_OK);
    for (int64_t v = 0; v <= N; v++) ip[v] = v * DEG;
    void *ix;
    float *wt;
    shape[0] = E;
    cr_assert_eq(fs_writer_array(w, FS_ROLE_INDICES, NULL, index_dtype, 1, shape, &ix, &err), FS_OK);
    cr_assert_eq(fs_writer_array(w, FS_ROLE_EDGE_WEIGHTS, NULL, FS_DTYPE_F32, 1, shape, (void **)&wt, &err), FS_OK);
    for (int64_t k = 0; k < E; k++) {
        int64_t u = (k * 7919) % N;
        if (index_dtype == FS_DTYPE_I32) ((int32_t *)ix)[k] = (int32_t)u;
        else ((int64_t *)ix)[k] = u;
        wt[k] = (float)(k % 13) * 0.5f;
    }
    fs_writer_set_meta(w, name, N, E, 0, 0);
    cr_assert_eq(fs_writer_commit(w, &err), FS_OK, "%s", err.msg);
    return out;
}

/* Element `at` of the array in dir/file (header included in the file) set to bytes v. */
static void poke(const char *data, const char *file, int64_t at, const void *v, size_t size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", data, file);
    int fd = open(path, O_WRONLY);
    cr_assert_geq(fd, 0, "%s", path);
    cr_assert_eq(pwrite(fd, v, size, FS_NPY_WRITE_HEADER_LEN + at * (off_t)size), (ssize_t)size);
    close(fd);
}

/* The open's error on 1 and on 3 threads: the same, naming `want`. */
static void refused(const char *data, const char *want)
{
    for (int threads = 1; threads <= 3; threads += 2) {
        fs_dataset_t *ds = NULL;
        fs_error_t err = {0};
        cr_assert_eq(fs_dataset_open(data, 0, threads, &ds, &err), FS_ERR_FORMAT, "%d threads", threads);
        cr_assert(strstr(err.msg, want), "%d threads: '%s' does not say '%s'", threads, err.msg, want);
    }
}

static void poke_i32(const char *data, int64_t at, int32_t v) { poke(data, "indices.npy", at, &v, sizeof v); }

Test(scans, an_out_of_range_id_is_named_by_its_first_offset)
{
    char *data = make("g", FS_DTYPE_I32);
    fs_dataset_t *ds;
    fs_error_t err = {0};
    cr_assert_eq(fs_dataset_open(data, 0, 2, &ds, &err), FS_OK, "%s", err.msg);
    fs_dataset_close(ds);
    poke_i32(data, 45000, -1);    /* in a later block, another thread's */
    poke_i32(data, 20000, N);     /* the first: mid-way through a full block */
    refused(data, "at offset 20000 is 10000, outside [0, 10000)");
    poke_i32(data, 20000, 7);
    refused(data, "at offset 45000 is -1, outside [0, 10000)");
    poke_i32(data, 45000, 7);
    poke_i32(data, E - 1, N + 5); /* the short last block */
    refused(data, "at offset 49999 is 10005");
    poke_i32(data, E - 1, 7);
    poke_i32(data, 4096, INT32_MIN); /* a block's first element */
    refused(data, "at offset 4096 is -2147483648");
    free(data);
}

Test(scans, sixty_four_bit_ids_too)
{
    char *data = make("g64", FS_DTYPE_I64);
    int64_t big = (int64_t)1 << 40;
    poke(data, "indices.npy", 30000, &big, sizeof big);
    poke(data, "indices.npy", 40000, &big, sizeof big);
    refused(data, "at offset 30000 is 1099511627776");
    free(data);
}

Test(scans, indptr_and_weights_name_their_first_bad_offset)
{
    char *data = make("gw", FS_DTYPE_I32);
    int64_t down = 5; /* indptr[9000] = 5 < indptr[8999]: not monotone at 8999 */
    poke(data, "indptr.npy", 9000, &down, sizeof down);
    refused(data, "indptr is not monotone at offset 8999");
    int64_t back = 9000 * DEG;
    poke(data, "indptr.npy", 9000, &back, sizeof back);
    float nan = NAN, neg = -1.0f;
    poke(data, "edge_weights.npy", 33333, &nan, sizeof nan);
    poke(data, "edge_weights.npy", 40000, &neg, sizeof neg);
    refused(data, "33333");
    free(data);
}
