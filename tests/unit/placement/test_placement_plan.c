/* test_placement_plan.c — whole plans (fs_plan_build, placement/plan.h):
 * Rule 1 on PCIe, Algorithm 1 on NVLink pairs routing local, then peer, then
 * host, several holding peers sharing the readers, DGX-1 features and
 * topology partitioned by the solver, the cost model against the §2 formula,
 * bad inputs named; and plan files: the round trip keeps the routing (its
 * hash), every corruption and truncation is a clear error. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "fs_rng.h"
#include "hardware.h"
#include "placement_fixture.h"
#include "plan.h"
#include "test_util.h"

/* ==== plans ================================================================== */

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
