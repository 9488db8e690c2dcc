/* client_cluster_local.c — the unix:// path of an etcd:// trainer
 * (docs/design.md, "Owner-routed sampling").
 *
 * A shard whose map entry names a unix socket and this process's machine
 * (fs_shard_machine: the same kernel and network namespace) is asked for
 * its parts over that socket (proto/fs_local.h 6.4): each part's manifest
 * and its files' descriptors, the very files the shard maps. This process
 * opens them read-only (fs_dataset_open_fds: the kernel shares the pages
 * with the shard) and answers that shard's picks and rows itself with the
 * shard's engine (exec/fs_shard.h): the share of every batch this machine
 * holds costs no copy, no encoding and no gRPC, on either side.
 *
 * The parts are opened once per process per socket and shared by its
 * connections (a stream's producers) while any uses them; each connection
 * has its own workspace. A shard holding fewer parts than the map now
 * gives it (parts moved to it) is asked again. A socket that cannot be
 * reached (another mount namespace, a shard restarting) is no error: that
 * shard is asked over gRPC, as any other. A socket that answers wrongly
 * (another partitioning, a malformed part) fails the connection with the
 * reason. FEATSTORE_CLUSTER_LOCAL=0 turns the path off. */
#include "client_cluster_local.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fs_local.h"
#include "fs_pb.h"
#include "fs_shard.h"

/* The parts of one shard socket, shared by this process's connections. */
typedef struct held {
    struct held *next;
    char path[FS_CLUSTER_UNIX_MAX + 1];
    char partitioning[32];   /* fs_cluster_t's */
    fs_shard_t *shard;
    int users;
    int stale;               /* a newer one replaced it: no new users */
} held_t;

static pthread_mutex_t held_mu = PTHREAD_MUTEX_INITIALIZER;
static held_t *held_list;

/* One connection's use of a held shard. */
typedef struct {
    held_t *h;
    fs_shard_ws_t *ws;
} local_conn_t;

/* ---- receiving a shard's parts ------------------------------------------------------ */

typedef struct {
    char **names;
    int n, cap;
} names_t;

static bool put_name(void *ctx, const char *s, size_t len)
{
    names_t *x = ctx;
    if (x->n == x->cap) {
        char **g = realloc(x->names, sizeof *g * (size_t)(x->cap = x->cap ? 2 * x->cap : 16));
        if (!g) return false;
        x->names = g;
    }
    return (x->names[x->n] = strndup(s, len)) != NULL && ++x->n;
}

static void names_free(names_t *x)
{
    for (int i = 0; i < x->n; i++) free(x->names[i]);
    free(x->names);
}

/* One SHARD_PART frame within the deadline; anything else is an error
 * (an ERROR frame's, the shard's reason). */
static fs_status_t recv_within(int sock, const char *path, double deadline, fs_local_frame_t *f, char *buf, size_t cap,
                               int *fds, int *nfds, fs_error_t *err)
{
    int ms = (int)((deadline - fs_now()) * 1000);
    struct pollfd p = {.fd = sock, .events = POLLIN};
    if (ms <= 0 || poll(&p, 1, ms) == 0)
        return fs_error(err, FS_ERR_TIMEOUT, "shard socket %s: no answer in time", path);
    int got = fs_local_recv(sock, f, buf, cap, fds, nfds, FS_LOCAL_MAX_FDS, 0);
    if (got <= 0)
        return fs_error(err, got < 0 && errno == EPROTO ? FS_ERR_FORMAT : FS_ERR_UNAVAILABLE,
                        "shard socket %s: %s", path, got ? strerror(errno) : "closed before it sent its parts");
    if (f->type == FS_LOCAL_SHARD_PART) return FS_OK;
    featstore_local_Error e = featstore_local_Error_init_zero;
    if (f->type != FS_LOCAL_ERROR ||
        fs_local_decode(buf, f->len, featstore_local_Error_fields, &e, "shard socket error", err) != FS_OK)
        return fs_error(err, FS_ERR_FORMAT, "shard socket %s: unexpected message %d", path, f->type);
    fs_status_t st = e.status > 0 && e.status < FS_STATUS_COUNT_ ? (fs_status_t)e.status : FS_ERR_INTERNAL;
    return fs_error(err, st, "shard socket %s: %s", path, e.message);
}

/* A SHARD_PART frame's part, opened on its descriptors (fds[0]: the
 * manifest; then one per file), checked against what the trainer expects. */
static fs_status_t open_part(const fs_cluster_t *c, const char *path, const featstore_local_ShardPart *m,
                             const names_t *files, const int *fds, int nfds, fs_dataset_t **out, fs_error_t *err)
{
    if (strcmp(m->partitioning, c->partitioning) != 0 || m->parts != (uint32_t)c->parts || m->index >= m->parts ||
        nfds != files->n + 1 || m->manifest_bytes == 0 || m->manifest_bytes > FS_CLUSTER_BOOK_MAX)
        return fs_error(err, FS_ERR_FORMAT, "shard socket %s: part %u of partitioning %s of %u parts, %d descriptors "
                        "for %d files and a %llu-byte manifest: not a part of this cluster's %s of %d parts", path,
                        m->index, m->partitioning, m->parts, nfds, files->n, (unsigned long long)m->manifest_bytes,
                        c->partitioning, c->parts);
    char *text = malloc(m->manifest_bytes + 1), name[160];
    if (!text) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    fs_status_t st = pread(fds[0], text, m->manifest_bytes, 0) == (ssize_t)m->manifest_bytes
                         ? FS_OK : fs_error(err, FS_ERR_IO, "shard socket %s: cannot read part %u's manifest", path,
                                            m->index);
    snprintf(name, sizeof name, "%s part %u", path, m->index);
    if (st == FS_OK)
        st = fs_dataset_open_fds(name, text, m->manifest_bytes, (const char *const *)files->names, fds + 1, files->n,
                                 1, out, err);
    free(text);
    if (st == FS_OK && ((*out)->partition.index != (int)m->index || strcmp((*out)->partition.id, c->partitioning))) {
        st = fs_error(err, FS_ERR_FORMAT, "shard socket %s: part %u's manifest says part %d of %s", path, m->index,
                      (*out)->partition.index, (*out)->partition.id);
        fs_dataset_close(*out);
        *out = NULL;
    }
    return st;
}

/* Every SHARD_PART of the answer, opened, into parts[] (*n of them). */
static fs_status_t recv_parts(int sock, const fs_cluster_t *c, const char *path, double deadline,
                              fs_dataset_t ***parts, int *n, fs_error_t *err)
{
    char *buf = malloc(FS_LOCAL_MAX_MSG);
    fs_status_t st = buf ? FS_OK : fs_error(err, FS_ERR_NOMEM, "out of memory");
    uint32_t held = 1;
    *parts = NULL, *n = 0;
    for (uint32_t i = 0; st == FS_OK && i < held; i++) {
        fs_local_frame_t f;
        int fds[FS_LOCAL_MAX_FDS], nfds = 0;
        names_t files = {0};
        fs_pb_strings_t cb = {.put = put_name, .ctx = &files};
        featstore_local_ShardPart m = featstore_local_ShardPart_init_zero;
        fs_pb_set_strings(&m.files, &cb);
        st = recv_within(sock, path, deadline, &f, buf, FS_LOCAL_MAX_MSG, fds, &nfds, err);
        if (st == FS_OK) st = fs_local_decode(buf, f.len, featstore_local_ShardPart_fields, &m, "SHARD_PART", err);
        if (st == FS_OK && i == 0 && (m.held == 0 || m.held > (uint32_t)c->parts))
            st = fs_error(err, FS_ERR_FORMAT, "shard socket %s: it says it holds %u parts of %d", path, m.held, c->parts);
        if (st == FS_OK && i == 0) {
            held = m.held;
            if (!(*parts = calloc(held, sizeof **parts))) st = fs_error(err, FS_ERR_NOMEM, "out of memory");
        }
        if (st == FS_OK && m.held != held)
            st = fs_error(err, FS_ERR_FORMAT, "shard socket %s: part frames disagree on how many there are", path);
        if (st == FS_OK && (st = open_part(c, path, &m, &files, fds, nfds, &(*parts)[i], err)) == FS_OK) ++*n;
        for (int j = 0; j < nfds; j++) close(fds[j]); /* the dataset keeps its own */
        names_free(&files);
    }
    free(buf);
    return st;
}

/* The shard at path's parts, or *out NULL when its socket cannot be
 * reached (then gRPC serves). */
static fs_status_t fetch(const fs_cluster_t *c, const char *path, fs_shard_t **out, fs_error_t *err)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    *out = NULL;
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (sock < 0 || connect(sock, (struct sockaddr *)&a, sizeof a) != 0) {
        if (sock >= 0) close(sock);
        return FS_OK; /* not reachable from here: gRPC */
    }
    featstore_local_ShardHello h = {.major = FS_LOCAL_MAJOR, .minor = FS_LOCAL_MINOR, .pid = getpid()};
    snprintf(h.partitioning, sizeof h.partitioning, "%.*s", FS_PARTITION_ID_LEN, c->partitioning);
    fs_dataset_t **parts = NULL;
    int n = 0;
    fs_status_t st = fs_local_send_msg(sock, FS_LOCAL_SHARD_HELLO, featstore_local_ShardHello_fields, &h, NULL, 0,
                                       MSG_DONTWAIT) == 0
                         ? FS_OK : fs_error(err, FS_ERR_UNAVAILABLE, "shard socket %s: %s", path, strerror(errno));
    if (st == FS_OK) st = recv_parts(sock, c, path, fs_now() + c->timeout_ms / 1000.0, &parts, &n, err);
    close(sock);
    if (st == FS_OK) st = fs_shard_adopt(path, parts, n, out, err); /* it takes the parts */
    for (int i = 0; i < n && st != FS_OK; i++) fs_dataset_close(parts[i]);
    free(parts);
    return st;
}

/* ---- the hooks ----------------------------------------------------------------------- */

static int holds_all(const fs_shard_t *s, const int *parts, int n)
{
    for (int i = 0; i < n; i++)
        if (!fs_shard_part(s, parts[i])) return 0;
    return 1;
}

/* The process's parts of the shard at a->unix_path: shared ones holding
 * every part of parts[0..n), else fetched anew. */
static fs_status_t take(const fs_cluster_t *c, const fs_shard_addr_t *a, const int *parts, int n, held_t **out,
                        fs_error_t *err)
{
    *out = NULL;
    if (n == 0) return FS_OK; /* the map gives it no part (yet, or any more): nothing to ask it */
    pthread_mutex_lock(&held_mu); /* held while fetching: connections of one process fetch a shard once */
    held_t *h = held_list;
    while (h && (h->stale || strcmp(h->path, a->unix_path) || strcmp(h->partitioning, c->partitioning))) h = h->next;
    if (h && !holds_all(h->shard, parts, n)) h->stale = 1, h = NULL;
    fs_status_t st = FS_OK;
    if (!h) {
        fs_shard_t *s = NULL;
        st = fetch(c, a->unix_path, &s, err);
        if (st == FS_OK && s && !holds_all(s, parts, n)) { /* moving parts: the map is ahead of the shard */
            fs_shard_close(s);
            s = NULL;
        }
        if (s && !(h = calloc(1, sizeof *h))) fs_shard_close(s);
        if (h) {
            snprintf(h->path, sizeof h->path, "%s", a->unix_path);
            snprintf(h->partitioning, sizeof h->partitioning, "%s", c->partitioning);
            h->shard = s, h->next = held_list, held_list = h;
        }
    }
    if (h) h->users++;
    pthread_mutex_unlock(&held_mu);
    *out = h;
    return st;
}

static void put(held_t *h)
{
    pthread_mutex_lock(&held_mu);
    if (--h->users == 0) {
        for (held_t **p = &held_list; *p; p = &(*p)->next)
            if (*p == h) {
                *p = h->next;
                break;
            }
        fs_shard_close(h->shard);
        free(h);
    }
    pthread_mutex_unlock(&held_mu);
}

/* This process's machine, once: it cannot change while the process runs. */
static char mine[FS_CLUSTER_HOST_MAX + 1];
static void machine_once(void) { fs_shard_machine(mine, sizeof mine); }

/* Whether shard a is on this machine, with a socket: answered in process. */
static int local_mine(void *ctx, const fs_shard_addr_t *a)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    (void)ctx;
    pthread_once(&once, machine_once);
    return a->unix_path[0] && mine[0] && strcmp(a->host, mine) == 0;
}

static fs_status_t local_open(void *ctx, const fs_cluster_t *c, const fs_shard_addr_t *a, const int *parts, int n,
                              void **conn, fs_error_t *err)
{
    *conn = NULL;
    if (!local_mine(ctx, a)) return FS_OK; /* another machine's: gRPC */
    held_t *h;
    fs_status_t st = take(c, a, parts, n, &h, err);
    if (st != FS_OK || !h) return st;
    local_conn_t *k = calloc(1, sizeof *k);
    if (!k || (st = fs_shard_ws_create(&k->ws, err)) != FS_OK) {
        free(k);
        put(h);
        return st != FS_OK ? st : fs_error(err, FS_ERR_NOMEM, "out of memory");
    }
    k->h = h;
    *conn = k;
    return FS_OK;
}

static void local_close(void *conn)
{
    local_conn_t *k = conn;
    fs_shard_ws_destroy(k->ws);
    put(k->h);
    free(k);
}

static fs_status_t local_picks(void *conn, const fs_typed_picks_req_t *q, const int64_t *ids, int64_t n,
                               fs_typed_picks_t *out, fs_error_t *err)
{
    local_conn_t *k = conn;
    return fs_shard_picks(k->h->shard, k->ws, q, ids, n, out, err);
}

static fs_status_t local_rows(void *conn, int t, const char *table, const int64_t *ids, int64_t n, size_t row_bytes,
                              void *out, fs_error_t *err)
{
    local_conn_t *k = conn;
    size_t stored;
    fs_status_t st = fs_shard_table(k->h->shard, t, table, &stored, err);
    if (st == FS_OK && stored != row_bytes)
        st = fs_error(err, FS_ERR_FORMAT, "shard socket %s: table '%s' has %zu-byte rows, the book says %zu",
                      k->h->path, table, stored, row_bytes);
    return st == FS_OK ? fs_shard_rows(k->h->shard, t, table, ids, n, out, err) : st;
}

static fs_status_t local_edges(void *conn, int etype, const int64_t *dst, const int64_t *src, int64_t n,
                               uint8_t *is_edge, fs_error_t *err)
{
    local_conn_t *k = conn;
    return fs_shard_edges(k->h->shard, etype, dst, src, n, is_edge, err);
}

static const fs_cluster_local_t hooks = {.open = local_open, .close = local_close, .picks = local_picks,
                                         .rows = local_rows, .edges = local_edges, .mine = local_mine};

const fs_cluster_local_t *fs_cluster_local_hooks(void)
{
    const char *env = getenv("FEATSTORE_CLUSTER_LOCAL");
    return env && strcmp(env, "0") == 0 ? NULL : &hooks;
}
