/* bench_util.h — timing and the same-run comparison helpers the benchmark
 * programs share. */
#ifndef FS_BENCH_UTIL_H
#define FS_BENCH_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A sampling request with its struct_size set, as callers of the client
 * library write one (featstore/types.h). */
#define SAMPLE_REQ(...) ((fs_sample_req_t){.struct_size = sizeof(fs_sample_req_t), __VA_ARGS__})

static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-quantile of v[0..n) by nearest rank (q = 0.5: the median for odd n;
 * 1: the maximum); sorts v. 0 when n is 0. */
static inline double bench_percentile(double *v, int n, double q)
{
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    int k = (int)(q * n + 0.999999) - 1;
    return v[k < 0 ? 0 : k >= n ? n - 1 : k];
}

/* "--name value" lookup with a default. */
static inline long long bench_arg(int argc, char **argv, const char *name, long long def)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0) return atoll(argv[i + 1]);
    return def;
}

/* Whether the flag "--name" (no value) is given. */
static inline int bench_flag(int argc, char **argv, const char *name)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], name) == 0) return 1;
    return 0;
}

/* "15,10,5" into out[0..max): how many numbers were read. */
static inline int bench_int_list(const char *s, int *out, int max)
{
    int n = 0;
    for (const char *p = s; *p && n < max; n++) {
        out[n] = atoi(p);
        while (*p && *p != ',') p++;
        if (*p == ',') p++;
    }
    return n;
}

static inline const char *bench_str(int argc, char **argv, const char *name, const char *def)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0) return argv[i + 1];
    return def;
}

#endif
