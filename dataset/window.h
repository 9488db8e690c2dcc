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
 * Only for mappings of files (MAP_SHARED, read-only or read-write): an
 * anonymous mapping's pages would be zeroed. Not thread-safe: one window
 * per array and thread. */
#ifndef FS_WINDOW_H
#define FS_WINDOW_H

#include <stddef.h>
#include <stdint.h>

/* One chunk: the pages a window holds before it drops them. */
#define FS_WINDOW_BYTES ((size_t)16 << 20)

typedef struct {
    uintptr_t lo, hi;          /* the span of pages touched since the last drop ([lo, hi), page-aligned) */
    uintptr_t last_page;       /* the last page touched, not counted twice by ascending reads */
    size_t pages, budget;      /* pages touched since the last drop; the most before a drop */
} fs_window_t;

/* A window dropping every `bytes` of pages touched (0: FS_WINDOW_BYTES). */
void fs_window_init(fs_window_t *w, size_t bytes);
/* Records that [p, p + len) was read or written; drops the span once the
 * budget is reached. */
void fs_window_touch(fs_window_t *w, const void *p, size_t len);
/* Drops the pages touched so far (at the end of a pass). */
void fs_window_drop(fs_window_t *w);
/* Drops the pages holding [p, p + len) from this process at once. */
void fs_drop_pages(const void *p, size_t len);

#endif
