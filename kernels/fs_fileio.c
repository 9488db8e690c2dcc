/* fs_fileio.c — whole reads and writes (fs_fileio.h). */
#include "fs_fileio.h"

#include <errno.h>
#include <unistd.h>

ssize_t fs_pread_full(int fd, void *buf, size_t n, uint64_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) break; /* the end of the file */
        got += (size_t)r;
    }
    return (ssize_t)got;
}

/* One loop for both: pwrite at off + done, or write when `positional` is 0. */
static int write_full(int fd, const void *buf, size_t n, uint64_t off, int positional)
{
    for (size_t done = 0; done < n;) {
        ssize_t w = positional ? pwrite(fd, (const char *)buf + done, n - done, (off_t)(off + done))
                               : write(fd, (const char *)buf + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return w < 0 ? errno : EIO;
        done += (size_t)w;
    }
    return 0;
}

int fs_pwrite_full(int fd, const void *buf, size_t n, uint64_t off) { return write_full(fd, buf, n, off, 1); }
int fs_write_full(int fd, const void *buf, size_t n) { return write_full(fd, buf, n, 0, 0); }
