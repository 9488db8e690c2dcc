/* featstore/admin.h — administration through a connection: re-planning a
 * running server's placement. Same rules as featstore/client.h: errors in
 * fs_client_errstr(), one thread per connection at a time. (Since 1.5 the
 * per-epoch locality controller, fs_report_load_ratio, a trainer's call, is
 * in client.h, which this header includes, so programs that took it from
 * here still compile.) */
#ifndef FEATSTORE_ADMIN_H
#define FEATSTORE_ADMIN_H

#include "featstore/client.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- re-planning ------------------------------------------------------------------ */

/* What to change; every field left zero/NULL keeps what the server runs
 * with now. Paths are on the server's machine. */
typedef struct {
    size_t struct_size;    /* sizeof(fs_replan_opts_t): FS_REPLAN_OPTS_INIT sets it */
    const char *topology;  /* preset (pcie4, nvlink-pairs, dgx1-v100, nvswitch8) or topology file */
    double gpu_budget;     /* bytes per GPU as a fraction of the feature table's bytes, in (0, 1] */
    const char *hotness;   /* "degree", "reach" or "presample" */
    const char *order;     /* "topology-first", "feature-first" (docs/algorithms.md §5) or "auto" (the faster
                              of the two by the cost model, neighbour-list reads included) */
    const char *plan;      /* a plan file (`featstore plan --save`) to load instead of planning */
    const char *save;      /* save the new plan to this file */
    const char *alpha;     /* Algorithm 1's alpha: "0.1" for every link class, or "nvlink=0.2,nvswitch=0"
                              (0 = no copies inside a group, least host traffic; -> 1 = copies everywhere) */
    const char *reserve;   /* GPU memory kept free per GPU for the trainer's model and activations: "2G" */
} fs_replan_opts_t;

#define FS_REPLAN_OPTS_INIT FS_STRUCT_INIT(fs_replan_opts_t)

/* Re-plans a running server's placement (docs/algorithms.md §2-§5) and
 * switches to it without a restart. The server builds the whole new
 * placement beside the served one, then switches: requests in flight
 * finish, trainers connected over unix:// follow the new plan from their
 * next call (one load of a shared page per call tells them), results never
 * change (only where rows are read from). A bad option or a failed plan is
 * an error naming the problem and changes nothing; a second re-plan while
 * one runs is FS_ERR_UNAVAILABLE. Over unix:// only (FS_ERR_UNSUPPORTED over
 * grpc://): it is administration, reserved to the server's machine.
 * Blocks until the new placement serves; *generation (may be NULL) gets
 * its number. opts may be NULL: re-plan with the current options (a plan
 * file is read again; presampled hotness is sampled again). */
FS_API fs_status_t fs_replan(fs_client_t *c, const fs_replan_opts_t *opts, uint64_t *generation);

#ifdef __cplusplus
}
#endif

#endif
