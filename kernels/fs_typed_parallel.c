/* fs_typed_parallel.c — one (hop, edge type) pass of the typed sampler on
 * the pool (fs_chunked.h): its destinations cut into chunks that the
 * workers pick, each row as the serial pass picks it (row_picks,
 * fs_typed_internal.h), then relabelled by the partitioned id map (many
 * threads) or inserted into the Fused-Map in chunk order (the in-order
 * inserter, a few). fs_typed_pass.c's fs_typed_run_pass chooses; both
 * give the serial pass's result bit for bit. */
#include "fs_typed.h"

#include "fs_typed_internal.h"

/* ---- a parallel pass (fs_chunked.h, docs/algorithms.md §6) --------------
 *
 * The pass's destinations in chunks picked on the pool, each row exactly as
 * pass_body picks it, then relabelled by the id map: the same blocks, node
 * lists, batches and times as the serial pass. */

typedef struct {
    fs_typed_sampler_t *s;
    const pass_t *p;
    _Atomic int failed;
} par_job_t;

/* The picks of one chunk into its staging; returns how many. Rows are
 * picked AHEAD rows before their
 * neighbours are read, those neighbours prefetched meanwhile: a picked
 * neighbour is a random read that misses every cache on a large graph.
 * Fanouts over RING_PICKS and whole rows read at once. */
#define AHEAD 6
#define RING_PICKS 64

typedef struct {
    int64_t m, b, v;
    const void *ind;          /* the row's part's sources */
    uint64_t tag;
    int all;                  /* every position 0..m-1 */
    int64_t pos[RING_PICKS];
} ring_row_t;

static inline __attribute__((always_inline)) void ring_fill(const fs_typed_sampler_t *s, pick_ws_t *w,
                                                            const pass_t *p, const int64_t *frontier,
                                                            const int64_t *dbatch, const int64_t *range, int64_t d,
                                                            uint64_t tag, ring_row_t *r, const int wide, const int full)
{ /* range: row d's eligible range (NULL outside temporal passes) */
    int64_t v = frontier[d], *pos;
    r->b = row_start(p, d);
    r->v = v;
    r->tag = tag;
    r->m = row_picks(s, w, p, d, v, r->b, row_degree(p, d), dbatch ? dbatch[d] : 0, range, &r->tag, &pos, full);
    r->all = pos == NULL;
    r->ind = row_indices(p, d);
    const char *base = (const char *)r->ind + r->b * (wide ? 8 : 4);
    if (r->all) {
        __builtin_prefetch(base, 0, 0);
        return;
    }
    for (int64_t q = 0; q < r->m; q++) {
        r->pos[q] = pos[q];
        __builtin_prefetch(base + pos[q] * (wide ? 8 : 4), 0, 0);
    }
}

static inline __attribute__((always_inline)) int64_t chunk_body(const fs_typed_sampler_t *s, pick_ws_t *w,
                                                                const pass_t *p, fs_chunk_t *c, const int wide,
                                                                const int full)
{
    const fs_typed_etype_t *et = p->et;
    const type_ws_t *dw = &s->tw[et->dst_type];
    const int64_t *frontier = dw->nodes.p;
    const int64_t *dbatch = full && s->disjoint ? dw->batch.p : NULL, *range = NULL;
    if (full && p->temporal) { /* reserved by pick_chunk; row d's at range + 2 * (d - c->d0) */
        fs_typed_eligible_ranges(p, dw->time.p, c->d0, c->d1, w);
        range = w->range.p;
    }
#define RANGE_OF(d) (range ? range + 2 * ((d) - c->d0) : NULL)
    int64_t e = 0, *key = c->key.p, *eid = p->want_ids ? c->eid.p : NULL, *pos;
    uint64_t tag = tag_of(s, et->src_type, 0);
    int ring = p->k != FS_FANOUT_ALL && p->k <= RING_PICKS;
    ring_row_t rows[AHEAD], now;
    c->off.p[0] = 0;
    for (int64_t d = c->d0; ring && d < c->d1 && d < c->d0 + AHEAD; d++)
        ring_fill(s, w, p, frontier, dbatch, RANGE_OF(d), d, tag, &rows[d % AHEAD], wide, full);
    for (int64_t d = c->d0; d < c->d1; d++) {
        int64_t ahead = ring ? AHEAD : 0;
        if (d + ahead + PREFETCH_AHEAD < c->d1) prefetch_row(p, d + ahead + PREFETCH_AHEAD, 1);
        ring_row_t *r = &rows[d % AHEAD];
        if (!ring) { /* pick and read at once */
            int64_t v = frontier[d];
            now.b = row_start(p, d);
            now.v = v;
            now.tag = tag;
            now.m = row_picks(s, w, p, d, v, now.b, row_degree(p, d), dbatch ? dbatch[d] : 0, RANGE_OF(d),
                              &now.tag, &pos, full);
            now.ind = row_indices(p, d);
            r = &now;
        } else {
            pos = r->all ? NULL : r->pos;
        }
        for (int64_t q = 0; q < r->m; q++, e++) {
            int64_t at = pos ? pos[q] : q;
            int64_t src = wide ? ((const int64_t *)r->ind)[r->b + at] : ((const int32_t *)r->ind)[r->b + at];
            key[e] = (int64_t)key_of(r->tag, src);
            if (eid) {
                int64_t pos0 = row_edge(p, d, r->v, at);
                eid[e] = et->edge_ids ? et->edge_ids[pos0] : pos0;
            }
        }
        c->off.p[d - c->d0 + 1] = e;
        if (ring && d + AHEAD < c->d1) ring_fill(s, w, p, frontier, dbatch, RANGE_OF(d + AHEAD), d + AHEAD, tag, r, wide, full);
    }
#undef RANGE_OF
    return e;
}

/* A chunk's picks at most, taking every neighbour. */
static int64_t chunk_bound(const pass_t *p, int64_t d0, int64_t d1)
{
    int64_t bound = 0;
    for (int64_t d = d0; d < d1; d++) bound += row_degree(p, d);
    return bound;
}

/* One chunk's picks into its staging; its pick count, or -1 when out of memory. */
static int64_t pick_chunk(fs_typed_sampler_t *s, const pass_t *p, int worker, fs_chunk_t *c)
{
    int wide = p->et->index_dtype != FS_DTYPE_I32, full = p->temporal || s->disjoint || s->x.n;
    int64_t bound = p->k != FS_FANOUT_ALL ? (c->d1 - c->d0) * p->k /* no row can pick more */
                                          : chunk_bound(p, c->d0, c->d1);
    pick_ws_t *w = &s->worker[worker];
    if (fs_chunk_reserve(c, bound, p->want_ids) || range_reserve(w, p, c->d1 - c->d0)) return -1;
    if (p->lazy) { /* this chunk's rows, which no other chunk writes */
        int64_t max_deg;
        fs_typed_pass_bound(s, p, c->d0, c->d1, &max_deg, (int64_t *)p->row + 2 * (c->d0 - p->row_d0));
    }
    int64_t n = full ? (wide ? chunk_body(s, w, p, c, 1, 1) : chunk_body(s, w, p, c, 0, 1))
                     : (wide ? chunk_body(s, w, p, c, 1, 0) : chunk_body(s, w, p, c, 0, 0));
    c->n = n;
    return n;
}

static void pick_chunks(void *ctx, int64_t c0, int64_t c1, int worker)
{
    par_job_t *j = ctx;
    for (int64_t i = c0; i < c1; i++) {
        int64_t n = pick_chunk(j->s, j->p, worker, &j->s->par.chunk[i]);
        if (n < 0 || fs_chunked_staged(&j->s->par, (int)i, n)) j->failed = 1;
    }
}

typedef struct {
    type_ws_t *src;
    const type_ws_t *dst;
    int disjoint, temporal;
} new_ctx_t;

/* A chunk's new nodes: the node, and the batch and time of the destination
 * that reached it first, as tmap_add_at records them. */
static void new_nodes(void *ctx, const fs_chunk_t *c, const int64_t *first, int64_t nf, int64_t id0)
{
    const new_ctx_t *x = ctx;
    for (int64_t i = 0; i < nf; i++) {
        int64_t at = first[i], id = id0 + i, d = x->disjoint || x->temporal ? fs_chunk_dst(c, at) : 0;
        x->src->nodes.p[id] = (int64_t)((uint64_t)c->key.p[at] & ((1ULL << FS_KEY_NODE_BITS) - 1));
        if (x->disjoint) x->src->batch.p[id] = x->dst->batch.p[d];
        if (x->temporal) x->src->time.p[id] = x->dst->time.p[d];
    }
}

int fs_typed_par_begin(fs_typed_sampler_t *s)
{
    if (s->par.active) return 0;
    if (fs_chunked_begin(&s->par, s->pool)) return -1;
    for (int t = 0; t < s->num_types; t++) {
        const type_ws_t *w = &s->tw[t];
        if (fs_i64vec_reserve(&s->keys, (size_t)w->n + 1)) return -1;
        for (int64_t i = 0; i < w->n; i++)
            s->keys.p[i] = (int64_t)key_of(tag_of(s, t, s->disjoint ? w->batch.p[i] : 0), w->nodes.p[i]);
        if (fs_idmap_load(s->par.idmap, s->pool, (const uint64_t *)s->keys.p, w->n)) return -1;
    }
    return 0;
}

static int workers_reserve(fs_typed_sampler_t *s, int workers, int64_t n)
{
    if (fs_grow_zeroed((void **)&s->worker, &s->worker_cap, workers, sizeof *s->worker)) return -1;
    for (int i = 0; i < workers; i++)
        if (fs_typed_reserve_picks(&s->worker[i], n)) return -1;
    return 0;
}

/* A pass's chunks and its workers' pick scratch: the chunk count, or -1
 * when out of memory. */
static int plan_pass(fs_typed_sampler_t *s, const pass_t *p, int64_t d0, int64_t d1, int64_t bound, int64_t max_deg)
{
    int64_t per_row = p->k != FS_FANOUT_ALL ? p->k : bound / (d1 > d0 ? d1 - d0 : 1);
    if (workers_reserve(s, fs_pool_size(s->pool), max_deg > p->k ? max_deg : p->k)) return -1;
    return fs_chunked_plan(&s->par, d0, d1, per_row, s->tw[p->et->src_type].n);
}

/* The pass on the pool; the number of edges, or -1 when out of memory. */
int64_t fs_typed_pass_parallel(fs_typed_sampler_t *s, const pass_t *p, int64_t d0, int64_t d1, int64_t bound,
                               int64_t max_deg, block_ws_t *bw)
{
    type_ws_t *src = &s->tw[p->et->src_type];
    int chunks = fs_typed_par_begin(s) ? -1 : plan_pass(s, p, d0, d1, bound, max_deg);
    if (chunks < 0) return -1;
    par_job_t j = {.s = s, .p = p};
    fs_pool_run(s->pool, chunks, 1, pick_chunks, &j);
    if (j.failed) return -1;
    new_ctx_t x = {.src = src, .dst = &s->tw[p->et->dst_type], .disjoint = s->disjoint, .temporal = s->temporal};
    int64_t fresh = fs_chunked_relabel(&s->par, s->pool, bw->off.p, bw->edst.p, bw->esrc.p,
                                       p->want_ids ? bw->eid.p : NULL, new_nodes, &x);
    if (fresh < 0) return -1;
    src->n += fresh;
    return fs_chunked_total(&s->par);
}

/* ---- the in-order inserter (pools of up to FS_CHUNK_INSERTER_MAX) --------
 * One worker inserts the staged chunks' keys into the typed
 * Fused-Map in chunk order as they become ready, each new node taking its
 * destination's batch and time, exactly as pass_body's inserts do; the
 * others, and it while no chunk is ready, pick ahead. */

typedef struct {
    fs_typed_sampler_t *s;
    const pass_t *p;
    int64_t *es, e;
} ins_job_t;

static int64_t ins_pick(void *ctx, int worker, fs_chunk_t *c)
{
    ins_job_t *j = ctx;
    return pick_chunk(j->s, j->p, worker, c);
}

static void ins_insert(void *ctx, const fs_chunk_t *c)
{
    ins_job_t *j = ctx;
    fs_typed_sampler_t *s = j->s;
    const type_ws_t *dw = &s->tw[j->p->et->dst_type];
    const int64_t *dbatch = s->disjoint ? dw->batch.p : NULL, *dtime = s->temporal ? dw->time.p : NULL;
    const uint64_t *key = (const uint64_t *)c->key.p;
    int64_t *es = j->es + j->e, n = c->n, i = 0;
    int type = j->p->et->src_type;
    j->e += n;
    if (s->disjoint) {
        dput_t dp;
        dput_open(&dp, s, type);
        for (int64_t q = 0; q < n && q < PIPE; q++) __builtin_prefetch(&dp.slot[dmap_index(dp.bits, key[q])], 1, 0);
        for (int64_t d = c->d0; d < c->d1; d++)
            for (int64_t end = c->off.p[d - c->d0 + 1]; i < end; i++) {
                if (i + PIPE < n) __builtin_prefetch(&dp.slot[dmap_index(dp.bits, key[i + PIPE])], 1, 0);
                es[i] = dput(&dp, key[i], dbatch[d], dtime ? dtime[d] : 0);
            }
        dput_close(&dp, s, type);
        return;
    }
    for (int64_t q = 0; q < n && q < PIPE; q++) __builtin_prefetch(&s->map[tmap_hash(s, key[q])], 1, 0);
    if (!dbatch && !dtime) { /* plain: no destination to inherit from */
        tput_t tp;
        tput_open(&tp, s, type);
        for (; i < n; i++) {
            if (i + PIPE < n) __builtin_prefetch(&tp.map[tput_hash(&tp, key[i + PIPE])], 1, 0);
            es[i] = tput(&tp, key[i], tput_hash(&tp, key[i]));
        }
        tput_close(&tp, s, type);
        return;
    }
    for (int64_t d = c->d0; d < c->d1; d++)
        for (int64_t end = c->off.p[d - c->d0 + 1]; i < end; i++) {
            if (i + PIPE < n) __builtin_prefetch(&s->map[tmap_hash(s, key[i + PIPE])], 1, 0);
            es[i] = tmap_add_at(s, type, key[i], tmap_hash(s, key[i]), dbatch ? dbatch[d] : 0, dtime ? dtime[d] : 0);
        }
}

/* The pass on the pool with the Fused-Map kept; the number of edges, or -1
 * when out of memory. */
int64_t fs_typed_pass_inserter(fs_typed_sampler_t *s, const pass_t *p, int64_t d0, int64_t d1, int64_t bound,
                               int64_t max_deg, block_ws_t *bw)
{
    ins_job_t j = {.s = s, .p = p, .es = bw->esrc.p};
    if (plan_pass(s, p, d0, d1, bound, max_deg) < 0 || fs_chunked_pick_insert(&s->par, s->pool, ins_pick, ins_insert, &j))
        return -1;
    fs_chunked_lay_out(&s->par, s->pool, bw->off.p, bw->edst.p, p->want_ids ? bw->eid.p : NULL);
    return j.e;
}

void fs_typed_sampler_set_pool(fs_typed_sampler_t *s, fs_pool_t *pool)
{
    s->pool = pool;
}
