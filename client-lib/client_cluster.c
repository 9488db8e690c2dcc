/* client_cluster.c — the etcd:// transport: a trainer of a sharded cluster
 * (docs/design.md, "Owner-routed sampling").
 *
 * fs_connect("etcd://HOST:PORT/CLUSTER") reads the cluster's shard map,
 * book and node maps (cluster/fs_cluster.h; shared by every connection of
 * this process to that cluster while one is open) and opens a gRPC
 * connection to each shard. Requests run through the executor in this
 * process (exec/fs_exec.h), as over unix://, on views whose lists and rows
 * are the shards': the graph's picks come from the owners of each hop's
 * frontier (fs_csr_view_t.remote, one ShardPicks per owner per hop, all at
 * once) and its rows likewise (fs_table_view_t.remote, one ShardRows per
 * owner). The trainer names nodes by its own ids; they are mapped to the
 * partitioning's global ids on the way in and back on the way out, and
 * every pick is keyed by the trainer's ids, so a batch is bit for bit the
 * one a single server returns for the same request.
 *
 * Served: fs_sample, fs_gather, fs_sample_gather (one node and one edge
 * type), fs_hetero_sample (typed graphs too, disjoint and temporal passes;
 * seeds without times take their nodes' timestamps, read from the shards
 * by the engine through fs_typed_view_t.remote_time), fs_link_sample (its
 * seed edges mapped too; negatives drawn in the trainer's ids, strict ones
 * tested by the shards a round of tries at once, degree-weighted ones by
 * the root's degree arrays),
 * fs_split (link splits too), fs_info and the streams made from them. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_cluster_local.h"
#include "client_internal.h"
#include "fs_addr.h"
#include "fs_cluster.h"
#include "fs_cluster_watch.h"
#include "fs_exec.h"
#include "fs_hetero.h"
#include "fs_info.h"
#include "fs_shardmap.h"

/* The typed side: the book as a dataset without arrays (the names and
 * shapes fs_exec_typed resolves requests against) and the graph's view,
 * every edge type picked by the shards and every table gathered from them. */
typedef struct {
    fs_dataset_t ds;
    fs_exec_typed_graph_t graph;
    int64_t *count;
    const char **type_name;
    fs_typed_etype_t *etype;
    char (*etype_name)[3 * FS_TYPE_NAME_MAX + 8];
    const int64_t **draw_map;
    fs_typed_sampler_t *sampler;
} typed_t;

typedef struct {
    fs_cluster_t *cl;
    fs_cluster_conn_t *conn;
    fs_limits_t limits;
    fs_pool_t *pool;
    fs_sampler_t *sampler;
    fs_csr_view_t graph;              /* type 0's only edge type, its picks the shards' */
    fs_table_view_t *tables;          /* [type 0's tables], their rows the shards' */
    typed_t typed;
    int64_t revision;                 /* the shard map's its shards were opened by */
    char key[FS_ADDR_HOST_MAX + FS_CLUSTER_NAME_MAX + FS_ADDR_FILE_MAX + 16]; /* the shared view's */
} cluster_t;

typedef struct {
    fs_batch_priv_t priv;
    char *mem;
} cluster_batch_t;

/* ---- the views shared by this process's connections ------------------------------ */

typedef struct shared {
    struct shared *next;
    char key[FS_ADDR_HOST_MAX + FS_CLUSTER_NAME_MAX + FS_ADDR_FILE_MAX + 16];
    fs_cluster_t *cl;
    int users;
} shared_t;

static pthread_mutex_t shared_mu = PTHREAD_MUTEX_INITIALIZER;
static shared_t *shared_list;

/* The open view of cluster `key`, or a new one. While a connection holds
 * it, connections to the same cluster share it (a stream's producers). */
static fs_status_t shared_get(const fs_addr_t *a, const char *key, int timeout_ms, fs_cluster_t **out, fs_error_t *err)
{
    pthread_mutex_lock(&shared_mu);
    for (shared_t *s = shared_list; s; s = s->next)
        if (strcmp(s->key, key) == 0) {
            s->users++;
            *out = s->cl;
            pthread_mutex_unlock(&shared_mu);
            return FS_OK;
        }
    pthread_mutex_unlock(&shared_mu);
    fs_cluster_t *cl;
    fs_status_t st = fs_cluster_open(a, timeout_ms, fs_cluster_local_hooks(), &cl, err); /* unlocked: remote calls */
    if (st != FS_OK) return st;
    shared_t *s = calloc(1, sizeof *s);
    if (!s) {
        fs_cluster_unref(cl);
        return fs_error(err, FS_ERR_NOMEM, "out of memory");
    }
    snprintf(s->key, sizeof s->key, "%s", key);
    s->cl = cl, s->users = 1;
    pthread_mutex_lock(&shared_mu);
    s->next = shared_list, shared_list = s;
    pthread_mutex_unlock(&shared_mu);
    *out = cl;
    return FS_OK;
}

static void shared_put(const char *key, fs_cluster_t *cl)
{
    pthread_mutex_lock(&shared_mu);
    for (shared_t **p = &shared_list; *p; p = &(*p)->next) {
        shared_t *s = *p;
        if (s->cl != cl || strcmp(s->key, key) != 0) continue;
        if (--s->users == 0) {
            *p = s->next;
            fs_cluster_unref(s->cl);
            free(s);
        }
        break;
    }
    pthread_mutex_unlock(&shared_mu);
}

/* ---- lifetime ---------------------------------------------------------------------- */

static void typed_free(typed_t *T)
{
    for (int t = 0; T->ds.node_types && t < T->ds.num_node_types; t++) free(T->ds.node_types[t].tables);
    for (int t = 0; T->graph.node_views && t < T->ds.num_node_types; t++) free(T->graph.node_views[t]);
    for (int e = 0; T->graph.edge_views && e < T->ds.num_edge_types; e++) free(T->graph.edge_views[e]);
    free(T->ds.node_types), free(T->ds.edge_types), free(T->graph.node_views), free(T->graph.edge_views);
    free(T->count), free(T->type_name), free(T->etype), free(T->etype_name), free(T->draw_map);
    fs_typed_sampler_destroy(T->sampler);
    memset(T, 0, sizeof *T);
}

/* What follows the cluster's view: the shards' connections, the views. */
static void unbuild(cluster_t *K)
{
    typed_free(&K->typed);
    fs_cluster_conn_close(K->conn);
    free(K->tables);
    K->conn = NULL, K->tables = NULL;
}

static void cluster_close(fs_client_t *c)
{
    cluster_t *K = c->impl;
    if (!K) return;
    unbuild(K);
    if (K->cl) shared_put(K->key, K->cl);
    fs_sampler_destroy(K->sampler);
    fs_pool_destroy(K->pool);
    free(K);
    c->impl = NULL;
}

static int cluster_idle(fs_client_t *c)
{
    (void)c;
    return 1; /* batches own their memory */
}

/* The views: type 0's edge type picked by the shards, its tables gathered
 * from them; reads are counted as tier 0's. */
static fs_status_t make_views(cluster_t *K, fs_error_t *err)
{
    const fs_cluster_t *cl = K->cl;
    const fs_cluster_type_t *ty = &cl->types[0];
    K->graph = (fs_csr_view_t){.num_nodes = ty->count, .num_edges = cl->num_etypes ? cl->etypes[0].num_edges : 0,
                               .index_dtype = FS_DTYPE_I64, .num_parts = 1,
                               .remote = fs_cluster_conn_remote(K->conn)};
    if (!(K->tables = calloc((size_t)ty->num_tables + 1, sizeof *K->tables)))
        return fs_error(err, FS_ERR_NOMEM, "out of memory");
    for (int i = 0; i < ty->num_tables; i++) {
        const fs_cluster_table_t *tb = &ty->tables[i];
        K->tables[i] = (fs_table_view_t){.dtype = tb->dtype, .num_rows = ty->count, .dim = tb->dim,
                                         .row_bytes = tb->row_bytes, .num_tiers = 1,
                                         .remote = fs_cluster_conn_table(K->conn, 0, i), .codec = tb->codec};
        K->tables[i].tier[0] = (fs_tier_ref_t){.kind = FS_TIER_HOST, .device = -1};
    }
    K->limits.num_nodes = ty->count, K->limits.num_edges = K->graph.num_edges;
    return FS_OK;
}

/* A node type's tables as the dataset describes them, and as views read
 * from the shards. */
static fs_status_t typed_tables(cluster_t *K, int t, fs_error_t *err)
{
    const fs_cluster_type_t *ty = &K->cl->types[t];
    fs_node_type_t *nt = &K->typed.ds.node_types[t];
    fs_table_t *tabs = calloc((size_t)ty->num_tables + 1, sizeof *tabs);
    fs_table_view_t *views = calloc((size_t)ty->num_tables + 1, sizeof *views);
    nt->tables = tabs, K->typed.graph.node_views[t] = views;
    if (!tabs || !views) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    for (int i = 0; i < ty->num_tables; i++) {
        const fs_cluster_table_t *tb = &ty->tables[i];
        snprintf(tabs[i].name, sizeof tabs[i].name, "%s", tb->name);
        tabs[i].dtype = tb->dtype, tabs[i].rows = ty->count, tabs[i].dim = tb->dim, tabs[i].row_bytes = tb->row_bytes;
        tabs[i].codec = tb->codec;
        views[i] = (fs_table_view_t){.dtype = tb->dtype, .num_rows = ty->count, .dim = tb->dim,
                                     .row_bytes = tb->row_bytes, .num_tiers = 1,
                                     .remote = fs_cluster_conn_table(K->conn, t, i), .codec = tb->codec};
        views[i].tier[0] = (fs_tier_ref_t){.kind = FS_TIER_HOST, .device = -1};
    }
    nt->num_tables = ty->num_tables;
    return FS_OK;
}

/* The typed side of the connection (typed_t). */
static fs_status_t make_typed(cluster_t *K, fs_error_t *err)
{
    const fs_cluster_t *cl = K->cl;
    typed_t *T = &K->typed;
    int N = cl->num_types, E = cl->num_etypes;
    fs_dataset_t *ds = &T->ds;
    snprintf(ds->name, sizeof ds->name, "%s", cl->dataset);
    ds->version = 2, ds->num_node_types = N, ds->num_edge_types = E;
    ds->node_types = calloc((size_t)N, sizeof *ds->node_types);
    ds->edge_types = calloc((size_t)E + 1, sizeof *ds->edge_types);
    T->graph.node_views = calloc((size_t)N, sizeof *T->graph.node_views);
    T->graph.edge_views = calloc((size_t)E + 1, sizeof *T->graph.edge_views);
    T->count = calloc((size_t)N, sizeof *T->count), T->type_name = calloc((size_t)N, sizeof *T->type_name);
    T->etype = calloc((size_t)E + 1, sizeof *T->etype), T->etype_name = calloc((size_t)E + 1, sizeof *T->etype_name);
    if (!ds->node_types || !ds->edge_types || !T->graph.node_views || !T->graph.edge_views || !T->count ||
        !T->type_name || !T->etype || !T->etype_name)
        return fs_error(err, FS_ERR_NOMEM, "out of memory");
    T->graph.ds = ds;
    for (int t = 0; t < N; t++) {
        fs_node_type_t *nt = &ds->node_types[t];
        snprintf(nt->name, sizeof nt->name, "%s", cl->types[t].name);
        nt->count = T->count[t] = cl->types[t].count, nt->num_classes = cl->types[t].num_classes;
        T->type_name[t] = nt->name;
        fs_status_t st = typed_tables(K, t, err);
        if (st != FS_OK) return st;
    }
    for (int e = 0; e < E; e++) {
        const fs_cluster_etype_t *ce = &cl->etypes[e];
        fs_edge_type_t *x = &ds->edge_types[e];
        snprintf(x->src, sizeof x->src, "%s", ce->src), snprintf(x->rel, sizeof x->rel, "%s", ce->rel);
        snprintf(x->dst, sizeof x->dst, "%s", ce->dst);
        x->src_type = ce->src_type, x->dst_type = ce->dst_type, x->num_edges = ce->num_edges;
        if (!(T->graph.edge_views[e] = calloc(1, sizeof **T->graph.edge_views)))
            return fs_error(err, FS_ERR_NOMEM, "out of memory");
        snprintf(T->etype_name[e], sizeof T->etype_name[e], "(%s, %s, %s)", ce->src, ce->rel, ce->dst);
        T->etype[e] = (fs_typed_etype_t){.src_type = ce->src_type, .dst_type = ce->dst_type, .name = T->etype_name[e],
                                         .num_edges = ce->num_edges, .index_dtype = FS_DTYPE_I64,
                                         .reverse = ce->reverse, .remote = fs_cluster_conn_remote(K->conn)};
        x->reverse = ce->reverse;
    }
    if (!(T->draw_map = calloc((size_t)N, sizeof *T->draw_map))) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    for (int t = 0; t < N; t++) T->draw_map[t] = cl->types[t].global_of; /* negatives drawn in the trainer's ids */
    T->graph.graph.view = (fs_typed_view_t){.num_node_types = N, .count = T->count, .type_name = T->type_name,
                                            .num_edge_types = E, .etype = T->etype,
                                            .draw_map = (const int64_t *const *)T->draw_map,
                                            .remote_time = fs_cluster_conn_times(K->conn)};
    return fs_typed_sampler_create(&T->sampler, err); /* one thread: a remote pass is one call per shard */
}

static fs_status_t build(cluster_t *K, fs_error_t *err)
{
    fs_status_t st = fs_cluster_conn_open(K->cl, fs_cluster_local_hooks(), &K->conn, err);
    if (st == FS_OK) K->revision = fs_cluster_conn_revision(K->conn);
    if (st == FS_OK) st = make_views(K, err);
    return st == FS_OK ? make_typed(K, err) : st;
}

/* A shard said the map this connection routes by is stale: the map is read
 * again (fs_cluster_remap: the view's one mutable part, so the process's
 * other connections take it up when they hit it too) and the connection's
 * shards and views are rebuilt on it. */
static fs_status_t refresh(fs_client_t *c)
{
    cluster_t *K = c->impl;
    fs_error_t err = {0};
    fs_status_t st = fs_cluster_remap(K->cl, K->revision, &err);
    if (st == FS_OK) {
        unbuild(K);
        st = build(K, &err);
    }
    return st == FS_OK ? FS_OK : fs_client_fail(c, st, "%s", err.msg);
}

/* Whether a failed call was refused for a stale shard map (its shard's words). */
static int stale(const fs_client_t *c, fs_status_t st)
{
    return st == FS_ERR_NOT_FOUND && strstr(c->errstr, "stale shard map") != NULL;
}

/* Whether a failed call is worth once more: a shard said the map is stale
 * (then it is read again), or a shard could not be reached and the map has
 * moved on since (its parts may be elsewhere now: a shard answered in this
 * process never says stale, so a dead remote one is how the trainer learns).
 * An unreachable shard under an unchanged map keeps its error. */
static int retry(fs_client_t *c, fs_status_t st)
{
    if (stale(c, st)) return refresh(c) == FS_OK;
    if (st != FS_ERR_UNAVAILABLE && st != FS_ERR_TIMEOUT) return 0;
    cluster_t *K = c->impl;
    fs_error_t err = {0};
    if (fs_cluster_remap(K->cl, K->revision, &err) != FS_OK) return 0;
    pthread_mutex_lock(&K->cl->map_lock);
    int moved = K->cl->map.revision > K->revision;
    pthread_mutex_unlock(&K->cl->map_lock);
    if (!moved) return 0;
    unbuild(K);
    return build(K, &err) == FS_OK ? 1 : (fs_client_fail(c, err.code, "%s", err.msg), 0);
}

/* Before a call that routes: the connection on the newest map its cluster
 * holds. The watch installs each map as etcd's changes, so a call is not
 * first sent by a map known to be gone (a shard that died, moved or came
 * back at a new address). A rebuild that failed is tried again here, and
 * its error is the call's until one succeeds. */
static fs_status_t follow(fs_client_t *c)
{
    cluster_t *K = c->impl;
    pthread_mutex_lock(&K->cl->map_lock);
    int64_t now = K->cl->map.revision;
    pthread_mutex_unlock(&K->cl->map_lock);
    if (K->conn && now <= K->revision) return FS_OK;
    unbuild(K);
    fs_error_t err = {0};
    fs_status_t st = build(K, &err);
    if (st == FS_OK) return FS_OK;
    unbuild(K);
    return fs_client_fail(c, st, "%s", err.msg);
}

static const fs_transport_ops_t cluster_ops;

fs_status_t fs_cluster_connect(fs_client_t *c, const fs_addr_t *a)
{
    cluster_t *K = calloc(1, sizeof *K);
    if (!K) return fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    fs_error_t err = {0};
    snprintf(K->key, sizeof K->key, "%s/%s%s", a->target, a->cluster, a->map_file);
    fs_limits_default(&K->limits);
    fs_status_t st = shared_get(a, K->key, c->opts.timeout_ms, &K->cl, &err); /* the first connection's */
    if (st == FS_OK) st = fs_pool_create(c->opts.threads, &K->pool, &err);
    if (st == FS_OK) st = build(K, &err);
    if (st == FS_OK) st = fs_sampler_create(&K->sampler, &err);
    c->impl = K;
    if (st != FS_OK) {
        cluster_close(c);
        return fs_client_fail(c, st, "%s", err.msg);
    }
    c->ops = &cluster_ops;
    return FS_OK;
}

/* ---- homogeneous calls ----------------------------------------------------------- */

/* ---- batch memory, recycled ------------------------------------------------------------
 * A batch is tens of MB (its rows). Fresh heap memory per batch costs a
 * page fault and a zeroed page per 4 KiB, and growing it by realloc copies
 * what was written: together more CPU than a batch's sampling. So freed
 * batches' buffers are kept for the next ones (the process's, up to
 * HEAP_KEEP of them and HEAP_KEEP_BYTES in all), their pages still mapped:
 * a trainer's steady state allocates nothing. */
#define HEAP_KEEP 16
#define HEAP_KEEP_BYTES ((size_t)1 << 30)

static pthread_mutex_t heap_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    void *p;
    size_t cap;
} heap_kept[HEAP_KEEP];
static int heap_num;
static size_t heap_bytes;

/* The largest kept buffer, or NULL (*cap 0). */
static void *heap_take(size_t *cap)
{
    pthread_mutex_lock(&heap_mu);
    int best = -1;
    for (int i = 0; i < heap_num; i++)
        if (best < 0 || heap_kept[i].cap > heap_kept[best].cap) best = i;
    void *p = best >= 0 ? heap_kept[best].p : NULL;
    *cap = best >= 0 ? heap_kept[best].cap : 0;
    if (best >= 0) heap_bytes -= *cap, heap_kept[best] = heap_kept[--heap_num];
    pthread_mutex_unlock(&heap_mu);
    return p;
}

/* A batch's buffer back: kept while there is room, else freed. */
static void heap_give(void *p, size_t cap)
{
    if (!p) return;
    pthread_mutex_lock(&heap_mu);
    int keep = heap_num < HEAP_KEEP && heap_bytes + cap <= HEAP_KEEP_BYTES;
    if (keep) heap_kept[heap_num].p = p, heap_kept[heap_num++].cap = cap, heap_bytes += cap;
    pthread_mutex_unlock(&heap_mu);
    if (!keep) free(p);
}

static void release_batch(fs_batch_priv_t *p)
{
    heap_give(((cluster_batch_t *)p)->mem, p->region_len);
    free(p);
}

/* A batch's memory: the heap, grown as the executor asks. */
static fs_status_t heap_grow(fs_exec_region_t *r, size_t bytes, fs_error_t *err)
{
    if (bytes <= r->cap) return FS_OK;
    if (!r->base) { /* a freed batch's, the largest kept: too small, it goes (realloc would copy it) */
        r->base = heap_take(&r->cap);
        if (bytes <= r->cap) return FS_OK;
        free(r->base);
        r->base = NULL, r->cap = 0;
    }
    size_t cap = r->cap ? r->cap : 1 << 16;
    while (cap < bytes) cap *= 2;
    char *m = realloc(r->base, cap);
    if (!m) return fs_error(err, FS_ERR_NOMEM, "out of memory for a %zu-byte batch", bytes);
    r->base = m, r->cap = cap;
    return FS_OK;
}

static const fs_table_view_t *find_table(cluster_t *K, const char *name)
{
    const fs_cluster_type_t *ty = &K->cl->types[0];
    for (int i = 0; i < ty->num_tables; i++)
        if (strcmp(ty->tables[i].name, name) == 0) return &K->tables[i];
    return NULL;
}

static const char *table_name(const void *ctx, int i)
{
    return ((const fs_cluster_type_t *)ctx)->tables[i].name;
}

/* The one path behind sample, gather and sample_gather: the trainer's ids
 * to global ids, the executor on the shards' views, the nodes back. */
static fs_status_t run(fs_client_t *c, const int64_t *ids, int64_t n, const fs_sample_req_t *req, const char *table,
                       fs_dtype_t out_dtype, fs_batch_t **out)
{
    cluster_t *K = c->impl;
    const fs_cluster_type_t *ty = &K->cl->types[0];
    if (K->cl->num_types != 1 || K->cl->num_etypes != 1)
        return fs_client_fail(c, FS_ERR_UNSUPPORTED, "dataset '%s' is a typed graph: sample it with fs_hetero_sample "
                              "(fs_gather and fs_sample take one node and one edge type)", K->cl->dataset);
    fs_error_t err = {0};
    fs_exec_reads_t reads = {0};
    fs_exec_t x = {.limits = &K->limits, .reads = &reads, .pool = K->pool, .graph = &K->graph, .device = -1,
                   .no_las = "a cluster trainer has no preferred sets (locality-aware sampling needs a placement)",
                   .sampler = K->sampler};
    fs_exec_req_t r = {.n = n, .sample = req};
    fs_exec_region_t into = {.grow = heap_grow};
    fs_exec_result_t res;
    int64_t *global = malloc(sizeof *global * (size_t)(n + 1));
    fs_status_t st = global ? FS_OK : fs_error(&err, FS_ERR_NOMEM, "out of memory");
    if (st == FS_OK && table && !(r.table = find_table(K, table)))
        st = fs_table_not_found(&err, K->cl->dataset, "feature", table, ty->num_tables, table_name, ty);
    int64_t dim;
    if (st == FS_OK && table)
        st = fs_codec_served(r.table->codec, r.table->dtype, r.table->dim, out_dtype, table, &r.dtype, &dim, &err);
    if (st == FS_OK) st = fs_cluster_to_global(K->cl, 0, ids, n, global, &err);
    r.ids = global;
    if (st == FS_OK) st = fs_exec_run(&x, &r, &into, &res, &err);
    cluster_batch_t *b = st == FS_OK ? calloc(1, sizeof *b) : NULL;
    if (st == FS_OK && !b) st = fs_error(&err, FS_ERR_NOMEM, "out of memory");
    free(global);
    if (st != FS_OK) {
        heap_give(into.base, into.cap);
        return fs_client_fail(c, st, "%s", err.msg);
    }
    fs_batch_t *p = &b->priv.pub;
    p->features_device = -1;
    if (req) {
        const fs_sample_result_t *s = &res.sample;
        fs_cluster_to_source(K->cl, 0, (int64_t *)s->nodes, s->num_nodes); /* in the batch's memory */
        memcpy(b->priv.blocks, s->block, sizeof s->block[0] * (size_t)s->num_hops);
        p->kind |= FS_BATCH_SAMPLE;
        p->blocks = b->priv.blocks, p->num_hops = s->num_hops;
        p->num_nodes = s->num_nodes, p->nodes = s->nodes, p->num_seeds = s->num_seeds, p->seed_local = s->seed_local;
    }
    if (r.table) {
        p->kind |= FS_BATCH_GATHER;
        p->features = res.rows, p->rows = res.num_rows, p->dim = fs_exec_row_dim(&r), p->dtype = r.dtype;
    }
    b->mem = into.base;
    b->priv.release = release_batch;
    b->priv.region = into.base, b->priv.region_len = into.cap;
    *out = p;
    return FS_OK;
}

/* st, a call counted when it made a batch (the trainer's metrics) */
static fs_status_t counted(fs_client_t *c, fs_status_t st)
{
    cluster_t *K = c->impl;
    if (st == FS_OK) __atomic_fetch_add(&K->cl->counts.calls, 1, __ATOMIC_RELAXED);
    return st;
}

/* run, and once more when retry says so */
static fs_status_t run_current(fs_client_t *c, const int64_t *ids, int64_t n, const fs_sample_req_t *req,
                               const char *table, fs_dtype_t out_dtype, fs_batch_t **out)
{
    fs_status_t st = follow(c);
    if (st == FS_OK) st = run(c, ids, n, req, table, out_dtype, out);
    if (st != FS_OK && retry(c, st)) st = run(c, ids, n, req, table, out_dtype, out);
    return counted(c, st);
}

static fs_status_t cluster_sample(fs_client_t *c, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
                                  fs_batch_t **out)
{
    return run_current(c, seeds, n, req, NULL, FS_DTYPE_INVALID, out);
}

static fs_status_t cluster_gather(fs_client_t *c, const int64_t *ids, int64_t n, const char *table, fs_dtype_t dt,
                                  fs_batch_t **out)
{
    return run_current(c, ids, n, NULL, table, dt, out);
}

static fs_status_t cluster_sample_gather(fs_client_t *c, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
                                         const char *table, fs_dtype_t dt, fs_batch_t **out)
{
    return run_current(c, seeds, n, req, table, dt, out);
}

static void release_hetero(fs_hetero_priv_t *p)
{
    free(p->index_mem);
    heap_give((void *)p->region, p->region_len);
    free(p);
}

static int node_type_of(const fs_cluster_t *cl, const char *name)
{
    for (int t = 0; name && t < cl->num_types; t++)
        if (strcmp(cl->types[t].name, name) == 0) return t;
    return -1;
}

/* The groups with their ids as global ids (a group of an unknown type is
 * left for the executor to name). ids: room for every group's. */
static fs_status_t map_groups(const fs_cluster_t *cl, const fs_hetero_seeds_t *groups, size_t n, fs_hetero_seeds_t *out,
                              int64_t *ids, fs_error_t *err)
{
    for (size_t g = 0; g < n; g++) {
        int t = node_type_of(cl, groups[g].type);
        out[g] = groups[g];
        if (t < 0 || groups[g].count < 0 || (groups[g].count && !groups[g].ids)) continue;
        fs_status_t st = fs_cluster_to_global(cl, t, groups[g].ids, groups[g].count, ids, err);
        if (st != FS_OK) {
            fs_error_prefix(err, "seed group %zu", g);
            return st;
        }
        out[g].ids = ids, ids += groups[g].count;
    }
    return FS_OK;
}

/* A link request with its seed edges' ids as global ids (ids: room for
 * 2 x count); an unknown edge type is left for the executor to name. */
static fs_status_t map_link(const fs_cluster_t *cl, const fs_link_req_t *in, fs_link_req_t *out, int64_t *ids,
                            fs_error_t *err)
{
    *out = *in;
    int e = -1;
    for (int i = 0; in->src && in->rel && in->dst && i < cl->num_etypes; i++)
        if (!strcmp(cl->etypes[i].src, in->src) && !strcmp(cl->etypes[i].rel, in->rel) &&
            !strcmp(cl->etypes[i].dst, in->dst))
            e = i;
    if (e < 0 || in->count <= 0 || !in->src_ids || !in->dst_ids) return FS_OK;
    fs_status_t st = fs_cluster_to_global(cl, cl->etypes[e].src_type, in->src_ids, in->count, ids, err);
    if (st == FS_OK) st = fs_cluster_to_global(cl, cl->etypes[e].dst_type, in->dst_ids, in->count, ids + in->count, err);
    if (st != FS_OK) {
        fs_error_prefix(err, "seed edges");
        return st;
    }
    out->src_ids = ids, out->dst_ids = ids + in->count;
    return FS_OK;
}

/* A typed batch through the executor on the shards' views, into the heap,
 * its nodes then mapped back to the trainer's ids in place. */
static fs_status_t hetero(fs_client_t *c, const fs_hetero_seeds_t *groups, size_t num_groups,
                          const fs_link_req_t *link, const fs_hetero_req_t *req, fs_hetero_batch_t **out)
{
    cluster_t *K = c->impl;
    fs_error_t err = {0};
    int64_t total = 0;
    for (size_t g = 0; g < num_groups; g++) total += groups[g].count > 0 ? groups[g].count : 0;
    if (link) total += 2 * (link->count > 0 ? link->count : 0);
    fs_hetero_seeds_t *mapped = calloc(num_groups + 1, sizeof *mapped);
    int64_t *ids = malloc(sizeof *ids * (size_t)(total + 1));
    fs_link_req_t lk;
    fs_status_t st = mapped && ids ? map_groups(K->cl, groups, num_groups, mapped, ids, &err)
                                   : fs_error(&err, FS_ERR_NOMEM, "out of memory");
    if (st == FS_OK && link) st = map_link(K->cl, link, &lk, ids + total - 2 * link->count, &err);
    fs_exec_reads_t reads = {0};
    fs_exec_t x = {.limits = &K->limits, .reads = &reads, .pool = K->pool, .device = -1, .typed = &K->typed.graph,
                   .typed_sampler = K->typed.sampler};
    fs_exec_region_t into = {.grow = heap_grow};
    size_t len = 0;
    fs_hetero_index_t ix;
    if (st == FS_OK) st = fs_exec_typed(&x, link ? NULL : mapped, num_groups, link ? &lk : NULL, req, 1, &into, &len, &err);
    if (st == FS_OK) st = fs_hetero_index(into.base, len, 0, &ix, &err);
    fs_hetero_priv_t *b = st == FS_OK ? calloc(1, sizeof *b) : NULL;
    if (st == FS_OK && !b) {
        fs_hetero_index_free(&ix);
        st = fs_error(&err, FS_ERR_NOMEM, "out of memory");
    }
    free(mapped), free(ids);
    if (st != FS_OK) {
        heap_give(into.base, into.cap);
        return fs_client_fail(c, st, "%s", err.msg);
    }
    for (int t = 0; t < K->cl->num_types && t < ix.batch.num_node_types; t++) /* in the batch's own memory */
        fs_cluster_to_source(K->cl, t, (int64_t *)ix.batch.types[t].nodes, ix.batch.types[t].num_nodes);
    *b = (fs_hetero_priv_t){.pub = ix.batch, .index_mem = ix.mem, .release = release_hetero, .region = into.base,
                            .region_len = into.cap};
    *out = &b->pub;
    return FS_OK;
}

static fs_status_t cluster_hetero(fs_client_t *c, const fs_hetero_seeds_t *groups, size_t num_groups,
                                  const fs_link_req_t *link, const fs_hetero_req_t *req, fs_hetero_batch_t **out)
{
    fs_status_t st = follow(c);
    if (st == FS_OK) st = hetero(c, groups, num_groups, link, req, out);
    if (st != FS_OK && retry(c, st)) st = hetero(c, groups, num_groups, link, req, out);
    return counted(c, st);
}

/* ---- splits, info, stats -------------------------------------------------------------- */

static void release_ids(fs_ids_priv_t *p)
{
    free((void *)p->pub.ids);
    free(p);
}

/* "NAME" (the only node type's), "TYPE/NAME" or "link/NAME/ARRAY", as the
 * book's split files. */
/* The node type of split `name` ("NAME": type 0, "TYPE/NAME"), or
 * num_types when no type has that name. */
static int split_type(const fs_cluster_t *cl, const char *name)
{
    const char *slash = strchr(name, '/');
    int t = 0;
    while (slash && t < cl->num_types && (strlen(cl->types[t].name) != (size_t)(slash - name) ||
                                          strncmp(cl->types[t].name, name, slash - name) != 0))
        t++;
    return t;
}

static fs_status_t cluster_split(fs_client_t *c, const char *name, fs_ids_t **out)
{
    cluster_t *K = c->impl;
    const fs_cluster_t *cl = K->cl;
    const char *slash = strchr(name, '/');
    int t = 0, link = strncmp(name, "link/", 5) == 0;
    char lname[FS_SPLIT_NAME_MAX + 1] = "";
    const char *array = NULL;
    if (link) { /* link/NAME/ARRAY */
        const char *last = strrchr(name, '/');
        if (last == name + 4 || (size_t)(last - name - 5) >= sizeof lname)
            return fs_client_fail(c, FS_ERR_NOT_FOUND, "split '%s': expected link/NAME/ARRAY", name);
        snprintf(lname, sizeof lname, "%.*s", (int)(last - name - 5), name + 5);
        array = last + 1;
    } else if (slash) {
        if ((t = split_type(cl, name)) == cl->num_types)
            return fs_client_fail(c, FS_ERR_NOT_FOUND, "split '%s': cluster %s has no such node type", name, cl->name);
    }
    fs_error_t err = {0};
    int64_t *ids, n;
    fs_status_t st = link ? fs_cluster_link_array(cl, lname, array, &ids, &n, &err)
                          : fs_cluster_split(cl, t, slash ? slash + 1 : name, &ids, &n, &err);
    fs_ids_priv_t *p = st == FS_OK ? calloc(1, sizeof *p) : NULL;
    if (st == FS_OK && !p) {
        free(ids);
        st = fs_error(&err, FS_ERR_NOMEM, "out of memory");
    }
    if (st != FS_OK) return fs_client_fail(c, st, "%s", err.msg);
    p->release = release_ids;
    p->pub.ids = ids, p->pub.n = n;
    *out = &p->pub;
    return FS_OK;
}

/* fs_split_local: the split, then the ids a shard on this machine holds,
 * in order (ids are moved down in place). */
static fs_status_t cluster_split_local(fs_client_t *c, const char *name, fs_ids_t **out)
{
    cluster_t *K = c->impl;
    const fs_cluster_t *cl = K->cl;
    if (strncmp(name, "link/", 5) == 0)
        return fs_client_fail(c, FS_ERR_UNSUPPORTED, "split '%s': a link split's arrays have no local share (their "
                              "edges' ends may be on two machines): use fs_split", name);
    fs_status_t fst = follow(c); /* this machine's shards as the map has them now */
    if (fst != FS_OK) return fst;
    if (fs_cluster_conn_num_local(K->conn) == 0)
        return fs_client_fail(c, FS_ERR_NOT_FOUND, "split '%s': none of cluster %s's shards is on this machine (a "
                              "shard is when it has a --socket this process can reach on the same kernel and "
                              "network namespace)", name, cl->name);
    fs_status_t st = cluster_split(c, name, out);
    if (st != FS_OK) return st;
    int t = split_type(cl, name); /* a known one: cluster_split found it */
    fs_ids_t *ids = *out;
    int64_t *v = (int64_t *)ids->ids, kept = 0, g;
    fs_error_t err = {0};
    for (int64_t i = 0; i < ids->n; i++)
        if (fs_cluster_to_global(cl, t, &v[i], 1, &g, &err) == FS_OK && fs_cluster_conn_is_local(K->conn, t, g))
            v[kept++] = v[i];
    ids->n = kept;
    return FS_OK;
}

/* Each id's owning shard (fs_split_by_owner and fs_batch_micrographs),
 * with the map's shard ids: ids of a node type (NULL: the only one) go to
 * global ids, their parts, and the parts' shards. `fresh`: by etcd's map as
 * it is now (a shard that died since shows): the one held while the watch
 * keeps it (fs_cluster_watch.h), else read anew (etcd's or the file's);
 * else by the one this process holds. A part no shard holds (its shard is down) is
 * FS_ERR_UNAVAILABLE naming the id. */
static fs_status_t cluster_owners(fs_client_t *c, const char *node_type, const int64_t *ids, int64_t n, int fresh,
                                  int *owner, int **shards, int *num_shards, int64_t *revision)
{
    cluster_t *K = c->impl;
    fs_cluster_t *cl = K->cl;
    int t = node_type ? node_type_of(cl, node_type) : 0;
    if (t < 0) return fs_client_fail(c, FS_ERR_NOT_FOUND, "cluster %s has no node type '%s'", cl->name, node_type);
    if (!node_type && cl->num_types > 1)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "cluster %s has %d node types: name the seeds' type",
                              cl->name, cl->num_types);
    fs_error_t err = {0};
    fs_status_t st = fresh && !fs_cluster_watching(cl->watch) ? fs_cluster_remap(cl, K->revision, &err) : FS_OK;
    if (st == FS_ERR_UNAVAILABLE) st = FS_OK; /* a part without a shard: the seeds' own check names theirs */
    if (st != FS_OK) return fs_client_fail(c, st, "%s", err.msg);
    pthread_mutex_lock(&cl->map_lock);
    for (int64_t i = 0; i < n && st == FS_OK; i++) {
        int64_t g;
        if ((st = fs_cluster_to_global(cl, t, &ids[i], 1, &g, &err)) != FS_OK) {
            fs_error(&err, st, "id %lld (position %lld) is not a node of type %s (0..%lld)", (long long)ids[i],
                     (long long)i, cl->types[t].name, (long long)cl->types[t].count - 1);
            break;
        }
        int p = fs_route_part_of(cl->types[t].first, cl->parts, g);
        owner[i] = p < 0 ? -1 : cl->map.owner[p];
        if (owner[i] < 0)
            st = fs_error(&err, FS_ERR_UNAVAILABLE, "node %lld (position %lld) is in part %d, which no shard of "
                          "cluster %s holds now (its shard is down)", (long long)ids[i], (long long)i, p, cl->name);
    }
    *num_shards = cl->map.num_shards, *revision = cl->map.revision;
    if (st == FS_OK && !(*shards = malloc(((size_t)*num_shards + 1) * sizeof **shards)))
        st = fs_error(&err, FS_ERR_NOMEM, "out of memory");
    for (int k = 0; st == FS_OK && k < *num_shards; k++) (*shards)[k] = cl->map.shard[k].id;
    pthread_mutex_unlock(&cl->map_lock);
    return st == FS_OK ? FS_OK : fs_client_fail(c, st, "%s", err.msg);
}

static void cluster_count_hopgnn(fs_client_t *c, int64_t pairs, int64_t colocated, int64_t requested, int64_t rows)
{
    fs_cluster_count_hopgnn(((cluster_t *)c->impl)->cl, pairs, colocated, requested, rows);
}

/* A table as a gather serves it by default; `listed`: with its stored form
 * when compressed (the version-1 tables). */
static int add_table(fs_info_t *info, fs_table_info_t *t, const fs_cluster_table_t *tb, int64_t rows, int listed)
{
    return fs_info_set_table(info, t, tb->name, tb->dtype, rows, tb->dim, tb->codec, listed);
}

/* The cluster as one dataset: the book's types and tables. */
static int fill_info(const fs_cluster_t *cl, fs_info_t *info)
{
    const fs_cluster_type_t *ty0 = &cl->types[0];
    int bad = fs_info_set_text(&info->server_version, FS_LIB_VERSION) || fs_info_set_text(&info->dataset, cl->dataset);
    info->typed = cl->num_types != 1 || cl->num_etypes != 1;
    if (!info->typed) /* the version-1 fields: a typed graph leaves them empty */
        info->num_nodes = ty0->count, info->num_classes = ty0->num_classes, info->num_edges = cl->etypes[0].num_edges,
        info->weighted = cl->etypes[0].weighted;
    for (int i = 0; !bad && !info->typed && i < ty0->num_tables; i++)
        bad = add_table(info, fs_info_add_table(info), &ty0->tables[i], ty0->count, 1);
    for (int i = 0; !bad && !info->typed && i < ty0->num_splits; i++) {
        const char **s = fs_info_add_split(info);
        bad = !s || fs_info_set_text(s, ty0->splits[i].name);
    }
    for (int t = 0; !bad && t < cl->num_types; t++) {
        const fs_cluster_type_t *ty = &cl->types[t];
        fs_node_type_info_t *nt = fs_info_add_node_type(info);
        bad = !nt || fs_info_set_text(&nt->name, ty->name);
        if (bad) break;
        nt->count = ty->count, nt->num_classes = ty->num_classes, nt->timed = ty->timed;
        for (int i = 0; !bad && i < ty->num_tables; i++)
            bad = add_table(info, fs_info_add_node_type_table(nt), &ty->tables[i], ty->count, 0);
        for (int i = 0; !bad && i < ty->num_splits; i++) {
            const char **s = fs_info_add_node_type_split(nt);
            bad = !s || fs_info_set_text(s, ty->splits[i].name);
        }
    }
    for (int i = 0; !bad && i < cl->num_links; i++) {
        const fs_cluster_link_t *l = &cl->links[i];
        fs_link_split_info_t *li = fs_info_add_link_split(info);
        bad = !li || fs_info_set_text(&li->name, l->name);
        if (!bad)
            li->edge_type = l->etype, li->count = l->count, li->labelled = l->file[2][0] != 0,
            li->timed = l->file[3][0] != 0, li->num_neg = l->num_neg;
    }
    for (int e = 0; !bad && e < cl->num_etypes; e++) {
        const fs_cluster_etype_t *et = &cl->etypes[e];
        fs_edge_type_info_t *ei = fs_info_add_edge_type(info);
        bad = !ei || fs_info_set_text(&ei->src, et->src) || fs_info_set_text(&ei->rel, et->rel) ||
              fs_info_set_text(&ei->dst, et->dst);
        if (!bad)
            ei->num_edges = et->num_edges, ei->weighted = et->weighted, ei->timed = et->timed, ei->reverse = et->reverse;
    }
    return bad ? -1 : 0;
}

static fs_status_t cluster_info(fs_client_t *c, fs_info_t **out)
{
    cluster_t *K = c->impl;
    fs_info_t *info = fs_info_new();
    if (!info || fill_info(K->cl, info)) {
        fs_info_free(info);
        return fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    }
    *out = info;
    return FS_OK;
}

/* This trainer's counters, then the cluster's metrics (fs_cluster_stats),
 * by the map this process holds. */
static fs_status_t cluster_stats(fs_client_t *c, char **text)
{
    cluster_t *K = c->impl;
    fs_shard_map_t m;
    fs_cluster_counts_t mine;
    fs_error_t err = {0};
    fs_cluster_counts(K->cl, &mine);
    pthread_mutex_lock(&K->cl->map_lock);
    fs_status_t st = fs_shard_map_copy(&K->cl->map, &m, &err);
    pthread_mutex_unlock(&K->cl->map_lock);
    if (st == FS_OK) {
        st = fs_cluster_stats(&m, &mine, K->cl->timeout_ms, text, &err);
        fs_shard_map_free(&m);
    }
    return st == FS_OK ? FS_OK : fs_client_fail(c, st, "%s", err.msg);
}

static const fs_transport_ops_t cluster_ops = {
    .name = "etcd",
    .in_process = 1,
    .info = cluster_info,
    .sample = cluster_sample,
    .gather = cluster_gather,
    .sample_gather = cluster_sample_gather,
    .stats = cluster_stats,
    .split = cluster_split,
    .split_local = cluster_split_local,
    .owners = cluster_owners,
    .count_hopgnn = cluster_count_hopgnn,
    .hetero = cluster_hetero,
    .close = cluster_close,
    .idle = cluster_idle,
};
