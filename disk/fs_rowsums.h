/* fs_rowsums.h — a table's per-row checksums, kept beside the dataset, so
 * that rows read from disk are verified one by one without copying or
 * hashing the whole table on every start (docs/design.md "The disk tier").
 *
 * The first start builds them in one streaming pass over the table file,
 * which also computes the file's whole xxh3 and checks it against the
 * manifest's: that start verifies the file as the served copy would. The
 * checksums are then saved beside the file (written to a temporary name,
 * fsync'ed, renamed), 8 bytes a row plus a header naming the dataset, the
 * table, its shape and the file's identity (device, inode, size,
 * modification time). A later start reads them back (8 bytes a row, not
 * the row's bytes) when that identity still holds; when it does not (the
 * file was replaced or touched) they are built again, and the reason is
 * told. A checksum file of another table or dataset is an error naming
 * both, never used, never overwritten.
 *
 * The file:  header (FS_ROWSUMS_HEADER bytes: magic "FSROWSUM", version,
 *            shape, identity, names, the file's xxh3, the header's own
 *            xxh3), then rows x uint64 xxh3 of each row (little-endian),
 *            then a uint64 xxh3 of those sums.
 *
 * Ownership: the handle owns the sums in memory. Thread-safety: immutable
 * once loaded; any number of threads may check rows. */
#ifndef FS_ROWSUMS_H
#define FS_ROWSUMS_H

#include <stdint.h>

#include "fs_types.h"

#define FS_ROWSUMS_HEADER 512

typedef struct fs_rowsums fs_rowsums_t;

/* What the checksums are of. */
typedef struct {
    const char *dataset;   /* the dataset's name */
    const char *table;     /* the table's name */
    uint64_t data_offset;  /* where row 0 starts in the file */
    uint64_t row_bytes;
    int64_t rows;
    int have_file_xxh3;    /* nonzero: file_xxh3 is the manifest's checksum of the whole file */
    uint64_t file_xxh3;
} fs_rowsums_spec_t;

typedef enum {
    FS_ROWSUMS_REUSED = 0, /* read back from the checksum file */
    FS_ROWSUMS_BUILT,      /* built by a pass over the table file and saved */
    FS_ROWSUMS_BUILT_KEPT, /* built, but could not be saved (why says so): in memory only */
} fs_rowsums_origin_t;

/* The checksums of the table file open at fd (read with pread, never
 * mapped; `what` names it in messages), from the checksum file at
 * sums_path or built anew (see the top). *origin says which, and `why`
 * (why_len bytes, may be NULL) says why they were built or not saved.
 * Errors: the file's whole checksum differs from the manifest's
 * (FS_ERR_FORMAT naming both), a checksum file of another dataset or table
 * (FS_ERR_FORMAT naming both), the table file shorter than its rows or
 * unreadable (FS_ERR_FORMAT / FS_ERR_IO), FS_ERR_NOMEM. */
fs_status_t fs_rowsums_load(int fd, const char *what, const char *sums_path, const fs_rowsums_spec_t *spec,
                            fs_rowsums_t **out, fs_rowsums_origin_t *origin, char *why, size_t why_len,
                            fs_error_t *err);
void fs_rowsums_close(fs_rowsums_t *rs);

/* Checksums someone else loaded, borrowed (a trainer maps the server's):
 * sums[0..rows), which must outlive the handle. */
fs_status_t fs_rowsums_wrap(const uint64_t *sums, int64_t rows, uint64_t row_bytes, fs_rowsums_t **out,
                            fs_error_t *err);
/* The sums themselves, rows of them (to share them). */
const uint64_t *fs_rowsums_data(const fs_rowsums_t *rs);

int64_t fs_rowsums_rows(const fs_rowsums_t *rs);
/* Row r's checksum (r in range). */
uint64_t fs_rowsums_get(const fs_rowsums_t *rs, int64_t r);
/* 1 when bytes (row_bytes of them) are row r as checksummed, else 0. */
int fs_rowsums_check(const fs_rowsums_t *rs, int64_t r, const void *bytes);
/* The checksum of one row's bytes, as stored. */
uint64_t fs_rowsums_of(const void *bytes, uint64_t row_bytes);

#endif
