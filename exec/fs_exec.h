/* fs_exec.h — the request executor: the one pipeline every host of the
 * engines runs a request through.
 *
 *   1. limits   from the request alone, before any work (fs_limits.h)
 *   2. sample   on the engine the reader's views call for: the CPU sampler,
 *               its locality-aware variant, the reader GPU's, or the typed
 *               engine
 *   3. check    the result (fs_limits_check_result: the one post-sample limit)
 *   4. gather   the rows into memory the host provides
 *   5. count    what was read, per source tier, where the host says
 *
 * Hosts: the unix:// client (client-lib/client_local.c) runs requests in the
 * trainer's process on the server's shared mappings, into its result slots,
 * and reports the reads to the server; the server (server/engine.c) runs
 * them for its gRPC handlers and its epoch streams on the store's CPU views,
 * into gRPC buffers and batch images, and counts the reads in the store.
 * What differs between hosts is what they pass in: the reader's views and
 * engines and where reads are counted (fs_exec_t), and where a result goes
 * (fs_exec_region_t, or the caller's buffer). The third host is a trainer
 * of a sharded cluster (client-lib/client_cluster.c): its views' lists and
 * rows are remote (fs_csr_view_t.remote, fs_table_view_t.remote), read
 * from the shards.
 *
 * Two shapes of call. fs_exec_run takes a homogeneous request through every
 * stage into one region (a result slot). Hosts that send a result while
 * gathering it (gRPC streams rows chunk by chunk; an epoch stream gathers a
 * batch's rows as they go out) call the stages themselves:
 * fs_exec_check, fs_exec_sample (sample and check), then fs_exec_gather per
 * piece. A typed batch (fs_exec_typed, fs_exec_typed.c) goes through the
 * same stages into one batch image (proto/fs_hetero.h is its codec).
 * fs_exec_epoch.c holds the epoch-batch steps both stream makers share.
 *
 * Thread-safety: an fs_exec_t is one thread's (it holds its samplers);
 * views, graphs and limits are shared and read-only. */
#ifndef FS_EXEC_H
#define FS_EXEC_H

#include "dataset.h"
#include "fs_gather.h"
#include "fs_limits.h"
#include "fs_locality.h"
#include "fs_pool.h"
#include "fs_sample.h"
#include "fs_typed.h"
#include "typed_view.h"

/* What requests read, per source tier: feature rows gathered (at their
 * stored size) and, for sampling, the neighbour lists read (one per
 * destination sampled) with the neighbour ids taken from them (at the
 * index width). The executor adds to it; the host records it — a unix://
 * trainer in its REPORT, the server in the store's counters. */
typedef struct {
    fs_gather_counters_t features, topology;
} fs_exec_reads_t;

/* A dataset's typed graph (every dataset: a version-1 one is one node type
 * "node" and one edge type) with its tables as gather views over the
 * dataset's own arrays (tier 0). Read-only after init; shared by threads. */
typedef struct {
    const fs_dataset_t *ds;
    fs_typed_graph_t graph;
    fs_table_view_t **node_views;   /* [node type][its tables] */
    fs_table_view_t **edge_views;   /* [edge type][its tables] */
} fs_exec_typed_graph_t;

fs_status_t fs_exec_typed_graph_init(fs_exec_typed_graph_t *g, const fs_dataset_t *ds, fs_error_t *err);
void fs_exec_typed_graph_free(fs_exec_typed_graph_t *g);

/* What a host supplies: how its reader reads the graph, and where reads
 * are counted. Fields a host's calls do not use may stay zero. */
typedef struct {
    const fs_limits_t *limits;
    fs_exec_reads_t *reads;             /* added to by every stage that reads */
    fs_pool_t *pool;                    /* gathers and result copies split over it; NULL: this thread */
    /* homogeneous requests */
    const fs_csr_view_t *graph;         /* the reader's topology */
    int device;                         /* -1: the CPU engines; else the GPU holding the views' device tiers,
                                           whose engines run (result arrays come back to the host) */
    const fs_locality_t *las;           /* the reader's preferred sets; NULL or no levels: none */
    const char *no_las;                 /* the host's words for why a boost needs what it lacks (a request
                                           with locality > 1 and no sets is refused with them) */
    fs_sampler_t *sampler;
    /* typed requests */
    const fs_exec_typed_graph_t *typed;
    fs_typed_sampler_t *typed_sampler;
    /* typed, for a remote trainer that caches the hot rows (server/engine.h,
     * fs_engine_hot): with skip_rank set, node type 0's table skip_table
     * (the request's index) gets only the rows of the nodes ranked
     * skip_below or later, packed at the start of its array; the image's
     * bytes after them to the array's end, [skip_hole_at, skip_hole_end),
     * are the trainer's to fill (equal: none) */
    const int32_t *skip_rank;
    int64_t skip_below;
    int skip_table;
    size_t skip_hole_at, skip_hole_end;
} fs_exec_t;

/* ids[0..n) whose rank in a hot list is `below` or later (not among the
 * first `below` a trainer caches), in order, into kept; how many. */
static inline int64_t fs_exec_uncached(const int32_t *rank, int64_t below, const int64_t *ids, int64_t n,
                                       int64_t *kept)
{
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++)
        if (rank[ids[i]] >= below) kept[m++] = ids[i];
    return m;
}

/* One homogeneous request: a sample (with its rows when table is set), or
 * a gather of ids' rows (sample NULL). */
typedef struct {
    const int64_t *ids;                 /* seeds, or the rows' ids */
    int64_t n;
    const fs_sample_req_t *sample;      /* NULL: a gather */
    const fs_table_view_t *table;       /* the rows' table as the reader sees it; NULL: no rows */
    fs_dtype_t dtype;                   /* the rows as served: the table's stored dtype or float32 */
} fs_exec_req_t;

/* The served size of one row of r (0 without a table, or when dtype is not
 * one the table can be served as). */
size_t fs_exec_row_bytes(const fs_exec_req_t *r);
/* The served width of one row of r (a compressed table's decoded dim), 0 as above. */
int64_t fs_exec_row_dim(const fs_exec_req_t *r);

/* Where a result goes: memory of the host's, which it grows on request.
 * base and cap are the memory as it is now (NULL and 0 before any). */
typedef struct fs_exec_region {
    char *base;
    size_t cap;
    void *ctx;                          /* the host's */
    /* Takes the memory, once the request passed its limits (a refused
     * request takes none); NULL: the host took it before the call. */
    fs_status_t (*take)(struct fs_exec_region *r, fs_error_t *err);
    /* At least `bytes` at base, what was written kept (base may move). */
    fs_status_t (*grow)(struct fs_exec_region *r, size_t bytes, fs_error_t *err);
    /* GPU readers: `bytes` of the reader GPU's memory, at *mem. */
    fs_status_t (*device_mem)(struct fs_exec_region *r, size_t bytes, char **mem, fs_error_t *err);
} fs_exec_region_t;

/* A homogeneous result in a region. */
typedef struct {
    fs_sample_result_t sample;          /* a sample's arrays, in the region */
    const void *rows;                   /* [num_rows][dim] in the region, or (rows_device >= 0) in that GPU's memory */
    int64_t num_rows;
    int rows_device;                    /* -1: host memory */
} fs_exec_result_t;

/* Stage 1: every limit from the request alone (fs_limits_check; the rows
 * count in a sample's worst case). */
fs_status_t fs_exec_check(const fs_exec_t *x, const fs_exec_req_t *r, fs_error_t *err);

/* Stages 2-3: samples r (r->sample set) on x's engine, counting the
 * neighbour lists read, then checks the result with r's rows
 * (fs_limits_check_result). The result lives in x->sampler until its next
 * call. A boost (locality > 1) runs on the CPU's locality-aware sampler and
 * needs x->las; on a GPU reader it is FS_ERR_UNSUPPORTED. */
fs_status_t fs_exec_sample(fs_exec_t *x, const fs_exec_req_t *r, fs_sample_result_t *res, fs_error_t *err);

/* Stages 4-5: n rows of table (by ids) into out, as dtype, on x->pool,
 * counted. CPU readers only: a GPU reader's rows go through fs_exec_run. */
fs_status_t fs_exec_gather(fs_exec_t *x, const fs_table_view_t *table, const int64_t *ids, int64_t n,
                           fs_dtype_t dtype, void *out, fs_error_t *err);

/* Stages 1-5 into one region: the sample's arrays first (the CPU sampler
 * writes straight into the region where they fit; the rest are copied
 * after, on x->pool), then the rows (of the sampled nodes, or of r->ids),
 * on a GPU reader into device memory from into->device_mem. On failure the
 * region holds nothing of use; the reads made so far are counted. */
fs_status_t fs_exec_run(fs_exec_t *x, const fs_exec_req_t *r, fs_exec_region_t *into, fs_exec_result_t *out,
                        fs_error_t *err);

/* One typed batch (link NULL: groups of seeds; else link's seed edges, and
 * groups must be NULL), through stages 1-5 on x->typed with
 * x->typed_sampler: resolved by name against the dataset, checked
 * (fs_typed_check, fs_link_check, fs_limits_check_typed: its worst case
 * bounds the result, so nothing is left to check after sampling), sampled,
 * and written with its node and edge rows gathered in place as one batch
 * image (proto/fs_hetero.h) at into->base. req, link: full-size structs.
 * joined: each edge type's edge arrays of all hops end to end
 * (FS_HETERO_JOINED; for readers from 1.5 on). On FS_OK the image is *len
 * bytes and what the batch read is added to x->reads; a failed batch adds
 * nothing. */
fs_status_t fs_exec_typed(fs_exec_t *x, const fs_hetero_seeds_t *groups, size_t num_groups, const fs_link_req_t *link,
                          const fs_hetero_req_t *req, int joined, fs_exec_region_t *into, size_t *len,
                          fs_error_t *err);

#endif
