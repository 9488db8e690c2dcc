/* typed_build.h — writes a version-2 (typed) dataset's arrays and the graph
 * description fs_writer_set_typed() takes, so importers and generators
 * say what the graph is and never lay out a CSC or a manifest by hand.
 *
 * Node types come first (an edge type's ids are checked against their
 * counts). An edge type is given as COO edges in input order: edge i is the
 * i-th pair, and i is its edge id for good. The builder stores it toward
 * the destination (docs/format.md, version 2):
 *   indptr    int64 [count(dst)+1]
 *   indices   int32 when count(src) < 2^31, else int64
 *   edge_ids  int64 [E], the edge id at each position; not written when it
 *             is the identity (the reader then takes the position as the id)
 *   weights, time  by position; features (fs_typed_edge_table) by edge id.
 * Each destination's sources are ordered by (time, edge id), or by edge id
 * alone when untimed: a stable counting sort by destination, then a sort of
 * each timed row. The order is a total one, so the bytes are the same
 * whatever the thread count. An edge type may also get its reverse
 * (dst, reverse, src), holding edge i reversed as its own edge i, with
 * "reverse" set both ways; the reverse holds no feature tables (edge i's
 * features are the forward type's row i).
 *
 * Files are named after the types: "paper.table_feat.npy",
 * "paper.split_train.npy", "author.writes.paper.indptr.npy",
 * "link.train.src.npy" (a name too long for the writer falls back to the
 * type's index). Memory: the edge arrays the caller holds, plus O(E) for
 * the order while an edge type is written.
 *
 * Ownership: the builder borrows the writer; pointers it hands out are the
 * writer's mapped arrays, to be filled before fs_writer_commit(). One
 * thread drives a builder. */
#ifndef FS_TYPED_BUILD_H
#define FS_TYPED_BUILD_H

#include "fs_types.h"
#include "writer.h"

typedef struct fs_typed fs_typed_t;

/* threads: for sorting and filling edge types (<= 0: all CPUs). */
fs_status_t fs_typed_create(fs_writer_t *w, int threads, fs_typed_t **out, fs_error_t *err);
/* Frees the builder without finishing (the caller aborts the writer). NULL is a no-op. */
void fs_typed_free(fs_typed_t *b);

/* ---- node types ---- */

/* Adds a node type (ids 0..count-1); *index (may be NULL) is its place in the list. */
fs_status_t fs_typed_node_type(fs_typed_t *b, const char *name, int64_t count, int *index, fs_error_t *err);
/* A [count, dim] feature table of dtype F32, F16 or BF16, rows to fill in *rows. */
fs_status_t fs_typed_node_table(fs_typed_t *b, int type, const char *table, fs_dtype_t dt, int64_t dim, void **rows,
                                fs_error_t *err);
/* Labels [count] to fill (-1 = unlabelled). num_classes < 0: max label + 1, counted by fs_typed_finish. */
fs_status_t fs_typed_node_labels(fs_typed_t *b, int type, int64_t num_classes, int64_t **labels, fs_error_t *err);
/* Node timestamps [count] to fill. */
fs_status_t fs_typed_node_time(fs_typed_t *b, int type, int64_t **time, fs_error_t *err);
/* A named node id set of `count` ids of this type, to fill. */
fs_status_t fs_typed_node_split(fs_typed_t *b, int type, const char *split, int64_t count, int64_t **ids,
                                fs_error_t *err);
/* train/valid/test: a seeded random partition of the type's labelled nodes
 * (all nodes when labels is NULL) by pct[], each set sorted; the same
 * partition fs_write_random_splits makes. No-op if pct sums to 0. */
fs_status_t fs_typed_random_splits(fs_typed_t *b, int type, const int64_t *labels, const int pct[3], uint64_t seed,
                                   fs_error_t *err);

/* ---- edge types ---- */

typedef struct {
    const char *src, *rel, *dst;      /* node type names (added before) and the relation */
    int64_t num_edges;
    const int64_t *src_ids, *dst_ids; /* [num_edges]: edge i is (src_ids[i], dst_ids[i]) */
    const float *weights;             /* [num_edges] or NULL */
    const int64_t *time;              /* [num_edges] or NULL */
    const char *reverse;              /* non-NULL: also write (dst, reverse, src) */
} fs_typed_edges_t;

/* Writes the edge type (and its reverse, which is then *index + 1). An id
 * out of range is FS_ERR_FORMAT naming the edge type and the edge's
 * position in the input. */
fs_status_t fs_typed_edge_type(fs_typed_t *b, const fs_typed_edges_t *e, int *index, fs_error_t *err);
/* A [num_edges, dim] edge feature table, rows by edge id, to fill. */
fs_status_t fs_typed_edge_table(fs_typed_t *b, int edge_type, const char *table, fs_dtype_t dt, int64_t dim,
                                void **rows, fs_error_t *err);

/* ---- link splits ---- */

typedef struct {
    int64_t *src, *dst;     /* [count] */
    int64_t *label, *time;  /* [count], when asked for; else NULL */
    int64_t *neg_dst;       /* [count, num_neg] when num_neg > 0; else NULL */
} fs_typed_link_t;

enum { FS_LINK_LABEL = 1 << 0, FS_LINK_TIME = 1 << 1 };

/* A named link split of `count` edges of an edge type; `parts` adds label
 * and time arrays, num_neg > 0 given negatives. Arrays to fill in *out. */
fs_status_t fs_typed_link_split(fs_typed_t *b, const char *name, int edge_type, int64_t count, unsigned parts,
                                int64_t num_neg, fs_typed_link_t *out, fs_error_t *err);

/* ---- file names ---- */

/* "<prefix>.<what>.npy" (prefix: a node type, "src.rel.dst", "link.NAME");
 * when that is too long for the writer, the type's index instead ("x-n3",
 * "x-e7": a '-' no type name has, so no clash). kind is 'n', 'e' or 'l'.
 * Every writer of version-2 datasets names its files so. */
void fs_typed_file_name(char out[128], const char *prefix, char kind, int index, const char *what);

/* Hands the graph description to the writer (fs_writer_set_typed) and frees
 * b whatever the outcome. The caller then sets the name and source and commits. */
fs_status_t fs_typed_finish(fs_typed_t *b, fs_error_t *err);

#endif
