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
 * proto/fs_local.h describes the conversation and its versions. */
#ifndef FS_LOCAL_SERVER_H
#define FS_LOCAL_SERVER_H

#include "engine.h"
#include "metrics.h"
#include "replan.h"

typedef struct fs_local_server fs_local_server_t;

typedef struct {
    const char *socket_path;
    fs_replan_fn replan;      /* NULL: REPLAN requests are refused */
    void *replan_ctx;
    unsigned protocol_minor;  /* the minor version of the local protocol to speak (fs_local.h); the current
                                 one by default, lower only to stand in for an older server in tests */
} fs_local_server_opts_t;

void fs_local_server_defaults(fs_local_server_opts_t *o);

/* Listens on o->socket_path (a stale socket file is replaced; a live one is
 * FS_ERR_EXISTS) and starts the loop thread. Freezes the engine's store:
 * once a store is shared, its placement never changes; a re-plan makes a
 * new one. */
fs_status_t fs_local_server_start(const fs_local_server_opts_t *o, fs_engine_t *engine, fs_metrics_t *metrics,
                                  fs_local_server_t **out, fs_error_t *err);

/* Tells clients that placement `generation` is served now (they relayout
 * before their next call). */
void fs_local_server_notify(fs_local_server_t *s, uint64_t generation);

/* Stops accepting, waits for a running re-plan, disconnects every
 * client, removes the socket file. */
void fs_local_server_stop(fs_local_server_t *s);

/* Clients connected now (for tests and the startup log). */
int fs_local_server_clients(fs_local_server_t *s);

#endif
