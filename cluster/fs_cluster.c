/* fs_cluster.c — a trainer's view of a sharded cluster (fs_cluster.h says
 * what and why): the map from etcd, the book and node maps from a shard,
 * each read strictly, the degree arrays when first needed, and a
 * connection's shards, router and the views' hooks over them.
 *
 * The book is read from the first shard of the map that answers, so one
 * shard down at connect does not stop a trainer. Its JSON is checked for
 * what a trainer uses (types, ranges ascending from 0 to the count, names
 * that fit, known dtypes) and against the map (the same partitioning and
 * number of parts); the node maps must be permutations of their type. */
#include "fs_cluster.h"

#include <errno.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs_cluster_watch.h"
#include "fs_etcd.h"
#include "fs_member.h"
#include "fs_npy.h"
#include "fs_shard_client.h"

typedef struct {
    fs_cluster_t pub;
    atomic_int refs;
    /* etcd's handle for reading the map again (fs_cluster_remap): kept, as
     * a channel per read cost a connection (~2.5 ms on loopback) to every
     * fs_split_by_owner. Calls on it take turns: one completion queue. */
    fs_etcd_t *etcd;
    pthread_mutex_t etcd_lock;
} cluster_t;

/* ---- a file from the shards ---------------------------------------------------- */

fs_status_t fs_cluster_file(const fs_cluster_t *c, const char *name, int64_t max, char **data, int64_t *len,
                              fs_error_t *err)
{
    *data = NULL, *len = 0;
    fs_status_t st = fs_error(err, FS_ERR_UNAVAILABLE, "cluster %s: its map names no shard", c->name);
    for (int k = 0;; k++) {
        char addr[FS_CLUSTER_ADDR_MAX + 1];
        pthread_mutex_lock((pthread_mutex_t *)&c->map_lock);
        int have = k < c->map.num_shards;
        if (have) snprintf(addr, sizeof addr, "%s", c->map.shard[k].grpc);
        pthread_mutex_unlock((pthread_mutex_t *)&c->map_lock);
        if (!have) break;
        fs_shard_client_t *sc;
        st = fs_shard_client_open(addr, c->timeout_ms, &sc, err);
        if (st == FS_OK) st = fs_shard_client_file(sc, name, max, data, len, err);
        if (st == FS_OK || st != FS_ERR_UNAVAILABLE) { /* a shard that answered is the answer */
            fs_shard_client_close(sc);
            return st;
        }
        fs_shard_client_close(sc);
    }
    return st;
}

/* An int64 [n] .npy file's values, read in place: the header parsed by the
 * dataset's one .npy parser, then held to what a partition writes
 * (little-endian int64, one dimension, 8-byte aligned data). */
fs_status_t fs_cluster_npy_i64(const char *name, const char *data, int64_t len, const int64_t **vals, int64_t *n,
                               fs_error_t *err)
{
    fs_npy_header_t h;
    fs_status_t st = fs_npy_parse(data, (size_t)len, name, &h, err);
    if (st != FS_OK) return st;
    if (h.dtype != FS_DTYPE_I64 || h.ndim != 1)
        return fs_error(err, FS_ERR_FORMAT, "cluster: %s: int64 [n] expected, not %s of %d dimensions", name,
                        h.descr, h.ndim);
    if (h.header_len % 8 != 0 || (uintptr_t)data % 8 != 0)
        return fs_error(err, FS_ERR_FORMAT, "cluster: %s: its values are not 8-byte aligned", name);
    if (h.header_len + h.data_len != (size_t)len)
        return fs_error(err, FS_ERR_FORMAT, "cluster: %s: %lld bytes for %lld values", name, (long long)len,
                        (long long)h.shape[0]);
    *vals = (const int64_t *)(data + h.header_len), *n = h.shape[0];
    return FS_OK;
}

/* ---- the book ------------------------------------------------------------------- */

static fs_status_t bad_book(const fs_cluster_t *c, fs_error_t *err, const char *what)
{
    return fs_error(err, FS_ERR_FORMAT, "cluster %s: partition.json: %s", c->name, what);
}

/* A string field into buf (1..len-1 characters). */
static int text_field(json_t *o, const char *key, char *buf, size_t len)
{
    const char *s = json_string_value(json_object_get(o, key));
    if (!s || !s[0] || strlen(s) >= len) return -1;
    snprintf(buf, len, "%s", s);
    return 0;
}

static int type_index(const fs_cluster_t *c, const char *name)
{
    for (int t = 0; t < c->num_types; t++)
        if (strcmp(c->types[t].name, name) == 0) return t;
    return -1;
}

static fs_status_t read_tables(fs_cluster_t *c, json_t *list, fs_cluster_type_t *ty, fs_error_t *err)
{
    size_t n = json_array_size(list);
    if (!json_is_array(list)) return bad_book(c, err, "a node type's \"tables\" must be a list");
    if (!(ty->tables = calloc(n + 1, sizeof *ty->tables))) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(list, i);
        fs_cluster_table_t *tb = &ty->tables[i];
        char dtype[32];
        json_t *dim = json_object_get(o, "dim");
        if (text_field(o, "name", tb->name, sizeof tb->name) || text_field(o, "dtype", dtype, sizeof dtype) ||
            !json_is_integer(dim) || json_integer_value(dim) < 1 ||
            (tb->dtype = fs_dtype_from_name(dtype)) == FS_DTYPE_INVALID)
            return bad_book(c, err, "a table needs a \"name\", a known \"dtype\" and a \"dim\" >= 1");
        tb->dim = json_integer_value(dim);
        tb->row_bytes = (size_t)tb->dim * fs_dtype_size(tb->dtype);
        tb->codec = fs_codec_from_name(json_string_value(json_object_get(o, "codec")));
        if (tb->codec == FS_CODEC_COUNT_ || !fs_codec_fits(tb->codec, tb->dtype, tb->dim))
            return bad_book(c, err, "a table's \"codec\" must be \"narrow\" (float16/bfloat16) or \"int8\" (int8, "
                                    "dim > 8)");
        ty->num_tables++;
    }
    return FS_OK;
}

static fs_status_t read_splits(fs_cluster_t *c, json_t *obj, fs_cluster_type_t *ty, fs_error_t *err)
{
    if (!obj) return FS_OK;
    if (!json_is_object(obj)) return bad_book(c, err, "a node type's \"splits\" must be an object");
    if (!(ty->splits = calloc(json_object_size(obj) + 1, sizeof *ty->splits)))
        return fs_error(err, FS_ERR_NOMEM, "out of memory");
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v)
    {
        fs_cluster_split_t *s = &ty->splits[ty->num_splits];
        const char *file = json_string_value(v);
        if (!file || strlen(key) >= sizeof s->name || strlen(file) >= sizeof s->file)
            return bad_book(c, err, "a split names its file");
        snprintf(s->name, sizeof s->name, "%s", key);
        snprintf(s->file, sizeof s->file, "%s", file);
        ty->num_splits++;
    }
    return FS_OK;
}

static fs_status_t read_type(fs_cluster_t *c, json_t *o, fs_cluster_type_t *ty, fs_error_t *err)
{
    json_t *count = json_object_get(o, "count"), *first = json_object_get(o, "first"), *nc;
    if (text_field(o, "name", ty->name, sizeof ty->name) || !json_is_integer(count) || json_integer_value(count) < 0 ||
        json_array_size(first) != (size_t)c->parts + 1)
        return bad_book(c, err, "every node type needs a \"name\", a \"count\" and \"first\" (parts + 1 bounds)");
    ty->count = json_integer_value(count);
    if (!(ty->first = malloc(sizeof *ty->first * ((size_t)c->parts + 1))))
        return fs_error(err, FS_ERR_NOMEM, "out of memory");
    for (int p = 0; p <= c->parts; p++) {
        json_t *b = json_array_get(first, (size_t)p);
        ty->first[p] = json_is_integer(b) ? json_integer_value(b) : -1;
        if (ty->first[p] < (p ? ty->first[p - 1] : 0) || (p == 0 && ty->first[0] != 0) ||
            (p == c->parts && ty->first[p] != ty->count))
            return bad_book(c, err, "a node type's \"first\" must ascend from 0 to its count");
    }
    const char *hot = json_string_value(json_object_get(o, "hot"));
    if (hot && strlen(hot) < sizeof ty->hot) snprintf(ty->hot, sizeof ty->hot, "%s", hot);
    nc = json_object_get(o, "num_classes");
    ty->num_classes = json_is_integer(nc) ? json_integer_value(nc) : 0;
    ty->timed = json_is_true(json_object_get(o, "timed"));
    fs_status_t st = read_tables(c, json_object_get(o, "tables"), ty, err);
    return st == FS_OK ? read_splits(c, json_object_get(o, "splits"), ty, err) : st;
}

static fs_status_t read_etype(fs_cluster_t *c, json_t *o, fs_cluster_etype_t *e, fs_error_t *err)
{
    json_t *ne = json_object_get(o, "num_edges");
    if (text_field(o, "src", e->src, sizeof e->src) || text_field(o, "rel", e->rel, sizeof e->rel) ||
        text_field(o, "dst", e->dst, sizeof e->dst) || !json_is_integer(ne) || json_integer_value(ne) < 0 ||
        (e->src_type = type_index(c, e->src)) < 0 || (e->dst_type = type_index(c, e->dst)) < 0)
        return bad_book(c, err, "every edge type needs \"src\", \"rel\" and \"dst\" naming node types, and "
                        "\"num_edges\"");
    e->num_edges = json_integer_value(ne);
    e->weighted = json_is_true(json_object_get(o, "weighted"));
    e->timed = json_is_true(json_object_get(o, "timed"));
    json_t *rev = json_object_get(o, "reverse");
    e->reverse = json_is_integer(rev) ? (int)json_integer_value(rev) : -1;
    json_t *deg = json_object_get(o, "degrees"); /* absent from roots partitioned before they were written */
    static const char *const side[2] = {"out", "in"};
    for (int k = 0; deg && k < 2; k++)
        if (!json_is_object(deg) || text_field(deg, side[k], e->degree_file[k], sizeof e->degree_file[k]))
            return bad_book(c, err, "an edge type's \"degrees\" must name its \"out\" and \"in\" files");
    return FS_OK;
}

static const char *const LINK_ARRAYS[FS_CLUSTER_LINK_ARRAYS] = {"src", "dst", "label", "time", "neg_dst"};

static int etype_index(const fs_cluster_t *c, json_t *triple)
{
    const char *s = json_string_value(json_array_get(triple, 0)), *r = json_string_value(json_array_get(triple, 1)),
               *d = json_string_value(json_array_get(triple, 2));
    for (int e = 0; s && r && d && e < c->num_etypes; e++)
        if (!strcmp(c->etypes[e].src, s) && !strcmp(c->etypes[e].rel, r) && !strcmp(c->etypes[e].dst, d)) return e;
    return -1;
}

static fs_status_t read_links(fs_cluster_t *c, json_t *list, fs_error_t *err)
{
    if (!list) return FS_OK;
    size_t n = json_array_size(list);
    if (!json_is_array(list) || !(c->links = calloc(n + 1, sizeof *c->links)))
        return json_is_array(list) ? fs_error(err, FS_ERR_NOMEM, "out of memory")
                                   : bad_book(c, err, "\"link_splits\" must be a list");
    for (size_t i = 0; i < n; i++, c->num_links++) {
        json_t *o = json_array_get(list, i), *cnt = json_object_get(o, "count"), *neg = json_object_get(o, "num_neg"),
               *arrays = json_object_get(o, "arrays");
        fs_cluster_link_t *l = &c->links[i];
        if (text_field(o, "name", l->name, sizeof l->name) || (l->etype = etype_index(c, json_object_get(o, "edge_type"))) < 0 ||
            !json_is_integer(cnt) || json_integer_value(cnt) < 0 || !json_is_integer(neg) || json_integer_value(neg) < 0 ||
            !json_is_object(arrays))
            return bad_book(c, err, "a link split needs a \"name\", an \"edge_type\" of the graph, \"count\", "
                            "\"num_neg\" and \"arrays\"");
        l->count = json_integer_value(cnt), l->num_neg = json_integer_value(neg);
        for (int a = 0; a < FS_CLUSTER_LINK_ARRAYS; a++)
            if (json_object_get(arrays, LINK_ARRAYS[a]) &&
                text_field(arrays, LINK_ARRAYS[a], l->file[a], sizeof l->file[a]))
                return bad_book(c, err, "a link split's array names its file");
        if (!l->file[0][0] || !l->file[1][0]) return bad_book(c, err, "a link split has \"src\" and \"dst\"");
    }
    return FS_OK;
}

static fs_status_t read_book(fs_cluster_t *c, const char *text, size_t len, fs_error_t *err)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    if (!root) return fs_error(err, FS_ERR_FORMAT, "cluster %s: partition.json: %s (line %d)", c->name, je.text, je.line);
    json_t *parts = json_object_get(root, "parts"), *types = json_object_get(root, "node_types"),
           *etypes = json_object_get(root, "edge_types");
    fs_status_t st = FS_OK;
    if (text_field(root, "id", c->partitioning, sizeof c->partitioning) || !json_is_integer(parts) ||
        !json_array_size(types) || !json_is_array(etypes) ||
        text_field(json_object_get(root, "dataset"), "name", c->dataset, sizeof c->dataset))
        st = bad_book(c, err, "it needs an \"id\", \"parts\", \"node_types\", \"edge_types\" and a dataset name");
    else if (strcmp(c->partitioning, c->map.partitioning) != 0 || json_integer_value(parts) != c->map.parts)
        st = fs_error(err, FS_ERR_FORMAT, "cluster %s: the shards serve partitioning %s of %lld parts, but the map "
                      "is of partitioning %s of %d parts", c->name, c->partitioning,
                      (long long)json_integer_value(parts), c->map.partitioning, c->map.parts);
    c->parts = c->map.parts;
    size_t T = json_array_size(types), E = json_array_size(etypes);
    if (st == FS_OK && (!(c->types = calloc(T, sizeof *c->types)) || !(c->etypes = calloc(E + 1, sizeof *c->etypes))))
        st = fs_error(err, FS_ERR_NOMEM, "out of memory");
    for (size_t t = 0; st == FS_OK && t < T; t++, c->num_types++)
        st = read_type(c, json_array_get(types, t), &c->types[t], err);
    for (size_t e = 0; st == FS_OK && e < E; e++, c->num_etypes++)
        st = read_etype(c, json_array_get(etypes, e), &c->etypes[e], err);
    for (int e = 0; st == FS_OK && e < c->num_etypes; e++) {
        const fs_cluster_etype_t *x = &c->etypes[e], *r = x->reverse >= 0 && x->reverse < c->num_etypes
                                                              ? &c->etypes[x->reverse] : NULL;
        if (x->reverse != -1 && (!r || r->src_type != x->dst_type || r->dst_type != x->src_type))
            st = bad_book(c, err, "an edge type's \"reverse\" must name the edge type of its reversed edges, or be -1");
    }
    if (st == FS_OK) st = read_links(c, json_object_get(root, "link_splits"), err);
    json_decref(root);
    return st;
}

/* Type t's node map, and its inverse: a permutation of [0, count). */
static fs_status_t read_node_map(fs_cluster_t *c, int t, const char *file, fs_error_t *err)
{
    fs_cluster_type_t *ty = &c->types[t];
    char *data = NULL;
    int64_t len, n;
    const int64_t *map;
    fs_status_t st = fs_cluster_file(c, file, FS_NPY_WRITE_HEADER_LEN + 8 * (ty->count + 1), &data, &len, err);
    if (st != FS_OK) return st;
    if ((st = fs_cluster_npy_i64(file, data, len, &map, &n, err)) == FS_OK && n != ty->count)
        st = fs_error(err, FS_ERR_FORMAT, "cluster %s: %s maps %lld nodes, not %lld", c->name, file, (long long)n,
                      (long long)ty->count);
    size_t bytes = sizeof(int64_t) * (size_t)(n + 1);
    if (st == FS_OK && (!(ty->global_of = malloc(bytes)) || !(ty->source_of = malloc(bytes))))
        st = fs_error(err, FS_ERR_NOMEM, "cluster %s: out of memory for the node maps", c->name);
    if (st == FS_OK) {
        memcpy(ty->global_of, map, sizeof(int64_t) * (size_t)n);
        for (int64_t i = 0; i < n; i++) ty->source_of[i] = -1;
        for (int64_t i = 0; i < n && st == FS_OK; i++) {
            int64_t g = ty->global_of[i];
            if (g < 0 || g >= n || ty->source_of[g] >= 0)
                st = fs_error(err, FS_ERR_FORMAT, "cluster %s: %s is not a permutation (source id %lld -> %lld)",
                              c->name, file, (long long)i, (long long)g);
            else ty->source_of[g] = i;
        }
    }
    free(data);
    return st;
}

/* ---- open and close --------------------------------------------------------------- */

static void cluster_free(fs_cluster_t *c)
{
    fs_cluster_watch_stop(c->watch); /* first: its thread installs maps */
    for (int t = 0; c->types && t < c->num_types; t++) { /* num_types counts the one a failed read stopped in */
        fs_cluster_type_t *ty = &c->types[t];
        free(ty->first), free(ty->global_of), free(ty->source_of), free(ty->tables), free(ty->splits);
    }
    for (int e = 0; c->etypes && e < c->num_etypes; e++) free(c->etypes[e].degree[0]), free(c->etypes[e].degree[1]);
    free(c->types), free(c->etypes), free(c->links);
    fs_shard_map_free(&c->map);
    fs_cluster_cache_unref(c->cache);
    fs_etcd_close(((cluster_t *)c)->etcd);
    pthread_mutex_destroy(&((cluster_t *)c)->etcd_lock);
    pthread_mutex_destroy(&c->map_lock);
    pthread_mutex_destroy(&c->degree_lock);
    pthread_mutex_destroy(&c->cache_lock);
    free(c);
}

fs_status_t fs_cluster_read_map_at(const fs_addr_t *where, int timeout_ms, fs_shard_map_t *out, fs_error_t *err)
{
    if (where->map_file[0]) return fs_cluster_read_map_file(where->map_file, out, err);
    fs_etcd_t *e = NULL;
    memset(out, 0, sizeof *out);
    fs_status_t st = fs_etcd_open(where->target, timeout_ms > 0 ? timeout_ms : FS_CLUSTER_DEFAULT_TIMEOUT_MS, &e, err);
    if (st == FS_OK) st = fs_cluster_read_map(e, where->cluster, out, err);
    fs_etcd_close(e);
    return st;
}

/* The cluster's map as its source holds it now: etcd's key (on the kept
 * handle; one that failed is dropped, so the next read connects anew), or
 * the file. */
static fs_status_t read_map(fs_cluster_t *c, fs_shard_map_t *out, fs_error_t *err)
{
    if (c->map_file[0]) return fs_cluster_read_map_file(c->map_file, out, err);
    cluster_t *cc = (cluster_t *)c;
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&cc->etcd_lock);
    fs_status_t st = cc->etcd ? FS_OK : fs_etcd_open(c->endpoint, c->timeout_ms, &cc->etcd, err);
    if (st == FS_OK) st = fs_cluster_read_map(cc->etcd, c->name, out, err);
    if (st == FS_ERR_UNAVAILABLE || st == FS_ERR_TIMEOUT) {
        fs_etcd_close(cc->etcd);
        cc->etcd = NULL;
    }
    pthread_mutex_unlock(&cc->etcd_lock);
    return st;
}

/* Every part must have a shard: a trainer cannot sample a graph part of
 * which no one serves. */
static fs_status_t check_map(const fs_cluster_t *c, fs_error_t *err)
{
    if (c->map.num_shards == 0) return fs_error(err, FS_ERR_UNAVAILABLE, "cluster %s: no shard is registered", c->name);
    for (int p = 0; p < c->map.parts; p++)
        if (c->map.owner[p] < 0)
            return fs_error(err, FS_ERR_UNAVAILABLE, "cluster %s: part %d of %d has no shard (%d registered): "
                            "start the shard holding it", c->name, p, c->map.parts, c->map.num_shards);
    return FS_OK;
}

fs_status_t fs_cluster_read_map_file(const char *path, fs_shard_map_t *out, fs_error_t *err)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return fs_error(err, errno == ENOENT ? FS_ERR_NOT_FOUND : FS_ERR_IO, "cluster map %s: %s", path,
                            strerror(errno));
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap);
    while (text) {
        len += fread(text + len, 1, cap - len, f);
        if (len < cap || cap >= FS_CLUSTER_BOOK_MAX) break;
        char *t = realloc(text, cap *= 2);
        if (!t) free(text);
        text = t;
    }
    int bad = ferror(f);
    fclose(f);
    fs_status_t st = !text ? fs_error(err, FS_ERR_NOMEM, "cluster map %s: out of memory", path)
                     : bad ? fs_error(err, FS_ERR_IO, "cluster map %s: cannot read it", path)
                           : fs_shard_map_parse(text, len, out, err);
    if (st == FS_ERR_FORMAT) fs_error_prefix(err, "cluster map %s", path);
    free(text);
    return st;
}

/* An empty cluster with one reference, its locks made. */
static fs_cluster_t *cluster_new(void)
{
    cluster_t *cc = calloc(1, sizeof *cc);
    if (!cc) return NULL;
    fs_cluster_t *c = &cc->pub; /* first member: frees as cc */
    atomic_init(&cc->refs, 1);
    pthread_mutex_init(&cc->etcd_lock, NULL);
    pthread_mutex_init(&c->map_lock, NULL);
    pthread_mutex_init(&c->degree_lock, NULL);
    pthread_mutex_init(&c->cache_lock, NULL);
    return c;
}

fs_status_t fs_cluster_open(const fs_addr_t *where, int timeout_ms, const fs_cluster_local_t *local,
                            fs_cluster_t **out, fs_error_t *err)
{
    const char *endpoint = where->target, *name = where->cluster;
    *out = NULL;
    fs_cluster_t *c = cluster_new();
    if (!c) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    snprintf(c->endpoint, sizeof c->endpoint, "%s", endpoint);
    snprintf(c->name, sizeof c->name, "%s", name);
    snprintf(c->map_file, sizeof c->map_file, "%s", where->map_file);
    c->timeout_ms = timeout_ms > 0 ? timeout_ms : FS_CLUSTER_DEFAULT_TIMEOUT_MS;
    fs_status_t st = read_map(c, &c->map, err);
    if (st == FS_OK && c->map_file[0]) snprintf(c->name, sizeof c->name, "%s", c->map.name);
    if (st == FS_OK) st = check_map(c, err);
    char *book = NULL;
    int64_t len = 0;
    if (st == FS_OK) st = fs_cluster_file(c, "partition.json", FS_CLUSTER_BOOK_MAX, &book, &len, err);
    if (st == FS_OK) st = read_book(c, book, (size_t)len, err);
    free(book);
    for (int t = 0; st == FS_OK && t < c->num_types; t++) {
        char file[160];
        snprintf(file, sizeof file, "%s.node_map.npy", c->types[t].name);
        st = read_node_map(c, t, file, err);
    }
    c->local = local; /* the cache fills at the first connection, by its map (fs_cluster_cache.c) */
    if (st == FS_OK && !c->map_file[0]) st = fs_cluster_watch_start(c, &c->watch, err);
    if (st != FS_OK) {
        cluster_free(c);
        return st;
    }
    *out = c;
    return FS_OK;
}

fs_status_t fs_cluster_book_parse(const char *text, size_t len, const fs_shard_map_t *map, fs_cluster_t **out,
                                  fs_error_t *err)
{
    *out = NULL;
    fs_cluster_t *c = cluster_new();
    if (!c) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    snprintf(c->name, sizeof c->name, "%s", map->name);
    c->map = (fs_shard_map_t){.parts = map->parts}; /* the fields read_book compares, nothing to free */
    memcpy(c->map.partitioning, map->partitioning, sizeof c->map.partitioning);
    fs_status_t st = read_book(c, text, len, err);
    if (st != FS_OK) {
        cluster_free(c);
        return st;
    }
    *out = c;
    return FS_OK;
}

fs_status_t fs_cluster_remap(fs_cluster_t *c, int64_t seen, fs_error_t *err)
{
    fs_shard_map_t m;
    fs_status_t st = read_map(c, &m, err);
    if (st == FS_OK) return fs_cluster_install(c, &m, seen, err);
    fs_shard_map_free(&m);
    return st;
}

fs_status_t fs_cluster_install(fs_cluster_t *c, fs_shard_map_t *given, int64_t seen, fs_error_t *err)
{
    fs_shard_map_t m = *given;
    memset(given, 0, sizeof *given);
    fs_status_t st = FS_OK;
    if ((strcmp(m.partitioning, c->partitioning) != 0 || m.parts != c->parts))
        st = fs_error(err, FS_ERR_FORMAT, "cluster %s now serves partitioning %s of %d parts, not %s of %d: connect "
                      "again", c->name, m.partitioning, m.parts, c->partitioning, c->parts);
    if (st == FS_OK && m.revision < seen)
        st = fs_error(err, FS_ERR_FORMAT, "cluster %s: the shard map's revision went backwards (%lld after %lld)",
                      c->name, (long long)m.revision, (long long)seen);
    pthread_mutex_lock(&c->map_lock);
    int newer = m.revision > c->map.revision || (c->map_file[0] && !fs_shard_map_same(&m, &c->map));
    if (st == FS_OK && newer) { /* else another connection read it already */
        fs_shard_map_t old = c->map;
        c->map = m;
        m = old;
    }
    if (st == FS_OK) st = check_map(c, err);
    pthread_mutex_unlock(&c->map_lock);
    fs_shard_map_free(&m);
    return st;
}

fs_cluster_t *fs_cluster_ref(fs_cluster_t *c)
{
    atomic_fetch_add(&((cluster_t *)c)->refs, 1);
    return c;
}

void fs_cluster_unref(fs_cluster_t *c)
{
    if (c && atomic_fetch_sub(&((cluster_t *)c)->refs, 1) == 1) cluster_free(c);
}

/* ---- ids and splits ------------------------------------------------------------------ */

fs_status_t fs_cluster_to_global(const fs_cluster_t *c, int t, const int64_t *in, int64_t n, int64_t *out,
                                 fs_error_t *err)
{
    const fs_cluster_type_t *ty = &c->types[t];
    for (int64_t i = 0; i < n; i++) {
        if ((uint64_t)in[i] >= (uint64_t)ty->count)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "id %lld at position %lld is outside [0, %lld) (node type "
                            "'%s')", (long long)in[i], (long long)i, (long long)ty->count, ty->name);
        out[i] = ty->global_of[in[i]];
    }
    return FS_OK;
}

void fs_cluster_to_source(const fs_cluster_t *c, int t, int64_t *ids, int64_t n)
{
    const int64_t *s = c->types[t].source_of;
    for (int64_t i = 0; i < n; i++) ids[i] = s[ids[i]];
}

/* An int64 .npy file of the root, whole, as a new array (the caller's). */
static fs_status_t fetch_ids(const fs_cluster_t *c, const char *file, int64_t max_values, int64_t **ids, int64_t *n,
                             fs_error_t *err)
{
    char *data = NULL;
    int64_t len;
    const int64_t *vals;
    *ids = NULL, *n = 0;
    fs_status_t st = fs_cluster_file(c, file, FS_NPY_WRITE_HEADER_LEN + 8 * (max_values + 1), &data, &len, err);
    if (st == FS_OK) st = fs_cluster_npy_i64(file, data, len, &vals, n, err);
    if (st == FS_OK && !(*ids = malloc(sizeof **ids * (size_t)(*n + 1))))
        st = fs_error(err, FS_ERR_NOMEM, "out of memory");
    if (st == FS_OK) memmove(*ids, vals, sizeof **ids * (size_t)*n);
    free(data);
    return st;
}

fs_status_t fs_cluster_split(const fs_cluster_t *c, int t, const char *name, int64_t **ids, int64_t *n,
                             fs_error_t *err)
{
    const fs_cluster_type_t *ty = &c->types[t];
    *ids = NULL, *n = 0;
    for (int i = 0; i < ty->num_splits; i++)
        if (strcmp(ty->splits[i].name, name) == 0) return fetch_ids(c, ty->splits[i].file, ty->count, ids, n, err);
    return fs_error(err, FS_ERR_NOT_FOUND, "node type '%s' has no split '%s'", ty->name, name);
}

fs_status_t fs_cluster_link_array(const fs_cluster_t *c, const char *name, const char *array, int64_t **ids,
                                  int64_t *n, fs_error_t *err)
{
    *ids = NULL, *n = 0;
    for (int i = 0; i < c->num_links; i++) {
        const fs_cluster_link_t *l = &c->links[i];
        if (strcmp(l->name, name) != 0) continue;
        for (int a = 0; a < FS_CLUSTER_LINK_ARRAYS; a++)
            if (!strcmp(array, LINK_ARRAYS[a]) && l->file[a][0])
                return fetch_ids(c, l->file[a], a == 4 ? l->count * l->num_neg : l->count, ids, n, err);
        return fs_error(err, FS_ERR_NOT_FOUND, "link split '%s' has no array '%s'", name, array);
    }
    return fs_error(err, FS_ERR_NOT_FOUND, "cluster %s has no link split '%s'", c->name, name);
}

/* ---- degrees ----------------------------------------------------------------------- */

fs_status_t fs_cluster_degree_parse(const char *name, const char *data, int64_t len, int64_t count, int64_t num_edges,
                                    const int64_t **vals, fs_error_t *err)
{
    int64_t n, sum = 0;
    fs_status_t st = fs_cluster_npy_i64(name, data, len, vals, &n, err);
    if (st == FS_OK && n != count)
        return fs_error(err, FS_ERR_FORMAT, "cluster: %s: %lld degrees for %lld nodes", name, (long long)n,
                        (long long)count);
    for (int64_t v = 0; st == FS_OK && v < n; v++) {
        if ((*vals)[v] < 0 || (*vals)[v] > num_edges - sum)
            return fs_error(err, FS_ERR_FORMAT, "cluster: %s: node %lld's degree %lld is negative or past the %lld "
                            "edges", name, (long long)v, (long long)(*vals)[v], (long long)num_edges);
        sum += (*vals)[v];
    }
    if (st == FS_OK && sum != num_edges)
        return fs_error(err, FS_ERR_FORMAT, "cluster: %s: degrees sum to %lld, not the %lld edges", name,
                        (long long)sum, (long long)num_edges);
    return st;
}

/* Edge type e's degree array of one side, from a shard. */
static fs_status_t read_degrees(fs_cluster_t *c, fs_cluster_etype_t *x, int side, fs_error_t *err)
{
    const char *file = x->degree_file[side];
    int64_t count = c->types[side ? x->dst_type : x->src_type].count, len;
    if (!file[0])
        return fs_error(err, FS_ERR_NOT_FOUND, "cluster %s: the partitioning has no degree arrays for (%s, %s, %s) "
                        "(partitioned by an older featstore): partition the dataset again for degree-weighted "
                        "negatives", c->name, x->src, x->rel, x->dst);
    char *data = NULL;
    const int64_t *vals;
    fs_status_t st = fs_cluster_file(c, file, FS_NPY_WRITE_HEADER_LEN + 8 * (count + 1), &data, &len, err);
    if (st == FS_OK) st = fs_cluster_degree_parse(file, data, len, count, x->num_edges, &vals, err);
    if (st == FS_OK && !(x->degree[side] = malloc(sizeof(int64_t) * (size_t)(count + 1))))
        st = fs_error(err, FS_ERR_NOMEM, "cluster %s: out of memory for %s", c->name, file);
    if (st == FS_OK) memcpy(x->degree[side], vals, sizeof(int64_t) * (size_t)count);
    free(data);
    return st;
}

fs_status_t fs_cluster_degrees(fs_cluster_t *c, int e, int side, const int64_t **deg, fs_error_t *err)
{
    if (e < 0 || e >= c->num_etypes || (side != 0 && side != 1))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "cluster %s: edge type %d (of %d), side %d", c->name, e,
                        c->num_etypes, side);
    fs_cluster_etype_t *x = &c->etypes[e];
    pthread_mutex_lock(&c->degree_lock); /* the first caller reads it; the others wait for it */
    fs_status_t st = x->degree[side] ? FS_OK : read_degrees(c, x, side, err);
    *deg = x->degree[side];
    pthread_mutex_unlock(&c->degree_lock);
    return st;
}

/* ---- a connection ----------------------------------------------------------------- */

typedef struct {
    fs_cluster_conn_t *k;
    int type, table;
} table_ctx_t;

struct fs_cluster_conn {
    fs_cluster_t *c;
    fs_shard_map_t map;          /* the view's map when this connection opened */
    fs_shard_client_t **shards;  /* [num_shards]: gRPC, or NULL where local answers */
    fs_cluster_local_t local;    /* in-process answers (.open NULL: none) */
    void **local_conn;           /* [num_shards] */
    fs_router_t *router;
    fs_typed_remote_t remote;    /* the edge types' hooks, ctx = this connection */
    fs_typed_remote_times_t times; /* the node types' timestamps */
    int *timed;                  /* [types] the book's word */
    table_ctx_t **table_ctx;     /* [type][table] */
    fs_table_remote_t **tables;  /* [type][table] */
    fs_cluster_cache_t *cache;   /* the cache for its map (a reference), or NULL */
    int filler;                  /* a connection filling the cache: no cache, its reads not counted */
    int64_t *miss, *miss_at;     /* a gather's ids the cache lacks, and their places */
    size_t miss_cap;
    char *rows;                  /* their rows */
    size_t rows_cap;
};

static void count(uint64_t *c, int64_t n)
{
    __atomic_fetch_add(c, (uint64_t)n, __ATOMIC_RELAXED);
}

/* A remote shard's answer, its failure counted when it was unreachable or
 * late (the router then asks the part's next holder). */
static fs_status_t remote_answer(fs_cluster_conn_t *k, fs_status_t st)
{
    if (st == FS_ERR_UNAVAILABLE || st == FS_ERR_TIMEOUT) count(&k->c->counts.shard_failures, 1);
    return st;
}

static fs_status_t shard_picks(void *ctx, int shard, const fs_typed_picks_req_t *q, const int64_t *ids, int64_t n,
                               fs_typed_picks_t *out, fs_error_t *err)
{
    fs_cluster_conn_t *k = ctx;
    if (k->local_conn[shard]) {
        count(&k->c->counts.pick_ids_local, n);
        return k->local.picks(k->local_conn[shard], q, ids, n, out, err);
    }
    count(&k->c->counts.pick_ids_remote, n), count(&k->c->counts.calls_remote, 1);
    return remote_answer(k, fs_shard_client_picks(k->shards[shard], q, ids, n, out, err));
}

static fs_status_t shard_rows(void *ctx, int shard, int t, const char *table, const int64_t *ids, int64_t n,
                              size_t row_bytes, void *out, fs_error_t *err)
{
    fs_cluster_conn_t *k = ctx;
    if (k->local_conn[shard]) {
        count(&k->c->counts.rows_local, n);
        return k->local.rows(k->local_conn[shard], t, table, ids, n, row_bytes, out, err);
    }
    if (!k->filler) count(&k->c->counts.rows_remote, n), count(&k->c->counts.calls_remote, 1);
    return remote_answer(k, fs_shard_client_rows(k->shards[shard], t, table, ids, n, row_bytes, out, err));
}

void fs_cluster_counts(const fs_cluster_t *c, fs_cluster_counts_t *out)
{
    const fs_cluster_counts_t *n = &c->counts;
    out->pick_ids_local = __atomic_load_n(&n->pick_ids_local, __ATOMIC_RELAXED);
    out->pick_ids_remote = __atomic_load_n(&n->pick_ids_remote, __ATOMIC_RELAXED);
    out->rows_local = __atomic_load_n(&n->rows_local, __ATOMIC_RELAXED);
    out->rows_remote = __atomic_load_n(&n->rows_remote, __ATOMIC_RELAXED);
    out->rows_cached = __atomic_load_n(&n->rows_cached, __ATOMIC_RELAXED);
    out->calls_remote = __atomic_load_n(&n->calls_remote, __ATOMIC_RELAXED);
    out->calls = __atomic_load_n(&n->calls, __ATOMIC_RELAXED);
    out->shards_local = __atomic_load_n(&n->shards_local, __ATOMIC_RELAXED);
    out->micro_pairs = __atomic_load_n(&n->micro_pairs, __ATOMIC_RELAXED);
    out->micro_pairs_colocated = __atomic_load_n(&n->micro_pairs_colocated, __ATOMIC_RELAXED);
    out->pregather_requested = __atomic_load_n(&n->pregather_requested, __ATOMIC_RELAXED);
    out->pregather_rows = __atomic_load_n(&n->pregather_rows, __ATOMIC_RELAXED);
    out->cache_fills = __atomic_load_n(&n->cache_fills, __ATOMIC_RELAXED);
    out->shard_failures = __atomic_load_n(&n->shard_failures, __ATOMIC_RELAXED);
    out->map_updates = (uint64_t)fs_cluster_watch_installs(c->watch);
    out->map_watched = fs_cluster_watching(c->watch);
}

void fs_cluster_count_hopgnn(fs_cluster_t *c, int64_t pairs, int64_t colocated, int64_t requested, int64_t rows)
{
    count(&c->counts.micro_pairs, pairs), count(&c->counts.micro_pairs_colocated, colocated);
    count(&c->counts.pregather_requested, requested), count(&c->counts.pregather_rows, rows);
}

static fs_status_t shard_edges(void *ctx, int shard, int etype, const int64_t *dst, const int64_t *src, int64_t n,
                               uint8_t *is_edge, fs_error_t *err)
{
    fs_cluster_conn_t *k = ctx;
    if (k->local_conn[shard]) return k->local.edges(k->local_conn[shard], etype, dst, src, n, is_edge, err);
    count(&k->c->counts.calls_remote, 1);
    return remote_answer(k, fs_shard_client_edges(k->shards[shard], etype, dst, src, n, is_edge, err));
}

/* The views' hooks (fs_typed_remote_t, fs_typed_remote_times_t): through
 * the router to the owners, or the view's degree arrays. */
static fs_status_t conn_picks(void *ctx, const fs_typed_picks_req_t *q, const int64_t *dst, int64_t n,
                              fs_typed_picks_t *out, fs_error_t *err)
{
    return fs_router_picks(((fs_cluster_conn_t *)ctx)->router, q, dst, n, out, err);
}

static fs_status_t conn_edges(void *ctx, int etype, const int64_t *dst, const int64_t *src, int64_t n,
                              uint8_t *is_edge, fs_error_t *err)
{
    return fs_router_edges(((fs_cluster_conn_t *)ctx)->router, etype, dst, src, n, is_edge, err);
}

static fs_status_t conn_degrees(void *ctx, int etype, int side, const int64_t **deg, fs_error_t *err)
{
    return fs_cluster_degrees(((fs_cluster_conn_t *)ctx)->c, etype, side, deg, err);
}

static fs_status_t conn_times(void *ctx, int t, const int64_t *ids, int64_t n, int64_t *out, fs_error_t *err)
{
    return fs_router_rows(((fs_cluster_conn_t *)ctx)->router, t, FS_CLUSTER_NODE_TIME_TABLE, sizeof *out, ids, n, out,
                          err);
}

/* A gather: the cached rows from the cache, the rest from their shards. */
static fs_status_t table_rows(void *ctx, const int64_t *ids, int64_t n, void *out, fs_error_t *err)
{
    table_ctx_t *x = ctx;
    fs_cluster_conn_t *k = x->k;
    const fs_cluster_table_t *tb = &k->c->types[x->type].tables[x->table];
    size_t rb = tb->row_bytes;
    if (!k->cache) return fs_router_rows(k->router, x->type, tb->name, rb, ids, n, out, err);
    if ((size_t)n > k->miss_cap) {
        int64_t *m = realloc(k->miss, sizeof *m * (size_t)n), *at = realloc(k->miss_at, sizeof *at * (size_t)n);
        if (m) k->miss = m;
        if (at) k->miss_at = at;
        if (!m || !at) return fs_error(err, FS_ERR_NOMEM, "out of memory for %lld rows", (long long)n);
        k->miss_cap = (size_t)n;
    }
    int64_t miss = fs_cluster_cache_rows(k->cache, x->type, x->table, ids, n, out, rb, k->miss, k->miss_at);
    count(&k->c->counts.rows_cached, n - miss);
    if (miss == 0) return FS_OK;
    if ((size_t)miss * rb > k->rows_cap) {
        char *r = realloc(k->rows, (size_t)miss * rb);
        if (!r) return fs_error(err, FS_ERR_NOMEM, "out of memory for %lld rows", (long long)miss);
        k->rows = r, k->rows_cap = (size_t)miss * rb;
    }
    fs_status_t st = fs_router_rows(k->router, x->type, tb->name, rb, k->miss, miss, k->rows, err);
    for (int64_t i = 0; st == FS_OK && i < miss; i++)
        memcpy((char *)out + (size_t)k->miss_at[i] * rb, k->rows + (size_t)i * rb, rb);
    return st;
}

void fs_cluster_conn_close(fs_cluster_conn_t *k)
{
    if (!k) return;
    for (int s = 0; k->shards && s < k->map.num_shards; s++) fs_shard_client_close(k->shards[s]);
    for (int s = 0; k->local_conn && s < k->map.num_shards; s++)
        if (k->local_conn[s]) k->local.close(k->local_conn[s]);
    free(k->local_conn);
    fs_shard_map_free(&k->map);
    for (int t = 0; k->tables && t < k->c->num_types; t++) free(k->tables[t]), free(k->table_ctx[t]);
    free(k->tables), free(k->table_ctx), free(k->shards), free(k->miss), free(k->miss_at), free(k->rows);
    free(k->timed);
    fs_router_destroy(k->router);
    fs_cluster_cache_unref(k->cache);
    fs_cluster_unref(k->c);
    free(k);
}

/* The map's shard id as the router's index (its place in the map), -1 for none. */
static int shard_index(const fs_shard_map_t *m, int id)
{
    for (int s = 0; id >= 0 && s < m->num_shards; s++)
        if (m->shard[s].id == id) return s;
    return -1;
}

/* Part p's holders as router indices, in the order to ask them: those this
 * process answers first, then the others from a place that differs by
 * part and by connection, so that trainers spread their reads over a
 * part's replicas. */
static void holders_in_order(const fs_cluster_conn_t *k, int p, unsigned salt, int *out)
{
    const fs_shard_map_t *m = &k->map;
    int R = m->replicas, n = 0, h[FS_CLUSTER_REPLICAS_MAX], at = 0;
    while (n < R && m->holders[p * R + n] >= 0) h[n] = shard_index(m, m->holders[p * R + n]), n++;
    for (int i = 0; i < n; i++)
        if (k->local_conn[h[i]]) out[at++] = h[i];
    int remote = n - at, first = remote ? (int)((salt + (unsigned)p) % (unsigned)remote) : 0;
    for (int i = 0, seen = 0; i < n; i++) {
        if (k->local_conn[h[i]]) continue;
        out[at + (seen - first + remote) % remote] = h[i];
        seen++;
    }
    for (int i = n; i < R; i++) out[i] = -1;
}

static fs_status_t make_router(fs_cluster_conn_t *k, fs_error_t *err)
{
    const fs_cluster_t *c = k->c;
    int R = k->map.replicas;
    const int64_t **first = calloc((size_t)c->num_types, sizeof *first);
    int *etype_dst = calloc((size_t)c->num_etypes + 1, sizeof *etype_dst);
    int *owner = malloc(sizeof *owner * (size_t)(k->map.parts + 1)); /* the map names shards by id, the router by index */
    int *holders = malloc(sizeof *holders * ((size_t)k->map.parts * (size_t)R + 1));
    if (!first || !etype_dst || !owner || !holders) {
        free(first), free(etype_dst), free(owner), free(holders);
        return fs_error(err, FS_ERR_NOMEM, "out of memory");
    }
    unsigned salt = (unsigned)getpid() * 2654435761u + (unsigned)(uintptr_t)k;
    for (int p = 0; p < k->map.parts; p++) {
        owner[p] = shard_index(&k->map, k->map.owner[p]);
        holders_in_order(k, p, salt, &holders[p * R]);
    }
    for (int t = 0; t < c->num_types; t++) first[t] = c->types[t].first;
    for (int e = 0; e < c->num_etypes; e++) etype_dst[e] = c->etypes[e].dst_type;
    fs_route_map_t m = {.num_node_types = c->num_types, .first = (const int64_t *const *)first, .parts = c->parts,
                        .owner = owner, .replicas = R, .holders = holders, .num_shards = k->map.num_shards,
                        .num_edge_types = c->num_etypes, .etype_dst = etype_dst};
    fs_route_transport_t tr = {.picks = shard_picks, .rows = shard_rows, .edges = shard_edges, .ctx = k};
    fs_status_t st = fs_router_create(&m, &tr, &k->router, err);
    free(first), free(etype_dst), free(owner), free(holders);
    return st;
}

/* Shard s in this process when the local hooks take it, else over gRPC. */
static fs_status_t open_shard(fs_cluster_conn_t *k, int s, int *parts, fs_error_t *err)
{
    const fs_shard_addr_t *a = &k->map.shard[s];
    int n = 0;
    for (int p = 0; p < k->map.parts; p++)
        if (fs_shard_map_holds(&k->map, p, a->id)) parts[n++] = p;
    fs_status_t st = k->local.open ? k->local.open(k->local.ctx, k->c, a, parts, n, &k->local_conn[s], err) : FS_OK;
    if (st != FS_OK || k->local_conn[s]) return st;
    if ((st = fs_shard_client_open(a->grpc, k->c->timeout_ms, &k->shards[s], err)) == FS_OK)
        fs_shard_client_set_revision(k->shards[s], k->map.revision);
    return st;
}

static fs_status_t conn_open(fs_cluster_t *c, const fs_cluster_local_t *local, int filler, fs_cluster_conn_t **out,
                             fs_error_t *err)
{
    *out = NULL;
    fs_cluster_conn_t *k = calloc(1, sizeof *k);
    if (!k) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    k->c = fs_cluster_ref(c);
    k->filler = filler;
    if (local) k->local = *local;
    pthread_mutex_lock(&c->map_lock); /* the map as it is now: its shards, owners and revision */
    fs_status_t mst = fs_shard_map_copy(&c->map, &k->map, err);
    pthread_mutex_unlock(&c->map_lock);
    if (mst == FS_OK && !filler) mst = fs_cluster_cache_for(c, &k->map, &k->cache, err);
    if (mst != FS_OK) {
        fs_cluster_conn_close(k);
        return mst;
    }
    k->shards = calloc((size_t)k->map.num_shards, sizeof *k->shards);
    k->local_conn = calloc((size_t)k->map.num_shards, sizeof *k->local_conn);
    k->tables = calloc((size_t)c->num_types, sizeof *k->tables);
    k->table_ctx = calloc((size_t)c->num_types, sizeof *k->table_ctx);
    k->timed = calloc((size_t)c->num_types + 1, sizeof *k->timed);
    int *parts = malloc(sizeof *parts * (size_t)(k->map.parts + 1));
    fs_status_t st = k->shards && k->local_conn && k->tables && k->table_ctx && k->timed && parts
                         ? FS_OK : fs_error(err, FS_ERR_NOMEM, "out of memory");
    int in_process = 0;
    for (int s = 0; st == FS_OK && s < k->map.num_shards; s++)
        if ((st = open_shard(k, s, parts, err)) == FS_OK) in_process += k->local_conn[s] != NULL;
    if (!filler) __atomic_store_n(&c->counts.shards_local, in_process, __ATOMIC_RELAXED);
    free(parts);
    for (int t = 0; st == FS_OK && t < c->num_types; t++) {
        int n = c->types[t].num_tables;
        k->tables[t] = calloc((size_t)n + 1, sizeof **k->tables);
        k->table_ctx[t] = calloc((size_t)n + 1, sizeof **k->table_ctx);
        if (!k->tables[t] || !k->table_ctx[t]) st = fs_error(err, FS_ERR_NOMEM, "out of memory");
        for (int i = 0; st == FS_OK && i < n; i++) {
            k->table_ctx[t][i] = (table_ctx_t){.k = k, .type = t, .table = i};
            k->tables[t][i] = (fs_table_remote_t){.rows = table_rows, .ctx = &k->table_ctx[t][i]};
        }
    }
    if (st == FS_OK) st = make_router(k, err);
    if (st != FS_OK) {
        fs_cluster_conn_close(k);
        return st;
    }
    k->remote = (fs_typed_remote_t){.picks = conn_picks, .edges = conn_edges, .degrees = conn_degrees, .ctx = k};
    for (int t = 0; t < c->num_types; t++) k->timed[t] = c->types[t].timed;
    k->times = (fs_typed_remote_times_t){.times = conn_times, .ctx = k, .timed = k->timed};
    *out = k;
    return FS_OK;
}

fs_status_t fs_cluster_conn_open(fs_cluster_t *c, const fs_cluster_local_t *local, fs_cluster_conn_t **out,
                                 fs_error_t *err)
{
    return conn_open(c, local, 0, out, err);
}

fs_status_t fs_cluster_conn_open_filler(fs_cluster_t *c, fs_cluster_conn_t **out, fs_error_t *err)
{
    return conn_open(c, NULL, 1, out, err);
}

int fs_cluster_conn_is_local(const fs_cluster_conn_t *k, int t, int64_t x)
{
    int p = fs_route_part_of(k->c->types[t].first, k->c->parts, x);
    const fs_shard_addr_t *a = p < 0 ? NULL : fs_shard_map_owner(&k->map, p);
    return a && k->local_conn[a - k->map.shard] != NULL;
}

int fs_cluster_conn_num_local(const fs_cluster_conn_t *k)
{
    int n = 0;
    for (int s = 0; s < k->map.num_shards; s++) n += k->local_conn[s] != NULL;
    return n;
}

int64_t fs_cluster_conn_revision(const fs_cluster_conn_t *k)
{
    return k->map.revision;
}

fs_router_t *fs_cluster_conn_router(fs_cluster_conn_t *k)
{
    return k->router;
}

const fs_typed_remote_t *fs_cluster_conn_remote(fs_cluster_conn_t *k)
{
    return &k->remote;
}

const fs_typed_remote_times_t *fs_cluster_conn_times(fs_cluster_conn_t *k)
{
    return &k->times;
}

const fs_table_remote_t *fs_cluster_conn_table(fs_cluster_conn_t *k, int t, int i)
{
    return &k->tables[t][i];
}
