/* fuzz_rowsums.c — libFuzzer harness for the per-row checksum file
 * (disk/fs_rowsums.c), which a server reads from beside the dataset on
 * every start.
 *
 * The fixture is a table of 64 rows of 24 B after a 4096-byte header,
 * written once. Byte 0 % 2 picks: 0, the rest is the whole checksum file;
 * 1, the rest follows the header of a valid checksum file of the fixture
 * (the loader's own, made by a first load), so the body's parsing is
 * reached. Beyond "no crash": a refusal has a status and a message; sums
 * built anew are the fixture's true row checksums; sums reused come only
 * from a body of exactly 64 sums and a matching trailer, and are that
 * body's. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "fs_rowsums.h"
#include "fuzz_common.h"

enum { OFFSET = 4096, ROW = 24, ROWS = 64 };

static char table_path[256], sums_path[256];
static int table_fd = -1;
static uint64_t truth[ROWS];
static uint8_t valid_header[FS_ROWSUMS_HEADER];

static const fs_rowsums_spec_t spec = {.dataset = "fuzz", .table = "feat", .data_offset = OFFSET, .row_bytes = ROW,
                                       .rows = ROWS};

static void write_file(const char *path, const void *a, size_t na, const void *b, size_t nb)
{
    FILE *f = fopen(path, "wb");
    FUZZ_CHECK(f && fwrite(a, 1, na, f) == na && (nb == 0 || fwrite(b, 1, nb, f) == nb) && fclose(f) == 0,
               "writing %s", path);
}

static char dir[] = "/tmp/fuzz-rowsums-XXXXXX";

static void remove_fixture(void)
{
    unlink(table_path), unlink(sums_path), rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    FUZZ_CHECK(mkdtemp(dir), "mkdtemp");
    atexit(remove_fixture);
    snprintf(table_path, sizeof table_path, "%s/table_feat.npy", dir);
    snprintf(sums_path, sizeof sums_path, "%s/table_feat.rowsums", dir);
    static uint8_t table[OFFSET + ROW * ROWS];
    for (size_t k = 0; k < sizeof table; k++) table[k] = (uint8_t)(k * 131 + 7);
    write_file(table_path, table, sizeof table, NULL, 0);
    for (int r = 0; r < ROWS; r++) truth[r] = fs_rowsums_of(table + OFFSET + r * ROW, ROW);
    table_fd = open(table_path, O_RDONLY | O_CLOEXEC);
    fs_rowsums_t *rs;
    fs_rowsums_origin_t origin;
    fs_error_t err = {0};
    FUZZ_CHECK(fs_rowsums_load(table_fd, "fixture", sums_path, &spec, &rs, &origin, NULL, 0, &err) == FS_OK &&
               origin == FS_ROWSUMS_BUILT, "the fixture's checksums: %s", err.msg);
    fs_rowsums_close(rs);
    FILE *f = fopen(sums_path, "rb");
    FUZZ_CHECK(f && fread(valid_header, 1, sizeof valid_header, f) == sizeof valid_header, "reading them back");
    fclose(f);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_bytes_t in = {data, size};
    int mode = fuzz_take_u8(&in) % 2;
    if (mode == 0) write_file(sums_path, in.p, in.n, NULL, 0);
    else write_file(sums_path, valid_header, sizeof valid_header, in.p, in.n);
    fs_rowsums_t *rs = NULL;
    fs_rowsums_origin_t origin;
    fs_error_t err = {0};
    char why[256];
    fs_status_t st = fs_rowsums_load(table_fd, "fixture", sums_path, &spec, &rs, &origin, why, sizeof why, &err);
    if (st != FS_OK) {
        FUZZ_CHECK_REFUSAL(st, err);
        return 0;
    }
    FUZZ_CHECK(fs_rowsums_rows(rs) == ROWS, "%lld rows", (long long)fs_rowsums_rows(rs));
    if (origin == FS_ROWSUMS_REUSED) {
        FUZZ_CHECK(mode == 1 && in.n == ROWS * 8 + 8, "reused from a %s of %zu bytes", mode ? "body" : "file", in.n);
        for (int r = 0; r < ROWS; r++) {
            uint64_t v;
            memcpy(&v, in.p + 8 * r, 8);
            FUZZ_CHECK(fs_rowsums_get(rs, r) == v, "row %d: not the body's sum", r);
        }
    } else {
        FUZZ_CHECK(why[0] != '\0', "built without a reason");
        for (int r = 0; r < ROWS; r++) FUZZ_CHECK(fs_rowsums_get(rs, r) == truth[r], "row %d: wrong sum built", r);
    }
    fs_rowsums_close(rs);
    return 0;
}
