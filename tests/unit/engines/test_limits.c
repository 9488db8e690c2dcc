/* test_limits.c — limits first (docs/serving.md "Limits", kernels/fs_limits.h): the
 * worst case computed from a request alone bounds every real result (on
 * Cora and on a skewed R-MAT, every sampling mode we serve, fanout -1,
 * repeated seeds, edge ids), and the engine refuses a request whose worst
 * case is over max_response_bytes before the sampler reads a single
 * neighbour list (the store's counters stay at zero), with the limit named
 * in every refusal. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "engine.h"
#include "fs_limits.h"
#include "fs_sample.h"
#include "gen.h"
#include "store.h"
#include "test_util.h"

static char *dir;
static fs_dataset_t *cora, *rmat;

static void setup(void)
{
    dir = tu_mkdtemp();
    cora = tu_import_cora(dir);
    fs_rmat_opts_t g;
    fs_rmat_defaults(&g);
    g.scale = 11, g.edge_factor = 8, g.dim = 4; /* hubs: frontiers grow fast */
    rmat = tu_gen_rmat(dir, "rmat", &g);
}

static void teardown(void)
{
    fs_dataset_close(cora);
    fs_dataset_close(rmat);
    tu_rm_rf(dir);
    free(dir);
}

TestSuite(limits, .init = setup, .fini = teardown, .timeout = 120);

static fs_limits_t limits_of(const fs_dataset_t *ds)
{
    fs_limits_t l;
    fs_limits_default(&l);
    l.num_nodes = ds->num_nodes, l.num_edges = ds->num_edges;
    return l;
}

static int64_t *seeds_of(const fs_dataset_t *ds, int64_t n, uint64_t salt)
{
    int64_t *s = malloc((size_t)n * sizeof *s);
    for (int64_t i = 0; i < n; i++) s[i] = (int64_t)((i * 2654435761u + salt * 97) % (uint64_t)ds->num_nodes);
    return s;
}

Test(limits, worst_case_bounds_every_result)
{
    static const int fanouts[][3] = {{5, 0, 0}, {15, 10, 0}, {25, 10, 5}, {-1, 0, 0}, {-1, 3, 0}, {2, -1, 0},
                                     {40, 40, 0}, {-1, -1, -1}};
    static const fs_sample_mode_t modes[] = {FS_SAMPLE_UNIFORM, FS_SAMPLE_UNIFORM_REPLACE};
    const fs_dataset_t *sets[] = {cora, rmat};
    fs_sampler_t *s;
    fs_error_t err = {0};
    cr_assert_eq(fs_sampler_create(&s, &err), FS_OK);
    int checked = 0;
    for (int d = 0; d < 2; d++) {
        fs_csr_view_t g;
        fs_csr_view_init(&g, sets[d]->num_nodes, sets[d]->indptr, sets[d]->indices, sets[d]->index_dtype, NULL);
        fs_limits_t l = limits_of(sets[d]);
        for (size_t f = 0; f < sizeof fanouts / sizeof *fanouts; f++)
            for (size_t m = 0; m < 2; m++)
                for (int64_t n = 1; n <= 1024; n *= 8) {
                    fs_sample_req_t req = SAMPLE_REQ(.seed = (uint64_t)n, .want_edge_ids = (int)(n & 8));
                    for (int h = 0; h < 3 && fanouts[f][h]; h++) {
                        req.fanout[h] = fanouts[f][h];
                        req.mode[h] = modes[m];
                        req.num_hops = h + 1;
                    }
                    int64_t *seeds = seeds_of(sets[d], n, f); /* repeats some: n can exceed distinct picks */
                    fs_sample_result_t res;
                    cr_assert_eq(fs_sample_cpu(s, &g, seeds, n, &req, &res, NULL, &err), FS_OK, "%s", err.msg);
                    size_t row_bytes = d ? 16 : 5732;
                    double actual = (double)fs_sample_result_bytes(&res) + (double)res.num_nodes * (double)row_bytes;
                    double worst = fs_limits_worst_bytes(&l, n, &req, row_bytes, NULL);
                    cr_assert_leq(actual, worst, "dataset %d, fanouts %zu, mode %zu, %lld seeds: %.0f > worst %.0f", d,
                                  f, m, (long long)n, actual, worst);
                    checked++;
                    free(seeds);
                }
    }
    cr_log_info("RESULT worst case >= actual bytes in all %d sampled requests", checked);
    fs_sampler_destroy(s);
}

Test(limits, engine_refuses_before_any_work)
{
    fs_error_t err = {0};
    fs_store_t *store;
    fs_engine_t *e;
    fs_sampler_t *s;
    cr_assert_eq(fs_store_create(rmat, &store, &err), FS_OK, "%s", err.msg);
    fs_limits_t l;
    fs_limits_default(&l);
    l.max_response_bytes = 100000;
    cr_assert_eq(fs_engine_create(rmat, store, &l, &e, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_sampler_create(&s, &err), FS_OK);
    int64_t *seeds = seeds_of(rmat, 64, 1);
    fs_sample_req_t big = SAMPLE_REQ(.num_hops = 2, .fanout = {10, 10});
    fs_sample_req_t small = SAMPLE_REQ(.num_hops = 1, .fanout = {2});
    fs_sample_result_t res;
    cr_assert_eq(fs_engine_sample(e, s, seeds, 64, &big, NULL, FS_DTYPE_INVALID, &res, &err), FS_ERR_RESOURCE);
    cr_assert(strstr(err.msg, "64 seeds with these fanouts could need a response of") &&
                  strstr(err.msg, "the limit is 100000 (max_response_bytes)"), "%s", err.msg);
    fs_gather_counters_t c = {0};
    fs_store_topology_counters(store, FS_READER_CPU, &c);
    for (int k = 0; k < FS_MAX_TIERS; k++) cr_assert_eq(c.rows[k], 0, "the sampler read lists of tier %d", k);
    cr_assert_eq(fs_engine_sample(e, s, seeds, 4, &small, NULL, FS_DTYPE_INVALID, &res, &err), FS_OK, "%s", err.msg);
    fs_store_topology_counters(store, FS_READER_CPU, &c);
    cr_assert_gt(c.rows[0], 0, "the counters do count the sampler's work");
    free(seeds);
    fs_sampler_destroy(s);
    fs_engine_destroy(e);
    fs_store_destroy(store);
}

Test(limits, each_refusal_names_its_limit)
{
    fs_limits_t l = limits_of(cora);
    l.max_ids = 10, l.max_fanout_product = 100, l.max_response_bytes = 4096;
    fs_error_t err = {0};
    fs_sample_req_t req = SAMPLE_REQ(.num_hops = 2, .fanout = {20, 10});
    cr_assert_eq(fs_limits_check(&l, 11, NULL, 4, &err), FS_ERR_RESOURCE);
    cr_assert_str_eq(err.msg, "11 ids in one request; the limit is 10 (max_ids)");
    cr_assert_eq(fs_limits_check(&l, 5, &req, 0, &err), FS_ERR_RESOURCE);
    cr_assert_str_eq(err.msg, "product of fanouts 200 exceeds the limit 100 (max_fanout_product)");
    cr_assert_eq(fs_limits_check(&l, 10, NULL, 4096, &err), FS_ERR_RESOURCE);
    cr_assert_str_eq(err.msg, "response of 40960 bytes; the limit is 4096 (max_response_bytes)");
    req = SAMPLE_REQ(.num_hops = 9, .fanout = {1});
    cr_assert_eq(fs_limits_check(&l, 5, &req, 0, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_str_eq(err.msg, "9 hops requested, must be 1..8");
    /* a worst case that fits the graph's size is served, the same request with features is not */
    req = SAMPLE_REQ(.num_hops = 1, .fanout = {2});
    cr_assert_eq(fs_limits_check(&l, 1, &req, 0, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_limits_check(&l, 1, &req, 5732, &err), FS_ERR_RESOURCE);
    cr_assert(strstr(err.msg, "(worst case, features included); the limit is 4096 (max_response_bytes)"), "%s",
              err.msg);
    /* fanout -1 is bounded by the graph: all of Cora's edges, not max_fanout_product rows per seed */
    req = SAMPLE_REQ(.num_hops = 1, .fanout = {FS_FANOUT_ALL});
    double all = fs_limits_worst_bytes(&l, 1, &req, 0, NULL);
    cr_assert_leq(all, 8 + 16 + 16.0 * (double)cora->num_edges + 8.0 * (double)cora->num_nodes, "%.0f", all);
    fs_limits_t unknown = l;
    unknown.num_nodes = unknown.num_edges = 0; /* without the graph's size, -1 has no bound */
    cr_assert_gt(fs_limits_worst_bytes(&unknown, 1, &req, 0, NULL), 1e100);
    /* past 2^31 nodes the sampler's 32-bit local ids would overflow: refused up front, whatever the byte limit */
    unknown.max_response_bytes = INT64_MAX, unknown.max_fanout_product = INT64_MAX, unknown.max_ids = INT64_MAX;
    req = SAMPLE_REQ(.num_hops = 2, .fanout = {100000, 100000});
    cr_assert_eq(fs_limits_check(&unknown, 1000, &req, 0, &err), FS_ERR_RESOURCE);
    cr_assert(strstr(err.msg, "over the 2^31 nodes one sample may have"), "%s", err.msg);
}
