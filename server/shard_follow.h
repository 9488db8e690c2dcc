/* shard_follow.h — a shard server following its cluster's assignment
 * (cluster/fs_shardmap.h; `featstore cluster add|drain|remove`, docs/cli.md).
 *
 * Each step (the server's main loop, every 100 ms) compares the parts the
 * shard holds with those the assignment gives it:
 *   - parts it was given are loaded on a thread of their own while the
 *     shard serves; then the shard answers from them (shard_live.h) and
 *     registers them, and the map, built by the assignment, names it;
 *   - parts given away stay registered and served until the map names
 *     enough of their new holders instead; then the registration drops
 *     them, and once the map the workers check requests against (the
 *     stale-map test) no longer names this shard for them, the shard stops
 *     holding them (in-flight calls finish on the parts they began with);
 *   - a shard that was a member and is one no longer (drained or removed)
 *     says so when it holds nothing more: the server then leaves the
 *     cluster and stops.
 * A part that fails to load (missing, or of another partitioning) is named
 * in the log and counted, tried again after FS_FOLLOW_RETRY_S, and never
 * registered; the shard serves on.
 *
 * Thread-safety: start, step and stop from one thread (the server's main). */
#ifndef FS_SERVER_SHARD_FOLLOW_H
#define FS_SERVER_SHARD_FOLLOW_H

#include <stdint.h>

#include "fs_member.h"
#include "shard_live.h"
#include "shard_metrics.h"

#define FS_FOLLOW_RETRY_S 5

typedef struct fs_shard_follow fs_shard_follow_t;

/* Follows for shard `id`, loading parts from the partition root `root`
 * with `threads`; all borrowed. */
fs_status_t fs_shard_follow_start(const char *root, int threads, int id, fs_shard_live_t *live, fs_member_t *member,
                                  fs_shard_metrics_t *metrics, fs_shard_follow_t **out, fs_error_t *err);

/* One step; `served` is the map revision the workers now test requests
 * against (fs_grpc_server_set_map_revision). 1 when the shard was drained
 * and holds nothing: time to leave. */
int fs_shard_follow_step(fs_shard_follow_t *f, int64_t served);

/* Waits for a load under way, and frees f. NULL is a no-op. */
void fs_shard_follow_stop(fs_shard_follow_t *f);

#endif
