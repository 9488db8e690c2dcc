/* partition_metis.c — the METIS assignment (Karypis and Kumar's multilevel
 * k-way partitioning, Debian's libmetis 5.1 with its 32-bit idx_t), in a
 * build that found METIS (FS_HAVE_METIS); without it, a clear refusal.
 *
 * Why this shape: METIS partitions one undirected graph without self
 * loops, so every edge type is merged into one, node types laid end to end
 * (type t's node v is vertex offset[t] + v), each edge given both ways and
 * each adjacency list sorted and de-duplicated. Each vertex weighs 1 in
 * the first constraint, 1 if it is a training node in the second (when
 * the dataset has a training split) and its in-edges in the last (ncon = 3
 * or 2), so METIS balances the nodes, the training nodes and the in-edges
 * within (1 + imbalance), the three loads the streaming partitioner
 * balances: with nodes and training nodes alone, R-MAT scale 10 in 16
 * parts had a part with 3.3 x the mean in-edges. Memory: the graph METIS is
 * given, 4 bytes per vertex and per adjacency entry, which is why the size
 * check below comes first and names --method stream. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "partition_internal.h"
#include "window.h"

fs_status_t fs_partition_metis_fits(int64_t nodes, int64_t edges, fs_error_t *err)
{
    if (nodes >= 0 && edges >= 0 && nodes <= INT32_MAX && edges <= INT32_MAX / 2) return FS_OK;
    return fs_error(err, FS_ERR_UNSUPPORTED, "the graph is too large for METIS: %lld nodes and up to 2 x %lld = %lld "
                    "symmetrised edge entries, but this METIS counts both in 32 bits (at most %d); use --method "
                    "stream", (long long)nodes, (long long)edges, (long long)(edges > INT64_MAX / 2 ? INT64_MAX : 2 * edges),
                    INT32_MAX);
}

#ifndef FS_HAVE_METIS

int fs_partition_have_metis(void) { return 0; }

fs_status_t pt_assign_metis(pt_job_t *j)
{
    return fs_error(j->err, FS_ERR_UNSUPPORTED, "--method metis: this build of featstore lacks METIS (install "
                    "libmetis-dev and rebuild); --method stream needs nothing more");
}

#else

#include <metis.h>

int fs_partition_have_metis(void) { return 1; }

/* The symmetrised graph in METIS's CSR. */
typedef struct {
    idx_t nvtxs, ncon;
    idx_t *xadj, *adjncy, *vwgt, *part;
    int64_t *offset;               /* [types] the first vertex of each node type */
} metis_graph_t;

static void graph_free(metis_graph_t *g)
{
    free(g->xadj), free(g->adjncy), free(g->vwgt), free(g->part), free(g->offset);
}

/* Calls fn(g, u, v) for every stored edge u <- v between distinct vertices,
 * reading the topology through windows. */
static void each_edge(const pt_job_t *j, metis_graph_t *g, void (*fn)(metis_graph_t *, idx_t, idx_t))
{
    const fs_dataset_t *ds = j->ds;
    for (int i = 0; i < ds->num_edge_types; i++) {
        const fs_edge_type_t *e = &ds->edge_types[i];
        fs_window_t pw, iw;
        size_t isz = fs_dtype_size(e->index_dtype);
        fs_window_init(&pw, e->indptr, (size_t)(ds->node_types[e->dst_type].count + 1) * sizeof *e->indptr);
        fs_window_init(&iw, e->indices, (size_t)e->num_edges * isz);
        for (int64_t d = 0; d < ds->node_types[e->dst_type].count; d++) {
            fs_window_touch(&pw, &e->indptr[d], 2 * sizeof *e->indptr);
            fs_window_touch(&iw, (const char *)e->indices + e->indptr[d] * isz,
                            (size_t)(e->indptr[d + 1] - e->indptr[d]) * isz);
            idx_t u = (idx_t)(g->offset[e->dst_type] + d);
            for (int64_t pos = e->indptr[d]; pos < e->indptr[d + 1]; pos++) {
                idx_t v = (idx_t)(g->offset[e->src_type] + pt_source(e, pos));
                if (u != v) fn(g, u, v);
            }
        }
        fs_window_drop(&pw), fs_window_drop(&iw);
    }
}

static void count_both(metis_graph_t *g, idx_t u, idx_t v) { g->xadj[u + 1]++, g->xadj[v + 1]++; }

static void fill_both(metis_graph_t *g, idx_t u, idx_t v)
{
    g->adjncy[g->part[u]++] = v; /* part[] is the fill cursor until METIS runs */
    g->adjncy[g->part[v]++] = u;
}

static int cmp_idx(const void *a, const void *b)
{
    idx_t x = *(const idx_t *)a, y = *(const idx_t *)b;
    return (x > y) - (x < y);
}

/* Sorts each list, drops repeats, and closes the gaps. */
static void dedup(metis_graph_t *g)
{
    idx_t out = 0;
    for (idx_t u = 0; u < g->nvtxs; u++) {
        idx_t b = g->xadj[u], e = g->xadj[u + 1];
        qsort(g->adjncy + b, (size_t)(e - b), sizeof *g->adjncy, cmp_idx);
        g->xadj[u] = out;
        for (idx_t k = b; k < e; k++)
            if (k == b || g->adjncy[k] != g->adjncy[k - 1]) g->adjncy[out++] = g->adjncy[k];
    }
    g->xadj[g->nvtxs] = out;
}

/* The last constraint: each vertex's in-edges (its CSC rows' lengths), the
 * load a part's sampling serves. */
static void add_in_edges(const pt_job_t *j, metis_graph_t *g)
{
    const fs_dataset_t *ds = j->ds;
    for (int i = 0; i < ds->num_edge_types; i++) {
        const fs_edge_type_t *e = &ds->edge_types[i];
        fs_window_t pw;
        fs_window_init(&pw, e->indptr, (size_t)(ds->node_types[e->dst_type].count + 1) * sizeof *e->indptr);
        for (int64_t d = 0; d < ds->node_types[e->dst_type].count; d++) {
            fs_window_touch(&pw, &e->indptr[d], 2 * sizeof *e->indptr);
            g->vwgt[(g->offset[e->dst_type] + d) * g->ncon + g->ncon - 1] += (idx_t)(e->indptr[d + 1] - e->indptr[d]);
        }
        fs_window_drop(&pw);
    }
}

static fs_status_t build_graph(pt_job_t *j, metis_graph_t *g)
{
    const fs_dataset_t *ds = j->ds;
    int64_t nodes = 0, edges = 0, train = 0;
    if (!(g->offset = calloc((size_t)ds->num_node_types, sizeof *g->offset))) goto nomem;
    for (int t = 0; t < ds->num_node_types; t++) g->offset[t] = nodes, nodes += ds->node_types[t].count;
    for (int i = 0; i < ds->num_edge_types; i++) edges += ds->edge_types[i].num_edges;
    for (int t = 0; t < ds->num_node_types; t++) train += j->train_total[t];
    fs_status_t s = fs_partition_metis_fits(nodes, edges, j->err);
    if (s != FS_OK) return s;
    g->nvtxs = (idx_t)nodes, g->ncon = train > 0 ? 3 : 2;
    g->xadj = calloc((size_t)nodes + 1, sizeof *g->xadj);
    g->part = calloc((size_t)nodes + 1, sizeof *g->part);
    g->vwgt = malloc((size_t)nodes * (size_t)g->ncon * sizeof *g->vwgt);
    if (!g->xadj || !g->part || !g->vwgt) goto nomem;
    each_edge(j, g, count_both);
    for (idx_t u = 0; u < g->nvtxs; u++) g->xadj[u + 1] += g->xadj[u];
    if (!(g->adjncy = malloc(((size_t)g->xadj[g->nvtxs] + 1) * sizeof *g->adjncy))) goto nomem;
    memcpy(g->part, g->xadj, (size_t)nodes * sizeof *g->part);
    each_edge(j, g, fill_both);
    dedup(g);
    for (int t = 0; t < ds->num_node_types; t++)
        for (int64_t v = 0; v < ds->node_types[t].count; v++) {
            idx_t *w = &g->vwgt[(g->offset[t] + v) * g->ncon];
            w[0] = 1, w[g->ncon - 1] = 0;
            if (g->ncon == 3) w[1] = pt_is_train(j, t, v);
        }
    add_in_edges(j, g);
    return FS_OK;
nomem:
    return fs_error(j->err, FS_ERR_NOMEM, "out of memory building METIS's graph");
}

static fs_status_t run_metis(pt_job_t *j, metis_graph_t *g)
{
    idx_t options[METIS_NOPTIONS], nparts = j->V, objval = 0;
    real_t ub = (real_t)(1 + j->o->imbalance), ubvec[3] = {ub, ub, ub};
    METIS_SetDefaultOptions(options);
    options[METIS_OPTION_SEED] = (idx_t)(j->o->seed & 0x7fffffff);
    options[METIS_OPTION_NUMBERING] = 0;
    int rc = METIS_PartGraphKway(&g->nvtxs, &g->ncon, g->xadj, g->adjncy, g->vwgt, NULL, NULL, &nparts, NULL, ubvec,
                                 options, &objval, g->part);
    if (rc == METIS_OK) return FS_OK;
    return fs_error(j->err, rc == METIS_ERROR_MEMORY ? FS_ERR_NOMEM : FS_ERR_INTERNAL, "METIS_PartGraphKway failed "
                    "(%s) on %d vertices and %d adjacency entries into %d parts",
                    rc == METIS_ERROR_INPUT ? "input error" : rc == METIS_ERROR_MEMORY ? "out of memory" : "error",
                    (int)g->nvtxs, (int)g->xadj[g->nvtxs], j->V);
}

fs_status_t pt_assign_metis(pt_job_t *j)
{
    const fs_dataset_t *ds = j->ds;
    if (j->V == 1) { /* one part: nothing to ask METIS */
        for (int t = 0; t < ds->num_node_types; t++) memset(j->owner[t], 0, (size_t)ds->node_types[t].count * 4);
        return FS_OK;
    }
    metis_graph_t g = {0};
    fs_status_t s = build_graph(j, &g);
    if (s == FS_OK) s = run_metis(j, &g);
    if (s == FS_OK)
        for (int t = 0; t < ds->num_node_types; t++)
            for (int64_t v = 0; v < ds->node_types[t].count; v++) j->owner[t][v] = (int32_t)g.part[g.offset[t] + v];
    graph_free(&g);
    return s;
}

#endif
