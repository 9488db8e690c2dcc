/* fs_limits.h — per-request limits, checked the same way by the server's
 * engine (gRPC requests) and by local clients running the kernels in their
 * own process, so a request means the same thing on every transport.
 * Pure functions; thread-safe. */
#ifndef FS_LIMITS_H
#define FS_LIMITS_H

#include "fs_sample.h"
#include "fs_typed.h"
#include "fs_types.h"

/* A graph's hot list, the rows a remote trainer caches: the quarter of its
 * nodes that the most neighbour lists hold (`featstore partition`'s list of
 * each node type, the server's SplitRequest.hot). On a power-law graph
 * they are most of the rows batches read (docs/benchmarks.md). */
#define FS_HOT_LIST_LEN(n) (((n) + 3) / 4)

typedef struct {
    int64_t max_ids;             /* seeds or ids in one request */
    int64_t max_fanout_product;  /* product of the fanouts (a fanout of -1 counts as max_fanout_product) */
    int64_t max_response_bytes;  /* bytes of one response's arrays */
    /* The served graph's size, which bounds a request's worst case (at most
     * num_nodes distinct nodes; without replacement at most num_edges edges
     * per hop). Not limits: facts the engine and local clients fill in.
     * 0 = unknown: the request alone bounds the worst case. */
    int64_t num_nodes, num_edges;
} fs_limits_t;

void fs_limits_default(fs_limits_t *l);

/* INVALID_ARGUMENT for a malformed request, RESOURCE for one over a limit,
 * the message naming the limit (its --config key) and the value. Every
 * check uses the request alone (and the graph's size), so it runs before
 * any work or allocation: a sampling request is refused when its worst
 * case (fs_limits_worst_bytes) exceeds max_response_bytes, not after it
 * was sampled (docs/serving.md, "Limits").
 * req is NULL for a plain gather; row_bytes is the served row size (0 when
 * nothing is gathered).
 * A request's locality must be 0, 1 or a finite boost > 1 (never
 * FS_LOCALITY_AUTO: clients resolve it), and a boost needs every hop
 * uniform; whether this transport and reader can boost is the caller's
 * check. */
fs_status_t fs_limits_check(const fs_limits_t *l, int64_t n, const fs_sample_req_t *req, size_t row_bytes,
                            fs_error_t *err);

/* The most bytes a response to `req` on n seeds can carry: its sample
 * arrays (fs_sample_result_bytes) plus row_bytes per node, with every hop
 * at its fanout: nodes <= seeds x (1 + f1 + f1 f2 + ...), and <= the
 * graph's nodes; a hop without replacement (or with fanout -1) has at most
 * the graph's edges. Computed in double, so it saturates instead of
 * overflowing. A locality boost > 1 is bounded like plain sampling (each
 * row keeps its expected count; the client checks the actual size).
 * *nodes (may be NULL) receives the most nodes the result can have. */
double fs_limits_worst_bytes(const fs_limits_t *l, int64_t n, const fs_sample_req_t *req, size_t row_bytes,
                             double *nodes);

/* Bytes of a sample result's arrays (what a response carries), edge
 * weights included when present. */
int64_t fs_sample_result_bytes(const fs_sample_result_t *r);

/* The one check of a result, after sampling: its arrays
 * (fs_sample_result_bytes) plus row_bytes per node (0 when nothing is
 * gathered) must fit max_response_bytes, else FS_ERR_RESOURCE. The worst
 * case checked before sampling bounds every plain result; a locality boost
 * > 1 bounds only each row's expected count, so only a boosted result can
 * fail here. Every host runs it (exec/fs_exec.h). */
fs_status_t fs_limits_check_result(const fs_limits_t *l, const fs_sample_result_t *res, size_t row_bytes,
                                   fs_error_t *err);

/* ---- the typed sampler (fs_typed.h) ---- */

/* The same three limits for a typed request on `seeds` seeds in all (a link
 * batch's endpoints and negatives included): seeds <= max_ids; the product
 * over hops of each hop's largest fanout (-1 counting as
 * max_fanout_product) <= max_fanout_product; the worst-case response
 * (fs_limits_typed_worst_bytes) <= max_response_bytes. Request fields
 * themselves are fs_typed_check's. node_row_bytes[t] / edge_row_bytes[e]:
 * the feature row gathered per node of type t / per sampled edge of type e
 * (NULL: none). */
fs_status_t fs_limits_check_typed(const fs_limits_t *l, const fs_typed_view_t *g, const fs_typed_req_t *req,
                                  int64_t seeds, const size_t *node_row_bytes, const size_t *edge_row_bytes,
                                  fs_error_t *err);

/* Hop by hop and type by type: each frontier node of an edge type's
 * destination draws at most min(fanout, the type's longest row) edges;
 * outside disjoint sampling a type has at most its count of nodes and a
 * hop without replacement at most the edge type's edges. Saturates in
 * double. *nodes (may be NULL): the most nodes of any one type. */
double fs_limits_typed_worst_bytes(const fs_typed_view_t *g, const fs_typed_req_t *req, int64_t seeds,
                                   const size_t *node_row_bytes, const size_t *edge_row_bytes, double *nodes);

/* Bytes of a typed result's arrays (nodes with their batch and time when
 * present, seed local ids, every block). */
int64_t fs_typed_result_bytes(const fs_typed_result_t *r);

#endif
