/* client_grpc_internal.h — what the files of the grpc:// transport share:
 * the connection, the batch a result becomes, the row buffers both hold,
 * the calls (unary and server-streaming) every method makes, and the two
 * decoders more than one family of methods uses. Not installed; nothing
 * here leaves the library or the plugin (hidden visibility). The fs_gc_
 * ("gRPC client") prefix keeps these names apart from the server's fs_grpc_
 * ones in the programs that link both.
 *
 *   client_grpc.c          connecting (TLS, the token), closing, fork, the
 *                          table of the transport's operations
 *   client_grpc_call.c     row buffers, batches, unary and streaming calls
 *   client_grpc_methods.c  streams of feature rows, sample results, and Info,
 *                          Sample, Gather, Split, SampleGather, Stats
 *   client_grpc_epoch.c    Stream: an epoch's batches made by the server
 *   client_grpc_hot.c      the hot rows a connection caches for its Streams
 *   client_grpc_typed.c    HeteroSample and LinkSample: a typed batch image
 *
 * A connection is used by one thread at a time (client.h); its row buffer
 * cache is shared with batches that any thread may free, under its mutex. */
#ifndef FS_CLIENT_GRPC_INTERNAL_H
#define FS_CLIENT_GRPC_INTERNAL_H

#include <grpc/grpc.h>
#include <grpc/support/time.h>
#include <pthread.h>

#include "client_internal.h"
#include "fs_addr.h"
#include "fs_wire.h"

/* What the connection's queue completes: a call's batch, a connectivity watch. */
#define TAG_CALL ((void *)1)
#define TAG_CONNECT ((void *)2)

/* ---- row buffers (client_grpc_call.c) ------------------------------------------ */

typedef struct {
    void *p;
    size_t bytes;   /* in use */
    size_t cap;     /* allocated */
} rowbuf_t;

typedef struct {
    pthread_mutex_t mu;
    int refs;        /* the connection (while open) + every batch holding a buffer */
    int open;
    rowbuf_t spare;
} rowbuf_cache_t;

int fs_gc_rowbuf_alloc(rowbuf_t *r, size_t bytes);
void fs_gc_rowbuf_free(rowbuf_t *r);
rowbuf_cache_t *fs_gc_cache_new(void);
int fs_gc_cache_take(rowbuf_cache_t *k, size_t bytes, rowbuf_t *out);
void fs_gc_cache_give_back(rowbuf_cache_t *k, rowbuf_t *r);
void fs_gc_cache_close(rowbuf_cache_t *k);

/* ---- connections and batches (client_grpc_call.c) ------------------------------ */

typedef struct {
    grpc_channel *channel;
    grpc_completion_queue *cq;
    rowbuf_cache_t *rows_cache;
    struct fs_gc_hot *hot;       /* the hot rows' cache (client_grpc_hot.c), or NULL */
    char target[sizeof ((fs_addr_t *)0)->target]; /* host:port, as fs_addr_uri wrote it */
    const char *scheme;          /* "grpc" or "grpcs" (TLS), for messages */
    grpc_metadata auth;          /* authorization: Bearer <token> ... */
    int has_auth;                /* ... when a token was given */
} conn_t;

/* A result: the public batch plus every block it owns: at most what
 * fs_gc_adopt_sample detaches, nodes, seed_local and each hop's every array. */
#define MAX_OWNED (2 + FS_WIRE_BLOCK_ARRAYS * FS_MAX_HOPS)
typedef struct {
    fs_batch_priv_t priv;
    void *owned[MAX_OWNED];
    int num_owned;
    rowbuf_t rows;            /* the features, from ... */
    rowbuf_cache_t *cache;    /* ... this cache (referenced while rows is set) */
} grpc_batch_t;

static inline conn_t *conn_of(fs_client_t *c) { return c->impl; }

grpc_batch_t *fs_gc_batch_new(fs_client_t *c);
void fs_gc_batch_release(fs_batch_priv_t *p);
void fs_gc_batch_own(grpc_batch_t *b, void *p);

/* ---- calls (client_grpc_call.c) ------------------------------------------------ */

typedef struct {
    fs_client_t *c;
    const char *method;
    grpc_call *call;
    grpc_metadata auth;           /* this call's copy: gRPC writes into a sent grpc_metadata */
    grpc_metadata_array initial_md, trailing_md;
    grpc_status_code status;
    grpc_slice details;
} rpc_t;

/* A server-streaming call: request sent, then messages one by one, the
 * receive of the next one already started while the caller decodes. */
typedef struct {
    rpc_t r;
    grpc_byte_buffer *send;
    grpc_byte_buffer *incoming; /* target of the pending receive */
    int open, pending;
    int recv_ms;                /* > 0: no call deadline, but each message within this */
    int timed_out;              /* a message did not come in time: the call was cancelled */
} stream_t;

gpr_timespec fs_gc_deadline_in(int ms);
int fs_gc_wait_tag(conn_t *k);
const char *fs_gc_method_name(const char *path);
fs_status_t fs_gc_unary(fs_client_t *c, const char *method, const pb_msgdesc_t *req_fields, const void *req,
                        grpc_byte_buffer **resp);
fs_status_t fs_gc_decode_response(fs_client_t *c, const char *method, grpc_byte_buffer *bb,
                                  const pb_msgdesc_t *fields, void *msg);
fs_status_t fs_gc_stream_open_within(stream_t *s, fs_client_t *c, const char *method, const pb_msgdesc_t *fields,
                                     const void *req, int recv_ms);
fs_status_t fs_gc_stream_open(stream_t *s, fs_client_t *c, const char *method, const pb_msgdesc_t *fields,
                              const void *req);
grpc_byte_buffer *fs_gc_stream_next(stream_t *s);
fs_status_t fs_gc_stream_close(stream_t *s, fs_status_t st);

/* ---- feature rows and samples (client_grpc_methods.c) -------------------------- */

/* Where the rows of a stream go; fed by the `data` callback of each chunk. */
typedef struct {
    const featstore_v1_GatherChunk *hdr; /* the chunk being decoded */
    rowbuf_cache_t *cache;
    rowbuf_t buf;                         /* total_rows * row_bytes, owned until handed to the batch */
    char *rows;                           /* = buf.p */
    int64_t total_rows, dim, rows_done;
    int64_t reserve_rows;                 /* room for at least this many rows (a cached stream's batch) */
    fs_dtype_t dtype;
    size_t row_bytes;
    int started, placed;
    fs_wire_buf_t early;                  /* data that came before its chunk's head */
    char problem[160];
} rows_sink_t;

void fs_gc_sink_prepare(rows_sink_t *s, featstore_v1_GatherChunk *hdr);
void fs_gc_sink_free(rows_sink_t *s);
fs_status_t fs_gc_decode_chunk(fs_client_t *c, const char *method, grpc_byte_buffer *bb, const pb_msgdesc_t *fields,
                               void *msg, const featstore_v1_GatherChunk *chunk, rows_sink_t *sink);
fs_status_t fs_gc_finish_rows(fs_client_t *c, const char *method, rows_sink_t *sink, grpc_batch_t *b);
fs_status_t fs_gc_adopt_sample(fs_client_t *c, const char *method, const featstore_v1_SampleResponse *msg,
                               fs_wire_sample_dst_t *dst, const fs_sample_req_t *req, grpc_batch_t *b);
fs_status_t fs_gc_table_args(fs_client_t *c, const char *table, fs_dtype_t out_dtype, char *name, size_t name_size,
                             char *dtype, size_t dtype_size);

/* ---- the transport's operations (fs_transport_ops_t, client_internal.h) -------- */

/* client_grpc_methods.c */
fs_status_t fs_gc_info(fs_client_t *c, fs_info_t **out);
fs_status_t fs_gc_sample(fs_client_t *c, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
                         fs_batch_t **out);
fs_status_t fs_gc_gather(fs_client_t *c, const int64_t *ids, int64_t n, const char *table, fs_dtype_t out_dtype,
                         fs_batch_t **out);
fs_status_t fs_gc_split(fs_client_t *c, const char *name, fs_ids_t **out);
/* A split's ids (hot 0) or the server's hot list's first `hot`, with the
 * server instance the chunks name (SplitRequest.hot; 0 from a server
 * before it). */
fs_status_t fs_gc_ids(fs_client_t *c, const char *name, int64_t hot, fs_ids_t **out, uint64_t *instance);
fs_status_t fs_gc_sample_gather(fs_client_t *c, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
                                const char *table, fs_dtype_t out_dtype, fs_batch_t **out);
fs_status_t fs_gc_stats(fs_client_t *c, char **text);
/* client_grpc_epoch.c */
fs_status_t fs_gc_epoch_open(fs_client_t *c, const fs_epoch_call_req_t *q, struct fs_epoch_call **out);
fs_status_t fs_gc_epoch_next(struct fs_epoch_call *e, fs_epoch_call_batch_t *out, int64_t *labels);
void fs_gc_epoch_close(struct fs_epoch_call *e);
/* client_grpc_hot.c: the cache of the server's hot rows a connection
 * holds (conn_t.hot), for the calls of one table (and dtype). Ready:
 * filled unless it holds that table's rows of this server (*cached 0 and
 * *instance 0 when it cannot be: no budget, an older server, a typed
 * dataset); only a bad FEATSTORE_CACHE_MB is an error. Spread: rows[0..got)
 * received for the uncached of nodes[0..n) spread into place around the
 * cached ones (got == n: every row came, from another server instance: the
 * cache is dropped for the next call). Free: drops the connection's hold. */
typedef struct fs_gc_hot fs_gc_hot_t;
fs_status_t fs_gc_hot_ready(fs_client_t *c, const char *table, fs_dtype_t out_dtype, int64_t *cached,
                            uint64_t *instance);
fs_status_t fs_gc_hot_spread(fs_client_t *c, const int64_t *nodes, int64_t n, char *rows, size_t row_bytes,
                             int64_t got, const char *what);
void fs_gc_hot_free(fs_gc_hot_t *h);
/* client_grpc_typed.c */
fs_status_t fs_gc_hetero(fs_client_t *c, const fs_hetero_seeds_t *groups, size_t num_groups,
                         const fs_link_req_t *link, const fs_hetero_req_t *req, fs_hetero_batch_t **out);

#endif
