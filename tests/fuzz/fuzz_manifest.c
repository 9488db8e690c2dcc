/* fuzz_manifest.c — libFuzzer harness for the dataset manifest
 * (dataset/dataset.c: manifest.json, read by `featstore serve|info` and
 * every tool that opens a dataset).
 *
 * The input is the manifest's text, handed to fs_dataset_open_manifest, so
 * no file is written per run; the arrays it names are the fixture's
 * (fuzz_dataset_fixture.h), written once into a temporary directory at
 * start and removed at exit. Checksums are verified (FS_OPEN_VERIFY) and
 * one thread validates, as the data checks are not what is fuzzed here.
 *
 * An opened dataset must be what fs_dataset_open promises (dataset.h):
 * indptr from 0, monotone, ending at num_edges; every neighbour, label and
 * split id in range; weights finite and >= 0; every table num_nodes rows of
 * a servable dtype lying wholly inside one of the dataset's mappings. A
 * refusal carries a status and a message. */
#include <float.h>
#include <ftw.h>
#include <unistd.h>

#include "dataset.h"
#include "fuzz_common.h"
#include "fuzz_dataset_fixture.h"

static char fixture_dir[4096];

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void remove_fixture(void)
{
    if (fixture_dir[0]) nftw(fixture_dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(fixture_dir, sizeof fixture_dir, "%s/fs-fuzz-manifest-XXXXXX", tmp);
    if (!mkdtemp(fixture_dir) || fuzz_dataset_fixture(fixture_dir) != 0) {
        fprintf(stderr, "fuzz_manifest: cannot write the fixture into %s\n", fixture_dir);
        exit(1);
    }
    atexit(remove_fixture);
    return 0;
}

/* [p, p + bytes) lies inside one mapping of ds. */
static void check_mapped(const fs_dataset_t *ds, const void *p, size_t bytes, const char *what)
{
    int fd_first, fd_last;
    int64_t first, last;
    if (bytes == 0) return;
    FUZZ_CHECK(fs_dataset_locate(ds, p, &fd_first, &first) == FS_OK, "%s is not mapped", what);
    FUZZ_CHECK(fs_dataset_locate(ds, (const char *)p + bytes - 1, &fd_last, &last) == FS_OK && fd_last == fd_first &&
               last - first == (int64_t)bytes - 1, "%s runs past its mapping", what);
}

static void check_opened(const fs_dataset_t *ds)
{
    int64_t n = ds->num_nodes, e = ds->num_edges;
    FUZZ_CHECK(n >= 0 && e >= 0 && ds->indptr[0] == 0 && ds->indptr[n] == e, "indptr [0, %lld] = %lld..%lld, E %lld",
               (long long)n, (long long)ds->indptr[0], (long long)ds->indptr[n], (long long)e);
    check_mapped(ds, ds->indptr, sizeof(int64_t) * (size_t)(n + 1), "indptr");
    for (int64_t v = 0; v < n; v++) FUZZ_CHECK(ds->indptr[v] <= ds->indptr[v + 1], "indptr not monotone at %lld", (long long)v);
    FUZZ_CHECK(ds->index_dtype == FS_DTYPE_I32 || ds->index_dtype == FS_DTYPE_I64, "index dtype %d", ds->index_dtype);
    check_mapped(ds, ds->indices, fs_dtype_size(ds->index_dtype) * (size_t)e, "indices");
    for (int64_t k = 0; k < e; k++) {
        int64_t u = fs_dataset_neighbor(ds, k);
        FUZZ_CHECK(u >= 0 && u < n, "neighbour %lld at %lld", (long long)u, (long long)k);
        FUZZ_CHECK(!ds->edge_weights || (ds->edge_weights[k] >= 0 && ds->edge_weights[k] <= FLT_MAX),
                   "weight %g at %lld", (double)ds->edge_weights[k], (long long)k);
    }
    if (ds->edge_weights) check_mapped(ds, ds->edge_weights, sizeof(float) * (size_t)e, "edge_weights");
    for (int i = 0; i < ds->num_tables; i++) {
        const fs_table_t *t = &ds->tables[i];
        int labels = strcmp(t->name, FS_LABELS_TABLE) == 0;
        FUZZ_CHECK(labels ? t->dtype == FS_DTYPE_I64 && t->dim == 1
                          : t->dtype == FS_DTYPE_F32 || t->dtype == FS_DTYPE_F16 || t->dtype == FS_DTYPE_BF16,
                   "table '%s' dtype %d", t->name, t->dtype);
        FUZZ_CHECK(t->rows == n && t->dim >= 0 && t->row_bytes == (size_t)t->dim * fs_dtype_size(t->dtype),
                   "table '%s': %lld x %lld, %zu bytes a row", t->name, (long long)t->rows, (long long)t->dim,
                   t->row_bytes);
        FUZZ_CHECK(fs_dataset_table(ds, t->name) == t, "table '%s' named twice", t->name);
        check_mapped(ds, t->data, t->row_bytes * (size_t)t->rows, t->name);
    }
    if (ds->labels) {
        FUZZ_CHECK(fs_dataset_table(ds, FS_LABELS_TABLE) != NULL, "labels without their table");
        for (int64_t v = 0; v < n; v++)
            FUZZ_CHECK(ds->labels[v] >= -1 && ds->labels[v] < ds->num_classes, "label %lld of %lld", (long long)v,
                       (long long)ds->labels[v]);
    }
    for (int i = 0; i < ds->num_splits; i++) {
        const fs_idset_t *s = &ds->splits[i];
        FUZZ_CHECK(s->count >= 0, "split '%s' count", s->name);
        check_mapped(ds, s->ids, sizeof(int64_t) * (size_t)s->count, s->name);
        for (int64_t k = 0; k < s->count; k++)
            FUZZ_CHECK(s->ids[k] >= 0 && s->ids[k] < n, "split '%s' id %lld", s->name, (long long)s->ids[k]);
    }
    if (ds->node_ids) check_mapped(ds, ds->node_ids, sizeof(int64_t) * (size_t)n, "node_ids");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fs_dataset_t *ds = NULL;
    fs_error_t err = {0};
    fs_status_t st = fs_dataset_open_manifest(fixture_dir, (const char *)data, size, FS_OPEN_VERIFY, 1, &ds, &err);
    if (st != FS_OK) {
        FUZZ_CHECK_REFUSAL(st, err);
        FUZZ_CHECK(ds == NULL, "a refused dataset was handed out");
        return 0;
    }
    check_opened(ds);
    fs_dataset_close(ds);
    return 0;
}
