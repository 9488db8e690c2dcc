/* test_routed.c — owner-routed sampling in one process: a graph split into
 * parts (nodes renumbered part by part, rows kept in their order), each
 * part's rows held by a "shard" that answers a pass with fs_typed_picks,
 * and a trainer-side engine whose edge types are remote
 * (fs_typed_etype_t.remote). For the same seeds the trainer's batch, mapped
 * back to the graph's ids, must be one engine's on the whole graph, bit for
 * bit: nodes, every block's offsets, sources, destinations and edge ids;
 * both frontier rules, two edge types, uniform, weighted and
 * with-replacement hops, and fanout -1. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "fs_typed.h"

#define N 3000
#define PARTS 8
#define SHARDS 3
#define ETYPES 2

static uint64_t rng_state = 0x1234567;
static uint64_t next_u64(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The whole graph: CSC rows per edge type, int32 sources, weights. */
typedef struct {
    int64_t indptr[N + 1];
    int32_t *indices;
    float *weights;
    int64_t edges;
} graph_t;

static graph_t g[ETYPES];
static int64_t part_of[N], node_map[N], orig_of[N], first[PARTS + 1];

/* A shard: the rows of the parts p % SHARDS == its id, concatenated in
 * part order, sources as new ids, edge ids the whole graph's positions. */
typedef struct {
    int64_t rows, *indptr[ETYPES], *indices[ETYPES], *eids[ETYPES];
    float *weights[ETYPES];
    fs_typed_etype_t et[ETYPES];
    int64_t local_first[PARTS]; /* the local row of part p's first node, or -1 */
    fs_typed_sampler_t *s;
    int64_t *rows_buf, *keys_buf;
} shard_t;

static shard_t shard[SHARDS];

static void make_graph(void)
{
    for (int e = 0; e < ETYPES; e++) {
        int avg = e == 0 ? 12 : 5;
        g[e].indices = malloc(sizeof(int32_t) * N * avg * 2);
        g[e].weights = malloc(sizeof(float) * N * avg * 2);
        int64_t at = 0;
        for (int v = 0; v < N; v++) {
            g[e].indptr[v] = at;
            int deg = (int)(next_u64() % (uint64_t)(2 * avg)) + (v % 97 == 0 ? 40 : 0) * (e == 0);
            if (v % 50 == 7) deg = 0; /* empty rows too */
            for (int j = 0; j < deg; j++, at++) {
                g[e].indices[at] = (int32_t)(next_u64() % N);
                g[e].weights[at] = 0.1f + (float)(next_u64() % 1000) / 100.0f;
            }
        }
        g[e].indptr[N] = at;
        g[e].edges = at;
    }
}

/* Parts by a random owner per node; new ids part by part, ascending source id within one. */
static void partition(void)
{
    int64_t count[PARTS] = {0};
    for (int v = 0; v < N; v++) count[part_of[v] = (int64_t)(next_u64() % PARTS)]++;
    first[0] = 0;
    for (int p = 0; p < PARTS; p++) first[p + 1] = first[p] + count[p];
    int64_t next[PARTS];
    memcpy(next, first, sizeof next);
    for (int v = 0; v < N; v++) {
        node_map[v] = next[part_of[v]]++;
        orig_of[node_map[v]] = v;
    }
}

static void build_shard(int id)
{
    shard_t *sh = &shard[id];
    int64_t rows = 0;
    for (int p = 0; p < PARTS; p++) {
        sh->local_first[p] = p % SHARDS == id ? rows : -1;
        if (p % SHARDS == id) rows += first[p + 1] - first[p];
    }
    sh->rows = rows;
    for (int e = 0; e < ETYPES; e++) {
        sh->indptr[e] = malloc(sizeof(int64_t) * (size_t)(rows + 1));
        sh->indices[e] = malloc(sizeof(int64_t) * (size_t)(g[e].edges + 1));
        sh->eids[e] = malloc(sizeof(int64_t) * (size_t)(g[e].edges + 1));
        sh->weights[e] = malloc(sizeof(float) * (size_t)(g[e].edges + 1));
        int64_t r = 0, at = 0;
        for (int p = 0; p < PARTS; p++) {
            if (p % SHARDS != id) continue;
            for (int64_t x = first[p]; x < first[p + 1]; x++, r++) { /* new id x, in order */
                int64_t v = orig_of[x];
                sh->indptr[e][r] = at;
                for (int64_t q = g[e].indptr[v]; q < g[e].indptr[v + 1]; q++, at++) {
                    sh->indices[e][at] = node_map[g[e].indices[q]];
                    sh->eids[e][at] = q;
                    sh->weights[e][at] = g[e].weights[q];
                }
            }
        }
        sh->indptr[e][rows] = at;
        sh->et[e] = (fs_typed_etype_t){.src_type = 0, .dst_type = 0, .num_edges = at, .indptr = sh->indptr[e],
                                       .indices = sh->indices[e], .index_dtype = FS_DTYPE_I64,
                                       .edge_ids = sh->eids[e], .weights = sh->weights[e], .reverse = -1};
    }
    fs_error_t err;
    cr_assert_eq(fs_typed_sampler_create(&sh->s, &err), FS_OK);
    sh->rows_buf = malloc(sizeof(int64_t) * N);
    sh->keys_buf = malloc(sizeof(int64_t) * N);
}

static int owner_part(int64_t x)
{
    int p = 0;
    while (x >= first[p + 1]) p++;
    return p;
}

/* The trainer's side of the wire: the pass's destinations grouped by
 * shard, each shard's picks, merged back in destination order. */
static struct {
    int64_t *off, *src, *eid;
    int64_t calls;
} merged;

static fs_status_t remote_picks(void *ctx, const fs_typed_picks_req_t *q, const int64_t *dst, int64_t n,
                                fs_typed_picks_t *out, fs_error_t *err)
{
    (void)ctx;
    fs_typed_picks_t ans[SHARDS];
    int64_t cursor[SHARDS] = {0}, cnt[SHARDS] = {0};
    int *which = malloc(sizeof(int) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) {
        int p = owner_part(dst[i]), sid = p % SHARDS;
        which[i] = sid;
        shard[sid].rows_buf[cnt[sid]] = shard[sid].local_first[p] + (dst[i] - first[p]);
        shard[sid].keys_buf[cnt[sid]++] = orig_of[dst[i]];
    }
    for (int sid = 0; sid < SHARDS; sid++) {
        fs_status_t st = fs_typed_picks(shard[sid].s, &shard[sid].et[q->etype], shard[sid].rows, q,
                                        shard[sid].rows_buf, shard[sid].keys_buf, cnt[sid], &ans[sid], err);
        if (st != FS_OK) return st;
    }
    int64_t total = 0;
    for (int sid = 0; sid < SHARDS; sid++) total += ans[sid].off[ans[sid].n];
    free(merged.off), free(merged.src), free(merged.eid);
    merged.off = malloc(sizeof(int64_t) * (size_t)(n + 1));
    merged.src = malloc(sizeof(int64_t) * (size_t)(total + 1));
    merged.eid = malloc(sizeof(int64_t) * (size_t)(total + 1));
    merged.off[0] = 0;
    int64_t e = 0;
    for (int64_t i = 0; i < n; i++) {
        const fs_typed_picks_t *a = &ans[which[i]];
        int64_t r = cursor[which[i]]++;
        for (int64_t j = a->off[r]; j < a->off[r + 1]; j++, e++) {
            merged.src[e] = a->src[j];
            merged.eid[e] = q->want_edge_ids ? a->eid[j] : -1;
        }
        merged.off[i + 1] = e;
    }
    free(which);
    merged.calls++;
    *out = (fs_typed_picks_t){.n = n, .off = merged.off, .src = merged.src, .eid = merged.eid};
    return FS_OK;
}

static void setup(void)
{
    make_graph();
    partition();
    for (int i = 0; i < SHARDS; i++) build_shard(i);
}

TestSuite(routed, .init = setup);

static void compare(fs_frontier_t frontier, const fs_sample_mode_t *modes, const int *fanout, int hops)
{
    fs_error_t err;
    int64_t count = N;
    fs_typed_etype_t whole[ETYPES], remote_et[ETYPES];
    fs_typed_remote_t remote = {.picks = remote_picks};
    for (int e = 0; e < ETYPES; e++) {
        whole[e] = (fs_typed_etype_t){.src_type = 0, .dst_type = 0, .num_edges = g[e].edges, .indptr = g[e].indptr,
                                      .indices = g[e].indices, .index_dtype = FS_DTYPE_I32, .weights = g[e].weights,
                                      .reverse = -1};
        remote_et[e] = (fs_typed_etype_t){.src_type = 0, .dst_type = 0, .num_edges = g[e].edges, .reverse = -1,
                                          .index_dtype = FS_DTYPE_I64, .remote = &remote};
    }
    fs_typed_view_t one = {.num_node_types = 1, .count = &count, .num_edge_types = ETYPES, .etype = whole};
    fs_typed_view_t routed = one;
    routed.etype = remote_et;
    fs_typed_req_t req = {.num_hops = hops, .fanout = fanout, .seed = 0xfeed, .want_edge_ids = 1, .frontier = frontier};
    memcpy(req.mode, modes, sizeof(fs_sample_mode_t) * (size_t)hops);
    int64_t seeds[300], mapped[300];
    for (int i = 0; i < 300; i++) {
        seeds[i] = (int64_t)(next_u64() % N);
        mapped[i] = node_map[seeds[i]];
    }
    fs_typed_seeds_t a = {.type = 0, .count = 300, .ids = seeds}, b = {.type = 0, .count = 300, .ids = mapped};
    fs_typed_sampler_t *s1, *s2;
    fs_typed_result_t r1, r2;
    cr_assert_eq(fs_typed_sampler_create(&s1, &err), FS_OK);
    cr_assert_eq(fs_typed_sampler_create(&s2, &err), FS_OK);
    cr_assert_eq(fs_typed_sample_cpu(s1, &one, &req, &a, 1, NULL, 0, &r1, &err), FS_OK, "%s", err.msg);
    int64_t calls = merged.calls;
    cr_assert_eq(fs_typed_sample_cpu(s2, &routed, &req, &b, 1, NULL, 0, &r2, &err), FS_OK, "%s", err.msg);
    cr_assert_gt(merged.calls, calls, "the routed engine asked the shards");
    cr_assert_eq(r1.type[0].num_nodes, r2.type[0].num_nodes, "node counts");
    for (int64_t i = 0; i < r1.type[0].num_nodes; i++)
        cr_assert_eq(r1.type[0].nodes[i], orig_of[r2.type[0].nodes[i]], "node %lld", (long long)i);
    for (int k = 0; k < hops * ETYPES; k++) {
        const fs_block_t *x = &r1.block[k], *y = &r2.block[k];
        cr_assert(x->num_dst == y->num_dst && x->num_src == y->num_src && x->num_edges == y->num_edges,
                  "block %d's shape", k);
        cr_assert_arr_eq(x->dst_offsets, y->dst_offsets, sizeof(int64_t) * (size_t)(x->num_dst + 1), "block %d", k);
        cr_assert_arr_eq(x->edge_src, y->edge_src, sizeof(int64_t) * (size_t)x->num_edges, "block %d", k);
        cr_assert_arr_eq(x->edge_dst, y->edge_dst, sizeof(int64_t) * (size_t)x->num_edges, "block %d", k);
        cr_assert_arr_eq(x->edge_ids, y->edge_ids, sizeof(int64_t) * (size_t)x->num_edges, "block %d", k);
    }
    cr_assert_arr_eq(r1.seed_local[0], r2.seed_local[0], sizeof(int64_t) * 300);
    fs_typed_sampler_destroy(s1);
    fs_typed_sampler_destroy(s2);
}

Test(routed, dgl_blocks_uniform)
{
    fs_sample_mode_t m[3] = {FS_SAMPLE_UNIFORM, FS_SAMPLE_UNIFORM, FS_SAMPLE_UNIFORM};
    int fanout[ETYPES * 3] = {10, 5, 3, 4, 2, FS_FANOUT_ALL};
    compare(FS_FRONTIER_ALL, m, fanout, 3);
}

Test(routed, pyg_frontier_mixed_modes)
{
    fs_sample_mode_t m[3] = {FS_SAMPLE_WEIGHTED, FS_SAMPLE_UNIFORM_REPLACE, FS_SAMPLE_WEIGHTED_REPLACE};
    int fanout[ETYPES * 3] = {8, 6, 4, 0, 3, 2};
    compare(FS_FRONTIER_NEW, m, fanout, 3);
}

Test(routed, shard_refuses_rows_outside)
{
    fs_error_t err;
    fs_typed_picks_req_t q = {.hop = 0, .etype = 0, .fanout = 5, .mode = FS_SAMPLE_UNIFORM, .seed = 1};
    int64_t rows[1] = {shard[0].rows}, keys[1] = {0};
    fs_typed_picks_t out;
    cr_assert_eq(fs_typed_picks(shard[0].s, &shard[0].et[0], shard[0].rows, &q, rows, keys, 1, &out, &err),
                 FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "outside"), "%s", err.msg);
    q.fanout = 0;
    rows[0] = 0;
    cr_assert_eq(fs_typed_picks(shard[0].s, &shard[0].et[0], shard[0].rows, &q, rows, keys, 1, &out, &err),
                 FS_ERR_INVALID_ARGUMENT);
}
