/* http.h — the operations endpoint: GET /metrics (Prometheus text format)
 * and GET /healthz, served by libmicrohttpd on its own thread. */
#ifndef FS_HTTP_H
#define FS_HTTP_H

#include "metrics.h"

typedef struct fs_http fs_http_t;

/* addr is "HOST:PORT" (IPv4); port 0 picks a free one, reported in *port. */
fs_status_t fs_http_start(const char *addr, fs_metrics_t *metrics, fs_http_t **out, int *port, fs_error_t *err);
void fs_http_stop(fs_http_t *h);

/* Splits "HOST:PORT"; FS_ERR_INVALID_ARGUMENT naming the problem. */
fs_status_t fs_parse_hostport(const char *addr, char *host, size_t host_len, int *port, fs_error_t *err);

#endif
