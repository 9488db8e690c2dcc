/* solver.c — XGNN's partition placement solver (docs/algorithms.md §5, P1
 * §4.2 and Fig. 8, docs/papers.md).
 *
 * The paper's PruningSearch walks the GPUs in order and, for each partition
 * a GPU cannot reach, tries the holders R1 (balance) and R2 (less
 * replication) rank highest; R3 (MinBandwidth) then picks among the complete
 * plans. Keeping only the top-ranked holders can miss the best plan, so here
 * R1/R2 only *order* the branches and exactness comes from branch and bound:
 *
 *   - branch on the first uncovered (reader, partition) pair: one of the
 *     reader's closed neighbourhood must store the partition; branch k
 *     forbids the holders of branches 1..k-1 for that partition in its
 *     subtree, so no holding is visited twice;
 *   - bound: plans compare by (max load, replicas) first. A partition with
 *     uncovered readers needs at least ceil(uncovered / most any one GPU
 *     covers) more replicas; the max load never drops and is at least the
 *     stored total over n. A subtree is cut when these lower bounds are
 *     already worse than the best complete plan; equal bounds are explored
 *     for R3. A node budget (leaves count one node per reader) bounds the
 *     time on large irregular machines: DGX-1 takes ~10k nodes, 3 ms.
 *
 * Only replicas that cover someone are ever added; a plan with a useless
 * replica is dominated (more replicas, same or higher max load), so nothing
 * optimal is lost. R3 needs each reader's best spread of its remote
 * partitions over their holders (a_i is a bottleneck assignment): binary
 * search over the candidate values bw/k with a capacitated bipartite
 * matching as the feasibility test. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pl_internal.h"
#include "plan.h"

/* ---- R3: MinBandwidth ----------------------------------------------------------- */

typedef struct {
    int nparts;
    uint32_t cand[FS_HW_MAX_GPUS];   /* holders a remote partition may come from */
    int part[FS_HW_MAX_GPUS];        /* partition id of each remote slot */
    int cap[FS_HW_MAX_GPUS], load[FS_HW_MAX_GPUS];
    int assign[FS_HW_MAX_GPUS];
} match_t;

/* Kuhn's augmenting path with capacities (b-matching). */
static int augment(match_t *m, int q, uint32_t *visited)
{
    for (uint32_t c = m->cand[q]; c; c &= c - 1) {
        int j = __builtin_ctz(c);
        if (*visited & (1u << j)) continue;
        *visited |= 1u << j;
        if (m->load[j] < m->cap[j]) {
            m->assign[q] = j, m->load[j]++;
            return 1;
        }
        for (int r = 0; r < m->nparts; r++) {
            if (m->assign[r] == j && augment(m, r, visited)) {
                m->assign[q] = j; /* r moved away from j, q takes its slot */
                return 1;
            }
        }
    }
    return 0;
}

/* Can every remote partition be read with bandwidth per partition >= t? */
static int feasible(const fs_hardware_t *hw, int reader, match_t *m, double t)
{
    for (int j = 0; j < hw->num_gpus; j++) {
        m->cap[j] = j == reader ? 0 : (int)floor(hw->link_gbps[reader][j] / t + 1e-9);
        m->load[j] = 0;
    }
    for (int q = 0; q < m->nparts; q++) m->assign[q] = -1;
    for (int q = 0; q < m->nparts; q++) {
        uint32_t visited = 0;
        if (!augment(m, q, &visited)) return 0;
    }
    return 1;
}

static int desc_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

/* a_i for one reader; writes source[reader][*]. Returns -1 if some partition
 * is unreachable. */
static double reader_bandwidth(const fs_hardware_t *hw, const uint32_t *holds, int reader, int8_t *source)
{
    int n = hw->num_gpus;
    uint32_t peers = fs_hw_peer_mask(hw, reader);
    match_t m = {0};
    for (int q = 0; q < n; q++) {
        if (holds[reader] & (1u << q)) {
            source[q] = (int8_t)reader;
            continue;
        }
        uint32_t cand = 0;
        for (int j = 0; j < n; j++)
            if ((peers & (1u << j)) && (holds[j] & (1u << q))) cand |= 1u << j;
        if (!cand) return -1;
        m.cand[m.nparts] = cand, m.part[m.nparts++] = q;
    }
    int local = fs_pl_popcount(holds[reader]);
    double a = local ? hw->local_gbps[reader] / local : INFINITY;
    if (m.nparts == 0) return a;
    /* a_i is some bw_ij / k: try them from the largest down (binary search). */
    double t[FS_HW_MAX_GPUS * FS_HW_MAX_GPUS];
    int nt = 0;
    for (int j = 0; j < n; j++)
        for (int k = 1; (peers & (1u << j)) && k <= m.nparts; k++) t[nt++] = hw->link_gbps[reader][j] / k;
    qsort(t, (size_t)nt, sizeof *t, desc_double);
    /* the smallest, min_j bw_ij / nparts, is always feasible: every cap >= nparts */
    int lo = 0, hi = nt - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (feasible(hw, reader, &m, t[mid])) hi = mid;
        else lo = mid + 1;
    }
    feasible(hw, reader, &m, t[lo]);
    for (int r = 0; r < m.nparts; r++) source[m.part[r]] = (int8_t)m.assign[r];
    return a < t[lo] ? a : t[lo];
}

fs_status_t fs_xgnn_evaluate(const fs_hardware_t *hw, fs_xgnn_t *out, fs_error_t *err)
{
    fs_status_t st = fs_hw_validate(hw, err);
    if (st != FS_OK) return st;
    double mb = INFINITY;
    for (int i = 0; i < hw->num_gpus; i++) {
        double a = reader_bandwidth(hw, out->holds, i, out->source[i]);
        if (a < 0) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "xgnn: GPU %d cannot reach every partition", i);
        if (a < mb) mb = a;
    }
    out->min_bandwidth = mb;
    return FS_OK;
}

/* ---- the search -------------------------------------------------------------------- */

typedef struct {
    const fs_hardware_t *hw;
    int n;
    uint32_t closed[FS_HW_MAX_GPUS];     /* peers of i plus i */
    uint32_t holds[FS_HW_MAX_GPUS];      /* per GPU: partitions stored */
    uint32_t holders[FS_HW_MAX_GPUS];    /* per partition: GPUs storing it */
    uint32_t forbidden[FS_HW_MAX_GPUS];  /* per partition: holders excluded in this subtree */
    int load[FS_HW_MAX_GPUS], replicas;
    int have_best, best_max, best_replicas;
    double best_mb;
    fs_xgnn_t best;
    int64_t nodes, budget;
    int aborted;
} search_t;

/* Readers that cannot reach partition q yet. */
static uint32_t uncovered(const search_t *s, int q)
{
    uint32_t m = 0;
    for (int i = 0; i < s->n; i++)
        if (!(s->closed[i] & s->holders[q])) m |= 1u << i;
    return m;
}

static int max_load(const search_t *s)
{
    int m = 0;
    for (int g = 0; g < s->n; g++) m = s->load[g] > m ? s->load[g] : m;
    return m;
}

/* (a_max, a_rep) worse than (b_max, b_rep) in R1-then-R2 order? */
static int worse(int a_max, int a_rep, int b_max, int b_rep)
{
    return a_max > b_max || (a_max == b_max && a_rep > b_rep);
}

static void place(search_t *s, int g, int q, int on)
{
    if (on) s->holds[g] |= 1u << q, s->holders[q] |= 1u << g;
    else s->holds[g] &= ~(1u << q), s->holders[q] &= ~(1u << g);
    s->load[g] += on ? 1 : -1;
    s->replicas += on ? 1 : -1;
}

static void record_leaf(search_t *s)
{
    fs_xgnn_t cand = {.num_gpus = s->n};
    memcpy(cand.holds, s->holds, sizeof cand.holds);
    double mb = INFINITY;
    for (int i = 0; i < s->n; i++) {
        double a = reader_bandwidth(s->hw, cand.holds, i, cand.source[i]);
        if (a < mb) mb = a;
    }
    int m = max_load(s);
    int better = !s->have_best || worse(s->best_max, s->best_replicas, m, s->replicas) ||
                 (m == s->best_max && s->replicas == s->best_replicas && mb > s->best_mb * (1 + 1e-12));
    if (!better) return;
    s->have_best = 1, s->best_max = m, s->best_replicas = s->replicas, s->best_mb = mb;
    s->best = cand;
}

/* Candidate holders for partition q needed by reader i, in R1/R2 order. */
static int rank_holders(const search_t *s, int i, int q, int *order)
{
    uint32_t need = uncovered(s, q);
    int k = 0, gain[FS_HW_MAX_GPUS];
    for (uint32_t c = s->closed[i] & ~s->forbidden[q]; c; c &= c - 1) {
        int g = __builtin_ctz(c);
        gain[g] = fs_pl_popcount(need & s->closed[g]);
        int at = k++;
        /* insertion by (load asc, gain desc, the reader itself first, id asc) */
        while (at > 0) {
            int h = order[at - 1];
            int before = s->load[g] < s->load[h] ||
                         (s->load[g] == s->load[h] && (gain[g] > gain[h] || (gain[g] == gain[h] && g == i)));
            if (!before) break;
            order[at] = h, at--;
        }
        order[at] = g;
    }
    return k;
}

/* Replicas partition q still needs at least: each new holder covers at most
 * the best single GPU's share of the uncovered readers. */
static int replicas_needed(const search_t *s, uint32_t need)
{
    int most = 0;
    for (int g = 0; g < s->n; g++) {
        int c = fs_pl_popcount(need & s->closed[g]);
        most = c > most ? c : most;
    }
    return (fs_pl_popcount(need) + most - 1) / most;
}

static void search(search_t *s)
{
    if (++s->nodes > s->budget) {
        s->aborted = 1;
        return;
    }
    int first_i = -1, first_q = -1, more = 0;
    for (int q = 0; q < s->n; q++) {
        uint32_t u = uncovered(s, q);
        if (!u) continue;
        more += replicas_needed(s, u);
        int i = __builtin_ctz(u);
        if (first_i < 0 || i < first_i) first_i = i, first_q = q; /* GPU order, as the paper walks */
    }
    /* lower bounds: the max load never drops, and the stored total spreads over n GPUs at best */
    int total = s->n + s->replicas + more, lb_max = max_load(s);
    if ((total + s->n - 1) / s->n > lb_max) lb_max = (total + s->n - 1) / s->n;
    if (s->have_best && worse(lb_max, s->replicas + more, s->best_max, s->best_replicas)) return;
    if (!more) {
        s->nodes += s->n; /* R3 costs about one node per reader: count it, so the budget bounds time */
        record_leaf(s);
        return;
    }
    int order[FS_HW_MAX_GPUS], k = rank_holders(s, first_i, first_q, order);
    uint32_t saved = s->forbidden[first_q];
    for (int b = 0; b < k && !s->aborted; b++) {
        place(s, order[b], first_q, 1);
        search(s);
        place(s, order[b], first_q, 0);
        s->forbidden[first_q] |= 1u << order[b];
    }
    s->forbidden[first_q] = saved;
}

fs_status_t fs_xgnn_solve(const fs_hardware_t *hw, int64_t budget, fs_xgnn_t *out, fs_error_t *err)
{
    fs_status_t st = fs_hw_validate(hw, err);
    if (st != FS_OK) return st;
    if (!out) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "xgnn: NULL output");
    search_t s = {.hw = hw, .n = hw->num_gpus, .budget = budget > 0 ? budget : FS_XGNN_DEFAULT_BUDGET};
    for (int g = 0; g < s.n; g++) {
        s.closed[g] = fs_hw_peer_mask(hw, g) | 1u << g;
        s.holds[g] = 1u << g, s.holders[g] = 1u << g, s.load[g] = 1; /* partition g starts on GPU g */
    }
    search(&s);
    if (!s.have_best) /* only possible when the budget ran out before any plan */
        return fs_error(err, FS_ERR_RESOURCE, "xgnn: no placement found within %lld search nodes",
                        (long long)s.budget);
    *out = s.best;
    out->max_load = s.best_max;
    out->replicas = s.best_replicas;
    out->min_bandwidth = s.best_mb;
    out->exact = !s.aborted;
    out->search_nodes = s.nodes;
    return FS_OK;
}
