/* fs_typed.c — the typed k-hop sampler (fs_typed.h): the homogeneous
 * engine's Fused-Map (docs/algorithms.md §6) over (node type, batch, node)
 * keys, with per-type local id counters, per-edge-type blocks, temporal
 * eligibility and exclusions.
 *
 * One open-addressing map holds every type's keys; a slot stamped with an
 * older epoch is empty, so a request clears nothing. Disjoint trees (and so
 * temporal sampling) use a table per node type of 4-byte slots instead (the
 * disjoint map, below). Maps are sized before each edge type's pass from
 * that pass's worst case, so inserts never rehash mid-pass, and inserts are
 * pipelined as in fs_sample.c: each picked key's slot is prefetched when it
 * is picked and filled PIPE picks later, still in pick order, so local ids
 * follow first appearance exactly.
 *
 * A row's eligible edges are a position range [lo, hi) (all of it without
 * time; with, settled from the edge type's row summaries, fs_time_row_t, or
 * binary-searched on the row's times) minus excluded positions.
 * Picks are the shared ones of fs_sample_pick.h over that range; the rows
 * with exclusions (a link batch's few endpoints) pick among the surviving
 * positions, or over weights with the excluded ones zeroed. */
#include "fs_typed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_chunked.h"
#include "fs_sample.h"
#include "fs_sample_internal.h"
#include "fs_sample_pick.h"
#include "fs_typed_internal.h"

#define PIPE 32

/* A map key packs (tag, node): node in the low 40 bits, the tag above —
 * the type, or batch * num_types + type when disjoint — so a slot is 16
 * bytes as in fs_sample.c and four share a cache line. fs_typed_check
 * refuses graphs and requests that do not fit (FS_KEY_NODE_BITS). */
#define FS_KEY_NODE_BITS 40
#define FS_KEY_TAG_LIMIT (1LL << (64 - FS_KEY_NODE_BITS - 1))

typedef struct {
    uint64_t key;
    int32_t val;
    uint32_t epoch;
} tslot_t;

/* The disjoint map of one node type: see "the disjoint map" below. */
typedef struct {
    uint32_t *slot;
    size_t cap;       /* slots allocated */
    int bits;         /* this request's table is its first 2^bits slots (0: none yet); the id field's width */
    int64_t last_n;   /* the type's nodes in the last request, to size the next */
} dmap_t;

typedef struct {
    fs_i64vec_t nodes, batch, time;
    int64_t n;
    dmap_t dm;
} type_ws_t;

typedef struct {
    fs_i64vec_t off, edst, esrc, eid;
} block_ws_t;

/* Exclusions of one request, sorted by (etype, dst, src); `index` maps
 * (etype, dst) to its first entry. */
typedef struct {
    fs_typed_exclude_t *e;
    size_t cap;
    int64_t n;
    int64_t *index;      /* open addressing: entry number + 1, 0 = empty */
    size_t index_cap;
    size_t slots;      /* the hash table's size for the current set (a power of two, <= index_cap) */
} excl_ws_t;

/* The scratch of one row's picks: the sampler's own for serial passes,
 * one per pool worker for parallel ones. */
typedef struct {
    fs_i64vec_t pos, skip;
    fs_i64vec_t range;   /* temporal passes: each row's eligible [lo, hi), as pairs (eligible_ranges) */
    fs_i64vec_t left;    /* the rows their summaries leave to search_rows */
    double *wbuf;
    float *wcopy;
    size_t wcap;
    char pad[64];
} pick_ws_t;

struct fs_typed_sampler {
    tslot_t *map;
    size_t map_cap;
    int map_shift;
    uint32_t epoch;
    int num_types, disjoint, temporal;
    type_ws_t *tw;
    int cap_types;
    block_ws_t *bw;
    int cap_blocks;
    fs_typed_nodes_t *out_nodes;
    fs_block_t *out_blocks;
    fs_i64vec_t *seed_local;
    const int64_t **out_seed_local;
    int cap_groups;
    pick_ws_t pw;
    excl_ws_t x;
    void *ext;                    /* fs_link.c's workspace */
    void (*ext_free)(void *);
    /* parallel passes (below): the borrowed pool, the chunks and their id
     * map, per-worker pick scratch */
    fs_pool_t *pool;
    fs_chunked_t par;
    pick_ws_t *worker;
    int worker_cap;
    fs_i64vec_t keys;             /* the keys moved into the id map */
    fs_i64vec_t rows;             /* the pass's rows (pass_t.row) */
    fs_i64vec_t known;            /* their eligible ends from summaries (pass_t.known) */
};

fs_status_t fs_typed_sampler_create(fs_typed_sampler_t **out, fs_error_t *err)
{
    *out = calloc(1, sizeof **out);
    if (!*out) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    return FS_OK;
}

static void free_vec(fs_i64vec_t *v)
{
    free(v->p);
    v->p = NULL;
    v->cap = 0;
}

void fs_typed_sampler_destroy(fs_typed_sampler_t *s)
{
    if (!s) return;
    fs_table_mem_free(s->map, s->map_cap * sizeof *s->map);
    for (int t = 0; t < s->cap_types; t++) {
        type_ws_t *w = &s->tw[t];
        free_vec(&w->nodes), free_vec(&w->batch), free_vec(&w->time);
        fs_table_mem_free(w->dm.slot, w->dm.cap * sizeof *w->dm.slot);
    }
    for (int b = 0; b < s->cap_blocks; b++)
        free_vec(&s->bw[b].off), free_vec(&s->bw[b].edst), free_vec(&s->bw[b].esrc), free_vec(&s->bw[b].eid);
    for (int g = 0; g < s->cap_groups; g++) free_vec(&s->seed_local[g]);
    free(s->tw), free(s->bw), free(s->out_nodes), free(s->out_blocks), free(s->seed_local), free(s->out_seed_local);
    for (int w = -1; w < s->worker_cap; w++) {
        pick_ws_t *pw = w < 0 ? &s->pw : &s->worker[w];
        free_vec(&pw->pos), free_vec(&pw->skip), free_vec(&pw->range), free_vec(&pw->left);
        free(pw->wbuf), free(pw->wcopy);
    }
    free(s->worker);
    fs_chunked_free(&s->par);
    free_vec(&s->keys), free_vec(&s->rows), free_vec(&s->known);
    free(s->x.e), free(s->x.index);
    if (s->ext_free) s->ext_free(s->ext);
    free(s);
}

/* Pivot j's position in a row of deg > 0 edges: 0 for the first, deg - 1
 * for the last (j = FS_TIME_PIVOTS - 1). */
static inline int64_t pivot_at(int64_t deg, int j)
{
    return (int64_t)j * (deg - 1) / (FS_TIME_PIVOTS - 1);
}

fs_status_t fs_typed_time_rows(fs_typed_etype_t *et, int64_t ndst, fs_time_row_t **out, fs_error_t *err)
{
    const int64_t *ip = et->indptr, *t = et->time;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int64_t d = 0; d < ndst; d++)
        if (ip[d + 1] > ip[d]) {
            if (t[ip[d]] < lo) lo = t[ip[d]];
            if (t[ip[d + 1] - 1] > hi) hi = t[ip[d + 1] - 1];
        }
    if (lo > hi) lo = hi = 0; /* no edges */
    uint64_t span = (uint64_t)hi - (uint64_t)lo;
    int shift = 0;
    while ((span >> shift) >= INT32_MAX) shift++; /* a step rounded up still fits */
    fs_time_row_t *rows = fs_table_mem_alloc(((size_t)ndst + 1) * sizeof *rows);
    if (!rows) return fs_error(err, FS_ERR_NOMEM, "out of memory summarising the times of %lld rows", (long long)ndst);
    uint64_t below = ((uint64_t)1 << shift) - 1;
    for (int64_t d = 0; d < ndst; d++) {
        fs_time_row_t *r = &rows[d];
        int64_t deg = ip[d + 1] - ip[d];
        *r = (fs_time_row_t){.start = ip[d], .degree = deg > INT32_MAX ? -1 : (int32_t)deg};
        if (deg == 0) continue;
        uint64_t first = (uint64_t)t[ip[d]] - (uint64_t)lo, last = (uint64_t)t[ip[d + 1] - 1] - (uint64_t)lo;
        r->step[0] = (int32_t)(first >> shift);
        r->step[FS_TIME_PIVOTS - 1] = (int32_t)((last >> shift) + ((last & below) != 0));
        for (int j = 1; shift == 0 && j < FS_TIME_PIVOTS - 1; j++)
            r->step[j] = (int32_t)(t[ip[d] + pivot_at(deg, j)] - lo);
    }
    rows[ndst] = (fs_time_row_t){.start = ndst > 0 ? ip[ndst] : 0};
    et->time_rows = rows, et->time_base = lo, et->time_shift = shift;
    *out = rows;
    return FS_OK;
}

void fs_typed_time_rows_free(fs_time_row_t *rows, int64_t ndst)
{
    fs_table_mem_free(rows, ((size_t)ndst + 1) * sizeof *rows);
}

void *fs_typed_sampler_ext(fs_typed_sampler_t *s, size_t size, void (*free_fn)(void *))
{
    if (!s->ext) {
        s->ext = calloc(1, size);
        s->ext_free = free_fn;
    }
    return s->ext;
}

/* ---- names for messages --------------------------------------------------- */

static const char *etype_name(const fs_typed_view_t *g, int e, char *buf, size_t len)
{
    if (g->etype[e].name) return g->etype[e].name;
    snprintf(buf, len, "edge type #%d", e);
    return buf;
}

static const char *type_name(const fs_typed_view_t *g, int t, char *buf, size_t len)
{
    if (g->type_name && g->type_name[t]) return g->type_name[t];
    snprintf(buf, len, "node type #%d", t);
    return buf;
}

/* ---- the request check ---------------------------------------------------- */

static int req_fanout(const fs_typed_req_t *req, int e, int h)
{
    return req->fanout[e * req->num_hops + h];
}

static fs_status_t check_hops(const fs_typed_view_t *g, const fs_typed_req_t *req, fs_error_t *err)
{
    char nb[64];
    if (req->num_hops < 1 || req->num_hops > FS_MAX_HOPS)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: %d hops requested, must be 1..%d", req->num_hops,
                        FS_MAX_HOPS);
    if (g->num_node_types >= FS_KEY_TAG_LIMIT)
        return fs_error(err, FS_ERR_UNSUPPORTED, "typed sample: %d node types, over the %lld the sampler keys",
                        g->num_node_types, (long long)FS_KEY_TAG_LIMIT);
    for (int t = 0; t < g->num_node_types; t++)
        if (g->count[t] >= (1LL << FS_KEY_NODE_BITS))
            return fs_error(err, FS_ERR_UNSUPPORTED, "typed sample: %s has %lld nodes, over the 2^%d the sampler keys",
                            type_name(g, t, nb, sizeof nb), (long long)g->count[t], FS_KEY_NODE_BITS);
    if (g->num_edge_types > 0 && !req->fanout)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: no fanouts given");
    if ((unsigned)req->temporal >= FS_TEMPORAL_COUNT_ || (unsigned)req->frontier > FS_FRONTIER_ALL)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: unknown %s %d",
                        (unsigned)req->frontier > FS_FRONTIER_ALL ? "frontier rule" : "temporal strategy",
                        (unsigned)req->frontier > FS_FRONTIER_ALL ? (int)req->frontier : (int)req->temporal);
    if (req->window < 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: time window %lld is negative",
                        (long long)req->window);
    for (int h = 0; h < req->num_hops; h++) {
        if ((unsigned)req->mode[h] >= FS_SAMPLE_MODE_COUNT_)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: mode[%d] is %d, unknown", h, (int)req->mode[h]);
        if (req->temporal == FS_TEMPORAL_LAST && req->mode[h] != FS_SAMPLE_UNIFORM)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: hop %d: temporal strategy 'last' takes the "
                            "most recent edges, so it takes no weighted or with-replacement mode", h);
        for (int e = 0; e < g->num_edge_types; e++) {
            int k = req_fanout(req, e, h);
            const fs_typed_etype_t *et = &g->etype[e];
            if (k < FS_FANOUT_ALL)
                return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: %s hop %d: fanout %d, must be >= 0 "
                                "or -1 (all)", etype_name(g, e, nb, sizeof nb), h, k);
            if (k == 0) continue;
            if (req->mode[h] >= FS_SAMPLE_WEIGHTED && !et->weights)
                return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: hop %d asks for weighted sampling but %s "
                                "has no edge weights", h, etype_name(g, e, nb, sizeof nb));
            if (req->temporal && !et->time)
                return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: temporal sampling, but %s has no edge "
                                "timestamps (give it fanout 0, or sample without time)", etype_name(g, e, nb, sizeof nb));
        }
    }
    return FS_OK;
}

/* The first batch number after a seed group, given the one before it: a
 * group without batches numbers its seeds on from there. */
static int64_t batches_after(const fs_typed_seeds_t *sg, int64_t next)
{
    if (!sg->batch) return next + sg->count;
    for (int64_t j = 0; j < sg->count; j++)
        if (sg->batch[j] + 1 > next) next = sg->batch[j] + 1;
    return next;
}

static fs_status_t check_seeds(const fs_typed_view_t *g, const fs_typed_req_t *req, const fs_typed_seeds_t *groups,
                               int num_groups, fs_error_t *err)
{
    char nb[64];
    if (num_groups < 0 || (num_groups > 0 && !groups))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: bad seed groups");
    int64_t total = 0, next_batch = 0;
    for (int i = 0; i < num_groups; i++) {
        const fs_typed_seeds_t *sg = &groups[i];
        if (sg->type < 0 || sg->type >= g->num_node_types)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: seed group %d names node type %d, the graph "
                            "has %d", i, sg->type, g->num_node_types);
        if (sg->count < 0 || (sg->count > 0 && !sg->ids))
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: seed group %d: bad seed array", i);
        const char *tn = type_name(g, sg->type, nb, sizeof nb);
        for (int64_t j = 0; j < sg->count; j++) {
            if ((uint64_t)sg->ids[j] >= (uint64_t)g->count[sg->type])
                return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: %s seed %lld at position %lld is outside "
                                "[0, %lld)", tn, (long long)sg->ids[j], (long long)j, (long long)g->count[sg->type]);
            if (sg->batch && (sg->batch[j] < 0 || sg->batch[j] >= INT32_MAX))
                return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: %s seed at position %lld has batch %lld",
                                tn, (long long)j, (long long)sg->batch[j]);
        }
        if (req->temporal && !sg->time && !(g->node_time && g->node_time[sg->type]))
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: temporal sampling, but the %s seeds carry no "
                            "times and %s nodes have no timestamps", tn, tn);
        total += sg->count;
        next_batch = batches_after(sg, next_batch);
    }
    if ((req->disjoint || req->temporal) && next_batch * g->num_node_types >= FS_KEY_TAG_LIMIT)
        return fs_error(err, FS_ERR_RESOURCE, "typed sample: %lld disjoint batches over %d node types, over the "
                        "per-request limit of %lld batch-types; use fewer seeds per request", (long long)next_batch,
                        g->num_node_types, (long long)FS_KEY_TAG_LIMIT);
    if (total >= INT32_MAX)
        return fs_error(err, FS_ERR_RESOURCE, "typed sample: %lld seeds, over the 2^31 per-request limit",
                        (long long)total);
    return FS_OK;
}

static fs_status_t check_exclusions(const fs_typed_view_t *g, const fs_typed_exclude_t *x, int64_t n,
                                    fs_error_t *err)
{
    if (n < 0 || (n > 0 && !x)) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: bad exclusion array");
    for (int64_t i = 0; i < n; i++) {
        if (x[i].etype < 0 || x[i].etype >= g->num_edge_types)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: exclusion %lld names edge type %d, the graph "
                            "has %d", (long long)i, x[i].etype, g->num_edge_types);
        const fs_typed_etype_t *et = &g->etype[x[i].etype];
        if ((uint64_t)x[i].dst >= (uint64_t)g->count[et->dst_type] ||
            (uint64_t)x[i].src >= (uint64_t)g->count[et->src_type])
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: exclusion %lld (%lld -> %lld) is outside "
                            "its edge type's node ranges", (long long)i, (long long)x[i].src, (long long)x[i].dst);
    }
    return FS_OK;
}

fs_status_t fs_typed_check(const fs_typed_view_t *g, const fs_typed_req_t *req, const fs_typed_seeds_t *groups,
                           int num_groups, const fs_typed_exclude_t *excl, int64_t num_excl, fs_error_t *err)
{
    fs_status_t st = check_hops(g, req, err);
    if (st == FS_OK) st = check_seeds(g, req, groups, num_groups, err);
    if (st == FS_OK) st = check_exclusions(g, excl, num_excl, err);
    return st;
}

/* ---- workspace ------------------------------------------------------------ */

static int reserve_shape(fs_typed_sampler_t *s, int types, int blocks, int groups)
{
    int ct = s->cap_types, cb = s->cap_blocks, cg = s->cap_groups;
    if (fs_grow_zeroed((void **)&s->tw, &ct, types, sizeof *s->tw)) return -1;
    ct = s->cap_types;
    if (fs_grow_zeroed((void **)&s->out_nodes, &ct, types, sizeof *s->out_nodes)) return -1;
    s->cap_types = ct;
    if (fs_grow_zeroed((void **)&s->bw, &cb, blocks, sizeof *s->bw)) return -1;
    cb = s->cap_blocks;
    if (fs_grow_zeroed((void **)&s->out_blocks, &cb, blocks, sizeof *s->out_blocks)) return -1;
    s->cap_blocks = cb;
    if (fs_grow_zeroed((void **)&s->seed_local, &cg, groups, sizeof *s->seed_local)) return -1;
    cg = s->cap_groups;
    if (fs_grow_zeroed((void **)&s->out_seed_local, &cg, groups, sizeof *s->out_seed_local)) return -1;
    s->cap_groups = cg;
    return 0;
}

static int reserve_picks(pick_ws_t *s, int64_t n)
{
    if (fs_i64vec_reserve(&s->pos, (size_t)n + 1) || fs_i64vec_reserve(&s->skip, (size_t)n + 1)) return -1;
    if ((size_t)n + 1 <= s->wcap) return 0;
    double *w = realloc(s->wbuf, ((size_t)n + 1) * sizeof *w);
    if (w) s->wbuf = w;
    float *c = realloc(s->wcopy, ((size_t)n + 1) * sizeof *c);
    if (c) s->wcopy = c;
    if (!w || !c) return -1;
    s->wcap = (size_t)n + 1;
    return 0;
}

/* ---- the map -------------------------------------------------------------- */

static inline uint64_t tag_of(const fs_typed_sampler_t *s, int type, int64_t batch)
{
    return (uint64_t)(s->disjoint ? batch * s->num_types + type : type);
}

static inline uint64_t key_of(uint64_t tag, int64_t node)
{
    return (tag << FS_KEY_NODE_BITS) | (uint64_t)node;
}

static inline size_t tmap_hash(const fs_typed_sampler_t *s, uint64_t key)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ULL) >> s->map_shift);
}

/* Returns the local id of key (a node of `type`), adding it, with the
 * batch and time it inherits, if new. */
static inline __attribute__((always_inline)) int64_t tmap_add_at(fs_typed_sampler_t *s, int type, uint64_t key, size_t h, int64_t batch,
                                  int64_t time)
{
    size_t mask = s->map_cap - 1;
    for (;;) {
        tslot_t *sl = &s->map[h];
        if (sl->epoch != s->epoch) {
            type_ws_t *w = &s->tw[type];
            int64_t id = w->n++;
            *sl = (tslot_t){.key = key, .val = (int32_t)id, .epoch = s->epoch};
            w->nodes.p[id] = (int64_t)(key & ((1ULL << FS_KEY_NODE_BITS) - 1));
            if (s->disjoint) w->batch.p[id] = batch;
            if (s->temporal) w->time.p[id] = time;
            return id;
        }
        if (sl->key == key) return sl->val;
        h = (h + 1) & mask;
    }
}

/* Room for `extra` more nodes of `type`. */
static int nodes_reserve(fs_typed_sampler_t *s, int type, int64_t extra)
{
    type_ws_t *w = &s->tw[type];
    size_t need_n = (size_t)(w->n + extra) + 1;
    return fs_i64vec_reserve(&w->nodes, need_n) || (s->disjoint && fs_i64vec_reserve(&w->batch, need_n)) ||
           (s->temporal && fs_i64vec_reserve(&w->time, need_n));
}

/* Room for `extra` more keys of `type` at map load <= 1/2. */
static int tmap_reserve(fs_typed_sampler_t *s, int type, int64_t extra)
{
    if (nodes_reserve(s, type, extra)) return -1;
    int64_t total = extra;
    for (int t = 0; t < s->num_types; t++) total += s->tw[t].n;
    size_t need = (size_t)total * 2, cap = s->map_cap ? s->map_cap : 1024;
    if (need <= s->map_cap) return 0;
    while (cap < need) cap *= 2;
    if (cap > ((size_t)1 << 32)) return -1; /* pending_t holds 32-bit slots */
    tslot_t *m = fs_table_mem_alloc(cap * sizeof *m);
    if (!m) return -1;
    fs_table_mem_free(s->map, s->map_cap * sizeof *s->map);
    s->map = m;
    s->map_cap = cap;
    s->map_shift = 64 - __builtin_ctzll(cap);
    s->epoch = 1;
    for (int t = 0; t < s->num_types; t++) { /* re-insert every key with its id */
        type_ws_t *tw = &s->tw[t];
        for (int64_t i = 0; i < tw->n; i++) {
            uint64_t key = key_of(tag_of(s, t, s->disjoint ? tw->batch.p[i] : 0), tw->nodes.p[i]);
            size_t h = tmap_hash(s, key);
            while (m[h].epoch == s->epoch) h = (h + 1) & (cap - 1);
            m[h] = (tslot_t){.key = key, .val = (int32_t)i, .epoch = s->epoch};
        }
    }
    return 0;
}

static void tmap_begin(fs_typed_sampler_t *s)
{
    if (++s->epoch == 0) {
        if (s->map) memset(s->map, 0, s->map_cap * sizeof *s->map);
        s->epoch = 1;
    }
}

/* ---- the disjoint map -----------------------------------------------------
 *
 * Disjoint keys almost never repeat (0.2% of a temporal batch's picks), so
 * nearly every insert writes an empty slot, and the map's size decides
 * where those writes land. The map above, 16-byte slots at load <= 1/2,
 * spans 4 MB for a 1,024-tree request of 100,000 nodes: past the L2, every
 * write a miss. Here each node type has its own table of 4-byte slots,
 * a quarter the size: a slot holds the local id + 1 in its low `bits` bits
 * (0 = empty) and, above, the key's hash bits just under those that chose
 * the slot. A key is compared with (nodes[id], batch[id]) only where those
 * bits match, which outside a true repeat is about one probe in 2^(32 -
 * bits). With no epoch in the slot, a request clears its tables, sized from
 * the type's last request (docs/benchmarks.md, "Typed sampling"). */

static inline uint64_t dmap_hash(uint64_t key)
{
    return key * 0x9e3779b97f4a7c15ULL;
}

/* A key's home slot in a table of 2^bits, and the hash bits just under
 * those that a slot keeps to tell keys apart. */
static inline size_t dmap_index(int bits, uint64_t key)
{
    return (size_t)(dmap_hash(key) >> (64 - bits));
}

static inline uint32_t dmap_check(int bits, uint64_t key)
{
    return (uint32_t)(dmap_hash(key) >> 32) & ((1u << (32 - bits)) - 1);
}

/* A run of inserts into one type's disjoint map, its table and node arrays
 * held in locals (dput_open .. dput_close): the compiler keeps them in
 * registers, where through the sampler it reloads them after every store. */
typedef struct {
    uint32_t *slot;
    int bits;
    int64_t *nodes, *batch, *time, n;
} dput_t;

static inline __attribute__((always_inline)) void dput_open(dput_t *p, fs_typed_sampler_t *s, int type)
{
    type_ws_t *w = &s->tw[type];
    *p = (dput_t){.slot = w->dm.slot, .bits = w->dm.bits, .nodes = w->nodes.p, .batch = w->batch.p,
                  .time = s->temporal ? w->time.p : NULL, .n = w->n};
}

static inline void dput_close(const dput_t *p, fs_typed_sampler_t *s, int type)
{
    s->tw[type].n = p->n;
}

/* dmap's tmap_add_at: the local id of the disjoint key (batch, node),
 * adding it, with the time it inherits, if new. */
static inline __attribute__((always_inline)) int64_t dput(dput_t *p, uint64_t key, int64_t batch, int64_t time)
{
    size_t h = dmap_index(p->bits, key), mask = ((size_t)1 << p->bits) - 1;
    uint32_t check = dmap_check(p->bits, key), id_mask = (1u << p->bits) - 1;
    int64_t node = (int64_t)(key & ((1ULL << FS_KEY_NODE_BITS) - 1));
    for (;;) {
        uint32_t v = p->slot[h];
        if (v == 0) {
            int64_t id = p->n++;
            p->slot[h] = check << p->bits | (uint32_t)(id + 1);
            p->nodes[id] = node;
            p->batch[id] = batch;
            if (p->time) p->time[id] = time;
            return id;
        }
        if (v >> p->bits == check) {
            int64_t id = (int64_t)(v & id_mask) - 1;
            if (p->nodes[id] == node && p->batch[id] == batch) return id;
        }
        h = (h + 1) & mask;
    }
}

/* Sets type's table to `slots` (a power of two), cleared, with the type's
 * nodes so far in it. */
static int dmap_resize(fs_typed_sampler_t *s, int type, size_t slots)
{
    type_ws_t *w = &s->tw[type];
    dmap_t *m = &w->dm;
    if (slots > m->cap) {
        uint32_t *p = fs_table_mem_alloc(slots * sizeof *p);
        if (!p) return -1;
        fs_table_mem_free(m->slot, m->cap * sizeof *m->slot);
        m->slot = p, m->cap = slots;
    }
    m->bits = __builtin_ctzll(slots);
    memset(m->slot, 0, slots * sizeof *m->slot);
    for (int64_t id = 0; id < w->n; id++) { /* distinct keys: no comparisons */
        uint64_t key = key_of(tag_of(s, type, w->batch.p[id]), w->nodes.p[id]);
        size_t h = dmap_index(m->bits, key);
        while (m->slot[h]) h = (h + 1) & (slots - 1);
        m->slot[h] = dmap_check(m->bits, key) << m->bits | (uint32_t)(id + 1);
    }
    return 0;
}

/* The smallest table at load <= 1/2 for n keys (3/4 was no faster). */
static size_t dmap_slots_for(int64_t n)
{
    size_t slots = 1024;
    while (slots < (size_t)n * 2) slots *= 2;
    return slots;
}

/* Room for `extra` more keys of `type`; every table holds at most 2^31
 * slots, so that an id + 1 and at least one check bit fit a slot. */
static int dmap_reserve(fs_typed_sampler_t *s, int type, int64_t extra)
{
    if (nodes_reserve(s, type, extra)) return -1;
    type_ws_t *w = &s->tw[type];
    size_t slots = dmap_slots_for(w->n + extra);
    if (w->dm.bits && slots <= (size_t)1 << w->dm.bits) return 0;
    if (slots > ((size_t)1 << 31)) return -1;
    return dmap_resize(s, type, slots);
}

/* A request's tables: each type's sized for its last request's nodes and a
 * quarter more, so a steady load never resizes mid-request. */
static int dmap_begin(fs_typed_sampler_t *s)
{
    for (int t = 0; t < s->num_types; t++)
        if (dmap_resize(s, t, dmap_slots_for(s->tw[t].dm.last_n + s->tw[t].dm.last_n / 4))) return -1;
    return 0;
}

/* ---- keys, in whichever map the request uses ------------------------------ */

static inline size_t key_slot(const fs_typed_sampler_t *s, int type, uint64_t key)
{
    return s->disjoint ? dmap_index(s->tw[type].dm.bits, key) : tmap_hash(s, key);
}

/* The slot's address, to prefetch. (One __builtin_prefetch of either
 * address: GCC 12 at -O2 dropped a prefetch in each arm of an if.) */
static inline const void *key_slot_at(const fs_typed_sampler_t *s, int type, size_t slot)
{
    return s->disjoint ? (const void *)&s->tw[type].dm.slot[slot] : (const void *)&s->map[slot];
}


static int key_reserve(fs_typed_sampler_t *s, int type, int64_t extra)
{
    return s->disjoint ? dmap_reserve(s, type, extra) : tmap_reserve(s, type, extra);
}

/* ---- exclusions ----------------------------------------------------------- */

static int cmp_excl(const void *a, const void *b)
{
    const fs_typed_exclude_t *x = a, *y = b;
    if (x->etype != y->etype) return x->etype < y->etype ? -1 : 1;
    if (x->dst != y->dst) return x->dst < y->dst ? -1 : 1;
    return (x->src > y->src) - (x->src < y->src);
}

static size_t excl_hash(int etype, int64_t dst, size_t cap)
{
    return (size_t)(fs_mix64((uint64_t)dst * 0x9e3779b97f4a7c15ULL + (uint64_t)etype) & (cap - 1));
}

static int excl_build(excl_ws_t *x, const fs_typed_exclude_t *in, int64_t n)
{
    x->n = 0;
    if (n == 0) return 0;
    if ((size_t)n > x->cap) {
        fs_typed_exclude_t *p = realloc(x->e, (size_t)n * sizeof *p);
        if (!p) return -1;
        x->e = p;
        x->cap = (size_t)n;
    }
    memcpy(x->e, in, (size_t)n * sizeof *in);
    qsort(x->e, (size_t)n, sizeof *x->e, cmp_excl);
    size_t cap = 16;
    while (cap < (size_t)n * 2) cap *= 2;
    if (cap > x->index_cap) {
        int64_t *p = realloc(x->index, cap * sizeof *p);
        if (!p) return -1;
        x->index = p;
        x->index_cap = cap;
    }
    memset(x->index, 0, cap * sizeof *x->index);
    x->slots = cap;
    for (int64_t i = 0; i < n; i++) {
        if (i > 0 && x->e[i].etype == x->e[i - 1].etype && x->e[i].dst == x->e[i - 1].dst) continue;
        size_t h = excl_hash(x->e[i].etype, x->e[i].dst, cap);
        while (x->index[h]) h = (h + 1) & (cap - 1);
        x->index[h] = i + 1;
    }
    x->n = n;
    return 0;
}

/* The excluded sources of (etype, dst): entries [*first, return). */
static int64_t excl_find(const excl_ws_t *x, int etype, int64_t dst, int64_t *first)
{
    *first = 0;
    if (x->n == 0) return 0;
    size_t cap = x->slots;
    for (size_t h = excl_hash(etype, dst, cap); x->index[h]; h = (h + 1) & (cap - 1)) {
        int64_t i = x->index[h] - 1;
        if (x->e[i].etype != etype || x->e[i].dst != dst) continue;
        int64_t j = i;
        while (j < x->n && x->e[j].etype == etype && x->e[j].dst == dst) j++;
        *first = i;
        return j;
    }
    return 0;
}

/* ---- one row's picks ------------------------------------------------------ */

typedef struct {
    const fs_typed_etype_t *et;
    fs_sample_mode_t mode;
    int64_t k;
    uint64_t seed;   /* the request seed mixed with the edge type */
    int hop;
    int temporal, strict;
    int64_t window;
    int etype;
    int want_ids;    /* write edge ids */
    /* each destination's row as (start, degree) pairs from pass_bound, the
     * pass's first destination row_d0's first: the indptr lookups are
     * random misses, taken once per row there and read in order after */
    const int64_t *row;
    int64_t row_d0;
    /* a temporal pass over a summarised edge type (fs_time_row_t): each
     * row's (-1, eligible end) where pass_bound settled it from the
     * summary, else the (lo, hi) its end is to be searched in (search_t);
     * pairs, indexed as row */
    int64_t *known;
} pass_t;

static inline int64_t row_start(const pass_t *p, int64_t d)
{
    return p->row[2 * (d - p->row_d0)];
}

static inline int64_t row_degree(const pass_t *p, int64_t d)
{
    return p->row[2 * (d - p->row_d0) + 1];
}

/* ---- eligible ranges, searched together ----------------------------------
 *
 * A temporal row's eligible range [lo, hi) comes from binary searches in
 * its times (docs/algorithms.md §9). On a large graph every probe of a long
 * row misses the caches, and one search after another made the searches
 * 37% of a temporal batch: each waited out its misses alone. So a pass
 * first finds the ranges of all its rows, SEARCHES searches in flight at
 * once: each round advances every search by one probe and prefetches its
 * next, and a finished search hands its place to the next row, so their
 * misses overlap. 16 in flight gave ratio_vs_untimed 0.53-0.56 in
 * bench_typed, 32 gave 0.58-0.60, 64 0.61-0.64. The results are exactly
 * one search's (fs_pick_time_bound's).
 *
 * Where the edge type is summarised (fs_time_row_t), pass_bound has
 * already settled the rows wholly eligible or not at all from the summary
 * it reads in place of indptr, and only the others are searched: about a
 * quarter of a temporal batch's rows in bench_typed. */
#define SEARCHES 64

typedef struct {
    const int64_t *t;  /* the row's times */
    int64_t lo, hi;    /* the position sought is in [lo, hi]; done when lo == hi */
    int64_t at;        /* its row's index in the pass */
    int last;          /* the last position is to be probed first */
} search_t;

/* Row i (destination d0 + i) into x: the position sought in its times'
 * [lo, hi], the last position probed first when `last`. */
static inline void search_start(const pass_t *p, int64_t d0, int64_t i, int64_t lo, int64_t hi, int last,
                                search_t *x)
{
    *x = (search_t){.t = p->et->time + row_start(p, d0 + i), .lo = lo, .hi = hi, .at = i, .last = last && hi > 0};
    if (x->lo < x->hi) __builtin_prefetch(&x->t[x->last ? x->hi - 1 : lo + (hi - lo) / 2], 0, 0);
}

/* For each of n rows, the first position whose time is > key[i] + shift
 * (upper) or >= it, into out[2 * i + half]. The rows are 0..n-1, each in
 * [0, end) where end is out[2 * i + 1] when `within` (a window's lower
 * bound below its upper one), else the row's degree; or, given `left`,
 * the rows left[0..n) that their summaries did not settle, each in the
 * [lo, hi] of its pair in `known` (pass_t.known). */
static void search_rows(const pass_t *p, int64_t d0, const int64_t *key, int64_t n, int64_t shift, int upper,
                        int within, int half, const int64_t *left, const int64_t *known, int64_t *out)
{
    search_t x[SEARCHES];
    int active = 0;
    int64_t next = 0;
    for (;;) {
        for (; active < SEARCHES && next < n; next++) {
            int64_t i = left ? left[next] : next;
            if (left) /* narrowed by the pivots; with rounded steps the whole row, its last time first */
                search_start(p, d0, i, known[2 * i], known[2 * i + 1], known[2 * i] == 0 && p->et->time_shift,
                             &x[active++]);
            else
                search_start(p, d0, i, 0, within ? out[2 * i + 1] : row_degree(p, d0 + i), 1, &x[active++]);
        }
        if (active == 0) return;
        for (int i = 0; i < active;) {
            search_t *q = &x[i];
            if (q->lo < q->hi) { /* one probe, then the next one's line on its way */
                int64_t v = key[q->at] + shift;
#define PASSES(x) (upper ? (x) <= v : (x) < v)
                if (q->last) { /* most rows are eligible to their end: one probe then */
                    q->last = 0;
                    if (PASSES(q->t[q->hi - 1])) q->lo = q->hi;
                    else q->hi--;
                } else {
                    int64_t mid = q->lo + (q->hi - q->lo) / 2;
                    if (PASSES(q->t[mid])) q->lo = mid + 1;
                    else q->hi = mid;
                }
#undef PASSES
                if (q->lo < q->hi) __builtin_prefetch(&q->t[q->lo + (q->hi - q->lo) / 2], 0, 0);
                i++;
            } else {
                out[2 * q->at + half] = q->lo;
                *q = x[--active];
            }
        }
    }
}

/* The eligible ranges of destinations [d0, d1) of a temporal pass (their
 * times dtime[d0..d1)), as (lo, hi) pairs into r->range, reserved for them
 * (range_reserve): hi from the time rule, lo from the window (0 without). */
static void eligible_ranges(const pass_t *p, const int64_t *dtime, int64_t d0, int64_t d1, pick_ws_t *r)
{
    int64_t n = d1 - d0, *out = r->range.p, *left = r->left.p;
    if (n <= 0) return; /* a type with no nodes has no time array (NULL + 0 is undefined) */
    if (p->known) {
        const int64_t *known = p->known + 2 * (d0 - p->row_d0);
        int64_t nl = 0;
        for (int64_t i = 0; i < n; i++)
            if (known[2 * i] < 0) out[2 * i + 1] = known[2 * i + 1];
            else left[nl++] = i;
        search_rows(p, d0, dtime + d0, nl, 0, !p->strict, 0, 1, left, known, out);
    } else {
        search_rows(p, d0, dtime + d0, n, 0, !p->strict, 0, 1, NULL, NULL, out);
    }
    if (p->window > 0) search_rows(p, d0, dtime + d0, n, -p->window, 0, 1, 0, NULL, NULL, out);
    else
        for (int64_t i = 0; i < n; i++) out[2 * i] = 0;
}

static int range_reserve(pick_ws_t *r, const pass_t *p, int64_t rows)
{
    return p->temporal &&
           (fs_i64vec_reserve(&r->range, 2 * (size_t)rows + 2) || fs_i64vec_reserve(&r->left, (size_t)rows + 1));
}

/* Positions (relative to the row start) excluded in [lo, hi), ascending,
 * into s->skip; returns how many. O(degree), for the few excluded rows. */
static int64_t excluded_positions(pick_ws_t *s, const excl_ws_t *x, const pass_t *p, int64_t b, int64_t lo,
                                  int64_t hi, int64_t first, int64_t end)
{
    int64_t n = 0;
    for (int64_t q = lo; q < hi; q++) {
        int64_t src = fs_typed_source(p->et, b + q);
        for (int64_t i = first; i < end; i++)
            if (x->e[i].src == src) {
                s->skip.p[n++] = q;
                break;
            }
    }
    return n;
}

/* Chooses positions of one row (relative to its start) into s->pos and
 * returns how many: the eligible range [lo, hi) less the nx positions in
 * s->skip. */
static inline int64_t pick_row(pick_ws_t *s, const pass_t *p, fs_rng_t *rng, int64_t b, int64_t lo, int64_t hi,
                        int64_t nx)
{
    int64_t c = hi - lo - nx, k = p->k == FS_FANOUT_ALL ? c : p->k, *pos = s->pos.p, m;
    if (c <= 0) return 0;
    if (p->temporal == FS_TEMPORAL_LAST) { /* the most recent k, ascending */
        m = k < c ? k : c;
        int64_t q = hi - 1, x = nx - 1, w = m;
        while (w > 0) {
            if (x >= 0 && s->skip.p[x] == q) x--;
            else pos[--w] = q;
            q--;
        }
        return m;
    }
    if (p->mode >= FS_SAMPLE_WEIGHTED) {
        const float *w = p->et->weights + b + lo;
        if (nx > 0) { /* zero the excluded weights in a copy: they never win */
            memcpy(s->wcopy, w, (size_t)(hi - lo) * sizeof *w);
            for (int64_t i = 0; i < nx; i++) s->wcopy[s->skip.p[i] - lo] = 0;
            w = s->wcopy;
        }
        m = p->mode == FS_SAMPLE_WEIGHTED ? fs_pick_weighted(rng, w, hi - lo, k, s->wbuf, pos)
                                          : fs_pick_weighted_replace_cdf(rng, w, hi - lo, k, s->wbuf, pos);
        for (int64_t i = 0; i < m; i++) pos[i] += lo;
        return m;
    }
    if (p->mode == FS_SAMPLE_UNIFORM && c <= k) {
        for (int64_t i = 0; i < c; i++) pos[i] = i;
        m = c;
    } else if (p->mode == FS_SAMPLE_UNIFORM) {
        fs_pick_uniform(rng, c, k, pos);
        m = k;
    } else {
        fs_pick_replace(rng, c, k, pos);
        m = k;
    }
    if (nx == 0) {
        for (int64_t i = 0; lo > 0 && i < m; i++) pos[i] += lo;
        return m;
    }
    for (int64_t i = 0; i < m; i++) { /* the i-th surviving position of [lo, hi) */
        int64_t q = lo + pos[i];
        for (int64_t j = 0; j < nx && s->skip.p[j] <= q; j++) q++;
        pos[i] = q;
    }
    return m;
}

/* ---- one (hop, edge type) pass ------------------------------------------- */

/* A pick waiting for its insert: the key, its prefetched slot, and its
 * destination (relative to the pass's first), whose batch and time a new
 * node inherits. 16 bytes. */
typedef struct {
    uint64_t key;
    uint32_t slot;
    int32_t d;
} pending_t;

#define PREFETCH_AHEAD 16

/* The first line of destination d's sources (its times were read before
 * the pass: eligible_ranges). */
static inline void prefetch_row(const pass_t *p, int64_t d)
{
    const fs_typed_etype_t *et = p->et;
    __builtin_prefetch((const char *)et->indices + row_start(p, d) * (et->index_dtype == FS_DTYPE_I32 ? 4 : 8), 0, 0);
}

static inline void flush(fs_typed_sampler_t *s, int type, const pending_t *pend, int np, int64_t *es,
                         const int64_t *dbatch, const int64_t *dtime)
{
    if (s->disjoint) {
        dput_t dp;
        dput_open(&dp, s, type);
        for (int i = 0; i < np; i++) es[i] = dput(&dp, pend[i].key, dbatch[pend[i].d], dtime ? dtime[pend[i].d] : 0);
        dput_close(&dp, s, type);
        return;
    }
    for (int i = 0; i < np; i++)
        es[i] = tmap_add_at(s, type, pend[i].key, pend[i].slot, dbatch ? dbatch[pend[i].d] : 0,
                            dtime ? dtime[pend[i].d] : 0);
}

/* The RNG stream of a row: fs_sample.c's for edge type 0 outside disjoint
 * sampling (so one type and one edge type match fs_sample_cpu), else mixed
 * with the edge type and the batch. */
static inline fs_rng_t row_rng(const pass_t *p, int disjoint, int64_t batch, int64_t v)
{
    uint64_t seed = p->seed;
    if (disjoint) seed ^= fs_mix64((uint64_t)batch + 0x632be59bd9b4e019ULL);
    return fs_pick_rng(seed, p->hop, v);
}

/* Picks of one plain row (no time, no exclusions): fs_sample.c's, with
 * pos = NULL meaning every position 0..deg-1. */
static inline __attribute__((always_inline)) int64_t pick_plain(pick_ws_t *s, const pass_t *p, fs_rng_t *rng, int64_t b, int64_t deg,
                                 int64_t **pos)
{
    return fs_pick_row(p->mode, rng, p->et->weights ? p->et->weights + b : NULL, deg, p->k, s->wbuf, s->pos.p, pos);
}

/* The picks of row v (its edges [b, b + deg)) for a destination of the
 * given batch and, in a temporal pass, eligible range (range[0], range[1]:
 * eligible_ranges): how many, their positions from b (*pos; NULL = all of
 * 0..m-1), and with `full` the tag their keys carry. */
static inline __attribute__((always_inline)) int64_t row_picks(const fs_typed_sampler_t *s, pick_ws_t *w,
                                                               const pass_t *p, int64_t v, int64_t b, int64_t deg,
                                                               int64_t batch, const int64_t *range, uint64_t *tag,
                                                               int64_t **pos, const int full)
{
    fs_rng_t rng;
    if (!full) {
        rng = row_rng(p, 0, 0, v);
        return pick_plain(w, p, &rng, b, deg, pos);
    }
    int64_t lo = range ? range[0] : 0, hi = range ? range[1] : deg, nx = 0, first;
    if (s->x.n) {
        int64_t xend = excl_find(&s->x, p->etype, v, &first);
        if (xend > first) nx = excluded_positions(w, &s->x, p, b, lo, hi, first, xend);
    }
    *tag = tag_of(s, p->et->src_type, batch);
    if (nx == 0 && lo == 0 && (p->k == FS_FANOUT_ALL || hi <= p->k) &&
        (p->mode == FS_SAMPLE_UNIFORM || p->temporal == FS_TEMPORAL_LAST)) {
        *pos = NULL; /* every eligible position, as pick_row would list them (most temporal rows) */
        return hi;
    }
    rng = row_rng(p, s->disjoint, batch, v);
    *pos = w->pos.p;
    return pick_row(w, p, &rng, b, lo, hi, nx);
}

/* One pass over destinations d0..d1-1. `wide`: int64 source ids; `full`:
 * time, exclusions or disjoint trees in play. Both are constants in each
 * instance below, so the plain instances carry none of the full path's
 * branches and keep the homogeneous engine's register budget. */
static inline __attribute__((always_inline)) int64_t pass_body(fs_typed_sampler_t *s, const pass_t *p, int64_t d0,
                                                               int64_t d1, block_ws_t *bw, const int wide,
                                                               const int full)
{
    const fs_typed_etype_t *et = p->et;
    const type_ws_t *dw = &s->tw[et->dst_type];
    const int64_t *frontier = dw->nodes.p;
    int64_t *off = bw->off.p, *ed = bw->edst.p, *es = bw->esrc.p, *eid = p->want_ids ? bw->eid.p : NULL;
    int64_t e = 0, flushed = 0;
    /* a type with no nodes has no arrays (NULL + 0 is undefined) */
    const int64_t *dbatch = full && s->disjoint && dw->batch.p ? dw->batch.p + d0 : NULL;
    const int64_t *dtime = full && s->temporal && dw->time.p ? dw->time.p + d0 : NULL;
    const int64_t *range = NULL;
    if (full && p->temporal) { /* reserved by run_pass */
        eligible_ranges(p, dw->time.p, d0, d1, &s->pw);
        range = s->pw.range.p;
    }
    pending_t pend[PIPE + 1];
    int np = 0, src_type = et->src_type;
    uint64_t tag = tag_of(s, src_type, 0);
    off[0] = 0;
    for (int64_t d = d0; d < d1; d++) {
        if (d + PREFETCH_AHEAD < d1) prefetch_row(p, d + PREFETCH_AHEAD);
        int64_t v = frontier[d], b = row_start(p, d), deg = row_degree(p, d), *pos;
        int64_t m = row_picks(s, &s->pw, p, v, b, deg, dbatch ? dbatch[d - d0] : 0, range ? range + 2 * (d - d0) : NULL,
                              &tag, &pos, full);
        for (int64_t q = 0; q < m; q++) {
            int64_t at = pos ? pos[q] : q;
            int64_t src = wide ? ((const int64_t *)et->indices)[b + at] : ((const int32_t *)et->indices)[b + at];
            uint64_t key = key_of(tag, src);
            size_t slot = full ? key_slot(s, src_type, key) : tmap_hash(s, key);
            __builtin_prefetch(full ? key_slot_at(s, src_type, slot) : &s->map[slot], 1, 0);
            pend[np++] = (pending_t){key, (uint32_t)slot, (int32_t)(d - d0)};
            ed[e] = d;
            if (eid) eid[e] = et->edge_ids ? et->edge_ids[b + at] : b + at;
            e++;
            if (np == PIPE) { /* insert the oldest half; keep the rest in flight */
                flush(s, src_type, pend, PIPE / 2, es + flushed, dbatch, dtime);
                memmove(pend, pend + PIPE / 2, sizeof(pending_t) * (PIPE / 2));
                np = PIPE / 2;
                flushed += PIPE / 2;
            }
        }
        off[d - d0 + 1] = e;
    }
    flush(s, src_type, pend, np, es + flushed, dbatch, dtime);
    return e;
}

static int64_t pass_plain_i32(fs_typed_sampler_t *s, const pass_t *p, int64_t d0, int64_t d1, block_ws_t *bw)
{
    return pass_body(s, p, d0, d1, bw, 0, 0);
}

static int64_t pass_plain_i64(fs_typed_sampler_t *s, const pass_t *p, int64_t d0, int64_t d1, block_ws_t *bw)
{
    return pass_body(s, p, d0, d1, bw, 1, 0);
}

static int64_t pass_full_i32(fs_typed_sampler_t *s, const pass_t *p, int64_t d0, int64_t d1, block_ws_t *bw)
{
    return pass_body(s, p, d0, d1, bw, 0, 1);
}

static int64_t pass_full_i64(fs_typed_sampler_t *s, const pass_t *p, int64_t d0, int64_t d1, block_ws_t *bw)
{
    return pass_body(s, p, d0, d1, bw, 1, 1);
}

/* Rows whose indptr or summary is prefetched ahead of the one read: each
 * is a random miss, and the core alone runs few rows ahead (this loop
 * with the summaries ran at a third of indptr's shorter one until
 * prefetched; both gained). */
#define ROW_AHEAD 16

/* A seed time v as a step of the edge type's summaries (fs_time_row_t):
 * the last step whose times all pass (<= v, or < v when strict), -1 below
 * the first. A row whose first step is past it has no eligible edge, one
 * whose last step is at or before it is eligible to its end. */
static inline int64_t time_step(const fs_typed_etype_t *et, int64_t v, int strict)
{
    if (strict) {
        if (v == INT64_MIN) return -1;
        v--; /* t < v is t <= v - 1 */
    }
    if (v < et->time_base) return -1;
    uint64_t q = ((uint64_t)v - (uint64_t)et->time_base) >> et->time_shift;
    return q > INT32_MAX ? INT32_MAX : (int64_t)q;
}

/* Row d's entry in pass_t.known from its summary r (deg edges) and the
 * seed's step: settled, or the pivots around the step (exact steps only). */
static inline void summary_settle(const fs_typed_etype_t *et, const fs_time_row_t *r, int64_t b, int64_t deg,
                                  int64_t step, int64_t *known)
{
    if (deg == 0 || r->step[0] > step) {
        known[0] = -1, known[1] = 0;
    } else if (r->step[FS_TIME_PIVOTS - 1] <= step) {
        known[0] = -1, known[1] = deg;
    } else if (et->time_shift != 0) { /* rounded steps: the whole row */
        known[0] = 0, known[1] = deg;
    } else { /* pivot j passes and j + 1 fails: the end is in (pos j, pos j + 1] */
        int j = 0; /* the pivots ascend: count those that pass, branch-free */
        for (int k = 1; k < FS_TIME_PIVOTS - 1; k++) j += r->step[k] <= step;
        known[0] = pivot_at(deg, j) + 1, known[1] = pivot_at(deg, j + 1);
        __builtin_prefetch(&et->time[b + known[0] + (known[1] - known[0]) / 2], 0, 0); /* search_rows' first probe */
    }
}

/* pass_bound from the summaries: each row's start and degree, and its
 * eligible end where the summary settles it (pass_t.known). */
static int64_t pass_bound_summarised(const fs_typed_sampler_t *s, const pass_t *p, int64_t d0, int64_t d1,
                                     int64_t *max_deg, int64_t *row)
{
    const fs_typed_etype_t *et = p->et;
    const type_ws_t *dw = &s->tw[et->dst_type];
    int64_t bound = 0;
    *max_deg = 0;
    for (int64_t d = d0; d < d1; d++) {
        if (d + ROW_AHEAD < d1) __builtin_prefetch(&et->time_rows[dw->nodes.p[d + ROW_AHEAD]], 0, 0);
        const fs_time_row_t *r = &et->time_rows[dw->nodes.p[d]];
        int64_t b = r->start, deg = r->degree >= 0 ? r->degree : r[1].start - b;
        row[2 * (d - d0)] = b, row[2 * (d - d0) + 1] = deg;
        summary_settle(et, r, b, deg, time_step(et, dw->time.p[d], p->strict), &p->known[2 * (d - p->row_d0)]);
        if (deg > *max_deg) *max_deg = deg;
        bound += p->k == FS_FANOUT_ALL || (p->mode == FS_SAMPLE_UNIFORM && deg < p->k) ? deg : p->k;
    }
    return bound;
}

/* Worst-case picks of a pass and the longest row, for sizing, with every
 * destination's row (start, degree) recorded into row[] (pass_t.row). The
 * exact sum (uniform rows shorter than the fanout count their length)
 * keeps the id map no larger than the pass can fill: a map sized by fanout
 * alone was sparser and 3% slower. */
static int64_t pass_bound(const fs_typed_sampler_t *s, const pass_t *p, int64_t d0, int64_t d1, int64_t *max_deg,
                          int64_t *row)
{
    if (p->known) return pass_bound_summarised(s, p, d0, d1, max_deg, row);
    const int64_t *ip = p->et->indptr, *frontier = s->tw[p->et->dst_type].nodes.p;
    int64_t bound = 0;
    *max_deg = 0;
    for (int64_t d = d0; d < d1; d++) {
        if (d + ROW_AHEAD < d1) __builtin_prefetch(&ip[frontier[d + ROW_AHEAD]], 0, 0);
        int64_t b = ip[frontier[d]], deg = ip[frontier[d] + 1] - b;
        row[2 * (d - d0)] = b, row[2 * (d - d0) + 1] = deg;
        if (deg > *max_deg) *max_deg = deg;
        bound += p->k == FS_FANOUT_ALL || (p->mode == FS_SAMPLE_UNIFORM && deg < p->k) ? deg : p->k;
    }
    return bound;
}

/* pass_bound over the pool, in slices of destinations. */
typedef struct {
    const fs_typed_sampler_t *s;
    const pass_t *p;
    int64_t d0, d1, slice, *row;
    int64_t bound[64], max_deg[64];
} bound_job_t;

static void bound_slices(void *ctx, int64_t i0, int64_t i1, int worker)
{
    (void)worker;
    bound_job_t *j = ctx;
    for (int64_t i = i0; i < i1; i++) {
        int64_t a = j->d0 + i * j->slice, b = a + j->slice < j->d1 ? a + j->slice : j->d1;
        j->bound[i] = pass_bound(j->s, j->p, a, b, &j->max_deg[i], j->row + 2 * (a - j->d0));
    }
}

static int64_t pass_bound_on_pool(const fs_typed_sampler_t *s, const pass_t *p, int64_t d0, int64_t d1,
                                  int64_t *max_deg, int64_t *row)
{
    bound_job_t j = {.s = s, .p = p, .d0 = d0, .d1 = d1, .slice = (d1 - d0 + 63) / 64, .row = row};
    if (j.slice < 1024) return pass_bound(s, p, d0, d1, max_deg, row);
    fs_pool_run(s->pool, (d1 - d0 + j.slice - 1) / j.slice, 1, bound_slices, &j);
    int64_t bound = 0;
    *max_deg = 0;
    for (int64_t i = 0; i < (d1 - d0 + j.slice - 1) / j.slice; i++) {
        bound += j.bound[i];
        if (j.max_deg[i] > *max_deg) *max_deg = j.max_deg[i];
    }
    return bound;
}

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

/* The picks of one chunk into its staging; returns how many. As in
 * fs_sample.c's parallel hop, rows are picked AHEAD rows before their
 * neighbours are read, those neighbours prefetched meanwhile: a picked
 * neighbour is a random read that misses every cache on a large graph.
 * Fanouts over RING_PICKS and whole rows read at once. */
#define AHEAD 6
#define RING_PICKS 64

typedef struct {
    int64_t m, b;
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
    r->tag = tag;
    r->m = row_picks(s, w, p, v, r->b, row_degree(p, d), dbatch ? dbatch[d] : 0, range, &r->tag, &pos, full);
    r->all = pos == NULL;
    const char *base = (const char *)p->et->indices + r->b * (wide ? 8 : 4);
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
        eligible_ranges(p, dw->time.p, c->d0, c->d1, w);
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
        if (d + ahead + PREFETCH_AHEAD < c->d1) prefetch_row(p, d + ahead + PREFETCH_AHEAD);
        ring_row_t *r = &rows[d % AHEAD];
        if (!ring) { /* pick and read at once */
            int64_t v = frontier[d];
            now.b = row_start(p, d);
            now.tag = tag;
            now.m = row_picks(s, w, p, v, now.b, row_degree(p, d), dbatch ? dbatch[d] : 0, RANGE_OF(d),
                              &now.tag, &pos, full);
            r = &now;
        } else {
            pos = r->all ? NULL : r->pos;
        }
        for (int64_t q = 0; q < r->m; q++, e++) {
            int64_t at = pos ? pos[q] : q;
            int64_t src = wide ? ((const int64_t *)et->indices)[r->b + at] : ((const int32_t *)et->indices)[r->b + at];
            key[e] = (int64_t)key_of(r->tag, src);
            if (eid) eid[e] = et->edge_ids ? et->edge_ids[r->b + at] : r->b + at;
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

/* The first parallel pass of a request moves every type's nodes so far into
 * the id map, ids kept. */
static int move_to_idmap(fs_typed_sampler_t *s)
{
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
        if (reserve_picks(&s->worker[i], n)) return -1;
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
static int64_t pass_parallel(fs_typed_sampler_t *s, const pass_t *p, int64_t d0, int64_t d1, int64_t bound,
                             int64_t max_deg, block_ws_t *bw)
{
    type_ws_t *src = &s->tw[p->et->src_type];
    int chunks = (!s->par.active && move_to_idmap(s)) ? -1 : plan_pass(s, p, d0, d1, bound, max_deg);
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
 * fs_sample.c's: one worker inserts the staged chunks' keys into the typed
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
    for (int64_t d = c->d0; d < c->d1; d++)
        for (int64_t end = c->off.p[d - c->d0 + 1]; i < end; i++) {
            if (i + PIPE < n) __builtin_prefetch(&s->map[tmap_hash(s, key[i + PIPE])], 1, 0);
            es[i] = tmap_add_at(s, type, key[i], tmap_hash(s, key[i]), dbatch ? dbatch[d] : 0, dtime ? dtime[d] : 0);
        }
}

/* The pass on the pool with the Fused-Map kept; the number of edges, or -1
 * when out of memory. */
static int64_t pass_inserter(fs_typed_sampler_t *s, const pass_t *p, int64_t d0, int64_t d1, int64_t bound,
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

/* Samples edge type e at hop h for the destinations d0..d1-1 (local ids of
 * its destination type, fixed when the hop began). */
static fs_status_t run_pass(fs_typed_sampler_t *s, const fs_typed_view_t *g, const fs_typed_req_t *req, int hop,
                            int e, int64_t d0, int64_t d1, fs_error_t *err)
{
    const fs_typed_etype_t *et = &g->etype[e];
    block_ws_t *bw = &s->bw[hop * g->num_edge_types + e];
    fs_block_t *out = &s->out_blocks[hop * g->num_edge_types + e];
    pass_t p = {.et = et, .mode = req->mode[hop], .k = req_fanout(req, e, hop), .hop = hop, .etype = e,
                .temporal = req->temporal, .strict = req->strict, .window = req->window,
                .want_ids = req->want_edge_ids,
                .seed = req->seed ^ (e ? fs_mix64((uint64_t)e * 0x2545f4914f6cdd1dULL) : 0)};
    if (p.k == 0) d1 = d0;   /* not sampled at this hop: an empty block */
    /* the pool takes passes whose worst case reaches the threshold, and
     * then sums the exact bound (the same on either path) too */
    int64_t max_deg, bound = -1;
    if (fs_i64vec_reserve(&s->rows, 2 * (size_t)(d1 - d0) + 2))
        return fs_error(err, FS_ERR_NOMEM, "typed sample: out of memory for hop %d's %lld rows", hop, (long long)(d1 - d0));
    p.row = s->rows.p, p.row_d0 = d0;
    if (p.temporal && et->time_rows) {
        if (fs_i64vec_reserve(&s->known, 2 * (size_t)(d1 - d0) + 2))
            return fs_error(err, FS_ERR_NOMEM, "typed sample: out of memory for hop %d's %lld rows", hop,
                            (long long)(d1 - d0));
        p.known = s->known.p;
    }
    int parallel = s->par.active;
    if (!parallel) {
        if (p.k == FS_FANOUT_ALL) bound = pass_bound(s, &p, d0, d1, &max_deg, s->rows.p);
        parallel = (p.k == FS_FANOUT_ALL ? bound : (d1 - d0) * p.k) >= fs_chunk_parallel_min;
    }
    if (bound < 0)
        bound = parallel ? pass_bound_on_pool(s, &p, d0, d1, &max_deg, s->rows.p)
                         : pass_bound(s, &p, d0, d1, &max_deg, s->rows.p);
    char nb[64];
    if (s->tw[et->src_type].n + bound >= INT32_MAX)
        return fs_error(err, FS_ERR_RESOURCE, "typed sample: hop %d of %s could reach %lld nodes, over the 2^31 "
                        "per-request limit; use smaller fanouts or fewer seeds", hop, etype_name(g, e, nb, sizeof nb),
                        (long long)(s->tw[et->src_type].n + bound));
    if (fs_i64vec_reserve(&bw->off, (size_t)(d1 - d0) + 1) || fs_i64vec_reserve(&bw->edst, (size_t)bound + 1) ||
        fs_i64vec_reserve(&bw->esrc, (size_t)bound + 1) ||
        (req->want_edge_ids && fs_i64vec_reserve(&bw->eid, (size_t)bound + 1)) ||
        reserve_picks(&s->pw, max_deg > p.k ? max_deg : p.k) || range_reserve(&s->pw, &p, d1 - d0))
        return fs_error(err, FS_ERR_NOMEM, "typed sample: out of memory for hop %d (%lld edges)", hop, (long long)bound);
    int wide = et->index_dtype != FS_DTYPE_I32, full = p.temporal || s->disjoint || s->x.n;
    int64_t n;
    /* few threads keep the Fused-Map (the in-order inserter), more partition
     * it (the id map), if they have cores to run on (fs_pool_parallelism) */
    int partitioned = parallel && (s->par.active || fs_pool_parallelism(s->pool) > FS_CHUNK_INSERTER_MAX);
    if (partitioned) {
        if (nodes_reserve(s, et->src_type, bound) || (n = pass_parallel(s, &p, d0, d1, bound, max_deg, bw)) < 0)
            return fs_error(err, FS_ERR_NOMEM, "typed sample: out of memory for hop %d's parallel pass", hop);
    } else if (key_reserve(s, et->src_type, bound)) {
        return fs_error(err, FS_ERR_NOMEM, "typed sample: out of memory for the id map at hop %d", hop);
    } else if (parallel) {
        if ((n = pass_inserter(s, &p, d0, d1, bound, max_deg, bw)) < 0)
            return fs_error(err, FS_ERR_NOMEM, "typed sample: out of memory for hop %d's parallel pass", hop);
    } else {
        n = full ? (wide ? pass_full_i64 : pass_full_i32)(s, &p, d0, d1, bw)
                 : (wide ? pass_plain_i64 : pass_plain_i32)(s, &p, d0, d1, bw);
    }
    *out = (fs_block_t){.num_dst = d1 - d0, .num_src = s->tw[et->src_type].n, .num_edges = n,
                        .dst_offsets = bw->off.p, .edge_dst = bw->edst.p, .edge_src = bw->esrc.p,
                        .edge_ids = req->want_edge_ids ? bw->eid.p : NULL};
    return FS_OK;
}

/* ---- the request ---------------------------------------------------------- */

static fs_status_t add_seeds(fs_typed_sampler_t *s, const fs_typed_view_t *g, const fs_typed_seeds_t *groups,
                             int num_groups, fs_error_t *err)
{
    int64_t next_batch = 0;
    for (int i = 0; i < num_groups; i++) {
        const fs_typed_seeds_t *sg = &groups[i];
        if (fs_i64vec_reserve(&s->seed_local[i], (size_t)sg->count + 1) || key_reserve(s, sg->type, sg->count))
            return fs_error(err, FS_ERR_NOMEM, "typed sample: out of memory for %lld seeds", (long long)sg->count);
        const int64_t *nt = g->node_time ? g->node_time[sg->type] : NULL;
        dput_t dp = {0};
        if (s->disjoint) dput_open(&dp, s, sg->type);
        for (int64_t j = 0; j < sg->count; j++) {
            int64_t v = sg->ids[j], batch = sg->batch ? sg->batch[j] : next_batch + j;
            int64_t t = sg->time ? sg->time[j] : nt ? nt[v] : 0;
            uint64_t key = key_of(tag_of(s, sg->type, batch), v);
            s->seed_local[i].p[j] = s->disjoint ? dput(&dp, key, batch, t)
                                                : tmap_add_at(s, sg->type, key, tmap_hash(s, key), batch, t);
        }
        if (s->disjoint) dput_close(&dp, s, sg->type);
        next_batch = batches_after(sg, next_batch);
        s->out_seed_local[i] = s->seed_local[i].p;
    }
    return FS_OK;
}

fs_status_t fs_typed_sample_cpu(fs_typed_sampler_t *s, const fs_typed_view_t *g, const fs_typed_req_t *req,
                                const fs_typed_seeds_t *groups, int num_groups, const fs_typed_exclude_t *excl,
                                int64_t num_excl, fs_typed_result_t *res, fs_error_t *err)
{
    fs_status_t st = fs_typed_check(g, req, groups, num_groups, excl, num_excl, err);
    if (st != FS_OK) return st;
    int T = g->num_node_types, E = g->num_edge_types;
    if (reserve_shape(s, T, req->num_hops * E, num_groups) || excl_build(&s->x, excl, num_excl))
        return fs_error(err, FS_ERR_NOMEM, "typed sample: out of memory");
    s->num_types = T;
    s->temporal = req->temporal != FS_TEMPORAL_OFF;
    s->disjoint = req->disjoint || s->temporal;
    for (int t = 0; t < T; t++) s->tw[t].n = 0;
    tmap_begin(s);
    if (s->disjoint && dmap_begin(s)) return fs_error(err, FS_ERR_NOMEM, "typed sample: out of memory for the id map");
    s->par.active = 0;
    if ((st = add_seeds(s, g, groups, num_groups, err))) return st;
    int64_t after[FS_MAX_HOPS + 1][T > 0 ? T : 1];
    for (int t = 0; t < T; t++) after[0][t] = s->tw[t].n;
    for (int h = 0; h < req->num_hops; h++) {
        for (int e = 0; e < E; e++) {
            int dt = g->etype[e].dst_type;
            int64_t d0 = req->frontier == FS_FRONTIER_NEW && h > 0 ? after[h - 1][dt] : 0;
            if ((st = run_pass(s, g, req, h, e, d0, after[h][dt], err))) return st;
        }
        for (int t = 0; t < T; t++) after[h + 1][t] = s->tw[t].n;
        for (int e = 0; e < E; e++) /* a block's sources: every node of the type after the hop */
            s->out_blocks[h * E + e].num_src = after[h + 1][g->etype[e].src_type];
    }
    for (int t = 0; t < T; t++) {
        if (s->disjoint) s->tw[t].dm.last_n = s->tw[t].n;
        fs_typed_nodes_t *o = &s->out_nodes[t];
        *o = (fs_typed_nodes_t){.num_nodes = s->tw[t].n, .nodes = s->tw[t].nodes.p,
                                .batch = s->disjoint ? s->tw[t].batch.p : NULL,
                                .time = s->temporal ? s->tw[t].time.p : NULL};
        for (int h = 0; h <= req->num_hops; h++) o->count_after[h] = after[h][t];
    }
    *res = (fs_typed_result_t){.num_hops = req->num_hops, .num_node_types = T, .num_edge_types = E,
                               .type = s->out_nodes, .block = s->out_blocks, .num_groups = num_groups,
                               .seed_local = s->out_seed_local};
    return FS_OK;
}

/* ---- the CUDA sampler's access to the workspace (fs_typed_internal.h) ---- */

int fs_typed_ws_shape(fs_typed_sampler_t *s, int types, int blocks, int groups)
{
    return reserve_shape(s, types, blocks, groups);
}

int64_t *fs_typed_ws_node_array(fs_typed_sampler_t *s, int type, int kind, size_t n)
{
    type_ws_t *w = &s->tw[type];
    fs_i64vec_t *v = kind == FS_TWS_BATCH ? &w->batch : kind == FS_TWS_TIME ? &w->time : &w->nodes;
    return fs_i64vec_reserve(v, n + 1) ? NULL : v->p;
}

int64_t *fs_typed_ws_block_array(fs_typed_sampler_t *s, int block, int kind, size_t n)
{
    block_ws_t *w = &s->bw[block];
    fs_i64vec_t *v = kind == FS_TWS_OFF ? &w->off : kind == FS_TWS_EDST ? &w->edst : kind == FS_TWS_ESRC ? &w->esrc
                                                                                                      : &w->eid;
    return fs_i64vec_reserve(v, n + 1) ? NULL : v->p;
}

int64_t *fs_typed_ws_seed_local(fs_typed_sampler_t *s, int group, size_t n)
{
    if (fs_i64vec_reserve(&s->seed_local[group], n + 1)) return NULL;
    s->out_seed_local[group] = s->seed_local[group].p;
    return s->seed_local[group].p;
}

void fs_typed_ws_result(fs_typed_sampler_t *s, const fs_typed_view_t *g, const fs_typed_req_t *req, int num_groups,
                        const int64_t *after, const int64_t *num_dst, const int64_t *num_edges,
                        fs_typed_result_t *res)
{
    int T = g->num_node_types, E = g->num_edge_types, H = req->num_hops;
    s->num_types = T;
    s->temporal = req->temporal != FS_TEMPORAL_OFF;
    s->disjoint = req->disjoint || s->temporal;
    for (int b = 0; b < H * E; b++) {
        block_ws_t *w = &s->bw[b];
        int64_t num_src = after[(b / E + 1) * T + g->etype[b % E].src_type]; /* every node of the type after the hop */
        s->out_blocks[b] = (fs_block_t){.num_dst = num_dst[b], .num_src = num_src, .num_edges = num_edges[b],
                                        .dst_offsets = w->off.p, .edge_dst = w->edst.p, .edge_src = w->esrc.p,
                                        .edge_ids = req->want_edge_ids ? w->eid.p : NULL};
    }
    for (int t = 0; t < T; t++) {
        type_ws_t *w = &s->tw[t];
        w->n = after[H * T + t];
        fs_typed_nodes_t *o = &s->out_nodes[t];
        *o = (fs_typed_nodes_t){.num_nodes = w->n, .nodes = w->nodes.p, .batch = s->disjoint ? w->batch.p : NULL,
                                .time = s->temporal ? w->time.p : NULL};
        for (int h = 0; h <= H; h++) o->count_after[h] = after[h * T + t];
    }
    *res = (fs_typed_result_t){.num_hops = H, .num_node_types = T, .num_edge_types = E, .type = s->out_nodes,
                               .block = s->out_blocks, .num_groups = num_groups, .seed_local = s->out_seed_local};
}
