/* fs_rng.h — counter-based random numbers. Every draw is a pure function of
 * (seed, stream, counter), so work split over any number of threads produces
 * the same values, and a request carrying a seed is reproducible. The mixer
 * is SplitMix64 (Steele et al., 2014), which passes BigCrush. */
#ifndef FS_RNG_H
#define FS_RNG_H

#include <stdint.h>

/* Callable from host and CUDA device code alike. */
#ifdef __CUDACC__
#define FS_HD __host__ __device__ __forceinline__
#else
#define FS_HD static inline
#endif

FS_HD uint64_t fs_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The i-th value of stream `stream` under `seed`. */
FS_HD uint64_t fs_rng_at(uint64_t seed, uint64_t stream, uint64_t i)
{
    return fs_mix64(fs_mix64(seed ^ fs_mix64(stream + 0x9e3779b97f4a7c15ULL)) + i * 0x9e3779b97f4a7c15ULL);
}

/* A sequential generator for loops that draw many values. */
typedef struct { uint64_t state; } fs_rng_t;

FS_HD fs_rng_t fs_rng_make(uint64_t seed, uint64_t stream)
{
    fs_rng_t r;
    r.state = fs_mix64(seed ^ fs_mix64(stream + 0x9e3779b97f4a7c15ULL));
    return r;
}

FS_HD uint64_t fs_rng_next(fs_rng_t *r)
{
    r->state += 0x9e3779b97f4a7c15ULL;
    return fs_mix64(r->state);
}

/* Uniform integer in [0, n) without modulo bias worth measuring (Lemire's
 * multiply-shift; the bias is < n / 2^64). */
FS_HD uint64_t fs_rng_below(fs_rng_t *r, uint64_t n)
{
#ifdef __CUDA_ARCH__
    return __umul64hi(fs_rng_next(r), n);
#else
    return (uint64_t)(((unsigned __int128)fs_rng_next(r) * n) >> 64);
#endif
}

/* Uniform double in [0, 1). */
FS_HD double fs_rng_unit(fs_rng_t *r)
{
    return (double)(fs_rng_next(r) >> 11) * 0x1p-53;
}

#endif
