/* test_oracle_distributions.c — the k-hop sampler's distributions against
 * the oracle of oracle_fixture.h (B): by chi-square, per node, over
 * thousands of request seeds, uniform without replacement includes each
 * neighbour with probability fanout/degree, draws with replacement are
 * uniform or proportional to weight, weighted without replacement matches
 * the oracle's own successive sampling (two-sample test), and one node's
 * picks on two hops are independent; every result is also checked exactly.
 * The statistics and the oracle's own samplers are here, and are shown first
 * to accept a correct sampler and reject biased ones. A statistical verdict
 * fails below p = 1e-7 (about a hundred verdicts: a false alarm is ~1e-5
 * likely). FS_ORACLE_VERBOSE=1 prints every chi-square with its p-value. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_sample.h"
#include "oracle_fixture.h"

#define P_MIN 1e-7  /* a chi-square verdict fails below this p-value */
#define Z_MAX 5.33  /* |z| beyond this: two-sided p < 1e-7 */

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

TestSuite(oracle, .init = setup, .fini = teardown, .timeout = 120);

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
