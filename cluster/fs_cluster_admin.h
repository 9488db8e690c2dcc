/* fs_cluster_admin.h — changing a running cluster's membership on etcd:
 * `featstore cluster add|drain|remove` (docs/cli.md, "Elasticity").
 *
 * A change rewrites the cluster's assignment (fs_shardmap.h, planned by
 * fs_assign.h) by a compare-and-swap on its revision, so two changes at
 * once cannot both win (the loser plans again on the winner's). The shards
 * then load and drop parts while serving and the map follows (server/
 * shard_follow.h); fs_cluster_settle waits for that. The first change of a
 * cluster makes its assignment from its map.
 *
 * Every etcd call has a deadline. Thread-safe (each call its own handle). */
#ifndef FS_CLUSTER_ADMIN_H
#define FS_CLUSTER_ADMIN_H

#include <stdint.h>

#include "fs_shardmap.h"

typedef enum {
    FS_CLUSTER_ADD,    /* a registered shard (serve --parts assigned) joins and takes its share */
    FS_CLUSTER_DRAIN,  /* a member hands its parts over, then leaves and stops */
    FS_CLUSTER_REMOVE, /* a member that is gone (not registered): its parts go to the others */
} fs_cluster_change_t;

/* Makes the change for shard `shard` of cluster `name` (etcd at endpoint,
 * host:port); the part copies it moves into *moved, the assignment's new
 * revision into *revision. FS_ERR_NOT_FOUND: no map (no shard joined), or
 * (add) the shard is not registered, or (drain, remove) is no member;
 * FS_ERR_EXISTS: (add) a member already; FS_ERR_INVALID_ARGUMENT: (remove) the shard is
 * still registered (drain it), (drain, remove) fewer shards than replicas
 * would be left, or (the first change) a part short of holders; each
 * naming the shard and the cluster. The assignment is then unchanged. */
fs_status_t fs_cluster_change(const char *endpoint, const char *name, fs_cluster_change_t what, int shard, int *moved,
                              int64_t *revision, fs_error_t *err);

/* Waits, up to timeout_ms, until the map holds what the assignment gives
 * (and shard `gone` is out of the map; -1: none). FS_ERR_TIMEOUT naming how
 * many parts are still moving; *pending (may be NULL) their count. */
fs_status_t fs_cluster_settle(const char *endpoint, const char *name, int gone, int timeout_ms, int *pending,
                              fs_error_t *err);

#endif
