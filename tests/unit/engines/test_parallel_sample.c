/* test_parallel_sample.c — one batch's sampling split over a pool is bit
 * for bit the one-thread batch: every mode, skewed R-MAT (node 0 a hub),
 * int32 and int64 indices, batches that start parallel and batches that
 * switch to the pool mid-request, at 1, 2, 3 and 8 threads, and several
 * requests sharing one pool at once. The one-thread engine is itself held to
 * the naive reference in test_sample.c, so this chain reaches the oracle. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "fs_idmap.h"
#include "fs_pool.h"
#include "fs_rng.h"
#include "fs_sample.h"
#include "gen.h"
#include "test_util.h"

static char *dir;
static fs_dataset_t *rmat;
static float *weights;
static int64_t *wide;          /* the indices as int64 */
static fs_pool_t *pools[4];    /* 1 (NULL), 2, 3, 8 threads */
static const int pool_threads[4] = {1, 2, 3, 8};

static void setup(void)
{
    dir = tu_mkdtemp();
    fs_rmat_opts_t g;
    fs_rmat_defaults(&g);
    g.scale = 14, g.edge_factor = 8, g.dim = 0, g.edges.symmetrize = 1;
    rmat = tu_gen_rmat(dir, "rmat", &g);
    int64_t m = rmat->num_edges;
    weights = malloc(sizeof *weights * (size_t)m);
    wide = malloc(sizeof *wide * (size_t)m);
    for (int64_t e = 0; e < m; e++) { /* skewed weights, one edge in 13 never picked */
        uint64_t x = fs_mix64((uint64_t)e);
        weights[e] = e % 13 == 0 ? 0.0f : (float)((x % 1000) + 1) / 100.0f;
        wide[e] = fs_dataset_neighbor(rmat, e);
    }
    fs_error_t err = {0};
    for (int i = 1; i < 4; i++) cr_assert_eq(fs_pool_create(pool_threads[i], &pools[i], &err), FS_OK);
}

static void teardown(void)
{
    for (int i = 1; i < 4; i++) fs_pool_destroy(pools[i]);
    free(weights);
    free(wide);
    fs_dataset_close(rmat);
    tu_rm_rf(dir);
    free(dir);
}

TestSuite(parallel_sample, .init = setup, .fini = teardown, .timeout = 300);

static fs_csr_view_t view(int i64)
{
    fs_csr_view_t g;
    fs_csr_view_init(&g, rmat->num_nodes, rmat->indptr, i64 ? (const void *)wide : rmat->indices,
                     i64 ? FS_DTYPE_I64 : rmat->index_dtype, weights);
    return g;
}

/* n seeds, node 0 (the hub) and repeats among them. */
static int64_t *seeds_of(int64_t n, uint64_t s)
{
    int64_t *v = malloc(sizeof *v * (size_t)n);
    fs_rng_t r = fs_rng_make(s, 5);
    for (int64_t i = 0; i < n; i++) v[i] = i % 97 == 0 ? 0 : (int64_t)fs_rng_below(&r, (uint64_t)rmat->num_nodes);
    if (n > 3) v[3] = v[1];
    return v;
}

/* A deep copy of a result, to compare after the sampler has moved on. */
typedef struct {
    fs_sample_result_t r;
    int64_t *mem[2 + 4 * FS_MAX_HOPS];
    fs_gather_counters_t topo;
} saved_t;

static const int64_t *keep(saved_t *s, int slot, const int64_t *p, int64_t n)
{
    if (!p) return NULL;
    s->mem[slot] = malloc(sizeof(int64_t) * (size_t)(n + 1));
    memcpy(s->mem[slot], p, sizeof(int64_t) * (size_t)n);
    return s->mem[slot];
}

static void save(saved_t *s, const fs_sample_result_t *r, const fs_gather_counters_t *topo)
{
    memset(s, 0, sizeof *s);
    s->r = *r;
    s->topo = *topo;
    s->r.nodes = keep(s, 0, r->nodes, r->num_nodes);
    s->r.seed_local = keep(s, 1, r->seed_local, r->num_seeds);
    for (int h = 0; h < r->num_hops; h++) {
        fs_block_t *b = &s->r.block[h];
        b->dst_offsets = keep(s, 2 + 4 * h, b->dst_offsets, b->num_dst + 1);
        b->edge_src = keep(s, 3 + 4 * h, b->edge_src, b->num_edges);
        b->edge_dst = keep(s, 4 + 4 * h, b->edge_dst, b->num_edges);
        b->edge_ids = keep(s, 5 + 4 * h, b->edge_ids, b->num_edges);
    }
}

static void drop(saved_t *s)
{
    for (size_t i = 0; i < sizeof s->mem / sizeof *s->mem; i++) free(s->mem[i]);
}

static void same(const fs_sample_result_t *a, const fs_sample_result_t *b, const char *what)
{
    cr_assert_eq(a->num_nodes, b->num_nodes, "%s: nodes", what);
    cr_assert_arr_eq(a->nodes, b->nodes, sizeof(int64_t) * (size_t)a->num_nodes, "%s: node ids", what);
    cr_assert_arr_eq(a->seed_local, b->seed_local, sizeof(int64_t) * (size_t)a->num_seeds, "%s: seeds", what);
    for (int h = 0; h < a->num_hops; h++) {
        const fs_block_t *x = &a->block[h], *y = &b->block[h];
        cr_assert_eq(x->num_edges, y->num_edges, "%s: hop %d edges", what, h);
        cr_assert_eq(x->num_dst, y->num_dst, "%s: hop %d", what, h);
        cr_assert_eq(x->num_src, y->num_src, "%s: hop %d", what, h);
        cr_assert_arr_eq(x->dst_offsets, y->dst_offsets, sizeof(int64_t) * (size_t)(x->num_dst + 1), "%s: hop %d", what, h);
        cr_assert_arr_eq(x->edge_src, y->edge_src, sizeof(int64_t) * (size_t)x->num_edges, "%s: hop %d src", what, h);
        cr_assert_arr_eq(x->edge_dst, y->edge_dst, sizeof(int64_t) * (size_t)x->num_edges, "%s: hop %d", what, h);
        cr_assert_eq(!x->edge_ids, !y->edge_ids);
        if (x->edge_ids)
            cr_assert_arr_eq(x->edge_ids, y->edge_ids, sizeof(int64_t) * (size_t)x->num_edges, "%s: hop %d", what, h);
    }
}

static fs_sample_req_t req_of(int hops, const int *fanout, const fs_sample_mode_t *mode, uint64_t seed)
{
    fs_sample_req_t r = {.num_hops = hops, .seed = seed, .want_edge_ids = 1};
    for (int h = 0; h < hops; h++) r.fanout[h] = fanout[h], r.mode[h] = mode[h];
    return r;
}

/* The request at every pool size equals its one-thread result. */
static void check_all_sizes(fs_csr_view_t *g, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
                            const char *what)
{
    fs_sampler_t *s;
    fs_error_t err = {0};
    cr_assert_eq(fs_sampler_create(&s, &err), FS_OK);
    fs_sample_result_t res;
    fs_gather_counters_t topo = {0};
    cr_assert_eq(fs_sample_cpu(s, g, seeds, n, req, &res, &topo, &err), FS_OK, "%s: %s", what, err.msg);
    saved_t one;
    save(&one, &res, &topo);
    for (int i = 1; i < 4; i++)
        for (int again = 0; again < 2; again++) { /* a second request on the same sampler reuses its workspace */
            fs_sampler_set_pool(s, pools[i]);
            fs_gather_counters_t t = {0};
            cr_assert_eq(fs_sample_cpu(s, g, seeds, n, req, &res, &t, &err), FS_OK, "%s: %s", what, err.msg);
            char label[160];
            snprintf(label, sizeof label, "%s at %d threads", what, pool_threads[i]);
            same(&res, &one.r, label);
            cr_assert_arr_eq(&t, &one.topo, sizeof t, "%s: topology counters", label);
        }
    drop(&one);
    fs_sampler_destroy(s);
}

Test(parallel_sample, every_mode_is_bit_identical_at_1_2_3_8_threads)
{
    static const fs_sample_mode_t modes[4] = {FS_SAMPLE_UNIFORM, FS_SAMPLE_UNIFORM_REPLACE, FS_SAMPLE_WEIGHTED,
                                              FS_SAMPLE_WEIGHTED_REPLACE};
    static const char *names[4] = {"uniform", "uniform+replace", "weighted", "weighted+replace"};
    const int f[3] = {15, 10, 5};
    for (int i64 = 0; i64 < 2; i64++) {
        fs_csr_view_t g = view(i64);
        for (int m = 0; m < 4; m++) {
            fs_sample_mode_t mode[3] = {modes[m], modes[m], modes[m]};
            /* 2048 seeds: parallel from the first hop; 300: the pool joins at hop 1 */
            for (int64_t n = 300; n <= 2048; n += 1748) {
                int64_t *seeds = seeds_of(n, (uint64_t)(n + m));
                fs_sample_req_t r = req_of(3, f, mode, 7 + (uint64_t)m);
                char what[96];
                snprintf(what, sizeof what, "%s, %lld seeds, int%d", names[m], (long long)n, i64 ? 64 : 32);
                check_all_sizes(&g, seeds, n, &r, what);
                free(seeds);
            }
        }
    }
}

Test(parallel_sample, mixed_modes_whole_rows_and_no_edge_ids)
{
    fs_csr_view_t g = view(0);
    int64_t *seeds = seeds_of(600, 11);
    const int all[2] = {FS_FANOUT_ALL, 3};
    const fs_sample_mode_t m1[2] = {FS_SAMPLE_UNIFORM, FS_SAMPLE_WEIGHTED};
    fs_sample_req_t r = req_of(2, all, m1, 3);
    check_all_sizes(&g, seeds, 600, &r, "every neighbour, then weighted");
    const int f[3] = {25, 10, 2};
    const fs_sample_mode_t m2[3] = {FS_SAMPLE_WEIGHTED_REPLACE, FS_SAMPLE_UNIFORM, FS_SAMPLE_UNIFORM_REPLACE};
    r = req_of(3, f, m2, 4);
    r.want_edge_ids = 0;
    check_all_sizes(&g, seeds, 600, &r, "mixed modes without edge ids");
    free(seeds);
}

Test(parallel_sample, small_batches_and_empty_hops)
{
    fs_csr_view_t g = view(0);
    const int f[3] = {15, 10, 5};
    const fs_sample_mode_t m[3] = {FS_SAMPLE_UNIFORM, FS_SAMPLE_UNIFORM, FS_SAMPLE_UNIFORM};
    fs_sample_req_t r = req_of(3, f, m, 1);
    for (int64_t n = 0; n <= 64; n += 16) {
        int64_t *seeds = seeds_of(n > 0 ? n : 1, (uint64_t)n);
        check_all_sizes(&g, seeds, n, &r, "a small batch");
        free(seeds);
    }
    /* a frontier of isolated-or-leaf nodes: later hops shrink to nothing */
    int64_t leaves[4096], k = 0;
    for (int64_t v = rmat->num_nodes - 1; v >= 0 && k < 4096; v--)
        if (rmat->indptr[v + 1] - rmat->indptr[v] <= 1) leaves[k++] = v;
    check_all_sizes(&g, leaves, k, &r, "leaves");
}

/* ---- several requests sharing one pool ---------------------------------- */

typedef struct {
    fs_csr_view_t g;
    const int64_t *seeds;
    int64_t n;
    fs_sample_req_t req;
    const saved_t *want;
    int rounds, bad;
} shared_job_t;

static void *sample_on_shared_pool(void *p)
{
    shared_job_t *j = p;
    fs_sampler_t *s;
    fs_error_t err = {0};
    fs_sampler_create(&s, &err);
    fs_sampler_set_pool(s, pools[2]);
    for (int i = 0; i < j->rounds; i++) {
        fs_sample_result_t res;
        if (fs_sample_cpu(s, &j->g, j->seeds, j->n, &j->req, &res, NULL, &err) != FS_OK ||
            res.num_nodes != j->want->r.num_nodes ||
            memcmp(res.nodes, j->want->r.nodes, sizeof(int64_t) * (size_t)res.num_nodes) ||
            memcmp(res.block[2].edge_src, j->want->r.block[2].edge_src,
                   sizeof(int64_t) * (size_t)res.block[2].num_edges))
            j->bad++;
    }
    fs_sampler_destroy(s);
    return NULL;
}

Test(parallel_sample, requests_sharing_a_busy_pool_get_their_own_results)
{
    enum { JOBS = 4 };
    fs_csr_view_t g = view(0);
    shared_job_t jobs[JOBS];
    saved_t want[JOBS];
    int64_t *seeds[JOBS];
    const int f[3] = {15, 10, 5};
    const fs_sample_mode_t m[3] = {FS_SAMPLE_UNIFORM, FS_SAMPLE_WEIGHTED, FS_SAMPLE_UNIFORM};
    fs_sampler_t *s;
    fs_error_t err = {0};
    fs_sampler_create(&s, &err);
    for (int i = 0; i < JOBS; i++) {
        seeds[i] = seeds_of(1500, 100 + (uint64_t)i);
        jobs[i] = (shared_job_t){.g = g, .seeds = seeds[i], .n = 1500, .req = req_of(3, f, m, (uint64_t)i),
                                 .want = &want[i], .rounds = 6};
        fs_sample_result_t res;
        fs_gather_counters_t t = {0};
        cr_assert_eq(fs_sample_cpu(s, &g, seeds[i], 1500, &jobs[i].req, &res, &t, &err), FS_OK);
        save(&want[i], &res, &t);
    }
    pthread_t tid[JOBS];
    for (int i = 0; i < JOBS; i++) pthread_create(&tid[i], NULL, sample_on_shared_pool, &jobs[i]);
    for (int i = 0; i < JOBS; i++) {
        pthread_join(tid[i], NULL);
        cr_expect_eq(jobs[i].bad, 0, "request %d differed %d times of %d", i, jobs[i].bad, jobs[i].rounds);
        drop(&want[i]);
        free(seeds[i]);
    }
    fs_sampler_destroy(s);
}

/* ---- the id map on its own ------------------------------------------------ */

/* Keys in chunks, probed on every pool size: ids in first-appearance order,
 * checked against a plain search. */
Test(parallel_sample, idmap_gives_first_appearance_ids_across_chunks)
{
    enum { N = 20000, CH = 7 };
    uint64_t *keys = malloc(sizeof *keys * N);
    int64_t *out = malloc(sizeof *out * N), *want = malloc(sizeof *want * N), *first = malloc(sizeof *first * N);
    int64_t *nodes = malloc(sizeof *nodes * N);
    fs_rng_t r = fs_rng_make(9, 9);
    for (int i = 0; i < N; i++) keys[i] = fs_rng_below(&r, 3000) << 40 | fs_rng_below(&r, 4); /* many repeats */
    /* the oracle: a quadratic-free first-appearance numbering by sorting would
     * share too much with the map; a dense table over the 12000 values does not */
    int64_t *dense = malloc(sizeof *dense * 3000 * 4), u = 0;
    for (int i = 0; i < 3000 * 4; i++) dense[i] = -1;
    for (int i = 0; i < N; i++) {
        int64_t k = (int64_t)(keys[i] >> 40) * 4 + (int64_t)(keys[i] & 3);
        if (dense[k] < 0) dense[k] = u++;
        want[i] = dense[k];
    }
    for (int p = 0; p < 4; p++) {
        fs_idmap_t *m = fs_idmap_create();
        fs_idmap_begin(m, pool_threads[p] * 2 - 1);
        int64_t bounds[CH + 1];
        for (int c = 0; c <= CH; c++) bounds[c] = (int64_t)N * c * c / (CH * CH); /* uneven chunks */
        cr_assert_eq(fs_idmap_run_begin(m, CH, 0), 0);
        for (int c = 0; c < CH; c++) cr_assert_eq(fs_idmap_bucket(m, c, keys + bounds[c], bounds[c + 1] - bounds[c]), 0);
        cr_assert_eq(fs_idmap_probe(m, pools[p]), u);
        for (int c = 0; c < CH; c++) {
            int64_t nf = fs_idmap_assign(m, c, out + bounds[c], first);
            for (int64_t j = 0; j < nf; j++) nodes[fs_idmap_chunk_base(m, c) + j] = (int64_t)keys[bounds[c] + first[j]];
        }
        for (int c = 0; c < CH; c++) fs_idmap_resolve(m, c, out + bounds[c]);
        cr_assert_arr_eq(out, want, sizeof(int64_t) * N, "%d partitions", pool_threads[p] * 2 - 1);
        for (int i = 0; i < N; i++) cr_assert_eq(nodes[want[i]], (int64_t)keys[i]);
        /* a second run continues the numbering and knows the first's keys */
        cr_assert_eq(fs_idmap_run_begin(m, 1, u), 0);
        uint64_t more[3] = {keys[5], 5000ULL << 40, keys[5]}; /* 5000: beyond every key above */
        cr_assert_eq(fs_idmap_bucket(m, 0, more, 3), 0);
        cr_assert_eq(fs_idmap_probe(m, pools[p]), 1);
        int64_t o[3];
        cr_assert_eq(fs_idmap_assign(m, 0, o, first), 1);
        fs_idmap_resolve(m, 0, o);
        cr_assert_eq(o[0], want[5]);
        cr_assert_eq(o[1], u);
        cr_assert_eq(o[2], want[5]);
        fs_idmap_destroy(m);
    }
    free(keys), free(out), free(want), free(first), free(nodes), free(dense);
}

/* A routed view reads each row from the part its route names, serial and
 * on the pool: part 1 holds the odd rows, and part 0's copy of them is
 * poisoned (every neighbour shifted, weights reversed), so a row read from
 * the wrong part changes the result. Edge ids stay positions in part 0. */
Test(parallel_sample, routed_views_read_each_row_from_its_part_at_every_pool_size)
{
    int64_t n = rmat->num_nodes, m = rmat->num_edges, rows = 0, e1 = 0;
    const int64_t *ip = rmat->indptr;
    int64_t *ix0 = malloc(sizeof *ix0 * (size_t)m), *ix1 = malloc(sizeof *ix1 * (size_t)m);
    int64_t *ip1 = calloc((size_t)n + 1, sizeof *ip1);
    float *w0 = malloc(sizeof *w0 * (size_t)m), *w1 = malloc(sizeof *w1 * (size_t)m);
    uint64_t *route = malloc(sizeof *route * (size_t)n);
    for (int64_t v = 0; v < n; v++) {
        route[v] = FS_ROUTE(0, v);
        for (int64_t e = ip[v]; e < ip[v + 1]; e++) ix0[e] = wide[e], w0[e] = weights[e];
        if (v % 2 == 0) continue;
        for (int64_t e = ip[v]; e < ip[v + 1]; e++, e1++) {
            ix1[e1] = wide[e], w1[e1] = weights[e];
            ix0[e] = (wide[e] + 1) % n, w0[e] = weights[ip[v + 1] - 1 - (e - ip[v])];
        }
        route[v] = FS_ROUTE(1, rows);
        ip1[++rows] = e1;
    }
    fs_csr_view_t clean = view(1), routed;
    fs_csr_view_init(&routed, n, ip, ix0, FS_DTYPE_I64, w0);
    routed.num_parts = 2;
    routed.part[1] = (fs_csr_part_t){.indptr = ip1, .indices = ix1, .weights = w1, .rows = rows};
    routed.route = route;
    static const fs_sample_mode_t modes[2] = {FS_SAMPLE_UNIFORM, FS_SAMPLE_WEIGHTED};
    const int f[3] = {15, 10, 5};
    int64_t *seeds = seeds_of(2048, 11);
    fs_sampler_t *s;
    fs_error_t err = {0};
    cr_assert_eq(fs_sampler_create(&s, &err), FS_OK);
    for (int k = 0; k < 2; k++) {
        fs_sample_mode_t mode[3] = {modes[k], modes[k], modes[k]};
        fs_sample_req_t req = req_of(3, f, mode, 5);
        fs_sample_result_t res;
        fs_gather_counters_t topo = {0};
        fs_sampler_set_pool(s, NULL);
        cr_assert_eq(fs_sample_cpu(s, &clean, seeds, 2048, &req, &res, &topo, &err), FS_OK, "%s", err.msg);
        saved_t want;
        save(&want, &res, &topo);
        for (int i = 0; i < 4; i++) {
            fs_sampler_set_pool(s, pools[i]);
            cr_assert_eq(fs_sample_cpu(s, &routed, seeds, 2048, &req, &res, NULL, &err), FS_OK, "%s", err.msg);
            char label[96];
            snprintf(label, sizeof label, "routed %s at %d threads", k ? "weighted" : "uniform", pool_threads[i]);
            same(&res, &want.r, label);
        }
        drop(&want);
    }
    fs_sampler_destroy(s);
    free(seeds), free(ix0), free(ix1), free(ip1), free(w0), free(w1), free(route);
}
