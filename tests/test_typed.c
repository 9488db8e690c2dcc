/* test_typed.c — dataset format version 2 (typed graphs): a writer round
 * trip of every optional part, version 1 read as the one-type case and a
 * one-type version 2 read as version 1, and a clear error for each way a
 * typed dataset can be malformed. The expected arrays are built here from
 * the edge list by hand (a counting sort), not by the code under test. */
#include <criterion/criterion.h>
#include <string.h>

#include "dataset.h"
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
    ls[0] = 1, ld[0] = 0, ls[1] = 3, ld[1] = 2;
    neg[0] = 5, neg[1] = 4, neg[2] = 3, neg[3] = breakage == NEG_OUT_OF_RANGE ? PAPERS : 0;
    fs_writer_set_meta(w, "tiny-typed", 0, 0, 0, 0);
    cr_assert_eq(fs_writer_set_typed(w, graph, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_writer_commit(w, &err), FS_OK, "%s", err.msg);
    return d;
}

static void expect_error(const char *d, fs_status_t code, const char *needle)
{
    fs_dataset_t *ds;
    fs_error_t err = {0};
    cr_assert_eq(fs_dataset_open(d, FS_OPEN_VERIFY, 1, &ds, &err), code, "opened, or another error: %s", err.msg);
    cr_assert_not_null(strstr(err.msg, needle), "'%s' not in: %s", needle, err.msg);
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
    cr_assert_neq(tu_run(&out, "timeout 30 %s serve %s --socket %s/s.sock", tu_bin(), d, dir), 0);
    cr_assert_not_null(strstr(out, "typed graph"), "%s", out);
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
