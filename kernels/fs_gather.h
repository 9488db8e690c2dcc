/* fs_gather.h — the feature gather engine: out[i] = table[ids[i]].
 *
 * The engine reads a *view*: the table's rows spread over up to FS_MAX_TIERS
 * memory tiers (host mmap, host arena, pinned host, GPU, simulated GPU) plus
 * a routing table that says, for the reader doing the gather, where each
 * node's row lives. The server's store builds views; the engine only reads.
 *
 * CPU path (fs_gather_cpu): ids are validated first, then rows are copied by
 * the pool's threads with software prefetch, converting float16/bfloat16 or
 * decoding int8 rows (fs_codec.h) to float32 on the fly if asked. CUDA path (fs_gather_cuda): one kernel reads
 * every tier through UVA pointers with 16-byte vector loads.
 *
 * Errors: an id outside [0, num_rows) fails the whole call with
 * FS_ERR_INVALID_ARGUMENT naming the first bad position and value; the
 * output buffer's contents are then unspecified and must not be used.
 * Thread-safety: views are read-only; concurrent gathers are safe. */
#ifndef FS_GATHER_H
#define FS_GATHER_H

#include "fs_codec.h"
#include "fs_pool.h"
#include "fs_types.h"

#define FS_MAX_TIERS 16

typedef enum {
    FS_TIER_HOST = 0,     /* pageable host memory: the dataset's mmap or a jemalloc arena */
    FS_TIER_PINNED,       /* cudaHostAlloc'ed, mapped into the GPU address space */
    FS_TIER_DEVICE,       /* GPU memory */
    FS_TIER_SIM_DEVICE,   /* host arena standing in for a GPU (own id, capacity) */
    FS_TIER_KIND_COUNT_
} fs_tier_kind_t;

const char *fs_tier_kind_name(fs_tier_kind_t k);

typedef struct {
    fs_tier_kind_t kind;
    int device;           /* GPU (or simulated GPU) id; -1 for host tiers */
    const void *base;     /* row 0 of this tier's slice (UVA pointer for CUDA) */
    int64_t rows;
} fs_tier_ref_t;

/* route entry: tier index in the top 16 bits, row within the tier below. */
#define FS_ROUTE(tier, row) (((uint64_t)(tier) << 48) | (uint64_t)(row))
#define FS_ROUTE_TIER(r) ((int)((r) >> 48))
#define FS_ROUTE_ROW(r) ((int64_t)((r) & ((1ULL << 48) - 1)))

/* Rows held elsewhere (a trainer of a sharded cluster): rows(ids) writes
 * rows ids[0..n) as stored (row_bytes each) into out, in order. */
typedef struct {
    fs_status_t (*rows)(void *ctx, const int64_t *ids, int64_t n, void *out, fs_error_t *err);
    void *ctx;
} fs_table_remote_t;

typedef struct {
    fs_dtype_t dtype;      /* stored: F32, F16 or BF16 */
    int64_t num_rows, dim;
    size_t row_bytes;
    int num_tiers;
    fs_tier_ref_t tier[FS_MAX_TIERS];
    const uint64_t *route; /* [num_rows]; NULL = every row in tier 0 at its id */
    const fs_table_remote_t *remote; /* NULL: the tiers above; else no tiers, reads counted as tier 0's */
    fs_codec_t codec;      /* a compressed table's (fs_codec.h); dtype and dim are the stored ones */
} fs_table_view_t;

/* How a gather turns a stored row into an output row: the one choice for
 * the CPU path and the CUDA one. */
typedef enum { FS_CONV_COPY = 0, FS_CONV_F16, FS_CONV_BF16, FS_CONV_INT8 } fs_conv_t;

/* The conversion for out_dtype (any request fs_codec_served takes) and the
 * bytes it writes per row; FS_ERR_INVALID_ARGUMENT for any other. */
fs_status_t fs_gather_conv(const fs_table_view_t *t, fs_dtype_t out_dtype, fs_conv_t *conv, size_t *out_row,
                           fs_error_t *err);

/* Rows and bytes read, per source tier (added to, never reset). */
typedef struct {
    uint64_t rows[FS_MAX_TIERS];
    uint64_t bytes[FS_MAX_TIERS];
} fs_gather_counters_t;

/* Gathers n rows into out (n rows of fs_gather_conv's out_row bytes, any
 * alignment, may be shared memory). out_dtype: as fs_codec_served takes it.
 * pool may be NULL (calling thread only); counters may be NULL. */
fs_status_t fs_gather_cpu(const fs_table_view_t *t, const int64_t *ids, int64_t n, fs_dtype_t out_dtype,
                          void *out, fs_pool_t *pool, fs_gather_counters_t *counters, fs_error_t *err);

/* Checks that every id is in [0, t->num_rows); the error names the first bad one. */
fs_status_t fs_gather_check_ids(const fs_table_view_t *t, const int64_t *ids, int64_t n, fs_error_t *err);

/* The same on a GPU: ids and out are device (or mapped) pointers, every tier
 * base must be dereferenceable from `device`. Synchronous on the default
 * stream. FS_ERR_NO_DEVICE in builds without CUDA or without a usable GPU.
 * With FEATSTORE_SIM_GPUS set it is fs_gather_cpu on a simulated GPU
 * (fs_device.h: fs_devices_simulated). */
fs_status_t fs_gather_cuda(int device, const fs_table_view_t *t, const int64_t *ids, int64_t n,
                           fs_dtype_t out_dtype, void *out, fs_gather_counters_t *counters, fs_error_t *err);

#endif
