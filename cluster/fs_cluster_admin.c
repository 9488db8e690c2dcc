/* fs_cluster_admin.c — a cluster's membership changed on etcd
 * (fs_cluster_admin.h says what and why): read the map and the
 * assignment, plan, compare-and-swap, and poll the map until it agrees. */
#include "fs_cluster_admin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs_assign.h"
#include "fs_etcd.h"
#include "fs_member.h"

#define ADMIN_TIMEOUT_MS 2000 /* each etcd call's deadline */
#define CHANGE_TRIES 4        /* compare-and-swap rounds against other changes at once */
#define SETTLE_POLL_MS 100

static int registered(const fs_shard_map_t *m, int id)
{
    for (int i = 0; i < m->num_shards; i++)
        if (m->shard[i].id == id) return 1;
    return 0;
}

/* The change planned on the assignment a (made from map m when the
 * cluster has none yet: `fresh`). */
static fs_status_t plan(fs_shard_map_t *a, int fresh, const fs_shard_map_t *m, fs_cluster_change_t what, int shard,
                        int *moved, fs_error_t *err)
{
    int filled = 0;
    fs_status_t st = FS_OK;
    if (what == FS_CLUSTER_ADD) {
        if (!registered(m, shard))
            return fs_error(err, FS_ERR_NOT_FOUND, "cluster %s: shard %d is not registered: start it first (featstore "
                            "serve ROOT --cluster etcd://.../%s --shard %d --parts assigned ...)", m->name, shard,
                            m->name, shard);
        return fs_assign_add(a, shard, moved, err);
    }
    if (what == FS_CLUSTER_REMOVE && registered(m, shard))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "cluster %s: shard %d is still registered (alive): `featstore "
                        "cluster drain` it, or stop it first", m->name, shard);
    int member = 0;
    for (int i = 0; i < a->num_shards; i++) member |= a->shard[i].id == shard;
    if (member || what == FS_CLUSTER_DRAIN || !fresh) st = fs_assign_remove(a, shard, moved, err);
    if (st == FS_OK && what == FS_CLUSTER_REMOVE) st = fs_assign_fill(a, &filled, err); /* a dead shard's parts */
    *moved += filled;
    return st;
}

/* One round: read, plan, write if no one else wrote meanwhile (*swapped). */
static fs_status_t change_once(fs_etcd_t *e, const char *name, fs_cluster_change_t what, int shard, int *moved,
                               int64_t *revision, int *swapped, fs_error_t *err)
{
    fs_shard_map_t m = {0}, a = {0};
    fs_status_t st = fs_cluster_read_map(e, name, &m, err);
    if (st != FS_OK) return st;
    st = fs_cluster_read_assign(e, name, &a, err);
    int fresh = st == FS_ERR_NOT_FOUND;
    if (fresh) st = fs_assign_from_map(&m, what == FS_CLUSTER_REMOVE, &a, err);
    int64_t expect = fresh ? 0 : a.revision;
    if (st == FS_OK) st = plan(&a, fresh, &m, what, shard, moved, err);
    char *json = st == FS_OK ? fs_shard_assign_format(&a) : NULL;
    if (st == FS_OK && !json) st = fs_error(err, FS_ERR_NOMEM, "out of memory");
    char key[FS_CLUSTER_NAME_MAX + 64];
    fs_cluster_key(name, "assign", key, sizeof key);
    if (st == FS_OK) st = fs_etcd_put_if(e, key, json, strlen(json), 0, expect, swapped, NULL, revision, err);
    free(json);
    fs_shard_map_free(&m);
    fs_shard_map_free(&a);
    return st;
}

fs_status_t fs_cluster_change(const char *endpoint, const char *name, fs_cluster_change_t what, int shard, int *moved,
                              int64_t *revision, fs_error_t *err)
{
    *moved = 0, *revision = 0;
    fs_etcd_t *e = NULL;
    fs_status_t st = fs_cluster_name_check(name, err);
    if (st == FS_OK) st = fs_etcd_open(endpoint, ADMIN_TIMEOUT_MS, &e, err);
    int swapped = 0;
    for (int tries = 0; st == FS_OK && !swapped && tries < CHANGE_TRIES; tries++)
        st = change_once(e, name, what, shard, moved, revision, &swapped, err);
    if (st == FS_OK && !swapped)
        st = fs_error(err, FS_ERR_VERSION, "cluster %s: its assignment changed under %d tries (other changes at "
                      "once?): try again", name, CHANGE_TRIES);
    fs_etcd_close(e);
    return st;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

fs_status_t fs_cluster_settle(const char *endpoint, const char *name, int gone, int timeout_ms, int *pending,
                              fs_error_t *err)
{
    fs_etcd_t *e = NULL;
    fs_status_t st = fs_etcd_open(endpoint, ADMIN_TIMEOUT_MS, &e, err);
    double end = now_ms() + timeout_ms;
    int left = -1, settled = 0;
    while (st == FS_OK && !settled) {
        fs_shard_map_t m = {0}, a = {0};
        st = fs_cluster_read_map(e, name, &m, err);
        if (st == FS_OK) st = fs_cluster_read_assign(e, name, &a, err);
        if (st == FS_OK) settled = fs_assign_settled(&a, &m, &left) && (gone < 0 || !registered(&m, gone));
        fs_shard_map_free(&m);
        fs_shard_map_free(&a);
        if (st != FS_OK || settled) break;
        if (now_ms() >= end) {
            st = fs_error(err, FS_ERR_TIMEOUT, "cluster %s: not settled within %d ms: %d parts still moving%s (`featstore "
                          "cluster status` and the shards' logs say which)", name, timeout_ms, left,
                          gone >= 0 && left == 0 ? ", or the drained shard has not left yet" : "");
            break;
        }
        struct timespec nap = {0, SETTLE_POLL_MS * 1000000L};
        nanosleep(&nap, NULL);
    }
    if (pending) *pending = left;
    fs_etcd_close(e);
    return st;
}
