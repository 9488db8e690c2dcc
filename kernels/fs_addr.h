/* fs_addr.h — the addresses featstore reads from people, parsed in one
 * place for the server's options and the client's URIs alike:
 *
 *   --listen, --metrics   HOST:PORT or [IPv6]:PORT; port 0..65535 (0: any free one)
 *   --socket              a PATH, or unix:///ABS/PATH
 *   client URIs           unix:///ABS/PATH, grpc://HOST:PORT, grpc://[IPv6]:PORT,
 *                         grpcs://HOST:PORT, grpcs://[IPv6]:PORT; port 1..65535;
 *                         etcd://HOST:PORT/CLUSTER (a sharded cluster's etcd), or
 *                         file:/ABS/PATH (a static cluster: its shard map in a file)
 *
 * HOST is a host name (RFC 1123 labels: letters, digits, '-', dots between),
 * an IPv4 dotted quad (each number 0..255) or, in brackets, an IPv6 address.
 * Anything else is refused with FS_ERR_INVALID_ARGUMENT and a message naming
 * the option (or "URI"), the text as given, the problem and the expected
 * form, e.g. "--listen '127.0.0.1:99999': port 99999 is outside 1..65535
 * (or 0 for any free port) (expected HOST:PORT or [IPv6]:PORT)".
 *
 * Pure functions over their arguments: thread-safe; nothing is resolved,
 * bound or connected here. */
#ifndef FS_ADDR_H
#define FS_ADDR_H

#include "fs_types.h"

#define FS_ADDR_HOST_MAX 253 /* a host name's longest text (RFC 1123) */
#define FS_ADDR_PATH_MAX 108 /* sizeof(struct sockaddr_un.sun_path), checked in fs_addr.c */
#define FS_ADDR_FILE_MAX 1024 /* a static cluster's map file, NUL included */

typedef enum { FS_ADDR_TCP = 1, FS_ADDR_UNIX = 2, FS_ADDR_CLUSTER = 3 } fs_addr_kind_t;

/* A sharded cluster's name (the etcd keys /featstore/NAME/...). */
#define FS_CLUSTER_NAME_MAX 63

/* FS_ERR_INVALID_ARGUMENT unless name is 1..FS_CLUSTER_NAME_MAX of [A-Za-z0-9_-]. */
fs_status_t fs_cluster_name_check(const char *name, fs_error_t *err);

typedef enum { FS_HOST_NAME = 1, FS_HOST_IPV4 = 2, FS_HOST_IPV6 = 3 } fs_host_kind_t;

typedef struct {
    fs_addr_kind_t kind;
    int tls;                                /* grpcs:// */
    /* FS_ADDR_TCP, and FS_ADDR_CLUSTER's etcd */
    fs_host_kind_t host_kind;
    char host[FS_ADDR_HOST_MAX + 1];        /* without brackets */
    int port;
    char target[FS_ADDR_HOST_MAX + 10];     /* "host:port" or "[v6]:port", as gRPC takes it */
    /* FS_ADDR_UNIX */
    char path[FS_ADDR_PATH_MAX];            /* the socket's path, NUL-terminated */
    /* FS_ADDR_CLUSTER: etcd's target above and the cluster's name, or a static map's file */
    char cluster[FS_CLUSTER_NAME_MAX + 1];
    char map_file[FS_ADDR_FILE_MAX];        /* "" for etcd:// */
} fs_addr_t;

/* A server's TCP address, given with option `what` ("--listen",
 * "--metrics"): HOST:PORT or [IPv6]:PORT, port 0 allowed. A scheme is
 * refused (unix sockets are given with --socket PATH). */
fs_status_t fs_addr_listen(const char *what, const char *text, fs_addr_t *out, fs_error_t *err);

/* A server's unix socket, given with option `what` ("--socket"): a path
 * (relative ones too) or unix:///ABS/PATH, shorter than sun_path. */
fs_status_t fs_addr_socket(const char *what, const char *text, fs_addr_t *out, fs_error_t *err);

/* A client's URI: unix:///ABS/PATH, grpc://HOST:PORT or grpcs://HOST:PORT
 * ([IPv6] hosts in brackets), port 1..65535, nothing after the port; or
 * etcd://HOST:PORT/CLUSTER (kind FS_ADDR_CLUSTER: target is etcd's), or
 * file:/ABS/PATH (FS_ADDR_CLUSTER with map_file: a static cluster). */
fs_status_t fs_addr_uri(const char *text, fs_addr_t *out, fs_error_t *err);

#endif
