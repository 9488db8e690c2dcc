/* fs_cluster_watch.c — a trainer's watch on its cluster's shard map.
 *
 * A cluster on etcd has a thread that keeps etcd's Watch on the map key
 * (fs_etcd_watch_t) and installs every map written there
 * (fs_cluster_install), so the process learns of a shard that died,
 * joined or moved within milliseconds of the write, without asking:
 * fs_split_by_owner, which must see a dead shard, reads the held map
 * instead of etcd's for every batch.
 *
 * Each watch lasts WATCH_PERIOD_MS (every remote call has a deadline) and
 * is opened again from the revision after the map held, so nothing written
 * in between is missed; a start that etcd compacted away reads the map
 * instead. While etcd cannot be reached the process keeps its map and the
 * thread tries again, with a backoff, reading the map to catch up once etcd
 * answers. fs_cluster_watching says whether the held map is etcd's: false
 * while the watch is down, and in a forked child (which has no thread). */
#include "fs_cluster_watch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "fs_etcd.h"
#include "fs_member.h"

#define WATCH_PERIOD_MS 30000
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000

struct fs_cluster_watch {
    fs_cluster_t *c;               /* not a reference: the cluster stops the watch before it goes */
    pthread_t thread;
    pthread_mutex_t lock;          /* stop, current, and the backoff's wait */
    pthread_cond_t wake;
    int stop;
    fs_etcd_watch_t *current;      /* the open watch, for stop to cancel */
    atomic_int live;               /* a watch is open: the held map is etcd's */
    pid_t pid;                     /* the process the thread runs in */
    atomic_llong installs;         /* maps installed from the watch */
};

static int stopping(fs_cluster_watch_t *w)
{
    pthread_mutex_lock(&w->lock);
    int s = w->stop;
    pthread_mutex_unlock(&w->lock);
    return s;
}

/* Publishes the open watch (NULL: none), cancelling it at once if stop came first. */
static void set_current(fs_cluster_watch_t *w, fs_etcd_watch_t *ew)
{
    pthread_mutex_lock(&w->lock);
    w->current = ew;
    if (ew && w->stop) fs_etcd_watch_cancel(ew);
    pthread_mutex_unlock(&w->lock);
}

/* Sleeps ms, or until stop. */
static void pause_ms(fs_cluster_watch_t *w, int ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
    pthread_mutex_lock(&w->lock);
    while (!w->stop && pthread_cond_timedwait(&w->wake, &w->lock, &until) == 0) {
    }
    pthread_mutex_unlock(&w->lock);
}

static int64_t held_revision(fs_cluster_t *c)
{
    pthread_mutex_lock(&c->map_lock);
    int64_t r = c->map.revision;
    pthread_mutex_unlock(&c->map_lock);
    return r;
}

/* Installs the last map among a watch's events (a deleted key is skipped:
 * the cluster keeps its last map). */
static void install_events(fs_cluster_watch_t *w, const fs_etcd_kvs_t *events)
{
    for (size_t i = events->n; i-- > 0;) {
        const fs_etcd_kv_t *kv = &events->kv[i];
        if (kv->deleted) continue;
        fs_shard_map_t m;
        fs_error_t err = {0};
        if (fs_shard_map_parse(kv->value, kv->value_len, &m, &err) != FS_OK) return; /* data calls will say why */
        m.revision = kv->mod_revision;
        fs_status_t st = fs_cluster_install(w->c, &m, 0, &err);
        if (st == FS_OK || st == FS_ERR_UNAVAILABLE) atomic_fetch_add(&w->installs, 1); /* a part without a shard is a map too */
        return;
    }
}

/* One watch, from the revision after the held map's, until its period ends
 * or it fails: FS_ERR_TIMEOUT when the period ended (open the next at
 * once), else why it could not go on. */
static fs_status_t watch_once(fs_cluster_watch_t *w, const char *key)
{
    fs_cluster_t *c = w->c;
    fs_etcd_watch_t *ew = NULL;
    fs_error_t err = {0};
    fs_status_t st = fs_etcd_watch_open(c->endpoint, key, held_revision(c) + 1, WATCH_PERIOD_MS, c->timeout_ms, &ew,
                                        &err);
    if (st != FS_OK) return st == FS_ERR_TIMEOUT ? FS_ERR_UNAVAILABLE : st; /* not made: not a period's end */
    set_current(w, ew);
    atomic_store(&w->live, 1);
    fs_etcd_kvs_t events = {0};
    while ((st = fs_etcd_watch_next(ew, &events, &err)) == FS_OK) install_events(w, &events);
    fs_etcd_kvs_free(&events);
    set_current(w, NULL);
    fs_etcd_watch_close(ew);
    return st;
}

static void *watch_main(void *arg)
{
    fs_cluster_watch_t *w = arg;
    char key[FS_CLUSTER_NAME_MAX + 64];
    fs_cluster_key(w->c->name, "map", key, sizeof key);
    int backoff = BACKOFF_MIN_MS;
    while (!stopping(w)) {
        fs_status_t st = watch_once(w, key);
        if (st == FS_ERR_TIMEOUT) { /* the period ended: the next watch goes on from the map held */
            backoff = BACKOFF_MIN_MS;
            continue;
        }
        atomic_store(&w->live, 0);
        if (stopping(w)) break;
        if (st != FS_ERR_NOT_FOUND) { /* etcd is away: wait, then catch up */
            pause_ms(w, backoff);
            backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
        }
        fs_error_t err = {0};
        fs_cluster_remap(w->c, 0, &err); /* the map as it is now (a compacted start, or etcd back) */
    }
    atomic_store(&w->live, 0);
    return NULL;
}

fs_status_t fs_cluster_watch_start(fs_cluster_t *c, fs_cluster_watch_t **out, fs_error_t *err)
{
    *out = NULL;
    fs_cluster_watch_t *w = calloc(1, sizeof *w);
    if (!w) return fs_error(err, FS_ERR_NOMEM, "cluster %s: out of memory", c->name);
    w->c = c;
    w->pid = getpid();
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
        pthread_mutex_destroy(&w->lock);
        pthread_cond_destroy(&w->wake);
        free(w);
        return fs_error(err, FS_ERR_RESOURCE, "cluster %s: cannot start the thread watching its map", c->name);
    }
    *out = w;
    return FS_OK;
}

void fs_cluster_watch_stop(fs_cluster_watch_t *w)
{
    if (!w) return;
    if (w->pid == getpid()) { /* a forked child has no thread to stop */
        pthread_mutex_lock(&w->lock);
        w->stop = 1;
        if (w->current) fs_etcd_watch_cancel(w->current);
        pthread_cond_broadcast(&w->wake);
        pthread_mutex_unlock(&w->lock);
        pthread_join(w->thread, NULL);
    }
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->wake);
    free(w);
}

int fs_cluster_watching(const fs_cluster_watch_t *w)
{
    return w && w->pid == getpid() && atomic_load(&((fs_cluster_watch_t *)w)->live);
}

int64_t fs_cluster_watch_installs(const fs_cluster_watch_t *w)
{
    return w ? atomic_load(&((fs_cluster_watch_t *)w)->installs) : 0;
}
