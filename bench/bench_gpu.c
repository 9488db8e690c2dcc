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
 *   - serving: a trainer process on gpu:0 running sample_gather through
 *     `featstore serve --topology detect` (device tiers opened by CUDA IPC,
 *     the CUDA engines, a device result slot) against this process running
 *     the same kernels on its own copy in GPU memory, the same requests:
 *     RESULT bench=gpu_serve ... ratio_vs_inprocess= (median of --rounds
 *     interleaved rounds; both sides' sampled nodes are compared).
 * Every gather's output is checked against the table. Without a usable GPU
 * it prints one RESULT line saying why and exits 0.
 *
 *   bench_gpu [--rows 8388608] [--dim 128] [--ids 2097152] [--scale 22] [--batches 50]
 *             [--serve-scale 20] [--serve-batches 50] [--rounds 3] */
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"
#include "bench_util.h"
#include "dataset.h"
#include "featstore/client.h"
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
        double tg = best_of(5, do_gather, &j);
        int right = tg >= 0 && gather_is_right(dev_out, host, ids, n, dim); /* before the copy overwrites dev_out */
        double tc = tg < 0 ? -1 : best_of(5, do_copy, &j);
        if (tg < 0 || tc < 0) {
            fprintf(stderr, "bench_gpu: %s\n", err.msg);
            return 1;
        }
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
    printf("RESULT bench=gpu_sample scale=%d nodes=%lld fanouts=15,10,5 batch=1024 batches=%d medges_per_s=%.2f "
           "cpu_threads=%d cpu_medges_per_s=%.2f ratio_vs_cpu_engine=%.2f same_edges=%d\n",
           scale, (long long)ds->num_nodes, batches, total / t_gpu / 1e6, threads, total / t_cpu / 1e6, t_cpu / t_gpu, same);
    fs_cuda_free_device(ip), fs_cuda_free_device(ix);
    fs_sampler_destroy(s);
    fs_dataset_close(ds);
    free(seeds), free(gpu_edges), free(cpu_edges);
    return same ? 0 : (fprintf(stderr, "bench_gpu: the GPU's samples differ from the CPU engine's\n"), 1);
}

/* ---- serving: a trainer process through the server vs in-process ------ */

#define SERVE_WARMUP 5
#define SERVE_SEEDS 1024

/* Batch b's seeds, the same on both sides. */
static void serve_seeds(int64_t *seeds, int64_t num_nodes, int b)
{
    fs_rng_t r = fs_rng_make(4242, (uint64_t)b);
    for (int i = 0; i < SERVE_SEEDS; i++) seeds[i] = (int64_t)fs_rng_below(&r, (uint64_t)num_nodes);
}

static fs_sample_req_t serve_req(int b)
{
    return SAMPLE_REQ(.num_hops = 3, .fanout = {15, 10, 5}, .seed = (uint64_t)b + 1);
}

/* The trainer process (bench_gpu --gpu-serve-trainer URI NODES BATCHES):
 * warm up, then time BATCHES sample_gathers; prints "RATE r NODES n". */
static int serve_trainer(const char *uri, int64_t num_nodes, int batches)
{
    fs_connect_opts_t o = FS_CONNECT_OPTS_INIT;
    o.device = "gpu:0";
    fs_client_t *c;
    if (fs_connect(uri, &o, &c) != FS_OK) return fprintf(stderr, "trainer: %s\n", fs_client_errstr(c)), 1;
    int64_t seeds[SERVE_SEEDS], nodes = 0;
    double t0 = 0;
    for (int b = 0; b < SERVE_WARMUP + batches; b++) {
        if (b == SERVE_WARMUP) t0 = bench_now();
        serve_seeds(seeds, num_nodes, b);
        fs_sample_req_t req = serve_req(b);
        fs_batch_t *mb;
        if (fs_sample_gather(c, seeds, SERVE_SEEDS, &req, "feat", FS_DTYPE_F32, &mb) != FS_OK)
            return fprintf(stderr, "trainer: %s\n", fs_client_errstr(c)), 1;
        if (mb->features_memory != FS_MEM_DEVICE)
            return fprintf(stderr, "trainer: the batch's rows are not in GPU memory: is the plan on the GPU?\n"), 1;
        if (b >= SERVE_WARMUP) nodes += mb->num_nodes;
        fs_batch_free(mb);
    }
    printf("RATE %.4f NODES %lld\n", batches / (bench_now() - t0), (long long)nodes);
    fs_close(c);
    return 0;
}

/* The same kernels in this process: the whole graph and table in GPU
 * memory (where the server's plan puts them on one GPU), the sampler's
 * nodes copied up as the trainer's slot does, the gather into device memory. */
typedef struct {
    fs_csr_view_t g;
    fs_table_view_t v;
    fs_sampler_t *s;
    char *dev;          /* ids, then rows */
    size_t dev_cap;
    int64_t num_nodes;
} inproc_gpu_t;

static int inproc_batches(inproc_gpu_t *p, int batches, double *rate, int64_t *nodes, fs_error_t *err)
{
    int64_t seeds[SERVE_SEEDS];
    double t0 = 0;
    *nodes = 0;
    for (int b = 0; b < SERVE_WARMUP + batches; b++) {
        if (b == SERVE_WARMUP) t0 = bench_now();
        serve_seeds(seeds, p->num_nodes, b);
        fs_sample_req_t req = serve_req(b);
        fs_sample_result_t res;
        if (fs_sample_cuda(p->s, 0, &p->g, seeds, SERVE_SEEDS, &req, &res, err) != FS_OK) return 1;
        size_t ids_bytes = ((size_t)res.num_nodes * 8 + 63) & ~(size_t)63, need = ids_bytes + (size_t)res.num_nodes * p->v.row_bytes;
        if (need > p->dev_cap) { /* grows like a result slot: rarely, kept */
            fs_cuda_free_device(p->dev);
            p->dev_cap = need * 2;
            if (fs_cuda_alloc_device(0, p->dev_cap, (void **)&p->dev, err) != FS_OK) return 1;
        }
        if (fs_cuda_copy(p->dev, res.nodes, (size_t)res.num_nodes * 8, err) != FS_OK ||
            fs_gather_cuda(0, &p->v, (const int64_t *)p->dev, res.num_nodes, FS_DTYPE_F32, p->dev + ids_bytes, NULL,
                           err) != FS_OK)
            return 1;
        if (b >= SERVE_WARMUP) *nodes += res.num_nodes;
    }
    *rate = batches / (bench_now() - t0);
    return 0;
}

static void *upload(const void *host, size_t bytes, fs_error_t *err)
{
    void *p = NULL;
    if (fs_cuda_alloc_device(0, bytes, &p, err) != FS_OK) return NULL;
    if (fs_cuda_copy(p, host, bytes, err) != FS_OK) return fs_cuda_free_device(p), NULL;
    return p;
}

static int serve_bench(int argc, char **argv)
{
    int scale = (int)bench_arg(argc, argv, "--serve-scale", 20), batches = (int)bench_arg(argc, argv, "--serve-batches", 50);
    int rounds = (int)bench_arg(argc, argv, "--rounds", 3), dim = (int)bench_arg(argc, argv, "--dim", 128);
    if (rounds < 1 || rounds > 16) rounds = 3;
    char data[256], sock[128], cmd[1024], line[512];
    snprintf(data, sizeof data, "%s", bench_dataset_dim(argc, argv, scale, dim));
    snprintf(sock, sizeof sock, "/tmp/featstore-bench-gpu-%d.sock", (int)getpid());
    fs_error_t err = {0};
    fs_dataset_t *ds;
    CHECK(fs_dataset_open(data, 0, 1, &ds, &err));
    const fs_table_t *t = fs_dataset_table(ds, "feat");
    if (!t) return fprintf(stderr, "bench_gpu: %s has no table 'feat'\n", data), 1;
    inproc_gpu_t p = {.num_nodes = ds->num_nodes};
    size_t isz = fs_dtype_size(ds->index_dtype);
    fs_csr_view_init(&p.g, ds->num_nodes, upload(ds->indptr, (size_t)(ds->num_nodes + 1) * 8, &err),
                     upload(ds->indices, (size_t)ds->num_edges * isz, &err), ds->index_dtype, NULL);
    p.v = (fs_table_view_t){.dtype = t->dtype, .num_rows = t->rows, .dim = t->dim, .row_bytes = t->row_bytes, .num_tiers = 1};
    p.v.tier[0] = (fs_tier_ref_t){FS_TIER_DEVICE, 0, upload(t->data, (size_t)t->rows * t->row_bytes, &err), t->rows};
    if (!p.g.part[0].indptr || !p.g.part[0].indices || !p.v.tier[0].base)
        return fprintf(stderr, "bench_gpu: %s\n", err.msg), 1;
    CHECK(fs_sampler_create(&p.s, &err));

    /* everything on the one GPU: --topology detect with the GPU's own memory as the budget */
    bench_child_t server;
    snprintf(cmd, sizeof cmd, "exec %s serve %s --socket %s --metrics 127.0.0.1:0 --topology detect", FS_BIN,
             data, sock);
    bench_spawn(&server, cmd);
    if (bench_wait_line(&server, "READY", line, sizeof line))
        return fprintf(stderr, "bench_gpu: the server did not start (see its log above)\n"), 1;
    double ratio[16], served_sum = 0, inproc_sum = 0;
    int same = 1, failed = 0;
    for (int r = 0; r < rounds && !failed; r++) {
        double served = 0, inproc = 0;
        int64_t served_nodes = -1, inproc_nodes = 0;
        for (int k = 0; k < 2 && !failed; k++) {
            if ((k + r) % 2 == 0) { /* the trainer: a fresh process each round, as trainers start */
                bench_child_t tr;
                snprintf(cmd, sizeof cmd, "exec /proc/%d/exe --gpu-serve-trainer unix://%s %lld %d", (int)getpid(),
                         sock, (long long)ds->num_nodes, batches);
                bench_spawn(&tr, cmd);
                long long n = -1;
                failed = bench_wait_line(&tr, "RATE", line, sizeof line) || sscanf(line, "RATE %lf NODES %lld", &served, &n) != 2;
                served_nodes = n;
                close(tr.in);
                int st;
                waitpid(tr.pid, &st, 0);
                fclose(tr.out);
                failed |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
            } else {
                failed = inproc_batches(&p, batches, &inproc, &inproc_nodes, &err);
                if (failed) fprintf(stderr, "bench_gpu: in-process: %s\n", err.msg);
            }
        }
        if (failed) break;
        same &= served_nodes == inproc_nodes;
        ratio[r] = served / inproc, served_sum += served, inproc_sum += inproc;
        fprintf(stderr, "  gpu_serve round %d: trainer via the server %.2f, in-process %.2f batches/s: ratio %.3f\n", r,
                served, inproc, ratio[r]);
    }
    kill(server.pid, SIGTERM);
    waitpid(server.pid, NULL, 0);
    fclose(server.out);
    close(server.in);
    if (failed) return fprintf(stderr, "bench_gpu: the gpu_serve trainer failed\n"), 1;
    printf("RESULT bench=gpu_serve scale=%d nodes=%lld dim=%lld fanouts=15,10,5 batch=%d batches=%d rounds=%d "
           "batches_per_s=%.2f inprocess_batches_per_s=%.2f ratio_vs_inprocess=%.3f same_nodes=%d\n",
           scale, (long long)ds->num_nodes, (long long)t->dim, SERVE_SEEDS, batches, rounds, served_sum / rounds, inproc_sum / rounds,
           bench_percentile(ratio, rounds, 0.5), same);
    fs_cuda_free_device((void *)p.g.part[0].indptr), fs_cuda_free_device((void *)p.g.part[0].indices);
    fs_cuda_free_device((void *)p.v.tier[0].base), fs_cuda_free_device(p.dev);
    fs_sampler_destroy(p.s);
    fs_dataset_close(ds);
    return same ? 0 : (fprintf(stderr, "bench_gpu: the trainer's samples differ from the in-process ones\n"), 1);
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "--gpu-serve-trainer") == 0)
        return serve_trainer(argv[2], atoll(argv[3]), atoi(argv[4]));
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
    if (sample_bench(argc, argv, (int)bench_arg(argc, argv, "--scale", 22), (int)bench_arg(argc, argv, "--batches", 50)))
        return 1;
    return serve_bench(argc, argv);
}
