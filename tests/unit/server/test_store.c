/* test_store.c — the tiered store: reading through any placement is
 * bit-identical to reading the host tier, routes always pick the closest
 * copy, simulated devices enforce capacity, counters add up, and topology
 * placed in a tier samples identically. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gen.h"
#include "store.h"
#include "test_util.h"

static char *dir;
static fs_dataset_t *ds;
static fs_store_t *st;

static void setup(void)
{
    dir = tu_mkdtemp();
    fs_error_t err = {0};
    fs_rmat_opts_t g;
    fs_rmat_defaults(&g);
    char *out = tu_path(dir, "g");
    g.out_dir = out, g.scale = 12, g.edge_factor = 8, g.dim = 24, g.edges.symmetrize = 1;
    cr_assert_eq(fs_gen_rmat(&g, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_dataset_open(out, 0, 1, &ds, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_store_create(ds, &st, &err), FS_OK);
    free(out);
}

static void teardown(void)
{
    fs_store_destroy(st);
    fs_dataset_close(ds);
    tu_rm_rf(dir);
    free(dir);
}

TestSuite(store, .init = setup, .fini = teardown, .timeout = 60);

static int64_t *range(int64_t lo, int64_t hi)
{
    int64_t *v = malloc(sizeof *v * (size_t)(hi - lo + 1));
    for (int64_t i = lo; i < hi; i++) v[i - lo] = i;
    return v;
}

static void gather(int reader, const int64_t *ids, int64_t n, float *out)
{
    fs_error_t err = {0};
    cr_assert_eq(fs_store_gather(st, "feat", reader, ids, n, FS_DTYPE_F32, out, NULL, &err), FS_OK, "%s", err.msg);
}

Test(store, three_tier_split_is_bit_identical_to_host)
{
    fs_error_t err = {0};
    int host, gpu0, gpu1;
    cr_assert_eq(fs_store_add_tier(st, FS_TIER_HOST, -1, 0, &host, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_store_add_tier(st, FS_TIER_SIM_DEVICE, 0, 1 << 20, &gpu0, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_store_add_tier(st, FS_TIER_SIM_DEVICE, 1, 1 << 20, &gpu1, &err), FS_OK, "%s", err.msg);
    int64_t n = ds->num_nodes, *a = range(0, 1000), *b = range(1000, 2000), *c = range(2000, n);
    /* gpu0 holds [0,1000) for itself; gpu1 holds [1000,2000) for itself and gpu0 (peer); the CPU's arena the rest */
    cr_assert_eq(fs_store_place_rows(st, "feat", gpu0, a, 1000, FS_READER_BIT(0), &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_store_place_rows(st, "feat", gpu1, b, 1000, FS_READER_BIT(0) | FS_READER_BIT(1), &err), FS_OK);
    cr_assert_eq(fs_store_place_rows(st, "feat", host, c, n - 2000, FS_READER_BIT(FS_READER_CPU), &err), FS_OK);

    int64_t *ids = range(0, n);
    for (int64_t i = n - 1; i > 0; i--) { /* shuffle */
        int64_t j = (i * 7919) % (i + 1), t = ids[i];
        ids[i] = ids[j], ids[j] = t;
    }
    size_t bytes = sizeof(float) * (size_t)n * 24;
    float *want = malloc(bytes), *got = malloc(bytes);
    for (int64_t i = 0; i < n; i++) memcpy(want + i * 24, (const float *)ds->tables[0].data + ids[i] * 24, 96);
    for (int r = FS_READER_CPU; r <= 2; r++) {
        memset(got, 0, bytes);
        gather(r, ids, n, got);
        cr_assert_arr_eq(got, want, bytes, "reader %d", r);
    }
    fs_gather_counters_t c0, c1, cc, c2;
    fs_store_counters(st, 0, &c0);
    fs_store_counters(st, 1, &c1);
    fs_store_counters(st, FS_READER_CPU, &cc);
    fs_store_counters(st, 2, &c2);
    cr_assert_eq(c0.rows[gpu0], 1000, "reader 0 reads its local rows locally");
    cr_assert_eq(c0.rows[gpu1], 1000, "and its peer's from the peer");
    cr_assert_eq(c0.rows[0], (uint64_t)(n - 2000));
    cr_assert_eq(c1.rows[gpu1], 1000);
    cr_assert_eq(c1.rows[gpu0], 0, "reader 1 was not routed to gpu0");
    cr_assert_eq(cc.rows[host], (uint64_t)(n - 2000));
    cr_assert_eq(c2.rows[0], (uint64_t)n, "an unplaced reader reads the mmap");
    cr_assert_eq(c0.bytes[gpu0], 1000 * 96);
    fs_store_tier_t ti;
    fs_store_tier_info(st, gpu0, &ti);
    cr_assert_eq(ti.used, 1000 * 96);
    cr_assert_eq(ti.kind, FS_TIER_SIM_DEVICE);
    free(a), free(b), free(c), free(ids), free(want), free(got);
}

Test(store, routes_only_move_closer)
{
    fs_error_t err = {0};
    int local, peer;
    cr_assert_eq(fs_store_add_tier(st, FS_TIER_SIM_DEVICE, 0, 0, &local, &err), FS_OK);
    cr_assert_eq(fs_store_add_tier(st, FS_TIER_SIM_DEVICE, 1, 0, &peer, &err), FS_OK);
    int64_t *ids = range(0, 100);
    cr_assert_eq(fs_store_place_rows(st, "feat", local, ids, 100, FS_READER_BIT(0), &err), FS_OK);
    cr_assert_eq(fs_store_place_rows(st, "feat", peer, ids, 100, FS_READER_BIT(0), &err), FS_OK); /* placed later */
    fs_table_view_t v;
    cr_assert_eq(fs_store_table_view(st, "feat", 0, &v, &err), FS_OK);
    for (int i = 0; i < 100; i++) cr_assert_eq(FS_ROUTE_TIER(v.route[i]), local, "node %d left its local copy", i);
    cr_assert_eq(fs_store_place_rows(st, "feat", local, ids, 10, FS_READER_BIT(0), &err), FS_ERR_EXISTS);
    free(ids);
}

Test(store, capacity_and_bad_placements_are_errors)
{
    fs_error_t err = {0};
    int small;
    cr_assert_eq(fs_store_add_tier(st, FS_TIER_SIM_DEVICE, 3, 96 * 50, &small, &err), FS_OK);
    int64_t *ids = range(0, 100);
    cr_assert_eq(fs_store_place_rows(st, "feat", small, ids, 100, FS_READER_BIT(3), &err), FS_ERR_RESOURCE);
    cr_assert_not_null(strstr(err.msg, "cannot take 9600 more bytes"), "%s", err.msg);
    cr_assert_eq(fs_store_place_rows(st, "feat", small, ids, 50, FS_READER_BIT(3), &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_store_place_rows(st, "nope", small, ids, 1, 1, &err), FS_ERR_NOT_FOUND);
    cr_assert_eq(fs_store_place_rows(st, "feat", 0, ids, 1, 1, &err), FS_ERR_INVALID_ARGUMENT, "tier 0 is the dataset");
    ids[0] = ds->num_nodes;
    cr_assert_eq(fs_store_place_topology(st, small, ids, 1, 1, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "outside"), "%s", err.msg);
    cr_assert_eq(fs_store_add_tier(st, FS_TIER_SIM_DEVICE, 99, 0, &small, &err), FS_ERR_INVALID_ARGUMENT);
    free(ids);
}

Test(store, gpu_tiers_need_a_gpu)
{
    fs_devices_t d;
    if (fs_devices_query(&d, NULL) == FS_OK) cr_skip_test("a GPU is present: covered by test_cuda");
    fs_error_t err = {0};
    int t;
    cr_assert_eq(fs_store_add_tier(st, FS_TIER_PINNED, -1, 0, &t, &err), FS_ERR_NO_DEVICE);
    cr_assert_eq(fs_store_add_tier(st, FS_TIER_DEVICE, 0, 1 << 20, &t, &err), FS_ERR_NO_DEVICE);
    cr_assert_eq(fs_store_add_tier(st, FS_TIER_DEVICE, 0, 0, &t, &err), FS_ERR_INVALID_ARGUMENT, "a device tier is one allocation of a known size");
    cr_assert_neq(strlen(err.msg), 0);
}

Test(store, topology_in_a_tier_samples_identically)
{
    fs_error_t err = {0};
    int gpu0;
    cr_assert_eq(fs_store_add_tier(st, FS_TIER_SIM_DEVICE, 0, 0, &gpu0, &err), FS_OK);
    int64_t hot[600];
    for (int i = 0; i < 600; i++) hot[i] = i * 3; /* every third node's neighbour list */
    cr_assert_eq(fs_store_place_topology(st, gpu0, hot, 600, FS_READER_BIT(0), &err), FS_OK, "%s", err.msg);
    fs_csr_view_t plain, tiered;
    fs_store_csr_view(st, FS_READER_CPU, &plain);
    fs_store_csr_view(st, 0, &tiered);
    cr_assert_null(plain.route);
    cr_assert_not_null(tiered.route);
    int64_t seeds[256];
    for (int i = 0; i < 256; i++) seeds[i] = (i * 37) % ds->num_nodes;
    fs_sample_req_t r = {.num_hops = 3, .fanout = {10, 5, 3}, .seed = 11, .want_edge_ids = 1};
    fs_sampler_t *s1, *s2;
    fs_sampler_create(&s1, &err);
    fs_sampler_create(&s2, &err);
    fs_sample_result_t a, b;
    fs_gather_counters_t topo = {0};
    cr_assert_eq(fs_sample_cpu(s1, &plain, seeds, 256, &r, &a, NULL, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_sample_cpu(s2, &tiered, seeds, 256, &r, &b, &topo, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(a.num_nodes, b.num_nodes);
    cr_assert_arr_eq(a.nodes, b.nodes, sizeof(int64_t) * (size_t)a.num_nodes);
    for (int h = 0; h < 3; h++) {
        cr_assert_eq(a.block[h].num_edges, b.block[h].num_edges);
        cr_assert_arr_eq(a.block[h].edge_src, b.block[h].edge_src, sizeof(int64_t) * (size_t)a.block[h].num_edges);
        cr_assert_arr_eq(a.block[h].edge_ids, b.block[h].edge_ids, sizeof(int64_t) * (size_t)a.block[h].num_edges);
    }
    cr_assert_gt(topo.rows[gpu0], 0, "some neighbour lists came from the tier");
    cr_assert_gt(topo.rows[0], 0, "and the rest from the mmap");
    fs_sampler_destroy(s1);
    fs_sampler_destroy(s2);
}

/* What fs_sample_cpu counts equals what fs_sample_count_topology counts
 * from its result (the GPU engine's count): per part of a routed view, in
 * every mode; weighted hops read whole rows. */
static void same_topology_count(fs_sampler_t *s, const fs_csr_view_t *g, const int64_t *seeds, int64_t n,
                                const fs_sample_req_t *r)
{
    fs_error_t err = {0};
    fs_sample_result_t res;
    fs_gather_counters_t counted = {0}, from_result = {0};
    cr_assert_eq(fs_sample_cpu(s, g, seeds, n, r, &res, &counted, &err), FS_OK, "%s", err.msg);
    fs_sample_count_topology(g, r, &res, &from_result);
    cr_assert_arr_eq(&counted, &from_result, sizeof counted, "mode %d", (int)r->mode[0]);
    cr_assert_gt(counted.rows[0], 0);
}

Test(store, topology_counted_from_a_result_is_what_the_sampler_counted)
{
    fs_error_t err = {0};
    int gpu0;
    cr_assert_eq(fs_store_add_tier(st, FS_TIER_SIM_DEVICE, 0, 0, &gpu0, &err), FS_OK);
    int64_t hot[600];
    for (int i = 0; i < 600; i++) hot[i] = i * 3;
    cr_assert_eq(fs_store_place_topology(st, gpu0, hot, 600, FS_READER_BIT(0), &err), FS_OK, "%s", err.msg);
    fs_csr_view_t tiered;
    fs_store_csr_view(st, 0, &tiered);
    int64_t seeds[256];
    for (int i = 0; i < 256; i++) seeds[i] = (i * 37) % ds->num_nodes;
    fs_sampler_t *s;
    fs_sampler_create(&s, &err);
    fs_sample_req_t r = {.num_hops = 3, .fanout = {10, 5, FS_FANOUT_ALL}, .seed = 11};
    same_topology_count(s, &tiered, seeds, 256, &r);
    for (int h = 0; h < 3; h++) r.mode[h] = FS_SAMPLE_UNIFORM_REPLACE;
    same_topology_count(s, &tiered, seeds, 256, &r);
    /* weighted: a graph of its own, every node's row of i % 9 neighbours */
    enum { N = 300 };
    int64_t indptr[N + 1] = {0};
    for (int v = 0; v < N; v++) indptr[v + 1] = indptr[v] + v % 9;
    int32_t *idx = malloc(sizeof *idx * (size_t)indptr[N]);
    float *w = malloc(sizeof *w * (size_t)indptr[N]);
    for (int64_t e = 0; e < indptr[N]; e++) idx[e] = (int32_t)((e * 7) % N), w[e] = 0.5f + (float)(e % 3);
    fs_csr_view_t weighted;
    fs_csr_view_init(&weighted, N, indptr, idx, FS_DTYPE_I32, w);
    r.fanout[2] = 2;
    for (int h = 0; h < 3; h++) r.mode[h] = h == 1 ? FS_SAMPLE_WEIGHTED_REPLACE : FS_SAMPLE_WEIGHTED;
    for (int i = 0; i < 64; i++) seeds[i] = (i * 37) % N;
    same_topology_count(s, &weighted, seeds, 64, &r);
    fs_sampler_destroy(s);
    free(idx), free(w);
}

/* Preferred sets for locality-aware sampling: copied into sealed memfds,
 * shared between readers with equal sets, and every bad call named. */
Test(store, preferred_sets_are_sealed_shared_and_checked)
{
    int64_t n = ds->num_nodes, words = (n + 63) / 64;
    uint64_t *pref[2] = {calloc((size_t)words, 8), calloc((size_t)words, 8)};
    uint16_t *count[2] = {calloc((size_t)n, 2), calloc((size_t)n, 2)};
    for (int64_t v = 0; v < n; v += 3) pref[0][v >> 6] |= 1ull << (v & 63), count[0][v] = (uint16_t)(v % 7);
    for (int64_t v = 1; v < n; v += 5) pref[1][v >> 6] |= 1ull << (v & 63), count[1][v] = (uint16_t)(v % 11);
    fs_locality_t sets = {.num_levels = 2, .num_nodes = n, .pref = {pref[0], pref[1]}, .count = {count[0], count[1]}};
    fs_error_t err = {0};
    cr_assert_eq(fs_store_set_locality(st, 0, &sets, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_store_set_locality(st, 2, &sets, &err), FS_OK, "%s", err.msg);
    fs_locality_t fewer = sets;
    fewer.num_levels = 1; /* different sets (one level): their own copy */
    cr_assert_eq(fs_store_set_locality(st, 1, &fewer, &err), FS_OK, "%s", err.msg);

    fs_locality_t got;
    fs_store_locality(st, 0, 4, &got);
    cr_assert_eq(got.s, 4);
    cr_assert_eq(got.num_levels, 2);
    cr_assert_eq(got.num_nodes, n);
    for (int l = 0; l < 2; l++) {
        cr_assert_neq(got.pref[l], pref[l], "the store keeps its own copy");
        cr_assert_arr_eq(got.pref[l], pref[l], (size_t)words * 8);
        cr_assert_arr_eq(got.count[l], count[l], (size_t)n * 2);
        int fd = fs_store_locality_fd(st, 0, l + 1, 0);
        cr_assert_geq(fd, 0);
        cr_assert_eq(fs_store_locality_fd(st, 2, l + 1, 0), fd, "equal sets share one segment");
        cr_assert_neq(fs_store_locality_fd(st, 1, 1, 0), fd, "other sets have their own");
        cr_assert_eq(fcntl(fd, F_GET_SEALS) & F_SEAL_WRITE, F_SEAL_WRITE, "sealed against writing");
        cr_assert_geq(fs_store_locality_fd(st, 0, l + 1, 1), 0);
    }
    cr_assert_eq(fs_store_locality_fd(st, 0, 3, 0), -1, "no level 3");
    cr_assert_eq(fs_store_locality_fd(st, 1, 2, 0), -1);
    cr_assert_eq(fs_store_locality_fd(st, 3, 1, 0), -1, "reader 3 has none");
    fs_store_locality(st, 3, 2, &got);
    cr_assert_eq(got.num_levels, 0);

    /* bad calls */
    cr_assert_eq(fs_store_set_locality(st, 0, &sets, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "already has"), "%s", err.msg);
    cr_assert_eq(fs_store_set_locality(st, 99, &sets, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "reader 99"), "%s", err.msg);
    fs_locality_t bad = sets;
    bad.num_nodes = n + 1;
    cr_assert_eq(fs_store_set_locality(st, 4, &bad, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "cover"), "%s", err.msg);
    bad = sets, bad.num_levels = 0;
    cr_assert_eq(fs_store_set_locality(st, 4, &bad, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "levels"), "%s", err.msg);
    cr_assert_eq(fs_store_set_locality(st, 4, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    bad = sets, bad.pref[1] = NULL;
    cr_assert_eq(fs_store_set_locality(st, 4, &bad, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "Q_2"), "%s", err.msg);
    bad = sets, bad.count[1] = NULL;
    cr_assert_eq(fs_store_set_locality(st, 4, &bad, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "counts on some levels"), "%s", err.msg);
    cr_assert_eq(fs_store_freeze(st, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_store_set_locality(st, 4, &sets, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "frozen"), "%s", err.msg);
    fs_store_locality(st, 2, 1, &got); /* still readable once frozen */
    cr_assert_arr_eq(got.pref[1], pref[1], (size_t)words * 8);
    for (int l = 0; l < 2; l++) free(pref[l]), free(count[l]);
}
