/* test_shard_cluster.c — shard servers joining a cluster on etcd: three
 * `featstore serve ROOT --parts LIST --listen ... --cluster etcd://EP/c1
 * --shard k` against a private etcd (tests/lib/test_etcd.h). The shard map
 * they write names every part's shard at the address it answers on (each
 * answers ShardPicks there); a shard stopped with SIGTERM leaves the map at
 * once, one killed with SIGKILL within its lease; a second server with a
 * live shard's number is refused. Shards numbered as a StatefulSet's pods
 * (`--shard ordinal --parts auto --shards 3`, the host name given by
 * FS_SHARD_HOSTNAME) deal the parts round-robin, and a host name without
 * an ordinal is refused naming it. Skipped (77) without etcd. */
#include <criterion/criterion.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs_member.h"
#include "fs_shard_client.h"
#include "routed_fixture.h"
#include "test_etcd.h"
#include "test_util.h"

static fs_error_t err;
static char *dir;
static tu_etcd_t etcd;
static fs_etcd_t *h;

static void up(void)
{
    dir = tu_mkdtemp();
    tu_etcd_start(&etcd);
    cr_assert_eq(fs_etcd_open(etcd.endpoint, 2000, &h, &err), FS_OK, "%s", err.msg);
}

static void down(void)
{
    fs_etcd_close(h);
    tu_etcd_stop(&etcd);
    tu_rm_rf(dir);
    free(dir);
}

TestSuite(shard_cluster, .init = up, .fini = down, .timeout = 120);

Test(shard_cluster, shards_make_the_map)
{
    rf_make(dir, "--scale 9 --symmetrize --dedup", "g", 6);
    char root[PATH_MAX];
    snprintf(root, sizeof root, "%s/g.parts", dir);
    tu_shard_t s[3];
    tu_shard_start(&s[0], &etcd, root, "c1", "0,3", 0, NULL);
    tu_shard_start(&s[1], &etcd, root, "c1", "1,4", 1, NULL);
    tu_shard_start(&s[2], &etcd, root, "c1", "2,5", 2, NULL);
    fs_shard_map_t m;
    cr_assert_eq(fs_cluster_read_map(h, "c1", &m, &err), FS_OK, "%s", err.msg);
    int want[] = {0, 1, 2, 0, 1, 2};
    cr_assert_arr_eq(m.owner, want, sizeof want, "every part's shard");
    rf_meta_t meta;
    rf_meta_open(&meta, root, 6);
    cr_assert_str_eq(m.partitioning, fs_shard_partitioning(meta.all), "the map names the partitioning");
    for (int p = 0; p < 6; p++) { /* each part's shard answers its nodes at the address the map gives */
        fs_shard_client_t *c;
        fs_typed_picks_t out;
        fs_typed_picks_req_t q = {.fanout = 2, .mode = FS_SAMPLE_UNIFORM, .seed = 7};
        int64_t id = meta.first[0][p];
        cr_assert_eq(fs_shard_client_open(fs_shard_map_owner(&m, p)->grpc, 5000, &c, &err), FS_OK, "%s", err.msg);
        cr_assert_eq(fs_shard_client_picks(c, &q, &id, 1, &out, &err), FS_OK, "part %d: %s", p, err.msg);
        fs_shard_client_close(c);
    }
    rf_meta_close(&meta);
    fs_shard_map_free(&m);
    tu_shard_t twin; /* a second server with shard 1's number */
    twin.pid = tu_spawn(&twin.out, "%s serve %s --parts 1 --listen 127.0.0.1:0 --cluster etcd://%s/c1 --shard 1 2>&1",
                        tu_bin(), root, etcd.endpoint);
    char line[1024] = "";
    cr_assert_not_null(fgets(line, sizeof line, twin.out));
    cr_assert(strstr(line, "shard 1 is already registered"), "%s", line);
    int st = tu_shard_stop(&twin, SIGTERM);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "the twin exits 1");
    st = tu_shard_stop(&s[1], SIGTERM);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    tu_wait_owner(&etcd, "c1", 1, -1, 3); /* left on SIGTERM: at once */
    tu_shard_stop(&s[2], SIGKILL);
    tu_wait_owner(&etcd, "c1", 2, -1, 10); /* killed: within its lease */
    tu_wait_owner(&etcd, "c1", 0, 0, 1);
    tu_shard_stop(&s[0], SIGTERM);
}

/* docker/k8s's StatefulSet: every pod runs the same line, and its number
 * and parts come from its name. */
Test(shard_cluster, statefulset_ordinals_deal_the_parts)
{
    rf_make(dir, "--scale 9 --symmetrize --dedup", "g", 7);
    char root[PATH_MAX];
    snprintf(root, sizeof root, "%s/g.parts", dir);
    tu_shard_t s[3];
    for (int k = 0; k < 3; k++) {
        s[k].pid = tu_spawn(&s[k].out, "env FS_SHARD_HOSTNAME=featstore-shard-%d %s serve %s --parts auto --shards 3 "
                            "--shard ordinal --listen 127.0.0.1:0 --cluster etcd://%s/c1", k, tu_bin(), root,
                            etcd.endpoint);
        tu_shard_ready(&s[k], "c1", k);
    }
    fs_shard_map_t m;
    cr_assert_eq(fs_cluster_read_map(h, "c1", &m, &err), FS_OK, "%s", err.msg);
    int want[] = {0, 1, 2, 0, 1, 2, 0};
    cr_assert_eq(m.parts, 7);
    cr_assert_arr_eq(m.owner, want, sizeof want, "part p on shard p %% 3");
    for (int k = 0; k < 3; k++) cr_assert_str_eq(fs_shard_map_owner(&m, k)->grpc, s[k].grpc);
    fs_shard_map_free(&m);
    for (int k = 0; k < 3; k++) cr_assert_eq(tu_shard_stop(&s[k], SIGTERM), 0);
    /* refusals, each before anything is served */
    char *log;
    const char *line = "%s serve %s --parts auto --shards 3 --shard ordinal --listen 127.0.0.1:0 --cluster etcd://%s/c1";
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "FS_SHARD_HOSTNAME=vm %s", line);
    cr_assert_eq(tu_run(&log, cmd, tu_bin(), root, etcd.endpoint), 1, "%s", log);
    cr_assert(strstr(log, "host name 'vm' has no StatefulSet ordinal") && strstr(log, "NAME-N") &&
              strstr(log, "FS_SHARD_HOSTNAME") && strstr(log, "[invalid argument]"), "%s", log);
    free(log);
    snprintf(cmd, sizeof cmd, "FS_SHARD_HOSTNAME=featstore-shard-3 %s", line);
    cr_assert_eq(tu_run(&log, cmd, tu_bin(), root, etcd.endpoint), 1, "%s", log);
    cr_assert(strstr(log, "shard 3 here, not below --shards 3"), "%s", log);
    free(log);
    cr_assert_eq(tu_run(&log, "%s serve %s --parts auto --shards 8 --shard 7 --listen 127.0.0.1:0 --cluster etcd://%s/c1",
                        tu_bin(), root, etcd.endpoint), 1, "%s", log);
    cr_assert(strstr(log, "shard 7 of 8 shards gets no part of a partitioning of 7 parts"), "%s", log);
    free(log);
    cr_assert_eq(tu_run(NULL, "%s serve %s --parts auto --listen 127.0.0.1:0 --cluster etcd://%s/c1 --shard 0 2>/dev/null",
                        tu_bin(), root, etcd.endpoint), 2, "--parts auto without --shards");
    cr_assert_eq(tu_run(NULL, "%s serve %s --parts 0 --shards 3 --listen 127.0.0.1:0 --cluster etcd://%s/c1 --shard 0 "
                        "2>/dev/null", tu_bin(), root, etcd.endpoint), 2, "--shards without --parts auto");
    cr_assert_eq(tu_run(NULL, "%s serve %s --parts auto --shards 3 --shard 3 --listen 127.0.0.1:0 --cluster etcd://%s/c1 "
                        "2>/dev/null", tu_bin(), root, etcd.endpoint), 2, "--shard 3 of 3, typed");
    /* replicas: more than the shards, copies beside dealt parts, a copy it also owns */
    cr_assert_eq(tu_run(&log, "%s serve %s --parts auto --shards 3 --shard 0 --replicas 4 --listen 127.0.0.1:0 "
                        "--cluster etcd://%s/c1", tu_bin(), root, etcd.endpoint), 2, "%s", log);
    cr_assert(strstr(log, "--replicas") && strstr(log, "more than --shards 3"), "%s", log);
    free(log);
    cr_assert_eq(tu_run(NULL, "%s serve %s --parts auto --shards 3 --shard 0 --replicas 2 --copies 1 --listen "
                        "127.0.0.1:0 --cluster etcd://%s/c1 2>/dev/null", tu_bin(), root, etcd.endpoint), 2,
                 "--copies with --parts auto");
    cr_assert_eq(tu_run(&log, "%s serve %s --parts 0,1 --copies 1,2 --replicas 2 --listen 127.0.0.1:0 --cluster "
                        "etcd://%s/c1 --shard 0", tu_bin(), root, etcd.endpoint), 1, "%s", log);
    cr_assert(strstr(log, "--copies: part 1 is also one of --parts"), "%s", log);
    free(log);
}
