/* engine.c — see engine.h. */
#include "engine.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fs_info.h"

struct fs_engine {
    const fs_dataset_t *ds;
    fs_limits_t limits;
    pthread_mutex_t mu;   /* guards store and generation: held for a pointer swap, never for a request */
    fs_store_t *store;
    uint64_t generation;
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
    if (limits) e->limits = *limits;
    else fs_limits_default(&e->limits);
    e->limits.num_nodes = ds->num_nodes, e->limits.num_edges = ds->num_edges; /* bound each request's worst case */
    *out = e;
    return FS_OK;
}

void fs_engine_destroy(fs_engine_t *e)
{
    if (!e) return;
    fs_store_destroy(e->store);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

const fs_limits_t *fs_engine_limits(const fs_engine_t *e) { return &e->limits; }
const fs_dataset_t *fs_engine_dataset(const fs_engine_t *e) { return e->ds; }

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

static int add_dataset(fs_info_t *info, const fs_dataset_t *ds)
{
    if (fs_info_set_text(&info->server_version, FS_SERVER_VERSION) || fs_info_set_text(&info->dataset, ds->name))
        return -1;
    info->num_nodes = ds->num_nodes;
    info->num_edges = ds->num_edges;
    info->symmetric = ds->symmetric;
    info->weighted = ds->edge_weights != NULL;
    info->num_classes = ds->num_classes;
    for (int i = 0; i < ds->num_tables; i++) {
        fs_table_info_t *t = fs_info_add_table(info);
        if (!t || fs_info_set_text(&t->name, ds->tables[i].name)) return -1;
        t->dtype = ds->tables[i].dtype;
        t->rows = ds->tables[i].rows;
        t->dim = ds->tables[i].dim;
    }
    for (int i = 0; i < ds->num_splits; i++) {
        const char **name = fs_info_add_split(info);
        if (!name || fs_info_set_text(name, ds->splits[i].name)) return -1;
    }
    return 0;
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

fs_status_t fs_engine_sample(fs_engine_t *e, fs_sampler_t *s, const int64_t *seeds, int64_t n,
                             const fs_sample_req_t *req, fs_sample_result_t *res, fs_error_t *err)
{
    /* every limit from the request alone, before the sampler allocates or
     * reads anything: the worst case, not the result, is held to
     * max_response_bytes (README, "Limits") */
    fs_status_t st = fs_limits_check(&e->limits, n, req, 0, err);
    if (st != FS_OK) return st;
    if (req->locality > 1)
        return fs_error(err, FS_ERR_UNSUPPORTED, "locality = %g: locality-aware sampling needs a placement and a "
                        "reader GPU; a remote (gRPC) trainer reads as the CPU, which has no GPU rows to prefer: "
                        "send locality 0, or run the trainer on the server's machine over unix:// with device "
                        "\"gpu:N\"", req->locality);
    fs_csr_view_t g;
    fs_store_t *store = fs_engine_acquire(e, NULL);
    fs_store_csr_view(store, FS_READER_CPU, &g);
    fs_gather_counters_t topo = {0};
    st = fs_sample_cpu(s, &g, seeds, n, req, res, &topo, err);
    if (st == FS_OK) fs_store_count_topology(store, FS_READER_CPU, &topo);
    fs_store_destroy(store);
    return st;
}

fs_status_t fs_engine_split(const fs_engine_t *e, const char *name, const fs_idset_t **out, fs_error_t *err)
{
    const fs_dataset_t *ds = fs_engine_dataset(e);
    if ((*out = fs_dataset_split(ds, name))) return FS_OK;
    return fs_error(err, FS_ERR_NOT_FOUND, "dataset '%s' has no split named '%s' (it has %d)", ds->name, name,
                    ds->num_splits);
}

fs_status_t fs_engine_table(const fs_engine_t *e, const char *table, fs_dtype_t *out_dtype, size_t *out_row_bytes,
                            int64_t *dim, fs_error_t *err)
{
    const fs_table_t *t = fs_dataset_table(e->ds, table);
    if (!t) return fs_error(err, FS_ERR_NOT_FOUND, "no feature table '%s'", table);
    if (*out_dtype == FS_DTYPE_INVALID) *out_dtype = t->dtype;
    if (*out_dtype != t->dtype && *out_dtype != FS_DTYPE_F32)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "table '%s' is %s: it can be served as %s or float32, not %s",
                        table, fs_dtype_name(t->dtype), fs_dtype_name(t->dtype), fs_dtype_name(*out_dtype));
    *out_row_bytes = (size_t)t->dim * fs_dtype_size(*out_dtype);
    *dim = t->dim;
    return FS_OK;
}

fs_status_t fs_engine_gather(fs_engine_t *e, const char *table, const int64_t *ids, int64_t n, fs_dtype_t out_dtype,
                             void *out, fs_error_t *err)
{
    size_t row_bytes = 0;
    int64_t dim;
    fs_status_t st = fs_engine_table(e, table, &out_dtype, &row_bytes, &dim, err);
    if (st == FS_OK) st = fs_limits_check(&e->limits, n, NULL, row_bytes, err);
    if (st != FS_OK) return st;
    fs_store_t *store = fs_engine_acquire(e, NULL);
    st = fs_store_gather(store, table, FS_READER_CPU, ids, n, out_dtype, out, NULL, err);
    fs_store_destroy(store);
    return st;
}
