/* test_typed_cuda.c — the CUDA typed sampler (fs_typed_sample_cuda,
 * kernels/fs_typed.cu) against the CPU engine (fs_typed_sample_cpu), bit for
 * bit: local ids, blocks, edge ids, batches, times, seed ids.
 *
 * One binary, two suites, two ctest entries (tests/unit/engines/CMakeLists.txt):
 *   typed_cuda  on a real GPU, over both frontier rules, every mode,
 *               disjoint, temporal ('uniform' and 'last') and excluding
 *               requests; without a GPU test_typed_cuda reports itself
 *               skipped (exit 77, the reason printed), as test_cuda does;
 *   typed_sim   test_typed_cuda_sim, FEATSTORE_SIM_GPUS=2: the simulated
 *               path equals the CPU engine and refuses exactly what the
 *               CUDA path refuses, with the same codes and messages. Runs
 *               in every build.
 * The graph is built here: three node types, five edge types with both
 * index widths, with and without edge ids, weights (one in sixteen zero)
 * and times, and hub rows longer than the largest fanout. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs_chunked.h"
#include "fs_device.h"
#include "fs_pool.h"
#include "fs_rng.h"
#include "fs_typed.h"
#include "gpu_skip.h"

#define NT 3
#define NE 5
#define SIM_GPUS 2

/* ---- which machine ------------------------------------------------------ */

/* have_gpu and the skip hook: gpu_skip.h. */

static void gpu_or_skip(void)
{
    fs_error_t err = {0};
    if (!have_gpu(&err)) cr_skip_test("no CUDA device: %s", err.msg);
}

static void simulation_or_skip(void)
{
    if (fs_devices_simulated() == 0) cr_skip_test("run with FEATSTORE_SIM_GPUS=%d (ctest's test_typed_cuda_sim)", SIM_GPUS);
    cr_assert_eq(fs_devices_simulated(), SIM_GPUS, "run with FEATSTORE_SIM_GPUS=%d", SIM_GPUS);
}

/* ---- the graph ---------------------------------------------------------- */

typedef struct {
    int64_t dst, time, id, src;
} edge_t;

typedef struct {
    int64_t count[NT];
    int64_t *ntime[NT];
    fs_typed_etype_t et[NE];
    fs_typed_view_t view;   /* host memory: the CPU engine's */
    fs_typed_view_t dev;    /* the same arrays in device memory */
    fs_typed_etype_t det[NE];
    const int64_t *dntime[NT];
    int64_t *pair_src, *pair_dst; /* edge type 1's first edges: link seeds */
} graph_t;

static fs_rng_t grng;

static int64_t rnd(int64_t n)
{
    return (int64_t)fs_rng_below(&grng, (uint64_t)n);
}

static int cmp_edge(const void *a, const void *b)
{
    const edge_t *x = a, *y = b;
    if (x->dst != y->dst) return x->dst < y->dst ? -1 : 1;
    if (x->time != y->time) return x->time < y->time ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* A CSC of m edges (src, dst) toward dst, times non-decreasing per row. */
static void build_etype(graph_t *g, int e, int st, int dt, const int64_t *src, const int64_t *dst, int64_t m, int wide,
                        int ids, int weighted, int timed, const char *name)
{
    edge_t *ed = malloc((size_t)m * sizeof *ed);
    for (int64_t i = 0; i < m; i++) ed[i] = (edge_t){dst[i], timed ? rnd(1000) : 0, i, src[i]};
    qsort(ed, (size_t)m, sizeof *ed, cmp_edge);
    int64_t nd = g->count[dt], *indptr = calloc((size_t)nd + 1, 8), *eid = ids ? malloc((size_t)m * 8) : NULL;
    int64_t *tm = timed ? malloc((size_t)m * 8) : NULL;
    void *ind = malloc((size_t)m * (wide ? 8 : 4));
    float *w = weighted ? malloc((size_t)m * 4) : NULL;
    for (int64_t p = 0; p < m; p++) {
        indptr[ed[p].dst + 1]++;
        if (wide) ((int64_t *)ind)[p] = ed[p].src;
        else ((int32_t *)ind)[p] = (int32_t)ed[p].src;
        if (eid) eid[p] = ed[p].id * 7 + 3;
        if (tm) tm[p] = ed[p].time;
        if (w) {
            uint64_t h = fs_mix64((uint64_t)(e * 1000003 + p));
            w[p] = (h & 15) == 0 ? 0.0f : (float)((double)(h >> 40) / (double)(1 << 24) * 1e3 + 1e-3);
        }
    }
    for (int64_t d = 0; d < nd; d++) indptr[d + 1] += indptr[d];
    free(ed);
    g->et[e] = (fs_typed_etype_t){.src_type = st, .dst_type = dt, .name = name, .num_edges = m, .indptr = indptr,
                                  .indices = ind, .index_dtype = wide ? FS_DTYPE_I64 : FS_DTYPE_I32, .edge_ids = eid,
                                  .weights = w, .time = tm, .reverse = -1};
}

/* m random edges, a tenth of them onto the first four destinations (hubs
 * with hundreds of edges), the rest skewed toward low ids. */
static void random_pairs(const graph_t *g, int st, int dt, int64_t m, int64_t **src, int64_t **dst)
{
    *src = malloc((size_t)m * 8), *dst = malloc((size_t)m * 8);
    for (int64_t i = 0; i < m; i++) {
        (*src)[i] = rnd(g->count[st]);
        (*dst)[i] = rnd(10) == 0 ? rnd(4) : rnd(1 + rnd(g->count[dt]));
    }
}

static void *to_device(int device, const void *host, size_t bytes)
{
    void *p;
    fs_error_t err = {0};
    if (!host) return NULL;
    cr_assert_eq(fs_cuda_alloc_device(device, bytes, &p, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_cuda_copy(p, host, bytes, &err), FS_OK, "%s", err.msg);
    return p;
}

/* Types A (3000), B (2000), C (300). Edge types: 0 (A, cites, A) int32, no
 * ids, weighted, timed; 1 (B, writes, A) int64, ids, weighted, timed; 2
 * (A, written_by, B) its reverse, int32; 3 (C, at, A) int32, neither weights
 * nor times; 4 (A, in, C) int64, ids, weighted, timed. */
static graph_t *make_graph(int device)
{
    graph_t *g = calloc(1, sizeof *g);
    grng = fs_rng_make(2024, 7);
    static const char *tnames[NT] = {"A", "B", "C"};
    static const char *enames[NE] = {"(A, cites, A)", "(B, writes, A)", "(A, written_by, B)", "(C, at, A)",
                                     "(A, in, C)"};
    int64_t counts[NT] = {3000, 2000, 300};
    for (int t = 0; t < NT; t++) {
        g->count[t] = counts[t];
        g->ntime[t] = malloc((size_t)counts[t] * 8);
        for (int64_t v = 0; v < counts[t]; v++) g->ntime[t][v] = rnd(1000);
    }
    static const struct { int st, dt; int64_t m; int wide, ids, weighted, timed; } spec[NE] = {
        {0, 0, 40000, 0, 0, 1, 1}, {1, 0, 20000, 1, 1, 1, 1}, {0, 1, 20000, 0, 1, 1, 1},
        {2, 0, 3000, 0, 0, 0, 0},  {0, 2, 10000, 1, 1, 1, 1}};
    int64_t *src1 = NULL, *dst1 = NULL;
    for (int e = 0; e < NE; e++) {
        int64_t *src, *dst;
        if (e == 2) src = dst1, dst = src1; /* edge type 1 reversed */
        else random_pairs(g, spec[e].st, spec[e].dt, spec[e].m, &src, &dst);
        build_etype(g, e, spec[e].st, spec[e].dt, src, dst, spec[e].m, spec[e].wide, spec[e].ids, spec[e].weighted,
                    spec[e].timed, enames[e]);
        if (e == 1) src1 = src, dst1 = dst;
        else if (e != 2) free(src), free(dst);
    }
    g->pair_src = src1, g->pair_dst = dst1;
    g->et[1].reverse = 2, g->et[2].reverse = 1;
    g->view = (fs_typed_view_t){.num_node_types = NT, .count = g->count, .type_name = tnames,
                                .node_time = (const int64_t *const *)g->ntime, .num_edge_types = NE, .etype = g->et};
    if (device < 0) return g; /* host only */
    for (int t = 0; t < NT; t++) g->dntime[t] = to_device(device, g->ntime[t], (size_t)g->count[t] * 8);
    for (int e = 0; e < NE; e++) {
        const fs_typed_etype_t *h = &g->et[e];
        int64_t m = h->num_edges;
        g->det[e] = *h;
        g->det[e].indptr = to_device(device, h->indptr, (size_t)(g->count[h->dst_type] + 1) * 8);
        g->det[e].indices = to_device(device, h->indices, (size_t)m * (h->index_dtype == FS_DTYPE_I64 ? 8 : 4));
        g->det[e].edge_ids = to_device(device, h->edge_ids, (size_t)m * 8);
        g->det[e].weights = to_device(device, h->weights, (size_t)m * 4);
        g->det[e].time = to_device(device, h->time, (size_t)m * 8);
    }
    g->dev = g->view;
    g->dev.node_time = g->dntime;
    g->dev.etype = g->det;
    return g;
}

static void free_graph(graph_t *g)
{
    for (int e = 0; e < NE; e++) {
        fs_cuda_free_device((void *)g->det[e].indptr), fs_cuda_free_device((void *)g->det[e].indices);
        fs_cuda_free_device((void *)g->det[e].edge_ids), fs_cuda_free_device((void *)g->det[e].weights);
        fs_cuda_free_device((void *)g->det[e].time);
        free((void *)g->et[e].indptr), free((void *)g->et[e].indices), free((void *)g->et[e].edge_ids);
        free((void *)g->et[e].weights), free((void *)g->et[e].time);
    }
    for (int t = 0; t < NT; t++) fs_cuda_free_device((void *)g->dntime[t]), free(g->ntime[t]);
    free(g->pair_src), free(g->pair_dst);
    free(g);
}

/* ---- the requests ------------------------------------------------------- */

#define MAXH 3
#define NPAIRS 48

typedef struct {
    const char *what;
    int hops;
    fs_sample_mode_t mode[MAXH];
    int fanout[NE][MAXH];  /* per edge type, per hop */
    fs_frontier_t frontier;
    int disjoint;
    fs_temporal_t temporal;
    int strict;
    int64_t window;
    int excl;              /* exclude edge type 1's first NPAIRS edges (and reverses), and a hub's sources */
} case_t;

#define U FS_SAMPLE_UNIFORM
#define R FS_SAMPLE_UNIFORM_REPLACE
#define W FS_SAMPLE_WEIGHTED
#define WR FS_SAMPLE_WEIGHTED_REPLACE
#define ALL FS_FANOUT_ALL

/* A case: name, hops, modes, fanouts per edge type, then its options. */
#define CASE(w, h, m, f, ...) {.what = w, .hops = h, .mode = m, .fanout = f, __VA_ARGS__}
#define M(...) {__VA_ARGS__}
#define F(...) {__VA_ARGS__}

static const case_t cases[] = {
    CASE("uniform, PyG frontier", 3, M(U, U, U), F({10, 5, 3}, {4, 4, 2}, {6, 3, 2}, {ALL, 2, 0}, {3, 3, 3})),
    CASE("replace then uniform, DGL frontier", 2, M(R, U), F({4, 6}, {ALL, 3}, {6, 2}, {2, ALL}, {0, 2}),
         .frontier = FS_FRONTIER_ALL),
    CASE("weighted, both kinds", 2, M(W, WR), F({15, 5}, {256, 4}, {8, 3}, {0, 0}, {5, 7})),
    CASE("weighted over whole hubs, DGL frontier", 2, M(WR, W), F({256, 9}, {30, 2}, {0, 4}, {0, 0}, {200, 1}),
         .frontier = FS_FRONTIER_ALL),
    CASE("disjoint trees", 2, M(U, R), F({5, 3}, {3, 2}, {4, 2}, {2, 2}, {2, 2}), .disjoint = 1),
    CASE("disjoint, DGL frontier, weighted", 2, M(W, U), F({5, 3}, {3, ALL}, {4, 2}, {0, 2}, {2, 2}),
         .frontier = FS_FRONTIER_ALL, .disjoint = 1),
    CASE("temporal uniform, strict, window", 2, M(U, U), F({8, 4}, {4, 3}, {4, 2}, {0, 0}, {3, 3}),
         .temporal = FS_TEMPORAL_UNIFORM, .strict = 1, .window = 300),
    CASE("temporal last, DGL frontier", 2, M(U, U), F({5, 3}, {ALL, 2}, {3, 3}, {0, 0}, {2, ALL}),
         .frontier = FS_FRONTIER_ALL, .temporal = FS_TEMPORAL_LAST),
    CASE("temporal, weighted", 2, M(W, WR), F({6, 3}, {3, 3}, {3, 2}, {0, 0}, {2, 2}), .temporal = FS_TEMPORAL_UNIFORM),
    CASE("exclusions, uniform", 2, M(U, U), F({20, 5}, {10, 4}, {10, 3}, {ALL, 2}, {5, 2}), .excl = 1),
    CASE("exclusions, replace all", 2, M(R, R), F({ALL, 2}, {ALL, 3}, {6, 2}, {2, 2}, {3, 1}), .excl = 1),
    CASE("exclusions, weighted", 2, M(W, WR), F({30, 4}, {12, 3}, {9, 3}, {0, 0}, {4, 4}), .excl = 1),
    CASE("exclusions, temporal last, disjoint", 2, M(U, U), F({6, 3}, {ALL, 2}, {5, 2}, {0, 0}, {2, 2}),
         .temporal = FS_TEMPORAL_LAST, .excl = 1),
    CASE("exclusions, temporal weighted, window", 2, M(WR, W), F({7, 3}, {5, 2}, {5, 2}, {0, 0}, {3, 2}),
         .temporal = FS_TEMPORAL_UNIFORM, .window = 500, .excl = 1),
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

typedef struct {
    int fan[NE * MAXH];
    fs_typed_req_t req;
    int64_t a_ids[300], a_batch[300], a_time[300], b_ids[NPAIRS + 16], c_ids[20], a2_ids[40];
    fs_typed_seeds_t groups[4];
    int ng;
    fs_typed_exclude_t x[2 * NPAIRS + 1024];
    int64_t nx;
} built_t;

/* Seeds: A (the link pairs' destinations, then random, with duplicates;
 * batches given in pairs, times given), B (the pairs' sources, numbered
 * batches, node times), C, and A again. */
static void build(const graph_t *g, const case_t *c, uint64_t seed, built_t *b)
{
    memset(b, 0, sizeof *b);
    for (int e = 0; e < NE; e++)
        for (int h = 0; h < c->hops; h++) b->fan[e * c->hops + h] = c->fanout[e][h];
    b->req = (fs_typed_req_t){.num_hops = c->hops, .fanout = b->fan, .seed = seed, .want_edge_ids = seed % 2 == 0,
                              .frontier = c->frontier, .disjoint = c->disjoint, .temporal = c->temporal,
                              .strict = c->strict, .window = c->window};
    memcpy(b->req.mode, c->mode, sizeof c->mode);
    fs_rng_t r = fs_rng_make(seed, 99);
    for (int i = 0; i < 300; i++) {
        b->a_ids[i] = i < NPAIRS ? g->pair_dst[i] : i % 37 == 0 ? b->a_ids[i / 2] : (int64_t)fs_rng_below(&r, 3000);
        b->a_batch[i] = i / 2;
        b->a_time[i] = 200 + (int64_t)fs_rng_below(&r, 800);
    }
    for (int i = 0; i < NPAIRS + 16; i++) b->b_ids[i] = i < NPAIRS ? g->pair_src[i] : (int64_t)fs_rng_below(&r, 2000);
    for (int i = 0; i < 20; i++) b->c_ids[i] = (int64_t)fs_rng_below(&r, 300);
    for (int i = 0; i < 40; i++) b->a2_ids[i] = i < 4 ? i : (int64_t)fs_rng_below(&r, 3000); /* the hubs too */
    b->groups[0] = (fs_typed_seeds_t){.type = 0, .count = 300, .ids = b->a_ids, .batch = b->a_batch, .time = b->a_time};
    b->groups[1] = (fs_typed_seeds_t){.type = 1, .count = NPAIRS + 16, .ids = b->b_ids};
    b->groups[2] = (fs_typed_seeds_t){.type = 2, .count = 20, .ids = b->c_ids};
    b->groups[3] = (fs_typed_seeds_t){.type = 0, .count = 40, .ids = b->a2_ids};
    b->ng = 4;
    if (!c->excl) return;
    b->nx = fs_link_exclusions(&g->view, 1, g->pair_src, g->pair_dst, NPAIRS, b->x);
    /* and half of hub 1's sources under (A, cites, A), some twice */
    const fs_typed_etype_t *et = &g->et[0];
    int64_t cap = (int64_t)(sizeof b->x / sizeof b->x[0]) - 1;
    for (int64_t p = et->indptr[1]; p < et->indptr[2] && b->nx < cap; p += 2)
        b->x[b->nx++] = (fs_typed_exclude_t){0, 1, ((const int32_t *)et->indices)[p]};
    b->x[b->nx] = b->x[b->nx - 1];
    b->nx++;
}

/* ---- comparing results -------------------------------------------------- */

static void same_array(const int64_t *x, const int64_t *y, int64_t n, const char *what, const char *name, int i)
{
    if (n == 0) return;
    cr_assert((x == NULL) == (y == NULL), "%s: %s %d: one result has %s, the other not", name, what, i, what);
    if (!x) return;
    for (int64_t j = 0; j < n; j++)
        cr_assert_eq(x[j], y[j], "%s: %s %d differs at %lld: %lld vs %lld", name, what, i, (long long)j,
                     (long long)x[j], (long long)y[j]);
}

static void same_result(const fs_typed_result_t *x, const fs_typed_result_t *y, const built_t *b, const char *name)
{
    cr_assert_eq(x->num_hops, y->num_hops, "%s", name);
    cr_assert_eq(x->num_node_types, y->num_node_types, "%s", name);
    cr_assert_eq(x->num_edge_types, y->num_edge_types, "%s", name);
    cr_assert_eq(x->num_groups, y->num_groups, "%s", name);
    for (int t = 0; t < x->num_node_types; t++) {
        const fs_typed_nodes_t *a = &x->type[t], *c = &y->type[t];
        cr_assert_eq(a->num_nodes, c->num_nodes, "%s: type %d: %lld vs %lld nodes", name, t, (long long)a->num_nodes,
                     (long long)c->num_nodes);
        for (int h = 0; h <= x->num_hops; h++) cr_assert_eq(a->count_after[h], c->count_after[h], "%s: type %d", name, t);
        same_array(a->nodes, c->nodes, a->num_nodes, "nodes of type", name, t);
        same_array(a->batch, c->batch, a->num_nodes, "batches of type", name, t);
        same_array(a->time, c->time, a->num_nodes, "times of type", name, t);
    }
    for (int i = 0; i < x->num_hops * x->num_edge_types; i++) {
        const fs_block_t *a = &x->block[i], *c = &y->block[i];
        cr_assert_eq(a->num_dst, c->num_dst, "%s: block %d", name, i);
        cr_assert_eq(a->num_src, c->num_src, "%s: block %d", name, i);
        cr_assert_eq(a->num_edges, c->num_edges, "%s: block %d: %lld vs %lld edges", name, i,
                     (long long)a->num_edges, (long long)c->num_edges);
        same_array(a->dst_offsets, c->dst_offsets, a->num_dst + 1, "offsets of block", name, i);
        same_array(a->edge_dst, c->edge_dst, a->num_edges, "edge_dst of block", name, i);
        same_array(a->edge_src, c->edge_src, a->num_edges, "edge_src of block", name, i);
        same_array(a->edge_ids, c->edge_ids, a->num_edges, "edge ids of block", name, i);
    }
    for (int i = 0; i < b->ng; i++)
        same_array(x->seed_local[i], y->seed_local[i], b->groups[i].count, "seed local ids of group", name, i);
}

/* Every case, twice over seeds, on `device`: the CUDA entry point against
 * the CPU engine. Returns how many edges were compared (a request that
 * samples nothing proves nothing). */
static int64_t compare_all(const graph_t *g, int device)
{
    fs_typed_sampler_t *cpu, *dev;
    fs_error_t err = {0};
    cr_assert_eq(fs_typed_sampler_create(&cpu, &err), FS_OK);
    cr_assert_eq(fs_typed_sampler_create(&dev, &err), FS_OK);
    int64_t edges = 0;
    built_t *b = malloc(sizeof *b);
    fs_pool_t *pool; /* seed 2: the CPU engine with every pass split over 3 threads (fs_chunked.h) */
    cr_assert_eq(fs_pool_create(3, &pool, &err), FS_OK);
    for (int q = 0; q < NCASES; q++)
        for (uint64_t seed = 1; seed <= 2; seed++) {
            build(g, &cases[q], seed * 1000 + (uint64_t)q, b);
            fs_typed_result_t x, y;
            fs_typed_sampler_set_pool(cpu, seed == 2 ? pool : NULL);
            fs_chunk_parallel_min = seed == 2 ? 1 : FS_CHUNK_PARALLEL_MIN;
            cr_assert_eq(fs_typed_sample_cpu(cpu, &g->view, &b->req, b->groups, b->ng, b->x, b->nx, &x, &err), FS_OK,
                         "%s: %s", cases[q].what, err.msg);
            fs_chunk_parallel_min = FS_CHUNK_PARALLEL_MIN;
            cr_assert_eq(fs_typed_sample_cuda(dev, device, &g->dev, &b->req, b->groups, b->ng, b->x, b->nx, &y, &err),
                         FS_OK, "%s: %s", cases[q].what, err.msg);
            same_result(&x, &y, b, cases[q].what);
            for (int i = 0; i < x.num_hops * x.num_edge_types; i++) edges += x.block[i].num_edges;
        }
    free(b);
    fs_typed_sampler_destroy(cpu), fs_typed_sampler_destroy(dev);
    fs_pool_destroy(pool);
    return edges;
}

/* What the CPU engine takes and the CUDA path does not: FS_ERR_UNSUPPORTED
 * naming the edge type and hop; a device that is not there; and what
 * neither takes, refused with the CPU engine's own message. */
static void refusals(const graph_t *g, int device, int missing_device)
{
    fs_typed_sampler_t *cpu, *dev;
    fs_error_t err = {0}, cerr = {0};
    cr_assert_eq(fs_typed_sampler_create(&cpu, &err), FS_OK);
    cr_assert_eq(fs_typed_sampler_create(&dev, &err), FS_OK);
    built_t *b = malloc(sizeof *b);
    fs_typed_result_t x, y;
    build(g, &cases[2], 5, b); /* weighted */
    b->fan[1 * 2 + 1] = ALL;   /* (B, writes, A) at hop 1 */
    cr_assert_eq(fs_typed_sample_cpu(cpu, &g->view, &b->req, b->groups, b->ng, NULL, 0, &x, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_typed_sample_cuda(dev, device, &g->dev, &b->req, b->groups, b->ng, NULL, 0, &y, &err),
                 FS_ERR_UNSUPPORTED);
    cr_assert_str_eq(err.msg, "typed sample (CUDA): (B, writes, A) hop 1: weighted sampling with fanout -1 (all) runs "
                     "on the CPU engine");
    build(g, &cases[0], 5, b);
    b->fan[4 * 3 + 2] = 257; /* (A, in, C) at hop 2 */
    cr_assert_eq(fs_typed_sample_cpu(cpu, &g->view, &b->req, b->groups, b->ng, NULL, 0, &x, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_typed_sample_cuda(dev, device, &g->dev, &b->req, b->groups, b->ng, NULL, 0, &y, &err),
                 FS_ERR_UNSUPPORTED);
    cr_assert_str_eq(err.msg, "typed sample (CUDA): (A, in, C) hop 2: fanout 257 is over 256");
    b->fan[4 * 3 + 2] = 256;
    cr_assert_eq(fs_typed_sample_cuda(dev, missing_device, &g->dev, &b->req, b->groups, b->ng, NULL, 0, &y, &err),
                 FS_ERR_NO_DEVICE, "%s", err.msg);
    b->a_ids[7] = 3000; /* outside A */
    cr_assert_eq(fs_typed_sample_cpu(cpu, &g->view, &b->req, b->groups, b->ng, NULL, 0, &x, &cerr),
                 FS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fs_typed_sample_cuda(dev, device, &g->dev, &b->req, b->groups, b->ng, NULL, 0, &y, &err),
                 FS_ERR_INVALID_ARGUMENT);
    cr_assert_str_eq(err.msg, cerr.msg);
    free(b);
    fs_typed_sampler_destroy(cpu), fs_typed_sampler_destroy(dev);
}

/* ---- on a GPU ----------------------------------------------------------- */

Test(typed_cuda, matches_the_cpu_engine_bit_for_bit)
{
    gpu_or_skip();
    graph_t *g = make_graph(0);
    cr_assert_gt(compare_all(g, 0), 10000);
    free_graph(g);
}

Test(typed_cuda, refuses_what_the_simulation_refuses)
{
    gpu_or_skip();
    fs_devices_t d;
    fs_error_t err = {0};
    cr_assert_eq(fs_devices_query(&d, &err), FS_OK, "%s", err.msg);
    graph_t *g = make_graph(0);
    refusals(g, 0, d.count);
    free_graph(g);
}

/* One sampler for CPU and CUDA calls in turn: each result is the one a
 * fresh sampler gives, whatever the workspace held before. */
Test(typed_cuda, shares_a_sampler_with_the_cpu_engine)
{
    gpu_or_skip();
    graph_t *g = make_graph(0);
    fs_typed_sampler_t *mixed, *fresh;
    fs_error_t err = {0};
    cr_assert_eq(fs_typed_sampler_create(&mixed, &err), FS_OK);
    built_t *b = malloc(sizeof *b);
    for (int q = 0; q < NCASES; q++) {
        build(g, &cases[q], 77 + (uint64_t)q, b);
        fs_typed_result_t x, y;
        cr_assert_eq(fs_typed_sampler_create(&fresh, &err), FS_OK);
        cr_assert_eq(fs_typed_sample_cpu(fresh, &g->view, &b->req, b->groups, b->ng, b->x, b->nx, &x, &err), FS_OK);
        fs_status_t st = q % 2 ? fs_typed_sample_cuda(mixed, 0, &g->dev, &b->req, b->groups, b->ng, b->x, b->nx, &y, &err)
                               : fs_typed_sample_cpu(mixed, &g->view, &b->req, b->groups, b->ng, b->x, b->nx, &y, &err);
        cr_assert_eq(st, FS_OK, "%s: %s", cases[q].what, err.msg);
        same_result(&x, &y, b, cases[q].what);
        fs_typed_sampler_destroy(fresh);
    }
    free(b);
    fs_typed_sampler_destroy(mixed);
    free_graph(g);
}

/* ---- one batch over a pool (every build; test_typed_parallel) ------------
 *
 * Every case above, on the CPU engine with its passes split over pools of
 * 2, 3 and 8 threads, against the same engine on one thread: with the
 * default threshold (small passes serial, large ones on the pool, requests
 * switching mid-way) and with every pass on the pool. Then link batches with
 * negatives, binary and triplet, likewise. */

static fs_pool_t *par_pool[3];
static const int par_threads[3] = {2, 3, 8};

static void pools_up(void)
{
    fs_error_t err = {0};
    for (int i = 0; i < 3; i++) cr_assert_eq(fs_pool_create(par_threads[i], &par_pool[i], &err), FS_OK);
}

static void pools_down(void)
{
    for (int i = 0; i < 3; i++) fs_pool_destroy(par_pool[i]);
    fs_chunk_parallel_min = FS_CHUNK_PARALLEL_MIN;
}

TestSuite(typed_parallel, .init = pools_up, .fini = pools_down, .timeout = 300);

Test(typed_parallel, every_case_is_bit_identical_at_1_2_3_8_threads)
{
    graph_t *g = make_graph(-1);
    fs_typed_sampler_t *one, *par;
    fs_error_t err = {0};
    cr_assert_eq(fs_typed_sampler_create(&one, &err), FS_OK);
    cr_assert_eq(fs_typed_sampler_create(&par, &err), FS_OK);
    built_t *b = malloc(sizeof *b);
    int64_t edges = 0;
    for (int q = 0; q < NCASES; q++)
        for (uint64_t seed = 1; seed <= 2; seed++) {
            build(g, &cases[q], seed * 1000 + (uint64_t)q, b);
            fs_typed_result_t x, y;
            fs_chunk_parallel_min = FS_CHUNK_PARALLEL_MIN;
            cr_assert_eq(fs_typed_sample_cpu(one, &g->view, &b->req, b->groups, b->ng, b->x, b->nx, &x, &err), FS_OK,
                         "%s: %s", cases[q].what, err.msg);
            for (int i = 0; i < x.num_hops * x.num_edge_types; i++) edges += x.block[i].num_edges;
            for (int pi = 0; pi < 3; pi++)
                for (int every = 0; every < 2; every++) {
                    fs_chunk_parallel_min = every ? 1 : FS_CHUNK_PARALLEL_MIN;
                    fs_typed_sampler_set_pool(par, par_pool[pi]);
                    cr_assert_eq(fs_typed_sample_cpu(par, &g->view, &b->req, b->groups, b->ng, b->x, b->nx, &y, &err),
                                 FS_OK, "%s: %s", cases[q].what, err.msg);
                    char name[160];
                    snprintf(name, sizeof name, "%s at %d threads%s", cases[q].what, par_threads[pi],
                             every ? ", every pass on the pool" : "");
                    same_result(&x, &y, b, name);
                }
        }
    cr_assert_gt(edges, 10000);
    free(b);
    fs_typed_sampler_destroy(one), fs_typed_sampler_destroy(par);
    free_graph(g);
}

static void same_labels(const fs_link_result_t *x, const fs_link_result_t *y, const char *name)
{
    cr_assert_eq(x->num_labels, y->num_labels, "%s", name);
    same_array(x->label_src, y->label_src, x->num_labels, "label sources", name, 0);
    same_array(x->label_dst, y->label_dst, x->num_labels, "label destinations", name, 0);
    same_array(x->label, y->label, x->num_labels, "labels", name, 0);
    cr_assert_eq(x->num_neg_per_src, y->num_neg_per_src, "%s", name);
    int64_t k = x->num_neg_per_src;
    same_array(x->dst_neg_index, y->dst_neg_index, x->src_index ? NPAIRS * k : 0, "negatives", name, 0);
}

Test(typed_parallel, link_batches_with_negatives_are_bit_identical)
{
    graph_t *g = make_graph(-1);
    fs_typed_sampler_t *one, *par;
    fs_error_t err = {0};
    cr_assert_eq(fs_typed_sampler_create(&one, &err), FS_OK);
    cr_assert_eq(fs_typed_sampler_create(&par, &err), FS_OK);
    int fan[NE * 2] = {12, 6, 8, 4, 8, 4, ALL, 0, 4, 2}; /* (C, at, A) has no weights: not at the weighted hop */
    static const fs_neg_mode_t negs[2] = {FS_NEG_BINARY, FS_NEG_TRIPLET};
    built_t *b = malloc(sizeof *b);
    for (int n = 0; n < 2; n++)
        for (int temporal = 0; temporal < 2; temporal++) {
            fan[6] = temporal ? 0 : ALL; /* (C, at, A) has no times either */
            fs_typed_req_t req = {.num_hops = 2, .fanout = fan, .seed = 9 + (uint64_t)n, .want_edge_ids = 1,
                                  .temporal = temporal ? FS_TEMPORAL_UNIFORM : FS_TEMPORAL_OFF};
            req.mode[0] = FS_SAMPLE_UNIFORM, req.mode[1] = FS_SAMPLE_WEIGHTED;
            fs_typed_link_t link = {.etype = 1, .count = NPAIRS, .src = g->pair_src, .dst = g->pair_dst,
                                    .neg = negs[n], .amount = n ? 3 : 1.5, .neg_weighted = n, .strict = 1,
                                    .exclude_seed_edges = 1};
            fs_link_result_t x, y;
            fs_chunk_parallel_min = FS_CHUNK_PARALLEL_MIN;
            cr_assert_eq(fs_link_sample_cpu(one, &g->view, &req, &link, &x, &err), FS_OK, "%s", err.msg);
            for (int pi = 0; pi < 3; pi++) {
                fs_chunk_parallel_min = 1;
                fs_typed_sampler_set_pool(par, par_pool[pi]);
                cr_assert_eq(fs_link_sample_cpu(par, &g->view, &req, &link, &y, &err), FS_OK, "%s", err.msg);
                char name[96];
                snprintf(name, sizeof name, "link %s%s at %d threads", n ? "triplet" : "binary",
                         temporal ? ", temporal" : "", par_threads[pi]);
                b->ng = x.sub.num_groups; /* seeds: the link's own groups */
                for (int i = 0; i < b->ng; i++) b->groups[i].count = 0;
                same_result(&x.sub, &y.sub, b, name);
                same_labels(&x, &y, name);
            }
        }
    free(b);
    fs_typed_sampler_destroy(one), fs_typed_sampler_destroy(par);
    free_graph(g);
}

/* ---- on simulated GPUs (every build) ------------------------------------- */

Test(typed_sim, equals_the_cpu_engine)
{
    simulation_or_skip();
    graph_t *g = make_graph(1);
    cr_assert_gt(compare_all(g, 1), 10000);
    free_graph(g);
}

Test(typed_sim, refuses_what_the_gpu_refuses)
{
    simulation_or_skip();
    graph_t *g = make_graph(0);
    refusals(g, 0, SIM_GPUS);
    free_graph(g);
}
