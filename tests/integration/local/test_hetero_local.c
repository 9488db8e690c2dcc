/* test_hetero_local.c — typed batches served over unix:// (fs_hetero_sample,
 * fs_link_sample) against a live `featstore serve`.
 *
 * The oracle is the typed engine run in this process on the dataset opened
 * from disk (the engine itself is checked against a brute-force reference
 * in test_typed_sample): what arrives through the server's descriptors,
 * the trainer's own dataset open and the batch image must be exactly the
 * engine's result, and every gathered row exactly the table's row for the
 * node or edge id beside it. Then: v1 datasets through the typed calls,
 * homogeneous calls on a typed dataset refused by name, and bad requests
 * refused by name. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "featstore/client.h"
#include "fs_typed.h"
#include "test_util.h"
#include "typed_view.h"

static char *dir, *data, *sock;
static tu_server_t server;
static fs_dataset_t *ds;
static fs_client_t *client;

static void setup(void)
{
    dir = tu_mkdtemp();
    data = tu_path(dir, "typed");
    sock = tu_path(dir, "s.sock");
    cr_assert_eq(tu_run(NULL, "%s gen rmat --typed --scale 10 --out %s", tu_bin(), data), 0);
    ds = tu_open_dataset(data);
    cr_assert_eq(tu_serve(&server, data, sock, ""), 0);
    char uri[300];
    snprintf(uri, sizeof uri, "unix://%s", sock);
    cr_assert_eq(fs_connect(uri, NULL, &client), FS_OK, "%s", fs_client_errstr(client));
}

static void teardown(void)
{
    fs_close(client);
    tu_serve_stop(&server, SIGTERM);
    fs_dataset_close(ds);
    tu_rm_rf(dir);
    free(dir), free(data), free(sock);
}

TestSuite(hetero_local, .init = setup, .fini = teardown);

static const char *const node_tables[] = {"feat", "labels"};
static const char *const edge_tables[] = {"feat"};

static fs_hetero_req_t request(const fs_hetero_fanout_t *f, size_t nf, int frontier, int temporal)
{
    fs_hetero_req_t r = FS_HETERO_REQ_INIT;
    r.num_hops = 2, r.fanouts = f, r.num_fanouts = nf, r.seed = 42, r.frontier = frontier;
    r.temporal = temporal;
    r.node_tables = node_tables, r.num_node_tables = 2, r.edge_tables = edge_tables, r.num_edge_tables = 1;
    return r;
}

/* The engine's request for the same thing: fanouts by edge type index. */
static void engine_request(const fs_hetero_req_t *r, int *fanout, fs_typed_req_t *out)
{
    int E = ds->num_edge_types, H = r->num_hops;
    memset(fanout, 0, (size_t)(E * H) * sizeof *fanout);
    for (size_t i = 0; i < r->num_fanouts; i++) {
        int e = fs_dataset_edge_type(ds, r->fanouts[i].src, r->fanouts[i].rel, r->fanouts[i].dst);
        cr_assert_geq(e, 0);
        for (int h = 0; h < H; h++) fanout[e * H + h] = r->fanouts[i].fanout[h];
    }
    *out = (fs_typed_req_t){.num_hops = H, .fanout = fanout, .seed = r->seed, .want_edge_ids = 1,
                            .frontier = r->frontier, .disjoint = r->disjoint, .temporal = r->temporal};
}

static void expect_rows(const fs_rows_t *rows, const fs_table_t *t, const int64_t *ids, int64_t n, const char *what)
{
    if (!t) {
        cr_expect_null(rows->data, "%s: rows for a type without the table", what);
        return;
    }
    cr_assert_not_null(rows->data, "%s: no rows", what);
    cr_assert_eq(rows->rows, n);
    cr_assert_eq(rows->dim, t->dim);
    cr_assert_eq(rows->dtype, t->dtype);
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(memcmp((const char *)rows->data + i * t->row_bytes, (const char *)t->data + ids[i] * t->row_bytes,
                            t->row_bytes), 0, "%s: row %lld (id %lld) differs", what, (long long)i, (long long)ids[i]);
}

static const fs_table_t *edge_table(const fs_edge_type_t *et, const char *name)
{
    for (int i = 0; i < et->num_tables; i++)
        if (strcmp(et->tables[i].name, name) == 0) return &et->tables[i];
    return NULL;
}

static void expect_same(const fs_hetero_batch_t *b, const fs_typed_result_t *r, const fs_hetero_req_t *req)
{
    cr_assert_eq(b->num_node_types, ds->num_node_types);
    cr_assert_eq(b->num_edge_types, ds->num_edge_types);
    for (int t = 0; t < ds->num_node_types; t++) {
        const fs_hetero_nodes_t *x = &b->types[t];
        cr_assert_str_eq(x->name, ds->node_types[t].name);
        cr_assert_eq(x->num_nodes, r->type[t].num_nodes, "type %s", x->name);
        cr_assert_eq(memcmp(x->nodes, r->type[t].nodes, (size_t)x->num_nodes * 8), 0, "type %s nodes", x->name);
        for (int h = 0; h <= req->num_hops; h++) cr_assert_eq(x->count_after[h], r->type[t].count_after[h]);
        for (size_t k = 0; k < req->num_node_tables; k++)
            expect_rows(&x->tables[k], fs_node_type_table(&ds->node_types[t], req->node_tables[k]), x->nodes,
                        x->num_nodes, x->name);
    }
    for (int i = 0; i < req->num_hops * ds->num_edge_types; i++) {
        const fs_block_t *a = &b->blocks[i], *e = &r->block[i];
        const fs_edge_type_t *et = &ds->edge_types[i % ds->num_edge_types];
        cr_assert_str_eq(b->etypes[i % ds->num_edge_types].rel, et->rel);
        cr_assert_eq(a->num_dst, e->num_dst, "block %d", i);
        cr_assert_eq(a->num_src, e->num_src, "block %d", i);
        cr_assert_eq(a->num_edges, e->num_edges, "block %d", i);
        cr_assert_eq(memcmp(a->dst_offsets, e->dst_offsets, (size_t)(a->num_dst + 1) * 8), 0);
        cr_assert_eq(memcmp(a->edge_dst, e->edge_dst, (size_t)a->num_edges * 8), 0);
        cr_assert_eq(memcmp(a->edge_src, e->edge_src, (size_t)a->num_edges * 8), 0);
        cr_assert_eq(memcmp(a->edge_ids, e->edge_ids, (size_t)a->num_edges * 8), 0);
        expect_rows(&b->edge_tables[i], edge_table(et, req->edge_tables[0]), a->edge_ids, a->num_edges, et->rel);
    }
}

static void check_against_engine(int frontier, int temporal)
{
    int64_t seeds[] = {1, 2, 3, 5, 8, 13, 21, 2};
    fs_hetero_seeds_t g = {"paper", 8, seeds, NULL};
    fs_hetero_fanout_t f[] = {{"paper", "cites", "paper", {5, 3}}, {"author", "writes", "paper", {2, 2}},
                              {"paper", "written_by", "author", {0, 3}}, {"venue", "publishes", "paper", {1, 1}}};
    fs_hetero_req_t req = request(f, 4, frontier, temporal);
    fs_hetero_batch_t *b;
    cr_assert_eq(fs_hetero_sample(client, &g, 1, &req, &b), FS_OK, "%s", fs_client_errstr(client));

    fs_typed_graph_t tg;
    fs_error_t err = {0};
    cr_assert_eq(fs_typed_graph_init(&tg, ds, &err), FS_OK, "%s", err.msg);
    int fanout[64];
    fs_typed_req_t treq;
    engine_request(&req, fanout, &treq);
    fs_typed_sampler_t *s;
    cr_assert_eq(fs_typed_sampler_create(&s, &err), FS_OK);
    fs_typed_seeds_t tgroup = {.type = fs_dataset_node_type(ds, "paper"), .count = 8, .ids = seeds};
    fs_typed_result_t r;
    cr_assert_eq(fs_typed_sample_cpu(s, &tg.view, &treq, &tgroup, 1, NULL, 0, &r, &err), FS_OK, "%s", err.msg);
    expect_same(b, &r, &req);
    cr_assert_eq(b->num_groups, 1);
    cr_assert_eq(memcmp(b->seed_local[0], r.seed_local[0], 8 * 8), 0);
    if (temporal) cr_assert_not_null(b->types[0].time);
    const void *base;
    size_t len;
    cr_assert_eq(fs_hetero_batch_region(b, &base, &len), FS_OK);
    cr_assert((const char *)b->types[0].nodes >= (const char *)base &&
              (const char *)b->types[0].nodes < (const char *)base + len, "the batch lies in its result slot");
    fs_hetero_batch_free(b);
    fs_typed_sampler_destroy(s);
    fs_typed_graph_free(&tg);
}

Test(hetero_local, typed_batches_equal_the_engine_and_the_tables)
{
    check_against_engine(FS_FRONTIER_NEW, FS_TEMPORAL_OFF);
    check_against_engine(FS_FRONTIER_ALL, FS_TEMPORAL_OFF);
    check_against_engine(FS_FRONTIER_NEW, FS_TEMPORAL_UNIFORM);
    check_against_engine(FS_FRONTIER_NEW, FS_TEMPORAL_LAST);
}

Test(hetero_local, link_batches_label_their_pairs)
{
    int64_t src[] = {1, 2, 3}, dst[] = {4, 5, 6};
    fs_hetero_fanout_t f[] = {{"paper", "cites", "paper", {4, 2}}};
    fs_hetero_req_t req = request(f, 1, FS_FRONTIER_NEW, FS_TEMPORAL_OFF);
    fs_link_req_t l = FS_LINK_REQ_INIT;
    l.src = "paper", l.rel = "cites", l.dst = "paper", l.count = 3, l.src_ids = src, l.dst_ids = dst;
    l.neg = FS_NEG_BINARY, l.amount = 2, l.strict = 1;
    fs_hetero_batch_t *b;
    cr_assert_eq(fs_link_sample(client, &l, &req, &b), FS_OK, "%s", fs_client_errstr(client));
    cr_assert_eq(b->num_labels, 9);
    const int64_t *nodes = b->types[b->link_src_type].nodes;
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(nodes[b->label_src[i]], src[i]);
        cr_assert_eq(b->types[b->link_dst_type].nodes[b->label_dst[i]], dst[i]);
        cr_assert_eq(b->label[i], 1);
    }
    for (int i = 3; i < 9; i++) cr_assert_eq(b->label[i], 0);
    fs_hetero_batch_free(b);
    l.neg = FS_NEG_TRIPLET, l.amount = 3;
    cr_assert_eq(fs_link_sample(client, &l, &req, &b), FS_OK, "%s", fs_client_errstr(client));
    cr_assert_eq(b->num_pos, 3);
    cr_assert_eq(b->num_neg_per_src, 3);
    for (int i = 0; i < 3; i++) cr_assert_eq(b->types[b->link_src_type].nodes[b->src_index[i]], src[i]);
    fs_hetero_batch_free(b);
}

/* A refusal with its code and a message naming the problem. */
static void expect_refused(fs_status_t got, fs_status_t want, const char *needle)
{
    cr_assert_eq(got, want, "status %s (%s)", fs_strerror(got), fs_client_errstr(client));
    cr_assert(strstr(fs_client_errstr(client), needle), "'%s' does not name '%s'", fs_client_errstr(client), needle);
}

Test(hetero_local, bad_requests_are_named)
{
    int64_t seeds[] = {1, 2};
    fs_hetero_fanout_t f[] = {{"paper", "cites", "paper", {5, 3}}}, bad_f[] = {{"paper", "likes", "venue", {5, 3}}};
    fs_hetero_req_t req = request(f, 1, FS_FRONTIER_NEW, FS_TEMPORAL_OFF);
    fs_hetero_batch_t *b;
    fs_hetero_seeds_t unknown = {"paperz", 2, seeds, NULL};
    expect_refused(fs_hetero_sample(client, &unknown, 1, &req, &b), FS_ERR_INVALID_ARGUMENT, "paperz");
    fs_hetero_seeds_t g = {"paper", 2, seeds, NULL};
    fs_hetero_req_t missing = request(bad_f, 1, FS_FRONTIER_NEW, FS_TEMPORAL_OFF);
    expect_refused(fs_hetero_sample(client, &g, 1, &missing, &b), FS_ERR_INVALID_ARGUMENT, "(paper, likes, venue)");
    const char *no_table[] = {"embedding"};
    fs_hetero_req_t nt = req;
    nt.node_tables = no_table, nt.num_node_tables = 1;
    expect_refused(fs_hetero_sample(client, &g, 1, &nt, &b), FS_ERR_NOT_FOUND, "embedding");
    fs_link_req_t l = FS_LINK_REQ_INIT;
    l.src = "paper", l.rel = "cites", l.dst = "paper", l.count = 2, l.src_ids = seeds, l.dst_ids = seeds;
    l.neg = FS_NEG_BINARY, l.amount = -1;
    expect_refused(fs_link_sample(client, &l, &req, &b), FS_ERR_INVALID_ARGUMENT, "-1");
    int64_t far[] = {1 << 30};
    fs_hetero_seeds_t out_of_range = {"paper", 1, far, NULL};
    expect_refused(fs_hetero_sample(client, &out_of_range, 1, &req, &b), FS_ERR_INVALID_ARGUMENT, "1073741824");
    /* homogeneous calls on a typed graph */
    fs_sample_req_t sr = SAMPLE_REQ(.num_hops = 1, .fanout = {2});
    fs_batch_t *hb;
    expect_refused(fs_sample(client, seeds, 2, &sr, &hb), FS_ERR_UNSUPPORTED, "fs_hetero_sample");
    /* the connection still works */
    cr_assert_eq(fs_hetero_sample(client, &g, 1, &req, &b), FS_OK, "%s", fs_client_errstr(client));
    fs_hetero_batch_free(b);
}

/* A version-1 dataset is node type "node" and edge type (node, to, node):
 * the typed call with the DGL frontier is the homogeneous sampler, bit for
 * bit, and the time-based requests are refused by name (no times). */
Test(hetero_local, v1_datasets_through_the_typed_calls)
{
    char *v1 = tu_path(dir, "v1"), *v1sock = tu_path(dir, "v1.sock");
    cr_assert_eq(tu_run(NULL, "%s gen rmat --scale 10 --out %s", tu_bin(), v1), 0);
    tu_server_t s2;
    cr_assert_eq(tu_serve(&s2, v1, v1sock, ""), 0);
    char uri[300];
    snprintf(uri, sizeof uri, "unix://%s", v1sock);
    fs_client_t *c;
    cr_assert_eq(fs_connect(uri, NULL, &c), FS_OK, "%s", fs_client_errstr(c));
    int64_t seeds[] = {3, 1, 4, 1, 5, 9, 2, 6};
    fs_sample_req_t sr = SAMPLE_REQ(.num_hops = 2, .fanout = {5, 3}, .seed = 11);
    fs_batch_t *hb;
    cr_assert_eq(fs_sample(c, seeds, 8, &sr, &hb), FS_OK, "%s", fs_client_errstr(c));
    fs_hetero_seeds_t g = {"node", 8, seeds, NULL};
    fs_hetero_fanout_t f[] = {{"node", "to", "node", {5, 3}}};
    fs_hetero_req_t req = FS_HETERO_REQ_INIT;
    req.num_hops = 2, req.fanouts = f, req.num_fanouts = 1, req.seed = 11, req.frontier = FS_FRONTIER_ALL;
    fs_hetero_batch_t *b;
    cr_assert_eq(fs_hetero_sample(c, &g, 1, &req, &b), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(b->types[0].num_nodes, hb->num_nodes);
    cr_assert_eq(memcmp(b->types[0].nodes, hb->nodes, (size_t)hb->num_nodes * 8), 0);
    for (int h = 0; h < 2; h++) {
        cr_assert_eq(b->blocks[h].num_edges, hb->blocks[h].num_edges);
        cr_assert_eq(memcmp(b->blocks[h].edge_src, hb->blocks[h].edge_src, (size_t)hb->blocks[h].num_edges * 8), 0);
        cr_assert_eq(memcmp(b->blocks[h].edge_dst, hb->blocks[h].edge_dst, (size_t)hb->blocks[h].num_edges * 8), 0);
    }
    fs_hetero_batch_free(b);
    fs_batch_free(hb);
    req.temporal = FS_TEMPORAL_UNIFORM;
    fs_status_t st = fs_hetero_sample(c, &g, 1, &req, &b);
    cr_assert_eq(st, FS_ERR_INVALID_ARGUMENT, "%s", fs_client_errstr(c));
    cr_assert(strstr(fs_client_errstr(c), "time"), "%s", fs_client_errstr(c));
    fs_close(c);
    cr_assert_eq(tu_serve_stop(&s2, SIGTERM), 0);
    free(v1), free(v1sock);
}
