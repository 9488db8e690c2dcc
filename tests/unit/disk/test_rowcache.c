/* test_rowcache.c — the shared row cache (disk/fs_rowcache.h): each policy
 * against an obviously-correct array model on a long skewed trace (every
 * outcome, every slot and the cached set after every batch, with pins and
 * loads held across batches, failed loads, BUSY and BYPASS); SIEVE, LRU and
 * CLOCK on a small hand-computed sequence; pins; the rows' bytes and
 * alignment; four processes on one MAP_SHARED region, and processes killed
 * while holding its lock; bad input; the trace simulator. */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs_rowcache.h"

static uint64_t next_rand(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static fs_rowcache_t *new_cache(uint64_t slots, uint64_t row_bytes, fs_cache_policy_t policy)
{
    size_t bytes = fs_rowcache_region_bytes(slots, row_bytes);
    cr_assert_gt(bytes, 0);
    void *region = NULL;
    cr_assert_eq(posix_memalign(&region, FS_ROWCACHE_ALIGN, bytes), 0);
    fs_error_t err = {0};
    fs_rowcache_t *c = NULL;
    cr_assert_eq(fs_rowcache_format(region, bytes, slots, row_bytes, policy, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_rowcache_attach(region, bytes, &c, &err), FS_OK, "%s", err.msg);
    cr_assert_eq((void *)c, region);
    return c;
}

/* One row through the whole cycle: acquire, publish a load, release. */
static int touch(fs_rowcache_t *c, int64_t row)
{
    int64_t slot;
    uint8_t out;
    fs_rowcache_acquire(c, &row, 1, &slot, &out);
    fs_rowcache_publish(c, &slot, 1, NULL);
    fs_rowcache_release(c, &slot, 1);
    return out;
}

static int cached(fs_rowcache_t *c, int64_t row) { return fs_rowcache_lookup(c, row, NULL) >= 0; }

/* ---- the reference model: arrays, linear scans --------------------------------------- */

#define MAXCAP 256

typedef struct {
    int64_t row;
    int slot, loading, visited;
    uint32_t pins;
} ment_t;

typedef struct {
    fs_cache_policy_t policy;
    int cap, n;
    ment_t q[MAXCAP];       /* SIEVE, LRU: q[0] the oldest (tail), q[n-1] the newest (head) */
    int hand_set;           /* SIEVE: the hand is on the row hand_row (else it starts at q[0]) */
    int64_t hand_row;
    int clock_hand;         /* CLOCK: a slot index */
    int freestack[MAXCAP];  /* free slots, the next one on top: 0 first, then the last freed */
    int nfree;
    uint32_t free_pins[MAXCAP]; /* pins still held on slots whose load failed */
    uint64_t hits, misses, busy, bypass;
} model_t;

static void model_init(model_t *m, fs_cache_policy_t policy, int cap)
{
    memset(m, 0, sizeof *m);
    m->policy = policy, m->cap = cap;
    for (int s = 0; s < cap; s++) m->freestack[m->nfree++] = cap - 1 - s;
}

static int m_find_row(const model_t *m, int64_t row)
{
    for (int i = 0; i < m->n; i++)
        if (m->q[i].row == row) return i;
    return -1;
}

static int m_find_slot(const model_t *m, int slot)
{
    for (int i = 0; i < m->n; i++)
        if (m->q[i].slot == slot) return i;
    return -1;
}

static int m_evictable(const ment_t *e) { return !e->loading && e->pins == 0; }

static void m_delete(model_t *m, int i)
{
    memmove(&m->q[i], &m->q[i + 1], (size_t)(m->n - i - 1) * sizeof *m->q);
    m->n--;
}

/* Removal other than by eviction (a failed load): a SIEVE hand on it moves to the next newer row. */
static void m_remove(model_t *m, int i)
{
    if (m->hand_set && m->q[i].row == m->hand_row) {
        m->hand_set = i + 1 < m->n;
        if (m->hand_set) m->hand_row = m->q[i + 1].row;
    }
    m_delete(m, i);
}

/* The entry to evict (and evicts it, returning its slot), or -1. */
static int m_evict(model_t *m)
{
    int any = 0;
    for (int i = 0; i < m->n; i++) any |= m_evictable(&m->q[i]);
    if (!any) return -1;
    int i = -1;
    if (m->policy == FS_CACHE_SIEVE) {
        int pos = m->hand_set ? m_find_row(m, m->hand_row) : 0;
        for (;; pos = (pos + 1) % m->n) {
            ment_t *e = &m->q[pos];
            if (!m_evictable(e)) continue;
            if (!e->visited) break;
            e->visited = 0;
        }
        m->hand_set = pos + 1 < m->n; /* the hand rests on the next newer row, or none past the head */
        if (m->hand_set) m->hand_row = m->q[pos + 1].row;
        i = pos;
    } else if (m->policy == FS_CACHE_LRU) {
        for (i = 0; !m_evictable(&m->q[i]); i++) {}
    } else {
        for (;;) {
            int s = m->clock_hand;
            m->clock_hand = (s + 1) % m->cap;
            if ((i = m_find_slot(m, s)) < 0 || !m_evictable(&m->q[i])) continue;
            if (!m->q[i].visited) break;
            m->q[i].visited = 0;
        }
    }
    int slot = m->q[i].slot;
    m_delete(m, i);
    return slot;
}

static int m_acquire(model_t *m, int64_t row, int64_t *slot)
{
    *slot = -1;
    int i = m_find_row(m, row);
    if (i >= 0 && m->q[i].loading) return m->busy++, FS_ROWCACHE_BUSY;
    if (i >= 0) {
        m->q[i].pins++;
        m->q[i].visited = 1;
        *slot = m->q[i].slot;
        if (m->policy == FS_CACHE_LRU) { /* to the head */
            ment_t e = m->q[i];
            m_delete(m, i);
            m->q[m->n++] = e;
        }
        return m->hits++, FS_ROWCACHE_HIT;
    }
    int s = m->nfree > 0 ? m->freestack[--m->nfree] : m_evict(m);
    if (s < 0) return m->bypass++, FS_ROWCACHE_BYPASS;
    m->q[m->n++] = (ment_t){.row = row, .slot = s, .loading = 1, .pins = 1};
    *slot = s;
    return m->misses++, FS_ROWCACHE_LOAD;
}

static void m_publish(model_t *m, int64_t slot, int ok)
{
    int i = slot < 0 ? -1 : m_find_slot(m, (int)slot);
    if (i < 0 || !m->q[i].loading) return;
    if (ok) {
        m->q[i].loading = 0;
        return;
    }
    m->free_pins[slot] = m->q[i].pins;
    m_remove(m, i);
}

static void m_release(model_t *m, int64_t slot)
{
    if (slot < 0) return;
    int i = m_find_slot(m, (int)slot);
    if (i >= 0) {
        m->q[i].pins--;
    } else if (--m->free_pins[slot] == 0) {
        m->freestack[m->nfree++] = (int)slot;
    }
}

/* ---- the model trace ---------------------------------------------------------------- */

#define UNIVERSE 600
#define MAXB 48
#define MAXPENDING 8

typedef struct {
    int64_t slots[MAXB];
    uint8_t ok[MAXB];
    int n, due, published;
} pending_t;

static int64_t row_id(int rank) { return (int64_t)rank * 1000003 - 300000000; } /* scattered, some negative */

static double zipf_cdf[UNIVERSE];

static int zipf_rank(uint64_t *rng)
{
    double u = (double)(next_rand(rng) >> 11) / 9007199254740992.0;
    int lo = 0, hi = UNIVERSE - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (zipf_cdf[mid] < u) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static void check_against_model(fs_rowcache_t *c, const model_t *m, int batch)
{
    uint64_t ready = 0, pinned = 0;
    for (int r = 0; r < UNIVERSE; r++) {
        fs_rowcache_state_t st;
        int64_t slot = fs_rowcache_lookup(c, row_id(r), &st);
        int i = m_find_row(m, row_id(r));
        cr_assert_eq(slot, i < 0 ? -1 : m->q[i].slot, "batch %d: row rank %d is in slot %lld, the model's %d", batch,
                     r, (long long)slot, i < 0 ? -1 : m->q[i].slot);
        if (i >= 0) cr_assert_eq(st, m->q[i].loading ? FS_ROWCACHE_LOADING : FS_ROWCACHE_READY, "batch %d", batch);
    }
    for (int i = 0; i < m->n; i++) ready += !m->q[i].loading, pinned += m->q[i].pins > 0;
    for (int s = 0; s < m->cap; s++) pinned += m->free_pins[s] > 0;
    fs_rowcache_stats_t st;
    fs_rowcache_stats(c, &st);
    cr_assert_eq(st.ready, ready, "batch %d: %llu ready, the model %llu", batch, (unsigned long long)st.ready,
                 (unsigned long long)ready);
    cr_assert_eq(st.pinned, pinned, "batch %d", batch);
    cr_assert(st.hits == m->hits && st.misses == m->misses && st.busy == m->busy && st.bypass == m->bypass,
              "batch %d: counters differ from the model's", batch);
}

static void complete(fs_rowcache_t *c, model_t *m, pending_t *p)
{
    if (!p->published) {
        fs_rowcache_publish(c, p->slots, (size_t)p->n, p->ok);
        for (int i = 0; i < p->n; i++) m_publish(m, p->slots[i], p->ok[i]);
    }
    fs_rowcache_release(c, p->slots, (size_t)p->n);
    for (int i = 0; i < p->n; i++) m_release(m, p->slots[i]);
}

static void run_model_trace(fs_cache_policy_t policy, int cap, uint64_t seed, int batches)
{
    double sum = 0;
    for (int r = 0; r < UNIVERSE; r++) zipf_cdf[r] = sum += 1.0 / pow(r + 1, 0.9);
    for (int r = 0; r < UNIVERSE; r++) zipf_cdf[r] /= sum;
    fs_rowcache_t *c = new_cache((uint64_t)cap, 8, policy);
    static model_t m;
    model_init(&m, policy, cap);
    pending_t pend[MAXPENDING];
    int npend = 0;
    uint64_t rng = seed, seen[4] = {0};
    for (int b = 0; b < batches; b++) {
        int kind = (int)(next_rand(&rng) % 10);
        int n = kind < 3 ? 1 + (int)(next_rand(&rng) % 4) : kind < 8 ? 5 + (int)(next_rand(&rng) % 20)
                                                                   : 25 + (int)(next_rand(&rng) % (MAXB - 24));
        int64_t rows[MAXB];
        for (int i = 0; i < n; i++) {
            int dup;
            do {
                rows[i] = row_id(zipf_rank(&rng));
                dup = 0;
                for (int j = 0; j < i; j++) dup |= rows[j] == rows[i];
            } while (dup);
        }
        pending_t *p = &pend[npend++];
        uint8_t out[MAXB];
        p->n = n;
        fs_rowcache_acquire(c, rows, (size_t)n, p->slots, out);
        for (int i = 0; i < n; i++) {
            int64_t want_slot;
            int want = m_acquire(&m, rows[i], &want_slot);
            cr_assert_eq(out[i], want, "%s batch %d row %d: outcome %d, the model's %d", fs_cache_policy_name(policy),
                         b, i, out[i], want);
            cr_assert_eq(p->slots[i], want_slot, "%s batch %d row %d", fs_cache_policy_name(policy), b, i);
            seen[out[i]]++;
            p->ok[i] = next_rand(&rng) % 12 != 0; /* one load in 12 fails */
        }
        /* Most batches end now; some hold their pins (and sometimes their loads) a few batches. */
        int held = npend < MAXPENDING && next_rand(&rng) % 4 == 0;
        p->due = b + (held ? 1 + (int)(next_rand(&rng) % 3) : 0);
        p->published = held && next_rand(&rng) % 2;
        if (p->published) {
            fs_rowcache_publish(c, p->slots, (size_t)n, p->ok);
            for (int i = 0; i < n; i++) m_publish(&m, p->slots[i], p->ok[i]);
        }
        for (int k = 0; k < npend;)
            if (pend[k].due <= b) complete(c, &m, &pend[k]), pend[k] = pend[--npend];
            else k++;
        check_against_model(c, &m, b);
    }
    while (npend > 0) complete(c, &m, &pend[--npend]);
    check_against_model(c, &m, batches);
    fs_rowcache_stats_t st;
    fs_rowcache_stats(c, &st);
    cr_assert_eq(st.pinned, 0);
    for (int o = 0; o < 4; o++) /* BYPASS needs every slot pinned: a small cache */
        cr_assert(seen[o] > 0 || (o == FS_ROWCACHE_BYPASS && cap > MAXB), "%s: the trace never gave outcome %d",
                  fs_cache_policy_name(policy), o);
    cr_assert_gt(st.evictions, 0);
    free(c);
}

/* A cache smaller than a batch (BYPASSes, evictions of almost everything)
 * and one a third of the ids (mostly hits). */
Test(rowcache_model, sieve_matches_the_model)
{
    run_model_trace(FS_CACHE_SIEVE, 48, 1, 3000);
    run_model_trace(FS_CACHE_SIEVE, 200, 2, 2000);
}

Test(rowcache_model, lru_matches_the_model)
{
    run_model_trace(FS_CACHE_LRU, 48, 3, 3000);
    run_model_trace(FS_CACHE_LRU, 200, 4, 2000);
}

Test(rowcache_model, clock_matches_the_model)
{
    run_model_trace(FS_CACHE_CLOCK, 48, 5, 3000);
    run_model_trace(FS_CACHE_CLOCK, 200, 6, 2000);
}

/* ---- a worked example ------------------------------------------------------------------- */

/* Capacity 3, rows one at a time: A B C A D C E F E G H. SIEVE by hand
 * (the queue tail -> head after each step, * = visited):
 *   A B C, hit A                              A* B C    hand unset
 *   D: from the tail, A* -> A; B evicted      A C D     hand on C
 *   hit C; E: C* -> C; D evicted              A C E     unset (D was the head)
 *   F: from the tail; A evicted               C E F     hand on C
 *   hit E; G: C evicted                       E* F G    hand on E
 *   H: E* -> E; F evicted                     E G H     hand on G
 * LRU evicts B, A, D, C, F; CLOCK (its hand over slots 0..2) the same. */
static void worked_example(fs_cache_policy_t policy, const char *evicted)
{
    fs_rowcache_t *c = new_cache(3, 1, policy);
    const char *seq = "ABCADCEFEGH", *ev = evicted;
    for (const char *x = seq; *x; x++) {
        int was_cached = cached(c, *x);
        int out = touch(c, *x);
        cr_assert_eq(out, was_cached ? FS_ROWCACHE_HIT : FS_ROWCACHE_LOAD);
        if (out == FS_ROWCACHE_LOAD && x - seq >= 3) ev++; /* the cache was full: *(ev - 1) goes */
        for (const char *y = "ABCDEFGH"; *y; y++) { /* seen so far and not evicted so far (none comes back) */
            const char *gone = strchr(evicted, *y);
            int want = strchr(seq, *y) <= x && !(gone && gone < ev);
            cr_assert_eq(cached(c, *y), want, "%s: after %c (access %d), %c is %scached", fs_cache_policy_name(policy),
                         *x, (int)(x - seq), *y, want ? "not " : "");
        }
    }
    cr_assert_eq(*ev, 0);
    fs_rowcache_stats_t st;
    fs_rowcache_stats(c, &st);
    cr_assert(st.hits == 3 && st.misses == 8 && st.evictions == 5 && st.ready == 3);
    free(c);
}

Test(rowcache, worked_example_sieve_lru_clock)
{
    worked_example(FS_CACHE_SIEVE, "BDACF");
    worked_example(FS_CACHE_LRU, "BADCF");
    worked_example(FS_CACHE_CLOCK, "BADCF");
}

/* ---- pins ------------------------------------------------------------------------------- */

Test(rowcache, pinned_rows_stay_and_all_pinned_bypasses)
{
    for (int p = FS_CACHE_SIEVE; p <= FS_CACHE_CLOCK; p++) {
        fs_rowcache_t *c = new_cache(2, 16, (fs_cache_policy_t)p);
        int64_t rows[3] = {10, 11, 12}, slots[3];
        uint8_t out[3];
        fs_rowcache_acquire(c, rows, 2, slots, out); /* 10 and 11 load; 10 is the oldest, the LRU tail */
        fs_rowcache_publish(c, slots, 2, NULL);
        fs_rowcache_release(c, &slots[1], 1); /* 10 stays pinned */
        cr_assert_eq(touch(c, 12), FS_ROWCACHE_LOAD);
        cr_assert(cached(c, 10) && !cached(c, 11), "%s evicted the pinned row", fs_cache_policy_name(p));
        /* Pin 12 too: a new row finds every slot pinned. */
        fs_rowcache_acquire(c, &rows[2], 1, &slots[2], &out[2]);
        cr_assert_eq(out[2], FS_ROWCACHE_HIT);
        int64_t row = 13, slot;
        uint8_t o;
        fs_rowcache_acquire(c, &row, 1, &slot, &o);
        cr_assert(o == FS_ROWCACHE_BYPASS && slot == -1);
        /* A second pin on 10: one release leaves it pinned. */
        int64_t s10;
        fs_rowcache_acquire(c, &rows[0], 1, &s10, &o);
        cr_assert(o == FS_ROWCACHE_HIT && s10 == slots[0]);
        fs_rowcache_release(c, &s10, 1);
        fs_rowcache_release(c, &slots[2], 1);
        cr_assert_eq(touch(c, 13), FS_ROWCACHE_LOAD);
        cr_assert(cached(c, 10) && !cached(c, 12));
        fs_rowcache_release(c, slots, 1);
        fs_rowcache_stats_t st;
        fs_rowcache_stats(c, &st);
        cr_assert(st.pinned == 0 && st.bypass == 1 && st.ready == 2, "%s", fs_cache_policy_name(p));
        free(c);
    }
}

Test(rowcache, busy_while_loading_and_a_failed_load_is_a_miss_again)
{
    fs_rowcache_t *c = new_cache(1, 16, FS_CACHE_SIEVE);
    int64_t row = 7, slot, other;
    uint8_t out, fail = 0;
    fs_rowcache_acquire(c, &row, 1, &slot, &out);
    cr_assert(out == FS_ROWCACHE_LOAD && slot == 0);
    fs_rowcache_acquire(c, &row, 1, &other, &out);
    cr_assert(out == FS_ROWCACHE_BUSY && other == -1, "a second reader of a loading row reads it itself");
    fs_rowcache_publish(c, &slot, 1, &fail);
    fs_rowcache_state_t st;
    cr_assert_eq(fs_rowcache_lookup(c, row, &st), -1);
    cr_assert_eq(st, FS_ROWCACHE_FREE);
    /* The failed slot is still pinned by its loader: not reusable until released. */
    fs_rowcache_acquire(c, &row, 1, &other, &out);
    cr_assert_eq(out, FS_ROWCACHE_BYPASS);
    fs_rowcache_release(c, &slot, 1);
    fs_rowcache_release(c, &slot, 1); /* a pin too many: ignored */
    fs_rowcache_acquire(c, &row, 1, &other, &out);
    cr_assert(out == FS_ROWCACHE_LOAD && other == 0, "the next reader tries the disk again");
    fs_rowcache_publish(c, &other, 1, NULL);
    fs_rowcache_release(c, &other, 1);
    cr_assert_eq(touch(c, row), FS_ROWCACHE_HIT);
    fs_rowcache_stats_t s;
    fs_rowcache_stats(c, &s);
    cr_assert(s.misses == 2 && s.busy == 1 && s.bypass == 1 && s.hits == 1 && s.pinned == 0 && s.ready == 1);
    free(c);
}

/* ---- the rows' bytes -------------------------------------------------------------------- */

Test(rowcache, row_bytes_survive_and_are_aligned)
{
    enum { SLOTS = 8, ROW = 100 };
    fs_rowcache_t *c = new_cache(SLOTS, ROW, FS_CACHE_LRU);
    size_t bytes = fs_rowcache_region_bytes(SLOTS, ROW);
    char *base = (char *)c;
    cr_assert(fs_rowcache_slots(c) == SLOTS && fs_rowcache_row_bytes(c) == ROW);
    cr_assert_eq(fs_rowcache_policy(c), FS_CACHE_LRU);
    int64_t rows[SLOTS], slots[SLOTS];
    uint8_t out[SLOTS];
    for (int i = 0; i < SLOTS; i++) rows[i] = 1000 + i;
    fs_rowcache_acquire(c, rows, SLOTS, slots, out);
    for (int i = 0; i < SLOTS; i++) {
        cr_assert_eq(out[i], FS_ROWCACHE_LOAD);
        memset(fs_rowcache_row(c, slots[i]), 'a' + i, ROW);
    }
    fs_rowcache_publish(c, slots, SLOTS, NULL);
    fs_rowcache_release(c, slots, SLOTS);
    cr_assert_eq((uintptr_t)fs_rowcache_row(c, 0) % FS_ROWCACHE_ALIGN, 0);
    for (int s = 0; s < SLOTS; s++) {
        char *p = fs_rowcache_row(c, s);
        cr_assert(p >= base && p + ROW <= base + bytes, "slot %d's row lies outside the region", s);
        cr_assert_eq((p - (char *)fs_rowcache_row(c, 0)) % FS_ROWCACHE_ROW_ALIGN, 0);
        if (s > 0) cr_assert_geq(p - (char *)fs_rowcache_row(c, s - 1), ROW, "rows overlap");
    }
    int64_t again[SLOTS];
    for (int i = 0; i < SLOTS; i++) rows[i] = 1000 + (SLOTS - 1 - i);
    fs_rowcache_acquire(c, rows, SLOTS, again, out);
    for (int i = 0; i < SLOTS; i++) {
        cr_assert_eq(out[i], FS_ROWCACHE_HIT);
        const char *p = fs_rowcache_row(c, again[i]);
        for (int j = 0; j < ROW; j++)
            cr_assert_eq(p[j], 'a' + (SLOTS - 1 - i), "row %lld byte %d", (long long)rows[i], j);
    }
    fs_rowcache_release(c, again, SLOTS);
    free(c);
}

/* No pointers inside: one memfd mapped at two addresses is one cache. */
Test(rowcache, the_region_means_the_same_at_any_address)
{
    size_t bytes = fs_rowcache_region_bytes(32, 40);
    int fd = memfd_create("rowcache", 0);
    cr_assert(fd >= 0 && ftruncate(fd, (off_t)bytes) == 0);
    void *a = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    void *b = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    cr_assert(a != MAP_FAILED && b != MAP_FAILED && a != b);
    fs_error_t err = {0};
    fs_rowcache_t *ca, *cb;
    cr_assert_eq(fs_rowcache_format(a, bytes, 32, 40, FS_CACHE_SIEVE, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_rowcache_attach(b, bytes, &cb, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_rowcache_attach(a, bytes, &ca, &err), FS_OK, "%s", err.msg);
    int64_t rows[20], slots[20], again[20];
    uint8_t out[20];
    for (int i = 0; i < 20; i++) rows[i] = i * 1024; /* some share a bucket chain */
    fs_rowcache_acquire(ca, rows, 20, slots, out);
    for (int i = 0; i < 20; i++) memset(fs_rowcache_row(ca, slots[i]), i + 1, 40);
    fs_rowcache_publish(ca, slots, 20, NULL);
    fs_rowcache_release(ca, slots, 20);
    fs_rowcache_acquire(cb, rows, 20, again, out);
    for (int i = 0; i < 20; i++) {
        cr_assert(out[i] == FS_ROWCACHE_HIT && again[i] == slots[i], "row %d", i);
        cr_assert_eq(((const uint8_t *)fs_rowcache_row(cb, again[i]))[39], i + 1);
    }
    fs_rowcache_release(cb, again, 20);
    munmap(a, bytes), munmap(b, bytes), close(fd);
}

/* ---- several processes ------------------------------------------------------------------ */

static uint8_t row_byte(int64_t row, int j) { return (uint8_t)(row * 31 + j * 7 + 1); }

enum { MP_SLOTS = 64, MP_ROW = 200, MP_UNIVERSE = 300, MP_CHILDREN = 4, MP_BATCHES = 20000 };

/* One trainer: random batches; a loaded row is filled and checked, a hit
 * checked while pinned. Exits 0, or 2 + the outcome whose bytes were wrong. */
static void hammer(fs_rowcache_t *c, int child, _Atomic uint64_t *counts)
{
    uint64_t rng = 77 + (uint64_t)child, local[4] = {0};
    alarm(30); /* a broken cache may spin: never outlive the test */
    for (int b = 0; b < MP_BATCHES; b++) {
        int n = 1 + (int)(next_rand(&rng) % 16);
        int64_t rows[16], slots[16];
        uint8_t out[16], ok[16];
        for (int i = 0; i < n; i++) {
            int dup;
            do { /* skewed: half the rows from a hot head of 40 */
                rows[i] = (int64_t)(next_rand(&rng) % (next_rand(&rng) % 2 ? 40 : MP_UNIVERSE));
                dup = 0;
                for (int j = 0; j < i; j++) dup |= rows[j] == rows[i];
            } while (dup);
        }
        fs_rowcache_acquire(c, rows, (size_t)n, slots, out);
        for (int i = 0; i < n; i++) {
            local[out[i]]++;
            ok[i] = next_rand(&rng) % 20 != 0;
            if (out[i] == FS_ROWCACHE_LOAD) {
                uint8_t *p = fs_rowcache_row(c, slots[i]);
                for (int j = 0; j < MP_ROW; j++) p[j] = ok[i] ? row_byte(rows[i], j) : 0xee;
            }
        }
        fs_rowcache_publish(c, slots, (size_t)n, ok);
        for (int i = 0; i < n; i++) {
            if (out[i] != FS_ROWCACHE_HIT && !(out[i] == FS_ROWCACHE_LOAD && ok[i])) continue;
            const uint8_t *p = fs_rowcache_row(c, slots[i]);
            for (int j = 0; j < MP_ROW; j++)
                if (p[j] != row_byte(rows[i], j)) _exit(2 + out[i]);
        }
        fs_rowcache_release(c, slots, (size_t)n);
    }
    for (int o = 0; o < 4; o++) atomic_fetch_add(&counts[o], local[o]);
    _exit(0);
}

Test(rowcache_mp, four_processes_share_one_region, .timeout = 60)
{
    size_t bytes = fs_rowcache_region_bytes(MP_SLOTS, MP_ROW);
    void *region = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    _Atomic uint64_t *counts = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    cr_assert(region != MAP_FAILED && counts != MAP_FAILED);
    fs_error_t err = {0};
    fs_rowcache_t *c;
    cr_assert_eq(fs_rowcache_format(region, bytes, MP_SLOTS, MP_ROW, FS_CACHE_SIEVE, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_rowcache_attach(region, bytes, &c, &err), FS_OK, "%s", err.msg);
    pid_t pid[MP_CHILDREN];
    for (int k = 0; k < MP_CHILDREN; k++) {
        pid[k] = fork();
        cr_assert_geq(pid[k], 0);
        if (pid[k] == 0) hammer(c, k, counts);
    }
    for (int k = 0; k < MP_CHILDREN; k++) {
        int status;
        cr_assert_eq(waitpid(pid[k], &status, 0), pid[k]);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d: status %#x (exit 2 + outcome: bad bytes)",
                  k, status);
    }
    fs_rowcache_stats_t st;
    fs_rowcache_stats(c, &st);
    cr_assert_eq(st.pinned, 0, "pins left: %llu", (unsigned long long)st.pinned);
    cr_assert_leq(st.ready, MP_SLOTS);
    cr_assert(st.hits == counts[FS_ROWCACHE_HIT] && st.misses == counts[FS_ROWCACHE_LOAD] &&
              st.busy == counts[FS_ROWCACHE_BUSY] && st.bypass == counts[FS_ROWCACHE_BYPASS]);
    cr_assert(st.hits > 0 && st.misses > 0 && st.evictions > 0 && st.evictions <= st.misses);
    cr_assert_eq(st.owner_deaths, 0);
    munmap(region, bytes), munmap(counts, 4096);
}

/* A trainer killed while it holds the lock: the next locker recovers it
 * (robust mutex) and counts the death, nobody hangs, and the owner formats
 * the cache afresh, as the server does (the dead one may have left it
 * mid-update). */
Test(rowcache_mp, a_process_killed_holding_the_lock_is_counted, .timeout = 30)
{
    enum { SLOTS = 8192, BATCH = 4096, KILLS = 40 };
    size_t bytes = fs_rowcache_region_bytes(SLOTS, 8);
    void *region = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    _Atomic int *started = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    cr_assert(region != MAP_FAILED && started != MAP_FAILED);
    fs_error_t err = {0};
    cr_assert_eq(fs_rowcache_format(region, bytes, SLOTS, 8, FS_CACHE_LRU, &err), FS_OK, "%s", err.msg);
    fs_rowcache_t *c = region;
    int deaths = 0;
    for (int k = 0; k < KILLS; k++) {
        atomic_store(started, 0);
        pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) { /* almost all of its time is spent inside the lock */
            alarm(30);
            static int64_t rows[BATCH], slots[BATCH];
            static uint8_t out[BATCH];
            for (uint64_t round = 0;; round++) {
                for (int i = 0; i < BATCH; i++) rows[i] = (int64_t)((round * BATCH + (uint64_t)i) % (3 * SLOTS));
                fs_rowcache_acquire(c, rows, BATCH, slots, out);
                atomic_store(started, 1);
                fs_rowcache_publish(c, slots, BATCH, NULL);
                fs_rowcache_release(c, slots, BATCH);
            }
        }
        while (!atomic_load(started)) usleep(100);
        usleep(300 + 50 * (useconds_t)k);
        kill(pid, SIGKILL);
        cr_assert_eq(waitpid(pid, NULL, 0), pid);
        fs_rowcache_stats_t st;
        fs_rowcache_stats(c, &st); /* hangs here if the lock were not robust */
        cr_assert_leq(st.owner_deaths, 1);
        if (st.owner_deaths) {
            deaths++;
            cr_assert_eq(fs_rowcache_format(region, bytes, SLOTS, 8, FS_CACHE_LRU, &err), FS_OK, "%s", err.msg);
        }
    }
    cr_assert_geq(deaths, 1, "no kill of %d landed inside the lock", KILLS);
    munmap(region, bytes), munmap((void *)started, 4096);
}

/* ---- bad input -------------------------------------------------------------------------- */

static void expect_error(fs_status_t got, fs_status_t want, const fs_error_t *err, const char *needle)
{
    cr_assert_eq(got, want, "status %d, wanted %d: %s", got, want, err->msg);
    cr_assert(strncmp(err->msg, "row cache: ", 11) == 0 && strstr(err->msg, needle), "message '%s' lacks '%s'",
              err->msg, needle);
}

Test(rowcache, bad_input_is_refused_by_name)
{
    fs_error_t err = {0};
    fs_rowcache_t *c;
    size_t bytes = fs_rowcache_region_bytes(16, 64);
    void *region = NULL;
    cr_assert_eq(posix_memalign(&region, FS_ROWCACHE_ALIGN, bytes + FS_ROWCACHE_ALIGN), 0);
    expect_error(fs_rowcache_format(region, bytes, 0, 64, FS_CACHE_SIEVE, &err), FS_ERR_INVALID_ARGUMENT, &err,
                 "slots 0");
    expect_error(fs_rowcache_format(region, bytes, 16, 0, FS_CACHE_SIEVE, &err), FS_ERR_INVALID_ARGUMENT, &err,
                 "row_bytes 0");
    expect_error(fs_rowcache_format(region, bytes, INT32_MAX, 1, FS_CACHE_SIEVE, &err), FS_ERR_INVALID_ARGUMENT, &err,
                 "slots 2147483647");
    expect_error(fs_rowcache_format(region, bytes - 1, 16, 64, FS_CACHE_SIEVE, &err), FS_ERR_INVALID_ARGUMENT, &err,
                 "too small");
    expect_error(fs_rowcache_format((char *)region + 64, bytes, 16, 64, FS_CACHE_SIEVE, &err), FS_ERR_INVALID_ARGUMENT,
                 &err, "aligned");
    cr_assert_eq(fs_rowcache_region_bytes(0, 1), 0);
    cr_assert_eq(fs_rowcache_region_bytes((uint64_t)INT32_MAX, 1), 0);
    cr_assert_eq(fs_rowcache_region_bytes((uint64_t)INT32_MAX - 1, UINT64_MAX / 4), 0, "overflow");
    cr_assert_gt(fs_rowcache_region_bytes(16, 0), 0, "the index alone");
    cr_assert_lt(fs_rowcache_region_bytes(16, 0), fs_rowcache_region_bytes(16, 1));

    memset(region, 0xab, bytes);
    expect_error(fs_rowcache_attach(region, bytes, &c, &err), FS_ERR_FORMAT, &err, "magic");
    memset(region, 0, bytes);
    expect_error(fs_rowcache_attach(region, bytes, &c, &err), FS_ERR_FORMAT, &err, "magic");
    expect_error(fs_rowcache_attach(region, 16, &c, &err), FS_ERR_FORMAT, &err, "header");
    cr_assert_eq(fs_rowcache_format(region, bytes, 16, 64, FS_CACHE_CLOCK, &err), FS_OK, "%s", err.msg);
    expect_error(fs_rowcache_attach(region, bytes - 1, &c, &err), FS_ERR_FORMAT, &err, "region_bytes");
    ((uint64_t *)region)[1] = 99; /* the version, second in the header */
    expect_error(fs_rowcache_attach(region, bytes, &c, &err), FS_ERR_FORMAT, &err, "version");
    cr_assert_eq(fs_rowcache_format(region, bytes + FS_ROWCACHE_ALIGN, 16, 64, FS_CACHE_CLOCK, &err), FS_OK);
    cr_assert_eq(fs_rowcache_attach(region, bytes + FS_ROWCACHE_ALIGN, &c, &err), FS_OK, "a larger mapping is fine");
    cr_assert_eq(fs_rowcache_policy(c), FS_CACHE_CLOCK);

    fs_cache_policy_t p = FS_CACHE_LRU;
    expect_error(fs_cache_policy_parse("lfu", &p, &err), FS_ERR_INVALID_ARGUMENT, &err, "'lfu'");
    cr_assert(strstr(err.msg, "sieve") && strstr(err.msg, "lru") && strstr(err.msg, "clock"), "%s", err.msg);
    cr_assert_eq(p, FS_CACHE_LRU, "untouched on error");
    const char *names[] = {"sieve", "lru", "clock"};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(fs_cache_policy_parse(names[i], &p, &err), FS_OK);
        cr_assert_eq(p, i);
        cr_assert_str_eq(fs_cache_policy_name(p), names[i]);
    }
    free(region);
}

/* ---- the simulator ---------------------------------------------------------------------- */

static double simulate(fs_cache_policy_t p, uint64_t slots, const int64_t *rows, const size_t *ends, size_t batches,
                       uint64_t *misses, uint64_t *accesses)
{
    fs_error_t err = {0};
    cr_assert_eq(fs_rowcache_simulate(p, slots, rows, ends, batches, misses, accesses, &err), FS_OK, "%s", err.msg);
    return (double)*misses / (double)*accesses;
}

Test(rowcache_sim, scans_repeats_and_skew)
{
    enum { SLOTS = 100, LOOPS = 20, N = (SLOTS + 1) * LOOPS };
    static int64_t rows[N];
    static size_t ends[N];
    for (int i = 0; i < N; i++) rows[i] = i % (SLOTS + 1), ends[i] = (size_t)i + 1;
    uint64_t misses, accesses;
    simulate(FS_CACHE_LRU, SLOTS, rows, ends, N, &misses, &accesses);
    cr_assert(misses == N && accesses == N, "LRU on a cyclic scan of slots + 1 rows misses every time: %llu of %llu",
              (unsigned long long)misses, (unsigned long long)accesses);
    simulate(FS_CACHE_CLOCK, SLOTS, rows, ends, N, &misses, &accesses);
    cr_assert_eq(misses, N, "so does CLOCK");
    simulate(FS_CACHE_SIEVE, SLOTS, rows, ends, N, &misses, &accesses);
    cr_assert_eq(misses, N, "and SIEVE: nothing is ever hit, so nothing is visited");

    /* A hot set of 50 rows read twice, then 100 rows never seen again, each
     * round: LRU loses the hot rows to the scan every round (150 distinct
     * rows between two reads > 100 slots); SIEVE's hand clears their visited
     * bits once and then evicts only the unvisited scan rows, so after the
     * first round only the scan misses. */
    enum { HOT = 50, COLD = 100, ROUNDS = 40, HN = (2 * HOT + COLD) * ROUNDS };
    static int64_t hs[HN];
    static size_t hs_end[HN];
    for (int r = 0, i = 0; r < ROUNDS; r++) {
        for (int h = 0; h < 2 * HOT; h++) hs[i++] = h % HOT;
        for (int k = 0; k < COLD; k++) hs[i++] = 1000 + r * COLD + k;
    }
    for (int i = 0; i < HN; i++) hs_end[i] = (size_t)i + 1;
    simulate(FS_CACHE_LRU, SLOTS, hs, hs_end, HN, &misses, &accesses);
    cr_assert_eq(misses, (HOT + COLD) * ROUNDS, "LRU: %llu", (unsigned long long)misses);
    simulate(FS_CACHE_SIEVE, SLOTS, hs, hs_end, HN, &misses, &accesses);
    cr_assert_eq(misses, HOT + COLD * ROUNDS, "SIEVE: %llu", (unsigned long long)misses);

    /* One batch of 50 distinct rows (each twice) repeated: only the first time misses. */
    static int64_t rep[100 * 40];
    static size_t rep_end[40];
    for (int b = 0; b < 40; b++) {
        for (int i = 0; i < 100; i++) rep[b * 100 + i] = 5000 + (i * 7) % 50;
        rep_end[b] = (size_t)(b + 1) * 100;
    }
    for (int p = FS_CACHE_SIEVE; p <= FS_CACHE_CLOCK; p++) {
        simulate((fs_cache_policy_t)p, 64, rep, rep_end, 40, &misses, &accesses);
        cr_assert(misses == 50 && accesses == 50 * 40, "%s: %llu misses of %llu", fs_cache_policy_name(p),
                  (unsigned long long)misses, (unsigned long long)accesses);
    }
    /* A batch wider than the cache: the excess bypasses, a disk read each,
     * so every row of it misses; twice, and the 4 cached rows hit. */
    simulate(FS_CACHE_SIEVE, 4, rep, rep_end, 1, &misses, &accesses);
    cr_assert(misses == 50 && accesses == 50, "%llu misses", (unsigned long long)misses);
    simulate(FS_CACHE_SIEVE, 4, rep, rep_end, 2, &misses, &accesses);
    cr_assert(misses == 96 && accesses == 100, "%llu misses", (unsigned long long)misses);

    /* A skewed trace (ids u^6 of 10000: a cache of a tenth of them could
     * hold about 68% of the reads): every policy hits far more than a tenth,
     * SIEVE misses less than LRU, and the simulator's count is the shared
     * cache's own, driven by hand. */
    enum { ZB = 2000, ZW = 20 };
    static int64_t z[ZB * ZW];
    static size_t zend[ZB];
    uint64_t rng = 9;
    for (int i = 0; i < ZB * ZW; i++) {
        double u = (double)(next_rand(&rng) >> 11) / 9007199254740992.0;
        z[i] = (int64_t)(10000 * pow(u, 6));
    }
    for (int b = 0; b < ZB; b++) zend[b] = (size_t)(b + 1) * ZW;
    double ratio[3];
    for (int p = FS_CACHE_SIEVE; p <= FS_CACHE_CLOCK; p++) {
        ratio[p] = simulate((fs_cache_policy_t)p, 1000, z, zend, ZB, &misses, &accesses);
        cr_assert(ratio[p] > 0.2 && ratio[p] < 0.7, "%s miss ratio %.3f", fs_cache_policy_name(p), ratio[p]);
        fs_rowcache_t *c = new_cache(1000, 1, (fs_cache_policy_t)p);
        uint64_t by_hand = 0;
        for (int b = 0; b < ZB; b++) {
            int64_t uniq[ZW], slots[ZW];
            uint8_t out[ZW];
            int n = 0;
            for (int i = 0; i < ZW; i++) {
                int dup = 0;
                for (int j = 0; j < n; j++) dup |= uniq[j] == z[b * ZW + i];
                if (!dup) uniq[n++] = z[b * ZW + i];
            }
            fs_rowcache_acquire(c, uniq, (size_t)n, slots, out);
            fs_rowcache_publish(c, slots, (size_t)n, NULL);
            fs_rowcache_release(c, slots, (size_t)n);
            for (int i = 0; i < n; i++) by_hand += out[i] == FS_ROWCACHE_LOAD;
        }
        cr_assert_eq(by_hand, misses, "%s", fs_cache_policy_name(p));
        free(c);
    }
    cr_assert_lt(ratio[FS_CACHE_SIEVE], ratio[FS_CACHE_LRU], "SIEVE %.3f, LRU %.3f", ratio[FS_CACHE_SIEVE],
                 ratio[FS_CACHE_LRU]);

    fs_error_t err = {0};
    size_t bad_end[2] = {5, 3};
    expect_error(fs_rowcache_simulate(FS_CACHE_LRU, 0, rows, ends, 1, &misses, &accesses, &err),
                 FS_ERR_INVALID_ARGUMENT, &err, "slots 0");
    expect_error(fs_rowcache_simulate(FS_CACHE_LRU, 8, rows, bad_end, 2, &misses, &accesses, &err),
                 FS_ERR_INVALID_ARGUMENT, &err, "batch_end[1]");
}
