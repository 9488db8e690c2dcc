/* local_report.h — a unix:// client's REPORT recorded in the server's
 * metrics (local_report.c): the calls a trainer ran in its own process,
 * their outcome and latency, and what they read per tier.
 *
 * The method travels as the local protocol's own enum
 * (featstore_local.Method); fs_method_t is the metrics' and may change
 * freely. fs_local_report_method is the one map between the two.
 *
 * Thread-safety: pure, and the metrics' own (lock-free). */
#ifndef FS_LOCAL_REPORT_H
#define FS_LOCAL_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "metrics.h"

/* The metrics' method for a wire number; FS_METHOD_UNKNOWN for one this
 * release does not know (a newer client's), never out of bounds. */
fs_method_t fs_local_report_method(int32_t wire);

/* Decodes the REPORT msg[0..len) of a client reading as `reader` and
 * records it; a malformed one is ignored (it only feeds metrics). */
void fs_local_report(fs_metrics_t *m, int reader, const void *msg, size_t len);

#endif
