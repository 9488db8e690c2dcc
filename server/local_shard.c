/* local_shard.c — a shard server's unix:// socket (local_shard.h says what
 * and why): one thread accepting, each handshake on a thread of its own
 * (FS_LOCAL_SHARD_MAX_HANDSHAKES at once, so a peer that sends nothing
 * delays no other), answered with the held parts' manifests and files and
 * then closed. */
#include "local_shard.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fs_local.h"
#include "fs_pb.h"

struct fs_local_shard {
    fs_local_socket_t sock;
    fs_local_allow_t allow;
    fs_shard_live_t *live;   /* the parts held now */
    int id;
    int wake_fd;             /* written by stop: the thread's cue to end */
    pthread_t thread;
    int running;
    pthread_mutex_t mu;      /* handshakes under way, and their end */
    pthread_cond_t idle;
    int handshakes;
};

typedef struct {
    fs_local_shard_t *ls;
    int fd;
} handshake_t;

/* A part's manifest as the shard parsed it, in a sealed memfd: the
 * trainer validates the same text against the same files. */
static int manifest_memfd(const fs_dataset_t *ds)
{
    int fd = memfd_create("featstore-part-manifest", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd >= 0 && (!ds->manifest || write(fd, ds->manifest, ds->manifest_len) != (ssize_t)ds->manifest_len ||
                    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static const char *file_name_at(void *ctx, size_t i) { return fs_dataset_file_name(ctx, (int)i); }

/* Part i of shard s: its SHARD_PART frame, its manifest in a sealed memfd
 * and its files' descriptors; -1 when the peer is gone or the part cannot
 * be sent (the peer is told why). */
static int send_part(fs_local_shard_t *ls, const fs_shard_t *s, int fd, int i)
{
    const int *held;
    int num_held = fs_shard_held(s, &held);
    const fs_dataset_t *ds = fs_shard_part(s, held[i]);
    int nfiles = fs_dataset_num_files(ds), fds[FS_LOCAL_MAX_FDS];
    char why[200];
    if (nfiles + 1 > FS_LOCAL_MAX_FDS) {
        snprintf(why, sizeof why, "part %d has %d files, more than one local frame carries (%d)", held[i], nfiles,
                 FS_LOCAL_MAX_FDS - 1);
        fs_local_send_error(fd, FS_ERR_UNSUPPORTED, why, MSG_DONTWAIT);
        return -1;
    }
    if ((fds[0] = manifest_memfd(ds)) < 0) {
        snprintf(why, sizeof why, "cannot share part %d's manifest: %s", held[i], strerror(errno));
        fs_local_send_error(fd, FS_ERR_IO, why, MSG_DONTWAIT);
        return -1;
    }
    fs_pb_strings_t names = {.count = (size_t)nfiles, .get = file_name_at, .ctx = (void *)ds};
    featstore_local_ShardPart m = featstore_local_ShardPart_init_zero;
    snprintf(m.partitioning, sizeof m.partitioning, "%s", fs_shard_partitioning(s));
    m.parts = (uint32_t)fs_shard_num_parts(s), m.index = (uint32_t)held[i];
    m.held = (uint32_t)num_held, m.shard = ls->id, m.manifest_bytes = ds->manifest_len;
    fs_pb_set_strings(&m.files, &names);
    for (int f = 0; f < nfiles; f++) fds[f + 1] = fs_dataset_file_fd(ds, f);
    int r = fs_local_send_msg(fd, FS_LOCAL_SHARD_PART, featstore_local_ShardPart_fields, &m, fds, nfiles + 1, 0);
    close(fds[0]);
    return r;
}

/* What the peer sent, checked: 0 when it is a SHARD_HELLO this shard
 * answers, else an ERROR saying why has been sent. */
static int check_hello(fs_local_shard_t *ls, const fs_shard_t *s, int fd)
{
    char buf[1024], why[300];
    fs_local_frame_t f;
    int nfds = 0;
    fs_error_t err = {0};
    unsigned minor;
    if (fs_local_recv(fd, &f, buf, sizeof buf, NULL, &nfds, 0, 0) != 1) {
        if (errno == EPROTONOSUPPORT && fs_local_negotiate(FS_LOCAL_MINOR, f.major, 0, 1, &minor, &err) != FS_OK)
            fs_local_send_error(fd, err.code, err.msg, MSG_DONTWAIT);
        return -1; /* gone, silent past the deadline, or not our protocol */
    }
    featstore_local_ShardHello h = featstore_local_ShardHello_init_zero;
    if (f.type != FS_LOCAL_SHARD_HELLO) {
        snprintf(why, sizeof why, "this is shard %d's socket: it serves the trainers of its cluster on its machine "
                 "(etcd:// or file:), not a connection to one server (unix:// to a whole server's socket)", ls->id);
        fs_local_send_error(fd, FS_ERR_UNSUPPORTED, why, MSG_DONTWAIT);
        return -1;
    }
    if (fs_local_decode(buf, f.len, featstore_local_ShardHello_fields, &h, "SHARD_HELLO", &err) != FS_OK ||
        fs_local_negotiate(FS_LOCAL_MINOR, h.major, h.minor, 1, &minor, &err) != FS_OK) {
        fs_local_send_error(fd, err.code, err.msg, MSG_DONTWAIT);
        return -1;
    }
    if (strcmp(h.partitioning, fs_shard_partitioning(s)) != 0) {
        snprintf(why, sizeof why, "shard %d serves partitioning %s, not %s: the trainer's cluster map is another "
                 "cluster's", ls->id, fs_shard_partitioning(s), h.partitioning);
        fs_local_send_error(fd, FS_ERR_FORMAT, why, MSG_DONTWAIT);
        return -1;
    }
    return 0;
}

/* One peer: admitted by its credentials, its hello checked, the parts
 * sent, and the connection closed. */
static void serve_one(fs_local_shard_t *ls, int fd)
{
    struct ucred cr;
    char msg[600];
    fs_status_t st = fs_local_peer(fd, &ls->allow, &cr, msg, sizeof msg);
    if (st != FS_OK) {
        fs_local_refuse(fd, st, msg);
        return;
    }
    struct timeval tv = {FS_LOCAL_SHARD_HANDSHAKE_MS / 1000, (FS_LOCAL_SHARD_HANDSHAKE_MS % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    const fs_shard_t *now = fs_shard_live_get(ls->live); /* the parts held now, whole, even if a swap comes */
    const int *held;
    int n = fs_shard_held(now, &held);
    if (check_hello(ls, now, fd) == 0)
        for (int i = 0; i < n && send_part(ls, now, fd, i) == 0; i++) {}
    fs_shard_live_put(ls->live, now);
    close(fd);
}

/* One handshake fewer under way (the last one's end wakes a stop). */
static void handshake_done(fs_local_shard_t *ls)
{
    pthread_mutex_lock(&ls->mu);
    if (--ls->handshakes == 0) pthread_cond_broadcast(&ls->idle);
    pthread_mutex_unlock(&ls->mu);
}

static void *handshake(void *arg)
{
    handshake_t *h = arg;
    fs_local_shard_t *ls = h->ls;
    serve_one(ls, h->fd);
    free(h);
    handshake_done(ls);
    return NULL;
}

/* A new peer, served on a thread of its own while there is room. */
static void admit(fs_local_shard_t *ls, int fd)
{
    pthread_mutex_lock(&ls->mu);
    int room = ls->handshakes < FS_LOCAL_SHARD_MAX_HANDSHAKES;
    ls->handshakes += room;
    pthread_mutex_unlock(&ls->mu);
    handshake_t *h = room ? malloc(sizeof *h) : NULL;
    pthread_t t;
    pthread_attr_t attr;
    int started = 0;
    if (h && pthread_attr_init(&attr) == 0) {
        *h = (handshake_t){ls, fd};
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        started = pthread_create(&t, &attr, handshake, h) == 0;
        pthread_attr_destroy(&attr);
    }
    if (started) return;
    free(h);
    if (room) handshake_done(ls);
    fs_local_refuse(fd, FS_ERR_RESOURCE, room ? "the shard cannot start a thread for this peer"
                                              : "the shard is answering as many peers as it may at once: try again");
}

static void *loop(void *arg)
{
    fs_local_shard_t *ls = arg;
    for (;;) {
        struct pollfd p[2] = {{.fd = ls->sock.fd, .events = POLLIN}, {.fd = ls->wake_fd, .events = POLLIN}};
        int n = poll(p, 2, -1);
        if (n < 0 && errno != EINTR) break;
        if (n <= 0) continue;
        if (p[1].revents) break;
        int fd = accept4(ls->sock.fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0) admit(ls, fd);
        else if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
            poll(&p[1], 1, 100); /* out of descriptors: wait a little rather than spin */
    }
    return NULL;
}

void fs_local_shard_stop(fs_local_shard_t *ls)
{
    if (!ls) return;
    if (ls->running) {
        uint64_t one = 1;
        if (write(ls->wake_fd, &one, sizeof one) != sizeof one) { /* an eventfd write cannot fail here */ }
        pthread_join(ls->thread, NULL);
        pthread_mutex_lock(&ls->mu); /* the handshakes' own deadlines bound this wait */
        while (ls->handshakes > 0) pthread_cond_wait(&ls->idle, &ls->mu);
        pthread_mutex_unlock(&ls->mu);
    }
    pthread_mutex_destroy(&ls->mu);
    pthread_cond_destroy(&ls->idle);
    fs_local_socket_remove(&ls->sock);
    if (ls->wake_fd >= 0) close(ls->wake_fd);
    fs_local_allow_free(&ls->allow);
    free(ls);
}

/* A check that each part's descriptors fit one frame, made at start so
 * that a dataset that cannot be shared this way is refused then. */
static fs_status_t check_parts(fs_local_shard_t *ls, fs_error_t *err)
{
    const fs_shard_t *now = fs_shard_live_get(ls->live);
    const int *held;
    int n = fs_shard_held(now, &held);
    fs_status_t st = FS_OK;
    for (int i = 0; st == FS_OK && i < n; i++) {
        const fs_dataset_t *ds = fs_shard_part(now, held[i]);
        if (fs_dataset_num_files(ds) + 1 > FS_LOCAL_MAX_FDS)
            st = fs_error(err, FS_ERR_UNSUPPORTED, "--socket: part %d has %d files, more than one local frame "
                          "carries (%d)", held[i], fs_dataset_num_files(ds), FS_LOCAL_MAX_FDS - 1);
    }
    fs_shard_live_put(ls->live, now);
    return st;
}

fs_status_t fs_local_shard_start(const char *path, fs_shard_live_t *live, int id, const fs_local_allow_t *allow,
                                 fs_local_shard_t **out, fs_error_t *err)
{
    *out = NULL;
    fs_local_shard_t *ls = calloc(1, sizeof *ls);
    if (!ls) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    ls->live = live, ls->id = id, ls->sock.fd = -1;
    pthread_mutex_init(&ls->mu, NULL);
    pthread_cond_init(&ls->idle, NULL);
    ls->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    fs_status_t st = ls->wake_fd >= 0 ? FS_OK : fs_error(err, FS_ERR_IO, "--socket: eventfd: %s", strerror(errno));
    if (st == FS_OK)
        st = fs_local_allow_init(&ls->allow, allow->admin_uid, allow->uids, allow->num_uids, allow->gids,
                                 allow->num_gids, err);
    if (st == FS_OK) st = check_parts(ls, err);
    if (st == FS_OK) st = fs_local_socket_listen(&ls->sock, path, err);
    if (st == FS_OK && pthread_create(&ls->thread, NULL, loop, ls) != 0)
        st = fs_error(err, FS_ERR_RESOURCE, "--socket: cannot start its thread");
    ls->running = st == FS_OK;
    if (st != FS_OK) {
        fs_local_shard_stop(ls);
        return st;
    }
    *out = ls;
    return FS_OK;
}
