/* place.h — from a dataset and a hardware description to a placed store:
 * hotness (in-degree by default; L-hop reach or presampling on request), a
 * plan (placement/plan.h), then one store tier per planned GPU holding the
 * plan's feature rows and neighbour lists, routed exactly as the plan says.
 * Without a GPU (or when asked) the tiers are simulated devices whose
 * capacity is the plan's budget, so the whole data path runs for real with
 * every tier in host memory. Also the plan's predicted traffic per reader
 * for the training workload (fs_place_predict), which the server shows next
 * to its measured counters and `featstore plan` next to a replay. */
#ifndef FS_PLACE_H
#define FS_PLACE_H

#include "dataset.h"
#include "hardware.h"
#include "hotness.h"
#include "plan.h"
#include "replay.h"
#include "store.h"

typedef enum {
    FS_PLACE_HOT_DEGREE = 0,  /* in-degree (the default: O(E), no sampling) */
    FS_PLACE_HOT_REACH,       /* L-hop reach from the training nodes, L = the workload's hops */
    FS_PLACE_HOT_PRESAMPLE,   /* the workload presampled (fs_place_workload) */
    FS_PLACE_HOT_COUNT_
} fs_place_hotness_t;

const char *fs_place_hotness_name(fs_place_hotness_t h);   /* "degree", "reach", "presample" */
fs_status_t fs_place_hotness_parse(const char *name, fs_place_hotness_t *out, fs_error_t *err);

/* Which data gets a GPU's memory first (docs/algorithms.md §5). */
typedef enum {
    FS_PLACE_TOPOLOGY_FIRST = 0,  /* XGNN's default: random 4-8 B index reads suffer most over PCIe */
    FS_PLACE_FEATURE_FIRST,       /* better when GPU memory is scarce (P1 §6.8, docs/papers.md) */
    FS_PLACE_ORDER_AUTO,          /* plan both, keep the one the cost model times faster */
    FS_PLACE_ORDER_COUNT_
} fs_place_order_t;

const char *fs_place_order_name(fs_place_order_t o);      /* "topology-first", "feature-first", "auto" */
fs_status_t fs_place_order_parse(const char *name, fs_place_order_t *out, fs_error_t *err);

/* "4096", "512M", "2G", "1.5G" (K, M, G, T: powers of 1024) -> bytes;
 * FS_ERR_INVALID_ARGUMENT naming `what` and the text otherwise. */
fs_status_t fs_place_size_parse(const char *text, const char *what, int64_t *out, fs_error_t *err);

/* Presampling runs at most this many mini-batches unless told otherwise:
 * enough to rank the hot rows and to predict traffic fractions, cheap enough
 * for a server's start-up (one epoch of a 4M-node graph is minutes on 2 cores). */
#define FS_PLACE_PRESAMPLE_BATCHES 128

typedef struct {
    const char *topology;  /* preset name (pcie4, nvlink-pairs, dgx1-v100, nvswitch8), JSON file, or "detect"
                              (this box's GPUs: fs_hw_detected) */
    double gpu_budget;     /* bytes per GPU as a fraction of the table's bytes (e.g. 0.1); 0 = the hardware's memory */
    const char *table;     /* the feature table to place; NULL = the first */
    const char *plan_in;   /* load this plan instead of computing one */
    const char *plan_out;  /* save the plan here */
    fs_place_order_t order;  /* FS_PLACE_TOPOLOGY_FIRST (default), FEATURE_FIRST or ORDER_AUTO */
    int64_t reserve_bytes;   /* per GPU, left free for the trainer's model and activations */
    const char *alpha;     /* Algorithm 1's alpha per link class (fs_plan_alpha_parse: "0" or
                              "nvlink=0.2,nvswitch=0"); NULL = the paper's 0.2 NVLink, 0 NVSwitch */
    int threads;
    /* Zero for each of the following keeps the defaults. */
    fs_place_hotness_t hotness;           /* FS_PLACE_HOT_DEGREE */
    fs_feat_policy_t policy;              /* FS_FEAT_AUTO */
    int num_gpus;                         /* use the topology's first num_gpus GPUs; 0 = all */
    const fs_presample_opts_t *workload;  /* the training workload presampling and predictions assume;
                                             NULL = fs_presample_defaults: [15,10,5] x 1024 uniform, seed 1 */
    int64_t presample_batches;            /* mini-batches presampled (capped at one epoch of the training
                                             split); 0 = FS_PLACE_PRESAMPLE_BATCHES */
} fs_place_opts_t;

/* The placement options a command line gives as text (NULL = not given),
 * checked and set in *o before anything is loaded: hotness, order,
 * reserve (a size, below) and alpha (checked, kept as text for the planner,
 * fs_plan_alpha_parse). An error names the bad value and leaves *o as it
 * was for that option. */
fs_status_t fs_place_opts_from_text(fs_place_opts_t *o, const char *hotness, const char *order, const char *reserve,
                                    const char *alpha, fs_error_t *err);

/* What FS_PLACE_ORDER_AUTO decided (fs_place_build below). */
typedef struct {
    int decided;               /* 1 when ORDER_AUTO chose */
    double seconds[2];         /* per mini-batch, slowest reader: [0] topology first, [1] feature first */
} fs_place_choice_t;

/* Loads the hardware and builds (or loads) the plan; *choice as below. */
fs_status_t fs_place_plan(const fs_dataset_t *ds, const fs_place_opts_t *o, fs_hardware_t *hw, fs_plan_t **plan,
                          fs_place_choice_t *choice, fs_error_t *err);

/* The pieces of fs_place_plan, for callers that reuse one (featstore plan):
 * the hardware (preset or file, first num_gpus GPUs, memory from
 * gpu_budget x the table's bytes, less reserve_bytes); the hotness
 * o->hotness asks for into p[num_nodes]; a plan for hotness p (saved to
 * plan_out when set; plan->budget.feature_first says which order it has).
 * With FS_PLACE_ORDER_AUTO, fs_place_build plans both orders, replays the
 * prediction's workload sample (fs_place_workload's seed and batch count)
 * through both, features and neighbour lists, and keeps the plan whose
 * slowest reader the cost model times faster (feature bytes plus
 * neighbour-list transactions, fs_replay_topo_per_batch; a tie keeps
 * topology first); *choice (may be NULL) receives both times. */
fs_status_t fs_place_hardware(const fs_dataset_t *ds, const fs_place_opts_t *o, fs_hardware_t *hw, fs_error_t *err);
fs_status_t fs_place_hotness(const fs_dataset_t *ds, const fs_place_opts_t *o, double *p, fs_error_t *err);
fs_status_t fs_place_build(const fs_dataset_t *ds, const fs_place_opts_t *o, const fs_hardware_t *hw,
                           const double *p, fs_plan_t **plan, fs_place_choice_t *choice, fs_error_t *err);

/* The training workload as the cost model takes it: p[v] = expected reads
 * of row v per mini-batch of one reader, from presampling o->workload over
 * the "train" split (every node when there is none): counts over
 * presample_batches batches, divided by that number. *batches (may be NULL)
 * receives the number of batches sampled. The same workload and batch
 * count as presampled hotness, but another sampler seed (the workload's
 * seed ^ FS_PLACE_WORKLOAD_SEED_XOR): rows a presampled plan picked because
 * they were hot by chance must not be judged by the same chance. */
#define FS_PLACE_WORKLOAD_SEED_XOR 0x776f726b6c6f6164ULL /* "workload" */
fs_status_t fs_place_workload(const fs_dataset_t *ds, const fs_place_opts_t *o, double *p, int64_t *batches,
                              fs_error_t *err);

/* Predicted bytes per mini-batch of each reader GPU by source (its own GPU,
 * each peer, host: out->local_bytes / peer_bytes / host_bytes, and
 * fs_cost_fractions for fractions) for the workload of fs_place_workload. */
fs_status_t fs_place_predict(const fs_dataset_t *ds, const fs_plan_t *plan, const fs_hardware_t *hw,
                             const fs_place_opts_t *o, fs_cost_t *out, fs_error_t *err);

/* The tier kind the plan's GPUs get: FS_TIER_DEVICE when this box has at
 * least as many GPUs as the plan (fs_devices_query: real ones, or the
 * simulated runtime's), else FS_TIER_SIM_DEVICE ones in host memory. */
fs_tier_kind_t fs_place_tier_kind(const fs_plan_t *plan);
/* Adds one tier of `kind` per planned GPU (a device tier sized to exactly
 * what the plan puts there) and places the plan. */
fs_status_t fs_place_apply(fs_store_t *st, const fs_dataset_t *ds, const fs_plan_t *plan, const char *table,
                           fs_tier_kind_t kind, fs_error_t *err);

/* One line per GPU: what it holds and the replication (for logs). */
void fs_place_describe(FILE *out, const fs_plan_t *plan, const fs_hardware_t *hw);

#endif
