/* fs_sample_pick.h — choosing which neighbours of one node to sample. Shared
 * by the CPU engine, the naive reference and the CUDA kernel, so all three
 * make the identical random choices for a (seed, hop, node).
 *
 * Uniform without replacement uses Floyd's algorithm (Bentley & Floyd 1987):
 * exactly k draws for a uniformly random k-subset of [0, deg), which keeps
 * docs/algorithms.md §5's O(fanout) bound without the rejection loop's retries when
 * k is close to deg. Membership is a linear scan of the picks so far: k is a
 * fanout (tens), and the scan stays in registers / L1. */
#ifndef FS_SAMPLE_PICK_H
#define FS_SAMPLE_PICK_H

#include "fs_rng.h"

/* The per-(request, hop, node) random stream. */
FS_HD fs_rng_t fs_pick_rng(uint64_t seed, int hop, int64_t node)
{
    return fs_rng_make(seed ^ ((uint64_t)(hop + 1) * 0xd1b54a32d192ed03ULL), (uint64_t)node);
}

/* k distinct positions in [0, deg), deg > k > 0. */
FS_HD void fs_pick_uniform(fs_rng_t *rng, int64_t deg, int64_t k, int64_t *pos)
{
    int64_t m = 0;
    for (int64_t j = deg - k; j < deg; j++) {
        int64_t t = (int64_t)fs_rng_below(rng, (uint64_t)j + 1);
        int seen = 0;
        for (int64_t q = 0; q < m; q++) seen |= pos[q] == t;
        pos[m++] = seen ? j : t;
    }
}

/* k positions in [0, deg) with replacement, deg > 0. */
FS_HD void fs_pick_replace(fs_rng_t *rng, int64_t deg, int64_t k, int64_t *pos)
{
    for (int64_t q = 0; q < k; q++) pos[q] = (int64_t)fs_rng_below(rng, (uint64_t)deg);
}

#endif
