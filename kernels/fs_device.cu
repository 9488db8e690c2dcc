// fs_device.cu — the CUDA backend of fs_device.h (fs_rt_*, fs_device_rt.h;
// fs_device.c owns the public names): device discovery, memory, IPC and
// broadcast through the CUDA runtime (linked statically; the driver is
// loaded at run time, so a host without one gets a clean "no device" answer
// instead of a failed program start). NCCL is optional and loaded with
// dlopen at the first broadcast: the build never needs it.
extern "C" {
#include "fs_device_rt.h"
}
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

extern "C" int fs_rt_built_with_cuda(void) { return 1; }

extern "C" fs_status_t fs_rt_devices_query(fs_devices_t *out, fs_error_t *err)
{
    memset(out, 0, sizeof *out);
    int n = 0;
    cudaError_t rc = cudaGetDeviceCount(&n);
    void *driver = rc == cudaErrorInsufficientDriver ? dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL) : NULL;
    if (rc == cudaErrorInsufficientDriver && !driver) /* the runtime says "insufficient" for "absent" too */
        return fs_error(err, FS_ERR_NO_DEVICE, "no CUDA driver: libcuda.so.1 cannot be loaded (%s)", dlerror());
    if (driver) dlclose(driver);
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

extern "C" fs_status_t fs_rt_alloc_pinned(size_t bytes, void **ptr, fs_error_t *err)
{
    cudaError_t rc = cudaHostAlloc(ptr, bytes ? bytes : 1, cudaHostAllocMapped | cudaHostAllocPortable);
    if (rc == cudaErrorInsufficientDriver || rc == cudaErrorNoDevice)
        return fs_error(err, FS_ERR_NO_DEVICE, "pinned memory: %s", cudaGetErrorString(rc));
    if (rc != cudaSuccess)
        return fs_error(err, FS_ERR_NOMEM, "cudaHostAlloc(%zu bytes): %s", bytes, cudaGetErrorString(rc));
    return FS_OK;
}

extern "C" fs_status_t fs_rt_alloc_device(int device, size_t bytes, void **ptr, fs_error_t *err)
{
    cudaError_t rc = cudaSetDevice(device);
    if (rc != cudaSuccess) return fs_error(err, FS_ERR_NO_DEVICE, "device %d: %s", device, cudaGetErrorString(rc));
    rc = cudaMalloc(ptr, bytes ? bytes : 1);
    if (rc != cudaSuccess)
        return fs_error(err, FS_ERR_RESOURCE, "cudaMalloc(%zu bytes) on device %d: %s", bytes, device,
                        cudaGetErrorString(rc));
    return FS_OK;
}

extern "C" fs_status_t fs_rt_copy(void *dst, const void *src, size_t bytes, fs_error_t *err)
{
    cudaError_t rc = cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
    if (rc != cudaSuccess) return fs_error(err, FS_ERR_IO, "cudaMemcpy(%zu bytes): %s", bytes, cudaGetErrorString(rc));
    return FS_OK;
}

extern "C" fs_status_t fs_rt_enable_peer(int device, int peer, fs_error_t *err)
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

extern "C" fs_status_t fs_rt_host_register(const void *ptr, size_t bytes, const void **dev_ptr, fs_error_t *err)
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

extern "C" void fs_rt_host_unregister(const void *ptr)
{
    if (ptr) cudaHostUnregister(const_cast<void *>(ptr));
}

extern "C" void fs_rt_free_pinned(void *ptr) { if (ptr) cudaFreeHost(ptr); }
extern "C" void fs_rt_free_device(void *ptr) { if (ptr) cudaFree(ptr); }

// ---- IPC ---------------------------------------------------------------------

static_assert(sizeof(cudaIpcMemHandle_t) <= FS_IPC_HANDLE_BYTES, "cudaIpcMemHandle_t fits fs_ipc_handle_t");

extern "C" fs_status_t fs_rt_ipc_export(const void *dev_base, fs_ipc_handle_t *out, fs_error_t *err)
{
    memset(out, 0, sizeof *out);
    cudaIpcMemHandle_t h;
    cudaError_t rc = cudaIpcGetMemHandle(&h, const_cast<void *>(dev_base));
    if (rc != cudaSuccess) {
        cudaGetLastError(); /* not sticky: clear it for the next call */
        fs_status_t code = rc == cudaErrorInvalidValue ? FS_ERR_INVALID_ARGUMENT
                           : rc == cudaErrorNoDevice || rc == cudaErrorInsufficientDriver ? FS_ERR_NO_DEVICE
                           : rc == cudaErrorNotSupported ? FS_ERR_UNSUPPORTED
                                                         : FS_ERR_UNAVAILABLE;
        return fs_error(err, code, "cudaIpcGetMemHandle(%p): %s", dev_base, cudaGetErrorString(rc));
    }
    memcpy(out->bytes, &h, sizeof h);
    return FS_OK;
}

extern "C" fs_status_t fs_rt_ipc_open(int device, const fs_ipc_handle_t *h, size_t bytes, void **ptr,
                                      fs_error_t *err)
{
    (void)bytes; /* CUDA maps the whole allocation */
    *ptr = NULL;
    cudaError_t rc = cudaSetDevice(device);
    if (rc != cudaSuccess) {
        cudaGetLastError();
        return fs_error(err, FS_ERR_NO_DEVICE, "IPC open: device %d: %s", device, cudaGetErrorString(rc));
    }
    cudaIpcMemHandle_t ch;
    memcpy(&ch, h->bytes, sizeof ch);
    void *p = NULL;
    rc = cudaIpcOpenMemHandle(&p, ch, cudaIpcMemLazyEnablePeerAccess);
    if (rc != cudaSuccess) {
        cudaGetLastError();
        /* A handle of this very process gets the driver's
         * CUDA_ERROR_INVALID_CONTEXT, cudaErrorDeviceUninitialized (201,
         * "invalid device context") in the runtime: the caller's mistake,
         * as in the simulation. */
        bool own = rc == cudaErrorDeviceUninitialized;
        return fs_error(err, own ? FS_ERR_INVALID_ARGUMENT : FS_ERR_UNAVAILABLE,
                        "cudaIpcOpenMemHandle on device %d: %s%s", device, cudaGetErrorString(rc),
                        own ? " (a process cannot open its own handles)" : "");
    }
    *ptr = p;
    return FS_OK;
}

extern "C" void fs_rt_ipc_close(void *ptr)
{
    if (ptr && cudaIpcCloseMemHandle(ptr) != cudaSuccess) cudaGetLastError();
}

// ---- broadcast: NCCL when it loads, else cudaMemcpyPeer ------------------------

namespace {

// The few NCCL declarations used (nccl.h is never included: the build does
// not need NCCL). ncclComm_t is an opaque pointer, ncclResult_t and
// ncclDataType_t are C enums (int-sized); ncclSuccess = 0, ncclInt8 = 0.
typedef struct fs_nccl_comm *nccl_comm_t;
typedef int nccl_result_t;
typedef int nccl_data_type_t;
const nccl_result_t NCCL_SUCCESS = 0;
const nccl_data_type_t NCCL_INT8 = 0;

struct Nccl {
    bool ok;
    nccl_result_t (*comm_init_all)(nccl_comm_t *comms, int n, const int *devices);
    nccl_result_t (*broadcast)(const void *send, void *recv, size_t count, nccl_data_type_t type, int root,
                               nccl_comm_t comm, cudaStream_t stream);
    nccl_result_t (*group_start)(void);
    nccl_result_t (*group_end)(void);
    nccl_result_t (*comm_destroy)(nccl_comm_t comm);
    const char *(*error_string)(nccl_result_t r);
};

Nccl nccl;
pthread_once_t nccl_once = PTHREAD_ONCE_INIT;

template <typename F> bool nccl_sym(void *lib, const char *name, F *fn)
{
    *fn = reinterpret_cast<F>(dlsym(lib, name));
    return *fn != nullptr;
}

void nccl_load(void)
{
    void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    bool ok = nccl_sym(lib, "ncclCommInitAll", &nccl.comm_init_all) &&
              nccl_sym(lib, "ncclBroadcast", &nccl.broadcast) &&
              nccl_sym(lib, "ncclGroupStart", &nccl.group_start) && nccl_sym(lib, "ncclGroupEnd", &nccl.group_end) &&
              nccl_sym(lib, "ncclCommDestroy", &nccl.comm_destroy) &&
              nccl_sym(lib, "ncclGetErrorString", &nccl.error_string);
    if (!ok) {
        dlclose(lib);
        return;
    }
    nccl.ok = true; /* the library stays loaded for the life of the process */
}

bool distinct(const int *devices, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (devices[i] == devices[j]) return false;
    return true;
}

// One stream per rank (blocking streams: they wait for the legacy default
// stream's work, such as a kernel that filled the root buffer). false when
// one could not be made; those made are in streams[], NULL elsewhere.
bool make_streams(const int *devices, int n, cudaStream_t *streams)
{
    for (int i = 0; i < n; i++)
        if (cudaSetDevice(devices[i]) != cudaSuccess || cudaStreamCreate(&streams[i]) != cudaSuccess) {
            cudaGetLastError();
            return false;
        }
    return true;
}

// Waits for and destroys the streams made; false if a wait failed.
bool drain_streams(const int *devices, int n, cudaStream_t *streams)
{
    bool ok = true;
    for (int i = 0; i < n; i++) {
        if (!streams[i]) continue;
        cudaSetDevice(devices[i]);
        if (cudaStreamSynchronize(streams[i]) != cudaSuccess) ok = false;
        cudaStreamDestroy(streams[i]);
    }
    if (!ok) cudaGetLastError();
    return ok;
}

// Every rank's part of one broadcast from rank 0, in one NCCL group. Each
// rank passes its own buffer as sendbuff (used on the root only, where it
// is in place).
nccl_result_t nccl_group_broadcast(void *const *bufs, int n, size_t bytes, nccl_comm_t *comms, cudaStream_t *streams)
{
    nccl_result_t r = nccl.group_start();
    if (r != NCCL_SUCCESS) return r;
    for (int i = 0; i < n && r == NCCL_SUCCESS; i++)
        r = nccl.broadcast(bufs[i], bufs[i], bytes, NCCL_INT8, 0, comms[i], streams[i]);
    nccl_result_t end = nccl.group_end(); /* always balances the start, even after a failed call */
    return r != NCCL_SUCCESS ? r : end;
}

// The NCCL broadcast: true when it ran and finished; false (nothing to
// undo: communicators and streams are released here) for the peer path,
// with NCCL's reason in why when it got as far as NCCL.
bool nccl_broadcast(const int *devices, void *const *bufs, int n, size_t bytes, char *why, size_t why_len)
{
    pthread_once(&nccl_once, nccl_load);
    if (!nccl.ok || !distinct(devices, n)) return false; /* NCCL wants one rank per GPU */
    nccl_comm_t comms[FS_MAX_DEVICES] = {};
    cudaStream_t streams[FS_MAX_DEVICES] = {};
    nccl_result_t r = nccl.comm_init_all(comms, n, devices);
    if (r != NCCL_SUCCESS) {
        snprintf(why, why_len, "ncclCommInitAll: %s", nccl.error_string(r));
        return false;
    }
    bool ok = make_streams(devices, n, streams);
    if (!ok) snprintf(why, why_len, "cudaStreamCreate failed");
    if (ok && (r = nccl_group_broadcast(bufs, n, bytes, comms, streams)) != NCCL_SUCCESS) {
        snprintf(why, why_len, "ncclBroadcast: %s", nccl.error_string(r));
        ok = false;
    }
    if (!drain_streams(devices, n, streams) && ok) {
        snprintf(why, why_len, "cudaStreamSynchronize after ncclBroadcast failed");
        ok = false;
    }
    for (int i = 0; i < n; i++) nccl.comm_destroy(comms[i]);
    return ok;
}

fs_status_t peer_broadcast(const int *devices, void *const *bufs, int n, size_t bytes, fs_error_t *err)
{
    for (int i = 1; i < n; i++) {
        if (bufs[i] == bufs[0]) continue;
        cudaError_t rc = cudaMemcpyPeer(bufs[i], devices[i], bufs[0], devices[0], bytes);
        if (rc != cudaSuccess) {
            cudaGetLastError();
            return fs_error(err, FS_ERR_IO, "broadcast: cudaMemcpyPeer(%zu bytes, device %d -> %d): %s", bytes,
                            devices[0], devices[i], cudaGetErrorString(rc));
        }
    }
    /* cudaMemcpyPeer may return before the copy is done: wait for every GPU involved. */
    for (int i = 0; i < n; i++) {
        cudaError_t rc = cudaSetDevice(devices[i]);
        if (rc == cudaSuccess) rc = cudaDeviceSynchronize();
        if (rc != cudaSuccess)
            return fs_error(err, FS_ERR_IO, "broadcast: waiting for device %d: %s", devices[i], cudaGetErrorString(rc));
    }
    return FS_OK;
}

} // namespace

extern "C" fs_status_t fs_rt_broadcast(const int *devices, void *const *bufs, int n, size_t bytes, const char **method,
                                       fs_error_t *err)
{
    int count = 0;
    cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess || count == 0) {
        cudaGetLastError();
        return fs_error(err, FS_ERR_NO_DEVICE, "broadcast: CUDA runtime: %s",
                        rc != cudaSuccess ? cudaGetErrorString(rc) : "no device");
    }
    for (int i = 0; i < n; i++)
        if (devices[i] < 0 || devices[i] >= count)
            return fs_error(err, FS_ERR_NO_DEVICE, "broadcast: no device %d (%d present)", devices[i], count);
    char why[256] = "";
    if (n >= 2 && bytes > 0 && nccl_broadcast(devices, bufs, n, bytes, why, sizeof why)) {
        if (method) *method = "nccl";
        return FS_OK;
    }
    fs_status_t st = peer_broadcast(devices, bufs, n, bytes, err);
    if (st != FS_OK && why[0]) fs_error_prefix(err, "after NCCL failed (%s)", why);
    if (st == FS_OK && method) *method = "peer";
    return st;
}
