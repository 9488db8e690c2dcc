/* test_local_processes.c — many processes on one unix:// server: 8 client
 * processes at once, counted by the server; a client killed with SIGKILL
 * mid-stream costs the others nothing, and its socket and slot descriptors
 * are released; a forked child's every call on its parent's connection is
 * refused naming the opener, its fs_close harmless, its own connection right
 * and the parent's batch and stream intact; a closed connection's slots
 * serve the process's next one warm, and a forked child leaves its parent's
 * warm slots alone. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "featstore/admin.h"
#include "featstore/client.h"
#include "local_fixture.h"
#include "test_util.h"

TestSuite(local, .init = setup, .fini = teardown, .timeout = 600);
static void wait_clients(int n)
{
    for (int i = 0; i < 500 && fs_local_server_clients(server) != n; i++) usleep(10000);
    cr_assert_eq(fs_local_server_clients(server), n, "server sees %d clients", fs_local_server_clients(server));
}

Test(local, eight_client_processes_at_once)
{
    pid_t pid[8];
    for (int k = 0; k < 8; k++) {
        if ((pid[k] = fork()) == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the test */
            fs_client_t *c;
            int bad = fs_connect(uri, NULL, &c) != FS_OK;
            for (int it = 0; it < 10 && !bad; it++) {
                int64_t seeds[256];
                seeds_for(seeds, 256, k * 100 + it);
                fs_sample_req_t req = req3((uint64_t)(k * 1000 + it));
                fs_batch_t *b;
                bad |= fs_sample_gather(c, seeds, 256, &req, "feat", FS_DTYPE_F32, &b) != FS_OK;
                bad |= !bad && differs(b, seeds, 256, &req);
                fs_batch_free(b);
            }
            fs_close(c);
            _exit(bad);
        }
    }
    for (int k = 0; k < 8; k++) {
        int st;
        waitpid(pid[k], &st, 0);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "client process %d failed", k);
    }
    wait_clients(0);
    /* the server counted their reports */
    fs_client_t *c = connect_ok();
    char *text = NULL;
    for (int i = 0; i < 100; i++) {
        fs_stats_free(text);
        cr_assert_eq(fs_stats(c, &text), FS_OK, "%s", fs_client_errstr(c));
        if (strstr(text, "featstore_requests_total{method=\"SampleGather\",transport=\"unix\"} 80\n")) break;
        usleep(10000);
    }
    cr_assert_not_null(strstr(text, "featstore_requests_total{method=\"SampleGather\",transport=\"unix\"} 80\n"), "%s", text);
    fs_stats_free(text);
    fs_close(c);
}

static int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

Test(local, a_killed_client_costs_the_others_nothing)
{
    int before = count_fds();
    int ready[2];
    cr_assert_eq(pipe(ready), 0);
    pid_t victim = fork();
    if (victim == 0) { /* connects, then samples until killed */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        fs_client_t *c;
        if (fs_connect(uri, NULL, &c) != FS_OK) _exit(1);
        if (write(ready[1], "x", 1) != 1) _exit(1);
        for (uint64_t it = 0;; it++) {
            int64_t seeds[256];
            seeds_for(seeds, 256, (int)it);
            fs_sample_req_t req = req3(it);
            fs_batch_t *b;
            if (fs_sample_gather(c, seeds, 256, &req, "feat", FS_DTYPE_F32, &b) == FS_OK) fs_batch_free(b);
        }
    }
    char x;
    cr_assert_eq(read(ready[0], &x, 1), 1);
    wait_clients(1);
    fs_client_t *c = connect_ok();
    wait_clients(2);
    usleep(50000); /* mid-stream */
    kill(victim, SIGKILL);
    waitpid(victim, NULL, 0);
    wait_clients(1);
    int64_t seeds[256];
    seeds_for(seeds, 256, 9);
    fs_sample_req_t req = req3(9);
    fs_batch_t *b;
    cr_assert_eq(fs_sample_gather(c, seeds, 256, &req, "feat", FS_DTYPE_F32, &b), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_not(differs(b, seeds, 256, &req));
    fs_batch_free(b);
    fs_close(c);
    wait_clients(0);
    close(ready[0]), close(ready[1]);
    cr_assert_eq(count_fds(), before, "every descriptor of the dead client (socket, slots) was released");
}

/* ---- fork: a connection belongs to the process that opened it ----------------- */

/* Waits for a child, killing it if it has not finished in a minute (a hang
 * guard, not a timing check); returns its exit status, or -1. */
static int wait_child(pid_t pid)
{
    int st = 0;
    for (int i = 0; i < 6000 && waitpid(pid, &st, WNOHANG) == 0; i++) usleep(10000);
    if (waitpid(pid, &st, WNOHANG) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        return -1;
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* In the forked child: what it may and may not do with its parent's
 * connection c. "" when all held, else the first thing that did not. */
static const char *child_with_inherited(fs_client_t *c, fs_batch_t *held, pid_t parent, char *why, size_t cap)
{
    fs_batch_free(held); /* the child's copy: its slot is free in the child's eyes only */
    char opener[64];
    snprintf(opener, sizeof opener, "opened by process %ld", (long)parent);
    int64_t seeds[64];
    seeds_for(seeds, 64, 8);
    fs_sample_req_t req = req3(8);
    fs_batch_t *b = NULL;
    fs_info_t *info = NULL;
    fs_ids_t *ids = NULL;
    char *text = NULL;
    uint64_t gen = 0;
    double s = 0;
    const char *what[] = {"fs_gather", "fs_sample", "fs_sample_gather", "fs_info", "fs_split", "fs_stats",
                          "fs_replan", "fs_report_load_ratio"};
    for (int k = 0; k < 8; k++) {
        fs_status_t st = k == 0 ? fs_gather(c, seeds, 64, "feat", FS_DTYPE_F32, &b)
                       : k == 1 ? fs_sample(c, seeds, 64, &req, &b)
                       : k == 2 ? fs_sample_gather(c, seeds, 64, &req, "feat", FS_DTYPE_F32, &b)
                       : k == 3 ? fs_info(c, &info)
                       : k == 4 ? fs_split(c, "train", &ids)
                       : k == 5 ? fs_stats(c, &text)
                       : k == 6 ? fs_replan(c, NULL, &gen)
                                : fs_report_load_ratio(c, 0.5, &s);
        if (st != FS_ERR_INVALID_ARGUMENT || b || info || ids || text) {
            snprintf(why, cap, "%s on the inherited connection: %s (%s)", what[k], fs_strerror(st),
                     fs_client_errstr(c));
            return why;
        }
        if (!strstr(fs_client_errstr(c), opener) || !strstr(fs_client_errstr(c), "fs_connect again")) {
            snprintf(why, cap, "%s: the message does not name the opener and the remedy: %s", what[k],
                     fs_client_errstr(c));
            return why;
        }
    }
    fs_close(c); /* frees the child's copies; the worker pool's thread is the parent's and is not joined */
    fs_client_t *own;
    if (fs_connect(uri, NULL, &own) != FS_OK) {
        snprintf(why, cap, "the child's own connection: %s", fs_client_errstr(own));
        return why;
    }
    for (int it = 0; it < 20; it++) { /* the parent is calling at the same time */
        seeds_for(seeds, 64, 100 + it);
        req = req3(100 + (uint64_t)it);
        if (fs_sample_gather(own, seeds, 64, &req, "feat", FS_DTYPE_F32, &b) != FS_OK || differs(b, seeds, 64, &req)) {
            snprintf(why, cap, "batch %d of the child's own connection is wrong: %s", it, fs_client_errstr(own));
            return why;
        }
        fs_batch_free(b);
    }
    fs_close(own);
    return "";
}

/* A child forked after fs_connect (a data-loader worker) shares the
 * parent's socket and result slots. Every call it makes on the inherited
 * connection is refused naming the opener; its fs_close frees its own
 * copies and sends nothing; its own new connection works.
 * The parent's batch keeps its rows (the child freed its copy, so without
 * the check the child's results would land in that very slot) and the
 * parent's connection keeps its stream. */
Test(local, a_forked_child_must_connect_again)
{
    fs_connect_opts_t o = FS_CONNECT_OPTS_INIT;
    o.threads = 2;
    fs_client_t *c;
    cr_assert_eq(fs_connect(uri, &o, &c), FS_OK, "%s", fs_client_errstr(c));
    int64_t seeds[256];
    seeds_for(seeds, 256, 5);
    fs_sample_req_t req = req3(5);
    fs_batch_t *held;
    cr_assert_eq(fs_sample_gather(c, seeds, 256, &req, "feat", FS_DTYPE_F32, &held), FS_OK, "%s", fs_client_errstr(c));
    int report[2];
    cr_assert_eq(pipe(report), 0);
    pid_t parent = getpid(), child = fork();
    if (child == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        char why[800];
        const char *bad = child_with_inherited(c, held, parent, why, sizeof why);
        ssize_t n = write(report[1], bad, strlen(bad) + 1);
        _exit(bad[0] != 0 || n <= 0);
    }
    close(report[1]);
    for (int it = 0; it < 20; it++) { /* meanwhile, the parent's own calls */
        int64_t s2[64];
        seeds_for(s2, 64, 200 + it);
        fs_sample_req_t r2 = req3(200 + (uint64_t)it);
        fs_batch_t *b;
        cr_assert_eq(fs_sample_gather(c, s2, 64, &r2, "feat", FS_DTYPE_F32, &b), FS_OK, "%s", fs_client_errstr(c));
        cr_assert_not(differs(b, s2, 64, &r2), "the parent's batch %d is wrong", it);
        fs_batch_free(b);
    }
    int status = wait_child(child);
    char why[800] = "";
    ssize_t got = read(report[0], why, sizeof why - 1); /* the child has ended: never blocks */
    close(report[0]);
    cr_assert(got > 0 && status == 0, "the child: status %d, %s", status, got > 0 ? why : "(no report)");
    cr_assert_not(differs(held, seeds, 256, &req), "the parent's held batch changed under it");
    wait_clients(1); /* the child's fs_close ended nothing of the parent's */
    char *text = NULL;
    cr_assert_eq(fs_stats(c, &text), FS_OK, "the parent's stream: %s", fs_client_errstr(c));
    cr_assert_not_null(strstr(text, "featstore_requests_total"));
    fs_stats_free(text);
    fs_info_t *info = NULL;
    cr_assert_eq(fs_info(c, &info), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(info->num_nodes, ds->num_nodes);
    fs_info_free(info);
    fs_batch_free(held);
    fs_close(c);
}

/* The result slots this process maps ("[anon:featstore-slot-N]" in
 * /proc/self/maps: client_local.c names them), by N, each once; returns
 * how many. */
static int mapped_slots(unsigned long *ids, int cap)
{
    FILE *f = fopen("/proc/self/maps", "re");
    cr_assert_not_null(f);
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        const char *at = strstr(line, "[anon:featstore-slot-");
        unsigned long i;
        if (!at || sscanf(at, "[anon:featstore-slot-%lu]", &i) != 1) continue;
        int seen = 0;
        for (int k = 0; k < n; k++) seen |= ids[k] == i;
        if (!seen && n < cap) ids[n++] = i;
    }
    fclose(f);
    return n;
}

/* Slots are counted by their names, which need Linux 5.17's
 * PR_SET_VMA_ANON_NAME (CONFIG_ANON_VMA_NAME). */
static void skip_unless_anon_names(void)
{
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(p, MAP_FAILED);
    int ok = prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)p, 4096, (unsigned long)"probe") == 0;
    munmap(p, 4096);
    if (!ok) cr_skip_test("this kernel cannot name anonymous mappings (PR_SET_VMA_ANON_NAME): slots cannot be counted");
}

static int has_id(const unsigned long *ino, int n, unsigned long i)
{
    for (int k = 0; k < n; k++)
        if (ino[k] == i) return 1;
    return 0;
}

/* A connection that goes leaves its populated slots to the next one of the
 * process (client_local.c, "Warm slots"): the next batch lands in the same
 * mapping, right, and without touching a slot that holds a batch; the last
 * connection's close unmaps them all. */
Test(local, a_closed_connections_slots_serve_the_next_one_warm)
{
    skip_unless_anon_names();
    int64_t seeds[256];
    seeds_for(seeds, 256, 11);
    fs_sample_req_t req = req3(11);
    fs_client_t *a = connect_ok(), *b = connect_ok();
    fs_batch_t *held, *x, *y;
    cr_assert_eq(fs_sample_gather(a, seeds, 256, &req, "feat", FS_DTYPE_F32, &held), FS_OK, "%s", fs_client_errstr(a));
    cr_assert_eq(fs_sample_gather(b, seeds, 128, &req, "feat", FS_DTYPE_F32, &x), FS_OK, "%s", fs_client_errstr(b));
    const void *where = x->nodes;
    fs_batch_free(x);
    fs_close(b);
    unsigned long before[64];
    int n_before = mapped_slots(before, 64);
    cr_assert_eq(n_before, 2, "a's slot in use and b's kept warm: %d slots mapped", n_before);
    fs_client_t *c = connect_ok();
    cr_assert_eq(fs_sample_gather(c, seeds, 200, &req, "feat", FS_DTYPE_F32, &y), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(y->nodes, where, "c's first batch is not in b's warm slot");
    cr_assert_not(differs(y, seeds, 200, &req));
    cr_assert_not(differs(held, seeds, 256, &req), "a's held batch changed under c's");
    fs_batch_free(y);
    unsigned long now[64];
    cr_assert_eq(mapped_slots(now, 64), 2, "c made a new slot where a warm one was there");
    fs_close(c);
    fs_batch_free(held);
    fs_close(a);
    cr_assert_eq(mapped_slots(now, 64), 0, "slots still mapped after the last connection closed");
}

/* A forked child inherits copies of the warm slots, which are its parent's:
 * it drops them, and its connection makes its own; the parent's stay warm
 * for it. */
Test(local, a_forked_child_leaves_its_parents_warm_slots_alone)
{
    skip_unless_anon_names();
    int64_t seeds[256];
    seeds_for(seeds, 256, 12);
    fs_sample_req_t req = req3(12);
    fs_client_t *a = connect_ok(), *b = connect_ok(); /* a makes no call: its slots are not mapped */
    fs_batch_t *x;
    cr_assert_eq(fs_sample_gather(b, seeds, 256, &req, "feat", FS_DTYPE_F32, &x), FS_OK, "%s", fs_client_errstr(b));
    fs_batch_free(x);
    fs_close(b);
    unsigned long warm[64];
    int n_warm = mapped_slots(warm, 64);
    cr_assert_eq(n_warm, 1);
    pid_t child = fork();
    if (child == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        fs_client_t *own;
        if (fs_connect(uri, NULL, &own) != FS_OK) _exit(2);
        for (int it = 0; it < 5; it++) {
            int64_t s2[256];
            seeds_for(s2, 256, 300 + it);
            fs_sample_req_t r2 = req3(300 + (uint64_t)it);
            if (fs_sample_gather(own, s2, 256, &r2, "feat", FS_DTYPE_F32, &x) != FS_OK || differs(x, s2, 256, &r2))
                _exit(3);
            fs_batch_free(x);
        }
        unsigned long mine[64];
        int n = mapped_slots(mine, 64);
        for (int k = 0; k < n; k++)
            if (has_id(warm, n_warm, mine[k])) _exit(4); /* the parent's warm slot, written by the child */
        fs_close(own);
        _exit(n == 1 ? 0 : 5);
    }
    cr_assert_eq(wait_child(child), 0, "the child: 2 connect, 3 a wrong batch, 4 it used its parent's warm slot, "
                                       "5 not one slot of its own mapped");
    fs_client_t *c = connect_ok();
    cr_assert_eq(fs_sample_gather(c, seeds, 256, &req, "feat", FS_DTYPE_F32, &x), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_not(differs(x, seeds, 256, &req));
    unsigned long now[64];
    int n = mapped_slots(now, 64);
    cr_assert(n == 1 && now[0] == warm[0], "the parent's next connection did not take its warm slot");
    fs_batch_free(x);
    fs_close(c);
    fs_close(a);
}
