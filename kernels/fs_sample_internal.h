/* fs_sample_internal.h — the homogeneous sampler's internals: the typed
 * engine run on a homogeneous view (on the CPU or its CUDA twin), the picks
 * every engine shares, and the workspace and id map that the
 * locality-aware pass (fs_locality.c) fills, so every result has one
 * ownership model. Not a public interface. */
#ifndef FS_SAMPLE_INTERNAL_H
#define FS_SAMPLE_INTERNAL_H

#include "fs_sample.h"
#include "fs_sample_pick.h"

/* A growable int64 array (the engine's workspace arrays, and extensions'). */
typedef struct {
    int64_t *p;
    size_t cap;
} fs_i64vec_t;

/* Room for n entries (capacity doubles); 0, or -1 when out of memory. */
int fs_i64vec_reserve(fs_i64vec_t *v, size_t n);

/* Grows the array *p of *cap elements of `elem` bytes to n, the new ones
 * zeroed (workspace structs that own buffers start empty); 0, or -1 when
 * out of memory (the array is left as it was). */
int fs_grow_zeroed(void **p, int *cap, int n, size_t elem);

/* The picks of one whole row for a mode (fs_sample_pick.h): up to k of deg
 * positions (k = FS_FANOUT_ALL: deg) into buf, or *pos = NULL meaning every
 * position 0..deg-1; returns how many. wbuf holds deg doubles for the
 * weighted modes, buf max(k, deg). Shared by the reference (fs_sample.c) and the typed
 * sampler (fs_typed_internal.h) so both make the same choices. */
static inline __attribute__((always_inline)) int64_t fs_pick_row(fs_sample_mode_t mode, fs_rng_t *rng, const float *w, int64_t deg, int64_t k,
                                  double *wbuf, int64_t *buf, int64_t **pos)
{
    *pos = buf;
    if (k == FS_FANOUT_ALL) k = deg;
    switch (mode) {
    case FS_SAMPLE_UNIFORM:
        if (deg <= k) {
            *pos = NULL;
            return deg;
        }
        fs_pick_uniform(rng, deg, k, buf);
        return k;
    case FS_SAMPLE_UNIFORM_REPLACE:
        if (deg == 0) return 0;
        fs_pick_replace(rng, deg, k, buf);
        return k;
    case FS_SAMPLE_WEIGHTED: return fs_pick_weighted(rng, w, deg, k, wbuf, buf);
    default: return fs_pick_weighted_replace_cdf(rng, w, deg, k, wbuf, buf);
    }
}

/* The view as one node type and one edge type through the typed engine
 * on `device` (-1: the CPU; else fs_typed_sample_cuda, which checks its
 * own limits), the result pointed into the typed sampler's arrays. The
 * request must have passed fs_sample_check. */
fs_status_t fs_sample_typed(fs_sampler_t *s, int device, const fs_csr_view_t *g, const int64_t *seeds, int64_t n,
                            const fs_sample_req_t *req, fs_sample_result_t *res, fs_error_t *err);

enum { FS_WS_NODES, FS_WS_SEED_LOCAL, FS_WS_OFF, FS_WS_EDST, FS_WS_ESRC, FS_WS_EID };

/* Starts a request: it takes the output memory fs_sampler_set_output gave
 * (or none: the sampler's own). Every entry point calls it first, before
 * any workspace array or map_reserve below. */
void fs_sampler_begin(fs_sampler_t *s);

/* A workspace array with room for n entries, or NULL when out of memory. */
int64_t *fs_sampler_workspace(fs_sampler_t *s, int kind, int hop, size_t n);

/* Fills *res from the workspace once every hop's arrays are written. */
void fs_sampler_result(fs_sampler_t *s, const fs_sample_req_t *req, int64_t n, const int64_t *u_after,
                       const int64_t *num_dst, const int64_t *num_edges, fs_sample_result_t *res);

/* For extensions of the CPU engine (fs_locality.c, locality-aware
 * sampling): a private workspace hung off the sampler, released by
 * fs_sampler_destroy through free_fn, so an extension's outputs follow the
 * sampler's ownership rule (valid until its next call); and the engine's
 * fused id map, so local ids follow first appearance exactly as in
 * fs_sample_cpu. Protocol: fs_sampler_begin(s), map_reserve(s, 0, n), map_begin(s), map_add the
 * seeds, then per hop map_reserve(s, u, new keys) before adding them
 * (reserving may move the FS_WS_NODES array: fetch it again). The
 * extension slot has one owner, fs_locality.c. */
void *fs_sampler_ext(fs_sampler_t *s);
void fs_sampler_set_ext(fs_sampler_t *s, void *ext, void (*free_fn)(void *));
int fs_sampler_map_reserve(fs_sampler_t *s, int64_t u, int64_t extra);  /* 0, or -1 when out of memory */
void fs_sampler_map_begin(fs_sampler_t *s);
int64_t fs_sampler_map_add(fs_sampler_t *s, int64_t key, int64_t *u);  /* local id; new keys get (*u)++ */
void fs_sampler_map_prefetch(const fs_sampler_t *s, int64_t key);      /* a hint: key's slot into cache */

/* The chunked parallel hop (fs_chunked.h) for extensions: the sampler's
 * pool (NULL: none), its chunks and id map, and the move of a request's
 * nodes so far (ids 0..u-1, from the map above) into the id map before the
 * request's first parallel hop (0, or -1 when out of memory; a no-op once
 * moved, until the next fs_sampler_map_begin). After it, every hop of the
 * request goes through fs_chunked. */
typedef struct fs_chunked fs_chunked_t;
fs_pool_t *fs_sampler_pool(fs_sampler_t *s);
fs_chunked_t *fs_sampler_par(fs_sampler_t *s);
int fs_sampler_par_begin(fs_sampler_t *s, int64_t u);

#endif
