/* id_census.h — what a stream of node ids amounts to, in fixed memory: the
 * largest id, and the number of distinct ids estimated by HyperLogLog
 * (2^14 one-byte registers, 16 KiB whatever the ids: standard error 0.8%,
 * and near-exact below ~40,000 ids, where linear counting takes over).
 *
 * Why an estimate: the edge-list importer must tell sparse ids (a SNAP file
 * whose ids reach 10^9 for a few thousand nodes) from dense ones before it
 * allocates anything per id, and an exact count would itself cost memory
 * per distinct id. Its rule only compares the count with the largest id
 * (fs_ids_too_sparse), which a 1% error does not change except at the
 * threshold itself. */
#ifndef FS_ID_CENSUS_H
#define FS_ID_CENSUS_H

#include <stdint.h>

#define FS_ID_CENSUS_BITS 14

typedef struct {
    int64_t max_id;                          /* -1 before any id */
    uint8_t reg[1u << FS_ID_CENSUS_BITS];    /* HyperLogLog registers */
} fs_id_census_t;

/* Ids as given are "too sparse" to keep when they would make more than this
 * many nodes and more than SPARSE_RATIO times the distinct ids seen. */
#define FS_SPARSE_IDS_MIN_NODES 1000000
#define FS_SPARSE_IDS_RATIO 4

void fs_id_census_init(fs_id_census_t *c);
void fs_id_census_add(fs_id_census_t *c, int64_t id); /* id >= 0 */
int64_t fs_id_census_distinct(const fs_id_census_t *c);
/* The rule above, on max_id + 1 nodes. */
int fs_ids_too_sparse(const fs_id_census_t *c);

#endif
