/* client_local.c — the unix:// transport: zero-copy, in-process.
 *
 * At connect the server passes read-only descriptors of the dataset's files,
 * this reader's placement and a ring of memfd result slots (proto/fs_local.h
 * describes the conversation). This process maps the files and builds the
 * same views the server would (client_local_map.c), and hosts the request
 * executor itself (exec/fs_exec.h): each call runs the engines here, into a
 * result slot of this process's own memory (client_local_slot.c), and the
 * batch points into it. After each call a small REPORT of what it read goes
 * to the server for its metrics, sent without waiting.
 *
 * GPU trainers: when the placement puts this reader's rows in GPU memory
 * (device tiers), the executor runs the reader GPU's engines: sampling is
 * fs_sample_cuda (its result comes back to the host slot) and the gather
 * writes into the slot's device twin.
 *
 * Lifetime: the connection's state is reference-counted (one reference for
 * the connection, one per outstanding batch), so a batch stays valid even
 * after fs_close until it is freed.
 *
 * Fork: a child inherits the socket, so its requests would interleave with
 * the parent's (client.c refuses its calls), and copies of the slots. Its
 * fs_close and fs_batch_free release only its own copies:
 * closing its duplicate of the socket ends nothing while the parent holds
 * the original, nothing is sent, and the worker pool's threads, which exist
 * only in the opener, are not joined (joining a thread the child does not
 * have is undefined; the pool's memory is left). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "client_local_internal.h"
#include "fs_device.h"
#include "fs_hetero.h"

static unsigned speak_minor = FS_LOCAL_MINOR; /* fs_local_client_protocol */

void fs_local_client_protocol(unsigned minor) { speak_minor = minor < FS_LOCAL_MINOR ? minor : FS_LOCAL_MINOR; }

typedef struct {
    fs_batch_priv_t priv;
    local_t *L;
    int slot;
} local_batch_t;

typedef struct {
    fs_hetero_priv_t priv;
    local_t *L;
    int slot;
} local_hetero_t;

/* ---- lifetime ----------------------------------------------------------------- */

static void typed_free(typed_t *T)
{
    fs_typed_sampler_destroy(T->sampler);
    if (T->ds) fs_exec_typed_graph_free(&T->graph);
    fs_dataset_close(T->ds);
    if (T->manifest_fd >= 0) close(T->manifest_fd);
    for (size_t i = 0; i < T->num_files; i++) {
        free(T->names[i]);
        close(T->fds[i]);
    }
    free(T->names);
    free(T->fds);
}

void fs_local_unref(local_t *L)
{
    pthread_mutex_lock(&L->lock);
    int last = --L->refs == 0;
    pthread_mutex_unlock(&L->lock);
    if (!last) return;
    for (int i = 0; i < L->num_slots; i++)
        if (L->opener == getpid()) fs_cuda_free_device(L->slots[i].dev); /* a forked child has no CUDA context */
    fs_local_warm_release(L);
    fs_local_layout_free(L->lay);
    if (L->notice) munmap((void *)L->notice, FS_LOCAL_NOTICE_BYTES);
    fs_sampler_destroy(L->sampler);
    typed_free(&L->typed);
    if (L->opener == getpid()) fs_pool_destroy(L->pool); /* a forked child has no such threads to join */
    free(L->buf);
    pthread_mutex_destroy(&L->lock);
    free(L);
}

static void local_close(fs_client_t *c)
{
    local_t *L = c->impl;
    if (!L) return;
    if (L->sock >= 0) close(L->sock);
    L->sock = -1;
    fs_local_unref(L);
    c->impl = NULL;
}

/* ---- slots -------------------------------------------------------------------- */

/* Whether every slot is free (no batch of this connection's alive) and
 * the connection still up: a stream may hand it to the next one. */
static int local_idle(fs_client_t *c)
{
    local_t *L = c->impl;
    if (!L || L->sock < 0) return 0;
    pthread_mutex_lock(&L->lock);
    int busy = 0;
    for (int i = 0; i < L->num_slots; i++) busy |= L->slots[i].busy;
    pthread_mutex_unlock(&L->lock);
    return !busy;
}

static void release_batch(fs_batch_priv_t *p)
{
    local_batch_t *b = (local_batch_t *)p;
    fs_local_slot_release(b->L, b->slot);
    free(b);
}

/* ---- replies ------------------------------------------------------------------- */

/* Waits for one frame, within the connection's timeout (or `floor_ms` when
 * none is set, so a server that accepted but never answers cannot hang the
 * handshake forever). An ERROR frame fails with the server's status and
 * message; a frame of another major version with the versions named. */
static fs_status_t recv_frame(fs_client_t *c, local_t *L, int floor_ms, fs_local_frame_t *f, int *fds, int *nfds,
                              int max_fds)
{
    struct pollfd p = {.fd = L->sock, .events = POLLIN};
    int ms = L->timeout_ms > 0 ? L->timeout_ms : floor_ms;
    if (poll(&p, 1, ms) == 0) return fs_client_fail(c, FS_ERR_TIMEOUT, "no answer from the server within %d ms", ms);
    int got = fs_local_recv(L->sock, f, L->buf, FS_LOCAL_MAX_MSG, fds, nfds, max_fds, 0);
    fs_error_t err = {0};
    unsigned minor;
    if (got < 0 && errno == EPROTONOSUPPORT) {
        fs_local_negotiate(speak_minor, f->major, 0, 0, &minor, &err); /* fails: another major */
        return fs_client_fail(c, err.code, "%s", err.msg);
    }
    if (got < 0 && errno == EPROTO) return fs_client_fail(c, FS_ERR_FORMAT, "malformed message from the server");
    if (got <= 0)
        return fs_client_fail(c, FS_ERR_UNAVAILABLE, "the server closed the connection%s%s", got ? ": " : "",
                              got ? strerror(errno) : "");
    if (f->type != FS_LOCAL_ERROR) return FS_OK;
    featstore_local_Error e = featstore_local_Error_init_zero;
    if (fs_local_decode(L->buf, f->len, featstore_local_Error_fields, &e, "error reply", &err) != FS_OK)
        return fs_client_fail(c, err.code, "%s", err.msg);
    fs_status_t st = e.status > 0 && e.status < FS_STATUS_COUNT_ ? (fs_status_t)e.status : FS_ERR_INTERNAL;
    return fs_client_fail(c, st, "server: %s", e.message);
}

/* One request, one reply of type `reply` (with at most one descriptor,
 * into *fd when fd is not NULL); the payload is in L->buf. */
static fs_status_t ask(fs_client_t *c, int type, const pb_msgdesc_t *fields, const void *msg, int reply, size_t *len,
                       int *fd)
{
    local_t *L = c->impl;
    if (L->sock < 0) return fs_client_fail(c, FS_ERR_UNAVAILABLE, "not connected");
    int rc = fields ? fs_local_send_msg(L->sock, type, fields, msg, NULL, 0, 0)
                    : fs_local_send(L->sock, type, NULL, 0, NULL, 0, 0);
    if (rc != 0) return fs_client_fail(c, FS_ERR_UNAVAILABLE, "the server went away: %s", strerror(errno));
    fs_local_frame_t f;
    int nfds = 0;
    fs_status_t st = recv_frame(c, L, -1, &f, fd, &nfds, fd ? 1 : 0);
    if (fd && nfds == 0) *fd = -1;
    if (st == FS_OK && f.type != reply) st = fs_client_fail(c, FS_ERR_FORMAT, "unexpected reply type %d", f.type);
    *len = f.len;
    return st;
}

/* ---- the handshake ----------------------------------------------------------------- */

static void fd_list_close(fs_fd_list_t *l)
{
    for (size_t i = l->next; i < l->n; i++) close(l->fd[i]);
    free(l->fd);
    memset(l, 0, sizeof *l);
}

/* A WELCOME (the frame just received, in L->buf) into Y and its
 * descriptors, continued in FDS frames, into fds. */
/* Welcome.files, one name at a time. */
static bool put_file_name(void *ctx, const char *name, size_t len)
{
    layout_t *Y = ctx;
    if ((Y->num_files & (Y->num_files - 1)) == 0) { /* 0 or a power of two: grow */
        char **grown = realloc(Y->files, (Y->num_files ? 2 * Y->num_files : 8) * sizeof *grown);
        if (!grown) return false;
        Y->files = grown;
    }
    return (Y->files[Y->num_files] = strndup(name, len)) != NULL && ++Y->num_files;
}

static fs_status_t take_welcome(fs_client_t *c, local_t *L, const fs_local_frame_t *f, const int *first, int nfirst,
                                layout_t *Y, fs_fd_list_t *fds)
{
    fs_pb_list_t tables, tiers, slices, parts;
    fs_pb_strings_t files = {.put = put_file_name, .ctx = Y};
    FS_PB_INTO_ARRAY(&tables, featstore_local_Table, &Y->tables);
    FS_PB_INTO_ARRAY(&tiers, featstore_local_Tier, &Y->tiers);
    FS_PB_INTO_ARRAY(&slices, featstore_local_Slice, &Y->slices);
    FS_PB_INTO_ARRAY(&parts, featstore_local_TopoPart, &Y->parts);
    Y->w = (featstore_local_Welcome)featstore_local_Welcome_init_zero;
    fs_pb_set_list(&Y->w.tables, &tables);
    fs_pb_set_list(&Y->w.tiers, &tiers);
    fs_pb_set_list(&Y->w.slices, &slices);
    fs_pb_set_list(&Y->w.topo_parts, &parts);
    fs_pb_set_strings(&Y->w.files, &files);
    for (int i = 0; i < nfirst; i++)
        if (fs_fd_list_push(fds, first[i]) != 0) {
            for (int j = i; j < nfirst; j++) close(first[j]);
            return fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
        }
    fs_error_t err = {0};
    if (f->type != FS_LOCAL_WELCOME) return fs_client_fail(c, FS_ERR_FORMAT, "unexpected handshake reply %d", f->type);
    if (fs_local_decode(L->buf, f->len, featstore_local_Welcome_fields, &Y->w, "WELCOME", &err) != FS_OK)
        return fs_client_fail(c, err.code, "%s", err.msg);
    while (fds->n < Y->w.num_fds) {
        int more[FS_LOCAL_MAX_FDS], n = 0;
        fs_local_frame_t g;
        fs_status_t st = recv_frame(c, L, 30000, &g, more, &n, FS_LOCAL_MAX_FDS);
        for (int i = 0; i < n; i++)
            if (st != FS_OK || g.type != FS_LOCAL_FDS || fs_fd_list_push(fds, more[i]) != 0) close(more[i]);
        if (st != FS_OK) return st;
        if (g.type != FS_LOCAL_FDS || n == 0)
            return fs_client_fail(c, FS_ERR_FORMAT, "the server's handshake ended after %zu of %u descriptors",
                                  fds->n, Y->w.num_fds);
    }
    return FS_OK;
}

/* The handshake's facts, checked before anything is mapped. */
static fs_status_t check_welcome(fs_client_t *c, const layout_t *Y, int hello, int reader, int slots)
{
    const featstore_local_Welcome *w = &Y->w;
    fs_error_t err = {0};
    unsigned minor;
    if (w->major != FS_LOCAL_MAJOR || fs_local_negotiate(speak_minor, w->major, w->minor, 0, &minor, &err) != FS_OK ||
        minor != w->minor)
        return fs_client_fail(c, FS_ERR_VERSION, "the server settled on local protocol %u.%u, which this client "
                              "library (%u.%u) does not speak", w->major, w->minor, FS_LOCAL_MAJOR, speak_minor);
    int bad = Y->tiers.count < 1 || Y->tiers.count > FS_MAX_TIERS || w->las_levels > FS_MAX_HOPS ||
              w->generation < 1 || w->reader != reader || w->num_nodes < 0 || w->num_edges < 0 ||
              w->num_slots != (uint32_t)(hello ? slots : 0) ||
              (strcmp(w->index_dtype, "int32") != 0 && strcmp(w->index_dtype, "int64") != 0);
    for (size_t i = 0; i < Y->slices.count && !bad; i++) {
        const featstore_local_Slice *s = (const featstore_local_Slice *)Y->slices.items + i;
        bad = s->table >= Y->tables.count || s->tier < 1 || s->tier >= Y->tiers.count || s->rows <= 0;
    }
    for (size_t i = 0; i < Y->parts.count && !bad; i++) {
        const featstore_local_TopoPart *p = (const featstore_local_TopoPart *)Y->parts.items + i;
        bad = p->tier < 1 || p->tier >= Y->tiers.count || p->rows <= 0;
    }
    for (size_t i = 0; i < Y->tables.count && !bad; i++) {
        const featstore_local_Table *t = fs_local_table_at(Y, i);
        fs_dtype_t dt = fs_dtype_from_name(t->dtype);
        fs_codec_t codec = fs_codec_from_name(t->codec);
        bad = !fs_dtype_size(dt) || t->rows < 0 || t->dim < 0 || codec == FS_CODEC_COUNT_ ||
              !fs_codec_fits(codec, dt, t->dim);
    }
    if (bad) return fs_client_fail(c, FS_ERR_FORMAT, "malformed handshake from the server");
    return FS_OK;
}

/* Receives and maps a WELCOME (a reply to HELLO or RELAYOUT). On success
 * the layout is *out and, after HELLO, the slot descriptors are the last
 * ones of fds. */
static fs_status_t recv_welcome(fs_client_t *c, local_t *L, int hello, int slots, layout_t **out, fs_fd_list_t *fds,
                                int *notice_fd)
{
    layout_t *Y = calloc(1, sizeof *Y);
    if (!Y) return fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    int first[FS_LOCAL_MAX_FDS], nfirst = 0;
    fs_local_frame_t f;
    fs_status_t st = recv_frame(c, L, 30000, &f, first, &nfirst, FS_LOCAL_MAX_FDS);
    if (st != FS_OK)
        for (int i = 0; i < nfirst; i++) close(first[i]);
    if (st == FS_OK) st = take_welcome(c, L, &f, first, nfirst, Y, fds);
    if (st == FS_OK) st = check_welcome(c, Y, hello, L->reader, slots);
    if (st == FS_OK) st = fs_local_layout_map(c, Y, fds, hello, L->reader, notice_fd);
    if (st != FS_OK) {
        fs_local_layout_free(Y);
        return st;
    }
    *out = Y;
    return FS_OK;
}

static const fs_transport_ops_t local_ops;

static fs_status_t parse_device(fs_client_t *c, int *reader)
{
    const char *dev = c->opts.device;
    *reader = -1;
    if (dev && strcmp(dev, "cpu") != 0 && (sscanf(dev, "gpu:%d", reader) != 1 || *reader < 0 || *reader > 15))
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "device '%s' must be \"cpu\" or \"gpu:N\" with N < 16", dev);
    return FS_OK;
}

/* What a request with locality > 1 lacks when the server sent no preferred
 * sets for this reader: a GPU to read as, or a placement that planned it. */
static void say_no_las(local_t *L)
{
    if (L->reader < 0)
        snprintf(L->no_las, sizeof L->no_las, "locality-aware sampling needs a placement and a reader GPU: connect "
                 "with device \"gpu:N\" (this connection reads as the CPU, which has no GPU rows to prefer)");
    else
        snprintf(L->no_las, sizeof L->no_las, "locality-aware sampling needs a placement and a reader GPU: the "
                 "server has no preferred sets for gpu:%d (serve with --topology, and connect with the device of a "
                 "planned GPU)", L->reader);
}

static fs_status_t send_hello(fs_client_t *c, local_t *L, const char *path)
{
    featstore_local_Hello h = {.major = FS_LOCAL_MAJOR, .minor = speak_minor, .slots = (uint32_t)c->opts.slots,
                               .pid = getpid(), .reader = L->reader};
    if (speak_minor >= 1) snprintf(h.library_version, sizeof h.library_version, "%s", fs_version());
    if (fs_local_send_msg(L->sock, FS_LOCAL_HELLO, featstore_local_Hello_fields, &h, NULL, 0, 0) == 0) return FS_OK;
    int why = errno;
    fs_local_frame_t f;
    fs_status_t st = FS_OK;
    /* a server that refused this peer at accept (its uid, a cap) sent an ERROR saying why, then hung up */
    if ((why == EPIPE || why == ECONNRESET) && (st = recv_frame(c, L, 100, &f, NULL, NULL, 0)) != FS_OK) return st;
    return fs_client_fail(c, FS_ERR_UNAVAILABLE, "unix://%s: %s", path, strerror(why));
}

/* The notice page, the slots, the engines: what a connection needs besides
 * its layout. */
static fs_status_t finish_connect(fs_client_t *c, local_t *L, fs_fd_list_t *fds, int notice_fd)
{
    L->notice = mmap(NULL, FS_LOCAL_NOTICE_BYTES, PROT_READ, MAP_SHARED, notice_fd, 0);
    if (L->notice == MAP_FAILED) {
        L->notice = NULL;
        return fs_client_fail(c, FS_ERR_IO, "cannot map the server's notice page: %s", strerror(errno));
    }
    const featstore_local_Welcome *w = &L->lay->w;
    while (L->num_slots < (int)w->num_slots) { /* the server's memfds: unused (client_local_slot.c) */
        close(fds->fd[fds->next++]);
        L->slots[L->num_slots++] = (slot_t){0};
    }
    fs_local_warm_take(L);
    if (w->manifest_bytes) { /* 6.3: the manifest and the files, kept for the first typed call */
        typed_t *T = &L->typed;
        T->manifest_fd = fds->fd[fds->next++];
        T->manifest_bytes = w->manifest_bytes;
        T->names = L->lay->files, T->num_files = L->lay->num_files;
        L->lay->files = NULL, L->lay->num_files = 0;
        if (!(T->fds = calloc(T->num_files + 1, sizeof *T->fds))) {
            T->num_files = 0;
            return fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
        }
        for (size_t i = 0; i < T->num_files; i++) T->fds[i] = fds->fd[fds->next++];
    }
    L->limits = (fs_limits_t){w->max_ids, w->max_fanout_product, w->max_response_bytes, w->num_nodes, w->num_edges};
    fs_error_t err = {0};
    if (fs_sampler_create(&L->sampler, &err) || fs_pool_create(c->opts.threads, &L->pool, &err))
        return fs_client_fail(c, FS_ERR_NOMEM, "%s", err.msg);
    fs_sampler_set_pool(L->sampler, L->pool); /* the client's threads split each batch's hops too */
    return FS_OK;
}

#define HANDSHAKE_TIMEOUT_MS 30000

fs_status_t fs_local_connect(fs_client_t *c, const char *path)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "socket path too long");
    strcpy(a.sun_path, path);
    local_t *L = calloc(1, sizeof *L);
    if (!L) return fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    pthread_mutex_init(&L->lock, NULL);
    L->refs = 1;
    L->sock = -1;
    L->opener = getpid();
    L->timeout_ms = c->opts.timeout_ms;
    L->typed.manifest_fd = -1;
    c->impl = L;
    c->ops = &local_ops;
    if (!(L->buf = malloc(FS_LOCAL_MAX_MSG))) return fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    fs_status_t st = parse_device(c, &L->reader);
    if (st != FS_OK) return st;
    say_no_las(L);
    L->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (L->sock < 0 || connect(L->sock, (struct sockaddr *)&a, sizeof a) != 0)
        return fs_client_fail(c, FS_ERR_UNAVAILABLE, "cannot connect to unix://%s: %s", path, strerror(errno));
    fs_fd_list_t fds = {0};
    int notice_fd = -1;
    st = send_hello(c, L, path);
    if (st == FS_OK) st = recv_welcome(c, L, 1, c->opts.slots, &L->lay, &fds, &notice_fd);
    size_t mapped = fds.next;                                      /* closed below: their mappings remain */
    if (st == FS_OK) st = finish_connect(c, L, &fds, notice_fd);   /* takes the slots' descriptors */
    for (size_t i = 0; i < mapped; i++) close(fds.fd[i]);
    if (fds.next < mapped) fds.next = mapped;
    fd_list_close(&fds); /* what is left was not taken: closed */
    return st;
}

/* ---- following a re-plan ---------------------------------------------------------- */

/* Maps the placement the server serves now beside the old one, then drops
 * the old. On failure the call fails and the connection keeps the old
 * placement (still valid: its memory lives while mapped); the next call
 * tries again. Batches are in result slots, untouched. */
static fs_status_t relayout(fs_client_t *c, local_t *L)
{
    if (fs_local_send(L->sock, FS_LOCAL_RELAYOUT, NULL, 0, NULL, 0, 0) != 0)
        return fs_client_fail(c, FS_ERR_UNAVAILABLE, "the server went away: %s", strerror(errno));
    fs_fd_list_t fds = {0};
    layout_t *Y = NULL;
    int notice_fd = -1;
    fs_status_t st = recv_welcome(c, L, 0, 0, &Y, &fds, &notice_fd);
    fds.next = 0;
    fd_list_close(&fds); /* mapped, or not wanted */
    if (st != FS_OK) return st;
    fs_local_layout_free(L->lay);
    L->lay = Y;
    return FS_OK;
}

/* Before each call: one load of the notice page. */
static fs_status_t follow_placement(fs_client_t *c, local_t *L)
{
    uint64_t notice = atomic_load_explicit(L->notice, memory_order_acquire);
    if (notice <= L->lay->w.generation) return FS_OK;
    if (notice == FS_LOCAL_NOTICE_STOPPED)
        return fs_client_fail(c, FS_ERR_UNAVAILABLE, "the server stopped: connect again (a restarted server is a "
                              "new connection)");
    return relayout(c, L);
}

/* ---- calls -------------------------------------------------------------------- */

/* The tiers a counter read anything from, as REPORT lists them. */
static size_t tier_counts(const fs_gather_counters_t *c, featstore_local_TierCount *out)
{
    size_t n = 0;
    for (int k = 0; k < FS_MAX_TIERS; k++)
        if (c->rows[k] || c->bytes[k])
            out[n++] = (featstore_local_TierCount){.tier = (uint32_t)k, .rows = c->rows[k], .bytes = c->bytes[k]};
    return n;
}

/* c plus what an earlier report could not carry, if read from the same placement. */
static fs_gather_counters_t with_unsent(const local_t *L, const fs_gather_counters_t *c,
                                        const fs_gather_counters_t *unsent)
{
    fs_gather_counters_t sum = *c;
    if (L->unsent_generation != L->lay->w.generation) return sum; /* the old placement's tiers are not counted */
    for (int k = 0; k < FS_MAX_TIERS; k++) sum.rows[k] += unsent->rows[k], sum.bytes[k] += unsent->bytes[k];
    return sum;
}

static void report(local_t *L, featstore_local_Method method, fs_status_t st, double t0, const fs_exec_reads_t *reads)
{
    fs_gather_counters_t feat = with_unsent(L, &reads->features, &L->unsent_features),
                         topo = with_unsent(L, &reads->topology, &L->unsent_topology);
    featstore_local_Report r = {.method = (int32_t)method, .status = st, .latency_ns = (int64_t)((fs_now() - t0) * 1e9),
                                .generation = L->lay->w.generation};
    featstore_local_TierCount fc[FS_MAX_TIERS], tc[FS_MAX_TIERS];
    fs_pb_list_t features, topology;
    FS_PB_FROM_ARRAY(&features, featstore_local_TierCount, fc, tier_counts(&feat, fc));
    FS_PB_FROM_ARRAY(&topology, featstore_local_TierCount, tc, tier_counts(&topo, tc));
    fs_pb_set_list(&r.features, &features);
    fs_pb_set_list(&r.topology, &topology);
    /* Never wait: if the socket is full the trainer is not slowed; the
     * reads go with the next report instead (the request's count is lost). */
    int sent = !fs_local_send_msg(L->sock, FS_LOCAL_REPORT, featstore_local_Report_fields, &r, NULL, 0, MSG_DONTWAIT);
    memset(&L->unsent_features, 0, sizeof L->unsent_features);
    memset(&L->unsent_topology, 0, sizeof L->unsent_topology);
    if (!sent) L->unsent_features = feat, L->unsent_topology = topo, L->unsent_generation = r.generation;
}

static const fs_table_view_t *find_table(local_t *L, const char *name)
{
    for (size_t i = 0; i < L->lay->tables.count; i++)
        if (strcmp(fs_local_table_at(L->lay, i)->name, name) == 0) return &L->lay->views[i];
    return NULL;
}

static const char *layout_table_name(const void *lay, int i)
{
    return fs_local_table_at(lay, (size_t)i)->name;
}

/* The executor as this connection hosts it (exec/fs_exec.h): the engines on
 * the current layout's views, the reads counted in *reads for the REPORT. */
static fs_exec_t exec_of(local_t *L, fs_exec_reads_t *reads)
{
    const layout_t *Y = L->lay;
    return (fs_exec_t){.limits = &L->limits, .reads = reads, .pool = L->pool, .graph = &Y->csr,
                       .device = Y->on_device ? L->reader : -1, .las = &Y->las, .no_las = L->no_las,
                       .sampler = L->sampler, .typed = &L->typed.graph, .typed_sampler = L->typed.sampler};
}

/* ---- homogeneous calls --------------------------------------------------------------- */

/* The table a request gathers from, with the dtype its rows are served as. */
static fs_status_t find_rows(local_t *L, const char *table, fs_dtype_t out_dtype, fs_exec_req_t *r, fs_error_t *err)
{
    if (!(r->table = find_table(L, table)))
        return fs_table_not_found(err, L->lay->w.dataset, "feature", table, (int)L->lay->tables.count,
                                  layout_table_name, L->lay);
    int64_t dim;
    return fs_codec_served(r->table->codec, r->table->dtype, r->table->dim, out_dtype, table, &r->dtype, &dim, err);
}

/* The batch of a result in slot `slot`. */
static void fill_batch(local_batch_t *b, const fs_exec_req_t *r, const fs_exec_result_t *res)
{
    fs_batch_t *p = &b->priv.pub;
    p->features_device = -1;
    if (r->sample) {
        const fs_sample_result_t *x = &res->sample;
        memcpy(b->priv.blocks, x->block, sizeof x->block[0] * (size_t)x->num_hops);
        p->kind |= FS_BATCH_SAMPLE;
        p->blocks = b->priv.blocks, p->num_hops = x->num_hops;
        p->num_nodes = x->num_nodes, p->nodes = x->nodes, p->num_seeds = x->num_seeds, p->seed_local = x->seed_local;
    }
    if (r->table) {
        p->kind |= FS_BATCH_GATHER;
        p->features = res->rows, p->rows = res->num_rows, p->dtype = r->dtype;
        p->dim = fs_exec_row_dim(r);
        if (res->rows_device >= 0) p->features_memory = FS_MEM_DEVICE, p->features_device = res->rows_device;
    }
}

/* The one path behind sample, gather and sample_gather: the executor's,
 * into a result slot, then the REPORT. */
static fs_status_t run(fs_client_t *c, featstore_local_Method method, const int64_t *ids, int64_t n,
                       const fs_sample_req_t *req, const char *table, fs_dtype_t out_dtype, fs_batch_t **out)
{
    local_t *L = c->impl;
    double t0 = fs_now();
    fs_status_t st = follow_placement(c, L);
    if (st != FS_OK) return st;
    if (L->lay->w.typed)
        return fs_client_fail(c, FS_ERR_UNSUPPORTED, "dataset '%s' is a typed graph: sample it with fs_hetero_sample "
                              "or fs_link_sample (fs_gather and fs_sample take one node and one edge type)",
                              L->lay->w.dataset);
    fs_error_t err = {0};
    fs_exec_reads_t reads = {0};
    fs_exec_t x = exec_of(L, &reads);
    fs_exec_req_t r = {.ids = ids, .n = n, .sample = req};
    slot_region_t sr = {c, L, -1};
    fs_exec_region_t into = fs_local_slot_region(&sr);
    fs_exec_result_t res;
    local_batch_t *b = NULL;
    if (table) st = find_rows(L, table, out_dtype, &r, &err);
    if (!st) st = fs_exec_run(&x, &r, &into, &res, &err);
    if (!st && !(b = calloc(1, sizeof *b))) st = fs_error(&err, FS_ERR_NOMEM, "out of memory");
    report(L, method, st, t0, &reads);
    if (st != FS_OK) {
        free(b);
        if (sr.slot >= 0) fs_local_slot_release(L, sr.slot);
        return fs_client_fail(c, st, "%s", err.msg);
    }
    fill_batch(b, &r, &res);
    b->priv.release = release_batch;
    b->priv.region = L->slots[sr.slot].base;
    b->priv.region_len = L->slots[sr.slot].cap;
    b->L = L;
    b->slot = sr.slot;
    *out = &b->priv.pub;
    return FS_OK;
}

static fs_status_t local_sample(fs_client_t *c, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
                                fs_batch_t **out)
{
    return run(c, featstore_local_Method_METHOD_SAMPLE, seeds, n, req, NULL, FS_DTYPE_INVALID, out);
}

static fs_status_t local_gather(fs_client_t *c, const int64_t *ids, int64_t n, const char *table, fs_dtype_t dt,
                                fs_batch_t **out)
{
    return run(c, featstore_local_Method_METHOD_GATHER, ids, n, NULL, table, dt, out);
}

static fs_status_t local_sample_gather(fs_client_t *c, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
                                       const char *table, fs_dtype_t dt, fs_batch_t **out)
{
    return run(c, featstore_local_Method_METHOD_SAMPLE_GATHER, seeds, n, req, table, dt, out);
}

/* ---- typed graphs ------------------------------------------------------------------ */

/* The tables the server serves from disk read through this layout's disk
 * tables (the cache every trainer shares), as the homogeneous calls read
 * them: set at open and again after a relayout replaced the layout. */
static void bind_disk_tables(local_t *L)
{
    typed_t *T = &L->typed;
    const layout_t *Y = L->lay;
    if (T->bound && T->bound_generation == Y->w.generation) return;
    for (int i = 0; i < T->ds->num_tables; i++) {
        fs_table_t *t = &T->ds->tables[i];
        for (size_t k = 0; t->on_disk && k < Y->tables.count; k++)
            if (Y->views[k].remote && strcmp(fs_local_table_at(Y, k)->name, t->name) == 0) {
                t->remote = Y->views[k].remote;
                if (T->graph.node_views) T->graph.node_views[0][i].remote = t->remote;
            }
    }
    T->bound = 1, T->bound_generation = Y->w.generation;
}

/* Opens the dataset the server validated, from its descriptors: the same
 * manifest and files, mapped read-only and shared (fs_dataset_open_fds),
 * but the tables it serves from disk left there, read through the cache. */
static fs_status_t open_typed(fs_client_t *c, local_t *L)
{
    typed_t *T = &L->typed;
    if (T->ds) {
        bind_disk_tables(L);
        return FS_OK;
    }
    if (T->manifest_fd < 0)
        return fs_client_fail(c, FS_ERR_UNSUPPORTED, "this server speaks local protocol 6.%u, before typed sampling "
                              "(6.3, featstore 1.3): upgrade the server", L->lay->w.minor);
    char *text = malloc(T->manifest_bytes + 1);
    if (!text) return fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    fs_error_t err = {0};
    fs_status_t st = pread(T->manifest_fd, text, T->manifest_bytes, 0) == (ssize_t)T->manifest_bytes
                         ? FS_OK : fs_error(&err, FS_ERR_IO, "cannot read the server's manifest: %s", strerror(errno));
    const char **on_disk = calloc(L->lay->tables.count + 1, sizeof *on_disk);
    int n = 0;
    for (size_t k = 0; on_disk && k < L->lay->tables.count; k++)
        if (L->lay->views[k].remote) on_disk[n++] = fs_local_table_at(L->lay, k)->name;
    if (st == FS_OK && !on_disk) st = fs_error(&err, FS_ERR_NOMEM, "out of memory");
    if (st == FS_OK)
        st = fs_dataset_open_fds_on_disk(L->lay->w.dataset, text, T->manifest_bytes, (const char *const *)T->names,
                                         T->fds, (int)T->num_files, on_disk, n, c->opts.threads, &T->ds, &err);
    free(text);
    free(on_disk);
    if (st == FS_OK) bind_disk_tables(L);
    if (st == FS_OK && (st = fs_exec_typed_graph_init(&T->graph, T->ds, &err)) != FS_OK) {
        fs_dataset_close(T->ds);
        T->ds = NULL;
    }
    if (st == FS_OK && !T->sampler && (st = fs_typed_sampler_create(&T->sampler, &err)) == FS_OK)
        fs_typed_sampler_set_pool(T->sampler, L->pool);
    return st == FS_OK ? FS_OK : fs_client_fail(c, st, "%s", err.msg);
}

static void release_hetero(fs_hetero_priv_t *p)
{
    local_hetero_t *b = (local_hetero_t *)p;
    free(p->index_mem);
    fs_local_slot_release(b->L, b->slot);
    free(b);
}

/* A typed batch, sampled and gathered in this process into a result slot:
 * the image (fs_hetero.h) is the batch's memory, indexed in place. */
static fs_status_t local_hetero(fs_client_t *c, const fs_hetero_seeds_t *groups, size_t num_groups,
                                const fs_link_req_t *link, const fs_hetero_req_t *req, fs_hetero_batch_t **out)
{
    local_t *L = c->impl;
    double t0 = fs_now();
    fs_status_t st = follow_placement(c, L);
    if (st == FS_OK) st = open_typed(c, L);
    if (st != FS_OK) return st;
    fs_error_t err = {0};
    slot_region_t sr = {c, L, -1};
    fs_exec_region_t into = fs_local_slot_region(&sr);
    st = into.take(&into, &err); /* first, as before the executor: a typed call holds its slot from the start */
    into.take = NULL;
    local_hetero_t *b = NULL;
    if (!st && !(b = calloc(1, sizeof *b))) st = fs_error(&err, FS_ERR_NOMEM, "out of memory");
    size_t len = 0;
    fs_exec_reads_t reads = {0};
    fs_exec_t x = exec_of(L, &reads);
    if (!st) st = fs_exec_typed(&x, groups, num_groups, link, req, 1, &into, &len, &err); /* joined: read back here */
    fs_hetero_index_t ix;
    if (!st) st = fs_hetero_index(into.base, len, 0, &ix, &err); /* written just now, by this process */
    report(L, link ? featstore_local_Method_METHOD_LINK_SAMPLE : featstore_local_Method_METHOD_HETERO_SAMPLE, st, t0,
           &reads);
    if (st != FS_OK) {
        free(b);
        if (sr.slot >= 0) fs_local_slot_release(L, sr.slot);
        return fs_client_fail(c, st, "%s", err.msg);
    }
    int slot = sr.slot;
    b->priv = (fs_hetero_priv_t){.pub = ix.batch, .index_mem = ix.mem, .release = release_hetero,
                                 .region = L->slots[slot].base, .region_len = L->slots[slot].cap};
    b->L = L, b->slot = slot;
    *out = &b->priv.pub;
    return FS_OK;
}

/* ---- requests the server answers ------------------------------------------------ */

static fs_status_t local_info(fs_client_t *c, fs_info_t **out)
{
    local_t *L = c->impl;
    size_t len = 0;
    fs_status_t st = ask(c, FS_LOCAL_INFO, NULL, NULL, FS_LOCAL_INFO_REPLY, &len, NULL);
    if (st != FS_OK) return st;
    featstore_v1_InfoResponse msg;
    fs_pb_info_in_t in;
    fs_error_t err = {0};
    st = fs_pb_info_prepare_decode(&msg, &in, &err);
    if (st == FS_OK) st = fs_local_decode(L->buf, len, featstore_v1_InfoResponse_fields, &msg, "Info reply", &err);
    if (st == FS_OK) st = fs_pb_info_take(&msg, &in, out, &err);
    if (st != FS_OK) {
        fs_pb_info_abandon(&in);
        return fs_client_fail(c, in.oom ? FS_ERR_NOMEM : st, "%s", err.msg);
    }
    return FS_OK;
}

static fs_status_t local_stats(fs_client_t *c, char **text)
{
    local_t *L = c->impl;
    size_t len = 0;
    fs_status_t st = ask(c, FS_LOCAL_STATS, NULL, NULL, FS_LOCAL_STATS_REPLY, &len, NULL);
    if (st != FS_OK) return st;
    if (!(*text = malloc(len + 1))) return fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    memcpy(*text, L->buf, len);
    (*text)[len] = '\0';
    return FS_OK;
}

/* ---- splits: the server's file, mapped read-only ------------------------------- */

typedef struct {
    fs_ids_priv_t priv;
    void *map;
    size_t len;
} local_ids_t;

static void release_ids(fs_ids_priv_t *p)
{
    local_ids_t *m = (local_ids_t *)p;
    if (m->map) munmap(m->map, m->len);
    free(m);
}

static fs_status_t map_split(fs_client_t *c, int fd, const featstore_local_SplitReply *r, fs_ids_t **out)
{
    struct stat sb;
    if (r->count < 0 || r->offset < 0 || r->offset % 8 || fstat(fd, &sb) != 0 || r->offset > sb.st_size ||
        (uint64_t)r->count > ((uint64_t)sb.st_size - (uint64_t)r->offset) / 8)
        return fs_client_fail(c, FS_ERR_FORMAT, "the server's split (%lld ids at offset %lld) does not fit its file",
                              (long long)r->count, (long long)r->offset);
    local_ids_t *m = calloc(1, sizeof *m);
    if (!m) return fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    m->len = sb.st_size ? (size_t)sb.st_size : 1;
    m->map = mmap(NULL, m->len, PROT_READ, MAP_SHARED, fd, 0);
    if (m->map == MAP_FAILED) {
        free(m);
        return fs_client_fail(c, FS_ERR_IO, "cannot map the split's file: %s", strerror(errno));
    }
    m->priv.release = release_ids;
    m->priv.pub.n = r->count;
    m->priv.pub.ids = (const int64_t *)((const char *)m->map + r->offset);
    *out = &m->priv.pub;
    return FS_OK;
}

static fs_status_t local_split(fs_client_t *c, const char *name, fs_ids_t **out)
{
    local_t *L = c->impl;
    featstore_local_SplitRequest req = featstore_local_SplitRequest_init_zero;
    if (strlen(name) >= sizeof req.name)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "split name '%.40s...' is longer than %zu bytes", name,
                              sizeof req.name - 1);
    snprintf(req.name, sizeof req.name, "%s", name);
    size_t len;
    int fd = -1;
    fs_status_t st = ask(c, FS_LOCAL_SPLIT, featstore_local_SplitRequest_fields, &req, FS_LOCAL_SPLIT_REPLY, &len, &fd);
    featstore_local_SplitReply r = featstore_local_SplitReply_init_zero;
    fs_error_t err = {0};
    if (st == FS_OK && fs_local_decode(L->buf, len, featstore_local_SplitReply_fields, &r, "Split reply", &err))
        st = fs_client_fail(c, err.code, "%s", err.msg);
    if (st == FS_OK && fd < 0) st = fs_client_fail(c, FS_ERR_FORMAT, "the Split reply came without its file");
    if (st == FS_OK) st = map_split(c, fd, &r, out);
    if (fd >= 0) close(fd);
    return st;
}

/* ---- administration ----------------------------------------------------------------- */

/* Copies an option into its field of the request; too long is an error, never a cut. */
static fs_status_t copy_opt(fs_client_t *c, char *dst, size_t cap, const char *what, const char *v)
{
    if (snprintf(dst, cap, "%s", v ? v : "") < (int)cap) return FS_OK;
    return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "re-plan: %s is longer than %zu bytes", what, cap - 1);
}

static fs_status_t local_replan(fs_client_t *c, const fs_replan_opts_t *o, uint64_t *generation)
{
    local_t *L = c->impl;
    featstore_local_ReplanRequest *req = calloc(1, sizeof *req); /* 13 KB of paths: off the stack */
    if (!req) return fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    req->gpu_budget = o->gpu_budget;
    fs_status_t st = copy_opt(c, req->topology, sizeof req->topology, "topology", o->topology);
    if (st == FS_OK) st = copy_opt(c, req->hotness, sizeof req->hotness, "hotness", o->hotness);
    if (st == FS_OK) st = copy_opt(c, req->order, sizeof req->order, "order", o->order);
    if (st == FS_OK) st = copy_opt(c, req->plan, sizeof req->plan, "plan", o->plan);
    if (st == FS_OK) st = copy_opt(c, req->save, sizeof req->save, "save", o->save);
    if (st == FS_OK) st = copy_opt(c, req->alpha, sizeof req->alpha, "alpha", o->alpha);
    if (st == FS_OK) st = copy_opt(c, req->reserve, sizeof req->reserve, "reserve", o->reserve);
    size_t len;
    if (st == FS_OK)
        st = ask(c, FS_LOCAL_REPLAN, featstore_local_ReplanRequest_fields, req, FS_LOCAL_REPLAN_REPLY, &len, NULL);
    free(req);
    featstore_local_ReplanReply r = featstore_local_ReplanReply_init_zero;
    fs_error_t err = {0};
    if (st == FS_OK && fs_local_decode(L->buf, len, featstore_local_ReplanReply_fields, &r, "Replan reply", &err))
        st = fs_client_fail(c, err.code, "%s", err.msg);
    if (st == FS_OK && generation) *generation = r.generation;
    return st;
}

static const fs_transport_ops_t local_ops = {
    .name = "unix",
    .in_process = 1,
    .info = local_info,
    .sample = local_sample,
    .gather = local_gather,
    .sample_gather = local_sample_gather,
    .stats = local_stats,
    .split = local_split,
    .replan = local_replan,
    .hetero = local_hetero,
    .close = local_close,
    .idle = local_idle,
};
