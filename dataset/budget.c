/* budget.c — a served dataset's memory budget: which files are copied into
 * memory and which feature tables stay on disk (docs/design.md "The disk
 * tier").
 *
 * Everything but feature tables must be in memory (topology, labels,
 * splits: the engines read them at random, per edge). A feature table is
 * copied while it fits; one that does not is left on disk: its descriptor
 * kept, its header read, never mapped (a mapped file's missing row is a
 * page fault per 4 KiB, and a truncated one kills its readers), and its
 * rows are served by the host through disk/fs_disktable.
 *
 * "Fits": with a budget given (--mem-budget), a table is copied while the
 * copies so far and it stay within three quarters of the budget (the last
 * quarter is kept for the row cache and the files after it), and every
 * other file must fit the budget, or the open fails naming both sizes.
 * Without one, the budget is what the machine can give now (MemAvailable,
 * and the room left under the process's memory cgroup, whichever is less)
 * less a margin; a dataset that fits it is opened exactly as before. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset_internal.h"
#include "fs_fileio.h"

#define MARGIN_MIN ((size_t)256 << 20) /* at least this much is left for the processes themselves */

static double mib(size_t b) { return (double)b / (1 << 20); }

/* A number from a one-line file (cgroup files); 0 when absent or "max". */
static size_t read_size(const char *path)
{
    FILE *f = fopen(path, "re");
    unsigned long long v = 0;
    if (f) {
        if (fscanf(f, "%llu", &v) != 1) v = 0;
        fclose(f);
    }
    return (size_t)v;
}

/* The room left under this process's memory cgroup (v2, else v1), or
 * SIZE_MAX when it has no limit. */
static size_t cgroup_room(void)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    char line[1024], path[1400];
    size_t room = SIZE_MAX;
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *ctrl = strchr(line, ':'), *rel = ctrl ? strchr(ctrl + 1, ':') : NULL;
        if (!rel) continue;
        *rel++ = 0;
        size_t limit = 0, usage = 0;
        if (strcmp(ctrl + 1, "") == 0) { /* v2: "0::/path" */
            snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.max", rel);
            limit = read_size(path);
            snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.current", rel);
            usage = read_size(path);
        } else if (strstr(ctrl + 1, "memory")) { /* v1: "N:memory:/path" */
            snprintf(path, sizeof path, "/sys/fs/cgroup/memory%s/memory.limit_in_bytes", rel);
            limit = read_size(path);
            snprintf(path, sizeof path, "/sys/fs/cgroup/memory%s/memory.usage_in_bytes", rel);
            usage = read_size(path);
        }
        if (limit > 0 && limit < ((size_t)1 << 60)) room = limit > usage ? limit - usage : 0;
    }
    if (f) fclose(f);
    return room;
}

size_t ds_memory_available(void)
{
    FILE *f = fopen("/proc/meminfo", "re");
    char line[256];
    unsigned long long kb = 0;
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f)) found = sscanf(line, "MemAvailable: %llu kB", &kb) == 1;
    if (f) fclose(f);
    size_t avail = found ? (size_t)kb * 1024 : SIZE_MAX, room = cgroup_room();
    return avail < room ? avail : room;
}

/* The auto budget: what the machine can give now, less the margin. */
static size_t auto_room(void)
{
    size_t avail = ds_memory_available();
    if (avail == SIZE_MAX) return SIZE_MAX;
    size_t margin = avail / 8 > MARGIN_MIN ? avail / 8 : MARGIN_MIN;
    return avail > margin ? avail - margin : 0;
}

void ds_budget_init(open_ctx_t *c, const fs_copy_opts_t *o)
{
    c->budget_given = o && o->mem_budget > 0;
    c->budget = c->budget_given ? o->mem_budget : 0;
    c->copied = 0;
    size_t total = 0;
    const char *name;
    json_t *f;
    json_object_foreach(c->files, name, f) total += (size_t)json_integer_value(json_object_get(f, "bytes"));
    size_t room = c->budget_given ? c->budget - c->budget / 4 : auto_room();
    c->budget_binds = c->files && total > room;
}

int ds_budget_table_to_disk(open_ctx_t *c, size_t len)
{
    if (c->budget_given) return c->copied + len > c->budget - c->budget / 4;
    return len > auto_room();
}

fs_status_t ds_budget_charge(open_ctx_t *c, const char *path, size_t len)
{
    if (c->budget_given && c->copied + len > c->budget)
        return fs_error(c->err, FS_ERR_RESOURCE,
                        "%s: the memory budget (--mem-budget) of %.1f MiB is below what must stay in memory: this "
                        "file needs %.1f MiB more after %.1f MiB already copied (only feature tables can be served "
                        "from disk)",
                        path, mib(c->budget), mib(len), mib(c->copied));
    c->copied += len;
    return FS_OK;
}

size_t ds_budget_left(const open_ctx_t *c)
{
    if (c->budget_given) return c->budget > c->copied ? c->budget - c->copied : 0;
    size_t room = auto_room();
    return room == SIZE_MAX ? 0 : room;
}

fs_status_t ds_open_on_disk(open_ctx_t *c, const char *path, fs_mapping_t *m, fs_npy_header_t *h)
{
    size_t want = m->len < ((size_t)1 << 20) + 12 ? m->len : ((size_t)1 << 20) + 12; /* the parser's largest header */
    char *head = malloc(want);
    if (!head) return fs_error(c->err, FS_ERR_NOMEM, "%s: out of memory", path);
    ssize_t got = fs_pread_full(m->fd, head, want, 0); /* what it could read: the parser names a short header */
    fs_status_t s = fs_npy_parse(head, got > 0 ? (size_t)got : 0, path, h, c->err);
    free(head);
    if (s != FS_OK) return s;
    if (h->header_len + h->data_len != m->len)
        return fs_error(c->err, FS_ERR_FORMAT, "%s: header promises %zu data bytes but the file holds %zu (%s)", path,
                        h->data_len, m->len - h->header_len,
                        h->header_len + h->data_len > m->len ? "truncated" : "trailing bytes");
    m->on_disk = 1;
    return FS_OK;
}
