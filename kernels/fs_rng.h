/* fs_rng.h — counter-based random numbers. Every draw is a pure function of
 * (seed, stream, counter), so work split over any number of threads produces
 * the same values, and a request carrying a seed is reproducible. The mixer
 * is SplitMix64 (Steele et al., 2014), which passes BigCrush. */
#ifndef FS_RNG_H
#define FS_RNG_H

#include <stdint.h>

static inline uint64_t fs_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The i-th value of stream `stream` under `seed`. */
static inline uint64_t fs_rng_at(uint64_t seed, uint64_t stream, uint64_t i)
{
    return fs_mix64(fs_mix64(seed ^ fs_mix64(stream + 0x9e3779b97f4a7c15ULL)) + i * 0x9e3779b97f4a7c15ULL);
}

/* A sequential generator for loops that draw many values. */
typedef struct { uint64_t state; } fs_rng_t;

static inline fs_rng_t fs_rng_make(uint64_t seed, uint64_t stream)
{
    fs_rng_t r = {fs_mix64(seed ^ fs_mix64(stream + 0x9e3779b97f4a7c15ULL))};
    return r;
}

static inline uint64_t fs_rng_next(fs_rng_t *r)
{
    r->state += 0x9e3779b97f4a7c15ULL;
    return fs_mix64(r->state);
}

/* Uniform integer in [0, n) without modulo bias worth measuring (Lemire's
 * multiply-shift; the bias is < n / 2^64). */
static inline uint64_t fs_rng_below(fs_rng_t *r, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)fs_rng_next(r) * n) >> 64);
}

/* Uniform double in [0, 1). */
static inline double fs_rng_unit(fs_rng_t *r)
{
    return (double)(fs_rng_next(r) >> 11) * 0x1p-53;
}

#endif
