/* serve.c — `featstore serve`. Startup: open the dataset (mmap, validated),
 * build the store (the placement plugs in here), then start the transports
 * and the metrics endpoint, log one line, and print a READY line with the
 * bound addresses (scripts and tests read it). Shutdown on SIGTERM/SIGINT:
 * stop accepting, let in-flight requests finish, release shared memory,
 * exit 0.
 *
 * Signals are blocked in every thread and taken synchronously with
 * sigwait() by the main thread, so no handler runs inside library code. */
#include "serve.h"

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "fs_device.h"
#include "grpc_server.h"
#include "http.h"
#include "local.h"
#include "metrics.h"
#include "place_las.h"

void fs_serve_defaults(fs_serve_opts_t *o)
{
    memset(o, 0, sizeof *o);
    fs_limits_default(&o->limits);
}

static void config_str(json_t *cfg, const char *key, const char **dst)
{
    const char *v = json_string_value(json_object_get(cfg, key));
    if (!*dst && v) *dst = strdup(v); /* lives for the process */
}

fs_status_t fs_serve_load_config(fs_serve_opts_t *o, fs_error_t *err)
{
    if (!o->config) return FS_OK;
    json_error_t jerr;
    json_t *cfg = json_load_file(o->config, 0, &jerr);
    if (!cfg) return fs_error(err, FS_ERR_FORMAT, "%s: line %d: %s", o->config, jerr.line, jerr.text);
    fs_status_t st = FS_OK;
    if (!json_is_object(cfg)) st = fs_error(err, FS_ERR_FORMAT, "%s: must be a JSON object", o->config);
    const char *keys[] = {"socket", "listen", "metrics", "threads", "verify", "prefault", "limits", NULL};
    const char *k;
    json_t *v;
    json_object_foreach(cfg, k, v) {
        int known = 0;
        for (int i = 0; keys[i]; i++) known |= strcmp(k, keys[i]) == 0;
        if (!known && st == FS_OK) st = fs_error(err, FS_ERR_FORMAT, "%s: unknown key \"%s\"", o->config, k);
    }
    config_str(cfg, "socket", &o->socket_path);
    config_str(cfg, "listen", &o->listen);
    config_str(cfg, "metrics", &o->metrics);
    if (!o->threads && json_is_integer(json_object_get(cfg, "threads")))
        o->threads = (int)json_integer_value(json_object_get(cfg, "threads"));
    if (json_is_true(json_object_get(cfg, "verify"))) o->verify = 1;
    if (json_is_true(json_object_get(cfg, "prefault"))) o->prefault = 1;
    json_t *lim = json_object_get(cfg, "limits");
    const char *lk[3] = {"max_ids", "max_fanout_product", "max_response_bytes"};
    int64_t *lv[3] = {&o->limits.max_ids, &o->limits.max_fanout_product, &o->limits.max_response_bytes};
    for (int i = 0; lim && i < 3; i++) {
        json_t *x = json_object_get(lim, lk[i]);
        if (!x) continue;
        if (!json_is_integer(x) || json_integer_value(x) <= 0)
            st = fs_error(err, FS_ERR_FORMAT, "%s: limits.%s must be a positive integer", o->config, lk[i]);
        else *lv[i] = json_integer_value(x);
    }
    json_decref(cfg);
    return st;
}

typedef struct {
    fs_dataset_t *ds;
    fs_store_t *store;
    fs_engine_t *engine;
    fs_metrics_t *metrics;
    fs_local_server_t *local;
    fs_grpc_server_t *grpc;
    fs_http_t *http;
    int http_port, grpc_port;
} server_t;

static void shutdown_all(server_t *s)
{
    fs_http_stop(s->http);            /* stop accepting first ... */
    fs_grpc_server_stop(s->grpc);     /* ... let in-flight gRPC calls finish ... */
    fs_local_server_stop(s->local);   /* ... disconnect local clients, remove the socket */
    fs_metrics_destroy(s->metrics);
    fs_engine_destroy(s->engine);
    fs_store_destroy(s->store);
    fs_dataset_close(s->ds);
}

static void log_startup(const fs_serve_opts_t *o, const server_t *s)
{
    char gpus[600];
    fs_devices_t d;
    fs_error_t derr = {0};
    if (fs_devices_query(&d, &derr) == FS_OK) snprintf(gpus, sizeof gpus, "%d GPU(s), %s", d.count, d.dev[0].name);
    else snprintf(gpus, sizeof gpus, "no GPU used: %s", derr.msg);
    fprintf(stderr, "featstore: serving '%s' (%lld nodes, %lld edges, %d tables, %.2f GiB) from %s | transports:",
            s->ds->name, (long long)s->ds->num_nodes, (long long)s->ds->num_edges, s->ds->num_tables,
            (double)fs_dataset_bytes(s->ds) / (1 << 30), o->dataset);
    if (o->socket_path) fprintf(stderr, " unix://%s", o->socket_path);
    if (s->grpc) fprintf(stderr, " grpc://%.*s:%d", (int)(strrchr(o->listen, ':') - o->listen), o->listen, s->grpc_port);
    if (s->http) fprintf(stderr, " | metrics http://%.*s:%d/metrics", (int)(strrchr(o->metrics, ':') - o->metrics),
                         o->metrics, s->http_port);
    fprintf(stderr, " | tiers: %d (tier 0 host mmap%s) | %s\n", fs_store_num_tiers(s->store),
            fs_store_num_tiers(s->store) > 1 ? ", then one simulated GPU per planned GPU" : "", gpus);
}

/* The plan's prediction per reader GPU goes to the metrics (and so to Info
 * and /metrics), next to the counters that measure it. */
static fs_status_t publish_prediction(const fs_place_opts_t *po, server_t *s, const fs_plan_t *plan,
                                      const fs_hardware_t *hw, fs_error_t *err)
{
    fs_cost_t cost;
    fs_status_t st = fs_place_predict(s->ds, plan, hw, po, &cost, err);
    for (int r = 0; st == FS_OK && r < cost.num_gpus; r++) {
        double bytes[FS_SOURCE_COUNT_] = {cost.local_bytes[r], cost.peer_bytes[r], cost.host_bytes[r]};
        fs_metrics_set_predicted(s->metrics, r, bytes);
    }
    return st;
}

/* Plans for the hardware description and places the plan in simulated GPU
 * tiers (placement happens before the store is frozen and shared). */
static fs_status_t place(const fs_serve_opts_t *o, server_t *s, fs_error_t *err)
{
    fs_hardware_t hw;
    fs_plan_t *plan;
    fs_place_opts_t po = o->place;
    po.threads = o->threads;
    fs_status_t st = fs_place_plan(s->ds, &po, &hw, &plan, err);
    if (st == FS_OK) {
        fs_place_describe(stderr, plan, &hw);
        st = fs_place_apply(s->store, s->ds, plan, po.table, err);
        if (st == FS_OK) st = publish_prediction(&po, s, plan, &hw, err);
        if (st == FS_OK) { /* each planned GPU's preferred sets, for locality-aware sampling (place_las.h) */
            fs_las_opts_t lo;
            fs_las_defaults(&lo);
            lo.num_levels = FS_PLACE_LAS_LEVELS, lo.threads = o->threads;
            st = fs_place_locality(s->store, s->ds, plan, &lo, stderr, err);
        }
        fs_plan_free(plan);
    }
    return st;
}

int fs_serve(const fs_serve_opts_t *o)
{
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL); /* before any thread starts */
    signal(SIGPIPE, SIG_IGN);

    server_t s = {0};
    fs_error_t err = {0};
    fs_status_t st = fs_dataset_open(o->dataset, o->verify ? FS_OPEN_VERIFY : 0, 0, &s.ds, &err);
    if (!st && o->prefault) fs_dataset_prefault(s.ds);
    if (!st) st = fs_store_create(s.ds, &s.store, &err);
    if (!st && !(s.metrics = fs_metrics_create(s.ds, s.store))) st = fs_error(&err, FS_ERR_NOMEM, "out of memory");
    if (!st && o->place.topology) st = place(o, &s, &err);
    if (!st) st = fs_store_freeze(s.store, &err);
    if (!st) st = fs_engine_create(s.ds, s.store, &o->limits, &s.engine, &err);
    if (!st && o->socket_path) st = fs_local_server_start(o->socket_path, s.engine, s.metrics, &s.local, &err);
    if (!st && o->listen) st = fs_grpc_server_start(o->listen, s.engine, s.metrics, o->threads, &s.grpc, &s.grpc_port, &err);
    if (!st && o->metrics) st = fs_http_start(o->metrics, s.metrics, &s.http, &s.http_port, &err);
    if (st != FS_OK) {
        fprintf(stderr, "featstore: error: %s [%s]\n", err.msg, fs_strerror(err.code));
        shutdown_all(&s);
        return 1;
    }
    log_startup(o, &s);
    char grpc[300] = "-";
    if (s.grpc) snprintf(grpc, sizeof grpc, "%.*s:%d", (int)(strrchr(o->listen, ':') - o->listen), o->listen, s.grpc_port);
    printf("READY unix=%s grpc=%s metrics=%d\n", o->socket_path ? o->socket_path : "-", grpc, s.http ? s.http_port : 0);
    fflush(stdout);

    int sig = 0;
    sigwait(&sigs, &sig);
    fprintf(stderr, "featstore: %s received, shutting down\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    shutdown_all(&s);
    fprintf(stderr, "featstore: stopped\n");
    return 0;
}
