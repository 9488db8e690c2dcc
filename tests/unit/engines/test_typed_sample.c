/* test_typed_sample.c — the typed, temporal and link samplers (fs_typed.h)
 * against an independent naive reference.
 *
 * The reference shares no code with the engine: the test keeps every edge
 * type as a plain list of (src, dst, time, weight) by edge id, builds its
 * own CSC for the engine, and judges each result by brute force over the
 * list — which edges a destination could see at its time, how many it must
 * get, which must never appear — and by distribution (chi-square per edge
 * type and per strategy, seeded so each verdict is the same on every run).
 * The one-type case is also held to the homogeneous engine bit for bit. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_rng.h"
#include "fs_sample.h"
#include "fs_limits.h"
#include "fs_typed.h"

/* ---- a typed test graph, kept as edge lists ---------------------------- */

#define MAXE 4096

typedef struct {
    int src_type, dst_type;
    int64_t n;
    int64_t src[MAXE], dst[MAXE], time[MAXE];
    float w[MAXE];
    int timed, weighted;
    /* the CSC handed to the engine (built here, by the test's own code) */
    int64_t *indptr, eids[MAXE], ptime[MAXE];
    int32_t ind[MAXE];
    float pw[MAXE];
} elist_t;

typedef struct {
    int T, E;
    int64_t count[4];
    int64_t *ntime[4];
    const char *names[4];
    elist_t *el[6];
    fs_typed_etype_t et[6];
    fs_typed_view_t view;        /* the timed edge types summarised (fs_typed_time_rows), as servers build them */
    fs_typed_etype_t plain_et[6];
    fs_typed_view_t plain;       /* the same without summaries: every row's times searched */
    fs_time_row_t *rows[6];
} tgraph_t;

static fs_rng_t grng;

static int64_t rnd(int64_t n)
{
    return (int64_t)fs_rng_below(&grng, (uint64_t)n);
}

static tgraph_t *G;
static fs_typed_sampler_t *S;

/* CSC by (dst, time, edge id), with a plain insertion sort per destination. */
static void build_csc(tgraph_t *g, int e)
{
    elist_t *l = g->el[e];
    int64_t nd = g->count[l->dst_type];
    l->indptr = calloc((size_t)nd + 1, sizeof(int64_t));
    for (int64_t i = 0; i < l->n; i++) l->indptr[l->dst[i] + 1]++;
    for (int64_t d = 0; d < nd; d++) l->indptr[d + 1] += l->indptr[d];
    int64_t *fill = calloc((size_t)nd, sizeof(int64_t));
    for (int64_t i = 0; i < l->n; i++) {
        int64_t d = l->dst[i], p = l->indptr[d] + fill[d]++;
        while (p > l->indptr[d] && (l->timed ? l->time[l->eids[p - 1]] > l->time[i] : 0)) { /* ids arrive ascending */
            l->eids[p] = l->eids[p - 1];
            p--;
        }
        l->eids[p] = i;
    }
    free(fill);
    for (int64_t p = 0; p < l->n; p++) {
        int64_t i = l->eids[p];
        l->ind[p] = (int32_t)l->src[i], l->ptime[p] = l->time[i], l->pw[p] = l->w[i];
    }
    int64_t longest = 0;
    for (int64_t d = 0; d < nd; d++) longest = l->indptr[d + 1] - l->indptr[d] > longest ? l->indptr[d + 1] - l->indptr[d] : longest;
    g->et[e] = (fs_typed_etype_t){.src_type = l->src_type, .dst_type = l->dst_type, .num_edges = l->n,
                                  .max_degree = longest,
                                  .indptr = l->indptr, .indices = l->ind, .index_dtype = FS_DTYPE_I32,
                                  .edge_ids = l->eids, .weights = l->weighted ? l->pw : NULL,
                                  .time = l->timed ? l->ptime : NULL, .reverse = -1};
}

static elist_t *random_edges(int st, int dt, int64_t n, int timed, int weighted)
{
    elist_t *l = calloc(1, sizeof *l);
    l->src_type = st, l->dst_type = dt, l->n = n, l->timed = timed, l->weighted = weighted;
    for (int64_t i = 0; i < n; i++) {
        l->src[i] = rnd(G->count[st]), l->dst[i] = rnd(G->count[dt]);
        l->time[i] = rnd(100), l->w[i] = 0.25f + (float)rnd(8);
    }
    return l;
}

static elist_t *reversed(const elist_t *a)
{
    elist_t *l = calloc(1, sizeof *l);
    *l = *a;
    l->src_type = a->dst_type, l->dst_type = a->src_type;
    memcpy(l->src, a->dst, sizeof l->src);
    memcpy(l->dst, a->src, sizeof l->dst);
    return l;
}

/* Types A (60), B (40), C (25). Edge types: 0 (A, cites, A) timed and
 * weighted; 1 (B, writes, A) timed; 2 (A, written_by, B) its reverse;
 * 3 (C, at, A) untimed. */
static void setup_graph(void)
{
    grng = fs_rng_make(42, 0);
    G = calloc(1, sizeof *G);
    G->T = 3, G->E = 4;
    int64_t counts[3] = {60, 40, 25};
    static const char *names[3] = {"A", "B", "C"};
    for (int t = 0; t < 3; t++) {
        G->count[t] = counts[t];
        G->names[t] = names[t];
        G->ntime[t] = malloc(sizeof(int64_t) * (size_t)counts[t]);
        for (int64_t v = 0; v < counts[t]; v++) G->ntime[t][v] = 20 + rnd(90);
    }
    G->el[0] = random_edges(0, 0, 600, 1, 1);
    G->el[1] = random_edges(1, 0, 300, 1, 0);
    G->el[2] = reversed(G->el[1]);
    G->el[3] = random_edges(2, 0, 150, 0, 0);
    static const char *enames[4] = {"(A, cites, A)", "(B, writes, A)", "(A, written_by, B)", "(C, at, A)"};
    for (int e = 0; e < 4; e++) build_csc(G, e), G->et[e].name = enames[e];
    G->et[1].reverse = 2, G->et[2].reverse = 1;
    G->view = (fs_typed_view_t){.num_node_types = 3, .count = G->count, .type_name = G->names,
                                .node_time = (const int64_t *const *)G->ntime, .num_edge_types = 4, .etype = G->et};
    G->plain = G->view;
    G->plain.etype = G->plain_et;
    for (int e = 0; e < 4; e++) {
        G->plain_et[e] = G->et[e];
        if (G->et[e].time)
            cr_assert_eq(fs_typed_time_rows(&G->et[e], G->count[G->et[e].dst_type], &G->rows[e], NULL), FS_OK);
    }
    cr_assert_eq(fs_typed_sampler_create(&S, NULL), FS_OK);
}

static void teardown_graph(void)
{
    fs_typed_sampler_destroy(S);
    for (int e = 0; e < G->E; e++) {
        if (G->rows[e]) fs_typed_time_rows_free(G->rows[e], G->count[G->et[e].dst_type]);
        free(G->el[e]->indptr), free(G->el[e]);
    }
    for (int t = 0; t < G->T; t++) free(G->ntime[t]);
    free(G);
}

/* ---- the reference's judgement ------------------------------------------ */

typedef struct {
    fs_temporal_t temporal;
    int strict;
    int64_t window;
} tsel_t;

static int edge_eligible(const elist_t *l, int64_t i, int64_t t, const tsel_t *ts)
{
    if (!ts->temporal) return 1;
    if (ts->strict ? !(l->time[i] < t) : !(l->time[i] <= t)) return 0;
    return ts->window <= 0 || l->time[i] >= t - ts->window;
}

/* Edge ids of etype e a destination v may pick at time t, ascending by
 * (time, id): by a full scan of the list. */
static int64_t eligible(const tgraph_t *g, int e, int64_t v, int64_t t, const tsel_t *ts,
                        const fs_typed_exclude_t *x, int64_t nx, int64_t *out)
{
    const elist_t *l = g->el[e];
    int64_t n = 0;
    for (int64_t i = 0; i < l->n; i++) {
        if (l->dst[i] != v || !edge_eligible(l, i, t, ts)) continue;
        int banned = 0;
        for (int64_t j = 0; j < nx; j++) banned |= x[j].etype == e && x[j].dst == v && x[j].src == l->src[i];
        if (!banned) out[n++] = i;
    }
    for (int64_t a = 1; a < n; a++) /* by (time, id) */
        for (int64_t b = a; b > 0 && l->timed && l->time[out[b - 1]] > l->time[out[b]]; b--) {
            int64_t tmp = out[b];
            out[b] = out[b - 1], out[b - 1] = tmp;
        }
    return n;
}

typedef struct {
    int num_hops;
    int fanout[6 * FS_MAX_HOPS];
    fs_typed_req_t req;
} treq_t;

static void make_req(treq_t *r, int hops, const int *per_etype, fs_sample_mode_t mode)
{
    memset(r, 0, sizeof *r);
    r->num_hops = hops;
    for (int e = 0; e < G->E; e++)
        for (int h = 0; h < hops; h++) r->fanout[e * hops + h] = per_etype[e];
    r->req.num_hops = hops;
    r->req.fanout = r->fanout;
    for (int h = 0; h < hops; h++) r->req.mode[h] = mode;
    r->req.want_edge_ids = 1;
}

/* Checks every invariant of a result against the edge lists. */
static void judge(const fs_typed_result_t *res, const fs_typed_req_t *req, const fs_typed_seeds_t *groups, int ng,
                  const fs_typed_exclude_t *x, int64_t nx)
{
    tsel_t ts = {req->temporal, req->strict, req->window};
    int disjoint = req->disjoint || req->temporal;
    static int64_t elig[MAXE];
    for (int t = 0; t < G->T; t++) { /* relabelling: a bijection per type */
        const fs_typed_nodes_t *n = &res->type[t];
        cr_assert_eq(n->count_after[req->num_hops], n->num_nodes);
        for (int64_t a = 0; a < n->num_nodes; a++) {
            cr_assert(n->nodes[a] >= 0 && n->nodes[a] < G->count[t]);
            for (int64_t b = a + 1; b < n->num_nodes; b++)
                cr_assert(!(n->nodes[a] == n->nodes[b] && (!disjoint || n->batch[a] == n->batch[b])),
                          "type %d: local ids %lld and %lld are the same node", t, (long long)a, (long long)b);
        }
    }
    for (int i = 0; i < ng; i++) /* seeds first, mapping back to themselves */
        for (int64_t j = 0; j < groups[i].count; j++) {
            int64_t loc = res->seed_local[i][j];
            cr_assert_lt(loc, res->type[groups[i].type].count_after[0]);
            cr_assert_eq(res->type[groups[i].type].nodes[loc], groups[i].ids[j]);
        }
    for (int h = 0; h < req->num_hops; h++)
        for (int e = 0; e < G->E; e++) {
            const fs_block_t *b = &res->block[h * G->E + e];
            const elist_t *l = G->el[e];
            const fs_typed_nodes_t *dn = &res->type[l->dst_type], *sn = &res->type[l->src_type];
            int k = req->fanout[e * req->num_hops + h];
            int64_t d0 = req->frontier == FS_FRONTIER_NEW && h > 0 ? dn->count_after[h - 1] : 0;
            int64_t d1 = dn->count_after[h];
            cr_assert_eq(b->num_dst, k == 0 ? 0 : d1 - d0, "hop %d etype %d: %lld destinations", h, e,
                         (long long)b->num_dst);
            cr_assert_eq(b->num_src, sn->count_after[h + 1]);
            for (int64_t di = 0; di < b->num_dst; di++) {
                int64_t dl = d0 + di, v = dn->nodes[dl], t = req->temporal ? dn->time[dl] : 0;
                int64_t c = eligible(G, e, v, t, &ts, x, nx, elig), got = b->dst_offsets[di + 1] - b->dst_offsets[di];
                int replace = req->mode[h] == FS_SAMPLE_UNIFORM_REPLACE || req->mode[h] == FS_SAMPLE_WEIGHTED_REPLACE;
                int64_t want = replace ? (c > 0 ? (k < 0 ? c : k) : 0) : (k < 0 || c < k ? c : k);
                cr_assert_eq(got, want, "hop %d etype %d dst %lld: %lld edges, want min(eligible %lld, fanout %d)", h,
                             e, (long long)v, (long long)got, (long long)c, k);
                for (int64_t q = b->dst_offsets[di]; q < b->dst_offsets[di + 1]; q++) {
                    int64_t id = b->edge_ids[q], sl = b->edge_src[q];
                    cr_assert_eq(b->edge_dst[q], dl);
                    cr_assert(sl >= 0 && sl < b->num_src);
                    cr_assert(id >= 0 && id < l->n);
                    cr_assert_eq(l->dst[id], v);
                    cr_assert_eq(l->src[id], sn->nodes[sl], "edge %lld: source mismatch", (long long)id);
                    int ok = 0;
                    for (int64_t z = 0; z < c; z++) ok |= elig[z] == id;
                    cr_assert(ok, "hop %d etype %d: edge %lld (time %lld) picked by %lld at time %lld is not eligible",
                              h, e, (long long)id, (long long)l->time[id], (long long)v, (long long)t);
                    if (disjoint) cr_assert_eq(sn->batch[sl], dn->batch[dl]);
                    if (req->temporal) cr_assert_eq(sn->time[sl], t);
                    if (!replace)
                        for (int64_t q2 = b->dst_offsets[di]; q2 < q; q2++) cr_assert_neq(b->edge_ids[q2], id);
                    if (req->temporal == FS_TEMPORAL_LAST) { /* exactly the most recent k */
                        int in_last = 0;
                        for (int64_t z = c - want; z < c; z++) in_last |= elig[z] == id;
                        cr_assert(in_last, "strategy last: edge %lld is not among the %lld most recent", (long long)id,
                                  (long long)want);
                    }
                }
            }
        }
}

TestSuite(typed, .init = setup_graph, .fini = teardown_graph);

Test(typed, invariants_hold_for_every_mode_frontier_and_time_rule)
{
    const int fan[4] = {3, 2, 4, 2}, fan_all[4] = {-1, 2, -1, 1}, fan_timed[4] = {3, 2, 4, 0};
    const tsel_t times[] = {{FS_TEMPORAL_OFF, 0, 0}, {FS_TEMPORAL_UNIFORM, 0, 0}, {FS_TEMPORAL_UNIFORM, 1, 0},
                            {FS_TEMPORAL_UNIFORM, 0, 30}, {FS_TEMPORAL_LAST, 0, 0}, {FS_TEMPORAL_LAST, 1, 25}};
    int64_t seeds_a[12], seeds_b[5];
    for (int i = 0; i < 12; i++) seeds_a[i] = (i * 7) % 60;
    for (int i = 0; i < 5; i++) seeds_b[i] = (i * 11) % 40;
    seeds_a[11] = seeds_a[0]; /* a repeated seed merges (outside disjoint sampling) */
    fs_typed_seeds_t groups[2] = {{.type = 0, .count = 12, .ids = seeds_a}, {.type = 1, .count = 5, .ids = seeds_b}};
    fs_error_t err = {0};
    int runs = 0;
    for (size_t ti = 0; ti < sizeof times / sizeof *times; ti++)
        for (int mode = 0; mode < FS_SAMPLE_MODE_COUNT_; mode++) {
            if (times[ti].temporal == FS_TEMPORAL_LAST && mode != FS_SAMPLE_UNIFORM) continue;
            for (int variant = 0; variant < 6; variant++) {
                const int *f = times[ti].temporal ? fan_timed : variant == 5 ? fan_all : fan;
                int weighted = mode >= FS_SAMPLE_WEIGHTED;
                int wf[4] = {f[0], 0, 0, 0}; /* only (A, cites, A) is weighted */
                treq_t r;
                make_req(&r, 3, weighted ? wf : f, (fs_sample_mode_t)mode);
                r.req.frontier = variant & 1 ? FS_FRONTIER_ALL : FS_FRONTIER_NEW;
                r.req.disjoint = (variant & 2) != 0;
                r.req.temporal = times[ti].temporal, r.req.strict = times[ti].strict, r.req.window = times[ti].window;
                r.req.seed = 1000 + (uint64_t)runs;
                fs_typed_result_t res;
                cr_assert_eq(fs_typed_sample_cpu(S, &G->view, &r.req, groups, 2, NULL, 0, &res, &err), FS_OK, "%s",
                             err.msg);
                judge(&res, &r.req, groups, 2, NULL, 0);
                runs++;
            }
        }
    cr_assert_gt(runs, 60);
}

Test(typed, same_request_same_result)
{
    int64_t seeds[4] = {1, 2, 3, 4};
    fs_typed_seeds_t g1 = {.type = 0, .count = 4, .ids = seeds};
    treq_t r;
    const int fan[4] = {5, 3, 3, 2};
    make_req(&r, 2, fan, FS_SAMPLE_UNIFORM);
    r.req.seed = 9;
    fs_typed_sampler_t *other;
    cr_assert_eq(fs_typed_sampler_create(&other, NULL), FS_OK);
    fs_typed_result_t a, b;
    cr_assert_eq(fs_typed_sample_cpu(S, &G->view, &r.req, &g1, 1, NULL, 0, &a, NULL), FS_OK);
    cr_assert_eq(fs_typed_sample_cpu(other, &G->view, &r.req, &g1, 1, NULL, 0, &b, NULL), FS_OK);
    for (int t = 0; t < G->T; t++) {
        cr_assert_eq(a.type[t].num_nodes, b.type[t].num_nodes);
        cr_assert_arr_eq(a.type[t].nodes, b.type[t].nodes, sizeof(int64_t) * (size_t)a.type[t].num_nodes);
    }
    for (int i = 0; i < 2 * G->E; i++) {
        cr_assert_eq(a.block[i].num_edges, b.block[i].num_edges);
        cr_assert_arr_eq(a.block[i].edge_ids, b.block[i].edge_ids, sizeof(int64_t) * (size_t)a.block[i].num_edges);
    }
    fs_typed_sampler_destroy(other);
}

/* Two results bit for bit: every type's nodes, batches and times (b's
 * times as (time + shift) / scale), and every block. */
static void assert_same_scaled(const fs_typed_result_t *a, const fs_typed_result_t *b, int hops, int64_t scale,
                               int64_t shift, const char *what)
{
    for (int t = 0; t < G->T; t++) {
        const fs_typed_nodes_t *x = &a->type[t], *y = &b->type[t];
        size_t n = sizeof(int64_t) * (size_t)x->num_nodes;
        cr_assert_eq(x->num_nodes, y->num_nodes, "%s: type %d: %lld against %lld nodes", what, t,
                     (long long)x->num_nodes, (long long)y->num_nodes);
        cr_assert_arr_eq(x->nodes, y->nodes, n, "%s: type %d's nodes differ", what, t);
        if (x->batch) cr_assert_arr_eq(x->batch, y->batch, n, "%s: type %d's batches differ", what, t);
        for (int64_t i = 0; x->time && i < x->num_nodes; i++)
            cr_assert_eq(x->time[i], (y->time[i] + shift) / scale, "%s: type %d's node %lld's time differs", what, t,
                         (long long)i);
    }
    for (int i = 0; i < hops * G->E; i++) {
        const fs_block_t *x = &a->block[i], *y = &b->block[i];
        size_t m = sizeof(int64_t) * (size_t)x->num_edges;
        cr_assert_eq(x->num_edges, y->num_edges, "%s: block %d: %lld against %lld edges", what, i,
                     (long long)x->num_edges, (long long)y->num_edges);
        cr_assert_arr_eq(x->dst_offsets, y->dst_offsets, sizeof(int64_t) * (size_t)(x->num_dst + 1), "%s: block %d", what, i);
        cr_assert_arr_eq(x->edge_src, y->edge_src, m, "%s: block %d's sources differ", what, i);
        cr_assert_arr_eq(x->edge_ids, y->edge_ids, m, "%s: block %d's edge ids differ", what, i);
    }
}

static void assert_same_result(const fs_typed_result_t *a, const fs_typed_result_t *b, int hops, const char *what)
{
    assert_same_scaled(a, b, hops, 1, 0, what);
}

/* Every time rule, with seed times below, inside and past the graph's
 * times: the summaries (which settle most rows and narrow the others'
 * searches to two pivots) pick exactly what searching every row picks. */
Test(typed, time_summaries_change_no_result)
{
    const tsel_t rules[] = {{FS_TEMPORAL_UNIFORM, 0, 0}, {FS_TEMPORAL_UNIFORM, 1, 0}, {FS_TEMPORAL_UNIFORM, 0, 30},
                            {FS_TEMPORAL_UNIFORM, 1, 12}, {FS_TEMPORAL_LAST, 0, 0}, {FS_TEMPORAL_LAST, 1, 25}};
    const int fan[4] = {3, 2, 4, 0}, fan_all[4] = {-1, -1, -1, 0};
    int64_t ids[20], times[20];
    for (int i = 0; i < 20; i++) ids[i] = (i * 13) % 60, times[i] = -5 + i * 7; /* -5 .. 128: the times are 0..99 */
    fs_typed_seeds_t g = {.type = 0, .count = 20, .ids = ids, .time = times};
    fs_typed_sampler_t *other;
    cr_assert_eq(fs_typed_sampler_create(&other, NULL), FS_OK);
    for (size_t k = 0; k < sizeof rules / sizeof *rules; k++)
        for (int all = 0; all < 2; all++) {
            treq_t r;
            make_req(&r, 2, all ? fan_all : fan, FS_SAMPLE_UNIFORM);
            r.req.temporal = rules[k].temporal, r.req.strict = rules[k].strict, r.req.window = rules[k].window;
            r.req.seed = 77 + k;
            fs_typed_result_t a, b;
            fs_error_t err = {0};
            cr_assert_eq(fs_typed_sample_cpu(S, &G->view, &r.req, &g, 1, NULL, 0, &a, &err), FS_OK, "%s", err.msg);
            judge(&a, &r.req, &g, 1, NULL, 0);
            cr_assert_eq(fs_typed_sample_cpu(other, &G->plain, &r.req, &g, 1, NULL, 0, &b, &err), FS_OK, "%s", err.msg);
            char what[64];
            snprintf(what, sizeof what, "rule %zu, fanouts %s", k, all ? "all" : "3,2,4");
            assert_same_result(&a, &b, 2, what);
        }
    fs_typed_sampler_destroy(other);
}

/* Times spanning more than int32 (nanoseconds, below zero) make the
 * summaries' steps rounded, not the times: they then only settle rows
 * wholly past or before a seed, and still pick exactly what the searches
 * pick. The same graph with each time t as t * 2^30 - 2^40 (an order-
 * keeping map, the window scaled alike) picks the same edges. */
Test(typed, rounded_time_summaries_change_no_result)
{
    const int64_t scale = (int64_t)1 << 30, shift = (int64_t)1 << 40;
    fs_typed_etype_t et[4], plain_et[4];
    int64_t *scaled[4] = {0}, *ntime[3];
    fs_time_row_t *rows[4] = {0};
    for (int e = 0; e < 4; e++) {
        et[e] = plain_et[e] = G->et[e];
        et[e].time_rows = plain_et[e].time_rows = NULL;
        if (!G->et[e].time) continue;
        scaled[e] = malloc(sizeof(int64_t) * (size_t)G->et[e].num_edges);
        for (int64_t q = 0; q < G->et[e].num_edges; q++) scaled[e][q] = G->et[e].time[q] * scale - shift;
        et[e].time = plain_et[e].time = scaled[e];
        cr_assert_eq(fs_typed_time_rows(&et[e], G->count[et[e].dst_type], &rows[e], NULL), FS_OK);
        cr_assert_gt(et[e].time_shift, 0, "edge type %d: a span of 2^36 must round", e);
        cr_assert_eq(et[e].time_base, -shift);
    }
    for (int t = 0; t < 3; t++) {
        ntime[t] = malloc(sizeof(int64_t) * (size_t)G->count[t]);
        for (int64_t v = 0; v < G->count[t]; v++) ntime[t][v] = G->ntime[t][v] * scale - shift;
    }
    fs_typed_view_t view = G->view, plain = G->view;
    view.etype = et, plain.etype = plain_et, view.node_time = plain.node_time = (const int64_t *const *)ntime;
    int64_t ids[16];
    for (int i = 0; i < 16; i++) ids[i] = (i * 17) % 60;
    fs_typed_seeds_t g = {.type = 0, .count = 16, .ids = ids};
    const tsel_t rules[] = {{FS_TEMPORAL_UNIFORM, 0, 0}, {FS_TEMPORAL_UNIFORM, 1, 0}, {FS_TEMPORAL_UNIFORM, 0, 30},
                            {FS_TEMPORAL_LAST, 1, 0}};
    const int fan[4] = {3, 2, 4, 0};
    fs_typed_sampler_t *other;
    cr_assert_eq(fs_typed_sampler_create(&other, NULL), FS_OK);
    for (size_t k = 0; k < sizeof rules / sizeof *rules; k++) {
        treq_t r;
        make_req(&r, 2, fan, FS_SAMPLE_UNIFORM);
        r.req.temporal = rules[k].temporal, r.req.strict = rules[k].strict, r.req.seed = 5 + k;
        fs_typed_result_t a, b, c;
        r.req.window = rules[k].window;
        cr_assert_eq(fs_typed_sample_cpu(S, &G->view, &r.req, &g, 1, NULL, 0, &a, NULL), FS_OK);
        r.req.window = rules[k].window * scale;
        cr_assert_eq(fs_typed_sample_cpu(other, &view, &r.req, &g, 1, NULL, 0, &b, NULL), FS_OK);
        assert_same_scaled(&a, &b, 2, scale, shift, "scaled times, summarised"); /* the same picks */
        fs_typed_sampler_t *third;
        cr_assert_eq(fs_typed_sampler_create(&third, NULL), FS_OK);
        cr_assert_eq(fs_typed_sample_cpu(third, &plain, &r.req, &g, 1, NULL, 0, &c, NULL), FS_OK);
        assert_same_result(&b, &c, 2, "scaled times, searched");
        fs_typed_sampler_destroy(third);
    }
    fs_typed_sampler_destroy(other);
    for (int e = 0; e < 4; e++) {
        if (rows[e]) fs_typed_time_rows_free(rows[e], G->count[et[e].dst_type]);
        free(scaled[e]);
    }
    for (int t = 0; t < 3; t++) free(ntime[t]);
}

/* A summary holds its row's start and length, its first and last times and
 * the pivots at j * (degree - 1) / 4, read back here from the CSC. */
Test(typed, time_summaries_hold_each_rows_pivots)
{
    const fs_typed_etype_t *et = &G->et[0];
    cr_assert_eq(et->time_shift, 0);
    cr_assert_eq(et->time_base, 0, "the smallest of (A, cites, A)'s times is 0");
    int64_t nd = G->count[et->dst_type], longer = 0;
    for (int64_t d = 0; d < nd; d++) {
        const fs_time_row_t *r = &et->time_rows[d];
        int64_t b = et->indptr[d], deg = et->indptr[d + 1] - b;
        cr_assert_eq(r->start, b);
        cr_assert_eq(r->degree, deg);
        for (int j = 0; j < FS_TIME_PIVOTS; j++) {
            int64_t want = deg ? et->time[b + j * (deg - 1) / (FS_TIME_PIVOTS - 1)] - et->time_base : 0;
            cr_assert_eq(r->step[j], want, "row %lld pivot %d", (long long)d, j);
        }
        longer += deg > FS_TIME_PIVOTS;
    }
    cr_assert_gt(longer, 10);
    cr_assert_eq(et->time_rows[nd].start, et->num_edges);
}

/* Disjoint trees keep their ids in a table per node type sized from the
 * last request and grown within one: a request's result is the same on a
 * fresh sampler, on one whose tables a larger request left big, and on one
 * that must grow them mid-request. */
Test(typed, disjoint_results_do_not_depend_on_the_samplers_history)
{
    int64_t all[60], few[3] = {4, 9, 33};
    for (int i = 0; i < 60; i++) all[i] = i;
    fs_typed_seeds_t big = {.type = 0, .count = 60, .ids = all}, small = {.type = 0, .count = 3, .ids = few};
    const int fan_all[2][4] = {{-1, -1, -1, -1}, {-1, -1, -1, 0}}, fan[2][4] = {{4, 3, 3, 2}, {4, 3, 3, 0}};
    for (int timed = 0; timed < 2; timed++) { /* (C, at, A) has no times */
        treq_t rb, rs;
        make_req(&rb, 2, fan_all[timed], FS_SAMPLE_UNIFORM);
        make_req(&rs, 2, fan[timed], FS_SAMPLE_UNIFORM);
        rb.req.disjoint = rs.req.disjoint = 1;
        rb.req.temporal = rs.req.temporal = timed ? FS_TEMPORAL_UNIFORM : FS_TEMPORAL_OFF;
        rb.req.seed = 3, rs.req.seed = 4;
        fs_typed_sampler_t *fresh, *used;
        cr_assert_eq(fs_typed_sampler_create(&fresh, NULL), FS_OK);
        cr_assert_eq(fs_typed_sampler_create(&used, NULL), FS_OK);
        fs_typed_result_t a, b;
        /* the big request on a fresh sampler grows its tables mid-request */
        fs_error_t err = {0};
        cr_assert_eq(fs_typed_sample_cpu(fresh, &G->view, &rb.req, &big, 1, NULL, 0, &a, &err), FS_OK, "%s", err.msg);
        cr_assert_gt(a.type[0].num_nodes, 512, "the request must outgrow a fresh table (1,024 slots at load 1/2)");
        judge(&a, &rb.req, &big, 1, NULL, 0);
        cr_assert_eq(fs_typed_sample_cpu(used, &G->view, &rs.req, &small, 1, NULL, 0, &b, NULL), FS_OK);
        cr_assert_eq(fs_typed_sample_cpu(used, &G->view, &rb.req, &big, 1, NULL, 0, &b, NULL), FS_OK);
        assert_same_result(&a, &b, 2, "the big request after a small one");
        /* the small request on tables the big one left large, and on fresh ones */
        cr_assert_eq(fs_typed_sample_cpu(used, &G->view, &rs.req, &small, 1, NULL, 0, &a, NULL), FS_OK);
        fs_typed_sampler_t *third;
        cr_assert_eq(fs_typed_sample_cpu(fresh, &G->view, &rs.req, &small, 1, NULL, 0, &b, NULL), FS_OK);
        assert_same_result(&a, &b, 2, "the small request after the big one");
        cr_assert_eq(fs_typed_sampler_create(&third, NULL), FS_OK);
        cr_assert_eq(fs_typed_sample_cpu(third, &G->view, &rs.req, &small, 1, NULL, 0, &b, NULL), FS_OK);
        assert_same_result(&a, &b, 2, "the small request on a fresh sampler");
        judge(&b, &rs.req, &small, 1, NULL, 0);
        fs_typed_sampler_destroy(third);
        fs_typed_sampler_destroy(fresh);
        fs_typed_sampler_destroy(used);
    }
}

/* ---- distributions --------------------------------------------------------- */

static double chi2(const double *obs, const double *exp, int k)
{
    double x = 0;
    for (int i = 0; i < k; i++) x += (obs[i] - exp[i]) * (obs[i] - exp[i]) / exp[i];
    return x;
}

/* P(chi2_dof > crit) = 0.001, Wilson-Hilferty. */
static double chi2_crit(int dof)
{
    double a = 2.0 / (9.0 * dof), z = 3.0902;
    return dof * pow(1 - a + z * sqrt(a), 3);
}

/* A star into A's node 0: 24 edges from B (edge type 0, times 0..23,
 * weights 1..24) and 12 from C (edge type 1, untimed). */
static tgraph_t *star_graph(void)
{
    tgraph_t *g = calloc(1, sizeof *g);
    g->T = 3, g->E = 2;
    g->count[0] = 1, g->count[1] = 24, g->count[2] = 12;
    for (int e = 0; e < 2; e++) {
        elist_t *l = g->el[e] = calloc(1, sizeof *l);
        l->src_type = e + 1, l->dst_type = 0, l->n = e ? 12 : 24, l->timed = !e, l->weighted = !e;
        for (int64_t i = 0; i < l->n; i++) l->src[i] = i, l->dst[i] = 0, l->time[i] = (i * 5) % 24, l->w[i] = (float)(i + 1);
        build_csc(g, e);
    }
    g->view = (fs_typed_view_t){.num_node_types = 3, .count = g->count, .num_edge_types = 2, .etype = g->et};
    return g;
}

static void free_star(tgraph_t *g)
{
    for (int e = 0; e < g->E; e++) free(g->el[e]->indptr), free(g->el[e]);
    free(g);
}

/* Counts picks per edge id of each edge type over `trials` requests. */
static void tally(tgraph_t *g, const fs_typed_req_t *req0, int64_t seed_time, int trials, double count[2][24])
{
    int64_t seed = 0;
    fs_typed_seeds_t sg = {.type = 0, .count = 1, .ids = &seed, .time = &seed_time};
    memset(count, 0, sizeof(double) * 48);
    fs_error_t err = {0};
    for (int t = 0; t < trials; t++) {
        fs_typed_req_t r = *req0;
        r.seed = (uint64_t)t * 7919 + 3;
        r.want_edge_ids = 1;
        fs_typed_result_t res;
        cr_assert_eq(fs_typed_sample_cpu(S, &g->view, &r, &sg, 1, NULL, 0, &res, &err), FS_OK, "%s", err.msg);
        for (int e = 0; e < 2; e++)
            for (int64_t q = 0; q < res.block[e].num_edges; q++) count[e][res.block[e].edge_ids[q]] += 1;
    }
}

Test(typed, uniform_per_edge_type_and_temporal_windows_are_uniform_over_the_eligible)
{
    tgraph_t *g = star_graph();
    int fan[2] = {5, 4};
    fs_typed_req_t r = {.num_hops = 1, .fanout = fan};
    double count[2][24], obs[24], exp[24];
    const int trials = 20000;
    tally(g, &r, 0, trials, count); /* untimed: every edge, fanout / degree */
    for (int e = 0; e < 2; e++) {
        int n = e ? 12 : 24;
        for (int i = 0; i < n; i++) obs[i] = count[e][i], exp[i] = (double)trials * fan[e] / n;
        double x = chi2(obs, exp, n);
        cr_assert_lt(x, chi2_crit(n - 1), "edge type %d: chi2 %.1f", e, x);
    }
    const tsel_t rules[3] = {{FS_TEMPORAL_UNIFORM, 0, 0}, {FS_TEMPORAL_UNIFORM, 1, 0}, {FS_TEMPORAL_UNIFORM, 0, 6}};
    fan[1] = 0; /* edge type 1 has no times */
    for (int k = 0; k < 3; k++) {
        r.temporal = rules[k].temporal, r.strict = rules[k].strict, r.window = rules[k].window;
        tally(g, &r, 15, trials, count);
        int n = 0;
        for (int i = 0; i < 24; i++) {
            if (!edge_eligible(g->el[0], i, 15, &rules[k])) {
                cr_assert_eq(count[0][i], 0, "rule %d: ineligible edge %d (time %lld) picked", k, i,
                             (long long)g->el[0]->time[i]);
                continue;
            }
            obs[n++] = count[0][i];
        }
        for (int i = 0; i < n; i++) exp[i] = (double)trials * (fan[0] < n ? fan[0] : n) / n;
        double x = chi2(obs, exp, n);
        cr_assert_lt(x, chi2_crit(n - 1), "rule %d: %d eligible, chi2 %.1f", k, n, x);
    }
    free_star(g);
}

Test(typed, weighted_picks_follow_weights_within_the_time_limit)
{
    tgraph_t *g = star_graph();
    int fan[2] = {1, 0};
    fs_typed_req_t r = {.num_hops = 1, .fanout = fan, .mode = {FS_SAMPLE_WEIGHTED}, .temporal = FS_TEMPORAL_UNIFORM};
    double count[2][24], obs[24], exp[24], total = 0;
    const int trials = 30000;
    tally(g, &r, 11, trials, count);
    int n = 0;
    for (int i = 0; i < 24; i++)
        if (g->el[0]->time[i] <= 11) total += g->el[0]->w[i];
    for (int i = 0; i < 24; i++) {
        if (g->el[0]->time[i] > 11) {
            cr_assert_eq(count[0][i], 0);
            continue;
        }
        obs[n] = count[0][i], exp[n++] = trials * g->el[0]->w[i] / total;
    }
    double x = chi2(obs, exp, n);
    cr_assert_lt(x, chi2_crit(n - 1), "weighted, time-limited: chi2 %.1f over %d edges", x, n);
    r.mode[0] = FS_SAMPLE_WEIGHTED_REPLACE, fan[0] = 6;
    tally(g, &r, 11, trials / 6, count);
    n = 0;
    for (int i = 0; i < 24; i++)
        if (g->el[0]->time[i] <= 11) obs[n] = count[0][i], exp[n++] = (trials / 6) * 6.0 * g->el[0]->w[i] / total;
    x = chi2(obs, exp, n);
    cr_assert_lt(x, chi2_crit(n - 1), "weighted with replacement: chi2 %.1f", x);
    free_star(g);
}

/* ---- the one-type case is the homogeneous engine ------------------------ */

Test(typed, one_type_with_every_node_expanded_equals_the_homogeneous_engine)
{
    int64_t n = G->count[0];
    const elist_t *l = G->el[0];
    int64_t ind64[MAXE];
    for (int64_t p = 0; p < l->n; p++) ind64[p] = l->ind[p];
    fs_sampler_t *hs;
    cr_assert_eq(fs_sampler_create(&hs, NULL), FS_OK);
    int64_t seeds[7] = {3, 9, 3, 20, 41, 59, 0};
    for (int wide = 0; wide < 2; wide++)
        for (int mode = 0; mode < FS_SAMPLE_MODE_COUNT_; mode++) {
            fs_csr_view_t hv;
            fs_csr_view_init(&hv, n, l->indptr, wide ? (const void *)ind64 : l->ind, wide ? FS_DTYPE_I64 : FS_DTYPE_I32,
                             l->pw);
            fs_typed_etype_t et = {.src_type = 0, .dst_type = 0, .num_edges = l->n, .indptr = l->indptr,
                                   .indices = hv.part[0].indices, .index_dtype = hv.index_dtype, .weights = l->pw,
                                   .reverse = -1};
            fs_typed_view_t tv = {.num_node_types = 1, .count = &n, .num_edge_types = 1, .etype = &et};
            int fan[3] = {4, -1, 2};
            fs_sample_req_t hr = {.num_hops = 3, .fanout = {4, -1, 2}, .seed = 77, .want_edge_ids = 1};
            fs_typed_req_t tr = {.num_hops = 3, .fanout = fan, .seed = 77, .want_edge_ids = 1, .frontier = FS_FRONTIER_ALL};
            for (int h = 0; h < 3; h++) hr.mode[h] = tr.mode[h] = (fs_sample_mode_t)mode;
            fs_sample_result_t a;
            fs_typed_result_t b;
            fs_typed_seeds_t sg = {.type = 0, .count = 7, .ids = seeds};
            cr_assert_eq(fs_sample_cpu(hs, &hv, seeds, 7, &hr, &a, NULL, NULL), FS_OK);
            cr_assert_eq(fs_typed_sample_cpu(S, &tv, &tr, &sg, 1, NULL, 0, &b, NULL), FS_OK);
            cr_assert_eq(a.num_nodes, b.type[0].num_nodes, "mode %d: %lld vs %lld nodes", mode, (long long)a.num_nodes,
                         (long long)b.type[0].num_nodes);
            cr_assert_arr_eq(a.nodes, b.type[0].nodes, sizeof(int64_t) * (size_t)a.num_nodes);
            cr_assert_arr_eq(a.seed_local, b.seed_local[0], sizeof(int64_t) * 7);
            for (int h = 0; h < 3; h++) {
                const fs_block_t *x = &a.block[h], *y = &b.block[h];
                cr_assert_eq(x->num_dst, y->num_dst);
                cr_assert_eq(x->num_src, y->num_src);
                cr_assert_eq(x->num_edges, y->num_edges, "mode %d hop %d", mode, h);
                size_t eb = sizeof(int64_t) * (size_t)x->num_edges;
                cr_assert_arr_eq(x->dst_offsets, y->dst_offsets, sizeof(int64_t) * (size_t)(x->num_dst + 1));
                cr_assert_arr_eq(x->edge_dst, y->edge_dst, eb);
                cr_assert_arr_eq(x->edge_src, y->edge_src, eb);
                cr_assert_arr_eq(x->edge_ids, y->edge_ids, eb);
            }
        }
    fs_sampler_destroy(hs);
}

/* ---- link batches ------------------------------------------------------------ */

static int graph_has_edge(const elist_t *l, int64_t s, int64_t d)
{
    for (int64_t i = 0; i < l->n; i++)
        if (l->src[i] == s && l->dst[i] == d) return 1;
    return 0;
}

Test(typed, link_batches_exclude_seed_edges_and_reverses_and_label_like_pyg)
{
    /* seed edges: the first 16 (B, writes, A) edges, whose reverse is etype 2 */
    const elist_t *l = G->el[1];
    int64_t src[16], dst[16], lab[16];
    for (int i = 0; i < 16; i++) src[i] = l->src[i], dst[i] = l->dst[i], lab[i] = i % 3;
    const int fan[4] = {4, 5, 5, 2};
    fs_error_t err = {0};
    for (int neg = 0; neg < FS_NEG_COUNT_; neg++) {
        treq_t r;
        make_req(&r, 2, fan, FS_SAMPLE_UNIFORM);
        r.req.seed = 5 + (uint64_t)neg;
        fs_typed_link_t lr = {.etype = 1, .count = 16, .src = src, .dst = dst, .label = neg == FS_NEG_TRIPLET ? NULL : lab,
                            .neg = (fs_neg_mode_t)neg, .amount = neg == FS_NEG_TRIPLET ? 3 : 2, .strict = 1,
                            .exclude_seed_edges = 1};
        fs_link_result_t res;
        cr_assert_eq(fs_link_sample_cpu(S, &G->view, &r.req, &lr, &res, &err), FS_OK, "%s", err.msg);
        fs_typed_exclude_t x[32];
        int64_t nx = fs_link_exclusions(&G->view, 1, src, dst, 16, x);
        cr_assert_eq(nx, 32);
        fs_typed_seeds_t groups[2] = {{.type = 1, .count = 16, .ids = src}, {.type = 0, .count = 16, .ids = dst}};
        judge(&res.sub, &r.req, groups, 2, x, nx); /* counts use the eligible set less the exclusions */
        for (int h = 0; h < 2; h++)                /* no seed edge, either way round, in the subgraph */
            for (int e = 1; e <= 2; e++) {
                const fs_block_t *b = &res.sub.block[h * G->E + e];
                const fs_typed_nodes_t *dn = &res.sub.type[G->el[e]->dst_type], *sn = &res.sub.type[G->el[e]->src_type];
                for (int64_t q = 0; q < b->num_edges; q++) {
                    int64_t s = sn->nodes[b->edge_src[q]], d = dn->nodes[b->edge_dst[q]];
                    for (int i = 0; i < 16; i++)
                        cr_assert(!(e == 1 ? s == src[i] && d == dst[i] : s == dst[i] && d == src[i]),
                                  "seed edge %d (%lld -> %lld) leaked into hop %d", i, (long long)src[i],
                                  (long long)dst[i], h);
                }
            }
        const fs_typed_nodes_t *bs = &res.sub.type[1], *as = &res.sub.type[0];
        if (neg == FS_NEG_TRIPLET) {
            cr_assert_eq(res.num_neg_per_src, 3);
            for (int i = 0; i < 16; i++) {
                cr_assert_eq(bs->nodes[res.src_index[i]], src[i]);
                cr_assert_eq(as->nodes[res.dst_pos_index[i]], dst[i]);
                for (int k = 0; k < 3; k++)
                    cr_assert(!graph_has_edge(l, src[i], as->nodes[res.dst_neg_index[i * 3 + k]]),
                              "strict triplet negative is an edge");
            }
            continue;
        }
        int64_t nneg = neg == FS_NEG_BINARY ? 32 : 0;
        cr_assert_eq(res.num_labels, 16 + nneg);
        for (int64_t i = 0; i < res.num_labels; i++) {
            int64_t s = bs->nodes[res.label_src[i]], d = as->nodes[res.label_dst[i]];
            if (i < 16) {
                cr_assert_eq(s, src[i]);
                cr_assert_eq(d, dst[i]);
                cr_assert_eq(res.label[i], lab[i] + (neg == FS_NEG_BINARY), "PyG shifts given labels by one");
            } else {
                cr_assert_eq(res.label[i], 0);
                cr_assert(!graph_has_edge(l, s, d), "strict negative %lld -> %lld is an edge", (long long)s,
                          (long long)d);
            }
        }
    }
}

/* The exclusions' lookup table is sized per request: a small batch after a
 * large one must see all of its exclusions, and so be the batch a fresh
 * sampler gives (a stale table size once let seed edges back in). */
Test(typed, link_batches_do_not_depend_on_earlier_requests)
{
    const elist_t *l = G->el[1];
    int64_t big = l->n < 512 ? l->n : 512, src[512], dst[512];
    for (int64_t i = 0; i < big; i++) src[i] = l->src[i], dst[i] = l->dst[i];
    const int fan[4] = {4, 5, 5, 2};
    treq_t r;
    make_req(&r, 2, fan, FS_SAMPLE_UNIFORM);
    fs_typed_link_t large = {.etype = 1, .count = big, .src = src, .dst = dst, .exclude_seed_edges = 1};
    fs_typed_link_t small = {.etype = 1, .count = 3, .src = src + 7, .dst = dst + 7, .exclude_seed_edges = 1};
    fs_typed_sampler_t *fresh;
    fs_error_t err = {0};
    cr_assert_eq(fs_typed_sampler_create(&fresh, &err), FS_OK);
    fs_link_result_t a, b;
    cr_assert_eq(fs_link_sample_cpu(fresh, &G->view, &r.req, &small, &a, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_link_sample_cpu(S, &G->view, &r.req, &large, &b, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_link_sample_cpu(S, &G->view, &r.req, &small, &b, &err), FS_OK, "%s", err.msg);
    for (int t = 0; t < G->view.num_node_types; t++) {
        cr_assert_eq(a.sub.type[t].num_nodes, b.sub.type[t].num_nodes, "type %d", t);
        cr_assert_eq(memcmp(a.sub.type[t].nodes, b.sub.type[t].nodes, (size_t)a.sub.type[t].num_nodes * 8), 0);
    }
    for (int i = 0; i < 2 * G->E; i++) {
        cr_assert_eq(a.sub.block[i].num_edges, b.sub.block[i].num_edges, "block %d", i);
        cr_assert_eq(memcmp(a.sub.block[i].edge_src, b.sub.block[i].edge_src, (size_t)a.sub.block[i].num_edges * 8), 0);
    }
    fs_typed_sampler_destroy(fresh);
}

Test(typed, undirected_link_seeds_exclude_both_directions)
{
    /* (A, cites, A) has no reverse edge type: an undirected graph stored
     * both ways; both (s, d) and (d, s) are excluded */
    const elist_t *l = G->el[0];
    int64_t src[8], dst[8];
    for (int i = 0; i < 8; i++) src[i] = l->src[i * 5], dst[i] = l->dst[i * 5];
    const int fan[4] = {-1, 0, 0, 0};
    treq_t r;
    make_req(&r, 2, fan, FS_SAMPLE_UNIFORM);
    fs_typed_link_t lr = {.etype = 0, .count = 8, .src = src, .dst = dst, .exclude_seed_edges = 1};
    fs_link_result_t res;
    fs_error_t err = {0};
    cr_assert_eq(fs_link_sample_cpu(S, &G->view, &r.req, &lr, &res, &err), FS_OK, "%s", err.msg);
    const fs_typed_nodes_t *a = &res.sub.type[0];
    for (int h = 0; h < 2; h++) {
        const fs_block_t *b = &res.sub.block[h * G->E];
        for (int64_t q = 0; q < b->num_edges; q++) {
            int64_t s = a->nodes[b->edge_src[q]], d = a->nodes[b->edge_dst[q]];
            for (int i = 0; i < 8; i++)
                cr_assert(!((s == src[i] && d == dst[i]) || (s == dst[i] && d == src[i])), "seed edge %d leaked", i);
        }
    }
    cr_assert_gt(res.sub.block[0].num_edges, 0, "fanout -1 still samples the other edges");
}

Test(typed, negatives_are_uniform_or_follow_degree_to_the_three_quarters)
{
    int64_t src[64], dst[64];
    for (int i = 0; i < 64; i++) src[i] = G->el[1]->src[i], dst[i] = G->el[1]->dst[i];
    const int fan[4] = {0, 0, 0, 0};
    double obs[60], exp[60], deg[60] = {0}, total = 0;
    for (int64_t i = 0; i < G->el[1]->n; i++) deg[G->el[1]->dst[i]] += 1;
    for (int v = 0; v < 60; v++) total += pow(deg[v], 0.75);
    for (int weighted = 0; weighted < 2; weighted++) {
        memset(obs, 0, sizeof obs);
        int64_t draws = 0;
        for (int t = 0; t < 400; t++) {
            treq_t r;
            make_req(&r, 1, fan, FS_SAMPLE_UNIFORM);
            r.req.seed = (uint64_t)t;
            fs_typed_link_t lr = {.etype = 1, .count = 64, .src = src, .dst = dst, .neg = FS_NEG_TRIPLET, .amount = 2,
                                .neg_weighted = weighted};
            fs_link_result_t res;
            cr_assert_eq(fs_link_sample_cpu(S, &G->view, &r.req, &lr, &res, NULL), FS_OK);
            for (int i = 0; i < 128; i++) obs[res.sub.type[0].nodes[res.dst_neg_index[i]]] += 1, draws++;
        }
        int n = 0;
        for (int v = 0; v < 60; v++) {
            double p = weighted ? pow(deg[v], 0.75) / total : 1.0 / 60;
            if (p == 0) {
                cr_assert_eq(obs[v], 0, "a node of degree 0 drawn by degree");
                continue;
            }
            obs[n] = obs[v], exp[n++] = p * (double)draws;
        }
        double x = chi2(obs, exp, n);
        cr_assert_lt(x, chi2_crit(n - 1), "%s negatives: chi2 %.1f", weighted ? "degree^0.75" : "uniform", x);
    }
}

Test(typed, temporal_link_batches_never_see_edges_newer_than_the_seed_edge)
{
    const elist_t *l = G->el[0];
    int64_t src[20], dst[20], tm[20];
    for (int i = 0; i < 20; i++) src[i] = l->src[i], dst[i] = l->dst[i], tm[i] = l->time[i];
    const int fan[4] = {3, 2, 2, 0};
    treq_t r;
    make_req(&r, 2, fan, FS_SAMPLE_UNIFORM);
    r.req.temporal = FS_TEMPORAL_UNIFORM;
    fs_typed_link_t lr = {.etype = 0, .count = 20, .src = src, .dst = dst, .time = tm, .neg = FS_NEG_BINARY,
                        .amount = 1, .exclude_seed_edges = 1};
    fs_link_result_t res;
    fs_error_t err = {0};
    cr_assert_eq(fs_link_sample_cpu(S, &G->view, &r.req, &lr, &res, &err), FS_OK, "%s", err.msg);
    fs_typed_exclude_t x[40];
    int64_t nx = fs_link_exclusions(&G->view, 0, src, dst, 20, x);
    fs_typed_seeds_t groups[2] = {{.type = 0, .count = 20, .ids = src}, {.type = 0, .count = 20, .ids = dst}};
    judge(&res.sub, &r.req, groups, 2, x, nx); /* includes: no edge newer than its node's (the seed's) time */
    for (int64_t i = 0; i < res.num_labels; i++) cr_assert_eq(res.label_time[i], tm[i % 20]);
}

/* ---- bad requests ------------------------------------------------------------ */

static void expect_refusal(const fs_typed_req_t *req, const fs_typed_seeds_t *sg, int ng, const char *needle)
{
    fs_typed_result_t res;
    fs_error_t err = {0};
    cr_assert_eq(fs_typed_sample_cpu(S, &G->view, req, sg, ng, NULL, 0, &res, &err), FS_ERR_INVALID_ARGUMENT,
                 "expected a refusal naming '%s'", needle);
    cr_assert(strstr(err.msg, needle), "'%s' not in: %s", needle, err.msg);
}

Test(typed, bad_requests_name_the_problem)
{
    int64_t ok = 1, far = 60;
    fs_typed_seeds_t sg = {.type = 0, .count = 1, .ids = &ok};
    const int fan[4] = {2, 2, 2, 2};
    treq_t r;
    make_req(&r, 2, fan, FS_SAMPLE_UNIFORM);
    fs_typed_seeds_t bad_type = {.type = 7, .count = 1, .ids = &ok};
    expect_refusal(&r.req, &bad_type, 1, "node type 7");
    fs_typed_seeds_t bad_seed = {.type = 0, .count = 1, .ids = &far};
    expect_refusal(&r.req, &bad_seed, 1, "A seed 60");
    r.req.temporal = FS_TEMPORAL_UNIFORM; /* (C, at, A) has no times */
    expect_refusal(&r.req, &sg, 1, "(C, at, A) has no edge timestamps");
    r.req.temporal = FS_TEMPORAL_OFF;
    r.req.mode[1] = FS_SAMPLE_WEIGHTED;
    expect_refusal(&r.req, &sg, 1, "(B, writes, A) has no edge weights");
    r.req.mode[1] = FS_SAMPLE_UNIFORM;
    r.fanout[3] = -2;
    expect_refusal(&r.req, &sg, 1, "fanout -2");
    r.fanout[3] = 2;
    r.req.window = -1;
    expect_refusal(&r.req, &sg, 1, "window -1");
    r.req.window = 0;
    r.req.num_hops = 9;
    expect_refusal(&r.req, &sg, 1, "9 hops");
    make_req(&r, 2, (const int[4]){2, 2, 2, 0}, FS_SAMPLE_WEIGHTED);
    r.req.temporal = FS_TEMPORAL_LAST;
    expect_refusal(&r.req, &sg, 1, "'last'");
    fs_typed_link_t lr = {.etype = 1, .count = 1, .src = &ok, .dst = &ok, .neg = FS_NEG_BINARY, .amount = -1};
    fs_link_result_t res;
    fs_error_t err = {0};
    make_req(&r, 1, fan, FS_SAMPLE_UNIFORM);
    cr_assert_eq(fs_link_sample_cpu(S, &G->view, &r.req, &lr, &res, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "negative ratio -1"), "%s", err.msg);
    lr.amount = 1, lr.dst = &far;
    cr_assert_eq(fs_link_sample_cpu(S, &G->view, &r.req, &lr, &res, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "outside (B, writes, A)"), "%s", err.msg);
}

/* ---- limits ------------------------------------------------------------------ */

Test(typed, worst_case_bounds_every_result_and_refusals_name_the_limit)
{
    int64_t seeds[16];
    for (int i = 0; i < 16; i++) seeds[i] = (i * 13) % 60;
    fs_typed_seeds_t sg = {.type = 0, .count = 16, .ids = seeds};
    const int fans[3][4] = {{5, 3, 4, 2}, {-1, 2, -1, -1}, {8, 0, 8, 0}};
    fs_error_t err = {0};
    for (int f = 0; f < 3; f++)
        for (int mode = 0; mode < FS_SAMPLE_MODE_COUNT_; mode++)
            for (int v = 0; v < 4; v++) {
                if (mode >= FS_SAMPLE_WEIGHTED && f != 2) continue; /* only (A, cites, A) has weights */
                treq_t r;
                int wf[4] = {fans[f][0], 0, 0, 0};
                make_req(&r, 3, mode >= FS_SAMPLE_WEIGHTED ? wf : fans[f], (fs_sample_mode_t)mode);
                r.req.frontier = v & 1 ? FS_FRONTIER_ALL : FS_FRONTIER_NEW;
                r.req.disjoint = (v & 2) != 0;
                r.req.seed = 31 + (uint64_t)v;
                fs_typed_result_t res;
                cr_assert_eq(fs_typed_sample_cpu(S, &G->view, &r.req, &sg, 1, NULL, 0, &res, &err), FS_OK, "%s",
                             err.msg);
                double most, worst = fs_limits_typed_worst_bytes(&G->view, &r.req, 16, NULL, NULL, &most);
                int64_t got = fs_typed_result_bytes(&res) + 16 * 8;
                cr_assert_leq((double)got, worst, "fanouts %d mode %d variant %d: %lld bytes over the bound %.0f", f,
                              mode, v, (long long)got, worst);
                for (int t = 0; t < G->T; t++) cr_assert_leq((double)res.type[t].num_nodes, most);
            }
    fs_limits_t l;
    fs_limits_default(&l);
    treq_t r;
    make_req(&r, 2, fans[0], FS_SAMPLE_UNIFORM);
    cr_assert_eq(fs_limits_check_typed(&l, &G->view, &r.req, 16, NULL, NULL, &err), FS_OK, "%s", err.msg);
    l.max_ids = 10;
    cr_assert_eq(fs_limits_check_typed(&l, &G->view, &r.req, 16, NULL, NULL, &err), FS_ERR_RESOURCE);
    cr_assert(strstr(err.msg, "max_ids"), "%s", err.msg);
    fs_limits_default(&l);
    l.max_fanout_product = 10;
    cr_assert_eq(fs_limits_check_typed(&l, &G->view, &r.req, 16, NULL, NULL, &err), FS_ERR_RESOURCE);
    cr_assert(strstr(err.msg, "max_fanout_product"), "%s", err.msg);
    fs_limits_default(&l);
    l.max_response_bytes = 1000;
    cr_assert_eq(fs_limits_check_typed(&l, &G->view, &r.req, 16, NULL, NULL, &err), FS_ERR_RESOURCE);
    cr_assert(strstr(err.msg, "max_response_bytes"), "%s", err.msg);
}
