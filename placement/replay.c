/* replay.c — measured traffic of plans under real mini-batches (replay.h).
 *
 * Each plan's routes are made dense once (fs_plan_route: one int8 source
 * per node and reader), so routing a batch is a table lookup per gathered
 * row. Batches are claimed dynamically by workers (batch costs vary with
 * the hubs they touch); each worker has its own sampler and its own partial
 * counters, summed at the end — integer sums, so the result does not depend
 * on the worker count or the order batches ran in. */
#include "replay.h"

#include <stdlib.h>
#include <string.h>

#include "pl_internal.h"

void fs_replay_defaults(fs_replay_opts_t *o)
{
    memset(o, 0, sizeof *o);
    fs_presample_defaults(&o->sample);
    o->sample.seed = 2; /* not presampling's default: a replay must not measure the batches hotness came from */
}

/* ---- input checks ------------------------------------------------------------- */

static fs_status_t check_opts(const fs_replay_opts_t *o, fs_error_t *err)
{
    if (!o) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "replay: NULL options");
    const fs_presample_opts_t *s = &o->sample;
    if (s->num_hops < 1 || s->num_hops > FS_MAX_HOPS)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "replay: %d hops (need 1..%d)", s->num_hops, FS_MAX_HOPS);
    for (int h = 0; h < s->num_hops; h++)
        if (s->fanout[h] <= 0 && s->fanout[h] != FS_FANOUT_ALL)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "replay: fanout %d at hop %d", s->fanout[h], h);
    if ((unsigned)s->mode >= FS_SAMPLE_MODE_COUNT_)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "replay: unknown sampling mode %d", (int)s->mode);
    if (s->batch_size <= 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "replay: batch size %lld", (long long)s->batch_size);
    if (o->epoch < 0) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "replay: epoch %d", o->epoch);
    return FS_OK;
}

static fs_status_t check_plans(const fs_csr_ref_t *g, const fs_plan_t *const *plans, int num_plans, fs_error_t *err)
{
    if (!plans || num_plans < 1) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "replay: no plan to route through");
    for (int k = 0; k < num_plans; k++) {
        if (!plans[k]) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "replay: plan %d is NULL", k);
        if (plans[k]->num_nodes != g->num_nodes)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "replay: plan %d is for %lld nodes, the graph has %lld", k,
                            (long long)plans[k]->num_nodes, (long long)g->num_nodes);
        if (plans[k]->num_gpus != plans[0]->num_gpus)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "replay: plan %d has %d GPUs, plan 0 has %d", k,
                            plans[k]->num_gpus, plans[0]->num_gpus);
    }
    return FS_OK;
}

/* ---- the replay ----------------------------------------------------------------- */

typedef struct {
    const fs_replay_opts_t *o;
    const fs_csr_ref_t *g;
    fs_csr_view_t view;
    const int64_t *order;          /* the epoch's shuffled training ids */
    int64_t num_train;
    int n, num_plans, workers, index_bytes;
    int8_t **dev, **topo_dev;      /* [plan * n + reader][num_nodes]; topo_dev NULL unless counted */
    fs_sampler_t **sampler;        /* [workers] */
    uint32_t **count;              /* [workers][num_nodes] or NULL */
    fs_replay_t *part;             /* [workers * num_plans] */
    fs_error_t *werr;              /* [workers] */
} replay_ctx_t;

static inline int source_index(int8_t dev)
{
    return dev < 0 ? FS_COST_HOST : dev;
}

/* Hop h reads the neighbour list of each of its frontier nodes (local ids
 * [0, num_dst)); the sampler reads as many indices as it sampled edges
 * (uniform modes) or the whole list (weighted modes). tdev NULL: the plan
 * placed no topology, every list is read from the host. */
static void count_lists(const replay_ctx_t *c, const fs_sample_result_t *res, const int8_t *tdev, int r,
                        fs_replay_t *out)
{
    int weighted = c->o->sample.mode >= FS_SAMPLE_WEIGHTED;
    for (int h = 0; h < res->num_hops; h++) {
        const fs_block_t *b = &res->block[h];
        for (int64_t d = 0; d < b->num_dst; d++) {
            int64_t v = res->nodes[d];
            int64_t reads = weighted ? c->g->indptr[v + 1] - c->g->indptr[v] : b->dst_offsets[d + 1] - b->dst_offsets[d];
            int s = tdev ? source_index(tdev[v]) : FS_COST_HOST;
            out->lists[r][s]++;
            out->list_bytes[r][s] += reads * c->index_bytes;
            out->list_sectors[r][s] += 1 + (weighted ? (reads * c->index_bytes + FS_COST_SECTOR_BYTES - 1) /
                                                           FS_COST_SECTOR_BYTES
                                                     : reads);
        }
    }
}

static void route_batch(const replay_ctx_t *c, const fs_sample_result_t *res, int r, fs_replay_t *part)
{
    for (int k = 0; k < c->num_plans; k++) {
        const int8_t *dev = c->dev[k * c->n + r];
        int64_t hist[FS_HW_MAX_GPUS + 1] = {0};
        for (int64_t i = 0; i < res->num_nodes; i++) hist[source_index(dev[res->nodes[i]])]++;
        for (int s = 0; s <= FS_HW_MAX_GPUS; s++) part[k].rows[r][s] += hist[s];
        part[k].batches[r]++;
        part[k].total_rows += res->num_nodes;
        if (c->topo_dev) count_lists(c, res, c->topo_dev[k * c->n + r], r, &part[k]);
    }
}

static void replay_batches(void *vctx, int64_t b, int64_t e, int worker)
{
    replay_ctx_t *c = vctx;
    fs_error_t *err = &c->werr[worker];
    const fs_presample_opts_t *so = &c->o->sample;
    for (int64_t batch = b; batch < e && err->code == FS_OK; batch++) {
        int64_t first = batch * so->batch_size, size = c->num_train - first;
        if (size > so->batch_size) size = so->batch_size;
        fs_sample_req_t req;
        fs_sample_result_t res;
        fs_presample_request(so, c->o->epoch, batch, &req);
        if (fs_sample_cpu(c->sampler[worker], &c->view, c->order + first, size, &req, &res, NULL, err) != FS_OK)
            return;
        route_batch(c, &res, (int)(batch % c->n), c->part + (size_t)worker * (size_t)c->num_plans);
        if (c->count)
            for (int64_t i = 0; i < res.num_nodes; i++) c->count[worker][res.nodes[i]]++;
    }
}

static fs_status_t dense_routes(replay_ctx_t *c, const fs_plan_t *const *plans, int topo, fs_error_t *err)
{
    int8_t **dev = calloc((size_t)(c->num_plans * c->n), sizeof *dev);
    if (topo) c->topo_dev = dev;
    else c->dev = dev;
    if (!dev) return fs_error(err, FS_ERR_NOMEM, "replay: out of memory");
    size_t N = (size_t)(c->g->num_nodes > 0 ? c->g->num_nodes : 1);
    for (int k = 0; k < c->num_plans; k++)
        for (int r = 0; r < c->n && !(topo && plans[k]->topo.hot == 0); r++) { /* none: all host, no table */
            int8_t **d = &dev[k * c->n + r];
            if (!(*d = malloc(N)))
                return fs_error(err, FS_ERR_NOMEM, "replay: cannot allocate routes for %lld nodes",
                                (long long)c->g->num_nodes);
            fs_status_t st = topo ? fs_plan_topo_route(plans[k], r, *d, NULL, err)
                                  : fs_plan_route(plans[k], r, *d, NULL, err);
            if (st != FS_OK) return st;
        }
    return FS_OK;
}

static fs_status_t setup(replay_ctx_t *c, const fs_plan_t *const *plans, int want_counts, fs_error_t *err)
{
    fs_status_t st = dense_routes(c, plans, 0, err);
    if (st == FS_OK && c->o->count_topology) st = dense_routes(c, plans, 1, err);
    if (st != FS_OK) return st;
    c->sampler = calloc((size_t)c->workers, sizeof *c->sampler);
    c->part = calloc((size_t)c->workers * (size_t)c->num_plans, sizeof *c->part);
    c->werr = calloc((size_t)c->workers, sizeof *c->werr);
    if (want_counts) c->count = calloc((size_t)c->workers, sizeof *c->count);
    if (!c->sampler || !c->part || !c->werr || (want_counts && !c->count))
        return fs_error(err, FS_ERR_NOMEM, "replay: out of memory");
    for (int w = 0; w < c->workers; w++) {
        if (want_counts && !(c->count[w] = calloc((size_t)(c->g->num_nodes > 0 ? c->g->num_nodes : 1), 4)))
            return fs_error(err, FS_ERR_NOMEM, "replay: cannot allocate node counters");
        if ((st = fs_sampler_create(&c->sampler[w], err)) != FS_OK) return st;
    }
    return FS_OK;
}

static void teardown(replay_ctx_t *c)
{
    for (int i = 0; i < c->num_plans * c->n; i++) {
        if (c->dev) free(c->dev[i]);
        if (c->topo_dev) free(c->topo_dev[i]);
    }
    for (int w = 0; w < c->workers; w++) {
        if (c->sampler) fs_sampler_destroy(c->sampler[w]);
        if (c->count) free(c->count[w]);
    }
    free(c->dev), free(c->topo_dev), free(c->sampler), free(c->count), free(c->part), free(c->werr);
}

static void sum_parts(const replay_ctx_t *c, const fs_plan_t *const *plans, fs_replay_t *out)
{
    for (int k = 0; k < c->num_plans; k++) {
        fs_replay_t *R = &out[k];
        memset(R, 0, sizeof *R);
        R->num_gpus = c->n;
        R->row_bytes = plans[k]->row_bytes;
        for (int w = 0; w < c->workers; w++) {
            const fs_replay_t *P = &c->part[(size_t)w * (size_t)c->num_plans + (size_t)k];
            R->total_rows += P->total_rows;
            for (int r = 0; r < c->n; r++) {
                R->batches[r] += P->batches[r];
                for (int s = 0; s <= FS_HW_MAX_GPUS; s++) {
                    R->rows[r][s] += P->rows[r][s];
                    R->lists[r][s] += P->lists[r][s];
                    R->list_bytes[r][s] += P->list_bytes[r][s];
                    R->list_sectors[r][s] += P->list_sectors[r][s];
                }
            }
        }
    }
}

static fs_status_t first_worker_error(const replay_ctx_t *c, fs_error_t *err)
{
    for (int w = 0; w < c->workers; w++)
        if (c->werr[w].code != FS_OK) {
            if (err) {
                *err = c->werr[w];
                fs_error_prefix(err, "replay");
            }
            return c->werr[w].code;
        }
    return FS_OK;
}

fs_status_t fs_plan_replay(const fs_csr_ref_t *g, const int64_t *train, int64_t num_train,
                           const fs_plan_t *const *plans, int num_plans, const fs_replay_opts_t *o, fs_replay_t *out,
                           double *counts, fs_error_t *err)
{
    fs_status_t st = check_opts(o, err);
    if (st == FS_OK) st = fs_csr_ref_check(g, o->sample.threads, err);
    if (st == FS_OK) st = check_plans(g, plans, num_plans, err);
    if (st == FS_OK) st = fs_pl_check_train("replay", train, num_train, g->num_nodes, err);
    if (st == FS_OK && !out) st = fs_error(err, FS_ERR_INVALID_ARGUMENT, "replay: NULL output");
    if (st != FS_OK) return st;
    replay_ctx_t c = {.o = o, .g = g, .num_train = num_train, .n = plans[0]->num_gpus, .num_plans = num_plans,
                      .index_bytes = (int)fs_dtype_size(g->index_dtype)};
    int64_t batches = fs_batches_per_epoch(num_train, o->sample.batch_size);
    if (o->max_batches > 0 && batches / c.n >= o->max_batches) batches = o->max_batches * c.n;
    c.workers = fs_pl_workers(o->sample.threads, batches);
    fs_csr_view_init(&c.view, g->num_nodes, g->indptr, g->indices, g->index_dtype, g->weights);
    int64_t *order = malloc(sizeof *order * (size_t)num_train);
    c.order = order;
    st = order ? setup(&c, plans, counts != NULL, err) : fs_error(err, FS_ERR_NOMEM, "replay: out of memory");
    if (st == FS_OK) {
        fs_presample_epoch_order(train, num_train, o->sample.seed, o->epoch, order);
        fs_parallel_for_dynamic(c.workers, batches, 1, replay_batches, &c);
        st = first_worker_error(&c, err);
    }
    if (st == FS_OK) {
        sum_parts(&c, plans, out);
        if (counts) {
            fs_pl_sum_counts(c.count, c.workers, g->num_nodes, o->sample.threads, counts);
        }
    }
    teardown(&c);
    free(order);
    return st;
}

/* ---- per mini-batch ------------------------------------------------------------- */

static fs_status_t check_per_batch(const fs_replay_t *r, const fs_hardware_t *hw, fs_cost_t *out, fs_error_t *err)
{
    if (!r || !hw || !out) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "replay: NULL argument");
    if (hw->num_gpus != r->num_gpus)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "replay: hardware has %d GPUs, the replay %d", hw->num_gpus,
                        r->num_gpus);
    memset(out, 0, sizeof *out);
    out->num_gpus = r->num_gpus;
    return FS_OK;
}

fs_status_t fs_replay_per_batch(const fs_replay_t *r, const fs_hardware_t *hw, fs_cost_t *out, fs_error_t *err)
{
    fs_status_t st = check_per_batch(r, hw, out, err);
    for (int i = 0; st == FS_OK && i < r->num_gpus; i++)
        for (int s = 0; s <= FS_HW_MAX_GPUS && r->batches[i] > 0; s++)
            out->bytes[i][s] = (double)r->rows[i][s] * (double)r->row_bytes / (double)r->batches[i];
    if (st == FS_OK) fs_cost_finish(out, hw);
    return st;
}

fs_status_t fs_replay_topo_per_batch(const fs_replay_t *r, const fs_hardware_t *hw, fs_cost_t *out, fs_error_t *err)
{
    fs_status_t st = check_per_batch(r, hw, out, err);
    for (int i = 0; st == FS_OK && i < r->num_gpus; i++)
        for (int s = 0; s <= FS_HW_MAX_GPUS && r->batches[i] > 0; s++)
            out->bytes[i][s] = (double)r->list_sectors[i][s] * FS_COST_SECTOR_BYTES / (double)r->batches[i];
    if (st == FS_OK) fs_cost_finish(out, hw);
    return st;
}

fs_status_t fs_hotness_per_batch(const double *counts, int64_t num_nodes, double batches, double *p, fs_error_t *err)
{
    if (!counts || !p || num_nodes < 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "per-batch workload: NULL array or negative size");
    if (!(batches > 0))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "per-batch workload: %g batches (need > 0)", batches);
    for (int64_t v = 0; v < num_nodes; v++) p[v] = counts[v] / batches;
    return FS_OK;
}

void fs_cost_fractions(const fs_cost_t *c, int reader, double *local, double *peer, double *host)
{
    double l = 0, q = 0, h = 0;
    for (int i = 0; c && i < c->num_gpus; i++)
        if (reader < 0 || reader == i) l += c->local_bytes[i], q += c->peer_bytes[i], h += c->host_bytes[i];
    double total = l + q + h;
    if (local) *local = total > 0 ? l / total : 0;
    if (peer) *peer = total > 0 ? q / total : 0;
    if (host) *host = total > 0 ? h / total : 0;
}
