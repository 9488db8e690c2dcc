/* routed_fixture.h — what test_shard_routed (shards in the test's process)
 * and test_shard_grpc (shard servers) share: a partitioned R-MAT made with
 * the CLI, the trainer's picture of it (every part's id ranges, and the
 * source id <-> global id maps from the parts' orig_ids), and the check that
 * a routed engine's batch through a transport, mapped back, is one engine's
 * on the source dataset bit for bit. Part p's shard is p % RF_SHARDS. */
#ifndef FS_ROUTED_FIXTURE_H
#define FS_ROUTED_FIXTURE_H

#include "fs_route.h"
#include "shard.h"

#define RF_SHARDS 3
#define RF_MAX_PARTS 64

typedef struct {
    int parts, num_types;
    int64_t (*first)[RF_MAX_PARTS + 1]; /* [type][part]: the part's first global id */
    int64_t **new_of;                   /* [type][source id] */
    int64_t **orig_of;                  /* [type][global id] */
    int64_t *count;                     /* [type] */
    fs_shard_t *all;                    /* every part, read for the above */
    const fs_dataset_t *any;            /* a part, for the edge types */
} rf_meta_t;

/* gen rmat GEN into dir/name (edge feature tables dropped: not partitioned
 * yet), then partition it into dir/name.parts. */
void rf_make(const char *dir, const char *gen, const char *name, int parts);
void rf_meta_open(rf_meta_t *m, const char *root, int parts);
void rf_meta_close(rf_meta_t *m);
/* 200 seeds of seed_type, 3 hops over every edge type, through transport t. */
void rf_same_batches(const char *source, const rf_meta_t *m, const fs_route_transport_t *t, fs_frontier_t frontier,
                     fs_sample_mode_t mode, int seed_type);

#endif
