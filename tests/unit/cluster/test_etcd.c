/* test_etcd.c — cluster/fs_etcd against a private etcd (tests/lib/test_etcd.h):
 * keys and prefixes, the guarded put both ways, leases that keep keys alive
 * and take them with them, watches (changes in order, a period that ends,
 * a cancel that wakes, a compacted start), and the errors: a bad endpoint,
 * an etcd that is down, and one that never answers, each within its deadline. Without an
 * etcd installed ctest reports it skipped (tests/unit/cluster/CMakeLists.txt). */
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fs_etcd.h"
#include "test_etcd.h"

static tu_etcd_t etcd;
static fs_etcd_t *h;
static fs_error_t err;

static void up(void)
{
    tu_etcd_start(&etcd);
    cr_assert_eq(fs_etcd_open(etcd.endpoint, 3000, &h, &err), FS_OK, "%s", err.msg);
}

static void down(void)
{
    fs_etcd_close(h);
    tu_etcd_stop(&etcd);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

TestSuite(etcd, .init = up, .fini = down, .timeout = 60);

Test(etcd, put_get_and_prefixes)
{
    fs_etcd_kvs_t kvs = {0};
    int64_t rev1, rev2;
    cr_assert_eq(fs_etcd_get(h, "/fs/a", 0, &kvs, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(kvs.n, 0, "a missing key is an empty answer");
    cr_assert_eq(fs_etcd_put(h, "/fs/a", "one", 3, 0, &rev1, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_etcd_put(h, "/fs/b", "two\0bytes", 9, 0, &rev2, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_etcd_put(h, "/fs0", "outside", 7, 0, NULL, &err), FS_OK, "%s", err.msg);
    cr_assert_gt(rev2, rev1);
    cr_assert_eq(fs_etcd_get(h, "/fs/a", 0, &kvs, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(kvs.n, 1);
    cr_assert_str_eq(kvs.kv[0].key, "/fs/a");
    cr_assert_str_eq(kvs.kv[0].value, "one");
    cr_assert_eq(kvs.kv[0].mod_revision, rev1);
    cr_assert_geq(kvs.revision, rev2, "the answer carries the store's revision");
    cr_assert_eq(fs_etcd_get(h, "/fs/", 1, &kvs, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(kvs.n, 2, "the prefix holds /fs/a and /fs/b, not /fs0");
    cr_assert_str_eq(kvs.kv[1].key, "/fs/b");
    cr_assert_eq(kvs.kv[1].value_len, 9);
    cr_assert_eq(memcmp(kvs.kv[1].value, "two\0bytes", 9), 0, "values are bytes");
    int64_t deleted;
    cr_assert_eq(fs_etcd_delete(h, "/fs/", 1, &deleted, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(deleted, 2);
    cr_assert_eq(fs_etcd_get(h, "/fs0", 0, &kvs, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(kvs.n, 1, "a prefix delete leaves the keys outside it");
    fs_etcd_kvs_free(&kvs);
}

Test(etcd, put_if_swaps_only_at_the_expected_revision)
{
    fs_etcd_kvs_t now = {0};
    int swapped;
    int64_t rev;
    cr_assert_eq(fs_etcd_put_if(h, "/map", "v1", 2, 0, 0, &swapped, &now, &rev, &err), FS_OK, "%s", err.msg);
    cr_assert(swapped, "expect 0: written when the key does not exist");
    cr_assert_eq(fs_etcd_put_if(h, "/map", "v1b", 3, 0, 0, &swapped, &now, NULL, &err), FS_OK, "%s", err.msg);
    cr_assert_not(swapped, "expect 0: refused once the key exists");
    cr_assert_eq(now.n, 1, "the refusal returns the key as it is");
    cr_assert_str_eq(now.kv[0].value, "v1");
    cr_assert_eq(now.kv[0].mod_revision, rev);
    cr_assert_eq(fs_etcd_put_if(h, "/map", "v2", 2, 0, rev, &swapped, &now, NULL, &err), FS_OK, "%s", err.msg);
    cr_assert(swapped, "written at the expected revision");
    cr_assert_eq(fs_etcd_put_if(h, "/map", "v3", 2, 0, rev, &swapped, &now, NULL, &err), FS_OK, "%s", err.msg);
    cr_assert_not(swapped, "a stale revision loses");
    cr_assert_str_eq(now.kv[0].value, "v2");
    fs_etcd_kvs_free(&now);
}

Test(etcd, leases_keep_keys_and_take_them_away)
{
    int64_t lease, ttl;
    fs_etcd_kvs_t kvs = {0};
    cr_assert_eq(fs_etcd_lease_grant(h, 1, &lease, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_etcd_put(h, "/shards/0", "up", 2, lease, NULL, &err), FS_OK, "%s", err.msg);
    for (int i = 0; i < 6; i++) { /* 1.5 s, past the TTL, renewed every 250 ms */
        usleep(250 * 1000);
        cr_assert_eq(fs_etcd_lease_keepalive(h, lease, &ttl, &err), FS_OK, "%s", err.msg);
        cr_assert_geq(ttl, 1);
    }
    cr_assert_eq(fs_etcd_get(h, "/shards/0", 0, &kvs, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(kvs.n, 1, "a renewed lease keeps its key");
    cr_assert_eq(kvs.kv[0].lease, lease);
    cr_assert_eq(fs_etcd_lease_revoke(h, lease, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_etcd_get(h, "/shards/0", 0, &kvs, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(kvs.n, 0, "revoking the lease deletes its key");
    cr_assert_eq(fs_etcd_lease_keepalive(h, lease, NULL, &err), FS_ERR_NOT_FOUND, "a revoked lease is gone");
    cr_assert(strstr(err.msg, "expired"), "%s", err.msg);

    cr_assert_eq(fs_etcd_lease_grant(h, 1, &lease, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_etcd_put(h, "/shards/1", "up", 2, lease, NULL, &err), FS_OK, "%s", err.msg);
    double t0 = now_s();
    do { /* etcd expires a 1 s lease within a few seconds */
        usleep(200 * 1000);
        cr_assert_eq(fs_etcd_get(h, "/shards/1", 0, &kvs, &err), FS_OK, "%s", err.msg);
    } while (kvs.n == 1 && now_s() - t0 < 10);
    cr_assert_eq(kvs.n, 0, "a lease left to expire takes its key within 10 s");
    fs_etcd_kvs_free(&kvs);
}

Test(etcd, bad_arguments)
{
    fs_etcd_t *x;
    cr_assert_eq(fs_etcd_open("no-port", 100, &x, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "host:port"), "%s", err.msg);
    cr_assert_eq(fs_etcd_open(etcd.endpoint, 0, &x, &err), FS_ERR_INVALID_ARGUMENT);
    fs_etcd_kvs_t kvs = {0};
    cr_assert_eq(fs_etcd_get(h, "", 0, &kvs, &err), FS_ERR_INVALID_ARGUMENT);
    int64_t lease;
    cr_assert_eq(fs_etcd_lease_grant(h, 0, &lease, &err), FS_ERR_INVALID_ARGUMENT);
}

/* Events until `want` have come (each next bounded by the watch's period). */
static void watch_collect(fs_etcd_watch_t *w, fs_etcd_kvs_t *all, size_t want)
{
    fs_etcd_kvs_t got = {0};
    for (int tries = 0; all->n < want && tries < 20; tries++) {
        cr_assert_eq(fs_etcd_watch_next(w, &got, &err), FS_OK, "%s", err.msg);
        for (size_t i = 0; i < got.n; i++) {
            if (all->n == all->cap) {
                all->cap = all->cap ? all->cap * 2 : 8;
                all->kv = realloc(all->kv, all->cap * sizeof *all->kv);
            }
            all->kv[all->n++] = got.kv[i];
        }
        free(got.kv);
        got = (fs_etcd_kvs_t){0};
    }
    cr_assert_eq(all->n, want, "%zu events, wanted %zu", all->n, want);
}

Test(etcd, watch_reports_every_change_from_its_revision_in_order)
{
    int64_t r1, r2;
    cr_assert_eq(fs_etcd_put(h, "/w/k", "one", 3, 0, &r1, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_etcd_put(h, "/w/other", "x", 1, 0, NULL, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_etcd_put(h, "/w/k", "two", 3, 0, &r2, &err), FS_OK, "%s", err.msg);
    fs_etcd_watch_t *w;
    cr_assert_eq(fs_etcd_watch_open(etcd.endpoint, "/w/k", r1, 5000, 3000, &w, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_etcd_delete(h, "/w/k", 0, NULL, &err), FS_OK, "%s", err.msg);
    fs_etcd_kvs_t all = {0};
    watch_collect(w, &all, 3); /* one and two from the past, then the delete; not /w/other */
    cr_assert_str_eq(all.kv[0].value, "one");
    cr_assert_eq(all.kv[0].mod_revision, r1);
    cr_assert_str_eq(all.kv[1].value, "two");
    cr_assert_eq(all.kv[1].mod_revision, r2);
    cr_assert(!all.kv[0].deleted && !all.kv[1].deleted && all.kv[2].deleted);
    cr_assert_str_eq(all.kv[2].key, "/w/k");
    fs_etcd_kvs_free(&all);
    fs_etcd_watch_close(w);
}

Test(etcd, watch_period_ends_in_a_timeout)
{
    fs_etcd_watch_t *w;
    cr_assert_eq(fs_etcd_watch_open(etcd.endpoint, "/w/quiet", 0, 600, 3000, &w, &err), FS_OK, "%s", err.msg);
    fs_etcd_kvs_t got = {0};
    double t0 = now_s();
    cr_assert_eq(fs_etcd_watch_next(w, &got, &err), FS_ERR_TIMEOUT, "%s", err.msg);
    cr_assert_lt(now_s() - t0, 3.0, "the 600 ms period ended the wait");
    cr_assert(strstr(err.msg, "Watch"), "%s", err.msg);
    fs_etcd_watch_close(w);
}

static void *cancel_later(void *w)
{
    usleep(200 * 1000);
    fs_etcd_watch_cancel(w);
    return NULL;
}

Test(etcd, watch_cancel_wakes_a_waiting_next)
{
    fs_etcd_watch_t *w;
    cr_assert_eq(fs_etcd_watch_open(etcd.endpoint, "/w/quiet", 0, 30000, 3000, &w, &err), FS_OK, "%s", err.msg);
    pthread_t t;
    pthread_create(&t, NULL, cancel_later, w);
    fs_etcd_kvs_t got = {0};
    double t0 = now_s();
    cr_assert_eq(fs_etcd_watch_next(w, &got, &err), FS_ERR_UNAVAILABLE, "%s", err.msg);
    cr_assert_lt(now_s() - t0, 5.0, "woken by the cancel, not the 30 s period");
    pthread_join(t, NULL);
    fs_etcd_watch_close(w);
}

Test(etcd, watch_from_a_compacted_revision_is_not_found)
{
    int64_t r1, r2;
    cr_assert_eq(fs_etcd_put(h, "/w/c", "1", 1, 0, &r1, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_etcd_put(h, "/w/c", "2", 1, 0, &r2, &err), FS_OK, "%s", err.msg);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "etcdctl --endpoints=%s compact %lld >/dev/null 2>&1", etcd.endpoint, (long long)r2);
    cr_assert_eq(system(cmd), 0, "etcdctl compact");
    fs_etcd_watch_t *w;
    fs_status_t st = fs_etcd_watch_open(etcd.endpoint, "/w/c", r1, 5000, 3000, &w, &err);
    fs_etcd_kvs_t got = {0};
    if (st == FS_OK) { /* made, then cancelled for the compaction */
        st = fs_etcd_watch_next(w, &got, &err);
        fs_etcd_watch_close(w);
    }
    cr_assert_eq(st, FS_ERR_NOT_FOUND, "%s", err.msg);
    cr_assert(strstr(err.msg, "compacted"), "%s", err.msg);
}

/* No etcd on the port: unavailable, within the deadline. */
Test(etcd_down, unreachable_is_unavailable_within_the_deadline, .timeout = 30)
{
    fs_etcd_t *x;
    char ep[64];
    snprintf(ep, sizeof ep, "127.0.0.1:%d", tu_free_port());
    cr_assert_eq(fs_etcd_open(ep, 1000, &x, &err), FS_OK, "%s", err.msg);
    fs_etcd_kvs_t kvs = {0};
    double t0 = now_s();
    fs_status_t st = fs_etcd_get(x, "/k", 0, &kvs, &err);
    cr_assert(st == FS_ERR_UNAVAILABLE || st == FS_ERR_TIMEOUT, "got %d: %s", st, err.msg);
    cr_assert(strstr(err.msg, ep) && strstr(err.msg, "Range"), "the message names the endpoint and call: %s", err.msg);
    cr_assert_lt(now_s() - t0, 3.0, "answered within the 1 s deadline (and slack)");
    fs_etcd_close(x);
    fs_etcd_watch_t *w;
    t0 = now_s();
    st = fs_etcd_watch_open(ep, "/k", 0, 30000, 1000, &w, &err);
    cr_assert(st == FS_ERR_UNAVAILABLE || st == FS_ERR_TIMEOUT, "a watch: got %d: %s", st, err.msg);
    cr_assert(strstr(err.msg, ep) && strstr(err.msg, "Watch"), "%s", err.msg);
    cr_assert_lt(now_s() - t0, 3.0);
}

/* A listener that accepts and never speaks: the deadline ends the call. */
Test(etcd_down, silent_peer_times_out, .timeout = 30)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    cr_assert(bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 4) == 0 &&
              getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    char ep[64];
    snprintf(ep, sizeof ep, "127.0.0.1:%d", ntohs(a.sin_port));
    fs_etcd_t *x;
    cr_assert_eq(fs_etcd_open(ep, 800, &x, &err), FS_OK, "%s", err.msg);
    int64_t lease;
    double t0 = now_s();
    fs_status_t st = fs_etcd_lease_grant(x, 2, &lease, &err);
    cr_assert(st == FS_ERR_TIMEOUT || st == FS_ERR_UNAVAILABLE, "got %d: %s", st, err.msg);
    cr_assert_lt(now_s() - t0, 3.0, "the 800 ms deadline held");
    fs_etcd_close(x);
    fs_etcd_watch_t *w;
    t0 = now_s();
    st = fs_etcd_watch_open(ep, "/k", 0, 30000, 800, &w, &err);
    cr_assert(st == FS_ERR_TIMEOUT || st == FS_ERR_UNAVAILABLE, "a watch: got %d: %s", st, err.msg);
    cr_assert_lt(now_s() - t0, 3.0, "a watch of a 30 s period is made within its 800 ms or not at all");
    close(fd);
}
