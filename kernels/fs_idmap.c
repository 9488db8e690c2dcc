/* fs_idmap.c — the partitioned first-appearance id map (fs_idmap.h).
 *
 * A key's partition is the top of its multiplicative hash; its slot in the
 * partition's open-addressing table the bits just below, so the two are
 * independent. A partition's members (its keys in the order they were
 * added) are the source of truth: a table that must grow is rebuilt from
 * them, and phase 3 reads a new member's id from them.
 *
 * Phase 2 leaves one code per key, in bucket order (each partition writes
 * only its own contiguous segment of a chunk, so two workers never share a
 * cache line but at segment ends): the id when the key was known before the
 * run, else (member, partition, kind) with kind saying whether this is the
 * key's first appearance, a repeat within the chunk of its first (phase 3
 * resolves it, having just assigned the id), or a repeat in a later chunk
 * (phase 4 does, after every chunk's phase 3). */
#include "fs_idmap.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>

#include "fs_sample_internal.h"

enum { KIND_FIRST, KIND_SAME_CHUNK, KIND_LATER_CHUNK };

#define PROBE_AHEAD 48

typedef struct {
    uint64_t key;
    int32_t val;     /* the local id, or -1 - member while the run is assigning */
    uint32_t epoch;
} slot_t;

typedef struct {
    slot_t *table;
    size_t cap;
    int shift;
    uint64_t *mkey;         /* members, in the order added */
    int64_t *mval;          /* their local ids */
    uint32_t *mslot;        /* their table slots (this run's new members) */
    int32_t *mchunk;        /* the chunk of their first appearance (likewise) */
    int64_t nm, mcap, run_start;
    int64_t *firsts;        /* [chunks] new keys found in each chunk this run */
    int64_t later;          /* repeats of this run's new keys in later chunks */
    char pad[64];
} part_t;

typedef struct {
    const uint64_t *keys;
    int64_t n, cap;
    uint64_t *bkeys;        /* keys in bucket order */
    uint32_t *inv;          /* position -> bucket index */
    int64_t *code;          /* phase 2's result, bucket order */
    int64_t start[FS_IDMAP_MAX_PARTS + 1]; /* bucket segments */
    int64_t base;           /* first new id of the chunk */
    uint32_t *later_pos;    /* phase 3: positions of repeats of keys first seen in earlier chunks */
    int64_t nlater;
} chunk_t;

struct fs_idmap {
    int parts;
    uint32_t epoch;
    part_t *part;
    chunk_t *chunk;
    int chunks, chunk_cap, firsts_cap;
    int64_t next_id;
    int any_later;
};

void *fs_table_mem_alloc(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
    if (bytes >= ((size_t)2 << 20)) madvise(p, bytes, MADV_HUGEPAGE);
#endif
    return p;
}

void fs_table_mem_free(void *p, size_t bytes)
{
    if (p) munmap(p, bytes);
}

static inline uint64_t hash_of(uint64_t key) { return key * 0x9e3779b97f4a7c15ULL; }

static inline int part_of(uint64_t h, int parts) { return (int)(((h >> 32) * (uint64_t)parts) >> 32); }

static inline size_t slot_of(const part_t *p, uint64_t h) { return (size_t)((h << 8) >> p->shift); }

/* A placeholder: -1 - (member, partition (8 bits), kind (2 bits)). */
static inline int64_t encode(int64_t member, int part, int kind)
{
    return -1 - (member << 10 | (int64_t)part << 2 | kind);
}

static inline void decode(int64_t code, int64_t *member, int *part, int *kind)
{
    uint64_t c = (uint64_t)(-1 - code);
    *kind = (int)(c & 3);
    *part = (int)((c >> 2) & 0xff);
    *member = (int64_t)(c >> 10);
}

fs_idmap_t *fs_idmap_create(void)
{
    fs_idmap_t *m = calloc(1, sizeof *m);
    if (m && !(m->part = calloc(FS_IDMAP_MAX_PARTS, sizeof *m->part))) {
        free(m);
        return NULL;
    }
    return m;
}

void fs_idmap_destroy(fs_idmap_t *m)
{
    if (!m) return;
    for (int p = 0; p < FS_IDMAP_MAX_PARTS; p++) {
        part_t *q = &m->part[p];
        fs_table_mem_free(q->table, q->cap * sizeof(slot_t));
        free(q->mkey), free(q->mval), free(q->mslot), free(q->mchunk), free(q->firsts);
    }
    for (int c = 0; c < m->chunk_cap; c++)
        free(m->chunk[c].bkeys), free(m->chunk[c].inv), free(m->chunk[c].code), free(m->chunk[c].later_pos);
    free(m->part);
    free(m->chunk);
    free(m);
}

void fs_idmap_begin(fs_idmap_t *m, int parts)
{
    m->parts = parts < 1 ? 1 : parts > FS_IDMAP_MAX_PARTS ? FS_IDMAP_MAX_PARTS : parts;
    for (int p = 0; p < m->parts; p++) m->part[p].nm = m->part[p].run_start = 0;
    if (++m->epoch == 0) { /* wrapped: stale stamps could match, clear once */
        for (int p = 0; p < FS_IDMAP_MAX_PARTS; p++)
            if (m->part[p].table) memset(m->part[p].table, 0, m->part[p].cap * sizeof(slot_t));
        m->epoch = 1;
    }
}

int fs_idmap_run_begin(fs_idmap_t *m, int chunks, int64_t next_id)
{
    if (fs_grow_zeroed((void **)&m->chunk, &m->chunk_cap, chunks, sizeof *m->chunk)) return -1;
    for (int p = 0; p < FS_IDMAP_MAX_PARTS; p++) { /* every partition counts per chunk: one capacity for all */
        int cap = m->firsts_cap;
        if (fs_grow_zeroed((void **)&m->part[p].firsts, &cap, chunks, sizeof(int64_t))) return -1;
    }
    if (chunks > m->firsts_cap) m->firsts_cap = chunks;
    m->chunks = chunks;
    m->next_id = next_id;
    m->any_later = 0;
    return 0;
}

/* ---- phase 1 --------------------------------------------------------------- */

/* Room for n entries in each of k parallel arrays holding *cap (doubling
 * from 1024). 0, or -1 when out of memory (arrays grown so far stay valid). */
static int arrays_reserve(int64_t n, int64_t *cap, int k, void **arr[], const size_t elem[])
{
    if (n <= *cap) return 0;
    int64_t c = *cap ? *cap : 1024;
    while (c < n) c *= 2;
    for (int i = 0; i < k; i++) {
        void *p = realloc(*arr[i], (size_t)c * elem[i]);
        if (!p) return -1;
        *arr[i] = p;
    }
    *cap = c;
    return 0;
}

static int chunk_reserve(chunk_t *c, int64_t n)
{
    void **arr[] = {(void **)&c->bkeys, (void **)&c->inv, (void **)&c->code, (void **)&c->later_pos};
    const size_t elem[] = {sizeof *c->bkeys, sizeof *c->inv, sizeof *c->code, sizeof *c->later_pos};
    return arrays_reserve(n, &c->cap, 4, arr, elem);
}

int fs_idmap_bucket(fs_idmap_t *m, int ci, const uint64_t *keys, int64_t n)
{
    chunk_t *c = &m->chunk[ci];
    int P = m->parts;
    if (n >= UINT32_MAX || chunk_reserve(c, n)) return -1;
    c->keys = keys;
    c->n = n;
    int64_t *at = c->start; /* counting sort: sizes, then segment starts, then fill */
    memset(at, 0, sizeof(int64_t) * (size_t)(P + 1));
    if (P == 1) at[1] = n;
    else
        for (int64_t i = 0; i < n; i++) at[part_of(hash_of(keys[i]), P) + 1]++;
    for (int p = 0; p < P; p++) at[p + 1] += at[p];
    int64_t fill[FS_IDMAP_MAX_PARTS];
    memcpy(fill, at, sizeof(int64_t) * (size_t)P);
    for (int64_t i = 0; i < n; i++) {
        int p = P == 1 ? 0 : part_of(hash_of(keys[i]), P);
        int64_t b = fill[p]++;
        c->bkeys[b] = keys[i];
        c->inv[i] = (uint32_t)b;
    }
    return 0;
}

/* ---- phase 2 --------------------------------------------------------------- */

static int members_reserve(part_t *q, int64_t n)
{
    void **arr[] = {(void **)&q->mkey, (void **)&q->mval, (void **)&q->mslot, (void **)&q->mchunk};
    const size_t elem[] = {sizeof *q->mkey, sizeof *q->mval, sizeof *q->mslot, sizeof *q->mchunk};
    return arrays_reserve(n, &q->mcap, 4, arr, elem);
}

/* Rebuilds p's table at `cap` slots from its members: this run's new ones
 * (j >= run_start) still carry their placeholder, earlier ones their id. */
static int part_rebuild(part_t *q, size_t cap, uint32_t epoch)
{
    if (cap > ((size_t)1 << 32)) return -1; /* mslot holds 32-bit slots */
    slot_t *t = fs_table_mem_alloc(cap * sizeof(slot_t));
    if (!t) return -1;
    fs_table_mem_free(q->table, q->cap * sizeof(slot_t));
    q->table = t;
    q->cap = cap;
    q->shift = 64 - __builtin_ctzll(cap);
    for (int64_t j = 0; j < q->nm; j++) {
        size_t h = slot_of(q, hash_of(q->mkey[j]));
        while (t[h].epoch == epoch) h = (h + 1) & (cap - 1);
        int32_t val = j >= q->run_start ? (int32_t)(-1 - j) : (int32_t)q->mval[j];
        t[h] = (slot_t){.key = q->mkey[j], .val = val, .epoch = epoch};
        if (j >= q->run_start) q->mslot[j] = (uint32_t)h;
    }
    return 0;
}

/* Room for `extra` more members, and a table at load <= 1/2 for `expect`
 * more. The table is sized for what a run will likely add, not its worst
 * case, so it stays cache-sized; probe_one grows it if a run adds more. */
static int part_reserve(part_t *q, int64_t extra, int64_t expect, uint32_t epoch)
{
    if (members_reserve(q, q->nm + extra)) return -1;
    size_t need = (size_t)(q->nm + expect) * 2, cap = q->cap ? q->cap : 1024;
    if (need <= q->cap) return 0;
    while (cap < need) cap *= 2;
    return part_rebuild(q, cap, epoch);
}

typedef struct {
    fs_idmap_t *m;
    const uint64_t *keys;   /* fs_idmap_load's */
    int64_t n;
    int workers;
    _Atomic int failed;
    _Atomic char claimed[FS_IDMAP_MAX_PARTS];
} probe_job_t;

/* Each partition scans all the keys and adds its own: n is one small
 * frontier, and a scan costs far less than the inserts. */
static void load_part(void *ctx, int64_t begin, int64_t end, int worker)
{
    (void)worker;
    probe_job_t *job = ctx;
    fs_idmap_t *m = job->m;
    for (int p = (int)begin; p < (int)end; p++) {
        part_t *q = &m->part[p];
        int64_t mine = 0;
        for (int64_t i = 0; i < job->n; i++) mine += part_of(hash_of(job->keys[i]), m->parts) == p;
        if (part_reserve(q, mine, mine, m->epoch)) {
            job->failed = 1;
            continue;
        }
        for (int64_t i = 0; i < job->n; i++) {
            uint64_t h = hash_of(job->keys[i]);
            if (part_of(h, m->parts) != p) continue;
            size_t s = slot_of(q, h);
            while (q->table[s].epoch == m->epoch) s = (s + 1) & (q->cap - 1);
            q->table[s] = (slot_t){.key = job->keys[i], .val = (int32_t)i, .epoch = m->epoch};
            q->mkey[q->nm] = job->keys[i];
            q->mval[q->nm++] = i;
        }
        q->run_start = q->nm; /* loaded members carry their ids: nothing for probe_part to fix up */
    }
}

int fs_idmap_load(fs_idmap_t *m, fs_pool_t *pool, const uint64_t *keys, int64_t n)
{
    probe_job_t job = {.m = m, .keys = keys, .n = n};
    fs_pool_run(pool, m->parts, 1, load_part, &job);
    return job.failed ? -1 : 0;
}

/* One partition's keys of one chunk, in order: each key's code. The
 * table's fields live in locals (stores to the codes and members could
 * alias them), reloaded only when the table doubles; slots are prefetched
 * PROBE_AHEAD keys ahead. Returns 0, or -1 when out of memory. */
static int probe_segment(fs_idmap_t *m, part_t *q, int p, chunk_t *ch, int ci)
{
    const uint64_t *keys = ch->bkeys;
    int64_t b0 = ch->start[p], b1 = ch->start[p + 1], nm = q->nm, firsts = 0, later = 0;
    int64_t *code = ch->code;
    const uint32_t epoch = m->epoch;
    slot_t *table = q->table;
    size_t mask = q->cap - 1;
    int shift = q->shift;
    size_t grow_at = q->cap / 4 * 3;
    for (int64_t b = b0; b < b1; b++) {
        if (b + PROBE_AHEAD < b1) __builtin_prefetch(&table[(hash_of(keys[b + PROBE_AHEAD]) << 8) >> shift], 1, 0);
        uint64_t key = keys[b];
        size_t h = (hash_of(key) << 8) >> shift;
        for (;;) {
            slot_t *sl = &table[h];
            if (sl->epoch != epoch) { /* new: the next member */
                if ((size_t)nm + 1 > grow_at) { /* past 3/4: double, then look again */
                    q->nm = nm;
                    if (part_rebuild(q, q->cap * 2, epoch)) return -1;
                    table = q->table, mask = q->cap - 1, shift = q->shift, grow_at = q->cap / 4 * 3;
                    h = (hash_of(key) << 8) >> shift;
                    continue;
                }
                int64_t j = nm++;
                *sl = (slot_t){.key = key, .val = (int32_t)(-1 - j), .epoch = epoch};
                q->mkey[j] = key;
                q->mslot[j] = (uint32_t)h;
                q->mchunk[j] = ci;
                firsts++;
                code[b] = encode(j, p, KIND_FIRST);
                break;
            }
            if (sl->key == key) {
                int64_t j = -1 - (int64_t)sl->val;
                if (sl->val >= 0) code[b] = sl->val;
                else if (q->mchunk[j] == ci) code[b] = encode(j, p, KIND_SAME_CHUNK);
                else code[b] = encode(j, p, KIND_LATER_CHUNK), later++;
                break;
            }
            h = (h + 1) & mask;
        }
    }
    q->nm = nm;
    q->firsts[ci] = firsts;
    q->later += later;
    return 0;
}

/* Partition p of a run, once: last run's new members into its table,
 * room for this run's, then its keys chunk by chunk. */
static void probe_one_part(probe_job_t *job, int p)
{
    fs_idmap_t *m = job->m;
    part_t *q = &m->part[p];
    int64_t entries = 0;
    for (int c = 0; c < m->chunks; c++) entries += m->chunk[c].start[p + 1] - m->chunk[c].start[p];
    for (int64_t j = q->run_start; j < q->nm; j++) q->table[q->mslot[j]].val = (int32_t)q->mval[j];
    q->run_start = q->nm;
    q->later = 0;
    if (part_reserve(q, entries, entries / 8, m->epoch)) {
        job->failed = 1;
        return;
    }
    for (int c = 0; c < m->chunks; c++)
        if (probe_segment(m, q, p, &m->chunk[c], c)) {
            job->failed = 1;
            return;
        }
}

/* Worker w probes partitions w, w + W, ... first, so a partition's table
 * stays in one core's caches from hop to hop; then it takes whatever is
 * left (a worker slow to wake loses its partitions, not the run). */
static void probe_part(void *ctx, int64_t begin, int64_t end, int worker)
{
    (void)begin, (void)end;
    probe_job_t *job = ctx;
    int P = job->m->parts;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < P; i++) {
            int p = pass ? i : worker + i * job->workers;
            if (p >= P) break;
            if (!atomic_exchange(&job->claimed[p], 1)) probe_one_part(job, p);
        }
}

int64_t fs_idmap_probe(fs_idmap_t *m, fs_pool_t *pool)
{
    probe_job_t job = {.m = m, .workers = fs_pool_size(pool)};
    fs_pool_run(pool, job.workers, 1, probe_part, &job); /* one item per worker: probe_part picks partitions */
    if (job.failed) return -1;
    int64_t next = m->next_id;
    for (int c = 0; c < m->chunks; c++) { /* chunk bases: first appearance across partitions */
        m->chunk[c].base = next;
        for (int p = 0; p < m->parts; p++) next += m->part[p].firsts[c];
    }
    for (int p = 0; p < m->parts; p++) m->any_later |= m->part[p].later > 0;
    return next - m->next_id;
}

/* ---- phases 3 and 4 ------------------------------------------------------- */

int64_t fs_idmap_assign(fs_idmap_t *m, int ci, int64_t *out, int64_t *first)
{
    chunk_t *c = &m->chunk[ci];
    c->nlater = 0;
    int64_t id = c->base, j, nf = 0;
    int p, kind;
    for (int64_t i = 0; i < c->n; i++) {
        int64_t code = c->code[c->inv[i]];
        if (code >= 0) {
            out[i] = code;
            continue;
        }
        decode(code, &j, &p, &kind);
        part_t *q = &m->part[p];
        if (kind == KIND_FIRST) {
            q->mval[j] = id; /* the table learns it at the partition's next probe (probe_part) */
            first[nf++] = i;
            out[i] = id++;
        } else if (kind == KIND_SAME_CHUNK) {
            out[i] = q->mval[j];
        } else {
            out[i] = code;
            c->later_pos[c->nlater++] = (uint32_t)i;
        }
    }
    return nf;
}

int64_t fs_idmap_chunk_base(const fs_idmap_t *m, int c) { return m->chunk[c].base; }

int fs_idmap_needs_resolve(const fs_idmap_t *m) { return m->any_later; }

void fs_idmap_resolve(const fs_idmap_t *m, int ci, int64_t *out)
{
    const chunk_t *c = &m->chunk[ci];
    int64_t j;
    int p, kind;
    for (int64_t k = 0; k < c->nlater; k++) {
        uint32_t i = c->later_pos[k];
        decode(out[i], &j, &p, &kind);
        out[i] = m->part[p].mval[j];
    }
}
