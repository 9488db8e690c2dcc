/* dataset.c — opening and validating a native dataset directory.
 *
 * Design: the manifest (jansson) says which file plays which role; each file
 * is opened once, mapped read-only and its .npy header checked against that
 * role. Data checks (indptr monotone, ids in range) scan the mappings in
 * parallel and report the *first* bad offset, so the message is the same
 * whatever the thread count. The dataset keeps each descriptor it validated
 * and hands out only that one (fs_dataset_locate): a path is never opened
 * twice, so a file swapped after validation is never served.
 *
 * Serving (FS_OPEN_COPY): a mapped file's pages belong to whoever can write
 * the file. Truncating it (a re-import in place, a full disk, a bad copy)
 * makes every process that maps it take SIGBUS on the next read of a page
 * past the new end, and writing it changes what is served. So the server
 * reads each file once, with read(), into a copy that nobody can write,
 * shrink or grow — a sealed memfd, or an unnamed read-only file
 * (served_copy.c) — hashing exactly the bytes written there, checked
 * against the manifest's xxh3, then maps the copy read-only and validates
 * that mapping. The validated bytes are then the served bytes, and trainers
 * receive the copy's descriptor, so no process can fault on a vanished page.
 * The cost is memory (the copy is as large as the dataset; the original's
 * page cache is dropped after copying, so the total stays about 1x:
 * docs/design.md "Data plane") and a start-up copy. Changes to the files
 * afterwards are only told about (fs_dataset_file_check: the server logs
 * them and counts them in a metric); the copies keep being served.
 *
 * Without FS_OPEN_COPY (the CLI's info and plan, tests, benchmarks) files are
 * mapped directly: no copy, and the page cache is shared. */
#include "dataset.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset_internal.h"
#include "fs_hash.h"
#include "fs_parallel.h"
#include "fs_npy.h"
#include "window.h"

/* ---- mapping one .npy file ---------------------------------------------- */

int ds_safe_file_name(const char *f)
{
    return f[0] != '\0' && f[0] != '.' && strchr(f, '/') == NULL && strlen(f) < 128;
}

/* `copied`: the checksum the copy computed (NULL without FS_OPEN_COPY:
 * computed here from the mapping, with FS_OPEN_VERIFY only). */
static fs_status_t verify_checksum(open_ctx_t *c, const char *file, const void *addr, size_t len,
                                   const uint64_t *copied)
{
    json_t *entry = c->files ? json_object_get(c->files, file) : NULL;
    if (!entry) return FS_OK;
    json_int_t bytes = json_integer_value(json_object_get(entry, "bytes"));
    if ((size_t)bytes != len)
        return fs_error(c->err, FS_ERR_FORMAT, "%s: file is %zu bytes but the manifest records %lld "
                        "(truncated or replaced)", file, len, (long long)bytes);
    if (!copied && !(c->flags & FS_OPEN_VERIFY)) return FS_OK;
    const char *want = json_string_value(json_object_get(entry, "xxh3"));
    char got[17];
    snprintf(got, sizeof got, "%016llx", (unsigned long long)(copied ? *copied : fs_hash64(addr, len)));
    if (!want || strcmp(want, got) != 0)
        return fs_error(c->err, FS_ERR_FORMAT, "%s: checksum mismatch (manifest %s, file %s): the file "
                        "is corrupt or was modified", file, want ? want : "(none)", got);
    return FS_OK;
}

void ds_file_state(const struct stat *st, fs_file_state_t *out)
{
    *out = (fs_file_state_t){.present = 1, .dev = st->st_dev, .ino = st->st_ino, .size = st->st_size,
                             .mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec};
}

/* A descriptor of its own for `file`: dir/file opened, or a dup of the
 * descriptor given for it (fs_dataset_open_fds). */
static fs_status_t open_file(open_ctx_t *c, const char *file, const char *path, int *fd)
{
    if (!c->given) {
        if ((*fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) return FS_OK;
        return fs_error(c->err, errno == ENOENT ? FS_ERR_NOT_FOUND : FS_ERR_IO, "%s: cannot open: %s", path,
                        strerror(errno));
    }
    for (int i = 0; i < c->given->count; i++) {
        if (!c->given->names[i] || strcmp(c->given->names[i], file) != 0) continue;
        if ((*fd = fcntl(c->given->fds[i], F_DUPFD_CLOEXEC, 0)) >= 0) return FS_OK;
        return fs_error(c->err, FS_ERR_IO, "%s: the descriptor given for it (%d) cannot be used: %s", path,
                        c->given->fds[i], strerror(errno));
    }
    return fs_error(c->err, FS_ERR_NOT_FOUND, "%s: the manifest names file '%s', but no descriptor was given for it "
                    "(%d given)", path, file, c->given->count);
}

/* Opens dir/file once (or takes its given descriptor), maps it (or, with
 * FS_OPEN_COPY, its copy: served_copy.c) and parses its header; *data points at the
 * array. The descriptor validated is the one kept. */
fs_status_t ds_map_npy(open_ctx_t *c, const char *file, fs_npy_header_t *h, const void **data)
{
    fs_dataset_t *ds = c->ds;
    if (!ds_safe_file_name(file))
        return fs_error(c->err, FS_ERR_FORMAT, "%s: file names in the manifest must be plain names "
                        "inside the dataset directory, got '%s'", FS_MANIFEST, file);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", c->dir, file);
    int fd = -1;
    fs_status_t s0 = open_file(c, file, path, &fd);
    if (s0 != FS_OK) return s0;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return fs_error(c->err, FS_ERR_IO, "%s: not a regular file", path);
    }
    if (st.st_size == 0) {
        close(fd);
        return fs_error(c->err, FS_ERR_FORMAT, "%s: empty file", path);
    }
    if (ds->num_maps == ds->cap_maps) {
        int cap = ds->cap_maps ? 2 * ds->cap_maps : 16;
        fs_mapping_t *grown = realloc(ds->maps, (size_t)cap * sizeof *grown);
        if (!grown) {
            close(fd);
            return fs_error(c->err, FS_ERR_NOMEM, "out of memory opening %s", path);
        }
        ds->maps = grown, ds->cap_maps = cap;
    }
    fs_mapping_t *m = &ds->maps[ds->num_maps++];
    *m = (fs_mapping_t){.fd = -1, .len = (size_t)st.st_size};
    snprintf(m->file, sizeof m->file, "%s", file);
    ds_file_state(&st, &m->validated);

    uint64_t copied;
    fs_status_t s = FS_OK;
    if (c->table_file && (c->table_on_disk || ((c->flags & FS_OPEN_COPY) && ds_budget_table_to_disk(c, m->len)))) {
        m->fd = fd; /* the table's own file, read from disk by its rows (budget.c) */
        if ((s = ds_open_on_disk(c, path, m, h)) == FS_OK) *data = NULL;
        return s;
    }
    if (c->flags & FS_OPEN_COPY) {
        s = ds_budget_charge(c, path, m->len);
        if (s == FS_OK && !ds_prefetch_take(c->prefetch, file, &m->validated, m, &copied))
            s = ds_copy_serve(c, path, fd, m, &copied);
        close(fd); /* keeping it would pin a deleted file's disk space for the server's lifetime */
    } else {
        m->fd = fd;
        m->addr = mmap(NULL, m->len, PROT_READ, MAP_SHARED, fd, 0);
        if (m->addr == MAP_FAILED) {
            m->addr = NULL;
            s = fs_error(c->err, FS_ERR_IO, "%s: mmap failed: %s", path, strerror(errno));
        }
    }
    if (s != FS_OK) return s;
    size_t len = m->len;
    const void *addr = m->addr;

    s = verify_checksum(c, file, addr, len, (c->flags & FS_OPEN_COPY) ? &copied : NULL);
    if (s != FS_OK) return s;
    s = fs_npy_parse(addr, len, path, h, c->err);
    if (s != FS_OK) return s;
    if (h->header_len + h->data_len != len)
        return fs_error(c->err, FS_ERR_FORMAT, "%s: header promises %zu data bytes but the file holds %zu "
                        "(%s)", path, h->data_len, len - h->header_len,
                        h->header_len + h->data_len > len ? "truncated" : "trailing bytes");
    if (h->header_len % 16 != 0)
        return fs_error(c->err, FS_ERR_UNSUPPORTED, "%s: data offset %zu is not 16-byte aligned", path,
                        h->header_len);
    *data = (const char *)addr + h->header_len;
    return FS_OK;
}

fs_status_t ds_expect_shape(open_ctx_t *c, const char *file, const fs_npy_header_t *h, int ndim,
                                int64_t rows, const char *role)
{
    if (h->ndim != ndim)
        return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: %s must be %d-dimensional, file has %d dimension(s)",
                        c->dir, file, role, ndim, h->ndim);
    if (rows >= 0 && h->shape[0] != rows)
        return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: %s must have %lld rows, file has %lld", c->dir, file,
                        role, (long long)rows, (long long)h->shape[0]);
    return FS_OK;
}

fs_status_t ds_expect_dtype(open_ctx_t *c, const char *file, const fs_npy_header_t *h, fs_dtype_t a,
                                fs_dtype_t b, const char *role)
{
    if (h->dtype == a || h->dtype == b) return FS_OK;
    return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: %s must be %s%s%s, file has dtype %s", c->dir, file, role,
                    fs_dtype_name(a), b != a ? " or " : "", b != a ? fs_dtype_name(b) : "",
                    fs_dtype_name(h->dtype));
}

/* ---- parallel scans that find the first bad offset ----------------------- */

typedef struct {
    const void *data;
    fs_dtype_t dt;
    int64_t lo, hi;               /* valid range [lo, hi) */
    enum { SCAN_RANGE, SCAN_MONOTONE, SCAN_WEIGHT } kind;
    _Atomic int64_t first_bad;
} scan_t;

#define SCAN_BLOCK 4096 /* elements tested branch-free at a time; a block with a bad one is searched */

static int bad_at(const scan_t *s, int64_t i)
{
    if (s->kind == SCAN_MONOTONE) return ((const int64_t *)s->data)[i] > ((const int64_t *)s->data)[i + 1];
    if (s->kind == SCAN_WEIGHT) {
        float w = ((const float *)s->data)[i];
        return !(w >= 0.0f && w <= FLT_MAX); /* also NaN and +inf */
    }
    int64_t v = s->dt == FS_DTYPE_I32 ? ((const int32_t *)s->data)[i] : ((const int64_t *)s->data)[i];
    return v < s->lo || v >= s->hi;
}

/* Whether the SCAN_BLOCK elements from b hold a bad one: one loop per kind
 * and width, of a fixed count and with no branch, so that -O2 vectorises it
 * (element by element, the range scan was a third of a server's start on a
 * 134M-edge graph). */
static int block_bad(const scan_t *s, int64_t b)
{
    uint64_t bad = 0, span = (uint64_t)s->hi - (uint64_t)s->lo, lo = (uint64_t)s->lo;
    if (s->kind == SCAN_MONOTONE) {
        const int64_t *a = (const int64_t *)s->data + b;
        for (int i = 0; i < SCAN_BLOCK; i++) bad |= a[i] > a[i + 1];
    } else if (s->kind == SCAN_WEIGHT) {
        const float *a = (const float *)s->data + b;
        for (int i = 0; i < SCAN_BLOCK; i++) bad |= !(a[i] >= 0.0f && a[i] <= FLT_MAX);
    } else if (s->dt == FS_DTYPE_I32 && s->lo >= INT32_MIN && s->hi - 1 <= INT32_MAX) {
        const int32_t *a = (const int32_t *)s->data + b, lo32 = (int32_t)s->lo, last = (int32_t)(s->hi - 1);
        int32_t bad32 = 0; /* 32-bit lanes: signed compares the baseline's SIMD has */
        for (int i = 0; i < SCAN_BLOCK; i++) bad32 |= (a[i] < lo32) | (a[i] > last);
        bad = bad32 != 0;
    } else if (s->dt == FS_DTYPE_I32) {
        const int32_t *a = (const int32_t *)s->data + b;
        for (int i = 0; i < SCAN_BLOCK; i++) bad |= (uint64_t)(int64_t)a[i] - lo >= span;
    } else {
        const int64_t *a = (const int64_t *)s->data + b;
        for (int i = 0; i < SCAN_BLOCK; i++) bad |= (uint64_t)a[i] - lo >= span;
    }
    return bad != 0;
}

static void scan_range(void *p, int64_t b, int64_t e, int w)
{
    (void)w;
    scan_t *s = p;
    for (int64_t k = b; k < e; k += SCAN_BLOCK) {
        if (k >= atomic_load_explicit(&s->first_bad, memory_order_relaxed)) return;
        int64_t end = e - k < SCAN_BLOCK ? e : k + SCAN_BLOCK, i = k;
        if (end - k == SCAN_BLOCK && !block_bad(s, k)) continue;
        while (i < end && !bad_at(s, i)) i++; /* the block holds one, or it is the short last one */
        if (i == end) continue;
        int64_t cur = atomic_load(&s->first_bad);
        while (i < cur && !atomic_compare_exchange_weak(&s->first_bad, &cur, i)) {}
        return;
    }
}

/* Runs scan s over elements [0, n) of `size` bytes (the monotone scan
 * reads one past each): all at once, or window by window when `windowed`
 * (FS_OPEN_WINDOWED), each window's pages dropped once scanned, so a scan
 * of an array larger than memory holds one window. The first bad index, or -1. */
static int64_t run_scan(scan_t *s, int64_t n, size_t size, int threads, int windowed)
{
    const char *base = s->data;
    int64_t step = windowed ? (int64_t)(FS_WINDOW_BYTES / size) : n, extra = s->kind == SCAN_MONOTONE;
    atomic_init(&s->first_bad, INT64_MAX);
    for (int64_t b = 0; b < n; b += step) {
        int64_t e = n - b < step ? n : b + step;
        s->data = base + (size_t)b * size;
        fs_parallel_for(threads, e - b, scan_range, s);
        if (windowed) fs_drop_pages(s->data, (size_t)(e - b + extra) * size);
        int64_t r = atomic_load(&s->first_bad);
        if (r != INT64_MAX) return b + r;
    }
    return -1;
}

/* Returns the first index in [0,n) whose value is outside [lo,hi), or -1. */
static int64_t first_out_of_range(const void *data, fs_dtype_t dt, int64_t n, int64_t lo, int64_t hi,
                                  int threads, int windowed)
{
    scan_t s = {.data = data, .dt = dt, .lo = lo, .hi = hi};
    return run_scan(&s, n, fs_dtype_size(dt), threads, windowed);
}

int64_t ds_first_decrease(open_ctx_t *c, const int64_t *a, int64_t n)
{
    scan_t s = {.data = a, .kind = SCAN_MONOTONE};
    return run_scan(&s, n - 1, sizeof *a, c->threads, (c->flags & FS_OPEN_WINDOWED) != 0);
}

/* Weighted sampling draws each neighbour in proportion to its edge weight,
 * so a NaN, infinite or negative weight has no meaning: refuse it here,
 * once, instead of in every request. */
int64_t ds_first_bad_weight(open_ctx_t *c, const float *w, int64_t n)
{
    scan_t s = {.data = w, .kind = SCAN_WEIGHT};
    return run_scan(&s, n, sizeof *w, c->threads, (c->flags & FS_OPEN_WINDOWED) != 0);
}

static int64_t value_at(const void *data, fs_dtype_t dt, int64_t i)
{
    return dt == FS_DTYPE_I32 ? ((const int32_t *)data)[i] : ((const int64_t *)data)[i];
}

fs_status_t ds_check_ids(open_ctx_t *c, const char *file, const void *data, fs_dtype_t dt, int64_t n,
                             int64_t lo, int64_t hi, const char *what)
{
    int64_t bad = first_out_of_range(data, dt, n, lo, hi, c->threads, (c->flags & FS_OPEN_WINDOWED) != 0);
    if (bad < 0) return FS_OK;
    return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: %s at offset %lld is %lld, outside [%lld, %lld)", c->dir,
                    file, what, (long long)bad, (long long)value_at(data, dt, bad), (long long)lo,
                    (long long)hi);
}

/* ---- roles --------------------------------------------------------------- */

const char *ds_json_str(json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

fs_status_t ds_need_file(open_ctx_t *c, json_t *o, const char *key, const char **file)
{
    *file = ds_json_str(o, key);
    if (!*file) return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: missing string \"%s\"", c->dir, FS_MANIFEST, key);
    return FS_OK;
}

/* A CSR (v1: row v lists v's neighbours) or CSC (v2: column d lists d's
 * sources) of `rows` rows, `edges` entries with ids in [0, id_limit), and
 * optional weights under `weights_key`. */
fs_status_t ds_open_csr(open_ctx_t *c, json_t *topo, int64_t rows, int64_t edges, int64_t id_limit,
                        const char *weights_key, ds_csr_t *out)
{
    fs_npy_header_t h;
    const char *f;
    const void *d;
    fs_status_t s;
    if ((s = ds_need_file(c, topo, "indptr", &f)) || (s = ds_map_npy(c, f, &h, &d)) ||
        (s = ds_expect_dtype(c, f, &h, FS_DTYPE_I64, FS_DTYPE_I64, "indptr")) ||
        (s = ds_expect_shape(c, f, &h, 1, rows + 1, "indptr")))
        return s;
    const int64_t *indptr = d;
    if (indptr[0] != 0)
        return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: indptr[0] is %lld, must be 0", c->dir, f, (long long)indptr[0]);
    int64_t bad = ds_first_decrease(c, indptr, rows + 1);
    if (bad >= 0)
        return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: indptr is not monotone at offset %lld (%lld > %lld)",
                        c->dir, f, (long long)bad, (long long)indptr[bad], (long long)indptr[bad + 1]);
    if (indptr[rows] != edges)
        return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: indptr ends at %lld but num_edges is %lld", c->dir, f,
                        (long long)indptr[rows], (long long)edges);
    out->indptr = indptr;

    if ((s = ds_need_file(c, topo, "indices", &f)) || (s = ds_map_npy(c, f, &h, &d)) ||
        (s = ds_expect_dtype(c, f, &h, FS_DTYPE_I32, FS_DTYPE_I64, "indices")) ||
        (s = ds_expect_shape(c, f, &h, 1, edges, "indices")))
        return s;
    out->indices = d;
    out->index_dtype = h.dtype;
    if ((s = ds_check_ids(c, f, d, h.dtype, edges, 0, id_limit, "neighbour id"))) return s;

    out->weights = NULL;
    if ((f = ds_json_str(topo, weights_key))) {
        if ((s = ds_map_npy(c, f, &h, &d)) ||
            (s = ds_expect_dtype(c, f, &h, FS_DTYPE_F32, FS_DTYPE_F32, "edge weights")) ||
            (s = ds_expect_shape(c, f, &h, 1, edges, "edge weights")))
            return s;
        out->weights = d;
        int64_t badw = ds_first_bad_weight(c, d, edges);
        if (badw >= 0)
            return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: edge weight at offset %lld is %g; weights must be "
                            "finite and >= 0", c->dir, f, (long long)badw, (double)out->weights[badw]);
    }
    return FS_OK;
}

static fs_status_t open_topology(open_ctx_t *c, json_t *topo)
{
    fs_dataset_t *ds = c->ds;
    if (!json_is_object(topo))
        return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: missing object \"topology\"", c->dir, FS_MANIFEST);
    ds_csr_t g;
    fs_status_t s = ds_open_csr(c, topo, ds->num_nodes, ds->num_edges, ds->num_nodes, "edge_weights", &g);
    if (s != FS_OK) return s;
    ds->indptr = g.indptr, ds->indices = g.indices, ds->index_dtype = g.index_dtype, ds->edge_weights = g.weights;
    return FS_OK;
}

/* A "features" object: tables of `rows` rows each (nodes of a type, or
 * edges by id), into a new array with one spare entry for a labels table. */
fs_status_t ds_open_tables(open_ctx_t *c, json_t *feats, int64_t rows, const char *owner, fs_table_t **tables,
                           int *num)
{
    if (feats && !json_is_object(feats))
        return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: %s\"features\" must be an object", c->dir, FS_MANIFEST, owner);
    *num = 0;
    *tables = calloc(json_object_size(feats) + 1, sizeof **tables); /* + 1: a labels table */
    if (!*tables) return fs_error(c->err, FS_ERR_NOMEM, "out of memory");
    if (!feats) return FS_OK;
    const char *name;
    json_t *t;
    json_object_foreach(feats, name, t) {
        fs_table_t *tab = &(*tables)[*num];
        fs_npy_header_t h;
        const char *f;
        const void *d;
        fs_status_t s;
        if (strlen(name) >= sizeof tab->name || !json_is_object(t))
            return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: %sbad feature table entry '%s'", c->dir, FS_MANIFEST, owner,
                            name);
        if ((s = ds_need_file(c, t, "file", &f)))
            return s;
        c->table_file = 1;
        c->table_on_disk = 0;
        for (int k = 0; c->given && k < c->given->num_on_disk; k++)
            c->table_on_disk |= strcmp(c->given->on_disk[k], name) == 0;
        s = ds_map_npy(c, f, &h, &d);
        c->table_file = c->table_on_disk = 0;
        if (s || (s = ds_expect_shape(c, f, &h, 2, rows, "a feature table")))
            return s;
        const char *dts = ds_json_str(t, "dtype"), *codec = ds_json_str(t, "codec");
        fs_dtype_t dt = dts ? fs_dtype_from_name(dts) : h.dtype;
        fs_codec_t cd = fs_codec_from_name(codec);
        /* bfloat16 is stored as raw uint16 bits because numpy has no bf16. */
        int ok = (dt == FS_DTYPE_F32 || dt == FS_DTYPE_F16 || (dt == FS_DTYPE_I8 && cd == FS_CODEC_INT8))
                     ? h.dtype == dt
                 : dt == FS_DTYPE_BF16 ? h.dtype == FS_DTYPE_U16
                                       : 0;
        if (!ok)
            return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: feature table '%s' must be float32, float16, "
                            "bfloat16 (as <u2) or int8 with codec \"int8\", matching the manifest; manifest says "
                            "%s, file has %s", c->dir, f, name, dts ? dts : "(nothing)", fs_dtype_name(h.dtype));
        if (cd == FS_CODEC_COUNT_ || !fs_codec_fits(cd, dt, h.shape[1]))
            return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: feature table '%s': codec \"%s\" does not fit a %s table "
                            "of %lld columns (codecs: \"narrow\" for float16/bfloat16, \"int8\" for int8 rows of "
                            "scale, bias and codes)", c->dir, FS_MANIFEST, name, codec, fs_dtype_name(dt),
                            (long long)h.shape[1]);
        snprintf(tab->name, sizeof tab->name, "%s", name);
        snprintf(tab->file, sizeof tab->file, "%s", f);
        tab->dtype = dt;
        tab->codec = cd;
        tab->rows = h.shape[0];
        tab->dim = h.shape[1];
        tab->row_bytes = (size_t)tab->dim * fs_dtype_size(dt);
        tab->data = d;
        tab->on_disk = d == NULL;
        tab->file_offset = h.header_len;
        const char *x = ds_json_str(json_object_get(c->files, f), "xxh3");
        tab->has_file_xxh3 = x && sscanf(x, "%16" SCNx64, &tab->file_xxh3) == 1;
        c->ds->num_on_disk += tab->on_disk;
        (*num)++;
    }
    return FS_OK;
}

/* A "labels" object for `rows` nodes. Labels are also served as a
 * one-column int64 table appended to tables[] (its spare entry), so a
 * trainer gathers a batch's labels exactly like its features. */
fs_status_t ds_open_labels(open_ctx_t *c, json_t *lab, int64_t rows, const int64_t **labels, int64_t *num_classes,
                           fs_table_t *tables, int *num_tables)
{
    if (!lab) return FS_OK;
    fs_npy_header_t h;
    const char *f;
    const void *d;
    fs_status_t s;
    if ((s = ds_need_file(c, lab, "file", &f)) || (s = ds_map_npy(c, f, &h, &d)) ||
        (s = ds_expect_dtype(c, f, &h, FS_DTYPE_I64, FS_DTYPE_I64, "labels")) ||
        (s = ds_expect_shape(c, f, &h, 1, rows, "labels")))
        return s;
    json_t *nc = json_object_get(lab, "num_classes");
    if (!json_is_integer(nc) || json_integer_value(nc) < 0)
        return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: labels.num_classes must be a non-negative integer",
                        c->dir, FS_MANIFEST);
    *num_classes = json_integer_value(nc);
    *labels = d;
    if ((s = ds_check_ids(c, f, d, FS_DTYPE_I64, rows, -1, *num_classes, "label"))) return s;
    for (int i = 0; i < *num_tables; i++)
        if (strcmp(tables[i].name, FS_LABELS_TABLE) == 0)
            return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: a feature table is named '%s', which is reserved for the "
                            "labels", c->dir, FS_MANIFEST, FS_LABELS_TABLE);
    fs_table_t *tab = &tables[(*num_tables)++];
    snprintf(tab->name, sizeof tab->name, "%s", FS_LABELS_TABLE);
    snprintf(tab->file, sizeof tab->file, "%s", f);
    tab->dtype = FS_DTYPE_I64;
    tab->rows = rows;
    tab->dim = 1;
    tab->row_bytes = sizeof(int64_t);
    tab->data = d;
    return FS_OK;
}

/* A "splits" object: named sets of ids in [lo, hi). */
fs_status_t ds_open_splits(open_ctx_t *c, json_t *splits, int64_t lo, int64_t hi, fs_idset_t **sets, int *num)
{
    *num = 0;
    if (!splits) return FS_OK;
    if (!json_is_object(splits))
        return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: \"splits\" must be an object", c->dir, FS_MANIFEST);
    *sets = calloc(json_object_size(splits) + 1, sizeof **sets);
    if (!*sets) return fs_error(c->err, FS_ERR_NOMEM, "out of memory");
    const char *name;
    json_t *v;
    json_object_foreach(splits, name, v) {
        fs_idset_t *set = &(*sets)[*num];
        const char *f = json_string_value(v);
        fs_npy_header_t h;
        const void *d;
        fs_status_t s;
        if (!f || strlen(name) >= sizeof set->name)
            return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: split '%s' must name a file", c->dir, FS_MANIFEST, name);
        if ((s = ds_map_npy(c, f, &h, &d)) || (s = ds_expect_dtype(c, f, &h, FS_DTYPE_I64, FS_DTYPE_I64, "a split")) ||
            (s = ds_expect_shape(c, f, &h, 1, -1, "a split")) ||
            (s = ds_check_ids(c, f, d, FS_DTYPE_I64, h.shape[0], lo, hi, "node id")))
            return s;
        snprintf(set->name, sizeof set->name, "%s", name);
        snprintf(set->file, sizeof set->file, "%s", f);
        set->count = h.shape[0];
        set->ids = d;
        (*num)++;
    }
    return FS_OK;
}

static fs_status_t open_node_ids(open_ctx_t *c, const char *f)
{
    if (!f) return FS_OK;
    fs_npy_header_t h;
    const void *d;
    fs_status_t s;
    if ((s = ds_map_npy(c, f, &h, &d)) || (s = ds_expect_dtype(c, f, &h, FS_DTYPE_I64, FS_DTYPE_I64, "node_ids")) ||
        (s = ds_expect_shape(c, f, &h, 1, c->ds->num_nodes, "node_ids")))
        return s;
    c->ds->node_ids = d;
    return FS_OK;
}

/* "format", "version" (1 or 2) and "name". */
static fs_status_t read_format(open_ctx_t *c, json_t *m)
{
    fs_dataset_t *ds = c->ds;
    const char *fmt = ds_json_str(m, "format");
    if (!fmt || strcmp(fmt, FS_DATASET_FORMAT) != 0)
        return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: \"format\" must be \"%s\"", c->dir, FS_MANIFEST,
                        FS_DATASET_FORMAT);
    json_int_t ver = json_integer_value(json_object_get(m, "version"));
    if (ver != 1 && ver != FS_DATASET_VERSION)
        return fs_error(c->err, FS_ERR_UNSUPPORTED, "%s/%s: format version %lld is not supported (this build "
                        "reads versions 1 and %d)", c->dir, FS_MANIFEST, (long long)ver, FS_DATASET_VERSION);
    ds->version = (int)ver;
    const char *name = ds_json_str(m, "name");
    snprintf(ds->name, sizeof ds->name, "%s", name ? name : "");
    return FS_OK;
}

/* Version 1's counts. */
static fs_status_t read_counts(open_ctx_t *c, json_t *m)
{
    fs_dataset_t *ds = c->ds;
    json_t *n = json_object_get(m, "num_nodes"), *e = json_object_get(m, "num_edges");
    if (!json_is_integer(n) || !json_is_integer(e) || json_integer_value(n) < 0 || json_integer_value(e) < 0)
        return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: num_nodes and num_edges must be non-negative integers",
                        c->dir, FS_MANIFEST);
    /* indptr holds num_nodes + 1 offsets: that count must exist (tests/fuzz/fuzz_manifest found the overflow) */
    if (json_integer_value(n) == INT64_MAX)
        return fs_error(c->err, FS_ERR_FORMAT, "%s/%s: num_nodes %lld is out of range (indptr holds num_nodes + 1 "
                        "entries)", c->dir, FS_MANIFEST, (long long)json_integer_value(n));
    ds->num_nodes = json_integer_value(n);
    ds->num_edges = json_integer_value(e);
    ds->symmetric = json_is_true(json_object_get(m, "symmetric"));
    return FS_OK;
}

/* Version 1: one graph, its tables, labels and splits; then read as the
 * one-type case of version 2 (dataset_typed.c). */
static fs_status_t open_v1(open_ctx_t *c, json_t *m)
{
    fs_dataset_t *ds = c->ds;
    fs_status_t s = read_counts(c, m);
    if (!s) s = open_topology(c, json_object_get(m, "topology"));
    if (!s) s = ds_open_tables(c, json_object_get(m, "features"), ds->num_nodes, "", &ds->tables, &ds->num_tables);
    if (!s) s = ds_open_labels(c, json_object_get(m, "labels"), ds->num_nodes, &ds->labels, &ds->num_classes, ds->tables,
                               &ds->num_tables);
    if (!s) s = ds_open_splits(c, json_object_get(m, "splits"), 0, ds->num_nodes, &ds->splits, &ds->num_splits);
    if (!s) s = open_node_ids(c, ds_json_str(m, "node_ids"));
    if (!s) s = ds_typed_from_v1(c);
    return s;
}

/* Opens dir's files (or the given ones) as the parsed manifest m (borrowed) says. */
static fs_status_t open_with_manifest(const char *dir, json_t *m, unsigned flags, const fs_copy_opts_t *copy,
                                      int threads, const ds_given_files_t *given, fs_dataset_t **out,
                                      fs_error_t *err)
{
    fs_dataset_t *ds = calloc(1, sizeof *ds);
    if (ds) ds->dir = strdup(dir);
    if (!ds || !ds->dir) {
        fs_dataset_close(ds);
        return fs_error(err, FS_ERR_NOMEM, "out of memory opening %s", dir);
    }
    open_ctx_t c = {.ds = ds, .dir = dir, .files = json_object_get(m, "files"), .given = given, .flags = flags,
                    .threads = threads, .err = err};
    ds_budget_init(&c, copy);
    fs_status_t s = (flags & FS_OPEN_COPY) ? ds_copy_choose(copy, &c.copy, err) : FS_OK;
    if (!s && (flags & FS_OPEN_COPY) && !(ds->copy_dir = strdup(c.copy.dir)))
        s = fs_error(err, FS_ERR_NOMEM, "out of memory opening %s", dir);
    if (!s) s = read_format(&c, m);
    if (!s) c.prefetch = ds_prefetch_start(&c, m); /* NULL: the open copies every file itself */
    if (!s) s = ds->version == 1 ? open_v1(&c, m) : ds_open_typed(&c, m);
    ds_prefetch_stop(c.prefetch);
    c.prefetch = NULL; /* the hop tables below are opened after it */
    if (!s && (flags & FS_OPEN_COPY)) s = fs_dataset_need_whole(ds, "serve", err);
    if (!s) s = ds_open_propagation(&c, json_object_get(m, "propagation"));
    if (!s) s = ds_split_names_build(&c);
    ds->checksums_verified = (flags & (FS_OPEN_VERIFY | FS_OPEN_COPY)) && c.files != NULL;
    ds->served_copy = (flags & FS_OPEN_COPY) != 0;
    ds->memory_left = (flags & FS_OPEN_COPY) ? ds_budget_left(&c) : 0;
    if (s != FS_OK) {
        fs_dataset_close(ds);
        return s;
    }
    *out = ds;
    return FS_OK;
}

/* The manifest's bytes, read once: parsed here and kept for trainers
 * (fs_dataset_t.manifest), so what they open is what was validated. */
static char *read_manifest(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 14, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        char *grown = cap < ((size_t)1 << 28) ? realloc(buf, cap *= 2) : NULL;
        if (!grown) free(buf);
        buf = grown;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

static fs_status_t open_dir(const char *dir, unsigned flags, const fs_copy_opts_t *copy, int threads,
                            fs_dataset_t **out, fs_error_t *err)
{
    *out = NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, FS_MANIFEST);
    size_t len = 0;
    char *text = read_manifest(path, &len);
    if (!text) {
        if (access(path, F_OK) != 0)
            return fs_error(err, FS_ERR_NOT_FOUND, "%s: no such file (is '%s' a featstore dataset?)", path, dir);
        return fs_error(err, FS_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
    }
    json_error_t jerr;
    json_t *m = json_loadb(text, len, 0, &jerr);
    if (!m) {
        free(text);
        return fs_error(err, FS_ERR_FORMAT, "%s: line %d: %s", path, jerr.line, jerr.text);
    }
    fs_status_t s = open_with_manifest(dir, m, flags, copy, threads, NULL, out, err);
    json_decref(m);
    if (s == FS_OK) (*out)->manifest = text, (*out)->manifest_len = len; /* kept: trainers open the same */
    else free(text);
    return s;
}

fs_status_t fs_dataset_open(const char *dir, unsigned flags, int threads, fs_dataset_t **out,
                            fs_error_t *err)
{
    return open_dir(dir, flags, NULL, threads, out, err);
}

fs_status_t fs_dataset_open_served(const char *dir, const fs_copy_opts_t *copy, unsigned flags, int threads,
                                   fs_dataset_t **out, fs_error_t *err)
{
    return open_dir(dir, flags | FS_OPEN_COPY, copy, threads, out, err);
}

fs_status_t fs_dataset_open_manifest(const char *dir, const char *text, size_t len, unsigned flags, int threads,
                                     fs_dataset_t **out, fs_error_t *err)
{
    *out = NULL;
    json_error_t jerr;
    json_t *m = json_loadb(text, len, 0, &jerr); /* the flags json_load_file gets above */
    if (!m) return fs_error(err, FS_ERR_FORMAT, "%s/%s: line %d: %s", dir, FS_MANIFEST, jerr.line, jerr.text);
    fs_status_t s = open_with_manifest(dir, m, flags, NULL, threads, NULL, out, err);
    json_decref(m);
    return s;
}

fs_status_t fs_dataset_open_fds(const char *name, const char *text, size_t len, const char *const *files,
                                const int *fds, int num_files, int threads, fs_dataset_t **out, fs_error_t *err)
{
    return fs_dataset_open_fds_on_disk(name, text, len, files, fds, num_files, NULL, 0, threads, out, err);
}

fs_status_t fs_dataset_open_fds_on_disk(const char *name, const char *text, size_t len, const char *const *files,
                                        const int *fds, int num_files, const char *const *on_disk, int num_on_disk,
                                        int threads, fs_dataset_t **out, fs_error_t *err)
{
    *out = NULL;
    if (!name || !text || num_files < 0 || (num_files > 0 && (!files || !fds)))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "fs_dataset_open_fds: a name, the manifest's text and %d "
                        "file names with their descriptors are needed", num_files);
    json_error_t jerr;
    json_t *m = json_loadb(text, len, 0, &jerr);
    if (!m) return fs_error(err, FS_ERR_FORMAT, "%s/%s: line %d: %s", name, FS_MANIFEST, jerr.line, jerr.text);
    ds_given_files_t given = {files, fds, num_files, on_disk, num_on_disk};
    fs_status_t s = open_with_manifest(name, m, 0, NULL, threads, &given, out, err);
    json_decref(m);
    return s;
}

void fs_dataset_close(fs_dataset_t *ds)
{
    if (!ds) return;
    for (int i = 0; i < ds->num_maps; i++) {
        if (ds->maps[i].addr) munmap(ds->maps[i].addr, ds->maps[i].len);
        if (ds->maps[i].fd >= 0) close(ds->maps[i].fd);
    }
    free(ds->maps);
    ds_propagation_free(ds);
    ds_typed_free(ds); /* the types' arrays, which the one-type case shares with the fields below */
    free(ds->tables);
    free(ds->splits);
    free(ds->dir);
    free(ds->copy_dir);
    free((char *)ds->manifest);
    free(ds);
}

const fs_table_t *fs_dataset_table(const fs_dataset_t *ds, const char *name)
{
    for (int i = 0; i < ds->num_tables; i++)
        if (strcmp(ds->tables[i].name, name) == 0) return &ds->tables[i];
    return NULL;
}

int fs_dataset_num_compressed(const fs_dataset_t *ds)
{
    int n = 0;
    for (int i = 0; i < ds->num_tables; i++) n += ds->tables[i].codec != FS_CODEC_NONE;
    for (int i = 0; i < fs_dataset_num_row_tables(ds); i++) n += fs_dataset_row_table(ds, i)->codec != FS_CODEC_NONE;
    return n;
}

int fs_dataset_num_row_tables(const fs_dataset_t *ds)
{
    const fs_propagation_t *pr = ds->propagation;
    return pr && pr->labelled ? pr->num_tables + 1 : 0;
}

const fs_table_t *fs_dataset_row_table(const fs_dataset_t *ds, int i)
{
    const fs_propagation_t *pr = ds->propagation;
    return i < pr->num_tables ? &pr->tables[i] : &pr->node_table;
}

const fs_table_t *fs_dataset_served_table(const fs_dataset_t *ds, const char *name)
{
    const fs_table_t *t = fs_dataset_table(ds, name);
    for (int i = 0; !t && i < fs_dataset_num_row_tables(ds); i++)
        if (strcmp(fs_dataset_row_table(ds, i)->name, name) == 0) t = fs_dataset_row_table(ds, i);
    return t;
}

/* The i-th table served: feature tables, then row tables. */
static const char *served_table_name(const void *ds, int i)
{
    const fs_dataset_t *d = ds;
    return i < d->num_tables ? d->tables[i].name : fs_dataset_row_table(d, i - d->num_tables)->name;
}

fs_status_t fs_dataset_table_not_found(const fs_dataset_t *ds, const char *name, fs_error_t *err)
{
    return fs_table_not_found(err, ds->name, "feature", name, ds->num_tables + fs_dataset_num_row_tables(ds),
                              served_table_name, ds);
}

/* The mapping holding data; an empty array at the very end of its file
 * (an empty split: its data starts where the file ends) belongs to the
 * mapping it ends, when no mapping holds it. */
static const fs_mapping_t *mapping_of(const fs_dataset_t *ds, const void *data)
{
    const fs_mapping_t *end = NULL;
    for (int i = 0; data && i < ds->num_maps; i++) {
        const char *base = ds->maps[i].addr;
        if (!base) continue; /* a table left on disk: nothing of it is mapped */
        if ((const char *)data == base + ds->maps[i].len) end = &ds->maps[i];
        /* An array's data never starts its file (the header does): a pointer
         * at a mapping's first byte is the end of another mapped right
         * before it (an empty array of a file of one page). */
        if ((const char *)data <= base || (const char *)data >= base + ds->maps[i].len) continue;
        return &ds->maps[i];
    }
    return end;
}

const char *ds_mapping_file(const fs_dataset_t *ds, const void *data)
{
    const fs_mapping_t *m = mapping_of(ds, data);
    return m ? m->file : NULL;
}

fs_status_t fs_dataset_table_fd(const fs_dataset_t *ds, const fs_table_t *t, int *fd)
{
    for (int i = 0; t->on_disk && i < ds->num_maps; i++)
        if (ds->maps[i].on_disk && strcmp(ds->maps[i].file, t->file) == 0) {
            *fd = ds->maps[i].fd;
            return FS_OK;
        }
    return FS_ERR_NOT_FOUND;
}

fs_status_t fs_dataset_locate(const fs_dataset_t *ds, const void *data, int *fd, int64_t *offset)
{
    const fs_mapping_t *m = mapping_of(ds, data);
    if (!m) return FS_ERR_NOT_FOUND;
    *fd = m->fd;
    *offset = (const char *)data - (const char *)m->addr;
    return FS_OK;
}

/* ---- files changed under an open dataset ----------------------------------- */

const char *fs_file_change_name(fs_file_change_t c)
{
    static const char *const n[FS_FILE_CHANGE_COUNT_] = {"none", "deleted", "replaced", "truncated", "grown",
                                                         "written"};
    return (unsigned)c < FS_FILE_CHANGE_COUNT_ ? n[c] : "unknown";
}

int fs_dataset_num_files(const fs_dataset_t *ds) { return ds->num_maps; }

int fs_dataset_file_fd(const fs_dataset_t *ds, int i) { return ds->maps[i].fd; }

const char *fs_dataset_file_name(const fs_dataset_t *ds, int i) { return ds->maps[i].file; }

void fs_dataset_file_validated(const fs_dataset_t *ds, int i, fs_file_state_t *out) { *out = ds->maps[i].validated; }

/* The name is what is looked at, not a kept descriptor: a replaced or
 * deleted file is only visible by name, and the server keeps no descriptor
 * of the originals (served_copy.c). */
fs_file_change_t fs_dataset_file_check(const fs_dataset_t *ds, int i, fs_file_state_t *last, char *what, size_t len)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/%s", ds->dir, ds->maps[i].file);
    struct stat st;
    fs_file_state_t now = {0};
    if (stat(path, &st) == 0) ds_file_state(&st, &now);
    else if (errno != ENOENT && errno != ENOTDIR) return FS_FILE_SAME; /* cannot tell (EACCES, EIO) */
    fs_file_change_t c = FS_FILE_SAME;
    if (!now.present && last->present) {
        c = FS_FILE_DELETED;
        snprintf(what, len, "deleted");
    } else if (now.present && (!last->present || now.dev != last->dev || now.ino != last->ino)) {
        c = FS_FILE_REPLACED;
        snprintf(what, len, "replaced: the name now points at another file (%lld bytes)", (long long)now.size);
    } else if (now.present && now.size != last->size) {
        c = now.size < last->size ? FS_FILE_TRUNCATED : FS_FILE_GROWN;
        snprintf(what, len, "%s from %lld to %lld bytes", c == FS_FILE_TRUNCATED ? "truncated" : "grown",
                 (long long)last->size, (long long)now.size);
    } else if (now.present && now.mtime_ns != last->mtime_ns) {
        c = FS_FILE_WRITTEN;
        snprintf(what, len, "written in place (same size, %lld bytes; new modification time)", (long long)now.size);
    }
    *last = now;
    return c;
}

int fs_dataset_file_on_disk(const fs_dataset_t *ds, int i) { return i >= 0 && i < ds->num_maps && ds->maps[i].on_disk; }

void fs_dataset_prefault(const fs_dataset_t *ds)
{
    volatile unsigned char sink = 0;
    for (int i = 0; i < ds->num_maps; i++) {
        if (!ds->maps[i].addr) continue; /* a table left on disk */
        madvise(ds->maps[i].addr, ds->maps[i].len, MADV_WILLNEED);
        for (size_t off = 0; off < ds->maps[i].len; off += 4096) sink ^= ((const unsigned char *)ds->maps[i].addr)[off];
    }
    (void)sink;
}

size_t fs_dataset_bytes(const fs_dataset_t *ds)
{
    size_t total = 0;
    for (int i = 0; i < ds->num_maps; i++) total += ds->maps[i].len;
    return total;
}

size_t fs_dataset_on_disk_bytes(const fs_dataset_t *ds)
{
    size_t total = 0;
    for (int i = 0; i < ds->num_maps; i++) total += ds->maps[i].on_disk ? ds->maps[i].len : 0;
    return total;
}

size_t fs_dataset_file_copy_bytes(const fs_dataset_t *ds, const char **dir)
{
    size_t total = 0;
    for (int i = 0; i < ds->num_maps; i++) total += ds->maps[i].in_file ? ds->maps[i].len : 0;
    *dir = total ? ds->copy_dir : NULL;
    return total;
}

long long fs_dataset_huge_bytes(const fs_dataset_t *ds)
{
    long long total = 0;
    for (int i = 0; i < ds->num_maps; i++) {
        if (ds->maps[i].huge_bytes < 0) return -1;
        total += ds->maps[i].huge_bytes;
    }
    return total;
}
