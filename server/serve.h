/* serve.h — `featstore serve`: the long-running store. */
#ifndef FS_SERVE_H
#define FS_SERVE_H

#include "fs_limits.h"
#include "place.h"

typedef struct {
    const char *dataset;
    const char *socket_path;   /* unix:// transport; NULL = off */
    const char *listen;        /* gRPC HOST:PORT; NULL = off */
    const char *metrics;       /* HTTP HOST:PORT; NULL = off */
    const char *config;        /* JSON file with defaults for the above, threads and limits */
    int threads;               /* gRPC workers; 0 = CPU count */
    int verify;                /* verify checksums at startup */
    int prefault;              /* read the whole dataset into memory at startup */
    fs_limits_t limits;
    fs_place_opts_t place;     /* place.topology == NULL: no placement, everything in tier 0 */
} fs_serve_opts_t;

void fs_serve_defaults(fs_serve_opts_t *o);

/* Loads o->config (if set) under the options already given on the command
 * line (which win). */
fs_status_t fs_serve_load_config(fs_serve_opts_t *o, fs_error_t *err);

/* Serves until SIGTERM or SIGINT, then shuts down gracefully. Returns the
 * process exit status (0 after a clean shutdown). */
int fs_serve(const fs_serve_opts_t *o);

#endif
