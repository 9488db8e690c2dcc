/* amend.h — adding tables to a dataset in place, all or nothing: the steps
 * `featstore propagate` and `featstore compress` share.
 *
 * Open: the dataset is opened and verified like `info` does, under an
 * exclusive flock on its directory (one amendment at a time), and its
 * manifest read. Files: each new file is made in a scratch directory inside
 * the dataset (DIR/.amend-<pid>: same file system, so moving it in is a
 * rename), reserved (posix_fallocate) and mapped read-write with its .npy
 * header written; the caller fills it and finishes it (checksum, msync,
 * unmap). Commit, with SIGINT/SIGTERM/SIGHUP held back: check the manifest
 * is still the one read, let the caller edit it, add the new files with
 * their sizes and checksums, write it into the scratch directory, rename
 * each file into the dataset under a name no file has (RENAME_NOREPLACE),
 * then rename the manifest over the old one and fsync the directory.
 * Before that last rename nothing the dataset names has changed; a failed
 * rename moves the files back out. Files the edit drops are unlinked after
 * the commit. Leftover scratch directories (a SIGKILLed run) are removed by
 * the next amendment.
 *
 * Ownership: the amendment owns its dataset, manifest, files and lock until
 * fs_amend_close. Thread-safety: one thread drives it; the files' contents
 * may be filled from many threads. */
#ifndef FS_AMEND_H
#define FS_AMEND_H

#include <jansson.h>
#include <signal.h>

#include "dataset.h"
#include "fs_npy.h"

typedef struct {
    char table[64];            /* the table it holds ("" for other arrays), for the caller */
    char base[64];             /* its file name without ".npy" */
    char file[128];            /* its name in the dataset */
    char path[4400];           /* in the scratch directory */
    fs_dtype_t dtype;
    int ndim;
    int64_t shape[2];
    int fd;
    char *map;                 /* header + data, while mapped */
    size_t len;
    char xxh3[17];
    int moved;                 /* renamed into the dataset */
} fs_amend_file_t;

typedef struct {
    const char *dir;
    const char *what;          /* the command, for messages ("propagate") */
    fs_error_t *err;
    const volatile sig_atomic_t *stop; /* may be NULL; non-zero: stop and change nothing */
    int stopped;               /* the stop was seen */
    fs_dataset_t *ds;          /* opened and verified */
    json_t *m;                 /* the manifest as read; the commit writes an edited copy */
    int dir_fd;                /* holds the lock */
    char scratch[4300];
    int scratch_made;
    fs_amend_file_t *files;
    int num_files;
} fs_amend_t;

/* Locks dir and opens it (FS_OPEN_VERIFY with `threads`). FS_ERR_EXISTS
 * when another amendment holds the lock; a partitioned part or a typed
 * graph is FS_ERR_UNSUPPORTED. Call fs_amend_close whatever it returns. */
fs_status_t fs_amend_open(fs_amend_t *a, const char *dir, const char *what, int threads,
                          const volatile sig_atomic_t *stop, fs_error_t *err);

/* n new files, zeroed: the caller sets each one's table, base, dtype, ndim
 * and shape, then calls fs_amend_create. */
fs_status_t fs_amend_add_files(fs_amend_t *a, int n);
/* Names, creates and maps every file (header written, data zero). */
fs_status_t fs_amend_create(fs_amend_t *a);
/* Where file f's rows go (after its header). */
static inline char *fs_amend_data(const fs_amend_file_t *f) { return f->map + FS_NPY_WRITE_HEADER_LEN; }
/* Flushes a filled file to disk, records its checksum and unmaps it. */
fs_status_t fs_amend_finish(fs_amend_t *a, fs_amend_file_t *f);

/* Whether the stop was requested; if so, the error saying nothing changed. */
int fs_amend_stop_requested(const fs_amend_t *a);
fs_status_t fs_amend_stopped(fs_amend_t *a);

/* Commits: edit(ctx, m, gone) edits the manifest m (adding each file's
 * table where it belongs) and appends to the array `gone` the file names
 * it no longer names; the files then get their "files" entries. */
fs_status_t fs_amend_commit(fs_amend_t *a, void (*edit)(void *ctx, json_t *m, json_t *gone), void *ctx);

void fs_amend_close(fs_amend_t *a);

/* The manifest's "features" object (version 2: the one node type's) and
 * "files" object, made when missing. */
json_t *fs_amend_features(json_t *m);
json_t *fs_amend_files(json_t *m);

#endif
