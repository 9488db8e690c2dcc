/* test_diskio.c — the disk tier's row reader (disk/fs_diskio.h) against
 * pread of the same file: every backend, direct and buffered, rows aligned
 * and not, rows larger than a read, batches deeper than the queue; what it
 * reads (coalescing, amplification); a file truncated under it; bad
 * arguments; and io_uring refused by a seccomp filter, as Docker's default
 * profile refuses it. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs_diskio.h"
#include "test_util.h"

TU_SCRATCH_DIR
TestSuite(diskio, .init = setup, .fini = teardown);

/* A file of `rows` rows of rb bytes after `offset` bytes of header, byte k
 * of the file being a function of k, open read-only. */
static int make_file(const char *name, uint64_t offset, uint64_t rb, uint64_t rows)
{
    char *p = tu_path(dir, name);
    size_t len = offset + rb * rows;
    unsigned char *buf = malloc(len ? len : 1);
    for (size_t k = 0; k < len; k++) buf[k] = (unsigned char)((k * 2654435761u) >> 13);
    tu_write(p, buf, len);
    free(buf);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    cr_assert_geq(fd, 0);
    free(p);
    return fd;
}

/* n distinct ascending rows of [0, rows): every stride-th, or random. */
static int64_t *pick_rows(uint64_t rows, size_t n, unsigned seed)
{
    int64_t *r = malloc(n * sizeof *r);
    unsigned char *taken = calloc(rows, 1);
    srand(seed);
    for (size_t i = 0; i < n;) {
        uint64_t x = ((uint64_t)rand() << 16 ^ (uint64_t)rand()) % rows;
        if (!taken[x]) taken[x] = 1, i++;
    }
    for (uint64_t x = 0, i = 0; x < rows; x++)
        if (taken[x]) r[i++] = (int64_t)x;
    free(taken);
    return r;
}

/* Reads rows through d and checks every byte against pread of fd. */
static void check_read(fs_diskio_t *d, int fd, uint64_t offset, uint64_t rb, const int64_t *rows, size_t n)
{
    char *out = malloc(n * rb), *want = malloc(rb);
    void **dst = malloc(n * sizeof *dst);
    for (size_t i = 0; i < n; i++) dst[i] = out + i * rb;
    fs_error_t err = {0};
    cr_assert_eq(fs_diskio_read(d, rows, dst, n, &err), FS_OK, "%s", err.msg);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(pread(fd, want, rb, (off_t)(offset + (uint64_t)rows[i] * rb)), (ssize_t)rb);
        cr_assert(memcmp(dst[i], want, rb) == 0, "row %lld differs (%s)", (long long)rows[i], fs_diskio_describe(d));
    }
    free(out), free(want), free(dst);
}

static fs_diskio_t *open_reader(int fd, uint64_t offset, uint64_t rb, uint64_t rows, fs_diskio_opts_t o)
{
    fs_diskio_t *d;
    fs_error_t err = {0};
    cr_assert_eq(fs_diskio_open(fd, "test.npy", offset, rb, rows, &o, &d, &err), FS_OK, "%s", err.msg);
    return d;
}

Test(diskio, every_backend_and_layout_reads_what_pread_reads)
{
    const uint64_t offsets[] = {0, 128, 4096};
    const uint64_t row_bytes[] = {512, 100, 4096, 8000};
    const fs_diskio_backend_t backends[] = {FS_DISKIO_URING, FS_DISKIO_PREAD};
    for (size_t o = 0; o < 3; o++)
        for (size_t r = 0; r < 4; r++) {
            uint64_t rows = 3000;
            int fd = make_file("t.bin", offsets[o], row_bytes[r], rows);
            int64_t *pick = pick_rows(rows, 700, (unsigned)(o * 7 + r));
            for (size_t b = 0; b < 2; b++)
                for (int buffered = 0; buffered < 2; buffered++) {
                    fs_diskio_t *d = open_reader(fd, offsets[o], row_bytes[r], rows,
                                                 (fs_diskio_opts_t){.backend = backends[b], .queue_depth = 8,
                                                                    .buffered = buffered});
                    cr_assert_eq(fs_diskio_backend(d), backends[b]);
                    check_read(d, fd, offsets[o], row_bytes[r], pick, 700);
                    const int64_t last = (int64_t)rows - 1; /* its aligned read runs past the end of the file */
                    check_read(d, fd, offsets[o], row_bytes[r], &last, 1);
                    fs_diskio_close(d);
                }
            free(pick);
            close(fd);
        }
}

Test(diskio, coalesces_touching_rows_and_reads_no_more_than_the_alignment)
{
    int fd = make_file("t.bin", 4096, 512, 100000);
    fs_diskio_t *d = open_reader(fd, 4096, 512, 100000, (fs_diskio_opts_t){0});
    uint32_t a = fs_diskio_align(d);
    cr_assert(a == 1 || (a >= 512 && a <= 4096), "alignment %u", a);
    /* 256 consecutive rows: one 128 KiB read. */
    int64_t run[256];
    for (int i = 0; i < 256; i++) run[i] = 1000 + i;
    check_read(d, fd, 4096, 512, run, 256);
    fs_diskio_stats_t s;
    fs_diskio_stats(d, &s);
    cr_assert_eq(s.reads, 1, "%s: %llu reads for one run", fs_diskio_describe(d), (unsigned long long)s.reads);
    cr_assert_eq(s.bytes_read, s.bytes_useful);
    /* Scattered rows aligned as the file system wants them: nothing read twice. */
    if (a <= 512) {
        int64_t *pick = pick_rows(100000, 2000, 3);
        check_read(d, fd, 4096, 512, pick, 2000);
        fs_diskio_stats(d, &s);
        cr_assert_eq(s.bytes_read, s.bytes_useful, "%llu read for %llu useful", (unsigned long long)s.bytes_read,
                     (unsigned long long)s.bytes_useful);
        free(pick);
    }
    fs_diskio_close(d);
    close(fd);
}

Test(diskio, many_more_extents_than_the_queue_and_rows_over_a_read)
{
    int fd = make_file("t.bin", 128, 300000, 40);
    int64_t rows[] = {0, 1, 5, 6, 7, 20, 39};
    fs_diskio_t *d = open_reader(fd, 128, 300000, 40, (fs_diskio_opts_t){.queue_depth = 2, .max_read = 4096});
    check_read(d, fd, 128, 300000, rows, 7);
    fs_diskio_close(d);
    close(fd);
    fd = make_file("u.bin", 0, 64, 200000);
    int64_t *pick = pick_rows(200000, 20000, 9);
    for (int b = 0; b < 2; b++) {
        d = open_reader(fd, 0, 64, 200000, (fs_diskio_opts_t){.backend = b ? FS_DISKIO_PREAD : FS_DISKIO_URING,
                                                                .queue_depth = 3});
        check_read(d, fd, 0, 64, pick, 20000);
        fs_diskio_close(d);
    }
    free(pick);
    close(fd);
}

typedef struct {
    fs_diskio_t *d;
    int fd;
    const int64_t *rows;
} thread_read_t;

static void *read_in_thread(void *p)
{
    thread_read_t *t = p;
    check_read(t->d, t->fd, 0, 512, t->rows, 300);
    return NULL;
}

/* A reader is used by one thread at a time, not always the same one (a
 * ring that only its maker may submit to is remade for the new thread). */
Test(diskio, a_reader_passed_between_threads_keeps_reading)
{
    int fd = make_file("t.bin", 0, 512, 4000);
    int64_t *pick = pick_rows(4000, 300, 5);
    fs_diskio_t *d = open_reader(fd, 0, 512, 4000, (fs_diskio_opts_t){.queue_depth = 16});
    check_read(d, fd, 0, 512, pick, 300);
    for (int i = 0; i < 3; i++) {
        pthread_t t;
        thread_read_t arg = {d, fd, pick};
        cr_assert_eq(pthread_create(&t, NULL, read_in_thread, &arg), 0);
        cr_assert_eq(pthread_join(t, NULL), 0);
        check_read(d, fd, 0, 512, pick, 300);
    }
    fs_diskio_close(d);
    free(pick);
    close(fd);
}

Test(diskio, a_file_truncated_under_the_reader_fails_the_read_naming_the_row)
{
    for (int b = 0; b < 2; b++) {
        int fd = make_file("t.bin", 128, 512, 1000);
        fs_diskio_t *d = open_reader(fd, 128, 512, 1000, (fs_diskio_opts_t){.backend = b ? FS_DISKIO_PREAD : FS_DISKIO_URING});
        char *p = tu_path(dir, "t.bin");
        cr_assert_eq(truncate(p, 128 + 512 * 500 + 100), 0);
        free(p);
        int64_t early[] = {3, 499}, late[] = {10, 700};
        check_read(d, fd, 128, 512, early, 2);
        char buf[2][512];
        void *dst[] = {buf[0], buf[1]};
        fs_error_t err = {0};
        cr_assert_eq(fs_diskio_read(d, late, dst, 2, &err), FS_ERR_IO);
        cr_assert(strstr(err.msg, "before row 700") && strstr(err.msg, "truncated"), "%s", err.msg);
        check_read(d, fd, 128, 512, early, 2); /* the reader still reads what is there */
        fs_diskio_close(d);
        close(fd);
    }
}

Test(diskio, bad_arguments_are_named)
{
    int fd = make_file("t.bin", 128, 512, 100);
    fs_diskio_t *d;
    fs_error_t err = {0};
    cr_assert_eq(fs_diskio_open(fd, "t.npy", 128, 512, UINT64_MAX / 256, NULL, &d, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fs_diskio_open(fd, "t.npy", 128, 0, 10, NULL, &d, &err), FS_ERR_INVALID_ARGUMENT);
    fs_diskio_opts_t deep = {.queue_depth = FS_DISKIO_MAX_DEPTH + 1};
    cr_assert_eq(fs_diskio_open(fd, "t.npy", 128, 512, 10, &deep, &d, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fs_diskio_open(-1, "t.npy", 128, 512, 10, NULL, &d, &err), FS_ERR_IO);
    d = open_reader(fd, 128, 512, 100, (fs_diskio_opts_t){0});
    char buf[3][512];
    void *dst[] = {buf[0], buf[1], buf[2]};
    const int64_t unsorted[] = {1, 5, 4}, repeated[] = {1, 5, 5}, outside[] = {1, 100, 101}, negative[] = {-1, 0, 1};
    cr_assert_eq(fs_diskio_read(d, unsorted, dst, 3, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "position 2 has 4 after 5"), "%s", err.msg);
    cr_assert_eq(fs_diskio_read(d, repeated, dst, 3, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fs_diskio_read(d, outside, dst, 3, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "row 100 at position 1 is not in [0, 100)"), "%s", err.msg);
    cr_assert_eq(fs_diskio_read(d, negative, dst, 3, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fs_diskio_read(d, unsorted, dst, 0, &err), FS_OK); /* nothing asked, nothing read */
    fs_diskio_close(d);
    close(fd);
}

/* Makes io_uring_setup fail with EPERM in this process, as Docker's
 * default seccomp profile does. */
static void refuse_io_uring(void)
{
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof filter / sizeof filter[0], .filter = filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) _exit(3);
}

Test(diskio, io_uring_refused_falls_back_to_the_pread_pool_and_says_why)
{
    int fd = make_file("t.bin", 128, 512, 5000);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        refuse_io_uring();
        fs_diskio_t *d;
        fs_error_t err = {0};
        fs_diskio_opts_t only_uring = {.backend = FS_DISKIO_URING};
        if (fs_diskio_open(fd, "t.npy", 128, 512, 5000, &only_uring, &d, &err) != FS_ERR_UNSUPPORTED ||
            !strstr(err.msg, "not permitted"))
            _exit(4);
        if (fs_diskio_open(fd, "t.npy", 128, 512, 5000, NULL, &d, &err) != FS_OK) _exit(5);
        if (fs_diskio_backend(d) != FS_DISKIO_PREAD || !strstr(fs_diskio_describe(d), "io_uring refused")) _exit(6);
        int64_t *pick = pick_rows(5000, 900, 1);
        char *out = malloc(900 * 512), want[512];
        void **dst = malloc(900 * sizeof *dst);
        for (int i = 0; i < 900; i++) dst[i] = out + i * 512;
        if (fs_diskio_read(d, pick, dst, 900, &err) != FS_OK) _exit(7);
        for (int i = 0; i < 900; i++)
            if (pread(fd, want, 512, 128 + pick[i] * 512) != 512 || memcmp(want, dst[i], 512) != 0) _exit(8);
        fs_diskio_close(d);
        _exit(0);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed at step %d", WEXITSTATUS(status));
    close(fd);
}
