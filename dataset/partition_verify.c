/* partition_verify.c — a partition root checked whole (`featstore info
 * DIR` on a directory holding partition.json).
 *
 * Why this shape: a sharded deployment copies parts between machines, so
 * the likely faults are a part missing, a part copied into another's
 * place, a part from another partitioning of the same dataset, and a node
 * map changed on the way. The book names every part with its manifest's
 * xxh3 and each node map with its bytes and xxh3, and every part repeats
 * the partitioning's random id and its own index: each fault is then told
 * apart and named (the part, the file, the first bad offset). Each part is
 * opened as a dataset with its checksums verified, one at a time; the node
 * maps are read whole (8 bytes a node) to check that each is a bijection
 * onto 0..count-1 agreeing with the parts' orig_ids. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs_npy.h"
#include "partition_internal.h"

typedef struct {
    const char *name;
    int64_t count;
    int64_t *first;                /* [V + 1] */
    int64_t *map;                  /* the node map, read */
} vf_type_t;

typedef struct {
    const char *dir;
    json_t *book;
    const char *id;
    int V, T, threads;
    vf_type_t *types;
    fs_error_t *err;
} vf_t;

void fs_partition_part_dir(const char *root, int part, char *buf, size_t len)
{
    char name[32];
    snprintf(name, sizeof name, PT_PART_DIR, part);
    snprintf(buf, len, "%s/%s", root, name);
}

int fs_partition_is_root(const char *dir)
{
    char path[4300];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, FS_PARTITION_BOOK);
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static fs_status_t bad_book(vf_t *v, const char *what)
{
    return fs_error(v->err, FS_ERR_FORMAT, "%s/%s: %s", v->dir, FS_PARTITION_BOOK, what);
}

/* ---- the book ---------------------------------------------------------------------- */

/* A node type's first[]: V + 1 bounds from 0 to count, never decreasing. */
static fs_status_t read_ranges(vf_t *v, json_t *o, vf_type_t *t)
{
    json_t *first = json_object_get(o, "first");
    if (!json_is_array(first) || json_array_size(first) != (size_t)v->V + 1)
        return fs_error(v->err, FS_ERR_FORMAT, "%s/%s: node type '%s': \"first\" must list %d bounds", v->dir,
                        FS_PARTITION_BOOK, t->name, v->V + 1);
    if (!(t->first = calloc((size_t)v->V + 1, sizeof *t->first))) return fs_error(v->err, FS_ERR_NOMEM, "out of memory");
    for (int p = 0; p <= v->V; p++) {
        t->first[p] = json_integer_value(json_array_get(first, (size_t)p));
        int ok = p == 0 ? t->first[0] == 0 : t->first[p] >= t->first[p - 1];
        if (p == v->V) ok &= t->first[p] == t->count;
        if (!ok)
            return fs_error(v->err, FS_ERR_FORMAT, "%s/%s: node type '%s': the ranges are not contiguous at offset %d "
                            "of \"first\" (%lld): they must rise from 0 to its %lld nodes", v->dir, FS_PARTITION_BOOK,
                            t->name, p, (long long)t->first[p], (long long)t->count);
    }
    return FS_OK;
}

static fs_status_t read_book(vf_t *v)
{
    char path[4300];
    json_error_t jerr;
    snprintf(path, sizeof path, "%s/%s", v->dir, FS_PARTITION_BOOK);
    if (!(v->book = json_load_file(path, 0, &jerr)))
        return fs_error(v->err, FS_ERR_FORMAT, "%s: line %d: %s", path, jerr.line, jerr.text);
    const char *fmt = json_string_value(json_object_get(v->book, "format"));
    json_t *nts = json_object_get(v->book, "node_types"), *dirs = json_object_get(v->book, "part_dirs");
    v->id = json_string_value(json_object_get(v->book, "id"));
    v->V = (int)json_integer_value(json_object_get(v->book, "parts"));
    if (!fmt || strcmp(fmt, FS_PARTITION_FORMAT) != 0 ||
        json_integer_value(json_object_get(v->book, "version")) != FS_PARTITION_VERSION)
        return bad_book(v, "\"format\" must be \"" FS_PARTITION_FORMAT "\" and \"version\" 1");
    if (!v->id || strlen(v->id) != 16 || v->V < 1 || v->V > FS_PARTITION_MAX_PARTS || !json_is_array(nts) ||
        !json_array_size(nts) || !json_is_array(dirs) || json_array_size(dirs) != (size_t)v->V)
        return bad_book(v, "needs an \"id\" of 16 hex digits, \"parts\" V in [1, 4096], \"node_types\" and V "
                           "\"part_dirs\"");
    v->T = (int)json_array_size(nts);
    if (!(v->types = calloc((size_t)v->T, sizeof *v->types))) return fs_error(v->err, FS_ERR_NOMEM, "out of memory");
    for (int t = 0; t < v->T; t++) {
        json_t *o = json_array_get(nts, (size_t)t);
        v->types[t].name = json_string_value(json_object_get(o, "name"));
        v->types[t].count = json_integer_value(json_object_get(o, "count"));
        if (!v->types[t].name || !json_string_value(json_object_get(o, "node_map")))
            return bad_book(v, "every node type needs a \"name\", a \"count\" and a \"node_map\"");
        fs_status_t s = read_ranges(v, o, &v->types[t]);
        if (s != FS_OK) return s;
    }
    return FS_OK;
}

/* ---- the parts ---------------------------------------------------------------------- */

static const char *part_dir(const vf_t *v, int p)
{
    return json_string_value(json_object_get(json_array_get(json_object_get(v->book, "part_dirs"), (size_t)p), "dir"));
}

/* Every part listed once, each directory there. */
static fs_status_t check_listing(vf_t *v)
{
    for (int p = 0; p < v->V; p++) {
        const char *d = part_dir(v, p);
        if (!d || !*d || strchr(d, '/') || d[0] == '.')
            return fs_error(v->err, FS_ERR_FORMAT, "%s/%s: part %d has no plain \"dir\"", v->dir, FS_PARTITION_BOOK, p);
        for (int q = 0; q < p; q++)
            if (strcmp(part_dir(v, q), d) == 0)
                return fs_error(v->err, FS_ERR_FORMAT, "%s/%s: parts %d and %d are both %s", v->dir, FS_PARTITION_BOOK,
                                q, p, d);
        char path[4400];
        snprintf(path, sizeof path, "%s/%s/%s", v->dir, d, FS_MANIFEST);
        struct stat st;
        if (stat(path, &st) != 0)
            return fs_error(v->err, FS_ERR_NOT_FOUND, "%s: part %d of %d (%s/%s) is missing", v->dir, p, v->V, v->dir, d);
    }
    return FS_OK;
}

/* The part's own word on which partitioning and which part it is. */
static fs_status_t check_identity(vf_t *v, int p, const fs_dataset_t *ds, const char *path)
{
    const fs_part_of_t *po = &ds->partition;
    if (!po->parts)
        return fs_error(v->err, FS_ERR_FORMAT, "%s: part %d is not a part of a partitioned dataset (its manifest has no "
                        "\"partition\")", path, p);
    if (strcmp(po->id, v->id) != 0)
        return fs_error(v->err, FS_ERR_FORMAT, "%s: part %d comes from another partitioning: its id is %s, the book's %s "
                        "(copied in from another partition root?)", path, p, po->id, v->id);
    if (po->index != p || po->parts != v->V)
        return fs_error(v->err, FS_ERR_FORMAT, "%s: part %d is a duplicate of part %d of %d (its manifest says so): part "
                        "%d is not there", path, p, po->index, po->parts, p);
    char hash[17], mpath[4500];
    snprintf(mpath, sizeof mpath, "%s/%s", path, FS_MANIFEST);
    fs_status_t s = pt_file_hash(mpath, hash, v->err);
    const char *want = json_string_value(
        json_object_get(json_array_get(json_object_get(v->book, "part_dirs"), (size_t)p), "manifest_xxh3"));
    if (s == FS_OK && (!want || strcmp(want, hash) != 0))
        s = fs_error(v->err, FS_ERR_FORMAT, "%s: part %d's manifest has xxh3 %s but the book records %s: it changed "
                     "after partitioning", mpath, p, hash, want ? want : "(none)");
    return s;
}

/* The part's node types: the book's ranges, and their rows through the node maps. */
static fs_status_t check_rows(vf_t *v, int p, const fs_dataset_t *ds, const char *path)
{
    if (ds->num_node_types != v->T)
        return fs_error(v->err, FS_ERR_FORMAT, "%s: part %d has %d node types, the book %d", path, p, ds->num_node_types,
                        v->T);
    for (int t = 0; t < v->T; t++) {
        const fs_node_type_t *nt = &ds->node_types[t];
        const vf_type_t *bt = &v->types[t];
        if (strcmp(nt->name, bt->name) != 0 || nt->first != bt->first[p] || nt->count != bt->first[p + 1] - bt->first[p] ||
            nt->total != bt->count)
            return fs_error(v->err, FS_ERR_FORMAT, "%s: part %d's node type '%s' holds [%lld, %lld) of %lld, but the book "
                            "gives it '%s' [%lld, %lld) of %lld", path, p, nt->name, (long long)nt->first,
                            (long long)(nt->first + nt->count), (long long)nt->total, bt->name, (long long)bt->first[p],
                            (long long)bt->first[p + 1], (long long)bt->count);
        for (int64_t r = 0; r < nt->count; r++)
            if (bt->map[nt->orig_ids[r]] != nt->first + r)
                return fs_error(v->err, FS_ERR_FORMAT, "%s/%s.node_map.npy: offset %lld maps source id %lld to %lld, "
                                "but part %d's orig_ids row %lld makes it %lld", v->dir, bt->name,
                                (long long)nt->orig_ids[r], (long long)nt->orig_ids[r],
                                (long long)bt->map[nt->orig_ids[r]], p, (long long)r, (long long)(nt->first + r));
    }
    return FS_OK;
}

static fs_status_t check_part(vf_t *v, int p)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", v->dir, part_dir(v, p));
    fs_dataset_t *ds = NULL;
    fs_status_t s = fs_dataset_open(path, FS_OPEN_VERIFY, v->threads, &ds, v->err);
    if (s == FS_OK) s = check_identity(v, p, ds, path);
    if (s == FS_OK) s = check_rows(v, p, ds, path);
    fs_dataset_close(ds);
    return s;
}

/* ---- the node maps ---------------------------------------------------------------------- */

/* The node map's bytes, checksum, header, and that it is a bijection onto 0..count-1. */
static fs_status_t read_map(vf_t *v, vf_type_t *t)
{
    char file[128], path[4400], hash[17];
    snprintf(file, sizeof file, "%s.node_map.npy", t->name);
    snprintf(path, sizeof path, "%s/%s", v->dir, file);
    json_t *rec = json_object_get(json_object_get(v->book, "files"), file);
    fs_status_t s = pt_file_hash(path, hash, v->err);
    if (s != FS_OK) return s;
    const char *want = json_string_value(json_object_get(rec, "xxh3"));
    if (!want || strcmp(want, hash) != 0)
        return fs_error(v->err, FS_ERR_FORMAT, "%s: checksum mismatch (book %s, file %s): the node map is corrupt or was "
                        "modified", path, want ? want : "(none)", hash);
    FILE *f = fopen(path, "rb");
    char head[FS_NPY_WRITE_HEADER_LEN]; /* any header length: earlier books have 128-byte ones */
    fs_npy_header_t h;
    size_t got = f ? fread(head, 1, sizeof head, f) : 0;
    int ok = got > 0 && fs_npy_parse(head, got, path, &h, v->err) == FS_OK && h.dtype == FS_DTYPE_I64 &&
             h.ndim == 1 && h.shape[0] == t->count && fseek(f, (long)h.header_len, SEEK_SET) == 0;
    if (ok) ok = (t->map = malloc((size_t)(t->count ? t->count : 1) * sizeof *t->map)) &&
                 fread(t->map, sizeof *t->map, (size_t)t->count, f) == (size_t)t->count;
    if (f) fclose(f);
    if (!ok) return fs_error(v->err, FS_ERR_FORMAT, "%s: must be an int64 [%lld] .npy", path,
                             (long long)t->count);
    uint64_t *seen = calloc((size_t)(t->count / 64 + 1), sizeof *seen);
    if (!seen) return fs_error(v->err, FS_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < t->count && s == FS_OK; i++) {
        int64_t id = t->map[i];
        if (id < 0 || id >= t->count || (seen[id >> 6] >> (id & 63) & 1))
            s = fs_error(v->err, FS_ERR_FORMAT, "%s: offset %lld maps to %lld, %s: a node map must be a bijection onto "
                         "0..%lld", path, (long long)i, (long long)id, id < 0 || id >= t->count ? "out of range" :
                         "which an earlier offset maps to", (long long)t->count - 1);
        else seen[id >> 6] |= 1ULL << (id & 63);
    }
    free(seen);
    return s;
}

/* ---- the summary --------------------------------------------------------------------- */

static double worst(json_t *bal, const char *key)
{
    double w = 0;
    for (size_t i = 0; i < json_array_size(bal); i++) {
        json_t *b = json_object_get(json_array_get(bal, i), key);
        if (json_is_number(b) && json_number_value(b) > w) w = json_number_value(b);
    }
    return w;
}

static void summarise(const vf_t *v, fs_partition_summary_t *out)
{
    json_t *q = json_object_get(v->book, "quality"), *ets = json_object_get(v->book, "edge_types");
    json_t *bal = json_object_get(json_object_get(q, "balance"), "node_types");
    memset(out, 0, sizeof *out);
    snprintf(out->id, sizeof out->id, "%s", v->id);
    snprintf(out->name, sizeof out->name, "%s",
             json_string_value(json_object_get(json_object_get(v->book, "dataset"), "name")) ?: "");
    snprintf(out->method, sizeof out->method, "%s",
             json_string_value(json_object_get(json_object_get(v->book, "method"), "name")) ?: "");
    out->parts = v->V, out->num_node_types = v->T, out->num_edge_types = (int)json_array_size(ets);
    for (int t = 0; t < v->T; t++) out->nodes += v->types[t].count;
    for (size_t i = 0; i < json_array_size(ets); i++)
        out->edges += json_integer_value(json_object_get(json_array_get(ets, i), "num_edges"));
    out->cut = json_integer_value(json_object_get(json_object_get(q, "edge_cut"), "count"));
    out->cut_fraction = json_number_value(json_object_get(json_object_get(q, "edge_cut"), "fraction"));
    out->balance_nodes = worst(bal, "nodes"), out->balance_train = worst(bal, "train");
    out->balance_edges = worst(bal, "edges");
}

fs_status_t fs_partition_num_parts(const char *root, int *parts, fs_error_t *err)
{
    return fs_partition_identity(root, NULL, parts, err);
}

fs_status_t fs_partition_identity(const char *root, char *id, int *parts, fs_error_t *err)
{
    vf_t v = {.dir = root, .err = err};
    fs_status_t s = read_book(&v);
    if (s == FS_OK) *parts = v.V;
    if (s == FS_OK && id) snprintf(id, FS_PARTITION_ID_LEN + 1, "%s", v.id);
    for (int t = 0; v.types && t < v.T; t++) free(v.types[t].first);
    free(v.types);
    json_decref(v.book);
    return s;
}

fs_status_t fs_partition_verify(const char *dir, int threads, fs_partition_summary_t *out, fs_error_t *err)
{
    vf_t v = {.dir = dir, .threads = threads, .err = err};
    fs_status_t s = read_book(&v);
    if (s == FS_OK) s = check_listing(&v);
    for (int t = 0; s == FS_OK && t < v.T; t++) s = read_map(&v, &v.types[t]);
    for (int p = 0; s == FS_OK && p < v.V; p++) s = check_part(&v, p);
    if (s == FS_OK) summarise(&v, out);
    for (int t = 0; v.types && t < v.T; t++) free(v.types[t].first), free(v.types[t].map);
    free(v.types);
    json_decref(v.book);
    return s;
}
