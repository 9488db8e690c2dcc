/* fs_cluster_cache.c — a trainer process's cache of other shards' hot rows
 * (fs_cluster.h, "The cache"; HopGNN's remote-row cache, XGNN and Quiver's
 * degree-ordered cache).
 *
 * A cache is selected by a shard map: as many rows of the partitioning's
 * hot list as FEATSTORE_CACHE_MB holds, hottest first, the rows of
 * other machines' shards before those of the shards this process answers
 * in place (the local hooks' mine()). Those are cached too when the budget
 * allows: a compact copy of the hottest rows reads faster than the rows
 * scattered through the part files (measured: docs/benchmarks.md).
 * Connections take the cluster's current cache when they open, for the map
 * they open with. When that map puts other parts on this machine than the
 * cache's (a shard moved onto or off it), the cache is invalidated and
 * filled anew for the new map; a map with the same parts here keeps it,
 * with the new revision. Rows never go stale: they are the
 * partitioning's, and a map of another partitioning fails the connection.
 * A cache is refcounted, so connections still open on an old one read it
 * until they close. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs_cluster.h"
#include "fs_npy.h"

#define CACHE_CHUNK 65536 /* ids per ShardRows while the cache fills */

typedef struct {
    int64_t num_cached;          /* hot nodes whose rows it holds */
    int32_t *slot;               /* [count] global id -> its cached row, or -1 */
    char **rows;                 /* [num_tables][num_cached][row_bytes] */
    int num_tables;
} cache_type_t;

struct fs_cluster_cache {
    atomic_int refs;
    int64_t revision;            /* the newest map it serves (under the cluster's cache_lock) */
    int parts;
    char *mine;                  /* [parts] 1: a part of a shard on this machine, cached last */
    int num_types;
    cache_type_t *types;
};

fs_status_t fs_cache_budget(size_t *bytes, fs_error_t *err)
{
    const char *env = getenv("FEATSTORE_CACHE_MB");
    char *end = NULL;
    errno = 0;
    long long mb = env && *env ? strtoll(env, &end, 10) : FS_CACHE_DEFAULT_MB;
    if (env && *env && (errno || *end || mb < 0))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "FEATSTORE_CACHE_MB='%.40s': a number of MiB >= 0 "
                        "expected (0: no cache; unset: %d)", env, FS_CACHE_DEFAULT_MB);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    long long have = pages > 0 && page > 0 ? ((long long)pages * page) >> 20 : -1; /* MiB */
    if (have >= 0 && mb > have)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "FEATSTORE_CACHE_MB=%lld is more than this machine's "
                        "memory (%lld MiB): give the cache a budget it can hold", mb, have);
    *bytes = (size_t)mb << 20;
    return FS_OK;
}

static void cache_free(fs_cluster_cache_t *x)
{
    for (int t = 0; x->types && t < x->num_types; t++) {
        for (int i = 0; x->types[t].rows && i < x->types[t].num_tables; i++) free(x->types[t].rows[i]);
        free(x->types[t].rows), free(x->types[t].slot);
    }
    free(x->types), free(x->mine), free(x);
}

fs_cluster_cache_t *fs_cluster_cache_ref(fs_cluster_cache_t *x)
{
    if (x) atomic_fetch_add(&x->refs, 1);
    return x;
}

void fs_cluster_cache_unref(fs_cluster_cache_t *x)
{
    if (x && atomic_fetch_sub(&x->refs, 1) == 1) cache_free(x);
}

/* Type t's hot rows, as many as *budget holds (taken from it): other
 * machines' first, hottest first, then this machine's; read from the shards
 * through k's router. */
static fs_status_t fill_type(fs_cluster_t *c, fs_cluster_conn_t *k, fs_cluster_cache_t *x, int t, size_t *budget,
                             fs_error_t *err)
{
    const fs_cluster_type_t *ty = &c->types[t];
    cache_type_t *ct = &x->types[t];
    size_t row = 0;
    for (int i = 0; i < ty->num_tables; i++) row += ty->tables[i].row_bytes;
    if (!ty->hot[0] || row == 0 || *budget < row) return FS_OK;
    char *data = NULL;
    int64_t len, listed, n = 0;
    const int64_t *list;
    int64_t *hot = NULL;
    fs_status_t st = fs_cluster_file(c, ty->hot, FS_NPY_WRITE_HEADER_LEN + 8 * (ty->count + 1), &data, &len, err);
    if (st == FS_OK) st = fs_cluster_npy_i64(ty->hot, data, len, &list, &listed, err);
    if (st == FS_OK && !(hot = malloc(((size_t)listed + 1) * sizeof *hot)))
        st = fs_error(err, FS_ERR_NOMEM, "cluster %s: out of memory for the cache", c->name);
    for (int pass = 0; pass < 2; pass++) /* other machines' rows first, then this one's with what is left */
        for (int64_t i = 0; st == FS_OK && i < listed && n < (int64_t)(*budget / row); i++) {
            if (list[i] < 0 || list[i] >= ty->count)
                st = fs_error(err, FS_ERR_FORMAT, "cluster %s: %s: node %lld of a type of %lld", c->name, ty->hot,
                              (long long)list[i], (long long)ty->count);
            else if (x->mine[fs_route_part_of(ty->first, c->parts, list[i])] == pass)
                hot[n++] = list[i];
        }
    if (st == FS_OK && (!(ct->slot = malloc(sizeof *ct->slot * (size_t)ty->count + 1)) ||
                        !(ct->rows = calloc((size_t)ty->num_tables + 1, sizeof *ct->rows))))
        st = fs_error(err, FS_ERR_NOMEM, "cluster %s: out of memory for the cache", c->name);
    if (st == FS_OK) ct->num_tables = ty->num_tables;
    for (int i = 0; st == FS_OK && i < ty->num_tables; i++) {
        size_t rb = ty->tables[i].row_bytes;
        if (!(ct->rows[i] = malloc((size_t)n * rb + 1))) {
            st = fs_error(err, FS_ERR_NOMEM, "cluster %s: out of memory for the cache", c->name);
            break;
        }
        for (int64_t at = 0; st == FS_OK && at < n; at += CACHE_CHUNK)
            st = fs_router_rows(fs_cluster_conn_router(k), t, ty->tables[i].name, rb, hot + at,
                                n - at < CACHE_CHUNK ? n - at : CACHE_CHUNK, ct->rows[i] + (size_t)at * rb, err);
    }
    if (st == FS_OK) {
        for (int64_t v = 0; v < ty->count; v++) ct->slot[v] = -1;
        for (int64_t i = 0; i < n; i++) ct->slot[hot[i]] = (int32_t)i;
        ct->num_cached = n;
        *budget -= (size_t)n * row;
    }
    free(data), free(hot);
    return st;
}

/* A cache for map m whose parts `mine` (taken over) are this machine's,
 * filled from the shards. */
static fs_status_t fill(fs_cluster_t *c, const fs_shard_map_t *m, char *mine, fs_cluster_cache_t **out,
                        fs_error_t *err)
{
    fs_cluster_cache_t *x = calloc(1, sizeof *x);
    if (!x || !(x->types = calloc((size_t)c->num_types + 1, sizeof *x->types))) {
        free(x), free(mine);
        return fs_error(err, FS_ERR_NOMEM, "out of memory");
    }
    atomic_init(&x->refs, 1);
    x->revision = m->revision, x->parts = c->parts, x->mine = mine, x->num_types = c->num_types;
    size_t budget;
    fs_cluster_conn_t *k = NULL;
    fs_status_t st = fs_cache_budget(&budget, err);
    if (st == FS_OK) st = fs_cluster_conn_open_filler(c, &k, err);
    for (int t = 0; st == FS_OK && t < c->num_types; t++) st = fill_type(c, k, x, t, &budget, err);
    fs_cluster_conn_close(k);
    if (st != FS_OK) {
        cache_free(x);
        return st;
    }
    __atomic_fetch_add(&c->counts.cache_fills, 1, __ATOMIC_RELAXED);
    *out = x;
    return FS_OK;
}

fs_status_t fs_cluster_cache_for(fs_cluster_t *c, const fs_shard_map_t *m, fs_cluster_cache_t **out, fs_error_t *err)
{
    *out = NULL;
    size_t budget;
    fs_status_t st = fs_cache_budget(&budget, err);
    if (st != FS_OK || budget == 0) return st;
    char *mine = calloc((size_t)c->parts + 1, 1);
    if (!mine) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    for (int s = 0; c->local && c->local->mine && s < m->num_shards; s++) /* a part a shard here holds is read here */
        for (int p = 0; c->local->mine(c->local->ctx, &m->shard[s]) && p < c->parts; p++)
            mine[p] |= fs_shard_map_holds(m, p, m->shard[s].id);
    pthread_mutex_lock(&c->cache_lock); /* one fill at a time; the others wait for it and share it */
    fs_cluster_cache_t *x = c->cache;
    if (x && memcmp(x->mine, mine, (size_t)c->parts) == 0) { /* the same parts this machine's: kept */
        if (m->revision > x->revision) x->revision = m->revision;
        free(mine);
    } else if ((st = fill(c, m, mine, &x, err)) == FS_OK) {
        fs_cluster_cache_unref(c->cache); /* invalidated: connections on it keep it until they close */
        c->cache = x;
    }
    if (st == FS_OK) *out = fs_cluster_cache_ref(x);
    pthread_mutex_unlock(&c->cache_lock);
    return st;
}

int64_t fs_cluster_cache_revision(fs_cluster_t *c)
{
    pthread_mutex_lock(&c->cache_lock);
    int64_t r = c->cache ? c->cache->revision : -1;
    pthread_mutex_unlock(&c->cache_lock);
    return r;
}

int64_t fs_cluster_cache_rows(const fs_cluster_cache_t *x, int t, int table, const int64_t *ids, int64_t n, void *out,
                              size_t row_bytes, int64_t *miss, int64_t *miss_at)
{
    const cache_type_t *ct = &x->types[t];
    int64_t k = 0;
    if (!ct->slot) {
        for (int64_t i = 0; i < n; i++) miss[k] = ids[i], miss_at[k++] = i;
        return k;
    }
    const char *cached = ct->rows[table];
    for (int64_t i = 0; i < n; i++) {
        int32_t s = ct->slot[ids[i]];
        if (s >= 0) memcpy((char *)out + (size_t)i * row_bytes, cached + (size_t)s * row_bytes, row_bytes);
        else miss[k] = ids[i], miss_at[k++] = i;
    }
    return k;
}
