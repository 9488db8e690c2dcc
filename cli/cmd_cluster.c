/* cmd_cluster.c — `featstore cluster status|add|drain|remove
 * etcd://HOST:PORT/CLUSTER [SHARD] [--wait DURATION]`: a running
 * cluster's membership, read and changed on etcd
 * (cluster/fs_cluster_admin.h; docs/cli.md "Elasticity"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fs_addr.h"
#include "fs_assign.h"
#include "fs_cluster_admin.h"
#include "fs_etcd.h"
#include "fs_member.h"

#define CLUSTER_USAGE                                                                                                 \
    "usage: featstore cluster status etcd://HOST:PORT/CLUSTER | featstore cluster add|drain|remove "                 \
    "etcd://HOST:PORT/CLUSTER SHARD [--wait DURATION]"
#define WAIT_MAX_MS (24LL * 3600 * 1000)

/* One line a shard: what the map has it hold, and what the assignment gives it. */
static void print_shard(const fs_shard_map_t *m, const fs_shard_map_t *a, int id, const char *grpc)
{
    int held = 0, given = 0;
    for (int p = 0; p < m->parts; p++) held += fs_shard_map_rank(m, p, id) >= 0;
    for (int p = 0; a && p < a->parts; p++) given += fs_shard_map_rank(a, p, id) >= 0;
    printf("  shard %-4d %-24s holds %d parts", id, grpc ? grpc : "(not registered)", held);
    if (a) printf(", given %d", given);
    printf("\n");
}

static int status(const fs_addr_t *where)
{
    fs_etcd_t *e = NULL;
    fs_shard_map_t m = {0}, a = {0};
    fs_error_t err = {0};
    fs_status_t st = fs_etcd_open(where->target, 2000, &e, &err);
    if (st == FS_OK) st = fs_cluster_read_map(e, where->cluster, &m, &err);
    fs_status_t sa = st == FS_OK ? fs_cluster_read_assign(e, where->cluster, &a, &err) : st;
    fs_etcd_close(e);
    if (st != FS_OK || (sa != FS_OK && sa != FS_ERR_NOT_FOUND)) return cli_fail(&err);
    int has = sa == FS_OK, pending = 0;
    printf("cluster %s: partitioning %s, %d parts, %d replicas, map revision %lld\n", m.name, m.partitioning, m.parts,
           m.replicas, (long long)m.revision);
    if (has) printf("assignment revision %lld, %d members\n", (long long)a.revision, a.num_shards);
    else printf("no assignment: the shards hold the parts they were started with\n");
    for (int i = 0; i < m.num_shards; i++) print_shard(&m, has ? &a : NULL, m.shard[i].id, m.shard[i].grpc);
    for (int i = 0; has && i < a.num_shards; i++) {
        int live = 0;
        for (int j = 0; j < m.num_shards; j++) live |= m.shard[j].id == a.shard[i].id;
        if (!live) print_shard(&m, &a, a.shard[i].id, NULL);
    }
    int unheld = 0;
    for (int p = 0; p < m.parts; p++) unheld += m.owner[p] < 0;
    if (has && !fs_assign_settled(&a, &m, &pending)) printf("moving: %d parts\n", pending);
    else if (has) printf("settled: the map holds what the assignment gives\n");
    if (unheld) printf("WARNING: %d parts have no holder in the map\n", unheld);
    fs_shard_map_free(&m);
    fs_shard_map_free(&a);
    return 0;
}

int cmd_cluster(int argc, char **argv)
{
    static const cli_opt_t allowed[] = {OPT_WAIT, 0};
    cli_t c;
    int rc = cli_parse(&c, argc, argv, allowed);
    if (rc) return rc;
    if (c.num_args < 2) return cli_usage("%s", CLUSTER_USAGE);
    const char *verb = c.args[0];
    fs_addr_t where;
    fs_error_t err = {0};
    if (fs_addr_uri(c.args[1], &where, &err) != FS_OK || where.kind != FS_ADDR_CLUSTER || where.map_file[0])
        return cli_usage("'%s': expected etcd://HOST:PORT/CLUSTER (a static cluster's map is a file: edit it)",
                         c.args[1]);
    if (strcmp(verb, "status") == 0) return c.num_args == 2 && !cli_has(&c, OPT_WAIT) ? status(&where)
                                                                                     : cli_usage("%s", CLUSTER_USAGE);
    fs_cluster_change_t what = strcmp(verb, "add") == 0 ? FS_CLUSTER_ADD : strcmp(verb, "drain") == 0 ? FS_CLUSTER_DRAIN
                               : FS_CLUSTER_REMOVE;
    if ((what == FS_CLUSTER_REMOVE && strcmp(verb, "remove") != 0) || c.num_args != 3)
        return cli_usage("%s", CLUSTER_USAGE);
    char *end;
    long shard = strtol(c.args[2], &end, 10);
    if (*end || end == c.args[2] || shard < 0 || shard >= FS_CLUSTER_SHARDS_MAX)
        return cli_usage("SHARD '%s': expected a shard number, 0 to %d", c.args[2], FS_CLUSTER_SHARDS_MAX - 1);
    int wait_ms = 0, moved = 0, pending = 0;
    if (cli_has(&c, OPT_WAIT) && cli_duration_ms(&c, OPT_WAIT, WAIT_MAX_MS, &wait_ms, &err) != FS_OK)
        return cli_usage("%s", err.msg);
    int64_t revision = 0;
    double t0 = fs_now();
    if (fs_cluster_change(where.target, where.cluster, what, (int)shard, &moved, &revision, &err) != FS_OK)
        return cli_fail(&err);
    printf("cluster %s: shard %ld %s: %d part copies move (assignment revision %lld)\n", where.cluster, shard,
           what == FS_CLUSTER_ADD ? "added" : what == FS_CLUSTER_DRAIN ? "draining" : "removed", moved,
           (long long)revision);
    fflush(stdout);
    if (!cli_has(&c, OPT_WAIT)) return 0;
    if (fs_cluster_settle(where.target, where.cluster, what == FS_CLUSTER_ADD ? -1 : (int)shard, wait_ms, &pending,
                          &err) != FS_OK)
        return cli_fail(&err);
    printf("settled in %.2f s: the map holds what the assignment gives\n", fs_now() - t0);
    return 0;
}
