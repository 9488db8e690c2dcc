/* fs_device_rt.h — the two implementations behind the public device entry
 * points (fs_device.h, fs_gather_cuda, fs_sample_cuda,
 * fs_typed_sample_cuda). Not a public interface.
 *
 * fs_device.c owns the public names and sends each call to one of:
 *   fs_rt_*   the backend of the build: the CUDA runtime (fs_device.cu,
 *             fs_gather.cu, fs_typed.cu) or, without CUDA,
 *             fs_nocuda.c,
 *             whose functions all answer FS_ERR_NO_DEVICE with the reason;
 *   fs_sim_*  the simulated GPUs of FEATSTORE_SIM_GPUS (fs_device_sim.c),
 *             used whenever fs_sim_count() > 0, in any build.
 * Both sides take arguments already checked by fs_device.c where the
 * checks are shared (broadcast's shape; a sampling request, within
 * FS_CUDA_SAMPLE_MAX_FANOUT and the CUDA samplers' modes), and
 * keep the public functions' contracts: same codes, same ownership. */
#ifndef FS_DEVICE_RT_H
#define FS_DEVICE_RT_H

#ifdef __cplusplus
extern "C" { /* the headers below are C, without guards of their own */
#endif

#include "fs_device.h"
#include "fs_gather.h"
#include "fs_sample.h"
#include "fs_typed.h"

/* The largest per-hop fanout the CUDA samplers take (FS_FANOUT_ALL aside;
 * the typed one: per edge type and hop). */
#define FS_CUDA_SAMPLE_MAX_FANOUT 256

/* ---- the backend of the build ---------------------------------------- */
int fs_rt_built_with_cuda(void);
fs_status_t fs_rt_devices_query(fs_devices_t *out, fs_error_t *err);
fs_status_t fs_rt_alloc_pinned(size_t bytes, void **ptr, fs_error_t *err);
fs_status_t fs_rt_alloc_device(int device, size_t bytes, void **ptr, fs_error_t *err);
fs_status_t fs_rt_copy(void *dst, const void *src, size_t bytes, fs_error_t *err);
fs_status_t fs_rt_enable_peer(int device, int peer, fs_error_t *err);
void fs_rt_free_pinned(void *ptr);
void fs_rt_free_device(void *ptr);
fs_status_t fs_rt_ipc_export(const void *dev_base, fs_ipc_handle_t *out, fs_error_t *err);
fs_status_t fs_rt_ipc_open(int device, const fs_ipc_handle_t *h, size_t bytes, void **ptr, fs_error_t *err);
void fs_rt_ipc_close(void *ptr);
fs_status_t fs_rt_broadcast(const int *devices, void *const *bufs, int n, size_t bytes, const char **method,
                            fs_error_t *err);
fs_status_t fs_rt_host_register(const void *ptr, size_t bytes, const void **dev_ptr, fs_error_t *err);
void fs_rt_host_unregister(const void *ptr);
fs_status_t fs_rt_gather(int device, const fs_table_view_t *t, const int64_t *ids, int64_t n, fs_dtype_t out_dtype,
                         void *out, fs_gather_counters_t *counters, fs_error_t *err);
fs_status_t fs_rt_typed_sample(fs_typed_sampler_t *s, int device, const fs_typed_view_t *g, const fs_typed_req_t *req,
                               const fs_typed_seeds_t *groups, int num_groups, const fs_typed_exclude_t *excl,
                               int64_t num_excl, fs_typed_result_t *res, fs_error_t *err);

/* ---- the simulated GPUs ----------------------------------------------- */
/* N of FEATSTORE_SIM_GPUS=N (1..FS_MAX_DEVICES), read once; 0 when unset
 * or invalid (then nothing is printed and the backend serves every call). */
int fs_sim_count(void);
fs_status_t fs_sim_devices_query(fs_devices_t *out, fs_error_t *err);
fs_status_t fs_sim_alloc_pinned(size_t bytes, void **ptr, fs_error_t *err);
fs_status_t fs_sim_alloc_device(int device, size_t bytes, void **ptr, fs_error_t *err);
fs_status_t fs_sim_copy(void *dst, const void *src, size_t bytes, fs_error_t *err);
fs_status_t fs_sim_enable_peer(int device, int peer, fs_error_t *err);
void fs_sim_free_pinned(void *ptr);
void fs_sim_free_device(void *ptr);
fs_status_t fs_sim_ipc_export(const void *dev_base, fs_ipc_handle_t *out, fs_error_t *err);
fs_status_t fs_sim_ipc_open(int device, const fs_ipc_handle_t *h, size_t bytes, void **ptr, fs_error_t *err);
void fs_sim_ipc_close(void *ptr);
fs_status_t fs_sim_broadcast(const int *devices, void *const *bufs, int n, size_t bytes, const char **method,
                             fs_error_t *err);
fs_status_t fs_sim_host_register(const void *ptr, size_t bytes, const void **dev_ptr, fs_error_t *err);
fs_status_t fs_sim_gather(int device, const fs_table_view_t *t, const int64_t *ids, int64_t n,
                          fs_dtype_t out_dtype, void *out, fs_gather_counters_t *counters, fs_error_t *err);
fs_status_t fs_sim_typed_sample(fs_typed_sampler_t *s, int device, const fs_typed_view_t *g,
                                const fs_typed_req_t *req, const fs_typed_seeds_t *groups, int num_groups,
                                const fs_typed_exclude_t *excl, int64_t num_excl, fs_typed_result_t *res,
                                fs_error_t *err);

#ifdef __cplusplus
}
#endif

#endif
