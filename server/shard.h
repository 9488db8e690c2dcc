/* shard.h — what a shard server holds: some parts of a partitioned dataset,
 * opened from its partition root, answered by exec/fs_shard.h; and the
 * partitioning's small files it lets trainers read.
 *
 * Ownership and thread-safety: fs_shard.h's. */
#ifndef FS_SERVER_SHARD_H
#define FS_SERVER_SHARD_H

#include "fs_shard.h"

/* Opens parts[0..n) of the partition root `root` (each verified as a part
 * of the book's partitioning: FS_ERR_FORMAT naming a part of another one);
 * n = 0: a shard holding none yet (fs_shard_empty). */
fs_status_t fs_shard_open(const char *root, const int *parts, int n, int threads, fs_shard_t **out,
                          fs_error_t *err);
/* The datasets of parts[0..n) of `root` into ds[0..n) (all closed on an
 * error): what fs_shard_open and a shard loading parts it was given
 * (fs_shard_regroup) take. FS_ERR_FORMAT for a directory holding another
 * part. */
fs_status_t fs_shard_open_parts(const char *root, const int *parts, int n, int threads, fs_dataset_t **ds,
                                fs_error_t *err);
/* V, the number of parts of the partition root `root` (its book's), without
 * opening a part: what `serve --parts auto` deals from. */
fs_status_t fs_shard_root_parts(const char *root, int *parts, fs_error_t *err);

/* Up to max bytes of one of the partitioning's small files from offset,
 * into buf (the caller's, max bytes), *len read and *size the file's: the
 * book (partition.json), a root node map, hot list or split
 * (TYPE.node_map.npy, TYPE.hot.npy, TYPE.split_NAME.npy), or a held part's manifest.json ("part-00003/
 * manifest.json"). Any other name is FS_ERR_INVALID_ARGUMENT (no path
 * leaves the root); a missing file FS_ERR_NOT_FOUND. */
fs_status_t fs_shard_file(const fs_shard_t *s, const char *name, int64_t offset, int64_t max, void *buf, int64_t *len,
                          int64_t *size, fs_error_t *err);

#endif
