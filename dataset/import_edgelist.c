/* import_edgelist.c — SNAP-style edge lists. Lines are "src dst [weight]"
 * separated by tabs, spaces or commas; '#' and '%' start comments. Extra
 * columns (timestamps in SNAP's temporal graphs) are ignored unless
 * --weighted says column 3 is a weight.
 *
 * Ids kept as given make N = largest id + 1 nodes. SNAP ids are often
 * sparse (one line "1000000000 5" made a 10^9-node dataset, 15 GB for 2
 * edges), so the ids are measured while the edges are read, before anything
 * per id is allocated, and ids too sparse to keep are refused with the
 * sizes they would have made, unless --dense-ids insists. */
#include <stdio.h>
#include <stdlib.h>

#include "id_census.h"
#include "import.h"
#include "info.h"
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

/* What ids as given would write: indptr, indices, weights and the splits. */
static double bytes_as_given(const fs_import_opts_t *o, int64_t nodes, int64_t edges)
{
    double stored = (double)edges * (o->edges.symmetrize ? 2 : 1), split_pct = 0;
    for (int i = 0; i < 3; i++) split_pct += o->split_pct[i];
    return 8.0 * ((double)nodes + 1) + stored * (nodes - 1 <= INT32_MAX ? 4 : 8) + (o->weighted ? 4 * stored : 0) +
           8.0 * (double)nodes * split_pct / 100;
}

static fs_status_t refuse_sparse_ids(const char *path, const fs_import_opts_t *o, const fs_id_census_t *c,
                                     int64_t edges, fs_error_t *err)
{
    if (!c || o->dense_ids || !fs_ids_too_sparse(c)) return FS_OK;
    int64_t nodes = c->max_id + 1, distinct = fs_id_census_distinct(c);
    char bytes[32];
    fs_bytes_str(bytes_as_given(o, nodes, edges), bytes, sizeof bytes);
    return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s: node ids are sparse: the largest is %lld but only about %lld "
                    "distinct ids appear, so ids as given would make %lld nodes, nearly all without edges, and about "
                    "%s of files for %lld edges; pass --compact-ids to number them 0..N-1 (the originals kept in "
                    "node_ids.npy), or --dense-ids to keep them as given", path, (long long)c->max_id,
                    (long long)distinct, (long long)nodes, bytes, (long long)edges);
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
    if (s == FS_OK) s = refuse_sparse_ids(path, o, fs_csr_builder_census(cb), edges, err);
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
