/* grpc_server.h — the gRPC transport: serves featstore.v1.FeatStore
 * (featstore.proto) from an engine, for remote trainers and for any gRPC
 * client generated from the .proto.
 *
 *   Info, Sample, Stats   unary
 *   Gather, SampleGather  server streaming, ~1 MiB of feature rows a message
 *   Split                 (SampleGather's first message carries the sample;
 *                         Split streams a split's ids as int64 rows)
 *
 * Nothing administrative is served over gRPC: re-planning is unix:// only.
 *
 * Errors are gRPC status codes with a detail string naming the problem:
 * INVALID_ARGUMENT (bad ids, fanouts, undecodable request bytes), NOT_FOUND
 * (unknown table), RESOURCE_EXHAUSTED (over a limit, or the server already
 * serving max_calls calls), FAILED_PRECONDITION (unknown api_version),
 * DEADLINE_EXCEEDED, UNIMPLEMENTED (unknown method), UNAUTHENTICATED
 * (missing or wrong bearer token), INTERNAL. Every call is recorded in the
 * metrics (transport "grpc"), and so are connected clients: peers (one per
 * channel) with a call in flight or one within the idle timeout (default
 * 30 s); calls in flight, calls refused and calls ended by their deadline.
 *
 * Isolation: no thread ever waits for a client. A call whose response a
 * client does not read is parked (its send pending in gRPC) and costs the
 * other clients nothing; it ends when the client reads, goes away, or its
 * deadline passes (the server cancels it then and frees it).
 *
 * Ownership: the server borrows engine and metrics (metrics may be NULL);
 * both must outlive fs_grpc_server_stop. Thread-safety: start and stop from
 * one thread; the server's own workers serve calls concurrently. */
#ifndef FS_GRPC_SERVER_H
#define FS_GRPC_SERVER_H

#include "engine.h"
#include "metrics.h"
#include "shard_live.h"
#include "shard_metrics.h"

typedef struct fs_grpc_server fs_grpc_server_t;

#define FS_GRPC_DEFAULT_THREADS 4
#define FS_GRPC_DEFAULT_MAX_CALLS 64
#define FS_GRPC_DEFAULT_REQUEST_TIMEOUT_MS 60000

/* How the server listens, and whom it serves. Zero/NULL fields are the
 * defaults: plaintext, no token, FS_GRPC_DEFAULT_* threads and calls. */
typedef struct {
    const char *listen;        /* HOST:PORT or [IPv6]:PORT (kernels/fs_addr.h); port 0 picks a free one */
    int threads;               /* workers (each with its own sampler); <= 0: FS_GRPC_DEFAULT_THREADS */
    int max_calls;             /* calls served at once; more are refused RESOURCE_EXHAUSTED; <= 0: default */
    int request_timeout_ms;    /* the longest a call may run from its admission, whatever deadline its client
                                * sent (or none): then DEADLINE_EXCEEDED; <= 0: the default */
    const char *tls_cert;      /* PEM certificate chain and private key: TLS when given (both or none) */
    const char *tls_key;
    const char *tls_client_ca; /* mTLS: every client must present a certificate signed by this CA (PEM) */
    const char *token_file;    /* a file holding the bearer token every call must carry */
} fs_grpc_server_opts_t;

void fs_grpc_server_defaults(fs_grpc_server_opts_t *o);

/* Binds and listens as `o` says, without answering: connections wait in
 * the kernel's backlog until fs_grpc_server_serve (gRPC's C core binds when
 * a port is added, and accepts from grpc_server_start on). Files are read
 * and checked here: a missing, unreadable or malformed one fails naming
 * the file. A port already in use fails with FS_ERR_IO naming the address
 * and the reason (listen.h). `limits` are the engine's to come: they size
 * the largest request gRPC takes. gRPC's own log lines go through
 * featstore's log from here on (grpc_log.h). */
fs_status_t fs_grpc_server_listen(const fs_grpc_server_opts_t *o, const fs_limits_t *limits, fs_grpc_server_t **out,
                                  int *bound_port, fs_error_t *err);

/* Answers calls from `engine` from now on (its limits must be the ones
 * given to fs_grpc_server_listen). On failure the server still listens;
 * stop it. */
fs_status_t fs_grpc_server_serve(fs_grpc_server_t *s, fs_engine_t *engine, fs_metrics_t *metrics, fs_error_t *err);

/* A shard's map revision, as its membership holds it now (any thread):
 * Shard* requests routed by an older map are refused (NOT_FOUND, "stale
 * shard map") so that the caller fetches the map again. 0: none. */
void fs_grpc_server_set_map_revision(fs_grpc_server_t *s, int64_t revision);

/* Answers the Shard* methods from a shard's parts instead (a shard server:
 * the parts held now, server/shard_live.h), and Stats from its counters (server/shard_metrics.h,
 * may be NULL); both borrowed like an engine. */
fs_status_t fs_grpc_server_serve_shard(fs_grpc_server_t *s, fs_shard_live_t *shard, fs_shard_metrics_t *metrics,
                                       fs_error_t *err);
/* fs_grpc_server_listen with the engine's limits, then fs_grpc_server_serve. */
fs_status_t fs_grpc_server_start_opts(const fs_grpc_server_opts_t *o, fs_engine_t *engine, fs_metrics_t *metrics,
                                      fs_grpc_server_t **out, int *bound_port, fs_error_t *err);

/* fs_grpc_server_start_opts with listen_addr and threads, every other
 * option its default (plaintext, no token). */
fs_status_t fs_grpc_server_start(const char *listen_addr, fs_engine_t *engine, fs_metrics_t *metrics, int threads,
                                 fs_grpc_server_t **out, int *bound_port, fs_error_t *err);

/* Graceful stop: refuses new calls, lets calls already being served finish
 * (cancelling them after a 5 s grace period), then releases everything.
 * A server that only listens closes its port at once. NULL is a no-op. */
void fs_grpc_server_stop(fs_grpc_server_t *s);

/* How long a peer without calls still counts as a connected client. */
void fs_grpc_server_idle_timeout(fs_grpc_server_t *s, double seconds);

/* 1 when `listen`'s host is a loopback address (127.0.0.0/8, ::1,
 * localhost) or a unix: path: reachable from this machine only. Wildcards
 * (0.0.0.0, [::], an empty host) and every other name or address are not. */
int fs_grpc_listen_is_loopback(const char *listen);

#endif
