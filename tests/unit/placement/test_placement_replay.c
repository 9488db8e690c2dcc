/* test_placement_replay.c — measured traffic against the prediction
 * (placement/replay.h) and the server's placement (server/place.h) on a
 * generated R-MAT graph: the replay's rows and neighbour lists are what the
 * sampler returned, routed as a naive recount; everything on GPU 0 is local
 * for reader 0, peer for its NVLink twin, host for the others; the cost model
 * on the replay's own counts is the replay exactly; predicted host bytes are
 * within 5% of measured; `--order auto` keeps the plan the cost model times
 * faster; fs_place_predict gives meaningful fractions for every hotness
 * estimator; sizes, orders and bad input are named. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "fs_sample.h"
#include "hardware.h"
#include "hotness.h"
#include "place.h"
#include "placement_fixture.h"
#include "plan.h"
#include "replay.h"
#include "test_util.h"

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
