// fs_device.cu — device discovery through the CUDA runtime (linked
// statically; the driver is loaded at run time, so a host without one gets a
// clean "no device" answer instead of a failed program start).
extern "C" {
#include "fs_device.h"
}
#include <cuda_runtime.h>
#include <string.h>

extern "C" int fs_built_with_cuda(void) { return 1; }

extern "C" fs_status_t fs_devices_query(fs_devices_t *out, fs_error_t *err)
{
    memset(out, 0, sizeof *out);
    int n = 0;
    cudaError_t rc = cudaGetDeviceCount(&n);
    if (rc != cudaSuccess)
        return fs_error(err, FS_ERR_NO_DEVICE, "CUDA runtime: %s (%s)", cudaGetErrorName(rc),
                        cudaGetErrorString(rc));
    if (n == 0) return fs_error(err, FS_ERR_NO_DEVICE, "CUDA runtime reports no devices");
    if (n > FS_MAX_DEVICES) n = FS_MAX_DEVICES;
    out->count = n;
    for (int i = 0; i < n; i++) {
        cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
        fs_device_info_t *d = &out->dev[i];
        strncpy(d->name, p.name, sizeof d->name - 1);
        d->cc_major = p.major;
        d->cc_minor = p.minor;
        d->total_bytes = p.totalGlobalMem;
        if (cudaSetDevice(i) == cudaSuccess) cudaMemGetInfo(&d->free_bytes, &d->total_bytes);
        for (int j = 0; j < n; j++) {
            int ok = 0;
            if (i != j) cudaDeviceCanAccessPeer(&ok, i, j);
            out->peer[i][j] = (unsigned char)ok;
        }
    }
    return FS_OK;
}
