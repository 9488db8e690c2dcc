/* typed_build.c — the typed-graph builder (see typed_build.h).
 *
 * Design: the graph description is built as JSON alongside the arrays, one
 * object per type in the order the types are added, so it always names
 * exactly the files the writer holds. An edge type is laid out in three
 * steps: a counting sort by destination that scatters edge ids in input
 * order (each row then lists its edges by id: the order untimed types
 * want), a sort of each timed row by (time, id) — a total order, so any
 * thread count gives the same bytes; the keys carry their times, which
 * come out by position — and a fill of indices, edge ids and weights by
 * position, each a pure function of the order. The reverse type is the
 * same procedure with src and dst swapped, so edge i is edge i in both. */
#include "typed_build.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_parallel.h"
#include "import.h"

typedef struct {
    char name[FS_TYPE_NAME_MAX];
    int64_t count;
    json_t *j;                /* its entry in node_types */
    int64_t *labels;          /* when num_classes is to be counted at finish */
} node_t;

typedef struct {
    int src, dst;             /* node type indices */
    char rel[FS_TYPE_NAME_MAX];
    int64_t num_edges;
    json_t *j;
} edge_t;

struct fs_typed {
    fs_writer_t *w;
    int threads;
    json_t *node_list, *edge_list, *links;
    int num_nodes, num_edges;
    node_t *nodes;
    edge_t *edges;
};

fs_status_t fs_typed_create(fs_writer_t *w, int threads, fs_typed_t **out, fs_error_t *err)
{
    fs_typed_t *b = calloc(1, sizeof *b);
    if (b) {
        b->node_list = json_array(), b->edge_list = json_array(), b->links = json_object();
        b->w = w, b->threads = threads;
    }
    if (!b || !b->node_list || !b->edge_list || !b->links) {
        fs_typed_free(b);
        return fs_error(err, FS_ERR_NOMEM, "out of memory");
    }
    *out = b;
    return FS_OK;
}

void fs_typed_free(fs_typed_t *b)
{
    if (!b) return;
    json_decref(b->node_list);
    json_decref(b->edge_list);
    json_decref(b->links);
    free(b->nodes);
    free(b->edges);
    free(b);
}

/* ---- names and files -------------------------------------------------------- */

/* Table, split and link split names: they become part of a file name. */
static int valid_part_name(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n >= 64) return 0;
    for (size_t i = 0; i < n; i++)
        if (!(s[i] == '_' || s[i] == '-' || (s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z') ||
              (s[i] >= 'A' && s[i] <= 'Z')))
            return 0;
    return 1;
}

void fs_typed_file_name(char out[128], const char *prefix, char kind, int index, const char *what)
{
    if (snprintf(out, 128, "%s.%s.npy", prefix, what) < 128) return;
    snprintf(out, 128, "x-%c%d.%.60s.npy", kind, index, what);
}

static void edge_prefix(const fs_typed_t *b, const edge_t *e, char out[200])
{
    snprintf(out, 200, "%s.%s.%s", b->nodes[e->src].name, e->rel, b->nodes[e->dst].name);
}

/* Creates a FS_ROLE_FILE array of [rows] or [rows, cols] (cols > 0). */
static fs_status_t new_array(fs_typed_t *b, const char *file, fs_dtype_t dt, int64_t rows, int64_t cols, void **data,
                             fs_error_t *err)
{
    int64_t shape[2] = {rows, cols};
    return fs_writer_array(b->w, FS_ROLE_FILE, file, dt, cols > 0 ? 2 : 1, shape, data, err);
}

/* Adds {"file": f, "dtype": dt} under j[key][name]. */
static void add_table_entry(json_t *j, const char *table, const char *file, fs_dtype_t dt)
{
    json_t *feats = json_object_get(j, "features");
    if (!feats) json_object_set_new(j, "features", feats = json_object());
    json_object_set_new(feats, table, json_pack("{s:s, s:s}", "file", file, "dtype", fs_dtype_name(dt)));
}

static fs_status_t check_table(const char *owner, const char *table, fs_dtype_t dt, int64_t dim, fs_error_t *err)
{
    if (!valid_part_name(table) || strcmp(table, "labels") == 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s: table name '%s' must be 1-63 characters of [A-Za-z0-9_-] "
                        "and not 'labels'", owner, table ? table : "");
    if (dt != FS_DTYPE_F32 && dt != FS_DTYPE_F16 && dt != FS_DTYPE_BF16)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s: table '%s' must be float32, float16 or bfloat16", owner,
                        table);
    if (dim < 1) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s: table '%s' needs a width >= 1", owner, table);
    return FS_OK;
}

/* ---- node types ---------------------------------------------------------------- */

fs_status_t fs_typed_node_type(fs_typed_t *b, const char *name, int64_t count, int *index, fs_error_t *err)
{
    if (!fs_type_name_valid(name))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "node type name '%s' must be 1-63 letters, digits or "
                        "underscores", name ? name : "");
    for (int i = 0; i < b->num_nodes; i++)
        if (strcmp(b->nodes[i].name, name) == 0)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "node type '%s' is added twice", name);
    if (count < 0 || count == INT64_MAX)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "node type '%s': count %lld is out of range", name,
                        (long long)count);
    node_t *grown = realloc(b->nodes, (size_t)(b->num_nodes + 1) * sizeof *grown);
    if (!grown) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    b->nodes = grown;
    node_t *t = &b->nodes[b->num_nodes];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->count = count;
    t->j = json_pack("{s:s, s:I}", "name", name, "count", (json_int_t)count);
    if (!t->j || json_array_append_new(b->node_list, t->j) != 0) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    if (index) *index = b->num_nodes;
    b->num_nodes++;
    return FS_OK;
}

static fs_status_t get_node(fs_typed_t *b, int type, node_t **out, fs_error_t *err)
{
    if (type < 0 || type >= b->num_nodes)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "no node type %d (%d added)", type, b->num_nodes);
    *out = &b->nodes[type];
    return FS_OK;
}

/* "paper.labels.npy" and the like, for node type `type`. */
static void node_file(const fs_typed_t *b, int type, const char *what, char out[128])
{
    fs_typed_file_name(out, b->nodes[type].name, 'n', type, what);
}

fs_status_t fs_typed_node_table(fs_typed_t *b, int type, const char *table, fs_dtype_t dt, int64_t dim, void **rows,
                                fs_error_t *err)
{
    node_t *t = NULL;
    char owner[96], what[80], file[128];
    fs_status_t s = get_node(b, type, &t, err);
    if (s) return s;
    snprintf(owner, sizeof owner, "node type '%s'", t->name);
    if ((s = check_table(owner, table, dt, dim, err))) return s;
    snprintf(what, sizeof what, "table_%s", table);
    node_file(b, type, what, file);
    if ((s = new_array(b, file, dt, t->count, dim, rows, err))) return s;
    add_table_entry(t->j, table, file, dt);
    return FS_OK;
}

fs_status_t fs_typed_node_labels(fs_typed_t *b, int type, int64_t num_classes, int64_t **labels, fs_error_t *err)
{
    node_t *t = NULL;
    char file[128];
    fs_status_t s = get_node(b, type, &t, err);
    if (s) return s;
    node_file(b, type, "labels", file);
    if ((s = new_array(b, file, FS_DTYPE_I64, t->count, 0, (void **)labels, err))) return s;
    if (num_classes < 0) t->labels = *labels; /* counted at finish, once filled */
    json_object_set_new(t->j, "labels", json_pack("{s:s, s:I}", "file", file, "num_classes",
                                                  (json_int_t)(num_classes < 0 ? 0 : num_classes)));
    return FS_OK;
}

fs_status_t fs_typed_node_time(fs_typed_t *b, int type, int64_t **time, fs_error_t *err)
{
    node_t *t = NULL;
    char file[128];
    fs_status_t s = get_node(b, type, &t, err);
    if (s) return s;
    node_file(b, type, "time", file);
    if ((s = new_array(b, file, FS_DTYPE_I64, t->count, 0, (void **)time, err))) return s;
    json_object_set_new(t->j, "time", json_string(file));
    return FS_OK;
}

fs_status_t fs_typed_node_split(fs_typed_t *b, int type, const char *split, int64_t count, int64_t **ids,
                                fs_error_t *err)
{
    node_t *t = NULL;
    char what[80], file[128];
    fs_status_t s = get_node(b, type, &t, err);
    if (s) return s;
    if (!valid_part_name(split))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "node type '%s': split name '%s' must be 1-63 characters of "
                        "[A-Za-z0-9_-]", t->name, split ? split : "");
    snprintf(what, sizeof what, "split_%s", split);
    node_file(b, type, what, file);
    if ((s = new_array(b, file, FS_DTYPE_I64, count, 0, (void **)ids, err))) return s;
    json_t *splits = json_object_get(t->j, "splits");
    if (!splits) json_object_set_new(t->j, "splits", splits = json_object());
    json_object_set_new(splits, split, json_string(file));
    return FS_OK;
}

fs_status_t fs_typed_random_splits(fs_typed_t *b, int type, const int64_t *labels, const int pct[3], uint64_t seed,
                                   fs_error_t *err)
{
    node_t *t = NULL;
    fs_status_t s = get_node(b, type, &t, err);
    if (s || pct[0] + pct[1] + pct[2] == 0) return s;
    int64_t *pool = malloc((size_t)(t->count > 0 ? t->count : 1) * sizeof *pool), cnt[3], off = 0;
    if (!pool) return fs_error(err, FS_ERR_NOMEM, "out of memory for node type '%s''s split", t->name);
    s = fs_random_partition(t->count, labels, pct, seed, pool, cnt, err);
    static const char *const names[3] = {"train", "valid", "test"};
    for (int i = 0; i < 3 && s == FS_OK; i++) {
        int64_t *ids;
        if ((s = fs_typed_node_split(b, type, names[i], cnt[i], &ids, err))) break;
        memcpy(ids, pool + off, (size_t)cnt[i] * sizeof *ids);
        off += cnt[i];
    }
    free(pool);
    return s;
}

/* ---- edge types: the order ------------------------------------------------------- */

/* The first edge whose id is outside [0, limit), or -1. */
static int64_t first_out_of_range(const int64_t *ids, int64_t m, int64_t limit)
{
    for (int64_t i = 0; i < m; i++)
        if (ids[i] < 0 || ids[i] >= limit) return i;
    return -1;
}

typedef struct {
    int64_t time, id;
} tkey_t;

static int cmp_key(const void *a, const void *b)
{
    const tkey_t *x = a, *y = b;
    if (x->time != y->time) return x->time < y->time ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* A row arrives ordered by id, so a stable insertion sort by time gives
 * (time, id) order; long rows (hubs) take qsort on the pair. */
static void sort_row(tkey_t *k, int64_t n)
{
    if (n > 32) {
        qsort(k, (size_t)n, sizeof *k, cmp_key);
        return;
    }
    for (int64_t i = 1; i < n; i++) {
        tkey_t x = k[i];
        int64_t j = i;
        for (; j > 0 && k[j - 1].time > x.time; j--) k[j] = k[j - 1];
        k[j] = x;
    }
}

typedef struct {
    const int64_t *indptr;
    tkey_t *keys;
    int64_t *order, *time_out;
} sort_job_t;

static void sort_rows(void *p, int64_t b, int64_t e, int worker)
{
    (void)worker;
    sort_job_t *j = p;
    for (int64_t d = b; d < e; d++) {
        int64_t lo = j->indptr[d], hi = j->indptr[d + 1];
        sort_row(j->keys + lo, hi - lo);
        for (int64_t q = lo; q < hi; q++) j->order[q] = j->keys[q].id, j->time_out[q] = j->keys[q].time;
    }
}

/* indptr[rows+1] and order[m] (the edge id at each position) of the CSC
 * toward dst; timed, also time_out[m] by position. The keys of a timed
 * type travel with their times, so its row sorts read no scattered memory. */
static fs_status_t csc_order(const int64_t *dst, const int64_t *time, int64_t m, int64_t rows, int threads,
                             int64_t *indptr, int64_t *order, int64_t *time_out, fs_error_t *err)
{
    int64_t *next = malloc((size_t)(rows > 0 ? rows : 1) * sizeof *next);
    tkey_t *keys = time ? malloc((size_t)(m > 0 ? m : 1) * sizeof *keys) : NULL;
    if (!next || (time && !keys)) {
        free(next), free(keys);
        return fs_error(err, FS_ERR_NOMEM, "out of memory ordering %lld edges", (long long)m);
    }
    memset(indptr, 0, (size_t)(rows + 1) * sizeof *indptr);
    for (int64_t i = 0; i < m; i++) indptr[dst[i] + 1]++;
    for (int64_t d = 0; d < rows; d++) indptr[d + 1] += indptr[d];
    memcpy(next, indptr, (size_t)rows * sizeof *next);
    /* stable: ids ascend within a row */
    if (!time)
        for (int64_t i = 0; i < m; i++) order[next[dst[i]]++] = i;
    else
        for (int64_t i = 0; i < m; i++) keys[next[dst[i]]++] = (tkey_t){time[i], i};
    free(next);
    if (time) {
        sort_job_t j = {.indptr = indptr, .keys = keys, .order = order, .time_out = time_out};
        fs_parallel_for_dynamic(threads, rows, 4096, sort_rows, &j);
        free(keys);
    }
    return FS_OK;
}

/* ---- edge types: the arrays ------------------------------------------------------- */

typedef struct {
    const int64_t *order, *src;
    const float *weights;
    void *indices;
    int wide;                 /* int64 indices */
    int64_t *ids;
    float *weights_out;
} fill_job_t;

static void fill_positions(void *p, int64_t b, int64_t e, int worker)
{
    (void)worker;
    fill_job_t *j = p;
    for (int64_t q = b; q < e; q++) {
        int64_t i = j->order[q];
        if (j->wide) ((int64_t *)j->indices)[q] = j->src[i];
        else ((int32_t *)j->indices)[q] = (int32_t)j->src[i];
        if (j->ids) j->ids[q] = i;
        if (j->weights_out) j->weights_out[q] = j->weights[i];
    }
}

static int is_identity(const int64_t *order, int64_t m)
{
    for (int64_t q = 0; q < m; q++)
        if (order[q] != q) return 0;
    return 1;
}

/* Creates "<prefix>.<what>.npy" of [rows] and records it under key. */
static fs_status_t edge_array(fs_typed_t *b, edge_t *e, int index, const char *key, fs_dtype_t dt, int64_t rows,
                              void **data, fs_error_t *err)
{
    char prefix[200], file[128];
    edge_prefix(b, e, prefix);
    fs_typed_file_name(file, prefix, 'e', index, key);
    fs_status_t s = new_array(b, file, dt, rows, 0, data, err);
    if (s == FS_OK) json_object_set_new(e->j, key, json_string(file));
    return s;
}

/* One direction: src_ids -> dst_ids stored toward dst_ids. */
static fs_status_t write_direction(fs_typed_t *b, edge_t *e, int index, const int64_t *src, const int64_t *dst,
                                   const float *weights, const int64_t *time, fs_error_t *err)
{
    int64_t m = e->num_edges, rows = b->nodes[e->dst].count, *indptr, *order = malloc((size_t)(m > 0 ? m : 1) * 8);
    if (!order) return fs_error(err, FS_ERR_NOMEM, "out of memory for the order of %lld edges", (long long)m);
    int64_t *time_out = NULL;
    fill_job_t j = {.src = src, .weights = weights, .wide = b->nodes[e->src].count > INT32_MAX};
    fs_status_t s = edge_array(b, e, index, "indptr", FS_DTYPE_I64, rows + 1, (void **)&indptr, err);
    if (!s) s = edge_array(b, e, index, "indices", j.wide ? FS_DTYPE_I64 : FS_DTYPE_I32, m, &j.indices, err);
    if (!s && time) s = edge_array(b, e, index, "time", FS_DTYPE_I64, m, (void **)&time_out, err);
    if (!s) s = csc_order(dst, time, m, rows, b->threads, indptr, order, time_out, err);
    if (!s && !is_identity(order, m)) s = edge_array(b, e, index, "edge_ids", FS_DTYPE_I64, m, (void **)&j.ids, err);
    if (!s && weights) s = edge_array(b, e, index, "weights", FS_DTYPE_F32, m, (void **)&j.weights_out, err);
    j.order = order;
    if (!s) fs_parallel_for(b->threads, m, fill_positions, &j);
    free(order);
    return s;
}

static int find_node(const fs_typed_t *b, const char *name)
{
    for (int i = 0; name && i < b->num_nodes; i++)
        if (strcmp(b->nodes[i].name, name) == 0) return i;
    return -1;
}

static int find_edge(const fs_typed_t *b, int src, const char *rel, int dst)
{
    for (int i = 0; i < b->num_edges; i++)
        if (b->edges[i].src == src && b->edges[i].dst == dst && strcmp(b->edges[i].rel, rel) == 0) return i;
    return -1;
}

/* Appends the edge type's entry (no arrays yet). */
static fs_status_t add_edge_entry(fs_typed_t *b, int src, const char *rel, int dst, int64_t m, int *index,
                                  fs_error_t *err)
{
    if (find_edge(b, src, rel, dst) >= 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "edge type (%s, %s, %s) is added twice", b->nodes[src].name, rel,
                        b->nodes[dst].name);
    edge_t *grown = realloc(b->edges, (size_t)(b->num_edges + 1) * sizeof *grown);
    if (!grown) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    b->edges = grown;
    edge_t *e = &b->edges[b->num_edges];
    *e = (edge_t){.src = src, .dst = dst, .num_edges = m};
    snprintf(e->rel, sizeof e->rel, "%s", rel);
    e->j = json_pack("{s:s, s:s, s:s, s:I}", "src", b->nodes[src].name, "rel", rel, "dst", b->nodes[dst].name,
                     "num_edges", (json_int_t)m);
    if (!e->j || json_array_append_new(b->edge_list, e->j) != 0) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    *index = b->num_edges++;
    return FS_OK;
}

static fs_status_t check_edges(const fs_typed_t *b, const fs_typed_edges_t *e, int src, int dst, fs_error_t *err)
{
    if (src < 0 || dst < 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "edge type (%s, %s, %s) names node type '%s', which was not "
                        "added", e->src ? e->src : "", e->rel ? e->rel : "", e->dst ? e->dst : "",
                        src < 0 ? (e->src ? e->src : "") : e->dst);
    if (!fs_type_name_valid(e->rel) || (e->reverse && !fs_type_name_valid(e->reverse)))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "edge type (%s, %s, %s): relation names must be 1-63 letters, "
                        "digits or underscores", e->src, e->rel ? e->rel : "", e->dst);
    if (e->reverse && src == dst && strcmp(e->rel, e->reverse) == 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "edge type (%s, %s, %s): the reverse needs its own relation "
                        "name", e->src, e->rel, e->dst);
    if (e->num_edges < 0 || (e->num_edges > 0 && (!e->src_ids || !e->dst_ids)))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "edge type (%s, %s, %s): no edges given", e->src, e->rel, e->dst);
    const int64_t *ids[2] = {e->src_ids, e->dst_ids};
    int type[2] = {src, dst};
    for (int k = 0; k < 2; k++) {
        int64_t bad = first_out_of_range(ids[k], e->num_edges, b->nodes[type[k]].count);
        if (bad >= 0)
            return fs_error(err, FS_ERR_FORMAT, "edge type (%s, %s, %s): edge %lld (its position in the input) has "
                            "%s id %lld, outside [0, %lld) of node type '%s'", e->src, e->rel, e->dst, (long long)bad,
                            k ? "destination" : "source", (long long)ids[k][bad],
                            (long long)b->nodes[type[k]].count, b->nodes[type[k]].name);
    }
    return FS_OK;
}

fs_status_t fs_typed_edge_type(fs_typed_t *b, const fs_typed_edges_t *e, int *index, fs_error_t *err)
{
    int src = find_node(b, e->src), dst = find_node(b, e->dst), fwd, rev = -1;
    fs_status_t s = check_edges(b, e, src, dst, err);
    if (!s) s = add_edge_entry(b, src, e->rel, dst, e->num_edges, &fwd, err);
    if (!s && e->reverse) s = add_edge_entry(b, dst, e->reverse, src, e->num_edges, &rev, err);
    if (s) return s;
    if (rev >= 0) { /* both ways, as dataset_typed.c pairs them */
        json_object_set_new(b->edges[fwd].j, "reverse", json_string(e->reverse));
        json_object_set_new(b->edges[rev].j, "reverse", json_string(e->rel));
    }
    s = write_direction(b, &b->edges[fwd], fwd, e->src_ids, e->dst_ids, e->weights, e->time, err);
    if (!s && rev >= 0) s = write_direction(b, &b->edges[rev], rev, e->dst_ids, e->src_ids, e->weights, e->time, err);
    if (!s && index) *index = fwd;
    return s;
}

fs_status_t fs_typed_edge_table(fs_typed_t *b, int edge_type, const char *table, fs_dtype_t dt, int64_t dim,
                                void **rows, fs_error_t *err)
{
    if (edge_type < 0 || edge_type >= b->num_edges)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "no edge type %d (%d added)", edge_type, b->num_edges);
    edge_t *e = &b->edges[edge_type];
    char owner[240], prefix[200], what[80], file[128];
    snprintf(owner, sizeof owner, "edge type (%s, %s, %s)", b->nodes[e->src].name, e->rel, b->nodes[e->dst].name);
    fs_status_t s = check_table(owner, table, dt, dim, err);
    if (s) return s;
    edge_prefix(b, e, prefix);
    snprintf(what, sizeof what, "table_%s", table);
    fs_typed_file_name(file, prefix, 'e', edge_type, what);
    if ((s = new_array(b, file, dt, e->num_edges, dim, rows, err))) return s;
    add_table_entry(e->j, table, file, dt);
    return FS_OK;
}

/* ---- link splits ------------------------------------------------------------------ */

fs_status_t fs_typed_link_split(fs_typed_t *b, const char *name, int edge_type, int64_t count, unsigned parts,
                                int64_t num_neg, fs_typed_link_t *out, fs_error_t *err)
{
    memset(out, 0, sizeof *out);
    if (!valid_part_name(name) || json_object_get(b->links, name))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "link split name '%s' must be 1-63 characters of [A-Za-z0-9_-], "
                        "used once", name ? name : "");
    if (edge_type < 0 || edge_type >= b->num_edges || count < 0 || num_neg < 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "link split '%s': no edge type %d, or a negative count", name,
                        edge_type);
    const edge_t *e = &b->edges[edge_type];
    json_t *j = json_pack("{s:[s,s,s]}", "edge_type", b->nodes[e->src].name, e->rel, b->nodes[e->dst].name);
    if (!j || json_object_set_new(b->links, name, j) != 0) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    struct {
        const char *key;
        int64_t **data;
        int64_t cols;
        int want;
    } part[] = {{"src", &out->src, 0, 1},
                {"dst", &out->dst, 0, 1},
                {"label", &out->label, 0, (parts & FS_LINK_LABEL) != 0},
                {"time", &out->time, 0, (parts & FS_LINK_TIME) != 0},
                {"neg_dst", &out->neg_dst, num_neg, num_neg > 0}};
    for (size_t i = 0; i < sizeof part / sizeof *part; i++) {
        if (!part[i].want) continue;
        char prefix[80], file[128];
        snprintf(prefix, sizeof prefix, "link.%s", name);
        fs_typed_file_name(file, prefix, 'l', 0, part[i].key);
        fs_status_t s = new_array(b, file, FS_DTYPE_I64, count, part[i].cols, (void **)part[i].data, err);
        if (s) return s;
        json_object_set_new(j, part[i].key, json_string(file));
    }
    return FS_OK;
}

/* ---- finish ----------------------------------------------------------------------- */

fs_status_t fs_typed_finish(fs_typed_t *b, fs_error_t *err)
{
    for (int i = 0; i < b->num_nodes; i++)
        if (b->nodes[i].labels)
            json_object_set_new(json_object_get(b->nodes[i].j, "labels"), "num_classes",
                                json_integer(fs_count_classes(b->nodes[i].labels, b->nodes[i].count)));
    json_t *g = json_pack("{s:O, s:O}", "node_types", b->node_list, "edge_types", b->edge_list);
    if (g && json_object_size(b->links)) json_object_set(g, "link_splits", b->links);
    char *text = g ? json_dumps(g, JSON_COMPACT) : NULL;
    json_decref(g);
    fs_status_t s = text ? fs_writer_set_typed(b->w, text, err) : fs_error(err, FS_ERR_NOMEM, "out of memory");
    free(text);
    fs_typed_free(b);
    return s;
}
