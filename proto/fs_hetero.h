/* fs_hetero.h — typed batches for the transports: one request path and one
 * result layout, so a typed batch is the same bytes over unix:// and
 * grpc:// (docs/api.md section 10).
 *
 * Running (fs_hetero_run): a public request (fs_hetero_req_t, with seed
 * groups or fs_link_req_t; featstore/types.h) names node types, edge types
 * and tables. It is resolved against the dataset's typed graph, checked
 * against the limits (worst case, before any work: fs_limits.h), sampled by
 * the typed engine (kernels/fs_typed.h), and written, with the requested
 * node and edge table rows gathered in place, into one buffer: the batch
 * image. The unix:// client runs it in its own process into a result slot;
 * the gRPC server runs it and streams the image.
 *
 * The image (all integers little-endian int64; every array 64-byte
 * aligned): a 128-byte header (magic "FSHBAT01", total bytes, counts and
 * flags), the shape (per node type its node count and count_after; per
 * node type and node table, dtype and dim or 0 for absent; per edge type
 * its endpoint types; per edge type and edge table, dtype and dim; per seed
 * group its type and count; per block num_dst, num_src, num_edges), the
 * names, then the arrays in that order (fs_hetero.c, layout_arrays()).
 * Reading received bytes back (fs_hetero_index) checks every count, offset
 * and local id, so bytes from the network cannot point a batch outside its
 * buffer.
 *
 * Thread-safety: a graph is read-only after init and shared; a sampler is
 * one per thread. */
#ifndef FS_HETERO_H
#define FS_HETERO_H

#include "dataset.h"
#include "fs_gather.h"
#include "fs_limits.h"
#include "fs_pool.h"
#include "fs_typed.h"
#include "typed_view.h"

/* A dataset's typed graph with its tables as gather views. */
typedef struct {
    const fs_dataset_t *ds;
    fs_typed_graph_t graph;
    fs_table_view_t **node_views;   /* [node type][its tables] */
    fs_table_view_t **edge_views;   /* [edge type][its tables] */
} fs_hetero_graph_t;

fs_status_t fs_hetero_graph_init(fs_hetero_graph_t *g, const fs_dataset_t *ds, fs_error_t *err);
void fs_hetero_graph_free(fs_hetero_graph_t *g);

/* Where an image is written: returns `bytes` of writable memory or NULL
 * (then *err says why). */
typedef void *(*fs_hetero_alloc_fn)(void *ctx, size_t bytes, fs_error_t *err);

/* What one batch read, per source tier, for the metrics (each transport
 * records it where it records its other reads: a unix:// trainer's REPORT,
 * the gRPC server's store counters). Features: the node and edge tables'
 * rows gathered, at their stored row size. Topology: the neighbour lists
 * sampled (one per destination of a block whose edge type has a fanout at
 * that hop) and the neighbour ids taken from them (the block's edges, at
 * the edge type's index width). A typed batch reads the dataset's own
 * arrays (the graph's views): everything is tier 0. */
typedef struct {
    fs_gather_counters_t features, topology;
} fs_hetero_reads_t;

/* One typed batch (link NULL: groups of seeds; else link's seed edges, and
 * groups must be NULL). req, link: full-size structs (client.c normalises
 * a caller's shorter ones). `joined`: each edge type's edge arrays of all
 * hops end to end (sources, then destinations, then edge ids), which
 * readers from 1.5 on take as one array; only for readers that say so
 * (TypedSampling.joined_edges): older clients refuse it. On FS_OK *image
 * (from alloc) holds *len bytes, and what the batch read is added to
 * *reads (may be NULL); a failed batch adds nothing. pool may be NULL. */
fs_status_t fs_hetero_run(const fs_hetero_graph_t *g, fs_typed_sampler_t *s, const fs_limits_t *limits,
                          const fs_hetero_seeds_t *groups, size_t num_groups, const fs_link_req_t *link,
                          const fs_hetero_req_t *req, int joined, fs_pool_t *pool, fs_hetero_alloc_fn alloc,
                          void *ctx, void **image, size_t *len, fs_hetero_reads_t *reads, fs_error_t *err);

/* An image read back: batch points into the image and into `mem`, this
 * index's own small tables. */
typedef struct {
    fs_hetero_batch_t batch;
    void *mem;
} fs_hetero_index_t;

/* Reads image[0..len) (8-byte aligned). Every count and offset is checked
 * against len: FS_ERR_FORMAT naming the first bad field. `received`: the
 * bytes came from elsewhere (the network), so every block's offsets and
 * every local id are checked too — a pass over the arrays that an image
 * this process just wrote (fs_hetero_run) does not need. */
fs_status_t fs_hetero_index(const void *image, size_t len, int received, fs_hetero_index_t *ix, fs_error_t *err);
void fs_hetero_index_free(fs_hetero_index_t *ix);

/* The size of an image's header, and the bytes a valid image's header says
 * it holds (0 if `head` is no image header): for receivers that learn the
 * total from the first chunk. */
#define FS_HETERO_HEADER_BYTES 128
uint64_t fs_hetero_image_bytes(const void *head, size_t len);

#endif
