/* bench_gather.c — random-row feature gather: featstore's engine against
 * torch.index_select (the peer: what PyG and DGL call on CPU) and against a
 * plain prefetching memcpy-per-row loop (the practical hardware limit), all
 * in the same run on the same shapes.
 *
 *   bench_gather [--rows 8388608] [--dim 128] [--ids 2097152] [--reps 7]
 *                [--max-threads 2] [--no-torch 1]
 *
 * Prints `RESULT bench=gather threads=T gbps=... ratio_vs_torch_index_select=...
 * ratio_vs_torch_index_select_out=... ratio_vs_memcpy_loop=...` for T = 1 ..
 * max-threads. featstore gathers into a caller-provided, already-mapped
 * buffer (the server's pre-faulted shared slots). ratio_vs_torch_index_select
 * compares with torch's call as PyG/DGL make it (a new output tensor per
 * mini-batch); ..._out with torch writing into a pre-faulted out= tensor.
 * GB/s are each side's best rep; ratio_vs_memcpy_loop is the median of the
 * reps' own ratios (the two run back to back, in turns first), which a
 * host's noise moves far less than a ratio of two bests: on the 2-core CI
 * machine kind, 256-byte rows gave 0.89-1.04 that way from run to run. */
#include <sys/mman.h>

#include "bench_util.h"
#include "fs_gather.h"
#include "fs_parallel.h"
#include "fs_rng.h"

typedef struct {
    const float *table;
    const int64_t *ids;
    float *out;
    int64_t dim;
} loop_t;

/* The baseline: what a careful C programmer writes first. */
static void memcpy_loop(void *p, int64_t b, int64_t e, int w)
{
    (void)w;
    const loop_t *l = p;
    size_t rb = (size_t)l->dim * sizeof(float);
    for (int64_t i = b; i < e; i++) {
        if (i + 8 < e) __builtin_prefetch(l->table + l->ids[i + 8] * l->dim, 0, 0);
        memcpy(l->out + i * l->dim, l->table + l->ids[i] * l->dim, rb);
    }
}

static void fill_table(void *p, int64_t b, int64_t e, int w)
{
    (void)w;
    loop_t *l = p;
    for (int64_t v = b; v < e; v++)
        for (int64_t j = 0; j < l->dim; j++) ((float *)l->table)[v * l->dim + j] = (float)v;
}

/* Runs torch_gather.py; fills GB/s of the allocating call and of out=. */
static void run_torch(long long rows, long long dim, long long n, int threads, int reps, double *gbps, double *gbps_out)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 %s/torch_gather.py --rows %lld --dim %lld --ids %lld --threads %d --reps %d 2>&1",
             FS_BENCH_DIR, rows, dim, n, threads, reps);
    FILE *p = popen(cmd, "r");
    char line[512];
    *gbps = *gbps_out = 0;
    while (p && fgets(line, sizeof line, p)) {
        char *g = strstr(line, "torch gbps="), *o = strstr(line, "gbps_out=");
        if (g && o) *gbps = atof(g + 11), *gbps_out = atof(o + 9);
        else fprintf(stderr, "torch: %s", line);
    }
    if (p) pclose(p);
}

static void ratio(char *buf, size_t n, double ours, double base)
{
    if (base > 0) snprintf(buf, n, "%.2f", ours / base);
    else snprintf(buf, n, "n/a");
}

int main(int argc, char **argv)
{
    long long rows = bench_arg(argc, argv, "--rows", 8LL << 20), dim = bench_arg(argc, argv, "--dim", 128);
    long long n = bench_arg(argc, argv, "--ids", 2LL << 20);
    int reps = (int)bench_arg(argc, argv, "--reps", 7), max_threads = (int)bench_arg(argc, argv, "--max-threads", 2);
    int no_torch = (int)bench_arg(argc, argv, "--no-torch", 0);
    if (reps < 1 || reps > 64) reps = 7;
    size_t tbytes = (size_t)rows * (size_t)dim * 4, obytes = (size_t)n * (size_t)dim * 4;
    float *table = mmap(NULL, tbytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    float *out = malloc(obytes), *check = malloc((size_t)dim * 4);
    int64_t *ids = malloc((size_t)n * sizeof *ids);
    if (table == MAP_FAILED || !out || !ids || !check) {
        fprintf(stderr, "bench_gather: out of memory\n");
        return 1;
    }
    loop_t l = {.table = table, .ids = ids, .out = out, .dim = dim};
    fs_parallel_for(0, rows, fill_table, &l);
    memset(out, 0, obytes);
    fs_rng_t r = fs_rng_make(1, 1);
    for (long long i = 0; i < n; i++) ids[i] = (int64_t)fs_rng_below(&r, (uint64_t)rows);
    fprintf(stderr, "gather: table %lld x %lld float32 (%.2f GB), %lld random ids, best of %d\n", rows, dim,
            (double)tbytes / 1e9, n, reps);

    fs_table_view_t v = {.dtype = FS_DTYPE_F32, .num_rows = rows, .dim = dim, .row_bytes = (size_t)dim * 4,
                         .num_tiers = 1};
    v.tier[0] = (fs_tier_ref_t){.kind = FS_TIER_HOST, .device = -1, .base = table, .rows = rows};
    for (int t = 1; t <= max_threads; t++) {
        fs_pool_t *pool;
        fs_error_t err = {0};
        fs_pool_create(t, &pool, &err);
        double ours = 1e30, loop = 1e30, pair[64];
        for (int k = 0; k < reps; k++) {
            double t_ours = 0, t_loop = 0;
            for (int side = 0; side < 2; side++) { /* the order alternates, so neither always goes first */
                double t0 = bench_now();
                if ((side + k) % 2 == 0) {
                    if (fs_gather_cpu(&v, ids, n, FS_DTYPE_F32, out, pool, NULL, &err) != FS_OK) {
                        fprintf(stderr, "gather failed: %s\n", err.msg);
                        return 1;
                    }
                    t_ours = bench_now() - t0;
                } else {
                    fs_parallel_for(t, n, memcpy_loop, &l);
                    t_loop = bench_now() - t0;
                }
            }
            if (t_ours < ours) ours = t_ours;
            if (t_loop < loop) loop = t_loop;
            pair[k] = t_loop / t_ours;
        }
        fs_pool_destroy(pool);
        if (out[(n - 1) * dim] != (float)ids[n - 1]) {
            fprintf(stderr, "gather: wrong result\n");
            return 1;
        }
        double gbps = (double)obytes / ours / 1e9, loop_gbps = (double)obytes / loop / 1e9;
        double torch = 0, torch_out = 0;
        if (!no_torch) run_torch(rows, dim, n, t, reps, &torch, &torch_out);
        char r1[32], r2[32];
        ratio(r1, sizeof r1, gbps, torch);
        ratio(r2, sizeof r2, gbps, torch_out);
        printf("RESULT bench=gather threads=%d rows=%lld dim=%lld ids=%lld gbps=%.2f torch_gbps=%.2f "
               "torch_out_gbps=%.2f memcpy_loop_gbps=%.2f ratio_vs_torch_index_select=%s "
               "ratio_vs_torch_index_select_out=%s ratio_vs_memcpy_loop=%.2f\n",
               t, rows, dim, n, gbps, torch, torch_out, loop_gbps, r1, r2, bench_percentile(pair, reps, 0.5));
        fflush(stdout);
    }
    return 0;
}
