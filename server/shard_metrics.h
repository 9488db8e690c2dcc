/* shard_metrics.h — what a shard server counts and exports (/metrics, and
 * the Stats RPC that `featstore stats etcd://...` sums over a cluster).
 *
 * Per method (ShardPicks, ShardRows, ShardFile, ShardEdges): calls, errors, the ids
 * asked, the bytes answered and the seconds spent; ShardPicks per hop
 * (calls and destinations: requests per hop); rows and bytes served to
 * each peer (trainer), by address without its port, the first
 * FS_SHARD_METRICS_PEERS of them by name and the rest as "other"; the map
 * revision this shard holds and the parts it holds, loads and drops; in a
 * cluster on etcd,
 * whether etcd answers its membership and how often it registered again.
 *
 * Thread-safety: every recorder may be called from any thread (atomics, a
 * lock only when a peer is first seen); render from any thread. */
#ifndef FS_SHARD_METRICS_H
#define FS_SHARD_METRICS_H

#include <stdint.h>

#include "fs_types.h"

#define FS_SHARD_METRICS_PEERS 64

typedef enum { FS_SHARD_CALL_PICKS, FS_SHARD_CALL_ROWS, FS_SHARD_CALL_FILE, FS_SHARD_CALL_EDGES,
               FS_SHARD_CALL_COUNT_ } fs_shard_call_t;

typedef struct fs_shard_metrics fs_shard_metrics_t;

/* shard_id: its number in the cluster (-1: none); partitioning and parts
 * held for the info series. */
fs_shard_metrics_t *fs_shard_metrics_create(int shard_id, const char *partitioning, int parts_held);
void fs_shard_metrics_destroy(fs_shard_metrics_t *m);

/* One call: from `peer` (gRPC's "ipv4:1.2.3.4:5678" form or NULL), its
 * status, ids asked, bytes answered, seconds; hop >= 0 for ShardPicks. */
void fs_shard_metrics_call(fs_shard_metrics_t *m, fs_shard_call_t call, const char *peer, fs_status_t status,
                           int64_t ids, uint64_t bytes, int hop, double seconds);
void fs_shard_metrics_set_revision(fs_shard_metrics_t *m, int64_t revision);
/* The membership's state (fs_member_status): etcd answered its last call
 * (up), and the registrations it made again after its lease lapsed. */
void fs_shard_metrics_set_etcd(fs_shard_metrics_t *m, int up, int64_t rejoins);

/* The parts held now; parts loaded, dropped, and loads that failed since
 * the last call (a shard following its cluster's assignment). */
void fs_shard_metrics_set_parts(fs_shard_metrics_t *m, int held);
void fs_shard_metrics_parts_moved(fs_shard_metrics_t *m, int loaded, int dropped, int failed);

/* Calls answered so far, every method's (a drain waits until they stop coming). */
uint64_t fs_shard_metrics_calls(fs_shard_metrics_t *m);

/* Prometheus text (the caller free()s it), or NULL when out of memory. */
char *fs_shard_metrics_render(fs_shard_metrics_t *m);

#endif
