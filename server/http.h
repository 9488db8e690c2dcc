/* http.h — the operations endpoint: GET /metrics (Prometheus text format)
 * and GET /healthz, served by libmicrohttpd on its own thread. What
 * /metrics says is the server's to render (a whole server's fs_metrics, a
 * shard's fs_shard_metrics). */
#ifndef FS_HTTP_H
#define FS_HTTP_H

#include "fs_types.h"

typedef struct fs_http fs_http_t;

/* The metrics text of one scrape (the caller free()s it), or NULL when out
 * of memory; called from the endpoint's thread. */
typedef char *(*fs_http_render_fn)(void *ctx);

/* Binds and listens on addr, HOST:PORT or [IPv6]:PORT (kernels/fs_addr.h:
 * anything else is FS_ERR_INVALID_ARGUMENT naming it; a host name is
 * resolved, "localhost" is 127.0.0.1; port 0 picks a free one, reported
 * in *port), without answering: connections wait in the backlog until
 * fs_http_serve. A port in use is FS_ERR_IO naming the address (listen.h). */
fs_status_t fs_http_listen(const char *addr, fs_http_t **out, int *port, fs_error_t *err);
/* Answers requests from now on, /metrics from render(ctx) (ctx must
 * outlive the endpoint). */
fs_status_t fs_http_serve(fs_http_t *h, fs_http_render_fn render, void *ctx, fs_error_t *err);
/* Stops answering and closes the socket (listening or serving); NULL is a no-op. */
void fs_http_stop(fs_http_t *h);

#endif
