/* fs_typed_pass.c — one (hop, edge type) pass of the typed sampler: the
 * serial pass over its destinations and what it needs per row (the
 * request's exclusions, each temporal row's eligible range), its sizing
 * from the worst case, and fs_typed_run_pass, which runs the pass here or
 * hands it to the pool (fs_typed_parallel.c). The serial pass is the
 * engine's hottest loop: what it calls per row is in this file, or inline
 * from fs_typed_internal.h (one row's picks, the maps' inserts).
 *
 * Inserts are pipelined: each picked key's slot is
 * prefetched when it is picked and filled PIPE picks later, still in pick
 * order, so local ids follow first appearance exactly.
 *
 * A row's eligible edges are a position range [lo, hi) (all of it without
 * time; with, settled from the edge type's row summaries, fs_time_row_t, or
 * binary-searched on the row's times) minus excluded positions.
 * Picks are the shared ones of fs_sample_pick.h over that range; the rows
 * with exclusions (a link batch's few endpoints) pick among the surviving
 * positions, or over weights with the excluded ones zeroed. */
#include "fs_typed.h"

#include <stdlib.h>
#include <string.h>

#include "fs_locality.h"
#include "fs_typed_internal.h"

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

int fs_typed_excl_build(excl_ws_t *x, const fs_typed_exclude_t *in, int64_t n)
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
int64_t fs_typed_excl_find(const excl_ws_t *x, int etype, int64_t dst, int64_t *first)
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
void fs_typed_eligible_ranges(const pass_t *p, const int64_t *dtime, int64_t d0, int64_t d1, pick_ws_t *r)
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

/* Positions (relative to the row start) excluded in [lo, hi), ascending,
 * into s->skip; returns how many. O(degree), for the few excluded rows. */
int64_t fs_typed_excluded_positions(pick_ws_t *s, const excl_ws_t *x, const pass_t *p, int64_t b, int64_t lo,
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

/* ---- one (hop, edge type) pass ------------------------------------------- */

/* A serial pass that reads its rows inline prefetches indptr 2 x this many
 * rows ahead and each row's first sources this many ahead. */
#define INLINE_AHEAD 8

/* A pick waiting for its insert: the key, its prefetched slot, and its
 * destination (relative to the pass's first), whose batch and time a new
 * node inherits. 16 bytes. */
typedef struct {
    uint64_t key;
    uint32_t slot;
    int32_t d;
} pending_t;

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

/* One pass over destinations d0..d1-1. `wide`: int64 source ids; `full`:
 * time, exclusions or disjoint trees in play; `routed`: rows read from
 * their parts (pass_t.row_part), never with `full`. All are constants in
 * each instance below, so the plain instances carry none of the other
 * paths' branches and keep the tightest register budget. */
static inline __attribute__((always_inline)) int64_t pass_body(fs_typed_sampler_t *s, const pass_t *p, int64_t d0,
                                                               int64_t d1, block_ws_t *bw, const int wide,
                                                               const int full, const int routed, const int inl,
                                                               const int remote)
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
    if (full && p->temporal && !remote) { /* reserved by fs_typed_run_pass; a remote pass's: its shards' */
        fs_typed_eligible_ranges(p, dw->time.p, d0, d1, &s->pw);
        range = s->pw.range.p;
    }
    pending_t pend[PIPE + 1];
    int np = 0, src_type = et->src_type;
    uint64_t tag = tag_of(s, src_type, 0);
    off[0] = 0;
    const int64_t *ip = et->indptr;
    for (int64_t d = d0; d < d1; d++) {
        int64_t v = frontier[d], b, deg, *pos = NULL, m;
        if (remote) { /* the answer's picks, in order */
            b = p->remote->off[d - d0], m = p->remote->off[d - d0 + 1] - b;
            if (full) tag = tag_of(s, src_type, dbatch ? dbatch[d - d0] : 0);
        } else if (inl) { /* the row read here (pass_t.lazy): indptr far ahead, the row's start nearer */
            if (d + 2 * INLINE_AHEAD < d1) __builtin_prefetch(&ip[frontier[d + 2 * INLINE_AHEAD]], 0, 0);
            if (d + INLINE_AHEAD < d1)
                __builtin_prefetch((const char *)et->indices + ip[frontier[d + INLINE_AHEAD]] * (wide ? 8 : 4), 0, 0);
            b = ip[v], deg = ip[v + 1] - b;
        } else {
            if (d + PREFETCH_AHEAD < d1) prefetch_row(p, d + PREFETCH_AHEAD, routed);
            b = row_start(p, d), deg = row_degree(p, d);
        }
        if (!remote)
            m = row_picks(s, &s->pw, p, d, v, b, deg, dbatch ? dbatch[d - d0] : 0, range ? range + 2 * (d - d0) : NULL,
                          &tag, &pos, full);
        const void *ind = routed ? row_indices(p, d) : et->indices;
        for (int64_t q = 0; q < m; q++) {
            int64_t at = pos ? pos[q] : q;
            int64_t src = remote ? p->remote->src[b + at]
                          : wide ? ((const int64_t *)ind)[b + at] : ((const int32_t *)ind)[b + at];
            uint64_t key = key_of(tag, src);
            size_t slot = full ? key_slot(s, src_type, key) : tmap_hash(s, key);
            __builtin_prefetch(full ? key_slot_at(s, src_type, slot) : &s->map[slot], 1, 0);
            pend[np++] = (pending_t){key, (uint32_t)slot, (int32_t)(d - d0)};
            ed[e] = d;
            if (eid && remote) {
                eid[e] = p->remote->eid[b + at];
            } else if (eid) {
                int64_t pos0 = routed ? row_edge(p, d, v, at) : b + at; /* inline rows are never routed */
                eid[e] = et->edge_ids ? et->edge_ids[pos0] : pos0;
            }
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
    return pass_body(s, p, d0, d1, bw, 0, 0, 0, 0, 0);
}

static int64_t pass_plain_i64(fs_typed_sampler_t *s, const pass_t *p, int64_t d0, int64_t d1, block_ws_t *bw)
{
    return pass_body(s, p, d0, d1, bw, 1, 0, 0, 0, 0);
}

static int64_t pass_full_i32(fs_typed_sampler_t *s, const pass_t *p, int64_t d0, int64_t d1, block_ws_t *bw)
{
    return pass_body(s, p, d0, d1, bw, 0, 1, 0, 0, 0);
}

static int64_t pass_full_i64(fs_typed_sampler_t *s, const pass_t *p, int64_t d0, int64_t d1, block_ws_t *bw)
{
    return pass_body(s, p, d0, d1, bw, 1, 1, 0, 0, 0);
}

static int64_t pass_inline_i32(fs_typed_sampler_t *s, const pass_t *p, int64_t d0, int64_t d1, block_ws_t *bw)
{
    return pass_body(s, p, d0, d1, bw, 0, 0, 0, 1, 0);
}

static int64_t pass_inline_i64(fs_typed_sampler_t *s, const pass_t *p, int64_t d0, int64_t d1, block_ws_t *bw)
{
    return pass_body(s, p, d0, d1, bw, 1, 0, 0, 1, 0);
}

static int64_t pass_routed_i32(fs_typed_sampler_t *s, const pass_t *p, int64_t d0, int64_t d1, block_ws_t *bw)
{
    return pass_body(s, p, d0, d1, bw, 0, 0, 1, 0, 0);
}

static int64_t pass_routed_i64(fs_typed_sampler_t *s, const pass_t *p, int64_t d0, int64_t d1, block_ws_t *bw)
{
    return pass_body(s, p, d0, d1, bw, 1, 0, 1, 0, 0);
}

static int64_t pass_remote(fs_typed_sampler_t *s, const pass_t *p, int64_t d0, int64_t d1, block_ws_t *bw)
{
    return pass_body(s, p, d0, d1, bw, 0, 0, 0, 0, 1);
}

static int64_t pass_remote_full(fs_typed_sampler_t *s, const pass_t *p, int64_t d0, int64_t d1, block_ws_t *bw)
{
    return pass_body(s, p, d0, d1, bw, 0, 1, 0, 0, 1);
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

/* A row's worst-case picks: the exact count for uniform rows shorter than
 * the fanout. */
static inline int64_t row_bound(const pass_t *p, int64_t deg)
{
    return p->k == FS_FANOUT_ALL || (p->mode == FS_SAMPLE_UNIFORM && deg < p->k) ? deg : p->k;
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
        bound += row_bound(p, deg);
    }
    return bound;
}

/* pass_bound through the route: each row's part, and its start there. */
static int64_t pass_bound_routed(const fs_typed_sampler_t *s, const pass_t *p, int64_t d0, int64_t d1,
                                 int64_t *max_deg, int64_t *row)
{
    const uint64_t *route = p->et->tiers->route;
    const int64_t *frontier = s->tw[p->et->dst_type].nodes.p;
    uint8_t *part = (uint8_t *)p->row_part + (d0 - p->row_d0);
    int64_t bound = 0;
    *max_deg = 0;
    for (int64_t d = d0; d < d1; d++) {
        if (d + ROW_AHEAD < d1) __builtin_prefetch(&route[frontier[d + ROW_AHEAD]], 0, 0);
        uint64_t r = route[frontier[d]];
        const int64_t *ip = p->part[FS_ROUTE_TIER(r)].indptr + FS_ROUTE_ROW(r);
        int64_t b = ip[0], deg = ip[1] - b;
        part[d - d0] = (uint8_t)FS_ROUTE_TIER(r);
        row[2 * (d - d0)] = b, row[2 * (d - d0) + 1] = deg;
        if (deg > *max_deg) *max_deg = deg;
        bound += row_bound(p, deg);
    }
    return bound;
}

/* Worst-case picks of a pass and the longest row, for sizing, with every
 * destination's row (start, degree) recorded into row[] (pass_t.row). The
 * exact sum (uniform rows shorter than the fanout count their length)
 * keeps the id map no larger than the pass can fill: a map sized by fanout
 * alone was sparser and 3% slower. */
int64_t fs_typed_pass_bound(const fs_typed_sampler_t *s, const pass_t *p, int64_t d0, int64_t d1, int64_t *max_deg,
                            int64_t *row)
{
    if (p->known) return pass_bound_summarised(s, p, d0, d1, max_deg, row);
    if (p->row_part) return pass_bound_routed(s, p, d0, d1, max_deg, row);
    const int64_t *ip = p->et->indptr, *frontier = s->tw[p->et->dst_type].nodes.p;
    int64_t bound = 0;
    *max_deg = 0;
    for (int64_t d = d0; d < d1; d++) {
        if (d + ROW_AHEAD < d1) __builtin_prefetch(&ip[frontier[d + ROW_AHEAD]], 0, 0);
        int64_t b = ip[frontier[d]], deg = ip[frontier[d] + 1] - b;
        row[2 * (d - d0)] = b, row[2 * (d - d0) + 1] = deg;
        if (deg > *max_deg) *max_deg = deg;
        bound += row_bound(p, deg);
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
        j->bound[i] = fs_typed_pass_bound(j->s, j->p, a, b, &j->max_deg[i], j->row + 2 * (a - j->d0));
    }
}

static int64_t pass_bound_on_pool(const fs_typed_sampler_t *s, const pass_t *p, int64_t d0, int64_t d1,
                                  int64_t *max_deg, int64_t *row)
{
    /* every row's start is a random miss: 256 of them are worth a worker's
     * start (at 1,024 a hop of 15,000 rows ran them on one core while the
     * other waited: one batch on 2 threads ran at 0.88 of what it does here) */
    int64_t n = d1 - d0, slice = (n + 63) / 64 > 256 ? (n + 63) / 64 : 256;
    bound_job_t j = {.s = s, .p = p, .d0 = d0, .d1 = d1, .slice = slice, .row = row};
    if (n < 2 * slice || fs_pool_size(s->pool) < 2) return fs_typed_pass_bound(s, p, d0, d1, max_deg, row);
    fs_pool_run(s->pool, (d1 - d0 + j.slice - 1) / j.slice, 1, bound_slices, &j);
    int64_t bound = 0;
    *max_deg = 0;
    for (int64_t i = 0; i < (d1 - d0 + j.slice - 1) / j.slice; i++) {
        bound += j.bound[i];
        if (j.max_deg[i] > *max_deg) *max_deg = j.max_deg[i];
    }
    return bound;
}

/* The picks of a pass whose rows are elsewhere (fs_typed_etype_t.remote),
 * for every destination at once, into *out. */
static fs_status_t remote_picks(fs_typed_sampler_t *s, const fs_typed_view_t *g, const pass_t *p, int64_t d0,
                                int64_t d1, fs_typed_picks_t *out, fs_error_t *err)
{
    char nb[64];
    const fs_typed_etype_t *et = p->et;
    const type_ws_t *dw = &s->tw[et->dst_type];
    if (s->par.active)
        return fs_error(err, FS_ERR_UNSUPPORTED, "typed sample: %s is sampled by the shards that hold it, one pass "
                        "at a time", fs_typed_etype_name(g, p->etype, nb, sizeof nb));
    int64_t nx = 0; /* the destinations' exclusions, by position in the pass */
    for (int64_t d = d0; s->x.n && d < d1; d++) {
        int64_t first, end = fs_typed_excl_find(&s->x, p->etype, dw->nodes.p[d], &first);
        if (end > first && (fs_i64vec_reserve(&s->rx_at, (size_t)(nx + end - first)) ||
                            fs_i64vec_reserve(&s->rx_src, (size_t)(nx + end - first))))
            return fs_error(err, FS_ERR_NOMEM, "typed sample: out of memory for the exclusions");
        for (int64_t i = first; i < end; i++) s->rx_at.p[nx] = d - d0, s->rx_src.p[nx++] = s->x.e[i].src;
    }
    fs_typed_picks_req_t q = {.hop = p->hop, .etype = p->etype, .fanout = (int)p->k, .mode = p->mode,
                              .seed = p->seed_req, .want_edge_ids = p->want_ids, .temporal = p->temporal,
                              .strict = p->strict, .window = p->window, .disjoint = s->disjoint,
                              .time = p->temporal ? dw->time.p + d0 : NULL,
                              .batch = s->disjoint ? dw->batch.p + d0 : NULL, .num_excl = nx,
                              .excl_at = nx ? s->rx_at.p : NULL, .excl_src = nx ? s->rx_src.p : NULL};
    fs_status_t st = et->remote->picks(et->remote->ctx, &q, dw->nodes.p + d0, d1 - d0, out, err);
    if (st == FS_OK && out->n != d1 - d0)
        st = fs_error(err, FS_ERR_INTERNAL, "typed sample: %s: picks for %lld destinations, %lld asked",
                      fs_typed_etype_name(g, p->etype, nb, sizeof nb), (long long)out->n, (long long)(d1 - d0));
    return st;
}

/* Samples edge type e at hop h for the destinations d0..d1-1 (local ids of
 * its destination type, fixed when the hop began). */
fs_status_t fs_typed_run_pass(fs_typed_sampler_t *s, const fs_typed_view_t *g, const fs_typed_req_t *req, int hop,
                              int e, int64_t d0, int64_t d1, fs_error_t *err)
{
    const fs_typed_etype_t *et = &g->etype[e];
    block_ws_t *bw = &s->bw[hop * g->num_edge_types + e];
    fs_block_t *out = &s->out_blocks[hop * g->num_edge_types + e];
    pass_t p = {.et = et, .mode = req->mode[hop], .k = req_fanout(req, e, hop), .hop = hop, .etype = e,
                .temporal = req->temporal, .strict = req->strict, .window = req->window,
                .want_ids = req->want_edge_ids,
                .seed = pass_seed(req->seed, e), .seed_req = req->seed};
    if (p.k == 0) d1 = d0;   /* not sampled at this hop: an empty block */
    if (req->locality && req->locality->s > 1) { /* boosted rows: their own pass (fs_locality.c) */
        int64_t n;
        const float *w;
        fs_status_t st = fs_las_pass(s, g, req, hop, d1 - d0, bw, &n, &w, err);
        if (st == FS_OK)
            *out = (fs_block_t){.num_dst = d1 - d0, .num_src = s->tw[et->src_type].n, .num_edges = n,
                                .dst_offsets = bw->off.p, .edge_dst = bw->edst.p, .edge_src = bw->esrc.p,
                                .edge_ids = req->want_edge_ids ? bw->eid.p : NULL, .edge_weights = w};
        return st;
    }
    fs_typed_picks_t picks;
    if (et->remote && d1 > d0) { /* picks made elsewhere, for every destination at once */
        fs_status_t st = remote_picks(s, g, &p, d0, d1, &picks, err);
        if (st != FS_OK) return st;
        p.remote = &picks;
    }
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
    int wide = et->index_dtype != FS_DTYPE_I32, full = p.temporal || s->disjoint || s->x.n;
    int routed = !full && et->tiers && et->tiers->route;
    if (routed) {
        if (fs_i64vec_reserve(&s->parts, (size_t)(d1 - d0) / 8 + 1))
            return fs_error(err, FS_ERR_NOMEM, "typed sample: out of memory for hop %d's %lld rows", hop,
                            (long long)(d1 - d0));
        p.row_part = (const uint8_t *)s->parts.p, p.part = et->tiers->part;
    }
    int parallel = s->par.active;
    if (p.remote) bound = picks.off[d1 - d0], max_deg = p.k > 0 ? p.k : 1; /* inserted here, in order */
    else if (!parallel) {
        if (p.k == FS_FANOUT_ALL) bound = fs_typed_pass_bound(s, &p, d0, d1, &max_deg, s->rows.p);
        parallel = (p.k == FS_FANOUT_ALL ? bound : (d1 - d0) * p.k) >= fs_chunk_parallel_min;
    }
    /* a plain pass with a fixed fanout and uniform picks needs no row before
     * it: each chunk on the pool reads its own rows' starts, a serial pass
     * reads them inline, where their misses overlap the picks (pass_t.lazy) */
    p.lazy = bound < 0 && !full && p.k != FS_FANOUT_ALL && p.mode < FS_SAMPLE_WEIGHTED && (parallel || !routed);
    if (p.lazy) bound = (d1 - d0) * p.k, max_deg = p.k;
    if (bound < 0)
        bound = parallel ? pass_bound_on_pool(s, &p, d0, d1, &max_deg, s->rows.p)
                         : fs_typed_pass_bound(s, &p, d0, d1, &max_deg, s->rows.p);
    char nb[64];
    if (s->tw[et->src_type].n + bound >= INT32_MAX)
        return fs_error(err, FS_ERR_RESOURCE, "typed sample: hop %d of %s could reach %lld nodes, over the 2^31 "
                        "per-request limit; use smaller fanouts or fewer seeds", hop,
                        fs_typed_etype_name(g, e, nb, sizeof nb), (long long)(s->tw[et->src_type].n + bound));
    if (fs_typed_out_reserve(s, &bw->off, (size_t)(d1 - d0) + 1, 0) ||
        fs_typed_out_reserve(s, &bw->edst, (size_t)bound + 1, 0) || fs_typed_out_reserve(s, &bw->esrc, (size_t)bound + 1, 0) ||
        (req->want_edge_ids && fs_typed_out_reserve(s, &bw->eid, (size_t)bound + 1, 0)) ||
        fs_typed_reserve_picks(&s->pw, max_deg > p.k ? max_deg : p.k) || range_reserve(&s->pw, &p, d1 - d0))
        return fs_error(err, FS_ERR_NOMEM, "typed sample: out of memory for hop %d (%lld edges)", hop, (long long)bound);
    int64_t n;
    /* few threads keep the Fused-Map (the in-order inserter), more partition
     * it (the id map), if they have cores to run on (fs_pool_parallelism) */
    int partitioned = parallel && (s->par.active || fs_pool_parallelism(s->pool) > FS_CHUNK_INSERTER_MAX);
    if (partitioned) {
        if (fs_typed_nodes_reserve(s, et->src_type, bound) ||
            (n = fs_typed_pass_parallel(s, &p, d0, d1, bound, max_deg, bw)) < 0)
            return fs_error(err, FS_ERR_NOMEM, "typed sample: out of memory for hop %d's parallel pass", hop);
    } else if (fs_typed_key_reserve(s, et->src_type, bound)) {
        return fs_error(err, FS_ERR_NOMEM, "typed sample: out of memory for the id map at hop %d", hop);
    } else if (parallel) {
        if ((n = fs_typed_pass_inserter(s, &p, d0, d1, bound, max_deg, bw)) < 0)
            return fs_error(err, FS_ERR_NOMEM, "typed sample: out of memory for hop %d's parallel pass", hop);
    } else {
        n = p.remote ? (full ? pass_remote_full : pass_remote)(s, &p, d0, d1, bw)
            : full   ? (wide ? pass_full_i64 : pass_full_i32)(s, &p, d0, d1, bw)
            : routed ? (wide ? pass_routed_i64 : pass_routed_i32)(s, &p, d0, d1, bw)
            : p.lazy ? (wide ? pass_inline_i64 : pass_inline_i32)(s, &p, d0, d1, bw)
                     : (wide ? pass_plain_i64 : pass_plain_i32)(s, &p, d0, d1, bw);
    }
    *out = (fs_block_t){.num_dst = d1 - d0, .num_src = s->tw[et->src_type].n, .num_edges = n,
                        .dst_offsets = bw->off.p, .edge_dst = bw->edst.p, .edge_src = bw->esrc.p,
                        .edge_ids = req->want_edge_ids ? bw->eid.p : NULL};
    return FS_OK;
}
