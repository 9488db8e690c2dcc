/* client_internal.h — how client.c and the two transports fit together.
 * Not installed. */
#ifndef FS_CLIENT_INTERNAL_H
#define FS_CLIENT_INTERNAL_H

#include "featstore.pb.h"
#include "featstore/client.h"
#include "fs_locality.h"

struct fs_client;

/* One transport: unix (client_local.c) or grpc (client_grpc.c). */
typedef struct {
    const char *name;
    fs_status_t (*info)(struct fs_client *c, fs_info_t *out);
    fs_status_t (*sample)(struct fs_client *c, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
                          fs_batch_t **out);
    fs_status_t (*gather)(struct fs_client *c, const char *table, const int64_t *ids, int64_t n, fs_dtype_t out_dtype,
                          fs_batch_t **out);
    fs_status_t (*sample_gather)(struct fs_client *c, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
                                 const char *table, fs_dtype_t out_dtype, fs_batch_t **out);
    fs_status_t (*stats)(struct fs_client *c, char **text);
    fs_status_t (*split)(struct fs_client *c, const char *name, fs_ids_t **out);
    fs_status_t (*replan)(struct fs_client *c, const fs_replan_opts_t *opts, uint64_t *generation); /* NULL: refused */
    void (*close)(struct fs_client *c);
} fs_transport_ops_t;

struct fs_client {
    const fs_transport_ops_t *ops;
    void *impl;                  /* the transport's state */
    fs_connect_opts_t opts;
    fs_las_ctl_t las;            /* Algorithm 2: the boost FS_LOCALITY_AUTO requests use */
    char errstr[512];
};

/* Every batch handed out is the first member of one of these, so
 * fs_batch_free works whatever the transport. */
typedef struct fs_batch_priv {
    fs_batch_t pub;
    void (*release)(struct fs_batch_priv *b);
    const void *region;          /* what fs_batch_region reports */
    size_t region_len;
} fs_batch_priv_t;

/* Likewise for split ids. */
typedef struct fs_ids_priv {
    fs_ids_t pub;
    void (*release)(struct fs_ids_priv *p);
} fs_ids_priv_t;

/* Records a failure on the connection and returns st. */
fs_status_t fs_client_fail(struct fs_client *c, fs_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Both transports receive a featstore.v1.InfoResponse; this turns it into
 * the public struct. */
void fs_info_from_pb(fs_info_t *out, const featstore_v1_InfoResponse *r);

/* Transport constructors: fill c->ops and c->impl, or fail via fs_client_fail. */
fs_status_t fs_local_connect(struct fs_client *c, const char *socket_path);
fs_status_t fs_grpc_connect(struct fs_client *c, const char *target);

#endif
