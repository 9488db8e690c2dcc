/* fs_gather.c — CPU gather. Random-row gather is bound by DRAM latency, not
 * bandwidth, so the loop keeps about a dozen rows' loads in flight: the
 * route entry is prefetched far ahead, the row's head nearer, then copied.
 * The common case (rows in id order, served as stored) has a loop of its
 * own with nothing else in it; routed and converting gathers share the
 * general one. */
#include "fs_gather.h"

#include <stdlib.h>
#include <string.h>

#define ROW_AHEAD 12      /* at most this many rows' cache lines in flight */
#define LINES_AHEAD 96    /* ...and at most about this many cache lines */
#define ROW_HEAD 256      /* bytes of a row prefetched; the rest streams in behind (hardware prefetcher) */
#define ROUTE_AHEAD 32    /* route entries prefetched ahead of that */
#define GRAIN 2048        /* rows per claimed block */
#define CHECK_BLOCK 512   /* ids range-checked at a time (4 KiB: in L1 for the copy that follows) */
#define MIN_RUN 4         /* consecutive ids copied as one block from this many on */

const char *fs_tier_kind_name(fs_tier_kind_t k)
{
    static const char *const names[FS_TIER_KIND_COUNT_] = {"host", "pinned", "device", "sim_device"};
    return (unsigned)k < FS_TIER_KIND_COUNT_ ? names[k] : "unknown";
}

/* Whether every id in [0, n) is below lim. Branch-free blocks: the common
 * case (all valid) runs at memory speed. */
static int ids_in_range(const int64_t *ids, int64_t n, uint64_t lim)
{
    uint64_t bad = 0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) bad |= (uint64_t)ids[i + k] >= lim;
    for (; i < n; i++) bad |= (uint64_t)ids[i] >= lim;
    return !bad;
}

/* One pass over a block of ids before it is copied: are they all below
 * lim, and does any follow its predecessor (ids[k] == ids[k-1] + 1)? The
 * copy loop then tests for runs only in blocks that have one: a test per
 * row cost ~5% of a one-thread gather of 256-byte rows. */
static int scan_block(const int64_t *ids, int64_t n, uint64_t lim, int *has_runs)
{
    uint64_t bad = n > 0 && (uint64_t)ids[0] >= lim, next = 0;
    for (int64_t k = 1; k < n; k++) {
        bad |= (uint64_t)ids[k] >= lim;
        next |= (uint64_t)ids[k] == (uint64_t)ids[k - 1] + 1; /* unchecked ids: no signed overflow */
    }
    *has_runs = next != 0;
    return !bad;
}

fs_status_t fs_gather_check_ids(const fs_table_view_t *t, const int64_t *ids, int64_t n, fs_error_t *err)
{
    uint64_t lim = (uint64_t)t->num_rows;
    if (ids_in_range(ids, n, lim)) return FS_OK;
    for (int64_t i = 0; i < n; i++)
        if ((uint64_t)ids[i] >= lim)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "id %lld at position %lld is outside [0, %lld)",
                            (long long)ids[i], (long long)i, (long long)t->num_rows);
    return FS_OK;
}

/* f16 -> f32 through a 64K-entry table (256 KiB, stays in L2). */
static float f16_table[65536];
static int f16_table_ready;

static void init_f16_table(void)
{
    if (__atomic_load_n(&f16_table_ready, __ATOMIC_ACQUIRE)) return;
    static float tmp[65536];
    for (uint32_t h = 0; h < 65536; h++) tmp[h] = fs_f16_to_f32((uint16_t)h);
    memcpy(f16_table, tmp, sizeof tmp); /* benign: every writer writes the same bytes */
    __atomic_store_n(&f16_table_ready, 1, __ATOMIC_RELEASE);
}

typedef struct {
    const fs_table_view_t *t;
    const int64_t *ids;
    char *out;
    size_t out_row;
    fs_conv_t conv;
    fs_gather_counters_t *per_worker; /* [pool size] */
    int bad_ids;                      /* set (atomically) by a block holding an id out of range */
} job_t;

static inline const char *row_ptr(const fs_table_view_t *t, int64_t id, int *tier)
{
    if (!t->route) {
        *tier = 0;
        return (const char *)t->tier[0].base + (size_t)id * t->row_bytes;
    }
    uint64_t r = t->route[id];
    *tier = FS_ROUTE_TIER(r);
    return (const char *)t->tier[*tier].base + (size_t)FS_ROUTE_ROW(r) * t->row_bytes;
}

static inline void prefetch_row(const char *p, size_t bytes)
{
    if (bytes > ROW_HEAD) bytes = ROW_HEAD;
    for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch(p + off, 0, 0);
}

static inline void convert_row(fs_conv_t conv, const char *src, char *dst, int64_t dim, size_t bytes)
{
    if (conv == FS_CONV_COPY) {
        memcpy(dst, src, bytes);
    } else if (conv == FS_CONV_INT8) {
        fs_int8_dequantize_row(src, dim - FS_CODEC_INT8_HEAD, (float *)dst);
    } else if (conv == FS_CONV_F16) {
        const uint16_t *s = (const uint16_t *)src;
        float *d = (float *)dst;
        for (int64_t j = 0; j < dim; j++) d[j] = f16_table[s[j]];
    } else {
        const uint16_t *s = (const uint16_t *)src;
        uint32_t *d = (uint32_t *)dst;
        for (int64_t j = 0; j < dim; j++) d[j] = (uint32_t)s[j] << 16;
    }
}

/* How many rows ahead to prefetch: wide rows fewer, so the lines in flight
 * stay near what the core can track (more prefetches than its line-fill
 * buffers only stall the loop: 2 KiB rows gathered at 0.64x a memcpy loop
 * with 12 rows ahead). */
static int64_t rows_ahead(size_t row_bytes)
{
    if (row_bytes > ROW_HEAD) row_bytes = ROW_HEAD;
    int64_t lines = (int64_t)((row_bytes + 63) / 64), ahead = LINES_AHEAD / (lines ? lines : 1);
    return ahead < 2 ? 2 : ahead > ROW_AHEAD ? ROW_AHEAD : ahead;
}

/* How many ids from i on are consecutive (ids[i], ids[i] + 1, ...), up to e. */
static inline int64_t run_length(const int64_t *ids, int64_t i, int64_t e)
{
    int64_t k = i + 1;
    while (k < e && ids[k] == ids[k - 1] + 1) k++;
    return k - i;
}

/* Rows [b, end), looking ahead to rows before e (their ids checked), in
 * the common case: rows stored in id order (no route) and served as
 * stored. Its own loop, because every load and branch the general loop
 * adds per row showed: 256-byte rows went at 0.66-0.8x a plain prefetching
 * memcpy loop through it, and at 1.0x here. One prefetch per 256 bytes of
 * row, up to ROW_HEAD: for small rows the hardware fetches the neighbouring
 * lines itself, and prefetching them too only queued behind the page walks
 * (0.88x with all four lines of a 256-byte row). Runs of consecutive ids
 * (a chunked epoch's rows, docs/algorithms.md §8) are one memcpy each: a
 * bulk copy, not a gather. */
static void copy_rows(const job_t *j, int64_t b, int64_t end, int64_t e, int has_runs)
{
    const int64_t *ids = j->ids;
    const char *base = j->t->tier[0].base;
    const size_t rb = j->t->row_bytes;
    const size_t lines = (rb + 255) / 256, head = lines * 64 < ROW_HEAD ? lines * 64 : ROW_HEAD;
    char *out = j->out;
    for (int64_t i = b; i < end; i++) {
        if (has_runs && i + 1 < end && ids[i + 1] == ids[i] + 1) {
            int64_t run = run_length(ids, i, end);
            if (run >= MIN_RUN) {
                memcpy(out + (size_t)i * rb, base + (size_t)ids[i] * rb, (size_t)run * rb);
                i += run - 1;
                continue;
            }
        }
        if (i + ROW_AHEAD < e) prefetch_row(base + (size_t)ids[i + ROW_AHEAD] * rb, head);
        memcpy(out + (size_t)i * rb, base + (size_t)ids[i] * rb, rb);
    }
}

/* Rows [b, end), looking ahead to rows before e (their ids checked), in
 * general: through the route to any tier (a placement), converting half
 * precision to float32 on the way; rows[] counts the rows read per tier. */
static void convert_rows(const job_t *j, int64_t b, int64_t end, int64_t e, uint64_t *rows)
{
    const fs_table_view_t *t = j->t;
    const int64_t *ids = j->ids;
    const int64_t ahead = rows_ahead(t->row_bytes);
    int tier;
    for (int64_t i = b; i < end; i++) {
        if (t->route && i + ROUTE_AHEAD < e) __builtin_prefetch(&t->route[ids[i + ROUTE_AHEAD]], 0, 0);
        if (i + ahead < e) prefetch_row(row_ptr(t, ids[i + ahead], &tier), t->row_bytes);
        const char *src = row_ptr(t, ids[i], &tier);
        rows[tier]++;
        convert_row(j->conv, src, j->out + (size_t)i * j->out_row, t->dim, t->row_bytes);
    }
}

static void gather_range(void *p, int64_t b, int64_t e, int worker)
{
    job_t *j = p;
    const fs_table_view_t *t = j->t;
    const int plain = !t->route && j->conv == FS_CONV_COPY;
    const uint64_t lim = (uint64_t)t->num_rows;
    uint64_t rows[FS_MAX_TIERS] = {0};
    int tier, has_runs, next_runs = 0;
    /* Ids are checked CHECK_BLOCK at a time, just before they are copied:
     * they are then in L1 for the copy, where a separate pass over all ids
     * first cost ~4% of a one-thread gather. The block after the one being
     * copied is checked first, so that every row the copy looks ahead to
     * (prefetches, and a routed row's route entry, which is read) has a
     * checked id: a wild id is refused, never read through. */
    int64_t checked = e - b < CHECK_BLOCK ? e : b + CHECK_BLOCK;
    if (!scan_block(j->ids + b, checked - b, lim, &has_runs)) goto bad;
    const int64_t ahead = plain ? ROW_AHEAD : rows_ahead(t->row_bytes);
    if (t->route)
        for (int64_t i = b; i < b + ROUTE_AHEAD && i < checked; i++) __builtin_prefetch(&t->route[j->ids[i]], 0, 0);
    for (int64_t i = b; i < b + ahead && i < checked; i++) prefetch_row(row_ptr(t, j->ids[i], &tier), t->row_bytes);
    for (int64_t s = b; s < e; s += CHECK_BLOCK) {
        int64_t end = checked;
        if (end < e) {
            checked = e - end < CHECK_BLOCK ? e : end + CHECK_BLOCK;
            if (!scan_block(j->ids + end, checked - end, lim, &next_runs)) goto bad;
        }
        if (plain) copy_rows(j, s, end, checked, has_runs);
        else convert_rows(j, s, end, checked, rows);
        has_runs = next_runs;
    }
    if (plain) rows[0] = (uint64_t)(e - b);
    fs_gather_counters_t *c = &j->per_worker[worker];
    for (int k = 0; k < t->num_tiers; k++) {
        c->rows[k] += rows[k];
        c->bytes[k] += rows[k] * t->row_bytes;
    }
    return;
bad:
    __atomic_store_n(&j->bad_ids, 1, __ATOMIC_RELAXED);
}

fs_status_t fs_gather_conv(const fs_table_view_t *t, fs_dtype_t out_dtype, fs_conv_t *conv, size_t *out_row,
                           fs_error_t *err)
{
    fs_dtype_t dt;
    int64_t dim;
    fs_status_t st = fs_codec_served(t->codec, t->dtype, t->dim, out_dtype, NULL, &dt, &dim, err);
    if (st != FS_OK) return fs_error_prefix(err, "gather"), st;
    *conv = dt == t->dtype                 ? FS_CONV_COPY
            : t->codec == FS_CODEC_INT8    ? FS_CONV_INT8
            : t->dtype == FS_DTYPE_F16     ? FS_CONV_F16
                                           : FS_CONV_BF16;
    *out_row = *conv == FS_CONV_COPY ? t->row_bytes : (size_t)dim * fs_dtype_size(dt);
    return FS_OK;
}

/* A remote table's rows: fetched as stored, then converted by a gather
 * of the fetched rows in order (a view over them, one tier). */
static fs_status_t gather_remote(const fs_table_view_t *t, const int64_t *ids, int64_t n, fs_dtype_t out_dtype,
                                 void *out, fs_pool_t *pool, fs_gather_counters_t *counters, fs_error_t *err)
{
    fs_status_t st = fs_gather_check_ids(t, ids, n, err);
    if (st != FS_OK) return st;
    if (counters) counters->rows[0] += (uint64_t)n, counters->bytes[0] += (uint64_t)n * t->row_bytes;
    fs_conv_t conv;
    size_t out_row;
    if ((st = fs_gather_conv(t, out_dtype, &conv, &out_row, err)) != FS_OK) return st;
    if (conv == FS_CONV_COPY) return t->remote->rows(t->remote->ctx, ids, n, out, err);
    void *rows = malloc((size_t)n * t->row_bytes + 1);
    int64_t *order = malloc(sizeof *order * (size_t)(n + 1));
    st = rows && order ? t->remote->rows(t->remote->ctx, ids, n, rows, err)
                       : fs_error(err, FS_ERR_NOMEM, "gather: out of memory for %lld remote rows", (long long)n);
    fs_table_view_t here = {.dtype = t->dtype, .num_rows = n, .dim = t->dim, .row_bytes = t->row_bytes, .num_tiers = 1,
                            .codec = t->codec};
    here.tier[0] = (fs_tier_ref_t){.kind = FS_TIER_HOST, .device = -1, .base = rows, .rows = n};
    for (int64_t i = 0; st == FS_OK && i < n; i++) order[i] = i;
    if (st == FS_OK) st = fs_gather_cpu(&here, order, n, out_dtype, out, pool, NULL, err);
    free(rows), free(order);
    return st;
}

fs_status_t fs_gather_cpu(const fs_table_view_t *t, const int64_t *ids, int64_t n, fs_dtype_t out_dtype,
                          void *out, fs_pool_t *pool, fs_gather_counters_t *counters, fs_error_t *err)
{
    if (n < 0 || (n > 0 && (!ids || !out)))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "gather: bad arguments (n=%lld)", (long long)n);
    if (t->remote) return gather_remote(t, ids, n, out_dtype, out, pool, counters, err);
    if (t->num_tiers < 1) /* a table left on disk where nothing was set to read it */
        return fs_error(err, FS_ERR_UNSUPPORTED, "gather: this table's rows are on disk, and this host does not read it");
    fs_conv_t conv;
    size_t out_row;
    fs_status_t st = fs_gather_conv(t, out_dtype, &conv, &out_row, err);
    if (st != FS_OK) return st;
    if (conv == FS_CONV_F16) init_f16_table();

    int workers = fs_pool_size(pool);
    fs_gather_counters_t local[64];
    fs_gather_counters_t *per = workers <= 64 ? local : calloc((size_t)workers, sizeof *per);
    if (!per) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    memset(per, 0, (size_t)workers * sizeof *per);
    job_t j = {.t = t, .ids = ids, .out = out, .out_row = out_row, .conv = conv, .per_worker = per};
    fs_pool_run(pool, n, GRAIN, gather_range, &j);
    if (j.bad_ids) {
        /* Some blocks were skipped: the output is not to be used, and the
         * serial check names the first bad id. */
        if (per != local) free(per);
        return fs_gather_check_ids(t, ids, n, err);
    }
    if (counters)
        for (int w = 0; w < workers; w++)
            for (int k = 0; k < t->num_tiers; k++) {
                counters->rows[k] += per[w].rows[k];
                counters->bytes[k] += per[w].bytes[k];
            }
    if (per != local) free(per);
    return FS_OK;
}
