/* fs_member.c — a shard's membership on etcd (fs_member.h says what and
 * why): the registration under a lease, the map reconciled from the
 * registrations by compare-and-swap, and the thread that keeps both.
 *
 * The thread's pace is a third of the lease's TTL: a renewal that fails
 * twice in a row still leaves the lease alive. The etcd handle belongs to
 * the thread once it runs (fs_etcd handles are single-threaded); callers
 * see only the copy of the map and the status, under the mutex. */
#include "fs_member.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAP_TRIES 4 /* compare-and-swap rounds per reconcile before waiting a tick */

struct fs_member {
    char name[FS_CLUSTER_NAME_MAX + 1];
    int ttl_s;
    fs_shard_reg_t self;
    char *self_json;
    char reg_key[FS_CLUSTER_NAME_MAX + 64], map_key[FS_CLUSTER_NAME_MAX + 64], shards_prefix[FS_CLUSTER_NAME_MAX + 64];
    char assign_key[FS_CLUSTER_NAME_MAX + 64];
    fs_etcd_t *etcd;
    int64_t lease;
    pthread_t thread;
    int running, stop;
    int kick;                    /* under mu: self changed, write it now */
    int self_dirty;              /* under mu: self's registration is not in etcd yet */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    fs_shard_map_t map;          /* under mu */
    fs_shard_map_t assign;       /* under mu: the cluster's assignment (parts 0: none) */
    fs_member_status_t status;   /* under mu */
};

void fs_cluster_key(const char *name, const char *what, char *buf, size_t len)
{
    snprintf(buf, len, "/featstore/%s/%s", name, what);
}

/* The JSON at /featstore/NAME/<what>, parsed, with its etcd revision;
 * FS_ERR_NOT_FOUND saying `absent` and why when there is none. */
static fs_status_t read_key(fs_etcd_t *e, const char *name, const char *what, const char *absent, const char *why,
                            fs_status_t (*parse)(const char *, size_t, fs_shard_map_t *, fs_error_t *),
                            fs_shard_map_t *out, fs_error_t *err)
{
    memset(out, 0, sizeof *out);
    char key[FS_CLUSTER_NAME_MAX + 64];
    fs_status_t st = fs_cluster_name_check(name, err);
    if (st != FS_OK) return st;
    fs_cluster_key(name, what, key, sizeof key);
    fs_etcd_kvs_t kvs = {0};
    st = fs_etcd_get(e, key, 0, &kvs, err);
    if (st == FS_OK && kvs.n == 0)
        st = fs_error(err, FS_ERR_NOT_FOUND, "cluster %s: etcd %s holds %s (%s): %s", name, fs_etcd_endpoint(e),
                      absent, key, why);
    if (st == FS_OK) st = parse(kvs.kv[0].value, kvs.kv[0].value_len, out, err);
    if (st == FS_OK) out->revision = kvs.kv[0].mod_revision;
    fs_etcd_kvs_free(&kvs);
    return st;
}

fs_status_t fs_cluster_read_map(fs_etcd_t *e, const char *name, fs_shard_map_t *out, fs_error_t *err)
{
    return read_key(e, name, "map", "no shard map", "no shard has joined", fs_shard_map_parse, out, err);
}

fs_status_t fs_cluster_read_assign(fs_etcd_t *e, const char *name, fs_shard_map_t *out, fs_error_t *err)
{
    fs_status_t st = read_key(e, name, "assign", "no assignment",
                              "its shards hold the parts they were started with", fs_shard_assign_parse, out, err);
    if (st == FS_OK && strcmp(out->name, name) != 0) {
        st = fs_error(err, FS_ERR_FORMAT, "cluster %s: its assignment names cluster %s", name, out->name);
        fs_shard_map_free(out);
    }
    return st;
}

/* ---- the status (under mu) ------------------------------------------------------ */

static void note(fs_member_t *m, fs_status_t st, const fs_error_t *err)
{
    pthread_mutex_lock(&m->mu);
    m->status.etcd_ok = st == FS_OK || (st != FS_ERR_UNAVAILABLE && st != FS_ERR_TIMEOUT);
    if (st != FS_OK) snprintf(m->status.last_error, sizeof m->status.last_error, "%s", err->msg);
    pthread_mutex_unlock(&m->mu);
}

/* Adopts map (taking it) unless its revision is older than the one held. */
static fs_status_t adopt(fs_member_t *m, fs_shard_map_t *map, fs_error_t *err)
{
    fs_status_t st = FS_OK;
    pthread_mutex_lock(&m->mu);
    if (map->revision < m->map.revision) {
        st = fs_error(err, FS_ERR_VERSION,
                      "cluster %s: the shard map's revision went backwards (%lld after %lld): was etcd restored "
                      "from an older state? keeping revision %lld",
                      m->name, (long long)map->revision, (long long)m->map.revision, (long long)m->map.revision);
        fs_shard_map_free(map);
    } else {
        fs_shard_map_free(&m->map);
        m->map = *map;
        m->status.revision = map->revision;
        memset(map, 0, sizeof *map);
    }
    pthread_mutex_unlock(&m->mu);
    return st;
}

/* ---- registering ------------------------------------------------------------------ */

/* A fresh lease and the registration under it; FS_ERR_EXISTS when a live
 * shard already holds the id. */
static fs_status_t register_self(fs_member_t *m, fs_error_t *err)
{
    fs_status_t st = fs_etcd_lease_grant(m->etcd, m->ttl_s, &m->lease, err);
    if (st != FS_OK) return st;
    int swapped;
    fs_etcd_kvs_t now = {0};
    pthread_mutex_lock(&m->mu);
    char *json = strdup(m->self_json);
    m->self_dirty = 0;
    pthread_mutex_unlock(&m->mu);
    st = json ? fs_etcd_put_if(m->etcd, m->reg_key, json, strlen(json), m->lease, 0, &swapped, &now, NULL, err)
              : fs_error(err, FS_ERR_NOMEM, "cluster %s: out of memory", m->name);
    free(json);
    if (st == FS_OK && !swapped) {
        fs_shard_reg_t other;
        fs_error_t ignored;
        int known = now.n && fs_shard_reg_parse(now.kv[0].value, now.kv[0].value_len, &other, &ignored) == FS_OK;
        st = fs_error(err, FS_ERR_EXISTS, "cluster %s: shard %d is already registered (at %s): another server has this "
                      "shard number, or this one restarted within its lease of %d s (try again then)",
                      m->name, m->self.addr.id, known ? other.addr.grpc : "an unreadable registration", m->ttl_s);
        if (known) fs_shard_reg_free(&other);
    }
    fs_etcd_kvs_free(&now);
    if (st != FS_OK) {
        fs_error_t ignored;
        fs_etcd_lease_revoke(m->etcd, m->lease, &ignored);
        m->lease = 0;
    }
    return st;
}

/* ---- reconciling the map ---------------------------------------------------------- */

/* The live shards' registrations; one that does not parse is skipped (and
 * named in the status): a stray key must not stop the cluster. */
static fs_status_t read_registrations(fs_member_t *m, fs_shard_reg_t **regs, int *n, fs_error_t *err)
{
    fs_etcd_kvs_t kvs = {0};
    *regs = NULL;
    *n = 0;
    fs_status_t st = fs_etcd_get(m->etcd, m->shards_prefix, 1, &kvs, err);
    if (st == FS_OK && !(*regs = calloc(kvs.n ? kvs.n : 1, sizeof **regs)))
        st = fs_error(err, FS_ERR_NOMEM, "cluster %s: out of memory", m->name);
    for (size_t i = 0; st == FS_OK && i < kvs.n; i++) {
        fs_error_t bad;
        if (fs_shard_reg_parse(kvs.kv[i].value, kvs.kv[i].value_len, &(*regs)[*n], &bad) == FS_OK) (*n)++;
        else {
            fs_error_t named;
            fs_error(&named, bad.code, "cluster %s: skipping %s: %s", m->name, kvs.kv[i].key, bad.msg);
            note(m, bad.code, &named);
        }
    }
    fs_etcd_kvs_free(&kvs);
    return st;
}

/* The assignment as etcd holds it into m->assign (none: parts 0); a bad
 * one is kept out, and named in the status. */
static fs_status_t read_assign(fs_member_t *m, fs_error_t *err)
{
    fs_shard_map_t a;
    fs_status_t st = fs_cluster_read_assign(m->etcd, m->name, &a, err);
    if (st == FS_ERR_NOT_FOUND) memset(&a, 0, sizeof a), st = FS_OK;
    if (st != FS_OK) return st == FS_ERR_UNAVAILABLE || st == FS_ERR_TIMEOUT ? st : (note(m, st, err), FS_OK);
    pthread_mutex_lock(&m->mu);
    fs_shard_map_free(&m->assign);
    m->assign = a;
    pthread_mutex_unlock(&m->mu);
    return FS_OK;
}

/* The map the registrations make (by the assignment, if there is one);
 * with none left, every part unowned. */
static fs_status_t wanted_map(fs_member_t *m, const fs_shard_reg_t *regs, int n, fs_shard_map_t *out, fs_error_t *err)
{
    fs_shard_map_t assign = {0};
    fs_status_t st = FS_OK;
    pthread_mutex_lock(&m->mu);
    if (m->assign.parts) st = fs_shard_map_copy(&m->assign, &assign, err);
    pthread_mutex_unlock(&m->mu);
    if (st == FS_OK && n > 0) st = fs_shard_map_build(m->name, regs, n, assign.parts ? &assign : NULL, out, err);
    else if (st == FS_OK)
        st = fs_shard_map_empty(m->name, m->self.partitioning, m->self.parts, m->self.replicas, out, err);
    fs_shard_map_free(&assign);
    return st;
}

/* Makes etcd's map the registrations' map, and adopts it. */
static fs_status_t reconcile(fs_member_t *m, fs_error_t *err)
{
    fs_shard_reg_t *regs;
    int n;
    fs_shard_map_t want = {0};
    fs_status_t st = read_registrations(m, &regs, &n, err);
    if (st == FS_OK) st = wanted_map(m, regs, n, &want, err);
    for (int i = 0; i < n; i++) fs_shard_reg_free(&regs[i]);
    free(regs);
    char *json = st == FS_OK ? fs_shard_map_format(&want) : NULL;
    if (st == FS_OK && !json) st = fs_error(err, FS_ERR_NOMEM, "cluster %s: out of memory", m->name);
    for (int tries = 0; st == FS_OK && tries < MAP_TRIES; tries++) {
        fs_etcd_kvs_t now = {0};
        fs_shard_map_t held = {0};
        fs_error_t ignored;
        st = fs_etcd_get(m->etcd, m->map_key, 0, &now, err);
        int64_t expect = st == FS_OK && now.n ? now.kv[0].mod_revision : 0;
        int same = st == FS_OK && now.n &&
                   fs_shard_map_parse(now.kv[0].value, now.kv[0].value_len, &held, &ignored) == FS_OK &&
                   fs_shard_map_same(&held, &want);
        fs_shard_map_free(&held);
        fs_etcd_kvs_free(&now);
        if (st != FS_OK) break;
        int swapped = 0;
        int64_t revision = expect;
        if (!same) st = fs_etcd_put_if(m->etcd, m->map_key, json, strlen(json), 0, expect, &swapped, NULL, &revision, err);
        if (st != FS_OK || (!same && !swapped)) continue; /* another shard wrote first: look again */
        want.revision = revision;
        if (swapped) {
            pthread_mutex_lock(&m->mu);
            m->status.map_writes++;
            pthread_mutex_unlock(&m->mu);
        }
        st = adopt(m, &want, err);
        break;
    }
    free(json);
    fs_shard_map_free(&want);
    return st;
}

/* Self's registration put again under the lease when it changed
 * (fs_member_set_parts). */
static fs_status_t write_self(fs_member_t *m, fs_error_t *err)
{
    pthread_mutex_lock(&m->mu);
    char *json = m->self_dirty ? strdup(m->self_json) : NULL;
    int dirty = m->self_dirty;
    pthread_mutex_unlock(&m->mu);
    if (!dirty) return FS_OK;
    if (!json) return fs_error(err, FS_ERR_NOMEM, "cluster %s: out of memory", m->name);
    fs_status_t st = fs_etcd_put(m->etcd, m->reg_key, json, strlen(json), m->lease, NULL, err);
    pthread_mutex_lock(&m->mu);
    if (st == FS_OK && strcmp(json, m->self_json) == 0) m->self_dirty = 0; /* else it changed again meanwhile */
    pthread_mutex_unlock(&m->mu);
    free(json);
    return st;
}

/* ---- the thread ------------------------------------------------------------------- */

/* Waits one tick (a third of the TTL) unless told to stop; 1 to go on. */
static int tick(fs_member_t *m)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    long long ns = t.tv_nsec + (long long)m->ttl_s * 1000000000LL / 3;
    t.tv_sec += ns / 1000000000LL;
    t.tv_nsec = ns % 1000000000LL;
    pthread_mutex_lock(&m->mu);
    while (!m->stop && !m->kick && pthread_cond_timedwait(&m->cv, &m->mu, &t) != ETIMEDOUT) {
    }
    m->kick = 0;
    int go = !m->stop;
    pthread_mutex_unlock(&m->mu);
    return go;
}

static void *run(void *arg)
{
    fs_member_t *m = arg;
    while (tick(m)) {
        fs_error_t err = {0};
        fs_status_t st = m->lease ? fs_etcd_lease_keepalive(m->etcd, m->lease, NULL, &err) : FS_ERR_NOT_FOUND;
        if (st == FS_ERR_NOT_FOUND) { /* the lease expired (etcd was away longer than the TTL): join again */
            m->lease = 0;
            st = register_self(m, &err);
            if (st == FS_OK) {
                pthread_mutex_lock(&m->mu);
                m->status.rejoins++;
                pthread_mutex_unlock(&m->mu);
            }
        }
        if (st == FS_OK) st = read_assign(m, &err);
        if (st == FS_OK) st = write_self(m, &err);
        if (st == FS_OK) st = reconcile(m, &err);
        note(m, st, &err);
    }
    return NULL;
}

/* ---- joining and leaving ----------------------------------------------------------- */

static void member_free(fs_member_t *m)
{
    fs_etcd_close(m->etcd);
    fs_shard_reg_free(&m->self);
    free(m->self_json);
    fs_shard_map_free(&m->map);
    fs_shard_map_free(&m->assign);
    pthread_mutex_destroy(&m->mu);
    pthread_cond_destroy(&m->cv);
    free(m);
}

static fs_status_t member_new(const fs_member_opts_t *o, const fs_shard_reg_t *self, fs_member_t **out, fs_error_t *err)
{
    fs_member_t *m = calloc(1, sizeof *m);
    if (!m) return fs_error(err, FS_ERR_NOMEM, "cluster: out of memory");
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->cv, NULL);
    *out = m;
    snprintf(m->name, sizeof m->name, "%s", o->name);
    m->ttl_s = o->ttl_s > 0 ? o->ttl_s : 2;
    m->self = *self; /* its arrays copied: the caller keeps its own */
    m->self.owns = malloc((size_t)(self->num_owned ? self->num_owned : 1) * sizeof *m->self.owns);
    m->self.copies = malloc((size_t)(self->num_copies ? self->num_copies : 1) * sizeof *m->self.copies);
    m->self_json = fs_shard_reg_format(self);
    if (!m->self.owns || !m->self.copies || !m->self_json)
        return fs_error(err, FS_ERR_NOMEM, "cluster %s: out of memory", o->name);
    if (self->num_owned) memcpy(m->self.owns, self->owns, (size_t)self->num_owned * sizeof *self->owns);
    if (self->num_copies) memcpy(m->self.copies, self->copies, (size_t)self->num_copies * sizeof *self->copies);
    char id[32];
    snprintf(id, sizeof id, "shards/%d", self->addr.id);
    fs_cluster_key(o->name, id, m->reg_key, sizeof m->reg_key);
    fs_cluster_key(o->name, "shards/", m->shards_prefix, sizeof m->shards_prefix);
    fs_cluster_key(o->name, "map", m->map_key, sizeof m->map_key);
    fs_cluster_key(o->name, "assign", m->assign_key, sizeof m->assign_key);
    return fs_etcd_open(o->endpoint, o->timeout_ms > 0 ? o->timeout_ms : 1000, &m->etcd, err);
}

fs_status_t fs_member_join(const fs_member_opts_t *o, const fs_shard_reg_t *self, fs_member_t **out, fs_error_t *err)
{
    *out = NULL;
    fs_status_t st = fs_cluster_name_check(o->name, err);
    if (st != FS_OK) return st;
    fs_member_t *m = NULL;
    st = member_new(o, self, &m, err);
    if (st == FS_OK) st = register_self(m, err);
    if (st == FS_OK) st = read_assign(m, err);
    if (st == FS_OK && (st = reconcile(m, err)) != FS_OK) { /* it does not fit: leave nothing behind */
        fs_error_t ignored;
        fs_etcd_lease_revoke(m->etcd, m->lease, &ignored);
    }
    if (st == FS_OK && pthread_create(&m->thread, NULL, run, m) != 0) {
        fs_error_t ignored;
        fs_etcd_lease_revoke(m->etcd, m->lease, &ignored);
        st = fs_error(err, FS_ERR_RESOURCE, "cluster %s: cannot start the membership thread", o->name);
    }
    if (st != FS_OK) {
        if (m) member_free(m);
        return st;
    }
    m->running = 1;
    m->status.etcd_ok = 1;
    *out = m;
    return FS_OK;
}

void fs_member_leave(fs_member_t *m)
{
    if (!m) return;
    if (m->running) {
        pthread_mutex_lock(&m->mu);
        m->stop = 1;
        pthread_cond_signal(&m->cv);
        pthread_mutex_unlock(&m->mu);
        pthread_join(m->thread, NULL);
    }
    fs_error_t ignored;
    if (m->lease && fs_etcd_lease_revoke(m->etcd, m->lease, &ignored) == FS_OK) reconcile(m, &ignored);
    member_free(m);
}

fs_status_t fs_member_map(fs_member_t *m, fs_shard_map_t *out, fs_error_t *err)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&m->mu);
    fs_status_t st = fs_shard_map_copy(&m->map, out, err);
    pthread_mutex_unlock(&m->mu);
    return st;
}

int64_t fs_member_revision(fs_member_t *m)
{
    pthread_mutex_lock(&m->mu);
    int64_t r = m->map.revision;
    pthread_mutex_unlock(&m->mu);
    return r;
}

void fs_member_status(fs_member_t *m, fs_member_status_t *out)
{
    pthread_mutex_lock(&m->mu);
    *out = m->status;
    out->self_pending = m->self_dirty;
    pthread_mutex_unlock(&m->mu);
}

fs_status_t fs_member_assignment(fs_member_t *m, fs_shard_map_t *out, fs_error_t *err)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&m->mu);
    fs_status_t st = m->assign.parts ? fs_shard_map_copy(&m->assign, out, err)
                                     : fs_error(err, FS_ERR_NOT_FOUND, "cluster %s has no assignment", m->name);
    pthread_mutex_unlock(&m->mu);
    return st;
}

fs_status_t fs_member_set_parts(fs_member_t *m, const int *owns, int n, const int *copies, int nc, int replicas,
                                fs_error_t *err)
{
    fs_shard_reg_t self = m->self;
    self.owns = (int *)owns, self.num_owned = n, self.copies = (int *)copies, self.num_copies = nc;
    self.replicas = replicas;
    int *o = malloc(sizeof *o * (size_t)(n + 1)), *c = malloc(sizeof *c * (size_t)(nc + 1));
    char *json = o && c ? fs_shard_reg_format(&self) : NULL;
    if (!json) {
        free(o), free(c);
        return fs_error(err, FS_ERR_NOMEM, "cluster %s: out of memory", m->name);
    }
    if (n) memcpy(o, owns, sizeof *o * (size_t)n);
    if (nc) memcpy(c, copies, sizeof *c * (size_t)nc);
    pthread_mutex_lock(&m->mu);
    free(m->self.owns), free(m->self.copies), free(m->self_json);
    m->self.owns = o, m->self.num_owned = n, m->self.copies = c, m->self.num_copies = nc, m->self.replicas = replicas;
    m->self_json = json;
    m->self_dirty = m->kick = 1;
    pthread_cond_signal(&m->cv);
    pthread_mutex_unlock(&m->mu);
    return FS_OK;
}
