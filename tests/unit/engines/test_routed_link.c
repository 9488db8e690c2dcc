/* test_routed_link.c — link batches over an edge type whose rows live
 * elsewhere (fs_typed_etype_t.remote), in one process: strict negatives
 * asked of the holders in rounds (fs_typed_remote_t.edges), degree-weighted
 * negatives from the holders' degrees (.degrees), and temporal batches
 * whose seeds take their nodes' timestamps from elsewhere
 * (fs_typed_view_t.remote_time).
 *
 * The graph is renumbered (a random permutation, as a partitioning
 * renumbers it) and its "holder" answers in the new ids; the trainer draws
 * in the graph's own ids and maps them (draw_map). For the same seed edges
 * the routed batch, mapped back, must be one engine's on the whole graph
 * bit for bit. The draw rule itself is checked against a loop written
 * here: strict negative j is the first candidate of its stream that is
 * neither an edge nor a positive. A holder that calls nothing an edge must
 * change the batch (the comparison can fail). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_rng.h"
#include "fs_typed.h"

#define N 500
#define B 40

static int64_t indptr[N + 1], *etime, node_time[N], node_map[N], orig_of[N], deg_in[N], deg_out[N];
static int32_t *indices;
static int64_t edges;
static fs_typed_etype_t whole_et;
static fs_typed_sampler_t *holder; /* the holder's own sampler */

static uint64_t state = 99;
static uint64_t next_u64(void)
{
    return fs_rng_next(&(fs_rng_t){state++ * 0x9e3779b97f4a7c15ULL});
}

/* Rows of 0..59 sources (a hub every 50th node: 200), times ascending per row. */
static void make_graph(void)
{
    indices = malloc(sizeof *indices * N * 200), etime = malloc(sizeof *etime * N * 200);
    for (int v = 0; v < N; v++) {
        indptr[v] = edges;
        int deg = v % 50 == 3 ? 200 : (int)(next_u64() % 60);
        int64_t t = (int64_t)(next_u64() % 100);
        for (int k = 0; k < deg; k++, edges++) {
            /* low ids are hubs of sources */
            indices[edges] = (int32_t)(k < 20 && v % 7 == 0 ? (uint64_t)k : next_u64() % N);
            etime[edges] = t += (int64_t)(next_u64() % 20);
        }
        node_time[v] = 300 + (int64_t)(next_u64() % 1000);
    }
    indptr[N] = edges;
    for (int v = 0; v < N; v++) node_map[v] = v;
    for (int v = N - 1; v > 0; v--) { /* a permutation: the new ids */
        int u = (int)(next_u64() % (uint64_t)(v + 1));
        int64_t x = node_map[v];
        node_map[v] = node_map[u], node_map[u] = x;
    }
    for (int v = 0; v < N; v++) orig_of[node_map[v]] = v;
    for (int v = 0; v < N; v++) deg_in[node_map[v]] = indptr[v + 1] - indptr[v];
    for (int64_t q = 0; q < edges; q++) deg_out[node_map[indices[q]]]++;
    whole_et = (fs_typed_etype_t){.src_type = 0, .dst_type = 0, .name = "(n, to, n)", .num_edges = edges,
                                  .indptr = indptr, .indices = indices, .index_dtype = FS_DTYPE_I32, .time = etime,
                                  .reverse = -1};
    fs_error_t err;
    cr_assert_eq(fs_typed_sampler_create(&holder, &err), FS_OK);
}

static int has_edge(int64_t s, int64_t d) /* in the graph's own ids */
{
    for (int64_t q = indptr[d]; q < indptr[d + 1]; q++)
        if (indices[q] == s) return 1;
    return 0;
}

/* ---- the holder: answers in the new ids ------------------------------------------ */

static struct {
    int64_t rows[N * 40], keys[N * 40], xsrc[N * 40], src[N * 200 * 4];
    int64_t edge_calls, edge_pairs_max, time_calls;
    int lie; /* 1: call nothing an edge (a mutation the comparison must see) */
} H;

static fs_status_t picks(void *ctx, const fs_typed_picks_req_t *q, const int64_t *dst, int64_t n,
                         fs_typed_picks_t *out, fs_error_t *err)
{
    (void)ctx;
    for (int64_t i = 0; i < n; i++) H.rows[i] = H.keys[i] = orig_of[dst[i]];
    fs_typed_picks_req_t mine = *q; /* its exclusions' sources in the graph's ids */
    for (int64_t j = 0; j < q->num_excl; j++) H.xsrc[j] = orig_of[q->excl_src[j]];
    mine.excl_src = H.xsrc;
    fs_status_t st = fs_typed_picks(holder, &whole_et, N, &mine, H.rows, H.keys, n, out, err);
    if (st != FS_OK) return st;
    for (int64_t e = 0; e < out->off[n]; e++) H.src[e] = node_map[out->src[e]];
    out->src = H.src;
    return FS_OK;
}

static fs_status_t edges_of(void *ctx, int etype, const int64_t *dst, const int64_t *src, int64_t n, uint8_t *is_edge,
                            fs_error_t *err)
{
    (void)ctx, (void)etype, (void)err;
    for (int64_t i = 0; i < n; i++) is_edge[i] = (uint8_t)(!H.lie && has_edge(orig_of[src[i]], orig_of[dst[i]]));
    H.edge_calls++;
    if (n > H.edge_pairs_max) H.edge_pairs_max = n;
    return FS_OK;
}

static fs_status_t degrees(void *ctx, int etype, int side, const int64_t **deg, fs_error_t *err)
{
    (void)ctx, (void)etype, (void)err;
    *deg = side ? deg_in : deg_out;
    return FS_OK;
}

static fs_status_t times(void *ctx, int type, const int64_t *ids, int64_t n, int64_t *out, fs_error_t *err)
{
    (void)ctx, (void)type, (void)err;
    for (int64_t i = 0; i < n; i++) out[i] = node_time[orig_of[ids[i]]];
    H.time_calls++;
    return FS_OK;
}

/* ---- the two views ------------------------------------------------------------------ */

static const int64_t count = N;
static const int timed[1] = {1};
static const int64_t *const node_times[1] = {node_time};
static const int64_t *const draw_map[1] = {node_map};
static fs_typed_remote_t remote = {.picks = picks, .edges = edges_of, .degrees = degrees};
static const fs_typed_remote_times_t remote_time = {.times = times, .timed = timed};
static fs_typed_etype_t remote_et;

static fs_typed_view_t whole_view(void)
{
    return (fs_typed_view_t){.num_node_types = 1, .count = &count, .node_time = node_times, .num_edge_types = 1,
                             .etype = &whole_et};
}

static fs_typed_view_t routed_view(void)
{
    remote_et = (fs_typed_etype_t){.src_type = 0, .dst_type = 0, .name = "(n, to, n)", .num_edges = edges,
                                   .index_dtype = FS_DTYPE_I64, .reverse = -1, .remote = &remote};
    return (fs_typed_view_t){.num_node_types = 1, .count = &count, .num_edge_types = 1, .etype = &remote_et,
                             .draw_map = draw_map, .remote_time = &remote_time};
}

static void setup(void)
{
    make_graph();
}

TestSuite(routed_link, .init = setup);

/* ---- one engine against the routed one ---------------------------------------------- */

static int64_t src[B], dst[B], mapped_src[B], mapped_dst[B];

static void pick_seed_edges(void)
{
    for (int i = 0; i < B; i++) {
        int64_t d = (int64_t)(next_u64() % N);
        while (indptr[d + 1] == indptr[d]) d = (d + 1) % N;
        src[i] = indices[indptr[d] + (int64_t)(next_u64() % (uint64_t)(indptr[d + 1] - indptr[d]))], dst[i] = d;
        mapped_src[i] = node_map[src[i]], mapped_dst[i] = node_map[dst[i]];
    }
}

#define DIFF(cond, ...)                                  \
    do {                                                 \
        if (cond) {                                      \
            snprintf(why, sizeof why, __VA_ARGS__);      \
            return why;                                  \
        }                                                \
    } while (0)

/* The first difference between one engine's batch and the routed one (its
 * nodes mapped back), or NULL. */
static const char *difference(const fs_link_result_t *a, const fs_link_result_t *b, int triplet, int64_t nneg)
{
    static char why[160];
    const fs_typed_nodes_t *x = &a->sub.type[0], *y = &b->sub.type[0];
    DIFF(x->num_nodes != y->num_nodes, "%lld nodes, routed %lld", (long long)x->num_nodes, (long long)y->num_nodes);
    for (int64_t i = 0; i < x->num_nodes; i++) DIFF(x->nodes[i] != orig_of[y->nodes[i]], "node %lld", (long long)i);
    for (int h = 0; h < 2; h++) {
        const fs_block_t *p = &a->sub.block[h], *q = &b->sub.block[h];
        DIFF(p->num_dst != q->num_dst || p->num_edges != q->num_edges, "block %d's shape", h);
        DIFF(memcmp(p->dst_offsets, q->dst_offsets, 8 * (size_t)(p->num_dst + 1)), "block %d's offsets", h);
        DIFF(memcmp(p->edge_src, q->edge_src, 8 * (size_t)p->num_edges), "block %d's sources", h);
        DIFF(memcmp(p->edge_ids, q->edge_ids, 8 * (size_t)p->num_edges), "block %d's edge ids", h);
    }
    if (triplet) {
        DIFF(memcmp(a->dst_neg_index, b->dst_neg_index, 8 * (size_t)nneg), "the triplet negatives");
        return NULL;
    }
    DIFF(a->num_labels != b->num_labels, "%lld labels", (long long)b->num_labels);
    DIFF(memcmp(a->label_src, b->label_src, 8 * (size_t)a->num_labels) ||
         memcmp(a->label_dst, b->label_dst, 8 * (size_t)a->num_labels), "the label pairs");
    DIFF((a->label_time == NULL) != (b->label_time == NULL), "label times");
    return NULL;
}

typedef struct {
    fs_neg_mode_t neg;
    int strict, weighted, temporal;
} link_case_t;

/* The case on both views: NULL when equal, else the first difference. */
static const char *run_case(link_case_t k, fs_typed_sampler_t *s1, fs_typed_sampler_t *s2)
{
    int fanout[2] = {6, 3};
    fs_typed_req_t req = {.num_hops = 2, .fanout = fanout, .seed = 1234, .want_edge_ids = 1,
                          .temporal = k.temporal ? FS_TEMPORAL_UNIFORM : FS_TEMPORAL_OFF};
    fs_typed_link_t one = {.etype = 0, .count = B, .src = src, .dst = dst, .neg = k.neg,
                           .amount = k.neg == FS_NEG_TRIPLET ? 4 : 3, .neg_weighted = k.weighted, .strict = k.strict,
                           .exclude_seed_edges = 1};
    fs_typed_link_t routed = one;
    routed.src = mapped_src, routed.dst = mapped_dst;
    fs_typed_view_t gw = whole_view(), gr = routed_view();
    fs_link_result_t a, b;
    fs_error_t err;
    cr_assert_eq(fs_link_sample_cpu(s1, &gw, &req, &one, &a, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_link_sample_cpu(s2, &gr, &req, &routed, &b, &err), FS_OK, "%s", err.msg);
    return difference(&a, &b, k.neg == FS_NEG_TRIPLET, k.neg == FS_NEG_TRIPLET ? 4 * B : 3 * B);
}

Test(routed_link, strict_weighted_and_untimed_temporal_batches_are_one_engines)
{
    pick_seed_edges();
    fs_typed_sampler_t *s1, *s2;
    fs_error_t err;
    cr_assert_eq(fs_typed_sampler_create(&s1, &err), FS_OK);
    cr_assert_eq(fs_typed_sampler_create(&s2, &err), FS_OK);
    for (int neg = FS_NEG_BINARY; neg <= FS_NEG_TRIPLET; neg++)
        for (int strict = 0; strict < 2; strict++)
            for (int weighted = 0; weighted < 2; weighted++)
                for (int temporal = 0; temporal < 2; temporal++) {
                    link_case_t k = {(fs_neg_mode_t)neg, strict, weighted, temporal};
                    int64_t calls = H.edge_calls, tcalls = H.time_calls;
                    const char *d = run_case(k, s1, s2);
                    cr_assert_null(d, "%s negatives, strict %d, weighted %d, temporal %d: %s",
                                   neg == FS_NEG_BINARY ? "binary" : "triplet", strict, weighted, temporal, d);
                    if (strict) /* bulk: a call per round, the first with every negative that is not a positive */
                        cr_assert(H.edge_calls > calls && H.edge_calls - calls < 40 && H.edge_pairs_max > B,
                                  "%lld calls, at most %lld pairs", (long long)(H.edge_calls - calls),
                                  (long long)H.edge_pairs_max);
                    else cr_assert_eq(H.edge_calls, calls, "no membership asked without the strict rule");
                    cr_assert_eq(H.time_calls - tcalls, temporal ? 2 : 0, "each seed group's times, once");
                }
    fs_typed_sampler_destroy(s1), fs_typed_sampler_destroy(s2);
}

Test(routed_link, a_holder_that_calls_nothing_an_edge_changes_strict_batches)
{
    pick_seed_edges();
    fs_typed_sampler_t *s1, *s2;
    fs_error_t err;
    cr_assert_eq(fs_typed_sampler_create(&s1, &err), FS_OK);
    cr_assert_eq(fs_typed_sampler_create(&s2, &err), FS_OK);
    H.lie = 1;
    const char *d = run_case((link_case_t){FS_NEG_BINARY, 1, 1, 0}, s1, s2);
    H.lie = 0;
    cr_assert_not_null(d, "a wrong membership answer went unseen");
    fs_typed_sampler_destroy(s1), fs_typed_sampler_destroy(s2);
}

/* Strict negative j is the first candidate of stream j (seed ^ the link
 * salt) that is neither an edge nor a positive: the loop over tries one
 * server always ran, and the rounds must keep. */
Test(routed_link, strict_negatives_are_each_streams_first_acceptable_candidate)
{
    pick_seed_edges();
    fs_typed_view_t g = whole_view();
    int fanout[1] = {0};
    fs_typed_req_t req = {.num_hops = 1, .fanout = fanout, .seed = 77};
    fs_typed_sampler_t *s;
    fs_error_t err;
    cr_assert_eq(fs_typed_sampler_create(&s, &err), FS_OK);
    int64_t rejected = 0;
    for (int neg = FS_NEG_BINARY; neg <= FS_NEG_TRIPLET; neg++) {
        int triplet = neg == FS_NEG_TRIPLET;
        fs_typed_link_t l = {.etype = 0, .count = B, .src = src, .dst = dst, .neg = (fs_neg_mode_t)neg,
                             .amount = triplet ? 5 : 4, .strict = 1};
        fs_link_result_t r;
        cr_assert_eq(fs_link_sample_cpu(s, &g, &req, &l, &r, &err), FS_OK, "%s", err.msg);
        const int64_t *nodes = r.sub.type[0].nodes;
        for (int64_t j = 0; j < (triplet ? 5 : 4) * B; j++) {
            fs_rng_t rng = fs_rng_make(77 ^ 0x7a3c1e5b9d2f4861ULL, (uint64_t)j);
            int64_t s_, d_;
            for (int t = 0;; t++) {
                s_ = triplet ? src[j / 5] : (int64_t)fs_rng_below(&rng, N);
                d_ = (int64_t)fs_rng_below(&rng, N);
                int positive = 0;
                for (int i = 0; i < B; i++) positive |= src[i] == s_ && dst[i] == d_;
                if (!has_edge(s_, d_) && !positive) break;
                rejected++;
                cr_assert_lt(t, 1000);
            }
            int64_t got_s = triplet ? s_ : nodes[r.label_src[B + j]];
            int64_t got_d = nodes[triplet ? r.dst_neg_index[j] : r.label_dst[B + j]];
            cr_assert(got_s == s_ && got_d == d_, "negative %lld: %lld -> %lld, expected %lld -> %lld", (long long)j,
                      (long long)got_s, (long long)got_d, (long long)s_, (long long)d_);
        }
    }
    cr_assert_gt(rejected, 10, "the rule rejected some candidates (%lld)", (long long)rejected);
    fs_typed_sampler_destroy(s);
}

Test(routed_link, holders_that_tell_nothing_are_refused_by_name)
{
    pick_seed_edges();
    fs_typed_remote_t bare = {.picks = picks};
    fs_typed_view_t g = routed_view();
    remote_et.remote = &bare;
    int fanout[1] = {2};
    fs_typed_req_t req = {.num_hops = 1, .fanout = fanout, .seed = 1};
    fs_typed_sampler_t *s;
    fs_error_t err;
    cr_assert_eq(fs_typed_sampler_create(&s, &err), FS_OK);
    fs_link_result_t r;
    fs_typed_link_t l = {.etype = 0, .count = B, .src = mapped_src, .dst = mapped_dst, .neg = FS_NEG_BINARY,
                         .amount = 1, .strict = 1};
    cr_assert_eq(fs_link_sample_cpu(s, &g, &req, &l, &r, &err), FS_ERR_UNSUPPORTED);
    cr_assert(strstr(err.msg, "(n, to, n)") && strstr(err.msg, "strict"), "%s", err.msg);
    l.strict = 0, l.neg_weighted = 1;
    cr_assert_eq(fs_link_sample_cpu(s, &g, &req, &l, &r, &err), FS_ERR_UNSUPPORTED);
    cr_assert(strstr(err.msg, "degrees"), "%s", err.msg);
    l.neg_weighted = 0; /* uniform negatives need neither */
    cr_assert_eq(fs_link_sample_cpu(s, &g, &req, &l, &r, &err), FS_OK, "%s", err.msg);
    fs_typed_sampler_destroy(s);
}
