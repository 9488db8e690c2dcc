/* replan.h — a request to re-plan the served placement, in the one plain C
 * form every way of asking fills: SIGHUP (an empty request: the current
 * options), the unix:// transport's REPLAN message, and any future
 * transport that is allowed to. serve.c carries it out (fs_serve). */
#ifndef FS_REPLAN_H
#define FS_REPLAN_H

#include <stdint.h>

#include "fs_types.h"

/* NULL or empty strings and a zero budget keep what the server runs with. */
typedef struct {
    const char *topology;  /* preset or topology file */
    const char *hotness;   /* degree | reach | presample */
    const char *order;     /* topology-first | feature-first | auto */
    const char *plan;      /* load this saved plan instead of planning */
    const char *save;      /* save the new plan here */
    const char *alpha;     /* Algorithm 1's alpha per link class */
    const char *reserve;   /* GPU memory kept free per GPU ("2G") */
    double gpu_budget;     /* bytes per GPU as a fraction of the table's bytes */
} fs_replan_req_t;

typedef struct {
    uint64_t generation;   /* of the placement now served */
    double seconds;        /* planning and placing */
} fs_replan_done_t;

/* Makes and installs a new placement as `req` asks; FS_OK with *done, or
 * an error naming the problem with the served placement unchanged. */
typedef fs_status_t (*fs_replan_fn)(void *ctx, const fs_replan_req_t *req, fs_replan_done_t *done, fs_error_t *err);

#endif
