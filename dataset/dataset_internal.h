/* dataset_internal.h — what dataset.c (version 1, files, checks) and
 * dataset_typed.c (version 2's types) share while opening a dataset. Not
 * for use outside dataset/. */
#ifndef FS_DATASET_INTERNAL_H
#define FS_DATASET_INTERNAL_H

#include <jansson.h>

#include "dataset.h"
#include "fs_npy.h"

/* Files opened by someone else (fs_dataset_open_fds): name -> descriptor. */
typedef struct {
    const char *const *names;
    const int *fds;
    int count;
    const char *const *on_disk;    /* feature tables (by name) to leave on disk, never mapped */
    int num_on_disk;
} ds_given_files_t;

/* One mapped file of the dataset. */
struct fs_mapping {
    char file[128];
    void *addr;
    size_t len;
    int fd;                        /* the validated descriptor: the copy (FS_OPEN_COPY), or the file itself */
    int in_file;                   /* the copy is an unnamed file (else a sealed memfd; served_copy.c) */
    fs_file_state_t validated;     /* the file as it was when it was read */
    long long huge_bytes;          /* of the copy, in 2 MiB pages (-1 unknown; 0 without a copy) */
    int on_disk;                   /* a feature table left on disk (budget.c): fd is the file's own, addr NULL */
};

/* Where FS_OPEN_COPY puts copies, chosen once per open (ds_copy_choose). */
typedef struct {
    fs_copy_medium_t medium;       /* FS_COPY_MEMFD or FS_COPY_FILE */
    fs_copy_medium_t requested;    /* what was asked: FS_COPY_AUTO may still use a memfd per file (no room) */
    char dir[256];                 /* FS_COPY_FILE: the directory of the unnamed files */
} ds_copy_t;

typedef struct {
    fs_dataset_t *ds;
    const char *dir;
    json_t *files;            /* manifest "files" (checksums), may be NULL */
    const ds_given_files_t *given; /* NULL: open dir's files by path */
    unsigned flags;
    ds_copy_t copy;           /* with FS_OPEN_COPY */
    int threads;
    int table_file;           /* the file being opened is a feature table's: it may stay on disk */
    int table_on_disk;        /* ...and it must (ds_given_files_t.on_disk) */
    int budget_given;         /* FS_OPEN_COPY's memory budget (budget.c) */
    size_t budget, copied;
    int budget_binds;         /* by the manifest's file sizes, some feature table will stay on disk */
    struct ds_prefetch *prefetch; /* FS_OPEN_COPY's copies made ahead (prefetch.c), or NULL */
    fs_error_t *err;
} open_ctx_t;

typedef struct {
    const int64_t *indptr;
    const void *indices;
    fs_dtype_t index_dtype;
    const float *weights;
} ds_csr_t;

const char *ds_json_str(json_t *o, const char *key);
fs_status_t ds_need_file(open_ctx_t *c, json_t *o, const char *key, const char **file);
/* Opens, maps and checks one .npy file of the manifest (name, size, checksum, header). */
fs_status_t ds_map_npy(open_ctx_t *c, const char *file, fs_npy_header_t *h, const void **data);
fs_status_t ds_expect_shape(open_ctx_t *c, const char *file, const fs_npy_header_t *h, int ndim, int64_t rows,
                            const char *role);
fs_status_t ds_expect_dtype(open_ctx_t *c, const char *file, const fs_npy_header_t *h, fs_dtype_t a, fs_dtype_t b,
                            const char *role);
/* FS_ERR_FORMAT naming the first of data[0..n) outside [lo, hi). */
fs_status_t ds_check_ids(open_ctx_t *c, const char *file, const void *data, fs_dtype_t dt, int64_t n, int64_t lo,
                         int64_t hi, const char *what);
int64_t ds_first_decrease(open_ctx_t *c, const int64_t *a, int64_t n);
int64_t ds_first_bad_weight(open_ctx_t *c, const float *w, int64_t n);

fs_status_t ds_open_csr(open_ctx_t *c, json_t *topo, int64_t rows, int64_t edges, int64_t id_limit,
                        const char *weights_key, ds_csr_t *out);
fs_status_t ds_open_tables(open_ctx_t *c, json_t *feats, int64_t rows, const char *owner, fs_table_t **tables,
                           int *num);
fs_status_t ds_open_labels(open_ctx_t *c, json_t *lab, int64_t rows, const int64_t **labels, int64_t *num_classes,
                           fs_table_t *tables, int *num_tables);
/* Named id sets, every id in [lo, hi). */
fs_status_t ds_open_splits(open_ctx_t *c, json_t *splits, int64_t lo, int64_t hi, fs_idset_t **sets, int *num);

/* A file's identity, size and mtime as fstat/stat gave them. */
struct stat;
void ds_file_state(const struct stat *st, fs_file_state_t *out);

/* served_copy.c: FS_OPEN_COPY's copies. ds_copy_choose resolves `o`
 * (NULL: FS_COPY_AUTO in the default directory) once per open, probing
 * the host; ds_copy_serve copies file `src` into m (m->fd, m->addr become
 * the copy's), its checksum in *hash. */
fs_status_t ds_copy_choose(const fs_copy_opts_t *o, ds_copy_t *out, fs_error_t *err);
fs_status_t ds_copy_serve(open_ctx_t *c, const char *path, int src, fs_mapping_t *m, uint64_t *hash);

/* A file name of the manifest is a plain name inside the dataset's directory. */
int ds_safe_file_name(const char *f);

/* prefetch.c: FS_OPEN_COPY's copies of a version-1 dataset's non-table
 * files (topology, labels, splits, node ids; not under a given memory
 * budget), made by one thread from the
 * end of the open's order while the open works from its start.
 * ds_prefetch_start returns NULL where it does not apply or cannot start
 * (the open then copies everything itself). ds_prefetch_take: 1 with the
 * copy in *m (fd, addr, huge pages, the file's state) and its checksum in
 * *hash, when one was made of the file as `opened` describes it; 0 when
 * the caller copies the file itself (it waits for a copy in progress).
 * ds_prefetch_stop joins the thread and frees what was not taken. The
 * open calls all three from its one thread. */
typedef struct ds_prefetch ds_prefetch_t;
ds_prefetch_t *ds_prefetch_start(const open_ctx_t *c, json_t *manifest);
int ds_prefetch_take(ds_prefetch_t *p, const char *file, const fs_file_state_t *opened, fs_mapping_t *m,
                     uint64_t *hash);
void ds_prefetch_stop(ds_prefetch_t *p);

/* budget.c: what FS_OPEN_COPY copies and which feature tables stay on disk.
 * ds_memory_available: MemAvailable or the memory cgroup's room, the
 * lesser (SIZE_MAX when neither says). ds_budget_table_to_disk: whether a
 * feature table of len bytes stays on disk. ds_budget_charge: counts a copy
 * of len bytes, FS_ERR_RESOURCE naming both sizes when a given budget
 * cannot hold it. ds_budget_left: what the budget leaves after the copies.
 * ds_open_on_disk: a table left on disk, its header read from m->fd (kept)
 * and checked against the file's size; nothing mapped. ds_budget_init also
 * sets budget_binds: whether the files the manifest lists ("files": their
 * bytes) exceed what the budget copies (unknown without that list: 0). */
size_t ds_memory_available(void);
void ds_budget_init(open_ctx_t *c, const fs_copy_opts_t *o);
int ds_budget_table_to_disk(open_ctx_t *c, size_t len);
fs_status_t ds_budget_charge(open_ctx_t *c, const char *path, size_t len);
size_t ds_budget_left(const open_ctx_t *c);
fs_status_t ds_open_on_disk(open_ctx_t *c, const char *path, fs_mapping_t *m, fs_npy_header_t *h);

/* The file name of the mapping holding `data`, or NULL. */
const char *ds_mapping_file(const fs_dataset_t *ds, const void *data);

/* dataset_typed.c */
fs_status_t ds_open_typed(open_ctx_t *c, json_t *m);   /* version 2 */
fs_status_t ds_typed_from_v1(open_ctx_t *c);            /* a version-1 dataset as one node and one edge type */
fs_status_t ds_split_names_build(open_ctx_t *c);  /* the names fs_dataset_split resolves beyond ds->splits */
void ds_typed_free(fs_dataset_t *ds);

/* dataset_prop.c: the "propagation" object (hop tables), or nothing when p is NULL */
fs_status_t ds_open_propagation(open_ctx_t *c, json_t *p);
void ds_propagation_free(fs_dataset_t *ds);

#endif
