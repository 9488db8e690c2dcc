/* client_local_slot.c — a unix:// connection's result slots: this
 * process's own memory, which batches point into (client_local_internal.h).
 *
 * At connect the server passes a ring of memfd slots, which this process
 * leaves unused: the engines run here, so a slot is anonymous memory asked
 * for 2 MiB pages (slot_reserve says why), grown as batches need.
 *
 * Warm slots: a slot's pages cost their first touch, which on a VM is
 * about 2.5 us per 4 KiB page (5 ms for an 8 MB batch), and every new
 * connection paid it again. A stream opens connections of its own each
 * epoch (stream_open.c), so a trainer paid it per epoch and producer, in
 * its first batches. So when a connection goes, its slots stay mapped and
 * populated, and the next connection takes them. They are kept only while
 * another connection of this process is open (the last one's close frees
 * them) and up to WARM_MAX_SLOTS and WARM_MAX_BYTES; a forked child drops
 * its copies of the ones it inherited.
 *
 * The executor's region: a request takes the lowest free slot once it
 * passed its limits, the sampler writes into it, and it grows in place
 * (mremap); a GPU reader's rows go to the slot's device twin, a buffer in
 * that GPU's memory. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "client_local_internal.h"
#include "fs_device.h"
#include "fs_shm.h"

#define WARM_MAX_SLOTS 16
#define WARM_MAX_BYTES ((size_t)1 << 30)

static struct {
    pthread_mutex_t mu;
    pid_t pid;             /* the process the slots and the count are of */
    int open;              /* connections of this process that are open */
    int n;
    size_t bytes;
    slot_t slot[WARM_MAX_SLOTS]; /* largest first */
} warm = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void slot_unmap(slot_t *s)
{
    if (s->base) munmap(s->base, s->cap);
}

/* Under warm.mu: a forked child's inherited slots and count are its
 * parent's state: dropped (the copies freed). */
static void warm_own_locked(void)
{
    if (warm.pid == getpid()) return;
    for (int i = 0; i < warm.n; i++) slot_unmap(&warm.slot[i]);
    warm.n = 0, warm.bytes = 0, warm.open = 0, warm.pid = getpid();
}

/* A new connection: counted, and its server's empty slots swapped for warm
 * ones, largest to slot 0 (acquire_slot takes the lowest free one). */
void fs_local_warm_take(local_t *L)
{
    pthread_mutex_lock(&warm.mu);
    warm_own_locked();
    warm.open++;
    L->counted = 1;
    for (int i = 0; i < L->num_slots && warm.n > 0; i++) {
        L->slots[i] = warm.slot[0];
        warm.bytes -= warm.slot[0].cap;
        memmove(&warm.slot[0], &warm.slot[1], sizeof warm.slot[0] * (size_t)--warm.n);
    }
    pthread_mutex_unlock(&warm.mu);
}

/* Under warm.mu: keeps slot `s` warm if there is room, else frees it. */
static void warm_keep_locked(slot_t *s)
{
    if (!s->base || warm.n == WARM_MAX_SLOTS || warm.bytes + s->cap > WARM_MAX_BYTES) {
        slot_unmap(s);
        return;
    }
    int at = warm.n;
    while (at > 0 && warm.slot[at - 1].cap < s->cap) at--;
    memmove(&warm.slot[at + 1], &warm.slot[at], sizeof warm.slot[0] * (size_t)(warm.n - at));
    warm.slot[at] = (slot_t){.base = s->base, .cap = s->cap};
    warm.n++, warm.bytes += s->cap;
}

/* A connection's last reference: its slots kept warm while another
 * connection of this process is open; the last one frees them all. */
void fs_local_warm_release(local_t *L)
{
    pthread_mutex_lock(&warm.mu);
    warm_own_locked();
    int ours = L->counted && L->opener == getpid();
    if (ours) warm.open--;
    for (int i = 0; i < L->num_slots; i++) {
        if (ours && warm.open > 0) warm_keep_locked(&L->slots[i]);
        else slot_unmap(&L->slots[i]);
    }
    if (warm.open == 0) {
        for (int i = 0; i < warm.n; i++) slot_unmap(&warm.slot[i]);
        warm.n = 0, warm.bytes = 0;
    }
    pthread_mutex_unlock(&warm.mu);
}

/* Lowest free slot first: a trainer that frees each batch before asking for
 * the next keeps reusing slot 0, so only one slot's pages are ever faulted
 * in and resident. */
static int acquire_slot(local_t *L)
{
    pthread_mutex_lock(&L->lock);
    int found = -1;
    for (int i = 0; i < L->num_slots && found < 0; i++)
        if (!L->slots[i].busy) found = i;
    if (found >= 0) {
        L->slots[found].busy = 1;
        L->refs++;
    }
    pthread_mutex_unlock(&L->lock);
    return found;
}

void fs_local_slot_release(local_t *L, int i)
{
    pthread_mutex_lock(&L->lock);
    L->slots[i].busy = 0;
    pthread_mutex_unlock(&L->lock);
    fs_local_unref(L);
}

/* Names a new slot's memory "featstore-slot-N" in /proc/PID/maps and smaps
 * (Linux 5.17+; best effort), N unique in the process: a slot is then
 * visible as such, and two slots never merge into one mapping. mremap
 * keeps the name. */
static void slot_name(void *p, size_t len)
{
    static atomic_ulong next;
    char name[48];
    snprintf(name, sizeof name, "featstore-slot-%lu", atomic_fetch_add(&next, 1));
    prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)p, len, (unsigned long)name);
}

/* Grows a slot to hold `bytes`, allocating the new pages at once: later
 * batches reuse them without page faults, and memory that is not there is
 * this error rather than a SIGBUS or an OOM kill in the gather. A slot is
 * this process's private memory, not the memfd its server sent (which it
 * never maps: the engines run here): anonymous memory asked for 2 MiB pages
 * gets them under the kernel's default THP setting ("madvise"), where
 * shmem ("never") does not, and writing batches into 4 KiB pages cost four
 * trainers on two cores ~3% of their rate (bench_serve: docs/benchmarks.md).
 * Sizes above 2 MiB are rounded to whole huge pages so the mapping can be
 * aligned to them. */
static fs_status_t slot_reserve(fs_client_t *c, slot_t *s, size_t bytes)
{
    if (bytes <= s->cap) return FS_OK;
    size_t cap = s->cap ? s->cap : 1 << 20, huge = (size_t)2 << 20;
    while (cap < bytes) cap += cap / 2;
    cap = cap >= huge ? (cap + huge - 1) & ~(huge - 1) : (cap + 4095) & ~(size_t)4095;
    void *p = s->base ? mremap(s->base, s->cap, cap, MREMAP_MAYMOVE)
                      : mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return fs_client_fail(c, FS_ERR_NOMEM, "cannot map a result slot: %s", strerror(errno));
    if (!s->base) slot_name(p, cap);
    madvise(p, cap, MADV_HUGEPAGE); /* before the pages are touched: huge where the host allows */
    int e = fs_shm_populate((char *)p + s->cap, cap - s->cap);
    if (e != 0) { /* back to the old size, whose pages are there */
        if (s->cap) s->base = mremap(p, cap, s->cap, 0);
        else munmap(p, cap);
        return fs_client_fail(c, FS_ERR_NOMEM, "cannot allocate %zu bytes for a result slot: %s", cap - s->cap,
                              strerror(e));
    }
    s->base = p;
    s->cap = cap;
    return FS_OK;
}

static void slot_region_at(fs_exec_region_t *r, const slot_t *s)
{
    r->base = s->base, r->cap = s->cap;
}

static fs_status_t slot_take(fs_exec_region_t *r, fs_error_t *err)
{
    slot_region_t *sr = r->ctx;
    if ((sr->slot = acquire_slot(sr->L)) < 0)
        return fs_error(err, FS_ERR_RESOURCE, "all %d result slots are held: free a batch first", sr->L->num_slots);
    slot_region_at(r, &sr->L->slots[sr->slot]);
    return FS_OK;
}

static fs_status_t slot_grow(fs_exec_region_t *r, size_t bytes, fs_error_t *err)
{
    slot_region_t *sr = r->ctx;
    slot_t *s = &sr->L->slots[sr->slot];
    if (slot_reserve(sr->c, s, bytes) != FS_OK) return fs_error(err, FS_ERR_NOMEM, "%s", sr->c->errstr);
    slot_region_at(r, s);
    return FS_OK;
}

/* Grows a slot's device twin to `bytes` (GPU trainers). */
static fs_status_t dev_reserve(local_t *L, slot_t *s, size_t bytes, fs_error_t *err)
{
    if (bytes <= s->dev_cap) return FS_OK;
    size_t cap = s->dev_cap ? s->dev_cap : 1 << 20;
    while (cap < bytes) cap += cap / 2;
    fs_cuda_free_device(s->dev);
    s->dev = NULL, s->dev_cap = 0;
    fs_status_t st = fs_cuda_alloc_device(L->reader, cap, (void **)&s->dev, err);
    if (st == FS_OK) s->dev_cap = cap;
    return st;
}

static fs_status_t slot_device(fs_exec_region_t *r, size_t bytes, char **mem, fs_error_t *err)
{
    slot_region_t *sr = r->ctx;
    slot_t *s = &sr->L->slots[sr->slot];
    fs_status_t st = dev_reserve(sr->L, s, bytes, err);
    *mem = s->dev;
    return st;
}

fs_exec_region_t fs_local_slot_region(slot_region_t *sr)
{
    return (fs_exec_region_t){.ctx = sr, .take = slot_take, .grow = slot_grow, .device_mem = slot_device};
}
