/* grpc_stream.c — a gRPC call's answer sent as a stream (grpc_internal.h):
 * feature rows (Gather, SampleGather, a Stream call's batches), a split's
 * ids, or a typed batch's image, one chunk of about 1 MiB per message.
 *
 * gRPC writes a message to the socket inside start_batch, on the calling
 * thread, so a stream's next chunk is gathered meanwhile by a gatherer
 * thread (a small pool, one per worker): the random-row gather overlaps the
 * socket copy. The chunk is asked for before the send starts, and the
 * worker that next needs it takes the job over if no gatherer has started
 * it, else waits for it: CPU work of one chunk, never a client. Rows are
 * gathered through the executor's server host (fs_engine_gather); a typed
 * batch's chunks are slices of its image, which they reference. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc_internal.h"

/* Images the calls are done with, kept for the next ones: a fresh 20 MB
 * allocation is ~5,000 first-touch page faults per batch (~12% of the
 * server's time for a typed batch over loopback, in perf), a kept one is
 * mapped already. Process-wide, so a slice gRPC releases late never
 * outlives its pool; bounded in count and bytes. */
#define IMAGE_POOL_SLOTS 8

#define IMAGE_POOL_BYTES ((size_t)512 << 20)

static struct {
    pthread_mutex_t mu;
    char *mem[IMAGE_POOL_SLOTS];
    size_t cap[IMAGE_POOL_SLOTS];
    int n;
    size_t bytes;
} image_pool = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* The smallest kept image of at least `bytes` (NULL if none); when none is
 * big enough the smallest is dropped, so the pool follows the batch size. */
char *fs_grpc_image_take(size_t bytes, size_t *cap)
{
    pthread_mutex_lock(&image_pool.mu);
    int best = -1, smallest = -1;
    for (int i = 0; i < image_pool.n; i++) {
        if (image_pool.cap[i] >= bytes && (best < 0 || image_pool.cap[i] < image_pool.cap[best])) best = i;
        if (smallest < 0 || image_pool.cap[i] < image_pool.cap[smallest]) smallest = i;
    }
    int k = best >= 0 ? best : smallest;
    char *mem = NULL;
    if (k >= 0) {
        mem = image_pool.mem[k], *cap = image_pool.cap[k];
        image_pool.bytes -= *cap;
        image_pool.n--;
        image_pool.mem[k] = image_pool.mem[image_pool.n], image_pool.cap[k] = image_pool.cap[image_pool.n];
    }
    pthread_mutex_unlock(&image_pool.mu);
    if (mem && best < 0) {
        free(mem);
        mem = NULL;
    }
    return mem;
}

static void image_pool_give(char *mem, size_t cap)
{
    pthread_mutex_lock(&image_pool.mu);
    if (image_pool.n < IMAGE_POOL_SLOTS && image_pool.bytes + cap <= IMAGE_POOL_BYTES) {
        image_pool.mem[image_pool.n] = mem, image_pool.cap[image_pool.n] = cap;
        image_pool.n++;
        image_pool.bytes += cap;
        mem = NULL;
    }
    pthread_mutex_unlock(&image_pool.mu);
    free(mem);
}

void fs_grpc_image_unref(void *p)
{
    image_ref_t *r = p;
    if (r && atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) == 1) {
        image_pool_give(r->mem, r->cap);
        free(r);
    }
}

static void free_rows(void *p) { free(p); }

/* A typed batch image is sent in chunks of FS_WIRE_CHUNK_BYTES, those of
 * its bytes before the hole (a trainer's cached rows, not sent) and then
 * those after it, none across it. */
static int64_t image_chunks_before(const rows_job_t *j)
{
    return (int64_t)((j->hole_at + FS_WIRE_CHUNK_BYTES - 1) / FS_WIRE_CHUNK_BYTES);
}

static int64_t image_chunk_count(const rows_job_t *j)
{
    size_t total = (size_t)j->n * j->row_bytes, after = total - j->hole_end;
    return image_chunks_before(j) + (int64_t)((after + FS_WIRE_CHUNK_BYTES - 1) / FS_WIRE_CHUNK_BYTES);
}

/* Chunk k of a typed batch image: a slice of the image itself. */
static grpc_byte_buffer *image_chunk(const rows_job_t *j, int64_t k, fs_error_t *err)
{
    size_t total = (size_t)j->n * j->row_bytes, before = (size_t)image_chunks_before(j);
    size_t offset = (size_t)k < before ? (size_t)k * FS_WIRE_CHUNK_BYTES
                                       : j->hole_end + ((size_t)k - before) * FS_WIRE_CHUNK_BYTES;
    size_t end = (size_t)k < before ? j->hole_at : total;
    size_t bytes = end - offset < FS_WIRE_CHUNK_BYTES ? end - offset : FS_WIRE_CHUNK_BYTES;
    atomic_fetch_add_explicit(&j->image->refs, 1, memory_order_relaxed);
    grpc_slice data = grpc_slice_new_with_user_data(j->image->mem + offset, bytes, fs_grpc_image_unref, j->image);
    grpc_byte_buffer *bb = fs_wire_image_chunk(total, offset, data, err);
    grpc_slice_unref(data);
    return bb;
}

static int64_t rows_per_chunk(const rows_job_t *j)
{
    int64_t per = j->row_bytes ? (int64_t)(FS_WIRE_CHUNK_BYTES / j->row_bytes) : j->n;
    return per < 1 ? 1 : per;
}

/* Gathers chunk k into a fresh buffer and wraps it in a message. */
static grpc_byte_buffer *make_chunk(fs_engine_t *e, const rows_job_t *j, int64_t k, fs_error_t *err)
{
    if (j->image) return image_chunk(j, k, err);
    int64_t per = rows_per_chunk(j), first = k * per, rows = j->n - first < per ? j->n - first : per;
    size_t bytes = (size_t)rows * j->row_bytes;
    void *buf = malloc(bytes ? bytes : 1);
    if (!buf) {
        fs_error(err, FS_ERR_NOMEM, "out of memory for a chunk of %zu bytes", bytes);
        return NULL;
    }
    if (rows > 0 && j->contig) memcpy(buf, j->contig + (size_t)first * j->row_bytes, bytes);
    else if (rows > 0 && fs_engine_gather(e, j->table, j->ids + first, rows, j->dtype, buf, err) != FS_OK) {
        free(buf);
        return NULL;
    }
    featstore_v1_GatherChunk hdr = featstore_v1_GatherChunk_init_zero;
    hdr.api_version = FS_WIRE_API_VERSION;
    snprintf(hdr.dtype, sizeof hdr.dtype, "%s", fs_dtype_name(j->dtype));
    hdr.dim = j->dim;
    hdr.total_rows = j->n;
    hdr.first_row = first;
    hdr.rows = rows;
    hdr.instance = j->instance;
    grpc_slice data = grpc_slice_new(buf, bytes, free_rows);
    grpc_byte_buffer *bb = fs_wire_gather_chunk(&hdr, data, j->wrap, k == 0 ? j->sample : NULL, err);
    grpc_slice_unref(data);
    return bb;
}

int64_t fs_grpc_chunk_count(const rows_job_t *j)
{
    if (j->image) return image_chunk_count(j);
    int64_t per = rows_per_chunk(j);
    return j->n == 0 ? 1 : (j->n + per - 1) / per;
}

/* Makes chunk k into c->ready (NULL with c->ready_err on failure). */
static void make_ready(call_t *c, int64_t k)
{
    fs_error_clear(&c->ready_err);
    c->ready = make_chunk(c->srv->engine, &c->job, k, &c->ready_err);
    c->next_chunk = k;
}

enum { AHEAD_NONE, AHEAD_QUEUED, AHEAD_RUNNING };

static void ahead_unlink(gatherers_t *g, call_t *c)
{
    if (c->qprev) c->qprev->qnext = c->qnext;
    else g->head = c->qnext;
    if (c->qnext) c->qnext->qprev = c->qprev;
    else g->tail = c->qprev;
    c->qprev = c->qnext = NULL;
}

void fs_grpc_ahead_submit(gatherers_t *g, call_t *c, int64_t k)
{
    pthread_mutex_lock(&g->mu);
    c->ahead = AHEAD_QUEUED, c->ahead_k = k;
    c->qprev = g->tail, c->qnext = NULL;
    if (g->tail) g->tail->qnext = c;
    else g->head = c;
    g->tail = c;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* Ends the call's job: waits while a gatherer runs it; a job still queued
 * is taken back, and returned (1) for the caller to do or drop. */
int fs_grpc_ahead_take_back(gatherers_t *g, call_t *c)
{
    pthread_mutex_lock(&g->mu);
    while (c->ahead == AHEAD_RUNNING) pthread_cond_wait(&g->cv, &g->mu);
    int queued = c->ahead == AHEAD_QUEUED;
    if (queued) ahead_unlink(g, c);
    c->ahead = AHEAD_NONE;
    pthread_mutex_unlock(&g->mu);
    return queued;
}

static void *gatherer_main(void *arg)
{
    gatherers_t *g = arg;
    pthread_mutex_lock(&g->mu);
    for (;;) {
        while (!g->head && !g->quit) pthread_cond_wait(&g->cv, &g->mu);
        if (!g->head) break; /* quit, and nothing queued */
        call_t *c = g->head;
        ahead_unlink(g, c);
        c->ahead = AHEAD_RUNNING;
        pthread_mutex_unlock(&g->mu);
        make_ready(c, c->ahead_k);
        pthread_mutex_lock(&g->mu);
        c->ahead = AHEAD_NONE;
        pthread_cond_broadcast(&g->cv);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

fs_status_t fs_grpc_gatherers_start(gatherers_t *g, int num, fs_error_t *err)
{
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    if (!(g->threads = calloc((size_t)num, sizeof *g->threads)))
        return fs_error(err, FS_ERR_NOMEM, "grpc: out of memory for the gatherers");
    for (; g->num < num; g->num++)
        if (pthread_create(&g->threads[g->num], NULL, gatherer_main, g) != 0)
            return fs_error(err, FS_ERR_NOMEM, "grpc: cannot start gatherer thread %d", g->num);
    return FS_OK;
}

/* After the last call is gone: nothing is queued any more. */
void fs_grpc_gatherers_stop(gatherers_t *g)
{
    if (!g->threads) return;
    pthread_mutex_lock(&g->mu);
    g->quit = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    for (int i = 0; i < g->num; i++) pthread_join(g->threads[i], NULL);
    free(g->threads);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
}

/* Sends one message of a stream (the call owns bb until the send completes).
 * When this returns FS_OK the step is over and the call must not be touched. */
fs_status_t fs_grpc_send_message(call_t *c, grpc_byte_buffer *bb)
{
    c->sending = bb;
    grpc_op ops[2];
    size_t n = 0;
    if (!c->sent_initial_md) fs_grpc_op_initial_md(c, &ops[n++]);
    memset(&ops[n], 0, sizeof ops[n]);
    ops[n].op = GRPC_OP_SEND_MESSAGE;
    ops[n++].data.send_message.send_message = c->sending;
    c->state = CALL_STREAMING;
    if (!fs_grpc_start_batch(c, ops, n)) return fs_error(&c->err, FS_ERR_INTERNAL, "grpc: cannot start a send");
    return FS_OK;
}

/* Hands the chunk made ahead to gRPC, after asking the gatherers for the
 * next one: once the send is started, another worker may already be
 * handling its completion. When this returns FS_OK the step is over and the
 * call must not be touched. */
fs_status_t fs_grpc_send_ready(call_t *c)
{
    if (fs_grpc_ahead_take_back(&c->srv->gatherers, c)) make_ready(c, c->ahead_k); /* no gatherer got to it */
    if (!c->ready) {
        c->err = c->ready_err;
        return c->err.code;
    }
    grpc_byte_buffer *bb = c->ready;
    c->ready = NULL;
    if (c->next_chunk + 1 < c->chunks) fs_grpc_ahead_submit(&c->srv->gatherers, c, c->next_chunk + 1);
    return fs_grpc_send_message(c, bb);
}

/* Starts streaming c->job: chunk 0 (with the sample, if any) here, chunk 1
 * by a gatherer. ids_in_sampler: c->job.ids lie in this worker's sampler,
 * which the worker reuses for its next call, so the gatherers need a copy.
 * *streaming = 1 once the first send is started (the step is then over). */
fs_status_t fs_grpc_stream_begin(call_t *c, int ids_in_sampler, int *streaming)
{
    rows_job_t *j = &c->job;
    c->chunks = fs_grpc_chunk_count(j);
    if (ids_in_sampler && c->chunks > 1) {
        if (!(c->nodes = malloc((size_t)j->n * sizeof *c->nodes)))
            return fs_error(&c->err, FS_ERR_NOMEM, "out of memory for %lld node ids", (long long)j->n);
        memcpy(c->nodes, j->ids, (size_t)j->n * sizeof *c->nodes);
        j->ids = c->nodes;
    }
    make_ready(c, 0);
    j->sample = NULL; /* only chunk 0 carries it, and it is the caller's */
    fs_status_t st = fs_grpc_send_ready(c);
    *streaming = st == FS_OK;
    return st;
}

/* A send completed (ok) or failed: the next chunk, or the end. */
void fs_grpc_call_sent(call_t *c, int ok)
{
    grpc_byte_buffer_destroy(c->sending);
    c->sending = NULL;
    if (c->run) {
        fs_grpc_epoch_sent(c, ok);
        return;
    }
    fs_status_t st;
    if (!ok) {
        int64_t rows = c->sent_chunks * rows_per_chunk(&c->job), unit = c->job.image ? 8 : 1;
        st = fs_grpc_past_deadline(c) ? fs_grpc_check_deadline(c, "while streaming rows")
                              : fs_error(&c->err, FS_ERR_UNAVAILABLE, "the client went away after %lld of %lld %s",
                                         (long long)((rows < c->job.n ? rows : c->job.n) * unit),
                                         (long long)(c->job.n * unit), c->job.image ? "bytes" : "rows");
    } else if (++c->sent_chunks == c->chunks) {
        fs_grpc_finish_call(c, FS_OK);
        return;
    } else if ((st = fs_grpc_check_deadline(c, "while streaming rows")) == FS_OK &&
               (st = fs_grpc_send_ready(c)) == FS_OK) {
        return;
    }
    fs_grpc_finish_call(c, st);
}
