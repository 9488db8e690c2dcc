/* fs_typed_check.c — the typed sampler's request check (fs_typed_check,
 * fs_typed.h): hops, fanouts, modes and the temporal rule against the
 * graph, the seed groups and their batches, the exclusions; and the names
 * its messages give node and edge types.
 *
 * Its own file because it is read on its own: every refusal a request can
 * get before sampling starts is here, and nothing here runs per pick. The
 * limits that come from the engine's keys (FS_KEY_NODE_BITS,
 * FS_KEY_TAG_LIMIT) are fs_typed_internal.h's. */
#include "fs_typed.h"

#include <math.h>

#include <stdio.h>

#include "fs_locality.h"
#include "fs_typed_internal.h"

/* ---- names for messages --------------------------------------------------- */

const char *fs_typed_etype_name(const fs_typed_view_t *g, int e, char *buf, size_t len)
{
    if (g->etype[e].name) return g->etype[e].name;
    snprintf(buf, len, "edge type #%d", e);
    return buf;
}

static const char *type_name(const fs_typed_view_t *g, int t, char *buf, size_t len)
{
    if (g->type_name && g->type_name[t]) return g->type_name[t];
    snprintf(buf, len, "node type #%d", t);
    return buf;
}

/* ---- the request check ---------------------------------------------------- */

static fs_status_t check_hops(const fs_typed_view_t *g, const fs_typed_req_t *req, fs_error_t *err)
{
    char nb[64];
    if (req->num_hops < 1 || req->num_hops > FS_MAX_HOPS)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: %d hops requested, must be 1..%d", req->num_hops,
                        FS_MAX_HOPS);
    if (g->num_node_types >= FS_KEY_TAG_LIMIT)
        return fs_error(err, FS_ERR_UNSUPPORTED, "typed sample: %d node types, over the %lld the sampler keys",
                        g->num_node_types, (long long)FS_KEY_TAG_LIMIT);
    for (int t = 0; t < g->num_node_types; t++)
        if (g->count[t] >= (1LL << FS_KEY_NODE_BITS))
            return fs_error(err, FS_ERR_UNSUPPORTED, "typed sample: %s has %lld nodes, over the 2^%d the sampler keys",
                            type_name(g, t, nb, sizeof nb), (long long)g->count[t], FS_KEY_NODE_BITS);
    if (g->num_edge_types > 0 && !req->fanout)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: no fanouts given");
    if ((unsigned)req->temporal >= FS_TEMPORAL_COUNT_ || (unsigned)req->frontier > FS_FRONTIER_ALL)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: unknown %s %d",
                        (unsigned)req->frontier > FS_FRONTIER_ALL ? "frontier rule" : "temporal strategy",
                        (unsigned)req->frontier > FS_FRONTIER_ALL ? (int)req->frontier : (int)req->temporal);
    if (req->window < 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: time window %lld is negative",
                        (long long)req->window);
    for (int h = 0; h < req->num_hops; h++) {
        if ((unsigned)req->mode[h] >= FS_SAMPLE_MODE_COUNT_)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: mode[%d] is %d, unknown", h, (int)req->mode[h]);
        if (req->temporal == FS_TEMPORAL_LAST && req->mode[h] != FS_SAMPLE_UNIFORM)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: hop %d: temporal strategy 'last' takes the "
                            "most recent edges, so it takes no weighted or with-replacement mode", h);
        for (int e = 0; e < g->num_edge_types; e++) {
            int k = req_fanout(req, e, h);
            const fs_typed_etype_t *et = &g->etype[e];
            if (k < FS_FANOUT_ALL)
                return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: %s hop %d: fanout %d, must be >= 0 "
                                "or -1 (all)", fs_typed_etype_name(g, e, nb, sizeof nb), h, k);
            if (k == 0) continue;
            if (req->mode[h] >= FS_SAMPLE_WEIGHTED && !et->weights && !et->remote) /* a remote type: its shards check */
                return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: hop %d asks for weighted sampling but %s "
                                "has no edge weights", h, fs_typed_etype_name(g, e, nb, sizeof nb));
            if (req->temporal && !et->time && !et->remote) /* a remote type: its shards check */
                return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: temporal sampling, but %s has no edge "
                                "timestamps (give it fanout 0, or sample without time)",
                                fs_typed_etype_name(g, e, nb, sizeof nb));
        }
    }
    return FS_OK;
}

static fs_status_t check_seeds(const fs_typed_view_t *g, const fs_typed_req_t *req, const fs_typed_seeds_t *groups,
                               int num_groups, fs_error_t *err)
{
    char nb[64];
    if (num_groups < 0 || (num_groups > 0 && !groups))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: bad seed groups");
    int64_t total = 0, next_batch = 0;
    for (int i = 0; i < num_groups; i++) {
        const fs_typed_seeds_t *sg = &groups[i];
        if (sg->type < 0 || sg->type >= g->num_node_types)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: seed group %d names node type %d, the graph "
                            "has %d", i, sg->type, g->num_node_types);
        if (sg->count < 0 || (sg->count > 0 && !sg->ids))
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: seed group %d: bad seed array", i);
        const char *tn = type_name(g, sg->type, nb, sizeof nb);
        for (int64_t j = 0; j < sg->count; j++) {
            if ((uint64_t)sg->ids[j] >= (uint64_t)g->count[sg->type])
                return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: %s seed %lld at position %lld is outside "
                                "[0, %lld)", tn, (long long)sg->ids[j], (long long)j, (long long)g->count[sg->type]);
            if (sg->batch && (sg->batch[j] < 0 || sg->batch[j] >= INT32_MAX))
                return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: %s seed at position %lld has batch %lld",
                                tn, (long long)j, (long long)sg->batch[j]);
        }
        if (req->temporal && !sg->time && !(g->node_time && g->node_time[sg->type]) &&
            !(g->remote_time && g->remote_time->timed[sg->type]))
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: temporal sampling, but the %s seeds carry no "
                            "times and %s nodes have no timestamps", tn, tn);
        total += sg->count;
        next_batch = batches_after(sg, next_batch);
    }
    if ((req->disjoint || req->temporal) && next_batch * g->num_node_types >= FS_KEY_TAG_LIMIT)
        return fs_error(err, FS_ERR_RESOURCE, "typed sample: %lld disjoint batches over %d node types, over the "
                        "per-request limit of %lld batch-types; use fewer seeds per request", (long long)next_batch,
                        g->num_node_types, (long long)FS_KEY_TAG_LIMIT);
    if (total >= INT32_MAX)
        return fs_error(err, FS_ERR_RESOURCE, "typed sample: %lld seeds, over the 2^31 per-request limit",
                        (long long)total);
    return FS_OK;
}

static fs_status_t check_exclusions(const fs_typed_view_t *g, const fs_typed_exclude_t *x, int64_t n,
                                    fs_error_t *err)
{
    if (n < 0 || (n > 0 && !x)) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: bad exclusion array");
    for (int64_t i = 0; i < n; i++) {
        if (x[i].etype < 0 || x[i].etype >= g->num_edge_types)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: exclusion %lld names edge type %d, the graph "
                            "has %d", (long long)i, x[i].etype, g->num_edge_types);
        const fs_typed_etype_t *et = &g->etype[x[i].etype];
        if ((uint64_t)x[i].dst >= (uint64_t)g->count[et->dst_type] ||
            (uint64_t)x[i].src >= (uint64_t)g->count[et->src_type])
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: exclusion %lld (%lld -> %lld) is outside "
                            "its edge type's node ranges", (long long)i, (long long)x[i].src, (long long)x[i].dst);
    }
    return FS_OK;
}

/* Locality-aware sampling is the homogeneous paper's (docs/algorithms.md
 * §4): its preferred sets are over one node type's ids, and its inclusion
 * probabilities are those of uniform picks without replacement. */
static fs_status_t check_locality(const fs_typed_view_t *g, const fs_typed_req_t *req, int64_t num_excl,
                                  fs_error_t *err)
{
    const fs_locality_t *loc = req->locality;
    if (!loc || loc->s == 1) return FS_OK;
    if (g->num_node_types != 1 || g->num_edge_types != 1)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: locality-aware sampling needs one node type "
                        "and one edge type; this graph has %d and %d", g->num_node_types, g->num_edge_types);
    if (req->temporal || req->disjoint || num_excl || req->frontier != FS_FRONTIER_ALL)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "typed sample: locality-aware sampling takes DGL's blocks "
                        "without time, disjoint trees or exclusions");
    return fs_las_check(loc, g->count[0], req->num_hops, req->mode, err);
}

fs_status_t fs_typed_check(const fs_typed_view_t *g, const fs_typed_req_t *req, const fs_typed_seeds_t *groups,
                           int num_groups, const fs_typed_exclude_t *excl, int64_t num_excl, fs_error_t *err)
{
    fs_status_t st = check_hops(g, req, err);
    if (st == FS_OK) st = check_locality(g, req, num_excl, err);
    if (st == FS_OK) st = check_seeds(g, req, groups, num_groups, err);
    if (st == FS_OK) st = check_exclusions(g, excl, num_excl, err);
    return st;
}
