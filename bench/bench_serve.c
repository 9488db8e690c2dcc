/* bench_serve.c — what serving costs local trainers, measured in one run.
 *
 * 1. Memory: `featstore serve --prefault` plus 8 featstore-trainer
 *    processes holding a batch each; the PSS of all nine against the
 *    dataset's size (PSS splits shared pages among their users, so a dataset
 *    mapped by nine processes counts once). Measured first, before this
 *    program maps anything itself.
 * 2. Throughput: N = 1, 2, 4 client processes running sample_gather
 *    ([15,10,5] x 1024 seeds, float32 features) over unix:// against N
 *    threads running the same engines in-process (the baseline), and N
 *    forked processes running them (which tells what being a separate
 *    process costs apart from featstore). Each side first runs --warmup
 *    batches (a new process faults in its mappings, result slot and
 *    buffers), waits for the others, and then is timed over --batches
 *    more: the steady state. --rounds rounds of the three, interleaved; the
 *    ratio is the median of the rounds' ratios, the latency percentiles are
 *    of every round's batches, and the warm-up's are printed apart.
 *
 *   bench_serve [--scale 20] [--dim 128] [--rounds 5] [--batches 40] [--warmup 5]
 *               [--clients 1,2,4] [--skip-memory 1] [--copy auto|memory|file]
 *
 * The served copy's page size decides much of phase 2 with several
 * clients per core (docs/serving.md "Huge pages"), so each RESULT names
 * what holds the copy (--copy: as `featstore serve --copy` chooses), the
 * host's shmem THP setting and the share of the copy in 2 MiB pages.
 *
 * RESULT bench=shared_memory clients=8 ... pss_ratio_vs_dataset=...
 * RESULT bench=serve clients=N batches_per_s=... ratio_vs_inprocess=... p50_ms=... p99_ms=... p99_over_p50=...
 *        warmup_batches=... warmup_p50_ms=... warmup_p99_ms=... warmup_max_ms=...
 *        inprocess_forked_batches_per_s=... ratio_vs_inprocess_forked=... copy=memory|file shmem_thp=...
 *        dataset_huge_pct=... inprocess_p99_over_p50=... forked_p99_over_p50=...
 *        cpu_ms_per_batch=... inprocess_cpu_ms_per_batch=... forked_cpu_ms_per_batch=...
 *        cpu_ratio_vs_inprocess=...
 *
 * The CPU time per timed batch (each process's, or each thread's, over its
 * timed batches) is what a trainer costs apart from how the host schedules
 * it: cpu_ratio_vs_inprocess = the threads' over featstore's, > 1 when
 * featstore costs less. It is far steadier than throughput on a busy host.
 *
 * With more trainers than cores the tail is mostly the scheduler's: for a
 * while one core runs three of four processes (its balancing runs seldom
 * on busy cores), and their batches take 3x their CPU time. The baselines'
 * own p99/p50 show how much of featstore's is that. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"
#include "bench_util.h"
#include "dataset.h"
#include "engine.h"
#include "featstore/client.h"
#include "fs_rng.h"
#include "fs_shm.h"
#include "local.h"
#include "serve.h"

#define FANOUTS {15, 10, 5}

/* ---- 1. memory ------------------------------------------------------------------ */

#define SEALED_COPY "/memfd:featstore-dataset:" /* how /proc/PID/smaps names the served copies */

static long pss_kb(pid_t pid, const char *only_prefix)
{
    char path[64], line[4096], name[4096] = "";
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, only_prefix ? "smaps" : "smaps_rollup");
    FILE *f = fopen(path, "r");
    long total = 0, kb;
    while (f && fgets(line, sizeof line, f)) {
        if (only_prefix && strchr(line, '-') && strchr(line, '-') < strchr(line, ' ')) { /* a mapping header */
            char *p = strchr(line, '/'); /* the path: a memfd's ends in " (deleted)" */
            snprintf(name, sizeof name, "%s", p ? p : "");
        }
        if (sscanf(line, "Pss: %ld kB", &kb) == 1 && (!only_prefix || strncmp(name, only_prefix, strlen(only_prefix)) == 0))
            total += kb;
    }
    if (f) fclose(f);
    return total;
}

static void memory_phase(const char *data, size_t dataset_bytes, const char *workload, const char *trainer_args)
{
    char sock[128], cmd[1024], line[512];
    snprintf(sock, sizeof sock, "/tmp/featstore-bench-%d.sock", (int)getpid());
    bench_child_t server, t[8];
    snprintf(cmd, sizeof cmd, "exec %s serve %s --socket %s --metrics 127.0.0.1:0 --prefault 2>/dev/null", FS_BIN, data, sock);
    bench_spawn(&server, cmd);
    if (bench_wait_line(&server, "READY", line, sizeof line)) {
        fprintf(stderr, "bench_serve: the server did not start\n");
        exit(1);
    }
    for (int i = 0; i < 8; i++) {
        snprintf(cmd, sizeof cmd, "exec %s unix://%s %s --seed %d --hold", FS_TRAINER, sock, trainer_args, i + 1);
        bench_spawn(&t[i], cmd);
    }
    for (int i = 0; i < 8; i++)
        if (bench_wait_line(&t[i], "HOLD", line, sizeof line)) exit(1);
    /* The dataset's pages: its files, or the sealed copies `serve` maps instead (dataset/dataset.c). */
    long total = pss_kb(server.pid, NULL), data_pss = pss_kb(server.pid, data) + pss_kb(server.pid, SEALED_COPY);
    for (int i = 0; i < 8; i++)
        total += pss_kb(t[i].pid, NULL), data_pss += pss_kb(t[i].pid, data) + pss_kb(t[i].pid, SEALED_COPY);
    double ds_mb = (double)dataset_bytes / 1e6;
    printf("RESULT bench=shared_memory clients=8 workload=%s dataset_mb=%.1f total_pss_mb=%.1f dataset_pages_pss_mb=%.1f "
           "other_pss_mb=%.1f pss_ratio_vs_dataset=%.3f dataset_pages_ratio=%.3f\n",
           workload, ds_mb, total / 1e3, data_pss / 1e3, (total - data_pss) / 1e3, total / 1e3 / ds_mb,
           data_pss / 1e3 / ds_mb);
    fflush(stdout);
    for (int i = 0; i < 8; i++) close(t[i].in), waitpid(t[i].pid, NULL, 0), fclose(t[i].out);
    kill(server.pid, SIGTERM);
    waitpid(server.pid, NULL, 0);
    fclose(server.out);
    close(server.in);
}

/* ---- 2. throughput ---------------------------------------------------------------- */

/* Both sides run the same requests: worker/client i's batch b has the
 * seeds and the sampling seed of (i, b). Each first runs `warmup` batches
 * (faulting in its mappings, result slot and sampler buffers), waits for
 * the others, and only then is timed for `batches` more: the steady state.
 * The warm-up is timed and reported on its own. */
typedef struct {
    const fs_dataset_t *ds;
    int warmup, batches, worker;
    pthread_barrier_t *warm, *go;
    int lat_fd, go_fd;           /* a forked baseline process's pipes; -1 in a thread */
    double *lat;                 /* a thread's timed batches' latencies, in seconds */
    double cpu;                  /* out: the timed batches' CPU time, in seconds */
} inproc_t;

/* Latencies pooled over rounds (steady state and warm-up apart), and the
 * CPU time of the timed batches. */
typedef struct {
    double *lat, *warm, cpu;
    int nlat, nwarm;
} pooled_t;

/* CPU time so far of this thread (CLOCK_THREAD_CPUTIME_ID) or process. */
static double cpu_seconds(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void seeds_for(int64_t *seeds, int64_t n, int worker, int b)
{
    fs_rng_t r = fs_rng_make((uint64_t)worker * 7919 + 1, (uint64_t)b);
    for (int i = 0; i < 1024; i++) seeds[i] = (int64_t)fs_rng_below(&r, (uint64_t)n);
}

/* The engines as a trainer would call them itself: the baseline. `mark`
 * is called once the warm-up is over (a barrier, or the pipe handshake of
 * a forked process); j->lat_fd >= 0 gets each batch's (phase, seconds). */
static void inproc_run(inproc_t *j, void (*mark)(inproc_t *))
{
    fs_sampler_t *s;
    fs_error_t err = {0};
    fs_sampler_create(&s, &err);
    fs_csr_view_t g;
    fs_csr_view_init(&g, j->ds->num_nodes, j->ds->indptr, j->ds->indices, j->ds->index_dtype, NULL);
    const fs_table_t *t = &j->ds->tables[0];
    fs_table_view_t v = {.dtype = t->dtype, .num_rows = t->rows, .dim = t->dim, .row_bytes = t->row_bytes, .num_tiers = 1};
    v.tier[0] = (fs_tier_ref_t){FS_TIER_HOST, -1, t->data, t->rows};
    size_t cap = 0;
    float *out = NULL;
    int64_t seeds[1024];
    fs_sample_req_t req = SAMPLE_REQ(.num_hops = 3, .fanout = FANOUTS);
    double cpu0 = 0;
    for (int b = 0; b < j->warmup + j->batches; b++) {
        if (b == j->warmup) mark(j), cpu0 = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
        seeds_for(seeds, j->ds->num_nodes, j->worker, b);
        req.seed = (uint64_t)b;
        double t_batch = bench_now();
        fs_sample_result_t r;
        fs_sample_cpu(s, &g, seeds, 1024, &req, &r, NULL, &err);
        if ((size_t)r.num_nodes * t->row_bytes > cap) { /* grows like a result slot: rarely, kept */
            free(out);
            cap = (size_t)r.num_nodes * t->row_bytes * 2;
            out = malloc(cap);
        }
        fs_gather_cpu(&v, r.nodes, r.num_nodes, FS_DTYPE_F32, out, NULL, NULL, &err);
        double rec[2] = {b < j->warmup ? 0 : 1, bench_now() - t_batch};
        if (j->lat_fd >= 0 && write(j->lat_fd, rec, sizeof rec) != sizeof rec) _exit(3);
        if (j->lat && b >= j->warmup) j->lat[b - j->warmup] = rec[1];
    }
    j->cpu = cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    free(out);
    fs_sampler_destroy(s);
}

static void barrier_mark(inproc_t *j)
{
    pthread_barrier_wait(j->warm); /* every worker warm */
    pthread_barrier_wait(j->go);   /* the clock starts */
}

static void *inproc_worker(void *p)
{
    inproc_run(p, barrier_mark);
    return NULL;
}

/* Steady-state batches/s of n in-process workers; their latencies are
 * appended to `pool`. */
static double inprocess(const fs_dataset_t *ds, int n, int warmup, int batches, pooled_t *pool)
{
    pthread_t tid[8];
    inproc_t j[8];
    pthread_barrier_t warm, go;
    pthread_barrier_init(&warm, NULL, (unsigned)n + 1);
    pthread_barrier_init(&go, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; i++) {
        j[i] = (inproc_t){.ds = ds, .warmup = warmup, .batches = batches, .worker = i, .warm = &warm, .go = &go,
                          .lat_fd = -1, .go_fd = -1, .lat = pool->lat + pool->nlat + (size_t)i * batches};
        pthread_create(&tid[i], NULL, inproc_worker, &j[i]);
    }
    pthread_barrier_wait(&warm);
    double t0 = bench_now();
    pthread_barrier_wait(&go);
    for (int i = 0; i < n; i++) pthread_join(tid[i], NULL);
    double rate = n * batches / (bench_now() - t0);
    pool->nlat += n * batches;
    for (int i = 0; i < n; i++) pool->cpu += j[i].cpu;
    pthread_barrier_destroy(&warm);
    pthread_barrier_destroy(&go);
    return rate;
}

static void percentiles(double *lat, int n, double *p50, double *p99, double *max)
{
    *p50 = bench_percentile(lat, n, 0.50) * 1e3;
    *p99 = bench_percentile(lat, n, 0.99) * 1e3;
    if (max) *max = bench_percentile(lat, n, 1.0) * 1e3;
}

/* One client process: connect, warm up, say so, wait for the start, run
 * the timed batches; every latency goes up the pipe as (phase, seconds),
 * and at the end the timed batches' CPU time as (2, seconds). */
static void client_process(const char *uri, int64_t num_nodes, int i, int warmup, int batches, int lat_fd, int go_fd)
{
    fs_client_t *c;
    if (fs_connect(uri, NULL, &c) != FS_OK) _exit(1);
    double cpu0 = 0;
    int64_t seeds[1024];
    fs_sample_req_t req = SAMPLE_REQ(.num_hops = 3, .fanout = FANOUTS);
    for (int b = 0; b < warmup + batches; b++) {
        if (b == warmup) {
            double mark[2] = {-1, 0}; /* "warm" */
            char x;
            if (write(lat_fd, mark, sizeof mark) != sizeof mark || read(go_fd, &x, 1) != 0) _exit(1);
            cpu0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
        }
        seeds_for(seeds, num_nodes, i, b);
        req.seed = (uint64_t)b;
        fs_batch_t *mb;
        double t = bench_now();
        if (fs_sample_gather(c, seeds, 1024, &req, "feat", FS_DTYPE_F32, &mb) != FS_OK) _exit(2);
        double rec[2] = {b < warmup ? 0 : 1, bench_now() - t};
        fs_batch_free(mb);
        if (write(lat_fd, rec, sizeof rec) != sizeof rec) _exit(3);
    }
    double cpu[2] = {2, cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu0}; /* the timed batches' CPU time */
    if (write(lat_fd, cpu, sizeof cpu) != sizeof cpu) _exit(3);
    fs_close(c);
    _exit(0);
}

/* A forked baseline process says it is warm and waits for the start. */
static void pipe_mark(inproc_t *j)
{
    double mark[2] = {-1, 0};
    char x;
    if (write(j->lat_fd, mark, sizeof mark) != sizeof mark || read(j->go_fd, &x, 1) != 0) _exit(1);
}

/* What the n processes run: featstore clients over unix://, or (uri NULL)
 * the in-process engines on the dataset this process mapped, forked. */
typedef struct {
    const char *uri;
    const fs_dataset_t *ds;
    int64_t num_nodes;
} procs_t;

static void proc_main(const procs_t *w, int i, int warmup, int batches, int lat_fd, int go_fd)
{
    if (w->uri) client_process(w->uri, w->num_nodes, i, warmup, batches, lat_fd, go_fd);
    inproc_t j = {.ds = w->ds, .warmup = warmup, .batches = batches, .worker = i, .lat_fd = lat_fd, .go_fd = go_fd};
    inproc_run(&j, pipe_mark);
    double cpu[2] = {2, j.cpu};
    if (write(lat_fd, cpu, sizeof cpu) != sizeof cpu) _exit(3);
    _exit(0);
}

/* n processes running `batches` timed batches each after `warmup`; returns
 * their steady-state rate and appends their latencies to `pool` (if any). */
static double processes(const procs_t *w, int n, int warmup, int batches, pooled_t *pool)
{
    int lat_pipe[2], go[2];
    if (pipe(lat_pipe) || pipe(go)) exit(1);
    pid_t pid[8];
    for (int i = 0; i < n; i++)
        if ((pid[i] = fork()) == 0) {
            close(lat_pipe[0]), close(go[1]);
            proc_main(w, i, warmup, batches, lat_pipe[1], go[0]);
        }
    close(lat_pipe[1]), close(go[0]);
    int ready = 0, got = 0;
    double rec[2], t0 = 0, t1 = 0;
    while (read(lat_pipe[0], rec, sizeof rec) == sizeof rec) { /* until every process has exited */
        if (rec[0] < 0 && ++ready == n) { /* every process warm: the clock starts */
            t0 = bench_now();
            close(go[1]);
        } else if (rec[0] == 0) {
            if (pool) pool->warm[pool->nwarm++] = rec[1];
        } else if (rec[0] == 1) {
            if (pool) pool->lat[pool->nlat++] = rec[1];
            if (++got == n * batches) t1 = bench_now(); /* the last timed batch: the clock stops */
        } else if (pool) {
            pool->cpu += rec[1]; /* a process's CPU time over its timed batches */
        }
    }
    double rate = got / (t1 - t0);
    for (int i = 0; i < n; i++) {
        int st;
        waitpid(pid[i], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st)) fprintf(stderr, "bench_serve: process %d failed\n", i);
    }
    close(lat_pipe[0]);
    return rate;
}

/* "1,2,4" into counts, each 1..8 (at most 8 of them); returns how many. */
static int client_counts(const char *list, int *ns)
{
    int count = bench_int_list(list, ns, 8);
    for (int k = 0; k < count; k++)
        if (ns[k] < 1 || ns[k] > 8) {
            fprintf(stderr, "bench_serve: --clients %s: each count is 1..8\n", list);
            exit(2);
        }
    return count;
}

/* Three ways to run n trainers, `rounds` times, interleaved (the order
 * rotates each round, so none always runs first or last): featstore
 * clients over unix://, n threads calling the engines in-process, and n
 * forked processes calling them. A host's noise lands on one round, and the
 * ratio is the median of the rounds' own ratios. */
static void serve_phase(const procs_t *clients, const procs_t *forked, const fs_dataset_t *ds, int n, int rounds,
                        int warmup, int batches)
{
    pooled_t pool[3]; /* featstore, threads, forked */
    for (int k = 0; k < 3; k++)
        pool[k] = (pooled_t){.lat = malloc(sizeof(double) * (size_t)(rounds * n * batches)),
                             .warm = malloc(sizeof(double) * (size_t)(rounds * n * warmup + 1))};
    double rate[3][16], ratio[16], ratio_forked[16], sum[3] = {0};
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < 3; k++) {
            int which = (k + r) % 3;
            rate[which][r] = which == 0 ? processes(clients, n, warmup, batches, &pool[0])
                           : which == 1 ? inprocess(ds, n, warmup, batches, &pool[1])
                                        : processes(forked, n, warmup, batches, &pool[2]);
        }
        ratio[r] = rate[0][r] / rate[1][r], ratio_forked[r] = rate[0][r] / rate[2][r];
        for (int k = 0; k < 3; k++) sum[k] += rate[k][r];
        fprintf(stderr, "  %d clients, round %d: featstore %.2f, in-process threads %.2f, in-process forked %.2f "
                "batches/s: ratio %.3f\n", n, r, rate[0][r], rate[1][r], rate[2][r], ratio[r]);
    }
    double p50, p99, wp50, wp99, wmax, tail[3], cpu_ms[3];
    char setting[32];
    const char *in_files;
    for (int k = 0; k < 3; k++) { /* each side's p99/p50: a tail all three share is the host's scheduling */
        percentiles(pool[k].lat, pool[k].nlat, &p50, &p99, NULL);
        tail[k] = p50 > 0 ? p99 / p50 : 0;
        cpu_ms[k] = pool[k].nlat ? pool[k].cpu * 1e3 / pool[k].nlat : 0;
    }
    percentiles(pool[0].lat, pool[0].nlat, &p50, &p99, NULL);
    percentiles(pool[0].warm, pool[0].nwarm, &wp50, &wp99, &wmax);
    printf("RESULT bench=serve clients=%d rounds=%d batches_per_s=%.2f inprocess_batches_per_s=%.2f ratio_vs_inprocess=%.3f "
           "p50_ms=%.2f p99_ms=%.2f p99_over_p50=%.2f warmup_batches=%d warmup_p50_ms=%.2f warmup_p99_ms=%.2f "
           "warmup_max_ms=%.2f inprocess_forked_batches_per_s=%.2f ratio_vs_inprocess_forked=%.3f copy=%s shmem_thp=%s "
           "dataset_huge_pct=%.0f inprocess_p99_over_p50=%.2f forked_p99_over_p50=%.2f cpu_ms_per_batch=%.3f "
           "inprocess_cpu_ms_per_batch=%.3f forked_cpu_ms_per_batch=%.3f cpu_ratio_vs_inprocess=%.3f\n",
           n, rounds, sum[0] / rounds, sum[1] / rounds, bench_percentile(ratio, rounds, 0.5), p50, p99, tail[0], warmup,
           wp50, wp99, wmax, sum[2] / rounds, bench_percentile(ratio_forked, rounds, 0.5),
           fs_dataset_file_copy_bytes(ds, &in_files) ? "file" : "memory", fs_shm_huge_setting(setting, sizeof setting), 100.0 * (double)fs_dataset_huge_bytes(ds) / (double)fs_dataset_bytes(ds), tail[1], tail[2], cpu_ms[0],
           cpu_ms[1], cpu_ms[2], cpu_ms[0] > 0 ? cpu_ms[1] / cpu_ms[0] : 0);
    fflush(stdout);
    for (int k = 0; k < 3; k++) free(pool[k].lat), free(pool[k].warm);
}

int main(int argc, char **argv)
{
    int scale = (int)bench_arg(argc, argv, "--scale", 20), dim = (int)bench_arg(argc, argv, "--dim", 128);
    int batches = (int)bench_arg(argc, argv, "--batches", 40), warmup = (int)bench_arg(argc, argv, "--warmup", 5);
    int rounds = (int)bench_arg(argc, argv, "--rounds", 5);
    if (rounds < 1 || rounds > 16) rounds = 5;
    const char *data = bench_dataset_dim(argc, argv, scale, dim);
    fs_dataset_t *ds;
    fs_error_t err = {0};
    if (fs_dataset_open(data, 0, 1, &ds, &err) != FS_OK) {
        fprintf(stderr, "bench_serve: %s\n", err.msg);
        return 1;
    }
    size_t bytes = fs_dataset_bytes(ds);
    int64_t num_nodes = ds->num_nodes;
    fs_dataset_close(ds); /* measure memory while this process maps nothing */
    if (!bench_arg(argc, argv, "--skip-memory", 0)) {
        memory_phase(data, bytes, "10,5x256", "--batches 5 --batch 256 --fanouts 10,5");
        memory_phase(data, bytes, "15,10,5x1024", "--batches 5 --batch 1024 --fanouts 15,10,5");
    }

    fs_copy_opts_t copy = {0};
    if (fs_serve_copy_medium(bench_str(argc, argv, "--copy", "auto"), "--copy", &copy.medium, &err) != FS_OK ||
        fs_dataset_open_served(data, &copy, 0, 1, &ds, &err) != FS_OK) { /* as `featstore serve` opens it */
        fprintf(stderr, "bench_serve: %s\n", err.msg);
        return 2;
    }
    fs_dataset_prefault(ds);
    fs_store_t *store;
    fs_engine_t *engine;
    fs_store_create(ds, &store, &err);
    fs_engine_create(ds, store, NULL, &engine, &err);
    fs_metrics_t *metrics = fs_metrics_create(ds, store);
    char sock[128], uri[160];
    snprintf(sock, sizeof sock, "/tmp/featstore-bench-%d.sock", (int)getpid());
    snprintf(uri, sizeof uri, "unix://%s", sock);
    fs_local_server_t *server;
    fs_local_server_opts_t lo;
    fs_local_server_defaults(&lo);
    lo.socket_path = sock;
    if (fs_local_server_start(&lo, engine, metrics, &server, &err) != FS_OK) {
        fprintf(stderr, "bench_serve: %s\n", err.msg);
        return 1;
    }
    fprintf(stderr, "bench_serve: %s, %lld nodes, [15,10,5] x 1024 seeds, %d warm-up + %d timed batches per client\n",
            data, (long long)num_nodes, warmup, batches);
    int ns[8], count = client_counts(bench_str(argc, argv, "--clients", "1,2,4"), ns);
    procs_t clients = {.uri = uri, .num_nodes = num_nodes}, forked = {.ds = ds, .num_nodes = num_nodes};
    for (int k = 0; k < count; k++) serve_phase(&clients, &forked, ds, ns[k], rounds, warmup, batches);
    fs_local_server_stop(server);
    fs_metrics_destroy(metrics);
    fs_engine_destroy(engine);
    fs_store_destroy(store);
    fs_dataset_close(ds);
    return 0;
}
