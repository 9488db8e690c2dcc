/* fs_limits.c — see fs_limits.h. */
#include "fs_limits.h"

#include <math.h>

void fs_limits_default(fs_limits_t *l)
{
    l->max_ids = 16 << 20;
    l->max_fanout_product = 1 << 20;
    l->max_response_bytes = 4LL << 30;
}

fs_status_t fs_limits_check(const fs_limits_t *l, int64_t n, const fs_sample_req_t *req, size_t row_bytes,
                            fs_error_t *err)
{
    if (n < 0) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "negative id count %lld", (long long)n);
    if (n > l->max_ids)
        return fs_error(err, FS_ERR_RESOURCE, "%lld ids in one request; the limit is %lld (max_ids)", (long long)n,
                        (long long)l->max_ids);
    if (!req) {
        if ((double)n * (double)row_bytes > (double)l->max_response_bytes)
            return fs_error(err, FS_ERR_RESOURCE, "response of %.0f bytes; the limit is %lld (max_response_bytes)",
                            (double)n * (double)row_bytes, (long long)l->max_response_bytes);
        return FS_OK;
    }
    if (req->num_hops < 1 || req->num_hops > FS_MAX_HOPS)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%d hops requested, must be 1..%d", req->num_hops, FS_MAX_HOPS);
    double product = 1;
    for (int h = 0; h < req->num_hops; h++) {
        if (req->fanout[h] == 0 || req->fanout[h] < FS_FANOUT_ALL)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "fanout[%d] is %d, must be > 0 or -1 (all)", h, req->fanout[h]);
        product *= req->fanout[h] == FS_FANOUT_ALL ? (double)l->max_fanout_product : (double)req->fanout[h];
    }
    if (product > (double)l->max_fanout_product)
        return fs_error(err, FS_ERR_RESOURCE, "product of fanouts %.0f exceeds the limit %lld (max_fanout_product)",
                        product, (long long)l->max_fanout_product);
    fs_status_t st = fs_locality_value_check(req->locality, err);
    if (st != FS_OK) return st;
    for (int h = 0; req->locality > 1 && h < req->num_hops; h++)
        if (req->mode[h] != FS_SAMPLE_UNIFORM) /* the boosted probabilities exist only for this mode */
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality = %g: locality-aware sampling needs uniform "
                            "sampling without replacement on every hop; hop %d has mode %d", req->locality, h,
                            (int)req->mode[h]);
    double nodes, worst = fs_limits_worst_bytes(l, n, req, row_bytes, &nodes);
    if (nodes >= (double)INT32_MAX) /* the sampler's local ids are 32-bit (fs_typed_internal.h) */
        return fs_error(err, FS_ERR_RESOURCE, "%lld seeds with these fanouts could reach %.0f nodes, over the 2^31 "
                        "nodes one sample may have: use fewer seeds or smaller fanouts", (long long)n, nodes);
    if (worst > (double)l->max_response_bytes)
        return fs_error(err, FS_ERR_RESOURCE, "%lld seeds with these fanouts could need a response of %.0f bytes "
                        "(worst case%s); the limit is %lld (max_response_bytes): use fewer seeds or smaller fanouts",
                        (long long)n, worst, row_bytes ? ", features included" : "", (long long)l->max_response_bytes);
    return FS_OK;
}

/* Hop by hop: each frontier node (distinct, so at most the graph's nodes)
 * draws at most its fanout; without replacement, or taking all (-1), a hop
 * draws each edge at most once. */
double fs_limits_worst_bytes(const fs_limits_t *l, int64_t n, const fs_sample_req_t *req, size_t row_bytes,
                             double *nodes)
{
    const double inf = 1e300;
    double max_nodes = l->num_nodes > 0 ? (double)l->num_nodes : inf;
    double max_edges = l->num_edges > 0 ? (double)l->num_edges : inf;
    double frontier = fmin((double)n, max_nodes), bytes = 8.0 * (double)n; /* the seeds' local ids */
    for (int h = 0; h < req->num_hops && h < FS_MAX_HOPS; h++) {
        int all = req->fanout[h] == FS_FANOUT_ALL;
        int once = all || req->mode[h] == FS_SAMPLE_UNIFORM || req->mode[h] == FS_SAMPLE_WEIGHTED;
        double edges = all ? inf : frontier * (double)req->fanout[h];
        if (once) edges = fmin(edges, max_edges);
        bytes += (frontier + 1) * 8.0 + edges * (req->want_edge_ids ? 24.0 : 16.0); /* offsets, edges */
        if (req->locality > 1) bytes += edges * 4.0;                                  /* and their weights */
        frontier = fmin(frontier + edges, max_nodes);
    }
    /* frontier is now every node of the result: its id and its row */
    if (nodes) *nodes = frontier;
    return bytes + frontier * (8.0 + (double)row_bytes);
}

int64_t fs_sample_result_bytes(const fs_sample_result_t *r)
{
    int64_t b = (r->num_nodes + r->num_seeds) * 8;
    for (int h = 0; h < r->num_hops; h++)
        b += (r->block[h].num_dst + 1 + r->block[h].num_edges * (r->block[h].edge_ids ? 3 : 2)) * 8 +
             (r->block[h].edge_weights ? r->block[h].num_edges * 4 : 0);
    return b;
}

fs_status_t fs_limits_check_result(const fs_limits_t *l, const fs_sample_result_t *res, size_t row_bytes,
                                   fs_error_t *err)
{
    double bytes = (double)fs_sample_result_bytes(res) + (double)res->num_nodes * (double)row_bytes;
    if (bytes <= (double)l->max_response_bytes) return FS_OK;
    return fs_error(err, FS_ERR_RESOURCE, "the sample%s as drawn came to a response of %.0f bytes; the limit is %lld "
                    "(max_response_bytes): use fewer seeds or smaller fanouts", row_bytes ? " and its features" : "",
                    bytes, (long long)l->max_response_bytes);
}

/* ---- typed requests -------------------------------------------------------- */

double fs_limits_typed_worst_bytes(const fs_typed_view_t *g, const fs_typed_req_t *req, int64_t seeds,
                                   const size_t *node_row_bytes, const size_t *edge_row_bytes, double *nodes)
{
    const double inf = 1e300;
    int T = g->num_node_types, E = g->num_edge_types, disjoint = req->disjoint || req->temporal;
    double have[T > 0 ? T : 1], frontier[T > 0 ? T : 1], bytes = 8.0 * (double)seeds;
    for (int t = 0; t < T; t++) have[t] = frontier[t] = (double)seeds; /* any type could hold every seed */
    for (int h = 0; h < req->num_hops && h < FS_MAX_HOPS; h++) {
        double next[T > 0 ? T : 1];
        for (int t = 0; t < T; t++) next[t] = have[t];
        for (int e = 0; e < E; e++) {
            const fs_typed_etype_t *et = &g->etype[e];
            int k = req->fanout[e * req->num_hops + h];
            if (k == 0) continue;
            double per_row = et->max_degree > 0 ? (double)et->max_degree : inf;
            if (k != FS_FANOUT_ALL && (req->mode[h] == FS_SAMPLE_UNIFORM_REPLACE ||
                                       req->mode[h] == FS_SAMPLE_WEIGHTED_REPLACE || (double)k < per_row))
                per_row = (double)k;
            double edges = fmin(frontier[et->dst_type] * per_row, inf);
            int once = req->mode[h] == FS_SAMPLE_UNIFORM || req->mode[h] == FS_SAMPLE_WEIGHTED || k == FS_FANOUT_ALL;
            if (once && !disjoint) edges = fmin(edges, (double)et->num_edges);
            bytes += (frontier[et->dst_type] + 1) * 8.0 + edges * (req->want_edge_ids ? 24.0 : 16.0);
            if (edge_row_bytes) bytes += edges * (double)edge_row_bytes[e];
            next[et->src_type] += edges;
        }
        for (int t = 0; t < T; t++) {
            if (!disjoint) next[t] = fmin(next[t], (double)g->count[t]);
            frontier[t] = req->frontier == FS_FRONTIER_NEW ? next[t] - have[t] : next[t];
            have[t] = next[t];
        }
    }
    double most = 0, per_node = 8.0 + (disjoint ? 8.0 : 0) + (req->temporal ? 8.0 : 0);
    for (int t = 0; t < T; t++) {
        bytes += have[t] * (per_node + (node_row_bytes ? (double)node_row_bytes[t] : 0));
        most = fmax(most, have[t]);
    }
    if (nodes) *nodes = most;
    return bytes;
}

fs_status_t fs_limits_check_typed(const fs_limits_t *l, const fs_typed_view_t *g, const fs_typed_req_t *req,
                                  int64_t seeds, const size_t *node_row_bytes, const size_t *edge_row_bytes,
                                  fs_error_t *err)
{
    fs_status_t st = fs_limits_check(l, seeds, NULL, 0, err); /* the id count */
    if (st != FS_OK) return st;
    if (req->num_hops < 1 || req->num_hops > FS_MAX_HOPS)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%d hops requested, must be 1..%d", req->num_hops, FS_MAX_HOPS);
    double product = 1;
    for (int h = 0; h < req->num_hops; h++) {
        double widest = 0;
        for (int e = 0; e < g->num_edge_types; e++) {
            int k = req->fanout[e * req->num_hops + h];
            widest = fmax(widest, k == FS_FANOUT_ALL ? (double)l->max_fanout_product : (double)k);
        }
        product *= fmax(widest, 1);
    }
    if (product > (double)l->max_fanout_product)
        return fs_error(err, FS_ERR_RESOURCE, "product over hops of the largest fanout, %.0f, exceeds the limit %lld "
                        "(max_fanout_product)", product, (long long)l->max_fanout_product);
    double nodes, worst = fs_limits_typed_worst_bytes(g, req, seeds, node_row_bytes, edge_row_bytes, &nodes);
    if (nodes >= (double)INT32_MAX)
        return fs_error(err, FS_ERR_RESOURCE, "%lld seeds with these fanouts could reach %.0f nodes of one type, over "
                        "the 2^31 one sample may have: use fewer seeds or smaller fanouts", (long long)seeds, nodes);
    if (worst > (double)l->max_response_bytes)
        return fs_error(err, FS_ERR_RESOURCE, "%lld seeds with these fanouts could need a response of %.0f bytes "
                        "(worst case); the limit is %lld (max_response_bytes): use fewer seeds or smaller fanouts",
                        (long long)seeds, worst, (long long)l->max_response_bytes);
    return FS_OK;
}

int64_t fs_typed_result_bytes(const fs_typed_result_t *r)
{
    int64_t b = 0;
    for (int t = 0; t < r->num_node_types; t++) {
        const fs_typed_nodes_t *n = &r->type[t];
        b += n->num_nodes * 8 * (1 + (n->batch != NULL) + (n->time != NULL));
    }
    for (int i = 0; i < r->num_hops * r->num_edge_types; i++) {
        const fs_block_t *x = &r->block[i];
        b += (x->num_dst + 1 + x->num_edges * (x->edge_ids ? 3 : 2)) * 8;
    }
    return b;
}
