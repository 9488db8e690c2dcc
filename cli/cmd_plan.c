/* cmd_plan.c — `featstore plan DATASET --topology PRESET|FILE [options]`:
 * makes a placement plan exactly as `serve --topology` would (place.h) and
 * explains it: what each GPU holds, then the cost model's predicted bytes
 * per mini-batch of each reader by source (own GPU, peers, host), and with
 * --replay N the same quantities measured on N real mini-batches per reader
 * routed through the plan (placement/replay.h), with the relative error.
 *
 * Honesty of the comparison: three independent samples of one workload —
 * presampled hotness (the workload's seed), the prediction's workload
 * (fs_place_workload: another seed) and the replay (a third seed) — so
 * measured batches are never the ones the plan or the prediction came from.
 *
 * Exit status: 0, 1 when the operation fails (bad dataset, preset, budget,
 * policy, hotness, fanouts: the message names it), 2 for a malformed
 * command line. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dataset.h"
#include "place.h"

static const char *const plan_usage =
    "usage: featstore plan DATASET --topology PRESET|FILE [--gpus N] [--gpu-budget F] [--reserve SIZE]\n"
    "       [--feature-first | --topology-first | --order topology-first|feature-first|auto]\n"
    "       [--policy auto|rule1|algo1|xgnn|naive|rand|degree] [--alpha A|nvlink=A,nvswitch=A]\n"
    "       [--hotness degree|reach|presample] [--fanouts 15,10,5] [--batch 1024] [--presample-batches N]\n"
    "       [--table T] [--save FILE] [--replay N] [--threads N]";

typedef struct {
    fs_place_opts_t place;
    fs_presample_opts_t workload;
    long long replay;
} plan_cli_t;

/* "15,10,5" -> hops and fanouts (-1 = every neighbour). */
static fs_status_t parse_fanouts(const char *s, fs_presample_opts_t *w, fs_error_t *err)
{
    int hops = 0;
    const char *p = s;
    while (*p) {
        char *e;
        long v = strtol(p, &e, 10);
        if (e == p || (v <= 0 && v != FS_FANOUT_ALL) || v > 1 << 20 || hops == FS_MAX_HOPS || (*e && *e != ',') ||
            (*e == ',' && !e[1]))
            return fs_error(err, FS_ERR_INVALID_ARGUMENT,
                            "--fanouts wants 1 to %d comma-separated fanouts > 0 (or -1 for all), got '%s'",
                            FS_MAX_HOPS, s);
        w->fanout[hops++] = (int)v;
        p = *e ? e + 1 : e;
    }
    if (hops == 0) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "--fanouts is empty");
    w->num_hops = hops;
    return FS_OK;
}

/* Every value check that needs no dataset; a bad value fails the command
 * (exit 1) naming the option. */
static fs_status_t check_values(cli_t *c, plan_cli_t *p, fs_error_t *err)
{
    long long batch = 1024, presample = 0, gpus = 0, threads = 0;
    memset(p, 0, sizeof *p);
    p->place.topology = c->text[OPT_TOPOLOGY];
    p->place.plan_out = c->text[OPT_SAVE];
    p->place.table = c->text[OPT_TABLE];
    fs_status_t st = cli_int(c, OPT_GPUS, 1, FS_HW_MAX_GPUS, &gpus, err);
    if (st == FS_OK) st = cli_int(c, OPT_BATCH, 1, 1 << 24, &batch, err);
    if (st == FS_OK) st = cli_int(c, OPT_PRESAMPLE, 1, 1LL << 32, &presample, err);
    if (st == FS_OK) st = cli_int(c, OPT_REPLAY, 1, 1LL << 32, &p->replay, err);
    if (st == FS_OK) st = cli_int(c, OPT_THREADS, 1, 256, &threads, err);
    fs_presample_defaults(&p->workload);
    p->workload.batch_size = batch;
    if (st == FS_OK && cli_has(c, OPT_FANOUTS)) st = parse_fanouts(c->text[OPT_FANOUTS], &p->workload, err);
    if (st == FS_OK && cli_has(c, OPT_POLICY)) st = fs_feat_policy_parse(c->text[OPT_POLICY], &p->place.policy, err);
    if (st == FS_OK)
        st = fs_place_opts_from_text(&p->place, c->text[OPT_HOTNESS], c->order, c->text[OPT_RESERVE],
                                     c->text[OPT_ALPHA], err);
    if (st == FS_OK) st = cli_fraction(c, OPT_GPU_BUDGET, &p->place.gpu_budget, err);
    p->place.workload = &p->workload;
    p->place.presample_batches = presample;
    p->place.num_gpus = (int)gpus;
    p->place.threads = (int)threads;
    p->workload.threads = (int)threads;
    return st;
}

/* ---- printing ------------------------------------------------------------------ */

static int64_t topo_bytes(const fs_dataset_t *ds, const fs_plan_gpu_t *G)
{
    if (G->num_topo == 0) return 0;
    int64_t bytes = 8 * __builtin_popcount(G->topo_parts), w = (int64_t)fs_dtype_size(ds->index_dtype);
    for (int64_t k = 0; k < G->num_topo; k++) {
        int64_t v = G->topo_rows[k];
        bytes += 8 + (ds->indptr[v + 1] - ds->indptr[v]) * w;
    }
    return bytes;
}

static void print_plan(const fs_dataset_t *ds, const plan_cli_t *c, const fs_plan_t *plan, const fs_hardware_t *hw,
                       double hot_seconds, double plan_seconds)
{
    char a[32], b[32], d[32];
    double table = (double)plan->num_nodes * (double)plan->row_bytes;
    printf("plan: %s (%s), %d GPUs, policy %s, hotness %s, %s; hotness + workload %.2f s, plan %.2f s\n",
           hw->name, fs_fabric_name(hw->fabric), plan->num_gpus, fs_feat_policy_name(plan->policy),
           fs_place_hotness_name(c->place.hotness), plan->budget.feature_first ? "feature-first" : "topology-first",
           hot_seconds, plan_seconds);
    if (c->place.reserve_bytes > 0)
        printf("plan: %s per GPU reserved for the trainer (the memory column is what is left)\n",
               fs_format_bytes((double)c->place.reserve_bytes, a, sizeof a));
    double topo = (double)(ds->num_nodes + 1) * 8 + (double)ds->num_edges * (double)fs_dtype_size(ds->index_dtype);
    printf("plan: feature table %lld rows x %lld B = %s; topology %s\n", (long long)plan->num_nodes,
           (long long)plan->row_bytes, fs_format_bytes(table, a, sizeof a),
           fs_format_bytes(topo, b, sizeof b));
    printf("%-6s %12s %12s %12s %12s %12s %6s %6s\n", "gpu", "feat rows", "feat bytes", "nbr lists", "topo bytes",
           "memory", "alpha", "group");
    for (int g = 0; g < plan->num_gpus; g++) {
        const fs_plan_gpu_t *G = &plan->gpu[g];
        printf("gpu %-2d %12lld %12s %12lld %12s %12s %6.2f %6d\n", g, (long long)G->num_rows,
               fs_format_bytes((double)G->num_rows * (double)plan->row_bytes, a, sizeof a), (long long)G->num_topo,
               fs_format_bytes((double)topo_bytes(ds, G), b, sizeof b),
               fs_format_bytes((double)plan->budget.avail_bytes[g], d, sizeof d),
               plan->alpha[g], plan->group[g]);
    }
    printf("plan: %lld distinct feature rows on GPUs (%.1f%% of the table), replication factor %.3f\n",
           (long long)plan->distinct_rows, plan->num_nodes ? 100.0 * (double)plan->distinct_rows / (double)plan->num_nodes : 0,
           plan->replication);
}

static void print_workload(const fs_presample_opts_t *w)
{
    printf("[");
    for (int h = 0; h < w->num_hops; h++) printf(h ? ",%d" : "%d", w->fanout[h]);
    printf("] x %lld seeds, uniform", (long long)w->batch_size);
}

static void print_cost_row(const char *who, double local, double peer, double host)
{
    char a[32], b[32], d[32];
    double total = local + peer + host;
    printf("%-8s %12s %12s %12s   %5.1f%% %5.1f%% %5.1f%%\n", who, fs_format_bytes(local, a, sizeof a),
           fs_format_bytes(peer, b, sizeof b),
           fs_format_bytes(host, d, sizeof d), total > 0 ? 100 * local / total : 0, total > 0 ? 100 * peer / total : 0,
           total > 0 ? 100 * host / total : 0);
}

static void print_prediction(const plan_cli_t *c, const fs_cost_t *cost, int64_t batches)
{
    printf("\npredicted feature bytes per mini-batch of each reader (");
    print_workload(&c->workload);
    printf("; workload presampled over %lld batches):\n", (long long)batches);
    printf("%-8s %12s %12s %12s   %6s %6s %6s\n", "reader", "local", "peer", "host", "local", "peer", "host");
    double l = 0, q = 0, h = 0;
    for (int i = 0; i < cost->num_gpus; i++) {
        char who[16];
        snprintf(who, sizeof who, "gpu %d", i);
        print_cost_row(who, cost->local_bytes[i], cost->peer_bytes[i], cost->host_bytes[i]);
        l += cost->local_bytes[i], q += cost->peer_bytes[i], h += cost->host_bytes[i];
    }
    print_cost_row("mean", l / cost->num_gpus, q / cost->num_gpus, h / cost->num_gpus);
}

static double rel_error(double measured, double predicted)
{
    return measured > 0 ? (predicted - measured) / measured : (predicted > 0 ? 1 : 0);
}

static void print_replay(const fs_replay_t *r, const fs_cost_t *m, const fs_cost_t *p, uint64_t seed)
{
    char a[32], b[32];
    int64_t total = 0, lo = INT64_MAX, hi = 0;
    for (int i = 0; i < r->num_gpus; i++) {
        total += r->batches[i];
        lo = r->batches[i] < lo ? r->batches[i] : lo;
        hi = r->batches[i] > hi ? r->batches[i] : hi;
    }
    printf("\nreplay: %lld mini-batches (", (long long)total);
    if (lo == hi) printf("%lld per reader", (long long)lo);
    else printf("%lld to %lld per reader", (long long)lo, (long long)hi);
    printf("; sampler seed %llu, not the prediction's), per mini-batch of each reader:\n", (unsigned long long)seed);
    printf("%-8s %-6s %12s %12s %9s\n", "reader", "source", "measured", "predicted", "error");
    const char *names[3] = {"local", "peer", "host"};
    double tm[3] = {0}, tp[3] = {0};
    for (int i = 0; i < m->num_gpus; i++) {
        double mv[3] = {m->local_bytes[i], m->peer_bytes[i], m->host_bytes[i]};
        double pv[3] = {p->local_bytes[i], p->peer_bytes[i], p->host_bytes[i]};
        for (int s = 0; s < 3; s++) {
            printf("gpu %-4d %-6s %12s %12s %+8.2f%%\n", i, names[s], fs_format_bytes(mv[s], a, sizeof a),
                   fs_format_bytes(pv[s], b, sizeof b), 100 * rel_error(mv[s], pv[s]));
            tm[s] += mv[s], tp[s] += pv[s];
        }
    }
    for (int s = 0; s < 3; s++)
        printf("%-8s %-6s %12s %12s %+8.2f%%\n", "mean", names[s], fs_format_bytes(tm[s] / m->num_gpus, a, sizeof a),
               fs_format_bytes(tp[s] / m->num_gpus, b, sizeof b), 100 * rel_error(tm[s], tp[s]));
    double lists = 0, host_lists = 0;
    for (int i = 0; i < r->num_gpus; i++) {
        for (int s = 0; s <= FS_HW_MAX_GPUS; s++) lists += (double)r->lists[i][s];
        host_lists += (double)r->lists[i][FS_COST_HOST];
    }
    if (lists > 0)
        printf("replay: neighbour lists read: %.1f%% from the host, %.1f%% from GPUs\n", 100 * host_lists / lists,
               100 * (1 - host_lists / lists));
    printf("replay: measured host fraction %.2f%%, predicted %.2f%%\n",
           100 * tm[2] / (tm[0] + tm[1] + tm[2] > 0 ? tm[0] + tm[1] + tm[2] : 1),
           100 * tp[2] / (tp[0] + tp[1] + tp[2] > 0 ? tp[0] + tp[1] + tp[2] : 1));
}

/* ---- the work ---------------------------------------------------------------------- */

static fs_status_t replay(const fs_dataset_t *ds, const plan_cli_t *c, const fs_plan_t *plan,
                          const fs_hardware_t *hw, const fs_cost_t *predicted, fs_error_t *err)
{
    const fs_idset_t *t = fs_dataset_split(ds, "train");
    int64_t n = t && t->count > 0 ? t->count : ds->num_nodes;
    int64_t *train = malloc(sizeof *train * (size_t)(n > 0 ? n : 1));
    if (!train) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < n; i++) train[i] = t && t->count > 0 ? t->ids[i] : i;
    fs_replay_opts_t ro;
    fs_replay_defaults(&ro);
    ro.sample = c->workload;
    ro.sample.seed = c->workload.seed + 1000003; /* never the prediction's batches */
    ro.max_batches = c->replay;
    ro.count_topology = plan->topo.hot > 0;
    fs_csr_ref_t g = {ds->num_nodes, ds->indptr, ds->indices, ds->index_dtype, ds->edge_weights};
    fs_replay_t r;
    fs_cost_t measured;
    fs_status_t st = fs_plan_replay(&g, train, n, &plan, 1, &ro, &r, NULL, err);
    if (st == FS_OK) st = fs_replay_per_batch(&r, hw, &measured, err);
    if (st == FS_OK) print_replay(&r, &measured, predicted, ro.sample.seed);
    free(train);
    return st;
}

static int run(const plan_cli_t *c, fs_dataset_t *ds, fs_error_t *err)
{
    fs_hardware_t hw;
    fs_plan_t *plan = NULL;
    double *p = malloc(sizeof *p * (size_t)(ds->num_nodes > 0 ? ds->num_nodes : 1));
    double *work = malloc(sizeof *work * (size_t)(ds->num_nodes > 0 ? ds->num_nodes : 1));
    if (!p || !work) {
        free(p), free(work);
        fs_error(err, FS_ERR_NOMEM, "out of memory");
        return cli_fail(err);
    }
    int64_t batches = 0;
    double t0 = fs_now();
    fs_status_t st = fs_place_hardware(ds, &c->place, &hw, err);
    if (st == FS_OK) st = fs_place_workload(ds, &c->place, work, &batches, err);
    if (st == FS_OK) st = fs_place_hotness(ds, &c->place, p, err);
    double t1 = fs_now();
    fs_place_choice_t choice;
    if (st == FS_OK) st = fs_place_build(ds, &c->place, &hw, p, &plan, &choice, err);
    fs_cost_t cost;
    if (st == FS_OK) {
        print_plan(ds, c, plan, &hw, t1 - t0, fs_now() - t1);
        if (choice.decided)
            printf("plan: order auto chose %s: the slowest reader's feature and neighbour-list reads per "
                   "mini-batch take %.3f ms topology first, %.3f ms feature first (cost model, the workload "
                   "sample)\n", plan->budget.feature_first ? "feature-first" : "topology-first",
                   choice.seconds[0] * 1e3, choice.seconds[1] * 1e3);
        if (c->place.plan_out) printf("plan: saved to %s\n", c->place.plan_out);
        st = fs_plan_predict(plan, &hw, work, NULL, &cost, err);
    }
    if (st == FS_OK) print_prediction(c, &cost, batches);
    if (st == FS_OK && c->replay > 0) st = replay(ds, c, plan, &hw, &cost, err);
    fs_plan_free(plan);
    free(p), free(work);
    return st == FS_OK ? 0 : cli_fail(err);
}

int cmd_plan(int argc, char **argv)
{
    static const cli_opt_t allowed[] = {OPT_TOPOLOGY, OPT_GPUS, OPT_GPU_BUDGET, OPT_FEATURE_FIRST, OPT_TOPOLOGY_FIRST,
                                        OPT_ORDER, OPT_POLICY, OPT_HOTNESS, OPT_FANOUTS, OPT_BATCH, OPT_PRESAMPLE,
                                        OPT_SAVE, OPT_REPLAY, OPT_THREADS, OPT_TABLE, OPT_ALPHA, OPT_RESERVE, 0};
    cli_t c;
    int rc = cli_parse(&c, argc, argv, allowed);
    if (rc) return rc;
    if (c.num_args != 1) return cli_usage("%s\n%s", "one DATASET directory is needed", plan_usage);
    if (!cli_has(&c, OPT_TOPOLOGY)) return cli_usage("%s\n%s", "--topology PRESET|FILE is required", plan_usage);
    plan_cli_t p;
    fs_error_t err = {0};
    if (check_values(&c, &p, &err) != FS_OK) return cli_fail(&err);
    fs_dataset_t *ds;
    if (fs_dataset_open(c.args[0], 0, p.place.threads, &ds, &err) != FS_OK) return cli_fail(&err);
    if (fs_dataset_need_one_graph(ds, "plan", &err) != FS_OK) {
        fs_dataset_close(ds);
        return cli_fail(&err);
    }
    rc = run(&p, ds, &err);
    fs_dataset_close(ds);
    return rc;
}
