/* fs_disktable.h — a feature table served from disk: its rows fetched
 * through the shared row cache, the misses read with fs_diskio and checked
 * against fs_rowsums before anything sees them (docs/design.md "The disk
 * tier").
 *
 * fs_disktable_rows has the shape of a gather view's remote hook
 * (fs_table_remote_t in kernels/fs_gather.h), so the one gather engine
 * serves a disk table as it serves a remote one: ids in any order, repeats
 * allowed, rows written as stored. A call:
 *   1. sorts and deduplicates its ids;
 *   2. acquires them from the cache under one lock: hits are pinned,
 *      misses get a slot (LOAD), rows another reader is loading or that
 *      find no slot are read privately;
 *   3. reads every row not hit in one fs_diskio_read (sorted: coalesced);
 *   4. checks each against its checksum, publishes the good LOAD slots
 *      (a bad or failed one is unpublished, so the next reader retries);
 *   5. copies the rows out in the caller's order and releases its pins.
 * A row that fails its checksum fails the call (FS_ERR_FORMAT naming the
 * table, the row and both checksums) and is counted; a file truncated under
 * the server fails the calls that reach past its end (FS_ERR_IO): nothing
 * wrong is ever served, and no process is killed (nothing is mapped).
 *
 * Ownership: the table borrows the cache and the checksums (which must
 * outlive it) and reopens the file for itself. Thread-safety: rows and
 * stats may be called from any number of threads (each takes a reader of
 * its own from the table's free list, its ring made in that thread when it
 * can be); open and close may not overlap them. */
#ifndef FS_DISKTABLE_H
#define FS_DISKTABLE_H

#include <stdint.h>

#include "fs_diskio.h"
#include "fs_rowcache.h"
#include "fs_rowsums.h"

typedef struct fs_disktable fs_disktable_t;

typedef struct {
    int fd;                   /* the table file (not taken: readers reopen it) */
    const char *what;         /* names it in errors: "table 'feat' (/data/g/table_feat.npy)" */
    uint64_t data_offset;     /* row 0's offset in the file */
    uint64_t row_bytes;
    int64_t rows;
    fs_rowcache_t *cache;     /* NULL: no cache, every row read from disk */
    const fs_rowsums_t *sums; /* NULL: rows not checked */
    fs_diskio_opts_t io;
} fs_disktable_opts_t;

/* Opens the table and one reader (to fail early, and to describe it). */
fs_status_t fs_disktable_open(const fs_disktable_opts_t *opts, fs_disktable_t **out, fs_error_t *err);
void fs_disktable_close(fs_disktable_t *t);

/* Rows ids[0..n) (each in [0, rows): the gather checked them) as stored,
 * row_bytes each, into out in order. `table` is the fs_disktable_t. */
fs_status_t fs_disktable_rows(void *table, const int64_t *ids, int64_t n, void *out, fs_error_t *err);

/* Reads rows[0..n) (ascending, distinct, in range) into the cache and
 * keeps them there for good: each keeps one pin this table holds until it
 * is closed, so the cache's policy never evicts them (a hot set: the rows
 * the hotness estimators say most batches read). Rows the cache has no
 * free slot for, or another reader is loading, are skipped; *pinned says
 * how many are held. A row failing its checksum fails the call (the rows
 * pinned before it stay). Needs a cache. One thread at a time pins (it
 * may overlap fs_disktable_rows). */
fs_status_t fs_disktable_pin(fs_disktable_t *t, const int64_t *rows, int64_t n, int64_t *pinned, fs_error_t *err);

typedef struct {
    uint64_t rows;              /* distinct rows asked for, call by call */
    uint64_t cache_hits;        /* of them, found in the cache */
    uint64_t disk_rows;         /* read from disk (cache misses, rows loading elsewhere, rows with no slot) */
    uint64_t disk_reads;        /* reads issued (coalesced, continuations included) */
    uint64_t disk_bytes;        /* bytes the disk returned */
    uint64_t checksum_failures; /* rows whose bytes did not match their checksum */
    uint64_t read_ns;           /* time spent in fs_diskio_read, summed */
} fs_disktable_stats_t;
void fs_disktable_stats(const fs_disktable_t *t, fs_disktable_stats_t *out);

/* The first reader's description (fs_diskio_describe), for the log. */
const char *fs_disktable_describe(const fs_disktable_t *t);

#endif
