/* test_grpc.c — the gRPC transport end to end: an in-process server on an
 * ephemeral port over a generated dataset, the client library over
 * grpc://, and results compared bit for bit with the engines run in-process.
 * Also: errors map to the right status with a message naming the problem,
 * undecodable requests and unknown methods leave the server serving, limits
 * answer RESOURCE, expired deadlines answer TIMEOUT, a port with no server
 * answers UNAVAILABLE, Stats renders the grpc counters, the fs_wire helpers
 * round-trip on their own, and a third-party client (Python grpcio +
 * protoc-generated messages, tests/grpc_third_party.py) reads the same data
 * the dataset files hold.
 *
 * Isolation and security (1.1): clients that stop reading (a Python client,
 * tests/grpc_stalled_client.py) block no other client; calls past the
 * server's cap are refused at once; a call parked past its deadline is
 * cancelled and freed by the server even when its client is frozen; the
 * bearer token is checked on every call and never echoed; TLS and mTLS with a
 * throw-away PKI (tests/make_test_certs.sh) serve grpcs:// clients, C and
 * Python, and refuse plaintext, untrusted and certificate-less ones; a 1.0
 * program's smaller fs_connect_opts_t still connects.
 *
 * Every test starts its own server (Criterion runs each in a fresh process)
 * and never asserts a timing. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <math.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client_checks.h"
#include "engine.h"
#include "featstore/admin.h"
#include "featstore/client.h"
#include "fs_wire.h"
#include "gen.h"
#include "grpc_server.h"
#include "metrics.h"
#include "store.h"
#include "test_util.h"

/* One served dataset: generated, opened, and behind a gRPC server. */
typedef struct {
    char *dir, *data;
    fs_dataset_t *ds;
    fs_store_t *store;
    fs_engine_t *engine;
    fs_metrics_t *metrics;
    fs_grpc_server_t *server;
    int port;
    char uri[64];
} env_t;

/* go: the server's options (NULL: plaintext, 2 workers); go->listen is set here. */
static void env_open_with(env_t *e, fs_dtype_t dtype, int64_t dim, const fs_limits_t *limits,
                          const fs_grpc_server_opts_t *go)
{
    memset(e, 0, sizeof *e);
    fs_error_t err = {0};
    e->dir = tu_mkdtemp();
    e->data = tu_path(e->dir, "g");
    fs_rmat_opts_t g;
    fs_rmat_defaults(&g);
    g.out_dir = e->data, g.scale = 11, g.edge_factor = 8, g.dim = dim, g.dtype = dtype, g.edges.symmetrize = 1;
    g.threads = 1;
    cr_assert_eq(fs_gen_rmat(&g, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_dataset_open(e->data, 0, 1, &e->ds, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_store_create(e->ds, &e->store, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_engine_create(e->ds, e->store, limits, &e->engine, &err), FS_OK, "%s", err.msg);
    e->metrics = fs_metrics_create(e->ds, e->store);
    fs_grpc_server_opts_t o;
    if (go) o = *go;
    else fs_grpc_server_defaults(&o), o.threads = 2;
    o.listen = "127.0.0.1:0";
    cr_assert_eq(fs_grpc_server_start_opts(&o, e->engine, e->metrics, &e->server, &e->port, &err), FS_OK, "%s",
                 err.msg);
    cr_assert_gt(e->port, 0);
    snprintf(e->uri, sizeof e->uri, "grpc://127.0.0.1:%d", e->port);
}

static void env_open(env_t *e, fs_dtype_t dtype, int64_t dim, const fs_limits_t *limits)
{
    env_open_with(e, dtype, dim, limits, NULL);
}

static void env_close(env_t *e)
{
    fs_grpc_server_stop(e->server);
    fs_metrics_destroy(e->metrics);
    fs_engine_destroy(e->engine);
    fs_store_destroy(e->store);
    fs_dataset_close(e->ds);
    tu_rm_rf(e->dir);
    free(e->data);
    free(e->dir);
}

static fs_client_t *connect_to(const env_t *e)
{
    fs_client_t *c;
    fs_status_t st = fs_connect(e->uri, NULL, &c);
    cr_assert_eq(st, FS_OK, "connect %s: %s", e->uri, fs_client_errstr(c));
    cr_assert_str_eq(fs_client_transport(c), "grpc");
    return c;
}

/* n ids in [0, bound), with repeats, deterministic. */
static int64_t *some_ids(int64_t n, int64_t bound, uint64_t salt)
{
    int64_t *ids = malloc(sizeof *ids * (size_t)(n ? n : 1));
    uint64_t x = 0x9e3779b97f4a7c15ULL ^ salt;
    for (int64_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        ids[i] = (int64_t)(x % (uint64_t)bound);
    }
    return ids;
}

static void assert_i64_eq(const int64_t *got, const int64_t *want, int64_t n, const char *what)
{
    cr_assert(n == 0 || (got && want), "%s: missing array", what);
    if (n > 0) cr_assert(memcmp(got, want, (size_t)n * 8) == 0, "%s differs", what);
}

/* The batch's sample part equals an in-process result. */
static void assert_same_sample(const fs_batch_t *b, const fs_sample_result_t *r)
{
    cr_assert_eq(b->num_hops, r->num_hops);
    cr_assert_eq(b->num_nodes, r->num_nodes);
    cr_assert_eq(b->num_seeds, r->num_seeds);
    assert_i64_eq(b->nodes, r->nodes, r->num_nodes, "nodes");
    assert_i64_eq(b->seed_local, r->seed_local, r->num_seeds, "seed_local");
    for (int h = 0; h < r->num_hops; h++) {
        const fs_block_t *x = &b->blocks[h], *y = &r->block[h];
        cr_assert_eq(x->num_dst, y->num_dst, "hop %d", h);
        cr_assert_eq(x->num_src, y->num_src, "hop %d", h);
        cr_assert_eq(x->num_edges, y->num_edges, "hop %d", h);
        assert_i64_eq(x->dst_offsets, y->dst_offsets, y->num_dst + 1, "dst_offsets");
        assert_i64_eq(x->edge_dst, y->edge_dst, y->num_edges, "edge_dst");
        assert_i64_eq(x->edge_src, y->edge_src, y->num_edges, "edge_src");
        cr_assert_eq(x->edge_ids != NULL, y->edge_ids != NULL, "hop %d: edge ids present on one side only", h);
        if (y->edge_ids) assert_i64_eq(x->edge_ids, y->edge_ids, y->num_edges, "edge_ids");
    }
}

static void sample_in_process(const env_t *e, fs_sampler_t *s, const int64_t *seeds, int64_t n,
                              const fs_sample_req_t *req, fs_sample_result_t *res)
{
    fs_csr_view_t g;
    fs_store_csr_view(e->store, FS_READER_CPU, &g);
    fs_error_t err = {0};
    cr_assert_eq(fs_sample_cpu(s, &g, seeds, n, req, res, NULL, &err), FS_OK, "%s", err.msg);
}

/* Rows as the store serves them in-process. */
static void *gather_in_process(const env_t *e, const char *table, const int64_t *ids, int64_t n, fs_dtype_t dt,
                               size_t row_bytes)
{
    void *out = malloc(row_bytes * (size_t)(n ? n : 1));
    fs_error_t err = {0};
    cr_assert_eq(fs_store_gather(e->store, table, FS_READER_CPU, ids, n, dt, out, NULL, &err), FS_OK, "%s", err.msg);
    return out;
}

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

/* A call made with gRPC alone: arbitrary bytes to any method (tu_grpc_call). */
static grpc_status_code raw_call(int port, const char *method, const void *payload, size_t len, char *details,
                                 size_t details_size)
{
    return (grpc_status_code)tu_grpc_call(port, method, payload, len, details, details_size, NULL);
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
 * (tests/grpc_fake_server.py: 8 hops, edge ids and weights included): the
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

/* ---- isolation: clients that stop reading, the cap, deadlines -------------------------- */

static void need_python_grpc(void)
{
    if (tu_run(NULL, "/usr/bin/python3 -c 'import grpc'") != 0) cr_skip_test("/usr/bin/python3 lacks grpc");
}

/* A metric's value (the first line starting with `key `), -1 if absent. */
static long long metric(fs_metrics_t *m, const char *key)
{
    char *text = fs_metrics_render(m), pat[256];
    snprintf(pat, sizeof pat, "\n%s ", key);
    const char *p = strstr(text, pat);
    long long v = p ? strtoll(p + strlen(pat), NULL, 10) : -1;
    free(text);
    return v;
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

/* tests/grpc_stalled_client.py as a child process, returned once its calls
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

/* ---- security: tokens, TLS, mTLS --------------------------------------------------------- */

#define TOKEN "s3cret-Token_42"

static char *write_file(const env_t *e, const char *name, const char *text)
{
    char *path = tu_path(e->dir, name);
    tu_write(path, text, strlen(text));
    return path;
}

/* A throw-away PKI in dir/pki (tests/make_test_certs.sh). */
static char *make_certs(const char *dir)
{
    if (tu_run(NULL, "command -v openssl") != 0) cr_skip_test("the openssl command is missing (Debian: openssl)");
    char *pki = tu_path(dir, "pki"), *log = NULL;
    int rc = tu_run(&log, "sh %s/make_test_certs.sh %s", FS_TESTS_SRC_DIR, pki);
    cr_assert_eq(rc, 0, "make_test_certs.sh: %s", log);
    free(log);
    return pki;
}

static fs_status_t try_connect(const char *uri, const fs_connect_opts_t *o, char *why, size_t why_size)
{
    fs_client_t *c;
    fs_status_t st = fs_connect(uri, o, &c);
    fs_info_t *info = NULL;
    if (st == FS_OK) st = fs_info(c, &info);
    snprintf(why, why_size, "%s", fs_client_errstr(c));
    fs_info_free(info);
    fs_close(c);
    return st;
}

Test(grpc, a_token_is_checked_on_every_call_and_never_echoed)
{
    env_t e;
    env_open(&e, FS_DTYPE_F32, 16, NULL);
    char *token_file = write_file(&e, "token", TOKEN "\n");
    fs_grpc_server_stop(e.server); /* the same store behind a server that asks for the token */
    fs_grpc_server_opts_t go;
    fs_grpc_server_defaults(&go);
    go.listen = "127.0.0.1:0", go.token_file = token_file;
    fs_error_t err = {0};
    cr_assert_eq(fs_grpc_server_start_opts(&go, e.engine, e.metrics, &e.server, &e.port, &err), FS_OK, "%s", err.msg);
    snprintf(e.uri, sizeof e.uri, "grpc://127.0.0.1:%d", e.port);
    char why[512];
    fs_connect_opts_t o = FS_CONNECT_OPTS_INIT;
    unsetenv("FEATSTORE_TOKEN");
    cr_assert_eq(try_connect(e.uri, &o, why, sizeof why), FS_ERR_PERMISSION);
    cr_assert(strstr(why, "requires a bearer token") && strstr(why, "authorization: Bearer <token>"), "%s", why);
    o.token = "guess-Token_42";
    cr_assert_eq(try_connect(e.uri, &o, why, sizeof why), FS_ERR_PERMISSION);
    cr_assert(strstr(why, "bearer token in 'authorization' is not this server's"), "%s", why);
    cr_assert(!strstr(why, TOKEN) && !strstr(why, "guess"), "no token in the message: %s", why);
    o.token = TOKEN;
    cr_assert_eq(try_connect(e.uri, &o, why, sizeof why), FS_OK, "%s", why);
    o.token = NULL;
    setenv("FEATSTORE_TOKEN", TOKEN, 1);
    cr_assert_eq(try_connect(e.uri, &o, why, sizeof why), FS_OK, "$FEATSTORE_TOKEN: %s", why);
    unsetenv("FEATSTORE_TOKEN");
    /* every call, not only the first: a stream, by a foreign client */
    char details[512];
    const unsigned char v1[] = {0x08, 0x01};
    cr_assert_eq(raw_call(e.port, FS_WIRE_METHOD_GATHER, v1, sizeof v1, details, sizeof details),
                 GRPC_STATUS_UNAUTHENTICATED, "%s", details);
    cr_assert_eq(metric(e.metrics, "featstore_grpc_calls_refused_total{reason=\"unauthenticated\"}"), 3);
    /* a token that cannot travel in a header is refused by the client, unseen */
    o.token = "two words";
    cr_assert_eq(try_connect(e.uri, &o, why, sizeof why), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(why, "character 4 of the token is not visible ASCII") && !strstr(why, "words"), "%s", why);
    /* token files the server cannot use are named */
    fs_grpc_server_t *other = NULL;
    const char *bad[][2] = {{"empty", "\n"}, {"spaced", "a b\n"}};
    const char *says[] = {"the token (its first line) is empty", "character 2 of the token is not visible ASCII"};
    for (int i = 0; i < 2; i++) {
        go.token_file = write_file(&e, bad[i][0], bad[i][1]);
        cr_assert_eq(fs_grpc_server_start_opts(&go, e.engine, e.metrics, &other, NULL, &err), FS_ERR_FORMAT);
        cr_assert(strstr(err.msg, go.token_file) && strstr(err.msg, says[i]), "%s", err.msg);
        cr_assert_null(other);
        free((char *)go.token_file);
    }
    go.token_file = "/nonexistent/token";
    cr_assert_eq(fs_grpc_server_start_opts(&go, e.engine, e.metrics, &other, NULL, &err), FS_ERR_IO);
    cr_assert(strstr(err.msg, "token file '/nonexistent/token'"), "%s", err.msg);
    free(token_file);
    env_close(&e);
}

/* A second server on the same engine, with TLS (and mTLS when client_ca). */
static fs_grpc_server_t *tls_server(env_t *e, const char *pki, int mtls, const char *token_file, char *uri,
                                    size_t uri_size)
{
    char cert[512], key[512], ca[512];
    snprintf(cert, sizeof cert, "%s/server.pem", pki);
    snprintf(key, sizeof key, "%s/server.key", pki);
    snprintf(ca, sizeof ca, "%s/ca.pem", pki);
    fs_grpc_server_opts_t go;
    fs_grpc_server_defaults(&go);
    go.listen = "127.0.0.1:0", go.tls_cert = cert, go.tls_key = key, go.tls_client_ca = mtls ? ca : NULL;
    go.token_file = token_file;
    fs_grpc_server_t *s;
    int port;
    fs_error_t err = {0};
    cr_assert_eq(fs_grpc_server_start_opts(&go, e->engine, e->metrics, &s, &port, &err), FS_OK, "%s", err.msg);
    snprintf(uri, uri_size, "127.0.0.1:%d", port);
    return s;
}

Test(grpc, tls_serves_grpcs_clients_and_refuses_plaintext_and_untrusted_ones)
{
    env_t e;
    env_open(&e, FS_DTYPE_F32, 24, NULL);
    char *pki = make_certs(e.dir), *token_file = write_file(&e, "token", TOKEN), target[64], uri[96], why[512];
    fs_grpc_server_t *tls = tls_server(&e, pki, 0, token_file, target, sizeof target);
    char ca[512], other_ca[512];
    snprintf(ca, sizeof ca, "%s/ca.pem", pki);
    snprintf(other_ca, sizeof other_ca, "%s/other-ca.pem", pki);
    fs_connect_opts_t o = FS_CONNECT_OPTS_INIT;
    o.tls_ca_file = ca, o.token = TOKEN;
    snprintf(uri, sizeof uri, "grpcs://%s", target);
    fs_client_t *c;
    cr_assert_eq(fs_connect(uri, &o, &c), FS_OK, "%s", fs_client_errstr(c));
    int64_t n = 20000;
    int64_t *ids = some_ids(n, e.ds->num_nodes, 5);
    void *want = gather_in_process(&e, "feat", ids, n, FS_DTYPE_F32, 96);
    fs_batch_t *b;
    cr_assert_eq(fs_gather(c, ids, n, "feat", FS_DTYPE_F32, &b), FS_OK, "%s", fs_client_errstr(c));
    cr_assert(memcmp(b->features, want, (size_t)n * 96) == 0, "rows over TLS differ");
    fs_batch_free(b);
    fs_close(c);
    /* the wrong token over TLS, untrusted servers, plaintext to TLS and TLS to plaintext fail cleanly */
    o.token = "guess";
    cr_assert_eq(try_connect(uri, &o, why, sizeof why), FS_ERR_PERMISSION);
    cr_assert(strstr(why, "not this server's"), "%s", why);
    o.token = TOKEN, o.tls_ca_file = other_ca;
    cr_assert_eq(try_connect(uri, &o, why, sizeof why), FS_ERR_UNAVAILABLE);
    cr_assert(strstr(why, "no TLS connection could be made"), "%s", why);
    o.tls_ca_file = NULL; /* gRPC's default roots do not know the test CA */
    unsetenv("FEATSTORE_TLS_CA");
    cr_assert_eq(try_connect(uri, &o, why, sizeof why), FS_ERR_UNAVAILABLE, "%s", why);
    setenv("FEATSTORE_TLS_CA", ca, 1);
    cr_assert_eq(try_connect(uri, &o, why, sizeof why), FS_OK, "$FEATSTORE_TLS_CA: %s", why);
    unsetenv("FEATSTORE_TLS_CA");
    snprintf(uri, sizeof uri, "grpc://%s", target);
    cr_assert_eq(try_connect(uri, &o, why, sizeof why), FS_ERR_UNAVAILABLE, "plaintext to a TLS server");
    cr_assert(strstr(why, "cannot connect"), "%s", why);
    snprintf(uri, sizeof uri, "grpcs://127.0.0.1:%d", e.port);
    o.tls_ca_file = ca;
    cr_assert_eq(try_connect(uri, &o, why, sizeof why), FS_ERR_UNAVAILABLE, "TLS to a plaintext server");
    /* TLS files with a plaintext URI, half a client certificate, a missing CA: told, not ignored */
    snprintf(uri, sizeof uri, "grpc://%s", target);
    cr_assert_eq(try_connect(uri, &o, why, sizeof why), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(why, "is plaintext, but tls_ca_file is set: use grpcs://"), "%s", why);
    snprintf(uri, sizeof uri, "grpcs://%s", target);
    o.tls_cert_file = ca;
    cr_assert_eq(try_connect(uri, &o, why, sizeof why), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(why, "only the certificate is given"), "%s", why);
    o.tls_cert_file = NULL, o.tls_ca_file = "/nonexistent/ca.pem";
    cr_assert_eq(try_connect(uri, &o, why, sizeof why), FS_ERR_IO);
    cr_assert(strstr(why, "CA file '/nonexistent/ca.pem'"), "%s", why);
    fs_grpc_server_stop(tls);
    free(want), free(ids), free(pki), free(token_file);
    env_close(&e);
}

Test(grpc, mtls_requires_a_client_certificate_from_the_ca)
{
    env_t e;
    env_open(&e, FS_DTYPE_F32, 16, NULL);
    char *pki = make_certs(e.dir), target[64], uri[96], why[512], ca[512], cert[512], key[512];
    fs_grpc_server_t *tls = tls_server(&e, pki, 1, NULL, target, sizeof target);
    snprintf(ca, sizeof ca, "%s/ca.pem", pki);
    snprintf(cert, sizeof cert, "%s/client.pem", pki);
    snprintf(key, sizeof key, "%s/client.key", pki);
    snprintf(uri, sizeof uri, "grpcs://%s", target);
    fs_connect_opts_t o = FS_CONNECT_OPTS_INIT;
    o.tls_ca_file = ca;
    cr_assert_eq(try_connect(uri, &o, why, sizeof why), FS_ERR_UNAVAILABLE, "no client certificate");
    cr_assert(strstr(why, "client certificate required"), "%s", why);
    o.tls_cert_file = cert, o.tls_key_file = key;
    cr_assert_eq(try_connect(uri, &o, why, sizeof why), FS_OK, "%s", why);
    fs_grpc_server_stop(tls);
    free(pki);
    env_close(&e);
}

Test(grpc, tls_files_the_server_cannot_use_are_named)
{
    env_t e;
    env_open(&e, FS_DTYPE_F32, 16, NULL);
    char *pki = make_certs(e.dir), *junk = write_file(&e, "junk.pem", "not a key\n"), cert[512], key[512], other[512];
    snprintf(cert, sizeof cert, "%s/server.pem", pki);
    snprintf(key, sizeof key, "%s/server.key", pki);
    snprintf(other, sizeof other, "%s/client.key", pki);
    fs_grpc_server_opts_t go;
    fs_grpc_server_defaults(&go);
    go.listen = "127.0.0.1:0";
    fs_grpc_server_t *s = NULL;
    fs_error_t err = {0};
    go.tls_cert = "/nonexistent/server.pem", go.tls_key = key;
    cr_assert_eq(fs_grpc_server_start_opts(&go, e.engine, e.metrics, &s, NULL, &err), FS_ERR_IO);
    cr_assert(strstr(err.msg, "TLS certificate '/nonexistent/server.pem'"), "%s", err.msg);
    go.tls_cert = cert, go.tls_key = junk;
    cr_assert_eq(fs_grpc_server_start_opts(&go, e.engine, e.metrics, &s, NULL, &err), FS_ERR_FORMAT);
    cr_assert(strstr(err.msg, junk) && strstr(err.msg, "is not PEM"), "%s", err.msg);
    go.tls_key = other; /* a key of another certificate */
    cr_assert_eq(fs_grpc_server_start_opts(&go, e.engine, e.metrics, &s, NULL, &err), FS_ERR_IO);
    cr_assert(strstr(err.msg, "do not belong together"), "%s", err.msg);
    go.tls_cert = NULL, go.tls_key = NULL, go.tls_client_ca = cert;
    cr_assert_eq(fs_grpc_server_start_opts(&go, e.engine, e.metrics, &s, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "needs TLS"), "%s", err.msg);
    cr_assert_null(s);
    free(pki), free(junk);
    env_close(&e);
}

Test(grpc, tls_and_tokens_as_a_third_party_client_sees_them)
{
    if (tu_run(NULL, "/usr/bin/python3 -c 'import grpc, numpy, google.protobuf' && command -v protoc") != 0)
        cr_skip_test("/usr/bin/python3 lacks grpc, numpy or protobuf, or protoc is missing");
    env_t e;
    env_open(&e, FS_DTYPE_F32, 24, NULL);
    char *pki = make_certs(e.dir), *token_file = write_file(&e, "token", TOKEN), target[64], mtarget[64];
    fs_grpc_server_t *tls = tls_server(&e, pki, 0, token_file, target, sizeof target);
    fs_grpc_server_t *mtls = tls_server(&e, pki, 1, NULL, mtarget, sizeof mtarget);
    const char *py = "/usr/bin/python3 " FS_TESTS_SRC_DIR "/grpc_third_party.py";
    struct {
        const char *target, *args, *expect;
    } runs[] = {
        {target, "--tls-ca %s/ca.pem --token " TOKEN, NULL}, /* every check, over TLS with the token */
        {target, "--tls-ca %s/ca.pem --token wrong-token", "UNAUTHENTICATED"},
        {target, "--tls-ca %s/ca.pem", "UNAUTHENTICATED"},
        {target, "", "UNAVAILABLE"}, /* plaintext to a TLS server */
        {target, "--tls-ca %s/other-ca.pem --token " TOKEN, "UNAVAILABLE"},
        {mtarget, "--tls-ca %s/ca.pem", "UNAVAILABLE"}, /* no client certificate */
        {mtarget, "--tls-ca %s/ca.pem --client-cert %s/client.pem --client-key %s/client.key", "OK"},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        char args[1024], expect[64] = "";
        snprintf(args, sizeof args, runs[i].args, pki, pki, pki);
        if (runs[i].expect) snprintf(expect, sizeof expect, "--expect %s", runs[i].expect);
        char *out = NULL;
        int rc = tu_run(&out, "%s --port %s --dataset %s %s %s", py, strchr(runs[i].target, ':') + 1, e.data, args,
                        expect);
        cr_assert_eq(rc, 0, "run %zu (%s %s) failed (%d):\n%s", i, args, expect, rc, out);
        cr_assert(strstr(out, "third-party client: OK"), "run %zu: %s", i, out);
        free(out);
    }
    fs_grpc_server_stop(mtls);
    fs_grpc_server_stop(tls);
    free(pki), free(token_file);
    env_close(&e);
}

/* A program built against 1.0 passes a 32-byte fs_connect_opts_t: whatever
 * lies past it in its memory must not be read as 1.1's TLS files or token. */
Test(grpc, options_from_a_1_0_program_still_connect)
{
    env_t e;
    env_open(&e, FS_DTYPE_F32, 16, NULL);
    cr_assert_eq(offsetof(fs_connect_opts_t, tls_ca_file), 32, "1.0's fs_connect_opts_t ends at device (LP64)");
    fs_connect_opts_t o;
    memset(&o, 0xab, sizeof o); /* 1.1's fields: garbage a 1.0 program never set */
    o.struct_size = offsetof(fs_connect_opts_t, tls_ca_file);
    o.slots = 0, o.threads = 0, o.timeout_ms = 0, o.device = NULL;
    char why[512];
    cr_assert_eq(try_connect(e.uri, &o, why, sizeof why), FS_OK, "%s", why);
    o.struct_size = 31;
    cr_assert_eq(try_connect(e.uri, &o, why, sizeof why), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(why, "smaller than any version of fs_connect_opts_t (32)"), "%s", why);
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

Test(grpc, loopback_listen_addresses_are_told_from_the_rest)
{
    const char *local[] = {"127.0.0.1:0", "127.3.2.1:50051", "localhost:0", "LocalHost:1", "[::1]:0", "::1:0",
                           "[::ffff:127.0.0.1]:0", "unix:/tmp/x.sock"};
    const char *remote[] = {"0.0.0.0:0", "[::]:0", ":50051", "10.0.0.1:0", "128.0.0.1:0", "example.com:0",
                            "localhost.example.com:0", "[::2]:0", "[::1", "nonsense", ""};
    for (size_t i = 0; i < sizeof local / sizeof *local; i++)
        cr_assert(fs_grpc_listen_is_loopback(local[i]), "%s is loopback", local[i]);
    for (size_t i = 0; i < sizeof remote / sizeof *remote; i++)
        cr_assert(!fs_grpc_listen_is_loopback(remote[i]), "%s is not loopback", remote[i]);
    cr_assert(!fs_grpc_listen_is_loopback(NULL));
}
