/* store.h — the tiered store: where each feature row and each node's
 * neighbour list lives, and how each reader finds it.
 *
 * Tier 0 is always the dataset's read-only mmap (host). More tiers are added
 * by the placement: host (sealed memfd memory), pinned host (mapped, CUDA),
 * device (cudaMalloc) and simulated device (host memory with a device id and
 * a capacity limit, so placement and routing run for real on machines with no
 * GPU). Placing rows copies them into a tier and points the routes of chosen
 * readers at them. A route only ever moves closer: local device < peer device
 * < pinned/host arena < the mmap, whatever the order of the placement calls.
 *
 * Readers: FS_READER_CPU (-1) and GPU/simulated-GPU ids 0..FS_MAX_DEVICES-1.
 * Counters record rows and bytes read per (reader, source tier).
 *
 * Ownership: the store borrows the dataset (which must outlive it) and owns
 * every tier allocation. Thread-safety: place/add_tier are setup calls and
 * must not overlap reads; views, gathers, sampling, counters and the
 * reference count are safe from any number of threads. */
#ifndef FS_STORE_H
#define FS_STORE_H

#include "dataset.h"
#include "fs_device.h"
#include "fs_gather.h"
#include "fs_locality.h"
#include "fs_sample.h"

#define FS_READER_CPU (-1)
#define FS_MAX_READERS (FS_MAX_DEVICES + 1)
#define FS_READER_BIT(r) (1u << ((r) + 1))

typedef struct fs_store fs_store_t;

typedef struct {
    fs_tier_kind_t kind;
    int device;
    size_t capacity;    /* 0 = unlimited (device tiers: the size of their one allocation) */
    size_t used;        /* bytes held (feature rows + topology) */
    /* device tiers, after freeze: bytes copied into it from the host and
     * from another GPU (a replica), and how ("nccl", "peer", "simulated") */
    size_t from_host, from_peer;
    const char *peer_method;
} fs_store_tier_t;

/* Reference-counted: create gives the caller the first reference; retain
 * adds one (a server's transports hold the store across a request while a
 * re-plan replaces it); destroy drops one and frees the store with the
 * last. Retain and destroy are thread-safe. */
fs_status_t fs_store_create(const fs_dataset_t *ds, fs_store_t **out, fs_error_t *err);
fs_store_t *fs_store_retain(fs_store_t *s);
void fs_store_destroy(fs_store_t *s);

/* Adds a tier; *tier receives its index. device is ignored for HOST.
 * A DEVICE tier is one allocation of `capacity` bytes (which must be > 0),
 * made at its first placement and filled at fs_store_freeze. */
fs_status_t fs_store_add_tier(fs_store_t *s, fs_tier_kind_t kind, int device, size_t capacity, int *tier,
                              fs_error_t *err);
int fs_store_num_tiers(const fs_store_t *s);
void fs_store_tier_info(const fs_store_t *s, int tier, fs_store_tier_t *out);

/* Copies rows `ids` of `table` into `tier` (once per table and tier) and
 * routes the readers in `readers` (FS_READER_BIT mask) to them. */
fs_status_t fs_store_place_rows(fs_store_t *s, const char *table, int tier, const int64_t *ids, int64_t n,
                                uint32_t readers, fs_error_t *err);

/* As above, but routing exactly as a placement plan says: row ids[k] goes
 * to slot k and readers[k] (FS_READER_BIT mask) read it from there,
 * whatever they were routed to before. */
fs_status_t fs_store_place_rows_routed(fs_store_t *s, const char *table, int tier, const int64_t *ids, int64_t n,
                                       const uint32_t *readers, fs_error_t *err);

/* Copies the neighbour lists of `nodes` into `tier` and routes `readers`. */
fs_status_t fs_store_place_topology(fs_store_t *s, int tier, const int64_t *nodes, int64_t n, uint32_t readers,
                                    fs_error_t *err);

/* Ends placement: device tiers are filled (each distinct piece host to
 * device once, its replicas GPU to GPU) and exported for CUDA IPC; routes
 * become sealed memfd mappings (like the tiers), so the store can be shared
 * with local clients by descriptor. Placement and add_tier fail afterwards.
 * Idempotent. */
fs_status_t fs_store_freeze(fs_store_t *s, fs_error_t *err);
int fs_store_frozen(const fs_store_t *s);
/* The tiers a reader's routes reach, bit k for tier k (bit 0 always), as
 * fixed at freeze: what a local client of that reader needs mapped. */
uint32_t fs_store_reader_tiers(const fs_store_t *s, int reader);

/* How a local client maps a table's rows, or a topology array, in a tier:
 * rows 0 when the tier holds none. Host and simulated-device tiers: fd, a
 * sealed read-only memfd holding just them (offset 0; owned by the store).
 * Device tiers: fd -1 and `offset` into the tier's one allocation, which the
 * client opens with the tier's IPC handle (fs_store_tier_ipc). */
typedef struct {
    int64_t rows;
    int fd;
    size_t offset;
} fs_store_slice_t;
void fs_store_table_slice(const fs_store_t *s, const char *table, int tier, fs_store_slice_t *out);
void fs_store_topology_slice(const fs_store_t *s, int tier, int which /* 0 indptr, 1 indices, 2 weights */,
                             fs_store_slice_t *out);
/* A frozen device tier's CUDA IPC handle and allocation size;
 * FS_ERR_UNSUPPORTED (saying why) when the runtime could not export it. */
fs_status_t fs_store_tier_ipc(const fs_store_t *s, int tier, fs_ipc_handle_t *h, size_t *bytes, fs_error_t *err);

/* Route descriptors for local clients (sealed; owned by the store), -1 when
 * the reader has none. */
int fs_store_route_fd(const fs_store_t *s, const char *table, int reader);
int fs_store_topology_route_fd(const fs_store_t *s, int reader);

/* Every store alive in this process: the one served and older placements
 * still held (a local trainer keeps the placement it mapped until it moves
 * to the new one or goes), with the tier bytes they hold beyond tier 0. */
typedef struct {
    int stores;
    size_t device_bytes;   /* device and simulated-device tiers */
    size_t host_bytes;     /* host and pinned tiers */
} fs_store_live_t;
void fs_store_live(fs_store_live_t *out);

/* Locality-aware sampling (fs_locality.h): the preferred sets Q_1..Q_L
 * of `reader` — sets->num_levels bitmaps of num_nodes bits, with counts on
 * every level or on none; sets->s is not read — copied into sealed memfds
 * like tier memory, so the reader's local clients map them by descriptor.
 * A reader whose sets equal another's (the GPUs of a replicated group
 * share B) shares that reader's memory. Setup call: before fs_store_freeze,
 * once per reader. */
fs_status_t fs_store_set_locality(fs_store_t *s, int reader, const fs_locality_t *sets, fs_error_t *err);
/* The reader's sets as a sampling option with boost `boost` (num_levels 0
 * and no sets when it has none). */
void fs_store_locality(const fs_store_t *s, int reader, double boost, fs_locality_t *out);
/* Descriptor of the reader's level `level` (1-based): which 0 = bitmap,
 * 1 = counts; -1 when absent. Owned by the store, like the others. */
int fs_store_locality_fd(const fs_store_t *s, int reader, int level, int which);

/* Topology counterpart of fs_store_place_rows_routed. */
fs_status_t fs_store_place_topology_routed(fs_store_t *s, int tier, const int64_t *nodes, int64_t n,
                                           const uint32_t *readers, fs_error_t *err);

/* The view a reader gathers `table` through (valid until the next place). */
fs_status_t fs_store_table_view(const fs_store_t *s, const char *table, int reader, fs_table_view_t *out,
                                fs_error_t *err);
/* The topology view a reader samples through. */
void fs_store_csr_view(const fs_store_t *s, int reader, fs_csr_view_t *out);

/* The view, refused (FS_ERR_INVALID_ARGUMENT) when it reaches GPU memory,
 * which only fs_gather_cuda reads: what the CPU can gather through. */
fs_status_t fs_store_host_view(const fs_store_t *s, const char *table, int reader, fs_table_view_t *out,
                               fs_error_t *err);

/* Gather on the CPU through the reader's view, counting what it read.
 * Views holding real GPU memory need fs_gather_cuda instead. */
fs_status_t fs_store_gather(fs_store_t *s, const char *table, int reader, const int64_t *ids, int64_t n,
                            fs_dtype_t out_dtype, void *out, fs_pool_t *pool, fs_error_t *err);

/* Adds what a caller read through a view to the store's counters. */
void fs_store_count(fs_store_t *s, int reader, const fs_gather_counters_t *c);
/* Rows/bytes read by `reader` so far, per source tier. */
void fs_store_counters(const fs_store_t *s, int reader, fs_gather_counters_t *out);

/* The same for topology: neighbour lists and index bytes read by sampling. */
void fs_store_count_topology(fs_store_t *s, int reader, const fs_gather_counters_t *c);
void fs_store_topology_counters(const fs_store_t *s, int reader, fs_gather_counters_t *out);

#endif
