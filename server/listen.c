/* listen.c — see listen.h. */
#include "listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

/* The parsed address as a socket address. */
static fs_status_t resolve(const char *what, const fs_addr_t *a, struct sockaddr_storage *ss, fs_error_t *err)
{
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    memset(ss, 0, sizeof *ss);
    if (a->host_kind == FS_HOST_IPV6) {
        v6->sin6_family = AF_INET6, v6->sin6_port = htons((uint16_t)a->port);
        if (inet_pton(AF_INET6, a->host, &v6->sin6_addr) == 1) return FS_OK;
        return fs_error(err, FS_ERR_INTERNAL, "%s %s: the parsed IPv6 address did not read back", what, a->target);
    }
    v4->sin_family = AF_INET, v4->sin_port = htons((uint16_t)a->port);
    const char *host = strcasecmp(a->host, "localhost") == 0 ? "127.0.0.1" : a->host;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) return FS_OK;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0) return fs_error(err, FS_ERR_IO, "%s %s: cannot resolve '%s': %s", what, a->target, host, gai_strerror(rc));
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    if (ss->ss_family == AF_INET6) v6->sin6_port = htons((uint16_t)a->port);
    else v4->sin_port = htons((uint16_t)a->port);
    return FS_OK;
}

/* A socket bound to a; listening too when `backlog` > 0. */
static fs_status_t bind_to(const char *what, const fs_addr_t *a, int backlog, int *out, fs_error_t *err)
{
    struct sockaddr_storage ss;
    fs_status_t st = resolve(what, a, &ss, err);
    if (st != FS_OK) return st;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    socklen_t len = ss.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        (ss.ss_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) != 0) ||
        bind(fd, (struct sockaddr *)&ss, len) != 0 || (backlog > 0 && listen(fd, backlog) != 0)) {
        int e = errno;
        if (fd >= 0) close(fd);
        return fs_error(err, FS_ERR_IO, "cannot listen for %s on %s: %s%s", what, a->target, strerror(e),
                        e == EADDRINUSE  ? " (another process listens there: stop it, or give another port)"
                        : e == EACCES    ? " (ports below 1024 need CAP_NET_BIND_SERVICE)"
                        : e == EADDRNOTAVAIL ? " (no interface of this machine has that address)"
                                             : "");
    }
    *out = fd;
    return FS_OK;
}

fs_status_t fs_listen_tcp(const char *what, const fs_addr_t *a, int *fd, int *port, fs_error_t *err)
{
    fs_status_t st = bind_to(what, a, SOMAXCONN, fd, err);
    if (st != FS_OK) return st;
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(*fd, (struct sockaddr *)&ss, &len) != 0) {
        int e = errno;
        close(*fd);
        return fs_error(err, FS_ERR_IO, "%s on %s: getsockname: %s", what, a->target, strerror(e));
    }
    *port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port : ((struct sockaddr_in *)&ss)->sin_port);
    return FS_OK;
}

fs_status_t fs_listen_probe(const char *what, const fs_addr_t *a, fs_error_t *err)
{
    int fd;
    fs_status_t st = bind_to(what, a, 0, &fd, err);
    if (st == FS_OK) close(fd);
    return st;
}
