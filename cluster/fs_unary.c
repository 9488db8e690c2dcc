/* fs_unary.c — one gRPC request and its answer (fs_unary.h says why and
 * what): a single batch (send the request, half-close, receive the answer
 * and the status) on the caller's queue, under the call's deadline. */
#include "fs_unary.h"

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
