/* partition_part.c — one part written as a version-2 dataset of its own
 * (docs/format.md "Partitioned datasets").
 *
 * Why this shape: the part's rows are its owned nodes in new-id order,
 * which is ascending source id (the renumbering keeps it), so every source
 * array is read forward through a window (window.h) and every output array
 * is filled forward through another: the resident set is the node arrays
 * plus a few windows whatever the dataset's size. Each owned destination's
 * CSC row is copied whole and in the source's order (a sampler's picks are
 * positions in a row), its sources renamed to their new ids, with the
 * weights, times and source edge ids of the same positions; the edge cut
 * and the part's loads are counted on the way. Files are named as every
 * version-2 writer names them (typed_build.h), plus "<type>.orig_ids.npy". */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partition_internal.h"
#include "typed_build.h"
#include "window.h"
#include "writer.h"

typedef struct {
    pt_job_t *j;
    int p;
    fs_writer_t *w;
    json_t *node_types, *edge_types, *links;
} part_t;

/* A source array read forward: its base, element size and window. */
typedef struct {
    const char *base;
    size_t size;
    fs_window_t win;
} reader_t;

/* An array of n elements of `size` bytes. */
static void reader_init(reader_t *r, const void *base, size_t size, int64_t n)
{
    r->base = base, r->size = size;
    fs_window_init(&r->win, base, (size_t)n * size);
}

/* Elements [at, at + n) of the array, recorded in its window. */
static const void *reader_at(reader_t *r, int64_t at, int64_t n)
{
    const char *p = r->base + (size_t)at * r->size;
    fs_window_touch(&r->win, p, (size_t)n * r->size);
    return p;
}

/* A FS_ROLE_FILE array of [rows] (cols 0) or [rows, cols]. */
static fs_status_t new_array(part_t *pp, const char *file, fs_dtype_t dt, int64_t rows, int64_t cols, int ndim,
                             void **data)
{
    int64_t shape[2] = {rows, cols};
    return fs_writer_array(pp->w, FS_ROLE_FILE, file, dt, ndim, shape, data, pp->j->err);
}

/* out[r] = src[orig[r]] for the part's rows of type t, `size` bytes a row. */
static void copy_rows(const pt_job_t *j, int t, int p, const void *src, size_t size, void *out)
{
    const int64_t *orig = j->orig[t] + j->first[t][p];
    int64_t n = j->first[t][p + 1] - j->first[t][p];
    reader_t in;
    fs_window_t ow;
    reader_init(&in, src, size, j->ds->node_types[t].count);
    fs_window_init(&ow, out, (size_t)n * size);
    for (int64_t r = 0; r < n; r++) {
        memcpy((char *)out + (size_t)r * size, reader_at(&in, orig[r], 1), size);
        fs_window_touch(&ow, (char *)out + (size_t)r * size, size);
    }
    fs_window_drop(&in.win), fs_window_drop(&ow);
}

/* A node array of type t (a table's rows, labels, times) into file `what`. */
static fs_status_t node_array(part_t *pp, int t, const char *what, const void *src, fs_dtype_t dt, int64_t dim,
                              int ndim, char file[128])
{
    pt_job_t *j = pp->j;
    int64_t n = j->first[t][pp->p + 1] - j->first[t][pp->p];
    void *out;
    fs_typed_file_name(file, j->ds->node_types[t].name, 'n', t, what);
    fs_status_t s = new_array(pp, file, dt, n, dim, ndim, &out);
    if (s == FS_OK) copy_rows(j, t, pp->p, src, (size_t)dim * fs_dtype_size(dt), out);
    return s;
}

static fs_status_t write_tables(part_t *pp, int t, json_t *o)
{
    const fs_node_type_t *nt = &pp->j->ds->node_types[t];
    json_t *feats = json_object();
    json_object_set_new(o, "features", feats);
    for (int i = 0; i < nt->num_tables; i++) {
        const fs_table_t *tab = &nt->tables[i];
        if (nt->labels && tab->data == nt->labels) continue; /* the labels, served as a table */
        char what[80], file[128];
        snprintf(what, sizeof what, "table_%s", tab->name);
        fs_status_t s = node_array(pp, t, what, tab->data, tab->dtype, tab->dim, 2, file);
        if (s != FS_OK) return s;
        json_t *entry = json_pack("{s:s, s:s}", "file", file, "dtype", fs_dtype_name(tab->dtype));
        if (tab->codec != FS_CODEC_NONE) json_object_set_new(entry, "codec", json_string(fs_codec_name(tab->codec)));
        json_object_set_new(feats, tab->name, entry);
    }
    return FS_OK;
}

/* The part's share of each split of type t, as new ids. */
static fs_status_t write_splits(part_t *pp, int t, json_t *o)
{
    pt_job_t *j = pp->j;
    const fs_node_type_t *nt = &j->ds->node_types[t];
    json_t *splits = json_object();
    json_object_set_new(o, "splits", splits);
    for (int i = 0; i < nt->num_splits; i++) {
        const pt_groups_t *g = &j->splits[t][i];
        int64_t b = g->off[pp->p], n = g->off[pp->p + 1] - b;
        char what[80], file[128];
        int64_t *ids;
        snprintf(what, sizeof what, "split_%s", nt->splits[i].name);
        fs_typed_file_name(file, nt->name, 'n', t, what);
        fs_status_t s = new_array(pp, file, FS_DTYPE_I64, n, 0, 1, (void **)&ids);
        if (s != FS_OK) return s;
        memcpy(ids, g->ids + b, (size_t)n * sizeof *ids);
        json_object_set_new(splits, nt->splits[i].name, json_string(file));
    }
    return FS_OK;
}

static fs_status_t write_node_type(part_t *pp, int t)
{
    pt_job_t *j = pp->j;
    const fs_node_type_t *nt = &j->ds->node_types[t];
    int64_t first = j->first[t][pp->p], n = j->first[t][pp->p + 1] - first;
    char file[128];
    json_t *o = json_pack("{s:s, s:I, s:I, s:I}", "name", nt->name, "count", (json_int_t)n, "first", (json_int_t)first,
                          "total", (json_int_t)nt->count);
    json_array_append_new(pp->node_types, o);
    fs_status_t s = write_tables(pp, t, o);
    if (!s && nt->labels && !(s = node_array(pp, t, "labels", nt->labels, FS_DTYPE_I64, 1, 1, file)))
        json_object_set_new(o, "labels", json_pack("{s:s, s:I}", "file", file, "num_classes", (json_int_t)nt->num_classes));
    if (!s && nt->time && !(s = node_array(pp, t, "time", nt->time, FS_DTYPE_I64, 1, 1, file)))
        json_object_set_new(o, "time", json_string(file));
    if (!s) s = write_splits(pp, t, o);
    int64_t *orig;
    fs_typed_file_name(file, nt->name, 'n', t, "orig_ids");
    if (!s && !(s = new_array(pp, file, FS_DTYPE_I64, n, 0, 1, (void **)&orig))) {
        memcpy(orig, j->orig[t] + first, (size_t)n * sizeof *orig);
        json_object_set_new(o, "orig_ids", json_string(file));
    }
    int64_t train = 0;
    for (int64_t r = 0; r < n; r++) train += pt_is_train(j, t, j->orig[t][first + r]);
    j->load[t].nodes[pp->p] = n, j->load[t].train[pp->p] = train;
    return s;
}

/* ---- edge types ---------------------------------------------------------------- */

/* The output arrays of one edge type's rows, and their windows. */
typedef struct {
    int64_t *indptr, *edge_ids, *time;
    void *indices;
    float *weights;
    fs_dtype_t index_dtype;
    fs_window_t win[4];
} rows_out_t;

static fs_status_t edge_array(part_t *pp, int i, const char *key, fs_dtype_t dt, int64_t rows, json_t *o, void **data)
{
    const fs_edge_type_t *e = &pp->j->ds->edge_types[i];
    char prefix[200], file[128];
    snprintf(prefix, sizeof prefix, "%s.%s.%s", e->src, e->rel, e->dst);
    fs_typed_file_name(file, prefix, 'e', i, key);
    fs_status_t s = new_array(pp, file, dt, rows, 0, 1, data);
    if (s == FS_OK) json_object_set_new(o, key, json_string(file));
    return s;
}

/* The edges of the part's destinations of edge type i. */
static int64_t count_edges(const pt_job_t *j, const fs_edge_type_t *e, int p)
{
    const int64_t *orig = j->orig[e->dst_type] + j->first[e->dst_type][p];
    int64_t n = j->first[e->dst_type][p + 1] - j->first[e->dst_type][p], m = 0;
    reader_t ptr;
    reader_init(&ptr, e->indptr, sizeof *e->indptr, j->ds->node_types[e->dst_type].count + 1);
    for (int64_t r = 0; r < n; r++) {
        const int64_t *q = reader_at(&ptr, orig[r], 2);
        m += q[1] - q[0];
    }
    fs_window_drop(&ptr.win);
    return m;
}

static fs_status_t make_rows_out(part_t *pp, int i, int64_t n, int64_t m, json_t *o, rows_out_t *out)
{
    const fs_edge_type_t *e = &pp->j->ds->edge_types[i];
    memset(out, 0, sizeof *out);
    out->index_dtype = e->index_dtype;
    fs_status_t s = edge_array(pp, i, "indptr", FS_DTYPE_I64, n + 1, o, (void **)&out->indptr);
    if (!s) s = edge_array(pp, i, "indices", e->index_dtype, m, o, &out->indices);
    if (!s) s = edge_array(pp, i, "edge_ids", FS_DTYPE_I64, m, o, (void **)&out->edge_ids);
    if (!s && e->weights) s = edge_array(pp, i, "weights", FS_DTYPE_F32, m, o, (void **)&out->weights);
    if (!s && e->time) s = edge_array(pp, i, "time", FS_DTYPE_I64, m, o, (void **)&out->time);
    fs_window_init(&out->win[0], out->indices, (size_t)m * fs_dtype_size(e->index_dtype));
    fs_window_init(&out->win[1], out->edge_ids, (size_t)m * sizeof *out->edge_ids);
    fs_window_init(&out->win[2], out->weights, (size_t)m * sizeof *out->weights);
    fs_window_init(&out->win[3], out->time, (size_t)m * sizeof *out->time);
    return s;
}

/* Copies the part's rows of edge type i; returns its cut edges. */
static int64_t copy_edge_rows(const pt_job_t *j, const fs_edge_type_t *e, int p, rows_out_t *out)
{
    const int64_t *orig = j->orig[e->dst_type] + j->first[e->dst_type][p], *new_id = j->new_id[e->src_type];
    const int32_t *owner = j->owner[e->src_type];
    uint32_t *uses = j->uses[e->src_type];
    int64_t n = j->first[e->dst_type][p + 1] - j->first[e->dst_type][p], q = 0, cut = 0;
    int64_t rows = j->ds->node_types[e->dst_type].count, m = e->num_edges;
    reader_t ptr, idx, eid, wt, tm;
    reader_init(&ptr, e->indptr, sizeof *e->indptr, rows + 1);
    reader_init(&idx, e->indices, fs_dtype_size(e->index_dtype), m);
    reader_init(&eid, e->edge_ids, sizeof *e->edge_ids, m), reader_init(&wt, e->weights, sizeof *e->weights, m);
    reader_init(&tm, e->time, sizeof *e->time, m);
    for (int64_t r = 0; r < n; r++) {
        const int64_t *row = reader_at(&ptr, orig[r], 2);
        int64_t b = row[0], len = row[1] - row[0];
        reader_at(&idx, b, len);
        for (int64_t k = 0; k < len; k++) {
            int64_t s = pt_source(e, b + k);
            if (out->index_dtype == FS_DTYPE_I32) ((int32_t *)out->indices)[q + k] = (int32_t)new_id[s];
            else ((int64_t *)out->indices)[q + k] = new_id[s];
            cut += owner[s] != p;
            uses[s] += uses[s] != UINT32_MAX;
            out->edge_ids[q + k] = e->edge_ids ? ((const int64_t *)reader_at(&eid, b + k, 1))[0] : b + k;
        }
        if (out->weights) memcpy(out->weights + q, reader_at(&wt, b, len), (size_t)len * sizeof *out->weights);
        if (out->time) memcpy(out->time + q, reader_at(&tm, b, len), (size_t)len * sizeof *out->time);
        fs_window_touch(&out->win[0], (char *)out->indices + q * fs_dtype_size(out->index_dtype),
                        (size_t)len * fs_dtype_size(out->index_dtype));
        fs_window_touch(&out->win[1], out->edge_ids + q, (size_t)len * sizeof *out->edge_ids);
        if (out->weights) fs_window_touch(&out->win[2], out->weights + q, (size_t)len * sizeof *out->weights);
        if (out->time) fs_window_touch(&out->win[3], out->time + q, (size_t)len * sizeof *out->time);
        q += len;
        out->indptr[r + 1] = q;
    }
    fs_window_drop(&ptr.win), fs_window_drop(&idx.win), fs_window_drop(&eid.win), fs_window_drop(&wt.win);
    fs_window_drop(&tm.win);
    for (int k = 0; k < 4; k++) fs_window_drop(&out->win[k]);
    return cut;
}

static fs_status_t write_edge_type(part_t *pp, int i)
{
    pt_job_t *j = pp->j;
    const fs_edge_type_t *e = &j->ds->edge_types[i];
    int64_t n = j->first[e->dst_type][pp->p + 1] - j->first[e->dst_type][pp->p], m = count_edges(j, e, pp->p);
    json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:I}", "src", e->src, "rel", e->rel, "dst", e->dst, "num_edges",
                          (json_int_t)m, "total_edges", (json_int_t)e->num_edges);
    json_array_append_new(pp->edge_types, o);
    if (e->reverse >= 0) json_object_set_new(o, "reverse", json_string(j->ds->edge_types[e->reverse].rel));
    if (e->symmetric) json_object_set_new(o, "symmetric", json_true());
    rows_out_t out;
    fs_status_t s = make_rows_out(pp, i, n, m, o, &out);
    if (s != FS_OK) return s;
    j->cut[i] += copy_edge_rows(j, e, pp->p, &out);
    j->load[e->dst_type].edges[pp->p] += m;
    return FS_OK;
}

/* ---- link splits ----------------------------------------------------------------- */

/* The part's positives of link split i (those whose destination it owns). */
static fs_status_t write_link_split(part_t *pp, int i)
{
    pt_job_t *j = pp->j;
    const fs_link_split_t *l = &j->ds->link_splits[i];
    const fs_edge_type_t *e = &j->ds->edge_types[l->edge_type];
    const pt_groups_t *g = &j->links[i];
    int64_t b = g->off[pp->p], n = g->off[pp->p + 1] - b;
    json_t *o = json_pack("{s:[s,s,s]}", "edge_type", e->src, e->rel, e->dst);
    json_object_set_new(pp->links, l->name, o);
    struct {
        const char *key;
        const int64_t *src;
        const int64_t *map;        /* new ids of this type, or NULL: copied */
        int64_t cols;
    } arr[] = {{"src", l->src, j->new_id[e->src_type], 1}, {"dst", l->dst, j->new_id[e->dst_type], 1},
               {"label", l->label, NULL, 1}, {"time", l->time, NULL, 1},
               {"neg_dst", l->neg_dst, j->new_id[e->dst_type], l->num_neg}};
    for (size_t k = 0; k < sizeof arr / sizeof *arr; k++) {
        if (!arr[k].src) continue;
        char prefix[80], file[128];
        int64_t *out, cols = arr[k].cols;
        snprintf(prefix, sizeof prefix, "link.%s", l->name);
        fs_typed_file_name(file, prefix, 'l', i, arr[k].key);
        fs_status_t s = new_array(pp, file, FS_DTYPE_I64, n, cols, k == 4 ? 2 : 1, (void **)&out);
        if (s != FS_OK) return s;
        reader_t in;
        reader_init(&in, arr[k].src, (size_t)cols * sizeof(int64_t), l->count);
        for (int64_t r = 0; r < n; r++) {
            const int64_t *v = reader_at(&in, g->ids[b + r], 1);
            for (int64_t c = 0; c < cols; c++) out[r * cols + c] = arr[k].map ? arr[k].map[v[c]] : v[c];
        }
        fs_window_drop(&in.win);
        json_object_set_new(o, arr[k].key, json_string(file));
    }
    return FS_OK;
}

/* ---- the part ----------------------------------------------------------------------- */

static fs_status_t describe(part_t *pp)
{
    pt_job_t *j = pp->j;
    json_t *g = json_pack("{s:O, s:O, s:O, s:{s:s, s:i, s:i}}", "node_types", pp->node_types, "edge_types",
                          pp->edge_types, "link_splits", pp->links, "partition", "id", j->id, "index", pp->p, "parts",
                          j->V);
    json_t *src = json_pack("{s:s, s:s, s:s, s:i, s:i}", "tool", "featstore partition", "dataset", j->o->dataset,
                            "method", j->o->method == FS_PARTITION_METIS ? "metis" : "stream", "part", pp->p, "parts",
                            j->V);
    char *gt = json_dumps(g, JSON_PRESERVE_ORDER), *st = json_dumps(src, JSON_PRESERVE_ORDER);
    fs_status_t s = gt && st ? fs_writer_set_typed(pp->w, gt, j->err) : fs_error(j->err, FS_ERR_NOMEM, "out of memory");
    if (s == FS_OK) s = fs_writer_set_source(pp->w, st, j->err);
    fs_writer_set_meta(pp->w, j->ds->name, 0, 0, 0, 0);
    free(gt), free(st);
    json_decref(g), json_decref(src);
    return s;
}

static fs_status_t fill_part(part_t *pp)
{
    const fs_dataset_t *ds = pp->j->ds;
    fs_status_t s = FS_OK;
    for (int t = 0; t < ds->num_node_types && !s; t++) s = write_node_type(pp, t);
    for (int i = 0; i < ds->num_edge_types && !s; i++) s = write_edge_type(pp, i);
    for (int i = 0; i < ds->num_link_splits && !s; i++) s = write_link_split(pp, i);
    if (!s) s = describe(pp);
    return s;
}

fs_status_t pt_write_part(pt_job_t *j, int p)
{
    char dir[4300], manifest[4400];
    snprintf(dir, sizeof dir, "%s/" PT_PART_DIR, j->tmp_dir, p);
    part_t pp = {.j = j, .p = p, .node_types = json_array(), .edge_types = json_array(), .links = json_object()};
    fs_status_t s = fs_writer_create(dir, 0, &pp.w, j->err);
    if (s == FS_OK) s = fill_part(&pp);
    if (s == FS_OK) s = fs_writer_commit(pp.w, j->err);
    else fs_writer_abort(pp.w);
    json_decref(pp.node_types), json_decref(pp.edge_types), json_decref(pp.links);
    snprintf(manifest, sizeof manifest, "%s/%s", dir, FS_MANIFEST);
    if (s == FS_OK) s = pt_file_hash(manifest, j->part_hash[p], j->err);
    return s;
}
