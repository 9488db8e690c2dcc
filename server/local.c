/* local.c — see local.h. The conversation and its messages are
 * proto/fs_local.h's; this file runs the loop (accepting, the guards, the
 * clients' frames, re-plans, start and stop) and turns the engine's and the
 * store's plain C facts into messages; what a WELCOME says is
 * local_welcome.c's, what a REPORT counts local_report.c's. Every message
 * is read into one receive buffer and decoded from there; replies go out
 * with MSG_DONTWAIT, so a client that does not read its socket is dropped
 * rather than waited for. */
#include "local_internal.h"

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

#include "local_report.h"

void fs_local_server_defaults(fs_local_server_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->protocol_minor = FS_LOCAL_MINOR;
    o->handshake_timeout_ms = FS_LOCAL_DEFAULT_HANDSHAKE_MS;
    o->max_conns_per_uid = FS_LOCAL_DEFAULT_MAX_CONNS_PER_UID;
    o->admin_uid = geteuid();
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
    const fs_dataset_t *ds = fs_engine_dataset(s->engine);
    if (ds->num_on_disk > 0 && (minor < 4 || s->welcome.typed)) {
        /* Older clients would map a table that is read, not mapped (6.4). */
        return send_error(c->fd, FS_ERR_UNSUPPORTED,
                          minor < 4 ? "this server serves feature tables from disk (they did not fit its memory "
                                      "budget), which needs local protocol 6.4 (featstore 1.5): upgrade the client "
                                      "library, or connect over grpc://"
                                    : "this server serves a typed graph's feature tables from disk: unix:// "
                                      "trainers cannot read them yet; connect over grpc://");
    }
    if (minor < 5 && fs_dataset_num_compressed(ds) > 0) {
        char why[240];
        snprintf(why, sizeof why, "this server serves compressed feature tables (featstore compress), which need local "
                 "protocol 6.5 (featstore 1.5); this client library speaks 6.%u: upgrade it", minor);
        return send_error(c->fd, FS_ERR_VERSION, why);
    }
    if (s->welcome.typed && minor < 3) {
        char why[200];
        snprintf(why, sizeof why, "the dataset is a typed graph, which needs local protocol 6.3 (featstore 1.3); "
                 "this client library speaks 6.%u: upgrade it", minor);
        send_error(c->fd, FS_ERR_VERSION, why);
        return -1;
    }
    c->reader = h.reader;
    c->minor = minor;
    if (fs_local_send_welcome(s, c, (int)h.slots) != 0) return -1;
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
    if (c->uid != s->allow.admin_uid) { /* before anything is decoded: administration is the admin's alone */
        char msg[200];
        snprintf(msg, sizeof msg, "re-planning is administration: uid %u may not re-plan this server, only its admin "
                 "uid %u (serve --admin-uid)", (unsigned)c->uid, (unsigned)s->allow.admin_uid);
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
    if (f->type == FS_LOCAL_SHARD_HELLO) { /* 6.4: a cluster trainer that took this for a shard's socket */
        send_error(c->fd, FS_ERR_UNSUPPORTED, "this is a whole server's socket, not a shard server's: a cluster's "
                   "shards give their sockets with serve ROOT --parts ... --socket PATH");
        return -1;
    }
    if (!c->welcomed) {
        send_error(c->fd, FS_ERR_INVALID_ARGUMENT, "expected HELLO first");
        return -1;
    }
    switch (f->type) {
    case FS_LOCAL_INFO: return on_info(s, c);
    case FS_LOCAL_STATS: return on_stats(s, c);
    case FS_LOCAL_SPLIT: return on_split(s, c, f->len);
    case FS_LOCAL_REPORT: fs_local_report(s->metrics, c->reader, s->buf, f->len); return 0;
    case FS_LOCAL_RELAYOUT: return fs_local_send_welcome(s, c, 0);
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
    fprintf(stderr, "featstore: unix://%s: ", s->sock.path);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (s->unlogged) fprintf(stderr, " (%lu more such events not logged)", s->unlogged);
    fputc('\n', stderr);
    s->last_log = now, s->unlogged = 0;
}

/* A new connection: its peer's credentials against the allow-list and the
 * per-uid cap, checked before anything is allocated for it; then its
 * handshake clock starts. */
static void admit(fs_local_server_t *s, int fd)
{
    struct ucred cr;
    char msg[600];
    fs_status_t st = fs_local_peer(fd, &s->allow, &cr, msg, sizeof msg);
    if (st == FS_ERR_PERMISSION) {
        fs_metrics_local_refused(s->metrics, FS_LOCAL_REFUSED_NOT_ALLOWED);
        log_guard(s, "refused pid %d: %s", (int)cr.pid, msg);
    }
    if (st != FS_OK) {
        fs_local_refuse(fd, st, msg);
        return;
    }
    if (s->max_per_uid > 0 && uid_connections(s, cr.uid) >= s->max_per_uid) {
        snprintf(msg, sizeof msg, "uid %u already holds %d connections to this server, the most one uid may (serve "
                 "--max-conns-per-uid %d): close one first", (unsigned)cr.uid, s->max_per_uid, s->max_per_uid);
        fs_metrics_local_refused(s->metrics, FS_LOCAL_REFUSED_UID_CAP);
        log_guard(s, "refused pid %d: %s", (int)cr.pid, msg);
        fs_local_refuse(fd, FS_ERR_RESOURCE, msg);
        return;
    }
    client_t *c = calloc(1, sizeof *c);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
    if (!c || uid_add(s, cr.uid, +1) != 0) {
        free(c);
        fs_local_refuse(fd, FS_ERR_NOMEM, "the server is out of memory");
        return;
    }
    if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        uid_add(s, cr.uid, -1);
        free(c);
        fs_local_refuse(fd, FS_ERR_RESOURCE, "the server cannot watch another connection");
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
    int fd = accept4(s->sock.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), e = errno;
    if (fd >= 0)
        fs_local_refuse(fd, FS_ERR_RESOURCE, why == EMFILE ? "the server is out of file descriptors (EMFILE); try again later"
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
    struct epoll_event ev = {.events = events, .data.ptr = &s->sock.fd};
    epoll_ctl(s->epoll_fd, EPOLL_CTL_MOD, s->sock.fd, &ev);
}

static void on_accept(fs_local_server_t *s)
{
    for (;;) {
        int fd = accept4(s->sock.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), e = errno;
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
            if (ev[i].data.ptr == &s->sock.fd) {
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
    fs_local_allow_free(&s->allow);
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
    fs_status_t st = fs_local_allow_init(&s->allow, o->admin_uid, o->allow_uids, o->num_allow_uids, o->allow_gids,
                                         o->num_allow_gids, err);
    if (st != FS_OK) return st;
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
    s->sock.fd = s->epoll_fd = s->wake_fd = s->reserve_fd = -1;
    fs_status_t st = set_guards(s, o, err);
    if (!st) st = fs_local_socket_listen(&s->sock, o->socket_path, err);
    if (st != FS_OK) {
        fs_local_socket_remove(&s->sock);
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
    if (!st) st = fs_local_prepare_welcome(s, err);
    if (st != FS_OK) return st;
    s->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event a = {.events = EPOLLIN, .data.ptr = &s->sock.fd}, b = {.events = EPOLLIN, .data.ptr = &s->wake_fd};
    if (s->epoll_fd < 0 || s->wake_fd < 0 || epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->sock.fd, &a) ||
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
    fs_local_socket_remove(&s->sock);
    while (s->clients) drop_client(s, s->clients);
    release(s);
}

int fs_local_server_clients(fs_local_server_t *s) { return atomic_load(&s->num_clients); }
