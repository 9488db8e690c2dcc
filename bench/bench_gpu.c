/* bench_gpu.c — the data plane on a GPU, against the hardware's own copy
 * bandwidth measured in the same run:
 *   - gather from device memory vs a device-to-device copy of the same bytes;
 *   - gather from mapped pinned host memory (zero-copy over PCIe) vs a
 *     host-to-device copy of the same bytes;
 *   - sampling [15,10,5] x 1024 seeds on R-MAT scale 24 vs the CPU engine
 *     on one core.
 * Without a usable GPU it prints one RESULT line saying why and exits 0.
 *
 *   bench_gpu [--rows 8388608] [--dim 128] [--ids 2097152] [--scale 24] [--batches 50] */
#include "bench_common.h"
#include "bench_util.h"
#include "dataset.h"
#include "fs_device.h"
#include "fs_gather.h"
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

static int gather_bench(long long rows, long long dim, long long n, fs_error_t *errp)
{
    fs_error_t err = {0};
    size_t tbytes = (size_t)rows * (size_t)dim * 4, obytes = (size_t)n * (size_t)dim * 4;
    float *host = malloc(tbytes);
    int64_t *ids = malloc((size_t)n * 8);
    for (size_t i = 0; i < (size_t)rows * (size_t)dim; i++) host[i] = (float)(i / (size_t)dim);
    fs_rng_t r = fs_rng_make(1, 1);
    for (long long i = 0; i < n; i++) ids[i] = (int64_t)fs_rng_below(&r, (uint64_t)rows);
    void *dev_table, *dev_ids, *dev_out, *pinned;
    CHECK(fs_cuda_alloc_device(0, tbytes, &dev_table, &err));
    CHECK(fs_cuda_alloc_device(0, (size_t)n * 8, &dev_ids, &err));
    CHECK(fs_cuda_alloc_device(0, obytes, &dev_out, &err));
    CHECK(fs_cuda_alloc_pinned(tbytes, &pinned, &err));
    CHECK(fs_cuda_copy(dev_table, host, tbytes, &err));
    CHECK(fs_cuda_copy(dev_ids, ids, (size_t)n * 8, &err));
    memcpy(pinned, host, tbytes);
    job_t j = {.v = {.dtype = FS_DTYPE_F32, .num_rows = rows, .dim = dim, .row_bytes = (size_t)dim * 4, .num_tiers = 1},
               .ids = dev_ids, .n = n, .out = dev_out, .bytes = obytes, .err = &err};
    const char *names[2] = {"device", "pinned_host"}, *base[2] = {"d2d_copy", "h2d_copy"};
    for (int src = 0; src < 2; src++) {
        j.v.tier[0] = (fs_tier_ref_t){src ? FS_TIER_PINNED : FS_TIER_DEVICE, src ? -1 : 0, src ? pinned : dev_table, rows};
        j.src = src ? pinned : dev_table;
        double tg = best_of(5, do_gather, &j), tc = best_of(5, do_copy, &j);
        if (tg < 0 || tc < 0) {
            fprintf(stderr, "bench_gpu: %s\n", err.msg);
            return 1;
        }
        printf("RESULT bench=gpu_gather source=%s rows=%lld dim=%lld ids=%lld gbps=%.1f %s_gbps=%.1f ratio_vs_%s=%.2f\n",
               names[src], rows, dim, n, (double)obytes / tg / 1e9, base[src], (double)obytes / tc / 1e9, base[src],
               tc / tg);
        fflush(stdout);
    }
    float check[1];
    CHECK(fs_cuda_copy(check, (float *)dev_out + (size_t)(n - 1) * (size_t)dim, 4, &err));
    if (check[0] != (float)ids[n - 1]) fprintf(stderr, "bench_gpu: WRONG gather result\n");
    fs_cuda_free_device(dev_table), fs_cuda_free_device(dev_ids), fs_cuda_free_device(dev_out);
    fs_cuda_free_pinned(pinned);
    free(host), free(ids);
    (void)errp;
    return 0;
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
    fs_rng_t r = fs_rng_make(2024, 0);
    for (int64_t i = 0; i < 1024LL * batches;) {
        int64_t v = (int64_t)fs_rng_below(&r, (uint64_t)ds->num_nodes);
        if (ds->indptr[v + 1] > ds->indptr[v]) seeds[i++] = v;
    }
    fs_sample_req_t req = {.num_hops = 3, .fanout = {15, 10, 5}};
    fs_sampler_t *s;
    fs_sampler_create(&s, &err);
    double t[2];
    int64_t edges[2] = {0, 0};
    for (int gpu = 1; gpu >= 0; gpu--) {
        double t0 = bench_now();
        for (int b = 0; b < batches; b++) {
            fs_sample_result_t res;
            req.seed = (uint64_t)b + 1;
            if (gpu) CHECK(fs_sample_cuda(s, 0, &dev, seeds + 1024 * b, 1024, &req, &res, &err));
            else CHECK(fs_sample_cpu(s, &host, seeds + 1024 * b, 1024, &req, &res, NULL, &err));
            for (int h = 0; h < 3; h++) edges[gpu] += res.block[h].num_edges;
        }
        t[gpu] = bench_now() - t0;
    }
    printf("RESULT bench=gpu_sample scale=%d fanouts=15,10,5 batches=%d medges_per_s=%.2f cpu_1thread_medges_per_s=%.2f "
           "ratio_vs_cpu_1thread=%.2f same_edges=%d\n",
           scale, batches, edges[1] / t[1] / 1e6, edges[0] / t[0] / 1e6, (edges[1] / t[1]) / (edges[0] / t[0]),
           edges[0] == edges[1]);
    fs_cuda_free_device(ip), fs_cuda_free_device(ix);
    fs_sampler_destroy(s);
    fs_dataset_close(ds);
    free(seeds);
    return 0;
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
    if (gather_bench(rows, dim, n, &err)) return 1;
    return sample_bench(argc, argv, (int)bench_arg(argc, argv, "--scale", 24), (int)bench_arg(argc, argv, "--batches", 50));
}
