/* test_cluster_elastic.c — a cluster that grows and shrinks under load
 * (`featstore cluster add|drain|remove`, server/shard_follow.h).
 *
 * R-MAT scale 10 in 20 parts on 4 shards at R = 1 (shard 0 answered in the
 * trainer's process over its unix socket, the rest over gRPC), a trainer
 * issuing batches throughout, each checked against its first:
 *   - a fifth shard started with --parts assigned and added moves at most
 *     ceil(V / 5) parts (and as many as balance needs), loads them while
 *     serving, and the map flips to it; the shards that gave parts away
 *     drop them; the trainer sees no failed call and the same batches;
 *   - drained, it hands them back and stops by itself, again without a
 *     failed batch;
 *   - a killed shard, removed, has its parts loaded by the others;
 *   - bad changes are refused, naming why, and change nothing: adding a
 *     shard that is not registered or twice, removing a live one, draining
 *     one that is no member or below the replica count.
 * And a shard whose partition root holds the wrong files (another
 * partitioning's parts) cannot load what it is given: it says so, counts
 * it, registers nothing, the map keeps the parts' old holders, and the
 * trainer sees nothing; drained, it stops. Skipped (77) without etcd. */
#include <criterion/criterion.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "featstore/client.h"
#include "test_etcd.h"
#include "test_util.h"

#define V 20
#define SEEDS 64

static char *dir;
static tu_etcd_t etcd;

static void up(void) { tu_cluster_up(&dir, &etcd); }
static void down(void) { tu_cluster_down(&dir, &etcd); }

TestSuite(cluster_elastic, .init = up, .fini = down, .timeout = 180);

/* A partition root of R-MAT scale 10 in `parts` parts, at dir/NAME.parts. */
static void partitioned(const char *name, int parts, char *root, size_t len)
{
    char g[PATH_MAX];
    snprintf(g, sizeof g, "%s/%s", dir, name), snprintf(root, len, "%s/%s.parts", dir, name);
    cr_assert_eq(tu_run(NULL, "%s gen rmat --scale 10 --edge-factor 8 --dim 4 --out %s", tu_bin(), g), 0);
    cr_assert_eq(tu_run(NULL, "%s partition %s --parts %d --out %s", tu_bin(), g, parts, root), 0);
}

/* Shard `id` of cluster `name` with --parts `parts` (and --shards 4 for
 * auto), metrics, and with `local` a unix socket. */
static void shard(tu_shard_t *s, const char *root, const char *name, const char *parts, int id, int local)
{
    char extra[PATH_MAX + 96];
    int n = snprintf(extra, sizeof extra, "--metrics 127.0.0.1:0%s", strcmp(parts, "auto") ? "" : " --shards 4");
    if (local) snprintf(extra + n, sizeof extra - (size_t)n, " --socket %s/%s-%d.sock", dir, name, id);
    tu_shard_start(s, &etcd, root, name, parts, id, extra);
}

/* `featstore cluster ARGS` on cluster `name`: its exit status, its output into *out (may be NULL). */
static int cluster_cmd(char **out, const char *verb, const char *name, const char *rest)
{
    return tu_run(out, "%s cluster %s etcd://%s/%s %s", tu_bin(), verb, etcd.endpoint, name, rest);
}

/* A trainer's batches in a loop (a thread) until told to stop, each checked against the first. */
typedef struct {
    fs_client_t *t;
    const int64_t *seeds;
    const fs_sample_req_t *req;
    const fs_batch_t *want;
    volatile int stop;
    int batches, failed, differed;
    char first_error[256];
} loop_t;

static void *batch_loop(void *arg)
{
    loop_t *l = arg;
    for (int i = 0; !l->stop && i < 1000000; i++) {
        fs_batch_t *b;
        if (fs_sample_gather(l->t, l->seeds, SEEDS, l->req, "feat", FS_DTYPE_INVALID, &b) != FS_OK) {
            if (!l->failed++) snprintf(l->first_error, sizeof l->first_error, "%s", fs_client_errstr(l->t));
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

static long long series(int port, const char *name)
{
    char *text = tu_metrics_with(port, name);
    cr_assert_not_null(text, "%s on port %d", name, port);
    long long v = atoll(strstr(text, name) + strlen(name));
    free(text);
    return v;
}

/* The sum of a series over shards s[0..n), once it is `want` (a shard
 * drops a part a step after the map moved on), or after 5 s. */
static long long sum_reaches(const tu_shard_t *s, int n, const char *name, long long want)
{
    long long sum = 0;
    for (int tries = 0; tries < 100; tries++, usleep(50 * 1000)) {
        sum = 0;
        for (int i = 0; i < n; i++) sum += series(s[i].metrics_port, name);
        if (sum == want) break;
    }
    return sum;
}

/* Lets the trainer run a little, then checks it never failed nor differed. */
static void no_batch_lost(loop_t *l, const char *after)
{
    int before = l->batches;
    for (int i = 0; i < 50 && l->batches < before + 5; i++) usleep(20 * 1000);
    cr_assert(l->failed == 0 && l->differed == 0 && l->batches > before, "after %s: %d batches, %d failed (%s), %d "
              "differed", after, l->batches, l->failed, l->first_error, l->differed);
}

/* Waits (up to 10 s) for a shard process to exit by itself: its status. */
static int exited(tu_shard_t *s)
{
    int status = -1;
    for (int i = 0; i < 200; i++) {
        if (waitpid(s->pid, &status, WNOHANG) == s->pid) return status;
        usleep(50 * 1000);
    }
    return -1;
}

Test(cluster_elastic, a_fifth_shard_added_and_drained_under_load)
{
    char root[PATH_MAX], uri[128], *out = NULL;
    partitioned("grow", V, root, sizeof root);
    tu_shard_t s[5];
    for (int i = 0; i < 4; i++) shard(&s[i], root, "grow", "auto", i, i == 0);
    shard(&s[4], root, "grow", "assigned", 4, 1);
    setenv("FEATSTORE_CACHE_MB", "0", 1); /* every row from a shard */
    snprintf(uri, sizeof uri, "etcd://%s/grow", etcd.endpoint);
    fs_client_t *t;
    cr_assert_eq(fs_connect(uri, NULL, &t), FS_OK, "%s", fs_client_errstr(t));
    int64_t seeds[SEEDS];
    for (int i = 0; i < SEEDS; i++) seeds[i] = (i * 131) % 1024;
    fs_sample_req_t req = {.struct_size = sizeof req, .num_hops = 2, .fanout = {5, 4}, .seed = 3};
    fs_batch_t *want;
    cr_assert_eq(fs_sample_gather(t, seeds, SEEDS, &req, "feat", FS_DTYPE_INVALID, &want), FS_OK, "%s",
                 fs_client_errstr(t));
    loop_t l = {.t = t, .seeds = seeds, .req = &req, .want = want};
    pthread_t th;
    pthread_create(&th, NULL, batch_loop, &l);

    /* refused, changing nothing */
    cr_assert_eq(cluster_cmd(&out, "add", "grow", "7"), 1, "%s", out);
    cr_assert(strstr(out, "shard 7 is not registered"), "%s", out);
    free(out);
    cr_assert_eq(cluster_cmd(&out, "remove", "grow", "2"), 1, "%s", out);
    cr_assert(strstr(out, "shard 2 is still registered"), "%s", out);
    free(out);
    cr_assert_eq(cluster_cmd(&out, "drain", "grow", "9"), 1, "%s", out);
    cr_assert(strstr(out, "not a member"), "%s", out);
    free(out);
    cr_assert_eq(cluster_cmd(&out, "status", "grow", ""), 0, "%s", out);
    cr_assert(strstr(out, "no assignment"), "%s", out);
    free(out);

    /* the fifth shard takes its share while the trainer runs */
    int before = l.batches;
    cr_assert_eq(cluster_cmd(&out, "add", "grow", "4 --wait 30s"), 0, "%s", out);
    cr_assert_gt(l.batches, before, "batches came while the parts moved");
    int moved = -1;
    const char *at = strstr(out, "part copies move");
    cr_assert(at && sscanf(strstr(out, "added: "), "added: %d", &moved) == 1, "%s", out);
    cr_assert(moved >= V / 5 && moved <= (V + 4) / 5, "%d parts moved: at most ceil(%d / 5), as balance needs", moved,
              V);
    cr_assert(strstr(out, "settled in"), "%s", out);
    free(out);
    cr_assert_eq(sum_reaches(&s[4], 1, "\nfeatstore_shard_parts ", moved), moved, "the new shard holds what it was given");
    cr_assert_eq(series(s[4].metrics_port, "\nfeatstore_shard_part_loads_total "), moved);
    cr_assert_eq(sum_reaches(s, 4, "\nfeatstore_shard_part_drops_total ", moved), moved,
                 "the shards that gave parts away dropped them");
    cr_assert_eq(cluster_cmd(&out, "add", "grow", "4"), 1, "%s", out);
    cr_assert(strstr(out, "a member already"), "%s", out);
    free(out);
    no_batch_lost(&l, "the add");

    /* drained, it hands them back and stops by itself */
    cr_assert_eq(cluster_cmd(&out, "drain", "grow", "4 --wait 30s"), 0, "%s", out);
    cr_assert(strstr(out, "settled in"), "%s", out);
    free(out);
    int status = exited(&s[4]);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the drained shard stopped cleanly (%d)", status);
    no_batch_lost(&l, "the drain");

    /* a shard killed for good, removed: its parts are loaded by the others */
    l.stop = 1;
    pthread_join(th, NULL);
    tu_shard_stop(&s[3], SIGKILL);
    tu_wait_owner(&etcd, "grow", 3, -1, 10); /* its lease lapsed: part 3 has no holder */
    cr_assert_eq(cluster_cmd(&out, "remove", "grow", "3 --wait 30s"), 0, "%s", out);
    cr_assert(strstr(out, "settled in"), "%s", out);
    free(out);
    fs_batch_t *b;
    cr_assert_eq(fs_sample_gather(t, seeds, SEEDS, &req, "feat", FS_DTYPE_INVALID, &b), FS_OK, "%s",
                 fs_client_errstr(t));
    cr_assert(b->num_nodes == want->num_nodes && memcmp(b->nodes, want->nodes, sizeof(int64_t) * (size_t)b->num_nodes)
              == 0, "the same batch from 3 shards");
    fs_batch_free(b);
    fs_batch_free(want);
    fs_close(t);
    unsetenv("FEATSTORE_CACHE_MB");
    for (int i = 0; i < 3; i++) tu_shard_stop(&s[i], SIGTERM);
}

/* With 2 replicas, a cluster of 2 shards cannot lose one: the drain is
 * refused and the assignment stays as it was. */
Test(cluster_elastic, no_drain_below_the_replica_count)
{
    char root[PATH_MAX], *out = NULL;
    partitioned("pair", 6, root, sizeof root);
    tu_shard_t s[2];
    for (int i = 0; i < 2; i++) tu_shard_start(&s[i], &etcd, root, "pair", "auto", i, "--shards 2 --replicas 2");
    tu_wait_owner(&etcd, "pair", 1, 1, 10);
    cr_assert_eq(cluster_cmd(&out, "drain", "pair", "1"), 1, "%s", out);
    cr_assert(strstr(out, "1 shards would be left for 2 replicas"), "%s", out);
    free(out);
    cr_assert_eq(cluster_cmd(&out, "status", "pair", ""), 0, "%s", out);
    cr_assert(strstr(out, "no assignment"), "the refused drain wrote none: %s", out);
    free(out);
    for (int i = 0; i < 2; i++) tu_shard_stop(&s[i], SIGTERM);
}

/* A shard whose root holds another partitioning's parts: given parts, it
 * cannot load them; the map keeps their holders and trainers see nothing. */
Test(cluster_elastic, a_shard_with_the_wrong_files_changes_nothing)
{
    char root[PATH_MAX], other[PATH_MAX], bad[PATH_MAX], uri[128], *out = NULL;
    partitioned("good", 8, root, sizeof root);
    partitioned("other", 4, other, sizeof other);
    snprintf(bad, sizeof bad, "%s/bad.parts", dir); /* good's book, other's parts */
    cr_assert_eq(tu_run(NULL, "mkdir %s && cp %s/*.json %s/*.npy %s/ && for p in 0 1 2 3 4 5 6 7; do "
                        "ln -s %s/part-0000$((p %% 4)) %s/part-0000$p; done", bad, root, root, bad, other, bad), 0);
    tu_shard_t s[3];
    for (int i = 0; i < 2; i++) tu_shard_start(&s[i], &etcd, root, "wrong", i ? "4-7" : "0-3", i, "");
    tu_shard_start(&s[2], &etcd, bad, "wrong", "assigned", 2, "--metrics 127.0.0.1:0");
    snprintf(uri, sizeof uri, "etcd://%s/wrong", etcd.endpoint);
    fs_client_t *t;
    cr_assert_eq(fs_connect(uri, NULL, &t), FS_OK, "%s", fs_client_errstr(t));
    int64_t seeds[SEEDS];
    for (int i = 0; i < SEEDS; i++) seeds[i] = i * 7;
    fs_sample_req_t req = {.struct_size = sizeof req, .num_hops = 2, .fanout = {5, 4}, .seed = 3};
    fs_batch_t *want, *b;
    cr_assert_eq(fs_sample_gather(t, seeds, SEEDS, &req, "feat", FS_DTYPE_INVALID, &want), FS_OK);
    cr_assert_eq(cluster_cmd(&out, "add", "wrong", "2 --wait 3s"), 1, "%s", out);
    cr_assert(strstr(out, "not settled within 3000 ms"), "%s", out);
    free(out);
    cr_assert_geq(series(s[2].metrics_port, "\nfeatstore_shard_part_load_errors_total "), 1);
    cr_assert_eq(series(s[2].metrics_port, "\nfeatstore_shard_parts "), 0, "it holds nothing");
    cr_assert_eq(cluster_cmd(&out, "status", "wrong", ""), 0, "%s", out);
    cr_assert(strstr(out, "shard 2 ") && strstr(out, "holds 0 parts, given 2") && !strstr(out, "no holder"), "%s", out);
    free(out);
    cr_assert_eq(fs_sample_gather(t, seeds, SEEDS, &req, "feat", FS_DTYPE_INVALID, &b), FS_OK, "%s",
                 fs_client_errstr(t));
    cr_assert(b->num_nodes == want->num_nodes && memcmp(b->nodes, want->nodes, sizeof(int64_t) * (size_t)b->num_nodes)
              == 0, "the same batch: the map kept the parts' holders");
    fs_batch_free(b);
    cr_assert_eq(cluster_cmd(&out, "drain", "wrong", "2 --wait 30s"), 0, "%s", out);
    free(out);
    int status = exited(&s[2]);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the drained shard stopped cleanly (%d)", status);
    fs_batch_free(want);
    fs_close(t);
    for (int i = 0; i < 2; i++) tu_shard_stop(&s[i], SIGTERM);
}
