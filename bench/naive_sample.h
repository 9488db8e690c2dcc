/* naive_sample.h — the textbook k-hop sampler used as bench_sample's
 * baseline (not the test oracle, which shares the engine's random choices).
 * Per node it copies the whole neighbour list and reservoir-samples it
 * (Algorithm R: O(degree) random draws); per hop it deduplicates with a sort
 * and relabels by binary search — the separate dedup and relabel passes that
 * FastGL's fused map replaces. Single-threaded per batch. */
#ifndef FS_NAIVE_SAMPLE_H
#define FS_NAIVE_SAMPLE_H

#include "fs_sample.h"

typedef struct naive_sampler naive_sampler_t;

naive_sampler_t *naive_create(void);
void naive_destroy(naive_sampler_t *s);
/* Samples uniform-without-replacement hops; returns sampled edges, -1 on OOM. */
int64_t naive_sample(naive_sampler_t *s, const fs_csr_view_t *g, const int64_t *seeds, int64_t n,
                     const fs_sample_req_t *req);

#endif
