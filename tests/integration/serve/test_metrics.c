/* test_metrics.c — what /metrics says against what clients did, on a live
 * `featstore serve`.
 *
 * Reads (suites reads and typed_reads): every kind of request — gather,
 * sample, sample_gather, typed and link batches, node streams (whole and
 * delta), typed and link streams, row streams — over unix:// and grpc://
 * moves the read counters by exactly what the client received
 * (docs/metrics.md, "Reading the tier counters"): feature rows = rows
 * received (labels and a row stream's node column included), feature bytes
 * = those rows at their table's stored row size; topology lists = the
 * destinations of the blocks sampled (of edge types with a fanout at that
 * hop), topology bytes = the blocks' edges at the index width. unix://
 * trainers' reads are counted as reader "local", the server's as "server".
 *
 * Versions: 40 raw clients, each a distinct library release, connect and
 * go; the by-version gauge holds 15 of them apart and the rest as "other",
 * a disconnect takes back what its connect added, freed entries are
 * reused, and afterwards every line of /metrics is what it was before.
 *
 * Reports: a REPORT's method is the local protocol's enum
 * (featstore_local.Method), mapped to the metrics' method in one place
 * (server/local_report.c): every number a client of 1.0 to 1.5 sends (its
 * Report.method was an int32 of the same numbers) counts as that method,
 * and a number this release does not know counts as "unknown". */
#include <criterion/criterion.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "featstore/client.h"
#include "fs_local.h"
#include "local_report.h"
#include "test_util.h"

static char *dir, *data, sock[100], uri[160];
static tu_server_t srv;
static fs_dataset_t *ds;

/* A scratch directory; the dataset will be dir/d. */
static void scratch(void)
{
    signal(SIGPIPE, SIG_IGN);
    dir = tu_mkdtemp();
    data = tu_path(dir, "d");
    snprintf(sock, sizeof sock, "%s/s.sock", dir);
}

/* Serves dir/d with `extra`. */
static void start(const char *extra)
{
    cr_assert_eq(tu_serve(&srv, data, sock, extra), 0);
    ds = tu_open_dataset(data);
}

/* `featstore gen rmat OPTIONS` (then `featstore propagate PROPAGATE`
 * unless NULL) into dir/d, served. */
static void serve_rmat(const char *options, const char *propagate)
{
    scratch();
    char *log;
    cr_assert_eq(tu_run(&log, "%s gen rmat %s --out %s", tu_bin(), options, data), 0, "%s", log);
    free(log);
    if (propagate) {
        cr_assert_eq(tu_run(&log, "%s propagate %s %s", tu_bin(), data, propagate), 0, "%s", log);
        free(log);
    }
    start("");
}

/* labels, a feature table and row tables (hop_0..hop_2, hop_node) */
static void setup_v1(void) { serve_rmat("--scale 10 --edge-factor 8 --dim 8 --symmetrize", "--hops 2 --rows labelled"); }

/* papers, authors, venues; an edge table on cites; link splits */
static void setup_typed(void) { serve_rmat("--typed --scale 10", NULL); }

/* Cora placed over 4 simulated GPUs (the server's and this process's) */
static void setup_placed(void)
{
    setenv("FEATSTORE_SIM_GPUS", "4", 1);
    scratch();
    char *log;
    cr_assert_eq(tu_run(&log, "%s import npz %s --out %s --symmetrize", tu_bin(), tu_data("cora.npz"), data), 0, "%s",
                 log);
    free(log);
    start("--topology nvlink-pairs --gpu-budget 0.2");
}

static void teardown(void)
{
    fs_dataset_close(ds);
    if (srv.pid > 0) tu_serve_stop(&srv, SIGTERM);
    tu_rm_rf(dir);
    free(dir), free(data);
}

TestSuite(reads, .init = setup_v1, .fini = teardown, .timeout = 300);
TestSuite(typed_reads, .init = setup_typed, .fini = teardown, .timeout = 300);
TestSuite(placed_reads, .init = setup_placed, .fini = teardown, .timeout = 300);
TestSuite(versions, .init = setup_v1, .fini = teardown, .timeout = 300);

static fs_client_t *connect_over(const char *kind)
{
    if (strcmp(kind, "grpc") == 0) snprintf(uri, sizeof uri, "grpc://127.0.0.1:%d", srv.grpc_port);
    else snprintf(uri, sizeof uri, "unix://%s", sock);
    fs_client_t *c;
    cr_assert_eq(fs_connect(uri, NULL, &c), FS_OK, "%s: %s", uri, fs_client_errstr(c));
    return c;
}

/* unix:// trainers read in their own process ("local"), the server for grpc:// ones. */
static const char *reader_of(const char *kind) { return strcmp(kind, "grpc") == 0 ? "server" : "local"; }

/* ---- the counters ------------------------------------------------------------ */

typedef struct {
    uint64_t rows, bytes, lists, list_bytes;
} reads_t;

static void add(reads_t *to, reads_t r)
{
    to->rows += r.rows, to->bytes += r.bytes, to->lists += r.lists, to->list_bytes += r.list_bytes;
}

/* A family's samples of one reader, summed over the tiers. */
static uint64_t family_sum(const char *text, const char *family, const char *reader)
{
    char prefix[160];
    snprintf(prefix, sizeof prefix, "\n%s{reader=\"%s\",", family, reader);
    uint64_t sum = 0;
    for (const char *p = text; (p = strstr(p, prefix)); p++) sum += strtoull(strchr(p, '}') + 2, NULL, 10);
    return sum;
}

static reads_t scrape(const char *reader)
{
    char *text = tu_http_get(srv.metrics_port, "/metrics");
    reads_t r = {family_sum(text, "featstore_feature_rows_read_total", reader),
                 family_sum(text, "featstore_feature_bytes_read_total", reader),
                 family_sum(text, "featstore_topology_lists_read_total", reader),
                 family_sum(text, "featstore_topology_bytes_read_total", reader)};
    free(text);
    return r;
}

/* The counters moved by `want` since `before` (unix:// reports arrive
 * asynchronously: polled for up to 10 s, then compared). */
static void expect_moved(const char *reader, reads_t before, reads_t want, const char *what)
{
    reads_t d = {0};
    for (int i = 0; i < 500; i++) {
        reads_t now = scrape(reader);
        d = (reads_t){now.rows - before.rows, now.bytes - before.bytes, now.lists - before.lists,
                      now.list_bytes - before.list_bytes};
        if (!memcmp(&d, &want, sizeof d)) break;
        usleep(20000);
    }
    cr_assert(want.rows > 0 && want.bytes > 0, "%s: the test reads rows", what);
    cr_assert_eq(d.rows, want.rows, "%s: feature rows %llu, received %llu", what, (unsigned long long)d.rows,
                 (unsigned long long)want.rows);
    cr_assert_eq(d.bytes, want.bytes, "%s: feature bytes %llu, received %llu", what, (unsigned long long)d.bytes,
                 (unsigned long long)want.bytes);
    cr_assert_eq(d.lists, want.lists, "%s: topology lists %llu, sampled %llu", what, (unsigned long long)d.lists,
                 (unsigned long long)want.lists);
    cr_assert_eq(d.list_bytes, want.list_bytes, "%s: topology bytes %llu, sampled %llu", what,
                 (unsigned long long)d.list_bytes, (unsigned long long)want.list_bytes);
}

/* ---- what a client received ------------------------------------------------- */

static reads_t rows_of(int64_t rows, int64_t dim, fs_dtype_t dtype)
{
    return (reads_t){.rows = (uint64_t)rows, .bytes = (uint64_t)rows * (uint64_t)dim * fs_dtype_size(dtype)};
}

static reads_t blocks_of(const fs_block_t *blocks, int hops, size_t index_bytes)
{
    reads_t r = {0};
    for (int h = 0; h < hops; h++)
        r.lists += (uint64_t)blocks[h].num_dst, r.list_bytes += (uint64_t)blocks[h].num_edges * index_bytes;
    return r;
}

static reads_t batch_reads(const fs_batch_t *b)
{
    reads_t r = blocks_of(b->blocks, (b->kind & FS_BATCH_SAMPLE) ? b->num_hops : 0, fs_dtype_size(ds->index_dtype));
    if (b->kind & FS_BATCH_GATHER) add(&r, rows_of(b->rows, b->dim, b->dtype));
    return r;
}

/* A typed batch of a request with these fanouts: its tables' rows, and the
 * blocks of edge types with a fanout at their hop. */
static reads_t hetero_reads(const fs_hetero_batch_t *x, const fs_hetero_fanout_t *fan, size_t num_fan)
{
    reads_t r = {0};
    int E = x->num_edge_types, H = x->num_hops;
    for (int t = 0; t < x->num_node_types; t++)
        for (size_t k = 0; k < x->num_node_tables; k++) {
            const fs_rows_t *rows = &x->types[t].tables[k];
            if (rows->dtype != FS_DTYPE_INVALID) add(&r, rows_of(rows->rows, rows->dim, rows->dtype));
        }
    for (int i = 0; i < E * H; i++)
        for (size_t k = 0; k < x->num_edge_tables; k++) {
            const fs_rows_t *rows = &x->edge_tables[(size_t)i * x->num_edge_tables + k];
            if (rows->dtype != FS_DTYPE_INVALID) add(&r, rows_of(rows->rows, rows->dim, rows->dtype));
        }
    for (size_t f = 0; f < num_fan; f++)
        for (int e = 0; e < E; e++) {
            const fs_hetero_etype_t *et = &x->etypes[e];
            if (strcmp(et->src, fan[f].src) || strcmp(et->rel, fan[f].rel) || strcmp(et->dst, fan[f].dst)) continue;
            for (int h = 0; h < H; h++)
                if (fan[f].fanout[h]) add(&r, blocks_of(&x->blocks[h * E + e], 1, fs_dtype_size(ds->edge_types[e].index_dtype)));
        }
    return r;
}

/* ---- homogeneous requests ---------------------------------------------------- */

static const fs_sample_req_t request = {.struct_size = sizeof(fs_sample_req_t), .num_hops = 2, .fanout = {10, 5}};

static void check_calls(const char *kind)
{
    fs_client_t *c = connect_over(kind);
    int64_t ids[200];
    for (int i = 0; i < 200; i++) ids[i] = (i * 37) % ds->num_nodes;
    reads_t before = scrape(reader_of(kind)), want = {0};
    fs_batch_t *b;
    cr_assert_eq(fs_gather(c, ids, 200, "feat", FS_DTYPE_INVALID, &b), FS_OK, "%s", fs_client_errstr(c));
    add(&want, batch_reads(b));
    fs_batch_free(b);
    cr_assert_eq(fs_gather(c, ids, 50, "labels", FS_DTYPE_INVALID, &b), FS_OK, "%s", fs_client_errstr(c));
    add(&want, batch_reads(b));
    fs_batch_free(b);
    cr_assert_eq(fs_sample(c, ids, 64, &request, &b), FS_OK, "%s", fs_client_errstr(c));
    add(&want, batch_reads(b));
    fs_batch_free(b);
    cr_assert_eq(fs_sample_gather(c, ids + 64, 64, &request, "feat", FS_DTYPE_INVALID, &b), FS_OK, "%s",
                 fs_client_errstr(c));
    add(&want, batch_reads(b));
    fs_batch_free(b);
    expect_moved(reader_of(kind), before, want, "gather, sample and sample_gather");
    fs_close(c);
}

Test(reads, plain_calls_count_what_they_read_over_unix) { check_calls("unix"); }

Test(reads, plain_calls_count_what_they_read_over_grpc) { check_calls("grpc"); }

/* A node stream's epoch: its batches' samples and rows (whole, or with a
 * delta the new ones only) and its seeds' labels. Without a grpc://
 * trainer's cache of hot rows, whose reads test_hot_cache.py counts. */
static void check_node_stream(const char *kind, fs_delta_t delta)
{
    setenv("FEATSTORE_CACHE_MB", "0", 1);
    fs_client_t *c = connect_over(kind);
    fs_stream_opts_t o = FS_STREAM_OPTS_INIT;
    o.split = "train", o.batch_size = 64, o.sample = &request, o.table = "feat", o.seed = 3, o.delta = delta;
    o.window = delta ? 2 : 1;
    reads_t before = scrape(reader_of(kind)), want = {0};
    fs_stream_t *s;
    cr_assert_eq(fs_stream_open(c, &o, &s), FS_OK, "%s", fs_client_errstr(c));
    fs_stream_batch_t *b;
    int64_t batches = 0;
    while (fs_stream_next(s, &b) == FS_OK) {
        add(&want, batch_reads(b->batch));
        if (delta) add(&want, rows_of(b->num_new, b->dim, b->dtype));
        cr_assert_not_null(b->labels);
        add(&want, rows_of(b->num_seeds, 1, FS_DTYPE_I64));
        fs_stream_batch_free(b);
        batches++;
    }
    cr_assert_eq(batches, fs_stream_num_batches(s), "%s", fs_stream_errstr(s));
    fs_stream_close(s);
    expect_moved(reader_of(kind), before, want, delta ? "a delta node stream" : "a node stream");
    fs_close(c);
}

Test(reads, node_streams_count_what_they_read_over_unix)
{
    check_node_stream("unix", FS_DELTA_OFF);
    check_node_stream("unix", FS_DELTA_FULL);
}

Test(reads, node_streams_count_what_they_read_over_grpc)
{
    check_node_stream("grpc", FS_DELTA_OFF);
    check_node_stream("grpc", FS_DELTA_FULL);
}

/* A row stream over row tables: each table's rows, the rows' node column
 * (the seeds) and their labels. */
static void check_row_stream(const char *kind)
{
    static const char *const hops[] = {"hop_0", "hop_1", "hop_2"};
    fs_client_t *c = connect_over(kind);
    fs_stream_opts_t o = FS_STREAM_OPTS_INIT;
    o.split = "train", o.batch_size = 32, o.tables = hops, o.num_tables = 3, o.seed = 5;
    reads_t before = scrape(reader_of(kind)), want = {0};
    fs_stream_t *s;
    cr_assert_eq(fs_stream_open(c, &o, &s), FS_OK, "%s", fs_client_errstr(c));
    fs_stream_batch_t *b;
    while (fs_stream_next(s, &b) == FS_OK) {
        for (size_t k = 0; k < b->num_tables; k++) add(&want, batch_reads(b->tables[k]));
        cr_assert_not_null(b->labels);
        add(&want, rows_of(2 * b->num_seeds, 1, FS_DTYPE_I64)); /* the seeds (hop_node) and their labels */
        fs_stream_batch_free(b);
    }
    cr_assert_str_empty(fs_stream_errstr(s));
    fs_stream_close(s);
    expect_moved(reader_of(kind), before, want, "a row stream");
    fs_close(c);
}

Test(reads, row_streams_count_what_they_read_over_unix) { check_row_stream("unix"); }

Test(reads, row_streams_count_what_they_read_over_grpc) { check_row_stream("grpc"); }

/* A trainer on gpu:1 of a placement samples and gathers through its own
 * GPU's tiers and the host's: the GPU engines' reads count too, on the
 * tiers they were read from, its own GPU's among them. */
Test(placed_reads, a_gpu_trainers_reads_count_on_their_tiers)
{
    snprintf(uri, sizeof uri, "unix://%s", sock);
    fs_connect_opts_t o = FS_CONNECT_OPTS_INIT;
    o.device = "gpu:1";
    fs_client_t *c;
    cr_assert_eq(fs_connect(uri, &o, &c), FS_OK, "%s", fs_client_errstr(c));
    int64_t seeds[128];
    for (int i = 0; i < 128; i++) seeds[i] = (i * 13) % ds->num_nodes;
    reads_t before = scrape("local"), want = {0};
    for (int i = 0; i < 2; i++) {
        fs_batch_t *b;
        cr_assert_eq(fs_sample_gather(c, seeds + 64 * i, 64, &request, "feat", FS_DTYPE_INVALID, &b), FS_OK, "%s",
                     fs_client_errstr(c));
        cr_assert_eq(b->features_memory, FS_MEM_DEVICE, "gathered on the (simulated) GPU");
        add(&want, batch_reads(b));
        fs_batch_free(b);
    }
    expect_moved("local", before, want, "a GPU trainer's batches");
    char *text = tu_http_get(srv.metrics_port, "/metrics");
    const char *prefix = "\nfeatstore_feature_rows_read_total{reader=\"local\",", *gpu1 = "kind=\"device\",device=\"1\"}";
    uint64_t own = 0;
    for (const char *p = text; (p = strstr(p, prefix)); p++) {
        const char *end = strchr(p, '}') + 1;
        if (strncmp(end - strlen(gpu1), gpu1, strlen(gpu1)) == 0) own += strtoull(end + 1, NULL, 10);
    }
    cr_assert_gt(own, 0, "rows read from gpu:1's own tier:\n%s", text);
    free(text);
    fs_close(c);
}

/* ---- typed requests ----------------------------------------------------------- */

/* writes has no fanout at hop 1 and the other edge types none at all: their blocks read nothing */
static fs_hetero_fanout_t fanouts[] = {{"paper", "cites", "paper", {5, 3}}, {"author", "writes", "paper", {3, 0}}};
static const char *const node_tables[] = {"feat", "labels"}, *const edge_tables[] = {"feat"};

static fs_hetero_req_t typed_request(void)
{
    fs_hetero_req_t r = FS_HETERO_REQ_INIT;
    r.num_hops = 2, r.fanouts = fanouts, r.num_fanouts = 2, r.node_tables = node_tables, r.num_node_tables = 2;
    r.edge_tables = edge_tables, r.num_edge_tables = 1;
    return r;
}

static reads_t typed_reads(const fs_hetero_batch_t *x) { return hetero_reads(x, fanouts, 2); }

static void check_typed_calls(const char *kind)
{
    fs_client_t *c = connect_over(kind);
    int64_t papers[100], authors[20];
    for (int i = 0; i < 100; i++) papers[i] = (i * 7) % 1024;
    for (int i = 0; i < 20; i++) authors[i] = i * 3;
    fs_hetero_seeds_t g[2] = {{"paper", 100, papers, NULL}, {"author", 20, authors, NULL}};
    fs_hetero_req_t req = typed_request();
    reads_t before = scrape(reader_of(kind)), want = {0};
    fs_hetero_batch_t *x;
    cr_assert_eq(fs_hetero_sample(c, g, 2, &req, &x), FS_OK, "%s", fs_client_errstr(c));
    add(&want, typed_reads(x));
    fs_hetero_batch_free(x);
    fs_link_req_t l = FS_LINK_REQ_INIT;
    l.src = "paper", l.rel = "cites", l.dst = "paper", l.count = 50, l.src_ids = papers, l.dst_ids = papers + 50;
    l.neg = FS_NEG_BINARY, l.amount = 1;
    cr_assert_eq(fs_link_sample(c, &l, &req, &x), FS_OK, "%s", fs_client_errstr(c));
    add(&want, typed_reads(x));
    fs_hetero_batch_free(x);
    expect_moved(reader_of(kind), before, want, "typed and link batches");
    fs_close(c);
}

Test(typed_reads, typed_and_link_batches_count_what_they_read_over_unix) { check_typed_calls("unix"); }

Test(typed_reads, typed_and_link_batches_count_what_they_read_over_grpc) { check_typed_calls("grpc"); }

static void typed_stream_epoch(fs_client_t *c, const fs_stream_opts_t *o, reads_t *want)
{
    fs_stream_t *s;
    cr_assert_eq(fs_stream_open(c, o, &s), FS_OK, "%s", fs_client_errstr(c));
    fs_stream_batch_t *b;
    int64_t batches = 0;
    while (fs_stream_next(s, &b) == FS_OK) {
        add(want, typed_reads(b->hetero));
        fs_stream_batch_free(b);
        batches++;
    }
    cr_assert_eq(batches, fs_stream_num_batches(s), "%s", fs_stream_errstr(s));
    fs_stream_close(s);
}

static void check_typed_streams(const char *kind)
{
    fs_client_t *c = connect_over(kind);
    fs_hetero_req_t req = typed_request();
    reads_t before = scrape(reader_of(kind)), want = {0};
    fs_stream_opts_t o = FS_STREAM_OPTS_INIT;
    o.split = "paper/train", o.batch_size = 128, o.hetero = &req, o.seed = 4;
    typed_stream_epoch(c, &o, &want); /* its probe at open reads nothing */

    fs_link_req_t l = FS_LINK_REQ_INIT;
    l.src = "paper", l.rel = "cites", l.dst = "paper", l.neg = FS_NEG_BINARY, l.amount = 1;
    o = (fs_stream_opts_t)FS_STREAM_OPTS_INIT;
    o.split = "valid", o.batch_size = 100, o.hetero = &req, o.link = &l, o.seed = 6;
    typed_stream_epoch(c, &o, &want);
    expect_moved(reader_of(kind), before, want, "typed and link streams");
    fs_close(c);
}

Test(typed_reads, typed_and_link_streams_count_what_they_read_over_unix) { check_typed_streams("unix"); }

Test(typed_reads, typed_and_link_streams_count_what_they_read_over_grpc) { check_typed_streams("grpc"); }

/* ---- clients by version ------------------------------------------------------- */

/* A frame within 10 s, its descriptors closed; its type (-1: none). */
static int next_frame(int fd, char *buf, size_t cap, size_t *len)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 10000) != 1) return -1;
    int fds[FS_LOCAL_MAX_FDS], nfds = 0;
    fs_local_frame_t f;
    int got = fs_local_recv(fd, &f, buf, cap, fds, &nfds, FS_LOCAL_MAX_FDS, 0);
    for (int i = 0; i < nfds; i++) close(fds[i]);
    if (len) *len = f.len;
    return got == 1 ? f.type : -1;
}

/* A raw unix:// client of library release `library`: HELLO, then the
 * WELCOME and its descriptors read (and closed). Its socket. */
static int hello_as(const char *library)
{
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", sock);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    featstore_local_Hello h = {.major = FS_LOCAL_MAJOR, .minor = FS_LOCAL_MINOR, .slots = 1, .pid = getpid(),
                               .reader = -1};
    snprintf(h.library_version, sizeof h.library_version, "%s", library);
    cr_assert_eq(fs_local_send_msg(fd, FS_LOCAL_HELLO, featstore_local_Hello_fields, &h, NULL, 0, 0), 0);
    static char buf[FS_LOCAL_MAX_MSG];
    size_t len;
    cr_assert_eq(next_frame(fd, buf, sizeof buf, &len), FS_LOCAL_WELCOME, "client %s welcomed", library);
    featstore_local_Welcome w = featstore_local_Welcome_init_zero;
    fs_error_t err;
    cr_assert_eq(fs_local_decode(buf, len, featstore_local_Welcome_fields, &w, "WELCOME", &err), FS_OK, "%s", err.msg);
    for (uint32_t got = FS_LOCAL_MAX_FDS; got < w.num_fds; got += FS_LOCAL_MAX_FDS)
        cr_assert_eq(next_frame(fd, buf, sizeof buf, NULL), FS_LOCAL_FDS);
    return fd;
}

static char *metrics(void) { return tu_http_get(srv.metrics_port, "/metrics"); }

/* The value of one sample (-1: absent). */
static long long sample_of(const char *text, const char *sample)
{
    char line[200];
    snprintf(line, sizeof line, "\n%s ", sample);
    const char *p = strstr(text, line);
    return p ? strtoll(p + strlen(line), NULL, 10) : -1;
}

static long long by_version(const char *text, const char *library)
{
    char s[160];
    char protocol[16];
    snprintf(protocol, sizeof protocol, "%d.%d", FS_LOCAL_MAJOR, FS_LOCAL_MINOR);
    snprintf(s, sizeof s, "featstore_local_clients_by_version{protocol=\"%s\",library=\"%s\"}",
             strcmp(library, "other") ? protocol : "other", library);
    return sample_of(text, s);
}

/* /metrics once the server has seen `clients` unix:// clients (it counts
 * a disconnect when it reads the hang-up). */
static char *metrics_with_clients(int clients)
{
    char want[80];
    snprintf(want, sizeof want, "featstore_connected_clients{transport=\"unix\"} %d\n", clients);
    return tu_metrics_with(srv.metrics_port, want);
}

/* A response's body without the by-version family (heap). */
static char *without_versions(const char *response)
{
    const char *body = strstr(response, "\r\n\r\n"), *from = strstr(response, "# HELP featstore_local_clients_by_version"),
               *to = strstr(response, "# HELP featstore_placement_generation");
    cr_assert(body && from && to && body < from && from < to);
    char *out = malloc(strlen(body) + 1);
    memcpy(out, body, (size_t)(from - body));
    strcpy(out + (from - body), to);
    return out;
}

/* Every line of `now` but the by-version family's is as in `then`. */
static void assert_as_before(const char *now, const char *then)
{
    char *a = without_versions(now), *b = without_versions(then);
    cr_assert_str_eq(a, b, "every other counter is as it was");
    free(a), free(b);
}

Test(versions, forty_library_releases_come_and_go_and_every_counter_stays_right)
{
    char *before = metrics(), name[32];
    int fd[40];
    for (int i = 0; i < 40; i++) {
        snprintf(name, sizeof name, "1.%d.0-test", i);
        fd[i] = hello_as(name);
    }
    char *m = metrics_with_clients(40);
    for (int i = 0; i < 40; i++) {
        snprintf(name, sizeof name, "1.%d.0-test", i);
        cr_assert_eq(by_version(m, name), i < 15 ? 1 : -1, "%s: %lld", name, by_version(m, name));
    }
    cr_assert_eq(by_version(m, "other"), 25, "the 25 past the table: %lld", by_version(m, "other"));
    cr_assert_eq(sample_of(m, "featstore_requests_total{method=\"Info\",transport=\"unix\"}"), 0);
    free(m);

    /* the table is full: one more goes to "other"; when a held entry frees,
     * that client's disconnect still takes back "other", and its next
     * connect gets the freed entry */
    int late = hello_as("late");
    free(metrics_with_clients(41));
    close(fd[3]);
    fd[3] = -1;
    m = metrics_with_clients(40);
    cr_assert_eq(by_version(m, "other"), 26);
    free(m);
    close(late);
    m = metrics_with_clients(39);
    cr_assert_eq(by_version(m, "other"), 25, "the late client's disconnect takes back what its connect added");
    cr_assert_eq(by_version(m, "1.3.0-test"), -1);
    free(m);
    late = hello_as("late");
    m = metrics_with_clients(40);
    cr_assert_eq(by_version(m, "late"), 1, "a freed entry is reused");
    cr_assert_eq(by_version(m, "other"), 25);
    free(m);
    close(late);
    for (int i = 0; i < 40; i++)
        if (fd[i] >= 0) close(fd[i]);

    m = metrics_with_clients(0);
    cr_assert_null(strstr(m, "featstore_local_clients_by_version{"), "nobody is connected:\n%s", m);
    assert_as_before(m, before);
    free(m);
    /* a long-lived server: another 40 releases find the table as good as new */
    for (int i = 0; i < 40; i++) {
        snprintf(name, sizeof name, "2.%d.0-test", i);
        fd[i] = hello_as(name);
    }
    m = metrics_with_clients(40);
    cr_assert_eq(by_version(m, "2.14.0-test"), 1);
    cr_assert_eq(by_version(m, "2.15.0-test"), -1);
    cr_assert_eq(by_version(m, "other"), 25);
    free(m);
    for (int i = 0; i < 40; i++) close(fd[i]);
    m = metrics_with_clients(0);
    assert_as_before(m, before);
    free(m), free(before);
}

/* ---- reports: the wire's method numbers --------------------------------------------- */

Test(reports, every_wire_number_maps_to_its_method_and_the_rest_to_unknown)
{
    /* the numbers 1.0-1.5 clients send, which were fs_method_t's order then */
    static const struct {
        int32_t wire;
        fs_method_t method;
        const char *name;
    } known[] = {{0, FS_METHOD_INFO, "Info"}, {1, FS_METHOD_SAMPLE, "Sample"}, {2, FS_METHOD_GATHER, "Gather"},
                 {3, FS_METHOD_SAMPLE_GATHER, "SampleGather"}, {4, FS_METHOD_STATS, "Stats"},
                 {5, FS_METHOD_SPLIT, "Split"}, {6, FS_METHOD_HETERO_SAMPLE, "HeteroSample"},
                 {7, FS_METHOD_LINK_SAMPLE, "LinkSample"}};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        cr_assert_eq(fs_local_report_method(known[i].wire), known[i].method, "wire %d", known[i].wire);
        cr_assert_str_eq(fs_method_name(fs_local_report_method(known[i].wire)), known[i].name);
    }
    const int32_t unknown[] = {8, 9, 42, 1 << 30, INT32_MAX, -1, INT32_MIN};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
        cr_assert_eq(fs_local_report_method(unknown[i]), FS_METHOD_UNKNOWN, "wire %d", unknown[i]);
    cr_assert_str_eq(fs_method_name(FS_METHOD_UNKNOWN), "unknown");
}

/* A REPORT as a 1.5 client encodes it: method (field 1, an int32 varint),
 * generation 1 (field 4); nothing read. */
static void report_as_1_5(int fd, int64_t method)
{
    unsigned char msg[16] = {0x08}, *p = msg + 1;
    uint64_t v = (uint64_t)method; /* a negative int32 is ten bytes, sign-extended */
    do {
        *p++ = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    *p++ = 0x20, *p++ = 0x01;
    cr_assert_eq(fs_local_send(fd, FS_LOCAL_REPORT, msg, (size_t)(p - msg), NULL, 0, 0), 0);
}

static long long requests_of(const char *text, const char *method)
{
    char s[120];
    snprintf(s, sizeof s, "featstore_requests_total{method=\"%s\",transport=\"unix\"}", method);
    return sample_of(text, s);
}

Test(reports, a_1_5_clients_reports_count_as_its_methods, .init = setup_v1, .fini = teardown, .timeout = 300)
{
    int fd = hello_as("1.5.0");
    report_as_1_5(fd, 7);  /* LinkSample */
    report_as_1_5(fd, 3);  /* SampleGather */
    report_as_1_5(fd, 3);
    report_as_1_5(fd, 42); /* a newer client's method */
    report_as_1_5(fd, -1);
    char *m = tu_metrics_with(srv.metrics_port, "featstore_requests_total{method=\"unknown\",transport=\"unix\"} 2\n");
    cr_assert_eq(requests_of(m, "LinkSample"), 1, "wire 7");
    cr_assert_eq(requests_of(m, "SampleGather"), 2, "wire 3");
    cr_assert_eq(requests_of(m, "HeteroSample"), 0);
    cr_assert_eq(requests_of(m, "unknown"), 2, "wire 42 and -1");
    free(m);
    close(fd);
}
