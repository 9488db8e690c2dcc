/* fs_rowcache.c — the shared row cache (fs_rowcache.h).
 *
 * The region: the header (sizes, offsets, the lock, the policy's hand and
 * queue ends, counters), then one slot_t per slot, then the index's bucket
 * heads (int32), then the rows at a FS_ROWCACHE_ALIGN-aligned offset. Every
 * link is an int32 slot index (NONE = -1), so the region means the same at
 * any address. A slot's `next` chains it in its bucket while it is indexed
 * and in the free list while it is FREE and unpinned; a FREE slot that is
 * still pinned (its load failed) is in neither, and joins the free list when
 * its last pin goes, so a late release never drops a new owner's pin.
 *
 * SIEVE and LRU keep the indexed slots in a queue from head (newest) to
 * tail (oldest); CLOCK needs no queue: its hand walks the slot array. The
 * counts of READY, pinned and evictable (READY, unpinned) slots change in
 * one place, set_slot, so "nothing is evictable" is O(1) and a batch of
 * BYPASSes does not sweep a full cache once per row. */
#include "fs_rowcache.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC 0x31304352534f5246ull /* "FROSRC01" read as a little-endian uint64 */
#define VERSION 1
#define NONE (-1)
#define MAX_SLOTS ((uint64_t)INT32_MAX - 1)

typedef struct {
    int64_t row;
    int32_t next;         /* bucket chain (indexed) or free list (FREE, unpinned) */
    int32_t newer, older; /* the SIEVE/LRU queue, toward the head / the tail */
    uint32_t pins;
    uint8_t state;        /* fs_rowcache_state_t */
    uint8_t visited;      /* SIEVE's visited bit, CLOCK's reference bit */
} slot_t;

struct fs_rowcache {
    uint64_t magic, version, header_bytes; /* header_bytes: sizeof this struct, so other builds are refused */
    uint64_t slots, row_bytes, stride, buckets, region_bytes;
    uint64_t meta_off, bucket_off, data_off;
    uint32_t policy;
    pthread_mutex_t lock;
    /* The rest changes under the lock. */
    int32_t head, tail; /* the queue's newest and oldest slots */
    int32_t hand;       /* SIEVE: a queued slot or NONE (start at the tail); CLOCK: a slot index */
    int32_t free_head;
    uint64_t ready, pinned, evictable;
    uint64_t hits, misses, busy, bypass, evictions, owner_deaths;
    uint64_t io_reads, io_bytes, io_ns, checksum_failures; /* atomics, outside the lock (fs_rowcache_add_io) */
};

typedef struct {
    uint64_t meta_off, bucket_off, data_off, stride, buckets, total;
} layout_t;

static uint64_t round_up(uint64_t x, uint64_t align) { return (x + align - 1) & ~(align - 1); }

/* The offsets of a cache's parts; 0 when slots is out of range or the
 * total overflows size_t. */
static int compute_layout(uint64_t slots, uint64_t row_bytes, layout_t *l)
{
    if (slots < 1 || slots > MAX_SLOTS || row_bytes > UINT64_MAX - FS_ROWCACHE_ROW_ALIGN) return 0;
    l->buckets = 1;
    while (l->buckets < 2 * slots) l->buckets <<= 1; /* load <= 1/2: chains stay short */
    /* Below 2^31 slots the metadata and buckets cannot overflow 64 bits. */
    l->meta_off = round_up(sizeof(struct fs_rowcache), 64);
    l->bucket_off = round_up(l->meta_off + slots * sizeof(slot_t), 64);
    l->data_off = round_up(l->bucket_off + l->buckets * sizeof(int32_t), FS_ROWCACHE_ALIGN);
    l->stride = round_up(row_bytes, FS_ROWCACHE_ROW_ALIGN);
    uint64_t data_bytes;
    if (__builtin_mul_overflow(slots, l->stride, &data_bytes)) return 0;
    if (__builtin_add_overflow(l->data_off, data_bytes, &l->total) || l->total > SIZE_MAX) return 0;
    return 1;
}

size_t fs_rowcache_region_bytes(uint64_t slots, uint64_t row_bytes)
{
    layout_t l;
    return compute_layout(slots, row_bytes, &l) ? (size_t)l.total : 0;
}

static const char *const policy_names[] = {"sieve", "lru", "clock"};
#define POLICIES (sizeof policy_names / sizeof *policy_names)

const char *fs_cache_policy_name(fs_cache_policy_t policy)
{
    return (unsigned)policy < POLICIES ? policy_names[policy] : "unknown";
}

fs_status_t fs_cache_policy_parse(const char *name, fs_cache_policy_t *out, fs_error_t *err)
{
    for (unsigned p = 0; name && p < POLICIES; p++)
        if (strcmp(name, policy_names[p]) == 0) {
            *out = (fs_cache_policy_t)p;
            return FS_OK;
        }
    return fs_error(err, FS_ERR_INVALID_ARGUMENT, "row cache: unknown policy '%s' (expected sieve, lru or clock)",
                    name ? name : "(null)");
}

/* ---- the parts of the region ------------------------------------------------ */

static slot_t *slot_at(fs_rowcache_t *c, int32_t s) { return (slot_t *)((char *)c + c->meta_off) + s; }
static int32_t *bucket_heads(fs_rowcache_t *c) { return (int32_t *)((char *)c + c->bucket_off); }
static int valid_slot(const fs_rowcache_t *c, int64_t s) { return s >= 0 && (uint64_t)s < c->slots; }
static int is_evictable(const slot_t *m) { return m->state == FS_ROWCACHE_READY && m->pins == 0; }

/* Sets a slot's state and pins, keeping the counts that the bypass test and
 * the stats read. */
static void set_slot(fs_rowcache_t *c, slot_t *m, uint8_t state, uint32_t pins)
{
    c->ready -= m->state == FS_ROWCACHE_READY;
    c->pinned -= m->pins > 0;
    c->evictable -= is_evictable(m);
    m->state = state, m->pins = pins;
    c->ready += m->state == FS_ROWCACHE_READY;
    c->pinned += m->pins > 0;
    c->evictable += is_evictable(m);
}

static void free_push(fs_rowcache_t *c, int32_t s)
{
    slot_at(c, s)->next = c->free_head;
    c->free_head = s;
}

/* ---- the index: row -> slot, chained through slot_t.next -------------------- */

static int32_t *bucket_of(fs_rowcache_t *c, int64_t row)
{
    uint64_t x = (uint64_t)row; /* murmur3's finalizer: node ids are often dense, so mix them */
    x ^= x >> 33, x *= 0xff51afd7ed558ccdull, x ^= x >> 33, x *= 0xc4ceb9fe1a85ec53ull, x ^= x >> 33;
    return bucket_heads(c) + (x & (c->buckets - 1));
}

static int32_t index_find(fs_rowcache_t *c, int64_t row)
{
    int32_t s = *bucket_of(c, row);
    while (s != NONE && slot_at(c, s)->row != row) s = slot_at(c, s)->next;
    return s;
}

static void index_add(fs_rowcache_t *c, int32_t s)
{
    int32_t *head = bucket_of(c, slot_at(c, s)->row);
    slot_at(c, s)->next = *head;
    *head = s;
}

static void index_remove(fs_rowcache_t *c, int32_t s)
{
    int32_t *link = bucket_of(c, slot_at(c, s)->row);
    while (*link != NONE && *link != s) link = &slot_at(c, *link)->next;
    if (*link == s) *link = slot_at(c, s)->next;
}

/* ---- the policies ------------------------------------------------------------- */

static void queue_push_head(fs_rowcache_t *c, int32_t s)
{
    slot_t *m = slot_at(c, s);
    m->newer = NONE, m->older = c->head;
    if (c->head != NONE) slot_at(c, c->head)->newer = s;
    else c->tail = s;
    c->head = s;
}

/* A SIEVE hand on the unlinked slot moves on toward the head (NONE past
 * the head: the next sweep starts at the tail). */
static void queue_unlink(fs_rowcache_t *c, int32_t s)
{
    slot_t *m = slot_at(c, s);
    if (c->policy == FS_CACHE_SIEVE && c->hand == s) c->hand = m->newer;
    if (m->newer != NONE) slot_at(c, m->newer)->older = m->older;
    else c->head = m->older;
    if (m->older != NONE) slot_at(c, m->older)->newer = m->newer;
    else c->tail = m->newer;
    m->newer = m->older = NONE;
}

static void policy_insert(fs_rowcache_t *c, int32_t s)
{
    slot_at(c, s)->visited = 0; /* SIEVE: new objects are unvisited; CLOCK likewise */
    if (c->policy != FS_CACHE_CLOCK) queue_push_head(c, s);
}

static void policy_hit(fs_rowcache_t *c, int32_t s)
{
    if (c->policy != FS_CACHE_LRU) {
        slot_at(c, s)->visited = 1;
    } else if (c->head != s) {
        queue_unlink(c, s);
        queue_push_head(c, s);
    }
}

static void policy_remove(fs_rowcache_t *c, int32_t s)
{
    if (c->policy != FS_CACHE_CLOCK) queue_unlink(c, s);
}

/* The hand sweeps tail -> head (wrapping), clearing the visited bits of
 * evictable slots, and stops on the first unvisited one; pinned and LOADING
 * slots are passed over untouched. Two passes always suffice when some slot
 * is evictable: the first clears them all. */
static int32_t sieve_victim(fs_rowcache_t *c)
{
    int32_t s = c->hand != NONE ? c->hand : c->tail;
    for (uint64_t step = 0; step <= 2 * c->slots && s != NONE; step++) {
        slot_t *m = slot_at(c, s);
        if (is_evictable(m)) {
            if (!m->visited) return c->hand = s; /* unlinking moves the hand on */
            m->visited = 0;
        }
        s = m->newer != NONE ? m->newer : c->tail;
    }
    return NONE;
}

static int32_t lru_victim(fs_rowcache_t *c)
{
    int32_t s = c->tail;
    while (s != NONE && !is_evictable(slot_at(c, s))) s = slot_at(c, s)->newer;
    return s;
}

/* CLOCK's hand walks the slot array, left on the slot after the victim. */
static int32_t clock_victim(fs_rowcache_t *c)
{
    for (uint64_t step = 0; step <= 2 * c->slots; step++) {
        int32_t s = c->hand;
        c->hand = (uint64_t)s + 1 == c->slots ? 0 : s + 1;
        slot_t *m = slot_at(c, s);
        if (!is_evictable(m)) continue;
        if (!m->visited) return s;
        m->visited = 0;
    }
    return NONE;
}

/* A slot for a new row: a free one, else an evicted one; NONE when every
 * slot is pinned or loading. */
static int32_t claim_slot(fs_rowcache_t *c)
{
    int32_t s = c->free_head;
    if (s != NONE) {
        c->free_head = slot_at(c, s)->next;
        return s;
    }
    if (c->evictable == 0) return NONE;
    s = c->policy == FS_CACHE_SIEVE ? sieve_victim(c) : c->policy == FS_CACHE_LRU ? lru_victim(c) : clock_victim(c);
    if (s == NONE) return NONE; /* only a corrupt region gets here */
    index_remove(c, s);
    policy_remove(c, s);
    set_slot(c, slot_at(c, s), FS_ROWCACHE_FREE, 0);
    c->evictions++;
    return s;
}

/* ---- the lock ----------------------------------------------------------------- */

/* 1 when held. A process that died holding it leaves the structure perhaps
 * mid-update: counted for the server to rebuild, not repaired. Any other
 * failure means a corrupt mutex: the callers then do nothing (acquire says
 * BYPASS) rather than touch the region unlocked. */
static int lock(fs_rowcache_t *c)
{
    int rc = pthread_mutex_lock(&c->lock);
    if (rc == EOWNERDEAD) {
        pthread_mutex_consistent(&c->lock);
        c->owner_deaths++;
        rc = 0;
    }
    return rc == 0;
}

static void unlock(fs_rowcache_t *c) { pthread_mutex_unlock(&c->lock); }

/* ---- the batch API ------------------------------------------------------------ */

static uint8_t acquire_one(fs_rowcache_t *c, int64_t row, int64_t *slot)
{
    *slot = NONE;
    int32_t s = index_find(c, row);
    if (s != NONE) {
        slot_t *m = slot_at(c, s);
        if (m->state == FS_ROWCACHE_LOADING) return c->busy++, FS_ROWCACHE_BUSY;
        if (m->pins == UINT32_MAX) return c->bypass++, FS_ROWCACHE_BYPASS;
        set_slot(c, m, FS_ROWCACHE_READY, m->pins + 1);
        policy_hit(c, s);
        *slot = s;
        return c->hits++, FS_ROWCACHE_HIT;
    }
    if ((s = claim_slot(c)) == NONE) return c->bypass++, FS_ROWCACHE_BYPASS;
    slot_t *m = slot_at(c, s);
    m->row = row;
    set_slot(c, m, FS_ROWCACHE_LOADING, 1);
    index_add(c, s);
    policy_insert(c, s);
    *slot = s;
    return c->misses++, FS_ROWCACHE_LOAD;
}

void fs_rowcache_acquire(fs_rowcache_t *c, const int64_t *rows, size_t n, int64_t *slots, uint8_t *outcome)
{
    if (!lock(c)) {
        for (size_t i = 0; i < n; i++) slots[i] = NONE, outcome[i] = FS_ROWCACHE_BYPASS;
        return;
    }
    for (size_t i = 0; i < n; i++) outcome[i] = acquire_one(c, rows[i], &slots[i]);
    unlock(c);
}

void fs_rowcache_publish(fs_rowcache_t *c, const int64_t *slots, size_t n, const uint8_t *ok)
{
    if (!lock(c)) return;
    for (size_t i = 0; i < n; i++) {
        if (!valid_slot(c, slots[i])) continue;
        int32_t s = (int32_t)slots[i];
        slot_t *m = slot_at(c, s);
        if (m->state != FS_ROWCACHE_LOADING) continue;
        if (!ok || ok[i]) {
            set_slot(c, m, FS_ROWCACHE_READY, m->pins);
            continue;
        }
        index_remove(c, s);
        policy_remove(c, s);
        set_slot(c, m, FS_ROWCACHE_FREE, m->pins);
        if (m->pins == 0) free_push(c, s);
    }
    unlock(c);
}

void fs_rowcache_release(fs_rowcache_t *c, const int64_t *slots, size_t n)
{
    if (!lock(c)) return;
    for (size_t i = 0; i < n; i++) {
        if (!valid_slot(c, slots[i])) continue;
        slot_t *m = slot_at(c, (int32_t)slots[i]);
        if (m->pins == 0) continue;
        set_slot(c, m, m->state, m->pins - 1);
        if (m->pins == 0 && m->state == FS_ROWCACHE_FREE) free_push(c, (int32_t)slots[i]);
    }
    unlock(c);
}

void fs_rowcache_add_io(fs_rowcache_t *c, uint64_t reads, uint64_t bytes, uint64_t ns, uint64_t checksum_failures)
{
    __atomic_fetch_add(&c->io_reads, reads, __ATOMIC_RELAXED);
    __atomic_fetch_add(&c->io_bytes, bytes, __ATOMIC_RELAXED);
    __atomic_fetch_add(&c->io_ns, ns, __ATOMIC_RELAXED);
    __atomic_fetch_add(&c->checksum_failures, checksum_failures, __ATOMIC_RELAXED);
}

void *fs_rowcache_row(fs_rowcache_t *c, int64_t slot)
{
    return (char *)c + c->data_off + (uint64_t)slot * c->stride;
}

int64_t fs_rowcache_lookup(fs_rowcache_t *c, int64_t row, fs_rowcache_state_t *state)
{
    int32_t s = NONE;
    fs_rowcache_state_t found = FS_ROWCACHE_FREE;
    if (lock(c)) {
        s = index_find(c, row);
        if (s != NONE) found = (fs_rowcache_state_t)slot_at(c, s)->state;
        unlock(c);
    }
    if (state) *state = found;
    return s;
}

void fs_rowcache_stats(fs_rowcache_t *c, fs_rowcache_stats_t *out)
{
    memset(out, 0, sizeof *out);
    if (!lock(c)) return;
    *out = (fs_rowcache_stats_t){.hits = c->hits, .misses = c->misses, .busy = c->busy, .bypass = c->bypass,
                                 .evictions = c->evictions, .ready = c->ready, .pinned = c->pinned,
                                 .owner_deaths = c->owner_deaths,
                                 .io_reads = __atomic_load_n(&c->io_reads, __ATOMIC_RELAXED),
                                 .io_bytes = __atomic_load_n(&c->io_bytes, __ATOMIC_RELAXED),
                                 .io_ns = __atomic_load_n(&c->io_ns, __ATOMIC_RELAXED),
                                 .checksum_failures = __atomic_load_n(&c->checksum_failures, __ATOMIC_RELAXED)};
    unlock(c);
}

uint64_t fs_rowcache_slots(const fs_rowcache_t *c) { return c->slots; }
uint64_t fs_rowcache_row_bytes(const fs_rowcache_t *c) { return c->row_bytes; }
fs_cache_policy_t fs_rowcache_policy(const fs_rowcache_t *c) { return (fs_cache_policy_t)c->policy; }

/* ---- format and attach -------------------------------------------------------- */

static fs_status_t init_lock(pthread_mutex_t *mu, fs_error_t *err)
{
    pthread_mutexattr_t a;
    int rc = pthread_mutexattr_init(&a);
    if (rc == 0) rc = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    if (rc == 0) rc = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    if (rc == 0) rc = pthread_mutex_init(mu, &a);
    pthread_mutexattr_destroy(&a);
    return rc == 0 ? FS_OK
                   : fs_error(err, FS_ERR_UNSUPPORTED, "row cache: no process-shared robust mutex: %s", strerror(rc));
}

/* Lays out an empty cache; the arguments were checked (row_bytes 0 is the
 * simulator's index-only cache). The rows' bytes are left as they are. */
static fs_status_t format_region(void *region, const layout_t *l, uint64_t slots, uint64_t row_bytes,
                                 fs_cache_policy_t policy, fs_error_t *err)
{
    fs_rowcache_t *c = region;
    memset(c, 0, l->data_off);
    *c = (struct fs_rowcache){.magic = MAGIC, .version = VERSION, .header_bytes = sizeof *c, .slots = slots,
                              .row_bytes = row_bytes, .stride = l->stride, .buckets = l->buckets,
                              .region_bytes = l->total, .meta_off = l->meta_off, .bucket_off = l->bucket_off,
                              .data_off = l->data_off, .policy = policy, .head = NONE, .tail = NONE,
                              .hand = policy == FS_CACHE_CLOCK ? 0 : NONE, .free_head = 0};
    for (uint64_t s = 0; s < slots; s++) /* free list 0, 1, 2, ...: the lowest slots fill first */
        *slot_at(c, (int32_t)s) = (slot_t){.next = s + 1 < slots ? (int32_t)s + 1 : NONE, .newer = NONE,
                                           .older = NONE, .state = FS_ROWCACHE_FREE};
    memset(bucket_heads(c), 0xff, l->buckets * sizeof(int32_t)); /* all NONE */
    return init_lock(&c->lock, err);
}

fs_status_t fs_rowcache_format(void *region, size_t bytes, uint64_t slots, uint64_t row_bytes,
                               fs_cache_policy_t policy, fs_error_t *err)
{
    if (slots < 1 || slots > MAX_SLOTS)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "row cache: slots %llu is out of range (1 to %llu)",
                        (unsigned long long)slots, (unsigned long long)MAX_SLOTS);
    if (row_bytes < 1) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "row cache: row_bytes 0 (rows need a byte)");
    if ((unsigned)policy >= POLICIES)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "row cache: unknown policy %d", (int)policy);
    layout_t l;
    if (!compute_layout(slots, row_bytes, &l))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "row cache: %llu slots of row_bytes %llu overflow size_t",
                        (unsigned long long)slots, (unsigned long long)row_bytes);
    if (!region || (uintptr_t)region % FS_ROWCACHE_ALIGN != 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "row cache: region %p is not %d-byte aligned", region,
                        FS_ROWCACHE_ALIGN);
    if (bytes < l.total)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT,
                        "row cache: region of %zu bytes is too small for %llu slots of %llu bytes (%llu needed)", bytes,
                        (unsigned long long)slots, (unsigned long long)row_bytes, (unsigned long long)l.total);
    return format_region(region, &l, slots, row_bytes, policy, err);
}

static fs_status_t bad_field(fs_error_t *err, const char *field, uint64_t have, uint64_t want)
{
    return fs_error(err, FS_ERR_FORMAT, "row cache: field %s is %llu, expected %llu: not a row cache of this build",
                    field, (unsigned long long)have, (unsigned long long)want);
}

fs_status_t fs_rowcache_attach(void *region, size_t bytes, fs_rowcache_t **out, fs_error_t *err)
{
    fs_rowcache_t *c = region;
    if (!region || (uintptr_t)region % FS_ROWCACHE_ALIGN != 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "row cache: region %p is not %d-byte aligned", region,
                        FS_ROWCACHE_ALIGN);
    if (bytes < sizeof *c)
        return fs_error(err, FS_ERR_FORMAT, "row cache: region of %zu bytes is smaller than the header (%zu)", bytes,
                        sizeof *c);
    if (c->magic != MAGIC) return bad_field(err, "magic", c->magic, MAGIC);
    if (c->version != VERSION) return bad_field(err, "version", c->version, VERSION);
    if (c->header_bytes != sizeof *c) return bad_field(err, "header_bytes", c->header_bytes, sizeof *c);
    if (c->policy >= POLICIES)
        return fs_error(err, FS_ERR_FORMAT, "row cache: field policy is %u, not one of sieve, lru, clock", c->policy);
    layout_t l;
    if (c->row_bytes < 1 || !compute_layout(c->slots, c->row_bytes, &l))
        return fs_error(err, FS_ERR_FORMAT, "row cache: fields slots %llu and row_bytes %llu are out of range",
                        (unsigned long long)c->slots, (unsigned long long)c->row_bytes);
    const struct {
        const char *name;
        uint64_t have, want;
    } fields[] = {{"stride", c->stride, l.stride},         {"buckets", c->buckets, l.buckets},
                  {"meta_off", c->meta_off, l.meta_off},   {"bucket_off", c->bucket_off, l.bucket_off},
                  {"data_off", c->data_off, l.data_off},   {"region_bytes", c->region_bytes, l.total}};
    for (size_t f = 0; f < sizeof fields / sizeof *fields; f++)
        if (fields[f].have != fields[f].want) return bad_field(err, fields[f].name, fields[f].have, fields[f].want);
    if (c->region_bytes > bytes)
        return fs_error(err, FS_ERR_FORMAT, "row cache: field region_bytes is %llu but the region has only %zu bytes",
                        (unsigned long long)c->region_bytes, bytes);
    *out = c;
    return FS_OK;
}

/* ---- the trace simulator ------------------------------------------------------ */

typedef struct {
    int64_t *rows, *slots;
    uint8_t *outcome;
    struct seen {
        int64_t row;
        uint64_t batch; /* 1 + the batch that saw it: an older stamp is an empty entry, so no clearing */
    } *seen;            /* open addressing, at most half full */
    uint64_t seen_mask;
} sim_t;

/* Copies batch b's distinct rows, first appearances in order, to s->rows. */
static size_t dedup_batch(sim_t *s, const int64_t *rows, size_t n, uint64_t batch)
{
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t h = ((uint64_t)rows[i] * 0x9e3779b97f4a7c15ull) >> 17;
        struct seen *e;
        while ((e = &s->seen[h & s->seen_mask])->batch == batch + 1 && e->row != rows[i]) h++;
        if (e->batch == batch + 1) continue;
        *e = (struct seen){rows[i], batch + 1};
        s->rows[out++] = rows[i];
    }
    return out;
}

fs_status_t fs_rowcache_simulate(fs_cache_policy_t policy, uint64_t slots, const int64_t *rows,
                                 const size_t *batch_end, size_t batches, uint64_t *misses, uint64_t *accesses,
                                 fs_error_t *err)
{
    layout_t l;
    if ((unsigned)policy >= POLICIES)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "row cache: unknown policy %d", (int)policy);
    if (!compute_layout(slots, 0, &l))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "row cache: slots %llu is out of range (1 to %llu)",
                        (unsigned long long)slots, (unsigned long long)MAX_SLOTS);
    size_t widest = 0;
    for (size_t b = 0; b < batches; b++) {
        size_t begin = b ? batch_end[b - 1] : 0;
        if (batch_end[b] < begin)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "row cache: batch_end[%zu] = %zu is below the previous, %zu",
                            b, batch_end[b], begin);
        if (batch_end[b] - begin > widest) widest = batch_end[b] - begin;
    }
    sim_t s = {0};
    uint64_t cap = 2;
    while (cap < 2 * (uint64_t)widest) cap <<= 1;
    s.seen_mask = cap - 1;
    void *region = NULL;
    if (posix_memalign(&region, FS_ROWCACHE_ALIGN, l.total) != 0) region = NULL;
    s.rows = malloc((widest + 1) * sizeof *s.rows), s.slots = malloc((widest + 1) * sizeof *s.slots);
    s.outcome = malloc(widest + 1), s.seen = calloc(cap, sizeof *s.seen);
    fs_status_t st = !region || !s.rows || !s.slots || !s.outcome || !s.seen
                         ? fs_error(err, FS_ERR_NOMEM, "row cache: no memory to simulate %llu slots",
                                    (unsigned long long)slots)
                         : format_region(region, &l, slots, 0, policy, err);
    *misses = *accesses = 0;
    for (size_t b = 0; st == FS_OK && b < batches; b++) {
        size_t begin = b ? batch_end[b - 1] : 0;
        size_t n = dedup_batch(&s, rows + begin, batch_end[b] - begin, b);
        fs_rowcache_acquire(region, s.rows, n, s.slots, s.outcome);
        fs_rowcache_publish(region, s.slots, n, NULL); /* only the LOAD slots are LOADING */
        fs_rowcache_release(region, s.slots, n);
        for (size_t i = 0; i < n; i++) *misses += s.outcome[i] != FS_ROWCACHE_HIT; /* each one a disk read */
        *accesses += n;
    }
    if (region && st == FS_OK) pthread_mutex_destroy(&((fs_rowcache_t *)region)->lock);
    free(region), free(s.rows), free(s.slots), free(s.outcome), free(s.seen);
    return st;
}
