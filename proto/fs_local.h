/* fs_local.h — the local transport's wire format (unix:// clients).
 *
 * An AF_UNIX SOCK_SEQPACKET socket: every send is one message, boundaries
 * kept, file descriptors passed with SCM_RIGHTS. A message is a fixed header
 * plus a payload. The conversation:
 *
 *   client -> HELLO {api_version, slots, pid, reader}
 *   server -> WELCOME {dataset shape, tables, limits, tiers, what of each
 *             table and of the topology the placement put in each tier} +
 *             fds, in this order: indptr, indices, [edge weights], one per
 *             table (files opened read-only: the client maps them PROT_READ,
 *             sharing the server's page cache); the notice page (below);
 *             then the reader's placement,
 *             all sealed memfds: each table's slice in each tier (table-major),
 *             each table's route, each tier's topology part (indptr, indices,
 *             [weights]), the topology route, the reader's preferred sets
 *             for locality-aware sampling (per level: bitmap, [counts]);
 *             then one memfd per result slot (read-write, owned by this
 *             client)
 *   client -> INFO | STATS           server -> INFO_REPLY (an encoded
 *             featstore.v1.InfoResponse) | STATS_REPLY (Prometheus text)
 *   client -> SPLIT {name}           server -> SPLIT_REPLY {count, offset}
 *             + a read-only fd of the split's file (mapped, never copied)
 *   client -> REPORT {method, status, latency, generation, rows/bytes read
 *             per tier} after each call it ran in-process (no reply: never
 *             blocks)
 *   client -> RELAYOUT               server -> WELCOME as above without
 *             slots (num_slots 0), for the placement served now
 *   client -> REPLAN {overrides}     server -> REPLAN_REPLY {generation,
 *             seconds} once the new placement serves (administration)
 *   server -> ERROR {status, message} instead of a reply
 *
 * Re-planning: the placement has a generation (1 at start, +1 per re-plan),
 * in WELCOME and in the notice page, a read-only shared page whose first 8
 * bytes the server sets to the current generation. A client checks it
 * (one load) before each call and asks RELAYOUT when it has moved on, so
 * trainers follow a new plan without reconnecting; until then they read
 * through the old one, whose memory their mappings keep alive.
 *
 * All integers little-endian (both ends are the same machine). Version: the
 * header's version is FS_LOCAL_VERSION; a server refuses other versions. */
#ifndef FS_LOCAL_H
#define FS_LOCAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fs_types.h"

#define FS_LOCAL_MAGIC 0x314c5346u /* "FSL1" */
#define FS_LOCAL_VERSION 5 /* 3: WELCOME carries the preferred sets; 4: re-planning; 5: REPLAN's alpha, reserve */
#define FS_LOCAL_MAX_TABLES 16
#define FS_LOCAL_MAX_TIERS 16
#define FS_LOCAL_MAX_SLOTS 64
#define FS_LOCAL_MAX_FDS 250 /* under the kernel's SCM_RIGHTS limit of 253 */
#define FS_LOCAL_MAX_MSG (256 * 1024)

enum {
    FS_LOCAL_HELLO = 1,
    FS_LOCAL_WELCOME,
    FS_LOCAL_INFO,
    FS_LOCAL_INFO_REPLY,
    FS_LOCAL_STATS,
    FS_LOCAL_STATS_REPLY,
    FS_LOCAL_REPORT,
    FS_LOCAL_ERROR,
    FS_LOCAL_SPLIT,
    FS_LOCAL_SPLIT_REPLY,
    FS_LOCAL_RELAYOUT,
    FS_LOCAL_REPLAN,
    FS_LOCAL_REPLAN_REPLY,
};

#define FS_LOCAL_NOTICE_BYTES 4096

typedef struct {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    uint32_t len;       /* payload bytes after the header */
    uint32_t reserved;
} fs_local_hdr_t;

typedef struct {
    uint32_t api_version;
    uint32_t slots;
    int64_t pid;
    int32_t reader;        /* -1 = the CPU, else the GPU / simulated GPU id */
    int32_t pad;
} fs_local_hello_t;

typedef struct {
    char name[64];
    int32_t dtype;
    int32_t pad;
    int64_t rows, dim;
    int64_t data_offset;   /* where the rows start in the table's file */
} fs_local_table_t;

typedef struct {
    uint32_t api_version;
    uint32_t num_tables;
    uint32_t num_slots;
    int32_t index_dtype;
    int32_t has_weights;
    int32_t pad;
    int64_t num_nodes, num_edges;
    int64_t indptr_offset, indices_offset, weights_offset;
    int64_t max_ids, max_fanout_product, max_response_bytes;
    char dataset[128];
    fs_local_table_t tables[FS_LOCAL_MAX_TABLES];
    /* the placement, as this client's reader sees it */
    int32_t reader;
    uint32_t num_tiers;                                      /* tier 0 = the files above */
    int32_t tier_kind[FS_LOCAL_MAX_TIERS], tier_device[FS_LOCAL_MAX_TIERS];
    int64_t slice_rows[FS_LOCAL_MAX_TABLES][FS_LOCAL_MAX_TIERS]; /* > 0: a descriptor follows */
    int32_t table_route[FS_LOCAL_MAX_TABLES];                /* 1: a route descriptor follows */
    int64_t topo_rows[FS_LOCAL_MAX_TIERS];                   /* > 0: part descriptors follow */
    int32_t topo_route;
    int32_t pad2;
    /* locality-aware sampling: the reader's preferred sets Q_1..Q_L, each a
     * bitmap of ceil(num_nodes / 64) uint64 words and, with las_counts, a
     * uint16 count per node (fs_locality.h) */
    int32_t las_levels;      /* L; 0 = none (no placement, or the CPU reader): boosts are refused */
    int32_t las_counts;      /* 1: each level's count descriptor follows its bitmap's */
    uint64_t generation;     /* of the placement described */
} fs_local_welcome_t;

typedef struct {
    int32_t method;        /* fs_method_t */
    int32_t status;        /* fs_status_t */
    int64_t latency_ns;
    uint64_t generation;   /* the placement the tiers below belong to */
    uint64_t feature_rows[FS_LOCAL_MAX_TIERS], feature_bytes[FS_LOCAL_MAX_TIERS];   /* per source tier */
    uint64_t topo_lists[FS_LOCAL_MAX_TIERS], topo_bytes[FS_LOCAL_MAX_TIERS];
} fs_local_report_t;

typedef struct {
    int32_t status;
    char message[500];
} fs_local_error_t;

typedef struct {
    char name[64];         /* NUL-terminated */
} fs_local_split_t;

/* Empty strings and a zero budget keep what the server runs with now.
 * Every string is NUL-terminated within its field (the server checks). */
typedef struct {
    char topology[256];    /* preset name or topology file */
    char hotness[16];      /* degree | reach | presample */
    char order[16];        /* topology-first | feature-first | auto */
    char plan[512];        /* load this saved plan instead of planning */
    char save[512];        /* save the new plan here */
    char alpha[128];       /* Algorithm 1's alpha per link class ("0" or "nvlink=0.2,nvswitch=0") */
    char reserve[32];      /* per GPU, for the trainer's model ("2G") */
    double gpu_budget;     /* bytes per GPU as a fraction of the table's bytes */
} fs_local_replan_t;

typedef struct {
    uint64_t generation;   /* of the placement now served */
    double seconds;        /* planning and placing */
} fs_local_replan_reply_t;

typedef struct {
    int64_t count;         /* ids */
    int64_t offset;        /* where they start in the file sent along */
} fs_local_split_reply_t;

/* Sends one message with optional fds. 0, or -1 with errno set.
 * flags: MSG_DONTWAIT to never block. */
int fs_local_send(int sock, int type, const void *payload, size_t len, const int *fds, int nfds, int flags);

/* Receives one message into buf (cap bytes for the payload); *len gets the
 * payload length (0 is a valid, empty payload). Returns 1 for a message, 0
 * when the peer closed, -1 on error (errno; EPROTO for a malformed message).
 * Received fds go to fds[*nfds]; any beyond max_fds are closed. */
int fs_local_recv(int sock, int *type, void *buf, size_t cap, size_t *len, int *fds, int *nfds, int max_fds, int flags);

#endif
