/* fs_hetero.c — typed batches for the transports (fs_hetero.h): resolve a
 * public request by name, check its limits, sample, and lay the result and
 * its gathered rows out as one image; and read an image back, checked.
 *
 * Design: the image's layout is a pure function of its header and shape
 * (layout_arrays() below). The writer fills the shape from the sampler's result,
 * lays out, allocates once and writes every array in place — the gathers
 * write rows straight into it, no staging copy. The reader checks the
 * shape's counts, runs the same layout_arrays() against the received length, and,
 * for bytes received, checks the arrays' contents (local ids, offsets)
 * before handing out pointers. Both transports go through both halves, so their batches are
 * bit-identical by construction (docs/api.md section 10). */
#include "fs_hetero.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC "FSHBAT01"
#define ALIGN 64

/* F_JOINED (since 1.5): each edge type's edge arrays of every hop end to
 * end, sources then destinations (then edge ids), so a reader can take the
 * hops' edges as one [2, E] array with no copy (PyG's edge_index). Written
 * for readers that say they take it (the local transport's own, gRPC
 * clients setting TypedSampling.joined_edges): an older client refuses the
 * flag. */
enum { F_BATCH = 1, F_TIME = 2, F_EIDS = 4, F_LINK = 8, F_TRIPLET = 16, F_LTIME = 32, F_JOINED = 64 };

/* Header words (int64 each, after the 8-byte magic). */
enum { H_TOTAL = 1, H_HOPS, H_TYPES, H_ETYPES, H_GROUPS, H_NTABLES, H_ETABLES, H_FLAGS, H_LABELS, H_POS, H_K,
       H_LSRC, H_LDST, H_NAMES, H_WORDS_ };

/* ---- the graph --------------------------------------------------------------- */

static fs_status_t views_of(const fs_table_t *tables, int n, fs_table_view_t **out)
{
    if (!(*out = calloc((size_t)n + 1, sizeof **out))) return FS_ERR_NOMEM;
    for (int i = 0; i < n; i++) {
        const fs_table_t *t = &tables[i];
        fs_table_view_t *v = &(*out)[i];
        *v = (fs_table_view_t){.dtype = t->dtype, .num_rows = t->rows, .dim = t->dim, .row_bytes = t->row_bytes,
                               .num_tiers = 1};
        v->tier[0] = (fs_tier_ref_t){.kind = FS_TIER_HOST, .device = -1, .base = t->data, .rows = t->rows};
    }
    return FS_OK;
}

fs_status_t fs_hetero_graph_init(fs_hetero_graph_t *g, const fs_dataset_t *ds, fs_error_t *err)
{
    memset(g, 0, sizeof *g);
    g->ds = ds;
    fs_status_t st = fs_typed_graph_init(&g->graph, ds, err);
    if (st != FS_OK) return st;
    g->node_views = calloc((size_t)ds->num_node_types + 1, sizeof *g->node_views);
    g->edge_views = calloc((size_t)ds->num_edge_types + 1, sizeof *g->edge_views);
    int bad = !g->node_views || !g->edge_views;
    for (int t = 0; t < ds->num_node_types && !bad; t++)
        bad = views_of(ds->node_types[t].tables, ds->node_types[t].num_tables, &g->node_views[t]) != FS_OK;
    for (int e = 0; e < ds->num_edge_types && !bad; e++)
        bad = views_of(ds->edge_types[e].tables, ds->edge_types[e].num_tables, &g->edge_views[e]) != FS_OK;
    if (bad) {
        fs_hetero_graph_free(g);
        return fs_error(err, FS_ERR_NOMEM, "out of memory describing the typed graph");
    }
    return FS_OK;
}

void fs_hetero_graph_free(fs_hetero_graph_t *g)
{
    if (!g->ds) return;
    for (int t = 0; g->node_views && t < g->ds->num_node_types; t++) free(g->node_views[t]);
    for (int e = 0; g->edge_views && e < g->ds->num_edge_types; e++) free(g->edge_views[e]);
    free(g->node_views);
    free(g->edge_views);
    fs_typed_graph_free(&g->graph);
    memset(g, 0, sizeof *g);
}

/* ---- resolving a request by name ------------------------------------------------ */

/* "paper, author, venue" (the first few) for messages. */
static void list_types(const fs_dataset_t *ds, char *out, size_t len)
{
    size_t o = 0;
    out[0] = 0;
    for (int t = 0; t < ds->num_node_types && o + 8 < len; t++)
        o += (size_t)snprintf(out + o, len - o, "%s%s", t ? ", " : "", ds->node_types[t].name);
}

static void list_etypes(const fs_dataset_t *ds, char *out, size_t len)
{
    size_t o = 0;
    out[0] = 0;
    for (int e = 0; e < ds->num_edge_types && o + 8 < len; e++) {
        const fs_edge_type_t *x = &ds->edge_types[e];
        o += (size_t)snprintf(out + o, len - o, "%s(%s, %s, %s)", e ? ", " : "", x->src, x->rel, x->dst);
    }
}

static fs_status_t node_type(const fs_dataset_t *ds, const char *name, const char *what, int *out, fs_error_t *err)
{
    char all[512];
    if (name && (*out = fs_dataset_node_type(ds, name)) >= 0) return FS_OK;
    list_types(ds, all, sizeof all);
    return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s: no node type '%s' in dataset '%s' (it has %s)", what,
                    name ? name : "(null)", ds->name, all);
}

static fs_status_t edge_type(const fs_dataset_t *ds, const char *src, const char *rel, const char *dst,
                             const char *what, int *out, fs_error_t *err)
{
    char all[1024];
    if (src && rel && dst && (*out = fs_dataset_edge_type(ds, src, rel, dst)) >= 0) return FS_OK;
    list_etypes(ds, all, sizeof all);
    return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s: no edge type (%s, %s, %s) in dataset '%s' (it has %s)", what,
                    src ? src : "(null)", rel ? rel : "(null)", dst ? dst : "(null)", ds->name, all);
}

/* What one table name means for one type: the table index (-1 = the type
 * has none) and the dtype its rows are served as. */
typedef struct {
    int index;
    fs_dtype_t dtype;
    int64_t dim;
} table_pick_t;

static fs_status_t pick_table(const fs_table_t *tables, int n, const char *name, fs_dtype_t want, const char *owner,
                              table_pick_t *out, fs_error_t *err)
{
    *out = (table_pick_t){.index = -1};
    for (int i = 0; i < n; i++) {
        const fs_table_t *t = &tables[i];
        if (strcmp(t->name, name) != 0) continue;
        int integer = t->dtype == FS_DTYPE_I64;
        fs_dtype_t dt = integer || want == FS_DTYPE_INVALID ? t->dtype : want;
        if (dt != t->dtype && dt != FS_DTYPE_F32)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "table '%s' of %s is %s: it can be served as %s or "
                            "float32, not %s", name, owner, fs_dtype_name(t->dtype), fs_dtype_name(t->dtype),
                            fs_dtype_name(want));
        *out = (table_pick_t){.index = i, .dtype = dt, .dim = t->dim};
        return FS_OK;
    }
    return FS_OK;
}

/* Everything a request resolves to. */
typedef struct {
    fs_typed_req_t treq;
    int *fanout;                 /* [E * H] */
    fs_typed_seeds_t *groups;    /* [G] */
    fs_typed_link_t link;
    int is_link;
    table_pick_t *ntab;          /* [T * NT] */
    table_pick_t *etab;          /* [E * ET] */
    size_t *node_row_bytes, *edge_row_bytes; /* [T], [E] */
    int64_t seeds;               /* seed nodes in all, for the limits */
} resolved_t;

static void resolved_free(resolved_t *r)
{
    free(r->fanout);
    free(r->groups);
    free(r->ntab);
    free(r->etab);
    free(r->node_row_bytes);
    free(r->edge_row_bytes);
}

static fs_status_t resolve_fanouts(const fs_dataset_t *ds, const fs_hetero_req_t *req, resolved_t *r, fs_error_t *err)
{
    int H = req->num_hops; /* checked by resolve() */
    if (req->num_fanouts > 0 && !req->fanouts)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "num_fanouts is %zu but fanouts is NULL", req->num_fanouts);
    for (size_t i = 0; i < req->num_fanouts; i++) {
        const fs_hetero_fanout_t *f = &req->fanouts[i];
        int e;
        fs_status_t st = edge_type(ds, f->src, f->rel, f->dst, "fanouts", &e, err);
        if (st != FS_OK) return st;
        for (size_t j = 0; j < i; j++)
            if (fs_dataset_edge_type(ds, req->fanouts[j].src, req->fanouts[j].rel, req->fanouts[j].dst) == e)
                return fs_error(err, FS_ERR_INVALID_ARGUMENT, "fanouts: edge type (%s, %s, %s) is listed twice",
                                f->src, f->rel, f->dst);
        for (int h = 0; h < H; h++) r->fanout[e * H + h] = f->fanout[h];
    }
    return FS_OK;
}

/* The tables an owner (a node type or an edge type) has, and its name for messages. */
typedef struct {
    const fs_table_t *tables;
    int num_tables;
    const char *name;
} owner_t;

static owner_t node_owner(const fs_dataset_t *ds, int i)
{
    const fs_node_type_t *t = &ds->node_types[i];
    return (owner_t){t->tables, t->num_tables, t->name};
}

static owner_t edge_owner(const fs_dataset_t *ds, int i)
{
    const fs_edge_type_t *x = &ds->edge_types[i];
    return (owner_t){x->tables, x->num_tables, x->rel};
}

/* Every owner's tables, each name once: the list a NOT_FOUND names. */
typedef struct {
    const fs_dataset_t *ds;
    int owners;
    owner_t (*owner)(const fs_dataset_t *, int);
} owner_tables_t;

/* Table i of all owners' tables in turn; NULL for a name an earlier owner has. */
static const char *owner_table_name(const void *ctx, int i)
{
    const owner_tables_t *x = ctx;
    for (int o = 0; o < x->owners; o++) {
        owner_t ow = x->owner(x->ds, o);
        if (i >= ow.num_tables) {
            i -= ow.num_tables;
            continue;
        }
        const char *name = ow.tables[i].name;
        for (int p = 0; p < o; p++) {
            owner_t prev = x->owner(x->ds, p);
            for (int k = 0; k < prev.num_tables; k++)
                if (strcmp(prev.tables[k].name, name) == 0) return NULL;
        }
        return name;
    }
    return NULL;
}

static fs_status_t no_owner_has(const fs_dataset_t *ds, const char *what, const char *name, int owners,
                                owner_t (*owner)(const fs_dataset_t *, int), fs_error_t *err)
{
    owner_tables_t x = {ds, owners, owner};
    int n = 0;
    for (int o = 0; o < owners; o++) n += owner(ds, o).num_tables;
    return fs_table_not_found(err, ds->name, what, name, n, owner_table_name, &x);
}

/* One list of table names ("node" or "edge" tables) against every owner:
 * picks[owner * n + k], and each owner's row bytes. A name no owner has is
 * FS_ERR_NOT_FOUND; an owner without it simply returns no rows. */
static fs_status_t resolve_table_list(const fs_dataset_t *ds, const char *what, const char *const *names, size_t n,
                                      int owners, owner_t (*owner)(const fs_dataset_t *, int), fs_dtype_t out_dtype,
                                      table_pick_t *picks, size_t *row_bytes, fs_error_t *err)
{
    if (n && !names) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%zu %s tables but the name list is NULL", n, what);
    for (size_t k = 0; k < n; k++) {
        int found = 0;
        if (!names[k]) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s table %zu is NULL", what, k);
        for (int i = 0; i < owners; i++) {
            owner_t o = owner(ds, i);
            table_pick_t *p = &picks[(size_t)i * n + k];
            fs_status_t st = pick_table(o.tables, o.num_tables, names[k], out_dtype, o.name, p, err);
            if (st != FS_OK) return st;
            if (p->index >= 0) row_bytes[i] += (size_t)p->dim * fs_dtype_size(p->dtype), found = 1;
        }
        if (!found) return no_owner_has(ds, what, names[k], owners, owner, err);
    }
    return FS_OK;
}

static fs_status_t resolve_tables(const fs_dataset_t *ds, const fs_hetero_req_t *req, resolved_t *r, fs_error_t *err)
{
    if (req->out_dtype != FS_DTYPE_INVALID && !fs_dtype_size(req->out_dtype))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "unknown out_dtype %d", (int)req->out_dtype);
    fs_status_t st = resolve_table_list(ds, "node", req->node_tables, req->num_node_tables, ds->num_node_types,
                                        node_owner, req->out_dtype, r->ntab, r->node_row_bytes, err);
    if (st == FS_OK)
        st = resolve_table_list(ds, "edge", req->edge_tables, req->num_edge_tables, ds->num_edge_types, edge_owner,
                                req->out_dtype, r->etab, r->edge_row_bytes, err);
    return st;
}

static fs_status_t resolve_groups(const fs_dataset_t *ds, const fs_hetero_seeds_t *groups, size_t n, resolved_t *r,
                                  fs_error_t *err)
{
    if (n > 0 && !groups) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%zu seed groups but the array is NULL", n);
    if (n == 0) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "no seed groups: give at least one node type's seeds");
    for (size_t i = 0; i < n; i++) {
        const fs_hetero_seeds_t *g = &groups[i];
        fs_status_t st = node_type(ds, g->type, "seeds", &r->groups[i].type, err);
        if (st != FS_OK) return st;
        if (g->count < 0 || (g->count > 0 && !g->ids))
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "seeds of '%s': count %lld with %s ids", g->type,
                            (long long)g->count, g->ids ? "some" : "no");
        r->groups[i].count = g->count, r->groups[i].ids = g->ids;
        r->groups[i].time = r->treq.temporal ? g->time : NULL;
        r->seeds += g->count;
    }
    return FS_OK;
}

static fs_status_t resolve_link(const fs_dataset_t *ds, const fs_link_req_t *l, resolved_t *r, fs_error_t *err)
{
    int e;
    fs_status_t st = edge_type(ds, l->src, l->rel, l->dst, "link seed edges", &e, err);
    if (st != FS_OK) return st;
    if (l->neg != FS_NEG_NONE && !(l->amount >= 0 && isfinite(l->amount)))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "link sample: negative ratio %g, must be a finite number >= 0",
                        l->amount);
    r->link = (fs_typed_link_t){.etype = e, .count = l->count, .src = l->src_ids, .dst = l->dst_ids,
                                .label = l->label, .time = r->treq.temporal ? l->time : NULL, .neg = l->neg,
                                .amount = l->amount, .neg_weighted = l->neg_weighted, .strict = l->strict,
                                .exclude_seed_edges = !l->keep_seed_edges};
    double count = l->count > 0 ? (double)l->count : 0, neg = 0;
    if (l->neg == FS_NEG_BINARY) neg = 2 * llround(l->amount * count);
    if (l->neg == FS_NEG_TRIPLET) neg = l->amount * count;
    double seeds = 2 * count + neg;
    r->seeds = seeds > 4e18 ? INT64_MAX : (int64_t)seeds;
    r->is_link = 1;
    return FS_OK;
}

static fs_status_t resolve(const fs_hetero_graph_t *g, const fs_hetero_seeds_t *groups, size_t num_groups,
                           const fs_link_req_t *link, const fs_hetero_req_t *req, resolved_t *r, fs_error_t *err)
{
    const fs_dataset_t *ds = g->ds;
    int T = ds->num_node_types, E = ds->num_edge_types, H = req->num_hops;
    memset(r, 0, sizeof *r);
    if (H < 1 || H > FS_MAX_HOPS)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%d hops requested, must be 1..%d", H, FS_MAX_HOPS);
    r->fanout = calloc((size_t)E * (size_t)H + 1, sizeof *r->fanout);
    r->groups = calloc(num_groups + 1, sizeof *r->groups);
    r->ntab = calloc((size_t)T * req->num_node_tables + 1, sizeof *r->ntab);
    r->etab = calloc((size_t)E * req->num_edge_tables + 1, sizeof *r->etab);
    r->node_row_bytes = calloc((size_t)T + 1, sizeof *r->node_row_bytes);
    r->edge_row_bytes = calloc((size_t)E + 1, sizeof *r->edge_row_bytes);
    if (!r->fanout || !r->groups || !r->ntab || !r->etab || !r->node_row_bytes || !r->edge_row_bytes)
        return fs_error(err, FS_ERR_NOMEM, "out of memory for a typed request");
    r->treq = (fs_typed_req_t){.num_hops = H, .fanout = r->fanout, .seed = req->seed,
                               .want_edge_ids = req->want_edge_ids || req->num_edge_tables > 0,
                               .frontier = req->frontier, .disjoint = req->disjoint, .temporal = req->temporal,
                               .strict = req->strict, .window = req->window};
    memcpy(r->treq.mode, req->mode, sizeof r->treq.mode);
    fs_status_t st = resolve_fanouts(ds, req, r, err);
    if (st == FS_OK) st = resolve_tables(ds, req, r, err);
    if (st == FS_OK) st = link ? resolve_link(ds, link, r, err) : resolve_groups(ds, groups, num_groups, r, err);
    return st;
}

/* ---- the image's layout ------------------------------------------------------- */

/* The header's counts and where each array lies. */
typedef struct {
    int64_t w[H_WORDS_];         /* header words; w[0] unused (the magic) */
    int64_t H, T, E, G, NT, ET, flags;
    const int64_t *meta;         /* the shape */
    size_t meta_words;
    /* offsets, 0 = absent */
    size_t names, *nodes, *batch, *time, *ntab, *seed, *doff, *edst, *esrc, *eid, *etab;
    size_t lsrc, ldst, label, ltime, sidx, dpos, dneg;
    size_t total;
    size_t *mem;                 /* the offset arrays above, one allocation */
} layout_t;

/* Shape indices. */
static size_t m_type(const layout_t *L, int64_t t) { return (size_t)(t * (L->H + 2)); }
static size_t m_ntab(const layout_t *L, int64_t t, int64_t k) { return (size_t)(L->T * (L->H + 2) + 2 * (t * L->NT + k)); }
static size_t m_etype(const layout_t *L, int64_t e) { return m_ntab(L, L->T, 0) + (size_t)(2 * e); }
static size_t m_etab(const layout_t *L, int64_t e, int64_t k) { return m_etype(L, L->E) + (size_t)(2 * (e * L->ET + k)); }
static size_t m_group(const layout_t *L, int64_t g) { return m_etab(L, L->E, 0) + (size_t)(2 * g); }
static size_t m_block(const layout_t *L, int64_t b) { return m_group(L, L->G) + (size_t)(3 * b); }
static size_t meta_words(const layout_t *L) { return m_block(L, L->H * L->E); }

#define COUNT_CAP (INT64_C(1) << 40)

/* Counts from the header words: FS_ERR_FORMAT when one is out of range. */
static fs_status_t layout_counts(layout_t *L, fs_error_t *err)
{
    L->H = L->w[H_HOPS], L->T = L->w[H_TYPES], L->E = L->w[H_ETYPES], L->G = L->w[H_GROUPS];
    L->NT = L->w[H_NTABLES], L->ET = L->w[H_ETABLES], L->flags = L->w[H_FLAGS];
    if (L->H < 1 || L->H > FS_MAX_HOPS || L->T < 1 || L->T > (1 << 20) || L->E < 0 || L->E > (1 << 20) ||
        L->G < 0 || L->G > (1 << 24) || L->NT < 0 || L->NT > 4096 || L->ET < 0 || L->ET > 4096 ||
        (L->flags & ~INT64_C(127)) || L->w[H_LABELS] < 0 || L->w[H_LABELS] > COUNT_CAP || L->w[H_POS] < 0 ||
        L->w[H_POS] > COUNT_CAP || L->w[H_K] < 0 || L->w[H_K] > COUNT_CAP || L->w[H_NAMES] < 0 ||
        L->w[H_NAMES] > (1 << 28) || (double)L->NT * (double)L->T > (1 << 24) ||
        (double)L->ET * (double)L->E * L->H > (1 << 24))
        return fs_error(err, FS_ERR_FORMAT, "typed batch: header counts out of range");
    if ((L->flags & F_LINK) &&
        (L->w[H_LSRC] < 0 || L->w[H_LSRC] >= L->T || L->w[H_LDST] < 0 || L->w[H_LDST] >= L->T))
        return fs_error(err, FS_ERR_FORMAT, "typed batch: link endpoint types out of range");
    if ((L->flags & (F_TRIPLET | F_LTIME)) && !(L->flags & F_LINK))
        return fs_error(err, FS_ERR_FORMAT, "typed batch: link flags on a batch that is no link batch");
    L->meta_words = meta_words(L);
    return FS_OK;
}

/* Reserves `bytes` at the next 64-byte boundary; 0 on overflow. */
static int take(layout_t *L, size_t *at, int64_t count, int64_t elem)
{
    size_t bytes;
    if (count < 0 || elem < 0 || __builtin_mul_overflow((size_t)count, (size_t)elem, &bytes)) return 0;
    size_t start = (L->total + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    if (start < L->total || __builtin_add_overflow(start, bytes, &L->total)) return 0;
    *at = start;
    return 1;
}

static int64_t row_size(const int64_t *pick) /* dtype, dim */
{
    size_t s = fs_dtype_size((fs_dtype_t)pick[0]);
    return pick[0] > 0 && pick[0] < FS_DTYPE_COUNT_ && s && pick[1] >= 0 && pick[1] <= (1 << 24) ? (int64_t)s * pick[1] : -1;
}

/* F_JOINED: every edge type's one region of the hops' sources then
 * destinations, and one of their edge ids; each block's arrays inside
 * them, hop after hop. 0 on an overflow. */
static int join_edges(layout_t *L)
{
    const int64_t *m = L->meta;
    for (int64_t e = 0; e < L->E; e++) {
        int64_t total = 0;
        for (int64_t h = 0; h < L->H; h++) total += m[m_block(L, h * L->E + e) + 2];
        size_t pair, ids = 0;
        if (!take(L, &pair, 2 * total, 8) || ((L->flags & F_EIDS) && !take(L, &ids, total, 8))) return 0;
        size_t at = 0;
        for (int64_t h = 0; h < L->H; h++) {
            int64_t b = h * L->E + e;
            L->esrc[b] = pair + at, L->edst[b] = pair + 8 * (size_t)total + at, L->eid[b] = ids + at;
            at += 8 * (size_t)m[m_block(L, b) + 2];
        }
    }
    return 1;
}

/* Where every array lies, from the counts and the shape (which must be
 * in-range already: see check_shape). 0 on an overflow. */
static int layout_arrays(layout_t *L)
{
    int64_t T = L->T, E = L->E, G = L->G, B = L->H * L->E;
    size_t n = (size_t)(3 * T + T * L->NT + G + 4 * B + B * L->ET) + 1;
    if (!(L->mem = calloc(n, sizeof *L->mem))) return 0;
    size_t *p = L->mem;
    L->nodes = p, p += T, L->batch = p, p += T, L->time = p, p += T, L->ntab = p, p += T * L->NT;
    L->seed = p, p += G, L->doff = p, p += B, L->edst = p, p += B, L->esrc = p, p += B, L->eid = p, p += B;
    L->etab = p;
    const int64_t *m = L->meta;
    L->total = (size_t)(8 * H_WORDS_ + 8 * (int64_t)L->meta_words);
    int ok = take(L, &L->names, L->w[H_NAMES], 1);
    for (int64_t t = 0; t < T && ok; t++) {
        int64_t nn = m[m_type(L, t)];
        ok = take(L, &L->nodes[t], nn, 8) && (!(L->flags & F_BATCH) || take(L, &L->batch[t], nn, 8)) &&
             (!(L->flags & F_TIME) || take(L, &L->time[t], nn, 8));
        for (int64_t k = 0; k < L->NT && ok; k++) {
            const int64_t *pick = &m[m_ntab(L, t, k)];
            if (pick[0]) ok = take(L, &L->ntab[t * L->NT + k], nn, row_size(pick));
        }
    }
    for (int64_t g = 0; g < G && ok; g++) ok = take(L, &L->seed[g], m[m_group(L, g) + 1], 8);
    if (L->flags & F_JOINED) ok = ok && join_edges(L);
    for (int64_t b = 0; b < B && ok; b++) {
        const int64_t *blk = &m[m_block(L, b)];
        ok = take(L, &L->doff[b], blk[0] + 1, 8) &&
             ((L->flags & F_JOINED) ||
              (take(L, &L->edst[b], blk[2], 8) && take(L, &L->esrc[b], blk[2], 8) &&
               (!(L->flags & F_EIDS) || take(L, &L->eid[b], blk[2], 8))));
        for (int64_t k = 0; k < L->ET && ok; k++) {
            const int64_t *pick = &m[m_etab(L, b % E, k)];
            if (pick[0]) ok = take(L, &L->etab[b * L->ET + k], blk[2], row_size(pick));
        }
    }
    if (ok && (L->flags & F_LINK) && !(L->flags & F_TRIPLET)) {
        int64_t nl = L->w[H_LABELS];
        /* edge_label_index is one [2, nl] array: src row, then dst row (zero-copy for PyG) */
        ok = take(L, &L->lsrc, 2 * nl, 8) && take(L, &L->label, nl, 8) &&
             (!(L->flags & F_LTIME) || take(L, &L->ltime, nl, 8));
        L->ldst = L->lsrc + (size_t)nl * 8;
    }
    if (ok && (L->flags & F_TRIPLET)) {
        int64_t np = L->w[H_POS], kk;
        ok = !__builtin_mul_overflow(np, L->w[H_K], &kk) && take(L, &L->sidx, np, 8) && take(L, &L->dpos, np, 8) &&
             take(L, &L->dneg, kk, 8);
    }
    L->total = (L->total + 7) & ~(size_t)7;
    return ok;
}

static void layout_free(layout_t *L) { free(L->mem); }

/* ---- writing an image ----------------------------------------------------------- */

static int64_t *put_meta(layout_t *L, const fs_hetero_graph_t *g, const resolved_t *r, const fs_typed_result_t *res)
{
    int64_t *m = calloc(L->meta_words + 1, sizeof *m);
    if (!m) return NULL;
    for (int64_t t = 0; t < L->T; t++) {
        m[m_type(L, t)] = res->type[t].num_nodes;
        for (int64_t h = 0; h <= L->H; h++) m[m_type(L, t) + 1 + (size_t)h] = res->type[t].count_after[h];
        for (int64_t k = 0; k < L->NT; k++) {
            const table_pick_t *p = &r->ntab[t * L->NT + k];
            if (p->index >= 0) m[m_ntab(L, t, k)] = p->dtype, m[m_ntab(L, t, k) + 1] = p->dim;
        }
    }
    for (int64_t e = 0; e < L->E; e++) {
        m[m_etype(L, e)] = g->graph.view.etype[e].src_type, m[m_etype(L, e) + 1] = g->graph.view.etype[e].dst_type;
        for (int64_t k = 0; k < L->ET; k++) {
            const table_pick_t *p = &r->etab[e * L->ET + k];
            if (p->index >= 0) m[m_etab(L, e, k)] = p->dtype, m[m_etab(L, e, k) + 1] = p->dim;
        }
    }
    for (int64_t gi = 0; gi < L->G; gi++) {
        const fs_typed_seeds_t *s = &r->groups[gi];
        m[m_group(L, gi)] = s->type, m[m_group(L, gi) + 1] = s->count;
    }
    for (int64_t b = 0; b < L->H * L->E; b++) {
        const fs_block_t *blk = &res->block[b];
        m[m_block(L, b)] = blk->num_dst, m[m_block(L, b) + 1] = blk->num_src, m[m_block(L, b) + 2] = blk->num_edges;
    }
    return m;
}

static size_t names_bytes(const fs_dataset_t *ds)
{
    size_t n = 0;
    for (int t = 0; t < ds->num_node_types; t++) n += strlen(ds->node_types[t].name) + 1;
    for (int e = 0; e < ds->num_edge_types; e++) n += strlen(ds->edge_types[e].rel) + 1;
    return n;
}

static void put_names(char *at, const fs_dataset_t *ds)
{
    for (int t = 0; t < ds->num_node_types; t++) at = stpcpy(at, ds->node_types[t].name) + 1;
    for (int e = 0; e < ds->num_edge_types; e++) at = stpcpy(at, ds->edge_types[e].rel) + 1;
}

/* Zeroes the padding after an array that ends at `end`, up to the next
 * array's aligned start (or the image's end). The image is not cleared as
 * a whole: the feature rows are most of it and every array is written in
 * full, so clearing first cost a seventh of a batch's time; this way no
 * byte is left unset either (stale slot or heap bytes never reach a
 * client). */
static void zero_padding(char *img, const layout_t *L, size_t end)
{
    size_t next = (end + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    if (next > L->total) next = L->total;
    if (next > end) memset(img + end, 0, next - end);
}

static void put(char *img, const layout_t *L, size_t at, const void *src, int64_t count)
{
    size_t bytes = count > 0 ? (size_t)count * 8 : 0;
    if (src) memcpy(img + at, src, bytes);
    else memset(img + at, 0, bytes);
    zero_padding(img, L, at + bytes);
}

/* F_JOINED's regions: each hop's arrays in place, the padding zeroed only
 * after a region's end (after one hop's array lies the next hop's). */
static void put_joined(char *img, const layout_t *L, const fs_typed_result_t *res)
{
    for (int64_t e = 0; e < L->E; e++) {
        size_t end = 0, ids_end = 0;
        for (int64_t h = 0; h < L->H; h++) {
            int64_t b = h * L->E + e;
            const fs_block_t *blk = &res->block[b];
            size_t bytes = (size_t)blk->num_edges * 8;
            if (bytes) memcpy(img + L->esrc[b], blk->edge_src, bytes), memcpy(img + L->edst[b], blk->edge_dst, bytes);
            end = L->edst[b] + bytes;
            if (L->flags & F_EIDS) {
                if (bytes) memcpy(img + L->eid[b], blk->edge_ids, bytes);
                ids_end = L->eid[b] + bytes;
            }
        }
        zero_padding(img, L, end);
        if (L->flags & F_EIDS) zero_padding(img, L, ids_end);
    }
}

static fs_status_t put_rows(char *img, const layout_t *L, size_t at, const fs_table_view_t *v, const int64_t *ids,
                            int64_t n, fs_dtype_t dt, fs_pool_t *pool, fs_gather_counters_t *read, fs_error_t *err)
{
    zero_padding(img, L, at + (n > 0 ? (size_t)n * fs_dtype_size(dt) * (size_t)v->dim : 0));
    return n > 0 ? fs_gather_cpu(v, ids, n, dt, img + at, pool, read, err) : FS_OK;
}

/* `read` counts the rows gathered (fs_hetero_reads_t.features). */
static fs_status_t put_arrays(char *img, const layout_t *L, const fs_hetero_graph_t *g, const resolved_t *r,
                              const fs_typed_result_t *res, const fs_link_result_t *lres, fs_pool_t *pool,
                              fs_gather_counters_t *read, fs_error_t *err)
{
    fs_status_t st = FS_OK;
    zero_padding(img, L, (size_t)(8 * H_WORDS_ + 8 * (int64_t)L->meta_words)); /* before the names */
    put_names(img + L->names, g->ds);
    zero_padding(img, L, L->names + (size_t)L->w[H_NAMES]);
    for (int64_t t = 0; t < L->T && !st; t++) {
        const fs_typed_nodes_t *tn = &res->type[t];
        put(img, L, L->nodes[t], tn->nodes, tn->num_nodes);
        if (L->flags & F_BATCH) put(img, L, L->batch[t], tn->batch, tn->num_nodes);
        if (L->flags & F_TIME) put(img, L, L->time[t], tn->time, tn->num_nodes);
        for (int64_t k = 0; k < L->NT && !st; k++) {
            const table_pick_t *p = &r->ntab[t * L->NT + k];
            if (p->index >= 0)
                st = put_rows(img, L, L->ntab[t * L->NT + k], &g->node_views[t][p->index], tn->nodes, tn->num_nodes,
                              p->dtype, pool, read, err);
        }
    }
    for (int64_t gi = 0; gi < L->G; gi++) put(img, L, L->seed[gi], res->seed_local[gi], r->groups[gi].count);
    if (L->flags & F_JOINED) put_joined(img, L, res);
    for (int64_t b = 0; b < L->H * L->E && !st; b++) {
        const fs_block_t *blk = &res->block[b];
        put(img, L, L->doff[b], blk->dst_offsets, blk->num_dst + 1);
        if (!(L->flags & F_JOINED)) {
            put(img, L, L->edst[b], blk->edge_dst, blk->num_edges);
            put(img, L, L->esrc[b], blk->edge_src, blk->num_edges);
            if (L->flags & F_EIDS) put(img, L, L->eid[b], blk->edge_ids, blk->num_edges);
        }
        for (int64_t k = 0; k < L->ET && !st; k++) {
            const table_pick_t *p = &r->etab[(b % L->E) * L->ET + k];
            if (p->index >= 0)
                st = put_rows(img, L, L->etab[b * L->ET + k], &g->edge_views[b % L->E][p->index], blk->edge_ids,
                              blk->num_edges, p->dtype, pool, read, err);
        }
    }
    if (lres && !(L->flags & F_TRIPLET)) {
        put(img, L, L->lsrc, lres->label_src, lres->num_labels);
        put(img, L, L->ldst, lres->label_dst, lres->num_labels);
        put(img, L, L->label, lres->label, lres->num_labels);
        if (L->flags & F_LTIME) put(img, L, L->ltime, lres->label_time, lres->num_labels);
    }
    if (lres && (L->flags & F_TRIPLET)) {
        put(img, L, L->sidx, lres->src_index, r->link.count);
        put(img, L, L->dpos, lres->dst_pos_index, r->link.count);
        put(img, L, L->dneg, lres->dst_neg_index, r->link.count * lres->num_neg_per_src);
    }
    return st;
}

/* The header words of a sampled result. */
static void header_words(layout_t *L, const fs_hetero_graph_t *g, const resolved_t *r, const fs_hetero_req_t *req,
                         const fs_link_result_t *lres, size_t num_groups, int joined)
{
    const fs_dataset_t *ds = g->ds;
    int64_t *w = L->w;
    memset(w, 0, sizeof L->w);
    w[H_HOPS] = req->num_hops, w[H_TYPES] = ds->num_node_types, w[H_ETYPES] = ds->num_edge_types;
    w[H_GROUPS] = (int64_t)num_groups;
    w[H_NTABLES] = (int64_t)req->num_node_tables, w[H_ETABLES] = (int64_t)req->num_edge_tables;
    int64_t f = 0;
    if (r->treq.disjoint || r->treq.temporal != FS_TEMPORAL_OFF) f |= F_BATCH;
    if (r->treq.temporal != FS_TEMPORAL_OFF) f |= F_TIME;
    if (r->treq.want_edge_ids) f |= F_EIDS;
    if (joined) f |= F_JOINED;
    if (lres) {
        const fs_typed_etype_t *et = &g->graph.view.etype[r->link.etype];
        f |= F_LINK | (r->link.neg == FS_NEG_TRIPLET ? F_TRIPLET : 0) | (lres->label_time ? F_LTIME : 0);
        w[H_LSRC] = et->src_type, w[H_LDST] = et->dst_type;
        w[H_LABELS] = lres->num_labels, w[H_POS] = r->link.neg == FS_NEG_TRIPLET ? r->link.count : 0;
        w[H_K] = lres->num_neg_per_src;
    }
    w[H_FLAGS] = f;
    w[H_NAMES] = (int64_t)names_bytes(ds);
}

static fs_status_t sample(const fs_hetero_graph_t *g, fs_typed_sampler_t *s, resolved_t *r, size_t num_groups,
                          fs_typed_result_t *res, fs_link_result_t *lres, fs_error_t *err)
{
    const fs_typed_view_t *v = &g->graph.view;
    if (!r->is_link) return fs_typed_sample_cpu(s, v, &r->treq, r->groups, (int)num_groups, NULL, 0, res, err);
    fs_status_t st = fs_link_sample_cpu(s, v, &r->treq, &r->link, lres, err);
    *res = lres->sub;
    return st;
}

/* The result's neighbour lists and the ids taken from them
 * (fs_hetero_reads_t.topology): a block of an edge type without a fanout
 * at its hop read nothing. */
static void count_topology(const fs_hetero_graph_t *g, const resolved_t *r, const fs_typed_result_t *res,
                           fs_gather_counters_t *read)
{
    int H = r->treq.num_hops, E = g->graph.view.num_edge_types;
    for (int h = 0; h < H; h++)
        for (int e = 0; e < E; e++) {
            if (!r->fanout[e * H + h]) continue;
            const fs_block_t *b = &res->block[h * E + e];
            read->rows[0] += (uint64_t)b->num_dst;
            read->bytes[0] += (uint64_t)b->num_edges * fs_dtype_size(g->graph.view.etype[e].index_dtype);
        }
}

static void add_reads(fs_gather_counters_t *to, const fs_gather_counters_t *from)
{
    for (int k = 0; k < FS_MAX_TIERS; k++) to->rows[k] += from->rows[k], to->bytes[k] += from->bytes[k];
}

/* A link batch's two seed groups, which the kernel makes itself: the src
 * endpoints, then the dst endpoints with their negatives
 * (fs_link_sample_cpu). */
static void link_groups(const fs_hetero_graph_t *g, resolved_t *r, const fs_link_result_t *lres)
{
    const fs_typed_etype_t *et = &g->graph.view.etype[r->link.etype];
    int64_t B = r->link.count, triplet = r->link.neg == FS_NEG_TRIPLET;
    r->groups[0] = (fs_typed_seeds_t){.type = et->src_type, .count = triplet ? B : lres->num_labels};
    r->groups[1] = (fs_typed_seeds_t){.type = et->dst_type, .count = triplet ? B + B * lres->num_neg_per_src
                                                                             : lres->num_labels};
}

fs_status_t fs_hetero_run(const fs_hetero_graph_t *g, fs_typed_sampler_t *s, const fs_limits_t *limits,
                          const fs_hetero_seeds_t *groups, size_t num_groups, const fs_link_req_t *link,
                          const fs_hetero_req_t *req, int joined, fs_pool_t *pool, fs_hetero_alloc_fn alloc,
                          void *ctx, void **image, size_t *len, fs_hetero_reads_t *reads, fs_error_t *err)
{
    resolved_t r;
    layout_t L = {0};
    fs_typed_result_t res;
    fs_link_result_t lres = {0};
    fs_hetero_reads_t read = {0};
    *image = NULL, *len = 0;
    if (link) num_groups = 2;
    fs_status_t st = resolve(g, link ? NULL : groups, num_groups, link, req, &r, err);
    if (st == FS_OK)
        st = r.is_link ? fs_link_check(&g->graph.view, &r.treq, &r.link, err)
                       : fs_typed_check(&g->graph.view, &r.treq, r.groups, (int)num_groups, NULL, 0, err);
    if (st == FS_OK)
        st = fs_limits_check_typed(limits, &g->graph.view, &r.treq, r.seeds, r.node_row_bytes, r.edge_row_bytes, err);
    if (st == FS_OK) st = sample(g, s, &r, num_groups, &res, &lres, err);
    if (st == FS_OK && r.is_link) link_groups(g, &r, &lres);
    if (st == FS_OK) {
        header_words(&L, g, &r, req, r.is_link ? &lres : NULL, num_groups, joined);
        st = layout_counts(&L, err);
    }
    int64_t *meta = NULL;
    if (st == FS_OK && !(meta = put_meta(&L, g, &r, &res)))
        st = fs_error(err, FS_ERR_NOMEM, "out of memory for a typed batch's shape");
    L.meta = meta;
    if (st == FS_OK && !layout_arrays(&L)) st = fs_error(err, FS_ERR_RESOURCE, "typed batch: too large to lay out");
    /* no size check here: the worst case was held to max_response_bytes before sampling */
    char *img = NULL;
    if (st == FS_OK && !(img = alloc(ctx, L.total, err))) st = err->code ? err->code : FS_ERR_NOMEM;
    if (st == FS_OK) {
        L.w[H_TOTAL] = (int64_t)L.total;
        memcpy(img, MAGIC, 8);
        memcpy(img + 8, &L.w[1], 8 * (H_WORDS_ - 1));
        memcpy(img + 8 * H_WORDS_, meta, L.meta_words * 8);
        st = put_arrays(img, &L, g, &r, &res, r.is_link ? &lres : NULL, pool, &read.features, err);
    }
    if (st == FS_OK) {
        *image = img, *len = L.total;
        count_topology(g, &r, &res, &read.topology);
        if (reads) add_reads(&reads->features, &read.features), add_reads(&reads->topology, &read.topology);
    }
    free(meta);
    layout_free(&L);
    resolved_free(&r);
    return st;
}

/* ---- reading an image back ---------------------------------------------------------- */

uint64_t fs_hetero_image_bytes(const void *head, size_t len)
{
    int64_t total;
    if (len < FS_HETERO_HEADER_BYTES || memcmp(head, MAGIC, 8) != 0) return 0;
    memcpy(&total, (const char *)head + 8 * H_TOTAL, 8);
    return total >= FS_HETERO_HEADER_BYTES ? (uint64_t)total : 0;
}

/* The shape's values, before any array is laid out. */
static fs_status_t check_shape(const layout_t *L, fs_error_t *err)
{
    const int64_t *m = L->meta;
    for (int64_t t = 0; t < L->T; t++) {
        const int64_t *x = &m[m_type(L, t)];
        if (x[0] < 0 || x[0] > COUNT_CAP) return fs_error(err, FS_ERR_FORMAT, "typed batch: node type %lld's count", (long long)t);
        for (int64_t h = 0; h <= L->H; h++)
            if (x[1 + h] < (h ? x[h] : 0) || x[1 + h] > x[0])
                return fs_error(err, FS_ERR_FORMAT, "typed batch: node type %lld's count after hop %lld", (long long)t,
                                (long long)h);
        for (int64_t k = 0; k < L->NT; k++) {
            const int64_t *p = &m[m_ntab(L, t, k)];
            if (p[0] != 0 && row_size(p) < 0)
                return fs_error(err, FS_ERR_FORMAT, "typed batch: node table %lld of type %lld", (long long)k, (long long)t);
        }
    }
    for (int64_t e = 0; e < L->E; e++) {
        const int64_t *x = &m[m_etype(L, e)];
        if (x[0] < 0 || x[0] >= L->T || x[1] < 0 || x[1] >= L->T)
            return fs_error(err, FS_ERR_FORMAT, "typed batch: edge type %lld's endpoint types", (long long)e);
        for (int64_t k = 0; k < L->ET; k++) {
            const int64_t *p = &m[m_etab(L, e, k)];
            if (p[0] != 0 && row_size(p) < 0)
                return fs_error(err, FS_ERR_FORMAT, "typed batch: edge table %lld of edge type %lld", (long long)k,
                                (long long)e);
        }
    }
    for (int64_t gi = 0; gi < L->G; gi++) {
        const int64_t *x = &m[m_group(L, gi)];
        if (x[0] < 0 || x[0] >= L->T || x[1] < 0 || x[1] > COUNT_CAP)
            return fs_error(err, FS_ERR_FORMAT, "typed batch: seed group %lld", (long long)gi);
    }
    for (int64_t b = 0; b < L->H * L->E; b++) {
        const int64_t *x = &m[m_block(L, b)];
        int64_t src_n = m[m_type(L, m[m_etype(L, b % L->E)])], dst_n = m[m_type(L, m[m_etype(L, b % L->E) + 1])];
        if (x[0] < 0 || x[0] > dst_n || x[1] < 0 || x[1] > src_n || x[2] < 0 || x[2] > COUNT_CAP)
            return fs_error(err, FS_ERR_FORMAT, "typed batch: block %lld's counts", (long long)b);
    }
    return FS_OK;
}

static int ids_below(const int64_t *a, int64_t n, int64_t limit)
{
    for (int64_t i = 0; i < n; i++)
        if ((uint64_t)a[i] >= (uint64_t)limit) return 0;
    return 1;
}

#define AT(off) ((const int64_t *)(base + (off)))

/* The arrays' contents: offsets and local ids. */
static fs_status_t check_arrays(const layout_t *L, const char *base, fs_error_t *err)
{
    const int64_t *m = L->meta;
    for (int64_t gi = 0; gi < L->G; gi++)
        if (!ids_below(AT(L->seed[gi]), m[m_group(L, gi) + 1], m[m_type(L, m[m_group(L, gi)])]))
            return fs_error(err, FS_ERR_FORMAT, "typed batch: seed group %lld has a local id out of range", (long long)gi);
    for (int64_t b = 0; b < L->H * L->E; b++) {
        const int64_t *x = &m[m_block(L, b)], *off = AT(L->doff[b]);
        int64_t dst_n = m[m_type(L, m[m_etype(L, b % L->E) + 1])];
        int bad = off[0] != 0 || off[x[0]] != x[2];
        for (int64_t d = 0; d < x[0] && !bad; d++) bad = off[d + 1] < off[d];
        if (bad || !ids_below(AT(L->edst[b]), x[2], dst_n) || !ids_below(AT(L->esrc[b]), x[2], x[1]))
            return fs_error(err, FS_ERR_FORMAT, "typed batch: block %lld (hop %lld) has an offset or local id out of "
                            "range", (long long)b, (long long)(b / L->E));
    }
    int link = (L->flags & F_LINK) != 0; /* the endpoint types are checked (layout_counts) only on link batches */
    int64_t ns = link ? m[m_type(L, L->w[H_LSRC])] : 0, nd = link ? m[m_type(L, L->w[H_LDST])] : 0;
    if ((L->flags & F_LINK) && !(L->flags & F_TRIPLET) &&
        (!ids_below(AT(L->lsrc), L->w[H_LABELS], ns) || !ids_below(AT(L->ldst), L->w[H_LABELS], nd)))
        return fs_error(err, FS_ERR_FORMAT, "typed batch: edge_label_index has a local id out of range");
    if ((L->flags & F_TRIPLET) && (!ids_below(AT(L->sidx), L->w[H_POS], ns) || !ids_below(AT(L->dpos), L->w[H_POS], nd) ||
                                   !ids_below(AT(L->dneg), L->w[H_POS] * L->w[H_K], nd)))
        return fs_error(err, FS_ERR_FORMAT, "typed batch: a triplet index is out of range");
    return FS_OK;
}

/* Names: T node type names, then E relation names, each NUL-terminated. */
static fs_status_t read_names(const layout_t *L, const char *base, const char **names, fs_error_t *err)
{
    const char *p = base + L->names, *end = p + L->w[H_NAMES];
    for (int64_t i = 0; i < L->T + L->E; i++) {
        const char *z = memchr(p, 0, (size_t)(end - p));
        if (!z) return fs_error(err, FS_ERR_FORMAT, "typed batch: the names end early");
        names[i] = p, p = z + 1;
    }
    return FS_OK;
}

/* The public batch's tables, one allocation. */
typedef struct {
    fs_hetero_nodes_t *types;
    fs_hetero_etype_t *etypes;
    fs_block_t *blocks;
    fs_rows_t *ntab, *etab;
    int *group_type;
    int64_t *group_count;
    const int64_t **seed_local;
    const char **names;
} tables_t;

static void *carve(char **p, size_t bytes)
{
    void *r = *p;
    *p += (bytes + 15) & ~(size_t)15;
    return r;
}

static void *alloc_tables(const layout_t *L, tables_t *x)
{
    size_t T = (size_t)L->T, E = (size_t)L->E, B = (size_t)(L->H * L->E), G = (size_t)L->G;
    size_t sizes[] = {T * sizeof *x->types, E * sizeof *x->etypes, B * sizeof *x->blocks,
                      T * (size_t)L->NT * sizeof *x->ntab, B * (size_t)L->ET * sizeof *x->etab,
                      G * sizeof *x->group_type, G * sizeof *x->group_count, G * sizeof *x->seed_local,
                      (T + E) * sizeof *x->names};
    size_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) total += (sizes[i] + 15) & ~(size_t)15;
    char *mem = calloc(1, total + 16), *p = mem;
    if (!mem) return NULL;
    x->types = carve(&p, sizes[0]), x->etypes = carve(&p, sizes[1]), x->blocks = carve(&p, sizes[2]);
    x->ntab = carve(&p, sizes[3]), x->etab = carve(&p, sizes[4]), x->group_type = carve(&p, sizes[5]);
    x->group_count = carve(&p, sizes[6]), x->seed_local = carve(&p, sizes[7]), x->names = carve(&p, sizes[8]);
    return mem;
}

static void rows_at(fs_rows_t *out, const char *base, size_t off, const int64_t *pick, int64_t rows)
{
    *out = pick[0] ? (fs_rows_t){.rows = rows, .dim = pick[1], .dtype = (fs_dtype_t)pick[0], .data = base + off}
                   : (fs_rows_t){.rows = rows};
}

static void fill_batch(const layout_t *L, const char *base, const tables_t *x, fs_hetero_batch_t *b)
{
    const int64_t *m = L->meta;
    int64_t T = L->T, E = L->E;
    for (int64_t t = 0; t < T; t++) {
        int64_t n = m[m_type(L, t)];
        for (int64_t k = 0; k < L->NT; k++) rows_at(&x->ntab[t * L->NT + k], base, L->ntab[t * L->NT + k], &m[m_ntab(L, t, k)], n);
        x->types[t] = (fs_hetero_nodes_t){.name = x->names[t], .num_nodes = n, .nodes = AT(L->nodes[t]),
                                          .batch = (L->flags & F_BATCH) ? AT(L->batch[t]) : NULL,
                                          .time = (L->flags & F_TIME) ? AT(L->time[t]) : NULL,
                                          .count_after = &m[m_type(L, t) + 1], .tables = &x->ntab[t * L->NT]};
    }
    for (int64_t e = 0; e < E; e++) {
        int s = (int)m[m_etype(L, e)], d = (int)m[m_etype(L, e) + 1];
        x->etypes[e] = (fs_hetero_etype_t){.src = x->names[s], .rel = x->names[T + e], .dst = x->names[d],
                                           .src_type = s, .dst_type = d};
    }
    for (int64_t i = 0; i < L->H * E; i++) {
        const int64_t *c = &m[m_block(L, i)];
        x->blocks[i] = (fs_block_t){.num_dst = c[0], .num_src = c[1], .num_edges = c[2], .dst_offsets = AT(L->doff[i]),
                                    .edge_dst = AT(L->edst[i]), .edge_src = AT(L->esrc[i]),
                                    .edge_ids = (L->flags & F_EIDS) ? AT(L->eid[i]) : NULL};
        for (int64_t k = 0; k < L->ET; k++) rows_at(&x->etab[i * L->ET + k], base, L->etab[i * L->ET + k], &m[m_etab(L, i % E, k)], c[2]);
    }
    for (int64_t gi = 0; gi < L->G; gi++) {
        x->group_type[gi] = (int)m[m_group(L, gi)], x->group_count[gi] = m[m_group(L, gi) + 1];
        x->seed_local[gi] = AT(L->seed[gi]);
    }
    *b = (fs_hetero_batch_t){.num_hops = (int)L->H, .num_node_types = (int)T, .num_edge_types = (int)E,
                             .types = x->types, .etypes = x->etypes, .blocks = x->blocks,
                             .num_node_tables = (size_t)L->NT, .num_edge_tables = (size_t)L->ET, .edge_tables = x->etab,
                             .num_groups = (int)L->G, .group_type = x->group_type, .group_count = x->group_count,
                             .seed_local = x->seed_local};
    if (!(L->flags & F_LINK)) return;
    b->link_src_type = (int)L->w[H_LSRC], b->link_dst_type = (int)L->w[H_LDST];
    if (L->flags & F_TRIPLET) {
        b->num_pos = L->w[H_POS], b->num_neg_per_src = L->w[H_K];
        b->src_index = AT(L->sidx), b->dst_pos_index = AT(L->dpos), b->dst_neg_index = AT(L->dneg);
    } else {
        b->num_labels = L->w[H_LABELS];
        b->label_src = AT(L->lsrc), b->label_dst = AT(L->ldst), b->label = AT(L->label);
        b->label_time = (L->flags & F_LTIME) ? AT(L->ltime) : NULL;
    }
}

fs_status_t fs_hetero_index(const void *image, size_t len, int received, fs_hetero_index_t *ix, fs_error_t *err)
{
    const char *base = image;
    layout_t L = {0};
    tables_t x = {0};
    memset(ix, 0, sizeof *ix);
    if (((uintptr_t)image & 7) || len < 8 * H_WORDS_ || memcmp(base, MAGIC, 8) != 0)
        return fs_error(err, FS_ERR_FORMAT, "typed batch: not a batch image (%zu bytes)", len);
    memcpy(&L.w[1], base + 8, 8 * (H_WORDS_ - 1));
    fs_status_t st = layout_counts(&L, err);
    if (st == FS_OK && (L.w[H_TOTAL] < 0 || (uint64_t)L.w[H_TOTAL] != len))
        st = fs_error(err, FS_ERR_FORMAT, "typed batch: %zu bytes received, the header says %lld", len,
                      (long long)L.w[H_TOTAL]);
    if (st == FS_OK && (len - 8 * H_WORDS_) / 8 < L.meta_words)
        st = fs_error(err, FS_ERR_FORMAT, "typed batch: the shape is cut short");
    L.meta = (const int64_t *)(base + 8 * H_WORDS_);
    if (st == FS_OK) st = check_shape(&L, err);
    if (st == FS_OK && (!layout_arrays(&L) || L.total != len))
        st = fs_error(err, FS_ERR_FORMAT, "typed batch: its arrays need %zu bytes, it has %zu", L.total, len);
    if (st == FS_OK && received) st = check_arrays(&L, base, err);
    if (st == FS_OK && !(ix->mem = alloc_tables(&L, &x)))
        st = fs_error(err, FS_ERR_NOMEM, "out of memory reading a typed batch");
    if (st == FS_OK) st = read_names(&L, base, x.names, err);
    if (st == FS_OK) fill_batch(&L, base, &x, &ix->batch);
    layout_free(&L);
    if (st != FS_OK) fs_hetero_index_free(ix);
    return st;
}

void fs_hetero_index_free(fs_hetero_index_t *ix)
{
    free(ix->mem);
    memset(ix, 0, sizeof *ix);
}
