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

#endif
