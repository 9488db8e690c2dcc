/* fs_shm.c — see fs_shm.h. Reserving through the mapping is what makes the
 * pages huge under the host setting "advise": MADV_POPULATE_WRITE faults
 * every page in through a VM_HUGEPAGE mapping, and reports a failure to
 * allocate as an errno where a store to the page would raise SIGBUS. */
#include "fs_shm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older headers lack it */
#endif

int fs_shm_reserve(int fd, char *map, size_t off, size_t len)
{
    if (madvise(map + off, len, MADV_POPULATE_WRITE) == 0) return 0;
    if (errno != EINVAL) return errno; /* ENOMEM, EFAULT: the memory is not there */
    int e = posix_fallocate(fd, (off_t)off, (off_t)len); /* a kernel without it: small pages, still reserved */
    return e == EOPNOTSUPP ? 0 : e;
}

int fs_shm_populate(char *p, size_t len)
{
    if (madvise(p, len, MADV_POPULATE_WRITE) == 0) return 0;
    if (errno != EINVAL) return errno;
    for (size_t off = 0; off < len; off += 4096) p[off] = 0; /* fresh private pages hold zeros already */
    return 0;
}

fs_status_t fs_shm_map_reserved(int fd, size_t len, const char *what, void **addr, fs_error_t *err)
{
    *addr = NULL;
    if (len == 0) len = 1;
    if (ftruncate(fd, (off_t)len) != 0)
        return fs_error(err, FS_ERR_NOMEM, "%s: cannot size shared memory to %zu bytes: %s", what, len,
                        strerror(errno));
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return fs_error(err, FS_ERR_NOMEM, "%s: cannot map %zu bytes of shared memory: %s", what, len,
                        strerror(errno));
    madvise(p, len, MADV_HUGEPAGE); /* best effort: the host's setting decides */
    int e = fs_shm_reserve(fd, p, 0, len);
    if (e != 0) {
        munmap(p, len);
        return fs_error(err, FS_ERR_NOMEM, "%s: cannot allocate %zu bytes of shared memory: %s", what, len,
                        strerror(e));
    }
    *addr = p;
    return FS_OK;
}

/* Adds a "Name:   N kB" field's bytes to *sum if `line` is one of `names`. */
static void add_field(const char *line, const char *const *names, long long *sum)
{
    for (; *names; names++) {
        size_t n = strlen(*names);
        long long kb;
        if (strncmp(line, *names, n) == 0 && sscanf(line + n, " %lld", &kb) == 1) *sum += kb * 1024;
    }
}

long long fs_shm_huge_bytes(const void *addr)
{
    static const char *const huge[] = {"ShmemPmdMapped:", "FilePmdMapped:", NULL};
    FILE *f = fopen("/proc/self/smaps", "re");
    if (!f) return -1;
    char line[512];
    unsigned long start, end;
    long long sum = -1;
    int inside = 0;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "%lx-%lx ", &start, &end) == 2) { /* a mapping's first line; fields are "Name: N kB" */
            if (inside) break; /* the next mapping: done */
            inside = start == (unsigned long)addr;
            if (inside) sum = 0;
        } else if (inside) {
            add_field(line, huge, &sum);
        }
    }
    fclose(f);
    return sum;
}

/* The bracketed word of a sysfs THP setting file into buf ("unknown" when
 * it cannot be read). */
static const char *bracketed(const char *file, char *buf, size_t size)
{
    snprintf(buf, size, "unknown");
    FILE *f = fopen(file, "re");
    if (!f) return buf;
    char line[256];
    if (fgets(line, sizeof line, f)) {
        char *open = strchr(line, '['), *close = open ? strchr(open, ']') : NULL;
        if (close && (size_t)(close - open) <= size) snprintf(buf, size, "%.*s", (int)(close - open - 1), open + 1);
    }
    fclose(f);
    return buf;
}

const char *fs_shm_huge_setting(char *buf, size_t size)
{
    return bracketed("/sys/kernel/mm/transparent_hugepage/shmem_enabled", buf, size);
}

int fs_shm_huge_possible(void)
{
    char own[32], all[32];
    /* kernels with per-size THP (6.11+) let the 2 MiB size decide for itself, or "inherit" */
    bracketed("/sys/kernel/mm/transparent_hugepage/hugepages-2048kB/shmem_enabled", own, sizeof own);
    if (strcmp(own, "never") == 0) return 0;
    if (strcmp(own, "unknown") != 0 && strcmp(own, "inherit") != 0) return 1;
    fs_shm_huge_setting(all, sizeof all);
    return strcmp(all, "never") != 0 && strcmp(all, "deny") != 0;
}
