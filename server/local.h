/* local.h — the local transport's server side (unix:// clients).
 *
 * One thread runs an epoll loop over the listening socket and every client.
 * Clients receive read-only descriptors of the dataset's files, their
 * reader's placement (sealed memfds) and their own ring of memfd result
 * slots, then run the kernels in their own process;
 * the loop only answers Info/Stats and records clients' reports, so it never
 * waits on a client: a slow, stuck or dead client costs the others nothing.
 * A client that disconnects (or is killed) has its slots and descriptors
 * released at once. See proto/fs_local.h for the messages. */
#ifndef FS_LOCAL_SERVER_H
#define FS_LOCAL_SERVER_H

#include "engine.h"
#include "metrics.h"

typedef struct fs_local_server fs_local_server_t;

/* Listens on socket_path (a stale socket file is replaced; a live one is
 * FS_ERR_EXISTS) and starts the loop thread. Freezes the engine's store:
 * once the store is shared, its placement can no longer change. */
fs_status_t fs_local_server_start(const char *socket_path, fs_engine_t *engine, fs_metrics_t *metrics,
                                  fs_local_server_t **out, fs_error_t *err);

/* Stops accepting, disconnects every client, removes the socket file. */
void fs_local_server_stop(fs_local_server_t *s);

/* Clients connected now (for tests and the startup log). */
int fs_local_server_clients(fs_local_server_t *s);

#endif
