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
 * a servable dtype lying wholly inside one of the dataset's mappings; for
 * version 2 (typed graphs), the same of every type (check_typed). A
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

/* Version 2's promises (dataset.h): every edge type's CSC in range of its
 * types, edge ids a permutation, times ordered per destination, tables of
 * the right rows, reverses and link splits consistent. */
static void check_edge_type(const fs_dataset_t *ds, const fs_edge_type_t *e)
{
    FUZZ_CHECK(e->src_type >= 0 && e->src_type < ds->num_node_types && e->dst_type >= 0 &&
               e->dst_type < ds->num_node_types, "edge type %s's node types", e->rel);
    int64_t rows = ds->node_types[e->dst_type].count, srcs = ds->node_types[e->src_type].count, m = e->num_edges;
    FUZZ_CHECK(e->indptr[0] == 0 && e->indptr[rows] == m, "edge type %s indptr", e->rel);
    check_mapped(ds, e->indptr, sizeof(int64_t) * (size_t)(rows + 1), "an edge type's indptr");
    for (int64_t d = 0; d < rows; d++) {
        FUZZ_CHECK(e->indptr[d] <= e->indptr[d + 1], "edge type %s indptr at %lld", e->rel, (long long)d);
        for (int64_t p = e->indptr[d] + 1; e->time && p < e->indptr[d + 1]; p++)
            FUZZ_CHECK(e->time[p - 1] <= e->time[p], "edge type %s time order at %lld", e->rel, (long long)p);
    }
    uint8_t *seen = calloc((size_t)m + 1, 1);
    for (int64_t k = 0; k < m; k++) {
        int64_t u = e->index_dtype == FS_DTYPE_I32 ? ((const int32_t *)e->indices)[k] : ((const int64_t *)e->indices)[k];
        FUZZ_CHECK(u >= 0 && u < srcs, "edge type %s source %lld", e->rel, (long long)u);
        if (e->edge_ids) {
            FUZZ_CHECK(e->edge_ids[k] >= 0 && e->edge_ids[k] < m && !seen[e->edge_ids[k]], "edge id at %lld", (long long)k);
            seen[e->edge_ids[k]] = 1;
        }
        FUZZ_CHECK(!e->weights || (e->weights[k] >= 0 && e->weights[k] <= FLT_MAX), "weight at %lld", (long long)k);
    }
    free(seen);
    for (int i = 0; i < e->num_tables; i++)
        FUZZ_CHECK(e->tables[i].rows == m, "edge table '%s' rows", e->tables[i].name);
    FUZZ_CHECK(e->reverse < 0 || (e->reverse < ds->num_edge_types && ds->edge_types[e->reverse].num_edges == m &&
                                  ds->edge_types[e->reverse].src_type == e->dst_type),
               "edge type %s reverse", e->rel);
}

static void check_typed(const fs_dataset_t *ds)
{
    FUZZ_CHECK(ds->num_node_types >= 1 && (ds->version == 2 || (ds->num_node_types == 1 && ds->num_edge_types == 1)),
               "version %d with %d node types", ds->version, ds->num_node_types);
    for (int i = 0; i < ds->num_node_types; i++) {
        const fs_node_type_t *t = &ds->node_types[i];
        FUZZ_CHECK(t->count >= 0, "node type count");
        for (int k = 0; k < t->num_tables; k++) FUZZ_CHECK(t->tables[k].rows == t->count, "node table rows");
        for (int k = 0; k < t->num_splits; k++)
            for (int64_t j = 0; j < t->splits[k].count; j++)
                FUZZ_CHECK(t->splits[k].ids[j] >= 0 && t->splits[k].ids[j] < t->count, "node split id");
    }
    for (int i = 0; i < ds->num_edge_types; i++) check_edge_type(ds, &ds->edge_types[i]);
    for (int i = 0; i < ds->num_link_splits; i++) {
        const fs_link_split_t *l = &ds->link_splits[i];
        FUZZ_CHECK(l->edge_type >= 0 && l->edge_type < ds->num_edge_types, "link split edge type");
        const fs_edge_type_t *e = &ds->edge_types[l->edge_type];
        for (int64_t j = 0; j < l->count; j++)
            FUZZ_CHECK(l->src[j] >= 0 && l->src[j] < ds->node_types[e->src_type].count && l->dst[j] >= 0 &&
                       l->dst[j] < ds->node_types[e->dst_type].count, "link split ids at %lld", (long long)j);
        for (int64_t j = 0; l->neg_dst && j < l->count * l->num_neg; j++)
            FUZZ_CHECK(l->neg_dst[j] >= 0 && l->neg_dst[j] < ds->node_types[e->dst_type].count, "negative");
    }
}

static void check_opened(const fs_dataset_t *ds)
{
    check_typed(ds);
    if (fs_dataset_is_typed(ds)) { /* the version-1 fields are empty */
        FUZZ_CHECK(ds->num_nodes == 0 && !ds->indptr && ds->num_tables == 0, "a typed dataset filled version-1 fields");
        return;
    }
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
        FUZZ_CHECK(labels ? t->dtype == FS_DTYPE_I64 && t->dim == 1 && t->codec == FS_CODEC_NONE
                          : t->dtype == FS_DTYPE_F32 || t->dtype == FS_DTYPE_F16 || t->dtype == FS_DTYPE_BF16 ||
                                (t->dtype == FS_DTYPE_I8 && t->codec == FS_CODEC_INT8),
                   "table '%s' dtype %d", t->name, t->dtype);
        FUZZ_CHECK(fs_codec_fits(t->codec, t->dtype, t->dim), "table '%s': codec %s on a %s table of dim %lld",
                   t->name, fs_codec_name(t->codec), fs_dtype_name(t->dtype), (long long)t->dim);
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
