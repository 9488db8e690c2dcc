/* replay.h — measured traffic of a plan: real mini-batches from the real
 * sampler, routed through the plan, counted per reader and source (local =
 * the reader's own GPU, peer = another GPU, host), so the cost model's
 * prediction (plan.h, fs_plan_predict) can be checked against measurement.
 *
 * Data-parallel training: every reader GPU trains on its own mini-batches.
 * The replay shuffles the training ids once (fs_presample_epoch_order with
 * the options' seed and epoch), cuts them into batches of batch_size, and
 * gives batch b to reader b mod n: reader i takes every n-th batch of the
 * epoch, as a distributed sampler does. Batch b is sampled with
 * fs_presample_request(o, epoch, b) — the same requests presampling runs, so
 * a replay is reproducible and its cost is that of presampling.
 *
 * Honesty rule: a prediction is meaningful only when its workload comes
 * from hotness estimated independently of the replayed batches. Callers
 * estimate hotness with one seed (fs_hotness_presample) and replay with
 * another; fs_replay_defaults picks a replay seed distinct from
 * fs_presample_defaults' seed for that reason.
 *
 * Several plans can share one replay (they must have the same node and GPU
 * counts): each batch is sampled once and routed through every plan, which
 * is how a benchmark compares strategies on identical batches.
 *
 * Ownership: outputs are caller-owned. Thread-safety: reentrant. */
#ifndef FS_REPLAY_H
#define FS_REPLAY_H

#include "hotness.h"
#include "plan.h"

typedef struct {
    fs_presample_opts_t sample;   /* fanouts, mode, batch size, seed, threads (epochs is ignored) */
    int epoch;                    /* which shuffle of the training ids (default 0) */
    int64_t max_batches;          /* per reader; <= 0: the whole epoch */
    int count_topology;           /* also route neighbour-list reads through fs_plan_topo_route */
} fs_replay_opts_t;

/* [15,10,5] uniform, batch 1024, seed 2 (presampling's default is 1), the
 * whole epoch, feature rows only, every CPU. */
void fs_replay_defaults(fs_replay_opts_t *o);

typedef struct {
    int num_gpus;
    int64_t row_bytes;
    int64_t batches[FS_HW_MAX_GPUS];                       /* mini-batches each reader ran */
    int64_t rows[FS_HW_MAX_GPUS][FS_HW_MAX_GPUS + 1];      /* [reader][source GPU or FS_COST_HOST] */
    int64_t total_rows;                                    /* Σ result.num_nodes over all batches */
    /* neighbour lists (one per frontier node and hop) and the index bytes the
     * sampler reads from them (sampled edges x index width), when counted */
    int64_t lists[FS_HW_MAX_GPUS][FS_HW_MAX_GPUS + 1];
    int64_t list_bytes[FS_HW_MAX_GPUS][FS_HW_MAX_GPUS + 1];
    int64_t list_sectors[FS_HW_MAX_GPUS][FS_HW_MAX_GPUS + 1]; /* the transactions they cost (below) */
} fs_replay_t;

/* Samples the batches described above over the CSR g and routes each
 * batch's result.nodes (the rows a gather fetches) through every plan:
 * out[k] counts plan k. counts, when not NULL, receives [num_nodes] how
 * many batches each node's row was in (all readers) — the measured
 * workload, for fs_hotness_per_batch. Bad input (no plans, plans of other
 * sizes than the graph, bad options, bad training ids) is
 * FS_ERR_INVALID_ARGUMENT naming it. */
fs_status_t fs_plan_replay(const fs_csr_ref_t *g, const int64_t *train, int64_t num_train,
                           const fs_plan_t *const *plans, int num_plans, const fs_replay_opts_t *o, fs_replay_t *out,
                           double *counts, fs_error_t *err);

/* The measured bytes per mini-batch, per reader and source, in the cost
 * model's struct (hw fills the seconds), so prediction and measurement can
 * be printed side by side. A reader that ran no batch reads nothing. */
fs_status_t fs_replay_per_batch(const fs_replay_t *r, const fs_hardware_t *hw, fs_cost_t *out, fs_error_t *err);

/* The same for neighbour lists (counted with count_topology), in the
 * memory transactions they cost: uniform sampling reads an index here and
 * an index there, so a list read costs one FS_COST_SECTOR_BYTES transaction
 * for its offsets plus one per index it picks, whatever the index width (a
 * GPU's smallest transaction; over PCIe, random 4-8 B reads are why
 * docs/algorithms.md §5 puts topology first); weighted modes read the whole list,
 * so its bytes in whole sectors. out->bytes are those sectors' bytes per
 * mini-batch, timed like feature bytes. */
#define FS_COST_SECTOR_BYTES 32
fs_status_t fs_replay_topo_per_batch(const fs_replay_t *r, const fs_hardware_t *hw, fs_cost_t *out, fs_error_t *err);

/* Counts over `batches` mini-batches (presampling's raw p, or a replay's
 * counts) -> the expected reads of each row per mini-batch, the workload
 * fs_plan_predict takes. p may equal counts. */
fs_status_t fs_hotness_per_batch(const double *counts, int64_t num_nodes, double batches, double *p, fs_error_t *err);

/* Mini-batches one presampling epoch over num_train seeds runs. */
static inline int64_t fs_batches_per_epoch(int64_t num_train, int64_t batch_size)
{
    return batch_size > 0 ? (num_train + batch_size - 1) / batch_size : 0;
}

/* Fractions of the bytes read from the reader's own GPU, its peers and the
 * host; reader -1: all readers together. All zero when nothing is read. */
void fs_cost_fractions(const fs_cost_t *c, int reader, double *local, double *peer, double *host);

#endif
