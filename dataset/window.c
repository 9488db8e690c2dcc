/* window.c — bounded windows over mapped files (see window.h). The span is
 * rounded outward to whole pages (fs_drop_pages: a mapping starts on a page
 * and ends on one, so the rounding never leaves it) or to fault-around
 * blocks within the array's own pages (a window), and dropping a page that
 * was not touched costs nothing. */
#include "window.h"

#include <sys/mman.h>
#include <unistd.h>

static uintptr_t page_size(void)
{
    static uintptr_t size;
    if (!size) size = (uintptr_t)sysconf(_SC_PAGESIZE);
    return size;
}

void fs_drop_pages(const void *p, size_t len)
{
    if (!len) return;
    uintptr_t ps = page_size(), lo = (uintptr_t)p & ~(ps - 1), hi = ((uintptr_t)p + len + ps - 1) & ~(ps - 1);
    madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

void fs_window_init(fs_window_t *w, const void *base, size_t len)
{
    uintptr_t ps = page_size();
    *w = (fs_window_t){.begin = (uintptr_t)base & ~(ps - 1), .end = ((uintptr_t)base + len + ps - 1) & ~(ps - 1),
                       .budget = FS_WINDOW_BYTES};
}

void fs_window_drop(fs_window_t *w)
{
    if (w->hi > w->lo) madvise((void *)w->lo, w->hi - w->lo, MADV_DONTNEED);
    w->lo = w->hi = 0;
}

void fs_window_touch(fs_window_t *w, const void *p, size_t len)
{
    if (!len) return;
    uintptr_t lo = (uintptr_t)p & ~(FS_FAULT_AROUND_BYTES - 1);
    uintptr_t hi = ((uintptr_t)p + len + FS_FAULT_AROUND_BYTES - 1) & ~(FS_FAULT_AROUND_BYTES - 1);
    if (lo < w->begin) lo = w->begin;
    if (hi > w->end) hi = w->end;
    if (w->hi == w->lo) w->lo = lo, w->hi = hi;
    if (lo < w->lo) w->lo = lo;
    if (hi > w->hi) w->hi = hi;
    if (w->hi - w->lo >= w->budget) fs_window_drop(w);
}
