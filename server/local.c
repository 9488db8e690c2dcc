/* local.c — see local.h. */
#include "local.h"

#include <errno.h>
#include <fcntl.h>
#include <pb_encode.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "fs_local.h"

typedef struct client {
    int fd;
    int slots[FS_LOCAL_MAX_SLOTS];
    int num_slots;
    int welcomed;
    int reader;             /* from HELLO: whose placement it reads through */
    struct client *next;
} client_t;

struct fs_local_server {
    char path[108];
    int listen_fd, epoll_fd, wake_fd;
    pthread_t thread;
    fs_engine_t *engine;
    fs_metrics_t *metrics;
    fs_local_welcome_t welcome;
    int data_fds[4 + FS_LOCAL_MAX_TABLES];  /* indptr, indices, [weights], tables, the notice page */
    int num_data_fds;
    _Atomic uint64_t *notice;               /* the notice page: the generation served */
    fs_local_replan_fn replan;
    void *replan_ctx;
    pthread_t replan_thread;
    _Atomic int replan_state;               /* 0 none, 1 running, 2 finished (thread to join) */
    client_t *clients;
    _Atomic int num_clients;
    _Alignas(16) char buf[FS_LOCAL_MAX_MSG]; /* messages are read in place as structs */
};

/* ---- the dataset's descriptors, opened once and shared with every client ---- */

static fs_status_t open_data_fd(fs_local_server_t *s, const void *data, int64_t *offset, fs_error_t *err)
{
    char path[4300];
    if (fs_dataset_locate(fs_engine_dataset(s->engine), data, path, sizeof path, offset) != FS_OK)
        return fs_error(err, FS_ERR_INTERNAL, "local: an array of the dataset is not file-backed");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fs_error(err, FS_ERR_IO, "local: cannot reopen %s: %s", path, strerror(errno));
    s->data_fds[s->num_data_fds++] = fd;
    return FS_OK;
}

static fs_status_t prepare_welcome(fs_local_server_t *s, fs_error_t *err)
{
    const fs_dataset_t *ds = fs_engine_dataset(s->engine);
    const fs_limits_t *l = fs_engine_limits(s->engine);
    fs_local_welcome_t *w = &s->welcome;
    *w = (fs_local_welcome_t){.api_version = 1, .index_dtype = ds->index_dtype, .has_weights = ds->edge_weights != NULL,
                              .num_nodes = ds->num_nodes, .num_edges = ds->num_edges, .max_ids = l->max_ids,
                              .max_fanout_product = l->max_fanout_product, .max_response_bytes = l->max_response_bytes};
    snprintf(w->dataset, sizeof w->dataset, "%s", ds->name);
    fs_status_t st = open_data_fd(s, ds->indptr, &w->indptr_offset, err);
    if (!st) st = open_data_fd(s, ds->indices, &w->indices_offset, err);
    if (!st && ds->edge_weights) st = open_data_fd(s, ds->edge_weights, &w->weights_offset, err);
    for (int i = 0; !st && i < ds->num_tables && i < FS_LOCAL_MAX_TABLES; i++) {
        fs_local_table_t *t = &w->tables[w->num_tables++];
        snprintf(t->name, sizeof t->name, "%s", ds->tables[i].name);
        t->dtype = ds->tables[i].dtype;
        t->rows = ds->tables[i].rows;
        t->dim = ds->tables[i].dim;
        st = open_data_fd(s, ds->tables[i].data, &t->data_offset, err);
    }
    if (st) return st;
    int fd = memfd_create("featstore-notice", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, FS_LOCAL_NOTICE_BYTES) != 0) {
        if (fd >= 0) close(fd);
        return fs_error(err, FS_ERR_NOMEM, "local: cannot create the notice page: %s", strerror(errno));
    }
    s->data_fds[s->num_data_fds++] = fd;
    s->notice = mmap(NULL, FS_LOCAL_NOTICE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (s->notice == MAP_FAILED) {
        s->notice = NULL;
        return fs_error(err, FS_ERR_NOMEM, "local: cannot map the notice page: %s", strerror(errno));
    }
    fs_store_t *store = fs_engine_acquire(s->engine, &w->generation);
    atomic_store(s->notice, w->generation);
    fs_store_destroy(store);
    return FS_OK;
}

void fs_local_server_notify(fs_local_server_t *s, uint64_t generation)
{
    if (s) atomic_store(s->notice, generation);
}

/* ---- clients ------------------------------------------------------------------ */

static void drop_client(fs_local_server_t *s, client_t *c)
{
    epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    for (int i = 0; i < c->num_slots; i++) close(c->slots[i]); /* the client's mappings keep them alive until it unmaps */
    for (client_t **p = &s->clients; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    if (c->welcomed) fs_metrics_client(s->metrics, FS_TRANSPORT_UNIX, -1);
    atomic_fetch_sub(&s->num_clients, 1);
    free(c);
}

static int send_error(int fd, fs_status_t st, const char *msg)
{
    fs_local_error_t e = {.status = st};
    snprintf(e.message, sizeof e.message, "%.*s", (int)sizeof e.message - 1, msg); /* long details are cut */
    return fs_local_send(fd, FS_LOCAL_ERROR, &e, sizeof e, NULL, 0, MSG_DONTWAIT);
}

/* Adds the reader's placement in store `st` (tier slices, routes, topology
 * parts) to the welcome and its descriptors to fds. FS_OK, or why it cannot
 * be shared. The descriptors are the store's: send before releasing it. */
static fs_status_t add_placement(fs_local_server_t *s, fs_store_t *st, int reader, fs_local_welcome_t *w, int *fds,
                                 int *n, fs_error_t *err)
{
    const fs_dataset_t *ds = fs_engine_dataset(s->engine);
    if (!fs_store_frozen(st)) return fs_error(err, FS_ERR_INTERNAL, "the store is not frozen");
    w->reader = reader;
    w->num_tiers = (uint32_t)fs_store_num_tiers(st);
    for (uint32_t k = 0; k < w->num_tiers; k++) {
        fs_tier_info_t ti;
        fs_store_tier_info(st, (int)k, &ti);
        w->tier_kind[k] = ti.kind, w->tier_device[k] = ti.device;
    }
#define PUSH(fd)                                                                                      \
    do {                                                                                              \
        if (*n == FS_LOCAL_MAX_FDS - FS_LOCAL_MAX_SLOTS)                                              \
            return fs_error(err, FS_ERR_RESOURCE, "the placement has too many pieces to hand over");  \
        fds[(*n)++] = (fd);                                                                           \
    } while (0)
    for (uint32_t t = 0; t < w->num_tables; t++)
        for (uint32_t k = 1; k < w->num_tiers; k++) {
            int64_t rows = 0;
            int fd = fs_store_table_fd(st, ds->tables[t].name, (int)k, &rows);
            if (rows > 0 && fd < 0)
                return fs_error(err, FS_ERR_UNSUPPORTED, "tier %u holds GPU memory, which is not yet handed to "
                                "local clients (CUDA IPC); connect as another reader", k);
            if (rows > 0) {
                PUSH(fd);
                w->slice_rows[t][k] = rows;
            }
        }
    for (uint32_t t = 0; t < w->num_tables; t++) {
        int fd = fs_store_route_fd(st, ds->tables[t].name, reader);
        if (fd >= 0) {
            PUSH(fd);
            w->table_route[t] = 1;
        }
    }
    for (uint32_t k = 1; k < w->num_tiers; k++) {
        int64_t rows = 0;
        int ip = fs_store_topology_fd(st, (int)k, 0, &rows), ix = fs_store_topology_fd(st, (int)k, 1, &rows);
        if (rows <= 0) continue;
        if (ip < 0 || ix < 0)
            return fs_error(err, FS_ERR_UNSUPPORTED, "tier %u holds topology in GPU memory, not yet handed to local "
                            "clients", k);
        PUSH(ip);
        PUSH(ix);
        if (w->has_weights) PUSH(fs_store_topology_fd(st, (int)k, 2, &rows));
        w->topo_rows[k] = rows;
    }
    int fd = fs_store_topology_route_fd(st, reader);
    if (fd >= 0) {
        PUSH(fd);
        w->topo_route = 1;
    }
    fs_locality_t las; /* the reader's preferred sets, when the placement built some */
    fs_store_locality(st, reader, 1, &las);
    w->las_counts = las.num_levels > 0 && las.count[0] != NULL;
    for (int l = 1; l <= las.num_levels; l++) {
        int pref = fs_store_locality_fd(st, reader, l, 0), count = fs_store_locality_fd(st, reader, l, 1);
        if (pref < 0 || (w->las_counts && count < 0))
            return fs_error(err, FS_ERR_INTERNAL, "reader %d's preferred set Q_%d has no descriptor", reader, l);
        PUSH(pref);
        if (w->las_counts) PUSH(count);
    }
    w->las_levels = las.num_levels;
#undef PUSH
    return FS_OK;
}

/* Sends a WELCOME describing the placement served now to c's reader, with
 * new result slots when `slots` > 0 (HELLO) and none otherwise (RELAYOUT).
 * 0, or -1 to drop the client. */
static int send_welcome(fs_local_server_t *s, client_t *c, int slots)
{
    fs_local_welcome_t w = s->welcome;
    int fds[FS_LOCAL_MAX_FDS], n = 0;
    fs_error_t err = {0};
    for (int i = 0; i < s->num_data_fds; i++) fds[n++] = s->data_fds[i];
    fs_store_t *store = fs_engine_acquire(s->engine, &w.generation);
    if (add_placement(s, store, c->reader, &w, fds, &n, &err) != FS_OK) {
        fs_store_destroy(store);
        return send_error(c->fd, err.code, err.msg);
    }
    for (int i = 0; i < slots; i++) { /* the client's until it goes (drop_client closes them) */
        int fd = memfd_create("featstore-slot", MFD_CLOEXEC);
        if (fd < 0) {
            fs_store_destroy(store);
            send_error(c->fd, FS_ERR_NOMEM, "cannot create result slots");
            return -1;
        }
        c->slots[c->num_slots++] = fd;
        fds[n++] = fd;
    }
    w.num_slots = (uint32_t)slots;
    int rc = fs_local_send(c->fd, FS_LOCAL_WELCOME, &w, sizeof w, fds, n, MSG_DONTWAIT);
    fs_store_destroy(store); /* the client holds its own descriptors now */
    return rc;
}

static int on_hello(fs_local_server_t *s, client_t *c, const fs_local_hello_t *h)
{
    if (c->welcomed) return send_error(c->fd, FS_ERR_INVALID_ARGUMENT, "HELLO sent twice");
    if (h->api_version != 1) return send_error(c->fd, FS_ERR_UNSUPPORTED, "unsupported api_version");
    if (h->reader < -1 || h->reader >= FS_MAX_DEVICES)
        return send_error(c->fd, FS_ERR_INVALID_ARGUMENT, "reader must be -1 (the CPU) or a device id below 16");
    c->reader = h->reader;
    int slots = h->slots < 1 ? 1 : h->slots > FS_LOCAL_MAX_SLOTS ? FS_LOCAL_MAX_SLOTS : (int)h->slots;
    if (send_welcome(s, c, slots) != 0) return -1;
    if (c->num_slots == 0) return 0; /* refused with an error: the client may try again */
    c->welcomed = 1;
    fs_metrics_client(s->metrics, FS_TRANSPORT_UNIX, +1);
    return 0;
}

/* ---- re-planning ---------------------------------------------------------------- */

typedef struct {
    fs_local_server_t *s;
    int fd;                 /* a duplicate of the client's socket: the loop may drop the client meanwhile */
    fs_local_replan_t req;
} replan_job_t;

static void *replan_main(void *p)
{
    replan_job_t *j = p;
    fs_local_server_t *s = j->s;
    fs_local_replan_reply_t r = {0};
    fs_error_t err = {0};
    fs_status_t st = s->replan(s->replan_ctx, &j->req, &r, &err);
    atomic_store(&s->replan_state, 2); /* before the reply: the client may ask again at once */
    if (st == FS_OK) {
        fs_local_send(j->fd, FS_LOCAL_REPLAN_REPLY, &r, sizeof r, NULL, 0, MSG_DONTWAIT);
    } else {
        send_error(j->fd, st, err.msg);
    }
    close(j->fd);
    free(j);
    return NULL;
}

static void join_replan(fs_local_server_t *s)
{
    if (atomic_load(&s->replan_state) == 0) return;
    pthread_join(s->replan_thread, NULL);
    atomic_store(&s->replan_state, 0);
}

/* The name of the first string field of req without its NUL, or NULL. */
static const char *unterminated_replan_field(const fs_local_replan_t *req)
{
#define FS_FIELD_OK(f) (memchr(req->f, 0, sizeof req->f) != NULL)
    return !FS_FIELD_OK(topology) ? "topology" : !FS_FIELD_OK(hotness) ? "hotness" : !FS_FIELD_OK(order) ? "order"
         : !FS_FIELD_OK(plan)     ? "plan"     : !FS_FIELD_OK(save)    ? "save"    : !FS_FIELD_OK(alpha) ? "alpha"
         : !FS_FIELD_OK(reserve)  ? "reserve"  : NULL;
#undef FS_FIELD_OK
}

/* The reply comes from the re-plan's thread when it is done; meanwhile
 * the loop goes on serving everyone, this client included. */
static int on_replan(fs_local_server_t *s, client_t *c, const fs_local_replan_t *req)
{
    if (!s->replan) return send_error(c->fd, FS_ERR_UNSUPPORTED, "this server was started without re-planning");
    const char *bad = unterminated_replan_field(req);
    if (bad) {
        char msg[96];
        snprintf(msg, sizeof msg, "re-plan: the %s field is not NUL-terminated", bad);
        return send_error(c->fd, FS_ERR_INVALID_ARGUMENT, msg);
    }
    if (atomic_load(&s->replan_state) == 1)
        return send_error(c->fd, FS_ERR_UNAVAILABLE, "a re-plan is already running; try again when it is done");
    join_replan(s);
    replan_job_t *j = malloc(sizeof *j);
    if (!j) return send_error(c->fd, FS_ERR_NOMEM, "out of memory");
    *j = (replan_job_t){.s = s, .fd = fcntl(c->fd, F_DUPFD_CLOEXEC, 0), .req = *req};
    atomic_store(&s->replan_state, 1);
    if (j->fd < 0 || pthread_create(&s->replan_thread, NULL, replan_main, j) != 0) {
        if (j->fd >= 0) close(j->fd);
        free(j);
        atomic_store(&s->replan_state, 0);
        return send_error(c->fd, FS_ERR_RESOURCE, "cannot start the re-plan thread");
    }
    return 0;
}

static int on_info(fs_local_server_t *s, client_t *c)
{
    double t0 = fs_now();
    featstore_v1_InfoResponse info;
    fs_engine_info(s->engine, &info);
    fs_metrics_info(s->metrics, &info);
    pb_ostream_t os = pb_ostream_from_buffer((pb_byte_t *)s->buf, sizeof s->buf);
    if (!pb_encode(&os, featstore_v1_InfoResponse_fields, &info)) return send_error(c->fd, FS_ERR_INTERNAL, PB_GET_ERROR(&os));
    int rc = fs_local_send(c->fd, FS_LOCAL_INFO_REPLY, s->buf, os.bytes_written, NULL, 0, MSG_DONTWAIT);
    fs_metrics_request(s->metrics, FS_METHOD_INFO, FS_TRANSPORT_UNIX, rc ? FS_ERR_IO : FS_OK, fs_now() - t0);
    return rc;
}

static int on_stats(fs_local_server_t *s, client_t *c)
{
    double t0 = fs_now();
    char *text = fs_metrics_render(s->metrics);
    if (!text) return send_error(c->fd, FS_ERR_NOMEM, "out of memory rendering metrics");
    size_t len = strlen(text);
    int rc = len > FS_LOCAL_MAX_MSG - 64 ? send_error(c->fd, FS_ERR_RESOURCE, "metrics text too large for one message")
                                         : fs_local_send(c->fd, FS_LOCAL_STATS_REPLY, text, len, NULL, 0, MSG_DONTWAIT);
    free(text);
    fs_metrics_request(s->metrics, FS_METHOD_STATS, FS_TRANSPORT_UNIX, rc ? FS_ERR_IO : FS_OK, fs_now() - t0);
    return rc;
}

/* The split's file goes to the client as a read-only descriptor. */
static int on_split(fs_local_server_t *s, client_t *c, const fs_local_split_t *req)
{
    double t0 = fs_now();
    char name[sizeof req->name + 1], path[4300];
    snprintf(name, sizeof name, "%.*s", (int)sizeof req->name, req->name);
    const fs_idset_t *split;
    fs_local_split_reply_t r = {0};
    fs_error_t err = {0};
    int fd = -1, rc;
    fs_status_t st = fs_engine_split(s->engine, name, &split, &err);
    if (st == FS_OK && (fs_dataset_locate(fs_engine_dataset(s->engine), split->ids, path, sizeof path, &r.offset) != FS_OK ||
                        (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0))
        st = fs_error(&err, FS_ERR_IO, "cannot reopen the file of split '%s'", name);
    if (st == FS_OK) {
        r.count = split->count;
        rc = fs_local_send(c->fd, FS_LOCAL_SPLIT_REPLY, &r, sizeof r, &fd, 1, MSG_DONTWAIT);
        if (rc) st = FS_ERR_IO;
    } else {
        rc = send_error(c->fd, st, err.msg);
    }
    if (fd >= 0) close(fd);
    fs_metrics_request(s->metrics, FS_METHOD_SPLIT, FS_TRANSPORT_UNIX, st, fs_now() - t0);
    return rc;
}

static void on_report(fs_local_server_t *s, const client_t *c, const fs_local_report_t *r)
{
    fs_gather_counters_t f = {0}, t = {0};
    for (int k = 0; k < FS_LOCAL_MAX_TIERS; k++) {
        f.rows[k] = r->feature_rows[k], f.bytes[k] = r->feature_bytes[k];
        t.rows[k] = r->topo_lists[k], t.bytes[k] = r->topo_bytes[k];
    }
    fs_metrics_request(s->metrics, (fs_method_t)r->method, FS_TRANSPORT_UNIX, (fs_status_t)r->status,
                       (double)r->latency_ns * 1e-9);
    fs_metrics_client_reads(s->metrics, c->reader, r->generation, &f, &t);
}

/* Handles every queued message; -1 means drop the client. */
static int on_readable(fs_local_server_t *s, client_t *c)
{
    for (;;) {
        int type, fds[4], nfds = 0;
        size_t n;
        int got = fs_local_recv(c->fd, &type, s->buf, sizeof s->buf, &n, fds, &nfds, 4, MSG_DONTWAIT);
        for (int i = 0; i < nfds; i++) close(fds[i]); /* clients never send descriptors */
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
        if (got <= 0) {
            if (got < 0 && errno == EPROTO) send_error(c->fd, FS_ERR_INVALID_ARGUMENT, "malformed message");
            return -1;
        }
        if (type == FS_LOCAL_HELLO && n == sizeof(fs_local_hello_t)) {
            if (on_hello(s, c, (void *)s->buf) != 0) return -1;
        } else if (!c->welcomed) {
            send_error(c->fd, FS_ERR_INVALID_ARGUMENT, "expected HELLO first");
            return -1;
        } else if (type == FS_LOCAL_INFO) {
            if (on_info(s, c) != 0) return -1;
        } else if (type == FS_LOCAL_STATS) {
            if (on_stats(s, c) != 0) return -1;
        } else if (type == FS_LOCAL_SPLIT && n == sizeof(fs_local_split_t)) {
            if (on_split(s, c, (void *)s->buf) != 0) return -1;
        } else if (type == FS_LOCAL_REPORT && n == sizeof(fs_local_report_t)) {
            on_report(s, c, (void *)s->buf);
        } else if (type == FS_LOCAL_RELAYOUT && n == 0) {
            if (send_welcome(s, c, 0) != 0) return -1;
        } else if (type == FS_LOCAL_REPLAN && n == sizeof(fs_local_replan_t)) {
            if (on_replan(s, c, (void *)s->buf) != 0) return -1;
        } else {
            send_error(c->fd, FS_ERR_INVALID_ARGUMENT, "unknown or malformed message");
            return -1;
        }
    }
}

static void on_accept(fs_local_server_t *s)
{
    for (;;) {
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return;
        client_t *c = calloc(1, sizeof *c);
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
        if (!c || epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
            free(c);
            close(fd);
            continue;
        }
        c->fd = fd;
        c->next = s->clients;
        s->clients = c;
        atomic_fetch_add(&s->num_clients, 1);
    }
}

static void *loop(void *p)
{
    fs_local_server_t *s = p;
    struct epoll_event ev[64];
    for (;;) {
        int n = epoll_wait(s->epoll_fd, ev, 64, -1);
        if (n < 0 && errno != EINTR) break;
        for (int i = 0; i < n; i++) {
            if (ev[i].data.ptr == &s->wake_fd) return NULL;
            if (ev[i].data.ptr == &s->listen_fd) {
                on_accept(s);
                continue;
            }
            client_t *c = ev[i].data.ptr;
            /* read what is queued first: a client may send its last REPORT and exit */
            if (on_readable(s, c) != 0 || (ev[i].events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP))) drop_client(s, c);
        }
    }
    return NULL;
}

/* ---- start / stop -------------------------------------------------------------- */

static fs_status_t bind_socket(fs_local_server_t *s, const char *path, fs_error_t *err)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "socket path '%s' is longer than %zu bytes", path,
                        sizeof a.sun_path - 1);
    strcpy(a.sun_path, path);
    snprintf(s->path, sizeof s->path, "%s", path);
    struct stat st;
    if (stat(path, &st) == 0) { /* replace a stale socket, refuse a live one or a non-socket */
        int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        int live = probe >= 0 && connect(probe, (struct sockaddr *)&a, sizeof a) == 0;
        if (probe >= 0) close(probe);
        if (live || !S_ISSOCK(st.st_mode))
            return fs_error(err, FS_ERR_EXISTS, "%s is %s", path, live ? "in use by a running server" : "not a socket");
        unlink(path);
    }
    s->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s->listen_fd < 0 || bind(s->listen_fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(s->listen_fd, 128) != 0)
        return fs_error(err, FS_ERR_IO, "cannot listen on %s: %s", path, strerror(errno));
    return FS_OK;
}

fs_status_t fs_local_server_start(const char *socket_path, fs_engine_t *engine, fs_metrics_t *metrics,
                                  fs_local_replan_fn replan, void *replan_ctx, fs_local_server_t **out,
                                  fs_error_t *err)
{
    *out = NULL;
    fs_local_server_t *s = calloc(1, sizeof *s);
    if (!s) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    s->engine = engine;
    s->metrics = metrics;
    s->replan = replan, s->replan_ctx = replan_ctx;
    s->listen_fd = s->epoll_fd = s->wake_fd = -1;
    fs_store_t *store = fs_engine_acquire(engine, NULL);
    fs_status_t st = fs_store_freeze(store, err); /* sharing the store ends placement */
    fs_store_destroy(store);
    if (!st) st = prepare_welcome(s, err);
    if (!st) st = bind_socket(s, socket_path, err);
    if (!st) {
        s->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        struct epoll_event a = {.events = EPOLLIN, .data.ptr = &s->listen_fd}, b = {.events = EPOLLIN, .data.ptr = &s->wake_fd};
        if (s->epoll_fd < 0 || s->wake_fd < 0 || epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->listen_fd, &a) ||
            epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->wake_fd, &b) || pthread_create(&s->thread, NULL, loop, s))
            st = fs_error(err, FS_ERR_IO, "local: cannot start the event loop: %s", strerror(errno));
    }
    if (st != FS_OK) {
        for (int i = 0; i < s->num_data_fds; i++) close(s->data_fds[i]);
        if (s->notice) munmap(s->notice, FS_LOCAL_NOTICE_BYTES);
        if (s->listen_fd >= 0) close(s->listen_fd), unlink(s->path);
        if (s->epoll_fd >= 0) close(s->epoll_fd);
        if (s->wake_fd >= 0) close(s->wake_fd);
        free(s);
        return st;
    }
    *out = s;
    return FS_OK;
}

void fs_local_server_stop(fs_local_server_t *s)
{
    if (!s) return;
    uint64_t one = 1;
    if (write(s->wake_fd, &one, sizeof one) < 0) { /* the loop exits on the next wakeup anyway */ }
    pthread_join(s->thread, NULL);
    join_replan(s);
    close(s->listen_fd);
    unlink(s->path);
    while (s->clients) drop_client(s, s->clients);
    for (int i = 0; i < s->num_data_fds; i++) close(s->data_fds[i]);
    munmap(s->notice, FS_LOCAL_NOTICE_BYTES);
    close(s->epoll_fd);
    close(s->wake_fd);
    free(s);
}

int fs_local_server_clients(fs_local_server_t *s) { return atomic_load(&s->num_clients); }
