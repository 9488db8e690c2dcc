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
 * clients share (fs_wire_channel_args), and a queue of its own: gRPC is
 * started for it (grpc_init) and stopped again by fs_unary_close, so the
 * pair can be opened and closed any number of times. 0, or -1 when target
 * is not valid (nothing left open). Opening does not connect. */
int fs_unary_open(const char *target, grpc_channel **channel, grpc_completion_queue **cq);
void fs_unary_close(grpc_channel *channel, grpc_completion_queue *cq);

#endif
