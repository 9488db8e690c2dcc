/* test_rowsums.c — per-row checksums (disk/fs_rowsums.h): built once in a
 * pass that also checks the file's whole checksum, reused while the file's
 * identity holds and rebuilt when it does not, each reason told; a checksum
 * file of another table refused and left alone; a damaged one rebuilt; rows
 * checked one by one against an independent xxh3 of their bytes. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "fs_rowsums.h"
#include "test_util.h"

TU_SCRATCH_DIR
TestSuite(rowsums, .init = setup, .fini = teardown);

enum { OFFSET = 4096, ROW = 96, ROWS = 100000 };

static char table_path[4200], sums_path[4200];
static uint64_t file_xxh3;

/* A table file of ROWS rows of ROW bytes after a header of OFFSET bytes. */
static int make_table(void)
{
    snprintf(table_path, sizeof table_path, "%s/table_feat.npy", dir);
    snprintf(sums_path, sizeof sums_path, "%s/table_feat.rowsums", dir);
    size_t len = OFFSET + (size_t)ROW * ROWS;
    unsigned char *b = malloc(len);
    for (size_t k = 0; k < len; k++) b[k] = (unsigned char)((k * 2654435761u) >> 11);
    tu_write(table_path, b, len);
    file_xxh3 = XXH3_64bits(b, len);
    free(b);
    int fd = open(table_path, O_RDONLY | O_CLOEXEC);
    cr_assert_geq(fd, 0);
    return fd;
}

static fs_rowsums_spec_t spec_of(const char *table)
{
    return (fs_rowsums_spec_t){.dataset = "g", .table = table, .data_offset = OFFSET, .row_bytes = ROW, .rows = ROWS,
                               .have_file_xxh3 = 1, .file_xxh3 = file_xxh3};
}

static fs_rowsums_t *load(int fd, fs_rowsums_spec_t spec, fs_rowsums_origin_t want, char *why)
{
    fs_rowsums_t *rs;
    fs_rowsums_origin_t origin;
    fs_error_t err = {0};
    cr_assert_eq(fs_rowsums_load(fd, "table_feat.npy", sums_path, &spec, &rs, &origin, why, 256, &err), FS_OK, "%s",
                 err.msg);
    cr_assert_eq(origin, want, "origin %d, why: %s", origin, why);
    return rs;
}

/* Every row's checksum is the xxh3 of its bytes, as read here. */
static void check_all(const fs_rowsums_t *rs, int fd)
{
    char row[ROW];
    cr_assert_eq(fs_rowsums_rows(rs), ROWS);
    for (int64_t r = 0; r < ROWS; r += 7) {
        cr_assert_eq(pread(fd, row, ROW, OFFSET + r * ROW), ROW);
        cr_assert_eq(fs_rowsums_get(rs, r), XXH3_64bits(row, ROW), "row %lld", (long long)r);
        cr_assert(fs_rowsums_check(rs, r, row));
        row[r % ROW] ^= 1;
        cr_assert(!fs_rowsums_check(rs, r, row), "a flipped bit of row %lld passes", (long long)r);
    }
}

Test(rowsums, built_once_then_reused_then_rebuilt_when_the_file_changes)
{
    int fd = make_table();
    char why[256];
    fs_rowsums_t *rs = load(fd, spec_of("feat"), FS_ROWSUMS_BUILT, why);
    cr_assert(strstr(why, "no checksum file yet"), "%s", why);
    check_all(rs, fd);
    fs_rowsums_close(rs);
    struct stat st;
    cr_assert_eq(stat(sums_path, &st), 0);
    cr_assert_eq(st.st_size, FS_ROWSUMS_HEADER + 8 * ROWS + 8);

    rs = load(fd, spec_of("feat"), FS_ROWSUMS_REUSED, why);
    check_all(rs, fd);
    fs_rowsums_close(rs);

    /* A row rewritten in place with its time put back: the identity holds,
     * so the sums are reused without hashing the table, and the row fails
     * its check when read. */
    cr_assert_eq(stat(table_path, &st), 0);
    int w = open(table_path, O_WRONLY);
    char junk[ROW];
    memset(junk, 0x5a, sizeof junk);
    cr_assert_eq(pwrite(w, junk, ROW, OFFSET + 5 * ROW), ROW);
    close(w);
    struct timespec t[2] = {st.st_atim, st.st_mtim};
    cr_assert_eq(utimensat(AT_FDCWD, table_path, t, 0), 0);
    rs = load(fd, spec_of("feat"), FS_ROWSUMS_REUSED, why);
    cr_assert(!fs_rowsums_check(rs, 5, junk), "the rewritten row is caught when read");
    fs_rowsums_close(rs);

    /* Touched: built again, and the pass checks the whole file against the
     * manifest, which the rewrite no longer matches. */
    cr_assert_eq(utimensat(AT_FDCWD, table_path, NULL, 0), 0);
    fs_rowsums_t *none;
    fs_rowsums_origin_t origin;
    fs_error_t err = {0};
    fs_rowsums_spec_t spec = spec_of("feat");
    cr_assert_eq(fs_rowsums_load(fd, "table_feat.npy", sums_path, &spec, &none, &origin, why, sizeof why, &err),
                 FS_ERR_FORMAT);
    cr_assert(strstr(err.msg, "table_feat.npy: checksum mismatch (manifest "), "%s", err.msg);
    spec.have_file_xxh3 = 0; /* a manifest without checksums: the rows as they are now */
    cr_assert_eq(fs_rowsums_load(fd, "table_feat.npy", sums_path, &spec, &rs, &origin, why, sizeof why, &err), FS_OK,
                 "%s", err.msg);
    cr_assert_eq(origin, FS_ROWSUMS_BUILT);
    cr_assert(strstr(why, "the table file changed since"), "%s", why);
    cr_assert(fs_rowsums_check(rs, 5, junk));
    fs_rowsums_close(rs);
    close(fd);
}

Test(rowsums, a_checksum_file_of_another_table_is_refused_and_left_alone)
{
    int fd = make_table();
    char why[256];
    fs_rowsums_close(load(fd, spec_of("feat"), FS_ROWSUMS_BUILT, why));
    size_t before_len;
    char *before = tu_read(sums_path, &before_len);
    fs_rowsums_spec_t other = spec_of("other");
    fs_rowsums_t *rs;
    fs_rowsums_origin_t origin;
    fs_error_t err = {0};
    cr_assert_eq(fs_rowsums_load(fd, "table_other.npy", sums_path, &other, &rs, &origin, why, sizeof why, &err),
                 FS_ERR_FORMAT);
    cr_assert(strstr(err.msg, "is of dataset 'g' table 'feat' (100000 rows of 96 B at offset 4096), not of dataset "
                              "'g' table 'other'"),
              "%s", err.msg);
    other = spec_of("feat");
    other.row_bytes = 48, other.rows = 2 * ROWS; /* the same bytes seen as other rows */
    cr_assert_eq(fs_rowsums_load(fd, "table_feat.npy", sums_path, &other, &rs, &origin, why, sizeof why, &err),
                 FS_ERR_FORMAT);
    size_t after_len;
    char *after = tu_read(sums_path, &after_len);
    cr_assert(before_len == after_len && memcmp(before, after, before_len) == 0, "the file was not touched");
    free(before), free(after);
    close(fd);
}

Test(rowsums, a_damaged_checksum_file_is_rebuilt)
{
    int fd = make_table();
    char why[256];
    fs_rowsums_close(load(fd, spec_of("feat"), FS_ROWSUMS_BUILT, why));
    size_t len;
    char *b = tu_read(sums_path, &len);
    b[FS_ROWSUMS_HEADER + 8 * 77] ^= 0x10; /* one sum */
    tu_write(sums_path, b, len);
    fs_rowsums_t *rs = load(fd, spec_of("feat"), FS_ROWSUMS_BUILT, why);
    cr_assert(strstr(why, "damaged"), "%s", why);
    check_all(rs, fd);
    fs_rowsums_close(rs);
    b[100] ^= 0x10; /* the header */
    tu_write(sums_path, b, len);
    rs = load(fd, spec_of("feat"), FS_ROWSUMS_BUILT, why);
    cr_assert(strstr(why, "not one this version wrote, or is damaged"), "%s", why);
    fs_rowsums_close(rs);
    tu_write(sums_path, "x", 1); /* too short for a header */
    fs_rowsums_close(load(fd, spec_of("feat"), FS_ROWSUMS_BUILT, why));
    fs_rowsums_close(load(fd, spec_of("feat"), FS_ROWSUMS_REUSED, why));
    free(b);
    close(fd);
}

Test(rowsums, sums_that_cannot_be_saved_are_kept_in_memory_and_said_so)
{
    int fd = make_table();
    snprintf(sums_path, sizeof sums_path, "%s/no/such/dir/table_feat.rowsums", dir);
    char why[256];
    fs_rowsums_t *rs = load(fd, spec_of("feat"), FS_ROWSUMS_BUILT_KEPT, why);
    cr_assert(strstr(why, "not saved to") && strstr(why, "No such file or directory"), "%s", why);
    check_all(rs, fd);
    fs_rowsums_close(rs);
    close(fd);
}

Test(rowsums, a_table_shorter_than_its_rows_is_an_error)
{
    int fd = make_table();
    fs_rowsums_spec_t spec = spec_of("feat");
    spec.rows = ROWS + 1;
    fs_rowsums_t *rs;
    fs_rowsums_origin_t origin;
    fs_error_t err = {0};
    cr_assert_eq(fs_rowsums_load(fd, "table_feat.npy", sums_path, &spec, &rs, &origin, NULL, 0, &err), FS_ERR_FORMAT);
    cr_assert(strstr(err.msg, "table_feat.npy is 9604096 bytes, but its 100001 rows need 9604192"), "%s", err.msg);
    spec.rows = ROWS, spec.row_bytes = 0;
    cr_assert_eq(fs_rowsums_load(fd, "table_feat.npy", sums_path, &spec, &rs, &origin, NULL, 0, &err),
                 FS_ERR_INVALID_ARGUMENT);
    close(fd);
}
