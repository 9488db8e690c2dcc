/* window.h — big mapped arrays read and written in bounded windows.
 *
 * A page of a mapped file that a process touches counts in its resident
 * set until the mapping goes, so one pass over a 2 GiB indices array makes
 * the process 2 GiB large, although it needs a few megabytes at a time. A
 * window records the pages a pass has touched and, once they reach its
 * budget, drops them from the process (madvise MADV_DONTNEED): the page
 * cache keeps them, clean or dirty, so nothing is lost and a later read
 * finds them again. Tools that stream datasets larger than memory (the
 * partitioner, the windowed open of dataset.h) keep their resident set at
 * what they allocate plus one budget per window.
 *
 * The budget is on the span of addresses touched, not on the pages: a
 * fault on a mapped file also maps the pages around it that the page cache
 * holds (the kernel's fault-around, 64 KiB by default), so scattered reads
 * (a part's rows, all over a table) make a process resident in far more
 * than the pages it read: 146 MiB where 16 MiB were budgeted, partitioning
 * R-MAT scale 18 into 64 parts. The span is widened to whole 64 KiB blocks
 * (within the array's own pages, so a drop never reaches a neighbouring
 * mapping) and dropped whole.
 *
 * Only for mappings of files (MAP_SHARED, read-only or read-write): an
 * anonymous mapping's pages would be zeroed. Not thread-safe: one window
 * per array and thread. */
#ifndef FS_WINDOW_H
#define FS_WINDOW_H

#include <stddef.h>
#include <stdint.h>

/* One chunk: the pages a window holds before it drops them. */
#define FS_WINDOW_BYTES ((size_t)16 << 20)

/* The kernel's default fault-around: what one fault may map. */
#define FS_FAULT_AROUND_BYTES ((uintptr_t)64 << 10)

typedef struct {
    uintptr_t lo, hi;          /* the span touched since the last drop, widened to 64 KiB blocks */
    uintptr_t begin, end;      /* the array's own pages: a drop stays within them */
    size_t budget;             /* the widest span before a drop */
} fs_window_t;

/* A window over the array [base, base + len) (a mapping of a file), dropping
 * every FS_WINDOW_BYTES of span. */
void fs_window_init(fs_window_t *w, const void *base, size_t len);
/* Records that [p, p + len) was read or written; drops the span once the
 * budget is reached. */
void fs_window_touch(fs_window_t *w, const void *p, size_t len);
/* Drops the pages touched so far (at the end of a pass). */
void fs_window_drop(fs_window_t *w);
/* Drops the pages holding [p, p + len) from this process at once. */
void fs_drop_pages(const void *p, size_t len);

#endif
