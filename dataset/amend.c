/* amend.c — adding tables to a dataset in place (the contract is amend.h). */
#include "amend.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_hash.h"

/* The commands that amend a dataset, whose scratch directories are ".<what>-<pid>". */
static const char *const SCRATCH_OF[] = {".propagate-", ".compress-"};

int fs_amend_stop_requested(const fs_amend_t *a) { return a->stop && *a->stop; }

fs_status_t fs_amend_stopped(fs_amend_t *a)
{
    a->stopped = 1;
    return fs_error(a->err, FS_ERR_IO, "%s: interrupted before the commit; %s is unchanged", a->what, a->dir);
}

/* ---- scratch files ----------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static void rm_tree(const char *path) { nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* Scratch directories left by runs that were killed (we hold the lock: none is running). */
static void remove_stale_scratch(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        for (size_t k = 0; k < sizeof SCRATCH_OF / sizeof *SCRATCH_OF; k++)
            if (strncmp(e->d_name, SCRATCH_OF[k], strlen(SCRATCH_OF[k])) == 0) {
                char path[4400];
                snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
                rm_tree(path);
            }
    if (d) closedir(d);
}

static fs_status_t create_file(fs_amend_t *a, fs_amend_file_t *o)
{
    size_t bytes = fs_dtype_size(o->dtype);
    for (int i = 0; i < o->ndim; i++) bytes *= (size_t)o->shape[i];
    o->len = FS_NPY_WRITE_HEADER_LEN + bytes;
    snprintf(o->path, sizeof o->path, "%s/%s.npy", a->scratch, o->base);
    o->fd = open(o->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (o->fd < 0) return fs_error(a->err, FS_ERR_IO, "cannot create %s: %s", o->path, strerror(errno));
    int e = posix_fallocate(o->fd, 0, (off_t)o->len);
    if (e != 0)
        return fs_error(a->err, FS_ERR_IO, "%s: cannot reserve %zu bytes for it: %s", o->path, o->len, strerror(e));
    void *m = mmap(NULL, o->len, PROT_READ | PROT_WRITE, MAP_SHARED, o->fd, 0);
    if (m == MAP_FAILED) return fs_error(a->err, FS_ERR_IO, "%s: cannot map: %s", o->path, strerror(errno));
    o->map = m;
    fs_npy_format(o->map, o->dtype, o->ndim, o->shape);
    return FS_OK;
}

/* Flushes a finished file to disk, records its checksum (the writer's: xxh3
 * of the whole file) and unmaps it, so its pages are clean page cache. */
fs_status_t fs_amend_finish(fs_amend_t *a, fs_amend_file_t *o)
{
    snprintf(o->xxh3, sizeof o->xxh3, "%016llx", (unsigned long long)fs_hash64(o->map, o->len));
    int rc = msync(o->map, o->len, MS_SYNC);
    munmap(o->map, o->len);
    o->map = NULL;
    if (rc == 0) rc = fsync(o->fd);
    close(o->fd);
    o->fd = -1;
    if (rc != 0) return fs_error(a->err, FS_ERR_IO, "%s: write failed: %s", o->path, strerror(errno));
    return FS_OK;
}

static void close_file(fs_amend_file_t *o)
{
    if (o->map) munmap(o->map, o->len);
    if (o->fd >= 0) close(o->fd);
    o->map = NULL, o->fd = -1;
}

/* A file name in the dataset that no file has (nor an earlier new file). */
static void name_file(fs_amend_t *a, fs_amend_file_t *o)
{
    for (int g = 1;; g++) {
        if (g == 1) snprintf(o->file, sizeof o->file, "%s.npy", o->base);
        else snprintf(o->file, sizeof o->file, "%s.%d.npy", o->base, g);
        int taken = faccessat(a->dir_fd, o->file, F_OK, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT;
        for (fs_amend_file_t *p = a->files; p < o && !taken; p++) taken = strcmp(p->file, o->file) == 0;
        if (!taken) return;
    }
}

fs_status_t fs_amend_add_files(fs_amend_t *a, int n)
{
    fs_amend_file_t *f = realloc(a->files, (size_t)(a->num_files + n) * sizeof *f);
    if (!f) return fs_error(a->err, FS_ERR_NOMEM, "out of memory");
    memset(f + a->num_files, 0, (size_t)n * sizeof *f);
    for (int i = 0; i < n; i++) f[a->num_files + i].fd = -1;
    a->files = f, a->num_files += n;
    return FS_OK;
}

fs_status_t fs_amend_create(fs_amend_t *a)
{
    for (int i = 0; i < a->num_files; i++) name_file(a, &a->files[i]);
    snprintf(a->scratch, sizeof a->scratch, "%s/.%s-%ld", a->dir, a->what, (long)getpid());
    if (mkdir(a->scratch, 0755) != 0)
        return fs_error(a->err, FS_ERR_IO, "cannot create %s: %s", a->scratch, strerror(errno));
    a->scratch_made = 1;
    for (int i = 0; i < a->num_files; i++) {
        fs_status_t s = create_file(a, &a->files[i]);
        if (s != FS_OK) return s;
    }
    return FS_OK;
}

/* ---- opening ------------------------------------------------------------------- */

fs_status_t fs_amend_open(fs_amend_t *a, const char *dir, const char *what, int threads,
                          const volatile sig_atomic_t *stop, fs_error_t *err)
{
    *a = (fs_amend_t){.dir = dir, .what = what, .err = err, .stop = stop, .dir_fd = -1};
    a->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (a->dir_fd < 0)
        return fs_error(err, errno == ENOENT ? FS_ERR_NOT_FOUND : FS_ERR_IO, "%s: cannot open: %s", dir, strerror(errno));
    if (flock(a->dir_fd, LOCK_EX | LOCK_NB) != 0)
        return fs_error(err, FS_ERR_EXISTS, "%s: another featstore propagate or compress is running on it (its "
                        "directory is locked); wait for it to finish", dir);
    fs_status_t s = fs_dataset_open(dir, FS_OPEN_VERIFY, threads, &a->ds, err);
    if (s != FS_OK) return s;
    json_error_t jerr;
    a->m = json_loadb(a->ds->manifest, a->ds->manifest_len, 0, &jerr);
    if (!a->m) return fs_error(err, FS_ERR_FORMAT, "%s/%s: %s", dir, FS_MANIFEST, jerr.text);
    remove_stale_scratch(dir);
    fs_status_t whole = fs_dataset_need_whole(a->ds, what, err);
    if (whole != FS_OK) return whole;
    if (fs_dataset_is_typed(a->ds))
        return fs_error(err, FS_ERR_UNSUPPORTED, "%s: %s is a typed graph (%d node types, %d edge types); %s takes a "
                        "dataset of one node type and one edge type (typed graphs: not yet supported)", what, dir,
                        a->ds->num_node_types, a->ds->num_edge_types, what);
    return FS_OK;
}

void fs_amend_close(fs_amend_t *a)
{
    for (int i = 0; a->files && i < a->num_files; i++) close_file(&a->files[i]);
    if (a->scratch_made) rm_tree(a->scratch); /* after a commit: only the emptied directory */
    free(a->files);
    json_decref(a->m);
    fs_dataset_close(a->ds);
    if (a->dir_fd >= 0) close(a->dir_fd); /* releases the lock */
    a->files = NULL, a->m = NULL, a->ds = NULL, a->dir_fd = -1, a->scratch_made = 0;
}

/* ---- the commit ----------------------------------------------------------------- */

json_t *fs_amend_features(json_t *m)
{
    json_t *owner = m;
    if (json_integer_value(json_object_get(m, "version")) >= 2) owner = json_array_get(json_object_get(m, "node_types"), 0);
    json_t *f = json_object_get(owner, "features");
    if (!json_is_object(f)) {
        f = json_object();
        json_object_set_new(owner, "features", f);
    }
    return f;
}

json_t *fs_amend_files(json_t *m)
{
    json_t *f = json_object_get(m, "files");
    if (!json_is_object(f)) {
        f = json_object();
        json_object_set_new(m, "files", f);
    }
    return f;
}

/* The new files in "files", which stays the last key, as the writer puts it. */
static void add_file_entries(fs_amend_t *a)
{
    json_t *files = fs_amend_files(a->m);
    for (int i = 0; i < a->num_files; i++)
        json_object_set_new(files, a->files[i].file,
                            json_pack("{s:I, s:s}", "bytes", (json_int_t)a->files[i].len, "xxh3", a->files[i].xxh3));
    json_incref(files);
    json_object_del(a->m, "files");
    json_object_set_new(a->m, "files", files);
}

static fs_status_t write_manifest(fs_amend_t *a, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) return fs_error(a->err, FS_ERR_IO, "cannot create %s: %s", path, strerror(errno));
    int rc = json_dumpf(a->m, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    rc |= fputc('\n', f) == EOF;
    rc |= fflush(f) != 0 || fsync(fileno(f)) != 0;
    rc |= fclose(f) != 0;
    if (rc) return fs_error(a->err, FS_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    return FS_OK;
}

/* The manifest on disk is still the one the tables were made from. */
static fs_status_t manifest_unchanged(fs_amend_t *a)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", a->dir, FS_MANIFEST);
    FILE *f = fopen(path, "rb");
    char *buf = malloc(a->ds->manifest_len + 1);
    size_t n = f && buf ? fread(buf, 1, a->ds->manifest_len + 1, f) : 0;
    int same = n == a->ds->manifest_len && memcmp(buf, a->ds->manifest, n) == 0;
    if (f) fclose(f);
    free(buf);
    if (same) return FS_OK;
    return fs_error(a->err, FS_ERR_IO, "%s: %s changed while the tables were being made; nothing was committed "
                    "(run it again)", a->what, path);
}

static void move_back(fs_amend_t *a)
{
    for (int i = 0; i < a->num_files; i++)
        if (a->files[i].moved && renameat(a->dir_fd, a->files[i].file, AT_FDCWD, a->files[i].path) == 0)
            a->files[i].moved = 0;
}

/* Renames o into the dataset, never over a file (a file system without
 * RENAME_NOREPLACE: link, which refuses an existing name, then unlink). */
static int rename_new(fs_amend_t *a, const fs_amend_file_t *o)
{
    if (renameat2(AT_FDCWD, o->path, a->dir_fd, o->file, RENAME_NOREPLACE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS) return -1;
    if (linkat(AT_FDCWD, o->path, a->dir_fd, o->file, 0) != 0) return -1;
    return unlink(o->path);
}

static fs_status_t move_in(fs_amend_t *a, const char *manifest_tmp)
{
    for (int i = 0; i < a->num_files; i++) {
        fs_amend_file_t *o = &a->files[i];
        if (rename_new(a, o) != 0) {
            fs_status_t s = fs_error(a->err, FS_ERR_IO, "cannot move %s to %s/%s: %s", o->path, a->dir, o->file,
                                     strerror(errno));
            move_back(a);
            return s;
        }
        o->moved = 1;
    }
    if (renameat(AT_FDCWD, manifest_tmp, a->dir_fd, FS_MANIFEST) != 0) {
        fs_status_t s = fs_error(a->err, FS_ERR_IO, "cannot replace %s/%s: %s", a->dir, FS_MANIFEST, strerror(errno));
        move_back(a);
        return s;
    }
    fsync(a->dir_fd);
    return FS_OK;
}

fs_status_t fs_amend_commit(fs_amend_t *a, void (*edit)(void *ctx, json_t *m, json_t *gone), void *ctx)
{
    sigset_t hold, before;
    sigemptyset(&hold);
    sigaddset(&hold, SIGINT), sigaddset(&hold, SIGTERM), sigaddset(&hold, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &hold, &before);
    fs_status_t s = fs_amend_stop_requested(a) ? fs_amend_stopped(a) : manifest_unchanged(a);
    json_t *gone = json_array();
    char manifest_tmp[4400];
    snprintf(manifest_tmp, sizeof manifest_tmp, "%s/%s", a->scratch, FS_MANIFEST);
    if (s == FS_OK) {
        edit(ctx, a->m, gone);
        json_t *files = fs_amend_files(a->m), *f;
        size_t i;
        json_array_foreach(gone, i, f) if (json_string_value(f)) json_object_del(files, json_string_value(f));
        add_file_entries(a);
        s = write_manifest(a, manifest_tmp);
    }
    if (s == FS_OK) s = move_in(a, manifest_tmp);
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    size_t i;
    json_t *f;
    if (s == FS_OK)
        json_array_foreach(gone, i, f) if (json_string_value(f)) unlinkat(a->dir_fd, json_string_value(f), 0);
    json_decref(gone);
    return s;
}
