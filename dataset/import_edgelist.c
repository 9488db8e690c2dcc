/* import_edgelist.c — SNAP-style edge lists. Lines are "src dst [weight]"
 * separated by tabs, spaces or commas; '#' and '%' start comments. Extra
 * columns (timestamps in SNAP's temporal graphs) are ignored unless
 * --weighted says column 3 is a weight. */
#include <stdio.h>
#include <stdlib.h>

#include "import.h"
#include "progress.h"
#include "textin.h"

#define BATCH 65536

typedef struct {
    int64_t src[BATCH], dst[BATCH];
    float w[BATCH];
    size_t n;
} batch_t;

static fs_status_t parse_line(fs_textin_t *t, char *line, int weighted, batch_t *b, fs_error_t *err)
{
    char *p = line;
    int64_t s, d;
    if (fs_parse_i64(&p, &s) || fs_parse_i64(&p, &d))
        return fs_error(err, FS_ERR_FORMAT, "%s:%lld: expected two integer node ids, got '%.60s'",
                        fs_textin_path(t), (long long)fs_textin_lineno(t), line);
    float w = 1.0f;
    if (weighted && fs_parse_f32(&p, &w))
        return fs_error(err, FS_ERR_FORMAT, "%s:%lld: expected a weight in column 3, got '%.60s'",
                        fs_textin_path(t), (long long)fs_textin_lineno(t), line);
    if (s < 0 || d < 0)
        return fs_error(err, FS_ERR_FORMAT, "%s:%lld: negative node id in '%.60s'", fs_textin_path(t),
                        (long long)fs_textin_lineno(t), line);
    b->src[b->n] = s;
    b->dst[b->n] = d;
    b->w[b->n] = w;
    b->n++;
    return FS_OK;
}

static fs_status_t read_edges(fs_textin_t *t, fs_csr_builder_t *cb, int weighted, int64_t *edges,
                              fs_error_t *err)
{
    batch_t *b = malloc(sizeof *b);
    if (!b) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    b->n = 0;
    fs_progress_t pr;
    fs_progress_start(&pr, "import edges");
    fs_status_t s = FS_OK;
    char *line;
    while (s == FS_OK && (line = fs_textin_line(t, NULL))) {
        char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (*p == '\0' || *p == '#' || *p == '%') continue;
        s = parse_line(t, p, weighted, b, err);
        if (s == FS_OK && b->n == BATCH) {
            s = fs_csr_builder_add(cb, b->src, b->dst, weighted ? b->w : NULL, b->n, err);
            *edges += (int64_t)b->n;
            b->n = 0;
            fs_progress_update(&pr, fs_textin_fraction(t), *edges, "edges");
        }
    }
    if (s == FS_OK) s = fs_textin_error(t, err);
    if (s == FS_OK && b->n) s = fs_csr_builder_add(cb, b->src, b->dst, weighted ? b->w : NULL, b->n, err);
    *edges += (int64_t)b->n;
    free(b);
    if (s == FS_OK) fs_progress_done(&pr, *edges, "edges");
    return s;
}

fs_status_t fs_import_edgelist(const char *path, const fs_import_opts_t *o, fs_error_t *err)
{
    fs_textin_t *t = NULL;
    fs_writer_t *w = NULL;
    fs_csr_builder_t *cb = NULL;
    fs_status_t s;
    if ((s = fs_textin_open(path, &t, err))) return s;
    if ((s = fs_writer_create(o->out_dir, o->force, &w, err))) goto fail;
    if ((s = fs_csr_builder_create(w, &o->edges, -1, o->weighted, &cb, err))) goto fail;

    int64_t edges = 0;
    s = read_edges(t, cb, o->weighted, &edges, err);
    if (s == FS_OK && edges == 0)
        s = fs_error(err, FS_ERR_FORMAT, "%s: no edges found (empty file or only comments)", path);
    if (s != FS_OK) goto fail;

    fs_csr_stats_t st;
    s = fs_csr_builder_finish(cb, o->threads, &st, err);
    cb = NULL;
    if (s == FS_OK) s = fs_write_random_splits(w, st.num_nodes, NULL, o->split_pct, o->seed, err);
    if (s != FS_OK) goto fail;

    if ((s = fs_import_set_meta(w, "edgelist", path, o, st.num_nodes, st.num_edges, NULL, err))) goto fail;
    fs_textin_close(t);
    fprintf(stderr, "import: %lld nodes, %lld edges (%lld read, %lld self-loops dropped, %lld duplicates "
            "merged)\n", (long long)st.num_nodes, (long long)st.num_edges, (long long)st.input_edges,
            (long long)st.self_loops_dropped, (long long)st.duplicates_merged);
    return fs_writer_commit(w, err);
fail:
    fs_csr_builder_free(cb);
    fs_writer_abort(w);
    fs_textin_close(t);
    return s;
}
