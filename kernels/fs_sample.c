/* fs_sample.c — CPU k-hop sampling with fused dedup + relabel, and the
 * naive reference it is tested against.
 *
 * Fused-Map (FastGL §4, docs/algorithms.md §6 with both fixes): one open-addressing
 * table global id -> local id, seeds inserted first so they get 0..S-1; a
 * new key takes the next local id, so ids follow first appearance and the
 * output is deterministic. Slots carry an epoch stamp: a new request bumps
 * the epoch instead of clearing the table. The table is sized before each hop
 * from that hop's worst case, so inserts never rehash mid-hop.
 *
 * The hot loop is generated twice (int32 and int64 neighbour ids) so the
 * index width costs no branch per edge.
 *
 * Result arrays (out_vec_t) live in the sampler's own memory, or, for a
 * request given output memory (fs_sampler_set_output), in that memory as
 * far as it has room: a local trainer's result slot, which then holds the
 * batch without the copy of its arrays that cost four trainers on two cores
 * a few per cent of their CPU (docs/benchmarks.md). Each array is placed there at its
 * bound for the hop, so the memory holds more than the compact result. */
#include "fs_sample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fs_chunked.h"
#include "fs_sample_internal.h"
#include "fs_sample_pick.h"

#define PREFETCH_AHEAD 8

typedef struct {
    int64_t key;
    int32_t val;
    uint32_t epoch;
} slot_t;

typedef fs_i64vec_t vec_t;

/* A result array: p/cap is where this request writes it, `heap` the
 * sampler's own array, kept across requests. */
typedef struct {
    int64_t *p;
    size_t cap;
    vec_t heap;
} out_vec_t;

/* One worker's scratch for picks, and its counters. */
typedef struct {
    vec_t pos;
    double *wbuf;
    size_t wcap;
    uint64_t lists[FS_MAX_TIERS], reads[FS_MAX_TIERS];
    char pad[64];
} worker_ws_t;

struct fs_sampler {
    slot_t *map;
    size_t map_cap;
    int map_shift;
    uint32_t epoch;
    out_vec_t nodes, seed_local;
    out_vec_t off[FS_MAX_HOPS], edst[FS_MAX_HOPS], esrc[FS_MAX_HOPS], eid[FS_MAX_HOPS];
    vec_t pos;
    struct {               /* the caller's memory for result arrays (fs_sampler_set_output) */
        char *base;
        size_t cap, top;   /* top: bytes handed out in this request */
        int armed;         /* given for the next request, not yet begun */
    } out;
    double *wbuf;          /* weighted picks: keys or CDF */
    size_t wcap;
    int64_t *dense;        /* reference: global -> local */
    size_t dense_n;
    vec_t copy;            /* reference: one copied neighbour list */
    void *ext;             /* an extension's own workspace (fs_sample_internal.h) */
    void (*ext_free)(void *);
    /* the parallel hop (below): the borrowed pool, the chunks and their id
     * map, per-worker scratch */
    fs_pool_t *pool;
    fs_chunked_t par;
    worker_ws_t *worker;
    int worker_cap;
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
    return FS_OK;
}

void fs_sampler_destroy(fs_sampler_t *s)
{
    if (!s) return;
    fs_table_mem_free(s->map, s->map_cap * sizeof *s->map);
    free(s->nodes.heap.p);
    free(s->seed_local.heap.p);
    free(s->pos.p);
    for (int h = 0; h < FS_MAX_HOPS; h++)
        free(s->off[h].heap.p), free(s->edst[h].heap.p), free(s->esrc[h].heap.p), free(s->eid[h].heap.p);
    free(s->wbuf);
    free(s->dense);
    free(s->copy.p);
    if (s->ext_free) s->ext_free(s->ext);
    fs_chunked_free(&s->par);
    for (int w = 0; w < s->worker_cap; w++) free(s->worker[w].pos.p), free(s->worker[w].wbuf);
    free(s->worker);
    free(s);
}

/* ---- result arrays ---------------------------------------------------------- */

void fs_sampler_set_output(fs_sampler_t *s, void *base, size_t cap)
{
    s->out.base = base;
    s->out.cap = base ? cap : 0;
    s->out.armed = 1;
}

size_t fs_sampler_output_used(const fs_sampler_t *s)
{
    return s->out.base ? s->out.top : 0;
}

/* Every result array of the sampler, for resetting them. */
#define FOR_EACH_OUT(s, v, body)                                                                           \
    do {                                                                                                   \
        out_vec_t *v;                                                                                      \
        v = &(s)->nodes, body;                                                                             \
        v = &(s)->seed_local, body;                                                                        \
        for (int h_ = 0; h_ < FS_MAX_HOPS; h_++) {                                                         \
            v = &(s)->off[h_], body;                                                                       \
            v = &(s)->edst[h_], body;                                                                      \
            v = &(s)->esrc[h_], body;                                                                      \
            v = &(s)->eid[h_], body;                                                                       \
        }                                                                                                  \
    } while (0)

/* A request begins: it takes the output memory it was given, if any
 * (every array then starts empty, to be placed there), else every array
 * is the sampler's own again. */
void fs_sampler_begin(fs_sampler_t *s)
{
    if (!s->out.armed) s->out.base = NULL, s->out.cap = 0;
    s->out.armed = 0;
    s->out.top = 0;
    int mine = s->out.base == NULL;
    FOR_EACH_OUT(s, v, (v->p = v->heap.p, v->cap = mine ? v->heap.cap : 0));
}

/* Room for n entries in a result array, its first `keep` kept: in the
 * output memory while it has room (64-byte aligned), else the sampler's
 * own. 0, or -1 when out of memory. */
static int out_reserve(fs_sampler_t *s, out_vec_t *v, size_t n, size_t keep)
{
    if (n <= v->cap) return 0;
    if (keep > v->cap) keep = v->cap;
    size_t at = (s->out.top + 63) & ~(size_t)63;
    if (s->out.base && at <= s->out.cap && n <= (s->out.cap - at) / sizeof(int64_t)) {
        int64_t *p = (int64_t *)(s->out.base + at);
        if (keep) memmove(p, v->p, keep * sizeof *p);
        s->out.top = at + n * sizeof *p;
        v->p = p, v->cap = n;
        return 0;
    }
    int moving = v->p != v->heap.p; /* from the output memory into our own */
    if (fs_i64vec_reserve(&v->heap, n)) return -1;
    if (moving && keep) memcpy(v->heap.p, v->p, keep * sizeof *v->p);
    v->p = v->heap.p, v->cap = v->heap.cap;
    return 0;
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

/* ---- the fused map ------------------------------------------------------- */

static inline size_t map_hash(const fs_sampler_t *s, int64_t key)
{
    return (size_t)(((uint64_t)key * 0x9e3779b97f4a7c15ULL) >> s->map_shift);
}

static inline int64_t map_add_at(fs_sampler_t *s, int64_t key, size_t h, int64_t *u);

/* Returns the local id of key, adding it (as nodes[*u]) if new. */
static inline int64_t map_add(fs_sampler_t *s, int64_t key, int64_t *u)
{
    return map_add_at(s, key, map_hash(s, key), u);
}

/* Makes room for `extra` more keys at load <= 1/2, rehashing the u existing. */
static int map_reserve(fs_sampler_t *s, int64_t u, int64_t extra)
{
    size_t need = (size_t)(u + extra) * 2, cap = s->map_cap ? s->map_cap : 1024;
    if (out_reserve(s, &s->nodes, (size_t)(u + extra) + 1, (size_t)u)) return -1;
    if (need <= s->map_cap) return 0;
    while (cap < need) cap *= 2;
    slot_t *m = fs_table_mem_alloc(cap * sizeof *m);
    if (!m) return -1;
    fs_table_mem_free(s->map, s->map_cap * sizeof *s->map);
    s->map = m;
    s->map_cap = cap;
    s->map_shift = 64 - __builtin_ctzll(cap);
    s->epoch = 1;
    int64_t again = 0;
    for (int64_t i = 0; i < u; i++) map_add(s, s->nodes.p[i], &again);
    return 0;
}

static void map_begin(fs_sampler_t *s)
{
    s->par.active = 0; /* a new request starts on the serial map */
    if (++s->epoch == 0) { /* wrapped: stale stamps could match, clear once */
        memset(s->map, 0, s->map_cap * sizeof *s->map);
        s->epoch = 1;
    }
}

/* ---- weighted picks (shared by engine and reference) ---------------------- */

/* Room for n doubles in *buf of *cap: the weighted picks' keys or CDF. */
static int wbuf_reserve(double **buf, size_t *cap, size_t n)
{
    if (n <= *cap) return 0;
    double *p = realloc(*buf, n * sizeof *p);
    if (!p) return -1;
    *buf = p;
    *cap = n;
    return 0;
}

static int64_t pick(fs_sampler_t *s, fs_sample_mode_t mode, fs_rng_t *rng, const float *w, int64_t deg, int64_t k,
                    int64_t **pos)
{
    return fs_pick_row(mode, rng, w, deg, k, s->wbuf, s->pos.p, pos);
}

/* ---- the engine ----------------------------------------------------------- */

typedef struct {
    const fs_csr_view_t *g;
    int hop;
    fs_sample_mode_t mode;
    int64_t k;
    uint64_t seed;
    int want_ids;
    fs_gather_counters_t *topo;
} hop_t;

/* Resolves node v to (part, first edge position, degree). */
static inline const fs_csr_part_t *row_of(const fs_csr_view_t *g, int64_t v, int64_t *b, int64_t *deg, int *part)
{
    int64_t row = v;
    *part = 0;
    if (g->route) {
        uint64_t r = g->route[v];
        *part = FS_ROUTE_TIER(r);
        row = FS_ROUTE_ROW(r);
    }
    const fs_csr_part_t *pt = &g->part[*part];
    *b = pt->indptr[row];
    *deg = pt->indptr[row + 1] - *b;
    return pt;
}

/* Two-stage prefetch for a plain view: indptr far ahead, the row start
 * nearer (routed views resolve rows through the route: no prefetch). */
static inline void prefetch_row(const fs_csr_view_t *g, const int64_t *frontier, int64_t d, int64_t end, size_t width)
{
    if (g->route) return;
    const int64_t *ip0 = g->part[0].indptr;
    if (d + 2 * PREFETCH_AHEAD < end) __builtin_prefetch(&ip0[frontier[d + 2 * PREFETCH_AHEAD]], 0, 0);
    if (d + PREFETCH_AHEAD < end)
        __builtin_prefetch((const char *)g->part[0].indices + ip0[frontier[d + PREFETCH_AHEAD]] * width, 0, 0);
}

/* Inserts are pipelined: each sampled neighbour's slot is hashed and
 * prefetched when it is picked, and the insert itself happens PIPE edges
 * later, in pick order (so ids still follow first appearance). With the map
 * far larger than the caches, this hides most of each insert's DRAM miss. */
#define PIPE 32

typedef struct {
    int64_t key;
    size_t slot;
} pending_t;

static inline int64_t map_add_at(fs_sampler_t *s, int64_t key, size_t h, int64_t *u)
{
    size_t mask = s->map_cap - 1;
    for (;;) {
        slot_t *sl = &s->map[h];
        if (sl->epoch != s->epoch) { /* empty in this request: the key is new (Fix 1) */
            sl->key = key;
            sl->val = (int32_t)*u;
            sl->epoch = s->epoch;
            s->nodes.p[*u] = key;
            return (*u)++;           /* the id comes from the counter (Fix 2) */
        }
        if (sl->key == key) return sl->val;
        h = (h + 1) & mask;
    }
}

/* Inserts the pending keys in order, writing their local ids to es[e0..]. */
static inline void flush(fs_sampler_t *s, pending_t *pend, int np, int64_t *es, int64_t e0, int64_t *u)
{
    for (int i = 0; i < np; i++) es[e0 + i] = map_add_at(s, pend[i].key, pend[i].slot, u);
}

#define DEFINE_HOP(NAME, IDX_T)                                                                          \
    static int NAME(fs_sampler_t *s, const hop_t *h, int64_t num_dst, int64_t *u, int64_t *num_edges)    \
    {                                                                                                    \
        const fs_csr_view_t *g = h->g;                                                                   \
        const int64_t *ip0 = g->part[0].indptr, *frontier = s->nodes.p;                                  \
        int64_t *off = s->off[h->hop].p, *ed = s->edst[h->hop].p, *es = s->esrc[h->hop].p;               \
        int64_t *eid = h->want_ids ? s->eid[h->hop].p : NULL, e = 0, flushed = 0;                        \
        uint64_t lists[FS_MAX_TIERS] = {0}, reads[FS_MAX_TIERS] = {0};                                   \
        pending_t pend[PIPE + 1];                                                                        \
        int np = 0;                                                                                      \
        off[0] = 0;                                                                                      \
        for (int64_t d = 0; d < num_dst; d++) {                                                          \
            if (!g->route) { /* two-stage prefetch: indptr far ahead, the row start nearer */            \
                if (d + 2 * PREFETCH_AHEAD < num_dst)                                                    \
                    __builtin_prefetch(&ip0[frontier[d + 2 * PREFETCH_AHEAD]], 0, 0);                    \
                if (d + PREFETCH_AHEAD < num_dst)                                                        \
                    __builtin_prefetch((const IDX_T *)g->part[0].indices + ip0[frontier[d + PREFETCH_AHEAD]], 0, 0); \
            }                                                                                            \
            int64_t v = frontier[d], b, deg, *pos;                                                       \
            int part;                                                                                    \
            const fs_csr_part_t *pt = row_of(g, v, &b, &deg, &part);                                     \
            fs_rng_t rng = fs_pick_rng(h->seed, h->hop, v);                                              \
            int64_t m = fs_pick_row(h->mode, &rng, pt->weights ? pt->weights + b : NULL, deg, h->k, s->wbuf, s->pos.p, &pos); \
            int64_t gb = part == 0 ? b : ip0[v];                                                         \
            lists[part]++;                                                                               \
            reads[part] += (uint64_t)(h->mode >= FS_SAMPLE_WEIGHTED ? deg : m);                          \
            const IDX_T *ind = (const IDX_T *)pt->indices + b;                                           \
            for (int64_t q = 0; q < m; q++) {                                                            \
                int64_t p = pos ? pos[q] : q, key = (int64_t)ind[p];                                     \
                size_t slot = map_hash(s, key);                                                          \
                __builtin_prefetch(&s->map[slot], 1, 0);                                                 \
                pend[np++] = (pending_t){key, slot};                                                     \
                ed[e] = d;                                                                               \
                if (eid) eid[e] = gb + p;                                                                \
                e++;                                                                                     \
                if (np == PIPE) { /* insert the oldest half; keep the rest in flight */                  \
                    flush(s, pend, PIPE / 2, es, flushed, u);                                            \
                    memmove(pend, pend + PIPE / 2, sizeof(pending_t) * (PIPE / 2));                      \
                    np = PIPE / 2;                                                                       \
                    flushed += PIPE / 2;                                                                 \
                }                                                                                        \
            }                                                                                            \
            off[d + 1] = e;                                                                              \
        }                                                                                                \
        flush(s, pend, np, es, flushed, u);                                                              \
        if (h->topo)                                                                                     \
            for (int k = 0; k < g->num_parts; k++) {                                                     \
                h->topo->rows[k] += lists[k];                                                            \
                h->topo->bytes[k] += reads[k] * sizeof(IDX_T);                                           \
            }                                                                                            \
        *num_edges = e;                                                                                  \
        return 0;                                                                                        \
    }
DEFINE_HOP(hop_i32, int32_t)
DEFINE_HOP(hop_i64, int64_t)

/* Worst-case edges of one hop, for sizing, and in *max_deg the longest row
 * its scratch must hold. With a fixed fanout the bound is fanout per row
 * and only weighted picks with replacement (a prefix sum over the row) need
 * the true longest row: the others need fanout entries, and skip the pass
 * over the frontier's rows (exact = 0). */
static int64_t hop_bound(const fs_csr_view_t *g, const int64_t *frontier, int64_t num_dst, int fanout,
                         fs_sample_mode_t mode, int exact, int64_t *max_deg)
{
    if (!exact && fanout != FS_FANOUT_ALL && mode != FS_SAMPLE_WEIGHTED_REPLACE) {
        *max_deg = fanout;
        return num_dst * fanout;
    }
    int64_t bound = 0;
    *max_deg = 0;
    for (int64_t d = 0; d < num_dst; d++) {
        if (!g->route && d + 2 * PREFETCH_AHEAD < num_dst)
            __builtin_prefetch(&g->part[0].indptr[frontier[d + 2 * PREFETCH_AHEAD]], 0, 0);
        int64_t b, deg;
        int part;
        row_of(g, frontier[d], &b, &deg, &part);
        if (deg > *max_deg) *max_deg = deg;
        bound += fanout == FS_FANOUT_ALL ? deg : fanout;
    }
    return bound;
}

static fs_status_t reserve_hop(fs_sampler_t *s, int hop, int64_t num_dst, int64_t bound, int64_t max_deg, int64_t k,
                               int want_ids, fs_error_t *err)
{
    size_t pk = (size_t)(k == FS_FANOUT_ALL ? max_deg : k) + 1;
    if (out_reserve(s, &s->off[hop], (size_t)num_dst + 1, 0) || out_reserve(s, &s->edst[hop], (size_t)bound + 1, 0) ||
        out_reserve(s, &s->esrc[hop], (size_t)bound + 1, 0) || (want_ids && out_reserve(s, &s->eid[hop], (size_t)bound + 1, 0)) ||
        fs_i64vec_reserve(&s->pos, pk > (size_t)max_deg ? pk : (size_t)max_deg + 1) ||
        wbuf_reserve(&s->wbuf, &s->wcap, (size_t)max_deg + 1))
        return fs_error(err, FS_ERR_NOMEM, "sample: out of memory for hop %d (%lld edges)", hop, (long long)bound);
    return FS_OK;
}

static void fill_result(fs_sampler_t *s, const fs_sample_req_t *req, int64_t n, const int64_t *u_after,
                        const int64_t *num_dst, const int64_t *num_edges, fs_sample_result_t *res)
{
    memset(res, 0, sizeof *res);
    res->num_hops = req->num_hops;
    for (int h = 0; h < req->num_hops; h++)
        res->block[h] = (fs_block_t){.num_dst = num_dst[h], .num_src = u_after[h], .num_edges = num_edges[h],
                                     .dst_offsets = s->off[h].p, .edge_dst = s->edst[h].p, .edge_src = s->esrc[h].p,
                                     .edge_ids = req->want_edge_ids ? s->eid[h].p : NULL};
    res->num_nodes = u_after[req->num_hops - 1];
    res->nodes = s->nodes.p;
    res->num_seeds = n;
    res->seed_local = s->seed_local.p;
}

/* ---- the parallel hop (docs/algorithms.md §6, parallel relabel) ----------
 *
 * A large hop is split into chunks of destinations. Chunks pick on the pool
 * (each row's picks depend only on (seed, hop, node), fs_sample_pick.h) into
 * their own staging arrays and bucket their keys for the partitioned id map
 * (fs_idmap.h); the map's partitions probe in parallel; then chunks take
 * their new ids in order and copy their edges into place. Every output
 * array comes out exactly as the serial hop writes it. */


typedef struct {
    fs_sampler_t *s;
    const hop_t *h;
    _Atomic int failed;
} par_job_t;

/* A chunk's worst-case picks: fanout per row, or its rows' lengths. */
static int64_t chunk_bound(const hop_t *h, const int64_t *frontier, int64_t d0, int64_t d1)
{
    int64_t max_deg;
    if (h->k != FS_FANOUT_ALL) return (d1 - d0) * h->k;
    return hop_bound(h->g, frontier + d0, d1 - d0, FS_FANOUT_ALL, h->mode, 1, &max_deg);
}

/* A chunk's picks into its staging (key, eid, off, n).
 *
 * A picked neighbour is a random read into the index array, which on a
 * large graph misses every cache and dominates the hop; so rows are picked
 * AHEAD rows early into a small ring and their neighbours prefetched, and a
 * row's keys are read only when the ring comes round. Rows whose picks do
 * not fit a ring slot (fanouts over RING_PICKS, whole rows) take the plain
 * path. */
#define AHEAD 6
#define RING_PICKS 64

typedef struct {
    int64_t m, b, gb, all;     /* all: every position 0..m-1 */
    const fs_csr_part_t *pt;
    int64_t pos[RING_PICKS];
} ring_row_t;

/* Row v's picks into r (positions in *pos, NULL = every one), counted in
 * the worker's lists and reads. */
static inline int64_t pick_into(const hop_t *h, worker_ws_t *w, ring_row_t *r, int64_t v, int64_t **pos)
{
    int64_t deg;
    int part;
    r->pt = row_of(h->g, v, &r->b, &deg, &part);
    fs_rng_t rng = fs_pick_rng(h->seed, h->hop, v);
    r->m = fs_pick_row(h->mode, &rng, r->pt->weights ? r->pt->weights + r->b : NULL, deg, h->k, w->wbuf, w->pos.p, pos);
    r->gb = part == 0 ? r->b : h->g->part[0].indptr[v];
    r->all = *pos == NULL;
    w->lists[part]++;
    w->reads[part] += (uint64_t)(h->mode >= FS_SAMPLE_WEIGHTED ? deg : r->m);
    return r->m;
}

/* Row v's picks into the ring slot r (m <= RING_PICKS), neighbours prefetched. */
static inline void ring_fill(const hop_t *h, worker_ws_t *w, ring_row_t *r, int64_t v, size_t width)
{
    int64_t *pos;
    pick_into(h, w, r, v, &pos);
    const char *base = (const char *)r->pt->indices + r->b * (int64_t)width;
    if (r->all) {
        for (int64_t q = 0; q < r->m; q += 64 / (int64_t)width) __builtin_prefetch(base + q * (int64_t)width, 0, 0);
        return;
    }
    for (int64_t q = 0; q < r->m; q++) {
        r->pos[q] = pos[q];
        __builtin_prefetch(base + pos[q] * (int64_t)width, 0, 0);
    }
}

#define DEFINE_PICKS(NAME, IDX_T)                                                                        \
    static int64_t NAME##_row(const IDX_T *ind, const ring_row_t *r, int64_t *key, int64_t *eid, int64_t e) \
    {                                                                                                    \
        for (int64_t q = 0; q < r->m; q++, e++) {                                                        \
            int64_t p = r->all ? q : r->pos[q];                                                          \
            key[e] = (int64_t)ind[p];                                                                    \
            if (eid) eid[e] = r->gb + p;                                                                 \
        }                                                                                                \
        return e;                                                                                        \
    }                                                                                                    \
    /* One chunk's picks into its staging; its pick count, or -1 when out of memory. */                 \
    static int64_t NAME##_chunk(fs_sampler_t *s, const hop_t *h, worker_ws_t *w, fs_chunk_t *cw)        \
    {                                                                                                    \
        const int64_t *frontier = s->nodes.p;                                                            \
        int ring_ok = h->k != FS_FANOUT_ALL && h->k <= RING_PICKS;                                       \
        ring_row_t ring[AHEAD];                                                                          \
        {                                                                                                \
            int64_t bound = chunk_bound(h, frontier, cw->d0, cw->d1), e = 0;                             \
            int64_t d0 = cw->d0, d1 = cw->d1;                                                            \
            cw->n = 0;                                                                                   \
            if (fs_chunk_reserve(cw, bound, h->want_ids)) return -1;                                     \
            int64_t *key = cw->key.p, *eid = h->want_ids ? cw->eid.p : NULL;                             \
            cw->off.p[0] = 0;                                                                            \
            if (ring_ok)                                                                                 \
                for (int64_t d = d0; d < d1 && d < d0 + AHEAD; d++)                                      \
                    ring_fill(h, w, &ring[d % AHEAD], frontier[d], sizeof(IDX_T));                       \
            for (int64_t d = d0; d < d1; d++) {                                                          \
                prefetch_row(h->g, frontier, d + (ring_ok ? AHEAD : 0), d1, sizeof(IDX_T));              \
                ring_row_t *r = &ring[d % AHEAD], now;                                                   \
                if (!ring_ok) { /* the plain path: whole rows or long pick lists, read at once */        \
                    int64_t *pos;                                                                        \
                    pick_into(h, w, &now, frontier[d], &pos);                                            \
                    const IDX_T *ind = (const IDX_T *)now.pt->indices + now.b;                           \
                    for (int64_t q = 0; q < now.m; q++, e++) {                                           \
                        int64_t p = pos ? pos[q] : q;                                                    \
                        key[e] = (int64_t)ind[p];                                                        \
                        if (eid) eid[e] = now.gb + p;                                                    \
                    }                                                                                    \
                    cw->off.p[d - d0 + 1] = e;                                                           \
                    continue;                                                                            \
                }                                                                                        \
                e = NAME##_row((const IDX_T *)r->pt->indices + r->b, r, key, eid, e);                    \
                cw->off.p[d - d0 + 1] = e;                                                               \
                if (ring_ok && d + AHEAD < d1) ring_fill(h, w, r, frontier[d + AHEAD], sizeof(IDX_T));   \
            }                                                                                            \
            cw->n = e;                                                                                   \
            return e;                                                                                    \
        }                                                                                                \
    }
DEFINE_PICKS(picks_i32, int32_t)
DEFINE_PICKS(picks_i64, int64_t)

static int64_t pick_chunk(fs_sampler_t *s, const hop_t *h, int worker, fs_chunk_t *c)
{
    return (h->g->index_dtype == FS_DTYPE_I32 ? picks_i32_chunk : picks_i64_chunk)(s, h, &s->worker[worker], c);
}

/* Phase 1 of the partitioned relabel: each chunk's picks, bucketed. */
static void picks_bucketed(void *ctx, int64_t c0, int64_t c1, int worker)
{
    par_job_t *j = ctx;
    for (int64_t c = c0; c < c1; c++) {
        int64_t n = pick_chunk(j->s, j->h, worker, &j->s->par.chunk[c]);
        if (n < 0 || fs_chunked_staged(&j->s->par, (int)c, n)) j->failed = 1;
    }
}

/* Per-worker scratch for rows up to max_deg and chunks up to max_n picks. */
static int workers_reserve(fs_sampler_t *s, int workers, int64_t pk, int64_t max_deg)
{
    if (fs_grow_zeroed((void **)&s->worker, &s->worker_cap, workers, sizeof *s->worker)) return -1;
    for (int i = 0; i < workers; i++) {
        worker_ws_t *w = &s->worker[i];
        memset(w->lists, 0, sizeof w->lists);
        memset(w->reads, 0, sizeof w->reads);
        if (fs_i64vec_reserve(&w->pos, (size_t)(pk > max_deg ? pk : max_deg + 1))) return -1;
        if (wbuf_reserve(&w->wbuf, &w->wcap, (size_t)max_deg + 1)) return -1;
    }
    return 0;
}

int fs_sampler_par_begin(fs_sampler_t *s, int64_t u)
{
    if (s->par.active) return 0; /* the first parallel hop moves the nodes so far, ids kept */
    return fs_chunked_begin(&s->par, s->pool) || fs_idmap_load(s->par.idmap, s->pool, (const uint64_t *)s->nodes.p, u)
               ? -1 : 0;
}

fs_chunked_t *fs_sampler_par(fs_sampler_t *s) { return &s->par; }

fs_pool_t *fs_sampler_pool(fs_sampler_t *s) { return s->pool; }

/* A hop's chunks and its workers' pick scratch: the chunk count, or -1
 * when out of memory. */
static int plan_hop(fs_sampler_t *s, const hop_t *h, int64_t num_dst, int64_t bound, int64_t max_deg, int64_t u)
{
    int64_t pk = (h->k == FS_FANOUT_ALL ? max_deg : h->k) + 1;
    if (workers_reserve(s, fs_pool_size(s->pool), pk, max_deg)) return -1;
    return fs_chunked_plan(&s->par, 0, num_dst, h->k != FS_FANOUT_ALL ? h->k : bound / (num_dst ? num_dst : 1), u);
}

/* The workers' topology counters into the request's. */
static void add_worker_counters(fs_sampler_t *s, const hop_t *h, int workers)
{
    if (!h->topo) return;
    for (int w = 0; w < workers; w++)
        for (int k = 0; k < h->g->num_parts; k++) {
            h->topo->rows[k] += s->worker[w].lists[k];
            h->topo->bytes[k] += s->worker[w].reads[k] * (h->g->index_dtype == FS_DTYPE_I32 ? 4 : 8);
        }
}

static fs_status_t hop_parallel(fs_sampler_t *s, const hop_t *h, int64_t num_dst, int64_t bound, int64_t max_deg,
                                int64_t *u, int64_t *num_edges, fs_error_t *err)
{
    int workers = fs_pool_size(s->pool);
    int chunks = fs_sampler_par_begin(s, *u) ? -1 : plan_hop(s, h, num_dst, bound, max_deg, *u);
    if (chunks < 0) return fs_error(err, FS_ERR_NOMEM, "sample: out of memory for hop %d's parallel workspace", h->hop);
    par_job_t j = {.s = s, .h = h};
    fs_pool_run(s->pool, chunks, 1, picks_bucketed, &j);
    int64_t fresh = j.failed ? -1
                  : fs_chunked_relabel(&s->par, s->pool, s->off[h->hop].p, s->edst[h->hop].p, s->esrc[h->hop].p,
                                       h->want_ids ? s->eid[h->hop].p : NULL, fs_chunked_new_ids, s->nodes.p);
    if (fresh < 0) return fs_error(err, FS_ERR_NOMEM, "sample: out of memory for hop %d's id map", h->hop);
    add_worker_counters(s, h, workers);
    *u += fresh;
    *num_edges = fs_chunked_total(&s->par);
    return FS_OK;
}

/* ---- the in-order inserter (pools of up to FS_CHUNK_INSERTER_MAX) --------
 *
 * With few threads the partitioned map's extra passes cost more than they
 * spread: its probes miss as the Fused-Map's inserts do, but in a phase of
 * their own, where the serial loop hides them behind its picks' misses
 * (docs/algorithms.md §6). So one worker inserts the staged chunks' keys
 * into the sampler's own Fused-Map, in chunk order, as they become ready:
 * exactly the serial hop's inserts, in the serial hop's order. The others,
 * and the inserter while no chunk is ready, pick ahead. */
typedef struct {
    fs_sampler_t *s;
    const hop_t *h;
    int64_t *es, u, e;
} ins_job_t;

static int64_t ins_pick(void *ctx, int worker, fs_chunk_t *c)
{
    ins_job_t *j = ctx;
    return pick_chunk(j->s, j->h, worker, c);
}

/* A chunk's keys into the Fused-Map, their slots prefetched PIPE keys ahead. */
static void ins_insert(void *ctx, const fs_chunk_t *c)
{
    ins_job_t *j = ctx;
    fs_sampler_t *s = j->s;
    const int64_t *key = c->key.p;
    int64_t *es = j->es + j->e, n = c->n;
    for (int64_t i = 0; i < n && i < PIPE; i++) __builtin_prefetch(&s->map[map_hash(s, key[i])], 1, 0);
    for (int64_t i = 0; i < n; i++) {
        if (i + PIPE < n) __builtin_prefetch(&s->map[map_hash(s, key[i + PIPE])], 1, 0);
        es[i] = map_add(s, key[i], &j->u);
    }
    j->e += n;
}

static fs_status_t hop_inserter(fs_sampler_t *s, const hop_t *h, int64_t num_dst, int64_t bound, int64_t max_deg,
                                int64_t *u, int64_t *num_edges, fs_error_t *err)
{
    int workers = fs_pool_size(s->pool);
    if (plan_hop(s, h, num_dst, bound, max_deg, *u) < 0)
        return fs_error(err, FS_ERR_NOMEM, "sample: out of memory for hop %d's parallel workspace", h->hop);
    ins_job_t j = {.s = s, .h = h, .es = s->esrc[h->hop].p, .u = *u};
    if (fs_chunked_pick_insert(&s->par, s->pool, ins_pick, ins_insert, &j))
        return fs_error(err, FS_ERR_NOMEM, "sample: out of memory for hop %d's picks", h->hop);
    fs_chunked_lay_out(&s->par, s->pool, s->off[h->hop].p, s->edst[h->hop].p, h->want_ids ? s->eid[h->hop].p : NULL);
    add_worker_counters(s, h, workers);
    *u = j.u;
    *num_edges = j.e;
    return FS_OK;
}

void fs_sampler_set_pool(fs_sampler_t *s, fs_pool_t *pool)
{
    s->pool = pool;
}

fs_status_t fs_sample_cpu(fs_sampler_t *s, const fs_csr_view_t *g, const int64_t *seeds, int64_t n,
                          const fs_sample_req_t *req, fs_sample_result_t *res, fs_gather_counters_t *topo,
                          fs_error_t *err)
{
    fs_sampler_begin(s);
    fs_status_t st = fs_sample_check(g, seeds, n, req, err);
    if (st != FS_OK) return st;
    if (out_reserve(s, &s->seed_local, (size_t)n + 1, 0) || map_reserve(s, 0, n))
        return fs_error(err, FS_ERR_NOMEM, "sample: out of memory for %lld seeds", (long long)n);
    map_begin(s);
    int64_t u = 0, u_after[FS_MAX_HOPS], num_dst[FS_MAX_HOPS], num_edges[FS_MAX_HOPS];
    for (int64_t i = 0; i < n; i++) s->seed_local.p[i] = map_add(s, seeds[i], &u);
    for (int hop = 0; hop < req->num_hops; hop++) {
        int64_t max_deg, bound = hop_bound(g, s->nodes.p, u, req->fanout[hop], req->mode[hop], 0, &max_deg);
        if (u + bound >= INT32_MAX)
            return fs_error(err, FS_ERR_RESOURCE, "sample: hop %d could reach %lld nodes, over the 2^31 per-request "
                            "limit; use smaller fanouts or fewer seeds", hop, (long long)(u + bound));
        if ((st = reserve_hop(s, hop, u, bound, max_deg, req->fanout[hop], req->want_edge_ids, err))) return st;
        /* hops past the threshold are picked in chunks (rows picked ahead of
         * their reads) and inserted in order, on however many threads there
         * are; many threads partition the map instead (the id map), if they
         * have cores to run on (fs_pool_parallelism) */
        int parallel = s->par.active || bound >= fs_chunk_parallel_min;
        int partitioned = parallel && (s->par.active || fs_pool_parallelism(s->pool) > FS_CHUNK_INSERTER_MAX);
        if (partitioned ? out_reserve(s, &s->nodes, (size_t)(u + bound) + 1, (size_t)u) : map_reserve(s, u, bound))
            return fs_error(err, FS_ERR_NOMEM, "sample: out of memory for the id map");
        hop_t h = {.g = g, .hop = hop, .mode = req->mode[hop], .k = req->fanout[hop], .seed = req->seed,
                   .want_ids = req->want_edge_ids, .topo = topo};
        num_dst[hop] = u;
        if (partitioned) {
            if ((st = hop_parallel(s, &h, num_dst[hop], bound, max_deg, &u, &num_edges[hop], err))) return st;
        } else if (parallel) {
            if ((st = hop_inserter(s, &h, num_dst[hop], bound, max_deg, &u, &num_edges[hop], err))) return st;
        } else if (g->index_dtype == FS_DTYPE_I32) hop_i32(s, &h, num_dst[hop], &u, &num_edges[hop]);
        else hop_i64(s, &h, num_dst[hop], &u, &num_edges[hop]);
        u_after[hop] = u;
    }
    fill_result(s, req, n, u_after, num_dst, num_edges, res);
    return FS_OK;
}

/* ---- the naive reference -------------------------------------------------- */

static int64_t ref_local(fs_sampler_t *s, int64_t key, int64_t *u)
{
    if (s->dense[key] < 0) {
        s->dense[key] = (*u)++;
        s->nodes.p[s->dense[key]] = key;
    }
    return s->dense[key];
}

fs_status_t fs_sample_reference(fs_sampler_t *s, const fs_csr_view_t *g, const int64_t *seeds, int64_t n,
                                const fs_sample_req_t *req, fs_sample_result_t *res, fs_error_t *err)
{
    fs_sampler_begin(s);
    fs_status_t st = fs_sample_check(g, seeds, n, req, err);
    if (st != FS_OK) return st;
    if ((size_t)g->num_nodes > s->dense_n) {
        free(s->dense);
        s->dense = malloc((size_t)g->num_nodes * sizeof *s->dense);
        s->dense_n = s->dense ? (size_t)g->num_nodes : 0;
    }
    if (!s->dense || out_reserve(s, &s->seed_local, (size_t)n + 1, 0) || out_reserve(s, &s->nodes, (size_t)n + 1, 0))
        return fs_error(err, FS_ERR_NOMEM, "reference: out of memory");
    for (int64_t v = 0; v < g->num_nodes; v++) s->dense[v] = -1;
    int64_t u = 0, u_after[FS_MAX_HOPS], num_dst[FS_MAX_HOPS], num_edges[FS_MAX_HOPS];
    for (int64_t i = 0; i < n; i++) s->seed_local.p[i] = ref_local(s, seeds[i], &u);
    for (int hop = 0; hop < req->num_hops; hop++) {
        int64_t max_deg, bound = hop_bound(g, s->nodes.p, u, req->fanout[hop], req->mode[hop], 1, &max_deg);
        if ((st = reserve_hop(s, hop, u, bound, max_deg, req->fanout[hop], req->want_edge_ids, err))) return st;
        if (out_reserve(s, &s->nodes, (size_t)(u + bound) + 1, (size_t)u) || fs_i64vec_reserve(&s->copy, (size_t)max_deg + 1))
            return fs_error(err, FS_ERR_NOMEM, "reference: out of memory");
        num_dst[hop] = u;
        int64_t e = 0;
        s->off[hop].p[0] = 0;
        for (int64_t d = 0; d < num_dst[hop]; d++) {
            int64_t v = s->nodes.p[d], b, deg, *pos;
            int part;
            const fs_csr_part_t *pt = row_of(g, v, &b, &deg, &part);
            for (int64_t q = 0; q < deg; q++) /* the O(degree) copy a naive sampler makes */
                s->copy.p[q] = g->index_dtype == FS_DTYPE_I32 ? ((const int32_t *)pt->indices)[b + q]
                                                              : ((const int64_t *)pt->indices)[b + q];
            fs_rng_t rng = fs_pick_rng(req->seed, hop, v);
            int64_t m = pick(s, req->mode[hop], &rng, pt->weights ? pt->weights + b : NULL, deg, req->fanout[hop], &pos);
            for (int64_t q = 0; q < m; q++) {
                int64_t p = pos ? pos[q] : q;
                s->esrc[hop].p[e] = ref_local(s, s->copy.p[p], &u);
                s->edst[hop].p[e] = d;
                if (req->want_edge_ids) s->eid[hop].p[e] = g->part[0].indptr[v] + p;
                e++;
            }
            s->off[hop].p[d + 1] = e;
        }
        num_edges[hop] = e;
        u_after[hop] = u;
    }
    fill_result(s, req, n, u_after, num_dst, num_edges, res);
    return FS_OK;
}

/* ---- workspace access for the CUDA twin (fs_sample_internal.h) ------------ */

#include "fs_sample_internal.h"

int64_t *fs_sampler_workspace(fs_sampler_t *s, int kind, int hop, size_t n)
{
    out_vec_t *v = kind == FS_WS_NODES ? &s->nodes : kind == FS_WS_SEED_LOCAL ? &s->seed_local
                 : kind == FS_WS_OFF   ? &s->off[hop] : kind == FS_WS_EDST ? &s->edst[hop]
                 : kind == FS_WS_ESRC  ? &s->esrc[hop] : &s->eid[hop];
    return out_reserve(s, v, n + 1, SIZE_MAX) ? NULL : v->p;
}

void fs_sampler_result(fs_sampler_t *s, const fs_sample_req_t *req, int64_t n, const int64_t *u_after,
                       const int64_t *num_dst, const int64_t *num_edges, fs_sample_result_t *res)
{
    fill_result(s, req, n, u_after, num_dst, num_edges, res);
}

void *fs_sampler_ext(fs_sampler_t *s)
{
    return s->ext;
}

void fs_sampler_set_ext(fs_sampler_t *s, void *ext, void (*free_fn)(void *))
{
    s->ext = ext;
    s->ext_free = free_fn;
}

int fs_sampler_map_reserve(fs_sampler_t *s, int64_t u, int64_t extra)
{
    return map_reserve(s, u, extra);
}

void fs_sampler_map_begin(fs_sampler_t *s)
{
    map_begin(s);
}

int64_t fs_sampler_map_add(fs_sampler_t *s, int64_t key, int64_t *u)
{
    return map_add(s, key, u);
}

void fs_sampler_map_prefetch(const fs_sampler_t *s, int64_t key)
{
    __builtin_prefetch(&s->map[map_hash(s, key)], 1, 0);
}

void fs_sample_count_topology(const fs_csr_view_t *g, const fs_sample_req_t *req, const fs_sample_result_t *res,
                              fs_gather_counters_t *topo)
{
    const int64_t *ip0 = g->part[0].indptr;
    size_t width = fs_dtype_size(g->index_dtype);
    for (int h = 0; h < res->num_hops; h++) {
        const fs_block_t *b = &res->block[h];
        int weighted = req->mode[h] >= FS_SAMPLE_WEIGHTED;
        for (int64_t d = 0; d < b->num_dst; d++) { /* the destinations are the first nodes */
            int64_t v = res->nodes[d];
            int part = g->route ? FS_ROUTE_TIER(g->route[v]) : 0;
            int64_t read = weighted ? ip0[v + 1] - ip0[v] : b->dst_offsets[d + 1] - b->dst_offsets[d];
            topo->rows[part]++;
            topo->bytes[part] += (uint64_t)read * width;
        }
    }
}
