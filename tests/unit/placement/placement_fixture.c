/* placement_fixture.c — see placement_fixture.h. */
#include "placement_fixture.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "argsort.h"
#include "fs_rng.h"
#include "gen.h"
#include "test_util.h"

fs_hardware_t preset(const char *name)
{
    fs_hardware_t hw;
    fs_error_t err = {0};
    cr_assert_eq(fs_hw_preset(name, &hw, &err), FS_OK, "%s", err.msg);
    return hw;
}

/* A permuted R-MAT graph (edge factor 8) in a fresh directory. */
void open_rmat(char **dir, fs_dataset_t **ds, int scale, int dim, int symmetric)
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

int64_t *sorted_order(const double *p, int64_t n)
{
    int64_t *order = malloc(sizeof *order * (size_t)n);
    fs_error_t err = {0};
    cr_assert_eq(fs_argsort_desc(p, n, 2, order, &err), FS_OK, "%s", err.msg);
    return order;
}

double *powerlaw(int64_t n, uint64_t seed)
{
    double *p = malloc(sizeof *p * (size_t)n);
    for (int64_t v = 0; v < n; v++) {
        uint64_t rank = fs_rng_at(seed, 0, (uint64_t)v) % (uint64_t)n;
        p[v] = 1e6 / pow((double)rank + 1, 1.1);
    }
    return p;
}

fs_plan_t *build(const fs_hardware_t *hw, const fs_plan_input_t *in, const fs_plan_opts_t *o)
{
    fs_plan_t *plan;
    fs_error_t err = {0};
    cr_assert_eq(fs_plan_build(hw, in, o, &plan, &err), FS_OK, "%s", err.msg);
    return plan;
}

/* Each reader's feature route agrees with the rule: local, else a linked
 * holder, else host; and every GPU's rows fit its BSIZE. */
void check_routes(const fs_hardware_t *hw, const fs_plan_t *plan)
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

/* FNV-1a over both route arrays of every reader, features and topology. */
uint64_t routing_hash(const fs_plan_t *plan)
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

fs_plan_t *baseline_plan(const char *hw_name, int gpus, fs_feat_policy_t policy, int64_t N, int64_t rows,
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
