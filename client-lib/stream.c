/* stream.c — epoch streams (client.h; docs/api.md §11): an epoch plan
 * (kernels/fs_epoch.h) made into batches by background threads, the
 * producers, each on a connection of its own, up to `prefetch` batches
 * ahead of the trainer.
 *
 * Each producer takes on the next batch of the plan and makes it whole;
 * batch i goes to entry i % prefetch of a ring, and fs_stream_next takes
 * the entries in order. Several producers make several batches at once,
 * each on one core (a connection of one thread), which scales better than
 * one batch split over the cores: a batch's phases end in barriers and
 * have serial parts. A batch is a pure function of the plan and its
 * number (its seeds, and its request seed fs_epoch_batch_seed), so it is
 * the same whoever makes it, a call that failed because the server went
 * away is retried on a fresh connection, and a stream opened at
 * start_batch continues an earlier one bit for bit. Delta streams (each
 * batch matched against the one before) and server-made ones (one call)
 * have one producer.
 *
 * Match and Reorder (FastGL, P2 in docs/papers.md; docs/algorithms.md §6): with a delta mode
 * the producer samples a window of batches (sample only), orders the
 * window (from the window's first batch, not the previous window's last,
 * so a resumed stream orders every window as the uninterrupted one did),
 * and for each batch in that order fetches only the rows the previous
 * batch lacks (then fs_gather of the new ids): over grpc:// only new rows
 * travel. Both steps are the executor's (exec/fs_exec_epoch.h), which the
 * server's epoch streams take too. FS_DELTA_FULL then
 * assembles the full matrix from the previous batch's rows and the new
 * ones; the producer keeps a reference to the previous batch for that.
 *
 * Server-made batches (docs/api.md §11): over grpc:// to a 1.5 server a
 * node stream is one Stream call, and the producer reads it a batch at a
 * time instead of making calls (produce_remote). The server makes exactly
 * the batches described above (server/epoch_run.c), so the producer only
 * checks each against its plan and matches it against the previous one as
 * the server did, the new rows arriving instead of being fetched. A call
 * that fails is opened again at the batch it failed on.
 *
 * Slots: the producer hands out a batch only while fewer than prefetch +
 * hold (+ 1, the previous batch it keeps) batches are alive. A batch holds
 * one result slot, two with a delta (its sample, and its new rows as
 * received: handed out in place, not copied), so with the window's samples
 * and one transient gather (labels) its connection needs at most
 * 2 (prefetch + hold + 1) + window + 1 slots and never runs out. A caller holding
 * `hold` batches and asking for another gets FS_ERR_RESOURCE at once (it
 * could otherwise wait forever for a producer waiting on it).
 *
 * Lifetime: the stream is reference-counted, one reference for the handle
 * and one per live batch, so batches outlive fs_stream_close. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs_exec_epoch.h"
#include "stream_internal.h"

/* ---- references ------------------------------------------------------------ */

static void stream_destroy(fs_stream_t *s)
{
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    fs_reorder_ws_destroy(s->rws);
    free(s->typed.mem);
    free(s->row_tables);
    for (int i = 0; i < 4; i++) free(s->link_arrays[i]);
    free(s->scratch);
    free(s->spare);
    free(s->labels_in);
    free(s->items);
    free(s);
}

/* Drops one reference, taking the lock. */
static void stream_unref(fs_stream_t *s)
{
    pthread_mutex_lock(&s->mu);
    int last = --s->refs == 0;
    pthread_mutex_unlock(&s->mu);
    if (last) stream_destroy(s);
}

/* FS_DELTA_FULL's matrices: the stream keeps the largest one freed for the
 * next batch, so a steady epoch reuses mapped memory instead of faulting in
 * a fresh ~matrix-sized block per batch. With room to spare, as batches vary. */
static void *matrix_take(fs_stream_t *s, size_t bytes, size_t *cap)
{
    pthread_mutex_lock(&s->mu);
    void *p = s->spare_cap >= bytes ? s->spare : NULL;
    if (p) *cap = s->spare_cap, s->spare = NULL, s->spare_cap = 0;
    pthread_mutex_unlock(&s->mu);
    if (!p && (p = malloc(bytes + bytes / 8 + 1))) *cap = bytes + bytes / 8 + 1;
    return p;
}

static void matrix_give_back(fs_stream_t *s, void *p, size_t cap)
{
    pthread_mutex_lock(&s->mu);
    if (cap > s->spare_cap) {
        void *old = s->spare;
        s->spare = p, s->spare_cap = cap, p = old;
    }
    pthread_mutex_unlock(&s->mu);
    free(p);
}

static void batch_destroy(stream_batch_t *b)
{
    fs_batch_free(b->batch);
    fs_batch_free(b->fresh);
    fs_hetero_batch_free(b->typed);
    for (size_t k = 0; k < b->num_rows_of; k++) fs_batch_free(b->rows_of[k]);
    if (b->rows) matrix_give_back(b->s, b->rows, b->rows_cap);
    free(b->rows_of), free(b->take), free(b->ranges), free(b);
}

/* Drops one of a handed-out batch's references; the last frees it and
 * lets the producer go on. */
static void batch_release(stream_batch_t *b)
{
    fs_stream_t *s = b->s;
    pthread_mutex_lock(&s->mu);
    int last = --b->refs == 0;
    if (last) s->live--;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (!last) return;
    batch_destroy(b);
    stream_unref(s);
}

FS_API void fs_stream_batch_free(fs_stream_batch_t *pub)
{
    if (pub) batch_release((stream_batch_t *)pub);
}

/* ---- calls, retried on a new connection ------------------------------------- */

static void entry_fail(entry_t *e, fs_status_t st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void entry_fail(entry_t *e, fs_status_t st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->err, sizeof e->err, fmt, ap);
    va_end(ap);
    e->st = st;
}

static void sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {}
}

static int stopping(fs_stream_t *s)
{
    pthread_mutex_lock(&s->mu);
    int stop = s->stop;
    pthread_mutex_unlock(&s->mu);
    return stop;
}

/* A fresh connection for p after its old one broke: retried with backoff
 * for the connection's timeout (or 30 s), unless the stream is closing. */
static fs_status_t reconnect(producer_t *p, entry_t *e)
{
    fs_stream_t *s = p->s;
    fs_close(p->conn);
    p->conn = NULL;
    int budget = s->owner->opts.timeout_ms > 0 ? s->owner->opts.timeout_ms : DEFAULT_RECONNECT_MS, waited = 0;
    for (int pause = 20;; pause = pause < 1000 ? pause * 2 : 1000) {
        fs_client_t *c = NULL;
        fs_status_t st = fs_stream_connect(s, &c);
        if (st == FS_OK) {
            p->conn = c;
            return FS_OK;
        }
        if (stopping(s) || waited >= budget) {
            entry_fail(e, st, "stream: the server went away and could not be reached again within %d ms: %s", budget,
                       fs_client_errstr(c));
            fs_close(c);
            return st;
        }
        fs_close(c);
        sleep_ms(pause);
        waited += pause;
    }
}

typedef enum { CALL_SAMPLE, CALL_SAMPLE_GATHER, CALL_GATHER, CALL_TYPED, CALL_LINK } call_kind_t;

/* One call a batch needs: its ids (or typed seeds, or link edges) and where
 * the result goes. The producer's req and treq carry the batch's request
 * seed. */
typedef struct {
    call_kind_t kind;
    const int64_t *ids;
    int64_t n;
    const char *table;
    const fs_hetero_seeds_t *group;
    const fs_link_req_t *link;
    fs_batch_t **out;
    fs_hetero_batch_t **typed_out;
} call_t;

static fs_status_t attempt(producer_t *p, const call_t *c)
{
    const fs_stream_t *s = p->s;
    switch (c->kind) {
    case CALL_SAMPLE: return fs_sample(p->conn, c->ids, c->n, &p->req, c->out);
    case CALL_SAMPLE_GATHER: return fs_sample_gather(p->conn, c->ids, c->n, &p->req, c->table, s->out_dtype, c->out);
    case CALL_TYPED: return fs_hetero_sample(p->conn, c->group, 1, &p->treq, c->typed_out);
    case CALL_LINK: return fs_link_sample(p->conn, c->link, &p->treq, c->typed_out);
    default:
        return fs_gather(p->conn, c->ids, c->n, c->table, c->table == s->labels ? FS_DTYPE_INVALID : s->out_dtype,
                         c->out);
    }
}

/* c for batch `index` on p's connection, retried on a new connection while
 * the server is unreachable. */
static fs_status_t call(producer_t *p, const call_t *c, int64_t index, entry_t *e)
{
    for (;;) {
        fs_status_t st = FS_ERR_UNAVAILABLE;
        if (p->conn) {
            if ((st = attempt(p, c)) == FS_OK) return FS_OK;
            entry_fail(e, st, "stream: batch %lld: %s", (long long)index, fs_client_errstr(p->conn));
        }
        if (st != FS_ERR_UNAVAILABLE || reconnect(p, e) != FS_OK) return e->st;
        e->st = FS_OK;
    }
}

/* ---- making batches ------------------------------------------------------------ */

/* Table's int64 column (dim 1) for the n ids into out: the seeds' labels,
 * or a row table's nodes. */
static fs_status_t gather_column(producer_t *p, const char *table, const int64_t *ids, int64_t n, int64_t plan_index,
                                 int64_t *out, entry_t *e)
{
    fs_batch_t *col;
    fs_status_t st = call(p, &(call_t){.kind = CALL_GATHER, .ids = ids, .n = n, .table = table, .out = &col},
                          plan_index, e);
    if (st != FS_OK) return st;
    if (col->dtype != FS_DTYPE_I64 || col->dim != 1 || col->rows != n) {
        fs_batch_free(col);
        entry_fail(e, FS_ERR_FORMAT, "stream: table '%s' is not int64 of dim 1", table);
        return FS_ERR_FORMAT;
    }
    memcpy(out, col->features, sizeof(int64_t) * (size_t)n);
    fs_batch_free(col);
    return FS_OK;
}

/* The seeds' labels into b's label array. */
static fs_status_t gather_labels(producer_t *p, stream_batch_t *b, entry_t *e)
{
    int64_t n = b->pub.num_seeds;
    fs_status_t st = gather_column(p, p->s->labels, b->pub.seeds, n, b->pub.plan_index, b->ids + n, e);
    if (st == FS_OK) b->pub.labels = b->ids + n;
    return st;
}

/* The (one) producer's scratch ids, n of them. */
static int64_t *scratch(fs_stream_t *s, int64_t n)
{
    if ((size_t)n > s->scratch_cap) {
        int64_t *p = realloc(s->scratch, sizeof *p * (size_t)n);
        if (!p) return NULL;
        s->scratch = p, s->scratch_cap = (size_t)n;
    }
    return s->scratch;
}

/* A typed batch: fs_hetero_sample on its seeds, or fs_link_sample on its
 * edges (b->ids holds src, dst, label, time by position). */
static fs_status_t make_typed(producer_t *p, stream_batch_t *b, const int64_t *pos, int64_t n, entry_t *e)
{
    const fs_stream_t *s = p->s;
    p->treq.seed = b->pub.request_seed;
    if (s->kind == STREAM_TYPED) {
        for (int64_t k = 0; k < n; k++) b->ids[k] = s->items[pos[k]];
        fs_hetero_seeds_t g = {.type = s->seed_type, .count = n, .ids = b->ids};
        return call(p, &(call_t){.kind = CALL_TYPED, .group = &g, .typed_out = &b->typed}, b->pub.plan_index, e);
    }
    int64_t *col[4];
    for (int a = 0; a < 4; a++) {
        col[a] = b->ids + a * s->plan.o.batch_size;
        for (int64_t k = 0; s->link_arrays[a] && k < n; k++) col[a][k] = s->link_arrays[a][pos[k]];
    }
    fs_link_req_t l = s->link;
    l.count = n, l.src_ids = col[0], l.dst_ids = col[1];
    l.label = s->link_arrays[2] ? col[2] : NULL, l.time = s->link_arrays[3] ? col[3] : NULL;
    return call(p, &(call_t){.kind = CALL_LINK, .link = &l, .typed_out = &b->typed}, b->pub.plan_index, e);
}

/* b's public view of its node batch b->batch, which holds every node's
 * rows unless the stream samples only or a delta mode fetches them apart. */
static void nodes_view(const fs_stream_t *s, stream_batch_t *b)
{
    const fs_batch_t *x = b->batch;
    b->pub.batch = x;
    if (!s->sample_only && s->delta == FS_DELTA_OFF)
        b->pub.features = b->pub.new_rows = x->features, b->pub.dim = x->dim, b->pub.dtype = x->dtype,
        b->pub.num_new = x->rows;
}

/* A node batch: its sample (with features unless a delta mode fetches them
 * later) and its seeds' labels. */
static fs_status_t make_nodes(producer_t *p, stream_batch_t *b, const int64_t *pos, int64_t n, entry_t *e)
{
    const fs_stream_t *s = p->s;
    for (int64_t k = 0; k < n; k++) b->ids[k] = s->items[pos[k]];
    p->req.seed = b->pub.request_seed;
    call_kind_t kind = s->sample_only || s->delta != FS_DELTA_OFF ? CALL_SAMPLE : CALL_SAMPLE_GATHER;
    fs_status_t st = call(p, &(call_t){.kind = kind, .ids = b->ids, .n = n, .table = s->table, .out = &b->batch},
                          b->pub.plan_index, e);
    if (st == FS_OK && s->labels[0]) st = gather_labels(p, b, e);
    if (st == FS_OK) nodes_view(s, b);
    return st;
}

/* A row-layout batch's seeds: the nodes of its rows (FS_ROW_NODE_TABLE),
 * and its rows as runs of consecutive rows. */
static fs_status_t row_seeds(producer_t *p, stream_batch_t *b, const int64_t *rows, int64_t n, entry_t *e)
{
    fs_status_t st = gather_column(p, FS_ROW_NODE_TABLE, rows, n, b->pub.plan_index, b->ids, e);
    if (st != FS_OK) return st;
    if (!(b->ranges = malloc(sizeof *b->ranges * (size_t)(2 * n + 1)))) {
        entry_fail(e, FS_ERR_NOMEM, "stream: out of memory for batch %lld", (long long)b->pub.plan_index);
        return FS_ERR_NOMEM;
    }
    int64_t m = 0;
    for (int64_t k = 0; k < n; k++) {
        if (m && b->ranges[2 * m - 2] + b->ranges[2 * m - 1] == rows[k]) b->ranges[2 * m - 1]++;
        else b->ranges[2 * m] = rows[k], b->ranges[2 * m + 1] = 1, m++;
    }
    b->pub.num_ranges = m, b->pub.ranges = b->ranges;
    return FS_OK;
}

/* A row batch: one gather of the seeds' rows per table, and their labels.
 * Over row tables the gathers read rows (consecutive ones copied as one
 * run: kernels/fs_gather.c) and the seeds are those rows' nodes. */
static fs_status_t make_rows(producer_t *p, stream_batch_t *b, const int64_t *pos, int64_t n, entry_t *e)
{
    const fs_stream_t *s = p->s;
    int64_t *ids = s->row_layout ? b->ids + 2 * s->plan.o.batch_size : b->ids; /* row numbers, or node ids */
    for (int64_t k = 0; k < n; k++) ids[k] = s->items[pos[k]];
    if (s->row_layout && row_seeds(p, b, ids, n, e) != FS_OK) return e->st;
    if (!(b->rows_of = calloc(s->num_row_tables, sizeof *b->rows_of))) {
        entry_fail(e, FS_ERR_NOMEM, "stream: out of memory for batch %lld", (long long)b->pub.plan_index);
        return FS_ERR_NOMEM;
    }
    b->num_rows_of = s->num_row_tables;
    for (size_t k = 0; k < s->num_row_tables; k++) {
        fs_status_t st = call(p, &(call_t){.kind = CALL_GATHER, .ids = ids, .n = n, .table = s->row_tables[k],
                                           .out = &b->rows_of[k]}, b->pub.plan_index, e);
        if (st != FS_OK) return st;
    }
    b->pub.num_tables = b->num_rows_of, b->pub.tables = (const fs_batch_t *const *)b->rows_of;
    return s->labels[0] ? gather_labels(p, b, e) : FS_OK;
}

/* A batch for plan batch p, its seeds' plan positions (*pos, the batch's
 * own positions array) and their count in *n; NULL on failure (in *e).
 * b->ids has room for four batch-size arrays (seeds and labels; a link
 * batch's four columns), then the positions. */
static stream_batch_t *batch_new(fs_stream_t *s, int64_t p, int64_t **pos, int64_t *n, entry_t *e)
{
    int64_t bs = s->plan.o.batch_size;
    stream_batch_t *b = calloc(1, sizeof *b + sizeof(int64_t) * (size_t)bs * 5);
    if (!b) {
        entry_fail(e, FS_ERR_NOMEM, "stream: out of memory for batch %lld", (long long)p);
        return NULL;
    }
    *pos = b->ids + 4 * bs;
    *n = fs_epoch_batch(&s->plan, p, *pos);
    b->pub = (fs_stream_batch_t){.index = p, .plan_index = p, .request_seed = fs_epoch_batch_seed(&s->plan, p),
                                 .num_seeds = *n, .seeds = b->ids, .positions = *pos};
    b->s = s;
    b->refs = 1;
    return b;
}

/* Plan batch i, made by p; NULL on failure (in *e). */
static stream_batch_t *make_batch(producer_t *p, int64_t i, entry_t *e)
{
    const fs_stream_t *s = p->s;
    int64_t *pos, n;
    stream_batch_t *b = batch_new(p->s, i, &pos, &n, e);
    if (!b) return NULL;
    fs_status_t st = s->kind == STREAM_NODES  ? make_nodes(p, b, pos, n, e)
                     : s->kind == STREAM_ROWS ? make_rows(p, b, pos, n, e)
                                              : make_typed(p, b, pos, n, e);
    if (st != FS_OK) {
        batch_destroy(b);
        return NULL;
    }
    b->pub.hetero = b->typed;
    return b;
}

/* Row i of b from the previous batch's rows or b's new ones. */
static void assemble(stream_batch_t *b, const stream_batch_t *prev, size_t row)
{
    char *full = b->rows;
    const char *old = prev ? prev->pub.features : NULL, *fresh = b->pub.new_rows;
    for (int64_t i = 0; i < b->batch->num_nodes; i++) {
        int64_t t = b->take[i];
        memcpy(full + (size_t)i * row, t < b->pub.prev_rows ? old + (size_t)t * row : fresh + (size_t)(t - b->pub.prev_rows) * row,
               row);
    }
    b->pub.features = full;
}

/* Match: b's rows against the previous batch handed out; fetches the new
 * ones and makes b the previous batch. */
static fs_status_t finish_delta(producer_t *p, stream_batch_t *b, entry_t *e)
{
    fs_stream_t *s = p->s;
    const fs_batch_t *x = b->batch;
    int64_t n = x->num_nodes, prev_n = s->prev ? s->prev->batch->num_nodes : 0, num_new = 0;
    size_t row = (size_t)s->dim * fs_dtype_size(s->row_dtype);
    fs_error_t err = {0};
    b->take = malloc(sizeof *b->take * (size_t)(2 * n + 1));
    int64_t *new_pos = b->take + n, *new_ids = scratch(s, n + 1);
    if (!b->take || !new_ids) {
        entry_fail(e, FS_ERR_NOMEM, "stream: out of memory for batch %lld's rows", (long long)b->pub.index);
        return FS_ERR_NOMEM;
    }
    if (fs_exec_epoch_delta(s->rws, s->prev ? s->prev->batch->nodes : NULL, prev_n, x->nodes, n, b->take, new_pos,
                            new_ids, &num_new, &err) != FS_OK) {
        entry_fail(e, err.code, "stream: %s", err.msg);
        return err.code;
    }
    b->rows = s->delta == FS_DELTA_FULL ? matrix_take(s, row * (size_t)n, &b->rows_cap) : NULL;
    fs_status_t st = s->delta == FS_DELTA_FULL && !b->rows ? FS_ERR_NOMEM : FS_OK;
    if (st != FS_OK) {
        entry_fail(e, st, "stream: out of memory for batch %lld's rows", (long long)b->pub.index);
    } else if (s->remote) { /* the server matched the same two batches: its rows must be these */
        if (b->fresh->rows != num_new)
            entry_fail(e, st = FS_ERR_FORMAT, "stream: batch %lld: the server sent %lld new rows where %lld are new",
                       (long long)b->pub.index, (long long)b->fresh->rows, (long long)num_new);
    } else if (num_new > 0) {
        st = call(p, &(call_t){.kind = CALL_GATHER, .ids = new_ids, .n = num_new, .table = s->table, .out = &b->fresh},
                  b->pub.plan_index, e);
    }
    if (st != FS_OK) return st;
    b->pub = (fs_stream_batch_t){.batch = x, .index = b->pub.index, .request_seed = b->pub.request_seed,
                                 .num_seeds = b->pub.num_seeds, .seeds = b->pub.seeds, .labels = b->pub.labels,
                                 .plan_index = b->pub.plan_index, .dim = s->dim, .dtype = s->row_dtype,
                                 .num_new = num_new, .new_rows = num_new ? b->fresh->features : NULL,
                                 .take = b->take, .prev_rows = prev_n,
                                 .match = n ? (double)(n - num_new) / (double)n : 0, .positions = b->pub.positions};
    if (s->delta == FS_DELTA_FULL) assemble(b, s->prev, row);
    if (s->prev) batch_release(s->prev);
    pthread_mutex_lock(&s->mu);
    b->refs++; /* kept as the previous batch */
    pthread_mutex_unlock(&s->mu);
    s->prev = b;
    return FS_OK;
}

/* ---- the producers ------------------------------------------------------------ */

/* Waits until batch i may be handed out; 0 when the stream is closing. */
static int wait_for_room(fs_stream_t *s, int64_t i)
{
    int limit = s->prefetch + s->hold + (s->delta != FS_DELTA_OFF);
    pthread_mutex_lock(&s->mu);
    while (!s->stop && (i - s->taken >= s->prefetch || s->live >= limit)) pthread_cond_wait(&s->cv, &s->mu);
    int go = !s->stop;
    if (go) s->live++, s->refs++, s->making++; /* the batch about to be handed out */
    pthread_mutex_unlock(&s->mu);
    return go;
}

static void hand_out(fs_stream_t *s, int64_t i, stream_batch_t *b, const entry_t *e)
{
    pthread_mutex_lock(&s->mu);
    if (!b) s->live--, s->refs--, s->failed = 1;
    s->making--;
    entry_t *r = &s->ring[i % s->prefetch];
    *r = *e;
    r->b = b, r->filled = 1;
    s->waiting++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* The next batch for a producer to make: s->next, or -1 when the plan is
 * done or the stream failed or is closing. */
static int64_t take_on(fs_stream_t *s)
{
    pthread_mutex_lock(&s->mu);
    int64_t i = s->next < s->plan.num_batches && !s->failed && !s->stop ? s->next++ : -1;
    pthread_mutex_unlock(&s->mu);
    return i;
}

/* A producer of batches made whole, one after another, as many producers
 * as the stream has: each takes on the next batch of the plan. */
static void produce_batches(producer_t *p)
{
    fs_stream_t *s = p->s;
    for (int64_t i; (i = take_on(s)) >= 0;) {
        if (!wait_for_room(s, i)) break;
        entry_t e = {.st = FS_OK};
        stream_batch_t *b = make_batch(p, i, &e);
        hand_out(s, i, b, &e);
        if (!b) break; /* a failed stream stays failed */
    }
}

/* The window's batches (plan batches w..w+k-1), sampled, and their order. */
static fs_status_t make_window(producer_t *p, int64_t w, int k, stream_batch_t **win, int *order, entry_t *e)
{
    fs_rowset_t sets[MAX_WINDOW] = {{0}};
    for (int j = 0; j < k; j++) {
        if (!(win[j] = make_batch(p, w + j, e))) return e->st;
        sets[j] = (fs_rowset_t){win[j]->batch->num_nodes, win[j]->batch->nodes};
    }
    fs_error_t err = {0};
    if (fs_exec_epoch_order(p->s->rws, sets, k, order, &err) != FS_OK) {
        entry_fail(e, err.code, "stream: %s", err.msg);
        return err.code;
    }
    return FS_OK;
}

static void drop_window(stream_batch_t **win, int k)
{
    for (int j = 0; j < k; j++)
        if (win[j]) batch_destroy(win[j]), win[j] = NULL;
}

/* A delta stream's window: hands out emission slots i = w..w+k-1 (those
 * from s->start on); 0 when the stream stops or fails. */
static int hand_out_window(producer_t *p, int64_t w, int k)
{
    fs_stream_t *s = p->s;
    stream_batch_t *win[MAX_WINDOW] = {0};
    int order[MAX_WINDOW];
    entry_t e = {.st = FS_OK};
    int ok = 1;
    fs_status_t st = make_window(p, w, k, win, order, &e);
    for (int j = 0; j < k && ok; j++) {
        int64_t i = w + j;
        if (i < s->start) continue; /* resuming inside a window */
        if (!wait_for_room(s, i)) {
            ok = 0;
            break;
        }
        stream_batch_t *b = NULL;
        if (st == FS_OK) {
            b = win[order[j]], win[order[j]] = NULL;
            b->pub.index = i;
            if (finish_delta(p, b, &e) != FS_OK) batch_destroy(b), b = NULL;
        }
        hand_out(s, i, b, &e);
        ok = b != NULL; /* a failed stream stays failed */
    }
    drop_window(win, k);
    return ok;
}

/* ---- the server makes the batches: one Stream call (grpc://) ------------------ */

static void close_call(producer_t *p)
{
    fs_stream_t *s = p->s;
    if (s->call) p->conn->ops->epoch_close(s->call);
    s->call = NULL;
}

static fs_status_t open_call(producer_t *p, int64_t i, entry_t *e)
{
    fs_stream_t *s = p->s;
    fs_epoch_call_req_t q = {.plan = &s->plan.o, .split = s->split, .seeds = s->items,
                             .num_seeds = s->plan.o.num_items, .sample = &p->req,
                             .table = s->sample_only ? "" : s->table, .out_dtype = s->out_dtype, .labels = s->labels,
                             .delta = s->delta != FS_DELTA_OFF, .window = s->window, .start_batch = i};
    fs_status_t st = p->conn->ops->epoch_open(p->conn, &q, &s->call);
    if (st != FS_OK) entry_fail(e, st, "stream: %s", fs_client_errstr(p->conn));
    return st;
}

/* Checks that the server's batch is plan batch p of the window holding
 * position i, with the plan's seeds. */
static fs_status_t check_remote(fs_stream_t *s, int64_t i, int64_t p, const fs_batch_t *x, const int64_t *seeds,
                                int64_t n, entry_t *e)
{
    int64_t first = i - i % s->window, ok = p >= first && p < first + s->window && p < s->plan.num_batches &&
                                            x->num_seeds == n;
    for (int64_t k = 0; ok && k < n; k++) /* seed_local is the server's: checked before it indexes */
        ok = (uint64_t)x->seed_local[k] < (uint64_t)x->num_nodes && x->nodes[x->seed_local[k]] == seeds[k];
    if (ok) return FS_OK;
    entry_fail(e, FS_ERR_FORMAT, "stream: the server's batch %lld (plan batch %lld) is not this stream's: its plan or "
               "seeds differ", (long long)i, (long long)p);
    return FS_ERR_FORMAT;
}

/* Batch i from the call, made into a stream batch (seeds from the plan,
 * the delta matched here as the server matched it). */
static stream_batch_t *take_remote(producer_t *p, int64_t i, fs_epoch_call_batch_t *got, const int64_t *labels,
                                   entry_t *e)
{
    fs_stream_t *s = p->s;
    int64_t *pos, n;
    stream_batch_t *b = batch_new(s, got->plan_index, &pos, &n, e);
    if (!b) {
        fs_batch_free(got->batch), fs_batch_free(got->rows);
        return NULL;
    }
    for (int64_t k = 0; k < n; k++) b->ids[k] = s->items[pos[k]];
    b->batch = got->batch, b->fresh = got->rows, b->pub.index = i;
    if (s->labels[0]) memcpy(b->ids + n, labels, sizeof(int64_t) * (size_t)n), b->pub.labels = b->ids + n;
    fs_status_t st = check_remote(s, i, got->plan_index, b->batch, b->ids, n, e);
    if (st == FS_OK && s->delta != FS_DELTA_OFF) st = finish_delta(p, b, e);
    else if (st == FS_OK) nodes_view(s, b);
    if (st != FS_OK) batch_destroy(b), b = NULL;
    return b;
}

/* Batch i, from the call (opened at i when there is none). A connection the
 * server broke is replaced and the call opened again at i; so is a call the
 * server timed out after it had delivered batches (a trainer that left it
 * unread longer than the server's request timeout). */
static stream_batch_t *remote_batch(producer_t *p, int64_t i, entry_t *e)
{
    fs_stream_t *s = p->s;
    for (;;) {
        fs_status_t st = FS_OK;
        if (!s->call) {
            s->call_batches = 0;
            st = open_call(p, i, e);
        }
        if (st == FS_OK) {
            fs_epoch_call_batch_t got;
            if ((st = p->conn->ops->epoch_next(s->call, &got, s->labels_in)) == FS_OK) {
                s->call_batches++;
                return take_remote(p, i, &got, s->labels_in, e);
            }
            if (st == FS_END)
                entry_fail(e, st = FS_ERR_FORMAT, "stream: the server ended the epoch after %lld of %lld batches",
                           (long long)i, (long long)s->plan.num_batches);
            else entry_fail(e, st, "stream: batch %lld: %s", (long long)i, fs_client_errstr(p->conn));
            close_call(p);
        }
        int reopen = st == FS_ERR_TIMEOUT && s->call_batches > 0;
        if (!reopen && (st != FS_ERR_UNAVAILABLE || reconnect(p, e) != FS_OK)) return NULL;
        e->st = FS_OK;
        if (s->prev) batch_release(s->prev); /* a new call's first batch has no previous one */
        s->prev = NULL;
    }
}

static void produce_remote(producer_t *p)
{
    fs_stream_t *s = p->s;
    for (int64_t i = s->start; i < s->plan.num_batches; i++) {
        if (!wait_for_room(s, i)) break;
        entry_t e = {.st = FS_OK};
        stream_batch_t *b = remote_batch(p, i, &e);
        hand_out(s, i, b, &e);
        if (!b) break; /* a failed stream stays failed */
    }
    close_call(p);
}

void *fs_stream_produce(void *arg)
{
    producer_t *p = arg;
    fs_stream_t *s = p->s;
    int64_t w = s->window;
    if (s->remote) produce_remote(p);
    else if (s->delta == FS_DELTA_OFF) produce_batches(p);
    else
        for (int64_t first = s->start - s->start % w; first < s->plan.num_batches; first += w) {
            int k = (int)(s->plan.num_batches - first < w ? s->plan.num_batches - first : w);
            if (!hand_out_window(p, first, k)) break;
        }
    if (s->prev) batch_release(s->prev);
    s->prev = NULL;
    return NULL;
}

/* ---- the API ------------------------------------------------------------------ */

static fs_status_t stream_fail(fs_stream_t *s, fs_status_t st, const char *msg)
{
    snprintf(s->errstr, sizeof s->errstr, "%s", msg);
    return st;
}

FS_API fs_status_t fs_stream_next(fs_stream_t *s, fs_stream_batch_t **out)
{
    if (!s || !out) return FS_ERR_INVALID_ARGUMENT;
    *out = NULL;
    pthread_mutex_lock(&s->mu);
    fs_status_t st = FS_OK;
    if (s->taken >= s->plan.num_batches) {
        pthread_mutex_unlock(&s->mu);
        return FS_END;
    }
    int held = s->live - s->making - s->waiting;
    if (held >= s->hold) {
        pthread_mutex_unlock(&s->mu);
        char msg[160];
        snprintf(msg, sizeof msg, "stream: %d batches held, the most this stream allows (hold = %d): free one with "
                 "fs_stream_batch_free first", held, s->hold);
        return stream_fail(s, FS_ERR_RESOURCE, msg);
    }
    entry_t *e = &s->ring[s->taken % s->prefetch];
    while (!e->filled) pthread_cond_wait(&s->cv, &s->mu);
    if (e->st != FS_OK) {
        st = e->st;
        snprintf(s->errstr, sizeof s->errstr, "%s", e->err);
    } else {
        *out = &e->b->pub;
        e->b = NULL, e->filled = 0;
        s->waiting--;
        s->taken++;
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    return st;
}

FS_API int64_t fs_stream_num_batches(const fs_stream_t *s) { return s ? s->plan.num_batches : 0; }

FS_API int64_t fs_stream_position(const fs_stream_t *s)
{
    if (!s) return 0;
    pthread_mutex_lock((pthread_mutex_t *)&s->mu);
    int64_t p = s->taken;
    pthread_mutex_unlock((pthread_mutex_t *)&s->mu);
    return p;
}

FS_API int fs_stream_ready(const fs_stream_t *s)
{
    if (!s) return 0;
    pthread_mutex_lock((pthread_mutex_t *)&s->mu);
    int n = 0;
    for (int k = 0; k < s->prefetch; k++) n += s->ring[k].filled && s->ring[k].b != NULL;
    pthread_mutex_unlock((pthread_mutex_t *)&s->mu);
    return n;
}

FS_API const char *fs_stream_errstr(const fs_stream_t *s) { return s ? s->errstr : "no stream"; }

FS_API void fs_stream_close(fs_stream_t *s)
{
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    for (int k = 0; k < s->num_producers; k++)
        if (s->prod[k].started) pthread_join(s->prod[k].thread, NULL);
    for (int k = 0; k < s->prefetch; k++) { /* made, never handed out */
        entry_t *e = &s->ring[k];
        if (e->filled && e->b) fs_stream_batch_free(&e->b->pub);
        e->b = NULL, e->filled = 0;
    }
    for (int k = 0; k < s->num_producers; k++) { /* for the owner's next stream */
        fs_client_park(s->owner, s->prod[k].conn);
        s->prod[k].conn = NULL;
    }
    stream_unref(s);
}

