/* gen_rmat.c — the R-MAT generator (see gen.h).
 *
 * Edge i is a pure function of (seed, i): each of the `scale` levels picks a
 * quadrant from 16 random bits of a counter-based stream. Threads therefore
 * generate disjoint chunks with no coordination, and the CSR builder's row
 * sort makes the final layout independent of arrival order. */
#include "gen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_parallel.h"
#include "fs_rng.h"
#include "import.h"
#include "progress.h"
#include "writer.h"

#define EDGE_CHUNK (1 << 20)
enum { STREAM_PERM = 1, STREAM_LABEL = 2, STREAM_FEAT = 3 };

void fs_rmat_defaults(fs_rmat_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->scale = 16;
    o->edge_factor = 16;
    o->a = 0.57;
    o->b = 0.19;
    o->c = 0.19;
    o->seed = 1;
    o->dim = 128;
    o->dtype = FS_DTYPE_F32;
    o->num_classes = 16;
    o->split_pct[0] = 60;
    o->split_pct[1] = 20;
    o->split_pct[2] = 20;
}

fs_rmat_quadrants_t fs_rmat_quadrants(double a, double b, double c)
{
    return (fs_rmat_quadrants_t){.ta = (uint32_t)lround(a * 65536), .tab = (uint32_t)lround((a + b) * 65536),
                                 .tabc = (uint32_t)lround((a + b + c) * 65536)};
}

void fs_rmat_edge(uint64_t seed, int scale, fs_rmat_quadrants_t q, uint64_t k, int64_t *src, int64_t *dst)
{
    fs_rng_t rng = fs_rng_make(seed, k);
    uint64_t bits = 0;
    int64_t u = 0, v = 0;
    for (int level = 0; level < scale; level++) {
        if ((level & 3) == 0) bits = fs_rng_next(&rng);
        uint32_t r = (uint32_t)(bits & 0xffff);
        bits >>= 16;
        int down = r >= q.tab, right = (r >= q.ta && r < q.tab) || r >= q.tabc;
        u = u << 1 | down;
        v = v << 1 | right;
    }
    *src = u, *dst = v;
}

typedef struct {
    const fs_rmat_opts_t *o;
    fs_rmat_quadrants_t q;
    const int64_t *perm;
    int64_t first;            /* first edge index of this chunk */
    int64_t *src, *dst;
} edge_job_t;

static void gen_edges(void *p, int64_t b, int64_t e, int worker)
{
    (void)worker;
    edge_job_t *j = p;
    for (int64_t k = b; k < e; k++) {
        int64_t u, v;
        fs_rmat_edge(j->o->seed, j->o->scale, j->q, (uint64_t)(j->first + k), &u, &v);
        j->src[k] = j->perm ? j->perm[u] : u;
        j->dst[k] = j->perm ? j->perm[v] : v;
    }
}

static fs_status_t gen_topology(const fs_rmat_opts_t *o, fs_writer_t *w, const int64_t *perm, fs_csr_stats_t *st,
                                fs_error_t *err)
{
    int64_t n = (int64_t)1 << o->scale, m = n * o->edge_factor;
    edge_job_t j = {.o = o, .perm = perm};
    j.q = fs_rmat_quadrants(o->a, o->b, o->c);
    j.src = malloc(EDGE_CHUNK * sizeof *j.src);
    j.dst = malloc(EDGE_CHUNK * sizeof *j.dst);
    fs_csr_builder_t *cb = NULL;
    fs_status_t s = j.src && j.dst ? fs_csr_builder_create(w, &o->edges, n, 0, &cb, err)
                                   : fs_error(err, FS_ERR_NOMEM, "out of memory");
    fs_progress_t pr;
    fs_progress_start(&pr, "gen edges");
    for (j.first = 0; s == FS_OK && j.first < m; j.first += EDGE_CHUNK) {
        int64_t cnt = m - j.first < EDGE_CHUNK ? m - j.first : EDGE_CHUNK;
        fs_parallel_for(o->threads, cnt, gen_edges, &j);
        s = fs_csr_builder_add(cb, j.src, j.dst, NULL, (size_t)cnt, err);
        fs_progress_update(&pr, (double)(j.first + cnt) / (double)m, j.first + cnt, "edges");
    }
    free(j.src);
    free(j.dst);
    if (s != FS_OK) {
        fs_csr_builder_free(cb);
        return s;
    }
    fs_progress_done(&pr, m, "edges");
    fs_progress_start(&pr, "build CSR");
    s = fs_csr_builder_finish(cb, o->threads, st, err);
    if (s == FS_OK) fs_progress_done(&pr, st->num_edges, "edges stored");
    return s;
}

/* ---- labels and features ------------------------------------------------- */

typedef struct {
    const fs_rmat_opts_t *o;
    const int64_t *labels;
    void *table;
} feat_job_t;

static void gen_features(void *p, int64_t b, int64_t e, int worker)
{
    (void)worker;
    feat_job_t *j = p;
    int64_t dim = j->o->dim;
    size_t esz = fs_dtype_size(j->o->dtype);
    float *row = malloc((size_t)dim * sizeof *row);
    if (!row) abort(); /* one row of scratch */
    for (int64_t v = b; v < e; v++) {
        fs_rng_t rng = fs_rng_make(j->o->seed ^ STREAM_FEAT, (uint64_t)v);
        for (int64_t k = 0; k < dim; k += 2) { /* Box-Muller: two normals per draw pair */
            double u1 = fs_rng_unit(&rng), u2 = fs_rng_unit(&rng);
            double r = sqrt(-2.0 * log1p(-u1)), t = 2 * M_PI * u2;
            row[k] = (float)(0.5 * r * cos(t));
            if (k + 1 < dim) row[k + 1] = (float)(0.5 * r * sin(t));
        }
        /* Class signal: +1 on the dimensions congruent to the label. */
        for (int64_t k = j->labels[v] % dim; k < dim; k += j->o->num_classes) row[k] += 1.0f;
        fs_convert_from_f32(row, (size_t)dim, j->o->dtype, (char *)j->table + (size_t)v * (size_t)dim * esz);
    }
    free(row);
}

static fs_status_t gen_labels_features(const fs_rmat_opts_t *o, fs_writer_t *w, int64_t n, int64_t **labels_out,
                                       fs_error_t *err)
{
    int64_t *labels, shape[2] = {n, o->dim};
    fs_status_t s = fs_writer_array(w, FS_ROLE_LABELS, NULL, FS_DTYPE_I64, 1, shape, (void **)&labels, err);
    if (s != FS_OK) return s;
    for (int64_t v = 0; v < n; v++) labels[v] = (int64_t)(fs_rng_at(o->seed, STREAM_LABEL, (uint64_t)v) % (uint64_t)o->num_classes);
    *labels_out = labels;
    if (o->dim == 0) return FS_OK;
    feat_job_t j = {.o = o, .labels = labels};
    if ((s = fs_writer_array(w, FS_ROLE_FEATURES, "feat", o->dtype, 2, shape, &j.table, err))) return s;
    fs_progress_t pr;
    fs_progress_start(&pr, "gen features");
    fs_parallel_for_dynamic(o->threads, n, 8192, gen_features, &j);
    fs_progress_done(&pr, n, "rows");
    return FS_OK;
}

static int64_t *make_permutation(uint64_t seed, int64_t n)
{
    int64_t *perm = malloc((size_t)n * sizeof *perm);
    if (!perm) return NULL;
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    fs_rng_t rng = fs_rng_make(seed, STREAM_PERM);
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t k = (int64_t)fs_rng_below(&rng, (uint64_t)i + 1), t = perm[i];
        perm[i] = perm[k];
        perm[k] = t;
    }
    return perm;
}

fs_status_t fs_rmat_check_common(const fs_rmat_opts_t *o, fs_error_t *err)
{
    if (o->scale < 1 || o->scale > 36)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "--scale must be in [1, 36], got %d", o->scale);
    if (o->edge_factor < 1 || o->edge_factor > 1024)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "--edge-factor must be in [1, 1024], got %d", o->edge_factor);
    if (o->a < 0 || o->b < 0 || o->c < 0 || o->a + o->b + o->c > 1)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "R-MAT probabilities must be >= 0 with a+b+c <= 1");
    if (o->dim < 0 || o->dim > 65536)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "--dim must be in [0, 65536], got %lld", (long long)o->dim);
    if (o->dtype != FS_DTYPE_F32 && o->dtype != FS_DTYPE_F16 && o->dtype != FS_DTYPE_BF16)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "--dtype must be float32, float16 or bfloat16");
    if (o->num_classes < 1 || o->num_classes > 1 << 20)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "--classes must be in [1, 2^20], got %d", o->num_classes);
    return FS_OK;
}

static fs_status_t check_opts(const fs_rmat_opts_t *o, fs_error_t *err)
{
    fs_status_t st = fs_rmat_check_common(o, err);
    if (st != FS_OK) return st;
    if (o->edges.compact_ids) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "gen rmat does not take --compact-ids");
    return FS_OK;
}

fs_status_t fs_gen_rmat(const fs_rmat_opts_t *o, fs_error_t *err)
{
    fs_status_t s = check_opts(o, err);
    if (s != FS_OK) return s;
    int64_t n = (int64_t)1 << o->scale, *perm = NULL, *labels = NULL;
    if (o->permute && !(perm = make_permutation(o->seed, n)))
        return fs_error(err, FS_ERR_NOMEM, "out of memory for a %lld-node permutation", (long long)n);
    fs_writer_t *w = NULL;
    fs_csr_stats_t st = {0};
    if (!(s = fs_writer_create(o->out_dir, o->force, &w, err))) s = gen_topology(o, w, perm, &st, err);
    free(perm);
    if (s == FS_OK) s = gen_labels_features(o, w, n, &labels, err);
    if (s == FS_OK) s = fs_write_random_splits(w, n, labels, o->split_pct, o->seed, err);
    if (s == FS_OK) {
        char name[64], src[1024];
        snprintf(name, sizeof name, "rmat-s%d-e%d", o->scale, o->edge_factor);
        snprintf(src, sizeof src,
                 "{\"generator\": \"rmat\", \"scale\": %d, \"edge_factor\": %d, \"a\": %g, \"b\": %g, \"c\": %g, "
                 "\"seed\": %llu, \"permute\": %s, \"symmetrize\": %s, \"dedup\": %s, \"drop_self_loops\": %s, "
                 "\"dim\": %lld, \"dtype\": \"%s\", \"classes\": %d}",
                 o->scale, o->edge_factor, o->a, o->b, o->c, (unsigned long long)o->seed, o->permute ? "true" : "false",
                 o->edges.symmetrize ? "true" : "false", o->edges.dedup ? "true" : "false",
                 o->edges.drop_self_loops ? "true" : "false", (long long)o->dim, fs_dtype_name(o->dtype), o->num_classes);
        fs_writer_set_meta(w, o->name ? o->name : name, n, st.num_edges, o->edges.symmetrize, o->num_classes);
        s = fs_writer_set_source(w, src, err);
    }
    if (s != FS_OK) {
        fs_writer_abort(w);
        return s;
    }
    return fs_writer_commit(w, err);
}
