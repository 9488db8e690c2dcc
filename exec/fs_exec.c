/* fs_exec.c — homogeneous requests through the executor's stages (fs_exec.h).
 *
 * Design: each stage is one function over the host's fs_exec_t, and
 * fs_exec_run chains them into a region. The region is laid out as the
 * sampler left it: the CPU sampler writes its result arrays straight into
 * the region where they fit (fs_sampler_set_output), so only the arrays
 * outside it are copied — in pieces on the host's pool, since a batch's
 * arrays run to megabytes and copied on one thread they were the serial
 * tail of a parallel sample — and the rows follow, 64-byte aligned. */
#include "fs_exec.h"

#include <string.h>

#include "fs_device.h"

size_t fs_exec_row_bytes(const fs_exec_req_t *r)
{
    fs_conv_t conv;
    size_t out_row = 0;
    if (r->table && fs_gather_conv(r->table, r->dtype, &conv, &out_row, NULL) != FS_OK) out_row = 0;
    return out_row;
}

int64_t fs_exec_row_dim(const fs_exec_req_t *r)
{
    size_t size = fs_dtype_size(r->dtype);
    return size ? (int64_t)(fs_exec_row_bytes(r) / size) : 0;
}

fs_status_t fs_exec_check(const fs_exec_t *x, const fs_exec_req_t *r, fs_error_t *err)
{
    return fs_limits_check(x->limits, r->n, r->sample, fs_exec_row_bytes(r), err);
}

/* ---- stage 2: the engine the reader's views call for ------------------------------- */

/* Locality-aware sampling (locality > 1) through the reader's preferred
 * sets; the per-edge weights go into the blocks (they live in the sampler,
 * like the rest of the result). */
static fs_status_t sample_boosted(fs_exec_t *x, const fs_exec_req_t *r, fs_sample_result_t *res, fs_error_t *err)
{
    const fs_sample_req_t *req = r->sample;
    if (!x->las || x->las->num_levels == 0)
        return fs_error(err, FS_ERR_UNSUPPORTED, "locality = %g: %s", req->locality, x->no_las);
    if (req->num_hops > x->las->num_levels)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality = %g: the server's preferred sets serve requests of "
                        "up to %d hops; this one has %d (use locality 0 for it)", req->locality, x->las->num_levels,
                        req->num_hops);
    fs_locality_t loc = *x->las;
    loc.s = req->locality;
    fs_las_weights_t w;
    fs_status_t st = fs_sample_locality_cpu(x->sampler, x->graph, r->ids, r->n, req, &loc, res, &w,
                                            &x->reads->topology, err);
    for (int h = 0; st == FS_OK && h < res->num_hops; h++) res->block[h].edge_weights = w.weight[h];
    return st;
}

/* The GPU's engine when the views reach device tiers (the CPU cannot read
 * them), else the CPU's. */
static fs_status_t sample_any(fs_exec_t *x, const fs_exec_req_t *r, fs_sample_result_t *res, fs_error_t *err)
{
    const fs_sample_req_t *req = r->sample;
    fs_gather_counters_t *topo = &x->reads->topology;
    if (x->device < 0)
        return req->locality > 1 ? sample_boosted(x, r, res, err)
                                 : fs_sample_cpu(x->sampler, x->graph, r->ids, r->n, req, res, topo, err);
    if (req->locality > 1)
        return fs_error(err, FS_ERR_UNSUPPORTED, "locality = %g: locality-aware sampling runs on the CPU engine, "
                        "which cannot read gpu:%d's tiers in GPU memory (use locality 0 on this device)",
                        req->locality, x->device);
    fs_status_t st = fs_sample_cuda(x->sampler, x->device, x->graph, r->ids, r->n, req, res, err);
    if (st == FS_OK) fs_sample_count_topology(x->graph, req, res, topo); /* the GPU engine counts nothing */
    return st;
}

fs_status_t fs_exec_sample(fs_exec_t *x, const fs_exec_req_t *r, fs_sample_result_t *res, fs_error_t *err)
{
    fs_status_t st = sample_any(x, r, res, err);
    return st == FS_OK ? fs_limits_check_result(x->limits, res, fs_exec_row_bytes(r), err) : st;
}

/* ---- stage 4 ------------------------------------------------------------------- */

fs_status_t fs_exec_gather(fs_exec_t *x, const fs_table_view_t *table, const int64_t *ids, int64_t n,
                           fs_dtype_t dtype, void *out, fs_error_t *err)
{
    return fs_gather_cpu(table, ids, n, dtype, out, x->pool, &x->reads->features, err);
}

/* A GPU reader's rows: the ids go to device memory, the kernel reads every
 * tier (its GPU, peers, host over UVA) and writes the rows after them. */
static fs_status_t gather_on_device(fs_exec_t *x, fs_exec_region_t *into, const fs_exec_req_t *r,
                                    const int64_t *ids, int64_t n, const void **rows, fs_error_t *err)
{
    size_t ids_bytes = ((size_t)n * sizeof *ids + 63) & ~(size_t)63;
    char *dev = NULL;
    fs_status_t st = into->device_mem(into, ids_bytes + (size_t)n * fs_exec_row_bytes(r) + 64, &dev, err);
    if (st == FS_OK && n) st = fs_cuda_copy(dev, ids, (size_t)n * sizeof *ids, err);
    if (st == FS_OK)
        st = fs_gather_cuda(x->device, r->table, (const int64_t *)dev, n, r->dtype, dev + ids_bytes,
                            &x->reads->features, err);
    *rows = dev + ids_bytes;
    return st;
}

/* ---- a sample laid out in a region ------------------------------------------------ */

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

#define COPY_PIECE ((size_t)256 << 10)
#define COPY_ARRAYS (2 + 5 * FS_MAX_HOPS) /* nodes, seeds; per hop offsets, dst, src, ids, weights */

typedef struct {
    char *dst[COPY_ARRAYS];
    const char *src[COPY_ARRAYS];
    size_t bytes[COPY_ARRAYS], first_piece[COPY_ARRAYS + 1];
    int n;
} copies_t;

static void copy_pieces(void *ctx, int64_t begin, int64_t end, int worker)
{
    (void)worker;
    const copies_t *c = ctx;
    for (int64_t k = begin; k < end; k++) {
        int i = 0;
        while (c->first_piece[i + 1] <= (size_t)k) i++;
        size_t at = ((size_t)k - c->first_piece[i]) * COPY_PIECE, len = c->bytes[i] - at;
        memcpy(c->dst[i] + at, c->src[i] + at, len < COPY_PIECE ? len : COPY_PIECE);
    }
}

/* Where the region was while the sampler wrote into it. */
typedef struct {
    const char *base;
    size_t len;
} span_t;

static int in_span(const span_t *w, const void *p, size_t bytes)
{
    const char *q = p;
    return w->base && q >= w->base && bytes <= w->len && (size_t)(q - w->base) <= w->len - bytes;
}

/* The bytes place_sample copies: the arrays outside `was`. */
static size_t sample_bytes(const fs_sample_result_t *r, const span_t *was)
{
#define OUTSIDE(ptr, count, elem) \
    (in_span(was, (ptr), (size_t)(count) * (elem)) ? 0 : align64((size_t)(count) * (elem)))
    size_t b = OUTSIDE(r->nodes, r->num_nodes, 8) + OUTSIDE(r->seed_local, r->num_seeds, 8);
    for (int h = 0; h < r->num_hops; h++) {
        const fs_block_t *k = &r->block[h];
        b += OUTSIDE(k->dst_offsets, k->num_dst + 1, 8) + OUTSIDE(k->edge_dst, k->num_edges, 8) +
             OUTSIDE(k->edge_src, k->num_edges, 8) + (k->edge_ids ? OUTSIDE(k->edge_ids, k->num_edges, 8) : 0) +
             (k->edge_weights ? OUTSIDE(k->edge_weights, k->num_edges, sizeof(float)) : 0);
    }
#undef OUTSIDE
    return b;
}

/* Points *out at the result r in the region at `base`. The arrays the
 * sampler wrote into the region stay there: `was` is where the region was
 * then (growing it since may have moved it). The others are laid out at
 * *off and copied there on the pool. */
static void place_sample(fs_sample_result_t *out, const fs_sample_result_t *r, const span_t *was, char *base,
                         size_t *off, fs_pool_t *pool)
{
    copies_t c = {.n = 0};
#define PUT(to, from, count, elem)                                                     \
    do {                                                                               \
        size_t bytes_ = (size_t)(count) * (elem);                                      \
        const char *from_ = (const char *)(from);                                      \
        if (in_span(was, from_, bytes_)) {                                             \
            (to) = (void *)(base + (from_ - was->base));                               \
            break;                                                                     \
        }                                                                              \
        c.dst[c.n] = base + *off;                                                      \
        c.src[c.n] = from_;                                                            \
        c.bytes[c.n++] = bytes_;                                                       \
        (to) = (void *)(base + *off);                                                  \
        *off = align64(*off + bytes_);                                                 \
    } while (0)
    *out = (fs_sample_result_t){.num_hops = r->num_hops, .num_nodes = r->num_nodes, .num_seeds = r->num_seeds};
    PUT(out->nodes, r->nodes, r->num_nodes, 8);
    PUT(out->seed_local, r->seed_local, r->num_seeds, 8);
    for (int h = 0; h < r->num_hops; h++) {
        const fs_block_t *s = &r->block[h];
        fs_block_t *d = &out->block[h];
        *d = (fs_block_t){.num_dst = s->num_dst, .num_src = s->num_src, .num_edges = s->num_edges};
        PUT(d->dst_offsets, s->dst_offsets, s->num_dst + 1, 8);
        PUT(d->edge_dst, s->edge_dst, s->num_edges, 8);
        PUT(d->edge_src, s->edge_src, s->num_edges, 8);
        if (s->edge_ids) PUT(d->edge_ids, s->edge_ids, s->num_edges, 8);
        if (s->edge_weights) PUT(d->edge_weights, s->edge_weights, s->num_edges, sizeof(float)); /* after the int64s */
    }
#undef PUT
    c.first_piece[0] = 0;
    for (int i = 0; i < c.n; i++) c.first_piece[i + 1] = c.first_piece[i] + (c.bytes[i] + COPY_PIECE - 1) / COPY_PIECE;
    fs_pool_run(pool, (int64_t)c.first_piece[c.n], 1, copy_pieces, &c);
}

/* ---- stages 1-5 into a region ----------------------------------------------------- */

/* Stages 2-3 with the CPU sampler's output in the region where it fits. */
static fs_status_t sample_into(fs_exec_t *x, const fs_exec_req_t *r, fs_exec_region_t *into, fs_sample_result_t *res,
                               span_t *was, size_t *used, fs_error_t *err)
{
    if (x->device < 0) { /* straight into the region where it has room: no copy */
        *was = (span_t){into->base, into->cap};
        fs_sampler_set_output(x->sampler, into->base, into->cap);
    }
    fs_status_t st = sample_any(x, r, res, err);
    *used = fs_sampler_output_used(x->sampler);
    fs_sampler_set_output(x->sampler, NULL, 0); /* never into the region by mistake, even after a refusal */
    return st == FS_OK ? fs_limits_check_result(x->limits, res, fs_exec_row_bytes(r), err) : st;
}

fs_status_t fs_exec_run(fs_exec_t *x, const fs_exec_req_t *r, fs_exec_region_t *into, fs_exec_result_t *out,
                        fs_error_t *err)
{
    fs_sample_result_t res;
    span_t was = {0};
    size_t used = 0;
    *out = (fs_exec_result_t){.rows_device = -1};
    fs_status_t st = fs_exec_check(x, r, err);
    if (st == FS_OK && into->take) st = into->take(into, err);
    if (st == FS_OK && r->sample) st = sample_into(x, r, into, &res, &was, &used, err);
    if (st != FS_OK) return st;
    /* a GPU reader's rows on its GPU; a table read from disk (remote) by the CPU, into host memory */
    int on_device = x->device >= 0 && !(r->table && r->table->remote);
    int64_t nrows = r->table ? (r->sample ? res.num_nodes : r->n) : 0;
    size_t off = align64(used), need = off + (r->sample ? sample_bytes(&res, &was) : 0) +
                                       (on_device ? 0 : (size_t)nrows * fs_exec_row_bytes(r)) + 64;
    if ((st = into->grow(into, need, err)) != FS_OK) return st;
    const int64_t *ids = r->ids;
    if (r->sample) {
        place_sample(&out->sample, &res, &was, into->base, &off, x->pool);
        ids = out->sample.nodes; /* in the region: it may have moved as it grew */
    }
    if (!r->table) return FS_OK;
    out->num_rows = nrows;
    if (on_device) {
        out->rows_device = x->device;
        return gather_on_device(x, into, r, ids, nrows, &out->rows, err);
    }
    out->rows = into->base + off;
    return fs_exec_gather(x, r->table, ids, nrows, r->dtype, into->base + off, err);
}
