/* hardware.h — the machine a plan is made for: n GPUs with their memory, the
 * direct GPU-GPU links with their bandwidth, and each GPU's link to host
 * memory. Presets cover the topologies the papers (docs/papers.md) discuss; anything else comes
 * from a small JSON file.
 *
 * Links are symmetric (one bandwidth per pair, both directions); a GPU's
 * "peers" are the GPUs with a direct link (bandwidth > 0). The fabric names
 * the link class, which picks Algorithm 1's default alpha (docs/algorithms.md §3).
 *
 * Ownership: fs_hardware_t is a plain caller-owned value (no pointers).
 * Thread-safety: every function writes only to its arguments. */
#ifndef FS_HARDWARE_H
#define FS_HARDWARE_H

#include <stdint.h>

#include "fs_types.h"

/* Bitmasks of GPUs are uint32_t, so this is a hard limit (and equals
 * kernels' FS_MAX_DEVICES). */
#define FS_HW_MAX_GPUS 16

typedef enum {
    FS_FABRIC_PCIE = 0,   /* no peer links: every GPU alone */
    FS_FABRIC_NVLINK,     /* point-to-point NVLink (pairs, hybrid cube-mesh) */
    FS_FABRIC_NVSWITCH,   /* all-to-all through a switch */
    FS_FABRIC_COUNT_
} fs_fabric_t;

typedef struct {
    char name[64];
    int num_gpus;                                  /* 1..FS_HW_MAX_GPUS */
    fs_fabric_t fabric;
    int64_t memory_bytes[FS_HW_MAX_GPUS];          /* signed so a negative input is caught, not wrapped */
    double link_gbps[FS_HW_MAX_GPUS][FS_HW_MAX_GPUS]; /* 0 = no direct link; symmetric, zero diagonal */
    double host_gbps[FS_HW_MAX_GPUS];              /* GPU <-> host memory */
    double local_gbps[FS_HW_MAX_GPUS];             /* the GPU's own memory (XGNN's Bandwidth_ii) */
} fs_hardware_t;

const char *fs_fabric_name(fs_fabric_t f);   /* "pcie", "nvlink", "nvswitch" */

/* Fills *out with a named preset: "pcie4", "nvlink-pairs", "dgx1-v100",
 * "nvswitch8". Unknown names are FS_ERR_NOT_FOUND listing the known ones. */
fs_status_t fs_hw_preset(const char *name, fs_hardware_t *out, fs_error_t *err);
/* The i-th preset name, or NULL past the end. */
const char *fs_hw_preset_name(int i);

/* Parses a topology description:
 *   {"name": "...", "fabric": "nvlink",            (both optional)
 *    "gpus": [{"memory_bytes": 17179869184, "local_gbps": 900}, ...],
 *    "links": [[0, 1, 50.0], ...],                 (GPU, GPU, GB/s)
 *    "host_gbps": 25}                              (number, or one per GPU)
 * Without "fabric": nvswitch if every pair is linked with one bandwidth and
 * n > 2, nvlink if any link exists, else pcie. Every malformed field is
 * FS_ERR_FORMAT naming it (and the line/column for JSON syntax errors). */
fs_status_t fs_hw_parse_json(const char *text, fs_hardware_t *out, fs_error_t *err);
fs_status_t fs_hw_load_json(const char *path, fs_hardware_t *out, fs_error_t *err);

/* What a GPU box says of itself (the server's `--topology detect`, from
 * kernels' fs_devices_query): count GPUs with free_bytes[i] each and
 * peer[i][j] = cudaDeviceCanAccessPeer(i, j). Peer access both ways is a
 * direct link at FS_HW_DETECTED_LINK_GBPS, every GPU reaches the host at
 * FS_HW_DETECTED_HOST_GBPS: CUDA reports neither link speed, so these are
 * nominal (NVLink 3 x2 bricks, PCIe 4 x16); a topology file gives exact
 * ones. The fabric is inferred as for files. Named "detected". */
#define FS_HW_DETECTED_LINK_GBPS 50.0
#define FS_HW_DETECTED_HOST_GBPS 25.0
fs_status_t fs_hw_detected(int count, const int64_t *free_bytes, const unsigned char peer[][FS_HW_MAX_GPUS],
                           fs_hardware_t *out, fs_error_t *err);

/* Checks a hand-built description: GPU count, memory >= 0, bandwidths
 * finite and >= 0, host bandwidth > 0, links symmetric with zero diagonal. */
fs_status_t fs_hw_validate(const fs_hardware_t *hw, fs_error_t *err);

/* Simulated devices: multiply every GPU's memory by factor (> 0), e.g. to
 * model a 16 GiB GPU with a 16 MiB simulated tier on a small graph. */
fs_status_t fs_hw_scale_memory(fs_hardware_t *hw, double factor, fs_error_t *err);
/* Sets every GPU's memory to bytes (>= 0). */
fs_status_t fs_hw_set_memory(fs_hardware_t *hw, int64_t bytes, fs_error_t *err);

/* Keeps GPUs 0..num_gpus-1 and their links (1 <= num_gpus <= n), e.g. 4 of
 * nvswitch8's 8 GPUs: still all-to-all, with the same fabric and speeds.
 * The name gets a "[0..k-1]" suffix. */
fs_status_t fs_hw_first_gpus(fs_hardware_t *hw, int num_gpus, fs_error_t *err);

/* Direct-link queries. */
static inline int fs_hw_linked(const fs_hardware_t *hw, int i, int j)
{
    return i != j && hw->link_gbps[i][j] > 0;
}
/* Bit j set for every direct peer j of GPU i (i itself excluded). */
uint32_t fs_hw_peer_mask(const fs_hardware_t *hw, int i);

#endif
