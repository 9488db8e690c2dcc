/* fs_route.c — owner routing (fs_route.h says what and why): destinations
 * to shards by range, one call per shard at once, answers merged in order,
 * and a pass asked again on other holders when a shard fails.
 *
 * A pass's shards are asked concurrently because each call is a network
 * round trip: the pass then waits for the slowest shard, not for their
 * sum. The first shard's call runs on the caller's thread. Each shard's
 * answer is read in place (borrowed from the transport until its next
 * call for that shard, which cannot come before this pass ends). */
#include "fs_route.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef enum { ASK_PICKS, ASK_ROWS, ASK_EDGES } ask_kind_t;

typedef struct {
    fs_router_t *r;
    int shard;
    ask_kind_t kind;
    const fs_typed_picks_req_t *q; /* picks: a pass's */
    fs_typed_picks_req_t mine;     /* q with this shard's times and batches */
    int type;                      /* rows: a node type's table */
    const char *table;
    size_t row_bytes;
    int etype;                     /* edges: an edge type's pairs */
    fs_typed_picks_t ans;
    fs_status_t st;
    fs_error_t err;
    int threaded;                /* asked on a thread of its own (to join) */
} ask_t;

struct fs_router {
    fs_route_map_t m;
    int64_t **first;             /* copies of the ranges */
    int *etype_dst;
    int *holders;                /* [parts * replicas] (m.holders, or the owners) */
    int *choice;                 /* [parts] the holder a pass asks */
    double *down_until;          /* [num_shards] a failed shard is passed over until then (monotonic s) */
    int64_t failovers;
    fs_route_transport_t t;
    /* per pass */
    int *shard_of;               /* [n] each destination's shard */
    int64_t *ids, *count, *start, *cursor; /* ids grouped by shard; [num_shards] counts, starts, cursors */
    int64_t *time, *batch;       /* a temporal or disjoint pass's, grouped as the ids */
    int64_t *pair_src;           /* an edge test's sources, grouped as its destinations */
    uint8_t *is_edge;            /* and its answers, grouped likewise */
    int64_t *rank;               /* [n] each destination's place in its shard's group */
    int64_t *x_at, *x_src, *x_start; /* exclusions grouped by shard: places in the group, sources; [shards + 1] */
    size_t x_cap;
    size_t cap;
    ask_t *ask;                  /* [num_shards] */
    fs_typed_picks_t **ansp;     /* [num_shards] their answers, for the merge */
    pthread_t *threads;
    fs_typed_picks_buf_t merged;
    char *grouped;               /* rows as the shards answer them, grouped by shard */
    size_t grouped_cap;
};

void fs_router_destroy(fs_router_t *r)
{
    if (!r) return;
    for (int t = 0; r->first && t < r->m.num_node_types; t++) free(r->first[t]);
    free(r->first), free(r->etype_dst), free(r->holders), free(r->choice), free(r->down_until);
    free(r->shard_of), free(r->ids), free(r->count), free(r->start), free(r->cursor), free(r->time), free(r->batch);
    free(r->pair_src), free(r->is_edge);
    free(r->rank), free(r->x_at), free(r->x_src), free(r->x_start);
    free(r->ask), free(r->ansp), free(r->threads);
    fs_typed_picks_buf_free(&r->merged);
    free(r->grouped);
    free(r);
}

fs_status_t fs_router_create(const fs_route_map_t *m, const fs_route_transport_t *t, fs_router_t **out,
                             fs_error_t *err)
{
    *out = NULL;
    if (m->parts <= 0 || m->num_shards <= 0 || m->num_node_types <= 0 || !t->picks)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "route: no parts, shards, node types or transport");
    int R = m->holders && m->replicas > 1 ? m->replicas : 1;
    for (int p = 0; p < m->parts; p++) /* -1: none (its shards are down), refused when a pass needs it */
        for (int i = 0; i < R; i++) {
            int h = m->holders ? m->holders[p * R + i] : m->owner[p];
            if (h < -1 || h >= m->num_shards)
                return fs_error(err, FS_ERR_INVALID_ARGUMENT, "route: part %d's holder %d is shard %d of %d", p, i, h,
                                m->num_shards);
        }
    fs_router_t *r = calloc(1, sizeof *r);
    if (!r) return fs_error(err, FS_ERR_NOMEM, "route: out of memory");
    r->m = *m;
    r->m.replicas = R;
    r->t = *t;
    size_t S = (size_t)m->num_shards;
    r->holders = malloc((size_t)m->parts * (size_t)R * sizeof *r->holders);
    r->choice = malloc((size_t)m->parts * sizeof *r->choice);
    r->down_until = calloc(S, sizeof *r->down_until);
    if (!r->holders || !r->choice || !r->down_until) {
        fs_router_destroy(r);
        return fs_error(err, FS_ERR_NOMEM, "route: out of memory");
    }
    for (int p = 0; p < m->parts; p++)
        for (int i = 0; i < R; i++) r->holders[p * R + i] = m->holders ? m->holders[p * R + i] : m->owner[p];
    r->m.holders = r->holders;
    r->first = calloc((size_t)m->num_node_types, sizeof *r->first);
    r->etype_dst = malloc((size_t)(m->num_edge_types ? m->num_edge_types : 1) * sizeof *r->etype_dst);
    r->count = calloc(S, sizeof *r->count), r->start = calloc(S + 1, sizeof *r->start);
    r->cursor = calloc(S, sizeof *r->cursor), r->ask = calloc(S, sizeof *r->ask);
    r->ansp = calloc(S, sizeof *r->ansp), r->threads = calloc(S, sizeof *r->threads);
    int ok = r->first && r->etype_dst && r->count && r->start && r->cursor && r->ask && r->ansp &&
             r->threads;
    for (int ty = 0; ok && ty < m->num_node_types; ty++) {
        ok = (r->first[ty] = malloc((size_t)(m->parts + 1) * sizeof **r->first)) != NULL;
        if (ok) memcpy(r->first[ty], m->first[ty], (size_t)(m->parts + 1) * sizeof **r->first);
    }
    if (!ok) {
        fs_router_destroy(r);
        return fs_error(err, FS_ERR_NOMEM, "route: out of memory");
    }
    r->m.first = (const int64_t *const *)r->first;
    r->m.owner = NULL; /* read only here: the holders stand for it */
    memcpy(r->etype_dst, m->etype_dst, (size_t)m->num_edge_types * sizeof *r->etype_dst);
    r->m.etype_dst = r->etype_dst;
    *out = r;
    return FS_OK;
}

static int grow(int64_t **p, size_t n)
{
    int64_t *q = realloc(*p, (n ? n : 1) * sizeof *q);
    if (!q) return -1;
    *p = q;
    return 0;
}

int fs_route_part_of(const int64_t *first, int parts, int64_t x)
{
    if (x < first[0] || x >= first[parts]) return -1;
    int lo = 0, hi = parts - 1;
    while (lo < hi) { /* the last part whose first is <= x */
        int mid = (lo + hi + 1) / 2;
        if (first[mid] <= x) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* Every destination's shard, and the ids grouped by shard in order. */
static fs_status_t group(fs_router_t *r, int type, const int64_t *dst, int64_t n, fs_error_t *err)
{
    if ((size_t)n > r->cap) {
        int *so = realloc(r->shard_of, (size_t)n * sizeof *so);
        uint8_t *ie = realloc(r->is_edge, (size_t)n);
        if (so) r->shard_of = so;
        if (ie) r->is_edge = ie;
        if (!so || !ie || grow(&r->ids, (size_t)n) || grow(&r->time, (size_t)n) || grow(&r->batch, (size_t)n) ||
            grow(&r->rank, (size_t)n) || grow(&r->pair_src, (size_t)n))
            return fs_error(err, FS_ERR_NOMEM, "route: out of memory for %lld ids", (long long)n);
        r->cap = (size_t)n;
    }
    int S = r->m.num_shards;
    memset(r->count, 0, (size_t)S * sizeof *r->count);
    for (int64_t i = 0; i < n; i++) {
        int p = fs_route_part_of(r->m.first[type], r->m.parts, dst[i]);
        if (p < 0)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "route: node %lld of type %d (entry %lld) is in no part",
                            (long long)dst[i], type, (long long)i);
        if (r->choice[p] < 0)
            return fs_error(err, FS_ERR_UNAVAILABLE, "route: node %lld of type %d (entry %lld) is in part %d, which "
                            "no shard holds now (its shards are down)", (long long)dst[i], type, (long long)i, p);
        r->shard_of[i] = r->choice[p];
        r->count[r->shard_of[i]]++;
    }
    r->start[0] = 0;
    for (int k = 0; k < S; k++) r->start[k + 1] = r->start[k] + r->count[k], r->cursor[k] = r->start[k];
    for (int64_t i = 0; i < n; i++) {
        int k = r->shard_of[i];
        r->rank[i] = r->cursor[k] - r->start[k];
        r->ids[r->cursor[k]++] = dst[i];
    }
    return FS_OK;
}

/* A pass's exclusions by shard, each at its destination's place in that
 * shard's group (ascending, as the destinations are). */
static fs_status_t group_exclusions(fs_router_t *r, const fs_typed_picks_req_t *q, fs_error_t *err)
{
    int S = r->m.num_shards;
    size_t X = (size_t)q->num_excl;
    if (X > r->x_cap) {
        if (grow(&r->x_at, X) || grow(&r->x_src, X)) return fs_error(err, FS_ERR_NOMEM, "route: out of memory");
        r->x_cap = X;
    }
    if (!r->x_start && !(r->x_start = calloc((size_t)S + 1, sizeof *r->x_start)))
        return fs_error(err, FS_ERR_NOMEM, "route: out of memory");
    memset(r->x_start, 0, sizeof *r->x_start * ((size_t)S + 1));
    for (size_t j = 0; j < X; j++) r->x_start[r->shard_of[q->excl_at[j]] + 1]++;
    for (int k = 0; k < S; k++) r->x_start[k + 1] += r->x_start[k], r->cursor[k] = r->x_start[k];
    for (size_t j = 0; j < X; j++) {
        int64_t i = q->excl_at[j], at = r->cursor[r->shard_of[i]]++;
        r->x_at[at] = r->rank[i], r->x_src[at] = q->excl_src[j];
    }
    return FS_OK;
}

static void *ask_one(void *arg)
{
    ask_t *a = arg;
    fs_router_t *r = a->r;
    int64_t b = r->start[a->shard], n = r->count[a->shard];
    a->err = (fs_error_t){0};
    if (a->kind == ASK_ROWS) {
        a->st = r->t.rows(r->t.ctx, a->shard, a->type, a->table, r->ids + b, n, a->row_bytes,
                          r->grouped + (size_t)b * a->row_bytes, &a->err);
        return NULL;
    }
    if (a->kind == ASK_EDGES) {
        a->st = r->t.edges(r->t.ctx, a->shard, a->etype, r->ids + b, r->pair_src + b, n, r->is_edge + b, &a->err);
        return NULL;
    }
    a->mine = *a->q;
    if (a->q->time) a->mine.time = r->time + b;
    if (a->q->batch) a->mine.batch = r->batch + b;
    if (a->q->num_excl) {
        int64_t x0 = r->x_start[a->shard];
        a->mine.num_excl = r->x_start[a->shard + 1] - x0;
        a->mine.excl_at = r->x_at + x0, a->mine.excl_src = r->x_src + x0;
    }
    a->st = r->t.picks(r->t.ctx, a->shard, &a->mine, r->ids + b, n, &a->ans, &a->err);
    if (a->st == FS_OK && a->ans.n != n)
        a->st = fs_error(&a->err, FS_ERR_FORMAT, "route: shard %d answered %lld rows for %lld", a->shard,
                         (long long)a->ans.n, (long long)n);
    return NULL;
}

/* Every shard with ids asked at once (each ask set up as `proto`); the
 * first error, if any. */
static fs_status_t ask_all(fs_router_t *r, const ask_t *proto, fs_error_t *err)
{
    int S = r->m.num_shards, inline_shard = -1;
    for (int k = 0; k < S; k++) {
        r->ask[k] = *proto;
        r->ask[k].r = r, r->ask[k].shard = k, r->ask[k].st = FS_OK;
        if (r->count[k] == 0) continue;
        if (inline_shard < 0) inline_shard = k; /* the caller's thread takes the first */
        else if (pthread_create(&r->threads[k], NULL, ask_one, &r->ask[k]) == 0) r->ask[k].threaded = 1;
        else ask_one(&r->ask[k]); /* no thread to be had: ask it here */
    }
    if (inline_shard >= 0) ask_one(&r->ask[inline_shard]);
    fs_status_t st = FS_OK;
    for (int k = 0; k < S; k++) {
        if (r->ask[k].threaded) pthread_join(r->threads[k], NULL);
        if (st == FS_OK && r->ask[k].st != FS_OK) {
            st = r->ask[k].st;
            if (err) *err = r->ask[k].err;
        }
    }
    return st;
}

/* ---- failover ------------------------------------------------------------------------ */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* Each part's holder to ask: its first not marked down (all down: its first). */
static void choose(fs_router_t *r)
{
    double now = now_s();
    int R = r->m.replicas;
    for (int p = 0; p < r->m.parts; p++) {
        const int *h = &r->holders[p * R];
        r->choice[p] = h[0];
        for (int i = 0; i < R && h[i] >= 0; i++)
            if (r->down_until[h[i]] <= now) {
                r->choice[p] = h[i];
                break;
            }
    }
}

static int failed_now(const fs_router_t *r, int k)
{
    return r->count[k] > 0 && (r->ask[k].st == FS_ERR_UNAVAILABLE || r->ask[k].st == FS_ERR_TIMEOUT);
}

/* Marks down the shards whose call failed as unreachable or late; whether
 * a part they were asked for has another holder up to ask instead. */
static int mark_failed(fs_router_t *r)
{
    double now = now_s();
    int marked = 0, moved = 0;
    for (int k = 0; k < r->m.num_shards; k++)
        if (failed_now(r, k)) r->down_until[k] = now + FS_ROUTE_DOWN_S, marked = 1;
    for (int p = 0; marked && !moved && p < r->m.parts; p++) {
        if (r->choice[p] < 0 || !failed_now(r, r->choice[p])) continue;
        const int *h = &r->holders[p * r->m.replicas];
        for (int i = 0; i < r->m.replicas && h[i] >= 0; i++) moved |= r->down_until[h[i]] <= now;
    }
    return moved;
}

typedef fs_status_t (*pass_t)(fs_router_t *r, void *arg, fs_error_t *err);

/* A pass, asked again on the parts' next holders while shards fail
 * (at most once per holder a part has). */
static fs_status_t with_failover(fs_router_t *r, pass_t pass, void *arg, fs_error_t *err)
{
    for (int attempt = 0;; attempt++) {
        choose(r);
        for (int k = 0; k < r->m.num_shards; k++) r->ask[k].st = FS_OK, r->count[k] = 0;
        fs_status_t st = pass(r, arg, err);
        if (st == FS_OK || attempt + 1 >= r->m.replicas || !mark_failed(r)) return st;
        r->failovers++;
    }
}

int64_t fs_router_failovers(const fs_router_t *r)
{
    return r->failovers;
}

/* ---- the three passes ------------------------------------------------------------------- */

typedef struct {
    const fs_typed_picks_req_t *q;
    const int64_t *dst;
    int64_t n;
    fs_typed_picks_t *out;
} picks_arg_t;

static fs_status_t picks_pass(fs_router_t *r, void *arg, fs_error_t *err)
{
    picks_arg_t *a = arg;
    const fs_typed_picks_req_t *q = a->q;
    int64_t n = a->n;
    fs_status_t st = group(r, r->m.etype_dst[q->etype], a->dst, n, err);
    if (st == FS_OK && (q->time || q->batch)) { /* each destination's time and batch go with it */
        for (int k = 0; k < r->m.num_shards; k++) r->cursor[k] = r->start[k];
        for (int64_t i = 0; i < n; i++) {
            int64_t at = r->cursor[r->shard_of[i]]++;
            if (q->time) r->time[at] = q->time[i];
            if (q->batch) r->batch[at] = q->batch[i];
        }
    }
    if (st == FS_OK && q->num_excl) st = group_exclusions(r, q, err);
    ask_t proto = {.kind = ASK_PICKS, .q = q};
    if (st == FS_OK) st = ask_all(r, &proto, err);
    if (st != FS_OK) return st;
    for (int k = 0; k < r->m.num_shards; k++) r->ansp[k] = r->count[k] ? &r->ask[k].ans : NULL;
    return fs_typed_picks_merge(&r->merged, (const fs_typed_picks_t *const *)r->ansp, r->m.num_shards, r->shard_of, n,
                                q->want_edge_ids, r->cursor, a->out, err);
}

fs_status_t fs_router_picks(void *router, const fs_typed_picks_req_t *q, const int64_t *dst, int64_t n,
                            fs_typed_picks_t *out, fs_error_t *err)
{
    fs_router_t *r = router;
    if (q->etype < 0 || q->etype >= r->m.num_edge_types)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "route: edge type %d of %d", q->etype, r->m.num_edge_types);
    picks_arg_t a = {.q = q, .dst = dst, .n = n, .out = out};
    return with_failover(r, picks_pass, &a, err);
}

typedef struct {
    int t;
    const char *table;
    size_t row_bytes;
    const int64_t *ids;
    int64_t n;
    void *out;
} rows_arg_t;

static fs_status_t rows_pass(fs_router_t *r, void *arg, fs_error_t *err)
{
    rows_arg_t *a = arg;
    fs_status_t st = group(r, a->t, a->ids, a->n, err);
    size_t bytes = (size_t)a->n * a->row_bytes;
    if (st == FS_OK && bytes > r->grouped_cap) {
        char *g = realloc(r->grouped, bytes);
        if (!g) return fs_error(err, FS_ERR_NOMEM, "route: out of memory for %lld rows", (long long)a->n);
        r->grouped = g, r->grouped_cap = bytes;
    }
    ask_t proto = {.kind = ASK_ROWS, .type = a->t, .table = a->table, .row_bytes = a->row_bytes};
    if (st == FS_OK) st = ask_all(r, &proto, err);
    if (st != FS_OK) return st;
    for (int k = 0; k < r->m.num_shards; k++) r->cursor[k] = r->start[k];
    for (int64_t i = 0; i < a->n; i++) /* back into the request's order */
        memcpy((char *)a->out + (size_t)i * a->row_bytes,
               r->grouped + (size_t)r->cursor[r->shard_of[i]]++ * a->row_bytes, a->row_bytes);
    return FS_OK;
}

fs_status_t fs_router_rows(fs_router_t *r, int t, const char *table, size_t row_bytes, const int64_t *ids, int64_t n,
                           void *out, fs_error_t *err)
{
    if (!r->t.rows) return fs_error(err, FS_ERR_UNSUPPORTED, "route: this transport gathers no rows");
    if (t < 0 || t >= r->m.num_node_types)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "route: node type %d of %d", t, r->m.num_node_types);
    rows_arg_t a = {.t = t, .table = table, .row_bytes = row_bytes, .ids = ids, .n = n, .out = out};
    return with_failover(r, rows_pass, &a, err);
}

typedef struct {
    int etype;
    const int64_t *dst, *src;
    int64_t n;
    uint8_t *is_edge;
} edges_arg_t;

static fs_status_t edges_pass(fs_router_t *r, void *arg, fs_error_t *err)
{
    edges_arg_t *a = arg;
    fs_status_t st = group(r, r->m.etype_dst[a->etype], a->dst, a->n, err);
    if (st != FS_OK) return st;
    for (int k = 0; k < r->m.num_shards; k++) r->cursor[k] = r->start[k];
    for (int64_t i = 0; i < a->n; i++) r->pair_src[r->cursor[r->shard_of[i]]++] = a->src[i]; /* with its destination */
    ask_t proto = {.kind = ASK_EDGES, .etype = a->etype};
    if ((st = ask_all(r, &proto, err)) != FS_OK) return st;
    for (int k = 0; k < r->m.num_shards; k++) r->cursor[k] = r->start[k];
    for (int64_t i = 0; i < a->n; i++) a->is_edge[i] = r->is_edge[r->cursor[r->shard_of[i]]++]; /* back in order */
    return FS_OK;
}

fs_status_t fs_router_edges(fs_router_t *r, int etype, const int64_t *dst, const int64_t *src, int64_t n,
                            uint8_t *is_edge, fs_error_t *err)
{
    if (!r->t.edges) return fs_error(err, FS_ERR_UNSUPPORTED, "route: this transport tests no edges");
    if (etype < 0 || etype >= r->m.num_edge_types)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "route: edge type %d of %d", etype, r->m.num_edge_types);
    edges_arg_t a = {.etype = etype, .dst = dst, .src = src, .n = n, .is_edge = is_edge};
    return with_failover(r, edges_pass, &a, err);
}
