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
    if (nodes >= (double)INT32_MAX) /* the sampler's local ids are 32-bit (fs_sample.c) */
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

