/* fs_unary.h — one gRPC request and its one answer, with a deadline: what
 * the cluster's clients (etcd's API, fs_etcd.h; a shard's ShardPicks,
 * fs_shard_client.h) send, on a channel and completion queue of their own.
 *
 * The call's deadline ends it (gRPC answers DEADLINE_EXCEEDED); the wait on
 * the queue has a backstop a few seconds later, after which the call is
 * cancelled. Errors: FS_ERR_UNAVAILABLE (nobody answers at the address),
 * FS_ERR_TIMEOUT (no answer within the deadline), or the status the peer
 * sent, each with a message "<who>: <call>: <detail>". Thread safety: one
 * call at a time per completion queue. */
#ifndef FS_UNARY_H
#define FS_UNARY_H

#include <grpc/grpc.h>
#include <pb.h>

#include "fs_types.h"

fs_status_t fs_unary(grpc_channel *channel, grpc_completion_queue *cq, const char *who, const char *method,
                     int timeout_ms, const pb_msgdesc_t *req_fields, const void *req, const pb_msgdesc_t *resp_fields,
                     void *resp, fs_error_t *err);

/* A plaintext channel to target ("host:port") with the settings featstore's
 * clients share (fs_wire_channel_args); NULL if target is not valid. */
grpc_channel *fs_unary_channel(const char *target);

/* Empties and destroys a completion queue the caller made for fs_unary. */
void fs_unary_queue_destroy(grpc_completion_queue *cq);

#endif
