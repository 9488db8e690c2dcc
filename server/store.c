/* store.c — the tiered store (see store.h).
 *
 * Tier 0 is the dataset as opened: when served, its files' unwritable
 * copies (dataset/served_copy.c), so no tier is backed by a file anyone can
 * truncate.
 *
 * Tier memory: host and simulated-device tiers are memfd segments, reserved
 * whole (fallocate) so running out of memory is an error of the placement or
 * re-plan, not a fault while copying rows, written once and then sealed (no
 * write, no resize) and mapped read-only, so local clients can map the very
 * same pages by descriptor and cannot change them;
 * pinned tiers come from the CUDA runtime. A simulated device enforces its
 * capacity exactly like a GPU would refuse cudaMalloc past its memory.
 *
 * Device tiers are one cudaMalloc each, of the tier's capacity, handed out
 * in 256-byte aligned pieces, so a local trainer opens the whole tier with
 * one CUDA IPC handle (docs/api.md section 6, "GPU tiers"). Their contents are filled
 * once, at freeze: placements only stage the bytes in host memory, then
 * every distinct piece goes host to device once and its replicas on other
 * GPUs (byte-identical pieces: the plan's replicated rows) are copied GPU
 * to GPU with one broadcast (NCCL over NVLink when it loads, else peer
 * copies; fs_device.h). A piece staged twice is kept once.
 *
 * Row tables (a labelled layout's hop tables, fs_dataset_row_table) follow
 * the feature tables: indexed by row, never placed, read from tier 0.
 *
 * Routing: per (reader, table) an N-entry array of FS_ROUTE(tier, row),
 * created on first placement for that reader; readers never placed for read
 * everything from tier 0 (NULL route). fs_store_freeze() turns every route
 * into a sealed memfd as well, after which the store only reads. Readers'
 * preferred sets for locality-aware sampling are sealed memfds from the
 * start (they are built whole before they are handed over). */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fs_shm.h"

typedef struct {
    fs_tier_kind_t kind;
    int device;
    size_t capacity, used;
    /* device tiers: the one allocation, its IPC handle, how it was filled */
    char *block;
    size_t block_off;
    fs_ipc_handle_t ipc;
    char ipc_error[160];          /* why there is no handle ("" = exported) */
    size_t from_host, from_peer;
    const char *peer_method;
} tier_t;

/* A device piece waiting for freeze: `bytes` bytes for `dst`, staged in
 * `src` (owned) or equal to fill `same` (its replica). */
typedef struct {
    int tier;
    char *dst;
    char *src;
    size_t bytes;
    int same;                    /* index of the fill holding the bytes; itself when it holds them */
} fill_t;

/* One block of tier memory: a sealed memfd mapping (fd >= 0) or CUDA memory. */
typedef struct {
    void *addr;
    size_t len;
    int fd;
    fs_tier_kind_t kind;
} seg_t;

typedef struct {
    const fs_table_t *src;
    void *rows[FS_MAX_TIERS];       /* tier k's copy (k >= 1) */
    int64_t nrows[FS_MAX_TIERS];
    uint64_t *route[FS_MAX_READERS];
} table_t;

typedef struct {
    int64_t *indptr;
    void *indices;
    float *weights;
    int64_t rows;
} topo_part_t;

struct fs_store {
    const fs_dataset_t *ds;
    int num_tiers;
    tier_t tier[FS_MAX_TIERS];
    int num_tables;
    table_t *tables;
    topo_part_t topo[FS_MAX_TIERS];
    uint64_t *topo_route[FS_MAX_READERS];
    fs_locality_t las[FS_MAX_READERS];  /* preferred sets per reader, in sealed segments (s unused) */
    seg_t *segs;                 /* every block of tier memory and every frozen route */
    int num_segs, cap_segs;
    fill_t *fills;
    int num_fills, cap_fills;
    uint32_t reads[FS_MAX_READERS];  /* after freeze: bit k = the reader's routes reach tier k */
    int frozen;
    _Atomic int refs;
    _Atomic uint64_t rows[FS_MAX_READERS][FS_MAX_TIERS], bytes[FS_MAX_READERS][FS_MAX_TIERS];
    _Atomic uint64_t topo_rows[FS_MAX_READERS][FS_MAX_TIERS], topo_bytes[FS_MAX_READERS][FS_MAX_TIERS];
};

/* Every store of this process, for the gauges of placements still held. */
static _Atomic int live_stores;
static _Atomic size_t live_bytes[FS_TIER_KIND_COUNT_];

static int reader_index(int reader) { return reader + 1; }

static int valid_reader(int reader) { return reader >= FS_READER_CPU && reader < FS_MAX_DEVICES; }

fs_status_t fs_store_create(const fs_dataset_t *ds, fs_store_t **out, fs_error_t *err)
{
    fs_store_t *s = calloc(1, sizeof *s);
    int rows = fs_dataset_num_row_tables(ds);
    if (!s || !(s->tables = calloc((size_t)(ds->num_tables + rows) + 1, sizeof *s->tables))) {
        free(s);
        return fs_error(err, FS_ERR_NOMEM, "out of memory creating the store");
    }
    s->ds = ds;
    atomic_init(&s->refs, 1);
    s->num_tables = ds->num_tables + rows;
    for (int i = 0; i < ds->num_tables; i++) s->tables[i].src = &ds->tables[i];
    for (int i = 0; i < rows; i++) s->tables[ds->num_tables + i].src = fs_dataset_row_table(ds, i); /* tier 0 only */
    s->num_tiers = 1; /* tier 0: the dataset's mapping (served: its sealed copies) */
    s->tier[0] = (tier_t){.kind = FS_TIER_HOST, .device = -1, .used = fs_dataset_bytes(ds)};
    atomic_fetch_add(&live_stores, 1);
    *out = s;
    return FS_OK;
}

/* ---- tier memory ------------------------------------------------------------ */

static void seg_release(seg_t *g)
{
    if (g->kind == FS_TIER_PINNED) fs_cuda_free_pinned(g->addr);
    else if (g->kind == FS_TIER_DEVICE) fs_cuda_free_device(g->addr);
    else if (g->addr) munmap(g->addr, g->len ? g->len : 1);
    if (g->fd >= 0) close(g->fd);
}

fs_store_t *fs_store_retain(fs_store_t *s)
{
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
    return s;
}

void fs_store_destroy(fs_store_t *s)
{
    if (!s || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1) return;
    for (int i = 0; i < s->num_segs; i++) seg_release(&s->segs[i]);
    for (int k = 1; k < s->num_tiers; k++) atomic_fetch_sub(&live_bytes[s->tier[k].kind], s->tier[k].used);
    atomic_fetch_sub(&live_stores, 1);
    for (int i = 0; i < s->num_fills; i++) free(s->fills[i].src);
    free(s->fills);
    if (!s->frozen) { /* routes still private heap arrays */
        for (int i = 0; i < s->num_tables; i++)
            for (int r = 0; r < FS_MAX_READERS; r++) free(s->tables[i].route[r]);
        for (int r = 0; r < FS_MAX_READERS; r++) free(s->topo_route[r]);
    }
    free(s->segs);
    free(s->tables);
    free(s);
}

fs_status_t fs_store_add_tier(fs_store_t *s, fs_tier_kind_t kind, int device, size_t capacity, int *tier,
                              fs_error_t *err)
{
    if (s->num_tiers == FS_MAX_TIERS)
        return fs_error(err, FS_ERR_RESOURCE, "store: at most %d tiers", FS_MAX_TIERS);
    if ((unsigned)kind >= FS_TIER_KIND_COUNT_)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "store: unknown tier kind %d", (int)kind);
    int on_device = kind == FS_TIER_DEVICE || kind == FS_TIER_SIM_DEVICE;
    if (on_device && (device < 0 || device >= FS_MAX_DEVICES))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "store: device id %d outside [0, %d)", device, FS_MAX_DEVICES);
    if (s->frozen) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "store: frozen; tiers can no longer be added");
    if (kind == FS_TIER_DEVICE && capacity == 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "store: a device tier needs its capacity up front (it is one "
                        "allocation)");
    tier_t t = {.kind = kind, .device = on_device ? device : -1, .capacity = capacity};
    if (kind == FS_TIER_PINNED || kind == FS_TIER_DEVICE) {
        void *probe; /* fail now, not at the first placement, when there is no GPU */
        fs_status_t st = kind == FS_TIER_PINNED ? fs_cuda_alloc_pinned(64, &probe, err)
                                                : fs_cuda_alloc_device(device, 64, &probe, err);
        if (st != FS_OK) return st;
        if (kind == FS_TIER_PINNED) fs_cuda_free_pinned(probe);
        else fs_cuda_free_device(probe);
    }
    *tier = s->num_tiers;
    s->tier[s->num_tiers++] = t;
    return FS_OK;
}

int fs_store_num_tiers(const fs_store_t *s) { return s->num_tiers; }

void fs_store_tier_info(const fs_store_t *s, int tier, fs_store_tier_t *out)
{
    const tier_t *t = &s->tier[tier];
    *out = (fs_store_tier_t){.kind = t->kind, .device = t->device, .capacity = t->capacity, .used = t->used,
                             .from_host = t->from_host, .from_peer = t->from_peer, .peer_method = t->peer_method};
}

static seg_t *seg_push(fs_store_t *s)
{
    if (s->num_segs == s->cap_segs) {
        int cap = s->cap_segs ? s->cap_segs * 2 : 64;
        seg_t *g = realloc(s->segs, (size_t)cap * sizeof *g);
        if (!g) return NULL;
        s->segs = g;
        s->cap_segs = cap;
    }
    return &s->segs[s->num_segs++];
}

/* A writable memfd of `bytes` for host-side tier memory, its pages
 * allocated now, huge where the host allows (fs_shm.h). */
static fs_status_t memfd_segment(seg_t *g, size_t bytes, const char *name, fs_error_t *err)
{
    g->fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (g->fd < 0) return fs_error(err, FS_ERR_NOMEM, "store: memfd_create: %s", strerror(errno));
    g->len = bytes;
    return fs_shm_map_reserved(g->fd, bytes, "store: tier memory", &g->addr, err);
}

/* Seals a written memfd segment (no write, no resize, no more seals) and
 * maps it read-only; *p follows the new address. */
static fs_status_t seg_seal(seg_t *g, void **p, fs_error_t *err)
{
    if (g->fd < 0) return FS_OK; /* CUDA memory: nothing to share by descriptor */
    munmap(g->addr, g->len ? g->len : 1);
    g->addr = NULL;
    if (fcntl(g->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0)
        return fs_error(err, FS_ERR_IO, "store: cannot seal tier memory: %s", strerror(errno));
    g->addr = mmap(NULL, g->len ? g->len : 1, PROT_READ, MAP_SHARED, g->fd, 0);
    if (g->addr == MAP_FAILED) {
        g->addr = NULL;
        return fs_error(err, FS_ERR_NOMEM, "store: cannot map sealed tier memory: %s", strerror(errno));
    }
    madvise(g->addr, g->len ? g->len : 1, MADV_HUGEPAGE); /* map the huge pages it has as such; best effort */
    *p = g->addr;
    return FS_OK;
}

#define DEVICE_ALIGN 256 /* cudaMalloc's own alignment: every piece can be read with vector loads */

static size_t align_device(size_t x) { return (x + DEVICE_ALIGN - 1) & ~(size_t)(DEVICE_ALIGN - 1); }

/* A piece of a device tier's one allocation (made at the first piece). */
static fs_status_t device_piece(fs_store_t *s, tier_t *t, size_t bytes, void **p, fs_error_t *err)
{
    if (!t->block) {
        seg_t *seg = seg_push(s);
        if (!seg) return fs_error(err, FS_ERR_NOMEM, "out of memory");
        *seg = (seg_t){.fd = -1, .kind = FS_TIER_DEVICE, .len = t->capacity};
        fs_status_t st = fs_cuda_alloc_device(t->device, t->capacity, &seg->addr, err);
        if (st != FS_OK) {
            s->num_segs--;
            return st;
        }
        t->block = seg->addr;
    }
    size_t off = align_device(t->block_off);
    if (off + bytes > t->capacity)
        return fs_error(err, FS_ERR_RESOURCE, "store: device tier on GPU %d cannot take %zu more bytes: %zu of its "
                        "%zu used", t->device, bytes, off, t->capacity);
    *p = t->block + off;
    atomic_fetch_add(&live_bytes[t->kind], off + bytes - t->block_off);
    t->used += off + bytes - t->block_off;
    t->block_off = off + bytes;
    return FS_OK;
}

/* Allocates bytes in a tier, within its capacity; *g is its segment (NULL
 * for a device piece). */
static fs_status_t tier_alloc(fs_store_t *s, int tier, size_t bytes, void **p, seg_t **g, fs_error_t *err)
{
    tier_t *t = &s->tier[tier];
    *p = NULL;
    *g = NULL;
    if (t->capacity && t->used + bytes > t->capacity)
        return fs_error(err, FS_ERR_RESOURCE, "store: tier %d (%s %d) cannot take %zu more bytes: %zu of %zu used",
                        tier, fs_tier_kind_name(t->kind), t->device, bytes, t->used, t->capacity);
    if (t->kind == FS_TIER_DEVICE) return device_piece(s, t, bytes, p, err);
    seg_t *seg = seg_push(s);
    if (!seg) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    *seg = (seg_t){.fd = -1, .kind = t->kind, .len = bytes};
    fs_status_t st;
    if (t->kind == FS_TIER_PINNED) st = fs_cuda_alloc_pinned(bytes, &seg->addr, err);
    else st = memfd_segment(seg, bytes, "featstore-tier", err);
    if (st == FS_OK) {
        t->used += bytes;
        atomic_fetch_add(&live_bytes[t->kind], bytes);
        *p = seg->addr;
        *g = seg;
    }
    return st;
}

/* Whether fill `root`'s replica group already has a piece on `device`
 * (a broadcast sends to each GPU once). */
static int group_has_device(const fs_store_t *s, int root, int device)
{
    for (int i = root; i < s->num_fills; i++)
        if (s->fills[i].same == root && s->tier[s->fills[i].tier].device == device) return 1;
    return 0;
}

/* Stages a device piece for freeze (run_fills), taking *src: a piece equal
 * to one staged before is kept once, as its replica. */
static fs_status_t stage_fill(fs_store_t *s, int tier, void *dst, char **src, size_t bytes, fs_error_t *err)
{
    if (s->num_fills == s->cap_fills) {
        int cap = s->cap_fills ? 2 * s->cap_fills : 16;
        fill_t *f = realloc(s->fills, (size_t)cap * sizeof *f);
        if (!f) return fs_error(err, FS_ERR_NOMEM, "out of memory");
        s->fills = f, s->cap_fills = cap;
    }
    int me = s->num_fills, same = me;
    for (int i = 0; i < me && same == me; i++) {
        const fill_t *f = &s->fills[i];
        if (f->same == i && f->bytes == bytes && !group_has_device(s, i, s->tier[tier].device) &&
            memcmp(f->src, *src, bytes) == 0)
            same = i;
    }
    s->fills[me] = (fill_t){.tier = tier, .dst = dst, .bytes = bytes, .same = same};
    if (same == me) s->fills[me].src = *src, *src = NULL;
    s->num_fills++;
    return FS_OK;
}

/* Fills tier memory from host bytes (*src; a device tier takes it) and
 * seals it. */
static fs_status_t tier_fill(fs_store_t *s, int tier, seg_t *g, void **p, char **src, size_t bytes, fs_error_t *err)
{
    if (s->tier[tier].kind == FS_TIER_DEVICE) return stage_fill(s, tier, *p, src, bytes, err);
    memcpy(*p, *src, bytes);
    return seg_seal(g, p, err);
}

/* One staged piece and its replicas: host to its GPU once, then GPU to GPU. */
static fs_status_t run_fill(fs_store_t *s, int root, fs_error_t *err)
{
    fill_t *f = &s->fills[root];
    int devices[FS_MAX_DEVICES], n = 0;
    void *bufs[FS_MAX_DEVICES];
    for (int i = root; i < s->num_fills && n < FS_MAX_DEVICES; i++)
        if (s->fills[i].same == root) {
            devices[n] = s->tier[s->fills[i].tier].device;
            bufs[n++] = s->fills[i].dst;
        }
    fs_status_t st = fs_cuda_copy(f->dst, f->src, f->bytes, err);
    s->tier[f->tier].from_host += f->bytes;
    const char *method = NULL;
    if (st == FS_OK && n > 1) st = fs_cuda_broadcast(devices, bufs, n, f->bytes, &method, err);
    for (int i = root + 1; st == FS_OK && i < s->num_fills; i++)
        if (s->fills[i].same == root) {
            s->tier[s->fills[i].tier].from_peer += f->bytes;
            s->tier[s->fills[i].tier].peer_method = method;
        }
    free(f->src);
    f->src = NULL;
    return st;
}

/* Freeze: every device tier's contents, then its IPC handle (a tier that
 * cannot be exported still serves in-process; local GPU trainers are told
 * why they cannot have it). */
static fs_status_t run_fills(fs_store_t *s, fs_error_t *err)
{
    fs_status_t st = FS_OK;
    for (int i = 0; i < s->num_fills && st == FS_OK; i++)
        if (s->fills[i].same == i) st = run_fill(s, i, err);
    for (int k = 1; k < s->num_tiers && st == FS_OK; k++) {
        tier_t *t = &s->tier[k];
        fs_error_t e = {0};
        if (t->block && fs_cuda_ipc_export(t->block, &t->ipc, &e) != FS_OK)
            snprintf(t->ipc_error, sizeof t->ipc_error, "%.150s", e.msg);
    }
    return st;
}

/* ---- routing ---------------------------------------------------------------- */

/* Lower is closer for this reader: local GPU, peer GPU, pinned, host arena, mmap. */
static int closeness(const fs_store_t *s, int reader, int tier)
{
    if (tier == 0) return 4;
    const tier_t *t = &s->tier[tier];
    if (t->kind == FS_TIER_DEVICE || t->kind == FS_TIER_SIM_DEVICE) return t->device == reader ? 0 : 1;
    return t->kind == FS_TIER_PINNED ? 2 : 3;
}

static fs_status_t check_readers(const fs_store_t *s, int tier, uint32_t readers, fs_error_t *err)
{
    if (readers >> FS_MAX_READERS)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "store: reader mask 0x%x names unknown readers", readers);
    if (s->tier[tier].kind == FS_TIER_DEVICE && (readers & FS_READER_BIT(FS_READER_CPU)))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "store: the CPU cannot read GPU memory (tier %d)", tier);
    return FS_OK;
}

/* Points readers' routes for ids[i] at (tier, i): where that is closer
 * (masks == NULL, every reader in `readers`), or exactly as per-row masks
 * say (a placement plan's decision). */
static fs_status_t route_to(fs_store_t *s, uint64_t **routes, int tier, const int64_t *ids, int64_t n, uint32_t readers,
                            const uint32_t *masks, int64_t num_rows, fs_error_t *err)
{
    for (int r = FS_READER_CPU; r < FS_MAX_DEVICES; r++) {
        if (!(readers & FS_READER_BIT(r))) continue;
        uint64_t **route = &routes[reader_index(r)];
        if (!*route) {
            if (!(*route = malloc((size_t)num_rows * sizeof **route)))
                return fs_error(err, FS_ERR_NOMEM, "store: out of memory for a %lld-entry route", (long long)num_rows);
            for (int64_t v = 0; v < num_rows; v++) (*route)[v] = FS_ROUTE(0, v);
        }
        int mine = closeness(s, r, tier);
        for (int64_t i = 0; i < n; i++) {
            int take = masks ? (masks[i] & FS_READER_BIT(r)) != 0
                             : mine < closeness(s, r, FS_ROUTE_TIER((*route)[ids[i]]));
            if (take) (*route)[ids[i]] = FS_ROUTE(tier, i);
        }
    }
    return FS_OK;
}

static uint32_t union_of(const uint32_t *masks, int64_t n)
{
    uint32_t u = 0;
    for (int64_t i = 0; i < n; i++) u |= masks[i];
    return u;
}

static table_t *find_table(const fs_store_t *s, const char *name)
{
    for (int i = 0; i < s->num_tables; i++)
        if (strcmp(s->tables[i].src->name, name) == 0) return &s->tables[i];
    return NULL;
}

static fs_status_t check_place(const fs_store_t *s, int tier, const int64_t *ids, int64_t n, uint32_t readers,
                               fs_error_t *err)
{
    if (s->frozen) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "store: frozen; placement can no longer change");
    if (tier < 1 || tier >= s->num_tiers)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "store: tier %d does not exist (tiers 1..%d take placements)",
                        tier, s->num_tiers - 1);
    for (int64_t i = 0; i < n; i++)
        if ((uint64_t)ids[i] >= (uint64_t)s->ds->num_nodes)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "store: node %lld at position %lld is outside [0, %lld)",
                            (long long)ids[i], (long long)i, (long long)s->ds->num_nodes);
    return check_readers(s, tier, readers, err);
}

static fs_status_t place_rows(fs_store_t *s, const char *table, int tier, const int64_t *ids, int64_t n,
                              uint32_t readers, const uint32_t *masks, fs_error_t *err)
{
    table_t *t = find_table(s, table);
    if (!t) return fs_error(err, FS_ERR_NOT_FOUND, "store: no feature table '%s'", table);
    if (t - s->tables >= s->ds->num_tables) /* indexed by row, not node: nothing to place by node id */
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "store: '%s' is a row table: it is read from tier 0 only", table);
    if (t->src->on_disk)
        return fs_error(err, FS_ERR_UNSUPPORTED, "store: table '%s' is served from disk (the memory budget): placing "
                        "its rows in other tiers is not supported", table);
    fs_status_t st = check_place(s, tier, ids, n, readers, err);
    if (st != FS_OK) return st;
    if (t->rows[tier]) return fs_error(err, FS_ERR_EXISTS, "store: table '%s' already has rows in tier %d", table, tier);
    size_t rb = t->src->row_bytes, bytes = (size_t)n * rb;
    char *buf = malloc(bytes ? bytes : 1);
    seg_t *g;
    if (!buf) return fs_error(err, FS_ERR_NOMEM, "store: out of memory");
    for (int64_t i = 0; i < n; i++) memcpy(buf + (size_t)i * rb, (const char *)t->src->data + (size_t)ids[i] * rb, rb);
    st = tier_alloc(s, tier, bytes, &t->rows[tier], &g, err);
    if (st == FS_OK) st = tier_fill(s, tier, g, &t->rows[tier], &buf, bytes, err);
    free(buf);
    t->nrows[tier] = n;
    if (st == FS_OK) st = route_to(s, t->route, tier, ids, n, readers, masks, s->ds->num_nodes, err);
    return st;
}

fs_status_t fs_store_place_rows(fs_store_t *s, const char *table, int tier, const int64_t *ids, int64_t n,
                                uint32_t readers, fs_error_t *err)
{
    return place_rows(s, table, tier, ids, n, readers, NULL, err);
}

fs_status_t fs_store_place_rows_routed(fs_store_t *s, const char *table, int tier, const int64_t *ids, int64_t n,
                                       const uint32_t *readers, fs_error_t *err)
{
    return place_rows(s, table, tier, ids, n, union_of(readers, n), readers, err);
}

static fs_status_t place_topology(fs_store_t *s, int tier, const int64_t *nodes, int64_t n, uint32_t readers,
                                  const uint32_t *masks, fs_error_t *err)
{
    fs_status_t st = check_place(s, tier, nodes, n, readers, err);
    if (st != FS_OK) return st;
    topo_part_t *p = &s->topo[tier];
    if (p->indptr) return fs_error(err, FS_ERR_EXISTS, "store: tier %d already holds topology", tier);
    const fs_dataset_t *ds = s->ds;
    size_t isz = fs_dtype_size(ds->index_dtype);
    int64_t *ip = malloc(((size_t)n + 1) * sizeof *ip);
    if (!ip) return fs_error(err, FS_ERR_NOMEM, "store: out of memory");
    ip[0] = 0;
    for (int64_t i = 0; i < n; i++) ip[i + 1] = ip[i] + ds->indptr[nodes[i] + 1] - ds->indptr[nodes[i]];
    int64_t e = ip[n];
    char *ix = malloc((size_t)e * isz + 1);
    float *w = ds->edge_weights ? malloc((size_t)e * sizeof *w + 1) : NULL;
    if (!ix || (ds->edge_weights && !w)) st = fs_error(err, FS_ERR_NOMEM, "store: out of memory");
    for (int64_t i = 0; st == FS_OK && i < n; i++) {
        int64_t b = ds->indptr[nodes[i]], deg = ip[i + 1] - ip[i];
        memcpy(ix + (size_t)ip[i] * isz, (const char *)ds->indices + (size_t)b * isz, (size_t)deg * isz);
        if (w) memcpy(w + ip[i], ds->edge_weights + b, (size_t)deg * sizeof *w);
    }
    seg_t *g;
    if (!st) st = tier_alloc(s, tier, ((size_t)n + 1) * sizeof *ip, (void **)&p->indptr, &g, err);
    if (!st) st = tier_fill(s, tier, g, (void **)&p->indptr, (char **)&ip, ((size_t)n + 1) * sizeof *ip, err);
    if (!st) st = tier_alloc(s, tier, (size_t)e * isz, &p->indices, &g, err);
    if (!st) st = tier_fill(s, tier, g, &p->indices, &ix, (size_t)e * isz, err);
    if (!st && w) st = tier_alloc(s, tier, (size_t)e * sizeof *w, (void **)&p->weights, &g, err);
    if (!st && w) st = tier_fill(s, tier, g, (void **)&p->weights, (char **)&w, (size_t)e * sizeof *w, err);
    p->rows = n;
    free(ip), free(ix), free(w);
    if (st == FS_OK) st = route_to(s, s->topo_route, tier, nodes, n, readers, masks, ds->num_nodes, err);
    return st;
}

fs_status_t fs_store_place_topology(fs_store_t *s, int tier, const int64_t *nodes, int64_t n, uint32_t readers,
                                    fs_error_t *err)
{
    return place_topology(s, tier, nodes, n, readers, NULL, err);
}

fs_status_t fs_store_place_topology_routed(fs_store_t *s, int tier, const int64_t *nodes, int64_t n,
                                           const uint32_t *readers, fs_error_t *err)
{
    return place_topology(s, tier, nodes, n, union_of(readers, n), readers, err);
}

/* ---- freezing and sharing -------------------------------------------------------- */

/* Moves a heap route into a sealed memfd mapping. */
static fs_status_t freeze_route(fs_store_t *s, uint64_t **route, int64_t n, fs_error_t *err)
{
    if (!*route) return FS_OK;
    seg_t *g = seg_push(s);
    if (!g) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    *g = (seg_t){.fd = -1, .kind = FS_TIER_HOST};
    fs_status_t st = memfd_segment(g, (size_t)n * sizeof **route, "featstore-route", err);
    if (st != FS_OK) return st;
    memcpy(g->addr, *route, (size_t)n * sizeof **route);
    free(*route);
    *route = g->addr;
    return seg_seal(g, (void **)route, err);
}

/* ---- preferred sets for locality-aware sampling ---------------------------------- */

static int fd_of(const fs_store_t *s, const void *addr);

/* A sealed read-only copy of bytes at src. */
static fs_status_t sealed_copy(fs_store_t *s, const void *src, size_t bytes, const char *name, const void **out,
                               fs_error_t *err)
{
    seg_t *g = seg_push(s);
    if (!g) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    *g = (seg_t){.fd = -1, .kind = FS_TIER_HOST};
    fs_status_t st = memfd_segment(g, bytes, name, err);
    if (st != FS_OK) return st;
    if (bytes) memcpy(g->addr, src, bytes);
    void *p = NULL;
    st = seg_seal(g, &p, err);
    *out = p;
    return st;
}

static size_t las_bitmap_bytes(int64_t n) { return (size_t)((n + 63) / 64) * sizeof(uint64_t); }

/* Whether the reader's stored sets equal `sets` bit for bit. */
static int las_equal(const fs_locality_t *a, const fs_locality_t *b, int64_t n)
{
    if (a->num_levels != b->num_levels) return 0;
    for (int l = 0; l < a->num_levels; l++) {
        if (memcmp(a->pref[l], b->pref[l], las_bitmap_bytes(n)) != 0) return 0;
        if (!a->count[l] != !b->count[l]) return 0;
        if (a->count[l] && memcmp(a->count[l], b->count[l], (size_t)n * sizeof(uint16_t)) != 0) return 0;
    }
    return 1;
}

fs_status_t fs_store_set_locality(fs_store_t *s, int reader, const fs_locality_t *sets, fs_error_t *err)
{
    int64_t n = s->ds->num_nodes;
    if (!valid_reader(reader)) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "store: reader %d is not valid", reader);
    if (s->frozen) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "store: frozen; preferred sets can no longer be set");
    if (!sets || sets->num_levels < 1 || sets->num_levels > FS_MAX_HOPS)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "store: preferred sets need 1..%d levels, got %d", FS_MAX_HOPS,
                        sets ? sets->num_levels : 0);
    if (sets->num_nodes != n)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "store: preferred sets cover %lld nodes, the dataset has %lld",
                        (long long)sets->num_nodes, (long long)n);
    fs_locality_t *dst = &s->las[reader_index(reader)];
    if (dst->num_levels)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "store: reader %d already has preferred sets", reader);
    for (int l = 0; l < sets->num_levels; l++) {
        if (!sets->pref[l])
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "store: preferred set Q_%d of reader %d is NULL", l + 1,
                            reader);
        if (!sets->count[l] != !sets->count[0])
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "store: reader %d's preferred sets have counts on some "
                            "levels only (level %d differs from level 1)", reader, l + 1);
    }
    for (int r = 0; r < FS_MAX_READERS; r++) /* share an equal reader's memory instead of a second copy */
        if (s->las[r].num_levels && las_equal(&s->las[r], sets, n)) {
            *dst = s->las[r];
            return FS_OK;
        }
    fs_locality_t copy = {.num_levels = sets->num_levels, .num_nodes = n};
    fs_status_t st = FS_OK;
    for (int l = 0; l < sets->num_levels && st == FS_OK; l++) {
        const void *p = NULL;
        st = sealed_copy(s, sets->pref[l], las_bitmap_bytes(n), "featstore-las-pref", &p, err);
        copy.pref[l] = p;
        if (st == FS_OK && sets->count[l]) {
            st = sealed_copy(s, sets->count[l], (size_t)n * sizeof(uint16_t), "featstore-las-count", &p, err);
            copy.count[l] = p;
        }
    }
    if (st == FS_OK) *dst = copy; /* on failure the segments made so far are released with the store */
    return st;
}

void fs_store_locality(const fs_store_t *s, int reader, double boost, fs_locality_t *out)
{
    memset(out, 0, sizeof *out);
    if (valid_reader(reader)) *out = s->las[reader_index(reader)];
    out->s = boost;
}

int fs_store_locality_fd(const fs_store_t *s, int reader, int level, int which)
{
    if (!valid_reader(reader)) return -1;
    const fs_locality_t *l = &s->las[reader_index(reader)];
    if (level < 1 || level > l->num_levels) return -1;
    return fd_of(s, which == 0 ? (const void *)l->pref[level - 1] : (const void *)l->count[level - 1]);
}

/* The tiers a route points into (tier 0 always: unrouted reads go there). */
static uint32_t route_tiers(const uint64_t *route, int64_t n)
{
    uint32_t mask = 1;
    for (int64_t v = 0; route && v < n; v++) mask |= 1u << FS_ROUTE_TIER(route[v]);
    return mask;
}

uint32_t fs_store_reader_tiers(const fs_store_t *s, int reader)
{
    return valid_reader(reader) && s->frozen ? s->reads[reader_index(reader)] : 1;
}

fs_status_t fs_store_freeze(fs_store_t *s, fs_error_t *err)
{
    if (s->frozen) return FS_OK;
    fs_status_t st = run_fills(s, err);
    for (int r = 0; r < FS_MAX_READERS && !st; r++) {
        s->reads[r] = route_tiers(s->topo_route[r], s->ds->num_nodes);
        for (int i = 0; i < s->num_tables; i++) s->reads[r] |= route_tiers(s->tables[i].route[r], s->ds->num_nodes);
    }
    for (int i = 0; i < s->num_tables && !st; i++)
        for (int r = 0; r < FS_MAX_READERS && !st; r++) st = freeze_route(s, &s->tables[i].route[r], s->ds->num_nodes, err);
    for (int r = 0; r < FS_MAX_READERS && !st; r++) st = freeze_route(s, &s->topo_route[r], s->ds->num_nodes, err);
    if (st == FS_OK) s->frozen = 1;
    return st;
}

int fs_store_frozen(const fs_store_t *s) { return s->frozen; }

static int fd_of(const fs_store_t *s, const void *addr)
{
    for (int i = 0; addr && i < s->num_segs; i++)
        if (s->segs[i].addr == addr) return s->segs[i].fd;
    return -1;
}

/* Where addr lies: its own sealed memfd, or a piece of a device tier's allocation. */
static void slice_of(const fs_store_t *s, int tier, const void *addr, int64_t rows, fs_store_slice_t *out)
{
    const tier_t *t = &s->tier[tier];
    *out = (fs_store_slice_t){.rows = addr ? rows : 0, .fd = -1};
    if (!addr) return;
    if (t->block) out->offset = (size_t)((const char *)addr - t->block);
    else out->fd = fd_of(s, addr);
}

void fs_store_table_slice(const fs_store_t *s, const char *table, int tier, fs_store_slice_t *out)
{
    const table_t *t = find_table(s, table);
    *out = (fs_store_slice_t){.fd = -1};
    if (t && tier >= 1 && tier < s->num_tiers) slice_of(s, tier, t->rows[tier], t->nrows[tier], out);
}

fs_status_t fs_store_tier_ipc(const fs_store_t *s, int tier, fs_ipc_handle_t *h, size_t *bytes, fs_error_t *err)
{
    const tier_t *t = tier >= 1 && tier < s->num_tiers ? &s->tier[tier] : NULL;
    if (!t || !t->block) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "store: tier %d is not device memory", tier);
    if (!s->frozen) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "store: device tiers are filled at freeze");
    if (t->ipc_error[0])
        return fs_error(err, FS_ERR_UNSUPPORTED, "the device tier on GPU %d cannot be shared with other processes "
                        "(CUDA IPC: %s)", t->device, t->ipc_error);
    *h = t->ipc;
    *bytes = t->capacity;
    return FS_OK;
}

int fs_store_route_fd(const fs_store_t *s, const char *table, int reader)
{
    const table_t *t = find_table(s, table);
    return t && valid_reader(reader) ? fd_of(s, t->route[reader_index(reader)]) : -1;
}

void fs_store_topology_slice(const fs_store_t *s, int tier, int which, fs_store_slice_t *out)
{
    *out = (fs_store_slice_t){.fd = -1};
    if (tier < 1 || tier >= s->num_tiers) return;
    const topo_part_t *p = &s->topo[tier];
    slice_of(s, tier, which == 0 ? (void *)p->indptr : which == 1 ? p->indices : (void *)p->weights, p->rows, out);
}

void fs_store_live(fs_store_live_t *out)
{
    out->stores = atomic_load(&live_stores);
    out->device_bytes = atomic_load(&live_bytes[FS_TIER_DEVICE]) + atomic_load(&live_bytes[FS_TIER_SIM_DEVICE]);
    out->host_bytes = atomic_load(&live_bytes[FS_TIER_HOST]) + atomic_load(&live_bytes[FS_TIER_PINNED]);
}

int fs_store_topology_route_fd(const fs_store_t *s, int reader)
{
    return valid_reader(reader) ? fd_of(s, s->topo_route[reader_index(reader)]) : -1;
}

/* ---- views and reads ----------------------------------------------------------- */

fs_status_t fs_store_table_view(const fs_store_t *s, const char *table, int reader, fs_table_view_t *out,
                                fs_error_t *err)
{
    const table_t *t = find_table(s, table);
    if (!t) return fs_error(err, FS_ERR_NOT_FOUND, "no feature table '%s'", table);
    if (!valid_reader(reader)) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "reader %d is not valid", reader);
    memset(out, 0, sizeof *out);
    out->dtype = t->src->dtype;
    out->num_rows = t->src->rows;
    out->dim = t->src->dim;
    out->row_bytes = t->src->row_bytes;
    out->codec = t->src->codec;
    if (t->src->on_disk) { /* every row through the host's disk table (never placed: place_rows) */
        if (!t->src->remote)
            return fs_error(err, FS_ERR_UNSUPPORTED, "table '%s' is on disk, and nothing here reads it", table);
        out->remote = t->src->remote;
        return FS_OK;
    }
    out->num_tiers = s->num_tiers;
    out->tier[0] = (fs_tier_ref_t){.kind = FS_TIER_HOST, .device = -1, .base = t->src->data, .rows = t->src->rows};
    for (int k = 1; k < s->num_tiers; k++)
        out->tier[k] = (fs_tier_ref_t){.kind = s->tier[k].kind, .device = s->tier[k].device, .base = t->rows[k],
                                       .rows = t->nrows[k]};
    out->route = t->route[reader_index(reader)];
    return FS_OK;
}

void fs_store_csr_view(const fs_store_t *s, int reader, fs_csr_view_t *out)
{
    const fs_dataset_t *ds = s->ds;
    fs_csr_view_init(out, ds->num_nodes, ds->indptr, ds->indices, ds->index_dtype, ds->edge_weights);
    out->num_parts = s->num_tiers;
    for (int k = 1; k < s->num_tiers; k++)
        out->part[k] = (fs_csr_part_t){.indptr = s->topo[k].indptr, .indices = s->topo[k].indices,
                                       .weights = s->topo[k].weights, .rows = s->topo[k].rows};
    out->route = valid_reader(reader) ? s->topo_route[reader_index(reader)] : NULL;
}

static void add_counters(_Atomic uint64_t (*rows)[FS_MAX_TIERS], _Atomic uint64_t (*bytes)[FS_MAX_TIERS], int tiers,
                         int reader, const fs_gather_counters_t *c)
{
    if (!valid_reader(reader)) return;
    int r = reader_index(reader);
    for (int k = 0; k < tiers; k++) {
        if (c->rows[k]) atomic_fetch_add_explicit(&rows[r][k], c->rows[k], memory_order_relaxed);
        if (c->bytes[k]) atomic_fetch_add_explicit(&bytes[r][k], c->bytes[k], memory_order_relaxed);
    }
}

static void read_counters(_Atomic uint64_t (*rows)[FS_MAX_TIERS], _Atomic uint64_t (*bytes)[FS_MAX_TIERS], int tiers,
                          int reader, fs_gather_counters_t *out)
{
    memset(out, 0, sizeof *out);
    if (!valid_reader(reader)) return;
    int r = reader_index(reader);
    for (int k = 0; k < tiers; k++) {
        out->rows[k] = atomic_load_explicit(&rows[r][k], memory_order_relaxed);
        out->bytes[k] = atomic_load_explicit(&bytes[r][k], memory_order_relaxed);
    }
}

void fs_store_count(fs_store_t *s, int reader, const fs_gather_counters_t *c)
{
    add_counters(s->rows, s->bytes, s->num_tiers, reader, c);
}

void fs_store_counters(const fs_store_t *s, int reader, fs_gather_counters_t *out)
{
    read_counters(((fs_store_t *)s)->rows, ((fs_store_t *)s)->bytes, s->num_tiers, reader, out);
}

void fs_store_count_topology(fs_store_t *s, int reader, const fs_gather_counters_t *c)
{
    add_counters(s->topo_rows, s->topo_bytes, s->num_tiers, reader, c);
}

void fs_store_topology_counters(const fs_store_t *s, int reader, fs_gather_counters_t *out)
{
    read_counters(((fs_store_t *)s)->topo_rows, ((fs_store_t *)s)->topo_bytes, s->num_tiers, reader, out);
}

fs_status_t fs_store_host_view(const fs_store_t *s, const char *table, int reader, fs_table_view_t *out,
                               fs_error_t *err)
{
    fs_status_t st = fs_store_table_view(s, table, reader, out, err);
    if (st != FS_OK) return st;
    for (int k = 1; k < out->num_tiers; k++)
        if (out->tier[k].kind == FS_TIER_DEVICE && out->tier[k].base && out->route)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "reader %d's view of '%s' includes GPU memory; gather it "
                            "with fs_gather_cuda", reader, table);
    return FS_OK;
}

fs_status_t fs_store_gather(fs_store_t *s, const char *table, int reader, const int64_t *ids, int64_t n,
                            fs_dtype_t out_dtype, void *out, fs_pool_t *pool, fs_error_t *err)
{
    fs_table_view_t v;
    fs_status_t st = fs_store_host_view(s, table, reader, &v, err);
    if (st != FS_OK) return st;
    fs_gather_counters_t c = {0};
    st = fs_gather_cpu(&v, ids, n, out_dtype, out, pool, &c, err);
    if (st == FS_OK) fs_store_count(s, reader, &c);
    return st;
}
