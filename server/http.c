/* http.c — see http.h. The metrics text is rendered per request (it reads
 * lock-free counters), so a scrape never stalls the data path. */
#include "http.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

struct fs_http {
    struct MHD_Daemon *d;
    fs_metrics_t *metrics;
};

fs_status_t fs_parse_hostport(const char *addr, char *host, size_t host_len, int *port, fs_error_t *err)
{
    const char *colon = strrchr(addr, ':');
    char *end;
    long p = colon ? strtol(colon + 1, &end, 10) : -1;
    if (!colon || colon == addr || *end || p < 0 || p > 65535 || (size_t)(colon - addr) >= host_len)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "'%s' is not HOST:PORT", addr);
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = '\0';
    *port = (int)p;
    return FS_OK;
}

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

fs_status_t fs_http_start(const char *addr, fs_metrics_t *metrics, fs_http_t **out, int *port, fs_error_t *err)
{
    char host[256];
    int p;
    fs_status_t st = fs_parse_hostport(addr, host, sizeof host, &p, err);
    if (st != FS_OK) return st;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p)};
    if (strcmp(host, "localhost") == 0) strcpy(host, "127.0.0.1");
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "metrics address '%s': host must be an IPv4 address", addr);
    fs_http_t *h = calloc(1, sizeof *h);
    if (!h) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    h->metrics = metrics;
    /* epoll or poll, never select(): serve raises the descriptor limit past FD_SETSIZE */
    h->d = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD, (uint16_t)p, NULL, NULL, handle, h, MHD_OPTION_SOCK_ADDR,
                            (struct sockaddr *)&sa, MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
    if (!h->d) {
        free(h);
        return fs_error(err, FS_ERR_IO, "cannot serve metrics on %s (address in use?)", addr);
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    *port = info ? info->port : p;
    *out = h;
    return FS_OK;
}

void fs_http_stop(fs_http_t *h)
{
    if (!h) return;
    MHD_stop_daemon(h->d);
    free(h);
}
