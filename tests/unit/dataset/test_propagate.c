/* test_propagate.c — `featstore propagate` and its products
 * (kernels/fs_propagate.h, dataset/propagate.h, docs/algorithms.md §8):
 *
 *   - the hop tables against a dense float64 reference B^r X (B built as a
 *     dense matrix from the adjacency) on small random directed graphs with
 *     repeated edges and self-loops, every norm, with and without
 *     self-loops, symmetrised or as stored; and on Cora (64 of its 1433
 *     columns: the reference is dense). Tolerance: every element within
 *     1e-5 x the largest magnitude of its hop table (the products add in
 *     float32, the reference in float64);
 *   - bit-identical results for any thread count;
 *   - float16 / bfloat16 hop tables equal the float32 ones rounded by
 *     fs_f32_to_f16 / fs_f32_to_bf16, bit for bit; float16 input tables;
 *     int8 ones, the float32 rows coded by fs_int8_quantize_row;
 *   - --rows labelled: each split's rows contiguous, the seeded order, the
 *     index, and every row equal to the all-rows table's row of its node;
 *   - SIGINT / SIGTERM mid-way leave every file of the dataset (and the
 *     manifest) byte-identical, the dataset valid, and no scratch files;
 *   - bad options and refusals named, with their exit codes;
 *   - the manifest's "propagation" checked on open; the tables served. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "featstore/client.h"
#include "fs_propagate.h"
#include "fs_rng.h"
#include "propagate.h"
#include "fs_npy.h"
#include "test_util.h"
#include "typed_build.h"
#include "writer.h"

TU_SCRATCH_DIR
TestSuite(propagate, .init = setup, .fini = teardown, .timeout = 600);

#define TOL 1e-5

/* ---- graphs and datasets ------------------------------------------------------ */

typedef struct {
    int64_t n, dim;
    int64_t *ip;
    int32_t *ix;
    float *x;
} graph_t;

/* A random directed graph: ~deg edges per row to uniform targets (repeats
 * and self-loops included, some rows empty), features in [-1, 1). */
static graph_t random_graph(uint64_t seed, int64_t n, int deg, int64_t dim)
{
    fs_rng_t r = fs_rng_make(seed, 1);
    graph_t g = {.n = n, .dim = dim};
    g.ip = calloc((size_t)n + 1, sizeof *g.ip);
    g.ix = malloc((size_t)(n * 2 * deg + 1) * sizeof *g.ix);
    for (int64_t i = 0; i < n; i++) {
        int64_t d = (int64_t)fs_rng_below(&r, (uint64_t)(2 * deg + 1));
        for (int64_t k = 0; k < d; k++) g.ix[g.ip[i] + k] = (int32_t)fs_rng_below(&r, (uint64_t)n);
        g.ip[i + 1] = g.ip[i] + d;
    }
    g.x = malloc((size_t)(n * dim) * sizeof *g.x);
    for (int64_t k = 0; k < n * dim; k++) g.x[k] = (float)(2 * fs_rng_unit(&r) - 1);
    return g;
}

static void graph_free(graph_t *g)
{
    free(g->ip), free(g->ix), free(g->x);
}

/* g as a dataset at path: table feat (dtype dt), and splits train = the
 * even nodes below n/2, test = multiples of 3 at or above n/2 (when splits). */
static void write_graph(const char *path, const graph_t *g, fs_dtype_t dt, int symmetric, int splits)
{
    fs_writer_t *w;
    fs_error_t err = {0};
    cr_assert_eq(fs_writer_create(path, 1, &w, &err), FS_OK, "%s", err.msg);
    int64_t shape[2] = {g->n + 1, g->dim};
    void *p;
    cr_assert_eq(fs_writer_array(w, FS_ROLE_INDPTR, NULL, FS_DTYPE_I64, 1, shape, &p, &err), FS_OK);
    memcpy(p, g->ip, (size_t)(g->n + 1) * sizeof *g->ip);
    shape[0] = g->ip[g->n];
    cr_assert_eq(fs_writer_array(w, FS_ROLE_INDICES, NULL, FS_DTYPE_I32, 1, shape, &p, &err), FS_OK);
    memcpy(p, g->ix, (size_t)g->ip[g->n] * sizeof *g->ix);
    shape[0] = g->n;
    cr_assert_eq(fs_writer_array(w, FS_ROLE_FEATURES, "feat", dt, 2, shape, &p, &err), FS_OK);
    fs_convert_from_f32(g->x, (size_t)(g->n * g->dim), dt, p);
    if (splits) {
        int64_t *ids, k = 0;
        shape[0] = (g->n / 2 + 1) / 2;
        cr_assert_eq(fs_writer_array(w, FS_ROLE_SPLIT, "train", FS_DTYPE_I64, 1, shape, (void **)&ids, &err), FS_OK);
        for (int64_t v = 0; v < g->n / 2; v += 2) ids[k++] = v;
        int64_t first = (g->n / 2 + 2) / 3 * 3;
        shape[0] = first < g->n ? (g->n - 1 - first) / 3 + 1 : 0;
        cr_assert_eq(fs_writer_array(w, FS_ROLE_SPLIT, "test", FS_DTYPE_I64, 1, shape, (void **)&ids, &err), FS_OK);
        k = 0;
        for (int64_t v = first; v < g->n; v += 3) ids[k++] = v;
    }
    fs_writer_set_meta(w, "random", g->n, g->ip[g->n], symmetric, 0);
    cr_assert_eq(fs_writer_commit(w, &err), FS_OK, "%s", err.msg);
}

/* ---- the dense reference ------------------------------------------------------ */

/* B as a dense n x n float64 matrix: A_ij = times j is stored in row i (or
 * 1 where i -> j or j -> i when symmetrised), + I, then the norm. */
static double *dense_b(int64_t n, const int64_t *ip, const void *ix, fs_dtype_t it, int symmetrize, fs_prop_norm_t norm,
                       int self)
{
    double *a = calloc((size_t)(n * n + 1), sizeof *a), *d = calloc((size_t)n + 1, sizeof *d);
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = ip[i]; k < ip[i + 1]; k++)
            a[i * n + (it == FS_DTYPE_I32 ? ((const int32_t *)ix)[k] : ((const int64_t *)ix)[k])] += 1;
    if (symmetrize)
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j <= i; j++) a[i * n + j] = a[j * n + i] = (a[i * n + j] > 0 || a[j * n + i] > 0);
    for (int64_t i = 0; self && i < n; i++) a[i * n + i] += 1;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) d[i] += a[i * n + j];
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            double *v = &a[i * n + j];
            if (*v == 0) continue;
            /* A row summing to 0 scales by 0 (PyG's 0^-1/2 = 0): as stored, a
             * column's node may have an empty row. */
            if (norm == FS_PROP_SYM) *v = d[j] > 0 ? *v / (sqrt(d[i]) * sqrt(d[j])) : 0;
            if (norm == FS_PROP_RW) *v /= d[i];
        }
    free(d);
    return a;
}

/* [hops + 1][n][ncols]: X_r's columns cols of X_0 = x (float32 [n][dim]). */
static double *dense_hops(int64_t n, const double *b, const float *x, int64_t dim, const int64_t *cols, int64_t ncols,
                          int hops)
{
    size_t plane = (size_t)(n * ncols);
    double *h = calloc(plane * (size_t)(hops + 1) + 1, sizeof *h);
    for (int64_t i = 0; i < n; i++)
        for (int64_t c = 0; c < ncols; c++) h[i * ncols + c] = x[i * dim + cols[c]];
    for (int r = 1; r <= hops; r++) {
        const double *in = h + plane * (size_t)(r - 1);
        double *out = h + plane * (size_t)r;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                double v = b[i * n + j];
                if (v == 0) continue;
                for (int64_t c = 0; c < ncols; c++) out[i * ncols + c] += v * in[j * ncols + c];
            }
    }
    return h;
}

/* Checks a hop table (rows: by node, or row q is node nodes[q]) against the
 * reference plane; returns the largest error over the largest magnitude. */
static double check_table(const fs_table_t *t, const int64_t *nodes, int64_t rows, const double *ref,
                          const int64_t *cols, int64_t ncols, const char *what)
{
    double peak = 0, worst = 0;
    float *row = malloc((size_t)t->dim * sizeof *row);
    cr_assert_eq(t->rows, rows, "%s: %lld rows, want %lld", what, (long long)t->rows, (long long)rows);
    for (int64_t q = 0; q < rows; q++) {
        int64_t v = nodes ? nodes[q] : q;
        for (int64_t c = 0; c < ncols; c++) peak = fmax(peak, fabs(ref[v * ncols + c]));
    }
    for (int64_t q = 0; q < rows; q++) {
        int64_t v = nodes ? nodes[q] : q;
        fs_convert_to_f32(t->dtype, (const char *)t->data + (size_t)q * t->row_bytes, (size_t)t->dim, row);
        for (int64_t c = 0; c < ncols; c++) worst = fmax(worst, fabs((double)row[cols[c]] - ref[v * ncols + c]));
    }
    free(row);
    double rel = peak > 0 ? worst / peak : worst;
    cr_assert_leq(rel, TOL, "%s: largest error %g is %g of the largest magnitude %g (tolerance %g)", what, worst, rel,
                  peak, TOL);
    return rel;
}

/* ---- running the products in-process ------------------------------------------ */

typedef struct {
    float *y;                  /* [hops + 1][n][dim] */
    int64_t n, dim;
    int hop;
} collect_t;

static void collect(void *ctx, int64_t b, int64_t e, const float *rows, int w)
{
    (void)w;
    collect_t *c = ctx;
    memcpy(c->y + ((size_t)c->hop * (size_t)c->n + (size_t)b) * (size_t)c->dim, rows,
           (size_t)(e - b) * (size_t)c->dim * sizeof(float));
}

/* X_0..X_R of g with the kernel alone, at `threads` threads. */
static float *kernel_hops(const graph_t *gr, int symmetrize, fs_prop_norm_t norm, int self, int hops, int threads)
{
    fs_prop_graph_t g = {.num_nodes = gr->n, .indptr = gr->ip, .indices = gr->ix, .index_dtype = FS_DTYPE_I32};
    fs_prop_owned_graph_t sym = {0};
    fs_error_t err = {0};
    if (symmetrize) cr_assert_eq(fs_prop_symmetrize(&g, threads, &sym, &err), FS_OK, "%s", err.msg);
    fs_prop_scales_t sc;
    cr_assert_eq(fs_prop_scales_make(symmetrize ? &sym.g : &g, norm, self, &sc, &err), FS_OK);
    size_t plane = (size_t)(gr->n * gr->dim);
    collect_t c = {.y = calloc(plane * (size_t)(hops + 1) + 1, sizeof(float)), .n = gr->n, .dim = gr->dim};
    float *za = calloc(plane + 1, sizeof(float)), *zb = calloc(plane + 1, sizeof(float));
    fs_prop_pass_t p = {.graph = symmetrize ? &sym.g : &g, .scales = &sc, .dim = gr->dim, .threads = threads,
                        .sink = collect, .sink_ctx = &c};
    int stopped = 0;
    cr_assert_eq(fs_prop_start(&p, gr->x, FS_DTYPE_F32, za, &stopped, &err), FS_OK, "%s", err.msg);
    for (int r = 1; r <= hops; r++) {
        c.hop = r;
        cr_assert_eq(fs_prop_hop(&p, za, r < hops ? zb : NULL, &stopped, &err), FS_OK, "%s", err.msg);
        float *t = za;
        za = zb, zb = t;
    }
    cr_assert_eq(stopped, 0);
    free(za), free(zb);
    fs_prop_scales_free(&sc);
    fs_prop_graph_free(&sym);
    return c.y;
}

static int64_t *all_columns(int64_t dim)
{
    int64_t *cols = malloc((size_t)dim * sizeof *cols);
    for (int64_t c = 0; c < dim; c++) cols[c] = c;
    return cols;
}

Test(propagate, products_match_a_dense_reference_on_random_graphs)
{
    static const struct { int64_t n, dim; int deg; } shapes[] = {{1, 3, 1}, {7, 1, 2}, {50, 17, 3}, {120, 70, 6}, {200, 9, 12}};
    double worst = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        graph_t g = random_graph(100 + s, shapes[s].n, shapes[s].deg, shapes[s].dim);
        int64_t *cols = all_columns(g.dim);
        for (int sym = 0; sym < 2; sym++)
            for (int norm = FS_PROP_SYM; norm <= FS_PROP_NONE; norm++)
                for (int self = 0; self < 2; self++) {
                    const int hops = 3;
                    double *b = dense_b(g.n, g.ip, g.ix, FS_DTYPE_I32, sym, (fs_prop_norm_t)norm, self);
                    double *ref = dense_hops(g.n, b, g.x, g.dim, cols, g.dim, hops);
                    float *y = kernel_hops(&g, sym, (fs_prop_norm_t)norm, self, hops, 3);
                    for (int r = 0; r <= hops; r++) {
                        fs_table_t t = {.dtype = FS_DTYPE_F32, .rows = g.n, .dim = g.dim,
                                        .row_bytes = (size_t)g.dim * sizeof(float),
                                        .data = y + (size_t)r * (size_t)(g.n * g.dim)};
                        char what[128];
                        snprintf(what, sizeof what, "n=%lld dim=%lld sym=%d norm=%s self=%d hop %d", (long long)g.n,
                                 (long long)g.dim, sym, fs_prop_norm_name(norm), self, r);
                        worst = fmax(worst, check_table(&t, NULL, g.n, ref + (size_t)r * (size_t)(g.n * g.dim), cols,
                                                        g.dim, what));
                    }
                    free(b), free(ref), free(y);
                }
        free(cols);
        graph_free(&g);
    }
    cr_log_info("largest error over the largest magnitude: %g", worst);
}

Test(propagate, products_are_the_same_bits_for_any_thread_count)
{
    graph_t g = random_graph(7, 3000, 20, 37);
    for (int sym = 0; sym < 2; sym++) {
        float *one = kernel_hops(&g, sym, FS_PROP_SYM, 1, 3, 1), *many = kernel_hops(&g, sym, FS_PROP_SYM, 1, 3, 5);
        cr_assert_eq(memcmp(one, many, (size_t)(4 * g.n * g.dim) * sizeof(float)), 0, "sym=%d: 1 and 5 threads differ",
                     sym);
        free(one), free(many);
    }
    graph_free(&g);
}

/* ---- the command ------------------------------------------------------------- */

static char *propagate_ok(const char *data, const char *opts)
{
    char *log;
    int rc = tu_run(&log, "%s propagate %s %s", tu_bin(), data, opts);
    cr_assert_eq(rc, 0, "propagate %s %s exited %d: %s", data, opts, rc, log);
    return log;
}

static fs_dataset_t *open_verified(const char *path)
{
    fs_dataset_t *ds;
    fs_error_t err = {0};
    cr_assert_eq(fs_dataset_open(path, FS_OPEN_VERIFY, 2, &ds, &err), FS_OK, "%s", err.msg);
    cr_assert(ds->checksums_verified);
    return ds;
}

/* Every hop table of the dataset at path against the dense reference. */
static void check_dataset(const char *path, const graph_t *g, int symmetrize, fs_prop_norm_t norm, int self, int hops)
{
    fs_dataset_t *ds = open_verified(path);
    const fs_propagation_t *p = ds->propagation;
    cr_assert_not_null(p, "%s: no propagation in the manifest", path);
    cr_assert_eq(p->hops, hops);
    cr_assert_eq(p->num_tables, hops + 1);
    cr_assert_str_eq(p->norm, fs_prop_norm_name(norm));
    cr_assert_eq(p->self_loops, self);
    cr_assert_str_eq(p->graph, symmetrize ? "symmetrized" : "stored");
    int64_t *cols = all_columns(g->dim);
    double *b = dense_b(g->n, g->ip, g->ix, FS_DTYPE_I32, symmetrize, norm, self);
    double *ref = dense_hops(g->n, b, g->x, g->dim, cols, g->dim, hops);
    for (int r = 0; r <= hops; r++) {
        char what[256];
        snprintf(what, sizeof what, "%s hop_%d", path, r);
        cr_assert_eq(fs_dataset_table(ds, p->tables[r].name) != NULL, !p->labelled, "%s: a feature table?", what);
        check_table(&p->tables[r], p->labelled ? p->row_nodes : NULL, p->labelled ? p->num_rows : g->n,
                    ref + (size_t)r * (size_t)(g->n * g->dim), cols, g->dim, what);
    }
    free(b), free(ref), free(cols);
    fs_dataset_close(ds);
}

Test(propagate, hop_tables_match_a_dense_reference_on_random_graphs)
{
    graph_t g = random_graph(42, 150, 4, 21);
    char *data = tu_path(dir, "g"), *log;
    write_graph(data, &g, FS_DTYPE_F32, 0, 1);
    /* The default: symmetrised first (the graph is not marked symmetric), sym, A + I. */
    free(propagate_ok(data, "--hops 3 --threads 2"));
    check_dataset(data, &g, 1, FS_PROP_SYM, 1, 3);
    cr_assert_eq(tu_run(&log, "%s info %s", tu_bin(), data), 0, "%s", log);
    cr_assert_not_null(strstr(log, "hop_0..hop_3 = B^r feat, B = D~^-1/2 (A+I) D~^-1/2"), "%s", log);
    cr_assert_not_null(strstr(log, "symmetrized"), "%s", log);
    cr_assert_not_null(strstr(log, "checksums match"), "%s", log);
    free(log);
    free(propagate_ok(data, "--hops 2 --norm rw --no-self-loops --as-stored --force --threads 3"));
    check_dataset(data, &g, 0, FS_PROP_RW, 0, 2);
    free(propagate_ok(data, "--hops 4 --norm none --rows labelled --seed 3 --force"));
    check_dataset(data, &g, 1, FS_PROP_NONE, 1, 4);
    /* A graph marked symmetric is taken as stored. */
    write_graph(data, &g, FS_DTYPE_F32, 1, 0);
    free(propagate_ok(data, "--hops 2 --self-loops"));
    check_dataset(data, &g, 0, FS_PROP_SYM, 1, 2);
    free(data);
    graph_free(&g);
}

Test(propagate, hop_tables_match_a_dense_reference_on_cora)
{
    fs_dataset_t *cora = tu_import_cora(dir); /* symmetrised and deduplicated: taken as stored */
    char *data = tu_path(dir, "cora");
    const int hops = 3;
    free(propagate_ok(data, "--hops 3"));
    const fs_table_t *feat = fs_dataset_table(cora, "feat");
    int64_t n = cora->num_nodes, cols[64];
    for (int c = 0; c < 64; c++) cols[c] = c == 63 ? feat->dim - 1 : (int64_t)c * 22; /* spread over the 1433 */
    double *b = dense_b(n, cora->indptr, cora->indices, cora->index_dtype, 0, FS_PROP_SYM, 1);
    double *ref = dense_hops(n, b, feat->data, feat->dim, cols, 64, hops);
    fs_dataset_t *ds = open_verified(data);
    cr_assert_str_eq(ds->propagation->graph, "stored");
    for (int r = 0; r <= hops; r++) {
        char what[64];
        snprintf(what, sizeof what, "cora hop_%d", r);
        const fs_table_t *t = fs_dataset_table(ds, what + 5);
        cr_assert_not_null(t);
        cr_assert_eq(t->dim, feat->dim);
        check_table(t, NULL, n, ref + (size_t)r * (size_t)(n * 64), cols, 64, what);
    }
    /* hop_0 is the table itself. */
    cr_assert_eq(memcmp(fs_dataset_table(ds, "hop_0")->data, feat->data, (size_t)n * feat->row_bytes), 0);
    free(b), free(ref), free(data);
    fs_dataset_close(ds);
    fs_dataset_close(cora);
}

/* g as a version-2 dataset of one node type (paper, table feat, splits
 * train and test as write_graph's) and one edge type (paper, cites, paper):
 * row i's entries j are the edges i -> j, stored toward the destination. */
static void write_typed_graph(const char *path, const graph_t *g)
{
    fs_writer_t *w;
    fs_typed_t *b;
    fs_error_t err = {0};
    cr_assert_eq(fs_writer_create(path, 1, &w, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_typed_create(w, 1, &b, &err), FS_OK, "%s", err.msg);
    int paper;
    float *rows;
    int64_t *ids, e = g->ip[g->n];
    cr_assert_eq(fs_typed_node_type(b, "paper", g->n, &paper, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_typed_node_table(b, paper, "feat", FS_DTYPE_F32, g->dim, (void **)&rows, &err), FS_OK, "%s", err.msg);
    memcpy(rows, g->x, (size_t)(g->n * g->dim) * sizeof(float));
    cr_assert_eq(fs_typed_node_split(b, paper, "train", 5, &ids, &err), FS_OK, "%s", err.msg);
    for (int64_t i = 0; i < 5; i++) ids[i] = 2 * i;
    cr_assert_eq(fs_typed_node_split(b, paper, "test", 4, &ids, &err), FS_OK, "%s", err.msg);
    for (int64_t i = 0; i < 4; i++) ids[i] = 2 * i + 21;
    int64_t *src = malloc((size_t)(e + 1) * sizeof *src), *dst = malloc((size_t)(e + 1) * sizeof *dst);
    for (int64_t i = 0; i < g->n; i++)
        for (int64_t k = g->ip[i]; k < g->ip[i + 1]; k++) src[k] = i, dst[k] = g->ix[k];
    fs_typed_edges_t edges = {.src = "paper", .rel = "cites", .dst = "paper", .num_edges = e, .src_ids = src, .dst_ids = dst};
    cr_assert_eq(fs_typed_edge_type(b, &edges, NULL, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_typed_finish(b, &err), FS_OK, "%s", err.msg);
    fs_writer_set_meta(w, "typed-one", 0, 0, 0, 0);
    cr_assert_eq(fs_writer_commit(w, &err), FS_OK, "%s", err.msg);
    free(src), free(dst);
}

Test(propagate, a_version_2_dataset_of_one_graph_gets_its_tables_too)
{
    graph_t g = random_graph(12, 60, 3, 6);
    char *data = tu_path(dir, "v2");
    write_typed_graph(data, &g);
    fs_dataset_t *ds = tu_open_dataset(data);
    cr_assert_eq(ds->version, 2);
    /* The stored graph is the transpose (toward the destination): the reference reads it as opened. */
    graph_t stored = {.n = g.n, .dim = g.dim, .ip = malloc((size_t)(g.n + 1) * 8), .ix = malloc((size_t)(ds->num_edges + 1) * 4),
                      .x = malloc((size_t)(g.n * g.dim) * 4)};
    memcpy(stored.ip, ds->indptr, (size_t)(g.n + 1) * 8);
    for (int64_t k = 0; k < ds->num_edges; k++) stored.ix[k] = (int32_t)fs_dataset_neighbor(ds, k);
    memcpy(stored.x, g.x, (size_t)(g.n * g.dim) * 4);
    fs_dataset_close(ds);
    free(propagate_ok(data, "--hops 2 --as-stored"));
    check_dataset(data, &stored, 0, FS_PROP_SYM, 1, 2);
    free(propagate_ok(data, "--hops 3 --norm rw --rows labelled --force"));
    check_dataset(data, &stored, 1, FS_PROP_RW, 1, 3);
    char *log;
    cr_assert_eq(tu_run(&log, "%s info %s", tu_bin(), data), 0, "%s", log);
    cr_assert_not_null(strstr(log, "train [0, 5), test [5, 9)"), "%s", log);
    free(log);
    free(data);
    graph_free(&g), graph_free(&stored);
}

/* Cora (tests/data/cora.npz) imported by the command into dir/name:
 * symmetrised, deduplicated, with the default random 60/20/20 split. */
static char *import_cora_split(const char *name)
{
    char *out = tu_path(dir, name), *log;
    int rc = tu_run(&log, "%s import npz %s --symmetrize --dedup --out %s", tu_bin(), tu_data("cora.npz"), out);
    cr_assert_eq(rc, 0, "%s", log);
    free(log);
    return out;
}

/* ---- dtypes -------------------------------------------------------------------- */

static void copy_dataset(const char *from, const char *to)
{
    cr_assert_eq(tu_run(NULL, "rm -rf %s && cp -r %s %s", to, from, to), 0);
}

/* Every value of t (f16 or bf16) is the float32 table's value rounded. */
static void check_rounded(const fs_table_t *f32, const fs_table_t *t)
{
    cr_assert_eq(f32->rows, t->rows);
    cr_assert_eq(f32->dim, t->dim);
    const float *a = f32->data;
    const uint16_t *h = t->data;
    for (int64_t k = 0; k < t->rows * t->dim; k++) {
        uint16_t want = t->dtype == FS_DTYPE_F16 ? fs_f32_to_f16(a[k]) : fs_f32_to_bf16(a[k]);
        cr_assert_eq(h[k], want, "%s %s element %lld: 0x%04x, the float32 %.9g rounds to 0x%04x", t->name,
                     fs_dtype_name(t->dtype), (long long)k, h[k], (double)a[k], want);
    }
}

Test(propagate, half_precision_tables_are_the_float32_result_rounded)
{
    graph_t g = random_graph(5, 400, 6, 19);
    char *base = tu_path(dir, "base"), *half = tu_path(dir, "f16"), *bf = tu_path(dir, "bf16");
    write_graph(base, &g, FS_DTYPE_F32, 0, 1);
    for (int labelled = 0; labelled < 2; labelled++) {
        const char *rows = labelled ? "--rows labelled --force" : "";
        copy_dataset(base, half);
        copy_dataset(base, bf);
        char opts[128];
        snprintf(opts, sizeof opts, "--hops 3 --dtype f32 %s", rows);
        free(propagate_ok(base, opts));
        snprintf(opts, sizeof opts, "--hops 3 --dtype f16 %s", rows);
        free(propagate_ok(half, opts));
        snprintf(opts, sizeof opts, "--hops 3 --dtype bfloat16 %s", rows);
        free(propagate_ok(bf, opts));
        fs_dataset_t *a = open_verified(base), *h = open_verified(half), *b = open_verified(bf);
        for (int r = 0; r <= 3; r++) {
            cr_assert_eq(h->propagation->tables[r].dtype, FS_DTYPE_F16);
            cr_assert_eq(b->propagation->tables[r].dtype, FS_DTYPE_BF16);
            check_rounded(&a->propagation->tables[r], &h->propagation->tables[r]);
            check_rounded(&a->propagation->tables[r], &b->propagation->tables[r]);
        }
        fs_dataset_close(a), fs_dataset_close(h), fs_dataset_close(b);
    }
    free(base), free(half), free(bf);
    graph_free(&g);
}

/* Every int8 row (scale, bias, codes) is fs_int8_quantize_row of the
 * float32 table's row, bit for bit, and decodes within half a step. */
static void check_int8(const fs_table_t *f32, const fs_table_t *t)
{
    cr_assert_eq(t->codec, FS_CODEC_INT8);
    cr_assert_eq(t->dim, f32->dim + FS_CODEC_INT8_HEAD);
    unsigned char *want = malloc((size_t)t->dim);
    float *back = malloc(sizeof(float) * (size_t)f32->dim);
    for (int64_t r = 0; r < t->rows; r++) {
        const float *x = (const float *)f32->data + r * f32->dim;
        const unsigned char *got = (const unsigned char *)t->data + r * t->dim;
        fs_int8_quantize_row(x, f32->dim, want, NULL);
        cr_assert_arr_eq(got, want, (size_t)t->dim, "%s row %lld", t->name, (long long)r);
        float scale;
        memcpy(&scale, got, 4);
        fs_int8_dequantize_row(got, f32->dim, back);
        for (int64_t j = 0; j < f32->dim; j++)
            cr_assert_leq(fabs((double)back[j] - x[j]), scale / 2.0 * (1 + 1e-5) + fabs(x[j]) * 1e-6);
    }
    free(want), free(back);
}

Test(propagate, int8_hop_tables_are_the_float32_result_coded)
{
    graph_t g = random_graph(6, 300, 5, 23);
    char *base = tu_path(dir, "base8"), *q = tu_path(dir, "int8");
    write_graph(base, &g, FS_DTYPE_F32, 0, 1);
    for (int labelled = 0; labelled < 2; labelled++) {
        const char *rows = labelled ? "--rows labelled --force" : "";
        copy_dataset(base, q);
        char opts[128];
        snprintf(opts, sizeof opts, "--hops 2 %s", rows);
        free(propagate_ok(base, opts));
        snprintf(opts, sizeof opts, "--hops 2 --dtype int8 %s", rows);
        free(propagate_ok(q, opts));
        fs_dataset_t *a = open_verified(base), *b = open_verified(q);
        cr_assert_eq(b->propagation->dtype, FS_DTYPE_I8);
        for (int r = 0; r <= 2; r++) check_int8(&a->propagation->tables[r], &b->propagation->tables[r]);
        fs_dataset_close(a), fs_dataset_close(b);
    }
    free(base), free(q);
    graph_free(&g);
}

Test(propagate, half_precision_input_tables_are_widened_exactly)
{
    graph_t g = random_graph(9, 90, 5, 12);
    for (int64_t k = 0; k < g.n * g.dim; k++) g.x[k] = fs_f16_to_f32(fs_f32_to_f16(g.x[k])); /* what f16 holds */
    char *data = tu_path(dir, "h");
    write_graph(data, &g, FS_DTYPE_F16, 0, 0);
    free(propagate_ok(data, "--hops 2 --dtype f32"));
    check_dataset(data, &g, 1, FS_PROP_SYM, 1, 2);
    free(propagate_ok(data, "--hops 2 --force")); /* default dtype: the table's */
    fs_dataset_t *ds = open_verified(data);
    cr_assert_eq(ds->propagation->dtype, FS_DTYPE_F16);
    cr_assert_eq(fs_dataset_table(ds, "hop_1")->dtype, FS_DTYPE_F16);
    fs_dataset_close(ds);
    free(data);
    graph_free(&g);
}

/* ---- labelled rows --------------------------------------------------------------- */

Test(propagate, labelled_rows_are_each_split_contiguous_in_a_seeded_order)
{
    char *all = import_cora_split("cora"), *lab = tu_path(dir, "lab"), *again = tu_path(dir, "again"), *other = tu_path(dir, "other");
    copy_dataset(all, lab), copy_dataset(all, again), copy_dataset(all, other);
    free(propagate_ok(all, "--hops 2"));
    free(propagate_ok(lab, "--hops 2 --rows labelled --seed 11"));
    free(propagate_ok(again, "--hops 2 --rows labelled --seed 11"));
    free(propagate_ok(other, "--hops 2 --rows labelled --seed 12"));
    fs_dataset_t *cora = tu_open_dataset(all), *a = open_verified(all), *l = open_verified(lab), *l2 = open_verified(again),
                 *o = open_verified(other);
    const fs_propagation_t *p = l->propagation;
    cr_assert(p->labelled);
    cr_assert_eq(p->seed, 11);
    cr_assert_null(fs_dataset_table(l, "hop_0"), "labelled hop tables are row tables, not feature tables");
    int64_t k = 0;
    cr_assert_eq(p->num_row_splits, cora->num_splits);
    for (int s = 0; s < cora->num_splits; s++) {
        const fs_idset_t *set = &cora->splits[s];
        const fs_row_split_t *rs = &p->row_splits[s];
        cr_assert_str_eq(rs->name, set->name);
        cr_assert_eq(rs->offset, k, "split %s starts at row %lld, want %lld", set->name, (long long)rs->offset, (long long)k);
        cr_assert_eq(rs->count, set->count);
        int64_t moved = 0;
        for (int64_t q = 0; q < set->count; q++) {
            int64_t v = set->ids[q];
            int64_t r = p->row_index[v];
            cr_assert(r >= rs->offset && r < rs->offset + rs->count, "node %lld of %s is at row %lld", (long long)v,
                      set->name, (long long)r);
            cr_assert_eq(p->row_nodes[r], v);
            moved += p->row_nodes[rs->offset + q] != v;
        }
        cr_assert_gt(moved, set->count / 2, "split %s is hardly shuffled (%lld of %lld moved)", set->name,
                     (long long)moved, (long long)set->count);
        k += set->count;
    }
    cr_assert_eq(p->num_rows, k);
    /* The same seed, the same order; another seed, another. */
    cr_assert_eq(memcmp(p->row_nodes, l2->propagation->row_nodes, (size_t)k * sizeof(int64_t)), 0);
    cr_assert_neq(memcmp(p->row_nodes, o->propagation->row_nodes, (size_t)k * sizeof(int64_t)), 0);
    /* Row q of each labelled table is the all-rows table's row of its node, bit for bit. */
    for (int r = 0; r <= 2; r++) {
        const fs_table_t *t = &p->tables[r], *full = &a->propagation->tables[r];
        for (int64_t q = 0; q < k; q++)
            cr_assert_eq(memcmp((const char *)t->data + (size_t)q * t->row_bytes,
                                (const char *)full->data + (size_t)p->row_nodes[q] * full->row_bytes, t->row_bytes),
                         0, "hop_%d row %lld (node %lld)", r, (long long)q, (long long)p->row_nodes[q]);
    }
    char *log;
    cr_assert_eq(tu_run(&log, "%s info %s", tu_bin(), lab), 0, "%s", log);
    cr_assert_not_null(strstr(log, "labelled rows"), "%s", log);
    cr_assert_not_null(strstr(log, "train [0, "), "%s", log);
    cr_assert_not_null(strstr(log, "row table hop_2"), "%s", log);
    free(log);
    fs_dataset_close(a), fs_dataset_close(l), fs_dataset_close(l2), fs_dataset_close(o), fs_dataset_close(cora);
    free(all), free(lab), free(again), free(other);
}

/* ---- interruption ----------------------------------------------------------------- */

typedef struct {
    int count;
    char name[64][256];
    char *bytes[64];
    size_t len[64];
} snap_t;

/* Every entry of the directory (dot files too) with its bytes. */
static void snapshot(const char *d, snap_t *s)
{
    memset(s, 0, sizeof *s);
    DIR *dd = opendir(d);
    cr_assert_not_null(dd);
    struct dirent *e;
    while ((e = readdir(dd))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        cr_assert_lt(s->count, 64);
        snprintf(s->name[s->count], 256, "%s", e->d_name);
        char *path = tu_path(d, e->d_name);
        struct stat st;
        cr_assert_eq(stat(path, &st), 0);
        cr_assert(S_ISREG(st.st_mode), "%s is not a plain file (left behind?)", path);
        s->bytes[s->count] = tu_read(path, &s->len[s->count]);
        s->count++;
        free(path);
    }
    closedir(dd);
}

static void assert_same(const snap_t *a, const snap_t *b, const char *what)
{
    cr_assert_eq(a->count, b->count, "%s: %d files before, %d after", what, a->count, b->count);
    for (int i = 0; i < a->count; i++) {
        int j = 0;
        while (j < b->count && strcmp(a->name[i], b->name[j]) != 0) j++;
        cr_assert_lt(j, b->count, "%s: %s is gone", what, a->name[i]);
        cr_assert(a->len[i] == b->len[j] && memcmp(a->bytes[i], b->bytes[j], a->len[i]) == 0, "%s: %s changed", what,
                  a->name[i]);
    }
}

static void snap_free(snap_t *s)
{
    for (int i = 0; i < s->count; i++) free(s->bytes[i]);
}

/* Runs a slowed propagate on data, signals it `after_ms` after its scratch
 * files exist, and checks it stopped (exit 1, saying so) leaving data as it was. */
static void interrupt_at(const char *data, const char *opts, int sig, int after_ms)
{
    snap_t before, after;
    snapshot(data, &before);
    FILE *out;
    pid_t pid = tu_spawn(&out, "env FEATSTORE_PROPAGATE_TEST_DELAY_MS=4 %s propagate %s %s --threads 1 2>&1", tu_bin(),
                         data, opts);
    char scratch[4200];
    snprintf(scratch, sizeof scratch, "%s/.propagate-%d/table_hop_1.npy", data, (int)pid);
    struct stat st;
    for (int i = 0; i < 3000 && stat(scratch, &st) != 0 && waitpid(pid, NULL, WNOHANG) == 0; i++) usleep(10000);
    if (stat(scratch, &st) != 0) {
        char text[4096] = "";
        text[fread(text, 1, sizeof text - 1, out)] = '\0';
        cr_assert_fail("propagate never made %s: %s", scratch, text);
    }
    usleep((useconds_t)after_ms * 1000);
    cr_assert_eq(kill(pid, sig), 0);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    char text[4096] = "";
    size_t n = fread(text, 1, sizeof text - 1, out);
    text[n] = '\0';
    fclose(out);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1, "signal %d: status %d: %s", sig, status, text);
    cr_assert_not_null(strstr(text, "stopped by signal"), "%s", text);
    cr_assert_not_null(strstr(text, "is unchanged"), "%s", text);
    snapshot(data, &after);
    assert_same(&before, &after, strsignal(sig));
    snap_free(&before), snap_free(&after);
    char *log;
    cr_assert_eq(tu_run(&log, "%s info %s", tu_bin(), data), 0, "%s", log);
    free(log);
}

Test(propagate, an_interrupted_run_leaves_the_dataset_as_it_was)
{
    char *data = import_cora_split("cora"); /* 11 rows of 1433 columns a block: ~250 blocks a hop, ~1 s slowed */
    interrupt_at(data, "--hops 3", SIGINT, 300);          /* in hop 0 */
    interrupt_at(data, "--hops 3 --rows labelled", SIGTERM, 1500); /* in hop 1 */
    /* A replacement interrupted keeps the tables it would have replaced. */
    free(propagate_ok(data, "--hops 1"));
    interrupt_at(data, "--hops 2 --force --dtype f16", SIGINT, 1200);
    interrupt_at(data, "--hops 2 --force --rows labelled", SIGHUP, 200);
    fs_dataset_t *ds = open_verified(data);
    cr_assert_eq(ds->propagation->hops, 1);
    fs_dataset_close(ds);
    free(data);
}

/* ---- refusals ----------------------------------------------------------------------- */

static void refused(const char *data, const char *opts, int want_rc, const char *want)
{
    snap_t before, after;
    snapshot(data, &before);
    char *log;
    int rc = tu_run(&log, "%s propagate %s %s", tu_bin(), data, opts);
    cr_assert_eq(rc, want_rc, "propagate %s exited %d, want %d: %s", opts, rc, want_rc, log);
    cr_assert_not_null(strstr(log, want), "propagate %s: no \"%s\" in: %s", opts, want, log);
    snapshot(data, &after);
    assert_same(&before, &after, opts);
    snap_free(&before), snap_free(&after);
    free(log);
}

Test(propagate, bad_options_are_named)
{
    graph_t g = random_graph(3, 60, 3, 4);
    char *data = tu_path(dir, "g"), *nosplit = tu_path(dir, "nosplit");
    write_graph(data, &g, FS_DTYPE_F32, 0, 1);
    write_graph(nosplit, &g, FS_DTYPE_F32, 0, 0);
    /* The command line (exit 2). */
    refused(data, "--hops 0", 2, "--hops must be a whole number in [1, 64], got '0'");
    refused(data, "--hops -2", 2, "--hops must be a whole number in [1, 64], got '-2'");
    refused(data, "--hops 65", 2, "--hops must be a whole number in [1, 64]");
    refused(data, "", 2, "usage: featstore propagate DATASET --hops R");
    refused(data, "--hops 2 --norm gcn", 2, "--norm must be sym, rw or none, got 'gcn'");
    refused(data, "--hops 2 --rows some", 2, "--rows must be labelled or all, got 'some'");
    refused(data, "--hops 2 --dtype int16", 2, "--dtype must be int8, float32, float16 or bfloat16");
    refused(data, "--hops 2 --self-loops --no-self-loops", 2, "give one of --self-loops and --no-self-loops");
    refused(data, "--hops 2 --seed 3", 2, "--seed orders the rows of --rows labelled");
    refused(data, "--hops 2 --permute", 2, "unknown or misplaced option '--permute'");
    /* The dataset (exit 1). */
    refused(data, "--hops 2 --table nope", 1, "--table nope: ");
    refused(data, "--hops 2 --table nope", 1, "has no feature table 'nope' (its feature tables: feat)");
    refused(nosplit, "--hops 2 --rows labelled", 1, "--rows labelled keeps the rows of the splits' nodes, but");
    refused(nosplit, "--hops 2 --rows labelled", 1, "has no splits");
    char *missing = tu_path(dir, "missing");
    char *log;
    cr_assert_eq(tu_run(&log, "%s propagate %s --hops 1", tu_bin(), missing), 1);
    cr_assert_not_null(strstr(log, "missing"), "%s", log);
    free(log), free(missing);
    /* An earlier propagate is replaced only with --force; its tables are not a source. */
    free(propagate_ok(data, "--hops 1"));
    refused(data, "--hops 2", 1, "already has hop tables hop_0..hop_1 (from feat, norm sym, all rows); --force replaces them");
    refused(data, "--hops 2 --table hop_1 --force", 1, "--table hop_1 is a hop table of an earlier propagate");
    free(data), free(nosplit);
    graph_free(&g);
}

/* g with a table "hop_1" of its own, or with splits that share node 9. */
static void write_awkward(const char *path, const graph_t *g, int foreign_hop)
{
    fs_writer_t *w;
    fs_error_t err = {0};
    cr_assert_eq(fs_writer_create(path, 1, &w, &err), FS_OK);
    int64_t shape[2] = {g->n + 1, g->dim}, *ids;
    void *p;
    cr_assert_eq(fs_writer_array(w, FS_ROLE_INDPTR, NULL, FS_DTYPE_I64, 1, shape, &p, &err), FS_OK);
    memcpy(p, g->ip, (size_t)(g->n + 1) * 8);
    shape[0] = g->ip[g->n];
    cr_assert_eq(fs_writer_array(w, FS_ROLE_INDICES, NULL, FS_DTYPE_I32, 1, shape, &p, &err), FS_OK);
    memcpy(p, g->ix, (size_t)g->ip[g->n] * 4);
    shape[0] = g->n;
    cr_assert_eq(fs_writer_array(w, FS_ROLE_FEATURES, "feat", FS_DTYPE_F32, 2, shape, &p, &err), FS_OK);
    memcpy(p, g->x, (size_t)(g->n * g->dim) * 4);
    if (foreign_hop) cr_assert_eq(fs_writer_array(w, FS_ROLE_FEATURES, "hop_1", FS_DTYPE_F32, 2, shape, &p, &err), FS_OK);
    shape[0] = 3;
    cr_assert_eq(fs_writer_array(w, FS_ROLE_SPLIT, "train", FS_DTYPE_I64, 1, shape, (void **)&ids, &err), FS_OK);
    ids[0] = 1, ids[1] = 5, ids[2] = 9;
    cr_assert_eq(fs_writer_array(w, FS_ROLE_SPLIT, "valid", FS_DTYPE_I64, 1, shape, (void **)&ids, &err), FS_OK);
    ids[0] = 2, ids[1] = foreign_hop ? 10 : 9, ids[2] = 12;
    fs_writer_set_meta(w, "awkward", g->n, g->ip[g->n], 0, 0);
    cr_assert_eq(fs_writer_commit(w, &err), FS_OK, "%s", err.msg);
}

Test(propagate, overlapping_splits_and_foreign_hop_tables_are_refused)
{
    graph_t g = random_graph(4, 30, 2, 3);
    char *data = tu_path(dir, "g");
    write_awkward(data, &g, 1);
    refused(data, "--hops 2", 1, "already has a table 'hop_1' that propagate did not make");
    refused(data, "--hops 2 --force", 1, "already has a table 'hop_1' that propagate did not make");
    write_awkward(data, &g, 0);
    refused(data, "--hops 1 --rows labelled", 1, "needs disjoint splits, but node 9 is in split train and in split valid");
    free(propagate_ok(data, "--hops 1")); /* all rows: the splits do not matter */
    free(data);
    graph_free(&g);
}

Test(propagate, typed_datasets_are_refused_by_name)
{
    fs_rmat_opts_t o;
    fs_rmat_defaults(&o);
    char *data = tu_path(dir, "typed");
    o.out_dir = data, o.scale = 6, o.dim = 4, o.threads = 1;
    fs_error_t err = {0};
    cr_assert_eq(fs_gen_rmat_typed(&o, &err), FS_OK, "%s", err.msg);
    refused(data, "--hops 2", 1, "is a typed graph (3 node types, 6 edge types); propagate takes a dataset of one node "
                                 "type and one edge type (typed graphs: not yet supported)");
    free(data);
}

/* ---- the manifest, checked; the tables, served ---------------------------------------- */

/* Rewrites data's manifest with `edit` applied to its "propagation". */
static void edit_propagation(const char *data, void (*edit)(json_t *p))
{
    char *path = tu_path(data, "manifest.json");
    json_error_t jerr;
    json_t *m = json_load_file(path, 0, &jerr);
    cr_assert_not_null(m);
    edit(json_object_get(m, "propagation"));
    cr_assert_eq(json_dump_file(m, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER), 0);
    json_decref(m);
    free(path);
}

static void shift_splits(json_t *p)
{
    json_object_set_new(json_object_get(json_object_get(p, "row_splits"), "test"), "offset", json_integer(0));
}

static void swap_splits(json_t *p)
{
    json_t *rs = json_object_get(p, "row_splits"), *tr = json_object_get(rs, "train"), *te = json_object_get(rs, "test");
    json_t *a = json_object_get(tr, "count"), *b = json_object_get(te, "count");
    json_int_t x = json_integer_value(a), y = json_integer_value(b);
    json_object_set_new(tr, "count", json_integer(y));
    json_object_set_new(te, "count", json_integer(x));
    json_object_set_new(te, "offset", json_integer(y));
}

static void drop_table(json_t *p) { json_array_remove(json_object_get(p, "tables"), 1); }

static void bad_norm(json_t *p) { json_object_set_new(p, "norm", json_string("gcn")); }

static void expect_invalid(const char *data, const char *want)
{
    char *log;
    cr_assert_eq(tu_run(&log, "%s info %s", tu_bin(), data), 1, "%s", log);
    cr_assert_not_null(strstr(log, want), "no \"%s\" in: %s", want, log);
    free(log);
}

Test(propagate, the_manifest_record_is_checked_on_open)
{
    graph_t g = random_graph(8, 80, 3, 5);
    char *base = tu_path(dir, "base"), *data = tu_path(dir, "d");
    write_graph(base, &g, FS_DTYPE_F32, 0, 1);
    free(propagate_ok(base, "--hops 2 --rows labelled"));
    copy_dataset(base, data);
    edit_propagation(data, shift_splits);
    expect_invalid(data, "\"row_splits\" must cover the rows in order");
    copy_dataset(base, data);
    edit_propagation(data, swap_splits); /* counts swapped: rows no longer hold their split's nodes */
    expect_invalid(data, "a row split is not a split of the dataset with that many nodes: train");
    copy_dataset(base, data);
    edit_propagation(data, drop_table);
    expect_invalid(data, "\"tables\" must list hops + 1 table names");
    copy_dataset(base, data);
    edit_propagation(data, bad_norm);
    expect_invalid(data, "\"norm\" must be \"sym\", \"rw\" or \"none\"");
    /* A row order that is not a bijection (checksums stripped: the structure is what is checked). */
    copy_dataset(base, data);
    tu_strip_checksums(data);
    char *idx = tu_path(data, "hop_row_index.npy");
    size_t len;
    char *bytes = tu_read(idx, &len);
    int64_t *v = (int64_t *)(bytes + FS_NPY_WRITE_HEADER_LEN), first = -1;
    for (int64_t i = 0; i < g.n && first < 0; i++)
        if (v[i] >= 0) first = i;
    v[first] = v[first] == 0 ? 1 : 0;
    tu_write(idx, bytes, len);
    expect_invalid(data, "but row_index gives that node row");
    free(bytes), free(idx), free(base), free(data);
    graph_free(&g);
}

Test(propagate, hop_tables_are_served)
{
    graph_t g = random_graph(6, 500, 5, 8);
    char *all = tu_path(dir, "all"), *lab = tu_path(dir, "lab"), *sock = tu_path(dir, "s.sock");
    write_graph(all, &g, FS_DTYPE_F32, 0, 1);
    copy_dataset(all, lab);
    free(propagate_ok(all, "--hops 2"));
    free(propagate_ok(lab, "--hops 2 --rows labelled"));
    fs_dataset_t *ds = open_verified(all);
    const fs_table_t *hop2 = fs_dataset_table(ds, "hop_2");
    for (int which = 0; which < 2; which++) {
        tu_server_t s;
        cr_assert_eq(tu_serve(&s, which ? lab : all, sock, ""), 0, "serve refused %s", which ? lab : all);
        char uri[4200];
        snprintf(uri, sizeof uri, "unix://%s", sock);
        fs_client_t *c;
        cr_assert_eq(fs_connect(uri, NULL, &c), FS_OK, "%s", fs_client_errstr(c));
        int64_t ids[4] = {0, 17, 250, 499};
        fs_batch_t *b = NULL;
        const char *table = which ? "feat" : "hop_2";
        cr_assert_eq(fs_gather(c, ids, 4, table, FS_DTYPE_INVALID, &b), FS_OK, "%s", fs_client_errstr(c));
        for (int i = 0; i < 4 && !which; i++)
            cr_assert_eq(memcmp((const char *)b->features + (size_t)i * hop2->row_bytes,
                                (const char *)hop2->data + (size_t)ids[i] * hop2->row_bytes, hop2->row_bytes), 0);
        fs_batch_free(b);
        fs_close(c);
        cr_assert_eq(tu_serve_stop(&s, SIGTERM), 0);
    }
    fs_dataset_close(ds);
    free(all), free(lab), free(sock);
    graph_free(&g);
}
