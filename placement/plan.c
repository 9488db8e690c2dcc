/* plan.c — assembles a placement plan from the pieces in algo1.c, solver.c
 * and topo.c, and derives the routes (docs/algorithms.md §3 routing tables, §5).
 *
 * Build order matters: the XGNN solver runs first because how many
 * partitions a GPU stores decides its topology budget; the budget split then
 * fixes BSIZE; then features are placed by the resolved policy and finally
 * every held copy gets its reader mask.
 *
 * Routing rule for replicated rows (Rule 1 / Algorithm 1, and the NAIVE /
 * RAND / DEGREE baselines, so they are judged by the same routes): a reader
 * reads a row locally if it holds it, else from a directly linked peer
 * holding it, else from the host. When several peers hold the row, the peer
 * is drawn by a hash of (reader, row) with probability proportional to link
 * bandwidth, so readers of one row spread over its holders and link load
 * follows link speed, deterministically. For partitioned data (XGNN) the solver's
 * per-partition sources are used: they already maximise MinBandwidth. */
#include <stdlib.h>
#include <string.h>

#include "argsort.h"
#include "fs_rng.h"
#include "pl_internal.h"
#include "plan.h"

static const char *const policy_names[FS_FEAT_POLICY_COUNT_] = {"auto",  "rule1", "algo1", "xgnn",
                                                                 "naive", "rand",  "degree"};

const char *fs_feat_policy_name(fs_feat_policy_t p)
{
    return (unsigned)p < FS_FEAT_POLICY_COUNT_ ? policy_names[p] : "unknown";
}

fs_status_t fs_feat_policy_parse(const char *name, fs_feat_policy_t *out, fs_error_t *err)
{
    for (int p = 0; name && p < FS_FEAT_POLICY_COUNT_; p++)
        if (strcmp(name, policy_names[p]) == 0) {
            *out = (fs_feat_policy_t)p;
            return FS_OK;
        }
    return fs_error(err, FS_ERR_INVALID_ARGUMENT,
                    "unknown placement policy '%s' (known: auto, rule1, algo1, xgnn, naive, rand, degree)",
                    name ? name : "(null)");
}

void fs_plan_defaults(fs_plan_opts_t *o)
{
    memset(o, 0, sizeof *o);
    fs_budget_defaults(&o->budget);
    o->policy = FS_FEAT_AUTO;
    o->alpha[FS_FABRIC_PCIE] = 0.0;     /* unused: no groups without peer links */
    o->alpha[FS_FABRIC_NVLINK] = 0.2;   /* P0's default for NVLink pairs (docs/papers.md) */
    o->alpha[FS_FABRIC_NVSWITCH] = 0.0; /* ... and for all-to-all NVSwitch */
    o->place_topology = 1;
    o->solver_budget = FS_XGNN_DEFAULT_BUDGET;
}

/* One alpha value of a spec: a number in [0, 1], the whole of [s, end). */
static int parse_alpha_value(const char *s, const char *end, double *out)
{
    char buf[32], *stop;
    size_t n = (size_t)(end - s);
    if (n == 0 || n >= sizeof buf) return 0;
    memcpy(buf, s, n);
    buf[n] = 0;
    *out = strtod(buf, &stop);
    return *stop == 0 && *out >= 0 && *out <= 1; /* NaN fails */
}

/* One "class=value" item of a spec, [s, end), into alpha[class]. */
static fs_status_t parse_alpha_item(const char *s, const char *end, double *alpha, fs_error_t *err)
{
    const char *eq = memchr(s, '=', (size_t)(end - s));
    for (int f = FS_FABRIC_NVLINK; eq && f < FS_FABRIC_COUNT_; f++) {
        const char *name = fs_fabric_name((fs_fabric_t)f);
        if ((size_t)(eq - s) != strlen(name) || memcmp(s, name, (size_t)(eq - s)) != 0) continue;
        if (parse_alpha_value(eq + 1, end, &alpha[f])) return FS_OK;
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "alpha '%.*s': not a number in [0, 1]", (int)(end - s), s);
    }
    return fs_error(err, FS_ERR_INVALID_ARGUMENT, "alpha '%.*s': want nvlink=A or nvswitch=A (PCIe-only GPUs form "
                    "no groups, so have no alpha)", (int)(end - s), s);
}

fs_status_t fs_plan_alpha_parse(const char *spec, double alpha[FS_FABRIC_COUNT_], fs_error_t *err)
{
    if (!spec || !*spec) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "alpha: empty (want 0.2 or nvlink=0.2,nvswitch=0)");
    double next[FS_FABRIC_COUNT_], a;
    memcpy(next, alpha, sizeof next);
    int list = strchr(spec, '=') != NULL;
    if (!list) {
        if (!parse_alpha_value(spec, spec + strlen(spec), &a))
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "alpha '%s': not a number in [0, 1]", spec);
        next[FS_FABRIC_NVLINK] = next[FS_FABRIC_NVSWITCH] = a; /* PCIe has no groups: nothing to set */
    }
    for (const char *s = spec, *end; list && *s; s = *end ? end + 1 : end) {
        end = s + strcspn(s, ",");
        fs_status_t st = parse_alpha_item(s, end, next, err);
        if (st != FS_OK) return st;
    }
    memcpy(alpha, next, sizeof next);
    return FS_OK;
}

void fs_plan_free(fs_plan_t *plan)
{
    if (!plan) return;
    for (int g = 0; g < FS_HW_MAX_GPUS; g++) {
        fs_plan_gpu_t *G = &plan->gpu[g];
        free(G->rows), free(G->readers), free(G->topo_rows), free(G->topo_readers);
    }
    fs_topo_split_free(&plan->topo);
    free(plan);
}

/* ---- GPU groups --------------------------------------------------------------- */

/* Greedy cliques of linked GPUs in index order ({0..3}, {4..7} on DGX-1). */
static int find_groups(const fs_hardware_t *hw, int *group)
{
    int n = hw->num_gpus, groups = 0;
    for (int g = 0; g < n; g++) group[g] = -1;
    for (int g = 0; g < n; g++) {
        if (group[g] >= 0) continue;
        uint32_t members = 1u << g;
        group[g] = groups;
        for (int h = g + 1; h < n; h++) {
            if (group[h] >= 0 || (fs_hw_peer_mask(hw, h) & members) != members) continue;
            members |= 1u << h;
            group[h] = groups;
        }
        groups++;
    }
    return groups;
}

/* Every link inside a group: the machine is a disjoint union of cliques. */
static int cliques_only(const fs_hardware_t *hw, const int *group)
{
    for (int i = 0; i < hw->num_gpus; i++)
        for (int j = 0; j < hw->num_gpus; j++)
            if (fs_hw_linked(hw, i, j) && group[i] != group[j]) return 0;
    return 1;
}

static fs_feat_policy_t resolve_policy(const fs_hardware_t *hw, fs_feat_policy_t asked, const int *group)
{
    if (asked != FS_FEAT_AUTO) return asked;
    int any_link = 0;
    for (int g = 0; g < hw->num_gpus; g++) any_link |= fs_hw_peer_mask(hw, g) != 0;
    if (!any_link) return FS_FEAT_RULE1;
    return cliques_only(hw, group) ? FS_FEAT_ALGO1 : FS_FEAT_XGNN;
}

/* ---- input checks ------------------------------------------------------------- */

static fs_status_t check_inputs(const fs_hardware_t *hw, const fs_plan_input_t *in, const fs_plan_opts_t *o,
                                fs_error_t *err)
{
    fs_status_t st = fs_hw_validate(hw, err);
    if (st != FS_OK) return st;
    if (!in || !o) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "plan: NULL input or options");
    if (in->num_nodes < 0 || in->row_bytes <= 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "plan: %lld nodes with rows of %lld bytes",
                        (long long)in->num_nodes, (long long)in->row_bytes);
    if ((unsigned)o->policy >= FS_FEAT_POLICY_COUNT_)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "plan: unknown feature policy %d", (int)o->policy);
    for (int f = 0; f < FS_FABRIC_COUNT_; f++)
        if (!(o->alpha[f] >= 0 && o->alpha[f] <= 1))
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "plan: alpha for %s links is %g (need [0, 1])",
                            fs_fabric_name((fs_fabric_t)f), o->alpha[f]);
    if ((st = fs_hotness_check(in->p, in->num_nodes, "plan: p", o->threads, err)) != FS_OK) return st;
    if (in->indptr && o->place_topology) {
        if (in->index_bytes != 4 && in->index_bytes != 8)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "plan: index width %lld bytes (need 4 or 8)",
                            (long long)in->index_bytes);
        if (in->topo_p && (st = fs_hotness_check(in->topo_p, in->num_nodes, "plan: topo_p", o->threads, err)) != FS_OK)
            return st;
        if (in->indptr[0] != 0)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "plan: indptr[0] = %lld (must be 0)",
                            (long long)in->indptr[0]);
        for (int64_t v = 0; v < in->num_nodes; v++)
            if (in->indptr[v + 1] < in->indptr[v])
                return fs_error(err, FS_ERR_INVALID_ARGUMENT, "plan: indptr decreases at row %lld", (long long)v);
    }
    return FS_OK;
}

/* ---- per-GPU arrays ------------------------------------------------------------- */

static fs_status_t alloc_rows(fs_plan_gpu_t *G, int64_t rows, int topo, fs_error_t *err)
{
    size_t k = (size_t)(rows > 0 ? rows : 1);
    int64_t **ids = topo ? &G->topo_rows : &G->rows;
    uint32_t **readers = topo ? &G->topo_readers : &G->readers;
    *ids = malloc(sizeof **ids * k);
    *readers = calloc(k, sizeof **readers);
    if (!*ids || !*readers) return fs_error(err, FS_ERR_NOMEM, "plan: cannot allocate %lld rows", (long long)rows);
    if (topo) G->num_topo = rows;
    else G->num_rows = rows;
    return FS_OK;
}

/* Lays out the partitions a GPU stores, partition by partition, each at its
 * local rows new / n (so a server can index it without a map). */
static fs_status_t fill_partitions(fs_plan_gpu_t *G, int topo, uint32_t parts, int n, int64_t hot,
                                   const int64_t *old_of_new, const int8_t (*source)[FS_HW_MAX_GPUS], int self,
                                   fs_error_t *err)
{
    int64_t total = 0;
    for (int q = 0; q < n; q++)
        if (parts & (1u << q)) total += q < hot ? (hot - q + n - 1) / n : 0;
    fs_status_t st = alloc_rows(G, total, topo, err);
    if (st != FS_OK) return st;
    int64_t *ids = topo ? G->topo_rows : G->rows;
    uint32_t *readers = topo ? G->topo_readers : G->readers;
    int64_t k = 0;
    for (int q = 0; q < n; q++) {
        if (!(parts & (1u << q))) continue;
        uint32_t mask = 0;
        for (int i = 0; i < n; i++)
            if (source[i][q] == self) mask |= 1u << i;
        for (int64_t id = q; id < hot; id += n) ids[k] = old_of_new[id], readers[k++] = mask;
    }
    return FS_OK;
}

/* ---- replicated features: Rule 1 / Algorithm 1 ---------------------------------- */

static fs_status_t place_group(fs_plan_t *plan, const fs_plan_input_t *in, const int64_t *order, uint32_t members,
                               double alpha, fs_error_t *err)
{
    int n = 0, dev[FS_HW_MAX_GPUS];
    int64_t bsize = INT64_MAX;
    for (uint32_t m = members; m; m &= m - 1) {
        dev[n++] = __builtin_ctz(m);
        int64_t b = plan->budget.bsize[dev[n - 1]];
        bsize = b < bsize ? b : bsize; /* Algorithm 1 assumes one BSIZE per group */
    }
    if (n == 1 || plan->policy == FS_FEAT_RULE1) {
        for (int t = 0; t < n; t++) {
            fs_plan_gpu_t *G = &plan->gpu[dev[t]];
            int64_t b = plan->budget.bsize[dev[t]], k = b < in->num_nodes ? b : in->num_nodes;
            fs_status_t st = alloc_rows(G, k, 0, err);
            if (st == FS_OK) st = fs_rule1(order, in->num_nodes, b, G->rows, &G->num_rows, err);
            if (st != FS_OK) return st;
        }
        return FS_OK;
    }
    int64_t k = bsize < in->num_nodes ? bsize : in->num_nodes;
    int64_t *B = malloc(sizeof *B * (size_t)(k > 0 ? k : 1) * (size_t)n);
    if (!B) return fs_error(err, FS_ERR_NOMEM, "plan: cannot allocate Algorithm 1 buffers");
    fs_status_t st = fs_algo1(in->p, order, in->num_nodes, n, k, alpha, B, &k, err);
    for (int t = 0; st == FS_OK && t < n; t++) {
        fs_plan_gpu_t *G = &plan->gpu[dev[t]];
        if ((st = alloc_rows(G, k, 0, err)) == FS_OK) memcpy(G->rows, B + (size_t)t * (size_t)k, sizeof *B * (size_t)k);
        plan->alpha[dev[t]] = alpha;
    }
    free(B);
    return st;
}

typedef struct {
    const fs_hardware_t *hw;
    fs_plan_t *plan;
    uint32_t *holder;                /* [N] GPUs holding each row */
    int gpu;
    uint32_t peers[FS_HW_MAX_GPUS];  /* direct peers of each reader */
} route_ctx_t;

static void mark_holders(void *vctx, int64_t b, int64_t e, int worker)
{
    (void)worker;
    route_ctx_t *c = vctx;
    const fs_plan_gpu_t *G = &c->plan->gpu[c->gpu];
    for (int64_t k = b; k < e; k++) c->holder[G->rows[k]] |= 1u << c->gpu; /* rows of one GPU are distinct */
}

/* The GPU reader i reads row v from, given v's holders (-1 = host). */
static int pick_source(const route_ctx_t *c, int i, int64_t v, uint32_t holders)
{
    if (holders & (1u << i)) return i;
    uint32_t peers = holders & c->peers[i];
    if (!peers) return -1;
    if (!(peers & (peers - 1))) return __builtin_ctz(peers);
    double total = 0;
    for (uint32_t m = peers; m; m &= m - 1) total += c->hw->link_gbps[i][__builtin_ctz(m)];
    fs_rng_t rng = fs_rng_make(0x726f757465ULL ^ (uint64_t)v, (uint64_t)i);
    double u = fs_rng_unit(&rng) * total;
    for (uint32_t m = peers; m; m &= m - 1) {
        int j = __builtin_ctz(m);
        if ((u -= c->hw->link_gbps[i][j]) < 0) return j;
    }
    return 31 - __builtin_clz(peers); /* rounding left u at the top end */
}

static void mark_readers(void *vctx, int64_t b, int64_t e, int worker)
{
    (void)worker;
    route_ctx_t *c = vctx;
    fs_plan_gpu_t *G = &c->plan->gpu[c->gpu];
    for (int64_t k = b; k < e; k++) {
        int64_t v = G->rows[k];
        uint32_t mask = 0;
        for (int i = 0; i < c->plan->num_gpus; i++)
            if (pick_source(c, i, v, c->holder[v]) == c->gpu) mask |= 1u << i;
        G->readers[k] = mask;
    }
}

typedef struct {
    const uint32_t *holder;
    int64_t n;
    int workers;
    int64_t count[256];
} distinct_ctx_t;

static void count_distinct(void *vctx, int64_t w, int64_t w_end, int worker)
{
    (void)w_end, (void)worker;
    distinct_ctx_t *c = vctx;
    int64_t b, e, k = 0;
    fs_pl_chunk(c->n, (int)w, c->workers, &b, &e);
    for (int64_t v = b; v < e; v++) k += c->holder[v] != 0;
    c->count[w] = k;
}

static fs_status_t replicated_routes(fs_plan_t *plan, const fs_hardware_t *hw, int threads, fs_error_t *err)
{
    route_ctx_t c = {.hw = hw, .plan = plan};
    c.holder = calloc((size_t)(plan->num_nodes > 0 ? plan->num_nodes : 1), sizeof *c.holder);
    if (!c.holder) return fs_error(err, FS_ERR_NOMEM, "plan: cannot allocate the holder map");
    for (int i = 0; i < plan->num_gpus; i++) c.peers[i] = fs_hw_peer_mask(hw, i);
    for (c.gpu = 0; c.gpu < plan->num_gpus; c.gpu++)
        fs_parallel_for(threads, plan->gpu[c.gpu].num_rows, mark_holders, &c);
    for (c.gpu = 0; c.gpu < plan->num_gpus; c.gpu++)
        fs_parallel_for(threads, plan->gpu[c.gpu].num_rows, mark_readers, &c);
    distinct_ctx_t dc = {c.holder, plan->num_nodes, fs_pl_workers(threads, plan->num_nodes), {0}};
    fs_parallel_for(dc.workers, dc.workers, count_distinct, &dc);
    plan->distinct_rows = 0;
    for (int w = 0; w < dc.workers; w++) plan->distinct_rows += dc.count[w];
    free(c.holder);
    return FS_OK;
}

/* ---- baselines: NAIVE, RAND, DEGREE ------------------------------------------------ */

/* NAIVE / RAND: GPU g takes positions [S_g, S_g + BSIZE_g) of `ids` (the
 * identity for NAIVE), S_g = Σ_{h<g} BSIZE_h: one partition over all GPUs,
 * whatever the links — P0 §5's "naive partitioning". */
static fs_status_t place_ranges(fs_plan_t *plan, const int64_t *ids, fs_error_t *err)
{
    int64_t start = 0, N = plan->num_nodes;
    for (int g = 0; g < plan->num_gpus; g++) {
        int64_t b = start < N ? plan->budget.bsize[g] : 0;
        if (b > N - start) b = N - start;
        fs_status_t st = alloc_rows(&plan->gpu[g], b, 0, err);
        if (st != FS_OK) return st;
        for (int64_t k = 0; k < b; k++) plan->gpu[g].rows[k] = ids ? ids[start + k] : start + k;
        start += b;
    }
    return FS_OK;
}

typedef struct {
    double *key;
} hash_ctx_t;

static void hash_keys(void *vctx, int64_t b, int64_t e, int worker)
{
    (void)worker;
    hash_ctx_t *c = vctx;
    for (int64_t v = b; v < e; v++) c->key[v] = (double)(fs_rng_at(0x72616e64ULL, 0, (uint64_t)v) >> 11);
}

/* RAND: P0's "random permutation, then naive partitioning"; the
 * permutation is the order of a fixed hash of the id, so it is the same on
 * every run and thread count. */
static fs_status_t place_rand(fs_plan_t *plan, int threads, fs_error_t *err)
{
    size_t n = (size_t)(plan->num_nodes > 0 ? plan->num_nodes : 1);
    hash_ctx_t c = {malloc(sizeof(double) * n)};
    int64_t *perm = malloc(sizeof *perm * n);
    fs_status_t st = c.key && perm ? FS_OK : fs_error(err, FS_ERR_NOMEM, "plan: out of memory");
    if (st == FS_OK) {
        fs_parallel_for(threads, plan->num_nodes, hash_keys, &c);
        st = fs_argsort_desc(c.key, plan->num_nodes, threads, perm, err);
    }
    if (st == FS_OK) st = place_ranges(plan, perm, err);
    free(c.key), free(perm);
    return st;
}

/* DEGREE (Quiver): the m GPUs of a clique deal the p-ordered prefix out
 * round-robin, skipping the ones that are full, so each clique holds the
 * top Σ BSIZE rows once and hot rows spread evenly over its links. */
static fs_status_t place_clique_partition(fs_plan_t *plan, const int64_t *order, uint32_t members, fs_error_t *err)
{
    int m = 0, dev[FS_HW_MAX_GPUS];
    int64_t want = 0;
    for (uint32_t b = members; b; b &= b - 1) {
        dev[m++] = __builtin_ctz(b);
        int64_t k = plan->budget.bsize[dev[m - 1]];
        fs_status_t st = alloc_rows(&plan->gpu[dev[m - 1]], k < plan->num_nodes ? k : plan->num_nodes, 0, err);
        if (st != FS_OK) return st;
        plan->gpu[dev[m - 1]].num_rows = 0; /* filled below */
        want += k;
    }
    int64_t rank = 0;
    for (int t = 0; rank < plan->num_nodes && rank < want; t = (t + 1) % m) {
        fs_plan_gpu_t *G = &plan->gpu[dev[t]];
        if (G->num_rows < plan->budget.bsize[dev[t]]) G->rows[G->num_rows++] = order[rank++];
    }
    return FS_OK;
}

static fs_status_t place_baseline(fs_plan_t *plan, const fs_hardware_t *hw, const int64_t *order, int threads,
                                  fs_error_t *err)
{
    if (plan->policy == FS_FEAT_NAIVE) return place_ranges(plan, NULL, err);
    if (plan->policy == FS_FEAT_RAND) return place_rand(plan, threads, err);
    for (int grp = 0;; grp++) {
        uint32_t members = 0;
        for (int g = 0; g < hw->num_gpus; g++)
            if (plan->group[g] == grp) members |= 1u << g;
        if (!members) return FS_OK;
        fs_status_t st = place_clique_partition(plan, order, members, err);
        if (st != FS_OK) return st;
    }
}

static int is_baseline(fs_feat_policy_t p)
{
    return p == FS_FEAT_NAIVE || p == FS_FEAT_RAND || p == FS_FEAT_DEGREE;
}

/* Rule 1 / Algorithm 1, group by group. */
static fs_status_t place_groups(fs_plan_t *plan, const fs_hardware_t *hw, const fs_plan_input_t *in,
                                const fs_plan_opts_t *o, const int64_t *order, fs_error_t *err)
{
    for (int grp = 0;; grp++) {
        uint32_t members = 0;
        for (int g = 0; g < hw->num_gpus; g++)
            if (plan->group[g] == grp) members |= 1u << g;
        if (!members) return FS_OK;
        fs_status_t st = place_group(plan, in, order, members, o->alpha[hw->fabric], err);
        if (st != FS_OK) return st;
    }
}

static fs_status_t place_replicated(fs_plan_t *plan, const fs_hardware_t *hw, const fs_plan_input_t *in,
                                    const fs_plan_opts_t *o, const int64_t *order, fs_error_t *err)
{
    fs_status_t st = is_baseline(plan->policy) ? place_baseline(plan, hw, order, o->threads, err)
                                               : place_groups(plan, hw, in, o, order, err);
    return st == FS_OK ? replicated_routes(plan, hw, o->threads, err) : st;
}

/* ---- partitioned features: XGNN ------------------------------------------------ */

/* Rows GPU g stores when the first h rows are split by id mod n. */
static int64_t partition_rows(int64_t h, int n, uint32_t parts)
{
    int64_t rows = 0;
    for (int q = 0; q < n; q++)
        if ((parts & (1u << q)) && q < h) rows += (h - q + n - 1) / n;
    return rows;
}

/* The longest prefix whose partitions fit every GPU's BSIZE (monotone in h). */
static int64_t feature_prefix(const fs_plan_t *plan)
{
    int64_t lo = 0, hi = plan->num_nodes;
    while (lo < hi) {
        int64_t mid = hi - (hi - lo) / 2, fits = 1;
        for (int g = 0; g < plan->num_gpus && fits; g++)
            fits = partition_rows(mid, plan->num_gpus, plan->xgnn.holds[g]) <= plan->budget.bsize[g];
        if (fits) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

static fs_status_t place_partitioned(fs_plan_t *plan, const int64_t *order, fs_error_t *err)
{
    plan->feat_hot = feature_prefix(plan);
    for (int g = 0; g < plan->num_gpus; g++) {
        fs_plan_gpu_t *G = &plan->gpu[g];
        G->feat_parts = plan->xgnn.holds[g];
        fs_status_t st = fill_partitions(G, 0, G->feat_parts, plan->num_gpus, plan->feat_hot, order,
                                         (const int8_t(*)[FS_HW_MAX_GPUS])plan->xgnn.source, g, err);
        if (st != FS_OK) return st;
    }
    plan->distinct_rows = plan->feat_hot;
    return FS_OK;
}

/* ---- topology -------------------------------------------------------------------- */

static fs_status_t place_topology(fs_plan_t *plan, const fs_plan_input_t *in, const int64_t *feat_order,
                                  int threads, fs_error_t *err)
{
    const double *hot = in->topo_p && in->topo_p != in->p ? in->topo_p : in->p;
    const int64_t *order = hot == in->p ? feat_order : NULL;
    fs_status_t st = fs_topo_split(hot, order, in->num_nodes, in->indptr, in->index_bytes, plan->num_gpus,
                                   plan->xgnn.holds, plan->budget.topo_bytes, threads, &plan->topo, err);
    for (int g = 0; st == FS_OK && g < plan->num_gpus; g++) {
        fs_plan_gpu_t *G = &plan->gpu[g];
        G->topo_parts = plan->xgnn.holds[g];
        st = fill_partitions(G, 1, G->topo_parts, plan->num_gpus, plan->topo.hot, plan->topo.old_of_new,
                             (const int8_t(*)[FS_HW_MAX_GPUS])plan->xgnn.source, g, err);
    }
    return st;
}

/* ---- build -------------------------------------------------------------------------- */

static fs_status_t plan_budgets(fs_plan_t *plan, const fs_hardware_t *hw, const fs_plan_input_t *in,
                                const fs_plan_opts_t *o, int with_topo, fs_error_t *err)
{
    int loads[FS_HW_MAX_GPUS];
    for (int g = 0; g < hw->num_gpus; g++) loads[g] = fs_pl_popcount(plan->xgnn.holds[g]);
    fs_data_size_t d = {.num_rows = in->num_nodes, .row_bytes = in->row_bytes};
    if (with_topo) d.topo_bytes = (in->num_nodes + 1) * 8 + in->indptr[in->num_nodes] * in->index_bytes;
    return fs_budget_split(hw, &o->budget, &d, with_topo ? loads : NULL,
                           plan->policy == FS_FEAT_XGNN ? loads : NULL, &plan->budget, err);
}

static fs_status_t plan_all(fs_plan_t *plan, const fs_hardware_t *hw, const fs_plan_input_t *in,
                            const fs_plan_opts_t *o, int64_t *order, fs_error_t *err)
{
    int with_topo = in->indptr && o->place_topology;
    fs_status_t st = FS_OK;
    if (with_topo || plan->policy == FS_FEAT_XGNN) st = fs_xgnn_solve(hw, o->solver_budget, &plan->xgnn, err);
    if (st == FS_OK) st = plan_budgets(plan, hw, in, o, with_topo, err);
    if (st == FS_OK) st = fs_argsort_desc(in->p, in->num_nodes, o->threads, order, err);
    if (st == FS_OK)
        st = plan->policy == FS_FEAT_XGNN ? place_partitioned(plan, order, err)
                                          : place_replicated(plan, hw, in, o, order, err);
    if (st == FS_OK && with_topo) st = place_topology(plan, in, order, o->threads, err);
    if (st != FS_OK) return st;
    int64_t held = 0;
    for (int g = 0; g < plan->num_gpus; g++) held += plan->gpu[g].num_rows;
    plan->replication = plan->distinct_rows ? (double)held / (double)plan->distinct_rows : 0;
    return FS_OK;
}

fs_status_t fs_plan_build(const fs_hardware_t *hw, const fs_plan_input_t *in, const fs_plan_opts_t *o,
                          fs_plan_t **out, fs_error_t *err)
{
    if (!out) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "plan: NULL output");
    *out = NULL;
    fs_status_t st = check_inputs(hw, in, o, err);
    if (st != FS_OK) return st;
    fs_plan_t *plan = calloc(1, sizeof *plan);
    int64_t *order = malloc(sizeof *order * (size_t)(in->num_nodes > 0 ? in->num_nodes : 1));
    if (!plan || !order) {
        free(plan), free(order);
        return fs_error(err, FS_ERR_NOMEM, "plan: out of memory");
    }
    plan->num_gpus = hw->num_gpus, plan->num_nodes = in->num_nodes, plan->row_bytes = in->row_bytes;
    find_groups(hw, plan->group);
    plan->policy = resolve_policy(hw, o->policy, plan->group);
    if (plan->policy == FS_FEAT_RULE1)
        for (int g = 0; g < hw->num_gpus; g++) plan->group[g] = g; /* every GPU on its own */
    st = plan_all(plan, hw, in, o, order, err);
    free(order);
    if (st != FS_OK) {
        fs_plan_free(plan);
        return st;
    }
    *out = plan;
    return FS_OK;
}

/* ---- dense routes -------------------------------------------------------------------- */

typedef struct {
    const fs_plan_t *plan;
    int reader, gpu, topo;
    int8_t *dev;
    int64_t *pos;
} dense_ctx_t;

static void host_range(void *vctx, int64_t b, int64_t e, int worker)
{
    (void)worker;
    dense_ctx_t *c = vctx;
    for (int64_t v = b; v < e; v++) {
        if (c->dev) c->dev[v] = -1;
        if (c->pos) c->pos[v] = v;
    }
}

static void gpu_range(void *vctx, int64_t b, int64_t e, int worker)
{
    (void)worker;
    dense_ctx_t *c = vctx;
    const fs_plan_gpu_t *G = &c->plan->gpu[c->gpu];
    const int64_t *ids = c->topo ? G->topo_rows : G->rows;
    const uint32_t *readers = c->topo ? G->topo_readers : G->readers;
    for (int64_t k = b; k < e; k++) {
        if (!(readers[k] & (1u << c->reader))) continue;
        if (c->dev) c->dev[ids[k]] = (int8_t)c->gpu; /* one source per (reader, row): no two writers */
        if (c->pos) c->pos[ids[k]] = k;
    }
}

static fs_status_t dense_route(const fs_plan_t *plan, int reader, int topo, int8_t *dev, int64_t *pos,
                               fs_error_t *err)
{
    if (!plan) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "route: NULL plan");
    if (reader < 0 || reader >= plan->num_gpus)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "route: reader %d (plan has %d GPUs)", reader, plan->num_gpus);
    dense_ctx_t c = {plan, reader, 0, topo, dev, pos};
    fs_parallel_for(0, plan->num_nodes, host_range, &c);
    for (c.gpu = 0; c.gpu < plan->num_gpus; c.gpu++)
        fs_parallel_for(0, topo ? plan->gpu[c.gpu].num_topo : plan->gpu[c.gpu].num_rows, gpu_range, &c);
    return FS_OK;
}

fs_status_t fs_plan_route(const fs_plan_t *plan, int reader, int8_t *dev, int64_t *pos, fs_error_t *err)
{
    return dense_route(plan, reader, 0, dev, pos, err);
}

fs_status_t fs_plan_topo_route(const fs_plan_t *plan, int reader, int8_t *dev, int64_t *pos, fs_error_t *err)
{
    return dense_route(plan, reader, 1, dev, pos, err);
}
