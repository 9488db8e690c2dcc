/* fs_link.c — link prediction batches on the typed sampler (fs_typed.h):
 * negative sampling, seed-edge exclusion, and PyG LinkNeighborLoader's
 * labels (docs/algorithms.md §9).
 *
 * Negatives are drawn per negative index from the request seed, so a batch
 * is reproducible: negative j's candidates are the successive draws of
 * stream j. Uniform draws take any id of the endpoint's type; weighted
 * draws follow degree^0.75 (word2vec's smoothing), the destination side by
 * in-degree (its CSC row length), the source side by out-degree (counted
 * once per edge type and cached in the sampler). Strict negatives are
 * redrawn until the pair is neither an edge of the graph (a scan of the
 * destination's row) nor one of the batch's positives.
 *
 * Strict tries go in rounds: round t takes the t-th candidate of every
 * negative still without one, and asks whether those pairs are edges all
 * at once. Each negative still gets the first of its candidates that is
 * neither, exactly as a loop over its tries would, but an edge type whose
 * rows live elsewhere (fs_typed_etype_t.remote, a cluster's shards) is
 * asked once per round in bulk, not once per candidate; so are its
 * degrees, once per sampler.
 *
 * Both endpoints of every seed edge seed the neighbourhood sampling, and the
 * seed edges — with their reverses — are excluded from it (DGL's
 * exclude="reverse_id"), so a model never sees the edge it must predict. */
#include "fs_typed.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fs_rng.h"
#include "fs_sample_internal.h"
#include "fs_typed_internal.h"

#define STRICT_TRIES 1000

/* degree^0.75 cumulative weights of one side of one edge type, in draw
 * order (fs_typed_view_t.draw_map's r, or the node id). */
typedef struct {
    const void *key;         /* identifies the degrees it was built from: the CSR's indptr, or a remote array */
    int side;                /* 0 = source, 1 = destination */
    int64_t n;
    double *cdf;             /* [n] */
} deg_table_t;

typedef struct {
    fs_i64vec_t src, dst, batch_src, batch_dst, time_src, time_dst, label, label_time, pos_pairs;
    fs_i64vec_t excl;        /* fs_typed_exclude_t storage, as int64 triples */
    deg_table_t *tables;
    int num_tables;
    /* negatives, and strict rounds: each negative's pair and stream state,
     * the ones still open, the pairs asked and the answers */
    fs_i64vec_t neg_src, neg_dst, rng, open, ask_src, ask_dst;
    uint8_t *rejected, *answer;      /* per open negative: a positive; per asked pair: an edge */
    size_t rejected_cap, answer_cap;
} link_ws_t;

static void link_ws_free(void *p)
{
    link_ws_t *w = p;
    fs_i64vec_t *v[] = {&w->src,   &w->dst,  &w->batch_src, &w->batch_dst, &w->time_src, &w->time_dst,
                        &w->label, &w->label_time, &w->pos_pairs, &w->excl,  &w->neg_src,  &w->neg_dst,
                        &w->rng,   &w->open, &w->ask_src,   &w->ask_dst};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) free(v[i]->p);
    for (int i = 0; i < w->num_tables; i++) free(w->tables[i].cdf);
    free(w->tables);
    free(w->rejected), free(w->answer);
    free(w);
}

int64_t fs_link_exclusions(const fs_typed_view_t *g, int etype, const int64_t *src, const int64_t *dst,
                           int64_t count, fs_typed_exclude_t *out)
{
    const fs_typed_etype_t *et = &g->etype[etype];
    int self = et->src_type == et->dst_type && et->reverse < 0;
    int64_t n = 0;
    for (int64_t i = 0; i < count; i++) {
        out[n++] = (fs_typed_exclude_t){etype, dst[i], src[i]};
        if (et->reverse >= 0) out[n++] = (fs_typed_exclude_t){et->reverse, src[i], dst[i]};
        else if (self) out[n++] = (fs_typed_exclude_t){etype, src[i], dst[i]};
    }
    return n;
}

fs_status_t fs_link_check(const fs_typed_view_t *g, const fs_typed_req_t *req, const fs_typed_link_t *link,
                          fs_error_t *err)
{
    if (link->etype < 0 || link->etype >= g->num_edge_types)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "link sample: edge type %d, the graph has %d", link->etype,
                        g->num_edge_types);
    const fs_typed_etype_t *et = &g->etype[link->etype];
    const char *name = et->name ? et->name : "the seed edge type";
    if (link->count < 0 || (link->count > 0 && (!link->src || !link->dst)))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "link sample: bad seed edge arrays");
    if ((unsigned)link->neg >= FS_NEG_COUNT_)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "link sample: unknown negative sampling mode %d", (int)link->neg);
    if (link->neg != FS_NEG_NONE && !(link->amount >= 0 && isfinite(link->amount)))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "link sample: negative ratio %g, must be a finite number >= 0",
                        link->amount);
    if (link->neg == FS_NEG_TRIPLET && link->amount != floor(link->amount))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "link sample: triplet negatives per positive must be a whole "
                        "number, not %g", link->amount);
    if (link->neg != FS_NEG_NONE && link->amount * (double)link->count > 1e9)
        return fs_error(err, FS_ERR_RESOURCE, "link sample: %g negatives asked for", link->amount * (double)link->count);
    if (link->neg == FS_NEG_TRIPLET && link->label)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "link sample: triplet batches take no labels (every seed edge "
                        "is a positive)");
    for (int64_t i = 0; i < link->count; i++)
        if ((uint64_t)link->src[i] >= (uint64_t)g->count[et->src_type] ||
            (uint64_t)link->dst[i] >= (uint64_t)g->count[et->dst_type])
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "link sample: seed edge %lld (%lld -> %lld) is outside %s's "
                            "node ranges [0, %lld) x [0, %lld)", (long long)i, (long long)link->src[i],
                            (long long)link->dst[i], name, (long long)g->count[et->src_type],
                            (long long)g->count[et->dst_type]);
    if (et->remote && link->neg != FS_NEG_NONE && ((link->strict && !et->remote->edges) ||
                                                   (link->neg_weighted && !et->remote->degrees)))
        return fs_error(err, FS_ERR_UNSUPPORTED, "link sample: %s is held elsewhere, and its holders tell no %s: "
                        "its negatives can only be drawn %s", name, link->strict ? "edges apart" : "degrees",
                        link->strict ? "without the strict rule" : "uniformly");
    if (link->neg != FS_NEG_NONE && (g->count[et->dst_type] == 0 || g->count[et->src_type] == 0))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "link sample: %s has an empty node type to draw negatives from",
                        name);
    return fs_typed_check(g, req, NULL, 0, NULL, 0, err); /* the hops, before negatives are drawn */
}

/* ---- negative draws ------------------------------------------------------- */

/* The degree of the node each draw r names (draw_map's, or r itself), by
 * side, as doubles: remote degrees as given, else the CSR's row lengths
 * (side 1) or sources counted over its edges (side 0). */
static fs_status_t draw_degrees(const fs_typed_view_t *g, const fs_typed_etype_t *et, int side, const int64_t *remote,
                                double *out, int64_t n, fs_error_t *err)
{
    int type = side ? et->dst_type : et->src_type;
    const int64_t *map = g->draw_map ? g->draw_map[type] : NULL;
    if (remote || side) {
        for (int64_t r = 0; r < n; r++) {
            int64_t v = map ? map[r] : r;
            out[r] = remote ? (double)remote[v] : (double)(et->indptr[v + 1] - et->indptr[v]);
        }
        return FS_OK;
    }
    double *by_node = map ? calloc((size_t)n + 1, sizeof *by_node) : out; /* counted by node, then put in draw order */
    if (!by_node) return fs_error(err, FS_ERR_NOMEM, "link sample: out of memory for the degree table");
    for (int64_t q = 0; q < et->num_edges; q++) by_node[fs_typed_source(et, q)] += 1;
    if (map) {
        for (int64_t r = 0; r < n; r++) out[r] = by_node[map[r]];
        free(by_node);
    }
    return FS_OK;
}

/* The degree table of one side of edge type e, built once per sampler (a
 * remote edge type's degrees asked of its holders first). */
static fs_status_t degree_table(link_ws_t *w, const fs_typed_view_t *g, int e, int side, const deg_table_t **out,
                                fs_error_t *err)
{
    const fs_typed_etype_t *et = &g->etype[e];
    const int64_t *remote = NULL;
    if (et->remote) {
        fs_status_t st = et->remote->degrees(et->remote->ctx, e, side, &remote, err);
        if (st != FS_OK) {
            fs_error_prefix(err, "link sample: degree-weighted negatives");
            return st;
        }
    }
    const void *key = remote ? (const void *)remote : (const void *)et->indptr;
    for (int i = 0; i < w->num_tables; i++)
        if (w->tables[i].key == key && w->tables[i].side == side) return *out = &w->tables[i], FS_OK;
    int64_t n = g->count[side ? et->dst_type : et->src_type];
    double *cdf = calloc((size_t)n + 1, sizeof *cdf);
    deg_table_t *t = realloc(w->tables, (size_t)(w->num_tables + 1) * sizeof *t);
    if (t) w->tables = t;
    if (!cdf || !t) {
        free(cdf);
        return fs_error(err, FS_ERR_NOMEM, "link sample: out of memory for the degree table");
    }
    fs_status_t st = draw_degrees(g, et, side, remote, cdf, n, err);
    if (st != FS_OK) {
        free(cdf);
        return st;
    }
    double sum = 0;
    for (int64_t v = 0; v < n; v++) cdf[v] = sum += pow(cdf[v], 0.75);
    t = &w->tables[w->num_tables++];
    *t = (deg_table_t){.key = key, .side = side, .n = n, .cdf = cdf};
    *out = t;
    return FS_OK;
}

static int64_t draw(fs_rng_t *rng, const deg_table_t *t, int64_t n)
{
    if (!t || !(t->cdf[t->n - 1] > 0)) return (int64_t)fs_rng_below(rng, (uint64_t)n);
    double r = fs_rng_unit(rng) * t->cdf[t->n - 1];
    int64_t lo = 0, hi = t->n - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (t->cdf[mid] > r) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

static int is_edge(const fs_typed_etype_t *et, int64_t src, int64_t dst)
{
    for (int64_t q = et->indptr[dst]; q < et->indptr[dst + 1]; q++)
        if (fs_typed_source(et, q) == src) return 1;
    return 0;
}

static int cmp_pair(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
    return (x[1] > y[1]) - (x[1] < y[1]);
}

static int is_positive(const link_ws_t *w, int64_t count, int64_t src, int64_t dst)
{
    int64_t key[2] = {dst, src};
    return bsearch(key, w->pos_pairs.p, (size_t)count, 2 * sizeof(int64_t), cmp_pair) != NULL;
}

typedef struct {
    const fs_typed_etype_t *et;
    int etype;
    const deg_table_t *src_t, *dst_t;
    int64_t n_src, n_dst;
    const int64_t *src_map, *dst_map; /* fs_typed_view_t.draw_map's, or NULL */
    int strict;
    uint64_t seed;
    const int64_t *fixed_src;         /* triplet: the seeds' sources, negative j's being fixed_src[j / k] */
    int64_t k;
} neg_ctx_t;

/* The next candidate of a negative from its stream: a destination for a
 * fixed source (triplet), or a whole pair, in the view's ids. */
static void candidate(const neg_ctx_t *c, fs_rng_t *rng, int64_t j, int64_t *s, int64_t *d)
{
    *s = c->fixed_src ? c->fixed_src[j / c->k] : draw(rng, c->src_t, c->n_src);
    *d = draw(rng, c->dst_t, c->n_dst);
    if (!c->fixed_src && c->src_map) *s = c->src_map[*s];
    if (c->dst_map) *d = c->dst_map[*d];
}

/* Which pairs (dst[i], src[i]) are edges: the rows scanned here, or the
 * holders asked at once. */
static fs_status_t edges_of(const neg_ctx_t *c, const int64_t *dst, const int64_t *src, int64_t n, uint8_t *out,
                            fs_error_t *err)
{
    if (n == 0) return FS_OK;
    if (!c->et->remote) {
        for (int64_t i = 0; i < n; i++) out[i] = (uint8_t)is_edge(c->et, src[i], dst[i]);
        return FS_OK;
    }
    fs_status_t st = c->et->remote->edges(c->et->remote->ctx, c->etype, dst, src, n, out, err);
    if (st != FS_OK) fs_error_prefix(err, "link sample: strict negatives");
    return st;
}

static int grow_bytes(uint8_t **p, size_t *cap, size_t n)
{
    if (n <= *cap) return 0;
    uint8_t *q = realloc(*p, n);
    if (!q) return -1;
    *p = q, *cap = n;
    return 0;
}

static int strict_reserve(link_ws_t *w, size_t n)
{
    return fs_i64vec_reserve(&w->rng, n + 1) || fs_i64vec_reserve(&w->open, n + 1) ||
           fs_i64vec_reserve(&w->ask_src, n + 1) || fs_i64vec_reserve(&w->ask_dst, n + 1) ||
           grow_bytes(&w->rejected, &w->rejected_cap, n + 1) || grow_bytes(&w->answer, &w->answer_cap, n + 1);
}

/* One round of strict tries: every open negative's next candidate into
 * neg_src/neg_dst; those that are not positives asked whether they are
 * edges, all at once; the ones that are neither closed, the rest kept
 * open in order (so the open list stays ascending). */
static fs_status_t strict_round(const neg_ctx_t *c, link_ws_t *w, int64_t count, int64_t *num_open, fs_error_t *err)
{
    int64_t n = *num_open, asked = 0, kept = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t j = w->open.p[i];
        fs_rng_t rng = {(uint64_t)w->rng.p[j]};
        candidate(c, &rng, j, &w->neg_src.p[j], &w->neg_dst.p[j]);
        w->rng.p[j] = (int64_t)rng.state;
        w->rejected[i] = (uint8_t)is_positive(w, count, w->neg_src.p[j], w->neg_dst.p[j]);
        if (!w->rejected[i]) w->ask_dst.p[asked] = w->neg_dst.p[j], w->ask_src.p[asked++] = w->neg_src.p[j];
    }
    fs_status_t st = edges_of(c, w->ask_dst.p, w->ask_src.p, asked, w->answer, err);
    if (st != FS_OK) return st;
    for (int64_t i = 0, a = 0; i < n; i++)
        if (w->rejected[i] || w->answer[a++]) w->open.p[kept++] = w->open.p[i];
    *num_open = kept;
    return FS_OK;
}

/* Every negative's pair into neg_src/neg_dst: its stream's first candidate,
 * or with the strict rule the first that is neither an edge nor a
 * positive, found in rounds (the file's comment says why). */
static fs_status_t draw_negatives(const neg_ctx_t *c, link_ws_t *w, int64_t count, int64_t nneg, fs_error_t *err)
{
    if (!c->strict) {
        for (int64_t j = 0; j < nneg; j++) {
            fs_rng_t rng = fs_rng_make(c->seed, (uint64_t)j);
            candidate(c, &rng, j, &w->neg_src.p[j], &w->neg_dst.p[j]);
        }
        return FS_OK;
    }
    if (strict_reserve(w, (size_t)nneg))
        return fs_error(err, FS_ERR_NOMEM, "link sample: out of memory for %lld strict negatives", (long long)nneg);
    for (int64_t j = 0; j < nneg; j++) w->rng.p[j] = (int64_t)fs_rng_make(c->seed, (uint64_t)j).state, w->open.p[j] = j;
    int64_t open = nneg;
    for (int tries = 0; tries < STRICT_TRIES && open > 0; tries++) {
        fs_status_t st = strict_round(c, w, count, &open, err);
        if (st != FS_OK) return st;
    }
    if (open == 0) return FS_OK;
    return fs_error(err, FS_ERR_INVALID_ARGUMENT, "link sample: strict negative %lld%s: no pair that is not an edge "
                    "in %d draws (the graph is too dense for strict negatives here)", (long long)w->open.p[0],
                    c->fixed_src ? " of a seed whose source has nearly every destination" : "", STRICT_TRIES);
}

/* ---- the batch ------------------------------------------------------------ */

static int reserve_all(link_ws_t *w, size_t n, size_t pairs)
{
    fs_i64vec_t *v[] = {&w->src, &w->dst, &w->batch_src, &w->batch_dst, &w->time_src, &w->time_dst, &w->label,
                        &w->label_time};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
        if (fs_i64vec_reserve(v[i], n + 1)) return -1;
    if (fs_i64vec_reserve(&w->pos_pairs, 2 * pairs + 2)) return -1;
    size_t xs = (2 * pairs + 1) * sizeof(fs_typed_exclude_t) / sizeof(int64_t) + 1;
    return fs_i64vec_reserve(&w->excl, xs);
}

/* The negatives' draw context: the streams' seed, the side tables of
 * degree-weighted draws, the triplet's fixed sources. */
static fs_status_t neg_context(link_ws_t *w, const fs_typed_view_t *g, const fs_typed_req_t *req,
                               const fs_typed_link_t *l, neg_ctx_t *c, fs_error_t *err)
{
    const fs_typed_etype_t *et = &g->etype[l->etype];
    *c = (neg_ctx_t){.et = et, .etype = l->etype, .n_src = g->count[et->src_type], .n_dst = g->count[et->dst_type],
                     .strict = l->strict, .src_map = g->draw_map ? g->draw_map[et->src_type] : NULL,
                     .dst_map = g->draw_map ? g->draw_map[et->dst_type] : NULL,
                     .seed = req->seed ^ 0x7a3c1e5b9d2f4861ULL};
    if (l->neg == FS_NEG_TRIPLET) c->fixed_src = l->src, c->k = (int64_t)l->amount;
    if (!l->neg_weighted) return FS_OK;
    fs_status_t st = degree_table(w, g, l->etype, 1, &c->dst_t, err);
    if (st == FS_OK && l->neg == FS_NEG_BINARY) st = degree_table(w, g, l->etype, 0, &c->src_t, err);
    if (st == FS_OK) st = degree_table(w, g, l->etype, 1, &c->dst_t, err); /* found again: src's may have moved it */
    return st;
}

/* Fills the seed groups' arrays, positives then negatives, and their
 * lengths: *n_src (count, + the binary negatives), *n_dst (count, + every
 * negative). */
static fs_status_t build_seeds(link_ws_t *w, const fs_typed_view_t *g, const fs_typed_req_t *req,
                               const fs_typed_link_t *l, int64_t nneg, int64_t *n_src, int64_t *n_dst, fs_error_t *err)
{
    int64_t B = l->count;
    for (int64_t i = 0; i < B; i++) {
        w->src.p[i] = l->src[i], w->dst.p[i] = l->dst[i];
        w->batch_src.p[i] = w->batch_dst.p[i] = i;
        if (l->time) w->time_src.p[i] = w->time_dst.p[i] = l->time[i];
        w->pos_pairs.p[2 * i] = l->dst[i], w->pos_pairs.p[2 * i + 1] = l->src[i];
    }
    qsort(w->pos_pairs.p, (size_t)B, 2 * sizeof(int64_t), cmp_pair);
    *n_src = B, *n_dst = B;
    if (nneg == 0) return FS_OK;
    neg_ctx_t c;
    fs_status_t st = neg_context(w, g, req, l, &c, err);
    if (st == FS_OK &&
        (fs_i64vec_reserve(&w->neg_src, (size_t)nneg + 1) || fs_i64vec_reserve(&w->neg_dst, (size_t)nneg + 1)))
        st = fs_error(err, FS_ERR_NOMEM, "link sample: out of memory for %lld negatives", (long long)nneg);
    if (st == FS_OK) st = draw_negatives(&c, w, B, nneg, err);
    if (st != FS_OK) return st;
    for (int64_t j = 0; j < nneg; j++) {
        int64_t pos = l->neg == FS_NEG_TRIPLET ? j / c.k : j % (B > 0 ? B : 1);
        int64_t batch = l->neg == FS_NEG_TRIPLET ? pos : B + j, t = l->time && B > 0 ? l->time[pos] : 0;
        if (l->neg == FS_NEG_BINARY) {
            w->src.p[*n_src] = w->neg_src.p[j], w->batch_src.p[*n_src] = batch, w->time_src.p[(*n_src)++] = t;
        }
        w->dst.p[*n_dst] = w->neg_dst.p[j], w->batch_dst.p[*n_dst] = batch, w->time_dst.p[(*n_dst)++] = t;
    }
    return FS_OK;
}

static void fill_labels(link_ws_t *w, const fs_typed_link_t *l, int64_t nneg, fs_link_result_t *res)
{
    const fs_typed_result_t *sub = &res->sub;
    int64_t B = l->count;
    if (l->neg == FS_NEG_TRIPLET) {
        res->num_neg_per_src = (int64_t)l->amount;
        res->src_index = sub->seed_local[0];
        res->dst_pos_index = sub->seed_local[1];
        res->dst_neg_index = sub->seed_local[1] + B;
        return;
    }
    res->num_labels = B + nneg;
    res->label_src = sub->seed_local[0];
    res->label_dst = sub->seed_local[1];
    int shift = l->neg == FS_NEG_BINARY && l->label; /* PyG: given labels + 1, so 0 means negative */
    for (int64_t i = 0; i < B; i++) w->label.p[i] = l->label ? l->label[i] + shift : 1;
    for (int64_t j = 0; j < nneg; j++) w->label.p[B + j] = 0;
    res->label = w->label.p;
    if (l->time) {
        memcpy(w->label_time.p, w->time_src.p, (size_t)(B + nneg) * sizeof(int64_t));
        res->label_time = w->label_time.p;
    }
}

fs_status_t fs_link_sample_cpu(fs_typed_sampler_t *s, const fs_typed_view_t *g, const fs_typed_req_t *req,
                               const fs_typed_link_t *l, fs_link_result_t *res, fs_error_t *err)
{
    fs_status_t st = fs_link_check(g, req, l, err);
    if (st != FS_OK) return st;
    link_ws_t *w = fs_typed_sampler_ext(s, FS_TEXT_LINK, sizeof(link_ws_t), link_ws_free);
    int64_t B = l->count;
    int64_t nneg = l->neg == FS_NEG_BINARY ? (int64_t)llround(l->amount * (double)B)
                 : l->neg == FS_NEG_TRIPLET ? (int64_t)l->amount * B : 0;
    if (!w || reserve_all(w, (size_t)(B + nneg), (size_t)B))
        return fs_error(err, FS_ERR_NOMEM, "link sample: out of memory for %lld seed edges", (long long)B);
    int64_t n_src = 0, n_dst = 0;
    if ((st = build_seeds(w, g, req, l, nneg, &n_src, &n_dst, err))) return st;
    const fs_typed_etype_t *et = &g->etype[l->etype];
    fs_typed_seeds_t groups[2] = {
        {.type = et->src_type, .count = n_src, .ids = w->src.p, .batch = w->batch_src.p,
         .time = l->time ? w->time_src.p : NULL},
        {.type = et->dst_type, .count = n_dst, .ids = w->dst.p, .batch = w->batch_dst.p,
         .time = l->time ? w->time_dst.p : NULL}};
    fs_typed_exclude_t *x = (fs_typed_exclude_t *)w->excl.p;
    int64_t nx = l->exclude_seed_edges ? fs_link_exclusions(g, l->etype, l->src, l->dst, B, x) : 0;
    memset(res, 0, sizeof *res);
    if ((st = fs_typed_sample_cpu(s, g, req, groups, 2, x, nx, &res->sub, err))) return st;
    fill_labels(w, l, nneg, res);
    return FS_OK;
}
