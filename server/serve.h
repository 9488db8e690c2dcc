/* serve.h — `featstore serve`: the long-running store. */
#ifndef FS_SERVE_H
#define FS_SERVE_H

#include <signal.h>
#include <sys/types.h>

#include "fs_limits.h"
#include "grpc_server.h"
#include "place.h"

/* What `featstore serve` uses when neither --socket nor --listen is given
 * (the socket; %d is the uid), and without --metrics. */
#define FS_SERVE_DEFAULT_SOCKET "/tmp/featstore-%d.sock"
#define FS_SERVE_DEFAULT_METRICS "127.0.0.1:9464"

/* The options, checked by the caller (cli/cmd_serve.c): fs_serve trusts them. */
typedef struct {
    const char *dataset;
    const char *socket_path;   /* unix:// transport; NULL = off */
    const char *listen;        /* gRPC HOST:PORT; NULL = off */
    const char *metrics;       /* HTTP HOST:PORT; NULL = off */
    int threads;               /* gRPC workers; 0 = CPU count */
    int verify;                /* verify checksums at startup */
    int prefault;              /* read the whole dataset into memory at startup */
    fs_copy_opts_t copy;       /* what holds the served copy (fs_serve_copy_medium) and where */
    fs_limits_t limits;
    fs_place_opts_t place;     /* place.topology == NULL: no placement, everything in tier 0 */
    /* gRPC admission and security (grpc_server.h); every one needs `listen` */
    int grpc_max_calls;        /* calls served at once; 0 = FS_GRPC_DEFAULT_MAX_CALLS */
    int request_timeout_ms;    /* the server's deadline for every gRPC call; 0 = FS_GRPC_DEFAULT_REQUEST_TIMEOUT_MS */
    const char *tls_cert;      /* TLS: certificate chain and private key (PEM files) */
    const char *tls_key;
    const char *tls_client_ca; /* mTLS: client certificates required, verified against this CA */
    const char *token_file;    /* the bearer token every gRPC call must carry */
    /* unix:// guards and administration (local.h; docs/serving.md "Local security") */
    int handshake_timeout_ms;  /* default FS_LOCAL_DEFAULT_HANDSHAKE_MS; 0 = never */
    int max_conns_per_uid;     /* default FS_LOCAL_DEFAULT_MAX_CONNS_PER_UID; 0 = no cap */
    const uid_t *allow_uids;   /* with allow_gids: who may connect (empty: anyone who can open the socket) */
    int num_allow_uids;
    const gid_t *allow_gids;
    int num_allow_gids;
    long long admin_uid;       /* the uid that may REPLAN; -1 (the default) = the server's own */
    const char *plan_dir;      /* REPLAN's `save` writes only here; NULL = such saves are refused */
    /* a shard server (serve_shard.c): dataset is a partition root (featstore partition) */
    const char *parts;         /* the parts it holds: "0,3,6", "0-15", "auto" (dealt round-robin:
                                  every p with p % shards == shard_id, fs_shard_dealt_parts) or
                                  "assigned" (the cluster's assignment's; none until it gives
                                  some); NULL = a whole dataset. In a cluster with an assignment
                                  the assignment's parts, whatever this says */
    const char *cluster;       /* etcd://HOST:PORT/NAME: join that cluster's membership; NULL = none */
    int shard_id;              /* its shard number in the cluster (0..FS_CLUSTER_SHARDS_MAX-1) */
    int shards;                /* the cluster's shard count, for parts "auto"; 0 = not given */
    int replicas;              /* R: each part's holders in the cluster (0 or 1: no copies) */
    const char *copies;        /* the parts it holds copies of, as `parts`; NULL = none, or with parts
                                  "auto" and R > 1 those of the R - 1 shards before it
                                  (fs_shard_dealt_copies) */
} fs_serve_opts_t;

void fs_serve_defaults(fs_serve_opts_t *o);

/* "auto" (or NULL), "memory" or "file" as an fs_copy_medium_t; else
 * FS_ERR_INVALID_ARGUMENT naming `what`. */
fs_status_t fs_serve_copy_medium(const char *text, const char *what, fs_copy_medium_t *out, fs_error_t *err);

/* Serves until SIGTERM or SIGINT, then shuts down gracefully. Returns the
 * process exit status (0 after a clean shutdown). */
int fs_serve(const fs_serve_opts_t *o);

/* A shard server: o->parts of the partition root o->dataset, answering
 * ShardPicks over gRPC only (o->listen), registered in o->cluster's
 * membership when given. Until SIGTERM or SIGINT, like fs_serve. */
int fs_serve_shard(const fs_serve_opts_t *o);

/* What fs_serve and fs_serve_shard share: the gRPC server's options from
 * theirs, and the signals taken synchronously (blocked in every thread). */
void fs_serve_grpc_opts(const fs_serve_opts_t *o, fs_grpc_server_opts_t *go);
void fs_serve_block_signals(sigset_t *sigs);

#endif
