/* fs_wire_typed.c — the typed requests (api_version 2) on both gRPC ends
 * (see fs_wire.h): HeteroSampleRequest and LinkSampleRequest encoded from
 * the public structs, and decoded on the server into fs_hetero_req_t and
 * fs_link_req_t.
 *
 * Encoding checks only what it needs to be right (names within
 * FS_TYPE_NAME_MAX, arrays present for their counts); the server's engine
 * checks the rest. Decoding takes untrusted bytes, so every list is bounded
 * (FS_WIRE_MAX_FANOUTS, _TABLES, _GROUPS) as it grows, and every per-id
 * array must have one value per id or none. Lists of any length go through
 * fs_pb's callbacks; the typed answer, a batch image, travels as
 * BatchImageChunks (fs_wire.c, beside the other chunk messages). */
#include "fs_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- typed requests (api_version 2) ------------------------------------------------ */

/* -- encoding -- */

/* Type and relation names travel in fields of FS_TYPE_NAME_MAX bytes
 * (featstore.options' max_size): the one name limit (fs_types.h). */
#define SAME_AS_NAME_LIMIT(type, field) \
    _Static_assert(sizeof(((type *)0)->field) == FS_TYPE_NAME_MAX, #type "." #field ": max_size != FS_TYPE_NAME_MAX")
SAME_AS_NAME_LIMIT(featstore_v1_Fanout, src);
SAME_AS_NAME_LIMIT(featstore_v1_Fanout, rel);
SAME_AS_NAME_LIMIT(featstore_v1_Fanout, dst);
SAME_AS_NAME_LIMIT(featstore_v1_SeedGroup, type);
SAME_AS_NAME_LIMIT(featstore_v1_LinkSampleRequest, src);
SAME_AS_NAME_LIMIT(featstore_v1_LinkSampleRequest, rel);
SAME_AS_NAME_LIMIT(featstore_v1_LinkSampleRequest, dst);
SAME_AS_NAME_LIMIT(featstore_v1_NodeTypeInfo, name);
SAME_AS_NAME_LIMIT(featstore_v1_EdgeTypeInfo, src);
SAME_AS_NAME_LIMIT(featstore_v1_EdgeTypeInfo, rel);
SAME_AS_NAME_LIMIT(featstore_v1_EdgeTypeInfo, dst);

static fs_status_t check_name(const char *name, const char *what, fs_error_t *err)
{
    if (name && strlen(name) >= FS_TYPE_NAME_MAX)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s: name '%.40s...' is longer than %d characters (type and "
                        "relation names are 1..%d)", what, name, FS_TYPE_NAME_MAX - 1, FS_TYPE_NAME_MAX - 1);
    return FS_OK;
}

static void copy_name(char *field, const char *name) { snprintf(field, FS_TYPE_NAME_MAX, "%s", name ? name : ""); }

static bool get_fanout(void *ctx, size_t i, void *elem)
{
    const fs_wire_hetero_out_t *o = ctx;
    const fs_hetero_fanout_t *f = &o->req->fanouts[i];
    featstore_v1_Fanout *m = elem;
    copy_name(m->src, f->src), copy_name(m->rel, f->rel), copy_name(m->dst, f->dst);
    m->fanout_count = (pb_size_t)o->req->num_hops;
    for (int h = 0; h < o->req->num_hops; h++) m->fanout[h] = f->fanout[h];
    return true;
}

static const char *get_node_table(void *ctx, size_t i) { return ((const fs_wire_hetero_out_t *)ctx)->req->node_tables[i]; }
static const char *get_edge_table(void *ctx, size_t i) { return ((const fs_wire_hetero_out_t *)ctx)->req->edge_tables[i]; }

static bool get_group(void *ctx, size_t i, void *elem)
{
    fs_wire_hetero_out_t *o = ctx;
    const fs_hetero_seeds_t *g = &o->groups[i];
    featstore_v1_SeedGroup *m = elem;
    size_t bytes = g->count > 0 ? (size_t)g->count * sizeof(int64_t) : 0;
    copy_name(m->type, g->type);
    fs_wire_set_bytes(&m->ids, &o->gids, g->ids, bytes);
    fs_wire_set_bytes(&m->time, &o->gtime, g->time, o->req->temporal != FS_TEMPORAL_OFF && g->time ? bytes : 0);
    return true;
}

/* The sampling half: what encoding needs to be right (the rest the server checks). */
static fs_status_t sampling_out(const fs_hetero_req_t *req, fs_wire_hetero_out_t *o, featstore_v1_TypedSampling *m,
                                fs_error_t *err)
{
    if (req->num_hops < 1 || req->num_hops > FS_MAX_HOPS)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%d hops requested, must be 1..%d", req->num_hops, FS_MAX_HOPS);
    if (req->num_fanouts > 0 && !req->fanouts)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "num_fanouts is %zu but fanouts is NULL", req->num_fanouts);
    if ((req->num_node_tables && !req->node_tables) || (req->num_edge_tables && !req->edge_tables))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "a table count is set but its name list is NULL");
    if (!fs_out_dtype_valid(req->out_dtype))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "unknown out_dtype %d", (int)req->out_dtype);
    for (size_t i = 0; i < req->num_fanouts; i++) {
        const fs_hetero_fanout_t *f = &req->fanouts[i];
        fs_status_t st = check_name(f->src, "fanouts", err);
        if (st == FS_OK) st = check_name(f->rel, "fanouts", err);
        if (st == FS_OK) st = check_name(f->dst, "fanouts", err);
        if (st != FS_OK) return st;
    }
    for (size_t k = 0; k < req->num_node_tables; k++)
        if (!req->node_tables[k]) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "node table %zu is NULL", k);
    for (size_t k = 0; k < req->num_edge_tables; k++)
        if (!req->edge_tables[k]) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "edge table %zu is NULL", k);
    o->req = req;
    o->fanouts = (fs_pb_list_t){featstore_v1_Fanout_fields, sizeof(featstore_v1_Fanout), req->num_fanouts,
                                .get = get_fanout, .ctx = o};
    o->node_tables = (fs_pb_strings_t){req->num_node_tables, get_node_table, NULL, o};
    o->edge_tables = (fs_pb_strings_t){req->num_edge_tables, get_edge_table, NULL, o};
    *m = (featstore_v1_TypedSampling)featstore_v1_TypedSampling_init_zero;
    m->num_hops = (uint32_t)req->num_hops;
    fs_pb_set_list(&m->fanouts, &o->fanouts);
    m->modes_count = (pb_size_t)req->num_hops;
    for (int h = 0; h < req->num_hops; h++) m->modes[h] = (featstore_v1_SampleMode)req->mode[h];
    m->seed = req->seed;
    m->want_edge_ids = req->want_edge_ids != 0;
    m->frontier = (featstore_v1_Frontier)req->frontier;
    m->disjoint = req->disjoint != 0;
    m->temporal = (featstore_v1_Temporal)req->temporal;
    m->strict = req->strict != 0;
    m->window = req->window;
    m->joined_edges = true; /* this library reads both layouts (fs_hetero.c) */
    fs_pb_set_strings(&m->node_tables, &o->node_tables);
    fs_pb_set_strings(&m->edge_tables, &o->edge_tables);
    snprintf(m->out_dtype, sizeof m->out_dtype, "%s", fs_out_dtype_name(req->out_dtype));
    return FS_OK;
}

fs_status_t fs_wire_hetero_request(const fs_hetero_seeds_t *groups, size_t num_groups, const fs_hetero_req_t *req,
                                   fs_wire_hetero_out_t *out, featstore_v1_HeteroSampleRequest *msg, fs_error_t *err)
{
    memset(out, 0, sizeof *out);
    *msg = (featstore_v1_HeteroSampleRequest)featstore_v1_HeteroSampleRequest_init_zero;
    if (num_groups > 0 && !groups)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%zu seed groups but the array is NULL", num_groups);
    for (size_t i = 0; i < num_groups; i++) {
        const fs_hetero_seeds_t *g = &groups[i];
        fs_status_t st = check_name(g->type, "seeds", err);
        if (st != FS_OK) return st;
        if (g->count < 0 || (g->count > 0 && !g->ids))
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "seeds of '%s': count %lld with %s ids",
                            g->type ? g->type : "(null)", (long long)g->count, g->ids ? "some" : "no");
    }
    fs_status_t st = sampling_out(req, out, &msg->sampling, err);
    if (st != FS_OK) return st;
    out->groups = groups;
    out->group_list = (fs_pb_list_t){featstore_v1_SeedGroup_fields, sizeof(featstore_v1_SeedGroup), num_groups,
                                     .get = get_group, .ctx = out};
    msg->api_version = FS_WIRE_API_VERSION_TYPED;
    msg->has_sampling = true;
    fs_pb_set_list(&msg->groups, &out->group_list);
    return FS_OK;
}

fs_status_t fs_wire_link_request(const fs_link_req_t *link, const fs_hetero_req_t *req, fs_wire_hetero_out_t *out,
                                 featstore_v1_LinkSampleRequest *msg, fs_error_t *err)
{
    memset(out, 0, sizeof *out);
    *msg = (featstore_v1_LinkSampleRequest)featstore_v1_LinkSampleRequest_init_zero;
    fs_status_t st = check_name(link->src, "link seed edges", err);
    if (st == FS_OK) st = check_name(link->rel, "link seed edges", err);
    if (st == FS_OK) st = check_name(link->dst, "link seed edges", err);
    if (st != FS_OK) return st;
    if (link->count < 0 || (link->count > 0 && (!link->src_ids || !link->dst_ids)))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "link sample: bad seed edge arrays (count %lld, src_ids %s, "
                        "dst_ids %s)", (long long)link->count, link->src_ids ? "set" : "NULL",
                        link->dst_ids ? "set" : "NULL");
    if ((st = sampling_out(req, out, &msg->sampling, err)) != FS_OK) return st;
    size_t bytes = link->count > 0 ? (size_t)link->count * sizeof(int64_t) : 0;
    msg->api_version = FS_WIRE_API_VERSION_TYPED;
    msg->has_sampling = true;
    copy_name(msg->src, link->src), copy_name(msg->rel, link->rel), copy_name(msg->dst, link->dst);
    fs_wire_set_bytes(&msg->src_ids, &out->src_ids, link->src_ids, bytes);
    fs_wire_set_bytes(&msg->dst_ids, &out->dst_ids, link->dst_ids, bytes);
    fs_wire_set_bytes(&msg->label, &out->label, link->label, link->label ? bytes : 0);
    fs_wire_set_bytes(&msg->time, &out->time, link->time, req->temporal != FS_TEMPORAL_OFF && link->time ? bytes : 0);
    msg->neg = (featstore_v1_NegativeMode)link->neg;
    msg->amount = link->amount;
    msg->neg_weighted = link->neg_weighted != 0;
    msg->strict_negatives = link->strict != 0;
    msg->keep_seed_edges = link->keep_seed_edges != 0;
    return FS_OK;
}

/* -- decoding -- */

static bool refuse(fs_wire_hetero_in_t *in, const char *what, size_t max)
{
    snprintf(in->problem, sizeof in->problem, "more than %zu %s", max, what);
    return false;
}

static bool put_fanout(void *ctx, const void *elem)
{
    fs_wire_hetero_in_t *in = ctx;
    if (in->fanout_msgs.count >= FS_WIRE_MAX_FANOUTS) return refuse(in, "fanouts (edge types)", FS_WIRE_MAX_FANOUTS);
    fs_pb_array_t *a = &in->fanout_msgs;
    if (a->count == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 8;
        void *p = realloc(a->items, cap * sizeof(featstore_v1_Fanout));
        if (!p) return false;
        a->items = p, a->cap = cap;
    }
    memcpy((featstore_v1_Fanout *)a->items + a->count++, elem, sizeof(featstore_v1_Fanout));
    return true;
}

static bool put_name_into(fs_wire_hetero_in_t *in, fs_wire_names_t *l, const char *s, const char *what)
{
    if (l->n >= FS_WIRE_MAX_TABLES) return refuse(in, what, FS_WIRE_MAX_TABLES);
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 4;
        char **p = realloc(l->v, cap * sizeof *p);
        if (!p) return false;
        l->v = p, l->cap = cap;
    }
    if (!(l->v[l->n] = strdup(s))) return false;
    l->n++;
    return true;
}

static bool put_node_table(void *ctx, const char *s, size_t len)
{
    (void)len;
    fs_wire_hetero_in_t *in = ctx;
    return put_name_into(in, &in->node_tables, s, "node tables");
}

static bool put_edge_table(void *ctx, const char *s, size_t len)
{
    (void)len;
    fs_wire_hetero_in_t *in = ctx;
    return put_name_into(in, &in->edge_tables, s, "edge tables");
}

static void init_i64_buf(fs_wire_buf_t *b) { *b = (fs_wire_buf_t){.flags = FS_WIRE_BORROW, .align = sizeof(int64_t)}; }

/* A seed group's element: its arrays decode into a fresh record. */
static bool start_group(void *ctx, void *elem)
{
    fs_wire_hetero_in_t *in = ctx;
    featstore_v1_SeedGroup *m = elem;
    if (in->num_group_bufs >= FS_WIRE_MAX_GROUPS) return refuse(in, "seed groups", FS_WIRE_MAX_GROUPS);
    if (in->num_group_bufs == in->cap_group_bufs) {
        size_t cap = in->cap_group_bufs ? 2 * in->cap_group_bufs : 4;
        fs_wire_group_t *p = realloc(in->group_bufs, cap * sizeof *p);
        if (!p) return false;
        in->group_bufs = p, in->cap_group_bufs = cap;
    }
    fs_wire_group_t *g = &in->group_bufs[in->num_group_bufs++];
    memset(g, 0, sizeof *g);
    init_i64_buf(&g->ids), init_i64_buf(&g->time);
    fs_wire_set_buf(&m->ids, &g->ids);
    fs_wire_set_buf(&m->time, &g->time);
    return true;
}

static bool put_group(void *ctx, const void *elem)
{
    fs_wire_hetero_in_t *in = ctx;
    const featstore_v1_SeedGroup *m = elem;
    memcpy(in->group_bufs[in->num_group_bufs - 1].msg.type, m->type, sizeof m->type);
    return true;
}

static void prepare_sampling(featstore_v1_TypedSampling *m, fs_wire_hetero_in_t *in)
{
    in->fanout_list = (fs_pb_list_t){featstore_v1_Fanout_fields, sizeof(featstore_v1_Fanout), .put = put_fanout, .ctx = in};
    in->node_table_list = (fs_pb_strings_t){.put = put_node_table, .ctx = in};
    in->edge_table_list = (fs_pb_strings_t){.put = put_edge_table, .ctx = in};
    fs_pb_set_list(&m->fanouts, &in->fanout_list);
    fs_pb_set_strings(&m->node_tables, &in->node_table_list);
    fs_pb_set_strings(&m->edge_tables, &in->edge_table_list);
}

void fs_wire_hetero_prepare(featstore_v1_HeteroSampleRequest *msg, fs_wire_hetero_in_t *in)
{
    memset(in, 0, sizeof *in);
    *msg = (featstore_v1_HeteroSampleRequest)featstore_v1_HeteroSampleRequest_init_zero;
    prepare_sampling(&msg->sampling, in);
    in->group_list = (fs_pb_list_t){featstore_v1_SeedGroup_fields, sizeof(featstore_v1_SeedGroup), .put = put_group,
                                    .ctx = in, .start = start_group};
    fs_pb_set_list(&msg->groups, &in->group_list);
}

void fs_wire_link_prepare(featstore_v1_LinkSampleRequest *msg, fs_wire_hetero_in_t *in)
{
    memset(in, 0, sizeof *in);
    *msg = (featstore_v1_LinkSampleRequest)featstore_v1_LinkSampleRequest_init_zero;
    prepare_sampling(&msg->sampling, in);
    init_i64_buf(&in->src_ids), init_i64_buf(&in->dst_ids), init_i64_buf(&in->label), init_i64_buf(&in->time);
    fs_wire_set_buf(&msg->src_ids, &in->src_ids);
    fs_wire_set_buf(&msg->dst_ids, &in->dst_ids);
    fs_wire_set_buf(&msg->label, &in->label);
    fs_wire_set_buf(&msg->time, &in->time);
}

static fs_status_t take_sampling(const char *what, bool has, const featstore_v1_TypedSampling *m,
                                 fs_wire_hetero_in_t *in, fs_error_t *err)
{
    in->joined_edges = has && m->joined_edges;
    in->cached = has ? m->cached : 0, in->cache_instance = has ? m->cache_instance : 0;
    in->cached_table = has ? m->cached_table : 0;
    if (!has) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s has no sampling (TypedSampling)", what);
    if (m->num_hops < 1 || m->num_hops > FS_MAX_HOPS)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%u hops requested, must be 1..%d", (unsigned)m->num_hops,
                        FS_MAX_HOPS);
    int H = (int)m->num_hops;
    if (m->modes_count != 0 && m->modes_count != (pb_size_t)H)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s has %u modes for %d hops (give one per hop or none)", what,
                        (unsigned)m->modes_count, H);
    const featstore_v1_Fanout *fm = in->fanout_msgs.items;
    size_t nf = in->fanout_msgs.count;
    if (!(in->fanouts = calloc(nf + 1, sizeof *in->fanouts))) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < nf; i++) {
        if (fm[i].fanout_count != (pb_size_t)H)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "fanouts of (%s, %s, %s): %u values for %d hops",
                            fm[i].src, fm[i].rel, fm[i].dst, (unsigned)fm[i].fanout_count, H);
        fs_hetero_fanout_t *f = &in->fanouts[i];
        f->src = fm[i].src, f->rel = fm[i].rel, f->dst = fm[i].dst;
        for (int h = 0; h < H; h++) f->fanout[h] = fm[i].fanout[h];
    }
    int ok;
    fs_dtype_t dt = fs_out_dtype_from_name(m->out_dtype, &ok);
    if (!ok) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "out_dtype '%s' is not a dtype name or \"stored\"", m->out_dtype);
    fs_hetero_req_t *r = &in->req;
    *r = (fs_hetero_req_t)FS_HETERO_REQ_INIT;
    r->num_hops = H;
    r->num_fanouts = nf, r->fanouts = in->fanouts;
    for (int h = 0; h < H; h++) r->mode[h] = m->modes_count ? (fs_sample_mode_t)m->modes[h] : FS_SAMPLE_UNIFORM;
    r->seed = m->seed;
    r->want_edge_ids = m->want_edge_ids;
    r->frontier = (fs_frontier_t)m->frontier; /* values: the engine's to check, in the same words for both transports */
    r->disjoint = m->disjoint;
    r->temporal = (fs_temporal_t)m->temporal;
    r->strict = m->strict;
    r->out_dtype = dt;
    r->window = m->window;
    r->num_node_tables = in->node_tables.n, r->node_tables = (const char *const *)in->node_tables.v;
    r->num_edge_tables = in->edge_tables.n, r->edge_tables = (const char *const *)in->edge_tables.v;
    return FS_OK;
}

/* An optional int64 array of exactly `count` values (empty: absent). */
static fs_status_t take_per_id(const fs_wire_buf_t *b, int64_t count, const char *what, const int64_t **out,
                               fs_error_t *err)
{
    const int64_t *p = NULL;
    int64_t n = 0;
    fs_status_t st = fs_wire_int64s(b, what, &p, &n, err);
    if (st != FS_OK) return st;
    if (n != 0 && n != count)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s: %lld values for %lld ids (give one per id, or none)", what,
                        (long long)n, (long long)count);
    *out = n ? p : NULL;
    return FS_OK;
}

fs_status_t fs_wire_hetero_take(const featstore_v1_HeteroSampleRequest *msg, fs_wire_hetero_in_t *in,
                                fs_error_t *err)
{
    fs_status_t st = take_sampling("HeteroSampleRequest", msg->has_sampling, &msg->sampling, in, err);
    if (st != FS_OK) return st;
    size_t n = in->num_group_bufs;
    if (!(in->groups = calloc(n + 1, sizeof *in->groups))) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n && st == FS_OK; i++) {
        fs_wire_group_t *g = &in->group_bufs[i];
        fs_hetero_seeds_t *o = &in->groups[i];
        char what[FS_TYPE_NAME_MAX + 32];
        snprintf(what, sizeof what, "seeds of '%s'", g->msg.type);
        o->type = g->msg.type;
        st = fs_wire_int64s(&g->ids, what, &o->ids, &o->count, err);
        snprintf(what, sizeof what, "seed times of '%s'", g->msg.type);
        if (st == FS_OK) st = take_per_id(&g->time, o->count, what, &o->time, err);
        if (o->count == 0) o->ids = NULL;
    }
    in->num_groups = n;
    return st;
}

fs_status_t fs_wire_link_take(const featstore_v1_LinkSampleRequest *msg, fs_wire_hetero_in_t *in, fs_error_t *err)
{
    fs_status_t st = take_sampling("LinkSampleRequest", msg->has_sampling, &msg->sampling, in, err);
    if (st != FS_OK) return st;
    fs_link_req_t *l = &in->link;
    *l = (fs_link_req_t)FS_LINK_REQ_INIT;
    memcpy(in->link_src, msg->src, sizeof in->link_src);
    memcpy(in->link_rel, msg->rel, sizeof in->link_rel);
    memcpy(in->link_dst, msg->dst, sizeof in->link_dst);
    l->src = in->link_src, l->rel = in->link_rel, l->dst = in->link_dst;
    int64_t nd = 0;
    st = fs_wire_int64s(&in->src_ids, "link src_ids", &l->src_ids, &l->count, err);
    if (st == FS_OK) st = fs_wire_int64s(&in->dst_ids, "link dst_ids", &l->dst_ids, &nd, err);
    if (st == FS_OK && nd != l->count)
        st = fs_error(err, FS_ERR_INVALID_ARGUMENT, "link sample: %lld src ids but %lld dst ids", (long long)l->count,
                      (long long)nd);
    if (st == FS_OK) st = take_per_id(&in->label, l->count, "link labels", &l->label, err);
    if (st == FS_OK) st = take_per_id(&in->time, l->count, "link times", &l->time, err);
    if (st != FS_OK) return st;
    if (l->count == 0) l->src_ids = l->dst_ids = NULL;
    l->neg = (fs_neg_mode_t)msg->neg;
    l->amount = msg->amount;
    l->neg_weighted = msg->neg_weighted;
    l->strict = msg->strict_negatives;
    l->keep_seed_edges = msg->keep_seed_edges;
    return FS_OK;
}

static void names_free(fs_wire_names_t *l)
{
    for (size_t i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
}

void fs_wire_hetero_in_free(fs_wire_hetero_in_t *in)
{
    free(in->fanout_msgs.items);
    free(in->fanouts);
    for (size_t i = 0; i < in->num_group_bufs; i++) {
        fs_wire_buf_free(&in->group_bufs[i].ids);
        fs_wire_buf_free(&in->group_bufs[i].time);
    }
    free(in->group_bufs);
    free(in->groups);
    names_free(&in->node_tables);
    names_free(&in->edge_tables);
    fs_wire_buf_free(&in->src_ids);
    fs_wire_buf_free(&in->dst_ids);
    fs_wire_buf_free(&in->label);
    fs_wire_buf_free(&in->time);
    memset(in, 0, sizeof *in);
}
