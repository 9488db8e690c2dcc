/* gen_typed.c — the typed R-MAT generator: a bibliography of papers,
 * authors and venues with times, edge features and link splits (the schema
 * is in gen.h), written through the typed builder (typed_build.h).
 *
 * Design: every value is a pure function of (seed, purpose, index) —
 * counter-based random numbers, each purpose under its own sub-seed — so
 * threads fill disjoint ranges with no coordination and the bytes never
 * depend on the thread count. The cites edges are fs_rmat_edge's under the
 * seed itself: the same graph `gen rmat` draws with that seed (without
 * --permute). Edges are generated into memory in input order and handed to
 * the builder, which owns the CSC layout; the only sequential steps are
 * the per-paper author counts' prefix sum and the link split's shuffle. */
#include "gen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_parallel.h"
#include "fs_rng.h"
#include "import.h"
#include "progress.h"
#include "typed_build.h"
#include "writer.h"

/* Purposes; each draws under sub_seed(seed, purpose). */
enum { P_YEAR = 1, P_LABEL, P_FEAT_PAPER, P_FEAT_AUTHOR, P_FEAT_VENUE, P_AUTHORS, P_VENUE, P_WEIGHT, P_EDGE_FEAT, P_LINK };

#define MAX_AUTHORS 3

static uint64_t sub_seed(uint64_t seed, uint64_t purpose)
{
    return fs_mix64(seed ^ fs_mix64(purpose * 0x9e3779b97f4a7c15ULL + 0x7f4a7c159e3779b9ULL));
}

typedef struct {
    const fs_rmat_opts_t *o;
    int64_t papers, authors, venues;
    const int64_t *year;          /* [papers] */
    fs_typed_t *b;
    int paper, author, venue;     /* node type indices */
} gen_t;

/* ---- node types --------------------------------------------------------------------- */

typedef struct {
    uint64_t seed;
    int64_t dim;
    fs_dtype_t dtype;
    const int64_t *labels;        /* NULL: noise only */
    int num_classes;
    void *table;
} feat_job_t;

/* Gaussian noise (sd 0.5) plus, for labelled rows, +1 on the dimensions
 * congruent to the label: the signal fs_gen_rmat's features carry. */
static void gen_features(void *p, int64_t b, int64_t e, int worker)
{
    (void)worker;
    feat_job_t *j = p;
    size_t esz = fs_dtype_size(j->dtype);
    float *row = malloc((size_t)j->dim * sizeof *row);
    if (!row) abort(); /* one row of scratch */
    for (int64_t v = b; v < e; v++) {
        fs_rng_t rng = fs_rng_make(j->seed, (uint64_t)v);
        for (int64_t k = 0; k < j->dim; k += 2) { /* Box-Muller: two normals per draw pair */
            double u1 = fs_rng_unit(&rng), u2 = fs_rng_unit(&rng);
            double r = sqrt(-2.0 * log1p(-u1)), t = 2 * M_PI * u2;
            row[k] = (float)(0.5 * r * cos(t));
            if (k + 1 < j->dim) row[k + 1] = (float)(0.5 * r * sin(t));
        }
        if (j->labels)
            for (int64_t k = j->labels[v] % j->dim; k < j->dim; k += j->num_classes) row[k] += 1.0f;
        fs_convert_from_f32(row, (size_t)j->dim, j->dtype, (char *)j->table + (size_t)v * (size_t)j->dim * esz);
    }
    free(row);
}

static fs_status_t node_features(gen_t *g, int type, int64_t count, int purpose, const int64_t *labels,
                                 fs_error_t *err)
{
    if (g->o->dim == 0) return FS_OK;
    feat_job_t j = {.seed = sub_seed(g->o->seed, (uint64_t)purpose), .dim = g->o->dim, .dtype = g->o->dtype,
                    .labels = labels, .num_classes = g->o->num_classes};
    fs_status_t s = fs_typed_node_table(g->b, type, "feat", g->o->dtype, g->o->dim, &j.table, err);
    if (s == FS_OK) fs_parallel_for_dynamic(g->o->threads, count, 8192, gen_features, &j);
    return s;
}

static fs_status_t gen_papers(gen_t *g, int64_t **year, fs_error_t *err)
{
    const fs_rmat_opts_t *o = g->o;
    int64_t *labels, *t;
    uint64_t sy = sub_seed(o->seed, P_YEAR), sl = sub_seed(o->seed, P_LABEL);
    fs_status_t s = fs_typed_node_time(g->b, g->paper, &t, err);
    if (!s) s = fs_typed_node_labels(g->b, g->paper, o->num_classes, &labels, err);
    if (s) return s;
    for (int64_t p = 0; p < g->papers; p++) {
        t[p] = FS_TYPED_YEAR_MIN + (int64_t)(fs_rng_at(sy, 0, (uint64_t)p) % (FS_TYPED_YEAR_MAX - FS_TYPED_YEAR_MIN + 1));
        labels[p] = (int64_t)(fs_rng_at(sl, 0, (uint64_t)p) % (uint64_t)o->num_classes);
    }
    *year = t;
    if ((s = node_features(g, g->paper, g->papers, P_FEAT_PAPER, labels, err))) return s;
    return fs_typed_random_splits(g->b, g->paper, labels, o->split_pct, o->seed, err);
}

/* ---- edge types --------------------------------------------------------------------- */

typedef struct {
    int64_t m;
    int64_t *src, *dst, *time;
    float *weights;
} coo_t;

static fs_status_t coo_alloc(coo_t *c, int64_t m, int weighted, fs_error_t *err)
{
    size_t n = (size_t)(m > 0 ? m : 1);
    *c = (coo_t){.m = m, .src = malloc(n * 8), .dst = malloc(n * 8), .time = malloc(n * 8)};
    if (weighted) c->weights = malloc(n * sizeof(float));
    if (c->src && c->dst && c->time && (!weighted || c->weights)) return FS_OK;
    return fs_error(err, FS_ERR_NOMEM, "out of memory for %lld generated edges", (long long)m);
}

static void coo_free(coo_t *c)
{
    free(c->src), free(c->dst), free(c->time), free(c->weights);
}

static fs_status_t add_edges(gen_t *g, const char *src, const char *rel, const char *dst, const char *reverse,
                             const coo_t *c, int *index, fs_error_t *err)
{
    fs_typed_edges_t e = {.src = src, .rel = rel, .dst = dst, .num_edges = c->m, .src_ids = c->src,
                          .dst_ids = c->dst, .weights = c->weights, .time = c->time, .reverse = reverse};
    return fs_typed_edge_type(g->b, &e, index, err);
}

/* A skewed pick in [0, n): low ids (prolific authors, big venues) favoured. */
static int64_t skewed(fs_rng_t *r, int64_t n)
{
    double u = fs_rng_unit(r);
    int64_t x = (int64_t)((double)n * u * u);
    return x < n ? x : n - 1;
}

typedef struct {
    const gen_t *g;
    uint64_t seed;
    const int64_t *first;         /* [papers + 1]: paper p's edges start at first[p] */
    coo_t *c;
} author_job_t;

static int authors_of(uint64_t seed, int64_t p, int64_t authors)
{
    int k = 1 + (int)(fs_rng_at(seed, 1, (uint64_t)p) % MAX_AUTHORS);
    return k < authors ? k : (int)authors;
}

static int taken(const int64_t *ids, int n, int64_t x)
{
    for (int q = 0; q < n; q++)
        if (ids[q] == x) return 1;
    return 0;
}

/* Paper p's k distinct authors; after 64 clashes the smallest free id, so
 * even a tiny author pool ends. */
static void draw_authors(uint64_t seed, int64_t p, int64_t authors, int k, int64_t *out)
{
    fs_rng_t r = fs_rng_make(seed, (uint64_t)p);
    for (int i = 0; i < k; i++) {
        int tries = 0;
        do out[i] = skewed(&r, authors);
        while (taken(out, i, out[i]) && ++tries < 64);
        if (tries == 64)
            for (out[i] = 0; taken(out, i, out[i]); out[i]++) {}
    }
}

static void fill_writes(void *p, int64_t b, int64_t e, int worker)
{
    (void)worker;
    author_job_t *j = p;
    for (int64_t q = b; q < e; q++) {
        int64_t at = j->first[q];
        int k = (int)(j->first[q + 1] - at);
        draw_authors(j->seed, q, j->g->authors, k, j->c->src + at);
        for (int i = 0; i < k; i++) j->c->dst[at + i] = q, j->c->time[at + i] = j->g->year[q];
    }
}

/* (author, writes, paper): edges in paper order, then author slot. */
static fs_status_t gen_writes(gen_t *g, fs_error_t *err)
{
    uint64_t seed = sub_seed(g->o->seed, P_AUTHORS);
    int64_t *first = malloc((size_t)(g->papers + 1) * sizeof *first);
    if (!first) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    first[0] = 0;
    for (int64_t p = 0; p < g->papers; p++) first[p + 1] = first[p] + authors_of(seed, p, g->authors);
    coo_t c;
    fs_status_t s = coo_alloc(&c, first[g->papers], 0, err);
    if (s == FS_OK) {
        author_job_t j = {.g = g, .seed = seed, .first = first, .c = &c};
        fs_parallel_for(g->o->threads, g->papers, fill_writes, &j);
        s = add_edges(g, "author", "writes", "paper", "written_by", &c, NULL, err);
    }
    coo_free(&c);
    free(first);
    return s;
}

/* (paper, published_in, venue): edge p is paper p's one venue. */
static fs_status_t gen_published_in(gen_t *g, fs_error_t *err)
{
    uint64_t seed = sub_seed(g->o->seed, P_VENUE);
    coo_t c;
    fs_status_t s = coo_alloc(&c, g->papers, 0, err);
    for (int64_t p = 0; s == FS_OK && p < g->papers; p++) {
        fs_rng_t r = fs_rng_make(seed, (uint64_t)p);
        c.src[p] = p, c.dst[p] = skewed(&r, g->venues), c.time[p] = g->year[p];
    }
    if (s == FS_OK) s = add_edges(g, "paper", "published_in", "venue", "publishes", &c, NULL, err);
    coo_free(&c);
    return s;
}

typedef struct {
    const gen_t *g;
    fs_rmat_quadrants_t q;
    uint64_t weight_seed, feat_seed;
    coo_t *c;
    float *feat;                  /* [m, FS_TYPED_EDGE_DIM] */
} cites_job_t;

/* Cites edge k: R-MAT's (citing, cited) pair, the citing paper's year, a
 * weight in (0, 1] (24 random bits, + 1, over 2^24). */
static void fill_cites(void *p, int64_t b, int64_t e, int worker)
{
    (void)worker;
    cites_job_t *j = p;
    for (int64_t k = b; k < e; k++) {
        fs_rmat_edge(j->g->o->seed, j->g->o->scale, j->q, (uint64_t)k, &j->c->src[k], &j->c->dst[k]);
        j->c->time[k] = j->g->year[j->c->src[k]];
        j->c->weights[k] = (float)((double)((fs_rng_at(j->weight_seed, 0, (uint64_t)k) >> 40) + 1) * 0x1p-24);
    }
}

/* Edge features: uniform noise in [-1, 1), by edge id. */
static void fill_cites_feat(void *p, int64_t b, int64_t e, int worker)
{
    (void)worker;
    cites_job_t *j = p;
    for (int64_t k = b; k < e; k++) {
        fs_rng_t r = fs_rng_make(j->feat_seed, (uint64_t)k);
        for (int d = 0; d < FS_TYPED_EDGE_DIM; d++) j->feat[k * FS_TYPED_EDGE_DIM + d] = (float)(2 * fs_rng_unit(&r) - 1);
    }
}

/* train/valid/test: a seeded 85/5/10 partition of the cites edges. */
static fs_status_t gen_link_splits(gen_t *g, int cites, const coo_t *c, fs_error_t *err)
{
    static const int pct[3] = {85, 5, 10};
    static const char *const names[3] = {"train", "valid", "test"};
    int64_t *pool = malloc((size_t)(c->m > 0 ? c->m : 1) * sizeof *pool), cnt[3], off = 0;
    if (!pool) return fs_error(err, FS_ERR_NOMEM, "out of memory for the link splits");
    fs_status_t s = fs_random_partition(c->m, NULL, pct, sub_seed(g->o->seed, P_LINK), pool, cnt, err);
    for (int i = 0; i < 3 && s == FS_OK; i++) {
        fs_typed_link_t l;
        if ((s = fs_typed_link_split(g->b, names[i], cites, cnt[i], FS_LINK_TIME, 0, &l, err))) break;
        for (int64_t q = 0; q < cnt[i]; q++) {
            int64_t k = pool[off + q];
            l.src[q] = c->src[k], l.dst[q] = c->dst[k], l.time[q] = c->time[k];
        }
        off += cnt[i];
    }
    free(pool);
    return s;
}

static fs_status_t gen_cites(gen_t *g, fs_error_t *err)
{
    int64_t m = g->papers * g->o->edge_factor;
    coo_t c;
    cites_job_t j = {.g = g, .q = fs_rmat_quadrants(g->o->a, g->o->b, g->o->c), .c = &c,
                     .weight_seed = sub_seed(g->o->seed, P_WEIGHT), .feat_seed = sub_seed(g->o->seed, P_EDGE_FEAT)};
    fs_progress_t pr;
    fs_progress_start(&pr, "gen cites");
    fs_status_t s = coo_alloc(&c, m, 1, err);
    int cites = -1;
    if (s == FS_OK) {
        fs_parallel_for(g->o->threads, m, fill_cites, &j);
        s = add_edges(g, "paper", "cites", "paper", "cited_by", &c, &cites, err);
    }
    if (s == FS_OK)
        s = fs_typed_edge_table(g->b, cites, "feat", FS_DTYPE_F32, FS_TYPED_EDGE_DIM, (void **)&j.feat, err);
    if (s == FS_OK) {
        fs_parallel_for(g->o->threads, m, fill_cites_feat, &j);
        s = gen_link_splits(g, cites, &c, err);
    }
    if (s == FS_OK) fs_progress_done(&pr, m, "edges");
    coo_free(&c);
    return s;
}

/* ---- the dataset ---------------------------------------------------------------------- */

static fs_status_t check_opts(const fs_rmat_opts_t *o, fs_error_t *err)
{
    fs_status_t st = fs_rmat_check_common(o, err);
    if (st != FS_OK) return st;
    const fs_edge_opts_t *e = &o->edges;
    if (o->permute || e->symmetrize || e->dedup || e->drop_self_loops || e->reverse || e->compact_ids)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "gen rmat --typed takes none of --permute, --symmetrize, "
                        "--dedup, --drop-self-loops (its edge types come with their reverses)");
    return FS_OK;
}

static fs_status_t gen_graph(gen_t *g, fs_error_t *err)
{
    int64_t *year = NULL;
    fs_status_t s = fs_typed_node_type(g->b, "paper", g->papers, &g->paper, err);
    if (!s) s = fs_typed_node_type(g->b, "author", g->authors, &g->author, err);
    if (!s) s = fs_typed_node_type(g->b, "venue", g->venues, &g->venue, err);
    if (!s) s = gen_papers(g, &year, err);
    g->year = year;
    if (!s) s = node_features(g, g->author, g->authors, P_FEAT_AUTHOR, NULL, err);
    if (!s) s = node_features(g, g->venue, g->venues, P_FEAT_VENUE, NULL, err);
    if (!s) s = gen_writes(g, err);
    if (!s) s = gen_cites(g, err);
    if (!s) s = gen_published_in(g, err);
    return s;
}

static fs_status_t set_source(fs_writer_t *w, const fs_rmat_opts_t *o, fs_error_t *err)
{
    char name[64], src[1024];
    snprintf(name, sizeof name, "rmat-typed-s%d-e%d", o->scale, o->edge_factor);
    snprintf(src, sizeof src,
             "{\"generator\": \"rmat-typed\", \"scale\": %d, \"edge_factor\": %d, \"a\": %g, \"b\": %g, \"c\": %g, "
             "\"seed\": %llu, \"dim\": %lld, \"dtype\": \"%s\", \"classes\": %d, \"split\": [%d, %d, %d]}",
             o->scale, o->edge_factor, o->a, o->b, o->c, (unsigned long long)o->seed, (long long)o->dim,
             fs_dtype_name(o->dtype), o->num_classes, o->split_pct[0], o->split_pct[1], o->split_pct[2]);
    fs_writer_set_meta(w, o->name ? o->name : name, 0, 0, 0, 0);
    return fs_writer_set_source(w, src, err);
}

fs_status_t fs_gen_rmat_typed(const fs_rmat_opts_t *o, fs_error_t *err)
{
    fs_status_t s = check_opts(o, err);
    if (s != FS_OK) return s;
    int64_t n = (int64_t)1 << o->scale;
    gen_t g = {.o = o, .papers = n, .authors = n / 2, .venues = n / 256 > 16 ? n / 256 : 16};
    fs_writer_t *w = NULL;
    if ((s = fs_writer_create(o->out_dir, o->force, &w, err))) return s;
    if (!(s = fs_typed_create(w, o->threads, &g.b, err))) s = gen_graph(&g, err);
    if (s == FS_OK) s = fs_typed_finish(g.b, err);
    else fs_typed_free(g.b);
    if (s == FS_OK) s = set_source(w, o, err);
    if (s != FS_OK) {
        fs_writer_abort(w);
        return s;
    }
    fprintf(stderr, "gen: %lld papers, %lld authors, %lld venues, %lld cites edges\n", (long long)g.papers,
            (long long)g.authors, (long long)g.venues, (long long)n * o->edge_factor);
    return fs_writer_commit(w, err);
}
