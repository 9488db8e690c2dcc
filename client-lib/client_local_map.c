/* client_local_map.c — what one WELCOME describes, mapped into a layout
 * (client_local_internal.h): the dataset's files, this reader's placement
 * (slices of tiers, routes, topology parts, preferred sets) and the views
 * over them, the same views the server would build.
 *
 * Every descriptor is a read-only, unwritable copy the server verified
 * (dataset/served_copy.c), mapped PROT_READ: the kernel shares those pages
 * with the server and every other trainer, nobody can shrink them, and a
 * dataset file truncated on disk cannot SIGBUS a trainer.
 *
 * Shared mappings: each connection fills its page tables for the files it
 * maps (map_fd), about 0.1 s per GB, and unmapping them costs a third of
 * that again. A process with several connections to one server (a stream
 * opens its own) would pay that per connection, for the very same pages.
 * So host mappings are kept once per process, keyed by the file's identity
 * (device, inode: the server's copies), and reference-counted by
 * the connections' layouts; a GPU reader's are its own (registered or
 * copied for its device).
 *
 * GPU trainers: when the placement puts this reader's rows in GPU memory
 * (device tiers), each such tier is one allocation of the server's, opened
 * here by its CUDA IPC handle, and the dataset's mappings are registered so
 * the reader GPU's kernels read host rows in place over UVA. The server
 * keeps the tiers a connection opened until it moves to a new placement or
 * goes (server/local.c). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client_local_internal.h"
#include "fs_device.h"

/* The process's shared host mappings (see "Shared mappings" above). */
typedef struct shared_map {
    dev_t dev;
    ino_t ino;
    size_t len;
    void *p;
    int refs;
    struct shared_map *next;
} shared_map_t;

static pthread_mutex_t shared_mu = PTHREAD_MUTEX_INITIALIZER;
static shared_map_t *shared_maps;

/* A mapping of the file `st` describes, populated: the process's own when
 * it has one (another reference), else a new one, or MAP_FAILED. */
static void *shared_map_take(int fd, const struct stat *st, size_t len)
{
    pthread_mutex_lock(&shared_mu);
    shared_map_t *m = shared_maps;
    while (m && !(m->dev == st->st_dev && m->ino == st->st_ino && m->len == len)) m = m->next;
    void *p = m ? m->p : MAP_FAILED;
    if (m) m->refs++;
    pthread_mutex_unlock(&shared_mu);
    if (m) return p;
    p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return p;
    madvise(p, len, MADV_HUGEPAGE); /* fewer page faults where the kernel allows it; best effort */
    /* Fill this process's page tables now: otherwise every first touch of a
     * page in a batch is a minor fault, which on some hosts costs more than
     * the row copy itself and turns into latency spikes long after warm-up
     * (docs/design.md "Data plane"). The pages are the server's resident
     * copies, so this only writes page-table entries. Best effort: kernels
     * before 5.14 refuse it and fault lazily as before. */
    madvise(p, len, MADV_POPULATE_READ);
    shared_map_t *n = malloc(sizeof *n);
    if (!n) {
        munmap(p, len);
        return MAP_FAILED;
    }
    *n = (shared_map_t){.dev = st->st_dev, .ino = st->st_ino, .len = len, .p = p, .refs = 1};
    pthread_mutex_lock(&shared_mu);
    n->next = shared_maps, shared_maps = n; /* a racing connection's duplicate is harmless: each drops its own */
    pthread_mutex_unlock(&shared_mu);
    return p;
}

static void shared_map_drop(void *p)
{
    pthread_mutex_lock(&shared_mu);
    shared_map_t **at = &shared_maps;
    while (*at && (*at)->p != p) at = &(*at)->next;
    shared_map_t *m = *at;
    int last = m && --m->refs == 0;
    if (last) *at = m->next;
    pthread_mutex_unlock(&shared_mu);
    if (!last) return;
    munmap(m->p, m->len);
    free(m);
}

void fs_local_layout_free(layout_t *Y)
{
    if (!Y) return;
    for (int k = 0; k < FS_MAX_TIERS; k++)
        if (Y->tier_mem[k]) fs_cuda_ipc_close(Y->tier_mem[k]);
    for (size_t i = 0; i < Y->num_maps; i++) {
        if (Y->maps[i].registered) fs_cuda_host_unregister(Y->maps[i].p);
        if (Y->maps[i].pinned) fs_cuda_free_pinned(Y->maps[i].p);
        else if (Y->maps[i].shared) shared_map_drop(Y->maps[i].p);
        else munmap(Y->maps[i].p, Y->maps[i].len);
    }
    free(Y->maps);
    for (size_t i = 0; Y->disk && i < Y->tables.count; i++) {
        local_disk_t *d = &Y->disk[i];
        fs_disktable_close(d->table);
        fs_rowsums_close(d->sums);
        if (d->cache_map) munmap(d->cache_map, d->cache_len);
        if (d->sums_map) munmap(d->sums_map, d->sums_len);
    }
    free(Y->disk);
    free(Y->tables.items), free(Y->tiers.items), free(Y->slices.items), free(Y->parts.items);
    free(Y->views);
    for (size_t i = 0; i < Y->num_files; i++) free(Y->files[i]);
    free(Y->files);
    free(Y);
}

/* A GPU trainer's kernels read the dataset's files, the routes and any host
 * tier in place over UVA: each mapping is registered with the CUDA runtime
 * (page-locked, mapped, read-only; the pages are the server's shared
 * copies, so nothing is copied). Where the driver refuses, the mapping is
 * replaced by a pinned copy (docs/api.md section 6): slower to connect and
 * one more copy of those bytes per trainer, but the same kernels. */
static fs_status_t make_device_readable(fs_client_t *c, layout_t *Y, map_t *m)
{
    const void *dev = NULL;
    fs_error_t err = {0};
    fs_status_t st = fs_cuda_host_register(m->p, m->len, &dev, &err);
    if (st == FS_OK) {
        m->registered = 1;
        if (dev != m->p) /* UVA: registered memory has one address everywhere (every 64-bit Linux GPU) */
            return fs_client_fail(c, FS_ERR_UNSUPPORTED, "gpu:%d maps registered host memory at another address; "
                                  "featstore needs unified addressing", Y->reader);
        return FS_OK;
    }
    if (st != FS_ERR_UNSUPPORTED)
        return fs_client_fail(c, st, "gpu:%d cannot read the dataset's host memory: %s (connect as \"cpu\" to run "
                              "the CPU engines)", Y->reader, err.msg);
    void *copy = NULL;
    fs_error_t perr = {0};
    if (fs_cuda_alloc_pinned(m->len, &copy, &perr) != FS_OK)
        return fs_client_fail(c, perr.code, "gpu:%d: the driver will not register the dataset's pages in place (%s), "
                              "and a %zu-byte pinned copy cannot be made: %s", Y->reader, err.msg, m->len, perr.msg);
    memcpy(copy, m->p, m->len);
    munmap(m->p, m->len);
    m->p = copy;
    m->pinned = 1;
    return FS_OK;
}

static fs_status_t map_fd(fs_client_t *c, layout_t *Y, int fd, int64_t offset, size_t bytes, const void **data)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || offset < 0 || (size_t)st.st_size < (size_t)offset + bytes)
        return fs_client_fail(c, FS_ERR_FORMAT, "a dataset file from the server is shorter than announced");
    if (Y->num_maps == Y->cap_maps) {
        size_t cap = Y->cap_maps ? 2 * Y->cap_maps : 32;
        map_t *m = realloc(Y->maps, cap * sizeof *m);
        if (!m) return fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
        Y->maps = m, Y->cap_maps = cap;
    }
    size_t len = st.st_size ? (size_t)st.st_size : 1;
    int shared = !Y->on_device; /* a GPU reader registers or copies its mappings: its own */
    void *p = shared ? shared_map_take(fd, &st, len) : mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return fs_client_fail(c, FS_ERR_IO, "cannot map a dataset file: %s", strerror(errno));
    map_t *m = &Y->maps[Y->num_maps++];
    *m = (map_t){.p = p, .len = len, .shared = shared};
    fs_status_t rc = Y->on_device ? make_device_readable(c, Y, m) : FS_OK;
    *data = (const char *)m->p + offset;
    return rc;
}

/* The next descriptor of the handshake; FS_ERR_FORMAT when they ran out. */
static fs_status_t next_fd(fs_client_t *c, fs_fd_list_t *fds, int *fd)
{
    if (fds->next >= fds->n)
        return fs_client_fail(c, FS_ERR_FORMAT, "the server sent %zu descriptors, fewer than its handshake describes",
                              fds->n);
    *fd = fds->fd[fds->next++];
    return FS_OK;
}

static fs_status_t map_next(fs_client_t *c, layout_t *Y, fs_fd_list_t *fds, int64_t offset, size_t bytes,
                            const void **data)
{
    int fd = -1;
    fs_status_t st = next_fd(c, fds, &fd);
    if (st == FS_OK) st = map_fd(c, Y, fd, offset, bytes, data);
    return st;
}

/* A table served from disk (6.4): its file (read by io_uring, never
 * mapped), the shared cache (mapped read-write: every trainer of the
 * server fills it) and the checksums; the view reads through them. */
static fs_status_t map_disk_table(fs_client_t *c, layout_t *Y, fs_fd_list_t *fds, size_t i, fs_table_view_t *v)
{
    const featstore_local_Table *t = fs_local_table_at(Y, i);
    local_disk_t *d = &Y->disk[i];
    int file_fd = -1, cache_fd = -1, sums_fd = -1;
    fs_status_t st = next_fd(c, fds, &file_fd);
    if (!st) st = next_fd(c, fds, &cache_fd);
    if (!st) st = next_fd(c, fds, &sums_fd);
    if (st) return st;
    fs_error_t err = {0};
    d->cache_len = t->cache_bytes, d->sums_len = (size_t)t->rows * sizeof(uint64_t);
    d->cache_map = mmap(NULL, d->cache_len, PROT_READ | PROT_WRITE, MAP_SHARED, cache_fd, 0);
    d->sums_map = d->sums_len ? mmap(NULL, d->sums_len, PROT_READ, MAP_SHARED, sums_fd, 0) : NULL;
    if (d->cache_map == MAP_FAILED || d->sums_map == MAP_FAILED) {
        if (d->cache_map == MAP_FAILED) d->cache_map = NULL;
        if (d->sums_map == MAP_FAILED) d->sums_map = NULL;
        return fs_client_fail(c, FS_ERR_IO, "cannot map table '%s''s row cache or checksums: %s", t->name,
                              strerror(errno));
    }
    char what[128];
    snprintf(what, sizeof what, "table '%s' (on the server's disk)", t->name);
    st = fs_rowcache_attach(d->cache_map, d->cache_len, &d->cache, &err);
    if (!st) st = fs_rowsums_wrap(d->sums_map, t->rows, v->row_bytes, &d->sums, &err);
    fs_disktable_opts_t o = {.fd = file_fd, .what = what, .data_offset = (uint64_t)t->data_offset,
                             .row_bytes = v->row_bytes, .rows = t->rows, .cache = d->cache, .sums = d->sums};
    if (!st) st = fs_disktable_open(&o, &d->table, &err);
    if (st) return fs_client_fail(c, st, "%s", err.msg);
    d->hook = (fs_table_remote_t){fs_disktable_rows, d->table};
    v->remote = &d->hook, v->num_tiers = 0;
    Y->num_on_disk++;
    return FS_OK;
}

/* The tier-0 files: topology and feature tables. */
static fs_status_t map_files(fs_client_t *c, layout_t *Y, fs_fd_list_t *fds)
{
    const featstore_local_Welcome *w = &Y->w;
    if (w->typed) /* a typed graph has no version-1 arrays: typed calls open the dataset (open_typed) */
        return (Y->views = calloc(1, sizeof *Y->views)) ? FS_OK : fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    const void *indptr, *indices, *weights = NULL;
    Y->index_dtype = fs_dtype_from_name(w->index_dtype);
    size_t isz = fs_dtype_size(Y->index_dtype);
    fs_status_t st = map_next(c, Y, fds, w->indptr_offset, (size_t)(w->num_nodes + 1) * 8, &indptr);
    if (!st) st = map_next(c, Y, fds, w->indices_offset, (size_t)w->num_edges * isz, &indices);
    if (!st && w->has_weights) st = map_next(c, Y, fds, w->weights_offset, (size_t)w->num_edges * 4, &weights);
    if (st) return st;
    fs_csr_view_init(&Y->csr, w->num_nodes, indptr, indices, Y->index_dtype, weights);
    if (!(Y->views = calloc(Y->tables.count + 1, sizeof *Y->views)) ||
        !(Y->disk = calloc(Y->tables.count + 1, sizeof *Y->disk)))
        return fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < Y->tables.count; i++) {
        const featstore_local_Table *t = fs_local_table_at(Y, i);
        fs_table_view_t *v = &Y->views[i];
        fs_dtype_t dt = fs_dtype_from_name(t->dtype);
        size_t rb = (size_t)t->dim * fs_dtype_size(dt);
        const void *data;
        *v = (fs_table_view_t){.dtype = dt, .num_rows = t->rows, .dim = t->dim, .row_bytes = rb, .num_tiers = 1,
                               .codec = fs_codec_from_name(t->codec)};
        if (t->on_disk) {
            if ((st = map_disk_table(c, Y, fds, i, v))) return st;
            continue;
        }
        if ((st = map_next(c, Y, fds, t->data_offset, (size_t)t->rows * rb, &data))) return st;
        v->tier[0] = (fs_tier_ref_t){.kind = FS_TIER_HOST, .device = -1, .base = data, .rows = t->rows};
    }
    return FS_OK;
}

static fs_tier_kind_t tier_kind(const char *name)
{
    for (int k = 0; k < FS_TIER_KIND_COUNT_; k++)
        if (strcmp(name, fs_tier_kind_name((fs_tier_kind_t)k)) == 0) return (fs_tier_kind_t)k;
    return FS_TIER_HOST;
}

/* The device tiers this reader reads (those with an IPC handle), each one
 * allocation of the server's, opened on the reader's GPU. */
static fs_status_t open_device_tiers(fs_client_t *c, layout_t *Y, int reader)
{
    const featstore_local_Tier *tiers = Y->tiers.items;
    for (size_t k = 1; k < Y->tiers.count; k++) {
        if (!tiers[k].ipc_handle.size) continue;
        if (tiers[k].ipc_handle.size != FS_IPC_HANDLE_BYTES || reader < 0 || !tiers[k].bytes)
            return fs_client_fail(c, FS_ERR_FORMAT, "malformed handshake from the server (device tier %zu)", k);
        fs_ipc_handle_t h;
        memcpy(h.bytes, tiers[k].ipc_handle.bytes, FS_IPC_HANDLE_BYTES);
        fs_error_t err = {0};
        if (fs_cuda_ipc_open(reader, &h, tiers[k].bytes, &Y->tier_mem[k], &err) != FS_OK)
            return fs_client_fail(c, err.code, "cannot open the server's GPU tier %zu (GPU %d) on gpu:%d: %s", k,
                                  (int)tiers[k].device, reader, err.msg);
        Y->on_device = 1;
        Y->reader = reader;
    }
    return FS_OK;
}

/* One array of a placement: at `offset` in its device tier, or the next
 * descriptor, mapped. */
static fs_status_t place_array(fs_client_t *c, layout_t *Y, fs_fd_list_t *fds, uint32_t tier, uint64_t offset,
                               size_t bytes, const void **data)
{
    if (!Y->tier_mem[tier]) return map_next(c, Y, fds, 0, bytes, data);
    size_t cap = ((const featstore_local_Tier *)Y->tiers.items)[tier].bytes;
    if (offset > cap || bytes > cap - offset)
        return fs_client_fail(c, FS_ERR_FORMAT, "the server's handshake puts %zu bytes at offset %llu of a %zu-byte "
                              "GPU tier", bytes, (unsigned long long)offset, cap);
    *data = (const char *)Y->tier_mem[tier] + offset;
    return FS_OK;
}

/* indptr[rows] of a topology part, wherever it lives. */
static fs_status_t part_edges(fs_client_t *c, const layout_t *Y, uint32_t tier, const int64_t *indptr, int64_t rows,
                              int64_t *edges)
{
    fs_error_t err = {0};
    if (!Y->tier_mem[tier]) *edges = indptr[rows];
    else if (fs_cuda_copy(edges, indptr + rows, sizeof *edges, &err) != FS_OK)
        return fs_client_fail(c, err.code, "reading a GPU tier: %s", err.msg);
    if (*edges < 0) return fs_client_fail(c, FS_ERR_FORMAT, "a topology part from the server is malformed");
    return FS_OK;
}

/* The reader's placement: slices, routes, topology parts, preferred sets. */
static fs_status_t map_placement(fs_client_t *c, layout_t *Y, fs_fd_list_t *fds)
{
    const featstore_local_Welcome *w = &Y->w;
    const featstore_local_Tier *tiers = Y->tiers.items;
    size_t isz = fs_dtype_size(Y->index_dtype);
    fs_status_t st = FS_OK;
    for (size_t t = 0; t < Y->tables.count; t++) {
        if (Y->views[t].remote) continue; /* on disk: read through its cache, never placed */
        Y->views[t].num_tiers = (int)Y->tiers.count;
        for (size_t k = 1; k < Y->tiers.count; k++)
            Y->views[t].tier[k] = (fs_tier_ref_t){.kind = tier_kind(tiers[k].kind), .device = tiers[k].device};
    }
    for (size_t i = 0; i < Y->slices.count && !st; i++) {
        const featstore_local_Slice *s = (const featstore_local_Slice *)Y->slices.items + i;
        fs_table_view_t *v = &Y->views[s->table];
        v->tier[s->tier].rows = s->rows;
        st = place_array(c, Y, fds, s->tier, s->offset, (size_t)s->rows * v->row_bytes, &v->tier[s->tier].base);
    }
    for (size_t t = 0; t < Y->tables.count && !st; t++)
        if (fs_local_table_at(Y, t)->routed)
            st = map_next(c, Y, fds, 0, (size_t)w->num_nodes * 8, (const void **)&Y->views[t].route);
    Y->csr.num_parts = (int)Y->tiers.count;
    for (size_t i = 0; i < Y->parts.count && !st; i++) {
        const featstore_local_TopoPart *tp = (const featstore_local_TopoPart *)Y->parts.items + i;
        fs_csr_part_t *p = &Y->csr.part[tp->tier];
        p->rows = tp->rows;
        int64_t edges = 0;
        st = place_array(c, Y, fds, tp->tier, tp->indptr_offset, (size_t)(tp->rows + 1) * 8, (const void **)&p->indptr);
        if (!st) st = part_edges(c, Y, tp->tier, p->indptr, tp->rows, &edges);
        if (!st) st = place_array(c, Y, fds, tp->tier, tp->indices_offset, (size_t)edges * isz, &p->indices);
        if (!st && w->has_weights)
            st = place_array(c, Y, fds, tp->tier, tp->weights_offset, (size_t)edges * 4, (const void **)&p->weights);
    }
    if (!st && w->topo_route) st = map_next(c, Y, fds, 0, (size_t)w->num_nodes * 8, (const void **)&Y->csr.route);
    Y->las = (fs_locality_t){.num_levels = (int)w->las_levels, .num_nodes = w->num_nodes};
    for (int l = 0; l < (int)w->las_levels && !st; l++) {
        st = map_next(c, Y, fds, 0, (size_t)((w->num_nodes + 63) / 64) * 8, (const void **)&Y->las.pref[l]);
        if (!st && w->las_counts) st = map_next(c, Y, fds, 0, (size_t)w->num_nodes * 2, (const void **)&Y->las.count[l]);
    }
    return st;
}

/* A received WELCOME mapped into a new layout (*out); the notice page's
 * descriptor goes to *notice_fd; the slots are left in fds from fds->next. */
fs_status_t fs_local_layout_map(fs_client_t *c, layout_t *Y, fs_fd_list_t *fds, int hello, int reader,
                                int *notice_fd)
{
    fs_status_t st = open_device_tiers(c, Y, reader); /* first: it decides whether mappings need registering */
    if (!st) st = map_files(c, Y, fds);
    if (!st) st = next_fd(c, fds, notice_fd);
    if (!st) st = map_placement(c, Y, fds);
    size_t rest = hello ? Y->w.num_slots + (Y->w.manifest_bytes ? 1 + Y->num_files : 0) : 0;
    if (!st && fds->n - fds->next != rest)
        st = fs_client_fail(c, FS_ERR_FORMAT, "the server sent %zu descriptors, its handshake describes %zu", fds->n,
                            fds->next + rest);
    return st;
}
