/* test_hash.c — fs_hash (kernels/fs_hash.h) against libxxhash's XXH3-64,
 * the independent oracle: every variant the CPU has, every input length up
 * to three blocks (each of XXH3's length classes and block edges), long
 * and misaligned inputs, and streams cut at random points. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "fs_hash.h"

#define BIG ((size_t)3 << 20)

static unsigned char *random_bytes(size_t n, unsigned seed)
{
    unsigned char *b = malloc(n + 64);
    cr_assert(b);
    srand(seed);
    for (size_t i = 0; i < n + 64; i++) b[i] = (unsigned char)rand();
    return b;
}

static void use_or_skip(const char *isa)
{
    if (fs_hash_use(isa) != 0) cr_skip_test("this CPU (or build) has no %s", isa);
    cr_assert_str_eq(fs_hash_isa(), isa);
}

static void check_oneshot(const char *isa)
{
    use_or_skip(isa);
    unsigned char *b = random_bytes(BIG, 1);
    for (size_t n = 0; n <= 3 * 1024 + 300; n++)
        cr_assert_eq(fs_hash64(b, n), XXH3_64bits(b, n), "%s, %zu bytes", isa, n);
    for (size_t off = 1; off < 64; off += 7) /* misaligned starts */
        cr_assert_eq(fs_hash64(b + off, BIG - 64), XXH3_64bits(b + off, BIG - 64), "%s at +%zu", isa, off);
    cr_assert_eq(fs_hash64(NULL, 0), XXH3_64bits("", 0));
    free(b);
}

static void check_stream(const char *isa)
{
    use_or_skip(isa);
    unsigned char *b = random_bytes(BIG, 2);
    static const size_t cuts[] = {0, 1, 63, 64, 65, 239, 240, 241, 1023, 1024, 1025, 4096, 100003};
    srand(3);
    for (int round = 0; round < 40; round++) {
        fs_hash_t *h = fs_hash_new();
        cr_assert(h);
        size_t at = 0, limit = round < 20 ? 20000 : BIG;
        while (at < limit) {
            size_t n = cuts[rand() % (sizeof cuts / sizeof cuts[0])];
            if (n > limit - at) n = limit - at;
            fs_hash_update(h, b + at, n);
            at += n;
            if (rand() % 8 == 0) /* digesting midway leaves the state as it was */
                cr_assert_eq(fs_hash_digest(h), XXH3_64bits(b, at), "%s, %zu bytes so far", isa, at);
        }
        cr_assert_eq(fs_hash_digest(h), XXH3_64bits(b, at), "%s, round %d", isa, round);
        fs_hash_free(h);
    }
    fs_hash_t *empty = fs_hash_new();
    cr_assert_eq(fs_hash_digest(empty), XXH3_64bits("", 0));
    fs_hash_free(empty);
    fs_hash_free(NULL);
    free(b);
}

Test(hash, baseline_equals_libxxhash_at_every_length) { check_oneshot("baseline"); }
Test(hash, avx2_equals_libxxhash_at_every_length) { check_oneshot("avx2"); }
Test(hash, avx512_equals_libxxhash_at_every_length) { check_oneshot("avx512"); }
Test(hash, a_stream_cut_anywhere_equals_the_one_shot_hash) { check_stream("baseline"); }
Test(hash, an_avx2_stream_cut_anywhere_equals_the_one_shot_hash) { check_stream("avx2"); }
Test(hash, an_avx512_stream_cut_anywhere_equals_the_one_shot_hash) { check_stream("avx512"); }

Test(hash, the_default_is_the_widest_unit_the_cpu_has_and_unknown_names_are_refused)
{
    const char *isa = fs_hash_isa();
#if defined(__x86_64__)
    __builtin_cpu_init();
    const char *want = __builtin_cpu_supports("avx512f") ? "avx512" : __builtin_cpu_supports("avx2") ? "avx2"
                                                                                                     : "baseline";
    cr_assert_str_eq(isa, want);
#else
    cr_assert_str_eq(isa, "baseline");
#endif
    cr_assert_eq(fs_hash_use("sse9"), -1);
    cr_assert_eq(fs_hash_use(NULL), -1);
    cr_assert_str_eq(fs_hash_isa(), isa, "a refused name leaves the choice as it was");
}
