/* grpc_internal.h — the gRPC transport's calls and server, shared by its
 * three files: grpc_server.c (calls as state machines: admission,
 * deadlines, the workers, start and stop), grpc_stream.c (a call's answer
 * sent as a stream of chunks, made ahead by the gatherer threads) and
 * grpc_methods.c (what each method computes, on the request executor's
 * server host, server/engine.h). Not installed. */
#ifndef FS_GRPC_INTERNAL_H
#define FS_GRPC_INTERNAL_H

#include <grpc/grpc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "epoch_run.h"
#include "fs_wire.h"
#include "grpc_server.h"
#include "shard_metrics.h"
#include "shard_live.h"

typedef struct {
    struct fs_grpc_server *srv;
    fs_sampler_t *sampler;
    fs_typed_sampler_t *typed;     /* HeteroSample and LinkSample */
    fs_shard_ws_t *shard_ws;       /* ShardPicks, made at its first call */
    pthread_t thread;
    int running;
} worker_t;

typedef struct {
    char *addr;       /* gRPC's peer string, whole: one cut short would never match its calls again */
    int active;       /* calls in flight */
    double last;      /* when its last call ended */
} peer_t;

/* The peers seen lately (grpc_server.c, "Connected clients"). */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    peer_t *peer;
    int num, quit, running;
    double idle_s;
    pthread_t janitor;
    fs_metrics_t *metrics;
} peers_t;

struct call;

/* The gatherer threads and their queue of calls wanting a chunk made ahead. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;             /* a job queued or finished, or quit */
    struct call *head, *tail;
    int quit, num;
    pthread_t *threads;
} gatherers_t;

struct fs_grpc_server {
    grpc_server *server;
    peers_t peers;
    gatherers_t gatherers;
    grpc_completion_queue *cq;          /* every call's batches, polled by every worker */
    grpc_completion_queue *shutdown_cq;
    fs_engine_t *engine;                /* NULL on a shard server, */
    fs_shard_live_t *shard;             /* which answers the Shard* methods from its parts (else NULL) */
    fs_limits_t limits;                 /* the server's (a copy) */
    int64_t map_revision;               /* a shard's (fs_grpc_server_set_map_revision; atomic), or 0 */
    fs_shard_metrics_t *shard_metrics;  /* a shard's counters, or NULL */
    fs_metrics_t *metrics;
    int num_workers;
    worker_t *workers;
    fs_pool_t *pool;                    /* one request's sampling split over the cores (fs_pool.h: a request
                                         * finding it busy samples on its own worker thread) */
    int grpc_initialised;
    int max_calls;
    double request_timeout_s;           /* the server's deadline for every call, from its admission */
    char *bearer;                       /* "Bearer <token>", or NULL: no token asked for */
    uint64_t instance;                  /* random, never 0: names this process's rows to a trainer's cache */
    /* the calls: every call object alive (live), those admitted (in_flight) */
    pthread_mutex_t calls_mu;
    pthread_cond_t calls_cv;
    int live, in_flight, stopping;
    struct call *admitted_head, *admitted_tail; /* admitted calls, oldest first (calls_mu) */
    pthread_t reaper;                   /* cancels calls past the server's deadline */
    pthread_cond_t reaper_cv;           /* (calls_mu, CLOCK_MONOTONIC) wakes the reaper to quit; nothing else */
    int reaper_running, reaper_quit;
};

typedef enum { CALL_REQUESTED, CALL_RECEIVING, CALL_STREAMING, CALL_FINISHING } call_state_t;

/* A typed batch's image, shared by the call and by every chunk message
 * that sends a piece of it: a chunk's slice points into the image instead
 * of copying it (a [15,10,5] x 1024 batch is ~20 MB), and holds a
 * reference, since gRPC may keep a sent slice past the call's end. */
typedef struct image_ref {
    char *mem;
    size_t cap;
    atomic_int refs;
} image_ref_t;

/* A stream of feature rows (or of a split's ids, or of a typed batch
 * image), one chunk per message. */
typedef struct rows_job {
    char table[64];
    const char *contig;            /* rows stored back to back instead (a split's ids); table unused */
    uint64_t instance;             /* every chunk's GatherChunk.instance (the hot list's), or 0 */
    image_ref_t *image;            /* contig is this typed batch image, rows of 8 bytes: BatchImageChunk messages */
    size_t hole_at, hole_end;      /* image bytes not sent (a trainer's cached rows); equal: none */
    const int64_t *ids;
    int64_t n;
    fs_dtype_t dtype;              /* resolved: never INVALID */
    size_t row_bytes;
    int64_t dim;
    int wrap;                      /* SampleGatherChunk messages */
    const featstore_v1_SampleResponse *sample; /* first message's sample (wrap only; chunk 0 only) */
} rows_job_t;

/* One call, from its request to its freeing (grpc_server.c). */
typedef struct call {
    struct fs_grpc_server *srv;
    worker_t *w;                   /* the worker running the current step */
    call_state_t state;
    grpc_call *call;
    grpc_call_details details;
    grpc_metadata_array request_md;
    grpc_byte_buffer *request;
    grpc_byte_buffer *response;    /* unary: sent with the status */
    int method;                    /* index into fs_grpc_methods[]; -1 unknown */
    int sent_initial_md, admitted;
    double server_deadline;        /* admission + the request timeout (fs_grpc_now clock) */
    struct call *aprev, *anext;    /* in the server's admitted list */
    int reaped;                    /* cancelled by the reaper (calls_mu) */
    atomic_int timeout_counted;    /* the deadline metric counts a call once */
    grpc_status_code code_override; /* OK = derive the code from the fs_status_t */
    fs_error_t err;
    double t0;
    char *peer;
    int peer_tracked;
    int recv_cancelled;            /* RECV_CLOSE_ON_SERVER's flag */
    /* a stream in progress */
    rows_job_t job;
    int64_t next_chunk, chunks;    /* the chunk `ready` holds; how many in all */
    int64_t sent_chunks;           /* sends completed */
    int ahead;                     /* AHEAD_*: chunk ahead_k asked of the gatherers (s->gatherers.mu) */
    int64_t ahead_k;
    struct call *qprev, *qnext;    /* in the gatherers' queue */
    grpc_byte_buffer *sending, *ready;
    fs_error_t ready_err;          /* why `ready` could not be made */
    fs_wire_buf_t ids_buf;         /* Gather's ids, borrowed from `request` */
    int64_t *nodes;                /* SampleGather's nodes, copied out of the worker's sampler */
    struct image_ref *image;       /* HeteroSample's and LinkSample's batch image */
    /* Stream: the epoch's batches, each a head message and then its rows job */
    fs_epoch_run_t *run;
    int sending_head;              /* the send in flight is a batch's head */
    int64_t batches_sent;
} call_t;

/* A method: decodes c->request and computes the answer, into c->response
 * (unary), or starts the stream and sets *streaming (the step is then over). */
typedef fs_status_t (*handler_fn)(call_t *c, int *streaming);

/* The methods (grpc_methods.c): path, metrics method, handler; a call's
 * `method` indexes them. */
typedef struct {
    const char *path;
    fs_method_t method;
    handler_fn fn;
    int shard;                          /* 0: a whole server's method; 1: a shard server's; 2: both's */
} fs_grpc_method_t;
extern const fs_grpc_method_t fs_grpc_methods[];
#define FS_GRPC_NUM_METHODS 13
/* The method of a call's path; -1 when there is none. */
int fs_grpc_find_method(grpc_slice path);
/* A Stream call's send completed (ok) or failed: its next message, or the end. */
void fs_grpc_epoch_sent(call_t *c, int ok);

static inline double fs_grpc_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- calls (grpc_server.c) ---- */

/* Starts one gRPC batch of the call's (its tag is the call); 0 if gRPC refused it. */
int fs_grpc_start_batch(call_t *c, grpc_op *ops, size_t n);
/* The initial metadata op, sent with a call's first message. */
void fs_grpc_op_initial_md(call_t *c, grpc_op *op);
int fs_grpc_past_deadline(const call_t *c);
/* FS_ERR_TIMEOUT naming `when` once the client's or the server's deadline passed. */
fs_status_t fs_grpc_check_deadline(call_t *c, const char *when);
/* Restarts the server's deadline from now (each batch of a Stream call). */
void fs_grpc_renew_deadline(call_t *c);
/* Sends the final status (with the unary response, if any); the call is
 * freed when that completes. */
void fs_grpc_finish_call(call_t *c, fs_status_t st);

/* ---- streams (grpc_stream.c) ---- */

/* A typed batch image's memory: a kept one of at least `bytes`, or NULL. */
char *fs_grpc_image_take(size_t bytes, size_t *cap);
/* Drops a reference to an image (NULL: none); the last gives it back. */
void fs_grpc_image_unref(void *image);
int64_t fs_grpc_chunk_count(const rows_job_t *j);
/* Asks the gatherers for chunk k of the call's job. */
void fs_grpc_ahead_submit(gatherers_t *g, call_t *c, int64_t k);
/* Ends the call's job: waits while a gatherer runs it; a job still queued
 * is taken back, and returned (1) for the caller to do or drop. */
int fs_grpc_ahead_take_back(gatherers_t *g, call_t *c);
fs_status_t fs_grpc_gatherers_start(gatherers_t *g, int num, fs_error_t *err);
void fs_grpc_gatherers_stop(gatherers_t *g);
fs_status_t fs_grpc_send_message(call_t *c, grpc_byte_buffer *bb);
fs_status_t fs_grpc_send_ready(call_t *c);
fs_status_t fs_grpc_stream_begin(call_t *c, int ids_in_sampler, int *streaming);
/* A send completed (ok) or failed: the next chunk, or the end. */
void fs_grpc_call_sent(call_t *c, int ok);

#endif
