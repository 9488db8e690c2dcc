/* test_serve_start.c — how `featstore serve` starts: every address (unix
 * socket, gRPC port, metrics port) is bound before the dataset is loaded,
 * so one already in use fails at once, naming it, with nothing loaded and
 * nothing of the other server's touched; connections made while the
 * dataset loads wait and are answered once it is served; under systemd
 * (NOTIFY_SOCKET) it says READY=1 once serving and STOPPING=1 when told to
 * stop. A dataset of
 * 128 MiB keeps the server loading long enough to be caught at it (it is
 * stopped with SIGSTOP there: no timing is asserted). */
#include <criterion/criterion.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "featstore/client.h"
#include "test_util.h"

static char *dir, *small, *big, sock[256];

static void setup(void)
{
    dir = tu_mkdtemp();
    small = tu_path(dir, "small");
    big = tu_path(dir, "big");
    snprintf(sock, sizeof sock, "%s/a.sock", dir);
    char *log;
    cr_assert_eq(tu_run(&log, "%s gen rmat --scale 8 --dim 4 --out %s && %s gen rmat --scale 16 --edge-factor 4 "
                        "--dim 512 --out %s", tu_bin(), small, tu_bin(), big), 0, "%s", log);
    free(log);
}

static void teardown(void)
{
    tu_rm_rf(dir);
    free(dir), free(small), free(big);
}

TestSuite(serve_start, .init = setup, .fini = teardown, .timeout = 180);

/* Info through uri answers (the server behind it serves). */
static void assert_serves(const char *uri)
{
    fs_client_t *c;
    fs_info_t *info;
    cr_assert_eq(fs_connect(uri, NULL, &c), FS_OK, "%s: %s", uri, fs_client_errstr(c));
    cr_assert_eq(fs_info(c, &info), FS_OK, "%s: %s", uri, fs_client_errstr(c));
    fs_info_free(info);
    fs_close(c);
}

Test(serve_start, an_address_in_use_fails_before_the_dataset_is_loaded)
{
    tu_server_t a;
    cr_assert_eq(tu_serve(&a, small, sock, ""), 0);
    char *other = tu_path(dir, "b.sock"), args[3][600], want[3][600], uri[300];
    snprintf(args[0], sizeof args[0], "--socket %s --metrics 127.0.0.1:0", sock);
    snprintf(want[0], sizeof want[0], "%s is in use by a running server", sock);
    snprintf(args[1], sizeof args[1], "--socket %s --listen 127.0.0.1:%d --metrics 127.0.0.1:0", other, a.grpc_port);
    snprintf(want[1], sizeof want[1], "cannot listen for gRPC on 127.0.0.1:%d: Address already in use", a.grpc_port);
    snprintf(args[2], sizeof args[2], "--socket %s --metrics 127.0.0.1:%d", other, a.metrics_port);
    snprintf(want[2], sizeof want[2], "cannot listen for metrics on 127.0.0.1:%d: Address already in use",
             a.metrics_port);
    for (int i = 0; i < 3; i++) {
        char *log;
        cr_assert_eq(tu_run(&log, "timeout 60 %s serve %s %s", tu_bin(), big, args[i]), 1, "%s: %s", args[i], log);
        cr_assert_not_null(strstr(log, want[i]), "%s: want \"%s\" in: %s", args[i], want[i], log);
        cr_assert_null(strstr(log, "dataset copied"), "%s: the dataset was loaded before the failure: %s", args[i], log);
        cr_assert_neq(access(other, F_OK), 0, "%s: the refused server left its socket %s", args[i], other);
        cr_assert_eq(access(sock, F_OK), 0, "%s: the running server's socket %s is gone", args[i], sock);
        free(log);
    }
    snprintf(uri, sizeof uri, "unix://%s", sock);
    assert_serves(uri);
    snprintf(uri, sizeof uri, "grpc://127.0.0.1:%d", a.grpc_port);
    assert_serves(uri);
    char *health = tu_http_get(a.metrics_port, "/healthz");
    cr_assert_not_null(strstr(health, "200 OK"), "%s", health);
    free(health);
    cr_assert_eq(tu_serve_stop(&a, SIGTERM), 0);
    free(other);
}

/* A client that connects while the server loads, and what it got. */
typedef struct {
    char uri[300];
    int http_port; /* > 0: GET /healthz there instead */
    fs_status_t st;
    char msg[512];
    _Atomic int done;
} early_t;

static void *early_client(void *p)
{
    early_t *e = p;
    if (e->http_port > 0) {
        char *reply = tu_http_get(e->http_port, "/healthz");
        e->st = strstr(reply, "200 OK") ? FS_OK : FS_ERR_IO;
        snprintf(e->msg, sizeof e->msg, "%.500s", reply);
        free(reply);
    } else {
        fs_client_t *c;
        fs_info_t *info = NULL;
        e->st = fs_connect(e->uri, NULL, &c);
        if (e->st == FS_OK) e->st = fs_info(c, &info);
        snprintf(e->msg, sizeof e->msg, "%s", fs_client_errstr(c));
        fs_info_free(info);
        fs_close(c);
    }
    e->done = 1;
    return NULL;
}

/* The ports from the "featstore: bound ..." line the server logs before it
 * loads; 0 when it has not logged it within 60 s. */
static int wait_bound(const char *log_path, int *grpc_port, int *metrics_port)
{
    for (int i = 0; i < 6000; i++, usleep(10000)) {
        if (access(log_path, F_OK) != 0) continue; /* the shell has not made it yet */
        char *log = tu_read(log_path, NULL), *line = strstr(log, "featstore: bound ");
        int n = line ? sscanf(line, "featstore: bound unix://%*s 127.0.0.1:%d (gRPC) 127.0.0.1:%d (metrics)", grpc_port,
                              metrics_port) : 0;
        free(log);
        if (n == 2) return 1;
    }
    return 0;
}

Test(serve_start, connections_made_while_loading_wait_and_are_answered)
{
    char *log_path = tu_path(dir, "serve.log");
    FILE *out;
    pid_t pid = tu_spawn(&out, "%s serve %s --socket %s --listen 127.0.0.1:0 --metrics 127.0.0.1:0 2>%s",
                         tu_bin(), big, sock, log_path);
    int grpc_port = 0, metrics_port = 0;
    int bound = wait_bound(log_path, &grpc_port, &metrics_port);
    kill(pid, SIGSTOP); /* held while loading */
    char *log = tu_read(log_path, NULL);
    cr_assert(bound, "no \"featstore: bound\" line with the ports before loading: %s", log);
    int loading = !strstr(log, "featstore: serving");
    free(log);
    if (!loading) {
        kill(pid, SIGCONT), kill(pid, SIGTERM), waitpid(pid, NULL, 0), fclose(out);
        cr_skip_test("the server had loaded the 128 MiB dataset before it could be stopped: nothing to check");
    }
    early_t e[3] = {{.http_port = 0}, {.http_port = 0}, {.http_port = metrics_port}};
    snprintf(e[0].uri, sizeof e[0].uri, "unix://%s", sock);
    snprintf(e[1].uri, sizeof e[1].uri, "grpc://127.0.0.1:%d", grpc_port);
    pthread_t t[3];
    for (int i = 0; i < 3; i++) cr_assert_eq(pthread_create(&t[i], NULL, early_client, &e[i]), 0);
    usleep(300000); /* the clients are connected (each socket's backlog holds them) and waiting */
    for (int i = 0; i < 3; i++) cr_assert_eq(e[i].done, 0, "client %d was answered by a server still loading: %s", i, e[i].msg);
    struct pollfd p = {.fd = fileno(out), .events = POLLIN};
    cr_assert_eq(poll(&p, 1, 0), 0, "READY was printed before the dataset was loaded");
    kill(pid, SIGCONT);
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        cr_assert_eq(e[i].st, FS_OK, "client %d (%s): %s", i, e[i].http_port ? "http" : e[i].uri, e[i].msg);
    }
    char line[512];
    cr_assert_not_null(fgets(line, sizeof line, out));
    cr_assert(strncmp(line, "READY ", 6) == 0, "%s", line);
    kill(pid, SIGTERM);
    int status;
    waitpid(pid, &status, 0);
    fclose(out);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
    free(log_path);
}

/* The next datagram on fd, within 60 s ("" when none came). */
static void next_notice(int fd, char *buf, size_t size)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    ssize_t n = poll(&p, 1, 60000) == 1 ? recv(fd, buf, size - 1, 0) : 0;
    buf[n > 0 ? n : 0] = '\0';
}

Test(serve_start, systemd_is_told_when_the_dataset_is_served_and_when_it_stops)
{
    char *notify = tu_path(dir, "notify.sock"), line[512], got[256];
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", notify);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    FILE *out;
    pid_t pid = tu_spawn(&out, "env NOTIFY_SOCKET=%s %s serve %s --socket %s --metrics 127.0.0.1:0", notify, tu_bin(),
                         small, sock);
    next_notice(fd, got, sizeof got);
    cr_assert_str_eq(got, "READY=1");
    cr_assert_not_null(fgets(line, sizeof line, out), "READY=1 came, but no READY line");
    cr_assert(strncmp(line, "READY ", 6) == 0, "%s", line);
    kill(pid, SIGTERM);
    next_notice(fd, got, sizeof got);
    cr_assert_str_eq(got, "STOPPING=1");
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
    fclose(out), close(fd), free(notify);
}
