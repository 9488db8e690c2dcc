/* test_oracle.c — an independent oracle for the k-hop sampling engine.
 *
 * test_sample.c compares fs_sample_cpu with fs_sample_reference, which makes
 * its random choices with the engine's own pick code, RNG and row lookup:
 * that proves the fast path equals the naive one, not that either picks
 * correctly. This file shares no code with the engine beyond the entry points
 * it tests (fs_sampler_create/destroy, fs_csr_view_init, fs_sample_cpu) and
 * the public types: it has its own RNG (xoshiro256** seeded by SplitMix64),
 * its own graphs, picks, relabel and statistics. It checks
 *   A. exact invariants of every result against the graph's CSR: the seed
 *      map, block shapes, CSC order, every edge a real edge of its dst's row,
 *      per-dst edge counts, no repeated position without replacement, no
 *      zero-weight pick, and the relabel redone here in first-appearance
 *      order (seeds first) — on every result any test below obtains;
 *   B. the sampling distributions by chi-square, per node, over thousands of
 *      request seeds: uniform without replacement includes each neighbour
 *      with probability fanout/degree, draws with replacement are uniform or
 *      proportional to weight, weighted without replacement matches the
 *      oracle's own successive sampling (two-sample test), and one node's
 *      picks on two hops are independent;
 *   C. a routed three-part view (rows copied into other parts, reordered)
 *      giving exactly the single-part view's results, with per-part counts.
 * A statistical verdict fails below p = 1e-7 (about a hundred verdicts: a
 * false alarm is ~1e-5 likely); the seeds are fixed, so every run is the
 * same. FS_ORACLE_VERBOSE=1 prints every chi-square with its p-value. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#define P_MIN 1e-7  /* a chi-square verdict fails below this p-value */
#define Z_MAX 5.33  /* |z| beyond this: two-sided p < 1e-7 */

/* ---- the oracle's own random numbers: xoshiro256** seeded by SplitMix64 ---- */

typedef struct {
    uint64_t s[4];
} orng_t;

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static orng_t orng(uint64_t seed)
{
    orng_t r;
    for (int i = 0; i < 4; i++) r.s[i] = splitmix(&seed);
    return r;
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t onext(orng_t *r)
{
    uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0], s[3] ^= s[1], s[1] ^= s[2], s[0] ^= s[3], s[2] ^= t, s[3] = rotl(s[3], 45);
    return out;
}

/* Uniform in [0, n), exactly: rejection below 2^64 mod n. */
static int64_t obelow(orng_t *r, int64_t n)
{
    uint64_t un = (uint64_t)n, lim = (0 - un) % un, x;
    do x = onext(r);
    while (x < lim);
    return (int64_t)(x % un);
}

static double ounit(orng_t *r)
{
    return (double)(onext(r) >> 11) * 0x1p-53;
}

/* ---- statistics ------------------------------------------------------------- */

/* Regularised upper incomplete gamma Q(a, x): series below a+1, Lentz's
 * continued fraction above. */
static double gamma_q(double a, double x)
{
    if (!(x > 0)) return 1;
    double lead = -x + a * log(x) - lgamma(a);
    if (x < a + 1) {
        double ap = a, del = 1 / a, sum = del;
        for (int n = 0; n < 100000 && fabs(del) > fabs(sum) * 1e-16; n++) ap += 1, del *= x / ap, sum += del;
        return 1 - sum * exp(lead);
    }
    double b = x + 1 - a, c = 1e300, d = 1 / b, h = d;
    for (int i = 1; i < 100000; i++) {
        double an = -i * (i - a);
        b += 2;
        d = an * d + b;
        if (fabs(d) < 1e-300) d = 1e-300;
        c = b + an / c;
        if (fabs(c) < 1e-300) c = 1e-300;
        d = 1 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1) < 1e-16) break;
    }
    return exp(lead) * h;
}

static double chi2_sf(double x, double df)
{
    return df > 0 ? gamma_q(df / 2, x / 2) : 1;
}

/* A statistic, its p-value and the cell that contributed most. */
typedef struct {
    double x, df, p;
    int64_t worst;        /* a row position (the first of its group) */
    double obs_w, exp_w;  /* observed and expected there */
} stat_t;

/* Row positions picked per request: pos[t * cap + q], q < num[t]. */
typedef struct {
    int64_t trials, cap;
    int32_t *pos, *num;
} picks_t;

static picks_t picks_new(int64_t trials, int64_t cap)
{
    picks_t p = {.trials = trials, .cap = cap > 0 ? cap : 1};
    p.pos = calloc((size_t)(trials * p.cap), sizeof *p.pos);
    p.num = calloc((size_t)trials, sizeof *p.num);
    cr_assert(p.pos && p.num, "picks: expected memory for %lld x %lld, found none", (long long)trials,
              (long long)cap);
    return p;
}

static void picks_free(picks_t *p)
{
    free(p->pos), free(p->num);
}

/* How often each of a row's `deg` positions was picked, in total. */
static double *picks_counts(const picks_t *p, int64_t deg)
{
    double *c = calloc((size_t)deg + 1, sizeof *c);
    for (int64_t t = 0; t < p->trials; t++)
        for (int q = 0; q < p->num[t]; q++) c[p->pos[t * p->cap + q]] += 1;
    return c;
}

/* Groups consecutive cells with mass > 0 so that each group holds >= min
 * (a short tail joins the last group); gid[i] = -1 for cells left out.
 * Returns the number of groups. The grouping depends on expectations or on
 * pooled counts only, never on which sample a count came from. */
static int64_t group_cells(const double *mass, int64_t n, double min, int64_t *gid)
{
    int64_t g = 0;
    double acc = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!(mass[i] > 0)) {
            gid[i] = -1;
            continue;
        }
        gid[i] = g;
        acc += mass[i];
        if (acc >= min) g++, acc = 0;
    }
    if (acc > 0) {
        if (g == 0) return 1;
        for (int64_t i = 0; i < n; i++)
            if (gid[i] == g) gid[i] = g - 1;
    }
    return g;
}

/* Uniform k-subsets of a row of deg > k: each position's inclusion count is
 * Binomial(T, k/deg) and two positions covary by -pi(1-pi)/(deg-1), so
 * (deg-1)/deg * sum (O-E)^2 / (T pi (1-pi)) is chi-square with deg-1 df. */
static stat_t stat_uniform_subsets(const picks_t *p, int64_t deg, int k)
{
    double *c = picks_counts(p, deg), pi = (double)k / (double)deg, e = (double)p->trials * pi, worst = -1;
    stat_t s = {.df = (double)(deg - 1)};
    for (int64_t i = 0; i < deg; i++) {
        double d = (c[i] - e) * (c[i] - e) / (e * (1 - pi));
        s.x += d;
        if (d > worst) worst = d, s.worst = i, s.obs_w = c[i], s.exp_w = e;
    }
    s.x *= (double)(deg - 1) / (double)deg;
    s.p = chi2_sf(s.x, s.df);
    free(c);
    return s;
}

/* Independent draws, P(position i) = prob[i] / sum(prob): Pearson's
 * chi-square over cells pooled to expect >= 5; prob 0 cells left out (their
 * emptiness is checked exactly elsewhere). */
static stat_t stat_draws(const picks_t *p, const double *prob, int64_t deg)
{
    double *c = picks_counts(p, deg), *e = calloc((size_t)deg + 1, sizeof *e), tot = 0, draws = 0, worst = -1;
    int64_t *gid = malloc(sizeof *gid * (size_t)(deg + 1));
    for (int64_t i = 0; i < deg; i++) tot += prob[i] > 0 ? prob[i] : 0, draws += c[i];
    for (int64_t i = 0; i < deg; i++) e[i] = prob[i] > 0 ? draws * prob[i] / tot : 0;
    int64_t ng = group_cells(e, deg, 5, gid);
    double *go = calloc((size_t)ng + 1, sizeof *go), *ge = calloc((size_t)ng + 1, sizeof *ge);
    stat_t s = {.df = (double)(ng - 1)};
    for (int64_t i = 0; i < deg; i++) {
        if (gid[i] < 0) continue;
        go[gid[i]] += c[i], ge[gid[i]] += e[i];
        double d = (c[i] - e[i]) * (c[i] - e[i]) / e[i];
        if (d > worst) worst = d, s.worst = i, s.obs_w = c[i], s.exp_w = e[i];
    }
    for (int64_t g = 0; g < ng; g++) s.x += (go[g] - ge[g]) * (go[g] - ge[g]) / ge[g];
    s.p = chi2_sf(s.x, s.df);
    free(c), free(e), free(gid), free(go), free(ge);
    return s;
}

/* Two samples of per-request inclusion vectors (a: the engine, b: the
 * oracle): cells are row positions pooled to >= 150 picks in both samples
 * together; per cell a Welch z^2 of the mean count per request; the sum,
 * scaled by (C-1)/C for the fixed total per request, against chi-square
 * with C-1 df. */
static stat_t stat_two_sample(const picks_t *a, const picks_t *b, int64_t deg)
{
    double *ca = picks_counts(a, deg), *cb = picks_counts(b, deg), *mass = calloc((size_t)deg + 1, sizeof *mass);
    int64_t *gid = malloc(sizeof *gid * (size_t)(deg + 1));
    for (int64_t i = 0; i < deg; i++) mass[i] = ca[i] + cb[i];
    int64_t ng = group_cells(mass, deg, 150, gid), *first = malloc(sizeof *first * (size_t)(ng + 1));
    for (int64_t i = deg - 1; i >= 0; i--)
        if (gid[i] >= 0) first[gid[i]] = i;
    double *s1[2], *s2[2], *cnt = calloc((size_t)ng + 1, sizeof *cnt);
    const picks_t *pk[2] = {a, b};
    for (int w = 0; w < 2; w++) {
        s1[w] = calloc((size_t)ng + 1, sizeof *s1[w]);
        s2[w] = calloc((size_t)ng + 1, sizeof *s2[w]);
        for (int64_t t = 0; t < pk[w]->trials; t++) {
            memset(cnt, 0, sizeof *cnt * (size_t)ng);
            for (int q = 0; q < pk[w]->num[t]; q++) {
                int64_t g = gid[pk[w]->pos[t * pk[w]->cap + q]];
                if (g >= 0) cnt[g] += 1;
            }
            for (int64_t g = 0; g < ng; g++) s1[w][g] += cnt[g], s2[w][g] += cnt[g] * cnt[g];
        }
    }
    stat_t s = {0};
    double ta = (double)a->trials, tb = (double)b->trials, worst = -1;
    int64_t used = 0;
    for (int64_t g = 0; g < ng; g++) {
        double ma = s1[0][g] / ta, mb = s1[1][g] / tb;
        double va = (s2[0][g] / ta - ma * ma) * ta / (ta - 1), vb = (s2[1][g] / tb - mb * mb) * tb / (tb - 1);
        double den = va / ta + vb / tb, z2;
        if (!(den > 1e-300)) { /* constant in both samples: equal or plainly different */
            if (ma == mb) continue;
            z2 = INFINITY;
        } else {
            z2 = (ma - mb) * (ma - mb) / den;
        }
        s.x += z2, used++;
        if (z2 > worst) worst = z2, s.worst = first[g], s.obs_w = s1[0][g], s.exp_w = mb * ta;
    }
    s.df = (double)(used - 1);
    if (used > 1) s.x *= (double)(used - 1) / (double)used;
    s.p = chi2_sf(s.x, s.df);
    for (int w = 0; w < 2; w++) free(s1[w]), free(s2[w]);
    free(ca), free(cb), free(mass), free(gid), free(first), free(cnt);
    return s;
}

/* Independent draws within a request: the number of equal pairs among its k
 * draws has mean C(k,2) s2 and variance C(k,2) s2 (1-s2) + k(k-1)(k-2)
 * (s3 - s2^2), s_j = sum p^j (pairs sharing a draw covary, disjoint ones do
 * not). Returns the z of the total over all requests; 0 when deterministic. */
static double collision_z(const picks_t *p, const double *prob, int64_t deg)
{
    double tot = 0, s2 = 0, s3 = 0, sum = 0, mean = 0, var = 0;
    for (int64_t i = 0; i < deg; i++) tot += prob[i] > 0 ? prob[i] : 0;
    for (int64_t i = 0; i < deg; i++) {
        double q = prob[i] > 0 ? prob[i] / tot : 0;
        s2 += q * q, s3 += q * q * q;
    }
    int32_t *tmp = malloc(sizeof *tmp * (size_t)p->cap);
    for (int64_t t = 0; t < p->trials; t++) {
        double k = p->num[t];
        memcpy(tmp, p->pos + t * p->cap, sizeof *tmp * (size_t)p->num[t]);
        for (int q = 1; q < p->num[t]; q++) /* insertion sort: k is small */
            for (int r = q; r > 0 && tmp[r - 1] > tmp[r]; r--) {
                int32_t x = tmp[r];
                tmp[r] = tmp[r - 1], tmp[r - 1] = x;
            }
        for (int q = 0, run = 1; q < p->num[t]; q++, run++)
            if (q + 1 == p->num[t] || tmp[q + 1] != tmp[q]) sum += run * (run - 1) / 2.0, run = 0;
        mean += k * (k - 1) / 2 * s2;
        var += k * (k - 1) / 2 * s2 * (1 - s2) + k * (k - 1) * (k - 2) * (s3 - s2 * s2);
    }
    free(tmp);
    return var > 1e-9 ? (sum - mean) / sqrt(var) : 0;
}

/* Two uniform k-subsets of deg drawn independently share a hypergeometric
 * number of positions: mean k^2/deg, variance k (k/deg)(1-k/deg)(deg-k)/(deg-1).
 * Returns the z of the total shared over all requests (hop 0 vs hop 1). */
static double overlap_z(const picks_t *a, const picks_t *b, int64_t deg, int k)
{
    char *in = calloc((size_t)deg, 1);
    double sum = 0, kk = k, dd = (double)deg;
    for (int64_t t = 0; t < a->trials; t++) {
        for (int q = 0; q < a->num[t]; q++) in[a->pos[t * a->cap + q]] = 1;
        for (int q = 0; q < b->num[t]; q++) sum += in[b->pos[t * b->cap + q]];
        for (int q = 0; q < a->num[t]; q++) in[a->pos[t * a->cap + q]] = 0;
    }
    free(in);
    double mean = (double)a->trials * kk * kk / dd;
    double var = (double)a->trials * kk * (kk / dd) * (1 - kk / dd) * (dd - kk) / (dd - 1);
    return (sum - mean) / sqrt(var);
}

static void expect_stat(const stat_t *s, const char *what)
{
    if (getenv("FS_ORACLE_VERBOSE")) fprintf(stderr, "chi2 %9.1f df %5.0f p %.3g  %s\n", s->x, s->df, s->p, what);
    VERDICT(s->p >= P_MIN,
          "%s: expected chi-square p >= %g, found chi2 = %.1f on %.0f df (p = %.3g); the worst cell, row "
          "position %lld: expected %.1f picks, found %.0f",
          what, P_MIN, s->x, s->df, s->p, (long long)s->worst, s->exp_w, s->obs_w);
}

/* ---- the oracle's own samplers (successive sampling for the weighted
 * two-sample test; the rest only to show the statistics have power) ---- */

/* k times: one remaining positive-weight position, P ~ its weight. */
static picks_t oracle_successive(const float *w, int64_t deg, int k, int64_t trials, uint64_t seed)
{
    picks_t p = picks_new(trials, k);
    double *rem = malloc(sizeof *rem * (size_t)deg);
    orng_t r = orng(seed);
    for (int64_t t = 0; t < trials; t++) {
        for (int64_t i = 0; i < deg; i++) rem[i] = w[i] > 0 ? w[i] : 0;
        int m = 0;
        for (; m < k; m++) {
            double total = 0, acc = 0, x;
            int64_t pick = -1, last = -1;
            for (int64_t i = 0; i < deg; i++) total += rem[i];
            if (!(total > 0)) break;
            x = ounit(&r) * total;
            for (int64_t i = 0; i < deg && pick < 0; i++)
                if (rem[i] > 0) {
                    last = i, acc += rem[i];
                    if (x < acc) pick = i;
                }
            if (pick < 0) pick = last;
            p.pos[t * p.cap + m] = (int32_t)pick;
            rem[pick] = 0;
        }
        p.num[t] = m;
    }
    free(rem);
    return p;
}

/* k independent draws per request, P(position i) ~ prob[i]. */
static picks_t oracle_draws(const double *prob, int64_t deg, int k, int64_t trials, uint64_t seed)
{
    picks_t p = picks_new(trials, k);
    double tot = 0;
    for (int64_t i = 0; i < deg; i++) tot += prob[i] > 0 ? prob[i] : 0;
    orng_t r = orng(seed);
    for (int64_t t = 0; t < trials; t++) {
        for (int q = 0; q < k; q++) {
            double x = ounit(&r) * tot, acc = 0;
            int64_t pick = -1, last = -1;
            for (int64_t i = 0; i < deg && pick < 0; i++)
                if (prob[i] > 0) {
                    last = i, acc += prob[i];
                    if (x < acc) pick = i;
                }
            p.pos[t * p.cap + q] = (int32_t)(pick < 0 ? last : pick);
        }
        p.num[t] = k;
    }
    return p;
}

/* Exponential race: the k positive-weight positions with the smallest
 * Exp(w) arrival times (equivalent to successive sampling). */
static picks_t oracle_race(const float *w, int64_t deg, int k, int64_t trials, uint64_t seed)
{
    picks_t p = picks_new(trials, k);
    double *at = malloc(sizeof *at * (size_t)deg);
    orng_t r = orng(seed);
    for (int64_t t = 0; t < trials; t++) {
        for (int64_t i = 0; i < deg; i++) at[i] = w[i] > 0 ? -log(1 - ounit(&r)) / w[i] : INFINITY;
        int m = 0;
        for (; m < k; m++) {
            int64_t best = -1;
            for (int64_t i = 0; i < deg; i++)
                if (at[i] < INFINITY && (best < 0 || at[i] < at[best])) best = i;
            if (best < 0) break;
            p.pos[t * p.cap + m] = (int32_t)best;
            at[best] = INFINITY;
        }
        p.num[t] = m;
    }
    free(at);
    return p;
}

/* Uniform k-subsets by a partial Fisher-Yates shuffle over the first `span`
 * positions (span < deg: a biased sampler that never reaches the tail). */
static picks_t oracle_subsets(int64_t span, int k, int64_t trials, uint64_t seed)
{
    picks_t p = picks_new(trials, k);
    int32_t *perm = malloc(sizeof *perm * (size_t)span);
    orng_t r = orng(seed);
    for (int64_t t = 0; t < trials; t++) {
        for (int64_t i = 0; i < span; i++) perm[i] = (int32_t)i;
        for (int q = 0; q < k; q++) {
            int64_t j = q + obelow(&r, span - q);
            int32_t x = perm[j];
            perm[j] = perm[q], perm[q] = x;
            p.pos[t * p.cap + q] = x;
        }
        p.num[t] = k;
    }
    free(perm);
    return p;
}

/* ---- graphs ------------------------------------------------------------------ */

typedef struct {
    const char *name;
    int64_t n, m, cap, rows;
    int64_t *ip, *ix64, *sorted; /* sorted: each row's neighbours ascending */
    int32_t *ix32;               /* the same ids, for int32 views */
    float *w;                    /* NULL: unweighted */
} og_t;

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

static og_t hubs, plaw, wtd;
static fs_sampler_t *sa, *sb;
static char ctx[512]; /* what the current request is, for every message */

static void setup(void)
{
    build_hubs(&hubs);
    build_plaw(&plaw);
    build_wtd(&wtd);
    fs_error_t err = {0};
    cr_assert_eq(fs_sampler_create(&sa, &err), FS_OK, "expected a sampler, found: %s", err.msg);
    cr_assert_eq(fs_sampler_create(&sb, &err), FS_OK, "expected a sampler, found: %s", err.msg);
}

static void teardown(void)
{
    fs_sampler_destroy(sa);
    fs_sampler_destroy(sb);
    og_free(&hubs), og_free(&plaw), og_free(&wtd);
}

TestSuite(oracle, .init = setup, .fini = teardown, .timeout = 120);

static int64_t deg_of(const og_t *g, int64_t v)
{
    return g->ip[v + 1] - g->ip[v];
}

static int64_t positive_of(const og_t *g, int64_t v)
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

static const char *mode_name(fs_sample_mode_t m)
{
    static const char *names[] = {"uniform", "uniform-replace", "weighted", "weighted-replace"};
    return (unsigned)m < 4 ? names[m] : "?";
}

static fs_csr_view_t view_of(const og_t *g, fs_dtype_t dt)
{
    fs_csr_view_t v;
    fs_csr_view_init(&v, g->n, g->ip, dt == FS_DTYPE_I32 ? (const void *)g->ix32 : (const void *)g->ix64, dt, g->w);
    return v;
}

static void set_ctx(const og_t *g, const char *view, const fs_sample_req_t *r, int64_t nseeds)
{
    int n = snprintf(ctx, sizeof ctx, "[%s, %s view, %lld seeds, request seed %#llx, %s, hops", g->name, view,
                     (long long)nseeds, (unsigned long long)r->seed, r->want_edge_ids ? "edge ids" : "no edge ids");
    for (int h = 0; h < r->num_hops && n < (int)sizeof ctx - 40; h++)
        n += snprintf(ctx + n, sizeof ctx - (size_t)n, " %d:%s", r->fanout[h], mode_name(r->mode[h]));
    snprintf(ctx + n, sizeof ctx - (size_t)n, "]");
}

static void run(fs_sampler_t *s, const fs_csr_view_t *v, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
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
static void check_result(const og_t *g, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
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

static int64_t first_diff(const int64_t *a, const int64_t *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (a[i] != b[i]) return i;
    return -1;
}

#define SAME_ARRAY(x, y, n, what, ...)                                                                         \
    do {                                                                                                     \
        int64_t i_ = first_diff(x, y, n);                                                                    \
        CHECK(i_ < 0, "%s: " what "[%lld]: expected %lld (%s), found %lld (%s)", ctx, __VA_ARGS__, (long long)i_, \
              (long long)(x)[i_ < 0 ? 0 : i_], wa, (long long)(y)[i_ < 0 ? 0 : i_], wb);                    \
    } while (0)

/* Two results of one request must be equal, array for array. */
static void compare(const fs_sample_result_t *a, const fs_sample_result_t *b, const char *wa, const char *wb)
{
    CHECK(a->num_nodes == b->num_nodes, "%s: expected num_nodes %lld (%s), found %lld (%s)", ctx,
          (long long)a->num_nodes, wa, (long long)b->num_nodes, wb);
    SAME_ARRAY(a->nodes, b->nodes, a->num_nodes, "%s", "nodes");
    SAME_ARRAY(a->seed_local, b->seed_local, a->num_seeds, "%s", "seed_local");
    for (int h = 0; h < a->num_hops; h++) {
        const fs_block_t *x = &a->block[h], *y = &b->block[h];
        CHECK(x->num_dst == y->num_dst && x->num_src == y->num_src && x->num_edges == y->num_edges,
              "%s: hop %d: expected (dst, src, edges) = (%lld, %lld, %lld) (%s), found (%lld, %lld, %lld) (%s)", ctx,
              h, (long long)x->num_dst, (long long)x->num_src, (long long)x->num_edges, wa, (long long)y->num_dst,
              (long long)y->num_src, (long long)y->num_edges, wb);
        SAME_ARRAY(x->dst_offsets, y->dst_offsets, x->num_dst + 1, "hop %d dst_offsets", h);
        SAME_ARRAY(x->edge_dst, y->edge_dst, x->num_edges, "hop %d edge_dst", h);
        SAME_ARRAY(x->edge_src, y->edge_src, x->num_edges, "hop %d edge_src", h);
        CHECK(!x->edge_ids == !y->edge_ids, "%s: hop %d: expected edge ids on both or neither, found one", ctx, h);
        if (x->edge_ids) SAME_ARRAY(x->edge_ids, y->edge_ids, x->num_edges, "hop %d edge_ids", h);
    }
}

/* A random request: 1-3 hops, fanouts 1..25 (-1 now and then on hop 0 or
 * the last hop, with small fanouts around it), modes from `modes`. */
static fs_sample_req_t random_req(orng_t *r, int modes)
{
    static const int fan[6] = {1, 2, 3, 5, 10, 25};
    fs_sample_req_t q = {REQ_SIZE.num_hops = 1 + (int)obelow(r, 3), .seed = onext(r),
                         .want_edge_ids = obelow(r, 4) != 0};
    for (int h = 0; h < q.num_hops; h++) {
        q.fanout[h] = fan[obelow(r, q.num_hops == 3 ? 5 : 6)];
        q.mode[h] = (fs_sample_mode_t)obelow(r, modes);
    }
    int64_t all = obelow(r, 6);
    if (all == 0) {
        q.fanout[0] = FS_FANOUT_ALL;
        for (int h = 1; h < q.num_hops; h++) q.fanout[h] = 1 + (int)obelow(r, 3);
    } else if (all == 1 && q.num_hops > 1) {
        for (int h = 0; h < q.num_hops - 1; h++) q.fanout[h] = 1 + (int)obelow(r, 3);
        q.fanout[q.num_hops - 1] = FS_FANOUT_ALL;
    }
    return q;
}

/* 0..32 seeds, some repeated, the hub and a small-degree node now and then. */
static int64_t random_seeds(orng_t *r, const og_t *g, int64_t *seeds)
{
    int64_t n = obelow(r, 33);
    for (int64_t i = 0; i < n; i++) {
        int64_t c = obelow(r, 8);
        seeds[i] = i && c == 0 ? seeds[obelow(r, i)] : c == 1 ? 0 : c == 2 ? obelow(r, 10) : obelow(r, g->n);
    }
    return n;
}

/* ---- the oracle checks itself -------------------------------------------------- */

Test(oracle, statistics_accept_the_truth_and_reject_bias)
{
    /* the tail function against textbook quantiles */
    static const double q[4][3] = {{3.841459, 1, 0.05}, {18.307038, 10, 0.05}, {124.342113, 100, 0.05},
                                   {6.634897, 1, 0.01}};
    for (int i = 0; i < 4; i++) {
        double p = chi2_sf(q[i][0], q[i][1]);
        CHECK(fabs(p - q[i][2]) < 1e-5, "chi2_sf(%g, %g df): expected %g, found %.7f", q[i][0], q[i][1], q[i][2], p);
    }
    /* Wilson-Hilferty's 1e-7 quantile for 999 df is close to the exact one */
    double z = 5.199338, k = 999, wh = k * pow(1 - 2 / (9 * k) + z * sqrt(2 / (9 * k)), 3), p = chi2_sf(wh, k);
    CHECK(p > 0.5e-7 && p < 2e-7, "chi2_sf(%.1f, 999 df): expected ~1e-7 (Wilson-Hilferty), found %.3g", wh, p);

    /* uniform subsets: a correct sampler passes, one that never picks the
     * last position of the row fails */
    static const int64_t degs[3] = {11, 50, 300};
    for (int i = 0; i < 3; i++) {
        picks_t ok = oracle_subsets(degs[i], 10, 10000, 11 + (uint64_t)i),
                bad = oracle_subsets(degs[i] - 1, 10, 10000, 17);
        stat_t s = stat_uniform_subsets(&ok, degs[i], 10), t = stat_uniform_subsets(&bad, degs[i], 10);
        char what[128];
        snprintf(what, sizeof what, "oracle's own uniform sampler, degree %lld, fanout 10", (long long)degs[i]);
        expect_stat(&s, what);
        CHECK(t.p < P_MIN, "a sampler that never picks position %lld of %lld: expected p < %g, found chi2 = %.1f (p = %.3g)",
              (long long)(degs[i] - 1), (long long)degs[i], P_MIN, t.x, t.p);
        picks_free(&ok), picks_free(&bad);
    }
    /* weighted without replacement: successive sampling and the exponential
     * race agree; a sampler ignoring the weights does not */
    const float *w = wtd.w + wtd.ip[1];
    int64_t deg = deg_of(&wtd, 1);
    float *flat = malloc(sizeof *flat * (size_t)deg);
    for (int64_t i = 0; i < deg; i++) flat[i] = w[i] > 0 ? 1.0f : 0.0f;
    picks_t a = oracle_successive(w, deg, 10, 3000, 5), b = oracle_race(w, deg, 10, 12000, 6),
            c = oracle_successive(flat, deg, 10, 3000, 7);
    stat_t s = stat_two_sample(&a, &b, deg), t = stat_two_sample(&c, &b, deg);
    expect_stat(&s, "successive sampling vs the exponential race, wtd node 1, fanout 10");
    CHECK(t.p < P_MIN, "weights ignored vs the race: expected p < %g, found chi2 = %.1f (p = %.3g)", P_MIN, t.x, t.p);
    /* draws: proportional passes, and a squared-weight sampler fails */
    double *prob = malloc(sizeof *prob * (size_t)deg), *sq = malloc(sizeof *sq * (size_t)deg);
    for (int64_t i = 0; i < deg; i++) prob[i] = w[i], sq[i] = (double)w[i] * w[i];
    picks_t d = oracle_draws(prob, deg, 10, 2000, 9), e = oracle_draws(sq, deg, 10, 2000, 10);
    stat_t ds = stat_draws(&d, prob, deg), es = stat_draws(&e, prob, deg);
    expect_stat(&ds, "oracle's own draws proportional to weight, wtd node 1");
    CHECK(es.p < P_MIN, "draws proportional to weight squared: expected p < %g, found chi2 = %.1f (p = %.3g)", P_MIN,
          es.x, es.p);
    double cz = collision_z(&d, prob, deg);
    CHECK(fabs(cz) < Z_MAX, "collisions among independent draws: expected |z| < %g, found %.2f", Z_MAX, cz);
    free(flat), free(prob), free(sq);
    picks_free(&a), picks_free(&b), picks_free(&c), picks_free(&d), picks_free(&e);
}

/* ---- A. invariants on random requests ---------------------------------------- */

Test(oracle, invariants_hold_on_random_requests_in_every_mode_and_index_width)
{
    og_t *gs[3] = {&hubs, &plaw, &wtd};
    orng_t r = orng(0xa11);
    int64_t seeds[40];
    for (int gi = 0; gi < 3; gi++)
        for (int t = 0; t < 70; t++) {
            fs_sample_req_t q = random_req(&r, gs[gi]->w ? 4 : 2);
            int64_t n = random_seeds(&r, gs[gi], seeds);
            fs_csr_view_t v32 = view_of(gs[gi], FS_DTYPE_I32), v64 = view_of(gs[gi], FS_DTYPE_I64);
            fs_sample_result_t a, b;
            set_ctx(gs[gi], "int32", &q, n);
            run(sa, &v32, seeds, n, &q, &a, NULL);
            check_result(gs[gi], seeds, n, &q, &a);
            set_ctx(gs[gi], "int64", &q, n);
            run(sb, &v64, seeds, n, &q, &b, NULL);
            check_result(gs[gi], seeds, n, &q, &b);
            compare(&a, &b, "int32 indices", "int64 indices"); /* choices depend on (seed, hop, node) only */
        }
}

Test(oracle, small_rows_fanout_all_repeated_seeds_and_empty_requests_are_exact)
{
    fs_csr_view_t v = view_of(&hubs, FS_DTYPE_I32);
    fs_sample_result_t res;
    /* repeated seeds share a local id; rows of degree < = > fanout */
    int64_t seeds[9] = {3, 8, 3, 2, 4, 3, 5, 7, 9};
    fs_sample_req_t q = {REQ_SIZE.num_hops = 2, .fanout = {10, 10}, .seed = 77, .want_edge_ids = 1};
    set_ctx(&hubs, "int32", &q, 9);
    run(sa, &v, seeds, 9, &q, &res, NULL);
    check_result(&hubs, seeds, 9, &q, &res);
    static const int64_t local[9] = {0, 1, 0, 2, 3, 0, 4, 5, 6}, count[7] = {10, 0, 3, 10, 10, 7, 1};
    for (int i = 0; i < 9; i++)
        CHECK(res.seed_local[i] == local[i], "%s: seed_local[%d]: expected %lld, found %lld", ctx, i,
              (long long)local[i], (long long)res.seed_local[i]);
    for (int d = 0; d < 7; d++) {
        int64_t got = res.block[0].dst_offsets[d + 1] - res.block[0].dst_offsets[d];
        CHECK(got == count[d], "%s: dst %d (node %lld): expected %lld edges, found %lld", ctx, d,
              (long long)res.nodes[d], (long long)count[d], (long long)got);
    }
    /* degree <= fanout: every position of the row exactly once */
    for (int d = 0; d < 7; d++) {
        int64_t v0 = res.nodes[d], deg = deg_of(&hubs, v0);
        if (deg > 10) continue;
        char *seen = calloc((size_t)deg + 1, 1);
        for (int64_t e = res.block[0].dst_offsets[d]; e < res.block[0].dst_offsets[d + 1]; e++)
            seen[res.block[0].edge_ids[e] - hubs.ip[v0]]++;
        for (int64_t p = 0; p < deg; p++)
            CHECK(seen[p] == 1, "%s: node %lld (degree %lld <= fanout 10): expected row position %lld once, found "
                  "%d times", ctx, (long long)v0, (long long)deg, (long long)p, seen[p]);
        free(seen);
    }
    /* fanout -1: the hub's whole row, each position once */
    int64_t hub = 0;
    q = (fs_sample_req_t){REQ_SIZE.num_hops = 1, .fanout = {FS_FANOUT_ALL}, .seed = 5, .want_edge_ids = 1};
    set_ctx(&hubs, "int32", &q, 1);
    run(sa, &v, &hub, 1, &q, &res, NULL);
    check_result(&hubs, &hub, 1, &q, &res);
    CHECK(res.block[0].num_edges == 1000 && res.num_nodes == 1001,
          "%s: expected 1000 edges and 1001 nodes for fanout -1 on the hub, found %lld and %lld", ctx,
          (long long)res.block[0].num_edges, (long long)res.num_nodes);
    /* weighted: -1 takes exactly the positive-weight edges; an all-zero row
     * gives nothing in either weighted mode */
    fs_csr_view_t w = view_of(&wtd, FS_DTYPE_I64);
    int64_t wseeds[3] = {0, 4, 3};
    for (int m = FS_SAMPLE_WEIGHTED; m <= FS_SAMPLE_WEIGHTED_REPLACE; m++) {
        q = (fs_sample_req_t){REQ_SIZE.num_hops = 1, .fanout = {FS_FANOUT_ALL}, .mode = {(fs_sample_mode_t)m},
                              .seed = 6, .want_edge_ids = 1};
        set_ctx(&wtd, "int64", &q, 3);
        run(sa, &w, wseeds, 3, &q, &res, NULL);
        check_result(&wtd, wseeds, 3, &q, &res);
        int64_t e0 = res.block[0].dst_offsets[1] - res.block[0].dst_offsets[0];
        int64_t e1 = res.block[0].dst_offsets[2] - res.block[0].dst_offsets[1];
        int64_t e2 = res.block[0].dst_offsets[3] - res.block[0].dst_offsets[2];
        int64_t want0 = m == FS_SAMPLE_WEIGHTED ? 37 : 40, want2 = m == FS_SAMPLE_WEIGHTED ? 1 : 5;
        CHECK(e0 == want0 && e1 == 0 && e2 == want2,
              "%s: expected %lld / 0 / %lld edges for node 0 (37 of 40 positive) / 4 (all zero) / 3 (1 of 5 "
              "positive), found %lld / %lld / %lld",
              ctx, (long long)want0, (long long)want2, (long long)e0, (long long)e1, (long long)e2);
        for (int64_t e = res.block[0].dst_offsets[2]; e < res.block[0].dst_offsets[3]; e++)
            CHECK(res.block[0].edge_ids[e] == wtd.ip[3] + 2, "%s: node 3: expected its one positive edge %lld, found %lld",
                  ctx, (long long)(wtd.ip[3] + 2), (long long)res.block[0].edge_ids[e]);
    }
    /* no seeds: a valid, empty result */
    q = (fs_sample_req_t){REQ_SIZE.num_hops = 3, .fanout = {5, 5, 5}, .seed = 1};
    set_ctx(&hubs, "int32", &q, 0);
    run(sa, &v, seeds, 0, &q, &res, NULL);
    check_result(&hubs, seeds, 0, &q, &res);
    for (int h = 0; h < 3; h++)
        CHECK(res.block[h].num_dst == 0 && res.block[h].num_edges == 0,
              "%s: hop %d: expected an empty block, found %lld dst and %lld edges", ctx, h,
              (long long)res.block[h].num_dst, (long long)res.block[h].num_edges);
}

/* ---- B. distributions ------------------------------------------------------------ */

/* Samples the distinct `nodes` as the seeds of `trials` requests (request
 * seeds from the oracle's RNG), checks every result, and returns node i's
 * picked row positions on hop h in P[i * hops + h]. Seeds are distinct, so
 * node i is local id i and dst i of every hop. */
static picks_t *collect(const og_t *g, fs_dtype_t dt, const int64_t *nodes, int nn, int hops, fs_sample_mode_t mode,
                        int k, int64_t trials, uint64_t seed)
{
    picks_t *P = calloc((size_t)(nn * hops), sizeof *P);
    for (int i = 0; i < nn; i++)
        for (int h = 0; h < hops; h++) P[i * hops + h] = picks_new(trials, k < 0 ? deg_of(g, nodes[i]) : k);
    fs_csr_view_t v = view_of(g, dt);
    fs_sample_req_t q = {REQ_SIZE.num_hops = hops, .want_edge_ids = 1};
    for (int h = 0; h < hops; h++) q.fanout[h] = k, q.mode[h] = mode;
    orng_t r = orng(seed);
    fs_sample_result_t res;
    for (int64_t t = 0; t < trials; t++) {
        q.seed = onext(&r);
        set_ctx(g, dt == FS_DTYPE_I32 ? "int32" : "int64", &q, nn);
        run(sa, &v, nodes, nn, &q, &res, NULL);
        check_result(g, nodes, nn, &q, &res);
        for (int i = 0; i < nn; i++)
            for (int h = 0; h < hops; h++) {
                const fs_block_t *b = &res.block[h];
                picks_t *p = &P[i * hops + h];
                int64_t lo = b->dst_offsets[i], hi = b->dst_offsets[i + 1];
                CHECK(hi - lo <= p->cap, "%s: node %lld hop %d: expected at most %lld picks, found %lld", ctx,
                      (long long)nodes[i], h, (long long)p->cap, (long long)(hi - lo));
                for (int64_t e = lo; e < hi; e++) p->pos[t * p->cap + e - lo] = (int32_t)(b->edge_ids[e] - g->ip[nodes[i]]);
                p->num[t] = (int32_t)(hi - lo);
            }
    }
    return P;
}

static void free_picks(picks_t *P, int n)
{
    for (int i = 0; i < n; i++) picks_free(&P[i]);
    free(P);
}

/* Uniform without replacement, per node and hop: inclusion ~ fanout/degree
 * (rows of degree <= fanout are exact and checked as invariants); with two
 * hops, a node's picks on hop 0 and hop 1 overlap as independent subsets. */
static void uniform_subsets(const og_t *g, fs_dtype_t dt, const int64_t *nodes, int nn, int hops, int k,
                            int64_t trials, uint64_t seed)
{
    picks_t *P = collect(g, dt, nodes, nn, hops, FS_SAMPLE_UNIFORM, k, trials, seed);
    for (int i = 0; i < nn; i++) {
        int64_t deg = deg_of(g, nodes[i]);
        if (deg <= k) continue;
        char what[256];
        for (int h = 0; h < hops; h++) {
            stat_t s = stat_uniform_subsets(&P[i * hops + h], deg, k);
            snprintf(what, sizeof what, "%s node %lld (degree %lld), hop %d, uniform fanout %d, %lld requests: each "
                     "neighbour's inclusion count vs %.1f (fanout/degree)", g->name, (long long)nodes[i],
                     (long long)deg, h, k, (long long)trials, (double)trials * k / (double)deg);
            expect_stat(&s, what);
        }
        if (hops == 2) {
            double z = overlap_z(&P[i * hops], &P[i * hops + 1], deg, k);
            VERDICT(fabs(z) < Z_MAX, "%s node %lld (degree %lld), fanout %d: expected hop 0 and hop 1 picks to overlap "
                  "like independent subsets (|z| < %g), found z = %.2f", g->name, (long long)nodes[i], (long long)deg,
                  k, Z_MAX, z);
        }
    }
    free_picks(P, nn * hops);
}

Test(oracle, uniform_without_replacement_includes_each_neighbour_with_probability_fanout_over_degree)
{
    int64_t h1[5] = {0, 1, 4, 5, 6}, h2[3] = {0, 1, 6}, h3[4] = {1, 4, 5, 6};
    uniform_subsets(&hubs, FS_DTYPE_I32, h1, 5, 2, 10, 6000, 0x101);
    uniform_subsets(&hubs, FS_DTYPE_I64, h2, 3, 1, 25, 3000, 0x102);
    uniform_subsets(&hubs, FS_DTYPE_I64, h3, 4, 1, 1, 4000, 0x103);
    /* the power-law graph: its four hubs and the first rows of degree 11
     * and 12 (just above the fanout) */
    int64_t p[6] = {0, 1, 2, 3, -1, -1};
    for (int64_t v = 4; v < plaw.n && (p[4] < 0 || p[5] < 0); v++) {
        if (deg_of(&plaw, v) == 11 && p[4] < 0) p[4] = v;
        if (deg_of(&plaw, v) == 12 && p[5] < 0) p[5] = v;
    }
    cr_assert(p[4] > 0 && p[5] > 0, "plaw: expected rows of degree 11 and 12, found %lld and %lld", (long long)p[4],
              (long long)p[5]);
    uniform_subsets(&plaw, FS_DTYPE_I64, p, 6, 2, 10, 6000, 0x104);
}

/* With replacement, per node and hop: draws ~ prob (uniform, or the
 * weights), and independent within a request (equal pairs as expected). */
static void draws(const og_t *g, fs_dtype_t dt, const int64_t *nodes, int nn, int hops, fs_sample_mode_t mode, int k,
                  int64_t trials, uint64_t seed)
{
    picks_t *P = collect(g, dt, nodes, nn, hops, mode, k, trials, seed);
    for (int i = 0; i < nn; i++) {
        int64_t v = nodes[i], deg = deg_of(g, v);
        double *prob = malloc(sizeof *prob * (size_t)(deg + 1));
        int64_t cells = 0;
        for (int64_t p = 0; p < deg; p++) {
            prob[p] = mode == FS_SAMPLE_WEIGHTED_REPLACE ? g->w[g->ip[v] + p] : 1;
            cells += prob[p] > 0;
        }
        for (int h = 0; h < hops && cells > 1; h++) {
            char what[256];
            const picks_t *pk = &P[i * hops + h];
            double *c = picks_counts(pk, deg);
            for (int64_t p = 0; p < deg; p++)
                CHECK(prob[p] > 0 || c[p] == 0, "%s node %lld hop %d: expected weight-0 position %lld never drawn, "
                      "found %.0f draws", g->name, (long long)v, h, (long long)p, c[p]);
            free(c);
            stat_t s = stat_draws(pk, prob, deg);
            snprintf(what, sizeof what, "%s node %lld (degree %lld), hop %d, %s fanout %d, %lld requests: draws vs "
                     "%s", g->name, (long long)v, (long long)deg, h, mode_name(mode), k, (long long)trials,
                     mode == FS_SAMPLE_WEIGHTED_REPLACE ? "weight / total weight" : "1 / degree");
            expect_stat(&s, what);
            double z = collision_z(pk, prob, deg);
            VERDICT(fabs(z) < Z_MAX, "%s: expected as many equal pairs within a request as independent draws with these "
                  "probabilities give (|z| < %g), found z = %.2f", what, Z_MAX, z);
        }
        free(prob);
    }
    free_picks(P, nn * hops);
}

Test(oracle, uniform_with_replacement_draws_each_neighbour_with_probability_one_over_degree)
{
    int64_t h1[6] = {0, 1, 2, 4, 7, 9}, h2[3] = {2, 4, 6}, p[4] = {0, 1, 2, 3};
    draws(&hubs, FS_DTYPE_I32, h1, 6, 2, FS_SAMPLE_UNIFORM_REPLACE, 10, 4000, 0x201);
    draws(&hubs, FS_DTYPE_I64, h2, 3, 1, FS_SAMPLE_UNIFORM_REPLACE, FS_FANOUT_ALL, 2000, 0x202);
    draws(&plaw, FS_DTYPE_I64, p, 4, 1, FS_SAMPLE_UNIFORM_REPLACE, 5, 8000, 0x203);
}

Test(oracle, weighted_with_replacement_draws_each_neighbour_in_proportion_to_its_weight)
{
    int64_t w[7] = {0, 1, 2, 3, 5, 6, 7};
    draws(&wtd, FS_DTYPE_I32, w, 7, 2, FS_SAMPLE_WEIGHTED_REPLACE, 10, 4000, 0x301);
    draws(&wtd, FS_DTYPE_I64, w, 7, 1, FS_SAMPLE_WEIGHTED_REPLACE, FS_FANOUT_ALL, 500, 0x302);
}

/* Weighted without replacement, per node and hop: the engine's inclusion
 * counts against 4x as many requests of the oracle's successive sampling
 * (rows with no more positive weights than the fanout are exact). */
static void weighted_subsets(const og_t *g, fs_dtype_t dt, const int64_t *nodes, int nn, int hops, int k,
                             int64_t trials, uint64_t seed)
{
    picks_t *P = collect(g, dt, nodes, nn, hops, FS_SAMPLE_WEIGHTED, k, trials, seed);
    for (int i = 0; i < nn; i++) {
        int64_t v = nodes[i], deg = deg_of(g, v);
        if (positive_of(g, v) <= k) continue;
        picks_t o = oracle_successive(g->w + g->ip[v], deg, k, 4 * trials, seed ^ (uint64_t)v << 20);
        for (int h = 0; h < hops; h++) {
            char what[256];
            stat_t s = stat_two_sample(&P[i * hops + h], &o, deg);
            snprintf(what, sizeof what, "%s node %lld (degree %lld), hop %d, weighted fanout %d: the engine's "
                     "inclusion counts over %lld requests vs successive sampling (expected = oracle rate x %lld)",
                     g->name, (long long)v, (long long)deg, h, k, (long long)trials, (long long)trials);
            expect_stat(&s, what);
        }
        picks_free(&o);
    }
    free_picks(P, nn * hops);
}

Test(oracle, weighted_without_replacement_matches_successive_sampling_by_weight)
{
    int64_t w[3] = {0, 1, 2}, one[5] = {0, 1, 2, 6, 7};
    weighted_subsets(&wtd, FS_DTYPE_I32, w, 3, 2, 3, 6000, 0x401);
    weighted_subsets(&wtd, FS_DTYPE_I64, w, 3, 1, 10, 6000, 0x402);
    /* one pick: exactly P = weight / total, a one-sample test */
    picks_t *P = collect(&wtd, FS_DTYPE_I32, one, 5, 1, FS_SAMPLE_WEIGHTED, 1, 4000, 0x403);
    for (int i = 0; i < 5; i++) {
        int64_t v = one[i], deg = deg_of(&wtd, v);
        double *prob = malloc(sizeof *prob * (size_t)deg);
        for (int64_t p = 0; p < deg; p++) prob[p] = wtd.w[wtd.ip[v] + p];
        stat_t s = stat_draws(&P[i], prob, deg);
        char what[200];
        snprintf(what, sizeof what, "wtd node %lld (degree %lld), weighted fanout 1, 4000 requests: the pick vs "
                 "weight / total weight", (long long)v, (long long)deg);
        expect_stat(&s, what);
        free(prob);
    }
    free_picks(P, 5);
}

/* ---- C. a routed multi-part view ------------------------------------------------ */

/* Part 1 holds copies of the rows of every third node in reverse node
 * order, part 2 those of the other multiples of 5 in order; the route sends
 * those nodes there and the rest to part 0 at their own id. */
typedef struct {
    fs_csr_view_t v;
    int64_t *ip[3], *ix64[3];
    int32_t *ix32[3];
    float *w[3];
    uint64_t *route;
} routed_t;

static void routed_build(routed_t *rt, const og_t *g, fs_dtype_t dt)
{
    memset(rt, 0, sizeof *rt);
    rt->v = view_of(g, dt);
    rt->route = malloc(sizeof *rt->route * (size_t)g->n);
    for (int64_t v = 0; v < g->n; v++) rt->route[v] = (uint64_t)v; /* part 0, row v */
    for (int p = 1; p <= 2; p++) {
        int64_t rows = 0, m = 0;
        rt->ip[p] = calloc((size_t)g->n + 1, sizeof *rt->ip[p]);
        rt->ix64[p] = malloc(sizeof *rt->ix64[p] * (size_t)(g->m + 1));
        rt->ix32[p] = malloc(sizeof *rt->ix32[p] * (size_t)(g->m + 1));
        rt->w[p] = g->w ? malloc(sizeof *rt->w[p] * (size_t)(g->m + 1)) : NULL;
        for (int64_t j = 0; j < g->n; j++) {
            int64_t v = p == 1 ? g->n - 1 - j : j;
            if (p == 1 ? v % 3 != 0 : v % 3 == 0 || v % 5 != 0) continue;
            for (int64_t e = g->ip[v]; e < g->ip[v + 1]; e++, m++) {
                rt->ix64[p][m] = g->ix64[e], rt->ix32[p][m] = g->ix32[e];
                if (g->w) rt->w[p][m] = g->w[e];
            }
            rt->route[v] = FS_ROUTE(p, rows);
            rt->ip[p][++rows] = m;
        }
        rt->v.part[p] = (fs_csr_part_t){.indptr = rt->ip[p],
                                        .indices = dt == FS_DTYPE_I32 ? (const void *)rt->ix32[p] : rt->ix64[p],
                                        .weights = rt->w[p], .rows = rows};
    }
    rt->v.num_parts = 3;
    rt->v.route = rt->route;
}

static void routed_free(routed_t *rt)
{
    for (int p = 1; p <= 2; p++) free(rt->ip[p]), free(rt->ix64[p]), free(rt->ix32[p]), free(rt->w[p]);
    free(rt->route);
}

Test(oracle, routed_multi_part_view_samples_exactly_like_the_single_part_view)
{
    og_t *gs[3] = {&hubs, &plaw, &wtd};
    orng_t r = orng(0xc0de);
    int64_t seeds[40];
    for (int gi = 0; gi < 3; gi++)
        for (int dti = 0; dti < 2; dti++) {
            fs_dtype_t dt = dti ? FS_DTYPE_I64 : FS_DTYPE_I32;
            const char *dn = dti ? "int64" : "int32";
            routed_t rt;
            routed_build(&rt, gs[gi], dt);
            fs_csr_view_t plain = view_of(gs[gi], dt), ident = plain;
            uint64_t *id_route = malloc(sizeof *id_route * (size_t)gs[gi]->n);
            for (int64_t v = 0; v < gs[gi]->n; v++) id_route[v] = (uint64_t)v;
            ident.route = id_route;
            for (int t = 0; t < 25; t++) {
                fs_sample_req_t q = random_req(&r, gs[gi]->w ? 4 : 2);
                int64_t n = random_seeds(&r, gs[gi], seeds);
                fs_sample_result_t a, b;
                fs_gather_counters_t topo = {{0}, {0}};
                char view[64];
                snprintf(view, sizeof view, "routed 3-part %s", dn);
                set_ctx(gs[gi], view, &q, n);
                run(sa, &plain, seeds, n, &q, &a, NULL);
                run(sb, &rt.v, seeds, n, &q, &b, &topo);
                check_result(gs[gi], seeds, n, &q, &b);
                compare(&a, &b, "single-part view", "routed view");
                /* one neighbour list read per dst per hop, from the part its route names */
                uint64_t want[3] = {0, 0, 0};
                for (int h = 0; h < q.num_hops; h++)
                    for (int64_t d = 0; d < b.block[h].num_dst; d++) want[rt.route[b.nodes[d]] >> 48]++;
                for (int p = 0; p < 3; p++)
                    CHECK(topo.rows[p] == want[p], "%s: expected %llu neighbour lists read from part %d, found %llu",
                          ctx, (unsigned long long)want[p], p, (unsigned long long)topo.rows[p]);
                for (int p = 3; p < FS_MAX_TIERS; p++)
                    CHECK(topo.rows[p] == 0, "%s: expected no reads from absent part %d, found %llu", ctx, p,
                          (unsigned long long)topo.rows[p]);
                snprintf(view, sizeof view, "identity-routed %s", dn);
                set_ctx(gs[gi], view, &q, n);
                run(sb, &ident, seeds, n, &q, &b, NULL);
                compare(&a, &b, "single-part view", "identity route");
            }
            free(id_route);
            routed_free(&rt);
        }
}
