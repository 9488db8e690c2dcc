/* fs_hash_variant.h — the body of one vector variant of fs_hash (fs_hash.c
 * and fs_hash_<isa>.c include it once each, the latter compiled with
 * -m<isa>): xxhash's own code, inlined, picks its vector unit from the
 * compiler's flags. FS_HASH_VARIANT names the variant's three functions. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#define FS_HASH_CAT_(a, b) a##b
#define FS_HASH_CAT(a, b) FS_HASH_CAT_(a, b)
#define FS_HASH_FN(name) FS_HASH_CAT(FS_HASH_CAT(fs_hash_, FS_HASH_VARIANT), _##name)

uint64_t FS_HASH_FN(oneshot)(const void *data, size_t len);
void FS_HASH_FN(update)(void *state, const void *data, size_t len);
uint64_t FS_HASH_FN(digest)(const void *state);

uint64_t FS_HASH_FN(oneshot)(const void *data, size_t len) { return XXH3_64bits(data, len); }
void FS_HASH_FN(update)(void *state, const void *data, size_t len)
{
    XXH3_64bits_update((XXH3_state_t *)state, data, len);
}
uint64_t FS_HASH_FN(digest)(const void *state) { return XXH3_64bits_digest((const XXH3_state_t *)state); }
