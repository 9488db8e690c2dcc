/* info.c — dataset facts for `featstore info`. Percentiles come from a
 * degree histogram when the maximum degree is moderate (O(N + max)), else a
 * sort, so they are exact either way. */
#include "info.h"

#include <stdlib.h>
#include <string.h>

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

fs_status_t fs_degree_stats(const fs_dataset_t *ds, fs_degree_stats_t *out, fs_error_t *err)
{
    memset(out, 0, sizeof *out);
    int64_t n = ds->num_nodes;
    if (n == 0) return FS_OK;
    const int64_t *p = ds->indptr;
    int64_t max = 0, min = INT64_MAX;
    for (int64_t v = 0; v < n; v++) {
        int64_t d = p[v + 1] - p[v];
        if (d > max) max = d;
        if (d < min) min = d;
        out->isolated += d == 0;
    }
    int64_t rank_med = (n - 1) / 2, rank_p99 = (int64_t)(0.99 * (double)(n - 1));
    if (max <= (1 << 26)) {
        int64_t *hist = calloc((size_t)max + 1, sizeof *hist);
        if (!hist) return fs_error(err, FS_ERR_NOMEM, "out of memory");
        for (int64_t v = 0; v < n; v++) hist[p[v + 1] - p[v]]++;
        int64_t seen = 0;
        out->median = out->p99 = -1;
        for (int64_t d = 0; d <= max; d++) {
            seen += hist[d];
            if (out->median < 0 && seen > rank_med) out->median = d;
            if (out->p99 < 0 && seen > rank_p99) out->p99 = d;
        }
        free(hist);
    } else {
        int64_t *deg = malloc((size_t)n * sizeof *deg);
        if (!deg) return fs_error(err, FS_ERR_NOMEM, "out of memory");
        for (int64_t v = 0; v < n; v++) deg[v] = p[v + 1] - p[v];
        qsort(deg, (size_t)n, sizeof *deg, cmp_i64);
        out->median = deg[rank_med];
        out->p99 = deg[rank_p99];
        free(deg);
    }
    out->min = min;
    out->max = max;
    out->mean = (double)ds->num_edges / (double)n;
    return FS_OK;
}

void fs_bytes_str(double b, char *buf, size_t n)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024 && u < 4) b /= 1024, u++;
    snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
}

static void print_footer(FILE *out, const fs_dataset_t *ds)
{
    char b[32];
    fs_bytes_str((double)fs_dataset_bytes(ds), b, sizeof b);
    fprintf(out, "on disk   %s in %d files\n", b, ds->num_maps);
    fprintf(out, "valid     yes: headers, shapes, dtypes, indptr monotone, ids in range%s%s\n",
            ds->version >= 2 ? ", edge ids unique, times ordered" : "",
            ds->checksums_verified ? ", checksums match" : " (checksums not verified)");
}

/* One table's line: shape, size, file, and how a compressed one is served. */
static void print_table(FILE *out, const char *indent, const fs_table_t *t)
{
    char b[32];
    fs_bytes_str((double)t->rows * (double)t->row_bytes, b, sizeof b);
    fprintf(out, "%s%-12s %-8s [%lld x %lld]  %s  (%s)", indent, t->name, fs_dtype_name(t->dtype), (long long)t->rows,
            (long long)t->dim, b, t->file);
    if (t->codec == FS_CODEC_INT8)
        fprintf(out, "  codec int8: served as float32 [%lld x %lld]", (long long)t->rows,
                (long long)(t->dim - FS_CODEC_INT8_HEAD));
    else if (t->codec == FS_CODEC_NARROW)
        fprintf(out, "  codec narrow: served as float32");
    fputc('\n', out);
}

static void print_tables(FILE *out, const char *indent, const fs_table_t *t, int n)
{
    for (int i = 0; i < n; i++) print_table(out, indent, &t[i]);
}

static void print_node_type(FILE *out, const fs_node_type_t *t)
{
    fprintf(out, "node type %s: %lld nodes%s\n", t->name, (long long)t->count, t->time ? ", timed" : "");
    if (t->labels) {
        int64_t labelled = 0;
        for (int64_t v = 0; v < t->count; v++) labelled += t->labels[v] >= 0;
        fprintf(out, "            labels: %lld classes, %lld labelled\n", (long long)t->num_classes, (long long)labelled);
    }
    print_tables(out, "            table ", t->tables, t->num_tables);
    for (int i = 0; i < t->num_splits; i++)
        fprintf(out, "            split %s: %lld ids\n", t->splits[i].name, (long long)t->splits[i].count);
}

static void print_edge_type(FILE *out, const fs_dataset_t *ds, const fs_edge_type_t *e)
{
    int64_t rows = ds->node_types[e->dst_type].count, max = 0;
    for (int64_t d = 0; d < rows; d++)
        if (e->indptr[d + 1] - e->indptr[d] > max) max = e->indptr[d + 1] - e->indptr[d];
    fprintf(out, "edge type (%s, %s, %s): %lld edges, %s sources, in-degree mean %.2f max %lld%s%s%s%s\n", e->src,
            e->rel, e->dst, (long long)e->num_edges, fs_dtype_name(e->index_dtype),
            rows ? (double)e->num_edges / (double)rows : 0.0, (long long)max, e->symmetric ? ", undirected" : "",
            e->edge_ids ? ", edge ids" : "", e->weights ? ", weighted" : "", e->time ? ", timed" : "");
    if (e->reverse >= 0) fprintf(out, "            reverse: (%s, %s, %s)\n", e->dst, ds->edge_types[e->reverse].rel, e->src);
    print_tables(out, "            table ", e->tables, e->num_tables);
}

/* Version 2 with several types: every type, then the link splits. */
static void print_typed(FILE *out, const fs_dataset_t *ds)
{
    fprintf(out, "dataset   %s\n", ds->dir);
    fprintf(out, "name      %s\n", ds->name[0] ? ds->name : "(unnamed)");
    fprintf(out, "format    version %d: %d node types, %d edge types, %d link splits\n", ds->version,
            ds->num_node_types, ds->num_edge_types, ds->num_link_splits);
    for (int i = 0; i < ds->num_node_types; i++) print_node_type(out, &ds->node_types[i]);
    for (int i = 0; i < ds->num_edge_types; i++) print_edge_type(out, ds, &ds->edge_types[i]);
    for (int i = 0; i < ds->num_link_splits; i++) {
        const fs_link_split_t *l = &ds->link_splits[i];
        const fs_edge_type_t *e = &ds->edge_types[l->edge_type];
        fprintf(out, "link split %s: %lld edges of (%s, %s, %s)%s%s", l->name, (long long)l->count, e->src, e->rel,
                e->dst, l->label ? ", labelled" : "", l->time ? ", timed" : "");
        if (l->neg_dst) fprintf(out, ", %lld given negatives each", (long long)l->num_neg);
        fprintf(out, "\n");
    }
    print_footer(out, ds);
}

/* B of a propagation, as a formula. */
static const char *prop_formula(const fs_propagation_t *p)
{
    int sym = strcmp(p->norm, "sym") == 0, rw = strcmp(p->norm, "rw") == 0;
    if (p->self_loops) return sym ? "D~^-1/2 (A+I) D~^-1/2" : rw ? "D~^-1 (A+I)" : "A+I";
    return sym ? "D^-1/2 A D^-1/2" : rw ? "D^-1 A" : "A";
}

/* The hop tables of `featstore propagate` and how they were made. */
static void print_propagation(FILE *out, const fs_dataset_t *ds)
{
    const fs_propagation_t *p = ds->propagation;
    if (!p) return;
    fprintf(out, "hops      hop_0..hop_%d = B^r %s, B = %s (norm %s%s) over the %s, %s, %s rows\n", p->hops,
            p->source_table, prop_formula(p), p->norm, p->self_loops ? ", self-loops" : "",
            strcmp(p->graph, "stored") == 0 ? "graph as stored" : "symmetrized graph (A | A^T)", fs_dtype_name(p->dtype),
            p->labelled ? "labelled" : "all");
    if (!p->labelled) return;
    fprintf(out, "          %lld rows, one per node of the splits, in a random order (seed %llu):", (long long)p->num_rows,
            (unsigned long long)p->seed);
    for (int i = 0; i < p->num_row_splits; i++)
        fprintf(out, " %s [%lld, %lld)%s", p->row_splits[i].name, (long long)p->row_splits[i].offset,
                (long long)(p->row_splits[i].offset + p->row_splits[i].count), i + 1 < p->num_row_splits ? "," : "");
    fprintf(out, "\n");
    print_tables(out, "          row table ", p->tables, p->num_tables);
}

void fs_info_print(FILE *out, const fs_dataset_t *ds, const fs_degree_stats_t *deg)
{
    if (fs_dataset_is_typed(ds)) {
        print_typed(out, ds);
        return;
    }
    char b[32];
    fprintf(out, "dataset   %s\n", ds->dir);
    fprintf(out, "name      %s\n", ds->name[0] ? ds->name : "(unnamed)");
    if (ds->version >= 2)
        fprintf(out, "format    version %d: node type %s, edge type (%s, %s, %s)\n", ds->version, ds->node_types[0].name,
                ds->edge_types[0].src, ds->edge_types[0].rel, ds->edge_types[0].dst);
    fprintf(out, "nodes     %lld\n", (long long)ds->num_nodes);
    fprintf(out, "edges     %lld  (%s, %s indices%s)\n", (long long)ds->num_edges,
            ds->symmetric ? "undirected" : "directed as stored", fs_dtype_name(ds->index_dtype),
            ds->edge_weights ? ", weighted" : "");
    fprintf(out, "degree    min %lld / median %lld / p99 %lld / max %lld  (mean %.2f, isolated %lld)\n",
            (long long)deg->min, (long long)deg->median, (long long)deg->p99, (long long)deg->max, deg->mean,
            (long long)deg->isolated);
    fs_bytes_str((double)(ds->num_nodes + 1) * 8 + (double)ds->num_edges * (double)fs_dtype_size(ds->index_dtype), b, sizeof b);
    fprintf(out, "topology  %s\n", b);
    if (ds->num_tables == 0) fprintf(out, "tables    (none)\n");
    for (int i = 0; i < ds->num_tables; i++) print_table(out, i ? "          " : "tables    ", &ds->tables[i]);
    if (ds->labels) {
        int64_t labelled = 0;
        for (int64_t v = 0; v < ds->num_nodes; v++) labelled += ds->labels[v] >= 0;
        fprintf(out, "labels    %lld classes, %lld of %lld nodes labelled\n", (long long)ds->num_classes,
                (long long)labelled, (long long)ds->num_nodes);
    } else {
        fprintf(out, "labels    (none)\n");
    }
    fprintf(out, "splits   ");
    if (ds->num_splits == 0) fprintf(out, " (none)");
    for (int i = 0; i < ds->num_splits; i++)
        fprintf(out, " %s %lld%s", ds->splits[i].name, (long long)ds->splits[i].count, i + 1 < ds->num_splits ? "," : "");
    fprintf(out, "\n");
    if (ds->node_ids) fprintf(out, "node ids  original ids kept in node_ids.npy (ids were compacted)\n");
    print_propagation(out, ds);
    print_footer(out, ds);
}
