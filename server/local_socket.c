/* local_socket.c — a server's unix:// socket file and its allow-list
 * (local_socket.h). */
#include "local_socket.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "fs_local.h"

fs_status_t fs_local_socket_listen(fs_local_socket_t *ls, const char *path, fs_error_t *err)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    ls->fd = -1, ls->ino = 0, ls->dev = 0;
    if (!path) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "no socket path");
    if (strlen(path) >= sizeof a.sun_path)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "socket path '%s' is longer than %zu bytes", path,
                        sizeof a.sun_path - 1);
    strcpy(a.sun_path, path);
    snprintf(ls->path, sizeof ls->path, "%s", path);
    struct stat st;
    if (stat(path, &st) == 0) { /* replace a stale socket, refuse a live one or a non-socket */
        int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        int live = probe >= 0 && connect(probe, (struct sockaddr *)&a, sizeof a) == 0;
        if (probe >= 0) close(probe);
        if (live || !S_ISSOCK(st.st_mode))
            return fs_error(err, FS_ERR_EXISTS, "%s is %s", path, live ? "in use by a running server" : "not a socket");
        unlink(path);
    }
    ls->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    fs_status_t rc = FS_OK;
    if (ls->fd < 0 || bind(ls->fd, (struct sockaddr *)&a, sizeof a) != 0)
        rc = fs_error(err, FS_ERR_IO, "cannot listen on %s: %s", path, strerror(errno));
    if (rc == FS_OK && stat(path, &st) == 0) ls->ino = st.st_ino, ls->dev = st.st_dev; /* the file is ours to remove */
    /* connecting needs write permission: the server's user and primary
     * group, nobody else; set before listen(), so no one connects earlier */
    if (rc == FS_OK && chmod(path, 0660) != 0)
        rc = fs_error(err, FS_ERR_IO, "cannot make %s mode 0660: %s", path, strerror(errno));
    if (rc == FS_OK && listen(ls->fd, 128) != 0)
        rc = fs_error(err, FS_ERR_IO, "cannot listen on %s: %s", path, strerror(errno));
    if (rc != FS_OK) fs_local_socket_remove(ls);
    return rc;
}

void fs_local_socket_remove(fs_local_socket_t *ls)
{
    struct stat st;
    if (ls->fd < 0) return;
    close(ls->fd);
    ls->fd = -1;
    if (ls->ino && stat(ls->path, &st) == 0 && st.st_ino == ls->ino && st.st_dev == ls->dev) unlink(ls->path);
    ls->ino = 0;
}

fs_status_t fs_local_allow_init(fs_local_allow_t *a, uid_t admin_uid, const uid_t *uids, int num_uids,
                                const gid_t *gids, int num_gids, fs_error_t *err)
{
    memset(a, 0, sizeof *a);
    if (num_uids < 0 || num_gids < 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "local: %d uids and %d gids allowed: neither may be negative",
                        num_uids, num_gids);
    a->own_uid = geteuid(), a->admin_uid = admin_uid;
    a->uids = calloc((size_t)num_uids + 1, sizeof *a->uids);
    a->gids = calloc((size_t)num_gids + 1, sizeof *a->gids);
    if (!a->uids || !a->gids) {
        fs_local_allow_free(a);
        return fs_error(err, FS_ERR_NOMEM, "out of memory");
    }
    if (num_uids) memcpy(a->uids, uids, (size_t)num_uids * sizeof *a->uids);
    if (num_gids) memcpy(a->gids, gids, (size_t)num_gids * sizeof *a->gids);
    a->num_uids = num_uids, a->num_gids = num_gids;
    return FS_OK;
}

void fs_local_allow_free(fs_local_allow_t *a)
{
    free(a->uids), free(a->gids);
    a->uids = NULL, a->gids = NULL, a->num_uids = a->num_gids = 0;
}

static int allowed(const fs_local_allow_t *a, uid_t uid, gid_t gid)
{
    if (a->num_uids == 0 && a->num_gids == 0) return 1;
    if (uid == a->own_uid || uid == a->admin_uid) return 1;
    for (int i = 0; i < a->num_uids; i++)
        if (a->uids[i] == uid) return 1;
    for (int i = 0; i < a->num_gids; i++)
        if (a->gids[i] == gid) return 1;
    return 0;
}

static void refusal(const fs_local_allow_t *a, uid_t uid, gid_t gid, char *buf, size_t size)
{
    char allowed[300];
    size_t n = (size_t)snprintf(allowed, sizeof allowed, "uids %u", (unsigned)a->own_uid);
    if (a->admin_uid != a->own_uid && n < sizeof allowed)
        n += (size_t)snprintf(allowed + n, sizeof allowed - n, ",%u", (unsigned)a->admin_uid);
    for (int i = 0; i < a->num_uids && n < sizeof allowed; i++)
        n += (size_t)snprintf(allowed + n, sizeof allowed - n, ",%u", (unsigned)a->uids[i]);
    for (int i = 0; i < a->num_gids && n < sizeof allowed; i++)
        n += (size_t)snprintf(allowed + n, sizeof allowed - n, "%s%u", i ? "," : " and gids ", (unsigned)a->gids[i]);
    snprintf(buf, size, "uid %u (gid %u) may not connect to this server; it admits %s (serve --allow-uid, "
             "--allow-gid)", (unsigned)uid, (unsigned)gid, allowed);
}

fs_status_t fs_local_peer(int fd, const fs_local_allow_t *a, struct ucred *cr, char *why, size_t size)
{
    socklen_t len = sizeof *cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cr, &len) != 0) {
        snprintf(why, size, "the server cannot read this peer's credentials: %s", strerror(errno));
        return FS_ERR_INTERNAL;
    }
    if (allowed(a, cr->uid, cr->gid)) return FS_OK;
    refusal(a, cr->uid, cr->gid, why, size);
    return FS_ERR_PERMISSION;
}

void fs_local_refuse(int fd, fs_status_t st, const char *why)
{
    char sink[64];
    for (int i = 0; i < 4 && recv(fd, sink, sizeof sink, MSG_DONTWAIT | MSG_TRUNC) > 0; i++) {}
    fs_local_send_error(fd, st, why, MSG_DONTWAIT);
    close(fd);
}
