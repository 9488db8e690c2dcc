/* fs_locality.c — locality-aware sampling (docs/algorithms.md §4, P0 §4, docs/papers.md): the
 * uniform k-hop sampler with the neighbours in a preferred set boosted by s,
 * water-filled inclusion probabilities and Horvitz-Thompson weights (the
 * design is documented in fs_locality.h).
 *
 * s = 1 runs fs_sample_cpu (the typed engine) itself and only adds the
 * weights. s > 1 runs its own hop loop, because a boosted row's edge count
 * is random, over the typed engine's workspace and fused id map for one
 * node type (fs_sample_internal.h), so local ids, blocks and ownership are
 * the engine's; rows that are not boosted make the engine's exact Floyd picks,
 * so a request whose rows are never boosted gives fs_sample_cpu's result
 * bit for bit (the tests check this). Because a boosted row's edge count
 * is random (Poisson sampling), the edge arrays and the id map are sized
 * for the plain bound before each hop and grown, by doubling, when a row
 * needs more. A boosted row costs O(s x fanout) expected when the
 * preferred-neighbour count comes from the sets (two geometric-jump
 * sweeps, see plan_boosted), O(deg) when the row must be scanned to count. */
#include "fs_locality.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fs_chunked.h"
#include "fs_sample_internal.h"
#include "fs_sample_pick.h"
#include "fs_typed_internal.h"

/* Salt of the Poisson draws' streams, so they are independent of the plain
 * picks' streams for the same (seed, hop, node). */
#define LAS_SALT 0x6c6f63616c697479ULL
#define LAS_SALT2 0x626f6f7374656421ULL

/* Rows are sampled in two stages LAS_RING rows apart, so the cache misses
 * of one row's picks overlap the work on the rows before it: stage 1
 * resolves the row, decides plain or boosted, draws its positions and
 * prefetches their index entries; stage 2 reads them and emits the edges.
 * Id-map inserts are pipelined as in the engine: a neighbour's slot is
 * prefetched when its edge is emitted and the insert happens up to
 * LAS_PIPE edges later, still in emission order, so local ids follow first
 * appearance. */
#define LAS_RING 8
#define LAS_PIPE 32

enum { LAS_ROW_ALL, LAS_ROW_PLAIN, LAS_ROW_BOOSTED };

/* A row between its two stages. */
typedef struct {
    int kind, part;
    int64_t v, deg, gb;          /* node, degree, global id of its first edge */
    const void *ind;             /* its neighbour list */
    double qp, qo;               /* boosted: the two classes' probabilities */
    int64_t na, nb;              /* plain: picks in a; boosted: the sweeps a and b */
    fs_i64vec_t a, b;
} las_row_t;

/* A float array that grows by doubling: a chunk's staged weights. */
typedef struct {
    float *p;
    size_t cap;
} f32vec_t;

/* The extension's workspace, hung off the sampler. A parallel hop gives
 * each pool worker one of its own (`worker`: ring, pos, flag) and stages
 * each chunk's weights in `chunk_w`. */
typedef struct las_ws {
    float *w[FS_MAX_HOPS];       /* per-edge weights of each hop */
    size_t wcap[FS_MAX_HOPS];
    int64_t *pos;                /* a boosted row's merged picks */
    uint8_t *flag;               /* ... and whether each is preferred */
    size_t pcap;
    las_row_t ring[LAS_RING];
    struct las_ws *worker;
    int workers;
    f32vec_t *chunk_w;
    int chunks;
    int64_t boosted[FS_MAX_HOPS];                      /* the last request's boosted rows per hop */
    uint64_t lists[FS_MAX_TIERS], reads[FS_MAX_TIERS]; /* ... and its topology reads per part */
    int width;                                         /* ... at this index width */
} las_ws_t;

static void las_ws_clear(las_ws_t *ws)
{
    for (int h = 0; h < FS_MAX_HOPS; h++) free(ws->w[h]);
    for (int i = 0; i < LAS_RING; i++) free(ws->ring[i].a.p), free(ws->ring[i].b.p);
    free(ws->pos), free(ws->flag);
    for (int i = 0; i < ws->workers; i++) las_ws_clear(&ws->worker[i]);
    free(ws->worker);
    for (int i = 0; i < ws->chunks; i++) free(ws->chunk_w[i].p);
    free(ws->chunk_w);
}

static void las_ws_free(void *p)
{
    las_ws_clear(p);
    free(p);
}

static las_ws_t *las_ws(fs_typed_sampler_t *s)
{
    return fs_typed_sampler_ext(s, FS_TEXT_BOOST, sizeof(las_ws_t), las_ws_free);
}

static int weights_reserve(las_ws_t *ws, int hop, size_t n)
{
    if (n <= ws->wcap[hop]) return 0;
    float *p = realloc(ws->w[hop], n * sizeof *p);
    if (!p) return -1;
    ws->w[hop] = p;
    ws->wcap[hop] = n;
    return 0;
}

static int row_reserve(las_ws_t *ws, size_t n)
{
    if (n <= ws->pcap) return 0;
    size_t cap = ws->pcap ? ws->pcap : 256;
    while (cap < n) cap *= 2;
    int64_t *p = realloc(ws->pos, cap * sizeof *p);
    if (p) ws->pos = p;
    uint8_t *f = realloc(ws->flag, cap);
    if (f) ws->flag = f;
    if (!p || !f) return -1;
    ws->pcap = cap;
    return 0;
}

/* ---- probabilities ------------------------------------------------------------- */

/* Water-filling: out[i] = min(1, c * w_i * q[i]), w_i = s if pref[i] else 1,
 * with c such that sum cnt_i out[i] = sum cnt_i q[i] (cnt NULL: all 1).
 * Each round sets c from the mass left for the unclamped entries and clamps
 * every entry it pushes to >= 1; c only grows from round to round (a
 * clamped entry takes 1, less than the c w q it was offered, leaving more
 * for the rest), so clamped entries stay clamped and the loop ends after at
 * most n + 1 rounds — three for a uniform row. During the rounds out[i] is 1 for clamped entries, 0 otherwise. */
static void waterfill(const double *q, const uint8_t *pref, const double *cnt, int64_t n, double s, double *out)
{
    double target = 0, fixed = 0;
    for (int64_t i = 0; i < n; i++) {
        target += (cnt ? cnt[i] : 1) * q[i];
        out[i] = 0;
    }
    for (;;) {
        double mass = 0;
        for (int64_t i = 0; i < n; i++)
            if (out[i] < 1) mass += (cnt ? cnt[i] : 1) * (pref[i] ? s : 1) * q[i];
        if (!(mass > 0)) return; /* nothing left that can take mass */
        double c = target - fixed > 0 ? (target - fixed) / mass : 0;
        int clamped = 0;
        for (int64_t i = 0; i < n; i++)
            if (out[i] < 1 && c * (pref[i] ? s : 1) * q[i] >= 1) {
                out[i] = 1;
                fixed += cnt ? cnt[i] : 1;
                clamped = 1;
            }
        if (clamped) continue;
        for (int64_t i = 0; i < n; i++)
            if (out[i] < 1) out[i] = c * (pref[i] ? s : 1) * q[i];
        return;
    }
}

static int bad_boost(double s)
{
    return !(s >= 1) || !isfinite(s);
}

fs_status_t fs_las_rescale(const double *q, const uint8_t *pref, int64_t n, double s, double *q_new,
                           fs_error_t *err)
{
    if (n < 0 || (n > 0 && (!q || !pref || !q_new)))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality rescale: NULL array or negative length %lld",
                        (long long)n);
    if (bad_boost(s))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality rescale: boost s = %g (must be finite and >= 1)", s);
    if (n > 0 && q_new == q)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality rescale: q_new must not alias q");
    for (int64_t i = 0; i < n; i++)
        if (!(q[i] >= 0 && q[i] <= 1))
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality rescale: q[%lld] = %g is not a probability",
                            (long long)i, q[i]);
    waterfill(q, pref, NULL, n, s, q_new);
    return FS_OK;
}

void fs_las_uniform_probs(int64_t deg, int64_t m, int64_t k, double s, double *q_pref, double *q_other)
{
    int64_t taken = k < 0 || k > deg ? deg : k;
    double q = deg > 0 ? (double)taken / (double)deg : 0;
    double qq[2] = {q, q}, cnt[2] = {(double)m, (double)(deg - m)}, out[2];
    uint8_t pref[2] = {1, 0};
    waterfill(qq, pref, cnt, 2, s, out);
    *q_pref = out[0];
    *q_other = out[1];
}

/* ---- checks -------------------------------------------------------------------- */

fs_status_t fs_las_check(const fs_locality_t *loc, int64_t num_nodes, int num_hops, const fs_sample_mode_t *mode,
                         fs_error_t *err)
{
    if (bad_boost(loc->s))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality: boost s = %g (must be finite and >= 1)", loc->s);
    if (num_hops < 1 || num_hops > FS_MAX_HOPS)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality: %d hops requested, must be 1..%d", num_hops,
                        FS_MAX_HOPS);
    for (int h = 0; h < num_hops; h++)
        if (mode[h] != FS_SAMPLE_UNIFORM)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality: hop %d has mode %d; locality-aware sampling "
                            "needs uniform sampling without replacement on every hop", h, (int)mode[h]);
    if (loc->s == 1) return FS_OK; /* the plain sampler: sets are not read */
    if (loc->num_nodes != num_nodes)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality: preferred sets cover %lld nodes, the graph has %lld",
                        (long long)loc->num_nodes, (long long)num_nodes);
    if (loc->num_levels < num_hops || loc->num_levels > FS_MAX_HOPS)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality: %d preferred levels for a %d-hop request (need "
                        "%d..%d)", loc->num_levels, num_hops, num_hops, FS_MAX_HOPS);
    for (int l = 0; l < num_hops; l++)
        if (!loc->pref[l] && num_nodes > 0)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality: preferred set Q_%d is NULL", l + 1);
    return FS_OK;
}

fs_status_t fs_locality_check(const fs_locality_t *loc, const fs_csr_view_t *g, const fs_sample_req_t *req,
                              fs_error_t *err)
{
    if (!loc || !g || !req) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality: NULL option, graph or request");
    return fs_las_check(loc, g->num_nodes, req->num_hops, req->mode, err);
}

/* ---- rows ---------------------------------------------------------------------- */

/* Resolves node v to (part, first edge position, degree) — the typed engine's rule (pass_bound_routed). */
static inline const fs_csr_part_t *row_of(const fs_csr_view_t *g, int64_t v, int64_t *b, int64_t *deg, int *part)
{
    int64_t row = v;
    *part = 0;
    if (g->route) {
        *part = FS_ROUTE_TIER(g->route[v]);
        row = FS_ROUTE_ROW(g->route[v]);
    }
    const fs_csr_part_t *pt = &g->part[*part];
    *b = pt->indptr[row];
    *deg = pt->indptr[row + 1] - *b;
    return pt;
}

static inline int64_t nbr_at(const void *ind, int wide, int64_t p)
{
    return wide ? ((const int64_t *)ind)[p] : ((const int32_t *)ind)[p];
}

static inline void prefetch_entry(const void *ind, int wide, int64_t p)
{
    __builtin_prefetch((const char *)ind + (size_t)p * (wide ? 8 : 4), 0, 0);
}

typedef struct {
    int64_t key, edge;
} pending_t;

typedef struct {
    fs_typed_sampler_t *s;
    block_ws_t *bw;                /* this hop's block arrays (node type 0's edge type) */
    las_ws_t *ws;
    const fs_csr_view_t *g;
    const uint64_t *pref;
    const uint16_t *count;
    double boost;
    int hop, wide, want_ids;
    int64_t fanout;
    uint64_t seed;
    const int64_t *nodes;          /* the workspace's node array (moves when the map grows) */
    int64_t *ed, *es, *eid;        /* this hop's edge arrays (move when they grow) */
    size_t cap;                    /* edges they hold */
    int64_t map_room;              /* nodes the map holds before it must grow */
    uint64_t lists[FS_MAX_TIERS], reads[FS_MAX_TIERS];
    int64_t boosted;
    int np;                        /* inserts in flight: their slots are being prefetched */
    pending_t pend[LAS_PIPE];
} las_hop_t;

/* How many of the row's neighbours are preferred, and how many index
 * entries finding out read (0 when the count array knows). */
static int64_t preferred_in_row(const las_hop_t *h, int64_t v, const void *ind, int64_t deg, int64_t *read)
{
    *read = 0;
    if (h->count && h->count[v] != FS_LAS_COUNT_SAT) return h->count[v];
    int64_t m = 0;
    for (int64_t p = 0; p < deg; p++) m += fs_las_bit(h->pref, nbr_at(ind, h->wide, p));
    *read = deg;
    return m;
}

/* The positions in [0, deg) where independent Bernoulli(p) trials succeed,
 * ascending, by geometric jumps (the gap before the next success is
 * floor(log U / log(1 - p))): O(deg p + 1) draws instead of deg. Returns
 * how many, or -1 when out of memory. */
static int64_t bernoulli_positions(fs_rng_t *rng, int64_t deg, double p, fs_i64vec_t *out)
{
    int64_t n = 0, pos = -1;
    if (!(p > 0)) return 0;
    if (p >= 1) {
        if (fs_i64vec_reserve(out, (size_t)deg)) return -1;
        for (int64_t i = 0; i < deg; i++) out->p[n++] = i;
        return n;
    }
    double lq = log1p(-p);
    for (;;) {
        double gap = floor(log(1.0 - fs_rng_unit(rng)) / lq); /* 1 - unit is in (0, 1] */
        if (!(gap < (double)(deg - 1 - pos))) return n;
        if ((size_t)n == out->cap && fs_i64vec_reserve(out, (size_t)n + 1)) return -1;
        pos += 1 + (int64_t)gap;
        out->p[n++] = pos;
    }
}

/* Stage 1 of a boosted row, Poisson sampling: neighbour j is taken with
 * probability qp if preferred, qo otherwise, independently. Drawn as the
 * union of two sweeps so no per-neighbour work is needed: sweep a takes
 * every position with probability qo; sweep b every position with
 * probability r = (qp - qo) / (1 - qo), of which stage 2 keeps the
 * preferred — a preferred position is then missed by both with probability
 * (1 - qo)(1 - r) = 1 - qp. Expected draws deg (qo + r) <= (1 + s) k. Each
 * sweep has its own stream keyed by (request seed, hop, node), so the picks
 * are a pure function of the request. */
static int plan_boosted(las_hop_t *h, las_row_t *r, int64_t m, int64_t k)
{
    fs_las_uniform_probs(r->deg, m, k, h->boost, &r->qp, &r->qo);
    fs_rng_t r1 = fs_pick_rng(h->seed ^ LAS_SALT, h->hop, r->v), r2 = fs_pick_rng(h->seed ^ LAS_SALT2, h->hop, r->v);
    r->na = bernoulli_positions(&r1, r->deg, r->qo, &r->a);
    r->nb = bernoulli_positions(&r2, r->deg, r->qo < 1 ? (r->qp - r->qo) / (1 - r->qo) : 0, &r->b);
    if (r->na < 0 || r->nb < 0) return -1;
    r->kind = LAS_ROW_BOOSTED;
    h->boosted++;
    return 0;
}

/* Stage 1: resolves row d, decides how it is sampled, draws its positions
 * (the RNG needs no memory) and prefetches their index entries. */
static fs_status_t plan_row(las_hop_t *h, int64_t d, las_row_t *r, fs_error_t *err)
{
    int64_t b, read;
    const fs_csr_part_t *pt = row_of(h->g, h->nodes[d], &b, &r->deg, &r->part);
    r->v = h->nodes[d];
    r->ind = (const char *)pt->indices + (size_t)b * (h->wide ? 8 : 4);
    r->gb = r->part == 0 ? b : h->g->part[0].indptr[r->v];
    h->lists[r->part]++;
    int64_t k = h->fanout == FS_FANOUT_ALL || h->fanout > r->deg ? r->deg : h->fanout;
    if (r->deg <= k) { /* everything is taken: q = 1 whatever the boost */
        r->kind = LAS_ROW_ALL;
        h->reads[r->part] += (uint64_t)r->deg;
        prefetch_entry(r->ind, h->wide, 0);
        return FS_OK;
    }
    int64_t m = preferred_in_row(h, r->v, r->ind, r->deg, &read);
    if (m > 0 && m < r->deg) {
        if (plan_boosted(h, r, m, k))
            return fs_error(err, FS_ERR_NOMEM, "locality sample: out of memory for a row of %lld", (long long)r->deg);
    } else { /* the plain engine's pick, bit for bit */
        if (fs_i64vec_reserve(&r->a, (size_t)k))
            return fs_error(err, FS_ERR_NOMEM, "locality sample: out of memory for %lld picks", (long long)k);
        fs_rng_t rng = fs_pick_rng(h->seed, h->hop, r->v);
        fs_pick_uniform(&rng, r->deg, k, r->a.p);
        r->kind = LAS_ROW_PLAIN, r->na = k, r->nb = 0;
    }
    for (int64_t i = 0; i < r->na; i++) prefetch_entry(r->ind, h->wide, r->a.p[i]);
    for (int64_t j = 0; j < r->nb; j++) prefetch_entry(r->ind, h->wide, r->b.p[j]);
    h->reads[r->part] += (uint64_t)(read + r->na + r->nb);
    return FS_OK;
}

/* Stage 2 of a boosted row: sweep b keeps its preferred positions; the
 * union with sweep a, ascending and without duplicates, goes to ws->pos
 * with a preferred flag per pick. Returns the picks. */
static int64_t merge_boosted(las_hop_t *h, las_row_t *r)
{
    las_ws_t *ws = h->ws;
    int64_t kept = 0, i = 0, j = 0, t = 0;
    for (int64_t q = 0; q < r->nb; q++)
        if (fs_las_bit(h->pref, nbr_at(r->ind, h->wide, r->b.p[q]))) r->b.p[kept++] = r->b.p[q];
    while (i < r->na || j < kept) {
        if (j == kept || (i < r->na && r->a.p[i] < r->b.p[j])) {
            ws->pos[t] = r->a.p[i++];
            ws->flag[t] = (uint8_t)fs_las_bit(h->pref, nbr_at(r->ind, h->wide, ws->pos[t]));
        } else {
            if (i < r->na && r->a.p[i] == r->b.p[j]) i++;
            ws->pos[t] = r->b.p[j++];
            ws->flag[t] = 1;
        }
        t++;
    }
    return t;
}

/* ---- the hop loop ------------------------------------------------------------- */

/* Room for `edges` edges in this hop's arrays and `fresh` more map keys
 * (the edges so far kept). */
static fs_status_t hop_grow(las_hop_t *h, int64_t edges, int64_t u, int64_t fresh, fs_error_t *err)
{
    if ((size_t)edges > h->cap) {
        size_t cap = h->cap * 2 > (size_t)edges ? h->cap * 2 : (size_t)edges;
        block_ws_t *bw = h->bw;
        if (fs_typed_out_reserve(h->s, &bw->edst, cap + 1, h->cap) || fs_typed_out_reserve(h->s, &bw->esrc, cap + 1, h->cap) ||
            (h->want_ids && fs_typed_out_reserve(h->s, &bw->eid, cap + 1, h->cap)) ||
            weights_reserve(h->ws, h->hop, cap + 1))
            return fs_error(err, FS_ERR_NOMEM, "locality sample: out of memory for hop %d (%zu edges)", h->hop, cap);
        h->ed = bw->edst.p, h->es = bw->esrc.p, h->eid = h->want_ids ? bw->eid.p : NULL;
        h->cap = cap;
    }
    if (u + fresh > h->map_room) {
        int64_t extra = fresh > u ? fresh : u;
        if (u + extra >= INT32_MAX) extra = fresh;
        if (u + extra >= INT32_MAX)
            return fs_error(err, FS_ERR_RESOURCE, "locality sample: hop %d reaches %lld nodes, over the 2^31 "
                            "per-request limit", h->hop, (long long)(u + extra));
        if (fs_typed_key_reserve(h->s, 0, extra))
            return fs_error(err, FS_ERR_NOMEM, "locality sample: out of memory for the id map");
        h->map_room = u + extra;
        h->nodes = h->s->tw[0].nodes.p;
    }
    return FS_OK;
}

/* Sizes the hop for the plain bound (sum of min(fanout, deg)). */
static fs_status_t hop_begin(las_hop_t *h, int64_t num_dst, int64_t u, fs_error_t *err)
{
    int64_t bound = 0;
    for (int64_t d = 0; d < num_dst; d++) {
        int64_t b, deg;
        int part;
        row_of(h->g, h->nodes[d], &b, &deg, &part);
        bound += h->fanout == FS_FANOUT_ALL || h->fanout > deg ? deg : h->fanout;
    }
    if (fs_typed_out_reserve(h->s, &h->bw->off, (size_t)num_dst + 1, 0))
        return fs_error(err, FS_ERR_NOMEM, "locality sample: out of memory for hop %d", h->hop);
    h->cap = 0;
    h->map_room = u;
    return hop_grow(h, bound + 1, u, bound, err);
}

/* Inserts the oldest n pending keys (node type 0's: the key is the node),
 * writing their edges' src ids. */
static void flush(las_hop_t *h, int n, int64_t *u)
{
    fs_typed_sampler_t *s = h->s;
    for (int i = 0; i < n; i++) {
        uint64_t key = (uint64_t)h->pend[i].key;
        h->es[h->pend[i].edge] = tmap_add_at(s, 0, key, tmap_hash(s, key), 0, 0);
    }
    *u = s->tw[0].n;
    memmove(h->pend, h->pend + n, sizeof(pending_t) * (size_t)(h->np - n));
    h->np -= n;
}

/* A row's final picks for stage 2: how many, their positions (*pos; for
 * a whole row, position q is q), which are preferred (*flag, NULL: none)
 * and the two Horvitz-Thompson weights; -1 when out of memory. */
typedef struct {
    const int64_t *pos;
    const uint8_t *flag;
    float w_pref, w_other;
} row_picks_t;

static int64_t row_final(las_hop_t *h, las_row_t *r, row_picks_t *out)
{
    int64_t m = r->kind == LAS_ROW_ALL ? r->deg : r->na;
    *out = (row_picks_t){.pos = r->a.p, .w_other = r->kind == LAS_ROW_ALL ? 1 : (float)((double)r->deg / (double)r->na)};
    if (r->kind == LAS_ROW_BOOSTED) {
        if (row_reserve(h->ws, (size_t)(r->na + r->nb) + 1)) return -1;
        m = merge_boosted(h, r);
        out->pos = h->ws->pos, out->flag = h->ws->flag;
        out->w_pref = (float)(1 / r->qp), out->w_other = r->qo > 0 ? (float)(1 / r->qo) : 0;
    }
    return m;
}

/* Stage 2: reads the row's picks and appends its edges. */
static fs_status_t finish_row(las_hop_t *h, int64_t d, las_row_t *r, int64_t *e, int64_t *u, fs_error_t *err)
{
    row_picks_t pk;
    int64_t m = row_final(h, r, &pk);
    if (m < 0) return fs_error(err, FS_ERR_NOMEM, "locality sample: out of memory for a row of %lld", (long long)r->deg);
    const int64_t *pos = pk.pos;
    const uint8_t *flag = pk.flag;
    float w_pref = pk.w_pref, w_other = pk.w_other;
    fs_status_t st;
    if ((size_t)(*e + m) > h->cap || *u + h->np + m > h->map_room) {
        flush(h, h->np, u); /* the map may move: nothing in flight */
        if ((st = hop_grow(h, *e + m, *u, m, err)) != FS_OK) return st;
    }
    float *wt = h->ws->w[h->hop];
    for (int64_t q = 0; q < m; q++) {
        int64_t p = r->kind == LAS_ROW_ALL ? q : pos[q], key = nbr_at(r->ind, h->wide, p);
        __builtin_prefetch(&h->s->map[tmap_hash(h->s, (uint64_t)key)], 1, 0);
        if (h->np == LAS_PIPE) flush(h, LAS_PIPE / 2, u);
        h->pend[h->np++] = (pending_t){key, *e};
        h->ed[*e] = d;
        if (h->eid) h->eid[*e] = r->gb + p;
        wt[*e] = flag && flag[q] ? w_pref : w_other;
        (*e)++;
    }
    return FS_OK;
}

/* Row d + LAS_RING's indptr entry and count into cache, so stage 1 finds
 * them there (routed views resolve rows through the route: skipped). */
static inline void las_prefetch_row(const las_hop_t *h, int64_t d, int64_t num_dst)
{
    if (h->g->route || d + LAS_RING >= num_dst) return;
    int64_t v = h->nodes[d + LAS_RING];
    __builtin_prefetch(&h->g->part[0].indptr[v], 0, 0);
    if (h->count) __builtin_prefetch(&h->count[v], 0, 0);
}

/* Rows go through stage 1, then stage 2 LAS_RING rows later, in order. */
static fs_status_t run_hop(las_hop_t *h, int64_t num_dst, int64_t *u, int64_t *num_edges, fs_error_t *err)
{
    fs_status_t st = hop_begin(h, num_dst, *u, err);
    if (st != FS_OK) return st;
    int64_t *off = h->bw->off.p, e = 0;
    off[0] = 0;
    for (int64_t d = 0; d < num_dst + LAS_RING; d++) {
        if (d >= LAS_RING) {
            if ((st = finish_row(h, d - LAS_RING, &h->ws->ring[(d - LAS_RING) % LAS_RING], &e, u, err)) != FS_OK)
                return st;
            off[d - LAS_RING + 1] = e;
        }
        if (d < num_dst) {
            las_prefetch_row(h, d, num_dst);
            if ((st = plan_row(h, d, &h->ws->ring[d % LAS_RING], err)) != FS_OK) return st;
        }
    }
    flush(h, h->np, u);
    *num_edges = e;
    return FS_OK;
}

/* ---- a parallel hop (fs_chunked.h, docs/algorithms.md §6) ------------------
 *
 * The hop's rows in chunks on the sampler's pool: each worker plans and
 * reads its chunk's rows exactly as run_hop does (its own ring and pick
 * scratch), staging the picks and their weights; fs_chunked relabels them
 * in first-appearance order and lays the edges out, and the weights follow
 * at each chunk's base. Same blocks, ids and weights as run_hop. */

typedef struct {
    las_hop_t *hw;               /* per worker: a copy of the hop with its own scratch and counters */
    fs_chunked_t *par;
    las_ws_t *ws;
    _Atomic int failed;
} las_par_t;

static int las_stage(las_hop_t *h, fs_chunk_t *c, f32vec_t *cw, las_row_t *r, int64_t *e)
{
    row_picks_t pk;
    int64_t m = row_final(h, r, &pk);
    if (m < 0 || fs_chunk_reserve(c, *e + m, h->want_ids)) return -1;
    if ((size_t)(*e + m) > cw->cap) {
        size_t cap = cw->cap ? cw->cap : 1024;
        while (cap < (size_t)(*e + m)) cap *= 2;
        float *w = realloc(cw->p, cap * sizeof *w);
        if (!w) return -1;
        cw->p = w, cw->cap = cap;
    }
    for (int64_t q = 0; q < m; q++, (*e)++) {
        int64_t p = r->kind == LAS_ROW_ALL ? q : pk.pos[q];
        c->key.p[*e] = nbr_at(r->ind, h->wide, p);
        if (h->want_ids) c->eid.p[*e] = r->gb + p;
        cw->p[*e] = pk.flag && pk.flag[q] ? pk.w_pref : pk.w_other;
    }
    return 0;
}

static void las_chunks(void *ctx, int64_t c0, int64_t c1, int worker)
{
    las_par_t *j = ctx;
    las_hop_t *h = &j->hw[worker];
    las_row_t *ring = h->ws->ring;
    fs_error_t err = {0};
    for (int64_t i = c0; i < c1 && !j->failed; i++) {
        fs_chunk_t *c = &j->par->chunk[i];
        int64_t e = 0, n = c->d1 - c->d0;
        if (fs_chunk_reserve(c, 1, h->want_ids)) { /* the off array; picks grow as rows need */
            j->failed = 1;
            break;
        }
        c->off.p[0] = 0;
        for (int64_t d = c->d0; d < c->d1 + LAS_RING; d++) {
            if (d >= c->d0 + LAS_RING) {
                if (las_stage(h, c, &j->ws->chunk_w[i], &ring[(d - LAS_RING) % LAS_RING], &e)) {
                    j->failed = 1;
                    break;
                }
                c->off.p[d - LAS_RING - c->d0 + 1] = e;
            }
            if (d < c->d1) {
                las_prefetch_row(h, d, c->d1);
                if (plan_row(h, d, &ring[d % LAS_RING], &err) != FS_OK) {
                    j->failed = 1;
                    break;
                }
            }
        }
        (void)n;
        if (!j->failed && fs_chunked_staged(j->par, (int)i, e)) j->failed = 1;
    }
}

static void las_copy_weights(void *ctx, int64_t c0, int64_t c1, int worker)
{
    (void)worker;
    las_par_t *j = ctx;
    float *w = j->ws->w[j->hw[0].hop];
    for (int64_t i = c0; i < c1; i++)
        memcpy(w + j->par->chunk[i].base, j->ws->chunk_w[i].p, (size_t)j->par->chunk[i].n * sizeof *w);
}

static int las_par_reserve(las_ws_t *ws, int workers, int chunks)
{
    return fs_grow_zeroed((void **)&ws->worker, &ws->workers, workers, sizeof *ws->worker) ||
                   fs_grow_zeroed((void **)&ws->chunk_w, &ws->chunks, chunks, sizeof *ws->chunk_w)
               ? -1
               : 0;
}

static fs_status_t run_hop_parallel(las_hop_t *h, int64_t num_dst, int64_t *u, int64_t *num_edges, fs_error_t *err)
{
    fs_typed_sampler_t *s = h->s;
    fs_pool_t *pool = s->pool;
    fs_chunked_t *par = &s->par;
    int workers = fs_pool_size(pool), chunks = -1;
    las_hop_t hw[workers];
    if (!fs_typed_par_begin(s))
        chunks = fs_chunked_plan(par, 0, num_dst, h->fanout == FS_FANOUT_ALL ? 16 : h->fanout, *u);
    if (chunks < 0 || las_par_reserve(h->ws, workers, chunks))
        return fs_error(err, FS_ERR_NOMEM, "locality sample: out of memory for hop %d's parallel workspace", h->hop);
    for (int w = 0; w < workers; w++) {
        hw[w] = *h;
        hw[w].ws = &h->ws->worker[w];
        memset(hw[w].lists, 0, sizeof hw[w].lists), memset(hw[w].reads, 0, sizeof hw[w].reads);
        hw[w].boosted = 0;
    }
    las_par_t j = {.hw = hw, .par = par, .ws = h->ws};
    fs_pool_run(pool, chunks, 1, las_chunks, &j);
    int64_t total = fs_chunked_total(par), fresh = -1;
    if (*u + total >= INT32_MAX)
        return fs_error(err, FS_ERR_RESOURCE, "locality sample: hop %d reaches %lld nodes, over the 2^31 "
                        "per-request limit", h->hop, (long long)(*u + total));
    block_ws_t *bw = h->bw;
    if (!j.failed && !fs_typed_out_reserve(s, &bw->off, (size_t)num_dst + 1, 0) &&
        !fs_typed_out_reserve(s, &bw->edst, (size_t)total + 1, 0) && !fs_typed_out_reserve(s, &bw->esrc, (size_t)total + 1, 0) &&
        !(h->want_ids && fs_typed_out_reserve(s, &bw->eid, (size_t)total + 1, 0)) && !fs_typed_nodes_reserve(s, 0, total) &&
        !weights_reserve(h->ws, h->hop, (size_t)total + 1))
        fresh = fs_chunked_relabel(par, pool, bw->off.p, bw->edst.p, bw->esrc.p, h->want_ids ? bw->eid.p : NULL,
                                   fs_chunked_new_ids, s->tw[0].nodes.p);
    if (fresh < 0) return fs_error(err, FS_ERR_NOMEM, "locality sample: out of memory for hop %d", h->hop);
    s->tw[0].n += fresh;
    fs_pool_run(pool, chunks, 1, las_copy_weights, &j);
    for (int w = 0; w < workers; w++) {
        for (int k = 0; k < FS_MAX_TIERS; k++) h->lists[k] += hw[w].lists[k], h->reads[k] += hw[w].reads[k];
        h->boosted += hw[w].boosted;
    }
    *u += fresh;
    *num_edges = total;
    return FS_OK;
}

/* Hop `hop` of a request on the typed sampler (fs_typed_run_pass calls it
 * for a boosted request): the plain bound picks the path, past
 * fs_chunk_parallel_min the pool, as for the engine's other passes. */
fs_status_t fs_las_pass(fs_typed_sampler_t *s, const fs_typed_view_t *g, const fs_typed_req_t *req, int hop,
                        int64_t num_dst, block_ws_t *bw, int64_t *num_edges, const float **weights,
                        fs_error_t *err)
{
    const fs_typed_etype_t *et = &g->etype[0];
    const fs_locality_t *loc = req->locality;
    las_ws_t *ws = las_ws(s);
    if (!ws) return fs_error(err, FS_ERR_NOMEM, "locality sample: out of memory");
    fs_csr_view_t plain;
    const fs_csr_view_t *view = et->tiers;
    if (!view) {
        fs_csr_view_init(&plain, g->count[0], et->indptr, et->indices, et->index_dtype, et->weights);
        view = &plain;
    }
    int level = fs_las_level(hop, req->num_hops);
    las_hop_t h = {.s = s, .bw = bw, .ws = ws, .g = view, .boost = loc->s, .hop = hop,
                   .fanout = req->fanout[hop], .wide = et->index_dtype == FS_DTYPE_I64,
                   .want_ids = req->want_edge_ids, .seed = req->seed, .nodes = s->tw[0].nodes.p,
                   .pref = loc->pref[level - 1], .count = loc->count[level - 1]};
    int64_t u = s->tw[0].n, k = h.fanout == FS_FANOUT_ALL ? 16 : h.fanout;
    int parallel = s->par.active || (fs_pool_size(s->pool) > 1 && u * k >= fs_chunk_parallel_min);
    fs_status_t st = parallel ? run_hop_parallel(&h, num_dst, &u, num_edges, err)
                              : run_hop(&h, num_dst, &u, num_edges, err);
    if (st != FS_OK) return st;
    *weights = ws->w[hop];
    ws->boosted[hop] = h.boosted;
    for (int p = 0; p < view->num_parts; p++) ws->lists[p] += h.lists[p], ws->reads[p] += h.reads[p];
    ws->width = h.wide ? 8 : 4;
    return FS_OK;
}

/* s = 1: the plain engine, plus the weights 1/q = deg / min(fanout, deg). */
static fs_status_t sample_plain(fs_sampler_t *s, las_ws_t *ws, const fs_csr_view_t *g, const int64_t *seeds,
                                int64_t n, const fs_sample_req_t *req, fs_sample_result_t *res, fs_las_weights_t *w,
                                fs_gather_counters_t *topo, fs_error_t *err)
{
    fs_status_t st = fs_sample_cpu(s, g, seeds, n, req, res, topo, err);
    if (st != FS_OK) return st;
    for (int hop = 0; hop < req->num_hops; hop++) {
        const fs_block_t *b = &res->block[hop];
        if (weights_reserve(ws, hop, (size_t)b->num_edges + 1))
            return fs_error(err, FS_ERR_NOMEM, "locality sample: out of memory for hop %d's weights", hop);
        for (int64_t d = 0; d < b->num_dst; d++) {
            int64_t first, deg, cnt = b->dst_offsets[d + 1] - b->dst_offsets[d];
            int part;
            row_of(g, res->nodes[d], &first, &deg, &part);
            float wt = cnt < deg ? (float)((double)deg / (double)cnt) : 1;
            for (int64_t e = b->dst_offsets[d]; e < b->dst_offsets[d + 1]; e++) ws->w[hop][e] = wt;
        }
        w->weight[hop] = ws->w[hop];
    }
    return FS_OK;
}

fs_status_t fs_sample_locality_cpu(fs_sampler_t *s, const fs_csr_view_t *g, const int64_t *seeds, int64_t n,
                                   const fs_sample_req_t *req, const fs_locality_t *loc, fs_sample_result_t *res,
                                   fs_las_weights_t *w, fs_gather_counters_t *topo, fs_error_t *err)
{
    if (!s || !res || !w) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality: NULL sampler, result or weights");
    if (!req) return fs_locality_check(loc, g, req, err); /* names what is NULL */
    /* The boost is loc->s; the plain engine's checks (and, at s = 1, the
     * engine itself) see the request as a plain one. */
    fs_sample_req_t plain = *req;
    plain.locality = 0;
    fs_status_t st = fs_locality_value_check(req->locality, err);
    if (st == FS_OK) st = fs_locality_check(loc, g, &plain, err);
    if (st == FS_OK) st = fs_sample_check(g, seeds, n, &plain, err);
    if (st != FS_OK) return st;
    las_ws_t *ws = las_ws(fs_sampler_typed(s));
    if (!ws) return fs_error(err, FS_ERR_NOMEM, "locality sample: out of memory");
    memset(w, 0, sizeof *w);
    w->num_hops = req->num_hops;
    if (loc->s == 1) return sample_plain(s, ws, g, seeds, n, &plain, res, w, topo, err);
    memset(ws->lists, 0, sizeof ws->lists), memset(ws->reads, 0, sizeof ws->reads);
    if ((st = fs_sample_typed(s, -1, g, seeds, n, &plain, loc, res, err)) != FS_OK) return st;
    for (int h = 0; h < req->num_hops; h++) w->weight[h] = res->block[h].edge_weights, w->boosted_rows[h] = ws->boosted[h];
    for (int p = 0; topo && p < g->num_parts; p++) {
        topo->rows[p] += ws->lists[p];
        topo->bytes[p] += ws->reads[p] * ws->width;
    }
    for (int h = 0; h < req->num_hops; h++) res->block[h].edge_weights = NULL; /* the weights are in *w */
    return FS_OK;
}

/* ---- Algorithm 2 ------------------------------------------------------------------ */

void fs_las_ctl_defaults(fs_las_ctl_opts_t *o)
{
    o->lt = 0.15;
    o->ut = 0.2;
    o->maxs = 8;
}

fs_status_t fs_las_ctl_init(fs_las_ctl_t *ctl, const fs_las_ctl_opts_t *o, fs_error_t *err)
{
    if (!ctl) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality controller: NULL controller");
    fs_las_ctl_opts_t d;
    fs_las_ctl_defaults(&d);
    if (!o) o = &d;
    if (!(o->lt >= 0 && o->lt <= o->ut && o->ut <= 1))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality controller: thresholds lt = %g, ut = %g (need "
                        "0 <= lt <= ut <= 1)", o->lt, o->ut);
    if (!(o->maxs >= 1) || !isfinite(o->maxs))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality controller: MAXS = %g (need finite and >= 1)", o->maxs);
    *ctl = (fs_las_ctl_t){.o = *o, .s = 1, .pre = 1};
    return FS_OK;
}

fs_status_t fs_las_ctl_update(fs_las_ctl_t *ctl, double r, double *s, fs_error_t *err)
{
    if (!ctl) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality controller: NULL controller");
    if (!(r >= 0 && r <= 1))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality controller: loading ratio r = %g (need a fraction "
                        "in [0, 1])", r);
    if (!ctl->fixed) {
        if (ctl->s >= ctl->o.maxs) {
            ctl->fixed = 1;
        } else if (r > ctl->o.ut) { /* loading still dominates: boost harder */
            ctl->pre = ctl->s;
            ctl->s = 2 * ctl->s < ctl->o.maxs ? 2 * ctl->s : ctl->o.maxs;
        } else if (r < ctl->o.lt && ctl->s != 1) { /* overshot: back towards the previous value */
            ctl->s = (ctl->s + ctl->pre) / 2;
        } else { /* inside [lt, ut] (or at s = 1 and already fast): keep this s */
            ctl->fixed = 1;
        }
    }
    ctl->epochs++;
    if (s) *s = ctl->s;
    return FS_OK;
}
