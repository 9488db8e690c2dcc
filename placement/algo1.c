/* algo1.c — memory budgets (docs/algorithms.md §5) and the two replication rules of
 * P0 (docs/papers.md; restated in docs/algorithms.md §3): Rule 1 for a GPU alone, the corrected
 * Algorithm 1 for a group of GPUs with fast links.
 *
 * Both rules read the hotness order once (the caller sorts; argsort.h), so
 * after the O(N log N) sort they cost O(n * BSIZE): 10M nodes place in well
 * under a second. */
#include <math.h>
#include <string.h>

#include "plan.h"

/* ---- budgets ------------------------------------------------------------------ */

void fs_budget_defaults(fs_budget_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->topo_ratio = 1.0;
    o->feat_ratio = 1.0;
}

static int bad_ratio(double r)
{
    return !(r >= 0 && r <= 1); /* NaN fails too */
}

static fs_status_t check_budget_inputs(const fs_hardware_t *hw, const fs_budget_opts_t *o, const fs_data_size_t *d,
                                       fs_error_t *err)
{
    fs_status_t st = fs_hw_validate(hw, err);
    if (st != FS_OK) return st;
    if (!o || !d) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "budget: NULL options or data size");
    if (o->reserve_bytes < 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "budget: negative reserve (%lld bytes)",
                        (long long)o->reserve_bytes);
    if (bad_ratio(o->topo_ratio) || bad_ratio(o->feat_ratio))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "budget: topology ratio %g / feature ratio %g (need [0, 1])",
                        o->topo_ratio, o->feat_ratio);
    if (d->num_rows < 0 || d->row_bytes <= 0 || d->topo_bytes < 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "budget: %lld rows of %lld bytes, topology %lld bytes",
                        (long long)d->num_rows, (long long)d->row_bytes, (long long)d->topo_bytes);
    for (int g = 0; g < hw->num_gpus; g++)
        if (o->reserve_bytes > hw->memory_bytes[g])
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "budget: reserve of %lld bytes exceeds GPU %d's %lld bytes",
                            (long long)o->reserve_bytes, g, (long long)hw->memory_bytes[g]);
    return FS_OK;
}

static int64_t demand(double ratio, double total_bytes, int parts, int n)
{
    return (int64_t)ceil(ratio * total_bytes * parts / n);
}

fs_status_t fs_budget_split(const fs_hardware_t *hw, const fs_budget_opts_t *o, const fs_data_size_t *d,
                            const int *topo_parts, const int *feat_parts, fs_budget_t *out, fs_error_t *err)
{
    fs_status_t st = check_budget_inputs(hw, o, d, err);
    if (st != FS_OK) return st;
    if (!out) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "budget: NULL output");
    int n = hw->num_gpus;
    memset(out, 0, sizeof *out);
    out->num_gpus = n;
    out->feature_first = o->feature_first != 0;
    for (int g = 0; g < n; g++) {
        int tp = topo_parts ? topo_parts[g] : n, fp = feat_parts ? feat_parts[g] : n;
        if (tp < 0 || tp > n || fp < 0 || fp > n)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "budget: GPU %d stores %d / %d of %d partitions", g, tp,
                            fp, n);
        int64_t avail = hw->memory_bytes[g] - o->reserve_bytes;
        int64_t want_topo = demand(o->topo_ratio, (double)d->topo_bytes, tp, n);
        /* features in whole rows: a partial row is useless */
        int64_t want_rows = (int64_t)ceil(o->feat_ratio * (double)d->num_rows * fp / n);
        int64_t want_feat = want_rows * d->row_bytes;
        if (o->feature_first) {
            out->feat_bytes[g] = want_feat < avail ? want_feat : avail;
            int64_t left = avail - out->feat_bytes[g];
            out->topo_bytes[g] = want_topo < left ? want_topo : left;
        } else {
            out->topo_bytes[g] = want_topo < avail ? want_topo : avail;
            int64_t left = avail - out->topo_bytes[g];
            out->feat_bytes[g] = want_feat < left ? want_feat : left;
        }
        out->avail_bytes[g] = avail;
        out->bsize[g] = out->feat_bytes[g] / d->row_bytes;
        if (out->bsize[g] > d->num_rows) out->bsize[g] = d->num_rows;
    }
    return FS_OK;
}

/* ---- Rule 1 ------------------------------------------------------------------- */

fs_status_t fs_rule1(const int64_t *order, int64_t num_nodes, int64_t bsize, int64_t *rows, int64_t *count,
                     fs_error_t *err)
{
    if (num_nodes < 0 || bsize < 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "rule 1: %lld nodes, BSIZE %lld", (long long)num_nodes,
                        (long long)bsize);
    int64_t k = bsize < num_nodes ? bsize : num_nodes;
    if (k > 0 && (!order || !rows)) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "rule 1: NULL array");
    if (k > 0) memcpy(rows, order, sizeof *rows * (size_t)k); /* the top-BSIZE rows by p (§3 Rule 1) */
    if (count) *count = k;
    return FS_OK;
}

/* ---- Algorithm 1 ----------------------------------------------------------------- */

/* Devices by p_sum ascending, ties by index (n <= 16: insertion sort). */
static void order_by_psum(const double *p_sum, int n, int *dev)
{
    for (int d = 0; d < n; d++) {
        int at = d;
        while (at > 0 && p_sum[dev[at - 1]] > p_sum[d]) dev[at] = dev[at - 1], at--;
        dev[at] = d;
    }
}

fs_status_t fs_algo1(const double *p, const int64_t *order, int64_t num_nodes, int n, int64_t bsize, double alpha,
                     int64_t *B, int64_t *count, fs_error_t *err)
{
    if (n < 1 || n > FS_HW_MAX_GPUS)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "algorithm 1: %d GPUs (need 1..%d)", n, FS_HW_MAX_GPUS);
    if (num_nodes < 0 || bsize < 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "algorithm 1: %lld nodes, BSIZE %lld", (long long)num_nodes,
                        (long long)bsize);
    if (!(alpha >= 0 && alpha <= 1))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "algorithm 1: alpha %g (need [0, 1])", alpha);
    int64_t bs = bsize < num_nodes ? bsize : num_nodes;
    if (count) *count = bs;
    if (bs == 0) return FS_OK;
    if (!p || !order || !B) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "algorithm 1: NULL array");
    /* docs/algorithms.md §3, corrected loop: every device starts with V[0..BSIZE-1];
     * round r replaces slot BSIZE-1-r (the coldest not yet evicted) on every
     * device but the one with the largest p_sum, which keeps a copy of it. */
    double p_sum[FS_HW_MAX_GPUS] = {0};
    int dev[FS_HW_MAX_GPUS];
    for (int d = 0; d < n; d++) memcpy(B + (size_t)d * (size_t)bsize, order, sizeof *B * (size_t)bs);
    int64_t k = 0;
    for (int64_t r = 0; r < bs; r++) {
        int64_t slot = bs - 1 - r, old = order[slot];
        order_by_psum(p_sum, n, dev);
        for (int t = 0; t < n - 1; t++) {
            if (bs + k >= num_nodes) return FS_OK;
            int64_t next = order[bs + k];
            if (!(p[next] > alpha * p[old])) return FS_OK; /* replicating `old` is now worth more */
            B[(size_t)dev[t] * (size_t)bsize + (size_t)slot] = next;
            p_sum[dev[t]] += p[next];
            k++;
        }
    }
    return FS_OK;
}
