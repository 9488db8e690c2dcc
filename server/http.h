/* http.h — the operations endpoint: GET /metrics (Prometheus text format)
 * and GET /healthz, served by libmicrohttpd on its own thread. */
#ifndef FS_HTTP_H
#define FS_HTTP_H

#include "metrics.h"

typedef struct fs_http fs_http_t;

/* addr is HOST:PORT or [IPv6]:PORT (kernels/fs_addr.h: anything else is
 * FS_ERR_INVALID_ARGUMENT naming it); a host name is resolved, "localhost"
 * is 127.0.0.1; port 0 picks a free one, reported in *port. */
fs_status_t fs_http_start(const char *addr, fs_metrics_t *metrics, fs_http_t **out, int *port, fs_error_t *err);
void fs_http_stop(fs_http_t *h);

#endif
