/* shard_live.c — the shard a shard server answers from now (shard_live.h
 * says what and why): the shards still read, each with its count of calls
 * reading it, in a short list under one mutex (a swap is rare; a get and
 * a put are a lock and an increment). */
#include "shard_live.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct version {
    fs_shard_t *shard;
    int readers;
    struct version *next;
} version_t;

struct fs_shard_live {
    pthread_mutex_t mu;
    version_t *now;   /* the shard now; older ones after it, while read */
};

fs_status_t fs_shard_live_create(fs_shard_t *first, fs_shard_live_t **out, fs_error_t *err)
{
    fs_shard_live_t *l = calloc(1, sizeof *l);
    version_t *v = l ? calloc(1, sizeof *v) : NULL;
    if (!v) {
        free(l);
        fs_shard_close(first);
        return fs_error(err, FS_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_init(&l->mu, NULL);
    v->shard = first;
    l->now = v;
    *out = l;
    return FS_OK;
}

void fs_shard_live_destroy(fs_shard_live_t *l)
{
    if (!l) return;
    for (version_t *v = l->now, *next; v; v = next) {
        next = v->next;
        fs_shard_close(v->shard);
        free(v);
    }
    pthread_mutex_destroy(&l->mu);
    free(l);
}

const fs_shard_t *fs_shard_live_get(fs_shard_live_t *l)
{
    pthread_mutex_lock(&l->mu);
    l->now->readers++;
    const fs_shard_t *s = l->now->shard;
    pthread_mutex_unlock(&l->mu);
    return s;
}

/* Unlinks and returns the old versions no call reads any more (under mu). */
static version_t *unread(fs_shard_live_t *l)
{
    version_t *gone = NULL;
    for (version_t **at = &l->now->next; *at;) {
        version_t *v = *at;
        if (v->readers > 0) {
            at = &v->next;
            continue;
        }
        *at = v->next;
        v->next = gone;
        gone = v;
    }
    return gone;
}

static void close_all(version_t *v)
{
    for (version_t *next; v; v = next) {
        next = v->next;
        fs_shard_close(v->shard);
        free(v);
    }
}

void fs_shard_live_put(fs_shard_live_t *l, const fs_shard_t *s)
{
    if (!s) return;
    pthread_mutex_lock(&l->mu);
    for (version_t *v = l->now; v; v = v->next)
        if (v->shard == s) {
            v->readers--;
            break;
        }
    version_t *gone = unread(l);
    pthread_mutex_unlock(&l->mu);
    close_all(gone); /* outside the lock: closing a part unmaps it */
}

fs_status_t fs_shard_live_swap(fs_shard_live_t *l, fs_shard_t *next, fs_error_t *err)
{
    version_t *v = calloc(1, sizeof *v);
    if (!v) { /* the shard now answers on */
        fs_shard_close(next);
        return fs_error(err, FS_ERR_NOMEM, "out of memory");
    }
    v->shard = next;
    pthread_mutex_lock(&l->mu);
    v->next = l->now;
    l->now = v;
    version_t *gone = unread(l);
    pthread_mutex_unlock(&l->mu);
    close_all(gone);
    return FS_OK;
}
