/* fs_member.h — a shard's membership in a cluster on etcd, and reading
 * the cluster's shard map.
 *
 * A shard joins with its registration (fs_shard_reg_t): it takes a lease
 * of a few seconds, puts /featstore/NAME/shards/<id> under it, and makes
 * the map key /featstore/NAME/map agree with the registrations
 * (fs_shard_map_build) by a compare-and-swap on its revision. A thread
 * then renews the lease every third of its TTL and reconciles the map at
 * the same pace, so a shard whose lease expires (it died, or lost etcd for
 * longer than the TTL) leaves the map within about one TTL, written by any
 * shard still alive. When etcd cannot be reached the shard keeps its last
 * map and says so (fs_member_status); when etcd returns it registers again
 * if its lease expired meanwhile. Every etcd call has a deadline.
 *
 * Once the cluster has an assignment (fs_shardmap.h, written by `featstore
 * cluster`), the thread reads it each tick and the map follows it; the
 * shard server loads and drops parts to hold what it gives it, and tells
 * the membership what it holds (fs_member_set_parts), which registers it
 * again at once.
 *
 * Thread safety: fs_member_map, fs_member_status, fs_member_revision,
 * fs_member_assignment and fs_member_set_parts may be called from any
 * thread while the membership runs; join and leave from one. */
#ifndef FS_MEMBER_H
#define FS_MEMBER_H

#include <stdint.h>

#include "fs_etcd.h"
#include "fs_shardmap.h"

typedef struct fs_member fs_member_t;

typedef struct {
    const char *endpoint;  /* etcd's host:port */
    const char *name;      /* the cluster (fs_cluster_name_check) */
    int ttl_s;             /* the registration's lease; 0: 2 s */
    int timeout_ms;        /* each etcd call's deadline; 0: 1,000 ms */
} fs_member_opts_t;

typedef struct {
    int etcd_ok;           /* the last etcd call succeeded */
    int64_t revision;      /* the map's revision this shard holds (0: none yet) */
    int64_t rejoins;       /* registrations made again after the lease expired */
    int64_t map_writes;    /* map updates this shard wrote */
    int self_pending;      /* a registration change (fs_member_set_parts) not yet in etcd */
    char last_error[sizeof ((fs_error_t *)0)->msg]; /* the last etcd or map error, "" if none */
} fs_member_status_t;

/* The etcd keys of cluster `name`: "/featstore/<name>/<what>" into buf. */
void fs_cluster_key(const char *name, const char *what, char *buf, size_t len);

/* The cluster's map as etcd holds it, with its revision; FS_ERR_NOT_FOUND
 * when no shard has written one yet. */
fs_status_t fs_cluster_read_map(fs_etcd_t *e, const char *name, fs_shard_map_t *out, fs_error_t *err);

/* The cluster's assignment as etcd holds it (fs_shardmap.h), with its
 * revision; FS_ERR_NOT_FOUND when it has none. */
fs_status_t fs_cluster_read_assign(fs_etcd_t *e, const char *name, fs_shard_map_t *out, fs_error_t *err);

/* Registers self and starts the membership thread. Fails, leaving nothing
 * behind, when etcd cannot be reached (FS_ERR_UNAVAILABLE or
 * FS_ERR_TIMEOUT), when a live shard already has self's id
 * (FS_ERR_EXISTS), or when self does not fit the registered shards (another
 * partitioning, or a part another shard holds). */
fs_status_t fs_member_join(const fs_member_opts_t *o, const fs_shard_reg_t *self, fs_member_t **out, fs_error_t *err);

/* Leaves: the thread stops, the lease is revoked (the registration goes
 * with it) and the map is written without this shard; then frees m. */
void fs_member_leave(fs_member_t *m);

/* A copy of the map this shard holds (the caller frees it), and its revision. */
fs_status_t fs_member_map(fs_member_t *m, fs_shard_map_t *out, fs_error_t *err);
int64_t fs_member_revision(fs_member_t *m);
void fs_member_status(fs_member_t *m, fs_member_status_t *out);

/* A copy of the cluster's assignment as last read (each tick), or
 * FS_ERR_NOT_FOUND when it has none. */
fs_status_t fs_member_assignment(fs_member_t *m, fs_shard_map_t *out, fs_error_t *err);

/* The parts this shard holds now (each list ascending, copied) and the
 * replica count: its registration is written again at once (then each
 * reconcile builds the map from it), or when etcd answers again. */
fs_status_t fs_member_set_parts(fs_member_t *m, const int *owns, int n, const int *copies, int nc, int replicas,
                                fs_error_t *err);

#endif
