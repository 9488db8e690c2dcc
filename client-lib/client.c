/* client.c — the public API's front: parses the URI, hands every call to
 * the connection's transport, keeps the last error. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"

fs_status_t fs_client_fail(fs_client_t *c, fs_status_t st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->errstr, sizeof c->errstr, fmt, ap);
    va_end(ap);
    return st;
}

fs_status_t fs_connect(const char *uri, fs_client_t **out) { return fs_connect_opts(uri, NULL, out); }

fs_status_t fs_connect_opts(const char *uri, const fs_connect_opts_t *opts, fs_client_t **out)
{
    fs_client_t *c = calloc(1, sizeof *c);
    *out = c;
    if (!c) return FS_ERR_NOMEM;
    if (opts) c->opts = *opts;
    fs_las_ctl_init(&c->las, NULL, NULL); /* the defaults: cannot fail */
    if (c->opts.slots <= 0) c->opts.slots = FS_DEFAULT_SLOTS;
    if (c->opts.threads <= 0) c->opts.threads = 1;
    if (!uri) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "no URI given");
    if (strncmp(uri, "unix://", 7) == 0) return fs_local_connect(c, uri + 7);
    if (strncmp(uri, "grpc://", 7) == 0) return fs_grpc_connect(c, uri + 7);
    return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "URI '%s' must start with unix:// or grpc://", uri);
}

void fs_close(fs_client_t *c)
{
    if (!c) return;
    if (c->ops && c->ops->close) c->ops->close(c);
    free(c);
}

const char *fs_client_errstr(const fs_client_t *c) { return c ? c->errstr : "out of memory"; }

const char *fs_client_transport(const fs_client_t *c) { return c && c->ops ? c->ops->name : "none"; }

static fs_status_t not_connected(fs_client_t *c)
{
    if (!c) return FS_ERR_INVALID_ARGUMENT;
    return fs_client_fail(c, FS_ERR_UNAVAILABLE, "not connected");
}

static fs_status_t check_batch_args(fs_client_t *c, const int64_t *ids, int64_t n, fs_batch_t **out)
{
    if (!out) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "out must not be NULL");
    *out = NULL;
    if (n < 0 || (n > 0 && !ids)) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "bad id array (n=%lld)", (long long)n);
    return FS_OK;
}

fs_status_t fs_info(fs_client_t *c, fs_info_t **out)
{
    if (!c || !c->ops) return not_connected(c);
    fs_info_t *info = calloc(1, sizeof *info);
    if (!info) return fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    fs_status_t st = c->ops->info(c, info);
    if (st != FS_OK) {
        free(info);
        info = NULL;
    }
    *out = info;
    return st;
}

void fs_info_free(fs_info_t *info) { free(info); }

/* The request as the transports see it: FS_LOCALITY_AUTO replaced by the
 * connection's boost (in *copy), and the locality value checked here so
 * both transports refuse a bad one the same way without a round trip. */
static fs_status_t resolve_locality(fs_client_t *c, const fs_sample_req_t **req, fs_sample_req_t *copy)
{
    if ((*req)->locality == FS_LOCALITY_AUTO) {
        *copy = **req;
        copy->locality = c->las.s;
        *req = copy;
    }
    fs_error_t err = {0};
    if (fs_locality_value_check((*req)->locality, &err) != FS_OK) return fs_client_fail(c, err.code, "%s", err.msg);
    return FS_OK;
}

fs_status_t fs_sample(fs_client_t *c, const int64_t *seeds, int64_t n, const fs_sample_req_t *req, fs_batch_t **out)
{
    if (!c || !c->ops) return not_connected(c);
    fs_status_t st = check_batch_args(c, seeds, n, out);
    if (st == FS_OK && !req) st = fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "no sampling request");
    fs_sample_req_t copy;
    if (st == FS_OK) st = resolve_locality(c, &req, &copy);
    return st == FS_OK ? c->ops->sample(c, seeds, n, req, out) : st;
}

fs_status_t fs_gather(fs_client_t *c, const char *table, const int64_t *ids, int64_t n, fs_dtype_t out_dtype,
                      fs_batch_t **out)
{
    if (!c || !c->ops) return not_connected(c);
    fs_status_t st = check_batch_args(c, ids, n, out);
    if (st == FS_OK && !table) st = fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "no table name");
    return st == FS_OK ? c->ops->gather(c, table, ids, n, out_dtype, out) : st;
}

fs_status_t fs_sample_gather(fs_client_t *c, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
                             const char *table, fs_dtype_t out_dtype, fs_batch_t **out)
{
    if (!c || !c->ops) return not_connected(c);
    fs_status_t st = check_batch_args(c, seeds, n, out);
    if (st == FS_OK && (!req || !table)) st = fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "no request or table name");
    fs_sample_req_t copy;
    if (st == FS_OK) st = resolve_locality(c, &req, &copy);
    return st == FS_OK ? c->ops->sample_gather(c, seeds, n, req, table, out_dtype, out) : st;
}

fs_status_t fs_report_load_ratio(fs_client_t *c, double load_ratio, double *locality)
{
    if (!c) return FS_ERR_INVALID_ARGUMENT;
    fs_error_t err = {0};
    if (fs_las_ctl_update(&c->las, load_ratio, locality, &err) != FS_OK)
        return fs_client_fail(c, err.code, "fs_report_load_ratio: %s", err.msg);
    return FS_OK;
}

void fs_batch_free(fs_batch_t *b)
{
    if (!b) return;
    fs_batch_priv_t *p = (fs_batch_priv_t *)b;
    p->release(p);
}

fs_status_t fs_batch_region(const fs_batch_t *b, const void **base, size_t *len)
{
    if (!b || !base || !len) return FS_ERR_INVALID_ARGUMENT;
    const fs_batch_priv_t *p = (const fs_batch_priv_t *)b;
    *base = p->region;
    *len = p->region_len;
    return p->region ? FS_OK : FS_ERR_NOT_FOUND;
}

fs_status_t fs_split(fs_client_t *c, const char *name, fs_ids_t **out)
{
    if (!c || !c->ops) return not_connected(c);
    if (!out) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "out must not be NULL");
    *out = NULL;
    if (!name || !name[0]) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "no split name");
    if (strlen(name) >= 64) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "split name '%.40s...' is too long", name);
    return c->ops->split(c, name, out);
}

void fs_ids_free(fs_ids_t *ids)
{
    if (!ids) return;
    fs_ids_priv_t *p = (fs_ids_priv_t *)ids;
    p->release(p);
}

fs_status_t fs_stats(fs_client_t *c, char **text)
{
    if (!c || !c->ops) return not_connected(c);
    if (!text) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "text must not be NULL");
    *text = NULL;
    return c->ops->stats(c, text);
}

void fs_stats_free(char *text) { free(text); }

fs_status_t fs_replan(fs_client_t *c, const fs_replan_opts_t *opts, uint64_t *generation)
{
    if (!c || !c->ops) return not_connected(c);
    if (!c->ops->replan)
        return fs_client_fail(c, FS_ERR_UNSUPPORTED, "re-planning is an administrative call, accepted over unix:// "
                              "only (the server's machine); this connection is %s://", c->ops->name);
    fs_replan_opts_t keep = {0};
    const fs_replan_opts_t *o = opts ? opts : &keep;
    if (!(o->gpu_budget >= 0 && o->gpu_budget <= 1))
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "gpu_budget %g: need a fraction in (0, 1], or 0 to keep the "
                              "server's", o->gpu_budget);
    const char *strs[5] = {o->topology, o->hotness, o->order, o->plan, o->save};
    const size_t caps[5] = {256, 16, 16, 512, 512}; /* the wire's fields (fs_local.h) */
    for (int i = 0; i < 5; i++)
        if (strs[i] && strlen(strs[i]) >= caps[i])
            return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "re-plan option '%.40s...' is longer than %zu bytes",
                                  strs[i], caps[i] - 1);
    return c->ops->replan(c, o, generation);
}

void fs_info_from_pb(fs_info_t *out, const featstore_v1_InfoResponse *r)
{
    memset(out, 0, sizeof *out);
    snprintf(out->server_version, sizeof out->server_version, "%s", r->server_version);
    snprintf(out->dataset, sizeof out->dataset, "%s", r->dataset);
    out->num_nodes = r->num_nodes, out->num_edges = r->num_edges, out->num_classes = r->num_classes;
    out->symmetric = r->symmetric, out->weighted = r->weighted;
    for (pb_size_t i = 0; i < r->tables_count && i < 16; i++) {
        fs_table_info_t *t = &out->tables[out->num_tables++];
        snprintf(t->name, sizeof t->name, "%s", r->tables[i].name);
        t->dtype = fs_dtype_from_name(r->tables[i].dtype);
        t->rows = r->tables[i].rows, t->dim = r->tables[i].dim;
    }
    for (pb_size_t i = 0; i < r->splits_count && i < 8; i++)
        snprintf(out->splits[out->num_splits++], sizeof out->splits[0], "%s", r->splits[i]);
    for (pb_size_t i = 0; i < r->placement_count && i < 16; i++) {
        const featstore_v1_PlacementReader *p = &r->placement[i];
        out->placement[i].reader = p->reader;
        out->placement[i].predicted_bytes[0] = p->predicted_local_bytes;
        out->placement[i].predicted_bytes[1] = p->predicted_peer_bytes;
        out->placement[i].predicted_bytes[2] = p->predicted_host_bytes;
        out->placement[i].measured_bytes[0] = p->measured_local_bytes;
        out->placement[i].measured_bytes[1] = p->measured_peer_bytes;
        out->placement[i].measured_bytes[2] = p->measured_host_bytes;
        out->num_readers++;
    }
    out->placement_generation = r->placement_generation;
}
