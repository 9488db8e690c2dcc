/* test_etcd.c — a private etcd per test (test_etcd.h). Readiness is a
 * Range that etcd answers; the ports are free when chosen, and a port taken
 * in between shows as etcd exiting, which fails the test with its log. */
#include "test_etcd.h"

#include <criterion/criterion.h>
#include <netinet/in.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fs_etcd.h"
#include "fs_member.h"
#include "test_util.h"

const char *tu_etcd_bin(void)
{
    static const char *paths[] = {"/usr/bin/etcd", "/usr/local/bin/etcd"};
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++)
        if (access(paths[i], X_OK) == 0) return paths[i];
    return NULL;
}

int tu_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    cr_assert(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
              getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    close(fd);
    return ntohs(a.sin_port);
}

static pid_t spawn_etcd(const char *dir, int client, int peer)
{
    char log[4096], data[4096], curl[64], purl[64], cluster[96];
    snprintf(log, sizeof log, "%s/etcd.log", dir);
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(curl, sizeof curl, "http://127.0.0.1:%d", client);
    snprintf(purl, sizeof purl, "http://127.0.0.1:%d", peer);
    snprintf(cluster, sizeof cluster, "t=%s", purl);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives the test */
        FILE *f = freopen(log, "w", stdout);
        (void)f;
        dup2(1, 2);
        execl(tu_etcd_bin(), "etcd", "--name", "t", "--data-dir", data, "--listen-client-urls", curl,
              "--advertise-client-urls", curl, "--listen-peer-urls", purl, "--initial-advertise-peer-urls", purl,
              "--initial-cluster", cluster, "--log-level", "error", (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Whether something accepts connections on the loopback port. */
static int port_open(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

/* Waits (up to 20 s) until the etcd just spawned answers a Range. */
static void wait_answer(tu_etcd_t *e)
{
    /* the port first (a gRPC channel that finds nothing backs off for seconds), then a Range */
    fs_error_t err = {0};
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int answered = 0; !answered;) {
        int st;
        cr_assert_eq(waitpid(e->pid, &st, WNOHANG), 0, "etcd exited (see %s/etcd.log)", e->dir);
        clock_gettime(CLOCK_MONOTONIC, &t);
        cr_assert_lt(t.tv_sec - t0.tv_sec, 20, "etcd did not answer within 20 s: %s", err.msg);
        if (port_open(e->port)) {
            fs_etcd_t *h;
            fs_etcd_kvs_t kvs = {0};
            cr_assert_eq(fs_etcd_open(e->endpoint, 1000, &h, &err), FS_OK, "%s", err.msg);
            answered = fs_etcd_get(h, "/ready", 0, &kvs, &err) == FS_OK;
            fs_etcd_kvs_free(&kvs);
            fs_etcd_close(h);
        }
        if (!answered) usleep(20 * 1000);
    }
}

void tu_etcd_start(tu_etcd_t *e)
{
    cr_assert(tu_etcd_bin(), "no etcd installed (apt-get install etcd-server)");
    memset(e, 0, sizeof *e);
    e->dir = tu_mkdtemp();
    e->port = tu_free_port();
    e->peer_port = tu_free_port();
    snprintf(e->endpoint, sizeof e->endpoint, "127.0.0.1:%d", e->port);
    e->pid = spawn_etcd(e->dir, e->port, e->peer_port);
    wait_answer(e);
}

void tu_etcd_kill(tu_etcd_t *e)
{
    cr_assert_gt(e->pid, 0, "no etcd running");
    kill(e->pid, SIGKILL);
    waitpid(e->pid, NULL, 0);
    e->pid = 0;
}

void tu_etcd_revive(tu_etcd_t *e)
{
    cr_assert_eq(e->pid, 0, "etcd is running");
    e->pid = spawn_etcd(e->dir, e->port, e->peer_port);
    wait_answer(e);
}

void tu_etcd_stop(tu_etcd_t *e)
{
    if (e->pid > 0) {
        kill(e->pid, SIGKILL);
        waitpid(e->pid, NULL, 0);
    }
    if (e->dir) tu_rm_rf(e->dir);
    free(e->dir);
    memset(e, 0, sizeof *e);
}

/* ---- shard servers ------------------------------------------------------------------- */

void tu_shard_start(tu_shard_t *p, const tu_etcd_t *e, const char *root, const char *cluster, const char *parts, int id,
                    const char *extra)
{
    p->pid = tu_spawn(&p->out, "%s serve %s --parts %s --listen 127.0.0.1:0 --cluster etcd://%s/%s --shard %d %s",
                      tu_bin(), root, parts, e->endpoint, cluster, id, extra ? extra : "");
    tu_shard_ready(p, cluster, id);
}

void tu_shard_ready(tu_shard_t *p, const char *cluster, int id)
{
    char line[512];
    cr_assert_not_null(fgets(line, sizeof line, p->out), "shard %d of %s exited before READY", id, cluster);
    const char *grpc = strstr(line, " grpc="), *metrics = strstr(line, " metrics=");
    cr_assert(strncmp(line, "READY ", 6) == 0 && grpc && metrics, "bad READY line: %s", line);
    cr_assert_eq(sscanf(grpc + 6, "%63s", p->grpc), 1, "bad READY line: %s", line);
    p->metrics_port = atoi(metrics + 9);
}

int tu_shard_stop(tu_shard_t *p, int sig)
{
    kill(p->pid, sig);
    int st = 0;
    waitpid(p->pid, &st, 0);
    fclose(p->out);
    return st;
}

void tu_wait_owner(const tu_etcd_t *e, const char *cluster, int part, int owner, double secs)
{
    fs_etcd_t *h;
    fs_error_t err;
    cr_assert_eq(fs_etcd_open(e->endpoint, 2000, &h, &err), FS_OK, "%s", err.msg);
    for (int i = 0;; i++) {
        fs_shard_map_t m;
        int now = -2;
        if (fs_cluster_read_map(h, cluster, &m, &err) == FS_OK) now = m.owner[part], fs_shard_map_free(&m);
        if (now == owner) break;
        cr_assert_lt(i * 0.1, secs, "part %d's owner is %d after %.0f s, not %d", part, now, secs, owner);
        usleep(100 * 1000);
    }
    fs_etcd_close(h);
}

void tu_cluster_up(char **dir, tu_etcd_t *e)
{
    *dir = tu_mkdtemp();
    tu_etcd_start(e);
}

void tu_cluster_down(char **dir, tu_etcd_t *e)
{
    tu_etcd_stop(e);
    tu_rm_rf(*dir);
    free(*dir);
    *dir = NULL;
}
