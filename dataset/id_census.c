/* id_census.c — the largest id and a HyperLogLog count of distinct ids
 * (see id_census.h; Flajolet et al. 2007, with linear counting for small
 * counts and no large-range correction: the hash has 64 bits). */
#include "id_census.h"

#include <math.h>
#include <string.h>

#include "fs_rng.h"

#define REGISTERS (1u << FS_ID_CENSUS_BITS)

void fs_id_census_init(fs_id_census_t *c)
{
    c->max_id = -1;
    memset(c->reg, 0, sizeof c->reg);
}

void fs_id_census_add(fs_id_census_t *c, int64_t id)
{
    if (id > c->max_id) c->max_id = id;
    uint64_t h = fs_mix64((uint64_t)id);
    uint32_t r = (uint32_t)(h >> (64 - FS_ID_CENSUS_BITS));
    uint64_t rest = h << FS_ID_CENSUS_BITS | (1ULL << (FS_ID_CENSUS_BITS - 1)); /* a set bit bounds the rank */
    uint8_t rank = (uint8_t)(__builtin_clzll(rest) + 1);
    if (rank > c->reg[r]) c->reg[r] = rank;
}

int64_t fs_id_census_distinct(const fs_id_census_t *c)
{
    double m = REGISTERS, sum = 0;
    unsigned zeros = 0;
    for (unsigned i = 0; i < REGISTERS; i++) {
        sum += ldexp(1.0, -c->reg[i]);
        zeros += c->reg[i] == 0;
    }
    double est = 0.7213 / (1 + 1.079 / m) * m * m / sum;
    if (est <= 2.5 * m && zeros) est = m * log(m / zeros);
    return (int64_t)llround(est);
}

int fs_ids_too_sparse(const fs_id_census_t *c)
{
    int64_t nodes = c->max_id + 1;
    return nodes > FS_SPARSE_IDS_MIN_NODES && nodes > FS_SPARSE_IDS_RATIO * fs_id_census_distinct(c);
}
