/* client_grpc_hot.c — a grpc:// connection's cache of the server's hot rows,
 * for its Stream calls (client_grpc_internal.h): XGNN and Quiver's
 * degree-ordered cache, and the one a cluster trainer keeps of other
 * shards' rows (cluster/fs_cluster.h, "The cache"), for a trainer of one
 * remote server.
 *
 * At a connection's first Stream of a feature table, it reads the server's
 * hot list (Split with hot > 0: the nodes the most neighbour lists hold,
 * hottest first) and the rows of as many of them as FEATSTORE_CACHE_MB
 * holds, less 4 bytes a node for the id -> row map. Each Stream then names
 * how many it holds and the server instance the list came from, and the
 * server sends only the rows of each batch's other nodes, in node order:
 * on a power-law graph the hot quarter of the nodes is most of what a batch
 * reads (docs/benchmarks.md), so most of the bytes stay home. fs_gc_hot_spread
 * spreads the received rows into place around the cached ones.
 *
 * A server's rows never change while it runs, so batches stay bit for bit
 * the server's. A server of another instance behind the same address (a
 * restart, another dataset) ignores the cache and sends every row: the
 * batch is whole as received, and the cache is dropped and filled anew at
 * the next call. Typed batches (HeteroSample, LinkSample: PyG's loaders)
 * use it the same way for their first node table on a homogeneous graph:
 * the server leaves the cached rows' bytes out of the image, which
 * fs_gc_hot_spread fills in before the image is handed out.
 *
 * A cache is the process's for one server address, table and dtype,
 * shared by every connection there (a stream's producers each have one)
 * and freed with the last of them: a registry under registry_mu, each
 * cache filled once under its own fill_mu, then read without locks. A
 * forked child starts a registry of its own. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_grpc_internal.h"
#include "fs_cluster.h"

#define FILL_CHUNK 65536 /* ids per Gather while the cache fills */

struct fs_gc_hot {
    char target[sizeof ((conn_t *)0)->target];
    char table[64];
    fs_dtype_t dtype;            /* as the calls ask (their out_dtype) */
    atomic_int refs;             /* the connections holding it */
    atomic_int stale;            /* a call met another server instance: connections fill a new one */
    pthread_mutex_t fill_mu;
    int filled;                  /* (fill_mu) then read-only */
    uint64_t instance;           /* the server's whose rows these are; 0: none held */
    size_t row_bytes;
    int64_t count;               /* hot nodes cached */
    int64_t num_slots;           /* slot's length: the largest cached id + 1 */
    int32_t *slot;               /* [num_slots] id -> its row, or -1 */
    char *rows;                  /* [count][row_bytes] */
    struct fs_gc_hot *next;      /* in the registry (registry_mu) */
};

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static fs_gc_hot_t *registry;
static pid_t registry_pid;

static void hot_free(fs_gc_hot_t *h)
{
    pthread_mutex_destroy(&h->fill_mu);
    free(h->slot), free(h->rows), free(h);
}

/* Leaves the registry (registry_mu held). */
static void unlist(fs_gc_hot_t *h)
{
    for (fs_gc_hot_t **p = &registry; *p; p = &(*p)->next)
        if (*p == h) {
            *p = h->next;
            return;
        }
}

void fs_gc_hot_free(fs_gc_hot_t *h)
{
    if (!h) return;
    pthread_mutex_lock(&registry_mu);
    int last = atomic_fetch_sub(&h->refs, 1) == 1;
    if (last && registry_pid == getpid()) unlist(h);
    pthread_mutex_unlock(&registry_mu);
    if (last) hot_free(h);
}

/* The live cache of (target, table, dtype), referenced, or a new empty one. */
static fs_gc_hot_t *find_or_add(const char *target, const char *table, fs_dtype_t dtype)
{
    pthread_mutex_lock(&registry_mu);
    if (registry_pid != getpid()) registry = NULL, registry_pid = getpid(); /* a child's caches are its own */
    fs_gc_hot_t *h = registry;
    while (h && (atomic_load(&h->stale) || strcmp(h->target, target) || strcmp(h->table, table) || h->dtype != dtype))
        h = h->next;
    if (h) atomic_fetch_add(&h->refs, 1);
    else if ((h = calloc(1, sizeof *h))) {
        snprintf(h->target, sizeof h->target, "%s", target);
        snprintf(h->table, sizeof h->table, "%s", table);
        h->dtype = dtype;
        atomic_init(&h->refs, 1);
        pthread_mutex_init(&h->fill_mu, NULL);
        h->next = registry, registry = h;
    }
    pthread_mutex_unlock(&registry_mu);
    return h;
}

static void ids_free(fs_ids_t *ids)
{
    if (ids) ((fs_ids_priv_t *)ids)->release((fs_ids_priv_t *)ids);
}

/* Rows [from, from + n) of the list, gathered into h->rows. */
static fs_status_t fill_rows(fs_client_t *c, fs_gc_hot_t *h, const int64_t *ids, int64_t from, int64_t n)
{
    fs_batch_t *b = NULL;
    fs_status_t st = fs_gc_gather(c, ids + from, n, h->table, h->dtype, &b);
    if (st != FS_OK) return st;
    size_t row = (size_t)b->dim * fs_dtype_size(b->dtype);
    if (b->rows != n || row != h->row_bytes)
        st = fs_client_fail(c, FS_ERR_FORMAT, "Gather: %lld rows of %zu bytes for %lld hot ids of %zu",
                            (long long)b->rows, row, (long long)n, h->row_bytes);
    else memcpy(h->rows + (size_t)from * row, b->features, (size_t)n * row);
    fs_gc_batch_release((fs_batch_priv_t *)b);
    return st;
}

/* The id -> row map of the first h->count ids. */
static fs_status_t fill_slots(fs_client_t *c, fs_gc_hot_t *h, const int64_t *ids)
{
    int64_t top = -1;
    for (int64_t k = 0; k < h->count; k++) top = ids[k] > top ? ids[k] : top;
    h->num_slots = top + 1;
    if (!(h->slot = malloc((size_t)(h->num_slots ? h->num_slots : 1) * sizeof *h->slot)))
        return fs_client_fail(c, FS_ERR_NOMEM, "out of memory for the map of %lld ids", (long long)h->num_slots);
    memset(h->slot, 0xff, (size_t)h->num_slots * sizeof *h->slot); /* -1: not cached */
    for (int64_t k = 0; k < h->count; k++) h->slot[ids[k]] = (int32_t)k;
    return FS_OK;
}

/* Reads the hot list and its rows into h through c. */
static fs_status_t fill(fs_client_t *c, fs_gc_hot_t *h, size_t budget)
{
    fs_ids_t *list = NULL;
    fs_batch_t *one = NULL; /* a row's size first, so that the list asked for is only as long as the budget holds */
    fs_status_t st = fs_gc_gather(c, (const int64_t[]){0}, 1, h->table, h->dtype, &one);
    size_t row = h->row_bytes = st == FS_OK ? (size_t)one->dim * fs_dtype_size(one->dtype) : 0;
    if (one) fs_gc_batch_release((fs_batch_priv_t *)one);
    if (st == FS_OK && row) st = fs_gc_ids(c, "", (int64_t)(budget / row), &list, &h->instance);
    if (st != FS_OK || !row || !h->instance) { /* an older server, a typed dataset, no such table: no cache */
        ids_free(list);
        h->instance = 0;
        c->errstr[0] = '\0';
        return FS_OK;
    }
    int64_t n = list->n, top = 0;
    for (int64_t k = 0; k < n && st == FS_OK; k++) {
        if (list->ids[k] < 0 || (k && list->ids[k] == list->ids[k - 1]))
            st = fs_client_fail(c, FS_ERR_FORMAT, "Split: hot id %lld at %lld", (long long)list->ids[k],
                                (long long)k);
        top = list->ids[k] > top ? list->ids[k] : top;
    }
    /* the map's bytes come first (4 a node up to the largest id), then the rows that fit */
    size_t map = top < (int64_t)(budget / sizeof(int32_t)) ? (size_t)(top + 1) * sizeof(int32_t) : budget;
    int64_t fits = (int64_t)((budget - map) / row);
    h->count = n < fits ? n : fits;
    if (h->count > INT32_MAX) h->count = INT32_MAX;
    if (st == FS_OK && h->count > 0 && !(h->rows = malloc((size_t)h->count * row)))
        st = fs_client_fail(c, FS_ERR_NOMEM, "out of memory for %lld cached rows", (long long)h->count);
    for (int64_t from = 0; st == FS_OK && from < h->count; from += FILL_CHUNK)
        st = fill_rows(c, h, list->ids, from, h->count - from < FILL_CHUNK ? h->count - from : FILL_CHUNK);
    if (st == FS_OK && h->count > 0) st = fill_slots(c, h, list->ids);
    ids_free(list);
    return st;
}

fs_status_t fs_gc_hot_ready(fs_client_t *c, const char *table, fs_dtype_t out_dtype, int64_t *cached,
                            uint64_t *instance)
{
    conn_t *k = conn_of(c);
    *cached = 0, *instance = 0;
    size_t budget;
    fs_error_t err = {0};
    if (fs_cache_budget(&budget, &err) != FS_OK) return fs_client_fail(c, err.code, "%s", err.msg);
    fs_gc_hot_t *h = k->hot;
    if (h && (budget == 0 || atomic_load(&h->stale) || strcmp(h->table, table) || h->dtype != out_dtype)) {
        fs_gc_hot_free(h);
        h = k->hot = NULL;
    }
    if (budget == 0 || strlen(table) >= sizeof h->table) return FS_OK;
    if (!h && !(h = k->hot = find_or_add(k->target, table, out_dtype)))
        return fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    fs_status_t st = FS_OK;
    pthread_mutex_lock(&h->fill_mu); /* one connection fills it; the others wait for it */
    if (!h->filled && (st = fill(c, h, budget)) == FS_OK) h->filled = 1;
    pthread_mutex_unlock(&h->fill_mu);
    if (st != FS_OK) return st; /* unfilled: the next call tries again */
    if (h->count > 0) *cached = h->count, *instance = h->instance;
    return FS_OK;
}

/* Marks h stale: it is nobody's next cache. */
static void mark_stale(fs_gc_hot_t *h)
{
    pthread_mutex_lock(&registry_mu);
    atomic_store(&h->stale, 1);
    pthread_mutex_unlock(&registry_mu);
}

fs_status_t fs_gc_hot_spread(fs_client_t *c, const int64_t *nodes, int64_t n, char *rows, size_t row_bytes,
                             int64_t got, const char *what)
{
    fs_gc_hot_t *h = conn_of(c)->hot;
    int64_t misses = 0;
    for (int64_t i = 0; i < n; i++) misses += nodes[i] < 0 || nodes[i] >= h->num_slots || h->slot[nodes[i]] < 0;
    if (got == n) { /* every row came: a server of another instance (or none of them cached) */
        if (misses < n) mark_stale(h);
        return FS_OK;
    }
    if (got != misses || row_bytes != h->row_bytes)
        return fs_client_fail(c, FS_ERR_FORMAT, "%s: %lld rows of %zu bytes for the %lld uncached of %lld nodes",
                              what, (long long)got, row_bytes, (long long)misses, (long long)n);
    /* From the end: received row j lands at i >= j, so none is overwritten before it moves. */
    for (int64_t i = n - 1, j = got - 1; i >= 0; i--) {
        int64_t v = nodes[i];
        int32_t s = v >= 0 && v < h->num_slots ? h->slot[v] : -1;
        if (s >= 0) memcpy(rows + (size_t)i * row_bytes, h->rows + (size_t)s * row_bytes, row_bytes);
        else if (j-- != i) memcpy(rows + (size_t)i * row_bytes, rows + (size_t)(j + 1) * row_bytes, row_bytes);
    }
    return FS_OK;
}
