/* oracle_fixture.h — an independent oracle for the k-hop sampling engine,
 * shared by the test_oracle_* suites (compiled into each, tests/unit/engines/CMakeLists.txt).
 *
 * test_sample.c compares fs_sample_cpu with fs_sample_reference, which makes
 * its random choices with the engine's own pick code, RNG and row lookup:
 * that proves the fast path equals the naive one, not that either picks
 * correctly. The oracle shares no code with the engine beyond the entry points
 * it tests (fs_sampler_create/destroy, fs_csr_view_init, fs_sample_cpu) and
 * the public types: it has its own RNG (xoshiro256** seeded by SplitMix64),
 * its own graphs, picks, relabel and statistics. Here: the RNG, the three
 * graphs and two samplers every test runs on (made by setup, the suites'
 * .init), and the exact invariants of one result (check_result), which every
 * result any test obtains must keep. The seeds are fixed, so every run is
 * the same. */
#ifndef FS_ORACLE_FIXTURE_H
#define FS_ORACLE_FIXTURE_H

#include <criterion/criterion.h>
#include <stdint.h>

#include "fs_sample.h"

/* Requests are written as a client library's caller writes them
 * (featstore/types.h: struct_size set); the engine ignores the field. */
#define REQ_SIZE .struct_size = sizeof(fs_sample_req_t),

/* cr_assert formats lazily only on some Criterion versions: test first.
 * CHECK ends the test; VERDICT (statistics) records the failure and goes on,
 * so one run names every distribution that is off. */
#define CHECK(cond, ...)                                                                                     \
    do {                                                                                                     \
        if (!(cond)) cr_assert_fail(__VA_ARGS__);                                                            \
    } while (0)
#define VERDICT(cond, ...)                                                                                   \
    do {                                                                                                     \
        if (!(cond)) cr_expect_fail(__VA_ARGS__);                                                            \
    } while (0)

typedef struct {
    uint64_t s[4];
} orng_t;

typedef struct {
    const char *name;
    int64_t n, m, cap, rows;
    int64_t *ip, *ix64, *sorted; /* sorted: each row's neighbours ascending */
    int32_t *ix32;               /* the same ids, for int32 views */
    float *w;                    /* NULL: unweighted */
} og_t;

extern og_t hubs, plaw, wtd;
extern fs_sampler_t *sa, *sb;
extern char ctx[512]; /* what the current request is, for every message */

orng_t orng(uint64_t seed);
uint64_t onext(orng_t *r);
/* Uniform in [0, n), exactly: rejection below 2^64 mod n. */
int64_t obelow(orng_t *r, int64_t n);
double ounit(orng_t *r);

/* The suites' .init and .fini: the graphs built and two samplers made, then freed. */
void setup(void);
void teardown(void);

int64_t deg_of(const og_t *g, int64_t v);
/* How many of v's edges may be picked in a weighted mode (weight > 0). */
int64_t positive_of(const og_t *g, int64_t v);
const char *mode_name(fs_sample_mode_t m);
/* g as a one-part view with dt indices. */
fs_csr_view_t view_of(const og_t *g, fs_dtype_t dt);
/* Describes the request in ctx, for the messages of what follows. */
void set_ctx(const og_t *g, const char *view, const fs_sample_req_t *r, int64_t nseeds);
/* fs_sample_cpu, which must succeed. */
void run(fs_sampler_t *s, const fs_csr_view_t *v, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
         fs_sample_result_t *res, fs_gather_counters_t *topo);
/* Everything the contract fixes about one result, against the CSR in g,
 * with the relabel redone here. */
void check_result(const og_t *g, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
                  const fs_sample_result_t *res);

#endif
