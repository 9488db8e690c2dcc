/* test_local_locality.c — unix:// clients reading through a placement:
 * a trainer on gpu:0 reads rows and neighbour lists from its device's tier
 * (the CPU reader from the files; unknown devices refused); locality-aware
 * sampling through a served pcie4 plan (s = 1 bit-identical to plain and
 * without weights; s = 4 with finite weights >= 1 in the slot, 1 for rows
 * taken whole, identical on repeat, more rows from the GPU and fewer from
 * the host; FS_LOCALITY_AUTO following fs_report_load_ratio), GPUs with the
 * same rows sharing one copy of the sets, the documented errors; and
 * Algorithm 2's sequence through fs_report_load_ratio. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "featstore/admin.h"
#include "featstore/client.h"
#include "fs_local.h"
#include "local_fixture.h"
#include "place.h"
#include "place_las.h"
#include "test_util.h"

TestSuite(local, .init = setup, .fini = teardown, .timeout = 600);
/* Stops the server and drops its store; the dataset stays open. */
static void stop_server_keep_dataset(void)
{
    fs_local_server_stop(server);
    fs_metrics_destroy(metrics);
    fs_engine_destroy(engine);
    fs_store_destroy(store);
}

/* Replaces the default server with one whose store has a placement: two
 * simulated GPUs holding feature rows and neighbour lists. */
static int place_and_restart(void)
{
    stop_server_keep_dataset();
    fs_error_t err = {0};
    cr_assert_eq(fs_store_create(ds, &store, &err), FS_OK);
    int gpu0, gpu1;
    cr_assert_eq(fs_store_add_tier(store, FS_TIER_SIM_DEVICE, 0, 0, &gpu0, &err), FS_OK);
    cr_assert_eq(fs_store_add_tier(store, FS_TIER_SIM_DEVICE, 1, 0, &gpu1, &err), FS_OK);
    int64_t n = ds->num_nodes / 2, *lo = malloc(sizeof *lo * (size_t)n), *hi = malloc(sizeof *hi * (size_t)n);
    for (int64_t i = 0; i < n; i++) lo[i] = i, hi[i] = n + i;
    uint32_t both = FS_READER_BIT(0) | FS_READER_BIT(1);
    cr_assert_eq(fs_store_place_rows(store, "feat", gpu0, lo, n, both, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_store_place_rows(store, "feat", gpu1, hi, n, both, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_store_place_topology(store, gpu0, lo, n, FS_READER_BIT(0), &err), FS_OK, "%s", err.msg);
    free(lo), free(hi);
    cr_assert_eq(fs_engine_create(ds, store, NULL, &engine, &err), FS_OK);
    metrics = fs_metrics_create(ds, store);
    cr_assert_eq(serve_on(sock, FS_LOCAL_MINOR, &err), FS_OK, "%s", err.msg);
    return gpu0;
}

Test(local, clients_read_through_the_placement_of_their_device)
{
    int gpu0 = place_and_restart();
    fs_connect_opts_t o = {.struct_size = sizeof(fs_connect_opts_t), .device = "gpu:0"};
    fs_client_t *c;
    cr_assert_eq(fs_connect(uri, &o, &c), FS_OK, "%s", fs_client_errstr(c));
    int64_t seeds[512];
    seeds_for(seeds, 512, 5);
    fs_sample_req_t req = req3(5);
    fs_batch_t *b;
    cr_assert_eq(fs_sample_gather(c, seeds, 512, &req, "feat", FS_DTYPE_F32, &b), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_not(differs(b, seeds, 512, &req), "reading through simulated GPUs changes nothing");
    int64_t rows = b->rows;
    fs_batch_free(b);
    char *text = NULL, want[160];
    snprintf(want, sizeof want, "featstore_feature_rows_read_total{reader=\"local\",tier=\"%d\",kind=\"sim_device\"", gpu0);
    for (int i = 0; i < 100; i++) {
        fs_stats_free(text);
        cr_assert_eq(fs_stats(c, &text), FS_OK);
        if (strstr(text, "featstore_requests_total{method=\"SampleGather\",transport=\"unix\"} 1\n")) break;
        usleep(10000);
    }
    char *line = strstr(text, want);
    cr_assert_not_null(line, "%s", text);
    long long from_gpu0 = atoll(strchr(line, '}') + 2);
    cr_assert(from_gpu0 > 0 && from_gpu0 < rows, "some rows, not all, came from tier %d: %lld of %lld", gpu0, from_gpu0,
              (long long)rows);
    snprintf(want, sizeof want, "featstore_topology_lists_read_total{reader=\"local\",tier=\"%d\"", gpu0);
    line = strstr(text, want);
    cr_assert(line && atoll(strchr(line, '}') + 2) > 0, "neighbour lists were read from tier %d", gpu0);
    fs_stats_free(text);
    fs_close(c);
    o.device = "cpu"; /* the CPU reader was not placed: everything from the files */
    cr_assert_eq(fs_connect(uri, &o, &c), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(fs_sample_gather(c, seeds, 512, &req, "feat", FS_DTYPE_F32, &b), FS_OK);
    cr_assert_not(differs(b, seeds, 512, &req));
    fs_batch_free(b);
    fs_close(c);
    o.device = "tpu:1";
    cr_assert_eq(fs_connect(uri, &o, &c), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(fs_client_errstr(c), "gpu:N"));
    fs_close(c);
}

/* ---- locality-aware sampling ------------------------------------------------------ */

/* Replaces the default server with one serving a real plan, as `featstore
 * serve --topology pcie4 --gpu-budget 0.1 --feature-first` does: 4 GPUs
 * without peers (Rule 1: each holds the top 10% rows by degree) and the
 * preferred sets of every planned GPU (place_las.h). */
static void place_plan_and_restart(void)
{
    stop_server_keep_dataset();
    fs_error_t err = {0};
    cr_assert_eq(fs_store_create(ds, &store, &err), FS_OK);
    fs_place_opts_t po = {.topology = "pcie4", .gpu_budget = 0.1, .order = FS_PLACE_FEATURE_FIRST, .threads = 1};
    fs_hardware_t hw;
    fs_plan_t *plan;
    cr_assert_eq(fs_place_plan(ds, &po, &hw, &plan, NULL, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_place_apply(store, ds, plan, NULL, FS_TIER_SIM_DEVICE, &err), FS_OK, "%s", err.msg);
    /* K scaled to the graph: the default 8192 is more than its 4096 nodes,
     * which would make every node preferred at levels 2 and 3 */
    fs_las_opts_t lo = {.num_levels = FS_PLACE_LAS_LEVELS, .k = ds->num_nodes / 16, .threads = 2};
    cr_assert_eq(fs_place_locality(store, ds, plan, &lo, NULL, &err), FS_OK, "%s", err.msg);
    fs_plan_free(plan);
    cr_assert_eq(fs_engine_create(ds, store, NULL, &engine, &err), FS_OK);
    metrics = fs_metrics_create(ds, store);
    cr_assert_eq(serve_on(sock, FS_LOCAL_MINOR, &err), FS_OK, "%s", err.msg);
}

/* Two batches hold the same sample (edge ids and weights included, present
 * on both or neither) and the same feature rows. */
static void assert_same_batch(const fs_batch_t *x, const fs_batch_t *y)
{
    cr_assert_eq(x->num_hops, y->num_hops);
    cr_assert_eq(x->num_nodes, y->num_nodes);
    cr_assert(memcmp(x->nodes, y->nodes, 8 * (size_t)x->num_nodes) == 0, "nodes differ");
    cr_assert(memcmp(x->seed_local, y->seed_local, 8 * (size_t)x->num_seeds) == 0, "seed_local differs");
    for (int h = 0; h < x->num_hops; h++) {
        const fs_block_t *a = &x->blocks[h], *b = &y->blocks[h];
        size_t e = (size_t)a->num_edges;
        cr_assert(a->num_dst == b->num_dst && a->num_src == b->num_src && a->num_edges == b->num_edges, "hop %d", h);
        cr_assert(memcmp(a->dst_offsets, b->dst_offsets, 8 * (size_t)(a->num_dst + 1)) == 0, "hop %d offsets", h);
        cr_assert(memcmp(a->edge_dst, b->edge_dst, 8 * e) == 0 && memcmp(a->edge_src, b->edge_src, 8 * e) == 0,
                  "hop %d edges", h);
        cr_assert_eq(!a->edge_ids, !b->edge_ids, "hop %d: edge ids on one side only", h);
        cr_assert(!a->edge_ids || memcmp(a->edge_ids, b->edge_ids, 8 * e) == 0, "hop %d edge ids", h);
        cr_assert_eq(!a->edge_weights, !b->edge_weights, "hop %d: edge weights on one side only", h);
        cr_assert(!a->edge_weights || memcmp(a->edge_weights, b->edge_weights, 4 * e) == 0, "hop %d weights", h);
    }
    cr_assert_eq(x->rows, y->rows);
    cr_assert(memcmp(x->features, y->features, (size_t)x->rows * (size_t)x->dim * 4) == 0, "features differ");
}

/* Checks a boosted batch's weights: one per edge, inside the batch's slot,
 * finite and >= 1 (1/q with q <= 1); a row with deg <= fanout is taken
 * whole with weight 1. Its features are the rows of its nodes. */
static void check_boosted(const fs_batch_t *b, const fs_sample_req_t *req)
{
    const void *base;
    size_t len;
    cr_assert_eq(fs_batch_region(b, &base, &len), FS_OK);
    for (int h = 0; h < b->num_hops; h++) {
        const fs_block_t *k = &b->blocks[h];
        cr_assert_not_null(k->edge_weights, "hop %d has no weights", h);
        cr_assert((const char *)k->edge_weights >= (const char *)base &&
                  (const char *)(k->edge_weights + k->num_edges) <= (const char *)base + len,
                  "hop %d's weights are outside the batch's slot", h);
        for (int64_t e = 0; e < k->num_edges; e++)
            cr_assert(isfinite(k->edge_weights[e]) && k->edge_weights[e] >= 1, "hop %d edge %lld: weight %g", h,
                      (long long)e, (double)k->edge_weights[e]);
        for (int64_t d = 0; d < k->num_dst; d++) {
            int64_t v = b->nodes[d], deg = ds->indptr[v + 1] - ds->indptr[v];
            if (deg > req->fanout[h]) continue;
            cr_assert_eq(k->dst_offsets[d + 1] - k->dst_offsets[d], deg, "hop %d: a row of degree %lld <= fanout "
                         "is taken whole", h, (long long)deg);
            for (int64_t e = k->dst_offsets[d]; e < k->dst_offsets[d + 1]; e++)
                cr_assert_eq(k->edge_weights[e], 1.0f, "hop %d: a whole row's weights are 1", h);
        }
    }
    const fs_table_t *t = &ds->tables[0];
    for (int64_t i = 0; i < b->num_nodes; i++)
        cr_assert(memcmp((const char *)b->features + i * t->row_bytes,
                         (const char *)t->data + b->nodes[i] * t->row_bytes, t->row_bytes) == 0, "row of node %lld",
                  (long long)b->nodes[i]);
}

static int64_t count_in(const uint64_t *bitmap, const fs_batch_t *b)
{
    int64_t m = 0;
    for (int64_t i = 0; i < b->num_nodes; i++) m += fs_las_bit(bitmap, b->nodes[i]);
    return m;
}

Test(local, locality_aware_sampling_reads_more_rows_from_the_readers_gpu)
{
    place_plan_and_restart();
    /* the 4 GPUs hold the same rows (Rule 1), so they share one copy of the sets */
    fs_locality_t las;
    fs_store_locality(store, 0, 1, &las);
    cr_assert_eq(las.num_levels, FS_PLACE_LAS_LEVELS);
    cr_assert_geq(fs_store_locality_fd(store, 0, 1, 0), 0);
    cr_assert_eq(fs_store_locality_fd(store, 0, 1, 0), fs_store_locality_fd(store, 3, 1, 0));
    cr_assert_eq(fs_store_locality_fd(store, FS_READER_CPU, 1, 0), -1, "the CPU reader has no GPU rows");
    const uint64_t *in_b = las.pref[0]; /* B: the rows gpu:0 reads from GPU memory */

    fs_connect_opts_t o = {.struct_size = sizeof(fs_connect_opts_t), .device = "gpu:0"};
    fs_client_t *c;
    cr_assert_eq(fs_connect(uri, &o, &c), FS_OK, "%s", fs_client_errstr(c));
    int64_t seeds[256];
    int64_t rows[2] = {0}, gpu_rows[2] = {0};
    for (int i = 0; i < 8; i++) {
        seeds_for(seeds, 256, 100 + i);
        fs_sample_req_t plain = SAMPLE_REQ(.num_hops = 3, .fanout = {10, 5, 3}, .seed = (uint64_t)i + 1, .want_edge_ids = 1);
        fs_sample_req_t one = plain, four = plain;
        one.locality = 1, four.locality = 4;
        fs_batch_t *p, *q, *f, *g;
        cr_assert_eq(fs_sample_gather(c, seeds, 256, &plain, "feat", FS_DTYPE_F32, &p), FS_OK, "%s",
                     fs_client_errstr(c));
        cr_assert_not(differs(p, seeds, 256, &plain));
        /* s = 1 is the plain sampler, bit for bit, without weights */
        cr_assert_eq(fs_sample_gather(c, seeds, 256, &one, "feat", FS_DTYPE_F32, &q), FS_OK, "%s",
                     fs_client_errstr(c));
        assert_same_batch(p, q);
        for (int h = 0; h < 3; h++) cr_assert_null(q->blocks[h].edge_weights);
        fs_batch_free(q);
        /* s = 4: weights on every edge, and the same request gives the same batch */
        cr_assert_eq(fs_sample_gather(c, seeds, 256, &four, "feat", FS_DTYPE_F32, &f), FS_OK, "%s",
                     fs_client_errstr(c));
        check_boosted(f, &four);
        cr_assert_eq(fs_sample_gather(c, seeds, 256, &four, "feat", FS_DTYPE_F32, &g), FS_OK, "%s",
                     fs_client_errstr(c));
        assert_same_batch(f, g);
        fs_batch_free(g);
        cr_assert_eq(fs_sample(c, seeds, 256, &four, &g), FS_OK, "%s", fs_client_errstr(c));
        cr_assert_null(g->features);
        cr_assert_eq(g->num_nodes, f->num_nodes, "sample and sample_gather sample alike");
        cr_assert(memcmp(g->blocks[2].edge_weights, f->blocks[2].edge_weights, 4 * (size_t)f->blocks[2].num_edges) == 0);
        fs_batch_free(g);
        rows[0] += p->num_nodes, gpu_rows[0] += count_in(in_b, p);
        rows[1] += f->num_nodes, gpu_rows[1] += count_in(in_b, f);
        fs_batch_free(p);
        fs_batch_free(f);
    }
    double share1 = (double)gpu_rows[0] / (double)rows[0], share4 = (double)gpu_rows[1] / (double)rows[1];
    cr_assert(share4 > share1 + 0.05, "s = 4 reads a larger share of its rows from gpu:0: %.3f vs %.3f at s = 1",
              share4, share1);
    cr_assert(rows[0] - gpu_rows[0] > rows[1] - gpu_rows[1], "and fewer rows from the host: %lld vs %lld",
              (long long)(rows[1] - gpu_rows[1]), (long long)(rows[0] - gpu_rows[0]));

    /* requests the boost cannot serve are named */
    fs_batch_t *b = NULL;
    fs_sample_req_t bad = SAMPLE_REQ(.num_hops = 4, .fanout = {3, 3, 3, 3}, .seed = 1, .locality = 4);
    cr_assert_eq(fs_sample(c, seeds, 16, &bad, &b), FS_ERR_INVALID_ARGUMENT);
    cr_assert_null(b);
    cr_assert(strstr(fs_client_errstr(c), "up to 3 hops"), "%s", fs_client_errstr(c));
    bad = SAMPLE_REQ(.num_hops = 2, .fanout = {3, 3}, .mode = {FS_SAMPLE_UNIFORM, FS_SAMPLE_UNIFORM_REPLACE},
                            .locality = 4);
    cr_assert_eq(fs_sample(c, seeds, 16, &bad, &b), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(fs_client_errstr(c), "uniform sampling without replacement"), "%s", fs_client_errstr(c));
    const double wrong[] = {NAN, 0.5, -3, INFINITY};
    for (int i = 0; i < 4; i++) {
        bad = SAMPLE_REQ(.num_hops = 2, .fanout = {3, 3}, .locality = wrong[i]);
        cr_assert_eq(fs_sample_gather(c, seeds, 16, &bad, "feat", FS_DTYPE_F32, &b), FS_ERR_INVALID_ARGUMENT,
                     "locality %g", wrong[i]);
        cr_assert(strstr(fs_client_errstr(c), "locality"), "%s", fs_client_errstr(c));
    }

    /* FS_LOCALITY_AUTO follows Algorithm 2: s = 1 (plain) until a ratio is reported */
    fs_sample_req_t autoreq = SAMPLE_REQ(.num_hops = 2, .fanout = {10, 5}, .seed = 9, .locality = FS_LOCALITY_AUTO);
    fs_sample_req_t fixed = autoreq;
    fixed.locality = 0;
    fs_batch_t *x, *y;
    cr_assert_eq(fs_sample_gather(c, seeds, 256, &autoreq, "feat", FS_DTYPE_F32, &x), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(fs_sample_gather(c, seeds, 256, &fixed, "feat", FS_DTYPE_F32, &y), FS_OK, "%s", fs_client_errstr(c));
    assert_same_batch(x, y);
    fs_batch_free(x), fs_batch_free(y);
    double s = 0;
    cr_assert_eq(fs_report_load_ratio(c, 0.5, &s), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(s, 2);
    fixed.locality = 2;
    cr_assert_eq(fs_sample_gather(c, seeds, 256, &autoreq, "feat", FS_DTYPE_F32, &x), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(fs_sample_gather(c, seeds, 256, &fixed, "feat", FS_DTYPE_F32, &y), FS_OK, "%s", fs_client_errstr(c));
    assert_same_batch(x, y);
    check_boosted(x, &autoreq);
    fs_batch_free(x), fs_batch_free(y);
    fs_close(c);

    /* a trainer reading as the CPU has no GPU rows to prefer */
    o.device = "cpu";
    cr_assert_eq(fs_connect(uri, &o, &c), FS_OK, "%s", fs_client_errstr(c));
    fs_sample_req_t four = SAMPLE_REQ(.num_hops = 2, .fanout = {10, 5}, .seed = 3, .want_edge_ids = 1, .locality = 4);
    cr_assert_eq(fs_sample_gather(c, seeds, 64, &four, "feat", FS_DTYPE_F32, &b), FS_ERR_UNSUPPORTED);
    cr_assert_null(b);
    cr_assert(strstr(fs_client_errstr(c), "needs a placement and a reader GPU") &&
              strstr(fs_client_errstr(c), "gpu:N"), "%s", fs_client_errstr(c));
    four.locality = 0;
    cr_assert_eq(fs_sample_gather(c, seeds, 64, &four, "feat", FS_DTYPE_F32, &b), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_not(differs(b, seeds, 64, &four));
    fs_batch_free(b);
    fs_close(c);
}

Test(local, locality_needs_a_placement)
{
    /* the default server has no placement: no preferred sets for any GPU */
    fs_connect_opts_t o = {.struct_size = sizeof(fs_connect_opts_t), .device = "gpu:0"};
    fs_client_t *c;
    cr_assert_eq(fs_connect(uri, &o, &c), FS_OK, "%s", fs_client_errstr(c));
    int64_t seeds[64];
    seeds_for(seeds, 64, 3);
    fs_sample_req_t req = SAMPLE_REQ(.num_hops = 2, .fanout = {10, 5}, .seed = 3, .want_edge_ids = 1, .locality = 2);
    fs_batch_t *b = NULL;
    cr_assert_eq(fs_sample(c, seeds, 64, &req, &b), FS_ERR_UNSUPPORTED);
    cr_assert(strstr(fs_client_errstr(c), "no preferred sets for gpu:0"), "%s", fs_client_errstr(c));
    req.locality = 1; /* s = 1 is the plain sampler: no sets needed */
    cr_assert_eq(fs_sample(c, seeds, 64, &req, &b), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_not(differs(b, seeds, 64, &req));
    fs_batch_free(b);
    fs_close(c);
}

Test(local, report_load_ratio_follows_algorithm_2)
{
    fs_client_t *c = connect_ok();
    double s = 0;
    /* loading dominates: double; twice; then overshot: halfway back to the previous s; then in range: settled */
    const double r[] = {0.5, 0.5, 0.1, 0.17, 0.9, 0.0};
    const double want[] = {2, 4, 3, 3, 3, 3};
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(fs_report_load_ratio(c, r[i], &s), FS_OK, "%s", fs_client_errstr(c));
        cr_assert_eq(s, want[i], "epoch %d: r = %g gives s = %g, expected %g", i, r[i], s, want[i]);
    }
    const double bad[] = {NAN, 1.5, -0.1};
    for (int i = 0; i < 3; i++) {
        s = -7;
        cr_assert_eq(fs_report_load_ratio(c, bad[i], &s), FS_ERR_INVALID_ARGUMENT);
        cr_assert(strstr(fs_client_errstr(c), "loading ratio"), "%s", fs_client_errstr(c));
        cr_assert_eq(s, -7, "a refused ratio writes nothing");
    }
    fs_close(c);
    /* another connection starts over; the cap is 8 */
    c = connect_ok();
    for (int i = 0; i < 5; i++) cr_assert_eq(fs_report_load_ratio(c, 1.0, i % 2 ? NULL : &s), FS_OK);
    cr_assert_eq(s, 8, "doubling stops at MAXS = 8");
    cr_assert_eq(fs_report_load_ratio(NULL, 0.5, &s), FS_ERR_INVALID_ARGUMENT);
    fs_close(c);
}
