/* fs_limits.h — per-request limits, checked the same way by the server's
 * engine (gRPC requests) and by local clients running the kernels in their
 * own process, so a request means the same thing on every transport.
 * Pure functions; thread-safe. */
#ifndef FS_LIMITS_H
#define FS_LIMITS_H

#include "fs_sample.h"
#include "fs_types.h"

typedef struct {
    int64_t max_ids;             /* seeds or ids in one request */
    int64_t max_fanout_product;  /* product of the fanouts (a fanout of -1 counts as max_fanout_product) */
    int64_t max_response_bytes;  /* bytes of one response's arrays */
} fs_limits_t;

void fs_limits_default(fs_limits_t *l);

/* INVALID_ARGUMENT for a malformed request, RESOURCE for one over a limit.
 * req is NULL for a plain gather; row_bytes is the served row size (0 when
 * nothing is gathered, or when the response size is checked afterwards).
 * A request's locality must be 0, 1 or a finite boost > 1 (never
 * FS_LOCALITY_AUTO: clients resolve it), and a boost needs every hop
 * uniform; whether this transport and reader can boost is the caller's
 * check. */
fs_status_t fs_limits_check(const fs_limits_t *l, int64_t n, const fs_sample_req_t *req, size_t row_bytes,
                            fs_error_t *err);

/* Bytes of a sample result's arrays (what a response carries), edge
 * weights included when present. */
int64_t fs_sample_result_bytes(const fs_sample_result_t *r);

#endif
