/* fs_shardmap.h — the shard map of a sharded featstore, and the shards'
 * registrations it is made from.
 *
 * A partitioned dataset (featstore partition) has V virtual partitions;
 * each shard server owns some of them, and with replication (R replicas)
 * holds copies of others: a part's holders are its owner and up to R - 1
 * shards with a copy. In etcd, under /featstore/NAME/:
 *   shards/<id>  each live shard's registration (fs_shard_reg_t), attached
 *                to its lease, so a shard that dies vanishes with it;
 *   map          the shard map (fs_shard_map_t): which shard owns each
 *                part and how to reach it, one key whose etcd revision is
 *                the map's revision, which every request carries.
 * The map is a pure function of the registrations (fs_shard_map_build), so
 * any shard may write it (a compare-and-swap on its revision) and all of
 * them converge on the same one.
 *
 * Both are JSON, read strictly: they come from etcd (or a static file), so
 * every field is checked for type, range and consistency, and an unknown
 * key is an error that names it. Pure functions; thread-safe. */
#ifndef FS_SHARDMAP_H
#define FS_SHARDMAP_H

#include <stddef.h>
#include <stdint.h>

#include "fs_addr.h" /* a cluster's name: FS_CLUSTER_NAME_MAX, fs_cluster_name_check */
#include "fs_types.h"

/* Limits of a cluster, each defined here once (a partitioning's, the
 * number of parts and its id's length, are fs_types.h's). */
#define FS_CLUSTER_SHARDS_MAX 1024  /* shard ids are 0 .. FS_CLUSTER_SHARDS_MAX - 1 */
#define FS_CLUSTER_REPLICAS_MAX 8   /* a part's holders, at most (R) */
#define FS_CLUSTER_ADDR_MAX 255     /* a gRPC address, host:port */
#define FS_CLUSTER_UNIX_MAX 107     /* a unix socket path (sockaddr_un's sun_path) */
#define FS_CLUSTER_HOST_MAX 63      /* a machine's identity (fs_shard_machine): unix:// is used where it matches */

/* Where a shard answers. */
typedef struct {
    int id;
    char grpc[FS_CLUSTER_ADDR_MAX + 1];
    char unix_path[FS_CLUSTER_UNIX_MAX + 1]; /* "" when it has no unix socket */
    char host[FS_CLUSTER_HOST_MAX + 1];      /* its machine (fs_shard_machine), "" when unknown */
} fs_shard_addr_t;

/* This process's machine, as a shard registers it and a trainer compares
 * it: "BOOT_ID/NETNS", the kernel's boot id and the inode of the network
 * namespace. A trainer reaches a shard over its unix socket where both
 * match (the same kernel, the same network: a machine, a container's pod,
 * or one "machine" of a test cluster made of namespaces), and over gRPC
 * everywhere else. "" when /proc cannot tell (no shard is then local). */
void fs_shard_machine(char *out, size_t len);

/* A shard's registration: its address, the partitioning it serves, the
 * parts it owns and those it holds a copy of (each ascending, disjoint),
 * and the cluster's replica count R. */
typedef struct {
    fs_shard_addr_t addr;
    char partitioning[FS_PARTITION_ID_LEN + 1];
    int parts;       /* V of the partitioning */
    int *owns;       /* [num_owned], ascending */
    int num_owned;
    int *copies;     /* [num_copies], ascending: parts it holds as another's replica */
    int num_copies;
    int replicas;    /* R, 1..FS_CLUSTER_REPLICAS_MAX (1: no copies) */
} fs_shard_reg_t;

/* The map: every part's holders, its owner first (-1: none registered
 * holds it). A part whose owner is not registered is owned by its first
 * copy's holder (the lowest id): owner[p] is always holders[p][0]. */
typedef struct {
    char name[FS_CLUSTER_NAME_MAX + 1];
    char partitioning[FS_PARTITION_ID_LEN + 1];
    int parts;
    int replicas;            /* R: the holders a part may have */
    int *holders;            /* [parts * replicas]: part p's at [p * replicas ..], -1 after the last */
    int *owner;              /* [parts]: holders[p * replicas] */
    fs_shard_addr_t *shard;  /* [num_shards], ascending id */
    int num_shards;
    int64_t revision;        /* etcd's mod revision of the map key; 0 for a static map */
} fs_shard_map_t;

/* A shard's id and parts where an orchestrator numbers it (`featstore serve
 * --shard ordinal --parts auto`, docs/cli.md; docker/k8s): each rule defined
 * here once.
 *
 * The StatefulSet ordinal of a host name: its first label (up to any '.')
 * ends in "-N", N decimal without leading zeros and below
 * FS_CLUSTER_SHARDS_MAX, after a name of at least one character
 * ("featstore-shard-3" and "featstore-shard-3.featstore-shard" -> 3). Else
 * FS_ERR_INVALID_ARGUMENT naming the host name and the form expected. */
fs_status_t fs_shard_ordinal(const char *host, int *id, fs_error_t *err);

/* The parts shard `shard` of `shards` holds when a partitioning's `parts`
 * parts are dealt round-robin: every p in 0..parts-1 with
 * p % shards == shard, ascending, into out[] (room for parts / shards + 1),
 * their count in *n. FS_ERR_INVALID_ARGUMENT for shards outside
 * 1..FS_CLUSTER_SHARDS_MAX, a shard not below shards, or a shard that gets
 * no part (more shards than parts), each naming the numbers. */
fs_status_t fs_shard_dealt_parts(int shard, int shards, int parts, int *out, int *n, fs_error_t *err);
/* With R replicas, the parts shard `shard` holds copies of: those dealt to
 * the R - 1 shards before it (shard - 1, ..., shard - R + 1, mod shards),
 * ascending, into out[] (room for parts), their count in *n; so each part
 * is on R consecutive shards. FS_ERR_INVALID_ARGUMENT for R outside
 * 1..FS_CLUSTER_REPLICAS_MAX or above shards (a part's holders are
 * different shards), and as fs_shard_dealt_parts. */
fs_status_t fs_shard_dealt_copies(int shard, int shards, int parts, int replicas, int *out, int *n,
                                  fs_error_t *err);

/* Registrations. The JSON is the caller's (free()); parse fills *out, which
 * fs_shard_reg_free releases. */
char *fs_shard_reg_format(const fs_shard_reg_t *r);
fs_status_t fs_shard_reg_parse(const char *json, size_t len, fs_shard_reg_t *out, fs_error_t *err);
void fs_shard_reg_free(fs_shard_reg_t *r);

/* The map of cluster `name` from n registrations: they must share one
 * partitioning and replica count (else FS_ERR_FORMAT naming the shard that
 * differs). Without an assignment (NULL) no part may be owned twice, nor
 * held by more than R shards (FS_ERR_EXISTS naming the part and the
 * shards). With one (`assign`, fs_shard_assign_parse: the registrations
 * must be of its partitioning and R) a part's holders are the registered
 * shards holding it, those the assignment gives it to first, in its order,
 * then the others (owners first, then by id), at most R: so a shard loading
 * a part it was given joins its holders only once it holds it, and one
 * giving it away leaves them only when enough assigned holders hold it.
 * Parts no shard holds get owner -1. revision is left 0. */
fs_status_t fs_shard_map_build(const char *name, const fs_shard_reg_t *regs, int n, const fs_shard_map_t *assign,
                               fs_shard_map_t *out, fs_error_t *err);

/* A map of no shard: every part without a holder (replicas <= 0: 1). */
fs_status_t fs_shard_map_empty(const char *name, const char *partitioning, int parts, int replicas,
                               fs_shard_map_t *out, fs_error_t *err);

char *fs_shard_map_format(const fs_shard_map_t *m);
/* Parses a map (its revision left 0: the caller sets etcd's). */
fs_status_t fs_shard_map_parse(const char *json, size_t len, fs_shard_map_t *out, fs_error_t *err);
void fs_shard_map_free(fs_shard_map_t *m);
/* A copy of m with arrays of its own (fs_shard_map_free frees it). */
fs_status_t fs_shard_map_copy(const fs_shard_map_t *m, fs_shard_map_t *out, fs_error_t *err);
/* Whether two maps say the same thing (revisions aside). */
int fs_shard_map_same(const fs_shard_map_t *a, const fs_shard_map_t *b);
/* The shard owning part p, or NULL when none does (or p is out of range). */
const fs_shard_addr_t *fs_shard_map_owner(const fs_shard_map_t *m, int p);
/* Whether shard `id` holds part p (owns it or has a copy). */
int fs_shard_map_holds(const fs_shard_map_t *m, int p, int id);
/* Shard id's place among part p's holders (0: its owner), or -1. */
int fs_shard_map_rank(const fs_shard_map_t *m, int p, int id);

/* A cluster's assignment (etcd /featstore/NAME/assign, written by `featstore
 * cluster add|drain|remove`, cluster/fs_assign.h): which shards are to hold
 * each part, preferred first, and the cluster's members. It has a map's
 * shape, its shards named by id only (no address): shard[i].id. Once a
 * cluster has one, each shard loads the parts it gives the shard and drops
 * the others, and the map follows what the shards hold (fs_shard_map_build).
 * JSON, read as strictly as the map. */
char *fs_shard_assign_format(const fs_shard_map_t *a);
fs_status_t fs_shard_assign_parse(const char *json, size_t len, fs_shard_map_t *out, fs_error_t *err);

#endif
