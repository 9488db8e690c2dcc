/* shard.h — what a shard server holds: some parts of a partitioned dataset
 * (featstore partition, docs/format.md "Partitioned datasets"), and its
 * answers in owner-routed sampling (docs/design.md).
 *
 * Each part stays a dataset of its own (its typed view over its own
 * arrays), so parts can be added and dropped one by one. A request names
 * nodes by their global ids in the partitioned graph (the node maps' new
 * ids); each is found in the part that owns it, picked there with the
 * engine's fs_typed_picks keyed by the node's id in the source dataset,
 * and the answers come back merged in the request's order: exactly the
 * picks one server makes for those nodes.
 *
 * Ownership: the shard owns its parts. Thread-safety: read-only once open;
 * each caller brings its own sampler. */
#ifndef FS_SHARD_H
#define FS_SHARD_H

#include "dataset.h"
#include "fs_typed.h"

typedef struct fs_shard fs_shard_t;

/* Opens parts[0..n) of the partition root `root` (each verified as a part
 * of the book's partitioning: FS_ERR_FORMAT naming a part of another one). */
fs_status_t fs_shard_open(const char *root, const int *parts, int n, int threads, fs_shard_t **out,
                          fs_error_t *err);
void fs_shard_close(fs_shard_t *s);
/* V, the number of parts of the partition root `root` (its book's), without
 * opening a part: what `serve --parts auto` deals from. */
fs_status_t fs_shard_root_parts(const char *root, int *parts, fs_error_t *err);

/* The partitioning's id, parts and the held ones (ascending). */
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

#endif
