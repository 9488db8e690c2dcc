/* fs_device_sim.c — simulated GPUs (FEATSTORE_SIM_GPUS=N, 1..16): the
 * device bookkeeping of fs_device.h run on host memory, so tiers, replica
 * fills, IPC hand-off and device result slots are exercised without a GPU.
 *
 * Design: a device allocation is a memfd (allocated up front with
 * posix_fallocate, so a full machine fails the allocation as cudaMalloc
 * would, never later with SIGBUS) mapped shared; its IPC handle names the
 * exporter's pid and descriptor, and an importer reopens it through
 * /proc/PID/fd/FD and maps it read-only. The handle also carries the file's
 * inode, so a handle whose descriptor was closed and its number reused
 * fails cleanly instead of mapping some other file. Pinned memory is an
 * anonymous mapping. Three mutex-guarded registries remember what was
 * mapped (device allocations, pinned blocks, opened handles), which is what
 * the free and close calls need. Engines are the CPU twins, behind the
 * CUDA engines' own argument checks. Thread-safe throughout. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_device_rt.h"

#define SIM_ENV "FEATSTORE_SIM_GPUS"
#define SIM_DEVICE_BYTES ((size_t)16 << 30)        /* each simulated GPU's reported memory */
#define SIM_IPC_MAGIC 0x3155504d49534653ULL         /* "FSSIMPU1", little-endian */

/* ---- registries ------------------------------------------------------ */

typedef struct {
    void *addr;
    size_t len;
    int fd;      /* device allocations: the memfd, kept open for IPC; else -1 */
    int device;  /* device allocations and opened handles; else -1 */
} sim_map_t;

typedef struct {
    sim_map_t *v;
    size_t n, cap;
} sim_list_t;

static pthread_mutex_t sim_lock = PTHREAD_MUTEX_INITIALIZER;
static sim_list_t sim_device, sim_pinned, sim_opened;

/* ---- FEATSTORE_SIM_GPUS, read once ------------------------------------ */

static int sim_n;
static pthread_once_t sim_once = PTHREAD_ONCE_INIT;

/* fork() while another thread holds the registries' lock would leave the
 * child's copy locked forever (trainers fork data-loader workers): the
 * lock is taken around fork and released on both sides. */
static void sim_fork_prepare(void) { pthread_mutex_lock(&sim_lock); }
static void sim_fork_release(void) { pthread_mutex_unlock(&sim_lock); }

/* Digits only, 1..FS_MAX_DEVICES; anything else leaves the simulation off. */
static void sim_read_env(void)
{
    const char *s = getenv(SIM_ENV);
    if (!s || *s < '0' || *s > '9') return;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < 1 || v > FS_MAX_DEVICES) return;
    sim_n = (int)v;
    pthread_atfork(sim_fork_prepare, sim_fork_release, sim_fork_release);
}

int fs_sim_count(void)
{
    pthread_once(&sim_once, sim_read_env);
    return sim_n;
}

static int valid_device(int device) { return device >= 0 && device < fs_sim_count(); }

static fs_status_t no_such_device(fs_error_t *err, const char *what, int device)
{
    return fs_error(err, FS_ERR_NO_DEVICE, "%s: no simulated GPU %d (%s=%d: devices 0..%d)", what, device, SIM_ENV,
                    fs_sim_count(), fs_sim_count() - 1);
}

/* Appends m; 0, or -1 when out of memory. */
static int list_add(sim_list_t *l, sim_map_t m)
{
    int rc = 0;
    pthread_mutex_lock(&sim_lock);
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        sim_map_t *v = realloc(l->v, cap * sizeof *v);
        if (v) l->v = v, l->cap = cap;
        else rc = -1;
    }
    if (rc == 0) l->v[l->n++] = m;
    pthread_mutex_unlock(&sim_lock);
    return rc;
}

/* Finds the entry starting at addr: copies it to *out and, if `take`,
 * forgets it. 1 when found, else 0. */
static int list_find(sim_list_t *l, const void *addr, int take, sim_map_t *out)
{
    int found = 0;
    pthread_mutex_lock(&sim_lock);
    for (size_t i = 0; i < l->n; i++) {
        if (l->v[i].addr != addr) continue;
        *out = l->v[i];
        if (take) l->v[i] = l->v[--l->n];
        found = 1;
        break;
    }
    pthread_mutex_unlock(&sim_lock);
    return found;
}

/* ---- discovery and memory -------------------------------------------- */

fs_status_t fs_sim_devices_query(fs_devices_t *out, fs_error_t *err)
{
    (void)err;
    memset(out, 0, sizeof *out);
    int n = fs_sim_count();
    out->count = n;
    for (int i = 0; i < n; i++) {
        snprintf(out->dev[i].name, sizeof out->dev[i].name, "simulated GPU %d", i);
        out->dev[i].total_bytes = out->dev[i].free_bytes = SIM_DEVICE_BYTES;
        for (int j = 0; j < n; j++) out->peer[i][j] = i != j;
    }
    return FS_OK;
}

fs_status_t fs_sim_alloc_pinned(size_t bytes, void **ptr, fs_error_t *err)
{
    size_t len = bytes ? bytes : 1;
    *ptr = NULL;
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return fs_error(err, FS_ERR_NOMEM, "simulated cudaHostAlloc(%zu bytes): %s", bytes, strerror(errno));
    if (list_add(&sim_pinned, (sim_map_t){p, len, -1, -1})) {
        munmap(p, len);
        return fs_error(err, FS_ERR_NOMEM, "simulated cudaHostAlloc(%zu bytes): out of memory", bytes);
    }
    *ptr = p;
    return FS_OK;
}

void fs_sim_free_pinned(void *ptr)
{
    sim_map_t m;
    if (list_find(&sim_pinned, ptr, 1, &m)) munmap(m.addr, m.len);
}

/* A memfd of len bytes, every page allocated now; the descriptor, or -1
 * with the failing call and errno's text in why. */
static int sim_memfd(int device, size_t len, char *why, size_t why_len)
{
    char name[32];
    snprintf(name, sizeof name, "featstore-sim-gpu%d", device);
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0) {
        snprintf(why, why_len, "memfd_create: %s", strerror(errno));
        return -1;
    }
    int rc = ftruncate(fd, (off_t)len) ? errno : posix_fallocate(fd, 0, (off_t)len);
    if (rc) {
        snprintf(why, why_len, "reserving the memory: %s", strerror(rc));
        close(fd);
        return -1;
    }
    return fd;
}

fs_status_t fs_sim_alloc_device(int device, size_t bytes, void **ptr, fs_error_t *err)
{
    *ptr = NULL;
    if (!valid_device(device)) return no_such_device(err, "simulated cudaMalloc", device);
    size_t len = bytes ? bytes : 1;
    char why[160];
    int fd = sim_memfd(device, len, why, sizeof why);
    if (fd < 0)
        return fs_error(err, FS_ERR_RESOURCE, "simulated cudaMalloc(%zu bytes) on device %d: %s", bytes, device, why);
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        close(fd);
        return fs_error(err, FS_ERR_RESOURCE, "simulated cudaMalloc(%zu bytes) on device %d: mmap: %s", bytes, device,
                        strerror(e));
    }
    if (list_add(&sim_device, (sim_map_t){p, len, fd, device})) {
        munmap(p, len), close(fd);
        return fs_error(err, FS_ERR_NOMEM, "simulated cudaMalloc(%zu bytes): out of host memory", bytes);
    }
    *ptr = p;
    return FS_OK;
}

void fs_sim_free_device(void *ptr)
{
    sim_map_t m;
    if (!list_find(&sim_device, ptr, 1, &m)) return;
    munmap(m.addr, m.len);
    close(m.fd);
}

fs_status_t fs_sim_copy(void *dst, const void *src, size_t bytes, fs_error_t *err)
{
    if (bytes && (!dst || !src))
        return fs_error(err, FS_ERR_IO, "simulated cudaMemcpy(%zu bytes): NULL %s", bytes,
                        dst ? "source" : "destination");
    if (bytes) memmove(dst, src, bytes);
    return FS_OK;
}

fs_status_t fs_sim_enable_peer(int device, int peer, fs_error_t *err)
{
    if (!valid_device(device)) return no_such_device(err, "peer access", device);
    if (!valid_device(peer)) return no_such_device(err, "peer access", peer);
    if (device == peer) /* as cudaDeviceEnablePeerAccess: cudaErrorInvalidDevice */
        return fs_error(err, FS_ERR_NO_DEVICE, "peer access %d -> %d: a device is not its own peer", device, peer);
    return FS_OK;
}

/* FEATSTORE_SIM_HOST_REGISTER=refuse plays a driver that will not register
 * file-backed memory, so the pinned-copy fallback is tested too. */
fs_status_t fs_sim_host_register(const void *ptr, size_t bytes, const void **dev_ptr, fs_error_t *err)
{
    const char *mode = getenv("FEATSTORE_SIM_HOST_REGISTER");
    *dev_ptr = NULL;
    if (mode && strcmp(mode, "refuse") == 0)
        return fs_error(err, FS_ERR_UNSUPPORTED, "cudaHostRegister(%zu bytes, mapped, read-only): refused by the "
                        "simulated driver (FEATSTORE_SIM_HOST_REGISTER=refuse)", bytes);
    *dev_ptr = ptr; /* simulated kernels read host memory directly */
    return FS_OK;
}

/* ---- IPC -------------------------------------------------------------- */

/* What a simulated fs_ipc_handle_t holds. */
typedef struct {
    uint64_t magic;
    int64_t pid;           /* the exporter */
    int32_t fd;            /* its memfd, open in the exporter */
    int32_t device;
    uint64_t len;
    uint64_t ino, dev;     /* the memfd's identity, against a reused descriptor */
} sim_handle_t;
_Static_assert(sizeof(sim_handle_t) <= FS_IPC_HANDLE_BYTES, "the simulated IPC handle fits fs_ipc_handle_t");

fs_status_t fs_sim_ipc_export(const void *dev_base, fs_ipc_handle_t *out, fs_error_t *err)
{
    sim_map_t m;
    if (!list_find(&sim_device, dev_base, 0, &m))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT,
                        "IPC export: %p is not the base of a live simulated device allocation", dev_base);
    struct stat st;
    if (fstat(m.fd, &st))
        return fs_error(err, FS_ERR_INTERNAL, "IPC export: fstat of the allocation's memfd: %s", strerror(errno));
    sim_handle_t h = {.magic = SIM_IPC_MAGIC, .pid = getpid(), .fd = m.fd, .device = m.device, .len = m.len,
                      .ino = (uint64_t)st.st_ino, .dev = (uint64_t)st.st_dev};
    memset(out, 0, sizeof *out);
    memcpy(out->bytes, &h, sizeof h);
    return FS_OK;
}

/* Opens the exporter's memfd read-only into *fd, checking that it is the
 * exported one and holds len bytes. */
static fs_status_t sim_ipc_reopen(const sim_handle_t *h, size_t len, int *fd, fs_error_t *err)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%lld/fd/%d", (long long)h->pid, (int)h->fd);
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0)
        return fs_error(err, FS_ERR_UNAVAILABLE, "IPC open: %s: %s (the exporting process is gone or freed the "
                        "allocation)", path, strerror(errno));
    struct stat st;
    fs_status_t rc = FS_OK;
    if (fstat(*fd, &st))
        rc = fs_error(err, FS_ERR_UNAVAILABLE, "IPC open: %s: %s", path, strerror(errno));
    else if ((uint64_t)st.st_ino != h->ino || (uint64_t)st.st_dev != h->dev)
        rc = fs_error(err, FS_ERR_UNAVAILABLE, "IPC open: %s no longer holds the exported allocation (freed)", path);
    else if ((uint64_t)st.st_size < len)
        rc = fs_error(err, FS_ERR_INVALID_ARGUMENT, "IPC open: %zu bytes asked of an allocation of %lld", len,
                      (long long)st.st_size);
    if (rc != FS_OK) close(*fd), *fd = -1;
    return rc;
}

fs_status_t fs_sim_ipc_open(int device, const fs_ipc_handle_t *handle, size_t bytes, void **ptr, fs_error_t *err)
{
    sim_handle_t h;
    memcpy(&h, handle->bytes, sizeof h);
    *ptr = NULL;
    if (!valid_device(device)) return no_such_device(err, "IPC open", device);
    if (h.magic != SIM_IPC_MAGIC)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "IPC open: not a featstore simulated IPC handle");
    if (h.pid == (int64_t)getpid())
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "IPC open: the handle was exported by this process (pid %lld); a "
                        "process cannot open its own handles (CUDA: invalid context)", (long long)h.pid);
    size_t len = bytes ? bytes : (size_t)h.len;
    int fd;
    fs_status_t st = sim_ipc_reopen(&h, len, &fd, err);
    if (st != FS_OK) return st;
    void *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED)
        return fs_error(err, FS_ERR_UNAVAILABLE, "IPC open: mapping %zu bytes: %s", len, strerror(e));
    if (list_add(&sim_opened, (sim_map_t){p, len, -1, device})) {
        munmap(p, len);
        return fs_error(err, FS_ERR_NOMEM, "IPC open: out of host memory");
    }
    *ptr = p;
    return FS_OK;
}

void fs_sim_ipc_close(void *ptr)
{
    sim_map_t m;
    if (list_find(&sim_opened, ptr, 1, &m)) munmap(m.addr, m.len);
}

/* ---- broadcast and engines ------------------------------------------- */

fs_status_t fs_sim_broadcast(const int *devices, void *const *bufs, int n, size_t bytes, const char **method,
                             fs_error_t *err)
{
    for (int i = 0; i < n; i++)
        if (!valid_device(devices[i])) return no_such_device(err, "broadcast", devices[i]);
    for (int i = 1; i < n; i++)
        if (bufs[i] != bufs[0]) memmove(bufs[i], bufs[0], bytes);
    if (method) *method = "simulated";
    return FS_OK;
}

fs_status_t fs_sim_gather(int device, const fs_table_view_t *t, const int64_t *ids, int64_t n,
                          fs_dtype_t out_dtype, void *out, fs_gather_counters_t *counters, fs_error_t *err)
{
    if (!valid_device(device)) return no_such_device(err, "gather", device);
    return fs_gather_cpu(t, ids, n, out_dtype, out, NULL, counters, err);
}

fs_status_t fs_sim_typed_sample(fs_typed_sampler_t *s, int device, const fs_typed_view_t *g,
                                const fs_typed_req_t *req, const fs_typed_seeds_t *groups, int num_groups,
                                const fs_typed_exclude_t *excl, int64_t num_excl, fs_typed_result_t *res,
                                fs_error_t *err)
{
    if (!valid_device(device)) return no_such_device(err, "typed sample (CUDA)", device);
    return fs_typed_sample_cpu(s, g, req, groups, num_groups, excl, num_excl, res, err);
}
