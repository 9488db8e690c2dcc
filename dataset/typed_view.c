/* typed_view.c — builds the typed sampler's view of a dataset
 * (typed_view.h). Nothing is copied: the view points into the dataset's
 * mappings. */
#include "typed_view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

fs_status_t fs_typed_graph_init(fs_typed_graph_t *g, const fs_dataset_t *ds, fs_error_t *err)
{
    memset(g, 0, sizeof *g);
    int T = ds->num_node_types, E = ds->num_edge_types;
    g->count = calloc((size_t)T + 1, sizeof *g->count);
    g->type_name = calloc((size_t)T + 1, sizeof *g->type_name);
    g->node_time = calloc((size_t)T + 1, sizeof *g->node_time);
    g->etype = calloc((size_t)E + 1, sizeof *g->etype);
    g->etype_name = calloc((size_t)E + 1, sizeof *g->etype_name);
    g->time_rows = calloc((size_t)E + 1, sizeof *g->time_rows);
    g->num_edge_types = E;
    if (!g->count || !g->type_name || !g->node_time || !g->etype || !g->etype_name || !g->time_rows) {
        fs_typed_graph_free(g);
        return fs_error(err, FS_ERR_NOMEM, "typed view: out of memory");
    }
    for (int t = 0; t < T; t++) {
        g->count[t] = ds->node_types[t].count;
        g->type_name[t] = ds->node_types[t].name;
        g->node_time[t] = ds->node_types[t].time;
    }
    for (int e = 0; e < E; e++) {
        const fs_edge_type_t *x = &ds->edge_types[e];
        snprintf(g->etype_name[e], sizeof g->etype_name[e], "(%s, %s, %s)", x->src, x->rel, x->dst);
        g->etype[e] = (fs_typed_etype_t){.src_type = x->src_type, .dst_type = x->dst_type, .name = g->etype_name[e],
                                         .num_edges = x->num_edges, .indptr = x->indptr, .indices = x->indices,
                                         .index_dtype = x->index_dtype, .edge_ids = x->edge_ids,
                                         .weights = x->weights, .time = x->time, .reverse = x->reverse};
        for (int64_t d = 0; d < ds->node_types[x->dst_type].count; d++) /* once, for fs_limits' bounds */
            if (x->indptr[d + 1] - x->indptr[d] > g->etype[e].max_degree)
                g->etype[e].max_degree = x->indptr[d + 1] - x->indptr[d];
        fs_status_t st = x->time ? fs_typed_time_rows(&g->etype[e], g->count[x->dst_type], &g->time_rows[e], err) : FS_OK;
        if (st != FS_OK) {
            fs_typed_graph_free(g);
            return st;
        }
    }
    g->view = (fs_typed_view_t){.num_node_types = T, .count = g->count, .type_name = g->type_name,
                                .node_time = g->node_time, .num_edge_types = E, .etype = g->etype};
    return FS_OK;
}

void fs_typed_graph_free(fs_typed_graph_t *g)
{
    for (int e = 0; g->time_rows && e < g->num_edge_types; e++) /* set only after etype[e] and the counts */
        if (g->time_rows[e]) fs_typed_time_rows_free(g->time_rows[e], g->count[g->etype[e].dst_type]);
    free(g->time_rows);
    free(g->count);
    free(g->type_name);
    free(g->node_time);
    free(g->etype);
    free(g->etype_name);
    memset(g, 0, sizeof *g);
}
