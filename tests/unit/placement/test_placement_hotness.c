/* test_placement_hotness.c — how hot each row is, the planner's input
 * (placement/hotness.h, placement/argsort.h): the radix argsort against a
 * comparison sort (ties, zeros, any thread count), the estimators exactly on
 * a hand-made graph, bad input named, and on a generated R-MAT graph the
 * degree against counting, reach against a dense matrix power and the
 * presample counts against a naive replay of the sampler. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "argsort.h"
#include "dataset.h"
#include "fs_rng.h"
#include "hotness.h"
#include "placement_fixture.h"
#include "test_util.h"

/* ==== argsort =============================================================== */

static const double *cmp_p;
static int cmp_desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    if (cmp_p[x] != cmp_p[y]) return cmp_p[x] > cmp_p[y] ? -1 : 1;
    return (x > y) - (x < y);
}

Test(argsort, matches_a_comparison_sort_with_ties_on_any_thread_count)
{
    int64_t n = 100003;
    double *p = malloc(sizeof *p * (size_t)n);
    int64_t *want = malloc(sizeof *want * (size_t)n), *got = malloc(sizeof *got * (size_t)n);
    fs_rng_t r = fs_rng_make(7, 0);
    for (int64_t i = 0; i < n; i++) {
        uint64_t u = fs_rng_next(&r);
        p[i] = (u % 3 == 0) ? (double)(u % 50) : (u % 3 == 1 ? fs_rng_unit(&r) * 1e6 : 0.0); /* ties and zeros */
        want[i] = i;
    }
    p[5] = -0.0;
    cmp_p = p;
    qsort(want, (size_t)n, sizeof *want, cmp_desc);
    fs_error_t err = {0};
    for (int threads = 1; threads <= 3; threads++) {
        cr_assert_eq(fs_argsort_desc(p, n, threads, got, &err), FS_OK, "%s", err.msg);
        cr_assert_arr_eq(got, want, sizeof *got * (size_t)n, "threads %d", threads);
    }
    p[77] = -1;
    cr_assert_eq(fs_argsort_desc(p, n, 2, got, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "[77]"), "%s", err.msg);
    p[77] = NAN;
    cr_assert_eq(fs_argsort_desc(p, n, 2, got, &err), FS_ERR_INVALID_ARGUMENT);
    free(p), free(want), free(got);
}

/* ==== hotness =============================================================== */

/* 0 -> 1, 2; 1 -> 2; 2 -> 0; 3 -> 2, 4; 4 -> (none) */
static const int64_t hand_indptr[] = {0, 2, 3, 4, 6, 6};
static const int64_t hand_indices64[] = {1, 2, 2, 0, 2, 4};
static const int32_t hand_indices32[] = {1, 2, 2, 0, 2, 4};

static fs_csr_ref_t hand_graph(int wide)
{
    return (fs_csr_ref_t){.num_nodes = 5, .indptr = hand_indptr,
                          .indices = wide ? (const void *)hand_indices64 : (const void *)hand_indices32,
                          .index_dtype = wide ? FS_DTYPE_I64 : FS_DTYPE_I32};
}

Test(hotness, hand_made_graph_exact_values)
{
    for (int wide = 0; wide <= 1; wide++) {
        fs_csr_ref_t g = hand_graph(wide);
        fs_error_t err = {0};
        double p[5];
        cr_assert_eq(fs_hotness_degree(&g, 2, p, &err), FS_OK, "%s", err.msg);
        double deg[5] = {1, 1, 3, 0, 1};
        cr_assert_arr_eq(p, deg, sizeof deg);
        int64_t train[] = {0, 3};
        cr_assert_eq(fs_hotness_reach(&g, train, 2, 1, 2, p, &err), FS_OK, "%s", err.msg);
        double one[5] = {0, 0.5, 1, 0, 0.5}; /* (e1 + e2 + e2 + e4) / 2 */
        cr_assert_arr_eq(p, one, sizeof one);
        cr_assert_eq(fs_hotness_reach(&g, train, 2, 2, 3, p, &err), FS_OK, "%s", err.msg);
        double two[5] = {1, 0, 0.5, 0, 0}; /* length-2 paths 0->1->2, 0->2->0, 3->2->0, over 2 */
        cr_assert_arr_eq(p, two, sizeof two);
        /* every node a training node, one hop: reach = in-degree / N */
        int64_t all[] = {0, 1, 2, 3, 4};
        cr_assert_eq(fs_hotness_reach(&g, all, 5, 1, 1, p, &err), FS_OK);
        for (int v = 0; v < 5; v++) cr_assert_float_eq(p[v], deg[v] / 5, 1e-15);
    }
}

Test(hotness, bad_input_is_named)
{
    fs_error_t err = {0};
    double p[5];
    int64_t bad_idx[] = {1, 2, 2, 9, 2, 4};
    fs_csr_ref_t g = hand_graph(1);
    g.indices = bad_idx;
    cr_assert_eq(fs_hotness_degree(&g, 2, p, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "indices[3] = 9"), "%s", err.msg);
    int64_t bad_ptr[] = {0, 2, 1, 4, 6, 6};
    g = hand_graph(1);
    g.indptr = bad_ptr;
    cr_assert_eq(fs_hotness_degree(&g, 1, p, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "row 1"), "%s", err.msg);
    g = hand_graph(1);
    g.index_dtype = FS_DTYPE_F32;
    cr_assert_eq(fs_hotness_degree(&g, 1, p, &err), FS_ERR_INVALID_ARGUMENT);
    g = hand_graph(1);
    int64_t train[] = {0, 5};
    cr_assert_eq(fs_hotness_reach(&g, train, 2, 1, 1, p, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "train[1] = 5"), "%s", err.msg);
    cr_assert_eq(fs_hotness_reach(&g, train, 1, 0, 1, p, &err), FS_ERR_INVALID_ARGUMENT);
    fs_presample_opts_t o;
    fs_presample_defaults(&o);
    o.batch_size = 0;
    cr_assert_eq(fs_hotness_presample(&g, train, 1, &o, p, &err), FS_ERR_INVALID_ARGUMENT);
    fs_presample_defaults(&o);
    o.mode = FS_SAMPLE_WEIGHTED; /* the graph has no weights */
    cr_assert_eq(fs_hotness_presample(&g, train, 1, &o, p, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "weight"), "%s", err.msg);
}

/* A generated R-MAT graph shared by the generated-graph tests. */
static char *gen_dir;
static fs_dataset_t *gen_ds;

static void gen_setup(void) { open_rmat(&gen_dir, &gen_ds, 10, 0, 0); }

static void gen_teardown(void)
{
    fs_dataset_close(gen_ds);
    tu_rm_rf(gen_dir);
    free(gen_dir);
}

static fs_csr_ref_t gen_graph(void)
{
    return (fs_csr_ref_t){gen_ds->num_nodes, gen_ds->indptr, gen_ds->indices, gen_ds->index_dtype, NULL};
}

TestSuite(generated, .init = gen_setup, .fini = gen_teardown, .timeout = 120);

Test(generated, degree_equals_counting)
{
    fs_csr_ref_t g = gen_graph();
    int64_t n = g.num_nodes, e = g.indptr[n];
    double *want = calloc((size_t)n, sizeof *want), *got = malloc(sizeof *got * (size_t)n);
    for (int64_t i = 0; i < e; i++) want[fs_dataset_neighbor(gen_ds, i)] += 1;
    fs_error_t err = {0};
    for (int threads = 1; threads <= 4; threads++) {
        cr_assert_eq(fs_hotness_degree(&g, threads, got, &err), FS_OK, "%s", err.msg);
        cr_assert_arr_eq(got, want, sizeof *got * (size_t)n, "threads %d", threads);
    }
    free(want), free(got);
}

Test(generated, reach_equals_a_dense_matrix_power)
{
    fs_csr_ref_t g = gen_graph();
    int64_t n = g.num_nodes;
    const fs_idset_t *train = fs_dataset_split(gen_ds, "train");
    cr_assert_not_null(train);
    /* dense A[v][u] = number of (v -> u) edges, x' = A^T x */
    double *A = calloc((size_t)(n * n), sizeof *A), *x = calloc((size_t)n, sizeof *x);
    double *y = malloc(sizeof *y * (size_t)n);
    for (int64_t v = 0; v < n; v++)
        for (int64_t i = g.indptr[v]; i < g.indptr[v + 1]; i++) A[v * n + fs_dataset_neighbor(gen_ds, i)] += 1;
    for (int64_t i = 0; i < train->count; i++) x[train->ids[i]] += 1;
    double *got = malloc(sizeof *got * (size_t)n);
    fs_error_t err = {0};
    for (int hops = 1; hops <= 3; hops++) {
        for (int64_t u = 0; u < n; u++) {
            y[u] = 0;
            for (int64_t v = 0; v < n; v++) y[u] += A[v * n + u] * x[v];
        }
        memcpy(x, y, sizeof *x * (size_t)n);
        cr_assert_eq(fs_hotness_reach(&g, train->ids, train->count, hops, 2, got, &err), FS_OK, "%s", err.msg);
        for (int64_t u = 0; u < n; u++)
            cr_assert_float_eq(got[u], x[u] / (double)train->count, 1e-9 * (1 + x[u]), "hop %d node %lld", hops,
                               (long long)u);
    }
    free(A), free(x), free(y), free(got);
}

Test(generated, presample_counts_equal_a_naive_replay)
{
    fs_csr_ref_t g = gen_graph();
    int64_t n = g.num_nodes;
    const fs_idset_t *train = fs_dataset_split(gen_ds, "train");
    fs_presample_opts_t o;
    fs_presample_defaults(&o);
    o.num_hops = 2, o.fanout[0] = 5, o.fanout[1] = 3, o.batch_size = 64, o.epochs = 2, o.seed = 42;
    double *want = calloc((size_t)n, sizeof *want), *got = malloc(sizeof *got * (size_t)n);
    int64_t *order = malloc(sizeof *order * (size_t)train->count);
    fs_csr_view_t view;
    fs_csr_view_init(&view, n, g.indptr, g.indices, g.index_dtype, NULL);
    fs_sampler_t *s;
    fs_error_t err = {0};
    cr_assert_eq(fs_sampler_create(&s, &err), FS_OK);
    for (int e = 0; e < o.epochs; e++) {
        fs_presample_epoch_order(train->ids, train->count, o.seed, e, order);
        for (int64_t b = 0; b * o.batch_size < train->count; b++) {
            int64_t first = b * o.batch_size, size = train->count - first;
            size = size < o.batch_size ? size : o.batch_size;
            fs_sample_req_t req;
            fs_sample_result_t res;
            fs_presample_request(&o, e, b, &req);
            cr_assert_eq(fs_sample_cpu(s, &view, order + first, size, &req, &res, NULL, &err), FS_OK, "%s", err.msg);
            for (int64_t k = 0; k < res.num_nodes; k++) want[res.nodes[k]] += 1;
        }
    }
    fs_sampler_destroy(s);
    double total = 0;
    for (int64_t v = 0; v < n; v++) total += want[v];
    cr_assert_gt(total, (double)train->count * o.epochs, "the sampler must reach beyond the seeds");
    for (int threads = 1; threads <= 3; threads++) {
        o.threads = threads;
        cr_assert_eq(fs_hotness_presample(&g, train->ids, train->count, &o, got, &err), FS_OK, "%s", err.msg);
        cr_assert_arr_eq(got, want, sizeof *got * (size_t)n, "threads %d", threads);
    }
    free(want), free(got), free(order);
}
