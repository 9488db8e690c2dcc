/* shard_live.h — the shard a shard server answers from now. In a cluster
 * with an assignment (cluster/fs_assign.h) the server loads and drops parts
 * while it serves: each change is a new shard (fs_shard_regroup, sharing
 * the parts it keeps) swapped in here, and a call reads the shard it began
 * with until it ends, so a dropped part closes only when its last reader
 * leaves.
 *
 * Ownership: the holder owns every shard given to it. Thread-safety: every
 * function from any thread, but destroy after the last get's put. */
#ifndef FS_SERVER_SHARD_LIVE_H
#define FS_SERVER_SHARD_LIVE_H

#include "shard.h"

typedef struct fs_shard_live fs_shard_live_t;

/* A holder answering from `first` (taken, also on an error). */
fs_status_t fs_shard_live_create(fs_shard_t *first, fs_shard_live_t **out, fs_error_t *err);
void fs_shard_live_destroy(fs_shard_live_t *l);

/* The shard now, held until its put. */
const fs_shard_t *fs_shard_live_get(fs_shard_live_t *l);
void fs_shard_live_put(fs_shard_live_t *l, const fs_shard_t *s);

/* Makes `next` (taken, also on an error) the shard now; the one before
 * closes at its last put. FS_ERR_NOMEM leaves the shard now as it was. */
fs_status_t fs_shard_live_swap(fs_shard_live_t *l, fs_shard_t *next, fs_error_t *err);

#endif
