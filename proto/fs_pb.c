/* fs_pb.c — see fs_pb.h. An element of a list is decoded into a buffer big
 * enough for any of featstore's element messages, checked against the
 * element type's size so a schema change cannot overflow it. */
#include "fs_pb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_codec.h"
#include "fs_info.h"

#define ELEM_MAX 1024

/* ---- lists ----------------------------------------------------------------------- */

static bool encode_list(pb_ostream_t *stream, const pb_field_t *field, void *const *arg)
{
    fs_pb_list_t *l = *arg;
    _Alignas(16) char elem[ELEM_MAX];
    if (l->size > sizeof elem) PB_RETURN_ERROR(stream, "list element too large");
    for (size_t i = 0; i < l->count; i++) {
        memset(elem, 0, l->size);
        if (!l->get(l->ctx, i, elem)) PB_RETURN_ERROR(stream, "list element unavailable");
        if (!pb_encode_tag_for_field(stream, field) || !pb_encode_submessage(stream, l->type, elem)) return false;
    }
    return true;
}

static bool decode_list(pb_istream_t *stream, const pb_field_t *field, void **arg)
{
    (void)field;
    fs_pb_list_t *l = *arg;
    _Alignas(16) char elem[ELEM_MAX];
    if (l->size > sizeof elem) PB_RETURN_ERROR(stream, "list element too large");
    memset(elem, 0, l->size);
    if (l->start && !l->start(l->ctx, elem)) PB_RETURN_ERROR(stream, "list element refused");
    if (!pb_decode(stream, l->type, elem)) return false;
    if (!l->put(l->ctx, elem)) PB_RETURN_ERROR(stream, "list element refused");
    return true;
}

void fs_pb_set_list(pb_callback_t *cb, fs_pb_list_t *list)
{
    if (list->put) cb->funcs.decode = decode_list; /* funcs is a union: one direction per message */
    else cb->funcs.encode = encode_list;
    cb->arg = list;
}

static bool get_from_array(void *ctx, size_t i, void *elem)
{
    const fs_pb_list_t *l = ctx;
    memcpy(elem, (const char *)l->items + i * l->size, l->size);
    return true;
}

static bool put_into_array(void *ctx, const void *elem)
{
    fs_pb_list_t *l = ctx;
    fs_pb_array_t *a = l->into;
    if (a->count == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 8;
        void *p = realloc(a->items, cap * l->size);
        if (!p) return false;
        a->items = p, a->cap = cap;
    }
    memcpy((char *)a->items + a->count++ * l->size, elem, l->size);
    return true;
}

void fs_pb_list_from_array(fs_pb_list_t *list, const pb_msgdesc_t *type, size_t size, const void *items,
                           size_t count)
{
    *list = (fs_pb_list_t){.type = type, .size = size, .count = count, .get = get_from_array, .items = items};
    list->ctx = list;
}

void fs_pb_list_into_array(fs_pb_list_t *list, const pb_msgdesc_t *type, size_t size, fs_pb_array_t *array)
{
    *list = (fs_pb_list_t){.type = type, .size = size, .put = put_into_array, .into = array};
    list->ctx = list;
}

static bool encode_strings(pb_ostream_t *stream, const pb_field_t *field, void *const *arg)
{
    fs_pb_strings_t *s = *arg;
    for (size_t i = 0; i < s->count; i++) {
        const char *v = s->get(s->ctx, i);
        if (!pb_encode_tag_for_field(stream, field) || !pb_encode_string(stream, (const pb_byte_t *)v, strlen(v)))
            return false;
    }
    return true;
}

static bool decode_strings(pb_istream_t *stream, const pb_field_t *field, void **arg)
{
    (void)field;
    fs_pb_strings_t *s = *arg;
    size_t len = stream->bytes_left;
    char *buf = malloc(len + 1);
    if (!buf) PB_RETURN_ERROR(stream, "out of memory for a string");
    bool ok = pb_read(stream, (pb_byte_t *)buf, len);
    if (ok) buf[len] = '\0', ok = s->put(s->ctx, buf, len);
    free(buf);
    if (!ok) PB_RETURN_ERROR(stream, "string refused");
    return true;
}

void fs_pb_set_strings(pb_callback_t *cb, fs_pb_strings_t *strings)
{
    if (strings->put) cb->funcs.decode = decode_strings;
    else cb->funcs.encode = encode_strings;
    cb->arg = strings;
}

/* ---- whole messages ----------------------------------------------------------------- */

fs_status_t fs_pb_encode_alloc(const pb_msgdesc_t *type, const void *msg, const char *what, void **out, size_t *len,
                               fs_error_t *err)
{
    size_t size;
    *out = NULL;
    if (!pb_get_encoded_size(&size, type, msg)) return fs_error(err, FS_ERR_INTERNAL, "cannot size %s", what);
    pb_byte_t *buf = malloc(size ? size : 1);
    if (!buf) return fs_error(err, FS_ERR_NOMEM, "out of memory encoding %s (%zu bytes)", what, size);
    pb_ostream_t os = pb_ostream_from_buffer(buf, size);
    if (!pb_encode(&os, type, msg)) {
        free(buf);
        return fs_error(err, FS_ERR_INTERNAL, "cannot encode %s: %s", what, PB_GET_ERROR(&os));
    }
    *out = buf;
    *len = os.bytes_written;
    return FS_OK;
}

fs_status_t fs_pb_decode_buffer(const void *buf, size_t len, const pb_msgdesc_t *type, void *msg, const char *what,
                                fs_error_t *err)
{
    pb_istream_t is = pb_istream_from_buffer((const pb_byte_t *)buf, len);
    if (!pb_decode(&is, type, msg)) return fs_error(err, FS_ERR_FORMAT, "bad %s: %s", what, PB_GET_ERROR(&is));
    return FS_OK;
}

/* ---- Info: encoding ------------------------------------------------------------------ */

/* A name into a static string field; false when it does not fit. */
static bool put_name(char *field, size_t size, const char *name)
{
    if (!name) name = "";
    snprintf(field, size, "%s", name);
    return strlen(name) < size;
}

static bool fill_table(featstore_v1_TableInfo *t, const fs_table_info_t *src)
{
    snprintf(t->dtype, sizeof t->dtype, "%s", fs_dtype_name(src->dtype));
    t->rows = src->rows, t->dim = src->dim;
    return put_name(t->name, sizeof t->name, src->name);
}

static bool get_table(void *ctx, size_t i, void *elem)
{
    const fs_info_t *info = ctx;
    featstore_v1_TableInfo *t = elem;
    const fs_compressed_info_t *c = fs_info_find_compressed(info, info->tables[i].name);
    if (c) {
        snprintf(t->codec, sizeof t->codec, "%s", c->codec);
        snprintf(t->stored_dtype, sizeof t->stored_dtype, "%s", fs_dtype_name(c->stored_dtype));
        t->stored_dim = c->stored_dim;
    }
    return fill_table(t, &info->tables[i]);
}

/* A node or edge type's own tables: ctx is its array. */
static bool get_type_table(void *ctx, size_t i, void *elem)
{
    return fill_table(elem, &((const fs_table_info_t *)ctx)[i]);
}

static const char *get_type_split(void *ctx, size_t i)
{
    const char *s = ((const char *const *)ctx)[i];
    return s ? s : "";
}

static bool get_node_type(void *ctx, size_t i, void *elem)
{
    fs_pb_info_out_t *out = ctx;
    const fs_node_type_info_t *t = &out->info->node_types[i];
    featstore_v1_NodeTypeInfo *m = elem;
    m->count = t->count, m->num_classes = t->num_classes, m->timed = t->timed != 0;
    out->type_tables = (fs_pb_list_t){featstore_v1_TableInfo_fields, sizeof(featstore_v1_TableInfo), t->num_tables,
                                      .get = get_type_table, .ctx = (void *)t->tables};
    out->type_splits = (fs_pb_strings_t){t->num_splits, get_type_split, NULL, (void *)t->splits};
    fs_pb_set_list(&m->tables, &out->type_tables);
    fs_pb_set_strings(&m->splits, &out->type_splits);
    return put_name(m->name, sizeof m->name, t->name);
}

static bool get_edge_type(void *ctx, size_t i, void *elem)
{
    fs_pb_info_out_t *out = ctx;
    const fs_edge_type_info_t *e = &out->info->edge_types[i];
    featstore_v1_EdgeTypeInfo *m = elem;
    m->num_edges = e->num_edges, m->weighted = e->weighted != 0, m->timed = e->timed != 0, m->reverse = e->reverse;
    out->type_tables = (fs_pb_list_t){featstore_v1_TableInfo_fields, sizeof(featstore_v1_TableInfo), e->num_tables,
                                      .get = get_type_table, .ctx = (void *)e->tables};
    fs_pb_set_list(&m->tables, &out->type_tables);
    return put_name(m->src, sizeof m->src, e->src) && put_name(m->rel, sizeof m->rel, e->rel) &&
           put_name(m->dst, sizeof m->dst, e->dst);
}

static bool get_link_split(void *ctx, size_t i, void *elem)
{
    const fs_link_split_info_t *l = &((const fs_pb_info_out_t *)ctx)->info->link_splits[i];
    featstore_v1_LinkSplitInfo *m = elem;
    m->edge_type = l->edge_type, m->count = l->count, m->num_neg = l->num_neg;
    m->labelled = l->labelled != 0, m->timed = l->timed != 0;
    return put_name(m->name, sizeof m->name, l->name);
}

static bool get_row_split(void *ctx, size_t i, void *elem)
{
    const fs_row_split_info_t *r = &((const fs_pb_info_out_t *)ctx)->info->row_splits[i];
    featstore_v1_RowSplitInfo *m = elem;
    m->offset = r->offset, m->count = r->count;
    return put_name(m->name, sizeof m->name, r->name);
}

static bool get_tier(void *ctx, size_t i, void *elem)
{
    const fs_info_t *info = ctx;
    featstore_v1_TierInfo *t = elem;
    t->index = (uint32_t)i;
    snprintf(t->kind, sizeof t->kind, "%s", info->tiers[i].kind);
    t->device = info->tiers[i].device;
    t->capacity_bytes = info->tiers[i].capacity_bytes, t->used_bytes = info->tiers[i].used_bytes;
    return true;
}

static bool get_reader(void *ctx, size_t i, void *elem)
{
    const fs_reader_info_t *r = &((const fs_info_t *)ctx)->readers[i];
    featstore_v1_PlacementReader *p = elem;
    p->reader = r->reader;
    p->predicted_local_bytes = r->predicted_bytes[0];
    p->predicted_peer_bytes = r->predicted_bytes[1];
    p->predicted_host_bytes = r->predicted_bytes[2];
    p->measured_local_bytes = r->measured_bytes[0];
    p->measured_peer_bytes = r->measured_bytes[1];
    p->measured_host_bytes = r->measured_bytes[2];
    return true;
}

static const char *get_split(void *ctx, size_t i) { return ((const fs_info_t *)ctx)->splits[i]; }
static const char *get_row_table(void *ctx, size_t i) { return ((const fs_info_t *)ctx)->row_tables[i]; }

void fs_pb_info_prepare_encode(const fs_info_t *info, featstore_v1_InfoResponse *msg, fs_pb_info_out_t *out)
{
    memset(msg, 0, sizeof *msg);
    void *ctx = (void *)info;
    out->info = info;
    out->tables = (fs_pb_list_t){featstore_v1_TableInfo_fields, sizeof(featstore_v1_TableInfo), info->num_tables,
                                 .get = get_table, .ctx = ctx};
    out->tiers = (fs_pb_list_t){featstore_v1_TierInfo_fields, sizeof(featstore_v1_TierInfo), info->num_tiers,
                                .get = get_tier, .ctx = ctx};
    out->readers = (fs_pb_list_t){featstore_v1_PlacementReader_fields, sizeof(featstore_v1_PlacementReader),
                                  info->num_readers, .get = get_reader, .ctx = ctx};
    out->splits = (fs_pb_strings_t){info->num_splits, get_split, NULL, ctx};
    out->row_tables = (fs_pb_strings_t){info->num_row_tables, get_row_table, NULL, ctx};
    out->node_types = (fs_pb_list_t){featstore_v1_NodeTypeInfo_fields, sizeof(featstore_v1_NodeTypeInfo),
                                     info->num_node_types, .get = get_node_type, .ctx = out};
    out->edge_types = (fs_pb_list_t){featstore_v1_EdgeTypeInfo_fields, sizeof(featstore_v1_EdgeTypeInfo),
                                     info->num_edge_types, .get = get_edge_type, .ctx = out};
    out->link_splits = (fs_pb_list_t){featstore_v1_LinkSplitInfo_fields, sizeof(featstore_v1_LinkSplitInfo),
                                      info->num_link_splits, .get = get_link_split, .ctx = out};
    out->row_splits = (fs_pb_list_t){featstore_v1_RowSplitInfo_fields, sizeof(featstore_v1_RowSplitInfo),
                                     info->num_row_splits, .get = get_row_split, .ctx = out};
    msg->api_version = 1;
    snprintf(msg->server_version, sizeof msg->server_version, "%s", info->server_version ? info->server_version : "");
    snprintf(msg->dataset, sizeof msg->dataset, "%s", info->dataset ? info->dataset : "");
    msg->num_nodes = info->num_nodes, msg->num_edges = info->num_edges, msg->num_classes = info->num_classes;
    msg->symmetric = info->symmetric, msg->weighted = info->weighted;
    msg->placement_generation = info->placement_generation;
    msg->typed = info->typed != 0;
    fs_pb_set_list(&msg->tables, &out->tables);
    fs_pb_set_list(&msg->tiers, &out->tiers);
    fs_pb_set_list(&msg->placement, &out->readers);
    fs_pb_set_strings(&msg->splits, &out->splits);
    fs_pb_set_list(&msg->node_types, &out->node_types);
    fs_pb_set_list(&msg->edge_types, &out->edge_types);
    fs_pb_set_list(&msg->link_splits, &out->link_splits);
    fs_pb_set_list(&msg->row_splits, &out->row_splits);
    fs_pb_set_strings(&msg->row_tables, &out->row_tables);
}

/* ---- Info: decoding --------------------------------------------------------------------- */

static bool out_of_memory(fs_pb_info_in_t *in)
{
    in->oom = 1;
    return false;
}

static bool put_table(void *ctx, const void *elem)
{
    fs_pb_info_in_t *in = ctx;
    const featstore_v1_TableInfo *t = elem;
    fs_table_info_t *o = fs_info_add_table(in->info);
    if (!o || fs_info_set_text(&o->name, t->name) != 0) return out_of_memory(in);
    o->dtype = fs_dtype_from_name(t->dtype);
    o->rows = t->rows, o->dim = t->dim;
    if (!t->codec[0]) return true;
    fs_compressed_info_t *c = fs_info_add_compressed(in->info);
    if (!c || fs_info_set_text(&c->table, t->name) || fs_info_set_text(&c->codec, t->codec)) return out_of_memory(in);
    c->stored_dtype = fs_dtype_from_name(t->stored_dtype), c->stored_dim = t->stored_dim;
    return true;
}

static bool put_tier(void *ctx, const void *elem)
{
    fs_pb_info_in_t *in = ctx;
    const featstore_v1_TierInfo *t = elem;
    fs_tier_info_t *o = fs_info_add_tier(in->info);
    if (!o || fs_info_set_text(&o->kind, t->kind) != 0) return out_of_memory(in);
    o->device = t->device;
    o->capacity_bytes = t->capacity_bytes, o->used_bytes = t->used_bytes;
    return true;
}

static bool put_reader(void *ctx, const void *elem)
{
    fs_pb_info_in_t *in = ctx;
    const featstore_v1_PlacementReader *p = elem;
    fs_reader_info_t *o = fs_info_add_reader(in->info);
    if (!o) return out_of_memory(in);
    *o = (fs_reader_info_t){p->reader,
                            {p->predicted_local_bytes, p->predicted_peer_bytes, p->predicted_host_bytes},
                            {p->measured_local_bytes, p->measured_peer_bytes, p->measured_host_bytes}};
    return true;
}

static bool put_split(void *ctx, const char *s, size_t len)
{
    (void)len;
    fs_pb_info_in_t *in = ctx;
    const char **o = fs_info_add_split(in->info);
    if (!o || fs_info_set_text(o, s) != 0) return out_of_memory(in);
    return true;
}

static bool put_row_table(void *ctx, const char *s, size_t len)
{
    (void)len;
    fs_pb_info_in_t *in = ctx;
    const char **o = fs_info_add_row_table(in->info);
    if (!o || fs_info_set_text(o, s) != 0) return out_of_memory(in);
    return true;
}

static bool put_table_into(fs_pb_info_in_t *in, fs_table_info_t *o, const featstore_v1_TableInfo *t)
{
    if (!o || fs_info_set_text(&o->name, t->name) != 0) return out_of_memory(in);
    o->dtype = fs_dtype_from_name(t->dtype);
    o->rows = t->rows, o->dim = t->dim;
    return true;
}

/* The element being decoded is the last one added by its start(). */
static fs_node_type_info_t *last_node_type(fs_pb_info_in_t *in)
{
    return (fs_node_type_info_t *)&in->info->node_types[in->info->num_node_types - 1];
}

static fs_edge_type_info_t *last_edge_type(fs_pb_info_in_t *in)
{
    return (fs_edge_type_info_t *)&in->info->edge_types[in->info->num_edge_types - 1];
}

static bool put_node_type_table(void *ctx, const void *elem)
{
    fs_pb_info_in_t *in = ctx;
    return put_table_into(in, fs_info_add_node_type_table(last_node_type(in)), elem);
}

static bool put_edge_type_table(void *ctx, const void *elem)
{
    fs_pb_info_in_t *in = ctx;
    return put_table_into(in, fs_info_add_edge_type_table(last_edge_type(in)), elem);
}

static bool put_node_type_split(void *ctx, const char *s, size_t len)
{
    (void)len;
    fs_pb_info_in_t *in = ctx;
    const char **o = fs_info_add_node_type_split(last_node_type(in));
    if (!o || fs_info_set_text(o, s) != 0) return out_of_memory(in);
    return true;
}

static bool start_node_type(void *ctx, void *elem)
{
    fs_pb_info_in_t *in = ctx;
    featstore_v1_NodeTypeInfo *m = elem;
    if (!fs_info_add_node_type(in->info)) return out_of_memory(in);
    fs_pb_set_list(&m->tables, &in->node_type_tables);
    fs_pb_set_strings(&m->splits, &in->node_type_splits);
    return true;
}

static bool put_node_type(void *ctx, const void *elem)
{
    fs_pb_info_in_t *in = ctx;
    const featstore_v1_NodeTypeInfo *m = elem;
    fs_node_type_info_t *t = last_node_type(in);
    if (fs_info_set_text(&t->name, m->name) != 0) return out_of_memory(in);
    t->count = m->count, t->num_classes = m->num_classes, t->timed = m->timed;
    return true;
}

static bool start_edge_type(void *ctx, void *elem)
{
    fs_pb_info_in_t *in = ctx;
    featstore_v1_EdgeTypeInfo *m = elem;
    if (!fs_info_add_edge_type(in->info)) return out_of_memory(in);
    fs_pb_set_list(&m->tables, &in->edge_type_tables);
    return true;
}

static bool put_edge_type(void *ctx, const void *elem)
{
    fs_pb_info_in_t *in = ctx;
    const featstore_v1_EdgeTypeInfo *m = elem;
    fs_edge_type_info_t *e = last_edge_type(in);
    if (fs_info_set_text(&e->src, m->src) != 0 || fs_info_set_text(&e->rel, m->rel) != 0 ||
        fs_info_set_text(&e->dst, m->dst) != 0)
        return out_of_memory(in);
    e->num_edges = m->num_edges, e->weighted = m->weighted, e->timed = m->timed, e->reverse = m->reverse;
    return true;
}

static bool put_link_split(void *ctx, const void *elem)
{
    fs_pb_info_in_t *in = ctx;
    const featstore_v1_LinkSplitInfo *m = elem;
    fs_link_split_info_t *l = fs_info_add_link_split(in->info);
    if (!l || fs_info_set_text(&l->name, m->name) != 0) return out_of_memory(in);
    l->edge_type = m->edge_type, l->count = m->count, l->num_neg = m->num_neg;
    l->labelled = m->labelled, l->timed = m->timed;
    return true;
}

static bool put_row_split(void *ctx, const void *elem)
{
    fs_pb_info_in_t *in = ctx;
    const featstore_v1_RowSplitInfo *m = elem;
    fs_row_split_info_t *r = fs_info_add_row_split(in->info);
    if (!r || fs_info_set_text(&r->name, m->name) != 0) return out_of_memory(in);
    r->offset = m->offset, r->count = m->count;
    return true;
}

fs_status_t fs_pb_info_prepare_decode(featstore_v1_InfoResponse *msg, fs_pb_info_in_t *in, fs_error_t *err)
{
    memset(msg, 0, sizeof *msg);
    memset(in, 0, sizeof *in);
    if (!(in->info = fs_info_new())) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    in->tables = (fs_pb_list_t){featstore_v1_TableInfo_fields, sizeof(featstore_v1_TableInfo), .put = put_table,
                                .ctx = in};
    in->tiers = (fs_pb_list_t){featstore_v1_TierInfo_fields, sizeof(featstore_v1_TierInfo), .put = put_tier, .ctx = in};
    in->readers = (fs_pb_list_t){featstore_v1_PlacementReader_fields, sizeof(featstore_v1_PlacementReader),
                                 .put = put_reader, .ctx = in};
    in->splits = (fs_pb_strings_t){0, NULL, put_split, in};
    in->row_tables = (fs_pb_strings_t){0, NULL, put_row_table, in};
    in->node_types = (fs_pb_list_t){featstore_v1_NodeTypeInfo_fields, sizeof(featstore_v1_NodeTypeInfo),
                                    .put = put_node_type, .ctx = in, .start = start_node_type};
    in->edge_types = (fs_pb_list_t){featstore_v1_EdgeTypeInfo_fields, sizeof(featstore_v1_EdgeTypeInfo),
                                    .put = put_edge_type, .ctx = in, .start = start_edge_type};
    in->link_splits = (fs_pb_list_t){featstore_v1_LinkSplitInfo_fields, sizeof(featstore_v1_LinkSplitInfo),
                                     .put = put_link_split, .ctx = in};
    in->row_splits = (fs_pb_list_t){featstore_v1_RowSplitInfo_fields, sizeof(featstore_v1_RowSplitInfo),
                                    .put = put_row_split, .ctx = in};
    in->node_type_tables = (fs_pb_list_t){featstore_v1_TableInfo_fields, sizeof(featstore_v1_TableInfo),
                                          .put = put_node_type_table, .ctx = in};
    in->edge_type_tables = (fs_pb_list_t){featstore_v1_TableInfo_fields, sizeof(featstore_v1_TableInfo),
                                          .put = put_edge_type_table, .ctx = in};
    in->node_type_splits = (fs_pb_strings_t){0, NULL, put_node_type_split, in};
    fs_pb_set_list(&msg->tables, &in->tables);
    fs_pb_set_list(&msg->tiers, &in->tiers);
    fs_pb_set_list(&msg->placement, &in->readers);
    fs_pb_set_strings(&msg->splits, &in->splits);
    fs_pb_set_list(&msg->node_types, &in->node_types);
    fs_pb_set_list(&msg->edge_types, &in->edge_types);
    fs_pb_set_list(&msg->link_splits, &in->link_splits);
    fs_pb_set_list(&msg->row_splits, &in->row_splits);
    fs_pb_set_strings(&msg->row_tables, &in->row_tables);
    return FS_OK;
}

/* ---- Info: what the bytes claim about the types, checked ------------------------------ */

static fs_status_t check_tables(const fs_table_info_t *t, size_t n, const char *owner, fs_error_t *err)
{
    for (size_t i = 0; i < n; i++) {
        if (!t[i].name || !t[i].name[0])
            return fs_error(err, FS_ERR_FORMAT, "bad Info reply: %s: table %zu has no name", owner, i);
        if (t[i].dtype == FS_DTYPE_INVALID || t[i].rows < 0 || t[i].dim < 0)
            return fs_error(err, FS_ERR_FORMAT, "bad Info reply: %s: table '%s' has dtype %s, %lld rows and dim %lld",
                            owner, t[i].name, fs_dtype_name(t[i].dtype), (long long)t[i].rows, (long long)t[i].dim);
    }
    return FS_OK;
}

static int is_node_type(const fs_info_t *info, const char *name)
{
    for (size_t i = 0; i < info->num_node_types; i++)
        if (strcmp(info->node_types[i].name, name) == 0) return 1;
    return 0;
}

static fs_status_t check_node_types(const fs_info_t *info, fs_error_t *err)
{
    for (size_t i = 0; i < info->num_node_types; i++) {
        const fs_node_type_info_t *t = &info->node_types[i];
        char owner[96];
        if (!t->name[0]) return fs_error(err, FS_ERR_FORMAT, "bad Info reply: node_types[%zu].name is empty", i);
        snprintf(owner, sizeof owner, "node type '%s'", t->name);
        if (t->count < 0 || t->num_classes < 0)
            return fs_error(err, FS_ERR_FORMAT, "bad Info reply: %s: count %lld and num_classes %lld must not be "
                            "negative", owner, (long long)t->count, (long long)t->num_classes);
        for (size_t k = 0; k < t->num_splits; k++)
            if (!t->splits[k][0])
                return fs_error(err, FS_ERR_FORMAT, "bad Info reply: %s: splits[%zu] is empty", owner, k);
        fs_status_t st = check_tables(t->tables, t->num_tables, owner, err);
        if (st != FS_OK) return st;
    }
    return FS_OK;
}

static fs_status_t check_edge_types(const fs_info_t *info, fs_error_t *err)
{
    for (size_t i = 0; i < info->num_edge_types; i++) {
        const fs_edge_type_info_t *e = &info->edge_types[i];
        char owner[240];
        if (!e->src[0] || !e->rel[0] || !e->dst[0])
            return fs_error(err, FS_ERR_FORMAT, "bad Info reply: edge_types[%zu] needs src, rel and dst names", i);
        snprintf(owner, sizeof owner, "edge type (%s, %s, %s)", e->src, e->rel, e->dst);
        if (!is_node_type(info, e->src) || !is_node_type(info, e->dst))
            return fs_error(err, FS_ERR_FORMAT, "bad Info reply: %s: '%s' is not among node_types", owner,
                            is_node_type(info, e->src) ? e->dst : e->src);
        if (e->num_edges < 0)
            return fs_error(err, FS_ERR_FORMAT, "bad Info reply: %s: num_edges %lld is negative", owner,
                            (long long)e->num_edges);
        if (e->reverse < -1 || e->reverse >= (int64_t)info->num_edge_types)
            return fs_error(err, FS_ERR_FORMAT, "bad Info reply: %s: reverse %d is not -1 or an index into the %zu "
                            "edge_types", owner, e->reverse, info->num_edge_types);
        fs_status_t st = check_tables(e->tables, e->num_tables, owner, err);
        if (st != FS_OK) return st;
    }
    return FS_OK;
}

static fs_status_t check_link_splits(const fs_info_t *info, fs_error_t *err)
{
    for (size_t i = 0; i < info->num_link_splits; i++) {
        const fs_link_split_info_t *l = &info->link_splits[i];
        if (!l->name[0]) return fs_error(err, FS_ERR_FORMAT, "bad Info reply: link_splits[%zu].name is empty", i);
        if (l->edge_type < 0 || l->edge_type >= (int64_t)info->num_edge_types)
            return fs_error(err, FS_ERR_FORMAT, "bad Info reply: link split '%s': edge_type %d is not an index into "
                            "the %zu edge_types", l->name, l->edge_type, info->num_edge_types);
        if (l->count < 0 || l->num_neg < 0)
            return fs_error(err, FS_ERR_FORMAT, "bad Info reply: link split '%s': count %lld and num_neg %lld must not "
                            "be negative", l->name, (long long)l->count, (long long)l->num_neg);
    }
    return FS_OK;
}

/* A compressed table's codec must be one this library decodes, and fit
 * its stored form: a newer server's codec is an error, not wrong rows. */
static fs_status_t check_compressed(const fs_info_t *info, fs_error_t *err)
{
    for (size_t i = 0; i < info->num_compressed; i++) {
        const fs_compressed_info_t *c = &info->compressed[i];
        fs_codec_t k = fs_codec_from_name(c->codec);
        if (k == FS_CODEC_NONE || !fs_codec_fits(k, c->stored_dtype, c->stored_dim))
            return fs_error(err, FS_ERR_FORMAT, "bad Info reply: table '%s': codec '%s' over a stored %s of dim %lld "
                            "(this library knows \"narrow\" and \"int8\")", c->table, c->codec,
                            fs_dtype_name(c->stored_dtype), (long long)c->stored_dim);
    }
    return FS_OK;
}

/* A row split is a range of a row table: [offset, offset + count) inside
 * the rows of the tables that have them (not checked here: a table's row
 * count is the reader's to compare). */
static fs_status_t check_row_splits(const fs_info_t *info, fs_error_t *err)
{
    for (size_t i = 0; i < info->num_row_splits; i++) {
        const fs_row_split_info_t *r = &info->row_splits[i];
        if (!r->name[0]) return fs_error(err, FS_ERR_FORMAT, "bad Info reply: row_splits[%zu].name is empty", i);
        if (r->offset < 0 || r->count < 0 || r->count > INT64_MAX - r->offset)
            return fs_error(err, FS_ERR_FORMAT, "bad Info reply: row split '%s': offset %lld and count %lld are not "
                            "a range", r->name, (long long)r->offset, (long long)r->count);
    }
    return FS_OK;
}

fs_status_t fs_pb_info_take(const featstore_v1_InfoResponse *msg, fs_pb_info_in_t *in, fs_info_t **out,
                            fs_error_t *err)
{
    fs_info_t *info = in->info;
    *out = NULL;
    if (fs_info_set_text(&info->server_version, msg->server_version) != 0 ||
        fs_info_set_text(&info->dataset, msg->dataset) != 0) {
        fs_pb_info_abandon(in);
        return fs_error(err, FS_ERR_NOMEM, "out of memory");
    }
    info->num_nodes = msg->num_nodes, info->num_edges = msg->num_edges, info->num_classes = msg->num_classes;
    info->symmetric = msg->symmetric, info->weighted = msg->weighted;
    info->placement_generation = msg->placement_generation;
    info->typed = msg->typed;
    fs_status_t st = check_node_types(info, err);
    if (st == FS_OK) st = check_edge_types(info, err);
    if (st == FS_OK) st = check_link_splits(info, err);
    if (st == FS_OK) st = check_row_splits(info, err);
    if (st == FS_OK) st = check_compressed(info, err);
    if (st != FS_OK) {
        fs_pb_info_abandon(in);
        return st;
    }
    in->info = NULL;
    *out = info;
    return FS_OK;
}

void fs_pb_info_abandon(fs_pb_info_in_t *in)
{
    fs_info_free(in->info);
    in->info = NULL;
}
