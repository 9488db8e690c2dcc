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

/* "--name value" lookup with a default. */
static inline long long bench_arg(int argc, char **argv, const char *name, long long def)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0) return atoll(argv[i + 1]);
    return def;
}

static inline const char *bench_str(int argc, char **argv, const char *name, const char *def)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0) return argv[i + 1];
    return def;
}

#endif
