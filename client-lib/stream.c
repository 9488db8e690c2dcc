/* stream.c — epoch streams (client.h; docs/api.md §11): an epoch plan
 * (kernels/fs_epoch.h) made into batches by a background thread, on a
 * connection of the stream's own, up to `prefetch` batches ahead of the
 * trainer.
 *
 * The producer makes batch i = start, start+1, ... in order into a ring
 * of `prefetch` entries and fs_stream_next takes them in order. A batch is
 * a pure function of the plan and i (its seeds, and its request seed
 * fs_epoch_batch_seed), so a call that failed because the server went
 * away is retried on a fresh connection, and a stream opened at
 * start_batch continues an earlier one bit for bit.
 *
 * Slots: the producer makes a batch only while fewer than prefetch + hold
 * of the stream's batches are alive (ready or held by the caller), so its
 * connection needs prefetch + hold + 1 result slots (the labels' gather is
 * the one more) and never runs out. A caller holding `hold` batches and
 * asking for another gets FS_ERR_RESOURCE at once (it could otherwise wait
 * forever for a producer waiting on it).
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

#include "client_internal.h"
#include "fs_epoch.h"

#define MAX_PREFETCH 16
#define MAX_HOLD 16
#define DEFAULT_RECONNECT_MS 30000

typedef struct stream_batch {
    fs_stream_batch_t pub;
    fs_batch_t *batch;
    struct fs_stream *s;
    int64_t ids[];                 /* the seeds, then their labels */
} stream_batch_t;

typedef struct {
    stream_batch_t *b;
    fs_status_t st;
    char err[512];
} entry_t;

struct fs_stream {
    fs_client_t *owner;            /* the caller's connection: what a new connection copies */
    fs_client_t *conn;             /* the producer's */
    fs_epoch_t plan;
    int64_t *items;                /* the seeds by plan position */
    fs_sample_req_t req;
    int sample_only;
    char table[256], labels[256];  /* labels "" = none */
    fs_dtype_t out_dtype;
    int prefetch, hold, slots;
    int64_t start;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    entry_t ring[MAX_PREFETCH];    /* batch i at ring[i % prefetch] */
    int64_t made, taken;           /* batches made so far; the next to hand out */
    int live;                      /* batches made (or being made) and not yet freed */
    int making;                    /* the producer is making one */
    int refs;
    int stop;
    pthread_t thread;
    int has_thread;
    char errstr[512];
};

/* ---- references ------------------------------------------------------------ */

static void stream_destroy(fs_stream_t *s)
{
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
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

FS_API void fs_stream_batch_free(fs_stream_batch_t *pub)
{
    if (!pub) return;
    stream_batch_t *b = (stream_batch_t *)pub;
    fs_stream_t *s = b->s;
    fs_batch_free(b->batch);
    free(b);
    pthread_mutex_lock(&s->mu);
    s->live--;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    stream_unref(s);
}

/* ---- making one batch --------------------------------------------------------- */

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

/* A fresh connection after the old one broke: retried with backoff for the
 * connection's timeout (or 30 s), unless the stream is closing. */
static fs_status_t reconnect(fs_stream_t *s, entry_t *e)
{
    fs_close(s->conn);
    s->conn = NULL;
    int budget = s->owner->opts.timeout_ms > 0 ? s->owner->opts.timeout_ms : DEFAULT_RECONNECT_MS, waited = 0;
    for (int pause = 20;; pause = pause < 1000 ? pause * 2 : 1000) {
        fs_client_t *c = NULL;
        fs_status_t st = fs_client_clone(s->owner, s->slots, &c);
        if (st == FS_OK) {
            s->conn = c;
            return FS_OK;
        }
        int stop;
        pthread_mutex_lock(&s->mu);
        stop = s->stop;
        pthread_mutex_unlock(&s->mu);
        if (stop || waited >= budget) {
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

/* The seeds' labels into b's label array (an int64 table of dim 1). */
static fs_status_t gather_labels(fs_stream_t *s, stream_batch_t *b, entry_t *e)
{
    fs_batch_t *lb;
    int64_t n = b->pub.num_seeds;
    fs_status_t st = fs_gather(s->conn, b->pub.seeds, n, s->labels, FS_DTYPE_INVALID, &lb);
    if (st != FS_OK) return st;
    if (lb->dtype != FS_DTYPE_I64 || lb->dim != 1 || lb->rows != n) {
        fs_batch_free(lb);
        entry_fail(e, FS_ERR_FORMAT, "stream: label table '%s' is not int64 of dim 1", s->labels);
        return FS_ERR_FORMAT;
    }
    memcpy(b->ids + n, lb->features, sizeof(int64_t) * (size_t)n);
    b->pub.labels = b->ids + n;
    fs_batch_free(lb);
    return FS_OK;
}

/* One attempt at batch b's calls. */
static fs_status_t make_calls(fs_stream_t *s, stream_batch_t *b, entry_t *e)
{
    int64_t n = b->pub.num_seeds;
    fs_status_t st = s->sample_only
                         ? fs_sample(s->conn, b->pub.seeds, n, &s->req, &b->batch)
                         : fs_sample_gather(s->conn, b->pub.seeds, n, &s->req, s->table, s->out_dtype, &b->batch);
    if (st == FS_OK && s->labels[0]) st = gather_labels(s, b, e);
    if (st != FS_OK && e->st == FS_OK) entry_fail(e, st, "stream: batch %lld: %s", (long long)b->pub.index,
                                                  fs_client_errstr(s->conn));
    return st;
}

/* Batch i of the plan, retried on a new connection while the server is
 * unreachable. */
static entry_t make_batch(fs_stream_t *s, int64_t i)
{
    entry_t e = {.st = FS_OK};
    int64_t bs = s->plan.o.batch_size;
    stream_batch_t *b = calloc(1, sizeof *b + sizeof(int64_t) * (size_t)bs * 2);
    if (!b) {
        entry_fail(&e, FS_ERR_NOMEM, "stream: out of memory for batch %lld", (long long)i);
        return e;
    }
    int64_t n = fs_epoch_batch(&s->plan, i, b->ids); /* positions, then replaced by their seeds */
    for (int64_t k = 0; k < n; k++) b->ids[k] = s->items[b->ids[k]];
    s->req.seed = fs_epoch_batch_seed(&s->plan, i);
    b->pub = (fs_stream_batch_t){.index = i, .request_seed = s->req.seed, .num_seeds = n, .seeds = b->ids};
    b->s = s;
    for (;;) {
        fs_status_t st = s->conn ? make_calls(s, b, &e) : FS_ERR_UNAVAILABLE;
        if (st == FS_OK) break;
        fs_batch_free(b->batch);
        b->batch = NULL;
        if (st != FS_ERR_UNAVAILABLE || reconnect(s, &e) != FS_OK) {
            free(b);
            return e;
        }
        e.st = FS_OK;
    }
    b->pub.batch = b->batch;
    e.b = b;
    return e;
}

/* ---- the producer ------------------------------------------------------------- */

static void *produce(void *arg)
{
    fs_stream_t *s = arg;
    for (int64_t i = s->start; i < s->plan.num_batches; i++) {
        pthread_mutex_lock(&s->mu);
        while (!s->stop && (i - s->taken >= s->prefetch || s->live >= s->prefetch + s->hold))
            pthread_cond_wait(&s->cv, &s->mu);
        int stop = s->stop;
        if (!stop) s->live++, s->refs++, s->making = 1; /* the batch about to be made */
        pthread_mutex_unlock(&s->mu);
        if (stop) break;
        entry_t e = make_batch(s, i);
        pthread_mutex_lock(&s->mu);
        if (!e.b) s->live--, s->refs--;
        s->making = 0;
        s->ring[i % s->prefetch] = e;
        s->made = i + 1;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
        if (e.st != FS_OK) break; /* a failed stream stays failed */
    }
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
    int held = s->live - s->making - (int)(s->made - s->taken);
    if (held >= s->hold) {
        pthread_mutex_unlock(&s->mu);
        char msg[160];
        snprintf(msg, sizeof msg, "stream: %d batches held, the most this stream allows (hold = %d): free one with "
                 "fs_stream_batch_free first", held, s->hold);
        return stream_fail(s, FS_ERR_RESOURCE, msg);
    }
    while (s->made <= s->taken) pthread_cond_wait(&s->cv, &s->mu);
    entry_t *e = &s->ring[s->taken % s->prefetch];
    if (e->st != FS_OK) {
        st = e->st;
        snprintf(s->errstr, sizeof s->errstr, "%s", e->err);
    } else {
        *out = &e->b->pub;
        e->b = NULL;
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
    for (int64_t i = s->taken; i < s->made; i++) n += s->ring[i % s->prefetch].b != NULL;
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
    if (s->has_thread) pthread_join(s->thread, NULL);
    for (int64_t i = s->taken; i < s->made; i++) { /* made, never handed out */
        entry_t *e = &s->ring[i % s->prefetch];
        if (e->b) fs_stream_batch_free(&e->b->pub);
        e->b = NULL;
    }
    fs_close(s->conn);
    s->conn = NULL;
    stream_unref(s);
}

/* ---- opening ------------------------------------------------------------------ */

static const fs_table_info_t *find_table(const fs_info_t *info, const char *name)
{
    for (size_t i = 0; i < info->num_tables; i++)
        if (strcmp(info->tables[i].name, name) == 0) return &info->tables[i];
    return NULL;
}

static fs_status_t copy_name(fs_client_t *c, char *dst, size_t cap, const char *what, const char *v)
{
    if (strlen(v) >= cap) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: %s '%.40s...' is too long", what, v);
    strcpy(dst, v);
    return FS_OK;
}

/* The tables: the features' (unless sampling only) and the labels'. */
static fs_status_t resolve_tables(fs_client_t *c, fs_stream_t *s, const fs_stream_opts_t *o)
{
    fs_info_t *info;
    fs_status_t st = fs_info(c, &info);
    if (st != FS_OK) return st;
    if (info->typed) st = fs_client_fail(c, FS_ERR_UNSUPPORTED, "stream: '%s' is a typed graph; streams serve "
                                         "homogeneous graphs in this release (use fs_hetero_sample per batch)",
                                         info->dataset);
    if (st == FS_OK && o->table && !find_table(info, o->table))
        st = fs_client_fail(c, FS_ERR_NOT_FOUND, "stream: no table '%s' in dataset '%s'", o->table, info->dataset);
    const char *labels = o->labels ? o->labels : find_table(info, "labels") ? "labels" : "";
    if (st == FS_OK && labels[0] && !find_table(info, labels))
        st = fs_client_fail(c, FS_ERR_NOT_FOUND, "stream: no label table '%s' in dataset '%s'", labels, info->dataset);
    if (st == FS_OK && o->table) st = copy_name(c, s->table, sizeof s->table, "table", o->table);
    if (st == FS_OK) st = copy_name(c, s->labels, sizeof s->labels, "label table", labels);
    fs_info_free(info);
    return st;
}

/* The seeds, copied: a split's ids or the caller's array. */
static fs_status_t take_seeds(fs_client_t *c, fs_stream_t *s, const fs_stream_opts_t *o, int64_t *n)
{
    if (!!o->split == !!o->seeds)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: give the seeds as a split name or as an array, "
                              "not %s", o->split ? "both" : "neither");
    fs_ids_t *ids = NULL;
    const int64_t *src = o->seeds;
    *n = o->num_seeds;
    if (o->split) {
        fs_status_t st = fs_split(c, o->split, &ids);
        if (st != FS_OK) return st;
        src = ids->ids, *n = ids->n;
    } else if (o->num_seeds < 0) {
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: num_seeds is %lld", (long long)o->num_seeds);
    }
    s->items = malloc(sizeof *s->items * (size_t)(*n > 0 ? *n : 1));
    if (s->items) memcpy(s->items, src, sizeof *s->items * (size_t)*n);
    fs_ids_free(ids);
    return s->items ? FS_OK : fs_client_fail(c, FS_ERR_NOMEM, "stream: out of memory for %lld seeds", (long long)*n);
}

static fs_status_t check_counts(fs_client_t *c, fs_stream_opts_t *o)
{
    if (o->prefetch == 0) o->prefetch = 2;
    if (o->hold == 0) o->hold = 2;
    if (o->world_size == 0 && o->rank == 0) o->world_size = 1;
    if (o->prefetch < 1 || o->prefetch > MAX_PREFETCH)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: prefetch %d, must be 1..%d (0 = 2)", o->prefetch,
                              MAX_PREFETCH);
    if (o->hold < 1 || o->hold > MAX_HOLD)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: hold %d, must be 1..%d (0 = 2)", o->hold, MAX_HOLD);
    if ((unsigned)o->order > FS_ORDER_CHUNKED)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: unknown order %d", (int)o->order);
    if (o->prefetch + o->hold + 1 > FS_MAX_SLOTS)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: prefetch + hold + 1 = %d result slots, over %d",
                              o->prefetch + o->hold + 1, FS_MAX_SLOTS);
    return FS_OK;
}

static fs_status_t plan_epoch(fs_client_t *c, fs_stream_t *s, const fs_stream_opts_t *o, int64_t n)
{
    static const fs_epoch_order_t orders[] = {[FS_ORDER_RANDOM] = FS_EPOCH_RANDOM,
                                              [FS_ORDER_SEQUENTIAL] = FS_EPOCH_SEQUENTIAL,
                                              [FS_ORDER_CHUNKED] = FS_EPOCH_CHUNKED};
    fs_epoch_opts_t eo = {.num_items = n, .batch_size = o->batch_size, .drop_last = o->drop_last,
                          .order = orders[o->order], .chunk = o->chunk, .seed = o->seed, .epoch = o->epoch,
                          .rank = o->rank, .world_size = o->world_size};
    fs_error_t err = {0};
    if (fs_epoch_plan(&eo, &s->plan, &err) != FS_OK) return fs_client_fail(c, err.code, "stream: %s", err.msg);
    if (o->start_batch < 0 || o->start_batch > s->plan.num_batches)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: start_batch %lld, but this rank's epoch has %lld "
                              "batches", (long long)o->start_batch, (long long)s->plan.num_batches);
    return FS_OK;
}

static fs_status_t start(fs_client_t *c, fs_stream_t *s)
{
    s->slots = s->prefetch + s->hold + 1;
    fs_status_t st = fs_client_clone(c, s->slots, &s->conn);
    if (st != FS_OK) return fs_client_fail(c, st, "stream: its connection: %s", fs_client_errstr(s->conn));
    if (pthread_create(&s->thread, NULL, produce, s) != 0)
        return fs_client_fail(c, FS_ERR_RESOURCE, "stream: cannot start its thread");
    s->has_thread = 1;
    return FS_OK;
}

FS_API fs_status_t fs_stream_open(fs_client_t *c, const fs_stream_opts_t *opts, fs_stream_t **out)
{
    if (!c || !out) return FS_ERR_INVALID_ARGUMENT;
    *out = NULL;
    fs_stream_opts_t o;
    fs_error_t err = {0};
    if (!opts) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: no options");
    if (fs_struct_read(&o, sizeof o, opts, sizeof o, "fs_stream_opts_t", &err) != FS_OK)
        return fs_client_fail(c, err.code, "%s", err.msg);
    fs_stream_t *s = calloc(1, sizeof *s);
    if (!s) return fs_client_fail(c, FS_ERR_NOMEM, "stream: out of memory");
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->refs = 1;
    s->owner = c;
    int64_t n = 0;
    fs_status_t st = check_counts(c, &o);
    if (st == FS_OK && !o.sample) st = fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: no sampling request");
    if (st == FS_OK) st = fs_client_sample_request(c, o.sample, &s->req);
    if (st == FS_OK) st = resolve_tables(c, s, &o);
    if (st == FS_OK) st = take_seeds(c, s, &o, &n);
    if (st == FS_OK) st = plan_epoch(c, s, &o, n);
    s->sample_only = !o.table, s->out_dtype = o.out_dtype;
    s->prefetch = o.prefetch, s->hold = o.hold;
    s->start = s->made = s->taken = o.start_batch;
    if (st == FS_OK) st = start(c, s);
    if (st != FS_OK) {
        fs_stream_close(s);
        return st;
    }
    *out = s;
    return FS_OK;
}
