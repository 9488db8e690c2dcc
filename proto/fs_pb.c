/* fs_pb.c — see fs_pb.h. An element of a list is decoded into a buffer big
 * enough for any of featstore's element messages, checked against the
 * element type's size so a schema change cannot overflow it. */
#include "fs_pb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static bool get_table(void *ctx, size_t i, void *elem)
{
    const fs_info_t *info = ctx;
    featstore_v1_TableInfo *t = elem;
    snprintf(t->name, sizeof t->name, "%s", info->tables[i].name);
    snprintf(t->dtype, sizeof t->dtype, "%s", fs_dtype_name(info->tables[i].dtype));
    t->rows = info->tables[i].rows, t->dim = info->tables[i].dim;
    return strlen(info->tables[i].name) < sizeof t->name;
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
    msg->api_version = 1;
    snprintf(msg->server_version, sizeof msg->server_version, "%s", info->server_version ? info->server_version : "");
    snprintf(msg->dataset, sizeof msg->dataset, "%s", info->dataset ? info->dataset : "");
    msg->num_nodes = info->num_nodes, msg->num_edges = info->num_edges, msg->num_classes = info->num_classes;
    msg->symmetric = info->symmetric, msg->weighted = info->weighted;
    msg->placement_generation = info->placement_generation;
    fs_pb_set_list(&msg->tables, &out->tables);
    fs_pb_set_list(&msg->tiers, &out->tiers);
    fs_pb_set_list(&msg->placement, &out->readers);
    fs_pb_set_strings(&msg->splits, &out->splits);
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
    fs_pb_set_list(&msg->tables, &in->tables);
    fs_pb_set_list(&msg->tiers, &in->tiers);
    fs_pb_set_list(&msg->placement, &in->readers);
    fs_pb_set_strings(&msg->splits, &in->splits);
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
    in->info = NULL;
    *out = info;
    return FS_OK;
}

void fs_pb_info_abandon(fs_pb_info_in_t *in)
{
    fs_info_free(in->info);
    in->info = NULL;
}
