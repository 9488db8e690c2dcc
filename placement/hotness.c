/* hotness.c — the three hotness estimators of docs/algorithms.md §1.
 *
 * Every estimator is a scatter: an edge (v, u) adds to u. Scattering from
 * several threads into one array would need atomics, and hub nodes make them
 * contend; instead each worker scatters into its own partial array over an
 * equal share of the edges (or of the batches), and a second parallel pass
 * sums the partials per node. Partials are doubles for degree and reach
 * (exact for integer counts below 2^53, and reach is a path count that can
 * outgrow any integer type) and uint32 for presampling (a node appears at
 * most once per batch). Sums of integers are exact, so results never depend
 * on the worker count. */
#include "hotness.h"

#include <stdlib.h>
#include <string.h>

#include "fs_rng.h"
#include "pl_internal.h"

/* Per-worker partial arrays are capped at this many bytes in total. */
#define PARTIALS_BUDGET (2LL << 30)

static int workers_for(int threads, int64_t items, int64_t num_nodes, size_t counter_bytes)
{
    int T = fs_pl_workers(threads, items);
    int64_t cap = PARTIALS_BUDGET / ((num_nodes > 0 ? num_nodes : 1) * (int64_t)counter_bytes);
    if (cap < 1) cap = 1;
    return T > cap ? (int)cap : T;
}

static inline int64_t neighbor(const fs_csr_ref_t *g, int64_t pos)
{
    return g->index_dtype == FS_DTYPE_I32 ? ((const int32_t *)g->indices)[pos] : ((const int64_t *)g->indices)[pos];
}

/* ---- input checks ------------------------------------------------------------- */

typedef struct {
    const fs_csr_ref_t *g;
    int64_t n_items;
    int workers, pass;           /* pass 0: indptr, pass 1: indices */
    int64_t first_bad[256];
} csr_check_ctx_t;

static void check_chunk(void *vctx, int64_t w, int64_t w_end, int worker)
{
    (void)w_end, (void)worker;
    csr_check_ctx_t *c = vctx;
    const fs_csr_ref_t *g = c->g;
    int64_t b, e;
    fs_pl_chunk(c->n_items, (int)w, c->workers, &b, &e);
    c->first_bad[w] = -1;
    for (int64_t i = b; i < e; i++) {
        int bad = c->pass == 0 ? g->indptr[i + 1] < g->indptr[i] : (uint64_t)neighbor(g, i) >= (uint64_t)g->num_nodes;
        if (bad) {
            c->first_bad[w] = i;
            return;
        }
    }
}

static int64_t first_bad_in(csr_check_ctx_t *c, int pass, int64_t n_items, int threads)
{
    c->pass = pass, c->n_items = n_items, c->workers = fs_pl_workers(threads, n_items);
    fs_parallel_for(c->workers, c->workers, check_chunk, c);
    for (int w = 0; w < c->workers && n_items > 0; w++)
        if (c->first_bad[w] >= 0) return c->first_bad[w];
    return -1;
}

fs_status_t fs_csr_ref_check(const fs_csr_ref_t *g, int threads, fs_error_t *err)
{
    if (!g || g->num_nodes < 0 || !g->indptr)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "graph: NULL CSR or negative node count");
    if (g->index_dtype != FS_DTYPE_I32 && g->index_dtype != FS_DTYPE_I64)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "graph: index dtype %s (need int32 or int64)",
                        fs_dtype_name(g->index_dtype));
    if (g->indptr[0] != 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "graph: indptr[0] = %lld (must be 0)", (long long)g->indptr[0]);
    if (g->indptr[g->num_nodes] > 0 && !g->indices)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "graph: NULL indices");
    csr_check_ctx_t c = {.g = g};
    int64_t bad = first_bad_in(&c, 0, g->num_nodes, threads);
    if (bad >= 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "graph: indptr decreases at row %lld (%lld -> %lld)",
                        (long long)bad, (long long)g->indptr[bad], (long long)g->indptr[bad + 1]);
    bad = first_bad_in(&c, 1, g->indptr[g->num_nodes], threads);
    if (bad >= 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "graph: indices[%lld] = %lld is not a node id (N = %lld)",
                        (long long)bad, (long long)neighbor(g, bad), (long long)g->num_nodes);
    return FS_OK;
}

fs_status_t fs_pl_check_train(const char *who, const int64_t *train, int64_t num_train, int64_t num_nodes,
                              fs_error_t *err)
{
    if (num_train <= 0 || !train)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s: no training nodes (%lld)", who, (long long)num_train);
    for (int64_t i = 0; i < num_train; i++)
        if ((uint64_t)train[i] >= (uint64_t)num_nodes)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s: train[%lld] = %lld is not a node id (N = %lld)", who,
                            (long long)i, (long long)train[i], (long long)num_nodes);
    return FS_OK;
}

/* ---- partial arrays -------------------------------------------------------------- */

/* Worker 0 scatters straight into the output; workers 1..T-1 into partials. */
typedef struct {
    int workers;
    int64_t n;
    double *out;
    double **part;   /* [workers]; part[0] = out */
} partials_t;

static fs_status_t partials_init(partials_t *pp, int workers, int64_t n, double *out, fs_error_t *err)
{
    pp->workers = workers, pp->n = n, pp->out = out;
    pp->part = calloc((size_t)workers, sizeof *pp->part);
    if (!pp->part) return fs_error(err, FS_ERR_NOMEM, "hotness: out of memory");
    pp->part[0] = out;
    for (int w = 1; w < workers; w++) {
        pp->part[w] = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
        if (!pp->part[w]) return fs_error(err, FS_ERR_NOMEM, "hotness: cannot allocate %lld counters", (long long)n);
    }
    return FS_OK;
}

static void partials_free(partials_t *pp)
{
    for (int w = 1; pp->part && w < pp->workers; w++) free(pp->part[w]);
    free(pp->part);
    pp->part = NULL;
}

static void zero_range(void *vctx, int64_t b, int64_t e, int worker)
{
    (void)worker;
    partials_t *pp = vctx;
    for (int w = 0; w < pp->workers; w++) memset(pp->part[w] + b, 0, sizeof(double) * (size_t)(e - b));
}

static void sum_range(void *vctx, int64_t b, int64_t e, int worker)
{
    (void)worker;
    partials_t *pp = vctx;
    for (int w = 1; w < pp->workers; w++)
        for (int64_t v = b; v < e; v++) pp->out[v] += pp->part[w][v];
}

/* ---- degree ------------------------------------------------------------------------ */

typedef struct {
    const fs_csr_ref_t *g;
    partials_t *pp;
    int64_t edges;
} degree_ctx_t;

static void count_chunk(void *vctx, int64_t w, int64_t w_end, int worker)
{
    (void)w_end, (void)worker;
    degree_ctx_t *c = vctx;
    double *cnt = c->pp->part[w];
    int64_t b, e;
    fs_pl_chunk(c->edges, (int)w, c->pp->workers, &b, &e);
    if (c->g->index_dtype == FS_DTYPE_I32) {
        const int32_t *idx = c->g->indices;
        for (int64_t i = b; i < e; i++) cnt[idx[i]] += 1.0;
    } else {
        const int64_t *idx = c->g->indices;
        for (int64_t i = b; i < e; i++) cnt[idx[i]] += 1.0;
    }
}

fs_status_t fs_hotness_degree(const fs_csr_ref_t *g, int threads, double *p, fs_error_t *err)
{
    fs_status_t st = fs_csr_ref_check(g, threads, err);
    if (st != FS_OK) return st;
    if (!p) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "degree hotness: NULL output");
    int64_t edges = g->indptr[g->num_nodes];
    partials_t pp = {0};
    st = partials_init(&pp, workers_for(threads, edges, g->num_nodes, sizeof(double)), g->num_nodes, p, err);
    if (st == FS_OK) {
        degree_ctx_t c = {g, &pp, edges};
        fs_parallel_for(threads, g->num_nodes, zero_range, &pp);
        fs_parallel_for(pp.workers, pp.workers, count_chunk, &c);
        fs_parallel_for(threads, g->num_nodes, sum_range, &pp);
    }
    partials_free(&pp);
    return st;
}

/* ---- L-hop reach ---------------------------------------------------------------------- */

typedef struct {
    const fs_csr_ref_t *g;
    partials_t *pp;
    const double *x;          /* mass after the previous hop */
    int64_t *row_split;       /* [workers + 1] row ranges with equal edge counts */
} reach_ctx_t;

/* First row whose neighbour list starts at or after edge e. */
static int64_t row_at_edge(const int64_t *indptr, int64_t n, int64_t e)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (indptr[mid] < e) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

void fs_pl_edge_split(const int64_t *indptr, int64_t n, int workers, int64_t *split)
{
    int64_t edges = indptr[n];
    split[0] = 0;
    for (int w = 1; w < workers; w++) split[w] = row_at_edge(indptr, n, edges * w / workers);
    split[workers] = n;
}

/* One step of x' = A^T x on the worker's rows: each row pushes its mass to
 * its neighbours (rows without mass are skipped: early hops touch few). */
static void push_chunk(void *vctx, int64_t w, int64_t w_end, int worker)
{
    (void)w_end, (void)worker;
    reach_ctx_t *c = vctx;
    const fs_csr_ref_t *g = c->g;
    double *out = c->pp->part[w];
    for (int64_t v = c->row_split[w]; v < c->row_split[w + 1]; v++) {
        double m = c->x[v];
        if (m == 0) continue;
        for (int64_t i = g->indptr[v]; i < g->indptr[v + 1]; i++) out[neighbor(g, i)] += m;
    }
}

typedef struct {
    double *p;
    double scale;
} scale_ctx_t;

static void scale_range(void *vctx, int64_t b, int64_t e, int worker)
{
    (void)worker;
    scale_ctx_t *c = vctx;
    for (int64_t v = b; v < e; v++) c->p[v] *= c->scale;
}

static fs_status_t reach_hops(const fs_csr_ref_t *g, int hops, int threads, double *x, double *p, fs_error_t *err)
{
    int64_t n = g->num_nodes, edges = g->indptr[n];
    partials_t pp = {0};
    fs_status_t st = partials_init(&pp, workers_for(threads, edges, n, sizeof(double)), n, p, err);
    int64_t *split = malloc(sizeof *split * (size_t)(pp.workers + 1));
    if (st == FS_OK && !split) st = fs_error(err, FS_ERR_NOMEM, "reach hotness: out of memory");
    if (st == FS_OK) fs_pl_edge_split(g->indptr, n, pp.workers, split);
    reach_ctx_t c = {g, &pp, x, split};
    for (int h = 0; st == FS_OK && h < hops; h++) {
        fs_parallel_for(threads, n, zero_range, &pp);
        fs_parallel_for(pp.workers, pp.workers, push_chunk, &c);
        fs_parallel_for(threads, n, sum_range, &pp);
        if (h + 1 < hops) memcpy(x, p, sizeof(double) * (size_t)n);
    }
    free(split);
    partials_free(&pp);
    return st;
}

fs_status_t fs_hotness_reach(const fs_csr_ref_t *g, const int64_t *train, int64_t num_train, int hops, int threads,
                             double *p, fs_error_t *err)
{
    fs_status_t st = fs_csr_ref_check(g, threads, err);
    if (st != FS_OK) return st;
    if (!p) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "reach hotness: NULL output");
    if (hops < 1) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "reach hotness: %d hops (need >= 1)", hops);
    if ((st = fs_pl_check_train("hotness", train, num_train, g->num_nodes, err)) != FS_OK) return st;
    double *x = calloc((size_t)(g->num_nodes > 0 ? g->num_nodes : 1), sizeof *x);
    if (!x) return fs_error(err, FS_ERR_NOMEM, "reach hotness: cannot allocate %lld nodes", (long long)g->num_nodes);
    for (int64_t i = 0; i < num_train; i++) x[train[i]] += 1.0; /* t: duplicates count twice */
    st = reach_hops(g, hops, threads, x, p, err);
    free(x);
    if (st == FS_OK) {
        scale_ctx_t sc = {p, 1.0 / (double)num_train};
        fs_parallel_for(threads, g->num_nodes, scale_range, &sc);
    }
    return st;
}

/* ---- presampling ----------------------------------------------------------------------- */

void fs_presample_defaults(fs_presample_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->num_hops = 3;
    o->fanout[0] = 15, o->fanout[1] = 10, o->fanout[2] = 5;
    o->mode = FS_SAMPLE_UNIFORM;
    o->batch_size = 1024;
    o->epochs = 1;
    o->seed = 1;
}

void fs_presample_epoch_order(const int64_t *train, int64_t num_train, uint64_t seed, int epoch, int64_t *out)
{
    memcpy(out, train, sizeof *out * (size_t)num_train);
    fs_rng_t rng = fs_rng_make(seed, 0x5eed0000ULL + (uint64_t)epoch);
    for (int64_t i = num_train - 1; i > 0; i--) {
        int64_t j = (int64_t)fs_rng_below(&rng, (uint64_t)i + 1), t = out[i];
        out[i] = out[j], out[j] = t;
    }
}

void fs_presample_request(const fs_presample_opts_t *o, int epoch, int64_t batch, fs_sample_req_t *req)
{
    memset(req, 0, sizeof *req);
    req->num_hops = o->num_hops;
    for (int h = 0; h < o->num_hops && h < FS_MAX_HOPS; h++) req->fanout[h] = o->fanout[h], req->mode[h] = o->mode;
    req->seed = fs_rng_at(o->seed, (uint64_t)epoch + 1, (uint64_t)batch);
}

typedef struct {
    const fs_presample_opts_t *o;
    fs_csr_view_t view;
    const int64_t *order;        /* this epoch's shuffled training ids */
    int64_t num_train;
    int epoch, workers;
    int64_t num_nodes;
    fs_sampler_t **sampler;      /* [workers] */
    uint32_t **count;            /* [workers][num_nodes] */
    fs_error_t *werr;            /* [workers] first error of each worker */
} presample_ctx_t;

static void sample_batches(void *vctx, int64_t b, int64_t e, int worker)
{
    presample_ctx_t *c = vctx;
    fs_error_t *err = &c->werr[worker];
    uint32_t *cnt = c->count[worker];
    for (int64_t batch = b; batch < e && err->code == FS_OK; batch++) {
        int64_t first = batch * c->o->batch_size, size = c->num_train - first;
        if (size > c->o->batch_size) size = c->o->batch_size;
        fs_sample_req_t req;
        fs_sample_result_t res;
        fs_presample_request(c->o, c->epoch, batch, &req);
        if (fs_sample_cpu(c->sampler[worker], &c->view, c->order + first, size, &req, &res, NULL, err) != FS_OK)
            return;
        for (int64_t k = 0; k < res.num_nodes; k++) cnt[res.nodes[k]]++;
    }
}

typedef struct {
    uint32_t *const *count;
    int workers;
    double *out;
} sum_counts_ctx_t;

static void sum_counts(void *vctx, int64_t b, int64_t e, int worker)
{
    (void)worker;
    sum_counts_ctx_t *s = vctx;
    for (int64_t v = b; v < e; v++) {
        double total = 0;
        for (int w = 0; w < s->workers; w++) total += s->count[w][v];
        s->out[v] = total;
    }
}

void fs_pl_sum_counts(uint32_t *const *count, int workers, int64_t n, int threads, double *out)
{
    sum_counts_ctx_t s = {count, workers, out};
    fs_parallel_for(threads, n, sum_counts, &s);
}

static fs_status_t check_presample_opts(const fs_presample_opts_t *o, int64_t num_train, fs_error_t *err)
{
    if (!o) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "presample: NULL options");
    if (o->num_hops < 1 || o->num_hops > FS_MAX_HOPS)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "presample: %d hops (need 1..%d)", o->num_hops, FS_MAX_HOPS);
    if (o->batch_size <= 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "presample: batch size %lld", (long long)o->batch_size);
    if (o->epochs < 1) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "presample: %d epochs (need >= 1)", o->epochs);
    /* uint32 counters: a node is counted at most once per batch */
    double batches = (double)o->epochs * (double)((num_train + o->batch_size - 1) / o->batch_size);
    if (batches >= 4294967295.0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "presample: %.0f batches overflow the counters", batches);
    return FS_OK;
}

static fs_status_t presample_setup(presample_ctx_t *c, fs_error_t *err)
{
    c->sampler = calloc((size_t)c->workers, sizeof *c->sampler);
    c->count = calloc((size_t)c->workers, sizeof *c->count);
    c->werr = calloc((size_t)c->workers, sizeof *c->werr);
    if (!c->sampler || !c->count || !c->werr) return fs_error(err, FS_ERR_NOMEM, "presample: out of memory");
    for (int w = 0; w < c->workers; w++) {
        c->count[w] = calloc((size_t)(c->num_nodes > 0 ? c->num_nodes : 1), sizeof(uint32_t));
        if (!c->count[w]) return fs_error(err, FS_ERR_NOMEM, "presample: cannot allocate counters");
        fs_status_t st = fs_sampler_create(&c->sampler[w], err);
        if (st != FS_OK) return st;
    }
    return FS_OK;
}

static void presample_teardown(presample_ctx_t *c)
{
    for (int w = 0; w < c->workers; w++) {
        if (c->sampler) fs_sampler_destroy(c->sampler[w]);
        if (c->count) free(c->count[w]);
    }
    free(c->sampler), free(c->count), free(c->werr);
}

static fs_status_t presample_epochs(presample_ctx_t *c, const int64_t *train, int64_t *order, fs_error_t *err)
{
    const fs_presample_opts_t *o = c->o;
    int64_t batches = (c->num_train + o->batch_size - 1) / o->batch_size;
    c->order = order;
    for (c->epoch = 0; c->epoch < o->epochs; c->epoch++) {
        fs_presample_epoch_order(train, c->num_train, o->seed, c->epoch, order);
        fs_parallel_for_dynamic(c->workers, batches, 1, sample_batches, c);
        for (int w = 0; w < c->workers; w++) {
            if (c->werr[w].code != FS_OK) {
                *err = c->werr[w];
                fs_error_prefix(err, "presample epoch %d", c->epoch);
                return c->werr[w].code;
            }
        }
    }
    return FS_OK;
}

fs_status_t fs_hotness_presample(const fs_csr_ref_t *g, const int64_t *train, int64_t num_train,
                                 const fs_presample_opts_t *o, double *p, fs_error_t *err)
{
    fs_error_t local = {0};
    if (!err) err = &local; /* worker errors are copied out through it */
    fs_status_t st = check_presample_opts(o, num_train, err);
    if (st == FS_OK) st = fs_csr_ref_check(g, o->threads, err);
    if (st == FS_OK) st = fs_pl_check_train("hotness", train, num_train, g->num_nodes, err);
    if (st == FS_OK && !p) st = fs_error(err, FS_ERR_INVALID_ARGUMENT, "presample: NULL output");
    if (st != FS_OK) return st;
    int64_t batches = (num_train + o->batch_size - 1) / o->batch_size;
    presample_ctx_t c = {.o = o, .num_train = num_train, .num_nodes = g->num_nodes,
                         .workers = workers_for(o->threads, batches, g->num_nodes, sizeof(uint32_t))};
    fs_csr_view_init(&c.view, g->num_nodes, g->indptr, g->indices, g->index_dtype, g->weights);
    int64_t *order = malloc(sizeof *order * (size_t)num_train);
    st = order ? presample_setup(&c, err) : fs_error(err, FS_ERR_NOMEM, "presample: out of memory");
    if (st == FS_OK) st = presample_epochs(&c, train, order, err);
    if (st == FS_OK) {
        fs_pl_sum_counts(c.count, c.workers, g->num_nodes, o->threads, p);
    }
    presample_teardown(&c);
    free(order);
    return st;
}
