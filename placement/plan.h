/* plan.h — who holds which feature rows and neighbour lists, and where each
 * reader GPU reads each node from (docs/algorithms.md §2, §3, §5).
 *
 * Inputs: hotness p[N] (from hotness.h or measured counts), the hardware,
 * byte budgets. Output: an fs_plan_t of plain arrays a server applies —
 * per GPU the rows it holds in buffer order, and per held row the set of
 * reader GPUs routed to that copy (a reader routed nowhere reads the host).
 * The pieces are public too, so each can be tested alone:
 *
 *   budgets       per-GPU bytes for topology and features, topology first by
 *                 default (§5), BSIZE = feature rows that fit;
 *   Rule 1        a GPU without peers holds its top-BSIZE rows (§3);
 *   Algorithm 1   the corrected loop of §3 for a group of linked GPUs;
 *   XGNN solver   which partitions each GPU stores so every GPU reaches
 *                 every partition in one hop (§5, P1 Fig. 8, docs/papers.md);
 *   topo split    hot prefix to GPUs by new_id mod n, the rest to host (§5);
 *   baselines     NAIVE id ranges, RAND hash order, DEGREE per-clique
 *                 partitions, as real plans for comparison (P0 §5, docs/papers.md);
 *   cost model    predicted bytes per reader and source (§2); measured
 *                 traffic of real mini-batches is replay.h's;
 *   persistence   save/load with a version and a checksum.
 *
 * Ownership: fs_plan_build/fs_plan_load allocate the plan and every array in
 * it; fs_plan_free releases them. All other outputs are caller-owned.
 * Thread-safety: functions are reentrant; a built plan is read-only. */
#ifndef FS_PLAN_H
#define FS_PLAN_H

#include "hardware.h"

/* ---- budgets (docs/algorithms.md §5) ---------------------------------------- */

typedef struct {
    int64_t reserve_bytes;  /* per GPU, left free for the trainer's model and activations */
    int feature_first;      /* 0 (default): topology gets its share first (§5); 1: features first */
    double topo_ratio;      /* share of the topology to place in GPU memory, [0, 1] (default 1) */
    double feat_ratio;      /* share of the feature rows, [0, 1] (default 1) */
} fs_budget_opts_t;

typedef struct {
    int64_t num_rows;       /* feature rows N */
    int64_t row_bytes;      /* bytes of one feature row, > 0 */
    int64_t topo_bytes;     /* the whole CSR (indptr + indices); 0 = no topology to place */
} fs_data_size_t;

typedef struct {
    int num_gpus;
    int feature_first;                    /* the order the memory was split in (fs_budget_opts_t) */
    int64_t avail_bytes[FS_HW_MAX_GPUS];  /* memory - reserve */
    int64_t topo_bytes[FS_HW_MAX_GPUS];
    int64_t feat_bytes[FS_HW_MAX_GPUS];
    int64_t bsize[FS_HW_MAX_GPUS];        /* feature rows: feat_bytes / row_bytes, at most num_rows */
} fs_budget_t;

void fs_budget_defaults(fs_budget_opts_t *o);

/* Splits each GPU's memory. topo_parts[g] / feat_parts[g] = how many of the
 * n partitions GPU g stores when the data is partitioned (XGNN); NULL means a
 * GPU may want a full copy (Rule 1 / Algorithm 1 can replicate every row).
 * A GPU's demand for a kind is ratio x total x parts / n; the first kind gets
 * min(avail, demand), the second min(what is left, demand). */
fs_status_t fs_budget_split(const fs_hardware_t *hw, const fs_budget_opts_t *o, const fs_data_size_t *d,
                            const int *topo_parts, const int *feat_parts, fs_budget_t *out, fs_error_t *err);

/* ---- Rule 1 and Algorithm 1 (docs/algorithms.md §3) ------------------------ */

/* order = fs_argsort_desc(p) (argsort.h). rows[0..*count) = the top
 * min(bsize, num_nodes) ids. */
fs_status_t fs_rule1(const int64_t *order, int64_t num_nodes, int64_t bsize, int64_t *rows, int64_t *count,
                     fs_error_t *err);

/* Algorithm 1 for n GPUs with fast links. B is [n][bsize] (row-major);
 * each B[d] gets *count = min(bsize, num_nodes) distinct rows. alpha in
 * [0, 1]: 0 gives disjoint sets covering the top n*bsize rows, 1 full
 * replication of the top bsize. */
fs_status_t fs_algo1(const double *p, const int64_t *order, int64_t num_nodes, int n, int64_t bsize, double alpha,
                     int64_t *B, int64_t *count, fs_error_t *err);

/* ---- the XGNN placement solver (docs/algorithms.md §5) ---------------------- */

/* Partition q starts on GPU q. A plan adds replicas until every GPU i reaches
 * every partition on itself or a direct peer. Plans are ranked by the
 * paper's rules in priority order: R1 balance (smallest max partitions per
 * GPU), R2 less replication (fewest replicas), R3 bandwidth (largest
 * MinBandwidth = min_i a_i, a_i = min_j Bandwidth_ij / AccessCnt_ij over
 * j in peers(i) and i itself, with Bandwidth_ii = local_gbps and each reader
 * spreading its remote partitions over holders to maximise a_i). The search
 * is exact — R1/R2 order the branches (fewest stored first, then the holder
 * that covers the most readers, the reader itself first), so the first
 * complete plan is the paper's greedy one, and branch and bound on (R1, R2)
 * prunes the rest — unless it exceeds its node budget (exact = 0). */
typedef struct {
    int num_gpus;
    uint32_t holds[FS_HW_MAX_GPUS];                 /* bit q: GPU g stores partition q */
    int8_t source[FS_HW_MAX_GPUS][FS_HW_MAX_GPUS];  /* [reader][partition]: GPU it reads from */
    int max_load;                                   /* R1 */
    int replicas;                                   /* R2: copies beyond the n originals */
    double min_bandwidth;                           /* R3, GB/s */
    int exact;
    int64_t search_nodes;
} fs_xgnn_t;

/* budget: search nodes before giving up exactness (<= 0: FS_XGNN_DEFAULT_BUDGET). */
#define FS_XGNN_DEFAULT_BUDGET 500000 /* DGX-1 needs ~10k nodes (3 ms); 16 GPUs ~1 s at worst */
fs_status_t fs_xgnn_solve(const fs_hardware_t *hw, int64_t budget, fs_xgnn_t *out, fs_error_t *err);

/* R3 for a given holding (every GPU must reach every partition): fills
 * out->min_bandwidth and out->source from out->holds. */
fs_status_t fs_xgnn_evaluate(const fs_hardware_t *hw, fs_xgnn_t *out, fs_error_t *err);

/* ---- topology partitioning (docs/algorithms.md §5) ------------------------- */

/* Nodes relabelled by hotness: new id k = k-th hottest. New ids [0, hot) go
 * to GPU partition (new % n) at local row new / n; the cold rest stays on the
 * host at row new - hot. hot is the longest prefix whose partitions fit every
 * holding GPU's topology budget (bytes of a node = 8 for its indptr entry +
 * degree x index bytes, plus 8 per partition for the closing indptr entry). */
typedef struct {
    int num_parts;
    int64_t num_nodes, hot;
    int64_t *old_of_new;                 /* [num_nodes] */
    int64_t *new_of_old;                 /* [num_nodes] */
    int64_t part_rows[FS_HW_MAX_GPUS];
    int64_t part_bytes[FS_HW_MAX_GPUS];
} fs_topo_split_t;

/* order: fs_argsort_desc(hot) if the caller has it, else NULL. */
fs_status_t fs_topo_split(const double *hot, const int64_t *order, int64_t num_nodes, const int64_t *indptr,
                          int64_t index_bytes, int n, const uint32_t *holds, const int64_t *budget, int threads,
                          fs_topo_split_t *out, fs_error_t *err);
void fs_topo_split_free(fs_topo_split_t *t);

static inline int fs_topo_part_of(const fs_topo_split_t *t, int64_t v)
{
    int64_t k = t->new_of_old[v];
    return k < t->hot ? (int)(k % t->num_parts) : -1;
}
static inline int64_t fs_topo_local_of(const fs_topo_split_t *t, int64_t v)
{
    int64_t k = t->new_of_old[v];
    return k < t->hot ? k / t->num_parts : k - t->hot;
}

/* ---- the plan -------------------------------------------------------------- */

typedef enum {
    FS_FEAT_AUTO = 0,  /* no peers: Rule 1; disjoint cliques: Algorithm 1; otherwise XGNN */
    FS_FEAT_RULE1,     /* every GPU its own top-BSIZE */
    FS_FEAT_ALGO1,     /* Algorithm 1 per clique of linked GPUs (Rule 1 for lone GPUs) */
    FS_FEAT_XGNN,      /* hot prefix partitioned by new_id mod n, replicated by the solver */
    /* Baselines (P0 §5 (docs/papers.md) and the systems it compares with), real plans so
     * they are routed, predicted and replayed like the others. Readers reach
     * peers' rows over direct links only, as for every policy. */
    FS_FEAT_NAIVE,     /* GPU g holds ids [S_g, S_g + BSIZE_g), S_g = Σ_{h<g} BSIZE_h: id ranges */
    FS_FEAT_RAND,      /* the same over a fixed pseudo-random permutation of the ids (hash order) */
    FS_FEAT_DEGREE,    /* Quiver's cache: each clique partitions the p-ordered prefix round-robin
                          (no copies inside a clique, a full copy per clique); with in-degree p, as
                          `featstore plan --policy degree` and the bench pass, the degree-ordered cache */
    FS_FEAT_POLICY_COUNT_
} fs_feat_policy_t;

const char *fs_feat_policy_name(fs_feat_policy_t p);
/* The policy called name ("auto", "rule1", "algo1", "xgnn", "naive", "rand",
 * "degree"); FS_ERR_INVALID_ARGUMENT listing the names otherwise. */
fs_status_t fs_feat_policy_parse(const char *name, fs_feat_policy_t *out, fs_error_t *err);

typedef struct {
    fs_budget_opts_t budget;
    fs_feat_policy_t policy;
    double alpha[FS_FABRIC_COUNT_];  /* Algorithm 1's alpha per link class: nvlink 0.2, nvswitch 0 */
    int place_topology;              /* 1 (default): partition the hot topology when a CSR is given */
    int64_t solver_budget;           /* XGNN search nodes (default FS_XGNN_DEFAULT_BUDGET) */
    int threads;                     /* <= 0: every CPU */
} fs_plan_opts_t;

void fs_plan_defaults(fs_plan_opts_t *o);

/* Sets Algorithm 1's alpha per link class from spec: one number for every
 * class with peer groups ("0.1"), or a list of class=value ("nvlink=0,
 * nvswitch=0.1"; classes not named keep their value in alpha). Values in
 * [0, 1]. FS_ERR_INVALID_ARGUMENT naming the bad part otherwise; alpha is
 * then unchanged. */
fs_status_t fs_plan_alpha_parse(const char *spec, double alpha[FS_FABRIC_COUNT_], fs_error_t *err);

typedef struct {
    int64_t num_nodes;
    const double *p;          /* feature hotness [num_nodes] */
    int64_t row_bytes;        /* > 0 */
    const int64_t *indptr;    /* CSR row offsets [num_nodes + 1], or NULL: features only */
    int64_t index_bytes;      /* 4 or 8 when indptr is given */
    const double *topo_p;     /* topology hotness, NULL = p */
} fs_plan_input_t;

typedef struct {
    int64_t num_rows;         /* feature rows held */
    int64_t *rows;            /* [num_rows] buffer slot k holds feature row rows[k] */
    uint32_t *readers;        /* [num_rows] bit r: reader GPU r reads rows[k] from this copy */
    int64_t num_topo;         /* neighbour lists held */
    int64_t *topo_rows;       /* [num_topo] node ids, partition by partition, local row order */
    uint32_t *topo_readers;   /* [num_topo] like readers */
    uint32_t topo_parts;      /* topology partitions stored */
    uint32_t feat_parts;      /* feature partitions stored (XGNN policy) */
} fs_plan_gpu_t;

typedef struct {
    int num_gpus;
    int64_t num_nodes, row_bytes;
    fs_feat_policy_t policy;                  /* as resolved (never AUTO) */
    int group[FS_HW_MAX_GPUS];                /* Algorithm 1 group id of each GPU */
    double alpha[FS_HW_MAX_GPUS];             /* alpha each GPU's group used */
    fs_budget_t budget;
    fs_xgnn_t xgnn;                           /* valid when topology or XGNN features were placed */
    fs_topo_split_t topo;                     /* hot = 0 when no topology was placed */
    int64_t feat_hot;                         /* XGNN: feature rows in the partitioned prefix */
    fs_plan_gpu_t gpu[FS_HW_MAX_GPUS];
    int64_t distinct_rows;                    /* feature rows on at least one GPU */
    double replication;                       /* held rows / distinct rows (1 = no copies) */
} fs_plan_t;

fs_status_t fs_plan_build(const fs_hardware_t *hw, const fs_plan_input_t *in, const fs_plan_opts_t *o,
                          fs_plan_t **out, fs_error_t *err);
void fs_plan_free(fs_plan_t *plan);

/* Dense per-reader routes: dev[v] = GPU reader reads row v from (-1 = host),
 * pos[v] = its slot there (the row id itself for the host). Either output
 * may be NULL. Topology: the same for neighbour lists (host pos = v). */
fs_status_t fs_plan_route(const fs_plan_t *plan, int reader, int8_t *dev, int64_t *pos, fs_error_t *err);
fs_status_t fs_plan_topo_route(const fs_plan_t *plan, int reader, int8_t *dev, int64_t *pos, fs_error_t *err);

/* ---- cost model (docs/algorithms.md §2) ------------------------------------- */

#define FS_COST_HOST FS_HW_MAX_GPUS   /* source index of host memory in fs_cost_t.bytes */

typedef struct {
    int num_gpus;
    double bytes[FS_HW_MAX_GPUS][FS_HW_MAX_GPUS + 1]; /* [reader][source GPU or FS_COST_HOST] */
    double local_bytes[FS_HW_MAX_GPUS], peer_bytes[FS_HW_MAX_GPUS], host_bytes[FS_HW_MAX_GPUS];
    double seconds[FS_HW_MAX_GPUS];  /* peer bytes / link GB/s + host bytes / host GB/s; local reads are free */
    double max_seconds;              /* the objective max_i E[C_i] */
} fs_cost_t;

/* Predicted bytes per iteration for a workload where row v is read p[v]
 * times per iteration by each reader (p_reader[i], when given, overrides p
 * for reader i). */
fs_status_t fs_plan_predict(const fs_plan_t *plan, const fs_hardware_t *hw, const double *p,
                            const double *const *p_reader, fs_cost_t *out, fs_error_t *err);

/* From out->bytes[][] (num_gpus set) derives local / peer / host bytes per
 * reader, the seconds and max_seconds, by the same formula as the
 * prediction: measured traffic (replay.h) is timed exactly like predicted. */
void fs_cost_finish(fs_cost_t *out, const fs_hardware_t *hw);

/* ---- persistence ---------------------------------------------------------- */

/* A little-endian binary file: header (magic, version, sizes), the plan's
 * arrays, then an XXH3-64 checksum of everything before it. Loading checks
 * magic, version, every size against the file length, the checksum and the
 * plan's invariants; any mismatch is FS_ERR_FORMAT naming it. */
#define FS_PLAN_VERSION 2 /* 2: the budget's order */
fs_status_t fs_plan_save(const fs_plan_t *plan, const char *path, fs_error_t *err);
fs_status_t fs_plan_load(const char *path, fs_plan_t **out, fs_error_t *err);
/* The same from a file's bytes in memory (data[0..len), borrowed): what
 * fs_plan_load does after reading the file, and the plan fuzzer's entry
 * point (tests/fuzz). Errors name no path. */
fs_status_t fs_plan_load_buffer(const void *data, size_t len, fs_plan_t **out, fs_error_t *err);

#endif
