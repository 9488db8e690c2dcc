/* fuzz_local_server.h — fuzz_local's SESSION kind: conversations with one
 * live unix:// server (server/local.c) that lives as long as the fuzzer, so
 * state many clients build up — the clients-by-version table, the request
 * counters, descriptors, the handshake queue — is fuzzed across inputs,
 * not rebuilt for each.
 *
 * The server serves a 6-node dataset written at start (dataset/writer.c)
 * from a scratch directory. An input is up to 64 operations on up to 16
 * connections of its own: connect and HELLO (a minor version and a library
 * release of the input's choosing; the WELCOME and its descriptors read),
 * close, a frame of any type with the input's payload, raw bytes, a
 * well-formed REPORT with the input's counts, and STATS. After each STATS
 * reply, and once the input's connections are closed and the server has
 * let them go: the local clients by version add up to the unix:// clients
 * connected (both counted by the loop thread, so a STATS reply is one
 * snapshot), and no request counter of unix:// exceeds the frames the
 * harness has sent in its whole life (a corrupted counter does). Then no
 * client is left counted by version. */
#ifndef FS_FUZZ_LOCAL_SERVER_H
#define FS_FUZZ_LOCAL_SERVER_H

#include <poll.h>
#include <sys/un.h>
#include <unistd.h>

#include "engine.h"
#include "fs_local.h"
#include "local.h"
#include "metrics.h"
#include "writer.h"

#define SESSION_MAX_CONNS 16
#define SESSION_MAX_OPS 64
#define SESSION_WAIT_MS 2000

static struct {
    char dir[64], sock[96];
    fs_dataset_t *ds;
    fs_engine_t *engine;
    fs_metrics_t *metrics;
    fs_local_server_t *server;
    uint64_t frames_sent; /* every frame and datagram the harness ever sent a server */
} session;

static void session_cleanup(void)
{
    if (session.server) fs_local_server_stop(session.server);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", session.dir);
    if (system(cmd) != 0) fprintf(stderr, "fuzz_local: cannot remove %s\n", session.dir);
}

/* A 6-node graph with a feature table, into dir/d. */
static fs_status_t session_dataset(const char *out, fs_error_t *err)
{
    static const int64_t indptr[7] = {0, 2, 3, 5, 6, 8, 8};
    static const int32_t indices[8] = {1, 2, 0, 3, 4, 5, 0, 1};
    fs_writer_t *w;
    fs_status_t st = fs_writer_create(out, 1, &w, err);
    if (st != FS_OK) return st;
    int64_t shape[2] = {7, 4};
    void *p;
    if ((st = fs_writer_array(w, FS_ROLE_INDPTR, NULL, FS_DTYPE_I64, 1, shape, &p, err)) == FS_OK) {
        memcpy(p, indptr, sizeof indptr);
        shape[0] = 8;
        st = fs_writer_array(w, FS_ROLE_INDICES, NULL, FS_DTYPE_I32, 1, shape, &p, err);
    }
    if (st == FS_OK) {
        memcpy(p, indices, sizeof indices);
        shape[0] = 6;
        st = fs_writer_array(w, FS_ROLE_FEATURES, "feat", FS_DTYPE_F32, 2, shape, &p, err);
    }
    fs_writer_set_meta(w, "fuzz", 6, 8, 0, 0);
    return st == FS_OK ? fs_writer_commit(w, err) : st;
}

static void session_start(void)
{
    fs_error_t err = {0};
    char data[96];
    snprintf(session.dir, sizeof session.dir, "/tmp/fuzz-local-XXXXXX");
    FUZZ_CHECK(mkdtemp(session.dir) != NULL, "mkdtemp");
    snprintf(data, sizeof data, "%s/d", session.dir);
    snprintf(session.sock, sizeof session.sock, "%s/s.sock", session.dir);
    fs_store_t *store = NULL;
    fs_local_server_opts_t o;
    fs_local_server_defaults(&o);
    o.socket_path = session.sock;
    fs_status_t st = session_dataset(data, &err);
    if (st == FS_OK) st = fs_dataset_open(data, 0, 1, &session.ds, &err);
    if (st == FS_OK) st = fs_store_create(session.ds, &store, &err);
    if (st == FS_OK) st = fs_engine_create(session.ds, store, NULL, &session.engine, &err);
    if (st == FS_OK && !(session.metrics = fs_metrics_create(session.ds, store))) st = FS_ERR_NOMEM;
    if (st == FS_OK) st = fs_local_server_start(&o, session.engine, session.metrics, &session.server, &err);
    fs_store_destroy(store); /* the engine and the metrics hold theirs */
    FUZZ_CHECK(st == FS_OK, "the session's server did not start: %s", err.msg);
    atexit(session_cleanup);
}

/* Reads what the server sent until a frame of type `until` (or an ERROR, or
 * a hang-up, or SESSION_WAIT_MS of silence), closing every descriptor.
 * Its type, or -1. text (may be NULL) receives a STATS_REPLY's text. */
static int session_read(int fd, int until, char **text)
{
    static char buf[FS_LOCAL_MAX_MSG + 1];
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, SESSION_WAIT_MS) != 1) return -1;
        int fds[FS_LOCAL_MAX_FDS], nfds = 0;
        fs_local_frame_t f;
        int got = fs_local_recv(fd, &f, buf, FS_LOCAL_MAX_MSG, fds, &nfds, FS_LOCAL_MAX_FDS, MSG_DONTWAIT);
        for (int i = 0; i < nfds; i++) close(fds[i]);
        if (got == 0 || (got < 0 && errno != EAGAIN && errno != EPROTO && errno != EMSGSIZE)) return -1;
        if (got < 0) continue;
        if (f.type == until && text) {
            buf[f.len] = '\0';
            *text = strdup(buf);
        }
        if (f.type == until || f.type == FS_LOCAL_ERROR) return f.type;
    }
}

static int session_send(int fd, int type, const void *payload, size_t len)
{
    session.frames_sent++;
    return fs_local_send(fd, type, payload, len, NULL, 0, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Connects and says HELLO; the socket, or -1. */
static int session_hello(fuzz_bytes_t *in)
{
    uint8_t opt = fuzz_take_u8(in), len = fuzz_take_u8(in) % 40;
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", session.sock);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        if (fd >= 0) close(fd);
        return -1;
    }
    unsigned minors[4] = {FS_LOCAL_MINOR, FS_LOCAL_MINOR - 1, FS_LOCAL_MINOR + 1, opt};
    featstore_local_Hello h = {.major = FS_LOCAL_MAJOR, .minor = minors[opt & 3], .slots = 1 + (opt >> 2 & 3),
                               .pid = getpid(), .reader = (opt & 16) ? 0 : -1};
    size_t n = len < in->n ? len : in->n;
    if (n >= sizeof h.library_version) n = sizeof h.library_version - 1;
    memcpy(h.library_version, in->p, n), in->p += n, in->n -= n;
    session.frames_sent++;
    if (fs_local_send_msg(fd, FS_LOCAL_HELLO, featstore_local_Hello_fields, &h, NULL, 0, MSG_NOSIGNAL) == 0)
        session_read(fd, FS_LOCAL_WELCOME, NULL); /* the FDS frames that may follow are read later, or dropped */
    return fd;
}

/* A REPORT as a client encodes one, with the input's method, status and counts. */
static void session_report(int fd, fuzz_bytes_t *in)
{
    featstore_local_Report r = {.method = fuzz_take_u8(in), .status = fuzz_take_u8(in),
                                .latency_ns = (int64_t)fuzz_take_u8(in) << 20, .generation = fuzz_take_u8(in) & 1};
    featstore_local_TierCount c[2];
    for (int i = 0; i < 2; i++)
        c[i] = (featstore_local_TierCount){.tier = fuzz_take_u8(in) % 20, .rows = fuzz_take_u8(in),
                                           .bytes = (uint64_t)fuzz_take_u8(in) << 56};
    fs_pb_list_t features, topology;
    FS_PB_FROM_ARRAY(&features, featstore_local_TierCount, c, 1);
    FS_PB_FROM_ARRAY(&topology, featstore_local_TierCount, c + 1, 1);
    fs_pb_set_list(&r.features, &features);
    fs_pb_set_list(&r.topology, &topology);
    session.frames_sent++;
    fs_local_send_msg(fd, FS_LOCAL_REPORT, featstore_local_Report_fields, &r, NULL, 0, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* The sum of every sample whose line starts with `prefix`. */
static long long session_sum(const char *text, const char *prefix)
{
    long long sum = 0;
    size_t n = strlen(prefix);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, prefix, n) == 0) sum += strtoll(strchr(p, '}') + 2, NULL, 10);
    return sum;
}

/* The counters' invariants in one exposition text (a STATS reply or a render). */
static void session_check(const char *text)
{
    long long connected = session_sum(text, "featstore_connected_clients{transport=\"unix\"}"),
              by_version = session_sum(text, "featstore_local_clients_by_version{");
    FUZZ_CHECK(by_version == connected, "%lld clients by version, %lld connected", by_version, connected);
    long long requests = 0;
    for (int i = 0; i < FS_METHOD_COUNT_; i++) {
        char prefix[128];
        snprintf(prefix, sizeof prefix, "featstore_requests_total{method=\"%s\",transport=\"unix\"}", fs_method_name(i));
        long long n = session_sum(text, prefix);
        FUZZ_CHECK(n >= 0 && (uint64_t)n <= session.frames_sent, "%s is %lld after %llu frames", prefix, n,
                   (unsigned long long)session.frames_sent);
        requests += n;
    }
    FUZZ_CHECK((uint64_t)requests <= session.frames_sent, "%lld unix:// requests after %llu frames", requests,
               (unsigned long long)session.frames_sent);
}

static void session_run(fuzz_bytes_t in)
{
    int conn[SESSION_MAX_CONNS], n = 0;
    for (int op = 0; op < SESSION_MAX_OPS && in.n > 0; op++) {
        uint8_t what = fuzz_take_u8(&in), k = fuzz_take_u8(&in);
        int fd = n ? conn[k % n] : -1;
        uint8_t type = fuzz_take_u8(&in), len = fuzz_take_u8(&in);
        size_t take = len < in.n ? len : in.n;
        switch (what % 6) {
        case 0:
            if (n < SESSION_MAX_CONNS && (fd = session_hello(&in)) >= 0) conn[n++] = fd;
            break;
        case 1:
            if (fd >= 0) {
                close(fd);
                conn[k % n] = conn[n - 1];
                n--;
            }
            break;
        case 2: /* a frame of any type */
            if (fd >= 0) session_send(fd, type % 16, in.p, take);
            in.p += take, in.n -= take;
            break;
        case 3: /* bytes that are no frame, or a frame cut short */
            if (fd >= 0) session.frames_sent++, send(fd, in.p, take, MSG_DONTWAIT | MSG_NOSIGNAL);
            in.p += take, in.n -= take;
            break;
        case 4:
            if (fd >= 0) session_report(fd, &in);
            break;
        default: {
            char *text = NULL;
            if (fd >= 0 && session_send(fd, FS_LOCAL_STATS, NULL, 0) == 0 &&
                session_read(fd, FS_LOCAL_STATS_REPLY, &text) == FS_LOCAL_STATS_REPLY && text)
                session_check(text);
            free(text);
        }
        }
    }
    for (int i = 0; i < n; i++) close(conn[i]);
    for (int i = 0; i < SESSION_WAIT_MS && fs_local_server_clients(session.server) > 0; i++) usleep(1000);
    FUZZ_CHECK(fs_local_server_clients(session.server) == 0, "%d clients still held after every one closed",
               fs_local_server_clients(session.server));
    char *text = fs_metrics_render(session.metrics);
    FUZZ_CHECK(text != NULL, "no metrics");
    session_check(text);
    FUZZ_CHECK(!strstr(text, "\nfeatstore_local_clients_by_version{"), "clients counted after every one left");
    free(text);
}

#endif
