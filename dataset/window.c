/* window.c — bounded windows over mapped files (see window.h). The span is
 * rounded outward to whole pages: a mapping starts on a page and ends on
 * one, so the rounding never leaves the mapping, and dropping a page that
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

void fs_window_init(fs_window_t *w, size_t bytes)
{
    *w = (fs_window_t){.budget = (bytes ? bytes : FS_WINDOW_BYTES) / page_size(), .last_page = UINTPTR_MAX};
    if (!w->budget) w->budget = 1;
}

void fs_window_drop(fs_window_t *w)
{
    if (w->hi > w->lo) madvise((void *)w->lo, w->hi - w->lo, MADV_DONTNEED);
    w->lo = w->hi = 0;
    w->pages = 0;
    w->last_page = UINTPTR_MAX;
}

void fs_window_touch(fs_window_t *w, const void *p, size_t len)
{
    if (!len) return;
    uintptr_t ps = page_size(), first = (uintptr_t)p / ps, last = ((uintptr_t)p + len - 1) / ps;
    if (first == w->last_page) first++;
    if (last >= first) w->pages += last - first + 1;
    w->last_page = last;
    uintptr_t lo = (uintptr_t)p & ~(ps - 1), hi = (last + 1) * ps;
    if (w->hi == w->lo) w->lo = lo, w->hi = hi;
    if (lo < w->lo) w->lo = lo;
    if (hi > w->hi) w->hi = hi;
    if (w->pages >= w->budget) fs_window_drop(w);
}
