/* test_shard_grpc.c — owner-routed sampling over the network: three shard
 * servers (`featstore serve ROOT --parts LIST --listen`, part p on shard
 * p % 3) on ephemeral loopback ports, and a trainer's routed engine whose
 * router asks them through gRPC (cluster/fs_shard_client.h). The batches,
 * mapped back, are one engine's on the source dataset bit for bit
 * (routed_fixture.h). ShardEdges answers which pairs are edges. And the
 * refusals: a shard asked for a node it does not hold (a stale map), a
 * ShardEdges of unequal lists or an unknown edge type, a shard server
 * asked for anything but its Shard* methods, a whole server asked for
 * ShardPicks, a shard that is gone
 * (within the deadline), and the serve options a shard does not take. */
#include <criterion/criterion.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "fs_shard_client.h"
#include "routed_fixture.h"
#include "test_util.h"

static fs_error_t err;
static char *dir;

typedef struct {
    pid_t pid[RF_SHARDS];
    FILE *out[RF_SHARDS];
    char addr[RF_SHARDS][64];
    fs_shard_client_t *client[RF_SHARDS];
} remote_t;

static fs_status_t over_grpc(void *ctx, int k, const fs_typed_picks_req_t *q, const int64_t *ids, int64_t n,
                             fs_typed_picks_t *out, fs_error_t *e)
{
    remote_t *r = ctx;
    return fs_shard_client_picks(r->client[k], q, ids, n, out, e);
}

/* Shard k of root: its parts, served until READY. */
static void start_shard(remote_t *r, int k, const char *root, int parts)
{
    char list[256] = "";
    for (int p = k; p < parts; p += RF_SHARDS)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", list[0] ? "," : "", p);
    r->pid[k] = tu_spawn(&r->out[k], "%s serve %s --parts %s --listen 127.0.0.1:0", tu_bin(), root, list);
    char line[512];
    cr_assert_not_null(fgets(line, sizeof line, r->out[k]), "shard %d exited before READY", k);
    cr_assert_eq(sscanf(line, "READY unix=- grpc=%63s metrics=0", r->addr[k]), 1, "bad READY line: %s", line);
    cr_assert_eq(fs_shard_client_open(r->addr[k], 5000, &r->client[k], &err), FS_OK, "%s", err.msg);
}

static void stop_shard(remote_t *r, int k)
{
    fs_shard_client_close(r->client[k]);
    r->client[k] = NULL;
    kill(r->pid[k], SIGTERM);
    int st;
    waitpid(r->pid[k], &st, 0);
    fclose(r->out[k]);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "shard %d stopped uncleanly", k);
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

TestSuite(shard_grpc, .init = up, .fini = down, .timeout = 300);

static void over_the_network(const char *name, int parts, fs_frontier_t f, fs_sample_mode_t mode, int seed_type)
{
    char src[PATH_MAX], root[PATH_MAX];
    snprintf(src, sizeof src, "%s/%s", dir, name);
    snprintf(root, sizeof root, "%s/%s.parts", dir, name);
    remote_t r;
    for (int k = 0; k < RF_SHARDS; k++) start_shard(&r, k, root, parts);
    rf_meta_t m;
    rf_meta_open(&m, root, parts);
    fs_route_transport_t t = {.picks = over_grpc, .ctx = &r};
    rf_same_batches(src, &m, &t, f, mode, seed_type);
    rf_meta_close(&m);
    for (int k = 0; k < RF_SHARDS; k++) stop_shard(&r, k);
}

Test(shard_grpc, homogeneous)
{
    rf_make(dir, "--scale 11 --symmetrize --dedup --drop-self-loops --permute", "h", 8);
    over_the_network("h", 8, FS_FRONTIER_ALL, FS_SAMPLE_UNIFORM, 0);
}

Test(shard_grpc, typed)
{
    rf_make(dir, "--typed --scale 10", "t", 6);
    over_the_network("t", 6, FS_FRONTIER_NEW, FS_SAMPLE_UNIFORM_REPLACE, 0);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

Test(shard_grpc, refusals)
{
    rf_make(dir, "--scale 8 --symmetrize --dedup", "r", 4);
    char src[PATH_MAX], root[PATH_MAX];
    snprintf(src, sizeof src, "%s/r", dir);
    snprintf(root, sizeof root, "%s/r.parts", dir);
    remote_t r;
    start_shard(&r, 0, root, 4); /* parts 0 and 3 */
    rf_meta_t m;
    rf_meta_open(&m, root, 4);
    fs_typed_picks_req_t q = {.hop = 0, .etype = 0, .fanout = 3, .mode = FS_SAMPLE_UNIFORM, .seed = 1};
    fs_typed_picks_t out;
    int64_t mine[2] = {m.first[0][0], m.first[0][3]}, theirs[1] = {m.first[0][1]};
    cr_assert_eq(fs_shard_client_picks(r.client[0], &q, mine, 2, &out, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(out.n, 2);
    cr_assert_eq(fs_shard_client_picks(r.client[0], &q, theirs, 1, &out, &err), FS_ERR_NOT_FOUND);
    cr_assert(strstr(err.msg, "stale"), "a node the shard does not hold: %s", err.msg);
    q.fanout = 0;
    cr_assert_eq(fs_shard_client_picks(r.client[0], &q, mine, 1, &out, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "fanout 0"), "%s", err.msg);
    /* ShardEdges: the shard's rows say which pairs are edges; a node it does not hold is a stale map */
    const fs_edge_type_t *e0 = &fs_shard_part(m.all, 0)->edge_types[0];
    int64_t row = 0;
    while (e0->indptr[row + 1] == e0->indptr[row]) row++;
    int64_t a_src = e0->index_dtype == FS_DTYPE_I32 ? ((const int32_t *)e0->indices)[e0->indptr[row]]
                                                     : ((const int64_t *)e0->indices)[e0->indptr[row]];
    int64_t pd[3] = {m.first[0][0] + row, m.first[0][0] + row, m.first[0][3]}, ps[3] = {a_src, -1, a_src};
    uint8_t is[3] = {7, 7, 7};
    cr_assert_eq(fs_shard_client_edges(r.client[0], 0, pd, ps, 3, is, &err), FS_OK, "%s", err.msg);
    cr_assert(is[0] == 1 && is[1] == 0 && is[2] <= 1, "answers %d %d %d", is[0], is[1], is[2]);
    cr_assert_eq(fs_shard_client_edges(r.client[0], 0, theirs, ps, 1, is, &err), FS_ERR_NOT_FOUND);
    cr_assert(strstr(err.msg, "stale"), "%s", err.msg);
    cr_assert_eq(fs_shard_client_edges(r.client[0], 9, pd, ps, 1, is, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "edge type 9"), "%s", err.msg);
    rf_meta_close(&m);
    /* a shard server answers the Shard* methods only */
    char details[512];
    int port = atoi(strrchr(r.addr[0], ':') + 1);
    cr_assert_eq(tu_grpc_call(port, "/featstore.v1.FeatStore/Info", "", 0, details, sizeof details, NULL),
                 12 /* UNIMPLEMENTED */);
    cr_assert(strstr(details, "a shard of a partitioned dataset: it answers ShardPicks, ShardRows, ShardFile, ShardEdges "
                              "and Stats only"), "%s", details);
    /* ShardEdges with 2 destinations and 1 source: refused by name */
    unsigned char bad[2 + 2 + 16 + 2 + 8] = {0x08, 0x02, 0x1a, 0x10};
    bad[20] = 0x22, bad[21] = 0x08;
    cr_assert_eq(tu_grpc_call(port, "/featstore.v1.FeatStore/ShardEdges", bad, sizeof bad, details, sizeof details,
                              NULL), 3 /* INVALID_ARGUMENT */);
    cr_assert(strstr(details, "1 sources for 2 destinations"), "%s", details);
    stop_shard(&r, 0);
    /* gone: unavailable within the deadline */
    fs_shard_client_t *gone;
    cr_assert_eq(fs_shard_client_open(r.addr[0], 1000, &gone, &err), FS_OK);
    double t0 = now_s();
    fs_status_t st = fs_shard_client_picks(gone, &q, mine, 1, &out, &err);
    cr_assert(st == FS_ERR_UNAVAILABLE || st == FS_ERR_TIMEOUT, "got %d: %s", st, err.msg);
    cr_assert_lt(now_s() - t0, 4.0, "within the 1 s deadline and its slack");
    fs_shard_client_close(gone);
    /* a whole dataset's server refuses ShardPicks */
    tu_server_t whole;
    char sock[PATH_MAX];
    snprintf(sock, sizeof sock, "%s/w.sock", dir);
    cr_assert_eq(tu_serve(&whole, src, sock, ""), 0);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", whole.grpc_port);
    fs_shard_client_t *wc;
    cr_assert_eq(fs_shard_client_open(addr, 5000, &wc, &err), FS_OK);
    q.fanout = 3;
    cr_assert_eq(fs_shard_client_picks(wc, &q, mine, 1, &out, &err), FS_ERR_UNSUPPORTED);
    cr_assert(strstr(err.msg, "not a shard"), "%s", err.msg);
    fs_shard_client_close(wc);
    tu_serve_stop(&whole, SIGTERM);
    /* options a shard server does not take */
    cr_assert_eq(tu_run(NULL, "%s serve %s --parts 0 --listen 127.0.0.1:0 --prefault 2>/dev/null", tu_bin(), root), 2);
    cr_assert_eq(tu_run(NULL, "%s serve %s --parts 0 --listen 127.0.0.1:0 --max-conns-per-uid 3 2>/dev/null", tu_bin(),
                        root), 2, "a unix:// guard a shard's socket does not use");
    cr_assert_eq(tu_run(NULL, "%s serve %s --parts 0 2>/dev/null", tu_bin(), root), 2, "no --listen");
    cr_assert_eq(tu_run(NULL, "%s serve %s --parts 0 --listen 127.0.0.1:0 --shard 1 2>/dev/null", tu_bin(), root), 2,
                 "--shard without --cluster");
    cr_assert_eq(tu_run(NULL, "%s serve %s --parts 0-9 --listen 127.0.0.1:0 2>/dev/null", tu_bin(), root), 1,
                 "parts the root does not have");
}
