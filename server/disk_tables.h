/* disk_tables.h — the server's feature tables that stay on disk (the
 * memory budget: dataset/budget.c), each served through disk/fs_disktable:
 * its per-row checksums loaded or built beside the table file, a SIEVE
 * row cache in a memfd (so that local trainers can later map the very
 * same cache), and the table's fs_table_t.remote pointed at it, so every
 * view of the table (the store's, the typed engine's) reads through it.
 *
 * A node table's cache keeps three quarters of its slots for the rows of
 * highest in-degree (the placement's hotness estimator), read and pinned
 * for good by a thread started here (so the start does not wait for it);
 * SIEVE has the rest.
 *
 * Ownership: owns the checksums, caches and disk tables; the dataset must
 * outlive it, and it must outlive every engine and store reading the
 * dataset. Thread-safety: open and close are setup calls; stats may be
 * called from any thread. */
#ifndef FS_DISK_TABLES_H
#define FS_DISK_TABLES_H

#include <stdio.h>

#include "dataset.h"
#include "fs_disktable.h"

typedef struct fs_disk_tables fs_disk_tables_t;

/* Sets up every table of ds left on disk (none: *out NULL, FS_OK). The
 * caches share ds->memory_left (less a fifth kept back), in proportion to
 * the tables' bytes. Each table's decision is logged to `log`. */
fs_status_t fs_disk_tables_open(fs_dataset_t *ds, size_t mem_budget, FILE *log, fs_disk_tables_t **out,
                                fs_error_t *err);
void fs_disk_tables_close(fs_disk_tables_t *d);

/* What a local trainer needs to read table `t` itself: the table's file,
 * the cache's memfd (mapped read-write, shared) and its size, and a sealed
 * memfd of the rows' checksums. The descriptors stay owned by d.
 * FS_ERR_NOT_FOUND when t is not one of d's. */
typedef struct {
    int table_fd, cache_fd, sums_fd;
    size_t cache_bytes;
} fs_disk_share_t;
fs_status_t fs_disk_tables_share(const fs_disk_tables_t *d, const fs_table_t *t, fs_disk_share_t *out);

/* The counters of all disk tables together: the server's own reads, and
 * their caches' (every process's: local trainers count there too). */
typedef struct {
    int tables;
    fs_disktable_stats_t reads;
    fs_rowcache_stats_t cache;
    uint64_t cache_bytes;
} fs_disk_tables_stats_t;
void fs_disk_tables_stats(const fs_disk_tables_t *d, fs_disk_tables_stats_t *out);

#endif
