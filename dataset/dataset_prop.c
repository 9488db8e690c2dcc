/* dataset_prop.c — reading the manifest's "propagation" object: how the hop
 * tables of `featstore propagate` were made (docs/algorithms.md §8;
 * docs/format.md).
 *
 * Design: the object is checked like every other part of the manifest, so
 * a dataset that opens has hop tables that are what it says. With rows
 * "all" the tables are feature tables, already opened with the others; here
 * they are only looked up. With rows "labelled" they are row tables of k
 * rows, opened here (ds_open_tables), with the row order's two arrays:
 * row_nodes [k] (the node of each row) and row_index [N] (the row of each
 * node, or -1). Those must be inverse to each other, and each split's rows
 * (row_splits: offset, count) must hold exactly that split's nodes, so a
 * chunked reader can trust a split to be one contiguous range of rows. Old
 * readers ignore the object; its files are then unused but harmless. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_internal.h"

static fs_status_t bad(open_ctx_t *c, const char *what, const char *detail)
{
    return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: \"propagation\": %s%s", c->dir, FS_MANIFEST, what, detail ? detail : "");
}

static fs_status_t read_strings(open_ctx_t *c, json_t *p, fs_propagation_t *pr)
{
    const char *src = ds_json_str(p, "source_table"), *norm = ds_json_str(p, "norm"), *graph = ds_json_str(p, "graph");
    const char *dts = ds_json_str(p, "dtype"), *rows = ds_json_str(p, "rows");
    if (!src || strlen(src) >= sizeof pr->source_table) return bad(c, "\"source_table\" must name a table", NULL);
    if (!norm || (strcmp(norm, "sym") && strcmp(norm, "rw") && strcmp(norm, "none")))
        return bad(c, "\"norm\" must be \"sym\", \"rw\" or \"none\"", NULL);
    if (!graph || (strcmp(graph, "stored") && strcmp(graph, "symmetrized")))
        return bad(c, "\"graph\" must be \"stored\" or \"symmetrized\"", NULL);
    pr->dtype = dts ? fs_dtype_from_name(dts) : FS_DTYPE_INVALID;
    if (pr->dtype != FS_DTYPE_F32 && pr->dtype != FS_DTYPE_F16 && pr->dtype != FS_DTYPE_BF16 && pr->dtype != FS_DTYPE_I8)
        return bad(c, "\"dtype\" must be float32, float16, bfloat16 or int8", NULL);
    if (!rows || (strcmp(rows, "all") && strcmp(rows, "labelled")))
        return bad(c, "\"rows\" must be \"all\" or \"labelled\"", NULL);
    json_t *hops = json_object_get(p, "hops"), *loops = json_object_get(p, "self_loops");
    if (!json_is_integer(hops) || json_integer_value(hops) < 1 || json_integer_value(hops) > FS_PROP_MAX_HOPS)
        return bad(c, "\"hops\" must be an integer in [1, 64]", NULL);
    if (!json_is_boolean(loops)) return bad(c, "\"self_loops\" must be true or false", NULL);
    snprintf(pr->source_table, sizeof pr->source_table, "%s", src);
    snprintf(pr->norm, sizeof pr->norm, "%s", norm);
    snprintf(pr->graph, sizeof pr->graph, "%s", graph);
    pr->hops = (int)json_integer_value(hops);
    pr->self_loops = json_is_true(loops);
    pr->labelled = strcmp(rows, "labelled") == 0;
    return FS_OK;
}

/* "tables": the R + 1 names, each found in `from` with the recorded dtype. */
static fs_status_t find_tables(open_ctx_t *c, json_t *p, fs_propagation_t *pr, const fs_table_t *from, int num_from)
{
    json_t *names = json_object_get(p, "tables");
    if (!json_is_array(names) || json_array_size(names) != (size_t)pr->hops + 1)
        return bad(c, "\"tables\" must list hops + 1 table names", NULL);
    pr->tables = calloc((size_t)pr->hops + 1, sizeof *pr->tables);
    if (!pr->tables) return fs_error(c->err, FS_ERR_NOMEM, "out of memory");
    for (int r = 0; r <= pr->hops; r++) {
        const char *name = json_string_value(json_array_get(names, (size_t)r));
        const fs_table_t *t = NULL;
        for (int i = 0; name && i < num_from && !t; i++)
            if (strcmp(from[i].name, name) == 0) t = &from[i];
        if (!t) return bad(c, "\"tables\" names a table the dataset does not have: ", name ? name : "(not a string)");
        if (t->dtype != pr->dtype) return bad(c, "a hop table's dtype is not the recorded \"dtype\": ", name);
        pr->tables[r] = *t;
        pr->num_tables++;
    }
    return FS_OK;
}

static fs_status_t open_i64(open_ctx_t *c, json_t *p, const char *key, int64_t rows, const int64_t **out)
{
    fs_npy_header_t h;
    const char *f;
    const void *d;
    fs_status_t s;
    if ((s = ds_need_file(c, p, key, &f)) || (s = ds_map_npy(c, f, &h, &d)) ||
        (s = ds_expect_dtype(c, f, &h, FS_DTYPE_I64, FS_DTYPE_I64, key)) || (s = ds_expect_shape(c, f, &h, 1, rows, key)))
        return s;
    *out = d;
    return FS_OK;
}

/* row_nodes and row_index are each other's inverse. */
static fs_status_t check_row_order(open_ctx_t *c, json_t *p, const fs_propagation_t *pr)
{
    int64_t n = c->ds->num_nodes, k = pr->num_rows, kept = 0;
    fs_status_t s;
    if ((s = ds_check_ids(c, ds_json_str(p, "row_nodes"), pr->row_nodes, FS_DTYPE_I64, k, 0, n, "node id")) ||
        (s = ds_check_ids(c, ds_json_str(p, "row_index"), pr->row_index, FS_DTYPE_I64, n, -1, k, "row")))
        return s;
    for (int64_t r = 0; r < k; r++)
        if (pr->row_index[pr->row_nodes[r]] != r)
            return fs_error(c->err, FS_ERR_FORMAT, "%s: \"propagation\": row %lld holds node %lld, but row_index gives "
                            "that node row %lld", c->dir, (long long)r, (long long)pr->row_nodes[r],
                            (long long)pr->row_index[pr->row_nodes[r]]);
    for (int64_t v = 0; v < n; v++) kept += pr->row_index[v] >= 0;
    if (kept != k)
        return fs_error(c->err, FS_ERR_FORMAT, "%s: \"propagation\": row_index gives %lld nodes a row, but there are "
                        "%lld rows", c->dir, (long long)kept, (long long)k);
    return FS_OK;
}

static fs_status_t read_row_splits(open_ctx_t *c, json_t *p, fs_propagation_t *pr)
{
    json_t *rs = json_object_get(p, "row_splits");
    if (!json_is_object(rs)) return bad(c, "\"row_splits\" must be an object", NULL);
    pr->row_splits = calloc(json_object_size(rs) + 1, sizeof *pr->row_splits);
    if (!pr->row_splits) return fs_error(c->err, FS_ERR_NOMEM, "out of memory");
    const char *name;
    json_t *v;
    int64_t next = 0;
    json_object_foreach(rs, name, v) {
        json_t *o = json_object_get(v, "offset"), *n = json_object_get(v, "count");
        if (strlen(name) >= sizeof pr->row_splits->name || !json_is_integer(o) || !json_is_integer(n))
            return bad(c, "each of \"row_splits\" must be {\"offset\": o, \"count\": n}: ", name);
        if (json_integer_value(o) != next || json_integer_value(n) < 0 || json_integer_value(n) > pr->num_rows - next)
            return bad(c, "\"row_splits\" must cover the rows in order, each starting where the last ends: ", name);
        fs_row_split_t *r = &pr->row_splits[pr->num_row_splits++];
        snprintf(r->name, sizeof r->name, "%s", name);
        r->offset = next;
        r->count = json_integer_value(n);
        next += r->count;
    }
    if (next != pr->num_rows) return bad(c, "\"row_splits\" do not cover every row", NULL);
    return FS_OK;
}

/* Each split's rows hold exactly its nodes (the row order is a bijection). */
static fs_status_t check_row_splits(open_ctx_t *c, const fs_propagation_t *pr)
{
    fs_dataset_t *ds = c->ds;
    int32_t *mark = calloc((size_t)ds->num_nodes + 1, sizeof *mark);
    if (!mark) return fs_error(c->err, FS_ERR_NOMEM, "out of memory");
    fs_status_t s = FS_OK;
    for (int i = 0; i < pr->num_row_splits && s == FS_OK; i++) {
        const fs_row_split_t *r = &pr->row_splits[i];
        const fs_idset_t *set = NULL;
        for (int j = 0; j < ds->num_splits && !set; j++)
            if (strcmp(ds->splits[j].name, r->name) == 0) set = &ds->splits[j];
        if (!set || set->count != r->count) {
            s = bad(c, "a row split is not a split of the dataset with that many nodes: ", r->name);
            break;
        }
        for (int64_t q = 0; q < set->count; q++) mark[set->ids[q]] = i + 1;
        for (int64_t q = r->offset; q < r->offset + r->count && s == FS_OK; q++)
            if (mark[pr->row_nodes[q]] != i + 1)
                s = fs_error(c->err, FS_ERR_FORMAT, "%s: \"propagation\": row %lld (node %lld) is in split %s's rows, "
                             "but the node is not in that split", c->dir, (long long)q, (long long)pr->row_nodes[q],
                             r->name);
    }
    free(mark);
    return s;
}

/* row_nodes served as the row table FS_ROW_NODE_TABLE, whose name no
 * feature table may take (a reader could not tell them apart). */
static fs_status_t node_table(open_ctx_t *c, json_t *p, fs_propagation_t *pr)
{
    for (int i = 0; i < c->ds->num_tables; i++)
        for (int k = -1; k < pr->num_tables; k++)
            if (strcmp(c->ds->tables[i].name, k < 0 ? FS_ROW_NODE_TABLE : pr->tables[k].name) == 0)
                return bad(c, "a feature table has the name of a row table: ", c->ds->tables[i].name);
    fs_table_t *t = &pr->node_table;
    *t = (fs_table_t){.name = FS_ROW_NODE_TABLE, .dtype = FS_DTYPE_I64, .rows = pr->num_rows, .dim = 1,
                      .row_bytes = sizeof(int64_t), .data = pr->row_nodes};
    snprintf(t->file, sizeof t->file, "%s", ds_json_str(p, "row_nodes"));
    return FS_OK;
}

static fs_status_t open_labelled(open_ctx_t *c, json_t *p, fs_propagation_t *pr, fs_table_t **row_tables, int *num)
{
    json_t *k = json_object_get(p, "num_rows"), *seed = json_object_get(p, "seed");
    if (!json_is_integer(k) || json_integer_value(k) < 0 || json_integer_value(k) > c->ds->num_nodes)
        return bad(c, "\"num_rows\" must be an integer in [0, num_nodes]", NULL);
    if (!json_is_integer(seed)) return bad(c, "\"seed\" must be an integer", NULL);
    pr->num_rows = json_integer_value(k);
    pr->seed = (uint64_t)json_integer_value(seed);
    json_t *rt = json_object_get(p, "row_tables");
    if (!json_is_object(rt)) return bad(c, "\"row_tables\" must be an object", NULL);
    fs_status_t s = ds_open_tables(c, rt, pr->num_rows, "propagation: ", row_tables, num);
    if (!s && *num != pr->hops + 1) s = bad(c, "\"row_tables\" must hold the hops + 1 tables and nothing else", NULL);
    if (!s) s = find_tables(c, p, pr, *row_tables, *num);
    if (!s) s = open_i64(c, p, "row_nodes", pr->num_rows, &pr->row_nodes);
    if (!s) s = open_i64(c, p, "row_index", c->ds->num_nodes, &pr->row_index);
    if (!s) s = check_row_order(c, p, pr);
    if (!s) s = read_row_splits(c, p, pr);
    if (!s) s = check_row_splits(c, pr);
    if (!s) s = node_table(c, p, pr);
    return s;
}

fs_status_t ds_open_propagation(open_ctx_t *c, json_t *p)
{
    fs_dataset_t *ds = c->ds;
    if (!p) return FS_OK;
    if (!json_is_object(p)) return bad(c, "must be an object", NULL);
    if (fs_dataset_is_typed(ds)) return bad(c, "hop tables need a dataset of one node type and one edge type", NULL);
    fs_propagation_t *pr = ds->propagation = calloc(1, sizeof *pr);
    if (!pr) return fs_error(c->err, FS_ERR_NOMEM, "out of memory");
    fs_status_t s = read_strings(c, p, pr);
    if (s) return s;
    if (!pr->labelled) return find_tables(c, p, pr, ds->tables, ds->num_tables);
    fs_table_t *row_tables = NULL;
    int num = 0;
    s = open_labelled(c, p, pr, &row_tables, &num);
    free(row_tables); /* pr->tables holds the copies */
    return s;
}

void ds_propagation_free(fs_dataset_t *ds)
{
    fs_propagation_t *pr = ds->propagation;
    if (!pr) return;
    free(pr->tables);
    free(pr->row_splits);
    free(pr);
    ds->propagation = NULL;
}
