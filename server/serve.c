/* serve.c — `featstore serve`. Startup: bind every address (the unix
 * socket, the gRPC port, the metrics port: one in use fails now, not after
 * loading), open the dataset (copied where nobody can write it, and
 * verified: dataset/served_copy.c; a watcher reports files changed
 * afterwards: watch.c), build the store (the placement plugs in here), then
 * start answering on every transport, log one line, and print a READY line
 * with the bound addresses (scripts and tests read it). Connections made
 * while the dataset loads wait in the sockets' backlogs until then. Shutdown on SIGTERM/SIGINT:
 * stop accepting, let in-flight requests finish, release shared memory,
 * exit 0.
 *
 * A typed dataset (several node or edge types) is served as it is: Info
 * describes its types, Split serves "TYPE/NAME" and link splits' arrays,
 * and the typed calls sample it; a placement, which plans one graph, is
 * refused for it at start and on re-plan.
 *
 * Re-planning while serving: a REPLAN request (`featstore replan`,
 * fs_replan) or SIGHUP builds a complete new placement beside the served
 * one and then switches to it; nothing is torn down until it is ready, and
 * a failed re-plan changes nothing.
 *
 * Under systemd (packaging/featstore.service, Type=notify) it says READY=1
 * once serving and STOPPING=1 when stopping.
 *
 * Signals are blocked in every thread and taken synchronously with
 * sigwait() by the main thread, so no handler runs inside library code. */
#include "serve.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "disk_tables.h"
#include "engine.h"
#include "fs_device.h"
#include "fs_shm.h"
#include "grpc_server.h"
#include "http.h"
#include "local.h"
#include "metrics.h"
#include "place_las.h"
#include "replan.h"
#include "watch.h"

void fs_serve_defaults(fs_serve_opts_t *o)
{
    memset(o, 0, sizeof *o);
    fs_limits_default(&o->limits);
    o->handshake_timeout_ms = FS_LOCAL_DEFAULT_HANDSHAKE_MS;
    o->max_conns_per_uid = FS_LOCAL_DEFAULT_MAX_CONNS_PER_UID;
    o->admin_uid = -1;
}

fs_status_t fs_serve_copy_medium(const char *text, const char *what, fs_copy_medium_t *out, fs_error_t *err)
{
    static const char *const names[] = {"auto", "memory", "file"};
    static const fs_copy_medium_t media[] = {FS_COPY_AUTO, FS_COPY_MEMFD, FS_COPY_FILE};
    for (int i = 0; i < 3; i++) {
        if (text && strcmp(text, names[i]) != 0) continue;
        *out = media[i]; /* no text: the first, auto */
        return FS_OK;
    }
    return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s must be auto, memory or file, not '%s'", what, text);
}

typedef struct {
    fs_dataset_t *ds;
    fs_store_t *store;
    fs_engine_t *engine;
    fs_metrics_t *metrics;
    fs_local_server_t *local;
    fs_grpc_server_t *grpc;
    fs_http_t *http;
    fs_watch_t *watch;
    fs_disk_tables_t *disk; /* the feature tables left on disk by the memory budget */
    int http_port, grpc_port;
    /* placement: the options the store was placed with; re-plans (REPLAN
     * requests, SIGHUP) start from them one at a time */
    pthread_mutex_t replan_mu;
    fs_place_opts_t place;
    char topology[256], plan_in[512], alpha[128]; /* place's strings after a re-plan */
    int plan_dir_fd;                              /* --plan-dir, opened once; -1 without */
    const char *plan_dir;
} server_t;

/* /metrics: the server's metrics, rendered per scrape (http.h). */
static char *render_metrics(void *metrics)
{
    return fs_metrics_render(metrics);
}

static void shutdown_all(server_t *s)
{
    fs_http_stop(s->http);            /* stop accepting first ... */
    fs_grpc_server_stop(s->grpc);     /* ... let in-flight gRPC calls finish ... */
    fs_local_server_stop(s->local);   /* ... disconnect local clients, remove the socket */
    fs_watch_stop(s->watch);
    if (s->plan_dir_fd >= 0) close(s->plan_dir_fd);
    fs_metrics_destroy(s->metrics);
    fs_engine_destroy(s->engine);
    fs_store_destroy(s->store);
    fs_disk_tables_close(s->disk); /* read through by the store's and the engine's views */
    fs_dataset_close(s->ds);
}

/* How GPU trainers will read the host rows: registration is per process
 * (each trainer registers its own mappings, client-lib), so the server asks
 * the driver about one page of the dataset as they will map it, and says
 * which way it went. */
static void log_host_access(const fs_dataset_t *ds)
{
    long page = sysconf(_SC_PAGESIZE);
    const void *probe = (const void *)((uintptr_t)ds->indptr & ~(uintptr_t)(page - 1)), *dev;
    fs_error_t err = {0};
    if (fs_cuda_host_register(probe, (size_t)page, &dev, &err) == FS_OK) {
        fs_cuda_host_unregister(probe);
        fprintf(stderr, "featstore: host rows: GPU trainers read the dataset's pages in place over UVA (registered, "
                "read-only)\n");
    } else {
        fprintf(stderr, "featstore: host rows: the driver will not register the dataset's pages (%s): each GPU "
                "trainer reads a pinned copy of them\n", err.msg);
    }
}

/* One line per GPU tier: its bytes, and how its one allocation was filled
 * (host to device, and replicas GPU to GPU); then how the host rows are read. */
static void log_device_tiers(const fs_store_t *store, const fs_dataset_t *ds)
{
    int any = 0;
    for (int k = 1; k < fs_store_num_tiers(store); k++) {
        fs_store_tier_t ti;
        fs_store_tier_info(store, k, &ti);
        if (ti.kind != FS_TIER_DEVICE) continue;
        any = 1;
        fprintf(stderr, "featstore: gpu %d: %.1f MiB in device memory (one allocation of %.1f MiB): %.1f MiB copied "
                "from the host, %.1f MiB from a replica, GPU to GPU%s%s%s\n", ti.device, (double)ti.used / (1 << 20),
                (double)ti.capacity / (1 << 20), (double)ti.from_host / (1 << 20), (double)ti.from_peer / (1 << 20),
                ti.peer_method ? " (" : "", ti.peer_method ? ti.peer_method : "", ti.peer_method ? ")" : "");
    }
    if (any) log_host_access(ds);
}

/* The served copy: its size, its time, where it is, and its page size,
 * with what to do when it is in 4 KiB pages (docs/serving.md "Huge pages"). */
static void log_copy(const fs_dataset_t *ds, double seconds)
{
    double on_disk = (double)fs_dataset_on_disk_bytes(ds), bytes = (double)fs_dataset_bytes(ds) - on_disk;
    long long huge = fs_dataset_huge_bytes(ds);
    const char *dir;
    double in_files = (double)fs_dataset_file_copy_bytes(ds, &dir);
    char pages[64] = "page size unknown", where[400] = "sealed memory";
    if (huge >= 0) snprintf(pages, sizeof pages, "%.0f%% in 2 MiB pages", bytes > 0 ? 100.0 * (double)huge / bytes : 0);
    if (in_files > 0)
        snprintf(where, sizeof where, "%sunnamed read-only files in %s", in_files < bytes ? "sealed memory and " : "",
                 dir);
    char left[128] = "";
    if (on_disk > 0)
        snprintf(left, sizeof left, "; %.2f %s of feature tables left on disk (the memory budget)",
                 on_disk >= (1 << 30) ? on_disk / (1 << 30) : on_disk / (1 << 20), on_disk >= (1 << 30) ? "GiB" : "MiB");
    fprintf(stderr, "featstore: dataset copied into %s%s: %.2f GiB in %.2f s, %s%s\n", where,
            ds->checksums_verified ? " and its checksums verified" : " (no checksums in the manifest)",
            bytes / (1 << 30), seconds, pages, left);
    char setting[32];
    if (huge >= 0 && (double)huge < bytes / 2 && bytes >= (4 << 20))
        fprintf(stderr, "featstore: note: the copy is in 4 KiB pages (the host's shmem THP setting is '%s'%s): each "
                "trainer then needs its own page tables for all of it, and several trainers per core gather up to "
                "~10%% slower; 'echo advise > /sys/kernel/mm/transparent_hugepage/shmem_enabled' before starting "
                "lets featstore use 2 MiB pages (docs/serving.md \"Huge pages\")\n",
                fs_shm_huge_setting(setting, sizeof setting),
                in_files > 0 ? ", and the copy directory's file system keeps no large folios" : "");
}

/* The length of HOST in HOST:PORT, for printing the bound address. */
static int host_len(const char *addr) { return (int)(strrchr(addr, ':') - addr); }

static void log_startup(const fs_serve_opts_t *o, const server_t *s)
{
    char gpus[600];
    fs_devices_t d;
    fs_error_t derr = {0};
    if (fs_devices_query(&d, &derr) == FS_OK) snprintf(gpus, sizeof gpus, "%d GPU(s), %s", d.count, d.dev[0].name);
    else snprintf(gpus, sizeof gpus, "no GPU used: %s", derr.msg);
    if (fs_dataset_is_typed(s->ds))
        fprintf(stderr, "featstore: serving '%s' (typed: %d node types, %d edge types, %d link splits, %.2f GiB) from "
                "%s | transports:", s->ds->name, s->ds->num_node_types, s->ds->num_edge_types, s->ds->num_link_splits,
                (double)fs_dataset_bytes(s->ds) / (1 << 30), o->dataset);
    else
        fprintf(stderr, "featstore: serving '%s' (%lld nodes, %lld edges, %d tables, %.2f GiB) from %s | transports:",
                s->ds->name, (long long)s->ds->num_nodes, (long long)s->ds->num_edges, s->ds->num_tables,
                (double)fs_dataset_bytes(s->ds) / (1 << 30), o->dataset);
    if (o->socket_path) fprintf(stderr, " unix://%s", o->socket_path);
    if (s->grpc)
        fprintf(stderr, " %s://%.*s:%d%s%s", o->tls_cert ? "grpcs" : "grpc", host_len(o->listen),
                o->listen, s->grpc_port, o->tls_client_ca ? " (client certificates required)" : "",
                o->token_file ? " (bearer token required)" : "");
    if (s->http) fprintf(stderr, " | metrics http://%.*s:%d/metrics", host_len(o->metrics),
                         o->metrics, s->http_port);
    fs_store_tier_t ti = {0};
    if (fs_store_num_tiers(s->store) > 1) fs_store_tier_info(s->store, 1, &ti);
    fprintf(stderr, " | tiers: %d (tier 0 copy of the files%s) | %s\n", fs_store_num_tiers(s->store),
            fs_store_num_tiers(s->store) == 1        ? ""
            : ti.kind == FS_TIER_DEVICE             ? ", then each planned GPU's memory"
                                                    : ", then one simulated GPU per planned GPU, in host memory", gpus);
    log_device_tiers(s->store, s->ds);
}

void fs_serve_grpc_opts(const fs_serve_opts_t *o, fs_grpc_server_opts_t *go)
{
    fs_grpc_server_defaults(go);
    go->listen = o->listen, go->threads = o->threads, go->max_calls = o->grpc_max_calls;
    go->request_timeout_ms = o->request_timeout_ms;
    go->tls_cert = o->tls_cert, go->tls_key = o->tls_key, go->tls_client_ca = o->tls_client_ca;
    go->token_file = o->token_file;
}

void fs_serve_block_signals(sigset_t *sigs)
{
    sigemptyset(sigs);
    sigaddset(sigs, SIGTERM);
    sigaddset(sigs, SIGINT);
    sigaddset(sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, sigs, NULL); /* before any thread starts */
    signal(SIGPIPE, SIG_IGN);
}

static fs_status_t listen_grpc(const fs_serve_opts_t *o, server_t *s, fs_error_t *err)
{
    fs_grpc_server_opts_t go;
    fs_serve_grpc_opts(o, &go);
    return fs_grpc_server_listen(&go, &o->limits, &s->grpc, &s->grpc_port, err);
}

/* A placement plans one graph (its hotness, partitions and preferred sets
 * are per node of the version-1 graph): a typed dataset is served without
 * one, and a placement asked for (at start, or by a re-plan) is refused. */
static fs_status_t placement_needs_one_graph(const fs_dataset_t *ds, const char *asked, fs_error_t *err)
{
    if (!fs_dataset_is_typed(ds)) return FS_OK;
    return fs_error(err, FS_ERR_UNSUPPORTED, "%s: placement plans one graph; dataset %s is typed (%d node types, %d "
                    "edge types): serve it without --topology, --plan, --save-plan, --gpu-budget, --table, "
                    "--hotness, --order, --alpha and --reserve (and re-plan nothing)", asked, ds->dir,
                    ds->num_node_types, ds->num_edge_types);
}

/* Plans with `po` and places the plan in `store` (not yet shared): one
 * simulated GPU tier per planned GPU, and each planned GPU's preferred sets
 * for locality-aware sampling (place_las.h). *cost receives the plan's
 * prediction per reader GPU. */
static fs_status_t place(const fs_place_opts_t *po, const fs_dataset_t *ds, fs_store_t *store, fs_cost_t *cost,
                         fs_error_t *err)
{
    fs_hardware_t hw;
    fs_plan_t *plan;
    fs_place_choice_t choice;
    fs_status_t st = fs_place_plan(ds, po, &hw, &plan, &choice, err);
    if (st != FS_OK) return st;
    if (choice.decided)
        fprintf(stderr, "plan: order auto: %s (slowest reader per mini-batch: topology first %.3f ms, feature first "
                "%.3f ms)\n", plan->budget.feature_first ? "feature-first" : "topology-first", choice.seconds[0] * 1e3,
                choice.seconds[1] * 1e3);
    fs_place_describe(stderr, plan, &hw);
    st = fs_place_apply(store, ds, plan, po->table, fs_place_tier_kind(plan), err);
    if (st == FS_OK) st = fs_place_predict(ds, plan, &hw, po, cost, err);
    if (st == FS_OK) {
        fs_las_opts_t lo;
        fs_las_defaults(&lo);
        lo.num_levels = FS_PLACE_LAS_LEVELS, lo.threads = po->threads;
        st = fs_place_locality(store, ds, plan, &lo, stderr, err);
    }
    fs_plan_free(plan);
    return st;
}

/* The prediction goes to the metrics (and so to Info and /metrics), next
 * to the counters that measure it. */
static void publish_prediction(fs_metrics_t *m, const fs_cost_t *cost)
{
    for (int r = 0; r < cost->num_gpus; r++) {
        double bytes[FS_SOURCE_COUNT_] = {cost->local_bytes[r], cost->peer_bytes[r], cost->host_bytes[r]};
        fs_metrics_set_predicted(m, r, bytes);
    }
}

/* The options of a re-plan: the current ones with the request's overrides.
 * Strings point into req or into s. */
static const char *given(const char *s) { return s && s[0] ? s : NULL; }

static fs_status_t replan_opts(const server_t *s, const fs_replan_req_t *req, fs_place_opts_t *po, fs_error_t *err)
{
    *po = s->place;
    po->plan_out = NULL; /* saving is asked for each time, never repeated */
    if (given(req->topology)) po->topology = req->topology, po->plan_in = NULL;
    if (given(req->plan)) po->plan_in = req->plan;
    if (!po->topology && !po->plan_in)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "re-plan: this server has no placement; name a topology");
    fs_status_t st = fs_place_opts_from_text(po, given(req->hotness), given(req->order), given(req->reserve),
                                             given(req->alpha), err);
    if (st != FS_OK) return st;
    if (!(req->gpu_budget >= 0 && req->gpu_budget <= 1))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "re-plan: gpu_budget %g (need a fraction in (0, 1], or 0 to keep "
                        "the current one)", req->gpu_budget);
    if (req->gpu_budget > 0) po->gpu_budget = req->gpu_budget;
    return FS_OK;
}

/* Copies src (NULL = unset) into buf, for strings that must outlive a request. */
static const char *keep_string(char *buf, size_t size, const char *src, char *tmp)
{
    snprintf(tmp, size, "%s", src ? src : ""); /* src may be buf itself */
    memcpy(buf, tmp, size);
    return src ? buf : NULL;
}

/* po becomes the server's placement options; its strings may live in a
 * request or in s, so they are copied into s. */
static void keep_place(server_t *s, const fs_place_opts_t *po)
{
    char tmp[sizeof s->plan_in];
    s->place = *po;
    s->place.topology = keep_string(s->topology, sizeof s->topology, po->topology, tmp);
    s->place.plan_in = keep_string(s->plan_in, sizeof s->plan_in, po->plan_in, tmp);
    s->place.alpha = keep_string(s->alpha, sizeof s->alpha, po->alpha, tmp);
    s->place.plan_out = NULL; /* saving is asked for each time, never repeated */
}

/* ---- a re-plan's `save`: only into --plan-dir, never through a link ---------------- */

typedef struct {
    int dir;          /* the private directory the plan is written in; -1 when nothing is saved */
    char sub[64];     /* that directory's name in --plan-dir */
    char name[256];   /* the plan's name in --plan-dir */
    char path[64];    /* what the plan writer gets: /proc/self/fd/<dir>/plan */
} plan_save_t;

/* A save is one plain file name in --plan-dir (no '/', no leading '.': no
 * "..", no way out). The plan writer takes a path and follows links, so it
 * writes into a fresh directory of the server's own, mode 0700, reached
 * through its descriptor (/proc/self/fd): nobody else can put a link in
 * there, or swap the directory (it is checked to be ours after opening). */
static fs_status_t save_begin(const server_t *s, const char *name, plan_save_t *ps, fs_error_t *err)
{
    static _Atomic unsigned serial;
    struct stat st;
    ps->dir = -1;
    if (s->plan_dir_fd < 0)
        return fs_error(err, FS_ERR_PERMISSION, "re-plan: this server saves no plans (save '%s'): start it with "
                        "--plan-dir DIR to allow saving plans into DIR", name);
    if (!name[0] || strlen(name) >= sizeof ps->name || name[0] == '.' || strchr(name, '/'))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "re-plan: save '%s' must be a plain file name (no '/', not "
                        "starting with '.', under 256 bytes); it is written into --plan-dir %s", name, s->plan_dir);
    snprintf(ps->name, sizeof ps->name, "%s", name);
    snprintf(ps->sub, sizeof ps->sub, ".featstore-save-%d-%u", (int)getpid(), atomic_fetch_add(&serial, 1));
    if (mkdirat(s->plan_dir_fd, ps->sub, 0700) != 0 ||
        (ps->dir = openat(s->plan_dir_fd, ps->sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
        fstat(ps->dir, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
        int e = errno;
        if (ps->dir >= 0) close(ps->dir);
        ps->dir = -1;
        return fs_error(err, FS_ERR_IO, "re-plan: cannot write into --plan-dir %s: %s", s->plan_dir, strerror(e));
    }
    snprintf(ps->path, sizeof ps->path, "/proc/self/fd/%d/plan", ps->dir);
    return FS_OK;
}

/* publish: the plan takes its name in --plan-dir (renameat replaces a link
 * of that name, never follows it). Then the private directory goes. */
static fs_status_t save_end(const server_t *s, plan_save_t *ps, int publish, fs_error_t *err)
{
    if (ps->dir < 0) return FS_OK;
    fs_status_t st = FS_OK;
    if (publish && renameat(ps->dir, "plan", s->plan_dir_fd, ps->name) != 0)
        st = fs_error(err, FS_ERR_IO, "re-plan: cannot save the plan as %s/%s: %s", s->plan_dir, ps->name,
                      strerror(errno));
    unlinkat(ps->dir, "plan", 0);
    unlinkat(ps->dir, "plan.tmp", 0);
    close(ps->dir);
    unlinkat(s->plan_dir_fd, ps->sub, AT_REMOVEDIR);
    ps->dir = -1;
    return st;
}

/* Makes a whole new placement beside the served one, then switches every
 * transport to it: the engine (gRPC requests in flight finish on the old
 * store, which is freed after them), the metrics, and local clients (told
 * through the notice page; they relayout before their next call). Any
 * failure leaves the served placement as it was. */
static fs_status_t replan(void *ctx, const fs_replan_req_t *req, fs_replan_done_t *out, fs_error_t *err)
{
    server_t *s = ctx;
    double t0 = fs_now();
    pthread_mutex_lock(&s->replan_mu);
    fs_place_opts_t po;
    fs_store_t *store = NULL;
    fs_cost_t cost;
    plan_save_t save = {.dir = -1};
    fs_status_t st = placement_needs_one_graph(s->ds, "re-plan", err);
    if (st == FS_OK) st = replan_opts(s, req, &po, err);
    if (st == FS_OK && given(req->save) && (st = save_begin(s, req->save, &save, err)) == FS_OK)
        po.plan_out = save.path;
    if (st == FS_OK) st = fs_store_create(s->ds, &store, err);
    if (st == FS_OK) st = place(&po, s->ds, store, &cost, err);
    if (st == FS_OK) st = fs_store_freeze(store, err);
    if (st == FS_OK) st = save_end(s, &save, 1, err); /* saved before switching: a failed save changes nothing */
    save_end(s, &save, 0, err);
    if (st == FS_OK) {
        uint64_t gen = fs_engine_replace_store(s->engine, fs_store_retain(store));
        fs_metrics_replace_store(s->metrics, store, gen);
        publish_prediction(s->metrics, &cost);
        fs_local_server_notify(s->local, gen);
        fs_store_destroy(s->store); /* s->store: the served store, for the startup log and shutdown */
        s->store = store;
        store = NULL;
        keep_place(s, &po);
        *out = (fs_replan_done_t){.generation = gen, .seconds = fs_now() - t0};
        fprintf(stderr, "featstore: re-planned in %.2f s: placement generation %llu is served\n", out->seconds,
                (unsigned long long)gen);
    } else {
        fprintf(stderr, "featstore: re-plan refused, the served placement is unchanged: %s\n", err->msg);
    }
    fs_store_destroy(store);
    fs_metrics_replan(s->metrics, st);
    pthread_mutex_unlock(&s->replan_mu);
    return st;
}

/* Every local client holds a socket and its result slots open in the
 * server, so the soft limit on descriptors (often 1024) would cap the
 * clients long before memory does: it goes up to the hard limit. */
static void raise_nofile(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) != 0) return;
    rlim_t was = r.rlim_cur;
    if (r.rlim_cur < r.rlim_max) {
        r.rlim_cur = r.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &r) != 0) r.rlim_cur = was; /* a hard limit above the kernel's nr_open */
    }
    fprintf(stderr, "featstore: open files: up to %llu (RLIMIT_NOFILE soft limit %s %llu; hard limit %llu)\n",
            (unsigned long long)r.rlim_cur, r.rlim_cur == was ? "left at" : "raised from", (unsigned long long)was,
            (unsigned long long)r.rlim_max);
}

/* The unix:// transport's options: the socket, re-planning, the guards. */
static fs_status_t listen_local(const fs_serve_opts_t *o, server_t *s, fs_error_t *err)
{
    fs_local_server_opts_t lo;
    fs_local_server_defaults(&lo);
    lo.socket_path = o->socket_path, lo.replan = replan, lo.replan_ctx = s;
    lo.handshake_timeout_ms = o->handshake_timeout_ms, lo.max_conns_per_uid = o->max_conns_per_uid;
    lo.allow_uids = o->allow_uids, lo.num_allow_uids = o->num_allow_uids;
    lo.allow_gids = o->allow_gids, lo.num_allow_gids = o->num_allow_gids;
    if (o->admin_uid >= 0) lo.admin_uid = (uid_t)o->admin_uid;
    return fs_local_server_listen(&lo, &s->local, err);
}

/* Every address is bound before the dataset is loaded, so one in use (or
 * a bad TLS file) fails at once and not after the copy. Until serve_all,
 * connections wait in the sockets' backlogs: none is lost, none is
 * answered before the dataset is ready. */
static fs_status_t listen_all(const fs_serve_opts_t *o, server_t *s, fs_error_t *err)
{
    fs_status_t st = o->socket_path ? listen_local(o, s, err) : FS_OK;
    if (!st && o->listen) st = listen_grpc(o, s, err);
    if (!st && o->metrics) st = fs_http_listen(o->metrics, &s->http, &s->http_port, err);
    if (st) return st;
    fprintf(stderr, "featstore: bound");
    if (o->socket_path) fprintf(stderr, " unix://%s", o->socket_path);
    if (s->grpc) fprintf(stderr, " %.*s:%d (gRPC)", host_len(o->listen), o->listen, s->grpc_port);
    if (s->http) fprintf(stderr, " %.*s:%d (metrics)", host_len(o->metrics), o->metrics, s->http_port);
    fprintf(stderr, "; loading %s (connections wait until it is served)\n", o->dataset);
    return FS_OK;
}

/* The dataset is ready: every transport starts answering. */
static fs_status_t serve_all(server_t *s, fs_error_t *err)
{
    fs_status_t st = s->local ? fs_local_server_serve(s->local, s->engine, s->metrics, err) : FS_OK;
    if (!st && s->grpc) st = fs_grpc_server_serve(s->grpc, s->engine, s->metrics, err);
    if (!st && s->http) st = fs_http_serve(s->http, render_metrics, s->metrics, err);
    return st;
}

/* Under systemd (Type=notify): READY=1 once serving, STOPPING=1 when told
 * to stop, sent to $NOTIFY_SOCKET as sd_notify(3) does (one datagram; a
 * leading '@' names an abstract socket), so `systemctl start` returns, and
 * units ordered after featstore start, only when the dataset is served.
 * Without $NOTIFY_SOCKET, nothing. */
static void notify_systemd(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (!path || (path[0] != '/' && path[0] != '@') || strlen(path) >= sizeof a.sun_path) return;
    memcpy(a.sun_path, path, strlen(path));
    if (path[0] == '@') a.sun_path[0] = '\0';
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path));
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&a, len) < 0)
        fprintf(stderr, "featstore: warning: cannot tell systemd '%s' through NOTIFY_SOCKET %s: %s\n", state, path,
                strerror(errno));
    if (fd >= 0) close(fd);
}

/* --plan-dir, opened once: re-plans save through this descriptor only. */
static fs_status_t open_plan_dir(const fs_serve_opts_t *o, server_t *s, fs_error_t *err)
{
    if (!o->plan_dir) return FS_OK;
    s->plan_dir = o->plan_dir;
    if ((s->plan_dir_fd = open(o->plan_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return fs_error(err, FS_ERR_IO, "--plan-dir %s: %s", o->plan_dir, strerror(errno));
    return FS_OK;
}

int fs_serve(const fs_serve_opts_t *o)
{
    if (o->parts) return fs_serve_shard(o); /* a shard of a partitioned dataset: serve_shard.c */
    sigset_t sigs;
    fs_serve_block_signals(&sigs);

    server_t s = {.place = o->place, .plan_dir_fd = -1};
    pthread_mutex_init(&s.replan_mu, NULL);
    s.place.threads = o->threads;
    fs_error_t err = {0};
    fs_cost_t cost;
    /* Serving reads sealed copies, never the files (dataset.c): the copy
     * computes each checksum anyway, so verification is always on. */
    double t0 = fs_now();
    raise_nofile();
    fs_status_t st = open_plan_dir(o, &s, &err);
    if (!st) st = listen_all(o, &s, &err);
    if (!st) st = fs_dataset_open_served(o->dataset, &o->copy, o->verify ? FS_OPEN_VERIFY : 0, 0, &s.ds, &err);
    if (!st) log_copy(s.ds, fs_now() - t0);
    if (!st) st = fs_disk_tables_open(s.ds, o->copy.mem_budget, stderr, &s.disk, &err);
    if (!st && (o->place.topology || o->place.plan_in || o->place.plan_out))
        st = placement_needs_one_graph(s.ds, "serve", &err);
    if (!st && o->prefault) fs_dataset_prefault(s.ds);
    if (!st) st = fs_store_create(s.ds, &s.store, &err);
    if (!st && !(s.metrics = fs_metrics_create(s.ds, s.store))) st = fs_error(&err, FS_ERR_NOMEM, "out of memory");
    if (!st) fs_metrics_set_disk(s.metrics, s.disk);
    if (!st) st = fs_watch_start(s.ds, s.metrics, stderr, 1000, &s.watch, &err);
    if (!st && o->place.topology && !(st = place(&s.place, s.ds, s.store, &cost, &err))) publish_prediction(s.metrics, &cost);
    s.place.plan_out = NULL; /* saved once, at start */
    if (!st) st = fs_store_freeze(s.store, &err);
    if (!st) st = fs_engine_create(s.ds, s.store, &o->limits, &s.engine, &err);
    if (!st) fs_engine_set_disk_tables(s.engine, s.disk);
    if (!st) st = serve_all(&s, &err);
    if (st != FS_OK) {
        fprintf(stderr, "featstore: error: %s [%s]\n", err.msg, fs_strerror(err.code));
        shutdown_all(&s);
        return 1;
    }
    log_startup(o, &s);
    char grpc[300] = "-";
    if (s.grpc) snprintf(grpc, sizeof grpc, "%.*s:%d", host_len(o->listen), o->listen, s.grpc_port);
    printf("READY unix=%s grpc=%s metrics=%d\n", o->socket_path ? o->socket_path : "-", grpc, s.http ? s.http_port : 0);
    fflush(stdout);
    notify_systemd("READY=1");

    int sig = 0;
    while (sigwait(&sigs, &sig) == 0 && sig == SIGHUP) { /* SIGHUP: re-plan with the current options */
        fs_replan_req_t keep = {0};
        fs_replan_done_t r;
        fs_error_t rerr = {0};
        fprintf(stderr, "featstore: SIGHUP received, re-planning\n");
        replan(&s, &keep, &r, &rerr);
    }
    fprintf(stderr, "featstore: %s received, shutting down\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    notify_systemd("STOPPING=1");
    shutdown_all(&s);
    pthread_mutex_destroy(&s.replan_mu);
    fprintf(stderr, "featstore: stopped\n");
    return 0;
}
