/* import_npz.c — scipy-sparse .npz archives in the gnn-benchmark layout
 * (Shchur et al.; the layout of cora.npz, citeseer.npz, ...):
 *   adj_indptr, adj_indices [, adj_data, adj_shape]     CSR adjacency
 *   attr_indptr, attr_indices, attr_data, attr_shape     CSR features, or
 *   attr_matrix                                          dense features
 *   labels                                               one int per node
 *   idx_train/idx_val/idx_test or *_mask                 optional splits
 * Members are streamed out of the zip (stored or deflated) in chunks, so
 * memory stays O(N) whatever the edge and feature counts. Object arrays
 * (pickled Python) and unknown members are skipped with a note. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zip.h>

#include "import.h"
#include "fs_npy.h"
#include "progress.h"

#define CHUNK 65536

typedef struct {
    zip_file_t *zf;
    fs_npy_header_t h;
    char what[512];
} member_t;

typedef struct {
    zip_t *za;
    const char *path;
    zip_int64_t count;
    unsigned char *used;         /* members consumed, for the skip notes */
} archive_t;

static zip_int64_t find_member(archive_t *a, const char *key)
{
    char name[128];
    snprintf(name, sizeof name, "%s.npy", key);
    zip_int64_t i = zip_name_locate(a->za, name, 0);
    if (i < 0) i = zip_name_locate(a->za, key, 0);
    return i;
}

static fs_status_t member_read(member_t *m, void *buf, size_t n, fs_error_t *err)
{
    size_t got = 0;
    while (got < n) {
        zip_int64_t r = zip_fread(m->zf, (char *)buf + got, n - got);
        if (r < 0) return fs_error(err, FS_ERR_FORMAT, "%s: %s", m->what, zip_file_strerror(m->zf));
        if (r == 0) return fs_error(err, FS_ERR_FORMAT, "%s: truncated (needed %zu more bytes)", m->what, n - got);
        got += (size_t)r;
    }
    return FS_OK;
}

static void member_close(member_t *m)
{
    if (m->zf) zip_fclose(m->zf);
    m->zf = NULL;
}

/* Opens member `key` and parses its .npy header. FS_ERR_NOT_FOUND if absent. */
static fs_status_t member_open(archive_t *a, const char *key, member_t *m, fs_error_t *err)
{
    memset(m, 0, sizeof *m);
    zip_int64_t idx = find_member(a, key);
    if (idx < 0) return fs_error(err, FS_ERR_NOT_FOUND, "%s: no member '%s.npy'", a->path, key);
    a->used[idx] = 1;
    snprintf(m->what, sizeof m->what, "%s:%s.npy", a->path, key);
    zip_stat_t zs;
    if (zip_stat_index(a->za, (zip_uint64_t)idx, 0, &zs) != 0 || !(m->zf = zip_fopen_index(a->za, (zip_uint64_t)idx, 0)))
        return fs_error(err, FS_ERR_FORMAT, "%s: cannot open: %s", m->what, zip_strerror(a->za));
    unsigned char head[12];
    fs_status_t s = member_read(m, head, 10, err);
    size_t pre = head[6] == 1 ? 10 : 12;
    if (s == FS_OK && pre == 12) s = member_read(m, head + 10, 2, err);
    if (s != FS_OK) return s;
    size_t dict = pre == 10 ? (size_t)head[8] | (size_t)head[9] << 8
                            : (size_t)head[8] | (size_t)head[9] << 8 | (size_t)head[10] << 16 | (size_t)head[11] << 24;
    if (memcmp(head, "\x93NUMPY", 6) != 0 || dict > (1u << 20))
        return fs_error(err, FS_ERR_FORMAT, "%s: not a .npy member (bad magic)", m->what);
    unsigned char *hdr = malloc(pre + dict);
    if (!hdr) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    memcpy(hdr, head, pre);
    s = member_read(m, hdr + pre, dict, err);
    if (s == FS_OK) s = fs_npy_parse(hdr, pre + dict, m->what, &m->h, err);
    free(hdr);
    if (s == FS_OK && (zs.valid & ZIP_STAT_SIZE) && zs.size != m->h.header_len + m->h.data_len)
        s = fs_error(err, FS_ERR_FORMAT, "%s: header promises %zu data bytes but the member holds %llu", m->what,
                     m->h.data_len, (unsigned long long)(zs.size - m->h.header_len));
    return s;
}

/* Streams `count` elements of the member (from its current position) as
 * int64, calling fn per chunk. */
typedef fs_status_t (*i64_chunk_fn)(void *ctx, const int64_t *v, int64_t first, size_t n, fs_error_t *err);

static fs_status_t stream_i64(member_t *m, int64_t count, i64_chunk_fn fn, void *ctx, fs_error_t *err)
{
    size_t isz = fs_dtype_size(m->h.dtype);
    if (!fs_dtype_is_int(m->h.dtype) && !fs_dtype_is_float(m->h.dtype))
        return fs_error(err, FS_ERR_FORMAT, "%s: dtype %s is not numeric", m->what, m->h.descr);
    void *raw = malloc(CHUNK * isz);
    int64_t *v = malloc(CHUNK * sizeof *v);
    fs_status_t s = raw && v ? FS_OK : fs_error(err, FS_ERR_NOMEM, "out of memory");
    for (int64_t off = 0; s == FS_OK && off < count; off += CHUNK) {
        size_t n = (size_t)(count - off < CHUNK ? count - off : CHUNK), bad = 0;
        if ((s = member_read(m, raw, n * isz, err))) break;
        if (fs_convert_to_i64(m->h.dtype, raw, n, v, &bad) != FS_OK) {
            s = fs_error(err, FS_ERR_FORMAT, "%s: element %lld is not an integer", m->what, (long long)(off + (int64_t)bad));
            break;
        }
        s = fn(ctx, v, off, n, err);
    }
    free(raw);
    free(v);
    return s;
}

static fs_status_t store_i64(void *ctx, const int64_t *v, int64_t first, size_t n, fs_error_t *err)
{
    (void)err;
    memcpy((int64_t *)ctx + first, v, n * sizeof *v);
    return FS_OK;
}

/* Reads a whole 1-D integer member into a new int64 array. */
static fs_status_t read_i64_array(archive_t *a, const char *key, int64_t **out, int64_t *n, fs_error_t *err)
{
    member_t m;
    *out = NULL;
    fs_status_t s = member_open(a, key, &m, err);
    if (s == FS_OK && m.h.ndim != 1)
        s = fs_error(err, FS_ERR_FORMAT, "%s: expected a 1-D array, got %d dimensions", m.what, m.h.ndim);
    if (s == FS_OK) {
        *n = m.h.shape[0];
        *out = malloc((size_t)(*n + 1) * sizeof **out);
        s = *out ? stream_i64(&m, *n, store_i64, *out, err) : fs_error(err, FS_ERR_NOMEM, "out of memory");
    }
    member_close(&m);
    if (s != FS_OK) {
        free(*out);
        *out = NULL;
    }
    return s;
}

static fs_status_t check_indptr(const char *what, const int64_t *p, int64_t n, int64_t nnz, fs_error_t *err)
{
    if (p[0] != 0) return fs_error(err, FS_ERR_FORMAT, "%s: indptr[0] is %lld, must be 0", what, (long long)p[0]);
    for (int64_t i = 0; i < n; i++)
        if (p[i] > p[i + 1])
            return fs_error(err, FS_ERR_FORMAT, "%s: indptr is not monotone at offset %lld", what, (long long)i);
    if (p[n] != nnz)
        return fs_error(err, FS_ERR_FORMAT, "%s: indptr ends at %lld but there are %lld entries", what,
                        (long long)p[n], (long long)nnz);
    return FS_OK;
}

/* ---- adjacency -------------------------------------------------------------- */

typedef struct {
    const int64_t *indptr;
    int64_t row, n;
    fs_csr_builder_t *cb;
    int64_t src[CHUNK];
} adj_ctx_t;

static fs_status_t add_adj_chunk(void *p, const int64_t *dst, int64_t first, size_t n, fs_error_t *err)
{
    adj_ctx_t *c = p;
    for (size_t i = 0; i < n; i++) {
        while (c->indptr[c->row + 1] <= first + (int64_t)i) c->row++;
        c->src[i] = c->row;
    }
    return fs_csr_builder_add(c->cb, c->src, dst, NULL, n, err);
}

static fs_status_t import_adjacency(archive_t *a, fs_writer_t *w, const fs_import_opts_t *o, int64_t *num_nodes,
                                    fs_csr_stats_t *st, fs_error_t *err)
{
    int64_t *indptr = NULL, n1 = 0;
    member_t m = {0};
    fs_csr_builder_t *cb = NULL;
    adj_ctx_t *c = NULL;
    fs_status_t s = read_i64_array(a, "adj_indptr", &indptr, &n1, err);
    if (s == FS_OK && n1 < 1) s = fs_error(err, FS_ERR_FORMAT, "%s:adj_indptr.npy: empty", a->path);
    if (s == FS_OK) s = member_open(a, "adj_indices", &m, err);
    if (s == FS_OK && m.h.ndim != 1) s = fs_error(err, FS_ERR_FORMAT, "%s: expected a 1-D array", m.what);
    if (s == FS_OK) s = check_indptr("adj_indptr.npy", indptr, n1 - 1, m.h.shape[0], err);
    int64_t *shape = NULL, ns = 0;
    if (s == FS_OK && find_member(a, "adj_shape") >= 0 && (s = read_i64_array(a, "adj_shape", &shape, &ns, err)) == FS_OK) {
        if (ns != 2 || shape[0] != n1 - 1 || shape[1] != n1 - 1)
            s = fs_error(err, FS_ERR_FORMAT, "%s: adj_shape must be (%lld, %lld) for a square adjacency", a->path,
                         (long long)(n1 - 1), (long long)(n1 - 1));
        free(shape);
    }
    if (s == FS_OK) s = fs_csr_builder_create(w, &o->edges, n1 - 1, 0, &cb, err);
    if (s == FS_OK && !(c = malloc(sizeof *c))) s = fs_error(err, FS_ERR_NOMEM, "out of memory");
    if (s == FS_OK) {
        *c = (adj_ctx_t){.indptr = indptr, .n = n1 - 1, .cb = cb};
        s = stream_i64(&m, m.h.shape[0], add_adj_chunk, c, err);
        if (s != FS_OK && err && err->code == FS_ERR_FORMAT && strstr(err->msg, "outside"))
            fs_error_prefix(err, "%s", m.what);
    }
    if (find_member(a, "adj_data") >= 0) a->used[find_member(a, "adj_data")] = 1; /* unit weights */
    member_close(&m);
    if (s == FS_OK) s = fs_csr_builder_finish(cb, o->threads, st, err);
    else fs_csr_builder_free(cb);
    *num_nodes = n1 - 1;
    free(c);
    free(indptr);
    return s;
}

/* ---- features --------------------------------------------------------------- */

static fs_status_t import_dense_features(archive_t *a, fs_writer_t *w, int64_t n, fs_error_t *err)
{
    member_t m;
    fs_status_t s = member_open(a, "attr_matrix", &m, err);
    if (s == FS_OK && (m.h.ndim != 2 || m.h.shape[0] != n))
        s = fs_error(err, FS_ERR_FORMAT, "%s: expected shape (%lld, F)", m.what, (long long)n);
    if (s == FS_OK && !fs_dtype_is_float(m.h.dtype) && !fs_dtype_is_int(m.h.dtype))
        s = fs_error(err, FS_ERR_FORMAT, "%s: dtype %s is not numeric", m.what, m.h.descr);
    float *table = NULL;
    void *raw = NULL;
    if (s == FS_OK)
        s = fs_writer_array(w, FS_ROLE_FEATURES, "feat", FS_DTYPE_F32, 2, m.h.shape, (void **)&table, err);
    size_t row = (size_t)(s == FS_OK ? m.h.shape[1] : 0), isz = fs_dtype_size(m.h.dtype);
    if (s == FS_OK && !(raw = malloc(row * isz + 1))) s = fs_error(err, FS_ERR_NOMEM, "out of memory");
    for (int64_t v = 0; s == FS_OK && v < n; v++) {
        if ((s = member_read(&m, raw, row * isz, err))) break;
        fs_convert_to_f32(m.h.dtype, raw, row, table + (size_t)v * row);
    }
    free(raw);
    member_close(&m);
    return s;
}

typedef struct {
    const int64_t *indptr;
    int64_t row, dim;
    float *table;
    member_t *data;
    const char *what;
    void *raw;
    float vals[CHUNK];
} attr_ctx_t;

static fs_status_t add_attr_chunk(void *p, const int64_t *col, int64_t first, size_t n, fs_error_t *err)
{
    attr_ctx_t *c = p;
    size_t isz = fs_dtype_size(c->data->h.dtype);
    fs_status_t s = member_read(c->data, c->raw, n * isz, err);
    if (s != FS_OK) return s;
    fs_convert_to_f32(c->data->h.dtype, c->raw, n, c->vals);
    for (size_t i = 0; i < n; i++) {
        while (c->indptr[c->row + 1] <= first + (int64_t)i) c->row++;
        if (col[i] < 0 || col[i] >= c->dim)
            return fs_error(err, FS_ERR_FORMAT, "%s: column %lld at offset %lld is outside [0, %lld)", c->what,
                            (long long)col[i], (long long)(first + (int64_t)i), (long long)c->dim);
        c->table[c->row * c->dim + col[i]] = c->vals[i];
    }
    return FS_OK;
}

static fs_status_t import_sparse_features(archive_t *a, fs_writer_t *w, int64_t n, fs_error_t *err)
{
    int64_t *indptr = NULL, *shape = NULL, n1 = 0, ns = 0;
    member_t idx = {0}, data = {0};
    attr_ctx_t *c = NULL;
    float *table = NULL;
    fs_status_t s = read_i64_array(a, "attr_shape", &shape, &ns, err);
    if (s == FS_OK && (ns != 2 || shape[0] != n || shape[1] <= 0))
        s = fs_error(err, FS_ERR_FORMAT, "%s: attr_shape must be (%lld, F) with F > 0", a->path, (long long)n);
    if (s == FS_OK) s = read_i64_array(a, "attr_indptr", &indptr, &n1, err);
    if (s == FS_OK && n1 != n + 1)
        s = fs_error(err, FS_ERR_FORMAT, "%s: attr_indptr has %lld entries, expected %lld", a->path, (long long)n1,
                     (long long)(n + 1));
    if (s == FS_OK) s = member_open(a, "attr_indices", &idx, err);
    if (s == FS_OK) s = member_open(a, "attr_data", &data, err);
    if (s == FS_OK && (idx.h.ndim != 1 || data.h.ndim != 1 || idx.h.shape[0] != data.h.shape[0]))
        s = fs_error(err, FS_ERR_FORMAT, "%s: attr_indices and attr_data must be 1-D of equal length", a->path);
    if (s == FS_OK) s = check_indptr("attr_indptr.npy", indptr, n, idx.h.shape[0], err);
    if (s == FS_OK) s = fs_writer_array(w, FS_ROLE_FEATURES, "feat", FS_DTYPE_F32, 2, shape, (void **)&table, err);
    if (s == FS_OK && !(c = calloc(1, sizeof *c))) s = fs_error(err, FS_ERR_NOMEM, "out of memory");
    if (s == FS_OK) {
        *c = (attr_ctx_t){.indptr = indptr, .dim = shape[1], .table = table, .data = &data, .what = idx.what,
                          .raw = malloc(CHUNK * 8)};
        s = c->raw ? stream_i64(&idx, idx.h.shape[0], add_attr_chunk, c, err)
                   : fs_error(err, FS_ERR_NOMEM, "out of memory");
        free(c->raw);
    }
    member_close(&idx);
    member_close(&data);
    free(c);
    free(indptr);
    free(shape);
    return s;
}

/* ---- labels and splits ------------------------------------------------------ */

static fs_status_t import_labels(archive_t *a, fs_writer_t *w, int64_t n, int64_t **labels_out, fs_error_t *err)
{
    member_t m;
    *labels_out = NULL;
    fs_status_t s = member_open(a, "labels", &m, err);
    if (s == FS_OK && m.h.ndim != 1) {
        fprintf(stderr, "import: note: skipping %s: %d-D labels (one-hot or multi-label) are not supported\n",
                m.what, m.h.ndim);
        member_close(&m);
        return FS_OK;
    }
    if (s == FS_OK && m.h.shape[0] != n)
        s = fs_error(err, FS_ERR_FORMAT, "%s: %lld labels for %lld nodes", m.what, (long long)m.h.shape[0], (long long)n);
    int64_t *labels = NULL, shape[1] = {n};
    if (s == FS_OK) s = fs_writer_array(w, FS_ROLE_LABELS, NULL, FS_DTYPE_I64, 1, shape, (void **)&labels, err);
    if (s == FS_OK) s = stream_i64(&m, n, store_i64, labels, err);
    for (int64_t v = 0; s == FS_OK && v < n; v++)
        if (labels[v] < -1) s = fs_error(err, FS_ERR_FORMAT, "%s: label %lld at offset %lld is negative", m.what,
                                         (long long)labels[v], (long long)v);
    member_close(&m);
    if (s == FS_OK) *labels_out = labels;
    return s;
}

/* Splits shipped in the archive, as id lists or boolean masks. Returns 1 in
 * *found when any was present. */
static fs_status_t import_shipped_splits(archive_t *a, fs_writer_t *w, int64_t n, int *found, fs_error_t *err)
{
    static const char *const names[3] = {"train", "valid", "test"};
    static const char *const keys[3][4] = {{"idx_train", "train_idx", "train_mask", NULL},
                                           {"idx_val", "val_idx", "val_mask", "valid_idx"},
                                           {"idx_test", "test_idx", "test_mask", NULL}};
    *found = 0;
    for (int i = 0; i < 3; i++) {
        for (int k = 0; k < 4 && keys[i][k]; k++) {
            if (find_member(a, keys[i][k]) < 0) continue;
            int64_t *v, len, cnt = 0, *ids;
            fs_status_t s = read_i64_array(a, keys[i][k], &v, &len, err);
            if (s != FS_OK) return s;
            int is_mask = strstr(keys[i][k], "mask") != NULL;
            if (is_mask && len != n) {
                free(v);
                return fs_error(err, FS_ERR_FORMAT, "%s:%s.npy: mask has %lld entries for %lld nodes", a->path,
                                keys[i][k], (long long)len, (long long)n);
            }
            for (int64_t j = 0; j < len; j++) {
                int64_t id = is_mask ? (v[j] ? j : -1) : v[j];
                if (id < -1 || id >= n || (!is_mask && id < 0)) {
                    long long bad = (long long)v[j]; /* named in the message after v is freed */
                    free(v);
                    return fs_error(err, FS_ERR_FORMAT, "%s:%s.npy: node id %lld at offset %lld is outside [0, %lld)",
                                    a->path, keys[i][k], bad, (long long)j, (long long)n);
                }
                if (id >= 0) v[cnt++] = id;
            }
            int64_t shape[1] = {cnt};
            s = fs_writer_array(w, FS_ROLE_SPLIT, names[i], FS_DTYPE_I64, 1, shape, (void **)&ids, err);
            if (s == FS_OK) memcpy(ids, v, (size_t)cnt * sizeof *ids);
            free(v);
            if (s != FS_OK) return s;
            *found = 1;
            break;
        }
    }
    return FS_OK;
}

static void note_skipped(archive_t *a)
{
    for (zip_int64_t i = 0; i < a->count; i++) {
        if (a->used[i]) continue;
        const char *name = zip_get_name(a->za, (zip_uint64_t)i, 0);
        member_t m;
        fs_error_t e = {0};
        char key[256];
        snprintf(key, sizeof key, "%s", name ? name : "?");
        char *dot = strstr(key, ".npy");
        if (dot) *dot = '\0';
        fs_status_t s = member_open(a, key, &m, &e);
        member_close(&m);
        a->used[i] = 0;
        if (s == FS_ERR_UNSUPPORTED && strstr(e.msg, "object array"))
            fprintf(stderr, "import: note: skipping %s: object array (pickled Python objects)\n", name);
        else
            fprintf(stderr, "import: note: skipping %s: not part of the gnn-benchmark layout\n", name);
    }
}

fs_status_t fs_import_npz(const char *path, const fs_import_opts_t *o, fs_error_t *err)
{
    int zerr = 0;
    archive_t a = {.path = path};
    a.za = zip_open(path, ZIP_RDONLY | ZIP_CHECKCONS, &zerr);
    if (!a.za) {
        zip_error_t ze;
        zip_error_init_with_code(&ze, zerr);
        fs_status_t code = zerr == ZIP_ER_NOENT ? FS_ERR_NOT_FOUND : zerr == ZIP_ER_OPEN || zerr == ZIP_ER_READ ? FS_ERR_IO
                                                                                                          : FS_ERR_FORMAT;
        fs_error(err, code, "%s: not a readable .npz (zip) archive: %s", path, zip_error_strerror(&ze));
        zip_error_fini(&ze);
        return code;
    }
    a.count = zip_get_num_entries(a.za, 0);
    a.used = calloc((size_t)a.count + 1, 1);
    fs_writer_t *w = NULL;
    int64_t n = 0, *labels = NULL;
    fs_csr_stats_t st = {0};
    int found_splits = 0;
    fs_status_t s = a.used ? fs_writer_create(o->out_dir, o->force, &w, err) : fs_error(err, FS_ERR_NOMEM, "out of memory");
    if (s == FS_OK) s = import_adjacency(&a, w, o, &n, &st, err);
    if (s == FS_OK && find_member(&a, "attr_matrix") >= 0) s = import_dense_features(&a, w, n, err);
    else if (s == FS_OK && find_member(&a, "attr_indptr") >= 0) s = import_sparse_features(&a, w, n, err);
    if (s == FS_OK && find_member(&a, "labels") >= 0) s = import_labels(&a, w, n, &labels, err);
    if (s == FS_OK) s = import_shipped_splits(&a, w, n, &found_splits, err);
    if (s == FS_OK && !found_splits) s = fs_write_random_splits(w, n, labels, o->split_pct, o->seed, err);
    if (s == FS_OK) {
        note_skipped(&a);
        s = fs_import_set_meta(w, "npz", path, o, n, st.num_edges, labels, err);
    }
    zip_close(a.za);
    free(a.used);
    if (s != FS_OK) {
        fs_writer_abort(w);
        return s;
    }
    fprintf(stderr, "import: %lld nodes, %lld edges\n", (long long)n, (long long)st.num_edges);
    return fs_writer_commit(w, err);
}
