/* fs_sample.c — the homogeneous sampling API (fs_sample.h) as a case of
 * the typed engine (fs_typed.h), and the naive reference it is tested
 * against.
 *
 * A homogeneous graph is one node type and one edge type; the request's
 * blocks follow DGL (FS_FRONTIER_ALL). fs_typed_sample_cpu with that shape
 * is fs_sample_cpu's documented result bit for bit (Fused-Map, FastGL §4,
 * docs/algorithms.md §6): local ids in first-appearance order, every pick a
 * pure function of (seed, hop, node). So this file only translates: the
 * view becomes a one-edge-type typed view (its tiers and route with it),
 * the result points into the typed sampler's arrays, and the topology
 * counters are derived from the result (what each destination's list
 * read), the same figures the engine would count.
 *
 * The sampler here is a typed sampler plus the reference's scratch; the
 * reference writes into the typed sampler's workspace too, so every result
 * has one ownership model. */
#include "fs_sample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fs_locality.h"
#include "fs_sample_internal.h"
#include "fs_typed_internal.h"

struct fs_sampler {
    fs_typed_sampler_t *t;
    int64_t num_hops;      /* the request's, for fs_sampler_result */
    /* the reference: global -> local, one copied list, weighted scratch */
    int64_t *dense;
    size_t dense_n;
    fs_i64vec_t copy, pos;
    double *wbuf;
    size_t wcap;
};

int fs_i64vec_reserve(fs_i64vec_t *v, size_t n)
{
    if (n <= v->cap) return 0;
    size_t cap = v->cap ? v->cap : 1024;
    while (cap < n) cap *= 2;
    int64_t *p = realloc(v->p, cap * sizeof *p);
    if (!p) return -1;
    v->p = p;
    v->cap = cap;
    return 0;
}

int fs_grow_zeroed(void **p, int *cap, int n, size_t elem)
{
    if (n <= *cap) return 0;
    void *q = realloc(*p, (size_t)n * elem);
    if (!q) return -1;
    memset((char *)q + (size_t)*cap * elem, 0, (size_t)(n - *cap) * elem);
    *p = q;
    *cap = n;
    return 0;
}

fs_status_t fs_sampler_create(fs_sampler_t **out, fs_error_t *err)
{
    *out = calloc(1, sizeof **out);
    if (!*out) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    fs_status_t st = fs_typed_sampler_create(&(*out)->t, err);
    if (st != FS_OK) {
        free(*out);
        *out = NULL;
    }
    return st;
}

void fs_sampler_destroy(fs_sampler_t *s)
{
    if (!s) return;
    fs_typed_sampler_destroy(s->t);
    free(s->dense), free(s->copy.p), free(s->pos.p), free(s->wbuf);
    free(s);
}

void fs_sampler_set_output(fs_sampler_t *s, void *base, size_t cap)
{
    fs_typed_sampler_set_output(s->t, base, cap);
}

size_t fs_sampler_output_used(const fs_sampler_t *s)
{
    return fs_typed_sampler_output_used(s->t);
}

void fs_sampler_set_pool(fs_sampler_t *s, fs_pool_t *pool)
{
    fs_typed_sampler_set_pool(s->t, pool);
}

void fs_csr_view_init(fs_csr_view_t *v, int64_t num_nodes, const int64_t *indptr, const void *indices,
                      fs_dtype_t index_dtype, const float *weights)
{
    memset(v, 0, sizeof *v);
    v->num_nodes = num_nodes;
    v->num_edges = indptr[num_nodes];
    v->index_dtype = index_dtype;
    v->num_parts = 1;
    v->part[0] = (fs_csr_part_t){.indptr = indptr, .indices = indices, .weights = weights, .rows = num_nodes};
}

fs_status_t fs_locality_value_check(double locality, fs_error_t *err)
{
    if (locality == 0 || (locality >= 1 && isfinite(locality))) return FS_OK;
    if (locality == FS_LOCALITY_AUTO)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality = FS_LOCALITY_AUTO (-1) must be resolved by the client "
                        "library (fs_report_load_ratio's boost); send the boost itself: 0 or 1 (off) or > 1");
    return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality = %g: must be 0 or 1 (off), a finite boost > 1, or "
                    "FS_LOCALITY_AUTO", locality);
}

/* Every part must carry weights: a routed view reads a node's list (and its
 * weights) from whichever part holds it. */
static int view_has_weights(const fs_csr_view_t *g)
{
    if (g->remote) return 1; /* the owners check */
    for (int p = 0; p < (g->num_parts > 0 ? g->num_parts : 1); p++)
        if (!g->part[p].weights) return 0;
    return 1;
}

fs_status_t fs_sample_check(const fs_csr_view_t *g, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
                            fs_error_t *err)
{
    if (req->num_hops < 1 || req->num_hops > FS_MAX_HOPS)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "sample: %d hops requested, must be 1..%d", req->num_hops,
                        FS_MAX_HOPS);
    fs_status_t st = fs_locality_value_check(req->locality, err);
    if (st != FS_OK) {
        fs_error_prefix(err, "sample");
        return st;
    }
    if (req->locality > 1) /* silently sampling without the boost would return no weights and mislead */
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "sample: locality = %g asks for locality-aware sampling, which "
                        "the plain sampler does not do: use fs_sample_locality_cpu with the reader's preferred sets",
                        req->locality);
    for (int h = 0; h < req->num_hops; h++) {
        if (req->fanout[h] == 0 || req->fanout[h] < FS_FANOUT_ALL)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "sample: fanout[%d] is %d, must be > 0 or -1 (all)", h,
                            req->fanout[h]);
        if ((unsigned)req->mode[h] >= FS_SAMPLE_MODE_COUNT_)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "sample: mode[%d] is %d, unknown", h, (int)req->mode[h]);
        if (req->mode[h] >= FS_SAMPLE_WEIGHTED && !view_has_weights(g))
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "sample: hop %d asks for weighted sampling but the graph "
                            "has no edge weights", h);
    }
    if (n < 0 || (n > 0 && !seeds)) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "sample: bad seed array");
    for (int64_t i = 0; i < n; i++)
        if ((uint64_t)seeds[i] >= (uint64_t)g->num_nodes)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "sample: seed %lld at position %lld is outside [0, %lld)",
                            (long long)seeds[i], (long long)i, (long long)g->num_nodes);
    return FS_OK;
}

/* ---- the engine: the typed one, one node type and one edge type ------------ */

/* The view as one edge type 0 -> 0, stored toward its destination: a
 * homogeneous graph's CSR row v lists the neighbours v samples from, which
 * is the typed engine's destination row. */
static void typed_view(const fs_csr_view_t *g, const int64_t *count, fs_typed_etype_t *et, fs_typed_view_t *v)
{
    *et = (fs_typed_etype_t){.src_type = 0, .dst_type = 0,
                             .num_edges = g->remote ? g->num_edges : g->part[0].indptr[g->num_nodes],
                             .indptr = g->part[0].indptr, .indices = g->part[0].indices,
                             .index_dtype = g->index_dtype, .weights = g->part[0].weights, .reverse = -1,
                             .tiers = g->route ? g : NULL, .remote = g->remote};
    *v = (fs_typed_view_t){.num_node_types = 1, .count = count, .num_edge_types = 1, .etype = et};
}

static void typed_req(const fs_sample_req_t *req, const fs_locality_t *loc, fs_typed_req_t *t)
{
    *t = (fs_typed_req_t){.num_hops = req->num_hops, .fanout = req->fanout, .seed = req->seed,
                          .want_edge_ids = req->want_edge_ids, .frontier = FS_FRONTIER_ALL, .locality = loc};
    memcpy(t->mode, req->mode, sizeof t->mode);
}

/* The typed result as blocks over one node type: block h's destinations
 * are the nodes before hop h, its sources those after it. */
static void homogeneous_result(const fs_typed_result_t *t, int64_t n, fs_sample_result_t *res)
{
    const fs_typed_nodes_t *nt = &t->type[0];
    memset(res, 0, sizeof *res);
    res->num_hops = t->num_hops;
    for (int h = 0; h < t->num_hops; h++) res->block[h] = t->block[h];
    res->num_nodes = nt->count_after[t->num_hops];
    res->nodes = nt->nodes;
    res->num_seeds = n;
    res->seed_local = t->seed_local[0];
}

fs_status_t fs_sample_typed(fs_sampler_t *s, int device, const fs_csr_view_t *g, const int64_t *seeds, int64_t n,
                            const fs_sample_req_t *req, const fs_locality_t *loc, fs_sample_result_t *res,
                            fs_error_t *err)
{
    fs_typed_etype_t et;
    fs_typed_view_t v;
    fs_typed_req_t t;
    fs_typed_result_t tres;
    typed_view(g, &g->num_nodes, &et, &v);
    typed_req(req, loc, &t);
    fs_typed_seeds_t group = {.type = 0, .count = n, .ids = seeds};
    fs_status_t st = device < 0 ? fs_typed_sample_cpu(s->t, &v, &t, &group, 1, NULL, 0, &tres, err)
                                : fs_typed_sample_cuda(s->t, device, &v, &t, &group, 1, NULL, 0, &tres, err);
    if (st == FS_OK) homogeneous_result(&tres, n, res);
    return st;
}

fs_status_t fs_sample_cpu(fs_sampler_t *s, const fs_csr_view_t *g, const int64_t *seeds, int64_t n,
                          const fs_sample_req_t *req, fs_sample_result_t *res, fs_gather_counters_t *topo,
                          fs_error_t *err)
{
    fs_status_t st = fs_sample_check(g, seeds, n, req, err);
    if (st != FS_OK) {
        fs_typed_sampler_set_output(s->t, NULL, 0); /* the given output memory is this request's only */
        return st;
    }
    if ((st = fs_sample_typed(s, -1, g, seeds, n, req, NULL, res, err)) == FS_OK && topo && !g->remote)
        fs_sample_count_topology(g, req, res, topo);
    return st;
}

/* ---- the reference's arrays: the typed sampler's workspace ------------------ */

enum { WS_NODES, WS_SEED_LOCAL, WS_OFF, WS_EDST, WS_ESRC, WS_EID };

/* A request begins: it takes the output memory it was given, if any. */
static void ws_begin(fs_sampler_t *s)
{
    fs_typed_sampler_t *t = s->t;
    fs_typed_ws_shape(t, 1, FS_MAX_HOPS, 1); /* a failed growth shows as NULL arrays below */
    t->num_types = 1, t->disjoint = 0, t->temporal = 0;
    t->tw[0].n = 0;
}

/* A workspace array with room for n entries (its contents kept), or NULL
 * when out of memory. */
static int64_t *ws_array(fs_sampler_t *s, int kind, int hop, size_t n)
{
    fs_typed_sampler_t *t = s->t;
    if (t->cap_types < 1 || t->cap_blocks < FS_MAX_HOPS || t->cap_groups < 1) return NULL;
    if (kind == WS_NODES) return fs_typed_ws_node_array(t, 0, FS_TWS_NODES, n);
    if (kind == WS_SEED_LOCAL) return fs_typed_ws_seed_local(t, 0, n);
    int k = kind == WS_OFF ? FS_TWS_OFF : kind == WS_EDST ? FS_TWS_EDST : kind == WS_ESRC ? FS_TWS_ESRC : FS_TWS_EID;
    return fs_typed_ws_block_array(t, hop, k, n);
}

static void ws_result(fs_sampler_t *s, const fs_sample_req_t *req, int64_t n, const int64_t *u_after,
                      const int64_t *num_dst, const int64_t *num_edges, fs_sample_result_t *res)
{
    fs_typed_sampler_t *t = s->t;
    memset(res, 0, sizeof *res);
    res->num_hops = req->num_hops;
    for (int h = 0; h < req->num_hops; h++)
        res->block[h] = (fs_block_t){.num_dst = num_dst[h], .num_src = u_after[h], .num_edges = num_edges[h],
                                     .dst_offsets = t->bw[h].off.p, .edge_dst = t->bw[h].edst.p,
                                     .edge_src = t->bw[h].esrc.p, .edge_ids = req->want_edge_ids ? t->bw[h].eid.p : NULL};
    res->num_nodes = u_after[req->num_hops - 1];
    res->nodes = t->tw[0].nodes.p;
    res->num_seeds = n;
    res->seed_local = t->seed_local[0].p;
}

fs_typed_sampler_t *fs_sampler_typed(fs_sampler_t *s)
{
    return s->t;
}

/* ---- the naive reference ---------------------------------------------------- */

static int64_t ref_local(fs_sampler_t *s, int64_t key, int64_t *u, int64_t **nodes)
{
    if (s->dense[key] < 0) {
        s->dense[key] = (*u)++;
        (*nodes)[s->dense[key]] = key;
    }
    return s->dense[key];
}

/* Room for the reference's arrays of one hop: its edges, its nodes. */
static int ref_reserve(fs_sampler_t *s, int hop, int64_t num_dst, int64_t edges, int64_t nodes, int64_t max_deg)
{
    return !ws_array(s, WS_OFF, hop, (size_t)num_dst + 1) ||
           !ws_array(s, WS_EDST, hop, (size_t)edges) ||
           !ws_array(s, WS_ESRC, hop, (size_t)edges) ||
           !ws_array(s, WS_EID, hop, (size_t)edges) ||
           !ws_array(s, WS_NODES, 0, (size_t)nodes) ||
           fs_i64vec_reserve(&s->copy, (size_t)max_deg + 1) || fs_i64vec_reserve(&s->pos, (size_t)max_deg + 1);
}

static int wbuf_reserve(fs_sampler_t *s, size_t n)
{
    if (n <= s->wcap) return 0;
    double *p = realloc(s->wbuf, n * sizeof *p);
    if (!p) return -1;
    s->wbuf = p;
    s->wcap = n;
    return 0;
}

/* One hop the obvious way: copy each full neighbour list (O(degree)),
 * pick, relabel through the dense array. */
static void ref_hop(fs_sampler_t *s, const fs_csr_view_t *g, const fs_sample_req_t *req, int hop, int64_t num_dst,
                    int64_t *u, int64_t *num_edges)
{
    int64_t *nodes = ws_array(s, WS_NODES, 0, 0), e = 0;
    int64_t *off = ws_array(s, WS_OFF, hop, 0), *ed = ws_array(s, WS_EDST, hop, 0);
    int64_t *es = ws_array(s, WS_ESRC, hop, 0), *eid = ws_array(s, WS_EID, hop, 0);
    const int64_t *ip0 = g->part[0].indptr;
    off[0] = 0;
    for (int64_t d = 0; d < num_dst; d++) {
        int64_t v = nodes[d], row = v, *pos;
        int part = 0;
        if (g->route) part = FS_ROUTE_TIER(g->route[v]), row = FS_ROUTE_ROW(g->route[v]);
        const fs_csr_part_t *pt = &g->part[part];
        int64_t b = pt->indptr[row], deg = pt->indptr[row + 1] - b;
        for (int64_t q = 0; q < deg; q++) /* the O(degree) copy a naive sampler makes */
            s->copy.p[q] = g->index_dtype == FS_DTYPE_I32 ? ((const int32_t *)pt->indices)[b + q]
                                                          : ((const int64_t *)pt->indices)[b + q];
        fs_rng_t rng = fs_pick_rng(req->seed, hop, v);
        int64_t m = fs_pick_row(req->mode[hop], &rng, pt->weights ? pt->weights + b : NULL, deg, req->fanout[hop],
                                s->wbuf, s->pos.p, &pos);
        for (int64_t q = 0; q < m; q++) {
            int64_t p = pos ? pos[q] : q;
            es[e] = ref_local(s, s->copy.p[p], u, &nodes);
            ed[e] = d;
            eid[e] = ip0[v] + p;
            e++;
        }
        off[d + 1] = e;
    }
    *num_edges = e;
}

fs_status_t fs_sample_reference(fs_sampler_t *s, const fs_csr_view_t *g, const int64_t *seeds, int64_t n,
                                const fs_sample_req_t *req, fs_sample_result_t *res, fs_error_t *err)
{
    ws_begin(s);
    fs_status_t st = fs_sample_check(g, seeds, n, req, err);
    if (st != FS_OK) return st;
    if ((size_t)g->num_nodes > s->dense_n) {
        free(s->dense);
        s->dense = malloc((size_t)g->num_nodes * sizeof *s->dense);
        s->dense_n = s->dense ? (size_t)g->num_nodes : 0;
    }
    int64_t *local = ws_array(s, WS_SEED_LOCAL, 0, (size_t)n), *nodes;
    if (!s->dense || !local || !(nodes = ws_array(s, WS_NODES, 0, (size_t)n)))
        return fs_error(err, FS_ERR_NOMEM, "reference: out of memory");
    for (int64_t v = 0; v < g->num_nodes; v++) s->dense[v] = -1;
    int64_t u = 0, u_after[FS_MAX_HOPS], num_dst[FS_MAX_HOPS], num_edges[FS_MAX_HOPS];
    for (int64_t i = 0; i < n; i++) local[i] = ref_local(s, seeds[i], &u, &nodes);
    for (int hop = 0; hop < req->num_hops; hop++) {
        int64_t bound = 0, max_deg = 0;
        nodes = ws_array(s, WS_NODES, 0, 0);
        for (int64_t d = 0; d < u; d++) { /* every pick is within a row: the sum of degrees bounds them all */
            int64_t deg = g->part[0].indptr[nodes[d] + 1] - g->part[0].indptr[nodes[d]];
            int64_t k = req->fanout[hop] == FS_FANOUT_ALL ? deg : req->fanout[hop];
            bound += req->mode[hop] == FS_SAMPLE_UNIFORM && deg < k ? deg : k;
            if (deg > max_deg) max_deg = deg;
        }
        int64_t pk = req->fanout[hop] > max_deg ? req->fanout[hop] : max_deg; /* picks with replacement exceed the row */
        if (ref_reserve(s, hop, u, bound + 1, u + bound + 1, pk) ||
            wbuf_reserve(s, (size_t)max_deg + 1))
            return fs_error(err, FS_ERR_NOMEM, "reference: out of memory");
        num_dst[hop] = u;
        ref_hop(s, g, req, hop, num_dst[hop], &u, &num_edges[hop]);
        u_after[hop] = u;
    }
    ws_result(s, req, n, u_after, num_dst, num_edges, res);
    return FS_OK;
}

/* ---- topology read ----------------------------------------------------------- */

/* Adds what sampling `res` read: per part, a list per destination and the
 * ids taken from it (the whole row on weighted hops). Without a route and
 * weights that is two sums per hop. */
void fs_sample_count_topology(const fs_csr_view_t *g, const fs_sample_req_t *req, const fs_sample_result_t *res,
                              fs_gather_counters_t *topo)
{
    const int64_t *ip0 = g->part[0].indptr;
    size_t width = fs_dtype_size(g->index_dtype);
    for (int h = 0; h < res->num_hops; h++) {
        const fs_block_t *b = &res->block[h];
        int weighted = req->mode[h] >= FS_SAMPLE_WEIGHTED;
        if (!g->route && !weighted) { /* every list in part 0, each read for its picks */
            topo->rows[0] += (uint64_t)b->num_dst;
            topo->bytes[0] += (uint64_t)b->num_edges * width;
            continue;
        }
        for (int64_t d = 0; d < b->num_dst; d++) { /* the destinations are the first nodes */
            int64_t v = res->nodes[d];
            int part = g->route ? FS_ROUTE_TIER(g->route[v]) : 0;
            int64_t read = weighted ? ip0[v + 1] - ip0[v] : b->dst_offsets[d + 1] - b->dst_offsets[d];
            topo->rows[part]++;
            topo->bytes[part] += (uint64_t)read * width;
        }
    }
}
