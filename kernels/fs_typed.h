/* fs_typed.h — typed (heterogeneous) k-hop sampling, with time and link
 * prediction batches (docs/algorithms.md §9).
 *
 * The graph is node types (ids 0..count-1 per type) and edge types
 * (src_type, rel, dst_type), each stored toward its destination (CSC): for
 * destination d, its source neighbours, their edge ids and optional weights
 * and times, the times non-decreasing within each destination so that the
 * edges a seed may see are found by binary search.
 *
 * A request names, per edge type and hop, how many source neighbours each
 * destination takes (PyG's num_neighbors: > 0, -1 for all, 0 for none). At
 * hop h every frontier node of an edge type's destination type picks from
 * that edge type's list, and what it picks joins the source type's nodes.
 * Two frontier rules:
 *   FS_FRONTIER_NEW (PyG): hop h expands the nodes first reached at hop
 *     h-1 (the seeds at hop 0); the blocks together are one subgraph.
 *   FS_FRONTIER_ALL (DGL blocks): hop h expands every node reached so far,
 *     so block h's destinations are a prefix of its sources. With one node
 *     type and one edge type this is fs_sample_cpu, bit for bit.
 *
 * Per node type the output is global ids in local-id order: seeds first (in
 * the order given, duplicates merged), then first appearance. Per (hop,
 * edge type) it is a block (fs_block_t): edges (edge_dst, edge_src) in local
 * ids of the destination and source types, grouped by destination, with
 * edge ids on request.
 *
 * Disjoint: every seed batch grows its own tree — a node reached from two
 * batches gets two local ids — and each local node records its batch.
 * Temporal sampling implies it (as in PyG): a node inherits the time of the
 * node that reached it, the seeds' times being given or their node
 * timestamps, and only edges with time <= that time (< with strict, and >=
 * time - window with a window) are eligible. FS_TEMPORAL_LAST takes the most
 * recent k eligible edges instead of a random k. A view whose timestamps
 * live elsewhere (fs_typed_view_t.remote_time) reads the seeds' ones
 * through it before the seeds are added.
 *
 * Exclusions: pairs (edge type, dst, src) no destination may pick — a link
 * batch's seed edges and their reverses (fs_link_sample, no label leakage).
 *
 * Every random choice is a pure function of (request seed, edge type, hop,
 * batch, node): the same request gives the same result on any thread count.
 *
 * Ownership: results live in the sampler's workspace until its next call or
 * its destruction. Thread-safety: one sampler per thread; views are shared
 * and read-only. */
#ifndef FS_TYPED_H
#define FS_TYPED_H

#include "fs_gather.h"
#include "fs_pool.h"
#include "fs_types.h"

/* One hop's picks of some rows of an edge type, not relabelled: what a
 * shard of a partitioned graph answers for the destinations it owns
 * (owner-routed sampling, docs/design.md). The rows are positions in et's
 * indptr (a shard's local rows), each picked as fs_typed_sample_cpu picks
 * the node key[i] at this hop and edge type of a request with this seed:
 * the RNG is keyed by the node's id in the whole graph, so the picks are
 * the ones one server makes for it. Plain, temporal (each row's edges
 * eligible by its destination's time), disjoint (the RNG keyed by each
 * destination's batch too) and excluding (sources a row may not pick)
 * passes. */
typedef struct {
    int hop, etype;            /* the pass: its RNG stream */
    int fanout;                /* > 0 or FS_FANOUT_ALL */
    fs_sample_mode_t mode;
    uint64_t seed;             /* the request's */
    int want_edge_ids;
    /* Temporal and disjoint passes (0 and NULL for plain ones): each
     * destination's time (the edges eligible by the request's rule) and
     * batch (its tree, which keys its RNG), [n] each, in the ids' order. */
    fs_temporal_t temporal;
    int strict;
    int64_t window;
    int disjoint;
    const int64_t *time;       /* with temporal */
    const int64_t *batch;      /* with disjoint */
    /* Exclusions (a link batch's seed edges): row excl_at[j] may not pick
     * source excl_src[j]; excl_at ascending, indices into the ids. */
    int64_t num_excl;
    const int64_t *excl_at, *excl_src;
} fs_typed_picks_req_t;

/* The answer: row i's picks are [off[i], off[i + 1]) of src (et's indices
 * as they are) and, if asked, eid (et's edge ids, or positions). The
 * arrays are the sampler's until its next call. */
typedef struct {
    int64_t n;
    const int64_t *off, *src, *eid;
} fs_typed_picks_t;

/* Picks made elsewhere: an edge type whose rows live on other machines
 * (a partitioned graph's shards) gives the engine, for each pass, the
 * picks of the pass's destinations (ids of its destination type, in
 * order) through `picks`; the engine relabels them as it relabels its own
 * (owner-routed sampling, docs/design.md). The answer is borrowed until the
 * next call. Every kind of pass: the request carries what a full pass
 * needs (times, batches, exclusions). */
typedef struct {
    fs_status_t (*picks)(void *ctx, const fs_typed_picks_req_t *q, const int64_t *dst, int64_t n,
                         fs_typed_picks_t *out, fs_error_t *err);
    void *ctx;
    /* A link batch's strict negatives (fs_link.c): whether each pair
     * (dst[i], src[i]) of edge type etype is an edge, 1 or 0 into
     * is_edge[i]; all the pairs of a round of tries at once, so the
     * holders are asked in bulk. NULL: strict negatives are refused. */
    fs_status_t (*edges)(void *ctx, int etype, const int64_t *dst, const int64_t *src, int64_t n, uint8_t *is_edge,
                         fs_error_t *err);
    /* Degree-weighted negatives: every node's degree in edge type etype,
     * by the view's ids — side 1 the destinations' in-degrees (their rows'
     * lengths), side 0 the sources' out-degrees — borrowed while the view
     * lives. NULL: degree-weighted negatives are refused. */
    fs_status_t (*degrees)(void *ctx, int etype, int side, const int64_t **deg, fs_error_t *err);
} fs_typed_remote_t;

/* Node timestamps held elsewhere (a trainer of a cluster): for a node type
 * with timed[t] and no node_time here, the seeds of a temporal request
 * that carry no times read their nodes' timestamps through `times` (ids
 * of type t, the view's, into out), exactly the values one server reads
 * from its node_time. */
typedef struct {
    fs_status_t (*times)(void *ctx, int type, const int64_t *ids, int64_t n, int64_t *out, fs_error_t *err);
    void *ctx;
    const int *timed;                   /* [num_node_types] */
} fs_typed_remote_times_t;

/* The topology as a reader sees it: parts (one per tier holding neighbour
 * lists) plus a route node -> (part, row). Part 0 is the full CSR. */
typedef struct {
    const int64_t *indptr;   /* [rows+1] */
    const void *indices;     /* global neighbour ids, index_dtype */
    const float *weights;    /* per edge, or NULL */
    int64_t rows;
} fs_csr_part_t;

typedef struct {
    int64_t num_nodes, num_edges;
    fs_dtype_t index_dtype;  /* I32 or I64, the same in every part */
    int num_parts;
    fs_csr_part_t part[FS_MAX_TIERS];
    const uint64_t *route;   /* [num_nodes] FS_ROUTE(part, row); NULL = part 0, row = id */
    /* Lists held elsewhere (a trainer of a sharded cluster): no parts here;
     * num_edges and weights are the owners' (weighted modes are checked by
     * them). NULL: the parts above. */
    const fs_typed_remote_t *remote;
} fs_csr_view_t;

/* One destination's row of a timed edge type, summarised for temporal
 * sampling (fs_typed_time_rows): where the row starts, its length and five
 * of its times, as int32 steps of 2^time_shift above the edge type's
 * time_base: the first (rounded down), the last (rounded up) and, where
 * the steps are the times themselves (shift 0), those at positions
 * j * (degree - 1) / 4 for j = 1..3. A seed time at or past the last step
 * takes the whole row and one before the first step none, with no read of
 * the row's times; any other is searched for only between the two pivots
 * around it (docs/algorithms.md §9). 32 bytes: half a cache line, one
 * miss. */
#define FS_TIME_PIVOTS 5

typedef struct {
    int64_t start;                    /* indptr[d] */
    int32_t degree;                   /* -1 past INT32_MAX: the next row's start tells */
    int32_t step[FS_TIME_PIVOTS];     /* all 0 for an empty row */
} fs_time_row_t;

typedef struct {
    int src_type, dst_type;
    const char *name;          /* "(src, rel, dst)" for messages, or NULL */
    int64_t num_edges;
    const int64_t *indptr;     /* [count(dst_type) + 1] */
    const void *indices;       /* [num_edges] source ids, index_dtype */
    fs_dtype_t index_dtype;    /* I32 or I64 */
    const int64_t *edge_ids;   /* [num_edges] edge id at each position, or NULL (the position) */
    const float *weights;      /* [num_edges] by position, or NULL */
    const int64_t *time;       /* [num_edges] by position, non-decreasing per destination, or NULL */
    int reverse;               /* the edge type holding edge i reversed as its edge i, or -1 */
    int64_t max_degree;        /* the longest row, for worst-case bounds (fs_limits.h); 0 = unknown */
    /* with time: [count(dst_type) + 1] row summaries (the last one's start
     * = num_edges), or NULL to search every row's times */
    const fs_time_row_t *time_rows;
    int64_t time_base;
    int time_shift;
    /* The placement's tiers of these lists (docs/algorithms.md §3): with a
     * route, destination d's list is read from row FS_ROUTE_ROW(route[d])
     * of part FS_ROUTE_TIER(route[d]), part 0 being indptr, indices and
     * weights above (every list). Results do not change: picks, local ids
     * and edge ids (positions in part 0) are the same; only where the
     * lists are read from. Passes with time, exclusions or disjoint trees
     * read part 0. NULL, or a view without a route: part 0. */
    const fs_csr_view_t *tiers;
    /* Rows picked elsewhere (fs_typed_remote_t): indptr, indices, edge_ids
     * and weights unused. NULL: the rows above. */
    const fs_typed_remote_t *remote;
} fs_typed_etype_t;

/* Source id at position pos of an edge type, whatever the index width. */
static inline int64_t fs_typed_source(const fs_typed_etype_t *et, int64_t pos)
{
    return et->index_dtype == FS_DTYPE_I32 ? ((const int32_t *)et->indices)[pos] : ((const int64_t *)et->indices)[pos];
}

typedef struct {
    int num_node_types;
    const int64_t *count;               /* [num_node_types] */
    const char *const *type_name;       /* [num_node_types] for messages, or NULL */
    const int64_t *const *node_time;    /* [num_node_types] each [count] or NULL; or NULL */
    int num_edge_types;
    const fs_typed_etype_t *etype;      /* [num_edge_types] */
    /* [num_node_types] each [count]: the id of the node a uniform negative
     * draw r names, or NULL (r). A trainer of a cluster draws in its own
     * ids and maps them to the partitioning's, so its negatives are one
     * server's. */
    const int64_t *const *draw_map;
    /* Node timestamps held elsewhere, for node types without node_time;
     * NULL: none. */
    const fs_typed_remote_times_t *remote_time;
} fs_typed_view_t;


typedef struct {
    int num_hops;                      /* 1..FS_MAX_HOPS */
    const int *fanout;                 /* [num_edge_types * num_hops]: edge type e at hop h is
                                          fanout[e * num_hops + h]; > 0, FS_FANOUT_ALL or 0 (none) */
    fs_sample_mode_t mode[FS_MAX_HOPS];
    uint64_t seed;
    int want_edge_ids;
    fs_frontier_t frontier;
    int disjoint;                      /* each batch its own tree (implied by temporal) */
    fs_temporal_t temporal;
    int strict;                        /* temporal: only edges strictly older than the seed */
    int64_t window;                    /* temporal: > 0 keeps edges with time >= t - window */
    /* Locality-aware sampling (fs_locality.h) with boost locality->s > 1,
     * or NULL: one node type and one edge type, every hop uniform without
     * replacement; blocks then carry per-edge Horvitz-Thompson weights
     * (fs_block_t.edge_weights). */
    const struct fs_locality *locality;
} fs_typed_req_t;

/* Seeds of one node type. batch: each seed's batch (disjoint sampling);
 * NULL numbers them on from the previous group's last batch. time: each
 * seed's time (temporal); NULL takes the node's timestamp. */
typedef struct {
    int type;
    int64_t count;
    const int64_t *ids;
    const int64_t *batch;
    const int64_t *time;
} fs_typed_seeds_t;

/* One forbidden pick: destination dst of edge type etype may not pick src. */
typedef struct {
    int etype;
    int64_t dst, src;
} fs_typed_exclude_t;

typedef struct {
    int64_t num_nodes;
    const int64_t *nodes;          /* [num_nodes] global id of each local id */
    const int64_t *batch;          /* [num_nodes] disjoint: each node's batch; else NULL */
    const int64_t *time;           /* [num_nodes] temporal: each node's time; else NULL */
    int64_t count_after[FS_MAX_HOPS + 1]; /* nodes after the seeds (0) and after each hop */
} fs_typed_nodes_t;

typedef struct {
    int num_hops, num_node_types, num_edge_types;
    const fs_typed_nodes_t *type;       /* [num_node_types] */
    /* block[h * num_edge_types + e]: dst ids are local ids of e's dst type
     * (FS_FRONTIER_NEW: the frontier starts at type[dst].count_after[h-1],
     * so edge_dst holds the local id itself, and dst_offsets is indexed
     * from the frontier's start), src ids local ids of e's src type. */
    const fs_block_t *block;
    int num_groups;
    const int64_t *const *seed_local;   /* [num_groups][count]: each seed's local id */
} fs_typed_result_t;

/* Summarises a timed edge type's ndst rows for temporal sampling: a new
 * array of ndst + 1 rows into *out (the caller's to free), and et's
 * time_rows, time_base and time_shift set to it. The steps are the times
 * themselves (shift 0) where the edge type's times span under 2^31. One
 * pass over the rows: a read of each row's first and last time. Free with
 * fs_typed_time_rows_free and the same ndst. */
fs_status_t fs_typed_time_rows(fs_typed_etype_t *et, int64_t ndst, fs_time_row_t **out, fs_error_t *err);
void fs_typed_time_rows_free(fs_time_row_t *rows, int64_t ndst);

typedef struct fs_typed_sampler fs_typed_sampler_t;

fs_status_t fs_typed_sampler_create(fs_typed_sampler_t **out, fs_error_t *err);
void fs_typed_sampler_destroy(fs_typed_sampler_t *s);

/* Lets fs_typed_sample_cpu (and fs_link_sample_cpu) split each large
 * (hop, edge type) pass over pool's threads (NULL, the default: one
 * thread); bit-identical at any pool size. Borrowed, as fs_sampler_set_pool
 * (fs_sample.h) says. */
void fs_typed_sampler_set_pool(fs_typed_sampler_t *s, fs_pool_t *pool);

/* Output memory for the next request's result arrays (nodes, seed local
 * ids, blocks): they are laid out in [base, base + cap) (each at its worst
 * case for the pass, 64-byte aligned) as far as they fit, the rest in the
 * sampler's own memory; so a caller that wants the result in memory of
 * its own (a result slot) copies only the arrays outside it. The next
 * call of fs_typed_sample_cpu (or fs_link_sample_cpu, or the CUDA
 * sampler) takes it; later calls use the sampler's memory again unless
 * given another. base NULL: none. Borrowed: the memory must stay mapped
 * while the result is used. A node type's batch and time arrays are
 * always the sampler's. */
void fs_typed_sampler_set_output(fs_typed_sampler_t *s, void *base, size_t cap);

/* How many bytes at the start of the output memory the last request's
 * result arrays took (gaps included); 0 when it was given none. */
size_t fs_typed_sampler_output_used(const fs_typed_sampler_t *s);

/* Checks a request, seeds and exclusions against the view; every refusal
 * names the edge type, node type, hop or seed at fault. */
fs_status_t fs_typed_check(const fs_typed_view_t *g, const fs_typed_req_t *req, const fs_typed_seeds_t *groups,
                           int num_groups, const fs_typed_exclude_t *excl, int64_t num_excl, fs_error_t *err);

fs_status_t fs_typed_sample_cpu(fs_typed_sampler_t *s, const fs_typed_view_t *g, const fs_typed_req_t *req,
                                const fs_typed_seeds_t *groups, int num_groups, const fs_typed_exclude_t *excl,
                                int64_t num_excl, fs_typed_result_t *res, fs_error_t *err);

/* FS_ERR_INVALID_ARGUMENT names a row outside [0, num_rows) or a bad
 * fanout or mode. */
fs_status_t fs_typed_picks(fs_typed_sampler_t *s, const fs_typed_etype_t *et, int64_t num_rows,
                           const fs_typed_picks_req_t *q, const int64_t *rows, const int64_t *key, int64_t n,
                           fs_typed_picks_t *out, fs_error_t *err);

/* Answers of several groups merged into one, in an order given per item:
 * item i is the next row of *ans[group_of[i]] (each group's rows in
 * order; a group no item names may be NULL). What a shard does with its
 * parts' answers and a router with its shards'. The merged arrays live in
 * b (grown as needed; free with fs_typed_picks_buf_free); cursor is
 * scratch of `groups` entries. */
typedef struct {
    int64_t *off, *src, *eid;
    size_t off_cap, src_cap, eid_cap;
} fs_typed_picks_buf_t;

fs_status_t fs_typed_picks_merge(fs_typed_picks_buf_t *b, const fs_typed_picks_t *const *ans, int groups,
                                 const int *group_of, int64_t n, int want_ids, int64_t *cursor, fs_typed_picks_t *out,
                                 fs_error_t *err);
void fs_typed_picks_buf_free(fs_typed_picks_buf_t *b);

/* CUDA: the same sampling on `device` (kernels/fs_typed.cu). The view's
 * arrays must be device-readable: every edge type's indptr, indices,
 * edge_ids, weights and time, and node_time[t]; the view's own tables
 * (count, type_name, node_time, etype) and the seeds and exclusions are host
 * memory. The result is copied back into the sampler's workspace and is
 * bit-identical to fs_typed_sample_cpu: same local ids, blocks and edge
 * ids, for both frontier rules, disjoint and temporal ('uniform' and 'last')
 * requests and exclusions. Refused with FS_ERR_UNSUPPORTED: a fanout over
 * 256 for any (edge type, hop), and weighted hops with fanout -1. Without
 * CUDA or a GPU: FS_ERR_NO_DEVICE with the reason. With FEATSTORE_SIM_GPUS
 * set it is fs_typed_sample_cpu on a simulated GPU, behind the same checks. */
fs_status_t fs_typed_sample_cuda(fs_typed_sampler_t *s, int device, const fs_typed_view_t *g,
                                 const fs_typed_req_t *req, const fs_typed_seeds_t *groups, int num_groups,
                                 const fs_typed_exclude_t *excl, int64_t num_excl, fs_typed_result_t *res,
                                 fs_error_t *err);

/* ---- link prediction batches -------------------------------------------- */


typedef struct {
    int etype;                     /* the seed edges' edge type */
    int64_t count;
    const int64_t *src, *dst;      /* [count] */
    const int64_t *label;          /* [count] or NULL */
    const int64_t *time;           /* [count] or NULL (temporal: each seed its node's timestamp, see below) */
    fs_neg_mode_t neg;
    double amount;                 /* binary: ratio r, round(r * count) negative pairs; triplet: k per positive */
    int neg_weighted;              /* draw negative endpoints by degree^0.75 instead of uniformly */
    int strict;                    /* never return an existing edge as a negative */
    int exclude_seed_edges;        /* 1: no seed edge (or its reverse) in the sampled subgraph */
} fs_typed_link_t;

/* PyG LinkNeighborLoader's output. binary (and none): edge_label_index
 * [2, num_labels] in local ids of the src and dst types (positives, then
 * negatives), edge_label (given labels, + 1 when negatives are drawn so
 * 0 means negative, as PyG does; 1 for positives without labels).
 * triplet: src_index [count], dst_pos_index [count], dst_neg_index
 * [count, k]. */
typedef struct {
    fs_typed_result_t sub;
    int64_t num_labels;
    const int64_t *label_src, *label_dst;    /* binary/none: [num_labels] */
    const int64_t *label;                    /* binary/none: [num_labels] */
    const int64_t *label_time;               /* [num_labels] when the seeds carry times; else NULL */
    int64_t num_neg_per_src;                 /* triplet: k */
    const int64_t *src_index, *dst_pos_index, *dst_neg_index;
} fs_link_result_t;

fs_status_t fs_link_check(const fs_typed_view_t *g, const fs_typed_req_t *req, const fs_typed_link_t *link,
                          fs_error_t *err);

/* Draws negatives, seeds both endpoints' types (disjoint: link i's
 * endpoints, and its triplet negatives, are batch i; binary negative j is
 * batch count + j), excludes the seed edges and their reverses when asked,
 * and samples. Seed edges' times are both endpoints' times, and a
 * negative takes its positive's; without them every seed, endpoint or
 * negative, takes its own node's timestamp (as fs_typed_sample_cpu's seeds
 * without times), and labels carry no times. */
fs_status_t fs_link_sample_cpu(fs_typed_sampler_t *s, const fs_typed_view_t *g, const fs_typed_req_t *req,
                               const fs_typed_link_t *link, fs_link_result_t *res, fs_error_t *err);

/* The exclusions fs_link_sample_cpu applies for seed edges (src[i], dst[i])
 * of edge type e: (e, dst, src); on e's reverse edge type r, (r, src, dst);
 * and when e joins a type to itself without a reverse (an undirected graph
 * stored both ways), (e, src, dst). Writes up to 2 * count entries to out
 * and returns how many. */
int64_t fs_link_exclusions(const fs_typed_view_t *g, int etype, const int64_t *src, const int64_t *dst,
                           int64_t count, fs_typed_exclude_t *out);

#endif
