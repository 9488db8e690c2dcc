/* stream_internal.h — the state of an epoch stream, shared by stream.c
 * (the producer, fs_stream_next, the batches' lifetime) and stream_open.c
 * (reading the options into it). Not installed. */
#ifndef FS_STREAM_INTERNAL_H
#define FS_STREAM_INTERNAL_H

#include <pthread.h>

#include "client_internal.h"
#include "fs_epoch.h"
#include "fs_reorder.h"

#define MAX_PREFETCH 16
#define MAX_HOLD 16
#define MAX_WINDOW 16
#define MAX_PRODUCERS 16
#define DEFAULT_RECONNECT_MS 30000

typedef struct stream_batch {
    fs_stream_batch_t pub;
    fs_batch_t *batch;             /* the sample and features (FS_DELTA_OFF) or the sample */
    fs_batch_t *fresh;             /* delta: the new rows, as received */
    fs_hetero_batch_t *typed;      /* typed and link streams: the batch */
    fs_batch_t **rows_of;          /* row streams: one gather per table */
    size_t num_rows_of;
    struct fs_stream *s;
    int refs;                      /* the caller's, and the producer's while it is the previous batch */
    void *rows;                    /* FS_DELTA_FULL: the full matrix (rows_cap bytes) */
    size_t rows_cap;
    int64_t *take;                 /* delta: take [num_nodes], then new_pos [num_nodes] */
    int64_t *ranges;               /* row layout: [num_ranges][2] */
    int64_t ids[];                 /* the seeds, then their labels */
} stream_batch_t;

typedef struct {
    stream_batch_t *b;
    int filled;                    /* handed to the ring and not yet taken */
    fs_status_t st;
    char err[512];
} entry_t;

/* A thread making batches, on a connection of its own, with its own copy
 * of the request (each batch sets its request seed in it). */
typedef struct {
    struct fs_stream *s;
    fs_client_t *conn;
    fs_sample_req_t req;           /* STREAM_NODES */
    fs_hetero_req_t treq;          /* STREAM_TYPED, STREAM_LINK (pointing into the stream's copy) */
    pthread_t thread;
    int started;
} producer_t;

typedef enum { STREAM_NODES, STREAM_TYPED, STREAM_LINK, STREAM_ROWS } stream_kind_t;

/* A typed request and everything it points to, owned by the stream: the
 * caller's options need not outlive fs_stream_open. */
typedef struct {
    fs_hetero_req_t req;
    void *mem;                     /* the fanouts, table name arrays and strings */
} hetero_copy_t;

struct fs_stream {
    fs_client_t *owner;            /* the caller's connection: what a new connection copies */
    stream_kind_t kind;
    hetero_copy_t typed;           /* STREAM_TYPED, STREAM_LINK: the request */
    fs_link_req_t link;            /* STREAM_LINK: the template (edge type in link_names) */
    char seed_type[256], link_names[3][256];
    int64_t *link_arrays[4];       /* STREAM_LINK: the split's src, dst, label, time (or NULL) */
    char **row_tables;             /* STREAM_ROWS: the tables' names (one allocation) */
    size_t num_row_tables;
    int row_layout;                /* STREAM_ROWS over row tables: items are rows, seeds their nodes */
    int64_t split_rows[2];         /* row_layout: the split's rows, first and count */
    char split[256];               /* the seeds' split ("" = an array): what a Stream call names */
    int remote;                    /* the server makes the batches: one Stream call (grpc://, node batches) */
    struct fs_epoch_call *call;    /* remote: the producer's call, on its connection */
    int64_t *labels_in;            /* remote: a batch's labels as received (batch_size) */
    int64_t call_batches;          /* remote: batches the current call delivered */
    void *spare;                   /* a freed FS_DELTA_FULL matrix, spare_cap bytes (mu) */
    size_t spare_cap;
    fs_epoch_t plan;
    int64_t *items;                /* the seeds by plan position */
    fs_sample_req_t req;
    int sample_only;
    char table[256], labels[256];  /* labels "" = none */
    fs_dtype_t out_dtype, row_dtype;
    int64_t dim;
    int prefetch, hold, window, slots;
    fs_delta_t delta;
    int64_t start;
    /* delta and remote streams' one producer's alone */
    fs_reorder_ws_t *rws;
    stream_batch_t *prev;          /* delta: the batch handed out last */
    int64_t *scratch;              /* delta: the new ids */
    size_t scratch_cap;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    entry_t ring[MAX_PREFETCH];    /* batch i at ring[i % prefetch] */
    int64_t next, taken;           /* the next batch a producer takes on; the next to hand out */
    int waiting;                   /* batches in the ring, not yet taken */
    int live;                      /* batches handed to the ring (or being made) and not yet freed */
    int making;                    /* batches being made */
    int failed;                    /* a batch failed: no more are begun */
    int refs;
    int stop;
    producer_t prod[MAX_PRODUCERS];
    int num_producers;
    char errstr[512];
};

/* What opens a stream, whichever call was made (stream_kinds.c): the kind,
 * the 1.4 struct's fields that kind uses (the others zero), and the options
 * only the per-kind structs have. */
typedef struct {
    stream_kind_t kind;
    fs_stream_opts_t o;
    fs_stream_calls_t calls;       /* STREAM_NODES: who makes a grpc:// stream's batches */
} stream_spec_t;

/* Opens the stream spec describes (stream_open.c): the options checked that
 * every form shares (counts, tables, seeds, the plan), then its producers
 * started. Failures in fs_client_errstr(c); *out NULL. */
fs_status_t fs_stream_open_spec(fs_client_t *c, const stream_spec_t *spec, fs_stream_t **out);

/* A producer thread's body (stream.c; arg: its producer_t): makes and
 * hands out batches from s->start to the end of the plan. */
void *fs_stream_produce(void *arg);

/* A new connection for one of s's producers (stream_open.c): the owner's,
 * with the stream's slots and, when there are several producers, an equal
 * share of the owner's threads (they split the cores by batches). */
fs_status_t fs_stream_connect(const fs_stream_t *s, fs_client_t **out);

#endif
