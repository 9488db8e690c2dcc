/* test_local_versions.c — old and new peers of the unix:// transport
 * (proto/fs_local.h, docs/api.md §6): an older client with this server
 * (counted by version in /metrics) and this client with an older server, a
 * gap of two minors or another major refused naming both versions and the
 * side to upgrade, a featstore 0.1 client told in its own format and a 0.1
 * server named, HELLO fields from the future skipped; struct_size checked at
 * the API; and the error a peer sent before hanging up read past the reset. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "client_internal.h"
#include "featstore/client.h"
#include "fs_local.h"
#include "fs_pb.h"
#include "local_fixture.h"
#include "test_util.h"

TestSuite(local, .init = setup, .fini = teardown, .timeout = 600);
/* ---- versions: old and new peers (proto/fs_local.h) ------------------------------ */

/* The server's metrics over a connection. */
static char *stats_of(fs_client_t *c)
{
    char *text;
    cr_assert_eq(fs_stats(c, &text), FS_OK, "%s", fs_client_errstr(c));
    return text;
}

/* One sample_gather and one info must work over an older or newer peer. */
static void works(fs_client_t *c)
{
    int64_t seeds[64];
    seeds_for(seeds, 64, 3);
    fs_sample_req_t req = req3(5);
    fs_batch_t *b;
    cr_assert_eq(fs_sample_gather(c, seeds, 64, &req, "feat", FS_DTYPE_INVALID, &b), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(b->kind, FS_BATCH_SAMPLE_GATHER);
    cr_assert_not(differs(b, seeds, 64, &req), "results over a mixed-version connection differ");
    fs_batch_free(b);
    fs_info_t *info;
    cr_assert_eq(fs_info(c, &info), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(info->num_nodes, ds->num_nodes);
    fs_info_free(info);
}

Test(local, an_older_client_works_with_this_server_and_is_counted_by_version)
{
    fs_local_client_protocol(FS_LOCAL_MINOR - 1); /* a client one minor older */
    fs_client_t *old = connect_ok();
    fs_local_client_protocol(FS_LOCAL_MINOR);
    fs_client_t *cur = connect_ok();
    works(old);
    works(cur);
    char *text = stats_of(cur), want[160];
    snprintf(want, sizeof want, "featstore_local_clients_by_version{protocol=\"6.%d\",library=\"%s\"} 1\n",
             FS_LOCAL_MINOR - 1, FS_LOCAL_MINOR - 1 >= 1 ? fs_version() : "unknown"); /* 6.0 sent no version */
    cr_assert_not_null(strstr(text, want), "%s", text);
    snprintf(want, sizeof want, "featstore_local_clients_by_version{protocol=\"6.%d\",library=\"%s\"} 1\n",
             FS_LOCAL_MINOR, fs_version());
    cr_assert_not_null(strstr(text, want), "%s", text);
    fs_stats_free(text);
    fs_close(old);
    fs_close(cur);
}

Test(local, this_client_works_with_an_older_server)
{
    fs_local_server_stop(server);
    fs_error_t err = {0};
    cr_assert_eq(serve_on(sock, FS_LOCAL_MINOR - 1, &err), FS_OK, "%s", err.msg); /* a server one minor older */
    fs_client_t *c = connect_ok();
    works(c);
    char *text = stats_of(c), want[160]; /* a 6.0 server did not read library versions */
    snprintf(want, sizeof want, "featstore_local_clients_by_version{protocol=\"6.%d\",library=\"%s\"} 1\n",
             FS_LOCAL_MINOR - 1, FS_LOCAL_MINOR - 1 >= 1 ? fs_version() : "unknown");
    cr_assert_not_null(strstr(text, want), "%s", text);
    fs_stats_free(text);
    fs_close(c);
}

/* Sends a HELLO of major.minor (protobuf, in our frame format) plus `extra`
 * raw bytes appended to its encoding; returns the socket. */
static int hello(unsigned major, unsigned minor, const void *extra, size_t extra_len)
{
    featstore_local_Hello h = featstore_local_Hello_init_zero;
    h.major = major, h.minor = minor, h.slots = 1, h.pid = getpid(), h.reader = -1;
    snprintf(h.library_version, sizeof h.library_version, "9.9.9");
    void *buf;
    size_t len;
    fs_error_t err = {0};
    cr_assert_eq(fs_pb_encode_alloc(featstore_local_Hello_fields, &h, "hello", &buf, &len, &err), FS_OK, "%s", err.msg);
    char frame[512];
    cr_assert_lt(len + extra_len, sizeof frame);
    memcpy(frame, buf, len);
    if (extra_len) memcpy(frame + len, extra, extra_len); /* extra may be NULL: memcpy's source must not (UBSan) */
    free(buf);
    int fd = raw_connect();
    cr_assert_eq(fs_local_send(fd, FS_LOCAL_HELLO, frame, len + extra_len, NULL, 0, 0), 0);
    return fd;
}

/* The ERROR a hand-made HELLO got: its status and message. */
static fs_status_t refusal(int fd, char *message, size_t cap)
{
    char buf[2048];
    int fds[FS_LOCAL_MAX_FDS], nfds = 0;
    fs_local_frame_t f;
    cr_assert_eq(fs_local_recv(fd, &f, buf, sizeof buf, fds, &nfds, FS_LOCAL_MAX_FDS, 0), 1);
    cr_assert_eq(f.type, FS_LOCAL_ERROR, "frame type %d", f.type);
    featstore_local_Error e = featstore_local_Error_init_zero;
    fs_error_t err;
    cr_assert_eq(fs_local_decode(buf, f.len, featstore_local_Error_fields, &e, "error", &err), FS_OK);
    snprintf(message, cap, "%s", e.message);
    cr_assert_eq(recv(fd, buf, sizeof buf, 0), 0, "the server hangs up after a version error");
    close(fd);
    return (fs_status_t)e.status;
}

Test(local, a_wider_version_gap_is_a_named_error)
{
    char msg[1024];
    /* a client two minors ahead */
    cr_assert_eq(refusal(hello(FS_LOCAL_MAJOR, FS_LOCAL_MINOR + 2, NULL, 0), msg, sizeof msg), FS_ERR_VERSION, "%s", msg);
    char want[64];
    snprintf(want, sizeof want, "local protocol 6.%d and this server 6.%d", FS_LOCAL_MINOR + 2, FS_LOCAL_MINOR);
    cr_assert_not_null(strstr(msg, want), "%s", msg);
    cr_assert_not_null(strstr(msg, "more than one minor version apart"), "%s", msg);
    cr_assert_not_null(strstr(msg, "upgrade the server"), "%s", msg);
    /* a client of a newer major: told in our format */
    cr_assert_eq(refusal(hello(FS_LOCAL_MAJOR + 1, 0, NULL, 0), msg, sizeof msg), FS_ERR_VERSION, "%s", msg);
    cr_assert_not_null(strstr(msg, "different major versions"), "%s", msg);
    cr_assert_not_null(strstr(msg, "upgrade the server"), "%s", msg);
    /* the rule itself, both ways and from both sides */
    fs_error_t err = {0};
    unsigned m;
    cr_assert_eq(fs_local_negotiate(3, FS_LOCAL_MAJOR, 2, 1, &m, &err), FS_OK);
    cr_assert_eq(m, 2);
    cr_assert_eq(fs_local_negotiate(3, FS_LOCAL_MAJOR, 4, 0, &m, &err), FS_OK);
    cr_assert_eq(m, 3);
    cr_assert_eq(fs_local_negotiate(3, FS_LOCAL_MAJOR, 1, 1, &m, &err), FS_ERR_VERSION);
    cr_assert_not_null(strstr(err.msg, "client library speaks local protocol 6.1 and this server 6.3"), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "upgrade the client library"), "%s", err.msg);
    cr_assert_eq(fs_local_negotiate(1, FS_LOCAL_MAJOR, 3, 0, &m, &err), FS_ERR_VERSION);
    cr_assert_not_null(strstr(err.msg, "the server speaks local protocol 6.3 and this client library 6.1"), "%s",
                       err.msg);
    cr_assert_not_null(strstr(err.msg, "upgrade the client library"), "%s", err.msg);
    /* and the server kept serving */
    fs_client_t *c = connect_ok();
    works(c);
    fs_close(c);
}

/* A featstore 0.1 client (local protocol 5: raw structs) gets an error in
 * its own format: {int32 status; char message[500]} under a v5 header. */
Test(local, a_featstore_0_1_client_is_told_to_upgrade_in_its_own_format)
{
    int fd = raw_connect();
    struct { uint32_t api_version, slots; int64_t pid; int32_t reader, pad; } old_hello = {1, 4, getpid(), -1, 0};
    fs_local_hdr_t h = {.magic = FS_LOCAL_MAGIC, .version = 5, .type = FS_LOCAL_HELLO, .len = sizeof old_hello};
    char frame[sizeof h + sizeof old_hello];
    memcpy(frame, &h, sizeof h);
    memcpy(frame + sizeof h, &old_hello, sizeof old_hello);
    cr_assert_eq(send(fd, frame, sizeof frame, 0), (ssize_t)sizeof frame);
    char buf[1024];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    cr_assert_eq(n, (ssize_t)(sizeof h + FS_LOCAL_LEGACY_ERROR_BYTES));
    fs_local_hdr_t got;
    memcpy(&got, buf, sizeof got);
    cr_assert_eq(got.magic, FS_LOCAL_MAGIC);
    cr_assert_eq(got.version, 5, "the old client's own major, or it would not read the error");
    cr_assert_eq(got.type, FS_LOCAL_ERROR);
    cr_assert_eq(got.len, FS_LOCAL_LEGACY_ERROR_BYTES);
    int32_t status;
    memcpy(&status, buf + sizeof h, 4);
    const char *msg = buf + sizeof h + 4;
    cr_assert_eq(status, FS_ERR_VERSION);
    cr_assert_not_null(memchr(msg, 0, 500), "the message is terminated");
    cr_assert_not_null(strstr(msg, "5 (featstore 0.1)"), "%s", msg);
    cr_assert_not_null(strstr(msg, "upgrade the client library"), "%s", msg);
    cr_assert_eq(recv(fd, buf, sizeof buf, 0), 0, "then the server hangs up");
    close(fd);
}

/* A featstore 0.1 server answers a 1.x HELLO with "malformed message" in
 * its own format; the client must say which side to upgrade. */
static void *old_server_main(void *p)
{
    int lfd = *(int *)p, fd = accept(lfd, NULL, NULL);
    char buf[4096];
    if (fd >= 0 && recv(fd, buf, sizeof buf, 0) > 0)
        fs_local_send_legacy_error(fd, 5, FS_ERR_INVALID_ARGUMENT, "unknown or malformed message");
    if (fd >= 0) close(fd);
    return NULL;
}

Test(local, this_client_names_a_featstore_0_1_server)
{
    char path[300];
    snprintf(path, sizeof path, "%s/old.sock", dir);
    int lfd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    strcpy(a.sun_path, path);
    cr_assert_eq(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(listen(lfd, 1), 0);
    pthread_t t;
    pthread_create(&t, NULL, old_server_main, &lfd);
    char u[320];
    snprintf(u, sizeof u, "unix://%s", path);
    fs_client_t *c;
    cr_assert_eq(fs_connect(u, NULL, &c), FS_ERR_VERSION, "%s", fs_client_errstr(c));
    const char *msg = fs_client_errstr(c);
    cr_assert_not_null(strstr(msg, "the server speaks local protocol 5 (featstore 0.1)"), "%s", msg);
    cr_assert_not_null(strstr(msg, "upgrade the server"), "%s", msg);
    cr_assert_null(strstr(fs_strerror(FS_ERR_VERSION), "unknown"), "%s", fs_strerror(FS_ERR_VERSION));
    fs_close(c);
    pthread_join(t, NULL);
    close(lfd);
}

/* Fields added later (proto3) are skipped by older readers: a HELLO with a
 * field this server does not know is accepted. */
Test(local, a_hello_with_fields_from_the_future_is_accepted)
{
    const unsigned char field_99[] = {0x98, 0x06, 0x01, 0xa2, 0x06, 0x03, 'n', 'e', 'w'}; /* 99: varint, 100: "new" */
    int fd = hello(FS_LOCAL_MAJOR, FS_LOCAL_MINOR, field_99, sizeof field_99);
    char buf[FS_LOCAL_MAX_MSG];
    int fds[FS_LOCAL_MAX_FDS], nfds = 0;
    fs_local_frame_t f;
    cr_assert_eq(fs_local_recv(fd, &f, buf, sizeof buf, fds, &nfds, FS_LOCAL_MAX_FDS, 0), 1);
    cr_assert_eq(f.type, FS_LOCAL_WELCOME, "frame type %d", f.type);
    featstore_local_Welcome w = featstore_local_Welcome_init_zero;
    fs_error_t err;
    cr_assert_eq(fs_local_decode(buf, f.len, featstore_local_Welcome_fields, &w, "welcome", &err), FS_OK, "%s", err.msg);
    cr_assert_eq(w.minor, FS_LOCAL_MINOR);
    cr_assert_eq(w.num_slots, 1);
    for (int i = 0; i < nfds; i++) close(fds[i]);
    close(fd);
}

/* The public structs' sizes (featstore/types.h) at the API: a forgotten
 * struct_size and an option from a newer header are clear errors. */
Test(local, struct_size_is_checked_at_the_api)
{
    fs_client_t *c;
    fs_connect_opts_t o = {0};
    cr_assert_eq(fs_connect(uri, &o, &c), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(fs_client_errstr(c), "fs_connect_opts_t.struct_size is 0"), "%s", fs_client_errstr(c));
    fs_close(c);
    struct { fs_connect_opts_t o; int future; } newer = {FS_CONNECT_OPTS_INIT, 0};
    newer.o.struct_size = sizeof newer;
    cr_assert_eq(fs_connect(uri, &newer.o, &c), FS_OK, "an unknown field left 0 is fine: %s", fs_client_errstr(c));
    fs_close(c);
    newer.future = 1;
    cr_assert_eq(fs_connect(uri, &newer.o, &c), FS_ERR_UNSUPPORTED);
    cr_assert_not_null(strstr(fs_client_errstr(c), "upgrade libfeatstore"), "%s", fs_client_errstr(c));
    fs_close(c);

    c = connect_ok();
    int64_t seeds[4] = {0, 1, 2, 3};
    fs_sample_req_t r = {.num_hops = 1, .fanout = {5}}; /* no struct_size */
    fs_batch_t *b;
    cr_assert_eq(fs_sample(c, seeds, 4, &r, &b), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(fs_client_errstr(c), "fs_sample_req_t.struct_size is 0"), "%s", fs_client_errstr(c));
    fs_sample_req_t ok = FS_SAMPLE_REQ_INIT;
    ok.num_hops = 1, ok.fanout[0] = 5;
    cr_assert_eq(fs_sample(c, seeds, 4, &ok, &b), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(b->kind, FS_BATCH_SAMPLE);
    cr_assert_eq(b->num_hops, 1);
    cr_assert_null(b->features, "a sample has no feature part");
    fs_batch_free(b);
    cr_assert_eq(fs_gather(c, seeds, 4, "feat", FS_DTYPE_INVALID, &b), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(b->kind, FS_BATCH_GATHER);
    cr_assert_eq(b->num_hops, 0);
    cr_assert_null(b->blocks, "a gather has no sample part");
    fs_batch_free(b);
    fs_close(c);
}

/* A peer that hangs up with our frames unread resets the socket, and Linux
 * reports the reset before the frame the peer sent first: the server's
 * refusals (a uid not allowed, a handshake timeout) raced with the
 * client's HELLO and reached it as "Connection reset by peer" instead of
 * the reason (seen in CI, test_local_guards). fs_local_recv reads past the
 * reset to that frame; a reset with no frame behind it reads as closed. */
Test(local_frames, the_error_a_peer_left_before_hanging_up_is_read_past_the_reset)
{
    int sv[2];
    char buf[2048];
    int fds[FS_LOCAL_MAX_FDS], nfds = 0;
    fs_local_frame_t f;
    cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
    cr_assert_eq(fs_local_send(sv[0], FS_LOCAL_HELLO, "hello", 5, NULL, 0, 0), 0); /* never read */
    cr_assert_eq(fs_local_send_error(sv[1], FS_ERR_PERMISSION, "uid 65534 may not connect", 0), 0);
    close(sv[1]);
    cr_assert_eq(fs_local_recv(sv[0], &f, buf, sizeof buf, fds, &nfds, FS_LOCAL_MAX_FDS, 0), 1, "%s",
                 strerror(errno));
    cr_assert_eq(f.type, FS_LOCAL_ERROR);
    featstore_local_Error e = featstore_local_Error_init_zero;
    fs_error_t err;
    cr_assert_eq(fs_local_decode(buf, f.len, featstore_local_Error_fields, &e, "error", &err), FS_OK);
    cr_assert_eq(e.status, FS_ERR_PERMISSION);
    cr_assert_str_eq(e.message, "uid 65534 may not connect");
    cr_assert_eq(fs_local_recv(sv[0], &f, buf, sizeof buf, fds, &nfds, FS_LOCAL_MAX_FDS, 0), 0, "then closed");
    close(sv[0]);

    cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0); /* a reset with nothing behind it */
    cr_assert_eq(fs_local_send(sv[0], FS_LOCAL_HELLO, "hello", 5, NULL, 0, 0), 0);
    close(sv[1]);
    cr_assert_eq(fs_local_recv(sv[0], &f, buf, sizeof buf, fds, &nfds, FS_LOCAL_MAX_FDS, 0), 0, "%s",
                 strerror(errno));
    close(sv[0]);
}
