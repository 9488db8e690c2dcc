/* fs_shard_client.h — a trainer's connection to one shard server: its
 * ShardPicks (featstore.proto), the network transport of owner routing
 * (fs_route.h).
 *
 * Every call has the connection's deadline; a shard that is down or
 * silent fails the call within it (FS_ERR_UNAVAILABLE, FS_ERR_TIMEOUT), and
 * a node the shard does not hold is FS_ERR_NOT_FOUND (a stale shard map).
 * Also the shard's rows (ShardRows: a gather grouped by owner), which
 * pairs are edges (ShardEdges: a link batch's strict negatives) and the
 * partitioning's small files (ShardFile: what a trainer reads at connect).
 * The answer is checked before it is handed out: offsets from 0,
 * ascending, one per id plus one, sources (and edge ids, when asked) as
 * many as the offsets say.
 *
 * Ownership: the answer is the connection's until its next call.
 * Thread-safety: one call at a time per connection; connections are
 * independent (the router calls several at once, one per shard). */
#ifndef FS_SHARD_CLIENT_H
#define FS_SHARD_CLIENT_H

#include "fs_typed.h"

typedef struct fs_shard_client fs_shard_client_t;

/* A connection to the shard at addr ("host:port"), calls timing out after
 * timeout_ms. Opening does not wait for the shard: the first call finds out. */
fs_status_t fs_shard_client_open(const char *addr, int timeout_ms, fs_shard_client_t **out, fs_error_t *err);
void fs_shard_client_close(fs_shard_client_t *c);

/* The shard map revision every call carries from now on (0: none): a shard
 * holding a newer map refuses the call as stale (FS_ERR_NOT_FOUND). */
void fs_shard_client_set_revision(fs_shard_client_t *c, int64_t revision);

fs_status_t fs_shard_client_picks(fs_shard_client_t *c, const fs_typed_picks_req_t *q, const int64_t *ids, int64_t n,
                                  fs_typed_picks_t *out, fs_error_t *err);

/* ShardRows: rows ids[0..n) of node type t's table as stored, row_bytes
 * each, into out (the answer's length checked). */
fs_status_t fs_shard_client_rows(fs_shard_client_t *c, int t, const char *table, const int64_t *ids, int64_t n,
                                 size_t row_bytes, void *out, fs_error_t *err);

/* ShardEdges: whether each pair (dst[i], src[i]) of edge type etype is an
 * edge, 1 or 0 into is_edge[i] (the answer's length and values checked). */
fs_status_t fs_shard_client_edges(fs_shard_client_t *c, int etype, const int64_t *dst, const int64_t *src, int64_t n,
                                  uint8_t *is_edge, fs_error_t *err);

/* ShardFile: the whole of one of the partitioning's small files, read in
 * pieces into a new buffer (*data, the caller's to free(), NUL after its
 * *len bytes). A file over max_bytes is FS_ERR_RESOURCE. */
fs_status_t fs_shard_client_file(fs_shard_client_t *c, const char *name, int64_t max_bytes, char **data, int64_t *len,
                                 fs_error_t *err);

/* Stats: the shard's metrics text (server/shard_metrics.h), a new string
 * (the caller's to free()). */
fs_status_t fs_shard_client_stats(fs_shard_client_t *c, char **text, fs_error_t *err);

#endif
