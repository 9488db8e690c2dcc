/* fs_epoch.c — epoch plans (fs_epoch.h, docs/algorithms.md §10).
 *
 * A rank's share position p is the padded permutation's position q (p *
 * world_size + rank, strided as DistributedSampler does; contiguous, rank
 * * share + p, for chunked orders, so a chunk stays one bulk range, with
 * shares of whole chunks over several ranks: each chunk is one rank's), then
 * q wraps into [0, num_items) (the padding repeats the permutation's
 * start) and goes through the order's permutation. The random order is a
 * Feistel network over the smallest 2^(2h) >= n with SplitMix64
 * rounds, cycle-walked: values >= n are permuted again until they land in
 * range, which takes fewer than four steps on average and always ends,
 * because the cycle through i returns to i. */
#include "fs_epoch.h"

#include "fs_rng.h"

/* ---- the permutation ------------------------------------------------------ */

void fs_perm_init(fs_perm_t *p, uint64_t n, uint64_t key)
{
    int bits = 0;
    while (bits < 64 && (1ULL << bits) < n) bits++;
    p->n = n;
    p->half_bits = bits < 2 ? 1 : (bits + 1) / 2;
    for (int r = 0; r < FS_PERM_ROUNDS; r++) p->key[r] = fs_rng_at(key, 0x5eed0fe90c4ULL, (uint64_t)r);
}

static uint64_t feistel(const fs_perm_t *p, uint64_t x)
{
    int h = p->half_bits;
    uint64_t mask = (1ULL << h) - 1, l = x >> h, r = x & mask;
    for (int i = 0; i < FS_PERM_ROUNDS; i++) {
        uint64_t t = r;
        r = l ^ (fs_mix64(r ^ p->key[i]) & mask);
        l = t;
    }
    return (l << h) | r;
}

static uint64_t feistel_inverse(const fs_perm_t *p, uint64_t x)
{
    int h = p->half_bits;
    uint64_t mask = (1ULL << h) - 1, l = x >> h, r = x & mask;
    for (int i = FS_PERM_ROUNDS - 1; i >= 0; i--) {
        uint64_t t = l;
        l = r ^ (fs_mix64(l ^ p->key[i]) & mask);
        r = t;
    }
    return (l << h) | r;
}

uint64_t fs_perm_at(const fs_perm_t *p, uint64_t i)
{
    do i = feistel(p, i);
    while (i >= p->n);
    return i;
}

uint64_t fs_perm_index(const fs_perm_t *p, uint64_t v)
{
    do v = feistel_inverse(p, v);
    while (v >= p->n);
    return v;
}

/* ---- the plan ------------------------------------------------------------- */

static fs_status_t check_opts(const fs_epoch_opts_t *o, fs_error_t *err)
{
    if (o->num_items < 1) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "epoch: no seeds to plan");
    if (o->batch_size < 1)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "epoch: batch size %lld, must be at least 1",
                        (long long)o->batch_size);
    if (o->world_size < 1 || o->rank < 0 || o->rank >= o->world_size)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "epoch: rank %d with world size %d (needs 0 <= rank < "
                        "world size)", o->rank, o->world_size);
    if (o->epoch < 0) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "epoch: epoch %lld is negative", (long long)o->epoch);
    if ((unsigned)o->order > FS_EPOCH_CHUNKED)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "epoch: unknown order %d", (int)o->order);
    if (o->order == FS_EPOCH_CHUNKED && o->chunk < 1)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "epoch: chunk size %lld, must be at least 1",
                        (long long)o->chunk);
    return FS_OK;
}

fs_status_t fs_epoch_plan(const fs_epoch_opts_t *o, fs_epoch_t *out, fs_error_t *err)
{
    fs_status_t st = check_opts(o, err);
    if (st != FS_OK) return st;
    int64_t n = o->num_items, w = o->world_size;
    fs_epoch_t e = {.o = *o};
    /* DistributedSampler: drop the uneven tail, or pad to an even split; a
     * chunked order over ranks splits whole chunks (the short rest counts as
     * one), so no chunk is cut between two ranks */
    int64_t c = o->chunk, chunks = o->order == FS_EPOCH_CHUNKED ? (n + c - 1) / c : 0;
    if (o->order == FS_EPOCH_CHUNKED && w > 1) e.share = (o->drop_last ? n / c / w : (chunks + w - 1) / w) * c;
    else e.share = o->drop_last ? n / w : (n + w - 1) / w;
    if (e.share == 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "epoch: drop_last with %lld seeds over %d ranks leaves every "
                        "rank empty", (long long)n, o->world_size);
    e.num_batches = o->drop_last ? e.share / o->batch_size : (e.share + o->batch_size - 1) / o->batch_size;
    if (e.num_batches == 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "epoch: drop_last with a share of %lld seeds per rank and "
                        "batch size %lld leaves no whole batch", (long long)e.share, (long long)o->batch_size);
    uint64_t key = fs_rng_at(o->seed, 0xe90c4ULL, (uint64_t)o->epoch);
    if (o->order == FS_EPOCH_RANDOM) fs_perm_init(&e.perm, (uint64_t)n, key);
    if (o->order == FS_EPOCH_CHUNKED && (e.num_full_chunks = n / o->chunk) > 0)
        fs_perm_init(&e.perm, (uint64_t)e.num_full_chunks, key);
    *out = e;
    return FS_OK;
}

/* The item at position q of the (unpadded) chunked order: the full chunks
 * of `chunk` positions in shuffled order, then the short rest in order. The
 * rest stays last so that batches of `chunk` positions are whole chunks
 * (one bulk range each) for a single rank; it is a few seeds at most. */
static int64_t chunked_item(const fs_epoch_t *e, int64_t q)
{
    int64_t c = e->o.chunk;
    if (q >= e->num_full_chunks * c) return q;
    return (int64_t)fs_perm_at(&e->perm, (uint64_t)(q / c)) * c + q % c;
}

/* The item at this rank's share position p. */
static int64_t share_item(const fs_epoch_t *e, int64_t p)
{
    int64_t n = e->o.num_items;
    int64_t q = e->o.order == FS_EPOCH_CHUNKED ? e->o.rank * e->share + p : p * e->o.world_size + e->o.rank;
    q %= n; /* the padding repeats the order's start */
    switch (e->o.order) {
    case FS_EPOCH_RANDOM: return (int64_t)fs_perm_at(&e->perm, (uint64_t)q);
    case FS_EPOCH_CHUNKED: return chunked_item(e, q);
    default: return q;
    }
}

int64_t fs_epoch_batch(const fs_epoch_t *e, int64_t b, int64_t *items)
{
    if (b < 0 || b >= e->num_batches) return 0;
    int64_t first = b * e->o.batch_size, end = first + e->o.batch_size;
    if (end > e->share) end = e->share;
    for (int64_t p = first; p < end; p++) items[p - first] = share_item(e, p);
    return end - first;
}

uint64_t fs_epoch_batch_seed(const fs_epoch_t *e, int64_t b)
{
    uint64_t global = (uint64_t)b * (uint64_t)e->o.world_size + (uint64_t)e->o.rank;
    return fs_rng_at(e->o.seed ^ 0xba7c4ULL, (uint64_t)e->o.epoch, global);
}
