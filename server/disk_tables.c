/* disk_tables.c — a server's tables on disk: checksums, a cache, a reader
 * each (disk_tables.h). */
#include "disk_tables.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>

#include "argsort.h"
#include "fs_fileio.h"
#include "hotness.h"
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    fs_table_t *table;
    fs_rowsums_t *sums;
    int table_fd;            /* the dataset's descriptor of the table's file */
    int cache_fd;            /* the cache's memfd: local trainers map it */
    int sums_fd;             /* the checksums, a sealed memfd: local trainers map it */
    void *cache_map;
    size_t cache_bytes;
    fs_rowcache_t *cache;
    fs_disktable_t *reader;
    fs_table_remote_t hook;  /* what table->remote points at */
} disk_table_t;

struct fs_disk_tables {
    const fs_dataset_t *ds;
    FILE *log;
    pthread_t hot_thread; /* fills the hot sets after start (hot_started) */
    int hot_started;
    int n;
    disk_table_t t[];
};

/* The share of a cache kept for the rows of highest in-degree, pinned for
 * good; the rest is SIEVE's. bench_disk: a cache of such rows alone misses
 * 26-38% less than SIEVE alone on sampled batches, half of it 3-14% less; a
 * quarter stays adaptive for what degree does not predict. */
#define HOT_SHARE 0.75

static double seconds_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) * 1e-9;
}

/* The table's checksums beside its file (<dir>/<file>.rowsums), logged. */
static fs_status_t load_sums(const fs_dataset_t *ds, disk_table_t *d, int fd, FILE *log, fs_error_t *err)
{
    const fs_table_t *t = d->table;
    char path[4400], what[300], why[512];
    snprintf(path, sizeof path, "%s/%s.rowsums", ds->dir, t->file);
    snprintf(what, sizeof what, "%s/%s", ds->dir, t->file);
    fs_rowsums_spec_t spec = {.dataset = ds->name, .table = t->name, .data_offset = t->file_offset,
                              .row_bytes = t->row_bytes, .rows = t->rows, .have_file_xxh3 = t->has_file_xxh3,
                              .file_xxh3 = t->file_xxh3};
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    fs_rowsums_origin_t origin;
    fs_status_t st = fs_rowsums_load(fd, what, path, &spec, &d->sums, &origin, why, sizeof why, err);
    if (st != FS_OK) return st;
    if (origin == FS_ROWSUMS_REUSED)
        fprintf(log, "featstore: table '%s': row checksums read from %s in %.2f s\n", t->name, path, seconds_since(&t0));
    else
        fprintf(log, "featstore: table '%s': row checksums built and the file verified in %.2f s (%s)\n", t->name,
                seconds_since(&t0), why);
    return FS_OK;
}

/* A row cache of about `bytes` in a memfd, formatted (SIEVE). */
static fs_status_t make_cache(disk_table_t *d, size_t bytes, fs_error_t *err)
{
    const fs_table_t *t = d->table;
    uint64_t stride = (t->row_bytes + FS_ROWCACHE_ROW_ALIGN - 1) / FS_ROWCACHE_ROW_ALIGN * FS_ROWCACHE_ROW_ALIGN;
    uint64_t slots = bytes / stride;
    if (slots > (uint64_t)t->rows) slots = (uint64_t)t->rows;
    if (slots < 1) slots = 1;
    d->cache_bytes = fs_rowcache_region_bytes(slots, t->row_bytes);
    d->cache_fd = memfd_create("featstore-rowcache", MFD_CLOEXEC);
    if (d->cache_fd < 0 || ftruncate(d->cache_fd, (off_t)d->cache_bytes) != 0)
        return fs_error(err, FS_ERR_NOMEM, "table '%s': a row cache of %zu bytes: %s", t->name, d->cache_bytes,
                        strerror(errno));
    d->cache_map = mmap(NULL, d->cache_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, d->cache_fd, 0);
    if (d->cache_map == MAP_FAILED) {
        d->cache_map = NULL;
        return fs_error(err, FS_ERR_NOMEM, "table '%s': mapping its row cache: %s", t->name, strerror(errno));
    }
    fs_status_t st = fs_rowcache_format(d->cache_map, d->cache_bytes, slots, t->row_bytes, FS_CACHE_SIEVE, err);
    if (st == FS_OK) st = fs_rowcache_attach(d->cache_map, d->cache_bytes, &d->cache, err);
    return st;
}

/* The checksums in a sealed memfd, for local trainers to map. */
static fs_status_t share_sums(disk_table_t *d, fs_error_t *err)
{
    size_t bytes = (size_t)d->table->rows * sizeof(uint64_t);
    const char *p = (const char *)fs_rowsums_data(d->sums);
    d->sums_fd = memfd_create("featstore-rowsums", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    int e = d->sums_fd < 0 ? errno : fs_write_full(d->sums_fd, p, bytes);
    if (!e && fcntl(d->sums_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) e = errno;
    if (e) return fs_error(err, FS_ERR_NOMEM, "table '%s': sharing its checksums: %s", d->table->name, strerror(e));
    return FS_OK;
}

/* make_cache on a thread of its own: its pages are allocated while the
 * checksums are read (each some 30 ms on the disk probe's second start). */
typedef struct {
    disk_table_t *d;
    size_t bytes;
    fs_status_t st;
    fs_error_t err;
} cache_job_t;

static void *make_cache_job(void *arg)
{
    cache_job_t *j = arg;
    j->st = make_cache(j->d, j->bytes, &j->err);
    return NULL;
}

static fs_status_t open_one(fs_dataset_t *ds, disk_table_t *d, size_t cache_bytes, size_t budget, FILE *log,
                            fs_error_t *err)
{
    fs_table_t *t = d->table;
    int fd;
    if (fs_dataset_table_fd(ds, t, &fd) != FS_OK)
        return fs_error(err, FS_ERR_INTERNAL, "table '%s' is on disk but its file is not open", t->name);
    d->table_fd = fd;
    cache_job_t job = {.d = d, .bytes = cache_bytes};
    pthread_t helper;
    int beside = pthread_create(&helper, NULL, make_cache_job, &job) == 0;
    fs_status_t st = load_sums(ds, d, fd, log, err);
    if (st == FS_OK) st = share_sums(d, err);
    if (beside) pthread_join(helper, NULL);
    else make_cache_job(&job); /* no thread to be had: one after the other */
    if (st == FS_OK && job.st != FS_OK) st = fs_error(err, job.st, "%s", job.err.msg);
    char what[300];
    snprintf(what, sizeof what, "table '%s' (%s/%s)", t->name, ds->dir, t->file);
    fs_disktable_opts_t o = {.fd = fd, .what = what, .data_offset = t->file_offset, .row_bytes = t->row_bytes,
                             .rows = t->rows, .cache = d->cache, .sums = d->sums};
    if (st == FS_OK) st = fs_disktable_open(&o, &d->reader, err);
    if (st != FS_OK) return st;
    d->hook = (fs_table_remote_t){fs_disktable_rows, d->reader};
    t->remote = &d->hook;
    char why[128], a[32], b[32], c[32];
    if (budget) snprintf(why, sizeof why, "--mem-budget %s", fs_format_bytes((double)budget, a, sizeof a));
    else snprintf(why, sizeof why, "the memory available less a margin");
    fprintf(log,
            "featstore: table '%s' (%s) is served from disk: it does not fit the memory budget (%s); a %s SIEVE "
            "row cache of %llu rows; %s\n",
            t->name, fs_format_bytes((double)t->rows * (double)t->row_bytes, b, sizeof b), why,
            fs_format_bytes((double)d->cache_bytes, c, sizeof c),
            (unsigned long long)fs_rowcache_slots(d->cache), fs_disktable_describe(d->reader));
    return FS_OK;
}

/* Every table left on disk, the labels' and hop tables' included. */
static int collect(fs_dataset_t *ds, fs_table_t **out)
{
    int n = 0;
    for (int i = 0; i < ds->num_tables; i++)
        if (ds->tables[i].on_disk) out[n++] = &ds->tables[i];
    for (int k = 0; k < ds->num_node_types && ds->num_node_types > 1; k++)
        for (int i = 0; i < ds->node_types[k].num_tables; i++)
            if (ds->node_types[k].tables[i].on_disk) out[n++] = &ds->node_types[k].tables[i];
    for (int k = 0; k < ds->num_edge_types; k++)
        for (int i = 0; i < ds->edge_types[k].num_tables; i++)
            if (ds->edge_types[k].tables[i].on_disk) out[n++] = &ds->edge_types[k].tables[i];
    for (int i = 0; i < fs_dataset_num_row_tables(ds); i++) /* the dataset's own, handed out const */
        if (fs_dataset_row_table(ds, i)->on_disk) out[n++] = (fs_table_t *)fs_dataset_row_table(ds, i);
    return n;
}

static int ascending(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The hot set of one node table: its cache's HOT_SHARE of slots filled with
 * the rows of highest in-degree (order: every node, by it), read in id
 * order (coalesced) and pinned for good. */
static void fill_hot_set(fs_disk_tables_t *D, disk_table_t *d, const int64_t *order)
{
    int64_t k = (int64_t)((double)fs_rowcache_slots(d->cache) * HOT_SHARE), pinned = 0;
    int64_t *rows = malloc((size_t)(k ? k : 1) * sizeof *rows);
    if (!rows) return;
    memcpy(rows, order, (size_t)k * sizeof *rows);
    qsort(rows, (size_t)k, sizeof *rows, ascending);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    fs_error_t err = {0};
    fs_status_t st = fs_disktable_pin(d->reader, rows, k, &pinned, &err);
    if (st != FS_OK)
        fprintf(D->log, "featstore: warning: table '%s': its hot set stopped at %lld rows: %s\n", d->table->name,
                (long long)pinned, err.msg);
    else
        fprintf(D->log, "featstore: table '%s': its %lld rows of highest in-degree kept in its cache for good (%.0f%% "
                "of it), read in %.2f s\n", d->table->name, (long long)pinned, 100 * HOT_SHARE, seconds_since(&t0));
    fflush(D->log);
    free(rows);
}

/* After start: the node tables' hot sets, by one in-degree count. */
static void *hot_sets(void *arg)
{
    fs_disk_tables_t *D = arg;
    const fs_dataset_t *ds = D->ds;
    int64_t n = ds->num_nodes;
    double *p = malloc((size_t)(n ? n : 1) * sizeof *p);
    int64_t *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    fs_csr_ref_t g = {.num_nodes = n, .indptr = ds->indptr, .indices = ds->indices, .index_dtype = ds->index_dtype};
    fs_error_t err = {0};
    if (p && order && fs_hotness_degree(&g, 1, p, &err) == FS_OK && fs_argsort_desc(p, n, 1, order, &err) == FS_OK) {
        for (int i = 0; i < D->n; i++)
            if (D->t[i].table->rows == n && !fs_dataset_is_typed(ds)) fill_hot_set(D, &D->t[i], order);
    }
    free(p), free(order);
    return NULL;
}

fs_status_t fs_disk_tables_open(fs_dataset_t *ds, size_t mem_budget, FILE *log, fs_disk_tables_t **out,
                                fs_error_t *err)
{
    *out = NULL;
    if (ds->num_on_disk == 0) return FS_OK;
    fs_table_t **tabs = calloc((size_t)ds->num_on_disk * 2 + 1, sizeof *tabs);
    fs_disk_tables_t *d = calloc(1, sizeof *d + (size_t)ds->num_on_disk * 2 * sizeof d->t[0]);
    if (!tabs || !d) {
        free(tabs), free(d);
        return fs_error(err, FS_ERR_NOMEM, "out of memory");
    }
    int n = collect(ds, tabs);
    double total = 0;
    for (int i = 0; i < n; i++) total += (double)tabs[i]->rows * (double)tabs[i]->row_bytes;
    size_t for_caches = ds->memory_left - ds->memory_left / 3; /* a third kept for the processes (trainers too) */
    fs_status_t st = FS_OK;
    for (int i = 0; i < n && st == FS_OK; i++) {
        d->t[i] = (disk_table_t){.table = tabs[i], .table_fd = -1, .cache_fd = -1, .sums_fd = -1};
        d->n = i + 1;
        double share = (double)tabs[i]->rows * (double)tabs[i]->row_bytes / (total > 0 ? total : 1);
        st = open_one(ds, &d->t[i], (size_t)((double)for_caches * share), mem_budget, log, err);
    }
    free(tabs);
    d->ds = ds, d->log = log;
    if (st == FS_OK && ds->num_nodes > 0 && pthread_create(&d->hot_thread, NULL, hot_sets, d) == 0)
        d->hot_started = 1; /* not started: the caches are SIEVE alone, and nothing else changes */
    if (st != FS_OK) {
        fs_disk_tables_close(d);
        return st;
    }
    *out = d;
    return FS_OK;
}

void fs_disk_tables_close(fs_disk_tables_t *d)
{
    if (d && d->hot_started) pthread_join(d->hot_thread, NULL);
    for (int i = 0; d && i < d->n; i++) {
        disk_table_t *t = &d->t[i];
        if (t->table->remote == &t->hook) t->table->remote = NULL;
        fs_disktable_close(t->reader);
        if (t->cache_map) munmap(t->cache_map, t->cache_bytes);
        if (t->cache_fd >= 0) close(t->cache_fd);
        if (t->sums_fd >= 0) close(t->sums_fd);
        fs_rowsums_close(t->sums);
    }
    free(d);
}

fs_status_t fs_disk_tables_share(const fs_disk_tables_t *d, const fs_table_t *t, fs_disk_share_t *out)
{
    for (int i = 0; d && i < d->n; i++)
        if (d->t[i].table == t) {
            *out = (fs_disk_share_t){d->t[i].table_fd, d->t[i].cache_fd, d->t[i].sums_fd, d->t[i].cache_bytes};
            return FS_OK;
        }
    return FS_ERR_NOT_FOUND;
}

void fs_disk_tables_stats(const fs_disk_tables_t *d, fs_disk_tables_stats_t *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; d && i < d->n; i++) {
        fs_disktable_stats_t r;
        fs_rowcache_stats_t c;
        fs_disktable_stats(d->t[i].reader, &r);
        fs_rowcache_stats(d->t[i].cache, &c);
        out->tables++;
        out->reads.rows += r.rows, out->reads.cache_hits += r.cache_hits, out->reads.disk_rows += r.disk_rows;
        out->reads.disk_reads += r.disk_reads, out->reads.disk_bytes += r.disk_bytes;
        out->reads.checksum_failures += r.checksum_failures, out->reads.read_ns += r.read_ns;
        out->cache.hits += c.hits, out->cache.misses += c.misses, out->cache.evictions += c.evictions;
        out->cache.busy += c.busy, out->cache.bypass += c.bypass;
        out->cache.ready += c.ready, out->cache.pinned += c.pinned;
        out->cache.io_reads += c.io_reads, out->cache.io_bytes += c.io_bytes, out->cache.io_ns += c.io_ns;
        out->cache.checksum_failures += c.checksum_failures;
        out->cache_bytes += d->t[i].cache_bytes;
    }
}
