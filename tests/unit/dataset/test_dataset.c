/* test_dataset.c — native format: writer/reader round trip, atomic output,
 * and a clear error (file + offset) for every kind of malformed dataset. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset.h"
#include "fs_npy.h"
#include "test_util.h"
#include "writer.h"

/* 0->1,2  1->2  2->0  3 isolated */
static const int64_t IP[5] = {0, 2, 3, 4, 4};
static const int32_t IX[4] = {1, 2, 2, 0};

TU_SCRATCH_DIR
TestSuite(dataset, .init = setup, .fini = teardown);

static char *make_tiny(void)
{
    char *d = tu_path(dir, "ds");
    tu_make_dataset(d, 4, IP, IX, 3);
    return d;
}

Test(dataset, round_trip_all_roles)
{
    char *d = tu_path(dir, "full");
    fs_writer_t *w;
    fs_error_t err = {0};
    cr_assert_eq(fs_writer_create(d, 0, &w, &err), FS_OK, "%s", err.msg);
    int64_t *ip, *lab, *tr, shape[2] = {5, 2};
    int32_t *ix;
    float *wt;
    uint16_t *h, *bf;
    cr_assert_eq(fs_writer_array(w, FS_ROLE_INDPTR, NULL, FS_DTYPE_I64, 1, shape, (void **)&ip, &err), FS_OK);
    memcpy(ip, IP, sizeof IP);
    shape[0] = 4;
    cr_assert_eq(fs_writer_array(w, FS_ROLE_INDICES, NULL, FS_DTYPE_I32, 1, shape, (void **)&ix, &err), FS_OK);
    memcpy(ix, IX, sizeof IX);
    cr_assert_eq(fs_writer_array(w, FS_ROLE_EDGE_WEIGHTS, NULL, FS_DTYPE_F32, 1, shape, (void **)&wt, &err), FS_OK);
    for (int i = 0; i < 4; i++) wt[i] = 0.5f * (float)i;
    cr_assert_eq(fs_writer_array(w, FS_ROLE_FEATURES, "half", FS_DTYPE_F16, 2, shape, (void **)&h, &err), FS_OK);
    cr_assert_eq(fs_writer_array(w, FS_ROLE_FEATURES, "brain", FS_DTYPE_BF16, 2, shape, (void **)&bf, &err), FS_OK);
    for (int i = 0; i < 8; i++) h[i] = fs_f32_to_f16((float)i), bf[i] = fs_f32_to_bf16((float)-i);
    cr_assert_eq(fs_writer_array(w, FS_ROLE_LABELS, NULL, FS_DTYPE_I64, 1, shape, (void **)&lab, &err), FS_OK);
    lab[0] = 1, lab[1] = -1, lab[2] = 0, lab[3] = 1;
    shape[0] = 2;
    cr_assert_eq(fs_writer_array(w, FS_ROLE_SPLIT, "train", FS_DTYPE_I64, 1, shape, (void **)&tr, &err), FS_OK);
    tr[0] = 3, tr[1] = 0;
    cr_assert_eq(fs_writer_array(w, FS_ROLE_SPLIT, "train", FS_DTYPE_I64, 1, shape, (void **)&tr, &err), FS_ERR_EXISTS);
    fs_writer_set_meta(w, "full", 4, 4, 0, 2);
    cr_assert_eq(fs_writer_commit(w, &err), FS_OK, "%s", err.msg);

    fs_dataset_t *ds;
    cr_assert_eq(fs_dataset_open(d, FS_OPEN_VERIFY, 2, &ds, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(ds->num_nodes, 4);
    cr_assert_eq(ds->num_edges, 4);
    cr_assert_eq(ds->index_dtype, FS_DTYPE_I32);
    cr_assert_arr_eq(ds->indptr, IP, sizeof IP);
    cr_assert_arr_eq(ds->indices, IX, sizeof IX);
    cr_assert_float_eq(ds->edge_weights[3], 1.5f, 0);
    cr_assert_eq(fs_dataset_neighbor(ds, 3), 0);
    cr_assert_eq(ds->num_tables, 3, "half, brain and the labels");
    const fs_table_t *t = fs_dataset_table(ds, FS_LABELS_TABLE);
    cr_assert_eq(t->dtype, FS_DTYPE_I64);
    cr_assert_eq(t->dim, 1);
    cr_assert_eq(t->data, ds->labels);
    t = fs_dataset_table(ds, "half");
    cr_assert_eq(t->dtype, FS_DTYPE_F16);
    cr_assert_eq(t->row_bytes, 4);
    cr_assert_float_eq(fs_f16_to_f32(((const uint16_t *)t->data)[7]), 7.0f, 0);
    t = fs_dataset_table(ds, "brain");
    cr_assert_eq(t->dtype, FS_DTYPE_BF16);
    cr_assert_float_eq(fs_bf16_to_f32(((const uint16_t *)t->data)[5]), -5.0f, 0);
    cr_assert_null(fs_dataset_table(ds, "nope"));
    cr_assert_eq(ds->num_classes, 2);
    cr_assert_eq(ds->labels[1], -1);
    cr_assert_eq(fs_dataset_split(ds, "train")->count, 2);
    cr_assert_eq(fs_dataset_split(ds, "train")->ids[0], 3);
    cr_assert(ds->checksums_verified);
    fs_dataset_close(ds);
    free(d);
}

Test(dataset, writer_is_atomic_and_refuses_to_clobber)
{
    char *d = tu_path(dir, "atomic");
    fs_writer_t *w;
    fs_error_t err = {0};
    cr_assert_eq(fs_writer_create(d, 0, &w, &err), FS_OK);
    int64_t *ip, shape[1] = {1};
    cr_assert_eq(fs_writer_array(w, FS_ROLE_INDPTR, NULL, FS_DTYPE_I64, 1, shape, (void **)&ip, &err), FS_OK);
    struct stat st;
    cr_assert_neq(stat(d, &st), 0, "nothing at the destination before commit");
    fs_writer_abort(w);
    cr_assert_neq(stat(d, &st), 0);
    char *tmp = malloc(strlen(d) + 32);
    sprintf(tmp, "%s.tmp-%ld", d, (long)getpid());
    cr_assert_neq(stat(tmp, &st), 0, "abort removes the temporary directory");

    char *tiny = make_tiny();
    cr_assert_eq(fs_writer_create(tiny, 0, &w, &err), FS_ERR_EXISTS);
    cr_assert_not_null(strstr(err.msg, "--force"));
    char *plain = tu_path(dir, "not-a-dataset");
    mkdir(plain, 0755);
    cr_assert_eq(fs_writer_create(plain, 1, &w, &err), FS_ERR_EXISTS, "--force never deletes a non-dataset");
    free(tmp), free(tiny), free(plain), free(d);
}

/* Replaces dir/file with a .npy of the given dtype/shape and raw data. */
static void put_npy(const char *d, const char *file, fs_dtype_t dt, int ndim, const int64_t *shape, const void *data,
                    size_t len)
{
    char hdr[FS_NPY_WRITE_HEADER_LEN];
    fs_npy_format(hdr, dt, ndim, shape);
    char *p = tu_path(d, file), *buf = malloc(sizeof hdr + len);
    memcpy(buf, hdr, sizeof hdr);
    memcpy(buf + sizeof hdr, data, len);
    tu_write(p, buf, sizeof hdr + len);
    free(buf);
    free(p);
}

static void expect_open_error(const char *d, fs_status_t code, const char *file, const char *needle)
{
    fs_dataset_t *ds = NULL;
    fs_error_t err = {0};
    cr_assert_eq(fs_dataset_open(d, FS_OPEN_VERIFY, 2, &ds, &err), code, "got: %s", err.msg);
    cr_assert_null(ds);
    cr_assert_not_null(strstr(err.msg, file), "'%s' should name %s", err.msg, file);
    cr_assert_not_null(strstr(err.msg, needle), "'%s' should mention '%s'", err.msg, needle);
}

Test(dataset, non_monotone_indptr_names_offset)
{
    char *d = make_tiny();
    tu_strip_checksums(d);
    int64_t bad[5] = {0, 2, 1, 4, 4}, shape[1] = {5};
    put_npy(d, "indptr.npy", FS_DTYPE_I64, 1, shape, bad, sizeof bad);
    expect_open_error(d, FS_ERR_FORMAT, "indptr.npy", "not monotone at offset 1");
    free(d);
}

Test(dataset, out_of_range_index_names_offset)
{
    char *d = make_tiny();
    tu_strip_checksums(d);
    int32_t bad[4] = {1, 2, 9, 0};
    int64_t shape[1] = {4};
    put_npy(d, "indices.npy", FS_DTYPE_I32, 1, shape, bad, sizeof bad);
    expect_open_error(d, FS_ERR_FORMAT, "indices.npy", "offset 2 is 9");
    int32_t neg[4] = {1, 2, 2, -1};
    put_npy(d, "indices.npy", FS_DTYPE_I32, 1, shape, neg, sizeof neg);
    expect_open_error(d, FS_ERR_FORMAT, "indices.npy", "offset 3 is -1");
    free(d);
}

Test(dataset, wrong_dtype_and_shape)
{
    char *d = make_tiny();
    tu_strip_checksums(d);
    int32_t ip32[5] = {0, 2, 3, 4, 4};
    int64_t shape[2] = {5, 3};
    put_npy(d, "indptr.npy", FS_DTYPE_I32, 1, shape, ip32, sizeof ip32);
    expect_open_error(d, FS_ERR_FORMAT, "indptr.npy", "must be int64");
    put_npy(d, "indptr.npy", FS_DTYPE_I64, 1, shape, IP, sizeof IP);
    double feat[12] = {0};
    shape[0] = 4;
    put_npy(d, "table_feat.npy", FS_DTYPE_F64, 2, shape, feat, sizeof feat);
    expect_open_error(d, FS_ERR_FORMAT, "table_feat.npy", "float64");
    float f3[9] = {0};
    shape[0] = 3;
    put_npy(d, "table_feat.npy", FS_DTYPE_F32, 2, shape, f3, sizeof f3);
    expect_open_error(d, FS_ERR_FORMAT, "table_feat.npy", "4 rows");
    free(d);
}

Test(dataset, truncated_empty_missing_and_bad_header)
{
    char *d = make_tiny();
    tu_strip_checksums(d);
    char *p = tu_path(d, "table_feat.npy");
    cr_assert_eq(truncate(p, 128 + 20), 0);
    expect_open_error(d, FS_ERR_FORMAT, "table_feat.npy", "truncated");
    cr_assert_eq(truncate(p, 0), 0);
    expect_open_error(d, FS_ERR_FORMAT, "table_feat.npy", "empty file");
    static const char cut_header[] = "\x93NUMPY\x01\x00\xff\x00{'descr'";
    tu_write(p, cut_header, sizeof cut_header - 1);
    expect_open_error(d, FS_ERR_FORMAT, "table_feat.npy", "truncated npy header");
    static const char zip_magic[] = "PK\x03\x04 definitely not numpy";
    tu_write(p, zip_magic, sizeof zip_magic - 1);
    expect_open_error(d, FS_ERR_FORMAT, "table_feat.npy", "bad magic");
    unlink(p);
    expect_open_error(d, FS_ERR_NOT_FOUND, "table_feat.npy", "cannot open");
    free(p);
    free(d);
}

Test(dataset, manifest_problems)
{
    char *d = make_tiny(), *m = tu_path(d, "manifest.json");
    const char *cut = "{\"format\": \"featstore-dataset\", \"version\": 1,";
    tu_write(m, cut, strlen(cut));
    expect_open_error(d, FS_ERR_FORMAT, "manifest.json", "line");
    const char *v7 = "{\"format\": \"featstore-dataset\", \"version\": 7}";
    tu_write(m, v7, strlen(v7));
    expect_open_error(d, FS_ERR_UNSUPPORTED, "manifest.json", "version 7");
    const char *escape = "{\"format\": \"featstore-dataset\", \"version\": 1, \"num_nodes\": 4, \"num_edges\": 4,"
                         " \"topology\": {\"indptr\": \"../../etc/passwd\", \"indices\": \"indices.npy\"}}";
    tu_write(m, escape, strlen(escape));
    expect_open_error(d, FS_ERR_FORMAT, "manifest.json", "plain names");
    unlink(m);
    expect_open_error(d, FS_ERR_NOT_FOUND, "manifest.json", "featstore dataset");
    free(m);
    free(d);
}

Test(dataset, checksums_catch_silent_corruption)
{
    char *d = make_tiny(), *p = tu_path(d, "table_feat.npy");
    size_t len;
    char *buf = tu_read(p, &len);
    buf[len - 5] ^= 0x40; /* still a valid float: only the checksum can tell */
    tu_write(p, buf, len);
    expect_open_error(d, FS_ERR_FORMAT, "table_feat.npy", "checksum mismatch");
    fs_dataset_t *ds;
    fs_error_t err = {0};
    cr_assert_eq(fs_dataset_open(d, 0, 1, &ds, &err), FS_OK, "without verify the structure is still fine");
    cr_assert_eq(ds->checksums_verified, 0);
    fs_dataset_close(ds);
    cr_assert_eq(truncate(p, (off_t)len - 4), 0);
    cr_assert_eq(fs_dataset_open(d, 0, 1, &ds, &err), FS_ERR_FORMAT, "size is checked even without verify");
    cr_assert_not_null(strstr(err.msg, "table_feat.npy"));
    free(buf), free(p), free(d);
}

Test(dataset, labels_and_splits_are_range_checked)
{
    char *d = tu_path(dir, "lab");
    fs_writer_t *w;
    fs_error_t err = {0};
    int64_t *ip, *lab, *sp, shape[1] = {3};
    cr_assert_eq(fs_writer_create(d, 0, &w, &err), FS_OK);
    cr_assert_eq(fs_writer_array(w, FS_ROLE_INDPTR, NULL, FS_DTYPE_I64, 1, shape, (void **)&ip, &err), FS_OK);
    shape[0] = 0;
    int32_t *ix;
    cr_assert_eq(fs_writer_array(w, FS_ROLE_INDICES, NULL, FS_DTYPE_I32, 1, shape, (void **)&ix, &err), FS_OK);
    shape[0] = 2;
    cr_assert_eq(fs_writer_array(w, FS_ROLE_LABELS, NULL, FS_DTYPE_I64, 1, shape, (void **)&lab, &err), FS_OK);
    lab[0] = 0, lab[1] = 5;
    cr_assert_eq(fs_writer_array(w, FS_ROLE_SPLIT, "test", FS_DTYPE_I64, 1, shape, (void **)&sp, &err), FS_OK);
    sp[0] = 1, sp[1] = 2;
    fs_writer_set_meta(w, "lab", 2, 0, 0, 3);
    cr_assert_eq(fs_writer_commit(w, &err), FS_OK, "%s", err.msg);
    expect_open_error(d, FS_ERR_FORMAT, "labels.npy", "offset 1 is 5");
    free(d);
}

Test(dataset, a_feature_table_named_labels_is_refused_when_labelled)
{
    char *d = tu_path(dir, "clash");
    fs_writer_t *w;
    fs_error_t err = {0};
    int64_t *ip, *lab, shape[2] = {3, 2};
    int32_t *ix;
    float *f;
    cr_assert_eq(fs_writer_create(d, 0, &w, &err), FS_OK);
    cr_assert_eq(fs_writer_array(w, FS_ROLE_INDPTR, NULL, FS_DTYPE_I64, 1, shape, (void **)&ip, &err), FS_OK);
    shape[0] = 0;
    cr_assert_eq(fs_writer_array(w, FS_ROLE_INDICES, NULL, FS_DTYPE_I32, 1, shape, (void **)&ix, &err), FS_OK);
    shape[0] = 2;
    cr_assert_eq(fs_writer_array(w, FS_ROLE_FEATURES, "labels", FS_DTYPE_F32, 2, shape, (void **)&f, &err), FS_OK);
    cr_assert_eq(fs_writer_array(w, FS_ROLE_LABELS, NULL, FS_DTYPE_I64, 1, shape, (void **)&lab, &err), FS_OK);
    lab[0] = 0, lab[1] = 1;
    fs_writer_set_meta(w, "clash", 2, 0, 0, 2);
    cr_assert_eq(fs_writer_commit(w, &err), FS_OK, "%s", err.msg);
    expect_open_error(d, FS_ERR_FORMAT, "manifest.json", "reserved for the labels");
    free(d);
}

/* The tiny graph with edge weights w[4]. */
static char *make_weighted(const char *name, const float *w)
{
    char *d = tu_path(dir, name);
    fs_writer_t *wr;
    fs_error_t err = {0};
    int64_t *ip, shape[1] = {5};
    int32_t *ix;
    float *wt;
    cr_assert_eq(fs_writer_create(d, 0, &wr, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_writer_array(wr, FS_ROLE_INDPTR, NULL, FS_DTYPE_I64, 1, shape, (void **)&ip, &err), FS_OK);
    memcpy(ip, IP, sizeof IP);
    shape[0] = 4;
    cr_assert_eq(fs_writer_array(wr, FS_ROLE_INDICES, NULL, FS_DTYPE_I32, 1, shape, (void **)&ix, &err), FS_OK);
    memcpy(ix, IX, sizeof IX);
    cr_assert_eq(fs_writer_array(wr, FS_ROLE_EDGE_WEIGHTS, NULL, FS_DTYPE_F32, 1, shape, (void **)&wt, &err), FS_OK);
    memcpy(wt, w, 4 * sizeof *w);
    fs_writer_set_meta(wr, name, 4, 4, 0, 0);
    cr_assert_eq(fs_writer_commit(wr, &err), FS_OK, "%s", err.msg);
    return d;
}

Test(dataset, nan_infinite_and_negative_edge_weights_are_refused)
{
    const float ok[4] = {0, 1, 2.5f, 0}, nan[4] = {1, 1, NAN, 1}, inf[4] = {1, INFINITY, 1, 1},
                neg[4] = {1, 1, 1, -0.5f};
    char *d = make_weighted("ok", ok);
    fs_dataset_t *ds;
    fs_error_t err = {0};
    cr_assert_eq(fs_dataset_open(d, FS_OPEN_VERIFY, 2, &ds, &err), FS_OK, "%s", err.msg);
    fs_dataset_close(ds);
    free(d);
    d = make_weighted("nan", nan);
    expect_open_error(d, FS_ERR_FORMAT, "edge_weights", "offset 2 is nan");
    free(d);
    d = make_weighted("inf", inf);
    expect_open_error(d, FS_ERR_FORMAT, "edge_weights", "offset 1 is inf");
    free(d);
    d = make_weighted("neg", neg);
    expect_open_error(d, FS_ERR_FORMAT, "edge_weights", "offset 3 is -0.5");
    free(d);
}
