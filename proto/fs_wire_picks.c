/* fs_wire_picks.c — a ShardPicks answer on the wire (featstore.proto): each
 * row's pick count as a varint, and the sources in 4 bytes each when every
 * one fits, else 8.
 *
 * Why: picks are most of what owner-routed sampling sends that is not rows.
 * As int64 offsets and sources they took 8 + 8k bytes a row of k picks; a
 * count takes 1 byte (k < 128) and a source id 4 below 2^31, so a [15,10,5]
 * batch's picks shrink by half (docs/benchmarks.md, "A sharded cluster").
 * The trainer reads them back into the int64 offsets and sources the merge
 * takes, checking every count and length against the request: the answer
 * comes from another process over the network. */
#include <stdlib.h>
#include <string.h>

#include "fs_wire.h"

size_t fs_wire_counts_bound(int64_t n)
{
    return (size_t)n * 10 + 1; /* a uint64 varint is at most 10 bytes */
}

size_t fs_wire_put_counts(const int64_t *off, int64_t n, uint8_t *out)
{
    size_t at = 0;
    for (int64_t i = 0; i < n; i++) {
        uint64_t k = (uint64_t)(off[i + 1] - off[i]);
        while (k >= 0x80) out[at++] = (uint8_t)(k | 0x80), k >>= 7;
        out[at++] = (uint8_t)k;
    }
    return at;
}

int fs_wire_narrow_ids(const int64_t *ids, int64_t n, int32_t *out)
{
    uint64_t all = 0; /* a negative id sets the top bit too */
    for (int64_t i = 0; i < n; i++) all |= (uint64_t)ids[i], out[i] = (int32_t)ids[i];
    return all <= INT32_MAX;
}

static int grow(int64_t **p, size_t *cap, size_t n)
{
    if (n <= *cap) return 0;
    int64_t *q = realloc(*p, n * sizeof *q);
    if (!q) return -1;
    *p = q, *cap = n;
    return 0;
}

void fs_wire_picks_buf_free(fs_wire_picks_buf_t *b)
{
    free(b->off), free(b->src);
    *b = (fs_wire_picks_buf_t){0};
}

/* counts: exactly n varints, each in range, into off[0..n]. */
static fs_status_t read_counts(const fs_wire_buf_t *counts, int64_t n, int64_t *off, fs_error_t *err)
{
    const uint8_t *p = counts->data, *end = p ? p + counts->len : p;
    off[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        uint64_t k = 0;
        int shift = 0;
        for (;;) {
            if (p == end)
                return fs_error(err, FS_ERR_FORMAT, "counts: %zu bytes end within row %lld of %lld", counts->len,
                                (long long)i, (long long)n);
            uint8_t byte = *p++;
            if (shift == 63 && byte > 1)
                return fs_error(err, FS_ERR_FORMAT, "counts: row %lld's varint is past 64 bits", (long long)i);
            k |= (uint64_t)(byte & 0x7f) << shift;
            if (!(byte & 0x80)) break;
            shift += 7;
        }
        if (k > (uint64_t)INT64_MAX - (uint64_t)off[i])
            return fs_error(err, FS_ERR_FORMAT, "counts: row %lld's %llu picks overflow the total", (long long)i,
                            (unsigned long long)k);
        off[i + 1] = off[i] + (int64_t)k;
    }
    if (p != end)
        return fs_error(err, FS_ERR_FORMAT, "counts: %zu bytes left after %lld rows", (size_t)(end - p),
                        (long long)n);
    return FS_OK;
}

fs_status_t fs_wire_picks_answer(const fs_wire_buf_t *counts, const fs_wire_buf_t *sources, int wide_sources,
                                 const fs_wire_buf_t *edge_ids, int want_ids, int64_t n, fs_wire_picks_buf_t *b,
                                 fs_typed_picks_t *out, fs_error_t *err)
{
    if (n < 0) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "picks: %lld rows", (long long)n);
    if (grow(&b->off, &b->off_cap, (size_t)n + 1))
        return fs_error(err, FS_ERR_NOMEM, "picks: out of memory for %lld rows", (long long)n);
    fs_status_t st = read_counts(counts, n, b->off, err);
    if (st != FS_OK) return st;
    int64_t picks = b->off[n];
    size_t width = wide_sources ? sizeof(int64_t) : sizeof(int32_t);
    if (sources->len % width || (uint64_t)(sources->len / width) != (uint64_t)picks)
        return fs_error(err, FS_ERR_FORMAT, "sources: %zu bytes for %lld picks of %zu bytes", sources->len,
                        (long long)picks, width);
    const int64_t *eid = NULL;
    if (want_ids) {
        int64_t ne;
        if ((st = fs_wire_int64s(edge_ids, "edge_ids", &eid, &ne, err)) != FS_OK) return st;
        if (ne != picks)
            return fs_error(err, FS_ERR_FORMAT, "edge_ids: %lld for %lld picks", (long long)ne, (long long)picks);
    }
    if (grow(&b->src, &b->src_cap, (size_t)picks + 1))
        return fs_error(err, FS_ERR_NOMEM, "picks: out of memory for %lld sources", (long long)picks);
    if (wide_sources) {
        if (picks) memcpy(b->src, sources->data, (size_t)picks * sizeof *b->src);
    } else {
        const uint8_t *p = sources->data; /* may be unaligned: read as bytes */
        for (int64_t i = 0; i < picks; i++) {
            int32_t v;
            memcpy(&v, p + 4 * i, sizeof v);
            b->src[i] = v;
        }
    }
    *out = (fs_typed_picks_t){.n = n, .off = b->off, .src = b->src, .eid = eid};
    return FS_OK;
}
