/* fs_assign.h — planning a cluster's assignment (fs_shardmap.h): the first
 * one, from the map the shards made, and the moves of `featstore cluster
 * add|drain|remove` (docs/cli.md).
 *
 * A plan moves part copies one at a time, each from the most loaded shard
 * (add) or to the least loaded one (drain, remove, fill), so a cluster
 * stays balanced to one copy and a change moves no more than balance needs:
 * adding a shard to S moves floor(copies / (S + 1)) copies, at most
 * ceil(V / (S + 1)) parts with one replica. A moved copy keeps its place
 * among the part's holders (a new shard takes over an owner's place as
 * owner). Ties go to the lower shard id (for a copy given away, first to a
 * shard the round-robin deal over the members gives that part: so draining
 * a shard just added to a dealt cluster gives it back exactly as it was),
 * and among a shard's parts to the highest: the same plan from the same
 * assignment, every time.
 *
 * Pure functions; thread-safe. */
#ifndef FS_ASSIGN_H
#define FS_ASSIGN_H

#include "fs_shardmap.h"

/* The assignment the map stands for: its shards holding parts as members
 * (one registered with none waits to be added), its holders.
 * FS_ERR_INVALID_ARGUMENT naming a part with fewer than R holders unless
 * `partial` (a shard is down: `remove` it, or wait for it). */
fs_status_t fs_assign_from_map(const fs_shard_map_t *m, int partial, fs_shard_map_t *out, fs_error_t *err);

/* Shard id joins the members and takes copies from the most loaded ones
 * until it holds its share; their count into *moved. FS_ERR_EXISTS when it
 * is a member already. */
fs_status_t fs_assign_add(fs_shard_map_t *a, int id, int *moved, fs_error_t *err);

/* Shard id leaves the members, each of its copies given to the member
 * not holding that part that the deal gives it (while under its share),
 * else the least loaded; then copies move from the most loaded to the
 * least until all are within one. The copies moved into *moved.
 * FS_ERR_NOT_FOUND when it is no member; FS_ERR_INVALID_ARGUMENT when
 * fewer members than the replica count would be left (a's unchanged). */
fs_status_t fs_assign_remove(fs_shard_map_t *a, int id, int *moved, fs_error_t *err);

/* Every part with fewer than R holders gets members not holding it, as a
 * removed shard's copies are placed; the copies added (and moved to even
 * the loads) into *moved. */
fs_status_t fs_assign_fill(fs_shard_map_t *a, int *moved, fs_error_t *err);

/* Whether the map holds what the assignment gives: every part's holders
 * the same shards. The parts that differ into *pending (may be NULL). */
int fs_assign_settled(const fs_shard_map_t *a, const fs_shard_map_t *m, int *pending);

/* The part copies shard id holds in a. */
int fs_assign_load(const fs_shard_map_t *a, int id);

#endif
