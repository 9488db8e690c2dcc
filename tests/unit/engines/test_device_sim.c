/* test_device_sim.c — the simulated-GPU runtime (FEATSTORE_SIM_GPUS,
 * kernels/fs_device_sim.c) through the public device API: discovery, device
 * memory, IPC between processes (fork), broadcast, and the engines, which
 * must equal their CPU twins and refuse what the CUDA engines refuse.
 * ctest runs it with FEATSTORE_SIM_GPUS=2 (tests/unit/engines/CMakeLists.txt). Children
 * forked here report through their exit status: 0 is success, any other
 * value names the step that failed. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs_device.h"
#include "fs_gather.h"
#include "fs_rng.h"
#include "fs_sample.h"
#include "test_util.h"

#define SIM_GPUS 2

static void need_simulation(void)
{
    cr_assert_eq(fs_devices_simulated(), SIM_GPUS, "run with FEATSTORE_SIM_GPUS=%d (ctest sets it)", SIM_GPUS);
}

/* The exit status of child pid, or -1 when it did not exit normally. */
static int child_status(pid_t pid)
{
    int ws;
    pid_t got;
    while ((got = waitpid(pid, &ws, 0)) < 0 && errno == EINTR) {
    }
    return got == pid && WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
}

static void fill(void *p, size_t bytes, uint64_t seed)
{
    fs_rng_t r = fs_rng_make(seed, 1);
    for (size_t i = 0; i < bytes; i++) ((unsigned char *)p)[i] = (unsigned char)fs_rng_next(&r);
}

/* A simulated device buffer holding a copy of host[0, bytes). */
static void *to_device(int device, const void *host, size_t bytes)
{
    void *p;
    fs_error_t err = {0};
    cr_assert_eq(fs_cuda_alloc_device(device, bytes, &p, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_cuda_copy(p, host, bytes, &err), FS_OK, "%s", err.msg);
    return p;
}

/* ---- FEATSTORE_SIM_GPUS itself ---------------------------------------- */

/* fs_devices_simulated() in a child given FEATSTORE_SIM_GPUS=value (NULL:
 * unset), or -1; *printed = whether the child wrote anything on
 * stdout/stderr. The variable is read once per process, so this test's
 * process must not have read it before forking (Criterion runs each test
 * in a process of its own). */
static int simulated_with(const char *value, int *printed)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        dup2(fds[1], 1), dup2(fds[1], 2);
        close(fds[0]), close(fds[1]);
        if (value) setenv("FEATSTORE_SIM_GPUS", value, 1);
        else unsetenv("FEATSTORE_SIM_GPUS");
        fs_devices_t d;
        int n = fs_devices_simulated();
        int answered = fs_devices_query(&d, NULL) == FS_OK;
        fflush(stdout), fflush(stderr);
        _exit(n == 0 && answered ? 100 : n); /* 100: off, yet a simulated answer */
    }
    close(fds[1]);
    char buf[256];
    *printed = read(fds[0], buf, sizeof buf) > 0;
    close(fds[0]);
    return child_status(pid);
}

Test(sim, the_count_is_read_once_and_bad_values_leave_it_off)
{
    int printed;
    cr_assert_eq(simulated_with("2", &printed), 2, "a valid count turns it on");
    cr_assert_eq(simulated_with("16", &printed), 16);
    cr_assert_eq(simulated_with("1", &printed), 1);
    const char *bad[] = {"0", "17", "-1", "2x", "", " 2", "junk", "99999999999999999999", NULL};
    for (int i = 0; bad[i]; i++) {
        cr_assert_eq(simulated_with(bad[i], &printed), 0, "FEATSTORE_SIM_GPUS='%s' must leave it off", bad[i]);
        cr_assert_not(printed, "FEATSTORE_SIM_GPUS='%s': an invalid value prints nothing", bad[i]);
    }
    cr_assert_eq(simulated_with(NULL, &printed), 0, "unset: off");
    /* Read once: changing the environment later changes nothing. */
    need_simulation();
    setenv("FEATSTORE_SIM_GPUS", "5", 1);
    cr_assert_eq(fs_devices_simulated(), SIM_GPUS);
}

/* ---- discovery and memory --------------------------------------------- */

Test(sim, query_reports_the_simulated_devices_all_peers)
{
    need_simulation();
    fs_devices_t d;
    fs_error_t err = {0};
    cr_assert_eq(fs_devices_query(&d, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(d.count, SIM_GPUS);
    for (int i = 0; i < SIM_GPUS; i++) {
        char want[32];
        snprintf(want, sizeof want, "simulated GPU %d", i);
        cr_assert_str_eq(d.dev[i].name, want);
        cr_assert_eq(d.dev[i].cc_major, 0);
        cr_assert_eq(d.dev[i].cc_minor, 0);
        cr_assert_eq(d.dev[i].total_bytes, (size_t)16 << 30);
        cr_assert_eq(d.dev[i].free_bytes, (size_t)16 << 30);
        for (int j = 0; j < FS_MAX_DEVICES; j++)
            cr_assert_eq(d.peer[i][j], i != j && j < SIM_GPUS, "peer[%d][%d]", i, j);
    }
    cr_assert_eq(d.dev[SIM_GPUS].name[0], 0, "no third device");
}

Test(sim, device_memory_round_trips_bit_for_bit)
{
    need_simulation();
    size_t bytes = (1 << 20) + 3; /* not a whole number of pages */
    unsigned char *host = malloc(bytes), *back = malloc(bytes);
    fill(host, bytes, 1);
    void *d0 = to_device(0, host, bytes), *d1;
    fs_error_t err = {0};
    cr_assert_eq(fs_cuda_alloc_device(1, bytes, &d1, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_cuda_copy(d1, d0, bytes, &err), FS_OK, "device 0 -> device 1");
    memset(back, 0, bytes);
    cr_assert_eq(fs_cuda_copy(back, d1, bytes, &err), FS_OK);
    cr_assert_arr_eq(back, host, bytes, "host -> device 0 -> device 1 -> host");
    cr_assert_neq(d0, d1, "two allocations, two buffers");
    fs_cuda_free_device(d0), fs_cuda_free_device(d1);

    void *p = (void *)1;
    cr_assert_eq(fs_cuda_alloc_device(SIM_GPUS, 64, &p, &err), FS_ERR_NO_DEVICE, "device %d of %d", SIM_GPUS, SIM_GPUS);
    cr_assert_null(p);
    cr_assert_not_null(strstr(err.msg, "GPU 2"), "the error names the device: %s", err.msg);
    cr_assert_eq(fs_cuda_alloc_device(-1, 64, &p, &err), FS_ERR_NO_DEVICE);
    cr_assert_eq(fs_cuda_alloc_device(0, 0, &p, &err), FS_OK, "zero bytes: a valid, distinct pointer");
    cr_assert_not_null(p);
    fs_cuda_free_device(p);
    fs_cuda_free_device(host); /* not a device allocation: ignored */
    free(host), free(back);
}

Test(sim, pinned_peer_and_registered_memory)
{
    need_simulation();
    void *p;
    fs_error_t err = {0};
    cr_assert_eq(fs_cuda_alloc_pinned(10000, &p, &err), FS_OK, "%s", err.msg);
    cr_assert_eq((uintptr_t)p % (uintptr_t)sysconf(_SC_PAGESIZE), 0, "page-aligned");
    memset(p, 0xab, 10000);
    fs_cuda_free_pinned(p);
    cr_assert_eq(fs_cuda_enable_peer(0, 1, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_cuda_enable_peer(1, 0, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_cuda_enable_peer(0, SIM_GPUS, &err), FS_ERR_NO_DEVICE);
    cr_assert_eq(fs_cuda_enable_peer(0, 0, &err), FS_ERR_NO_DEVICE, "as CUDA: a device is not its own peer");
    static const char ro[64] = "read-only data";
    const void *dev = NULL;
    cr_assert_eq(fs_cuda_host_register(ro, sizeof ro, &dev, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(dev, (const void *)ro, "simulated kernels read host memory in place");
    fs_cuda_host_unregister(ro);
}

/* ---- IPC ---------------------------------------------------------------- */

/* Child side of ipc_a_child_reads_and_sees_the_exporters_writes: opens h,
 * checks the bytes, tells the parent, waits for its rewrite, checks again. */
static int ipc_child(const fs_ipc_handle_t *h, size_t bytes, const unsigned char *want1,
                     const unsigned char *want2, int to_parent, int from_parent)
{
    void *p;
    fs_error_t err = {0};
    if (fs_cuda_ipc_open(0, h, bytes, &p, &err) != FS_OK) return 2;
    if (memcmp(p, want1, bytes)) return 3;
    void *big;
    if (fs_cuda_ipc_open(0, h, bytes + 1, &big, &err) != FS_ERR_INVALID_ARGUMENT || big) return 4;
    char c = 1;
    if (write(to_parent, &c, 1) != 1 || read(from_parent, &c, 1) != 1) return 5;
    if (memcmp(p, want2, bytes)) return 6; /* the mapping is the exporter's live memory */
    fs_cuda_ipc_close(p);
    return 0;
}

Test(sim, ipc_a_child_reads_and_sees_the_exporters_writes)
{
    need_simulation();
    size_t bytes = 3 * 4096 + 17;
    unsigned char *a = malloc(bytes), *b = malloc(bytes);
    fill(a, bytes, 2), fill(b, bytes, 3);
    void *dev = to_device(1, a, bytes);
    fs_ipc_handle_t h;
    fs_error_t err = {0};
    cr_assert_eq(fs_cuda_ipc_export(dev, &h, &err), FS_OK, "%s", err.msg);
    int up[2], down[2];
    cr_assert_eq(pipe(up), 0);
    cr_assert_eq(pipe(down), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(up[0]), close(down[1]);
        _exit(ipc_child(&h, bytes, a, b, up[1], down[0]));
    }
    close(up[1]), close(down[0]); /* a child that fails early closes its ends: no read waits forever */
    char c = 0;
    if (read(up[0], &c, 1) == 1) {
        cr_assert_eq(fs_cuda_copy(dev, b, bytes, &err), FS_OK);
        cr_assert_eq(write(down[1], &c, 1), 1);
    }
    close(up[0]), close(down[1]);
    int status = child_status(pid);
    cr_assert_eq(status, 0, "the child failed at step %d (see ipc_child)", status);
    fs_cuda_free_device(dev);
    free(a), free(b);
}

Test(sim, ipc_refuses_own_corrupt_and_unknown_handles)
{
    need_simulation();
    void *dev, *p = (void *)1;
    fs_error_t err = {0};
    cr_assert_eq(fs_cuda_alloc_device(0, 4096, &dev, &err), FS_OK);
    fs_ipc_handle_t h, bad;
    cr_assert_eq(fs_cuda_ipc_export(dev, &h, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_cuda_ipc_open(1, &h, 4096, &p, &err), FS_ERR_INVALID_ARGUMENT, "a process's own handle");
    cr_assert_null(p);
    bad = h;
    bad.bytes[0] ^= 0x5a;
    cr_assert_eq(fs_cuda_ipc_open(1, &bad, 4096, &p, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "not a featstore simulated IPC handle"), "%s", err.msg);
    memset(&bad, 0, sizeof bad);
    cr_assert_eq(fs_cuda_ipc_open(1, &bad, 4096, &p, &err), FS_ERR_INVALID_ARGUMENT, "an all-zero handle");
    cr_assert_eq(fs_cuda_ipc_open(SIM_GPUS, &h, 4096, &p, &err), FS_ERR_NO_DEVICE);

    cr_assert_eq(fs_cuda_ipc_export((char *)dev + 8, &h, &err), FS_ERR_INVALID_ARGUMENT, "not the base");
    char host[64];
    cr_assert_eq(fs_cuda_ipc_export(host, &h, &err), FS_ERR_INVALID_ARGUMENT, "host memory");
    fs_cuda_free_device(dev);
    cr_assert_eq(fs_cuda_ipc_export(dev, &h, &err), FS_ERR_INVALID_ARGUMENT, "a freed allocation");
    fs_cuda_ipc_close(host); /* never opened: ignored */
}

/* A handle whose allocation was freed, its descriptor number then reused by
 * a new allocation: the child must get a clean error, not the new memory. */
Test(sim, ipc_handle_of_a_freed_allocation_fails_cleanly)
{
    need_simulation();
    void *old, *fresh;
    fs_error_t err = {0};
    cr_assert_eq(fs_cuda_alloc_device(0, 8192, &old, &err), FS_OK);
    fs_ipc_handle_t h;
    cr_assert_eq(fs_cuda_ipc_export(old, &h, &err), FS_OK);
    fs_cuda_free_device(old);
    cr_assert_eq(fs_cuda_alloc_device(0, 8192, &fresh, &err), FS_OK); /* likely the same descriptor number */
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        void *p = (void *)1;
        fs_status_t st = fs_cuda_ipc_open(0, &h, 8192, &p, &err);
        _exit(st == FS_ERR_UNAVAILABLE && !p ? 0 : st == FS_OK ? 2 : 3);
    }
    cr_assert_eq(child_status(pid), 0, "opening a freed allocation's handle must fail with FS_ERR_UNAVAILABLE");
    fs_cuda_free_device(fresh);
}

/* The exporter has exited: its /proc entry is gone. */
Test(sim, ipc_handle_of_a_dead_exporter_fails_cleanly)
{
    need_simulation();
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        void *dev;
        fs_ipc_handle_t h;
        if (fs_cuda_alloc_device(1, 4096, &dev, NULL) != FS_OK || fs_cuda_ipc_export(dev, &h, NULL) != FS_OK) _exit(2);
        _exit(write(fds[1], &h, sizeof h) == sizeof h ? 0 : 3);
    }
    close(fds[1]);
    fs_ipc_handle_t h;
    ssize_t got = read(fds[0], &h, sizeof h);
    close(fds[0]);
    int status = child_status(pid);
    cr_assert_eq(status, 0, "the exporting child failed at step %d", status);
    cr_assert_eq(got, (ssize_t)sizeof h);
    void *p = (void *)1;
    fs_error_t err = {0};
    cr_assert_eq(fs_cuda_ipc_open(0, &h, 4096, &p, &err), FS_ERR_UNAVAILABLE, "%s", err.msg);
    cr_assert_null(p);
    cr_assert_neq(strlen(err.msg), 0);
}

/* ---- broadcast ----------------------------------------------------------- */

Test(sim, broadcast_copies_the_root_to_every_buffer)
{
    need_simulation();
    size_t bytes = 100003;
    unsigned char *src = malloc(bytes), *back = malloc(bytes), *zero = calloc(1, bytes);
    fill(src, bytes, 4);
    int devices[3] = {0, 1, 1};
    void *bufs[3] = {to_device(0, src, bytes), to_device(1, zero, bytes), to_device(1, zero, bytes)};
    const char *method = NULL;
    fs_error_t err = {0};
    cr_assert_eq(fs_cuda_broadcast(devices, bufs, 3, bytes, &method, &err), FS_OK, "%s", err.msg);
    cr_assert_str_eq(method, "simulated");
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(fs_cuda_copy(back, bufs[i], bytes, &err), FS_OK);
        cr_assert_arr_eq(back, src, bytes, "buffer %d", i);
    }
    int bad_devices[2] = {0, SIM_GPUS};
    cr_assert_eq(fs_cuda_broadcast(bad_devices, bufs, 2, bytes, &method, &err), FS_ERR_NO_DEVICE);
    cr_assert_eq(fs_cuda_broadcast(devices, bufs, 0, bytes, &method, &err), FS_ERR_INVALID_ARGUMENT);
    void *with_null[2] = {bufs[0], NULL};
    cr_assert_eq(fs_cuda_broadcast(devices, with_null, 2, bytes, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    for (int i = 0; i < 3; i++) fs_cuda_free_device(bufs[i]);
    free(src), free(back), free(zero);
}

/* ---- engines --------------------------------------------------------------- */

/* fs_gather_cuda (simulated, reader device 1) against fs_gather_cpu on the
 * host table: tier 0 is pinned memory holding the whole table, tier 1
 * device memory holding the rows of even ids; ids, route and output live
 * in simulated device memory, as on a GPU. */
static void gather_both(fs_dtype_t dt, fs_dtype_t out_dt)
{
    int64_t rows = 3000, dim = 13, n = 5003;
    size_t rb = (size_t)dim * fs_dtype_size(dt), ob = (size_t)n * (size_t)dim * fs_dtype_size(out_dt);
    uint16_t *host = malloc((size_t)rows * rb); /* 2-byte words: finite halves when dt is F16/BF16 */
    fs_rng_t r = fs_rng_make(6, 6);
    for (size_t i = 0; i < (size_t)rows * rb / 2; i++) host[i] = (uint16_t)(fs_rng_next(&r) & 0x7bff);
    int64_t *ids = malloc((size_t)n * 8), even = 0;
    for (int64_t i = 0; i < n; i++) ids[i] = (int64_t)fs_rng_below(&r, (uint64_t)rows), even += ids[i] % 2 == 0;
    char *half = malloc((size_t)rows * rb);
    uint64_t *route = malloc((size_t)rows * 8);
    int64_t k = 0;
    for (int64_t v = 0; v < rows; v++) {
        if (v % 2) {
            route[v] = FS_ROUTE(0, v);
            continue;
        }
        memcpy(half + k * (int64_t)rb, (char *)host + v * (int64_t)rb, rb);
        route[v] = FS_ROUTE(1, k++);
    }
    fs_table_view_t cpu = {.dtype = dt, .num_rows = rows, .dim = dim, .row_bytes = rb, .num_tiers = 1};
    cpu.tier[0] = (fs_tier_ref_t){FS_TIER_HOST, -1, host, rows};
    fs_table_view_t gpu = cpu;
    void *pinned, *out;
    fs_error_t err = {0};
    cr_assert_eq(fs_cuda_alloc_pinned((size_t)rows * rb, &pinned, &err), FS_OK);
    memcpy(pinned, host, (size_t)rows * rb);
    gpu.num_tiers = 2;
    gpu.tier[0] = (fs_tier_ref_t){FS_TIER_PINNED, -1, pinned, rows};
    gpu.tier[1] = (fs_tier_ref_t){FS_TIER_DEVICE, 1, to_device(1, half, (size_t)k * rb), k};
    gpu.route = to_device(1, route, (size_t)rows * 8);
    void *dev_ids = to_device(1, ids, (size_t)n * 8);
    cr_assert_eq(fs_cuda_alloc_device(1, ob, &out, &err), FS_OK);
    char *want = malloc(ob), *got = malloc(ob);
    fs_gather_counters_t c = {0};
    cr_assert_eq(fs_gather_cpu(&cpu, ids, n, out_dt, want, NULL, NULL, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_gather_cuda(1, &gpu, dev_ids, n, out_dt, out, &c, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_cuda_copy(got, out, ob, &err), FS_OK);
    cr_assert_arr_eq(got, want, ob, "%s served as %s", fs_dtype_name(dt), fs_dtype_name(out_dt));
    cr_assert_eq(c.rows[1], (uint64_t)even, "rows read from the device tier");
    cr_assert_eq(c.rows[0], (uint64_t)(n - even), "rows read from the pinned tier");
    cr_assert_eq(c.bytes[1], (uint64_t)even * rb);
    cr_assert_eq(fs_gather_cuda(SIM_GPUS, &gpu, dev_ids, n, out_dt, out, NULL, &err), FS_ERR_NO_DEVICE);
    fs_cuda_free_device(dev_ids), fs_cuda_free_device(out), fs_cuda_free_device((void *)gpu.tier[1].base);
    fs_cuda_free_device((void *)gpu.route), fs_cuda_free_pinned(pinned);
    free(host), free(ids), free(half), free(route), free(want), free(got);
}

Test(sim, gather_equals_the_cpu_gather_across_two_tiers)
{
    need_simulation();
    gather_both(FS_DTYPE_F32, FS_DTYPE_F32);
    gather_both(FS_DTYPE_F16, FS_DTYPE_F32);
    gather_both(FS_DTYPE_BF16, FS_DTYPE_BF16);
}

Test(sim, gather_refuses_bad_ids_like_the_cpu)
{
    need_simulation();
    float table[4] = {1, 2, 3, 4};
    int64_t ids[3] = {0, 4, 1};
    fs_table_view_t v = {.dtype = FS_DTYPE_F32, .num_rows = 4, .dim = 1, .row_bytes = 4, .num_tiers = 1};
    v.tier[0] = (fs_tier_ref_t){FS_TIER_DEVICE, 0, to_device(0, table, sizeof table), 4};
    void *dev_ids = to_device(0, ids, sizeof ids), *out;
    fs_error_t err = {0};
    cr_assert_eq(fs_cuda_alloc_device(0, 64, &out, &err), FS_OK);
    cr_assert_eq(fs_gather_cuda(0, &v, dev_ids, 3, FS_DTYPE_F32, out, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "id 4 at position 1"), "%s", err.msg);
    fs_cuda_free_device(dev_ids), fs_cuda_free_device(out), fs_cuda_free_device((void *)v.tier[0].base);
}

/* A small random CSR (int32 indices, weights), some nodes without edges. */
typedef struct {
    int64_t n, *indptr;
    int32_t *indices;
    float *weights;
} csr_t;

static csr_t make_csr(int64_t n)
{
    csr_t g = {.n = n, .indptr = malloc((size_t)(n + 1) * 8)};
    fs_rng_t r = fs_rng_make(7, 7);
    g.indptr[0] = 0;
    for (int64_t v = 0; v < n; v++) g.indptr[v + 1] = g.indptr[v] + (int64_t)fs_rng_below(&r, 25);
    g.indices = malloc((size_t)g.indptr[n] * 4 + 4);
    g.weights = malloc((size_t)g.indptr[n] * 4 + 4);
    for (int64_t e = 0; e < g.indptr[n]; e++)
        g.indices[e] = (int32_t)fs_rng_below(&r, (uint64_t)n), g.weights[e] = 0.5f + (float)(e % 7);
    return g;
}

static void results_equal(const fs_sample_result_t *x, const fs_sample_result_t *y, int hops, int64_t seeds)
{
    cr_assert_eq(x->num_nodes, y->num_nodes);
    cr_assert_arr_eq(x->nodes, y->nodes, sizeof(int64_t) * (size_t)x->num_nodes);
    cr_assert_arr_eq(x->seed_local, y->seed_local, sizeof(int64_t) * (size_t)seeds);
    for (int h = 0; h < hops; h++) {
        const fs_block_t *a = &x->block[h], *b = &y->block[h];
        cr_assert_eq(a->num_dst, b->num_dst, "hop %d", h);
        cr_assert_eq(a->num_edges, b->num_edges, "hop %d", h);
        size_t eb = sizeof(int64_t) * (size_t)a->num_edges;
        cr_assert_arr_eq(a->dst_offsets, b->dst_offsets, sizeof(int64_t) * (size_t)(a->num_dst + 1));
        cr_assert_arr_eq(a->edge_src, b->edge_src, eb);
        cr_assert_arr_eq(a->edge_dst, b->edge_dst, eb);
        cr_assert_eq(!a->edge_ids, !b->edge_ids);
        if (a->edge_ids) cr_assert_arr_eq(a->edge_ids, b->edge_ids, eb);
    }
}

Test(sim, sample_equals_the_cpu_sampler_and_refuses_what_the_gpu_refuses)
{
    need_simulation();
    csr_t c = make_csr(400);
    fs_csr_view_t host, dev;
    fs_csr_view_init(&host, c.n, c.indptr, c.indices, FS_DTYPE_I32, c.weights);
    dev = host;
    dev.part[0].indptr = to_device(1, c.indptr, (size_t)(c.n + 1) * 8);
    dev.part[0].indices = to_device(1, c.indices, (size_t)c.indptr[c.n] * 4);
    dev.part[0].weights = to_device(1, c.weights, (size_t)c.indptr[c.n] * 4);
    fs_sampler_t *a, *b;
    fs_error_t err = {0};
    cr_assert_eq(fs_sampler_create(&a, &err), FS_OK);
    cr_assert_eq(fs_sampler_create(&b, &err), FS_OK);
    int64_t seeds[64];
    for (int i = 0; i < 64; i++) seeds[i] = (i * 37) % c.n;
    seeds[63] = seeds[0]; /* a repeated seed */
    fs_sample_req_t reqs[4] = {
        {.num_hops = 3, .fanout = {5, 3, 2}, .seed = 3, .want_edge_ids = 1},
        {.num_hops = 2, .fanout = {10, 4}, .mode = {FS_SAMPLE_UNIFORM_REPLACE, FS_SAMPLE_UNIFORM}, .seed = 4},
        {.num_hops = 2, .fanout = {FS_FANOUT_ALL, 256}, .seed = 5, .want_edge_ids = 1},
        {.num_hops = 2, .fanout = {5, 256}, .mode = {FS_SAMPLE_WEIGHTED, FS_SAMPLE_WEIGHTED_REPLACE}, .seed = 6,
         .want_edge_ids = 1},
    };
    for (int q = 0; q < 4; q++) {
        fs_sample_result_t x, y;
        cr_assert_eq(fs_sample_cpu(a, &host, seeds, 64, &reqs[q], &x, NULL, &err), FS_OK, "%s", err.msg);
        cr_assert_eq(fs_sample_cuda(b, 1, &dev, seeds, 64, &reqs[q], &y, &err), FS_OK, "%s", err.msg);
        results_equal(&x, &y, reqs[q].num_hops, 64);
    }
    /* What the CPU engine takes and the CUDA engine does not: the same code. */
    fs_sample_req_t weighted = {.num_hops = 1, .fanout = {FS_FANOUT_ALL}, .mode = {FS_SAMPLE_WEIGHTED}, .seed = 1};
    fs_sample_req_t wide = {.num_hops = 1, .fanout = {257}, .seed = 1};
    fs_sample_result_t x, y;
    cr_assert_eq(fs_sample_cpu(a, &host, seeds, 64, &weighted, &x, NULL, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_sample_cuda(b, 0, &dev, seeds, 64, &weighted, &y, &err), FS_ERR_UNSUPPORTED);
    cr_assert_not_null(strstr(err.msg, "weighted sampling with fanout -1"), "%s", err.msg);
    weighted.mode[0] = FS_SAMPLE_WEIGHTED_REPLACE;
    cr_assert_eq(fs_sample_cuda(b, 0, &dev, seeds, 64, &weighted, &y, &err), FS_ERR_UNSUPPORTED);
    cr_assert_eq(fs_sample_cpu(a, &host, seeds, 64, &wide, &x, NULL, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_sample_cuda(b, 0, &dev, seeds, 64, &wide, &y, &err), FS_ERR_UNSUPPORTED);
    cr_assert_eq(fs_sample_cuda(b, SIM_GPUS, &dev, seeds, 64, &reqs[0], &y, &err), FS_ERR_NO_DEVICE);
    int64_t bad_seed = c.n;
    cr_assert_eq(fs_sample_cuda(b, 0, &dev, &bad_seed, 1, &reqs[0], &y, &err), FS_ERR_INVALID_ARGUMENT);
    fs_sampler_destroy(a), fs_sampler_destroy(b);
    fs_cuda_free_device((void *)dev.part[0].indptr), fs_cuda_free_device((void *)dev.part[0].indices);
    fs_cuda_free_device((void *)dev.part[0].weights);
    free(c.indptr), free(c.indices), free(c.weights);
}
