/* test_hetero_grpc.c — typed batches over grpc:// (HeteroSample and
 * LinkSample, api_version 2) against a live `featstore serve`.
 *
 * The oracle is the unix:// transport of the same server: both run the one
 * request path (proto/fs_hetero.c) — unix:// in the trainer, grpc:// in the
 * server, which streams the image — so for every request the two batches
 * must be the same image byte for byte, and the same batch field by field
 * (test_hetero_local checks unix:// against the engine and the tables).
 * Then: refusals with their gRPC code and a message naming the problem, on
 * the typed calls and with raw gRPC calls (api_version), an image of many
 * chunks, and a version-1 dataset through both the v1 and the typed calls. */
#include <criterion/criterion.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "client_checks.h"
#include "featstore/client.h"
#include "fs_exec.h"
#include "fs_hetero.h"
#include "fs_pb.h"
#include "fs_wire.h"
#include "test_util.h"

static char *dir, *data, *sock;
static tu_server_t server;
static fs_client_t *local, *remote;

static fs_client_t *connect_uri(const char *fmt, const void *arg)
{
    char uri[300];
    snprintf(uri, sizeof uri, fmt, arg);
    fs_client_t *c;
    cr_assert_eq(fs_connect(uri, NULL, &c), FS_OK, "%s: %s", uri, fs_client_errstr(c));
    return c;
}

static fs_client_t *connect_grpc(int port)
{
    char uri[64];
    snprintf(uri, sizeof uri, "grpc://127.0.0.1:%d", port);
    fs_client_t *c;
    cr_assert_eq(fs_connect(uri, NULL, &c), FS_OK, "%s: %s", uri, fs_client_errstr(c));
    return c;
}

static void setup(void)
{
    dir = tu_mkdtemp();
    data = tu_path(dir, "typed");
    sock = tu_path(dir, "s.sock");
    cr_assert_eq(tu_run(NULL, "%s gen rmat --typed --scale 11 --out %s", tu_bin(), data), 0);
    cr_assert_eq(tu_serve(&server, data, sock, ""), 0);
    local = connect_uri("unix://%s", sock);
    remote = connect_grpc(server.grpc_port);
}

static void teardown(void)
{
    fs_close(local);
    fs_close(remote);
    tu_serve_stop(&server, SIGTERM);
    tu_rm_rf(dir);
    free(dir), free(data), free(sock);
}

TestSuite(hetero_grpc, .init = setup, .fini = teardown);

/* ---- the two transports' batches ------------------------------------------------ */

/* The request on both transports; returns the image's size. */
/* Each edge type's edge arrays of every hop lie end to end, sources then
 * destinations, and edge ids (F_JOINED, which this library asks for over
 * both transports), so that PyG's edge_index is a view of the batch. */
static void edges_end_to_end(const fs_hetero_batch_t *x)
{
    int E = x->num_edge_types, H = x->num_hops;
    for (int e = 0; e < E; e++) {
        int64_t total = 0, at = 0;
        for (int h = 0; h < H; h++) total += x->blocks[h * E + e].num_edges;
        const fs_block_t *first = &x->blocks[e];
        for (int h = 0; h < H; h++) {
            const fs_block_t *b = &x->blocks[h * E + e];
            cr_assert_eq(b->edge_src, first->edge_src + at, "edge type %d, hop %d: sources after the hop before's", e, h);
            cr_assert_eq(b->edge_dst, first->edge_src + total + at, "edge type %d, hop %d: destinations after all "
                         "the sources", e, h);
            if (b->edge_ids) cr_assert_eq(b->edge_ids, first->edge_ids + at, "edge type %d, hop %d: edge ids", e, h);
            at += b->num_edges;
        }
    }
}

static size_t both_hetero(const fs_hetero_seeds_t *g, size_t ng, const fs_hetero_req_t *req)
{
    fs_hetero_batch_t *a, *b;
    cr_assert_eq(fs_hetero_sample(local, g, ng, req, &a), FS_OK, "unix://: %s", fs_client_errstr(local));
    cr_assert_eq(fs_hetero_sample(remote, g, ng, req, &b), FS_OK, "grpc://: %s", fs_client_errstr(remote));
    tc_same_hetero_batch(a, b);
    edges_end_to_end(a), edges_end_to_end(b);
    const void *base;
    size_t n = tc_hetero_image(b, &base);
    fs_hetero_batch_free(a);
    fs_hetero_batch_free(b);
    return n;
}

static void both_link(const fs_link_req_t *l, const fs_hetero_req_t *req)
{
    fs_hetero_batch_t *a, *b;
    cr_assert_eq(fs_link_sample(local, l, req, &a), FS_OK, "unix://: %s", fs_client_errstr(local));
    cr_assert_eq(fs_link_sample(remote, l, req, &b), FS_OK, "grpc://: %s", fs_client_errstr(remote));
    tc_same_hetero_batch(a, b);
    edges_end_to_end(a), edges_end_to_end(b);
    fs_hetero_batch_free(a);
    fs_hetero_batch_free(b);
}

static const char *const node_tables[] = {"feat", "labels"};
static const char *const edge_tables[] = {"feat"};
static fs_hetero_fanout_t fanouts[] = {{"paper", "cites", "paper", {5, 3}},
                                       {"author", "writes", "paper", {2, 2}},
                                       {"paper", "written_by", "author", {0, 3}},
                                       {"venue", "publishes", "paper", {1, 1}}};

static fs_hetero_req_t request(void)
{
    fs_hetero_req_t r = FS_HETERO_REQ_INIT;
    r.num_hops = 2, r.fanouts = fanouts, r.num_fanouts = 4, r.seed = 42;
    r.node_tables = node_tables, r.num_node_tables = 2, r.edge_tables = edge_tables, r.num_edge_tables = 1;
    return r;
}

Test(hetero_grpc, typed_batches_are_the_unix_batches)
{
    int64_t papers[] = {1, 2, 3, 5, 8, 13, 21, 2}, authors[] = {7, 0, 511};
    int64_t times[] = {2000, 2010, 1995, 2025, 2020, 2001, 1999, 2010};
    fs_hetero_seeds_t g[] = {{"paper", 8, papers, NULL}, {"author", 3, authors, NULL}};
    fs_hetero_req_t req = request();
    both_hetero(g, 2, &req); /* PyG frontier, node and edge tables */
    req.frontier = FS_FRONTIER_ALL;
    both_hetero(g, 2, &req);
    req.frontier = FS_FRONTIER_NEW, req.disjoint = 1;
    both_hetero(g, 1, &req);
    req.disjoint = 0, req.temporal = FS_TEMPORAL_UNIFORM;
    both_hetero(g, 1, &req); /* the nodes' timestamps */
    g[0].time = times;
    req.temporal = FS_TEMPORAL_LAST, req.strict = 1, req.window = 10;
    both_hetero(g, 1, &req); /* given times, a window */
    fs_hetero_req_t plain = FS_HETERO_REQ_INIT; /* no tables, no edge ids, weighted hops */
    plain.num_hops = 3, plain.fanouts = fanouts, plain.num_fanouts = 1, plain.seed = 9;
    fanouts[0].fanout[2] = 2;
    plain.mode[0] = FS_SAMPLE_WEIGHTED, plain.mode[1] = FS_SAMPLE_UNIFORM_REPLACE;
    both_hetero(g, 1, &plain);
    plain.want_edge_ids = 1, plain.out_dtype = FS_DTYPE_F32;
    plain.node_tables = node_tables, plain.num_node_tables = 1;
    both_hetero(g, 2, &plain);
    fanouts[0].fanout[2] = 0;
    /* empty seed groups are batches too */
    fs_hetero_seeds_t none = {"venue", 0, NULL, NULL};
    fs_hetero_req_t again = request();
    both_hetero(&none, 1, &again);
}

Test(hetero_grpc, link_batches_are_the_unix_batches)
{
    int64_t src[] = {1, 2, 3, 40}, dst[] = {4, 5, 6, 41}, label[] = {1, 0, 1, 1}, time[] = {2020, 2021, 2022, 2023};
    fs_hetero_req_t req = request();
    req.num_fanouts = 1;
    fs_link_req_t l = FS_LINK_REQ_INIT;
    l.src = "paper", l.rel = "cites", l.dst = "paper", l.count = 4, l.src_ids = src, l.dst_ids = dst;
    l.neg = FS_NEG_BINARY, l.amount = 2, l.strict = 1;
    both_link(&l, &req); /* binary */
    l.neg = FS_NEG_TRIPLET, l.amount = 3, l.neg_weighted = 1;
    both_link(&l, &req); /* triplet */
    l.neg = FS_NEG_NONE, l.label = label, l.keep_seed_edges = 1;
    both_link(&l, &req); /* given labels */
    l.label = NULL, l.time = time, l.neg = FS_NEG_BINARY, l.amount = 1, l.keep_seed_edges = 0;
    req.temporal = FS_TEMPORAL_UNIFORM;
    both_link(&l, &req); /* temporal, with label times */
    fs_link_req_t w = FS_LINK_REQ_INIT;
    int64_t a[] = {0, 5}, p[] = {2, 9};
    w.src = "author", w.rel = "writes", w.dst = "paper", w.count = 2, w.src_ids = a, w.dst_ids = p;
    w.neg = FS_NEG_BINARY, w.amount = 0.5;
    fs_hetero_req_t all = request();
    all.frontier = FS_FRONTIER_ALL;
    both_link(&w, &all); /* across two node types */
    free(tu_metrics_with(server.metrics_port, "featstore_requests_total{method=\"LinkSample\",transport=\"grpc\"} 5\n"));
}

Test(hetero_grpc, an_image_of_many_chunks)
{
    enum { N = 2048 };
    int64_t *papers = malloc(N * sizeof *papers);
    for (int i = 0; i < N; i++) papers[i] = i;
    fs_hetero_seeds_t g = {"paper", N, papers, NULL};
    fs_hetero_req_t req = request();
    req.frontier = FS_FRONTIER_ALL;
    size_t n = both_hetero(&g, 1, &req);
    cr_assert_gt(n, 2 * (size_t)FS_WIRE_CHUNK_BYTES, "an image of %zu bytes is not several chunks", n);
    free(papers);
    free(tu_metrics_with(server.metrics_port, "featstore_requests_total{method=\"HeteroSample\",transport=\"grpc\"} 1\n"));
}

/* ---- refusals ----------------------------------------------------------------- */

static void expect_refused(fs_client_t *c, fs_status_t got, fs_status_t want, const char *needle)
{
    cr_assert_eq(got, want, "status %s, expected %s (%s)", fs_strerror(got), fs_strerror(want), fs_client_errstr(c));
    cr_assert(strstr(fs_client_errstr(c), needle), "'%s' does not name '%s'", fs_client_errstr(c), needle);
}

/* Each refusal over grpc:// has the code and the words of unix://'s. */
static void both_refuse_hetero(const fs_hetero_seeds_t *g, const fs_hetero_req_t *req, fs_status_t want,
                               const char *needle)
{
    fs_hetero_batch_t *b = NULL;
    expect_refused(local, fs_hetero_sample(local, g, 1, req, &b), want, needle);
    expect_refused(remote, fs_hetero_sample(remote, g, 1, req, &b), want, needle);
    cr_assert_null(b);
}

Test(hetero_grpc, bad_requests_are_refused_by_name)
{
    int64_t seeds[] = {1, 2};
    fs_hetero_fanout_t f[] = {{"paper", "cites", "paper", {5, 3}}}, bad_f[] = {{"paper", "likes", "venue", {5, 3}}};
    fs_hetero_req_t req = request();
    req.fanouts = f, req.num_fanouts = 1;
    fs_hetero_seeds_t unknown = {"paperz", 2, seeds, NULL}, g = {"paper", 2, seeds, NULL};
    both_refuse_hetero(&unknown, &req, FS_ERR_INVALID_ARGUMENT, "no node type 'paperz'");
    fs_hetero_req_t missing = req;
    missing.fanouts = bad_f;
    both_refuse_hetero(&g, &missing, FS_ERR_INVALID_ARGUMENT, "(paper, likes, venue)");
    const char *no_table[] = {"embedding"};
    fs_hetero_req_t nt = req;
    nt.node_tables = no_table, nt.num_node_tables = 1;
    both_refuse_hetero(&g, &nt, FS_ERR_NOT_FOUND, "embedding");
    fs_hetero_req_t hops = req;
    hops.num_hops = 9;
    both_refuse_hetero(&g, &hops, FS_ERR_INVALID_ARGUMENT, "9 hops");
    int64_t far[] = {1 << 30};
    fs_hetero_seeds_t out_of_range = {"paper", 1, far, NULL};
    both_refuse_hetero(&out_of_range, &req, FS_ERR_INVALID_ARGUMENT, "1073741824");
    fs_link_req_t l = FS_LINK_REQ_INIT;
    l.src = "paper", l.rel = "cites", l.dst = "paper", l.count = 2, l.src_ids = seeds, l.dst_ids = seeds;
    l.neg = FS_NEG_BINARY, l.amount = -1;
    fs_hetero_batch_t *b = NULL;
    expect_refused(local, fs_link_sample(local, &l, &req, &b), FS_ERR_INVALID_ARGUMENT, "negative ratio -1");
    expect_refused(remote, fs_link_sample(remote, &l, &req, &b), FS_ERR_INVALID_ARGUMENT, "negative ratio -1");
    l.amount = 1, l.rel = "cited";
    expect_refused(remote, fs_link_sample(remote, &l, &req, &b), FS_ERR_INVALID_ARGUMENT, "(paper, cited, paper)");
    /* what the client cannot encode: no type is 64 characters long */
    char longname[80];
    memset(longname, 'p', sizeof longname - 1), longname[sizeof longname - 1] = 0;
    fs_hetero_seeds_t lg = {longname, 2, seeds, NULL};
    expect_refused(remote, fs_hetero_sample(remote, &lg, 1, &req, &b), FS_ERR_INVALID_ARGUMENT, "longer than 63");
    /* homogeneous calls on a typed graph */
    fs_sample_req_t sr = SAMPLE_REQ(.num_hops = 1, .fanout = {2});
    fs_batch_t *hb;
    expect_refused(remote, fs_sample(remote, seeds, 2, &sr, &hb), FS_ERR_UNSUPPORTED, "HeteroSample");
    /* the connection still works */
    cr_assert_eq(fs_hetero_sample(remote, &g, 1, &req, &b), FS_OK, "%s", fs_client_errstr(remote));
    fs_hetero_batch_free(b);
}

/* ---- raw gRPC: codes and versions --------------------------------------------------- */

static grpc_status_code raw_msg(const featstore_v1_HeteroSampleRequest *msg, char *details, size_t size, int *got)
{
    void *buf;
    size_t len;
    fs_error_t err = {0};
    cr_assert_eq(fs_pb_encode_alloc(featstore_v1_HeteroSampleRequest_fields, msg, "request", &buf, &len, &err), FS_OK);
    grpc_status_code code = (grpc_status_code)tu_grpc_call(server.grpc_port, FS_WIRE_METHOD_HETERO_SAMPLE, buf, len, details, size, got);
    free(buf);
    return code;
}

/* A HeteroSampleRequest with the given api_version, sent raw. */
static grpc_status_code raw_hetero(uint32_t api_version, const fs_hetero_seeds_t *g, const fs_hetero_req_t *req,
                                   char *details, size_t size, int *got)
{
    featstore_v1_HeteroSampleRequest msg;
    fs_wire_hetero_out_t out;
    fs_error_t err = {0};
    cr_assert_eq(fs_wire_hetero_request(g, 1, req, &out, &msg, &err), FS_OK, "%s", err.msg);
    msg.api_version = api_version;
    return raw_msg(&msg, details, size, got);
}

Test(hetero_grpc, codes_and_api_versions)
{
    char details[1024];
    int got;
    int64_t seeds[] = {1, 2};
    fs_hetero_fanout_t f[] = {{"paper", "cites", "paper", {5, 3}}};
    fs_hetero_req_t req = FS_HETERO_REQ_INIT;
    req.num_hops = 2, req.fanouts = f, req.num_fanouts = 1;
    fs_hetero_seeds_t g = {"paper", 2, seeds, NULL}, bad = {"paperz", 2, seeds, NULL};
    cr_assert_eq(raw_hetero(2, &g, &req, details, sizeof details, &got), GRPC_STATUS_OK, "%s", details);
    cr_assert(got, "no BatchImageChunk");
    /* the typed methods are api_version 2: 1 and unknown versions are refused naming both */
    cr_assert_eq(raw_hetero(1, &g, &req, details, sizeof details, &got), GRPC_STATUS_FAILED_PRECONDITION, "%s", details);
    cr_assert(strstr(details, "api_version 1 is not supported by HeteroSample") && strstr(details, "api_version 2"),
              "%s", details);
    cr_assert_eq(raw_hetero(7, &g, &req, details, sizeof details, &got), GRPC_STATUS_FAILED_PRECONDITION, "%s", details);
    cr_assert(strstr(details, "api_version 7") && strstr(details, "api_version 1 and 2"), "%s", details);
    cr_assert_eq(raw_hetero(0, &g, &req, details, sizeof details, &got), GRPC_STATUS_FAILED_PRECONDITION, "%s", details);
    /* refusals as gRPC codes */
    cr_assert_eq(raw_hetero(2, &bad, &req, details, sizeof details, &got), GRPC_STATUS_INVALID_ARGUMENT, "%s", details);
    cr_assert(strstr(details, "paperz"), "%s", details);
    const char *no_table[] = {"embedding"};
    fs_hetero_req_t nt = req;
    nt.node_tables = no_table, nt.num_node_tables = 1;
    cr_assert_eq(raw_hetero(2, &g, &nt, details, sizeof details, &got), GRPC_STATUS_NOT_FOUND, "%s", details);
    /* a fanout per hop, exactly */
    featstore_v1_HeteroSampleRequest msg;
    fs_wire_hetero_out_t out;
    fs_error_t err = {0};
    cr_assert_eq(fs_wire_hetero_request(&g, 1, &req, &out, &msg, &err), FS_OK, "%s", err.msg);
    featstore_v1_Fanout one = {"paper", "cites", "paper", 1, {5}};
    fs_pb_list_t list;
    FS_PB_FROM_ARRAY(&list, featstore_v1_Fanout, &one, 1);
    fs_pb_set_list(&msg.sampling.fanouts, &list);
    cr_assert_eq(raw_msg(&msg, details, sizeof details, &got), GRPC_STATUS_INVALID_ARGUMENT, "%s", details);
    cr_assert(strstr(details, "fanouts of (paper, cites, paper): 1 values for 2 hops"), "%s", details);
    /* undecodable bytes */
    const unsigned char garbage[] = {0x08, 0x02, 0x12, 0x03, 0x08, 0x02, 0xff};
    cr_assert_eq((grpc_status_code)tu_grpc_call(server.grpc_port, FS_WIRE_METHOD_LINK_SAMPLE, garbage, sizeof garbage, details, sizeof details,
                          &got), GRPC_STATUS_INVALID_ARGUMENT, "%s", details);
    cr_assert(strstr(details, "LinkSampleRequest"), "%s", details);
    /* the version-1 methods take 1 (and 2), and refuse what they do not know naming both */
    const unsigned char info1[] = {0x08, 0x01}, info2[] = {0x08, 0x02}, info3[] = {0x08, 0x03};
    cr_assert_eq((grpc_status_code)tu_grpc_call(server.grpc_port, FS_WIRE_METHOD_INFO, info1, 2, details, sizeof details, &got), GRPC_STATUS_OK,
                 "%s", details);
    cr_assert_eq((grpc_status_code)tu_grpc_call(server.grpc_port, FS_WIRE_METHOD_INFO, info2, 2, details, sizeof details, &got), GRPC_STATUS_OK,
                 "%s", details);
    cr_assert_eq((grpc_status_code)tu_grpc_call(server.grpc_port, FS_WIRE_METHOD_INFO, info3, 2, details, sizeof details, &got),
                 GRPC_STATUS_FAILED_PRECONDITION, "%s", details);
    cr_assert(strstr(details, "api_version 3") && strstr(details, "api_version 1 and 2"), "%s", details);
}

/* A version-1 dataset: the v1 calls work as before over grpc://, the typed
 * calls see node type "node" and give unix://'s batches, and time-based
 * requests are refused by name (no times). */
Test(hetero_grpc, v1_datasets_over_grpc)
{
    char *v1 = tu_path(dir, "v1"), *v1sock = tu_path(dir, "v1.sock");
    cr_assert_eq(tu_run(NULL, "%s gen rmat --scale 10 --out %s", tu_bin(), v1), 0);
    tu_server_t s2;
    cr_assert_eq(tu_serve(&s2, v1, v1sock, ""), 0);
    fs_client_t *u = connect_uri("unix://%s", v1sock), *r = connect_grpc(s2.grpc_port);
    int64_t seeds[] = {3, 1, 4, 1, 5, 9, 2, 6};
    fs_sample_req_t sr = SAMPLE_REQ(.num_hops = 2, .fanout = {5, 3}, .seed = 11);
    fs_batch_t *hu, *hr;
    cr_assert_eq(fs_sample_gather(u, seeds, 8, &sr, "feat", FS_DTYPE_INVALID, &hu), FS_OK, "%s", fs_client_errstr(u));
    cr_assert_eq(fs_sample_gather(r, seeds, 8, &sr, "feat", FS_DTYPE_INVALID, &hr), FS_OK, "%s", fs_client_errstr(r));
    cr_assert_eq(hu->num_nodes, hr->num_nodes);
    cr_assert_eq(memcmp(hu->nodes, hr->nodes, (size_t)hu->num_nodes * 8), 0);
    cr_assert_eq(memcmp(hu->features, hr->features, (size_t)hu->rows * (size_t)hu->dim * 4), 0);

    fs_hetero_seeds_t g = {"node", 8, seeds, NULL};
    fs_hetero_fanout_t f[] = {{"node", "to", "node", {5, 3}}};
    const char *tables[] = {"feat"};
    fs_hetero_req_t req = FS_HETERO_REQ_INIT;
    req.num_hops = 2, req.fanouts = f, req.num_fanouts = 1, req.seed = 11, req.frontier = FS_FRONTIER_ALL;
    req.node_tables = tables, req.num_node_tables = 1;
    fs_hetero_batch_t *a, *b;
    cr_assert_eq(fs_hetero_sample(u, &g, 1, &req, &a), FS_OK, "%s", fs_client_errstr(u));
    cr_assert_eq(fs_hetero_sample(r, &g, 1, &req, &b), FS_OK, "%s", fs_client_errstr(r));
    tc_same_hetero_batch(a, b);
    /* the homogeneous sampler, bit for bit */
    cr_assert_eq(b->types[0].num_nodes, hr->num_nodes);
    cr_assert_eq(memcmp(b->types[0].nodes, hr->nodes, (size_t)hr->num_nodes * 8), 0);
    fs_hetero_batch_free(a);
    fs_hetero_batch_free(b);
    fs_batch_free(hu);
    fs_batch_free(hr);
    req.temporal = FS_TEMPORAL_UNIFORM;
    expect_refused(r, fs_hetero_sample(r, &g, 1, &req, &b), FS_ERR_INVALID_ARGUMENT, "time");
    fs_close(u);
    fs_close(r);
    cr_assert_eq(tu_serve_stop(&s2, SIGTERM), 0);
    free(v1), free(v1sock);
}

/* ---- every byte of an image is written ---------------------------------------------- */

/* The executor's region for an image, filled with the byte ctx points to
 * first: an image that depends on that byte has an unset byte, which would
 * carry stale slot or heap memory to a client. */
static fs_status_t filled(fs_exec_region_t *r, size_t bytes, fs_error_t *err)
{
    (void)err;
    free(r->base);
    r->base = malloc(bytes), r->cap = bytes;
    if (r->base) memset(r->base, *(const unsigned char *)r->ctx, bytes);
    return r->base ? FS_OK : FS_ERR_NOMEM;
}

static void expect_every_byte_written(const fs_exec_typed_graph_t *g, fs_typed_sampler_t *s,
                                      const fs_hetero_seeds_t *seeds, size_t ng, const fs_link_req_t *link,
                                      const fs_hetero_req_t *req, const char *what)
{
    unsigned char fill[2] = {0x00, 0xff};
    fs_limits_t limits;
    fs_limits_default(&limits);
    fs_exec_reads_t reads = {0};
    fs_exec_t x = {.limits = &limits, .reads = &reads, .typed = g, .typed_sampler = s};
    for (int joined = 0; joined <= 1; joined++) { /* the gRPC server's layout, and the local transport's */
        void *img[2];
        size_t len[2];
        for (int i = 0; i < 2; i++) {
            fs_error_t err = {0};
            fs_exec_region_t into = {.ctx = &fill[i], .grow = filled};
            cr_assert_eq(fs_exec_typed(&x, seeds, ng, link, req, joined, &into, &len[i], &err), FS_OK, "%s: %s", what,
                         err.msg);
            img[i] = into.base;
        }
        cr_assert_eq(len[0], len[1], "%s: the same request, two sizes", what);
        const unsigned char *a = img[0], *b = img[1];
        for (size_t k = 0; k < len[0]; k++)
            cr_assert_eq(a[k], b[k], "%s (joined %d): byte %zu of %zu is never written (it is the allocator's fill)",
                         what, joined, k, len[0]);
        fs_hetero_index_t ix; /* and it reads back */
        fs_error_t err = {0};
        cr_assert_eq(fs_hetero_index(img[0], len[0], 1, &ix, &err), FS_OK, "%s (joined %d): %s", what, joined, err.msg);
        fs_hetero_index_free(&ix);
        free(img[0]), free(img[1]);
    }
}

Test(hetero_grpc, every_byte_of_an_image_is_written)
{
    fs_dataset_t *ds;
    fs_exec_typed_graph_t g;
    fs_typed_sampler_t *s;
    fs_error_t err = {0};
    cr_assert_eq(fs_dataset_open(data, 0, 1, &ds, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_exec_typed_graph_init(&g, ds, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_typed_sampler_create(&s, &err), FS_OK, "%s", err.msg);
    int64_t papers[] = {1, 2, 3, 5, 900}, authors[] = {0, 7}, times[] = {2000, 2010, 1995, 2025, 2001};
    fs_hetero_seeds_t seeds[] = {{"paper", 5, papers, NULL}, {"author", 2, authors, NULL}};
    fs_hetero_req_t req = request();
    expect_every_byte_written(&g, s, seeds, 2, NULL, &req, "tables");
    req.want_edge_ids = 1, req.frontier = FS_FRONTIER_ALL, req.out_dtype = FS_DTYPE_F32;
    expect_every_byte_written(&g, s, seeds, 2, NULL, &req, "edge ids, frontier all");
    fs_hetero_req_t plain = FS_HETERO_REQ_INIT; /* odd sizes: 5 seeds, no tables */
    plain.num_hops = 1, plain.fanouts = fanouts, plain.num_fanouts = 1, plain.seed = 3;
    expect_every_byte_written(&g, s, seeds, 1, NULL, &plain, "plain");
    req.frontier = FS_FRONTIER_NEW, req.disjoint = 1, req.temporal = FS_TEMPORAL_LAST;
    seeds[0].time = times;
    expect_every_byte_written(&g, s, seeds, 1, NULL, &req, "temporal, disjoint");
    int64_t src[] = {1, 2, 3}, dst[] = {4, 5, 6};
    fs_hetero_req_t lreq = request();
    lreq.num_fanouts = 1;
    fs_link_req_t l = FS_LINK_REQ_INIT;
    l.src = "paper", l.rel = "cites", l.dst = "paper", l.count = 3, l.src_ids = src, l.dst_ids = dst;
    l.neg = FS_NEG_BINARY, l.amount = 1;
    expect_every_byte_written(&g, s, NULL, 0, &l, &lreq, "link, binary negatives");
    l.neg = FS_NEG_TRIPLET, l.amount = 3;
    expect_every_byte_written(&g, s, NULL, 0, &l, &lreq, "link, triplet negatives");
    fs_typed_sampler_destroy(s);
    fs_exec_typed_graph_free(&g);
    fs_dataset_close(ds);
}
