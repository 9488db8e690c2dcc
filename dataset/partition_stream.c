/* partition_stream.c — the streaming assignment: Fennel (Tsourakakis et
 * al. 2014, docs/papers.md) in one pass over each node type's nodes in id
 * order.
 *
 * Why this shape: a one-pass partitioner's memory is what it keeps per
 * node (the owner, 4 bytes) and per part (its loads), never per edge, so
 * it partitions graphs whose edges do not fit in memory. A node's
 * neighbours are the sources of its CSC rows (every edge type toward its
 * type; for a symmetric graph, all of them), read in id order through
 * windows (window.h), so the resident set holds a few windows of the
 * topology. Each eligible part scores the node's neighbours already placed
 * there minus Fennel's marginal size cost alpha * gamma * |P|^(gamma - 1),
 * gamma = 1.5 and alpha = sqrt(V) * E / N^1.5 (per node type: its nodes and
 * in-edges). A part is eligible while its nodes, training nodes and
 * in-edges of the type stay within (1 + imbalance) x their means, and
 * within imbalance x the mean of the parts' running mean: the three loads
 * grow in step, so the end of the stream does not find the parts full of
 * hubs' edges but short of nodes and the others the reverse (on R-MAT
 * scale 10, 4 parts: 153 of 1,024 nodes had no eligible part and the
 * balance reached 1.08 with the final caps alone; 1 node and 1.03 in
 * step). When no part is eligible (a hub late in the stream), the least
 * loaded part takes the node. Ties go to the part with fewer nodes, then the lower index: the
 * result is a function of the dataset and V alone.
 *
 * Time: O(E + N * V) (every part is scored for every node). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "partition_internal.h"
#include "window.h"

#define FENNEL_GAMMA 1.5

/* One edge type toward the type being streamed, read row by row. */
typedef struct {
    const fs_edge_type_t *e;
    const int32_t *src_owner;      /* owners of its source type (-1: not placed yet) */
    fs_window_t ptr_win, idx_win;
} in_rows_t;

/* The scoring state of one node type. */
typedef struct {
    int V;
    double alpha, eps;
    double mean_nodes, mean_train, mean_edges;
    int64_t placed_nodes, placed_train, placed_edges; /* by every part so far */
    int32_t *hits;                 /* [V] neighbours of the current node in each part */
    int32_t *touched;              /* parts with hits, to clear */
    int num_touched;
} scorer_t;

/* Counts node v's placed neighbours per part; returns its in-degree. */
static int64_t count_neighbours(in_rows_t *in, int n_in, int64_t v, scorer_t *s)
{
    int64_t degree = 0;
    for (int k = 0; k < n_in; k++) {
        const fs_edge_type_t *e = in[k].e;
        int64_t b = e->indptr[v], end = e->indptr[v + 1];
        fs_window_touch(&in[k].ptr_win, &e->indptr[v], 2 * sizeof *e->indptr);
        fs_window_touch(&in[k].idx_win, (const char *)e->indices + b * fs_dtype_size(e->index_dtype),
                        (size_t)(end - b) * fs_dtype_size(e->index_dtype));
        degree += end - b;
        for (int64_t pos = b; pos < end; pos++) {
            int32_t p = in[k].src_owner[pt_source(e, pos)];
            if (p < 0) continue;
            if (s->hits[p]++ == 0) s->touched[s->num_touched++] = p;
        }
    }
    return degree;
}

/* The most loaded of a part's three loads, relative to their means, with
 * the node added. */
static double load_after(const scorer_t *s, const pt_load_t *l, int p, int train, int64_t degree)
{
    double r = (double)(l->nodes[p] + 1) / s->mean_nodes;
    if (s->mean_train > 0) r = fmax(r, (double)(l->train[p] + train) / s->mean_train);
    if (s->mean_edges > 0) r = fmax(r, (double)(l->edges[p] + degree) / s->mean_edges);
    return r;
}

/* What a part may hold of a load once x more is placed: at most eps x the
 * mean ahead of the parts' running mean, and never past (1 + eps) x the
 * final mean. */
static double allowance(const scorer_t *s, int64_t placed, int64_t x, double mean)
{
    return fmin((1 + s->eps) * mean, (double)(placed + x) / s->V + s->eps * mean);
}

static int eligible(const scorer_t *s, const pt_load_t *l, int p, int train, int64_t degree)
{
    return (double)(l->nodes[p] + 1) <= allowance(s, s->placed_nodes, 1, s->mean_nodes) &&
           (!train || (double)(l->train[p] + 1) <= allowance(s, s->placed_train, 1, s->mean_train)) &&
           (!degree || (double)(l->edges[p] + degree) <= allowance(s, s->placed_edges, degree, s->mean_edges));
}

/* The part node v goes to. */
static int choose(const scorer_t *s, const pt_load_t *l, int train, int64_t degree)
{
    int best = -1, lightest = 0;
    double best_score = 0, lightest_load = INFINITY;
    for (int p = 0; p < s->V; p++) {
        if (!eligible(s, l, p, train, degree)) {
            double load = load_after(s, l, p, train, degree);
            if (load < lightest_load) lightest_load = load, lightest = p;
            continue;
        }
        double score = s->hits[p] - s->alpha * FENNEL_GAMMA * pow((double)l->nodes[p], FENNEL_GAMMA - 1);
        if (best < 0 || score > best_score || (score == best_score && l->nodes[p] < l->nodes[best]))
            best = p, best_score = score;
    }
    return best >= 0 ? best : lightest;
}

static void scorer_init(scorer_t *s, const pt_job_t *j, int t)
{
    double n = (double)j->ds->node_types[t].count, V = j->V;
    s->V = j->V, s->eps = j->o->imbalance;
    s->alpha = n > 0 ? sqrt(V) * (double)j->in_edges[t] / pow(n, 1.5) : 0;
    s->mean_nodes = n / V, s->mean_train = (double)j->train_total[t] / V, s->mean_edges = (double)j->in_edges[t] / V;
    s->placed_nodes = s->placed_train = s->placed_edges = 0;
    s->num_touched = 0;
}

/* Streams node type t: every node placed in id order. */
static void stream_type(pt_job_t *j, int t, scorer_t *s, in_rows_t *in)
{
    const fs_dataset_t *ds = j->ds;
    int n_in = 0;
    for (int i = 0; i < ds->num_edge_types; i++) {
        const fs_edge_type_t *e = &ds->edge_types[i];
        if (e->dst_type != t) continue;
        in[n_in] = (in_rows_t){.e = e, .src_owner = j->owner[e->src_type]};
        fs_window_init(&in[n_in].ptr_win, e->indptr, (size_t)(ds->node_types[t].count + 1) * sizeof *e->indptr);
        fs_window_init(&in[n_in].idx_win, e->indices, (size_t)e->num_edges * fs_dtype_size(e->index_dtype));
        n_in++;
    }
    scorer_init(s, j, t);
    pt_load_t *l = &j->load[t];
    int64_t count = ds->node_types[t].count;
    for (int64_t v = 0; v < count; v++) {
        int64_t degree = count_neighbours(in, n_in, v, s);
        int train = pt_is_train(j, t, v), p = choose(s, l, train, degree);
        j->owner[t][v] = p;
        l->nodes[p]++, l->train[p] += train, l->edges[p] += degree;
        s->placed_nodes++, s->placed_train += train, s->placed_edges += degree;
        for (int k = 0; k < s->num_touched; k++) s->hits[s->touched[k]] = 0;
        s->num_touched = 0;
        if ((v & 0xffff) == 0) fs_progress_update(&j->progress, (double)v / (double)count, v, "nodes");
    }
    for (int k = 0; k < n_in; k++) fs_window_drop(&in[k].ptr_win), fs_window_drop(&in[k].idx_win);
}

fs_status_t pt_assign_stream(pt_job_t *j)
{
    const fs_dataset_t *ds = j->ds;
    scorer_t s = {.hits = calloc((size_t)j->V, sizeof *s.hits), .touched = malloc((size_t)j->V * sizeof *s.touched)};
    in_rows_t *in = calloc((size_t)ds->num_edge_types + 1, sizeof *in);
    if (!s.hits || !s.touched || !in) {
        free(s.hits), free(s.touched), free(in);
        return fs_error(j->err, FS_ERR_NOMEM, "out of memory for the streaming partitioner's %d parts", j->V);
    }
    for (int t = 0; t < ds->num_node_types; t++) {
        for (int64_t v = 0; v < ds->node_types[t].count; v++) j->owner[t][v] = -1;
        memset(j->load[t].nodes, 0, (size_t)j->V * sizeof(int64_t));
        memset(j->load[t].train, 0, (size_t)j->V * sizeof(int64_t));
        memset(j->load[t].edges, 0, (size_t)j->V * sizeof(int64_t));
    }
    for (int t = 0; t < ds->num_node_types; t++) stream_type(j, t, &s, in);
    free(s.hits), free(s.touched), free(in);
    return FS_OK;
}
