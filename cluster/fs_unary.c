/* fs_unary.c — one gRPC request and its answer (fs_unary.h says why and
 * what): a single batch (send the request, half-close, receive the answer
 * and the status) on the caller's queue, under the call's deadline. */
#include "fs_unary.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

#include "fs_wire.h"

#define BACKSTOP_MS 5000 /* past the deadline, the queue's wait gives up and cancels */

static void op_set(grpc_op *op, grpc_op_type type)
{
    memset(op, 0, sizeof *op);
    op->op = type;
}

/* The method's last part, for messages: "/etcdserverpb.KV/Range" -> "Range". */
static const char *call_name(const char *method)
{
    const char *slash = strrchr(method, '/');
    return slash ? slash + 1 : method;
}

/* The gRPC outcome as a status, with the peer's detail in the message. */
static fs_status_t call_status(const char *who, const char *method, grpc_status_code code, grpc_slice details,
                               fs_error_t *err)
{
    if (code == GRPC_STATUS_OK) return FS_OK;
    char *text = grpc_slice_to_c_string(details);
    fs_status_t st = code == GRPC_STATUS_UNAVAILABLE         ? FS_ERR_UNAVAILABLE
                     : code == GRPC_STATUS_DEADLINE_EXCEEDED ? FS_ERR_TIMEOUT
                                                             : fs_wire_fs_status(code);
    fs_error(err, st, "%s: %s: %s%s", who, call_name(method), st == FS_ERR_TIMEOUT ? "no answer within the deadline: " : "",
             text && text[0] ? text : fs_strerror(st));
    gpr_free(text);
    return st;
}

fs_status_t fs_unary(grpc_channel *channel, grpc_completion_queue *cq, const char *who, const char *method,
                     int timeout_ms, const pb_msgdesc_t *req_fields, const void *req, const pb_msgdesc_t *resp_fields,
                     void *resp, fs_error_t *err)
{
    grpc_byte_buffer *send = fs_wire_encode(req_fields, req, err), *recv = NULL;
    if (!send) return err ? err->code : FS_ERR_NOMEM;
    gpr_timespec deadline = gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_millis(timeout_ms, GPR_TIMESPAN));
    grpc_call *c = grpc_channel_create_call(channel, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
                                            grpc_slice_from_static_string(method), NULL, deadline, NULL);
    if (!c) {
        grpc_byte_buffer_destroy(send);
        return fs_error(err, FS_ERR_INTERNAL, "%s: %s: cannot create a gRPC call", who, call_name(method));
    }
    grpc_metadata_array initial, trailing;
    grpc_metadata_array_init(&initial);
    grpc_metadata_array_init(&trailing);
    grpc_status_code code = GRPC_STATUS_UNKNOWN;
    grpc_slice details = grpc_empty_slice();
    grpc_op ops[6];
    op_set(&ops[0], GRPC_OP_SEND_INITIAL_METADATA);
    op_set(&ops[1], GRPC_OP_SEND_MESSAGE);
    ops[1].data.send_message.send_message = send;
    op_set(&ops[2], GRPC_OP_SEND_CLOSE_FROM_CLIENT);
    op_set(&ops[3], GRPC_OP_RECV_INITIAL_METADATA);
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &initial;
    op_set(&ops[4], GRPC_OP_RECV_MESSAGE);
    ops[4].data.recv_message.recv_message = &recv;
    op_set(&ops[5], GRPC_OP_RECV_STATUS_ON_CLIENT);
    ops[5].data.recv_status_on_client.trailing_metadata = &trailing;
    ops[5].data.recv_status_on_client.status = &code;
    ops[5].data.recv_status_on_client.status_details = &details;
    fs_status_t st = FS_OK;
    gpr_timespec backstop = gpr_time_add(deadline, gpr_time_from_millis(BACKSTOP_MS, GPR_TIMESPAN));
    if (grpc_call_start_batch(c, ops, 6, c, NULL) != GRPC_CALL_OK) {
        st = fs_error(err, FS_ERR_INTERNAL, "%s: %s: the gRPC batch failed", who, call_name(method));
    } else {
        grpc_event ev = grpc_completion_queue_next(cq, backstop, NULL);
        if (ev.type != GRPC_OP_COMPLETE) {
            grpc_call_cancel(c, NULL);
            grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
            st = fs_error(err, FS_ERR_TIMEOUT, "%s: %s: no answer within %d ms", who, call_name(method), timeout_ms);
        } else {
            st = call_status(who, method, code, details, err);
        }
    }
    if (st == FS_OK && !recv) st = fs_error(err, FS_ERR_FORMAT, "%s: %s: no answer message", who, call_name(method));
    if (st == FS_OK) st = fs_wire_decode(recv, resp_fields, resp, call_name(method), err);
    if (recv) grpc_byte_buffer_destroy(recv);
    grpc_byte_buffer_destroy(send);
    grpc_metadata_array_destroy(&initial);
    grpc_metadata_array_destroy(&trailing);
    grpc_slice_unref(details);
    grpc_call_unref(c);
    return st;
}

/* ---- a stream of answers ------------------------------------------------------------ */

enum { TAG_START = 1, TAG_STATUS, TAG_RECV };

struct fs_call_stream {
    grpc_channel *channel;
    grpc_completion_queue *cq;
    grpc_call *call;
    char who[320];
    const char *method;
    gpr_timespec deadline, backstop; /* the call's, and BACKSTOP_MS after it */
    grpc_metadata_array initial, trailing;
    grpc_status_code code;
    grpc_slice details;
    grpc_byte_buffer *recv;
    int pending;                   /* batches started and not yet completed */
    int ended;                     /* the status batch completed: code and details hold */
    fs_status_t failed;            /* a wait that gave up (the call is cancelled): what it said */
};

/* Waits until batch `tag` completes, noting the status batch's on the
 * way: 1 when it succeeded, 0 when it failed (the call ended), -1 past
 * `until` (the call is then cancelled). */
static int stream_wait(fs_call_stream_t *s, int tag, gpr_timespec until)
{
    for (;;) {
        grpc_event ev = grpc_completion_queue_next(s->cq, until, NULL);
        if (ev.type != GRPC_OP_COMPLETE) {
            grpc_call_cancel(s->call, NULL);
            return -1;
        }
        s->pending--;
        if ((intptr_t)ev.tag == TAG_STATUS) s->ended = 1;
        if ((intptr_t)ev.tag == tag) return ev.success != 0;
    }
}

static int stream_start(fs_call_stream_t *s, grpc_op *ops, size_t n, int tag)
{
    if (grpc_call_start_batch(s->call, ops, n, (void *)(intptr_t)tag, NULL) != GRPC_CALL_OK) return -1;
    s->pending++;
    return 0;
}

/* Why the call ended, once its status batch completed. */
static fs_status_t stream_status(fs_call_stream_t *s, fs_error_t *err)
{
    if (!s->ended && stream_wait(s, TAG_STATUS, s->backstop) < 0)
        return fs_error(err, FS_ERR_TIMEOUT, "%s: %s: the stream did not end by its deadline", s->who,
                        call_name(s->method));
    if (s->code == GRPC_STATUS_CANCELLED)
        return fs_error(err, FS_ERR_UNAVAILABLE, "%s: %s: the stream was cancelled", s->who, call_name(s->method));
    if (gpr_time_cmp(gpr_now(GPR_CLOCK_REALTIME), s->deadline) >= 0) /* either side may say so, in its words */
        return fs_error(err, FS_ERR_TIMEOUT, "%s: %s: the stream reached its deadline", s->who, call_name(s->method));
    fs_status_t st = call_status(s->who, s->method, s->code, s->details, err);
    return st != FS_OK ? st : fs_error(err, FS_ERR_UNAVAILABLE, "%s: %s: the peer ended the stream", s->who,
                                       call_name(s->method));
}

/* The time by which a wait of wait_ms (0: until the call's end) gives up. */
static gpr_timespec wait_until(const fs_call_stream_t *s, int wait_ms)
{
    if (wait_ms <= 0) return s->backstop;
    gpr_timespec t = gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_millis(wait_ms, GPR_TIMESPAN));
    return gpr_time_cmp(t, s->backstop) < 0 ? t : s->backstop;
}

fs_status_t fs_call_stream_open(const char *target, const char *who, const char *method, int deadline_ms,
                                int answer_ms, const pb_msgdesc_t *req_fields, const void *req,
                                fs_call_stream_t **out, fs_error_t *err)
{
    *out = NULL;
    fs_call_stream_t *s = calloc(1, sizeof *s);
    if (!s) return fs_error(err, FS_ERR_NOMEM, "%s: out of memory", who);
    snprintf(s->who, sizeof s->who, "%s", who);
    s->method = method;
    grpc_metadata_array_init(&s->initial);
    grpc_metadata_array_init(&s->trailing);
    s->details = grpc_empty_slice();
    if (fs_unary_open(target, &s->channel, &s->cq)) {
        fs_call_stream_close(s);
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s: not a valid address", who);
    }
    s->deadline = gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_millis(deadline_ms, GPR_TIMESPAN));
    s->backstop = gpr_time_add(s->deadline, gpr_time_from_millis(BACKSTOP_MS, GPR_TIMESPAN));
    s->call = grpc_channel_create_call(s->channel, NULL, GRPC_PROPAGATE_DEFAULTS, s->cq,
                                       grpc_slice_from_static_string(method), NULL, s->deadline, NULL);
    grpc_byte_buffer *send = s->call ? fs_wire_encode(req_fields, req, err) : NULL;
    fs_status_t st = s->call ? (send ? FS_OK : err ? err->code : FS_ERR_NOMEM)
                             : fs_error(err, FS_ERR_INTERNAL, "%s: %s: cannot create a gRPC call", who, call_name(method));
    grpc_op ops[3];
    op_set(&ops[0], GRPC_OP_SEND_INITIAL_METADATA);
    op_set(&ops[1], GRPC_OP_SEND_MESSAGE);
    ops[1].data.send_message.send_message = send;
    op_set(&ops[2], GRPC_OP_RECV_INITIAL_METADATA);
    ops[2].data.recv_initial_metadata.recv_initial_metadata = &s->initial;
    grpc_op status;
    op_set(&status, GRPC_OP_RECV_STATUS_ON_CLIENT);
    status.data.recv_status_on_client.trailing_metadata = &s->trailing;
    status.data.recv_status_on_client.status = &s->code;
    status.data.recv_status_on_client.status_details = &s->details;
    if (st == FS_OK && (stream_start(s, ops, 3, TAG_START) || stream_start(s, &status, 1, TAG_STATUS)))
        st = fs_error(err, FS_ERR_INTERNAL, "%s: %s: the gRPC batch failed", who, call_name(method));
    int started = st == FS_OK ? stream_wait(s, TAG_START, wait_until(s, answer_ms)) : 1;
    if (started < 0)
        st = fs_error(err, FS_ERR_TIMEOUT, "%s: %s: no answer within %d ms", who, call_name(method), answer_ms);
    else if (st == FS_OK && (started == 0 || s->ended))
        st = stream_status(s, err); /* refused at once */
    if (send) grpc_byte_buffer_destroy(send);
    if (st != FS_OK) {
        fs_call_stream_close(s);
        return st;
    }
    *out = s;
    return FS_OK;
}

fs_status_t fs_call_stream_next(fs_call_stream_t *s, int wait_ms, const pb_msgdesc_t *resp_fields, void *resp,
                                fs_error_t *err)
{
    if (s->failed) /* its receive may still be pending: no other can start */
        return fs_error(err, s->failed, "%s: %s: the stream failed before", s->who, call_name(s->method));
    if (s->ended) return stream_status(s, err);
    grpc_op op;
    op_set(&op, GRPC_OP_RECV_MESSAGE);
    op.data.recv_message.recv_message = &s->recv;
    if (stream_start(s, &op, 1, TAG_RECV))
        return fs_error(err, FS_ERR_INTERNAL, "%s: %s: the gRPC batch failed", s->who, call_name(s->method));
    if (stream_wait(s, TAG_RECV, wait_until(s, wait_ms)) < 0)
        return s->failed = wait_ms > 0 ? fs_error(err, FS_ERR_TIMEOUT, "%s: %s: no answer within %d ms", s->who,
                                                  call_name(s->method), wait_ms)
                                       : fs_error(err, FS_ERR_TIMEOUT, "%s: %s: the stream did not end by its "
                                                  "deadline", s->who, call_name(s->method));
    if (!s->recv) return stream_status(s, err); /* no message: the call ended */
    fs_status_t st = fs_wire_decode(s->recv, resp_fields, resp, call_name(s->method), err);
    grpc_byte_buffer_destroy(s->recv);
    s->recv = NULL;
    return st;
}

void fs_call_stream_cancel(fs_call_stream_t *s)
{
    if (s && s->call) grpc_call_cancel(s->call, NULL);
}

void fs_call_stream_close(fs_call_stream_t *s)
{
    if (!s) return;
    if (s->call) {
        grpc_call_cancel(s->call, NULL);
        while (s->pending > 0) { /* cancelled: every batch completes now */
            grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
            s->pending--;
        }
        grpc_call_unref(s->call);
    }
    if (s->recv) grpc_byte_buffer_destroy(s->recv);
    grpc_metadata_array_destroy(&s->initial);
    grpc_metadata_array_destroy(&s->trailing);
    grpc_slice_unref(s->details);
    if (s->channel || s->cq) fs_unary_close(s->channel, s->cq);
    free(s);
}

int fs_unary_open(const char *target, grpc_channel **channel, grpc_completion_queue **cq)
{
    grpc_init();
    grpc_arg args[FS_WIRE_MAX_ARGS];
    grpc_channel_args chargs = {.num_args = fs_wire_channel_args(args, -1, 0), .args = args};
    grpc_channel_credentials *creds = grpc_insecure_credentials_create();
    *channel = grpc_channel_create(target, creds, &chargs);
    grpc_channel_credentials_release(creds);
    *cq = grpc_completion_queue_create_for_next(NULL);
    if (*channel && *cq) return 0;
    fs_unary_close(*channel, *cq);
    *channel = NULL, *cq = NULL;
    return -1;
}

void fs_unary_close(grpc_channel *channel, grpc_completion_queue *cq)
{
    if (channel) grpc_channel_destroy(channel);
    if (cq) {
        grpc_completion_queue_shutdown(cq);
        while (grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type != GRPC_QUEUE_SHUTDOWN) {
        }
        grpc_completion_queue_destroy(cq);
    }
    grpc_shutdown(); /* pairs with fs_unary_open's grpc_init */
}
