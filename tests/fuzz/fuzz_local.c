/* fuzz_local.c — libFuzzer harness for the unix:// protocol (proto/fs_local.c
 * and the featstore_local.proto messages both ends decode).
 *
 * The first input byte picks what the rest is:
 *   FRAME      a datagram on a SOCK_SEQPACKET socketpair, with 0-3
 *              descriptors beside it (second byte), received by
 *              fs_local_recv into a buffer of full or tiny capacity: a frame
 *              comes back only when it is well-formed and whole (header facts
 *              = the bytes), anything else is EPROTO, EMSGSIZE (longer than
 *              the buffer) or EPROTONOSUPPORT (another major), and no
 *              descriptor is ever leaked, whatever happens;
 *   HELLO ... INFO_REPLY
 *              one message payload, decoded as the receiving end does
 *              (lists into arrays, InfoResponse into an fs_info_t);
 *   NEGOTIATE  versions for fs_local_negotiate: a peer of our major at most
 *              one minor apart gets the lower minor, anything else
 *              FS_ERR_VERSION saying which side to upgrade;
 *   SESSION    clients' conversations with one live server that lasts the
 *              whole run, so what many clients leave behind is fuzzed too
 *              (fuzz_local_server.h says what is checked);
 *   SHARD_HELLO, SHARD_PART
 *              a shard socket's messages (6.4), decoded as the shard and
 *              the trainer decode them.
 * A decoded message must be a fixed point of the codec: encoding it,
 * decoding that and encoding again gives the same bytes, so what one end
 * understood is what the other end would have sent. A payload that does
 * not decode is FS_ERR_FORMAT with nanopb's reason. Hello also goes through
 * the version check the server makes. */
#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_local.h"
#include "fuzz_codec.h"
#include "fuzz_local_server.h"

enum { FRAME, HELLO, WELCOME, REPORT, SPLIT_REQ, SPLIT_REPLY, REPLAN_REQ, REPLAN_REPLY, ERROR_MSG, INFO_REPLY,
       NEGOTIATE, SESSION, SHARD_HELLO, SHARD_PART, KINDS };

static int sv[2] = {-1, -1}, devnull = -1, lowest_free_fd = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    session_start(); /* first: its descriptors (a /dev/null reserve among them) lie below lowest_free_fd */
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0 ||
        (devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
        perror("fuzz_local: socketpair");
        exit(1);
    }
    int sz = 1 << 20;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
    lowest_free_fd = dup(devnull);
    close(lowest_free_fd);
    return 0;
}

/* ---- frames ------------------------------------------------------------------------ */

static int send_raw(const uint8_t *p, size_t n, int nfds)
{
    int fds[3];
    for (int i = 0; i < nfds; i++) fds[i] = devnull;
    struct iovec iov = {(void *)p, n};
    union {
        char buf[CMSG_SPACE(sizeof fds)];
        struct cmsghdr align;
    } ctl;
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    if (nfds > 0) {
        memset(&ctl, 0, sizeof ctl);
        msg.msg_control = ctl.buf;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET, c->cmsg_type = SCM_RIGHTS, c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
    }
    return sendmsg(sv[0], &msg, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)n ? 0 : -1;
}

static void fuzz_frame(fuzz_bytes_t in)
{
    uint8_t opt = fuzz_take_u8(&in);
    int nfds = opt & 3, max_fds = (opt >> 2) & 3;
    size_t cap = (opt >> 4) ? (size_t)(opt >> 4) * 4 : FS_LOCAL_MAX_MSG; /* tiny buffers: truncated frames */
    if (send_raw(in.p, in.n, nfds) != 0) return; /* larger than a datagram may be: not a frame */
    static uint8_t buf[FS_LOCAL_MAX_MSG];
    int got[4] = {-1, -1, -1, -1}, ngot = -1;
    fs_local_frame_t f = {0};
    errno = 0;
    int rc = fs_local_recv(sv[1], &f, buf, cap, got, &ngot, max_fds, MSG_DONTWAIT);
    int well_formed = 0;
    fs_local_hdr_t h;
    if (in.n >= sizeof h) {
        memcpy(&h, in.p, sizeof h);
        well_formed = h.magic == FS_LOCAL_MAGIC && h.len == in.n - sizeof h && h.len <= cap;
    }
    if (rc == 1) {
        FUZZ_CHECK(well_formed && h.version == FS_LOCAL_MAJOR, "a malformed frame was accepted");
        FUZZ_CHECK(f.type == h.type && f.major == h.version && f.len == h.len &&
                   memcmp(buf, in.p + sizeof h, f.len) == 0, "frame facts differ from its bytes");
        FUZZ_CHECK(ngot == (nfds < max_fds ? nfds : max_fds), "%d descriptors back of %d sent, %d wanted", ngot,
                   nfds, max_fds);
    } else if (rc == 0) {
        FUZZ_CHECK(in.n == 0 && ngot == 0, "a %zu-byte datagram read as end of stream, %d descriptors", in.n, ngot);
    } else {
        FUZZ_CHECK(errno == EPROTO || errno == EPROTONOSUPPORT || errno == EMSGSIZE, "errno %d", errno);
        FUZZ_CHECK((errno == EMSGSIZE) == (in.n > sizeof h + cap), "errno %d for %zu bytes into %zu", errno, in.n,
                   cap);
        FUZZ_CHECK(ngot == 0, "descriptors handed out with an error");
        FUZZ_CHECK((errno == EPROTONOSUPPORT) == (well_formed && h.version != FS_LOCAL_MAJOR),
                   "well-formed %d, major %u, errno %d", well_formed, well_formed ? h.version : 0, errno);
        if (errno == EPROTONOSUPPORT) FUZZ_CHECK(f.major == h.version && f.type == h.type, "other major's facts");
    }
    for (int i = 0; i < ngot && i < 4; i++) close(got[i]);
    while (recv(sv[1], buf, sizeof buf, MSG_DONTWAIT) >= 0) {} /* nothing may be left queued */
    /* every descriptor that came in was handed out (and closed above) or
     * closed: none of the copies of /dev/null sent may be left open. Only
     * those count: the runtime (libFuzzer, the sanitizers) may hold a
     * descriptor of its own for a while, which once failed CI here. */
    int probe = dup(devnull);
    struct stat null_st, st;
    fstat(devnull, &null_st);
    for (int fd = lowest_free_fd; fd < probe; fd++)
        FUZZ_CHECK(fstat(fd, &st) != 0 || st.st_dev != null_st.st_dev || st.st_ino != null_st.st_ino,
                   "descriptor leak: fd %d is a received copy of /dev/null (lowest free fd was %d)", fd,
                   lowest_free_fd);
    close(probe);
}

/* ---- messages ------------------------------------------------------------------------ */

static fs_status_t decode_payload(const codec_t *c, const uint8_t *p, size_t n, int first, void *msg, void **keep,
                                  fs_error_t *err)
{
    (void)first, (void)keep;
    return fs_local_decode(p, n, c->type, msg, c->name, err);
}

static const fuzz_decoder_t payload_decoder = {decode_payload, NULL};

static void welcome_decode(void *msg, void *state)
{
    featstore_local_Welcome *w = msg;
    fuzz_lists_t *s = state;
    FS_PB_INTO_ARRAY(&s->l[0], featstore_local_Table, &s->a[0]);
    FS_PB_INTO_ARRAY(&s->l[1], featstore_local_Tier, &s->a[1]);
    FS_PB_INTO_ARRAY(&s->l[2], featstore_local_Slice, &s->a[2]);
    FS_PB_INTO_ARRAY(&s->l[3], featstore_local_TopoPart, &s->a[3]);
    fs_pb_set_list(&w->tables, &s->l[0]);
    fs_pb_set_list(&w->tiers, &s->l[1]);
    fs_pb_set_list(&w->slices, &s->l[2]);
    fs_pb_set_list(&w->topo_parts, &s->l[3]);
}

static int welcome_encode(void *msg, void *state)
{
    featstore_local_Welcome *w = msg;
    fuzz_lists_t *s = state;
    FS_PB_FROM_ARRAY(&s->l[0], featstore_local_Table, s->a[0].items, s->a[0].count);
    FS_PB_FROM_ARRAY(&s->l[1], featstore_local_Tier, s->a[1].items, s->a[1].count);
    FS_PB_FROM_ARRAY(&s->l[2], featstore_local_Slice, s->a[2].items, s->a[2].count);
    FS_PB_FROM_ARRAY(&s->l[3], featstore_local_TopoPart, s->a[3].items, s->a[3].count);
    fs_pb_set_list(&w->tables, &s->l[0]);
    fs_pb_set_list(&w->tiers, &s->l[1]);
    fs_pb_set_list(&w->slices, &s->l[2]);
    fs_pb_set_list(&w->topo_parts, &s->l[3]);
    return 0;
}

static void report_decode(void *msg, void *state)
{
    featstore_local_Report *r = msg;
    fuzz_lists_t *s = state;
    FS_PB_INTO_ARRAY(&s->l[0], featstore_local_TierCount, &s->a[0]);
    FS_PB_INTO_ARRAY(&s->l[1], featstore_local_TierCount, &s->a[1]);
    fs_pb_set_list(&r->features, &s->l[0]);
    fs_pb_set_list(&r->topology, &s->l[1]);
}

static int report_encode(void *msg, void *state)
{
    featstore_local_Report *r = msg;
    fuzz_lists_t *s = state;
    FS_PB_FROM_ARRAY(&s->l[0], featstore_local_TierCount, s->a[0].items, s->a[0].count);
    FS_PB_FROM_ARRAY(&s->l[1], featstore_local_TierCount, s->a[1].items, s->a[1].count);
    fs_pb_set_list(&r->features, &s->l[0]);
    fs_pb_set_list(&r->topology, &s->l[1]);
    return 0;
}

/* The server's first check of a HELLO: the versions (server/local.c). */
static void hello_check(const void *msg, void *state)
{
    (void)state;
    const featstore_local_Hello *h = msg;
    unsigned minor = 99;
    fs_error_t err = {0};
    fs_status_t st = fs_local_negotiate(FS_LOCAL_MINOR, h->major, h->minor, 1, &minor, &err);
    unsigned gap = h->minor > FS_LOCAL_MINOR ? h->minor - FS_LOCAL_MINOR : FS_LOCAL_MINOR - h->minor;
    FUZZ_CHECK((st == FS_OK) == (h->major == FS_LOCAL_MAJOR && gap <= 1), "HELLO %u.%u: status %d", h->major,
               h->minor, st);
    if (st == FS_OK) FUZZ_CHECK(minor == (h->minor < FS_LOCAL_MINOR ? h->minor : FS_LOCAL_MINOR), "minor %u", minor);
    else FUZZ_CHECK(st == FS_ERR_VERSION && strstr(err.msg, "upgrade the") != NULL, "refusal: %s", err.msg);
    FUZZ_CHECK(memchr(h->library_version, '\0', sizeof h->library_version) != NULL, "library_version unterminated");
}

/* What a shard's socket and a trainer read of these: strings terminated. */
static void shard_hello_check(const void *msg, void *state)
{
    (void)state;
    const featstore_local_ShardHello *h = msg;
    FUZZ_CHECK(memchr(h->partitioning, '\0', sizeof h->partitioning) != NULL, "partitioning unterminated");
}

static void shard_part_check(const void *msg, void *state)
{
    (void)state;
    const featstore_local_ShardPart *m = msg;
    FUZZ_CHECK(memchr(m->partitioning, '\0', sizeof m->partitioning) != NULL, "partitioning unterminated");
}

static void error_check(const void *msg, void *state)
{
    (void)state;
    const featstore_local_Error *e = msg;
    FUZZ_CHECK(memchr(e->message, '\0', sizeof e->message) != NULL, "message unterminated");
}

static const codec_t codecs[KINDS] = {
    [HELLO] = FUZZ_STATIC_CODEC(featstore_local_Hello, hello_check),
    [WELCOME] = {"featstore_local_Welcome", featstore_local_Welcome_fields, sizeof(featstore_local_Welcome),
                 sizeof(fuzz_lists_t), welcome_decode, welcome_encode, fuzz_lists_free, NULL, NULL},
    [REPORT] = {"featstore_local_Report", featstore_local_Report_fields, sizeof(featstore_local_Report),
                sizeof(fuzz_lists_t), report_decode, report_encode, fuzz_lists_free, NULL, NULL},
    [SPLIT_REQ] = FUZZ_STATIC_CODEC(featstore_local_SplitRequest, NULL),
    [SPLIT_REPLY] = FUZZ_STATIC_CODEC(featstore_local_SplitReply, NULL),
    [REPLAN_REQ] = FUZZ_STATIC_CODEC(featstore_local_ReplanRequest, NULL),
    [REPLAN_REPLY] = FUZZ_STATIC_CODEC(featstore_local_ReplanReply, NULL),
    [ERROR_MSG] = FUZZ_STATIC_CODEC(featstore_local_Error, error_check),
    [INFO_REPLY] = FUZZ_INFO_CODEC,
    [SHARD_HELLO] = FUZZ_STATIC_CODEC(featstore_local_ShardHello, shard_hello_check),
    [SHARD_PART] = FUZZ_STATIC_CODEC(featstore_local_ShardPart, shard_part_check),
};

static uint32_t take_u32(fuzz_bytes_t *b)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v = v << 8 | fuzz_take_u8(b);
    return v;
}

static void fuzz_negotiate(fuzz_bytes_t in)
{
    uint8_t opt = fuzz_take_u8(&in);
    unsigned ours = opt >> 1, major = take_u32(&in), theirs = take_u32(&in), minor = 99;
    fs_error_t err = {0};
    fs_status_t st = fs_local_negotiate(ours, major, theirs, opt & 1, &minor, &err);
    unsigned gap = ours > theirs ? ours - theirs : theirs - ours;
    FUZZ_CHECK((st == FS_OK) == (major == FS_LOCAL_MAJOR && gap <= 1), "%u vs %u.%u: status %d", ours, major, theirs,
               st);
    if (st == FS_OK) {
        FUZZ_CHECK(minor == (ours < theirs ? ours : theirs), "%u vs %u: minor %u", ours, theirs, minor);
    } else {
        FUZZ_CHECK_REFUSAL(st, err);
        FUZZ_CHECK(st == FS_ERR_VERSION && strstr(err.msg, "upgrade the") != NULL, "refusal: %s", err.msg);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_bytes_t in = {data, size};
    int kind = fuzz_take_u8(&in) % KINDS;
    if (kind == FRAME) fuzz_frame(in);
    else if (kind == NEGOTIATE) fuzz_negotiate(in);
    else if (kind == SESSION) session_run(in);
    else fuzz_codec_run(&codecs[kind], &payload_decoder, in.p, in.n);
    return 0;
}
