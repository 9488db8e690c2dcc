/* import_common.c — pieces every importer (and the generator) shares:
 * random splits, class counting and provenance. */
#include "import.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_rng.h"

/* Sorts each of the three parts of pool in O(n): mark every id with its
 * part, then collect the ids in order (a qsort of each part gives the same
 * array, in O(n log n) — seconds for the link split of 10^8 edges). */
static fs_status_t sort_parts(int64_t n, int64_t *pool, const int64_t cnt[3], fs_error_t *err)
{
    uint8_t *part = malloc((size_t)(n > 0 ? n : 1));
    if (!part) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    memset(part, 3, (size_t)n); /* 3: in no part */
    int64_t off[3] = {0, cnt[0], cnt[0] + cnt[1]};
    for (int i = 0; i < 3; i++)
        for (int64_t k = off[i]; k < off[i] + cnt[i]; k++) part[pool[k]] = (uint8_t)i;
    for (int64_t v = 0; v < n; v++)
        if (part[v] < 3) pool[off[part[v]]++] = v;
    free(part);
    return FS_OK;
}

fs_status_t fs_random_partition(int64_t n, const int64_t *labels, const int pct[3], uint64_t seed, int64_t *pool,
                                int64_t cnt[3], fs_error_t *err)
{
    int total = pct[0] + pct[1] + pct[2];
    if (pct[0] < 0 || pct[1] < 0 || pct[2] < 0 || total > 100)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "split percentages must be >= 0 and sum to <= 100");
    int64_t k = 0;
    for (int64_t v = 0; v < n; v++)
        if (!labels || labels[v] >= 0) pool[k++] = v;
    fs_rng_t rng = fs_rng_make(seed, 0x5711u);
    for (int64_t i = k - 1; i > 0; i--) { /* Fisher-Yates */
        int64_t j = (int64_t)fs_rng_below(&rng, (uint64_t)i + 1), t = pool[i];
        pool[i] = pool[j];
        pool[j] = t;
    }
    cnt[0] = k * pct[0] / 100, cnt[1] = k * pct[1] / 100;
    cnt[2] = total == 100 ? k - cnt[0] - cnt[1] : k * pct[2] / 100;
    return sort_parts(n, pool, cnt, err);
}

fs_status_t fs_write_random_splits(fs_writer_t *w, int64_t n, const int64_t *labels, const int pct[3],
                                   uint64_t seed, fs_error_t *err)
{
    if (pct[0] + pct[1] + pct[2] == 0) return FS_OK;
    int64_t *pool = malloc((size_t)(n > 0 ? n : 1) * sizeof *pool), cnt[3];
    if (!pool) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    fs_status_t s = fs_random_partition(n, labels, pct, seed, pool, cnt, err);
    static const char *const names[3] = {"train", "valid", "test"};
    int64_t off = 0;
    for (int i = 0; i < 3 && s == FS_OK; i++) {
        int64_t *ids, shape[1] = {cnt[i]};
        s = fs_writer_array(w, FS_ROLE_SPLIT, names[i], FS_DTYPE_I64, 1, shape, (void **)&ids, err);
        if (s != FS_OK) break;
        memcpy(ids, pool + off, (size_t)cnt[i] * sizeof *ids);
        off += cnt[i];
    }
    free(pool);
    return s;
}

int64_t fs_count_classes(const int64_t *labels, int64_t n)
{
    int64_t m = -1;
    for (int64_t v = 0; v < n; v++)
        if (labels[v] > m) m = labels[v];
    return m + 1;
}

fs_status_t fs_import_set_meta(fs_writer_t *w, const char *importer, const char *input,
                               const fs_import_opts_t *o, int64_t num_nodes, int64_t num_edges,
                               const int64_t *labels, fs_error_t *err)
{
    char name[128];
    fs_basename_noext(input, name, sizeof name);
    fs_writer_set_meta(w, o->name ? o->name : name, num_nodes, num_edges, o->edges.symmetrize,
                       labels ? fs_count_classes(labels, num_nodes) : 0);
    json_t *j = json_pack("{s:s, s:s, s:b, s:b, s:b, s:b, s:b, s:b}", "importer", importer, "input", input,
                          "symmetrize", o->edges.symmetrize, "drop_self_loops", o->edges.drop_self_loops,
                          "dedup", o->edges.dedup, "reverse", o->edges.reverse, "compact_ids",
                          o->edges.compact_ids, "weighted", o->weighted);
    char *text = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(j);
    if (!text) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    fs_status_t s = fs_writer_set_source(w, text, err);
    free(text);
    return s;
}

void fs_basename_noext(const char *path, char *out, size_t len)
{
    size_t plen = strlen(path);
    while (plen > 1 && path[plen - 1] == '/') plen--;
    const char *b = path + plen;
    while (b > path && b[-1] != '/') b--;
    size_t n = (size_t)(path + plen - b);
    const char *dot = memchr(b, '.', n);
    if (dot && dot > b) n = (size_t)(dot - b);
    if (n >= len) n = len - 1;
    memcpy(out, b, n);
    out[n] = '\0';
}
