/* writer.h — builds a native dataset directory atomically.
 *
 * Everything is written into "<out>.tmp-<pid>" beside the destination; the
 * commit closes every array, checksums each file (xxh3), writes the manifest
 * and fsyncs, then renames the directory into place. A crash or an error at
 * any point leaves no half-written dataset under the destination name.
 *
 * Arrays are files mapped read-write: callers fill them in place, so a
 * multi-gigabyte table costs page cache, not heap. Their disk blocks are
 * reserved (posix_fallocate) before they are mapped, so a full disk or a
 * file-size limit is an FS_ERR_IO naming the file and the bytes it needed,
 * never a SIGBUS while filling; fs_writer_create ignores SIGXFSZ (when the
 * program has left it at its default) for the same reason.
 *
 * Ownership: the writer owns every mapping it hands out; pointers stay valid
 * until the array is resized (which returns the new pointer) or until commit
 * or abort. Thread-safety: one thread drives a writer; array contents may be
 * filled from many threads. */
#ifndef FS_WRITER_H
#define FS_WRITER_H

#include "fs_types.h"

typedef enum {
    FS_ROLE_INDPTR,
    FS_ROLE_INDICES,
    FS_ROLE_EDGE_WEIGHTS,
    FS_ROLE_FEATURES,   /* named */
    FS_ROLE_LABELS,
    FS_ROLE_SPLIT,      /* named */
    FS_ROLE_NODE_IDS,
    FS_ROLE_FILE,       /* version 2: `name` is the file's name (*.npy); the caller's
                           fs_writer_set_typed description says what it holds */
} fs_role_t;

typedef struct fs_writer fs_writer_t;

/* Starts a dataset at out_dir. FS_ERR_EXISTS if it exists and !force. */
fs_status_t fs_writer_create(const char *out_dir, int force, fs_writer_t **out, fs_error_t *err);

/* The scratch directory (for spill files that are not part of the dataset). */
const char *fs_writer_tmpdir(const fs_writer_t *w);

/* Creates the role's file with the given shape (ndim 1 or 2), zero-filled and
 * mapped; *data receives the array. `name` is required for FEATURES and
 * SPLIT and ignored otherwise. A role (or role+name) may be created once. */
fs_status_t fs_writer_array(fs_writer_t *w, fs_role_t role, const char *name, fs_dtype_t dt, int ndim,
                            const int64_t *shape, void **data, fs_error_t *err);

/* Changes the first dimension of the array whose data is *data (grow or
 * shrink, keeping the contents) and updates *data. */
fs_status_t fs_writer_resize(fs_writer_t *w, void **data, int64_t rows, fs_error_t *err);

/* Scalar metadata for the manifest. `source` is a JSON object text recording
 * how the dataset was made (importer, input, options), or NULL. */
void fs_writer_set_meta(fs_writer_t *w, const char *name, int64_t num_nodes, int64_t num_edges,
                        int symmetric, int64_t num_classes);
fs_status_t fs_writer_set_source(fs_writer_t *w, const char *source_json, fs_error_t *err);

/* Makes the dataset version 2 (dataset.h): graph_json is a JSON object with
 * "node_types", "edge_types" and optionally "link_splits" as the manifest
 * holds them, naming FS_ROLE_FILE arrays; the version-1 sections and
 * fs_writer_set_meta's counts are then not written (its name is). The
 * reader checks the result when it opens it. */
fs_status_t fs_writer_set_typed(fs_writer_t *w, const char *graph_json, fs_error_t *err);

/* Finishes and renames into place; frees w whatever the outcome (on failure
 * the temporary directory is removed). */
fs_status_t fs_writer_commit(fs_writer_t *w, fs_error_t *err);

/* Discards everything written; frees w. NULL is a no-op. */
void fs_writer_abort(fs_writer_t *w);

/* Removes a directory tree (files, then their directories), as the
 * writer removes its temporary directory; links are not followed. */
void fs_rm_tree(const char *path);

#endif
