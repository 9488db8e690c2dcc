/* bench_disk — the disk tier's reads and cache (disk/), against the disk's
 * own figure.
 *
 * 1. Random rows of 512 B read by fs_diskio (the cache off), against fio
 *    reading the same file at the same block size and queue depth, rounds
 *    interleaved: ratio_iops_vs_fio. Then both at several depths, which is
 *    how FS_DISKIO_DEFAULT_DEPTH was chosen.
 * 2. What those reads cost in disk bytes per useful byte, for rows stored
 *    at the file system's alignment and for the classic 128 B .npy header
 *    (rows straddling two blocks): read_amplification.
 * 3. The row cache's miss rate under SIEVE, LRU and CLOCK on one access
 *    trace: the distinct nodes of sampled batches ([15,10,5] x 1024 seeds
 *    of the train split) of a graph, at caches of 5, 10 and 20% of its rows;
 *    and with half, or all, of the cache holding the highest-degree rows
 *    for good (a static cache, as PaGraph's and GNNLab's).
 * 4. Those batches sampled and gathered (float32) with the table on disk
 *    behind a 10% cache, rows checked against their checksums, the one
 *    gather engine reading it through fs_disktable: batches/s over a cold
 *    and then a warm pass, against the same loop on the table in memory.
 *
 *   bench_disk [--dir /var/tmp] [--file-mib 1024] [--seconds 5] [--rounds 2]
 *              [--depth 64] [--batch-rows 4096] [--dataset DIR | --scale 18 (x 128 float32)]
 *              [--batches 200]
 *
 * Needs fio (apt-get install fio). The file is written under --dir (a disk,
 * not tmpfs) and removed at the end. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"
#include "bench_util.h"
#include "dataset.h"
#include "fs_diskio.h"
#include "fs_disktable.h"
#include "fs_gather.h"
#include "fs_rng.h"
#include "fs_rowcache.h"
#include "fs_sample.h"

#define ROW 512
#define HEADER 4096 /* where featstore's tables start their rows (aligned) */

#define CHECK(x)                                                            \
    do {                                                                    \
        fs_status_t st_ = (x);                                              \
        if (st_ != FS_OK) {                                                 \
            fprintf(stderr, "bench_disk: %s: %s\n", #x, err.msg);           \
            exit(1);                                                        \
        }                                                                   \
    } while (0)

/* ---- the file --------------------------------------------------------------- */

static int make_file(const char *dir, uint64_t bytes, char *path, size_t len)
{
    snprintf(path, len, "%s/bench_disk.XXXXXX", dir);
    int fd = mkstemp(path);
    if (fd < 0) {
        perror(path);
        exit(1);
    }
    size_t chunk = 8 << 20;
    char *buf = malloc(chunk);
    fs_rng_t r = fs_rng_make(42, 0);
    for (size_t i = 0; i < chunk / 8; i++) ((uint64_t *)buf)[i] = fs_rng_next(&r);
    for (uint64_t off = 0; off < bytes; off += chunk) {
        size_t n = bytes - off < chunk ? (size_t)(bytes - off) : chunk;
        if (pwrite(fd, buf, n, (off_t)off) != (ssize_t)n) {
            perror("bench_disk: writing the file");
            exit(1);
        }
    }
    fdatasync(fd);
    free(buf);
    return fd;
}

/* ---- fio ---------------------------------------------------------------------- */

/* fio's random-read IOPS on path at block size bs and depth; exits if fio
 * cannot run. */
static double fio_iops(const char *path, uint64_t bytes, int depth, int seconds)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "fio --name=randread --filename=%s --rw=randread --bs=%d --iodepth=%d --ioengine=io_uring "
             "--direct=1 --size=%llu --runtime=%d --time_based --numjobs=1 --output-format=json 2>&1",
             path, ROW, depth, (unsigned long long)bytes, seconds);
    FILE *p = popen(cmd, "r");
    static char out[1 << 16];
    size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;
    int rc = p ? pclose(p) : -1;
    out[n] = 0;
    const char *read = strstr(out, "\"read\" :"), *iops = read ? strstr(read, "\"iops\" :") : NULL;
    if (rc != 0 || !iops) {
        fprintf(stderr, "bench_disk: fio failed (apt-get install fio): %s\n%.2000s\n", cmd, out);
        exit(1);
    }
    return atof(iops + strlen("\"iops\" :"));
}

/* ---- fs_diskio ---------------------------------------------------------------- */

typedef struct {
    double iops, rows_per_s, amplification;
} reads_t;

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Batches of batch_rows random rows for `seconds`, through a reader of
 * depth `depth` on the rows after `offset`. */
static reads_t diskio_run(int fd, uint64_t offset, uint64_t rows, int depth, size_t batch_rows, double seconds)
{
    fs_error_t err = {0};
    fs_diskio_t *d;
    fs_diskio_opts_t o = {.queue_depth = (unsigned)depth};
    CHECK(fs_diskio_open(fd, "bench file", offset, ROW, rows, &o, &d, &err));
    int64_t *ids = malloc(batch_rows * sizeof *ids);
    char *out = malloc(batch_rows * ROW);
    void **dst = malloc(batch_rows * sizeof *dst);
    fs_rng_t r = fs_rng_make((uint64_t)depth * 7919 + offset, 1);
    double t0 = bench_now(), t = t0;
    uint64_t got = 0;
    while (t - t0 < seconds) {
        for (size_t i = 0; i < batch_rows; i++) ids[i] = (int64_t)fs_rng_below(&r, rows);
        qsort(ids, batch_rows, sizeof *ids, cmp_i64);
        size_t n = 0;
        for (size_t i = 0; i < batch_rows; i++)
            if (n == 0 || ids[i] != ids[n - 1]) ids[n++] = ids[i];
        for (size_t i = 0; i < n; i++) dst[i] = out + i * ROW;
        CHECK(fs_diskio_read(d, ids, dst, n, &err));
        got += n;
        t = bench_now();
    }
    fs_diskio_stats_t s;
    fs_diskio_stats(d, &s);
    static int described;
    if (!described++) fprintf(stderr, "bench_disk: fs_diskio: %s\n", fs_diskio_describe(d));
    reads_t res = {(double)s.reads / (t - t0), (double)got / (t - t0), (double)s.bytes_read / (double)s.bytes_useful};
    fs_diskio_close(d);
    free(ids), free(out), free(dst);
    return res;
}

/* ---- batches from a disk table -------------------------------------------------- */

typedef struct {
    double seconds;
    uint64_t rows;
} pass_t;

/* `batches` sampled batches gathered through `view`, as a loader makes them. */
static pass_t loader_pass(const fs_dataset_t *ds, const fs_table_view_t *view, const int64_t *seeds, int batches)
{
    fs_error_t err = {0};
    fs_csr_view_t g;
    fs_csr_view_init(&g, ds->num_nodes, ds->indptr, ds->indices, ds->index_dtype, NULL);
    fs_sampler_t *s;
    CHECK(fs_sampler_create(&s, &err));
    float *out = NULL;
    size_t cap = 0;
    pass_t p = {0};
    double t0 = bench_now();
    for (int b = 0; b < batches; b++) {
        fs_sample_req_t req = SAMPLE_REQ(.num_hops = 3, .fanout = {15, 10, 5}, .seed = (uint64_t)b + 1);
        fs_sample_result_t res;
        CHECK(fs_sample_cpu(s, &g, seeds + (size_t)b * 1024, 1024, &req, &res, NULL, &err));
        size_t need = (size_t)res.num_nodes * (size_t)view->dim;
        if (need > cap) free(out), out = malloc((cap = need) * sizeof *out);
        CHECK(fs_gather_cpu(view, res.nodes, res.num_nodes, FS_DTYPE_F32, out, NULL, NULL, &err));
        p.rows += (uint64_t)res.num_nodes;
    }
    p.seconds = bench_now() - t0;
    free(out);
    fs_sampler_destroy(s);
    return p;
}

static void disk_batches(const fs_dataset_t *ds, const char *dir, int batches, const int64_t *seeds)
{
    fs_error_t err = {0};
    const fs_table_t *t = NULL;
    for (int i = 0; i < ds->num_tables; i++)
        if (strcmp(ds->tables[i].name, "feat") == 0) t = &ds->tables[i];
    if (!t) {
        fprintf(stderr, "bench_disk: the dataset has no table 'feat': no batches from disk\n");
        return;
    }
    int fd;
    int64_t offset;
    if (fs_dataset_locate(ds, t->data, &fd, &offset) != FS_OK) {
        fprintf(stderr, "bench_disk: table 'feat' is in no file of the dataset\n");
        exit(1);
    }
    char sums_path[4200];
    snprintf(sums_path, sizeof sums_path, "%s/bench_disk.%d.rowsums", dir, (int)getpid());
    fs_rowsums_spec_t spec = {.dataset = ds->name, .table = t->name, .data_offset = (uint64_t)offset,
                              .row_bytes = t->row_bytes, .rows = t->rows};
    fs_rowsums_t *sums;
    fs_rowsums_origin_t origin;
    double t0 = bench_now();
    CHECK(fs_rowsums_load(fd, t->file, sums_path, &spec, &sums, &origin, NULL, 0, &err));
    double sums_s = bench_now() - t0;
    uint64_t slots = (uint64_t)t->rows / 10;
    size_t bytes = fs_rowcache_region_bytes(slots, t->row_bytes);
    void *region = aligned_alloc(FS_ROWCACHE_ALIGN, (bytes + FS_ROWCACHE_ALIGN - 1) / FS_ROWCACHE_ALIGN * FS_ROWCACHE_ALIGN);
    fs_rowcache_t *cache;
    CHECK(fs_rowcache_format(region, bytes, slots, t->row_bytes, FS_CACHE_SIEVE, &err));
    CHECK(fs_rowcache_attach(region, bytes, &cache, &err));
    fs_disktable_opts_t o = {.fd = fd, .what = t->file, .data_offset = (uint64_t)offset, .row_bytes = t->row_bytes,
                             .rows = t->rows, .cache = cache, .sums = sums};
    fs_disktable_t *dt;
    CHECK(fs_disktable_open(&o, &dt, &err));
    fs_table_view_t mem = {.dtype = t->dtype, .num_rows = t->rows, .dim = t->dim, .row_bytes = t->row_bytes,
                           .num_tiers = 1};
    mem.tier[0] = (fs_tier_ref_t){.kind = FS_TIER_HOST, .device = -1, .base = t->data, .rows = t->rows};
    fs_table_remote_t hook = {fs_disktable_rows, dt};
    fs_table_view_t disk = mem;
    disk.num_tiers = 0, disk.remote = &hook;
    pass_t in_memory = loader_pass(ds, &mem, seeds, batches);
    pass_t cold = loader_pass(ds, &disk, seeds, batches);
    fs_disktable_stats_t after_cold, st;
    fs_disktable_stats(dt, &after_cold);
    pass_t warm = loader_pass(ds, &disk, seeds, batches);
    fs_disktable_stats(dt, &st);
    double rows2 = (double)(st.rows - after_cold.rows), hits2 = (double)(st.cache_hits - after_cold.cache_hits);
    printf("RESULT bench=disk_batches table_bytes=%llu cache_pct=10 offset=%lld batches=%d batches_per_s_cold=%.2f "
           "batches_per_s=%.2f in_memory_batches_per_s=%.2f ratio_vs_in_memory=%.3f hit_rate=%.3f "
           "disk_rows_per_batch=%.0f read_amplification=%.3f checksum_failures=%llu rowsums_build_s=%.2f\n",
           (unsigned long long)(t->rows * t->row_bytes), (long long)offset, batches, batches / cold.seconds,
           batches / warm.seconds, batches / in_memory.seconds, in_memory.seconds / warm.seconds, hits2 / rows2,
           (double)(st.disk_rows - after_cold.disk_rows) / batches,
           (double)st.disk_bytes / ((double)st.disk_rows * (double)t->row_bytes),
           (unsigned long long)st.checksum_failures, sums_s);
    fprintf(stderr, "bench_disk: disk table: %s\n", fs_disktable_describe(dt));
    fs_disktable_close(dt);
    free(region);
    fs_rowsums_close(sums);
    unlink(sums_path);
}

/* ---- the cache's policies ------------------------------------------------------ */

/* The seeds of `batches` batches of 1,024: one epoch's shuffle of the
 * train split (all nodes when there is none), wrapping round. */
static int64_t *batch_seeds(const fs_dataset_t *ds, int batches)
{
    const fs_idset_t *train = NULL;
    for (int i = 0; i < ds->num_splits; i++)
        if (strcmp(ds->splits[i].name, "train") == 0) train = &ds->splits[i];
    int64_t pool_n = train ? train->count : ds->num_nodes;
    int64_t *order = malloc((size_t)pool_n * sizeof *order);
    for (int64_t i = 0; i < pool_n; i++) order[i] = train ? train->ids[i] : i;
    fs_rng_t r = fs_rng_make(7, 2);
    for (int64_t i = pool_n - 1; i > 0; i--) { /* one epoch's shuffle */
        int64_t j = (int64_t)fs_rng_below(&r, (uint64_t)i + 1), t = order[i];
        order[i] = order[j], order[j] = t;
    }
    int64_t *seeds = malloc((size_t)batches * 1024 * sizeof *seeds);
    for (int64_t i = 0; i < (int64_t)batches * 1024; i++) seeds[i] = order[i % pool_n];
    free(order);
    return seeds;
}

/* The distinct nodes of each batch, concatenated. */
static int64_t *sampled_trace(const fs_dataset_t *ds, const int64_t *seeds, int batches, size_t **batch_end)
{
    fs_error_t err = {0};
    fs_csr_view_t g;
    fs_csr_view_init(&g, ds->num_nodes, ds->indptr, ds->indices, ds->index_dtype, NULL);
    fs_sampler_t *s;
    CHECK(fs_sampler_create(&s, &err));
    size_t cap = 1 << 20, len = 0;
    int64_t *trace = malloc(cap * sizeof *trace);
    *batch_end = malloc((size_t)batches * sizeof **batch_end);
    for (int b = 0; b < batches; b++) {
        fs_sample_req_t req = SAMPLE_REQ(.num_hops = 3, .fanout = {15, 10, 5}, .seed = (uint64_t)b + 1);
        fs_sample_result_t res;
        CHECK(fs_sample_cpu(s, &g, seeds + (size_t)b * 1024, 1024, &req, &res, NULL, &err));
        if (len + (size_t)res.num_nodes > cap) trace = realloc(trace, (cap = 2 * (len + (size_t)res.num_nodes)) * sizeof *trace);
        memcpy(trace + len, res.nodes, (size_t)res.num_nodes * sizeof *trace);
        len += (size_t)res.num_nodes;
        (*batch_end)[b] = len;
    }
    fs_sampler_destroy(s);
    return trace;
}

static double miss_rate(fs_cache_policy_t p, uint64_t slots, const int64_t *trace, const size_t *ends, int batches)
{
    fs_error_t err = {0};
    uint64_t misses, accesses;
    CHECK(fs_rowcache_simulate(p, slots, trace, ends, (size_t)batches, &misses, &accesses, &err));
    return (double)misses / (double)accesses;
}

/* The same trace through a SIEVE cache whose first `hot` slots hold the
 * highest-degree rows, pinned for good (the placement's in-degree
 * estimator, as a static cache would hold them): what a hot set in memory
 * would save over SIEVE alone. */
static const int64_t *by_degree_indptr;
static int higher_degree(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    int64_t dx = by_degree_indptr[x + 1] - by_degree_indptr[x], dy = by_degree_indptr[y + 1] - by_degree_indptr[y];
    return (dy > dx) - (dy < dx);
}

static double miss_rate_hot(const fs_dataset_t *ds, uint64_t slots, double hot, const int64_t *trace,
                            const size_t *ends, int batches)
{
    fs_error_t err = {0};
    size_t bytes = fs_rowcache_region_bytes(slots, 8);
    void *region = aligned_alloc(FS_ROWCACHE_ALIGN, (bytes + FS_ROWCACHE_ALIGN - 1) / FS_ROWCACHE_ALIGN * FS_ROWCACHE_ALIGN);
    fs_rowcache_t *c;
    CHECK(fs_rowcache_format(region, bytes, slots, 8, FS_CACHE_SIEVE, &err));
    CHECK(fs_rowcache_attach(region, bytes, &c, &err));
    int64_t n = ds->num_nodes, k = (int64_t)((double)slots * hot); /* a batch has at most n distinct rows */
    int64_t *ids = malloc((size_t)n * sizeof *ids), *slot = malloc((size_t)n * sizeof *slot);
    uint8_t *outcome = malloc((size_t)n);
    for (int64_t v = 0; v < n; v++) ids[v] = v;
    by_degree_indptr = ds->indptr;
    qsort(ids, (size_t)n, sizeof *ids, higher_degree);
    fs_rowcache_acquire(c, ids, (size_t)k, slot, outcome); /* kept pinned: never evicted */
    fs_rowcache_publish(c, slot, (size_t)k, NULL);
    uint64_t misses = 0;
    for (int b = 0; b < batches; b++) {
        size_t from = b ? ends[b - 1] : 0, m = ends[b] - from;
        fs_rowcache_acquire(c, trace + from, m, slot, outcome);
        fs_rowcache_publish(c, slot, m, NULL);
        for (size_t i = 0; i < m; i++) misses += outcome[i] != FS_ROWCACHE_HIT;
        fs_rowcache_release(c, slot, m);
    }
    free(ids), free(slot), free(outcome), free(region);
    return (double)misses / (double)ends[batches - 1];
}

int main(int argc, char **argv)
{
    const char *dir = bench_str(argc, argv, "--dir", "/var/tmp");
    uint64_t bytes = (uint64_t)bench_arg(argc, argv, "--file-mib", 1024) << 20;
    int seconds = (int)bench_arg(argc, argv, "--seconds", 5), rounds = (int)bench_arg(argc, argv, "--rounds", 2);
    int depth = (int)bench_arg(argc, argv, "--depth", FS_DISKIO_DEFAULT_DEPTH);
    size_t batch_rows = (size_t)bench_arg(argc, argv, "--batch-rows", 4096);
    int batches = (int)bench_arg(argc, argv, "--batches", 200);
    uint64_t rows = (bytes - HEADER) / ROW;
    char path[4096];
    int fd = make_file(dir, HEADER + rows * ROW, path, sizeof path);

    /* 1. IOPS against fio, rounds interleaved so both see the same disk. */
    double fio = 0, ours = 0, rows_per_s = 0;
    for (int k = 0; k < rounds; k++) {
        fio += fio_iops(path, HEADER + rows * ROW, depth, seconds);
        reads_t r = diskio_run(fd, HEADER, rows, depth, batch_rows, seconds);
        ours += r.iops, rows_per_s += r.rows_per_s;
    }
    fio /= rounds, ours /= rounds, rows_per_s /= rounds;
    printf("RESULT bench=disk_iops depth=%d block=%d iops=%.0f fio_iops=%.0f rows_per_s=%.0f ratio_iops_vs_fio=%.3f\n",
           depth, ROW, ours, fio, rows_per_s, ours / fio);
    for (int q = 1; q <= 256; q *= 4) {
        double f = fio_iops(path, HEADER + rows * ROW, q, 2);
        reads_t r = diskio_run(fd, HEADER, rows, q, batch_rows, 2);
        printf("RESULT bench=disk_depth depth=%d iops=%.0f fio_iops=%.0f ratio_iops_vs_fio=%.3f\n", q, r.iops, f,
               r.iops / f);
    }

    /* 2. Disk bytes per useful byte: rows aligned, and after a 128 B header. */
    reads_t aligned = diskio_run(fd, HEADER, rows, depth, batch_rows, 2);
    reads_t npy128 = diskio_run(fd, 128, rows, depth, batch_rows, 2);
    printf("RESULT bench=disk_amplification row_bytes=%d read_amplification=%.3f read_amplification_offset128=%.3f\n",
           ROW, aligned.amplification, npy128.amplification);
    close(fd);
    unlink(path);

    /* 3. Miss rates on one trace. */
    fs_error_t err = {0};
    fs_dataset_t *ds;
    CHECK(fs_dataset_open(bench_dataset_dim(argc, argv, (int)bench_arg(argc, argv, "--scale", 18), 128), 0, 0, &ds,
                          &err));
    size_t *ends;
    int64_t *seeds = batch_seeds(ds, batches);
    int64_t *trace = sampled_trace(ds, seeds, batches, &ends);
    double sieve10 = 0, lru10 = 0;
    const int pct[] = {5, 10, 20};
    for (int i = 0; i < 3; i++) {
        uint64_t slots = (uint64_t)ds->num_nodes * (uint64_t)pct[i] / 100;
        double s = miss_rate(FS_CACHE_SIEVE, slots, trace, ends, batches);
        double l = miss_rate(FS_CACHE_LRU, slots, trace, ends, batches);
        double c = miss_rate(FS_CACHE_CLOCK, slots, trace, ends, batches);
        double h50 = miss_rate_hot(ds, slots, 0.5, trace, ends, batches);
        double h100 = miss_rate_hot(ds, slots, 1.0, trace, ends, batches);
        printf("RESULT bench=disk_cache cache_pct=%d slots=%llu accesses=%zu miss_rate_sieve=%.4f miss_rate_lru=%.4f "
               "miss_rate_clock=%.4f ratio_sieve_vs_lru=%.3f miss_rate_hot_half=%.4f miss_rate_degree_static=%.4f "
               "ratio_degree_static_vs_sieve=%.3f\n",
               pct[i], (unsigned long long)slots, ends[batches - 1], s, l, c, s / l, h50, h100, h100 / s);
        if (pct[i] == 10) sieve10 = s, lru10 = l;
    }
    printf("RESULT bench=disk ratio_iops_vs_fio=%.3f read_amplification=%.3f miss_rate_sieve=%.4f miss_rate_lru=%.4f\n",
           ours / fio, aligned.amplification, sieve10, lru10);
    free(trace), free(ends);

    /* 4. Batches with the table on disk. */
    disk_batches(ds, dir, batches, seeds);
    free(seeds);
    fs_dataset_close(ds);
    return 0;
}
