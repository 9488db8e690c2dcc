/* test_gpu_serve.c — the GPU serving path on the simulated-GPU runtime
 * (FEATSTORE_SIM_GPUS=4, set by ctest for this program and inherited by the
 * servers it starts): `serve --topology nvlink-pairs` finds four "GPUs",
 * so each planned GPU's rows go into a device tier, one allocation filled
 * at freeze with replicas copied GPU to GPU; trainers on gpu:N open those
 * tiers by IPC handle and run the "CUDA" engines (the CPU twins here) into
 * device result slots. What this checks is the bookkeeping a GPU box runs
 * the same way: handles, offsets, generations, lifetimes, batch locations.
 * The oracle is a CPU trainer of the same server: its engines read host
 * memory through another path (sealed memfds, routes to tier 0).
 *
 * Run without FEATSTORE_SIM_GPUS on a GPU box (scripts/gpu-check.sh does),
 * the same tests serve `--topology detect` from the real GPUs through real
 * CUDA IPC; without either they are skipped, saying why. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client_internal.h" /* the test hook fs_local_client_protocol */
#include "featstore/admin.h"
#include "featstore/client.h"
#include "fs_device.h"
#include "fs_local.h"
#include "test_util.h"

static char *dir, *data, sock[256], uri[300];
static int num_gpus;              /* simulated, or real ones */
static char serve_args[128];      /* the topology and budget the tests serve with */
static char reader[16];           /* the trainer's device: gpu:1 when there are two GPUs or more */

static void setup(void)
{
    dir = tu_mkdtemp();
    data = tu_path(dir, "g");
    snprintf(sock, sizeof sock, "%s/s.sock", dir);
    snprintf(uri, sizeof uri, "unix://%s", sock);
    char *log;
    cr_assert_eq(tu_run(&log, "%s gen rmat --scale 11 --edge-factor 8 --dim 16 --symmetrize --out %s", tu_bin(), data), 0,
                 "%s", log);
    free(log);
    fs_devices_t d;
    num_gpus = fs_devices_query(&d, NULL) == FS_OK ? d.count : 0;
    snprintf(serve_args, sizeof serve_args, "--topology %s --gpu-budget 0.2 --feature-first",
             fs_devices_simulated() == 4 ? "nvlink-pairs" : "detect");
    snprintf(reader, sizeof reader, "gpu:%d", num_gpus > 1 ? 1 : 0);
}

/* Skips a test on a box with neither real GPUs nor FEATSTORE_SIM_GPUS=4. */
static void need_gpus(void)
{
    if (num_gpus == 0) cr_skip_test("no GPU here, and FEATSTORE_SIM_GPUS is not set (ctest sets it to 4)");
    if (fs_devices_simulated() && fs_devices_simulated() != 4) cr_skip_test("these tests simulate 4 GPUs");
}

static void teardown(void)
{
    tu_rm_rf(dir);
    free(dir);
    free(data);
}

TestSuite(gpu_serve, .init = setup, .fini = teardown, .timeout = 120);

static fs_client_t *connect_as(const char *device)
{
    fs_connect_opts_t o = {.struct_size = sizeof o, .device = device};
    fs_client_t *c;
    cr_assert_eq(fs_connect(uri, &o, &c), FS_OK, "%s: %s", device, fs_client_errstr(c));
    return c;
}

static fs_batch_t *one_batch(fs_client_t *c, uint64_t seed)
{
    int64_t seeds[256];
    for (int i = 0; i < 256; i++) seeds[i] = (int64_t)((uint64_t)i * 7919u % 2048u);
    fs_sample_req_t req = SAMPLE_REQ(.num_hops = 2, .fanout = {10, 5}, .seed = seed);
    fs_batch_t *b;
    cr_assert_eq(fs_sample_gather(c, seeds, 256, &req, "feat", FS_DTYPE_INVALID, &b), FS_OK, "%s", fs_client_errstr(c));
    return b;
}

/* Both batches hold the same sample and the same rows, bit for bit (the
 * simulated device's memory is host memory, so the device rows are read
 * here directly). */
static void assert_same(const fs_batch_t *gpu, const fs_batch_t *cpu)
{
    cr_assert_eq(gpu->num_nodes, cpu->num_nodes);
    cr_assert_arr_eq(gpu->nodes, cpu->nodes, (size_t)cpu->num_nodes * 8);
    cr_assert_eq(gpu->num_hops, cpu->num_hops);
    for (int h = 0; h < cpu->num_hops; h++) {
        cr_assert_eq(gpu->blocks[h].num_edges, cpu->blocks[h].num_edges);
        cr_assert_arr_eq(gpu->blocks[h].edge_src, cpu->blocks[h].edge_src, (size_t)cpu->blocks[h].num_edges * 8);
    }
    cr_assert_eq(gpu->rows, cpu->rows);
    cr_assert_arr_eq(gpu->features, cpu->features, (size_t)cpu->rows * (size_t)cpu->dim * 4);
}

/* The same on a real GPU: the device rows are copied back first. */
static void assert_same_on_gpu(const fs_batch_t *gpu, const fs_batch_t *cpu)
{
    size_t bytes = (size_t)cpu->rows * (size_t)cpu->dim * 4;
    float *rows = malloc(bytes ? bytes : 1);
    fs_error_t err = {0};
    cr_assert_eq(fs_cuda_copy(rows, gpu->features, bytes, &err), FS_OK, "%s", err.msg);
    fs_batch_t host = *gpu;
    host.features = rows;
    assert_same(&host, cpu);
    free(rows);
}

static long metric(const char *m, const char *name)
{
    const char *p = strstr(m, name);
    return p ? atol(p + strlen(name)) : -1;
}

static long held(int port)
{
    char *m = tu_http_get(port, "/metrics");
    long n = metric(m, "\nfeatstore_placements_held ");
    free(m);
    return n;
}

/* `held` placements, waited for (a dead client is noticed when its socket hangs up). */
static void assert_held(int port, long want, const char *why)
{
    long n = -1;
    for (int i = 0; i < 200 && (n = held(port)) != want; i++) usleep(20000);
    cr_assert_eq(n, want, "%s: %ld placements held, want %ld", why, n, want);
}

Test(gpu_serve, a_gpu_trainer_reads_device_tiers_through_ipc_bit_for_bit)
{
    need_gpus();
    tu_server_t s;
    cr_assert_eq(tu_serve(&s, data, sock, serve_args), 0);
    fs_client_t *gpu = connect_as(reader), *cpu = connect_as("cpu");
    fs_info_t *info;
    cr_assert_eq(fs_info(cpu, &info), FS_OK);
    cr_assert_eq(info->num_tiers, (size_t)num_gpus + 1, "the files and one tier per GPU");
    for (int k = 1; k <= num_gpus; k++) cr_assert_str_eq(info->tiers[k].kind, "device");
    fs_info_free(info);
    for (uint64_t seed = 1; seed <= 5; seed++) {
        fs_batch_t *g = one_batch(gpu, seed), *c = one_batch(cpu, seed);
        cr_assert_eq(g->features_memory, FS_MEM_DEVICE, "the gather ran on the trainer's GPU");
        cr_assert_eq(g->features_device, num_gpus > 1 ? 1 : 0);
        cr_assert_eq(c->features_memory, FS_MEM_HOST);
        cr_assert_eq(c->features_device, -1);
        if (fs_devices_simulated()) assert_same(g, c); /* else: real device memory */
        else assert_same_on_gpu(g, c);
        const void *base;
        size_t len;
        cr_assert_eq(fs_batch_region(g, &base, &len), FS_OK);
        cr_assert((const char *)g->features < (const char *)base || (const char *)g->features >= (const char *)base + len,
                  "device rows are not in the host slot");
        fs_batch_free(g);
        fs_batch_free(c);
    }
    /* the trainer read rows from its own device tier (tier g + 1 = GPU g) */
    char *m = tu_metrics_with(s.metrics_port, "featstore_requests_total{method=\"SampleGather\",transport=\"unix\"} 10\n"),
         own_tier[160];
    int g = num_gpus > 1 ? 1 : 0;
    snprintf(own_tier, sizeof own_tier, "featstore_feature_rows_read_total{reader=\"local\",tier=\"%d\",kind=\"device\","
             "device=\"%d\"} ", g + 1, g);
    long own = metric(m, own_tier);
    cr_assert_gt(own, 0, "%s", m);
    free(m);
    /* locality-aware sampling is the CPU engine's: refused on device tiers, with the reason */
    int64_t seed = 1;
    fs_sample_req_t las = SAMPLE_REQ(.num_hops = 2, .fanout = {5, 5}, .locality = 4);
    fs_batch_t *b;
    cr_assert_eq(fs_sample(gpu, &seed, 1, &las, &b), FS_ERR_UNSUPPORTED);
    cr_assert_not_null(strstr(fs_client_errstr(gpu), "CPU engine"), "%s", fs_client_errstr(gpu));
    fs_close(gpu);
    fs_close(cpu);
    cr_assert_eq(tu_serve_stop(&s, SIGTERM), 0);
}

/* A driver that will not register the dataset's file-backed pages: the
 * trainer reads a pinned copy of them instead, with the same results. */
Test(gpu_serve, a_trainer_whose_driver_refuses_registration_reads_a_pinned_copy)
{
    need_gpus();
    if (!fs_devices_simulated()) cr_skip_test("only the simulated driver can be told to refuse registration");
    tu_server_t s;
    cr_assert_eq(tu_serve(&s, data, sock, serve_args), 0);
    setenv("FEATSTORE_SIM_HOST_REGISTER", "refuse", 1); /* this process only: the server started without it */
    fs_client_t *gpu = connect_as(reader), *cpu = connect_as("cpu");
    for (uint64_t seed = 1; seed <= 3; seed++) {
        fs_batch_t *g = one_batch(gpu, seed), *c = one_batch(cpu, seed);
        cr_assert_eq(g->features_memory, FS_MEM_DEVICE);
        assert_same(g, c);
        fs_batch_free(g);
        fs_batch_free(c);
    }
    unsetenv("FEATSTORE_SIM_HOST_REGISTER");
    fs_close(gpu);
    fs_close(cpu);
    cr_assert_eq(tu_serve_stop(&s, SIGTERM), 0);
}

/* A child process on gpu:0 that takes one batch, says so, and waits to be killed. */
static pid_t trainer_that_waits(void)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        fs_connect_opts_t o = {.struct_size = sizeof o, .device = "gpu:0"};
        fs_client_t *c;
        fs_batch_t *b;
        int64_t seed = 3;
        fs_sample_req_t req = SAMPLE_REQ(.num_hops = 1, .fanout = {5});
        char ok = fs_connect(uri, &o, &c) == FS_OK && fs_sample_gather(c, &seed, 1, &req, "feat", FS_DTYPE_INVALID, &b) == FS_OK;
        if (write(p[1], &ok, 1) != 1) _exit(1);
        pause();
        _exit(0);
    }
    close(p[1]);
    char ok = 0;
    cr_assert_eq(read(p[0], &ok, 1), 1);
    close(p[0]);
    cr_assert(ok, "the child trainer on gpu:0 took a batch");
    return pid;
}

Test(gpu_serve, the_server_holds_a_placement_while_a_gpu_trainer_may_read_it)
{
    need_gpus();
    tu_server_t s;
    cr_assert_eq(tu_serve(&s, data, sock, serve_args), 0);
    fs_client_t *trainer = connect_as(reader), *admin = connect_as("cpu");
    fs_batch_free(one_batch(trainer, 1));
    assert_held(s.metrics_port, 1, "one placement");

    fs_replan_opts_t less = {.struct_size = sizeof less, .gpu_budget = 0.1};
    uint64_t gen;
    cr_assert_eq(fs_replan(admin, &less, &gen), FS_OK, "%s", fs_client_errstr(admin));
    assert_held(s.metrics_port, 2, "neither trainer has moved on: their placement stays");
    fs_batch_free(one_batch(admin, 2)); /* every local client holds what it mapped, the CPU's too */
    assert_held(s.metrics_port, 2, "the GPU trainer has not moved on: its tiers stay");
    fs_batch_free(one_batch(trainer, 2)); /* moves to generation 2 */
    assert_held(s.metrics_port, 1, "the trainer moved on: the old tiers are freed");

    pid_t child = trainer_that_waits(); /* reads generation 2 */
    cr_assert_eq(fs_replan(admin, &less, &gen), FS_OK, "%s", fs_client_errstr(admin));
    fs_batch_free(one_batch(trainer, 3)); /* the parent's trainers move to 3; the child stays on 2 */
    fs_batch_free(one_batch(admin, 3));
    assert_held(s.metrics_port, 2, "the child still reads generation 2");
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    assert_held(s.metrics_port, 1, "a trainer that dies leaves no GPU memory behind");
    fs_close(trainer);
    fs_close(admin);
    cr_assert_eq(tu_serve_stop(&s, SIGTERM), 0);
}

/* A 6.1 library (a slice is a descriptor, it knows no IPC handles) is two
 * minor versions behind this server (6.3), so it is refused at the
 * handshake, as the CPU too, and told to upgrade. (A 6.2 server served it
 * as the CPU and refused only its GPU-tier reads.) */
Test(gpu_serve, an_older_client_library_reading_gpu_tiers_is_told_to_upgrade)
{
    need_gpus();
    tu_server_t s;
    cr_assert_eq(tu_serve(&s, data, sock, serve_args), 0);
    fs_local_client_protocol(1);
    const char *devices[] = {"gpu:0", "cpu"};
    for (int i = 0; i < 2; i++) {
        fs_connect_opts_t o = {.struct_size = sizeof o, .device = devices[i]};
        fs_client_t *c;
        cr_assert_eq(fs_connect(uri, &o, &c), FS_ERR_VERSION);
        cr_assert_not_null(strstr(fs_client_errstr(c), "upgrade the client library"), "%s", fs_client_errstr(c));
        fs_close(c);
    }
    fs_local_client_protocol(FS_LOCAL_MINOR);
    fs_client_t *cpu = connect_as("cpu");
    fs_batch_free(one_batch(cpu, 1));
    fs_close(cpu);
    cr_assert_eq(tu_serve_stop(&s, SIGTERM), 0);
}
