/* fs_diskio.c — a batch of rows read from disk: extents, io_uring, the pread
 * pool (the why: fs_diskio.h).
 *
 * A call turns its rows into extents (aligned file ranges, each covering
 * one run of rows whose aligned ranges touch), then keeps up to depth
 * extents in flight, each in a bounce buffer of its own: O_DIRECT wants
 * aligned memory and whole aligned blocks, and the rows' destinations are
 * neither. When an extent completes its rows are copied out. */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_diskio.h"
#include "fs_pool.h"

#define PREAD_THREADS_MAX 32 /* a pread thread per read in flight, up to this */

typedef struct {
    uint64_t start; /* aligned file offset */
    uint64_t len;   /* aligned length read */
    uint64_t need;  /* bytes from start that hold rows: a read ending before this is short */
    size_t first;   /* rows[first, last) lie in it */
    size_t last;
} extent_t;

typedef struct {
    int64_t ext;   /* the extent in flight here, -1 when free */
    uint64_t done; /* bytes of it read so far */
} inflight_t;

struct fs_diskio {
    int fd;
    char what[256];
    uint64_t data_offset, row_bytes, rows;
    uint32_t align;    /* read offsets and lengths are multiples of this; 1 when buffered */
    unsigned depth;    /* extents in flight */
    uint64_t max_read; /* bytes of each bounce buffer */
    fs_diskio_backend_t backend;
    struct io_uring ring;
    pid_t ring_thread; /* the thread the ring was made in: the only one that may submit to it */
    int ring_live;     /* the ring exists (io_uring_queue_exit is owed) */
    int broken;      /* the ring failed: no read can be trusted to complete */
    fs_pool_t *pool; /* the pread backend */
    char *bounce;    /* depth buffers of max_read (uring) or one per pool thread (pread) */
    extent_t *ext;
    size_t ext_cap;
    inflight_t *slot; /* depth of them (uring) */
    unsigned *free;   /* the slots not in flight, a stack (uring) */
    unsigned nfree;
    _Atomic uint64_t reads, bytes_read, bytes_useful, short_reads;
    char describe[256];
};

static uint64_t align_down(uint64_t x, uint32_t a) { return x - x % a; }
static uint64_t align_up(uint64_t x, uint32_t a) { return align_down(x + a - 1, a); }

/* ---- opening --------------------------------------------------------------- */

/* The file system's direct-I/O offset alignment for fd, or 0 where it has
 * none (statx says nothing, or the kernel predates STATX_DIOALIGN). */
static uint32_t dio_alignment(int fd)
{
    struct statx sx;
    if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) != 0 || !(sx.stx_mask & STATX_DIOALIGN)) return 0;
    uint32_t a = sx.stx_dio_offset_align > sx.stx_dio_mem_align ? sx.stx_dio_offset_align : sx.stx_dio_mem_align;
    return a;
}

/* Our own descriptor of the caller's file: O_DIRECT where the file system
 * takes it and the caller did not ask for buffered reads. */
static fs_status_t reopen(fs_diskio_t *d, int fd, int buffered, const char **why_buffered, fs_error_t *err)
{
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    uint32_t align = buffered ? 0 : dio_alignment(fd);
    *why_buffered = buffered ? "asked" : "the file system has no direct I/O";
    if (align) {
        d->fd = open(proc, O_RDONLY | O_CLOEXEC | O_DIRECT);
        if (d->fd >= 0) {
            d->align = align;
            return FS_OK;
        }
        if (errno != EINVAL) return fs_error(err, FS_ERR_IO, "disk reads: reopening %s: %s", d->what, strerror(errno));
        *why_buffered = "O_DIRECT refused";
    }
    d->fd = open(proc, O_RDONLY | O_CLOEXEC);
    if (d->fd < 0) return fs_error(err, FS_ERR_IO, "disk reads: reopening %s: %s", d->what, strerror(errno));
    d->align = 1;
    return FS_OK;
}

/* Why io_uring cannot be used here, for the log and the errors. */
static const char *uring_refusal(int e)
{
    FILE *f = fopen("/proc/sys/kernel/io_uring_disabled", "re");
    int disabled = 0;
    if (f) {
        if (fscanf(f, "%d", &disabled) != 1) disabled = 0;
        fclose(f);
    }
    if (e == EPERM && disabled) return "kernel.io_uring_disabled is set";
    if (e == EPERM) return "io_uring_setup not permitted (a seccomp profile?)";
    if (e == ENOSYS) return "the kernel has no io_uring";
    return strerror(e);
}

/* A ring for the calling thread. DEFER_TASKRUN (with SINGLE_ISSUER, which
 * it needs) runs completions only when this thread asks for them, so they
 * never interrupt it (bench_disk: 0.92-0.96x fio's IOPS with it, 0.85-0.89x
 * with COOP_TASKRUN alone, 0.75-0.79x with neither); kernels before 6.1
 * refuse it, then COOP_TASKRUN (5.19), then nothing. A ring with
 * SINGLE_ISSUER serves one thread only: fs_diskio_read makes another when
 * a different thread calls (ring_for_caller). */
static int ring_init(fs_diskio_t *d)
{
    const unsigned flags[] = {IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, IORING_SETUP_COOP_TASKRUN, 0};
    int r = -EINVAL;
    for (size_t i = 0; i < sizeof flags / sizeof flags[0] && r == -EINVAL; i++)
        r = io_uring_queue_init(d->depth, &d->ring, flags[i]);
    d->ring_thread = gettid();
    d->ring_live = r == 0;
    return r;
}

static fs_status_t ring_for_caller(fs_diskio_t *d, fs_error_t *err)
{
    if (d->backend != FS_DISKIO_URING || d->ring_thread == gettid()) return FS_OK;
    io_uring_queue_exit(&d->ring); /* empty: every call waits for all its reads */
    d->ring_live = 0;
    int r = ring_init(d);
    if (r == 0) return FS_OK;
    d->broken = 1;
    return fs_error(err, FS_ERR_IO, "disk reads: %s: a ring for another thread: %s", d->what, strerror(-r));
}

static fs_status_t start_uring(fs_diskio_t *d, fs_error_t *err)
{
    d->slot = calloc(d->depth, sizeof *d->slot);
    d->free = calloc(d->depth, sizeof *d->free);
    if (!d->slot || !d->free) return fs_error(err, FS_ERR_NOMEM, "disk reads: no memory for %u reads in flight", d->depth);
    for (unsigned i = 0; i < d->depth; i++) d->slot[i].ext = -1, d->free[d->nfree++] = d->depth - 1 - i;
    return FS_OK;
}

static fs_status_t start_pread(fs_diskio_t *d, fs_error_t *err)
{
    int threads = (int)(d->depth < PREAD_THREADS_MAX ? d->depth : PREAD_THREADS_MAX);
    return fs_pool_create(threads, &d->pool, err);
}

/* io_uring where allowed; otherwise the pread pool, unless the caller
 * insisted on io_uring. */
static fs_status_t start_backend(fs_diskio_t *d, fs_diskio_backend_t want, const char **refusal, fs_error_t *err)
{
    *refusal = NULL;
    if (want != FS_DISKIO_PREAD) {
        int r = ring_init(d);
        if (r == 0) {
            d->backend = FS_DISKIO_URING;
            return start_uring(d, err);
        }
        *refusal = uring_refusal(-r);
        if (want == FS_DISKIO_URING)
            return fs_error(err, FS_ERR_UNSUPPORTED, "disk reads: io_uring refused: %s", *refusal);
    }
    d->backend = FS_DISKIO_PREAD;
    return start_pread(d, err);
}

static void describe(fs_diskio_t *d, const char *refusal, const char *why_buffered)
{
    char io[128], mode[96];
    if (d->backend == FS_DISKIO_URING) snprintf(io, sizeof io, "io_uring, depth %u", d->depth);
    else if (refusal) snprintf(io, sizeof io, "pread pool of %d threads (io_uring refused: %s)", fs_pool_size(d->pool), refusal);
    else snprintf(io, sizeof io, "pread pool of %d threads", fs_pool_size(d->pool));
    if (d->align > 1) snprintf(mode, sizeof mode, "O_DIRECT at %u B", d->align);
    else snprintf(mode, sizeof mode, "buffered (%s)", why_buffered);
    snprintf(d->describe, sizeof d->describe, "%s, %s", io, mode);
}

fs_status_t fs_diskio_open(int fd, const char *what, uint64_t data_offset, uint64_t row_bytes, uint64_t rows,
                           const fs_diskio_opts_t *opts, fs_diskio_t **out, fs_error_t *err)
{
    fs_diskio_opts_t o = opts ? *opts : (fs_diskio_opts_t){0};
    *out = NULL;
    if (row_bytes == 0) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "disk reads: %s: rows of 0 bytes", what);
    if (rows > (UINT64_MAX - data_offset) / row_bytes)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "disk reads: %s: %llu rows of %llu B overflow", what,
                        (unsigned long long)rows, (unsigned long long)row_bytes);
    if (o.queue_depth > FS_DISKIO_MAX_DEPTH)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "disk reads: queue depth %u is over %d", o.queue_depth,
                        FS_DISKIO_MAX_DEPTH);
    fs_diskio_t *d = calloc(1, sizeof *d);
    if (!d) return fs_error(err, FS_ERR_NOMEM, "disk reads: no memory");
    d->fd = -1;
    snprintf(d->what, sizeof d->what, "%s", what);
    d->data_offset = data_offset, d->row_bytes = row_bytes, d->rows = rows;
    d->depth = o.queue_depth ? o.queue_depth : FS_DISKIO_DEFAULT_DEPTH;
    const char *why_buffered = NULL, *refusal = NULL;
    fs_status_t st = reopen(d, fd, o.buffered, &why_buffered, err);
    if (st == FS_OK) {
        /* Room for the largest row however it straddles alignment blocks. */
        uint64_t max_read = o.max_read ? o.max_read : FS_DISKIO_DEFAULT_MAX_READ;
        uint64_t one_row = align_up(row_bytes, d->align) + d->align;
        d->max_read = align_up(max_read > one_row ? max_read : one_row, d->align > 4096 ? d->align : 4096);
        st = start_backend(d, o.backend, &refusal, err);
    }
    size_t buffers = d->backend == FS_DISKIO_URING ? d->depth : (size_t)fs_pool_size(d->pool);
    if (st == FS_OK && posix_memalign((void **)&d->bounce, 4096, buffers * d->max_read) != 0) {
        d->bounce = NULL;
        st = fs_error(err, FS_ERR_NOMEM, "disk reads: no memory for %zu buffers of %llu B", buffers,
                      (unsigned long long)d->max_read);
    }
    if (st != FS_OK) {
        fs_diskio_close(d);
        return st;
    }
    describe(d, refusal, why_buffered);
    *out = d;
    return FS_OK;
}

void fs_diskio_close(fs_diskio_t *d)
{
    if (!d) return;
    if (d->ring_live) io_uring_queue_exit(&d->ring);
    fs_pool_destroy(d->pool);
    if (d->fd >= 0) close(d->fd);
    free(d->bounce);
    free(d->ext);
    free(d->slot);
    free(d->free);
    free(d);
}

/* ---- extents ----------------------------------------------------------------- */

static fs_status_t check_rows(const fs_diskio_t *d, const int64_t *rows, size_t n, fs_error_t *err)
{
    for (size_t i = 0; i < n; i++) {
        if (rows[i] < 0 || (uint64_t)rows[i] >= d->rows)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "disk reads: %s: row %lld at position %zu is not in [0, %llu)",
                            d->what, (long long)rows[i], i, (unsigned long long)d->rows);
        if (i > 0 && rows[i] <= rows[i - 1])
            return fs_error(err, FS_ERR_INVALID_ARGUMENT,
                            "disk reads: %s: rows must ascend without repeats; position %zu has %lld after %lld",
                            d->what, i, (long long)rows[i], (long long)rows[i - 1]);
    }
    return FS_OK;
}

static uint64_t row_offset(const fs_diskio_t *d, int64_t row) { return d->data_offset + (uint64_t)row * d->row_bytes; }

/* Cuts the rows into extents: a row joins the current extent when its
 * aligned range touches it and the whole still fits a bounce buffer. */
static fs_status_t make_extents(fs_diskio_t *d, const int64_t *rows, size_t n, size_t *count, fs_error_t *err)
{
    if (n > d->ext_cap) {
        extent_t *e = realloc(d->ext, n * sizeof *e);
        if (!e) return fs_error(err, FS_ERR_NOMEM, "disk reads: no memory for %zu extents", n);
        d->ext = e, d->ext_cap = n;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t a = align_down(row_offset(d, rows[i]), d->align);
        uint64_t end = row_offset(d, rows[i]) + d->row_bytes, b = align_up(end, d->align);
        extent_t *cur = k ? &d->ext[k - 1] : NULL;
        if (cur && a <= cur->start + cur->len && b - cur->start <= d->max_read) {
            cur->len = b - cur->start, cur->need = end - cur->start, cur->last = i + 1;
            continue;
        }
        d->ext[k++] = (extent_t){.start = a, .len = b - a, .need = end - a, .first = i, .last = i + 1};
    }
    *count = k;
    return FS_OK;
}

/* Copies an extent's rows from its buffer to their destinations. */
static void deliver(const fs_diskio_t *d, const extent_t *e, const char *buf, const int64_t *rows, void *const *dst)
{
    for (size_t i = e->first; i < e->last; i++) memcpy(dst[i], buf + (row_offset(d, rows[i]) - e->start), d->row_bytes);
}

static fs_status_t short_read(const fs_diskio_t *d, const extent_t *e, uint64_t done, const int64_t *rows, fs_error_t *err)
{
    /* The first row not wholly read names the place. */
    size_t i = e->first;
    while (i + 1 < e->last && row_offset(d, rows[i]) + d->row_bytes <= e->start + done) i++;
    return fs_error(err, FS_ERR_IO, "disk reads: %s ends at offset %llu, before row %lld (bytes %llu..%llu): truncated?",
                    d->what, (unsigned long long)(e->start + done), (long long)rows[i],
                    (unsigned long long)row_offset(d, rows[i]), (unsigned long long)(row_offset(d, rows[i]) + d->row_bytes));
}

static fs_status_t read_error(const fs_diskio_t *d, const extent_t *e, uint64_t done, int e_no, fs_error_t *err)
{
    return fs_error(err, FS_ERR_IO, "disk reads: %s: read of %llu B at offset %llu: %s", d->what,
                    (unsigned long long)(e->len - done), (unsigned long long)(e->start + done), strerror(e_no));
}

/* ---- io_uring ---------------------------------------------------------------- */

/* Queues the rest of slot s's extent, from its last aligned point read. */
static void queue_read(fs_diskio_t *d, unsigned s)
{
    inflight_t *f = &d->slot[s];
    const extent_t *e = &d->ext[f->ext];
    f->done = align_down(f->done, d->align); /* O_DIRECT continues at an aligned offset */
    struct io_uring_sqe *sqe = io_uring_get_sqe(&d->ring); /* never NULL: at most depth in flight */
    io_uring_prep_read(sqe, d->fd, d->bounce + (size_t)s * d->max_read + f->done, (unsigned)(e->len - f->done),
                       e->start + f->done);
    io_uring_sqe_set_data64(sqe, s);
    atomic_fetch_add_explicit(&d->reads, 1, memory_order_relaxed);
}

/* One completion: the extent is done (rows delivered, slot freed), needs
 * more (queued again), or failed (*st set, slot freed). */
static void complete(fs_diskio_t *d, struct io_uring_cqe *cqe, const int64_t *rows, void *const *dst,
                     unsigned *inflight, fs_status_t *st, fs_error_t *err)
{
    unsigned s = (unsigned)io_uring_cqe_get_data64(cqe);
    inflight_t *f = &d->slot[s];
    const extent_t *e = &d->ext[f->ext];
    int res = cqe->res;
    if (res == -EINTR || res == -EAGAIN) return queue_read(d, s);
    if (res > 0) {
        atomic_fetch_add_explicit(&d->bytes_read, (uint64_t)res, memory_order_relaxed);
        f->done += (uint64_t)res;
        if (f->done < e->need) {
            atomic_fetch_add_explicit(&d->short_reads, 1, memory_order_relaxed);
            return queue_read(d, s);
        }
        if (*st == FS_OK) deliver(d, e, d->bounce + (size_t)s * d->max_read, rows, dst);
    } else if (*st == FS_OK) {
        *st = res < 0 ? read_error(d, e, f->done, -res, err) : short_read(d, e, f->done, rows, err);
    }
    f->ext = -1;
    d->free[d->nfree++] = s;
    (*inflight)--;
}

static fs_status_t read_uring(fs_diskio_t *d, const int64_t *rows, void *const *dst, size_t extents, fs_error_t *err)
{
    fs_status_t st = FS_OK;
    size_t next = 0;
    unsigned inflight = 0;
    while (inflight > 0 || (next < extents && st == FS_OK)) {
        while (d->nfree > 0 && next < extents && st == FS_OK) {
            unsigned s = d->free[--d->nfree];
            d->slot[s] = (inflight_t){.ext = (int64_t)next++, .done = 0};
            queue_read(d, s);
            inflight++;
        }
        struct io_uring_cqe *cqe;
        /* Waking for an eighth of the reads in flight, not each one, submits
         * them in bigger batches: one doorbell of the virtio queue per batch
         * (bench_disk: 0.92-0.95x fio against 0.87-0.88x waking for one). */
        unsigned want = inflight / 8;
        int r = io_uring_submit_and_wait(&d->ring, want ? want : 1);
        if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY) {
            /* The ring itself failed: reads may still land in the buffers,
             * so this reader is done for (fs_diskio_read refuses from now). */
            d->broken = 1;
            return fs_error(err, FS_ERR_IO, "disk reads: %s: io_uring_submit: %s", d->what, strerror(-r));
        }
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&d->ring, head, cqe) {
            complete(d, cqe, rows, dst, &inflight, &st, err);
            seen++;
        }
        io_uring_cq_advance(&d->ring, seen);
    }
    return st;
}

/* ---- the pread pool ---------------------------------------------------------- */

typedef struct {
    fs_diskio_t *d;
    const int64_t *rows;
    void *const *dst;
    _Atomic int failed;
    fs_status_t st;
    fs_error_t err; /* the first failure's */
} pread_job_t;

/* pread until the extent's rows are in buf; 0, or the errno (-1: the file ended). */
static int pread_extent(fs_diskio_t *d, const extent_t *e, char *buf, uint64_t *done)
{
    *done = 0;
    while (*done < e->need) {
        *done = align_down(*done, d->align);
        ssize_t r = pread(d->fd, buf + *done, e->len - *done, (off_t)(e->start + *done));
        if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        atomic_fetch_add_explicit(&d->reads, 1, memory_order_relaxed);
        if (r < 0) return errno;
        if (r == 0) return -1;
        atomic_fetch_add_explicit(&d->bytes_read, (uint64_t)r, memory_order_relaxed);
        if (*done + (uint64_t)r < e->need) atomic_fetch_add_explicit(&d->short_reads, 1, memory_order_relaxed);
        *done += (uint64_t)r;
    }
    return 0;
}

static void pread_range(void *ctx, int64_t begin, int64_t end, int worker)
{
    pread_job_t *job = ctx;
    fs_diskio_t *d = job->d;
    char *buf = d->bounce + (size_t)worker * d->max_read;
    for (int64_t x = begin; x < end && !atomic_load_explicit(&job->failed, memory_order_relaxed); x++) {
        const extent_t *e = &d->ext[x];
        uint64_t done;
        int r = pread_extent(d, e, buf, &done);
        if (r == 0) {
            deliver(d, e, buf, job->rows, job->dst);
            continue;
        }
        if (atomic_exchange(&job->failed, 1)) return; /* only the first failure is reported */
        job->st = r > 0 ? read_error(d, e, done, r, &job->err) : short_read(d, e, done, job->rows, &job->err);
    }
}

static fs_status_t read_pread(fs_diskio_t *d, const int64_t *rows, void *const *dst, size_t extents, fs_error_t *err)
{
    pread_job_t job = {.d = d, .rows = rows, .dst = dst, .st = FS_OK};
    fs_pool_run(d->pool, (int64_t)extents, 1, pread_range, &job);
    if (job.st != FS_OK && err) *err = job.err;
    return job.st;
}

/* ---- the calls --------------------------------------------------------------- */

fs_status_t fs_diskio_read(fs_diskio_t *d, const int64_t *rows, void *const *dst, size_t n, fs_error_t *err)
{
    size_t extents = 0;
    if (d->broken)
        return fs_error(err, FS_ERR_IO, "disk reads: %s: the reader's ring failed earlier; reopen it", d->what);
    fs_status_t st = check_rows(d, rows, n, err);
    if (st == FS_OK) st = ring_for_caller(d, err);
    if (st == FS_OK) st = make_extents(d, rows, n, &extents, err);
    if (st != FS_OK || n == 0) return st;
    atomic_fetch_add_explicit(&d->bytes_useful, n * d->row_bytes, memory_order_relaxed);
    return d->backend == FS_DISKIO_URING ? read_uring(d, rows, dst, extents, err) : read_pread(d, rows, dst, extents, err);
}

void fs_diskio_stats(const fs_diskio_t *d, fs_diskio_stats_t *out)
{
    *out = (fs_diskio_stats_t){
        .reads = atomic_load(&d->reads),
        .bytes_read = atomic_load(&d->bytes_read),
        .bytes_useful = atomic_load(&d->bytes_useful),
        .short_reads = atomic_load(&d->short_reads),
    };
}

const char *fs_diskio_describe(const fs_diskio_t *d) { return d->describe; }
fs_diskio_backend_t fs_diskio_backend(const fs_diskio_t *d) { return d->backend; }
uint32_t fs_diskio_align(const fs_diskio_t *d) { return d->align; }
