/* test_stream_grpc.c — epoch streams the server makes (gRPC's Stream
 * method, server/epoch_run.c) against a real `featstore serve`: one call
 * carries a whole stream; its batches are bit for bit those the client's
 * own per-batch calls make (fs_stream_node_opts_t.calls =
 * FS_STREAM_CALLS_BATCH, and the environment's fallback
 * FEATSTORE_STREAM_CALLS=batch), in every delta mode and window,
 * sample-only and with explicit seeds; fs_stream_open_nodes gives the 1.4
 * form's batches bit for bit, and refuses calls = FS_STREAM_CALLS_STREAM
 * where the server cannot make them; a reader that
 * stops reading holds none of the server's other work; a call the server
 * timed out while its trainer was away is reopened where it stopped; a
 * server whose Stream call is refused says why. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "featstore/client.h"
#include "test_util.h"

/* Wide enough rows that an epoch is several times the stream's HTTP/2
 * window (8 MiB): a server can run ahead of its reader only that far. */
#define DIM 512

static char *dir, *data, sock[256];
static tu_server_t srv;
static char grpc_uri[64];

static void serve(const char *extra)
{
    cr_assert_eq(tu_serve(&srv, data, sock, extra), 0);
    snprintf(grpc_uri, sizeof grpc_uri, "grpc://127.0.0.1:%d", srv.grpc_port);
}

static void setup(void)
{
    signal(SIGPIPE, SIG_IGN);
    unsetenv("FEATSTORE_STREAM_CALLS");
    dir = tu_mkdtemp();
    data = tu_path(dir, "g");
    snprintf(sock, sizeof sock, "%s/s.sock", dir);
    char *log;
    cr_assert_eq(tu_run(&log, "%s gen rmat --scale 11 --edge-factor 8 --dim %d --symmetrize --out %s", tu_bin(), DIM,
                        data), 0, "%s", log);
    free(log);
}

static void teardown(void)
{
    if (srv.pid > 0) tu_serve_stop(&srv, SIGTERM);
    tu_rm_rf(dir);
    free(dir);
    free(data);
}

TestSuite(stream_grpc, .init = setup, .fini = teardown, .timeout = 180);

static fs_client_t *connect_to(const char *uri)
{
    fs_client_t *c;
    cr_assert_eq(fs_connect(uri, NULL, &c), FS_OK, "%s", fs_client_errstr(c));
    return c;
}

static const fs_sample_req_t request = {.struct_size = sizeof(fs_sample_req_t), .num_hops = 2, .fanout = {10, 5}};

static fs_stream_opts_t base_opts(void)
{
    fs_stream_opts_t o = FS_STREAM_OPTS_INIT;
    o.split = "train", o.batch_size = 64, o.sample = &request, o.table = "feat", o.seed = 9, o.epoch = 2;
    return o;
}

/* The count of a method's gRPC requests in the server's metrics. */
static long long requests(fs_client_t *c, const char *method)
{
    char *text, want[128];
    cr_assert_eq(fs_stats(c, &text), FS_OK, "%s", fs_client_errstr(c));
    snprintf(want, sizeof want, "featstore_requests_total{method=\"%s\",transport=\"grpc\"} ", method);
    const char *at = strstr(text, want);
    long long n = at ? atoll(at + strlen(want)) : -1;
    free(text);
    return n;
}

/* One batch, everything a caller can see of it, copied. */
typedef struct {
    int64_t plan_index, num_seeds, num_nodes, num_new, prev_rows, num_edges[2];
    int64_t *ids;                  /* seeds, labels, nodes, take, edge_src per hop */
    float *features, *new_rows;
} snap_t;

static int64_t *put(int64_t *at, const int64_t *src, int64_t n)
{
    if (src && n) memcpy(at, src, sizeof *at * (size_t)n);
    return at + n;
}

static void snap(const fs_stream_batch_t *b, snap_t *s)
{
    const fs_batch_t *x = b->batch;
    *s = (snap_t){.plan_index = b->plan_index, .num_seeds = b->num_seeds, .num_nodes = x->num_nodes,
                  .num_new = b->num_new, .prev_rows = b->prev_rows};
    int64_t words = 2 * b->num_seeds + 2 * x->num_nodes;
    for (int h = 0; h < x->num_hops; h++) s->num_edges[h] = x->blocks[h].num_edges, words += s->num_edges[h];
    s->ids = calloc((size_t)words + 1, sizeof *s->ids);
    int64_t *at = put(s->ids, b->seeds, b->num_seeds);
    at = put(at, b->labels, b->labels ? b->num_seeds : 0);
    at = put(at, x->nodes, x->num_nodes);
    at = put(at, b->take, b->take ? x->num_nodes : 0);
    for (int h = 0; h < x->num_hops; h++) at = put(at, x->blocks[h].edge_src, s->num_edges[h]);
    size_t d = (size_t)b->dim;
    if (b->features) s->features = malloc(sizeof(float) * d * (size_t)x->num_nodes + 1),
                     memcpy(s->features, b->features, sizeof(float) * d * (size_t)x->num_nodes);
    if (b->num_new) s->new_rows = malloc(sizeof(float) * d * (size_t)b->num_new),
                    memcpy(s->new_rows, b->new_rows, sizeof(float) * d * (size_t)b->num_new);
}

static void snap_free(snap_t *s) { free(s->ids), free(s->features), free(s->new_rows); }

/* o (the 1.4 form's options of a node stream) opened with
 * fs_stream_open_nodes: its common and node options, and calls. */
static fs_status_t open_nodes(fs_client_t *c, const fs_stream_opts_t *o, fs_stream_calls_t calls, fs_stream_t **s)
{
    fs_stream_common_t m = FS_STREAM_COMMON_INIT;
    m.split = o->split, m.seeds = o->seeds, m.num_seeds = o->num_seeds, m.batch_size = o->batch_size;
    m.drop_last = o->drop_last, m.seed = o->seed, m.epoch = o->epoch, m.chunk = o->chunk;
    m.start_batch = o->start_batch, m.order = o->order, m.rank = o->rank, m.world_size = o->world_size;
    m.prefetch = o->prefetch, m.hold = o->hold, m.producers = o->producers;
    fs_stream_node_opts_t n = FS_STREAM_NODE_OPTS_INIT;
    n.sample = o->sample, n.table = o->table, n.labels = o->labels, n.out_dtype = o->out_dtype;
    n.delta = o->delta, n.window = o->window, n.calls = calls;
    return fs_stream_open_nodes(c, &m, &n, s);
}

/* Every batch of a stream opened with o on a new connection. calls: NULL
 * (the 1.4 form; the server makes them) or "batch" (the 1.4 form with
 * FEATSTORE_STREAM_CALLS=batch: the client makes them), or the per-kind
 * call with calls = "opt:auto", "opt:stream" or "opt:batch". */
static int64_t epoch(const fs_stream_opts_t *o, const char *calls, snap_t *out, int64_t cap)
{
    static const char *const opt[] = {[FS_STREAM_CALLS_AUTO] = "opt:auto", [FS_STREAM_CALLS_STREAM] = "opt:stream",
                                      [FS_STREAM_CALLS_BATCH] = "opt:batch"};
    int by_option = calls && strncmp(calls, "opt:", 4) == 0;
    if (calls && !by_option) setenv("FEATSTORE_STREAM_CALLS", calls, 1);
    else unsetenv("FEATSTORE_STREAM_CALLS");
    fs_client_t *c = connect_to(grpc_uri);
    fs_stream_t *s;
    fs_status_t st = FS_ERR_INTERNAL;
    for (int k = 0; k < 3 && by_option; k++)
        if (strcmp(calls, opt[k]) == 0) st = open_nodes(c, o, (fs_stream_calls_t)k, &s);
    if (!by_option) st = fs_stream_open(c, o, &s);
    cr_assert_eq(st, FS_OK, "%s: %s", calls ? calls : "1.4 form", fs_client_errstr(c));
    unsetenv("FEATSTORE_STREAM_CALLS");
    int64_t n = 0;
    fs_stream_batch_t *b;
    while ((st = fs_stream_next(s, &b)) == FS_OK) {
        cr_assert_lt(n, cap);
        cr_assert_eq(b->index, o->start_batch + n);
        snap(b, &out[n++]);
        fs_stream_batch_free(b);
    }
    cr_assert_eq(st, FS_END, "%s", fs_stream_errstr(s));
    cr_assert_eq(n, fs_stream_num_batches(s) - o->start_batch);
    fs_stream_close(s);
    fs_close(c);
    return n;
}

/* The epochs of o opened two ways (epoch's `calls`), the same bit for bit. */
static void assert_same_epochs_by(const fs_stream_opts_t *o, const char *one, const char *other)
{
    static snap_t a[64], b[64];
    int64_t n = epoch(o, one, a, 64), m = epoch(o, other, b, 64);
    cr_assert_eq(n, m);
    int64_t reused = 0;
    for (int64_t i = 0; i < n; i++) {
        const snap_t *x = &a[i], *y = &b[i];
        cr_assert_eq(x->plan_index, y->plan_index, "batch %lld", (long long)i);
        cr_assert_eq(x->num_nodes, y->num_nodes);
        cr_assert_eq(x->num_edges[0], y->num_edges[0]);
        cr_assert_eq(x->num_edges[1], y->num_edges[1]);
        cr_assert_eq(x->prev_rows, y->prev_rows);
        cr_assert_eq(x->num_new, y->num_new, "batch %lld", (long long)i);
        int64_t words = 2 * x->num_seeds + 2 * x->num_nodes + x->num_edges[0] + x->num_edges[1];
        cr_assert_arr_eq(x->ids, y->ids, sizeof *x->ids * (size_t)words, "batch %lld", (long long)i);
        cr_assert_eq(!x->features, !y->features);
        if (x->features) cr_assert_arr_eq(x->features, y->features, sizeof(float) * DIM * (size_t)x->num_nodes);
        if (o->delta != FS_DELTA_OFF) cr_assert_arr_eq(x->new_rows, y->new_rows, sizeof(float) * DIM * (size_t)x->num_new);
        reused += x->num_nodes - x->num_new;
        snap_free(&a[i]), snap_free(&b[i]);
    }
    if (o->delta != FS_DELTA_OFF) cr_assert_gt(reused, 0, "the delta reused rows");
}

static void assert_same_epochs(const fs_stream_opts_t *o) { assert_same_epochs_by(o, NULL, "batch"); }

Test(stream_grpc, one_call_carries_the_whole_stream)
{
    serve("");
    fs_client_t *c = connect_to(grpc_uri);
    fs_stream_opts_t o = base_opts();
    o.delta = FS_DELTA_FULL, o.window = 8;
    long long calls0 = requests(c, "Sample") + requests(c, "Gather") + requests(c, "SampleGather");
    static snap_t s[64];
    int64_t n = epoch(&o, NULL, s, 64);
    for (int64_t i = 0; i < n; i++) snap_free(&s[i]);
    cr_assert_eq(requests(c, "Stream"), 1, "one Stream call for %lld batches", (long long)n);
    cr_assert_eq(requests(c, "Sample") + requests(c, "Gather") + requests(c, "SampleGather"), calls0,
                 "and no per-batch call");
    fs_close(c);
}

Test(stream_grpc, server_made_batches_are_the_client_made_ones)
{
    serve("");
    fs_stream_opts_t o = base_opts();
    assert_same_epochs(&o); /* no delta: every row in every batch */
    o.delta = FS_DELTA_FULL, o.window = 8;
    assert_same_epochs(&o);
    o.delta = FS_DELTA_ONLY, o.window = 1, o.rank = 1, o.world_size = 3, o.drop_last = 1;
    assert_same_epochs(&o);
    o = base_opts();
    o.table = NULL, o.labels = ""; /* sample only */
    assert_same_epochs(&o);
    int64_t seeds[300];
    for (int i = 0; i < 300; i++) seeds[i] = (i * 97) % 2048;
    o = base_opts();
    o.split = NULL, o.seeds = seeds, o.num_seeds = 300, o.order = FS_ORDER_CHUNKED, o.chunk = 50;
    o.delta = FS_DELTA_FULL, o.window = 3, o.start_batch = 2;
    assert_same_epochs(&o);
}

/* A trainer that stops reading: the server goes on answering others, and the
 * stream goes on, correct, when the trainer does. */
Test(stream_grpc, a_stalled_reader_holds_none_of_the_servers_work)
{
    serve("--threads 2");
    fs_client_t *c = connect_to(grpc_uri), *other = connect_to(grpc_uri);
    fs_stream_opts_t o = base_opts();
    o.prefetch = 1, o.batch_size = 256;
    fs_stream_t *s;
    cr_assert_eq(fs_stream_open(c, &o, &s), FS_OK, "%s", fs_client_errstr(c));
    fs_stream_batch_t *b;
    cr_assert_eq(fs_stream_next(s, &b), FS_OK);
    fs_stream_batch_free(b);
    usleep(300 * 1000); /* the stream is not read: the server parks its call */
    int64_t ids[256];
    for (int i = 0; i < 256; i++) ids[i] = i * 7;
    for (int k = 0; k < 40; k++) {
        fs_sample_req_t r = request;
        r.seed = (uint64_t)k;
        fs_batch_t *x;
        cr_assert_eq(fs_sample_gather(other, ids, 256, &r, "feat", FS_DTYPE_INVALID, &x), FS_OK, "%s",
                     fs_client_errstr(other));
        fs_batch_free(x);
    }
    int64_t n = 1;
    fs_status_t st;
    while ((st = fs_stream_next(s, &b)) == FS_OK) n++, fs_stream_batch_free(b);
    cr_assert_eq(st, FS_END, "%s", fs_stream_errstr(s));
    cr_assert_eq(n, fs_stream_num_batches(s));
    fs_stream_close(s);
    fs_close(other);
    fs_close(c);
}

/* With a request timeout far shorter than the epoch, every batch renews
 * it; a trainer away for longer has its call reaped, and the stream opens
 * another where it stopped, bit for bit. */
Test(stream_grpc, the_server_timeout_counts_per_batch_and_a_reaped_call_resumes)
{
    serve("--request-timeout 400ms");
    fs_stream_opts_t o = base_opts();
    /* The call is reaped only if the server is still sending when the
     * trainer goes away: the rest of the epoch must not fit in gRPC's flow
     * control (an 8 MiB stream window, fs_wire_channel_args). With delta
     * rows and batches of 32 it was 9.1 MB, and one loaded CI run sent it
     * all in time; whole rows in batches of 8 leave 37 MB. */
    o.delta = FS_DELTA_OFF, o.prefetch = 1, o.batch_size = 8;
    static snap_t whole[256];
    int64_t n = epoch(&o, NULL, whole, 256);
    cr_assert_gt(n, 20);
    fs_client_t *c = connect_to(grpc_uri);
    long long calls0 = requests(c, "Stream");
    fs_stream_t *s;
    cr_assert_eq(fs_stream_open(c, &o, &s), FS_OK, "%s", fs_client_errstr(c));
    fs_stream_batch_t *b;
    for (int64_t i = 0; i < n; i++) {
        if (i < 12) usleep(60 * 1000); /* 12 x 60 ms: longer than one timeout, spread over batches */
        if (i == 12) usleep(1200 * 1000); /* away for three timeouts: the call is reaped */
        cr_assert_eq(fs_stream_next(s, &b), FS_OK, "batch %lld: %s", (long long)i, fs_stream_errstr(s));
        snap_t got;
        snap(b, &got);
        cr_assert_eq(got.plan_index, whole[i].plan_index);
        cr_assert_eq(got.num_nodes, whole[i].num_nodes);
        cr_assert_arr_eq(got.features, whole[i].features, sizeof(float) * DIM * (size_t)got.num_nodes);
        snap_free(&got), snap_free(&whole[i]);
        fs_stream_batch_free(b);
    }
    cr_assert_eq(fs_stream_next(s, &b), FS_END);
    cr_assert_geq(requests(c, "Stream"), calls0 + 2, "the reaped call was replaced");
    fs_stream_close(s);
    fs_close(c);
}

/* The calls option, the twin of the environment's fallback: calls =
 * FS_STREAM_CALLS_BATCH makes the client's per-batch calls (no Stream
 * call), _STREAM and _AUTO the server's one call, all the same batches as
 * the 1.4 form's; and fs_stream_open_nodes' batches are the 1.4 form's. */
Test(stream_grpc, the_calls_option_chooses_who_makes_the_batches)
{
    serve("");
    fs_client_t *c = connect_to(grpc_uri);
    fs_stream_opts_t o = base_opts();
    o.delta = FS_DELTA_FULL, o.window = 4;
    static snap_t s[64];
    long long streams = requests(c, "Stream"), per_batch = requests(c, "Sample");
    int64_t n = epoch(&o, "opt:batch", s, 64);
    for (int64_t i = 0; i < n; i++) snap_free(&s[i]);
    cr_assert_eq(requests(c, "Stream"), streams, "FS_STREAM_CALLS_BATCH: no Stream call");
    cr_assert_geq(requests(c, "Sample"), per_batch + n, "one Sample call per batch");
    n = epoch(&o, "opt:stream", s, 64);
    for (int64_t i = 0; i < n; i++) snap_free(&s[i]);
    cr_assert_eq(requests(c, "Stream"), streams + 1, "FS_STREAM_CALLS_STREAM: one Stream call");
    fs_close(c);
    assert_same_epochs_by(&o, "opt:stream", "opt:batch");
    assert_same_epochs_by(&o, NULL, "opt:auto");   /* the 1.4 form and the per-kind call */
    assert_same_epochs_by(&o, "batch", "opt:batch");
    o = base_opts();
    assert_same_epochs_by(&o, "opt:auto", "opt:batch");
}

/* calls = FS_STREAM_CALLS_STREAM where the server cannot make the batches:
 * over unix:// the trainer makes its own. Refused by name. */
Test(stream_grpc, calls_stream_is_refused_where_the_server_cannot_make_the_batches)
{
    serve("");
    char uri[300];
    snprintf(uri, sizeof uri, "unix://%s", sock);
    fs_client_t *c = connect_to(uri);
    fs_stream_opts_t o = base_opts();
    fs_stream_t *s = (fs_stream_t *)1;
    cr_assert_eq(open_nodes(c, &o, FS_STREAM_CALLS_STREAM, &s), FS_ERR_UNSUPPORTED, "%s", fs_client_errstr(c));
    cr_assert_null(s);
    cr_assert(strstr(fs_client_errstr(c), "stream: calls = FS_STREAM_CALLS_STREAM, but over unix:// this process "
                                          "makes the batches itself"), "%s", fs_client_errstr(c));
    cr_assert_eq(open_nodes(c, &o, FS_STREAM_CALLS_BATCH, &s), FS_OK, "over unix:// _BATCH is what happens anyway");
    fs_stream_close(s);
    fs_close(c);
}
