/* place.c — see place.h. The plan speaks of "GPU g"; the store of tiers and
 * readers: GPU g becomes a simulated-device tier with device id g, and the
 * plan's reader bit r becomes the store's FS_READER_BIT(r). */
#include "place.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hotness.h"

static const fs_table_t *pick_table(const fs_dataset_t *ds, const char *name, fs_error_t *err)
{
    const fs_table_t *t = name ? fs_dataset_table(ds, name) : (ds->num_tables ? &ds->tables[0] : NULL);
    if (!t) fs_error(err, FS_ERR_NOT_FOUND, "placement: no feature table %s%s%s", name ? "'" : "", name ? name : "",
                     name ? "'" : "in the dataset");
    return t;
}

static fs_status_t load_hardware(const fs_place_opts_t *o, fs_hardware_t *hw, fs_error_t *err)
{
    struct stat st;
    if (stat(o->topology, &st) == 0) return fs_hw_load_json(o->topology, hw, err);
    return fs_hw_preset(o->topology, hw, err);
}

fs_status_t fs_place_plan(const fs_dataset_t *ds, const fs_place_opts_t *o, fs_hardware_t *hw, fs_plan_t **plan,
                          fs_error_t *err)
{
    *plan = NULL;
    const fs_table_t *t = pick_table(ds, o->table, err);
    if (!t) return err->code;
    fs_status_t s = load_hardware(o, hw, err);
    if (s != FS_OK) return s;
    if (o->gpu_budget < 0 || o->gpu_budget > 1)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "--gpu-budget must be a fraction in (0, 1], got %g", o->gpu_budget);
    if (o->gpu_budget > 0 &&
        (s = fs_hw_set_memory(hw, (int64_t)(o->gpu_budget * (double)t->rows * (double)t->row_bytes), err)))
        return s;
    if (o->plan_in) {
        if ((s = fs_plan_load(o->plan_in, plan, err))) return s;
        long long nodes = (*plan)->num_nodes;
        int gpus = (*plan)->num_gpus;
        if (nodes == ds->num_nodes && gpus == hw->num_gpus) return FS_OK;
        fs_plan_free(*plan);
        *plan = NULL;
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s: the plan is for %lld nodes on %d GPUs, not this dataset "
                        "(%lld nodes) on '%s' (%d GPUs)", o->plan_in, nodes, gpus, (long long)ds->num_nodes,
                        o->topology, hw->num_gpus);
    }
    double *p = malloc(sizeof *p * (size_t)(ds->num_nodes ? ds->num_nodes : 1));
    if (!p) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    fs_csr_ref_t g = {.num_nodes = ds->num_nodes, .indptr = ds->indptr, .indices = ds->indices,
                      .index_dtype = ds->index_dtype, .weights = ds->edge_weights};
    s = fs_hotness_degree(&g, o->threads, p, err);
    fs_plan_opts_t po;
    fs_plan_defaults(&po);
    po.threads = o->threads;
    po.budget.feature_first = o->feature_first;
    fs_plan_input_t in = {.num_nodes = ds->num_nodes, .p = p, .row_bytes = (int64_t)t->row_bytes,
                          .indptr = ds->indptr, .index_bytes = (int64_t)fs_dtype_size(ds->index_dtype)};
    if (s == FS_OK) s = fs_plan_build(hw, &in, &po, plan, err);
    free(p);
    if (s == FS_OK && o->plan_out) s = fs_plan_save(*plan, o->plan_out, err);
    return s;
}

/* plan reader bits (bit r = GPU r) -> store reader bits */
static uint32_t *store_masks(const uint32_t *plan_masks, int64_t n)
{
    uint32_t *m = malloc(sizeof *m * (size_t)(n ? n : 1));
    for (int64_t i = 0; m && i < n; i++) m[i] = plan_masks[i] << 1; /* FS_READER_BIT(r) = 1 << (r + 1) */
    return m;
}

fs_status_t fs_place_apply(fs_store_t *st, const fs_dataset_t *ds, const fs_plan_t *plan, const char *table,
                           fs_error_t *err)
{
    const fs_table_t *t = pick_table(ds, table, err);
    if (!t) return err->code;
    for (int g = 0; g < plan->num_gpus; g++) {
        const fs_plan_gpu_t *pg = &plan->gpu[g];
        int tier; /* capacity: the plan already kept each GPU within its budget */
        fs_status_t s = fs_store_add_tier(st, FS_TIER_SIM_DEVICE, g, 0, &tier, err);
        if (s != FS_OK) return s;
        uint32_t *m = store_masks(pg->readers, pg->num_rows);
        if (!m) return fs_error(err, FS_ERR_NOMEM, "out of memory");
        s = fs_store_place_rows_routed(st, t->name, tier, pg->rows, pg->num_rows, m, err);
        free(m);
        if (s == FS_OK && pg->num_topo > 0) {
            if (!(m = store_masks(pg->topo_readers, pg->num_topo))) return fs_error(err, FS_ERR_NOMEM, "out of memory");
            s = fs_store_place_topology_routed(st, tier, pg->topo_rows, pg->num_topo, m, err);
            free(m);
        }
        if (s != FS_OK) return s;
    }
    return FS_OK;
}

void fs_place_describe(FILE *out, const fs_plan_t *plan, const fs_hardware_t *hw)
{
    fprintf(out, "plan: %s (%s), %d GPUs, policy %s, %lld distinct rows on GPUs, replication %.2f\n", hw->name,
            fs_fabric_name(hw->fabric), plan->num_gpus, fs_feat_policy_name(plan->policy),
            (long long)plan->distinct_rows, plan->replication);
    for (int g = 0; g < plan->num_gpus; g++)
        fprintf(out, "plan:   gpu %d: %lld feature rows (%.1f MiB), %lld neighbour lists\n", g,
                (long long)plan->gpu[g].num_rows, (double)plan->gpu[g].num_rows * (double)plan->row_bytes / (1 << 20),
                (long long)plan->gpu[g].num_topo);
}
