/* fs_propagate.c — pre-propagation's sparse x dense products on the CPU
 * (docs/algorithms.md §8; the contract is in fs_propagate.h).
 *
 * Design. The normalisation is folded into two scale vectors, so the
 * caller's buffer holds z = c ⊙ X and the inner loop is a plain sum of
 * whole rows, `out[0..dim) += z_j[0..dim) + z_k[0..dim)`, two edges at a
 * time: contiguous, no per-edge multiply, vectorised by the compiler (this
 * file is built with -O3; on x86 an AVX2 copy of the row loop is chosen at
 * run time). The rows an edge will need a few edges ahead are prefetched
 * whole: on graphs bigger than the caches the product is bound by those
 * random row reads, not by arithmetic. A pass splits the rows into blocks
 * of at most 16k floats (64 KiB, L2-resident), claimed dynamically by the
 * threads (fs_parallel_for_dynamic), so a block of hub rows does not hold
 * the others up; each block goes to the caller's sink from the thread that
 * made it, then its c-scaled copy to the next buffer. Every row is summed
 * in CSR order in float32 whatever the thread count: the same bits. */
#include "fs_propagate.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "fs_parallel.h"

#define PREFETCH_EDGES 8          /* how far ahead rows are prefetched */
#define BLOCK_FLOATS (16 * 1024)  /* a block's rows: at most this many floats */
#define BLOCK_ROWS_MAX 256

const char *fs_prop_norm_name(fs_prop_norm_t n)
{
    return n == FS_PROP_SYM ? "sym" : n == FS_PROP_RW ? "rw" : n == FS_PROP_NONE ? "none" : "?";
}

int fs_prop_norm_from_name(const char *s)
{
    if (!s) return -1;
    if (strcmp(s, "sym") == 0) return FS_PROP_SYM;
    if (strcmp(s, "rw") == 0) return FS_PROP_RW;
    if (strcmp(s, "none") == 0) return FS_PROP_NONE;
    return -1;
}

/* ---- scales ------------------------------------------------------------------ */

fs_status_t fs_prop_scales_make(const fs_prop_graph_t *g, fs_prop_norm_t norm, int self_loops, fs_prop_scales_t *out,
                                fs_error_t *err)
{
    *out = (fs_prop_scales_t){.norm = norm, .self_loops = self_loops != 0};
    if (norm == FS_PROP_NONE) return FS_OK;
    int64_t n = g->num_nodes;
    out->row_scale = malloc((size_t)(n ? n : 1) * sizeof(float));
    if (norm == FS_PROP_SYM) out->col_scale = malloc((size_t)(n ? n : 1) * sizeof(float));
    if (!out->row_scale || (norm == FS_PROP_SYM && !out->col_scale)) {
        fs_prop_scales_free(out);
        return fs_error(err, FS_ERR_NOMEM, "propagate: out of memory for %lld scales", (long long)n);
    }
    for (int64_t i = 0; i < n; i++) {
        double d = (double)(g->indptr[i + 1] - g->indptr[i]) + (self_loops ? 1 : 0);
        double s = d > 0 ? (norm == FS_PROP_SYM ? 1.0 / sqrt(d) : 1.0 / d) : 0.0;
        out->row_scale[i] = (float)s;
        if (out->col_scale) out->col_scale[i] = (float)s;
    }
    return FS_OK;
}

void fs_prop_scales_free(fs_prop_scales_t *s)
{
    free(s->row_scale);
    free(s->col_scale);
    s->row_scale = s->col_scale = NULL;
}

/* ---- symmetrising a directed graph ------------------------------------------- */

static int64_t at(const void *ix, int wide, int64_t k)
{
    return wide ? ((const int64_t *)ix)[k] : ((const int32_t *)ix)[k];
}

static void put(void *ix, int wide, int64_t k, int64_t v)
{
    if (wide) ((int64_t *)ix)[k] = v;
    else ((int32_t *)ix)[k] = (int32_t)v;
}

typedef struct {
    const fs_prop_graph_t *in;
    int64_t *count;            /* counting: entries per row of the union (before dedup) */
    int64_t *cursor;           /* filling: next free slot per row */
    void *tmp;                 /* [2E] out's index width */
    const int64_t *tmp_ptr;
    int64_t *len;              /* after sort + dedup */
    int wide;
} sym_ctx_t;

static void sym_count(void *p, int64_t b, int64_t e, int w)
{
    (void)w;
    sym_ctx_t *c = p;
    for (int64_t i = b; i < e; i++) {
        int64_t lo = c->in->indptr[i], hi = c->in->indptr[i + 1];
        __atomic_fetch_add(&c->count[i], hi - lo, __ATOMIC_RELAXED);
        for (int64_t k = lo; k < hi; k++)
            __atomic_fetch_add(&c->count[at(c->in->indices, c->in->index_dtype == FS_DTYPE_I64, k)], 1,
                               __ATOMIC_RELAXED);
    }
}

static void sym_fill(void *p, int64_t b, int64_t e, int w)
{
    (void)w;
    sym_ctx_t *c = p;
    int in_wide = c->in->index_dtype == FS_DTYPE_I64;
    for (int64_t i = b; i < e; i++)
        for (int64_t k = c->in->indptr[i]; k < c->in->indptr[i + 1]; k++) {
            int64_t j = at(c->in->indices, in_wide, k);
            put(c->tmp, c->wide, __atomic_fetch_add(&c->cursor[i], 1, __ATOMIC_RELAXED), j);
            put(c->tmp, c->wide, __atomic_fetch_add(&c->cursor[j], 1, __ATOMIC_RELAXED), i);
        }
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Sorts each row, drops repeats; len[i] = what is left at the row's start. */
static void sym_sort(void *p, int64_t b, int64_t e, int w)
{
    (void)w;
    sym_ctx_t *c = p;
    size_t size = c->wide ? 8 : 4;
    for (int64_t i = b; i < e; i++) {
        int64_t lo = c->tmp_ptr[i], n = c->tmp_ptr[i + 1] - lo, m = 0;
        char *row = (char *)c->tmp + (size_t)lo * size;
        qsort(row, (size_t)n, size, c->wide ? cmp_i64 : cmp_i32);
        for (int64_t k = 0; k < n; k++)
            if (m == 0 || at(row, c->wide, k) != at(row, c->wide, m - 1)) put(row, c->wide, m++, at(row, c->wide, k));
        c->len[i] = m;
    }
}

void fs_prop_graph_free(fs_prop_owned_graph_t *g)
{
    free(g->indptr);
    free(g->indices);
    memset(g, 0, sizeof *g);
}

fs_status_t fs_prop_symmetrize(const fs_prop_graph_t *in, int threads, fs_prop_owned_graph_t *out, fs_error_t *err)
{
    memset(out, 0, sizeof *out);
    int64_t n = in->num_nodes, e = in->indptr[n];
    int wide = n > INT32_MAX;
    size_t size = wide ? 8 : 4;
    sym_ctx_t c = {.in = in, .wide = wide};
    c.count = calloc((size_t)n + 1, sizeof(int64_t));
    c.cursor = malloc(((size_t)n + 1) * sizeof(int64_t));
    out->indptr = malloc(((size_t)n + 1) * sizeof(int64_t));
    c.tmp = malloc((size_t)(2 * e + 1) * size);
    if (!c.count || !c.cursor || !out->indptr || !c.tmp) {
        free(c.count), free(c.cursor), free(c.tmp), fs_prop_graph_free(out);
        return fs_error(err, FS_ERR_NOMEM, "propagate: out of memory symmetrising %lld edges (needs %.1f GiB)",
                        (long long)e, (double)(2 * e) * (double)size / (1 << 30));
    }
    fs_parallel_for(threads, n, sym_count, &c);
    int64_t *ptr = out->indptr; /* the union's offsets before dedup, for now */
    ptr[0] = 0;
    for (int64_t i = 0; i < n; i++) ptr[i + 1] = ptr[i] + c.count[i];
    memcpy(c.cursor, ptr, (size_t)n * sizeof(int64_t));
    fs_parallel_for(threads, n, sym_fill, &c);
    c.tmp_ptr = ptr;
    c.len = c.count; /* reused */
    fs_parallel_for_dynamic(threads, n, 1024, sym_sort, &c);
    /* Compact in place: rows only move left. */
    int64_t put_at = 0;
    for (int64_t i = 0; i < n; i++) {
        memmove((char *)c.tmp + (size_t)put_at * size, (char *)c.tmp + (size_t)ptr[i] * size, (size_t)c.len[i] * size);
        ptr[i] = put_at;
        put_at += c.len[i];
    }
    ptr[n] = put_at;
    void *shrunk = realloc(c.tmp, (size_t)(put_at ? put_at : 1) * size);
    out->indices = shrunk ? shrunk : c.tmp;
    free(c.count), free(c.cursor);
    out->g = (fs_prop_graph_t){.num_nodes = n, .indptr = out->indptr, .indices = out->indices,
                               .index_dtype = wide ? FS_DTYPE_I64 : FS_DTYPE_I32};
    return FS_OK;
}

float *fs_prop_buffer(size_t floats)
{
    const size_t huge = (size_t)2 << 20;
    size_t bytes = (floats ? floats : 1) * sizeof(float);
    void *p = NULL;
    if (posix_memalign(&p, huge, bytes) != 0) return NULL;
    madvise(p, bytes, MADV_HUGEPAGE); /* best effort: THP may be off */
    return p;
}

/* ---- the passes ---------------------------------------------------------------- */

typedef struct pass_ctx pass_ctx_t;
typedef void (*rows_fn)(const pass_ctx_t *c, int64_t b, int64_t e, float *restrict out);

struct pass_ctx {
    const fs_prop_pass_t *p;
    const float *z_in;
    float *z_out;
    const void *x0;
    fs_dtype_t x0_dtype;
    rows_fn rows;
    float *scratch;            /* [workers][block][dim] */
    int64_t block;
    _Atomic int64_t done;
    atomic_int stopped;
};

static inline int64_t node_of(const fs_prop_pass_t *p, int64_t q) { return p->nodes ? p->nodes[q] : q; }

/* Prefetches a row of `bytes` bytes, one cache line at a time. */
static inline void prefetch_row(const float *row, int64_t bytes)
{
    for (int64_t off = 0; off < bytes; off += 64) __builtin_prefetch((const char *)row + off);
}

/* x_i = r_i * (z_i [self-loop] + sum_{j in row i} z_j) for the block's rows;
 * one body, instantiated per index width and per instruction set. */
#define DEFINE_ROWS(NAME, T, ATTR)                                                                        \
    ATTR static void NAME(const pass_ctx_t *c, int64_t b, int64_t e, float *restrict out)                 \
    {                                                                                                     \
        const fs_prop_pass_t *p = c->p;                                                                   \
        const int64_t *ip = p->graph->indptr, dim = p->dim, last = ip[p->graph->num_nodes];               \
        const T *ix = p->graph->indices;                                                                  \
        const float *restrict z = c->z_in;                                                                \
        const float *rs = p->scales->row_scale;                                                           \
        const int64_t bytes = dim * (int64_t)sizeof(float);                                               \
        for (int64_t q = b; q < e; q++, out += dim) {                                                     \
            int64_t i = node_of(p, q), k = ip[i], hi = ip[i + 1];                                         \
            if (p->scales->self_loops) memcpy(out, z + i * dim, (size_t)bytes);                           \
            else memset(out, 0, (size_t)bytes);                                                           \
            for (; k + 1 < hi; k += 2) {                                                                  \
                if (k + PREFETCH_EDGES + 1 < last) {                                                      \
                    prefetch_row(z + (int64_t)ix[k + PREFETCH_EDGES] * dim, bytes);                       \
                    prefetch_row(z + (int64_t)ix[k + PREFETCH_EDGES + 1] * dim, bytes);                   \
                }                                                                                         \
                const float *restrict u = z + (int64_t)ix[k] * dim, *restrict v = z + (int64_t)ix[k + 1] * dim; \
                for (int64_t d = 0; d < dim; d++) out[d] += u[d] + v[d];                                  \
            }                                                                                             \
            if (k < hi) {                                                                                 \
                const float *restrict u = z + (int64_t)ix[k] * dim;                                       \
                for (int64_t d = 0; d < dim; d++) out[d] += u[d];                                         \
            }                                                                                             \
            if (rs) {                                                                                     \
                float r = rs[i];                                                                          \
                for (int64_t d = 0; d < dim; d++) out[d] *= r;                                            \
            }                                                                                             \
        }                                                                                                 \
    }

DEFINE_ROWS(rows_i32, int32_t, )
DEFINE_ROWS(rows_i64, int64_t, )
#if defined(__x86_64__) && defined(__GNUC__)
DEFINE_ROWS(rows_i32_avx2, int32_t, __attribute__((target("avx2"))))
DEFINE_ROWS(rows_i64_avx2, int64_t, __attribute__((target("avx2"))))
#endif

static rows_fn pick_rows(fs_dtype_t index_dtype)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) return index_dtype == FS_DTYPE_I64 ? rows_i64_avx2 : rows_i32_avx2;
#endif
    return index_dtype == FS_DTYPE_I64 ? rows_i64 : rows_i32;
}

/* X_0's rows of the block, as float32. */
static void rows_start(const pass_ctx_t *c, int64_t b, int64_t e, float *restrict out)
{
    const fs_prop_pass_t *p = c->p;
    size_t row_bytes = (size_t)p->dim * fs_dtype_size(c->x0_dtype);
    for (int64_t q = b; q < e; q++, out += p->dim)
        fs_convert_to_f32(c->x0_dtype, (const char *)c->x0 + (size_t)node_of(p, q) * row_bytes, (size_t)p->dim, out);
}

/* z_out rows = c ⊙ x rows. */
static void scale_out(const pass_ctx_t *c, int64_t b, int64_t e, const float *restrict x)
{
    const fs_prop_pass_t *p = c->p;
    const float *cs = p->scales->col_scale;
    int64_t dim = p->dim;
    for (int64_t q = b; q < e; q++, x += dim) {
        int64_t i = node_of(p, q);
        float *restrict z = c->z_out + i * dim;
        if (!cs) {
            memcpy(z, x, (size_t)dim * sizeof(float));
            continue;
        }
        float s = cs[i];
        for (int64_t d = 0; d < dim; d++) z[d] = x[d] * s;
    }
}

static void pass_block(void *ctx, int64_t b, int64_t e, int w)
{
    pass_ctx_t *c = ctx;
    const fs_prop_pass_t *p = c->p;
    if (atomic_load_explicit(&c->stopped, memory_order_relaxed)) return;
    if (p->stop && *p->stop) {
        atomic_store(&c->stopped, 1);
        return;
    }
    float *x = c->scratch + (size_t)w * (size_t)c->block * (size_t)p->dim;
    c->rows(c, b, e, x);
    if (c->z_out) scale_out(c, b, e, x);
    if (p->sink) p->sink(p->sink_ctx, b, e, x, w);
    int64_t done = atomic_fetch_add(&c->done, e - b) + (e - b);
    if (w == 0 && p->progress) p->progress(p->progress_ctx, done);
}

static int workers_for(int threads)
{
    int t = threads > 0 ? threads : fs_cpu_count();
    return t > 256 ? 256 : t;
}

static fs_status_t run_pass(pass_ctx_t *c, int *stopped, fs_error_t *err)
{
    const fs_prop_pass_t *p = c->p;
    if (p->dim < 1) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "propagate: the table has no columns");
    int64_t n = p->nodes ? p->num_rows : p->graph->num_nodes;
    c->block = BLOCK_FLOATS / p->dim;
    c->block = c->block < 1 ? 1 : c->block > BLOCK_ROWS_MAX ? BLOCK_ROWS_MAX : c->block;
    size_t floats = (size_t)workers_for(p->threads) * (size_t)c->block * (size_t)p->dim;
    c->scratch = malloc(floats * sizeof(float));
    if (!c->scratch) return fs_error(err, FS_ERR_NOMEM, "propagate: out of memory for %zu row buffers", floats);
    atomic_init(&c->done, 0);
    atomic_init(&c->stopped, 0);
    fs_parallel_for_dynamic(p->threads, n, c->block, pass_block, c);
    free(c->scratch);
    *stopped = atomic_load(&c->stopped);
    return FS_OK;
}

fs_status_t fs_prop_start(const fs_prop_pass_t *p, const void *x0, fs_dtype_t x0_dtype, float *z0, int *stopped,
                          fs_error_t *err)
{
    if (x0_dtype != FS_DTYPE_F32 && x0_dtype != FS_DTYPE_F16 && x0_dtype != FS_DTYPE_BF16)
        return fs_error(err, FS_ERR_UNSUPPORTED, "propagate: a %s table cannot be propagated (float32, float16 or "
                        "bfloat16 only)", fs_dtype_name(x0_dtype));
    pass_ctx_t c = {.p = p, .z_out = z0, .x0 = x0, .x0_dtype = x0_dtype, .rows = rows_start};
    return run_pass(&c, stopped, err);
}

fs_status_t fs_prop_hop(const fs_prop_pass_t *p, const float *z_in, float *z_out, int *stopped, fs_error_t *err)
{
    if (p->nodes && z_out)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "propagate: a hop over some rows only cannot feed another hop");
    if (p->graph->index_dtype != FS_DTYPE_I32 && p->graph->index_dtype != FS_DTYPE_I64)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "propagate: indices must be int32 or int64");
    pass_ctx_t c = {.p = p, .z_in = z_in, .z_out = z_out, .rows = pick_rows(p->graph->index_dtype)};
    return run_pass(&c, stopped, err);
}
