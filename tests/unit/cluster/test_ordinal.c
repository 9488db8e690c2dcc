/* test_ordinal.c — cluster/fs_shardmap's rules for a shard numbered by its
 * orchestrator (`featstore serve --shard ordinal --parts auto`, docker/k8s):
 * a StatefulSet pod's ordinal from its host name, every other host name
 * refused naming it and the form, and the parts dealt round-robin, which
 * together cover a partitioning exactly once and make a complete map. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_shardmap.h"

static fs_error_t err;

static int ordinal(const char *host)
{
    int id = -7;
    cr_assert_eq(fs_shard_ordinal(host, &id, &err), FS_OK, "%s: %s", host, err.msg);
    return id;
}

Test(ordinal, statefulset_pod_names)
{
    cr_assert_eq(ordinal("featstore-shard-0"), 0);
    cr_assert_eq(ordinal("featstore-shard-3"), 3);
    cr_assert_eq(ordinal("web-10"), 10);
    cr_assert_eq(ordinal("a-1023"), 1023);           /* FS_CLUSTER_SHARDS_MAX - 1 */
    cr_assert_eq(ordinal("shard2-7"), 7);            /* digits in the name are the name's */
    cr_assert_eq(ordinal("featstore-shard-2.featstore-shard.default.svc.cluster.local"), 2); /* the first label */
    cr_assert_eq(ordinal("x--4"), 4);                /* the name "x-" */
}

Test(ordinal, other_host_names_are_refused_naming_them)
{
    const char *bad[] = {"",          "vm",       "featstore", "featstore-", "-3",       "3",
                         "shard3",    "web-01",   "web-00",    "web-1024",   "web-99999", "web-3x",
                         ".web-3",   "web-+3",    "web- 3",     "web-3-",    "featstore-shard-a.b-2"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int id = -7;
        memset(&err, 0, sizeof err);
        cr_assert_eq(fs_shard_ordinal(bad[i], &id, &err), FS_ERR_INVALID_ARGUMENT, "'%s' taken as %d", bad[i], id);
        cr_assert_eq(id, -7, "'%s': the id is left alone", bad[i]);
        char quoted[128];
        snprintf(quoted, sizeof quoted, "'%s'", bad[i]);
        cr_assert_not_null(strstr(err.msg, quoted), "names the host name: %s", err.msg);
        cr_assert_not_null(strstr(err.msg, "NAME-N"), "says the form: %s", err.msg);
    }
    int id;
    cr_assert_eq(fs_shard_ordinal(NULL, &id, &err), FS_ERR_INVALID_ARGUMENT);
}

Test(ordinal, dealt_parts_are_round_robin)
{
    int out[16], n = 0;
    cr_assert_eq(fs_shard_dealt_parts(1, 4, 16, out, &n, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(n, 4);
    int want[] = {1, 5, 9, 13};
    cr_assert_arr_eq(out, want, sizeof want);
    cr_assert_eq(fs_shard_dealt_parts(2, 3, 7, out, &n, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(n, 2);
    cr_assert(out[0] == 2 && out[1] == 5);
    cr_assert_eq(fs_shard_dealt_parts(0, 1, 5, out, &n, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(n, 5);
    cr_assert_eq(out[4], 4);
}

Test(ordinal, dealt_parts_refusals_name_the_numbers)
{
    int out[64], n = -1;
    cr_assert_eq(fs_shard_dealt_parts(4, 4, 16, out, &n, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "shard 4 of 4 shards"), "%s", err.msg);
    cr_assert_eq(fs_shard_dealt_parts(-1, 4, 16, out, &n, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fs_shard_dealt_parts(0, 0, 16, out, &n, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fs_shard_dealt_parts(0, FS_CLUSTER_SHARDS_MAX + 1, 16, out, &n, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fs_shard_dealt_parts(5, 8, 4, out, &n, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(err.msg, "gets no part of a partitioning of 4 parts"), "%s", err.msg);
    cr_assert_eq(n, -1, "n is left alone on a refusal");
    /* more shards than parts: the shards below the parts still get one each */
    cr_assert_eq(fs_shard_dealt_parts(3, 8, 4, out, &n, &err), FS_OK, "%s", err.msg);
    cr_assert(n == 1 && out[0] == 3);
}

/* Every shard's dealt parts, registered, make a map in which every part has
 * exactly one owner, the shard the rule names. */
Test(ordinal, dealt_parts_make_a_complete_map)
{
    for (int shards = 1; shards <= 9; shards++)
        for (int parts = shards; parts <= 40; parts += 3) {
            fs_shard_reg_t regs[9];
            for (int s = 0; s < shards; s++) {
                regs[s] = (fs_shard_reg_t){.parts = parts, .owns = malloc(sizeof(int) * (size_t)parts)};
                regs[s].addr.id = s;
                snprintf(regs[s].addr.grpc, sizeof regs[s].addr.grpc, "featstore-shard-%d.featstore-shard:7000", s);
                snprintf(regs[s].partitioning, sizeof regs[s].partitioning, "00112233aabbccdd");
                cr_assert_eq(fs_shard_dealt_parts(s, shards, parts, regs[s].owns, &regs[s].num_owned, &err), FS_OK,
                             "%s", err.msg);
            }
            fs_shard_map_t m;
            cr_assert_eq(fs_shard_map_build("demo", regs, shards, NULL, &m, &err), FS_OK, "%d shards, %d parts: %s", shards,
                         parts, err.msg);
            for (int p = 0; p < parts; p++)
                cr_assert_eq(m.owner[p], p % shards, "%d shards, %d parts: part %d", shards, parts, p);
            fs_shard_map_free(&m);
            for (int s = 0; s < shards; s++) free(regs[s].owns);
        }
}
