/* fs_hash.h — featstore's one checksum: XXH3-64, the hash the manifest,
 * the row checksums, the partition book and the placement plan record.
 *
 * The same function libxxhash computes (its tests hold it to that), in
 * the widest vector unit the CPU has, chosen once at the first call:
 * Debian's libxxhash is built for the x86-64 baseline (SSE2), which hashes
 * a long file at half the speed of AVX2 (5.9 against 11 GB/s measured on
 * the CI machine kind), and whole files are hashed on every first start
 * and on the copy of what a server keeps in memory.
 *
 * Thread-safety: every function may be called from any thread; a state
 * (fs_hash_t) belongs to one thread at a time. fs_hash_use is for tests. */
#ifndef FS_HASH_H
#define FS_HASH_H

#include <stddef.h>
#include <stdint.h>

/* The hash of len bytes at data (data may be NULL when len is 0). */
uint64_t fs_hash64(const void *data, size_t len);

/* A streaming state: fs_hash_new, then fs_hash_update with consecutive
 * pieces, then fs_hash_digest equals fs_hash64 of their concatenation.
 * fs_hash_new returns NULL only when out of memory; the caller frees the
 * state with fs_hash_free (NULL is a no-op). Digesting leaves the state
 * as it was: more pieces may follow. */
typedef struct fs_hash fs_hash_t;
fs_hash_t *fs_hash_new(void);
void fs_hash_update(fs_hash_t *h, const void *data, size_t len);
uint64_t fs_hash_digest(const fs_hash_t *h);
void fs_hash_free(fs_hash_t *h);

/* The vector unit the hash runs on: "avx512", "avx2" or "baseline". */
const char *fs_hash_isa(void);

/* Makes every later call use `isa` (one of the names above): 0, or -1
 * when this CPU or build lacks it. Not thread-safe: tests and benchmarks
 * call it before hashing. */
int fs_hash_use(const char *isa);

#endif
