/* test_files.c — dataset files that cannot kill anyone (issue 14, item 1).
 *
 * - writer: a file-size limit (RLIMIT_FSIZE) and a full disk (a 1 MB tmpfs
 *   in a private mount namespace, when the test may mount one) are errors
 *   naming the file and the bytes it needed, never SIGXFSZ or SIGBUS;
 * - sealed: FS_OPEN_COPY serves copies nobody can shrink or write — sealed
 *   memfds, or unnamed read-only files (mode 0400, no link, read-only
 *   descriptors only) — so the original can be truncated without effect; a
 *   full copy directory is an error naming it; the copy verifies checksums
 *   while copying, and fs_dataset_file_check reports each change to a
 *   file's name once;
 * - serve: `featstore serve` with five trainers (four unix://, one grpc://)
 *   sampling, gathering and reading a split while one feature file is
 *   truncated, one replaced by rename, one deleted, the split replaced and
 *   the topology written in place: nobody dies, every batch stays exactly
 *   the dataset as it was validated, and the server logs and counts each
 *   change by file name. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dataset.h"
#include "featstore/client.h"
#include "fs_npy.h"
#include "test_util.h"
#include "writer.h"

/* ---- a dataset whose every byte is a formula ------------------------------------- */

#define N 8192                 /* nodes */
#define DIM 16
#define NUM_TABLES 3
static const char *const table_names[NUM_TABLES] = {"a", "b", "c"};

static int64_t degree(int64_t v) { return v % 6; }

/* Neighbour k of v. */
static int64_t neighbour(int64_t v, int64_t k) { return (v + 7 * k + 1) % N; }

static int is_edge(int64_t u, int64_t w)
{
    int64_t d = ((w - u - 1) % N + N) % N;
    return d % 7 == 0 && d / 7 < degree(u);
}

/* Exact in float32: < 2^24. */
static float value(int t, int64_t v, int64_t j) { return (float)((t + 1) * (1 << 21) + v * DIM + j); }

/* The dataset; with a table "big" of BIG_DIM columns too when `big`: a
 * file of many copy pieces that ends mid-page. */
#define BIG_DIM 641
static void make_dataset_with(const char *dir, int big)
{
    fs_writer_t *w;
    fs_error_t err = {0};
    cr_assert_eq(fs_writer_create(dir, 0, &w, &err), FS_OK, "%s", err.msg);
    int64_t *ip, e = 0, shape[2] = {N + 1, DIM};
    cr_assert_eq(fs_writer_array(w, FS_ROLE_INDPTR, NULL, FS_DTYPE_I64, 1, shape, (void **)&ip, &err), FS_OK);
    for (int64_t v = 0; v < N; v++) ip[v] = e, e += degree(v);
    ip[N] = e;
    int32_t *ix;
    shape[0] = e;
    cr_assert_eq(fs_writer_array(w, FS_ROLE_INDICES, NULL, FS_DTYPE_I32, 1, shape, (void **)&ix, &err), FS_OK);
    for (int64_t v = 0; v < N; v++)
        for (int64_t k = 0; k < degree(v); k++) ix[ip[v] + k] = (int32_t)neighbour(v, k);
    shape[0] = N;
    for (int t = 0; t < NUM_TABLES; t++) {
        float *x;
        cr_assert_eq(fs_writer_array(w, FS_ROLE_FEATURES, table_names[t], FS_DTYPE_F32, 2, shape, (void **)&x, &err),
                     FS_OK, "%s", err.msg);
        for (int64_t v = 0; v < N; v++)
            for (int64_t j = 0; j < DIM; j++) x[v * DIM + j] = value(t, v, j);
    }
    int64_t big_shape[2] = {N, BIG_DIM};
    float *x;
    if (big) cr_assert_eq(fs_writer_array(w, FS_ROLE_FEATURES, "big", FS_DTYPE_F32, 2, big_shape, (void **)&x, &err),
                          FS_OK, "%s", err.msg);
    for (int64_t i = 0; big && i < (int64_t)N * BIG_DIM; i++) x[i] = value(NUM_TABLES, i / BIG_DIM, i % BIG_DIM);
    int64_t *train;
    shape[0] = N / 2;
    cr_assert_eq(fs_writer_array(w, FS_ROLE_SPLIT, "train", FS_DTYPE_I64, 1, shape, (void **)&train, &err), FS_OK);
    for (int64_t i = 0; i < N / 2; i++) train[i] = 2 * i;
    fs_writer_set_meta(w, "files", N, e, 0, 0);
    cr_assert_eq(fs_writer_commit(w, &err), FS_OK, "%s", err.msg);
}

static void make_dataset(const char *dir) { make_dataset_with(dir, 0); }

/* ---- writer: full disk and file-size limits ---------------------------------------- */

#define BIG_ROWS (1 << 16) /* x 16 float32 = 4 MiB */

/* In a child: creates a 4 MiB table under dir and fills it. Exits 0 when
 * the writer refused with a message naming the file and the size (written
 * to msg_fd), 1 when it accepted (and the fill survived), 2 otherwise. */
static void child_write_big(const char *dir, int msg_fd)
{
    fs_writer_t *w;
    fs_error_t err = {0};
    char *out = tu_path(dir, "big");
    if (fs_writer_create(out, 0, &w, &err) != FS_OK) {
        dprintf(msg_fd, "create: %s", err.msg);
        _exit(2);
    }
    int64_t shape[2] = {BIG_ROWS, DIM};
    float *x;
    fs_status_t st = fs_writer_array(w, FS_ROLE_FEATURES, "big", FS_DTYPE_F32, 2, shape, (void **)&x, &err);
    dprintf(msg_fd, "%s", err.msg);
    if (st == FS_OK) {
        memset(x, 1, (size_t)BIG_ROWS * DIM * sizeof *x); /* a SIGBUS here, without the reservation */
        fs_writer_abort(w);
        _exit(1);
    }
    fs_writer_abort(w);
    _exit(st == FS_ERR_IO ? 0 : 2);
}

/* Runs fn in a forked child; returns its wait status and what it wrote. */
static int in_child(void (*fn)(const char *, int), const char *dir, char *msg, size_t len)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        fn(dir, p[1]);
        _exit(3);
    }
    close(p[1]);
    ssize_t n, got = 0;
    while ((n = read(p[0], msg + got, len - 1 - (size_t)got)) > 0) got += n;
    msg[got] = '\0';
    close(p[0]);
    int st;
    waitpid(pid, &st, 0);
    return st;
}

static void limited_write(const char *dir, int msg_fd)
{
    signal(SIGXFSZ, SIG_DFL); /* as a program that never thought of it: the writer must cope */
    struct rlimit r = {.rlim_cur = 1 << 20, .rlim_max = 1 << 20};
    if (setrlimit(RLIMIT_FSIZE, &r) != 0) _exit(4);
    child_write_big(dir, msg_fd);
}

Test(writer, file_size_limit_is_an_error_naming_the_file_not_a_signal)
{
    char *dir = tu_mkdtemp(), msg[1024];
    int st = in_child(limited_write, dir, msg, sizeof msg);
    cr_assert(WIFEXITED(st), "the writer was killed by signal %d (%s): %s", WTERMSIG(st), strsignal(WTERMSIG(st)), msg);
    cr_assert_eq(WEXITSTATUS(st), 0, "status %d: %s", WEXITSTATUS(st), msg);
    cr_assert_not_null(strstr(msg, "table_big.npy"), "%s", msg);
    cr_assert_not_null(strstr(msg, "4198400 bytes"), "names the size it needed: %s", msg); /* 4096-byte header + 4 MiB */
    cr_assert_not_null(strstr(msg, "RLIMIT_FSIZE"), "%s", msg);
    tu_rm_rf(dir);
    free(dir);
}

/* A real ENOSPC: a 1 MB tmpfs on `dir` in a mount namespace of the child's
 * own (it disappears with the child). Exit 77: not permitted here. */
static void mount_small_tmpfs(const char *dir, int msg_fd)
{
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("tmpfs", dir, "tmpfs", 0, "size=1m") != 0) {
        dprintf(msg_fd, "cannot mount a 1 MB tmpfs in a private mount namespace: %s", strerror(errno));
        _exit(77);
    }
}

static void full_disk_write(const char *dir, int msg_fd)
{
    mount_small_tmpfs(dir, msg_fd);
    child_write_big(dir, msg_fd);
}

Test(writer, full_disk_is_an_error_naming_the_file_not_sigbus)
{
    char *dir = tu_mkdtemp(), msg[1024];
    int st = in_child(full_disk_write, dir, msg, sizeof msg);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
        tu_rm_rf(dir);
        free(dir);
        cr_skip_test("needs root (CAP_SYS_ADMIN) for a private tmpfs: %s", msg);
    }
    cr_assert(WIFEXITED(st), "the writer was killed by signal %d (%s): %s", WTERMSIG(st), strsignal(WTERMSIG(st)), msg);
    cr_assert_eq(WEXITSTATUS(st), 0, "status %d: %s", WEXITSTATUS(st), msg);
    cr_assert_not_null(strstr(msg, "table_big.npy"), "%s", msg);
    cr_assert_not_null(strstr(msg, "4198400 bytes"), "%s", msg);
    cr_assert_not_null(strstr(msg, strerror(ENOSPC)), "%s", msg);
    tu_rm_rf(dir);
    free(dir);
}

/* ---- sealed copies and change detection -------------------------------------------- */

static char *dir, *data;

static void setup(void)
{
    dir = tu_mkdtemp();
    data = tu_path(dir, "d");
    make_dataset(data);
}

static void teardown(void)
{
    tu_rm_rf(dir);
    free(dir);
    free(data);
}

TestSuite(sealed, .init = setup, .fini = teardown, .timeout = 60);

static int file_index(const fs_dataset_t *ds, const char *name)
{
    for (int i = 0; i < fs_dataset_num_files(ds); i++)
        if (strcmp(fs_dataset_file_name(ds, i), name) == 0) return i;
    cr_assert_fail("%s is not a file of the dataset", name);
    return -1;
}

static fs_dataset_t *open_copy(fs_copy_medium_t medium, const char *copy_dir)
{
    fs_dataset_t *ds;
    fs_error_t err = {0};
    fs_copy_opts_t copy = {.medium = medium, .dir = copy_dir};
    cr_assert_eq(fs_dataset_open_served(data, &copy, 0, 2, &ds, &err), FS_OK, "%s", err.msg);
    cr_assert(ds->served_copy);
    cr_assert(ds->checksums_verified, "the copy verifies checksums without being asked");
    return ds;
}

/* The original truncated to nothing: with the file mapped, reading the
 * table is a SIGBUS; the copy still holds every row. */
static void expect_copy_outlives_truncation(const fs_dataset_t *ds)
{
    char *path = tu_path(data, "table_a.npy");
    cr_assert_eq(truncate(path, 0), 0);
    const float *x = fs_dataset_table(ds, "a")->data;
    for (int64_t v = 0; v < N; v++)
        for (int64_t j = 0; j < DIM; j++) cr_assert_eq(x[v * DIM + j], value(0, v, j));
    free(path);
}

static int table_fd(const fs_dataset_t *ds, const char *name)
{
    int fd;
    int64_t off;
    cr_assert_eq(fs_dataset_locate(ds, fs_dataset_table(ds, name)->data, &fd, &off), FS_OK);
    return fd;
}

Test(sealed, memory_copies_are_sealed_and_outlive_a_truncated_file)
{
    fs_dataset_t *ds = open_copy(FS_COPY_MEMFD, NULL);
    const char *in;
    cr_assert_eq(fs_dataset_file_copy_bytes(ds, &in), 0);
    int fd = table_fd(ds, "a");
    int seals = fcntl(fd, F_GET_SEALS);
    int want = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL;
    cr_assert(seals >= 0 && (seals & want) == want, "seals %#x (%s)", seals, seals < 0 ? strerror(errno) : "");
    cr_assert_neq(ftruncate(fd, 0), 0, "nobody may shrink a served copy");
    expect_copy_outlives_truncation(ds);
    fs_dataset_close(ds);
}

/* What another process given the descriptor could do with it. */
static void expect_read_only_and_unnamed(int fd, const char *copies)
{
    struct stat st;
    cr_assert_eq(fstat(fd, &st), 0);
    cr_assert(S_ISREG(st.st_mode));
    cr_assert_eq(st.st_mode & 07777, 0400, "mode %o", st.st_mode & 07777);
    cr_assert_eq(st.st_nlink, 0, "no name leads to it");
    cr_assert_eq(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY, "only read-only descriptors of it exist");
    cr_assert_neq(ftruncate(fd, 0), 0, "nobody may shrink a served copy");
    cr_assert_eq(pwrite(fd, "x", 1, 0), -1, "nor write it");
    char self[64], *name = tu_path(copies, "linked");
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    cr_assert_neq(linkat(AT_FDCWD, self, AT_FDCWD, name, AT_SYMLINK_FOLLOW), 0, "nor give it a name (O_EXCL)");
    if (geteuid() != 0) /* root may open anything for writing */
        cr_assert_eq(open(self, O_RDWR), -1, "nor reopen it for writing");
    free(name);
}

Test(sealed, file_copies_are_unnamed_read_only_and_outlive_a_truncated_file)
{
    char *copies = tu_path(dir, "copies");
    cr_assert_eq(mkdir(copies, 0700), 0);
    fs_dataset_t *ds = open_copy(FS_COPY_FILE, copies);
    const char *in;
    cr_assert_eq(fs_dataset_file_copy_bytes(ds, &in), fs_dataset_bytes(ds), "every file is copied to a file");
    cr_assert_str_eq(in, copies);
    for (int t = 0; t < NUM_TABLES; t++) expect_read_only_and_unnamed(table_fd(ds, table_names[t]), copies);
    cr_assert_eq(rmdir(copies), 0, "the copy directory holds no names: it can be removed while the copies serve");
    expect_copy_outlives_truncation(ds);
    fs_dataset_close(ds);
    free(copies);
}

/* A copy directory on a full file system: an error naming the file and the
 * directory, never a SIGBUS. In a child with a 1 MB tmpfs of its own (the
 * dataset's three 512 KiB tables do not fit). */
static void copy_to_full_disk(const char *copies, int msg_fd)
{
    mount_small_tmpfs(copies, msg_fd);
    fs_dataset_t *ds;
    fs_error_t err = {0};
    fs_copy_opts_t copy = {.medium = FS_COPY_FILE, .dir = copies};
    fs_status_t st = fs_dataset_open_served(data, &copy, 0, 1, &ds, &err);
    dprintf(msg_fd, "%s", err.msg);
    _exit(st == FS_ERR_IO ? 0 : 2);
}

Test(sealed, a_full_copy_directory_is_an_error_naming_it)
{
    char *copies = tu_path(dir, "copies"), msg[1024];
    cr_assert_eq(mkdir(copies, 0700), 0);
    int st = in_child(copy_to_full_disk, copies, msg, sizeof msg);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 77) cr_skip_test("needs root (CAP_SYS_ADMIN) for a private tmpfs: %s", msg);
    cr_assert(WIFEXITED(st), "killed by signal %d (%s): %s", WTERMSIG(st), strsignal(WTERMSIG(st)), msg);
    cr_assert_eq(WEXITSTATUS(st), 0, "status %d: %s", WEXITSTATUS(st), msg);
    cr_assert_not_null(strstr(msg, ".npy: cannot reserve"), "%s", msg);
    cr_assert_not_null(strstr(msg, copies), "names the directory: %s", msg);
    cr_assert_not_null(strstr(msg, strerror(ENOSPC)), "%s", msg);
    free(copies);
}

Test(sealed, a_copy_directory_that_cannot_hold_files_is_refused_by_name)
{
    fs_dataset_t *ds;
    fs_error_t err = {0};
    char *missing = tu_path(dir, "missing");
    fs_copy_opts_t copy = {.medium = FS_COPY_FILE, .dir = missing};
    cr_assert_eq(fs_dataset_open_served(data, &copy, 0, 1, &ds, &err), FS_ERR_IO);
    cr_assert_not_null(strstr(err.msg, missing), "%s", err.msg);
    copy.dir = "/proc"; /* no O_TMPFILE there */
    cr_assert_neq(fs_dataset_open_served(data, &copy, 0, 1, &ds, &err), FS_OK);
    cr_assert_not_null(strstr(err.msg, "/proc"), "%s", err.msg);
    copy.medium = (fs_copy_medium_t)7;
    cr_assert_eq(fs_dataset_open_served(data, &copy, 0, 1, &ds, &err), FS_ERR_INVALID_ARGUMENT);
    free(missing);
}

Test(sealed, the_copy_verifies_checksums_and_names_the_file)
{
    char *path = tu_path(data, "table_b.npy");
    int fd = open(path, O_WRONLY);
    float bad = 0.5f; /* still a valid float: only the checksum can tell */
    cr_assert_eq(pwrite(fd, &bad, sizeof bad, 4096), (ssize_t)sizeof bad);
    close(fd);
    fs_dataset_t *ds;
    fs_error_t err = {0};
    cr_assert_eq(fs_dataset_open(data, FS_OPEN_COPY, 1, &ds, &err), FS_ERR_FORMAT);
    cr_assert_not_null(strstr(err.msg, "table_b.npy: checksum mismatch"), "%s", err.msg);
    free(path);
}

/* `big` (make_dataset_with(.., 1)) opened with a memory copy: NULL when
 * every byte of indptr and of table "big" is the dataset's, else why not. */
static const char *big_copy_differs(const char *big, char *why, size_t len)
{
    fs_dataset_t *ds;
    fs_error_t err = {0};
    fs_copy_opts_t copy = {.medium = FS_COPY_MEMFD};
    if (fs_dataset_open_served(big, &copy, 0, 2, &ds, &err) != FS_OK) {
        snprintf(why, len, "%s", err.msg);
        return why;
    }
    const float *x = fs_dataset_table(ds, "big")->data;
    const char *bad = NULL;
    for (int64_t v = 0; v < N && !bad; v++)
        if (ds->indptr[v + 1] - ds->indptr[v] != degree(v)) bad = "indptr";
    for (int64_t i = 0; i < (int64_t)N * BIG_DIM && !bad; i++)
        if (x[i] != value(NUM_TABLES, i / BIG_DIM, i % BIG_DIM)) bad = "table_big.npy";
    if (bad) snprintf(why, len, "%s: the copy differs from the file", bad);
    fs_dataset_close(ds);
    return bad ? why : NULL;
}

/* In a child: big_copy_differs with /proc unmounted (a private mount
 * namespace; as in a chroot). Exit 0, 1 with why, 77 when /proc cannot be
 * hidden here. */
static void copy_without_proc(const char *big, int msg_fd)
{
    char why[1024];
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        umount2("/proc", MNT_DETACH) != 0 || access("/proc/self/fd", F_OK) == 0) {
        dprintf(msg_fd, "cannot hide /proc in a private mount namespace: %s", strerror(errno));
        _exit(77);
    }
    const char *bad = big_copy_differs(big, why, sizeof why);
    if (bad) dprintf(msg_fd, "%s", bad);
    _exit(bad ? 1 : 0);
}

/* A memory copy is read in pieces by several streams and hashed as they
 * land: every byte of a many-piece file arrives (and of indptr, which ends
 * mid-page: the direct read's tail), also without /proc (no descriptors of
 * their own for the streams, the hash after the seal), and a changed byte
 * in the big file's last piece is caught. */
Test(sealed, a_memory_copy_of_many_pieces_holds_every_byte_and_is_verified)
{
    char *big = tu_path(dir, "big"), why[1024];
    make_dataset_with(big, 1);
    const char *differs = big_copy_differs(big, why, sizeof why);
    cr_assert_null(differs, "%s", differs);
    int status = in_child(copy_without_proc, big, why, sizeof why);
    cr_assert(WIFEXITED(status), "killed by signal %d: %s", WTERMSIG(status), why);
    cr_assert(WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 77, "without /proc: %s", why);
    fs_dataset_t *ds;
    fs_error_t err = {0};
    fs_copy_opts_t copy = {.medium = FS_COPY_MEMFD};
    char *path = tu_path(big, "table_big.npy");
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_gt(st.st_size, 16 << 20, "more than two 8 MiB pieces");
    struct stat ip_st;
    char *ip_path = tu_path(big, "indptr.npy");
    cr_assert_eq(stat(ip_path, &ip_st), 0);
    cr_assert_neq(ip_st.st_size % 4096, 0, "indptr ends mid-page: %lld bytes", (long long)ip_st.st_size);
    free(ip_path);
    int fd = open(path, O_WRONLY);
    float changed = 0.5f;
    cr_assert_eq(pwrite(fd, &changed, sizeof changed, st.st_size - 12), (ssize_t)sizeof changed);
    close(fd);
    cr_assert_eq(fs_dataset_open_served(big, &copy, 0, 2, &ds, &err), FS_ERR_FORMAT);
    cr_assert_not_null(strstr(err.msg, "table_big.npy: checksum mismatch"), "%s", err.msg);
    free(path);
    free(big);
}

Test(sealed, without_a_copy_the_validated_descriptor_is_kept)
{
    fs_dataset_t *ds;
    fs_error_t err = {0};
    cr_assert_eq(fs_dataset_open(data, 0, 1, &ds, &err), FS_OK, "%s", err.msg);
    cr_assert_not(ds->served_copy);
    int fd;
    int64_t off;
    const fs_idset_t *train = fs_dataset_split(ds, "train");
    cr_assert_eq(fs_dataset_locate(ds, train->ids, &fd, &off), FS_OK);
    char *path = tu_path(data, "split_train.npy"), *other = tu_path(dir, "other.npy");
    struct stat before, by_fd;
    cr_assert_eq(stat(path, &before), 0);
    tu_write(other, "not a split", 11);
    cr_assert_eq(rename(other, path), 0);
    cr_assert_eq(fstat(fd, &by_fd), 0);
    cr_assert_eq(by_fd.st_ino, before.st_ino, "the descriptor handed out is the file validated, not the new one");
    fs_dataset_close(ds);
    free(path), free(other);
}

Test(sealed, each_change_to_a_file_is_reported_once)
{
    fs_dataset_t *ds;
    fs_error_t err = {0};
    cr_assert_eq(fs_dataset_open(data, FS_OPEN_COPY, 1, &ds, &err), FS_OK, "%s", err.msg);
    int i = file_index(ds, "table_c.npy");
    fs_file_state_t last;
    fs_dataset_file_validated(ds, i, &last);
    char what[200], *path = tu_path(data, "table_c.npy"), *other = tu_path(dir, "c2.npy");
    cr_assert_eq(fs_dataset_file_check(ds, i, &last, what, sizeof what), FS_FILE_SAME);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    /* written in place, same size: only the modification time tells */
    struct timespec t[2] = {st.st_atim, {.tv_sec = st.st_mtim.tv_sec - 10, .tv_nsec = st.st_mtim.tv_nsec}};
    cr_assert_eq(utimensat(AT_FDCWD, path, t, 0), 0);
    cr_assert_eq(fs_dataset_file_check(ds, i, &last, what, sizeof what), FS_FILE_WRITTEN, "%s", what);
    cr_assert_eq(fs_dataset_file_check(ds, i, &last, what, sizeof what), FS_FILE_SAME, "once per change");
    cr_assert_eq(truncate(path, 100), 0);
    cr_assert_eq(fs_dataset_file_check(ds, i, &last, what, sizeof what), FS_FILE_TRUNCATED);
    cr_assert_not_null(strstr(what, "truncated from 528384 to 100 bytes"), "%s", what);
    cr_assert_eq(truncate(path, 200), 0);
    cr_assert_eq(fs_dataset_file_check(ds, i, &last, what, sizeof what), FS_FILE_GROWN, "%s", what);
    tu_write(other, "x", 1);
    cr_assert_eq(rename(other, path), 0);
    cr_assert_eq(fs_dataset_file_check(ds, i, &last, what, sizeof what), FS_FILE_REPLACED, "%s", what);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(fs_dataset_file_check(ds, i, &last, what, sizeof what), FS_FILE_DELETED, "%s", what);
    cr_assert_eq(fs_dataset_file_check(ds, i, &last, what, sizeof what), FS_FILE_SAME);
    tu_write(path, "back", 4);
    cr_assert_eq(fs_dataset_file_check(ds, i, &last, what, sizeof what), FS_FILE_REPLACED, "re-created: %s", what);
    const float *x = fs_dataset_table(ds, "c")->data;
    cr_assert_eq(x[(N - 1) * DIM + DIM - 1], value(2, N - 1, DIM - 1), "the copy is what it was");
    fs_dataset_close(ds);
    free(path), free(other);
}

/* ---- serve: trainers while the files change ------------------------------------------ */

#define TRAINERS 5             /* 0-3 over unix://, 4 over grpc:// */
#define SEEDS 128

typedef struct {
    volatile int stop;
    volatile long progress[TRAINERS + 1];  /* [TRAINERS]: the trainer that connects after the changes */
} shared_t;

static void trainer_fail(int id, const char *what, fs_client_t *c)
{
    fprintf(stderr, "trainer %d: %s%s%s\n", id, what, c ? ": " : "", c ? fs_client_errstr(c) : "");
    _exit(1);
}

/* Every row is the formula's, every sampled edge is an edge of the graph. */
static void check_batch(int id, const fs_batch_t *b, int t)
{
    const float *x = b->features;
    if (b->rows != b->num_nodes || b->dim != DIM) trainer_fail(id, "batch of the wrong shape", NULL);
    for (int64_t i = 0; i < b->rows; i++)
        for (int64_t j = 0; j < DIM; j++)
            if (x[i * DIM + j] != value(t, b->nodes[i], j)) {
                fprintf(stderr, "trainer %d: table %s row of node %lld col %lld is %g, not %g\n", id, table_names[t],
                        (long long)b->nodes[i], (long long)j, (double)x[i * DIM + j], (double)value(t, b->nodes[i], j));
                _exit(1);
            }
    for (int h = 0; h < b->num_hops; h++) {
        const fs_block_t *k = &b->blocks[h];
        for (int64_t e = 0; e < k->num_edges; e++)
            if (!is_edge(b->nodes[k->edge_dst[e]], b->nodes[k->edge_src[e]])) {
                fprintf(stderr, "trainer %d: sampled edge %lld -> %lld is not in the graph\n", id,
                        (long long)b->nodes[k->edge_dst[e]], (long long)b->nodes[k->edge_src[e]]);
                _exit(1);
            }
    }
}

static void check_split(int id, fs_client_t *c)
{
    fs_ids_t *ids;
    if (fs_split(c, "train", &ids) != FS_OK) trainer_fail(id, "fs_split", c);
    if (ids->n != N / 2) trainer_fail(id, "the train split changed size", NULL);
    for (int64_t i = 0; i < ids->n; i++)
        if (ids->ids[i] != 2 * i) trainer_fail(id, "the train split changed", NULL);
    fs_ids_free(ids);
}

/* Samples, gathers from every table and reads the split until told to stop
 * (or, with rounds > 0, for that many rounds). Never returns. */
static void trainer(const char *uri, int id, shared_t *sh, long rounds)
{
    fs_client_t *c;
    if (fs_connect(uri, NULL, &c) != FS_OK) trainer_fail(id, "fs_connect", c);
    uint64_t rng = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);
    int64_t seeds[SEEDS];
    for (long round = 0; rounds ? round < rounds : !sh->stop; round++) {
        for (int t = 0; t < NUM_TABLES; t++) {
            for (int i = 0; i < SEEDS; i++) {
                rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                seeds[i] = (int64_t)((rng >> 33) % N);
            }
            fs_sample_req_t req = FS_SAMPLE_REQ_INIT;
            req.num_hops = 2, req.fanout[0] = 4, req.fanout[1] = 3, req.seed = (uint64_t)round;
            fs_batch_t *b;
            if (fs_sample_gather(c, seeds, SEEDS, &req, table_names[t], FS_DTYPE_F32, &b) != FS_OK)
                trainer_fail(id, "fs_sample_gather", c);
            check_batch(id, b, t);
            fs_batch_free(b);
        }
        check_split(id, c);
        sh->progress[id]++;
    }
    fs_close(c);
    _exit(0);
}

typedef struct {
    pid_t pid;
    FILE *out;
    int grpc_port;
} server_t;

static void start_server(server_t *s, const char *copy, const char *log)
{
    s->pid = tu_spawn(&s->out, "%s serve %s --socket %s/s.sock --listen 127.0.0.1:0 --metrics 127.0.0.1:0 %s 2>%s",
                      tu_bin(), data, dir, copy, log);
    char line[512];
    cr_assert_not_null(fgets(line, sizeof line, s->out), "the server exited before READY");
    cr_assert(sscanf(line, "READY unix=%*s grpc=127.0.0.1:%d", &s->grpc_port) == 1, "bad READY line: %s", line);
}

/* The server and the trainers: none may die, by a signal (SIGBUS) or
 * otherwise, before the test stops it. */
typedef struct {
    pid_t pid;
    char who[64];
    int reaped, status;
} proc_t;

static proc_t procs[TRAINERS + 2]; /* the trainers, the late trainer, the server */
static int num_procs;

static void track(pid_t pid, const char *who)
{
    cr_assert_gt(pid, 0);
    procs[num_procs] = (proc_t){.pid = pid};
    snprintf(procs[num_procs++].who, sizeof procs[0].who, "%s", who);
}

static void expect_clean_exit(const proc_t *p)
{
    int st = p->status;
    cr_assert(!WIFSIGNALED(st), "%s was killed by signal %d (%s)", p->who, WTERMSIG(st), strsignal(WTERMSIG(st)));
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s failed (exit %d; its stderr says why)", p->who,
              WEXITSTATUS(st));
}

/* Fails the test if any of them has ended (they end only when told to). */
static void assert_none_ended(void)
{
    for (int i = 0; i < num_procs; i++) {
        proc_t *p = &procs[i];
        if (p->reaped || waitpid(p->pid, &p->status, WNOHANG) != p->pid) continue;
        p->reaped = 1;
        expect_clean_exit(p);
        cr_assert_fail("%s exited while it should still be running", p->who);
    }
}

static void reap(proc_t *p)
{
    if (!p->reaped) cr_assert_eq(waitpid(p->pid, &p->status, 0), p->pid);
    p->reaped = 1;
    expect_clean_exit(p);
}

static void spawn_trainer(const char *uri, int id, shared_t *sh, long rounds)
{
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        trainer(uri, id, sh, rounds);
    }
    char who[64];
    snprintf(who, sizeof who, "trainer %d (%s)", id, strncmp(uri, "grpc", 4) == 0 ? "grpc://" : "unix://");
    track(pid, who);
}

/* Waits until every trainer in [0, n) has done `min[i]` rounds. */
static void wait_progress(shared_t *sh, int n, const long *min, const char *when)
{
    for (int tries = 0; tries < 6000; tries++) {
        int done = 1;
        for (int i = 0; i < n; i++) done &= sh->progress[i] >= min[i];
        if (done) return;
        assert_none_ended();
        usleep(10000);
    }
    cr_assert_fail("trainers stopped making progress %s", when);
}

/* The replacement of `name`: a file with other contents, renamed over it. */
static void replace_by_rename(const char *name, const void *bytes, size_t len)
{
    char *tmp = tu_path(dir, "replacement"), *path = tu_path(data, name);
    tu_write(tmp, bytes, len);
    cr_assert_eq(rename(tmp, path), 0);
    free(tmp), free(path);
}

static void change_the_files(void)
{
    char *a = tu_path(data, "table_a.npy"), *b = tu_path(data, "table_b.npy"), *c = tu_path(data, "table_c.npy");
    char *ix = tu_path(data, "indices.npy"), *train = tu_path(data, "split_train.npy");
    cr_assert_eq(truncate(a, 4096), 0); /* a re-import in place, a full disk, a bad copy */
    size_t len;
    char *bytes = tu_read(b, &len);
    for (size_t i = FS_NPY_WRITE_HEADER_LEN; i < len; i++) bytes[i] ^= 0x5a; /* same header, other rows */
    replace_by_rename("table_b.npy", bytes, len);
    free(bytes);
    cr_assert_eq(unlink(c), 0);
    bytes = tu_read(train, &len);
    for (size_t i = 128; i + 8 <= len; i += 8) bytes[i] |= 1; /* odd ids */
    replace_by_rename("split_train.npy", bytes, len);
    free(bytes);
    int fd = open(ix, O_WRONLY);
    int32_t junk[256];
    for (int i = 0; i < 256; i++) junk[i] = N - 1 - i; /* in range, but not the graph's edges */
    cr_assert_eq(pwrite(fd, junk, sizeof junk, 1024), (ssize_t)sizeof junk);
    close(fd);
    free(a), free(b), free(c), free(ix), free(train);
}

static const char *const changed[][2] = {{"table_a.npy", "truncated"}, {"table_b.npy", "replaced"},
                                         {"table_c.npy", "deleted"},   {"split_train.npy", "replaced"},
                                         {"indices.npy", "written"}};
#define NUM_CHANGED (sizeof changed / sizeof changed[0])

/* 1 when the metrics count every change; *text receives them. */
static int all_counted(fs_client_t *c, char **text)
{
    if (fs_stats(c, text) != FS_OK) assert_none_ended();
    cr_assert_not_null(*text, "Stats failed: %s", fs_client_errstr(c));
    for (size_t i = 0; i < NUM_CHANGED; i++) {
        char want[200];
        snprintf(want, sizeof want, "featstore_dataset_file_changes_total{file=\"%s\",change=\"%s\"} 1\n",
                 changed[i][0], changed[i][1]);
        if (!strstr(*text, want)) return 0;
    }
    return 1;
}

TestSuite(serve_files, .init = setup, .fini = teardown, .timeout = 120);

/* `copy`: the server's --copy options; `copied`: what its log then says. */
static void trainers_survive_file_changes(const char *copy, const char *copied)
{
    char *log = tu_path(dir, "server.log"), unix_uri[300], grpc_uri[64];
    server_t s;
    start_server(&s, copy, log);
    track(s.pid, "the server");
    snprintf(unix_uri, sizeof unix_uri, "unix://%s/s.sock", dir);
    snprintf(grpc_uri, sizeof grpc_uri, "grpc://127.0.0.1:%d", s.grpc_port);
    shared_t *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(sh, MAP_FAILED);
    memset(sh, 0, sizeof *sh);
    for (int i = 0; i < TRAINERS; i++) spawn_trainer(i < 4 ? unix_uri : grpc_uri, i, sh, 0);
    long min[TRAINERS];
    for (int i = 0; i < TRAINERS; i++) min[i] = 2;
    wait_progress(sh, TRAINERS, min, "before the changes");

    change_the_files();
    fs_client_t *c;
    if (fs_connect(unix_uri, NULL, &c) != FS_OK) assert_none_ended();
    cr_assert_not_null(c);
    char *text = NULL;
    int counted = 0;
    for (int tries = 0; tries < 1500 && !(counted = all_counted(c, &text)); tries++) { /* a deadline, not a timing */
        fs_stats_free(text);
        text = NULL;
        assert_none_ended();
        usleep(20000);
    }
    if (!counted) counted = all_counted(c, &text); /* once more, for the message */
    cr_assert(counted, "the metrics do not count every change:\n%s", strstr(text, "featstore_dataset_file"));
    fs_stats_free(text);
    fs_close(c);

    for (int i = 0; i < TRAINERS; i++) min[i] = sh->progress[i] + 3; /* every trainer reads on, after the changes */
    wait_progress(sh, TRAINERS, min, "after the changes");
    assert_none_ended();
    spawn_trainer(unix_uri, TRAINERS, sh, 3); /* and one connects after them, for 3 rounds */
    reap(&procs[num_procs - 1]);
    cr_assert_eq(sh->progress[TRAINERS], 3, "the late trainer ran its rounds");
    sh->stop = 1;
    for (int i = 1; i <= TRAINERS; i++) reap(&procs[i]);
    assert_none_ended(); /* the server */
    kill(s.pid, SIGTERM);
    reap(&procs[0]);
    fclose(s.out);

    char *text_log = tu_read(log, NULL);
    for (size_t i = 0; i < NUM_CHANGED; i++) {
        char want[300];
        snprintf(want, sizeof want, "featstore: error: dataset file %s/%s changed while being served: %s", data,
                 changed[i][0], changed[i][1]);
        cr_assert_not_null(strstr(text_log, want), "the log lacks \"%s\":\n%s", want, text_log);
    }
    cr_assert_not_null(strstr(text_log, copied), "the log lacks \"%s\":\n%s", copied, text_log);
    free(text_log);
    munmap(sh, sizeof *sh);
    free(log);
}

Test(serve_files, trainers_survive_files_truncated_replaced_deleted_and_written_with_memory_copies)
{
    trainers_survive_file_changes("--copy memory", "featstore: dataset copied into sealed memory and its checksums");
}

Test(serve_files, trainers_survive_files_truncated_replaced_deleted_and_written_with_file_copies)
{
    char copy[400], copied[400];
    snprintf(copy, sizeof copy, "--copy file --copy-dir %s", dir);
    snprintf(copied, sizeof copied, "featstore: dataset copied into unnamed read-only files in %s and its", dir);
    trainers_survive_file_changes(copy, copied);
}
