/* fs_chunked.c — the chunked parallel hop (fs_chunked.h). The pool runs
 * three phases after the sampler's picks: the id map's probe (one worker per
 * partition), then per chunk the assignment of new ids with the copy of the
 * chunk's edges into place, then, only if some key repeats in a later chunk
 * than its first, the resolution of those repeats. */
#include "fs_chunked.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

int64_t fs_chunk_parallel_min = FS_CHUNK_PARALLEL_MIN;

void fs_chunked_free(fs_chunked_t *c)
{
    fs_idmap_destroy(c->idmap);
    for (int i = 0; i < c->chunk_cap; i++) {
        fs_chunk_t *k = &c->chunk[i];
        free(k->key.p), free(k->eid.p), free(k->off.p);
    }
    free(c->chunk);
    for (int w = 0; w < c->first_cap; w++) free(c->first[w].p);
    free(c->first);
    memset(c, 0, sizeof *c);
}

int fs_chunked_begin(fs_chunked_t *c, fs_pool_t *pool)
{
    if (!c->idmap && !(c->idmap = fs_idmap_create())) return -1;
    int workers = fs_pool_size(pool);
    if (fs_grow_zeroed((void **)&c->first, &c->first_cap, workers, sizeof *c->first)) return -1;
    fs_idmap_begin(c->idmap, workers);
    c->active = 1;
    return 0;
}

int fs_chunked_plan(fs_chunked_t *c, int64_t d0, int64_t d1, int64_t per_row, int64_t next_id)
{
    int64_t rows = FS_CHUNK_PICKS / (per_row > 0 ? per_row : 1);
    if (rows < 1) rows = 1;
    int64_t chunks = (d1 - d0 + rows - 1) / rows;
    if (chunks > INT32_MAX / 2) return -1;
    if (fs_grow_zeroed((void **)&c->chunk, &c->chunk_cap, (int)chunks, sizeof *c->chunk)) return -1;
    for (int64_t i = 0; i < chunks; i++) {
        fs_chunk_t *k = &c->chunk[i];
        k->d0 = d0 + i * rows;
        k->d1 = k->d0 + rows < d1 ? k->d0 + rows : d1;
        k->n = 0;
        atomic_store_explicit(&k->ready, 0, memory_order_relaxed);
    }
    c->chunks = (int)chunks;
    c->d0 = d0;
    if (!c->active) return c->chunks;
    return fs_idmap_run_begin(c->idmap, c->chunks, next_id) ? -1 : c->chunks;
}

int fs_chunk_reserve(fs_chunk_t *k, int64_t bound, int want_ids)
{
    return fs_i64vec_reserve(&k->key, (size_t)bound + 1) ||
           (want_ids && fs_i64vec_reserve(&k->eid, (size_t)bound + 1)) ||
           fs_i64vec_reserve(&k->off, (size_t)(k->d1 - k->d0) + 1);
}

int fs_chunked_staged(fs_chunked_t *c, int ci, int64_t n)
{
    c->chunk[ci].n = n;
    return fs_idmap_bucket(c->idmap, ci, (const uint64_t *)c->chunk[ci].key.p, n);
}

int64_t fs_chunked_total(const fs_chunked_t *c)
{
    int64_t total = 0;
    for (int i = 0; i < c->chunks; i++) total += c->chunk[i].n;
    return total;
}

void fs_chunked_new_ids(void *ctx, const fs_chunk_t *c, const int64_t *first, int64_t nf, int64_t id0)
{
    int64_t *nodes = ctx;
    for (int64_t i = 0; i < nf; i++) nodes[id0 + i] = c->key.p[first[i]];
}

typedef struct {
    fs_chunked_t *c;
    int64_t *off, *ed, *es, *eid;
    fs_chunked_new_fn on_new;
    void *ctx;
} relabel_job_t;

typedef struct {
    fs_chunked_t *c;
    fs_chunk_pick_fn pick;
    fs_chunk_insert_fn insert;
    void *ctx;
    _Atomic int next, role, failed;
} inserter_job_t;

static void inserter_run(void *ctx, int64_t i0, int64_t i1, int worker)
{
    inserter_job_t *j = ctx;
    fs_chunk_t *chunk = j->c->chunk;
    int chunks = j->c->chunks;
    for (int64_t item = i0; item < i1; item++) {
        int inserter = atomic_exchange(&j->role, 1) == 0, done = 0;
        unsigned waits = 0;
        for (;;) {
            if (inserter && done < chunks && atomic_load_explicit(&chunk[done].ready, memory_order_acquire)) {
                if (!j->failed) j->insert(j->ctx, &chunk[done]);
                done++;
                continue;
            }
            int i = atomic_fetch_add(&j->next, 1);
            if (i < chunks) {
                if (j->pick(j->ctx, worker, &chunk[i]) < 0) j->failed = 1;
                atomic_store_explicit(&chunk[i].ready, 1, memory_order_release);
                continue;
            }
            if (!inserter || done == chunks) break;
            /* the next chunk is being picked by another worker; one that has no
             * core of its own (more threads than cores) needs this one's */
            if (++waits % 1024 == 0) sched_yield();
#if defined(__x86_64__) || defined(__i386__)
            else __builtin_ia32_pause();
#endif
        }
    }
}

int fs_chunked_pick_insert(fs_chunked_t *c, fs_pool_t *pool, fs_chunk_pick_fn pick, fs_chunk_insert_fn insert,
                           void *ctx)
{
    inserter_job_t j = {.c = c, .pick = pick, .insert = insert, .ctx = ctx};
    fs_pool_run(pool, fs_pool_size(pool), 1, inserter_run, &j); /* one item per worker: inserter_run splits the work */
    return j.failed ? -1 : 0;
}

/* A chunk's offsets, destinations and edge ids in the hop's arrays. */
static void lay_out_chunk(const fs_chunked_t *c, const fs_chunk_t *k, int64_t *off, int64_t *ed, int64_t *eid)
{
    if (eid) memcpy(eid + k->base, k->eid.p, (size_t)k->n * sizeof(int64_t));
    for (int64_t d = k->d0; d < k->d1; d++) {
        int64_t e0 = k->base + k->off.p[d - k->d0], e1 = k->base + k->off.p[d - k->d0 + 1];
        off[d - c->d0 + 1] = e1;
        for (int64_t e = e0; e < e1; e++) ed[e] = d;
    }
}

static void assign_chunks(void *ctx, int64_t c0, int64_t c1, int worker)
{
    relabel_job_t *j = ctx;
    fs_chunked_t *c = j->c;
    int64_t *first = c->first[worker].p;
    for (int64_t i = c0; i < c1; i++) {
        const fs_chunk_t *k = &c->chunk[i];
        int64_t nf = fs_idmap_assign(c->idmap, (int)i, j->es + k->base, first);
        if (nf) j->on_new(j->ctx, k, first, nf, fs_idmap_chunk_base(c->idmap, (int)i));
        lay_out_chunk(c, k, j->off, j->ed, j->eid);
    }
}

static void lay_out_chunks(void *ctx, int64_t c0, int64_t c1, int worker)
{
    (void)worker;
    relabel_job_t *j = ctx;
    for (int64_t i = c0; i < c1; i++) lay_out_chunk(j->c, &j->c->chunk[i], j->off, j->ed, j->eid);
}

void fs_chunked_lay_out(fs_chunked_t *c, fs_pool_t *pool, int64_t *off, int64_t *ed, int64_t *eid)
{
    int64_t total = 0;
    for (int i = 0; i < c->chunks; i++) c->chunk[i].base = total, total += c->chunk[i].n;
    relabel_job_t j = {.c = c, .off = off, .ed = ed, .eid = eid};
    fs_pool_run(pool, c->chunks, 1, lay_out_chunks, &j);
    off[0] = 0;
}

static void resolve_chunks(void *ctx, int64_t c0, int64_t c1, int worker)
{
    (void)worker;
    relabel_job_t *j = ctx;
    for (int64_t i = c0; i < c1; i++) fs_idmap_resolve(j->c->idmap, (int)i, j->es + j->c->chunk[i].base);
}

int64_t fs_chunked_relabel(fs_chunked_t *c, fs_pool_t *pool, int64_t *off, int64_t *ed, int64_t *es, int64_t *eid,
                           fs_chunked_new_fn on_new, void *ctx)
{
    int64_t total = 0, max_n = 0;
    for (int i = 0; i < c->chunks; i++) {
        c->chunk[i].base = total;
        total += c->chunk[i].n;
        if (c->chunk[i].n > max_n) max_n = c->chunk[i].n;
    }
    for (int w = 0; w < fs_pool_size(pool); w++)
        if (fs_i64vec_reserve(&c->first[w], (size_t)max_n + 1)) return -1;
    int64_t fresh = fs_idmap_probe(c->idmap, pool);
    if (fresh < 0) return -1;
    relabel_job_t j = {.c = c, .off = off, .ed = ed, .es = es, .eid = eid, .on_new = on_new, .ctx = ctx};
    fs_pool_run(pool, c->chunks, 1, assign_chunks, &j);
    if (fs_idmap_needs_resolve(c->idmap)) fs_pool_run(pool, c->chunks, 1, resolve_chunks, &j);
    off[0] = 0;
    return fresh;
}
