/* listen.h — TCP listening sockets for the server's HTTP endpoint, and the
 * reason a gRPC port could not be bound.
 *
 * serve binds every address before it loads the dataset (serve.c), so a
 * port already in use is an error at once, naming the address, and not
 * after minutes of loading; connections that arrive meanwhile wait in the
 * socket's backlog until the transport starts accepting. */
#ifndef FS_LISTEN_H
#define FS_LISTEN_H

#include "fs_addr.h"
#include "fs_types.h"

/* A socket bound to `a` (a parsed HOST:PORT: a dotted quad or [IPv6] as it
 * is, "localhost" as 127.0.0.1, another name as the resolver's first
 * answer) and listening: *fd, and the port bound in *port (port 0 picks a
 * free one). SO_REUSEADDR (a restart need not wait out TIME_WAIT; it never
 * lets two servers listen on one port); IPv6 sockets are IPv6 only. An
 * error names `what` ("metrics"), the address and the reason: "address
 * already in use". */
fs_status_t fs_listen_tcp(const char *what, const fs_addr_t *a, int *fd, int *port, fs_error_t *err);

/* Why `a` cannot be listened on, found by trying (gRPC's C core reports
 * only that it could not): FS_ERR_IO naming `what`, the address and the
 * reason, or FS_OK when a socket binds there now. */
fs_status_t fs_listen_probe(const char *what, const fs_addr_t *a, fs_error_t *err);

#endif
