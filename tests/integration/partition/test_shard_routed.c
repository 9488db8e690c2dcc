/* test_shard_routed.c — a partitioned dataset sampled owner-routed, in one
 * process: `featstore partition` writes the parts, three shards
 * (server/shard.h) hold them part % 3, and a trainer's engine whose edge
 * types are remote asks each destination's shard for its picks through the
 * cluster's router (cluster/fs_route.h) over an in-process transport. For
 * the same seeds the batch, mapped back through the parts' orig_ids, must be
 * one engine's on the source dataset, bit for bit (routed_fixture.h): a
 * homogeneous R-MAT (DGL's blocks and PyG's frontier, with replacement too)
 * and a typed one (three node types, six edge types). Checks the
 * partitioner's promise (rows whole and in order, source edge ids,
 * orig_ids) as much as the routing; test_shard_grpc does the same over the
 * network. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "routed_fixture.h"
#include "test_util.h"

static fs_error_t err;
static char *dir;

/* Three shards in this process, part p on shard p % 3. */
typedef struct {
    fs_shard_t *shard[RF_SHARDS];
    fs_shard_ws_t *ws[RF_SHARDS];
} local_t;

static fs_status_t in_process(void *ctx, int k, const fs_typed_picks_req_t *q, const int64_t *ids, int64_t n,
                              fs_typed_picks_t *out, fs_error_t *e)
{
    local_t *l = ctx;
    return fs_shard_picks(l->shard[k], l->ws[k], q, ids, n, out, e);
}

static void check(const char *name, int parts, fs_frontier_t f1, fs_sample_mode_t m1, int t1, fs_frontier_t f2,
                  fs_sample_mode_t m2, int t2)
{
    char src[PATH_MAX], root[PATH_MAX];
    snprintf(src, sizeof src, "%s/%s", dir, name);
    snprintf(root, sizeof root, "%s/%s.parts", dir, name);
    local_t l;
    for (int k = 0; k < RF_SHARDS; k++) {
        int held[RF_MAX_PARTS], n = 0;
        for (int p = k; p < parts; p += RF_SHARDS) held[n++] = p;
        cr_assert_eq(fs_shard_open(root, held, n, 1, &l.shard[k], &err), FS_OK, "%s", err.msg);
        cr_assert_eq(fs_shard_ws_create(&l.ws[k], &err), FS_OK);
    }
    rf_meta_t m;
    rf_meta_open(&m, root, parts);
    fs_route_transport_t t = {.picks = in_process, .ctx = &l};
    rf_same_batches(src, &m, &t, f1, m1, t1);
    rf_same_batches(src, &m, &t, f2, m2, t2);
    rf_meta_close(&m);
    for (int k = 0; k < RF_SHARDS; k++) fs_shard_ws_destroy(l.ws[k]), fs_shard_close(l.shard[k]);
}

static void up(void)
{
    dir = tu_mkdtemp();
}

static void down(void)
{
    tu_rm_rf(dir);
    free(dir);
}

TestSuite(shard_routed, .init = up, .fini = down, .timeout = 300);

Test(shard_routed, homogeneous)
{
    rf_make(dir, "--scale 11 --symmetrize --dedup --drop-self-loops --permute", "h", 8);
    check("h", 8, FS_FRONTIER_ALL, FS_SAMPLE_UNIFORM, 0, FS_FRONTIER_NEW, FS_SAMPLE_UNIFORM_REPLACE, 0);
}

Test(shard_routed, typed)
{
    rf_make(dir, "--typed --scale 10", "t", 6);
    check("t", 6, FS_FRONTIER_NEW, FS_SAMPLE_UNIFORM, 0, FS_FRONTIER_ALL, FS_SAMPLE_UNIFORM, 1);
}

Test(shard_routed, refusals)
{
    rf_make(dir, "--scale 8 --symmetrize --dedup", "r", 4);
    char root[PATH_MAX];
    snprintf(root, sizeof root, "%s/r.parts", dir);
    fs_shard_t *s;
    int bad[] = {1, 1};
    cr_assert_eq(fs_shard_open(root, bad, 2, 1, &s, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "listed twice"), "%s", err.msg);
    int missing[] = {7};
    cr_assert_neq(fs_shard_open(root, missing, 1, 1, &s, &err), FS_OK, "a part the root does not have");
    int one[] = {2};
    cr_assert_eq(fs_shard_open(root, one, 1, 1, &s, &err), FS_OK, "%s", err.msg);
    fs_shard_ws_t *w;
    cr_assert_eq(fs_shard_ws_create(&w, &err), FS_OK);
    const fs_node_type_t *nt = &fs_shard_part(s, 2)->node_types[0];
    int64_t ids[2] = {nt->first, nt->first + nt->count}; /* the second is the next part's */
    fs_typed_picks_req_t q = {.hop = 0, .etype = 0, .fanout = 3, .mode = FS_SAMPLE_UNIFORM, .seed = 1};
    fs_typed_picks_t out;
    cr_assert_eq(fs_shard_picks(s, w, &q, ids, 2, &out, &err), FS_ERR_NOT_FOUND);
    cr_assert(strstr(err.msg, "stale"), "%s", err.msg);
    cr_assert_eq(fs_shard_picks(s, w, &q, ids, 1, &out, &err), FS_OK, "%s", err.msg);
    q.etype = 5;
    cr_assert_eq(fs_shard_picks(s, w, &q, ids, 1, &out, &err), FS_ERR_INVALID_ARGUMENT);
    fs_shard_ws_destroy(w);
    fs_shard_close(s);
}
