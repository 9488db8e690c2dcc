/* test_shardmap.c — cluster/fs_shardmap: registrations and maps through
 * their JSON and back, the map built from registrations (with replicas:
 * owners first, a lost owner's part owned by its first copy), version 1
 * maps still read, and every way a registration or map from etcd can be
 * wrong, each refused by name. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_shardmap.h"

#define PARTING "00112233aabbccdd"

static fs_error_t err;

static fs_shard_reg_t reg(int id, const char *parting, int parts, const int *owns, int n)
{
    fs_shard_reg_t r = {.parts = parts, .num_owned = n};
    r.addr.id = id;
    snprintf(r.addr.grpc, sizeof r.addr.grpc, "127.0.0.1:%d", 7000 + id);
    snprintf(r.addr.unix_path, sizeof r.addr.unix_path, "/tmp/shard%d.sock", id);
    snprintf(r.addr.host, sizeof r.addr.host, "box%d", id / 2);
    snprintf(r.partitioning, sizeof r.partitioning, "%s", parting);
    r.owns = malloc((size_t)(n ? n : 1) * sizeof *r.owns);
    memcpy(r.owns, owns, (size_t)n * sizeof *owns);
    return r;
}

Test(shardmap, registration_round_trip)
{
    int owns[] = {0, 2, 5};
    fs_shard_reg_t r = reg(3, PARTING, 8, owns, 3), back;
    char *json = fs_shard_reg_format(&r);
    cr_assert_not_null(json);
    cr_assert_eq(fs_shard_reg_parse(json, strlen(json), &back, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(back.addr.id, 3);
    cr_assert_str_eq(back.addr.grpc, "127.0.0.1:7003");
    cr_assert_str_eq(back.addr.unix_path, "/tmp/shard3.sock");
    cr_assert_str_eq(back.partitioning, PARTING);
    cr_assert_eq(back.num_owned, 3);
    cr_assert_eq(back.owns[2], 5);
    free(json);
    fs_shard_reg_free(&back);
    fs_shard_reg_free(&r);
}

Test(shardmap, built_from_registrations_and_round_trip)
{
    int a[] = {0, 1, 2}, b[] = {4, 5};
    fs_shard_reg_t regs[2] = {reg(7, PARTING, 8, b, 2), reg(2, PARTING, 8, a, 3)};
    fs_shard_map_t m, back;
    cr_assert_eq(fs_shard_map_build("c1", regs, 2, NULL, &m, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(m.num_shards, 2);
    cr_assert_eq(m.shard[0].id, 2, "shards ascend by id");
    int want[] = {2, 2, 2, -1, 7, 7, -1, -1};
    cr_assert_arr_eq(m.owner, want, sizeof want, "each part's owner; unclaimed parts -1");
    cr_assert_str_eq(fs_shard_map_owner(&m, 4)->grpc, "127.0.0.1:7007");
    cr_assert_null(fs_shard_map_owner(&m, 3), "an unowned part has no shard");
    cr_assert_null(fs_shard_map_owner(&m, 8), "out of range");
    char *json = fs_shard_map_format(&m);
    cr_assert_eq(fs_shard_map_parse(json, strlen(json), &back, &err), FS_OK, "%s", err.msg);
    cr_assert(fs_shard_map_same(&m, &back), "the map survives its JSON");
    char *again = fs_shard_map_format(&back);
    cr_assert_str_eq(json, again, "one map, one text");
    cr_assert_eq(m.replicas, 1);
    cr_assert(fs_shard_map_holds(&m, 4, 7) && !fs_shard_map_holds(&m, 4, 2) && !fs_shard_map_holds(&m, 3, 2));
    back.holders[3] = 2;
    cr_assert_not(fs_shard_map_same(&m, &back));
    free(json);
    free(again);
    fs_shard_map_free(&m);
    fs_shard_map_free(&back);
    fs_shard_reg_free(&regs[0]);
    fs_shard_reg_free(&regs[1]);
}

Test(shardmap, build_refuses_conflicts)
{
    int a[] = {0, 1}, b[] = {1, 2};
    fs_shard_reg_t regs[2] = {reg(0, PARTING, 4, a, 2), reg(1, PARTING, 4, b, 2)};
    fs_shard_map_t m;
    cr_assert_eq(fs_shard_map_build("c1", regs, 2, NULL, &m, &err), FS_ERR_EXISTS);
    cr_assert(strstr(err.msg, "part 1 is held by both shard 0 and shard 1"), "%s", err.msg);
    fs_shard_reg_free(&regs[1]);
    regs[1] = reg(1, "ffffffffffffffff", 4, b + 1, 1);
    cr_assert_eq(fs_shard_map_build("c1", regs, 2, NULL, &m, &err), FS_ERR_FORMAT);
    cr_assert(strstr(err.msg, "shard 1 serves partitioning ffffffffffffffff"), "%s", err.msg);
    fs_shard_reg_free(&regs[1]);
    regs[1] = reg(0, PARTING, 4, b + 1, 1);
    cr_assert_eq(fs_shard_map_build("c1", regs, 2, NULL, &m, &err), FS_ERR_EXISTS);
    cr_assert(strstr(err.msg, "shard 0 is registered twice"), "%s", err.msg);
    cr_assert_eq(fs_shard_map_build("c1", regs, 0, NULL, &m, &err), FS_ERR_NOT_FOUND);
    cr_assert_eq(fs_shard_map_build("bad name", regs, 2, NULL, &m, &err), FS_ERR_INVALID_ARGUMENT);
    fs_shard_reg_free(&regs[0]);
    fs_shard_reg_free(&regs[1]);
}

/* Each bad map names what is wrong. */
static void refused(const char *json, const char *want)
{
    fs_shard_map_t m;
    fs_status_t st = fs_shard_map_parse(json, strlen(json), &m, &err);
    cr_assert_neq(st, FS_OK, "accepted: %s", json);
    cr_assert(strstr(err.msg, want), "'%s' should say '%s': %s", json, want, err.msg);
}

#define MAP(body) "{\"format\":\"featstore-shard-map\",\"version\":1,\"name\":\"c1\",\"partitioning\":\"" PARTING "\"," body "}"
#define SHARD0 "{\"id\":0,\"grpc\":\"h:1\",\"unix\":\"\",\"host\":\"\"}"

Test(shardmap, bad_maps)
{
    refused("not json", "not valid JSON");
    refused("[]", "not a JSON object");
    refused("{\"format\":\"x\"}", "\"format\" is \"x\"");
    refused("{\"format\":\"featstore-shard-map\",\"version\":3}", "version 3");
    refused(MAP("\"parts\":2,\"shards\":[" SHARD0 "],\"owners\":[0,0],\"extra\":1"), "unknown key \"extra\"");
    refused(MAP("\"parts\":2,\"shards\":[" SHARD0 "],\"owners\":[0]"), "\"owners\" has 1 entries for 2 parts");
    refused(MAP("\"parts\":2,\"shards\":[" SHARD0 "],\"owners\":[0,0,0]"), "has 3 entries, over 2");
    refused(MAP("\"parts\":2,\"shards\":[" SHARD0 "],\"owners\":[0,3]"), "part 1's owner, shard 3, is not in");
    refused(MAP("\"parts\":2,\"shards\":[" SHARD0 "," SHARD0 "],\"owners\":[0,0]"), "ascend without repeats");
    refused(MAP("\"parts\":0,\"shards\":[],\"owners\":[]"), "\"parts\" is 0, outside");
    refused(MAP("\"parts\":1,\"shards\":[{\"id\":0,\"grpc\":\"nocolon\"}],\"owners\":[0]"), "host:port");
    refused(MAP("\"parts\":1,\"shards\":[{\"id\":5000,\"grpc\":\"h:1\"}],\"owners\":[0]"), "\"id\" is 5000");
    refused(MAP("\"parts\":1,\"owners\":[0]"), "\"shards\" is missing");
    refused(MAP("\"parts\":1,\"shards\":[" SHARD0 "],\"owners\":[\"0\"]"), "\"owners\"[0] must be an integer");
    refused("{\"format\":\"featstore-shard-map\",\"version\":1,\"name\":\"c1\",\"partitioning\":\"XYZ\"}",
            "16 lowercase hex digits");
    refused("{\"format\":\"featstore-shard-map\",\"version\":1,\"name\":\"c 1\",\"partitioning\":\"" PARTING "\"}",
            "is not a letter");
    refused("{\"format\":\"featstore-shard-map\",\"version\":1,\"version\":1}", "not valid JSON");
}

/* A registration with copies: shard `id` owns owns[], holds copies[], of R replicas. */
static fs_shard_reg_t reg_r(int id, int parts, const int *owns, int n, const int *copies, int nc, int replicas)
{
    fs_shard_reg_t r = reg(id, PARTING, parts, owns, n);
    r.copies = malloc((size_t)(nc ? nc : 1) * sizeof *r.copies);
    memcpy(r.copies, copies, (size_t)nc * sizeof *copies);
    r.num_copies = nc, r.replicas = replicas;
    return r;
}

Test(shardmap, replicas)
{
    int a[] = {0, 2}, b[] = {1, 3};
    fs_shard_reg_t regs[3] = {reg_r(1, 4, b, 2, a, 2, 2), reg_r(0, 4, a, 2, b, 2, 2)}, back_reg;
    char *json = fs_shard_reg_format(&regs[0]);
    cr_assert_eq(fs_shard_reg_parse(json, strlen(json), &back_reg, &err), FS_OK, "%s", err.msg);
    cr_assert(back_reg.replicas == 2 && back_reg.num_copies == 2 && back_reg.copies[1] == 2, "a registration's copies");
    fs_shard_reg_free(&back_reg);
    free(json);
    fs_shard_map_t m, back;
    cr_assert_eq(fs_shard_map_build("c1", regs, 2, NULL, &m, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(m.replicas, 2);
    int owners[] = {0, 1, 0, 1}, holders[] = {0, 1, 1, 0, 0, 1, 1, 0};
    cr_assert_arr_eq(m.owner, owners, sizeof owners);
    cr_assert_arr_eq(m.holders, holders, sizeof holders, "each part's owner first, then its copies");
    cr_assert(fs_shard_map_holds(&m, 1, 0) && fs_shard_map_holds(&m, 1, 1));
    json = fs_shard_map_format(&m);
    cr_assert(strstr(json, "\"version\":2") && strstr(json, "\"holders\":[[0,1],[1,0],[0,1],[1,0]]"), "%s", json);
    cr_assert_eq(fs_shard_map_parse(json, strlen(json), &back, &err), FS_OK, "%s", err.msg);
    cr_assert(fs_shard_map_same(&m, &back), "the map survives its JSON");
    free(json);
    fs_shard_map_free(&m), fs_shard_map_free(&back);

    /* shard 0 gone: its parts are owned by their copies' holder */
    cr_assert_eq(fs_shard_map_build("c1", regs, 1, NULL, &m, &err), FS_OK, "%s", err.msg);
    int promoted[] = {1, 1, 1, 1};
    cr_assert_arr_eq(m.owner, promoted, sizeof promoted);
    cr_assert(m.holders[1] == -1 && !fs_shard_map_holds(&m, 0, 0));
    fs_shard_map_free(&m);

    /* a third holder of parts 0 and 2, over 2 replicas; a replica count that differs */
    regs[2] = reg_r(2, 4, a, 0, a, 2, 2);
    cr_assert_eq(fs_shard_map_build("c1", regs, 3, NULL, &m, &err), FS_ERR_EXISTS);
    cr_assert(strstr(err.msg, "part 0 is held by shard 2 and 2 others, over the cluster's 2 replicas"), "%s", err.msg);
    fs_shard_reg_free(&regs[2]);
    regs[2] = reg_r(2, 4, a, 0, a, 1, 3);
    cr_assert_eq(fs_shard_map_build("c1", regs, 3, NULL, &m, &err), FS_ERR_FORMAT);
    cr_assert(strstr(err.msg, "one replica count"), "%s", err.msg);
    for (int i = 0; i < 3; i++) fs_shard_reg_free(&regs[i]);
}

Test(shardmap, version_1_maps_are_read)
{
    const char *v1 = MAP("\"parts\":2,\"shards\":[" SHARD0 "],\"owners\":[0,-1]");
    fs_shard_map_t m, back;
    cr_assert_eq(fs_shard_map_parse(v1, strlen(v1), &m, &err), FS_OK, "%s", err.msg);
    cr_assert(m.replicas == 1 && m.owner[0] == 0 && m.owner[1] == -1 && m.holders[1] == -1);
    char *json = fs_shard_map_format(&m);
    cr_assert_eq(fs_shard_map_parse(json, strlen(json), &back, &err), FS_OK, "%s", err.msg);
    cr_assert(fs_shard_map_same(&m, &back), "written as version 2, the same map");
    free(json);
    fs_shard_map_free(&m), fs_shard_map_free(&back);
}

#define MAP2(body) \
    "{\"format\":\"featstore-shard-map\",\"version\":2,\"name\":\"c1\",\"partitioning\":\"" PARTING "\"," body "}"

Test(shardmap, bad_replicated_maps)
{
    refused(MAP2("\"parts\":2,\"replicas\":2,\"shards\":[" SHARD0 "],\"holders\":[[0]]"),
            "\"holders\" must be an array of 2 entries");
    refused(MAP2("\"parts\":1,\"replicas\":1,\"shards\":[" SHARD0 "],\"holders\":[[0,0]]"), "at most 1 shard ids");
    refused(MAP2("\"parts\":1,\"replicas\":2,\"shards\":[" SHARD0 "],\"holders\":[[0,0]]"), "names shard 0 twice");
    refused(MAP2("\"parts\":1,\"replicas\":2,\"shards\":[" SHARD0 "],\"holders\":[[0,4]]"),
            "part 0's copy, shard 4, is not in");
    refused(MAP2("\"parts\":1,\"replicas\":9,\"shards\":[" SHARD0 "],\"holders\":[[0]]"), "\"replicas\" is 9");
    refused(MAP2("\"parts\":1,\"shards\":[" SHARD0 "],\"holders\":[[0]]"), "\"replicas\" is missing");
    refused(MAP2("\"parts\":1,\"replicas\":1,\"shards\":[" SHARD0 "],\"owners\":[0]"), "unknown key \"owners\"");
    refused(MAP2("\"parts\":1,\"replicas\":1,\"shards\":[" SHARD0 "],\"holders\":[[\"0\"]]"),
            "\"holders\"[0][0] must be a shard id");
}

Test(shardmap, bad_registrations)
{
    fs_shard_reg_t r;
    const char *json = "{\"format\":\"featstore-shard\",\"version\":1,\"id\":1,\"grpc\":\"h:1\",\"partitioning\":\"" PARTING
                       "\",\"parts\":4,\"owns\":[2,1]}";
    cr_assert_eq(fs_shard_reg_parse(json, strlen(json), &r, &err), FS_ERR_FORMAT);
    cr_assert(strstr(err.msg, "ascend without repeats"), "%s", err.msg);
    json = "{\"format\":\"featstore-shard\",\"version\":1,\"id\":1,\"grpc\":\"h:1\",\"partitioning\":\"" PARTING
           "\",\"parts\":4,\"owns\":[4]}";
    cr_assert_eq(fs_shard_reg_parse(json, strlen(json), &r, &err), FS_ERR_FORMAT);
    cr_assert(strstr(err.msg, "\"owns\"[0] must be an integer in [0, 3]"), "%s", err.msg);
    json = "{\"format\":\"featstore-shard-map\",\"version\":1}";
    cr_assert_eq(fs_shard_reg_parse(json, strlen(json), &r, &err), FS_ERR_FORMAT);
    cr_assert(strstr(err.msg, "not \"featstore-shard\""), "%s", err.msg);
    json = "{\"format\":\"featstore-shard\",\"version\":1,\"id\":1,\"grpc\":\"h:1\",\"partitioning\":\"" PARTING
           "\",\"parts\":4,\"owns\":[1],\"copies\":[1,2],\"replicas\":2}";
    cr_assert_eq(fs_shard_reg_parse(json, strlen(json), &r, &err), FS_ERR_FORMAT);
    cr_assert(strstr(err.msg, "both owns part 1 and holds a copy of it"), "%s", err.msg);
    json = "{\"format\":\"featstore-shard\",\"version\":1,\"id\":1,\"grpc\":\"h:1\",\"partitioning\":\"" PARTING
           "\",\"parts\":4,\"owns\":[1],\"copies\":[2]}";
    cr_assert_eq(fs_shard_reg_parse(json, strlen(json), &r, &err), FS_ERR_FORMAT);
    cr_assert(strstr(err.msg, "copies in a cluster of 1 replica"), "%s", err.msg);
    json = "{\"format\":\"featstore-shard\",\"version\":1,\"id\":1,\"grpc\":\"h:1\",\"partitioning\":\"" PARTING
           "\",\"parts\":4,\"owns\":[1],\"copies\":[3,2],\"replicas\":2}";
    cr_assert_eq(fs_shard_reg_parse(json, strlen(json), &r, &err), FS_ERR_FORMAT);
    cr_assert(strstr(err.msg, "\"copies\" must ascend"), "%s", err.msg);
}
