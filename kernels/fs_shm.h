/* fs_shm.h — the memory the serving path shares with trainers: memfds,
 * filled through a mapping that asks for 2 MiB pages.
 *
 * Why huge pages matter here: every trainer maps the whole dataset and
 * reads rows at random. With 4 KiB pages each process has its own page
 * tables for it (2 MB of them per GB of dataset), and trainers sharing a
 * core evict each other's from the TLB and the caches; measured on a
 * 2-core VM, 4 trainers ran 0.88x as fast as 4 threads of one process with
 * 4 KiB pages and 0.98x with 2 MiB ones (docs/serving.md "Huge pages").
 * A memfd's pages come out huge only when they are first allocated through
 * a mapping that asked for them (the host's shmem THP setting "advise"),
 * or always ("always", "within_size"); pages written with write() or
 * reserved with fallocate() are small under "advise". Hence one way in:
 * fs_shm_map_reserved.
 *
 * Thread-safety: the functions touch only their arguments and /proc, /sys. */
#ifndef FS_SHM_H
#define FS_SHM_H

#include <stddef.h>

#include "fs_types.h"

/* Sizes memfd `fd` to `len` bytes (at least 1), maps it read-write at
 * *addr, asks for huge pages and allocates every page now
 * (MADV_POPULATE_WRITE; posix_fallocate on kernels before 5.14), so that
 * running out of memory is this error, naming `what`, and never a SIGBUS
 * on a later write. The caller writes through *addr and munmaps it
 * (len bytes) before sealing the memfd against writes. */
fs_status_t fs_shm_map_reserved(int fd, size_t len, const char *what, void **addr, fs_error_t *err);

/* Allocates bytes [off, off + len) of memfd `fd`, mapped read-write
 * shared at `map` (its offset 0; off page-aligned), the way
 * fs_shm_map_reserved does; 0, or the errno (ENOMEM). */
int fs_shm_reserve(int fd, char *map, size_t off, size_t len);

/* Allocates the pages of this process's private writable mapping
 * [p, p + len) now (MADV_POPULATE_WRITE). Returns 0, or the errno (ENOMEM)
 * where a store to those pages would have met the OOM killer. Kernels
 * before 5.14 get each page touched instead (no error can be seen then). */
int fs_shm_populate(char *p, size_t len);

/* Bytes of this process's mapping that starts at `addr` which are mapped
 * with huge pages (/proc/self/smaps: ShmemPmdMapped + FilePmdMapped);
 * -1 when that cannot be read. */
long long fs_shm_huge_bytes(const void *addr);

/* The host's shmem THP setting ("never", "advise", "always", ...: the
 * bracketed word of /sys/kernel/mm/transparent_hugepage/shmem_enabled),
 * or "unknown". Writes at most `size` bytes to buf and returns it. */
const char *fs_shm_huge_setting(char *buf, size_t size);

/* 0 when no shmem page of this host can be a 2 MiB page (the setting
 * "never" or "deny", and the 2 MiB size not enabled on its own), so
 * fs_shm_huge_bytes of a memfd's mapping is 0 without reading smaps, which
 * walks every page table of the process (47 ms after a 0.5 GiB copy). */
int fs_shm_huge_possible(void);

#endif
