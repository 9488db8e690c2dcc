/* test_stream.c — epoch streams (client.h, client-lib/stream.c) against a
 * real server over both transports: every batch equals the explicit
 * fs_sample_gather with its seeds and request seed, and the fs_gather of
 * its labels; DDP shares through streams are disjoint and cover the
 * split; a stream reopened at its position continues bit for bit, and so
 * does one whose server was killed with SIGKILL and restarted; the ready
 * batches never exceed the prefetch depth and holding more than `hold`
 * is refused; Match-Reorder: a delta batch reassembles to exactly the
 * full batch, only new rows are fetched, windows are permutations of the
 * plan's batches; row streams gather every table, by node or (a labelled
 * layout's row tables) by row in bulk runs; bad options are named; the
 * per-kind calls (fs_stream_open_nodes, _rows) give the 1.4 form's
 * batches. */
#include <criterion/criterion.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataset.h"
#include "featstore/client.h"
#include "test_util.h"

static char *dir, *data, sock[256];
static tu_server_t srv;
static char unix_uri[300], grpc_uri[64];

static void setup(void)
{
    signal(SIGPIPE, SIG_IGN);
    dir = tu_mkdtemp();
    data = tu_path(dir, "g");
    snprintf(sock, sizeof sock, "%s/s.sock", dir);
    char *log;
    cr_assert_eq(tu_run(&log, "%s gen rmat --scale 11 --edge-factor 8 --dim 16 --symmetrize --out %s", tu_bin(), data), 0,
                 "%s", log);
    free(log);
    cr_assert_eq(tu_serve(&srv, data, sock, ""), 0);
    snprintf(unix_uri, sizeof unix_uri, "unix://%s", sock);
    snprintf(grpc_uri, sizeof grpc_uri, "grpc://127.0.0.1:%d", srv.grpc_port);
}

static void teardown(void)
{
    if (srv.pid > 0) tu_serve_stop(&srv, SIGTERM);
    tu_rm_rf(dir);
    free(dir);
    free(data);
}

TestSuite(stream, .init = setup, .fini = teardown, .timeout = 180);

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
    o.split = "train", o.batch_size = 100, o.sample = &request, o.table = "feat", o.seed = 5, o.epoch = 1;
    return o;
}

static void assert_same_batch(const fs_batch_t *a, const fs_batch_t *b)
{
    cr_assert_eq(a->num_nodes, b->num_nodes);
    cr_assert_arr_eq(a->nodes, b->nodes, sizeof *a->nodes * (size_t)a->num_nodes);
    cr_assert_eq(a->num_seeds, b->num_seeds);
    cr_assert_arr_eq(a->seed_local, b->seed_local, sizeof *a->seed_local * (size_t)a->num_seeds);
    cr_assert_eq(a->num_hops, b->num_hops);
    for (int h = 0; h < a->num_hops; h++) {
        const fs_block_t *x = &a->blocks[h], *y = &b->blocks[h];
        cr_assert_eq(x->num_edges, y->num_edges);
        cr_assert_arr_eq(x->edge_src, y->edge_src, sizeof *x->edge_src * (size_t)x->num_edges);
        cr_assert_arr_eq(x->edge_dst, y->edge_dst, sizeof *x->edge_dst * (size_t)x->num_edges);
    }
    cr_assert_eq(a->rows, b->rows);
    cr_assert_eq(a->dim, b->dim);
    cr_assert_arr_eq(a->features, b->features, (size_t)(a->rows * a->dim) * fs_dtype_size(a->dtype));
}

/* base_opts with fs_stream_open_nodes, who makes the batches as `calls` says. */
static fs_status_t open_nodes(fs_client_t *c, const fs_stream_opts_t *o, fs_stream_calls_t calls, fs_stream_t **s)
{
    fs_stream_common_t m = FS_STREAM_COMMON_INIT;
    m.split = o->split, m.batch_size = o->batch_size, m.seed = o->seed, m.epoch = o->epoch;
    m.prefetch = o->prefetch, m.producers = o->producers;
    fs_stream_node_opts_t n = FS_STREAM_NODE_OPTS_INIT;
    n.sample = o->sample, n.table = o->table, n.calls = calls;
    return fs_stream_open_nodes(c, &m, &n, s);
}

/* Every batch of a stream (made by `producers` threads) against the
 * explicit calls on the same connection; calls < 0: the 1.4 form, else
 * fs_stream_open_nodes with that fs_stream_calls_t. */
static void check_against_calls(const char *uri, int producers, int calls)
{
    fs_client_t *c = connect_to(uri);
    fs_stream_opts_t o = base_opts();
    o.producers = producers, o.prefetch = producers > 2 ? producers : 0; /* at most prefetch work at once */
    fs_stream_t *s;
    fs_status_t st = calls < 0 ? fs_stream_open(c, &o, &s) : open_nodes(c, &o, (fs_stream_calls_t)calls, &s);
    cr_assert_eq(st, FS_OK, "%s", fs_client_errstr(c));
    int64_t nb = fs_stream_num_batches(s), got = 0;
    cr_assert_eq(nb, (1228 + 99) / 100);
    fs_stream_batch_t *b;
    while (fs_stream_next(s, &b) == FS_OK) {
        cr_assert_eq(b->index, got);
        cr_assert_eq(fs_stream_position(s), got + 1);
        fs_sample_req_t r = request;
        r.seed = b->request_seed;
        fs_batch_t *want, *labels;
        cr_assert_eq(fs_sample_gather(c, b->seeds, b->num_seeds, &r, "feat", FS_DTYPE_INVALID, &want), FS_OK, "%s",
                     fs_client_errstr(c));
        assert_same_batch(b->batch, want);
        cr_assert_eq(fs_gather(c, b->seeds, b->num_seeds, "labels", FS_DTYPE_INVALID, &labels), FS_OK);
        cr_assert_not_null(b->labels);
        cr_assert_arr_eq(b->labels, labels->features, sizeof(int64_t) * (size_t)b->num_seeds);
        fs_batch_free(want), fs_batch_free(labels);
        fs_stream_batch_free(b);
        got++;
    }
    cr_assert_eq(got, nb);
    cr_assert_eq(fs_stream_next(s, &b), FS_END);
    cr_assert_null(b);
    fs_stream_close(s);
    fs_close(c);
}

Test(stream, batches_are_the_explicit_calls_over_unix) { check_against_calls(unix_uri, 0, -1); }

Test(stream, batches_of_three_producers_are_the_explicit_calls_in_order) { check_against_calls(unix_uri, 3, -1); }

Test(stream, batches_are_the_explicit_calls_over_grpc) { check_against_calls(grpc_uri, 0, -1); }

Test(stream, per_kind_batches_are_the_explicit_calls_over_both)
{
    check_against_calls(unix_uri, 0, FS_STREAM_CALLS_AUTO);
    check_against_calls(grpc_uri, 0, FS_STREAM_CALLS_AUTO);
}

/* A node stream over grpc:// is made by the server unless the calls are
 * the client's: then two producers make them, over two connections. */
Test(stream, batches_of_two_producers_over_grpc_are_the_explicit_calls)
{
    setenv("FEATSTORE_STREAM_CALLS", "batch", 1);
    check_against_calls(grpc_uri, 2, -1);
}

/* The same with the option instead of the environment's fallback. */
Test(stream, batches_of_two_producers_over_grpc_by_the_calls_option)
{
    unsetenv("FEATSTORE_STREAM_CALLS");
    check_against_calls(grpc_uri, 2, FS_STREAM_CALLS_BATCH);
}

/* All the seeds of one rank's stream, in order. */
static int64_t rank_seeds(fs_client_t *c, fs_stream_opts_t o, int64_t *out)
{
    fs_stream_t *s;
    cr_assert_eq(fs_stream_open(c, &o, &s), FS_OK, "%s", fs_client_errstr(c));
    fs_stream_batch_t *b;
    int64_t n = 0;
    while (fs_stream_next(s, &b) == FS_OK) {
        memcpy(out + n, b->seeds, sizeof *out * (size_t)b->num_seeds);
        n += b->num_seeds;
        fs_stream_batch_free(b);
    }
    fs_stream_close(s);
    return n;
}

Test(stream, ddp_shares_are_disjoint_and_cover_the_split)
{
    fs_client_t *c = connect_to(unix_uri);
    fs_ids_t *train;
    cr_assert_eq(fs_split(c, "train", &train), FS_OK);
    int64_t *all = malloc(sizeof *all * 4096), *one = malloc(sizeof *one * 4096);
    for (int world = 1; world <= 4; world++)
        for (int drop = 0; drop <= 1; drop++) {
            int64_t total = 0, per_rank = -1;
            for (int r = 0; r < world; r++) {
                fs_stream_opts_t o = base_opts();
                o.rank = r, o.world_size = world, o.drop_last = drop, o.sample = &request, o.table = NULL;
                o.batch_size = 64;
                int64_t n = rank_seeds(c, o, one);
                if (per_rank < 0) per_rank = n;
                cr_assert_eq(n, per_rank, "world %d: equal shares", world);
                memcpy(all + total, one, sizeof *one * (size_t)n);
                total += n;
            }
            int64_t distinct = 0;
            for (int64_t i = 0; i < train->n; i++) {
                int64_t hits = 0;
                for (int64_t j = 0; j < total; j++) hits += all[j] == train->ids[i];
                distinct += hits > 0;
                if (drop) cr_assert_leq(hits, 1, "world %d: seed %lld in two shares", world, (long long)train->ids[i]);
            }
            if (!drop) cr_assert_eq(distinct, train->n, "world %d: the shares cover the split", world);
            else cr_assert_eq(distinct, total);
        }
    free(all), free(one);
    fs_ids_free(train);
    fs_close(c);
}

/* positions[i] is seeds[i]'s place in the seed list: the split's ids for
 * a DDP rank's share, and the options' seeds, where a repeated id is told
 * apart by its place (each place once an epoch). */
Test(stream, positions_place_each_seed_in_its_seed_list)
{
    fs_client_t *c = connect_to(unix_uri);
    fs_ids_t *train;
    cr_assert_eq(fs_split(c, "train", &train), FS_OK);
    fs_stream_opts_t o = base_opts();
    o.rank = 1, o.world_size = 2, o.sample = &request, o.table = NULL, o.batch_size = 64;
    fs_stream_t *s;
    cr_assert_eq(fs_stream_open(c, &o, &s), FS_OK, "%s", fs_client_errstr(c));
    fs_stream_batch_t *b;
    while (fs_stream_next(s, &b) == FS_OK) {
        cr_assert_not_null(b->positions);
        for (int64_t i = 0; i < b->num_seeds; i++) {
            cr_assert(b->positions[i] >= 0 && b->positions[i] < train->n);
            cr_assert_eq(train->ids[b->positions[i]], b->seeds[i]);
        }
        fs_stream_batch_free(b);
    }
    fs_stream_close(s);
    int64_t seeds[50], seen[50] = {0};
    for (int i = 0; i < 50; i++) seeds[i] = i % 7; /* every id seven or eight times */
    o = base_opts();
    o.split = NULL, o.seeds = seeds, o.num_seeds = 50, o.batch_size = 8, o.table = NULL, o.labels = "";
    cr_assert_eq(fs_stream_open(c, &o, &s), FS_OK, "%s", fs_client_errstr(c));
    while (fs_stream_next(s, &b) == FS_OK) {
        for (int64_t i = 0; i < b->num_seeds; i++) {
            cr_assert_eq(seeds[b->positions[i]], b->seeds[i]);
            seen[b->positions[i]]++;
        }
        fs_stream_batch_free(b);
    }
    for (int i = 0; i < 50; i++) cr_assert_eq(seen[i], 1, "place %d handed out once", i);
    fs_stream_close(s);
    fs_ids_free(train);
    fs_close(c);
}

/* fs_stream_plan_open with a stream's options deals what the stream deals:
 * the same batches of the same positions, with the same request seeds,
 * for every order, drop_last and DDP rank; bad options are named. */
Test(stream, a_plan_deals_what_the_stream_deals)
{
    fs_client_t *c = connect_to(unix_uri);
    fs_ids_t *train;
    cr_assert_eq(fs_split(c, "train", &train), FS_OK);
    int64_t pos[64];
    for (int k = 0; k < 12; k++) {
        fs_stream_opts_t o = base_opts();
        o.table = NULL, o.labels = "", o.batch_size = 64, o.seed = 7 + (uint64_t)k, o.epoch = k % 3;
        o.world_size = 1 + k % 3, o.rank = k % (1 + k % 3), o.drop_last = k % 2;
        o.order = (fs_stream_order_t)(k % 3), o.chunk = 16;
        fs_stream_plan_opts_t po = FS_STREAM_PLAN_OPTS_INIT;
        po.num_seeds = train->n, po.batch_size = o.batch_size, po.drop_last = o.drop_last, po.order = o.order;
        po.chunk = o.chunk, po.seed = o.seed, po.epoch = o.epoch, po.rank = o.rank, po.world_size = o.world_size;
        fs_stream_plan_t *p;
        cr_assert_eq(fs_stream_plan_open(&po, &p), FS_OK, "%s", fs_stream_plan_errstr(p));
        cr_assert_str_eq(fs_stream_plan_errstr(p), "");
        fs_stream_t *s;
        cr_assert_eq(fs_stream_open(c, &o, &s), FS_OK, "%s", fs_client_errstr(c));
        cr_assert_eq(fs_stream_plan_num_batches(p), fs_stream_num_batches(s), "case %d", k);
        fs_stream_batch_t *b;
        for (int64_t i = 0; fs_stream_next(s, &b) == FS_OK; i++) {
            cr_assert_eq(fs_stream_plan_batch(p, i, pos), b->num_seeds, "case %d batch %lld", k, (long long)i);
            cr_assert_arr_eq(pos, b->positions, sizeof *pos * (size_t)b->num_seeds, "case %d batch %lld", k,
                             (long long)i);
            cr_assert_eq(fs_stream_plan_batch_seed(p, i), b->request_seed);
            fs_stream_batch_free(b);
        }
        cr_assert_eq(fs_stream_plan_batch(p, fs_stream_plan_num_batches(p), pos), 0, "past the end: nothing");
        fs_stream_close(s);
        fs_stream_plan_free(p);
    }
    fs_stream_plan_opts_t po = FS_STREAM_PLAN_OPTS_INIT;
    po.num_seeds = 10, po.batch_size = 4, po.rank = 2, po.world_size = 2;
    fs_stream_plan_t *p;
    cr_assert_eq(fs_stream_plan_open(&po, &p), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(fs_stream_plan_errstr(p), "rank 2 with world size 2"), "%s", fs_stream_plan_errstr(p));
    cr_assert_eq(fs_stream_plan_num_batches(p), 0);
    fs_stream_plan_free(p);
    fs_stream_plan_free(NULL);
    cr_assert_str_eq(fs_stream_plan_errstr(NULL), "out of memory");
    fs_ids_free(train);
    fs_close(c);
}

/* Batches [from, to) of a stream opened at `from`, as copies of their nodes and features. */
typedef struct {
    int64_t n_nodes, n_feat;
    int64_t *nodes;
    float *feat;
} copy_t;

static void take_copies(fs_stream_t *s, copy_t *out, int64_t from, int64_t to)
{
    for (int64_t i = from; i < to; i++) {
        fs_stream_batch_t *b;
        cr_assert_eq(fs_stream_next(s, &b), FS_OK, "batch %lld: %s", (long long)i, fs_stream_errstr(s));
        cr_assert_eq(b->index, i);
        copy_t *c = &out[i];
        c->n_nodes = b->batch->num_nodes, c->n_feat = b->batch->num_nodes * b->dim;
        c->nodes = malloc(sizeof *c->nodes * (size_t)c->n_nodes);
        c->feat = malloc(sizeof *c->feat * (size_t)c->n_feat);
        memcpy(c->nodes, b->batch->nodes, sizeof *c->nodes * (size_t)c->n_nodes);
        memcpy(c->feat, b->features, sizeof *c->feat * (size_t)c->n_feat);
        fs_stream_batch_free(b);
    }
}

/* Copies of every batch of a stream opened with o, uninterrupted: the
 * reference a resumed stream is held to. Returns the batch count. */
static int64_t whole_epoch(fs_client_t *c, const fs_stream_opts_t *o, copy_t *out)
{
    fs_stream_t *s;
    cr_assert_eq(fs_stream_open(c, o, &s), FS_OK, "%s", fs_client_errstr(c));
    int64_t nb = fs_stream_num_batches(s);
    take_copies(s, out, 0, nb);
    fs_stream_close(s);
    return nb;
}

static void assert_copies_equal(const copy_t *a, const copy_t *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        cr_assert_eq(a[i].n_nodes, b[i].n_nodes, "batch %lld", (long long)i);
        cr_assert_arr_eq(a[i].nodes, b[i].nodes, sizeof *a[i].nodes * (size_t)a[i].n_nodes);
        cr_assert_arr_eq(a[i].feat, b[i].feat, sizeof *a[i].feat * (size_t)a[i].n_feat);
        free(a[i].nodes), free(a[i].feat), free(b[i].nodes), free(b[i].feat);
    }
}

Test(stream, reopened_at_its_position_it_continues_bit_for_bit)
{
    fs_client_t *c = connect_to(grpc_uri);
    fs_stream_opts_t o = base_opts();
    fs_stream_t *s;
    copy_t whole[16], parts[16];
    int64_t nb = whole_epoch(c, &o, whole);

    cr_assert_eq(fs_stream_open(c, &o, &s), FS_OK);
    take_copies(s, parts, 0, 5);
    int64_t cursor = fs_stream_position(s); /* a checkpoint */
    fs_stream_close(s);
    o.start_batch = cursor;
    cr_assert_eq(fs_stream_open(c, &o, &s), FS_OK);
    take_copies(s, parts, cursor, nb);
    fs_stream_close(s);
    assert_copies_equal(whole, parts, nb);
    fs_close(c);
}

/* `featstore serve` again on the same socket and gRPC port. */
static void restart_server(void)
{
    char extra[64];
    int port = srv.grpc_port;
    snprintf(extra, sizeof extra, "--listen 127.0.0.1:%d", port);
    cr_assert_eq(tu_serve(&srv, data, sock, extra), 0, "the server restarts");
    cr_assert_eq(srv.grpc_port, port);
}

static void survives_a_killed_server(const char *uri_kind, int producers)
{
    const char *uri = strcmp(uri_kind, "grpc") == 0 ? grpc_uri : unix_uri;
    fs_client_t *c = connect_to(uri);
    fs_stream_opts_t o = base_opts();
    o.producers = producers;
    fs_stream_t *s;
    copy_t whole[16], parts[16];
    int64_t nb = whole_epoch(c, &o, whole);

    cr_assert_eq(fs_stream_open(c, &o, &s), FS_OK);
    take_copies(s, parts, 0, 4);
    cr_assert_eq(tu_serve_stop(&srv, SIGKILL), 128 + SIGKILL);
    usleep(100 * 1000);
    restart_server();
    take_copies(s, parts, 4, nb);
    fs_stream_close(s);
    assert_copies_equal(whole, parts, nb);
    fs_close(c);
}

Test(stream, continues_after_the_server_is_killed_over_grpc) { survives_a_killed_server("grpc", 0); }

Test(stream, continues_after_the_server_is_killed_over_unix) { survives_a_killed_server("unix", 0); }

Test(stream, two_producers_continue_after_the_server_is_killed) { survives_a_killed_server("unix", 2); }

/* Until the stream has `n` batches ready (at most 30 s: sanitizer builds on a busy machine are slow). */
static void wait_ready(fs_stream_t *s, int n)
{
    for (int i = 0; i < 1500 && fs_stream_ready(s) < n; i++) usleep(20 * 1000);
}

static void check_prefetch_and_hold(int producers)
{
    fs_client_t *c = connect_to(unix_uri);
    fs_stream_opts_t o = base_opts();
    o.prefetch = 3, o.hold = 2, o.batch_size = 50, o.producers = producers;
    fs_stream_t *s;
    cr_assert_eq(fs_stream_open(c, &o, &s), FS_OK);
    wait_ready(s, 3);
    usleep(200 * 1000); /* time to overrun, were it possible */
    cr_assert_eq(fs_stream_ready(s), 3, "exactly prefetch batches made ahead");
    fs_stream_batch_t *a, *b, *x;
    cr_assert_eq(fs_stream_next(s, &a), FS_OK);
    cr_assert_eq(fs_stream_next(s, &b), FS_OK);
    wait_ready(s, 3);
    usleep(200 * 1000);
    cr_assert_eq(fs_stream_ready(s), 3, "two held, prefetch ready: prefetch + hold alive, no more");
    cr_assert_eq(fs_stream_next(s, &x), FS_ERR_RESOURCE, "holding `hold` batches, the next is refused");
    cr_assert(strstr(fs_stream_errstr(s), "hold = 2"), "%s", fs_stream_errstr(s));
    fs_stream_batch_free(a);
    cr_assert_eq(fs_stream_next(s, &a), FS_OK, "freeing one lets the stream go on");
    fs_stream_batch_free(a), fs_stream_batch_free(b);
    fs_stream_close(s);
    fs_close(c);
}

Test(stream, prefetch_and_hold_bound_the_batches_alive) { check_prefetch_and_hold(0); }

/* 4 producers asked for, prefetch 3 of them made */
Test(stream, prefetch_and_hold_bound_several_producers_alike) { check_prefetch_and_hold(4); }

/* prefetch = 0: two batches ahead per producer (two producers, four). */
Test(stream, the_default_prefetch_is_two_batches_per_producer)
{
    fs_client_t *c = connect_to(unix_uri);
    fs_stream_opts_t o = base_opts();
    o.producers = 2, o.batch_size = 50;
    cr_assert_eq(fs_stream_default_prefetch(c, &o), 4, "what fs_stream_open will choose");
    fs_connect_opts_t co = FS_CONNECT_OPTS_INIT;
    co.threads = 1;
    fs_client_t *one;
    cr_assert_eq(fs_connect(unix_uri, &co, &one), FS_OK, "%s", fs_client_errstr(one));
    cr_assert_eq(fs_stream_default_prefetch(one, NULL), 2, "one producer: a connection of one thread, given");
    fs_close(one);
    fs_stream_t *s;
    cr_assert_eq(fs_stream_open(c, &o, &s), FS_OK, "%s", fs_client_errstr(c));
    wait_ready(s, 4);
    usleep(200 * 1000); /* time to overrun, were it possible */
    cr_assert_eq(fs_stream_ready(s), 4);
    fs_stream_close(s);
    fs_close(c);
}

/* A connection whose threads were not given streams with a producer per
 * core this thread may use, up to four: the defaults follow the cores. */
Test(stream, without_threads_given_a_stream_has_a_producer_per_core)
{
    fs_client_t *c = connect_to(unix_uri);
    cpu_set_t all, one;
    cr_assert_eq(sched_getaffinity(0, sizeof all, &all), 0);
    int cores = CPU_COUNT(&all);
    cr_assert_eq(fs_stream_default_prefetch(c, NULL), 2 * (cores < 4 ? cores : 4), "%d cores", cores);
    CPU_ZERO(&one);
    for (int i = 0; i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, &all)) {
            CPU_SET(i, &one);
            break;
        }
    cr_assert_eq(sched_setaffinity(0, sizeof one, &one), 0);
    int pinned = fs_stream_default_prefetch(c, NULL);
    cr_assert_eq(sched_setaffinity(0, sizeof all, &all), 0);
    cr_assert_eq(pinned, 2, "on one core: one producer, two batches ahead");
    fs_close(c);
}

/* Threaded connections stream with producers sharing their threads: three
 * threads and prefetch 3 make three producers of one thread, five threads
 * and prefetch 2 two producers of two. Either way the epoch's batches are
 * one producer's, and closing a stream whose producers are mid-batch frees
 * everything (the sanitizer run checks). */
Test(stream, a_threaded_connection_streams_with_producers_sharing_its_threads)
{
    fs_connect_opts_t co = FS_CONNECT_OPTS_INIT;
    fs_client_t *one = connect_to(unix_uri), *many[2];
    int threads[2] = {3, 5}, prefetch[2] = {3, 2};
    for (int k = 0; k < 2; k++) {
        co.threads = threads[k];
        cr_assert_eq(fs_connect(unix_uri, &co, &many[k]), FS_OK, "%s", fs_client_errstr(many[k]));
        fs_stream_opts_t o = base_opts();
        o.prefetch = prefetch[k];
        copy_t a[16], b[16];
        int64_t nb = whole_epoch(one, &o, a);
        cr_assert_eq(whole_epoch(many[k], &o, b), nb);
        assert_copies_equal(a, b, nb);
        fs_stream_t *s;
        cr_assert_eq(fs_stream_open(many[k], &o, &s), FS_OK);
        fs_stream_batch_t *x;
        cr_assert_eq(fs_stream_next(s, &x), FS_OK);
        fs_stream_close(s); /* the others still being made */
        fs_stream_batch_free(x);
        fs_close(many[k]);
    }
    fs_close(one);
}

/* Until the server counts `n` unix:// clients connected. */
static void assert_unix_clients(int n)
{
    char want[80];
    snprintf(want, sizeof want, "featstore_connected_clients{transport=\"unix\"} %d\n", n);
    free(tu_metrics_with(srv.metrics_port, want));
}

/* A closed stream leaves its producers' connections with the connection
 * it was opened on, and the next stream with the same slots and threads
 * takes them: no new connection per epoch. One whose slot still holds a
 * batch is not taken (the batch stays intact while the next stream runs),
 * and closing the owner closes what it keeps. */
Test(stream, the_next_stream_takes_the_last_ones_connections)
{
    fs_client_t *c = connect_to(unix_uri);
    fs_stream_opts_t o = base_opts();
    o.producers = 2;
    copy_t first[16], again[16], third[16];
    int64_t nb = whole_epoch(c, &o, first);
    assert_unix_clients(3); /* the owner and its two producers' connections, kept */
    cr_assert_eq(whole_epoch(c, &o, again), nb);
    assert_copies_equal(first, again, nb);
    assert_unix_clients(3); /* the second stream took both */

    fs_stream_t *s;
    fs_stream_batch_t *held;
    cr_assert_eq(fs_stream_open(c, &o, &s), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(fs_stream_next(s, &held), FS_OK);
    size_t bytes = sizeof(float) * (size_t)(held->batch->num_nodes * held->dim);
    float *before = malloc(bytes);
    memcpy(before, held->features, bytes);
    fs_stream_close(s);
    o.epoch = 2; /* other batches: a reused slot would overwrite the held one */
    whole_epoch(c, &o, third);
    assert_unix_clients(4); /* the connection holding a batch was not taken: one new */
    cr_assert_arr_eq(held->features, before, bytes, "a held batch survives the next stream");
    for (int64_t i = 0; i < nb; i++) free(third[i].nodes), free(third[i].feat);
    fs_stream_batch_free(held);
    free(before);
    fs_close(c);
    assert_unix_clients(0); /* closing the owner closed what it kept */
}

Test(stream, explicit_seeds_in_order_and_without_labels)
{
    fs_client_t *c = connect_to(unix_uri);
    int64_t seeds[37];
    for (int i = 0; i < 37; i++) seeds[i] = (i * 53) % 2048;
    fs_stream_opts_t o = base_opts();
    o.split = NULL, o.seeds = seeds, o.num_seeds = 37, o.batch_size = 10, o.order = FS_ORDER_SEQUENTIAL, o.labels = "";
    fs_stream_t *s;
    cr_assert_eq(fs_stream_open(c, &o, &s), FS_OK, "%s", fs_client_errstr(c));
    seeds[0] = -1; /* the stream copied them */
    fs_stream_batch_t *b;
    int64_t at = 0;
    while (fs_stream_next(s, &b) == FS_OK) {
        for (int64_t i = 0; i < b->num_seeds; i++, at++) cr_assert_eq(b->seeds[i], (at * 53) % 2048);
        cr_assert_null(b->labels);
        fs_stream_batch_free(b);
    }
    cr_assert_eq(at, 37);
    fs_stream_close(s);
    fs_close(c);
}

/* A delta stream over `uri`: every batch's full matrix is the explicit
 * call's, it is concat(previous rows, new rows)[take], the new rows are
 * exactly the rows the previous batch lacked, and each window hands out a
 * permutation of its plan batches. */
static void check_delta(const char *uri, fs_delta_t mode, int window)
{
    fs_client_t *c = connect_to(uri);
    fs_stream_opts_t o = base_opts();
    o.delta = mode, o.window = window, o.batch_size = 64;
    fs_stream_t *s;
    cr_assert_eq(fs_stream_open(c, &o, &s), FS_OK, "%s", fs_client_errstr(c));
    float *prev = NULL;
    int64_t prev_n = 0, *prev_nodes = NULL, nb = fs_stream_num_batches(s), seen_plan[64] = {0}, reused = 0;
    fs_stream_batch_t *b;
    while (fs_stream_next(s, &b) == FS_OK) {
        const fs_batch_t *x = b->batch;
        int64_t n = x->num_nodes, d = b->dim;
        cr_assert_eq(b->prev_rows, prev_n);
        cr_assert_eq(b->plan_index / window, b->index / window, "reordered within its window only");
        seen_plan[b->plan_index]++;
        fs_sample_req_t r = request;
        r.seed = b->request_seed;
        fs_batch_t *want;
        cr_assert_eq(fs_sample_gather(c, b->seeds, b->num_seeds, &r, "feat", FS_DTYPE_INVALID, &want), FS_OK);
        cr_assert_eq(want->num_nodes, n);
        cr_assert_arr_eq(want->nodes, x->nodes, sizeof *x->nodes * (size_t)n);
        const float *rows = want->features, *fresh = b->new_rows;
        int64_t num_new = 0;
        for (int64_t i = 0; i < n; i++) {
            int64_t t = b->take[i];
            const float *got = t < prev_n ? prev + t * d : fresh + (t - prev_n) * d;
            cr_assert_arr_eq(got, rows + i * d, sizeof *got * (size_t)d, "batch %lld row %lld", (long long)b->index,
                             (long long)i);
            if (t < prev_n) cr_assert_eq(prev_nodes[t], x->nodes[i]);
            else num_new = t - prev_n + 1 > num_new ? t - prev_n + 1 : num_new;
        }
        cr_assert_eq(num_new, b->num_new, "new rows are the rows taken from them");
        int64_t lacked = 0; /* rows whose node the previous batch lacked */
        for (int64_t i = 0; i < n; i++) {
            int in_prev = 0;
            for (int64_t j = 0; j < prev_n && !in_prev; j++) in_prev = prev_nodes[j] == x->nodes[i];
            lacked += !in_prev;
        }
        cr_assert_eq(lacked, b->num_new, "exactly the rows the previous batch lacked are fetched");
        cr_assert_float_eq(b->match, (double)(n - b->num_new) / (double)n, 1e-12);
        reused += n - b->num_new;
        if (mode == FS_DELTA_FULL) cr_assert_arr_eq(b->features, rows, sizeof(float) * (size_t)(n * d));
        else cr_assert_null(b->features);
        free(prev), free(prev_nodes);
        prev = malloc(sizeof *prev * (size_t)(n * d)), prev_nodes = malloc(sizeof *prev_nodes * (size_t)n);
        memcpy(prev, rows, sizeof *prev * (size_t)(n * d)), memcpy(prev_nodes, x->nodes, sizeof *prev_nodes * (size_t)n);
        prev_n = n;
        fs_batch_free(want);
        fs_stream_batch_free(b);
    }
    for (int64_t p = 0; p < nb; p++) cr_assert_eq(seen_plan[p], 1, "plan batch %lld handed out once", (long long)p);
    cr_assert_gt(reused, 0, "consecutive batches of this graph share rows");
    free(prev), free(prev_nodes);
    fs_stream_close(s);
    fs_close(c);
}

Test(stream, delta_batches_reassemble_over_unix) { check_delta(unix_uri, FS_DELTA_FULL, 8); }

Test(stream, delta_batches_reassemble_over_grpc) { check_delta(grpc_uri, FS_DELTA_FULL, 8); }

Test(stream, delta_only_batches_over_grpc_without_reorder) { check_delta(grpc_uri, FS_DELTA_ONLY, 1); }

Test(stream, a_reordered_delta_stream_resumes_bit_for_bit)
{
    fs_client_t *c = connect_to(grpc_uri);
    fs_stream_opts_t o = base_opts();
    o.delta = FS_DELTA_FULL, o.window = 4;
    fs_stream_t *s;
    copy_t whole[16], parts[16];
    int64_t nb = whole_epoch(c, &o, whole);
    cr_assert_eq(fs_stream_open(c, &o, &s), FS_OK);
    take_copies(s, parts, 0, 6); /* inside the second window */
    fs_stream_close(s);
    o.start_batch = 6;
    cr_assert_eq(fs_stream_open(c, &o, &s), FS_OK);
    take_copies(s, parts, 6, nb);
    fs_stream_close(s);
    assert_copies_equal(whole, parts, nb);
    fs_close(c);
}

/* A small R-MAT with hop tables hop_0..hop_2 (`featstore propagate --rows
 * rows`) in dir/name, served on its own by *ps; its path (heap), and the URI
 * of transport uri_kind in uri. */
static char *serve_propagated(const char *name, const char *rows, const char *uri_kind, tu_server_t *ps, char *uri,
                              size_t uri_size)
{
    char *pdata = tu_path(dir, name), psock[300], *log;
    snprintf(psock, sizeof psock, "%s/%s.sock", dir, name);
    cr_assert_eq(tu_run(&log, "%s gen rmat --scale 10 --edge-factor 8 --dim 8 --symmetrize --out %s && %s propagate %s "
                        "--hops 2 --rows %s", tu_bin(), pdata, tu_bin(), pdata, rows), 0, "%s", log);
    free(log);
    cr_assert_eq(tu_serve(ps, pdata, psock, ""), 0);
    if (strcmp(uri_kind, "grpc") == 0) snprintf(uri, uri_size, "grpc://127.0.0.1:%d", ps->grpc_port);
    else snprintf(uri, uri_size, "unix://%s", psock);
    return pdata;
}

/* Row streams (pre-propagation): a dataset with hop tables from `featstore
 * propagate`, served on its own; every batch's tables are fs_gather of its
 * seeds, a chunked epoch with chunk = batch size makes every batch one run
 * of consecutive split positions, and the epoch covers the split. */
static void check_rows(const char *uri_kind)
{
    char uri[320];
    tu_server_t ps;
    char *pdata = serve_propagated("hops", "all", uri_kind, &ps, uri, sizeof uri);
    fs_client_t *c = connect_to(uri);
    static const char *const hops[] = {"hop_0", "hop_1", "hop_2"};
    fs_stream_opts_t o = FS_STREAM_OPTS_INIT;
    o.split = "train", o.batch_size = 32, o.tables = hops, o.num_tables = 3, o.order = FS_ORDER_CHUNKED, o.chunk = 32;
    fs_stream_t *s;
    cr_assert_eq(fs_stream_open(c, &o, &s), FS_OK, "%s", fs_client_errstr(c));
    fs_ids_t *train;
    cr_assert_eq(fs_split(c, "train", &train), FS_OK);
    char *seen = calloc(1024, 1);
    int64_t got = 0;
    fs_stream_batch_t *b;
    while (fs_stream_next(s, &b) == FS_OK) {
        cr_assert_null(b->batch);
        cr_assert_eq(b->num_tables, 3);
        int64_t at = -1; /* the split position of the batch's first seed: one chunk, in order */
        for (int64_t i = 0; i < train->n && at < 0; i++)
            if (train->ids[i] == b->seeds[0]) at = i;
        for (int64_t i = 0; i < b->num_seeds; i++) {
            cr_assert_eq(b->seeds[i], train->ids[at + i], "a chunk is consecutive split positions");
            seen[b->seeds[i]] = 1;
        }
        for (int k = 0; k < 3; k++) {
            fs_batch_t *want;
            cr_assert_eq(fs_gather(c, b->seeds, b->num_seeds, hops[k], FS_DTYPE_INVALID, &want), FS_OK);
            const fs_batch_t *x = b->tables[k];
            cr_assert_eq(x->rows, b->num_seeds);
            cr_assert_eq(x->dim, want->dim);
            cr_assert_arr_eq(x->features, want->features, (size_t)(x->rows * x->dim) * fs_dtype_size(x->dtype));
            fs_batch_free(want);
        }
        cr_assert_not_null(b->labels);
        got += b->num_seeds;
        fs_stream_batch_free(b);
    }
    cr_assert_eq(got, train->n);
    for (int64_t i = 0; i < train->n; i++) cr_assert(seen[train->ids[i]]);
    fs_stream_common_t m = FS_STREAM_COMMON_INIT; /* fs_stream_open_rows: the 1.4 form's first batch */
    m.split = "train", m.batch_size = 32, m.order = FS_ORDER_CHUNKED, m.chunk = 32;
    fs_stream_rows_opts_t r = FS_STREAM_ROWS_OPTS_INIT;
    r.tables = hops, r.num_tables = 3;
    fs_stream_t *a, *n;
    fs_stream_batch_t *x, *y;
    cr_assert_eq(fs_stream_open(c, &o, &a), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(fs_stream_open_rows(c, &m, &r, &n), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(fs_stream_next(a, &x), FS_OK);
    cr_assert_eq(fs_stream_next(n, &y), FS_OK);
    cr_assert_arr_eq(x->seeds, y->seeds, sizeof *x->seeds * (size_t)x->num_seeds);
    cr_assert_arr_eq(x->labels, y->labels, sizeof *x->labels * (size_t)x->num_seeds);
    for (int k = 0; k < 3; k++)
        cr_assert_arr_eq(x->tables[k]->features, y->tables[k]->features,
                         (size_t)(x->tables[k]->rows * x->tables[k]->dim) * fs_dtype_size(x->tables[k]->dtype));
    fs_stream_batch_free(x), fs_stream_batch_free(y);
    fs_stream_close(a), fs_stream_close(n);
    o.sample = &request; /* a row stream samples nothing */
    fs_stream_t *bad = NULL;
    cr_assert_eq(fs_stream_open(c, &o, &bad), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(fs_client_errstr(c), "without sampling"), "%s", fs_client_errstr(c));
    static const char *const nosuch[] = {"hop_0", "hop_9"};
    o.sample = NULL, o.tables = nosuch, o.num_tables = 2;
    cr_assert_eq(fs_stream_open(c, &o, &bad), FS_ERR_NOT_FOUND);
    cr_assert(strstr(fs_client_errstr(c), "tables: dataset"), "%s", fs_client_errstr(c));
    cr_assert(strstr(fs_client_errstr(c), "has no feature table 'hop_9'; its feature tables: "), "%s",
              fs_client_errstr(c));
    free(seen);
    fs_ids_free(train);
    fs_stream_close(s);
    fs_close(c);
    tu_serve_stop(&ps, SIGTERM);
    free(pdata);
}

Test(stream, row_streams_gather_every_table_over_unix) { check_rows("unix"); }

Test(stream, row_streams_gather_every_table_over_grpc) { check_rows("grpc"); }

/* Row streams over row tables (`propagate --rows labelled`): the epoch is
 * the split's rows, read by row; with chunk = batch size each batch is one
 * run of consecutive rows, its seeds the rows' nodes; every table's rows,
 * the seeds and their labels equal the dataset's own arrays (read here
 * from its files); two DDP ranks read disjoint rows that cover the split;
 * mixing row and feature tables, a seed array and a split without rows
 * are named. */
static void check_row_layout(const char *uri_kind)
{
    char uri[320];
    tu_server_t ps;
    char *pdata = serve_propagated("rows", "labelled", uri_kind, &ps, uri, sizeof uri);
    fs_dataset_t *ds;
    fs_error_t err = {0};
    cr_assert_eq(fs_dataset_open(pdata, 0, 1, &ds, &err), FS_OK, "%s", err.msg);
    const fs_propagation_t *pr = ds->propagation;
    fs_client_t *c = connect_to(uri);
    fs_info_t *info;
    cr_assert_eq(fs_info(c, &info), FS_OK);
    cr_assert_eq(info->num_row_tables, 4, "hop_0..hop_2 and hop_node");
    int64_t first = -1, count = 0;
    for (size_t i = 0; i < info->num_row_splits; i++)
        if (strcmp(info->row_splits[i].name, "train") == 0) first = info->row_splits[i].offset, count = info->row_splits[i].count;
    cr_assert_geq(first, 0);
    fs_info_free(info);

    static const char *const hops[] = {"hop_0", "hop_1", "hop_2"};
    /* one trainer: every batch one chunk, the split's rows all read once; two
     * ranks (dealt whole chunks): disjoint rows, covering the split but for
     * drop_last's tail */
    char *seen = calloc((size_t)pr->num_rows, 1);
    for (int world = 1; world <= 2; world++) {
        memset(seen, 0, (size_t)pr->num_rows);
        for (int rank = 0; rank < world; rank++) {
            fs_stream_opts_t o = FS_STREAM_OPTS_INIT;
            o.split = "train", o.batch_size = 32, o.tables = hops, o.num_tables = 3, o.order = FS_ORDER_CHUNKED;
            o.chunk = 32, o.rank = rank, o.world_size = world, o.drop_last = world > 1, o.seed = 4;
            fs_stream_t *s;
            cr_assert_eq(fs_stream_open(c, &o, &s), FS_OK, "%s", fs_client_errstr(c));
            fs_stream_batch_t *b;
            fs_status_t st;
            while ((st = fs_stream_next(s, &b)) == FS_OK) {
                cr_assert_eq(b->num_ranges, 1, "one chunk, one run of rows (ranks are dealt whole chunks)");
                for (int64_t g = 0, i = 0; g < b->num_ranges; g++) {
                    int64_t r0 = b->ranges[2 * g], n = b->ranges[2 * g + 1];
                    cr_assert(r0 >= first && r0 + n <= first + count, "rows of the split");
                    for (int64_t j = 0; j < n; j++, i++) {
                        cr_assert_eq(seen[r0 + j], 0, "row %lld read once", (long long)(r0 + j));
                        seen[r0 + j] = 1;
                        cr_assert_eq(b->seeds[i], pr->row_nodes[r0 + j]);
                        cr_assert_eq(b->labels[i], ds->labels[b->seeds[i]]);
                        for (int k = 0; k < 3; k++) {
                            const fs_table_t *t = &pr->tables[k];
                            cr_assert_arr_eq((const char *)b->tables[k]->features + (size_t)i * t->row_bytes,
                                             (const char *)t->data + (size_t)(r0 + j) * t->row_bytes, t->row_bytes);
                        }
                    }
                    if (g + 1 == b->num_ranges) cr_assert_eq(i, b->num_seeds, "the runs are the batch");
                }
                fs_stream_batch_free(b);
            }
            cr_assert_eq(st, FS_END, "%s", fs_stream_errstr(s));
            fs_stream_close(s);
        }
        int64_t covered = 0;
        for (int64_t r = first; r < first + count; r++) covered += seen[r];
        if (world == 1) cr_assert_eq(covered, count, "one trainer reads every row of the split");
        else cr_assert_geq(covered, count - 3 * 32, "two ranks cover the split but for drop_last's tail");
    }
    fs_stream_opts_t o = FS_STREAM_OPTS_INIT;
    static const char *const mixed[] = {"hop_0", "feat"};
    o.split = "train", o.batch_size = 32, o.tables = mixed, o.num_tables = 2;
    fs_stream_t *bad = NULL;
    cr_assert_eq(fs_stream_open(c, &o, &bad), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(fs_client_errstr(c), "row table"), "%s", fs_client_errstr(c));
    int64_t rows[2] = {0, 1};
    o.tables = hops, o.num_tables = 3, o.split = NULL, o.seeds = rows, o.num_seeds = 2;
    cr_assert_eq(fs_stream_open(c, &o, &bad), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(fs_client_errstr(c), "give a split"), "%s", fs_client_errstr(c));
    free(seen);
    fs_close(c);
    tu_serve_stop(&ps, SIGTERM);
    fs_dataset_close(ds);
    free(pdata);
}

Test(stream, row_tables_stream_by_row_over_unix) { check_row_layout("unix"); }

Test(stream, row_tables_stream_by_row_over_grpc) { check_row_layout("grpc"); }

/* Option set i of bad_options_are_named, spoiling one field of base_opts. */
static void spoil(int i, fs_stream_opts_t *o)
{
    switch (i) {
    case 0: o->rank = 2, o->world_size = 2; break;
    case 1: o->batch_size = 0; break;
    case 2: o->split = "nosuch"; break;
    case 3: o->table = "nosuch"; break;
    case 4: o->labels = "nolabels"; break;
    case 5: o->seeds = &o->num_seeds; break;
    case 6: o->split = NULL; break;
    case 7: o->prefetch = 17; break;
    case 8: o->start_batch = 99; break;
    case 9: o->sample = NULL; break;
    case 10: o->order = (fs_stream_order_t)7; break;
    case 11: o->window = 4; break;
    case 12: o->window = 17, o->delta = FS_DELTA_FULL; break;
    case 13: o->producers = 17; break;
    case 14: o->producers = -1; break;
    default: o->delta = FS_DELTA_ONLY, o->table = NULL; break;
    }
}

Test(stream, bad_options_are_named)
{
    fs_client_t *c = connect_to(unix_uri);
    static const struct {
        fs_status_t code;
        const char *says;
    } want[] = {
        {FS_ERR_INVALID_ARGUMENT, "rank 2 with world size 2"}, {FS_ERR_INVALID_ARGUMENT, "batch size 0"},
        {FS_ERR_NOT_FOUND, "nosuch"},
        {FS_ERR_NOT_FOUND, "table: dataset 'rmat-s11-e8' has no feature table 'nosuch'; its feature tables: feat, "
                           "labels"},
        {FS_ERR_NOT_FOUND, "labels: dataset 'rmat-s11-e8' has no feature table 'nolabels'"},
        {FS_ERR_INVALID_ARGUMENT, "not both"},
        {FS_ERR_INVALID_ARGUMENT, "not neither"},              {FS_ERR_INVALID_ARGUMENT, "prefetch 17"},
        {FS_ERR_INVALID_ARGUMENT, "start_batch 99"},           {FS_ERR_INVALID_ARGUMENT, "no sampling request"},
        {FS_ERR_INVALID_ARGUMENT, "unknown order 7"},           {FS_ERR_INVALID_ARGUMENT, "needs a delta mode"},
        {FS_ERR_INVALID_ARGUMENT, "a window of 17 batches"},    {FS_ERR_INVALID_ARGUMENT, "17 producers, must be 1..16"},
        {FS_ERR_INVALID_ARGUMENT, "-1 producers"},              {FS_ERR_INVALID_ARGUMENT, "give a table"},
    };
    for (int i = 0; i < (int)(sizeof want / sizeof *want); i++) {
        fs_stream_opts_t o = base_opts();
        spoil(i, &o);
        fs_stream_t *s = (fs_stream_t *)1;
        cr_assert_eq(fs_stream_open(c, &o, &s), want[i].code, "case %d: %s", i, fs_client_errstr(c));
        cr_assert_null(s);
        cr_assert(strstr(fs_client_errstr(c), want[i].says), "case %d: '%s' does not say '%s'", i,
                  fs_client_errstr(c), want[i].says);
    }
    fs_close(c);
}
