/* fs_typed_internal.h — the typed sampler's private interface, in two parts.
 * Not a public interface.
 *
 * The first lets the CUDA typed sampler (fs_typed.cu) fill the CPU typed
 * sampler's workspace, so both hand out results with one ownership model
 * (fs_typed.h: valid until the sampler's next call or its destruction).
 * The functions sit at the end of fs_typed.c, next to the workspace they
 * hand out. Protocol: fs_typed_ws_shape for the request's shape, then any
 * of the arrays (each call may move what an earlier call for the same
 * array returned), then fs_typed_ws_result once every array is written.
 *
 * The second (C only: fs_chunked.h's atomics are not C++) is what the CPU
 * engine's files share: the sampler's state, the functions that cross
 * files (named fs_typed_*), and, static inline, the maps' inserts and one
 * row's picks. Those are here rather than in a .c because the hot loops of
 * two files (fs_typed_pass.c's serial pass, fs_typed_parallel.c's chunks
 * and inserter) and fs_typed.c's seeds call them per pick: inline, the
 * serial pass's loop and the inserter compile to the instructions they had
 * when the engine was one file. */
#ifndef FS_TYPED_INTERNAL_H
#define FS_TYPED_INTERNAL_H

#include "fs_typed.h"

enum { FS_TWS_NODES, FS_TWS_BATCH, FS_TWS_TIME };          /* a node type's arrays */
enum { FS_TWS_OFF, FS_TWS_EDST, FS_TWS_ESRC, FS_TWS_EID }; /* a block's arrays */

/* Room for `types` node types, `blocks` (hops * edge types) blocks and
 * `groups` seed groups: 0, or -1 when out of memory. */
int fs_typed_ws_shape(fs_typed_sampler_t *s, int types, int blocks, int groups);

/* A workspace array with room for n entries (never NULL for n = 0), or
 * NULL when out of memory. block is hop * num_edge_types + edge type. */
int64_t *fs_typed_ws_node_array(fs_typed_sampler_t *s, int type, int kind, size_t n);
int64_t *fs_typed_ws_block_array(fs_typed_sampler_t *s, int block, int kind, size_t n);
int64_t *fs_typed_ws_seed_local(fs_typed_sampler_t *s, int group, size_t n);

/* Fills *res from the workspace, as fs_typed_sample_cpu does. after:
 * [(num_hops + 1) * types], each type's node count after the seeds (row 0)
 * and after each hop; num_dst, num_edges: [num_hops * edge types]. */
void fs_typed_ws_result(fs_typed_sampler_t *s, const fs_typed_view_t *g, const fs_typed_req_t *req, int num_groups,
                        const int64_t *after, const int64_t *num_dst, const int64_t *num_edges,
                        fs_typed_result_t *res);

/* An extension's workspace hung off the sampler (fs_link.c's arrays, the
 * boosted pass's weights), made zeroed at `size` bytes on first use and
 * freed by free_fn with the sampler, so it follows the sampler's ownership
 * rule. NULL when out of memory. */
enum { FS_TEXT_LINK, FS_TEXT_BOOST, FS_TEXT_COUNT };
void *fs_typed_sampler_ext(fs_typed_sampler_t *s, int slot, size_t size, void (*free_fn)(void *));

#ifndef __cplusplus
/* ---- the CPU engine's own ------------------------------------------------- */

#include <string.h>

#include "fs_chunked.h"
#include "fs_sample_internal.h"
#include "fs_sample_pick.h"

/* Picks in flight between their slot's prefetch and their insert (the
 * serial pass, the in-order inserter). */
#define PIPE 32

/* A map key packs (tag, node): node in the low 40 bits, the tag above —
 * the type, or batch * num_types + type when disjoint — so a slot is 16
 * bytes and four share a cache line. fs_typed_check
 * refuses graphs and requests that do not fit (FS_KEY_NODE_BITS). */
#define FS_KEY_NODE_BITS 40
#define FS_KEY_TAG_LIMIT (1LL << (64 - FS_KEY_NODE_BITS - 1))

typedef struct {
    uint64_t key;
    int32_t val;
    uint32_t epoch;
} tslot_t;

/* The disjoint map of one node type: see "the disjoint map" in fs_typed_map.c. */
typedef struct {
    uint32_t *slot;
    size_t cap;       /* slots allocated */
    int bits;         /* this request's table is its first 2^bits slots (0: none yet); the id field's width */
    int64_t last_n;   /* the type's nodes in the last request, to size the next */
} dmap_t;

/* A result array: p/cap is where this request writes it (the caller's
 * output memory, fs_typed_sampler_set_output, or `heap`), heap the
 * sampler's own array, kept across requests. */
typedef struct {
    int64_t *p;
    size_t cap;
    fs_i64vec_t heap;
} outvec_t;

typedef struct {
    outvec_t nodes;
    fs_i64vec_t batch, time;
    int64_t n;
    dmap_t dm;
} type_ws_t;

typedef struct {
    outvec_t off, edst, esrc, eid;
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
    fs_i64vec_t range;   /* temporal passes: each row's eligible [lo, hi), as pairs (fs_typed_eligible_ranges) */
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
    outvec_t *seed_local;
    struct {               /* the caller's memory for result arrays (fs_typed_sampler_set_output) */
        char *base;
        size_t cap, top;   /* top: bytes handed out in this request */
        int armed;         /* given for the next request, not yet begun */
    } out;
    const int64_t **out_seed_local;
    int cap_groups;
    pick_ws_t pw;
    excl_ws_t x;
    fs_i64vec_t rx_at, rx_src;    /* a remote pass's exclusions, as fs_typed_picks_req_t carries them */
    void *ext[FS_TEXT_COUNT];     /* fs_link.c's workspace, the boosted pass's */
    void (*ext_free[FS_TEXT_COUNT])(void *);
    /* parallel passes (fs_typed_parallel.c): the borrowed pool, the chunks
     * and their id map, per-worker pick scratch */
    fs_pool_t *pool;
    fs_chunked_t par;
    pick_ws_t *worker;
    int worker_cap;
    fs_i64vec_t keys;             /* the keys moved into the id map */
    fs_i64vec_t rows;             /* the pass's rows (pass_t.row) */
    fs_i64vec_t known;            /* their eligible ends from summaries (pass_t.known) */
    fs_i64vec_t parts;            /* a routed pass's row parts, one byte each (pass_t.row_part) */
    fs_i64vec_t pk_off, pk_src, pk_eid; /* fs_typed_picks' answer */
    fs_i64vec_t seed_time;        /* seeds' timestamps read from elsewhere (fs_typed_view_t.remote_time) */
};

/* Pivot j's position in a row of deg > 0 edges: 0 for the first, deg - 1
 * for the last (j = FS_TIME_PIVOTS - 1). */
static inline int64_t pivot_at(int64_t deg, int j)
{
    return (int64_t)j * (deg - 1) / (FS_TIME_PIVOTS - 1);
}

/* ---- the request check (fs_typed_check.c) --------------------------------- */

static inline int req_fanout(const fs_typed_req_t *req, int e, int h)
{
    return req->fanout[e * req->num_hops + h];
}

/* The first batch number after a seed group, given the one before it: a
 * group without batches numbers its seeds on from there. */
static inline int64_t batches_after(const fs_typed_seeds_t *sg, int64_t next)
{
    if (!sg->batch) return next + sg->count;
    for (int64_t j = 0; j < sg->count; j++)
        if (sg->batch[j] + 1 > next) next = sg->batch[j] + 1;
    return next;
}

/* An edge type's name for a message: its own, or "edge type #e" in buf. */
const char *fs_typed_etype_name(const fs_typed_view_t *g, int e, char *buf, size_t len);

/* ---- workspace (fs_typed.c) ----------------------------------------------- */

/* Room for n entries in a result array, its first `keep` kept: in the
 * output memory while it has room (64-byte aligned), else the sampler's
 * own. 0, or -1 when out of memory. */
int fs_typed_out_reserve(fs_typed_sampler_t *s, outvec_t *v, size_t n, size_t keep);

/* Room in a pick scratch for rows of up to n edges. 0, or -1 when out of
 * memory. */
int fs_typed_reserve_picks(pick_ws_t *s, int64_t n);

/* ---- the map (sized in fs_typed_map.c) ------------------------------------ */

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

/* A run of plain inserts (no batches, no times) into the Fused-Map, its
 * table, epoch and node array held in locals (tput_open .. tput_close), as
 * dput_t does for the disjoint map: through the sampler the compiler
 * reloads them after every store. */
typedef struct {
    tslot_t *map;
    size_t mask;
    int shift;
    uint32_t epoch;
    int64_t *nodes, n;
} tput_t;

static inline void tput_open(tput_t *p, fs_typed_sampler_t *s, int type)
{
    *p = (tput_t){.map = s->map, .mask = s->map_cap - 1, .shift = s->map_shift, .epoch = s->epoch,
                  .nodes = s->tw[type].nodes.p, .n = s->tw[type].n};
}

static inline void tput_close(const tput_t *p, fs_typed_sampler_t *s, int type)
{
    s->tw[type].n = p->n;
}

/* tmap_hash's slot, from the held shift. */
static inline size_t tput_hash(const tput_t *p, uint64_t key)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ULL) >> p->shift);
}

/* tmap_add_at's plain case: the local id of key from its home slot h. */
static inline __attribute__((always_inline)) int64_t tput(tput_t *p, uint64_t key, size_t h)
{
    for (;;) {
        tslot_t *sl = &p->map[h];
        if (sl->epoch != p->epoch) {
            int64_t id = p->n++;
            *sl = (tslot_t){.key = key, .val = (int32_t)id, .epoch = p->epoch};
            p->nodes[id] = (int64_t)(key & ((1ULL << FS_KEY_NODE_BITS) - 1));
            return id;
        }
        if (sl->key == key) return sl->val;
        h = (h + 1) & p->mask;
    }
}

/* Room for `extra` more nodes of `type`, and for their keys in whichever
 * map the request uses. 0, or -1 when out of memory. */
int fs_typed_nodes_reserve(fs_typed_sampler_t *s, int type, int64_t extra);
int fs_typed_key_reserve(fs_typed_sampler_t *s, int type, int64_t extra);

/* Starts a request's map, and its disjoint tables. 0, or -1. */
void fs_typed_tmap_begin(fs_typed_sampler_t *s);
int fs_typed_dmap_begin(fs_typed_sampler_t *s);

/* ---- the disjoint map (fs_typed_map.c says why) --------------------------- */

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

/* ---- exclusions (fs_typed_pass.c) ----------------------------------------- */

/* The request's exclusions, sorted and indexed. 0, or -1 when out of memory. */
int fs_typed_excl_build(excl_ws_t *x, const fs_typed_exclude_t *in, int64_t n);

/* The excluded sources of (etype, dst): entries [*first, return). */
int64_t fs_typed_excl_find(const excl_ws_t *x, int etype, int64_t dst, int64_t *first);

/* ---- one row's picks ------------------------------------------------------ */

typedef struct {
    const fs_typed_etype_t *et;
    fs_sample_mode_t mode;
    int64_t k;
    uint64_t seed;   /* the request seed mixed with the edge type */
    uint64_t seed_req; /* the request's own (what a remote pass passes on) */
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
    /* a routed pass (fs_typed_etype_t.tiers; plain passes only): each row's
     * part, indexed as row, and the parts; NULL: every row in part 0 */
    const uint8_t *row_part;
    const fs_csr_part_t *part;
    int lazy;        /* rows read where they are picked: by each chunk on the pool (into row), or inline */
    const fs_typed_picks_t *remote; /* the destinations' picks made elsewhere (fs_typed_etype_t.remote) */
} pass_t;

/* The RNG seed of edge type e's passes: the request's, mixed with e past
 * edge type 0 (so one type and one edge type match fs_sample_cpu). The
 * CUDA twin (fs_typed.cu) mixes the same way. */
static inline uint64_t pass_seed(uint64_t req_seed, int e)
{
    return req_seed ^ (e ? fs_mix64((uint64_t)e * 0x2545f4914f6cdd1dULL) : 0);
}

static inline int64_t row_start(const pass_t *p, int64_t d)
{
    return p->row[2 * (d - p->row_d0)];
}

static inline int64_t row_degree(const pass_t *p, int64_t d)
{
    return p->row[2 * (d - p->row_d0) + 1];
}

/* Positions of a row excluded in [lo, hi), into s->skip (fs_typed_pass.c). */
int64_t fs_typed_excluded_positions(pick_ws_t *s, const excl_ws_t *x, const pass_t *p, int64_t b, int64_t lo,
                                    int64_t hi, int64_t first, int64_t end);

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

#define PREFETCH_AHEAD 16

/* The part row d is read from: its own in a routed pass, else part 0 (the
 * edge type's arrays). */
static inline const void *row_indices(const pass_t *p, int64_t d)
{
    return p->row_part ? p->part[p->row_part[d - p->row_d0]].indices : p->et->indices;
}

static inline const float *row_weights(const pass_t *p, int64_t d)
{
    return p->row_part ? p->part[p->row_part[d - p->row_d0]].weights : p->et->weights;
}

/* The position in part 0 of row d's edge `at` (an edge's id without
 * edge_ids): row_start's in part 0, else the row's start there. */
static inline int64_t row_edge(const pass_t *p, int64_t d, int64_t v, int64_t at)
{
    return (p->row_part ? p->et->indptr[v] : row_start(p, d)) + at;
}

/* The first line of destination d's sources (its times were read before
 * the pass: fs_typed_eligible_ranges). */
static inline void prefetch_row(const pass_t *p, int64_t d, const int routed)
{
    const fs_typed_etype_t *et = p->et;
    const char *ind = routed ? row_indices(p, d) : et->indices;
    __builtin_prefetch(ind + row_start(p, d) * (et->index_dtype == FS_DTYPE_I32 ? 4 : 8), 0, 0);
}

/* The RNG stream of a row: fs_pick_rng's for edge type 0 outside disjoint
 * sampling (so one type and one edge type match fs_sample_cpu), else mixed
 * with the edge type and the batch. */
static inline fs_rng_t row_rng(const pass_t *p, int disjoint, int64_t batch, int64_t v)
{
    uint64_t seed = p->seed;
    if (disjoint) seed ^= fs_mix64((uint64_t)batch + 0x632be59bd9b4e019ULL);
    return fs_pick_rng(seed, p->hop, v);
}

/* Picks of one plain row (no time, no exclusions; its weights w, from its
 * part), with pos = NULL meaning every position 0..deg-1. */
static inline __attribute__((always_inline)) int64_t pick_plain(pick_ws_t *s, const pass_t *p, fs_rng_t *rng,
                                                                const float *w, int64_t b, int64_t deg, int64_t **pos)
{
    return fs_pick_row(p->mode, rng, w ? w + b : NULL, deg, p->k, s->wbuf, s->pos.p, pos);
}

/* The picks of row v (destination d, its edges [b, b + deg)) for a destination of the
 * given batch and, in a temporal pass, eligible range (range[0], range[1]:
 * fs_typed_eligible_ranges): how many, their positions from b (*pos; NULL
 * = all of 0..m-1), and with `full` the tag their keys carry. */
static inline __attribute__((always_inline)) int64_t row_picks(const fs_typed_sampler_t *s, pick_ws_t *w,
                                                               const pass_t *p, int64_t d, int64_t v, int64_t b,
                                                               int64_t deg, int64_t batch, const int64_t *range,
                                                               uint64_t *tag, int64_t **pos, const int full)
{
    fs_rng_t rng;
    if (!full) {
        rng = row_rng(p, 0, 0, v);
        return pick_plain(w, p, &rng, row_weights(p, d), b, deg, pos);
    }
    int64_t lo = range ? range[0] : 0, hi = range ? range[1] : deg, nx = 0, first;
    if (s->x.n) {
        int64_t xend = fs_typed_excl_find(&s->x, p->etype, v, &first);
        if (xend > first) nx = fs_typed_excluded_positions(w, &s->x, p, b, lo, hi, first, xend);
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

/* ---- passes (fs_typed_pass.c, fs_typed_parallel.c) ------------------------ */

/* Each temporal row's eligible range (fs_typed_pass.c), and room for
 * them. */
void fs_typed_eligible_ranges(const pass_t *p, const int64_t *dtime, int64_t d0, int64_t d1, pick_ws_t *r);

static inline int range_reserve(pick_ws_t *r, const pass_t *p, int64_t rows)
{
    return p->temporal &&
           (fs_i64vec_reserve(&r->range, 2 * (size_t)rows + 2) || fs_i64vec_reserve(&r->left, (size_t)rows + 1));
}

/* Each destination's row (start, degree) of d0..d1-1 into row[] (and,
 * summarised or routed, pass_t.known or row_part): their worst-case picks,
 * the longest in *max_deg. */
int64_t fs_typed_pass_bound(const fs_typed_sampler_t *s, const pass_t *p, int64_t d0, int64_t d1, int64_t *max_deg,
                            int64_t *row);

/* Samples edge type e at hop h for the destinations d0..d1-1 (local ids of
 * its destination type, fixed when the hop began). */
fs_status_t fs_typed_run_pass(fs_typed_sampler_t *s, const fs_typed_view_t *g, const fs_typed_req_t *req, int hop,
                              int e, int64_t d0, int64_t d1, fs_error_t *err);

/* The pass on the pool, partitioned or with the in-order inserter
 * (fs_typed_parallel.c); the number of edges, or -1 when out of memory. */
int64_t fs_typed_pass_parallel(fs_typed_sampler_t *s, const pass_t *p, int64_t d0, int64_t d1, int64_t bound,
                               int64_t max_deg, block_ws_t *bw);
int64_t fs_typed_pass_inserter(fs_typed_sampler_t *s, const pass_t *p, int64_t d0, int64_t d1, int64_t bound,
                               int64_t max_deg, block_ws_t *bw);

/* The first parallel pass of a request moves every type's nodes so far into
 * the id map, ids kept (a no-op after it). 0, or -1 when out of memory. */
int fs_typed_par_begin(fs_typed_sampler_t *s);

/* A locality-aware pass (fs_locality.c; req->locality->s > 1, one node type
 * and one edge type, every hop uniform): hop `hop`'s num_dst destinations
 * sample with the boost into bw, the id map and the type's nodes; the
 * number of edges into *num_edges and the per-edge weights into *weights. */
fs_status_t fs_las_pass(fs_typed_sampler_t *s, const fs_typed_view_t *g, const fs_typed_req_t *req, int hop,
                        int64_t num_dst, block_ws_t *bw, int64_t *num_edges, const float **weights,
                        fs_error_t *err);

#endif /* __cplusplus */

#endif
