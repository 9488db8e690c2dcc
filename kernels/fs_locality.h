/* fs_locality.h — locality-aware k-hop sampling (docs/algorithms.md §4, P0 §4, docs/papers.md):
 * the uniform sampler with the inclusion probability of neighbours that lead
 * to GPU-resident rows boosted by a factor s, and importance weights that
 * keep every neighbour aggregation unbiased.
 *
 * Preferred sets. Q_1 = B, the rows the reader reads from GPU memory (its
 * own or a linked peer's); Q_l (l > 1) = the top-K nodes of v_l, where
 * v_1 = 1_B and v_{l+1}[i] = sum of v_l over i's CSR neighbours (paths of
 * l-1 edges from i into B). placement/locality.h builds them. Each is a
 * dense bitmap of num_nodes bits (bit v = word v/64, bit v%64): O(1)
 * membership on the sampling path at N/8 bytes per level. With each set
 * comes, optionally, count[v] = |row v ∩ Q_l| (uint16, 2N bytes per level;
 * FS_LAS_COUNT_SAT means "that many or more: count by scanning the row").
 *
 * Hop to level. Hop h of a request with H hops (h = 0 samples the seeds'
 * neighbours) uses Q_{H-h}: the last hop uses Q_1 = B, since the nodes it
 * picks are only gathered, never expanded; hop H-2 prefers Q_2, nodes whose
 * own neighbours are in B, so the last hop has GPU rows to pick; and so on
 * outwards (the paper's "input layer" is our last hop). Sets are defined
 * independently of H, so one set of L levels serves every request with
 * H <= L hops. Note that every sampled node is gathered in DGL's block
 * convention (each hop's dst is a prefix of its src), so a node picked at
 * hop h < H-1 for being in Q_{H-h} is gathered too whether or not it is in
 * B: the boost at outer hops trades some of those rows for more B rows at
 * the last, largest hop.
 *
 * Probabilities. The plain sampler (FS_SAMPLE_UNIFORM) takes
 * k = min(fanout, deg) neighbours of a row without replacement, so each
 * neighbour's inclusion probability is q_j = k / deg. The boosted
 * probability (§4 with the corrected normaliser) is
 *     q_new_j = min(1, c * w_j * q_j),  w_j = s for j in Q_l, 1 otherwise,
 * with c chosen so that sum q_new = sum q (= k). Without clamping,
 * c = 1/M, M = (sum_{j in Q} s q_j + sum_{j not in Q} q_j) / sum_j q_j, the
 * §4 formula. When some c * w_j * q_j exceed 1, those are set to 1 and c is
 * recomputed over the rest (water-filling: the excess goes to the unclamped
 * neighbours in proportion to w_j q_j), which keeps sum q_new = sum q exactly
 * whenever sum q <= deg, as it always is here. A boosted row is then
 * sampled by Poisson sampling — each neighbour independently with
 * probability q_new_j — so the expected count stays k and the
 * Horvitz-Thompson weight 1/q_new_j makes
 *     E[ sum_{sampled j} x_j / q_new_j ] = sum_j x_j
 * exactly. Each edge's weight is returned; divide by deg for a mean
 * aggregator.
 *
 * Determinism and s = 1. A row is sampled by the plain engine's pick
 * (Floyd, fs_sample_pick.h, the same stream) when s = 1, when deg <= k
 * (everything is taken), or when none or all of its neighbours are
 * preferred (then q_new = q); only the remaining rows are Poisson-sampled,
 * from counter streams keyed by (request seed, hop, node). So results are a
 * pure function of the request whatever the thread count, and s = 1 is
 * bit-identical to fs_sample_cpu (it runs fs_sample_cpu); plain rows get the
 * weight 1/q_j = deg / k.
 *
 * Cost. Plain rows keep the O(fanout) bound. A boosted row is drawn as two
 * geometric-jump sweeps (fs_locality.c), O(s x k) expected draws and bitmap
 * tests, given its preferred count m: from `count` in O(1), else (count
 * NULL or saturated) by scanning the row, O(deg) — hub rows make that the
 * dominant cost, which is what `count` is for. The count must describe the
 * same set as `pref` (fs_las_sets_build guarantees it): the draws follow
 * the stated probabilities whatever m is, so a wrong count keeps the
 * estimator unbiased but breaks Σ q_new = Σ q.
 *
 * Scope: every hop must be FS_SAMPLE_UNIFORM (inclusion probabilities of the
 * other modes are not closed-form or not inclusion probabilities); s >= 1,
 * finite. A boosted row yields min(fanout, deg) edges in expectation, not
 * exactly; its edges are in row order.
 *
 * Ownership: the sets belong to the caller and are only read. The result
 * and the weights live in the sampler's workspace until its next call or
 * its destruction. Thread-safety: one sampler per thread; sets are shared
 * read-only. */
#ifndef FS_LOCALITY_H
#define FS_LOCALITY_H

#include "fs_sample.h"

typedef struct fs_locality {
    double s;                              /* boost >= 1; 1 = the plain sampler (sets not read) */
    int num_levels;                        /* L: levels given; s > 1 needs L >= the request's hops */
    int64_t num_nodes;                     /* bits in each bitmap; must equal the graph's nodes */
    const uint64_t *pref[FS_MAX_HOPS];     /* pref[l-1] = Q_l, (num_nodes + 63) / 64 words */
    const uint16_t *count[FS_MAX_HOPS];    /* optional, NULL = scan: [l-1][v] = |row v ∩ Q_l|, saturated */
} fs_locality_t;

/* count[] value meaning "at least this many: scan the row". */
#define FS_LAS_COUNT_SAT 0xFFFF

/* What fs_sample_locality_cpu returns beside the blocks. */
typedef struct {
    int num_hops;
    const float *weight[FS_MAX_HOPS];      /* [block[h].num_edges] 1/q_new per edge, block CSC edge order */
    int64_t boosted_rows[FS_MAX_HOPS];     /* rows Poisson-sampled at hop h (0 when s = 1) */
} fs_las_weights_t;

static inline int fs_las_bit(const uint64_t *bitmap, int64_t v)
{
    return (int)((bitmap[v >> 6] >> (v & 63)) & 1);
}

/* The level (l of Q_l, 1-based) that hop h of an H-hop request prefers. */
static inline int fs_las_level(int hop, int num_hops)
{
    return num_hops - hop;
}

/* fs_locality_check's rules for a graph of num_nodes nodes and a request's
 * hops and modes (the typed engine's check calls it). */
fs_status_t fs_las_check(const fs_locality_t *loc, int64_t num_nodes, int num_hops, const fs_sample_mode_t *mode,
                         fs_error_t *err);

/* Checks the option against a graph and a request: s finite and >= 1; for
 * s > 1, num_nodes = the graph's, num_levels in [hops, FS_MAX_HOPS] and
 * every pref[0..hops) given; every hop uniform without replacement. */
fs_status_t fs_locality_check(const fs_locality_t *loc, const fs_csr_view_t *g, const fs_sample_req_t *req,
                              fs_error_t *err);

/* Samples like fs_sample_cpu (same result layout and ownership) with the
 * boost; fills *w. topo as in fs_sample_cpu (a boosted row counts the index
 * entries it looked at: scanned, swept and picked). The boost is loc->s;
 * req->locality is only checked to be a valid value (transports set loc->s
 * from it). Block edge_weights stay NULL here: the weights are in *w. */
fs_status_t fs_sample_locality_cpu(fs_sampler_t *s, const fs_csr_view_t *g, const int64_t *seeds, int64_t n,
                                   const fs_sample_req_t *req, const fs_locality_t *loc, fs_sample_result_t *res,
                                   fs_las_weights_t *w, fs_gather_counters_t *topo, fs_error_t *err);

/* The boosted probabilities of one neighbourhood, water-filled (see above):
 * q[j] in [0, 1], pref[j] != 0 for j in Q, s >= 1 finite. q_new may alias q.
 * Σ q_new = Σ q to rounding. O(n x rounds); rounds <= distinct values of
 * w_j q_j that clamp. */
fs_status_t fs_las_rescale(const double *q, const uint8_t *pref, int64_t n, double s, double *q_new,
                           fs_error_t *err);

/* The same for the uniform sampler's row — deg neighbours, m of them
 * preferred, k = min(fanout, deg) taken by the plain sampler — in closed
 * form: the two classes' probabilities. What the engine uses. */
void fs_las_uniform_probs(int64_t deg, int64_t m, int64_t k, double s, double *q_pref, double *q_other);

/* ---- Algorithm 2 ------------------------------------------------------------ */

/* The per-epoch controller of s (r = loading time / total time the trainer
 * reports): if !fixed: if s >= MAXS: fixed; elif r > ut: pre = s;
 * s = min(2s, MAXS); elif r < lt and s != 1: s = (s + pre) / 2; else fixed.
 * Defaults lt = 0.15, ut = 0.2, MAXS = 8, s starts at 1 (pre = 1). One
 * deviation from the printed loop: doubling is capped at MAXS, so s never
 * exceeds the maximum the paper sets "to ensure good convergence" (the
 * printed loop overshoots after a halving, e.g. 1, 2, 1.5, 3, 6, 12).
 * Here, with the sampler, because the client library runs one per
 * connection (fs_report_load_ratio); placement/locality.h includes this.
 * The controller is a plain value: reentrant, no allocation. */

typedef struct {
    double lt, ut;    /* 0 <= lt <= ut <= 1 (defaults 0.15, 0.2) */
    double maxs;      /* finite, >= 1 (default 8) */
} fs_las_ctl_opts_t;

typedef struct {
    fs_las_ctl_opts_t o;
    double s, pre;
    int fixed;
    int epochs;       /* updates seen */
} fs_las_ctl_t;

void fs_las_ctl_defaults(fs_las_ctl_opts_t *o);

/* o NULL: the defaults. s = pre = 1, not fixed. */
fs_status_t fs_las_ctl_init(fs_las_ctl_t *ctl, const fs_las_ctl_opts_t *o, fs_error_t *err);

/* One epoch's step with the measured ratio r in [0, 1]; writes the s to use
 * next into *s (may be NULL; ctl->s holds it too). A bad r (NaN, outside
 * [0, 1]) is FS_ERR_INVALID_ARGUMENT and leaves the state unchanged. */
fs_status_t fs_las_ctl_update(fs_las_ctl_t *ctl, double r, double *s, fs_error_t *err);


#endif
