/* epoch_run.h — one epoch stream's batches made by the server (docs/api.md
 * §11, docs/algorithms.md §6 and §10): the plan (kernels/fs_epoch.h), each
 * batch sampled with its request seed, its seeds' labels gathered, and with
 * Match-Reorder the window's batches ordered and each batch reduced to the
 * rows the previous one lacks. What to send, not how: the gRPC transport's
 * Stream method encodes what fs_epoch_run_next hands it.
 *
 * The batches are exactly those of the client's own stream producer
 * (client-lib/stream.c) for the same options, so a client may switch
 * between the two and a resumed stream (start_batch) continues either bit
 * for bit: a window is always ordered from its first batch, and after
 * start_batch the first batch has no previous one (every row is new).
 *
 * Thread-safety: a run is used by one thread at a time (the call's current
 * step); the sampler passed in is the caller's and only read during the
 * call. */
#ifndef FS_EPOCH_RUN_H
#define FS_EPOCH_RUN_H

#include "engine.h"
#include "fs_epoch.h"

#define FS_EPOCH_RUN_MAX_WINDOW 16

typedef struct {
    fs_epoch_opts_t plan;          /* num_items is taken from the seeds */
    const char *split;             /* the seeds: a split's name, or */
    const int64_t *seeds;          /* an array (copied), when split is NULL or "" */
    int64_t num_seeds;
    fs_sample_req_t sample;        /* its seed is replaced per batch */
    const char *table;             /* "" = sample only */
    fs_dtype_t out_dtype;          /* INVALID = as stored */
    const char *labels;            /* "" = none; else an int64 table of dim 1 */
    int delta;                     /* Match: hand out only the rows the previous batch lacks */
    int window;                    /* Reorder: 1..FS_EPOCH_RUN_MAX_WINDOW (> 1 needs delta) */
    int64_t start_batch;           /* 0..num_batches */
    int64_t cached;                /* > 0: the trainer holds the rows of the hot list's first `cached` nodes
                                    * (fs_engine_hot): only the others' rows go out (not with a delta) */
} fs_epoch_run_opts_t;

/* One batch, valid until the next fs_epoch_run_next or fs_epoch_run_free. */
typedef struct {
    int64_t index;                 /* its place in the stream (what the client's position counts) */
    int64_t plan_index;            /* its batch number in the plan */
    fs_sample_result_t sample;
    const int64_t *labels;         /* [sample.num_seeds], or NULL without a label table */
    const int64_t *rows;           /* the node ids whose rows go out: every node's, or (delta) the new */
    int64_t num_rows;              /* ones in the order of their first appearance, or (cached) the uncached
                                    * ones in node order */
} fs_epoch_run_batch_t;

typedef struct fs_epoch_run fs_epoch_run_t;

/* Checks everything before the first batch: the seeds (an unknown split is
 * FS_ERR_NOT_FOUND naming it), the plan (fs_epoch_plan's words), the
 * tables (a label table must be int64 of dim 1), the window, start_batch,
 * and the request against the engine's limits with a batch's rows. */
fs_status_t fs_epoch_run_open(fs_engine_t *e, const fs_epoch_run_opts_t *o, fs_epoch_run_t **out, fs_error_t *err);

/* The next batch, sampled with `sampler` (a whole window of them when one
 * begins); FS_END after the last. */
fs_status_t fs_epoch_run_next(fs_epoch_run_t *r, fs_sampler_t *sampler, fs_epoch_run_batch_t *out, fs_error_t *err);

int64_t fs_epoch_run_num_batches(const fs_epoch_run_t *r);
/* The table's served rows: dtype, bytes and values per row. */
void fs_epoch_run_rows(const fs_epoch_run_t *r, fs_dtype_t *dtype, size_t *row_bytes, int64_t *dim);

void fs_epoch_run_free(fs_epoch_run_t *r);

#endif
