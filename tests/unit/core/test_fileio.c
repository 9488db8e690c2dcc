/* test_fileio.c — whole reads and writes (kernels/fs_fileio.h): reads stop
 * only at the end of the file, writes into a pipe that takes a few KiB at a
 * time still write every byte, and errors come back as errno. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs_fileio.h"

static int temp_file(void)
{
    char path[] = "/tmp/fs_fileio_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    unlink(path);
    return fd;
}

Test(fileio, a_positional_write_then_read_round_trips_and_a_read_past_the_end_is_short)
{
    int fd = temp_file();
    char data[10000], back[20000];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (char)(i * 7);
    cr_assert_eq(fs_pwrite_full(fd, data, sizeof data, 100), 0);
    cr_assert_eq(fs_pread_full(fd, back, sizeof data, 100), (ssize_t)sizeof data);
    cr_assert_eq(memcmp(back, data, sizeof data), 0);
    cr_assert_eq(fs_pread_full(fd, back, sizeof back, 100), (ssize_t)sizeof data, "stops at the end of the file");
    cr_assert_eq(fs_pread_full(fd, back, 10, 1 << 20), 0, "nothing past the end");
    cr_assert_eq(fs_pread_full(fd, back, 0, 0), 0);
    close(fd);
}

Test(fileio, errors_come_back_as_errno)
{
    char b[8] = {0};
    errno = 0;
    cr_assert_eq(fs_pread_full(-1, b, sizeof b, 0), -1);
    cr_assert_eq(errno, EBADF);
    cr_assert_eq(fs_pwrite_full(-1, b, sizeof b, 0), EBADF);
    cr_assert_eq(fs_write_full(-1, b, sizeof b), EBADF);
    int p[2];
    cr_assert_eq(pipe(p), 0);
    cr_assert_eq(fs_pread_full(p[0], b, sizeof b, 0), -1, "a pipe has no offsets");
    cr_assert_eq(errno, ESPIPE);
    close(p[0]), close(p[1]);
}

typedef struct {
    int fd;
    char *got;
    size_t n;
} drain_t;

static void *drain(void *arg) /* reads the pipe 4 KiB at a time, slowly at first */
{
    drain_t *d = arg;
    size_t at = 0;
    for (int k = 0; at < d->n; k++) {
        if (k < 20) usleep(1000);
        ssize_t r = read(d->fd, d->got + at, d->n - at < 4096 ? d->n - at : 4096);
        if (r <= 0) break;
        at += (size_t)r;
    }
    d->n = at;
    return NULL;
}

Test(fileio, a_write_the_pipe_takes_in_pieces_writes_every_byte_in_order)
{
    size_t n = (size_t)1 << 20; /* 16 times a pipe's buffer */
    char *data = malloc(n), *got = malloc(n);
    for (size_t i = 0; i < n; i++) data[i] = (char)(i * 131 + (i >> 12));
    int p[2];
    cr_assert_eq(pipe(p), 0);
    drain_t d = {p[0], got, n};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, drain, &d), 0);
    cr_assert_eq(fs_write_full(p[1], data, n), 0);
    close(p[1]);
    pthread_join(t, NULL);
    cr_assert_eq(d.n, n);
    cr_assert_eq(memcmp(got, data, n), 0);
    close(p[0]);
    free(data), free(got);
}
