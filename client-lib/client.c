/* client.c — the public API's front: checks arguments, reads the caller's
 * versioned option structs (featstore/types.h), parses the URI, hands every
 * call to the connection's transport, keeps the last error. A connection
 * belongs to the process that opened it: calls from a forked child are
 * refused before any transport sees them (docs/api.md §8). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_internal.h"
#include "fs_addr.h"

/* The first published sizes of the versioned structs (1.0's): anything
 * smaller was never a valid struct. Fields added since (1.1: the connection's
 * TLS files and token) read as zero from a 1.0 caller. */
#define CONNECT_OPTS_V1 (offsetof(fs_connect_opts_t, device) + sizeof(const char *))
#define SAMPLE_REQ_V1 (offsetof(fs_sample_req_t, locality) + sizeof(double))
#define REPLAN_OPTS_V1 (offsetof(fs_replan_opts_t, reserve) + sizeof(const char *))

/* A field added later must make the struct bigger, or struct_size could
 * not tell the versions apart: no public struct may end in padding a new
 * field could slip into (docs/api.md). */
#define FS_ENDS_AT(type, last) (offsetof(type, last) + sizeof(((type *)0)->last))
_Static_assert(sizeof(fs_connect_opts_t) == FS_ENDS_AT(fs_connect_opts_t, token), "trailing padding");
_Static_assert(sizeof(fs_sample_req_t) == FS_ENDS_AT(fs_sample_req_t, locality), "trailing padding");
_Static_assert(sizeof(fs_replan_opts_t) == FS_ENDS_AT(fs_replan_opts_t, reserve), "trailing padding");
_Static_assert(sizeof(fs_hetero_req_t) == FS_ENDS_AT(fs_hetero_req_t, edge_tables), "trailing padding");
_Static_assert(sizeof(fs_link_req_t) == FS_ENDS_AT(fs_link_req_t, keep_seed_edges), "trailing padding");
_Static_assert(sizeof(fs_stream_common_t) == FS_ENDS_AT(fs_stream_common_t, producers), "trailing padding");
_Static_assert(sizeof(fs_stream_node_opts_t) == FS_ENDS_AT(fs_stream_node_opts_t, calls), "trailing padding");
_Static_assert(sizeof(fs_stream_hetero_opts_t) == FS_ENDS_AT(fs_stream_hetero_opts_t, seed_type), "trailing padding");
_Static_assert(sizeof(fs_stream_link_opts_t) == FS_ENDS_AT(fs_stream_link_opts_t, link), "trailing padding");
_Static_assert(sizeof(fs_stream_rows_opts_t) == FS_ENDS_AT(fs_stream_rows_opts_t, labels), "trailing padding");

FS_API const char *fs_version(void) { return FS_LIB_VERSION; }

static fs_status_t read_struct(fs_client_t *c, void *dst, size_t size, const void *src, size_t min, const char *what)
{
    fs_error_t err = {0};
    if (fs_struct_read(dst, size, src, min, what, &err) != FS_OK) return fs_client_fail(c, err.code, "%s", err.msg);
    return FS_OK;
}

/* Copies of the URI and of the option strings, which need not outlive
 * fs_connect, so that fs_client_clone can connect the same way later. */
static fs_status_t keep_strings(fs_client_t *c, const char *uri)
{
    const char **field[5] = {&c->opts.device, &c->opts.tls_ca_file, &c->opts.tls_cert_file, &c->opts.tls_key_file,
                             &c->opts.token};
    if (uri && !(c->uri = strdup(uri))) return FS_ERR_NOMEM;
    for (int i = 0; i < 5; i++) {
        if (!*field[i]) continue;
        if (!(c->opt_strings[i] = strdup(*field[i]))) return FS_ERR_NOMEM;
        *field[i] = c->opt_strings[i];
    }
    return FS_OK;
}

fs_status_t fs_client_clone(const fs_client_t *c, int slots, int threads, fs_client_t **out)
{
    fs_connect_opts_t o = c->opts;
    o.slots = slots;
    if (threads > 0) o.threads = threads;
    return fs_connect(c->uri, &o, out);
}

/* ---- a stream's connections, kept for the next stream ------------------------
 * A trainer opens a stream every epoch, and each of its producers used to
 * connect anew: over unix:// that maps the server's files, checks a typed
 * dataset's every edge again (fs_dataset_open_fds) and starts the engines'
 * workspaces cold, 40-50 ms before an epoch's first batch on the demo
 * dataset against 7-9 ms for the next ones (docs/benchmarks.md). So a
 * closed stream leaves its connections with their owner, and the next
 * stream takes those with its slots and threads whose batches are all
 * freed (a batch held on lives in its connection's slot). The owner is
 * then as connected as it was while the stream was open, no more. */
fs_status_t fs_client_take(fs_client_t *c, int slots, int threads, fs_client_t **out)
{
    int want = threads > 0 ? threads : c->opts.threads;
    fs_client_t *found = NULL;
    pthread_mutex_lock(&c->spare_lock);
    for (int i = 0; i < c->num_spare && !found; i++) {
        fs_client_t *k = c->spare[i];
        if (k->opts.slots == slots && k->opts.threads == want && !fs_client_foreign(k) && k->ops->idle(k)) {
            found = k;
            c->spare[i] = c->spare[--c->num_spare];
        }
    }
    pthread_mutex_unlock(&c->spare_lock);
    if (!found) return fs_client_clone(c, slots, threads, out);
    found->errstr[0] = '\0';
    *out = found;
    return FS_OK;
}

void fs_client_park(fs_client_t *c, fs_client_t *conn)
{
    if (!conn) return;
    pthread_mutex_lock(&c->spare_lock);
    if (c->num_spare < FS_CLIENT_SPARES && conn->ops && conn->ops->idle && !fs_client_foreign(conn) &&
        !fs_client_foreign(c)) {
        c->spare[c->num_spare++] = conn;
        conn = NULL;
    }
    pthread_mutex_unlock(&c->spare_lock);
    fs_close(conn);
}

FS_API fs_status_t fs_connect(const char *uri, const fs_connect_opts_t *opts, fs_client_t **out)
{
    if (!out) return FS_ERR_INVALID_ARGUMENT;
    fs_client_t *c = calloc(1, sizeof *c);
    *out = c;
    if (!c) return FS_ERR_NOMEM;
    c->opener = getpid();
    pthread_mutex_init(&c->spare_lock, NULL);
    c->opts.struct_size = sizeof c->opts;
    fs_status_t st = opts ? read_struct(c, &c->opts, sizeof c->opts, opts, CONNECT_OPTS_V1, "fs_connect_opts_t") : FS_OK;
    if (st != FS_OK) return st;
    if (keep_strings(c, uri) != FS_OK) return fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    fs_las_ctl_init(&c->las, NULL, NULL); /* the defaults: cannot fail */
    if (c->opts.slots == 0) c->opts.slots = FS_DEFAULT_SLOTS;
    c->threads_given = c->opts.threads > 0;
    if (c->opts.threads <= 0) c->opts.threads = 1;
    if (c->opts.slots < 1 || c->opts.slots > FS_MAX_SLOTS)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "slots is %d: a connection has 1..%d result slots (0 = %d)",
                              c->opts.slots, FS_MAX_SLOTS, FS_DEFAULT_SLOTS);
    if (c->opts.timeout_ms < 0)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "timeout_ms is %d: give milliseconds, or 0 for none",
                              c->opts.timeout_ms);
    /* the one address parser (kernels/fs_addr.h): a URI is one of the
     * documented forms, or refused naming what is wrong with it */
    fs_addr_t a;
    fs_error_t err = {0};
    if (fs_addr_uri(uri, &a, &err) != FS_OK) return fs_client_fail(c, err.code, "%s", err.msg);
    if (a.kind == FS_ADDR_UNIX) return fs_local_connect(c, a.path);
    if (a.kind == FS_ADDR_CLUSTER) return fs_cluster_connect(c, &a);
    return fs_grpc_connect(c, a.target, a.tls); /* tls: grpcs:// */
}

FS_API void fs_close(fs_client_t *c)
{
    if (!c) return;
    /* In a forked child the transport frees only the child's copies and says
     * nothing to the server: the parent's connection carries on. */
    for (int i = 0; i < c->num_spare; i++) fs_close(c->spare[i]);
    pthread_mutex_destroy(&c->spare_lock);
    if (c->ops && c->ops->close) c->ops->close(c);
    free(c->uri);
    for (int i = 0; i < 5; i++) free(c->opt_strings[i]);
    free(c);
}

FS_API const char *fs_client_errstr(const fs_client_t *c) { return c ? c->errstr : "out of memory"; }

FS_API const char *fs_client_transport(const fs_client_t *c) { return c && c->ops ? c->ops->name : "none"; }

/* Before every call. A child forked after fs_connect shares the parent's
 * socket and result slots: its requests would interleave with the parent's
 * and its results overwrite the parent's batches, so it must connect anew
 * (client.h, docs/api.md §8). */
fs_status_t fs_client_usable(fs_client_t *c)
{
    if (!c) return FS_ERR_INVALID_ARGUMENT;
    if (fs_client_foreign(c))
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "this connection was opened by process %ld and this is "
                              "process %ld: a forked child must fs_connect again (fs_close the inherited "
                              "connection: that frees only the child's copy)", (long)c->opener, (long)getpid());
    if (!c->ops) return fs_client_fail(c, FS_ERR_UNAVAILABLE, "not connected");
    return FS_OK;
}

static fs_status_t check_batch_args(fs_client_t *c, const int64_t *ids, int64_t n, fs_batch_t **out)
{
    if (!out) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "out must not be NULL");
    *out = NULL;
    if (n < 0 || (n > 0 && !ids)) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "bad id array (n=%lld)", (long long)n);
    return FS_OK;
}

FS_API fs_status_t fs_info(fs_client_t *c, fs_info_t **out)
{
    fs_status_t st = fs_client_usable(c);
    if (st != FS_OK) return st;
    if (!out) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "out must not be NULL");
    *out = NULL;
    return c->ops->info(c, out);
}

/* The request as the transports see it, in *copy: the caller's struct
 * read at its own size, FS_LOCALITY_AUTO replaced by the connection's
 * boost, and the locality value checked here so both transports refuse a
 * bad one the same way without a round trip. */
fs_status_t fs_client_sample_request(fs_client_t *c, const fs_sample_req_t *req, fs_sample_req_t *copy)
{
    if (!req) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "no sampling request");
    fs_status_t st = read_struct(c, copy, sizeof *copy, req, SAMPLE_REQ_V1, "fs_sample_req_t");
    if (st != FS_OK) return st;
    if (copy->locality == FS_LOCALITY_AUTO) copy->locality = c->las.s;
    fs_error_t err = {0};
    if (fs_locality_value_check(copy->locality, &err) != FS_OK) return fs_client_fail(c, err.code, "%s", err.msg);
    return FS_OK;
}

FS_API fs_status_t fs_sample(fs_client_t *c, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
                             fs_batch_t **out)
{
    fs_sample_req_t r;
    fs_status_t st = fs_client_usable(c);
    if (st == FS_OK) st = check_batch_args(c, seeds, n, out);
    if (st == FS_OK) st = fs_client_sample_request(c, req, &r);
    return st == FS_OK ? c->ops->sample(c, seeds, n, &r, out) : st;
}

FS_API fs_status_t fs_gather(fs_client_t *c, const int64_t *ids, int64_t n, const char *table, fs_dtype_t out_dtype,
                             fs_batch_t **out)
{
    fs_status_t st = fs_client_usable(c);
    if (st == FS_OK) st = check_batch_args(c, ids, n, out);
    if (st == FS_OK && !table) st = fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "no table name");
    return st == FS_OK ? c->ops->gather(c, ids, n, table, out_dtype, out) : st;
}

FS_API fs_status_t fs_sample_gather(fs_client_t *c, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
                                    const char *table, fs_dtype_t out_dtype, fs_batch_t **out)
{
    fs_sample_req_t r;
    fs_status_t st = fs_client_usable(c);
    if (st == FS_OK) st = check_batch_args(c, seeds, n, out);
    if (st == FS_OK && !table) st = fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "no table name");
    if (st == FS_OK) st = fs_client_sample_request(c, req, &r);
    return st == FS_OK ? c->ops->sample_gather(c, seeds, n, &r, table, out_dtype, out) : st;
}

FS_API fs_status_t fs_report_load_ratio(fs_client_t *c, double load_ratio, double *locality)
{
    if (!c) return FS_ERR_INVALID_ARGUMENT;
    if (fs_client_foreign(c)) return fs_client_usable(c); /* the same refusal, though no transport is involved */
    fs_error_t err = {0};
    if (fs_las_ctl_update(&c->las, load_ratio, locality, &err) != FS_OK)
        return fs_client_fail(c, err.code, "fs_report_load_ratio: %s", err.msg);
    return FS_OK;
}

FS_API void fs_batch_free(fs_batch_t *b)
{
    if (!b) return;
    fs_batch_priv_t *p = (fs_batch_priv_t *)b;
    p->release(p);
}

FS_API fs_status_t fs_batch_region(const fs_batch_t *b, const void **base, size_t *len)
{
    if (!b || !base || !len) return FS_ERR_INVALID_ARGUMENT;
    const fs_batch_priv_t *p = (const fs_batch_priv_t *)b;
    *base = p->region;
    *len = p->region_len;
    return p->region ? FS_OK : FS_ERR_NOT_FOUND;
}

/* ---- typed graphs -------------------------------------------------------------- */

static fs_status_t hetero_args(fs_client_t *c, const fs_hetero_req_t *req, fs_hetero_req_t *copy,
                               fs_hetero_batch_t **out)
{
    fs_status_t st = fs_client_usable(c);
    if (st != FS_OK) return st;
    if (!out) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "out must not be NULL");
    *out = NULL;
    if (!req) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "no sampling request");
    return read_struct(c, copy, sizeof *copy, req, sizeof *copy, "fs_hetero_req_t");
}

FS_API fs_status_t fs_hetero_sample(fs_client_t *c, const fs_hetero_seeds_t *groups, size_t num_groups,
                                    const fs_hetero_req_t *req, fs_hetero_batch_t **out)
{
    fs_hetero_req_t r;
    fs_status_t st = hetero_args(c, req, &r, out);
    if (st == FS_OK && (num_groups == 0 || !groups))
        st = fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "no seed groups: give at least one node type's seeds");
    return st == FS_OK ? c->ops->hetero(c, groups, num_groups, NULL, &r, out) : st;
}

FS_API fs_status_t fs_link_sample(fs_client_t *c, const fs_link_req_t *link, const fs_hetero_req_t *req,
                                  fs_hetero_batch_t **out)
{
    fs_hetero_req_t r;
    fs_link_req_t l;
    fs_status_t st = hetero_args(c, req, &r, out);
    if (st == FS_OK && !link) st = fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "no link request");
    if (st == FS_OK) st = read_struct(c, &l, sizeof l, link, sizeof l, "fs_link_req_t");
    return st == FS_OK ? c->ops->hetero(c, NULL, 0, &l, &r, out) : st;
}

FS_API void fs_hetero_batch_free(fs_hetero_batch_t *b)
{
    if (!b) return;
    fs_hetero_priv_t *p = (fs_hetero_priv_t *)b;
    p->release(p);
}

FS_API fs_status_t fs_hetero_batch_region(const fs_hetero_batch_t *b, const void **base, size_t *len)
{
    if (!b || !base || !len) return FS_ERR_INVALID_ARGUMENT;
    const fs_hetero_priv_t *p = (const fs_hetero_priv_t *)b;
    *base = p->region;
    *len = p->region_len;
    return p->region ? FS_OK : FS_ERR_NOT_FOUND;
}

/* fs_split's and fs_split_local's arguments, checked alike. */
static fs_status_t split_args(fs_client_t *c, const char *name, fs_ids_t **out)
{
    fs_status_t st = fs_client_usable(c);
    if (st != FS_OK) return st;
    if (!out) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "out must not be NULL");
    *out = NULL;
    if (!name || !name[0]) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "no split name");
    if (strlen(name) >= 256) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "split name '%.40s...' is too long", name);
    return FS_OK;
}

FS_API fs_status_t fs_split(fs_client_t *c, const char *name, fs_ids_t **out)
{
    fs_status_t st = split_args(c, name, out);
    return st == FS_OK ? c->ops->split(c, name, out) : st;
}

FS_API fs_status_t fs_split_local(fs_client_t *c, const char *name, fs_ids_t **out)
{
    fs_status_t st = split_args(c, name, out);
    if (st != FS_OK) return st;
    if (!c->ops->split_local)
        return fs_client_fail(c, FS_ERR_UNSUPPORTED, "a %s:// connection has no shards on this machine: a split's "
                              "local share is a sharded cluster's (etcd:// or file:)", c->ops->name);
    return c->ops->split_local(c, name, out);
}

FS_API void fs_ids_free(fs_ids_t *ids)
{
    if (!ids) return;
    fs_ids_priv_t *p = (fs_ids_priv_t *)ids;
    p->release(p);
}

FS_API fs_status_t fs_stats(fs_client_t *c, char **text)
{
    fs_status_t st = fs_client_usable(c);
    if (st != FS_OK) return st;
    if (!text) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "text must not be NULL");
    *text = NULL;
    return c->ops->stats(c, text);
}

FS_API void fs_stats_free(char *text) { free(text); }

FS_API fs_status_t fs_replan(fs_client_t *c, const fs_replan_opts_t *opts, uint64_t *generation)
{
    fs_status_t st = fs_client_usable(c);
    if (st != FS_OK) return st;
    if (!c->ops->replan)
        return fs_client_fail(c, FS_ERR_UNSUPPORTED, "re-planning is an administrative call, accepted over unix:// "
                              "only (the server's machine); this connection is %s://", c->ops->name);
    fs_replan_opts_t o = FS_REPLAN_OPTS_INIT;
    st = opts ? read_struct(c, &o, sizeof o, opts, REPLAN_OPTS_V1, "fs_replan_opts_t") : FS_OK;
    if (st != FS_OK) return st;
    if (!(o.gpu_budget >= 0 && o.gpu_budget <= 1))
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "gpu_budget %g: need a fraction in (0, 1], or 0 to keep the "
                              "server's", o.gpu_budget);
    return c->ops->replan(c, &o, generation);
}
