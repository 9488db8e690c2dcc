/* test_assign.c — cluster/fs_assign: the plans of `featstore cluster
 * add|drain|remove` (a new shard takes floor(copies / members) copies, at
 * most ceil(V / members) parts at R = 1, loads stay within one copy, no
 * part on a shard twice, the same plan every time), the refusals that
 * leave an assignment as it was, and the map built by an assignment while
 * parts move (cluster/fs_shardmap: new holders only once they hold a part,
 * old ones until enough new ones do); assignments through their JSON and
 * every way one from etcd can be wrong. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_assign.h"

#define PARTING "00112233aabbccdd"

static fs_error_t err;

/* A map of `shards` shards (ids 0..shards-1) over `parts` parts at R
 * replicas, dealt as serve --parts auto --replicas R deals them. */
static fs_shard_map_t dealt(int shards, int parts, int R)
{
    fs_shard_map_t m;
    cr_assert_eq(fs_shard_map_empty("c1", PARTING, parts, R, &m, &err), FS_OK);
    m.shard = calloc((size_t)shards, sizeof *m.shard);
    m.num_shards = shards;
    for (int i = 0; i < shards; i++) m.shard[i].id = i;
    for (int p = 0; p < parts; p++)
        for (int r = 0; r < R; r++) m.holders[p * R + r] = (p + r) % shards;
    for (int p = 0; p < parts; p++) m.owner[p] = m.holders[p * R];
    return m;
}

/* Every member's load within one copy of every other's, and no part held twice by a shard. */
static void balanced(const fs_shard_map_t *a)
{
    int lo = 1 << 30, hi = 0;
    for (int i = 0; i < a->num_shards; i++) {
        int load = fs_assign_load(a, a->shard[i].id);
        lo = load < lo ? load : lo, hi = load > hi ? load : hi;
    }
    cr_assert_leq(hi - lo, 1, "loads from %d to %d", lo, hi);
    for (int p = 0; p < a->parts; p++)
        for (int i = 0; i < a->replicas; i++)
            for (int j = i + 1; j < a->replicas; j++)
                cr_assert(a->holders[p * a->replicas + i] < 0 ||
                          a->holders[p * a->replicas + i] != a->holders[p * a->replicas + j], "part %d twice", p);
}

static int parts_changed(const fs_shard_map_t *a, const fs_shard_map_t *b)
{
    int n = 0;
    for (int p = 0; p < a->parts; p++)
        n += memcmp(&a->holders[p * a->replicas], &b->holders[p * b->replicas], sizeof(int) * (size_t)a->replicas) != 0;
    return n;
}

Test(assign, a_fifth_shard_takes_its_share_and_no_more)
{
    for (int V = 5; V <= 256; V += 17) {
        fs_shard_map_t m = dealt(4, V, 1), a, again;
        cr_assert_eq(fs_assign_from_map(&m, 0, &a, &err), FS_OK, "%s", err.msg);
        cr_assert_eq(fs_assign_from_map(&m, 0, &again, &err), FS_OK);
        int moved = 0, moved2 = 0;
        cr_assert_eq(fs_assign_add(&a, 4, &moved, &err), FS_OK, "%s", err.msg);
        cr_assert_eq(moved, V / 5, "V %d: the new shard's share", V);
        cr_assert_leq(moved, (V + 4) / 5, "at most ceil(V / 5) parts move");
        cr_assert_eq(parts_changed(&m, &a), moved, "only the moved parts changed");
        cr_assert_eq(fs_assign_load(&a, 4), moved);
        cr_assert_eq(a.num_shards, 5);
        balanced(&a);
        cr_assert_eq(fs_assign_add(&again, 4, &moved2, &err), FS_OK);
        cr_assert(fs_shard_map_same(&a, &again), "the same plan every time");
        fs_shard_map_free(&m), fs_shard_map_free(&a), fs_shard_map_free(&again);
    }
}

Test(assign, with_replicas_each_copy_moves_once)
{
    fs_shard_map_t m = dealt(4, 64, 2), a;
    cr_assert_eq(fs_assign_from_map(&m, 0, &a, &err), FS_OK);
    int moved = 0;
    cr_assert_eq(fs_assign_add(&a, 9, &moved, &err), FS_OK);
    cr_assert_eq(moved, 128 / 5, "floor(copies / members)");
    cr_assert_eq(parts_changed(&m, &a), moved, "a part gives the new shard one copy at most");
    balanced(&a);
    cr_assert_eq(a.shard[4].id, 9, "members ascend");
    fs_shard_map_free(&m), fs_shard_map_free(&a);
}

/* A shard added to a dealt cluster and drained again leaves the assignment
 * exactly as it was: the same trainers' routes, the same shards' parts. */
Test(assign, add_then_drain_is_no_change)
{
    static const int cases[][3] = {{4, 8, 2}, {4, 64, 1}, {4, 64, 2}, {3, 20, 3}, {8, 64, 2}, {5, 7, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        fs_shard_map_t m = dealt(cases[c][0], cases[c][1], cases[c][2]), a, before;
        cr_assert_eq(fs_assign_from_map(&m, 0, &a, &err), FS_OK);
        cr_assert_eq(fs_assign_from_map(&m, 0, &before, &err), FS_OK);
        int in = 0, out = 0;
        cr_assert_eq(fs_assign_add(&a, cases[c][0], &in, &err), FS_OK);
        cr_assert_eq(fs_assign_remove(&a, cases[c][0], &out, &err), FS_OK);
        cr_assert_eq(in, out, "case %zu: what came in went out", c);
        cr_assert(fs_shard_map_same(&a, &before), "case %zu: %d shards, %d parts, R %d: back as it was", c,
                  cases[c][0], cases[c][1], cases[c][2]);
        fs_shard_map_free(&m), fs_shard_map_free(&a), fs_shard_map_free(&before);
    }
}

Test(assign, a_drained_shard_gives_every_copy_to_the_least_loaded)
{
    fs_shard_map_t m = dealt(5, 64, 2), a;
    cr_assert_eq(fs_assign_from_map(&m, 0, &a, &err), FS_OK);
    int load = fs_assign_load(&a, 2), moved = 0;
    cr_assert_eq(fs_assign_remove(&a, 2, &moved, &err), FS_OK, "%s", err.msg);
    cr_assert(moved >= load && moved <= load + 4, "its %d copies moved, and a few more to even the loads (%d)", load,
              moved);
    cr_assert_eq(fs_assign_load(&a, 2), 0);
    cr_assert_eq(a.num_shards, 4);
    balanced(&a);
    for (int p = 0; p < a.parts; p++) cr_assert_geq(a.holders[p * 2 + 1], 0, "part %d keeps 2 holders", p);
    cr_assert_eq(fs_assign_remove(&a, 2, &moved, &err), FS_ERR_NOT_FOUND, "no member twice");
    cr_assert(strstr(err.msg, "shard 2 is not a member"), "%s", err.msg);
    cr_assert_eq(fs_assign_add(&a, 3, &moved, &err), FS_ERR_EXISTS);
    fs_shard_map_free(&m), fs_shard_map_free(&a);
}

Test(assign, no_fewer_shards_than_replicas)
{
    fs_shard_map_t m = dealt(2, 6, 2), a;
    cr_assert_eq(fs_assign_from_map(&m, 0, &a, &err), FS_OK);
    char *before = fs_shard_assign_format(&a);
    int moved = 0;
    cr_assert_eq(fs_assign_remove(&a, 1, &moved, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "1 shards would be left for 2 replicas"), "%s", err.msg);
    char *after = fs_shard_assign_format(&a);
    cr_assert_str_eq(before, after, "a refused change changes nothing");
    free(before), free(after);
    fs_shard_map_free(&m), fs_shard_map_free(&a);
}

Test(assign, a_dead_shards_parts_are_filled)
{
    fs_shard_map_t m = dealt(3, 12, 1), a;
    for (int p = 0; p < 12; p++) /* shard 2 died: its parts have no holder, and it is out of the map */
        if (m.holders[p] == 2) m.holders[p] = m.owner[p] = -1;
    m.num_shards = 2;
    cr_assert_eq(fs_assign_from_map(&m, 0, &a, &err), FS_ERR_INVALID_ARGUMENT, "not without `partial`");
    cr_assert(strstr(err.msg, "has 0 of its 1 holders"), "%s", err.msg);
    cr_assert_eq(fs_assign_from_map(&m, 1, &a, &err), FS_OK);
    int moved = 0, pending = 0;
    cr_assert_eq(fs_assign_fill(&a, &moved, &err), FS_OK);
    cr_assert_eq(moved, 4);
    for (int p = 0; p < 12; p++) cr_assert_geq(a.holders[p], 0, "part %d has a holder", p);
    balanced(&a);
    cr_assert_not(fs_assign_settled(&a, &m, &pending));
    cr_assert_eq(pending, 4, "the 4 parts the map does not hold yet");
    fs_shard_map_free(&m), fs_shard_map_free(&a);
}

static fs_shard_reg_t reg(int id, const int *owns, int n, const int *copies, int nc, int R)
{
    fs_shard_reg_t r = {.parts = 4, .num_owned = n, .num_copies = nc, .replicas = R};
    r.addr.id = id;
    snprintf(r.addr.grpc, sizeof r.addr.grpc, "127.0.0.1:%d", 7000 + id);
    snprintf(r.partitioning, sizeof r.partitioning, "%s", PARTING);
    r.owns = (int *)owns, r.copies = (int *)copies;
    return r;
}

/* A part moving from shard 0 to shard 1 (R = 1): the map keeps shard 0
 * until shard 1 registers it, then names shard 1 even while shard 0 still
 * holds it. With R = 2, a part given to shards 1 and 2 (was 0 and 1) keeps
 * 0 beside 1 until 2 holds it. */
Test(assign, the_map_follows_what_shards_hold)
{
    fs_shard_map_t a = dealt(2, 4, 1), m;
    a.holders[3] = a.owner[3] = 0; /* part 3 was shard 1's: now given to shard 0 */
    a.holders[0] = a.owner[0] = 1; /* part 0 was shard 0's: now given to shard 1 */
    int o0[] = {0, 2}, o1[] = {1, 3}, o1b[] = {0, 1, 3};
    fs_shard_reg_t before[2] = {reg(0, o0, 2, NULL, 0, 1), reg(1, o1, 2, NULL, 0, 1)};
    cr_assert_eq(fs_shard_map_build("c1", before, 2, &a, &m, &err), FS_OK, "%s", err.msg);
    int want[] = {0, 1, 0, 1};
    cr_assert_arr_eq(m.owner, want, sizeof want, "nothing loaded yet: the old holders");
    fs_shard_map_free(&m);
    fs_shard_reg_t loaded[2] = {reg(0, o0, 2, NULL, 0, 1), reg(1, o1b, 3, NULL, 0, 1)};
    cr_assert_eq(fs_shard_map_build("c1", loaded, 2, &a, &m, &err), FS_OK, "%s", err.msg);
    int want2[] = {1, 1, 0, 1};
    cr_assert_arr_eq(m.owner, want2, sizeof want2, "part 0 held twice: by whom the assignment gives it");
    int pending = 0;
    cr_assert_not(fs_assign_settled(&a, &m, &pending));
    cr_assert_eq(pending, 1, "part 3 still moving");
    fs_shard_map_free(&m);
    fs_shard_reg_t other = reg(1, o1, 2, NULL, 0, 2);
    fs_shard_reg_t wrong[2] = {reg(0, o0, 2, NULL, 0, 1), other};
    cr_assert_eq(fs_shard_map_build("c1", wrong, 2, &a, &m, &err), FS_ERR_FORMAT, "R differs from the assignment's");
    cr_assert(strstr(err.msg, "the assignment 1"), "%s", err.msg);
    fs_shard_map_free(&a);

    fs_shard_map_t a2 = dealt(3, 4, 2);
    a2.holders[0] = 1, a2.holders[1] = 2, a2.owner[0] = 1; /* part 0: was {0, 1}, now {1, 2} */
    int zero[] = {0};
    fs_shard_reg_t r2[3] = {reg(0, zero, 1, NULL, 0, 2), reg(1, NULL, 0, zero, 1, 2), reg(2, NULL, 0, zero, 1, 2)};
    cr_assert_eq(fs_shard_map_build("c1", r2, 2, &a2, &m, &err), FS_OK, "%s", err.msg);
    cr_assert(m.holders[0] == 1 && m.holders[1] == 0, "shard 2 not loaded: 1, then the old holder 0");
    fs_shard_map_free(&m);
    cr_assert_eq(fs_shard_map_build("c1", r2, 3, &a2, &m, &err), FS_OK, "%s", err.msg);
    cr_assert(m.holders[0] == 1 && m.holders[1] == 2, "both new holders: the old one leaves the map");
    fs_shard_map_free(&m);
    fs_shard_map_free(&a2);
}

Test(assign, through_its_json_and_refused_when_wrong)
{
    fs_shard_map_t m = dealt(3, 6, 2), a, back;
    cr_assert_eq(fs_assign_from_map(&m, 0, &a, &err), FS_OK);
    char *json = fs_shard_assign_format(&a);
    cr_assert_eq(fs_shard_assign_parse(json, strlen(json), &back, &err), FS_OK, "%s", err.msg);
    cr_assert(fs_shard_map_same(&a, &back));
    free(json);
    fs_shard_map_free(&back);
    static const struct {
        const char *json, *says;
    } bad[] = {
        {"{\"format\":\"featstore-shard-map\",\"version\":1}", "not \"featstore-assignment\""},
        {"{\"format\":\"featstore-assignment\",\"version\":2}", "version 2"},
        {"{\"format\":\"featstore-assignment\",\"version\":1,\"name\":\"c1\",\"partitioning\":\"" PARTING "\","
         "\"parts\":2,\"replicas\":1,\"shards\":[0,1],\"holders\":[[0],[1]],\"extra\":1}", "extra"},
        {"{\"format\":\"featstore-assignment\",\"version\":1,\"name\":\"c1\",\"partitioning\":\"" PARTING "\","
         "\"parts\":2,\"replicas\":1,\"shards\":[1,0],\"holders\":[[0],[1]]}", "ascend"},
        {"{\"format\":\"featstore-assignment\",\"version\":1,\"name\":\"c1\",\"partitioning\":\"" PARTING "\","
         "\"parts\":2,\"replicas\":1,\"shards\":[0],\"holders\":[[0],[1]]}", "not in \"shards\""},
        {"{\"format\":\"featstore-assignment\",\"version\":1,\"name\":\"c1\",\"partitioning\":\"" PARTING "\","
         "\"parts\":2,\"replicas\":2,\"shards\":[0,1],\"holders\":[[0,0],[1]]}", "twice"},
        {"{\"format\":\"featstore-assignment\",\"version\":1,\"name\":\"c1\",\"partitioning\":\"" PARTING "\","
         "\"parts\":2,\"replicas\":1,\"shards\":[0,1],\"holders\":[[0]]}", "2 entries"},
        {"{\"format\":\"featstore-assignment\",\"version\":1,\"name\":\"c1\",\"partitioning\":\"" PARTING "\","
         "\"parts\":2,\"replicas\":9,\"shards\":[0,1],\"holders\":[[0],[1]]}", "replicas"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        fs_status_t st = fs_shard_assign_parse(bad[i].json, strlen(bad[i].json), &back, &err);
        cr_assert(st == FS_ERR_FORMAT || st == FS_ERR_VERSION, "case %zu accepted", i);
        cr_assert(strstr(err.msg, bad[i].says), "case %zu: %s", i, err.msg);
    }
    fs_shard_map_free(&m), fs_shard_map_free(&a);
}
