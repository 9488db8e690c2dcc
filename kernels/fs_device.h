/* fs_device.h — what GPUs this process can use, or why it can use none.
 *
 * Built with CUDA, fs_devices_query() asks the runtime (static cudart: a
 * machine without a driver still starts and gets FS_ERR_NO_DEVICE with the
 * runtime's reason). Built without CUDA it always answers FS_ERR_NO_DEVICE.
 * Either way, FEATSTORE_SIM_GPUS=N answers for N simulated GPUs instead
 * (fs_devices_simulated below). fs_device.c dispatches; fs_device_rt.h.
 * Thread-safety: safe to call from any thread. */
#ifndef FS_DEVICE_H
#define FS_DEVICE_H

#include "fs_types.h"

#define FS_MAX_DEVICES 16

typedef struct {
    char name[128];
    int cc_major, cc_minor;
    size_t total_bytes, free_bytes;
} fs_device_info_t;

typedef struct {
    int count;
    fs_device_info_t dev[FS_MAX_DEVICES];
    unsigned char peer[FS_MAX_DEVICES][FS_MAX_DEVICES]; /* can i access j */
} fs_devices_t;

/* 1 if this build contains the CUDA kernels. */
int fs_built_with_cuda(void);

/* The simulated-GPU runtime: with FEATSTORE_SIM_GPUS=N (1..16) in the
 * environment (read once, at the first call of any function here), every
 * function in this header and fs_gather_cuda/fs_sample_cuda run on N
 * simulated GPUs instead of the CUDA runtime, in any build. Device memory
 * is host memory (a memfd per allocation), copies are memcpy, IPC handles
 * name the exporter's descriptor (opened through /proc/PID/fd, so exporter
 * and importer must be the same user), and the engines are the CPU twins.
 * It exists so that the device bookkeeping — one allocation per tier,
 * replica fills, IPC hand-off, device result slots — runs and is tested on
 * machines without a GPU; the kernels themselves are test_cuda's. With
 * FEATSTORE_SIM_HOST_REGISTER=refuse as well, fs_cuda_host_register fails
 * as a driver that refuses file-backed memory does. Returns N when active,
 * 0 otherwise. */
int fs_devices_simulated(void);

/* Fills *out. FS_ERR_NO_DEVICE (with the reason in err) when none is usable. */
fs_status_t fs_devices_query(fs_devices_t *out, fs_error_t *err);

/* Memory for the store's GPU tiers. Pinned memory is mapped and portable:
 * its host pointer is also its device (UVA) pointer on every GPU. All return
 * FS_ERR_NO_DEVICE without CUDA or without a GPU. */
fs_status_t fs_cuda_alloc_pinned(size_t bytes, void **ptr, fs_error_t *err);
fs_status_t fs_cuda_alloc_device(int device, size_t bytes, void **ptr, fs_error_t *err);
fs_status_t fs_cuda_copy(void *dst, const void *src, size_t bytes, fs_error_t *err); /* any direction */
fs_status_t fs_cuda_enable_peer(int device, int peer, fs_error_t *err);
void fs_cuda_free_pinned(void *ptr);
void fs_cuda_free_device(void *ptr);

/* CUDA IPC: a device allocation (the base address fs_cuda_alloc_device
 * returned) exported by one process and opened by another on the same
 * machine, which reads it as device memory of its own `device` (peer access
 * enabled lazily: cudaIpcMemLazyEnablePeerAccess). A process cannot open
 * its own handles (the CUDA runtime refuses; so does the simulation).
 * `bytes` is the allocation's length (the simulation maps that much; CUDA
 * ignores it). Close every opened handle before the exporter frees it: the
 * exporter must keep an exported allocation alive while importers use it. */
#define FS_IPC_HANDLE_BYTES 64
typedef struct {
    unsigned char bytes[FS_IPC_HANDLE_BYTES]; /* cudaIpcMemHandle_t, opaque */
} fs_ipc_handle_t;
fs_status_t fs_cuda_ipc_export(const void *dev_base, fs_ipc_handle_t *out, fs_error_t *err);
fs_status_t fs_cuda_ipc_open(int device, const fs_ipc_handle_t *h, size_t bytes, void **ptr, fs_error_t *err);
void fs_cuda_ipc_close(void *ptr);

/* Copies `bytes` from bufs[0] (on devices[0]) to bufs[1..n-1] (on
 * devices[1..n-1]), GPU to GPU: an NCCL broadcast when n >= 2 GPUs and
 * libnccl.so.2 can be loaded (dlopen: the build never needs NCCL), else
 * cudaMemcpyPeer from the root to each. *method (may be NULL) receives
 * "nccl", "peer" or "simulated". */
fs_status_t fs_cuda_broadcast(const int *devices, void *const *bufs, int n, size_t bytes, const char **method,
                              fs_error_t *err);

/* Host memory the process already has (a dataset's read-only mapping), made
 * readable by every GPU's kernels in place, over UVA: page-locked and
 * mapped, read-only (cudaHostRegisterReadOnly, so a PROT_READ mapping
 * qualifies). *dev_ptr is the address kernels use (on UVA systems, `ptr`
 * itself). FS_ERR_UNSUPPORTED when the driver refuses this memory (then a
 * pinned copy is the way: fs_cuda_alloc_pinned), FS_ERR_NO_DEVICE without
 * CUDA or a GPU. Undo with fs_cuda_host_unregister before unmapping. */
fs_status_t fs_cuda_host_register(const void *ptr, size_t bytes, const void **dev_ptr, fs_error_t *err);
void fs_cuda_host_unregister(const void *ptr);

#endif
