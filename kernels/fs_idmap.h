/* fs_idmap.h — the samplers' global -> local id map for one batch, run on
 * several threads at once and still handing out ids in first-appearance
 * order, so a batch is bit-identical at any thread count
 * (docs/algorithms.md §6, "parallel relabel").
 *
 * The serial Fused-Map (fs_typed_pass.c) inserts keys in pick order; here keys
 * are split by hash into P partitions, each with its own table, and a run
 * over one hop's keys goes in four phases:
 *   1. bucket  — per chunk of keys (any thread): the chunk's keys grouped
 *                by partition, in position order within each group;
 *   2. probe   — per partition (fs_idmap_probe, on the pool): that
 *                partition's keys in global order (chunk by chunk), each
 *                found, or added as a new member; only the partition's
 *                own table is touched, so nothing is shared or locked;
 *   3. assign  — per chunk: new keys take ids in chunk order and, within a
 *                chunk, position order — exactly first appearance — from the
 *                chunk's base (the run's next id + the new keys of earlier
 *                chunks);
 *   4. resolve — per chunk: keys repeated after their first appearance in
 *                an earlier chunk read the id that chunk gave them.
 * Phases 1, 3 and 4 run in the caller's parallel regions (the caller has
 * its own per-chunk work to fuse in); between phases all chunks must be
 * done. Keys are any 64-bit values (the typed sampler packs a type and
 * batch in: fs_typed_internal.h's key_of).
 *
 * Ownership: the map owns its tables and per-chunk arrays; key arrays passed
 * to fs_idmap_bucket are borrowed until the run's resolve phase ends.
 * Thread-safety: one map per sampler; the per-chunk calls of one phase may
 * run concurrently for distinct chunks. */
#ifndef FS_IDMAP_H
#define FS_IDMAP_H

#include <stddef.h>
#include <stdint.h>

#include "fs_pool.h"

#define FS_IDMAP_MAX_PARTS 256

typedef struct fs_idmap fs_idmap_t;

fs_idmap_t *fs_idmap_create(void); /* NULL when out of memory */
void fs_idmap_destroy(fs_idmap_t *m);

/* Starts a request: forgets every key (no clearing: tables are stamped with
 * a request epoch). parts in 1..FS_IDMAP_MAX_PARTS. */
void fs_idmap_begin(fs_idmap_t *m, int parts);

/* Adds n distinct keys with ids 0..n-1, on the pool: for a sampler that ran
 * its first hops on the serial map and switches here. Call right after
 * fs_idmap_begin. 0, or -1 when out of memory. */
int fs_idmap_load(fs_idmap_t *m, fs_pool_t *pool, const uint64_t *keys, int64_t n);

/* Starts a run over `chunks` chunks whose new keys get ids next_id, ...
 * 0, or -1 when out of memory. */
int fs_idmap_run_begin(fs_idmap_t *m, int chunks, int64_t next_id);

/* Phase 1 for chunk c: its n keys (borrowed). 0, or -1 when out of memory. */
int fs_idmap_bucket(fs_idmap_t *m, int c, const uint64_t *keys, int64_t n);

/* Phase 2 on the pool (NULL: this thread). Returns the run's number of new
 * keys, or -1 when out of memory. */
int64_t fs_idmap_probe(fs_idmap_t *m, fs_pool_t *pool);

/* Phase 3 for chunk c: out[i] = key i's local id for keys already known or
 * first seen here, a negative placeholder for the rest (phase 4). The chunk's
 * new keys get ids fs_idmap_chunk_base(m, c) + j, j = 0, 1, ...; first[j] is
 * the position of the j-th. Returns their number. */
int64_t fs_idmap_assign(fs_idmap_t *m, int c, int64_t *out, int64_t *first);
int64_t fs_idmap_chunk_base(const fs_idmap_t *m, int c);

/* Phase 4 for chunk c: replaces out's placeholders. */
void fs_idmap_resolve(const fs_idmap_t *m, int c, int64_t *out);

/* Whether any chunk needs phase 4 (after phase 2). */
int fs_idmap_needs_resolve(const fs_idmap_t *m);

/* Memory for a hash table probed at random (this map's, and the serial
 * samplers'): zeroed, on its own mapping, offered to the kernel as huge
 * pages when 2 MiB or more (THP in "madvise" mode gives none otherwise, and
 * on 4 KiB pages nearly every probe would also miss the TLB). NULL when
 * out of memory; freed with its size. */
void *fs_table_mem_alloc(size_t bytes);
void fs_table_mem_free(void *p, size_t bytes);

#endif
