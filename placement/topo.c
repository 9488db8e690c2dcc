/* topo.c — XGNN's topology partitioner (docs/algorithms.md §5, P1 §4.3, docs/papers.md).
 *
 * Nodes are relabelled by hotness (new id = rank), so the hottest prefix is
 * a contiguous range of new ids; new_id mod n spreads it evenly over the n
 * partitions with no per-node map beyond the relabelling itself. The prefix
 * grows node by node until some GPU storing the next node's partition would
 * exceed its topology budget: replicated partitions count on every holder,
 * which is why the budget check needs the solver's placement first. */
#include <stdlib.h>
#include <string.h>

#include "argsort.h"
#include "pl_internal.h"
#include "plan.h"

typedef struct {
    const int64_t *old_of_new;
    int64_t *new_of_old;
} invert_ctx_t;

static void invert_range(void *vctx, int64_t b, int64_t e, int worker)
{
    (void)worker;
    invert_ctx_t *c = vctx;
    for (int64_t k = b; k < e; k++) c->new_of_old[c->old_of_new[k]] = k;
}

/* The longest hot prefix that fits: a node costs its indptr entry and its
 * neighbour ids on every GPU holding its partition. */
static int64_t fit_prefix(const fs_topo_split_t *t, const int64_t *indptr, int64_t index_bytes,
                          const uint32_t *holders, const int64_t *budget, int64_t *used)
{
    int n = t->num_parts;
    for (int g = 0; g < n; g++) used[g] = 0;
    for (int q = 0; q < n; q++) /* each partition's closing indptr entry */
        for (uint32_t m = holders[q]; m; m &= m - 1) used[__builtin_ctz(m)] += 8;
    for (int g = 0; g < n; g++)
        if (used[g] > budget[g]) return 0;
    for (int64_t k = 0; k < t->num_nodes; k++) {
        int64_t v = t->old_of_new[k], bytes = 8 + (indptr[v + 1] - indptr[v]) * index_bytes;
        uint32_t m = holders[k % n];
        for (uint32_t h = m; h; h &= h - 1)
            if (used[__builtin_ctz(h)] + bytes > budget[__builtin_ctz(h)]) return k;
        for (uint32_t h = m; h; h &= h - 1) used[__builtin_ctz(h)] += bytes;
    }
    return t->num_nodes;
}

static void count_parts(fs_topo_split_t *t, const int64_t *indptr, int64_t index_bytes)
{
    int n = t->num_parts;
    for (int q = 0; q < n; q++) t->part_rows[q] = 0, t->part_bytes[q] = 8;
    for (int64_t k = 0; k < t->hot; k++) {
        int64_t v = t->old_of_new[k];
        t->part_rows[k % n]++;
        t->part_bytes[k % n] += 8 + (indptr[v + 1] - indptr[v]) * index_bytes;
    }
}

fs_status_t fs_topo_split(const double *hot, const int64_t *order, int64_t num_nodes, const int64_t *indptr,
                          int64_t index_bytes, int n, const uint32_t *holds, const int64_t *budget, int threads,
                          fs_topo_split_t *out, fs_error_t *err)
{
    if (!out || !indptr || !holds || !budget || num_nodes < 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "topology split: NULL argument or negative node count");
    if (n < 1 || n > FS_HW_MAX_GPUS)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "topology split: %d partitions (need 1..%d)", n, FS_HW_MAX_GPUS);
    if (index_bytes != 4 && index_bytes != 8)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "topology split: index width %lld bytes (need 4 or 8)",
                        (long long)index_bytes);
    uint32_t holders[FS_HW_MAX_GPUS] = {0};
    for (int g = 0; g < n; g++) {
        if (budget[g] < 0)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "topology split: GPU %d has a negative budget", g);
        for (int q = 0; q < n; q++)
            if (holds[g] & (1u << q)) holders[q] |= 1u << g;
    }
    memset(out, 0, sizeof *out);
    out->num_parts = n, out->num_nodes = num_nodes;
    size_t bytes = sizeof(int64_t) * (size_t)(num_nodes > 0 ? num_nodes : 1);
    out->old_of_new = malloc(bytes), out->new_of_old = malloc(bytes);
    if (!out->old_of_new || !out->new_of_old) {
        fs_topo_split_free(out);
        return fs_error(err, FS_ERR_NOMEM, "topology split: cannot allocate %lld nodes", (long long)num_nodes);
    }
    fs_status_t st = FS_OK;
    if (order) memcpy(out->old_of_new, order, sizeof *order * (size_t)num_nodes);
    else st = fs_argsort_desc(hot, num_nodes, threads, out->old_of_new, err);
    if (st != FS_OK) {
        fs_topo_split_free(out);
        return st;
    }
    invert_ctx_t ic = {out->old_of_new, out->new_of_old};
    fs_parallel_for(threads, num_nodes, invert_range, &ic);
    int64_t used[FS_HW_MAX_GPUS];
    out->hot = fit_prefix(out, indptr, index_bytes, holders, budget, used);
    count_parts(out, indptr, index_bytes);
    return FS_OK;
}

void fs_topo_split_free(fs_topo_split_t *t)
{
    if (!t) return;
    free(t->old_of_new), free(t->new_of_old);
    t->old_of_new = t->new_of_old = NULL;
}
