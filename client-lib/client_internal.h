/* client_internal.h — how client.c and the two transports fit together.
 * Not installed; nothing here is exported from libfeatstore.so.
 *
 * The grpc:// transport (client_grpc*.c) is built into the static library,
 * and into a plugin of its own, libfeatstore-grpc.so, for the shared one:
 * libfeatstore.so loads it with dlopen() on the first grpc:// connection
 * (client_plugin.c), so a unix-only trainer never maps gRPC. The plugin is
 * built from the same sources and checked to be the same release, so the
 * structs below are shared with it as they are. */
#ifndef FS_CLIENT_INTERNAL_H
#define FS_CLIENT_INTERNAL_H

#include <pthread.h>
#include <sys/types.h>

#include "featstore/admin.h"
#include "featstore/client.h"
#include "fs_addr.h"
#include "fs_epoch.h"
#include "fs_locality.h"

struct fs_client;
struct fs_epoch_call;

/* An epoch stream the server makes (grpc://'s Stream method, proto/
 * featstore.proto): what client-lib/stream.c asks for, everything borrowed
 * for the call to epoch_open only. */
typedef struct {
    const fs_epoch_opts_t *plan;  /* num_items unused: the server counts the seeds */
    const char *split;            /* the seeds: a split's name, or */
    const int64_t *seeds;         /* an array */
    int64_t num_seeds;
    const fs_sample_req_t *sample;
    const char *table;            /* "" = sample only */
    fs_dtype_t out_dtype;
    const char *labels;           /* "" = none */
    int delta, window;
    int64_t start_batch;
} fs_epoch_call_req_t;

/* One batch of it: the caller owns both batches. */
typedef struct {
    int64_t index, plan_index;    /* its place in the stream; its batch in the plan */
    fs_batch_t *batch;            /* the sample, with every node's rows unless delta (or no table) */
    fs_batch_t *rows;             /* delta: the new rows, in the order of their first appearance */
} fs_epoch_call_batch_t;

/* One transport: unix (client_local.c) or grpc (client_grpc.c). Arguments
 * are checked and option structs normalised (struct_size = sizeof) by
 * client.c before they reach a transport. */
typedef struct {
    const char *name;
    int in_process;              /* the engines run in this process, on the connection's threads (unix://) */
    fs_status_t (*info)(struct fs_client *c, fs_info_t **out);
    fs_status_t (*sample)(struct fs_client *c, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
                          fs_batch_t **out);
    fs_status_t (*gather)(struct fs_client *c, const int64_t *ids, int64_t n, const char *table, fs_dtype_t out_dtype,
                          fs_batch_t **out);
    fs_status_t (*sample_gather)(struct fs_client *c, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
                                 const char *table, fs_dtype_t out_dtype, fs_batch_t **out);
    fs_status_t (*stats)(struct fs_client *c, char **text);
    fs_status_t (*split)(struct fs_client *c, const char *name, fs_ids_t **out);
    fs_status_t (*split_local)(struct fs_client *c, const char *name, fs_ids_t **out); /* NULL: refused */
    fs_status_t (*replan)(struct fs_client *c, const fs_replan_opts_t *opts, uint64_t *generation); /* NULL: refused */
    /* A sharded cluster's: each id's owning shard id, the map's shard ids
     * (ascending; *shards malloc'd, the caller's) and its revision; fresh:
     * the map read anew first. NULL: the connection has no shards
     * (client_hopgnn.c). */
    fs_status_t (*owners)(struct fs_client *c, const char *node_type, const int64_t *ids, int64_t n, int fresh,
                          int *owner, int **shards, int *num_shards, int64_t *revision);
    /* A sharded cluster's trainer counters: a batch's micrograph pairs and
     * a pre-gather's rows (docs/metrics.md). NULL: none kept. */
    void (*count_hopgnn)(struct fs_client *c, int64_t pairs, int64_t colocated, int64_t requested, int64_t rows);
    /* fs_hetero_sample (link NULL) and fs_link_sample (groups NULL): the
     * structs are full-size copies (client.c) */
    fs_status_t (*hetero)(struct fs_client *c, const fs_hetero_seeds_t *groups, size_t num_groups,
                          const fs_link_req_t *link, const fs_hetero_req_t *req, fs_hetero_batch_t **out);
    /* One call carrying an epoch's batches (NULL: the transport has none).
     * epoch_next copies the seeds' labels into `labels` (room for the batch
     * size) and returns FS_END after the last batch; a connection the server
     * broke is FS_ERR_UNAVAILABLE. Failures are recorded on the call's
     * connection, which the call uses alone until epoch_close. */
    fs_status_t (*epoch_open)(struct fs_client *c, const fs_epoch_call_req_t *req, struct fs_epoch_call **out);
    fs_status_t (*epoch_next)(struct fs_epoch_call *e, fs_epoch_call_batch_t *out, int64_t *labels);
    void (*epoch_close)(struct fs_epoch_call *e);
    void (*close)(struct fs_client *c); /* in a forked child (fs_client_foreign): this process's copies only */
    /* Whether no batch of c's is alive, so that the next stream of c's
     * owner may take c over as it is (fs_client_take). NULL: never. */
    int (*idle)(struct fs_client *c);
} fs_transport_ops_t;

/* A closed stream's connections kept for the next one (fs_client_park). */
#define FS_CLIENT_SPARES 16

struct fs_client {
    const fs_transport_ops_t *ops;
    void *impl;                  /* the transport's state */
    fs_connect_opts_t opts;
    int threads_given;           /* opts.threads was set (else 1 by default): streams choose their producers */
    fs_las_ctl_t las;            /* Algorithm 2: the boost FS_LOCALITY_AUTO requests use */
    pid_t opener;                /* the process that connected: a forked child may not use it */
    char errstr[512];
    char *uri;                   /* as given to fs_connect, and copies of opts' strings, */
    char *opt_strings[5];        /* which opts points at: for fs_client_clone */
    pthread_mutex_t spare_lock;  /* the spares: streams are closed from any thread */
    struct fs_client *spare[FS_CLIENT_SPARES];
    int num_spare;
};

/* Before every call (client.c): FS_OK, or why c cannot be used (a forked
 * child's copy, not connected), recorded on c. */
fs_status_t fs_client_usable(fs_client_t *c);

/* Every batch handed out is the first member of one of these, so
 * fs_batch_free works whatever the transport. */
typedef struct fs_batch_priv {
    fs_batch_t pub;
    fs_block_t blocks[FS_MAX_HOPS]; /* what pub.blocks points at */
    void (*release)(struct fs_batch_priv *b);
    const void *region;          /* what fs_batch_region reports */
    size_t region_len;
} fs_batch_priv_t;

/* Likewise for typed batches: the public batch indexes an image
 * (proto/fs_hetero.h) that lies in `region`. */
typedef struct fs_hetero_priv {
    fs_hetero_batch_t pub;
    void *index_mem;             /* fs_hetero_index_t.mem: the batch's own tables */
    void (*release)(struct fs_hetero_priv *b);
    const void *region;
    size_t region_len;
} fs_hetero_priv_t;

/* Likewise for split ids. */
typedef struct fs_ids_priv {
    fs_ids_t pub;
    void (*release)(struct fs_ids_priv *p);
} fs_ids_priv_t;

/* Whether this process is not the one that opened c: a child forked after
 * fs_connect, which shares the opener's socket and result slots. Its calls
 * are refused and its fs_close frees only its own copies (client.h). */
int fs_client_foreign(const struct fs_client *c);

/* Records a failure on the connection and returns st. */
fs_status_t fs_client_fail(struct fs_client *c, fs_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The caller's sampling request read at its own size into a full-size
 * copy, FS_LOCALITY_AUTO resolved and the locality checked (client.c);
 * failures recorded on c. */
fs_status_t fs_client_sample_request(struct fs_client *c, const fs_sample_req_t *req, fs_sample_req_t *copy);

/* A second connection to c's server with c's options but `slots` result
 * slots and, unless 0, `threads` (a stream producer's own,
 * client-lib/stream.c); its failure is in *out's errstr, as fs_connect's. */
fs_status_t fs_client_clone(const struct fs_client *c, int slots, int threads, struct fs_client **out);

/* As fs_client_clone, but a connection c holds from a closed stream
 * (fs_client_park) is taken when one has the same slots and threads and is
 * idle: an epoch's stream then starts on the last one's connections, their
 * engines warm, instead of connecting, mapping and checking the dataset
 * anew (docs/api.md §11, "Connections kept between epochs"). */
fs_status_t fs_client_take(struct fs_client *c, int slots, int threads, struct fs_client **out);

/* Gives conn, a connection fs_client_take or fs_client_clone made from c,
 * back to c for the next stream, or closes it (a transport that keeps
 * none, a forked child, FS_CLIENT_SPARES held). fs_close(c) closes them. */
void fs_client_park(struct fs_client *c, struct fs_client *conn);

/* Transport constructors: fill c->ops and c->impl, or fail via fs_client_fail. */
fs_status_t fs_local_connect(struct fs_client *c, const char *socket_path);
fs_status_t fs_grpc_connect(struct fs_client *c, const char *target, int tls); /* tls: grpcs:// */
/* etcd://HOST:PORT/CLUSTER (client_cluster.c; in the gRPC plugin) */
fs_status_t fs_cluster_connect(struct fs_client *c, const fs_addr_t *a);

/* The gRPC plugin's one exported symbol, FS_GRPC_PLUGIN_SYMBOL: which
 * release it was built from, and its constructor. */
#define FS_GRPC_PLUGIN_SYMBOL "fs_grpc_plugin_v1"
typedef struct {
    const char *version;         /* must equal fs_version() */
    size_t client_size;          /* sizeof(struct fs_client), as a layout check */
    fs_status_t (*connect)(struct fs_client *c, const char *target, int tls);
    fs_status_t (*cluster_connect)(struct fs_client *c, const fs_addr_t *a);
} fs_grpc_plugin_t;

/* Tests only: the minor version of the local protocol this process's
 * clients speak (proto/fs_local.h), to stand in for an older client. */
void fs_local_client_protocol(unsigned minor);

#endif
