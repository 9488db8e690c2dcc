/* bench_gpu.c — the data plane on one GPU, against the hardware's own copy
 * bandwidth and the CPU engine, measured in the same run (issue 15 §6):
 *   - gather from a device tier vs cudaMemcpy device to device of the same
 *     bytes: RESULT bench=gpu_gather source=device ... ratio_vs_d2d_copy=;
 *   - gather from host memory read in place over UVA (an ordinary mapping
 *     registered with fs_cuda_host_register, as the server registers the
 *     dataset; a pinned copy where the driver refuses) vs cudaMemcpy host
 *     to device from pinned memory: source=host ... ratio_vs_h2d_copy=;
 *   - sampling [15,10,5] x 1024 seeds on R-MAT scale 22 vs the CPU engine
 *     on all the machine's cores (one sampler per thread):
 *     RESULT bench=gpu_sample ... ratio_vs_cpu_engine=, with the GPU's
 *     edges checked against the CPU's, batch by batch.
 * Every gather's output is checked against the table. Without a usable GPU
 * it prints one RESULT line saying why and exits 0.
 *
 *   bench_gpu [--rows 8388608] [--dim 128] [--ids 2097152] [--scale 22] [--batches 50] */
#include <pthread.h>
#include <sys/mman.h>

#include "bench_common.h"
#include "bench_util.h"
#include "dataset.h"
#include "fs_device.h"
#include "fs_gather.h"
#include "fs_parallel.h"
#include "fs_rng.h"
#include "fs_sample.h"

#define CHECK(call)                                                         \
    do {                                                                    \
        if ((call) != FS_OK) {                                              \
            fprintf(stderr, "bench_gpu: %s: %s\n", #call, err.msg);         \
            return 1;                                                       \
        }                                                                   \
    } while (0)

static double best_of(int reps, fs_status_t (*fn)(void *), void *ctx)
{
    double best = 1e30;
    for (int i = 0; i < reps; i++) {
        double t0 = bench_now();
        if (fn(ctx) != FS_OK) return -1;
        double t = bench_now() - t0;
        if (t < best) best = t;
    }
    return best;
}

typedef struct {
    fs_table_view_t v;
    const int64_t *ids;
    int64_t n;
    void *out;
    const void *src;
    size_t bytes;
    fs_error_t *err;
} job_t;

static fs_status_t do_gather(void *p)
{
    job_t *j = p;
    return fs_gather_cuda(0, &j->v, j->ids, j->n, FS_DTYPE_F32, j->out, NULL, j->err);
}

static fs_status_t do_copy(void *p)
{
    job_t *j = p;
    return fs_cuda_copy(j->out, j->src, j->bytes, j->err);
}

/* The gather's output against the table: row i of the output is row ids[i]. */
static int gather_is_right(const float *out_dev, const float *host, const int64_t *ids, long long n, long long dim)
{
    size_t obytes = (size_t)n * (size_t)dim * 4;
    float *got = malloc(obytes);
    fs_error_t err = {0};
    int ok = got && fs_cuda_copy(got, out_dev, obytes, &err) == FS_OK;
    for (long long i = 0; ok && i < n; i++)
        ok = memcmp(got + (size_t)i * (size_t)dim, host + (size_t)ids[i] * (size_t)dim, (size_t)dim * 4) == 0;
    free(got);
    return ok;
}

static int gather_bench(long long rows, long long dim, long long n)
{
    fs_error_t err = {0};
    size_t tbytes = (size_t)rows * (size_t)dim * 4, obytes = (size_t)n * (size_t)dim * 4, row_bytes = (size_t)dim * 4;
    /* the host table as the server has the dataset: an ordinary read-only mapping */
    float *host = mmap(NULL, tbytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int64_t *ids = malloc((size_t)n * 8);
    if (host == MAP_FAILED || !ids) return fprintf(stderr, "bench_gpu: out of memory\n"), 1;
    fs_rng_t r = fs_rng_make(1, 1);
    for (size_t i = 0; i < (size_t)rows * (size_t)dim; i++) host[i] = (float)(fs_rng_next(&r) >> 40);
    mprotect(host, tbytes, PROT_READ);
    for (long long i = 0; i < n; i++) ids[i] = (int64_t)fs_rng_below(&r, (uint64_t)rows);
    void *dev_table, *dev_ids, *dev_out, *pinned_src;
    CHECK(fs_cuda_alloc_device(0, tbytes, &dev_table, &err));
    CHECK(fs_cuda_alloc_device(0, (size_t)n * 8, &dev_ids, &err));
    CHECK(fs_cuda_alloc_device(0, obytes, &dev_out, &err));
    CHECK(fs_cuda_alloc_pinned(obytes, &pinned_src, &err)); /* the H2D baseline's source */
    CHECK(fs_cuda_copy(dev_table, host, tbytes, &err));
    CHECK(fs_cuda_copy(dev_ids, ids, (size_t)n * 8, &err));
    memset(pinned_src, 1, obytes);
    /* host rows in place over UVA, or a pinned copy where the driver refuses */
    const void *host_dev = NULL;
    void *pinned_copy = NULL;
    const char *host_how = "registered";
    fs_error_t why = {0};
    if (fs_cuda_host_register(host, tbytes, &host_dev, &why) != FS_OK) {
        fprintf(stderr, "bench_gpu: %s; reading a pinned copy instead\n", why.msg);
        CHECK(fs_cuda_alloc_pinned(tbytes, &pinned_copy, &err));
        memcpy(pinned_copy, host, tbytes);
        host_dev = pinned_copy;
        host_how = "pinned_copy";
    }
    job_t j = {.v = {.dtype = FS_DTYPE_F32, .num_rows = rows, .dim = dim, .row_bytes = row_bytes, .num_tiers = 1},
               .ids = dev_ids, .n = n, .out = dev_out, .bytes = obytes, .err = &err};
    const char *names[2] = {"device", "host"}, *base[2] = {"d2d_copy", "h2d_copy"};
    for (int src = 0; src < 2; src++) {
        j.v.tier[0] = (fs_tier_ref_t){src ? FS_TIER_PINNED : FS_TIER_DEVICE, src ? -1 : 0, src ? host_dev : dev_table, rows};
        j.src = src ? pinned_src : dev_table; /* the copy baseline: the same number of bytes */
        double tg = best_of(5, do_gather, &j), tc = best_of(5, do_copy, &j);
        if (tg < 0 || tc < 0) {
            fprintf(stderr, "bench_gpu: %s\n", err.msg);
            return 1;
        }
        int right = gather_is_right(dev_out, host, ids, n, dim);
        printf("RESULT bench=gpu_gather source=%s row_bytes=%zu rows=%lld ids=%lld%s%s gbps=%.1f %s_gbps=%.1f "
               "ratio_vs_%s=%.2f correct=%d\n",
               names[src], row_bytes, rows, n, src ? " host_memory=" : "", src ? host_how : "", (double)obytes / tg / 1e9,
               base[src], (double)obytes / tc / 1e9, base[src], tc / tg, right);
        fflush(stdout);
        if (!right) return fprintf(stderr, "bench_gpu: WRONG gather result from the %s tier\n", names[src]), 1;
    }
    if (pinned_copy) fs_cuda_free_pinned(pinned_copy);
    else fs_cuda_host_unregister(host);
    fs_cuda_free_device(dev_table), fs_cuda_free_device(dev_ids), fs_cuda_free_device(dev_out);
    fs_cuda_free_pinned(pinned_src);
    munmap(host, tbytes);
    free(ids);
    return 0;
}

/* The CPU engine on every core: thread t samples batches t, t+T, ... with a
 * sampler of its own, and keeps each batch's edge count for the check. */
typedef struct {
    const fs_csr_view_t *g;
    const int64_t *seeds;
    int batches, t, threads;
    int64_t *edges;    /* [batches] */
    fs_status_t st;
} cpu_job_t;

static void *cpu_sampler_main(void *p)
{
    cpu_job_t *j = p;
    fs_error_t err = {0};
    fs_sampler_t *s;
    if ((j->st = fs_sampler_create(&s, &err)) != FS_OK) return NULL;
    fs_sample_req_t req = {.num_hops = 3, .fanout = {15, 10, 5}};
    for (int b = j->t; b < j->batches && j->st == FS_OK; b += j->threads) {
        fs_sample_result_t res;
        req.seed = (uint64_t)b + 1;
        if ((j->st = fs_sample_cpu(s, j->g, j->seeds + 1024 * b, 1024, &req, &res, NULL, &err)) != FS_OK) break;
        j->edges[b] = res.block[0].num_edges + res.block[1].num_edges + res.block[2].num_edges;
    }
    fs_sampler_destroy(s);
    return NULL;
}

static double cpu_engine(const fs_csr_view_t *g, const int64_t *seeds, int batches, int threads, int64_t *edges)
{
    pthread_t tid[256];
    cpu_job_t job[256];
    double t0 = bench_now();
    for (int t = 0; t < threads; t++) {
        job[t] = (cpu_job_t){.g = g, .seeds = seeds, .batches = batches, .t = t, .threads = threads, .edges = edges};
        pthread_create(&tid[t], NULL, cpu_sampler_main, &job[t]);
    }
    for (int t = 0; t < threads; t++) pthread_join(tid[t], NULL);
    double secs = bench_now() - t0;
    for (int t = 0; t < threads; t++)
        if (job[t].st != FS_OK) return -1;
    return secs;
}

static int sample_bench(int argc, char **argv, int scale, int batches)
{
    fs_error_t err = {0};
    fs_dataset_t *ds;
    CHECK(fs_dataset_open(bench_dataset(argc, argv, scale), 0, 0, &ds, &err));
    fs_csr_view_t host, dev;
    fs_csr_view_init(&host, ds->num_nodes, ds->indptr, ds->indices, ds->index_dtype, NULL);
    dev = host;
    size_t ib = (size_t)(ds->num_nodes + 1) * 8, xb = (size_t)ds->num_edges * fs_dtype_size(ds->index_dtype);
    void *ip, *ix;
    CHECK(fs_cuda_alloc_device(0, ib, &ip, &err));
    CHECK(fs_cuda_alloc_device(0, xb, &ix, &err));
    CHECK(fs_cuda_copy(ip, ds->indptr, ib, &err));
    CHECK(fs_cuda_copy(ix, ds->indices, xb, &err));
    dev.part[0].indptr = ip, dev.part[0].indices = ix;
    int64_t *seeds = malloc(sizeof *seeds * 1024 * (size_t)batches);
    int64_t *gpu_edges = calloc((size_t)batches, sizeof *gpu_edges), *cpu_edges = calloc((size_t)batches, sizeof *cpu_edges);
    fs_rng_t r = fs_rng_make(2024, 0);
    for (int64_t i = 0; i < 1024LL * batches;) {
        int64_t v = (int64_t)fs_rng_below(&r, (uint64_t)ds->num_nodes);
        if (ds->indptr[v + 1] > ds->indptr[v]) seeds[i++] = v;
    }
    fs_sample_req_t req = {.num_hops = 3, .fanout = {15, 10, 5}};
    fs_sampler_t *s;
    CHECK(fs_sampler_create(&s, &err));
    fs_sample_result_t res;
    req.seed = 1;
    CHECK(fs_sample_cuda(s, 0, &dev, seeds, 1024, &req, &res, &err)); /* warm-up: the kernels load */
    double t0 = bench_now();
    for (int b = 0; b < batches; b++) {
        req.seed = (uint64_t)b + 1;
        CHECK(fs_sample_cuda(s, 0, &dev, seeds + 1024 * b, 1024, &req, &res, &err));
        gpu_edges[b] = res.block[0].num_edges + res.block[1].num_edges + res.block[2].num_edges;
    }
    double t_gpu = bench_now() - t0;
    int threads = fs_cpu_count() < 256 ? fs_cpu_count() : 256;
    double t_cpu = cpu_engine(&host, seeds, batches, threads, cpu_edges);
    if (t_cpu < 0) return fprintf(stderr, "bench_gpu: the CPU engine failed\n"), 1;
    int64_t total = 0;
    int same = 1;
    for (int b = 0; b < batches; b++) total += gpu_edges[b], same &= gpu_edges[b] == cpu_edges[b];
    printf("RESULT bench=gpu_sample scale=%d fanouts=15,10,5 batch=1024 batches=%d medges_per_s=%.2f cpu_threads=%d "
           "cpu_medges_per_s=%.2f ratio_vs_cpu_engine=%.2f same_edges=%d\n",
           scale, batches, total / t_gpu / 1e6, threads, total / t_cpu / 1e6, t_cpu / t_gpu, same);
    fs_cuda_free_device(ip), fs_cuda_free_device(ix);
    fs_sampler_destroy(s);
    fs_dataset_close(ds);
    free(seeds), free(gpu_edges), free(cpu_edges);
    return same ? 0 : (fprintf(stderr, "bench_gpu: the GPU's samples differ from the CPU engine's\n"), 1);
}

int main(int argc, char **argv)
{
    fs_devices_t d;
    fs_error_t err = {0};
    if (fs_devices_query(&d, &err) != FS_OK) {
        printf("RESULT bench=gpu status=skipped reason=no_device detail=\"%s\"\n", err.msg);
        return 0;
    }
    fprintf(stderr, "bench_gpu: %s, %.1f GiB\n", d.dev[0].name, (double)d.dev[0].total_bytes / (1 << 30));
    long long rows = bench_arg(argc, argv, "--rows", 8LL << 20), dim = bench_arg(argc, argv, "--dim", 128);
    long long n = bench_arg(argc, argv, "--ids", 2LL << 20);
    if (gather_bench(rows, dim, n)) return 1;
    return sample_bench(argc, argv, (int)bench_arg(argc, argv, "--scale", 22), (int)bench_arg(argc, argv, "--batches", 50));
}
