/* oracle_fixture.c — see oracle_fixture.h. */
#include "oracle_fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the oracle's own random numbers: xoshiro256** seeded by SplitMix64 ---- */

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

orng_t orng(uint64_t seed)
{
    orng_t r;
    for (int i = 0; i < 4; i++) r.s[i] = splitmix(&seed);
    return r;
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t onext(orng_t *r)
{
    uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0], s[3] ^= s[1], s[1] ^= s[2], s[0] ^= s[3], s[2] ^= t, s[3] = rotl(s[3], 45);
    return out;
}

/* Uniform in [0, n), exactly: rejection below 2^64 mod n. */
int64_t obelow(orng_t *r, int64_t n)
{
    uint64_t un = (uint64_t)n, lim = (0 - un) % un, x;
    do x = onext(r);
    while (x < lim);
    return (int64_t)(x % un);
}

double ounit(orng_t *r)
{
    return (double)(onext(r) >> 11) * 0x1p-53;
}

/* ---- graphs ------------------------------------------------------------------ */

static void og_init(og_t *g, const char *name, int64_t n, int weighted)
{
    memset(g, 0, sizeof *g);
    g->name = name, g->n = n, g->cap = 4096;
    g->ip = calloc((size_t)n + 1, sizeof *g->ip);
    g->ix64 = malloc(sizeof *g->ix64 * (size_t)g->cap);
    g->w = weighted ? malloc(sizeof *g->w * (size_t)g->cap) : NULL;
}

static void og_add(og_t *g, int64_t nb, float w)
{
    if (g->m == g->cap) {
        g->cap *= 2;
        g->ix64 = realloc(g->ix64, sizeof *g->ix64 * (size_t)g->cap);
        if (g->w) g->w = realloc(g->w, sizeof *g->w * (size_t)g->cap);
    }
    g->ix64[g->m] = nb;
    if (g->w) g->w[g->m] = w;
    g->m++;
}

static void og_end_row(og_t *g)
{
    g->ip[++g->rows] = g->m;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void og_finish(og_t *g)
{
    cr_assert_eq(g->rows, g->n, "%s: expected %lld rows, built %lld", g->name, (long long)g->n, (long long)g->rows);
    g->ix32 = malloc(sizeof *g->ix32 * (size_t)(g->m + 1));
    g->sorted = malloc(sizeof *g->sorted * (size_t)(g->m + 1));
    for (int64_t e = 0; e < g->m; e++) {
        cr_assert(g->ix64[e] >= 0 && g->ix64[e] < g->n, "%s: expected neighbours in [0, %lld), found %lld", g->name,
                  (long long)g->n, (long long)g->ix64[e]);
        g->ix32[e] = (int32_t)g->ix64[e], g->sorted[e] = g->ix64[e];
    }
    for (int64_t v = 0; v < g->n; v++) qsort(g->sorted + g->ip[v], (size_t)(g->ip[v + 1] - g->ip[v]), 8, cmp_i64);
}

static void og_free(og_t *g)
{
    free(g->ip), free(g->ix64), free(g->sorted), free(g->ix32), free(g->w);
}

/* hubs (3,000 nodes): 0 -> 1..1000 (degree 1000), 1 -> 300 distinct random
 * nodes, 2..6 of degree 3, 10, 11, 12, 26 (below, at and just above fanouts
 * 10 and 25), 7 -> {7, 9, 9, 9, 8, 7, 0} (self-loop, multi-edges), 8
 * isolated, 9 -> {0}; the rest 0..6 random neighbours (repeats allowed). */
static void build_hubs(og_t *g)
{
    orng_t r = orng(0x68756273);
    og_init(g, "hubs", 3000, 0);
    static const int64_t small_lo[5] = {10, 20, 30, 41, 60}, small_deg[5] = {3, 10, 11, 12, 26};
    static const int64_t row7[7] = {7, 9, 9, 9, 8, 7, 0};
    int64_t *perm = malloc(sizeof *perm * 2998);
    for (int64_t v = 0; v < g->n; v++) {
        if (v == 0) {
            for (int64_t i = 1; i <= 1000; i++) og_add(g, i, 1);
        } else if (v == 1) {
            for (int64_t i = 0; i < 2998; i++) perm[i] = i + 2;
            for (int64_t i = 0; i < 300; i++) {
                int64_t j = i + obelow(&r, 2998 - i), x = perm[j];
                perm[j] = perm[i], perm[i] = x;
                og_add(g, x, 1);
            }
        } else if (v <= 6) {
            for (int64_t i = 0; i < small_deg[v - 2]; i++) og_add(g, small_lo[v - 2] + i, 1);
        } else if (v == 7) {
            for (int i = 0; i < 7; i++) og_add(g, row7[i], 1);
        } else if (v == 9) {
            og_add(g, 0, 1);
        } else if (v != 8) {
            for (int64_t i = 0, d = obelow(&r, 7); i < d; i++) og_add(g, obelow(&r, g->n), 1);
        }
        og_end_row(g);
    }
    free(perm);
    og_finish(g);
}

/* plaw (5,000 nodes): degree ~ 1500 / (v+1)^0.85 (+0..2), so 0..3 are hubs
 * of ~1500, ~830, ~590, ~460; neighbours drawn ~ n u^2.5, skewed towards
 * low ids (the hubs), repeats allowed. */
static void build_plaw(og_t *g)
{
    orng_t r = orng(0x706c6177);
    og_init(g, "plaw", 5000, 0);
    for (int64_t v = 0; v < g->n; v++) {
        int64_t d = (int64_t)(1500.0 / pow((double)(v + 1), 0.85)) + obelow(&r, 3);
        for (int64_t i = 0; i < d; i++) {
            int64_t u = (int64_t)((double)g->n * pow(ounit(&r), 2.5));
            og_add(g, u < g->n ? u : g->n - 1, 1);
        }
        og_end_row(g);
    }
    og_finish(g);
}

/* wtd (1,000 nodes, weighted):
 *   0: 40 edges, 4 of weight 100, 3 of weight 0, 4 of 0.5, the rest 1;
 *   1: 200 edges, log-uniform weights in [1, 100), positions 7 and 77 zero;
 *   2: 12 edges, {100, 1, 1, 1, 100, 1, 2, 1, 1, 1, 1, 0.01};
 *   3: 5 edges, one positive; 4: 3 edges, all zero; 5: 8 edges, 1..8;
 *   6: 11 edges, 2 zero (9 positive: fewer than fanout 10);
 *   7: 10 edges, 1..10 (exactly fanout 10);
 *   the rest 0..8 random neighbours with weights in {0, 0.5, 1, 50}. */
static void build_wtd(og_t *g)
{
    orng_t r = orng(0x77746421);
    og_init(g, "wtd", 1000, 1);
    static const float row2[12] = {100, 1, 1, 1, 100, 1, 2, 1, 1, 1, 1, 0.01f}, row3[5] = {0, 0, 3, 0, 0};
    static const float pool[4] = {0, 0.5f, 1, 50};
    for (int64_t v = 0; v < g->n; v++) {
        switch (v) {
        case 0:
            for (int i = 0; i < 40; i++)
                og_add(g, 100 + i, i % 10 == 0 ? 100 : i % 10 == 3 && i < 30 ? 0 : i % 10 == 5 ? 0.5f : 1);
            break;
        case 1:
            for (int i = 0; i < 200; i++) og_add(g, 200 + i, i == 7 || i == 77 ? 0 : (float)pow(100, ounit(&r)));
            break;
        case 2:
            for (int i = 0; i < 12; i++) og_add(g, 500 + i, row2[i]);
            break;
        case 3:
            for (int i = 0; i < 5; i++) og_add(g, 600 + i, row3[i]);
            break;
        case 4:
            for (int i = 0; i < 3; i++) og_add(g, 610 + i, 0);
            break;
        case 5:
            for (int i = 0; i < 8; i++) og_add(g, 620 + i, (float)(i + 1));
            break;
        case 6:
            for (int i = 0; i < 11; i++) og_add(g, 630 + i, i == 2 || i == 9 ? 0 : 1 + (float)(i % 3) * 50);
            break;
        case 7:
            for (int i = 0; i < 10; i++) og_add(g, 650 + i, (float)(i + 1));
            break;
        default:
            for (int64_t i = 0, d = obelow(&r, 9); i < d; i++) og_add(g, obelow(&r, g->n), pool[obelow(&r, 4)]);
        }
        og_end_row(g);
    }
    og_finish(g);
}

og_t hubs, plaw, wtd;
fs_sampler_t *sa, *sb;
char ctx[512]; /* what the current request is, for every message */

void setup(void)
{
    build_hubs(&hubs);
    build_plaw(&plaw);
    build_wtd(&wtd);
    fs_error_t err = {0};
    cr_assert_eq(fs_sampler_create(&sa, &err), FS_OK, "expected a sampler, found: %s", err.msg);
    cr_assert_eq(fs_sampler_create(&sb, &err), FS_OK, "expected a sampler, found: %s", err.msg);
}

void teardown(void)
{
    fs_sampler_destroy(sa);
    fs_sampler_destroy(sb);
    og_free(&hubs), og_free(&plaw), og_free(&wtd);
}

int64_t deg_of(const og_t *g, int64_t v)
{
    return g->ip[v + 1] - g->ip[v];
}

int64_t positive_of(const og_t *g, int64_t v)
{
    int64_t c = 0;
    for (int64_t e = g->ip[v]; e < g->ip[v + 1]; e++) c += !g->w || g->w[e] > 0;
    return c;
}

/* How many times x occurs in v's row. */
static int64_t row_mult(const og_t *g, int64_t v, int64_t x)
{
    const int64_t *s = g->sorted + g->ip[v];
    int64_t lo = 0, hi = deg_of(g, v);
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (s[mid] < x) lo = mid + 1;
        else hi = mid;
    }
    int64_t c = 0;
    while (lo + c < deg_of(g, v) && s[lo + c] == x) c++;
    return c;
}

static int row_has_positive(const og_t *g, int64_t v, int64_t x)
{
    for (int64_t e = g->ip[v]; e < g->ip[v + 1]; e++)
        if (g->ix64[e] == x && g->w[e] > 0) return 1;
    return 0;
}

static int weighted_mode(fs_sample_mode_t m)
{
    return m == FS_SAMPLE_WEIGHTED || m == FS_SAMPLE_WEIGHTED_REPLACE;
}

static int replace_mode(fs_sample_mode_t m)
{
    return m == FS_SAMPLE_UNIFORM_REPLACE || m == FS_SAMPLE_WEIGHTED_REPLACE;
}

/* The contract's edge count for one dst: without replacement min(n, fanout)
 * of the n eligible edges (all of them for -1); with replacement fanout
 * draws (degree draws for -1), none when nothing is eligible. Eligible:
 * every edge, or in weighted modes the positive-weight ones (P ~ weight). */
static int64_t want_count(const og_t *g, int64_t v, fs_sample_mode_t mode, int k)
{
    int64_t deg = deg_of(g, v), n = weighted_mode(mode) ? positive_of(g, v) : deg;
    if (!replace_mode(mode)) return k < 0 || n < k ? n : k;
    return n == 0 ? 0 : k < 0 ? deg : k;
}

const char *mode_name(fs_sample_mode_t m)
{
    static const char *names[] = {"uniform", "uniform-replace", "weighted", "weighted-replace"};
    return (unsigned)m < 4 ? names[m] : "?";
}

fs_csr_view_t view_of(const og_t *g, fs_dtype_t dt)
{
    fs_csr_view_t v;
    fs_csr_view_init(&v, g->n, g->ip, dt == FS_DTYPE_I32 ? (const void *)g->ix32 : (const void *)g->ix64, dt, g->w);
    return v;
}

void set_ctx(const og_t *g, const char *view, const fs_sample_req_t *r, int64_t nseeds)
{
    int n = snprintf(ctx, sizeof ctx, "[%s, %s view, %lld seeds, request seed %#llx, %s, hops", g->name, view,
                     (long long)nseeds, (unsigned long long)r->seed, r->want_edge_ids ? "edge ids" : "no edge ids");
    for (int h = 0; h < r->num_hops && n < (int)sizeof ctx - 40; h++)
        n += snprintf(ctx + n, sizeof ctx - (size_t)n, " %d:%s", r->fanout[h], mode_name(r->mode[h]));
    snprintf(ctx + n, sizeof ctx - (size_t)n, "]");
}

void run(fs_sampler_t *s, const fs_csr_view_t *v, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
         fs_sample_result_t *res, fs_gather_counters_t *topo)
{
    fs_error_t err = {0};
    fs_status_t st = fs_sample_cpu(s, v, seeds, n, req, res, topo, &err);
    CHECK(st == FS_OK, "%s: expected FS_OK from fs_sample_cpu, found status %d: %s", ctx, (int)st, err.msg);
}

/* ---- A. the exact invariants ------------------------------------------------- */

/* Everything the contract fixes about one result, against the CSR in g (the
 * view's part 0 and what every other part copies), with the relabel redone
 * here: a dense global -> local array filled in first-appearance order,
 * seeds first, walking the picked neighbours hop by hop in CSC order. The
 * picked neighbour comes from indices[edge_ids[e]] when edge ids are there
 * (independent of the engine's relabel), else from nodes[edge_src[e]]. */
void check_result(const og_t *g, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
                  const fs_sample_result_t *res)
{
    int64_t *loc = malloc(sizeof *loc * (size_t)g->n), *mine = malloc(sizeof *mine * (size_t)(g->n + 1)), u = 0;
    for (int64_t v = 0; v < g->n; v++) loc[v] = -1;
    CHECK(res->num_hops == req->num_hops, "%s: expected %d blocks, found %d", ctx, req->num_hops, res->num_hops);
    CHECK(res->num_seeds == n, "%s: expected num_seeds %lld, found %lld", ctx, (long long)n, (long long)res->num_seeds);
    for (int64_t i = 0; i < n; i++) {
        int64_t s = seeds[i];
        if (loc[s] < 0) loc[s] = u, mine[u++] = s;
        CHECK(res->seed_local[i] == loc[s],
              "%s: seed %lld at input position %lld: expected local id %lld (unique seeds numbered 0..S-1 in "
              "first-appearance order), found %lld",
              ctx, (long long)s, (long long)i, (long long)loc[s], (long long)res->seed_local[i]);
    }
    CHECK(res->num_nodes >= u, "%s: expected at least the %lld distinct seeds in num_nodes, found %lld", ctx,
          (long long)u, (long long)res->num_nodes);
    for (int64_t l = 0; l < u; l++)
        CHECK(res->nodes[l] == mine[l], "%s: nodes[%lld]: expected seed %lld, found %lld", ctx, (long long)l,
              (long long)mine[l], (long long)res->nodes[l]);
    for (int h = 0; h < req->num_hops; h++) {
        const fs_block_t *b = &res->block[h];
        int k = req->fanout[h];
        fs_sample_mode_t mode = req->mode[h];
        int64_t num_dst = u;
        CHECK(b->num_dst == num_dst, "%s: hop %d: expected num_dst = %lld (%s), found %lld", ctx, h,
              (long long)num_dst, h ? "the previous hop's num_src" : "the distinct seeds", (long long)b->num_dst);
        CHECK(b->dst_offsets != NULL, "%s: hop %d: expected dst_offsets, found NULL", ctx, h);
        CHECK(b->dst_offsets[0] == 0, "%s: hop %d: expected dst_offsets[0] = 0, found %lld", ctx, h,
              (long long)b->dst_offsets[0]);
        for (int64_t d = 0; d < num_dst; d++)
            CHECK(b->dst_offsets[d + 1] >= b->dst_offsets[d],
                  "%s: hop %d: expected dst_offsets non-decreasing, found [%lld] = %lld > [%lld] = %lld", ctx, h,
                  (long long)d, (long long)b->dst_offsets[d], (long long)(d + 1), (long long)b->dst_offsets[d + 1]);
        CHECK(b->dst_offsets[num_dst] == b->num_edges, "%s: hop %d: expected dst_offsets[%lld] = num_edges %lld, found %lld",
              ctx, h, (long long)num_dst, (long long)b->num_edges, (long long)b->dst_offsets[num_dst]);
        CHECK((b->edge_ids != NULL) == (req->want_edge_ids != 0), "%s: hop %d: expected edge_ids %s, found %s", ctx, h,
              req->want_edge_ids ? "(requested)" : "NULL (not requested)", b->edge_ids ? "an array" : "NULL");
        CHECK(b->edge_weights == NULL, "%s: hop %d: expected edge_weights NULL from the plain sampler, found an array",
              ctx, h);
        int64_t *tmp = malloc(sizeof *tmp * (size_t)(b->num_edges + 1));
        for (int64_t d = 0; d < num_dst; d++) {
            int64_t v = mine[d], lo = b->dst_offsets[d], hi = b->dst_offsets[d + 1], want = want_count(g, v, mode, k);
            CHECK(hi - lo == want,
                  "%s: hop %d dst %lld (node %lld, degree %lld, %lld positive-weight): expected %lld edges for %s "
                  "fanout %d, found %lld",
                  ctx, h, (long long)d, (long long)v, (long long)deg_of(g, v), (long long)positive_of(g, v),
                  (long long)want, mode_name(mode), k, (long long)(hi - lo));
            for (int64_t e = lo; e < hi; e++) {
                int64_t src = b->edge_src[e], x;
                CHECK(b->edge_dst[e] == d, "%s: hop %d edge %lld: expected edge_dst %lld (CSC order), found %lld", ctx,
                      h, (long long)e, (long long)d, (long long)b->edge_dst[e]);
                CHECK(src >= 0 && src < b->num_src && src < res->num_nodes,
                      "%s: hop %d edge %lld: expected edge_src in [0, num_src = %lld), found %lld", ctx, h, (long long)e,
                      (long long)b->num_src, (long long)src);
                if (b->edge_ids) {
                    int64_t id = b->edge_ids[e];
                    CHECK(id >= g->ip[v] && id < g->ip[v + 1],
                          "%s: hop %d edge %lld: expected an edge id in node %lld's CSR row [%lld, %lld), found %lld",
                          ctx, h, (long long)e, (long long)v, (long long)g->ip[v], (long long)g->ip[v + 1],
                          (long long)id);
                    x = g->ix64[id];
                    CHECK(res->nodes[src] == x,
                          "%s: hop %d edge %lld (id %lld): expected src node indices[%lld] = %lld, found nodes[%lld] "
                          "= %lld",
                          ctx, h, (long long)e, (long long)id, (long long)id, (long long)x, (long long)src,
                          (long long)res->nodes[src]);
                    if (weighted_mode(mode))
                        CHECK(g->w[id] > 0, "%s: hop %d edge %lld: expected a positive-weight edge, found id %lld of "
                              "weight %g", ctx, h, (long long)e, (long long)id, (double)g->w[id]);
                    tmp[e - lo] = id;
                } else {
                    x = res->nodes[src];
                    CHECK(x >= 0 && x < g->n && row_mult(g, v, x) > 0,
                          "%s: hop %d edge %lld: expected a neighbour of node %lld, found node %lld (nodes[%lld]), "
                          "not in its row",
                          ctx, h, (long long)e, (long long)v, (long long)x, (long long)src);
                    if (weighted_mode(mode))
                        CHECK(row_has_positive(g, v, x), "%s: hop %d edge %lld: expected a positive-weight neighbour "
                              "of node %lld, found node %lld whose edges all weigh 0", ctx, h, (long long)e,
                              (long long)v, (long long)x);
                    tmp[e - lo] = x;
                }
                if (loc[x] < 0) loc[x] = u, mine[u++] = x;
                CHECK(src == loc[x],
                      "%s: hop %d edge %lld (node %lld -> node %lld): expected local id %lld (first-appearance order, "
                      "seeds first), found %lld",
                      ctx, h, (long long)e, (long long)v, (long long)x, (long long)loc[x], (long long)src);
            }
            if (!replace_mode(mode)) { /* no position twice: ids distinct, or a node no more often than in the row */
                qsort(tmp, (size_t)(hi - lo), sizeof *tmp, cmp_i64);
                for (int64_t q = 0, run = 1; q < hi - lo; q++, run++) {
                    if (q + 1 < hi - lo && tmp[q + 1] == tmp[q]) continue;
                    if (b->edge_ids)
                        CHECK(run == 1, "%s: hop %d dst %lld (node %lld): expected distinct edge ids without "
                              "replacement, found id %lld %lld times", ctx, h, (long long)d, (long long)v,
                              (long long)tmp[q], (long long)run);
                    else
                        CHECK(run <= row_mult(g, v, tmp[q]), "%s: hop %d dst %lld (node %lld): expected node %lld at "
                              "most %lld times (its multiplicity in the row) without replacement, found %lld", ctx, h,
                              (long long)d, (long long)v, (long long)tmp[q], (long long)row_mult(g, v, tmp[q]),
                              (long long)run);
                    run = 0;
                }
            }
        }
        free(tmp);
        CHECK(b->num_src == u, "%s: hop %d: expected num_src = %lld (the frontier plus new nodes in first "
              "appearance), found %lld", ctx, h, (long long)u, (long long)b->num_src);
        CHECK(res->num_nodes >= u, "%s: hop %d: expected num_nodes >= %lld, found %lld", ctx, h, (long long)u,
              (long long)res->num_nodes);
        for (int64_t l = num_dst; l < u; l++)
            CHECK(res->nodes[l] == mine[l], "%s: hop %d: expected nodes[%lld] = %lld (first appearance), found %lld",
                  ctx, h, (long long)l, (long long)mine[l], (long long)res->nodes[l]);
    }
    CHECK(res->num_nodes == u, "%s: expected num_nodes = %lld distinct nodes, found %lld", ctx, (long long)u,
          (long long)res->num_nodes);
    free(loc), free(mine);
}
