/* test_typed_gen.c — the typed-graph builder (dataset/typed_build.h) on
 * hand-made edge lists whose CSC is worked out here by hand, and the typed
 * R-MAT generator (`gen rmat --typed`) against an independent recount of
 * the edges it draws: every cites edge under its id, the reverse pairing,
 * times ordered and equal to the schema's, link splits covering cites, and
 * the same bytes whatever the thread count. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "gen.h"
#include "test_util.h"
#include "typed_build.h"
#include "writer.h"

TU_SCRATCH_DIR
TestSuite(typed_build, .init = setup, .fini = teardown);
TestSuite(typed_gen, .init = setup, .fini = teardown, .timeout = 300);

static fs_dataset_t *open_verified(const char *d)
{
    fs_dataset_t *ds;
    fs_error_t err = {0};
    cr_assert_eq(fs_dataset_open(d, FS_OPEN_VERIFY, 2, &ds, &err), FS_OK, "%s", err.msg);
    return ds;
}

static int64_t source_at(const fs_edge_type_t *e, int64_t pos)
{
    return e->index_dtype == FS_DTYPE_I32 ? ((const int32_t *)e->indices)[pos] : ((const int64_t *)e->indices)[pos];
}

static int64_t id_at(const fs_edge_type_t *e, int64_t pos) { return e->edge_ids ? e->edge_ids[pos] : pos; }

static void expect_i64(const int64_t *got, const int64_t *want, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "%s[%lld] is %lld, want %lld", what, (long long)i, (long long)got[i],
                     (long long)want[i]);
}

static void expect_sources(const fs_edge_type_t *e, const int64_t *want, int64_t n)
{
    for (int64_t i = 0; i < n; i++) cr_assert_eq(source_at(e, i), want[i], "source at %lld", (long long)i);
}

/* ---- the builder ------------------------------------------------------------------- */

/* a (3 nodes) -> b (4 nodes), timed and weighted, with its reverse. */
enum { M = 6 };
static const int64_t SRC[M] = {0, 1, 2, 0, 2, 1}, DST[M] = {1, 1, 1, 0, 3, 1}, TIME[M] = {5, 3, 5, 9, 1, 3};
static const float WT[M] = {0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f};

static fs_typed_t *start(fs_writer_t **w, const char *name, int threads)
{
    char *d = tu_path(dir, name);
    fs_typed_t *b;
    fs_error_t err = {0};
    cr_assert_eq(fs_writer_create(d, 1, w, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_typed_create(*w, threads, &b, &err), FS_OK, "%s", err.msg);
    free(d);
    return b;
}

static void finish(fs_writer_t *w, fs_typed_t *b)
{
    fs_error_t err = {0};
    cr_assert_eq(fs_typed_finish(b, &err), FS_OK, "%s", err.msg);
    fs_writer_set_meta(w, "hand", 0, 0, 0, 0);
    cr_assert_eq(fs_writer_commit(w, &err), FS_OK, "%s", err.msg);
}

static void build_hand_graph(const char *name, int threads)
{
    fs_writer_t *w;
    fs_typed_t *b = start(&w, name, threads);
    fs_error_t err = {0};
    int a, bt, e;
    int64_t *labels, *split, *time;
    float *feat, *efeat;
    cr_assert_eq(fs_typed_node_type(b, "a", 3, &a, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_typed_node_type(b, "b", 4, &bt, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_typed_node_table(b, a, "feat", FS_DTYPE_F32, 2, (void **)&feat, &err), FS_OK, "%s", err.msg);
    for (int i = 0; i < 6; i++) feat[i] = (float)i;
    cr_assert_eq(fs_typed_node_labels(b, a, -1, &labels, &err), FS_OK, "%s", err.msg);
    labels[0] = 4, labels[1] = -1, labels[2] = 1;
    cr_assert_eq(fs_typed_node_time(b, bt, &time, &err), FS_OK, "%s", err.msg);
    for (int i = 0; i < 4; i++) time[i] = 100 + i;
    cr_assert_eq(fs_typed_node_split(b, a, "train", 2, &split, &err), FS_OK, "%s", err.msg);
    split[0] = 0, split[1] = 2;
    fs_typed_edges_t te = {.src = "a", .rel = "to", .dst = "b", .num_edges = M, .src_ids = SRC, .dst_ids = DST,
                           .weights = WT, .time = TIME, .reverse = "from"};
    cr_assert_eq(fs_typed_edge_type(b, &te, &e, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_typed_edge_table(b, e, "f", FS_DTYPE_F32, 1, (void **)&efeat, &err), FS_OK, "%s", err.msg);
    for (int i = 0; i < M; i++) efeat[i] = 10.0f * (float)i;
    /* b -> a, untimed, given in destination order: the identity, so no edge ids */
    static const int64_t s2[3] = {3, 0, 1}, d2[3] = {0, 1, 1};
    fs_typed_edges_t plain = {.src = "b", .rel = "back", .dst = "a", .num_edges = 3, .src_ids = s2, .dst_ids = d2};
    cr_assert_eq(fs_typed_edge_type(b, &plain, NULL, &err), FS_OK, "%s", err.msg);
    fs_typed_link_t l;
    cr_assert_eq(fs_typed_link_split(b, "train", e, 2, FS_LINK_LABEL | FS_LINK_TIME, 3, &l, &err), FS_OK, "%s", err.msg);
    for (int i = 0; i < 2; i++) l.src[i] = SRC[i], l.dst[i] = DST[i], l.label[i] = 1, l.time[i] = TIME[i];
    for (int i = 0; i < 6; i++) l.neg_dst[i] = i % 4;
    finish(w, b);
}

Test(typed_build, csc_ordered_by_time_then_edge_id_with_its_reverse)
{
    build_hand_graph("g", 2);
    char *d = tu_path(dir, "g");
    fs_dataset_t *ds = open_verified(d);
    cr_assert_eq(ds->num_node_types, 2);
    cr_assert_eq(ds->num_edge_types, 3);
    int to = fs_dataset_edge_type(ds, "a", "to", "b"), from = fs_dataset_edge_type(ds, "b", "from", "a");
    cr_assert(to >= 0 && from >= 0);
    cr_assert_eq(ds->edge_types[to].reverse, from);
    cr_assert_eq(ds->edge_types[from].reverse, to);
    /* toward b: row 0 = edge 3; row 1 = edges 1, 5 (t 3), 0, 2 (t 5); row 2 empty; row 3 = edge 4 */
    const fs_edge_type_t *e = &ds->edge_types[to];
    expect_i64(e->indptr, (int64_t[]){0, 1, 5, 5, 6}, 5, "indptr");
    cr_assert_eq(e->index_dtype, FS_DTYPE_I32);
    expect_sources(e, (int64_t[]){0, 1, 1, 0, 2, 2}, M);
    expect_i64(e->edge_ids, (int64_t[]){3, 1, 5, 0, 2, 4}, M, "edge_ids");
    expect_i64(e->time, (int64_t[]){9, 3, 3, 5, 5, 1}, M, "time");
    for (int q = 0; q < M; q++) cr_assert_eq(e->weights[q], WT[e->edge_ids[q]], "weights are by position");
    cr_assert_eq(e->num_tables, 1);
    cr_assert_eq(((const float *)e->tables[0].data)[5], 50.0f, "edge tables are by edge id");
    /* the reverse, toward a: row 0 = edges 0 (t 5), 3 (t 9); row 1 = 1, 5 (t 3, tie by id); row 2 = 4 (t 1), 2 (t 5) */
    const fs_edge_type_t *r = &ds->edge_types[from];
    expect_i64(r->indptr, (int64_t[]){0, 2, 4, 6}, 4, "reverse indptr");
    expect_sources(r, (int64_t[]){1, 0, 1, 1, 3, 1}, M);
    expect_i64(r->edge_ids, (int64_t[]){0, 3, 1, 5, 4, 2}, M, "reverse edge_ids");
    expect_i64(r->time, (int64_t[]){5, 9, 3, 3, 1, 5}, M, "reverse time");
    cr_assert_eq(r->num_tables, 0, "the reverse has no tables of its own");
    const fs_edge_type_t *back = &ds->edge_types[fs_dataset_edge_type(ds, "b", "back", "a")];
    cr_assert_null(back->edge_ids, "an identity order writes no edge ids");
    cr_assert_null(back->time);
    expect_sources(back, (int64_t[]){3, 0, 1}, 3);
    const fs_node_type_t *a = &ds->node_types[0];
    cr_assert_eq(a->num_classes, 5, "counted from the labels: max 4 + 1");
    cr_assert_eq(a->num_tables, 2, "feat and labels");
    cr_assert_eq(a->splits[0].ids[1], 2);
    cr_assert_eq(ds->node_types[1].time[3], 103);
    cr_assert_eq(ds->num_link_splits, 1);
    const fs_link_split_t *l = &ds->link_splits[0];
    cr_assert_eq(l->edge_type, to);
    cr_assert_eq(l->num_neg, 3);
    cr_assert_eq(l->label[1], 1);
    cr_assert_eq(l->time[0], 5);
    fs_dataset_close(ds);

    build_hand_graph("g1", 1);
    char *d1 = tu_path(dir, "g1");
    DIR *dh = opendir(d);
    struct dirent *ent;
    int files = 0;
    while ((ent = readdir(dh))) {
        if (ent->d_name[0] == '.') continue;
        char *x = tu_path(d, ent->d_name), *y = tu_path(d1, ent->d_name);
        cr_assert(tu_files_equal(x, y), "%s differs between 1 and 2 threads", ent->d_name);
        free(x), free(y);
        files++;
    }
    closedir(dh);
    cr_assert_gt(files, 20);
    free(d), free(d1);
}

Test(typed_build, ids_out_of_range_name_the_edge_type_and_position)
{
    fs_writer_t *w;
    fs_typed_t *b = start(&w, "bad", 1);
    fs_error_t err = {0};
    cr_assert_eq(fs_typed_node_type(b, "a", 3, NULL, &err), FS_OK);
    cr_assert_eq(fs_typed_node_type(b, "b", 2, NULL, &err), FS_OK);
    static const int64_t s[3] = {0, 1, 2}, d[3] = {1, 0, 2};
    fs_typed_edges_t te = {.src = "a", .rel = "to", .dst = "b", .num_edges = 3, .src_ids = s, .dst_ids = d};
    cr_assert_eq(fs_typed_edge_type(b, &te, NULL, &err), FS_ERR_FORMAT);
    cr_assert_not_null(strstr(err.msg, "edge type (a, to, b): edge 2 (its position in the input) has destination id 2, "
                                       "outside [0, 2) of node type 'b'"), "%s", err.msg);
    te.dst_ids = s, te.src_ids = d, te.dst = "a", te.src = "c";
    cr_assert_eq(fs_typed_edge_type(b, &te, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "node type 'c', which was not added"), "%s", err.msg);
    cr_assert_eq(fs_typed_node_type(b, "a", 1, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fs_typed_node_type(b, "a b", 1, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    void *rows;
    cr_assert_eq(fs_typed_node_table(b, 0, "labels", FS_DTYPE_F32, 1, &rows, &err), FS_ERR_INVALID_ARGUMENT);
    fs_typed_free(b);
    fs_writer_abort(w);
}

Test(typed_build, int64_indices_once_the_source_type_reaches_2_31)
{
    fs_writer_t *w;
    fs_typed_t *b = start(&w, "wide", 1);
    fs_error_t err = {0};
    int64_t big = (int64_t)1 << 31;
    cr_assert_eq(fs_typed_node_type(b, "big", big, NULL, &err), FS_OK);
    cr_assert_eq(fs_typed_node_type(b, "fits", big - 1, NULL, &err), FS_OK);
    cr_assert_eq(fs_typed_node_type(b, "small", 2, NULL, &err), FS_OK);
    static const int64_t d[2] = {1, 0};
    const int64_t s[2] = {big - 1, 5};
    fs_typed_edges_t te = {.src = "big", .rel = "to", .dst = "small", .num_edges = 2, .src_ids = s, .dst_ids = d};
    cr_assert_eq(fs_typed_edge_type(b, &te, NULL, &err), FS_OK, "%s", err.msg);
    const int64_t s2[2] = {big - 2, 5};
    te.src = "fits", te.src_ids = s2;
    cr_assert_eq(fs_typed_edge_type(b, &te, NULL, &err), FS_OK, "%s", err.msg);
    finish(w, b);
    char *p = tu_path(dir, "wide");
    fs_dataset_t *ds = open_verified(p);
    const fs_edge_type_t *e = &ds->edge_types[0], *f = &ds->edge_types[1];
    cr_assert_eq(e->index_dtype, FS_DTYPE_I64);
    cr_assert_eq(source_at(e, 1), big - 1);
    cr_assert_eq(f->index_dtype, FS_DTYPE_I32);
    cr_assert_eq(source_at(f, 1), big - 2);
    fs_dataset_close(ds);
    free(p);
}

/* ---- the generator ------------------------------------------------------------------- */

static fs_rmat_opts_t small(int threads)
{
    fs_rmat_opts_t o;
    fs_rmat_defaults(&o);
    o.scale = 8;
    o.edge_factor = 8;
    o.dim = 8;
    o.threads = threads;
    return o;
}

static char *gen(const char *name, fs_rmat_opts_t o)
{
    char *out = tu_path(dir, name);
    o.out_dir = out;
    fs_error_t err = {0};
    cr_assert_eq(fs_gen_rmat_typed(&o, &err), FS_OK, "%s", err.msg);
    return out;
}

static const fs_edge_type_t *edge_type(const fs_dataset_t *ds, const char *s, const char *r, const char *d)
{
    int i = fs_dataset_edge_type(ds, s, r, d);
    cr_assert(i >= 0, "no edge type (%s, %s, %s)", s, r, d);
    return &ds->edge_types[i];
}

/* The edge type's (src, dst) by edge id, read back from the CSC. */
static void by_id(const fs_dataset_t *ds, const fs_edge_type_t *e, int64_t *src, int64_t *dst)
{
    for (int64_t v = 0; v < ds->node_types[e->dst_type].count; v++)
        for (int64_t q = e->indptr[v]; q < e->indptr[v + 1]; q++) src[id_at(e, q)] = source_at(e, q), dst[id_at(e, q)] = v;
}

static void expect_times_ordered(const fs_dataset_t *ds, const fs_edge_type_t *e)
{
    cr_assert_not_null(e->time, "(%s, %s, %s) has times", e->src, e->rel, e->dst);
    for (int64_t v = 0; v < ds->node_types[e->dst_type].count; v++)
        for (int64_t q = e->indptr[v] + 1; q < e->indptr[v + 1]; q++)
            cr_assert_leq(e->time[q - 1], e->time[q], "(%s, %s, %s): time decreases at %lld", e->src, e->rel, e->dst,
                          (long long)q);
}

/* Each edge type with a reverse holds edge i reversed as the reverse's edge i. */
static void expect_reverse_pairs(const fs_dataset_t *ds)
{
    for (int i = 0; i < ds->num_edge_types; i++) {
        const fs_edge_type_t *e = &ds->edge_types[i];
        cr_assert_geq(e->reverse, 0, "(%s, %s, %s) has a reverse", e->src, e->rel, e->dst);
        const fs_edge_type_t *r = &ds->edge_types[e->reverse];
        cr_assert_eq(r->reverse, i, "paired both ways");
        cr_assert_eq(r->num_edges, e->num_edges);
        int64_t m = e->num_edges, *s1 = malloc((size_t)m * 8), *d1 = malloc((size_t)m * 8), *s2 = malloc((size_t)m * 8),
                *d2 = malloc((size_t)m * 8);
        by_id(ds, e, s1, d1);
        by_id(ds, r, s2, d2);
        for (int64_t k = 0; k < m; k++)
            cr_assert(s1[k] == d2[k] && d1[k] == s2[k], "(%s, %s, %s) edge %lld is (%lld, %lld), its reverse (%lld, %lld)",
                      e->src, e->rel, e->dst, (long long)k, (long long)s1[k], (long long)d1[k], (long long)s2[k],
                      (long long)d2[k]);
        free(s1), free(d1), free(s2), free(d2);
    }
}

static int cmp_triple(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    for (int i = 0; i < 3; i++)
        if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
    return 0;
}

/* Cites against R-MAT's own draw of each edge (fs_rmat_edge), the link
 * splits against the same recount as a multiset of (src, dst, time). */
static void expect_cites(const fs_dataset_t *ds, const fs_rmat_opts_t *o)
{
    const fs_edge_type_t *c = edge_type(ds, "paper", "cites", "paper");
    const int64_t *year = ds->node_types[c->src_type].time;
    int64_t n = (int64_t)1 << o->scale, m = n * o->edge_factor, *src = malloc((size_t)m * 8),
            *dst = malloc((size_t)m * 8), *indeg = calloc((size_t)n, 8), *want = malloc((size_t)m * 24),
            *got = malloc((size_t)m * 24);
    cr_assert_eq(c->num_edges, m);
    by_id(ds, c, src, dst);
    fs_rmat_quadrants_t q = fs_rmat_quadrants(o->a, o->b, o->c);
    for (int64_t k = 0; k < m; k++) {
        int64_t u, v;
        fs_rmat_edge(o->seed, o->scale, q, (uint64_t)k, &u, &v);
        cr_assert(src[k] == u && dst[k] == v, "cites edge %lld is (%lld, %lld), R-MAT drew (%lld, %lld)", (long long)k,
                  (long long)src[k], (long long)dst[k], (long long)u, (long long)v);
        indeg[v]++;
        want[3 * k] = u, want[3 * k + 1] = v, want[3 * k + 2] = year[u];
    }
    for (int64_t v = 0; v < n; v++) cr_assert_eq(c->indptr[v + 1] - c->indptr[v], indeg[v], "paper %lld", (long long)v);
    for (int64_t p = 0; p < m; p++) {
        cr_assert_eq(c->time[p], year[source_at(c, p)], "a citation's time is the citing paper's");
        cr_assert(c->weights[p] > 0 && c->weights[p] <= 1, "weight %g", (double)c->weights[p]);
    }
    cr_assert_eq(c->num_tables, 1);
    cr_assert_eq(c->tables[0].dim, FS_TYPED_EDGE_DIM);
    cr_assert_eq(ds->num_link_splits, 3);
    int64_t k = 0;
    static const char *const names[3] = {"train", "valid", "test"};
    const int64_t counts[3] = {m * 85 / 100, m * 5 / 100, m - m * 85 / 100 - m * 5 / 100};
    for (int i = 0; i < 3; i++) {
        const fs_link_split_t *l = &ds->link_splits[i];
        cr_assert_str_eq(l->name, names[i]);
        cr_assert_eq(&ds->edge_types[l->edge_type], c);
        cr_assert_eq(l->count, counts[i], "%s: %lld links", names[i], (long long)l->count);
        cr_assert_not_null(l->time);
        for (int64_t j = 0; j < l->count; j++, k++)
            got[3 * k] = l->src[j], got[3 * k + 1] = l->dst[j], got[3 * k + 2] = l->time[j];
    }
    cr_assert_eq(k, m);
    qsort(want, (size_t)m, 24, cmp_triple);
    qsort(got, (size_t)m, 24, cmp_triple);
    cr_assert_eq(memcmp(want, got, (size_t)m * 24), 0, "the link splits partition the cites edges");
    free(src), free(dst), free(indeg), free(want), free(got);
}

/* writes: 1-3 distinct authors a paper, at its time; published_in: one venue a paper. */
static void expect_writes_and_venues(const fs_dataset_t *ds)
{
    const fs_edge_type_t *w = edge_type(ds, "author", "writes", "paper");
    const fs_edge_type_t *pub = edge_type(ds, "paper", "published_in", "venue");
    const fs_edge_type_t *pubr = edge_type(ds, "venue", "publishes", "paper");
    const fs_node_type_t *paper = &ds->node_types[w->dst_type];
    for (int64_t p = 0; p < paper->count; p++) {
        int64_t b = w->indptr[p], e = w->indptr[p + 1];
        cr_assert(e - b >= 1 && e - b <= 3, "paper %lld has %lld authors", (long long)p, (long long)(e - b));
        for (int64_t x = b; x < e; x++) {
            cr_assert_eq(w->time[x], paper->time[p]);
            for (int64_t y = b; y < x; y++) cr_assert_neq(source_at(w, x), source_at(w, y), "a repeated author");
        }
        cr_assert_eq(pubr->indptr[p + 1] - pubr->indptr[p], 1, "paper %lld: one venue", (long long)p);
        cr_assert_eq(id_at(pubr, pubr->indptr[p]), p, "published_in's edge p is paper p's");
        cr_assert_eq(pubr->time[pubr->indptr[p]], paper->time[p]);
        cr_assert(paper->time[p] >= FS_TYPED_YEAR_MIN && paper->time[p] <= FS_TYPED_YEAR_MAX);
    }
    cr_assert_eq(pub->num_edges, paper->count);
    for (int64_t q = 0; q < pub->num_edges; q++) cr_assert_eq(pub->time[q], paper->time[source_at(pub, q)]);
}

Test(typed_gen, counts_reverse_pairs_times_and_every_cites_edge)
{
    fs_rmat_opts_t o = small(2);
    char *d = gen("g", o);
    fs_dataset_t *ds = open_verified(d);
    cr_assert_eq(ds->version, 2);
    cr_assert_eq(ds->num_node_types, 3);
    static const char *const types[3] = {"paper", "author", "venue"};
    static const int64_t counts[3] = {256, 128, 16};
    for (int i = 0; i < 3; i++) {
        cr_assert_str_eq(ds->node_types[i].name, types[i]);
        cr_assert_eq(ds->node_types[i].count, counts[i]);
        cr_assert_not_null(fs_node_type_table(&ds->node_types[i], "feat"));
    }
    const fs_node_type_t *paper = &ds->node_types[0];
    cr_assert_eq(paper->num_classes, o.num_classes);
    cr_assert_not_null(paper->time);
    cr_assert_eq(paper->num_splits, 3);
    cr_assert_eq(paper->splits[0].count + paper->splits[1].count + paper->splits[2].count, 256);
    cr_assert_eq(ds->num_edge_types, 6);
    expect_reverse_pairs(ds);
    for (int i = 0; i < ds->num_edge_types; i++) expect_times_ordered(ds, &ds->edge_types[i]);
    expect_cites(ds, &o);
    expect_writes_and_venues(ds);
    fs_dataset_close(ds);

    char *out;
    cr_assert_eq(tu_run(&out, "%s info %s", tu_bin(), d), 0, "%s", out);
    cr_assert_not_null(strstr(out, "edge type (paper, cites, paper): 2048 edges"), "%s", out);
    cr_assert_not_null(strstr(out, "reverse: (paper, cited_by, paper)"), "%s", out);
    cr_assert_not_null(strstr(out, "link split train: 1740 edges of (paper, cites, paper), timed"), "%s", out);
    free(out);
    free(d);
}

static void expect_same_dirs(const char *a, const char *b, const char *what)
{
    DIR *dh = opendir(a);
    struct dirent *ent;
    int files = 0;
    while ((ent = readdir(dh))) {
        if (ent->d_name[0] == '.') continue;
        char *x = tu_path(a, ent->d_name), *y = tu_path(b, ent->d_name);
        cr_assert(tu_files_equal(x, y), "%s differs %s", ent->d_name, what);
        free(x), free(y);
        files++;
    }
    closedir(dh);
    cr_assert_eq(files, 43, "every file compared (%d)", files);
}

Test(typed_gen, same_bytes_whatever_the_thread_count)
{
    char *a = gen("t1", small(1)), *b = gen("t2", small(2)), *c = gen("t3", small(3));
    expect_same_dirs(a, b, "between 1 and 2 threads");
    expect_same_dirs(a, c, "between 1 and 3 threads");
    fs_rmat_opts_t o = small(2);
    o.seed = 2;
    char *s = gen("s2", o), *x = tu_path(a, "paper.cites.paper.indices.npy"), *y = tu_path(s, "paper.cites.paper.indices.npy");
    cr_assert_not(tu_files_equal(x, y), "another seed, other edges");
    free(a), free(b), free(c), free(s), free(x), free(y);
}

Test(typed_gen, the_command_line)
{
    char *d = tu_path(dir, "cli"), *out;
    cr_assert_eq(tu_run(&out, "%s gen rmat --typed --scale 6 --edge-factor 4 --dim 0 --threads 2 --out %s", tu_bin(), d),
                 0, "%s", out);
    free(out);
    cr_assert_eq(tu_run(&out, "%s info %s", tu_bin(), d), 0, "%s", out);
    cr_assert_not_null(strstr(out, "node type venue: 16 nodes"), "%s", out);
    cr_assert_not_null(strstr(out, "edge type (paper, cites, paper): 256 edges"), "%s", out);
    cr_assert_null(strstr(out, "table feat         float32  [64 x"), "--dim 0: no node features\n%s", out);
    free(out);
    cr_assert_eq(tu_run(&out, "%s gen rmat --typed --permute --out %s/x", tu_bin(), dir), 2, "%s", out);
    cr_assert_not_null(strstr(out, "--typed takes none of"), "%s", out);
    free(out);
    free(d);
}
