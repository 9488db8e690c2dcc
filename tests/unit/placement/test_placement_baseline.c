/* test_placement_baseline.c — the baseline policies beside the paper's:
 * policy names and alpha specs parsed (bad ones named), NAIVE holding id
 * ranges routed over links, RAND deterministic and spread, DEGREE
 * partitioning the hot prefix per clique, capacity never exceeded on every
 * preset with uneven memories, and each policy's plan file round trip. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "hardware.h"
#include "placement_fixture.h"
#include "plan.h"
#include "test_util.h"

/* ==== baseline policies (NAIVE, RAND, DEGREE) ================================ */

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
