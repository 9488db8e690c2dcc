/* test_serve.c — `featstore serve` as operators run it: a child process on a
 * socket and an ephemeral metrics port, trainers in other processes, the
 * HTTP endpoint checked by promtool, bad configuration refused with a clear
 * message, and SIGTERM leading to a clean exit 0 with the socket removed. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "featstore/client.h"
#include "test_util.h"

static char *dir, *data, sock[256];

static void setup(void)
{
    dir = tu_mkdtemp();
    data = tu_path(dir, "g");
    snprintf(sock, sizeof sock, "%s/s.sock", dir);
    char *log;
    cr_assert_eq(tu_run(&log, "%s gen rmat --scale 11 --edge-factor 8 --dim 16 --symmetrize --out %s", tu_bin(), data), 0,
                 "%s", log);
    free(log);
}

static void teardown(void)
{
    tu_rm_rf(dir);
    free(dir);
    free(data);
}

TestSuite(serve, .init = setup, .fini = teardown, .timeout = 120);

typedef struct {
    pid_t pid;
    FILE *out;
    int grpc_port, metrics_port;
} server_t;

/* Starts `featstore serve` with extra arguments and waits for READY. */
static int start(server_t *s, const char *extra)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    s->pid = fork();
    if (s->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* the server never outlives the test */
        dup2(p[1], 1);
        close(p[0]);
        char cmd[2048];
        snprintf(cmd, sizeof cmd, "exec %s serve %s --socket %s --listen 127.0.0.1:0 --metrics 127.0.0.1:0 %s", tu_bin(),
                 data, sock, extra);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    s->out = fdopen(p[0], "r");
    char line[512];
    if (!fgets(line, sizeof line, s->out)) return -1; /* exited before READY */
    cr_assert(sscanf(line, "READY unix=%*s grpc=127.0.0.1:%d metrics=%d", &s->grpc_port, &s->metrics_port) == 2,
              "bad READY line: %s", line);
    return 0;
}

static int stop(server_t *s, int sig)
{
    kill(s->pid, sig);
    int st;
    waitpid(s->pid, &st, 0);
    fclose(s->out);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A minimal HTTP/1.0 GET; returns the whole response (headers + body). */
static char *http_get(int port, const char *path)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    char req[256];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n", path);
    cr_assert_eq(write(fd, req, (size_t)n), n);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    ssize_t r;
    while ((r = read(fd, buf + len, cap - len - 1)) > 0)
        if ((len += (size_t)r) + 1 == cap) buf = realloc(buf, cap *= 2);
    buf[len] = '\0';
    close(fd);
    return buf;
}

Test(serve, serves_trainers_exposes_metrics_and_stops_cleanly)
{
    server_t s;
    cr_assert_eq(start(&s, ""), 0);
    char *log;
    int rc = tu_run(&log, "%s/../examples/featstore-trainer unix://%s --batches 5 --batch 64 --fanouts 5,3 & "
                          "%s/../examples/featstore-trainer unix://%s --batches 5 --batch 64 --fanouts 5,3 --seed 2 & "
                          "%s/../examples/featstore-trainer grpc://127.0.0.1:%d --batches 5 --batch 64 --fanouts 5,3; wait",
                    FS_BIN_DIR, sock, FS_BIN_DIR, sock, FS_BIN_DIR, s.grpc_port);
    cr_assert_eq(rc, 0, "%s", log);
    cr_assert_not_null(strstr(log, "TRAINER name=trainer transport=unix batches=5"), "%s", log);
    cr_assert_not_null(strstr(log, "TRAINER name=trainer transport=grpc batches=5"), "%s", log);
    free(log);

    char *health = http_get(s.metrics_port, "/healthz");
    cr_assert_not_null(strstr(health, "200 OK"), "%s", health);
    free(health);
    char *metrics = NULL;
    for (int i = 0; i < 100; i++) { /* reports are asynchronous */
        free(metrics);
        metrics = http_get(s.metrics_port, "/metrics");
        if (strstr(metrics, "featstore_requests_total{method=\"SampleGather\",transport=\"unix\"} 10\n")) break;
        usleep(20000);
    }
    cr_assert_not_null(strstr(metrics, "featstore_requests_total{method=\"SampleGather\",transport=\"unix\"} 10\n"),
                       "%s", metrics);
    cr_assert_not_null(strstr(metrics, "featstore_dataset_nodes{dataset=\"rmat-s11-e8\"} 2048"), "%s", metrics);
    cr_assert_not_null(strstr(metrics, "featstore_requests_total{method=\"SampleGather\",transport=\"grpc\"} 5\n"),
                       "%s", metrics);
    cr_assert_not_null(strstr(metrics, "featstore_tier_used_bytes{tier=\"0\",kind=\"host\""), "%s", metrics);
    char *body = strstr(metrics, "\r\n\r\n");
    cr_assert_not_null(body);
    if (tu_run(NULL, "command -v promtool >/dev/null") == 0) {
        char *file = tu_path(dir, "metrics.txt");
        tu_write(file, body + 4, strlen(body + 4));
        cr_assert_eq(tu_run(&log, "promtool check metrics < %s", file), 0, "promtool: %s", log);
        free(log), free(file);
    }
    free(metrics);
    char *nf = http_get(s.metrics_port, "/nope");
    cr_assert_not_null(strstr(nf, "404"), "%s", nf);
    free(nf);

    cr_assert_eq(stop(&s, SIGTERM), 0, "SIGTERM gives exit 0");
    cr_assert_neq(access(sock, F_OK), 0, "socket removed on shutdown");
}

Test(serve, sigint_also_stops_cleanly_and_clients_see_it)
{
    server_t s;
    cr_assert_eq(start(&s, ""), 0);
    fs_client_t *c;
    char uri[300];
    snprintf(uri, sizeof uri, "unix://%s", sock);
    cr_assert_eq(fs_connect(uri, &c), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(stop(&s, SIGINT), 0);
    fs_info_t *info;
    cr_assert_eq(fs_info(c, &info), FS_ERR_UNAVAILABLE);
    fs_close(c);
}

Test(serve, refuses_bad_configuration_with_a_clear_message)
{
    char *log, *cfg = tu_path(dir, "bad.json");
    tu_write(cfg, "{\"limits\": {\"max_ids\": -3}}", 27);
    cr_assert_eq(tu_run(&log, "timeout 30 %s serve %s --socket %s --config %s", tu_bin(), data, sock, cfg), 1);
    cr_assert_not_null(strstr(log, "limits.max_ids must be a positive integer"), "%s", log);
    free(log);
    tu_write(cfg, "{\"bogus\": 1}", 12);
    cr_assert_eq(tu_run(&log, "timeout 30 %s serve %s --socket %s --config %s", tu_bin(), data, sock, cfg), 1);
    cr_assert_not_null(strstr(log, "unknown key \"bogus\""), "%s", log);
    free(log);
    cr_assert_eq(tu_run(&log, "timeout 30 %s serve %s/nope --socket %s", tu_bin(), dir, sock), 1);
    cr_assert_not_null(strstr(log, "manifest.json"), "%s", log);
    free(log);
    cr_assert_eq(tu_run(&log, "timeout 30 %s serve %s --socket %s --metrics nonsense", tu_bin(), data, sock), 1);
    cr_assert_not_null(strstr(log, "HOST:PORT"), "%s", log);
    free(log);
    free(cfg);
}

Test(serve, a_second_server_on_a_live_socket_is_refused)
{
    server_t s;
    cr_assert_eq(start(&s, ""), 0);
    char *log;
    cr_assert_eq(tu_run(&log, "timeout 30 %s serve %s --socket %s --metrics 127.0.0.1:0", tu_bin(), data, sock), 1);
    cr_assert_not_null(strstr(log, "in use"), "%s", log);
    free(log);
    cr_assert_eq(stop(&s, SIGTERM), 0);
}

Test(serve, a_preset_places_data_on_simulated_gpus_and_trainers_read_it)
{
    server_t s;
    char *plan = tu_path(dir, "plan.bin"), extra[512];
    snprintf(extra, sizeof extra, "--topology nvlink-pairs --gpu-budget 0.2 --feature-first --save-plan %s", plan);
    cr_assert_eq(start(&s, extra), 0);
    char *log;
    cr_assert_eq(tu_run(&log, "%s/../examples/featstore-trainer unix://%s --batches 5 --batch 64 --fanouts 5,3 --device gpu:0",
                        FS_BIN_DIR, sock), 0, "%s", log);
    free(log);
    char *metrics = NULL, *line = NULL;
    for (int i = 0; i < 100 && !line; i++) {
        free(metrics);
        metrics = http_get(s.metrics_port, "/metrics");
        if (strstr(metrics, "featstore_requests_total{method=\"SampleGather\",transport=\"unix\"} 5\n"))
            line = strstr(metrics, "featstore_feature_rows_read_total{reader=\"local\",tier=\"1\",kind=\"sim_device\",device=\"0\"}");
        else usleep(20000);
    }
    cr_assert_not_null(line, "%s", metrics);
    cr_assert_gt(atoll(strchr(line, '}') + 2), 0, "the trainer on gpu:0 read rows from its simulated GPU");
    free(metrics);
    cr_assert_eq(stop(&s, SIGTERM), 0);
    /* the saved plan reloads and serves the same placement */
    snprintf(extra, sizeof extra, "--topology nvlink-pairs --gpu-budget 0.2 --feature-first --plan %s", plan);
    cr_assert_eq(start(&s, extra), 0);
    cr_assert_eq(stop(&s, SIGTERM), 0);
    cr_assert_eq(tu_run(&log, "timeout 30 %s serve %s --socket %s --topology nope", tu_bin(), data, sock), 1);
    cr_assert_not_null(strstr(log, "nope"), "%s", log);
    free(log);
    cr_assert_eq(tu_run(&log, "timeout 30 %s serve %s --socket %s --gpu-budget 0.1", tu_bin(), data, sock), 2);
    cr_assert_not_null(strstr(log, "need --topology"), "%s", log);
    free(log);
    cr_assert_eq(tu_run(&log, "timeout 30 %s serve %s --socket %s --topology dgx1-v100 --plan %s", tu_bin(), data, sock, plan), 1);
    cr_assert_not_null(strstr(log, "GPUs"), "a plan for another topology is refused: %s", log);
    free(log);
    free(plan);
}

/* The share of a reader's feature bytes from `source`, predicted or measured. */
static double share(const char *metrics, const char *kind, const char *reader, const char *source)
{
    char key[200];
    snprintf(key, sizeof key, "featstore_placement_%s_share{reader=\"%s\",source=\"%s\"} ", kind, reader, source);
    const char *p = strstr(metrics, key);
    cr_assert_not_null(p, "no %s in %s", key, metrics);
    return atof(p + strlen(key));
}

Test(serve, the_plans_prediction_sits_next_to_what_trainers_read)
{
    server_t s;
    cr_assert_eq(start(&s, "--topology nvlink-pairs --gpu-budget 0.2 --feature-first"), 0);
    char *log;
    cr_assert_eq(tu_run(&log, "%s/../examples/featstore-trainer unix://%s --batches 20 --device gpu:1", FS_BIN_DIR, sock),
                 0, "%s", log);
    free(log);
    char *metrics = NULL;
    for (int i = 0; i < 100; i++) {
        free(metrics);
        metrics = http_get(s.metrics_port, "/metrics");
        if (strstr(metrics, "featstore_requests_total{method=\"SampleGather\",transport=\"unix\"} 20\n")) break;
        usleep(20000);
    }
    /* the trainer runs the workload the plan was costed with ([15,10,5] x 1024) */
    const char *src[] = {"local", "peer", "host"};
    double sum = 0;
    for (int k = 0; k < 3; k++) {
        double want = share(metrics, "predicted", "gpu1", src[k]), got = share(metrics, "measured", "gpu1", src[k]);
        cr_assert(fabs(want - got) < 0.03, "%s: predicted %.4f, measured %.4f", src[k], want, got);
        sum += got;
    }
    cr_assert(fabs(sum - 1) < 1e-3, "shares add up to 1");
    cr_assert_gt(share(metrics, "measured", "gpu1", "local"), 0.05, "gpu:1 reads its own copy");
    cr_assert_eq(share(metrics, "measured", "gpu0", "local"), 0, "nobody read as gpu:0");
    free(metrics);

    /* Info carries the same, per reader */
    fs_client_t *c;
    char uri[300];
    snprintf(uri, sizeof uri, "unix://%s", sock);
    cr_assert_eq(fs_connect(uri, &c), FS_OK, "%s", fs_client_errstr(c));
    fs_info_t *info;
    cr_assert_eq(fs_info(c, &info), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(info->num_readers, 4, "one entry per planned GPU");
    cr_assert_eq(info->placement[1].reader, 1);
    cr_assert_gt(info->placement[1].predicted_bytes[0], 0);
    cr_assert_gt(info->placement[1].measured_bytes[0] + info->placement[1].measured_bytes[2], 0);
    cr_assert_eq(info->placement[0].measured_bytes[0] + info->placement[0].measured_bytes[1] +
                 info->placement[0].measured_bytes[2], 0);
    fs_info_free(info);
    fs_close(c);
    cr_assert_eq(stop(&s, SIGTERM), 0);
}
