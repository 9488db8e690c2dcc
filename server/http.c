/* http.c — see http.h. The metrics text is rendered per request (it reads
 * lock-free counters), so a scrape never stalls the data path. The socket
 * is ours (listen.c), bound before the dataset loads; libmicrohttpd serves
 * it from fs_http_serve on. */
#include "http.h"

#include <fcntl.h>
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs_addr.h"
#include "listen.h"

struct fs_http {
    struct MHD_Daemon *d; /* NULL until served */
    fs_http_render_fn render;
    void *ctx;
    int fd;               /* the listening socket, bound by fs_http_listen */
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
        char *text = h->render(h->ctx);
        if (!text) return reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain", "out of memory\n", 0);
        return reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text, 1);
    }
    return reply(conn, MHD_HTTP_NOT_FOUND, "text/plain", "not found: try /metrics or /healthz\n", 0);
}

fs_status_t fs_http_listen(const char *addr, fs_http_t **out, int *port, fs_error_t *err)
{
    fs_addr_t a;
    *out = NULL;
    fs_status_t st = fs_addr_listen("--metrics", addr, &a, err);
    if (st != FS_OK) return st;
    fs_http_t *h = calloc(1, sizeof *h);
    if (!h) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    if ((st = fs_listen_tcp("metrics", &a, &h->fd, port, err)) != FS_OK) {
        free(h);
        return st;
    }
    *out = h;
    return FS_OK;
}

fs_status_t fs_http_serve(fs_http_t *h, fs_http_render_fn render, void *ctx, fs_error_t *err)
{
    h->render = render, h->ctx = ctx;
    /* MHD closes the socket it is given when it stops: it gets a duplicate,
     * and the original stays ours to close in every case */
    int fd = fcntl(h->fd, F_DUPFD_CLOEXEC, 0);
    /* epoll or poll, never select(): serve raises the descriptor limit past FD_SETSIZE */
    if (fd >= 0)
        h->d = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD, 0, NULL, NULL, handle, h, MHD_OPTION_LISTEN_SOCKET, fd,
                                MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
    if (!h->d) {
        if (fd >= 0) close(fd);
        return fs_error(err, FS_ERR_IO, "cannot start serving metrics: libmicrohttpd failed to start");
    }
    return FS_OK;
}

void fs_http_stop(fs_http_t *h)
{
    if (!h) return;
    if (h->d) MHD_stop_daemon(h->d);
    close(h->fd);
    free(h);
}
