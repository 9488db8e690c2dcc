/* dataset_typed.c — version 2 of the dataset format: node types, edge types
 * stored toward their destination with edge ids, weights, times and edge
 * features, and link-prediction splits (docs/format.md).
 *
 * Design: types are lists in the manifest, so a type's index is its place
 * in the list, the same in every reader. Each edge type is checked like a
 * version-1 graph (ds_open_csr: monotone indptr, every source id in range
 * of its type) plus what sampling relies on later: edge ids form a
 * permutation (edge features are gathered by id), and times never decrease
 * within a destination (temporal eligibility is then a binary search, not a
 * scan). A version-1 dataset is read as the one-type case, and a one-type
 * version-2 dataset also fills the version-1 fields, so the homogeneous
 * tools (placement, store, engines, serving) run on either unchanged.
 *
 * A part of a partitioned dataset (`featstore partition`, "partition" in
 * the manifest) holds some rows of each type but names every node by its
 * global id: each node type says its first row's id and the type's total,
 * sources are checked against the total, a type's own ids (splits, link
 * destinations) against its rows' range, and edge ids must be distinct and
 * below the type's total_edges instead of a permutation of the part's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_internal.h"
#include "window.h"

#define V1_NODE_TYPE "node"
#define V1_RELATION "to"

static fs_status_t bad(open_ctx_t *c, const char *what)
{
    return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: %s", c->dir, FS_MANIFEST, what);
}

/* A count field: an integer in [0, INT64_MAX) (an indptr holds count + 1). */
static fs_status_t read_count(open_ctx_t *c, json_t *o, const char *key, const char *owner, int64_t *out)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) == INT64_MAX)
        return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: %s: \"%s\" must be an integer in [0, 2^63 - 1)", c->dir,
                        FS_MANIFEST, owner, key);
    *out = json_integer_value(v);
    return FS_OK;
}

/* An optional int64 [n] array under key ("time" and the like). */
static fs_status_t open_i64(open_ctx_t *c, json_t *o, const char *key, int64_t n, const char *role,
                            const int64_t **out)
{
    const char *f = ds_json_str(o, key);
    fs_npy_header_t h;
    const void *d;
    fs_status_t s;
    *out = NULL;
    if (!f) {
        if (json_object_get(o, key)) return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: %s must name a file", c->dir,
                                                     FS_MANIFEST, role);
        return FS_OK;
    }
    if ((s = ds_map_npy(c, f, &h, &d)) || (s = ds_expect_dtype(c, f, &h, FS_DTYPE_I64, FS_DTYPE_I64, role)) ||
        (s = ds_expect_shape(c, f, &h, 1, n, role)))
        return s;
    *out = d;
    return FS_OK;
}

/* ---- a part of a partitioned dataset -------------------------------------- */

/* The manifest's "partition" object, when there is one. */
static fs_status_t read_partition(open_ctx_t *c, json_t *m)
{
    json_t *p = json_object_get(m, "partition");
    if (!p) return FS_OK;
    const char *id = ds_json_str(p, "id");
    json_t *index = json_object_get(p, "index"), *parts = json_object_get(p, "parts");
    int ok = id && strlen(id) == 16 && strspn(id, "0123456789abcdef") == 16 && json_is_integer(parts) &&
             json_integer_value(parts) >= 1 && json_integer_value(parts) <= FS_PARTITION_MAX_PARTS &&
             json_is_integer(index) && json_integer_value(index) >= 0 &&
             json_integer_value(index) < json_integer_value(parts);
    if (!ok)
        return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: \"partition\" must be {\"id\": 16 hex digits, \"index\": i, "
                        "\"parts\": V} with 0 <= i < V <= %d", c->dir, FS_MANIFEST, FS_PARTITION_MAX_PARTS);
    fs_part_of_t *po = &c->ds->partition;
    snprintf(po->id, sizeof po->id, "%s", id);
    po->index = (int)json_integer_value(index);
    po->parts = (int)json_integer_value(parts);
    return FS_OK;
}

/* A part's node type: its rows are the ids [first, first + count) of total. */
static fs_status_t read_part_range(open_ctx_t *c, json_t *o, const char *owner, fs_node_type_t *t)
{
    t->first = 0, t->total = t->count;
    if (!c->ds->partition.parts) return FS_OK;
    fs_status_t s = read_count(c, o, "first", owner, &t->first);
    if (!s) s = read_count(c, o, "total", owner, &t->total);
    if (!s && (t->first > t->total || t->count > t->total - t->first))
        s = fs_error(c->err, FS_ERR_FORMAT, "%s/%s: %s: rows [%lld, %lld) are not within its %lld nodes", c->dir,
                     FS_MANIFEST, owner, (long long)t->first, (long long)(t->first + t->count), (long long)t->total);
    return s;
}

/* A part's "orig_ids": each row's id in the source dataset. */
static fs_status_t open_orig_ids(open_ctx_t *c, json_t *o, fs_node_type_t *t)
{
    const char *f;
    fs_status_t s = ds_need_file(c, o, "orig_ids", &f);
    if (!s) s = open_i64(c, o, "orig_ids", t->count, "source ids", &t->orig_ids);
    if (!s) s = ds_check_ids(c, f, t->orig_ids, FS_DTYPE_I64, t->count, 0, t->total, "source id");
    return s;
}

/* ---- node types ------------------------------------------------------------ */

static fs_status_t open_node_type(open_ctx_t *c, json_t *o, fs_node_type_t *t)
{
    char owner[128];
    const char *name = json_is_object(o) ? ds_json_str(o, "name") : NULL;
    if (!fs_type_name_valid(name))
        return bad(c, "every node type needs a \"name\" of 1 to 63 letters, digits or underscores");
    snprintf(t->name, sizeof t->name, "%s", name);
    snprintf(owner, sizeof owner, "node type '%s'", name);
    fs_status_t s = read_count(c, o, "count", owner, &t->count);
    if (!s) s = read_part_range(c, o, owner, t);
    char tables_owner[140];
    snprintf(tables_owner, sizeof tables_owner, "%s: ", owner);
    if (!s) s = ds_open_tables(c, json_object_get(o, "features"), t->count, tables_owner, &t->tables, &t->num_tables);
    if (!s) s = ds_open_labels(c, json_object_get(o, "labels"), t->count, &t->labels, &t->num_classes, t->tables,
                               &t->num_tables);
    if (!s) s = open_i64(c, o, "time", t->count, "node times", &t->time);
    if (!s && c->ds->partition.parts) s = open_orig_ids(c, o, t);
    if (!s) s = ds_open_splits(c, json_object_get(o, "splits"), t->first, t->first + t->count, &t->splits,
                               &t->num_splits);
    return s;
}

/* ---- edge types ------------------------------------------------------------ */

/* Edge ids must name each edge once: ids in [0, limit), none twice. For
 * a whole dataset limit is n (a permutation of 0..n-1); a part's are some
 * of its type's total_edges. */
static fs_status_t check_edge_ids(open_ctx_t *c, const char *file, const int64_t *ids, int64_t n, int64_t limit)
{
    fs_status_t s = ds_check_ids(c, file, ids, FS_DTYPE_I64, n, 0, limit, "edge id");
    if (s != FS_OK) return s;
    uint64_t *seen = calloc((size_t)(limit / 64 + 1), sizeof *seen);
    if (!seen) return fs_error(c->err, FS_ERR_NOMEM, "out of memory checking %s", file);
    fs_window_t win;
    fs_window_init(&win, ids, (size_t)n * sizeof *ids);
    for (int64_t i = 0; i < n; i++) {
        if (c->flags & FS_OPEN_WINDOWED) fs_window_touch(&win, &ids[i], sizeof *ids);
        uint64_t bit = 1ULL << (ids[i] & 63);
        if (seen[ids[i] >> 6] & bit) {
            free(seen);
            if (limit != n)
                return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: edge id %lld appears twice (again at offset %lld); a "
                                "part's edge ids must be distinct", c->dir, file, (long long)ids[i], (long long)i);
            return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: edge id %lld appears twice (again at offset %lld); edge "
                            "ids must be a permutation of 0..%lld", c->dir, file, (long long)ids[i], (long long)i,
                            (long long)n - 1);
        }
        seen[ids[i] >> 6] |= bit;
    }
    fs_window_drop(&win);
    free(seen);
    return FS_OK;
}

/* Times sorted within each destination's sources. */
static fs_status_t check_time_order(open_ctx_t *c, const char *file, const fs_edge_type_t *e, int64_t rows)
{
    fs_window_t win;
    fs_window_init(&win, e->time, (size_t)e->indptr[rows] * sizeof *e->time);
    for (int64_t d = 0; d < rows; d++) {
        if (c->flags & FS_OPEN_WINDOWED)
            fs_window_touch(&win, &e->time[e->indptr[d]], (size_t)(e->indptr[d + 1] - e->indptr[d]) * sizeof *e->time);
        for (int64_t p = e->indptr[d] + 1; p < e->indptr[d + 1]; p++)
            if (e->time[p] < e->time[p - 1])
                return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: edge times must not decrease within a destination; "
                                "destination %lld has %lld at offset %lld after %lld", c->dir, file, (long long)d,
                                (long long)e->time[p], (long long)p, (long long)e->time[p - 1]);
    }
    fs_window_drop(&win);
    return FS_OK;
}

static fs_status_t open_edge_type(open_ctx_t *c, json_t *o, int index, fs_edge_type_t *e)
{
    fs_dataset_t *ds = c->ds;
    const char *src = json_is_object(o) ? ds_json_str(o, "src") : NULL, *rel = src ? ds_json_str(o, "rel") : NULL,
               *dst = src ? ds_json_str(o, "dst") : NULL;
    if (!fs_type_name_valid(src) || !fs_type_name_valid(rel) || !fs_type_name_valid(dst))
        return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: edge type %d needs \"src\", \"rel\" and \"dst\" names of 1 to "
                        "63 letters, digits or underscores", c->dir, FS_MANIFEST, index);
    snprintf(e->src, sizeof e->src, "%s", src);
    snprintf(e->rel, sizeof e->rel, "%s", rel);
    snprintf(e->dst, sizeof e->dst, "%s", dst);
    char owner[240];
    snprintf(owner, sizeof owner, "edge type (%s, %s, %s)", src, rel, dst);
    e->src_type = fs_dataset_node_type(ds, src);
    e->dst_type = fs_dataset_node_type(ds, dst);
    if (e->src_type < 0 || e->dst_type < 0)
        return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: %s names node type '%s', which is not in \"node_types\"",
                        c->dir, FS_MANIFEST, owner, e->src_type < 0 ? src : dst);
    if (fs_dataset_edge_type(ds, src, rel, dst) >= 0)
        return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: %s is listed twice", c->dir, FS_MANIFEST, owner);
    fs_status_t s = read_count(c, o, "num_edges", owner, &e->num_edges);
    e->total_edges = e->num_edges;
    if (!s && ds->partition.parts) s = read_count(c, o, "total_edges", owner, &e->total_edges);
    if (!s && e->num_edges > e->total_edges)
        s = fs_error(c->err, FS_ERR_FORMAT, "%s/%s: %s holds %lld edges, more than its total_edges %lld", c->dir,
                     FS_MANIFEST, owner, (long long)e->num_edges, (long long)e->total_edges);
    if (s) return s;
    int64_t rows = ds->node_types[e->dst_type].count;
    ds_csr_t g;
    s = ds_open_csr(c, o, rows, e->num_edges, ds->node_types[e->src_type].total, "weights", &g);
    if (s) return s;
    e->indptr = g.indptr, e->indices = g.indices, e->index_dtype = g.index_dtype, e->weights = g.weights;
    if ((s = open_i64(c, o, "edge_ids", e->num_edges, "edge ids", &e->edge_ids))) return s;
    if (e->edge_ids && (s = check_edge_ids(c, ds_json_str(o, "edge_ids"), e->edge_ids, e->num_edges, e->total_edges)))
        return s;
    if ((s = open_i64(c, o, "time", e->num_edges, "edge times", &e->time))) return s;
    if (e->time && (s = check_time_order(c, ds_json_str(o, "time"), e, rows))) return s;
    char tables_owner[260];
    snprintf(tables_owner, sizeof tables_owner, "%s: ", owner);
    e->reverse = -1;
    json_t *sym = json_object_get(o, "symmetric");
    if (sym && !json_is_boolean(sym))
        return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: %s: \"symmetric\" must be true or false", c->dir, FS_MANIFEST,
                        owner);
    e->symmetric = json_is_true(sym);
    if (e->symmetric && e->src_type != e->dst_type)
        return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: %s is \"symmetric\" but joins two node types; only an edge type "
                        "within one node type can be undirected (a \"reverse\" stores the other direction)", c->dir,
                        FS_MANIFEST, owner);
    return ds_open_tables(c, json_object_get(o, "features"), e->num_edges, tables_owner, &e->tables, &e->num_tables);
}

/* "reverse": the relation r of the edge type (dst, r, src) that holds each
 * of this type's edges reversed, under the same edge id. */
static fs_status_t resolve_reverse(open_ctx_t *c, json_t *list)
{
    fs_dataset_t *ds = c->ds;
    for (int i = 0; i < ds->num_edge_types; i++) {
        fs_edge_type_t *e = &ds->edge_types[i];
        json_t *r = json_object_get(json_array_get(list, (size_t)i), "reverse");
        if (!r) continue;
        const char *rel = json_string_value(r);
        int j = rel ? fs_dataset_edge_type(ds, e->dst, rel, e->src) : -1;
        if (j < 0)
            return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: edge type (%s, %s, %s): \"reverse\" must name the relation "
                            "of an edge type (%s, r, %s)", c->dir, FS_MANIFEST, e->src, e->rel, e->dst, e->dst, e->src);
        if (ds->edge_types[j].total_edges != e->total_edges)
            return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: edge type (%s, %s, %s) has %lld edges but its reverse "
                            "(%s, %s, %s) has %lld", c->dir, FS_MANIFEST, e->src, e->rel, e->dst,
                            (long long)e->total_edges, e->dst, rel, e->src, (long long)ds->edge_types[j].total_edges);
        e->reverse = j;
    }
    return FS_OK;
}

/* ---- link splits ----------------------------------------------------------- */

static fs_status_t open_link_split(open_ctx_t *c, const char *name, json_t *o, fs_link_split_t *l)
{
    fs_dataset_t *ds = c->ds;
    json_t *et = json_object_get(o, "edge_type");
    const char *s0 = json_string_value(json_array_get(et, 0)), *s1 = json_string_value(json_array_get(et, 1)),
               *s2 = json_string_value(json_array_get(et, 2));
    if (strlen(name) >= sizeof l->name || !json_is_array(et) || json_array_size(et) != 3 || !s0 || !s1 || !s2)
        return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: link split '%s' needs \"edge_type\": [src, rel, dst]", c->dir,
                        FS_MANIFEST, name);
    snprintf(l->name, sizeof l->name, "%s", name);
    if ((l->edge_type = fs_dataset_edge_type(ds, s0, s1, s2)) < 0)
        return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: link split '%s' names edge type (%s, %s, %s), which is not in "
                        "\"edge_types\"", c->dir, FS_MANIFEST, name, s0, s1, s2);
    const fs_edge_type_t *e = &ds->edge_types[l->edge_type];
    const fs_node_type_t *st = &ds->node_types[e->src_type], *dt = &ds->node_types[e->dst_type];
    const char *f;
    fs_npy_header_t h;
    const void *d;
    fs_status_t s;
    if ((s = ds_need_file(c, o, "src", &f)) || (s = ds_map_npy(c, f, &h, &d)) ||
        (s = ds_expect_dtype(c, f, &h, FS_DTYPE_I64, FS_DTYPE_I64, "link sources")) ||
        (s = ds_expect_shape(c, f, &h, 1, -1, "link sources")) ||
        (s = ds_check_ids(c, f, d, FS_DTYPE_I64, h.shape[0], 0, st->total, "source id")))
        return s;
    l->src = d;
    l->count = h.shape[0];
    if ((s = ds_need_file(c, o, "dst", &f)) || (s = open_i64(c, o, "dst", l->count, "link destinations", &l->dst)) ||
        (s = ds_check_ids(c, f, l->dst, FS_DTYPE_I64, l->count, dt->first, dt->first + dt->count, "destination id")))
        return s;
    if ((s = open_i64(c, o, "label", l->count, "link labels", &l->label))) return s;
    if ((s = open_i64(c, o, "time", l->count, "link times", &l->time))) return s;
    if (!(f = ds_json_str(o, "neg_dst"))) return FS_OK;
    if ((s = ds_map_npy(c, f, &h, &d)) || (s = ds_expect_dtype(c, f, &h, FS_DTYPE_I64, FS_DTYPE_I64, "negatives")) ||
        (s = ds_expect_shape(c, f, &h, 2, l->count, "negatives")) ||
        (s = ds_check_ids(c, f, d, FS_DTYPE_I64, l->count * h.shape[1], 0, dt->total, "negative destination id")))
        return s;
    l->neg_dst = d;
    l->num_neg = h.shape[1];
    return FS_OK;
}

static fs_status_t open_link_splits(open_ctx_t *c, json_t *splits)
{
    fs_dataset_t *ds = c->ds;
    if (!splits) return FS_OK;
    if (!json_is_object(splits)) return bad(c, "\"link_splits\" must be an object");
    ds->link_splits = calloc(json_object_size(splits) + 1, sizeof *ds->link_splits);
    if (!ds->link_splits) return fs_error(c->err, FS_ERR_NOMEM, "out of memory");
    const char *name;
    json_t *o;
    json_object_foreach(splits, name, o) {
        fs_status_t s = open_link_split(c, name, o, &ds->link_splits[ds->num_link_splits]);
        if (s != FS_OK) return s;
        ds->num_link_splits++;
    }
    return FS_OK;
}

/* ---- split names: "TYPE/NAME" and "link/NAME/ARRAY" -------------------------------- */

#define LINK_PREFIX "link/"

struct fs_split_name {
    char name[FS_SPLIT_NAME_MAX];
    const fs_idset_t *set;         /* a node type's split, or `own` */
    fs_idset_t own;                /* a link split's array */
};

static const char *const LINK_ARRAYS[] = {"src", "dst", "label", "time", "neg_dst"};
enum { NUM_LINK_ARRAYS = 5 };

/* Array k of link split l (NULL when absent) and its length. */
static const int64_t *link_array(const fs_link_split_t *l, int k, int64_t *count)
{
    const int64_t *a[NUM_LINK_ARRAYS] = {l->src, l->dst, l->label, l->time, l->neg_dst};
    *count = k == 4 ? l->count * l->num_neg : l->count;
    return a[k];
}

static void add_name(fs_dataset_t *ds, const char *a, const char *b, const char *c, const fs_idset_t *set)
{
    fs_split_name_t *n = &ds->split_names[ds->num_split_names++];
    snprintf(n->name, sizeof n->name, "%s%s%s", a, b, c);
    n->set = set ? set : &n->own;
}

fs_status_t ds_split_names_build(open_ctx_t *c)
{
    fs_dataset_t *ds = c->ds;
    size_t n = (size_t)ds->num_link_splits * NUM_LINK_ARRAYS;
    for (int t = 0; t < ds->num_node_types; t++) n += (size_t)ds->node_types[t].num_splits;
    if (!(ds->split_names = calloc(n + 1, sizeof *ds->split_names)))
        return fs_error(c->err, FS_ERR_NOMEM, "out of memory");
    for (int t = 0; t < ds->num_node_types; t++) {
        const fs_node_type_t *nt = &ds->node_types[t];
        for (int i = 0; i < nt->num_splits; i++) add_name(ds, nt->name, "/", nt->splits[i].name, &nt->splits[i]);
    }
    for (int i = 0; i < ds->num_link_splits; i++) {
        const fs_link_split_t *l = &ds->link_splits[i];
        for (int k = 0; k < NUM_LINK_ARRAYS; k++) {
            int64_t count;
            const int64_t *ids = link_array(l, k, &count);
            if (!ids) continue;
            char prefix[FS_SPLIT_NAME_MAX];
            snprintf(prefix, sizeof prefix, LINK_PREFIX "%s/", l->name);
            add_name(ds, prefix, LINK_ARRAYS[k], "", NULL);
            fs_idset_t *own = &ds->split_names[ds->num_split_names - 1].own;
            const char *file = ds_mapping_file(ds, ids);
            snprintf(own->name, sizeof own->name, "%.*s", (int)sizeof own->name - 1,
                     ds->split_names[ds->num_split_names - 1].name);
            snprintf(own->file, sizeof own->file, "%.*s", (int)sizeof own->file - 1, file ? file : "");
            own->count = count, own->ids = ids;
        }
    }
    return FS_OK;
}

const fs_idset_t *fs_dataset_split(const fs_dataset_t *ds, const char *name)
{
    for (int i = 0; i < ds->num_splits; i++)
        if (strcmp(ds->splits[i].name, name) == 0) return &ds->splits[i];
    for (int i = 0; i < ds->num_split_names; i++)
        if (strcmp(ds->split_names[i].name, name) == 0) return ds->split_names[i].set;
    return NULL;
}

/* The first few names fs_dataset_split resolves. */
static void list_split_names(const fs_dataset_t *ds, char *list, size_t len)
{
    int listed = 0, total = ds->num_splits + ds->num_split_names;
    list[0] = '\0';
    for (int i = 0; i < ds->num_splits; i++) fs_list_name(list, len, &listed, 8, total, ds->splits[i].name);
    for (int i = 0; i < ds->num_split_names; i++) fs_list_name(list, len, &listed, 8, total, ds->split_names[i].name);
    if (!total) snprintf(list, len, "none");
}

/* "link/NAME/ARRAY" that is not there: what the link split has. */
static fs_status_t link_not_found(const fs_dataset_t *ds, const char *name, fs_error_t *err)
{
    const char *rest = name + strlen(LINK_PREFIX), *slash = strrchr(rest, '/');
    char list[512] = "";
    int listed = 0;
    for (int i = 0; i < ds->num_link_splits; i++) {
        const fs_link_split_t *l = &ds->link_splits[i];
        if (!slash || strlen(l->name) != (size_t)(slash - rest) || strncmp(l->name, rest, (size_t)(slash - rest)) != 0)
            continue;
        for (int k = 0; k < NUM_LINK_ARRAYS; k++) {
            int64_t count;
            if (link_array(l, k, &count)) fs_list_name(list, sizeof list, &listed, NUM_LINK_ARRAYS, NUM_LINK_ARRAYS,
                                                    LINK_ARRAYS[k]);
        }
        return fs_error(err, FS_ERR_NOT_FOUND, "dataset '%s': link split '%s' has no array '%s'; it has %s (as "
                        LINK_PREFIX "%s/ARRAY)", ds->name, l->name, slash + 1, list, l->name);
    }
    for (int i = 0; i < ds->num_link_splits; i++) fs_list_name(list, sizeof list, &listed, 8, ds->num_link_splits,
                                                            ds->link_splits[i].name);
    return fs_error(err, FS_ERR_NOT_FOUND, "dataset '%s' has no link split for '%s' (a link split's arrays are "
                    LINK_PREFIX "NAME/src, dst, label, time, neg_dst); its link splits: %s", ds->name, name,
                    listed ? list : "none");
}

/* "TYPE/NAME" that is not there: the type's splits, or the node types. */
static fs_status_t typed_not_found(const fs_dataset_t *ds, const char *name, const char *slash, fs_error_t *err)
{
    char list[512] = "";
    int listed = 0;
    for (int t = 0; t < ds->num_node_types; t++) {
        const fs_node_type_t *nt = &ds->node_types[t];
        if (strlen(nt->name) != (size_t)(slash - name) || strncmp(nt->name, name, (size_t)(slash - name)) != 0)
            continue;
        for (int i = 0; i < nt->num_splits; i++) fs_list_name(list, sizeof list, &listed, 8, nt->num_splits,
                                                           nt->splits[i].name);
        return fs_error(err, FS_ERR_NOT_FOUND, "dataset '%s': node type '%s' has no split '%s'; its splits: %s",
                        ds->name, nt->name, slash + 1, listed ? list : "none");
    }
    for (int t = 0; t < ds->num_node_types; t++) fs_list_name(list, sizeof list, &listed, 8, ds->num_node_types,
                                                           ds->node_types[t].name);
    return fs_error(err, FS_ERR_NOT_FOUND, "dataset '%s' has no node type '%.*s' (in split '%s'); its node types: %s",
                    ds->name, (int)(slash - name), name, name, list);
}

/* A plain name on a typed graph: its splits are per node type. */
static fs_status_t plain_on_typed(const fs_dataset_t *ds, const char *name, fs_error_t *err)
{
    char list[512] = "";
    int listed = 0;
    for (int i = 0; i < ds->num_split_names; i++) {
        const char *n = ds->split_names[i].name, *slash = strchr(n, '/');
        if (strncmp(n, LINK_PREFIX, strlen(LINK_PREFIX)) != 0 && slash && strcmp(slash + 1, name) == 0)
            fs_list_name(list, sizeof list, &listed, 8, ds->num_split_names, n);
    }
    if (listed)
        return fs_error(err, FS_ERR_NOT_FOUND, "dataset '%s' is typed (%d node types, %d edge types): splits are per "
                        "node type, as \"TYPE/%s\": ask for %s", ds->name, ds->num_node_types, ds->num_edge_types, name,
                        list);
    list_split_names(ds, list, sizeof list);
    return fs_error(err, FS_ERR_NOT_FOUND, "dataset '%s' is typed (%d node types, %d edge types): splits are per node "
                    "type, as \"TYPE/%s\", and no node type has a split '%s'; it has %s", ds->name,
                    ds->num_node_types, ds->num_edge_types, name, name, list);
}

fs_status_t fs_dataset_find_split(const fs_dataset_t *ds, const char *name, const fs_idset_t **out, fs_error_t *err)
{
    if ((*out = fs_dataset_split(ds, name))) return FS_OK;
    const char *slash = strchr(name, '/');
    if (strncmp(name, LINK_PREFIX, strlen(LINK_PREFIX)) == 0 && fs_dataset_node_type(ds, "link") < 0)
        return link_not_found(ds, name, err);
    if (slash) return typed_not_found(ds, name, slash, err);
    if (fs_dataset_is_typed(ds)) return plain_on_typed(ds, name, err);
    char list[512];
    list_split_names(ds, list, sizeof list);
    return fs_error(err, FS_ERR_NOT_FOUND, "dataset '%s' has no split named '%s'; it has %s", ds->name, name, list);
}

/* ---- the version-1 view ------------------------------------------------------ */

/* One node type and one edge type between its nodes: the version-1 fields
 * are theirs (shared, not copied). */
static void fill_v1_fields(fs_dataset_t *ds)
{
    if (fs_dataset_is_typed(ds)) return;
    const fs_node_type_t *t = &ds->node_types[0];
    const fs_edge_type_t *e = &ds->edge_types[0];
    ds->num_nodes = t->count, ds->num_edges = e->num_edges;
    ds->indptr = e->indptr, ds->indices = e->indices, ds->index_dtype = e->index_dtype, ds->edge_weights = e->weights;
    ds->labels = t->labels, ds->num_classes = t->num_classes;
    ds->tables = t->tables, ds->num_tables = t->num_tables;
    ds->splits = t->splits, ds->num_splits = t->num_splits;
    ds->symmetric = e->symmetric;
}

fs_status_t ds_open_typed(open_ctx_t *c, json_t *m)
{
    fs_dataset_t *ds = c->ds;
    json_t *nts = json_object_get(m, "node_types"), *ets = json_object_get(m, "edge_types");
    if (!json_is_array(nts) || json_array_size(nts) == 0 || json_array_size(nts) > 4096)
        return bad(c, "\"node_types\" must be a list of 1 to 4096 node types");
    if (ets && (!json_is_array(ets) || json_array_size(ets) > 65536))
        return bad(c, "\"edge_types\" must be a list of at most 65536 edge types");
    ds->node_types = calloc(json_array_size(nts), sizeof *ds->node_types);
    ds->edge_types = calloc(json_array_size(ets) + 1, sizeof *ds->edge_types);
    if (!ds->node_types || !ds->edge_types) return fs_error(c->err, FS_ERR_NOMEM, "out of memory");
    fs_status_t ps = read_partition(c, m);
    if (ps != FS_OK) return ps;
    for (size_t i = 0; i < json_array_size(nts); i++) {
        json_t *o = json_array_get(nts, i);
        const char *name = ds_json_str(o, "name");
        if (name && fs_dataset_node_type(ds, name) >= 0)
            return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: node type '%s' is listed twice", c->dir, FS_MANIFEST, name);
        fs_status_t s = open_node_type(c, o, &ds->node_types[i]);
        ds->num_node_types++; /* counted even on failure, so its arrays are freed */
        if (s != FS_OK) return s;
    }
    for (size_t i = 0; i < json_array_size(ets); i++) {
        fs_status_t s = open_edge_type(c, json_array_get(ets, i), (int)i, &ds->edge_types[i]);
        ds->num_edge_types++;
        if (s != FS_OK) return s;
    }
    fs_status_t s = resolve_reverse(c, ets);
    if (!s) s = open_link_splits(c, json_object_get(m, "link_splits"));
    if (!s) fill_v1_fields(ds);
    return s;
}

fs_status_t ds_typed_from_v1(open_ctx_t *c)
{
    fs_dataset_t *ds = c->ds;
    ds->node_types = calloc(1, sizeof *ds->node_types);
    ds->edge_types = calloc(1, sizeof *ds->edge_types);
    if (!ds->node_types || !ds->edge_types) return fs_error(c->err, FS_ERR_NOMEM, "out of memory");
    ds->num_node_types = ds->num_edge_types = 1;
    fs_node_type_t *t = &ds->node_types[0];
    snprintf(t->name, sizeof t->name, V1_NODE_TYPE);
    t->count = t->total = ds->num_nodes;
    t->tables = ds->tables, t->num_tables = ds->num_tables;
    t->labels = ds->labels, t->num_classes = ds->num_classes;
    t->splits = ds->splits, t->num_splits = ds->num_splits;
    fs_edge_type_t *e = &ds->edge_types[0];
    snprintf(e->src, sizeof e->src, V1_NODE_TYPE);
    snprintf(e->rel, sizeof e->rel, V1_RELATION);
    snprintf(e->dst, sizeof e->dst, V1_NODE_TYPE);
    e->num_edges = e->total_edges = ds->num_edges;
    e->indptr = ds->indptr, e->indices = ds->indices, e->index_dtype = ds->index_dtype, e->weights = ds->edge_weights;
    e->reverse = -1;
    e->symmetric = ds->symmetric;
    return FS_OK;
}

void ds_typed_free(fs_dataset_t *ds)
{
    for (int i = 0; ds->node_types && i < ds->num_node_types; i++) {
        if (ds->node_types[i].tables != ds->tables) free(ds->node_types[i].tables);
        if (ds->node_types[i].splits != ds->splits) free(ds->node_types[i].splits);
    }
    for (int i = 0; ds->edge_types && i < ds->num_edge_types; i++) free(ds->edge_types[i].tables);
    free(ds->node_types);
    free(ds->edge_types);
    free(ds->link_splits);
    free(ds->split_names);
}

/* ---- lookups ----------------------------------------------------------------- */

int fs_dataset_is_typed(const fs_dataset_t *ds)
{
    return ds->num_node_types != 1 || ds->num_edge_types != 1;
}

fs_status_t fs_dataset_need_whole(const fs_dataset_t *ds, const char *what, fs_error_t *err)
{
    if (!ds->partition.parts) return FS_OK;
    return fs_error(err, FS_ERR_UNSUPPORTED, "%s: %s is part %d of %d of a partitioned dataset (partition %s): its ids "
                    "reach past its own rows, and %s takes a whole dataset in this release", what, ds->dir,
                    ds->partition.index, ds->partition.parts, ds->partition.id, what);
}

fs_status_t fs_dataset_need_one_graph(const fs_dataset_t *ds, const char *what, fs_error_t *err)
{
    fs_status_t whole = fs_dataset_need_whole(ds, what, err);
    if (whole != FS_OK) return whole;
    if (!fs_dataset_is_typed(ds)) return FS_OK;
    return fs_error(err, FS_ERR_UNSUPPORTED, "%s: %s is a typed graph (%d node types, %d edge types); %s takes a "
                    "dataset of one node type and one edge type in this release (featstore info describes it)",
                    what, ds->dir, ds->num_node_types, ds->num_edge_types, what);
}

int fs_dataset_node_type(const fs_dataset_t *ds, const char *name)
{
    for (int i = 0; i < ds->num_node_types; i++)
        if (strcmp(ds->node_types[i].name, name) == 0) return i;
    return -1;
}

int fs_dataset_edge_type(const fs_dataset_t *ds, const char *src, const char *rel, const char *dst)
{
    for (int i = 0; i < ds->num_edge_types; i++) {
        const fs_edge_type_t *e = &ds->edge_types[i];
        if (strcmp(e->src, src) == 0 && strcmp(e->rel, rel) == 0 && strcmp(e->dst, dst) == 0) return i;
    }
    return -1;
}

const fs_table_t *fs_node_type_table(const fs_node_type_t *t, const char *name)
{
    for (int i = 0; i < t->num_tables; i++)
        if (strcmp(t->tables[i].name, name) == 0) return &t->tables[i];
    return NULL;
}
