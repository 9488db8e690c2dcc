/* local.h — the local transport's server side (unix:// clients).
 *
 * One thread runs an epoll loop over the listening socket and every client.
 * Clients receive read-only descriptors of the dataset's files, their
 * reader's placement (sealed memfds) and their own ring of memfd result
 * slots, then run the kernels in their own process; the loop only answers
 * Info/Stats/Split and records clients' reports, so it never waits on a
 * client: a slow, stuck or dead client costs the others nothing. A client
 * that disconnects (or is killed) has its slots and descriptors released
 * at once. A REPLAN request runs on a thread of its own (one at a time)
 * through the replan callback, so planning never stalls the loop.
 * proto/fs_local.h describes the conversation and its versions.
 *
 * Guards (docs/serving.md, "Limits" and "Local security"): the socket is mode 0660
 * (the server's user and primary group); every peer's credentials are read
 * at accept (SO_PEERCRED) and checked against an optional allow-list and a
 * cap on connections per uid, and refused peers get an ERROR frame saying
 * why; a connection must finish its handshake within a timeout (kept in a
 * FIFO, since every deadline is accept time + the same timeout, and waited
 * for by epoll_wait's timeout: no thread, no timer per connection); only
 * the admin uid may REPLAN. Out of descriptors (EMFILE/ENFILE), the loop
 * sheds the pending connection through a reserve descriptor, or pauses
 * the listening socket for a moment, instead of spinning on accept(). */
#ifndef FS_LOCAL_SERVER_H
#define FS_LOCAL_SERVER_H

#include <sys/types.h>

#include "engine.h"
#include "metrics.h"
#include "replan.h"

#define FS_LOCAL_DEFAULT_HANDSHAKE_MS 5000
#define FS_LOCAL_DEFAULT_MAX_CONNS_PER_UID 256

typedef struct fs_local_server fs_local_server_t;

typedef struct {
    const char *socket_path;
    fs_replan_fn replan;      /* NULL: REPLAN requests are refused */
    void *replan_ctx;
    unsigned protocol_minor;  /* the minor version of the local protocol to speak (fs_local.h); the current
                                 one by default, lower only to stand in for an older server in tests */
    /* Connection guards; fs_local_server_defaults sets the defaults. */
    int handshake_timeout_ms; /* a connection must be answered a HELLO this soon after accept; 0 = never times out */
    int max_conns_per_uid;    /* connections (handshaking or not) one uid may hold at once; 0 = no cap */
    const uid_t *allow_uids;  /* when either list has entries, only peers with one of these uids or (primary) */
    int num_allow_uids;       /* gids may connect, besides the server's own uid and the admin uid; the lists */
    const gid_t *allow_gids;  /* are copied at start */
    int num_allow_gids;
    uid_t admin_uid;          /* the only uid whose REPLAN requests are served; default: the server's own */
} fs_local_server_opts_t;

void fs_local_server_defaults(fs_local_server_opts_t *o);

/* Binds and listens on o->socket_path (a stale socket file is replaced; a
 * live one is FS_ERR_EXISTS "PATH is in use by a running server", and left
 * alone), without answering: connections wait in the socket's backlog
 * until fs_local_server_serve. serve binds before it loads the dataset. */
fs_status_t fs_local_server_listen(const fs_local_server_opts_t *o, fs_local_server_t **out, fs_error_t *err);

/* Starts the loop thread on a listening server: from now on connections
 * are accepted and answered from `engine`. Freezes the engine's store: once
 * a store is shared, its placement never changes; a re-plan makes a new
 * one. On failure the server still listens; stop it. */
fs_status_t fs_local_server_serve(fs_local_server_t *s, fs_engine_t *engine, fs_metrics_t *metrics, fs_error_t *err);

/* fs_local_server_listen, then fs_local_server_serve. */
fs_status_t fs_local_server_start(const fs_local_server_opts_t *o, fs_engine_t *engine, fs_metrics_t *metrics,
                                  fs_local_server_t **out, fs_error_t *err);

/* Tells clients that placement `generation` is served now (they relayout
 * before their next call). */
void fs_local_server_notify(fs_local_server_t *s, uint64_t generation);

/* Stops accepting, waits for a running re-plan, disconnects every
 * client, removes the socket file if it is still the one this server made
 * (listening or serving). NULL is a no-op. */
void fs_local_server_stop(fs_local_server_t *s);

/* Clients connected now (for tests and the startup log). */
int fs_local_server_clients(fs_local_server_t *s);

#endif
