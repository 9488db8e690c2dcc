/* fs_sample_internal.h — the homogeneous sampler's internals: the typed
 * engine run on a homogeneous view (on the CPU or its CUDA twin, with or
 * without the locality boost), the picks every sampler shares, and the
 * typed sampler inside. Not a public interface. */
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
 * own limits), with the boost loc (fs_locality.h; NULL: none), the result
 * pointed into the typed sampler's arrays. The request must have passed
 * fs_sample_check with locality 0. */
struct fs_locality;
fs_status_t fs_sample_typed(fs_sampler_t *s, int device, const fs_csr_view_t *g, const int64_t *seeds, int64_t n,
                            const fs_sample_req_t *req, const struct fs_locality *loc, fs_sample_result_t *res,
                            fs_error_t *err);

/* The typed sampler inside (fs_typed_internal.h's workspace and
 * extensions: the locality-aware pass's weights). */
fs_typed_sampler_t *fs_sampler_typed(fs_sampler_t *s);

#endif
