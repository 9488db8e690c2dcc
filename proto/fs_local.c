/* fs_local.c — sending and receiving local-transport messages (see
 * fs_local.h). One sendmsg/recvmsg per message: SOCK_SEQPACKET keeps the
 * boundaries, so there is no framing state to get wrong. */
#include "fs_local.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

int fs_local_send(int sock, int type, const void *payload, size_t len, const int *fds, int nfds, int flags)
{
    fs_local_hdr_t h = {.magic = FS_LOCAL_MAGIC, .version = FS_LOCAL_VERSION, .type = (uint16_t)type,
                        .len = (uint32_t)len};
    struct iovec iov[2] = {{&h, sizeof h}, {(void *)payload, len}};
    union {
        char buf[CMSG_SPACE(sizeof(int) * FS_LOCAL_MAX_FDS)];
        struct cmsghdr align;
    } ctl;
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = len ? 2 : 1};
    if (nfds > 0) {
        if (nfds > FS_LOCAL_MAX_FDS) {
            errno = EINVAL;
            return -1;
        }
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

int fs_local_recv(int sock, int *type, void *buf, size_t cap, size_t *len, int *fds, int *nfds, int max_fds, int flags)
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
    if (n <= 0) return (int)n;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        int count = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int)), *in = (int *)CMSG_DATA(c);
        for (int i = 0; i < count; i++) {
            if (fds && nfds && *nfds < max_fds) fds[(*nfds)++] = in[i];
            else close(in[i]); /* never leak descriptors we did not ask for */
        }
    }
    if ((size_t)n < sizeof h || h.magic != FS_LOCAL_MAGIC || h.version != FS_LOCAL_VERSION ||
        (msg.msg_flags & MSG_TRUNC) || h.len != (size_t)n - sizeof h) {
        for (int i = 0; nfds && i < *nfds; i++) close(fds[i]);
        if (nfds) *nfds = 0;
        errno = EPROTO;
        return -1;
    }
    *type = h.type;
    *len = h.len;
    return 1;
}
