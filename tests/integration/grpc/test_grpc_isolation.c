/* test_grpc_isolation.c — one gRPC client cannot stall another (1.1):
 * clients that stop reading (a Python client, tests/integration/grpc/grpc_stalled_client.py)
 * block no other client of a 2-worker server; calls past the server's cap
 * are refused at once and counted; a call parked past its deadline, or past
 * the server's request timeout when it sent none, is ended and freed by the
 * server even when its client is frozen (SIGSTOP); and a connection belongs
 * to the process that opened it: a forked child is refused at once, never
 * left hanging. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "featstore/client.h"
#include "fs_wire.h"
#include "grpc_fixture.h"
#include "test_util.h"

TestSuite(grpc, .timeout = 120);
/* ---- isolation: clients that stop reading, the cap, deadlines -------------------------- */

static void need_python_grpc(void)
{
    if (tu_run(NULL, "/usr/bin/python3 -c 'import grpc'") != 0) cr_skip_test("/usr/bin/python3 lacks grpc");
}

/* Polls a metric until it equals want (up to 30 s, never a timing assertion:
 * the caller asserts the value); returns the last value read. */
static long long wait_metric(fs_metrics_t *m, const char *key, long long want)
{
    long long v = metric(m, key);
    for (int i = 0; i < 300 && v != want; i++) {
        usleep(100 * 1000);
        v = metric(m, key);
    }
    return v;
}

/* tests/integration/grpc/grpc_stalled_client.py as a child process, returned once its calls
 * are started (it prints STALLED); killed with stalled_kill. */
static pid_t stalled_start(int port, const char *args)
{
    FILE *f;
    pid_t pid = tu_spawn(&f, "/usr/bin/python3 %s/grpc_stalled_client.py --port %d %s", FS_TESTS_SRC_DIR, port, args);
    char line[128] = "";
    cr_assert_not_null(fgets(line, sizeof line, f), "the stalled client exited before its calls started");
    cr_assert(strncmp(line, "STALLED", 7) == 0, "%s", line);
    fclose(f);
    return pid;
}

static void stalled_kill(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

#define IN_FLIGHT "featstore_grpc_calls_in_flight"

Test(grpc, clients_that_stop_reading_block_no_other_client)
{
    need_python_grpc();
    env_t e;
    env_open(&e, FS_DTYPE_F32, 64, NULL); /* 2 workers; each stalled call asks for 51 MB */
    pid_t stalled = stalled_start(e.port, "--calls 4 --ids 200000");
    cr_assert_eq(wait_metric(e.metrics, IN_FLIGHT, 4), 4, "the four stalled calls reach the server");
    /* twice as many stalled calls as workers, and another client is served in full; a deadline turns a
     * regression into a failure instead of a hang */
    fs_connect_opts_t o = FS_CONNECT_OPTS_INIT;
    o.timeout_ms = 60000;
    fs_client_t *c;
    cr_assert_eq(fs_connect(e.uri, &o, &c), FS_OK, "%s", fs_client_errstr(c));
    int64_t n = 30000;
    int64_t *ids = some_ids(n, e.ds->num_nodes, 21);
    void *want = gather_in_process(&e, "feat", ids, n, FS_DTYPE_F32, 256);
    fs_sample_req_t req = SAMPLE_REQ(.num_hops = 2, .fanout = {10, 5}, .seed = 4);
    for (int k = 0; k < 3; k++) {
        fs_batch_t *b;
        cr_assert_eq(fs_gather(c, ids, n, "feat", FS_DTYPE_F32, &b), FS_OK, "%s", fs_client_errstr(c));
        cr_assert(memcmp(b->features, want, (size_t)n * 256) == 0, "gathered rows differ");
        fs_batch_free(b);
        cr_assert_eq(fs_sample_gather(c, ids, 500, &req, "feat", FS_DTYPE_F32, &b), FS_OK, "%s", fs_client_errstr(c));
        fs_batch_free(b);
        fs_info_t *info;
        cr_assert_eq(fs_info(c, &info), FS_OK, "%s", fs_client_errstr(c));
        fs_info_free(info);
    }
    /* waited for: the server counts our last call out only after its status is sent, so for a moment there are 5 */
    cr_assert_eq(wait_metric(e.metrics, IN_FLIGHT, 4), 4, "the stalled calls are still parked, not finished");
    stalled_kill(stalled);
    cr_assert_eq(wait_metric(e.metrics, IN_FLIGHT, 0), 0, "a client that goes away frees its calls");
    free(want);
    free(ids);
    fs_close(c);
    env_close(&e);
}

Test(grpc, calls_past_the_cap_are_refused_at_once)
{
    need_python_grpc();
    env_t e;
    fs_grpc_server_opts_t go;
    fs_grpc_server_defaults(&go);
    go.threads = 2, go.max_calls = 2;
    env_open_with(&e, FS_DTYPE_F32, 64, NULL, &go);
    pid_t stalled = stalled_start(e.port, "--calls 2");
    cr_assert_eq(wait_metric(e.metrics, IN_FLIGHT, 2), 2);
    fs_client_t *c = connect_to(&e);
    fs_info_t *info;
    cr_assert_eq(fs_info(c, &info), FS_ERR_RESOURCE);
    cr_assert(strstr(fs_client_errstr(c), "maximum of 2 gRPC calls at once (serve --grpc-max-calls)"), "%s",
              fs_client_errstr(c));
    char details[512];
    const unsigned char v1[] = {0x08, 0x01};
    cr_assert_eq(raw_call(e.port, FS_WIRE_METHOD_INFO, v1, sizeof v1, details, sizeof details),
                 GRPC_STATUS_RESOURCE_EXHAUSTED, "%s", details);
    cr_assert_eq(metric(e.metrics, "featstore_grpc_calls_refused_total{reason=\"max_calls\"}"), 2);
    stalled_kill(stalled);
    cr_assert_eq(wait_metric(e.metrics, IN_FLIGHT, 0), 0);
    cr_assert_eq(fs_info(c, &info), FS_OK, "room again once the stalled calls are gone: %s", fs_client_errstr(c));
    fs_info_free(info);
    fs_close(c);
    env_close(&e);
}

/* The client freezes (SIGSTOP) right after starting a call with a 1 s
 * deadline, so nothing of its own ever cancels the call: the server must. */
Test(grpc, a_parked_call_past_its_deadline_is_cancelled_and_freed_by_the_server)
{
    need_python_grpc();
    env_t e;
    env_open(&e, FS_DTYPE_F32, 64, NULL);
    pid_t stalled = stalled_start(e.port, "--calls 1 --timeout 1 --stop");
    long long ended = wait_metric(e.metrics, "featstore_grpc_calls_deadline_exceeded_total", 1);
    long long in_flight = wait_metric(e.metrics, IN_FLIGHT, 0);
    stalled_kill(stalled);
    cr_assert_eq(ended, 1, "the parked call was ended for its deadline");
    cr_assert_eq(in_flight, 0, "and freed");
    fs_client_t *c = connect_to(&e);
    fs_info_t *info;
    cr_assert_eq(fs_info(c, &info), FS_OK, "%s", fs_client_errstr(c));
    fs_info_free(info);
    fs_close(c);
    env_close(&e);
}

/* A frozen client that sent no deadline at all: the server's own request
 * timeout ends its call and gives its place under the cap back. */
Test(grpc, a_call_without_a_deadline_ends_at_the_servers_request_timeout)
{
    need_python_grpc();
    env_t e;
    fs_grpc_server_opts_t go;
    fs_grpc_server_defaults(&go);
    go.threads = 2, go.max_calls = 1, go.request_timeout_ms = 500;
    env_open_with(&e, FS_DTYPE_F32, 64, NULL, &go);
    pid_t stalled = stalled_start(e.port, "--calls 1 --stop");
    long long ended = wait_metric(e.metrics, "featstore_grpc_calls_deadline_exceeded_total", 1);
    long long in_flight = wait_metric(e.metrics, IN_FLIGHT, 0);
    fs_client_t *c = connect_to(&e);
    fs_info_t *info;
    fs_status_t st = fs_info(c, &info);
    stalled_kill(stalled);
    cr_assert_eq(ended, 1, "the parked call was ended by the server's request timeout");
    cr_assert_eq(in_flight, 0, "and freed");
    cr_assert_eq(st, FS_OK, "the only place under the cap is free again: %s", fs_client_errstr(c));
    fs_info_free(info);
    cr_assert_eq(metric(e.metrics, "featstore_grpc_calls_deadline_exceeded_total"), 1, "counted once");
    fs_close(c);
    env_close(&e);
}

/* ---- fork: a connection belongs to the process that opened it ----------------- */

/* The forked child's side of a_forked_child_is_refused_at_once: "" when
 * all held, else the first thing that did not. */
static const char *grpc_child(const env_t *e, fs_client_t *c, fs_batch_t *held, pid_t parent, char *why, size_t cap)
{
    char opener[64];
    snprintf(opener, sizeof opener, "opened by process %ld", (long)parent);
    int64_t ids[3] = {1, 2, 3};
    fs_batch_t *b = NULL;
    if (fs_gather(c, ids, 3, "feat", FS_DTYPE_F32, &b) != FS_ERR_INVALID_ARGUMENT || b ||
        !strstr(fs_client_errstr(c), opener)) {
        snprintf(why, cap, "a call on the inherited connection: %s", fs_client_errstr(c));
        return why;
    }
    fs_client_t *own;
    fs_status_t st = fs_connect(e->uri, NULL, &own); /* refused at once, where gRPC would hang */
    if (st != FS_ERR_UNSUPPORTED || !strstr(fs_client_errstr(own), "do not survive fork()")) {
        snprintf(why, cap, "a new grpc:// connection while the parent's is open: %s (%s)", fs_strerror(st),
                 fs_client_errstr(own));
        return why;
    }
    fs_close(own);
    fs_batch_free(held);
    fs_close(c); /* leaves the channel to the parent: gRPC's threads are there */
    return "";
}

/* The child forked after its parent closed its connection: gRPC still runs
 * there, for the server this test process holds, so it is refused too. */
static const char *grpc_child_after_close(const env_t *e, pid_t parent, char *why, size_t cap)
{
    char from[64];
    snprintf(from, sizeof from, "forked from process %ld while that was running gRPC", (long)parent);
    fs_client_t *own;
    fs_status_t st = fs_connect(e->uri, NULL, &own);
    if (st != FS_ERR_UNSUPPORTED || !strstr(fs_client_errstr(own), from)) {
        snprintf(why, cap, "a connection with gRPC running in the parent: %s (%s)", fs_strerror(st),
                 fs_client_errstr(own));
        return why;
    }
    fs_close(own);
    return "";
}

/* Forks; the child runs `body` (mode 0: grpc_child, 1: grpc_child_after_close)
 * and reports through a pipe. A minute is a hang guard, not a timing check. */
static void run_child(const env_t *e, int mode, fs_client_t *c, fs_batch_t *held)
{
    int report[2];
    cr_assert_eq(pipe(report), 0);
    pid_t parent = getpid(), pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        char why[800];
        const char *bad = mode == 0 ? grpc_child(e, c, held, parent, why, sizeof why)
                                    : grpc_child_after_close(e, parent, why, sizeof why);
        ssize_t n = write(report[1], bad, strlen(bad) + 1);
        _exit(bad[0] != 0 || n <= 0);
    }
    close(report[1]);
    int st = 0, i = 0;
    while (waitpid(pid, &st, WNOHANG) == 0 && i++ < 6000) usleep(10000);
    if (i > 6000) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
    char why[800] = "";
    ssize_t got = read(report[0], why, sizeof why - 1);
    close(report[0]);
    cr_assert(got > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d: %s", mode,
              got > 0 ? why : "no report: it hung or crashed");
}

/* gRPC's threads stay in the process that started them. A child forked
 * while the parent has a grpc:// connection open may not use it (refused
 * naming the opener) and cannot open its own (refused at once with the
 * reason, where the channel would otherwise never connect); its fs_close
 * leaves the parent's connection working. With the parent's connection
 * closed, gRPC still runs here for the in-process server, and a child is
 * still refused. (A child of a process that no longer runs gRPC connects:
 * test_python_safety, whose server is another process.) */
Test(grpc, a_forked_child_is_refused_at_once)
{
    env_t e;
    env_open(&e, FS_DTYPE_F32, 16, NULL);
    fs_client_t *c = connect_to(&e);
    int64_t ids[4] = {7, 3, 7, 100};
    fs_batch_t *held, *b;
    cr_assert_eq(fs_gather(c, ids, 4, "feat", FS_DTYPE_F32, &held), FS_OK, "%s", fs_client_errstr(c));
    run_child(&e, 0, c, held);
    cr_assert_eq(fs_gather(c, ids, 4, "feat", FS_DTYPE_F32, &b), FS_OK, "the parent's connection: %s",
                 fs_client_errstr(c));
    cr_assert(memcmp(b->features, held->features, 4 * e.ds->tables[0].row_bytes) == 0);
    fs_batch_free(b);
    fs_batch_free(held);
    fs_close(c);
    run_child(&e, 1, NULL, NULL);
    env_close(&e);
}
