/* fs_unary.h — one gRPC request and its one answer, with a deadline: what
 * the cluster's clients (etcd's API, fs_etcd.h; a shard's ShardPicks,
 * fs_shard_client.h) send, on a channel and completion queue of their own;
 * and one request with a stream of answers (fs_call_stream_t: etcd's Watch).
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

/* A stream: a call that sends one request and reads any number of answers
 * (etcd's Watch), on a channel and queue of its own, until its deadline
 * ends it (deadline_ms from the open). open returns once the peer has
 * answered the call's start (its headers), waiting answer_ms at most. next
 * waits for the next answer, wait_ms at most (0: until the deadline), and
 * decodes it into resp: FS_ERR_TIMEOUT when the wait or the deadline ended
 * the call, FS_ERR_UNAVAILABLE when it was cancelled or the peer went, or
 * the status the peer ended it with. A stream that failed once stays
 * failed. Thread safety: one thread opens, reads and closes;
 * fs_call_stream_cancel may be called from any thread meanwhile, and makes
 * a waiting next return at once. */
typedef struct fs_call_stream fs_call_stream_t;
fs_status_t fs_call_stream_open(const char *target, const char *who, const char *method, int deadline_ms,
                                int answer_ms, const pb_msgdesc_t *req_fields, const void *req,
                                fs_call_stream_t **out, fs_error_t *err);
fs_status_t fs_call_stream_next(fs_call_stream_t *s, int wait_ms, const pb_msgdesc_t *resp_fields, void *resp,
                                fs_error_t *err);
void fs_call_stream_cancel(fs_call_stream_t *s);
void fs_call_stream_close(fs_call_stream_t *s);

/* A plaintext channel to target ("host:port") with the settings featstore's
 * clients share (fs_wire_channel_args), and a queue of its own: gRPC is
 * started for it (grpc_init) and stopped again by fs_unary_close, so the
 * pair can be opened and closed any number of times. 0, or -1 when target
 * is not valid (nothing left open). Opening does not connect. */
int fs_unary_open(const char *target, grpc_channel **channel, grpc_completion_queue **cq);
void fs_unary_close(grpc_channel *channel, grpc_completion_queue *cq);

#endif
