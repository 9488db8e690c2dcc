/* serve.h — `featstore serve`: the long-running store. */
#ifndef FS_SERVE_H
#define FS_SERVE_H

#include <sys/types.h>

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
    const char *copy_medium;   /* "auto" (NULL), "memory" or "file": what holds the served copy */
    fs_copy_opts_t copy;       /* copy.medium is set from copy_medium by fs_serve_load_config */
    fs_limits_t limits;
    fs_place_opts_t place;     /* place.topology == NULL: no placement, everything in tier 0 */
    /* gRPC admission and security (grpc_server.h); every one needs `listen` */
    int grpc_max_calls;        /* calls served at once; 0 = FS_GRPC_DEFAULT_MAX_CALLS */
    int request_timeout_ms;    /* the server's deadline for every gRPC call; 0 = FS_GRPC_DEFAULT_REQUEST_TIMEOUT_MS */
    const char *tls_cert;      /* TLS: certificate chain and private key (PEM files) */
    const char *tls_key;
    const char *tls_client_ca; /* mTLS: client certificates required, verified against this CA */
    const char *token_file;    /* the bearer token every gRPC call must carry */
    int insecure;              /* plaintext gRPC on a non-loopback address: allowed, with a warning */
    /* unix:// guards and administration (local.h; docs/serving.md "Local security") */
    int handshake_timeout_ms;  /* default FS_LOCAL_DEFAULT_HANDSHAKE_MS; 0 = never */
    int max_conns_per_uid;     /* default FS_LOCAL_DEFAULT_MAX_CONNS_PER_UID; 0 = no cap */
    const uid_t *allow_uids;   /* with allow_gids: who may connect (empty: anyone who can open the socket) */
    int num_allow_uids;
    const gid_t *allow_gids;
    int num_allow_gids;
    long long admin_uid;       /* the uid that may REPLAN; -1 (the default) = the server's own */
    const char *plan_dir;      /* REPLAN's `save` writes only here; NULL = such saves are refused */
} fs_serve_opts_t;

void fs_serve_defaults(fs_serve_opts_t *o);

/* Loads o->config (if set) under the options already given on the command
 * line (which win), and sets o->copy.medium from o->copy_medium. */
fs_status_t fs_serve_load_config(fs_serve_opts_t *o, fs_error_t *err);

/* "auto" (or NULL), "memory" or "file" as an fs_copy_medium_t; else
 * FS_ERR_INVALID_ARGUMENT naming `what`. */
fs_status_t fs_serve_copy_medium(const char *text, const char *what, fs_copy_medium_t *out, fs_error_t *err);

/* Serves until SIGTERM or SIGINT, then shuts down gracefully. Returns the
 * process exit status (0 after a clean shutdown). */
int fs_serve(const fs_serve_opts_t *o);

#endif
