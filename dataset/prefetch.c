/* prefetch.c — a served dataset's in-memory files copied ahead, beside the
 * open (dataset_internal.h, ds_prefetch_*).
 *
 * Why: FS_OPEN_COPY copies each file the server keeps in memory, one after
 * another, and the open checks each before it reads the next. On the disk
 * probe's second start (docs/benchmarks.md, "The disk tier") the
 * topology's copy waits on the disk while the cores idle, then labels and
 * splits follow, each a few tens of milliseconds of latency and page
 * allocation. One thread here copies the same files from the other end of
 * the open's order, so the two meet in the middle.
 *
 * Each file is copied once, by whichever side claims it first: the open
 * takes a finished copy (after checking it is still the file it opened:
 * same device, inode, size and mtime), waits for one in progress, or
 * copies the file itself. A copy that fails here is dropped and the open
 * copies that file itself, so every error the open reports is the one a
 * sequential open would. Only non-table files are listed: whether a
 * feature table is copied depends on the budget left when the open gets
 * to it (budget.c); and nothing is copied ahead under a given memory
 * budget, which refuses a file before its copy. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset_internal.h"

enum { PENDING, RUNNING, DONE, CLAIMED };

typedef struct {
    const char *file;     /* borrowed from the manifest */
    int state;
    fs_mapping_t m;       /* DONE: the copy */
    uint64_t hash;
} job_t;

struct ds_prefetch {
    open_ctx_t c;         /* the open's, with an error of its own */
    fs_error_t err;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t changed;
    job_t *jobs;
    int n, stop;
};

static void release(fs_mapping_t *m)
{
    if (m->addr) munmap(m->addr, m->len);
    if (m->fd >= 0) close(m->fd);
    m->addr = NULL, m->fd = -1;
}

/* Copies one file as ds_map_npy would; 0, or -1 (nothing kept). */
static int copy_one(ds_prefetch_t *p, job_t *j)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", p->c.dir, j->file);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
        if (fd >= 0) close(fd);
        return -1;
    }
    j->m = (fs_mapping_t){.fd = -1, .len = (size_t)st.st_size};
    snprintf(j->m.file, sizeof j->m.file, "%s", j->file);
    ds_file_state(&st, &j->m.validated);
    fs_status_t s = ds_copy_serve(&p->c, path, fd, &j->m, &j->hash);
    close(fd);
    if (s != FS_OK) release(&j->m);
    return s == FS_OK ? 0 : -1;
}

static void *run(void *arg)
{
    ds_prefetch_t *p = arg;
    for (int i = p->n - 1; i >= 0; i--) {
        pthread_mutex_lock(&p->mu);
        int mine = !p->stop && p->jobs[i].state == PENDING;
        if (mine) p->jobs[i].state = RUNNING;
        pthread_mutex_unlock(&p->mu);
        if (!mine) continue;
        int ok = copy_one(p, &p->jobs[i]) == 0;
        pthread_mutex_lock(&p->mu);
        p->jobs[i].state = ok ? DONE : CLAIMED; /* a failed copy: the open copies the file itself */
        pthread_cond_broadcast(&p->changed);
        pthread_mutex_unlock(&p->mu);
    }
    return NULL;
}

static void add(ds_prefetch_t *p, const char *file, int cap)
{
    if (!file || !ds_safe_file_name(file) || p->n == cap) return; /* the open refuses it, naming it */
    for (int i = 0; i < p->n; i++)
        if (strcmp(p->jobs[i].file, file) == 0) return;
    p->jobs[p->n++] = (job_t){.file = file, .state = PENDING, .m = {.fd = -1}};
}

ds_prefetch_t *ds_prefetch_start(const open_ctx_t *c, json_t *m)
{
    /* Not for typed datasets (yet), nor under a given --mem-budget: its check comes before each copy, in the
     * open's order, and a copy made ahead would hold memory the budget may refuse. */
    if (!(c->flags & FS_OPEN_COPY) || c->given || c->ds->version != 1 || c->budget_given) return NULL;
    json_t *topo = json_object_get(m, "topology"), *splits = json_object_get(m, "splits"), *v;
    int cap = (int)(json_object_size(topo) + json_object_size(splits)) + 2;
    ds_prefetch_t *p = calloc(1, sizeof *p);
    if (!p || !(p->jobs = calloc((size_t)cap, sizeof *p->jobs))) {
        free(p);
        return NULL;
    }
    const char *key;
    /* the open's order: topology, (tables), labels, splits, node ids */
    json_object_foreach(topo, key, v) add(p, json_string_value(v), cap);
    add(p, ds_json_str(json_object_get(m, "labels"), "file"), cap);
    json_object_foreach(splits, key, v) add(p, json_string_value(v), cap);
    add(p, ds_json_str(m, "node_ids"), cap);
    p->c = *c;
    p->c.err = &p->err;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->changed, NULL);
    if (p->n < 2 || pthread_create(&p->thread, NULL, run, p) != 0) { /* one file: nothing to overlap */
        pthread_cond_destroy(&p->changed);
        pthread_mutex_destroy(&p->mu);
        free(p->jobs);
        free(p);
        return NULL;
    }
    return p;
}

int ds_prefetch_take(ds_prefetch_t *p, const char *file, const fs_file_state_t *opened, fs_mapping_t *m,
                     uint64_t *hash)
{
    if (!p) return 0;
    pthread_mutex_lock(&p->mu);
    job_t *j = NULL;
    for (int i = 0; i < p->n && !j; i++)
        if (strcmp(p->jobs[i].file, file) == 0) j = &p->jobs[i];
    while (j && j->state == RUNNING) pthread_cond_wait(&p->changed, &p->mu);
    int taken = 0;
    if (j && j->state == DONE) {
        const fs_file_state_t *a = &j->m.validated;
        if (a->dev == opened->dev && a->ino == opened->ino && a->size == opened->size &&
            a->mtime_ns == opened->mtime_ns) {
            *m = j->m, *hash = j->hash, taken = 1;
            j->m.fd = -1, j->m.addr = NULL; /* the open owns it now */
        } else {
            release(&j->m); /* replaced since: the open copies what it opened */
        }
    }
    if (j) j->state = CLAIMED;
    pthread_mutex_unlock(&p->mu);
    return taken;
}

void ds_prefetch_stop(ds_prefetch_t *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    for (int i = 0; i < p->n; i++) release(&p->jobs[i].m); /* copies the open never took (it failed first) */
    pthread_cond_destroy(&p->changed);
    pthread_mutex_destroy(&p->mu);
    free(p->jobs);
    free(p);
}
