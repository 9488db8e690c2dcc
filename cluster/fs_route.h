/* fs_route.h — owner routing of a remote edge type's picks, the trainer's
 * side of owner-routed sampling (docs/design.md).
 *
 * The engine hands a pass's destinations, in order, to fs_router_picks
 * (the edge type's fs_typed_remote_t). The router finds each destination's
 * part by its id's range (the partitioning renumbered every node type part
 * by part), and the part's shard by the shard map; asks every shard with
 * destinations for their picks in one call each, all at once (one thread
 * per shard beyond the first); and merges the answers back into the
 * pass's order, so the engine relabels them exactly as one server's own.
 * Gathers are routed the same way (fs_router_rows): one call per shard
 * holding rows, all at once, the rows put back in the request's order;
 * so are edge tests (fs_router_edges: a link batch's strict negatives, a
 * round of tries at once), by their destinations' owners.
 * How a shard is asked (in process, gRPC) is the transport's.
 *
 * Replicas: a part may have several holders, in the order to ask them
 * (fs_route_map_t.holders; the caller's policy: a shard in this process
 * first, then a spread over the others). A pass asks each part's first
 * holder not marked down; when a shard's call fails as unreachable or past
 * its deadline, the shard is marked down for FS_ROUTE_DOWN_S and the pass
 * is asked again at once, its parts on their next holders, so a dead
 * replica costs one failed call and no batch. Every holder answers the
 * same picks and rows (the same parts, the same keyed random streams).
 *
 * Ownership: the router copies the ranges and the owners; the answer is
 * its own until its next call. Thread-safety: one pass at a time per
 * router (a sampler's); the transport is called from several threads at
 * once, for different shards. */
#ifndef FS_ROUTE_H
#define FS_ROUTE_H

#include "fs_typed.h"

typedef struct {
    /* Shard `shard`'s picks of ids[0..n) (global ids of q's destination
     * type, all its own): the answer is borrowed until the transport's next
     * call for that shard. */
    fs_status_t (*picks)(void *ctx, int shard, const fs_typed_picks_req_t *q, const int64_t *ids, int64_t n,
                         fs_typed_picks_t *out, fs_error_t *err);
    /* Shard `shard`'s rows of node type t's table for ids[0..n) (all its
     * own), as stored, row_bytes each, into out. NULL: no gathers. */
    fs_status_t (*rows)(void *ctx, int shard, int t, const char *table, const int64_t *ids, int64_t n,
                        size_t row_bytes, void *out, fs_error_t *err);
    /* Shard `shard`'s answer whether each pair (dst[i], src[i]) of edge
     * type etype is an edge (dst all its own), 1 or 0 into is_edge. NULL:
     * no edge tests. */
    fs_status_t (*edges)(void *ctx, int shard, int etype, const int64_t *dst, const int64_t *src, int64_t n,
                         uint8_t *is_edge, fs_error_t *err);
    void *ctx;
} fs_route_transport_t;

#define FS_ROUTE_DOWN_S 10.0 /* how long a shard that failed a call is passed over for its parts' other holders */

typedef struct {
    int num_node_types;
    const int64_t *const *first;   /* [type][parts + 1]: part p owns ids [first[p], first[p + 1]) */
    int parts;
    const int *owner;              /* [parts]: the shard holding each part, 0..num_shards-1 */
    int replicas;                  /* R of holders (<= 1: the owner only) */
    const int *holders;            /* [parts * replicas]: each part's shards in the order to ask them, owner
                                    * or not, -1 after the last; NULL: the owner only */
    int num_shards;
    int num_edge_types;
    const int *etype_dst;          /* [num_edge_types]: each edge type's destination type */
} fs_route_map_t;

typedef struct fs_router fs_router_t;

fs_status_t fs_router_create(const fs_route_map_t *m, const fs_route_transport_t *t, fs_router_t **out,
                             fs_error_t *err);
void fs_router_destroy(fs_router_t *r);
/* Failovers so far: passes asked again after a shard failed. */
int64_t fs_router_failovers(const fs_router_t *r);

/* The part owning id x of a type whose parts own [first[p], first[p + 1])
 * (first[0..parts], ascending); -1 outside them. */
int fs_route_part_of(const int64_t *first, int parts, int64_t x);

/* fs_typed_remote_t.picks with ctx = the router. An id outside its type's
 * ranges is FS_ERR_INVALID_ARGUMENT naming it; one of a part that no shard
 * holds now (holder -1) FS_ERR_UNAVAILABLE naming it. */
fs_status_t fs_router_picks(void *router, const fs_typed_picks_req_t *q, const int64_t *dst, int64_t n,
                            fs_typed_picks_t *out, fs_error_t *err);

/* A gather grouped by owner: rows ids[0..n) of node type t's table (global
 * ids), row_bytes each as stored, into out in order; every shard holding
 * some asked once, all at once. Errors as fs_router_picks. */
fs_status_t fs_router_rows(fs_router_t *r, int t, const char *table, size_t row_bytes, const int64_t *ids, int64_t n,
                           void *out, fs_error_t *err);

/* Edge tests grouped by owner (fs_typed_remote_t.edges' work): whether
 * each pair (dst[i], src[i]) of edge type etype is an edge, 1 or 0 into
 * is_edge in order; every shard owning some destinations asked once, all
 * at once. Errors as fs_router_picks. */
fs_status_t fs_router_edges(fs_router_t *r, int etype, const int64_t *dst, const int64_t *src, int64_t n,
                            uint8_t *is_edge, fs_error_t *err);

#endif
