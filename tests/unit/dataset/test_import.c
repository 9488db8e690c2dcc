/* test_import.c — each importer on small fixtures (and Cora), every option
 * checked against the expected CSR, and every kind of bad input answered
 * with a clear error. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>
#include <zlib.h>

#include "dataset.h"
#include "id_census.h"
#include "import.h"
#include "fs_npy.h"
#include "test_util.h"

TU_SCRATCH_DIR
static int serial;
TestSuite(import, .init = setup, .fini = teardown);

static fs_import_opts_t opts(void)
{
    fs_import_opts_t o = {.threads = 2, .split_pct = {60, 20, 20}, .seed = 1};
    char name[32];
    snprintf(name, sizeof name, "out%d", serial++);
    o.out_dir = tu_path(dir, name);
    return o;
}

static char *put_text(const char *name, const char *text)
{
    char *p = tu_path(dir, name);
    tu_write(p, text, strlen(text));
    return p;
}

static char *put_gzip(const char *name, const char *text, size_t len)
{
    char *p = tu_path(dir, name);
    gzFile g = gzopen(p, "wb");
    gzwrite(g, text, (unsigned)len);
    gzclose(g);
    return p;
}

static fs_dataset_t *open_ok(const char *d)
{
    fs_dataset_t *ds;
    fs_error_t err = {0};
    cr_assert_eq(fs_dataset_open(d, FS_OPEN_VERIFY, 2, &ds, &err), FS_OK, "%s", err.msg);
    return ds;
}

static void expect_row(const fs_dataset_t *ds, int64_t v, const int64_t *want, int64_t n)
{
    int64_t b = ds->indptr[v], e = ds->indptr[v + 1];
    cr_assert_eq(e - b, n, "row %lld has %lld neighbours, want %lld", (long long)v, (long long)(e - b), (long long)n);
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(fs_dataset_neighbor(ds, b + i), want[i], "row %lld[%lld]", (long long)v, (long long)i);
}

static fs_dataset_t *import_text(const char *text, fs_import_opts_t o)
{
    char *in = put_text("in.txt", text);
    fs_error_t err = {0};
    cr_assert_eq(fs_import_edgelist(in, &o, &err), FS_OK, "%s", err.msg);
    free(in);
    return open_ok(o.out_dir);
}

Test(import, edgelist_comments_separators_and_extra_columns)
{
    fs_dataset_t *ds = import_text("# SNAP header\n% matrix-market style\n0 2\n0\t1\n\n2,1\n1 0 1234567\n", opts());
    cr_assert_eq(ds->num_nodes, 3);
    cr_assert_eq(ds->num_edges, 4);
    expect_row(ds, 0, (int64_t[]){1, 2}, 2); /* rows come out sorted */
    expect_row(ds, 1, (int64_t[]){0}, 1);
    expect_row(ds, 2, (int64_t[]){1}, 1);
    cr_assert_null(ds->edge_weights);
    cr_assert_eq(fs_dataset_split(ds, "train")->count + fs_dataset_split(ds, "valid")->count +
                     fs_dataset_split(ds, "test")->count, 3);
    fs_dataset_close(ds);
}

Test(import, edgelist_symmetrize_dedup_drop_self_loops)
{
    fs_import_opts_t o = opts();
    o.edges = (fs_edge_opts_t){.symmetrize = 1, .dedup = 1, .drop_self_loops = 1};
    fs_dataset_t *ds = import_text("0 1\n1 0\n0 1\n3 3\n", o);
    cr_assert_eq(ds->num_nodes, 4, "a node seen only in a dropped self-loop still exists");
    cr_assert_eq(ds->num_edges, 2);
    cr_assert(ds->symmetric);
    expect_row(ds, 0, (int64_t[]){1}, 1);
    expect_row(ds, 1, (int64_t[]){0}, 1);
    expect_row(ds, 3, NULL, 0);
    fs_dataset_close(ds);

    o = opts(); /* without dedup the multigraph is kept */
    o.edges = (fs_edge_opts_t){.symmetrize = 1};
    ds = import_text("0 1\n1 0\n2 2\n", o);
    expect_row(ds, 0, (int64_t[]){1, 1}, 2);
    expect_row(ds, 2, (int64_t[]){2}, 1);
    fs_dataset_close(ds);
}

Test(import, edgelist_reverse_and_compact_ids)
{
    fs_import_opts_t o = opts();
    o.edges.reverse = 1;
    fs_dataset_t *ds = import_text("0 1\n0 2\n", o);
    expect_row(ds, 0, NULL, 0);
    expect_row(ds, 1, (int64_t[]){0}, 1);
    expect_row(ds, 2, (int64_t[]){0}, 1);
    fs_dataset_close(ds);

    o = opts();
    o.edges.compact_ids = 1;
    ds = import_text("100 7\n7 5000000000\n", o);
    cr_assert_eq(ds->num_nodes, 3);
    cr_assert_not_null(ds->node_ids);
    cr_assert_eq(ds->node_ids[0], 7);
    cr_assert_eq(ds->node_ids[1], 100);
    cr_assert_eq(ds->node_ids[2], 5000000000LL);
    expect_row(ds, 1, (int64_t[]){0}, 1); /* 100 -> 7 */
    expect_row(ds, 0, (int64_t[]){2}, 1); /* 7 -> 5e9 */
    fs_dataset_close(ds);
}

Test(import, edgelist_weights_are_merged_on_dedup)
{
    fs_import_opts_t o = opts();
    o.weighted = 1;
    o.edges.dedup = 1;
    fs_dataset_t *ds = import_text("0 1 0.5\n1 0 2\n0 1 0.25\n0 2 1e-3\n", o);
    cr_assert_not_null(ds->edge_weights);
    expect_row(ds, 0, (int64_t[]){1, 2}, 2);
    cr_assert_float_eq(ds->edge_weights[0], 0.75f, 1e-7);
    cr_assert_float_eq(ds->edge_weights[1], 1e-3f, 1e-9);
    cr_assert_float_eq(ds->edge_weights[2], 2.0f, 0);
    fs_dataset_close(ds);
}

Test(import, edgelist_gzip_equals_plain)
{
    const char *text = "# g\n5 1\n1 2\n2 5\n0 5\n";
    fs_import_opts_t a = opts(), b = opts();
    char *plain = put_text("e.txt", text), *gz = put_gzip("e.txt.gz", text, strlen(text));
    fs_error_t err = {0};
    cr_assert_eq(fs_import_edgelist(plain, &a, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_import_edgelist(gz, &b, &err), FS_OK, "%s", err.msg);
    const char *files[] = {"indptr.npy", "indices.npy", "split_train.npy"};
    for (int i = 0; i < 3; i++) {
        char *x = tu_path(a.out_dir, files[i]), *y = tu_path(b.out_dir, files[i]);
        cr_assert(tu_files_equal(x, y), "%s differs", files[i]);
        free(x), free(y);
    }
    free(plain), free(gz);
}

static void expect_edgelist_error(const char *path, fs_status_t code, const char *needle)
{
    fs_import_opts_t o = opts();
    fs_error_t err = {0};
    cr_assert_eq(fs_import_edgelist(path, &o, &err), code, "%s: %s", path, err.msg);
    cr_assert_not_null(strstr(err.msg, needle), "'%s' should mention '%s'", err.msg, needle);
    cr_assert_eq(access(o.out_dir, F_OK), -1, "no output after a failed import");
}

Test(import, edgelist_bad_input_is_a_clear_error)
{
    char *p;
    expect_edgelist_error(p = put_text("tok.txt", "0 1\n0 x\n"), FS_ERR_FORMAT, "tok.txt:2");
    free(p);
    expect_edgelist_error(p = put_text("neg.txt", "0 1\n-3 1\n"), FS_ERR_FORMAT, "negative");
    free(p);
    expect_edgelist_error(p = put_text("empty.txt", ""), FS_ERR_FORMAT, "no edges");
    free(p);
    expect_edgelist_error(p = put_text("comments.txt", "# nothing\n# here\n"), FS_ERR_FORMAT, "no edges");
    free(p);
    expect_edgelist_error(p = put_text("big.txt", "0 99999999999999999999\n"), FS_ERR_FORMAT, "big.txt:1");
    free(p);
    expect_edgelist_error(p = put_text("fake.gz", "0 1\n"), FS_ERR_FORMAT, "not gzip");
    free(p);
    p = tu_path(dir, "missing.txt");
    expect_edgelist_error(p, FS_ERR_NOT_FOUND, "missing.txt");
    free(p);
    fs_import_opts_t o = opts();
    o.weighted = 1;
    fs_error_t err = {0};
    p = put_text("w.txt", "0 1 0.5\n1 2\n");
    cr_assert_eq(fs_import_edgelist(p, &o, &err), FS_ERR_FORMAT);
    cr_assert_not_null(strstr(err.msg, "w.txt:2"), "%s", err.msg);
    free(p);
}

/* Entries of the scratch directory whose names start with prefix. */
static int entries_named(const char *prefix)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

/* The file: 2 edges, one id 10^9. As given it would be 10^9 + 1
 * nodes (15 GB); it is refused before anything per id exists, naming the
 * way out, and leaves nothing behind (not even the writer's scratch). */
Test(import, edgelist_sparse_ids_are_refused_before_anything_is_written)
{
    char *p = put_text("sparse.txt", "1000000000 5\n5 7\n");
    fs_import_opts_t o = opts();
    fs_error_t err = {0};
    cr_assert_eq(fs_import_edgelist(p, &o, &err), FS_ERR_INVALID_ARGUMENT, "%s", err.msg);
    const char *want[] = {"sparse.txt", "--compact-ids", "--dense-ids", "1000000001 nodes", "about 3 distinct ids",
                          "14.9 GiB of files", "for 2 edges"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        cr_assert_not_null(strstr(err.msg, want[i]), "'%s' should say '%s'", err.msg, want[i]);
    cr_assert_eq(access(o.out_dir, F_OK), -1, "no output directory after the refusal");
    cr_assert_eq(entries_named(o.out_dir + strlen(dir) + 1), 0, "no scratch directory left beside it");

    o = opts(); /* renumbered, the same file is 3 nodes */
    o.edges.compact_ids = 1;
    fs_dataset_t *ds = import_text("1000000000 5\n5 7\n", o);
    cr_assert_eq(ds->num_nodes, 3);
    fs_dataset_close(ds);
    free(p);
}

/* --dense-ids keeps sparse ids as given; below the rule's 10^6 nodes, or
 * with ids at least a quarter dense, nothing is refused. */
Test(import, edgelist_dense_ids_keeps_sparse_ids_as_given)
{
    fs_import_opts_t o = opts();
    o.dense_ids = 1;
    fs_dataset_t *ds = import_text("0 2000000\n2000000 3\n", o);
    cr_assert_eq(ds->num_nodes, 2000001);
    expect_row(ds, 0, (int64_t[]){2000000}, 1);
    expect_row(ds, 2000000, (int64_t[]){3}, 1);
    expect_row(ds, 1999999, NULL, 0);
    cr_assert_null(ds->node_ids);
    fs_dataset_close(ds);

    ds = import_text("0 999999\n", opts()); /* 10^6 nodes: not more than the rule's minimum */
    cr_assert_eq(ds->num_nodes, 1000000);
    fs_dataset_close(ds);
}

/* The distinct-id estimate: near-exact for few ids, within 2% for many,
 * whatever their spread; the rule compares it with the largest id. */
Test(import, id_census_counts_distinct_ids)
{
    static const int64_t counts[] = {1, 3, 1000, 30000, 300000};
    for (size_t k = 0; k < sizeof counts / sizeof *counts; k++) {
        fs_id_census_t c;
        fs_id_census_init(&c);
        for (int64_t i = 0; i < counts[k]; i++) {
            fs_id_census_add(&c, i * 7919 + 11);
            fs_id_census_add(&c, i * 7919 + 11); /* seen twice, counted once */
        }
        int64_t got = fs_id_census_distinct(&c), want = counts[k];
        cr_assert(llabs(got - want) <= (want < 100 ? 0 : want / 50), "%lld distinct ids estimated as %lld",
                  (long long)want, (long long)got);
        cr_assert_eq(c.max_id, (want - 1) * 7919 + 11);
        cr_assert_eq(fs_ids_too_sparse(&c), want * 7919 > FS_SPARSE_IDS_MIN_NODES, "%lld ids", (long long)want);
    }
    fs_id_census_t dense;
    fs_id_census_init(&dense);
    for (int64_t i = 0; i < 2000000; i += 3) fs_id_census_add(&dense, i); /* a third of the ids: kept */
    cr_assert_not(fs_ids_too_sparse(&dense));
}

Test(import, corrupt_and_truncated_gzip)
{
    char text[8192];
    size_t n = 0;
    for (int i = 0; i < 600; i++) n += (size_t)sprintf(text + n, "%d %d\n", i, (i * 7) % 600);
    char *gz = put_gzip("ok.gz", text, n);
    size_t len;
    char *bytes = tu_read(gz, &len);
    char *trunc = tu_path(dir, "trunc.gz"), *bad = tu_path(dir, "bad.gz");
    tu_write(trunc, bytes, len / 2);
    for (size_t i = 12; i < len - 8; i++) bytes[i] ^= 0x5a; /* keep the gzip header, wreck the stream */
    tu_write(bad, bytes, len);
    expect_edgelist_error(trunc, FS_ERR_FORMAT, "trunc.gz");
    expect_edgelist_error(bad, FS_ERR_FORMAT, "corrupt");
    free(gz), free(bytes), free(trunc), free(bad);
}

/* ---- npz ---------------------------------------------------------------- */

Test(import, cora_npz)
{
    fs_import_opts_t o = opts();
    fs_error_t err = {0};
    cr_assert_eq(fs_import_npz(tu_data("cora.npz"), &o, &err), FS_OK, "%s", err.msg);
    fs_dataset_t *ds = open_ok(o.out_dir);
    cr_assert_eq(ds->num_nodes, 2708);
    cr_assert_eq(ds->num_edges, 5429);
    cr_assert_str_eq(ds->name, "cora");
    const fs_table_t *t = fs_dataset_table(ds, "feat");
    cr_assert_not_null(t);
    cr_assert_eq(t->dim, 1433);
    cr_assert_eq(t->rows, 2708);
    double sum = 0;
    const float *x = t->data;
    for (int64_t i = 0; i < t->rows * t->dim; i++) sum += x[i];
    cr_assert_eq((int64_t)sum, 49216, "every stored feature entry is 1.0");
    cr_assert_eq(ds->num_classes, 7);
    cr_assert_eq(ds->labels[0], 5, "first label of cora.npz");
    cr_assert_eq(fs_dataset_split(ds, "train")->count, 1624);
    cr_assert_eq(fs_dataset_split(ds, "valid")->count, 541);
    cr_assert_eq(fs_dataset_split(ds, "test")->count, 543);
    fs_dataset_close(ds);
}

/* Builds an .npz from (name, dtype, ndim, shape, data) members. */
typedef struct {
    const char *name;
    fs_dtype_t dt;
    int ndim;
    int64_t shape[2];
    const void *data;
} member_t;

static char *make_npz(const char *file, const member_t *m, int n)
{
    char *p = tu_path(dir, file);
    int zerr;
    zip_t *z = zip_open(p, ZIP_CREATE | ZIP_TRUNCATE, &zerr);
    cr_assert_not_null(z);
    for (int i = 0; i < n; i++) {
        size_t bytes = fs_dtype_size(m[i].dt) * (size_t)m[i].shape[0] * (size_t)(m[i].ndim == 2 ? m[i].shape[1] : 1);
        char *buf = malloc(FS_NPY_WRITE_HEADER_LEN + bytes);
        fs_npy_format(buf, m[i].dt, m[i].ndim, m[i].shape);
        memcpy(buf + FS_NPY_WRITE_HEADER_LEN, m[i].data, bytes);
        zip_source_t *src = zip_source_buffer(z, buf, FS_NPY_WRITE_HEADER_LEN + bytes, 1);
        char name[64];
        snprintf(name, sizeof name, "%s.npy", m[i].name);
        cr_assert_geq(zip_file_add(z, name, src, ZIP_FL_OVERWRITE), 0);
    }
    cr_assert_eq(zip_close(z), 0);
    return p;
}

Test(import, npz_dense_features_masks_and_errors)
{
    int64_t ip[4] = {0, 1, 2, 2};
    int32_t ix[2] = {1, 0};
    double feat[6] = {1, 2, 3, 4, 5, 6};
    int16_t labels[3] = {2, 0, 1};
    uint8_t train_mask[3] = {1, 0, 1};
    member_t m[] = {{"adj_indptr", FS_DTYPE_I64, 1, {4}, ip},   {"adj_indices", FS_DTYPE_I32, 1, {2}, ix},
                    {"attr_matrix", FS_DTYPE_F64, 2, {3, 2}, feat}, {"labels", FS_DTYPE_I16, 1, {3}, labels},
                    {"train_mask", FS_DTYPE_BOOL, 1, {3}, train_mask}};
    char *p = make_npz("dense.npz", m, 5);
    fs_import_opts_t o = opts();
    fs_error_t err = {0};
    cr_assert_eq(fs_import_npz(p, &o, &err), FS_OK, "%s", err.msg);
    fs_dataset_t *ds = open_ok(o.out_dir);
    const float *x = fs_dataset_table(ds, "feat")->data;
    cr_assert_float_eq(x[5], 6.0f, 0);
    cr_assert_eq(ds->num_classes, 3);
    const fs_idset_t *tr = fs_dataset_split(ds, "train");
    cr_assert_eq(tr->count, 2);
    cr_assert_eq(tr->ids[1], 2);
    cr_assert_null(fs_dataset_split(ds, "valid"), "shipped splits replace the random split");
    fs_dataset_close(ds);
    free(p);

    ix[1] = 7; /* out of range neighbour */
    p = make_npz("badidx.npz", m, 2);
    o = opts();
    cr_assert_eq(fs_import_npz(p, &o, &err), FS_ERR_FORMAT);
    cr_assert_not_null(strstr(err.msg, "adj_indices.npy"), "%s", err.msg);
    free(p);
    p = make_npz("noidx.npz", m, 1);
    cr_assert_eq(fs_import_npz(p, &o, &err), FS_ERR_NOT_FOUND);
    cr_assert_not_null(strstr(err.msg, "adj_indices"), "%s", err.msg);
    free(p);
    p = put_text("notzip.npz", "hello, I am not a zip archive\n");
    cr_assert_eq(fs_import_npz(p, &o, &err), FS_ERR_FORMAT);
    cr_assert_not_null(strstr(err.msg, "notzip.npz"), "%s", err.msg);
    free(p);
    p = tu_path(dir, "absent.npz");
    cr_assert_eq(fs_import_npz(p, &o, &err), FS_ERR_NOT_FOUND, "%s", err.msg);
    free(p);
}

Test(import, npz_truncated_member)
{
    size_t len;
    char *bytes = tu_read(tu_data("cora.npz"), &len);
    char *p = tu_path(dir, "cut.npz");
    tu_write(p, bytes, len * 2 / 3);
    fs_import_opts_t o = opts();
    fs_error_t err = {0};
    cr_assert_eq(fs_import_npz(p, &o, &err), FS_ERR_FORMAT, "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "cut.npz"), "%s", err.msg);
    free(bytes), free(p);
}

/* ---- ogb ---------------------------------------------------------------- */

Test(import, ogb_tiny)
{
    fs_import_opts_t o = opts();
    fs_error_t err = {0};
    cr_assert_eq(fs_import_ogb(tu_data("ogb_tiny"), &o, &err), FS_OK, "%s", err.msg);
    fs_dataset_t *ds = open_ok(o.out_dir);
    cr_assert_eq(ds->num_nodes, 6);
    cr_assert_eq(ds->num_edges, 8);
    expect_row(ds, 0, (int64_t[]){1, 3}, 2);
    expect_row(ds, 1, (int64_t[]){1, 2}, 2);
    const fs_table_t *t = fs_dataset_table(ds, "feat");
    cr_assert_eq(t->dim, 3);
    cr_assert_float_eq(((const float *)t->data)[3 * 3 + 1], 3.25f, 0);
    cr_assert_eq(ds->labels[3], -1, "nan is unlabelled");
    cr_assert_eq(ds->num_classes, 3);
    const fs_idset_t *tr = fs_dataset_split(ds, "train");
    cr_assert_eq(tr->count, 3);
    cr_assert_eq(tr->ids[2], 4);
    cr_assert_eq(fs_dataset_split(ds, "test")->ids[0], 5);
    fs_dataset_close(ds);
}

static char *make_ogb_dir(const char *name, const char *edges, const char *feat)
{
    char *d = tu_path(dir, name), *raw = tu_path(d, "raw");
    mkdir(d, 0755);
    mkdir(raw, 0755);
    char *p = tu_path(raw, "edge.csv");
    tu_write(p, edges, strlen(edges));
    free(p);
    if (feat) {
        p = tu_path(raw, "node-feat.csv");
        tu_write(p, feat, strlen(feat));
        free(p);
    }
    free(raw);
    return d;
}

Test(import, ogb_plain_csv_and_errors)
{
    char *d = make_ogb_dir("plain", "0,1\n1,2\n", "1.0,2.0\n3,4\n5,6e-1\n");
    fs_import_opts_t o = opts();
    fs_error_t err = {0};
    cr_assert_eq(fs_import_ogb(d, &o, &err), FS_OK, "%s", err.msg);
    fs_dataset_t *ds = open_ok(o.out_dir);
    cr_assert_eq(ds->num_nodes, 3, "N inferred without num-node-list");
    cr_assert_float_eq(((const float *)fs_dataset_table(ds, "feat")->data)[5], 0.6f, 1e-7);
    fs_dataset_close(ds);
    free(d);

    d = make_ogb_dir("ragged", "0,1\n1,2\n", "1,2\n3\n5,6\n");
    o = opts();
    cr_assert_eq(fs_import_ogb(d, &o, &err), FS_ERR_FORMAT);
    cr_assert_not_null(strstr(err.msg, "node-feat.csv:2"), "%s", err.msg);
    free(d);
    d = make_ogb_dir("rows", "0,1\n1,2\n", "1,2\n3,4\n");
    cr_assert_eq(fs_import_ogb(d, &o, &err), FS_ERR_FORMAT);
    cr_assert_not_null(strstr(err.msg, "2 feature rows for 3 nodes"), "%s", err.msg);
    free(d);
    d = make_ogb_dir("badedge", "0,1\n1;2\n", NULL);
    cr_assert_eq(fs_import_ogb(d, &o, &err), FS_ERR_FORMAT);
    cr_assert_not_null(strstr(err.msg, "edge.csv:2"), "%s", err.msg);
    free(d);
    cr_assert_eq(fs_import_ogb(dir, &o, &err), FS_ERR_NOT_FOUND);
    cr_assert_not_null(strstr(err.msg, "raw/edge.csv"), "%s", err.msg);
}

/* ---- ogb heterogeneous ---------------------------------------------------- */

static const fs_edge_type_t *edge_type_of(const fs_dataset_t *ds, const char *s, const char *r, const char *d)
{
    int i = fs_dataset_edge_type(ds, s, r, d);
    cr_assert(i >= 0, "no edge type (%s, %s, %s)", s, r, d);
    return &ds->edge_types[i];
}

/* Destination v's sources, and their edge ids and times when given. */
static void expect_typed_row(const fs_edge_type_t *e, int64_t v, const int64_t *src, const int64_t *ids,
                             const int64_t *time, int64_t n)
{
    int64_t b = e->indptr[v];
    cr_assert_eq(e->indptr[v + 1] - b, n, "(%s, %s, %s) row %lld has %lld sources, want %lld", e->src, e->rel, e->dst,
                 (long long)v, (long long)(e->indptr[v + 1] - b), (long long)n);
    for (int64_t i = 0; i < n; i++) {
        cr_assert_eq(((const int32_t *)e->indices)[b + i], src[i], "(%s, %s, %s) row %lld[%lld]", e->src, e->rel, e->dst,
                     (long long)v, (long long)i);
        if (ids) cr_assert_eq(e->edge_ids ? e->edge_ids[b + i] : b + i, ids[i], "edge id of row %lld[%lld]", (long long)v,
                              (long long)i);
        if (time) cr_assert_eq(e->time[b + i], time[i], "time of row %lld[%lld]", (long long)v, (long long)i);
    }
}

Test(import, ogb_hetero_tiny)
{
    fs_import_opts_t o = opts();
    fs_error_t err = {0};
    cr_assert_eq(fs_import_ogb_hetero(tu_data("ogb_hetero_tiny"), &o, &err), FS_OK, "%s", err.msg);
    fs_dataset_t *ds = open_ok(o.out_dir);
    cr_assert_str_eq(ds->name, "ogb_hetero_tiny");
    cr_assert_eq(ds->num_node_types, 4);
    static const char *const types[4] = {"author", "field_of_study", "institution", "paper"};
    static const int64_t counts[4] = {4, 3, 2, 6};
    for (int i = 0; i < 4; i++) {
        cr_assert_str_eq(ds->node_types[i].name, types[i], "num-node-dict's order");
        cr_assert_eq(ds->node_types[i].count, counts[i]);
    }
    cr_assert_eq(ds->num_edge_types, 4, "no reverses unless asked");
    cr_assert_eq(fs_dataset_edge_type(ds, "author", "affiliated_with", "institution"), 0, "relations in name order");
    const fs_edge_type_t *writes = edge_type_of(ds, "author", "writes", "paper");
    expect_typed_row(writes, 1, (int64_t[]){0, 1}, (int64_t[]){1, 2}, NULL, 2);
    expect_typed_row(writes, 5, (int64_t[]){2, 3}, (int64_t[]){6, 7}, NULL, 2);
    cr_assert_null(writes->time);
    cr_assert_eq(writes->reverse, -1);
    /* paper 2 is cited by edges 4 (paper 4, 2014) and 5 (paper 5, 2010): by time, not by id */
    const fs_edge_type_t *cites = edge_type_of(ds, "paper", "cites", "paper");
    expect_typed_row(cites, 2, (int64_t[]){5, 4}, (int64_t[]){5, 4}, (int64_t[]){2010, 2014}, 2);
    expect_typed_row(cites, 0, (int64_t[]){1, 2}, (int64_t[]){0, 1}, (int64_t[]){2012, 2013}, 2);
    cr_assert_eq(cites->num_tables, 1);
    cr_assert_eq(cites->tables[0].dim, 2);
    cr_assert_float_eq(((const float *)cites->tables[0].data)[2 * 5 + 1], 5.5f, 0, "edge features by edge id");
    expect_typed_row(edge_type_of(ds, "paper", "has_topic", "field_of_study"), 1, (int64_t[]){0, 1, 5}, NULL, NULL, 3);
    expect_typed_row(edge_type_of(ds, "author", "affiliated_with", "institution"), 1, (int64_t[]){2, 3, 1},
                     (int64_t[]){2, 3, 4}, NULL, 3);
    const fs_node_type_t *paper = &ds->node_types[3];
    cr_assert_eq(paper->num_classes, 3);
    cr_assert_eq(paper->labels[4], -1, "nan is unlabelled");
    cr_assert_eq(paper->labels[2], 2);
    cr_assert_eq(paper->time[3], 2011);
    const fs_table_t *feat = fs_node_type_table(paper, "feat");
    cr_assert_not_null(feat);
    cr_assert_eq(feat->dim, 3);
    cr_assert_float_eq(((const float *)feat->data)[3 * 4 + 2], -4.0f, 0);
    cr_assert_eq(paper->num_splits, 3);
    cr_assert_str_eq(paper->splits[0].name, "train");
    cr_assert_eq(paper->splits[0].count, 3);
    cr_assert_eq(paper->splits[0].ids[2], 3);
    cr_assert_eq(paper->splits[2].ids[1], 5);
    cr_assert_eq(ds->node_types[0].num_tables, 0, "authors have no features here");
    cr_assert_eq(ds->node_types[0].num_splits, 0);
    fs_dataset_close(ds);
    free((char *)o.out_dir);
}

Test(import, ogb_hetero_found_by_ogb_with_reverses)
{
    fs_import_opts_t o = opts();
    o.add_reverse = 1;
    fs_error_t err = {0};
    cr_assert_eq(fs_import_ogb(tu_data("ogb_hetero_tiny"), &o, &err), FS_OK, "%s", err.msg);
    fs_dataset_t *ds = open_ok(o.out_dir);
    cr_assert_eq(ds->num_edge_types, 8);
    int w = fs_dataset_edge_type(ds, "author", "writes", "paper"), r = fs_dataset_edge_type(ds, "paper", "rev_writes", "author");
    cr_assert(w >= 0 && r == w + 1, "each relation followed by its reverse");
    cr_assert_eq(ds->edge_types[w].reverse, r);
    cr_assert_eq(ds->edge_types[r].reverse, w);
    /* author 1 wrote papers 1 (edge 2) and 4 (edge 5) */
    expect_typed_row(&ds->edge_types[r], 1, (int64_t[]){1, 4}, (int64_t[]){2, 5}, NULL, 2);
    /* paper 4 cites papers 1 and 2 (edges 3 and 4, both 2014); paper 5 cites 2 and 3 (2010) */
    const fs_edge_type_t *rc = edge_type_of(ds, "paper", "rev_cites", "paper");
    expect_typed_row(rc, 4, (int64_t[]){1, 2}, (int64_t[]){3, 4}, (int64_t[]){2014, 2014}, 2);
    expect_typed_row(rc, 5, (int64_t[]){2, 3}, (int64_t[]){5, 6}, (int64_t[]){2010, 2010}, 2);
    fs_dataset_close(ds);
    free((char *)o.out_dir);

    char *out, *d = tu_path(dir, "cli");
    cr_assert_eq(tu_run(&out, "%s import ogb-hetero %s --add-reverse --out %s", tu_bin(), tu_data("ogb_hetero_tiny"), d),
                 0, "%s", out);
    free(out);
    cr_assert_eq(tu_run(&out, "%s info %s", tu_bin(), d), 0, "%s", out);
    cr_assert_not_null(strstr(out, "format    version 2: 4 node types, 8 edge types"), "%s", out);
    cr_assert_not_null(strstr(out, "edge type (paper, cites, paper): 7 edges, int32 sources, in-degree mean 1.17 max 2, "
                                   "edge ids, timed"), "%s", out);
    cr_assert_not_null(strstr(out, "reverse: (paper, rev_cites, paper)"), "%s", out);
    cr_assert_not_null(strstr(out, "node type paper: 6 nodes, timed"), "%s", out);
    free(out);
    cr_assert_eq(tu_run(&out, "%s import edgelist x --add-reverse --out %s/y", tu_bin(), dir), 2, "%s", out);
    free(out);
    free(d);
}

/* A copy of the fixture with one file replaced (gzip) or a shell step run in it. */
static char *broken_hetero(const char *name, const char *file, const char *text, const char *shell)
{
    char *d = tu_path(dir, name), *out;
    cr_assert_eq(tu_run(&out, "cp -r %s %s", tu_data("ogb_hetero_tiny"), d), 0, "%s", out);
    free(out);
    if (file) {
        char rel[512];
        snprintf(rel, sizeof rel, "%s/%s", name, file);
        free(put_gzip(rel, text, strlen(text)));
    }
    if (shell) {
        cr_assert_eq(tu_run(&out, "cd %s && %s", d, shell), 0, "%s", out);
        free(out);
    }
    return d;
}

static void expect_hetero_error(char *d, fs_status_t code, const char *needle)
{
    fs_import_opts_t o = opts();
    fs_error_t err = {0};
    cr_assert_eq(fs_import_ogb_hetero(d, &o, &err), code, "%s: %s", d, err.msg);
    cr_assert_not_null(strstr(err.msg, needle), "'%s' should mention '%s'", err.msg, needle);
    cr_assert_eq(access(o.out_dir, F_OK), -1, "no output after a failed import");
    free((char *)o.out_dir);
    free(d);
}

Test(import, ogb_hetero_bad_input_names_the_file_and_line)
{
    expect_hetero_error(broken_hetero("id", "raw/relations/author___writes___paper/edge.csv.gz", "0,0\n0,1\n1,6\n", NULL),
                        FS_ERR_FORMAT, "author___writes___paper/edge.csv.gz:3: destination id 6 is outside [0, 6), "
                                       "the ids of node type 'paper'");
    expect_hetero_error(broken_hetero("src", "raw/relations/paper___cites___paper/edge.csv.gz", "1,0\n-1,0\n", NULL),
                        FS_ERR_FORMAT, "paper___cites___paper/edge.csv.gz:2: source id -1 is outside [0, 6)");
    expect_hetero_error(broken_hetero("tok", "raw/relations/paper___cites___paper/edge.csv.gz", "1,0\n2;0\n", NULL),
                        FS_ERR_FORMAT, "edge.csv.gz:2: expected \"src,dst\"");
    expect_hetero_error(broken_hetero("count", "raw/relations/paper___cites___paper/num-edge-list.csv.gz", "8\n", NULL),
                        FS_ERR_FORMAT, "num-edge-list.csv.gz: says 8 edges, but edge.csv has 7");
    expect_hetero_error(broken_hetero("years", "raw/relations/paper___cites___paper/edge_year.csv.gz", "2010\n", NULL),
                        FS_ERR_FORMAT, "edge_year.csv.gz: 1 years for 7 edges");
    expect_hetero_error(broken_hetero("labels", "raw/node-label/paper/node-label.csv.gz", "0\n1\n2\n1\nnan\n", NULL),
                        FS_ERR_FORMAT, "node-label.csv.gz: 5 lines for 6 nodes");
    expect_hetero_error(broken_hetero("feat", "raw/node-feat/paper/node-feat.csv.gz", "1,2,3\n4,5\n", NULL),
                        FS_ERR_FORMAT, "node-feat.csv.gz:2: expected a float");
    expect_hetero_error(broken_hetero("split", "split/time/paper/valid.csv.gz", "9\n", NULL), FS_ERR_FORMAT,
                        "split/time/paper/valid.csv.gz:1: paper id 9 is outside [0, 6)");
    expect_hetero_error(broken_hetero("dict", "raw/num-node-dict.csv.gz", "author,paper\n4\n", NULL), FS_ERR_FORMAT,
                        "num-node-dict.csv.gz:2: expected one node count per type named on line 1");
    expect_hetero_error(broken_hetero("name", NULL, NULL, "mv raw/relations/paper___cites___paper raw/relations/paper___cites"),
                        FS_ERR_FORMAT, "paper___cites: a relation directory is named <src>___<rel>___<dst>");
    expect_hetero_error(broken_hetero("type", NULL, NULL,
                                      "mv raw/relations/paper___cites___paper raw/relations/paper___cites___book"),
                        FS_ERR_FORMAT, "node type 'book' is not in raw/num-node-dict");
    expect_hetero_error(tu_path(dir, "absent"), FS_ERR_NOT_FOUND, "no raw/num-node-dict.csv[.gz]");
    fs_import_opts_t o = opts();
    o.edges.symmetrize = 1;
    fs_error_t err = {0};
    cr_assert_eq(fs_import_ogb_hetero(tu_data("ogb_hetero_tiny"), &o, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "--add-reverse"), "%s", err.msg);
    free((char *)o.out_dir);
}
