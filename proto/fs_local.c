/* fs_local.c — framing, sending and receiving local-transport messages and
 * negotiating their version (see fs_local.h). One sendmsg/recvmsg per
 * frame: SOCK_SEQPACKET keeps the boundaries, so there is no framing state
 * to get wrong. */
#include "fs_local.h"

#include <errno.h>
#include <pb_decode.h>
#include <pb_encode.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fs_pb.h"

static int send_frame(int sock, unsigned major, int type, const void *payload, size_t len, const int *fds, int nfds,
                      int flags)
{
    fs_local_hdr_t h = {.magic = FS_LOCAL_MAGIC, .version = (uint16_t)major, .type = (uint16_t)type,
                        .len = (uint32_t)len};
    struct iovec iov[2] = {{&h, sizeof h}, {(void *)payload, len}};
    union {
        char buf[CMSG_SPACE(sizeof(int) * FS_LOCAL_MAX_FDS)];
        struct cmsghdr align;
    } ctl;
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = len ? 2 : 1};
    if (len > FS_LOCAL_MAX_MSG || nfds > FS_LOCAL_MAX_FDS) {
        errno = len > FS_LOCAL_MAX_MSG ? EMSGSIZE : EINVAL;
        return -1;
    }
    if (nfds > 0) {
        memset(&ctl, 0, sizeof ctl);
        msg.msg_control = ctl.buf;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
    }
    ssize_t n;
    do n = sendmsg(sock, &msg, flags | MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n < 0 ? -1 : 0;
}

int fs_local_send(int sock, int type, const void *payload, size_t len, const int *fds, int nfds, int flags)
{
    return send_frame(sock, FS_LOCAL_MAJOR, type, payload, len, fds, nfds, flags);
}

int fs_local_send_msg(int sock, int type, const pb_msgdesc_t *fields, const void *msg, const int *fds, int nfds,
                      int flags)
{
    void *buf;
    size_t len;
    fs_error_t err;
    if (fs_pb_encode_alloc(fields, msg, "a local message", &buf, &len, &err) != FS_OK) {
        errno = err.code == FS_ERR_NOMEM ? ENOMEM : EINVAL;
        return -1;
    }
    int rc = fs_local_send(sock, type, buf, len, fds, nfds, flags);
    free(buf);
    return rc;
}

int fs_local_send_error(int sock, fs_status_t status, const char *message, int flags)
{
    featstore_local_Error e = featstore_local_Error_init_zero;
    e.status = (int32_t)status;
    snprintf(e.message, sizeof e.message, "%s", message); /* a longer detail is cut, never the frame refused */
    return fs_local_send_msg(sock, FS_LOCAL_ERROR, featstore_local_Error_fields, &e, NULL, 0, flags);
}

int fs_local_recv(int sock, fs_local_frame_t *f, void *buf, size_t cap, int *fds, int *nfds, int max_fds, int flags)
{
    fs_local_hdr_t h;
    struct iovec iov[2] = {{&h, sizeof h}, {buf, cap}};
    union {
        char buf[CMSG_SPACE(sizeof(int) * FS_LOCAL_MAX_FDS)];
        struct cmsghdr align;
    } ctl;
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
    if (nfds) *nfds = 0;
    ssize_t n;
    do n = recvmsg(sock, &msg, flags | MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n < 0 && errno == ECONNRESET) {
        /* A peer that closed with our frames unread resets the socket, and
         * Linux reports the reset before the frames it sent first: the
         * server's ERROR saying why it hung up (a refused uid, a handshake
         * timeout). The reset is consumed by that report, so read once more:
         * a frame, or 0 (closed) when it left none. */
        do n = recvmsg(sock, &msg, flags | MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
        if (n < 0) errno = ECONNRESET;
    }
    if (n < 0) return -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        int count = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int)), *in = (int *)CMSG_DATA(c);
        for (int i = 0; i < count; i++) {
            if (fds && nfds && *nfds < max_fds) fds[(*nfds)++] = in[i];
            else close(in[i]); /* never leak descriptors we did not ask for */
        }
    }
    if (n == 0) {
        /* The peer closed, or sent an empty datagram, which reads the same
         * but may carry descriptors: they were installed in this process, so
         * close them (tests/fuzz/fuzz_local found them leaking). */
        for (int i = 0; nfds && i < *nfds; i++) close(fds[i]);
        if (nfds) *nfds = 0;
        return 0;
    }
    int malformed = (size_t)n < sizeof h || h.magic != FS_LOCAL_MAGIC || (msg.msg_flags & MSG_TRUNC) ||
                    h.len != (size_t)n - sizeof h;
    if (malformed || h.version != FS_LOCAL_MAJOR) {
        for (int i = 0; nfds && i < *nfds; i++) close(fds[i]);
        if (nfds) *nfds = 0;
        if (!malformed) *f = (fs_local_frame_t){.type = h.type, .major = h.version, .len = h.len};
        errno = !malformed ? EPROTONOSUPPORT : (msg.msg_flags & MSG_TRUNC) ? EMSGSIZE : EPROTO;
        return -1;
    }
    *f = (fs_local_frame_t){.type = h.type, .major = h.version, .len = h.len};
    return 1;
}

fs_status_t fs_local_decode(const void *buf, size_t len, const pb_msgdesc_t *fields, void *msg, const char *what,
                            fs_error_t *err)
{
    return fs_pb_decode_buffer(buf, len, fields, msg, what, err);
}

/* "6.1", or for the raw-struct protocol "5 (featstore 0.1)". */
static void version_text(char *buf, size_t len, unsigned major, unsigned minor)
{
    if (major < FS_LOCAL_MAJOR) snprintf(buf, len, "%u (featstore 0.1)", major);
    else snprintf(buf, len, "%u.%u", major, minor);
}

fs_status_t fs_local_negotiate(unsigned our_minor, unsigned their_major, unsigned their_minor, int we_serve,
                               unsigned *minor, fs_error_t *err)
{
    if (their_major == FS_LOCAL_MAJOR && (our_minor > their_minor ? our_minor - their_minor : their_minor - our_minor) <= 1) {
        *minor = our_minor < their_minor ? our_minor : their_minor;
        return FS_OK;
    }
    const char *us = we_serve ? "server" : "client library", *them = we_serve ? "client library" : "server";
    int we_are_older = their_major != FS_LOCAL_MAJOR ? their_major > FS_LOCAL_MAJOR : their_minor > our_minor;
    char ours[32], theirs[32];
    version_text(ours, sizeof ours, FS_LOCAL_MAJOR, our_minor);
    version_text(theirs, sizeof theirs, their_major, their_minor);
    const char *why = their_major != FS_LOCAL_MAJOR ? "different major versions do not interoperate"
                                                    : "versions more than one minor version apart do not interoperate";
    return fs_error(err, FS_ERR_VERSION, "the %s speaks local protocol %s and this %s %s: %s; upgrade the %s", them,
                    theirs, us, ours, why, we_are_older ? us : them);
}

int fs_local_send_legacy_error(int sock, unsigned their_major, fs_status_t status, const char *message)
{
    char payload[FS_LOCAL_LEGACY_ERROR_BYTES] = {0}; /* {int32 status; char message[500]} */
    int32_t st = (int32_t)status;
    memcpy(payload, &st, sizeof st);
    snprintf(payload + 4, sizeof payload - 4, "%s", message);
    return send_frame(sock, their_major, FS_LOCAL_ERROR, payload, sizeof payload, NULL, 0, MSG_DONTWAIT);
}

int fs_fd_list_push(fs_fd_list_t *l, int fd)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        int *p = realloc(l->fd, cap * sizeof *p);
        if (!p) return -1;
        l->fd = p, l->cap = cap;
    }
    l->fd[l->n++] = fd;
    return 0;
}
