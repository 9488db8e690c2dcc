/* fs_device.c — the public device entry points: fs_device.h, fs_gather_cuda,
 * fs_sample_cuda and fs_typed_sample_cuda. Each one sends its call to the simulated GPUs when
 * FEATSTORE_SIM_GPUS is set (fs_sim_*, fs_device_sim.c), else to the build's
 * backend (fs_rt_*: the CUDA runtime, or fs_nocuda.c's "no device"); see
 * fs_device_rt.h. Argument checks that both sides share live here, so the
 * simulation refuses exactly what the device refuses. */
#include "fs_device_rt.h"

#include <stdio.h>

#include "fs_sample_internal.h"

static int simulated(void) { return fs_sim_count() > 0; }

int fs_built_with_cuda(void) { return fs_rt_built_with_cuda(); }

int fs_devices_simulated(void) { return fs_sim_count(); }

fs_status_t fs_devices_query(fs_devices_t *out, fs_error_t *err)
{
    return simulated() ? fs_sim_devices_query(out, err) : fs_rt_devices_query(out, err);
}

fs_status_t fs_cuda_alloc_pinned(size_t bytes, void **ptr, fs_error_t *err)
{
    return simulated() ? fs_sim_alloc_pinned(bytes, ptr, err) : fs_rt_alloc_pinned(bytes, ptr, err);
}

fs_status_t fs_cuda_alloc_device(int device, size_t bytes, void **ptr, fs_error_t *err)
{
    return simulated() ? fs_sim_alloc_device(device, bytes, ptr, err) : fs_rt_alloc_device(device, bytes, ptr, err);
}

fs_status_t fs_cuda_copy(void *dst, const void *src, size_t bytes, fs_error_t *err)
{
    return simulated() ? fs_sim_copy(dst, src, bytes, err) : fs_rt_copy(dst, src, bytes, err);
}

fs_status_t fs_cuda_enable_peer(int device, int peer, fs_error_t *err)
{
    return simulated() ? fs_sim_enable_peer(device, peer, err) : fs_rt_enable_peer(device, peer, err);
}

void fs_cuda_free_pinned(void *ptr)
{
    if (!ptr) return;
    if (simulated()) fs_sim_free_pinned(ptr);
    else fs_rt_free_pinned(ptr);
}

void fs_cuda_free_device(void *ptr)
{
    if (!ptr) return;
    if (simulated()) fs_sim_free_device(ptr);
    else fs_rt_free_device(ptr);
}

fs_status_t fs_cuda_ipc_export(const void *dev_base, fs_ipc_handle_t *out, fs_error_t *err)
{
    if (!dev_base || !out) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "IPC export: no allocation or no handle");
    return simulated() ? fs_sim_ipc_export(dev_base, out, err) : fs_rt_ipc_export(dev_base, out, err);
}

fs_status_t fs_cuda_ipc_open(int device, const fs_ipc_handle_t *h, size_t bytes, void **ptr, fs_error_t *err)
{
    if (!ptr || !h) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "IPC open: no handle or no result pointer");
    *ptr = NULL;
    return simulated() ? fs_sim_ipc_open(device, h, bytes, ptr, err) : fs_rt_ipc_open(device, h, bytes, ptr, err);
}

void fs_cuda_ipc_close(void *ptr)
{
    if (!ptr) return;
    if (simulated()) fs_sim_ipc_close(ptr);
    else fs_rt_ipc_close(ptr);
}

/* The broadcast's shape: 1..FS_MAX_DEVICES buffers, none NULL. */
static fs_status_t broadcast_check(const int *devices, void *const *bufs, int n, fs_error_t *err)
{
    if (n < 1 || n > FS_MAX_DEVICES || !devices || !bufs)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "broadcast: %d buffers (1..%d, each with its device)", n,
                        FS_MAX_DEVICES);
    for (int i = 0; i < n; i++)
        if (!bufs[i]) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "broadcast: buffer %d is NULL", i);
    return FS_OK;
}

fs_status_t fs_cuda_broadcast(const int *devices, void *const *bufs, int n, size_t bytes, const char **method,
                              fs_error_t *err)
{
    if (method) *method = NULL;
    fs_status_t st = broadcast_check(devices, bufs, n, err);
    if (st != FS_OK) return st;
    return simulated() ? fs_sim_broadcast(devices, bufs, n, bytes, method, err)
                       : fs_rt_broadcast(devices, bufs, n, bytes, method, err);
}

fs_status_t fs_cuda_host_register(const void *ptr, size_t bytes, const void **dev_ptr, fs_error_t *err)
{
    return simulated() ? fs_sim_host_register(ptr, bytes, dev_ptr, err) : fs_rt_host_register(ptr, bytes, dev_ptr, err);
}

void fs_cuda_host_unregister(const void *ptr)
{
    if (ptr && !simulated()) fs_rt_host_unregister(ptr); /* simulated: nothing was registered */
}

fs_status_t fs_gather_cuda(int device, const fs_table_view_t *t, const int64_t *ids, int64_t n,
                           fs_dtype_t out_dtype, void *out, fs_gather_counters_t *counters, fs_error_t *err)
{
    if (t->remote) /* rows held elsewhere come to the host first */
        return fs_error(err, FS_ERR_UNSUPPORTED, "gather: a remote table is gathered on the host, not on GPU %d",
                        device);
    return simulated() ? fs_sim_gather(device, t, ids, n, out_dtype, out, counters, err)
                       : fs_rt_gather(device, t, ids, n, out_dtype, out, counters, err);
}

/* What the CUDA sampler takes, on a GPU or simulated: fs_sample_check, then
 * fanouts up to FS_CUDA_SAMPLE_MAX_FANOUT and no weighted hop of fanout -1
 * (FS_ERR_UNSUPPORTED otherwise). */
static fs_status_t cuda_sample_check(const fs_csr_view_t *g, const int64_t *seeds, int64_t n,
                                     const fs_sample_req_t *req, fs_error_t *err)
{
    fs_status_t st = fs_sample_check(g, seeds, n, req, err);
    if (st != FS_OK) return st;
    for (int h = 0; h < req->num_hops; h++) {
        if (req->mode[h] >= FS_SAMPLE_WEIGHTED && req->fanout[h] == FS_FANOUT_ALL)
            return fs_error(err, FS_ERR_UNSUPPORTED, "sample (CUDA): hop %d: weighted sampling with fanout -1 (all) "
                            "runs on the CPU engine", h);
        if (req->fanout[h] > FS_CUDA_SAMPLE_MAX_FANOUT)
            return fs_error(err, FS_ERR_UNSUPPORTED, "sample (CUDA): fanout %d is over %d", req->fanout[h],
                            FS_CUDA_SAMPLE_MAX_FANOUT);
    }
    return FS_OK;
}

fs_status_t fs_sample_cuda(fs_sampler_t *s, int device, const fs_csr_view_t *g, const int64_t *seeds, int64_t n,
                           const fs_sample_req_t *req, fs_sample_result_t *res, fs_error_t *err)
{
    fs_status_t st = cuda_sample_check(g, seeds, n, req, err);
    if (st != FS_OK) return st;
    return fs_sample_typed(s, device, g, seeds, n, req, NULL, res, err); /* the typed engine's CUDA twin */
}

static const char *etype_label(const fs_typed_view_t *g, int e, char *buf, size_t len)
{
    if (g->etype[e].name) return g->etype[e].name;
    snprintf(buf, len, "edge type #%d", e);
    return buf;
}

/* What the CUDA typed sampler takes, on a GPU or simulated: fs_typed_check,
 * then per (edge type, hop) fanouts up to FS_CUDA_SAMPLE_MAX_FANOUT and no
 * weighted fanout -1 (FS_ERR_UNSUPPORTED otherwise): a row's Floyd and
 * weighted picks live in per-thread arrays of the fanout (fs_typed.cu). */
static fs_status_t cuda_typed_check(const fs_typed_view_t *g, const fs_typed_req_t *req,
                                    const fs_typed_seeds_t *groups, int num_groups, const fs_typed_exclude_t *excl,
                                    int64_t num_excl, fs_error_t *err)
{
    fs_status_t st = fs_typed_check(g, req, groups, num_groups, excl, num_excl, err);
    if (st != FS_OK) return st;
    if (g->remote_time) /* its seeds' times are read on the host, by the CPU engine */
        return fs_error(err, FS_ERR_UNSUPPORTED, "typed sample (CUDA): the nodes' timestamps are held elsewhere; "
                        "such a view is sampled on the CPU engine");
    char nb[64];
    for (int h = 0; h < req->num_hops; h++)
        for (int e = 0; e < g->num_edge_types; e++) {
            int k = req->fanout[e * req->num_hops + h];
            if (req->mode[h] >= FS_SAMPLE_WEIGHTED && k == FS_FANOUT_ALL)
                return fs_error(err, FS_ERR_UNSUPPORTED, "typed sample (CUDA): %s hop %d: weighted sampling with "
                                "fanout -1 (all) runs on the CPU engine", etype_label(g, e, nb, sizeof nb), h);
            if (k > FS_CUDA_SAMPLE_MAX_FANOUT)
                return fs_error(err, FS_ERR_UNSUPPORTED, "typed sample (CUDA): %s hop %d: fanout %d is over %d",
                                etype_label(g, e, nb, sizeof nb), h, k, FS_CUDA_SAMPLE_MAX_FANOUT);
        }
    return FS_OK;
}

fs_status_t fs_typed_sample_cuda(fs_typed_sampler_t *s, int device, const fs_typed_view_t *g,
                                 const fs_typed_req_t *req, const fs_typed_seeds_t *groups, int num_groups,
                                 const fs_typed_exclude_t *excl, int64_t num_excl, fs_typed_result_t *res,
                                 fs_error_t *err)
{
    fs_status_t st = cuda_typed_check(g, req, groups, num_groups, excl, num_excl, err);
    if (st != FS_OK) return st;
    return simulated() ? fs_sim_typed_sample(s, device, g, req, groups, num_groups, excl, num_excl, res, err)
                       : fs_rt_typed_sample(s, device, g, req, groups, num_groups, excl, num_excl, res, err);
}
