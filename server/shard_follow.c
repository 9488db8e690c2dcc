/* shard_follow.c — a shard server following its cluster's assignment
 * (shard_follow.h says what and why): a step compares, a thread loads, and
 * the live shard is swapped for one with the parts added or dropped. */
#include "shard_follow.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dataset.h"

struct fs_shard_follow {
    const char *root;
    int threads, id;
    fs_shard_live_t *live;
    fs_member_t *member;
    fs_shard_metrics_t *metrics;
    int was_member;          /* the assignment named this shard once */
    int *reg, num_reg;       /* the parts last registered (ascending) */
    int reg_set;             /* reg was given to the membership */
    /* the load under way */
    pthread_t thread;
    int loading;
    int done;                /* atomic: the thread finished */
    int *want, num_want;
    fs_dataset_t **ds;
    fs_status_t st;
    fs_error_t err;
    double started, retry_at;
};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* "3,7,12" (the first 16, then ",..."), for the log. */
static const char *part_list(const int *p, int n, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < n && i < 16 && at < len; i++) at += (size_t)snprintf(buf + at, len - at, "%s%d", i ? "," : "", p[i]);
    if (n > 16 && at < len) snprintf(buf + at, len - at, ",...");
    return buf;
}

fs_status_t fs_shard_follow_start(const char *root, int threads, int id, fs_shard_live_t *live, fs_member_t *member,
                                  fs_shard_metrics_t *metrics, fs_shard_follow_t **out, fs_error_t *err)
{
    fs_shard_follow_t *f = calloc(1, sizeof *f);
    if (!f) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    *f = (fs_shard_follow_t){.root = root, .threads = threads, .id = id, .live = live, .member = member,
                             .metrics = metrics};
    *out = f;
    return FS_OK;
}

/* ---- loading ---------------------------------------------------------------------- */

static void *load(void *arg)
{
    fs_shard_follow_t *f = arg;
    f->st = fs_shard_open_parts(f->root, f->want, f->num_want, f->threads, f->ds, &f->err);
    __atomic_store_n(&f->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void load_start(fs_shard_follow_t *f, int *want, int n)
{
    f->want = want, f->num_want = n;
    f->ds = calloc((size_t)n, sizeof *f->ds);
    f->done = 0;
    f->started = now_s();
    if (f->ds && pthread_create(&f->thread, NULL, load, f) == 0) {
        f->loading = 1;
        return;
    }
    fprintf(stderr, "featstore: cannot start loading parts: out of memory or threads (trying again in %d s)\n",
            FS_FOLLOW_RETRY_S);
    free(f->want), free(f->ds);
    f->want = NULL, f->ds = NULL;
    f->retry_at = now_s() + FS_FOLLOW_RETRY_S;
}

/* A finished load: the shard answers from its parts and the new ones. */
static void load_finish(fs_shard_follow_t *f)
{
    pthread_join(f->thread, NULL);
    f->loading = 0;
    char list[160];
    part_list(f->want, f->num_want, list, sizeof list);
    fs_shard_t *next = NULL;
    if (f->st == FS_OK) {
        const fs_shard_t *now = fs_shard_live_get(f->live);
        f->st = fs_shard_regroup(now, NULL, 0, f->ds, f->num_want, &next, &f->err); /* it takes the datasets */
        fs_shard_live_put(f->live, now);
    }
    if (f->st == FS_OK) f->st = fs_shard_live_swap(f->live, next, &f->err);
    if (f->st == FS_OK) {
        fprintf(stderr, "featstore: loaded part%s %s, given by the cluster's assignment, in %.2f s\n",
                f->num_want > 1 ? "s" : "", list, now_s() - f->started);
        fs_shard_metrics_parts_moved(f->metrics, f->num_want, 0, 0);
    } else {
        fprintf(stderr, "featstore: cannot load part%s %s, given by the cluster's assignment: %s [%s] (trying again "
                "in %d s; the map keeps their other holders)\n", f->num_want > 1 ? "s" : "", list, f->err.msg,
                fs_strerror(f->st), FS_FOLLOW_RETRY_S);
        fs_shard_metrics_parts_moved(f->metrics, 0, 0, f->num_want);
        f->retry_at = now_s() + FS_FOLLOW_RETRY_S;
    }
    free(f->want), free(f->ds);
    f->want = NULL, f->ds = NULL;
}

/* ---- a step ----------------------------------------------------------------------- */

static int held_has(const int *held, int n, int p)
{
    for (int i = 0; i < n; i++)
        if (held[i] == p) return 1;
    return 0;
}

/* Parts a gives this shard that it does not hold, into a new array. */
static int missing(const fs_shard_follow_t *f, const fs_shard_map_t *a, const int *held, int n, int **out)
{
    int k = 0, *w = malloc(sizeof *w * (size_t)(a->parts + 1));
    for (int p = 0; w && p < a->parts; p++)
        if (fs_shard_map_rank(a, p, f->id) >= 0 && !held_has(held, n, p)) w[k++] = p;
    *out = w;
    return w ? k : 0;
}

/* The parts to register: those held that the assignment gives this shard,
 * and those it gave away that the map still names this shard for. */
static void registration(fs_shard_follow_t *f, const fs_shard_map_t *a, const fs_shard_map_t *m, const int *held,
                         int n)
{
    int *reg = malloc(sizeof *reg * (size_t)(n + 1)), k = 0;
    if (!reg) return; /* the next step tries again */
    for (int i = 0; i < n; i++)
        if (fs_shard_map_rank(a, held[i], f->id) >= 0 || fs_shard_map_rank(m, held[i], f->id) >= 0) reg[k++] = held[i];
    if (f->reg_set && k == f->num_reg && memcmp(reg, f->reg, sizeof *reg * (size_t)k) == 0) {
        free(reg);
        return;
    }
    int *owns = malloc(sizeof *owns * (size_t)(k + 1)), *copies = malloc(sizeof *copies * (size_t)(k + 1)), no = 0,
        nc = 0;
    for (int i = 0; owns && copies && i < k; i++) { /* owned: first by the assignment, or (given away) by the map */
        int r = fs_shard_map_rank(a, reg[i], f->id);
        if (r == 0 || (r < 0 && fs_shard_map_rank(m, reg[i], f->id) == 0)) owns[no++] = reg[i];
        else copies[nc++] = reg[i];
    }
    fs_error_t err = {0};
    if (owns && copies && fs_member_set_parts(f->member, owns, no, copies, nc, a->replicas, &err) == FS_OK) {
        free(f->reg);
        f->reg = reg, f->num_reg = k, f->reg_set = 1;
        reg = NULL;
    }
    free(reg), free(owns), free(copies);
}

/* Drops the held parts out of the registration once the map the workers
 * test against no longer names this shard for them. */
static void drop_unregistered(fs_shard_follow_t *f, const fs_shard_map_t *m, int64_t served, const int *held, int n)
{
    fs_member_status_t ms;
    fs_member_status(f->member, &ms);
    if (!f->reg_set || ms.self_pending || m->revision > served) return; /* not yet what trainers route by */
    int *drop = malloc(sizeof *drop * (size_t)(n + 1)), k = 0;
    for (int i = 0; drop && i < n; i++)
        if (!held_has(f->reg, f->num_reg, held[i]) && fs_shard_map_rank(m, held[i], f->id) < 0) drop[k++] = held[i];
    if (k > 0) {
        const fs_shard_t *now = fs_shard_live_get(f->live);
        fs_shard_t *next = NULL;
        fs_error_t err = {0};
        fs_status_t st = fs_shard_regroup(now, drop, k, NULL, 0, &next, &err);
        fs_shard_live_put(f->live, now);
        if (st == FS_OK) st = fs_shard_live_swap(f->live, next, &err);
        char list[160];
        if (st == FS_OK) fs_shard_metrics_parts_moved(f->metrics, 0, k, 0);
        if (st == FS_OK)
            fprintf(stderr, "featstore: dropped part%s %s: the map names other holders for %s\n", k > 1 ? "s" : "",
                    part_list(drop, k, list, sizeof list), k > 1 ? "them" : "it");
        else
            fprintf(stderr, "featstore: cannot drop parts yet: %s\n", err.msg);
    }
    free(drop);
}

int fs_shard_follow_step(fs_shard_follow_t *f, int64_t served)
{
    if (f->loading && __atomic_load_n(&f->done, __ATOMIC_ACQUIRE)) load_finish(f);
    fs_shard_map_t a, m;
    fs_error_t err = {0};
    if (fs_member_assignment(f->member, &a, &err) != FS_OK) return 0; /* no assignment: the parts it started with */
    if (fs_member_map(f->member, &m, &err) != FS_OK) {
        fs_shard_map_free(&a);
        return 0;
    }
    int member = 0;
    for (int i = 0; i < a.num_shards; i++) member |= a.shard[i].id == f->id;
    f->was_member |= member;
    const fs_shard_t *now = fs_shard_live_get(f->live);
    const int *held;
    int n = fs_shard_held(now, &held);
    if (!f->loading && now_s() >= f->retry_at) {
        int *want, k = missing(f, &a, held, n, &want);
        if (k > 0) load_start(f, want, k);
        else free(want);
    }
    registration(f, &a, &m, held, n);
    drop_unregistered(f, &m, served, held, n);
    fs_shard_live_put(f->live, now);
    now = fs_shard_live_get(f->live);
    n = fs_shard_held(now, &held);
    fs_shard_live_put(f->live, now);
    fs_shard_metrics_set_parts(f->metrics, n);
    fs_shard_map_free(&a);
    fs_shard_map_free(&m);
    return f->was_member && !member && n == 0 && !f->loading;
}

void fs_shard_follow_stop(fs_shard_follow_t *f)
{
    if (!f) return;
    if (f->loading) {
        pthread_join(f->thread, NULL);
        for (int i = 0; f->st == FS_OK && i < f->num_want; i++) fs_dataset_close(f->ds[i]);
    }
    free(f->want), free(f->ds), free(f->reg);
    free(f);
}
