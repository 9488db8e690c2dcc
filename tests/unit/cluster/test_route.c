/* test_route.c — cluster/fs_route with a fake transport: destinations go to
 * the shard owning their part (by range), every shard is asked once per
 * pass with its ids in order, the answers come back merged in the pass's
 * order; with replicas, a failing shard's parts are asked of their next
 * holders in the same call, and the shard is passed over after; an id
 * outside every range, a part without a shard, a shard's error (when no
 * other holder is left) and a short answer are refused by name. */
#include <criterion/criterion.h>
#include <string.h>

#include "fs_route.h"

#define SHARDS 3

/* Each shard answers row i with (id, id + 1000 * shard) picks: two per id,
 * edge ids the negatives, so the merge's order shows in every pick. */
static struct {
    int64_t off[64], src[128], eid[128];
    int calls, tries;
    int64_t asked[64];
    int64_t n;
} fake[SHARDS];
static int fail_shard = -1, short_shard = -1;

static fs_status_t fake_picks(void *ctx, int k, const fs_typed_picks_req_t *q, const int64_t *ids, int64_t n,
                              fs_typed_picks_t *out, fs_error_t *err)
{
    (void)ctx, (void)q;
    fake[k].tries++;
    if (k == fail_shard) return fs_error(err, FS_ERR_UNAVAILABLE, "shard %d is down", k);
    fake[k].calls++;
    fake[k].n = n;
    fake[k].off[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        fake[k].asked[i] = ids[i];
        fake[k].src[2 * i] = ids[i], fake[k].src[2 * i + 1] = ids[i] + 1000 * k;
        fake[k].eid[2 * i] = -ids[i], fake[k].eid[2 * i + 1] = -ids[i] - 1000 * k;
        fake[k].off[i + 1] = 2 * (i + 1);
    }
    *out = (fs_typed_picks_t){.n = k == short_shard ? n - 1 : n, .off = fake[k].off, .src = fake[k].src,
                              .eid = fake[k].eid};
    return FS_OK;
}

/* Two node types over 4 parts; parts 0,3 on shard 0, 1 on shard 2, 2 on shard 1. */
static const int64_t first0[5] = {0, 10, 20, 30, 40}, first1[5] = {0, 5, 6, 9, 12};
static const int64_t *const firsts[2] = {first0, first1};
static const int owner[4] = {0, 2, 1, 0}, etype_dst[2] = {0, 1};

static fs_router_t *router(void)
{
    fs_route_map_t m = {.num_node_types = 2, .first = firsts, .parts = 4, .owner = owner, .num_shards = SHARDS,
                        .num_edge_types = 2, .etype_dst = etype_dst};
    fs_route_transport_t t = {.picks = fake_picks};
    fs_router_t *r;
    fs_error_t err;
    cr_assert_eq(fs_router_create(&m, &t, &r, &err), FS_OK, "%s", err.msg);
    memset(fake, 0, sizeof fake);
    fail_shard = short_shard = -1;
    return r;
}

Test(route, merged_in_the_pass_order)
{
    fs_router_t *r = router();
    int64_t dst[] = {35, 12, 3, 25, 0, 39, 11};
    fs_typed_picks_req_t q = {.etype = 0, .fanout = 2, .want_edge_ids = 1};
    fs_typed_picks_t out;
    fs_error_t err;
    cr_assert_eq(fs_router_picks(r, &q, dst, 7, &out, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(out.n, 7);
    for (int i = 0; i < 7; i++) {
        int k = dst[i] < 10 || dst[i] >= 30 ? 0 : dst[i] < 20 ? 2 : 1;
        cr_assert_eq(out.off[i + 1] - out.off[i], 2);
        cr_assert_eq(out.src[out.off[i]], dst[i], "pick 0 of row %d", i);
        cr_assert_eq(out.src[out.off[i] + 1], dst[i] + 1000 * k, "row %d answered by shard %d", i, k);
        cr_assert_eq(out.eid[out.off[i] + 1], -dst[i] - 1000 * k);
    }
    int64_t want0[] = {35, 3, 0, 39}, want2[] = {12, 11}, want1[] = {25};
    cr_assert(fake[0].calls == 1 && fake[1].calls == 1 && fake[2].calls == 1, "one call per shard");
    cr_assert_arr_eq(fake[0].asked, want0, sizeof want0, "shard 0's ids, in the pass's order");
    cr_assert_arr_eq(fake[2].asked, want2, sizeof want2);
    cr_assert_arr_eq(fake[1].asked, want1, sizeof want1);
    q.etype = 1; /* node type 1's ranges: part 1 is [5, 6), on shard 2 */
    int64_t d1[] = {5, 11};
    cr_assert_eq(fs_router_picks(r, &q, d1, 2, &out, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(out.src[1], 5 + 2000);
    cr_assert_eq(out.src[3], 11, "part 3 of type 1 is shard 0's");
    fs_router_destroy(r);
}

Test(route, refusals)
{
    fs_router_t *r = router();
    fs_typed_picks_req_t q = {.etype = 0, .fanout = 2};
    fs_typed_picks_t out;
    fs_error_t err;
    int64_t outside[] = {3, 40};
    cr_assert_eq(fs_router_picks(r, &q, outside, 2, &out, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "node 40 of type 0 (entry 1) is in no part"), "%s", err.msg);
    int64_t ids[] = {3, 15, 25};
    fail_shard = 1;
    cr_assert_eq(fs_router_picks(r, &q, ids, 3, &out, &err), FS_ERR_UNAVAILABLE);
    cr_assert(strstr(err.msg, "shard 1 is down"), "%s", err.msg);
    fail_shard = -1, short_shard = 2;
    cr_assert_eq(fs_router_picks(r, &q, ids, 3, &out, &err), FS_ERR_FORMAT);
    cr_assert(strstr(err.msg, "shard 2 answered 0 rows for 1"), "%s", err.msg);
    q.etype = 2;
    cr_assert_eq(fs_router_picks(r, &q, ids, 3, &out, &err), FS_ERR_INVALID_ARGUMENT);
    fs_router_destroy(r);
    int bad_owner[4] = {0, 3, 1, 0};
    fs_route_map_t m = {.num_node_types = 2, .first = firsts, .parts = 4, .owner = bad_owner, .num_shards = SHARDS,
                        .num_edge_types = 2, .etype_dst = etype_dst};
    fs_route_transport_t t = {.picks = fake_picks};
    cr_assert_eq(fs_router_create(&m, &t, &r, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "part 1's holder 0 is shard 3 of 3"), "%s", err.msg);
    int hole[4] = {0, -1, 1, 0}; /* part 1's shard is down: refused when a pass needs it */
    q.etype = 0;
    m.owner = hole;
    cr_assert_eq(fs_router_create(&m, &t, &r, &err), FS_OK, "%s", err.msg);
    int64_t fine[] = {3, 25}, needs[] = {3, 15};
    cr_assert_eq(fs_router_picks(r, &q, fine, 2, &out, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_router_picks(r, &q, needs, 2, &out, &err), FS_ERR_UNAVAILABLE);
    cr_assert(strstr(err.msg, "node 15 of type 0 (entry 1) is in part 1, which no shard holds now"), "%s", err.msg);
    fs_router_destroy(r);
}

/* Each part's holders in the order to ask them: 0 [0,1], 1 [2,0], 2 [1,2], 3 [0,2]. */
Test(route, a_failing_replica_is_replaced_in_the_same_call)
{
    const int holders[8] = {0, 1, 2, 0, 1, 2, 0, 2};
    fs_route_map_t m = {.num_node_types = 2, .first = firsts, .parts = 4, .owner = owner, .replicas = 2,
                        .holders = holders, .num_shards = SHARDS, .num_edge_types = 2, .etype_dst = etype_dst};
    fs_route_transport_t t = {.picks = fake_picks};
    fs_router_t *r;
    fs_error_t err;
    cr_assert_eq(fs_router_create(&m, &t, &r, &err), FS_OK, "%s", err.msg);
    memset(fake, 0, sizeof fake);
    fail_shard = 0, short_shard = -1;
    int64_t dst[] = {35, 12, 3, 25}; /* parts 3, 1, 0, 2 */
    int answered_by[] = {2, 2, 1, 1};
    fs_typed_picks_req_t q = {.etype = 0, .fanout = 2};
    fs_typed_picks_t out;
    for (int pass = 0; pass < 2; pass++) {
        cr_assert_eq(fs_router_picks(r, &q, dst, 4, &out, &err), FS_OK, "%s", err.msg);
        for (int i = 0; i < 4; i++)
            cr_assert_eq(out.src[out.off[i] + 1], dst[i] + 1000 * answered_by[i], "pass %d row %d", pass, i);
    }
    cr_assert_eq(fs_router_failovers(r), 1, "one failover: the second pass passed shard 0 over");
    cr_assert_eq(fake[0].tries, 1, "shard 0 asked once, then marked down");
    cr_assert_eq(fake[0].calls, 0);
    fs_router_destroy(r);

    const int alone[8] = {0, 1, 2, -1, 1, 2, 0, 2}; /* part 1 only on shard 2, which fails */
    m.holders = alone;
    cr_assert_eq(fs_router_create(&m, &t, &r, &err), FS_OK, "%s", err.msg);
    fail_shard = 2;
    cr_assert_eq(fs_router_picks(r, &q, dst, 4, &out, &err), FS_ERR_UNAVAILABLE);
    cr_assert(strstr(err.msg, "shard 2 is down"), "no holder left: the shard's own error: %s", err.msg);
    fs_router_destroy(r);
    fail_shard = -1;
}
