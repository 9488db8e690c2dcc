/* client_cluster_local.h — the unix:// path of an etcd:// trainer: the
 * shards on this process's machine answered in this process
 * (client_cluster_local.c says how). */
#ifndef FS_CLIENT_CLUSTER_LOCAL_H
#define FS_CLIENT_CLUSTER_LOCAL_H

#include "fs_cluster.h"

/* The hooks fs_cluster_conn_open takes; NULL when FEATSTORE_CLUSTER_LOCAL
 * is "0" (every shard over gRPC). */
const fs_cluster_local_t *fs_cluster_local_hooks(void);

#endif
