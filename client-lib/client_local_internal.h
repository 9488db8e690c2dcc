/* client_local_internal.h — a unix:// connection's state, shared by the
 * transport's three files: client_local.c (the conversation with the
 * server, the calls, the executor's host), client_local_map.c (mapping
 * what a WELCOME describes into a layout) and client_local_slot.c (the
 * result slots: warm ones kept across connections, and a slot as the
 * executor's region). Not installed. */
#ifndef FS_CLIENT_LOCAL_INTERNAL_H
#define FS_CLIENT_LOCAL_INTERNAL_H

#include <sys/types.h>

#include "client_internal.h"
#include "fs_disktable.h"
#include "fs_exec.h"
#include "fs_local.h"
#include "fs_locality.h"
#include "fs_pb.h"
#include "fs_sample.h"

typedef struct {
    char *base;            /* this process's memory (slot_reserve), or NULL */
    size_t cap;
    char *dev;             /* GPU trainers: the slot's device twin (ids, then features) */
    size_t dev_cap;
    int busy;
} slot_t;

typedef struct {
    void *p;
    size_t len;
    int registered;        /* readable by GPU kernels in place (fs_cuda_host_register) */
    int pinned;            /* p is a pinned copy: the driver would not register the mapping */
    int shared;            /* p is a process-wide mapping (shared_maps) */
} map_t;

/* A table the server serves from disk (6.4), read here through the cache
 * every trainer shares: the cache and the checksums are the server's
 * memfds, mapped; the table's file is read, never mapped. */
typedef struct {
    fs_disktable_t *table;
    fs_rowcache_t *cache;
    fs_rowsums_t *sums;
    void *cache_map, *sums_map;
    size_t cache_len, sums_len;
    fs_table_remote_t hook;        /* the view's remote: fs_disktable_rows on table */
} local_disk_t;

/* What one WELCOME describes: the dataset's files and the reader's
 * placement, mapped, and the views over them. Replaced whole when the
 * server re-plans. */
typedef struct {
    featstore_local_Welcome w;     /* its scalars; the lists are below */
    fs_pb_array_t tables, tiers, slices, parts;
    fs_dtype_t index_dtype;
    map_t *maps;
    size_t num_maps, cap_maps;
    fs_csr_view_t csr;
    fs_table_view_t *views;        /* [num tables] */
    local_disk_t *disk;            /* [num tables]: the tables on disk (table NULL for the others) */
    int num_on_disk;
    fs_locality_t las;             /* the reader's preferred sets (num_levels 0: none); s is per request */
    void *tier_mem[FS_MAX_TIERS];  /* device tiers, opened by IPC handle */
    int on_device;                 /* some tier is GPU memory: the engines run on the reader's GPU */
    int reader;                    /* the GPU, on_device */
    char **files;                  /* 6.3, after HELLO: the dataset's file names (Welcome.files) */
    size_t num_files;
} layout_t;

/* 6.3: the dataset as the trainer opens it for typed sampling, from the
 * manifest and files the server validated; opened at the first typed call
 * (a homogeneous trainer never pays for it). */
typedef struct {
    int manifest_fd;               /* -1 until connected */
    size_t manifest_bytes;
    char **names;                  /* [num_files], taken from the HELLO's layout */
    int *fds;
    size_t num_files;
    fs_dataset_t *ds;              /* opened: ds != NULL */
    fs_exec_typed_graph_t graph;
    fs_typed_sampler_t *sampler;
    int bound;                     /* ds's on-disk tables read through the disk tables of the layout of */
    uint64_t bound_generation;     /* ...this placement generation (a relayout makes a new layout) */
} typed_t;

typedef struct {
    int sock;
    layout_t *lay;
    int reader;
    const _Atomic uint64_t *notice; /* the server's notice page: the placement generation it serves */
    fs_limits_t limits;
    slot_t slots[FS_LOCAL_MAX_SLOTS];
    int num_slots;
    fs_sampler_t *sampler;
    fs_pool_t *pool;
    int timeout_ms;
    char *buf;             /* FS_LOCAL_MAX_MSG: replies are received here */
    pthread_mutex_t lock;  /* slots and refs: batches are freed from any thread */
    int refs;
    pid_t opener;          /* the process whose pool threads exist */
    int counted;           /* counted among the process's open connections (warm slots) */
    char no_las[256];      /* why a boost needs what this connection lacks (fs_exec_t.no_las) */
    typed_t typed;
    /* reads a REPORT could not carry (the socket was full): the next one
     * carries them, if the placement they were read from is still served */
    fs_gather_counters_t unsent_features, unsent_topology;
    uint64_t unsent_generation;
} local_t;

static inline const featstore_local_Table *fs_local_table_at(const layout_t *Y, size_t i)
{
    return (const featstore_local_Table *)Y->tables.items + i;
}

/* ---- the layout (client_local_map.c) ---- */

/* Maps a received WELCOME's descriptors (fds, from fds->next) into Y: the
 * dataset's files, the notice page's descriptor (into *notice_fd), the
 * reader's placement; device tiers opened on `reader`'s GPU. After HELLO
 * the slots' (and 6.3's manifest and files') descriptors are left in fds. */
fs_status_t fs_local_layout_map(fs_client_t *c, layout_t *Y, fs_fd_list_t *fds, int hello, int reader,
                                int *notice_fd);
void fs_local_layout_free(layout_t *Y);

/* ---- slots (client_local_slot.c) ---- */

/* A new connection: counted among the process's open ones, and its
 * server's empty slots swapped for warm ones. */
void fs_local_warm_take(local_t *L);
/* A connection's last reference: its slots kept warm while another
 * connection of this process is open; the last one frees them all. */
void fs_local_warm_release(local_t *L);
/* Frees slot i (its batch was freed) and drops the batch's reference. */
void fs_local_slot_release(local_t *L, int i);

typedef struct {
    fs_client_t *c;
    local_t *L;
    int slot;              /* -1 until taken */
} slot_region_t;

/* The executor's region over a free slot: taken (acquired) once the
 * request passed its limits, grown in place, with its device twin for a
 * GPU reader's rows (exec/fs_exec.h). sr->slot is the slot taken, or -1. */
fs_exec_region_t fs_local_slot_region(slot_region_t *sr);

/* ---- the connection (client_local.c) ---- */

/* Drops one reference; the last frees the connection's state. */
void fs_local_unref(local_t *L);

#endif
