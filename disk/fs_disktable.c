/* fs_disktable.c — a disk table's rows through cache, reads and checksums
 * (the steps: fs_disktable.h). */
#include "fs_disktable.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    fs_diskio_t *d;
    pid_t thread; /* the last thread that used it: its ring was made there */
} idle_reader_t;

struct fs_disktable {
    fs_disktable_opts_t o;
    char what[256];
    pthread_mutex_t lock; /* the idle readers */
    idle_reader_t *idle;
    int num_idle, cap_idle;
    char describe[256];
    int64_t *held;        /* the slots fs_disktable_pin keeps pinned, released at close */
    int64_t num_held;
    _Atomic uint64_t rows, cache_hits, disk_rows, disk_reads, disk_bytes, checksum_failures, read_ns;
};

/* ---- readers ------------------------------------------------------------------ */

static fs_status_t new_reader(fs_disktable_t *t, fs_diskio_t **d, fs_error_t *err)
{
    return fs_diskio_open(t->o.fd, t->what, t->o.data_offset, t->o.row_bytes, (uint64_t)t->o.rows, &t->o.io, d, err);
}

/* An idle reader, the calling thread's own if there is one (its ring needs
 * no remaking), else any, else a new one. */
static fs_status_t take_reader(fs_disktable_t *t, fs_diskio_t **d, fs_error_t *err)
{
    pid_t me = gettid();
    pthread_mutex_lock(&t->lock);
    int pick = t->num_idle - 1;
    for (int i = 0; i < t->num_idle; i++)
        if (t->idle[i].thread == me) pick = i;
    *d = pick >= 0 ? t->idle[pick].d : NULL;
    if (pick >= 0) t->idle[pick] = t->idle[--t->num_idle];
    pthread_mutex_unlock(&t->lock);
    return *d ? FS_OK : new_reader(t, d, err);
}

static void give_back(fs_disktable_t *t, fs_diskio_t *d)
{
    pthread_mutex_lock(&t->lock);
    if (t->num_idle == t->cap_idle) {
        int cap = t->cap_idle ? 2 * t->cap_idle : 8;
        idle_reader_t *grown = realloc(t->idle, (size_t)cap * sizeof *grown);
        if (grown) t->idle = grown, t->cap_idle = cap;
    }
    if (t->num_idle < t->cap_idle) {
        t->idle[t->num_idle++] = (idle_reader_t){d, gettid()};
        d = NULL;
    }
    pthread_mutex_unlock(&t->lock);
    fs_diskio_close(d); /* only when the list could not grow */
}

fs_status_t fs_disktable_open(const fs_disktable_opts_t *opts, fs_disktable_t **out, fs_error_t *err)
{
    *out = NULL;
    if (opts->sums && fs_rowsums_rows(opts->sums) != opts->rows)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s: %lld checksums for %lld rows", opts->what,
                        (long long)fs_rowsums_rows(opts->sums), (long long)opts->rows);
    if (opts->cache && fs_rowcache_row_bytes(opts->cache) != opts->row_bytes)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s: a cache of %llu-byte rows for rows of %llu bytes",
                        opts->what, (unsigned long long)fs_rowcache_row_bytes(opts->cache),
                        (unsigned long long)opts->row_bytes);
    fs_disktable_t *t = calloc(1, sizeof *t);
    if (!t) return fs_error(err, FS_ERR_NOMEM, "%s: out of memory", opts->what);
    t->o = *opts;
    snprintf(t->what, sizeof t->what, "%s", opts->what);
    t->o.what = t->what;
    pthread_mutex_init(&t->lock, NULL);
    fs_diskio_t *d;
    fs_status_t st = new_reader(t, &d, err);
    if (st != FS_OK) {
        fs_disktable_close(t);
        return st;
    }
    snprintf(t->describe, sizeof t->describe, "%s", fs_diskio_describe(d));
    give_back(t, d);
    *out = t;
    return FS_OK;
}

void fs_disktable_close(fs_disktable_t *t)
{
    if (!t) return;
    if (t->num_held) fs_rowcache_release(t->o.cache, t->held, (size_t)t->num_held);
    free(t->held);
    for (int i = 0; i < t->num_idle; i++) fs_diskio_close(t->idle[i].d);
    free(t->idle);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

/* ---- a call ------------------------------------------------------------------- */

typedef struct {
    int64_t id, pos;
} id_pos_t;

static int by_id(const void *a, const void *b)
{
    int64_t x = ((const id_pos_t *)a)->id, y = ((const id_pos_t *)b)->id;
    return (x > y) - (x < y);
}

/* One call's working arrays, in one allocation. */
typedef struct {
    id_pos_t *pairs;  /* [n] the ids with their positions, sorted */
    int64_t *at;      /* [n] position -> index of its id in uniq */
    int64_t *uniq;    /* [u] the distinct ids, ascending */
    int64_t *slots;   /* [u] cache slots (-1: none) */
    uint8_t *outcome; /* [u] fs_rowcache_outcome_t */
    uint8_t *ok;      /* [u] publish: the row was read and checked */
    char **src;       /* [u] where each distinct row's bytes are */
    int64_t *rd_ids;  /* [k] the rows to read, ascending */
    void **rd_dst;    /* [k] and where */
    int64_t *rd_u;    /* [k] their index in uniq */
    char *private_rows;
    int64_t u, k;
} call_t;

static fs_status_t call_init(call_t *c, const int64_t *ids, int64_t n, fs_error_t *err)
{
    size_t each = sizeof(id_pos_t) + 9 * sizeof(int64_t) + 2;
    char *m = malloc((size_t)n * each + 64);
    if (!m) return fs_error(err, FS_ERR_NOMEM, "disk table: out of memory for %lld ids", (long long)n);
    c->pairs = (id_pos_t *)m;
    c->at = (int64_t *)(c->pairs + n);
    c->uniq = c->at + n, c->slots = c->uniq + n, c->rd_ids = c->slots + n, c->rd_u = c->rd_ids + n;
    c->src = (char **)(c->rd_u + n), c->rd_dst = (void **)(c->src + n);
    c->outcome = (uint8_t *)(c->rd_dst + n), c->ok = c->outcome + n;
    for (int64_t i = 0; i < n; i++) c->pairs[i] = (id_pos_t){ids[i], i};
    qsort(c->pairs, (size_t)n, sizeof *c->pairs, by_id);
    c->u = 0;
    for (int64_t i = 0; i < n; i++) {
        if (c->u == 0 || c->uniq[c->u - 1] != c->pairs[i].id) c->uniq[c->u++] = c->pairs[i].id;
        c->at[c->pairs[i].pos] = c->u - 1;
    }
    return FS_OK;
}

/* Where each distinct row comes from: a hit's slot, or a read into its LOAD
 * slot or into private memory. */
static fs_status_t plan_reads(fs_disktable_t *t, call_t *c, fs_error_t *err)
{
    uint64_t rb = t->o.row_bytes;
    int64_t private_count = 0, hits = 0;
    for (int64_t i = 0; i < c->u; i++) {
        c->ok[i] = 1;
        private_count += c->outcome[i] != FS_ROWCACHE_HIT && c->outcome[i] != FS_ROWCACHE_LOAD;
    }
    c->private_rows = private_count ? malloc((size_t)private_count * rb) : NULL;
    if (private_count && !c->private_rows)
        return fs_error(err, FS_ERR_NOMEM, "%s: out of memory for %lld rows", t->what, (long long)private_count);
    c->k = 0;
    for (int64_t i = 0, p = 0; i < c->u; i++) {
        if (c->outcome[i] == FS_ROWCACHE_HIT) {
            c->src[i] = fs_rowcache_row(t->o.cache, c->slots[i]);
            hits++;
            continue;
        }
        c->src[i] = c->outcome[i] == FS_ROWCACHE_LOAD ? fs_rowcache_row(t->o.cache, c->slots[i])
                                                      : c->private_rows + (size_t)(p++) * rb;
        c->rd_ids[c->k] = c->uniq[i], c->rd_dst[c->k] = c->src[i], c->rd_u[c->k] = i;
        c->k++;
    }
    atomic_fetch_add_explicit(&t->rows, (uint64_t)c->u, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->cache_hits, (uint64_t)hits, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->disk_rows, (uint64_t)c->k, memory_order_relaxed);
    return FS_OK;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static fs_status_t read_rows(fs_disktable_t *t, call_t *c, fs_error_t *err)
{
    if (c->k == 0) return FS_OK;
    fs_diskio_t *d;
    fs_status_t st = take_reader(t, &d, err);
    if (st != FS_OK) return st;
    fs_diskio_stats_t before, after;
    fs_diskio_stats(d, &before);
    uint64_t t0 = now_ns();
    st = fs_diskio_read(d, c->rd_ids, c->rd_dst, (size_t)c->k, err);
    uint64_t ns = now_ns() - t0;
    atomic_fetch_add_explicit(&t->read_ns, ns, memory_order_relaxed);
    fs_diskio_stats(d, &after);
    atomic_fetch_add_explicit(&t->disk_reads, after.reads - before.reads, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->disk_bytes, after.bytes_read - before.bytes_read, memory_order_relaxed);
    if (t->o.cache) fs_rowcache_add_io(t->o.cache, after.reads - before.reads, after.bytes_read - before.bytes_read, ns, 0);
    give_back(t, d);
    return st;
}

/* Each row read against its checksum; the first mismatch named. */
static fs_status_t check_rows(fs_disktable_t *t, call_t *c, fs_error_t *err)
{
    fs_status_t st = FS_OK;
    for (int64_t j = 0; t->o.sums && j < c->k; j++) {
        int64_t r = c->rd_ids[j];
        if (fs_rowsums_check(t->o.sums, r, c->rd_dst[j])) continue;
        c->ok[c->rd_u[j]] = 0;
        atomic_fetch_add_explicit(&t->checksum_failures, 1, memory_order_relaxed);
        if (t->o.cache) fs_rowcache_add_io(t->o.cache, 0, 0, 0, 1);
        if (st == FS_OK)
            st = fs_error(err, FS_ERR_FORMAT,
                          "%s: row %lld read from disk does not match its checksum (stored %016llx, read %016llx): "
                          "the file changed under the server, or the disk returned bad data",
                          t->what, (long long)r, (unsigned long long)fs_rowsums_get(t->o.sums, r),
                          (unsigned long long)fs_rowsums_of(c->rd_dst[j], t->o.row_bytes));
    }
    return st;
}

fs_status_t fs_disktable_rows(void *table, const int64_t *ids, int64_t n, void *out, fs_error_t *err)
{
    fs_disktable_t *t = table;
    if (n <= 0) return FS_OK;
    call_t c = {0};
    fs_status_t st = call_init(&c, ids, n, err);
    if (st != FS_OK) return st;
    if (t->o.cache) {
        fs_rowcache_acquire(t->o.cache, c.uniq, (size_t)c.u, c.slots, c.outcome);
    } else {
        for (int64_t i = 0; i < c.u; i++) c.slots[i] = -1, c.outcome[i] = FS_ROWCACHE_BYPASS;
    }
    st = plan_reads(t, &c, err);
    if (st == FS_OK) st = read_rows(t, &c, err);
    if (st == FS_OK) st = check_rows(t, &c, err);
    else memset(c.ok, 0, (size_t)c.u); /* nothing read can be trusted */
    if (t->o.cache) fs_rowcache_publish(t->o.cache, c.slots, (size_t)c.u, c.ok);
    for (int64_t i = 0; st == FS_OK && i < n; i++)
        memcpy((char *)out + (size_t)i * t->o.row_bytes, c.src[c.at[i]], t->o.row_bytes);
    if (t->o.cache) fs_rowcache_release(t->o.cache, c.slots, (size_t)c.u);
    free(c.private_rows);
    free(c.pairs);
    return st;
}

/* The pinned batch's slots, kept until close: the hits' and the loads'
 * that were read and checked; the others' pins dropped now. */
static fs_status_t keep_pins(fs_disktable_t *t, call_t *c, int64_t *pinned)
{
    int64_t *grown = realloc(t->held, (size_t)(t->num_held + c->u) * sizeof *grown);
    if (!grown) {
        fs_rowcache_release(t->o.cache, c->slots, (size_t)c->u);
        return FS_ERR_NOMEM;
    }
    t->held = grown;
    for (int64_t i = 0; i < c->u; i++) {
        int keep = c->outcome[i] == FS_ROWCACHE_HIT || (c->outcome[i] == FS_ROWCACHE_LOAD && c->ok[i]);
        if (keep) t->held[t->num_held++] = c->slots[i], (*pinned)++;
        else if (c->slots[i] >= 0) fs_rowcache_release(t->o.cache, &c->slots[i], 1);
    }
    return FS_OK;
}

fs_status_t fs_disktable_pin(fs_disktable_t *t, const int64_t *rows, int64_t n, int64_t *pinned, fs_error_t *err)
{
    *pinned = 0;
    if (!t->o.cache) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s: pinning rows needs a cache", t->what);
    const int64_t chunk = 1 << 16; /* one acquire, read and publish per chunk: the pins the cache holds grow by it */
    fs_status_t st = FS_OK;
    for (int64_t at = 0; at < n && st == FS_OK; at += chunk) {
        int64_t m = n - at < chunk ? n - at : chunk;
        call_t c = {0};
        if ((st = call_init(&c, rows + at, m, err)) != FS_OK) break;
        fs_rowcache_acquire(t->o.cache, c.uniq, (size_t)c.u, c.slots, c.outcome);
        for (int64_t i = 0; i < c.u; i++) /* BUSY, BYPASS: not read here, not pinned */
            if (c.outcome[i] != FS_ROWCACHE_HIT && c.outcome[i] != FS_ROWCACHE_LOAD) c.outcome[i] = FS_ROWCACHE_BYPASS;
        c.k = 0;
        for (int64_t i = 0; i < c.u; i++) {
            c.ok[i] = 1;
            if (c.outcome[i] != FS_ROWCACHE_LOAD) continue;
            c.rd_ids[c.k] = c.uniq[i], c.rd_dst[c.k] = fs_rowcache_row(t->o.cache, c.slots[i]), c.rd_u[c.k] = i;
            c.k++;
        }
        st = read_rows(t, &c, err);
        if (st == FS_OK) st = check_rows(t, &c, err);
        else memset(c.ok, 0, (size_t)c.u);
        fs_rowcache_publish(t->o.cache, c.slots, (size_t)c.u, c.ok);
        if (keep_pins(t, &c, pinned) != FS_OK && st == FS_OK)
            st = fs_error(err, FS_ERR_NOMEM, "%s: out of memory pinning rows", t->what);
        free(c.pairs);
    }
    return st;
}

void fs_disktable_stats(const fs_disktable_t *t, fs_disktable_stats_t *out)
{
    *out = (fs_disktable_stats_t){
        .rows = atomic_load(&t->rows),
        .cache_hits = atomic_load(&t->cache_hits),
        .disk_rows = atomic_load(&t->disk_rows),
        .disk_reads = atomic_load(&t->disk_reads),
        .disk_bytes = atomic_load(&t->disk_bytes),
        .checksum_failures = atomic_load(&t->checksum_failures),
        .read_ns = atomic_load(&t->read_ns),
    };
}

const char *fs_disktable_describe(const fs_disktable_t *t) { return t->describe; }
