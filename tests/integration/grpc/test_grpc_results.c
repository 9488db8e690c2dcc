/* test_grpc_results.c — the gRPC transport's answers, end to end: the
 * client library over grpc:// to an in-process server (grpc_fixture.h),
 * compared bit for bit with the engines run in-process — Info, labels and
 * splits, Sample (also whatever the server's --threads, with concurrent
 * clients), Gather spanning chunks, float16 as stored and as float32,
 * SampleGather, concurrent connections; the fs_wire helpers round-tripping
 * on their own; and a third-party client (Python grpcio + protoc-generated
 * messages, tests/integration/grpc/grpc_third_party.py) reading the same data the dataset
 * files hold. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client_checks.h"
#include "featstore/client.h"
#include "fs_wire.h"
#include "grpc_fixture.h"
#include "test_util.h"

TestSuite(grpc, .timeout = 120);

/* ---- the wire helpers alone ----------------------------------------------------- */

Test(grpc, wire_bytes_fields_round_trip_and_borrow)
{
    int64_t ids[1000];
    for (int i = 0; i < 1000; i++) ids[i] = (int64_t)i * 7919 - 3;
    fs_sample_req_t req = SAMPLE_REQ(.num_hops = 3, .fanout = {5, FS_FANOUT_ALL, 2},
                           .mode = {FS_SAMPLE_UNIFORM, FS_SAMPLE_WEIGHTED, FS_SAMPLE_UNIFORM_REPLACE}, .seed = 77,
                           .want_edge_ids = 1);
    featstore_v1_SampleRequest msg;
    fs_wire_bytes_t seed_bytes;
    fs_wire_sample_request(&req, ids, 1000, &seed_bytes, &msg);
    uint8_t buf[16384];
    pb_ostream_t os = pb_ostream_from_buffer(buf, sizeof buf);
    cr_assert(pb_encode(&os, featstore_v1_SampleRequest_fields, &msg), "%s", PB_GET_ERROR(&os));

    for (int borrow = 0; borrow < 2; borrow++) {
        featstore_v1_SampleRequest back = featstore_v1_SampleRequest_init_zero;
        fs_wire_buf_t seeds = {.flags = borrow ? FS_WIRE_BORROW : 0, .align = 1};
        fs_wire_set_buf(&back.seeds, &seeds);
        pb_istream_t is = pb_istream_from_buffer(buf, os.bytes_written);
        cr_assert(pb_decode(&is, featstore_v1_SampleRequest_fields, &back), "%s", PB_GET_ERROR(&is));
        cr_assert_eq(seeds.len, sizeof ids);
        cr_assert(memcmp(seeds.data, ids, sizeof ids) == 0);
        int inside = (const uint8_t *)seeds.data >= buf && (const uint8_t *)seeds.data < buf + sizeof buf;
        cr_assert_eq(inside, borrow, "borrowed data must point into the input, copied data must not");
        fs_sample_req_t got;
        fs_error_t err = {0};
        cr_assert_eq(fs_wire_sample_req_from_msg(&back, &got, &err), FS_OK, "%s", err.msg);
        cr_assert_eq(got.num_hops, 3);
        cr_assert_arr_eq(got.fanout, req.fanout, sizeof(int) * 3);
        cr_assert_arr_eq(got.mode, req.mode, sizeof(fs_sample_mode_t) * 3);
        cr_assert_eq(got.seed, 77);
        cr_assert_eq(got.want_edge_ids, 1);
        fs_wire_buf_free(&seeds);
    }
    /* a seeds field that is not whole int64s is named in the error */
    fs_wire_buf_t odd = {.data = ids, .len = 13};
    const int64_t *p;
    int64_t n;
    fs_error_t err = {0};
    cr_assert_eq(fs_wire_int64s(&odd, "seeds", &p, &n, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "seeds") && strstr(err.msg, "13"), "%s", err.msg);
}

/* ---- results ------------------------------------------------------------------ */

Test(grpc, info_matches_the_dataset)
{
    env_t e;
    env_open(&e, FS_DTYPE_F32, 24, NULL);
    fs_client_t *c = connect_to(&e);
    fs_info_t *info;
    cr_assert_eq(fs_info(c, &info), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(info->num_nodes, e.ds->num_nodes);
    cr_assert_eq(info->num_edges, e.ds->num_edges);
    cr_assert_eq(info->symmetric, 1);
    cr_assert_str_eq(info->dataset, e.ds->name);
    cr_assert_str_eq(info->server_version, FS_SERVER_VERSION);
    cr_assert_eq(info->num_tables, 2, "feat and labels");
    cr_assert_str_eq(info->tables[0].name, "feat");
    cr_assert_eq(info->tables[0].dtype, FS_DTYPE_F32);
    cr_assert_eq(info->tables[0].rows, e.ds->num_nodes);
    cr_assert_eq(info->tables[0].dim, 24);
    cr_assert_eq(info->num_splits, e.ds->num_splits);
    fs_info_free(info);
    fs_close(c);
    env_close(&e);
}

Test(grpc, labels_and_splits_are_served)
{
    env_t e;
    env_open(&e, FS_DTYPE_F32, 24, NULL);
    fs_client_t *c = connect_to(&e);
    tc_labels_and_splits(c, e.ds);
    fs_close(c);
    env_close(&e);
}

Test(grpc, sample_is_bit_identical_to_in_process)
{
    env_t e;
    env_open(&e, FS_DTYPE_F32, 16, NULL);
    fs_client_t *c = connect_to(&e);
    fs_sampler_t *s;
    fs_error_t err = {0};
    cr_assert_eq(fs_sampler_create(&s, &err), FS_OK);
    const fs_sample_req_t reqs[] = {
        SAMPLE_REQ(.num_hops = 2, .fanout = {10, 5}, .seed = 42, .want_edge_ids = 1),
        SAMPLE_REQ(.num_hops = 3, .fanout = {4, 3, 2},
         .mode = {FS_SAMPLE_UNIFORM_REPLACE, FS_SAMPLE_UNIFORM, FS_SAMPLE_UNIFORM_REPLACE}, .seed = 7),
        SAMPLE_REQ(.num_hops = 1, .fanout = {FS_FANOUT_ALL}, .seed = 1, .want_edge_ids = 1),
        SAMPLE_REQ(.num_hops = 1, .fanout = {25}, .seed = 1),
    };
    const int64_t counts[] = {300, 64, 50, 1};
    for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++) {
        int64_t *seeds = some_ids(counts[i], e.ds->num_nodes, i);
        fs_batch_t *b;
        cr_assert_eq(fs_sample(c, seeds, counts[i], &reqs[i], &b), FS_OK, "%s", fs_client_errstr(c));
        fs_sample_result_t want;
        sample_in_process(&e, s, seeds, counts[i], &reqs[i], &want);
        assert_same_sample(b, &want);
        cr_assert_eq(b->rows, 0);
        fs_batch_free(b);
        free(seeds);
    }
    fs_sampler_destroy(s);
    fs_close(c);
    env_close(&e);
}

/* A request's result does not depend on the server's --threads: its hops
 * are split over the server's pool (fs_pool.h) of that many threads, and
 * one thread runs them whole. Several clients at once too, so some requests
 * find the pool busy and sample on their own worker. */
typedef struct {
    const char *uri;
    const int64_t *seeds;
    int64_t n;
    const fs_sample_req_t *req;
    const fs_sample_result_t *want;
    int bad;
} threads_job_t;

static void *sample_again(void *p)
{
    threads_job_t *j = p;
    fs_client_t *c;
    if (fs_connect(j->uri, NULL, &c) != FS_OK) {
        j->bad = 1;
        return NULL;
    }
    for (int i = 0; i < 4; i++) {
        fs_batch_t *b;
        if (fs_sample(c, j->seeds, j->n, j->req, &b) != FS_OK) {
            j->bad = 1;
            break;
        }
        j->bad |= b->num_nodes != j->want->num_nodes ||
                  memcmp(b->nodes, j->want->nodes, (size_t)b->num_nodes * 8) != 0 ||
                  memcmp(b->blocks[2].edge_src, j->want->block[2].edge_src, (size_t)b->blocks[2].num_edges * 8) != 0;
        fs_batch_free(b);
    }
    fs_close(c);
    return NULL;
}

Test(grpc, results_do_not_change_with_the_servers_threads)
{
    static const int threads[] = {1, 2, 5};
    const fs_sample_req_t req = SAMPLE_REQ(.num_hops = 3, .fanout = {15, 10, 5}, .seed = 11, .want_edge_ids = 1);
    fs_sampler_t *s;
    fs_error_t err = {0};
    cr_assert_eq(fs_sampler_create(&s, &err), FS_OK);
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        fs_grpc_server_opts_t o;
        fs_grpc_server_defaults(&o);
        o.threads = threads[t];
        env_t e;
        env_open_with(&e, FS_DTYPE_F32, 4, NULL, &o);
        int64_t *seeds = some_ids(1500, e.ds->num_nodes, 99); /* hops of 20k+ picks: the pool's side of 8192 */
        fs_sample_result_t want;
        sample_in_process(&e, s, seeds, 1500, &req, &want);
        fs_client_t *c = connect_to(&e);
        fs_batch_t *b;
        cr_assert_eq(fs_sample(c, seeds, 1500, &req, &b), FS_OK, "%s", fs_client_errstr(c));
        assert_same_sample(b, &want);
        fs_batch_free(b);
        fs_close(c);
        threads_job_t jobs[3];
        pthread_t tid[3];
        for (int i = 0; i < 3; i++) {
            jobs[i] = (threads_job_t){.uri = e.uri, .seeds = seeds, .n = 1500, .req = &req, .want = &want};
            pthread_create(&tid[i], NULL, sample_again, &jobs[i]);
        }
        for (int i = 0; i < 3; i++) {
            pthread_join(tid[i], NULL);
            cr_expect_eq(jobs[i].bad, 0, "--threads %d: client %d got another result", threads[t], i);
        }
        free(seeds);
        env_close(&e);
    }
    fs_sampler_destroy(s);
}

Test(grpc, gather_float32_spans_chunks_bit_identical)
{
    env_t e;
    env_open(&e, FS_DTYPE_F32, 40, NULL);
    fs_client_t *c = connect_to(&e);
    int64_t n = 20000; /* 160 B rows: 3.2 MB, four ~1 MiB chunks */
    int64_t *ids = some_ids(n, e.ds->num_nodes, 3);
    fs_batch_t *b;
    cr_assert_eq(fs_gather(c, ids, n, "feat", FS_DTYPE_INVALID, &b), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(b->rows, n);
    cr_assert_eq(b->dim, 40);
    cr_assert_eq(b->dtype, FS_DTYPE_F32);
    void *want = gather_in_process(&e, "feat", ids, n, FS_DTYPE_F32, 160);
    cr_assert(memcmp(b->features, want, (size_t)n * 160) == 0, "gathered rows differ");
    fs_batch_free(b);
    free(want);

    /* no ids: an empty, well-formed batch */
    cr_assert_eq(fs_gather(c, ids, 0, "feat", FS_DTYPE_F32, &b), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(b->rows, 0);
    cr_assert_eq(b->dim, 40);
    fs_batch_free(b);
    free(ids);
    fs_close(c);
    env_close(&e);
}

Test(grpc, gather_float16_as_stored_and_as_float32)
{
    env_t e;
    env_open(&e, FS_DTYPE_F16, 20, NULL);
    fs_client_t *c = connect_to(&e);
    int64_t n = 40000; /* 40 B stored rows: 1.6 MB as stored, 3.2 MB as float32 */
    int64_t *ids = some_ids(n, e.ds->num_nodes, 4);
    fs_batch_t *b;
    cr_assert_eq(fs_gather(c, ids, n, "feat", FS_DTYPE_INVALID, &b), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(b->dtype, FS_DTYPE_F16);
    void *want = gather_in_process(&e, "feat", ids, n, FS_DTYPE_F16, 40);
    cr_assert(memcmp(b->features, want, (size_t)n * 40) == 0, "float16 rows differ");
    fs_batch_free(b);
    free(want);

    cr_assert_eq(fs_gather(c, ids, n, "feat", FS_DTYPE_F32, &b), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(b->dtype, FS_DTYPE_F32);
    cr_assert_eq(b->dim, 20);
    want = gather_in_process(&e, "feat", ids, n, FS_DTYPE_F32, 80);
    cr_assert(memcmp(b->features, want, (size_t)n * 80) == 0, "float16 rows served as float32 differ");
    fs_batch_free(b);
    free(want);

    /* bfloat16 is neither stored nor float32: refused */
    cr_assert_eq(fs_gather(c, ids, n, "feat", FS_DTYPE_BF16, &b), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(fs_client_errstr(c), "bfloat16"), "%s", fs_client_errstr(c));
    free(ids);
    fs_close(c);
    env_close(&e);
}

Test(grpc, sample_gather_matches_sample_then_gather)
{
    env_t e;
    env_open(&e, FS_DTYPE_F32, 256, NULL);
    fs_client_t *c = connect_to(&e);
    fs_sampler_t *s;
    fs_error_t err = {0};
    cr_assert_eq(fs_sampler_create(&s, &err), FS_OK);
    fs_sample_req_t req = SAMPLE_REQ(.num_hops = 2, .fanout = {15, 10}, .seed = 99, .want_edge_ids = 1);
    int64_t *seeds = some_ids(512, e.ds->num_nodes, 5);
    fs_batch_t *b;
    cr_assert_eq(fs_sample_gather(c, seeds, 512, &req, "feat", FS_DTYPE_F32, &b), FS_OK, "%s", fs_client_errstr(c));
    fs_sample_result_t want;
    sample_in_process(&e, s, seeds, 512, &req, &want);
    assert_same_sample(b, &want);
    cr_assert_eq(b->rows, want.num_nodes);
    cr_assert_eq(b->dim, 256);
    cr_assert_gt(b->rows * 1024, FS_WIRE_CHUNK_BYTES, "the features should span several chunks");
    void *rows = gather_in_process(&e, "feat", want.nodes, want.num_nodes, FS_DTYPE_F32, 1024);
    cr_assert(memcmp(b->features, rows, (size_t)want.num_nodes * 1024) == 0, "features differ");
    free(rows);
    fs_batch_free(b);
    free(seeds);
    fs_sampler_destroy(s);
    fs_close(c);
    env_close(&e);
}

/* Several connections at once, each checking its own results. */
typedef struct {
    const env_t *e;
    int worker, failures;
    char why[1200];
} conc_job_t;

static void *concurrent_worker(void *p)
{
    conc_job_t *j = p;
    fs_client_t *c;
    fs_sampler_t *s;
    fs_error_t err = {0};
    if (fs_connect(j->e->uri, NULL, &c) != FS_OK || fs_sampler_create(&s, &err) != FS_OK) {
        snprintf(j->why, sizeof j->why, "connect: %s", fs_client_errstr(c));
        j->failures++;
        fs_close(c);
        return NULL;
    }
    fs_csr_view_t g;
    fs_store_csr_view(j->e->store, FS_READER_CPU, &g);
    for (int k = 0; k < 8; k++) {
        fs_sample_req_t req = SAMPLE_REQ(.num_hops = 2, .fanout = {8, 4}, .seed = (uint64_t)(j->worker * 100 + k));
        int64_t *seeds = some_ids(128, j->e->ds->num_nodes, (uint64_t)(j->worker * 100 + k));
        fs_batch_t *b;
        fs_sample_result_t want;
        if (fs_sample_gather(c, seeds, 128, &req, "feat", FS_DTYPE_F32, &b) != FS_OK ||
            fs_sample_cpu(s, &g, seeds, 128, &req, &want, NULL, &err) != FS_OK) {
            snprintf(j->why, sizeof j->why, "call %d: %s %s", k, fs_client_errstr(c), err.msg);
            j->failures++;
        } else if (b->num_nodes != want.num_nodes || memcmp(b->nodes, want.nodes, (size_t)want.num_nodes * 8) ||
                   b->rows != want.num_nodes ||
                   memcmp(b->features, (const float *)j->e->ds->tables[0].data + want.nodes[0] * 16, 64)) {
            snprintf(j->why, sizeof j->why, "call %d: results differ", k);
            j->failures++;
        }
        if (b) fs_batch_free(b);
        free(seeds);
    }
    fs_sampler_destroy(s);
    fs_close(c);
    return NULL;
}

Test(grpc, concurrent_connections_get_their_own_results)
{
    env_t e;
    env_open(&e, FS_DTYPE_F32, 16, NULL);
    conc_job_t jobs[3];
    pthread_t t[3];
    for (int i = 0; i < 3; i++) {
        jobs[i] = (conc_job_t){.e = &e, .worker = i};
        cr_assert_eq(pthread_create(&t[i], NULL, concurrent_worker, &jobs[i]), 0);
    }
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < 3; i++) cr_assert_eq(jobs[i].failures, 0, "worker %d: %s", i, jobs[i].why);
    env_close(&e);
}

/* ---- a client that is not ours ------------------------------------------------------ */

Test(grpc, third_party_python_client_reads_the_dataset)
{
    if (tu_run(NULL, "/usr/bin/python3 -c 'import grpc, numpy, google.protobuf' && command -v protoc") != 0)
        cr_skip_test("/usr/bin/python3 lacks grpc, numpy or protobuf, or protoc is missing");
    env_t e;
    env_open(&e, FS_DTYPE_F32, 24, NULL);
    char *out = NULL;
    int rc = tu_run(&out, "/usr/bin/python3 %s/grpc_third_party.py --port %d --dataset %s", FS_TESTS_SRC_DIR, e.port,
                    e.data);
    cr_assert_eq(rc, 0, "third-party client failed (%d):\n%s", rc, out);
    cr_assert(strstr(out, "third-party client: OK"), "%s", out);
    free(out);
    env_close(&e);
}
