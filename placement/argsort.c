/* argsort.c — parallel LSD radix argsort of hotness values (descending).
 *
 * Keys are the IEEE bit patterns of non-negative doubles, which order like
 * the values; inverting them turns ascending into descending. Each pass is
 * the classic stable parallel counting sort: every worker histograms its own
 * contiguous chunk, a prefix over (digit, worker) gives each worker private
 * output offsets, and workers scatter their chunks in order. Stability plus
 * an initial id order gives ties in ascending id, whatever the thread count.
 * Digits on which all keys agree are skipped (an OR/AND reduction finds
 * them), so integer-valued hotness costs about half the passes. */
#include "argsort.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pl_internal.h"

typedef struct {
    uint64_t key;
    int64_t id;
} item_t;

typedef struct {
    const double *p;
    int64_t n;
    int workers;
    int64_t *first_bad;  /* [workers] first invalid index in the chunk, or -1 */
} check_ctx_t;

static void check_chunk(void *vctx, int64_t w, int64_t w_end, int worker)
{
    (void)w_end, (void)worker;
    check_ctx_t *c = vctx;
    int64_t b, e;
    fs_pl_chunk(c->n, (int)w, c->workers, &b, &e);
    c->first_bad[w] = -1;
    for (int64_t i = b; i < e; i++) {
        if (!(c->p[i] >= 0) || !isfinite(c->p[i])) { /* also catches NaN */
            c->first_bad[w] = i;
            return;
        }
    }
}

fs_status_t fs_hotness_check(const double *p, int64_t n, const char *what, int threads, fs_error_t *err)
{
    if (n < 0) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s: negative length %lld", what, (long long)n);
    if (n > 0 && !p) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s: NULL array", what);
    int T = fs_pl_workers(threads, n);
    int64_t first_bad[256];
    check_ctx_t c = {p, n, T, first_bad};
    fs_parallel_for(T, T, check_chunk, &c);
    for (int w = 0; w < T && n > 0; w++)
        if (first_bad[w] >= 0)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s[%lld] = %g: hotness must be finite and >= 0", what,
                            (long long)first_bad[w], p[first_bad[w]]);
    return FS_OK;
}

typedef struct {
    const double *p;
    item_t *src, *dst;
    int64_t n;
    int workers, shift;
    uint64_t *or_acc, *and_acc;     /* [workers] */
    int64_t (*hist)[256];           /* [workers][256], then output offsets */
} sort_ctx_t;

/* Descending order of values = ascending order of inverted bit patterns. */
static inline uint64_t desc_key(double v)
{
    uint64_t bits;
    v += 0.0; /* -0.0 -> +0.0 so both zeros tie */
    memcpy(&bits, &v, sizeof bits);
    return ~bits;
}

static void make_keys(void *vctx, int64_t w, int64_t w_end, int worker)
{
    (void)w_end, (void)worker;
    sort_ctx_t *c = vctx;
    int64_t b, e;
    fs_pl_chunk(c->n, (int)w, c->workers, &b, &e);
    uint64_t o = 0, a = ~0ULL;
    for (int64_t i = b; i < e; i++) {
        uint64_t k = desc_key(c->p[i]);
        c->src[i] = (item_t){k, i};
        o |= k, a &= k;
    }
    c->or_acc[w] = o, c->and_acc[w] = a;
}

static void histogram(void *vctx, int64_t w, int64_t w_end, int worker)
{
    (void)w_end, (void)worker;
    sort_ctx_t *c = vctx;
    int64_t b, e, *h = c->hist[w];
    fs_pl_chunk(c->n, (int)w, c->workers, &b, &e);
    memset(h, 0, sizeof c->hist[w]);
    for (int64_t i = b; i < e; i++) h[(c->src[i].key >> c->shift) & 0xff]++;
}

static void scatter(void *vctx, int64_t w, int64_t w_end, int worker)
{
    (void)w_end, (void)worker;
    sort_ctx_t *c = vctx;
    int64_t b, e, *off = c->hist[w];
    fs_pl_chunk(c->n, (int)w, c->workers, &b, &e);
    for (int64_t i = b; i < e; i++) c->dst[off[(c->src[i].key >> c->shift) & 0xff]++] = c->src[i];
}

/* Turns per-worker histograms into per-worker output offsets, digit-major so
 * the scatter is stable. */
static void offsets_from_histograms(sort_ctx_t *c)
{
    int64_t pos = 0;
    for (int d = 0; d < 256; d++)
        for (int w = 0; w < c->workers; w++) {
            int64_t count = c->hist[w][d];
            c->hist[w][d] = pos;
            pos += count;
        }
}

typedef struct {
    const item_t *items;
    int64_t *order;
} copy_ctx_t;

static void copy_ids(void *vctx, int64_t b, int64_t e, int worker)
{
    (void)worker;
    copy_ctx_t *c = vctx;
    for (int64_t i = b; i < e; i++) c->order[i] = c->items[i].id;
}

fs_status_t fs_argsort_desc(const double *p, int64_t n, int threads, int64_t *order, fs_error_t *err)
{
    fs_status_t st = fs_hotness_check(p, n, "argsort: hotness", threads, err);
    if (st != FS_OK) return st;
    if (n > 0 && !order) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "argsort: NULL output");
    if (n == 0) return FS_OK;
    int T = fs_pl_workers(threads, n);
    item_t *a = malloc(sizeof *a * (size_t)n), *b = malloc(sizeof *b * (size_t)n);
    int64_t(*hist)[256] = malloc(sizeof *hist * (size_t)T);
    if (!a || !b || !hist) {
        free(a), free(b), free(hist);
        return fs_error(err, FS_ERR_NOMEM, "argsort: cannot allocate %lld items", (long long)n);
    }
    uint64_t or_acc[256], and_acc[256];
    sort_ctx_t c = {.p = p, .src = a, .dst = b, .n = n, .workers = T, .or_acc = or_acc, .and_acc = and_acc,
                    .hist = hist};
    fs_parallel_for(T, T, make_keys, &c);
    uint64_t any = 0, all = ~0ULL;
    for (int w = 0; w < T; w++) any |= or_acc[w], all &= and_acc[w];
    for (c.shift = 0; c.shift < 64; c.shift += 8) {
        if ((((any ^ all) >> c.shift) & 0xff) == 0) continue; /* every key has the same digit here */
        fs_parallel_for(T, T, histogram, &c);
        offsets_from_histograms(&c);
        fs_parallel_for(T, T, scatter, &c);
        item_t *t = c.src;
        c.src = c.dst, c.dst = t;
    }
    copy_ctx_t cc = {c.src, order};
    fs_parallel_for(T, n, copy_ids, &cc);
    free(a), free(b), free(hist);
    return FS_OK;
}
