/* test_locality_boost.c — what a boost s does to the picks, and who
 * chooses s: the water-filled probabilities (sum preserved, ratios kept,
 * clamping at 1) and their closed form for the uniform sampler; Monte-Carlo
 * unbiasedness of the importance-weighted estimator on a star (and that the
 * test would catch the plain weights' bias); Algorithm 2's transitions and
 * bad input. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fs_locality.h"
#include "fs_rng.h"
#include "fs_sample.h"
#include "locality.h"
#include "locality_fixture.h"

TestSuite(locality, .init = setup, .fini = teardown, .timeout = 120);
/* ---- probabilities ------------------------------------------------------------------ */

Test(locality, rescale_preserves_the_sum_and_ratios_with_clamping)
{
    enum { MAXN = 200 };
    double q[MAXN], qn[MAXN], svals[5] = {1, 1.5, 2, 8, 1000};
    uint8_t pref[MAXN];
    fs_rng_t r = fs_rng_make(5, 5);
    int clamped_rows = 0;
    fs_error_t err = {0};
    for (int row = 0; row < 2000; row++) {
        int64_t n = 1 + (int64_t)fs_rng_below(&r, MAXN);
        double s = svals[row % 5], sum = 0, sum_new = 0;
        for (int64_t j = 0; j < n; j++) {
            q[j] = row % 3 == 0 ? 0.5 : fs_rng_unit(&r); /* equal q (the uniform sampler) or arbitrary */
            pref[j] = fs_rng_below(&r, 4) == 0;
            sum += q[j];
        }
        cr_assert_eq(fs_las_rescale(q, pref, n, s, qn, &err), FS_OK, "%s", err.msg);
        int clamped = 0;
        double ratio = -1;
        for (int64_t j = 0; j < n; j++) {
            cr_assert(qn[j] >= 0 && qn[j] <= 1, "q_new[%lld] = %g", (long long)j, qn[j]);
            sum_new += qn[j];
            if (qn[j] == 1 && q[j] < 1) clamped = 1;
            if (qn[j] < 1 && q[j] > 0) { /* unclamped: q_new / (w q) is one constant c */
                double c = qn[j] / ((pref[j] ? s : 1) * q[j]);
                if (ratio < 0) ratio = c;
                cr_assert_float_eq(c, ratio, 1e-12 * ratio, "row %d: ratios preserved", row);
                if (pref[j]) cr_assert_geq(qn[j], q[j] * (1 - 1e-12), "preferred never lose probability");
            }
        }
        cr_assert_float_eq(sum_new, sum, 1e-9 * sum, "row %d (n %lld, s %g): %.17g vs %.17g", row, (long long)n, s,
                           sum_new, sum);
        clamped_rows += clamped;
        if (s == 1)
            for (int64_t j = 0; j < n; j++) cr_assert_float_eq(qn[j], q[j], 1e-15, "s = 1 changes nothing");
    }
    cr_assert_gt(clamped_rows, 100, "clamping was exercised (%d rows)", clamped_rows);
}

Test(locality, uniform_probs_closed_form_and_clamping)
{
    double qp, qo;
    /* deg 40, 8 preferred, fanout 10, s 2: c = 10 / (2*8*.25 + 32*.25) = 5/6 */
    fs_las_uniform_probs(40, 8, 10, 2, &qp, &qo);
    cr_assert_float_eq(qp, 2 * 0.25 * 10 / 12.0, 1e-15);
    cr_assert_float_eq(qo, 0.25 * 10 / 12.0, 1e-15);
    /* deg 10, 2 preferred, fanout 5, s 8: 8*.5*5/12 > 1 clamps; the rest share 3 */
    fs_las_uniform_probs(10, 2, 5, 8, &qp, &qo);
    cr_assert_float_eq(qp, 1.0, 1e-15);
    cr_assert_float_eq(qo, 3.0 / 8, 1e-15);
    /* the §4 normaliser: M = (Σ_Q s q + Σ_rest q) / Σ q, q_new = s q / M */
    for (int64_t deg = 2; deg <= 60; deg += 3)
        for (int64_t m = 0; m <= deg; m++)
            for (int64_t k = 1; k <= deg + 2; k += 4)
                for (double s = 1; s <= 16; s *= 2) {
                    fs_las_uniform_probs(deg, m, k, s, &qp, &qo);
                    double q = (double)(k < deg ? k : deg) / (double)deg;
                    double M = (s * q * (double)m + q * (double)(deg - m)) / (q * (double)deg);
                    if (s * q / M <= 1) {
                        if (m > 0) cr_assert_float_eq(qp, s * q / M, 1e-12);
                        if (m < deg) cr_assert_float_eq(qo, q / M, 1e-12);
                    } else {
                        cr_assert_float_eq(qp, 1.0, 1e-12, "clamped: deg %lld m %lld k %lld s %g: %.17g",
                                           (long long)deg, (long long)m, (long long)k, s, qp);
                    }
                    double total = (double)m * qp + (double)(deg - m) * qo, want = q * (double)deg;
                    cr_assert_float_eq(total, want, 1e-9 * want, "deg %lld m %lld k %lld s %g", (long long)deg,
                                       (long long)m, (long long)k, s);
                    /* and the general water-filling agrees */
                    double qq[64], qn[64];
                    uint8_t pf[64];
                    for (int64_t j = 0; j < deg; j++) qq[j] = q, pf[j] = j < m;
                    fs_error_t err = {0};
                    cr_assert_eq(fs_las_rescale(qq, pf, deg, s, qn, &err), FS_OK);
                    if (m > 0) cr_assert_float_eq(qn[0], qp, 1e-12);
                    if (m < deg) cr_assert_float_eq(qn[deg - 1], qo, 1e-12);
                }
}

/* ---- Monte-Carlo unbiasedness -------------------------------------------------------- */

/* A star: node 0 -> 1..deg, the first `m` leaves preferred; leaf j carries
 * x_j, large on preferred leaves so a boost without the right weights is
 * visibly biased. */
typedef struct {
    int64_t indptr[66];
    int32_t indices[64];
    uint64_t pref[2];
    double x[66];
    int64_t deg, m;
} star_t;

static void star_init(star_t *st, int64_t deg, int64_t m)
{
    memset(st, 0, sizeof *st);
    st->deg = deg, st->m = m;
    for (int64_t j = 0; j < deg; j++) st->indices[j] = (int32_t)(j + 1);
    st->indptr[0] = 0;
    for (int64_t v = 1; v <= deg + 1; v++) st->indptr[v] = deg;
    for (int64_t j = 1; j <= deg; j++) {
        int pref = j <= m;
        if (pref) st->pref[j >> 6] |= 1ULL << (j & 63);
        st->x[j] = pref ? 10.0 + (double)j : 0.1 * (double)j;
    }
}

typedef struct {
    double mean, se, biased_mean, biased_se, pref_per_sample;
} mc_t;

/* R requests of one hop from node 0; the estimator (1/deg) Σ x_j w_j, and
 * for contrast the same samples weighted as if plain (deg / k). */
static mc_t monte_carlo(const star_t *st, int fanout, double s, int R)
{
    fs_csr_view_t g;
    fs_csr_view_init(&g, st->deg + 1, st->indptr, st->indices, FS_DTYPE_I32, NULL);
    fs_locality_t loc = {.s = s, .num_levels = 1, .num_nodes = st->deg + 1, .pref = {st->pref}};
    int64_t seed = 0, k = fanout < st->deg ? fanout : st->deg;
    double sum = 0, sum2 = 0, bsum = 0, bsum2 = 0, prefs = 0;
    for (int r = 0; r < R; r++) {
        int fan[1] = {fanout};
        fs_sample_req_t req = req_of(1, fan, (uint64_t)r * 2654435761ULL + 17);
        fs_sample_result_t res;
        fs_las_weights_t w;
        fs_error_t err = {0};
        cr_assert_eq(fs_sample_locality_cpu(las, &g, &seed, 1, &req, &loc, &res, &w, NULL, &err), FS_OK, "%s",
                     err.msg);
        double y = 0, yb = 0;
        for (int64_t e = 0; e < res.block[0].num_edges; e++) {
            int64_t j = res.nodes[res.block[0].edge_src[e]];
            y += st->x[j] * w.weight[0][e];
            yb += st->x[j] * (double)st->deg / (double)k;
            prefs += j <= st->m;
        }
        y /= (double)st->deg, yb /= (double)st->deg;
        sum += y, sum2 += y * y, bsum += yb, bsum2 += yb * yb;
    }
    mc_t out;
    out.mean = sum / R;
    out.se = sqrt((sum2 / R - out.mean * out.mean) / (R - 1));
    out.biased_mean = bsum / R;
    out.biased_se = sqrt((bsum2 / R - out.biased_mean * out.biased_mean) / (R - 1));
    out.pref_per_sample = prefs / R;
    return out;
}

static double star_mean(const star_t *st)
{
    double m = 0;
    for (int64_t j = 1; j <= st->deg; j++) m += st->x[j];
    return m / (double)st->deg;
}

Test(locality, weighted_estimator_is_unbiased_and_the_boost_is_real)
{
    enum { R = 20000 };
    star_t st;
    /* deg 40, 8 preferred, fanout 10 (no clamping); deg 10, 2 preferred,
     * fanout 5 (preferred clamp to 1 for s >= 4) */
    int64_t degs[2] = {40, 10}, ms[2] = {8, 2};
    int fans[2] = {10, 5};
    for (int c = 0; c < 2; c++) {
        star_init(&st, degs[c], ms[c]);
        double mu = star_mean(&st), plain_pref = (double)ms[c] * fans[c] / (double)degs[c];
        mc_t base = monte_carlo(&st, fans[c], 1, R);
        cr_assert(fabs(base.mean - mu) < 5 * base.se, "s = 1: %g vs %g (se %g)", base.mean, mu, base.se);
        cr_assert(fabs(base.pref_per_sample - plain_pref) < 0.05 * plain_pref, "plain picks %g preferred, want %g",
                  base.pref_per_sample, plain_pref);
        double svals[3] = {2, 4, 8};
        for (int i = 0; i < 3; i++) {
            mc_t r = monte_carlo(&st, fans[c], svals[i], R);
            cr_log_info("deg %lld s %g: estimate %.4f +- %.4f (true %.4f), plain-weighted %.4f, %.2f preferred "
                        "per sample (plain %.2f)", (long long)degs[c], svals[i], r.mean, r.se, mu, r.biased_mean,
                        r.pref_per_sample, plain_pref);
            cr_assert(fabs(r.mean - mu) < 5 * r.se, "s = %g: estimate %g vs mean %g (se %g)", svals[i], r.mean, mu,
                      r.se);
            /* the boost is real: more preferred picks, and the plain weights would be biased */
            cr_assert_gt(r.pref_per_sample, plain_pref * 1.3, "s = %g: %g preferred picks vs plain %g", svals[i],
                         r.pref_per_sample, plain_pref);
            cr_assert(fabs(r.biased_mean - mu) > 5 * r.biased_se, "s = %g: plain weights should be biased",
                      svals[i]);
            double qp, qo;
            fs_las_uniform_probs(degs[c], ms[c], fans[c], svals[i], &qp, &qo);
            double want = qp * (double)ms[c];
            cr_assert(fabs(r.pref_per_sample - want) < 0.03 * want + 0.01, "s = %g: %g preferred, expected %g",
                      svals[i], r.pref_per_sample, want);
        }
    }
}

/* ---- Algorithm 2 ------------------------------------------------------------------------ */

static double step(fs_las_ctl_t *c, double r)
{
    double s = -1;
    fs_error_t err = {0};
    cr_assert_eq(fs_las_ctl_update(c, r, &s, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(s, c->s);
    return s;
}

Test(locality, algorithm2_transitions)
{
    fs_las_ctl_t c;
    fs_error_t err = {0};
    /* doubling while loading dominates, fixed at MAXS */
    cr_assert_eq(fs_las_ctl_init(&c, NULL, &err), FS_OK);
    cr_assert_eq(c.s, 1);
    cr_assert_eq(step(&c, 0.5), 2);
    cr_assert_eq(c.pre, 1);
    cr_assert_eq(step(&c, 0.5), 4);
    cr_assert_eq(step(&c, 0.5), 8);
    cr_assert(!c.fixed);
    cr_assert_eq(step(&c, 0.5), 8, "s >= MAXS fixes s");
    cr_assert(c.fixed);
    cr_assert_eq(step(&c, 0.01), 8, "fixed stays fixed");
    cr_assert_eq(c.epochs, 5);
    /* overshoot, halve back towards pre, then fixed inside [lt, ut] */
    fs_las_ctl_init(&c, NULL, &err);
    cr_assert_eq(step(&c, 0.3), 2);
    cr_assert_eq(step(&c, 0.1), 1.5, "(s + pre) / 2");
    cr_assert_eq(step(&c, 0.1), 1.25);
    cr_assert_eq(step(&c, 0.17), 1.25);
    cr_assert(c.fixed, "r in [lt, ut] fixes s");
    cr_assert_eq(step(&c, 0.9), 1.25);
    /* thresholds are inclusive bounds of the fixed band */
    fs_las_ctl_init(&c, NULL, &err);
    cr_assert_eq(step(&c, 0.2), 1);
    cr_assert(c.fixed, "r = ut is not above ut");
    fs_las_ctl_init(&c, NULL, &err);
    cr_assert_eq(step(&c, 0.05), 1, "fast already at s = 1: keep the plain sampler");
    cr_assert(c.fixed);
    /* doubling is capped at MAXS: 1, 2, 1.5, 3, 6, then 8 (not 12) */
    fs_las_ctl_init(&c, NULL, &err);
    cr_assert_eq(step(&c, 0.3), 2);
    cr_assert_eq(step(&c, 0.1), 1.5);
    cr_assert_eq(step(&c, 0.3), 3);
    cr_assert_eq(c.pre, 1.5);
    cr_assert_eq(step(&c, 0.3), 6);
    cr_assert_eq(step(&c, 0.3), 8);
    cr_assert_eq(step(&c, 0.3), 8);
    cr_assert(c.fixed);
    /* custom thresholds and MAXS */
    fs_las_ctl_opts_t o = {.lt = 0.3, .ut = 0.4, .maxs = 5};
    cr_assert_eq(fs_las_ctl_init(&c, &o, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(step(&c, 0.5), 2);
    cr_assert_eq(step(&c, 0.35), 2);
    cr_assert(c.fixed);
}

Test(locality, algorithm2_bad_input)
{
    fs_las_ctl_t c;
    fs_error_t err = {0};
    double s;
    cr_assert_eq(fs_las_ctl_init(&c, NULL, &err), FS_OK);
    cr_assert_eq(fs_las_ctl_update(&c, NAN, &s, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "loading ratio"), "%s", err.msg);
    cr_assert_eq(fs_las_ctl_update(&c, 1.5, &s, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fs_las_ctl_update(&c, -0.1, &s, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(c.s, 1);
    cr_assert_eq(c.epochs, 0, "a bad ratio leaves the state alone");
    cr_assert_eq(fs_las_ctl_update(NULL, 0.5, &s, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fs_las_ctl_init(NULL, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    fs_las_ctl_opts_t o = {.lt = 0.3, .ut = 0.2, .maxs = 8};
    cr_assert_eq(fs_las_ctl_init(&c, &o, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "lt = 0.3"), "%s", err.msg);
    o = (fs_las_ctl_opts_t){.lt = 0.1, .ut = 0.2, .maxs = 0.5};
    cr_assert_eq(fs_las_ctl_init(&c, &o, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "MAXS"), "%s", err.msg);
    o.maxs = NAN;
    cr_assert_eq(fs_las_ctl_init(&c, &o, &err), FS_ERR_INVALID_ARGUMENT);
    o = (fs_las_ctl_opts_t){.lt = NAN, .ut = 0.2, .maxs = 8};
    cr_assert_eq(fs_las_ctl_init(&c, &o, &err), FS_ERR_INVALID_ARGUMENT);
}
