/* fs_fileio.h — whole reads and writes of files: the loops around pread,
 * pwrite and write that retry interrupted calls and short counts, written
 * once for the dataset's copies, the row checksums, the partition book and
 * the shard's file serving.
 *
 * Thread-safety: as the system calls they wrap (pread and pwrite leave the
 * file position alone; fs_write_full moves it). */
#ifndef FS_FILEIO_H
#define FS_FILEIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Reads n bytes at offset off, or up to the end of the file if it ends
 * first: the bytes read (fewer than n only at the end), or -1 with errno
 * set. */
ssize_t fs_pread_full(int fd, void *buf, size_t n, uint64_t off);

/* Writes all n bytes at offset off (fs_pwrite_full) or at the file
 * position (fs_write_full): 0, or the errno (EIO when the file takes no
 * more bytes without saying why). */
int fs_pwrite_full(int fd, const void *buf, size_t n, uint64_t off);
int fs_write_full(int fd, const void *buf, size_t n);

#endif
