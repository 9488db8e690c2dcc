/* csr_build.c — edge stream -> sorted CSR (see csr_build.h). */
#include "csr_build.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_parallel.h"
#include "id_census.h"
#include "fs_rng.h"
#include "progress.h"

#define SPILL_CHUNK 65536

typedef struct {
    int64_t src, dst;
} edge_t;

struct fs_csr_builder {
    fs_writer_t *w;
    fs_edge_opts_t o;
    int weighted;
    int64_t fixed_n;
    FILE *spill;
    char spill_path[4200];
    int64_t *deg;              /* per row, in provisional id space */
    int64_t deg_cap, seen_n;   /* seen_n = max id seen + 1 (or distinct ids) */
    /* compact ids: open-addressing map raw id -> provisional id */
    int64_t *hkeys, *hvals;
    size_t hcap, hcount;
    int64_t *raw;              /* provisional id -> raw id */
    /* ids as given, N unknown: degrees wait for the largest id (finish) */
    fs_id_census_t *census;
    int64_t input_edges, self_loops;
};

void fs_csr_builder_free(fs_csr_builder_t *b)
{
    if (!b) return;
    if (b->spill) {
        fclose(b->spill);
        remove(b->spill_path);
    }
    free(b->deg);
    free(b->hkeys);
    free(b->hvals);
    free(b->raw);
    free(b->census);
    free(b);
}

fs_status_t fs_csr_builder_create(fs_writer_t *w, const fs_edge_opts_t *opts, int64_t num_nodes,
                                  int weighted, fs_csr_builder_t **out, fs_error_t *err)
{
    *out = NULL;
    if (opts->compact_ids && num_nodes >= 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "compact ids need an unknown node count");
    fs_csr_builder_t *b = calloc(1, sizeof *b);
    if (!b) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    b->w = w;
    b->o = *opts;
    b->weighted = weighted;
    b->fixed_n = num_nodes;
    snprintf(b->spill_path, sizeof b->spill_path, "%s/edges.spill", fs_writer_tmpdir(w));
    b->spill = fopen(b->spill_path, "w+b");
    if (!b->spill) {
        fs_csr_builder_free(b);
        return fs_error(err, FS_ERR_IO, "cannot create %s: %s", b->spill_path, strerror(errno));
    }
    setvbuf(b->spill, NULL, _IOFBF, 4u << 20);
    if (num_nodes < 0 && !opts->compact_ids) {
        if (!(b->census = malloc(sizeof *b->census))) {
            fs_csr_builder_free(b);
            return fs_error(err, FS_ERR_NOMEM, "out of memory");
        }
        fs_id_census_init(b->census);
    }
    if (num_nodes >= 0) {
        b->deg = calloc((size_t)num_nodes + 1, sizeof *b->deg);
        b->deg_cap = num_nodes;
        b->seen_n = num_nodes;
        if (!b->deg) {
            fs_csr_builder_free(b);
            return fs_error(err, FS_ERR_NOMEM, "out of memory for %lld nodes", (long long)num_nodes);
        }
    }
    *out = b;
    return FS_OK;
}

static int grow_deg(fs_csr_builder_t *b, int64_t id)
{
    if (id < b->deg_cap) return 0;
    int64_t cap = b->deg_cap ? b->deg_cap : 1024;
    while (cap <= id) cap *= 2;
    int64_t *d = realloc(b->deg, (size_t)cap * sizeof *d);
    if (!d) return -1;
    memset(d + b->deg_cap, 0, (size_t)(cap - b->deg_cap) * sizeof *d);
    b->deg = d;
    b->deg_cap = cap;
    return 0;
}

/* One edge's share of the row lengths: its source row, and with
 * symmetrize its destination row too. */
static void count_edge(int64_t *deg, int symmetrize, edge_t e)
{
    deg[e.src]++;
    if (symmetrize && e.src != e.dst) deg[e.dst]++;
}

const fs_id_census_t *fs_csr_builder_census(const fs_csr_builder_t *b)
{
    return b->census;
}

/* ---- compact ids ----------------------------------------------------------- */

static int map_grow(fs_csr_builder_t *b)
{
    size_t cap = b->hcap ? b->hcap * 2 : 1u << 16;
    int64_t *k = malloc(cap * sizeof *k), *v = malloc(cap * sizeof *v);
    int64_t *raw = realloc(b->raw, cap / 2 * sizeof *raw);
    if (!k || !v || !raw) {
        free(k);
        free(v);
        if (raw) b->raw = raw;
        return -1;
    }
    b->raw = raw;
    memset(k, 0xff, cap * sizeof *k); /* -1 = empty: ids are >= 0 */
    for (size_t i = 0; i < b->hcap; i++) {
        if (b->hkeys[i] < 0) continue;
        size_t h = fs_mix64((uint64_t)b->hkeys[i]) & (cap - 1);
        while (k[h] >= 0) h = (h + 1) & (cap - 1);
        k[h] = b->hkeys[i];
        v[h] = b->hvals[i];
    }
    free(b->hkeys);
    free(b->hvals);
    b->hkeys = k;
    b->hvals = v;
    b->hcap = cap;
    return 0;
}

static int64_t map_id(fs_csr_builder_t *b, int64_t raw)
{
    if (b->hcount * 2 >= b->hcap && map_grow(b) != 0) return -1;
    size_t mask = b->hcap - 1, h = fs_mix64((uint64_t)raw) & mask;
    while (b->hkeys[h] >= 0) {
        if (b->hkeys[h] == raw) return b->hvals[h];
        h = (h + 1) & mask;
    }
    b->hkeys[h] = raw;
    b->hvals[h] = (int64_t)b->hcount;
    b->raw[b->hcount] = raw;
    return (int64_t)b->hcount++;
}

/* ---- pass 1 -------------------------------------------------------------- */

fs_status_t fs_csr_builder_add(fs_csr_builder_t *b, const int64_t *src, const int64_t *dst,
                               const float *w, size_t n, fs_error_t *err)
{
    for (size_t i = 0; i < n; i++) {
        int64_t s = src[i], d = dst[i];
        if (s < 0 || d < 0)
            return fs_error(err, FS_ERR_FORMAT, "edge %lld: negative node id (%lld, %lld)",
                            (long long)(b->input_edges + 1), (long long)s, (long long)d);
        if (b->fixed_n >= 0 && (s >= b->fixed_n || d >= b->fixed_n))
            return fs_error(err, FS_ERR_FORMAT, "edge %lld: node id (%lld, %lld) is outside [0, %lld)",
                            (long long)(b->input_edges + 1), (long long)s, (long long)d,
                            (long long)b->fixed_n);
        if (b->census) {
            fs_id_census_add(b->census, s);
            fs_id_census_add(b->census, d);
        } else if (b->o.compact_ids) {
            s = map_id(b, s);
            d = map_id(b, d);
            if (s < 0 || d < 0) return fs_error(err, FS_ERR_NOMEM, "out of memory mapping node ids");
        }
        if (b->o.reverse) {
            int64_t t = s;
            s = d;
            d = t;
        }
        b->input_edges++;
        int64_t hi = s > d ? s : d;
        if (b->census) { /* a node seen only in a dropped self-loop still exists */
            if (hi >= b->seen_n) b->seen_n = hi + 1;
        } else if (b->fixed_n < 0) {
            if (grow_deg(b, hi) != 0) return fs_error(err, FS_ERR_NOMEM, "out of memory counting degrees");
            if (hi >= b->seen_n) b->seen_n = hi + 1;
        }
        if (s == d && b->o.drop_self_loops) {
            b->self_loops++;
            continue;
        }
        edge_t e = {s, d};
        if (!b->census) count_edge(b->deg, b->o.symmetrize, e);
        if (fwrite(&e, sizeof e, 1, b->spill) != 1 ||
            (b->weighted && fwrite(&w[i], sizeof(float), 1, b->spill) != 1))
            return fs_error(err, FS_ERR_IO, "%s: write failed: %s", b->spill_path, strerror(errno));
    }
    return FS_OK;
}

/* ---- pass 2 -------------------------------------------------------------- */

typedef struct {
    int64_t *indptr;
    void *indices;
    float *weights;
    fs_dtype_t dt;
} rows_t;

#define SWAP(T, a, b) do { T t_ = (a); (a) = (b); (b) = t_; } while (0)

/* 3-way quicksort: fast on the many equal keys that multigraphs produce. */
#define DEFINE_SORT(NAME, T)                                                        \
    static void NAME(T *a, int64_t n)                                               \
    {                                                                               \
        while (n > 24) {                                                            \
            T x = a[0], y = a[n / 2], z = a[n - 1];                                 \
            T p = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y)); \
            int64_t lt = 0, i = 0, gt = n;                                          \
            while (i < gt) {                                                        \
                if (a[i] < p) { SWAP(T, a[lt], a[i]); lt++; i++; }                  \
                else if (a[i] > p) { gt--; SWAP(T, a[i], a[gt]); }                  \
                else i++;                                                           \
            }                                                                       \
            if (lt < n - gt) { NAME(a, lt); a += gt; n -= gt; }                     \
            else { NAME(a + gt, n - gt); n = lt; }                                  \
        }                                                                           \
        for (int64_t i = 1; i < n; i++) {                                           \
            T v = a[i];                                                             \
            int64_t j = i;                                                          \
            while (j > 0 && a[j - 1] > v) { a[j] = a[j - 1]; j--; }                 \
            a[j] = v;                                                               \
        }                                                                           \
    }
DEFINE_SORT(sort_i32, int32_t)
DEFINE_SORT(sort_i64, int64_t)

typedef struct {
    int64_t key;
    float w;
} kw_t;

static int kw_cmp(const void *pa, const void *pb)
{
    const kw_t *a = pa, *b = pb;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    return (a->w > b->w) - (a->w < b->w);
}

static int64_t key_at(const rows_t *r, int64_t i)
{
    return r->dt == FS_DTYPE_I32 ? ((int32_t *)r->indices)[i] : ((int64_t *)r->indices)[i];
}

static void set_key(const rows_t *r, int64_t i, int64_t v)
{
    if (r->dt == FS_DTYPE_I32) ((int32_t *)r->indices)[i] = (int32_t)v;
    else ((int64_t *)r->indices)[i] = v;
}

/* Sorts one weighted row by (neighbour, weight) through a scratch array. */
static void sort_weighted_row(const rows_t *r, int64_t b, int64_t e)
{
    kw_t small[256], *tmp = e - b <= 256 ? small : malloc((size_t)(e - b) * sizeof *tmp);
    if (!tmp) abort(); /* scratch for one row; the edges themselves are mapped */
    for (int64_t i = b; i < e; i++) tmp[i - b] = (kw_t){key_at(r, i), r->weights[i]};
    qsort(tmp, (size_t)(e - b), sizeof *tmp, kw_cmp);
    for (int64_t i = b; i < e; i++) {
        set_key(r, i, tmp[i - b].key);
        r->weights[i] = tmp[i - b].w;
    }
    if (tmp != small) free(tmp);
}

static void sort_rows(void *p, int64_t lo, int64_t hi, int worker)
{
    (void)worker;
    const rows_t *r = p;
    for (int64_t v = lo; v < hi; v++) {
        int64_t b = r->indptr[v], e = r->indptr[v + 1];
        if (e - b < 2) continue;
        if (r->weights) sort_weighted_row(r, b, e);
        else if (r->dt == FS_DTYPE_I32) sort_i32((int32_t *)r->indices + b, e - b);
        else sort_i64((int64_t *)r->indices + b, e - b);
    }
}

/* In-place forward compaction: row v's new start never passes its old one. */
static int64_t compact_rows(rows_t *r, int64_t n)
{
    int64_t out = 0;
    for (int64_t v = 0; v < n; v++) {
        int64_t b = r->indptr[v], e = r->indptr[v + 1];
        r->indptr[v] = out;
        for (int64_t i = b; i < e; i++) {
            int64_t k = key_at(r, i);
            if (i > b && k == key_at(r, out - 1)) {
                if (r->weights) r->weights[out - 1] += r->weights[i];
                continue;
            }
            set_key(r, out, k);
            if (r->weights) r->weights[out] = r->weights[i];
            out++;
        }
    }
    r->indptr[n] = out;
    return out;
}

/* Provisional (first-appearance) ids -> ranks of the raw ids, ascending. */
static int64_t *rank_compact_ids(fs_csr_builder_t *b, int64_t n)
{
    int64_t *order = malloc((size_t)n * sizeof *order), *rank = malloc((size_t)n * sizeof *rank);
    if (!order || !rank) {
        free(order);
        free(rank);
        return NULL;
    }
    memcpy(order, b->raw, (size_t)n * sizeof *order);
    /* Sort raw ids, then binary-search each provisional id's rank. */
    sort_i64(order, n);
    for (int64_t i = 0; i < n; i++) {
        int64_t lo = 0, hi = n - 1, key = b->raw[i];
        while (lo < hi) {
            int64_t mid = (lo + hi) / 2;
            if (order[mid] < key) lo = mid + 1;
            else hi = mid;
        }
        rank[i] = lo;
    }
    memcpy(b->raw, order, (size_t)n * sizeof *order); /* raw[] is now rank -> raw id */
    free(order);
    return rank;
}

/* Streams the spill back, calling visit on each edge (and its weight). */
typedef void (*spill_visit_t)(void *ctx, edge_t e, float w);

static fs_status_t read_spill(fs_csr_builder_t *b, const char *what, spill_visit_t visit, void *ctx, fs_error_t *err)
{
    if (fflush(b->spill) != 0 || fseek(b->spill, 0, SEEK_SET) != 0)
        return fs_error(err, FS_ERR_IO, "%s: %s", b->spill_path, strerror(errno));
    size_t rec = sizeof(edge_t) + (b->weighted ? sizeof(float) : 0);
    unsigned char *buf = malloc(rec * SPILL_CHUNK);
    if (!buf) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    fs_progress_t pr;
    fs_progress_start(&pr, what);
    int64_t done = 0;
    size_t got;
    while ((got = fread(buf, rec, SPILL_CHUNK, b->spill)) > 0) {
        for (size_t i = 0; i < got; i++) {
            edge_t e;
            float wt = 0;
            memcpy(&e, buf + i * rec, sizeof e);
            if (b->weighted) memcpy(&wt, buf + i * rec + sizeof e, sizeof wt);
            visit(ctx, e, wt);
        }
        done += (int64_t)got;
        fs_progress_update(&pr, (double)done / (double)(b->input_edges - b->self_loops + 1), done, "edges");
    }
    int bad = ferror(b->spill);
    free(buf);
    if (bad) return fs_error(err, FS_ERR_IO, "%s: read failed", b->spill_path);
    return FS_OK;
}

typedef struct {
    const fs_csr_builder_t *b;
    rows_t *r;
    const int64_t *rank;
    int64_t *cursor;
} scatter_t;

static void put_edge(const scatter_t *x, int64_t row, int64_t key, float w)
{
    int64_t pos = x->cursor[row]++;
    set_key(x->r, pos, key);
    if (x->r->weights) x->r->weights[pos] = w;
}

static void scatter_edge(void *ctx, edge_t e, float w)
{
    const scatter_t *x = ctx;
    if (x->rank) e.src = x->rank[e.src], e.dst = x->rank[e.dst];
    put_edge(x, e.src, e.dst, w);
    if (x->b->o.symmetrize && e.src != e.dst) put_edge(x, e.dst, e.src, w);
}

static void count_spilled_edge(void *ctx, edge_t e, float w)
{
    (void)w;
    const fs_csr_builder_t *b = ctx;
    count_edge(b->deg, b->o.symmetrize, e);
}

/* Ids as given: the row lengths, counted once the largest id is known. */
static fs_status_t count_degrees(fs_csr_builder_t *b, int64_t n, fs_error_t *err)
{
    if (!(b->deg = calloc((size_t)n + 1, sizeof *b->deg)))
        return fs_error(err, FS_ERR_NOMEM, "out of memory counting the degrees of %lld nodes", (long long)n);
    return read_spill(b, "  degrees", count_spilled_edge, b, err);
}

fs_status_t fs_csr_builder_finish(fs_csr_builder_t *b, int threads, fs_csr_stats_t *stats,
                                  fs_error_t *err)
{
    fs_status_t s = FS_OK;
    int64_t n = b->o.compact_ids ? (int64_t)b->hcount : b->seen_n;
    int64_t *rank = NULL, *cursor = NULL;
    rows_t r = {0};
    if (b->census && (s = count_degrees(b, n, err))) goto out;
    if (b->o.compact_ids && n > 0) {
        int64_t *node_ids;
        int64_t shape[1] = {n};
        if (!(rank = rank_compact_ids(b, n))) {
            s = fs_error(err, FS_ERR_NOMEM, "out of memory ranking %lld ids", (long long)n);
            goto out;
        }
        if ((s = fs_writer_array(b->w, FS_ROLE_NODE_IDS, NULL, FS_DTYPE_I64, 1, shape, (void **)&node_ids, err)))
            goto out;
        memcpy(node_ids, b->raw, (size_t)n * sizeof *node_ids);
    }
    int64_t shape[1] = {n + 1};
    if ((s = fs_writer_array(b->w, FS_ROLE_INDPTR, NULL, FS_DTYPE_I64, 1, shape, (void **)&r.indptr, err)))
        goto out;
    for (int64_t v = 0; v < n; v++) r.indptr[(rank ? rank[v] : v) + 1] = b->deg[v];
    for (int64_t v = 0; v < n; v++) r.indptr[v + 1] += r.indptr[v];
    int64_t e0 = r.indptr[n];
    r.dt = n - 1 <= INT32_MAX ? FS_DTYPE_I32 : FS_DTYPE_I64;
    shape[0] = e0;
    if ((s = fs_writer_array(b->w, FS_ROLE_INDICES, NULL, r.dt, 1, shape, &r.indices, err))) goto out;
    if (b->weighted &&
        (s = fs_writer_array(b->w, FS_ROLE_EDGE_WEIGHTS, NULL, FS_DTYPE_F32, 1, shape, (void **)&r.weights, err)))
        goto out;
    cursor = malloc(((size_t)n + 1) * sizeof *cursor);
    if (!cursor) {
        s = fs_error(err, FS_ERR_NOMEM, "out of memory");
        goto out;
    }
    memcpy(cursor, r.indptr, (size_t)n * sizeof *cursor);
    scatter_t x = {b, &r, rank, cursor};
    if ((s = read_spill(b, "  scatter", scatter_edge, &x, err))) goto out;

    fs_parallel_for_dynamic(threads, n, 4096, sort_rows, &r);
    int64_t e = e0;
    if (b->o.dedup) {
        e = compact_rows(&r, n);
        if (e != e0) {
            if ((s = fs_writer_resize(b->w, &r.indices, e, err))) goto out;
            if (r.weights && (s = fs_writer_resize(b->w, (void **)&r.weights, e, err))) goto out;
        }
    }
    if (stats) {
        *stats = (fs_csr_stats_t){.num_nodes = n, .num_edges = e, .input_edges = b->input_edges,
                                  .self_loops_dropped = b->self_loops, .duplicates_merged = e0 - e,
                                  .index_dtype = r.dt};
    }
out:
    free(rank);
    free(cursor);
    fs_csr_builder_free(b);
    return s;
}
