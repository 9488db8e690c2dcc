/* writer.c — atomic creation of a native dataset directory (see writer.h).
 * The manifest is generated from the registered arrays, so reader and writer
 * cannot disagree on which file plays which role.
 *
 * Arrays are filled through shared mappings, and a store into a mapped page
 * the filesystem cannot back is a SIGBUS, not an error. So every array's
 * blocks are reserved with posix_fallocate before it is mapped: a full disk
 * (ENOSPC) or a file-size limit (EFBIG under RLIMIT_FSIZE) is then an error
 * naming the file and the size it needed, and the later stores cannot fail.
 * SIGXFSZ, which the kernel sends with EFBIG and whose default action kills
 * the process, is ignored for the same reason (fs_writer_create). Copy-on-
 * write filesystems (btrfs, ZFS) may still need blocks when a reserved block
 * is first written; fallocate is the strongest promise they make.
 *
 * The commit hashes each array window by window and drops each window from
 * the process once hashed (window.h; the page cache keeps it until it is
 * written), so committing a dataset larger than memory holds one window. */
#include "writer.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset.h"
#include "fs_hash.h"
#include "fs_npy.h"
#include "window.h"

typedef struct {
    fs_role_t role;
    char name[64];
    char file[128];
    fs_dtype_t dtype;
    int ndim;
    int64_t shape[2];
    int fd;
    void *map;        /* header + data */
    size_t map_len;
} array_t;

struct fs_writer {
    char *out_dir, *tmp_dir;
    int force;
    array_t *arrays;
    int num_arrays, cap_arrays;
    char name[128];
    int64_t num_nodes, num_edges, num_classes;
    int symmetric;
    json_t *source;
    json_t *typed;    /* version 2: node_types, edge_types, link_splits (fs_writer_set_typed) */
};

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

void fs_rm_tree(const char *path)
{
    nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A file-size limit must come back as EFBIG, an error naming the file, not
 * kill the process: ignore SIGXFSZ unless the program handles it itself. */
static void ignore_sigxfsz(void)
{
    struct sigaction sa;
    if (sigaction(SIGXFSZ, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL && !(sa.sa_flags & SA_SIGINFO))
        signal(SIGXFSZ, SIG_IGN);
}


/* Creates the directories above `out_dir` that do not exist yet (as
 * mkdir -p does), so `--out data/g` works in a fresh checkout. */
static fs_status_t make_parents(const char *out_dir, fs_error_t *err)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s", out_dir) >= (int)sizeof path)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "output path is longer than %zu bytes", sizeof path - 1);
    for (char *p = path + 1; (p = strchr(p, '/')) != NULL; p++) {
        *p = '\0';
        struct stat st;
        if (mkdir(path, 0755) != 0 && errno != EEXIST)
            return fs_error(err, FS_ERR_IO, "cannot create directory %s (for %s): %s", path, out_dir, strerror(errno));
        if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
            return fs_error(err, FS_ERR_IO, "cannot write %s: %s is not a directory", out_dir, path);
        *p = '/';
    }
    return FS_OK;
}

fs_status_t fs_writer_create(const char *out_dir_given, int force, fs_writer_t **out, fs_error_t *err)
{
    *out = NULL;
    ignore_sigxfsz();
    /* "g/" names g: the temporary directory goes beside it, not inside */
    char out_dir[4096];
    size_t len = strlen(out_dir_given);
    while (len > 1 && out_dir_given[len - 1] == '/') len--;
    if (len == 0 || len >= sizeof out_dir)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "output directory '%s': give a path of 1..%zu bytes",
                        out_dir_given, sizeof out_dir - 1);
    memcpy(out_dir, out_dir_given, len);
    out_dir[len] = '\0';
    struct stat st;
    if (stat(out_dir, &st) == 0) {
        char manifest[4200];
        snprintf(manifest, sizeof manifest, "%s/%s", out_dir, FS_MANIFEST);
        if (!force)
            return fs_error(err, FS_ERR_EXISTS, "%s already exists (use --force to replace it)", out_dir);
        if (!S_ISDIR(st.st_mode) || access(manifest, F_OK) != 0)
            return fs_error(err, FS_ERR_EXISTS, "%s exists and is not a featstore dataset; refusing to "
                            "replace it even with --force", out_dir);
    }
    fs_writer_t *w = calloc(1, sizeof *w);
    if (!w) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    w->out_dir = strdup(out_dir);
    w->tmp_dir = malloc(strlen(out_dir) + 32);
    if (!w->out_dir || !w->tmp_dir) {
        fs_writer_abort(w);
        return fs_error(err, FS_ERR_NOMEM, "out of memory");
    }
    sprintf(w->tmp_dir, "%s.tmp-%ld", out_dir, (long)getpid());
    w->force = force;
    fs_rm_tree(w->tmp_dir);
    fs_status_t made = make_parents(out_dir, err);
    if (made != FS_OK) {
        fs_writer_abort(w);
        return made;
    }
    if (mkdir(w->tmp_dir, 0755) != 0) {
        fs_status_t s = fs_error(err, FS_ERR_IO, "cannot create %s: %s", w->tmp_dir, strerror(errno));
        free(w->tmp_dir);
        w->tmp_dir = NULL;
        fs_writer_abort(w);
        return s;
    }
    *out = w;
    return FS_OK;
}

const char *fs_writer_tmpdir(const fs_writer_t *w) { return w->tmp_dir; }

static void role_file(fs_role_t role, const char *name, char file[128])
{
    switch (role) {
    case FS_ROLE_INDPTR: snprintf(file, 128, "indptr.npy"); break;
    case FS_ROLE_INDICES: snprintf(file, 128, "indices.npy"); break;
    case FS_ROLE_EDGE_WEIGHTS: snprintf(file, 128, "edge_weights.npy"); break;
    case FS_ROLE_FEATURES: snprintf(file, 128, "table_%s.npy", name); break;
    case FS_ROLE_LABELS: snprintf(file, 128, "labels.npy"); break;
    case FS_ROLE_SPLIT: snprintf(file, 128, "split_%s.npy", name); break;
    case FS_ROLE_NODE_IDS: snprintf(file, 128, "node_ids.npy"); break;
    case FS_ROLE_FILE: snprintf(file, 128, "%s", name); break;
    }
}

static int valid_name(const char *name)
{
    if (!name || !*name || strlen(name) >= 64) return 0;
    for (const char *p = name; *p; p++)
        if (!(*p == '_' || *p == '-' || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
              (*p >= 'A' && *p <= 'Z')))
            return 0;
    return 1;
}

static size_t array_bytes(const array_t *a)
{
    size_t n = fs_dtype_size(a->dtype);
    for (int i = 0; i < a->ndim; i++) n *= (size_t)a->shape[i];
    return n;
}

/* Sizes the file to len bytes with every block reserved (see the top of
 * this file); shrinking only truncates. */
static fs_status_t reserve_file(array_t *a, const char *path, size_t len, fs_error_t *err)
{
    int e = 0;
    if (len > a->map_len) e = posix_fallocate(a->fd, 0, (off_t)len); /* returns the error, errno untouched */
    else if (ftruncate(a->fd, (off_t)len) != 0) e = errno;
    if (e == 0) return FS_OK;
    return fs_error(err, FS_ERR_IO, "%s: cannot reserve %zu bytes for it: %s%s", path, len, strerror(e),
                    e == EFBIG ? " (over the process's file-size limit, RLIMIT_FSIZE)" : "");
}

/* (Re)sizes the file to header + data and maps it; writes the header. */
static fs_status_t map_array(array_t *a, const char *path, fs_error_t *err)
{
    size_t len = FS_NPY_WRITE_HEADER_LEN + array_bytes(a);
    fs_status_t s = reserve_file(a, path, len, err);
    if (s != FS_OK) return s;
    void *m = a->map ? mremap(a->map, a->map_len, len, MREMAP_MAYMOVE)
                     : mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, a->fd, 0);
    if (m == MAP_FAILED) return fs_error(err, FS_ERR_IO, "%s: cannot map: %s", path, strerror(errno));
    a->map = m;
    a->map_len = len;
    fs_npy_format(m, a->dtype == FS_DTYPE_BF16 ? FS_DTYPE_BF16 : a->dtype, a->ndim, a->shape);
    return FS_OK;
}

/* A version-2 file name: [A-Za-z0-9_.-], not starting with '.', ending in .npy. */
static int valid_file_name(const char *f)
{
    size_t n = f ? strlen(f) : 0;
    if (n < 5 || n >= 128 || f[0] == '.' || strcmp(f + n - 4, ".npy") != 0) return 0;
    for (size_t i = 0; i < n; i++)
        if (!(f[i] == '_' || f[i] == '-' || f[i] == '.' || (f[i] >= '0' && f[i] <= '9') || (f[i] >= 'a' && f[i] <= 'z') ||
              (f[i] >= 'A' && f[i] <= 'Z')))
            return 0;
    return 1;
}

static fs_status_t add_array(fs_writer_t *w, fs_role_t role, const char *name, fs_dtype_t dt, int ndim,
                             const int64_t *shape, void **data, fs_error_t *err)
{
    if (w->num_arrays == w->cap_arrays) {
        int cap = w->cap_arrays ? 2 * w->cap_arrays : 16;
        array_t *grown = realloc(w->arrays, (size_t)cap * sizeof *grown);
        if (!grown) return fs_error(err, FS_ERR_NOMEM, "out of memory");
        w->arrays = grown, w->cap_arrays = cap;
    }
    array_t *a = &w->arrays[w->num_arrays];
    memset(a, 0, sizeof *a);
    a->role = role;
    snprintf(a->name, sizeof a->name, "%s", name);
    role_file(role, name, a->file);
    for (int i = 0; i < w->num_arrays; i++)
        if (strcmp(w->arrays[i].file, a->file) == 0)
            return fs_error(err, FS_ERR_EXISTS, "%s is already part of this dataset", a->file);
    a->dtype = dt;
    a->ndim = ndim;
    for (int i = 0; i < ndim; i++) a->shape[i] = shape[i];
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", w->tmp_dir, a->file);
    a->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (a->fd < 0) return fs_error(err, FS_ERR_IO, "cannot create %s: %s", path, strerror(errno));
    fs_status_t s = map_array(a, path, err);
    if (s != FS_OK) {
        close(a->fd);
        return s;
    }
    w->num_arrays++;
    *data = (char *)a->map + FS_NPY_WRITE_HEADER_LEN;
    return FS_OK;
}

fs_status_t fs_writer_array(fs_writer_t *w, fs_role_t role, const char *name, fs_dtype_t dt, int ndim,
                            const int64_t *shape, void **data, fs_error_t *err)
{
    int named = role == FS_ROLE_FEATURES || role == FS_ROLE_SPLIT;
    if (role == FS_ROLE_FILE && !valid_file_name(name))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "file name '%s' must be 5-127 characters of [A-Za-z0-9_.-], "
                        "not start with '.' and end in .npy", name ? name : "");
    if (named && !valid_name(name))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "table or split name '%s' must be 1-63 characters of "
                        "[A-Za-z0-9_-]", name ? name : "");
    return add_array(w, role, named || role == FS_ROLE_FILE ? name : "", dt, ndim, shape, data, err);
}

fs_status_t fs_writer_resize(fs_writer_t *w, void **data, int64_t rows, fs_error_t *err)
{
    for (int i = 0; i < w->num_arrays; i++) {
        array_t *a = &w->arrays[i];
        if ((char *)a->map + FS_NPY_WRITE_HEADER_LEN != *data) continue;
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", w->tmp_dir, a->file);
        a->shape[0] = rows;
        fs_status_t s = map_array(a, path, err);
        if (s == FS_OK) *data = (char *)a->map + FS_NPY_WRITE_HEADER_LEN;
        return s;
    }
    return fs_error(err, FS_ERR_INTERNAL, "fs_writer_resize: pointer is not a writer array");
}

void fs_writer_set_meta(fs_writer_t *w, const char *name, int64_t num_nodes, int64_t num_edges,
                        int symmetric, int64_t num_classes)
{
    snprintf(w->name, sizeof w->name, "%s", name ? name : "");
    w->num_nodes = num_nodes;
    w->num_edges = num_edges;
    w->symmetric = symmetric;
    w->num_classes = num_classes;
}

fs_status_t fs_writer_set_source(fs_writer_t *w, const char *source_json, fs_error_t *err)
{
    json_error_t jerr;
    json_t *j = json_loads(source_json, 0, &jerr);
    if (!json_is_object(j)) {
        json_decref(j);
        return fs_error(err, FS_ERR_INTERNAL, "bad source description: %s", jerr.text);
    }
    json_decref(w->source);
    w->source = j;
    return FS_OK;
}

static const array_t *find_role(const fs_writer_t *w, fs_role_t role)
{
    for (int i = 0; i < w->num_arrays; i++)
        if (w->arrays[i].role == role) return &w->arrays[i];
    return NULL;
}

fs_status_t fs_writer_set_typed(fs_writer_t *w, const char *graph_json, fs_error_t *err)
{
    json_error_t jerr;
    json_t *j = json_loads(graph_json, 0, &jerr);
    if (!json_is_object(j) || !json_is_array(json_object_get(j, "node_types"))) {
        json_decref(j);
        return fs_error(err, FS_ERR_INTERNAL, "bad typed-graph description: %s", j ? "no node_types list" : jerr.text);
    }
    json_decref(w->typed);
    w->typed = j;
    return FS_OK;
}

/* Version 2: the caller's description of the types, naming the files. */
static json_t *build_typed_manifest(fs_writer_t *w)
{
    json_t *m = json_object();
    json_object_set_new(m, "format", json_string(FS_DATASET_FORMAT));
    json_object_set_new(m, "version", json_integer(FS_DATASET_VERSION));
    json_object_set_new(m, "name", json_string(w->name));
    const char *key;
    json_t *v;
    json_object_foreach(w->typed, key, v) json_object_set(m, key, v);
    if (w->source) json_object_set(m, "source", w->source);
    return m;
}

static json_t *build_manifest(fs_writer_t *w)
{
    if (w->typed) return build_typed_manifest(w);
    json_t *m = json_object(), *topo = json_object(), *feats = json_object(), *splits = json_object();
    json_object_set_new(m, "format", json_string(FS_DATASET_FORMAT));
    json_object_set_new(m, "version", json_integer(1)); /* homogeneous: readable by every release */
    json_object_set_new(m, "name", json_string(w->name));
    json_object_set_new(m, "num_nodes", json_integer(w->num_nodes));
    json_object_set_new(m, "num_edges", json_integer(w->num_edges));
    json_object_set_new(m, "symmetric", json_boolean(w->symmetric));
    const array_t *a;
    if ((a = find_role(w, FS_ROLE_INDPTR))) json_object_set_new(topo, "indptr", json_string(a->file));
    if ((a = find_role(w, FS_ROLE_INDICES))) json_object_set_new(topo, "indices", json_string(a->file));
    if ((a = find_role(w, FS_ROLE_EDGE_WEIGHTS))) json_object_set_new(topo, "edge_weights", json_string(a->file));
    json_object_set_new(m, "topology", topo);
    for (int i = 0; i < w->num_arrays; i++) {
        a = &w->arrays[i];
        if (a->role == FS_ROLE_FEATURES)
            json_object_set_new(feats, a->name, json_pack("{s:s, s:s}", "file", a->file, "dtype",
                                                          fs_dtype_name(a->dtype)));
        if (a->role == FS_ROLE_SPLIT) json_object_set_new(splits, a->name, json_string(a->file));
    }
    json_object_set_new(m, "features", feats);
    if ((a = find_role(w, FS_ROLE_LABELS)))
        json_object_set_new(m, "labels", json_pack("{s:s, s:I}", "file", a->file, "num_classes",
                                                   (json_int_t)w->num_classes));
    json_object_set_new(m, "splits", splits);
    if ((a = find_role(w, FS_ROLE_NODE_IDS))) json_object_set_new(m, "node_ids", json_string(a->file));
    if (w->source) json_object_set(m, "source", w->source);
    return m;
}

/* The xxh3 of a mapped array, each window dropped once hashed. */
static fs_status_t hash_windows(const array_t *a, uint64_t *hash, fs_error_t *err)
{
    fs_hash_t *st = fs_hash_new();
    if (!st) return fs_error(err, FS_ERR_NOMEM, "out of memory hashing %s", a->file);
    for (size_t off = 0; off < a->map_len; off += FS_WINDOW_BYTES) {
        size_t len = a->map_len - off < FS_WINDOW_BYTES ? a->map_len - off : FS_WINDOW_BYTES;
        fs_hash_update(st, (const char *)a->map + off, len);
        fs_drop_pages((const char *)a->map + off, len);
    }
    *hash = fs_hash_digest(st);
    fs_hash_free(st);
    return FS_OK;
}

/* Flushes an array, records its checksum and closes it. */
static fs_status_t finish_array(fs_writer_t *w, array_t *a, json_t *files, fs_error_t *err)
{
    uint64_t hash = 0;
    fs_status_t hs = hash_windows(a, &hash, err);
    if (hs != FS_OK) return hs;
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)hash);
    json_object_set_new(files, a->file, json_pack("{s:I, s:s}", "bytes", (json_int_t)a->map_len, "xxh3", hex));
    int rc = msync(a->map, a->map_len, MS_SYNC);
    munmap(a->map, a->map_len);
    a->map = NULL;
    if (rc == 0) rc = fsync(a->fd);
    close(a->fd);
    a->fd = -1;
    if (rc != 0) return fs_error(err, FS_ERR_IO, "%s/%s: write failed: %s", w->tmp_dir, a->file, strerror(errno));
    return FS_OK;
}

static fs_status_t write_manifest(fs_writer_t *w, json_t *m, fs_error_t *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", w->tmp_dir, FS_MANIFEST);
    FILE *f = fopen(path, "w");
    if (!f) return fs_error(err, FS_ERR_IO, "cannot create %s: %s", path, strerror(errno));
    int rc = json_dumpf(m, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    rc |= fputc('\n', f) == EOF;
    rc |= fflush(f) != 0 || fsync(fileno(f)) != 0;
    rc |= fclose(f) != 0;
    if (rc) return fs_error(err, FS_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    return FS_OK;
}

fs_status_t fs_writer_commit(fs_writer_t *w, fs_error_t *err)
{
    json_t *m = build_manifest(w), *files = json_object();
    fs_status_t s = FS_OK;
    for (int i = 0; i < w->num_arrays && s == FS_OK; i++) s = finish_array(w, &w->arrays[i], files, err);
    json_object_set_new(m, "files", files);
    if (s == FS_OK) s = write_manifest(w, m, err);
    json_decref(m);
    if (s == FS_OK) {
        struct stat st;
        if (w->force && stat(w->out_dir, &st) == 0) fs_rm_tree(w->out_dir); /* a dataset: checked at create */
        if (rename(w->tmp_dir, w->out_dir) != 0)
            s = fs_error(err, FS_ERR_IO, "cannot rename %s to %s: %s", w->tmp_dir, w->out_dir, strerror(errno));
    }
    fs_writer_abort(w); /* tmp_dir is gone after a successful rename */
    return s;
}

void fs_writer_abort(fs_writer_t *w)
{
    if (!w) return;
    for (int i = 0; i < w->num_arrays; i++) {
        if (w->arrays[i].map) munmap(w->arrays[i].map, w->arrays[i].map_len);
        if (w->arrays[i].fd >= 0) close(w->arrays[i].fd);
    }
    if (w->tmp_dir) fs_rm_tree(w->tmp_dir);
    json_decref(w->source);
    json_decref(w->typed);
    free(w->arrays);
    free(w->tmp_dir);
    free(w->out_dir);
    free(w);
}
