/* test_stream_typed.c — typed and link epoch streams (client.h,
 * client-lib/stream.c) on a typed R-MAT over both transports: every batch
 * is the explicit fs_hetero_sample / fs_link_sample of its seeds with its
 * request seed; a typed split's shares cover it; a link stream walks the
 * link split's edges with their labels and times; bad hetero options are
 * named at open; the per-kind open calls (fs_stream_open_hetero, _link)
 * give the 1.4 form's batches bit for bit, and every option that does not
 * fit a kind — in either form — is refused by name. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "client_checks.h"
#include "featstore/client.h"
#include "test_util.h"

static char *dir, *data, sock[256], unix_uri[300], grpc_uri[64];
static tu_server_t srv;

static void setup(void)
{
    signal(SIGPIPE, SIG_IGN);
    dir = tu_mkdtemp();
    data = tu_path(dir, "typed");
    snprintf(sock, sizeof sock, "%s/s.sock", dir);
    cr_assert_eq(tu_run(NULL, "%s gen rmat --typed --scale 11 --out %s", tu_bin(), data), 0);
    cr_assert_eq(tu_serve(&srv, data, sock, ""), 0);
    snprintf(unix_uri, sizeof unix_uri, "unix://%s", sock);
    snprintf(grpc_uri, sizeof grpc_uri, "grpc://127.0.0.1:%d", srv.grpc_port);
}

static void teardown(void)
{
    tu_serve_stop(&srv, SIGTERM);
    tu_rm_rf(dir);
    free(dir), free(data);
}

TestSuite(stream_typed, .init = setup, .fini = teardown, .timeout = 180);

static fs_hetero_fanout_t fanouts[] = {{"paper", "cites", "paper", {5, 3}}, {"author", "writes", "paper", {3, 0}}};
static const char *const node_tables[] = {"feat", "labels"};

static fs_hetero_req_t typed_request(void)
{
    fs_hetero_req_t r = FS_HETERO_REQ_INIT;
    r.num_hops = 2, r.fanouts = fanouts, r.num_fanouts = 2, r.node_tables = node_tables, r.num_node_tables = 2;
    return r;
}

static fs_client_t *connect_to(const char *uri)
{
    fs_client_t *c;
    cr_assert_eq(fs_connect(uri, NULL, &c), FS_OK, "%s", fs_client_errstr(c));
    return c;
}

static void check_typed(const char *uri, int producers)
{
    fs_client_t *c = connect_to(uri);
    fs_hetero_req_t req = typed_request();
    fs_stream_opts_t o = FS_STREAM_OPTS_INIT;
    o.split = "paper/train", o.batch_size = 128, o.hetero = &req, o.seed = 4, o.epoch = 2, o.producers = producers;
    o.prefetch = producers > 2 ? producers : 0; /* no more than prefetch make batches at once */
    fs_stream_t *s;
    cr_assert_eq(fs_stream_open(c, &o, &s), FS_OK, "%s", fs_client_errstr(c));
    fs_ids_t *train;
    cr_assert_eq(fs_split(c, "paper/train", &train), FS_OK);
    char *seen = calloc(4096, 1);
    int64_t got = 0;
    fs_stream_batch_t *b;
    while (fs_stream_next(s, &b) == FS_OK) {
        cr_assert_null(b->batch);
        cr_assert_not_null(b->hetero);
        fs_hetero_req_t r = typed_request();
        r.seed = b->request_seed;
        fs_hetero_seeds_t g = {"paper", b->num_seeds, b->seeds, NULL};
        fs_hetero_batch_t *want;
        cr_assert_eq(fs_hetero_sample(c, &g, 1, &r, &want), FS_OK, "%s", fs_client_errstr(c));
        tc_same_hetero_batch(b->hetero, want);
        fs_hetero_batch_free(want);
        for (int64_t i = 0; i < b->num_seeds; i++) seen[b->seeds[i]] = 1;
        got += b->num_seeds;
        fs_stream_batch_free(b);
    }
    cr_assert_eq(got, train->n, "one rank's epoch covers the typed split");
    for (int64_t i = 0; i < train->n; i++) cr_assert(seen[train->ids[i]]);
    free(seen);
    fs_ids_free(train);
    fs_stream_close(s);
    fs_close(c);
}

Test(stream_typed, typed_batches_are_the_explicit_calls_over_unix) { check_typed(unix_uri, 0); }

Test(stream_typed, typed_batches_are_the_explicit_calls_over_grpc) { check_typed(grpc_uri, 0); }

Test(stream_typed, typed_batches_of_three_producers_are_the_explicit_calls) { check_typed(unix_uri, 3); }

Test(stream_typed, typed_batches_of_two_producers_over_grpc_are_the_explicit_calls) { check_typed(grpc_uri, 2); }

static void check_link(const char *uri, int producers)
{
    fs_client_t *c = connect_to(uri);
    fs_hetero_req_t req = typed_request();
    req.temporal = FS_TEMPORAL_UNIFORM;
    fs_link_req_t l = FS_LINK_REQ_INIT;
    l.src = "paper", l.rel = "cites", l.dst = "paper", l.neg = FS_NEG_BINARY, l.amount = 1;
    fs_stream_opts_t o = FS_STREAM_OPTS_INIT;
    o.split = "valid", o.batch_size = 200, o.hetero = &req, o.link = &l, o.order = FS_ORDER_SEQUENTIAL;
    o.rank = 1, o.world_size = 2, o.producers = producers;
    fs_stream_t *s;
    cr_assert_eq(fs_stream_open(c, &o, &s), FS_OK, "%s", fs_client_errstr(c));
    fs_ids_t *src, *dst, *time;
    cr_assert_eq(fs_split(c, "link/valid/src", &src), FS_OK);
    cr_assert_eq(fs_split(c, "link/valid/dst", &dst), FS_OK);
    cr_assert_eq(fs_split(c, "link/valid/time", &time), FS_OK);
    int64_t at = 0, batches = 0;
    fs_stream_batch_t *b;
    while (fs_stream_next(s, &b) == FS_OK) {
        int64_t n = b->num_seeds, *want_src = malloc(8 * (size_t)n), *want_dst = malloc(8 * (size_t)n),
                *want_time = malloc(8 * (size_t)n);
        for (int64_t i = 0; i < n; i++, at++) { /* sequential, rank 1 of 2: positions 1, 3, 5, ... */
            int64_t p = (2 * at + 1) % src->n;
            want_src[i] = src->ids[p], want_dst[i] = dst->ids[p], want_time[i] = time->ids[p];
        }
        cr_assert_arr_eq(b->seeds, want_src, 8 * (size_t)n, "the seeds are the split's src column");
        fs_link_req_t e = l;
        e.count = n, e.src_ids = want_src, e.dst_ids = want_dst, e.time = want_time;
        fs_hetero_req_t r = req;
        r.seed = b->request_seed;
        fs_hetero_batch_t *want;
        cr_assert_eq(fs_link_sample(c, &e, &r, &want), FS_OK, "%s", fs_client_errstr(c));
        tc_same_hetero_batch(b->hetero, want);
        cr_assert_eq(b->hetero->num_labels, 2 * n, "binary negatives, ratio 1");
        fs_hetero_batch_free(want);
        free(want_src), free(want_dst), free(want_time);
        fs_stream_batch_free(b);
        batches++;
    }
    cr_assert_eq(batches, fs_stream_num_batches(s));
    cr_assert_eq(at, (src->n + 1) / 2);
    fs_ids_free(src), fs_ids_free(dst), fs_ids_free(time);
    fs_stream_close(s);
    fs_close(c);
}

Test(stream_typed, link_batches_are_the_explicit_calls_over_unix) { check_link(unix_uri, 0); }

Test(stream_typed, link_batches_are_the_explicit_calls_over_grpc) { check_link(grpc_uri, 0); }

Test(stream_typed, link_batches_of_two_producers_are_the_explicit_calls) { check_link(unix_uri, 2); }

/* Option set i of bad_typed_options_are_named. */
static void spoil(int i, fs_stream_opts_t *o, fs_hetero_req_t *req, fs_link_req_t *l, fs_hetero_fanout_t *bad)
{
    switch (i) {
    default:
    case 0: o->split = "paper/train", o->sample = (const fs_sample_req_t *)req; break;
    case 1: o->split = "paper/train", bad->src = "nosuch", req->fanouts = bad, req->num_fanouts = 1; break;
    case 2: o->split = "paper/train", o->labels = "labels"; break;
    case 3: o->seeds = (const int64_t *)fanouts, o->num_seeds = 1; break; /* ids, but of which type? */
    case 8: o->split = "train"; break;
    case 4: o->split = "valid", o->link = l, o->hetero = NULL; break;
    case 5: o->split = "nosuch", o->link = l; break;
    case 6: o->split = "paper/train", o->seed_type = "nosuch"; break;
    case 7: o->split = "paper/train", o->hetero = NULL; break;
    }
}

Test(stream_typed, bad_typed_options_are_named)
{
    fs_client_t *c = connect_to(unix_uri);
    static const struct {
        fs_status_t code;
        const char *says;
    } want[] = {
        {FS_ERR_INVALID_ARGUMENT, "sample applies to node streams only; this is a hetero stream"},
        {FS_ERR_INVALID_ARGUMENT, "nosuch"},
        {FS_ERR_INVALID_ARGUMENT, "node_tables"},          {FS_ERR_INVALID_ARGUMENT, "give seed_type"},
        {FS_ERR_INVALID_ARGUMENT, "needs hetero"},         {FS_ERR_NOT_FOUND, "nosuch"},
        {FS_ERR_INVALID_ARGUMENT, "nosuch"},               {FS_ERR_INVALID_ARGUMENT, "heterogeneous graph"},
        {FS_ERR_NOT_FOUND, "ask for paper/train"},
    };
    for (int i = 0; i < (int)(sizeof want / sizeof *want); i++) {
        fs_hetero_req_t req = typed_request();
        fs_hetero_fanout_t bad = fanouts[0];
        fs_link_req_t l = FS_LINK_REQ_INIT;
        l.src = "paper", l.rel = "cites", l.dst = "paper";
        fs_stream_opts_t o = FS_STREAM_OPTS_INIT;
        o.batch_size = 16, o.hetero = &req;
        spoil(i, &o, &req, &l, &bad);
        if (i == 7) { /* a homogeneous stream on a typed graph */
            static const fs_sample_req_t sr = {.struct_size = sizeof(fs_sample_req_t), .num_hops = 1, .fanout = {5}};
            o.sample = &sr;
        }
        fs_stream_t *s = (fs_stream_t *)1;
        fs_status_t st = fs_stream_open(c, &o, &s);
        cr_assert_eq(st, want[i].code, "case %d: %s: %s", i, fs_strerror(st), fs_client_errstr(c));
        cr_assert_null(s);
        cr_assert(strstr(fs_client_errstr(c), want[i].says), "case %d: '%s' does not say '%s'", i,
                  fs_client_errstr(c), want[i].says);
    }
    fs_close(c);
}

/* The first batches of two streams, the same bit for bit. */
static void assert_same_streams(fs_stream_t *a, fs_stream_t *b, int batches)
{
    cr_assert_eq(fs_stream_num_batches(a), fs_stream_num_batches(b));
    for (int i = 0; i < batches; i++) {
        fs_stream_batch_t *x, *y;
        cr_assert_eq(fs_stream_next(a, &x), FS_OK, "%s", fs_stream_errstr(a));
        cr_assert_eq(fs_stream_next(b, &y), FS_OK, "%s", fs_stream_errstr(b));
        cr_assert_eq(x->request_seed, y->request_seed);
        cr_assert_eq(x->num_seeds, y->num_seeds);
        cr_assert_arr_eq(x->seeds, y->seeds, sizeof *x->seeds * (size_t)x->num_seeds);
        tc_same_hetero_batch(x->hetero, y->hetero);
        fs_stream_batch_free(x), fs_stream_batch_free(y);
    }
}

/* fs_stream_open_hetero and fs_stream_open_link against the 1.4 form with
 * the same values: the same batches, bit for bit. */
Test(stream_typed, the_per_kind_calls_give_the_1_4_forms_batches)
{
    fs_client_t *c = connect_to(unix_uri);
    fs_hetero_req_t req = typed_request();
    fs_link_req_t l = FS_LINK_REQ_INIT;
    l.src = "paper", l.rel = "cites", l.dst = "paper", l.neg = FS_NEG_BINARY, l.amount = 1;
    fs_stream_common_t common = FS_STREAM_COMMON_INIT;
    common.split = "paper/train", common.batch_size = 64, common.seed = 3, common.epoch = 1;
    fs_stream_opts_t old = FS_STREAM_OPTS_INIT;
    old.split = "paper/train", old.batch_size = 64, old.seed = 3, old.epoch = 1, old.hetero = &req;
    fs_stream_hetero_opts_t h = FS_STREAM_HETERO_OPTS_INIT;
    h.request = &req;
    fs_stream_t *a, *b;
    cr_assert_eq(fs_stream_open(c, &old, &a), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(fs_stream_open_hetero(c, &common, &h, &b), FS_OK, "%s", fs_client_errstr(c));
    assert_same_streams(a, b, 3);
    fs_stream_close(a), fs_stream_close(b);

    common.split = old.split = "valid", old.link = &l;
    fs_stream_link_opts_t lo = FS_STREAM_LINK_OPTS_INIT;
    lo.request = &req, lo.link = &l;
    cr_assert_eq(fs_stream_open(c, &old, &a), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(fs_stream_open_link(c, &common, &lo, &b), FS_OK, "%s", fs_client_errstr(c));
    assert_same_streams(a, b, 3);
    fs_stream_close(a), fs_stream_close(b);
    fs_close(c);
}

/* The 1.4 struct carries every kind's fields: each one set where its kind
 * does not take it is refused by name, with the kind it was taken for. */
Test(stream_typed, the_1_4_form_refuses_each_foreign_field_by_name)
{
    fs_client_t *c = connect_to(unix_uri);
    fs_hetero_req_t req = typed_request();
    fs_link_req_t l = FS_LINK_REQ_INIT;
    l.src = "paper", l.rel = "cites", l.dst = "paper";
    static const fs_sample_req_t sr = {.struct_size = sizeof(fs_sample_req_t), .num_hops = 1, .fanout = {5}};
    static const char *const hops[] = {"hop_0"};
    static const char *const want[] = {
        "stream: delta applies to node streams only; this is a link stream",
        "stream: window applies to node streams only; this is a hetero stream",
        "stream: table applies to node streams only; this is a hetero stream",
        "stream: seed_type applies to hetero streams only; this is a link stream",
        "stream: seed_type applies to hetero streams only; this is a node stream",
        "stream: tables applies to row streams only; this is a hetero stream: put them in the hetero request's "
        "node_tables",
        "stream: labels applies to node and row streams only; this is a link stream: put the label table in",
        "stream: out_dtype applies to node and row streams only; this is a hetero stream",
        "stream: sample applies to node streams only; this is a row stream (it gathers its tables' rows without "
        "sampling)",
        "stream: delta applies to node streams only; this is a row stream",
    };
    for (int i = 0; i < (int)(sizeof want / sizeof *want); i++) {
        fs_stream_opts_t o = FS_STREAM_OPTS_INIT;
        o.split = "paper/train", o.batch_size = 16, o.hetero = &req;
        switch (i) {
        case 0: o.link = &l, o.delta = FS_DELTA_FULL; break;
        case 1: o.window = 4; break;
        case 2: o.table = "feat"; break;
        case 3: o.link = &l, o.seed_type = "paper"; break;
        case 4: o.hetero = NULL, o.sample = &sr, o.seed_type = "paper"; break;
        case 5: o.tables = hops; break;
        case 6: o.link = &l, o.labels = "labels"; break;
        case 7: o.out_dtype = FS_DTYPE_F32; break;
        case 8: o.hetero = NULL, o.tables = hops, o.num_tables = 1, o.sample = &sr; break;
        default: o.hetero = NULL, o.tables = hops, o.num_tables = 1, o.delta = FS_DELTA_ONLY; break;
        }
        fs_stream_t *s = (fs_stream_t *)1;
        cr_assert_eq(fs_stream_open(c, &o, &s), FS_ERR_INVALID_ARGUMENT, "case %d: %s", i, fs_client_errstr(c));
        cr_assert_null(s);
        cr_assert(strstr(fs_client_errstr(c), want[i]), "case %d: '%s' does not say '%s'", i, fs_client_errstr(c),
                  want[i]);
    }
    fs_close(c);
}

/* A refused open: its status, its message saying `says`, no stream. */
static void refused(fs_client_t *c, fs_status_t got, fs_status_t code, const char *says, fs_stream_t **s)
{
    cr_assert_eq(got, code, "%s: %s", fs_strerror(got), fs_client_errstr(c));
    cr_assert(strstr(fs_client_errstr(c), says), "'%s' does not say '%s'", fs_client_errstr(c), says);
    cr_assert_null(*s);
    *s = (fs_stream_t *)1;
}

/* What each per-kind call needs, and an unknown `calls`, refused by name. */
Test(stream_typed, the_per_kind_calls_name_what_they_lack)
{
    fs_client_t *c = connect_to(unix_uri);
    fs_hetero_req_t req = typed_request();
    fs_link_req_t l = FS_LINK_REQ_INIT;
    l.src = "paper", l.rel = "cites", l.dst = "paper";
    static const fs_sample_req_t sr = {.struct_size = sizeof(fs_sample_req_t), .num_hops = 1, .fanout = {5}};
    static const char *const many[17] = {"hop_0"};
    fs_stream_common_t common = FS_STREAM_COMMON_INIT;
    common.split = "paper/train", common.batch_size = 16;
    fs_stream_node_opts_t n = FS_STREAM_NODE_OPTS_INIT;
    fs_stream_hetero_opts_t h = FS_STREAM_HETERO_OPTS_INIT;
    fs_stream_link_opts_t lo = FS_STREAM_LINK_OPTS_INIT;
    fs_stream_rows_opts_t r = FS_STREAM_ROWS_OPTS_INIT;
    fs_stream_t *s = (fs_stream_t *)1;
    const fs_status_t bad = FS_ERR_INVALID_ARGUMENT;
    refused(c, fs_stream_open_nodes(c, &common, &n, &s), bad, "stream: no sampling request (sample)", &s);
    n.sample = &sr, n.calls = (fs_stream_calls_t)7;
    refused(c, fs_stream_open_nodes(c, &common, &n, &s), bad, "stream: unknown calls 7", &s);
    /* (calls = FS_STREAM_CALLS_STREAM where it cannot be: tests/integration/streams/test_stream_grpc.c, on a homogeneous graph) */
    refused(c, fs_stream_open_hetero(c, &common, &h, &s), bad,
            "stream: a hetero stream needs hetero, the request that samples each batch", &s);
    lo.request = &req;
    refused(c, fs_stream_open_link(c, &common, &lo, &s), bad,
            "stream: a link stream needs link, the seed edges' type and negatives", &s);
    lo.request = NULL, lo.link = &l;
    refused(c, fs_stream_open_link(c, &common, &lo, &s), bad, "stream: a link stream needs hetero", &s);
    refused(c, fs_stream_open_rows(c, &common, &r, &s), bad, "stream: a row stream needs tables", &s);
    r.tables = many, r.num_tables = 17;
    refused(c, fs_stream_open_rows(c, &common, &r, &s), bad, "stream: 17 tables, at most 16", &s);
    refused(c, fs_stream_open_hetero(c, NULL, &h, &s), bad, "stream: no common options", &s);
    fs_close(c);
}
