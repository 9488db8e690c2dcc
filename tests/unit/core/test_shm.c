/* test_shm.c — shared memory for serving (kernels/fs_shm.h): a reserved
 * memfd mapping is sized, zeroed, writable and, once sealed, reads back
 * what was written; growth that the memfd refuses is an error naming the
 * caller's `what`; the huge-page count agrees with the host's setting (0
 * under "never", never more than the mapping) and is -1 for an address
 * that starts no mapping; a served dataset copy reports its huge pages,
 * and a directly mapped dataset reports none; FS_COPY_AUTO puts the copy
 * in files exactly where files get 2 MiB pages and a memfd does not. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset.h"
#include "fs_shm.h"
#include "gen.h"
#include "test_util.h"

static int is_never(void)
{
    char s[32];
    return strcmp(fs_shm_huge_setting(s, sizeof s), "never") == 0 || strcmp(s, "deny") == 0;
}

Test(shm, reserved_mapping_is_sized_zeroed_and_sealable)
{
    size_t len = (size_t)8 << 20; /* room for whole 2 MiB pages */
    int fd = memfd_create("test-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    cr_assert_geq(fd, 0);
    void *p;
    fs_error_t err = {0};
    cr_assert_eq(fs_shm_map_reserved(fd, len, "test", &p, &err), FS_OK, "%s", err.msg);
    struct stat st;
    cr_assert_eq(fstat(fd, &st), 0);
    cr_assert_eq((size_t)st.st_size, len);
    cr_assert_geq(st.st_blocks * 512, (long long)len, "every page allocated up front: %lld of %zu bytes",
                  (long long)st.st_blocks * 512, len);
    unsigned char *b = p;
    for (size_t i = 0; i < len; i += 4096) cr_assert_eq(b[i], 0);
    long long huge = fs_shm_huge_bytes(p);
    cr_assert_geq(huge, 0, "its own mapping is found in /proc/self/smaps");
    cr_assert_leq(huge, (long long)len);
    if (is_never()) cr_assert_eq(huge, 0, "the host says never, yet %lld bytes are huge", huge);
    if (!fs_shm_huge_possible()) /* what lets a copy skip smaps */
        cr_assert_eq(huge, 0, "huge pages were said impossible, yet %lld bytes are huge", huge);
    cr_assert_eq(fs_shm_huge_bytes(b + 4096), -1, "an address inside a mapping starts none");
    for (size_t i = 0; i < len; i++) b[i] = (unsigned char)(i * 7 + 3);
    cr_assert_eq(munmap(p, len), 0);
    cr_assert_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE), 0,
                 "no writable mapping is left behind");
    const unsigned char *r = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    cr_assert_neq(r, MAP_FAILED);
    for (size_t i = 0; i < len; i += 4093) cr_assert_eq(r[i], (unsigned char)(i * 7 + 3), "byte %zu", i);
    munmap((void *)r, len);
    close(fd);
}

Test(shm, growth_refused_is_an_error_naming_the_caller)
{
    int fd = memfd_create("test-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    cr_assert_geq(fd, 0);
    cr_assert_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_GROW), 0);
    void *p = (void *)1;
    fs_error_t err = {0};
    cr_assert_eq(fs_shm_map_reserved(fd, 1 << 20, "tier 3 memory", &p, &err), FS_ERR_NOMEM);
    cr_assert_null(p);
    cr_assert(strstr(err.msg, "tier 3 memory") && strstr(err.msg, "1048576"), "%s", err.msg);
    close(fd);
}

Test(shm, setting_is_one_of_the_kernels_words)
{
    static const char *known[] = {"always", "within_size", "advise", "never", "deny", "force", "inherit", "unknown"};
    char s[32];
    fs_shm_huge_setting(s, sizeof s);
    int found = 0;
    for (size_t i = 0; i < sizeof known / sizeof *known; i++) found |= strcmp(s, known[i]) == 0;
    cr_assert(found, "'%s'", s);
}

/* A served copy of a dataset with a 4 MiB feature table (whole huge
 * pages), in `medium`; copies of unnamed files go to dir/copies. */
static fs_dataset_t *served(const char *dir, fs_copy_medium_t medium)
{
    fs_rmat_opts_t g;
    fs_rmat_defaults(&g);
    g.scale = 13, g.edge_factor = 8, g.dim = 128;
    fs_dataset_t *plain = tu_gen_rmat(dir, "rmat", &g), *copy;
    cr_assert_eq(fs_dataset_huge_bytes(plain), 0, "files mapped in place are not copies");
    fs_dataset_close(plain);
    fs_error_t err = {0};
    char *path = tu_path(dir, "rmat"), *copies = tu_path(dir, "copies");
    cr_assert_eq(mkdir(copies, 0700), 0);
    fs_copy_opts_t o = {.medium = medium, .dir = copies};
    cr_assert_eq(fs_dataset_open_served(path, &o, 0, 1, &copy, &err), FS_OK, "%s", err.msg);
    free(path), free(copies);
    long long huge = fs_dataset_huge_bytes(copy);
    cr_assert_geq(huge, 0);
    cr_assert_leq(huge, (long long)fs_dataset_bytes(copy));
    return copy;
}

Test(shm, memory_copies_report_their_huge_pages)
{
    char *dir = tu_mkdtemp();
    fs_dataset_t *copy = served(dir, FS_COPY_MEMFD);
    const char *in;
    cr_assert_eq(fs_dataset_file_copy_bytes(copy, &in), 0);
    cr_assert_null(in);
    if (is_never()) cr_assert_eq(fs_dataset_huge_bytes(copy), 0);
    fs_dataset_close(copy);
    tu_rm_rf(dir);
    free(dir);
}

/* The oracle for FS_COPY_AUTO, written apart from served_copy.c: does a
 * named file in `dir`, written in 2 MiB writes, map in 2 MiB pages? */
static int file_pages_are_huge(const char *dir)
{
    size_t len = (size_t)4 << 20;
    char *path = tu_path(dir, "oracle");
    int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    char *chunk = calloc(1, len / 2);
    cr_assert_eq(write(fd, chunk, len / 2), (ssize_t)(len / 2));
    cr_assert_eq(write(fd, chunk, len / 2), (ssize_t)(len / 2));
    char *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    cr_assert_neq(p, MAP_FAILED);
    madvise(p, len, MADV_HUGEPAGE);
    volatile char sink = 0;
    for (size_t off = 0; off < len; off += 4096) sink ^= p[off];
    (void)sink;
    int huge = fs_shm_huge_bytes(p) > 0;
    munmap(p, len), close(fd), unlink(path);
    free(chunk), free(path);
    return huge;
}

Test(shm, automatic_copies_are_files_exactly_where_files_get_huge_pages)
{
    char *dir = tu_mkdtemp(), *copies = tu_path(dir, "copies");
    fs_dataset_t *copy = served(dir, FS_COPY_AUTO);
    const char *in;
    size_t in_files = fs_dataset_file_copy_bytes(copy, &in);
    long long huge = fs_dataset_huge_bytes(copy);
    if (!is_never()) {
        cr_assert_eq(in_files, 0, "a memfd gets 2 MiB pages here: no file is needed");
    } else if (file_pages_are_huge(copies)) {
        cr_assert_eq(in_files, fs_dataset_bytes(copy), "files in %s get 2 MiB pages: the copy is there", copies);
        cr_assert_str_eq(in, copies);
        cr_assert_geq(huge, (long long)4 << 20, "the feature table at least is in 2 MiB pages");
    } else {
        cr_assert_eq(in_files, 0, "files in %s get no 2 MiB pages: the copy is a memfd", copies);
        cr_assert_eq(huge, 0);
    }
    fs_dataset_close(copy);
    tu_rm_rf(dir);
    free(dir), free(copies);
}
