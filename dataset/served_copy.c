/* served_copy.c — the copy a server serves instead of the dataset's files
 * (FS_OPEN_COPY; why a copy at all: the top of dataset.c).
 *
 * Each file is read once and hashed as it lands in the copy (so the
 * checksum is that of exactly the bytes served), and the copy is made
 * unwritable: a memfd is read into by several streams, each piece hashed
 * through a read-only mapping as it lands, then sealed; a file through a
 * buffer, each chunk hashed on the way. Two media
 * can hold it:
 *
 * - A sealed memfd: shmem that nobody can write, shrink or grow once sealed
 *   (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL). Its pages
 *   are 2 MiB only where the host's shmem THP setting allows it
 *   (kernels/fs_shm.h), and "never" is the kernel's default.
 * - An unnamed file in a directory on a disk file system (O_TMPFILE with
 *   O_EXCL: no name now, and none can ever be given to it). Kernels whose
 *   page cache keeps large folios for that file system (ext4 on this
 *   project's 6.18 hosts) map it in 2 MiB pages whatever the shmem setting,
 *   provided it was written in whole 2 MiB writes (1 MiB writes gave none,
 *   measured) and the mapping asks (MADV_HUGEPAGE, which the "madvise"
 *   default honours). A file cannot be sealed. Instead: no name leads to
 *   it, its mode is 0400, and once written only read-only descriptors of it
 *   exist (reopened through /proc/self/fd). Another uid can only read it.
 *   A process of the server's own uid could chmod it back and reopen it
 *   for writing, but such a process can kill the server outright: seals
 *   guard against nothing more that this uid could not already do. Costs:
 *   its size on disk, written back before serving starts (so writeback
 *   never competes with serving), and clean pages that the kernel may evict
 *   under memory pressure (a later fault reads them back from the copy:
 *   slow, still correct).
 *
 * FS_COPY_AUTO, the default, chooses once per open: the memfd where memfd
 * pages come out huge; else the file where a 4 MiB probe file there gets
 * 2 MiB pages (per file, only while the copy leaves 5% of that file system
 * free, and not when the memory budget leaves a feature table on disk:
 * the disk serves its rows then); else the memfd. Measured on the 2-core CI machine kind (6.18,
 * ext4, shmem "never"): four trainers ran 0.99-1.02x as fast as four
 * threads of one process with the file, 0.89-0.91x with the memfd
 * (docs/serving.md "Huge pages"). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "dataset_internal.h"
#include "fs_fileio.h"
#include "fs_hash.h"
#include "fs_shm.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14; older headers lack it */
#endif

#define HUGE_PAGE ((size_t)2 << 20)
#define COPY_CHUNK HUGE_PAGE        /* a whole huge page per write (see the top); stays in cache for the hash */
#define COPY_PIECE ((size_t)8 << 20) /* what a memfd copy stream reads at a time */
#define COPY_STREAMS 4
#define PROBE_BYTES (2 * HUGE_PAGE) /* at least one aligned huge page whatever the file's start */

/* Copies src's first `len` bytes into the file `wfd` through a 2 MiB
 * buffer, hashing each chunk on the way: *hash is the checksum of exactly
 * the bytes the copy holds, and only this process can write the copy
 * until it is made read-only. */
static fs_status_t copy_bytes(open_ctx_t *c, const char *path, int src, size_t len, int wfd, uint64_t *hash)
{
    char *buf = malloc(COPY_CHUNK);
    fs_hash_t *h = fs_hash_new();
    fs_status_t s = FS_OK;
    if (!h || !buf) s = fs_error(c->err, FS_ERR_NOMEM, "out of memory");
    for (size_t off = 0; s == FS_OK && off < len;) {
        size_t want = len - off < COPY_CHUNK ? len - off : COPY_CHUNK;
        ssize_t r = fs_pread_full(src, buf, want, off);
        if (r < 0) {
            s = fs_error(c->err, FS_ERR_IO, "%s: read failed at byte %zu: %s", path, off, strerror(errno));
        } else if ((size_t)r < want) {
            s = fs_error(c->err, FS_ERR_IO, "%s: the file shrank to %zu bytes while it was being read (was %zu)",
                         path, off + (size_t)r, len);
        } else {
            fs_hash_update(h, buf, (size_t)r);
            int e = fs_pwrite_full(wfd, buf, (size_t)r, off);
            if (e) s = fs_error(c->err, FS_ERR_IO, "%s: cannot write its copy in %s at byte %zu: %s", path,
                                c->copy.dir, off, strerror(e));
            off += (size_t)r;
        }
    }
    if (s == FS_OK) *hash = fs_hash_digest(h);
    fs_hash_free(h);
    free(buf);
    return s;
}

/* Maps m->len bytes of the copy `fd` read-only at m->addr, asking for
 * 2 MiB pages (best effort). */
static fs_status_t map_copy(open_ctx_t *c, const char *path, int fd, fs_mapping_t *m)
{
    m->addr = mmap(NULL, m->len, PROT_READ, MAP_SHARED, fd, 0);
    if (m->addr == MAP_FAILED) {
        m->addr = NULL;
        return fs_error(c->err, FS_ERR_NOMEM, "%s: cannot map its copy: %s", path, strerror(errno));
    }
    madvise(m->addr, m->len, MADV_HUGEPAGE);
    return FS_OK;
}

/* ---- the memfd ------------------------------------------------------------ */

/* A new descriptor of fd's file with `flags` (through /proc/self/fd), or
 * -1 (no /proc, or flags the file refuses, such as O_DIRECT). */
static int reopen(int fd, int flags)
{
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    return open(self, flags | O_CLOEXEC);
}

/* The file into the memfd: COPY_STREAMS threads claim COPY_PIECE pieces
 * in order and read each straight into the memfd's pages through a
 * writable mapping, with O_DIRECT where the file allows it (no page cache
 * between the disk and the copy, nothing copied by the CPU). The calling
 * thread hashes the pieces in order as they land, through a read-only
 * mapping, so the hash runs beside the reads instead of after them. Why,
 * as measured on the disk probe's second start (0.59 GiB copied): one
 * sendfile() stream read at the disk's single-stream speed while four
 * readers of a 1 GiB file were 1.2-4x as fast; sendfile streams spun on
 * the memfd's inode lock (11% of the start's CPU); and a hash pass after
 * the copy added 0.11 s. The start is CPU-bound once the disk is fast:
 * what is left is mostly allocating 4 KiB shmem pages.
 *
 * Each piece's pages are allocated first (fs_shm_reserve): memory the
 * copy cannot get is this call's ENOMEM, never a SIGBUS in a fault.
 * Hashing before the seal is safe: only this process can write the memfd,
 * and each byte is written once. The writable mapping is gone before the
 * seal; the read-only one comes from a read-only descriptor, which lets
 * F_SEAL_WRITE be added while it exists. A piece O_DIRECT cannot read
 * whole (a file system without it, a short read) is read through the page
 * cache instead. Descriptors are reopened through /proc/self/fd; without
 * /proc (a chroot) the streams share the file's descriptor, nothing is
 * read with O_DIRECT, and the sealed copy is hashed after the copy. */
typedef struct {
    open_ctx_t *c;
    const char *path;
    int src;              /* the file (reopened per stream, direct and buffered) */
    int memfd;
    char *to;             /* the memfd's writable mapping */
    size_t len, pieces;
    pthread_mutex_t mu;
    pthread_cond_t landed;
    size_t next;          /* the next piece to claim */
    unsigned char *done;  /* [pieces] 1 once read */
    fs_status_t s;        /* the first failure; set under mu */
} memfd_copy_t;

static void copy_failed(memfd_copy_t *j, fs_status_t code, const char *what, long long at, int e)
{
    pthread_mutex_lock(&j->mu);
    if (j->s == FS_OK) {
        if (e) j->s = fs_error(j->c->err, code, "%s: %s at byte %lld: %s", j->path, what, at, strerror(e));
        else j->s = fs_error(j->c->err, code, "%s: the file shrank to %lld bytes while it was being read (was %zu)",
                             j->path, at, j->len);
    }
    j->next = j->pieces; /* every stream stops */
    pthread_cond_broadcast(&j->landed);
    pthread_mutex_unlock(&j->mu);
}

/* Bytes [off, off + n) of the file into the mapping, O_DIRECT first
 * (`direct`, or -1), then buffered from wherever that stopped. 0, or
 * copy_failed has recorded why not. */
static int read_piece(memfd_copy_t *j, int direct, int buffered, size_t off, size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    int e = fs_shm_reserve(j->memfd, j->to, off, n);
    if (e) {
        copy_failed(j, FS_ERR_NOMEM, "cannot allocate memory for its in-memory copy", (long long)off, e);
        return -1;
    }
    size_t got = 0;
    if (direct >= 0) { /* whole pages at a piece's aligned start: every direct-I/O alignment up to a page */
        ssize_t r = pread(direct, j->to + off, (n + page - 1) / page * page, (off_t)off);
        got = r > 0 ? (size_t)r / page * page : 0;
        if (r > 0 && (size_t)r >= n) got = n;
    }
    ssize_t r = got < n ? fs_pread_full(buffered, j->to + off + got, n - got, off + got) : 0;
    if (r < 0 || (size_t)r < n - got) { /* an error, or the file ended early: it shrank */
        copy_failed(j, FS_ERR_IO, "read failed", (long long)(off + got + (r > 0 ? (size_t)r : 0)), r < 0 ? errno : 0);
        return -1;
    }
    return 0;
}

static void *copy_stream(void *arg)
{
    memfd_copy_t *j = arg;
    int own = reopen(j->src, O_RDONLY), direct = reopen(j->src, O_RDONLY | O_DIRECT);
    int buffered = own >= 0 ? own : j->src; /* pread needs no descriptor of its own, only read-ahead does */
    for (;;) {
        pthread_mutex_lock(&j->mu);
        size_t k = j->next < j->pieces ? j->next++ : j->pieces;
        pthread_mutex_unlock(&j->mu);
        if (k == j->pieces) break;
        size_t off = k * COPY_PIECE, n = j->len - off < COPY_PIECE ? j->len - off : COPY_PIECE;
        if (read_piece(j, direct, buffered, off, n) != 0) break;
        pthread_mutex_lock(&j->mu);
        j->done[k] = 1;
        pthread_cond_broadcast(&j->landed);
        pthread_mutex_unlock(&j->mu);
    }
    if (own >= 0) close(own);
    if (direct >= 0) close(direct);
    return NULL;
}

/* Hashes the pieces of `view` (NULL: none) in order as the streams land
 * them; the first failure, or FS_OK once every piece has landed. */
static fs_status_t hash_as_landed(memfd_copy_t *j, const char *view, fs_hash_t *h)
{
    for (size_t k = 0; k < j->pieces; k++) {
        pthread_mutex_lock(&j->mu);
        while (!j->done[k] && j->s == FS_OK) pthread_cond_wait(&j->landed, &j->mu);
        fs_status_t s = j->s;
        pthread_mutex_unlock(&j->mu);
        if (s != FS_OK) return s;
        size_t off = k * COPY_PIECE;
        if (view) fs_hash_update(h, view + off, j->len - off < COPY_PIECE ? j->len - off : COPY_PIECE);
    }
    return FS_OK;
}

static fs_status_t read_and_hash(open_ctx_t *c, const char *path, int src, int memfd, const char *view, size_t len,
                                 fs_hash_t *h)
{
    memfd_copy_t j = {.c = c, .path = path, .src = src, .memfd = memfd, .len = len,
                      .pieces = (len + COPY_PIECE - 1) / COPY_PIECE, .s = FS_OK};
    if (ftruncate(memfd, (off_t)len) != 0)
        return fs_error(c->err, FS_ERR_NOMEM, "%s: cannot size its in-memory copy at %zu bytes: %s", path, len,
                        strerror(errno));
    j.to = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
    if (j.to == MAP_FAILED)
        return fs_error(c->err, FS_ERR_NOMEM, "%s: cannot map its in-memory copy: %s", path, strerror(errno));
    madvise(j.to, len, MADV_HUGEPAGE);
    if (!(j.done = calloc(j.pieces, 1))) {
        munmap(j.to, len);
        return fs_error(c->err, FS_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_init(&j.mu, NULL);
    pthread_cond_init(&j.landed, NULL);
    pthread_t t[COPY_STREAMS];
    int started = 0;
    for (; started < COPY_STREAMS && (size_t)started < j.pieces; started++)
        if (pthread_create(&t[started], NULL, copy_stream, &j) != 0) break;
    if (started == 0) copy_stream(&j); /* no thread to be had: this one reads, then hashes */
    fs_status_t s = hash_as_landed(&j, view, h);
    for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
    pthread_cond_destroy(&j.landed);
    pthread_mutex_destroy(&j.mu);
    free(j.done);
    munmap(j.to, len); /* before the seal: no writable mapping may remain */
    return s;
}

/* The memfd's read-only mapping at m->addr, made before the copy from a
 * read-only descriptor when /proc can give one (the memfd may still be
 * shorter then); FS_OK with m->addr NULL when it cannot. */
static fs_status_t map_memfd_early(open_ctx_t *c, const char *path, int fd, fs_mapping_t *m)
{
    int ro = reopen(fd, O_RDONLY);
    if (ro < 0) return FS_OK;
    fs_status_t s = map_copy(c, path, ro, m);
    close(ro);
    return s;
}

static fs_status_t copy_to_memfd(open_ctx_t *c, const char *path, int src, fs_mapping_t *m, uint64_t *hash)
{
    char name[160];
    snprintf(name, sizeof name, "featstore-dataset:%s", m->file);
    if ((m->fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING)) < 0)
        return fs_error(c->err, FS_ERR_NOMEM, "%s: memfd_create: %s", path, strerror(errno));
    fs_hash_t *h = fs_hash_new();
    fs_status_t s = h ? FS_OK : fs_error(c->err, FS_ERR_NOMEM, "out of memory");
    if (s == FS_OK && m->len) s = map_memfd_early(c, path, m->fd, m);
    const char *view = m->addr; /* NULL: hashed once sealed, below */
    if (s == FS_OK && m->len) s = read_and_hash(c, path, src, m->fd, view, m->len, h);
    if (s == FS_OK && fcntl(m->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0)
        s = fs_error(c->err, FS_ERR_IO, "%s: cannot seal its in-memory copy: %s", path, strerror(errno));
    if (s == FS_OK && !view && m->len && (s = map_copy(c, path, m->fd, m)) == FS_OK)
        fs_hash_update(h, m->addr, m->len);
    if (s == FS_OK) {
        *hash = fs_hash_digest(h);
        m->huge_bytes = m->addr && fs_shm_huge_possible() ? fs_shm_huge_bytes(m->addr) : 0; /* what it got */
    }
    fs_hash_free(h);
    return s;
}

/* ---- the unnamed file ------------------------------------------------------ */

/* A new unnamed file in `dir` with `len` bytes of disk reserved (a full
 * disk is this error, not a failed write halfway), open read-write. */
static fs_status_t file_create(const char *dir, size_t len, const char *what, int *fd, fs_error_t *err)
{
    if ((*fd = open(dir, O_TMPFILE | O_EXCL | O_RDWR | O_CLOEXEC, 0600)) < 0)
        return fs_error(err, errno == EOPNOTSUPP || errno == EISDIR ? FS_ERR_UNSUPPORTED : FS_ERR_IO,
                        "%s: cannot create an unnamed file in %s for its copy: %s", what, dir, strerror(errno));
    int e = len ? posix_fallocate(*fd, 0, (off_t)len) : 0;
    if (e == 0 || e == EOPNOTSUPP) return FS_OK;
    close(*fd), *fd = -1;
    return fs_error(err, FS_ERR_IO, "%s: cannot reserve %zu bytes in %s for its copy: %s", what, len, dir,
                    strerror(e));
}

/* Makes the written file *fd unwritable (see the top): on disk (`sync`),
 * mode 0400, and *fd replaced by a read-only descriptor of the same file,
 * the writable one closed. */
static fs_status_t file_finish(int *fd, int sync, const char *what, const char *dir, fs_error_t *err)
{
    int ro = -1;
    if (sync && fdatasync(*fd) != 0)
        return fs_error(err, FS_ERR_IO, "%s: cannot write its copy in %s to disk: %s", what, dir, strerror(errno));
    if (fchmod(*fd, 0400) != 0 || (ro = reopen(*fd, O_RDONLY)) < 0)
        return fs_error(err, FS_ERR_IO, "%s: cannot make its copy in %s read-only (is /proc mounted?): %s", what,
                        dir, strerror(errno));
    close(*fd);
    *fd = ro;
    return FS_OK;
}

/* 1 if the copy may go to a file in `dir`: it leaves 5% of that file
 * system free (a store must not fill the disk it shares). */
static int file_has_room(const char *dir, size_t len)
{
    struct statvfs v;
    if (statvfs(dir, &v) != 0) return 0;
    unsigned long long avail = (unsigned long long)v.f_bavail * v.f_frsize;
    unsigned long long keep = (unsigned long long)v.f_blocks * v.f_frsize / 20;
    return avail > keep && len <= avail - keep;
}

static fs_status_t copy_to_file(open_ctx_t *c, const char *path, int src, fs_mapping_t *m, uint64_t *hash)
{
    fs_status_t s = file_create(c->copy.dir, m->len, path, &m->fd, c->err);
    if (s == FS_OK) s = copy_bytes(c, path, src, m->len, m->fd, hash);
    if (s == FS_OK) s = file_finish(&m->fd, 1, path, c->copy.dir, c->err);
    if (s == FS_OK) s = map_copy(c, path, m->fd, m);
    if (s != FS_OK) return s;
    m->in_file = 1;
    madvise(m->addr, m->len, MADV_POPULATE_READ); /* page tables now: what the copy got can be read off them */
    m->huge_bytes = fs_shm_huge_bytes(m->addr);
    return FS_OK;
}

/* ---- choosing ------------------------------------------------------------ */

/* 1 if this host gives memfd pages 2 MiB pages (its shmem THP setting). */
static int memfd_gets_huge_pages(void)
{
    int fd = memfd_create("featstore-probe", MFD_CLOEXEC);
    void *p = NULL;
    fs_error_t ignored = {0};
    long long huge = fd >= 0 && fs_shm_map_reserved(fd, PROBE_BYTES, "probe", &p, &ignored) == FS_OK
                         ? fs_shm_huge_bytes(p) : 0;
    if (p) munmap(p, PROBE_BYTES);
    if (fd >= 0) close(fd);
    return huge >= (long long)HUGE_PAGE;
}

/* Makes a `len`-byte unnamed file in `dir` the way copy_to_file does
 * (len: 0 or a multiple of 2 MiB); FS_OK when that works, with *huge = 1
 * if it maps in 2 MiB pages. */
static fs_status_t file_probe(const char *dir, size_t len, int *huge, fs_error_t *err)
{
    int fd = -1;
    char *zeros = calloc(1, COPY_CHUNK);
    fs_status_t s = zeros ? file_create(dir, len, "the copy probe", &fd, err)
                          : fs_error(err, FS_ERR_NOMEM, "out of memory");
    for (size_t off = 0; s == FS_OK && off < len; off += COPY_CHUNK) {
        int e = fs_pwrite_full(fd, zeros, COPY_CHUNK, off);
        if (e) s = fs_error(err, FS_ERR_IO, "the copy probe: cannot write in %s: %s", dir, strerror(e));
    }
    free(zeros);
    if (s == FS_OK) s = file_finish(&fd, 0, "the copy probe", dir, err);
    void *p = s == FS_OK && len ? mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    *huge = 0;
    if (p != MAP_FAILED) {
        madvise(p, len, MADV_HUGEPAGE);
        madvise(p, len, MADV_POPULATE_READ);
        *huge = fs_shm_huge_bytes(p) >= (long long)HUGE_PAGE;
        munmap(p, len);
    } else if (s == FS_OK && len) {
        s = fs_error(err, FS_ERR_IO, "the copy probe: cannot map a file in %s: %s", dir, strerror(errno));
    }
    if (fd >= 0) close(fd);
    return s;
}

fs_status_t ds_copy_choose(const fs_copy_opts_t *o, ds_copy_t *out, fs_error_t *err)
{
    const fs_copy_opts_t auto_opts = {.medium = FS_COPY_AUTO};
    if (!o) o = &auto_opts;
    const char *tmp = getenv("TMPDIR");
    const char *dir = o->dir ? o->dir : tmp && *tmp ? tmp : "/var/tmp";
    *out = (ds_copy_t){.medium = FS_COPY_MEMFD, .requested = o->medium};
    if ((size_t)snprintf(out->dir, sizeof out->dir, "%s", dir) >= sizeof out->dir && o->medium != FS_COPY_MEMFD)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "the copy directory '%.64s...' is longer than %zu bytes", dir,
                        sizeof out->dir - 1);
    int huge = 0;
    fs_error_t ignored = {0};
    switch (o->medium) {
    case FS_COPY_MEMFD:
        return FS_OK;
    case FS_COPY_FILE: {
        fs_status_t s = file_probe(out->dir, 0, &huge, err); /* refused now, by name, not at the first file */
        if (s == FS_OK) out->medium = FS_COPY_FILE;
        return s;
    }
    case FS_COPY_AUTO:
        if (!memfd_gets_huge_pages() && file_probe(out->dir, PROBE_BYTES, &huge, &ignored) == FS_OK && huge)
            out->medium = FS_COPY_FILE;
        return FS_OK;
    }
    return fs_error(err, FS_ERR_INVALID_ARGUMENT, "unknown copy medium %d (FS_COPY_AUTO, FS_COPY_MEMFD or "
                    "FS_COPY_FILE)", (int)o->medium);
}

fs_status_t ds_copy_serve(open_ctx_t *c, const char *path, int src, fs_mapping_t *m, uint64_t *hash)
{
    size_t avail = ds_memory_available();
    if (m->len > avail)
        return fs_error(c->err, FS_ERR_NOMEM, "%s: serving needs a %zu-byte in-memory copy of it, but only %zu bytes "
                        "of memory are available", path, m->len, avail);
    /* auto: not to a file when tables will stay on disk (budget_binds): the disk then serves their rows, and
     * writing the copy back at every start competes: a second start of the probe took 1.07-1.25x the memfd's */
    int to_file = c->copy.medium == FS_COPY_FILE &&
                  (c->copy.requested == FS_COPY_FILE || (file_has_room(c->copy.dir, m->len) && !c->budget_binds));
    fs_status_t s = to_file ? copy_to_file(c, path, src, m, hash) : copy_to_memfd(c, path, src, m, hash);
    if (s != FS_OK) return s;
    struct stat st;
    fs_file_state_t after = {0};
    if (fstat(src, &st) == 0) ds_file_state(&st, &after);
    if (after.size != m->validated.size || after.mtime_ns != m->validated.mtime_ns)
        return fs_error(c->err, FS_ERR_IO, "%s: the file changed while it was being read (%lld bytes before, %lld "
                        "after); start again once nothing writes it", path, (long long)m->validated.size,
                        (long long)after.size);
    /* The copy is all that is read from now on: the original's page cache
     * need not hold the same bytes a second time. */
    posix_fadvise(src, 0, 0, POSIX_FADV_DONTNEED);
    return FS_OK;
}
