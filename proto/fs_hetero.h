/* fs_hetero.h — the typed batch image's codec: one result layout, so a
 * typed batch is the same bytes over unix:// and grpc:// (docs/api.md
 * section 10). Codec only: the executor (exec/fs_exec.h, fs_exec_typed)
 * samples a batch and describes it to fs_hetero_encode, which gathers its
 * table rows through the executor's callback.
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
 * Thread-safety: pure functions of their arguments. */
#ifndef FS_HETERO_H
#define FS_HETERO_H

#include "fs_types.h"

/* The image's flags (header word "flags"): which optional arrays it holds.
 * JOINED (since 1.5): each edge type's edge arrays of every hop end to end,
 * sources then destinations (then edge ids), so a reader can take the
 * hops' edges as one [2, E] array with no copy (PyG's edge_index); written
 * only for readers that say they take it (the local transport's own, gRPC
 * clients setting TypedSampling.joined_edges): an older client refuses it. */
enum {
    FS_HETERO_BATCH = 1,        /* per node, the seed it descends from (disjoint or temporal) */
    FS_HETERO_TIME = 2,         /* per node, its time (temporal) */
    FS_HETERO_EDGE_IDS = 4,     /* per sampled edge, its id */
    FS_HETERO_LINK = 8,         /* a link batch: labels, or (TRIPLET) triplet indices */
    FS_HETERO_TRIPLET = 16,
    FS_HETERO_LABEL_TIME = 32,  /* per label, its time */
    FS_HETERO_JOINED = 64,
};

/* Where an image is written: returns `bytes` of writable memory or NULL
 * (then *err says why). */
typedef void *(*fs_hetero_alloc_fn)(void *ctx, size_t bytes, fs_error_t *err);

/* Writes n rows of table k (in the batch's table order) of node type
 * `owner` (edge 0) or of edge type `owner` (edge 1) — the rows of ids —
 * into out, as the batch's fs_rows_t for that table says (dtype, dim). */
typedef fs_status_t (*fs_hetero_rows_fn)(void *ctx, int edge, int64_t owner, int64_t k, const int64_t *ids,
                                         int64_t n, void *out, fs_error_t *err);

/* Writes the batch b describes as one image, in memory from alloc. b is a
 * description: every count, name and array the image holds, as a reader
 * gets them back, except the table rows — a table's fs_rows_t gives its
 * dtype and dim (FS_DTYPE_INVALID: absent for that type) and `rows` writes
 * its rows. Edge tables are described per edge type, by hop 0's blocks:
 * edge_tables[e * num_edge_tables + k] only.
 * An array NULL where the flags want it is written as zeros. flags: the
 * FS_HETERO_* the image holds. On FS_OK *image holds *len bytes. */
fs_status_t fs_hetero_encode(const fs_hetero_batch_t *b, int flags, fs_hetero_alloc_fn alloc, void *alloc_ctx,
                             fs_hetero_rows_fn rows, void *rows_ctx, void **image, size_t *len, fs_error_t *err);

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
 * this process just wrote (fs_hetero_encode) does not need. */
fs_status_t fs_hetero_index(const void *image, size_t len, int received, fs_hetero_index_t *ix, fs_error_t *err);
void fs_hetero_index_free(fs_hetero_index_t *ix);

/* The size of an image's header, and the bytes a valid image's header says
 * it holds (0 if `head` is no image header): for receivers that learn the
 * total from the first chunk. */
#define FS_HETERO_HEADER_BYTES 128
uint64_t fs_hetero_image_bytes(const void *head, size_t len);

#endif
