/* fs_epoch.h — one epoch's plan for one rank of a data-parallel job: which
 * seed positions, in which mini-batches (docs/algorithms.md §10).
 *
 * The plan follows torch's DistributedSampler, so a DDP job gets what it
 * expects: every rank gets an equal share of one permutation of the
 * epoch's positions, identical on every rank for the same seed and epoch;
 * without drop_last the permutation is padded by repeating its start
 * until it divides evenly, with drop_last its tail is dropped instead (and
 * so is a share's last short batch). Equal shares give every rank the same
 * number of batches, which DDP's collective steps need. A chunked order
 * over several ranks deals whole chunks (its short rest one of them): each
 * rank's share is a whole number of chunks, padded or dropped in chunks,
 * so every chunk is read by one rank, as one range.
 *
 * The permutation is never stored: position i of it is a keyed bijection
 * of i (a Feistel network, cycle-walked into [0, n)), so a plan costs
 * O(1) memory whatever the split's size and any batch can be produced
 * first, which is what resuming a stream needs.
 *
 * Thread-safety: a plan is immutable after fs_epoch_plan; any thread may
 * read batches from it. */
#ifndef FS_EPOCH_H
#define FS_EPOCH_H

#include <stdint.h>

#include "fs_types.h"

typedef enum {
    FS_EPOCH_SEQUENTIAL = 0, /* positions in order: no shuffle */
    FS_EPOCH_RANDOM = 1,     /* one random permutation per (seed, epoch) */
    FS_EPOCH_CHUNKED = 2,    /* contiguous chunks of `chunk` positions, the full chunks' order
                                shuffled and a short last chunk kept last (chunk reshuffling
                                from the pre-propagation GNN study, P4 in docs/papers.md;
                                docs/algorithms.md §8): with chunk = batch size,
                                every batch of a single rank is one chunk */
} fs_epoch_order_t;

typedef struct {
    int64_t num_items;  /* the epoch's positions 0..num_items-1 (a split's or a seed array's) */
    int64_t batch_size; /* >= 1 */
    int drop_last;
    fs_epoch_order_t order;
    int64_t chunk;      /* FS_EPOCH_CHUNKED: positions per chunk, >= 1 */
    uint64_t seed;
    int64_t epoch;      /* >= 0 */
    int rank, world_size; /* 0 <= rank < world_size */
} fs_epoch_opts_t;

/* A pseudorandom permutation of [0, n). Eight rounds: four are a strong
 * permutation only on wide halves, and the small domains of short splits
 * showed a bias in four (test_epoch's chi-square). */
#define FS_PERM_ROUNDS 8
typedef struct {
    uint64_t n;
    int half_bits;
    uint64_t key[FS_PERM_ROUNDS];
} fs_perm_t;

typedef struct {
    fs_epoch_opts_t o;
    int64_t share;       /* positions this rank gets (equal on every rank) */
    int64_t num_batches; /* this rank's batches */
    fs_perm_t perm;      /* of the items (RANDOM) or of the chunks (CHUNKED) */
    int64_t num_full_chunks;     /* CHUNKED: chunks of `chunk` positions; the rest, if any, is last */
} fs_epoch_t;

/* Plans an epoch. FS_ERR_INVALID_ARGUMENT naming the problem: no items, a
 * batch size or chunk < 1, rank outside 0..world_size-1, an unknown order,
 * or drop_last leaving every rank empty. */
fs_status_t fs_epoch_plan(const fs_epoch_opts_t *o, fs_epoch_t *out, fs_error_t *err);

/* The positions of this rank's batch b (0 <= b < num_batches) into items;
 * returns how many (batch_size, or fewer for the last without drop_last). */
int64_t fs_epoch_batch(const fs_epoch_t *e, int64_t b, int64_t *items);

/* The request seed of this rank's batch b: distinct for every (seed,
 * epoch, rank, batch), so a batch samples the same whenever it is made. */
uint64_t fs_epoch_batch_seed(const fs_epoch_t *e, int64_t b);

/* The permutation: fs_perm_init for [0, n) under key, fs_perm_at its
 * i-th value (0 <= i < n), fs_perm_index the inverse. */
void fs_perm_init(fs_perm_t *p, uint64_t n, uint64_t key);
uint64_t fs_perm_at(const fs_perm_t *p, uint64_t i);
uint64_t fs_perm_index(const fs_perm_t *p, uint64_t v);

#endif
