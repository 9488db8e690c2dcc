/* fs_device.h — what GPUs this process can use, or why it can use none.
 *
 * Built with CUDA, fs_devices_query() asks the runtime (static cudart: a
 * machine without a driver still starts and gets FS_ERR_NO_DEVICE with the
 * runtime's reason). Built without CUDA it always answers FS_ERR_NO_DEVICE.
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
