/* bench_placement.c — feature traffic of placement strategies under real
 * GraphSAGE-style sampling (issue 5, docs/algorithms.md §2–§3, §5).
 *
 *   bench_placement [--dataset DIR] [--scale 22] [--threads 2]
 *                   [--presample-epochs 3] [--batches 0] [--seed 7]
 *
 * Graph: R-MAT (a, b, c = .57, .19, .19), edge factor 16, symmetrised and
 * deduplicated, NOT permuted (node 0 is the hub: low ids are hot, which
 * favours the id-range NAIVE baseline), 128 float32 features (512 B rows),
 * the generator's 60% training split; cached under /tmp/featstore-bench.
 * Hardware: 4 simulated GPUs on nvlink-pairs (two NVLink pairs) and on
 * nvswitch8 restricted to its first 4 GPUs (fs_hw_first_gpus: still
 * all-to-all), each with 10% and 20% of the feature bytes as memory.
 *
 * Strategies, all real plans routed by plan.c (local, else a linked peer,
 * else host):
 *   naive        GPU g holds the id range [g*BSIZE, (g+1)*BSIZE)
 *   rand         the same over a hash permutation of the ids
 *   degree-repl  the degree-ordered cache of the list (Quiver /
 *                PaGraph style): every GPU the same top-BSIZE rows by
 *                in-degree: PaGraph's cache (P0 §5 in docs/papers.md: it uses no GPU
 *                links) and Quiver's default policy, device_replicate
 *   degree       Quiver's opt-in p2p_clique_replicate policy: the
 *                in-degree-ordered prefix partitioned round-robin within
 *                each NVLink clique; an extra, stronger comparison
 *   algo1        Algorithm 1 per clique on presampled hotness, the paper's
 *                alpha (0.2 NVLink, 0 NVSwitch: docs/algorithms.md §3)
 *   algo1-a0     the same with alpha 0 (no copies inside a clique): alpha
 *                trades host bytes for local hits, so this is Algorithm 1's
 *                host-bytes-minimising setting
 *   xgnn+algo1   what `serve --topology` builds: the XGNN solver places the
 *                hottest topology first (docs/algorithms.md §5), Algorithm 1 fills
 *                the memory left with features, same presampled hotness
 *
 * Three independent samples of one workload ([15,10,5], batch 1,024,
 * uniform without replacement): hotness for algo1* and xgnn+algo1 is
 * --presample-epochs epochs of the real sampler (seed 1); the cost model's
 * workload (fs_plan_predict) is one more epoch (seed 3); the replay (seed
 * --seed) is what is measured. Data-parallel: the epoch's shuffled training
 * ids are cut into batches and reader GPU i takes batches i, i+4, ...
 * (replay.h). By default the whole epoch is replayed (~1 min on 2 cores,
 * the bench ~2.5 min); --batches N replays N per reader, and host bytes per
 * epoch are then the measured mean per mini-batch x the epoch's batches
 * (128 per reader agree with the whole epoch within 0.1%). load_ms is the
 * cost model's time of the measured bytes for the slowest reader per
 * mini-batch (peer bytes / link GB/s + host bytes / host GB/s; local reads
 * free), Algorithm 1's own objective; "the fastest baseline" is the
 * fastest of the four.
 *
 * RESULT lines: one per topology, budget and strategy; one summary per
 * topology and budget: the best baseline of the list (naive, rand,
 * degree-repl) in host bytes over algo1's and over xgnn+algo1's; Quiver's
 * clique policy (degree) in host bytes over algo1's and algo1-a0's; the
 * fastest of all four baselines in load_ms over algo1's; the prediction
 * error of algo1, the largest over all strategies, and the error algo1's
 * prediction would have from its own hotness counts; plan_time (hotness +
 * plan on this graph, per estimator). */
#include <math.h>

#include "bench_common.h"
#include "bench_util.h"
#include "dataset.h"
#include "hotness.h"
#include "plan.h"
#include "replay.h"

enum { NAIVE, RAND, DEGREE, DEGREE_REPL, ALGO1, ALGO1_A0, XGNN_ALGO1, NUM_STRATEGIES };
static const char *const strategy_names[NUM_STRATEGIES] = {"naive", "rand",     "degree",    "degree-repl",
                                                           "algo1", "algo1-a0", "xgnn+algo1"};
#define NUM_TOPOS 2
#define NUM_BUDGETS 2
static const char *const topo_names[NUM_TOPOS] = {"nvlink-pairs", "nvswitch8"};
static const double budgets[NUM_BUDGETS] = {0.1, 0.2};
#define NUM_PLANS (NUM_TOPOS * NUM_BUDGETS * NUM_STRATEGIES)

static void die(const char *what, const fs_error_t *err)
{
    fprintf(stderr, "bench_placement: %s: %s\n", what, err->msg);
    exit(1);
}

typedef struct {
    const fs_dataset_t *ds;
    int threads;
    const double *degree, *presampled;   /* hotness */
} inputs_t;

static fs_hardware_t hardware(int t, double budget, const fs_dataset_t *ds, const fs_table_t *tab)
{
    fs_hardware_t hw;
    fs_error_t err = {0};
    if (fs_hw_preset(topo_names[t], &hw, &err) != FS_OK) die("preset", &err);
    if (fs_hw_first_gpus(&hw, 4, &err) != FS_OK) die("4 GPUs", &err);
    double bytes = budget * (double)ds->num_nodes * (double)tab->row_bytes;
    if (fs_hw_set_memory(&hw, (int64_t)bytes, &err) != FS_OK) die("memory", &err);
    return hw;
}

static fs_plan_t *build(const inputs_t *in, const fs_hardware_t *hw, int strategy, int64_t row_bytes,
                        double *seconds)
{
    fs_plan_opts_t o;
    fs_plan_defaults(&o);
    o.threads = in->threads;
    static const fs_feat_policy_t policy[NUM_STRATEGIES] = {FS_FEAT_NAIVE, FS_FEAT_RAND,  FS_FEAT_DEGREE, FS_FEAT_RULE1,
                                                            FS_FEAT_ALGO1, FS_FEAT_ALGO1, FS_FEAT_AUTO};
    o.policy = policy[strategy];
    if (strategy == ALGO1_A0) o.alpha[FS_FABRIC_NVLINK] = o.alpha[FS_FABRIC_NVSWITCH] = 0;
    const double *p = strategy <= DEGREE_REPL ? in->degree : in->presampled;
    fs_plan_input_t pin = {.num_nodes = in->ds->num_nodes, .p = p, .row_bytes = row_bytes};
    if (strategy == XGNN_ALGO1) {
        pin.indptr = in->ds->indptr;
        pin.index_bytes = (int64_t)fs_dtype_size(in->ds->index_dtype);
    }
    fs_plan_t *plan;
    fs_error_t err = {0};
    double t0 = bench_now();
    if (fs_plan_build(hw, &pin, &o, &plan, &err) != FS_OK) die(strategy_names[strategy], &err);
    *seconds = bench_now() - t0;
    return plan;
}

typedef struct {
    double local, peer, host;            /* row fractions, all readers */
    double host_bytes;                   /* measured, per epoch */
    double predicted_host;               /* per epoch: independent workload / the plan's own hotness */
    double predicted_host_own;
    double load_ms;                      /* cost model time of the measured bytes, slowest reader, per batch */
    double topo_host;                    /* fraction of neighbour lists read from the host */
} outcome_t;

static double mean_host(const fs_cost_t *c)
{
    double h = 0;
    for (int i = 0; i < c->num_gpus; i++) h += c->host_bytes[i] / c->num_gpus; /* every reader: one workload */
    return h;
}

static outcome_t outcome(const fs_replay_t *r, const fs_hardware_t *hw, const fs_cost_t *pred,
                         const fs_cost_t *pred_own, int64_t epoch_batches)
{
    outcome_t o = {0};
    double rows[3] = {0}, lists = 0, host_lists = 0, batches = 0;
    for (int i = 0; i < r->num_gpus; i++) {
        for (int s = 0; s <= FS_HW_MAX_GPUS; s++) {
            rows[s == FS_COST_HOST ? 2 : s == i ? 0 : 1] += (double)r->rows[i][s];
            lists += (double)r->lists[i][s];
        }
        host_lists += (double)r->lists[i][FS_COST_HOST];
        batches += (double)r->batches[i];
    }
    double total = rows[0] + rows[1] + rows[2];
    o.local = rows[0] / total, o.peer = rows[1] / total, o.host = rows[2] / total;
    o.host_bytes = rows[2] * (double)r->row_bytes / batches * (double)epoch_batches;
    o.predicted_host = mean_host(pred) * (double)epoch_batches;
    o.predicted_host_own = mean_host(pred_own) * (double)epoch_batches;
    o.topo_host = lists > 0 ? host_lists / lists : 0;
    fs_cost_t m;
    fs_error_t err = {0};
    if (fs_replay_per_batch(r, hw, &m, &err) != FS_OK) die("per batch", &err);
    o.load_ms = m.max_seconds * 1e3;
    return o;
}

/* Raw counts of `epochs` presampled epochs with `seed`. */
static void presample(const fs_dataset_t *ds, const fs_idset_t *train, int epochs, uint64_t seed, int threads,
                      double *counts, double *seconds)
{
    fs_presample_opts_t o;
    fs_presample_defaults(&o);
    o.epochs = epochs, o.threads = threads, o.seed = seed;
    fs_csr_ref_t g = {ds->num_nodes, ds->indptr, ds->indices, ds->index_dtype, NULL};
    fs_error_t err = {0};
    double t0 = bench_now();
    if (fs_hotness_presample(&g, train->ids, train->count, &o, counts, &err) != FS_OK) die("presample", &err);
    *seconds = bench_now() - t0;
}

static void print_results(const fs_plan_t *const *plans, const fs_hardware_t *hws, const fs_replay_t *rep,
                          const fs_cost_t *pred, const fs_cost_t *pred_own, const double *plan_seconds,
                          int64_t epoch_batches)
{
    for (int t = 0; t < NUM_TOPOS; t++)
        for (int b = 0; b < NUM_BUDGETS; b++) {
            outcome_t oc[NUM_STRATEGIES];
            double worst = 0;
            for (int s = 0; s < NUM_STRATEGIES; s++) {
                int k = (t * NUM_BUDGETS + b) * NUM_STRATEGIES + s;
                oc[s] = outcome(&rep[k], &hws[k], &pred[k], &pred_own[k], epoch_batches);
                double e = fabs(oc[s].predicted_host / oc[s].host_bytes - 1);
                worst = e > worst ? e : worst;
                printf("RESULT bench=placement_strategy topology=%s gpus=4 budget=%.2f strategy=%s local_frac=%.4f "
                       "peer_frac=%.4f host_frac=%.4f host_bytes=%.4e predicted_host_bytes=%.4e load_ms=%.3f "
                       "replication=%.3f topo_host_frac=%.4f plan_seconds=%.3f\n",
                       topo_names[t], budgets[b], strategy_names[s], oc[s].local, oc[s].peer, oc[s].host,
                       oc[s].host_bytes, oc[s].predicted_host, oc[s].load_ms, plans[k]->replication, oc[s].topo_host,
                       plan_seconds[k]);
            }
            int best = NAIVE, fastest = NAIVE;
            for (int s = NAIVE; s <= DEGREE_REPL; s++) {
                if (s != DEGREE) best = oc[s].host_bytes < oc[best].host_bytes ? s : best;
                fastest = oc[s].load_ms < oc[fastest].load_ms ? s : fastest;
            }
            printf("RESULT bench=placement topology=%s gpus=4 budget=%.2f ratio_host_bytes_best_baseline_vs_alg1=%.3f "
                   "best_baseline=%s predicted_vs_measured_host_bytes_error=%.4f max_abs_error_all_strategies=%.4f "
                   "error_from_plan_own_hotness=%.4f ratio_host_bytes_best_baseline_vs_xgnn_alg1=%.3f "
                   "ratio_host_bytes_quiver_clique_vs_alg1=%.3f ratio_host_bytes_quiver_clique_vs_alg1_alpha0=%.3f "
                   "ratio_load_ms_fastest_baseline_vs_alg1=%.3f fastest_baseline=%s\n",
                   topo_names[t], budgets[b], oc[best].host_bytes / oc[ALGO1].host_bytes, strategy_names[best],
                   oc[ALGO1].predicted_host / oc[ALGO1].host_bytes - 1, worst,
                   oc[ALGO1].predicted_host_own / oc[ALGO1].host_bytes - 1,
                   oc[best].host_bytes / oc[XGNN_ALGO1].host_bytes, oc[DEGREE].host_bytes / oc[ALGO1].host_bytes,
                   oc[DEGREE].host_bytes / oc[ALGO1_A0].host_bytes, oc[fastest].load_ms / oc[ALGO1].load_ms,
                   strategy_names[fastest]);
        }
}

int main(int argc, char **argv)
{
    int scale = (int)bench_arg(argc, argv, "--scale", 22), threads = (int)bench_arg(argc, argv, "--threads", 2);
    int epochs = (int)bench_arg(argc, argv, "--presample-epochs", 3);
    int64_t per_reader = bench_arg(argc, argv, "--batches", 0);
    uint64_t seed = (uint64_t)bench_arg(argc, argv, "--seed", 7);
    if (scale < 8 || scale > 30 || threads < 1 || epochs < 1 || per_reader < 0 || seed == 1 || seed == 3) {
        fprintf(stderr, "bench_placement: bad --scale/--threads/--presample-epochs/--batches/--seed "
                        "(the replay seed must differ from the hotness's 1 and the workload's 3)\n");
        return 2;
    }
    double t_start = bench_now();
    const char *dir = bench_dataset_dim(argc, argv, scale, 128);
    fs_dataset_t *ds;
    fs_error_t err = {0};
    if (fs_dataset_open(dir, 0, threads, &ds, &err) != FS_OK) die(dir, &err);
    const fs_table_t *tab = ds->num_tables ? &ds->tables[0] : NULL;
    const fs_idset_t *train = fs_dataset_split(ds, "train");
    if (!tab || !train) {
        fprintf(stderr, "bench_placement: %s needs a feature table and a train split\n", dir);
        return 1;
    }
    int64_t N = ds->num_nodes, epoch_batches = fs_batches_per_epoch(train->count, 1024);
    printf("placement: %s: %lld nodes, %lld edges, %lld training ids (%lld batches of 1024 per epoch), "
           "rows of %zu B, %d threads\n", dir, (long long)N, (long long)ds->num_edges, (long long)train->count,
           (long long)epoch_batches, tab->row_bytes, threads);

    /* three independent samples of the workload: hotness (seed 1), the
     * prediction's workload (seed 3), the replay (--seed) */
    double *degree = malloc(sizeof(double) * (size_t)N), *counts = malloc(sizeof(double) * (size_t)N);
    double *work = malloc(sizeof(double) * (size_t)N), *own = malloc(sizeof(double) * (size_t)N);
    fs_csr_ref_t g = {N, ds->indptr, ds->indices, ds->index_dtype, NULL};
    double t0 = bench_now(), t_presample, t_work;
    if (fs_hotness_degree(&g, threads, degree, &err) != FS_OK) die("degree", &err);
    double t_degree = bench_now() - t0;
    t0 = bench_now(); /* P0's estimator, timed for plan_time only (reach ranks hubs too high: not used) */
    if (fs_hotness_reach(&g, train->ids, train->count, 3, threads, own, &err) != FS_OK) die("reach", &err);
    double t_reach = bench_now() - t0;
    presample(ds, train, epochs, 1, threads, counts, &t_presample);
    presample(ds, train, 1, 3, threads, work, &t_work);
    if (fs_hotness_per_batch(work, N, (double)epoch_batches, work, &err) != FS_OK ||
        fs_hotness_per_batch(counts, N, (double)(epochs * epoch_batches), own, &err) != FS_OK)
        die("workload", &err);
    printf("hotness: degree %.2f s, 3-hop reach %.2f s, presample %d epoch(s) %.2f s; workload: presample 1 epoch "
           "%.2f s\n", t_degree, t_reach, epochs, t_presample, t_work);
    inputs_t in = {ds, threads, degree, counts};

    /* every plan, then one replay routes the same batches through all of them */
    fs_plan_t *plans[NUM_PLANS];
    fs_hardware_t hws[NUM_PLANS];
    fs_cost_t pred[NUM_PLANS], pred_own[NUM_PLANS];
    double plan_seconds[NUM_PLANS];
    for (int k = 0; k < NUM_PLANS; k++) {
        int t = k / (NUM_BUDGETS * NUM_STRATEGIES), b = k / NUM_STRATEGIES % NUM_BUDGETS, s = k % NUM_STRATEGIES;
        hws[k] = hardware(t, budgets[b], ds, tab);
        plans[k] = build(&in, &hws[k], s, (int64_t)tab->row_bytes, &plan_seconds[k]);
        if (fs_plan_predict(plans[k], &hws[k], work, NULL, &pred[k], &err) != FS_OK ||
            fs_plan_predict(plans[k], &hws[k], own, NULL, &pred_own[k], &err) != FS_OK)
            die("predict", &err);
    }
    fs_replay_opts_t ro;
    fs_replay_defaults(&ro);
    ro.sample.seed = seed;
    ro.sample.threads = threads;
    ro.max_batches = per_reader;
    ro.count_topology = 1;
    fs_replay_t *rep = calloc(NUM_PLANS, sizeof *rep);
    t0 = bench_now();
    if (fs_plan_replay(&g, train->ids, train->count, (const fs_plan_t *const *)plans, NUM_PLANS, &ro, rep, NULL,
                       &err) != FS_OK)
        die("replay", &err);
    int64_t replayed = 0;
    for (int i = 0; i < rep[0].num_gpus; i++) replayed += rep[0].batches[i];
    printf("replay: %lld mini-batches, %lld..%lld per reader (seed %llu), through %d plans in %.2f s\n",
           (long long)replayed, (long long)rep[0].batches[3], (long long)rep[0].batches[0], (unsigned long long)seed,
           NUM_PLANS, bench_now() - t0);
    print_results((const fs_plan_t *const *)plans, hws, rep, pred, pred_own, plan_seconds, epoch_batches);

    /* hotness + plan on this graph, per estimator (nvlink-pairs, 10%); the
     * 10M-node figure is bench_plan's */
    printf("RESULT bench=plan_time nodes=%lld edges=%lld threads=%d hotness=degree seconds=%.3f hotness_seconds=%.3f "
           "plan_seconds=%.3f\n", (long long)N, (long long)ds->num_edges, threads, t_degree + plan_seconds[DEGREE],
           t_degree, plan_seconds[DEGREE]);
    printf("RESULT bench=plan_time nodes=%lld edges=%lld threads=%d hotness=reach hops=3 seconds=%.3f "
           "hotness_seconds=%.3f plan_seconds=%.3f\n", (long long)N, (long long)ds->num_edges, threads,
           t_reach + plan_seconds[DEGREE], t_reach, plan_seconds[DEGREE]);
    printf("RESULT bench=plan_time nodes=%lld edges=%lld threads=%d hotness=presample epochs=%d seconds=%.3f "
           "hotness_seconds=%.3f plan_seconds=%.3f\n", (long long)N, (long long)ds->num_edges, threads, epochs,
           t_presample + plan_seconds[ALGO1], t_presample, plan_seconds[ALGO1]);
    printf("total %.1f s\n", bench_now() - t_start);
    for (int k = 0; k < NUM_PLANS; k++) fs_plan_free(plans[k]);
    free(rep), free(degree), free(counts), free(work), free(own);
    fs_dataset_close(ds);
    return 0;
}
