/* test_epoch.c — epoch plans (kernels/fs_epoch.h): DDP shares disjoint,
 * covering and deterministic for 1-4 ranks, drop_last both ways and odd
 * sizes; the sequential order against torch DistributedSampler's rule
 * written out independently; the permutation a bijection with a working
 * inverse and uniform first positions (chi-square); chunked orders keep
 * chunks whole; bad arguments named. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "fs_epoch.h"

static fs_epoch_opts_t opts(int64_t n, int64_t bs, int drop_last, fs_epoch_order_t order, int rank, int world)
{
    return (fs_epoch_opts_t){.num_items = n, .batch_size = bs, .drop_last = drop_last, .order = order, .chunk = 4,
                             .seed = 7, .epoch = 3, .rank = rank, .world_size = world};
}

/* Every item this rank gets, batch by batch, checking batch sizes. */
static int64_t rank_items(const fs_epoch_opts_t *o, int64_t *out, int64_t *num_batches)
{
    fs_epoch_t e;
    fs_error_t err = {0};
    cr_assert_eq(fs_epoch_plan(o, &e, &err), FS_OK, "%s", err.msg);
    int64_t got = 0, *buf = malloc(sizeof *buf * (size_t)o->batch_size);
    for (int64_t b = 0; b < e.num_batches; b++) {
        int64_t m = fs_epoch_batch(&e, b, buf);
        if (b + 1 < e.num_batches || o->drop_last) cr_assert_eq(m, o->batch_size);
        else cr_assert(m >= 1 && m <= o->batch_size);
        for (int64_t i = 0; i < m; i++) {
            cr_assert(buf[i] >= 0 && buf[i] < o->num_items);
            out[got++] = buf[i];
        }
    }
    free(buf);
    *num_batches = e.num_batches;
    return got;
}

/* torch.utils.data.DistributedSampler(shuffle=False)'s indices for one rank. */
static int64_t torch_rank_indices(int64_t n, int world, int rank, int drop_last, int64_t *out)
{
    int64_t num_samples = drop_last && n % world ? (n - world + world - 1) / world : (n + world - 1) / world;
    int64_t total = num_samples * world, got = 0;
    for (int64_t q = rank; q < total; q += world) out[got++] = q % n;
    return got;
}

Test(epoch, shares_are_disjoint_cover_and_equal)
{
    int64_t sizes[] = {1, 2, 3, 5, 7, 10, 97, 1000};
    int64_t bss[] = {1, 3, 8};
    for (int order = 0; order <= FS_EPOCH_CHUNKED; order++)
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
            for (size_t bi = 0; bi < 3; bi++)
                for (int world = 1; world <= 4; world++)
                    for (int drop = 0; drop <= 1; drop++) {
                        int64_t n = sizes[si], bs = bss[bi];
                        int64_t dropped_share = order == FS_EPOCH_CHUNKED && world > 1 ? n / 4 / world * 4 : n / world;
                        if (drop && (dropped_share == 0 || dropped_share / bs == 0)) continue; /* refused: see below */
                        int64_t *seen = calloc((size_t)n, sizeof *seen), *items = malloc(sizeof *items * (size_t)(n + world) * 2);
                        int64_t total = 0, batches0 = -1, share0 = -1;
                        for (int r = 0; r < world; r++) {
                            fs_epoch_opts_t o = opts(n, bs, drop, (fs_epoch_order_t)order, r, world);
                            int64_t nb, got = rank_items(&o, items, &nb);
                            if (r == 0) batches0 = nb, share0 = got;
                            cr_assert_eq(nb, batches0, "every rank has the same number of batches");
                            if (!drop) cr_assert_eq(got, share0, "equal shares");
                            for (int64_t i = 0; i < got; i++) seen[items[i]]++;
                            total += got;
                        }
                        int64_t distinct = 0, max = 0;
                        for (int64_t i = 0; i < n; i++) {
                            distinct += seen[i] > 0;
                            if (seen[i] > max) max = seen[i];
                        }
                        /* a chunked order over ranks deals whole chunks of 4: its tail and padding are in chunks */
                        int64_t unit = order == FS_EPOCH_CHUNKED && world > 1 ? 4 : 1, units = (n + unit - 1) / unit;
                        if (drop) { /* disjoint: no item twice, and only the tail (< world units, then short batches) missing */
                            cr_assert_eq(max, 1, "order %d n %lld world %d: an item in two shares", order, (long long)n, world);
                            cr_assert(n - total < world * unit + world * bs);
                        } else { /* covering: every item, duplicates only the padding */
                            cr_assert_eq(distinct, n, "order %d n %lld world %d bs %lld: not covered", order, (long long)n,
                                         world, (long long)bs);
                            cr_assert_eq(total, ((units + world - 1) / world) * world * unit);
                        }
                        free(seen), free(items);
                    }
}

Test(epoch, sequential_order_is_distributed_samplers)
{
    for (int64_t n = 1; n <= 40; n++)
        for (int world = 1; world <= 4; world++)
            for (int drop = 0; drop <= 1; drop++)
                for (int r = 0; r < world; r++) {
                    if (drop && n / world == 0) continue;
                    int64_t want[64], got[64], nb;
                    int64_t nw = torch_rank_indices(n, world, r, drop, want);
                    fs_epoch_opts_t o = opts(n, 64, 0, FS_EPOCH_SEQUENTIAL, r, world);
                    o.drop_last = drop;
                    if (drop && nw < 64) o.batch_size = nw; /* one whole batch, so drop_last drops nothing more */
                    int64_t m = rank_items(&o, got, &nb);
                    cr_assert_eq(m, nw, "n %lld world %d rank %d drop %d", (long long)n, world, r, drop);
                    cr_assert_arr_eq(got, want, sizeof *got * (size_t)m);
                }
}

Test(epoch, plans_are_deterministic_and_epochs_differ)
{
    fs_epoch_opts_t o = opts(1000, 32, 0, FS_EPOCH_RANDOM, 1, 3);
    int64_t a[1000], b[1000], c[1000], nb;
    int64_t na = rank_items(&o, a, &nb), nbb = rank_items(&o, b, &nb);
    cr_assert_eq(na, nbb);
    cr_assert_arr_eq(a, b, sizeof *a * (size_t)na);
    o.epoch = 4;
    rank_items(&o, c, &nb);
    cr_assert(memcmp(a, c, sizeof *a * (size_t)na) != 0, "a new epoch reshuffles");
    fs_epoch_t e1, e2;
    fs_error_t err = {0};
    fs_epoch_plan(&o, &e1, &err);
    o.rank = 2;
    fs_epoch_plan(&o, &e2, &err);
    cr_assert_neq(fs_epoch_batch_seed(&e1, 0), fs_epoch_batch_seed(&e2, 0), "ranks sample with their own seeds");
    cr_assert_neq(fs_epoch_batch_seed(&e1, 0), fs_epoch_batch_seed(&e1, 1));
}

Test(epoch, permutation_is_a_bijection_with_an_inverse)
{
    uint64_t ns[] = {1, 2, 3, 4, 5, 15, 16, 17, 255, 256, 257, 1000, 65537, 100003};
    for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
        fs_perm_t p;
        fs_perm_init(&p, ns[k], 42 + k);
        char *hit = calloc(ns[k], 1);
        for (uint64_t i = 0; i < ns[k]; i++) {
            uint64_t v = fs_perm_at(&p, i);
            cr_assert(v < ns[k]);
            cr_assert_eq(hit[v], 0, "n %llu: %llu twice", (unsigned long long)ns[k], (unsigned long long)v);
            hit[v] = 1;
            cr_assert_eq(fs_perm_index(&p, v), i);
        }
        free(hit);
    }
}

/* Which item lands at a position, over 20000 keys: uniform, by chi-square
 * at the 0.001 critical value for n - 1 degrees of freedom; small n, where
 * a Feistel network's narrow halves are weakest, and a wider one. */
Test(epoch, random_order_is_uniform)
{
    struct { uint64_t n; double critical; } cases[] = {{2, 10.83}, {3, 13.82}, {10, 27.88}, {37, 67.99}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        uint64_t n = cases[c].n, positions[] = {0, n / 2, n - 1};
        for (int k = 0; k < 3; k++) {
            int64_t count[64] = {0};
            for (uint64_t key = 0; key < 20000; key++) {
                fs_perm_t p;
                fs_perm_init(&p, n, key * 7919 + c);
                count[fs_perm_at(&p, positions[k])]++;
            }
            double chi = 0, expect = 20000.0 / (double)n;
            for (uint64_t i = 0; i < n; i++) chi += (count[i] - expect) * (count[i] - expect) / expect;
            cr_assert_lt(chi, cases[c].critical, "n %llu position %llu: chi-square %.2f", (unsigned long long)n,
                         (unsigned long long)positions[k], chi);
        }
    }
}

Test(epoch, chunked_order_keeps_chunks_whole)
{
    for (int64_t n = 1; n <= 50; n++) {
        fs_epoch_opts_t o = opts(n, 4, 0, FS_EPOCH_CHUNKED, 0, 1);
        int64_t items[64], nb, m = rank_items(&o, items, &nb);
        cr_assert_eq(m, n);
        char seen[64] = {0};
        for (int64_t i = 0; i < m; i++) seen[items[i]] = 1;
        for (int64_t i = 0; i < n; i++) cr_assert(seen[i], "n %lld: %lld missing", (long long)n, (long long)i);
        /* batch = chunk: every batch is one whole chunk, the short rest last */
        for (int64_t b = 0; b < nb; b++) {
            int64_t first = items[4 * b], len = b + 1 < nb || n % 4 == 0 ? 4 : n % 4;
            cr_assert_eq(first % 4, 0, "n %lld batch %lld starts a chunk", (long long)n, (long long)b);
            for (int64_t i = 1; i < len; i++) cr_assert_eq(items[4 * b + i], first + i);
        }
        if (n % 4) cr_assert_eq(items[n - n % 4], n - n % 4, "the short rest is last");
    }
    /* the full chunks' order is shuffled, and differs by epoch */
    fs_epoch_opts_t o = opts(400, 4, 0, FS_EPOCH_CHUNKED, 0, 1);
    int64_t a[400], b[400], nb;
    rank_items(&o, a, &nb);
    o.epoch = 4;
    rank_items(&o, b, &nb);
    int64_t in_place = 0;
    for (int64_t i = 0; i < 400; i += 4) in_place += a[i] == i;
    cr_assert_lt(in_place, 20, "shuffled: %lld of 100 chunks in place", (long long)in_place);
    cr_assert(memcmp(a, b, sizeof a) != 0, "a new epoch reshuffles the chunks");
}

/* DDP over a chunked order: each rank's share is whole chunks; every full
 * chunk's block of positions is that chunk, whole and in order, and no two
 * ranks' blocks hold the same chunk. Beyond the full chunks come the short
 * rest and, without drop_last, the padding (the order's start again);
 * without drop_last every chunk is read. */
Test(epoch, chunked_shares_deal_whole_chunks)
{
    for (int64_t n = 1; n <= 60; n++)
        for (int world = 2; world <= 4; world++)
            for (int drop = 0; drop <= 1; drop++) {
                if (drop && n / 4 / world == 0) continue; /* refused: no whole chunk per rank */
                int64_t chunks = (n + 3) / 4, owner[16];
                int read[16] = {0};
                for (int64_t ch = 0; ch < 16; ch++) owner[ch] = -1;
                for (int r = 0; r < world; r++) {
                    fs_epoch_opts_t o = opts(n, 4, drop, FS_EPOCH_CHUNKED, r, world);
                    int64_t items[128], nb, m = rank_items(&o, items, &nb);
                    cr_assert_eq(m % 4, 0, "n %lld world %d: a share of whole chunks", (long long)n, world);
                    for (int64_t i = 0; i < m; i++) read[items[i] / 4] = 1;
                    for (int64_t b = 0; b < m / 4; b++) {
                        if (r * m + 4 * b + 4 > n / 4 * 4) continue; /* the rest, or padding */
                        int64_t first = items[4 * b], ch = first / 4;
                        cr_assert_eq(first % 4, 0, "n %lld world %d rank %d: block %lld", (long long)n, world, r,
                                     (long long)b);
                        for (int k = 1; k < 4; k++) cr_assert_eq(items[4 * b + k], first + k);
                        cr_assert_eq(owner[ch], -1, "n %lld world %d: chunk %lld in two ranks", (long long)n, world,
                                     (long long)ch);
                        owner[ch] = r;
                    }
                }
                for (int64_t ch = 0; !drop && ch < chunks; ch++)
                    cr_assert(read[ch], "n %lld world %d: chunk %lld unread", (long long)n, world, (long long)ch);
            }
}

Test(epoch, bad_arguments_are_named)
{
    struct {
        fs_epoch_opts_t o;
        const char *says;
    } cases[] = {
        {opts(0, 4, 0, FS_EPOCH_RANDOM, 0, 1), "no seeds"},
        {opts(10, 0, 0, FS_EPOCH_RANDOM, 0, 1), "batch size 0"},
        {opts(10, 4, 0, FS_EPOCH_RANDOM, 2, 2), "rank 2 with world size 2"},
        {opts(10, 4, 0, FS_EPOCH_RANDOM, -1, 2), "rank -1"},
        {opts(10, 4, 0, (fs_epoch_order_t)9, 0, 1), "unknown order 9"},
        {opts(3, 4, 1, FS_EPOCH_RANDOM, 0, 4), "leaves every rank empty"},
        {opts(10, 8, 1, FS_EPOCH_RANDOM, 0, 2), "leaves no whole batch"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        fs_epoch_t e;
        fs_error_t err = {0};
        cr_assert_eq(fs_epoch_plan(&cases[i].o, &e, &err), FS_ERR_INVALID_ARGUMENT, "case %zu", i);
        cr_assert(strstr(err.msg, cases[i].says), "case %zu: '%s' does not say '%s'", i, err.msg, cases[i].says);
    }
    fs_epoch_opts_t o = opts(10, 4, 0, FS_EPOCH_CHUNKED, 0, 1);
    o.chunk = 0;
    fs_epoch_t e;
    fs_error_t err = {0};
    cr_assert_eq(fs_epoch_plan(&o, &e, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "chunk size 0"));
}
