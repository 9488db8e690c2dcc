/* test_cuda.c — the CUDA engines against their CPU twins, bit for bit, when
 * a GPU is present; otherwise the GPU tests skip and only the clean
 * "no device" answers are checked (that part runs in CI). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fs_device.h"
#include "fs_gather.h"
#include "fs_rng.h"
#include "fs_pool.h"
#include "fs_sample.h"
#include "fs_typed.h"
#include "gen.h"
#include "dataset.h"
#include "test_util.h"
#include "gpu_skip.h"

/* have_gpu and the skip hook: gpu_skip.h. ctest also runs test_cuda as
 * test_cuda_no_device, the "no device" answers CI can check. */

static int gpu_or_skip(void)
{
    fs_error_t err = {0};
    if (!have_gpu(&err)) cr_skip_test("no CUDA device: %s", err.msg);
    return 0;
}

static void *to_device(const void *host, size_t bytes)
{
    void *p;
    fs_error_t err = {0};
    cr_assert_eq(fs_cuda_alloc_device(0, bytes, &p, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_cuda_copy(p, host, bytes, &err), FS_OK, "%s", err.msg);
    return p;
}

Test(cuda, without_a_device_the_answer_is_no_device)
{
    fs_devices_t d;
    if (fs_devices_simulated() > 0)
        cr_skip_test("simulated GPUs answer instead (FEATSTORE_SIM_GPUS): see test_device_sim");
    if (fs_devices_query(&d, NULL) == FS_OK) cr_skip_test("a GPU is present");
    fs_table_view_t v = {.dtype = FS_DTYPE_F32, .num_rows = 1, .dim = 1, .row_bytes = 4, .num_tiers = 1};
    int64_t id = 0;
    float out;
    fs_error_t err = {0};
    cr_assert_eq(fs_gather_cuda(0, &v, &id, 1, FS_DTYPE_F32, &out, NULL, &err), FS_ERR_NO_DEVICE);
    cr_assert_neq(strlen(err.msg), 0);
    void *p;
    cr_assert_eq(fs_cuda_alloc_device(0, 64, &p, &err), FS_ERR_NO_DEVICE);
    cr_assert_eq(fs_cuda_alloc_pinned(64, &p, &err), FS_ERR_NO_DEVICE);
    const void *dev = &d;
    cr_assert_eq(fs_cuda_host_register(&d, sizeof d, &dev, &err), FS_ERR_NO_DEVICE);
    cr_assert_null(dev, "no device pointer is made up");
    fs_cuda_host_unregister(&d); /* a no-op, never a crash */
    fs_ipc_handle_t h = {0};
    cr_assert_eq(fs_cuda_ipc_export(&d, &h, &err), FS_ERR_NO_DEVICE, "%s", err.msg);
    p = &d;
    cr_assert_eq(fs_cuda_ipc_open(0, &h, 64, &p, &err), FS_ERR_NO_DEVICE, "%s", err.msg);
    cr_assert_null(p, "no mapping is made up");
    fs_cuda_ipc_close(&d); /* a no-op, never a crash */
    int devices[2] = {0, 1};
    void *bufs[2] = {&d, &h};
    const char *method = "unset";
    cr_assert_eq(fs_cuda_broadcast(devices, bufs, 2, 8, &method, &err), FS_ERR_NO_DEVICE, "%s", err.msg);
    cr_assert_null(method);
}

/* The typed sampler's CUDA entry point too: a valid request gets
 * FS_ERR_NO_DEVICE with the reason, never a CPU answer in disguise. */
Test(cuda, without_a_device_typed_sampling_is_no_device)
{
    fs_devices_t d;
    if (fs_devices_simulated() > 0)
        cr_skip_test("simulated GPUs answer instead (FEATSTORE_SIM_GPUS): see test_typed_cuda_sim");
    if (fs_devices_query(&d, NULL) == FS_OK) cr_skip_test("a GPU is present");
    int64_t count = 2, indptr[3] = {0, 1, 2}, ids[1] = {0};
    int32_t indices[2] = {1, 0};
    int fanout[1] = {1};
    fs_typed_etype_t et = {.src_type = 0, .dst_type = 0, .num_edges = 2, .indptr = indptr, .indices = indices,
                           .index_dtype = FS_DTYPE_I32, .reverse = -1};
    fs_typed_view_t g = {.num_node_types = 1, .count = &count, .num_edge_types = 1, .etype = &et};
    fs_typed_req_t req = {.num_hops = 1, .fanout = fanout, .seed = 1};
    fs_typed_seeds_t seeds = {.type = 0, .count = 1, .ids = ids};
    fs_typed_sampler_t *s;
    fs_typed_result_t res;
    fs_error_t err = {0};
    cr_assert_eq(fs_typed_sampler_create(&s, &err), FS_OK);
    cr_assert_eq(fs_typed_sample_cuda(s, 0, &g, &req, &seeds, 1, NULL, 0, &res, &err), FS_ERR_NO_DEVICE, "%s",
                 err.msg);
    cr_assert_neq(strlen(err.msg), 0);
    fs_typed_sampler_destroy(s);
}

/* Gathers n random rows on the GPU and on the CPU; compares the bytes.
 * codec FS_CODEC_INT8: dim is the stored one (scale, bias, codes), and
 * every row gets a finite scale and bias, so both sides decode numbers. */
static void gather_coded(fs_dtype_t dt, fs_codec_t codec, int64_t rows, int64_t dim, fs_dtype_t out_dt, int routed)
{
    size_t esz = fs_dtype_size(dt), rb = (size_t)dim * esz;
    char *host = malloc((size_t)rows * rb);
    fs_rng_t r = fs_rng_make(5, 5);
    for (size_t i = 0; i + 1 < (size_t)rows * rb; i += 2) *(uint16_t *)(host + i) = (uint16_t)(fs_rng_next(&r) & 0x7bff);
    for (int64_t v = 0; codec == FS_CODEC_INT8 && v < rows; v++) {
        float head[2] = {(float)(fs_rng_next(&r) >> 40) / 1e9f, (float)(fs_rng_next(&r) >> 40) / 1e6f - 8.0f};
        memcpy(host + (size_t)v * rb, head, sizeof head);
    }
    int64_t n = 10007, *ids = malloc((size_t)n * 8);
    for (int64_t i = 0; i < n; i++) ids[i] = (int64_t)fs_rng_below(&r, (uint64_t)rows);
    fs_table_view_t cpu = {.dtype = dt, .num_rows = rows, .dim = dim, .row_bytes = rb, .num_tiers = 1, .codec = codec};
    cpu.tier[0] = (fs_tier_ref_t){FS_TIER_HOST, -1, host, rows};
    fs_conv_t conv;
    size_t out_row;
    fs_error_t cerr = {0};
    cr_assert_eq(fs_gather_conv(&cpu, out_dt, &conv, &out_row, &cerr), FS_OK, "%s", cerr.msg);
    fs_table_view_t gpu = cpu;
    fs_error_t err = {0};
    void *pinned = NULL, *dev_half = NULL, *dev_route = NULL;
    if (routed) { /* tier 0 pinned host (mapped), tier 1 device memory holding even rows */
        cr_assert_eq(fs_cuda_alloc_pinned((size_t)rows * rb, &pinned, &err), FS_OK, "%s", err.msg);
        memcpy(pinned, host, (size_t)rows * rb);
        char *half = malloc((size_t)rows * rb);
        uint64_t *route = malloc((size_t)rows * 8);
        int64_t k = 0;
        for (int64_t v = 0; v < rows; v++) {
            if (v % 2) { route[v] = FS_ROUTE(0, v); continue; }
            memcpy(half + k * rb, host + v * rb, rb);
            route[v] = FS_ROUTE(1, k++);
        }
        dev_half = to_device(half, (size_t)k * rb);
        dev_route = to_device(route, (size_t)rows * 8);
        gpu.num_tiers = 2;
        gpu.tier[0] = (fs_tier_ref_t){FS_TIER_PINNED, -1, pinned, rows};
        gpu.tier[1] = (fs_tier_ref_t){FS_TIER_DEVICE, 0, dev_half, k};
        gpu.route = dev_route;
        free(half), free(route);
    } else {
        gpu.tier[0].base = to_device(host, (size_t)rows * rb);
        gpu.tier[0].kind = FS_TIER_DEVICE;
    }
    void *dev_ids = to_device(ids, (size_t)n * 8), *dev_out;
    cr_assert_eq(fs_cuda_alloc_device(0, (size_t)n * out_row, &dev_out, &err), FS_OK);
    char *want = malloc((size_t)n * out_row), *got = malloc((size_t)n * out_row);
    fs_gather_counters_t c = {0};
    cr_assert_eq(fs_gather_cpu(&cpu, ids, n, out_dt, want, NULL, NULL, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_gather_cuda(0, &gpu, dev_ids, n, out_dt, dev_out, &c, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_cuda_copy(got, dev_out, (size_t)n * out_row, &err), FS_OK);
    cr_assert_arr_eq(got, want, (size_t)n * out_row, "%s (codec %s) dim %lld routed %d", fs_dtype_name(dt),
                     fs_codec_name(codec), (long long)dim, routed);
    cr_assert_eq(c.rows[0] + c.rows[1], (uint64_t)n);
    fs_cuda_free_device(dev_ids), fs_cuda_free_device(dev_out), fs_cuda_free_device(dev_half);
    fs_cuda_free_device(dev_route);
    if (!routed) fs_cuda_free_device((void *)gpu.tier[0].base);
    fs_cuda_free_pinned(pinned);
    free(host), free(ids), free(want), free(got);
}

static void gather_both(fs_dtype_t dt, int64_t rows, int64_t dim, fs_dtype_t out_dt, int routed)
{
    gather_coded(dt, FS_CODEC_NONE, rows, dim, out_dt, routed);
}

Test(cuda, gather_matches_cpu)
{
    gpu_or_skip();
    gather_both(FS_DTYPE_F32, 50000, 128, FS_DTYPE_F32, 0); /* 16-byte vector path */
    gather_both(FS_DTYPE_F32, 50000, 37, FS_DTYPE_F32, 0);  /* word path */
    gather_both(FS_DTYPE_F16, 50000, 128, FS_DTYPE_F32, 0);
    gather_both(FS_DTYPE_BF16, 50000, 64, FS_DTYPE_F32, 0);
    gather_both(FS_DTYPE_F16, 50000, 30, FS_DTYPE_F32, 0);
    gather_both(FS_DTYPE_F32, 50000, 128, FS_DTYPE_F32, 1); /* pinned + device tiers via UVA */
}

/* int8 rows (scale, bias, codes) decoded by the kernel equal the CPU
 * twin's float32, bit for bit: aligned rows, odd-length ones (scale and
 * bias unaligned), across tiers; and the stored form passes through. */
Test(cuda, int8_gather_decodes_as_the_cpu_twin)
{
    gpu_or_skip();
    gather_coded(FS_DTYPE_I8, FS_CODEC_INT8, 50000, 128 + 8, FS_DTYPE_F32, 0);
    gather_coded(FS_DTYPE_I8, FS_CODEC_INT8, 50000, 37 + 8, FS_DTYPE_F32, 0);
    gather_coded(FS_DTYPE_I8, FS_CODEC_INT8, 50000, 1433 + 8, FS_DTYPE_F32, 1);
    gather_coded(FS_DTYPE_I8, FS_CODEC_INT8, 50000, 100 + 8, FS_DTYPE_I8, 0);
}

/* The host tier as the server has it: an ordinary read-only mapping,
 * registered in place and read by the kernel over UVA, no copy. */
Test(cuda, gather_reads_registered_host_memory_in_place)
{
    gpu_or_skip();
    int64_t rows = 30000, dim = 64, n = 8191;
    size_t rb = (size_t)dim * 4, bytes = (size_t)rows * rb;
    float *host = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(host, MAP_FAILED);
    fs_rng_t r = fs_rng_make(9, 9);
    for (size_t i = 0; i < (size_t)rows * (size_t)dim; i++) host[i] = (float)(fs_rng_next(&r) >> 40);
    cr_assert_eq(mprotect(host, bytes, PROT_READ), 0);
    int64_t *ids = malloc((size_t)n * 8);
    for (int64_t i = 0; i < n; i++) ids[i] = (int64_t)fs_rng_below(&r, (uint64_t)rows);
    const void *dev = NULL;
    fs_error_t err = {0};
    fs_status_t st = fs_cuda_host_register(host, bytes, &dev, &err);
    if (st == FS_ERR_UNSUPPORTED) cr_skip_test("this driver does not register read-only host memory: %s", err.msg);
    cr_assert_eq(st, FS_OK, "%s", err.msg);
    fs_table_view_t cpu = {.dtype = FS_DTYPE_F32, .num_rows = rows, .dim = dim, .row_bytes = rb, .num_tiers = 1};
    cpu.tier[0] = (fs_tier_ref_t){FS_TIER_HOST, -1, host, rows};
    fs_table_view_t gpu = cpu;
    gpu.tier[0] = (fs_tier_ref_t){FS_TIER_PINNED, -1, dev, rows};
    void *dev_ids = to_device(ids, (size_t)n * 8), *dev_out;
    cr_assert_eq(fs_cuda_alloc_device(0, (size_t)n * rb, &dev_out, &err), FS_OK, "%s", err.msg);
    char *want = malloc((size_t)n * rb), *got = malloc((size_t)n * rb);
    cr_assert_eq(fs_gather_cpu(&cpu, ids, n, FS_DTYPE_F32, want, NULL, NULL, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_gather_cuda(0, &gpu, dev_ids, n, FS_DTYPE_F32, dev_out, NULL, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_cuda_copy(got, dev_out, (size_t)n * rb, &err), FS_OK, "%s", err.msg);
    cr_assert_arr_eq(got, want, (size_t)n * rb, "rows read over UVA differ from the CPU gather's");
    fs_cuda_host_unregister(host);
    fs_cuda_free_device(dev_ids), fs_cuda_free_device(dev_out);
    munmap(host, bytes);
    free(ids), free(want), free(got);
}

Test(cuda, gather_rejects_bad_ids)
{
    gpu_or_skip();
    float table[4] = {1, 2, 3, 4};
    int64_t ids[3] = {0, 4, 1};
    fs_table_view_t v = {.dtype = FS_DTYPE_F32, .num_rows = 4, .dim = 1, .row_bytes = 4, .num_tiers = 1};
    v.tier[0] = (fs_tier_ref_t){FS_TIER_DEVICE, 0, to_device(table, sizeof table), 4};
    void *dev_ids = to_device(ids, sizeof ids), *out;
    fs_error_t err = {0};
    cr_assert_eq(fs_cuda_alloc_device(0, 64, &out, &err), FS_OK);
    cr_assert_eq(fs_gather_cuda(0, &v, dev_ids, 3, FS_DTYPE_F32, out, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "id 4 at position 1"), "%s", err.msg);
}

Test(cuda, sample_matches_cpu, .timeout = 120)
{
    gpu_or_skip();
    char *dir = tu_mkdtemp(), *out = tu_path(dir, "g");
    fs_rmat_opts_t o;
    fs_rmat_defaults(&o);
    o.out_dir = out, o.scale = 14, o.edge_factor = 8, o.dim = 0, o.edges.symmetrize = 1;
    fs_error_t err = {0};
    cr_assert_eq(fs_gen_rmat(&o, &err), FS_OK, "%s", err.msg);
    fs_dataset_t *ds;
    cr_assert_eq(fs_dataset_open(out, 0, 1, &ds, &err), FS_OK);
    fs_csr_view_t host, dev;
    /* Weights from a hash of the edge: spread over six decades, one in
     * sixteen zero (never picked) — the cases the weighted picks branch on. */
    float *w = malloc((size_t)ds->num_edges * sizeof *w);
    for (int64_t e = 0; e < ds->num_edges; e++) {
        uint64_t h = fs_mix64((uint64_t)e);
        w[e] = (h & 15) == 0 ? 0.0f : (float)((double)(h >> 40) / (double)(1 << 24) * 1e3 + 1e-3);
    }
    fs_csr_view_init(&host, ds->num_nodes, ds->indptr, ds->indices, ds->index_dtype, w);
    dev = host;
    dev.part[0].indptr = to_device(ds->indptr, (size_t)(ds->num_nodes + 1) * 8);
    dev.part[0].indices = to_device(ds->indices, (size_t)ds->num_edges * fs_dtype_size(ds->index_dtype));
    dev.part[0].weights = to_device(w, (size_t)ds->num_edges * 4);
    fs_sampler_t *a, *b;
    fs_sampler_create(&a, &err);
    fs_sampler_create(&b, &err);
    int64_t seeds[1024];
    for (int i = 0; i < 1024; i++) seeds[i] = (i * 7919) % ds->num_nodes;
    /* Uniform, with replacement, and both weighted modes (their keys and
     * running sums must round alike on both processors: fs_sample_pick.h). */
    fs_sample_req_t reqs[4] = {{.num_hops = 3, .fanout = {15, 10, 5}, .seed = 3, .want_edge_ids = 1},
                               {.num_hops = 2, .fanout = {25, 10},
                                .mode = {FS_SAMPLE_UNIFORM_REPLACE, FS_SAMPLE_UNIFORM}, .seed = 4, .want_edge_ids = 1},
                               {.num_hops = 3, .fanout = {15, 10, 5},
                                .mode = {FS_SAMPLE_WEIGHTED, FS_SAMPLE_WEIGHTED, FS_SAMPLE_WEIGHTED}, .seed = 5,
                                .want_edge_ids = 1},
                               {.num_hops = 2, .fanout = {20, 256},
                                .mode = {FS_SAMPLE_WEIGHTED_REPLACE, FS_SAMPLE_WEIGHTED}, .seed = 6,
                                .want_edge_ids = 1}};
    fs_pool_t *pool; /* the CPU side alternates between one thread and a batch split over 3 (fs_chunked.h) */
    cr_assert_eq(fs_pool_create(3, &pool, &err), FS_OK);
    for (int q = 0; q < 4; q++) {
        fs_sample_result_t x, y;
        fs_sampler_set_pool(a, q % 2 ? pool : NULL);
        cr_assert_eq(fs_sample_cpu(a, &host, seeds, 1024, &reqs[q], &x, NULL, &err), FS_OK, "%s", err.msg);
        cr_assert_eq(fs_sample_cuda(b, 0, &dev, seeds, 1024, &reqs[q], &y, &err), FS_OK, "%s", err.msg);
        cr_assert_eq(x.num_nodes, y.num_nodes);
        cr_assert_arr_eq(x.nodes, y.nodes, sizeof(int64_t) * (size_t)x.num_nodes);
        cr_assert_arr_eq(x.seed_local, y.seed_local, sizeof(int64_t) * 1024);
        for (int h = 0; h < reqs[q].num_hops; h++) {
            cr_assert_eq(x.block[h].num_edges, y.block[h].num_edges);
            size_t eb = sizeof(int64_t) * (size_t)x.block[h].num_edges;
            cr_assert_arr_eq(x.block[h].dst_offsets, y.block[h].dst_offsets, sizeof(int64_t) * (size_t)(x.block[h].num_dst + 1));
            cr_assert_arr_eq(x.block[h].edge_src, y.block[h].edge_src, eb);
            cr_assert_arr_eq(x.block[h].edge_dst, y.block[h].edge_dst, eb);
            cr_assert_arr_eq(x.block[h].edge_ids, y.block[h].edge_ids, eb);
        }
    }
    fs_sampler_destroy(a), fs_sampler_destroy(b);
    fs_pool_destroy(pool);
    fs_cuda_free_device((void *)dev.part[0].indptr), fs_cuda_free_device((void *)dev.part[0].indices);
    fs_cuda_free_device((void *)dev.part[0].weights);
    free(w);
    fs_dataset_close(ds);
    tu_rm_rf(dir);
    free(dir), free(out);
}
