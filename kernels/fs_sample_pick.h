/* fs_sample_pick.h — choosing which neighbours of one node to sample. Shared
 * by the CPU engine, the naive reference and the CUDA kernel, so all three
 * make the identical random choices for a (seed, hop, node).
 *
 * Floating point that decides a pick must round the same on CPU and GPU:
 * only IEEE basic operations (correctly rounded everywhere), never a libm
 * call (glibc's and CUDA's log differ in the last bit), and no fused
 * multiply-add (device code spells its products and sums with the _rn
 * intrinsics; the host build passes -ffp-contract=off).
 *
 * Uniform without replacement uses Floyd's algorithm (Bentley & Floyd 1987):
 * exactly k draws for a uniformly random k-subset of [0, deg), which keeps
 * docs/algorithms.md §5's O(fanout) bound without the rejection loop's retries when
 * k is close to deg. Membership is a linear scan of the picks so far: k is a
 * fanout (tens), and the scan stays in registers / L1. */
#ifndef FS_SAMPLE_PICK_H
#define FS_SAMPLE_PICK_H

#include "fs_rng.h"

/* The per-(request, hop, node) random stream. */
FS_HD fs_rng_t fs_pick_rng(uint64_t seed, int hop, int64_t node)
{
    return fs_rng_make(seed ^ ((uint64_t)(hop + 1) * 0xd1b54a32d192ed03ULL), (uint64_t)node);
}

/* k distinct positions in [0, deg), deg > k > 0. */
FS_HD void fs_pick_uniform(fs_rng_t *rng, int64_t deg, int64_t k, int64_t *pos)
{
    int64_t m = 0;
    for (int64_t j = deg - k; j < deg; j++) {
        int64_t t = (int64_t)fs_rng_below(rng, (uint64_t)j + 1);
        int seen = 0;
        for (int64_t q = 0; q < m; q++) seen |= pos[q] == t;
        pos[m++] = seen ? j : t;
    }
}

/* k positions in [0, deg) with replacement, deg > 0. */
FS_HD void fs_pick_replace(fs_rng_t *rng, int64_t deg, int64_t k, int64_t *pos)
{
    for (int64_t q = 0; q < k; q++) pos[q] = (int64_t)fs_rng_below(rng, (uint64_t)deg);
}

/* A time-sorted row's eligibility bound for temporal sampling
 * (docs/algorithms.md §9): the first position in [0, n) with t[p] > v
 * (upper) or t[p] >= v (lower). */
FS_HD int64_t fs_pick_time_bound(const int64_t *t, int64_t n, int64_t v, int upper)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (upper ? t[mid] <= v : t[mid] < v) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* ---- weighted picks ------------------------------------------------------ */

#ifdef __CUDA_ARCH__
#define FS_DMUL(a, b) __dmul_rn((a), (b))
#define FS_DADD(a, b) __dadd_rn((a), (b))
#else
#define FS_DMUL(a, b) ((a) * (b))
#define FS_DADD(a, b) ((a) + (b))
#endif

/* log(x) for finite x in [2^-1022, 1], the same bits on every processor:
 * x = m 2^e with m in [sqrt(1/2), sqrt(2)), then log m = 2 atanh(s), s =
 * (m-1)/(m+1), |s| <= 0.172, by its series to s^21 (error < 1e-16 relative).
 * Accurate to a few ulp, which is all a sampling key needs. */
FS_HD double fs_pick_log(double x)
{
    union { double d; uint64_t u; } b;
    b.d = x;
    int e = (int)((b.u >> 52) & 0x7ff) - 1023;
    b.u = (b.u & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL; /* m in [1, 2) */
    double m = b.d;
    if (m > 1.4142135623730951) m = FS_DMUL(m, 0.5), e++; /* exact */
    double s = (m - 1.0) / (m + 1.0), s2 = FS_DMUL(s, s), p = 1.0 / 21.0;
    for (int j = 9; j >= 0; j--) p = FS_DADD(FS_DMUL(p, s2), 1.0 / (2 * j + 1));
    return FS_DADD(FS_DMUL((double)e, 0.69314718055994530942), FS_DMUL(FS_DMUL(2.0, s), p));
}

/* Efraimidis-Spirakis weighted sampling without replacement: the k largest
 * keys log(u)/w; weights that are not > 0 never win. One draw per position
 * whatever its weight, so streams stay aligned. key and pos hold k entries.
 * Writes positions in descending key order; returns how many (k, or the
 * number of positive weights when fewer). */
FS_HD void fs_pick_sift_down(double *key, int64_t *pos, int64_t m, int64_t i)
{
    double k = key[i];
    int64_t p = pos[i], c;
    while ((c = 2 * i + 1) < m) {
        if (c + 1 < m && key[c + 1] < key[c]) c++;
        if (key[c] >= k) break;
        key[i] = key[c], pos[i] = pos[c], i = c;
    }
    key[i] = k, pos[i] = p;
}

FS_HD int64_t fs_pick_weighted(fs_rng_t *rng, const float *w, int64_t deg, int64_t k, double *key, int64_t *pos)
{
    int64_t m = 0;
    for (int64_t p = 0; p < deg; p++) {
        double u = fs_rng_unit(rng), wp = w[p];
        if (!(wp > 0)) continue;
        double kp = fs_pick_log(1.0 - u) / wp; /* 1 - u is exact and in (0, 1] */
        if (m < k) { /* push onto the min-heap, sift up */
            int64_t i = m++;
            while (i > 0 && key[(i - 1) / 2] > kp) key[i] = key[(i - 1) / 2], pos[i] = pos[(i - 1) / 2], i = (i - 1) / 2;
            key[i] = kp, pos[i] = p;
        } else if (kp > key[0]) { /* beats the smallest kept key */
            key[0] = kp, pos[0] = p;
            fs_pick_sift_down(key, pos, m, 0);
        }
    }
    for (int64_t end = m - 1; end > 0; end--) { /* pop minima to the back: descending */
        double tk = key[0];
        int64_t tp = pos[0];
        key[0] = key[end], pos[0] = pos[end];
        key[end] = tk, pos[end] = tp;
        fs_pick_sift_down(key, pos, end, 0);
    }
    return m;
}

/* Weighted sampling with replacement, k > 0 draws: draw q lands on the
 * first position whose running weight sum (a double, summed in position
 * order, weights that are not > 0 adding nothing) exceeds fs_rng_unit *
 * total, or on the last position if rounding put the draw at the total.
 * Returns k, or 0 when no weight is positive. Two ways to the same
 * positions: the CPU binary-searches a prefix-sum array of deg entries
 * (_cdf); the GPU, with no room for one, sorts the k draws and walks the
 * row once (_walk, r and order of k entries). test_sample checks that they
 * agree. */
FS_HD double fs_pick_weight(const float *w, int64_t p)
{
    return w[p] > 0 ? (double)w[p] : 0.0;
}

FS_HD int64_t fs_pick_weighted_replace_cdf(fs_rng_t *rng, const float *w, int64_t deg, int64_t k, double *cdf,
                                           int64_t *pos)
{
    double total = 0;
    for (int64_t p = 0; p < deg; p++) cdf[p] = total = FS_DADD(total, fs_pick_weight(w, p));
    if (!(total > 0)) return 0;
    for (int64_t q = 0; q < k; q++) {
        double r = FS_DMUL(fs_rng_unit(rng), total);
        int64_t lo = 0, hi = deg - 1;
        while (lo < hi) {
            int64_t mid = (lo + hi) / 2;
            if (cdf[mid] > r) hi = mid;
            else lo = mid + 1;
        }
        pos[q] = lo;
    }
    return k;
}

FS_HD int64_t fs_pick_weighted_replace_walk(fs_rng_t *rng, const float *w, int64_t deg, int64_t k, double *r,
                                            int *order, int64_t *pos)
{
    double total = 0;
    for (int64_t p = 0; p < deg; p++) total = FS_DADD(total, fs_pick_weight(w, p));
    if (!(total > 0)) return 0;
    for (int64_t q = 0; q < k; q++) { /* insertion sort by value, ties in draw order */
        double x = FS_DMUL(fs_rng_unit(rng), total);
        int64_t i = q;
        while (i > 0 && r[i - 1] > x) r[i] = r[i - 1], order[i] = order[i - 1], i--;
        r[i] = x, order[i] = (int)q;
    }
    double sum = 0;
    int64_t q = 0;
    for (int64_t p = 0; p < deg && q < k; p++) {
        sum = FS_DADD(sum, fs_pick_weight(w, p));
        while (q < k && sum > r[q]) pos[order[q++]] = p;
    }
    while (q < k) pos[order[q++]] = deg - 1;
    return k;
}

#endif
