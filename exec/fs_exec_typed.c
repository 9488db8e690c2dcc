/* fs_exec_typed.c — typed and link batches through the executor's stages
 * (fs_exec.h, fs_exec_typed): a public request (fs_hetero_req_t, with seed
 * groups or fs_link_req_t; featstore/types.h) names node types, edge types
 * and tables. It is resolved against the dataset's typed graph, checked
 * against the limits (its worst case, before any work: fs_limits.h),
 * sampled by the typed engine (kernels/fs_typed.h), and described to the
 * image codec (proto/fs_hetero.h), which lays the batch out and writes it
 * into the host's region, the rows gathered in place through put_rows
 * below. The unix:// client runs it in its own process into a result slot;
 * the server runs it for gRPC and streams the image.
 *
 * Design: the description points at the sampler's arrays (nothing is
 * copied before the image is written) and carries the tables' dtypes and
 * dims; put_rows resolves a table back to its view. A typed batch reads
 * the dataset's own arrays (the graph's views), so all its reads are tier
 * 0's. */
#include "fs_exec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fs_hetero.h"

/* ---- the graph --------------------------------------------------------------- */

static fs_status_t views_of(const fs_table_t *tables, int n, fs_table_view_t **out)
{
    if (!(*out = calloc((size_t)n + 1, sizeof **out))) return FS_ERR_NOMEM;
    for (int i = 0; i < n; i++) {
        const fs_table_t *t = &tables[i];
        fs_table_view_t *v = &(*out)[i];
        *v = (fs_table_view_t){.dtype = t->dtype, .num_rows = t->rows, .dim = t->dim, .row_bytes = t->row_bytes,
                               .num_tiers = 1, .codec = t->codec};
        v->tier[0] = (fs_tier_ref_t){.kind = FS_TIER_HOST, .device = -1, .base = t->data, .rows = t->rows};
        if (t->on_disk) v->num_tiers = 0, v->remote = t->remote; /* the host's disk table (fs_table_t.on_disk) */
    }
    return FS_OK;
}

fs_status_t fs_exec_typed_graph_init(fs_exec_typed_graph_t *g, const fs_dataset_t *ds, fs_error_t *err)
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
        fs_exec_typed_graph_free(g);
        return fs_error(err, FS_ERR_NOMEM, "out of memory describing the typed graph");
    }
    return FS_OK;
}

void fs_exec_typed_graph_free(fs_exec_typed_graph_t *g)
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
        if (t->dtype == FS_DTYPE_I64) want = FS_DTYPE_STORED; /* labels: integers, whatever the features get */
        fs_dtype_t dt;
        int64_t dim;
        fs_status_t st = fs_codec_served(t->codec, t->dtype, t->dim, want, name, &dt, &dim, err);
        if (st != FS_OK) return fs_error_prefix(err, "%s", owner), st;
        *out = (table_pick_t){.index = i, .dtype = dt, .dim = dim};
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
    if (!fs_out_dtype_valid(req->out_dtype))
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

static fs_status_t resolve(const fs_exec_typed_graph_t *g, const fs_hetero_seeds_t *groups, size_t num_groups,
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

/* ---- stage 2 and what it read ---------------------------------------------- */

static fs_status_t sample(const fs_exec_typed_graph_t *g, fs_typed_sampler_t *s, resolved_t *r, size_t num_groups,
                          fs_typed_result_t *res, fs_link_result_t *lres, fs_error_t *err)
{
    const fs_typed_view_t *v = &g->graph.view;
    if (!r->is_link) return fs_typed_sample_cpu(s, v, &r->treq, r->groups, (int)num_groups, NULL, 0, res, err);
    fs_status_t st = fs_link_sample_cpu(s, v, &r->treq, &r->link, lres, err);
    *res = lres->sub;
    return st;
}

/* The result's neighbour lists and the ids taken from them
 * (fs_exec_reads_t.topology): a block of an edge type without a fanout
 * at its hop read nothing. */
static void count_topology(const fs_exec_typed_graph_t *g, const resolved_t *r, const fs_typed_result_t *res,
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
static void link_groups(const fs_exec_typed_graph_t *g, resolved_t *r, const fs_link_result_t *lres)
{
    const fs_typed_etype_t *et = &g->graph.view.etype[r->link.etype];
    int64_t B = r->link.count, triplet = r->link.neg == FS_NEG_TRIPLET;
    r->groups[0] = (fs_typed_seeds_t){.type = et->src_type, .count = triplet ? B : lres->num_labels};
    r->groups[1] = (fs_typed_seeds_t){.type = et->dst_type, .count = triplet ? B + B * lres->num_neg_per_src
                                                                             : lres->num_labels};
}


/* ---- the batch described to the codec ------------------------------------------ */

/* Everything the codec writes, pointing into the result; the tables'
 * dtypes and dims from the request's picks (their rows: put_rows). */
typedef struct {
    fs_hetero_batch_t b;
    void *mem;
} described_t;

static fs_rows_t rows_of(const table_pick_t *p)
{
    return p->index >= 0 ? (fs_rows_t){.dim = p->dim, .dtype = p->dtype} : (fs_rows_t){0};
}

static void describe_types(const fs_exec_typed_graph_t *g, const resolved_t *r, size_t NT,
                           const fs_typed_result_t *res, fs_hetero_nodes_t *types, fs_rows_t *ntab)
{
    const fs_dataset_t *ds = g->ds;
    for (int t = 0; t < ds->num_node_types; t++) {
        const fs_typed_nodes_t *n = &res->type[t];
        for (size_t k = 0; k < NT; k++) ntab[t * NT + k] = rows_of(&r->ntab[t * NT + k]);
        types[t] = (fs_hetero_nodes_t){.name = ds->node_types[t].name, .num_nodes = n->num_nodes, .nodes = n->nodes,
                                       .batch = n->batch, .time = n->time, .count_after = n->count_after,
                                       .tables = &ntab[t * NT]};
    }
}

static void describe_etypes(const fs_exec_typed_graph_t *g, const resolved_t *r, size_t ET, fs_hetero_etype_t *etypes,
                            fs_rows_t *etab)
{
    const fs_dataset_t *ds = g->ds;
    for (int e = 0; e < ds->num_edge_types; e++) {
        const fs_edge_type_t *x = &ds->edge_types[e];
        const fs_typed_etype_t *v = &g->graph.view.etype[e];
        for (size_t k = 0; k < ET; k++) etab[e * ET + k] = rows_of(&r->etab[e * ET + k]);
        etypes[e] = (fs_hetero_etype_t){.src = x->src, .rel = x->rel, .dst = x->dst, .src_type = v->src_type,
                                        .dst_type = v->dst_type};
    }
}

static void describe_link(const fs_exec_typed_graph_t *g, const resolved_t *r, const fs_link_result_t *lres,
                          fs_hetero_batch_t *b)
{
    const fs_typed_etype_t *et = &g->graph.view.etype[r->link.etype];
    b->link_src_type = et->src_type, b->link_dst_type = et->dst_type;
    b->num_labels = lres->num_labels;
    b->label_src = lres->label_src, b->label_dst = lres->label_dst, b->label = lres->label;
    b->label_time = lres->label_time;
    b->num_pos = r->link.neg == FS_NEG_TRIPLET ? r->link.count : 0, b->num_neg_per_src = lres->num_neg_per_src;
    b->src_index = lres->src_index, b->dst_pos_index = lres->dst_pos_index, b->dst_neg_index = lres->dst_neg_index;
}

/* The FS_HETERO_* flags of the image: what the request asked for. */
static int image_flags(const resolved_t *r, const fs_link_result_t *lres, int joined)
{
    int f = 0;
    if (r->treq.disjoint || r->treq.temporal != FS_TEMPORAL_OFF) f |= FS_HETERO_BATCH;
    if (r->treq.temporal != FS_TEMPORAL_OFF) f |= FS_HETERO_TIME;
    if (r->treq.want_edge_ids) f |= FS_HETERO_EDGE_IDS;
    if (joined) f |= FS_HETERO_JOINED;
    if (lres)
        f |= FS_HETERO_LINK | (r->link.neg == FS_NEG_TRIPLET ? FS_HETERO_TRIPLET : 0) |
             (lres->label_time ? FS_HETERO_LABEL_TIME : 0);
    return f;
}

static fs_status_t describe(const fs_exec_typed_graph_t *g, const resolved_t *r, const fs_hetero_req_t *req,
                            size_t num_groups, const fs_typed_result_t *res, const fs_link_result_t *lres,
                            described_t *d, fs_error_t *err)
{
    const fs_dataset_t *ds = g->ds;
    size_t T = (size_t)ds->num_node_types, E = (size_t)ds->num_edge_types, G = num_groups;
    size_t NT = req->num_node_tables, ET = req->num_edge_tables;
    size_t bytes = T * sizeof(fs_hetero_nodes_t) + E * sizeof(fs_hetero_etype_t) +
                   (T * NT + E * ET) * sizeof(fs_rows_t) + G * (sizeof(int64_t) + sizeof(int)) + 8;
    char *p = d->mem = calloc(1, bytes);
    if (!p) return fs_error(err, FS_ERR_NOMEM, "out of memory for a typed batch's description");
    fs_hetero_nodes_t *types = (void *)p;
    fs_hetero_etype_t *etypes = (void *)(types + T);
    fs_rows_t *ntab = (void *)(etypes + E), *etab = ntab + T * NT;
    int64_t *group_count = (void *)(etab + E * ET);
    int *group_type = (void *)(group_count + G);
    describe_types(g, r, NT, res, types, ntab);
    describe_etypes(g, r, ET, etypes, etab);
    for (size_t i = 0; i < G; i++) group_type[i] = r->groups[i].type, group_count[i] = r->groups[i].count;
    d->b = (fs_hetero_batch_t){.num_hops = req->num_hops, .num_node_types = (int)T, .num_edge_types = (int)E,
                               .types = types, .etypes = etypes, .blocks = res->block, .num_node_tables = NT,
                               .num_edge_tables = ET, .edge_tables = etab, .num_groups = (int)G,
                               .group_type = group_type, .group_count = group_count, .seed_local = res->seed_local};
    if (lres) describe_link(g, r, lres, &d->b);
    return FS_OK;
}

/* ---- stage 4: the rows, gathered into the image as the codec writes it ----------- */

typedef struct {
    const fs_exec_typed_graph_t *g;
    const resolved_t *r;
    size_t NT, ET;
    fs_pool_t *pool;
    fs_gather_counters_t *read;
    const fs_exec_t *x;            /* its skip_* */
    char *hole, *hole_end;         /* the skipped rows' bytes in the image, or NULL */
} rows_ctx_t;

static fs_status_t put_rows(void *ctx, int edge, int64_t owner, int64_t k, const int64_t *ids, int64_t n, void *out,
                            fs_error_t *err)
{
    rows_ctx_t *c = ctx;
    const table_pick_t *p = edge ? &c->r->etab[(size_t)owner * c->ET + (size_t)k]
                                 : &c->r->ntab[(size_t)owner * c->NT + (size_t)k];
    const fs_table_view_t *v = edge ? &c->g->edge_views[owner][p->index] : &c->g->node_views[owner][p->index];
    const fs_exec_t *x = c->x;
    if (edge || owner != 0 || !x->skip_rank || k != x->skip_table)
        return fs_gather_cpu(v, ids, n, p->dtype, out, c->pool, c->read, err);
    int64_t *kept = malloc((size_t)(n ? n : 1) * sizeof *kept), m = 0; /* the trainer's cache has the others */
    if (!kept) return fs_error(err, FS_ERR_NOMEM, "out of memory for %lld ids", (long long)n);
    m = fs_exec_uncached(x->skip_rank, x->skip_below, ids, n, kept);
    fs_status_t st = fs_gather_cpu(v, kept, m, p->dtype, out, c->pool, c->read, err);
    free(kept);
    size_t row = (size_t)p->dim * fs_dtype_size(p->dtype);
    c->hole = (char *)out + (size_t)m * row, c->hole_end = (char *)out + (size_t)n * row;
    return st;
}

/* The image's memory: the host's region, grown to it. */
static void *region_alloc(void *ctx, size_t bytes, fs_error_t *err)
{
    fs_exec_region_t *into = ctx;
    return into->grow(into, bytes, err) == FS_OK ? into->base : NULL;
}

/* ---- stages 1-5 -------------------------------------------------------------- */

static fs_status_t check(fs_exec_t *x, resolved_t *r, size_t num_groups, fs_error_t *err)
{
    const fs_typed_view_t *v = &x->typed->graph.view;
    fs_status_t st = r->is_link ? fs_link_check(v, &r->treq, &r->link, err)
                                : fs_typed_check(v, &r->treq, r->groups, (int)num_groups, NULL, 0, err);
    if (st == FS_OK)
        st = fs_limits_check_typed(x->limits, v, &r->treq, r->seeds, r->node_row_bytes, r->edge_row_bytes, err);
    return st;
}

fs_status_t fs_exec_typed(fs_exec_t *x, const fs_hetero_seeds_t *groups, size_t num_groups, const fs_link_req_t *link,
                          const fs_hetero_req_t *req, int joined, fs_exec_region_t *into, size_t *len,
                          fs_error_t *err)
{
    const fs_exec_typed_graph_t *g = x->typed;
    resolved_t r;
    fs_typed_result_t res;
    fs_link_result_t lres = {0};
    fs_exec_reads_t read = {0};
    described_t d = {0};
    void *image = NULL;
    *len = 0;
    if (link) num_groups = 2;
    fs_status_t st = resolve(g, link ? NULL : groups, num_groups, link, req, &r, err);
    if (st == FS_OK) st = check(x, &r, num_groups, err);
    if (st == FS_OK && into->take) st = into->take(into, err);
    if (st == FS_OK) st = sample(g, x->typed_sampler, &r, num_groups, &res, &lres, err);
    if (st == FS_OK && r.is_link) link_groups(g, &r, &lres);
    /* no result check: the worst case was held to max_response_bytes before sampling */
    if (st == FS_OK) st = describe(g, &r, req, num_groups, &res, r.is_link ? &lres : NULL, &d, err);
    rows_ctx_t rc = {g, &r, req->num_node_tables, req->num_edge_tables, x->pool, &read.features, x, NULL, NULL};
    if (st == FS_OK)
        st = fs_hetero_encode(&d.b, image_flags(&r, r.is_link ? &lres : NULL, joined), region_alloc, into, put_rows,
                              &rc, &image, len, err);
    x->skip_hole_at = rc.hole ? (size_t)(rc.hole - (char *)image) : 0;
    x->skip_hole_end = rc.hole ? (size_t)(rc.hole_end - (char *)image) : 0;
    if (st == FS_OK) {
        count_topology(g, &r, &res, &read.topology);
        add_reads(&x->reads->features, &read.features), add_reads(&x->reads->topology, &read.topology);
    }
    free(d.mem);
    resolved_free(&r);
    return st;
}
