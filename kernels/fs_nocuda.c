/* fs_nocuda.c — the device backend of a build without CUDA (fs_device_rt.h).
 * Each entry answers FS_ERR_NO_DEVICE with the reason, so callers fall back
 * to the CPU twins with one code path for "no GPU here" whatever the cause.
 * (The simulated GPUs, fs_device_sim.c, work in this build too: fs_device.c
 * sends calls there instead when FEATSTORE_SIM_GPUS is set.) */
#include <string.h>

#include "fs_device_rt.h"

#define NO_CUDA "this build has no CUDA support (FS_WITH_CUDA=OFF or no nvcc at build time)"

int fs_rt_built_with_cuda(void) { return 0; }

fs_status_t fs_rt_devices_query(fs_devices_t *out, fs_error_t *err)
{
    memset(out, 0, sizeof *out);
    return fs_error(err, FS_ERR_NO_DEVICE, NO_CUDA);
}

fs_status_t fs_rt_gather(int device, const fs_table_view_t *t, const int64_t *ids, int64_t n, fs_dtype_t out_dtype,
                         void *out, fs_gather_counters_t *counters, fs_error_t *err)
{
    (void)device, (void)t, (void)ids, (void)n, (void)out_dtype, (void)out, (void)counters;
    return fs_error(err, FS_ERR_NO_DEVICE, NO_CUDA);
}

fs_status_t fs_rt_alloc_pinned(size_t bytes, void **ptr, fs_error_t *err)
{
    (void)bytes;
    *ptr = NULL;
    return fs_error(err, FS_ERR_NO_DEVICE, NO_CUDA);
}

fs_status_t fs_rt_alloc_device(int device, size_t bytes, void **ptr, fs_error_t *err)
{
    (void)device, (void)bytes;
    *ptr = NULL;
    return fs_error(err, FS_ERR_NO_DEVICE, NO_CUDA);
}

fs_status_t fs_rt_copy(void *dst, const void *src, size_t bytes, fs_error_t *err)
{
    (void)dst, (void)src, (void)bytes;
    return fs_error(err, FS_ERR_NO_DEVICE, NO_CUDA);
}

fs_status_t fs_rt_enable_peer(int device, int peer, fs_error_t *err)
{
    (void)device, (void)peer;
    return fs_error(err, FS_ERR_NO_DEVICE, NO_CUDA);
}

fs_status_t fs_rt_host_register(const void *ptr, size_t bytes, const void **dev_ptr, fs_error_t *err)
{
    (void)ptr, (void)bytes;
    *dev_ptr = NULL;
    return fs_error(err, FS_ERR_NO_DEVICE, NO_CUDA);
}

void fs_rt_host_unregister(const void *ptr) { (void)ptr; }

void fs_rt_free_pinned(void *ptr) { (void)ptr; }
void fs_rt_free_device(void *ptr) { (void)ptr; }

fs_status_t fs_rt_ipc_export(const void *dev_base, fs_ipc_handle_t *out, fs_error_t *err)
{
    (void)dev_base;
    memset(out, 0, sizeof *out);
    return fs_error(err, FS_ERR_NO_DEVICE, NO_CUDA);
}

fs_status_t fs_rt_ipc_open(int device, const fs_ipc_handle_t *h, size_t bytes, void **ptr, fs_error_t *err)
{
    (void)device, (void)h, (void)bytes;
    *ptr = NULL;
    return fs_error(err, FS_ERR_NO_DEVICE, NO_CUDA);
}

void fs_rt_ipc_close(void *ptr) { (void)ptr; }

fs_status_t fs_rt_broadcast(const int *devices, void *const *bufs, int n, size_t bytes, const char **method,
                            fs_error_t *err)
{
    (void)devices, (void)bufs, (void)n, (void)bytes, (void)method;
    return fs_error(err, FS_ERR_NO_DEVICE, NO_CUDA);
}

fs_status_t fs_rt_typed_sample(fs_typed_sampler_t *s, int device, const fs_typed_view_t *g, const fs_typed_req_t *req,
                               const fs_typed_seeds_t *groups, int num_groups, const fs_typed_exclude_t *excl,
                               int64_t num_excl, fs_typed_result_t *res, fs_error_t *err)
{
    (void)s, (void)device, (void)g, (void)req, (void)groups, (void)num_groups, (void)excl, (void)num_excl, (void)res;
    return fs_error(err, FS_ERR_NO_DEVICE, NO_CUDA);
}
