/* test_wire_picks.c — a ShardPicks answer on the wire (proto/fs_wire_picks.c):
 * counts written as varints and sources narrowed to int32 read back to the
 * same offsets and sources, for rows of 0, 1, 127, 128 and 300 picks and ids
 * on both sides of 2^31 (then sent wide); and every malformed answer a shard
 * could send refused by name: counts cut inside a varint, bytes left over,
 * a varint past 64 bits, counts that overflow the total, sources or edge
 * ids too few or too many, a source array not a whole number of ids. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "fs_wire.h"

static fs_wire_buf_t buf(const void *p, size_t len)
{
    return (fs_wire_buf_t){.data = (void *)p, .len = len};
}

/* Answers rows with the given counts and sources (int64) as a shard does;
 * reads them back; returns the status. */
static fs_status_t round_trip(const int64_t *count, int64_t n, const int64_t *src, int want_ids, const int64_t *eid,
                              int64_t n_read, fs_typed_picks_t *out, fs_wire_picks_buf_t *b, int *wide,
                              fs_error_t *err)
{
    int64_t *off = calloc((size_t)n + 1, sizeof *off);
    for (int64_t i = 0; i < n; i++) off[i + 1] = off[i] + count[i];
    int64_t picks = off[n];
    uint8_t *c = malloc(fs_wire_counts_bound(n));
    size_t clen = fs_wire_put_counts(off, n, c);
    int32_t *narrow = malloc((size_t)picks * 4 + 1);
    *wide = !fs_wire_narrow_ids(src, picks, narrow);
    fs_wire_buf_t cb = buf(c, clen), sb = *wide ? buf(src, (size_t)picks * 8) : buf(narrow, (size_t)picks * 4),
                  eb = buf(eid, eid ? (size_t)picks * 8 : 0);
    fs_status_t st = fs_wire_picks_answer(&cb, &sb, *wide, &eb, want_ids, n_read, b, out, err);
    free(off), free(c), free(narrow);
    return st;
}

Test(wire_picks, counts_and_narrow_sources_read_back_as_sent)
{
    static const int64_t count[6] = {0, 1, 127, 128, 300, 2};
    int64_t picks = 0;
    for (int i = 0; i < 6; i++) picks += count[i];
    int64_t *src = malloc(sizeof *src * (size_t)picks), *eid = malloc(sizeof *eid * (size_t)picks);
    for (int64_t i = 0; i < picks; i++) src[i] = (i * 7919) % 2147483647, eid[i] = -i;
    src[picks - 1] = INT32_MAX; /* the largest id a narrow answer holds */
    fs_wire_picks_buf_t b = {0};
    fs_typed_picks_t out;
    fs_error_t err = {0};
    int wide;
    cr_assert_eq(round_trip(count, 6, src, 1, eid, 6, &out, &b, &wide, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(wide, 0, "every id fits 4 bytes");
    cr_assert_eq(out.n, 6);
    int64_t at = 0;
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(out.off[i], at, "row %d starts at %lld", i, (long long)at);
        at += count[i];
    }
    cr_assert_eq(out.off[6], picks);
    for (int64_t i = 0; i < picks; i++) {
        cr_assert_eq(out.src[i], src[i], "source %lld", (long long)i);
        cr_assert_eq(out.eid[i], eid[i], "edge id %lld", (long long)i);
    }
    fs_wire_picks_buf_free(&b);
    free(src), free(eid);
}

Test(wire_picks, ids_past_int32_go_wide)
{
    static const int64_t count[2] = {1, 2}, src[3] = {5, (int64_t)INT32_MAX + 1, 7};
    fs_wire_picks_buf_t b = {0};
    fs_typed_picks_t out;
    fs_error_t err = {0};
    int wide;
    cr_assert_eq(round_trip(count, 2, src, 0, NULL, 2, &out, &b, &wide, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(wide, 1);
    cr_assert_eq(out.src[1], (int64_t)INT32_MAX + 1);
    cr_assert_null(out.eid, "no edge ids asked");
    static const int64_t negative[3] = {5, -1, 7}; /* never an id; not narrowed either */
    cr_assert_eq(round_trip(count, 2, negative, 0, NULL, 2, &out, &b, &wide, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(wide, 1);
    cr_assert_eq(out.src[1], -1);
    fs_wire_picks_buf_free(&b);
}

static void refused(const uint8_t *counts, size_t clen, const void *src, size_t slen, int wide, const void *eid,
                    size_t elen, int want_ids, int64_t n, const char *why)
{
    fs_wire_buf_t cb = buf(counts, clen), sb = buf(src, slen), eb = buf(eid, elen);
    fs_wire_picks_buf_t b = {0};
    fs_typed_picks_t out;
    fs_error_t err = {0};
    cr_assert_eq(fs_wire_picks_answer(&cb, &sb, wide, &eb, want_ids, n, &b, &out, &err), FS_ERR_FORMAT,
                 "%s: not refused", why);
    cr_assert(strstr(err.msg, why), "'%s' does not say '%s'", err.msg, why);
    fs_wire_picks_buf_free(&b);
}

Test(wire_picks, malformed_answers_are_refused_by_name)
{
    static const int32_t src[4] = {1, 2, 3, 4};
    static const int64_t eid[4] = {0, 1, 2, 3};
    static const uint8_t two_rows[2] = {1, 3}, cut[2] = {1, 0x83}, big[11] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                                                               0xff, 0xff, 0xff, 0xff, 0x01};
    static const uint8_t huge[20] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
                                     0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
    refused(two_rows, 2, src, 16, 0, NULL, 0, 0, 3, "end within row 2 of 3");   /* fewer counts than rows */
    refused(two_rows, 2, src, 16, 0, NULL, 0, 0, 1, "1 bytes left after 1 rows"); /* more */
    refused(cut, 2, src, 16, 0, NULL, 0, 0, 2, "end within row 1");               /* cut inside a varint */
    refused(big, 11, src, 16, 0, NULL, 0, 0, 1, "past 64 bits");
    refused(huge, 18, src, 16, 0, NULL, 0, 0, 2, "overflow the total");
    refused(two_rows, 2, src, 12, 0, NULL, 0, 0, 2, "12 bytes for 4 picks");        /* a source short */
    refused(two_rows, 2, src, 16, 1, NULL, 0, 0, 2, "16 bytes for 4 picks of 8");   /* wide: half of them */
    refused(two_rows, 2, src, 14, 0, NULL, 0, 0, 2, "14 bytes");                    /* not whole ids */
    refused(two_rows, 2, src, 16, 0, eid, 24, 1, 2, "edge_ids: 3 for 4 picks");
}
