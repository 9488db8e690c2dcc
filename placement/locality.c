/* locality.c — preferred sets for locality-aware sampling (docs/algorithms.md §4,
 * P0 §4 (docs/papers.md); the design is in locality.h).
 *
 * The propagation v_{l+1} = A v_l is a pull: row i sums its neighbours'
 * values, so each worker writes only its own rows — unlike hotness.c's
 * push (A^T x), which needs per-worker partial arrays. The same pass counts
 * each row's neighbours in Q_l (the sampler's count array). Workers get row
 * ranges with equal edge counts (hub rows would unbalance equal row
 * counts). Top-K uses the planners' parallel radix argsort (descending,
 * ties by id), so sets are deterministic whatever the thread count.
 * Algorithm 2's controller is in kernels/fs_locality.c. */
#include "locality.h"

#include <stdlib.h>
#include <string.h>

#include "argsort.h"
#include "pl_internal.h"

static inline int64_t neighbor(const fs_csr_ref_t *g, int64_t pos)
{
    return g->index_dtype == FS_DTYPE_I32 ? ((const int32_t *)g->indices)[pos] : ((const int64_t *)g->indices)[pos];
}

static inline void set_bit(uint64_t *bm, int64_t v)
{
    bm[v >> 6] |= (uint64_t)1 << (v & 63);
}

void fs_las_defaults(fs_las_opts_t *o)
{
    o->num_levels = 3;
    o->k = FS_LAS_DEFAULT_K;
    o->threads = 0;
}

void fs_las_sets_free(fs_las_sets_t *sets)
{
    if (!sets) return;
    for (int l = 0; l < FS_MAX_HOPS; l++) free(sets->pref[l]), free(sets->count[l]);
    free(sets);
}

/* ---- the propagation pass --------------------------------------------------------- */

typedef struct {
    const fs_csr_ref_t *g;
    const int64_t *split;        /* [workers + 1] row ranges */
    const uint64_t *pref;        /* Q_l */
    uint16_t *count;             /* |row i ∩ Q_l|, saturated */
    const double *x;             /* v_l, or NULL: no propagation this level */
    double *y;                   /* v_{l+1} */
} pass_ctx_t;

static void pass_chunk(void *vctx, int64_t w, int64_t w_end, int worker)
{
    (void)w_end, (void)worker;
    pass_ctx_t *c = vctx;
    const fs_csr_ref_t *g = c->g;
    for (int64_t i = c->split[w]; i < c->split[w + 1]; i++) {
        double sum = 0;
        int64_t hits = 0;
        for (int64_t e = g->indptr[i]; e < g->indptr[i + 1]; e++) {
            int64_t j = neighbor(g, e);
            hits += fs_las_bit(c->pref, j);
            if (c->x) sum += c->x[j];
        }
        c->count[i] = (uint16_t)(hits < FS_LAS_COUNT_SAT ? hits : FS_LAS_COUNT_SAT);
        if (c->x) c->y[i] = sum;
    }
}

typedef struct {
    const uint64_t *bm;
    double *x;
} indicator_ctx_t;

static void indicator_range(void *vctx, int64_t b, int64_t e, int worker)
{
    (void)worker;
    indicator_ctx_t *c = vctx;
    for (int64_t v = b; v < e; v++) c->x[v] = fs_las_bit(c->bm, v);
}

/* ---- building ------------------------------------------------------------------ */

static fs_status_t check_build(const fs_csr_ref_t *g, const int64_t *b_rows, int64_t num_b, const fs_las_opts_t *o,
                               fs_las_sets_t **out, fs_error_t *err)
{
    if (!o || !out) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality sets: NULL options or output");
    if (o->num_levels < 1 || o->num_levels > FS_MAX_HOPS)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality sets: %d levels (need 1..%d)", o->num_levels,
                        FS_MAX_HOPS);
    if (o->k < 1) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality sets: K = %lld (need >= 1)", (long long)o->k);
    fs_status_t st = fs_csr_ref_check(g, o->threads, err);
    if (st != FS_OK) return st;
    if (num_b < 0 || (num_b > 0 && !b_rows))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality sets: bad GPU row set (%lld rows)", (long long)num_b);
    for (int64_t i = 0; i < num_b; i++)
        if ((uint64_t)b_rows[i] >= (uint64_t)g->num_nodes)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality sets: GPU row %lld at position %lld is not a "
                            "node id (N = %lld)", (long long)b_rows[i], (long long)i, (long long)g->num_nodes);
    return FS_OK;
}

/* Q_l = the top-K nodes of x (= v_l) with x > 0. */
static fs_status_t top_k(const double *x, int64_t n, int64_t k, int threads, int64_t *order, uint64_t *pref,
                         int64_t *size, fs_error_t *err)
{
    fs_status_t st = fs_argsort_desc(x, n, threads, order, err);
    if (st != FS_OK) return st;
    int64_t taken = 0;
    for (; taken < k && taken < n && x[order[taken]] > 0; taken++) set_bit(pref, order[taken]);
    *size = taken;
    return FS_OK;
}

typedef struct {
    double *x, *y;
    int64_t *order, *split;
    int workers;
} build_tmp_t;

static fs_status_t build_alloc(fs_las_sets_t *sets, int64_t n, int threads, build_tmp_t *t, fs_error_t *err)
{
    size_t words = (size_t)(n + 63) / 64 + 1, cells = (size_t)(n > 0 ? n : 1);
    for (int l = 0; l < sets->num_levels; l++) {
        sets->pref[l] = calloc(words, sizeof(uint64_t));
        sets->count[l] = malloc(cells * sizeof(uint16_t));
        if (!sets->pref[l] || !sets->count[l]) return fs_error(err, FS_ERR_NOMEM, "locality sets: out of memory");
    }
    t->workers = fs_pl_workers(threads, n);
    t->x = malloc(cells * sizeof *t->x);
    t->y = malloc(cells * sizeof *t->y);
    t->order = malloc(cells * sizeof *t->order);
    t->split = malloc((size_t)(t->workers + 1) * sizeof *t->split);
    if (!t->x || !t->y || !t->order || !t->split)
        return fs_error(err, FS_ERR_NOMEM, "locality sets: cannot allocate %lld nodes", (long long)n);
    return FS_OK;
}

static fs_status_t build_levels(const fs_csr_ref_t *g, const int64_t *b_rows, int64_t num_b, const fs_las_opts_t *o,
                                fs_las_sets_t *sets, build_tmp_t *t, fs_error_t *err)
{
    int64_t n = g->num_nodes;
    for (int64_t i = 0; i < num_b; i++) set_bit(sets->pref[0], b_rows[i]);
    indicator_ctx_t ic = {sets->pref[0], t->x};
    fs_parallel_for(o->threads, n, indicator_range, &ic); /* v_1 = 1_B */
    for (int64_t w = 0; w < (n + 63) / 64; w++) sets->size[0] += __builtin_popcountll(sets->pref[0][w]);
    fs_pl_edge_split(g->indptr, g->num_nodes, t->workers, t->split);
    for (int l = 0; l < sets->num_levels; l++) {
        if (l > 0) {
            fs_status_t st = top_k(t->x, n, o->k, o->threads, t->order, sets->pref[l], &sets->size[l], err);
            if (st != FS_OK) return st;
        }
        int propagate = l + 1 < sets->num_levels;
        pass_ctx_t c = {g, t->split, sets->pref[l], sets->count[l], propagate ? t->x : NULL, t->y};
        fs_parallel_for(t->workers, t->workers, pass_chunk, &c);
        if (propagate) {
            double *tmp = t->x;
            t->x = t->y, t->y = tmp;
        }
    }
    return FS_OK;
}

fs_status_t fs_las_sets_build(const fs_csr_ref_t *g, const int64_t *b_rows, int64_t num_b, const fs_las_opts_t *o,
                              fs_las_sets_t **out, fs_error_t *err)
{
    if (out) *out = NULL;
    fs_status_t st = check_build(g, b_rows, num_b, o, out, err);
    if (st != FS_OK) return st;
    fs_las_sets_t *sets = calloc(1, sizeof *sets);
    if (!sets) return fs_error(err, FS_ERR_NOMEM, "locality sets: out of memory");
    sets->num_nodes = g->num_nodes;
    sets->num_levels = o->num_levels;
    build_tmp_t t = {0};
    st = build_alloc(sets, g->num_nodes, o->threads, &t, err);
    if (st == FS_OK) st = build_levels(g, b_rows, num_b, o, sets, &t, err);
    free(t.x), free(t.y), free(t.order), free(t.split);
    if (st != FS_OK) {
        fs_las_sets_free(sets);
        return st;
    }
    *out = sets;
    return FS_OK;
}

fs_status_t fs_las_reader_rows(const fs_plan_t *plan, int reader, int64_t **rows, int64_t *count, fs_error_t *err)
{
    if (!plan || !rows || !count) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality rows: NULL argument");
    *rows = NULL, *count = 0;
    int64_t n = plan->num_nodes;
    int8_t *dev = malloc((size_t)(n > 0 ? n : 1));
    if (!dev) return fs_error(err, FS_ERR_NOMEM, "locality rows: cannot allocate %lld routes", (long long)n);
    fs_status_t st = fs_plan_route(plan, reader, dev, NULL, err);
    int64_t m = 0;
    for (int64_t v = 0; st == FS_OK && v < n; v++) m += dev[v] >= 0;
    int64_t *out = st == FS_OK ? malloc(sizeof *out * (size_t)(m > 0 ? m : 1)) : NULL;
    if (st == FS_OK && !out) st = fs_error(err, FS_ERR_NOMEM, "locality rows: out of memory");
    if (st == FS_OK) {
        int64_t k = 0;
        for (int64_t v = 0; v < n; v++)
            if (dev[v] >= 0) out[k++] = v;
        *rows = out, *count = m;
    }
    free(dev);
    return st;
}

void fs_las_locality(const fs_las_sets_t *sets, double s, fs_locality_t *out)
{
    memset(out, 0, sizeof *out);
    out->s = s;
    if (!sets) return;
    out->num_levels = sets->num_levels;
    out->num_nodes = sets->num_nodes;
    for (int l = 0; l < sets->num_levels; l++) out->pref[l] = sets->pref[l], out->count[l] = sets->count[l];
}
