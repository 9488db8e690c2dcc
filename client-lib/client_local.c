/* client_local.c — the unix:// transport: zero-copy, in-process.
 *
 * At connect the server passes read-only descriptors of the dataset's files
 * and a ring of memfd result slots. This process maps the files PROT_READ
 * (the kernel shares those pages with the server and every other trainer:
 * no private copy of the data), builds the same views the server would, and
 * runs the kernels itself; results are written into a free slot and the
 * batch points into it. After each call a small REPORT goes to the server
 * for its metrics, sent without waiting.
 *
 * Lifetime: the connection's state is reference-counted (one reference for
 * the connection, one per outstanding batch), so a batch stays valid even
 * after fs_close until it is freed. */
#include <errno.h>
#include <pb_decode.h>
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
#include <time.h>
#include <unistd.h>

#include "client_internal.h"
#include "featstore.pb.h"
#include "fs_gather.h"
#include "fs_limits.h"
#include "fs_local.h"
#include "fs_locality.h"
#include "fs_sample.h"

typedef struct {
    int fd;
    char *base;
    size_t cap;
    int busy;
} slot_t;

/* What one WELCOME describes: the dataset's files and the reader's
 * placement, mapped, and the views over them. Replaced whole when the
 * server re-plans. */
typedef struct {
    fs_local_welcome_t w;
    void *maps[FS_LOCAL_MAX_FDS];
    size_t map_len[FS_LOCAL_MAX_FDS];
    int num_maps;
    fs_csr_view_t csr;
    fs_table_view_t tables[FS_LOCAL_MAX_TABLES];
    fs_locality_t las;     /* the reader's preferred sets (num_levels 0: none); s is per request */
} layout_t;

typedef struct {
    int sock;
    layout_t lay;
    const _Atomic uint64_t *notice; /* the server's notice page: the placement generation it serves */
    fs_limits_t limits;
    slot_t slots[FS_LOCAL_MAX_SLOTS];
    int num_slots;
    fs_sampler_t *sampler;
    fs_pool_t *pool;
    int timeout_ms;
    pthread_mutex_t lock;  /* slots and refs: batches are freed from any thread */
    int refs;
} local_t;

typedef struct {
    fs_batch_priv_t priv;
    local_t *L;
    int slot;
} local_batch_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- lifetime ----------------------------------------------------------------- */

static void unmap_layout(layout_t *Y)
{
    for (int i = 0; i < Y->num_maps; i++) munmap(Y->maps[i], Y->map_len[i]);
    Y->num_maps = 0;
}

static void local_unref(local_t *L)
{
    pthread_mutex_lock(&L->lock);
    int last = --L->refs == 0;
    pthread_mutex_unlock(&L->lock);
    if (!last) return;
    for (int i = 0; i < L->num_slots; i++) {
        if (L->slots[i].base) munmap(L->slots[i].base, L->slots[i].cap);
        close(L->slots[i].fd);
    }
    unmap_layout(&L->lay);
    if (L->notice) munmap((void *)L->notice, FS_LOCAL_NOTICE_BYTES);
    fs_sampler_destroy(L->sampler);
    fs_pool_destroy(L->pool);
    pthread_mutex_destroy(&L->lock);
    free(L);
}

static void local_close(fs_client_t *c)
{
    local_t *L = c->impl;
    if (!L) return;
    if (L->sock >= 0) close(L->sock);
    L->sock = -1;
    local_unref(L);
    c->impl = NULL;
}

/* ---- slots -------------------------------------------------------------------- */

/* Lowest free slot first: a trainer that frees each batch before asking for
 * the next keeps reusing slot 0, so only one slot's pages are ever faulted
 * in and resident. */
static int acquire_slot(local_t *L)
{
    pthread_mutex_lock(&L->lock);
    int found = -1;
    for (int i = 0; i < L->num_slots && found < 0; i++)
        if (!L->slots[i].busy) found = i;
    if (found >= 0) {
        L->slots[found].busy = 1;
        L->refs++;
    }
    pthread_mutex_unlock(&L->lock);
    return found;
}

static void release_slot(local_t *L, int i)
{
    pthread_mutex_lock(&L->lock);
    L->slots[i].busy = 0;
    pthread_mutex_unlock(&L->lock);
    local_unref(L);
}

static void release_batch(fs_batch_priv_t *p)
{
    local_batch_t *b = (local_batch_t *)p;
    release_slot(b->L, b->slot);
    free(b);
}

/* Grows a slot to hold `bytes`, faulting the pages in once: later batches
 * reuse them without page faults. */
static fs_status_t slot_reserve(fs_client_t *c, slot_t *s, size_t bytes)
{
    if (bytes <= s->cap) return FS_OK;
    size_t cap = s->cap ? s->cap : 1 << 20;
    while (cap < bytes) cap += cap / 2;
    cap = (cap + 4095) & ~(size_t)4095;
    if (ftruncate(s->fd, (off_t)cap) != 0)
        return fs_client_fail(c, FS_ERR_NOMEM, "cannot grow a result slot to %zu bytes: %s", cap, strerror(errno));
    void *p = s->base ? mremap(s->base, s->cap, cap, MREMAP_MAYMOVE)
                      : mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
    if (p == MAP_FAILED) return fs_client_fail(c, FS_ERR_NOMEM, "cannot map a result slot: %s", strerror(errno));
    madvise(p, cap, MADV_WILLNEED);
    for (size_t off = s->cap; off < cap; off += 4096) ((volatile char *)p)[off] = 0;
    s->base = p;
    s->cap = cap;
    return FS_OK;
}

/* ---- connect ------------------------------------------------------------------ */

static fs_status_t map_fd(fs_client_t *c, layout_t *Y, int fd, int64_t offset, size_t bytes, const void **data)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size < (size_t)offset + bytes)
        return fs_client_fail(c, FS_ERR_FORMAT, "a dataset file from the server is shorter than announced");
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return fs_client_fail(c, FS_ERR_IO, "cannot map a dataset file: %s", strerror(errno));
    Y->maps[Y->num_maps] = p;
    Y->map_len[Y->num_maps++] = (size_t)st.st_size;
    *data = (const char *)p + offset;
    return FS_OK;
}

static fs_status_t map_whole(fs_client_t *c, layout_t *Y, int fd, size_t bytes, const void **data)
{
    return map_fd(c, Y, fd, 0, bytes, data);
}

/* The tier-0 files: topology and feature tables. */
static fs_status_t map_files(fs_client_t *c, layout_t *Y, const int *fds, int *f)
{
    const fs_local_welcome_t *w = &Y->w;
    const void *indptr, *indices, *weights = NULL;
    size_t isz = w->index_dtype == FS_DTYPE_I32 ? 4 : 8;
    fs_status_t st = map_fd(c, Y, fds[(*f)++], w->indptr_offset, (size_t)(w->num_nodes + 1) * 8, &indptr);
    if (!st) st = map_fd(c, Y, fds[(*f)++], w->indices_offset, (size_t)w->num_edges * isz, &indices);
    if (!st && w->has_weights) st = map_fd(c, Y, fds[(*f)++], w->weights_offset, (size_t)w->num_edges * 4, &weights);
    if (st) return st;
    fs_csr_view_init(&Y->csr, w->num_nodes, indptr, indices, (fs_dtype_t)w->index_dtype, weights);
    for (uint32_t i = 0; i < w->num_tables; i++) {
        const fs_local_table_t *t = &w->tables[i];
        fs_table_view_t *v = &Y->tables[i];
        size_t rb = (size_t)t->dim * fs_dtype_size((fs_dtype_t)t->dtype);
        const void *data;
        if ((st = map_fd(c, Y, fds[(*f)++], t->data_offset, (size_t)t->rows * rb, &data))) return st;
        *v = (fs_table_view_t){.dtype = (fs_dtype_t)t->dtype, .num_rows = t->rows, .dim = t->dim, .row_bytes = rb,
                               .num_tiers = 1};
        v->tier[0] = (fs_tier_ref_t){.kind = FS_TIER_HOST, .device = -1, .base = data, .rows = t->rows};
    }
    return FS_OK;
}

/* The reader's placement: slices, routes, topology parts (all sealed). */
static fs_status_t map_placement(fs_client_t *c, layout_t *Y, const int *fds, int *f)
{
    const fs_local_welcome_t *w = &Y->w;
    size_t isz = w->index_dtype == FS_DTYPE_I32 ? 4 : 8;
    fs_status_t st = FS_OK;
    for (uint32_t t = 0; t < w->num_tables; t++) {
        fs_table_view_t *v = &Y->tables[t];
        v->num_tiers = (int)w->num_tiers;
        for (uint32_t k = 1; k < w->num_tiers; k++) {
            v->tier[k] = (fs_tier_ref_t){.kind = (fs_tier_kind_t)w->tier_kind[k], .device = w->tier_device[k]};
            if (w->slice_rows[t][k] <= 0) continue;
            v->tier[k].rows = w->slice_rows[t][k];
            if ((st = map_whole(c, Y, fds[(*f)++], (size_t)w->slice_rows[t][k] * v->row_bytes, &v->tier[k].base)))
                return st;
        }
    }
    for (uint32_t t = 0; t < w->num_tables; t++)
        if (w->table_route[t] &&
            (st = map_whole(c, Y, fds[(*f)++], (size_t)w->num_nodes * 8, (const void **)&Y->tables[t].route)))
            return st;
    Y->csr.num_parts = (int)w->num_tiers;
    for (uint32_t k = 1; k < w->num_tiers; k++) {
        int64_t rows = w->topo_rows[k];
        if (rows <= 0) continue;
        fs_csr_part_t *p = &Y->csr.part[k];
        p->rows = rows;
        if ((st = map_whole(c, Y, fds[(*f)++], (size_t)(rows + 1) * 8, (const void **)&p->indptr))) return st;
        size_t edges = (size_t)p->indptr[rows];
        if ((st = map_whole(c, Y, fds[(*f)++], edges * isz, &p->indices))) return st;
        if (w->has_weights && (st = map_whole(c, Y, fds[(*f)++], edges * 4, (const void **)&p->weights))) return st;
    }
    if (w->topo_route && (st = map_whole(c, Y, fds[(*f)++], (size_t)w->num_nodes * 8, (const void **)&Y->csr.route)))
        return st;
    Y->las = (fs_locality_t){.num_levels = w->las_levels, .num_nodes = w->num_nodes};
    for (int l = 0; l < w->las_levels; l++) {
        if ((st = map_whole(c, Y, fds[(*f)++], (size_t)((w->num_nodes + 63) / 64) * 8, (const void **)&Y->las.pref[l])))
            return st;
        if (w->las_counts &&
            (st = map_whole(c, Y, fds[(*f)++], (size_t)w->num_nodes * 2, (const void **)&Y->las.count[l])))
            return st;
    }
    return FS_OK;
}

/* A WELCOME's descriptors into Y: the files, the notice page (mapped once
 * per connection: *notice_fd receives it), the placement; after them the
 * result slots (1..FS_LOCAL_MAX_SLOTS for HELLO, none for RELAYOUT), left
 * as descriptors from fds[*used]. */
static fs_status_t map_welcome(fs_client_t *c, layout_t *Y, const int *fds, int nfds, int hello, int *notice_fd,
                               int *used)
{
    const fs_local_welcome_t *w = &Y->w;
    int slots_ok = hello ? w->num_slots >= 1 && w->num_slots <= FS_LOCAL_MAX_SLOTS : w->num_slots == 0;
    if (w->num_tables > FS_LOCAL_MAX_TABLES || w->num_tiers < 1 || w->num_tiers > FS_LOCAL_MAX_TIERS || !slots_ok ||
        nfds < (int)w->num_slots + 1 || w->las_levels < 0 || w->las_levels > FS_MAX_HOPS ||
        (w->las_counts != 0 && w->las_counts != 1) || w->generation < 1)
        return fs_client_fail(c, FS_ERR_FORMAT, "malformed handshake from the server");
    int f = 0, data_fds = nfds - (int)w->num_slots;
    fs_status_t st = map_files(c, Y, fds, &f);
    if (!st && f >= data_fds) st = fs_client_fail(c, FS_ERR_FORMAT, "the server sent no notice page");
    if (!st) *notice_fd = fds[f++];
    if (!st) st = map_placement(c, Y, fds, &f);
    if (!st && f != data_fds)
        st = fs_client_fail(c, FS_ERR_FORMAT, "server sent %d dataset descriptors, the handshake describes %d", data_fds, f);
    *used = f;
    return st;
}

/* Waits for one reply, within the connection's timeout (or `floor_ms` when
 * none is set, so a server that accepted but never answers cannot hang the
 * handshake forever). */
static fs_status_t recv_reply_within(fs_client_t *c, local_t *L, int floor_ms, int *type, void *buf, size_t cap, int *fds,
                                     int *nfds, int max_fds, size_t *len)
{
    struct pollfd p = {.fd = L->sock, .events = POLLIN};
    int ms = L->timeout_ms > 0 ? L->timeout_ms : floor_ms;
    int rc = poll(&p, 1, ms);
    if (rc == 0) return fs_client_fail(c, FS_ERR_TIMEOUT, "no answer from the server within %d ms", ms);
    int got = fs_local_recv(L->sock, type, buf, cap, len, fds, nfds, max_fds, 0);
    if (got <= 0)
        return fs_client_fail(c, FS_ERR_UNAVAILABLE, "the server closed the connection%s%s", got ? ": " : "",
                              got ? strerror(errno) : "");
    if (*type == FS_LOCAL_ERROR && *len == sizeof(fs_local_error_t)) {
        fs_local_error_t *e = buf;
        e->message[sizeof e->message - 1] = '\0';
        return fs_client_fail(c, (fs_status_t)e->status, "server: %s", e->message);
    }
    return FS_OK;
}

static fs_status_t recv_reply(fs_client_t *c, local_t *L, int *type, void *buf, size_t cap, int *fds, int *nfds,
                              int max_fds, size_t *len)
{
    return recv_reply_within(c, L, -1, type, buf, cap, fds, nfds, max_fds, len);
}

#define HANDSHAKE_TIMEOUT_MS 30000

static const fs_transport_ops_t local_ops;

fs_status_t fs_local_connect(fs_client_t *c, const char *path)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "socket path too long");
    strcpy(a.sun_path, path);
    local_t *L = calloc(1, sizeof *L);
    if (!L) return fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    pthread_mutex_init(&L->lock, NULL);
    L->refs = 1;
    L->timeout_ms = c->opts.timeout_ms;
    c->impl = L;
    c->ops = &local_ops;
    L->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (L->sock < 0 || connect(L->sock, (struct sockaddr *)&a, sizeof a) != 0)
        return fs_client_fail(c, FS_ERR_UNAVAILABLE, "cannot connect to unix://%s: %s", path, strerror(errno));
    int reader = -1;
    const char *dev = c->opts.device;
    if (dev && strcmp(dev, "cpu") != 0 && (sscanf(dev, "gpu:%d", &reader) != 1 || reader < 0 || reader > 15))
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "device '%s' must be \"cpu\" or \"gpu:N\" with N < 16", dev);
    fs_local_hello_t h = {.api_version = FS_CLIENT_API_VERSION, .slots = (uint32_t)c->opts.slots, .pid = getpid(),
                          .reader = reader};
    if (fs_local_send(L->sock, FS_LOCAL_HELLO, &h, sizeof h, NULL, 0, 0) != 0)
        return fs_client_fail(c, FS_ERR_UNAVAILABLE, "unix://%s: %s", path, strerror(errno));
    int type, fds[FS_LOCAL_MAX_FDS], nfds = 0, used = 0, notice_fd = -1;
    size_t len;
    layout_t *Y = &L->lay;
    fs_status_t st = recv_reply_within(c, L, HANDSHAKE_TIMEOUT_MS, &type, &Y->w, sizeof Y->w, fds, &nfds,
                                       FS_LOCAL_MAX_FDS, &len);
    if (st == FS_OK && (type != FS_LOCAL_WELCOME || len != sizeof Y->w))
        st = fs_client_fail(c, FS_ERR_FORMAT, "unexpected handshake reply from unix://%s", path);
    if (st == FS_OK) st = map_welcome(c, Y, fds, nfds, 1, &notice_fd, &used);
    if (st == FS_OK && (L->notice = mmap(NULL, FS_LOCAL_NOTICE_BYTES, PROT_READ, MAP_SHARED, notice_fd, 0)) == MAP_FAILED) {
        L->notice = NULL;
        st = fs_client_fail(c, FS_ERR_IO, "cannot map the server's notice page: %s", strerror(errno));
    }
    for (int i = 0; st == FS_OK && i < (int)Y->w.num_slots; i++) L->slots[L->num_slots++] = (slot_t){.fd = fds[used + i]};
    for (int i = 0; i < nfds; i++)
        if (i < used || st != FS_OK) close(fds[i]); /* mapped; slot fds are kept */
    if (st != FS_OK) {
        L->num_slots = 0;
        return st;
    }
    L->limits = (fs_limits_t){Y->w.max_ids, Y->w.max_fanout_product, Y->w.max_response_bytes};
    fs_error_t err = {0};
    if (fs_sampler_create(&L->sampler, &err) || fs_pool_create(c->opts.threads, &L->pool, &err))
        return fs_client_fail(c, FS_ERR_NOMEM, "%s", err.msg);
    return FS_OK;
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
    layout_t *Y = calloc(1, sizeof *Y);
    if (!Y) return fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    int type, fds[FS_LOCAL_MAX_FDS], nfds = 0, used = 0, notice_fd = -1;
    size_t len;
    fs_status_t st = recv_reply(c, L, &type, &Y->w, sizeof Y->w, fds, &nfds, FS_LOCAL_MAX_FDS, &len);
    if (st == FS_OK && (type != FS_LOCAL_WELCOME || len != sizeof Y->w || Y->w.reader != L->lay.w.reader))
        st = fs_client_fail(c, FS_ERR_FORMAT, "unexpected reply to RELAYOUT");
    if (st == FS_OK) st = map_welcome(c, Y, fds, nfds, 0, &notice_fd, &used);
    for (int i = 0; i < nfds; i++) close(fds[i]);
    if (st == FS_OK) {
        unmap_layout(&L->lay);
        L->lay = *Y;
    } else {
        unmap_layout(Y);
    }
    free(Y);
    return st;
}

/* Before each call: one load of the notice page. */
static fs_status_t follow_placement(fs_client_t *c, local_t *L)
{
    if (atomic_load_explicit(L->notice, memory_order_acquire) <= L->lay.w.generation) return FS_OK;
    return relayout(c, L);
}

/* ---- calls -------------------------------------------------------------------- */

static void report(local_t *L, int method, fs_status_t st, double t0, const fs_gather_counters_t *f,
                   const fs_gather_counters_t *t)
{
    fs_local_report_t r = {.method = method, .status = st, .latency_ns = (int64_t)((now_s() - t0) * 1e9),
                           .generation = L->lay.w.generation};
    for (int k = 0; k < FS_LOCAL_MAX_TIERS; k++) {
        r.feature_rows[k] = f ? f->rows[k] : 0, r.feature_bytes[k] = f ? f->bytes[k] : 0;
        r.topo_lists[k] = t ? t->rows[k] : 0, r.topo_bytes[k] = t ? t->bytes[k] : 0;
    }
    /* Never wait: if the socket is full the report is dropped, not the trainer slowed. */
    fs_local_send(L->sock, FS_LOCAL_REPORT, &r, sizeof r, NULL, 0, MSG_DONTWAIT);
}

enum { M_INFO, M_SAMPLE, M_GATHER, M_SAMPLE_GATHER, M_STATS }; /* = the server's fs_method_t */

static const fs_table_view_t *find_table(local_t *L, const char *name)
{
    for (uint32_t i = 0; i < L->lay.w.num_tables; i++)
        if (strcmp(L->lay.w.tables[i].name, name) == 0) return &L->lay.tables[i];
    return NULL;
}

static size_t align64(size_t x) { return (x + 63) & ~(size_t)63; }

/* Copies a sample result into the slot at *off and points the batch at it. */
static void place_sample(fs_batch_t *b, const fs_sample_result_t *r, char *base, size_t *off)
{
#define PUT(dst, src, count)                                    \
    do {                                                        \
        size_t bytes_ = (size_t)(count) * sizeof(int64_t);      \
        memcpy(base + *off, (src), bytes_);                     \
        (dst) = (const int64_t *)(base + *off);                 \
        *off = align64(*off + bytes_);                          \
    } while (0)
    b->num_hops = r->num_hops;
    b->num_nodes = r->num_nodes;
    b->num_seeds = r->num_seeds;
    PUT(b->nodes, r->nodes, r->num_nodes);
    PUT(b->seed_local, r->seed_local, r->num_seeds);
    for (int h = 0; h < r->num_hops; h++) {
        const fs_block_t *s = &r->block[h];
        fs_block_t *d = &b->block[h];
        *d = (fs_block_t){.num_dst = s->num_dst, .num_src = s->num_src, .num_edges = s->num_edges};
        PUT(d->dst_offsets, s->dst_offsets, s->num_dst + 1);
        PUT(d->edge_dst, s->edge_dst, s->num_edges);
        PUT(d->edge_src, s->edge_src, s->num_edges);
        if (s->edge_ids) PUT(d->edge_ids, s->edge_ids, s->num_edges);
        if (s->edge_weights) { /* float32, after the int64 arrays */
            size_t bytes = (size_t)s->num_edges * sizeof(float);
            if (bytes) memcpy(base + *off, s->edge_weights, bytes);
            d->edge_weights = (const float *)(base + *off);
            *off = align64(*off + bytes);
        }
    }
#undef PUT
}

static size_t sample_bytes(const fs_sample_result_t *r)
{
    size_t b = align64((size_t)r->num_nodes * 8) + align64((size_t)r->num_seeds * 8);
    for (int h = 0; h < r->num_hops; h++)
        b += align64((size_t)(r->block[h].num_dst + 1) * 8) +
             (size_t)(r->block[h].edge_ids ? 3 : 2) * align64((size_t)r->block[h].num_edges * 8) +
             (r->block[h].edge_weights ? align64((size_t)r->block[h].num_edges * sizeof(float)) : 0);
    return b;
}

/* Locality-aware sampling (locality > 1) through the reader's preferred
 * sets; the per-edge weights go into the blocks (they live in the sampler,
 * like the rest of the result, until they are copied into the slot). */
static fs_status_t sample_boosted(local_t *L, const int64_t *ids, int64_t n, const fs_sample_req_t *req,
                                  fs_sample_result_t *res, fs_gather_counters_t *topo, fs_error_t *err)
{
    if (L->lay.las.num_levels == 0) {
        if (L->lay.w.reader < 0)
            return fs_error(err, FS_ERR_UNSUPPORTED, "locality = %g: locality-aware sampling needs a placement and a "
                            "reader GPU: connect with device \"gpu:N\" (this connection reads as the CPU, which has "
                            "no GPU rows to prefer)", req->locality);
        return fs_error(err, FS_ERR_UNSUPPORTED, "locality = %g: locality-aware sampling needs a placement and a "
                        "reader GPU: the server has no preferred sets for gpu:%d (serve with --topology, and "
                        "connect with the device of a planned GPU)", req->locality, L->lay.w.reader);
    }
    if (req->num_hops > L->lay.las.num_levels)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality = %g: the server's preferred sets serve requests of "
                        "up to %d hops; this one has %d (use locality 0 for it)", req->locality, L->lay.las.num_levels,
                        req->num_hops);
    fs_locality_t loc = L->lay.las;
    loc.s = req->locality;
    fs_las_weights_t w;
    fs_status_t st = fs_sample_locality_cpu(L->sampler, &L->lay.csr, ids, n, req, &loc, res, &w, topo, err);
    for (int h = 0; st == FS_OK && h < res->num_hops; h++) res->block[h].edge_weights = w.weight[h];
    return st;
}

/* The one path behind sample, gather and sample_gather. */
static fs_status_t run(fs_client_t *c, int method, const int64_t *ids, int64_t n, const fs_sample_req_t *req,
                       const char *table, fs_dtype_t out_dtype, fs_batch_t **out)
{
    local_t *L = c->impl;
    double t0 = now_s();
    fs_status_t moved = follow_placement(c, L);
    if (moved != FS_OK) return moved;
    fs_error_t err = {0};
    fs_gather_counters_t feat = {0}, topo = {0};
    const fs_table_view_t *tv = NULL;
    size_t row_bytes = 0;
    fs_status_t st = FS_OK;
    if (table) {
        if (!(tv = find_table(L, table))) st = fs_error(&err, FS_ERR_NOT_FOUND, "no feature table '%s'", table);
        else {
            if (out_dtype == FS_DTYPE_INVALID) out_dtype = tv->dtype;
            row_bytes = (size_t)tv->dim * fs_dtype_size(out_dtype);
        }
    }
    if (!st) st = fs_limits_check(&L->limits, n, req, req ? 0 : row_bytes, &err);
    fs_sample_result_t res;
    if (!st && req) {
        st = req->locality > 1 ? sample_boosted(L, ids, n, req, &res, &topo, &err)
                               : fs_sample_cpu(L->sampler, &L->lay.csr, ids, n, req, &res, &topo, &err);
        if (!st && fs_sample_result_bytes(&res) + (double)res.num_nodes * (double)row_bytes > (double)L->limits.max_response_bytes)
            st = fs_error(&err, FS_ERR_RESOURCE, "response of %.0f bytes exceeds the limit %lld",
                          (double)fs_sample_result_bytes(&res) + (double)res.num_nodes * (double)row_bytes,
                          (long long)L->limits.max_response_bytes);
    }
    int slot = -1;
    if (!st && (slot = acquire_slot(L)) < 0)
        st = fs_error(&err, FS_ERR_RESOURCE, "all %d result slots are held: free a batch first", L->num_slots);
    local_batch_t *b = NULL;
    if (!st && !(b = calloc(1, sizeof *b))) st = fs_error(&err, FS_ERR_NOMEM, "out of memory");
    if (!st) {
        const int64_t *rows = req ? res.nodes : ids;
        int64_t nrows = table ? (req ? res.num_nodes : n) : 0;
        size_t off = 0, need = (req ? sample_bytes(&res) : 0) + (size_t)nrows * row_bytes + 64;
        slot_t *s = &L->slots[slot];
        if (slot_reserve(c, s, need) != FS_OK) st = fs_error(&err, FS_ERR_NOMEM, "%s", c->errstr);
        if (!st && req) place_sample(&b->priv.pub, &res, s->base, &off);
        if (!st && table) {
            st = fs_gather_cpu(tv, rows, nrows, out_dtype, s->base + off, L->pool, &feat, &err);
            b->priv.pub.features = s->base + off;
            b->priv.pub.rows = nrows;
            b->priv.pub.dim = tv->dim;
            b->priv.pub.dtype = out_dtype;
        }
    }
    report(L, method, st, t0, &feat, &topo);
    if (st != FS_OK) {
        free(b);
        if (slot >= 0) release_slot(L, slot);
        return fs_client_fail(c, st, "%s", err.msg);
    }
    b->priv.release = release_batch;
    b->priv.region = L->slots[slot].base;
    b->priv.region_len = L->slots[slot].cap;
    b->L = L;
    b->slot = slot;
    *out = &b->priv.pub;
    return FS_OK;
}

static fs_status_t local_sample(fs_client_t *c, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
                                fs_batch_t **out)
{
    return run(c, M_SAMPLE, seeds, n, req, NULL, FS_DTYPE_INVALID, out);
}

static fs_status_t local_gather(fs_client_t *c, const char *table, const int64_t *ids, int64_t n, fs_dtype_t dt,
                                fs_batch_t **out)
{
    return run(c, M_GATHER, ids, n, NULL, table, dt, out);
}

static fs_status_t local_sample_gather(fs_client_t *c, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
                                       const char *table, fs_dtype_t dt, fs_batch_t **out)
{
    return run(c, M_SAMPLE_GATHER, seeds, n, req, table, dt, out);
}

/* ---- info and stats (answered by the server) ------------------------------------ */

/* One request, one reply (with at most one descriptor, into *fd). */
static fs_status_t ask_fd(fs_client_t *c, int type, const void *req, size_t req_len, int reply_type, char *buf,
                          size_t cap, size_t *len, int *fd)
{
    local_t *L = c->impl;
    if (L->sock < 0) return fs_client_fail(c, FS_ERR_UNAVAILABLE, "not connected");
    if (fs_local_send(L->sock, type, req, req_len, NULL, 0, 0) != 0)
        return fs_client_fail(c, FS_ERR_UNAVAILABLE, "the server went away: %s", strerror(errno));
    int got, nfds = 0;
    fs_status_t st = recv_reply(c, L, &got, buf, cap, fd, fd ? &nfds : NULL, fd ? 1 : 0, len);
    if (st == FS_OK && got != reply_type) st = fs_client_fail(c, FS_ERR_FORMAT, "unexpected reply type %d", got);
    if (fd && nfds == 0) *fd = -1;
    return st;
}

static fs_status_t ask(fs_client_t *c, int type, int reply_type, char *buf, size_t cap, size_t *len)
{
    return ask_fd(c, type, NULL, 0, reply_type, buf, cap, len, NULL);
}

static fs_status_t local_info(fs_client_t *c, fs_info_t *out)
{
    char *buf = malloc(FS_LOCAL_MAX_MSG);
    size_t len;
    if (!buf) return fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    fs_status_t st = ask(c, FS_LOCAL_INFO, FS_LOCAL_INFO_REPLY, buf, FS_LOCAL_MAX_MSG, &len);
    featstore_v1_InfoResponse r = featstore_v1_InfoResponse_init_zero;
    pb_istream_t is = pb_istream_from_buffer((const pb_byte_t *)buf, st == FS_OK ? len : 0);
    if (st == FS_OK && !pb_decode(&is, featstore_v1_InfoResponse_fields, &r))
        st = fs_client_fail(c, FS_ERR_FORMAT, "bad Info reply: %s", PB_GET_ERROR(&is));
    free(buf);
    if (st != FS_OK) return st;
    fs_info_from_pb(out, &r);
    return FS_OK;
}

static fs_status_t local_stats(fs_client_t *c, char **text)
{
    char *buf = malloc(FS_LOCAL_MAX_MSG + 1);
    size_t len;
    if (!buf) return fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    fs_status_t st = ask(c, FS_LOCAL_STATS, FS_LOCAL_STATS_REPLY, buf, FS_LOCAL_MAX_MSG, &len);
    if (st != FS_OK) {
        free(buf);
        return st;
    }
    buf[len] = '\0';
    *text = buf;
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

static fs_status_t map_split(fs_client_t *c, int fd, const fs_local_split_reply_t *r, fs_ids_t **out)
{
    struct stat sb;
    if (r->count < 0 || r->offset < 0 || r->offset % 8 || fstat(fd, &sb) != 0 ||
        (uint64_t)r->count > ((uint64_t)sb.st_size - (uint64_t)r->offset) / 8 || r->offset > sb.st_size)
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
    fs_local_split_t req = {{0}};
    snprintf(req.name, sizeof req.name, "%s", name);
    union { /* room for an ERROR instead */
        fs_local_split_reply_t r;
        fs_local_error_t e;
    } u;
    size_t len;
    int fd = -1;
    fs_status_t st = ask_fd(c, FS_LOCAL_SPLIT, &req, sizeof req, FS_LOCAL_SPLIT_REPLY, (char *)&u, sizeof u, &len, &fd);
    if (st == FS_OK && (len != sizeof u.r || fd < 0))
        st = fs_client_fail(c, FS_ERR_FORMAT, "malformed Split reply");
    if (st == FS_OK) st = map_split(c, fd, &u.r, out);
    if (fd >= 0) close(fd);
    return st;
}

/* ---- administration ----------------------------------------------------------------- */

/* Copies an option into its fixed-size field; too long is an error, never a cut. */
static fs_status_t copy_opt(fs_client_t *c, char *dst, size_t cap, const char *what, const char *v)
{
    if (snprintf(dst, cap, "%s", v ? v : "") < (int)cap) return FS_OK;
    return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "re-plan: %s is longer than %zu bytes", what, cap - 1);
}

static fs_status_t local_replan(fs_client_t *c, const fs_replan_opts_t *o, uint64_t *generation)
{
    fs_local_replan_t req = {.gpu_budget = o->gpu_budget};
    fs_status_t st = copy_opt(c, req.topology, sizeof req.topology, "topology", o->topology);
    if (st == FS_OK) st = copy_opt(c, req.hotness, sizeof req.hotness, "hotness", o->hotness);
    if (st == FS_OK) st = copy_opt(c, req.order, sizeof req.order, "order", o->order);
    if (st == FS_OK) st = copy_opt(c, req.plan, sizeof req.plan, "plan", o->plan);
    if (st == FS_OK) st = copy_opt(c, req.save, sizeof req.save, "save", o->save);
    if (st == FS_OK) st = copy_opt(c, req.alpha, sizeof req.alpha, "alpha", o->alpha);
    if (st == FS_OK) st = copy_opt(c, req.reserve, sizeof req.reserve, "reserve", o->reserve);
    if (st != FS_OK) return st;
    union {
        fs_local_replan_reply_t r;
        fs_local_error_t e;
    } u;
    size_t len;
    st = ask_fd(c, FS_LOCAL_REPLAN, &req, sizeof req, FS_LOCAL_REPLAN_REPLY, (char *)&u, sizeof u, &len, NULL);
    if (st == FS_OK && len != sizeof u.r) st = fs_client_fail(c, FS_ERR_FORMAT, "malformed Replan reply");
    if (st == FS_OK && generation) *generation = u.r.generation;
    return st;
}

static const fs_transport_ops_t local_ops = {
    .name = "unix",
    .info = local_info,
    .sample = local_sample,
    .gather = local_gather,
    .sample_gather = local_sample_gather,
    .stats = local_stats,
    .split = local_split,
    .replan = local_replan,
    .close = local_close,
};
