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

extern "C" fs_status_t fs_cuda_alloc_pinned(size_t bytes, void **ptr, fs_error_t *err)
{
    cudaError_t rc = cudaHostAlloc(ptr, bytes ? bytes : 1, cudaHostAllocMapped | cudaHostAllocPortable);
    if (rc == cudaErrorInsufficientDriver || rc == cudaErrorNoDevice)
        return fs_error(err, FS_ERR_NO_DEVICE, "pinned memory: %s", cudaGetErrorString(rc));
    if (rc != cudaSuccess)
        return fs_error(err, FS_ERR_NOMEM, "cudaHostAlloc(%zu bytes): %s", bytes, cudaGetErrorString(rc));
    return FS_OK;
}

extern "C" fs_status_t fs_cuda_alloc_device(int device, size_t bytes, void **ptr, fs_error_t *err)
{
    cudaError_t rc = cudaSetDevice(device);
    if (rc != cudaSuccess) return fs_error(err, FS_ERR_NO_DEVICE, "device %d: %s", device, cudaGetErrorString(rc));
    rc = cudaMalloc(ptr, bytes ? bytes : 1);
    if (rc != cudaSuccess)
        return fs_error(err, FS_ERR_RESOURCE, "cudaMalloc(%zu bytes) on device %d: %s", bytes, device,
                        cudaGetErrorString(rc));
    return FS_OK;
}

extern "C" fs_status_t fs_cuda_copy(void *dst, const void *src, size_t bytes, fs_error_t *err)
{
    cudaError_t rc = cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
    if (rc != cudaSuccess) return fs_error(err, FS_ERR_IO, "cudaMemcpy(%zu bytes): %s", bytes, cudaGetErrorString(rc));
    return FS_OK;
}

extern "C" fs_status_t fs_cuda_enable_peer(int device, int peer, fs_error_t *err)
{
    cudaError_t rc = cudaSetDevice(device);
    if (rc == cudaSuccess) rc = cudaDeviceEnablePeerAccess(peer, 0);
    if (rc == cudaErrorPeerAccessAlreadyEnabled) {
        cudaGetLastError();
        return FS_OK;
    }
    if (rc != cudaSuccess)
        return fs_error(err, FS_ERR_NO_DEVICE, "peer access %d -> %d: %s", device, peer, cudaGetErrorString(rc));
    return FS_OK;
}

extern "C" fs_status_t fs_cuda_host_register(const void *ptr, size_t bytes, const void **dev_ptr, fs_error_t *err)
{
    *dev_ptr = NULL;
    int n = 0;
    cudaError_t rc = cudaGetDeviceCount(&n);
    if (rc != cudaSuccess || n == 0)
        return fs_error(err, FS_ERR_NO_DEVICE, "CUDA runtime: %s", rc != cudaSuccess ? cudaGetErrorString(rc) : "no device");
    void *p = const_cast<void *>(ptr);
    rc = cudaHostRegister(p, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable | cudaHostRegisterReadOnly);
    if (rc != cudaSuccess) {
        cudaGetLastError(); /* not sticky: the process's CUDA state is unharmed */
        return fs_error(err, FS_ERR_UNSUPPORTED, "cudaHostRegister(%zu bytes, mapped, read-only): %s", bytes,
                        cudaGetErrorString(rc));
    }
    void *d = NULL;
    rc = cudaHostGetDevicePointer(&d, p, 0);
    if (rc != cudaSuccess) {
        cudaHostUnregister(p);
        cudaGetLastError();
        return fs_error(err, FS_ERR_UNSUPPORTED, "cudaHostGetDevicePointer: %s", cudaGetErrorString(rc));
    }
    *dev_ptr = d;
    return FS_OK;
}

extern "C" void fs_cuda_host_unregister(const void *ptr)
{
    if (ptr) cudaHostUnregister(const_cast<void *>(ptr));
}

extern "C" void fs_cuda_free_pinned(void *ptr) { if (ptr) cudaFreeHost(ptr); }
extern "C" void fs_cuda_free_device(void *ptr) { if (ptr) cudaFree(ptr); }
