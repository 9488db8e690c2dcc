/* partition.h — `featstore partition`: a dataset split into V parts for a
 * sharded featstore (issue 48; docs/format.md "Partitioned datasets").
 *
 * Each node type's nodes are given to parts, by a one-pass streaming
 * partitioner (Fennel: Tsourakakis et al. 2014, docs/papers.md) whose memory
 * grows with the nodes, never with the edges, or by METIS on the
 * symmetrised graph (Debian's libmetis, when the build found it). Then each
 * type is renumbered so that part p owns the new ids [first[p], first[p+1]),
 * in ascending source id within a part, and every part is written as a
 * version-2 dataset of its own: the rows of the nodes it owns (features,
 * labels, times, the source ids), the CSC rows of the destinations it owns
 * with every neighbour in the source's order and its source edge id, its
 * share of the splits and link splits, every id a new global id. The root
 * holds the partition book (partition.json: ranges, quality, checksums,
 * the types' tables and splits) and, per type, its node map (source id ->
 * new id), its splits in the source's order and its hot list (the nodes
 * the most neighbour lists hold, counted while the parts are written).
 *
 *   DIR/partition.json            the book
 *   DIR/<type>.node_map.npy       int64 [count]
 *   DIR/<type>.split_<name>.npy   int64: the source's split, its ids and order
 *   DIR/<type>.hot.npy            int64 [count / 4, rounded up]: new ids, hottest first
 *   DIR/part-00000/ ...           a version-2 dataset per part
 *
 * The directory is written atomically (DIR.tmp-<pid>, fsync, rename). The
 * source is opened windowed (FS_OPEN_WINDOWED) and read through windows
 * (window.h), so the resident set is the node arrays (about 24 bytes a
 * node, plus a bit per node for the training split and 8 bytes per split
 * or link-split entry) plus a few windows; METIS adds the graph it is given
 * (4 bytes per node and per symmetrised adjacency entry).
 *
 * Thread-safety: one call at a time per output directory. */
#ifndef FS_PARTITION_H
#define FS_PARTITION_H

#include "dataset.h" /* and FS_PARTITION_MAX_PARTS, fs_types.h */

#define FS_PARTITION_FORMAT "featstore-partitions"
#define FS_PARTITION_VERSION 1
#define FS_PARTITION_BOOK "partition.json"
#define FS_PARTITION_DEFAULT_IMBALANCE 0.05
#define FS_PARTITION_MAX_IMBALANCE 1.0

typedef enum { FS_PARTITION_STREAM, FS_PARTITION_METIS } fs_partition_method_t;

typedef struct {
    const char *dataset;           /* the source: version 1 or 2, no edge feature tables */
    const char *out_dir;           /* the root written */
    int parts;                     /* V, 1..FS_PARTITION_MAX_PARTS and at most the dataset's nodes */
    fs_partition_method_t method;  /* default FS_PARTITION_STREAM */
    double imbalance;              /* a part's load may reach (1 + imbalance) x the mean; default 0.05 */
    uint64_t seed;                 /* METIS's seed (default 1) */
    int force;                     /* replace an existing partition root at out_dir */
    int threads;                   /* for validating the source (<= 0: all CPUs) */
    int quiet;                     /* no progress lines */
    /* The hot list's ranking, [nodes] of a source with one node type (e.g.
     * the placement engine's reach or presampled hotness, fs_place_hotness),
     * or NULL: how many neighbour lists hold each node (its in-degree). */
    const double *hotness;
} fs_partition_opts_t;

/* The quality the book records, summed over types: the edge cut and the
 * worst balance (max / mean over parts) of any node type. */
typedef struct {
    int64_t edges, cut;
    double cut_fraction;
    double balance_nodes, balance_train, balance_edges;
    size_t node_array_bytes;       /* what the node arrays took (the resident set's floor) */
    char id[FS_PARTITION_ID_LEN + 1]; /* the partitioning's id */
    double seconds;
} fs_partition_report_t;

void fs_partition_defaults(fs_partition_opts_t *o);
/* Writes o->out_dir. FS_ERR_INVALID_ARGUMENT for parts out of range (the
 * message says the range), FS_ERR_EXISTS for an existing out_dir without
 * force (or one that is not a partition root, even with it),
 * FS_ERR_UNSUPPORTED for edge feature tables (naming the table), METIS
 * asked for in a build without it, or a graph too large for METIS. */
fs_status_t fs_partition(const fs_partition_opts_t *o, fs_partition_report_t *rep, fs_error_t *err);

/* 1 if this build has METIS (--method metis). */
int fs_partition_have_metis(void);
/* FS_OK when METIS's 32-bit idx_t holds a graph of `nodes` nodes and
 * `edges` stored edges (up to 2 x edges adjacency entries once
 * symmetrised); else FS_ERR_UNSUPPORTED naming --method stream. */
fs_status_t fs_partition_metis_fits(int64_t nodes, int64_t edges, fs_error_t *err);

/* ---- a partition root (partition_verify.c) ---- */

/* 1 if dir holds a partition book. */
int fs_partition_is_root(const char *dir);
/* The directory of part `part` under the root: "<root>/part-00007". */
void fs_partition_part_dir(const char *root, int part, char *buf, size_t len);
/* V, the number of parts of the root's partitioning, from its book alone
 * (checked as fs_partition_verify checks it; the parts are not opened). */
fs_status_t fs_partition_num_parts(const char *root, int *parts, fs_error_t *err);
/* The same, and the partitioning's id into id (FS_PARTITION_ID_LEN + 1
 * bytes; may be NULL). */
fs_status_t fs_partition_identity(const char *root, char *id, int *parts, fs_error_t *err);

typedef struct {
    char id[FS_PARTITION_ID_LEN + 1], name[128], method[16];
    int parts, num_node_types, num_edge_types;
    int64_t nodes, edges, cut;
    double cut_fraction, balance_nodes, balance_train, balance_edges;
} fs_partition_summary_t;

/* Verifies a root: the book, every part present once with the book's id
 * and its manifest's checksum, each part a valid dataset (checksums
 * verified) whose ranges are the book's, the node maps' checksums and that
 * each is a bijection onto 0..count-1 agreeing with the parts' orig_ids.
 * Errors name the file, the part and the first bad offset. */
fs_status_t fs_partition_verify(const char *dir, int threads, fs_partition_summary_t *out, fs_error_t *err);

#endif
