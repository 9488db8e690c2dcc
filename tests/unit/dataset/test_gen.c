/* test_gen.c — the R-MAT generator: byte-identical output for a seed
 * whatever the thread count, power-law skew, the edge options, and features
 * that carry their label. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "gen.h"
#include "test_util.h"

TU_SCRATCH_DIR
TestSuite(gen, .init = setup, .fini = teardown, .timeout = 300);

static fs_dataset_t *gen(const char *name, fs_rmat_opts_t o)
{
    char *out = tu_path(dir, name);
    o.out_dir = out;
    fs_error_t err = {0};
    cr_assert_eq(fs_gen_rmat(&o, &err), FS_OK, "%s", err.msg);
    fs_dataset_t *ds;
    cr_assert_eq(fs_dataset_open(out, FS_OPEN_VERIFY, 2, &ds, &err), FS_OK, "%s", err.msg);
    free(out);
    return ds;
}

static fs_rmat_opts_t small(void)
{
    fs_rmat_opts_t o;
    fs_rmat_defaults(&o);
    o.scale = 12;
    o.edge_factor = 8;
    o.dim = 16;
    return o;
}

Test(gen, same_seed_same_bytes_any_thread_count)
{
    fs_rmat_opts_t o = small();
    o.threads = 1;
    fs_dataset_close(gen("a", o));
    o.threads = 2;
    fs_dataset_close(gen("b", o));
    o.seed = 2;
    fs_dataset_close(gen("c", o));
    const char *files[] = {"manifest.json", "indptr.npy", "indices.npy", "table_feat.npy", "labels.npy",
                           "split_train.npy", "split_valid.npy", "split_test.npy"};
    char *a = tu_path(dir, "a"), *b = tu_path(dir, "b"), *c = tu_path(dir, "c");
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char *x = tu_path(a, files[i]), *y = tu_path(b, files[i]), *z = tu_path(c, files[i]);
        cr_assert(tu_files_equal(x, y), "%s differs between 1 and 2 threads", files[i]);
        if (strcmp(files[i], "manifest.json") != 0 && strstr(files[i], "indptr") == NULL)
            cr_assert_not(tu_files_equal(x, z), "%s is the same under another seed", files[i]);
        free(x), free(y), free(z);
    }
    free(a), free(b), free(c);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int64_t *sorted_degrees(const fs_dataset_t *ds)
{
    int64_t *d = malloc((size_t)ds->num_nodes * sizeof *d);
    for (int64_t v = 0; v < ds->num_nodes; v++) d[v] = ds->indptr[v + 1] - ds->indptr[v];
    qsort(d, (size_t)ds->num_nodes, sizeof *d, cmp_i64);
    return d;
}

Test(gen, degree_distribution_is_skewed)
{
    fs_rmat_opts_t o = small();
    o.scale = 15;
    o.edge_factor = 16;
    o.dim = 0;
    fs_dataset_t *ds = gen("skew", o);
    cr_assert_eq(ds->num_nodes, 1 << 15);
    cr_assert_eq(ds->num_edges, 16 << 15);
    int64_t *d = sorted_degrees(ds), first = 0;
    while (d[first] == 0) first++;
    int64_t median = d[first + (ds->num_nodes - first) / 2], max = d[ds->num_nodes - 1];
    cr_assert_gt(max, 50 * median, "max degree %lld vs median (non-isolated) %lld", (long long)max, (long long)median);
    free(d);
    fs_dataset_close(ds);
}

static int has_edge(const fs_dataset_t *ds, int64_t u, int64_t v)
{
    int64_t lo = ds->indptr[u], hi = ds->indptr[u + 1];
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2, x = fs_dataset_neighbor(ds, mid);
        if (x == v) return 1;
        if (x < v) lo = mid + 1;
        else hi = mid;
    }
    return 0;
}

Test(gen, symmetrize_dedup_no_self_loops)
{
    fs_rmat_opts_t o = small();
    o.edges = (fs_edge_opts_t){.symmetrize = 1, .dedup = 1, .drop_self_loops = 1};
    fs_dataset_t *ds = gen("sym", o);
    cr_assert(ds->symmetric);
    for (int64_t u = 0; u < ds->num_nodes; u++)
        for (int64_t i = ds->indptr[u]; i < ds->indptr[u + 1]; i++) {
            int64_t v = fs_dataset_neighbor(ds, i);
            cr_assert_neq(u, v, "self-loop at %lld", (long long)u);
            if (i > ds->indptr[u]) cr_assert_gt(v, fs_dataset_neighbor(ds, i - 1), "row %lld not strictly sorted", (long long)u);
            cr_assert(has_edge(ds, v, u), "(%lld,%lld) without its reverse", (long long)u, (long long)v);
        }
    fs_dataset_close(ds);
}

Test(gen, permute_relabels_without_changing_degrees)
{
    fs_rmat_opts_t o = small();
    fs_dataset_t *a = gen("plain", o);
    o.permute = 1;
    fs_dataset_t *b = gen("perm", o);
    int64_t *da = sorted_degrees(a), *db = sorted_degrees(b);
    cr_assert_arr_eq(da, db, (size_t)a->num_nodes * sizeof *da, "same degree multiset");
    cr_assert_eq(a->indptr[1] - a->indptr[0], da[a->num_nodes - 1], "unpermuted R-MAT: node 0 is the hub");
    cr_assert_neq(b->indptr[1] - b->indptr[0], db[b->num_nodes - 1], "permuted: the hub moved");
    free(da), free(db);
    fs_dataset_close(a);
    fs_dataset_close(b);
}

Test(gen, half_tables_are_rounded_float32_tables)
{
    fs_rmat_opts_t o = small();
    fs_dataset_t *f = gen("f32", o);
    o.dtype = FS_DTYPE_F16;
    fs_dataset_t *h = gen("f16", o);
    o.dtype = FS_DTYPE_BF16;
    fs_dataset_t *b = gen("bf16", o);
    const float *x = fs_dataset_table(f, "feat")->data;
    const uint16_t *xh = fs_dataset_table(h, "feat")->data, *xb = fs_dataset_table(b, "feat")->data;
    cr_assert_eq(fs_dataset_table(b, "feat")->dtype, FS_DTYPE_BF16);
    for (int64_t i = 0; i < f->num_nodes * 16; i++) {
        cr_assert_eq(xh[i], fs_f32_to_f16(x[i]));
        cr_assert_eq(xb[i], fs_f32_to_bf16(x[i]));
    }
    fs_dataset_close(f), fs_dataset_close(h), fs_dataset_close(b);
}

Test(gen, features_carry_the_label)
{
    fs_rmat_opts_t o = small();
    fs_dataset_t *ds = gen("sig", o);
    const float *x = fs_dataset_table(ds, "feat")->data;
    double on = 0, off = 0;
    for (int64_t v = 0; v < ds->num_nodes; v++) {
        int64_t l = ds->labels[v];
        cr_assert(l >= 0 && l < 16);
        on += x[v * 16 + l];
        off += x[v * 16 + (l + 1) % 16];
    }
    on /= (double)ds->num_nodes, off /= (double)ds->num_nodes;
    cr_assert_gt(on - off, 0.8, "signal %.3f vs %.3f", on, off);
    fs_dataset_close(ds);
}

Test(gen, rejects_bad_options)
{
    fs_rmat_opts_t o = small();
    o.out_dir = "/dev/null/never"; /* a parent that is not a directory: cannot be made, even as root */
    fs_error_t err = {0};
    o.scale = 0;
    cr_assert_eq(fs_gen_rmat(&o, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "--scale"));
    o = small();
    o.out_dir = "/dev/null/never"; /* a parent that is not a directory: cannot be made, even as root */
    o.a = 0.9;
    cr_assert_eq(fs_gen_rmat(&o, &err), FS_ERR_INVALID_ARGUMENT);
    o = small();
    o.out_dir = "/dev/null/never"; /* a parent that is not a directory: cannot be made, even as root */
    cr_assert_eq(fs_gen_rmat(&o, &err), FS_ERR_IO, "%s", err.msg);
}
