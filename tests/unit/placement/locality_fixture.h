/* locality_fixture.h — what the test_locality_* suites share (locality-aware
 * sampling, docs/algorithms.md §4): a generated R-MAT graph and two samplers
 * made afresh for each test (TestSuite(locality, .init = setup, .fini =
 * teardown)), views of a dataset, uniform requests, GPU rows by degree and
 * the preferred sets built from them. Compiled into each of those suites
 * (tests/unit/placement/CMakeLists.txt). */
#ifndef FS_LOCALITY_FIXTURE_H
#define FS_LOCALITY_FIXTURE_H

#include <stdint.h>

#include "dataset.h"
#include "fs_locality.h"
#include "fs_sample.h"
#include "locality.h"

extern char *dir;
extern fs_dataset_t *rmat;
extern fs_sampler_t *plain, *las; /* for fs_sample_cpu and for fs_sample_locality_cpu */

/* The suites' .init and .fini: the graph generated and the samplers made, then all of it gone. */
void setup(void);
void teardown(void);

/* ds as a one-part view, without weights. */
fs_csr_view_t view_of(const fs_dataset_t *ds);
/* The neighbour at position pos of part 0's indices, whatever their width. */
int64_t nbr(const fs_csr_view_t *g, int64_t pos);
/* A uniform request of `hops` hops with edge ids. */
fs_sample_req_t req_of(int hops, const int *fanout, uint64_t seed);
/* Every node by descending degree; *count: how many of them make B, the top
 * `frac` (the plan a GPU budget would give). The caller frees. */
int64_t *top_degree_rows(const fs_dataset_t *ds, double frac, int64_t *count);
/* fs_las_sets_build over ds with B = b, which must succeed. */
fs_las_sets_t *build_sets(const fs_dataset_t *ds, const int64_t *b, int64_t nb, int levels, int64_t k,
                          int threads);

#endif
