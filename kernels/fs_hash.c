/* fs_hash.c — XXH3-64 dispatched to the CPU's widest vector unit (fs_hash.h).
 *
 * The baseline variant is this file's (the build's own flags); the AVX2
 * and AVX-512 ones are fs_hash_avx2.c and fs_hash_avx512.c, built on
 * x86-64 only (FS_HASH_X86). Every variant computes the same function, so
 * the choice changes speed, never a checksum. A state is xxhash's own
 * XXH3_state_t, whose layout no variant changes. */
#include "fs_hash.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define FS_HASH_VARIANT baseline
#include "fs_hash_variant.h"

typedef struct {
    const char *isa;
    uint64_t (*oneshot)(const void *, size_t);
    void (*update)(void *, const void *, size_t);
    uint64_t (*digest)(const void *);
} variant_t;

#ifdef FS_HASH_X86
uint64_t fs_hash_avx2_oneshot(const void *, size_t);
void fs_hash_avx2_update(void *, const void *, size_t);
uint64_t fs_hash_avx2_digest(const void *);
uint64_t fs_hash_avx512_oneshot(const void *, size_t);
void fs_hash_avx512_update(void *, const void *, size_t);
uint64_t fs_hash_avx512_digest(const void *);
#endif

/* Widest first: the first the CPU has is the default. */
static const variant_t variants[] = {
#ifdef FS_HASH_X86
    {"avx512", fs_hash_avx512_oneshot, fs_hash_avx512_update, fs_hash_avx512_digest},
    {"avx2", fs_hash_avx2_oneshot, fs_hash_avx2_update, fs_hash_avx2_digest},
#endif
    {"baseline", fs_hash_baseline_oneshot, fs_hash_baseline_update, fs_hash_baseline_digest},
};
#define N_VARIANTS (sizeof variants / sizeof variants[0])

static int cpu_has(const char *isa)
{
#ifdef FS_HASH_X86
    __builtin_cpu_init();
    if (strcmp(isa, "avx512") == 0) return __builtin_cpu_supports("avx512f");
    if (strcmp(isa, "avx2") == 0) return __builtin_cpu_supports("avx2");
#endif
    return strcmp(isa, "baseline") == 0;
}

static const variant_t *chosen;
static pthread_once_t choose_once = PTHREAD_ONCE_INIT;

static void choose(void)
{
    for (size_t i = 0; i < N_VARIANTS && !chosen; i++)
        if (cpu_has(variants[i].isa)) chosen = &variants[i];
}

static const variant_t *variant(void)
{
    pthread_once(&choose_once, choose);
    return chosen;
}

int fs_hash_use(const char *isa)
{
    pthread_once(&choose_once, choose);
    for (size_t i = 0; isa && i < N_VARIANTS; i++)
        if (strcmp(variants[i].isa, isa) == 0 && cpu_has(isa)) {
            chosen = &variants[i];
            return 0;
        }
    return -1;
}

const char *fs_hash_isa(void) { return variant()->isa; }

uint64_t fs_hash64(const void *data, size_t len) { return variant()->oneshot(len ? data : "", len); }

struct fs_hash {
    XXH3_state_t state; /* 64-byte aligned: fs_hash_new allocates it so */
};

fs_hash_t *fs_hash_new(void)
{
    size_t size = (sizeof(fs_hash_t) + 63) / 64 * 64;
    fs_hash_t *h = aligned_alloc(64, size);
    if (h) XXH3_64bits_reset(&h->state);
    return h;
}

void fs_hash_update(fs_hash_t *h, const void *data, size_t len)
{
    if (len) variant()->update(&h->state, data, len);
}

uint64_t fs_hash_digest(const fs_hash_t *h) { return variant()->digest(&h->state); }

void fs_hash_free(fs_hash_t *h) { free(h); }
