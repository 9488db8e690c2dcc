/* test_typed.c — dataset format version 2 (typed graphs): a writer round
 * trip of every optional part, version 1 read as the one-type case and a
 * one-type version 2 read as version 1, and a clear error for each way a
 * typed dataset can be malformed. Then what trainers rely on: a dataset
 * opened from descriptors (fs_dataset_open_fds) holds the same bytes as one
 * opened by path, a file without a descriptor is named, and typed split
 * names ("paper/train", "link/train/src", ...) resolve to the arrays read
 * here from the .npy files, or say what exists. The expected arrays are
 * built here from the edge list by hand (a counting sort), not by the code
 * under test. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "dataset.h"
#include "fs_npy.h"
#include "test_util.h"
#include "writer.h"

TU_SCRATCH_DIR
TestSuite(typed, .init = setup, .fini = teardown);

/* The graph: 6 papers (features, labels, times, a train split), 3 authors.
 * writes: author -> paper (times, edge features), with its reverse
 * written_by; cites: paper -> paper (weights); a link split over cites. */
enum { PAPERS = 6, AUTHORS = 3, WRITES = 5, CITES = 4 };
static const int64_t W_SRC[WRITES] = {0, 0, 1, 2, 1}, W_DST[WRITES] = {0, 1, 1, 3, 4};
static const int64_t W_TIME[WRITES] = {10, 20, 30, 40, 50};
static const int64_t C_SRC[CITES] = {1, 2, 3, 3}, C_DST[CITES] = {0, 0, 1, 2};
static const float C_W[CITES] = {1, 2, 0.5f, 4};

/* Ways to break the dataset (one per test). */
enum { GOOD, DUP_EDGE_ID, TIME_UNSORTED, SRC_OUT_OF_RANGE, NEG_OUT_OF_RANGE };

static void *array(fs_writer_t *w, const char *file, fs_dtype_t dt, int ndim, int64_t rows, int64_t cols)
{
    int64_t shape[2] = {rows, cols};
    void *p;
    fs_error_t err = {0};
    cr_assert_eq(fs_writer_array(w, FS_ROLE_FILE, file, dt, ndim, shape, &p, &err), FS_OK, "%s", err.msg);
    return p;
}

/* CSC of an edge list toward dst, stable by edge id: indptr, sources, ids,
 * and per-position copies of an optional int64 and float attribute. */
static void csc(fs_writer_t *w, const char *prefix, const int64_t *src, const int64_t *dst, int64_t e, int64_t rows,
                const int64_t *time, const float *wt, int breakage)
{
    char f[128];
    snprintf(f, sizeof f, "%s.indptr.npy", prefix);
    int64_t *ip = array(w, f, FS_DTYPE_I64, 1, rows + 1, 0);
    snprintf(f, sizeof f, "%s.indices.npy", prefix);
    int32_t *ix = array(w, f, FS_DTYPE_I32, 1, e, 0);
    snprintf(f, sizeof f, "%s.edge_ids.npy", prefix);
    int64_t *id = array(w, f, FS_DTYPE_I64, 1, e, 0);
    int64_t *tp = NULL;
    float *wp = NULL;
    if (time) snprintf(f, sizeof f, "%s.time.npy", prefix), tp = array(w, f, FS_DTYPE_I64, 1, e, 0);
    if (wt) snprintf(f, sizeof f, "%s.weights.npy", prefix), wp = array(w, f, FS_DTYPE_F32, 1, e, 0);
    for (int64_t i = 0; i < e; i++) ip[dst[i] + 1]++;
    for (int64_t d = 0; d < rows; d++) ip[d + 1] += ip[d];
    int64_t next[16];
    memcpy(next, ip, (size_t)rows * sizeof *ip);
    for (int64_t i = 0; i < e; i++) {
        int64_t p = next[dst[i]]++;
        ix[p] = (int32_t)src[i], id[p] = i;
        if (tp) tp[p] = time[i];
        if (wp) wp[p] = wt[i];
    }
    if (breakage == DUP_EDGE_ID) id[1] = id[0];
    if (breakage == TIME_UNSORTED && tp) tp[2] = -5; /* paper 1's second source is now older than its first */
    if (breakage == SRC_OUT_OF_RANGE) ix[0] = 99;
}

static const char *GRAPH =
    "{\"node_types\": ["
    "  {\"name\": \"paper\", \"count\": 6, \"time\": \"paper.time.npy\","
    "   \"features\": {\"feat\": {\"file\": \"paper.feat.npy\", \"dtype\": \"float32\"}},"
    "   \"labels\": {\"file\": \"paper.labels.npy\", \"num_classes\": 2},"
    "   \"splits\": {\"train\": \"paper.train.npy\"}},"
    "  {\"name\": \"author\", \"count\": 3}],"
    " \"edge_types\": ["
    "  {\"src\": \"author\", \"rel\": \"writes\", \"dst\": \"paper\", \"num_edges\": 5, \"reverse\": \"written_by\","
    "   \"indptr\": \"w.indptr.npy\", \"indices\": \"w.indices.npy\", \"edge_ids\": \"w.edge_ids.npy\","
    "   \"time\": \"w.time.npy\", \"features\": {\"role\": {\"file\": \"w.role.npy\", \"dtype\": \"float32\"}}},"
    "  {\"src\": \"paper\", \"rel\": \"written_by\", \"dst\": \"author\", \"num_edges\": 5, \"reverse\": \"writes\","
    "   \"indptr\": \"wb.indptr.npy\", \"indices\": \"wb.indices.npy\", \"edge_ids\": \"wb.edge_ids.npy\"},"
    "  {\"src\": \"paper\", \"rel\": \"cites\", \"dst\": \"paper\", \"num_edges\": 4,"
    "   \"indptr\": \"c.indptr.npy\", \"indices\": \"c.indices.npy\", \"edge_ids\": \"c.edge_ids.npy\","
    "   \"weights\": \"c.weights.npy\"}],"
    " \"link_splits\": {\"train\": {\"edge_type\": [\"paper\", \"cites\", \"paper\"], \"src\": \"l.src.npy\","
    "   \"dst\": \"l.dst.npy\", \"neg_dst\": \"l.neg.npy\"}}}";

static char *write_typed(const char *name, int breakage, const char *graph)
{
    char *d = tu_path(dir, name);
    fs_writer_t *w;
    fs_error_t err = {0};
    cr_assert_eq(fs_writer_create(d, 1, &w, &err), FS_OK, "%s", err.msg);
    float *feat = array(w, "paper.feat.npy", FS_DTYPE_F32, 2, PAPERS, 2);
    int64_t *lab = array(w, "paper.labels.npy", FS_DTYPE_I64, 1, PAPERS, 0);
    int64_t *pt = array(w, "paper.time.npy", FS_DTYPE_I64, 1, PAPERS, 0);
    int64_t *tr = array(w, "paper.train.npy", FS_DTYPE_I64, 1, 2, 0);
    for (int v = 0; v < PAPERS; v++) feat[2 * v] = (float)v, feat[2 * v + 1] = -(float)v, lab[v] = v % 2, pt[v] = 100 + v;
    tr[0] = 0, tr[1] = 5;
    csc(w, "w", W_SRC, W_DST, WRITES, PAPERS, W_TIME, NULL, breakage);
    float *role = array(w, "w.role.npy", FS_DTYPE_F32, 2, WRITES, 1); /* by edge id */
    for (int i = 0; i < WRITES; i++) role[i] = (float)(i * 10);
    csc(w, "wb", W_DST, W_SRC, WRITES, AUTHORS, NULL, NULL, GOOD);
    csc(w, "c", C_SRC, C_DST, CITES, PAPERS, NULL, C_W, GOOD);
    int64_t *ls = array(w, "l.src.npy", FS_DTYPE_I64, 1, 2, 0), *ld = array(w, "l.dst.npy", FS_DTYPE_I64, 1, 2, 0);
    int64_t *neg = array(w, "l.neg.npy", FS_DTYPE_I64, 2, 2, 2);
    int64_t *llab = array(w, "l.label.npy", FS_DTYPE_I64, 1, 2, 0), *ltime = array(w, "l.time.npy", FS_DTYPE_I64, 1, 2, 0);
    array(w, "empty.npy", FS_DTYPE_I64, 1, 0, 0); /* for graphs with an empty split */
    llab[0] = 1, llab[1] = 0, ltime[0] = 7, ltime[1] = 9;
    ls[0] = 1, ld[0] = 0, ls[1] = 3, ld[1] = 2;
    neg[0] = 5, neg[1] = 4, neg[2] = 3, neg[3] = breakage == NEG_OUT_OF_RANGE ? PAPERS : 0;
    fs_writer_set_meta(w, "tiny-typed", 0, 0, 0, 0);
    cr_assert_eq(fs_writer_set_typed(w, graph, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_writer_commit(w, &err), FS_OK, "%s", err.msg);
    return d;
}

/* d (taken: freed here) fails to open with `code` and a message holding needle. */
static void expect_error(char *d, fs_status_t code, const char *needle)
{
    fs_dataset_t *ds;
    fs_error_t err = {0};
    cr_assert_eq(fs_dataset_open(d, FS_OPEN_VERIFY, 1, &ds, &err), code, "opened, or another error: %s", err.msg);
    cr_assert_not_null(strstr(err.msg, needle), "'%s' not in: %s", needle, err.msg);
    free(d);
}

Test(typed, round_trip_of_every_part)
{
    char *d = write_typed("g", GOOD, GRAPH);
    fs_dataset_t *ds;
    fs_error_t err = {0};
    cr_assert_eq(fs_dataset_open(d, FS_OPEN_VERIFY, 2, &ds, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(ds->version, 2);
    cr_assert(fs_dataset_is_typed(ds));
    cr_assert_eq(ds->num_nodes, 0, "a typed graph leaves the version-1 fields empty");
    cr_assert_eq(ds->num_node_types, 2);
    cr_assert_eq(ds->num_edge_types, 3);
    int paper = fs_dataset_node_type(ds, "paper"), author = fs_dataset_node_type(ds, "author");
    cr_assert_eq(paper, 0);
    cr_assert_eq(author, 1);
    cr_assert_eq(fs_dataset_node_type(ds, "venue"), -1);
    const fs_node_type_t *p = &ds->node_types[paper];
    cr_assert_eq(p->count, PAPERS);
    cr_assert_eq(p->num_tables, 2, "feat, then labels");
    const fs_table_t *feat = fs_node_type_table(p, "feat");
    cr_assert_not_null(feat);
    cr_assert_eq(((const float *)feat->data)[2 * 4 + 1], -4.0f);
    cr_assert_not_null(fs_node_type_table(p, "labels"));
    cr_assert_eq(p->num_classes, 2);
    cr_assert_eq(p->time[5], 105);
    cr_assert_eq(p->num_splits, 1);
    cr_assert_eq(p->splits[0].ids[1], 5);

    int wr = fs_dataset_edge_type(ds, "author", "writes", "paper");
    int wb = fs_dataset_edge_type(ds, "paper", "written_by", "author");
    int ci = fs_dataset_edge_type(ds, "paper", "cites", "paper");
    cr_assert(wr >= 0 && wb >= 0 && ci >= 0);
    cr_assert_eq(fs_dataset_edge_type(ds, "paper", "writes", "author"), -1);
    const fs_edge_type_t *e = &ds->edge_types[wr];
    cr_assert_eq(e->src_type, author);
    cr_assert_eq(e->dst_type, paper);
    cr_assert_eq(e->reverse, wb);
    cr_assert_eq(ds->edge_types[wb].reverse, wr);
    cr_assert_eq(ds->edge_types[ci].reverse, -1);
    /* paper 1 is written by authors 0 (edge 1, t=20) and 1 (edge 2, t=30) */
    cr_assert_eq(e->indptr[2] - e->indptr[1], 2);
    int64_t q = e->indptr[1];
    cr_assert_eq(((const int32_t *)e->indices)[q], 0);
    cr_assert_eq(e->edge_ids[q], 1);
    cr_assert_eq(e->time[q + 1], 30);
    cr_assert_eq(e->num_tables, 1);
    cr_assert_eq(((const float *)e->tables[0].data)[e->edge_ids[q + 1]], 20.0f, "edge features are by edge id");
    cr_assert_not_null(ds->edge_types[ci].weights);
    cr_assert_null(ds->edge_types[ci].time);
    cr_assert_eq(ds->num_link_splits, 1);
    const fs_link_split_t *l = &ds->link_splits[0];
    cr_assert_str_eq(l->name, "train");
    cr_assert_eq(l->edge_type, ci);
    cr_assert_eq(l->count, 2);
    cr_assert_eq(l->num_neg, 2);
    cr_assert_eq(l->neg_dst[2], 3);
    cr_assert_null(l->label);
    cr_assert_eq(fs_dataset_need_one_graph(ds, "serve", &err), FS_ERR_UNSUPPORTED);
    cr_assert_not_null(strstr(err.msg, "2 node types, 3 edge types"), "%s", err.msg);
    fs_dataset_close(ds);

    char *out;
    cr_assert_eq(tu_run(&out, "%s info %s", tu_bin(), d), 0, "%s", out);
    cr_assert_not_null(strstr(out, "edge type (author, writes, paper): 5 edges"), "%s", out);
    cr_assert_not_null(strstr(out, "reverse: (paper, written_by, author)"), "%s", out);
    cr_assert_not_null(strstr(out, "link split train: 2 edges of (paper, cites, paper), 2 given negatives each"), "%s", out);
    free(out);
    cr_assert_neq(tu_run(&out, "timeout 30 %s serve %s --socket %s/s.sock --topology pcie4 --metrics 127.0.0.1:0", tu_bin(), d,
                        dir), 0);
    cr_assert_not_null(strstr(out, "placement plans one graph; dataset"), "%s", out);
    cr_assert_not_null(strstr(out, "is typed (2 node types, 3 edge types): serve it without --topology"), "%s", out);
    free(out);
    free(d);
}

Test(typed, version_1_reads_as_one_node_type_and_one_edge_type)
{
    char *d = tu_path(dir, "v1");
    static const int64_t ip[5] = {0, 2, 3, 4, 4};
    static const int32_t ix[4] = {1, 2, 2, 0};
    tu_make_dataset(d, 4, ip, ix, 3);
    fs_dataset_t *ds = tu_open_dataset(d);
    cr_assert_eq(ds->version, 1);
    cr_assert_not(fs_dataset_is_typed(ds));
    cr_assert_eq(ds->num_node_types, 1);
    cr_assert_str_eq(ds->node_types[0].name, "node");
    cr_assert_eq(ds->node_types[0].count, 4);
    cr_assert_eq(ds->node_types[0].tables, ds->tables, "shared, not copied");
    cr_assert_eq(ds->edge_types[0].indptr, ds->indptr);
    cr_assert_str_eq(ds->edge_types[0].rel, "to");
    cr_assert_null(ds->edge_types[0].edge_ids);
    fs_dataset_close(ds);
    free(d);
}

Test(typed, a_one_type_version_2_dataset_fills_the_version_1_fields)
{
    const char *one =
        "{\"node_types\": [{\"name\": \"paper\", \"count\": 6, "
        "\"features\": {\"feat\": {\"file\": \"paper.feat.npy\", \"dtype\": \"float32\"}},"
        " \"labels\": {\"file\": \"paper.labels.npy\", \"num_classes\": 2}, \"splits\": {\"train\": \"paper.train.npy\"}}],"
        " \"edge_types\": [{\"src\": \"paper\", \"rel\": \"cites\", \"dst\": \"paper\", \"num_edges\": 4,"
        "  \"indptr\": \"c.indptr.npy\", \"indices\": \"c.indices.npy\", \"weights\": \"c.weights.npy\"}]}";
    char *d = write_typed("one", GOOD, one); /* the unused files are harmless */
    fs_dataset_t *ds = tu_open_dataset(d);
    cr_assert_not(fs_dataset_is_typed(ds));
    cr_assert_eq(ds->num_nodes, PAPERS);
    cr_assert_eq(ds->num_edges, CITES);
    cr_assert_eq(ds->indptr, ds->edge_types[0].indptr);
    cr_assert_not_null(ds->edge_weights);
    cr_assert_not_null(fs_dataset_table(ds, "feat"));
    cr_assert_not_null(fs_dataset_table(ds, "labels"));
    cr_assert_not_null(fs_dataset_split(ds, "train"));
    fs_error_t err = {0};
    cr_assert_eq(fs_dataset_need_one_graph(ds, "serve", &err), FS_OK);
    fs_dataset_close(ds);
    free(d);
}

Test(typed, malformed_data_is_named)
{
    expect_error(write_typed("dup", DUP_EDGE_ID, GRAPH), FS_ERR_FORMAT, "w.edge_ids.npy: edge id 0 appears twice");
    expect_error(write_typed("time", TIME_UNSORTED, GRAPH), FS_ERR_FORMAT,
                 "w.time.npy: edge times must not decrease within a destination; destination 1 has -5 at offset 2 after 20");
    expect_error(write_typed("src", SRC_OUT_OF_RANGE, GRAPH), FS_ERR_FORMAT, "neighbour id at offset 0 is 99, outside [0, 3)");
    expect_error(write_typed("neg", NEG_OUT_OF_RANGE, GRAPH), FS_ERR_FORMAT,
                 "l.neg.npy: negative destination id at offset 3 is 6, outside [0, 6)");
}

/* The manifest's mistakes, each on the good files. */
static void expect_manifest_error(const char *d, const char *from, const char *to, const char *needle)
{
    const char *at = strstr(GRAPH, from);
    cr_assert_not_null(at, "test bug: '%s' not in the manifest", from);
    char m[8192];
    snprintf(m, sizeof m, "{\"format\": \"featstore-dataset\", \"version\": 2, %.*s%s%s", (int)(at - GRAPH - 1), GRAPH + 1,
             to, at + strlen(from));
    fs_dataset_t *ds;
    fs_error_t err = {0};
    cr_assert_eq(fs_dataset_open_manifest(d, m, strlen(m), 0, 1, &ds, &err), FS_ERR_FORMAT, "%s", m);
    cr_assert_not_null(strstr(err.msg, needle), "'%s' not in: %s", needle, err.msg);
}

Test(typed, manifest_mistakes_are_named)
{
    char *d = write_typed("m", GOOD, GRAPH);
    expect_manifest_error(d, "\"dst\": \"paper\", \"num_edges\": 5", "\"dst\": \"venue\", \"num_edges\": 5",
                          "edge type (author, writes, venue) names node type 'venue', which is not in \"node_types\"");
    expect_manifest_error(d, "{\"name\": \"author\", \"count\": 3}", "{\"name\": \"paper\", \"count\": 3}",
                          "node type 'paper' is listed twice");
    expect_manifest_error(d, "{\"name\": \"author\"", "{\"name\": \"au thor\"", "letters, digits or underscores");
    expect_manifest_error(d, "\"count\": 3", "\"count\": -3", "node type 'author': \"count\" must be an integer");
    expect_manifest_error(d, "\"reverse\": \"written_by\"", "\"reverse\": \"cites\"", "\"reverse\" must name the relation");
    expect_manifest_error(d, "\"num_edges\": 4", "\"num_edges\": 3", "c.indptr.npy: indptr ends at 4 but num_edges is 3");
    expect_manifest_error(d, "[\"paper\", \"cites\", \"paper\"]", "[\"paper\", \"cites\", \"author\"]",
                          "link split 'train' names edge type (paper, cites, author)");
    expect_manifest_error(d, "\"node_types\": [", "\"node_types\": {\"x\": 1}, \"y\": [", "\"node_types\" must be a list");
    free(d);
}

/* ---- opening from descriptors (fs_dataset_open_fds) ------------------------------- */

/* The graph with the link split's labels and times too. */
static char *graph_with(const char *from, const char *to)
{
    const char *at = strstr(GRAPH, from);
    cr_assert_not_null(at, "test bug: '%s' not in the manifest", from);
    char *g = malloc(strlen(GRAPH) + strlen(to) + 1);
    sprintf(g, "%.*s%s%s", (int)(at - GRAPH), GRAPH, to, at + strlen(from));
    return g;
}

#define LINK_ALL "\"neg_dst\": \"l.neg.npy\", \"label\": \"l.label.npy\", \"time\": \"l.time.npy\""

static char *write_full(const char *name)
{
    char *g = graph_with("\"neg_dst\": \"l.neg.npy\"", LINK_ALL);
    char *d = write_typed(name, GOOD, g);
    free(g);
    return d;
}

/* Every file of ds as the server would hand them out: (name, descriptor). */
typedef struct {
    int n;
    const char *names[64];
    int fds[64];
} file_list_t;

static void open_files(const fs_dataset_t *ds, const char *d, file_list_t *f)
{
    f->n = fs_dataset_num_files(ds);
    cr_assert(f->n > 0 && f->n <= 64);
    for (int i = 0; i < f->n; i++) {
        char path[4096];
        f->names[i] = fs_dataset_file_name(ds, i);
        snprintf(path, sizeof path, "%s/%s", d, f->names[i]);
        cr_assert((f->fds[i] = open(path, O_RDONLY | O_CLOEXEC)) >= 0, "%s", path);
    }
}

static void close_files(file_list_t *f)
{
    for (int i = 0; i < f->n; i++)
        if (f->fds[i] >= 0) close(f->fds[i]);
}

static void same_bytes(const void *a, const void *b, size_t n, const char *what)
{
    cr_assert_eq(a == NULL, b == NULL, "%s: present in one only", what);
    if (a) cr_assert(a != b && memcmp(a, b, n) == 0, "%s: not the same bytes (or not a mapping of its own)", what);
}

static void same_tables(const fs_table_t *a, const fs_table_t *b, int n, const char *owner)
{
    for (int i = 0; i < n; i++) {
        cr_assert_str_eq(a[i].name, b[i].name, "%s", owner);
        cr_assert(a[i].dtype == b[i].dtype && a[i].rows == b[i].rows && a[i].dim == b[i].dim, "%s", a[i].name);
        same_bytes(a[i].data, b[i].data, (size_t)a[i].rows * a[i].row_bytes, a[i].name);
    }
}

/* Two openings of one dataset hold the same arrays, each in its own mappings. */
static void same_dataset(const fs_dataset_t *a, const fs_dataset_t *b)
{
    cr_assert_eq(a->num_node_types, b->num_node_types);
    cr_assert_eq(a->num_edge_types, b->num_edge_types);
    cr_assert_eq(a->num_link_splits, b->num_link_splits);
    for (int t = 0; t < a->num_node_types; t++) {
        const fs_node_type_t *x = &a->node_types[t], *y = &b->node_types[t];
        cr_assert_str_eq(x->name, y->name);
        cr_assert(x->count == y->count && x->num_tables == y->num_tables && x->num_splits == y->num_splits, "%s", x->name);
        same_tables(x->tables, y->tables, x->num_tables, x->name);
        same_bytes(x->time, y->time, (size_t)x->count * 8, "node times");
        for (int i = 0; i < x->num_splits; i++) {
            cr_assert_eq(x->splits[i].count, y->splits[i].count);
            same_bytes(x->splits[i].ids, y->splits[i].ids, (size_t)x->splits[i].count * 8, x->splits[i].name);
        }
    }
    for (int e = 0; e < a->num_edge_types; e++) {
        const fs_edge_type_t *x = &a->edge_types[e], *y = &b->edge_types[e];
        int64_t rows = a->node_types[x->dst_type].count;
        size_t m = (size_t)x->num_edges;
        cr_assert(x->num_edges == y->num_edges && x->index_dtype == y->index_dtype && x->reverse == y->reverse);
        same_bytes(x->indptr, y->indptr, (size_t)(rows + 1) * 8, "indptr");
        same_bytes(x->indices, y->indices, m * fs_dtype_size(x->index_dtype), "indices");
        same_bytes(x->edge_ids, y->edge_ids, m * 8, "edge ids");
        same_bytes(x->weights, y->weights, m * 4, "weights");
        same_bytes(x->time, y->time, m * 8, "edge times");
        cr_assert_eq(x->num_tables, y->num_tables);
        same_tables(x->tables, y->tables, x->num_tables, x->rel);
    }
    for (int i = 0; i < a->num_link_splits; i++) {
        const fs_link_split_t *x = &a->link_splits[i], *y = &b->link_splits[i];
        size_t n = (size_t)x->count * 8;
        cr_assert(x->count == y->count && x->num_neg == y->num_neg && x->edge_type == y->edge_type);
        same_bytes(x->src, y->src, n, "link src");
        same_bytes(x->dst, y->dst, n, "link dst");
        same_bytes(x->label, y->label, n, "link label");
        same_bytes(x->time, y->time, n, "link time");
        same_bytes(x->neg_dst, y->neg_dst, n * (size_t)x->num_neg, "link negatives");
    }
}

static fs_dataset_t *open_by_fds(const char *d, const file_list_t *f, int skip, fs_status_t want, fs_error_t *err)
{
    size_t len;
    char *m = tu_path(d, FS_MANIFEST), *text = tu_read(m, &len);
    const char *names[64];
    int fds[64], n = 0;
    for (int i = 0; i < f->n; i++)
        if (i != skip) names[n] = f->names[i], fds[n++] = f->fds[i];
    fs_dataset_t *ds = NULL;
    fs_status_t st = fs_dataset_open_fds("trainer-view", text, len, names, fds, n, 2, &ds, err);
    cr_assert_eq(st, want, "%s", err->msg);
    free(text), free(m);
    return ds;
}

Test(typed, open_fds_gives_the_arrays_fs_dataset_open_gives)
{
    char *d = write_full("fds"), *gen = tu_path(dir, "rmat");
    char *out;
    cr_assert_eq(tu_run(&out, "%s gen rmat --typed --scale 6 --edge-factor 4 --dim 4 --threads 2 --out %s", tu_bin(), gen),
                 0, "%s", out);
    free(out);
    const char *dirs[2] = {d, gen};
    for (int k = 0; k < 2; k++) {
        fs_dataset_t *a = tu_open_dataset(dirs[k]);
        file_list_t f;
        fs_error_t err = {0};
        open_files(a, dirs[k], &f);
        fs_dataset_t *b = open_by_fds(dirs[k], &f, -1, FS_OK, &err);
        close_files(&f); /* the dataset keeps descriptors of its own */
        cr_assert_str_eq(b->dir, "trainer-view");
        cr_assert_eq(b->checksums_verified, 0);
        same_dataset(a, b);
        const fs_idset_t *x = fs_dataset_split(a, "paper/train"), *y = fs_dataset_split(b, "paper/train");
        cr_assert(x && y && x->count == y->count && memcmp(x->ids, y->ids, (size_t)x->count * 8) == 0);
        int fd;
        int64_t off;
        cr_assert_eq(fs_dataset_locate(b, y->ids, &fd, &off), FS_OK, "the trainer's arrays are in its mappings");
        fs_dataset_close(b);
        fs_dataset_close(a);
    }
    free(gen);
    free(d);
}

Test(typed, open_fds_names_a_file_without_a_descriptor)
{
    char *d = write_full("missing");
    fs_dataset_t *a = tu_open_dataset(d);
    file_list_t f;
    open_files(a, d, &f);
    int skip = -1;
    for (int i = 0; i < f.n; i++)
        if (strcmp(f.names[i], "c.weights.npy") == 0) skip = i;
    cr_assert_geq(skip, 0);
    fs_error_t err = {0};
    cr_assert_null(open_by_fds(d, &f, skip, FS_ERR_NOT_FOUND, &err));
    cr_assert_not_null(strstr(err.msg, "names file 'c.weights.npy', but no descriptor was given for it"), "%s", err.msg);
    close(f.fds[skip]);
    f.fds[skip] = -1; /* given, but closed */
    err = (fs_error_t){0};
    cr_assert_null(open_by_fds(d, &f, -1, FS_ERR_IO, &err));
    cr_assert_not_null(strstr(err.msg, "trainer-view/c.weights.npy: the descriptor given for it (-1) cannot be used"),
                       "%s", err.msg);
    close_files(&f);
    const char *none[1] = {"manifest.json"};
    int fds[1] = {0};
    fs_dataset_t *ds;
    err = (fs_error_t){0};
    cr_assert_eq(fs_dataset_open_fds("x", "{", 1, none, fds, 1, 1, &ds, &err), FS_ERR_FORMAT);
    cr_assert_eq(fs_dataset_open_fds("x", "{}", 2, NULL, NULL, 3, 1, &ds, &err), FS_ERR_INVALID_ARGUMENT);
    fs_dataset_close(a);
    free(d);
}

/* ---- split names: "TYPE/NAME", "link/NAME/ARRAY" ------------------------------------- */

/* An int64 .npy file of the dataset, read here without the dataset code's mapping. */
static int64_t *read_npy_i64(const char *d, const char *file, int64_t *count)
{
    char *path = tu_path(d, file);
    size_t len;
    char *bytes = tu_read(path, &len);
    fs_npy_header_t h;
    fs_error_t err = {0};
    cr_assert_eq(fs_npy_parse(bytes, len, path, &h, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(h.dtype, FS_DTYPE_I64);
    *count = h.ndim == 2 ? h.shape[0] * h.shape[1] : h.shape[0];
    int64_t *v = malloc((size_t)*count * 8 + 8);
    memcpy(v, bytes + h.header_len, (size_t)*count * 8);
    free(bytes), free(path);
    return v;
}

static void expect_split(const fs_dataset_t *ds, const char *d, const char *name, const char *file)
{
    const fs_idset_t *s;
    fs_error_t err = {0};
    cr_assert_eq(fs_dataset_find_split(ds, name, &s, &err), FS_OK, "%s: %s", name, err.msg);
    cr_assert_eq(fs_dataset_split(ds, name), s);
    int64_t n;
    int64_t *want = read_npy_i64(d, file, &n);
    cr_assert_eq(s->count, n, "%s", name);
    for (int64_t i = 0; i < n; i++) cr_assert_eq(s->ids[i], want[i], "%s[%lld]", name, (long long)i);
    int fd;
    int64_t off;
    cr_assert_eq(fs_dataset_locate(ds, s->ids, &fd, &off), FS_OK, "%s: in a mapping (the local transport sends it)", name);
    free(want);
}

static void expect_no_split(const fs_dataset_t *ds, const char *name, const char *needle)
{
    const fs_idset_t *s = (const fs_idset_t *)1;
    fs_error_t err = {0};
    cr_assert_eq(fs_dataset_find_split(ds, name, &s, &err), FS_ERR_NOT_FOUND, "%s", name);
    cr_assert_null(s);
    cr_assert_null(fs_dataset_split(ds, name));
    cr_assert_not_null(strstr(err.msg, needle), "%s: '%s' not in: %s", name, needle, err.msg);
}

Test(typed, typed_split_names_resolve_to_the_arrays)
{
    char *d = write_full("names");
    fs_dataset_t *ds = tu_open_dataset(d);
    expect_split(ds, d, "paper/train", "paper.train.npy");
    expect_split(ds, d, "link/train/src", "l.src.npy");
    expect_split(ds, d, "link/train/dst", "l.dst.npy");
    expect_split(ds, d, "link/train/label", "l.label.npy");
    expect_split(ds, d, "link/train/time", "l.time.npy");
    expect_split(ds, d, "link/train/neg_dst", "l.neg.npy");
    const fs_idset_t *neg = fs_dataset_split(ds, "link/train/neg_dst"), *train = fs_dataset_split(ds, "paper/train");
    cr_assert_eq(neg->count, 4, "[count * num_neg], flattened");
    cr_assert(neg->ids[0] == 5 && neg->ids[3] == 0);
    cr_assert(train->count == 2 && train->ids[0] == 0 && train->ids[1] == 5, "the fixture's contents");
    cr_assert_eq(train, &ds->node_types[0].splits[0], "a node type's split is its own set");
    expect_no_split(ds, "train", "is typed (2 node types, 3 edge types): splits are per node type, as \"TYPE/train\": "
                                 "ask for paper/train");
    expect_no_split(ds, "valid", "no node type has a split 'valid'; it has paper/train, link/train/src");
    expect_no_split(ds, "author/train", "node type 'author' has no split 'train'; its splits: none");
    expect_no_split(ds, "paper/test", "node type 'paper' has no split 'test'; its splits: train");
    expect_no_split(ds, "venue/train", "no node type 'venue' (in split 'venue/train'); its node types: paper, author");
    expect_no_split(ds, "link/valid/src", "its link splits: train");
    expect_no_split(ds, "link/train/weight", "link split 'train' has no array 'weight'; it has src, dst, label, time, "
                                             "neg_dst");
    fs_dataset_close(ds);
    free(d);

    d = write_typed("plain", GOOD, GRAPH); /* no labels or times in the link split */
    ds = tu_open_dataset(d);
    expect_no_split(ds, "link/train/label", "link split 'train' has no array 'label'; it has src, dst, neg_dst");
    expect_no_split(ds, "link/train/time", "it has src, dst, neg_dst (as link/train/ARRAY)");
    fs_dataset_close(ds);
    free(d);
}

/* s with every `from` replaced by `to` (heap). */
static char *replace_all(const char *s, const char *from, const char *to)
{
    char *out = strdup(s);
    for (char *at; (at = strstr(out, from));) {
        char *next = malloc(strlen(out) + strlen(to) + 1);
        sprintf(next, "%.*s%s%s", (int)(at - out), out, to, at + strlen(from));
        free(out), out = next;
    }
    return out;
}

Test(typed, split_names_up_to_the_longest_type_and_split_names)
{
    char t[64], n[64], quoted[70], author[200];
    memset(t, 'T', 63), t[63] = '\0';
    memset(n, 'n', 63), n[63] = '\0';
    snprintf(quoted, sizeof quoted, "\"%s\"", t);
    snprintf(author, sizeof author, "{\"name\": \"author\", \"count\": 3, \"splits\": {\"%s\": \"empty.npy\"}}", n);
    char *g1 = graph_with("{\"name\": \"author\", \"count\": 3}", author);
    char *g = replace_all(g1, "\"author\"", quoted); /* the author type, named with 63 characters everywhere */
    char *d = write_typed("long", GOOD, g);
    free(g), free(g1);
    fs_dataset_t *ds = tu_open_dataset(d);
    char name[FS_SPLIT_NAME_MAX];
    snprintf(name, sizeof name, "%s/%s", t, n);
    cr_assert_eq(strlen(name), FS_SPLIT_NAME_MAX - 1);
    const fs_idset_t *s = fs_dataset_split(ds, name);
    cr_assert_not_null(s, "a 127-character name");
    cr_assert_eq(s->count, 0);
    int fd;
    int64_t off;
    cr_assert_eq(fs_dataset_locate(ds, s->ids, &fd, &off), FS_OK, "an empty array at its file's end is still located");
    cr_assert_eq(off, FS_NPY_WRITE_HEADER_LEN, "right after the .npy header: %lld", (long long)off);
    fs_dataset_close(ds);
    free(d);
}
