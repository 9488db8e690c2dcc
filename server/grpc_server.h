/* grpc_server.h — the gRPC transport: serves featstore.v1.FeatStore
 * (featstore.proto) from an engine, for remote trainers and for any gRPC
 * client generated from the .proto.
 *
 *   Info, Sample, Stats   unary
 *   Gather, SampleGather  server streaming, ~1 MiB of feature rows a message
 *   Split                 (SampleGather's first message carries the sample;
 *                         Split streams a split's ids as int64 rows)
 *
 * Errors are gRPC status codes with a detail string naming the problem:
 * INVALID_ARGUMENT (bad ids, fanouts, undecodable request bytes), NOT_FOUND
 * (unknown table), RESOURCE_EXHAUSTED (over a limit), FAILED_PRECONDITION
 * (unknown api_version), DEADLINE_EXCEEDED, UNIMPLEMENTED (unknown method),
 * INTERNAL. Every call is recorded in the metrics (transport "grpc"), and
 * so are connected clients: peers (one per channel) with a call in flight or
 * one within the idle timeout (default 30 s).
 *
 * Ownership: the server borrows engine and metrics (metrics may be NULL);
 * both must outlive fs_grpc_server_stop. Thread-safety: start and stop from
 * one thread; the server's own workers serve calls concurrently. */
#ifndef FS_GRPC_SERVER_H
#define FS_GRPC_SERVER_H

#include "engine.h"
#include "metrics.h"

typedef struct fs_grpc_server fs_grpc_server_t;

/* Listens on listen_addr ("host:port"; port 0 picks a free one, reported in
 * *bound_port) and serves with `threads` workers (<= 0: 4), each serving one
 * call at a time with its own sampler and a helper thread that gathers the
 * next chunk of a stream while the worker sends the current one. A port
 * already in use fails with FS_ERR_IO. */
fs_status_t fs_grpc_server_start(const char *listen_addr, fs_engine_t *engine, fs_metrics_t *metrics, int threads,
                                 fs_grpc_server_t **out, int *bound_port, fs_error_t *err);

/* Graceful stop: refuses new calls, lets calls already being served finish
 * (cancelling them after a 5 s grace period), then releases everything.
 * NULL is a no-op. */
void fs_grpc_server_stop(fs_grpc_server_t *s);

/* How long a peer without calls still counts as a connected client. */
void fs_grpc_server_idle_timeout(fs_grpc_server_t *s, double seconds);

#endif
