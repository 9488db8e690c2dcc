/* fs_chunked.h — the chunked hop the CPU samplers share (fs_typed_parallel.c,
 * fs_locality.c; docs/algorithms.md §6, "parallel
 * relabel"): a hop's destinations cut into chunks, each chunk's picks staged
 * by whichever worker claims it, then relabelled in first-appearance order
 * and laid out in the hop's arrays exactly as the fused serial hop writes
 * them. Two ways to relabel:
 *   - in order (up to FS_CHUNK_INSERTER_MAX threads, and one): fs_chunked_plan,
 *     fs_chunked_pick_insert with the sampler's own picks and Fused-Map
 *     inserts, then fs_chunked_lay_out;
 *   - partitioned (more threads): fs_chunked_begin once per request,
 *     fs_chunked_plan, each chunk's picks then fs_chunked_staged on the
 *     pool, then fs_chunked_relabel (the id map, fs_idmap.h).
 * Internal to the kernels; one per sampler. */
#ifndef FS_CHUNKED_H
#define FS_CHUNKED_H

#include "fs_idmap.h"
#include "fs_pool.h"
#include "fs_sample_internal.h"

/* A hop goes to the pool when its worst case reaches this many edges:
 * below it the phases' hand-offs cost more than the split saves (on the
 * 2-core box: -15% at 4096, +30% at 16384; docs/algorithms.md §6). */
#define FS_CHUNK_PARALLEL_MIN 8192
/* The threshold in force: FS_CHUNK_PARALLEL_MIN, lowered by tests (to 1)
 * to send every hop of a small graph to the pool. Set it before sampling. */
extern int64_t fs_chunk_parallel_min;

/* Picks per chunk: a chunk's staging, buckets and codes stay within L2. */
#define FS_CHUNK_PICKS 4096

/* One chunk: destinations [d0, d1) and their picks, in pick order (a
 * pick's destination is implied by `off`: fs_chunk_dst). */
typedef struct {
    fs_i64vec_t key;   /* the id map's key of each pick's neighbour */
    fs_i64vec_t eid;   /* its edge id, when wanted */
    fs_i64vec_t off;   /* [d1 - d0 + 1] picks before each destination */
    int64_t d0, d1, n, base;
    _Atomic int ready; /* staged (the in-order inserter's signal) */
} fs_chunk_t;

/* The destination (local id) of the chunk's pick at position `at`. */
static inline int64_t fs_chunk_dst(const fs_chunk_t *c, int64_t at)
{
    int64_t lo = 0, hi = c->d1 - c->d0; /* the row r with off[r] <= at < off[r + 1] */
    while (hi - lo > 1) {
        int64_t mid = (lo + hi) / 2;
        if (c->off.p[mid] <= at) lo = mid;
        else hi = mid;
    }
    return c->d0 + lo;
}

typedef struct fs_chunked {
    fs_idmap_t *idmap;
    int active;        /* this request's ids live in idmap (set by the sampler) */
    fs_chunk_t *chunk;
    int chunks, chunk_cap;
    int64_t d0;
    fs_i64vec_t *first; /* per worker: a chunk's first appearances */
    int first_cap;
} fs_chunked_t;

void fs_chunked_free(fs_chunked_t *c);

/* Starts a request's use of the id map with one partition per pool thread.
 * 0, or -1 when out of memory. */
int fs_chunked_begin(fs_chunked_t *c, fs_pool_t *pool);

/* Cuts destinations [d0, d1) into chunks of about FS_CHUNK_PICKS picks at
 * per_row picks a row, for a run whose new ids start at next_id (in the id
 * map, when the request uses it: `active`). Returns the number of chunks,
 * or -1 when out of memory. */
int fs_chunked_plan(fs_chunked_t *c, int64_t d0, int64_t d1, int64_t per_row, int64_t next_id);

/* Room in a chunk's staging for `bound` picks. 0, or -1. */
int fs_chunk_reserve(fs_chunk_t *c, int64_t bound, int want_ids);

/* A chunk's n picks are staged: hands its keys to the id map. 0, or -1. */
int fs_chunked_staged(fs_chunked_t *c, int ci, int64_t n);

/* Called once per chunk from the pool with the chunk's nf new nodes, ids
 * id0.., first[j] the position in the chunk of the j-th: the sampler writes
 * what a new node carries (its global id, batch, time). */
typedef void (*fs_chunked_new_fn)(void *ctx, const fs_chunk_t *c, const int64_t *first, int64_t nf, int64_t id0);

/* An fs_chunked_new_fn for samplers whose keys are the nodes' global ids:
 * ctx is the node array (int64_t *), written at the new ids. */
void fs_chunked_new_ids(void *ctx, const fs_chunk_t *c, const int64_t *first, int64_t nf, int64_t id0);

/* Relabels every staged chunk on the pool and writes the hop's arrays:
 * off[d - d0 + 1] for each destination (off[0] = 0), and per edge ed, es
 * (local source ids) and eid (NULL: none). Returns the number of new nodes,
 * or -1 when out of memory. */
int64_t fs_chunked_relabel(fs_chunked_t *c, fs_pool_t *pool, int64_t *off, int64_t *ed, int64_t *es, int64_t *eid,
                           fs_chunked_new_fn on_new, void *ctx);

/* The sum of the chunks' picks (after staging). */
int64_t fs_chunked_total(const fs_chunked_t *c);

/* The in-order inserter (docs/algorithms.md §6): pools of up to this many
 * threads keep the sampler's own Fused-Map; larger ones partition it. */
#define FS_CHUNK_INSERTER_MAX 3

/* Stages chunk's picks (fs_chunk_reserve, then its key, eid, off, n):
 * the number of picks, or -1 when out of memory. */
typedef int64_t (*fs_chunk_pick_fn)(void *ctx, int worker, fs_chunk_t *chunk);
/* Relabels a staged chunk with the sampler's own map; called in chunk order. */
typedef void (*fs_chunk_insert_fn)(void *ctx, const fs_chunk_t *chunk);

/* Picks every planned chunk on the pool while one worker (the first to
 * arrive) inserts the staged chunks in chunk order as they become ready,
 * picking itself while none is. 0, or -1 when a pick failed (no chunk is
 * inserted after that). */
int fs_chunked_pick_insert(fs_chunked_t *c, fs_pool_t *pool, fs_chunk_pick_fn pick, fs_chunk_insert_fn insert,
                           void *ctx);

/* For samplers that relabel with their own serial map, in chunk order, as
 * chunks become ready (fs_typed_parallel.c's in-order inserter): sets each chunk's
 * base, then lays out off, ed and eid (NULL: none) on the pool as
 * fs_chunked_relabel does; es is the sampler's. */
void fs_chunked_lay_out(fs_chunked_t *c, fs_pool_t *pool, int64_t *off, int64_t *ed, int64_t *eid);

#endif
