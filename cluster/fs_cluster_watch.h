/* fs_cluster_watch.h — a trainer's watch on its cluster's shard map
 * (etcd's Watch, on a thread of its own): every map written to etcd is
 * installed as it is written (fs_cluster_install). fs_cluster_watch.c says
 * how it keeps going through periods, compactions and etcd outages.
 *
 * Ownership: the cluster starts its watch when it opens (on etcd; a static
 * cluster's file has none) and stops it before it is freed. Thread safety:
 * fs_cluster_watching and fs_cluster_watch_installs from any thread. */
#ifndef FS_CLUSTER_WATCH_H
#define FS_CLUSTER_WATCH_H

#include "fs_cluster.h"

typedef struct fs_cluster_watch fs_cluster_watch_t;

fs_status_t fs_cluster_watch_start(fs_cluster_t *c, fs_cluster_watch_t **out, fs_error_t *err);
/* Stops the thread and frees w (NULL is a no-op): a watch waiting is
 * cancelled; a call to etcd in flight ends first, within its deadline. */
void fs_cluster_watch_stop(fs_cluster_watch_t *w);
/* Whether the map the cluster holds is etcd's: a watch is open, in this
 * process (0 for NULL, while etcd is away, and in a forked child). */
int fs_cluster_watching(const fs_cluster_watch_t *w);
/* Maps the watch installed so far. */
int64_t fs_cluster_watch_installs(const fs_cluster_watch_t *w);

#endif
