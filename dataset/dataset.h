/* dataset.h — featstore's native on-disk dataset: a directory with a
 * manifest.json and one numpy .npy file per array.
 *
 * Two versions (docs/format.md). Version 1, below, is one
 * homogeneous graph. Version 2 is a typed graph: node types, edge types
 * (src, rel, dst) each stored toward its destination (CSC) with edge ids,
 * optional weights, times and edge features, node times, and link splits;
 * see fs_node_type_t and below. Either version is readable both ways: a
 * version-1 dataset is also one node type "node" and one edge type
 * ("node", "to", "node"), and a version-2 dataset with one node type and
 * one edge type also fills the version-1 fields, so every homogeneous tool
 * works on it. A version-2 dataset with more types leaves them empty
 * (num_nodes 0, no tables): tools that need one graph refuse it by
 * fs_dataset_is_typed().
 *
 *   manifest.json      format, version, name, num_nodes, num_edges, and which
 *                      file plays which role (see docs/format.md)
 *   indptr.npy         int64 [N+1]      CSR row offsets, row v = v's neighbours
 *   indices.npy        int32|int64 [E]  neighbour ids, each < N
 *   edge_weights.npy   float32 [E]      optional
 *   table_<name>.npy   [N, F] float32 | float16 | bfloat16 (stored as <u2)
 *   labels.npy         int64 [N]        -1 = unlabelled; optional; also served as
 *                                       the table "labels" (int64 [N x 1])
 *   split_<name>.npy   int64 [k]        node id sets (train / valid / test)
 *   node_ids.npy       int64 [N]        original ids when an import compacted them
 *
 * Opening maps every file read-only (no parse, no copy) and validates it:
 * header, shape, dtype, file size, indptr monotone, every id in range. With
 * FS_OPEN_VERIFY it also checks each file's xxh3 checksum from the manifest.
 * With FS_OPEN_COPY (the server) each file is first copied — into a sealed
 * memfd or an unnamed read-only file (fs_copy_opts_t) — while its checksum
 * is computed, and everything after that reads the copy: nobody can shrink
 * or change it, so no page can vanish under a reader (no SIGBUS) and the
 * bytes served are the bytes verified (dataset.c, served_copy.c). A feature
 * table that does not fit the copies' memory budget (fs_copy_opts_t) is
 * left on disk instead: its header read, never mapped (fs_table_t.on_disk;
 * budget.c), its rows read by whoever serves it (disk/fs_disktable.h).
 * Every failure names the file and, for data errors, the first bad offset.
 *
 * Each file is opened once: the dataset keeps the descriptor it validated
 * (the copy, or the original file without FS_OPEN_COPY) and hands it out by
 * fs_dataset_locate(); nothing reopens a path after validation.
 *
 * Ownership: the dataset owns its mappings and descriptors; every pointer
 * below stays valid until fs_dataset_close(). Thread-safety: an open dataset
 * is immutable and may be read from any number of threads. */
#ifndef FS_DATASET_H
#define FS_DATASET_H

#include <stdio.h>

#include "fs_gather.h"
#include "fs_types.h"

#define FS_DATASET_FORMAT "featstore-dataset"
#define FS_DATASET_VERSION 2      /* the newest version read */
#define FS_MANIFEST "manifest.json"

#define FS_LABELS_TABLE "labels"

typedef struct {
    char name[64];
    char file[128];
    fs_dtype_t dtype;        /* F32, F16 or BF16 (I8 with codec INT8); I64 for the labels table */
    fs_codec_t codec;        /* a compressed table's (kernels/fs_codec.h): dtype and dim are as stored */
    int64_t rows, dim;
    size_t row_bytes;
    const void *data;        /* rows * row_bytes, row-major; NULL when on_disk */
    /* A table left on disk by FS_OPEN_COPY's budget: never mapped; its rows
     * start at file_offset in the file fs_dataset_table_fd gives, and are
     * read through `remote`, which whoever serves the table sets (the
     * server's and the trainers' disk tables: disk/fs_disktable.h). */
    int on_disk;
    uint64_t file_offset;
    int has_file_xxh3;       /* the manifest's checksum of the whole file, when it has one */
    uint64_t file_xxh3;
    const fs_table_remote_t *remote;
} fs_table_t;

typedef struct {
    char name[64];
    char file[128];
    int64_t count;
    const int64_t *ids;
} fs_idset_t;

typedef struct fs_mapping fs_mapping_t;
typedef struct fs_split_name fs_split_name_t;

/* The longest split name fs_dataset_split resolves, NUL included: a node
 * type's split "TYPE/NAME" (63 + 1 + 63 characters), or a link split's
 * array "link/NAME/neg_dst". */
#define FS_SPLIT_NAME_MAX 128

/* ---- typed graphs (version 2) ---- */

/* type and relation names: FS_TYPE_NAME_MAX and fs_type_name_valid (fs_types.h) */

typedef struct {
    char name[FS_TYPE_NAME_MAX];
    int64_t count;                 /* ids of this type are 0..count-1; a part's rows (below) */
    int64_t first, total;          /* a part of a partitioned dataset: row r is the type's node first + r of
                                      total in the whole dataset, and every id of the type (indices,
                                      splits, link splits) is such a global id; else 0 and count */
    int num_tables;
    fs_table_t *tables;            /* [count] rows each; the features, then "labels" if labelled */
    const int64_t *labels;         /* [count], -1 = unlabelled; or NULL */
    int64_t num_classes;
    const int64_t *time;           /* [count] node timestamps, or NULL */
    const int64_t *orig_ids;       /* a part: [count] each row's id in the source dataset; else NULL */
    int num_splits;
    fs_idset_t *splits;            /* ids of this type */
} fs_node_type_t;

typedef struct {
    char src[FS_TYPE_NAME_MAX], rel[FS_TYPE_NAME_MAX], dst[FS_TYPE_NAME_MAX];
    int src_type, dst_type;        /* indices into node_types */
    int64_t num_edges;
    int64_t total_edges;           /* a part: the type's edges in the whole dataset (edge ids are below it,
                                      distinct, not a permutation of the part's positions); else num_edges */
    /* Toward the destination (CSC): destination d's source neighbours are
     * indices[indptr[d] .. indptr[d+1]), ids of the src type. */
    const int64_t *indptr;         /* [count(dst) + 1] */
    const void *indices;           /* [num_edges], index_dtype */
    fs_dtype_t index_dtype;        /* I32 or I64 */
    const int64_t *edge_ids;       /* [num_edges] id of the edge at each position (a permutation of
                                      0..num_edges-1); NULL: the position is the id */
    const float *weights;          /* [num_edges] by position, or NULL */
    const int64_t *time;           /* [num_edges] by position, non-decreasing within each
                                      destination (eligibility is a binary search); or NULL */
    int num_tables;
    fs_table_t *tables;            /* edge features, [num_edges] rows each, by edge id */
    int reverse;                   /* the edge type (dst, r, src) holding edge i reversed as its
                                      edge i, or -1 */
    int symmetric;                 /* undirected: (u, v) is stored whenever (v, u) is (src type =
                                      dst type); the manifest's word, not checked when opened */
} fs_edge_type_t;

/* Positive edges for link prediction (and, optionally, given negatives). */
typedef struct {
    char name[64];                 /* train, valid, test, ... */
    int edge_type;
    int64_t count;
    const int64_t *src, *dst;      /* [count] ids of the edge type's src and dst types */
    const int64_t *label;          /* [count] or NULL (all positive) */
    const int64_t *time;           /* [count] or NULL */
    const int64_t *neg_dst;        /* [count, num_neg] negative destinations, or NULL */
    int64_t num_neg;
} fs_link_split_t;

/* ---- hop tables (`featstore propagate`, docs/algorithms.md §8) ----
 * The manifest's "propagation" object (docs/format.md) says how
 * hop_0 .. hop_R were made. With rows "all" they are ordinary feature
 * tables (num_nodes rows, gathered by node id). With rows "labelled" they
 * hold only the splits' nodes, one row each, split after split (each
 * split's rows contiguous, in one seeded random order): row tables, which
 * are not feature tables (they are indexed by row, not by node id). */
#define FS_PROP_MAX_HOPS 64

typedef struct {
    char name[64];
    int64_t offset, count;         /* the split's rows: [offset, offset + count) */
} fs_row_split_t;

typedef struct {
    char source_table[64];         /* X_0 */
    int hops;                      /* R */
    char norm[8];                  /* "sym", "rw" or "none" */
    int self_loops;                /* A + I */
    char graph[16];                /* "stored" (rows as stored) or "symmetrized" (A ∪ A^T) */
    fs_dtype_t dtype;              /* of every hop table */
    int labelled;                  /* rows: 0 all, 1 labelled */
    int num_tables;                /* R + 1 */
    fs_table_t *tables;            /* hop_0 .. hop_R (copies of ds->tables' entries, or the row tables) */
    /* rows "labelled" only: */
    int64_t num_rows;              /* k: rows of each hop table */
    const int64_t *row_nodes;      /* [k] the node of each row */
    const int64_t *row_index;      /* [num_nodes] the row of each node, -1 if it has none */
    int num_row_splits;
    fs_row_split_t *row_splits;    /* in row order */
    uint64_t seed;                 /* of the row order */
    fs_table_t node_table;         /* FS_ROW_NODE_TABLE (featstore/types.h): row_nodes as a row table */
} fs_propagation_t;

/* A part of a partitioned dataset (docs/format.md "Partitioned datasets"):
 * the manifest's "partition" object. parts is 0 for a whole dataset. */
typedef struct {
    char id[FS_PARTITION_ID_LEN + 1]; /* the partitioning's id, hex */
    int index, parts;              /* this part, of parts */
} fs_part_of_t;

typedef struct {
    char *dir;
    char name[128];
    int64_t num_nodes, num_edges;
    int symmetric;                 /* undirected: every edge is stored both ways (an importer's
                                      --symmetrize, or a writer's word); the one edge type's */
    const int64_t *indptr;         /* [N+1] */
    const void *indices;           /* [E], index_dtype */
    fs_dtype_t index_dtype;        /* I32 or I64 */
    const float *edge_weights;     /* [E] or NULL */
    const int64_t *labels;         /* [N] or NULL */
    int64_t num_classes;
    const int64_t *node_ids;       /* [N] or NULL */
    int num_tables;
    fs_table_t *tables;            /* the feature tables, then "labels" if labelled */
    int num_splits;
    fs_idset_t *splits;
    int version;                   /* of the manifest: 1 or 2 */
    int num_node_types;            /* >= 1 */
    fs_node_type_t *node_types;
    int num_edge_types;
    fs_edge_type_t *edge_types;
    int num_link_splits;
    fs_link_split_t *link_splits;
    fs_propagation_t *propagation; /* the hop tables' description, or NULL (one-graph datasets only) */
    fs_part_of_t partition;        /* a part of a partitioned dataset (version 2), or parts 0 */
    const char *manifest;          /* fs_dataset_open: the manifest's bytes as parsed (not
                                      NUL-terminated), for trainers to open the same; else NULL */
    size_t manifest_len;
    int checksums_verified;        /* 1 if every file's checksum was checked (tables on disk: by their rows' pass) */
    size_t memory_left;            /* FS_OPEN_COPY: what the memory budget leaves after the copies */
    int num_on_disk;               /* feature tables left on disk */
    int served_copy;               /* 1 if served from copies (FS_OPEN_COPY) */
    /* private */
    int num_maps, cap_maps;
    fs_mapping_t *maps;
    char *copy_dir;                /* FS_OPEN_COPY: where unnamed-file copies go */
    int num_split_names;
    fs_split_name_t *split_names;  /* "TYPE/NAME" and "link/NAME/ARRAY" (dataset_typed.c) */
} fs_dataset_t;

enum {
    FS_OPEN_VERIFY = 1 << 0,       /* also verify the manifest's checksums */
    FS_OPEN_COPY = 1 << 1,         /* copy each file (FS_COPY_AUTO; and verify its
                                      checksum, which the copy computes anyway) */
    FS_OPEN_WINDOWED = 1 << 2,     /* check each array window by window and drop each window from this
                                      process once checked (window.h): the resident set stays small on a
                                      dataset larger than memory (the partitioner) */
};

/* What holds FS_OPEN_COPY's copies (served_copy.c; docs/serving.md "Huge
 * pages"). Both are unwritable once made; they differ in page size and
 * cost. */
typedef enum {
    FS_COPY_AUTO = 0,  /* the memfd where shmem gets 2 MiB pages; else a file in `dir` where a probe file gets
                          them (per file, while the copy leaves 5% of that file system free, and unless the
                          budget leaves a feature table on disk); else the memfd */
    FS_COPY_MEMFD,     /* a sealed memfd: memory only; 2 MiB pages only under the host's shmem THP setting */
    FS_COPY_FILE,      /* an unnamed 0400 file in `dir`, written to disk before serving; 2 MiB pages where the
                          kernel keeps large folios for that file system. An error where `dir` cannot hold one */
} fs_copy_medium_t;

typedef struct {
    fs_copy_medium_t medium;
    const char *dir;   /* the files' directory; NULL = $TMPDIR, else /var/tmp */
    size_t mem_budget; /* bytes the copies may take (--mem-budget); 0: what the machine can give now, less a
                          margin. Feature tables that do not fit stay on disk (fs_table_t.on_disk) */
} fs_copy_opts_t;

fs_status_t fs_dataset_open(const char *dir, unsigned flags, int threads, fs_dataset_t **out,
                            fs_error_t *err);

/* fs_dataset_open with FS_OPEN_COPY and the copies where `copy` says
 * (NULL: FS_COPY_AUTO in the default directory). */
fs_status_t fs_dataset_open_served(const char *dir, const fs_copy_opts_t *copy, unsigned flags, int threads,
                                   fs_dataset_t **out, fs_error_t *err);
void fs_dataset_close(fs_dataset_t *ds);

/* A dataset whose files were opened by someone else (a trainer given the
 * server's descriptors): the manifest's text (text[0..len), not
 * NUL-terminated) is parsed and validated exactly as fs_dataset_open does,
 * but every file it names is files[i]'s descriptor fds[i] (dup'ed; the
 * caller keeps its own), mapped read-only from offset 0, instead of a path.
 * Checksums are not computed (whoever opened the files verified them; the
 * manifest's byte counts are still checked). A file the manifest names
 * that is not in the list is FS_ERR_NOT_FOUND naming it. `name` stands for
 * the directory in messages (and in ds->dir). */
fs_status_t fs_dataset_open_fds(const char *name, const char *text, size_t len, const char *const *files,
                                const int *fds, int num_files, int threads, fs_dataset_t **out, fs_error_t *err);
/* The same, leaving the feature tables named in on_disk[0..num_on_disk) on
 * disk (fs_table_t.on_disk: header read, never mapped; whoever serves them
 * sets `remote`): a trainer of a server that reads them from disk. */
fs_status_t fs_dataset_open_fds_on_disk(const char *name, const char *text, size_t len, const char *const *files,
                                        const int *fds, int num_files, const char *const *on_disk, int num_on_disk,
                                        int threads, fs_dataset_t **out, fs_error_t *err);

/* fs_dataset_open with the manifest's text given in memory (text[0..len),
 * not NUL-terminated) instead of read from dir/manifest.json; the arrays
 * are still dir's files. For the manifest fuzzer (tests/fuzz), which feeds
 * a new manifest per run without touching the disk. */
fs_status_t fs_dataset_open_manifest(const char *dir, const char *text, size_t len, unsigned flags, int threads,
                                     fs_dataset_t **out, fs_error_t *err);

const fs_table_t *fs_dataset_table(const fs_dataset_t *ds, const char *name);

/* The row tables a server serves beside the feature tables: with hop
 * tables of rows "labelled", hop_0 .. hop_R and FS_ROW_NODE_TABLE, each of
 * propagation->num_rows rows, indexed by row; none otherwise. Never placed
 * on a GPU: they are read from the dataset's own memory. */
int fs_dataset_num_row_tables(const fs_dataset_t *ds);
/* How many of the feature and row tables are compressed (a codec). */
int fs_dataset_num_compressed(const fs_dataset_t *ds);
const fs_table_t *fs_dataset_row_table(const fs_dataset_t *ds, int i);
/* A table a server serves, by name: a feature table or a row table. */
const fs_table_t *fs_dataset_served_table(const fs_dataset_t *ds, const char *name);
/* FS_ERR_NOT_FOUND for a table it does not serve, naming the tables it does. */
fs_status_t fs_dataset_table_not_found(const fs_dataset_t *ds, const char *name, fs_error_t *err);

/* 1 if the dataset has more than one node type or not exactly one edge
 * type: the version-1 fields are empty and only typed tools can use it. */
int fs_dataset_is_typed(const fs_dataset_t *ds);
/* FS_OK for a one-graph dataset; else FS_ERR_UNSUPPORTED saying that `what`
 * ("serve", "plan") takes one node type and one edge type. A part of a
 * partitioned dataset is refused too (fs_dataset_need_whole). */
fs_status_t fs_dataset_need_one_graph(const fs_dataset_t *ds, const char *what, fs_error_t *err);
/* FS_OK for a whole dataset; FS_ERR_UNSUPPORTED for a part of a partitioned
 * one, whose ids reach past its own rows: `what` needs the whole dataset. */
fs_status_t fs_dataset_need_whole(const fs_dataset_t *ds, const char *what, fs_error_t *err);
/* The index of a node type, or of an edge type (src, rel, dst); -1 if none. */
int fs_dataset_node_type(const fs_dataset_t *ds, const char *name);
int fs_dataset_edge_type(const fs_dataset_t *ds, const char *src, const char *rel, const char *dst);
const fs_table_t *fs_node_type_table(const fs_node_type_t *t, const char *name);
/* A named id set, valid while the dataset is open: a split ("train"; only
 * on a one-graph dataset), a node type's split "TYPE/NAME" ("paper/train":
 * ids of that type), or a link split's int64 array "link/NAME/src", ".../dst",
 * and when present ".../label", ".../time" and ".../neg_dst" ([count *
 * num_neg], row-major). NULL when there is none. */
const fs_idset_t *fs_dataset_split(const fs_dataset_t *ds, const char *name);
/* The same, or FS_ERR_NOT_FOUND saying what does exist (the link split's
 * arrays, the node type's splits, the first few names; on a typed dataset a
 * plain name suggests "TYPE/NAME"). */
fs_status_t fs_dataset_find_split(const fs_dataset_t *ds, const char *name, const fs_idset_t **out, fs_error_t *err);

/* Neighbour j of the CSR, whatever the index width. */
static inline int64_t fs_dataset_neighbor(const fs_dataset_t *ds, int64_t pos)
{
    return ds->index_dtype == FS_DTYPE_I32 ? ((const int32_t *)ds->indices)[pos]
                                           : ((const int64_t *)ds->indices)[pos];
}

/* The descriptor holding `data` (a pointer into one of the dataset's
 * arrays: the validated descriptor, still owned by the dataset — dup it to
 * keep it) and the byte offset of `data` in it, so it can be shared.
 * FS_ERR_NOT_FOUND if the pointer is not in a mapping of this dataset. */
fs_status_t fs_dataset_locate(const fs_dataset_t *ds, const void *data, int *fd, int64_t *offset);

/* A table left on disk (on_disk): the descriptor of its file, the
 * original, read-only, owned by the dataset. FS_ERR_NOT_FOUND otherwise. */
fs_status_t fs_dataset_table_fd(const fs_dataset_t *ds, const fs_table_t *t, int *fd);

/* ---- files changed under an open dataset ----
 * Serving reads the copies, so a change to a file only needs telling: what
 * the file's name points at now is compared with what it pointed at when
 * last looked at (at first, the file as validated). */
typedef enum {
    FS_FILE_SAME,
    FS_FILE_DELETED,       /* the name is gone */
    FS_FILE_REPLACED,      /* the name now points at another file (rename over it, or re-created) */
    FS_FILE_TRUNCATED,     /* the same file, shorter */
    FS_FILE_GROWN,         /* the same file, longer */
    FS_FILE_WRITTEN,       /* the same file and size, modified */
    FS_FILE_CHANGE_COUNT_
} fs_file_change_t;

typedef struct {
    int present;
    uint64_t dev, ino;
    int64_t size, mtime_ns;
} fs_file_state_t;

const char *fs_file_change_name(fs_file_change_t c);
int fs_dataset_num_files(const fs_dataset_t *ds);
const char *fs_dataset_file_name(const fs_dataset_t *ds, int i);   /* "table_feat.npy" */
int fs_dataset_file_on_disk(const fs_dataset_t *ds, int i);        /* a table's file served from disk, not a copy */
/* File i's validated descriptor (owned by the dataset: dup it to keep it). */
int fs_dataset_file_fd(const fs_dataset_t *ds, int i);
/* File i as it was validated. */
void fs_dataset_file_validated(const fs_dataset_t *ds, int i, fs_file_state_t *out);
/* Looks at file i's name now and compares with *last: returns what changed
 * (FS_FILE_SAME when nothing), describes it in `what` ("truncated from 4096
 * to 100 bytes"), and updates *last, so each change is reported once. */
fs_file_change_t fs_dataset_file_check(const fs_dataset_t *ds, int i, fs_file_state_t *last, char *what, size_t len);

/* Reads every page of every mapping once, so the whole dataset is resident
 * (a warm store: first requests pay no page faults). */
void fs_dataset_prefault(const fs_dataset_t *ds);

/* Bytes of all mapped files together (with FS_OPEN_COPY: the memory the
 * copies take). */
size_t fs_dataset_bytes(const fs_dataset_t *ds);

/* Bytes of the copies (FS_OPEN_COPY) that are in 2 MiB pages
 * (docs/serving.md "Huge pages"). 0 without copies; -1 when unknown. */
long long fs_dataset_huge_bytes(const fs_dataset_t *ds);

/* Bytes of the copies (FS_OPEN_COPY) in unnamed files, and their directory
 * (NULL when there are none); the rest are sealed memfds. */
size_t fs_dataset_file_copy_bytes(const fs_dataset_t *ds, const char **dir);

/* Bytes of the tables' files left on disk by the memory budget (not copied). */
size_t fs_dataset_on_disk_bytes(const fs_dataset_t *ds);

#endif
