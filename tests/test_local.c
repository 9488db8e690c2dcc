/* test_local.c — the unix:// transport end to end: a server in this process,
 * clients in this and in child processes. Results must be bit-identical to
 * the in-process engines; many clients run at once; a client killed with
 * SIGKILL costs the others nothing and its slots and descriptors are
 * reclaimed; garbage on the socket is refused without harm. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client_internal.h"
#include "engine.h"
#include "featstore/admin.h"
#include "featstore/client.h"
#include "fs_local.h"
#include "fs_pb.h"
#include "gen.h"
#include "client_checks.h"
#include "local.h"
#include "metrics.h"
#include "place.h"
#include "place_las.h"
#include "test_util.h"

static char *dir, sock[256], uri[300];
static fs_dataset_t *ds;
static fs_store_t *store;
static fs_engine_t *engine;
static fs_metrics_t *metrics;
static fs_local_server_t *server;

/* Starts the unix:// transport for `engine` on path, speaking local
 * protocol 6.minor (lower only to stand in for an older server). */
static fs_status_t serve_on(const char *path, unsigned minor, fs_error_t *err)
{
    fs_local_server_opts_t o;
    fs_local_server_defaults(&o);
    o.socket_path = path, o.protocol_minor = minor;
    return fs_local_server_start(&o, engine, metrics, &server, err);
}

static void start_server(const fs_limits_t *limits)
{
    fs_error_t err = {0};
    cr_assert_eq(fs_store_create(ds, &store, &err), FS_OK);
    cr_assert_eq(fs_engine_create(ds, store, limits, &engine, &err), FS_OK);
    metrics = fs_metrics_create(ds, store);
    cr_assert_eq(serve_on(sock, FS_LOCAL_MINOR, &err), FS_OK, "%s", err.msg);
}

static void setup(void)
{
    signal(SIGPIPE, SIG_IGN);
    dir = tu_mkdtemp();
    fs_error_t err = {0};
    fs_rmat_opts_t g;
    fs_rmat_defaults(&g);
    char *out = tu_path(dir, "g");
    g.out_dir = out, g.scale = 12, g.edge_factor = 8, g.dim = 32, g.edges.symmetrize = 1;
    cr_assert_eq(fs_gen_rmat(&g, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_dataset_open(out, 0, 1, &ds, &err), FS_OK, "%s", err.msg);
    snprintf(sock, sizeof sock, "%s/fs.sock", dir);
    snprintf(uri, sizeof uri, "unix://%s", sock);
    start_server(NULL);
    free(out);
}

static void teardown(void)
{
    fs_local_server_stop(server);
    fs_metrics_destroy(metrics);
    fs_engine_destroy(engine);
    fs_store_destroy(store);
    fs_dataset_close(ds);
    tu_rm_rf(dir);
    free(dir);
}

TestSuite(local, .init = setup, .fini = teardown, .timeout = 600);

static fs_client_t *connect_ok(void)
{
    fs_client_t *c;
    fs_status_t st = fs_connect(uri, NULL, &c);
    cr_assert_eq(st, FS_OK, "connect: %s", fs_client_errstr(c));
    return c;
}

static fs_sample_req_t req3(uint64_t seed)
{
    return SAMPLE_REQ(.num_hops = 3, .fanout = {10, 5, 3}, .seed = seed, .want_edge_ids = 1);
}

static void seeds_for(int64_t *seeds, int n, int salt)
{
    for (int i = 0; i < n; i++) seeds[i] = ((int64_t)i * 7919 + salt * 104729) % ds->num_nodes;
}

/* Compares a batch with the engines run right here; returns 0 if identical. */
static int differs(const fs_batch_t *b, const int64_t *seeds, int n, const fs_sample_req_t *req)
{
    fs_sampler_t *s;
    fs_error_t err = {0};
    fs_sampler_create(&s, &err);
    fs_csr_view_t g;
    fs_csr_view_init(&g, ds->num_nodes, ds->indptr, ds->indices, ds->index_dtype, ds->edge_weights);
    fs_sample_result_t r;
    int bad = fs_sample_cpu(s, &g, seeds, n, req, &r, NULL, &err) != FS_OK;
    bad |= r.num_nodes != b->num_nodes || memcmp(r.nodes, b->nodes, 8 * (size_t)r.num_nodes) != 0;
    bad |= memcmp(r.seed_local, b->seed_local, 8 * (size_t)n) != 0;
    for (int h = 0; !bad && h < req->num_hops; h++) {
        const fs_block_t *x = &r.block[h], *y = &b->blocks[h];
        size_t eb = 8 * (size_t)x->num_edges;
        bad |= x->num_edges != y->num_edges || x->num_dst != y->num_dst || x->num_src != y->num_src;
        bad |= !bad && (memcmp(x->edge_src, y->edge_src, eb) || memcmp(x->edge_dst, y->edge_dst, eb) ||
                        memcmp(x->edge_ids, y->edge_ids, eb) ||
                        memcmp(x->dst_offsets, y->dst_offsets, 8 * (size_t)(x->num_dst + 1)));
    }
    if (!bad && b->features) { /* features[i] must be the row of nodes[i] */
        const fs_table_t *t = &ds->tables[0];
        for (int64_t i = 0; i < b->num_nodes && !bad; i++)
            bad |= memcmp((const char *)b->features + i * t->row_bytes,
                          (const char *)t->data + b->nodes[i] * t->row_bytes, t->row_bytes) != 0;
    }
    fs_sampler_destroy(s);
    return bad;
}

Test(local, results_are_bit_identical_to_in_process_engines)
{
    fs_client_t *c = connect_ok();
    cr_assert_str_eq(fs_client_transport(c), "unix");
    int64_t seeds[512];
    seeds_for(seeds, 512, 1);
    fs_sample_req_t req = req3(7);
    fs_batch_t *b;
    cr_assert_eq(fs_sample_gather(c, seeds, 512, &req, "feat", FS_DTYPE_F32, &b), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(b->rows, b->num_nodes);
    cr_assert_eq(b->dim, 32);
    cr_assert_not(differs(b, seeds, 512, &req));
    fs_batch_free(b);
    cr_assert_eq(fs_sample(c, seeds, 512, &req, &b), FS_OK);
    cr_assert_null(b->features);
    cr_assert_not(differs(b, seeds, 512, &req));
    fs_batch_free(b);
    cr_assert_eq(fs_gather(c, seeds, 512, "feat", FS_DTYPE_INVALID, &b), FS_OK);
    for (int i = 0; i < 512; i++)
        cr_assert_arr_eq((const float *)b->features + i * 32, (const float *)ds->tables[0].data + seeds[i] * 32, 128);
    fs_batch_free(b);
    fs_info_t *info;
    cr_assert_eq(fs_info(c, &info), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(info->num_nodes, ds->num_nodes);
    cr_assert_eq(info->num_edges, ds->num_edges);
    cr_assert_str_eq(info->tables[0].name, "feat");
    cr_assert_eq(info->tables[0].dim, 32);
    fs_info_free(info);
    fs_close(c);
}

static int in_region(const fs_batch_t *b, const void *p, size_t bytes)
{
    const void *base;
    size_t len;
    cr_assert_eq(fs_batch_region(b, &base, &len), FS_OK);
    return (const char *)p >= (const char *)base && (const char *)p + bytes <= (const char *)base + len;
}

/* The sampler writes a batch's arrays straight into its slot (as far as
 * the slot has room), and the slot grows for the rows after that, which
 * may move it: every array must still be right, and in the slot. */
Test(local, a_batch_sampled_into_its_slot_survives_the_slot_growing)
{
    fs_connect_opts_t o = FS_CONNECT_OPTS_INIT;
    o.slots = 1;
    fs_client_t *c;
    cr_assert_eq(fs_connect(uri, &o, &c), FS_OK);
    int64_t seeds[1024];
    int sizes[] = {8, 64, 1024, 16, 1024, 256}; /* a small slot first, then each size from what the last left */
    for (int k = 0; k < 6; k++) {
        int n = sizes[k];
        seeds_for(seeds, n, 10 + k);
        fs_sample_req_t req = req3(20 + k);
        fs_batch_t *b;
        cr_assert_eq(fs_sample_gather(c, seeds, n, &req, "feat", FS_DTYPE_F32, &b), FS_OK, "%s", fs_client_errstr(c));
        cr_assert_not(differs(b, seeds, n, &req), "batch %d (%d seeds)", k, n);
        cr_assert(in_region(b, b->nodes, 8 * (size_t)b->num_nodes) && in_region(b, b->seed_local, 8 * (size_t)n));
        for (int h = 0; h < b->num_hops; h++) {
            const fs_block_t *x = &b->blocks[h];
            size_t eb = 8 * (size_t)x->num_edges;
            cr_assert(in_region(b, x->dst_offsets, 8 * (size_t)(x->num_dst + 1)) && in_region(b, x->edge_dst, eb) &&
                      in_region(b, x->edge_src, eb) && in_region(b, x->edge_ids, eb), "batch %d hop %d", k, h);
        }
        cr_assert(in_region(b, b->features, (size_t)b->rows * 32 * sizeof(float)));
        fs_batch_free(b);
    }
    fs_close(c);
}

Test(local, errors_are_clear_and_the_connection_survives)
{
    fs_client_t *c = connect_ok();
    int64_t seeds[2] = {1, ds->num_nodes + 5};
    fs_sample_req_t req = req3(1);
    fs_batch_t *b = NULL;
    cr_assert_eq(fs_sample_gather(c, seeds, 2, &req, "feat", FS_DTYPE_F32, &b), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(fs_client_errstr(c), "at position 1"), "%s", fs_client_errstr(c));
    cr_assert_null(b);
    seeds[1] = 2;
    cr_assert_eq(fs_gather(c, seeds, 2, "nope", FS_DTYPE_F32, &b), FS_ERR_NOT_FOUND);
    cr_assert_not_null(strstr(fs_client_errstr(c), "nope"));
    cr_assert_eq(fs_gather(c, seeds, 2, "feat", FS_DTYPE_F16, &b), FS_ERR_INVALID_ARGUMENT, "float32 table as f16");
    req.fanout[1] = 0;
    cr_assert_eq(fs_sample(c, seeds, 2, &req, &b), FS_ERR_INVALID_ARGUMENT);
    /* slots: the default ring holds FS_DEFAULT_SLOTS batches at once */
    fs_batch_t *held[FS_DEFAULT_SLOTS];
    for (int i = 0; i < FS_DEFAULT_SLOTS; i++) cr_assert_eq(fs_gather(c, seeds, 2, "feat", FS_DTYPE_F32, &held[i]), FS_OK);
    cr_assert_eq(fs_gather(c, seeds, 2, "feat", FS_DTYPE_F32, &b), FS_ERR_RESOURCE);
    cr_assert_not_null(strstr(fs_client_errstr(c), "slots"));
    fs_batch_free(held[0]);
    cr_assert_eq(fs_gather(c, seeds, 2, "feat", FS_DTYPE_F32, &b), FS_OK, "a freed slot is reusable");
    fs_batch_free(b);
    fs_close(c); /* batches outlive the connection until freed */
    cr_assert_eq(((const float *)held[1]->features)[0], ((const float *)ds->tables[0].data)[32]);
    for (int i = 1; i < FS_DEFAULT_SLOTS; i++) fs_batch_free(held[i]);
}

/* Connections of one process share their mappings of the server's files
 * (client_local.c, "Shared mappings"): a connection closed under another
 * leaves the other's rows intact, a batch outlives both, and a connection
 * made after every other closed maps afresh. */
Test(local, connections_share_mappings_and_each_keeps_them_alive)
{
    int64_t seeds[256];
    seeds_for(seeds, 256, 3);
    fs_sample_req_t req = req3(5);
    fs_client_t *a = connect_ok(), *b = connect_ok();
    fs_batch_t *x, *y;
    cr_assert_eq(fs_sample_gather(a, seeds, 256, &req, "feat", FS_DTYPE_F32, &x), FS_OK, "%s", fs_client_errstr(a));
    fs_close(a);
    cr_assert_eq(fs_sample_gather(b, seeds, 256, &req, "feat", FS_DTYPE_F32, &y), FS_OK, "%s", fs_client_errstr(b));
    cr_assert_not(differs(y, seeds, 256, &req), "the second connection reads after the first closed");
    fs_close(b);
    cr_assert_not(differs(x, seeds, 256, &req), "a batch outlives both connections");
    fs_batch_free(x), fs_batch_free(y);
    fs_client_t *c = connect_ok();
    cr_assert_eq(fs_sample_gather(c, seeds, 256, &req, "feat", FS_DTYPE_F32, &x), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_not(differs(x, seeds, 256, &req), "a connection after all others closed maps afresh");
    fs_batch_free(x);
    fs_close(c);
}

Test(local, labels_and_splits_are_served)
{
    fs_client_t *c = connect_ok();
    tc_labels_and_splits(c, ds);
    fs_close(c);
}

Test(local, limits_answer_resource)
{
    fs_local_server_stop(server);
    fs_metrics_destroy(metrics);
    fs_engine_destroy(engine);
    fs_store_destroy(store);
    fs_limits_t l;
    fs_limits_default(&l);
    l.max_ids = 100, l.max_fanout_product = 40;
    start_server(&l);
    fs_client_t *c = connect_ok();
    int64_t seeds[200];
    seeds_for(seeds, 200, 3);
    fs_sample_req_t req = req3(1);
    fs_batch_t *b;
    cr_assert_eq(fs_sample(c, seeds, 200, &req, &b), FS_ERR_RESOURCE);
    cr_assert_not_null(strstr(fs_client_errstr(c), "limit is 100"), "%s", fs_client_errstr(c));
    cr_assert_eq(fs_sample(c, seeds, 50, &req, &b), FS_ERR_RESOURCE, "10*5*3 = 150 > 40");
    req.fanout[0] = 2;
    cr_assert_eq(fs_sample(c, seeds, 50, &req, &b), FS_OK, "2*5*3 = 30: %s", fs_client_errstr(c));
    fs_batch_free(b);
    fs_close(c);
}

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

/* A bare socket to the server, for speaking the protocol by hand. */
static int raw_connect(void)
{
    int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    strcpy(a.sun_path, sock);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

Test(local, garbage_on_the_socket_is_refused)
{
    int fd = raw_connect();
    const char junk[] = "GET / HTTP/1.1\r\n\r\n garbage \x01\x02\x03";
    cr_assert_eq(send(fd, junk, sizeof junk, 0), (ssize_t)sizeof junk);
    char buf[1024];
    ssize_t n = recv(fd, buf, sizeof buf, 0); /* an ERROR message, then the server hangs up */
    cr_assert_geq(n, 0);
    if (n > 0) {
        fs_local_hdr_t *h = (fs_local_hdr_t *)buf;
        cr_assert_eq(h->type, FS_LOCAL_ERROR);
        featstore_local_Error e = featstore_local_Error_init_zero;
        fs_error_t err;
        cr_assert_eq(fs_local_decode(buf + sizeof *h, (size_t)n - sizeof *h, featstore_local_Error_fields, &e, "error",
                                     &err), FS_OK, "%s", err.msg);
        cr_assert_not_null(strstr(e.message, "malformed"), "%s", e.message);
    }
    close(fd);
    fs_client_t *c = connect_ok(); /* and keeps serving */
    fs_info_t *info;
    cr_assert_eq(fs_info(c, &info), FS_OK);
    fs_info_free(info);
    fs_close(c);
}

Test(local, server_stop_is_seen_by_clients)
{
    fs_client_t *c = connect_ok();
    fs_local_server_stop(server);
    server = NULL;
    fs_info_t *info;
    cr_assert_eq(fs_info(c, &info), FS_ERR_UNAVAILABLE);
    fs_close(c);
    cr_assert_neq(access(sock, F_OK), 0, "the socket file is removed");
    fs_client_t *d;
    cr_assert_eq(fs_connect(uri, NULL, &d), FS_ERR_UNAVAILABLE);
    cr_assert_not_null(strstr(fs_client_errstr(d), "cannot connect"));
    fs_close(d);
    fs_error_t err = {0};
    cr_assert_eq(serve_on(sock, FS_LOCAL_MINOR, &err), FS_OK, "restart on the same path");
}

/* Stops the server and drops its store; the dataset stays open. */
static void stop_server_keep_dataset(void)
{
    fs_local_server_stop(server);
    fs_metrics_destroy(metrics);
    fs_engine_destroy(engine);
    fs_store_destroy(store);
}

/* Replaces the default server with one whose store has a placement: two
 * simulated GPUs holding feature rows and neighbour lists. */
static int place_and_restart(void)
{
    stop_server_keep_dataset();
    fs_error_t err = {0};
    cr_assert_eq(fs_store_create(ds, &store, &err), FS_OK);
    int gpu0, gpu1;
    cr_assert_eq(fs_store_add_tier(store, FS_TIER_SIM_DEVICE, 0, 0, &gpu0, &err), FS_OK);
    cr_assert_eq(fs_store_add_tier(store, FS_TIER_SIM_DEVICE, 1, 0, &gpu1, &err), FS_OK);
    int64_t n = ds->num_nodes / 2, *lo = malloc(sizeof *lo * (size_t)n), *hi = malloc(sizeof *hi * (size_t)n);
    for (int64_t i = 0; i < n; i++) lo[i] = i, hi[i] = n + i;
    uint32_t both = FS_READER_BIT(0) | FS_READER_BIT(1);
    cr_assert_eq(fs_store_place_rows(store, "feat", gpu0, lo, n, both, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_store_place_rows(store, "feat", gpu1, hi, n, both, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_store_place_topology(store, gpu0, lo, n, FS_READER_BIT(0), &err), FS_OK, "%s", err.msg);
    free(lo), free(hi);
    cr_assert_eq(fs_engine_create(ds, store, NULL, &engine, &err), FS_OK);
    metrics = fs_metrics_create(ds, store);
    cr_assert_eq(serve_on(sock, FS_LOCAL_MINOR, &err), FS_OK, "%s", err.msg);
    return gpu0;
}

Test(local, clients_read_through_the_placement_of_their_device)
{
    int gpu0 = place_and_restart();
    fs_connect_opts_t o = {.struct_size = sizeof(fs_connect_opts_t), .device = "gpu:0"};
    fs_client_t *c;
    cr_assert_eq(fs_connect(uri, &o, &c), FS_OK, "%s", fs_client_errstr(c));
    int64_t seeds[512];
    seeds_for(seeds, 512, 5);
    fs_sample_req_t req = req3(5);
    fs_batch_t *b;
    cr_assert_eq(fs_sample_gather(c, seeds, 512, &req, "feat", FS_DTYPE_F32, &b), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_not(differs(b, seeds, 512, &req), "reading through simulated GPUs changes nothing");
    int64_t rows = b->rows;
    fs_batch_free(b);
    char *text = NULL, want[160];
    snprintf(want, sizeof want, "featstore_feature_rows_read_total{reader=\"local\",tier=\"%d\",kind=\"sim_device\"", gpu0);
    for (int i = 0; i < 100; i++) {
        fs_stats_free(text);
        cr_assert_eq(fs_stats(c, &text), FS_OK);
        if (strstr(text, "featstore_requests_total{method=\"SampleGather\",transport=\"unix\"} 1\n")) break;
        usleep(10000);
    }
    char *line = strstr(text, want);
    cr_assert_not_null(line, "%s", text);
    long long from_gpu0 = atoll(strchr(line, '}') + 2);
    cr_assert(from_gpu0 > 0 && from_gpu0 < rows, "some rows, not all, came from tier %d: %lld of %lld", gpu0, from_gpu0,
              (long long)rows);
    snprintf(want, sizeof want, "featstore_topology_lists_read_total{reader=\"local\",tier=\"%d\"", gpu0);
    line = strstr(text, want);
    cr_assert(line && atoll(strchr(line, '}') + 2) > 0, "neighbour lists were read from tier %d", gpu0);
    fs_stats_free(text);
    fs_close(c);
    o.device = "cpu"; /* the CPU reader was not placed: everything from the files */
    cr_assert_eq(fs_connect(uri, &o, &c), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(fs_sample_gather(c, seeds, 512, &req, "feat", FS_DTYPE_F32, &b), FS_OK);
    cr_assert_not(differs(b, seeds, 512, &req));
    fs_batch_free(b);
    fs_close(c);
    o.device = "tpu:1";
    cr_assert_eq(fs_connect(uri, &o, &c), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(fs_client_errstr(c), "gpu:N"));
    fs_close(c);
}

/* ---- locality-aware sampling ------------------------------------------------------ */

/* Replaces the default server with one serving a real plan, as `featstore
 * serve --topology pcie4 --gpu-budget 0.1 --feature-first` does: 4 GPUs
 * without peers (Rule 1: each holds the top 10% rows by degree) and the
 * preferred sets of every planned GPU (place_las.h). */
static void place_plan_and_restart(void)
{
    stop_server_keep_dataset();
    fs_error_t err = {0};
    cr_assert_eq(fs_store_create(ds, &store, &err), FS_OK);
    fs_place_opts_t po = {.topology = "pcie4", .gpu_budget = 0.1, .order = FS_PLACE_FEATURE_FIRST, .threads = 1};
    fs_hardware_t hw;
    fs_plan_t *plan;
    cr_assert_eq(fs_place_plan(ds, &po, &hw, &plan, NULL, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_place_apply(store, ds, plan, NULL, FS_TIER_SIM_DEVICE, &err), FS_OK, "%s", err.msg);
    /* K scaled to the graph: the default 8192 is more than its 4096 nodes,
     * which would make every node preferred at levels 2 and 3 */
    fs_las_opts_t lo = {.num_levels = FS_PLACE_LAS_LEVELS, .k = ds->num_nodes / 16, .threads = 2};
    cr_assert_eq(fs_place_locality(store, ds, plan, &lo, NULL, &err), FS_OK, "%s", err.msg);
    fs_plan_free(plan);
    cr_assert_eq(fs_engine_create(ds, store, NULL, &engine, &err), FS_OK);
    metrics = fs_metrics_create(ds, store);
    cr_assert_eq(serve_on(sock, FS_LOCAL_MINOR, &err), FS_OK, "%s", err.msg);
}

/* Two batches hold the same sample (edge ids and weights included, present
 * on both or neither) and the same feature rows. */
static void assert_same_batch(const fs_batch_t *x, const fs_batch_t *y)
{
    cr_assert_eq(x->num_hops, y->num_hops);
    cr_assert_eq(x->num_nodes, y->num_nodes);
    cr_assert(memcmp(x->nodes, y->nodes, 8 * (size_t)x->num_nodes) == 0, "nodes differ");
    cr_assert(memcmp(x->seed_local, y->seed_local, 8 * (size_t)x->num_seeds) == 0, "seed_local differs");
    for (int h = 0; h < x->num_hops; h++) {
        const fs_block_t *a = &x->blocks[h], *b = &y->blocks[h];
        size_t e = (size_t)a->num_edges;
        cr_assert(a->num_dst == b->num_dst && a->num_src == b->num_src && a->num_edges == b->num_edges, "hop %d", h);
        cr_assert(memcmp(a->dst_offsets, b->dst_offsets, 8 * (size_t)(a->num_dst + 1)) == 0, "hop %d offsets", h);
        cr_assert(memcmp(a->edge_dst, b->edge_dst, 8 * e) == 0 && memcmp(a->edge_src, b->edge_src, 8 * e) == 0,
                  "hop %d edges", h);
        cr_assert_eq(!a->edge_ids, !b->edge_ids, "hop %d: edge ids on one side only", h);
        cr_assert(!a->edge_ids || memcmp(a->edge_ids, b->edge_ids, 8 * e) == 0, "hop %d edge ids", h);
        cr_assert_eq(!a->edge_weights, !b->edge_weights, "hop %d: edge weights on one side only", h);
        cr_assert(!a->edge_weights || memcmp(a->edge_weights, b->edge_weights, 4 * e) == 0, "hop %d weights", h);
    }
    cr_assert_eq(x->rows, y->rows);
    cr_assert(memcmp(x->features, y->features, (size_t)x->rows * (size_t)x->dim * 4) == 0, "features differ");
}

/* Checks a boosted batch's weights: one per edge, inside the batch's slot,
 * finite and >= 1 (1/q with q <= 1); a row with deg <= fanout is taken
 * whole with weight 1. Its features are the rows of its nodes. */
static void check_boosted(const fs_batch_t *b, const fs_sample_req_t *req)
{
    const void *base;
    size_t len;
    cr_assert_eq(fs_batch_region(b, &base, &len), FS_OK);
    for (int h = 0; h < b->num_hops; h++) {
        const fs_block_t *k = &b->blocks[h];
        cr_assert_not_null(k->edge_weights, "hop %d has no weights", h);
        cr_assert((const char *)k->edge_weights >= (const char *)base &&
                  (const char *)(k->edge_weights + k->num_edges) <= (const char *)base + len,
                  "hop %d's weights are outside the batch's slot", h);
        for (int64_t e = 0; e < k->num_edges; e++)
            cr_assert(isfinite(k->edge_weights[e]) && k->edge_weights[e] >= 1, "hop %d edge %lld: weight %g", h,
                      (long long)e, (double)k->edge_weights[e]);
        for (int64_t d = 0; d < k->num_dst; d++) {
            int64_t v = b->nodes[d], deg = ds->indptr[v + 1] - ds->indptr[v];
            if (deg > req->fanout[h]) continue;
            cr_assert_eq(k->dst_offsets[d + 1] - k->dst_offsets[d], deg, "hop %d: a row of degree %lld <= fanout "
                         "is taken whole", h, (long long)deg);
            for (int64_t e = k->dst_offsets[d]; e < k->dst_offsets[d + 1]; e++)
                cr_assert_eq(k->edge_weights[e], 1.0f, "hop %d: a whole row's weights are 1", h);
        }
    }
    const fs_table_t *t = &ds->tables[0];
    for (int64_t i = 0; i < b->num_nodes; i++)
        cr_assert(memcmp((const char *)b->features + i * t->row_bytes,
                         (const char *)t->data + b->nodes[i] * t->row_bytes, t->row_bytes) == 0, "row of node %lld",
                  (long long)b->nodes[i]);
}

static int64_t count_in(const uint64_t *bitmap, const fs_batch_t *b)
{
    int64_t m = 0;
    for (int64_t i = 0; i < b->num_nodes; i++) m += fs_las_bit(bitmap, b->nodes[i]);
    return m;
}

Test(local, locality_aware_sampling_reads_more_rows_from_the_readers_gpu)
{
    place_plan_and_restart();
    /* the 4 GPUs hold the same rows (Rule 1), so they share one copy of the sets */
    fs_locality_t las;
    fs_store_locality(store, 0, 1, &las);
    cr_assert_eq(las.num_levels, FS_PLACE_LAS_LEVELS);
    cr_assert_geq(fs_store_locality_fd(store, 0, 1, 0), 0);
    cr_assert_eq(fs_store_locality_fd(store, 0, 1, 0), fs_store_locality_fd(store, 3, 1, 0));
    cr_assert_eq(fs_store_locality_fd(store, FS_READER_CPU, 1, 0), -1, "the CPU reader has no GPU rows");
    const uint64_t *in_b = las.pref[0]; /* B: the rows gpu:0 reads from GPU memory */

    fs_connect_opts_t o = {.struct_size = sizeof(fs_connect_opts_t), .device = "gpu:0"};
    fs_client_t *c;
    cr_assert_eq(fs_connect(uri, &o, &c), FS_OK, "%s", fs_client_errstr(c));
    int64_t seeds[256];
    int64_t rows[2] = {0}, gpu_rows[2] = {0};
    for (int i = 0; i < 8; i++) {
        seeds_for(seeds, 256, 100 + i);
        fs_sample_req_t plain = SAMPLE_REQ(.num_hops = 3, .fanout = {10, 5, 3}, .seed = (uint64_t)i + 1, .want_edge_ids = 1);
        fs_sample_req_t one = plain, four = plain;
        one.locality = 1, four.locality = 4;
        fs_batch_t *p, *q, *f, *g;
        cr_assert_eq(fs_sample_gather(c, seeds, 256, &plain, "feat", FS_DTYPE_F32, &p), FS_OK, "%s",
                     fs_client_errstr(c));
        cr_assert_not(differs(p, seeds, 256, &plain));
        /* s = 1 is the plain sampler, bit for bit, without weights */
        cr_assert_eq(fs_sample_gather(c, seeds, 256, &one, "feat", FS_DTYPE_F32, &q), FS_OK, "%s",
                     fs_client_errstr(c));
        assert_same_batch(p, q);
        for (int h = 0; h < 3; h++) cr_assert_null(q->blocks[h].edge_weights);
        fs_batch_free(q);
        /* s = 4: weights on every edge, and the same request gives the same batch */
        cr_assert_eq(fs_sample_gather(c, seeds, 256, &four, "feat", FS_DTYPE_F32, &f), FS_OK, "%s",
                     fs_client_errstr(c));
        check_boosted(f, &four);
        cr_assert_eq(fs_sample_gather(c, seeds, 256, &four, "feat", FS_DTYPE_F32, &g), FS_OK, "%s",
                     fs_client_errstr(c));
        assert_same_batch(f, g);
        fs_batch_free(g);
        cr_assert_eq(fs_sample(c, seeds, 256, &four, &g), FS_OK, "%s", fs_client_errstr(c));
        cr_assert_null(g->features);
        cr_assert_eq(g->num_nodes, f->num_nodes, "sample and sample_gather sample alike");
        cr_assert(memcmp(g->blocks[2].edge_weights, f->blocks[2].edge_weights, 4 * (size_t)f->blocks[2].num_edges) == 0);
        fs_batch_free(g);
        rows[0] += p->num_nodes, gpu_rows[0] += count_in(in_b, p);
        rows[1] += f->num_nodes, gpu_rows[1] += count_in(in_b, f);
        fs_batch_free(p);
        fs_batch_free(f);
    }
    double share1 = (double)gpu_rows[0] / (double)rows[0], share4 = (double)gpu_rows[1] / (double)rows[1];
    cr_assert(share4 > share1 + 0.05, "s = 4 reads a larger share of its rows from gpu:0: %.3f vs %.3f at s = 1",
              share4, share1);
    cr_assert(rows[0] - gpu_rows[0] > rows[1] - gpu_rows[1], "and fewer rows from the host: %lld vs %lld",
              (long long)(rows[1] - gpu_rows[1]), (long long)(rows[0] - gpu_rows[0]));

    /* requests the boost cannot serve are named */
    fs_batch_t *b = NULL;
    fs_sample_req_t bad = SAMPLE_REQ(.num_hops = 4, .fanout = {3, 3, 3, 3}, .seed = 1, .locality = 4);
    cr_assert_eq(fs_sample(c, seeds, 16, &bad, &b), FS_ERR_INVALID_ARGUMENT);
    cr_assert_null(b);
    cr_assert(strstr(fs_client_errstr(c), "up to 3 hops"), "%s", fs_client_errstr(c));
    bad = SAMPLE_REQ(.num_hops = 2, .fanout = {3, 3}, .mode = {FS_SAMPLE_UNIFORM, FS_SAMPLE_UNIFORM_REPLACE},
                            .locality = 4);
    cr_assert_eq(fs_sample(c, seeds, 16, &bad, &b), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(fs_client_errstr(c), "uniform sampling without replacement"), "%s", fs_client_errstr(c));
    const double wrong[] = {NAN, 0.5, -3, INFINITY};
    for (int i = 0; i < 4; i++) {
        bad = SAMPLE_REQ(.num_hops = 2, .fanout = {3, 3}, .locality = wrong[i]);
        cr_assert_eq(fs_sample_gather(c, seeds, 16, &bad, "feat", FS_DTYPE_F32, &b), FS_ERR_INVALID_ARGUMENT,
                     "locality %g", wrong[i]);
        cr_assert(strstr(fs_client_errstr(c), "locality"), "%s", fs_client_errstr(c));
    }

    /* FS_LOCALITY_AUTO follows Algorithm 2: s = 1 (plain) until a ratio is reported */
    fs_sample_req_t autoreq = SAMPLE_REQ(.num_hops = 2, .fanout = {10, 5}, .seed = 9, .locality = FS_LOCALITY_AUTO);
    fs_sample_req_t fixed = autoreq;
    fixed.locality = 0;
    fs_batch_t *x, *y;
    cr_assert_eq(fs_sample_gather(c, seeds, 256, &autoreq, "feat", FS_DTYPE_F32, &x), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(fs_sample_gather(c, seeds, 256, &fixed, "feat", FS_DTYPE_F32, &y), FS_OK, "%s", fs_client_errstr(c));
    assert_same_batch(x, y);
    fs_batch_free(x), fs_batch_free(y);
    double s = 0;
    cr_assert_eq(fs_report_load_ratio(c, 0.5, &s), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(s, 2);
    fixed.locality = 2;
    cr_assert_eq(fs_sample_gather(c, seeds, 256, &autoreq, "feat", FS_DTYPE_F32, &x), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(fs_sample_gather(c, seeds, 256, &fixed, "feat", FS_DTYPE_F32, &y), FS_OK, "%s", fs_client_errstr(c));
    assert_same_batch(x, y);
    check_boosted(x, &autoreq);
    fs_batch_free(x), fs_batch_free(y);
    fs_close(c);

    /* a trainer reading as the CPU has no GPU rows to prefer */
    o.device = "cpu";
    cr_assert_eq(fs_connect(uri, &o, &c), FS_OK, "%s", fs_client_errstr(c));
    fs_sample_req_t four = SAMPLE_REQ(.num_hops = 2, .fanout = {10, 5}, .seed = 3, .want_edge_ids = 1, .locality = 4);
    cr_assert_eq(fs_sample_gather(c, seeds, 64, &four, "feat", FS_DTYPE_F32, &b), FS_ERR_UNSUPPORTED);
    cr_assert_null(b);
    cr_assert(strstr(fs_client_errstr(c), "needs a placement and a reader GPU") &&
              strstr(fs_client_errstr(c), "gpu:N"), "%s", fs_client_errstr(c));
    four.locality = 0;
    cr_assert_eq(fs_sample_gather(c, seeds, 64, &four, "feat", FS_DTYPE_F32, &b), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_not(differs(b, seeds, 64, &four));
    fs_batch_free(b);
    fs_close(c);
}

Test(local, locality_needs_a_placement)
{
    /* the default server has no placement: no preferred sets for any GPU */
    fs_connect_opts_t o = {.struct_size = sizeof(fs_connect_opts_t), .device = "gpu:0"};
    fs_client_t *c;
    cr_assert_eq(fs_connect(uri, &o, &c), FS_OK, "%s", fs_client_errstr(c));
    int64_t seeds[64];
    seeds_for(seeds, 64, 3);
    fs_sample_req_t req = SAMPLE_REQ(.num_hops = 2, .fanout = {10, 5}, .seed = 3, .want_edge_ids = 1, .locality = 2);
    fs_batch_t *b = NULL;
    cr_assert_eq(fs_sample(c, seeds, 64, &req, &b), FS_ERR_UNSUPPORTED);
    cr_assert(strstr(fs_client_errstr(c), "no preferred sets for gpu:0"), "%s", fs_client_errstr(c));
    req.locality = 1; /* s = 1 is the plain sampler: no sets needed */
    cr_assert_eq(fs_sample(c, seeds, 64, &req, &b), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_not(differs(b, seeds, 64, &req));
    fs_batch_free(b);
    fs_close(c);
}

Test(local, report_load_ratio_follows_algorithm_2)
{
    fs_client_t *c = connect_ok();
    double s = 0;
    /* loading dominates: double; twice; then overshot: halfway back to the previous s; then in range: settled */
    const double r[] = {0.5, 0.5, 0.1, 0.17, 0.9, 0.0};
    const double want[] = {2, 4, 3, 3, 3, 3};
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(fs_report_load_ratio(c, r[i], &s), FS_OK, "%s", fs_client_errstr(c));
        cr_assert_eq(s, want[i], "epoch %d: r = %g gives s = %g, expected %g", i, r[i], s, want[i]);
    }
    const double bad[] = {NAN, 1.5, -0.1};
    for (int i = 0; i < 3; i++) {
        s = -7;
        cr_assert_eq(fs_report_load_ratio(c, bad[i], &s), FS_ERR_INVALID_ARGUMENT);
        cr_assert(strstr(fs_client_errstr(c), "loading ratio"), "%s", fs_client_errstr(c));
        cr_assert_eq(s, -7, "a refused ratio writes nothing");
    }
    fs_close(c);
    /* another connection starts over; the cap is 8 */
    c = connect_ok();
    for (int i = 0; i < 5; i++) cr_assert_eq(fs_report_load_ratio(c, 1.0, i % 2 ? NULL : &s), FS_OK);
    cr_assert_eq(s, 8, "doubling stops at MAXS = 8");
    cr_assert_eq(fs_report_load_ratio(NULL, 0.5, &s), FS_ERR_INVALID_ARGUMENT);
    fs_close(c);
}

/* ---- versions: old and new peers (proto/fs_local.h) ------------------------------ */

/* The server's metrics over a connection. */
static char *stats_of(fs_client_t *c)
{
    char *text;
    cr_assert_eq(fs_stats(c, &text), FS_OK, "%s", fs_client_errstr(c));
    return text;
}

/* One sample_gather and one info must work over an older or newer peer. */
static void works(fs_client_t *c)
{
    int64_t seeds[64];
    seeds_for(seeds, 64, 3);
    fs_sample_req_t req = req3(5);
    fs_batch_t *b;
    cr_assert_eq(fs_sample_gather(c, seeds, 64, &req, "feat", FS_DTYPE_INVALID, &b), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(b->kind, FS_BATCH_SAMPLE_GATHER);
    cr_assert_not(differs(b, seeds, 64, &req), "results over a mixed-version connection differ");
    fs_batch_free(b);
    fs_info_t *info;
    cr_assert_eq(fs_info(c, &info), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(info->num_nodes, ds->num_nodes);
    fs_info_free(info);
}

Test(local, an_older_client_works_with_this_server_and_is_counted_by_version)
{
    fs_local_client_protocol(FS_LOCAL_MINOR - 1); /* a client one minor older */
    fs_client_t *old = connect_ok();
    fs_local_client_protocol(FS_LOCAL_MINOR);
    fs_client_t *cur = connect_ok();
    works(old);
    works(cur);
    char *text = stats_of(cur), want[160];
    snprintf(want, sizeof want, "featstore_local_clients_by_version{protocol=\"6.%d\",library=\"%s\"} 1\n",
             FS_LOCAL_MINOR - 1, FS_LOCAL_MINOR - 1 >= 1 ? fs_version() : "unknown"); /* 6.0 sent no version */
    cr_assert_not_null(strstr(text, want), "%s", text);
    snprintf(want, sizeof want, "featstore_local_clients_by_version{protocol=\"6.%d\",library=\"%s\"} 1\n",
             FS_LOCAL_MINOR, fs_version());
    cr_assert_not_null(strstr(text, want), "%s", text);
    fs_stats_free(text);
    fs_close(old);
    fs_close(cur);
}

Test(local, this_client_works_with_an_older_server)
{
    fs_local_server_stop(server);
    fs_error_t err = {0};
    cr_assert_eq(serve_on(sock, FS_LOCAL_MINOR - 1, &err), FS_OK, "%s", err.msg); /* a server one minor older */
    fs_client_t *c = connect_ok();
    works(c);
    char *text = stats_of(c), want[160]; /* a 6.0 server did not read library versions */
    snprintf(want, sizeof want, "featstore_local_clients_by_version{protocol=\"6.%d\",library=\"%s\"} 1\n",
             FS_LOCAL_MINOR - 1, FS_LOCAL_MINOR - 1 >= 1 ? fs_version() : "unknown");
    cr_assert_not_null(strstr(text, want), "%s", text);
    fs_stats_free(text);
    fs_close(c);
}

/* Sends a HELLO of major.minor (protobuf, in our frame format) plus `extra`
 * raw bytes appended to its encoding; returns the socket. */
static int hello(unsigned major, unsigned minor, const void *extra, size_t extra_len)
{
    featstore_local_Hello h = featstore_local_Hello_init_zero;
    h.major = major, h.minor = minor, h.slots = 1, h.pid = getpid(), h.reader = -1;
    snprintf(h.library_version, sizeof h.library_version, "9.9.9");
    void *buf;
    size_t len;
    fs_error_t err = {0};
    cr_assert_eq(fs_pb_encode_alloc(featstore_local_Hello_fields, &h, "hello", &buf, &len, &err), FS_OK, "%s", err.msg);
    char frame[512];
    cr_assert_lt(len + extra_len, sizeof frame);
    memcpy(frame, buf, len);
    if (extra_len) memcpy(frame + len, extra, extra_len); /* extra may be NULL: memcpy's source must not (UBSan) */
    free(buf);
    int fd = raw_connect();
    cr_assert_eq(fs_local_send(fd, FS_LOCAL_HELLO, frame, len + extra_len, NULL, 0, 0), 0);
    return fd;
}

/* The ERROR a hand-made HELLO got: its status and message. */
static fs_status_t refusal(int fd, char *message, size_t cap)
{
    char buf[2048];
    int fds[FS_LOCAL_MAX_FDS], nfds = 0;
    fs_local_frame_t f;
    cr_assert_eq(fs_local_recv(fd, &f, buf, sizeof buf, fds, &nfds, FS_LOCAL_MAX_FDS, 0), 1);
    cr_assert_eq(f.type, FS_LOCAL_ERROR, "frame type %d", f.type);
    featstore_local_Error e = featstore_local_Error_init_zero;
    fs_error_t err;
    cr_assert_eq(fs_local_decode(buf, f.len, featstore_local_Error_fields, &e, "error", &err), FS_OK);
    snprintf(message, cap, "%s", e.message);
    cr_assert_eq(recv(fd, buf, sizeof buf, 0), 0, "the server hangs up after a version error");
    close(fd);
    return (fs_status_t)e.status;
}

Test(local, a_wider_version_gap_is_a_named_error)
{
    char msg[1024];
    /* a client two minors ahead */
    cr_assert_eq(refusal(hello(FS_LOCAL_MAJOR, FS_LOCAL_MINOR + 2, NULL, 0), msg, sizeof msg), FS_ERR_VERSION, "%s", msg);
    char want[64];
    snprintf(want, sizeof want, "local protocol 6.%d and this server 6.%d", FS_LOCAL_MINOR + 2, FS_LOCAL_MINOR);
    cr_assert_not_null(strstr(msg, want), "%s", msg);
    cr_assert_not_null(strstr(msg, "more than one minor version apart"), "%s", msg);
    cr_assert_not_null(strstr(msg, "upgrade the server"), "%s", msg);
    /* a client of a newer major: told in our format */
    cr_assert_eq(refusal(hello(FS_LOCAL_MAJOR + 1, 0, NULL, 0), msg, sizeof msg), FS_ERR_VERSION, "%s", msg);
    cr_assert_not_null(strstr(msg, "different major versions"), "%s", msg);
    cr_assert_not_null(strstr(msg, "upgrade the server"), "%s", msg);
    /* the rule itself, both ways and from both sides */
    fs_error_t err = {0};
    unsigned m;
    cr_assert_eq(fs_local_negotiate(3, FS_LOCAL_MAJOR, 2, 1, &m, &err), FS_OK);
    cr_assert_eq(m, 2);
    cr_assert_eq(fs_local_negotiate(3, FS_LOCAL_MAJOR, 4, 0, &m, &err), FS_OK);
    cr_assert_eq(m, 3);
    cr_assert_eq(fs_local_negotiate(3, FS_LOCAL_MAJOR, 1, 1, &m, &err), FS_ERR_VERSION);
    cr_assert_not_null(strstr(err.msg, "client library speaks local protocol 6.1 and this server 6.3"), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "upgrade the client library"), "%s", err.msg);
    cr_assert_eq(fs_local_negotiate(1, FS_LOCAL_MAJOR, 3, 0, &m, &err), FS_ERR_VERSION);
    cr_assert_not_null(strstr(err.msg, "the server speaks local protocol 6.3 and this client library 6.1"), "%s",
                       err.msg);
    cr_assert_not_null(strstr(err.msg, "upgrade the client library"), "%s", err.msg);
    /* and the server kept serving */
    fs_client_t *c = connect_ok();
    works(c);
    fs_close(c);
}

/* A featstore 0.1 client (local protocol 5: raw structs) gets an error in
 * its own format: {int32 status; char message[500]} under a v5 header. */
Test(local, a_featstore_0_1_client_is_told_to_upgrade_in_its_own_format)
{
    int fd = raw_connect();
    struct { uint32_t api_version, slots; int64_t pid; int32_t reader, pad; } old_hello = {1, 4, getpid(), -1, 0};
    fs_local_hdr_t h = {.magic = FS_LOCAL_MAGIC, .version = 5, .type = FS_LOCAL_HELLO, .len = sizeof old_hello};
    char frame[sizeof h + sizeof old_hello];
    memcpy(frame, &h, sizeof h);
    memcpy(frame + sizeof h, &old_hello, sizeof old_hello);
    cr_assert_eq(send(fd, frame, sizeof frame, 0), (ssize_t)sizeof frame);
    char buf[1024];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    cr_assert_eq(n, (ssize_t)(sizeof h + FS_LOCAL_LEGACY_ERROR_BYTES));
    fs_local_hdr_t got;
    memcpy(&got, buf, sizeof got);
    cr_assert_eq(got.magic, FS_LOCAL_MAGIC);
    cr_assert_eq(got.version, 5, "the old client's own major, or it would not read the error");
    cr_assert_eq(got.type, FS_LOCAL_ERROR);
    cr_assert_eq(got.len, FS_LOCAL_LEGACY_ERROR_BYTES);
    int32_t status;
    memcpy(&status, buf + sizeof h, 4);
    const char *msg = buf + sizeof h + 4;
    cr_assert_eq(status, FS_ERR_VERSION);
    cr_assert_not_null(memchr(msg, 0, 500), "the message is terminated");
    cr_assert_not_null(strstr(msg, "5 (featstore 0.1)"), "%s", msg);
    cr_assert_not_null(strstr(msg, "upgrade the client library"), "%s", msg);
    cr_assert_eq(recv(fd, buf, sizeof buf, 0), 0, "then the server hangs up");
    close(fd);
}

/* A featstore 0.1 server answers a 1.x HELLO with "malformed message" in
 * its own format; the client must say which side to upgrade. */
static void *old_server_main(void *p)
{
    int lfd = *(int *)p, fd = accept(lfd, NULL, NULL);
    char buf[4096];
    if (fd >= 0 && recv(fd, buf, sizeof buf, 0) > 0)
        fs_local_send_legacy_error(fd, 5, FS_ERR_INVALID_ARGUMENT, "unknown or malformed message");
    if (fd >= 0) close(fd);
    return NULL;
}

Test(local, this_client_names_a_featstore_0_1_server)
{
    char path[300];
    snprintf(path, sizeof path, "%s/old.sock", dir);
    int lfd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    strcpy(a.sun_path, path);
    cr_assert_eq(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(listen(lfd, 1), 0);
    pthread_t t;
    pthread_create(&t, NULL, old_server_main, &lfd);
    char u[320];
    snprintf(u, sizeof u, "unix://%s", path);
    fs_client_t *c;
    cr_assert_eq(fs_connect(u, NULL, &c), FS_ERR_VERSION, "%s", fs_client_errstr(c));
    const char *msg = fs_client_errstr(c);
    cr_assert_not_null(strstr(msg, "the server speaks local protocol 5 (featstore 0.1)"), "%s", msg);
    cr_assert_not_null(strstr(msg, "upgrade the server"), "%s", msg);
    cr_assert_null(strstr(fs_strerror(FS_ERR_VERSION), "unknown"), "%s", fs_strerror(FS_ERR_VERSION));
    fs_close(c);
    pthread_join(t, NULL);
    close(lfd);
}

/* Fields added later (proto3) are skipped by older readers: a HELLO with a
 * field this server does not know is accepted. */
Test(local, a_hello_with_fields_from_the_future_is_accepted)
{
    const unsigned char field_99[] = {0x98, 0x06, 0x01, 0xa2, 0x06, 0x03, 'n', 'e', 'w'}; /* 99: varint, 100: "new" */
    int fd = hello(FS_LOCAL_MAJOR, FS_LOCAL_MINOR, field_99, sizeof field_99);
    char buf[FS_LOCAL_MAX_MSG];
    int fds[FS_LOCAL_MAX_FDS], nfds = 0;
    fs_local_frame_t f;
    cr_assert_eq(fs_local_recv(fd, &f, buf, sizeof buf, fds, &nfds, FS_LOCAL_MAX_FDS, 0), 1);
    cr_assert_eq(f.type, FS_LOCAL_WELCOME, "frame type %d", f.type);
    featstore_local_Welcome w = featstore_local_Welcome_init_zero;
    fs_error_t err;
    cr_assert_eq(fs_local_decode(buf, f.len, featstore_local_Welcome_fields, &w, "welcome", &err), FS_OK, "%s", err.msg);
    cr_assert_eq(w.minor, FS_LOCAL_MINOR);
    cr_assert_eq(w.num_slots, 1);
    for (int i = 0; i < nfds; i++) close(fds[i]);
    close(fd);
}

/* The public structs' sizes (featstore/types.h) at the API: a forgotten
 * struct_size and an option from a newer header are clear errors. */
Test(local, struct_size_is_checked_at_the_api)
{
    fs_client_t *c;
    fs_connect_opts_t o = {0};
    cr_assert_eq(fs_connect(uri, &o, &c), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(fs_client_errstr(c), "fs_connect_opts_t.struct_size is 0"), "%s", fs_client_errstr(c));
    fs_close(c);
    struct { fs_connect_opts_t o; int future; } newer = {FS_CONNECT_OPTS_INIT, 0};
    newer.o.struct_size = sizeof newer;
    cr_assert_eq(fs_connect(uri, &newer.o, &c), FS_OK, "an unknown field left 0 is fine: %s", fs_client_errstr(c));
    fs_close(c);
    newer.future = 1;
    cr_assert_eq(fs_connect(uri, &newer.o, &c), FS_ERR_UNSUPPORTED);
    cr_assert_not_null(strstr(fs_client_errstr(c), "upgrade libfeatstore"), "%s", fs_client_errstr(c));
    fs_close(c);

    c = connect_ok();
    int64_t seeds[4] = {0, 1, 2, 3};
    fs_sample_req_t r = {.num_hops = 1, .fanout = {5}}; /* no struct_size */
    fs_batch_t *b;
    cr_assert_eq(fs_sample(c, seeds, 4, &r, &b), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(fs_client_errstr(c), "fs_sample_req_t.struct_size is 0"), "%s", fs_client_errstr(c));
    fs_sample_req_t ok = FS_SAMPLE_REQ_INIT;
    ok.num_hops = 1, ok.fanout[0] = 5;
    cr_assert_eq(fs_sample(c, seeds, 4, &ok, &b), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(b->kind, FS_BATCH_SAMPLE);
    cr_assert_eq(b->num_hops, 1);
    cr_assert_null(b->features, "a sample has no feature part");
    fs_batch_free(b);
    cr_assert_eq(fs_gather(c, seeds, 4, "feat", FS_DTYPE_INVALID, &b), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(b->kind, FS_BATCH_GATHER);
    cr_assert_eq(b->num_hops, 0);
    cr_assert_null(b->blocks, "a gather has no sample part");
    fs_batch_free(b);
    fs_close(c);
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

/* A peer that hangs up with our frames unread resets the socket, and Linux
 * reports the reset before the frame the peer sent first: the server's
 * refusals (a uid not allowed, a handshake timeout) raced with the
 * client's HELLO and reached it as "Connection reset by peer" instead of
 * the reason (seen in CI, test_local_guards). fs_local_recv reads past the
 * reset to that frame; a reset with no frame behind it reads as closed. */
Test(local_frames, the_error_a_peer_left_before_hanging_up_is_read_past_the_reset)
{
    int sv[2];
    char buf[2048];
    int fds[FS_LOCAL_MAX_FDS], nfds = 0;
    fs_local_frame_t f;
    cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
    cr_assert_eq(fs_local_send(sv[0], FS_LOCAL_HELLO, "hello", 5, NULL, 0, 0), 0); /* never read */
    cr_assert_eq(fs_local_send_error(sv[1], FS_ERR_PERMISSION, "uid 65534 may not connect", 0), 0);
    close(sv[1]);
    cr_assert_eq(fs_local_recv(sv[0], &f, buf, sizeof buf, fds, &nfds, FS_LOCAL_MAX_FDS, 0), 1, "%s",
                 strerror(errno));
    cr_assert_eq(f.type, FS_LOCAL_ERROR);
    featstore_local_Error e = featstore_local_Error_init_zero;
    fs_error_t err;
    cr_assert_eq(fs_local_decode(buf, f.len, featstore_local_Error_fields, &e, "error", &err), FS_OK);
    cr_assert_eq(e.status, FS_ERR_PERMISSION);
    cr_assert_str_eq(e.message, "uid 65534 may not connect");
    cr_assert_eq(fs_local_recv(sv[0], &f, buf, sizeof buf, fds, &nfds, FS_LOCAL_MAX_FDS, 0), 0, "then closed");
    close(sv[0]);

    cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0); /* a reset with nothing behind it */
    cr_assert_eq(fs_local_send(sv[0], FS_LOCAL_HELLO, "hello", 5, NULL, 0, 0), 0);
    close(sv[1]);
    cr_assert_eq(fs_local_recv(sv[0], &f, buf, sizeof buf, fds, &nfds, FS_LOCAL_MAX_FDS, 0), 0, "%s",
                 strerror(errno));
    close(sv[0]);
}
