/* test_member.c — cluster/fs_member against a private etcd: shards that
 * join make the map, one that leaves or whose lease lapses leaves it, a
 * duplicate id or a shard of another partitioning is refused and leaves
 * nothing behind, an etcd that is away keeps the last map and is reported,
 * and a shard whose lease expired meanwhile registers again. Without etcd
 * ctest reports it skipped (tests/unit/cluster/CMakeLists.txt). */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs_member.h"
#include "test_etcd.h"

#define PARTING "0123456789abcdef"
#define TTL 1

static tu_etcd_t etcd;
static fs_etcd_t *h;
static fs_error_t err;

static void up(void)
{
    tu_etcd_start(&etcd);
    cr_assert_eq(fs_etcd_open(etcd.endpoint, 2000, &h, &err), FS_OK, "%s", err.msg);
}

static void down(void)
{
    fs_etcd_close(h);
    tu_etcd_stop(&etcd);
}

TestSuite(member, .init = up, .fini = down, .timeout = 90);

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* Shard id holding parts [first, first + n) of 8. */
static fs_shard_reg_t shard(int id, int first, int n, const char *parting)
{
    fs_shard_reg_t r = {.parts = 8, .num_owned = n};
    r.addr.id = id;
    snprintf(r.addr.grpc, sizeof r.addr.grpc, "127.0.0.1:%d", 7100 + id);
    snprintf(r.partitioning, sizeof r.partitioning, "%s", parting);
    r.owns = malloc(sizeof *r.owns * 8);
    for (int i = 0; i < n; i++) r.owns[i] = first + i;
    return r;
}

static fs_member_opts_t opts(void)
{
    return (fs_member_opts_t){.endpoint = etcd.endpoint, .name = "c1", .ttl_s = TTL, .timeout_ms = 500};
}

/* etcd's map, read afresh. */
static void read_map(fs_shard_map_t *m)
{
    cr_assert_eq(fs_cluster_read_map(h, "c1", m, &err), FS_OK, "%s", err.msg);
}

/* Waits (up to `secs`) until etcd's map gives part p to `owner`. */
static void wait_owner(int p, int owner, double secs)
{
    double t0 = now_s();
    for (;;) {
        fs_shard_map_t m;
        read_map(&m);
        int now = m.owner[p];
        fs_shard_map_free(&m);
        if (now == owner) return;
        cr_assert_lt(now_s() - t0, secs, "part %d's owner is %d after %.0f s, not %d", p, now, secs, owner);
        usleep(100 * 1000);
    }
}

Test(member, joins_and_leaves_make_the_map)
{
    fs_shard_reg_t a = shard(0, 0, 4, PARTING), b = shard(1, 4, 4, PARTING);
    fs_member_opts_t o = opts();
    fs_member_t *ma, *mb;
    fs_shard_map_t m;
    cr_assert_eq(fs_cluster_read_map(h, "c1", &m, &err), FS_ERR_NOT_FOUND, "no map before any shard");
    cr_assert(strstr(err.msg, "no shard has joined"), "%s", err.msg);
    cr_assert_eq(fs_member_join(&o, &a, &ma, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_member_join(&o, &b, &mb, &err), FS_OK, "%s", err.msg);
    read_map(&m);
    int want[] = {0, 0, 0, 0, 1, 1, 1, 1};
    cr_assert_arr_eq(m.owner, want, sizeof want, "the map after both joined");
    cr_assert_str_eq(fs_shard_map_owner(&m, 5)->grpc, "127.0.0.1:7101");
    cr_assert_gt(m.revision, 0);
    cr_assert_eq(fs_member_revision(mb), m.revision, "the last to join holds etcd's map");
    int64_t r1 = m.revision;
    fs_shard_map_free(&m);
    wait_owner(4, 1, 5); /* shard 0's thread adopts it within a tick or two */
    double t0 = now_s();
    while (fs_member_revision(ma) != r1 && now_s() - t0 < 5) usleep(50 * 1000);
    cr_assert_eq(fs_member_revision(ma), r1, "shard 0 adopts the map shard 1 wrote");
    fs_member_leave(mb);
    read_map(&m);
    cr_assert_eq(m.owner[4], -1, "a shard that leaves takes its parts out of the map");
    cr_assert_eq(m.num_shards, 1);
    cr_assert_gt(m.revision, r1, "a new map, a new revision");
    fs_shard_map_free(&m);
    fs_member_status_t s;
    fs_member_status(ma, &s);
    cr_assert(s.etcd_ok);
    fs_member_leave(ma);
    read_map(&m);
    cr_assert_eq(m.num_shards, 0, "the last shard out leaves a map of no shards");
    fs_shard_map_free(&m);
    fs_shard_reg_free(&a);
    fs_shard_reg_free(&b);
}

Test(member, a_lapsed_lease_leaves_the_map)
{
    fs_shard_reg_t a = shard(0, 0, 4, PARTING);
    fs_member_opts_t o = opts();
    fs_member_t *ma;
    cr_assert_eq(fs_member_join(&o, &a, &ma, &err), FS_OK, "%s", err.msg);
    /* a shard that dies: registered under a lease nobody renews */
    fs_shard_reg_t dead = shard(3, 4, 2, PARTING);
    char *json = fs_shard_reg_format(&dead);
    int64_t lease;
    cr_assert_eq(fs_etcd_lease_grant(h, 1, &lease, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_etcd_put(h, "/featstore/c1/shards/3", json, strlen(json), lease, NULL, &err), FS_OK, "%s", err.msg);
    wait_owner(4, 3, 5);
    wait_owner(4, -1, 10); /* gone with its lease, and out of the map */
    free(json);
    fs_member_leave(ma);
    fs_shard_reg_free(&a);
    fs_shard_reg_free(&dead);
}

Test(member, refusals_leave_nothing_behind)
{
    fs_shard_reg_t a = shard(0, 0, 4, PARTING), twin = shard(0, 4, 4, PARTING), other = shard(2, 4, 4, "ffffffffffffffff"),
                   greedy = shard(1, 3, 2, PARTING);
    fs_member_opts_t o = opts();
    fs_member_t *ma, *x;
    cr_assert_eq(fs_member_join(&o, &a, &ma, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_member_join(&o, &twin, &x, &err), FS_ERR_EXISTS);
    cr_assert(strstr(err.msg, "shard 0 is already registered (at 127.0.0.1:7100)"), "%s", err.msg);
    cr_assert_eq(fs_member_join(&o, &other, &x, &err), FS_ERR_FORMAT);
    cr_assert(strstr(err.msg, "one cluster serves one partitioning"), "%s", err.msg);
    cr_assert_eq(fs_member_join(&o, &greedy, &x, &err), FS_ERR_EXISTS);
    cr_assert(strstr(err.msg, "part 3 is held by both shard 0 and shard 1"), "%s", err.msg);
    fs_etcd_kvs_t kvs = {0};
    cr_assert_eq(fs_etcd_get(h, "/featstore/c1/shards/", 1, &kvs, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(kvs.n, 1, "the refused shards' registrations are gone");
    fs_etcd_kvs_free(&kvs);
    fs_member_opts_t bad = o;
    bad.name = "no/slash";
    cr_assert_eq(fs_member_join(&bad, &greedy, &x, &err), FS_ERR_INVALID_ARGUMENT);
    fs_member_leave(ma);
    fs_shard_reg_free(&a);
    fs_shard_reg_free(&twin);
    fs_shard_reg_free(&other);
    fs_shard_reg_free(&greedy);
}

Test(member, etcd_away_keeps_the_map_then_rejoins)
{
    fs_shard_reg_t a = shard(0, 0, 8, PARTING);
    fs_member_opts_t o = opts();
    fs_member_t *ma;
    cr_assert_eq(fs_member_join(&o, &a, &ma, &err), FS_OK, "%s", err.msg);
    int64_t r1 = fs_member_revision(ma);
    kill(etcd.pid, SIGSTOP); /* etcd hangs: every call meets its deadline */
    fs_member_status_t s;
    double t0 = now_s();
    do {
        usleep(100 * 1000);
        fs_member_status(ma, &s);
    } while (s.etcd_ok && now_s() - t0 < 10);
    cr_assert_not(s.etcd_ok, "the lost etcd is reported");
    cr_assert(strstr(s.last_error, etcd.endpoint), "%s", s.last_error);
    fs_shard_map_t m;
    cr_assert_eq(fs_member_map(ma, &m, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(m.revision, r1, "the last map is kept");
    cr_assert_eq(m.owner[7], 0);
    fs_shard_map_free(&m);
    sleep(TTL + 2); /* past the lease */
    kill(etcd.pid, SIGCONT);
    t0 = now_s();
    do {
        usleep(100 * 1000);
        fs_member_status(ma, &s);
    } while ((!s.etcd_ok || s.rejoins == 0) && now_s() - t0 < 15);
    cr_assert(s.etcd_ok, "etcd is back: %s", s.last_error);
    cr_assert_geq(s.rejoins, 1, "the lease expired while etcd was away: registered again");
    wait_owner(7, 0, 10);
    fs_member_leave(ma);
    fs_shard_reg_free(&a);
}

Test(member_down, no_etcd_at_start, .timeout = 30)
{
    char ep[64];
    snprintf(ep, sizeof ep, "127.0.0.1:%d", tu_free_port());
    fs_member_opts_t o = {.endpoint = ep, .name = "c1", .timeout_ms = 500};
    fs_shard_reg_t a = shard(0, 0, 8, PARTING);
    fs_member_t *m;
    double t0 = now_s();
    fs_status_t st = fs_member_join(&o, &a, &m, &err);
    cr_assert(st == FS_ERR_UNAVAILABLE || st == FS_ERR_TIMEOUT, "got %d: %s", st, err.msg);
    cr_assert(strstr(err.msg, ep), "the message names etcd: %s", err.msg);
    cr_assert_lt(now_s() - t0, 3.0, "within the deadline");
    fs_shard_reg_free(&a);
}
