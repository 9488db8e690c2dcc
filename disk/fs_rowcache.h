/* fs_rowcache.h — the row cache of the disk tier: which feature rows are in
 * memory, which to evict next, and which are in use. It does no I/O: a
 * reader asks it for slots, reads the rows it was told to load (fs_diskio)
 * into them, and publishes them.
 *
 * Flat and shared: the cache is one region of memory holding a header, the
 * slots' metadata, a hash index (row -> slot) and the rows' bytes, linked by
 * indices only, never pointers, with a process-shared robust mutex in the
 * header. So the server can put it in a memfd that it and every local
 * trainer map MAP_SHARED (at any address), and a row one trainer read from
 * disk is a hit for the others.
 *
 * Policies (fs_cache_policy_t): SIEVE (the default; "SIEVE is Simpler than
 * LRU", NSDI'24: a FIFO queue, a visited bit set on hit, a hand that
 * sweeps from the oldest object toward the newest clearing visited bits and
 * evicts the first unvisited one), LRU, and CLOCK (a hand over the slot
 * array with a reference bit). A slot in use by a reader is pinned and never
 * evicted; the hands pass over pinned slots without touching their bits
 * (the bit records hits, the pin alone protects). When nothing can be
 * evicted a row is BYPASS: its reader reads it into its own buffer.
 *
 * Ownership: the region is the caller's (heap, mmap, memfd); the handle is
 * the region, cast, and nothing is allocated but by fs_rowcache_simulate.
 * Pins belong to the process that took them; a process that dies holding
 * pins leaves them held, and one that dies holding the lock is counted in
 * owner_deaths (the structure may then be mid-update): the server treats
 * either as a reason to format the cache afresh.
 *
 * Thread-safety: every function takes the region's lock (once per batch)
 * and is thread- and process-safe, except fs_rowcache_row, which only
 * computes an address, and the accessors of the sizes fixed at format. */
#ifndef FS_ROWCACHE_H
#define FS_ROWCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "fs_types.h"

/* The data area's alignment (O_DIRECT reads are bounced into rows, so only
 * the area's start needs it); a row's stride is its bytes rounded up to 64,
 * a cache line, so two rows never share one. */
#define FS_ROWCACHE_ALIGN 4096
#define FS_ROWCACHE_ROW_ALIGN 64

typedef enum { FS_CACHE_SIEVE = 0, FS_CACHE_LRU, FS_CACHE_CLOCK } fs_cache_policy_t;

/* "sieve", "lru", "clock" ("unknown" otherwise). */
const char *fs_cache_policy_name(fs_cache_policy_t policy);
/* The policy named `name` (one of the names above); anything else is
 * FS_ERR_INVALID_ARGUMENT naming the text and the accepted names. */
fs_status_t fs_cache_policy_parse(const char *name, fs_cache_policy_t *out, fs_error_t *err);

typedef struct fs_rowcache fs_rowcache_t;

typedef enum { FS_ROWCACHE_FREE = 0, FS_ROWCACHE_LOADING, FS_ROWCACHE_READY } fs_rowcache_state_t;

typedef enum { FS_ROWCACHE_HIT = 0, FS_ROWCACHE_LOAD, FS_ROWCACHE_BUSY, FS_ROWCACHE_BYPASS } fs_rowcache_outcome_t;

typedef struct {
    uint64_t hits, misses /* LOAD outcomes */, busy, bypass, evictions;
    uint64_t ready;        /* slots READY now */
    uint64_t pinned;       /* slots with pins now */
    uint64_t owner_deaths; /* processes that died holding the lock: nonzero means rebuild */
    /* What its readers, in every process, told it of their disk reads (fs_rowcache_add_io). */
    uint64_t io_reads, io_bytes, io_ns, checksum_failures;
} fs_rowcache_stats_t;

/* Bytes a cache of `slots` rows of `row_bytes` needs (row_bytes 0: the
 * index and policy state alone); 0 when slots is 0 or above INT32_MAX - 1,
 * or the size overflows. */
size_t fs_rowcache_region_bytes(uint64_t slots, uint64_t row_bytes);

/* Formats region (bytes >= fs_rowcache_region_bytes, the region aligned to
 * FS_ROWCACHE_ALIGN) as an empty cache: every slot FREE, stats zero.
 * FS_ERR_INVALID_ARGUMENT names the value at fault: slots 0 or above
 * INT32_MAX - 1, row_bytes 0, an unknown policy, a region too small or
 * misaligned. Formatting a region others have attached breaks them: the
 * owner does it before sharing it, or after they have all let go. */
fs_status_t fs_rowcache_format(void *region, size_t bytes, uint64_t slots, uint64_t row_bytes,
                               fs_cache_policy_t policy, fs_error_t *err);

/* Checks that region (bytes long, as this process mapped it) holds a
 * formatted cache (magic, version, sizes and offsets consistent with each
 * other and with bytes) and returns it as *out; no allocation. A region
 * that is not a cache, or does not fit `bytes`, is FS_ERR_FORMAT naming the
 * field; a misaligned region is FS_ERR_INVALID_ARGUMENT. */
fs_status_t fs_rowcache_attach(void *region, size_t bytes, fs_rowcache_t **out, fs_error_t *err);

/* For each rows[i] (distinct within the call: the caller dedups), under one
 * lock, in order (an earlier row's pin protects it from a later one's
 * eviction):
 *   HIT:    READY in slots[i], now pinned (SIEVE and CLOCK set its visited
 *           bit, LRU moves it to the head).
 *   LOAD:   a slot claimed for the caller (a free one, else one evicted per
 *           policy), pinned, LOADING, indexed under rows[i]: the caller reads
 *           the row into fs_rowcache_row(c, slots[i]) and publishes it.
 *   BUSY:   another reader is loading the row now; slots[i] = -1: the
 *           caller reads it itself, uncached (no waiting on another's I/O).
 *   BYPASS: every slot is pinned or loading; slots[i] = -1: likewise.
 * outcome[i] is an fs_rowcache_outcome_t. */
void fs_rowcache_acquire(fs_rowcache_t *c, const int64_t *rows, size_t n, int64_t *slots, uint8_t *outcome);

/* LOADING -> READY for the slots whose ok[i] is nonzero (ok NULL: all). A
 * slot whose load failed is unindexed and FREE, so the next reader of the
 * row tries the disk again; it is reused once its pins are released. Pins
 * are kept (release them with fs_rowcache_release); slots of -1, and slots
 * not LOADING, are skipped. */
void fs_rowcache_publish(fs_rowcache_t *c, const int64_t *slots, size_t n, const uint8_t *ok);

/* Drops one pin of each slot (-1, and slots without pins, skipped). */
void fs_rowcache_release(fs_rowcache_t *c, const int64_t *slots, size_t n);

/* The slot's row_bytes, FS_ROWCACHE_ROW_ALIGN-aligned (slot 0's at the
 * FS_ROWCACHE_ALIGN-aligned data area's start). Its bytes are valid while
 * the caller holds a pin on the slot READY, or is loading it; no lock. */
void *fs_rowcache_row(fs_rowcache_t *c, int64_t slot);

/* The slot holding `row` (-1 when none) and its state in *state (may be
 * NULL; FREE when none), without pinning it or touching the policy: for
 * tests and diagnostics, stale as soon as it returns. */
int64_t fs_rowcache_lookup(fs_rowcache_t *c, int64_t row, fs_rowcache_state_t *state);

/* Adds a reader's disk reads to the cache's counters, so one place (the
 * server's metrics) sees every process's: atomic, no lock. */
void fs_rowcache_add_io(fs_rowcache_t *c, uint64_t reads, uint64_t bytes, uint64_t ns, uint64_t checksum_failures);

/* The counters and the current READY and pinned slots, read under the lock. */
void fs_rowcache_stats(fs_rowcache_t *c, fs_rowcache_stats_t *out);

/* Fixed at format, so read without the lock. */
uint64_t fs_rowcache_slots(const fs_rowcache_t *c);
uint64_t fs_rowcache_row_bytes(const fs_rowcache_t *c);
fs_cache_policy_t fs_rowcache_policy(const fs_rowcache_t *c);

/* Replays a trace of batches (batch b is rows[batch_end[b-1] .. batch_end[b]),
 * batch_end[-1] being 0) through a private cache of `slots` rows with no
 * row data, single-threaded, with the same acquire/publish/release as the
 * shared cache: each batch's rows are deduplicated (first appearance kept)
 * and acquired, its loads published at once, and all its pins released at
 * its end. *misses counts the rows that were not HITs, each a disk read
 * (LOAD, and the excess of a batch with more distinct rows than slots,
 * which BYPASSes), *accesses the distinct rows of each batch, summed. FS_ERR_INVALID_ARGUMENT for slots
 * out of range or batch_end decreasing; FS_ERR_NOMEM. */
fs_status_t fs_rowcache_simulate(fs_cache_policy_t policy, uint64_t slots, const int64_t *rows,
                                 const size_t *batch_end, size_t batches, uint64_t *misses, uint64_t *accesses,
                                 fs_error_t *err);

#endif
