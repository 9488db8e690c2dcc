/* place.c — see place.h. The plan speaks of "GPU g"; the store of tiers and
 * readers: GPU g becomes a tier with device id g — its real memory when
 * this box has the planned GPUs (fs_place_tier_kind), else a simulated-
 * device tier in host memory — and the plan's reader bit r becomes the
 * store's FS_READER_BIT(r).
 *
 * Predictions need absolute rates (reads per mini-batch), which only
 * presampling gives: degree and reach rank rows but have no unit. So the
 * workload is always presampled, with a bounded number of batches so a
 * server's start-up stays short, and with a seed of its own: a plan made
 * from presampled counts keeps the rows that were hot by chance too, so
 * judging it by those same counts overstates its hits (on R-MAT scale 22,
 * nvswitch, 20% budget: host bytes predicted 23% low; with an independent
 * sample of the same workload, within 1%). */
#include "place.h"

#include "fs_device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const fs_table_t *pick_table(const fs_dataset_t *ds, const char *name, fs_error_t *err)
{
    const fs_table_t *t = name ? fs_dataset_table(ds, name) : (ds->num_tables ? &ds->tables[0] : NULL);
    if (!t) fs_error(err, FS_ERR_NOT_FOUND, "placement: no feature table %s%s%s", name ? "'" : "", name ? name : "",
                     name ? "'" : "in the dataset");
    return t;
}

static const char *const hotness_names[FS_PLACE_HOT_COUNT_] = {"degree", "reach", "presample"};

const char *fs_place_hotness_name(fs_place_hotness_t h)
{
    return (unsigned)h < FS_PLACE_HOT_COUNT_ ? hotness_names[h] : "unknown";
}

fs_status_t fs_place_hotness_parse(const char *name, fs_place_hotness_t *out, fs_error_t *err)
{
    for (int h = 0; name && h < FS_PLACE_HOT_COUNT_; h++)
        if (strcmp(name, hotness_names[h]) == 0) {
            *out = (fs_place_hotness_t)h;
            return FS_OK;
        }
    return fs_error(err, FS_ERR_INVALID_ARGUMENT, "unknown hotness estimator '%s' (known: degree, reach, presample)",
                    name ? name : "(null)");
}

static const char *const order_names[FS_PLACE_ORDER_COUNT_] = {"topology-first", "feature-first", "auto"};

const char *fs_place_order_name(fs_place_order_t o)
{
    return (unsigned)o < FS_PLACE_ORDER_COUNT_ ? order_names[o] : "unknown";
}

fs_status_t fs_place_order_parse(const char *name, fs_place_order_t *out, fs_error_t *err)
{
    for (int o = 0; name && o < FS_PLACE_ORDER_COUNT_; o++)
        if (strcmp(name, order_names[o]) == 0) {
            *out = (fs_place_order_t)o;
            return FS_OK;
        }
    return fs_error(err, FS_ERR_INVALID_ARGUMENT, "unknown order '%s' (known: topology-first, feature-first, auto)",
                    name ? name : "(null)");
}

fs_status_t fs_place_size_parse(const char *text, const char *what, int64_t *out, fs_error_t *err)
{
    static const char units[] = "KMGT";
    char *end;
    double v = text ? strtod(text, &end) : -1;
    const char *u = text && *text && *end ? strchr(units, *end) : NULL;
    double scale = u ? (double)(1ULL << (10 * (u - units + 1))) : 1;
    if (!text || !*text || end == text || (*end && (!u || end[1])) || !(v >= 0) || v * scale > 9e18)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s '%s': want a size in bytes, e.g. 4096, 512M, 2G",
                        what, text ? text : "(null)");
    *out = (int64_t)(v * scale);
    return FS_OK;
}

fs_status_t fs_place_opts_from_text(fs_place_opts_t *o, const char *hotness, const char *order, const char *reserve,
                                    const char *alpha, fs_error_t *err)
{
    double check[FS_FABRIC_COUNT_] = {0};
    fs_status_t st = hotness ? fs_place_hotness_parse(hotness, &o->hotness, err) : FS_OK;
    if (st == FS_OK && order) st = fs_place_order_parse(order, &o->order, err);
    if (st == FS_OK && reserve) st = fs_place_size_parse(reserve, "--reserve", &o->reserve_bytes, err);
    if (st == FS_OK && alpha) st = fs_plan_alpha_parse(alpha, check, err);
    if (st == FS_OK && alpha) o->alpha = alpha;
    return st;
}

/* ---- hardware ------------------------------------------------------------------ */

/* `--topology detect`: this box's GPUs, their free memory and peer access. */
static fs_status_t detect(fs_hardware_t *hw, fs_error_t *err)
{
    fs_devices_t d;
    fs_error_t why = {0};
    if (fs_devices_query(&d, &why) != FS_OK)
        return fs_error(err, FS_ERR_NO_DEVICE, "--topology detect: %s; name a preset (%s, ...) to run it on simulated "
                        "GPUs", why.msg, fs_hw_preset_name(0));
    int64_t free_bytes[FS_HW_MAX_GPUS];
    unsigned char peer[FS_HW_MAX_GPUS][FS_HW_MAX_GPUS] = {{0}};
    int n = d.count < FS_HW_MAX_GPUS ? d.count : FS_HW_MAX_GPUS;
    for (int i = 0; i < n; i++) {
        free_bytes[i] = (int64_t)d.dev[i].free_bytes;
        for (int j = 0; j < n; j++) peer[i][j] = d.peer[i][j];
    }
    return fs_hw_detected(n, free_bytes, (const unsigned char(*)[FS_HW_MAX_GPUS])peer, hw, err);
}

fs_status_t fs_place_hardware(const fs_dataset_t *ds, const fs_place_opts_t *o, fs_hardware_t *hw, fs_error_t *err)
{
    const fs_table_t *t = pick_table(ds, o->table, err);
    if (!t) return err->code;
    if (!o->topology) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "placement: no topology (preset or file) given");
    struct stat st;
    fs_status_t s = strcmp(o->topology, "detect") == 0 ? detect(hw, err)
                  : stat(o->topology, &st) == 0       ? fs_hw_load_json(o->topology, hw, err)
                                                      : fs_hw_preset(o->topology, hw, err);
    if (s != FS_OK) return s;
    if (o->num_gpus && (s = fs_hw_first_gpus(hw, o->num_gpus, err)) != FS_OK) return s;
    if (!(o->gpu_budget >= 0 && o->gpu_budget <= 1)) /* NaN fails too */
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "--gpu-budget must be a fraction in (0, 1], got %g", o->gpu_budget);
    if (o->gpu_budget > 0)
        s = fs_hw_set_memory(hw, (int64_t)(o->gpu_budget * (double)t->rows * (double)t->row_bytes), err);
    return s;
}

/* ---- hotness and the workload ------------------------------------------------------ */

static fs_csr_ref_t csr_of(const fs_dataset_t *ds)
{
    return (fs_csr_ref_t){.num_nodes = ds->num_nodes, .indptr = ds->indptr, .indices = ds->indices,
                          .index_dtype = ds->index_dtype, .weights = ds->edge_weights};
}

static void workload_opts(const fs_place_opts_t *o, fs_presample_opts_t *w)
{
    if (o->workload) *w = *o->workload;
    else fs_presample_defaults(w);
    w->epochs = 1;
    w->threads = o->threads;
}

/* The training ids: the "train" split, else every node (owned copy). */
static int64_t *train_ids(const fs_dataset_t *ds, int64_t *count, fs_error_t *err)
{
    const fs_idset_t *t = fs_dataset_split(ds, "train");
    *count = t && t->count > 0 ? t->count : ds->num_nodes;
    int64_t *ids = malloc(sizeof *ids * (size_t)(*count > 0 ? *count : 1));
    if (!ids) {
        fs_error(err, FS_ERR_NOMEM, "placement: out of memory");
        return NULL;
    }
    for (int64_t i = 0; i < *count; i++) ids[i] = t && t->count > 0 ? t->ids[i] : i;
    return ids;
}

/* Presamples min(presample_batches, one epoch) batches: the seeds are the
 * first batches x batch_size ids of a seeded shuffle of the training set,
 * so a capped run is a uniform sample of it. Raw counts into p. */
static fs_status_t presample(const fs_dataset_t *ds, const fs_place_opts_t *o, int for_prediction, double *p,
                             int64_t *batches, fs_error_t *err)
{
    fs_presample_opts_t w;
    workload_opts(o, &w);
    if (for_prediction) w.seed ^= FS_PLACE_WORKLOAD_SEED_XOR;
    if (w.batch_size <= 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "placement: batch size %lld", (long long)w.batch_size);
    int64_t n, cap = o->presample_batches > 0 ? o->presample_batches : FS_PLACE_PRESAMPLE_BATCHES;
    int64_t *train = train_ids(ds, &n, err);
    if (!train) return err->code;
    int64_t *seeds = malloc(sizeof *seeds * (size_t)(n > 0 ? n : 1));
    if (!seeds) {
        free(train);
        return fs_error(err, FS_ERR_NOMEM, "placement: out of memory");
    }
    fs_presample_epoch_order(train, n, w.seed ^ 0x63617070ULL, 0, seeds); /* "capp": not the epoch's own shuffle */
    int64_t m = cap < fs_batches_per_epoch(n, w.batch_size) ? cap * w.batch_size : n;
    fs_csr_ref_t g = csr_of(ds);
    fs_status_t st = fs_hotness_presample(&g, seeds, m, &w, p, err);
    if (batches) *batches = fs_batches_per_epoch(m, w.batch_size);
    free(train), free(seeds);
    return st;
}

fs_status_t fs_place_hotness(const fs_dataset_t *ds, const fs_place_opts_t *o, double *p, fs_error_t *err)
{
    fs_csr_ref_t g = csr_of(ds);
    if (o->hotness == FS_PLACE_HOT_DEGREE) return fs_hotness_degree(&g, o->threads, p, err);
    if (o->hotness == FS_PLACE_HOT_PRESAMPLE) return presample(ds, o, 0, p, NULL, err);
    if (o->hotness != FS_PLACE_HOT_REACH)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "placement: unknown hotness estimator %d", (int)o->hotness);
    fs_presample_opts_t w;
    workload_opts(o, &w);
    int64_t n;
    int64_t *train = train_ids(ds, &n, err);
    if (!train) return err->code;
    fs_status_t st = fs_hotness_reach(&g, train, n, w.num_hops, o->threads, p, err);
    free(train);
    return st;
}

fs_status_t fs_place_workload(const fs_dataset_t *ds, const fs_place_opts_t *o, double *p, int64_t *batches,
                              fs_error_t *err)
{
    int64_t b = 0;
    fs_status_t st = presample(ds, o, 1, p, &b, err);
    if (st == FS_OK) st = fs_hotness_per_batch(p, ds->num_nodes, (double)b, p, err);
    if (batches) *batches = b;
    return st;
}

/* ---- the plan --------------------------------------------------------------------- */

/* The planner's options from ours. */
static fs_status_t plan_opts(const fs_place_opts_t *o, fs_plan_opts_t *po, fs_error_t *err)
{
    fs_plan_defaults(po);
    po->threads = o->threads;
    po->policy = o->policy;
    po->budget.feature_first = o->order == FS_PLACE_FEATURE_FIRST;
    po->budget.reserve_bytes = o->reserve_bytes;
    if ((unsigned)o->order >= FS_PLACE_ORDER_COUNT_)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "placement: unknown order %d", (int)o->order);
    if (o->reserve_bytes < 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "placement: reserve of %lld bytes", (long long)o->reserve_bytes);
    return o->alpha ? fs_plan_alpha_parse(o->alpha, po->alpha, err) : FS_OK;
}

static fs_status_t build_one(const fs_dataset_t *ds, const fs_place_opts_t *o, fs_place_order_t order,
                             const fs_hardware_t *hw, const double *p, fs_plan_t **plan, fs_error_t *err)
{
    const fs_table_t *t = pick_table(ds, o->table, err);
    if (!t) return err->code;
    fs_place_opts_t each = *o;
    each.order = order;
    fs_plan_opts_t po;
    fs_status_t s = plan_opts(&each, &po, err);
    if (s != FS_OK) return s;
    fs_plan_input_t in = {.num_nodes = ds->num_nodes, .p = p, .row_bytes = (int64_t)t->row_bytes,
                          .indptr = ds->indptr, .index_bytes = (int64_t)fs_dtype_size(ds->index_dtype)};
    return fs_plan_build(hw, &in, &po, plan, err);
}

/* The slowest reader's time per mini-batch of each plan, features plus
 * neighbour lists, over the prediction's workload sample. */
static fs_status_t time_plans(const fs_dataset_t *ds, const fs_place_opts_t *o, const fs_hardware_t *hw,
                              const fs_plan_t *const *plans, int num_plans, double *seconds, fs_error_t *err)
{
    fs_replay_opts_t ro;
    fs_replay_defaults(&ro);
    workload_opts(o, &ro.sample);
    ro.sample.seed ^= FS_PLACE_WORKLOAD_SEED_XOR; /* the prediction's sample, not the hotness's */
    int64_t cap = o->presample_batches > 0 ? o->presample_batches : FS_PLACE_PRESAMPLE_BATCHES;
    ro.max_batches = (cap + hw->num_gpus - 1) / hw->num_gpus;
    ro.count_topology = 1;
    int64_t n;
    int64_t *train = train_ids(ds, &n, err);
    fs_replay_t *rep = calloc((size_t)num_plans, sizeof *rep);
    fs_csr_ref_t g = csr_of(ds);
    fs_status_t st = !train ? err->code : !rep ? fs_error(err, FS_ERR_NOMEM, "placement: out of memory")
                   : fs_plan_replay(&g, train, n, plans, num_plans, &ro, rep, NULL, err);
    for (int k = 0; st == FS_OK && k < num_plans; k++) {
        fs_cost_t feat, topo;
        st = fs_replay_per_batch(&rep[k], hw, &feat, err);
        if (st == FS_OK) st = fs_replay_topo_per_batch(&rep[k], hw, &topo, err);
        seconds[k] = 0;
        for (int i = 0; st == FS_OK && i < hw->num_gpus; i++)
            if (feat.seconds[i] + topo.seconds[i] > seconds[k]) seconds[k] = feat.seconds[i] + topo.seconds[i];
    }
    free(train), free(rep);
    return st;
}

fs_status_t fs_place_build(const fs_dataset_t *ds, const fs_place_opts_t *o, const fs_hardware_t *hw,
                           const double *p, fs_plan_t **plan, fs_place_choice_t *choice, fs_error_t *err)
{
    *plan = NULL;
    if (choice) memset(choice, 0, sizeof *choice);
    if (o->order != FS_PLACE_ORDER_AUTO) {
        fs_status_t s = build_one(ds, o, o->order, hw, p, plan, err);
        if (s == FS_OK && o->plan_out) s = fs_plan_save(*plan, o->plan_out, err);
        return s;
    }
    fs_plan_t *both[2] = {NULL, NULL};
    double seconds[2];
    fs_status_t s = build_one(ds, o, FS_PLACE_TOPOLOGY_FIRST, hw, p, &both[0], err);
    if (s == FS_OK) s = build_one(ds, o, FS_PLACE_FEATURE_FIRST, hw, p, &both[1], err);
    if (s == FS_OK) s = time_plans(ds, o, hw, (const fs_plan_t *const *)both, 2, seconds, err);
    if (s == FS_OK) {
        int pick = seconds[1] < seconds[0]; /* a tie keeps XGNN's default, topology first */
        *plan = both[pick];
        both[pick] = NULL;
        if (choice) *choice = (fs_place_choice_t){.decided = 1, .seconds = {seconds[0], seconds[1]}};
        if (o->plan_out) s = fs_plan_save(*plan, o->plan_out, err);
    }
    fs_plan_free(both[0]), fs_plan_free(both[1]);
    if (s != FS_OK) fs_plan_free(*plan), *plan = NULL;
    return s;
}

static fs_status_t load_plan(const fs_dataset_t *ds, const fs_place_opts_t *o, const fs_hardware_t *hw,
                             fs_plan_t **plan, fs_error_t *err)
{
    fs_status_t s = fs_plan_load(o->plan_in, plan, err);
    if (s != FS_OK) return s;
    long long nodes = (*plan)->num_nodes;
    int gpus = (*plan)->num_gpus;
    if (nodes != ds->num_nodes || gpus != hw->num_gpus)
        s = fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s: the plan is for %lld nodes on %d GPUs, not this dataset "
                     "(%lld nodes) on '%s' (%d GPUs)", o->plan_in, nodes, gpus, (long long)ds->num_nodes,
                     o->topology, hw->num_gpus);
    /* a loaded plan is saved like a computed one (a re-plan's save of the served plan) */
    else if (o->plan_out) s = fs_plan_save(*plan, o->plan_out, err);
    if (s != FS_OK) fs_plan_free(*plan), *plan = NULL;
    return s;
}

fs_status_t fs_place_plan(const fs_dataset_t *ds, const fs_place_opts_t *o, fs_hardware_t *hw, fs_plan_t **plan,
                          fs_place_choice_t *choice, fs_error_t *err)
{
    *plan = NULL;
    if (choice) memset(choice, 0, sizeof *choice);
    fs_plan_opts_t po;
    fs_status_t s = plan_opts(o, &po, err); /* refuse bad options before the hotness, which may take a while */
    if (s == FS_OK) s = fs_place_hardware(ds, o, hw, err);
    if (s != FS_OK) return s;
    if (o->plan_in) return load_plan(ds, o, hw, plan, err);
    double *p = malloc(sizeof *p * (size_t)(ds->num_nodes ? ds->num_nodes : 1));
    if (!p) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    s = fs_place_hotness(ds, o, p, err);
    if (s == FS_OK) s = fs_place_build(ds, o, hw, p, plan, choice, err);
    free(p);
    return s;
}

fs_status_t fs_place_predict(const fs_dataset_t *ds, const fs_plan_t *plan, const fs_hardware_t *hw,
                             const fs_place_opts_t *o, fs_cost_t *out, fs_error_t *err)
{
    if (!ds || !plan || !hw || !o || !out) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "predict: NULL argument");
    if (plan->num_nodes != ds->num_nodes)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "predict: the plan is for %lld nodes, the dataset has %lld",
                        (long long)plan->num_nodes, (long long)ds->num_nodes);
    double *p = malloc(sizeof *p * (size_t)(ds->num_nodes ? ds->num_nodes : 1));
    if (!p) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    fs_status_t s = fs_place_workload(ds, o, p, NULL, err);
    if (s == FS_OK) s = fs_plan_predict(plan, hw, p, NULL, out, err);
    free(p);
    return s;
}

/* plan reader bits (bit r = GPU r) -> store reader bits */
static uint32_t *store_masks(const uint32_t *plan_masks, int64_t n)
{
    uint32_t *m = malloc(sizeof *m * (size_t)(n ? n : 1));
    for (int64_t i = 0; m && i < n; i++) m[i] = plan_masks[i] << 1; /* FS_READER_BIT(r) = 1 << (r + 1) */
    return m;
}

fs_tier_kind_t fs_place_tier_kind(const fs_plan_t *plan)
{
    fs_devices_t d;
    fs_error_t why = {0};
    return fs_devices_query(&d, &why) == FS_OK && d.count >= plan->num_gpus ? FS_TIER_DEVICE : FS_TIER_SIM_DEVICE;
}

/* What GPU g's one allocation must hold: its rows and its neighbour lists,
 * each piece rounded up to the store's 256-byte alignment. */
static size_t device_bytes(const fs_dataset_t *ds, const fs_table_t *t, const fs_plan_gpu_t *pg)
{
    size_t a = 256, edges = 0;
    for (int64_t i = 0; i < pg->num_topo; i++) edges += (size_t)(ds->indptr[pg->topo_rows[i] + 1] - ds->indptr[pg->topo_rows[i]]);
    size_t bytes = (size_t)pg->num_rows * t->row_bytes + a;
    if (pg->num_topo > 0)
        bytes += ((size_t)pg->num_topo + 1) * 8 + edges * fs_dtype_size(ds->index_dtype) +
                 (ds->edge_weights ? edges * 4 : 0) + 3 * a;
    return bytes;
}

fs_status_t fs_place_apply(fs_store_t *st, const fs_dataset_t *ds, const fs_plan_t *plan, const char *table,
                           fs_tier_kind_t kind, fs_error_t *err)
{
    const fs_table_t *t = pick_table(ds, table, err);
    if (!t) return err->code;
    if (kind != FS_TIER_DEVICE && kind != FS_TIER_SIM_DEVICE)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "placement: GPUs become device or simulated-device tiers, not %s",
                        fs_tier_kind_name(kind));
    for (int g = 0; g < plan->num_gpus; g++) {
        const fs_plan_gpu_t *pg = &plan->gpu[g];
        int tier; /* the plan already kept each GPU within its budget: a device tier is exactly its pieces */
        size_t capacity = kind == FS_TIER_DEVICE ? device_bytes(ds, t, pg) : 0;
        fs_status_t s = fs_store_add_tier(st, kind, g, capacity, &tier, err);
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
    fprintf(out, "plan: %s (%s), %d GPUs, policy %s, %s, %lld distinct rows on GPUs, replication %.2f\n",
            hw->name, fs_fabric_name(hw->fabric), plan->num_gpus, fs_feat_policy_name(plan->policy),
            plan->budget.feature_first ? "feature-first" : "topology-first", (long long)plan->distinct_rows,
            plan->replication);
    for (int g = 0; g < plan->num_gpus; g++)
        fprintf(out, "plan:   gpu %d: %lld feature rows (%.1f MiB), %lld neighbour lists\n", g,
                (long long)plan->gpu[g].num_rows, (double)plan->gpu[g].num_rows * (double)plan->row_bytes / (1 << 20),
                (long long)plan->gpu[g].num_topo);
}
