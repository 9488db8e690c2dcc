/* engine.c — see engine.h. Each call builds the executor's fs_exec_t for
 * the CPU reader of the store it holds, runs the stages, and records what
 * they read in that store. */
#include "engine.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "argsort.h"
#include "fs_info.h"
#include "hotness.h"

struct fs_engine {
    const fs_dataset_t *ds;
    fs_limits_t limits;
    pthread_mutex_t mu;   /* guards store and generation: held for a pointer swap, never for a request */
    fs_store_t *store;
    uint64_t generation;
    fs_exec_typed_graph_t typed; /* the typed graph typed calls sample (fs_engine_typed) */
    const struct fs_disk_tables *disk;
    /* the hot list (fs_engine_hot), made at its first use under hot_mu */
    pthread_mutex_t hot_mu;
    int64_t *hot_order, hot_len;
    int32_t *hot_rank;
};

fs_status_t fs_engine_create(const fs_dataset_t *ds, fs_store_t *store, const fs_limits_t *limits, fs_engine_t **out,
                             fs_error_t *err)
{
    fs_engine_t *e = calloc(1, sizeof *e);
    if (!e) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    e->ds = ds;
    e->store = fs_store_retain(store);
    e->generation = 1;
    pthread_mutex_init(&e->mu, NULL);
    pthread_mutex_init(&e->hot_mu, NULL);
    if (limits) e->limits = *limits;
    else fs_limits_default(&e->limits);
    e->limits.num_nodes = ds->num_nodes, e->limits.num_edges = ds->num_edges; /* bound each request's worst case */
    fs_status_t st = fs_exec_typed_graph_init(&e->typed, ds, err);
    if (st != FS_OK) {
        fs_engine_destroy(e);
        return st;
    }
    *out = e;
    return FS_OK;
}

void fs_engine_destroy(fs_engine_t *e)
{
    if (!e) return;
    fs_store_destroy(e->store);
    fs_exec_typed_graph_free(&e->typed);
    pthread_mutex_destroy(&e->mu);
    pthread_mutex_destroy(&e->hot_mu);
    free(e->hot_order), free(e->hot_rank);
    free(e);
}

const fs_limits_t *fs_engine_limits(const fs_engine_t *e) { return &e->limits; }
const fs_dataset_t *fs_engine_dataset(const fs_engine_t *e) { return e->ds; }
void fs_engine_set_disk_tables(fs_engine_t *e, const struct fs_disk_tables *disk) { e->disk = disk; }
const struct fs_disk_tables *fs_engine_disk_tables(const fs_engine_t *e) { return e->disk; }

/* The hot list from one in-degree count and its sort (placement/hotness.h,
 * argsort.h: ties by ascending id, as `featstore partition`'s). */
static fs_status_t make_hot(fs_engine_t *e, fs_error_t *err)
{
    const fs_dataset_t *ds = e->ds;
    int64_t n = ds->num_nodes, len = FS_HOT_LIST_LEN(n);
    if (len > INT32_MAX - 1) len = INT32_MAX - 1; /* ranks are int32 */
    double *p = malloc((size_t)(n ? n : 1) * sizeof *p);
    int64_t *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    int32_t *rank = malloc((size_t)(n ? n : 1) * sizeof *rank);
    fs_csr_ref_t g = {.num_nodes = n, .indptr = ds->indptr, .indices = ds->indices, .index_dtype = ds->index_dtype};
    fs_status_t st = p && order && rank ? FS_OK : fs_error(err, FS_ERR_NOMEM, "out of memory for the hot list of "
                                                           "%lld nodes", (long long)n);
    if (st == FS_OK) st = fs_hotness_degree(&g, 0, p, err);
    if (st == FS_OK) st = fs_argsort_desc(p, n, 0, order, err);
    free(p);
    if (st != FS_OK) {
        free(order), free(rank);
        return st;
    }
    for (int64_t v = 0; v < n; v++) rank[v] = INT32_MAX;
    for (int64_t k = 0; k < len; k++) rank[order[k]] = (int32_t)k;
    int64_t *kept = realloc(order, (size_t)(len ? len : 1) * sizeof *order); /* the list alone */
    e->hot_order = kept ? kept : order;
    e->hot_rank = rank, e->hot_len = len;
    return FS_OK;
}

fs_status_t fs_engine_hot(fs_engine_t *e, const int64_t **order, int64_t *len, const int32_t **rank,
                          fs_error_t *err)
{
    if (fs_dataset_is_typed(e->ds))
        return fs_error(err, FS_ERR_UNSUPPORTED, "the hot list is a homogeneous graph's: this dataset is typed");
    pthread_mutex_lock(&e->hot_mu);
    fs_status_t st = e->hot_rank ? FS_OK : make_hot(e, err);
    pthread_mutex_unlock(&e->hot_mu);
    if (st != FS_OK) return st;
    if (order) *order = e->hot_order;
    if (len) *len = e->hot_len;
    *rank = e->hot_rank;
    return FS_OK;
}

fs_store_t *fs_engine_acquire(fs_engine_t *e, uint64_t *generation)
{
    pthread_mutex_lock(&e->mu);
    fs_store_t *s = fs_store_retain(e->store);
    if (generation) *generation = e->generation;
    pthread_mutex_unlock(&e->mu);
    return s;
}

uint64_t fs_engine_replace_store(fs_engine_t *e, fs_store_t *store)
{
    pthread_mutex_lock(&e->mu);
    fs_store_t *old = e->store;
    e->store = store;
    uint64_t g = ++e->generation;
    pthread_mutex_unlock(&e->mu);
    fs_store_destroy(old);
    return g;
}

static int add_tiers(fs_info_t *info, const fs_store_t *store)
{
    for (int k = 0; k < fs_store_num_tiers(store); k++) {
        fs_store_tier_t ti;
        fs_store_tier_info(store, k, &ti);
        fs_tier_info_t *t = fs_info_add_tier(info);
        if (!t || fs_info_set_text(&t->kind, fs_tier_kind_name(ti.kind)) != 0) return -1;
        t->device = ti.device;
        t->capacity_bytes = ti.capacity;
        t->used_bytes = ti.used;
    }
    return 0;
}

/* A table as a gather serves it by default; `listed`: with its stored form
 * when compressed (the version-1 tables). */
static int add_table(fs_info_t *info, fs_table_info_t *t, const fs_table_t *src, int listed)
{
    return fs_info_set_table(info, t, src->name, src->dtype, src->rows, src->dim, src->codec, listed);
}

static int add_node_type(fs_info_t *info, const fs_node_type_t *src)
{
    fs_node_type_info_t *t = fs_info_add_node_type(info);
    if (!t || fs_info_set_text(&t->name, src->name)) return -1;
    t->count = src->count;
    t->num_classes = src->num_classes;
    t->timed = src->time != NULL;
    for (int i = 0; i < src->num_tables; i++)
        if (add_table(info, fs_info_add_node_type_table(t), &src->tables[i], 0)) return -1;
    for (int i = 0; i < src->num_splits; i++) {
        const char **name = fs_info_add_node_type_split(t);
        if (!name || fs_info_set_text(name, src->splits[i].name)) return -1;
    }
    return 0;
}

static int add_edge_type(fs_info_t *info, const fs_edge_type_t *src)
{
    fs_edge_type_info_t *e = fs_info_add_edge_type(info);
    if (!e || fs_info_set_text(&e->src, src->src) || fs_info_set_text(&e->rel, src->rel) ||
        fs_info_set_text(&e->dst, src->dst))
        return -1;
    e->num_edges = src->num_edges;
    e->weighted = src->weights != NULL;
    e->timed = src->time != NULL;
    e->reverse = src->reverse;
    for (int i = 0; i < src->num_tables; i++)
        if (add_table(info, fs_info_add_edge_type_table(e), &src->tables[i], 0)) return -1;
    return 0;
}

/* The graph's types (a version-1 dataset: its one node and one edge type). */
static int add_types(fs_info_t *info, const fs_dataset_t *ds)
{
    info->typed = fs_dataset_is_typed(ds);
    for (int i = 0; i < ds->num_node_types; i++)
        if (add_node_type(info, &ds->node_types[i])) return -1;
    for (int i = 0; i < ds->num_edge_types; i++)
        if (add_edge_type(info, &ds->edge_types[i])) return -1;
    for (int i = 0; i < ds->num_link_splits; i++) {
        const fs_link_split_t *src = &ds->link_splits[i];
        fs_link_split_info_t *l = fs_info_add_link_split(info);
        if (!l || fs_info_set_text(&l->name, src->name)) return -1;
        l->edge_type = src->edge_type;
        l->count = src->count;
        l->labelled = src->label != NULL;
        l->timed = src->time != NULL;
        l->num_neg = src->neg_dst ? src->num_neg : 0;
    }
    return 0;
}

static int add_dataset(fs_info_t *info, const fs_dataset_t *ds)
{
    if (fs_info_set_text(&info->server_version, FS_SERVER_VERSION) || fs_info_set_text(&info->dataset, ds->name))
        return -1;
    info->num_nodes = ds->num_nodes;
    info->num_edges = ds->num_edges;
    info->symmetric = ds->symmetric;
    info->weighted = ds->edge_weights != NULL;
    info->num_classes = ds->num_classes;
    for (int i = 0; i < ds->num_tables; i++)
        if (add_table(info, fs_info_add_table(info), &ds->tables[i], 1)) return -1;
    for (int i = 0; i < fs_dataset_num_row_tables(ds); i++) {
        const char **name = fs_info_add_row_table(info);
        const fs_table_t *t = fs_dataset_row_table(ds, i);
        if (!name || fs_info_set_text(name, t->name) || add_table(info, fs_info_add_table(info), t, 1)) return -1;
    }
    for (int i = 0; ds->propagation && i < ds->propagation->num_row_splits; i++) {
        const fs_row_split_t *src = &ds->propagation->row_splits[i];
        fs_row_split_info_t *r = fs_info_add_row_split(info);
        if (!r || fs_info_set_text(&r->name, src->name)) return -1;
        r->offset = src->offset, r->count = src->count;
    }
    for (int i = 0; i < ds->num_splits; i++) {
        const char **name = fs_info_add_split(info);
        if (!name || fs_info_set_text(name, ds->splits[i].name)) return -1;
    }
    return add_types(info, ds);
}

/* The homogeneous calls read the version-1 fields, which a typed dataset
 * leaves empty. */
static fs_status_t need_one_graph(const fs_engine_t *e, fs_error_t *err)
{
    const fs_dataset_t *ds = e->ds;
    if (!fs_dataset_is_typed(ds)) return FS_OK;
    return fs_error(err, FS_ERR_UNSUPPORTED, "dataset '%s' is typed (%d node types, %d edge types): use "
                    "HeteroSample/fs_hetero_sample (or LinkSample/fs_link_sample), which name node and edge types",
                    ds->name, ds->num_node_types, ds->num_edge_types);
}

fs_status_t fs_engine_info(fs_engine_t *e, fs_info_t **out, fs_error_t *err)
{
    fs_info_t *info = fs_info_new();
    int failed = !info || add_dataset(info, e->ds) != 0;
    if (!failed) {
        fs_store_t *store = fs_engine_acquire(e, &info->placement_generation);
        failed = add_tiers(info, store) != 0;
        fs_store_destroy(store);
    }
    if (failed) {
        fs_info_free(info);
        *out = NULL;
        return fs_error(err, FS_ERR_NOMEM, "out of memory describing the server");
    }
    *out = info;
    return FS_OK;
}

fs_status_t fs_engine_split(const fs_engine_t *e, const char *name, const fs_idset_t **out, fs_error_t *err)
{
    return fs_dataset_find_split(fs_engine_dataset(e), name, out, err); /* NOT_FOUND lists what there is */
}

fs_status_t fs_engine_table(const fs_engine_t *e, const char *table, fs_dtype_t *out_dtype, size_t *out_row_bytes,
                            int64_t *dim, fs_error_t *err)
{
    fs_status_t st = need_one_graph(e, err);
    if (st != FS_OK) return st;
    const fs_table_t *t = fs_dataset_served_table(e->ds, table); /* a labelled layout's row tables too */
    if (!t) return fs_dataset_table_not_found(e->ds, table, err);
    st = fs_codec_served(t->codec, t->dtype, t->dim, *out_dtype, table, out_dtype, dim, err);
    if (st == FS_OK) *out_row_bytes = (size_t)*dim * fs_dtype_size(*out_dtype);
    return st;
}

/* ---- the executor's host ------------------------------------------------------- */

/* Why a boost cannot be had here (fs_exec_t.no_las). */
#define NO_LAS "locality-aware sampling needs a placement and a reader GPU; a remote (gRPC) trainer reads as the " \
               "CPU, which has no GPU rows to prefer: send locality 0, or run the trainer on the server's machine " \
               "over unix:// with device \"gpu:N\""

/* The executor as the server hosts it: the CPU reader, whose reads go to
 * *reads until record() puts them in the store read from. */
static fs_exec_t exec_of(const fs_engine_t *e, fs_exec_reads_t *reads)
{
    return (fs_exec_t){.limits = &e->limits, .reads = reads, .device = -1, .no_las = NO_LAS, .typed = &e->typed};
}

static void record(fs_store_t *store, const fs_exec_reads_t *reads)
{
    fs_store_count(store, FS_READER_CPU, &reads->features);
    fs_store_count_topology(store, FS_READER_CPU, &reads->topology);
}

fs_status_t fs_engine_sample(fs_engine_t *e, fs_sampler_t *s, const int64_t *seeds, int64_t n,
                             const fs_sample_req_t *req, const char *table, fs_dtype_t dtype, fs_sample_result_t *res,
                             fs_error_t *err)
{
    fs_status_t st = need_one_graph(e, err);
    if (st != FS_OK) return st;
    fs_exec_reads_t reads = {0};
    fs_exec_t x = exec_of(e, &reads);
    fs_csr_view_t g;
    fs_table_view_t rows;
    fs_exec_req_t r = {.ids = seeds, .n = n, .sample = req, .table = table ? &rows : NULL, .dtype = dtype};
    fs_store_t *store = fs_engine_acquire(e, NULL);
    fs_store_csr_view(store, FS_READER_CPU, &g);
    x.graph = &g, x.sampler = s;
    if (table) st = fs_store_host_view(store, table, FS_READER_CPU, &rows, err);
    /* every limit from the request alone, before the sampler allocates or
     * reads anything: the worst case, not the result, is held to
     * max_response_bytes (docs/serving.md, "Limits") */
    if (st == FS_OK) st = fs_exec_check(&x, &r, err);
    if (st == FS_OK) st = fs_exec_sample(&x, &r, res, err);
    record(store, &reads);
    fs_store_destroy(store);
    return st;
}

fs_status_t fs_engine_gather(fs_engine_t *e, const char *table, const int64_t *ids, int64_t n, fs_dtype_t out_dtype,
                             void *out, fs_error_t *err)
{
    size_t row_bytes = 0;
    int64_t dim;
    fs_status_t st = fs_engine_table(e, table, &out_dtype, &row_bytes, &dim, err);
    if (st != FS_OK) return st;
    fs_exec_reads_t reads = {0};
    fs_exec_t x = exec_of(e, &reads);
    fs_table_view_t rows;
    fs_exec_req_t r = {.ids = ids, .n = n, .table = &rows, .dtype = out_dtype};
    fs_store_t *store = fs_engine_acquire(e, NULL);
    st = fs_store_host_view(store, table, FS_READER_CPU, &rows, err);
    if (st == FS_OK) st = fs_exec_check(&x, &r, err);
    if (st == FS_OK) st = fs_exec_gather(&x, &rows, ids, n, out_dtype, out, err);
    record(store, &reads);
    fs_store_destroy(store);
    return st;
}

fs_status_t fs_engine_gather_check(fs_engine_t *e, const char *table, const int64_t *ids, int64_t n, fs_dtype_t dtype,
                                   fs_error_t *err)
{
    fs_exec_t x = exec_of(e, NULL);
    fs_table_view_t rows;
    fs_exec_req_t r = {.ids = ids, .n = n, .table = &rows, .dtype = dtype};
    fs_store_t *store = fs_engine_acquire(e, NULL);
    fs_status_t st = fs_store_host_view(store, table, FS_READER_CPU, &rows, err);
    if (st == FS_OK) st = fs_exec_check(&x, &r, err);
    if (st == FS_OK) st = fs_gather_check_ids(&rows, ids, n, err);
    fs_store_destroy(store);
    return st;
}

fs_status_t fs_engine_typed(fs_engine_t *e, fs_typed_sampler_t *s, fs_pool_t *pool, const fs_hetero_seeds_t *groups,
                            size_t num_groups, const fs_link_req_t *link, const fs_hetero_req_t *req, int joined,
                            fs_engine_cached_t *cached, fs_exec_region_t *into, size_t *len, fs_error_t *err)
{
    fs_exec_reads_t reads = {0};
    fs_exec_t x = exec_of(e, &reads);
    x.typed_sampler = s, x.pool = pool;
    fs_status_t st = FS_OK;
    int64_t rows = cached ? cached->rows : 0;
    if (rows > 0 && (cached->table < 0 || (size_t)cached->table >= req->num_node_tables))
        st = fs_error(err, FS_ERR_INVALID_ARGUMENT, "cached_table %d: the request has %zu node tables", cached->table,
                      req->num_node_tables);
    if (st == FS_OK && rows > 0 && (st = fs_engine_hot(e, NULL, NULL, &x.skip_rank, err)) == FS_OK)
        x.skip_below = rows, x.skip_table = cached->table;
    if (st == FS_OK) st = fs_exec_typed(&x, groups, num_groups, link, req, joined, into, len, err);
    if (st == FS_OK && cached) cached->hole_at = x.skip_hole_at, cached->hole_end = x.skip_hole_end;
    if (st == FS_OK) { /* read, whether or not the client stays for the image */
        fs_store_t *store = fs_engine_acquire(e, NULL);
        record(store, &reads);
        fs_store_destroy(store);
    }
    return st;
}
