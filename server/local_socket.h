/* local_socket.h — what every unix:// socket of a server shares: its file
 * (a stale socket replaced, a live one or another kind of file refused,
 * mode 0660 before listen(), and only the file it made removed at the
 * end) and who may connect (SO_PEERCRED against an optional allow-list,
 * docs/serving.md "Local security"). A whole server's socket (local.c) and
 * a shard server's (local_shard.c) both use it, so the rules are one.
 *
 * Thread-safety: a socket and an allow-list are their owner's; the
 * functions keep no state of their own. */
#ifndef FS_LOCAL_SOCKET_H
#define FS_LOCAL_SOCKET_H

#include <sys/socket.h>
#include <sys/types.h>

#include "fs_types.h"

typedef struct {
    char path[108];
    int fd;          /* the listening socket (SOCK_SEQPACKET, non-blocking), -1 when none */
    ino_t ino;       /* the socket file this server made (0: none yet), and its device */
    dev_t dev;
} fs_local_socket_t;

/* Binds and listens on path; ls->fd is -1 on an error (FS_ERR_EXISTS for a
 * path a live server or another file holds, FS_ERR_INVALID_ARGUMENT for
 * one too long, FS_ERR_IO). */
fs_status_t fs_local_socket_listen(fs_local_socket_t *ls, const char *path, fs_error_t *err);
/* Closes it and removes its file, if the file is still the one it made:
 * never a file another server put there. */
void fs_local_socket_remove(fs_local_socket_t *ls);

/* Who may connect: when either list has entries, only peers with one of
 * these uids or (primary) gids, besides the server's own uid and the admin
 * uid; with both lists empty, anyone the socket's mode lets in. */
typedef struct {
    uid_t own_uid, admin_uid;
    uid_t *uids;
    gid_t *gids;
    int num_uids, num_gids;
} fs_local_allow_t;

/* Copies the lists (FS_ERR_INVALID_ARGUMENT for a negative count). */
fs_status_t fs_local_allow_init(fs_local_allow_t *a, uid_t admin_uid, const uid_t *uids, int num_uids,
                                const gid_t *gids, int num_gids, fs_error_t *err);
void fs_local_allow_free(fs_local_allow_t *a);

/* A new connection's peer: its credentials (SO_PEERCRED) into *cr and
 * checked against the allow-list. FS_OK, or the status to refuse it with
 * and the reason in why: FS_ERR_INTERNAL (unreadable) or FS_ERR_PERMISSION
 * ("uid 1001 (gid 1001) may not connect to this server; it admits uids
 * 0,1000 and gids 27 (serve --allow-uid, --allow-gid)"). */
fs_status_t fs_local_peer(int fd, const fs_local_allow_t *a, struct ucred *cr, char *why, size_t size);

/* Tells a peer why it is not served (an ERROR frame), and hangs up. Its
 * first frames (a HELLO sent right after connect) are read and dropped
 * first: closing on unread data would reset the connection, and the peer
 * would see ECONNRESET instead of the reason. */
void fs_local_refuse(int fd, fs_status_t st, const char *why);

#endif
