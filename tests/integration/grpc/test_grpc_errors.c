/* test_grpc_errors.c — the gRPC transport when a call goes wrong: errors map
 * to the right status with a message naming the problem, limits answer
 * RESOURCE, undecodable requests and unknown methods leave the server
 * serving, a port with no server or a stopped server answers UNAVAILABLE, a
 * port in use is refused naming it, expired deadlines answer TIMEOUT, a peer
 * that fills every array of every hop (tests/integration/grpc/grpc_fake_server.py) is owned
 * whole, Stats and the connected-clients gauge count gRPC peers; and
 * locality-aware sampling, which a remote trainer cannot use: the field and
 * edge weights round-trip through fs_wire, locality > 1 is refused with its
 * reason (by the server too, whoever sends it), s = 1 and FS_LOCALITY_AUTO
 * at 1 are the plain sampler. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "featstore/admin.h"
#include "featstore/client.h"
#include "fs_wire.h"
#include "grpc_fixture.h"
#include "test_util.h"

TestSuite(grpc, .timeout = 120);
/* ---- errors ------------------------------------------------------------------------- */

Test(grpc, errors_map_to_statuses_with_messages)
{
    env_t e;
    env_open(&e, FS_DTYPE_F32, 16, NULL);
    fs_client_t *c = connect_to(&e);
    fs_batch_t *b;
    int64_t bad[] = {1, 2, 987654321, 3};
    cr_assert_eq(fs_gather(c, bad, 4, "feat", FS_DTYPE_F32, &b), FS_ERR_INVALID_ARGUMENT);
    cr_assert_null(b);
    cr_assert(strstr(fs_client_errstr(c), "987654321"), "message should name the id: %s", fs_client_errstr(c));

    fs_sample_req_t req = SAMPLE_REQ(.num_hops = 2, .fanout = {5, 5});
    cr_assert_eq(fs_sample(c, bad, 4, &req, &b), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(fs_client_errstr(c), "987654321"), "message should name the seed: %s", fs_client_errstr(c));
    cr_assert_eq(fs_sample_gather(c, bad, 4, &req, "feat", FS_DTYPE_F32, &b), FS_ERR_INVALID_ARGUMENT);

    int64_t good[] = {1, 2};
    cr_assert_eq(fs_gather(c, good, 2, "no_such_table", FS_DTYPE_F32, &b), FS_ERR_NOT_FOUND);
    cr_assert(strstr(fs_client_errstr(c), "no_such_table"), "%s", fs_client_errstr(c));
    cr_assert_eq(fs_sample_gather(c, good, 2, &req, "no_such_table", FS_DTYPE_F32, &b), FS_ERR_NOT_FOUND);

    fs_sample_req_t zero = SAMPLE_REQ(.num_hops = 1, .fanout = {0});
    cr_assert_eq(fs_sample(c, good, 2, &zero, &b), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(fs_client_errstr(c), "fanout"), "%s", fs_client_errstr(c));

    /* the connection still works after all that */
    cr_assert_eq(fs_gather(c, good, 2, "feat", FS_DTYPE_F32, &b), FS_OK, "%s", fs_client_errstr(c));
    fs_batch_free(b);
    fs_close(c);
    env_close(&e);
}

Test(grpc, limits_answer_resource_exhausted)
{
    fs_limits_t lim;
    fs_limits_default(&lim);
    lim.max_ids = 100;
    lim.max_fanout_product = 50;
    env_t e;
    env_open(&e, FS_DTYPE_F32, 16, &lim);
    fs_client_t *c = connect_to(&e);
    int64_t *ids = some_ids(101, e.ds->num_nodes, 6);
    fs_batch_t *b;
    cr_assert_eq(fs_gather(c, ids, 101, "feat", FS_DTYPE_F32, &b), FS_ERR_RESOURCE);
    cr_assert(strstr(fs_client_errstr(c), "limit"), "%s", fs_client_errstr(c));
    fs_sample_req_t req = SAMPLE_REQ(.num_hops = 2, .fanout = {10, 10});
    cr_assert_eq(fs_sample(c, ids, 10, &req, &b), FS_ERR_RESOURCE);
    cr_assert_eq(fs_sample_gather(c, ids, 101, &req, "feat", FS_DTYPE_F32, &b), FS_ERR_RESOURCE);
    cr_assert_eq(fs_gather(c, ids, 100, "feat", FS_DTYPE_F32, &b), FS_OK, "%s", fs_client_errstr(c));
    fs_batch_free(b);
    free(ids);
    fs_close(c);
    env_close(&e);
}

Test(grpc, garbage_requests_are_refused_and_the_server_keeps_serving)
{
    env_t e;
    env_open(&e, FS_DTYPE_F32, 16, NULL);
    char details[512];
    /* field 3 (ids) claims 2^28 bytes that are not there; then a bad wire type */
    const unsigned char garbage[] = {0x1a, 0x80, 0x80, 0x80, 0x80, 0x01, 0x01, 0x02, 0xff, 0xff, 0xff};
    const char *methods[] = {FS_WIRE_METHOD_INFO, FS_WIRE_METHOD_SAMPLE, FS_WIRE_METHOD_GATHER,
                             FS_WIRE_METHOD_SAMPLE_GATHER, FS_WIRE_METHOD_STATS};
    for (int i = 0; i < 5; i++) {
        grpc_status_code code = raw_call(e.port, methods[i], garbage, sizeof garbage, details, sizeof details);
        cr_assert_eq(code, GRPC_STATUS_INVALID_ARGUMENT, "%s: %d %s", methods[i], code, details);
        cr_assert(strstr(details, "not a valid message"), "%s: %s", methods[i], details);
    }
    cr_assert_eq(raw_call(e.port, "/featstore.v1.FeatStore/Nope", garbage, 3, details, sizeof details),
                 GRPC_STATUS_UNIMPLEMENTED);
    cr_assert(strstr(details, "Nope"), "%s", details);
    /* a valid message with an api_version this server does not speak */
    const unsigned char v7[] = {0x08, 0x07};
    cr_assert_eq(raw_call(e.port, FS_WIRE_METHOD_INFO, v7, sizeof v7, details, sizeof details),
                 GRPC_STATUS_FAILED_PRECONDITION);
    cr_assert(strstr(details, "api_version 7"), "%s", details);

    fs_client_t *c = connect_to(&e);
    fs_info_t *info;
    cr_assert_eq(fs_info(c, &info), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(info->num_nodes, e.ds->num_nodes);
    fs_info_free(info);
    fs_close(c);
    env_close(&e);
}

Test(grpc, no_server_means_unavailable)
{
    /* a port that was free a moment ago */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    char uri[64];
    snprintf(uri, sizeof uri, "grpc://127.0.0.1:%d", ntohs(a.sin_port));
    fs_client_t *c;
    cr_assert_eq(fs_connect(uri, NULL, &c), FS_ERR_UNAVAILABLE);
    cr_assert(strstr(fs_client_errstr(c), "cannot connect"), "%s", fs_client_errstr(c));
    fs_info_t *info;
    cr_assert_eq(fs_info(c, &info), FS_ERR_UNAVAILABLE); /* the failed connection is inert */
    fs_close(c);
}

/* A peer that is not featstore's server may fill every array of every hop
 * (tests/integration/grpc/grpc_fake_server.py: 8 hops, edge ids and weights included): the
 * batch owns them all. It kept room for 4 arrays a hop and wrote past it. */
Test(grpc, a_sample_with_every_array_of_every_hop_is_owned_whole)
{
    FILE *f;
    pid_t pid = tu_spawn(&f, "/usr/bin/python3 %s/grpc_fake_server.py", FS_TESTS_SRC_DIR);
    int port = 0;
    char line[64] = "";
    cr_assert(fgets(line, sizeof line, f) && sscanf(line, "READY %d", &port) == 1, "the fake server: %s", line);
    char uri[64];
    snprintf(uri, sizeof uri, "grpc://127.0.0.1:%d", port);
    fs_client_t *c;
    cr_assert_eq(fs_connect(uri, NULL, &c), FS_OK, "%s", fs_client_errstr(c));
    fs_sample_req_t req = SAMPLE_REQ(.num_hops = FS_MAX_HOPS, .want_edge_ids = 1);
    for (int h = 0; h < FS_MAX_HOPS; h++) req.fanout[h] = 1;
    int64_t seed = 42;
    for (int round = 0; round < 3; round++) {
        fs_batch_t *b;
        cr_assert_eq(fs_sample(c, &seed, 1, &req, &b), FS_OK, "%s", fs_client_errstr(c));
        cr_assert_eq(b->num_hops, FS_MAX_HOPS);
        for (int h = 0; h < FS_MAX_HOPS; h++) {
            const fs_block_t *k = &b->blocks[h];
            cr_assert(k->num_edges == 1 && k->edge_ids[0] == 7 && k->edge_weights && k->edge_weights[0] == 1.0f,
                      "hop %d", h);
        }
        fs_batch_free(b);
    }
    fs_close(c);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    fclose(f);
}

Test(grpc, a_port_in_use_is_refused)
{
    env_t e;
    env_open(&e, FS_DTYPE_F32, 16, NULL);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", e.port);
    fs_grpc_server_t *second = NULL;
    fs_error_t err = {0};
    int port = 0;
    cr_assert_eq(fs_grpc_server_start(addr, e.engine, e.metrics, 1, &second, &port, &err), FS_ERR_IO);
    cr_assert_null(second);
    cr_assert(strstr(err.msg, addr), "%s", err.msg);
    fs_client_t *c = connect_to(&e); /* the first server is unharmed */
    fs_info_t *info;
    cr_assert_eq(fs_info(c, &info), FS_OK, "%s", fs_client_errstr(c));
    fs_info_free(info);
    fs_close(c);
    env_close(&e);
}

Test(grpc, stopped_server_means_unavailable)
{
    env_t e;
    env_open(&e, FS_DTYPE_F32, 16, NULL);
    fs_client_t *c = connect_to(&e);
    fs_info_t *info;
    cr_assert_eq(fs_info(c, &info), FS_OK, "%s", fs_client_errstr(c));
    fs_info_free(info);
    fs_grpc_server_stop(e.server);
    e.server = NULL;
    cr_assert_eq(fs_info(c, &info), FS_ERR_UNAVAILABLE, "%s", fs_client_errstr(c));
    fs_close(c);
    env_close(&e);
}

/* Whether a 1 ms deadline passes is up to the machine, so either outcome is
 * accepted; what must hold is that an expired call reports TIMEOUT and that
 * the server, whose streams get cancelled mid-way, keeps serving. */
Test(grpc, deadline_exceeded_calls_fail_cleanly)
{
    env_t e;
    env_open(&e, FS_DTYPE_F32, 40, NULL);
    fs_connect_opts_t opts = {.struct_size = sizeof(fs_connect_opts_t), .timeout_ms = 1};
    fs_client_t *c;
    cr_assert_eq(fs_connect(e.uri, &opts, &c), FS_OK, "%s", fs_client_errstr(c));
    int64_t n = 40000;
    int64_t *ids = some_ids(n, e.ds->num_nodes, 8);
    int timeouts = 0;
    for (int k = 0; k < 5; k++) {
        fs_batch_t *b;
        fs_status_t st = fs_gather(c, ids, n, "feat", FS_DTYPE_F32, &b);
        cr_assert(st == FS_OK || st == FS_ERR_TIMEOUT, "%s: %s", fs_strerror(st), fs_client_errstr(c));
        if (st == FS_OK) fs_batch_free(b);
        else cr_assert(strstr(fs_client_errstr(c), "Gather"), "%s", fs_client_errstr(c));
        timeouts += st == FS_ERR_TIMEOUT;
    }
    cr_log_info("%d of 5 gathers under a 1 ms deadline timed out", timeouts);
    fs_close(c);
    c = connect_to(&e);
    fs_batch_t *b;
    cr_assert_eq(fs_gather(c, ids, n, "feat", FS_DTYPE_F32, &b), FS_OK, "%s", fs_client_errstr(c));
    void *want = gather_in_process(&e, "feat", ids, n, FS_DTYPE_F32, 160);
    cr_assert(memcmp(b->features, want, (size_t)n * 160) == 0, "gathered rows differ");
    free(want);
    fs_batch_free(b);
    free(ids);
    fs_close(c);
    env_close(&e);
}

Test(grpc, stats_counts_grpc_calls)
{
    env_t e;
    env_open(&e, FS_DTYPE_F32, 16, NULL);
    fs_client_t *c = connect_to(&e);
    int64_t seeds[] = {1, 2, 3};
    fs_sample_req_t req = SAMPLE_REQ(.num_hops = 1, .fanout = {3});
    fs_batch_t *b;
    cr_assert_eq(fs_sample(c, seeds, 3, &req, &b), FS_OK, "%s", fs_client_errstr(c));
    fs_batch_free(b);
    char *text;
    cr_assert_eq(fs_stats(c, &text), FS_OK, "%s", fs_client_errstr(c));
    cr_assert(strstr(text, "featstore_requests_total{method=\"Sample\",transport=\"grpc\"} 1\n"), "%s", text);
    fs_stats_free(text);
    fs_close(c);
    env_close(&e);
}

static int64_t grpc_clients(fs_metrics_t *m)
{
    char *text = fs_metrics_render(m);
    const char *key = "featstore_connected_clients{transport=\"grpc\"} ";
    const char *p = strstr(text, key);
    cr_assert_not_null(p, "%s", text);
    int64_t n = strtoll(p + strlen(key), NULL, 10);
    free(text);
    return n;
}

Test(grpc, connected_clients_are_peers_seen_lately)
{
    env_t e;
    env_open(&e, FS_DTYPE_F32, 16, NULL);
    cr_assert_eq(grpc_clients(e.metrics), 0);
    fs_client_t *a = connect_to(&e), *b = connect_to(&e);
    fs_info_t *info;
    cr_assert_eq(fs_info(a, &info), FS_OK);
    fs_info_free(info);
    cr_assert_eq(fs_info(b, &info), FS_OK);
    fs_info_free(info);
    cr_assert_eq(fs_info(a, &info), FS_OK, "a second call from a peer is not a second client");
    fs_info_free(info);
    cr_assert_eq(grpc_clients(e.metrics), 2);
    fs_close(a);
    fs_close(b);
    fs_grpc_server_idle_timeout(e.server, 0.2);
    int64_t n = 2;
    for (int i = 0; i < 50 && (n = grpc_clients(e.metrics)) != 0; i++) usleep(100 * 1000);
    cr_assert_eq(n, 0, "idle peers are forgotten");
    env_close(&e);
}

/* ---- locality-aware sampling -------------------------------------------------------- */

Test(grpc, wire_carries_locality_and_edge_weights_both_ways)
{
    int64_t ids[3] = {4, 5, 6};
    fs_sample_req_t req = SAMPLE_REQ(.num_hops = 2, .fanout = {5, 3}, .seed = 3, .locality = 2.5);
    featstore_v1_SampleRequest msg;
    fs_wire_bytes_t seed_bytes;
    fs_wire_sample_request(&req, ids, 3, &seed_bytes, &msg);
    uint8_t buf[4096];
    pb_ostream_t os = pb_ostream_from_buffer(buf, sizeof buf);
    cr_assert(pb_encode(&os, featstore_v1_SampleRequest_fields, &msg), "%s", PB_GET_ERROR(&os));
    featstore_v1_SampleRequest back = featstore_v1_SampleRequest_init_zero;
    pb_istream_t is = pb_istream_from_buffer(buf, os.bytes_written);
    cr_assert(pb_decode(&is, featstore_v1_SampleRequest_fields, &back), "%s", PB_GET_ERROR(&is));
    fs_sample_req_t got;
    fs_error_t err = {0};
    cr_assert_eq(fs_wire_sample_req_from_msg(&back, &got, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(got.locality, 2.5);

    /* a result with weights on one hop and none on the other */
    int64_t nodes[3] = {7, 8, 9}, seed_local[1] = {0}, off0[2] = {0, 2}, dst0[2] = {0, 0}, src0[2] = {1, 2};
    int64_t off1[4] = {0, 0, 0, 0};
    float w0[2] = {1.5f, 3.25f};
    fs_sample_result_t r = {.num_hops = 2, .num_nodes = 3, .nodes = nodes, .num_seeds = 1, .seed_local = seed_local};
    r.block[0] = (fs_block_t){.num_dst = 1, .num_src = 3, .num_edges = 2, .dst_offsets = off0, .edge_dst = dst0,
                              .edge_src = src0, .edge_weights = w0};
    r.block[1] = (fs_block_t){.num_dst = 3, .num_src = 3, .num_edges = 0, .dst_offsets = off1};
    fs_wire_sample_src_t src;
    featstore_v1_SampleResponse resp;
    fs_wire_sample_response(&r, &src, &resp);
    os = pb_ostream_from_buffer(buf, sizeof buf);
    cr_assert(pb_encode(&os, featstore_v1_SampleResponse_fields, &resp), "%s", PB_GET_ERROR(&os));
    featstore_v1_SampleResponse in = featstore_v1_SampleResponse_init_zero;
    fs_wire_sample_dst_t dst;
    memset(&dst, 0, sizeof dst);
    fs_wire_sample_response_prepare(&in, &dst);
    is = pb_istream_from_buffer(buf, os.bytes_written);
    cr_assert(pb_decode(&is, featstore_v1_SampleResponse_fields, &in), "%s", PB_GET_ERROR(&is));
    fs_sample_result_t out;
    cr_assert_eq(fs_wire_sample_result(&in, &dst, &out, &err), FS_OK, "%s", err.msg);
    cr_assert_not_null(out.block[0].edge_weights);
    cr_assert_arr_eq(out.block[0].edge_weights, w0, sizeof w0);
    cr_assert_null(out.block[1].edge_weights, "no weights sent, none received");
    cr_assert_eq(fs_sample_result_bytes(&out), fs_sample_result_bytes(&r));
    /* weights that do not match the edge count are named */
    dst.arr[0][4].len = 4;
    cr_assert_eq(fs_wire_sample_result(&in, &dst, &out, &err), FS_ERR_FORMAT);
    cr_assert(strstr(err.msg, "edge_weights"), "%s", err.msg);
    fs_wire_sample_dst_free(&dst);
}

Test(grpc, locality_is_refused_for_remote_trainers_with_a_reason)
{
    env_t e;
    env_open(&e, FS_DTYPE_F32, 16, NULL);
    fs_client_t *c = connect_to(&e);
    int64_t *seeds = some_ids(100, e.ds->num_nodes, 5);
    fs_batch_t *b = NULL;
    fs_sample_req_t req = SAMPLE_REQ(.num_hops = 2, .fanout = {10, 5}, .seed = 5, .want_edge_ids = 1, .locality = 4);
    cr_assert_eq(fs_sample(c, seeds, 100, &req, &b), FS_ERR_UNSUPPORTED);
    cr_assert_null(b);
    cr_assert(strstr(fs_client_errstr(c), "remote (gRPC) trainer reads as the CPU"), "%s", fs_client_errstr(c));
    cr_assert_eq(fs_sample_gather(c, seeds, 100, &req, "feat", FS_DTYPE_F32, &b), FS_ERR_UNSUPPORTED);
    cr_assert(strstr(fs_client_errstr(c), "needs a placement and a reader GPU"), "%s", fs_client_errstr(c));
    /* s = 1 is the plain sampler: accepted, bit-identical, no weights; FS_LOCALITY_AUTO starts at 1 */
    fs_sampler_t *s;
    fs_error_t err = {0};
    cr_assert_eq(fs_sampler_create(&s, &err), FS_OK);
    fs_sample_req_t plain = req;
    plain.locality = 0;
    fs_sample_result_t want;
    sample_in_process(&e, s, seeds, 100, &plain, &want);
    const double ok[] = {1, FS_LOCALITY_AUTO};
    for (int i = 0; i < 2; i++) {
        req.locality = ok[i];
        cr_assert_eq(fs_sample(c, seeds, 100, &req, &b), FS_OK, "%s", fs_client_errstr(c));
        assert_same_sample(b, &want);
        for (int h = 0; h < 2; h++) cr_assert_null(b->blocks[h].edge_weights);
        fs_batch_free(b);
    }
    /* Algorithm 2 runs on grpc:// connections too; its boost is then refused like any other */
    double boost = 0;
    cr_assert_eq(fs_report_load_ratio(c, 0.9, &boost), FS_OK);
    cr_assert_eq(boost, 2);
    cr_assert_eq(fs_sample(c, seeds, 100, &req, &b), FS_ERR_UNSUPPORTED);
    req.locality = NAN;
    cr_assert_eq(fs_sample(c, seeds, 100, &req, &b), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(fs_client_errstr(c), "locality"), "%s", fs_client_errstr(c));

    /* the server checks the field itself, whoever sends it */
    char details[512];
    const double wrong[] = {FS_LOCALITY_AUTO, NAN, 0.25, 3};
    const grpc_status_code code[] = {GRPC_STATUS_INVALID_ARGUMENT, GRPC_STATUS_INVALID_ARGUMENT,
                                     GRPC_STATUS_INVALID_ARGUMENT, GRPC_STATUS_UNIMPLEMENTED};
    const char *says[] = {"must be resolved by the client library", "locality = nan", "locality = 0.25",
                          "reads as the CPU"};
    for (int i = 0; i < 4; i++) {
        fs_sample_req_t raw = SAMPLE_REQ(.num_hops = 2, .fanout = {10, 5}, .seed = 5, .locality = wrong[i]);
        featstore_v1_SampleRequest msg;
        fs_wire_bytes_t seed_bytes;
        fs_wire_sample_request(&raw, seeds, 100, &seed_bytes, &msg);
        uint8_t buf[4096];
        pb_ostream_t os = pb_ostream_from_buffer(buf, sizeof buf);
        cr_assert(pb_encode(&os, featstore_v1_SampleRequest_fields, &msg), "%s", PB_GET_ERROR(&os));
        grpc_status_code got = raw_call(e.port, FS_WIRE_METHOD_SAMPLE, buf, os.bytes_written, details, sizeof details);
        cr_assert_eq(got, code[i], "locality %g: status %d (%s)", wrong[i], got, details);
        cr_assert(strstr(details, says[i]), "locality %g: %s", wrong[i], details);
    }
    fs_sampler_destroy(s);
    free(seeds);
    fs_close(c);
    env_close(&e);
}
