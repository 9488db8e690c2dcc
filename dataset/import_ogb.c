/* import_ogb.c — OGB node-property datasets as downloaded (the "raw" CSV
 * layout, before OGB's own preprocessing):
 *   raw/edge.csv[.gz]            "src,dst" per line
 *   raw/num-node-list.csv[.gz]   N (optional; else inferred)
 *   raw/node-feat.csv[.gz]       F comma-separated floats per line (optional)
 *   raw/node-label.csv[.gz]      one label per line, "nan" = unlabelled
 *   split/<name>/{train,valid,test}.csv[.gz]   one node id per line
 * Every file is streamed; feature rows go straight into the mapped table.
 * A directory with raw/num-node-dict.csv[.gz] is the heterogeneous layout:
 * import_ogb_hetero.c takes it. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "import.h"
#include "progress.h"
#include "textin.h"

#define BATCH 65536

int fs_find_csv(const char *dir, const char *base, char *out, size_t len)
{
    struct stat st;
    int n = snprintf(out, len, "%s/%s.csv.gz", dir, base);
    if (n < 0 || (size_t)n >= len) return 0; /* a path too long is no file of ours */
    if (stat(out, &st) == 0) return 1;
    out[n - 3] = '\0'; /* base.csv */
    return stat(out, &st) == 0;
}

static fs_status_t line_error(fs_textin_t *t, const char *want, const char *line, fs_error_t *err)
{
    return fs_error(err, FS_ERR_FORMAT, "%s:%lld: expected %s, got '%.60s'", fs_textin_path(t),
                    (long long)fs_textin_lineno(t), want, line);
}

static fs_status_t read_count(const char *path, int64_t *n, fs_error_t *err)
{
    fs_textin_t *t;
    fs_status_t s = fs_textin_open(path, &t, err);
    if (s != FS_OK) return s;
    char *line = fs_textin_line(t, NULL), *p = line;
    if (!line) {
        s = fs_textin_error(t, err);
        if (s == FS_OK) s = fs_error(err, FS_ERR_FORMAT, "%s: empty file", path);
    } else if (fs_parse_i64(&p, n) || *n < 0) s = line_error(t, "a node count", line, err);
    fs_textin_close(t);
    return s;
}

static fs_status_t import_edges(const char *path, fs_csr_builder_t *cb, fs_error_t *err)
{
    fs_textin_t *t;
    fs_status_t s = fs_textin_open(path, &t, err);
    if (s != FS_OK) return s;
    int64_t *src = malloc(BATCH * sizeof *src), *dst = malloc(BATCH * sizeof *dst), total = 0;
    size_t n = 0;
    fs_progress_t pr;
    fs_progress_start(&pr, "import edges");
    char *line;
    if (!src || !dst) s = fs_error(err, FS_ERR_NOMEM, "out of memory");
    while (s == FS_OK && (line = fs_textin_line(t, NULL))) {
        char *p = line;
        if (fs_parse_at_end(p)) continue;
        if (fs_parse_i64(&p, &src[n]) || fs_parse_i64(&p, &dst[n]) || !fs_parse_at_end(p)) {
            s = line_error(t, "\"src,dst\"", line, err);
            break;
        }
        if (++n == BATCH) {
            s = fs_csr_builder_add(cb, src, dst, NULL, n, err);
            total += (int64_t)n;
            n = 0;
            fs_progress_update(&pr, fs_textin_fraction(t), total, "edges");
        }
    }
    if (s == FS_OK) s = fs_textin_error(t, err);
    if (s == FS_OK && n) s = fs_csr_builder_add(cb, src, dst, NULL, n, err);
    total += (int64_t)n;
    if (s != FS_OK && err && err->code == FS_ERR_FORMAT && strstr(err->msg, "edge ") == err->msg)
        fs_error_prefix(err, "%s", path);
    if (s == FS_OK && total == 0) s = fs_error(err, FS_ERR_FORMAT, "%s: no edges found", path);
    if (s == FS_OK) fs_progress_done(&pr, total, "edges");
    free(src);
    free(dst);
    fs_textin_close(t);
    return s;
}

static fs_status_t import_features(const char *path, fs_writer_t *w, int64_t n, fs_error_t *err)
{
    fs_textin_t *t;
    fs_status_t s = fs_textin_open(path, &t, err);
    if (s != FS_OK) return s;
    float *table = NULL;
    int64_t dim = 0, row = 0;
    fs_progress_t pr;
    fs_progress_start(&pr, "import features");
    char *line;
    while (s == FS_OK && (line = fs_textin_line(t, NULL))) {
        if (fs_parse_at_end(line)) continue;
        if (!table) { /* the first row fixes F */
            for (char *p = line; *p; p++) dim += *p == ',';
            dim++;
            int64_t shape[2] = {n, dim};
            if ((s = fs_writer_array(w, FS_ROLE_FEATURES, "feat", FS_DTYPE_F32, 2, shape, (void **)&table, err))) break;
        }
        if (row >= n) {
            s = fs_error(err, FS_ERR_FORMAT, "%s: more than %lld feature rows (one per node)", path, (long long)n);
            break;
        }
        char *p = line;
        float *out = table + row * dim;
        for (int64_t j = 0; j < dim && s == FS_OK; j++)
            if (fs_parse_f32(&p, &out[j])) s = line_error(t, "a float", line, err);
        if (s == FS_OK && !fs_parse_at_end(p)) s = line_error(t, "the same number of columns as line 1", line, err);
        if ((++row & 4095) == 0) fs_progress_update(&pr, fs_textin_fraction(t), row, "rows");
    }
    if (s == FS_OK) s = fs_textin_error(t, err);
    if (s == FS_OK && row != n)
        s = fs_error(err, FS_ERR_FORMAT, "%s: %lld feature rows for %lld nodes", path, (long long)row, (long long)n);
    if (s == FS_OK) fs_progress_done(&pr, row, "rows");
    fs_textin_close(t);
    return s;
}

static fs_status_t import_labels(const char *path, fs_writer_t *w, int64_t n, int64_t **out, fs_error_t *err)
{
    fs_textin_t *t;
    fs_status_t s = fs_textin_open(path, &t, err);
    if (s != FS_OK) return s;
    int64_t *labels = NULL, row = 0, shape[1] = {n};
    s = fs_writer_array(w, FS_ROLE_LABELS, NULL, FS_DTYPE_I64, 1, shape, (void **)&labels, err);
    char *line;
    while (s == FS_OK && (line = fs_textin_line(t, NULL))) {
        char *p = line;
        if (fs_parse_at_end(p)) continue;
        if (row >= n) {
            s = fs_error(err, FS_ERR_FORMAT, "%s: more than %lld labels (one per node)", path, (long long)n);
            break;
        }
        while (*p == ' ') p++;
        if (strncasecmp(p, "nan", 3) == 0 && fs_parse_at_end(p + 3)) {
            labels[row++] = -1;
            continue;
        }
        if (fs_parse_i64(&p, &labels[row]) || labels[row] < 0) {
            s = line_error(t, "a non-negative integer label or nan", line, err);
            break;
        }
        if (!fs_parse_at_end(p)) {
            s = fs_error(err, FS_ERR_UNSUPPORTED, "%s:%lld: multi-column labels (multi-label tasks) are not supported",
                         path, (long long)fs_textin_lineno(t));
            break;
        }
        row++;
    }
    if (s == FS_OK) s = fs_textin_error(t, err);
    if (s == FS_OK && row != n)
        s = fs_error(err, FS_ERR_FORMAT, "%s: %lld labels for %lld nodes", path, (long long)row, (long long)n);
    fs_textin_close(t);
    *out = s == FS_OK ? labels : NULL;
    return s;
}

static fs_status_t import_split_file(const char *path, const char *name, fs_writer_t *w, int64_t n, fs_error_t *err)
{
    fs_textin_t *t;
    fs_status_t s = fs_textin_open(path, &t, err);
    if (s != FS_OK) return s;
    int64_t cap = 1024, cnt = 0, *ids = malloc((size_t)cap * sizeof *ids);
    if (!ids) s = fs_error(err, FS_ERR_NOMEM, "out of memory");
    char *line;
    while (s == FS_OK && (line = fs_textin_line(t, NULL))) {
        char *p = line;
        int64_t v;
        if (fs_parse_at_end(p)) continue;
        if (fs_parse_i64(&p, &v) || !fs_parse_at_end(p)) s = line_error(t, "one node id", line, err);
        else if (v < 0 || v >= n)
            s = fs_error(err, FS_ERR_FORMAT, "%s:%lld: node id %lld is outside [0, %lld)", path,
                         (long long)fs_textin_lineno(t), (long long)v, (long long)n);
        else if (cnt == cap && !(ids = realloc(ids, (size_t)(cap *= 2) * sizeof *ids)))
            s = fs_error(err, FS_ERR_NOMEM, "out of memory");
        else ids[cnt++] = v;
    }
    if (s == FS_OK) s = fs_textin_error(t, err);
    int64_t *out, shape[1] = {cnt};
    if (s == FS_OK) s = fs_writer_array(w, FS_ROLE_SPLIT, name, FS_DTYPE_I64, 1, shape, (void **)&out, err);
    if (s == FS_OK) memcpy(out, ids, (size_t)cnt * sizeof *ids);
    free(ids);
    fs_textin_close(t);
    return s;
}

fs_status_t fs_ogb_split_dir(const char *dir, const char *want, char *out, size_t len, fs_error_t *err)
{
    char base[4096];
    snprintf(base, sizeof base, "%s/split", dir);
    if (want) {
        if (snprintf(out, len, "%s/%s", base, want) >= (int)len)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s: path too long", dir);
        struct stat st;
        if (stat(out, &st) != 0) return fs_error(err, FS_ERR_NOT_FOUND, "%s: no such split directory", out);
        return FS_OK;
    }
    out[0] = '\0';
    DIR *d = opendir(base);
    if (!d) return FS_OK;
    char best[256] = "";
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && (!best[0] || strcmp(e->d_name, best) < 0)) snprintf(best, sizeof best, "%s", e->d_name);
    closedir(d);
    if (best[0] && snprintf(out, len, "%s/%s", base, best) >= (int)len)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s: path too long", dir);
    return FS_OK;
}

static fs_status_t import_splits(const char *dir, const fs_import_opts_t *o, fs_writer_t *w, int64_t n,
                                 const int64_t *labels, fs_error_t *err)
{
    char sdir[4096], path[4200];
    fs_status_t s = fs_ogb_split_dir(dir, o->split_name, sdir, sizeof sdir, err);
    if (s != FS_OK) return s;
    if (!sdir[0]) return fs_write_random_splits(w, n, labels, o->split_pct, o->seed, err);
    static const char *const names[3] = {"train", "valid", "test"};
    for (int i = 0; i < 3 && s == FS_OK; i++) {
        if (!fs_find_csv(sdir, names[i], path, sizeof path))
            return fs_error(err, FS_ERR_NOT_FOUND, "%s: missing %s.csv[.gz]", sdir, names[i]);
        s = import_split_file(path, names[i], w, n, err);
    }
    return s;
}

fs_status_t fs_import_ogb(const char *dir, const fs_import_opts_t *o, fs_error_t *err)
{
    char path[4200], raw[4096];
    snprintf(raw, sizeof raw, "%s/raw", dir);
    if (fs_find_csv(raw, "num-node-dict", path, sizeof path)) return fs_import_ogb_hetero(dir, o, err);
    if (o->add_reverse)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s: --add-reverse applies to OGB heterogeneous datasets "
                        "(raw/num-node-dict.csv.gz); this one is one graph (--reverse or --symmetrize)", dir);
    if (!fs_find_csv(raw, "edge", path, sizeof path))
        return fs_error(err, FS_ERR_NOT_FOUND, "%s: no raw/edge.csv[.gz] (is this an OGB dataset directory?)", dir);
    int64_t n = -1, *labels = NULL;
    fs_status_t s = FS_OK;
    if (fs_find_csv(raw, "num-node-list", path, sizeof path) && (s = read_count(path, &n, err))) return s;
    fs_writer_t *w = NULL;
    fs_csr_builder_t *cb = NULL;
    fs_csr_stats_t st = {0};
    if ((s = fs_writer_create(o->out_dir, o->force, &w, err))) return s;
    fs_find_csv(raw, "edge", path, sizeof path);
    if (!(s = fs_csr_builder_create(w, &o->edges, n, 0, &cb, err)) && !(s = import_edges(path, cb, err))) {
        s = fs_csr_builder_finish(cb, o->threads, &st, err);
        cb = NULL;
        n = st.num_nodes;
    }
    if (s == FS_OK && fs_find_csv(raw, "node-feat", path, sizeof path)) s = import_features(path, w, n, err);
    if (s == FS_OK && fs_find_csv(raw, "node-label", path, sizeof path)) s = import_labels(path, w, n, &labels, err);
    if (s == FS_OK) s = import_splits(dir, o, w, n, labels, err);
    if (s == FS_OK) s = fs_import_set_meta(w, "ogb", dir, o, n, st.num_edges, labels, err);
    if (s != FS_OK) {
        fs_csr_builder_free(cb);
        fs_writer_abort(w);
        return s;
    }
    fprintf(stderr, "import: %lld nodes, %lld edges\n", (long long)n, (long long)st.num_edges);
    return fs_writer_commit(w, err);
}
