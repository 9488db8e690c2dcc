/* local.c — see local.h. The conversation and its messages are
 * proto/fs_local.h's; this file turns the engine's and the store's plain C
 * facts into them. Every message is read into one receive buffer and
 * decoded from there; replies go out with MSG_DONTWAIT, so a client that
 * does not read its socket is dropped rather than waited for. */
#include "local.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
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
#include "fs_pb.h"
#include "local_report.h"

typedef struct client {
    int fd;
    int slots[FS_LOCAL_MAX_SLOTS];
    int num_slots;
    int welcomed;
    int reader;             /* from HELLO: whose placement it reads through */
    fs_store_t *store;      /* the placement its last WELCOME described, held while it may read it
                               (device tiers live only while the server holds them) */
    unsigned minor;         /* the local protocol's minor version negotiated with it */
    int version_entry;      /* welcomed: the entry of featstore_local_clients_by_version counting it */
    struct client *next;
    /* guards: who the peer is (SO_PEERCRED at accept), and until it is
     * welcomed its place in the handshake queue, in deadline order */
    uid_t uid;
    gid_t gid;
    pid_t pid;
    double deadline;
    struct client *hs_prev, *hs_next;
    int in_hs_queue;
} client_t;

typedef struct uid_count { /* connections per uid, for the cap; few distinct uids, so a list */
    uid_t uid;
    int n;
    struct uid_count *next;
} uid_count_t;

struct fs_local_server {
    char path[108];
    ino_t bound_ino;                      /* the socket file this server made (0: none yet), and its device */
    dev_t bound_dev;
    int listen_fd, epoll_fd, wake_fd;
    int serving;                          /* the loop thread runs (fs_local_server_serve) */
    unsigned minor;                       /* the minor version this server speaks */
    pthread_t thread;
    fs_engine_t *engine;
    fs_metrics_t *metrics;
    featstore_local_Welcome welcome;      /* the dataset's part of every WELCOME */
    featstore_local_Table *tables;        /* [num_tables]: the dataset's tables */
    size_t num_tables;
    fs_fd_list_t data_fds;                   /* indptr, indices, [weights], tables, the notice page */
    fs_fd_list_t file_fds;                /* 6.3: the manifest's memfd, then every dataset file */
    _Atomic uint64_t *notice;             /* the notice page: the generation served */
    fs_replan_fn replan;
    void *replan_ctx;
    pthread_t replan_thread;
    _Atomic int replan_state;             /* 0 none, 1 running, 2 finished (thread to join) */
    client_t *clients;
    _Atomic int num_clients;
    /* guards (local.h) */
    int handshake_ms, max_per_uid;
    uid_t *allow_uids, own_uid, admin_uid;
    gid_t *allow_gids;
    int num_allow_uids, num_allow_gids;
    uid_count_t *uid_counts;
    client_t *hs_head, *hs_tail;          /* handshaking clients, oldest (earliest deadline) first */
    int reserve_fd;                       /* /dev/null, given up to shed a connection when out of descriptors */
    double paused_until;                  /* listening paused (out of descriptors) until then; 0 = listening */
    double last_log;                      /* rate-limits the guards' log lines */
    unsigned long unlogged;
    _Alignas(16) char buf[FS_LOCAL_MAX_MSG];
};

void fs_local_server_defaults(fs_local_server_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->protocol_minor = FS_LOCAL_MINOR;
    o->handshake_timeout_ms = FS_LOCAL_DEFAULT_HANDSHAKE_MS;
    o->max_conns_per_uid = FS_LOCAL_DEFAULT_MAX_CONNS_PER_UID;
    o->admin_uid = geteuid();
}

/* ---- the dataset's descriptors, validated once and shared with every client ---- */

/* A copy of the descriptor the dataset validated (its unwritable copy
 * when served: dataset/served_copy.c), never the path opened again. */
static fs_status_t open_data_fd(fs_local_server_t *s, const void *data, int64_t *offset, fs_error_t *err)
{
    int kept;
    if (fs_dataset_locate(fs_engine_dataset(s->engine), data, &kept, offset) != FS_OK)
        return fs_error(err, FS_ERR_INTERNAL, "local: an array of the dataset is not file-backed");
    int fd = fcntl(kept, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return fs_error(err, FS_ERR_IO, "local: cannot share a dataset descriptor: %s", strerror(errno));
    if (fs_fd_list_push(&s->data_fds, fd) != 0) {
        close(fd);
        return fs_error(err, FS_ERR_NOMEM, "out of memory");
    }
    return FS_OK;
}

static fs_status_t open_notice(fs_local_server_t *s, fs_error_t *err)
{
    int fd = memfd_create("featstore-notice", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, FS_LOCAL_NOTICE_BYTES) != 0 || fs_fd_list_push(&s->data_fds, fd) != 0) {
        if (fd >= 0) close(fd);
        return fs_error(err, FS_ERR_NOMEM, "local: cannot create the notice page: %s", strerror(errno));
    }
    s->notice = mmap(NULL, FS_LOCAL_NOTICE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (s->notice == MAP_FAILED) {
        s->notice = NULL;
        return fs_error(err, FS_ERR_NOMEM, "local: cannot map the notice page: %s", strerror(errno));
    }
    uint64_t generation;
    fs_store_destroy(fs_engine_acquire(s->engine, &generation));
    atomic_store(s->notice, generation);
    return FS_OK;
}

/* 6.3: the manifest as parsed, in a sealed memfd, and a copy of every
 * dataset file's validated descriptor, so trainers open the dataset the
 * server validated (typed sampling runs in the trainer: fs_hetero.h). */
static fs_status_t prepare_files(fs_local_server_t *s, fs_error_t *err)
{
    const fs_dataset_t *ds = fs_engine_dataset(s->engine);
    if (!ds->manifest) return fs_error(err, FS_ERR_INTERNAL, "local: the dataset kept no manifest");
    int fd = memfd_create("featstore-manifest", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    int ok = fd >= 0 && write(fd, ds->manifest, ds->manifest_len) == (ssize_t)ds->manifest_len &&
             fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) == 0 &&
             fs_fd_list_push(&s->file_fds, fd) == 0;
    if (!ok) {
        if (fd >= 0) close(fd);
        return fs_error(err, FS_ERR_IO, "local: cannot share the manifest: %s", strerror(errno));
    }
    s->welcome.manifest_bytes = ds->manifest_len;
    for (int i = 0; i < fs_dataset_num_files(ds); i++) {
        int copy = fcntl(fs_dataset_file_fd(ds, i), F_DUPFD_CLOEXEC, 0);
        if (copy < 0 || fs_fd_list_push(&s->file_fds, copy) != 0) {
            if (copy >= 0) close(copy);
            return fs_error(err, FS_ERR_IO, "local: cannot share %s: %s", fs_dataset_file_name(ds, i), strerror(errno));
        }
    }
    return FS_OK;
}

static const char *file_name_at(void *ctx, size_t i) { return fs_dataset_file_name(ctx, (int)i); }

static fs_status_t prepare_welcome(fs_local_server_t *s, fs_error_t *err)
{
    const fs_dataset_t *ds = fs_engine_dataset(s->engine);
    const fs_limits_t *l = fs_engine_limits(s->engine);
    featstore_local_Welcome *w = &s->welcome;
    *w = (featstore_local_Welcome)featstore_local_Welcome_init_zero;
    w->major = FS_LOCAL_MAJOR;
    w->max_ids = l->max_ids, w->max_fanout_product = l->max_fanout_product;
    w->max_response_bytes = l->max_response_bytes;
    snprintf(w->dataset, sizeof w->dataset, "%s", ds->name);
    snprintf(w->index_dtype, sizeof w->index_dtype, "int64");
    fs_status_t st = prepare_files(s, err);
    if (st == FS_OK && fs_dataset_is_typed(ds)) { /* no version-1 arrays: typed calls only */
        w->typed = true;
        return open_notice(s, err);
    }
    if (st != FS_OK) return st;
    w->has_weights = ds->edge_weights != NULL;
    w->num_nodes = ds->num_nodes, w->num_edges = ds->num_edges;
    snprintf(w->index_dtype, sizeof w->index_dtype, "%s", fs_dtype_name(ds->index_dtype));
    st = open_data_fd(s, ds->indptr, &w->indptr_offset, err);
    if (!st) st = open_data_fd(s, ds->indices, &w->indices_offset, err);
    if (!st && ds->edge_weights) st = open_data_fd(s, ds->edge_weights, &w->weights_offset, err);
    int rows = fs_dataset_num_row_tables(ds);
    if (!st && !(s->tables = calloc((size_t)(ds->num_tables + rows) + 1, sizeof *s->tables)))
        st = fs_error(err, FS_ERR_NOMEM, "out of memory");
    for (int i = 0; !st && i < ds->num_tables + rows; i++) { /* the feature tables, then the row tables */
        const fs_table_t *src = i < ds->num_tables ? &ds->tables[i] : fs_dataset_row_table(ds, i - ds->num_tables);
        featstore_local_Table *t = &s->tables[s->num_tables++];
        snprintf(t->name, sizeof t->name, "%s", src->name);
        snprintf(t->dtype, sizeof t->dtype, "%s", fs_dtype_name(src->dtype));
        t->rows = src->rows;
        t->dim = src->dim;
        st = open_data_fd(s, src->data, &t->data_offset, err);
    }
    return st ? st : open_notice(s, err);
}

void fs_local_server_notify(fs_local_server_t *s, uint64_t generation)
{
    if (s) atomic_store(s->notice, generation);
}

/* ---- guards' bookkeeping: connections per uid, the handshake queue ------------- */

static uid_count_t **uid_entry(fs_local_server_t *s, uid_t uid)
{
    uid_count_t **p = &s->uid_counts;
    while (*p && (*p)->uid != uid) p = &(*p)->next;
    return p;
}

static int uid_connections(fs_local_server_t *s, uid_t uid)
{
    uid_count_t *u = *uid_entry(s, uid);
    return u ? u->n : 0;
}

/* 0, or -1 when out of memory. An entry goes when its count does. */
static int uid_add(fs_local_server_t *s, uid_t uid, int delta)
{
    uid_count_t **p = uid_entry(s, uid);
    if (!*p) {
        if (delta < 0 || !(*p = calloc(1, sizeof **p))) return -1;
        (*p)->uid = uid;
    }
    if (((*p)->n += delta) <= 0) {
        uid_count_t *gone = *p;
        *p = gone->next;
        free(gone);
    }
    return 0;
}

/* Every deadline is its accept time plus the same timeout, so appending
 * keeps the queue in deadline order: the head is the next to expire. */
static void hs_enqueue(fs_local_server_t *s, client_t *c)
{
    c->deadline = fs_now() + s->handshake_ms * 1e-3;
    c->hs_prev = s->hs_tail, c->hs_next = NULL;
    if (s->hs_tail) s->hs_tail->hs_next = c;
    else s->hs_head = c;
    s->hs_tail = c;
    c->in_hs_queue = 1;
}

static void hs_remove(fs_local_server_t *s, client_t *c)
{
    if (!c->in_hs_queue) return;
    if (c->hs_prev) c->hs_prev->hs_next = c->hs_next;
    else s->hs_head = c->hs_next;
    if (c->hs_next) c->hs_next->hs_prev = c->hs_prev;
    else s->hs_tail = c->hs_prev;
    c->in_hs_queue = 0;
}

/* ---- clients ------------------------------------------------------------------ */

static void drop_client(fs_local_server_t *s, client_t *c)
{
    hs_remove(s, c);
    uid_add(s, c->uid, -1);
    epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    for (int i = 0; i < c->num_slots; i++) close(c->slots[i]); /* the client's mappings keep them alive until it unmaps */
    for (client_t **p = &s->clients; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    if (c->welcomed) {
        fs_metrics_client(s->metrics, FS_TRANSPORT_UNIX, -1);
        fs_metrics_local_version_left(s->metrics, c->version_entry);
    }
    atomic_fetch_sub(&s->num_clients, 1);
    fs_store_destroy(c->store);
    free(c);
}

static int send_error(int fd, fs_status_t st, const char *msg)
{
    return fs_local_send_error(fd, st, msg, MSG_DONTWAIT);
}

/* The reader's placement in store `st`, as WELCOME lists it, with its
 * descriptors (the store's: send before releasing it) in WELCOME order. */
typedef struct {
    featstore_local_Table *tables;   /* the server's, with this reader's `routed` */
    featstore_local_Tier tiers[FS_MAX_TIERS];
    int reads_device[FS_MAX_TIERS];  /* the reader reads this device tier: it gets its IPC handle */
    featstore_local_Slice *slices;
    featstore_local_TopoPart parts[FS_MAX_TIERS];
    size_t num_tiers, num_slices, num_parts;
    fs_fd_list_t fds;
} placement_t;

static void placement_free(placement_t *p)
{
    free(p->tables);
    free(p->slices);
    free(p->fds.fd);
}

static fs_status_t add_fd(placement_t *p, int fd, fs_error_t *err)
{
    return fs_fd_list_push(&p->fds, fd) == 0 ? FS_OK : fs_error(err, FS_ERR_NOMEM, "out of memory");
}

/* A slice's descriptor, or for a device tier the note that the reader needs
 * the tier's IPC handle. */
static fs_status_t add_slice(fs_store_t *st, placement_t *p, size_t tier, const fs_store_slice_t *sl, fs_error_t *err)
{
    if (sl->fd >= 0) return add_fd(p, sl->fd, err);
    fs_store_tier_t ti;
    fs_store_tier_info(st, (int)tier, &ti);
    if (ti.kind != FS_TIER_DEVICE)
        return fs_error(err, FS_ERR_UNSUPPORTED, "tier %zu holds %s memory, which is not handed to local clients; "
                        "connect as another reader", tier, fs_tier_kind_name(ti.kind));
    p->reads_device[tier] = 1;
    return FS_OK;
}

/* Each table's slice in each placed tier, then each routed table's route. */
static fs_status_t add_tables(fs_local_server_t *s, fs_store_t *st, int reader, placement_t *p, fs_error_t *err)
{
    p->tables = calloc(s->num_tables + 1, sizeof *p->tables);
    p->slices = calloc(s->num_tables * p->num_tiers + 1, sizeof *p->slices);
    if (!p->tables || !p->slices) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    if (s->num_tables) memcpy(p->tables, s->tables, s->num_tables * sizeof *p->tables); /* none on a typed graph */
    fs_status_t rc = FS_OK;
    for (size_t t = 0; t < s->num_tables && rc == FS_OK; t++)
        for (size_t k = 1; k < p->num_tiers && rc == FS_OK; k++) {
            fs_store_slice_t sl;
            if (!(fs_store_reader_tiers(st, reader) & (1u << k))) continue; /* its routes never go there */
            fs_store_table_slice(st, p->tables[t].name, (int)k, &sl);
            if (sl.rows <= 0) continue;
            p->slices[p->num_slices++] = (featstore_local_Slice){.table = (uint32_t)t, .tier = (uint32_t)k,
                                                                 .rows = sl.rows, .offset = sl.offset};
            rc = add_slice(st, p, k, &sl, err);
        }
    for (size_t t = 0; t < s->num_tables && rc == FS_OK; t++) {
        int fd = fs_store_route_fd(st, p->tables[t].name, reader);
        p->tables[t].routed = fd >= 0;
        if (fd >= 0) rc = add_fd(p, fd, err);
    }
    return rc;
}

/* Each tier's topology part, the topology route and the preferred sets. */
static fs_status_t add_topology(fs_store_t *st, int reader, int weighted, placement_t *p, int *las_levels,
                                int *las_counts, fs_error_t *err)
{
    fs_status_t rc = FS_OK;
    for (size_t k = 1; k < p->num_tiers && rc == FS_OK; k++) {
        fs_store_slice_t ip, ix, w;
        if (!(fs_store_reader_tiers(st, reader) & (1u << k))) continue;
        fs_store_topology_slice(st, (int)k, 0, &ip);
        fs_store_topology_slice(st, (int)k, 1, &ix);
        fs_store_topology_slice(st, (int)k, 2, &w);
        if (ip.rows <= 0) continue;
        p->parts[p->num_parts++] = (featstore_local_TopoPart){.tier = (uint32_t)k, .rows = ip.rows,
                                                              .indptr_offset = ip.offset,
                                                              .indices_offset = ix.offset,
                                                              .weights_offset = w.offset};
        rc = add_slice(st, p, k, &ip, err);
        if (rc == FS_OK) rc = add_slice(st, p, k, &ix, err);
        if (rc == FS_OK && weighted) rc = add_slice(st, p, k, &w, err);
    }
    int route = fs_store_topology_route_fd(st, reader);
    if (rc == FS_OK && route >= 0) rc = add_fd(p, route, err);
    fs_locality_t las; /* the reader's preferred sets, when the placement built some */
    fs_store_locality(st, reader, 1, &las);
    *las_levels = las.num_levels;
    *las_counts = las.num_levels > 0 && las.count[0] != NULL;
    for (int l = 1; l <= las.num_levels && rc == FS_OK; l++) {
        int pref = fs_store_locality_fd(st, reader, l, 0), count = fs_store_locality_fd(st, reader, l, 1);
        if (pref < 0 || (*las_counts && count < 0))
            return fs_error(err, FS_ERR_INTERNAL, "reader %d's preferred set Q_%d has no descriptor", reader, l);
        rc = add_fd(p, pref, err);
        if (rc == FS_OK && *las_counts) rc = add_fd(p, count, err);
    }
    return rc;
}

/* The IPC handle of every device tier the reader reads from (6.2). */
static fs_status_t add_handles(fs_store_t *st, unsigned minor, int reader, placement_t *p, fs_error_t *err)
{
    for (size_t k = 1; k < p->num_tiers; k++) {
        if (!p->reads_device[k]) continue;
        if (minor < 2)
            return fs_error(err, FS_ERR_VERSION, "gpu:%d reads GPU tiers, which are handed over by CUDA IPC handle "
                            "since local protocol %d.2; this client speaks %d.%u: upgrade its featstore library",
                            reader, FS_LOCAL_MAJOR, FS_LOCAL_MAJOR, minor);
        fs_ipc_handle_t h;
        size_t bytes;
        fs_status_t rc = fs_store_tier_ipc(st, (int)k, &h, &bytes, err);
        if (rc != FS_OK) return rc;
        p->tiers[k].bytes = bytes;
        p->tiers[k].ipc_handle.size = FS_IPC_HANDLE_BYTES;
        memcpy(p->tiers[k].ipc_handle.bytes, h.bytes, FS_IPC_HANDLE_BYTES);
    }
    return FS_OK;
}

static fs_status_t describe_placement(fs_local_server_t *s, fs_store_t *st, int reader, unsigned minor,
                                      featstore_local_Welcome *w, placement_t *p, fs_error_t *err)
{
    if (!fs_store_frozen(st)) return fs_error(err, FS_ERR_INTERNAL, "the store is not frozen");
    p->num_tiers = (size_t)fs_store_num_tiers(st);
    for (size_t k = 0; k < p->num_tiers; k++) {
        fs_store_tier_t ti;
        fs_store_tier_info(st, (int)k, &ti);
        p->tiers[k] = (featstore_local_Tier){.device = ti.device};
        snprintf(p->tiers[k].kind, sizeof p->tiers[k].kind, "%s", fs_tier_kind_name(ti.kind));
    }
    for (size_t i = 0; i < s->data_fds.n; i++)
        if (add_fd(p, s->data_fds.fd[i], err) != FS_OK) return err->code;
    int levels = 0, counts = 0;
    fs_status_t rc = add_tables(s, st, reader, p, err);
    if (rc == FS_OK) rc = add_topology(st, reader, w->has_weights, p, &levels, &counts, err);
    if (rc == FS_OK) rc = add_handles(st, minor, reader, p, err);
    w->reader = reader;
    w->topo_route = fs_store_topology_route_fd(st, reader) >= 0;
    w->las_levels = (uint32_t)levels;
    w->las_counts = counts;
    return rc;
}

/* WELCOME with its first descriptors, then FDS frames with the rest. */
static int send_welcome_frames(client_t *c, featstore_local_Welcome *w, const fs_fd_list_t *fds)
{
    size_t first = fds->n < FS_LOCAL_MAX_FDS ? fds->n : FS_LOCAL_MAX_FDS;
    w->num_fds = (uint32_t)fds->n;
    if (fs_local_send_msg(c->fd, FS_LOCAL_WELCOME, featstore_local_Welcome_fields, w, fds->fd, (int)first,
                          MSG_DONTWAIT) != 0)
        return -1;
    for (size_t off = first; off < fds->n; off += FS_LOCAL_MAX_FDS) {
        size_t n = fds->n - off < FS_LOCAL_MAX_FDS ? fds->n - off : FS_LOCAL_MAX_FDS;
        if (fs_local_send(c->fd, FS_LOCAL_FDS, NULL, 0, fds->fd + off, (int)n, MSG_DONTWAIT) != 0) return -1;
    }
    return 0;
}

/* Adds `slots` new result slots (the client's until it goes: drop_client
 * closes them) to the descriptors. */
static int add_slots(client_t *c, int slots, placement_t *p)
{
    for (int i = 0; i < slots; i++) {
        if (c->num_slots == FS_LOCAL_MAX_SLOTS) return -1; /* on_hello allows 1..64, once: never reached */
        int fd = memfd_create("featstore-slot", MFD_CLOEXEC);
        if (fd < 0) return -1;
        c->slots[c->num_slots++] = fd;
        if (fs_fd_list_push(&p->fds, fd) != 0) return -1;
    }
    return 0;
}

/* 6.3, in the reply to HELLO only (the files do not change; a RELAYOUT
 * client keeps its own): the manifest and the files' descriptors after
 * the slots, and their names. */
static int add_files(fs_local_server_t *s, client_t *c, int slots, featstore_local_Welcome *w, placement_t *p,
                     fs_pb_strings_t *names)
{
    if (c->minor < 3 || slots == 0) {
        w->manifest_bytes = 0;
        return 0;
    }
    const fs_dataset_t *ds = fs_engine_dataset(s->engine);
    for (size_t i = 0; i < s->file_fds.n; i++)
        if (fs_fd_list_push(&p->fds, s->file_fds.fd[i]) != 0) return -1;
    *names = (fs_pb_strings_t){.count = (size_t)fs_dataset_num_files(ds), .get = file_name_at, .ctx = (void *)ds};
    fs_pb_set_strings(&w->files, names);
    return 0;
}

/* Sends a WELCOME describing the placement served now to c's reader, with
 * new result slots when `slots` > 0 (HELLO) and none otherwise (RELAYOUT).
 * 0, or -1 to drop the client. */
static int send_welcome(fs_local_server_t *s, client_t *c, int slots)
{
    featstore_local_Welcome w = s->welcome;
    w.minor = c->minor;
    fs_pb_strings_t files;
    placement_t p = {0};
    fs_error_t err = {0};
    fs_store_t *store = fs_engine_acquire(s->engine, &w.generation);
    int rc, sent = 0;
    if (describe_placement(s, store, c->reader, c->minor, &w, &p, &err) != FS_OK) {
        rc = send_error(c->fd, err.code, err.msg);
    } else if (add_slots(c, slots, &p) != 0 || add_files(s, c, slots, &w, &p, &files) != 0) {
        send_error(c->fd, FS_ERR_NOMEM, "cannot create result slots");
        rc = -1;
    } else {
        fs_pb_list_t tables, tiers, slices, parts;
        FS_PB_FROM_ARRAY(&tables, featstore_local_Table, p.tables, s->num_tables);
        FS_PB_FROM_ARRAY(&tiers, featstore_local_Tier, p.tiers, p.num_tiers);
        FS_PB_FROM_ARRAY(&slices, featstore_local_Slice, p.slices, p.num_slices);
        FS_PB_FROM_ARRAY(&parts, featstore_local_TopoPart, p.parts, p.num_parts);
        fs_pb_set_list(&w.tables, &tables);
        fs_pb_set_list(&w.tiers, &tiers);
        fs_pb_set_list(&w.slices, &slices);
        fs_pb_set_list(&w.topo_parts, &parts);
        w.num_slots = (uint32_t)slots;
        rc = send_welcome_frames(c, &w, &p.fds);
        sent = rc == 0;
    }
    /* Held until the client moves on or goes: its descriptors keep host
     * tiers alive by themselves, but device tiers it opened by IPC handle
     * live only while this process keeps them. A client refused a new
     * placement goes on reading its old one, which stays held. */
    fs_store_t *done = sent ? c->store : store;
    if (sent) c->store = store;
    fs_store_destroy(done);
    placement_free(&p);
    return rc;
}

static int on_hello(fs_local_server_t *s, client_t *c, size_t len)
{
    featstore_local_Hello h = featstore_local_Hello_init_zero;
    fs_error_t err = {0};
    unsigned minor;
    if (c->welcomed) return send_error(c->fd, FS_ERR_INVALID_ARGUMENT, "HELLO sent twice");
    if (fs_local_decode(s->buf, len, featstore_local_Hello_fields, &h, "HELLO", &err) != FS_OK) {
        send_error(c->fd, err.code, err.msg);
        return -1;
    }
    if (fs_local_negotiate(s->minor, h.major, h.minor, 1, &minor, &err) != FS_OK) {
        send_error(c->fd, err.code, err.msg);
        return -1;
    }
    if (h.reader < -1 || h.reader >= FS_MAX_DEVICES)
        return send_error(c->fd, FS_ERR_INVALID_ARGUMENT, "reader must be -1 (the CPU) or a device id below 16");
    if (h.slots < 1 || h.slots > FS_LOCAL_MAX_SLOTS)
        return send_error(c->fd, FS_ERR_INVALID_ARGUMENT, "slots must be 1..64");
    if (s->welcome.typed && minor < 3) {
        char why[200];
        snprintf(why, sizeof why, "the dataset is a typed graph, which needs local protocol 6.3 (featstore 1.3); "
                 "this client library speaks 6.%u: upgrade it", minor);
        send_error(c->fd, FS_ERR_VERSION, why);
        return -1;
    }
    c->reader = h.reader;
    c->minor = minor;
    if (send_welcome(s, c, (int)h.slots) != 0) return -1;
    if (c->num_slots == 0) return 0; /* refused with an error: the client may try again */
    c->welcomed = 1;
    hs_remove(s, c); /* the handshake is done: no deadline any more */
    fs_metrics_client(s->metrics, FS_TRANSPORT_UNIX, +1);
    c->version_entry = fs_metrics_local_version_joined(s->metrics, FS_LOCAL_MAJOR, c->minor,
                                                       minor >= 1 ? h.library_version : ""); /* 6.1 says it */
    return 0;
}

/* A frame of another major version: only a HELLO can say why. Clients of
 * the raw-struct protocol (majors 1-5) get an error they can print; newer
 * majors get ours. Then the client is dropped. */
static void on_other_major(fs_local_server_t *s, client_t *c, const fs_local_frame_t *f)
{
    fs_error_t err;
    unsigned minor;
    fs_local_negotiate(s->minor, f->major, 0, 1, &minor, &err); /* fails: another major */
    if (f->major > FS_LOCAL_MAJOR) send_error(c->fd, FS_ERR_VERSION, err.msg);
    else fs_local_send_legacy_error(c->fd, f->major, FS_ERR_VERSION, err.msg);
}

/* ---- re-planning ---------------------------------------------------------------- */

typedef struct {
    fs_local_server_t *s;
    int fd;                 /* a duplicate of the client's socket: the loop may drop the client meanwhile */
    featstore_local_ReplanRequest req;
} replan_job_t;

static void *replan_main(void *p)
{
    replan_job_t *j = p;
    fs_local_server_t *s = j->s;
    const featstore_local_ReplanRequest *m = &j->req;
    fs_replan_req_t req = {.topology = m->topology, .hotness = m->hotness, .order = m->order, .plan = m->plan,
                           .save = m->save, .alpha = m->alpha, .reserve = m->reserve, .gpu_budget = m->gpu_budget};
    fs_replan_done_t done = {0};
    fs_error_t err = {0};
    fs_status_t st = s->replan(s->replan_ctx, &req, &done, &err);
    atomic_store(&s->replan_state, 2); /* before the reply: the client may ask again at once */
    if (st == FS_OK) {
        featstore_local_ReplanReply r = {.generation = done.generation, .seconds = done.seconds};
        fs_local_send_msg(j->fd, FS_LOCAL_REPLAN_REPLY, featstore_local_ReplanReply_fields, &r, NULL, 0, MSG_DONTWAIT);
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

/* The reply comes from the re-plan's thread when it is done; meanwhile
 * the loop goes on serving everyone, this client included. */
static int on_replan(fs_local_server_t *s, client_t *c, size_t len)
{
    if (!s->replan) return send_error(c->fd, FS_ERR_UNSUPPORTED, "this server was started without re-planning");
    if (c->uid != s->admin_uid) { /* before anything is decoded: administration is the admin's alone */
        char msg[200];
        snprintf(msg, sizeof msg, "re-planning is administration: uid %u may not re-plan this server, only its admin "
                 "uid %u (serve --admin-uid)", (unsigned)c->uid, (unsigned)s->admin_uid);
        fs_metrics_local_admin_refused(s->metrics);
        return send_error(c->fd, FS_ERR_PERMISSION, msg);
    }
    replan_job_t *j = calloc(1, sizeof *j);
    if (!j) return send_error(c->fd, FS_ERR_NOMEM, "out of memory");
    fs_error_t err = {0};
    if (fs_local_decode(s->buf, len, featstore_local_ReplanRequest_fields, &j->req, "re-plan request", &err) != FS_OK) {
        free(j);
        return send_error(c->fd, FS_ERR_INVALID_ARGUMENT, err.msg);
    }
    if (atomic_load(&s->replan_state) == 1) {
        free(j);
        return send_error(c->fd, FS_ERR_UNAVAILABLE, "a re-plan is already running; try again when it is done");
    }
    join_replan(s);
    j->s = s;
    j->fd = fcntl(c->fd, F_DUPFD_CLOEXEC, 0);
    atomic_store(&s->replan_state, 1);
    if (j->fd < 0 || pthread_create(&s->replan_thread, NULL, replan_main, j) != 0) {
        if (j->fd >= 0) close(j->fd);
        free(j);
        atomic_store(&s->replan_state, 0);
        return send_error(c->fd, FS_ERR_RESOURCE, "cannot start the re-plan thread");
    }
    return 0;
}

/* ---- requests answered by the server ------------------------------------------------ */

static fs_status_t info_of(fs_local_server_t *s, fs_info_t **info, fs_error_t *err)
{
    fs_status_t st = fs_engine_info(s->engine, info, err);
    if (st == FS_OK && fs_metrics_info(s->metrics, *info) != FS_OK)
        st = fs_error(err, FS_ERR_NOMEM, "out of memory describing the placement");
    return st;
}

static int on_info(fs_local_server_t *s, client_t *c)
{
    double t0 = fs_now();
    fs_info_t *info = NULL;
    fs_error_t err = {0};
    fs_status_t st = info_of(s, &info, &err);
    int rc;
    if (st == FS_OK) {
        featstore_v1_InfoResponse msg;
        fs_pb_info_out_t enc;
        fs_pb_info_prepare_encode(info, &msg, &enc);
        rc = fs_local_send_msg(c->fd, FS_LOCAL_INFO_REPLY, featstore_v1_InfoResponse_fields, &msg, NULL, 0,
                               MSG_DONTWAIT);
        if (rc != 0 && errno == EMSGSIZE)
            rc = send_error(c->fd, st = FS_ERR_RESOURCE, "the Info reply is larger than a local message can be (256 "
                            "KiB); read it over grpc://");
        else if (rc != 0)
            st = FS_ERR_IO;
    } else {
        rc = send_error(c->fd, st, err.msg);
    }
    fs_info_free(info);
    fs_metrics_request(s->metrics, FS_METHOD_INFO, FS_TRANSPORT_UNIX, st, fs_now() - t0);
    return rc;
}

static int on_stats(fs_local_server_t *s, client_t *c)
{
    double t0 = fs_now();
    char *text = fs_metrics_render(s->metrics);
    if (!text) return send_error(c->fd, FS_ERR_NOMEM, "out of memory rendering metrics");
    size_t len = strlen(text);
    int rc = len > FS_LOCAL_MAX_MSG ? send_error(c->fd, FS_ERR_RESOURCE, "metrics text too large for one message")
                                    : fs_local_send(c->fd, FS_LOCAL_STATS_REPLY, text, len, NULL, 0, MSG_DONTWAIT);
    free(text);
    fs_metrics_request(s->metrics, FS_METHOD_STATS, FS_TRANSPORT_UNIX, rc ? FS_ERR_IO : FS_OK, fs_now() - t0);
    return rc;
}

/* The split's file goes to the client as a read-only descriptor. */
static int on_split(fs_local_server_t *s, client_t *c, size_t len)
{
    double t0 = fs_now();
    featstore_local_SplitRequest req = featstore_local_SplitRequest_init_zero;
    featstore_local_SplitReply r = featstore_local_SplitReply_init_zero;
    const fs_idset_t *split;
    fs_error_t err = {0};
    int kept, fd = -1, rc;
    fs_status_t st = fs_local_decode(s->buf, len, featstore_local_SplitRequest_fields, &req, "SPLIT", &err);
    if (st == FS_OK) st = fs_engine_split(s->engine, req.name, &split, &err);
    if (st == FS_OK && (fs_dataset_locate(fs_engine_dataset(s->engine), split->ids, &kept, &r.offset) != FS_OK ||
                        (fd = fcntl(kept, F_DUPFD_CLOEXEC, 0)) < 0))
        st = fs_error(&err, FS_ERR_IO, "cannot share the descriptor of split '%s'", req.name);
    if (st == FS_OK) {
        r.count = split->count;
        rc = fs_local_send_msg(c->fd, FS_LOCAL_SPLIT_REPLY, featstore_local_SplitReply_fields, &r, &fd, 1, MSG_DONTWAIT);
        if (rc) st = FS_ERR_IO;
    } else {
        rc = send_error(c->fd, st, err.msg);
    }
    if (fd >= 0) close(fd);
    fs_metrics_request(s->metrics, FS_METHOD_SPLIT, FS_TRANSPORT_UNIX, st, fs_now() - t0);
    return rc;
}

/* One frame from a client; -1 means drop the client. */
static int on_frame(fs_local_server_t *s, client_t *c, const fs_local_frame_t *f)
{
    if (f->type == FS_LOCAL_HELLO) return on_hello(s, c, f->len);
    if (!c->welcomed) {
        send_error(c->fd, FS_ERR_INVALID_ARGUMENT, "expected HELLO first");
        return -1;
    }
    switch (f->type) {
    case FS_LOCAL_INFO: return on_info(s, c);
    case FS_LOCAL_STATS: return on_stats(s, c);
    case FS_LOCAL_SPLIT: return on_split(s, c, f->len);
    case FS_LOCAL_REPORT: fs_local_report(s->metrics, c->reader, s->buf, f->len); return 0;
    case FS_LOCAL_RELAYOUT: return send_welcome(s, c, 0);
    case FS_LOCAL_REPLAN: return on_replan(s, c, f->len);
    default:
        send_error(c->fd, FS_ERR_INVALID_ARGUMENT, "unknown message type");
        return -1;
    }
}

/* Handles every queued frame; -1 means drop the client. */
static int on_readable(fs_local_server_t *s, client_t *c)
{
    for (;;) {
        int fds[4], nfds = 0;
        fs_local_frame_t f;
        int got = fs_local_recv(c->fd, &f, s->buf, sizeof s->buf, fds, &nfds, 4, MSG_DONTWAIT);
        for (int i = 0; i < nfds; i++) close(fds[i]); /* clients never send descriptors */
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
        if (got < 0 && errno == EPROTONOSUPPORT && !c->welcomed) {
            on_other_major(s, c, &f);
            return -1;
        }
        if (got < 0 && errno == EMSGSIZE) { /* refused unread: the frame was cut to the buffer */
            char msg[160];
            snprintf(msg, sizeof msg, "a message longer than %d bytes, the local protocol's limit per message",
                     FS_LOCAL_MAX_MSG);
            send_error(c->fd, FS_ERR_RESOURCE, msg);
            return -1;
        }
        if (got <= 0) {
            if (got < 0) send_error(c->fd, FS_ERR_INVALID_ARGUMENT, "malformed message");
            return -1;
        }
        if (on_frame(s, c, &f) != 0) return -1;
    }
}

/* ---- accepting: who may connect, and never a spin -------------------------------- */

#define PAUSE_SECONDS 0.1 /* listening paused this long when a connection cannot even be shed */

/* At most a line a second: a flood of refusals must not flood the log. */
static void log_guard(fs_local_server_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void log_guard(fs_local_server_t *s, const char *fmt, ...)
{
    double now = fs_now();
    if (s->last_log > 0 && now - s->last_log < 1.0) {
        s->unlogged++;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "featstore: unix://%s: ", s->path);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (s->unlogged) fprintf(stderr, " (%lu more such events not logged)", s->unlogged);
    fputc('\n', stderr);
    s->last_log = now, s->unlogged = 0;
}

static int peer_allowed(const fs_local_server_t *s, uid_t uid, gid_t gid)
{
    if (s->num_allow_uids == 0 && s->num_allow_gids == 0) return 1;
    if (uid == s->own_uid || uid == s->admin_uid) return 1;
    for (int i = 0; i < s->num_allow_uids; i++)
        if (s->allow_uids[i] == uid) return 1;
    for (int i = 0; i < s->num_allow_gids; i++)
        if (s->allow_gids[i] == gid) return 1;
    return 0;
}

/* "uids 0,1000 and gids 27" for a refusal. */
static void describe_allowed(const fs_local_server_t *s, char *buf, size_t size)
{
    size_t n = (size_t)snprintf(buf, size, "uids %u", (unsigned)s->own_uid);
    if (s->admin_uid != s->own_uid && n < size) n += (size_t)snprintf(buf + n, size - n, ",%u", (unsigned)s->admin_uid);
    for (int i = 0; i < s->num_allow_uids && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, ",%u", (unsigned)s->allow_uids[i]);
    for (int i = 0; i < s->num_allow_gids && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%u", i ? "," : " and gids ", (unsigned)s->allow_gids[i]);
}

/* Tells a peer why it is not served, and hangs up. Its first frames (a
 * HELLO sent right after connect) are read and dropped first: closing on
 * unread data would reset the connection, and the peer would see
 * ECONNRESET instead of the reason. */
static void refuse(int fd, fs_status_t st, const char *why)
{
    char sink[64];
    for (int i = 0; i < 4 && recv(fd, sink, sizeof sink, MSG_DONTWAIT | MSG_TRUNC) > 0; i++) {}
    send_error(fd, st, why);
    close(fd);
}

/* A new connection: its peer's credentials against the allow-list and the
 * per-uid cap, checked before anything is allocated for it; then its
 * handshake clock starts. */
static void admit(fs_local_server_t *s, int fd)
{
    struct ucred cr;
    socklen_t len = sizeof cr;
    char msg[600], allowed[300];
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0) {
        refuse(fd, FS_ERR_INTERNAL, "the server cannot read this peer's credentials");
        return;
    }
    if (!peer_allowed(s, cr.uid, cr.gid)) {
        describe_allowed(s, allowed, sizeof allowed);
        snprintf(msg, sizeof msg, "uid %u (gid %u) may not connect to this server; it admits %s (serve --allow-uid, "
                 "--allow-gid)", (unsigned)cr.uid, (unsigned)cr.gid, allowed);
        fs_metrics_local_refused(s->metrics, FS_LOCAL_REFUSED_NOT_ALLOWED);
        log_guard(s, "refused pid %d: %s", (int)cr.pid, msg);
        refuse(fd, FS_ERR_PERMISSION, msg);
        return;
    }
    if (s->max_per_uid > 0 && uid_connections(s, cr.uid) >= s->max_per_uid) {
        snprintf(msg, sizeof msg, "uid %u already holds %d connections to this server, the most one uid may (serve "
                 "--max-conns-per-uid %d): close one first", (unsigned)cr.uid, s->max_per_uid, s->max_per_uid);
        fs_metrics_local_refused(s->metrics, FS_LOCAL_REFUSED_UID_CAP);
        log_guard(s, "refused pid %d: %s", (int)cr.pid, msg);
        refuse(fd, FS_ERR_RESOURCE, msg);
        return;
    }
    client_t *c = calloc(1, sizeof *c);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
    if (!c || uid_add(s, cr.uid, +1) != 0) {
        free(c);
        refuse(fd, FS_ERR_NOMEM, "the server is out of memory");
        return;
    }
    if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        uid_add(s, cr.uid, -1);
        free(c);
        refuse(fd, FS_ERR_RESOURCE, "the server cannot watch another connection");
        return;
    }
    c->fd = fd, c->uid = cr.uid, c->gid = cr.gid, c->pid = cr.pid;
    c->next = s->clients;
    s->clients = c;
    atomic_fetch_add(&s->num_clients, 1);
    if (s->handshake_ms > 0) hs_enqueue(s, c);
}

/* Out of descriptors, a pending connection cannot be accepted, and
 * level-triggered epoll reports it again at once: the loop would spin. So
 * the reserve descriptor is given up for it: accepted, told why, closed;
 * then the reserve is taken again. 0: shed one; 1: none was pending; -1:
 * cannot shed (no reserve). */
static int shed_one(fs_local_server_t *s, int why)
{
    if (s->reserve_fd < 0) return -1;
    close(s->reserve_fd);
    int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), e = errno;
    if (fd >= 0)
        refuse(fd, FS_ERR_RESOURCE, why == EMFILE ? "the server is out of file descriptors (EMFILE); try again later"
                                                  : "the system is out of file descriptors (ENFILE); try again later");
    s->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd >= 0)
        log_guard(s, "out of file descriptors (%s): a new connection was closed unserved", why == EMFILE ? "EMFILE" :
                  "ENFILE");
    if (fd >= 0 && s->reserve_fd >= 0) return 0;
    return fd < 0 && (e == EAGAIN || e == EWOULDBLOCK) && s->reserve_fd >= 0 ? 1 : -1;
}

static void listen_events(fs_local_server_t *s, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = &s->listen_fd};
    epoll_ctl(s->epoll_fd, EPOLL_CTL_MOD, s->listen_fd, &ev);
}

static void on_accept(fs_local_server_t *s)
{
    for (;;) {
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), e = errno;
        if (fd >= 0) {
            admit(s, fd);
            continue;
        }
        if (e == EINTR || e == ECONNABORTED) continue;
        if (e == EAGAIN || e == EWOULDBLOCK) return;
        fs_metrics_local_accept_error(s->metrics, e == EMFILE   ? FS_LOCAL_ACCEPT_EMFILE
                                                  : e == ENFILE ? FS_LOCAL_ACCEPT_ENFILE
                                                                : FS_LOCAL_ACCEPT_OTHER);
        int shed = e == EMFILE || e == ENFILE ? shed_one(s, e) : -1;
        if (shed == 0) continue;
        if (shed == 1) return;
        /* nothing to give up: stop listening for a moment (the loop's timeout resumes it) */
        log_guard(s, "accept: %s; not accepting for %.0f ms", strerror(e), PAUSE_SECONDS * 1e3);
        listen_events(s, 0);
        s->paused_until = fs_now() + PAUSE_SECONDS;
        return;
    }
}

/* Closes connections whose handshake is overdue (oldest first), and
 * listens again after a pause. */
static void expire(fs_local_server_t *s)
{
    double now = fs_now();
    while (s->hs_head && s->hs_head->deadline <= now) {
        client_t *c = s->hs_head;
        char msg[200];
        snprintf(msg, sizeof msg, "no HELLO answered within the handshake timeout of %d ms (serve --handshake-timeout)",
                 s->handshake_ms);
        fs_metrics_local_handshake_timeout(s->metrics);
        log_guard(s, "closed a connection of pid %d (uid %u): %s", (int)c->pid, (unsigned)c->uid, msg);
        send_error(c->fd, FS_ERR_TIMEOUT, msg);
        drop_client(s, c);
    }
    if (s->paused_until > 0 && now >= s->paused_until) {
        s->paused_until = 0;
        listen_events(s, EPOLLIN);
    }
}

/* epoll_wait's timeout: until the next deadline (rounded up, so the wait
 * never ends early and spins), or -1 when there is none. */
static int wait_ms(const fs_local_server_t *s)
{
    double next = s->hs_head ? s->hs_head->deadline : 0;
    if (s->paused_until > 0 && (next == 0 || s->paused_until < next)) next = s->paused_until;
    if (next == 0) return -1;
    double ms = ceil((next - fs_now()) * 1e3);
    return ms < 0 ? 0 : ms > 1e9 ? 1000000000 : (int)ms;
}

static void *loop(void *p)
{
    fs_local_server_t *s = p;
    struct epoll_event ev[64];
    for (;;) {
        expire(s); /* before waiting: no event below can name a client dropped here */
        int n = epoll_wait(s->epoll_fd, ev, 64, wait_ms(s));
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
    if (!path) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "no socket path");
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
    if (s->listen_fd < 0 || bind(s->listen_fd, (struct sockaddr *)&a, sizeof a) != 0)
        return fs_error(err, FS_ERR_IO, "cannot listen on %s: %s", path, strerror(errno));
    if (stat(path, &st) == 0) s->bound_ino = st.st_ino, s->bound_dev = st.st_dev; /* the file is ours to remove */
    /* connecting needs write permission: the server's user and primary
     * group, nobody else; set before listen(), so no one connects earlier */
    if (chmod(path, 0660) != 0)
        return fs_error(err, FS_ERR_IO, "cannot make %s mode 0660: %s", path, strerror(errno));
    if (listen(s->listen_fd, 128) != 0)
        return fs_error(err, FS_ERR_IO, "cannot listen on %s: %s", path, strerror(errno));
    return FS_OK;
}

/* Closes the listening socket and removes its file, if the file is still
 * the one this server bound: never a file another server put there. */
static void remove_socket(fs_local_server_t *s)
{
    struct stat st;
    if (s->listen_fd < 0) return;
    close(s->listen_fd);
    s->listen_fd = -1;
    if (s->bound_ino && stat(s->path, &st) == 0 && st.st_ino == s->bound_ino && st.st_dev == s->bound_dev)
        unlink(s->path);
}

static void release(fs_local_server_t *s)
{
    for (size_t i = 0; i < s->data_fds.n; i++) close(s->data_fds.fd[i]);
    free(s->data_fds.fd);
    for (size_t i = 0; i < s->file_fds.n; i++) close(s->file_fds.fd[i]);
    free(s->file_fds.fd);
    free(s->tables);
    if (s->notice) munmap(s->notice, FS_LOCAL_NOTICE_BYTES);
    if (s->epoll_fd >= 0) close(s->epoll_fd);
    if (s->wake_fd >= 0) close(s->wake_fd);
    if (s->reserve_fd >= 0) close(s->reserve_fd);
    free(s->allow_uids);
    free(s->allow_gids);
    free(s);
}

/* The guards' options, the allow-lists copied. */
static fs_status_t set_guards(fs_local_server_t *s, const fs_local_server_opts_t *o, fs_error_t *err)
{
    if (o->handshake_timeout_ms < 0 || o->max_conns_per_uid < 0 || o->num_allow_uids < 0 || o->num_allow_gids < 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "local: handshake timeout %d ms, %d connections per uid, %d "
                        "uids and %d gids allowed: none may be negative", o->handshake_timeout_ms, o->max_conns_per_uid,
                        o->num_allow_uids, o->num_allow_gids);
    s->handshake_ms = o->handshake_timeout_ms, s->max_per_uid = o->max_conns_per_uid;
    s->own_uid = geteuid(), s->admin_uid = o->admin_uid;
    s->num_allow_uids = o->num_allow_uids, s->num_allow_gids = o->num_allow_gids;
    s->allow_uids = calloc((size_t)o->num_allow_uids + 1, sizeof *s->allow_uids);
    s->allow_gids = calloc((size_t)o->num_allow_gids + 1, sizeof *s->allow_gids);
    if (!s->allow_uids || !s->allow_gids) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    if (o->num_allow_uids) memcpy(s->allow_uids, o->allow_uids, (size_t)o->num_allow_uids * sizeof *s->allow_uids);
    if (o->num_allow_gids) memcpy(s->allow_gids, o->allow_gids, (size_t)o->num_allow_gids * sizeof *s->allow_gids);
    /* the descriptor given up to shed a connection when none is left */
    if ((s->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
        return fs_error(err, FS_ERR_IO, "local: cannot open /dev/null: %s", strerror(errno));
    return FS_OK;
}

fs_status_t fs_local_server_listen(const fs_local_server_opts_t *o, fs_local_server_t **out, fs_error_t *err)
{
    *out = NULL;
    if (o->protocol_minor > FS_LOCAL_MINOR)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "local protocol %u.%u is newer than this server's %u.%u",
                        FS_LOCAL_MAJOR, o->protocol_minor, FS_LOCAL_MAJOR, FS_LOCAL_MINOR);
    fs_local_server_t *s = calloc(1, sizeof *s);
    if (!s) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    s->minor = o->protocol_minor;
    s->replan = o->replan, s->replan_ctx = o->replan_ctx;
    s->listen_fd = s->epoll_fd = s->wake_fd = s->reserve_fd = -1;
    fs_status_t st = set_guards(s, o, err);
    if (!st) st = bind_socket(s, o->socket_path, err);
    if (st != FS_OK) {
        remove_socket(s);
        release(s);
        return st;
    }
    *out = s;
    return FS_OK;
}

fs_status_t fs_local_server_serve(fs_local_server_t *s, fs_engine_t *engine, fs_metrics_t *metrics, fs_error_t *err)
{
    s->engine = engine;
    s->metrics = metrics;
    fs_store_t *store = fs_engine_acquire(engine, NULL);
    fs_status_t st = fs_store_freeze(store, err); /* sharing the store ends placement */
    fs_store_destroy(store);
    if (!st) st = prepare_welcome(s, err);
    if (st != FS_OK) return st;
    s->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event a = {.events = EPOLLIN, .data.ptr = &s->listen_fd}, b = {.events = EPOLLIN, .data.ptr = &s->wake_fd};
    if (s->epoll_fd < 0 || s->wake_fd < 0 || epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->listen_fd, &a) ||
        epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->wake_fd, &b) || pthread_create(&s->thread, NULL, loop, s))
        return fs_error(err, FS_ERR_IO, "local: cannot start the event loop: %s", strerror(errno));
    s->serving = 1;
    return FS_OK;
}

fs_status_t fs_local_server_start(const fs_local_server_opts_t *o, fs_engine_t *engine, fs_metrics_t *metrics,
                                  fs_local_server_t **out, fs_error_t *err)
{
    fs_status_t st = fs_local_server_listen(o, out, err);
    if (st == FS_OK && (st = fs_local_server_serve(*out, engine, metrics, err)) != FS_OK) {
        fs_local_server_stop(*out);
        *out = NULL;
    }
    return st;
}

void fs_local_server_stop(fs_local_server_t *s)
{
    if (!s) return;
    uint64_t one = 1;
    if (s->serving) {
        if (write(s->wake_fd, &one, sizeof one) < 0) { /* the loop exits on the next wakeup anyway */ }
        pthread_join(s->thread, NULL);
    }
    join_replan(s);
    if (s->notice) atomic_store(s->notice, FS_LOCAL_NOTICE_STOPPED); /* clients' next call: connect again */
    remove_socket(s);
    while (s->clients) drop_client(s, s->clients);
    release(s);
}

int fs_local_server_clients(fs_local_server_t *s) { return atomic_load(&s->num_clients); }
