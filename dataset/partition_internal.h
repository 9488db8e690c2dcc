/* partition_internal.h — what the partitioner's files share: the job, its
 * node arrays and the quality counters. Not for use outside dataset/.
 *
 *   partition.c         the command: checks, renumbering, the root's commit
 *   partition_stream.c  the streaming assignment (Fennel)
 *   partition_metis.c   the METIS assignment and its size check
 *   partition_part.c    one part written as a dataset
 *   partition_book.c    the node maps and partition.json
 *   partition_verify.c  a root verified (featstore info DIR) */
#ifndef FS_PARTITION_INTERNAL_H
#define FS_PARTITION_INTERNAL_H

#include "partition.h"
#include "progress.h"

#define PT_TRAIN_SPLIT "train"
#define PT_PART_DIR "part-%05d"

/* A split (or a link split's positives) grouped by owner: part p's entries
 * are ids[off[p] .. off[p+1]), in the source's order. */
typedef struct {
    int64_t *ids;                  /* new ids (a split), or positions in the link split */
    int64_t *off;                  /* [V + 1] */
} pt_groups_t;

typedef struct {
    int64_t *nodes, *train, *edges; /* [V] each: a part's nodes of the type, training nodes, in-edges */
} pt_load_t;

typedef struct {
    const fs_partition_opts_t *o;
    const fs_dataset_t *ds;
    int V;
    char id[17];                   /* the partitioning's random id, hex */
    char tmp_dir[4200];            /* the root being written */
    /* per node type */
    int32_t **owner;               /* [count] the part owning each node */
    int64_t **new_id;              /* [count] source id -> new id: the node map */
    int64_t **orig;                /* [count] new id -> source id */
    int64_t **first;               /* [V + 1] each part's first new id */
    uint64_t **train_bits;         /* [count / 64 + 1] training nodes, or NULL */
    uint32_t **uses;               /* [count] how many lists hold each node (saturating): its hotness */
    int64_t *in_edges;             /* [types] edges whose destination is of the type */
    int64_t *train_total;          /* [types] */
    pt_groups_t **splits;          /* [types][num_splits] */
    pt_load_t *load;               /* [types] */
    /* per edge type and link split */
    int64_t *cut;                  /* [edge types] edges whose endpoints' owners differ */
    pt_groups_t *links;            /* [link splits] */
    /* per part */
    char (*part_hash)[17];         /* [V] each part manifest's xxh3 */
    size_t node_bytes;             /* what the node arrays take */
    fs_progress_t progress;
    fs_error_t *err;
} pt_job_t;

/* 1 if node v of type t is in the training split. */
static inline int pt_is_train(const pt_job_t *j, int t, int64_t v)
{
    return j->train_bits[t] && (j->train_bits[t][v >> 6] >> (v & 63) & 1);
}

/* A node's neighbour id in an edge type's CSC, whatever the index width. */
static inline int64_t pt_source(const fs_edge_type_t *e, int64_t pos)
{
    return e->index_dtype == FS_DTYPE_I32 ? ((const int32_t *)e->indices)[pos] : ((const int64_t *)e->indices)[pos];
}

/* The assignments: j->owner filled for every node. */
fs_status_t pt_assign_stream(pt_job_t *j);
fs_status_t pt_assign_metis(pt_job_t *j);

/* Part p written under j->tmp_dir (its manifest's hash into j->part_hash[p],
 * its cut and loads counted). */
fs_status_t pt_write_part(pt_job_t *j, int p);

/* The node maps and partition.json under j->tmp_dir; rep gets the quality. */
fs_status_t pt_write_book(pt_job_t *j, fs_partition_report_t *rep);

/* The xxh3 of a whole file, as 16 hex digits. */
fs_status_t pt_file_hash(const char *path, char hex[17], fs_error_t *err);

#endif
