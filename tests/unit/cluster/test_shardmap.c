/* test_shardmap.c — cluster/fs_shardmap: registrations and maps through
 * their JSON and back, the map built from registrations, and every way a
 * registration or map from etcd can be wrong, each refused by name. */
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
    cr_assert_eq(fs_shard_map_build("c1", regs, 2, &m, &err), FS_OK, "%s", err.msg);
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
    back.owner[3] = 2;
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
    cr_assert_eq(fs_shard_map_build("c1", regs, 2, &m, &err), FS_ERR_EXISTS);
    cr_assert(strstr(err.msg, "part 1 is held by both shard 0 and shard 1"), "%s", err.msg);
    fs_shard_reg_free(&regs[1]);
    regs[1] = reg(1, "ffffffffffffffff", 4, b + 1, 1);
    cr_assert_eq(fs_shard_map_build("c1", regs, 2, &m, &err), FS_ERR_FORMAT);
    cr_assert(strstr(err.msg, "shard 1 serves partitioning ffffffffffffffff"), "%s", err.msg);
    fs_shard_reg_free(&regs[1]);
    regs[1] = reg(0, PARTING, 4, b + 1, 1);
    cr_assert_eq(fs_shard_map_build("c1", regs, 2, &m, &err), FS_ERR_EXISTS);
    cr_assert(strstr(err.msg, "shard 0 is registered twice"), "%s", err.msg);
    cr_assert_eq(fs_shard_map_build("c1", regs, 0, &m, &err), FS_ERR_NOT_FOUND);
    cr_assert_eq(fs_shard_map_build("bad name", regs, 2, &m, &err), FS_ERR_INVALID_ARGUMENT);
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
    refused("{\"format\":\"featstore-shard-map\",\"version\":2}", "version 2");
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
}
