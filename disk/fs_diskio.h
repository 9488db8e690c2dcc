/* fs_diskio.h — reading a table file's rows from disk, never through a
 * mapping (docs/design.md "The disk tier").
 *
 * Why not mmap: a missing row of a mapped file is a page fault that reads
 * one page, one fault at a time; a disk answers 4x more random reads a
 * second at queue depth 64 than at depth 1 (fio, this machine kind). So a
 * batch's rows are read together:
 *
 * - the rows are given sorted and distinct, and rows whose aligned extents
 *   touch are coalesced into one read (up to max_read bytes);
 * - each read covers its rows rounded out to the file system's direct-I/O
 *   alignment (statx STATX_DIOALIGN: 512 B on this project's ext4), not to
 *   4 KiB, so a 512 B row aligned in the file costs a 512 B read;
 * - reads are O_DIRECT (the page cache would hold a second copy of what
 *   the row cache keeps), unless the file system refuses it, then buffered;
 * - io_uring keeps queue_depth reads in flight, submitting them in batches
 *   (no SQPOLL: a kernel thread spinning per reader costs a core);
 * - where io_uring is refused (ENOSYS; EPERM from a seccomp profile such as
 *   Docker's default, or kernel.io_uring_disabled) a pool of threads calling
 *   pread keeps the same depth, and fs_diskio_describe() says so;
 * - a short read is continued from where it stopped; a read that ends
 *   before the row does (the file was truncated) fails the call naming the
 *   file, the row and the offset.
 *
 * Ownership: fs_diskio_open reopens the file through /proc/self/fd (its
 * own descriptor, so O_DIRECT is not imposed on the caller's) and owns that
 * descriptor, the ring or pool and the bounce buffers until fs_diskio_close.
 * Thread-safety: one thread at a time per reader (a ring is not shared);
 * give each thread its own. */
#ifndef FS_DISKIO_H
#define FS_DISKIO_H

#include <stdint.h>

#include "fs_types.h"

typedef struct fs_diskio fs_diskio_t;

typedef enum {
    FS_DISKIO_AUTO = 0, /* io_uring, or the pread pool where io_uring is refused */
    FS_DISKIO_URING,    /* io_uring or an error */
    FS_DISKIO_PREAD,    /* the pread pool */
} fs_diskio_backend_t;

#define FS_DISKIO_DEFAULT_DEPTH 64          /* bench_disk: where this disk's IOPS stop growing */
#define FS_DISKIO_DEFAULT_MAX_READ (128u << 10)
#define FS_DISKIO_MAX_DEPTH 1024

typedef struct {
    fs_diskio_backend_t backend;
    unsigned queue_depth; /* reads in flight; 0: FS_DISKIO_DEFAULT_DEPTH */
    unsigned max_read;    /* the largest coalesced read in bytes; 0: FS_DISKIO_DEFAULT_MAX_READ */
    int buffered;         /* nonzero: no O_DIRECT even where the file system allows it */
} fs_diskio_opts_t;

typedef struct {
    uint64_t reads;        /* reads submitted, continuations of short reads included */
    uint64_t bytes_read;   /* bytes the file system returned */
    uint64_t bytes_useful; /* row bytes asked for */
    uint64_t short_reads;  /* reads that returned less than asked and were continued */
} fs_diskio_stats_t;

/* A reader of rows [0, rows) of row_bytes each, starting at data_offset in
 * the file open at fd (not taken: the reader reopens it). `what` names the
 * file in errors. The file's size is not checked here (whoever opened the
 * table did; a file shortened later fails the reads past its new end, not
 * the reader); io_uring refused under FS_DISKIO_URING is
 * FS_ERR_UNSUPPORTED naming why. opts may be NULL (all defaults). */
fs_status_t fs_diskio_open(int fd, const char *what, uint64_t data_offset, uint64_t row_bytes, uint64_t rows,
                           const fs_diskio_opts_t *opts, fs_diskio_t **out, fs_error_t *err);
void fs_diskio_close(fs_diskio_t *d);

/* Reads rows[i] into dst[i] (row_bytes each, any alignment) for i < n.
 * rows must be ascending and distinct, each < rows (else
 * FS_ERR_INVALID_ARGUMENT naming the position). An I/O error or a read that
 * ends before its rows (a truncated file) is FS_ERR_IO naming the file, the
 * row and the offset; dst's contents are then unspecified. Every read has
 * completed when it returns, whatever the outcome. */
fs_status_t fs_diskio_read(fs_diskio_t *d, const int64_t *rows, void *const *dst, size_t n, fs_error_t *err);

/* The counters since open. */
void fs_diskio_stats(const fs_diskio_t *d, fs_diskio_stats_t *out);

/* One line for the log: the backend, its depth, direct or buffered, the
 * alignment, and why the pread pool or buffered reads were taken, e.g.
 * "io_uring, depth 64, O_DIRECT at 512 B" or "pread pool of 16 threads
 * (io_uring refused: Operation not permitted), O_DIRECT at 512 B". */
const char *fs_diskio_describe(const fs_diskio_t *d);

fs_diskio_backend_t fs_diskio_backend(const fs_diskio_t *d); /* URING or PREAD: what it uses */
uint32_t fs_diskio_align(const fs_diskio_t *d);              /* the read alignment in bytes (1: buffered) */

#endif
