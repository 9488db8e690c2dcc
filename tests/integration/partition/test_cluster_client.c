/* test_cluster_client.c — trainers of a sharded cluster (etcd://) get one
 * server's batches, bit for bit.
 *
 * A weighted R-MAT with float16 features is served whole over unix:// and,
 * partitioned into 8 parts, by two clusters on a private etcd: 2 shards
 * (parts 0-3, 4-7) and 4 shards (parts p and p + 4). The same samples
 * (uniform, with replacement, weighted, every neighbour), gathers and
 * splits come back equal from all three (the hot rows from the trainer's
 * cache, and with no cache); bad ids and tables are refused
 * with their errors; a killed shard fails calls within the deadline, and
 * a cluster that is not there fails the connect. Shards with a unix
 * socket are answered in the trainer's process (the unix:// path), the
 * rest over gRPC, in the same batches. When parts move to a new shard, a
 * trainer told its map is stale (or finding a shard gone under a newer
 * map) reads it again and goes on with the same batches. A typed R-MAT on
 * 3 shards (2 in process): typed, disjoint, temporal and link batches
 * equal too, link batches with negatives of every kind (strict ones asked
 * of the shards a round at once: few ShardEdges calls; degree-weighted
 * ones from the root's degree arrays) and temporal ones without seed
 * times. With 2 replicas, a killed shard costs no batch. Skipped (77)
 * without etcd. */
#include <criterion/criterion.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "client_checks.h"
#include "fs_local.h"
#include "fs_cluster.h"
#include "fs_member.h"
#include "featstore/client.h"
#include "test_etcd.h"
#include "test_util.h"

static char *dir;
static tu_etcd_t etcd;

static void up(void) { tu_cluster_up(&dir, &etcd); }
static void down(void) { tu_cluster_down(&dir, &etcd); }

TestSuite(cluster_client, .init = up, .fini = down, .timeout = 150);

/* A shard server of cluster `cluster`; with `local`, also a unix socket
 * (dir/CLUSTER-ID.sock): this test's trainers share its machine, so they
 * answer that shard in process and the others over gRPC. */
static void shard_at(tu_shard_t *p, const char *root, const char *cluster, const char *parts, int id, int local)
{
    char extra[PATH_MAX + 64] = "--metrics 127.0.0.1:0";
    if (local) snprintf(extra, sizeof extra, "--metrics 127.0.0.1:0 --socket %s/%s-%d.sock", dir, cluster, id);
    tu_shard_start(p, &etcd, root, cluster, parts, id, extra);
}

static void shard(tu_shard_t *p, const char *root, const char *cluster, const char *parts, int id)
{
    shard_at(p, root, cluster, parts, id, 0);
}

/* Edge weights (positive, seeded) for the homogeneous dataset at d. */
#define ADD_WEIGHTS                                                                                                \
    "import json,sys,numpy as np; d=sys.argv[1]; m=json.load(open(d+'/manifest.json'))\n"                         \
    "w=np.random.default_rng(5).uniform(0.1,4,m['num_edges']).astype(np.float32); np.save(d+'/edge_weights.npy',w)\n" \
    "m['topology']['edge_weights']='edge_weights.npy'; json.dump(m,open(d+'/manifest.json','w'))"

static void same_block(const fs_block_t *x, const fs_block_t *y, int h)
{
    cr_assert(x->num_dst == y->num_dst && x->num_src == y->num_src && x->num_edges == y->num_edges, "hop %d's sizes", h);
    cr_assert_arr_eq(x->dst_offsets, y->dst_offsets, sizeof(int64_t) * (size_t)(x->num_dst + 1), "hop %d", h);
    cr_assert_arr_eq(x->edge_src, y->edge_src, sizeof(int64_t) * (size_t)x->num_edges, "hop %d", h);
    cr_assert_arr_eq(x->edge_dst, y->edge_dst, sizeof(int64_t) * (size_t)x->num_edges, "hop %d", h);
    cr_assert((x->edge_ids == NULL) == (y->edge_ids == NULL), "hop %d's edge ids", h);
    if (x->edge_ids) cr_assert_arr_eq(x->edge_ids, y->edge_ids, sizeof(int64_t) * (size_t)x->num_edges, "hop %d", h);
}

/* a and b: the same batch, array by array. */
static void same_batch(const fs_batch_t *a, const fs_batch_t *b, const char *what)
{
    cr_assert_eq(a->kind, b->kind, "%s: kind", what);
    cr_assert(a->num_hops == b->num_hops && a->num_nodes == b->num_nodes && a->num_seeds == b->num_seeds,
              "%s: %d hops %lld nodes vs %d hops %lld nodes", what, a->num_hops, (long long)a->num_nodes, b->num_hops,
              (long long)b->num_nodes);
    if (a->nodes) cr_assert_arr_eq(a->nodes, b->nodes, sizeof(int64_t) * (size_t)a->num_nodes, "%s: nodes", what);
    if (a->seed_local)
        cr_assert_arr_eq(a->seed_local, b->seed_local, sizeof(int64_t) * (size_t)a->num_seeds, "%s: seeds", what);
    for (int h = 0; h < a->num_hops; h++) same_block(&a->blocks[h], &b->blocks[h], h);
    cr_assert(a->rows == b->rows && a->dim == b->dim && a->dtype == b->dtype, "%s: rows", what);
    if (a->features)
        cr_assert_arr_eq(a->features, b->features, (size_t)a->rows * (size_t)a->dim * fs_dtype_size(a->dtype),
                         "%s: feature rows", what);
}

static fs_client_t *connect_to(const char *fmt, const char *arg)
{
    char uri[512];
    snprintf(uri, sizeof uri, fmt, arg);
    fs_client_t *c;
    fs_status_t st = fs_connect(uri, NULL, &c);
    cr_assert_eq(st, FS_OK, "%s: %s", uri, fs_client_errstr(c));
    return c;
}

/* A trainer's own metrics (fs_stats): `local` shards answered in process,
 * picks and rows from there (and from gRPC where any shard is remote). */
static long long series(const char *text, const char *name)
{
    const char *at = strstr(text, name);
    cr_assert_not_null(at, "%s in %s", name, text);
    return atoll(at + strlen(name));
}

static void trainer_counts(fs_client_t *c, int local)
{
    char *text;
    cr_assert_eq(fs_stats(c, &text), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(series(text, "\nfeatstore_trainer_local_shards "), local, "%s", text);
    cr_assert_gt(series(text, "\nfeatstore_trainer_calls_total "), 4, "%s", text);
    long long picks_local = series(text, "featstore_trainer_pick_ids_total{path=\"local\"} ");
    long long rows_local = series(text, "featstore_trainer_rows_total{path=\"local\"} ");
    cr_assert(local ? picks_local > 0 && rows_local > 0 : picks_local == 0 && rows_local == 0, "%s", text);
    cr_assert_gt(series(text, "featstore_trainer_pick_ids_total{path=\"remote\"} "), 0, "%s", text);
    cr_assert_gt(series(text, "\nfeatstore_trainer_remote_calls_total "), 0, "%s", text);
    fs_stats_free(text);
}

/* fs_split_local: the train split's ids parts 0, 2, 4 and 6 hold (shards 0
 * and 2 of "four" are in process), in order, by the parts' own orig_ids;
 * refused where no shard is local, over unix://, and for link arrays. */
static void local_split(fs_client_t *c[3], const char *root)
{
    fs_ids_t *all, *mine;
    cr_assert_eq(fs_split(c[0], "train", &all), FS_OK);
    cr_assert_eq(fs_split_local(c[2], "train", &mine), FS_OK, "%s", fs_client_errstr(c[2]));
    char *held = calloc(1024, 1);
    for (int p = 0; p < 8; p += 2) {
        char dir[PATH_MAX + 16];
        snprintf(dir, sizeof dir, "%s/part-%05d", root, p);
        fs_dataset_t *part = tu_open_dataset(dir);
        for (int64_t r = 0; r < part->node_types[0].count; r++) held[part->node_types[0].orig_ids[r]] = 1;
        fs_dataset_close(part);
    }
    int64_t k = 0;
    for (int64_t i = 0; i < all->n; i++)
        if (held[all->ids[i]]) {
            cr_assert(k < mine->n && mine->ids[k] == all->ids[i], "local train id %lld: %lld", (long long)k,
                      k < mine->n ? (long long)mine->ids[k] : -1LL);
            k++;
        }
    cr_assert_eq(k, mine->n, "the local share has %lld ids, the parts hold %lld", (long long)mine->n, (long long)k);
    cr_assert(k > 0 && k < all->n, "a share, not all or nothing: %lld of %lld", (long long)k, (long long)all->n);
    fs_ids_free(all), fs_ids_free(mine), free(held);
    cr_assert_eq(fs_split_local(c[1], "train", &mine), FS_ERR_NOT_FOUND);
    cr_assert(strstr(fs_client_errstr(c[1]), "none of cluster two's shards is on this machine"), "%s",
              fs_client_errstr(c[1]));
    cr_assert_eq(fs_split_local(c[0], "train", &mine), FS_ERR_UNSUPPORTED);
    cr_assert_eq(fs_split_local(c[2], "link/x/src", &mine), FS_ERR_UNSUPPORTED);
    cr_assert_eq(fs_split_local(c[2], "nope", &mine), FS_ERR_NOT_FOUND);
}

/* A shard's socket answers a SHARD_HELLO with its parts while another peer
 * sits connected and silent: a peer that sends nothing delays no other
 * (each waits out its own handshake deadline, 5 s, on a thread of its own). */
static void socket_not_held_up(const char *path)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    cr_assert_lt(strlen(path), sizeof a.sun_path);
    memcpy(a.sun_path, path, strlen(path) + 1);
    int idle = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), asker = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    cr_assert(connect(idle, (struct sockaddr *)&a, sizeof a) == 0 && connect(asker, (struct sockaddr *)&a, sizeof a) == 0,
              "%s: %s", path, strerror(errno));
    featstore_local_ShardHello h = {.major = FS_LOCAL_MAJOR, .minor = FS_LOCAL_MINOR}; /* no partitioning: refused */
    cr_assert_eq(fs_local_send_msg(asker, FS_LOCAL_SHARD_HELLO, featstore_local_ShardHello_fields, &h, NULL, 0, 0), 0);
    struct pollfd p = {.fd = asker, .events = POLLIN};
    cr_assert_eq(poll(&p, 1, 2500), 1, "no answer within 2.5 s while another peer sits silent");
    char buf[4096];
    fs_local_frame_t f;
    int fds[FS_LOCAL_MAX_FDS], n = 0;
    cr_assert_eq(fs_local_recv(asker, &f, buf, sizeof buf, fds, &n, FS_LOCAL_MAX_FDS, 0), 1);
    cr_assert_eq(f.type, FS_LOCAL_ERROR, "the hello named no partitioning: refused by name");
    featstore_local_Error e = featstore_local_Error_init_zero;
    fs_error_t err;
    cr_assert_eq(fs_local_decode(buf, f.len, featstore_local_Error_fields, &e, "error", &err), FS_OK);
    cr_assert(strstr(e.message, "serves partitioning"), "%s", e.message);
    for (int i = 0; i < n; i++) close(fds[i]);
    close(idle), close(asker);
}

Test(cluster_client, one_store_bit_for_bit)
{
    cr_assert_eq(tu_run(NULL, "%s gen rmat --scale 10 --edge-factor 8 --dim 6 --dtype float16 --out %s/g", tu_bin(),
                        dir), 0);
    cr_assert_eq(tu_run(NULL, "/usr/bin/python3 -c \"%s\" %s/g", ADD_WEIGHTS, dir), 0);
    char g[PATH_MAX], root[PATH_MAX], sock[PATH_MAX];
    snprintf(g, sizeof g, "%s/g", dir);
    tu_strip_checksums(g);
    cr_assert_eq(tu_run(NULL, "%s partition %s --parts 8 --out %s/parts", tu_bin(), g, dir), 0);
    snprintf(root, sizeof root, "%s/parts", dir);
    snprintf(sock, sizeof sock, "%s/s.sock", dir);
    tu_server_t whole;
    cr_assert_eq(tu_serve(&whole, g, sock, ""), 0);
    tu_shard_t two[2], four[4];
    shard(&two[0], root, "two", "0-3", 0), shard(&two[1], root, "two", "4-7", 1);
    for (int k = 0; k < 4; k++) {
        char parts[16];
        snprintf(parts, sizeof parts, "%d,%d", k, k + 4);
        shard_at(&four[k], root, "four", parts, k, k % 2 == 0); /* 0 and 2 in process, 1 and 3 over gRPC */
    }
    fs_client_t *c[3] = {connect_to("unix://%s", sock), connect_to("etcd://%s/two", etcd.endpoint),
                         connect_to("etcd://%s/four", etcd.endpoint)};
    const char *name[3] = {"one server", "2 shards", "4 shards"};

    int fan[4][3] = {{5, 3, 2}, {4, 4, 0}, {-1, 0, 0}, {6, 2, 0}}; /* -1: all (one hop: the limit on fanout products) */
    fs_sample_mode_t mode[4] = {FS_SAMPLE_UNIFORM, FS_SAMPLE_UNIFORM_REPLACE, FS_SAMPLE_WEIGHTED,
                                FS_SAMPLE_WEIGHTED_REPLACE};
    int64_t seeds[96];
    for (int i = 0; i < 96; i++) seeds[i] = (i * 389 + 7) % 1024;
    seeds[95] = seeds[3]; /* a duplicate */
    for (int r = 0; r < 4; r++) {
        fs_sample_req_t req = {.struct_size = sizeof req, .num_hops = fan[r][2] ? 3 : fan[r][1] ? 2 : 1, .seed = 11u + (unsigned)r,
                               .want_edge_ids = 1};
        for (int h = 0; h < 3; h++) req.fanout[h] = fan[r][h], req.mode[h] = mode[r];
        fs_batch_t *b[3];
        for (int k = 0; k < 3; k++)
            cr_assert_eq(fs_sample_gather(c[k], seeds, 96, &req, "feat", FS_DTYPE_F32, &b[k]), FS_OK, "%s: %s",
                         name[k], fs_client_errstr(c[k]));
        cr_assert_gt(b[0]->blocks[0].num_edges, 100, "a batch worth comparing");
        for (int k = 1; k < 3; k++) same_batch(b[0], b[k], name[k]);
        for (int k = 0; k < 3; k++) fs_batch_free(b[k]);
    }
    fs_batch_t *b[3]; /* a plain gather, rows as stored */
    for (int k = 0; k < 3; k++) cr_assert_eq(fs_gather(c[k], seeds, 96, "feat", FS_DTYPE_INVALID, &b[k]), FS_OK);
    cr_assert_eq(b[0]->dtype, FS_DTYPE_F16);
    for (int k = 1; k < 3; k++) same_batch(b[0], b[k], name[k]), fs_batch_free(b[k]);
    fs_batch_free(b[0]);

    fs_dataset_t *ds = tu_open_dataset(g); /* splits id for id, labels as the int64 table */
    for (int k = 1; k < 3; k++) tc_labels_and_splits(c[k], ds);
    fs_dataset_close(ds);
    fs_info_t *info;
    cr_assert_eq(fs_info(c[2], &info), FS_OK, "%s", fs_client_errstr(c[2]));
    cr_assert(info->num_nodes == 1024 && info->num_edges == 8192 && info->weighted && info->num_tables == 2);
    cr_assert_str_eq(info->tables[0].name, "feat");
    fs_info_free(info);

    int64_t bad = 5000; /* bad input: errors that name it, and the connection goes on */
    fs_batch_t *x;
    cr_assert_eq(fs_gather(c[1], &bad, 1, "feat", FS_DTYPE_INVALID, &x), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(fs_client_errstr(c[1]), "5000"), "%s", fs_client_errstr(c[1]));
    cr_assert_eq(fs_gather(c[1], seeds, 4, "nope", FS_DTYPE_INVALID, &x), FS_ERR_NOT_FOUND);
    cr_assert(strstr(fs_client_errstr(c[1]), "nope"), "%s", fs_client_errstr(c[1]));
    cr_assert_eq(fs_gather(c[1], seeds, 4, "feat", FS_DTYPE_INVALID, &x), FS_OK);
    fs_batch_free(x);

    /* operations: each shard's /metrics (shard 1's: the trainers ask it over gRPC), and the
     * cluster's sums (fs_stats, featstore stats) */
    char *m0 = tu_metrics_with(four[1].metrics_port, "featstore_shard_peer_rows_total{peer=\"127.0.0.1\"}");
    cr_assert(strstr(m0, "featstore_shard_info{shard=\"1\"") && strstr(m0, "featstore_shard_hop_calls_total{hop=\"2\"}"),
              "%s", m0);
    long long rev = atoll(strstr(m0, "\nfeatstore_shard_map_revision ") + 30);
    cr_assert_gt(rev, 0, "the shard's map revision");
    free(m0);
    char *text, *cli = NULL;
    cr_assert_eq(fs_stats(c[2], &text), FS_OK, "%s", fs_client_errstr(c[2]));
    cr_assert_eq(tu_run(&cli, "%s stats etcd://%s/four", tu_bin(), etcd.endpoint), 0);
    for (int k = 0; k < 2; k++) {
        const char *t = k ? cli : text;
        const char *calls = strstr(t, "featstore_cluster_calls_total{method=\"ShardPicks\"} ");
        cr_assert(calls && atoll(strchr(calls, ' ') + 1) >= 4 * 4, "the shards' picks summed: %s", t);
        for (int s4 = 0; s4 < 4; s4++) {
            char up[128];
            snprintf(up, sizeof up, "featstore_cluster_shard_up{shard=\"%d\"", s4);
            cr_assert(strstr(t, up) && strstr(t, "featstore_shard_bytes_total{shard=\""), "%s", t);
        }
    }
    fs_stats_free(text);
    free(cli);
    trainer_counts(c[2], 2), trainer_counts(c[1], 0); /* where the batches were answered */
    local_split(c, root);
    char four0[PATH_MAX + 32];
    snprintf(four0, sizeof four0, "%s/four-0.sock", dir);
    socket_not_held_up(four0);
    fs_client_t *wrong; /* a shard's socket is not a whole server's */
    char uri[PATH_MAX + 32];
    snprintf(uri, sizeof uri, "unix://%s/four-0.sock", dir);
    cr_assert_eq(fs_connect(uri, NULL, &wrong), FS_ERR_UNSUPPORTED);
    cr_assert(strstr(fs_client_errstr(wrong), "shard 0's socket"), "%s", fs_client_errstr(wrong));
    fs_close(wrong);

    tu_shard_stop(&two[1], SIGKILL); /* a shard gone: calls needing it fail, none hangs */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    fs_status_t st = fs_gather(c[1], seeds, 96, "feat", FS_DTYPE_INVALID, &x);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_assert(st == FS_ERR_UNAVAILABLE || st == FS_ERR_TIMEOUT, "%s: %s", fs_strerror(st), fs_client_errstr(c[1]));
    cr_assert_lt(t1.tv_sec - t0.tv_sec, 12, "the call ends within its deadline");
    for (int k = 0; k < 3; k++) fs_close(c[k]);
    tu_shard_stop(&two[0], SIGTERM);
    for (int k = 0; k < 4; k++) tu_shard_stop(&four[k], SIGTERM);
    tu_serve_stop(&whole, SIGTERM);
}

/* Edge feature tables are not partitioned yet: the typed R-MAT's one goes. */
#define DROP_EDGE_TABLES                                                                                     \
    "import json,sys,os; d=sys.argv[1]; m=json.load(open(d+'/manifest.json'))\n"                             \
    "for e in m.get('edge_types',[]):\n"                                                                           \
    "  for t in e.pop('features',{}).values(): m['files'].pop(t['file']); os.remove(d+'/'+t['file'])\n"   \
    "json.dump(m,open(d+'/manifest.json','w'))"

/* Link batches of `(paper, cites, paper)` on one server and on the shards:
 * equal, bit for bit, for negatives of every kind (binary and triplet,
 * uniform, strict, degree-weighted, both) and temporal batches with and
 * without the seed edges' times (their endpoints' timestamps then, read
 * from the shards). Many negatives, so strict ones meet edges and
 * positives and are drawn again. */
static void same_link_batches(fs_client_t *one, fs_client_t *many, const int64_t *lsrc, const int64_t *ldst,
                              const int64_t *times, const fs_hetero_fanout_t *fan, const char *const *tables)
{
    static const struct {
        fs_neg_mode_t neg;
        double amount;
        int strict, weighted, temporal, timed;
    } cases[] = {{FS_NEG_BINARY, 1.5, 0, 0, 0, 0},  {FS_NEG_TRIPLET, 2, 0, 0, 0, 0},  {FS_NEG_NONE, 2, 0, 0, 1, 1},
                 {FS_NEG_BINARY, 20, 1, 0, 0, 0},   {FS_NEG_TRIPLET, 10, 1, 0, 0, 0}, {FS_NEG_BINARY, 20, 0, 1, 0, 0},
                 {FS_NEG_TRIPLET, 10, 0, 1, 0, 0},  {FS_NEG_BINARY, 20, 1, 1, 0, 0},  {FS_NEG_TRIPLET, 10, 1, 1, 0, 0},
                 {FS_NEG_BINARY, 20, 1, 1, 1, 0},   {FS_NEG_TRIPLET, 3, 0, 0, 1, 0},  {FS_NEG_NONE, 1, 0, 0, 1, 0}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        fs_link_req_t link = FS_LINK_REQ_INIT;
        link.src = "paper", link.rel = "cites", link.dst = "paper", link.count = 6;
        link.src_ids = lsrc, link.dst_ids = ldst;
        link.neg = cases[k].neg, link.amount = cases[k].amount;
        link.strict = cases[k].strict, link.neg_weighted = cases[k].weighted;
        fs_hetero_req_t lreq = FS_HETERO_REQ_INIT;
        lreq.num_hops = 2, lreq.fanouts = fan, lreq.num_fanouts = 4, lreq.seed = 300u + (unsigned)k;
        lreq.want_edge_ids = 1, lreq.node_tables = tables, lreq.num_node_tables = 1;
        if (cases[k].temporal) lreq.temporal = FS_TEMPORAL_UNIFORM, link.time = cases[k].timed ? times : NULL;
        fs_hetero_batch_t *a, *b;
        cr_assert_eq(fs_link_sample(one, &link, &lreq, &a), FS_OK, "%s", fs_client_errstr(one));
        cr_assert_eq(fs_link_sample(many, &link, &lreq, &b), FS_OK, "link case %zu: %s", k, fs_client_errstr(many));
        tc_same_hetero_batch(a, b);
        fs_hetero_batch_free(a), fs_hetero_batch_free(b);
    }
}

Test(cluster_client, typed_batches_bit_for_bit)
{
    char g[PATH_MAX], root[PATH_MAX], sock[PATH_MAX];
    snprintf(g, sizeof g, "%s/typed", dir), snprintf(root, sizeof root, "%s/typed.parts", dir);
    snprintf(sock, sizeof sock, "%s/t.sock", dir);
    cr_assert_eq(tu_run(NULL, "%s gen rmat --typed --scale 10 --out %s", tu_bin(), g), 0);
    cr_assert_eq(tu_run(NULL, "/usr/bin/python3 -c \"%s\" %s", DROP_EDGE_TABLES, g), 0);
    cr_assert_eq(tu_run(NULL, "%s partition %s --parts 6 --out %s", tu_bin(), g, root), 0);
    tu_server_t whole;
    cr_assert_eq(tu_serve(&whole, g, sock, ""), 0);
    setenv("FEATSTORE_CACHE_MB", "0", 1); /* every row from the shards (the other test: the hot ones cached) */
    tu_shard_t s[3];
    shard_at(&s[0], root, "typed", "0,3", 0, 1), shard(&s[1], root, "typed", "1,4", 1); /* 0 and 2 in process */
    shard_at(&s[2], root, "typed", "2,5", 2, 1);
    fs_client_t *one = connect_to("unix://%s", sock), *many = connect_to("etcd://%s/typed", etcd.endpoint);
    static const char *const tables[] = {"feat", "labels"};
    fs_hetero_fanout_t fan[] = {{"paper", "cites", "paper", {5, 3}},
                                {"author", "writes", "paper", {2, 2}},
                                {"paper", "written_by", "author", {0, 3}},
                                {"venue", "publishes", "paper", {1, 1}}};
    int64_t papers[] = {1, 2, 3, 5, 8, 13, 21, 2, 900}, authors[] = {7, 0, 511};
    fs_hetero_seeds_t groups[] = {{.type = "paper", .count = 9, .ids = papers}, {.type = "author", .count = 3,
                                                                                  .ids = authors}};
    for (int frontier = 0; frontier < 2; frontier++) {
        fs_hetero_req_t req = FS_HETERO_REQ_INIT;
        req.num_hops = 2, req.fanouts = fan, req.num_fanouts = 4, req.seed = 42u + (unsigned)frontier;
        req.node_tables = tables, req.num_node_tables = 2, req.want_edge_ids = 1;
        req.frontier = frontier ? FS_FRONTIER_ALL : FS_FRONTIER_NEW;
        fs_hetero_batch_t *a, *b;
        cr_assert_eq(fs_hetero_sample(one, groups, 2, &req, &a), FS_OK, "%s", fs_client_errstr(one));
        cr_assert_eq(fs_hetero_sample(many, groups, 2, &req, &b), FS_OK, "%s", fs_client_errstr(many));
        tc_same_hetero_batch(a, b);
        fs_hetero_batch_free(a), fs_hetero_batch_free(b);
    }
    int64_t times[] = {2000, 2010, 1995, 2025, 2020, 2001, 1999, 2010, 2030}; /* temporal, disjoint: the same */
    for (int k = 0; k < 4; k++) {
        groups[0].time = k == 3 ? NULL : times; /* k 3: the seeds' own timestamps, read from the shards */
        fs_hetero_req_t req = FS_HETERO_REQ_INIT;
        req.num_hops = 2, req.fanouts = fan, req.num_fanouts = 4, req.seed = 77u + (unsigned)k;
        req.node_tables = tables, req.num_node_tables = 1, req.want_edge_ids = 1;
        if (k == 0) req.disjoint = 1;
        if (k == 1 || k == 3) req.temporal = FS_TEMPORAL_UNIFORM;
        if (k == 2) req.temporal = FS_TEMPORAL_LAST, req.strict = 1, req.window = 10;
        fs_hetero_batch_t *a, *b;
        cr_assert_eq(fs_hetero_sample(one, groups, 1, &req, &a), FS_OK, "%s", fs_client_errstr(one));
        cr_assert_eq(fs_hetero_sample(many, groups, 1, &req, &b), FS_OK, "case %d: %s", k, fs_client_errstr(many));
        tc_same_hetero_batch(a, b);
        fs_hetero_batch_free(a), fs_hetero_batch_free(b);
    }
    int64_t lsrc[6], ldst[6], found = 0; /* link batches: seed edges that are edges, so their exclusion matters */
    fs_dataset_t *ds = tu_open_dataset(g);
    for (int e = 0; e < ds->num_edge_types && !found; e++) {
        const fs_edge_type_t *x = &ds->edge_types[e];
        if (strcmp(x->rel, "cites") != 0) continue;
        for (int64_t d = 0; d < ds->node_types[x->dst_type].count && found < 6; d += 7)
            if (x->indptr[d + 1] > x->indptr[d])
                lsrc[found] = x->index_dtype == FS_DTYPE_I32 ? ((const int32_t *)x->indices)[x->indptr[d]]
                                                              : ((const int64_t *)x->indices)[x->indptr[d]],
                ldst[found++] = d;
    }
    fs_dataset_close(ds);
    cr_assert_eq(found, 6);
    same_link_batches(one, many, lsrc, ldst, times, fan, tables);
    static const char *const link_arrays[] = {"link/train/src", "link/train/dst", "link/test/time", "paper/train"};
    for (int k = 0; k < 4; k++) { /* link splits and typed splits, id for id */
        fs_ids_t *a, *b;
        cr_assert_eq(fs_split(one, link_arrays[k], &a), FS_OK, "%s", fs_client_errstr(one));
        cr_assert_eq(fs_split(many, link_arrays[k], &b), FS_OK, "%s: %s", link_arrays[k], fs_client_errstr(many));
        cr_assert(a->n == b->n && a->n > 0, "%s: %lld and %lld ids", link_arrays[k], (long long)a->n, (long long)b->n);
        cr_assert_arr_eq(a->ids, b->ids, sizeof(int64_t) * (size_t)a->n, "%s", link_arrays[k]);
        fs_ids_free(a), fs_ids_free(b);
    }
    fs_info_t *ia, *ib;
    cr_assert_eq(fs_info(one, &ia), FS_OK);
    cr_assert_eq(fs_info(many, &ib), FS_OK);
    cr_assert(ia->num_link_splits == ib->num_link_splits && ia->num_edge_types == ib->num_edge_types && ib->typed);
    for (size_t e = 0; e < ia->num_edge_types; e++)
        cr_assert_eq(ia->edge_types[e].reverse, ib->edge_types[e].reverse, "edge type %zu's reverse", e);
    fs_info_free(ia), fs_info_free(ib);
    char *text; /* strict negatives asked in bulk: a call per owner per round, not one per candidate */
    cr_assert_eq(fs_stats(many, &text), FS_OK, "%s", fs_client_errstr(many));
    const char *edge_calls = strstr(text, "featstore_cluster_calls_total{method=\"ShardEdges\"} ");
    cr_assert(edge_calls, "%s", text);
    long long calls = atoll(strchr(edge_calls, ' ') + 1);
    cr_assert(calls > 0 && calls <= 120, "%lld ShardEdges calls for the strict batches' 480 negatives", calls);
    fs_stats_free(text);
    fs_batch_t *y;
    fs_sample_req_t plain = {.struct_size = sizeof plain, .num_hops = 1, .fanout = {2}};
    cr_assert_eq(fs_sample(many, papers, 2, &plain, &y), FS_ERR_UNSUPPORTED);
    cr_assert(strstr(fs_client_errstr(many), "typed graph"), "%s", fs_client_errstr(many));
    fs_close(one), fs_close(many);
    for (int k = 0; k < 3; k++) tu_shard_stop(&s[k], SIGTERM);
    tu_serve_stop(&whole, SIGTERM);
}

/* The book of a root partitioned before the degree arrays were written. */
#define DROP_DEGREES                                                                           \
    "import json,sys; p=sys.argv[1]+'/partition.json'; b=json.load(open(p))\n"                 \
    "for e in b['edge_types']: e.pop('degrees')\n"                                             \
    "json.dump(b,open(p,'w'))"

/* Degree-weighted negatives need the root's degree arrays: a root without
 * them refuses them by name, and the batches that do not need them go on. */
Test(cluster_client, a_root_without_degree_arrays_says_so)
{
    char g[PATH_MAX], root[PATH_MAX];
    snprintf(g, sizeof g, "%s/old", dir), snprintf(root, sizeof root, "%s/old.parts", dir);
    cr_assert_eq(tu_run(NULL, "%s gen rmat --typed --scale 8 --out %s", tu_bin(), g), 0);
    cr_assert_eq(tu_run(NULL, "/usr/bin/python3 -c \"%s\" %s", DROP_EDGE_TABLES, g), 0);
    cr_assert_eq(tu_run(NULL, "%s partition %s --parts 2 --out %s", tu_bin(), g, root), 0);
    cr_assert_eq(tu_run(NULL, "/usr/bin/python3 -c \"%s\" %s", DROP_DEGREES, root), 0);
    tu_shard_t s;
    shard(&s, root, "old", "0-1", 0);
    fs_client_t *c = connect_to("etcd://%s/old", etcd.endpoint);
    int64_t src[2] = {1, 2}, dst[2] = {3, 4};
    fs_hetero_fanout_t fan[] = {{"paper", "cites", "paper", {2}}};
    fs_link_req_t link = FS_LINK_REQ_INIT;
    link.src = "paper", link.rel = "cites", link.dst = "paper", link.count = 2, link.src_ids = src, link.dst_ids = dst;
    link.neg = FS_NEG_BINARY, link.amount = 2, link.neg_weighted = 1;
    fs_hetero_req_t req = FS_HETERO_REQ_INIT;
    req.num_hops = 1, req.fanouts = fan, req.num_fanouts = 1;
    fs_hetero_batch_t *b;
    cr_assert_eq(fs_link_sample(c, &link, &req, &b), FS_ERR_NOT_FOUND, "%s", fs_client_errstr(c));
    cr_assert(strstr(fs_client_errstr(c), "(paper, cites, paper)") && strstr(fs_client_errstr(c), "partition"), "%s",
              fs_client_errstr(c));
    link.neg_weighted = 0, link.strict = 1; /* strict negatives need no degrees */
    cr_assert_eq(fs_link_sample(c, &link, &req, &b), FS_OK, "%s", fs_client_errstr(c));
    fs_hetero_batch_free(b);
    fs_close(c);
    tu_shard_stop(&s, SIGTERM);
}

/* Parts 2 and 3 move from shard 1 to a new shard 2 at another address,
 * while a trainer holds its connection. With shard 0 over gRPC, shard 0
 * refuses the old map as stale; with shard 0 answered in the trainer
 * (local), nothing says stale, and shard 1's absence while the map has
 * moved on is how the trainer learns. Either way it reads the map again
 * and goes on with the same batches. */
static void moving(int local)
{
    char g[PATH_MAX], root[PATH_MAX];
    snprintf(g, sizeof g, "%s/m", dir), snprintf(root, sizeof root, "%s/m.parts", dir);
    cr_assert_eq(tu_run(NULL, "%s gen rmat --scale 9 --edge-factor 8 --dim 4 --out %s", tu_bin(), g), 0);
    cr_assert_eq(tu_run(NULL, "%s partition %s --parts 4 --out %s", tu_bin(), g, root), 0);
    tu_shard_t a, b, c;
    shard_at(&a, root, "moving", "0,1", 0, local), shard(&b, root, "moving", "2,3", 1);
    fs_client_t *t = connect_to("etcd://%s/moving", etcd.endpoint);
    int64_t seeds[64];
    for (int i = 0; i < 64; i++) seeds[i] = (i * 131) % 512;
    fs_sample_req_t req = {.struct_size = sizeof req, .num_hops = 2, .fanout = {4, 3}, .seed = 5};
    fs_batch_t *before, *after;
    cr_assert_eq(fs_sample_gather(t, seeds, 64, &req, "feat", FS_DTYPE_INVALID, &before), FS_OK, "%s",
                 fs_client_errstr(t));
    char *text;
    cr_assert_eq(fs_stats(t, &text), FS_OK);
    long long rev0 = atoll(strstr(text, "map revision ") + 13);
    long long failures = series(text, "\nfeatstore_trainer_shard_failures_total ");
    fs_stats_free(text);
    tu_shard_stop(&b, SIGTERM); /* parts 2 and 3 move to a new shard, at another address */
    shard(&c, root, "moving", "2,3", 2);
    tu_wait_owner(&etcd, "moving", 2, 2, 10);
    usleep(2500 * 1000); /* shard 0's membership takes the new map within a third of its lease */
    cr_assert_eq(fs_sample_gather(t, seeds, 64, &req, "feat", FS_DTYPE_INVALID, &after), FS_OK, "%s",
                 fs_client_errstr(t));
    same_batch(before, after, "after the move");
    cr_assert_eq(fs_stats(t, &text), FS_OK);
    long long rev1 = atoll(strstr(text, "map revision ") + 13);
    cr_assert(strstr(text, "shard=\"2\""), "%s", text);
    cr_assert_eq(series(text, "\nfeatstore_trainer_shard_failures_total "), failures,
                 "the watch's map followed before the call: nothing sent to the old address");
    fs_stats_free(text);
    cr_assert_gt(rev1, rev0, "the connection follows the new map");
    fs_addr_t where; /* a map older than one already seen: refused as going backwards */
    fs_error_t err;
    fs_cluster_t *view;
    char uri[128];
    snprintf(uri, sizeof uri, "etcd://%s/moving", etcd.endpoint);
    cr_assert_eq(fs_addr_uri(uri, &where, &err), FS_OK);
    setenv("FEATSTORE_CACHE_MB", "0", 1);
    cr_assert_eq(fs_cluster_open(&where, 2000, NULL, &view, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_cluster_remap(view, rev1 + 1000, &err), FS_ERR_FORMAT);
    cr_assert(strstr(err.msg, "went backwards"), "%s", err.msg);
    fs_cluster_unref(view);
    fs_batch_free(before), fs_batch_free(after);
    fs_close(t);
    tu_shard_stop(&a, SIGTERM), tu_shard_stop(&c, SIGTERM);
}

Test(cluster_client, a_moved_part_is_followed)
{
    moving(0);
}

Test(cluster_client, a_moved_part_is_followed_beside_a_local_shard)
{
    moving(1);
}

/* A cluster `name` of 3 shards over R-MAT scale 9 in 6 parts at R = 2 (each
 * part on its owner and the next shard), a trainer on it without a cache,
 * its first batch (*first), and the shard it asked for that batch (*v): one
 * whose failure the trainer's next batches meet. */
static fs_client_t *replicated(const char *name, tu_shard_t s[3], const int64_t *seeds, const fs_sample_req_t *req,
                               fs_batch_t **first, int *v)
{
    char g[PATH_MAX], root[PATH_MAX], uri[128], shard_calls[96], *text;
    snprintf(g, sizeof g, "%s/%s", dir, name), snprintf(root, sizeof root, "%s/%s.parts", dir, name);
    cr_assert_eq(tu_run(NULL, "%s gen rmat --scale 9 --edge-factor 8 --dim 4 --out %s", tu_bin(), g), 0);
    cr_assert_eq(tu_run(NULL, "%s partition %s --parts 6 --out %s", tu_bin(), g, root), 0);
    for (int i = 0; i < 3; i++) tu_shard_start(&s[i], &etcd, root, name, "auto", i, "--shards 3 --replicas 2");
    setenv("FEATSTORE_CACHE_MB", "0", 1); /* every row from a shard */
    snprintf(uri, sizeof uri, "etcd://%s/%s", etcd.endpoint, name);
    fs_client_t *t = connect_to("%s", uri);
    cr_assert_eq(fs_sample_gather(t, seeds, 64, req, "feat", FS_DTYPE_INVALID, first), FS_OK, "%s",
                 fs_client_errstr(t));
    cr_assert_eq(fs_stats(t, &text), FS_OK);
    cr_assert_eq(series(text, "\nfeatstore_trainer_shard_failures_total "), 0);
    *v = -1;
    for (int k = 0; k < 3 && *v < 0; k++) {
        snprintf(shard_calls, sizeof shard_calls, "\nfeatstore_shard_calls_total{shard=\"%d\",method=\"ShardPicks\"} ", k);
        if (series(text, shard_calls) > 0) *v = k;
    }
    fs_stats_free(text);
    cr_assert_geq(*v, 0, "some shard was asked");
    return t;
}

/* A trainer's batches in a loop (a thread), each checked against the first. */
typedef struct {
    fs_client_t *t;
    const int64_t *seeds;
    const fs_sample_req_t *req;
    const fs_batch_t *want;
    double secs;
    int batches, failed, differed;
} loop_t;

static void *batch_loop(void *arg)
{
    loop_t *l = arg;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) * 1e-9 > l->secs) break;
        fs_batch_t *b;
        if (fs_sample_gather(l->t, l->seeds, 64, l->req, "feat", FS_DTYPE_INVALID, &b) != FS_OK) {
            l->failed++;
            continue;
        }
        l->differed += b->num_nodes != l->want->num_nodes || b->rows != l->want->rows ||
                       memcmp(b->nodes, l->want->nodes, sizeof(int64_t) * (size_t)b->num_nodes) != 0 ||
                       memcmp(b->features, l->want->features,
                              (size_t)b->rows * (size_t)b->dim * fs_dtype_size(b->dtype)) != 0;
        l->batches++;
        fs_batch_free(b);
    }
    return NULL;
}

/* The same cluster: a shard stopped with SIGTERM leaves the map, answers the
 * calls that still come until trainers have moved off it, then stops: a
 * trainer issuing batches throughout sees no failed call, let alone an
 * error, and the same batches. */
Test(cluster_client, a_drained_shard_costs_no_call)
{
    int64_t seeds[64];
    for (int i = 0; i < 64; i++) seeds[i] = (i * 131) % 512;
    fs_sample_req_t req = {.struct_size = sizeof req, .num_hops = 2, .fanout = {4, 3}, .seed = 9};
    tu_shard_t s[3];
    fs_batch_t *want;
    char *text;
    int v;
    fs_client_t *t = replicated("drain", s, seeds, &req, &want, &v);
    loop_t l = {.t = t, .seeds = seeds, .req = &req, .want = want, .secs = 1.5};
    pthread_t th;
    pthread_create(&th, NULL, batch_loop, &l);
    usleep(300 * 1000);
    cr_assert_eq(tu_shard_stop(&s[v], SIGTERM), 0, "drained and stopped cleanly");
    pthread_join(th, NULL);
    cr_assert(l.failed == 0 && l.differed == 0 && l.batches > 5, "%d batches, %d failed, %d differed", l.batches,
              l.failed, l.differed);
    cr_assert_eq(fs_stats(t, &text), FS_OK);
    cr_assert_eq(series(text, "\nfeatstore_trainer_shard_failures_total "), 0, "no call went to the drained shard");
    fs_stats_free(text);
    fs_batch_free(want);
    fs_close(t);
    unsetenv("FEATSTORE_CACHE_MB");
    for (int i = 0; i < 3; i++)
        if (i != v) tu_shard_stop(&s[i], SIGTERM);
}

/* Three shards of six parts at 2 replicas (serve --parts auto --replicas 2:
 * each part on its owner and the next shard). A shard killed with SIGKILL
 * costs no batch: the router asks its parts' other holders in the same
 * call, and once its lease lapses the map gives its parts to their copies'
 * holders; restarted, it gets them back, and the trainer follows the map
 * its watch installed without a failed call; the batches stay the same
 * throughout. With both holders of a part gone, a call fails, naming why,
 * within the deadline. */
Test(cluster_client, a_killed_replica_costs_no_batch)
{
    int64_t seeds[64];
    for (int i = 0; i < 64; i++) seeds[i] = (i * 131) % 512;
    fs_sample_req_t req = {.struct_size = sizeof req, .num_hops = 2, .fanout = {4, 3}, .seed = 9};
    tu_shard_t s[3];
    fs_batch_t *before, *b;
    char *text, root[PATH_MAX];
    int v;
    fs_client_t *t = replicated("rep", s, seeds, &req, &before, &v);
    snprintf(root, sizeof root, "%s/rep.parts", dir); /* for the restart below */
    tu_shard_stop(&s[v], SIGKILL); /* its parts v, v + 3 have copies on shard v + 1 */
    cr_assert_eq(fs_sample_gather(t, seeds, 64, &req, "feat", FS_DTYPE_INVALID, &b), FS_OK, "%s", fs_client_errstr(t));
    same_batch(before, b, "with a shard killed, before its lease lapsed");
    fs_batch_free(b);
    cr_assert_eq(fs_stats(t, &text), FS_OK);
    cr_assert_geq(series(text, "\nfeatstore_trainer_shard_failures_total "), 1, "the failed call was counted");
    fs_stats_free(text);
    int next = (v + 1) % 3;
    tu_wait_owner(&etcd, "rep", v, next, 10); /* its lease gone: its parts are their copies' */
    tu_wait_owner(&etcd, "rep", v + 3, next, 1);
    usleep(1000 * 1000); /* the other shards adopt the map within a third of their lease */
    cr_assert_eq(fs_sample_gather(t, seeds, 64, &req, "feat", FS_DTYPE_INVALID, &b), FS_OK, "%s", fs_client_errstr(t));
    same_batch(before, b, "on the map without the killed shard");
    fs_batch_free(b);

    /* it comes back (at a new address): the trainer's watch installs the map, and the next
     * batch goes there with no failed call first */
    cr_assert_eq(fs_stats(t, &text), FS_OK);
    long long failures = series(text, "\nfeatstore_trainer_shard_failures_total ");
    long long updates = series(text, "\nfeatstore_trainer_map_updates_total ");
    fs_stats_free(text);
    tu_shard_start(&s[v], &etcd, root, "rep", "auto", v, "--shards 3 --replicas 2");
    tu_wait_owner(&etcd, "rep", v, v, 10);
    for (int i = 0, seen = 0; i < 100 && !seen; i++) { /* the watch: within milliseconds of the write */
        cr_assert_eq(fs_stats(t, &text), FS_OK);
        seen = series(text, "\nfeatstore_trainer_map_updates_total ") > updates;
        fs_stats_free(text);
        if (!seen) usleep(20 * 1000);
    }
    usleep(200 * 1000); /* and the map that gives v its parts back, if another write follows */
    cr_assert_eq(fs_sample_gather(t, seeds, 64, &req, "feat", FS_DTYPE_INVALID, &b), FS_OK, "%s", fs_client_errstr(t));
    same_batch(before, b, "with the shard back");
    fs_batch_free(b);
    cr_assert_eq(fs_stats(t, &text), FS_OK);
    cr_assert_eq(series(text, "\nfeatstore_trainer_shard_failures_total "), failures, "no call to its old address");
    fs_stats_free(text);

    tu_shard_stop(&s[next], SIGKILL), tu_shard_stop(&s[(v + 2) % 3], SIGKILL); /* parts of next: no holder left */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    fs_status_t st = fs_sample_gather(t, seeds, 64, &req, "feat", FS_DTYPE_INVALID, &b);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_assert(st == FS_ERR_UNAVAILABLE || st == FS_ERR_TIMEOUT, "got %d: %s", st, fs_client_errstr(t));
    cr_assert_lt(t1.tv_sec - t0.tv_sec, 25, "within the deadline");
    fs_batch_free(before);
    fs_close(t);
    unsetenv("FEATSTORE_CACHE_MB");
    tu_shard_stop(&s[v], SIGTERM);
}

/* A static cluster: the shard map in a file, no etcd (--cluster file:PATH). */
Test(cluster_client, a_static_cluster_from_its_map_file)
{
    char g[PATH_MAX], root[PATH_MAX], sock[PATH_MAX], map[PATH_MAX], *book;
    snprintf(g, sizeof g, "%s/s", dir), snprintf(root, sizeof root, "%s/s.parts", dir);
    snprintf(sock, sizeof sock, "%s/s.sock", dir), snprintf(map, sizeof map, "%s/cluster.json", dir);
    cr_assert_eq(tu_run(NULL, "%s gen rmat --scale 9 --edge-factor 8 --dim 4 --out %s", tu_bin(), g), 0);
    cr_assert_eq(tu_run(NULL, "%s partition %s --parts 4 --out %s", tu_bin(), g, root), 0);
    char bookpath[PATH_MAX + 32], text[1024];
    snprintf(bookpath, sizeof bookpath, "%s/partition.json", root);
    book = tu_read(bookpath, NULL);
    char id[17] = "";
    cr_assert_eq(sscanf(strstr(book, "\"id\"") + 4, " : \"%16[0-9a-f]\"", id), 1);
    free(book);
    int port[2] = {tu_free_port(), tu_free_port()};
    snprintf(text, sizeof text, "{\"format\": \"featstore-shard-map\", \"version\": 1, \"name\": \"fixed\", "
             "\"partitioning\": \"%s\", \"parts\": 4, \"shards\": [{\"id\": 0, \"grpc\": \"127.0.0.1:%d\"}, "
             "{\"id\": 1, \"grpc\": \"127.0.0.1:%d\"}], \"owners\": [0, 0, 1, 1]}", id, port[0], port[1]);
    tu_write(map, text, strlen(text));
    tu_shard_t s[2];
    for (int k = 0; k < 2; k++) {
        s[k].pid = tu_spawn(&s[k].out, "%s serve %s --parts %s --listen 127.0.0.1:%d --cluster file:%s --shard %d",
                            tu_bin(), root, k ? "2,3" : "0,1", port[k], map, k);
        char line[512];
        cr_assert_not_null(fgets(line, sizeof line, s[k].out), "shard %d exited before READY", k);
    }
    tu_server_t whole;
    cr_assert_eq(tu_serve(&whole, g, sock, ""), 0);
    fs_client_t *one = connect_to("unix://%s", sock), *many = connect_to("file:%s", map);
    cr_assert_str_eq(fs_client_transport(many), "etcd");
    int64_t seeds[64];
    for (int i = 0; i < 64; i++) seeds[i] = (i * 97) % 512;
    fs_sample_req_t req = {.struct_size = sizeof req, .num_hops = 2, .fanout = {5, 3}, .seed = 3, .want_edge_ids = 1};
    fs_batch_t *a, *b;
    cr_assert_eq(fs_sample_gather(one, seeds, 64, &req, "feat", FS_DTYPE_INVALID, &a), FS_OK);
    cr_assert_eq(fs_sample_gather(many, seeds, 64, &req, "feat", FS_DTYPE_INVALID, &b), FS_OK, "%s",
                 fs_client_errstr(many));
    same_batch(a, b, "a static cluster");
    fs_batch_free(a), fs_batch_free(b);
    fs_close(one), fs_close(many);
    char *out = NULL; /* a shard whose parts are not the map's: refused at start, naming the part */
    cr_assert_neq(tu_run(&out, "%s serve %s --parts 0 --listen 127.0.0.1:0 --cluster file:%s --shard 0 2>&1", tu_bin(),
                         root, map), 0);
    cr_assert(strstr(out, "gives part 1 to shard 0"), "%s", out);
    free(out);
    fs_client_t *none;
    cr_assert_eq(fs_connect("file:/nonexistent/cluster.json", NULL, &none), FS_ERR_NOT_FOUND);
    cr_assert(strstr(fs_client_errstr(none), "/nonexistent/cluster.json"), "%s", fs_client_errstr(none));
    fs_close(none);
    cr_assert_eq(fs_connect("file:relative.json", NULL, &none), FS_ERR_INVALID_ARGUMENT);
    fs_close(none);
    for (int k = 0; k < 2; k++) tu_shard_stop(&s[k], SIGTERM);
    tu_serve_stop(&whole, SIGTERM);
}

Test(cluster_client, no_cluster_no_connection)
{
    fs_client_t *c;
    char uri[256];
    snprintf(uri, sizeof uri, "etcd://%s/nobody", etcd.endpoint); /* no shard ever joined */
    cr_assert_eq(fs_connect(uri, NULL, &c), FS_ERR_NOT_FOUND);
    cr_assert(strstr(fs_client_errstr(c), "no shard has joined"), "%s", fs_client_errstr(c));
    fs_close(c);
    snprintf(uri, sizeof uri, "etcd://127.0.0.1:%d/c", tu_free_port()); /* no etcd there */
    fs_status_t st = fs_connect(uri, NULL, &c);
    cr_assert(st == FS_ERR_UNAVAILABLE || st == FS_ERR_TIMEOUT, "%s: %s", fs_strerror(st), fs_client_errstr(c));
    fs_close(c);
    cr_assert_eq(fs_connect("etcd://127.0.0.1:2379/bad name", NULL, &c), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(fs_client_errstr(c), "bad name"), "%s", fs_client_errstr(c));
    fs_close(c);
    cr_assert_eq(fs_connect("etcd://127.0.0.1:2379", NULL, &c), FS_ERR_INVALID_ARGUMENT);
    fs_close(c);
}
