/* cost.c — the cost model of docs/algorithms.md §2 (P0 §3.1, docs/papers.md), in bytes.
 *
 * With E|S ∩ X| = Σ_{j∈X} p_j, what reader i reads from source s per
 * iteration is row_bytes x Σ p_j over the rows the plan routes i to s; the
 * host gets whatever no GPU copy serves. Walking each GPU's held rows once
 * (O(rows held), not O(n·N)) gives every (reader, GPU) pair at once through
 * the reader masks; the host share is the total minus those. Time per
 * reader uses measured link bandwidths for C_gpu and C_cpu; local reads cost
 * 0 as in the paper. Per-worker partial sums keep the pass parallel. */
#include <stdlib.h>
#include <string.h>

#include "argsort.h"
#include "pl_internal.h"
#include "plan.h"

typedef struct {
    const fs_plan_t *plan;
    const double *p[FS_HW_MAX_GPUS];   /* the workload each reader sees */
    int gpu, workers;
    int64_t n;                          /* items of the current pass */
    double part[256][FS_HW_MAX_GPUS];   /* per worker, per reader */
} cost_ctx_t;

static void sum_held(void *vctx, int64_t w, int64_t w_end, int worker)
{
    (void)w_end, (void)worker;
    cost_ctx_t *c = vctx;
    const fs_plan_gpu_t *G = &c->plan->gpu[c->gpu];
    int64_t b, e;
    fs_pl_chunk(c->n, (int)w, c->workers, &b, &e);
    double acc[FS_HW_MAX_GPUS] = {0};
    for (int64_t k = b; k < e; k++)
        for (uint32_t m = G->readers[k]; m; m &= m - 1) {
            int i = __builtin_ctz(m);
            acc[i] += c->p[i][G->rows[k]];
        }
    memcpy(c->part[w], acc, sizeof acc);
}

static void sum_all(void *vctx, int64_t w, int64_t w_end, int worker)
{
    (void)w_end, (void)worker;
    cost_ctx_t *c = vctx;
    int64_t b, e;
    fs_pl_chunk(c->n, (int)w, c->workers, &b, &e);
    double acc = 0;
    for (int64_t v = b; v < e; v++) acc += c->p[c->gpu][v];
    c->part[w][0] = acc;
}

/* Runs fn over n items and returns the per-reader sums in out. */
static void reduce(cost_ctx_t *c, int64_t n, fs_range_fn fn, int threads, double *out, int width)
{
    c->n = n;
    c->workers = fs_pl_workers(threads, n);
    fs_parallel_for(c->workers, c->workers, fn, c);
    for (int i = 0; i < width; i++) out[i] = 0;
    for (int w = 0; w < c->workers; w++)
        for (int i = 0; i < width; i++) out[i] += c->part[w][i];
}

static fs_status_t check_predict(const fs_plan_t *plan, const fs_hardware_t *hw, const double *p,
                                 const double *const *p_reader, fs_error_t *err)
{
    if (!plan || !hw || !p) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "predict: NULL plan, hardware or p");
    if (hw->num_gpus != plan->num_gpus)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "predict: hardware has %d GPUs, the plan %d", hw->num_gpus,
                        plan->num_gpus);
    fs_status_t st = fs_hotness_check(p, plan->num_nodes, "predict: p", 0, err);
    for (int i = 0; st == FS_OK && p_reader && i < plan->num_gpus; i++)
        if (p_reader[i]) st = fs_hotness_check(p_reader[i], plan->num_nodes, "predict: p_reader", 0, err);
    return st;
}

static void reader_seconds(const fs_hardware_t *hw, fs_cost_t *out, int i)
{
    double s = out->host_bytes[i] / (hw->host_gbps[i] * 1e9);
    for (int d = 0; d < out->num_gpus; d++)
        if (d != i && hw->link_gbps[i][d] > 0) s += out->bytes[i][d] / (hw->link_gbps[i][d] * 1e9);
    out->seconds[i] = s;
}

void fs_cost_finish(fs_cost_t *out, const fs_hardware_t *hw)
{
    out->max_seconds = 0;
    for (int i = 0; i < out->num_gpus; i++) {
        out->local_bytes[i] = out->bytes[i][i];
        out->peer_bytes[i] = 0;
        for (int d = 0; d < out->num_gpus; d++) out->peer_bytes[i] += d != i ? out->bytes[i][d] : 0;
        out->host_bytes[i] = out->bytes[i][FS_COST_HOST];
        reader_seconds(hw, out, i);
        if (out->seconds[i] > out->max_seconds) out->max_seconds = out->seconds[i];
    }
}

fs_status_t fs_plan_predict(const fs_plan_t *plan, const fs_hardware_t *hw, const double *p,
                            const double *const *p_reader, fs_cost_t *out, fs_error_t *err)
{
    fs_status_t st = check_predict(plan, hw, p, p_reader, err);
    if (st != FS_OK) return st;
    if (!out) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "predict: NULL output");
    cost_ctx_t *c = calloc(1, sizeof *c); /* 32 KiB of partials: not for the stack */
    if (!c) return fs_error(err, FS_ERR_NOMEM, "predict: out of memory");
    memset(out, 0, sizeof *out);
    int n = plan->num_gpus;
    out->num_gpus = n;
    c->plan = plan;
    for (int i = 0; i < n; i++) c->p[i] = p_reader && p_reader[i] ? p_reader[i] : p;
    double rb = (double)plan->row_bytes, sums[FS_HW_MAX_GPUS];
    for (c->gpu = 0; c->gpu < n; c->gpu++) {
        reduce(c, plan->gpu[c->gpu].num_rows, sum_held, 0, sums, n);
        for (int i = 0; i < n; i++) out->bytes[i][c->gpu] = rb * sums[i];
    }
    for (int i = 0; i < n; i++) {
        c->gpu = i; /* sum_all reads p[c->gpu] */
        double total, gpus = 0;
        reduce(c, plan->num_nodes, sum_all, 0, &total, 1);
        for (int d = 0; d < n; d++) gpus += out->bytes[i][d];
        out->bytes[i][FS_COST_HOST] = rb * total - gpus > 0 ? rb * total - gpus : 0; /* clamp: rounding */
    }
    fs_cost_finish(out, hw);
    free(c);
    return FS_OK;
}
