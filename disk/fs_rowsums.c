/* fs_rowsums.c — per-row checksums: built in one pass, saved, reused
 * (fs_rowsums.h). Integers in the file are little-endian, as on every host
 * featstore builds for (x86-64, arm64); the header says which version. */
#include "fs_rowsums.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_fileio.h"
#include "fs_hash.h"

#define MAGIC "FSROWSUM"
#define VERSION 1
#define PASS_CHUNK ((size_t)8 << 20) /* bytes per read of the building pass */

typedef struct {
    char magic[8];
    uint32_t version, header_bytes;
    uint64_t rows, row_bytes, data_offset;
    uint64_t file_size, file_dev, file_ino, mtime_sec, mtime_nsec; /* the table file's identity */
    uint64_t file_xxh3;                                            /* of the whole table file */
    char dataset[128], table[128];
    char zero[FS_ROWSUMS_HEADER - 344 - 8];
    uint64_t header_xxh3; /* of every byte before it */
} header_t;
_Static_assert(sizeof(header_t) == FS_ROWSUMS_HEADER, "the checksum file's header is 512 bytes");

struct fs_rowsums {
    int64_t rows;
    uint64_t row_bytes;
    uint64_t *sums;
    int borrowed; /* fs_rowsums_wrap: the sums are not ours to free */
};

uint64_t fs_rowsums_of(const void *bytes, uint64_t row_bytes) { return fs_hash64(bytes, (size_t)row_bytes); }
int64_t fs_rowsums_rows(const fs_rowsums_t *rs) { return rs->rows; }
uint64_t fs_rowsums_get(const fs_rowsums_t *rs, int64_t r) { return rs->sums[r]; }

int fs_rowsums_check(const fs_rowsums_t *rs, int64_t r, const void *bytes)
{
    return fs_rowsums_of(bytes, rs->row_bytes) == rs->sums[r];
}

void fs_rowsums_close(fs_rowsums_t *rs)
{
    if (!rs) return;
    if (!rs->borrowed) free(rs->sums);
    free(rs);
}

fs_status_t fs_rowsums_wrap(const uint64_t *sums, int64_t rows, uint64_t row_bytes, fs_rowsums_t **out,
                            fs_error_t *err)
{
    if (!(*out = malloc(sizeof **out))) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    **out = (fs_rowsums_t){.rows = rows, .row_bytes = row_bytes, .sums = (uint64_t *)sums, .borrowed = 1};
    return FS_OK;
}

const uint64_t *fs_rowsums_data(const fs_rowsums_t *rs) { return rs->sums; }

static void say(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t len, const char *fmt, ...)
{
    if (!why || !len) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
}

/* pread of exactly n bytes; 0, or the errno (-1: the file ended first). */
static int read_exact(int fd, void *buf, size_t n, uint64_t off)
{
    ssize_t r = fs_pread_full(fd, buf, n, off);
    return r < 0 ? errno : (size_t)r < n ? -1 : 0;
}

/* ---- the header --------------------------------------------------------------- */

static void fill_identity(header_t *h, const struct stat *st)
{
    h->file_size = (uint64_t)st->st_size, h->file_dev = (uint64_t)st->st_dev, h->file_ino = (uint64_t)st->st_ino;
    h->mtime_sec = (uint64_t)st->st_mtim.tv_sec, h->mtime_nsec = (uint64_t)st->st_mtim.tv_nsec;
}

static void make_header(header_t *h, const fs_rowsums_spec_t *spec, const struct stat *st, uint64_t file_xxh3)
{
    memset(h, 0, sizeof *h);
    memcpy(h->magic, MAGIC, 8);
    h->version = VERSION, h->header_bytes = FS_ROWSUMS_HEADER;
    h->rows = (uint64_t)spec->rows, h->row_bytes = spec->row_bytes, h->data_offset = spec->data_offset;
    fill_identity(h, st);
    h->file_xxh3 = file_xxh3;
    snprintf(h->dataset, sizeof h->dataset, "%s", spec->dataset);
    snprintf(h->table, sizeof h->table, "%s", spec->table);
    h->header_xxh3 = fs_hash64(h, offsetof(header_t, header_xxh3));
}

/* Whether the header is of this table: same dataset, table and shape. */
static fs_status_t same_table(const header_t *h, const char *path, const fs_rowsums_spec_t *spec, fs_error_t *err)
{
    if (strncmp(h->dataset, spec->dataset, sizeof h->dataset) == 0 && strncmp(h->table, spec->table, sizeof h->table) == 0 &&
        h->rows == (uint64_t)spec->rows && h->row_bytes == spec->row_bytes && h->data_offset == spec->data_offset)
        return FS_OK;
    return fs_error(err, FS_ERR_FORMAT,
                    "checksum file %s is of dataset '%.127s' table '%.127s' (%llu rows of %llu B at offset %llu), "
                    "not of dataset '%s' table '%s' (%lld rows of %llu B at offset %llu): remove it, and a start "
                    "builds the right one",
                    path, h->dataset, h->table, (unsigned long long)h->rows, (unsigned long long)h->row_bytes,
                    (unsigned long long)h->data_offset, spec->dataset, spec->table, (long long)spec->rows,
                    (unsigned long long)spec->row_bytes, (unsigned long long)spec->data_offset);
}

/* ---- reuse ---------------------------------------------------------------------- */

/* FS_OK with *rs set: reused. FS_OK with *rs NULL: build anew (why says
 * why). An error: a checksum file of another table. */
static fs_status_t try_reuse(const char *path, const fs_rowsums_spec_t *spec, const struct stat *st,
                             fs_rowsums_t **rs, char *why, size_t why_len, fs_error_t *err)
{
    *rs = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) say(why, why_len, "no checksum file yet");
        else say(why, why_len, "the checksum file cannot be read: %s", strerror(errno));
        return FS_OK;
    }
    header_t h, now;
    fs_status_t s = FS_OK;
    uint64_t n = (uint64_t)spec->rows, trailer = 0;
    uint64_t *sums = NULL;
    if (read_exact(fd, &h, sizeof h, 0) != 0 || memcmp(h.magic, MAGIC, 8) != 0 || h.version != VERSION ||
        h.header_bytes != FS_ROWSUMS_HEADER || h.header_xxh3 != fs_hash64(&h, offsetof(header_t, header_xxh3))) {
        say(why, why_len, "the checksum file is not one this version wrote, or is damaged");
        goto done;
    }
    if ((s = same_table(&h, path, spec, err)) != FS_OK) goto done;
    fill_identity(&now, st); /* only the identity is compared: no header to build */
    if (h.file_size != now.file_size || h.file_dev != now.file_dev || h.file_ino != now.file_ino ||
        h.mtime_sec != now.mtime_sec || h.mtime_nsec != now.mtime_nsec) {
        say(why, why_len, "the table file changed since its checksums were made (size, inode or time)");
        goto done;
    }
    if (spec->have_file_xxh3 && h.file_xxh3 != spec->file_xxh3) {
        say(why, why_len, "the manifest's checksum of the table changed");
        goto done;
    }
    sums = malloc((size_t)(n ? n : 1) * sizeof *sums);
    if (!sums) {
        s = fs_error(err, FS_ERR_NOMEM, "checksums of %lld rows: out of memory", (long long)spec->rows);
        goto done;
    }
    if (read_exact(fd, sums, n * sizeof *sums, FS_ROWSUMS_HEADER) != 0 ||
        read_exact(fd, &trailer, sizeof trailer, FS_ROWSUMS_HEADER + n * sizeof *sums) != 0 ||
        trailer != fs_hash64(sums, n * sizeof *sums)) {
        say(why, why_len, "the checksum file is damaged (its sums do not match their checksum)");
        goto done;
    }
    if (!(*rs = malloc(sizeof **rs))) {
        s = fs_error(err, FS_ERR_NOMEM, "out of memory");
        goto done;
    }
    **rs = (fs_rowsums_t){.rows = spec->rows, .row_bytes = spec->row_bytes, .sums = sums};
    sums = NULL;
done:
    free(sums);
    close(fd);
    return s;
}

/* ---- the building pass ---------------------------------------------------------- */

/* One pass over the whole file: every row's checksum into sums, and the
 * file's own into *file_xxh3. Read in chunks of whole rows, each dropped
 * from the page cache once hashed (the pass must not fill memory). */
static fs_status_t hash_pass(int fd, const char *what, const fs_rowsums_spec_t *spec, uint64_t file_size,
                             uint64_t *sums, uint64_t *file_xxh3, fs_error_t *err)
{
    uint64_t rb = spec->row_bytes, per = PASS_CHUNK / rb ? PASS_CHUNK / rb : 1;
    size_t cap = (size_t)(per * rb > spec->data_offset ? per * rb : spec->data_offset);
    char *buf = malloc(cap ? cap : 1);
    fs_hash_t *h = fs_hash_new();
    fs_status_t s = FS_OK;
    if (!buf || !h) s = fs_error(err, FS_ERR_NOMEM, "%s: out of memory", what);
    uint64_t off = 0;
    int e = 0;
    if (s == FS_OK && spec->data_offset > 0 && (e = read_exact(fd, buf, spec->data_offset, 0)) == 0)
        fs_hash_update(h, buf, spec->data_offset), off = spec->data_offset;
    for (int64_t r = 0; s == FS_OK && e == 0 && r < spec->rows; r += (int64_t)per) {
        uint64_t k = (uint64_t)(spec->rows - r) < per ? (uint64_t)(spec->rows - r) : per;
        if ((e = read_exact(fd, buf, k * rb, off)) != 0) break;
        fs_hash_update(h, buf, k * rb);
        for (uint64_t i = 0; i < k; i++) sums[r + (int64_t)i] = fs_rowsums_of(buf + i * rb, rb);
        posix_fadvise(fd, (off_t)off, (off_t)(k * rb), POSIX_FADV_DONTNEED);
        off += k * rb;
    }
    while (s == FS_OK && e == 0 && off < file_size) { /* bytes after the rows: part of the file's checksum */
        size_t k = file_size - off < cap ? (size_t)(file_size - off) : cap;
        if ((e = read_exact(fd, buf, k, off)) == 0) fs_hash_update(h, buf, k), off += k;
    }
    if (s == FS_OK && e != 0)
        s = e < 0 ? fs_error(err, FS_ERR_FORMAT, "%s ends at %llu bytes, before its %lld rows", what,
                             (unsigned long long)off, (long long)spec->rows)
                  : fs_error(err, FS_ERR_IO, "%s: read at offset %llu: %s", what, (unsigned long long)off, strerror(e));
    if (s == FS_OK) *file_xxh3 = fs_hash_digest(h);
    fs_hash_free(h);
    free(buf);
    return s;
}


/* Writes header, sums and trailer to a temporary file beside path, then
 * renames it over path: a reader never sees half a file. 0 or the errno. */
static int save(const char *path, const header_t *h, const uint64_t *sums, uint64_t n)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return errno;
    uint64_t trailer = fs_hash64(sums, n * sizeof *sums);
    int e = fs_pwrite_full(fd, h, sizeof *h, 0);
    if (!e) e = fs_pwrite_full(fd, sums, n * sizeof *sums, FS_ROWSUMS_HEADER);
    if (!e) e = fs_pwrite_full(fd, &trailer, sizeof trailer, FS_ROWSUMS_HEADER + n * sizeof *sums);
    if (!e && fsync(fd) != 0) e = errno;
    close(fd);
    if (e == 0 && rename(tmp, path) != 0) e = errno;
    if (e != 0) unlink(tmp);
    return e;
}

static fs_status_t build(int fd, const char *what, const char *path, const fs_rowsums_spec_t *spec,
                         const struct stat *st, fs_rowsums_t **out, fs_rowsums_origin_t *origin, char *why,
                         size_t why_len, fs_error_t *err)
{
    uint64_t n = (uint64_t)spec->rows, file_xxh3 = 0;
    fs_rowsums_t *rs = calloc(1, sizeof *rs);
    uint64_t *sums = malloc((size_t)(n ? n : 1) * sizeof *sums);
    if (!rs || !sums) {
        free(rs), free(sums);
        return fs_error(err, FS_ERR_NOMEM, "checksums of %lld rows: out of memory", (long long)spec->rows);
    }
    *rs = (fs_rowsums_t){.rows = spec->rows, .row_bytes = spec->row_bytes, .sums = sums};
    fs_status_t s = hash_pass(fd, what, spec, (uint64_t)st->st_size, sums, &file_xxh3, err);
    if (s == FS_OK && spec->have_file_xxh3 && file_xxh3 != spec->file_xxh3)
        s = fs_error(err, FS_ERR_FORMAT, "%s: checksum mismatch (manifest %016llx, file %016llx): the table is "
                     "corrupt or was modified", what, (unsigned long long)spec->file_xxh3, (unsigned long long)file_xxh3);
    if (s != FS_OK) {
        fs_rowsums_close(rs);
        return s;
    }
    header_t h;
    make_header(&h, spec, st, file_xxh3);
    int e = save(path, &h, sums, n);
    *origin = e == 0 ? FS_ROWSUMS_BUILT : FS_ROWSUMS_BUILT_KEPT;
    if (e != 0 && why && why_len) {
        size_t used = strlen(why);
        snprintf(why + used, why_len - used, "; not saved to %s: %s", path, strerror(e));
    }
    *out = rs;
    return FS_OK;
}

fs_status_t fs_rowsums_load(int fd, const char *what, const char *sums_path, const fs_rowsums_spec_t *spec,
                            fs_rowsums_t **out, fs_rowsums_origin_t *origin, char *why, size_t why_len,
                            fs_error_t *err)
{
    *out = NULL;
    if (why && why_len) why[0] = '\0';
    if (spec->rows < 0 || spec->row_bytes == 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s: checksums of %lld rows of %llu B", what,
                        (long long)spec->rows, (unsigned long long)spec->row_bytes);
    struct stat st;
    if (fstat(fd, &st) != 0) return fs_error(err, FS_ERR_IO, "%s: %s", what, strerror(errno));
    uint64_t need = spec->data_offset + (uint64_t)spec->rows * spec->row_bytes;
    if ((uint64_t)st.st_size < need)
        return fs_error(err, FS_ERR_FORMAT, "%s is %lld bytes, but its %lld rows need %llu", what, (long long)st.st_size,
                        (long long)spec->rows, (unsigned long long)need);
    fs_status_t s = try_reuse(sums_path, spec, &st, out, why, why_len, err);
    if (s != FS_OK || *out) {
        *origin = FS_ROWSUMS_REUSED;
        return s;
    }
    return build(fd, what, sums_path, spec, &st, out, origin, why, why_len, err);
}
