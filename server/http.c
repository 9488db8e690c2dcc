/* http.c — see http.h. The metrics text is rendered per request (it reads
 * lock-free counters), so a scrape never stalls the data path. */
#include "http.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fs_addr.h"

struct fs_http {
    struct MHD_Daemon *d;
    fs_metrics_t *metrics;
};

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned code, const char *type, char *body, int owned)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body,
                                                             owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    enum MHD_Result ret = MHD_queue_response(conn, code, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                              const char *version, const char *upload, size_t *upload_size, void **state)
{
    (void)version, (void)upload, (void)upload_size, (void)state;
    fs_http_t *h = cls;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", "only GET\n", 0);
    if (strcmp(url, "/healthz") == 0) return reply(conn, MHD_HTTP_OK, "text/plain", "ok\n", 0);
    if (strcmp(url, "/metrics") == 0) {
        char *text = fs_metrics_render(h->metrics);
        if (!text) return reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain", "out of memory\n", 0);
        return reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text, 1);
    }
    return reply(conn, MHD_HTTP_NOT_FOUND, "text/plain", "not found: try /metrics or /healthz\n", 0);
}

/* The parsed address (kernels/fs_addr.h) as a socket address: a dotted
 * quad or [IPv6] as it is, "localhost" as 127.0.0.1 (as it always was),
 * another name as the resolver's first answer. */
static fs_status_t bind_address(const fs_addr_t *a, struct sockaddr_storage *ss, fs_error_t *err)
{
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    memset(ss, 0, sizeof *ss);
    if (a->host_kind == FS_HOST_IPV6) {
        v6->sin6_family = AF_INET6, v6->sin6_port = htons((uint16_t)a->port);
        if (inet_pton(AF_INET6, a->host, &v6->sin6_addr) == 1) return FS_OK;
        return fs_error(err, FS_ERR_INTERNAL, "--metrics %s: the parsed IPv6 address did not read back", a->target);
    }
    v4->sin_family = AF_INET, v4->sin_port = htons((uint16_t)a->port);
    const char *host = strcasecmp(a->host, "localhost") == 0 ? "127.0.0.1" : a->host;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) return FS_OK;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0) return fs_error(err, FS_ERR_IO, "--metrics %s: cannot resolve '%s': %s", a->target, host,
                                 gai_strerror(rc));
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    if (ss->ss_family == AF_INET6) v6->sin6_port = htons((uint16_t)a->port);
    else v4->sin_port = htons((uint16_t)a->port);
    return FS_OK;
}

fs_status_t fs_http_start(const char *addr, fs_metrics_t *metrics, fs_http_t **out, int *port, fs_error_t *err)
{
    fs_addr_t a;
    struct sockaddr_storage ss;
    fs_status_t st = fs_addr_listen("--metrics", addr, &a, err);
    if (st == FS_OK) st = bind_address(&a, &ss, err);
    if (st != FS_OK) return st;
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
    fs_http_t *h = calloc(1, sizeof *h);
    if (!h) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    h->metrics = metrics;
    /* epoll or poll, never select(): serve raises the descriptor limit past FD_SETSIZE */
    h->d = MHD_start_daemon(flags, (uint16_t)a.port, NULL, NULL, handle, h, MHD_OPTION_SOCK_ADDR,
                            (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
    if (!h->d) {
        free(h);
        return fs_error(err, FS_ERR_IO, "cannot serve metrics on %s (address in use?)", addr);
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    *port = info ? info->port : a.port;
    *out = h;
    return FS_OK;
}

void fs_http_stop(fs_http_t *h)
{
    if (!h) return;
    MHD_stop_daemon(h->d);
    free(h);
}
