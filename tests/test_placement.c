/* test_placement.c — the planning core in placement/: hardware presets and
 * topology files, hotness estimators against naive computations, the radix
 * argsort, budgets, Rule 1 and the corrected Algorithm 1 (the paper's own
 * example), the XGNN solver against a brute-force search, the topology
 * split, routing, the cost model, and plan files (round trip, corruption).
 * Graphs are hand-made or generated in-process; nothing outside the repo is
 * read and no timing is asserted. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argsort.h"
#include "dataset.h"
#include "fs_rng.h"
#include "gen.h"
#include "hardware.h"
#include "hotness.h"
#include "plan.h"
#include "test_util.h"

static fs_hardware_t preset(const char *name)
{
    fs_hardware_t hw;
    fs_error_t err = {0};
    cr_assert_eq(fs_hw_preset(name, &hw, &err), FS_OK, "%s", err.msg);
    return hw;
}

/* ==== hardware ============================================================== */

Test(hardware, presets_have_the_documented_links)
{
    for (int i = 0; fs_hw_preset_name(i); i++) {
        fs_hardware_t hw = preset(fs_hw_preset_name(i));
        fs_error_t err = {0};
        cr_assert_eq(fs_hw_validate(&hw, &err), FS_OK, "%s: %s", hw.name, err.msg);
    }
    fs_hardware_t pcie = preset("pcie4"), pairs = preset("nvlink-pairs"), sw = preset("nvswitch8");
    cr_assert_eq(pcie.num_gpus, 4);
    for (int g = 0; g < 4; g++) cr_assert_eq(fs_hw_peer_mask(&pcie, g), 0u);
    cr_assert_eq(fs_hw_peer_mask(&pairs, 0), 0x2u);
    cr_assert_eq(fs_hw_peer_mask(&pairs, 1), 0x1u);
    cr_assert_eq(fs_hw_peer_mask(&pairs, 2), 0x8u);
    cr_assert_eq(fs_hw_peer_mask(&pairs, 3), 0x4u);
    cr_assert_eq(sw.num_gpus, 8);
    cr_assert_eq(sw.fabric, FS_FABRIC_NVSWITCH);
    for (int g = 0; g < 8; g++) cr_assert_eq(fs_hw_peer_mask(&sw, g), 0xffu & ~(1u << g));
}

Test(hardware, dgx1_is_the_hybrid_cube_mesh_of_seed_001)
{
    fs_hardware_t hw = preset("dgx1-v100");
    cr_assert_eq(hw.num_gpus, 8);
    /* GPU0 cannot reach GPU4, 5, 7 (P1 §4.2, docs/papers.md); reaches 1, 2, 3, 6 */
    cr_assert_eq(fs_hw_peer_mask(&hw, 0), (1u << 1) | (1u << 2) | (1u << 3) | (1u << 6));
    int nv_links_total = 0;
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(__builtin_popcount(fs_hw_peer_mask(&hw, i)), 4, "GPU %d", i);
        int links = 0; /* 6 NVLinks of 25 GB/s per V100 */
        for (int j = 0; j < 8; j++) {
            double b = hw.link_gbps[i][j];
            cr_assert(b == 0 || b == 25 || b == 50);
            cr_assert_eq(b, hw.link_gbps[j][i]);
            links += (int)(b / 25);
        }
        cr_assert_eq(links, 6, "GPU %d has %d NVLinks", i, links);
        nv_links_total += links;
    }
    cr_assert_eq(nv_links_total, 48);
    /* G0..G3 a clique (4G_f), G0, G1, G6, G7 a ring (4G_c) */
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) cr_assert(i == j || fs_hw_linked(&hw, i, j));
    cr_assert(fs_hw_linked(&hw, 0, 1) && fs_hw_linked(&hw, 1, 7) && fs_hw_linked(&hw, 7, 6) && fs_hw_linked(&hw, 6, 0));
    cr_assert(!fs_hw_linked(&hw, 0, 7) && !fs_hw_linked(&hw, 1, 6));
}

Test(hardware, unknown_preset_names_the_known_ones)
{
    fs_hardware_t hw;
    fs_error_t err = {0};
    cr_assert_eq(fs_hw_preset("dgx2", &hw, &err), FS_ERR_NOT_FOUND);
    cr_assert(strstr(err.msg, "dgx2") && strstr(err.msg, "nvswitch8"), "%s", err.msg);
}

Test(hardware, json_topology_file)
{
    const char *text = "{\"gpus\": [{\"memory_bytes\": 1000}, {\"memory_bytes\": 2000, \"local_gbps\": 100},"
                       " {\"memory_bytes\": 3000}],"
                       " \"links\": [[0, 1, 50.0], [1, 2, 25]], \"host_gbps\": 12}";
    fs_hardware_t hw;
    fs_error_t err = {0};
    cr_assert_eq(fs_hw_parse_json(text, &hw, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(hw.num_gpus, 3);
    cr_assert_eq(hw.memory_bytes[1], 2000);
    cr_assert_eq(hw.local_gbps[1], 100);
    cr_assert_eq(hw.link_gbps[1][0], 50.0);
    cr_assert_eq(hw.link_gbps[2][1], 25.0);
    cr_assert_eq(hw.link_gbps[0][2], 0.0);
    cr_assert_eq(hw.host_gbps[2], 12.0);
    cr_assert_eq(hw.fabric, FS_FABRIC_NVLINK);

    char *dir = tu_mkdtemp(), *path = tu_path(dir, "topo.json");
    tu_write(path, text, strlen(text));
    fs_hardware_t from_file;
    cr_assert_eq(fs_hw_load_json(path, &from_file, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(memcmp(&from_file.link_gbps, &hw.link_gbps, sizeof hw.link_gbps), 0);
    char *missing = tu_path(dir, "nope.json");
    cr_assert_eq(fs_hw_load_json(missing, &from_file, &err), FS_ERR_IO);
    tu_rm_rf(dir);
    free(missing), free(path), free(dir);

    const char *clique = "{\"gpus\": [{\"memory_bytes\": 1}, {\"memory_bytes\": 1}, {\"memory_bytes\": 1}],"
                         " \"links\": [[0,1,100],[0,2,100],[1,2,100]], \"host_gbps\": [10, 20, 30]}";
    cr_assert_eq(fs_hw_parse_json(clique, &hw, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(hw.fabric, FS_FABRIC_NVSWITCH);
    cr_assert_eq(hw.host_gbps[2], 30.0);
}

Test(hardware, malformed_topology_files_name_the_problem)
{
    struct {
        const char *text, *needle;
    } cases[] = {
        {"{\"gpus\": [", "line"},
        {"[1, 2]", "object"},
        {"{\"host_gbps\": 1}", "gpus"},
        {"{\"gpus\": [], \"host_gbps\": 1}", "gpus"},
        {"{\"gpus\": [{\"memory_bytes\": -5}], \"host_gbps\": 1}", "negative"},
        {"{\"gpus\": [{\"memory\": 5}], \"host_gbps\": 1}", "memory_bytes"},
        {"{\"gpus\": [{\"memory_bytes\": 5}]}", "host_gbps"},
        {"{\"gpus\": [{\"memory_bytes\": 5}], \"host_gbps\": 0}", "host_gbps"},
        {"{\"gpus\": [{\"memory_bytes\": 5}, {\"memory_bytes\": 5}], \"links\": [[0, 2, 5]], \"host_gbps\": 1}",
         "GPU 0-2"},
        {"{\"gpus\": [{\"memory_bytes\": 5}], \"links\": [[0, 0, 5]], \"host_gbps\": 1}", "itself"},
        {"{\"gpus\": [{\"memory_bytes\": 5}, {\"memory_bytes\": 5}], \"links\": [[0, 1]], \"host_gbps\": 1}",
         "links[0]"},
        {"{\"gpus\": [{\"memory_bytes\": 5}, {\"memory_bytes\": 5}], \"links\": [[0, 1, -3]], \"host_gbps\": 1}",
         "links[0]"},
        {"{\"gpus\": [{\"memory_bytes\": 5}], \"host_gbps\": 1, \"fabric\": \"infiniband\"}", "fabric"},
        /* strict keys and types: a misspelt key is named, never ignored */
        {"{\"gpus\": [{\"memory_bytes\": 5}], \"host_gbps\": 1, \"fabirc\": \"nvlink\"}",
         "topology: unknown key \"fabirc\" (allowed: name, gpus, links, host_gbps, fabric)"},
        {"{\"gpus\": [{\"memory_bytes\": 5, \"local_gpbs\": 9}], \"host_gbps\": 1}",
         "topology: gpus[0]: unknown key \"local_gpbs\" (allowed: memory_bytes, local_gbps)"},
        {"{\"name\": 5, \"gpus\": [{\"memory_bytes\": 5}], \"host_gbps\": 1}", "\"name\" must be a string, not an integer"},
        {"{\"name\": \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\", "
         "\"gpus\": [{\"memory_bytes\": 5}], \"host_gbps\": 1}", "characters (at most 63)"},
        {"{\"gpus\": [{\"memory_bytes\": 5}], \"host_gbps\": 1, \"host_gbps\": 2}", "duplicate"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fs_hardware_t hw;
        fs_error_t err = {0};
        cr_assert_eq(fs_hw_parse_json(cases[i].text, &hw, &err), FS_ERR_FORMAT, "case %zu: %s", i, cases[i].text);
        cr_assert(strstr(err.msg, cases[i].needle), "case %zu: '%s' lacks '%s'", i, err.msg, cases[i].needle);
    }
    char big[4096] = "{\"host_gbps\": 1, \"gpus\": [";
    for (int g = 0; g < 17; g++) strcat(big, g ? ", {\"memory_bytes\": 1}" : "{\"memory_bytes\": 1}");
    strcat(big, "]}");
    fs_hardware_t hw;
    fs_error_t err = {0};
    cr_assert_eq(fs_hw_parse_json(big, &hw, &err), FS_ERR_FORMAT);
    cr_assert(strstr(err.msg, "17 GPUs"), "%s", err.msg);
}

Test(hardware, memory_scaling_for_simulated_devices)
{
    fs_hardware_t hw = preset("dgx1-v100");
    fs_error_t err = {0};
    int64_t before = hw.memory_bytes[3];
    cr_assert_eq(fs_hw_scale_memory(&hw, 1.0 / 1024, &err), FS_OK);
    cr_assert_eq(hw.memory_bytes[3], before / 1024);
    cr_assert_eq(fs_hw_scale_memory(&hw, -2, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fs_hw_scale_memory(&hw, NAN, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fs_hw_set_memory(&hw, 4096, &err), FS_OK);
    cr_assert_eq(hw.memory_bytes[7], 4096);
    cr_assert_eq(fs_hw_set_memory(&hw, -1, &err), FS_ERR_INVALID_ARGUMENT);
    hw.memory_bytes[2] = -7;
    cr_assert_eq(fs_hw_validate(&hw, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "GPU 2") && strstr(err.msg, "negative"), "%s", err.msg);
}

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

/* A permuted R-MAT graph (edge factor 8) in a fresh directory. */
static void open_rmat(char **dir, fs_dataset_t **ds, int scale, int dim, int symmetric)
{
    *dir = tu_mkdtemp();
    fs_error_t err = {0};
    fs_rmat_opts_t g;
    fs_rmat_defaults(&g);
    char *out = tu_path(*dir, "g");
    g.out_dir = out, g.scale = scale, g.edge_factor = 8, g.dim = dim, g.permute = 1;
    g.edges.symmetrize = g.edges.dedup = symmetric;
    cr_assert_eq(fs_gen_rmat(&g, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_dataset_open(out, 0, 2, ds, &err), FS_OK, "%s", err.msg);
    free(out);
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

/* ==== budgets =============================================================== */

Test(budget, topology_first_feature_first_and_reserve)
{
    fs_hardware_t hw = preset("pcie4");
    fs_error_t err = {0};
    cr_assert_eq(fs_hw_set_memory(&hw, 1000, &err), FS_OK);
    fs_budget_opts_t o;
    fs_budget_defaults(&o);
    o.reserve_bytes = 100;
    fs_data_size_t d = {.num_rows = 100, .row_bytes = 10, .topo_bytes = 400};
    fs_budget_t b;
    cr_assert_eq(fs_budget_split(&hw, &o, &d, NULL, NULL, &b, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(b.avail_bytes[0], 900);
    cr_assert_eq(b.topo_bytes[0], 400);
    cr_assert_eq(b.feat_bytes[0], 500);
    cr_assert_eq(b.bsize[0], 50);
    o.feature_first = 1;
    cr_assert_eq(fs_budget_split(&hw, &o, &d, NULL, NULL, &b, &err), FS_OK);
    cr_assert_eq(b.feat_bytes[1], 900);
    cr_assert_eq(b.topo_bytes[1], 0);
    cr_assert_eq(b.bsize[1], 90);
    /* partitioned data: a GPU storing 2 of 4 partitions wants half */
    o.feature_first = 0;
    int parts[4] = {2, 2, 1, 4};
    cr_assert_eq(fs_budget_split(&hw, &o, &d, parts, parts, &b, &err), FS_OK);
    cr_assert_eq(b.topo_bytes[0], 200);
    cr_assert_eq(b.feat_bytes[0], 500);
    cr_assert_eq(b.topo_bytes[2], 100);
    cr_assert_eq(b.bsize[2], 25);
    cr_assert_eq(b.bsize[3], 50);
    /* ratios */
    o.topo_ratio = 0.5, o.feat_ratio = 0.1;
    cr_assert_eq(fs_budget_split(&hw, &o, &d, NULL, NULL, &b, &err), FS_OK);
    cr_assert_eq(b.topo_bytes[0], 200);
    cr_assert_eq(b.bsize[0], 10);
    /* everything fits: BSIZE is capped at N */
    cr_assert_eq(fs_hw_set_memory(&hw, 1 << 20, &err), FS_OK);
    fs_budget_defaults(&o);
    cr_assert_eq(fs_budget_split(&hw, &o, &d, NULL, NULL, &b, &err), FS_OK);
    cr_assert_eq(b.bsize[0], 100);
}

Test(budget, bad_budgets_are_named)
{
    fs_hardware_t hw = preset("pcie4");
    fs_error_t err = {0};
    fs_hw_set_memory(&hw, 1000, &err);
    fs_budget_opts_t o;
    fs_budget_defaults(&o);
    fs_data_size_t d = {.num_rows = 100, .row_bytes = 10, .topo_bytes = 400};
    fs_budget_t b;
    o.reserve_bytes = -1;
    cr_assert_eq(fs_budget_split(&hw, &o, &d, NULL, NULL, &b, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "negative reserve"), "%s", err.msg);
    o.reserve_bytes = 2000;
    cr_assert_eq(fs_budget_split(&hw, &o, &d, NULL, NULL, &b, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "exceeds GPU 0"), "%s", err.msg);
    fs_budget_defaults(&o);
    o.feat_ratio = 1.5;
    cr_assert_eq(fs_budget_split(&hw, &o, &d, NULL, NULL, &b, &err), FS_ERR_INVALID_ARGUMENT);
    fs_budget_defaults(&o);
    d.row_bytes = 0;
    cr_assert_eq(fs_budget_split(&hw, &o, &d, NULL, NULL, &b, &err), FS_ERR_INVALID_ARGUMENT);
    d.row_bytes = 10;
    hw.memory_bytes[1] = -1;
    cr_assert_eq(fs_budget_split(&hw, &o, &d, NULL, NULL, &b, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "negative memory"), "%s", err.msg);
}

/* ==== Rule 1 and Algorithm 1 ================================================ */

static int64_t *sorted_order(const double *p, int64_t n)
{
    int64_t *order = malloc(sizeof *order * (size_t)n);
    fs_error_t err = {0};
    cr_assert_eq(fs_argsort_desc(p, n, 2, order, &err), FS_OK, "%s", err.msg);
    return order;
}

Test(algo1, the_papers_example)
{
    /* argsort gives V = [1, 2, 3, 4, 5, 0] */
    double p[6] = {1, 10, 8, 6, 4, 2};
    int64_t *V = sorted_order(p, 6), want_v[6] = {1, 2, 3, 4, 5, 0};
    cr_assert_arr_eq(V, want_v, sizeof want_v);
    int64_t B[2][2], count;
    fs_error_t err = {0};
    cr_assert_eq(fs_algo1(p, V, 6, 2, 2, 0.3, &B[0][0], &count, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(count, 2);
    int64_t b1[2] = {1, 3}, b2[2] = {4, 2}; /* B1 = {1, 3}, B2 = {4, 2} */
    cr_assert_arr_eq(B[0], b1, sizeof b1);
    cr_assert_arr_eq(B[1], b2, sizeof b2);
    free(V);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

Test(algo1, alpha_zero_partitions_the_top_rows)
{
    int64_t N = 10000, bsize = 100;
    int n = 4;
    double *p = malloc(sizeof *p * (size_t)N);
    for (int64_t v = 0; v < N; v++) p[v] = 1.0 + (double)((v * 7919) % N); /* distinct, positive */
    int64_t *V = sorted_order(p, N), *B = malloc(sizeof *B * (size_t)(n * bsize)), count;
    fs_error_t err = {0};
    cr_assert_eq(fs_algo1(p, V, N, n, bsize, 0.0, B, &count, &err), FS_OK, "%s", err.msg);
    qsort(B, (size_t)(n * bsize), sizeof *B, cmp_i64);
    int64_t *top = malloc(sizeof *top * (size_t)(n * bsize));
    memcpy(top, V, sizeof *top * (size_t)(n * bsize));
    qsort(top, (size_t)(n * bsize), sizeof *top, cmp_i64);
    cr_assert_arr_eq(B, top, sizeof *B * (size_t)(n * bsize), "disjoint sets covering the top n*BSIZE");
    free(p), free(V), free(B), free(top);
}

Test(algo1, alpha_near_one_replicates)
{
    int64_t N = 5000, bsize = 100;
    int n = 3;
    double *p = malloc(sizeof *p * (size_t)N);
    for (int64_t v = 0; v < N; v++) p[v] = 1.0 / (double)(v + 1); /* p[V[100]] / p[V[99]] = 100/101 < 0.999 */
    int64_t *V = sorted_order(p, N), *B = malloc(sizeof *B * (size_t)(n * bsize)), count;
    fs_error_t err = {0};
    cr_assert_eq(fs_algo1(p, V, N, n, bsize, 0.999, B, &count, &err), FS_OK);
    for (int d = 0; d < n; d++) cr_assert_arr_eq(B + d * bsize, V, sizeof *B * (size_t)bsize, "device %d", d);
    free(p), free(V), free(B);
}

Test(algo1, capacity_and_distinctness_hold_for_any_parameters)
{
    fs_rng_t r = fs_rng_make(3, 3);
    fs_error_t err = {0};
    for (int trial = 0; trial < 200; trial++) {
        int64_t N = 1 + (int64_t)fs_rng_below(&r, 300), bsize = (int64_t)fs_rng_below(&r, 120);
        int n = 1 + (int)fs_rng_below(&r, 8);
        double alpha = fs_rng_unit(&r);
        double *p = malloc(sizeof *p * (size_t)N);
        for (int64_t v = 0; v < N; v++) p[v] = (double)fs_rng_below(&r, 20); /* ties and zeros */
        int64_t *V = sorted_order(p, N), *B = malloc(sizeof *B * (size_t)(n * (bsize + 1))), count;
        cr_assert_eq(fs_algo1(p, V, N, n, bsize, alpha, B, &count, &err), FS_OK, "%s", err.msg);
        cr_assert_eq(count, bsize < N ? bsize : N);
        char *seen = calloc((size_t)N, 1), *any = calloc((size_t)N, 1);
        for (int d = 0; d < n; d++) {
            memset(seen, 0, (size_t)N);
            for (int64_t k = 0; k < count; k++) {
                int64_t v = B[d * bsize + k];
                cr_assert(v >= 0 && v < N);
                cr_assert_not(seen[v], "trial %d: row %lld twice on device %d", trial, (long long)v, d);
                seen[v] = any[v] = 1;
            }
        }
        /* every device holds a subset of the top n*count rows */
        int64_t limit = n * count < N ? n * count : N;
        for (int64_t k = limit; k < N; k++) cr_assert_not(any[V[k]]);
        free(p), free(V), free(B), free(seen), free(any);
    }
    cr_assert_eq(fs_algo1(NULL, NULL, 10, 2, 2, 1.5, NULL, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "alpha"), "%s", err.msg);
    cr_assert_eq(fs_algo1(NULL, NULL, 10, 0, 2, 0.2, NULL, NULL, &err), FS_ERR_INVALID_ARGUMENT);
}

Test(algo1, rule1_takes_the_top_bsize)
{
    double p[6] = {1, 10, 8, 6, 4, 2};
    int64_t *V = sorted_order(p, 6), rows[6], count;
    fs_error_t err = {0};
    cr_assert_eq(fs_rule1(V, 6, 3, rows, &count, &err), FS_OK);
    int64_t want[3] = {1, 2, 3};
    cr_assert_eq(count, 3);
    cr_assert_arr_eq(rows, want, sizeof want);
    cr_assert_eq(fs_rule1(V, 6, 60, rows, &count, &err), FS_OK);
    cr_assert_eq(count, 6);
    cr_assert_eq(fs_rule1(V, 6, -1, rows, &count, &err), FS_ERR_INVALID_ARGUMENT);
    free(V);
}

/* ==== the XGNN solver ======================================================= */

static void check_one_hop(const fs_hardware_t *hw, const fs_xgnn_t *x)
{
    for (int i = 0; i < hw->num_gpus; i++)
        for (int q = 0; q < hw->num_gpus; q++) {
            int s = x->source[i][q];
            cr_assert(s == i || fs_hw_linked(hw, i, s), "reader %d reads partition %d from %d", i, q, s);
            cr_assert(x->holds[s] & (1u << q), "GPU %d does not hold partition %d", s, q);
        }
}

Test(xgnn, dgx1_stores_two_partitions_per_gpu)
{
    fs_hardware_t hw = preset("dgx1-v100");
    fs_xgnn_t x;
    fs_error_t err = {0};
    cr_assert_eq(fs_xgnn_solve(&hw, 0, &x, &err), FS_OK, "%s", err.msg);
    cr_assert(x.exact);
    for (int g = 0; g < 8; g++) {
        cr_assert_eq(__builtin_popcount(x.holds[g]), 2, "GPU %d holds %x", g, x.holds[g]);
        cr_assert(x.holds[g] & (1u << g));
    }
    cr_assert_eq(x.max_load, 2);
    cr_assert_eq(x.replicas, 8);
    check_one_hop(&hw, &x);
    cr_assert_gt(x.min_bandwidth, 0);
}

Test(xgnn, a_clique_needs_no_replicas)
{
    const char *clique4 = "{\"gpus\": [{\"memory_bytes\": 1}, {\"memory_bytes\": 1}, {\"memory_bytes\": 1},"
                          " {\"memory_bytes\": 1}], \"links\": [[0,1,50],[0,2,50],[0,3,50],[1,2,50],[1,3,50],"
                          "[2,3,50]], \"host_gbps\": 16}";
    fs_hardware_t hw;
    fs_error_t err = {0};
    cr_assert_eq(fs_hw_parse_json(clique4, &hw, &err), FS_OK, "%s", err.msg);
    fs_xgnn_t x;
    cr_assert_eq(fs_xgnn_solve(&hw, 0, &x, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(x.replicas, 0);
    for (int g = 0; g < 4; g++) cr_assert_eq(x.holds[g], 1u << g);
    check_one_hop(&hw, &x);
    cr_assert_float_eq(x.min_bandwidth, 50.0, 1e-9);
    /* pairs: each pair holds every partition; PCIe: every GPU holds all */
    fs_hardware_t pairs = preset("nvlink-pairs"), pcie = preset("pcie4");
    cr_assert_eq(fs_xgnn_solve(&pairs, 0, &x, &err), FS_OK);
    cr_assert_eq(x.max_load, 2);
    cr_assert_eq(x.holds[0] | x.holds[1], 0xfu);
    check_one_hop(&pairs, &x);
    cr_assert_eq(fs_xgnn_solve(&pcie, 0, &x, &err), FS_OK);
    for (int g = 0; g < 4; g++) cr_assert_eq(x.holds[g], 0xfu);
}

/* ---- brute force: every plan made of inclusion-minimal dominating holder
 * sets (a plan with a useless replica has more replicas at no lower max
 * load, so it never wins), ranked by (max load, replicas, MinBandwidth). ---- */

typedef struct {
    const fs_hardware_t *hw;
    int n;
    uint32_t closed[8];
    uint32_t sets[8][64];
    int nsets[8];
    uint32_t holders[8];
    int best_max, best_rep;
    double best_mb;
} brute_t;

/* Best a_i over every assignment of remote partitions to holding peers. */
static double brute_reader(const brute_t *b, const uint32_t *holds, int i, int q, int *cnt)
{
    if (q == b->n) {
        double a = INFINITY;
        int local = __builtin_popcount(holds[i]);
        if (local) a = b->hw->local_gbps[i] / local;
        for (int j = 0; j < b->n; j++)
            if (j != i && cnt[j]) a = fmin(a, b->hw->link_gbps[i][j] / cnt[j]);
        return a;
    }
    if (holds[i] & (1u << q)) return brute_reader(b, holds, i, q + 1, cnt);
    double best = -1;
    for (int j = 0; j < b->n; j++) {
        if (j == i || !fs_hw_linked(b->hw, i, j) || !(holds[j] & (1u << q))) continue;
        cnt[j]++;
        best = fmax(best, brute_reader(b, holds, i, q + 1, cnt));
        cnt[j]--;
    }
    return best;
}

static void brute_leaf(brute_t *b)
{
    uint32_t holds[8] = {0};
    int maxl = 0, rep = 0;
    for (int q = 0; q < b->n; q++) {
        rep += __builtin_popcount(b->holders[q]) - 1;
        for (int g = 0; g < b->n; g++)
            if (b->holders[q] & (1u << g)) holds[g] |= 1u << q;
    }
    for (int g = 0; g < b->n; g++) maxl = maxl > __builtin_popcount(holds[g]) ? maxl : __builtin_popcount(holds[g]);
    if (maxl > b->best_max || (maxl == b->best_max && rep > b->best_rep)) return;
    double mb = INFINITY;
    for (int i = 0; i < b->n; i++) {
        int cnt[8] = {0};
        mb = fmin(mb, brute_reader(b, holds, i, 0, cnt));
    }
    if (maxl < b->best_max || rep < b->best_rep || mb > b->best_mb) b->best_mb = mb;
    b->best_max = maxl, b->best_rep = rep;
}

static void brute_walk(brute_t *b, int q)
{
    if (q == b->n) {
        brute_leaf(b);
        return;
    }
    for (int s = 0; s < b->nsets[q]; s++) {
        b->holders[q] = b->sets[q][s];
        brute_walk(b, q + 1);
    }
}

static int dominates(const brute_t *b, uint32_t set)
{
    for (int i = 0; i < b->n; i++)
        if (!(b->closed[i] & set)) return 0;
    return 1;
}

static void brute_force(const fs_hardware_t *hw, int *max_load, int *replicas, double *mb)
{
    brute_t b = {.hw = hw, .n = hw->num_gpus, .best_max = 1 << 30, .best_rep = 1 << 30, .best_mb = -1};
    for (int i = 0; i < b.n; i++) b.closed[i] = fs_hw_peer_mask(hw, i) | 1u << i;
    for (int q = 0; q < b.n; q++)
        for (uint32_t set = 0; set < (1u << b.n); set++) {
            if (!(set & (1u << q)) || !dominates(&b, set)) continue;
            int minimal = 1;
            for (int j = 0; j < b.n && minimal; j++)
                if (j != q && (set & (1u << j)) && dominates(&b, set & ~(1u << j))) minimal = 0;
            if (minimal) b.sets[q][b.nsets[q]++] = set;
        }
    brute_walk(&b, 0);
    *max_load = b.best_max, *replicas = b.best_rep, *mb = b.best_mb;
}

Test(xgnn, min_bandwidth_equals_brute_force_on_small_topologies, .timeout = 300)
{
    static const double speeds[] = {10, 25, 50, 100};
    fs_rng_t r = fs_rng_make(2024, 0);
    for (int trial = 0; trial < 60; trial++) {
        fs_hardware_t hw;
        memset(&hw, 0, sizeof hw);
        hw.num_gpus = 3 + trial % 4; /* 3..6 GPUs */
        hw.fabric = FS_FABRIC_NVLINK;
        for (int i = 0; i < hw.num_gpus; i++) {
            hw.memory_bytes[i] = 1 << 20, hw.host_gbps[i] = 16;
            hw.local_gbps[i] = fs_rng_below(&r, 3) ? 900 : 30; /* sometimes the local term decides */
            for (int j = i + 1; j < hw.num_gpus; j++)
                if (fs_rng_below(&r, 100) < 55) hw.link_gbps[i][j] = hw.link_gbps[j][i] = speeds[fs_rng_below(&r, 4)];
        }
        fs_xgnn_t x;
        fs_error_t err = {0};
        cr_assert_eq(fs_xgnn_solve(&hw, 0, &x, &err), FS_OK, "%s", err.msg);
        cr_assert(x.exact, "trial %d", trial);
        check_one_hop(&hw, &x);
        int want_max, want_rep;
        double want_mb;
        brute_force(&hw, &want_max, &want_rep, &want_mb);
        cr_assert_eq(x.max_load, want_max, "trial %d", trial);
        cr_assert_eq(x.replicas, want_rep, "trial %d", trial);
        cr_assert_float_eq(x.min_bandwidth, want_mb, 1e-9 * want_mb, "trial %d: %g vs brute force %g", trial,
                           x.min_bandwidth, want_mb);
        /* and the reported bandwidth is what the plan's own sources give */
        fs_xgnn_t again = x;
        cr_assert_eq(fs_xgnn_evaluate(&hw, &again, &err), FS_OK);
        cr_assert_float_eq(again.min_bandwidth, x.min_bandwidth, 1e-12 * want_mb);
    }
}

/* ==== topology split ======================================================== */

Test(topo, hot_prefix_mod_n_within_budget)
{
    /* 6 nodes, degrees 3,1,0,2,5,1; hotness = degree */
    int64_t indptr[] = {0, 3, 4, 4, 6, 11, 12};
    double hot[] = {3, 1, 0, 2, 5, 1};
    uint32_t holds[2] = {1u << 0, 1u << 1};
    int64_t big[2] = {1 << 20, 1 << 20};
    fs_topo_split_t t;
    fs_error_t err = {0};
    cr_assert_eq(fs_topo_split(hot, NULL, 6, indptr, 4, 2, holds, big, 1, &t, &err), FS_OK, "%s", err.msg);
    int64_t want_order[] = {4, 0, 3, 1, 5, 2}; /* ties by id */
    cr_assert_arr_eq(t.old_of_new, want_order, sizeof want_order);
    cr_assert_eq(t.hot, 6);
    cr_assert_eq(fs_topo_part_of(&t, 4), 0);
    cr_assert_eq(fs_topo_local_of(&t, 4), 0);
    cr_assert_eq(fs_topo_part_of(&t, 0), 1);
    cr_assert_eq(fs_topo_part_of(&t, 3), 0);
    cr_assert_eq(fs_topo_local_of(&t, 3), 1);
    cr_assert_eq(t.part_rows[0], 3);
    cr_assert_eq(t.part_bytes[0], 8 + (8 + 20) + (8 + 8) + (8 + 4)); /* nodes 4, 3, 5 */
    fs_topo_split_free(&t);
    /* GPU0 fits node 4 (28 B) and the closing entry (8 B) but not node 3: prefix stops at new id 2 */
    int64_t tight[2] = {8 + 28 + 10, 1 << 20};
    cr_assert_eq(fs_topo_split(hot, NULL, 6, indptr, 4, 2, holds, tight, 1, &t, &err), FS_OK);
    cr_assert_eq(t.hot, 2);
    cr_assert_eq(fs_topo_part_of(&t, 3), -1);
    cr_assert_eq(fs_topo_local_of(&t, 3), 0); /* first cold node: host row 0 */
    fs_topo_split_free(&t);
    int64_t negative[2] = {-1, 5};
    cr_assert_eq(fs_topo_split(hot, NULL, 6, indptr, 4, 2, holds, negative, 1, &t, &err), FS_ERR_INVALID_ARGUMENT);
}

/* ==== plans ================================================================== */

static double *powerlaw(int64_t n, uint64_t seed)
{
    double *p = malloc(sizeof *p * (size_t)n);
    for (int64_t v = 0; v < n; v++) {
        uint64_t rank = fs_rng_at(seed, 0, (uint64_t)v) % (uint64_t)n;
        p[v] = 1e6 / pow((double)rank + 1, 1.1);
    }
    return p;
}

static fs_plan_t *build(const fs_hardware_t *hw, const fs_plan_input_t *in, const fs_plan_opts_t *o)
{
    fs_plan_t *plan;
    fs_error_t err = {0};
    cr_assert_eq(fs_plan_build(hw, in, o, &plan, &err), FS_OK, "%s", err.msg);
    return plan;
}

/* Each reader's feature route agrees with the rule: local, else a linked
 * holder, else host; and every GPU's rows fit its BSIZE. */
static void check_routes(const fs_hardware_t *hw, const fs_plan_t *plan)
{
    int64_t N = plan->num_nodes;
    uint32_t *holder = calloc((size_t)N, sizeof *holder);
    for (int g = 0; g < plan->num_gpus; g++) {
        cr_assert_leq(plan->gpu[g].num_rows, plan->budget.bsize[g], "GPU %d over capacity", g);
        for (int64_t k = 0; k < plan->gpu[g].num_rows; k++) holder[plan->gpu[g].rows[k]] |= 1u << g;
    }
    int8_t *dev = malloc((size_t)N);
    int64_t *pos = malloc(sizeof *pos * (size_t)N);
    fs_error_t err = {0};
    for (int i = 0; i < plan->num_gpus; i++) {
        cr_assert_eq(fs_plan_route(plan, i, dev, pos, &err), FS_OK, "%s", err.msg);
        for (int64_t v = 0; v < N; v++) {
            uint32_t h = holder[v];
            if (h & (1u << i)) cr_assert_eq(dev[v], i, "reader %d row %lld not local", i, (long long)v);
            else if (h & fs_hw_peer_mask(hw, i)) {
                cr_assert(dev[v] >= 0 && (h & (1u << dev[v])) && fs_hw_linked(hw, i, dev[v]));
            } else cr_assert_eq(dev[v], -1, "reader %d row %lld", i, (long long)v);
            if (dev[v] >= 0) cr_assert_eq(plan->gpu[dev[v]].rows[pos[v]], v);
            else cr_assert_eq(pos[v], v);
        }
    }
    free(holder), free(dev), free(pos);
}

Test(plan, rule1_on_pcie_replicates_the_top_rows)
{
    fs_hardware_t hw = preset("pcie4");
    fs_error_t err = {0};
    fs_hw_set_memory(&hw, 100 * 64, &err);
    int64_t N = 1000;
    double *p = powerlaw(N, 1);
    fs_plan_input_t in = {.num_nodes = N, .p = p, .row_bytes = 64};
    fs_plan_opts_t o;
    fs_plan_defaults(&o);
    fs_plan_t *plan = build(&hw, &in, &o);
    cr_assert_eq(plan->policy, FS_FEAT_RULE1);
    int64_t *V = sorted_order(p, N);
    for (int g = 0; g < 4; g++) {
        cr_assert_eq(plan->gpu[g].num_rows, 100);
        cr_assert_arr_eq(plan->gpu[g].rows, V, sizeof *V * 100);
        for (int64_t k = 0; k < 100; k++) cr_assert_eq(plan->gpu[g].readers[k], 1u << g);
    }
    cr_assert_float_eq(plan->replication, 4.0, 1e-12);
    check_routes(&hw, plan);
    /* cost model: local = the top 100, host = the rest, no peers */
    fs_cost_t c;
    cr_assert_eq(fs_plan_predict(plan, &hw, p, NULL, &c, &err), FS_OK, "%s", err.msg);
    double top = 0, all = 0;
    for (int64_t k = 0; k < N; k++) all += p[V[k]], top += k < 100 ? p[V[k]] : 0;
    for (int i = 0; i < 4; i++) {
        cr_assert_float_eq(c.local_bytes[i], 64 * top, 1e-9 * 64 * all);
        cr_assert_float_eq(c.host_bytes[i], 64 * (all - top), 1e-9 * 64 * all);
        cr_assert_eq(c.peer_bytes[i], 0);
        cr_assert_float_eq(c.seconds[i], 64 * (all - top) / (hw.host_gbps[i] * 1e9), 1e-12);
    }
    fs_plan_free(plan);
    free(p), free(V);
}

Test(plan, algo1_on_nvlink_pairs_routes_local_then_peer_then_host)
{
    fs_hardware_t hw = preset("nvlink-pairs");
    fs_error_t err = {0};
    fs_hw_set_memory(&hw, 150 * 32, &err);
    int64_t N = 2000;
    double *p = powerlaw(N, 2);
    fs_plan_input_t in = {.num_nodes = N, .p = p, .row_bytes = 32};
    fs_plan_opts_t o;
    fs_plan_defaults(&o);
    fs_plan_t *plan = build(&hw, &in, &o);
    cr_assert_eq(plan->policy, FS_FEAT_ALGO1);
    cr_assert_eq(plan->group[0], plan->group[1]);
    cr_assert_neq(plan->group[0], plan->group[2]);
    cr_assert_float_eq(plan->alpha[0], 0.2, 1e-15);
    /* the plan's rows are exactly Algorithm 1's output for the pair */
    int64_t *V = sorted_order(p, N), B[2][150], count;
    cr_assert_eq(fs_algo1(p, V, N, 2, 150, 0.2, &B[0][0], &count, &err), FS_OK);
    cr_assert_arr_eq(plan->gpu[0].rows, B[0], sizeof B[0]);
    cr_assert_arr_eq(plan->gpu[1].rows, B[1], sizeof B[1]);
    cr_assert_arr_eq(plan->gpu[2].rows, B[0], sizeof B[0]);
    /* two pairs hold the same rows (>= 2 copies), each pair shares some (< 4) */
    cr_assert_gt(plan->replication, 2.0);
    cr_assert_lt(plan->replication, 4.0);
    check_routes(&hw, plan);

    /* docs/algorithms.md §2: E[C_i] = C_cpu Σp − (C_cpu − C_gpu) Σ_{B_gpu} p − C_gpu Σ_{B_i} p */
    fs_cost_t c;
    cr_assert_eq(fs_plan_predict(plan, &hw, p, NULL, &c, &err), FS_OK, "%s", err.msg);
    char *in_b0 = calloc((size_t)N, 1), *in_b1 = calloc((size_t)N, 1);
    for (int k = 0; k < 150; k++) in_b0[B[0][k]] = 1, in_b1[B[1][k]] = 1;
    double all = 0, group = 0, mine = 0;
    for (int64_t v = 0; v < N; v++) {
        all += p[v];
        group += (in_b0[v] || in_b1[v]) ? p[v] : 0;
        mine += in_b0[v] ? p[v] : 0;
    }
    double c_cpu = 32 / (hw.host_gbps[0] * 1e9), c_gpu = 32 / (hw.link_gbps[0][1] * 1e9);
    double formula = c_cpu * all - (c_cpu - c_gpu) * group - c_gpu * mine;
    cr_assert_float_eq(c.seconds[0], formula, 1e-9 * formula);
    cr_assert_float_eq(c.local_bytes[0] + c.peer_bytes[0] + c.host_bytes[0], 32 * all, 1e-9 * 32 * all);
    cr_assert_float_eq(c.bytes[0][1], c.peer_bytes[0], 1e-9 * 32 * all);
    cr_assert_eq(c.bytes[0][2], 0);
    cr_assert_float_eq(c.bytes[0][FS_COST_HOST], c.host_bytes[0], 1e-12);
    /* per-reader workloads: reader 3 reads nothing */
    double *zero = calloc((size_t)N, sizeof *zero);
    const double *per[4] = {NULL, NULL, NULL, zero};
    cr_assert_eq(fs_plan_predict(plan, &hw, p, per, &c, &err), FS_OK);
    cr_assert_eq(c.host_bytes[3] + c.local_bytes[3] + c.peer_bytes[3], 0);
    cr_assert_gt(c.host_bytes[2], 0);
    free(zero), free(in_b0), free(in_b1);
    fs_plan_free(plan);
    free(p), free(V);
}

Test(plan, several_holding_peers_share_the_readers)
{
    /* nvswitch8, Rule 1: GPU0 holds the top 10, the others the top 400, so
     * reader 0 reads rows 10..399 from seven equally fast peers */
    fs_hardware_t hw = preset("nvswitch8");
    fs_error_t err = {0};
    fs_hw_set_memory(&hw, 400 * 16, &err);
    hw.memory_bytes[0] = 10 * 16;
    int64_t N = 3000;
    double *p = powerlaw(N, 3);
    fs_plan_input_t in = {.num_nodes = N, .p = p, .row_bytes = 16};
    fs_plan_opts_t o;
    fs_plan_defaults(&o);
    o.policy = FS_FEAT_RULE1;
    fs_plan_t *plan = build(&hw, &in, &o);
    check_routes(&hw, plan);
    int8_t *dev = malloc((size_t)N);
    cr_assert_eq(fs_plan_route(plan, 0, dev, NULL, &err), FS_OK);
    int per_peer[8] = {0};
    for (int64_t v = 0; v < N; v++)
        if (dev[v] > 0) per_peer[dev[v]]++;
    for (int g = 1; g < 8; g++) cr_assert(per_peer[g] > 390 / 7 / 2 && per_peer[g] < 390 / 7 * 2, "peer %d: %d", g,
                                          per_peer[g]);
    fs_plan_free(plan);
    free(p), free(dev);
}

static fs_plan_t *dgx1_plan(double **p_out, int64_t **indptr_out, int64_t *N_out)
{
    fs_hardware_t hw = preset("dgx1-v100");
    fs_error_t err = {0};
    fs_hw_set_memory(&hw, 64 << 10, &err);
    int64_t N = 4000;
    int64_t *indptr = malloc(sizeof *indptr * (size_t)(N + 1));
    indptr[0] = 0;
    for (int64_t v = 0; v < N; v++) indptr[v + 1] = indptr[v] + (int64_t)(fs_rng_at(9, 1, (uint64_t)v) % 12);
    double *p = powerlaw(N, 4);
    fs_plan_input_t in = {.num_nodes = N, .p = p, .row_bytes = 64, .indptr = indptr, .index_bytes = 4};
    fs_plan_opts_t o;
    fs_plan_defaults(&o);
    o.budget.topo_ratio = 0.5; /* half the topology on GPUs, the rest of memory for features */
    fs_plan_t *plan = build(&hw, &in, &o);
    *p_out = p, *indptr_out = indptr, *N_out = N;
    return plan;
}

Test(plan, dgx1_partitions_features_and_topology_with_the_solver)
{
    double *p;
    int64_t *indptr, N;
    fs_plan_t *plan = dgx1_plan(&p, &indptr, &N);
    fs_hardware_t hw = preset("dgx1-v100");
    cr_assert_eq(plan->policy, FS_FEAT_XGNN);
    cr_assert_gt(plan->topo.hot, 0);
    cr_assert_lt(plan->topo.hot, N, "the budget should leave a cold part on the host");
    cr_assert_gt(plan->feat_hot, 0);
    for (int g = 0; g < 8; g++) {
        cr_assert_eq(__builtin_popcount(plan->gpu[g].topo_parts), 2);
        /* topology bytes held fit the topology budget */
        int64_t bytes = 8 * 2;
        for (int64_t k = 0; k < plan->gpu[g].num_topo; k++) {
            int64_t v = plan->gpu[g].topo_rows[k];
            bytes += 8 + (indptr[v + 1] - indptr[v]) * 4;
        }
        cr_assert_leq(bytes, plan->budget.topo_bytes[g], "GPU %d", g);
        cr_assert_leq(plan->gpu[g].num_rows, plan->budget.bsize[g]);
        cr_assert_leq(plan->budget.topo_bytes[g] + plan->budget.feat_bytes[g], plan->budget.avail_bytes[g]);
    }
    /* every reader reaches every hot node in one hop, the cold ones on the host */
    int8_t *dev = malloc((size_t)N);
    int64_t *pos = malloc(sizeof *pos * (size_t)N);
    fs_error_t err = {0};
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(fs_plan_topo_route(plan, i, dev, pos, &err), FS_OK);
        for (int64_t v = 0; v < N; v++) {
            int part = fs_topo_part_of(&plan->topo, v);
            if (part < 0) {
                cr_assert_eq(dev[v], -1);
                continue;
            }
            cr_assert(dev[v] == i || fs_hw_linked(&hw, i, dev[v]), "reader %d node %lld from %d", i, (long long)v,
                      dev[v]);
            cr_assert(plan->gpu[dev[v]].topo_parts & (1u << part));
            cr_assert_eq(plan->gpu[dev[v]].topo_rows[pos[v]], v);
        }
        cr_assert_eq(fs_plan_route(plan, i, dev, pos, &err), FS_OK);
        int64_t on_gpu = 0;
        for (int64_t v = 0; v < N; v++) {
            on_gpu += dev[v] >= 0;
            if (dev[v] >= 0) cr_assert(dev[v] == i || fs_hw_linked(&hw, i, dev[v]));
        }
        cr_assert_eq(on_gpu, plan->feat_hot, "reader %d sees every partitioned row", i);
    }
    cr_assert_float_eq(plan->replication, 2.0, 0.01);
    free(dev), free(pos);
    fs_plan_free(plan);
    free(p), free(indptr);
}

Test(plan, bad_plan_inputs_are_named)
{
    fs_hardware_t hw = preset("pcie4");
    double p[4] = {1, 2, 3, 4};
    fs_plan_input_t in = {.num_nodes = 4, .p = p, .row_bytes = 8};
    fs_plan_opts_t o;
    fs_plan_defaults(&o);
    fs_plan_t *plan;
    fs_error_t err = {0};
    o.budget.reserve_bytes = -5;
    cr_assert_eq(fs_plan_build(&hw, &in, &o, &plan, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "negative reserve"), "%s", err.msg);
    fs_plan_defaults(&o);
    o.policy = (fs_feat_policy_t)42;
    cr_assert_eq(fs_plan_build(&hw, &in, &o, &plan, &err), FS_ERR_INVALID_ARGUMENT);
    fs_plan_defaults(&o);
    o.alpha[FS_FABRIC_NVLINK] = 1.5;
    cr_assert_eq(fs_plan_build(&hw, &in, &o, &plan, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "alpha for nvlink"), "%s", err.msg);
    fs_plan_defaults(&o);
    p[2] = -3;
    cr_assert_eq(fs_plan_build(&hw, &in, &o, &plan, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "p[2]"), "%s", err.msg);
    p[2] = 3;
    in.row_bytes = 0;
    cr_assert_eq(fs_plan_build(&hw, &in, &o, &plan, &err), FS_ERR_INVALID_ARGUMENT);
    in.row_bytes = 8;
    int64_t shifted[5] = {1, 2, 3, 4, 5}, falling[5] = {0, 2, 1, 3, 4};
    in.indptr = shifted, in.index_bytes = 4;
    cr_assert_eq(fs_plan_build(&hw, &in, &o, &plan, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "indptr[0]"), "%s", err.msg);
    in.indptr = falling;
    cr_assert_eq(fs_plan_build(&hw, &in, &o, &plan, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "row 1"), "%s", err.msg);
    in.indptr = falling, in.index_bytes = 3;
    cr_assert_eq(fs_plan_build(&hw, &in, &o, &plan, &err), FS_ERR_INVALID_ARGUMENT);
    in.indptr = NULL;
    cr_assert_eq(fs_plan_route(NULL, 0, NULL, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fs_plan_build(&hw, &in, &o, &plan, &err), FS_OK);
    cr_assert_eq(fs_plan_route(plan, 4, NULL, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "reader 4"), "%s", err.msg);
    fs_plan_free(plan);
}

/* ==== plan files ============================================================== */

/* FNV-1a over both route arrays of every reader, features and topology. */
static uint64_t routing_hash(const fs_plan_t *plan)
{
    int64_t N = plan->num_nodes;
    int8_t *dev = malloc((size_t)N);
    int64_t *pos = malloc(sizeof *pos * (size_t)N);
    uint64_t h = 1469598103934665603ULL;
    fs_error_t err = {0};
    for (int topo = 0; topo <= 1; topo++)
        for (int i = 0; i < plan->num_gpus; i++) {
            fs_status_t st =
                topo ? fs_plan_topo_route(plan, i, dev, pos, &err) : fs_plan_route(plan, i, dev, pos, &err);
            cr_assert_eq(st, FS_OK, "%s", err.msg);
            const unsigned char *b = (const unsigned char *)dev;
            for (int64_t k = 0; k < N; k++) h = (h ^ b[k]) * 1099511628211ULL;
            b = (const unsigned char *)pos;
            for (int64_t k = 0; k < N * 8; k++) h = (h ^ b[k]) * 1099511628211ULL;
        }
    free(dev), free(pos);
    return h;
}

Test(planfile, round_trip_gives_identical_routing)
{
    double *p;
    int64_t *indptr, N;
    fs_plan_t *plan = dgx1_plan(&p, &indptr, &N), *back;
    char *dir = tu_mkdtemp(), *path = tu_path(dir, "plan.bin");
    fs_error_t err = {0};
    cr_assert_eq(fs_plan_save(plan, path, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_plan_load(path, &back, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(routing_hash(back), routing_hash(plan));
    cr_assert_eq(back->policy, plan->policy);
    cr_assert_eq(back->topo.hot, plan->topo.hot);
    cr_assert_eq(back->feat_hot, plan->feat_hot);
    cr_assert_eq(back->replication, plan->replication);
    cr_assert_eq(back->budget.feature_first, plan->budget.feature_first);
    cr_assert_eq(memcmp(back->xgnn.holds, plan->xgnn.holds, sizeof plan->xgnn.holds), 0);
    cr_assert_arr_eq(back->topo.new_of_old, plan->topo.new_of_old, sizeof(int64_t) * (size_t)N);
    for (int g = 0; g < 8; g++) cr_assert_eq(back->budget.bsize[g], plan->budget.bsize[g]);
    /* a features-only plan too */
    fs_hardware_t hw = preset("nvlink-pairs");
    fs_plan_input_t in = {.num_nodes = N, .p = p, .row_bytes = 64};
    fs_plan_opts_t o;
    fs_plan_defaults(&o);
    fs_hw_set_memory(&hw, 64 * 300, &err);
    fs_plan_t *small = build(&hw, &in, &o), *small_back;
    cr_assert_eq(fs_plan_save(small, path, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_plan_load(path, &small_back, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(routing_hash(small_back), routing_hash(small));
    fs_plan_free(small), fs_plan_free(small_back), fs_plan_free(back), fs_plan_free(plan);
    tu_rm_rf(dir);
    free(path), free(dir), free(p), free(indptr);
}

static fs_status_t load_bytes(const char *path, const unsigned char *data, size_t len, fs_error_t *err)
{
    tu_write(path, data, len);
    fs_plan_t *plan = NULL;
    fs_status_t st = fs_plan_load(path, &plan, err);
    cr_assert_null(plan);
    return st;
}

Test(planfile, corrupt_and_truncated_files_are_clear_errors)
{
    double *p;
    int64_t *indptr, N;
    fs_plan_t *plan = dgx1_plan(&p, &indptr, &N);
    char *dir = tu_mkdtemp(), *path = tu_path(dir, "plan.bin"), *bad = tu_path(dir, "bad.bin");
    fs_error_t err = {0};
    cr_assert_eq(fs_plan_save(plan, path, &err), FS_OK, "%s", err.msg);
    size_t len;
    unsigned char *good = tu_read(path, &len), *copy = malloc(len);

    memcpy(copy, good, len);
    copy[len / 2] ^= 0x40;
    cr_assert_eq(load_bytes(bad, copy, len, &err), FS_ERR_FORMAT);
    cr_assert(strstr(err.msg, "checksum"), "%s", err.msg);

    cr_assert_eq(load_bytes(bad, good, len - 100, &err), FS_ERR_FORMAT);
    cr_assert(strstr(err.msg, "truncated"), "%s", err.msg);
    cr_assert_eq(load_bytes(bad, good, 10, &err), FS_ERR_FORMAT);
    cr_assert(strstr(err.msg, "truncated"), "%s", err.msg);
    cr_assert_eq(load_bytes(bad, good, 0, &err), FS_ERR_FORMAT);

    memcpy(copy, good, len);
    copy[0] = 'X';
    cr_assert_eq(load_bytes(bad, copy, len, &err), FS_ERR_FORMAT);
    cr_assert(strstr(err.msg, "magic"), "%s", err.msg);

    memcpy(copy, good, len);
    copy[8] = 99; /* version */
    cr_assert_eq(load_bytes(bad, copy, len, &err), FS_ERR_UNSUPPORTED);
    cr_assert(strstr(err.msg, "version 99"), "%s", err.msg);

    unsigned char *longer = malloc(len + 3);
    memcpy(longer, good, len);
    memset(longer + len, 0, 3);
    cr_assert_eq(load_bytes(bad, longer, len + 3, &err), FS_ERR_FORMAT);
    cr_assert(strstr(err.msg, "trailing"), "%s", err.msg);

    char *missing = tu_path(dir, "missing.bin");
    fs_plan_t *none;
    cr_assert_eq(fs_plan_load(missing, &none, &err), FS_ERR_NOT_FOUND);
    cr_assert(strstr(err.msg, "missing.bin"), "%s", err.msg);

    free(longer), free(copy), free(good), free(missing);
    fs_plan_free(plan);
    tu_rm_rf(dir);
    free(path), free(bad), free(dir), free(p), free(indptr);
}

/* ==== baseline policies (NAIVE, RAND, DEGREE) ================================ */

/* The suites below also drive replay.h and the server's placement (place.h). */
#include "place.h"
#include "replay.h"

Test(hardware, detected_gpus_become_a_description)
{
    fs_error_t err = {0};
    fs_hardware_t hw;
    int64_t free_bytes[4] = {40LL << 30, 39LL << 30, 40LL << 30, 38LL << 30};
    unsigned char pairs[FS_HW_MAX_GPUS][FS_HW_MAX_GPUS] = {{0, 1}, {1, 0}, {0, 0, 0, 1}, {0, 0, 1, 0}};
    cr_assert_eq(fs_hw_detected(4, free_bytes, (const unsigned char(*)[FS_HW_MAX_GPUS])pairs, &hw, &err), FS_OK,
                 "%s", err.msg);
    cr_assert_str_eq(hw.name, "detected");
    cr_assert_eq(hw.fabric, FS_FABRIC_NVLINK);
    cr_assert(fs_hw_linked(&hw, 0, 1) && fs_hw_linked(&hw, 2, 3) && !fs_hw_linked(&hw, 1, 2));
    cr_assert_eq(hw.link_gbps[0][1], FS_HW_DETECTED_LINK_GBPS);
    for (int g = 0; g < 4; g++) cr_assert_eq(hw.memory_bytes[g], free_bytes[g], "free memory, not total");

    unsigned char all[FS_HW_MAX_GPUS][FS_HW_MAX_GPUS];
    memset(all, 1, sizeof all);
    for (int g = 0; g < FS_HW_MAX_GPUS; g++) all[g][g] = 0;
    cr_assert_eq(fs_hw_detected(4, free_bytes, (const unsigned char(*)[FS_HW_MAX_GPUS])all, &hw, &err), FS_OK);
    cr_assert_eq(hw.fabric, FS_FABRIC_NVSWITCH, "all to all at one speed");

    unsigned char one_way[FS_HW_MAX_GPUS][FS_HW_MAX_GPUS] = {{0, 1}};
    cr_assert_eq(fs_hw_detected(2, free_bytes, (const unsigned char(*)[FS_HW_MAX_GPUS])one_way, &hw, &err), FS_OK);
    cr_assert_eq(hw.fabric, FS_FABRIC_PCIE, "access one way only is no link");
    cr_assert(!fs_hw_linked(&hw, 0, 1));

    cr_assert_eq(fs_hw_detected(0, free_bytes, (const unsigned char(*)[FS_HW_MAX_GPUS])pairs, &hw, &err),
                 FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "0 GPUs"), "%s", err.msg);
    int64_t negative[1] = {-1};
    cr_assert_eq(fs_hw_detected(1, negative, (const unsigned char(*)[FS_HW_MAX_GPUS])pairs, &hw, &err),
                 FS_ERR_INVALID_ARGUMENT);
}

Test(hardware, first_gpus_keeps_the_links_among_them)
{
    fs_hardware_t hw = preset("nvswitch8");
    fs_error_t err = {0};
    cr_assert_eq(fs_hw_first_gpus(&hw, 4, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(hw.num_gpus, 4);
    cr_assert_eq(hw.fabric, FS_FABRIC_NVSWITCH);
    cr_assert_eq(fs_hw_validate(&hw, &err), FS_OK, "%s", err.msg);
    for (int g = 0; g < 4; g++) cr_assert_eq(fs_hw_peer_mask(&hw, g), 0xfu & ~(1u << g));
    cr_assert(strstr(hw.name, "nvswitch8"), "%s", hw.name);
    cr_assert_eq(fs_hw_first_gpus(&hw, 5, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "5 GPUs") && strstr(err.msg, "has 4"), "%s", err.msg);
    cr_assert_eq(fs_hw_first_gpus(&hw, 0, &err), FS_ERR_INVALID_ARGUMENT);
    fs_hardware_t pairs = preset("nvlink-pairs");
    cr_assert_eq(fs_hw_first_gpus(&pairs, 3, &err), FS_OK);
    cr_assert_eq(fs_hw_peer_mask(&pairs, 2), 0u, "GPU 3's link went with it");
}

Test(plan, policy_names_parse_and_unknown_ones_are_named)
{
    fs_error_t err = {0};
    for (int p = 0; p < FS_FEAT_POLICY_COUNT_; p++) {
        fs_feat_policy_t got;
        cr_assert_eq(fs_feat_policy_parse(fs_feat_policy_name((fs_feat_policy_t)p), &got, &err), FS_OK);
        cr_assert_eq(got, (fs_feat_policy_t)p);
    }
    fs_feat_policy_t got = FS_FEAT_ALGO1;
    cr_assert_eq(fs_feat_policy_parse("metis", &got, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "'metis'") && strstr(err.msg, "degree"), "%s", err.msg);
    cr_assert_eq(got, FS_FEAT_ALGO1, "untouched on error");
}

Test(plan, alpha_specs_set_each_link_class_and_bad_ones_are_named)
{
    fs_error_t err = {0};
    fs_plan_opts_t o;
    fs_plan_defaults(&o);
    cr_assert_float_eq(o.alpha[FS_FABRIC_NVLINK], 0.2, 1e-12, "P0's default");
    cr_assert_eq(fs_plan_alpha_parse("0", o.alpha, &err), FS_OK, "%s", err.msg);
    cr_assert(o.alpha[FS_FABRIC_NVLINK] == 0 && o.alpha[FS_FABRIC_NVSWITCH] == 0);
    cr_assert_eq(fs_plan_alpha_parse("nvswitch=0.5", o.alpha, &err), FS_OK, "%s", err.msg);
    cr_assert(o.alpha[FS_FABRIC_NVLINK] == 0 && o.alpha[FS_FABRIC_NVSWITCH] == 0.5, "the other class keeps its value");
    cr_assert_eq(fs_plan_alpha_parse("nvlink=0.3,nvswitch=1", o.alpha, &err), FS_OK, "%s", err.msg);
    cr_assert(o.alpha[FS_FABRIC_NVLINK] == 0.3 && o.alpha[FS_FABRIC_NVSWITCH] == 1);

    static const struct {
        const char *spec, *named;
    } bad[] = {
        {"", "empty"},          {"1.5", "'1.5'"},          {"-0.1", "'-0.1'"},       {"nan", "'nan'"},
        {"0.2x", "'0.2x'"},     {"pcie=0.1", "'pcie=0.1'"}, {"nvlink=", "'nvlink='"}, {"nvlink=0.1,,", "''"},
        {"nvlink:0.1", "'nvlink:0.1'"}, {"nvlink=0.1,fast=0", "'fast=0'"}, {"nvlinkx=0.1", "'nvlinkx=0.1'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        double before[FS_FABRIC_COUNT_];
        memcpy(before, o.alpha, sizeof before);
        cr_assert_eq(fs_plan_alpha_parse(bad[i].spec, o.alpha, &err), FS_ERR_INVALID_ARGUMENT, "%s", bad[i].spec);
        cr_assert(strstr(err.msg, bad[i].named), "'%s' -> %s", bad[i].spec, err.msg);
        cr_assert(memcmp(before, o.alpha, sizeof before) == 0, "'%s' changed alpha", bad[i].spec);
    }
}

static fs_plan_t *baseline_plan(const char *hw_name, int gpus, fs_feat_policy_t policy, int64_t N, int64_t rows,
                                const double *p, fs_hardware_t *hw_out)
{
    fs_hardware_t hw = preset(hw_name);
    fs_error_t err = {0};
    if (gpus) cr_assert_eq(fs_hw_first_gpus(&hw, gpus, &err), FS_OK);
    fs_hw_set_memory(&hw, rows * 32, &err);
    fs_plan_input_t in = {.num_nodes = N, .p = p, .row_bytes = 32};
    fs_plan_opts_t o;
    fs_plan_defaults(&o);
    o.policy = policy;
    fs_plan_t *plan = build(&hw, &in, &o);
    cr_assert_eq(plan->policy, policy);
    if (hw_out) *hw_out = hw;
    return plan;
}

Test(plan, naive_holds_id_ranges_routed_over_links)
{
    int64_t N = 1000;
    double *p = powerlaw(N, 5);
    fs_hardware_t hw;
    fs_plan_t *plan = baseline_plan("nvlink-pairs", 0, FS_FEAT_NAIVE, N, 100, p, &hw);
    for (int g = 0; g < 4; g++) {
        cr_assert_eq(plan->gpu[g].num_rows, 100);
        for (int64_t k = 0; k < 100; k++) cr_assert_eq(plan->gpu[g].rows[k], 100 * g + k);
    }
    cr_assert_eq(plan->distinct_rows, 400);
    cr_assert_float_eq(plan->replication, 1.0, 1e-12);
    check_routes(&hw, plan);
    /* reader 0 reaches its pair's ranges only: [0, 200) on GPUs, the rest host */
    int8_t *dev = malloc((size_t)N);
    fs_error_t err = {0};
    cr_assert_eq(fs_plan_route(plan, 0, dev, NULL, &err), FS_OK);
    for (int64_t v = 0; v < N; v++) cr_assert_eq(dev[v], v < 100 ? 0 : v < 200 ? 1 : -1, "row %lld", (long long)v);
    fs_plan_free(plan);
    /* ranges past the end are cut short: 3 GPUs x 400 rows over 1000 ids */
    plan = baseline_plan("nvswitch8", 3, FS_FEAT_NAIVE, N, 400, p, &hw);
    cr_assert_eq(plan->gpu[0].num_rows, 400);
    cr_assert_eq(plan->gpu[2].num_rows, 200);
    cr_assert_eq(plan->gpu[2].rows[199], 999);
    check_routes(&hw, plan);
    fs_plan_free(plan);
    free(p), free(dev);
}

Test(plan, rand_is_deterministic_and_spread)
{
    int64_t N = 20000;
    double *p = powerlaw(N, 6);
    fs_plan_t *a = baseline_plan("nvswitch8", 4, FS_FEAT_RAND, N, 2000, p, NULL);
    fs_hardware_t hw = preset("nvswitch8");
    fs_error_t err = {0};
    fs_hw_first_gpus(&hw, 4, &err);
    fs_hw_set_memory(&hw, 2000 * 32, &err);
    fs_plan_input_t in = {.num_nodes = N, .p = p, .row_bytes = 32};
    fs_plan_opts_t o;
    fs_plan_defaults(&o);
    o.policy = FS_FEAT_RAND;
    o.threads = 1;
    fs_plan_t *b = build(&hw, &in, &o);
    char *seen = calloc((size_t)N, 1);
    for (int g = 0; g < 4; g++) {
        cr_assert_eq(a->gpu[g].num_rows, 2000);
        cr_assert_arr_eq(a->gpu[g].rows, b->gpu[g].rows, sizeof(int64_t) * 2000, "GPU %d differs by thread count", g);
        double mean = 0;
        int64_t in_prefix = 0;
        for (int64_t k = 0; k < 2000; k++) {
            int64_t v = a->gpu[g].rows[k];
            cr_assert_eq(seen[v], 0, "row %lld on two GPUs", (long long)v);
            seen[v] = 1;
            mean += (double)v / 2000;
            in_prefix += v < 2000;
        }
        /* a hash spreads ids: mean near N/2, about a tenth in the first tenth (never the NAIVE range) */
        cr_assert(mean > 0.4 * (double)N && mean < 0.6 * (double)N, "GPU %d mean id %.0f", g, mean);
        cr_assert(in_prefix > 100 && in_prefix < 300, "GPU %d: %lld of the first 2000 ids", g, (long long)in_prefix);
    }
    check_routes(&hw, a);
    fs_plan_free(a), fs_plan_free(b);
    free(p), free(seen);
}

Test(plan, degree_partitions_the_hot_prefix_per_clique)
{
    int64_t N = 5000;
    double *p = powerlaw(N, 7);
    int64_t *V = sorted_order(p, N);
    fs_hardware_t hw;
    fs_plan_t *plan = baseline_plan("nvlink-pairs", 0, FS_FEAT_DEGREE, N, 300, p, &hw);
    /* each pair holds the top 600 once, round-robin: GPU 0 ranks 0, 2, 4, ..., GPU 1 ranks 1, 3, ... */
    for (int g = 0; g < 4; g++) {
        cr_assert_eq(plan->gpu[g].num_rows, 300);
        for (int64_t k = 0; k < 300; k++) cr_assert_eq(plan->gpu[g].rows[k], V[2 * k + g % 2]);
    }
    cr_assert_eq(plan->distinct_rows, 600);
    cr_assert_float_eq(plan->replication, 2.0, 1e-12);
    check_routes(&hw, plan);
    fs_plan_free(plan);
    /* all-to-all: one clique of 4, the top 1200 on GPUs */
    plan = baseline_plan("nvswitch8", 4, FS_FEAT_DEGREE, N, 300, p, &hw);
    cr_assert_eq(plan->distinct_rows, 1200);
    for (int g = 0; g < 4; g++)
        for (int64_t k = 0; k < 300; k++) cr_assert_eq(plan->gpu[g].rows[k], V[4 * k + g]);
    check_routes(&hw, plan);
    fs_plan_free(plan);
    /* no links: every GPU its own top rows (Rule 1) */
    plan = baseline_plan("pcie4", 0, FS_FEAT_DEGREE, N, 300, p, &hw);
    for (int g = 0; g < 4; g++) cr_assert_arr_eq(plan->gpu[g].rows, V, sizeof *V * 300);
    fs_plan_free(plan);
    free(p), free(V);
}

Test(plan, baselines_never_exceed_capacity)
{
    int64_t N = 3000;
    double *p = powerlaw(N, 8);
    static const char *const hws[] = {"pcie4", "nvlink-pairs", "dgx1-v100", "nvswitch8"};
    static const fs_feat_policy_t pols[] = {FS_FEAT_NAIVE, FS_FEAT_RAND, FS_FEAT_DEGREE};
    fs_error_t err = {0};
    for (size_t h = 0; h < sizeof hws / sizeof *hws; h++)
        for (size_t q = 0; q < 3; q++) {
            fs_hardware_t hw = preset(hws[h]);
            for (int g = 0; g < hw.num_gpus; g++) hw.memory_bytes[g] = 16 * (int64_t)(37 * g * g + 90 * g + 11);
            hw.memory_bytes[1] = 16 * 5000; /* more than the table */
            fs_plan_input_t in = {.num_nodes = N, .p = p, .row_bytes = 16};
            fs_plan_opts_t o;
            fs_plan_defaults(&o);
            o.policy = pols[q];
            fs_plan_t *plan;
            cr_assert_eq(fs_plan_build(&hw, &in, &o, &plan, &err), FS_OK, "%s / %s: %s", hws[h],
                         fs_feat_policy_name(pols[q]), err.msg);
            int64_t held = 0;
            for (int g = 0; g < hw.num_gpus; g++) {
                int64_t cap = hw.memory_bytes[g] / 16 < N ? hw.memory_bytes[g] / 16 : N;
                cr_assert_leq(plan->gpu[g].num_rows, cap, "%s / %s GPU %d", hws[h], fs_feat_policy_name(pols[q]), g);
                held += plan->gpu[g].num_rows;
            }
            cr_assert_gt(held, 0);
            check_routes(&hw, plan);
            fs_plan_free(plan);
        }
    free(p);
}

Test(planfile, baseline_policies_round_trip)
{
    int64_t N = 2000;
    double *p = powerlaw(N, 9);
    char *dir = tu_mkdtemp(), *path = tu_path(dir, "plan.bin");
    fs_error_t err = {0};
    for (fs_feat_policy_t q = FS_FEAT_NAIVE; q <= FS_FEAT_DEGREE; q++) {
        fs_plan_t *plan = baseline_plan("nvlink-pairs", 0, q, N, 150, p, NULL), *back;
        cr_assert_eq(fs_plan_save(plan, path, &err), FS_OK, "%s", err.msg);
        cr_assert_eq(fs_plan_load(path, &back, &err), FS_OK, "%s", err.msg);
        cr_assert_eq(back->policy, q);
        cr_assert_eq(routing_hash(back), routing_hash(plan));
        fs_plan_free(plan), fs_plan_free(back);
    }
    tu_rm_rf(dir);
    free(path), free(dir), free(p);
}

/* ==== replay: measured traffic, and the prediction against it ================ */

static char *rep_dir;
static fs_dataset_t *rep_ds;

static void rep_setup(void) { open_rmat(&rep_dir, &rep_ds, 14, 8, 1); }

static void rep_teardown(void)
{
    fs_dataset_close(rep_ds);
    tu_rm_rf(rep_dir);
    free(rep_dir);
}

TestSuite(replay, .init = rep_setup, .fini = rep_teardown, .timeout = 300);

static fs_csr_ref_t rep_graph(void)
{
    return (fs_csr_ref_t){rep_ds->num_nodes, rep_ds->indptr, rep_ds->indices, rep_ds->index_dtype, NULL};
}

static const fs_idset_t *rep_train(void)
{
    const fs_idset_t *t = fs_dataset_split(rep_ds, "train");
    cr_assert_not_null(t);
    return t;
}

static void small_workload(fs_presample_opts_t *o, uint64_t seed)
{
    fs_presample_defaults(o);
    o->num_hops = 2, o->fanout[0] = 10, o->fanout[1] = 5, o->batch_size = 64, o->seed = seed, o->threads = 2;
}

static fs_plan_t *rep_plan(const char *hw_name, int gpus, fs_feat_policy_t policy, double fraction, const double *p,
                           int with_topology, fs_hardware_t *hw)
{
    fs_error_t err = {0};
    *hw = preset(hw_name);
    if (gpus) fs_hw_first_gpus(hw, gpus, &err);
    fs_hw_set_memory(hw, (int64_t)(fraction * (double)rep_ds->num_nodes * 32), &err);
    fs_plan_input_t in = {.num_nodes = rep_ds->num_nodes, .p = p, .row_bytes = 32};
    if (with_topology) in.indptr = rep_ds->indptr, in.index_bytes = 4;
    fs_plan_opts_t o;
    fs_plan_defaults(&o);
    o.policy = policy;
    o.place_topology = with_topology;
    return build(hw, &in, &o);
}

Test(replay, totals_equal_the_rows_the_sampler_returned)
{
    fs_csr_ref_t g = rep_graph();
    const fs_idset_t *train = rep_train();
    int64_t N = g.num_nodes;
    double *deg = malloc(sizeof *deg * (size_t)N), *counts = malloc(sizeof *counts * (size_t)N);
    fs_error_t err = {0};
    cr_assert_eq(fs_hotness_degree(&g, 2, deg, &err), FS_OK);
    fs_hardware_t hw, hw_topo;
    const fs_plan_t *plans[2] = {rep_plan("nvlink-pairs", 0, FS_FEAT_ALGO1, 0.1, deg, 0, &hw),
                                 rep_plan("nvswitch8", 4, FS_FEAT_AUTO, 1.0, deg, 1, &hw_topo)};
    cr_assert_gt(plans[1]->topo.hot, 0, "some topology on the GPUs");
    fs_replay_opts_t o;
    fs_replay_defaults(&o);
    small_workload(&o.sample, 5);
    o.max_batches = 7;
    o.count_topology = 1;
    fs_replay_t r[2];
    cr_assert_eq(fs_plan_replay(&g, train->ids, train->count, plans, 2, &o, r, counts, &err), FS_OK, "%s", err.msg);

    /* the same batches, sampled and routed the obvious way */
    int64_t *order = malloc(sizeof *order * (size_t)train->count), total = 0, lists = 0;
    int64_t rows[4][FS_HW_MAX_GPUS + 1] = {{0}}, tlists[4][FS_HW_MAX_GPUS + 1] = {{0}};
    int64_t tbytes[4][FS_HW_MAX_GPUS + 1] = {{0}}, tsectors[4][FS_HW_MAX_GPUS + 1] = {{0}};
    double *want = calloc((size_t)N, sizeof *want);
    int8_t *dev[4], *tdev[4];
    for (int i = 0; i < 4; i++) {
        dev[i] = malloc((size_t)N), tdev[i] = malloc((size_t)N);
        cr_assert_eq(fs_plan_route(plans[0], i, dev[i], NULL, &err), FS_OK);
        cr_assert_eq(fs_plan_topo_route(plans[1], i, tdev[i], NULL, &err), FS_OK);
    }
    fs_csr_view_t view;
    fs_csr_view_init(&view, N, g.indptr, g.indices, g.index_dtype, NULL);
    fs_sampler_t *s;
    cr_assert_eq(fs_sampler_create(&s, &err), FS_OK);
    fs_presample_epoch_order(train->ids, train->count, o.sample.seed, 0, order);
    cr_assert_geq(fs_batches_per_epoch(train->count, 64), 28, "the test wants 4 x 7 full batches");
    for (int64_t b = 0; b < 28; b++) {
        fs_sample_req_t req;
        fs_sample_result_t res;
        fs_presample_request(&o.sample, 0, b, &req);
        cr_assert_eq(fs_sample_cpu(s, &view, order + b * 64, 64, &req, &res, NULL, &err), FS_OK, "%s", err.msg);
        total += res.num_nodes;
        for (int h = 0; h < res.num_hops; h++) {
            lists += res.block[h].num_dst;
            for (int64_t d = 0; d < res.block[h].num_dst; d++) {
                int8_t t = tdev[b % 4][res.nodes[d]];
                tlists[b % 4][t < 0 ? FS_COST_HOST : t]++;
                int64_t picked = res.block[h].dst_offsets[d + 1] - res.block[h].dst_offsets[d];
                tbytes[b % 4][t < 0 ? FS_COST_HOST : t] += 4 * picked;
                tsectors[b % 4][t < 0 ? FS_COST_HOST : t] += 1 + picked; /* offsets, then one per random pick */
            }
        }
        for (int64_t k = 0; k < res.num_nodes; k++) {
            int8_t d = dev[b % 4][res.nodes[k]];
            rows[b % 4][d < 0 ? FS_COST_HOST : d]++;
            want[res.nodes[k]] += 1;
        }
    }
    fs_sampler_destroy(s);
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(r[k].total_rows, total);
        int64_t sum = 0, lsum = 0, host_lists = 0;
        for (int i = 0; i < 4; i++) {
            cr_assert_eq(r[k].batches[i], 7);
            for (int src = 0; src <= FS_HW_MAX_GPUS; src++) sum += r[k].rows[i][src], lsum += r[k].lists[i][src];
            host_lists += r[k].lists[i][FS_COST_HOST];
        }
        cr_assert_eq(sum, total, "plan %d: every gathered row counted once", k);
        cr_assert_eq(lsum, lists, "plan %d: one neighbour list per frontier node and hop", k);
        if (k == 0) cr_assert_eq(host_lists, lists, "no topology placed: every list from the host");
        else cr_assert_lt(host_lists, lists, "topology placed: some lists from GPUs");
    }
    for (int i = 0; i < 4; i++) {
        cr_assert_arr_eq(r[0].rows[i], rows[i], sizeof rows[i], "reader %d per-source counts", i);
        cr_assert_arr_eq(r[1].lists[i], tlists[i], sizeof tlists[i], "reader %d per-source lists", i);
        cr_assert_arr_eq(r[1].list_bytes[i], tbytes[i], sizeof tbytes[i], "reader %d per-source list bytes", i);
        cr_assert_arr_eq(r[1].list_sectors[i], tsectors[i], sizeof tsectors[i], "reader %d transactions", i);
    }
    fs_cost_t topo;
    cr_assert_eq(fs_replay_topo_per_batch(&r[1], &hw_topo, &topo, &err), FS_OK, "%s", err.msg);
    for (int i = 0; i < 4; i++) {
        double want_host = (double)tsectors[i][FS_COST_HOST] * FS_COST_SECTOR_BYTES / 7;
        cr_assert_float_eq(topo.host_bytes[i], want_host, 1e-9 * want_host + 1e-9, "reader %d", i);
        double want_s = topo.host_bytes[i] / (hw_topo.host_gbps[i] * 1e9);
        for (int d = 0; d < 4; d++)
            if (d != i) want_s += topo.bytes[i][d] / (hw_topo.link_gbps[i][d] * 1e9);
        cr_assert_float_eq(topo.seconds[i], want_s, 1e-15, "timed like feature bytes");
    }
    cr_assert_arr_eq(counts, want, sizeof *want * (size_t)N);
    for (int i = 0; i < 4; i++) free(dev[i]), free(tdev[i]);
    fs_plan_free((fs_plan_t *)plans[0]), fs_plan_free((fs_plan_t *)plans[1]);
    free(deg), free(counts), free(order), free(want);
}

Test(replay, everything_on_one_gpu_is_local_for_its_reader)
{
    fs_csr_ref_t g = rep_graph();
    const fs_idset_t *train = rep_train();
    double *deg = malloc(sizeof *deg * (size_t)g.num_nodes);
    fs_error_t err = {0};
    cr_assert_eq(fs_hotness_degree(&g, 2, deg, &err), FS_OK);
    fs_hardware_t hw;
    /* NAIVE with room for the whole table: GPU 0 holds every row, the others none */
    const fs_plan_t *plan = rep_plan("nvlink-pairs", 0, FS_FEAT_NAIVE, 1.0, deg, 0, &hw);
    cr_assert_eq(plan->gpu[0].num_rows, g.num_nodes);
    cr_assert_eq(plan->gpu[1].num_rows, 0);
    fs_replay_opts_t o;
    fs_replay_defaults(&o);
    small_workload(&o.sample, 11);
    o.max_batches = 3;
    fs_replay_t r;
    fs_cost_t m;
    cr_assert_eq(fs_plan_replay(&g, train->ids, train->count, &plan, 1, &o, &r, NULL, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_replay_per_batch(&r, &hw, &m, &err), FS_OK);
    double local, peer, host;
    fs_cost_fractions(&m, 0, &local, &peer, &host);
    cr_assert(local == 1 && peer == 0 && host == 0, "reader 0: %g %g %g", local, peer, host);
    fs_cost_fractions(&m, 1, &local, &peer, &host);
    cr_assert(local == 0 && peer == 1 && host == 0, "reader 1 reads its NVLink peer: %g %g %g", local, peer, host);
    for (int i = 2; i < 4; i++) {
        fs_cost_fractions(&m, i, &local, &peer, &host);
        cr_assert(host == 1, "reader %d has no link to GPU 0: %g %g %g", i, local, peer, host);
    }
    cr_assert_gt(m.local_bytes[0], 0);
    cr_assert_float_eq(m.local_bytes[0], (double)r.rows[0][0] * 32 / 3, 1e-9 * m.local_bytes[0]);
    cr_assert_float_eq(m.seconds[1], m.peer_bytes[1] / (hw.link_gbps[1][0] * 1e9), 1e-15);
    fs_plan_free((fs_plan_t *)plan);
    free(deg);
}

/* The cost model with a replay's own counts as the workload is the replay:
 * Rule 1 routes every reader alike, so totals agree exactly. */
Test(replay, own_counts_predict_exactly)
{
    fs_csr_ref_t g = rep_graph();
    const fs_idset_t *train = rep_train();
    int64_t N = g.num_nodes;
    double *deg = malloc(sizeof *deg * (size_t)N), *counts = malloc(sizeof *counts * (size_t)N);
    fs_error_t err = {0};
    cr_assert_eq(fs_hotness_degree(&g, 2, deg, &err), FS_OK);
    fs_hardware_t hw;
    const fs_plan_t *plan = rep_plan("pcie4", 0, FS_FEAT_RULE1, 0.15, deg, 0, &hw);
    fs_replay_opts_t o;
    fs_replay_defaults(&o);
    small_workload(&o.sample, 13);
    fs_replay_t r;
    cr_assert_eq(fs_plan_replay(&g, train->ids, train->count, &plan, 1, &o, &r, counts, &err), FS_OK, "%s", err.msg);
    double batches = 0, measured_host = 0, measured_local = 0;
    for (int i = 0; i < 4; i++) {
        batches += (double)r.batches[i];
        measured_host += (double)r.rows[i][FS_COST_HOST] * 32;
        measured_local += (double)r.rows[i][i] * 32;
    }
    cr_assert_eq(batches, (double)fs_batches_per_epoch(train->count, 64), "no --max-batches: the whole epoch");
    cr_assert_eq(fs_hotness_per_batch(counts, N, batches, counts, &err), FS_OK);
    fs_cost_t c;
    cr_assert_eq(fs_plan_predict(plan, &hw, counts, NULL, &c, &err), FS_OK, "%s", err.msg);
    cr_assert_float_eq(c.host_bytes[0] * batches, measured_host, 1e-9 * measured_host);
    cr_assert_float_eq(c.local_bytes[0] * batches, measured_local, 1e-9 * measured_local);
    cr_assert_eq(fs_hotness_per_batch(counts, N, 0, counts, &err), FS_ERR_INVALID_ARGUMENT);
    fs_plan_free((fs_plan_t *)plan);
    free(deg), free(counts);
}

/* The acceptance check in small: a plan from one sample of the workload,
 * the prediction from a second, measured on a third. */
Test(replay, predicted_host_bytes_match_measured)
{
    fs_csr_ref_t g = rep_graph();
    const fs_idset_t *train = rep_train();
    int64_t N = g.num_nodes;
    double *hot = malloc(sizeof *hot * (size_t)N), *work = malloc(sizeof *work * (size_t)N);
    fs_error_t err = {0};
    fs_presample_opts_t w;
    small_workload(&w, 1);
    w.epochs = 2;
    cr_assert_eq(fs_hotness_presample(&g, train->ids, train->count, &w, hot, &err), FS_OK, "%s", err.msg);
    small_workload(&w, 3);
    w.epochs = 2;
    cr_assert_eq(fs_hotness_presample(&g, train->ids, train->count, &w, work, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_hotness_per_batch(work, N, 2.0 * (double)fs_batches_per_epoch(train->count, 64), work, &err),
                 FS_OK);
    static const char *const hws[2] = {"nvlink-pairs", "nvswitch8"};
    for (int t = 0; t < 2; t++) {
        fs_hardware_t hw;
        const fs_plan_t *plan = rep_plan(hws[t], 4, FS_FEAT_ALGO1, 0.1, hot, 0, &hw);
        fs_cost_t pred, meas;
        cr_assert_eq(fs_plan_predict(plan, &hw, work, NULL, &pred, &err), FS_OK);
        fs_replay_opts_t o;
        fs_replay_defaults(&o);
        small_workload(&o.sample, 7);
        fs_replay_t r;
        cr_assert_eq(fs_plan_replay(&g, train->ids, train->count, &plan, 1, &o, &r, NULL, &err), FS_OK, "%s", err.msg);
        cr_assert_eq(fs_replay_per_batch(&r, &hw, &meas, &err), FS_OK);
        double ph = 0, mh = 0, pl, ml;
        for (int i = 0; i < 4; i++) ph += pred.host_bytes[i], mh += meas.host_bytes[i];
        cr_assert_gt(mh, 0);
        cr_assert(fabs(ph / mh - 1) < 0.05, "%s: predicted host %.0f B/batch, measured %.0f (%+.1f%%)", hws[t], ph / 4,
                  mh / 4, 100 * (ph / mh - 1));
        fs_cost_fractions(&pred, -1, &pl, NULL, NULL);
        fs_cost_fractions(&meas, -1, &ml, NULL, NULL);
        cr_assert(fabs(pl - ml) < 0.03, "%s: local fraction predicted %.3f, measured %.3f", hws[t], pl, ml);
        fs_plan_free((fs_plan_t *)plan);
    }
    free(hot), free(work);
}

Test(replay, bad_input_is_named)
{
    fs_csr_ref_t g = rep_graph();
    const fs_idset_t *train = rep_train();
    double *deg = malloc(sizeof *deg * (size_t)g.num_nodes);
    fs_error_t err = {0};
    cr_assert_eq(fs_hotness_degree(&g, 2, deg, &err), FS_OK);
    fs_hardware_t hw;
    const fs_plan_t *plan = rep_plan("nvlink-pairs", 0, FS_FEAT_ALGO1, 0.1, deg, 0, &hw);
    fs_replay_opts_t o;
    fs_replay_defaults(&o);
    small_workload(&o.sample, 5);
    fs_replay_t r = {.num_gpus = 4};
    cr_assert_eq(fs_plan_replay(&g, train->ids, train->count, &plan, 0, &o, &r, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "no plan"), "%s", err.msg);
    o.sample.batch_size = 0;
    cr_assert_eq(fs_plan_replay(&g, train->ids, train->count, &plan, 1, &o, &r, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "batch size"), "%s", err.msg);
    small_workload(&o.sample, 5);
    o.sample.fanout[1] = 0;
    cr_assert_eq(fs_plan_replay(&g, train->ids, train->count, &plan, 1, &o, &r, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "fanout 0 at hop 1"), "%s", err.msg);
    small_workload(&o.sample, 5);
    int64_t bad_train[2] = {3, g.num_nodes};
    cr_assert_eq(fs_plan_replay(&g, bad_train, 2, &plan, 1, &o, &r, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "train[1]"), "%s", err.msg);
    double *p100 = powerlaw(100, 1);
    const fs_plan_t *two[2] = {plan, baseline_plan("nvlink-pairs", 0, FS_FEAT_NAIVE, 100, 10, p100, NULL)};
    cr_assert_eq(fs_plan_replay(&g, train->ids, train->count, two, 2, &o, &r, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "plan 1 is for 100 nodes"), "%s", err.msg);
    fs_plan_free((fs_plan_t *)two[1]);
    free(p100);
    fs_hardware_t eight = preset("nvswitch8");
    fs_cost_t c;
    cr_assert_eq(fs_replay_per_batch(&r, &eight, &c, &err), FS_ERR_INVALID_ARGUMENT);
    fs_plan_free((fs_plan_t *)plan);
    free(deg);
}

/* ==== server/place.c: hotness choice and the prediction the server shows ==== */

Test(replay, order_auto_keeps_the_plan_the_cost_model_times_faster)
{
    fs_presample_opts_t w;
    small_workload(&w, 1);
    fs_place_opts_t o = {.topology = "nvlink-pairs", .gpu_budget = 0.05, .order = FS_PLACE_ORDER_AUTO, .workload = &w,
                         .presample_batches = 16, .threads = 2};
    fs_error_t err = {0};
    fs_hardware_t hw;
    fs_plan_t *chosen, *each[2];
    fs_place_choice_t choice;
    cr_assert_eq(fs_place_plan(rep_ds, &o, &hw, &chosen, &choice, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(choice.decided, 1);
    cr_assert(choice.seconds[0] > 0 && choice.seconds[1] > 0, "%g %g", choice.seconds[0], choice.seconds[1]);
    cr_assert_neq(choice.seconds[0], choice.seconds[1], "the two orders split the memory differently here");
    cr_assert_eq(chosen->budget.feature_first, choice.seconds[1] < choice.seconds[0], "the faster one is kept");
    for (int f = 0; f < 2; f++) {
        o.order = f ? FS_PLACE_FEATURE_FIRST : FS_PLACE_TOPOLOGY_FIRST;
        cr_assert_eq(fs_place_plan(rep_ds, &o, &hw, &each[f], &choice, &err), FS_OK, "%s", err.msg);
        cr_assert_eq(choice.decided, 0, "a fixed order decides nothing");
        cr_assert_eq(each[f]->budget.feature_first, f);
    }
    cr_assert_gt(each[0]->topo.hot, each[1]->topo.hot, "topology first places more neighbour lists");
    cr_assert_eq(routing_hash(chosen), routing_hash(each[chosen->budget.feature_first]), "the same plan as asked directly");
    fs_plan_free(chosen), fs_plan_free(each[0]), fs_plan_free(each[1]);

    /* the reserve comes off every GPU's memory; the names parse back */
    o.order = FS_PLACE_FEATURE_FIRST, o.reserve_bytes = 1024;
    cr_assert_eq(fs_place_plan(rep_ds, &o, &hw, &chosen, NULL, &err), FS_OK, "%s", err.msg);
    for (int g = 0; g < chosen->num_gpus; g++)
        cr_assert_eq(chosen->budget.avail_bytes[g], hw.memory_bytes[g] - 1024);
    fs_plan_free(chosen);
    o.reserve_bytes = -1;
    cr_assert_eq(fs_place_plan(rep_ds, &o, &hw, &chosen, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "reserve"), "%s", err.msg);
    for (int k = 0; k < FS_PLACE_ORDER_COUNT_; k++) {
        fs_place_order_t back;
        cr_assert_eq(fs_place_order_parse(fs_place_order_name((fs_place_order_t)k), &back, &err), FS_OK);
        cr_assert_eq(back, (fs_place_order_t)k);
    }
    fs_place_order_t back = FS_PLACE_FEATURE_FIRST;
    cr_assert_eq(fs_place_order_parse("sideways", &back, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "'sideways'") && strstr(err.msg, "auto"), "%s", err.msg);
    cr_assert_eq(back, FS_PLACE_FEATURE_FIRST, "untouched on error");
    static const struct {
        const char *text;
        int64_t bytes;
    } sizes[] = {{"0", 0}, {"4096", 4096}, {"512M", 512LL << 20}, {"2G", 2LL << 30}, {"1.5K", 1536}, {"1T", 1LL << 40}};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        int64_t got = -1;
        cr_assert_eq(fs_place_size_parse(sizes[i].text, "--reserve", &got, &err), FS_OK, "%s", sizes[i].text);
        cr_assert_eq(got, sizes[i].bytes, "%s", sizes[i].text);
    }
    static const char *const bad[] = {"", "G", "-1", "2X", "2GB", "1e30", "nan", "12 M"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int64_t got = 7;
        cr_assert_eq(fs_place_size_parse(bad[i], "--reserve", &got, &err), FS_ERR_INVALID_ARGUMENT, "'%s'", bad[i]);
        cr_assert(strstr(err.msg, "--reserve") && strstr(err.msg, bad[i]), "%s", err.msg);
        cr_assert_eq(got, 7, "untouched on error");
    }
}

Test(replay, place_predict_gives_meaningful_fractions)
{
    fs_presample_opts_t w;
    small_workload(&w, 1);
    fs_place_opts_t o = {.topology = "nvlink-pairs", .gpu_budget = 0.1, .order = FS_PLACE_FEATURE_FIRST, .workload = &w,
                         .presample_batches = 40, .threads = 2};
    fs_error_t err = {0};
    fs_hardware_t hw;
    fs_plan_t *plan;
    for (int h = 0; h < FS_PLACE_HOT_COUNT_; h++) {
        o.hotness = (fs_place_hotness_t)h;
        cr_assert_eq(fs_place_plan(rep_ds, &o, &hw, &plan, NULL, &err), FS_OK, "%s: %s", fs_place_hotness_name(o.hotness),
                     err.msg);
        fs_cost_t c;
        cr_assert_eq(fs_place_predict(rep_ds, plan, &hw, &o, &c, &err), FS_OK, "%s", err.msg);
        double l, q, x;
        fs_cost_fractions(&c, -1, &l, &q, &x);
        cr_assert_float_eq(l + q + x, 1.0, 1e-12);
        cr_assert(l > 0 && x > 0 && x < 1, "%s: local %.3f peer %.3f host %.3f", fs_place_hotness_name(o.hotness), l,
                  q, x);
        fs_plan_free(plan);
    }
    /* a budget of the whole table on GPUs without peers, features first: every read is local */
    o.topology = "pcie4", o.gpu_budget = 1.0, o.order = FS_PLACE_FEATURE_FIRST, o.hotness = FS_PLACE_HOT_DEGREE;
    cr_assert_eq(fs_place_plan(rep_ds, &o, &hw, &plan, NULL, &err), FS_OK, "%s", err.msg);
    fs_cost_t c;
    cr_assert_eq(fs_place_predict(rep_ds, plan, &hw, &o, &c, &err), FS_OK, "%s", err.msg);
    double l;
    fs_cost_fractions(&c, 2, &l, NULL, NULL);
    cr_assert_float_eq(l, 1.0, 1e-12);
    cr_assert_gt(c.local_bytes[2], 0);
    fs_plan_free(plan);
    /* 4 of nvswitch8's GPUs, and the errors name the problem */
    o.topology = "nvswitch8", o.num_gpus = 4, o.gpu_budget = 0.2;
    cr_assert_eq(fs_place_plan(rep_ds, &o, &hw, &plan, NULL, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(plan->num_gpus, 4);
    fs_plan_free(plan);
    o.num_gpus = 9;
    cr_assert_eq(fs_place_plan(rep_ds, &o, &hw, &plan, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "9 GPUs"), "%s", err.msg);
    o.num_gpus = 0, o.gpu_budget = 1.5;
    cr_assert_eq(fs_place_plan(rep_ds, &o, &hw, &plan, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "--gpu-budget"), "%s", err.msg);
    fs_place_hotness_t h;
    cr_assert_eq(fs_place_hotness_parse("pagerank", &h, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "'pagerank'") && strstr(err.msg, "presample"), "%s", err.msg);
    cr_assert_eq(fs_place_hotness_parse("reach", &h, &err), FS_OK);
    cr_assert_eq(h, FS_PLACE_HOT_REACH);
}
