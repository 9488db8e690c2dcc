/* fs_shard.h — some parts of a partitioned dataset (featstore partition,
 * docs/format.md "Partitioned datasets"), open, and their answers in
 * owner-routed sampling (docs/design.md): the one engine of a shard, run
 * by a shard server (server/shard.h opens it from its partition root) and
 * by a trainer on the shard's machine (client-lib, from the descriptors
 * the shard's unix socket hands out).
 *
 * Each part stays a dataset of its own (its typed view over its own
 * arrays), so parts can be added and dropped one by one (fs_shard_regroup). A request names
 * nodes by their global ids in the partitioned graph (the node maps' new
 * ids); each is found in the part that owns it, picked there with the
 * engine's fs_typed_picks keyed by the node's id in the source dataset,
 * and the answers come back merged in the request's order: exactly the
 * picks one server makes for those nodes.
 *
 * Ownership: a shard holds its parts; shards made from it by
 * fs_shard_regroup share the parts they keep (counted: a part closes with
 * the last shard holding it), so a server swaps the shard it answers from
 * while calls still read the old one. Thread-safety: read-only once open;
 * each caller brings its own workspace. */
#ifndef FS_SHARD_H
#define FS_SHARD_H

#include "dataset.h"
#include "fs_typed.h"

typedef struct fs_shard fs_shard_t;

/* A shard of the open parts parts[0..n), taken (each set to NULL; closed
 * on an error too): all parts of one partitioning (FS_ERR_FORMAT naming a
 * whole dataset or a part of another one), none twice
 * (FS_ERR_INVALID_ARGUMENT). `name` stands for the shard in messages (a
 * server's partition root). */
fs_status_t fs_shard_adopt(const char *name, fs_dataset_t **parts, int n, fs_shard_t **out, fs_error_t *err);
void fs_shard_close(fs_shard_t *s);

/* A shard of partitioning `partitioning` (its id) of `parts` parts holding
 * none yet: every request is FS_ERR_NOT_FOUND (the caller's map is stale). */
fs_status_t fs_shard_empty(const char *name, const char *partitioning, int parts, fs_shard_t **out, fs_error_t *err);

/* A new shard of from's parts without drop[0..num_drop) (indices; those it
 * does not hold are ignored) and with the open parts add[0..num_add), taken
 * as fs_shard_adopt takes them. from is unchanged, and may be closed before
 * or after the new one. */
fs_status_t fs_shard_regroup(const fs_shard_t *from, const int *drop, int num_drop, fs_dataset_t **add, int num_add,
                             fs_shard_t **out, fs_error_t *err);

/* Its name, the partitioning's id, parts and the held ones (ascending). */
const char *fs_shard_name(const fs_shard_t *s);
const char *fs_shard_partitioning(const fs_shard_t *s);
int fs_shard_num_parts(const fs_shard_t *s);
int fs_shard_held(const fs_shard_t *s, const int **parts);

/* A held part's dataset (NULL if not held). */
const fs_dataset_t *fs_shard_part(const fs_shard_t *s, int part);

/* The picks of edge type q->etype for destinations ids[0..n) (global ids
 * of its destination type), in order, into *out (the shard workspace w's,
 * until its next call). An id no held part owns is FS_ERR_NOT_FOUND naming
 * it: the caller's shard map is stale. */
typedef struct fs_shard_ws fs_shard_ws_t;
fs_status_t fs_shard_ws_create(fs_shard_ws_t **out, fs_error_t *err);
void fs_shard_ws_destroy(fs_shard_ws_t *w);
fs_status_t fs_shard_picks(const fs_shard_t *s, fs_shard_ws_t *w, const fs_typed_picks_req_t *q, const int64_t *ids,
                           int64_t n, fs_typed_picks_t *out, fs_error_t *err);

/* Which pairs (dst[i], src[i]) are edges of edge type etype, 1 or 0 into
 * is_edge[i] (a link batch's strict negatives, asked in bulk): dst global
 * ids of its destination type, all held (else FS_ERR_NOT_FOUND as
 * fs_shard_picks), src global ids of its source type; each destination's
 * row scanned as one server scans it. */
fs_status_t fs_shard_edges(const fs_shard_t *s, int etype, const int64_t *dst, const int64_t *src, int64_t n,
                           uint8_t *is_edge, fs_error_t *err);

/* A node table of type t (a feature table, "labels", or the nodes'
 * timestamps: FS_CLUSTER_NODE_TIME_TABLE) as the held parts store it: its row
 * size. FS_ERR_NOT_FOUND naming what is missing. */
fs_status_t fs_shard_table(const fs_shard_t *s, int t, const char *table, size_t *row_bytes, fs_error_t *err);

/* Rows ids[0..n) (global ids of type t, all held: else FS_ERR_NOT_FOUND as
 * fs_shard_picks) of that table, as stored, into out (n * row_bytes). */
fs_status_t fs_shard_rows(const fs_shard_t *s, int t, const char *table, const int64_t *ids, int64_t n, void *out,
                          fs_error_t *err);

#endif
