/* local_welcome.c — what a WELCOME tells a unix:// client
 * (local_internal.h): the dataset's part, made once when serving starts —
 * copies of the descriptors the dataset validated (its unwritable copies
 * when served: dataset/served_copy.c), the manifest in a sealed memfd and
 * the notice page — and its reader's placement in the store served now:
 * the tiers its routes reach, the slices of its tables and topology in
 * them, their routes and preferred sets, and a GPU reader's device tiers'
 * IPC handles, each with its descriptor in WELCOME order. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "disk_tables.h"
#include "local_internal.h"

/* A copy of fd for the trainers, kept with the data descriptors. */
static fs_status_t share_fd(fs_local_server_t *s, int fd, fs_error_t *err)
{
    int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) return fs_error(err, FS_ERR_IO, "local: cannot share a descriptor: %s", strerror(errno));
    if (fs_fd_list_push(&s->data_fds, copy) != 0) {
        close(copy);
        return fs_error(err, FS_ERR_NOMEM, "out of memory");
    }
    return FS_OK;
}

/* A table served from disk: its file, the shared row cache and the
 * checksums, which the trainer reads through itself (6.4). */
static fs_status_t share_disk_table(fs_local_server_t *s, const fs_table_t *src, featstore_local_Table *t,
                                    fs_error_t *err)
{
    fs_disk_share_t d;
    if (fs_disk_tables_share(fs_engine_disk_tables(s->engine), src, &d) != FS_OK)
        return fs_error(err, FS_ERR_INTERNAL, "local: table '%s' is on disk but not served from it", src->name);
    t->on_disk = true;
    t->cache_bytes = d.cache_bytes;
    t->data_offset = (int64_t)src->file_offset;
    fs_status_t st = share_fd(s, d.table_fd, err);
    if (st == FS_OK) st = share_fd(s, d.cache_fd, err);
    if (st == FS_OK) st = share_fd(s, d.sums_fd, err);
    return st;
}

/* A copy of the descriptor the dataset validated (its unwritable copy
 * when served: dataset/served_copy.c), never the path opened again. */
static fs_status_t open_data_fd(fs_local_server_t *s, const void *data, int64_t *offset, fs_error_t *err)
{
    int kept;
    if (fs_dataset_locate(fs_engine_dataset(s->engine), data, &kept, offset) != FS_OK)
        return fs_error(err, FS_ERR_INTERNAL, "local: an array of the dataset is not file-backed");
    return share_fd(s, kept, err);
}

static fs_status_t open_notice(fs_local_server_t *s, fs_error_t *err)
{
    int fd = memfd_create("featstore-notice", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, FS_LOCAL_NOTICE_BYTES) != 0 || fs_fd_list_push(&s->data_fds, fd) != 0) {
        if (fd >= 0) close(fd);
        return fs_error(err, FS_ERR_NOMEM, "local: cannot create the notice page: %s", strerror(errno));
    }
    s->notice = mmap(NULL, FS_LOCAL_NOTICE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (s->notice == MAP_FAILED) {
        s->notice = NULL;
        return fs_error(err, FS_ERR_NOMEM, "local: cannot map the notice page: %s", strerror(errno));
    }
    uint64_t generation;
    fs_store_destroy(fs_engine_acquire(s->engine, &generation));
    atomic_store(s->notice, generation);
    return FS_OK;
}

/* 6.3: the manifest as parsed, in a sealed memfd, and a copy of every
 * dataset file's validated descriptor, so trainers open the dataset the
 * server validated (typed sampling runs in the trainer: fs_hetero.h). */
static fs_status_t prepare_files(fs_local_server_t *s, fs_error_t *err)
{
    const fs_dataset_t *ds = fs_engine_dataset(s->engine);
    if (!ds->manifest) return fs_error(err, FS_ERR_INTERNAL, "local: the dataset kept no manifest");
    int fd = memfd_create("featstore-manifest", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    int ok = fd >= 0 && write(fd, ds->manifest, ds->manifest_len) == (ssize_t)ds->manifest_len &&
             fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) == 0 &&
             fs_fd_list_push(&s->file_fds, fd) == 0;
    if (!ok) {
        if (fd >= 0) close(fd);
        return fs_error(err, FS_ERR_IO, "local: cannot share the manifest: %s", strerror(errno));
    }
    s->welcome.manifest_bytes = ds->manifest_len;
    for (int i = 0; i < fs_dataset_num_files(ds); i++) {
        int copy = fcntl(fs_dataset_file_fd(ds, i), F_DUPFD_CLOEXEC, 0);
        if (copy < 0 || fs_fd_list_push(&s->file_fds, copy) != 0) {
            if (copy >= 0) close(copy);
            return fs_error(err, FS_ERR_IO, "local: cannot share %s: %s", fs_dataset_file_name(ds, i), strerror(errno));
        }
    }
    return FS_OK;
}

static const char *file_name_at(void *ctx, size_t i) { return fs_dataset_file_name(ctx, (int)i); }

fs_status_t fs_local_prepare_welcome(fs_local_server_t *s, fs_error_t *err)
{
    const fs_dataset_t *ds = fs_engine_dataset(s->engine);
    const fs_limits_t *l = fs_engine_limits(s->engine);
    featstore_local_Welcome *w = &s->welcome;
    *w = (featstore_local_Welcome)featstore_local_Welcome_init_zero;
    w->major = FS_LOCAL_MAJOR;
    w->max_ids = l->max_ids, w->max_fanout_product = l->max_fanout_product;
    w->max_response_bytes = l->max_response_bytes;
    snprintf(w->dataset, sizeof w->dataset, "%s", ds->name);
    snprintf(w->index_dtype, sizeof w->index_dtype, "int64");
    fs_status_t st = prepare_files(s, err);
    if (st == FS_OK && fs_dataset_is_typed(ds)) { /* no version-1 arrays: typed calls only */
        w->typed = true;
        return open_notice(s, err);
    }
    if (st != FS_OK) return st;
    w->has_weights = ds->edge_weights != NULL;
    w->num_nodes = ds->num_nodes, w->num_edges = ds->num_edges;
    snprintf(w->index_dtype, sizeof w->index_dtype, "%s", fs_dtype_name(ds->index_dtype));
    st = open_data_fd(s, ds->indptr, &w->indptr_offset, err);
    if (!st) st = open_data_fd(s, ds->indices, &w->indices_offset, err);
    if (!st && ds->edge_weights) st = open_data_fd(s, ds->edge_weights, &w->weights_offset, err);
    int rows = fs_dataset_num_row_tables(ds);
    if (!st && !(s->tables = calloc((size_t)(ds->num_tables + rows) + 1, sizeof *s->tables)))
        st = fs_error(err, FS_ERR_NOMEM, "out of memory");
    for (int i = 0; !st && i < ds->num_tables + rows; i++) { /* the feature tables, then the row tables */
        const fs_table_t *src = i < ds->num_tables ? &ds->tables[i] : fs_dataset_row_table(ds, i - ds->num_tables);
        featstore_local_Table *t = &s->tables[s->num_tables++];
        snprintf(t->name, sizeof t->name, "%s", src->name);
        snprintf(t->dtype, sizeof t->dtype, "%s", fs_dtype_name(src->dtype));
        if (src->codec != FS_CODEC_NONE) snprintf(t->codec, sizeof t->codec, "%s", fs_codec_name(src->codec));
        t->rows = src->rows;
        t->dim = src->dim;
        st = src->on_disk ? share_disk_table(s, src, t, err) : open_data_fd(s, src->data, &t->data_offset, err);
    }
    return st ? st : open_notice(s, err);
}

void fs_local_server_notify(fs_local_server_t *s, uint64_t generation)
{
    if (s) atomic_store(s->notice, generation);
}

/* The reader's placement in store `st`, as WELCOME lists it, with its
 * descriptors (the store's: send before releasing it) in WELCOME order. */
typedef struct {
    featstore_local_Table *tables;   /* the server's, with this reader's `routed` */
    featstore_local_Tier tiers[FS_MAX_TIERS];
    int reads_device[FS_MAX_TIERS];  /* the reader reads this device tier: it gets its IPC handle */
    featstore_local_Slice *slices;
    featstore_local_TopoPart parts[FS_MAX_TIERS];
    size_t num_tiers, num_slices, num_parts;
    fs_fd_list_t fds;
} placement_t;

static void placement_free(placement_t *p)
{
    free(p->tables);
    free(p->slices);
    free(p->fds.fd);
}

static fs_status_t add_fd(placement_t *p, int fd, fs_error_t *err)
{
    return fs_fd_list_push(&p->fds, fd) == 0 ? FS_OK : fs_error(err, FS_ERR_NOMEM, "out of memory");
}

/* A slice's descriptor, or for a device tier the note that the reader needs
 * the tier's IPC handle. */
static fs_status_t add_slice(fs_store_t *st, placement_t *p, size_t tier, const fs_store_slice_t *sl, fs_error_t *err)
{
    if (sl->fd >= 0) return add_fd(p, sl->fd, err);
    fs_store_tier_t ti;
    fs_store_tier_info(st, (int)tier, &ti);
    if (ti.kind != FS_TIER_DEVICE)
        return fs_error(err, FS_ERR_UNSUPPORTED, "tier %zu holds %s memory, which is not handed to local clients; "
                        "connect as another reader", tier, fs_tier_kind_name(ti.kind));
    p->reads_device[tier] = 1;
    return FS_OK;
}

/* Each table's slice in each placed tier, then each routed table's route. */
static fs_status_t add_tables(fs_local_server_t *s, fs_store_t *st, int reader, placement_t *p, fs_error_t *err)
{
    p->tables = calloc(s->num_tables + 1, sizeof *p->tables);
    p->slices = calloc(s->num_tables * p->num_tiers + 1, sizeof *p->slices);
    if (!p->tables || !p->slices) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    if (s->num_tables) memcpy(p->tables, s->tables, s->num_tables * sizeof *p->tables); /* none on a typed graph */
    fs_status_t rc = FS_OK;
    for (size_t t = 0; t < s->num_tables && rc == FS_OK; t++)
        for (size_t k = 1; k < p->num_tiers && rc == FS_OK; k++) {
            fs_store_slice_t sl;
            if (!(fs_store_reader_tiers(st, reader) & (1u << k))) continue; /* its routes never go there */
            fs_store_table_slice(st, p->tables[t].name, (int)k, &sl);
            if (sl.rows <= 0) continue;
            p->slices[p->num_slices++] = (featstore_local_Slice){.table = (uint32_t)t, .tier = (uint32_t)k,
                                                                 .rows = sl.rows, .offset = sl.offset};
            rc = add_slice(st, p, k, &sl, err);
        }
    for (size_t t = 0; t < s->num_tables && rc == FS_OK; t++) {
        int fd = fs_store_route_fd(st, p->tables[t].name, reader);
        p->tables[t].routed = fd >= 0;
        if (fd >= 0) rc = add_fd(p, fd, err);
    }
    return rc;
}

/* Each tier's topology part, the topology route and the preferred sets. */
static fs_status_t add_topology(fs_store_t *st, int reader, int weighted, placement_t *p, int *las_levels,
                                int *las_counts, fs_error_t *err)
{
    fs_status_t rc = FS_OK;
    for (size_t k = 1; k < p->num_tiers && rc == FS_OK; k++) {
        fs_store_slice_t ip, ix, w;
        if (!(fs_store_reader_tiers(st, reader) & (1u << k))) continue;
        fs_store_topology_slice(st, (int)k, 0, &ip);
        fs_store_topology_slice(st, (int)k, 1, &ix);
        fs_store_topology_slice(st, (int)k, 2, &w);
        if (ip.rows <= 0) continue;
        p->parts[p->num_parts++] = (featstore_local_TopoPart){.tier = (uint32_t)k, .rows = ip.rows,
                                                              .indptr_offset = ip.offset,
                                                              .indices_offset = ix.offset,
                                                              .weights_offset = w.offset};
        rc = add_slice(st, p, k, &ip, err);
        if (rc == FS_OK) rc = add_slice(st, p, k, &ix, err);
        if (rc == FS_OK && weighted) rc = add_slice(st, p, k, &w, err);
    }
    int route = fs_store_topology_route_fd(st, reader);
    if (rc == FS_OK && route >= 0) rc = add_fd(p, route, err);
    fs_locality_t las; /* the reader's preferred sets, when the placement built some */
    fs_store_locality(st, reader, 1, &las);
    *las_levels = las.num_levels;
    *las_counts = las.num_levels > 0 && las.count[0] != NULL;
    for (int l = 1; l <= las.num_levels && rc == FS_OK; l++) {
        int pref = fs_store_locality_fd(st, reader, l, 0), count = fs_store_locality_fd(st, reader, l, 1);
        if (pref < 0 || (*las_counts && count < 0))
            return fs_error(err, FS_ERR_INTERNAL, "reader %d's preferred set Q_%d has no descriptor", reader, l);
        rc = add_fd(p, pref, err);
        if (rc == FS_OK && *las_counts) rc = add_fd(p, count, err);
    }
    return rc;
}

/* The IPC handle of every device tier the reader reads from (6.2). */
static fs_status_t add_handles(fs_store_t *st, unsigned minor, int reader, placement_t *p, fs_error_t *err)
{
    for (size_t k = 1; k < p->num_tiers; k++) {
        if (!p->reads_device[k]) continue;
        if (minor < 2)
            return fs_error(err, FS_ERR_VERSION, "gpu:%d reads GPU tiers, which are handed over by CUDA IPC handle "
                            "since local protocol %d.2; this client speaks %d.%u: upgrade its featstore library",
                            reader, FS_LOCAL_MAJOR, FS_LOCAL_MAJOR, minor);
        fs_ipc_handle_t h;
        size_t bytes;
        fs_status_t rc = fs_store_tier_ipc(st, (int)k, &h, &bytes, err);
        if (rc != FS_OK) return rc;
        p->tiers[k].bytes = bytes;
        p->tiers[k].ipc_handle.size = FS_IPC_HANDLE_BYTES;
        memcpy(p->tiers[k].ipc_handle.bytes, h.bytes, FS_IPC_HANDLE_BYTES);
    }
    return FS_OK;
}

static fs_status_t describe_placement(fs_local_server_t *s, fs_store_t *st, int reader, unsigned minor,
                                      featstore_local_Welcome *w, placement_t *p, fs_error_t *err)
{
    if (!fs_store_frozen(st)) return fs_error(err, FS_ERR_INTERNAL, "the store is not frozen");
    p->num_tiers = (size_t)fs_store_num_tiers(st);
    for (size_t k = 0; k < p->num_tiers; k++) {
        fs_store_tier_t ti;
        fs_store_tier_info(st, (int)k, &ti);
        p->tiers[k] = (featstore_local_Tier){.device = ti.device};
        snprintf(p->tiers[k].kind, sizeof p->tiers[k].kind, "%s", fs_tier_kind_name(ti.kind));
    }
    for (size_t i = 0; i < s->data_fds.n; i++)
        if (add_fd(p, s->data_fds.fd[i], err) != FS_OK) return err->code;
    int levels = 0, counts = 0;
    fs_status_t rc = add_tables(s, st, reader, p, err);
    if (rc == FS_OK) rc = add_topology(st, reader, w->has_weights, p, &levels, &counts, err);
    if (rc == FS_OK) rc = add_handles(st, minor, reader, p, err);
    w->reader = reader;
    w->topo_route = fs_store_topology_route_fd(st, reader) >= 0;
    w->las_levels = (uint32_t)levels;
    w->las_counts = counts;
    return rc;
}

/* WELCOME with its first descriptors, then FDS frames with the rest. */
static int send_welcome_frames(client_t *c, featstore_local_Welcome *w, const fs_fd_list_t *fds)
{
    size_t first = fds->n < FS_LOCAL_MAX_FDS ? fds->n : FS_LOCAL_MAX_FDS;
    w->num_fds = (uint32_t)fds->n;
    if (fs_local_send_msg(c->fd, FS_LOCAL_WELCOME, featstore_local_Welcome_fields, w, fds->fd, (int)first,
                          MSG_DONTWAIT) != 0)
        return -1;
    for (size_t off = first; off < fds->n; off += FS_LOCAL_MAX_FDS) {
        size_t n = fds->n - off < FS_LOCAL_MAX_FDS ? fds->n - off : FS_LOCAL_MAX_FDS;
        if (fs_local_send(c->fd, FS_LOCAL_FDS, NULL, 0, fds->fd + off, (int)n, MSG_DONTWAIT) != 0) return -1;
    }
    return 0;
}

/* Adds `slots` new result slots (the client's until it goes: drop_client
 * closes them) to the descriptors. */
static int add_slots(client_t *c, int slots, placement_t *p)
{
    for (int i = 0; i < slots; i++) {
        if (c->num_slots == FS_LOCAL_MAX_SLOTS) return -1; /* on_hello allows 1..64, once: never reached */
        int fd = memfd_create("featstore-slot", MFD_CLOEXEC);
        if (fd < 0) return -1;
        c->slots[c->num_slots++] = fd;
        if (fs_fd_list_push(&p->fds, fd) != 0) return -1;
    }
    return 0;
}

/* 6.3, in the reply to HELLO only (the files do not change; a RELAYOUT
 * client keeps its own): the manifest and the files' descriptors after
 * the slots, and their names. */
static int add_files(fs_local_server_t *s, client_t *c, int slots, featstore_local_Welcome *w, placement_t *p,
                     fs_pb_strings_t *names)
{
    if (c->minor < 3 || slots == 0) {
        w->manifest_bytes = 0;
        return 0;
    }
    const fs_dataset_t *ds = fs_engine_dataset(s->engine);
    for (size_t i = 0; i < s->file_fds.n; i++)
        if (fs_fd_list_push(&p->fds, s->file_fds.fd[i]) != 0) return -1;
    *names = (fs_pb_strings_t){.count = (size_t)fs_dataset_num_files(ds), .get = file_name_at, .ctx = (void *)ds};
    fs_pb_set_strings(&w->files, names);
    return 0;
}

/* Sends a WELCOME describing the placement served now to c's reader, with
 * new result slots when `slots` > 0 (HELLO) and none otherwise (RELAYOUT).
 * 0, or -1 to drop the client. */
int fs_local_send_welcome(fs_local_server_t *s, client_t *c, int slots)
{
    featstore_local_Welcome w = s->welcome;
    w.minor = c->minor;
    fs_pb_strings_t files;
    placement_t p = {0};
    fs_error_t err = {0};
    fs_store_t *store = fs_engine_acquire(s->engine, &w.generation);
    int rc, sent = 0;
    if (describe_placement(s, store, c->reader, c->minor, &w, &p, &err) != FS_OK) {
        rc = fs_local_send_error(c->fd, err.code, err.msg, MSG_DONTWAIT);
    } else if (add_slots(c, slots, &p) != 0 || add_files(s, c, slots, &w, &p, &files) != 0) {
        fs_local_send_error(c->fd, FS_ERR_NOMEM, "cannot create result slots", MSG_DONTWAIT);
        rc = -1;
    } else {
        fs_pb_list_t tables, tiers, slices, parts;
        FS_PB_FROM_ARRAY(&tables, featstore_local_Table, p.tables, s->num_tables);
        FS_PB_FROM_ARRAY(&tiers, featstore_local_Tier, p.tiers, p.num_tiers);
        FS_PB_FROM_ARRAY(&slices, featstore_local_Slice, p.slices, p.num_slices);
        FS_PB_FROM_ARRAY(&parts, featstore_local_TopoPart, p.parts, p.num_parts);
        fs_pb_set_list(&w.tables, &tables);
        fs_pb_set_list(&w.tiers, &tiers);
        fs_pb_set_list(&w.slices, &slices);
        fs_pb_set_list(&w.topo_parts, &parts);
        w.num_slots = (uint32_t)slots;
        rc = send_welcome_frames(c, &w, &p.fds);
        sent = rc == 0;
    }
    /* Held until the client moves on or goes: its descriptors keep host
     * tiers alive by themselves, but device tiers it opened by IPC handle
     * live only while this process keeps them. A client refused a new
     * placement goes on reading its old one, which stays held. */
    fs_store_t *done = sent ? c->store : store;
    if (sent) c->store = store;
    fs_store_destroy(done);
    placement_free(&p);
    return rc;
}
