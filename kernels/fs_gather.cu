// fs_gather.cu — GPU gather over UVA pointers (XGNN-style one-sided access,
// docs/algorithms.md §5): each warp copies one row at a time, reading its tier through
// the pointer in the view (local device memory, a peer's memory over NVLink,
// or mapped pinned host memory over PCIe). Rows move in 16-byte vectors when
// every pointer and the row size allow it, else in 4-byte words.
extern "C" {
#include "fs_device_rt.h" /* this file is the backend's fs_rt_gather; fs_device.c owns fs_gather_cuda */
#include "fs_gather.h"
}
#include <cuda_runtime.h>
#include <stdint.h>

#define FS_MAX_DEVICES_GATHER 16

namespace {

struct Tiers {
    const char *base[FS_MAX_TIERS];
};

__device__ __forceinline__ float h2f(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0x1f) return __uint_as_float(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
        float v = (float)mant * 5.9604644775390625e-08f; /* 2^-24: exact subnormal */
        return sign ? -v : v;
    }
    return __uint_as_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

__device__ __forceinline__ float cvt(uint16_t v, int conv)
{
    return conv == FS_CONV_F16 ? h2f(v) : __uint_as_float((uint32_t)v << 16);
}

/* An int8 row (fs_codec.h): scale and bias, then the codes, decoded with
 * one rounding per operation (no FMA), as fs_int8_dequantize_row does.
 * Bytes are read one by one: a row of D + 8 bytes need not be aligned. */
__device__ __forceinline__ float load_f32(const char *p)
{
    uint32_t u = (uint32_t)(uint8_t)p[0] | (uint32_t)(uint8_t)p[1] << 8 | (uint32_t)(uint8_t)p[2] << 16 |
                 (uint32_t)(uint8_t)p[3] << 24;
    return __uint_as_float(u);
}

__device__ __forceinline__ void decode_int8_row(const char *src, int64_t dim, char *dst, int lane)
{
    const float scale = load_f32(src), bias = load_f32(src + 4);
    const int8_t *code = (const int8_t *)(src + FS_CODEC_INT8_HEAD);
    for (int64_t k = lane; k < dim; k += 32) {
        float v = __fadd_rn(__fmul_rn((float)code[k], scale), bias);
        uint32_t u = __float_as_uint(v);
        char *d = dst + 4 * k;
        if (((uintptr_t)d & 3) == 0) *(uint32_t *)d = u;
        else d[0] = (char)u, d[1] = (char)(u >> 8), d[2] = (char)(u >> 16), d[3] = (char)(u >> 24);
    }
}

template <int VEC>
__global__ void gather_kernel(Tiers tiers, const uint64_t *route, const int64_t *ids, int64_t n, int64_t num_rows,
                              size_t row_bytes, int64_t dim, int conv, char *out, size_t out_row,
                              unsigned long long *tier_rows, unsigned long long *first_bad)
{
    __shared__ unsigned long long block_rows[FS_MAX_TIERS];
    for (int k = threadIdx.x; k < FS_MAX_TIERS; k += blockDim.x) block_rows[k] = 0;
    __syncthreads();
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
    for (int64_t i = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); i < n; i += warps) {
        int64_t id = ids[i];
        if ((uint64_t)id >= (uint64_t)num_rows) {
            if (lane == 0) atomicMin(first_bad, (unsigned long long)i);
            continue;
        }
        int tier = 0;
        int64_t row = id;
        if (route) {
            uint64_t r = route[id];
            tier = (int)(r >> 48);
            row = (int64_t)(r & ((1ULL << 48) - 1));
        }
        if (lane == 0) atomicAdd(&block_rows[tier], 1ULL);
        const char *src = tiers.base[tier] + (size_t)row * row_bytes;
        char *dst = out + (size_t)i * out_row;
        if (conv == FS_CONV_COPY) {
            if (VEC == 16) {
                const int4 *s = (const int4 *)src;
                int4 *d = (int4 *)dst;
                for (size_t k = lane; k < row_bytes / 16; k += 32) d[k] = __ldg(s + k);
            } else if (VEC == 4) {
                const uint32_t *s = (const uint32_t *)src;
                uint32_t *d = (uint32_t *)dst;
                for (size_t k = lane; k < row_bytes / 4; k += 32) d[k] = s[k];
            } else {
                for (size_t k = lane; k < row_bytes; k += 32) dst[k] = src[k];
            }
        } else if (conv == FS_CONV_INT8) {
            decode_int8_row(src, dim - FS_CODEC_INT8_HEAD, dst, lane);
        } else {
            const uint16_t *s = (const uint16_t *)src;
            float *d = (float *)dst;
            if (VEC == 16) { /* 8 halves in, 8 floats out per lane step */
                for (int64_t k = lane; k < dim / 8; k += 32) {
                    int4 v = __ldg((const int4 *)s + k);
                    const uint16_t *h = (const uint16_t *)&v;
                    float4 a = make_float4(cvt(h[0], conv), cvt(h[1], conv), cvt(h[2], conv), cvt(h[3], conv));
                    float4 b = make_float4(cvt(h[4], conv), cvt(h[5], conv), cvt(h[6], conv), cvt(h[7], conv));
                    ((float4 *)d)[2 * k] = a;
                    ((float4 *)d)[2 * k + 1] = b;
                }
            } else {
                for (int64_t k = lane; k < dim; k += 32) d[k] = cvt(s[k], conv);
            }
        }
    }
    __syncthreads();
    for (int k = threadIdx.x; k < FS_MAX_TIERS; k += blockDim.x)
        if (block_rows[k]) atomicAdd(&tier_rows[k], block_rows[k]);
}

bool aligned(const void *p, unsigned a) { return ((uintptr_t)p & (a - 1)) == 0; }

} // namespace

extern "C" fs_status_t fs_rt_gather(int device, const fs_table_view_t *t, const int64_t *ids, int64_t n,
                                    fs_dtype_t out_dtype, void *out, fs_gather_counters_t *counters, fs_error_t *err)
{
    fs_conv_t conv;
    size_t out_row;
    fs_status_t st = fs_gather_conv(t, out_dtype, &conv, &out_row, err);
    if (st != FS_OK) return st;
    cudaError_t rc = cudaSetDevice(device);
    if (rc != cudaSuccess)
        return fs_error(err, FS_ERR_NO_DEVICE, "gather: device %d: %s", device, cudaGetErrorString(rc));
    if (n == 0) return FS_OK;

    // Widest access every row allows: 16-byte vectors, 4-byte words, bytes.
    Tiers tiers;
    bool v16 = t->row_bytes % 16 == 0 && aligned(out, 16), v4 = t->row_bytes % 4 == 0 && aligned(out, 4);
    for (int k = 0; k < FS_MAX_TIERS; k++) {
        tiers.base[k] = k < t->num_tiers ? (const char *)t->tier[k].base : nullptr;
        if (k < t->num_tiers) v16 = v16 && aligned(t->tier[k].base, 16), v4 = v4 && aligned(t->tier[k].base, 4);
    }
    if (conv == FS_CONV_F16 || conv == FS_CONV_BF16) v4 = true; /* halves: 2-byte aligned */
    if (conv == FS_CONV_INT8) v16 = false, v4 = true;           /* read a byte at a time */
    /* [FS_MAX_TIERS] row counts + first bad position: one small buffer per
     * thread and device, kept, so a gather costs no allocation. */
    static thread_local unsigned long long *cached[FS_MAX_DEVICES_GATHER];
    if (device < 0 || device >= FS_MAX_DEVICES_GATHER)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "gather: device %d out of range", device);
    unsigned long long *dev_counts = cached[device];
    if (!dev_counts && (rc = cudaMalloc(&dev_counts, (FS_MAX_TIERS + 1) * sizeof *dev_counts)) != cudaSuccess)
        return fs_error(err, FS_ERR_NOMEM, "gather: cudaMalloc: %s", cudaGetErrorString(rc));
    cached[device] = dev_counts;
    cudaMemset(dev_counts, 0, FS_MAX_TIERS * sizeof *dev_counts);
    cudaMemset(dev_counts + FS_MAX_TIERS, 0xff, sizeof *dev_counts);

    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    int threads = 256;
    int64_t want = (n + 7) / 8;
    int blocks = (int)(want < (int64_t)sms * 16 ? want : (int64_t)sms * 16);
    if (blocks < 1) blocks = 1;
#define LAUNCH(V)                                                                                        \
    gather_kernel<V><<<blocks, threads>>>(tiers, t->route, ids, n, t->num_rows, t->row_bytes, t->dim, (int)conv, \
                                          (char *)out, out_row, dev_counts, dev_counts + FS_MAX_TIERS)
    if (v16) LAUNCH(16);
    else if (v4) LAUNCH(4);
    else LAUNCH(1);
#undef LAUNCH
    unsigned long long host[FS_MAX_TIERS + 1];
    rc = cudaGetLastError();
    if (rc == cudaSuccess) rc = cudaMemcpy(host, dev_counts, sizeof host, cudaMemcpyDeviceToHost);
    if (rc != cudaSuccess) return fs_error(err, FS_ERR_INTERNAL, "gather kernel: %s", cudaGetErrorString(rc));
    if (host[FS_MAX_TIERS] != ~0ULL) {
        int64_t pos = (int64_t)host[FS_MAX_TIERS], bad = 0;
        cudaMemcpy(&bad, ids + pos, sizeof bad, cudaMemcpyDefault);
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "id %lld at position %lld is outside [0, %lld)", (long long)bad,
                        (long long)pos, (long long)t->num_rows);
    }
    if (counters)
        for (int k = 0; k < t->num_tiers; k++) {
            counters->rows[k] += host[k];
            counters->bytes[k] += host[k] * t->row_bytes;
        }
    return FS_OK;
}
