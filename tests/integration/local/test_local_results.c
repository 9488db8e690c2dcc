/* test_local_results.c — the unix:// transport's answers (local_fixture.h:
 * a server in this process over a generated dataset): results bit-identical
 * to the in-process engines, also batches sampled straight into a one-slot
 * connection's slot as it grows and moves (every array inside
 * fs_batch_region); errors that leave the connection working, limits,
 * connections sharing the server's mappings, labels and splits; garbage on
 * the socket refused without harm; the server's stop seen by its clients. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client_checks.h"
#include "featstore/client.h"
#include "fs_local.h"
#include "local_fixture.h"
#include "test_util.h"

TestSuite(local, .init = setup, .fini = teardown, .timeout = 600);
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
