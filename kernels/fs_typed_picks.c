/* fs_typed_picks.c — one hop's picks of given rows, not relabelled
 * (fs_typed.h's fs_typed_picks): the engine's side of owner-routed
 * sampling. A shard of a partitioned graph answers a hop for the
 * destinations it owns; the trainer merges the answers in frontier order
 * and relabels them (fs_routed.h).
 *
 * Each row is picked by row_picks, the serial pass's own per-row code, with
 * the pass's RNG stream (pass_seed, the hop) keyed by the node's id in the
 * whole graph rather than the shard's row number: so a row picks here
 * exactly what one server's engine picks for that node. A temporal or
 * disjoint pass takes the serial pass's full path: each row's eligible
 * range from its destination's time (fs_typed_eligible_ranges), its RNG
 * keyed by its destination's batch too. */
#include "fs_typed.h"

#include <stdlib.h>
#include <string.h>

#include "fs_typed_internal.h"

static fs_status_t picks_check(const fs_typed_etype_t *et, int64_t num_rows, const fs_typed_picks_req_t *q,
                               const int64_t *rows, int64_t n, fs_error_t *err)
{
    if (q->fanout < FS_FANOUT_ALL || q->fanout == 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "picks: fanout %d, must be > 0 or -1 (all)", q->fanout);
    if ((unsigned)q->mode >= FS_SAMPLE_MODE_COUNT_)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "picks: mode %d is unknown", (int)q->mode);
    if (q->mode >= FS_SAMPLE_WEIGHTED && !et->weights)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "picks: weighted picks, but the edge type has no weights");
    if (q->hop < 0 || q->hop >= FS_MAX_HOPS || q->etype < 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "picks: hop %d or edge type %d out of range", q->hop, q->etype);
    if ((unsigned)q->temporal >= FS_TEMPORAL_COUNT_ || (q->temporal && (!q->time || q->window < 0)) ||
        (q->disjoint && !q->batch))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "picks: temporal strategy %d, window %lld, %s times, %s "
                        "batches", (int)q->temporal, (long long)q->window, q->time ? "with" : "no",
                        q->batch ? "with" : "no");
    if (q->num_excl < 0 || (q->num_excl > 0 && (!q->excl_at || !q->excl_src)))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "picks: %lld exclusions", (long long)q->num_excl);
    for (int64_t j = 0; j < q->num_excl; j++)
        if (q->excl_at[j] < 0 || q->excl_at[j] >= n || (j > 0 && q->excl_at[j] < q->excl_at[j - 1]))
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "picks: exclusion %lld is at row %lld of %lld (ascending "
                            "expected)", (long long)j, (long long)q->excl_at[j], (long long)n);
    if (q->temporal && !et->time)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "picks: temporal picks, but the edge type has no edge "
                        "timestamps (give it fanout 0, or sample without time)");
    if (q->temporal == FS_TEMPORAL_LAST && q->mode != FS_SAMPLE_UNIFORM)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "picks: temporal strategy 'last' takes the most recent edges, "
                        "so it takes no weighted or with-replacement mode");
    for (int64_t i = 0; i < n; i++)
        if (rows[i] < 0 || rows[i] >= num_rows)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "picks: row %lld (entry %lld) is outside [0, %lld)",
                            (long long)rows[i], (long long)i, (long long)num_rows);
    return FS_OK;
}

fs_status_t fs_typed_picks(fs_typed_sampler_t *s, const fs_typed_etype_t *et, int64_t num_rows,
                           const fs_typed_picks_req_t *q, const int64_t *rows, const int64_t *key, int64_t n,
                           fs_typed_picks_t *out, fs_error_t *err)
{
    fs_status_t st = picks_check(et, num_rows, q, rows, n, err);
    if (st != FS_OK) return st;
    /* pass_t.row holds each row's (start, degree), as pass_bound leaves it */
    pass_t p = {.et = et, .mode = q->mode, .k = q->fanout, .hop = q->hop, .etype = q->etype,
                .want_ids = q->want_edge_ids, .seed = pass_seed(q->seed, q->etype), .temporal = q->temporal,
                .strict = q->strict, .window = q->window};
    const int full = q->temporal || q->disjoint || q->num_excl; /* the serial pass's full rows */
    if (fs_i64vec_reserve(&s->rows, 2 * (size_t)n + 2) || fs_i64vec_reserve(&s->pk_off, (size_t)n + 1))
        return fs_error(err, FS_ERR_NOMEM, "picks: out of memory for %lld rows", (long long)n);
    int64_t bound = 0, max_deg = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t b = et->indptr[rows[i]], deg = et->indptr[rows[i] + 1] - b;
        s->rows.p[2 * i] = b, s->rows.p[2 * i + 1] = deg;
        bound += p.k == FS_FANOUT_ALL || (p.mode == FS_SAMPLE_UNIFORM && deg < p.k) ? deg : p.k;
        if (deg > max_deg) max_deg = deg;
    }
    p.row = s->rows.p, p.row_d0 = 0;
    if (full) { /* this call's rule, and its exclusions keyed as the rows are (by key[]) */
        s->disjoint = q->disjoint, s->temporal = q->temporal != FS_TEMPORAL_OFF, s->x.n = 0;
        if (q->num_excl && fs_i64vec_reserve(&s->rx_at, 3 * (size_t)q->num_excl))
            return fs_error(err, FS_ERR_NOMEM, "picks: out of memory for %lld exclusions", (long long)q->num_excl);
        fs_typed_exclude_t *x = (fs_typed_exclude_t *)s->rx_at.p; /* 3 int64s hold one */
        _Static_assert(sizeof *x <= 3 * sizeof(int64_t), "an exclusion in three int64s");
        for (int64_t j = 0; j < q->num_excl; j++)
            x[j] = (fs_typed_exclude_t){.etype = q->etype, .dst = key[q->excl_at[j]], .src = q->excl_src[j]};
        if (q->num_excl && fs_typed_excl_build(&s->x, x, q->num_excl))
            return fs_error(err, FS_ERR_NOMEM, "picks: out of memory for %lld exclusions", (long long)q->num_excl);
        s->x.n = q->num_excl;
        if (range_reserve(&s->pw, &p, n)) return fs_error(err, FS_ERR_NOMEM, "picks: out of memory for %lld rows",
                                                          (long long)n);
        if (p.temporal) fs_typed_eligible_ranges(&p, q->time, 0, n, &s->pw);
    }
    if (fs_i64vec_reserve(&s->pk_src, (size_t)bound + 1) ||
        (q->want_edge_ids && fs_i64vec_reserve(&s->pk_eid, (size_t)bound + 1)) ||
        fs_typed_reserve_picks(&s->pw, max_deg > p.k ? max_deg : p.k))
        return fs_error(err, FS_ERR_NOMEM, "picks: out of memory for %lld picks", (long long)bound);
    int64_t e = 0, *off = s->pk_off.p, *src = s->pk_src.p, *eid = q->want_edge_ids ? s->pk_eid.p : NULL;
    uint64_t tag = 0;
    off[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t b = row_start(&p, i), *pos;
        int64_t m = full ? row_picks(s, &s->pw, &p, i, key[i], b, row_degree(&p, i), q->disjoint ? q->batch[i] : 0,
                                     p.temporal ? s->pw.range.p + 2 * i : NULL, &tag, &pos, 1)
                         : row_picks(s, &s->pw, &p, i, key[i], b, row_degree(&p, i), 0, NULL, &tag, &pos, 0);
        for (int64_t j = 0; j < m; j++, e++) {
            int64_t at = b + (pos ? pos[j] : j);
            src[e] = fs_typed_source(et, at);
            if (eid) eid[e] = et->edge_ids ? et->edge_ids[at] : at;
        }
        off[i + 1] = e;
    }
    *out = (fs_typed_picks_t){.n = n, .off = off, .src = src, .eid = eid};
    return FS_OK;
}

/* ---- answers merged ------------------------------------------------------------ */

static int grow(int64_t **p, size_t *cap, size_t n)
{
    if (n <= *cap) return 0;
    int64_t *q = realloc(*p, n * sizeof *q);
    if (!q) return -1;
    *p = q;
    *cap = n;
    return 0;
}

fs_status_t fs_typed_picks_merge(fs_typed_picks_buf_t *b, const fs_typed_picks_t *const *ans, int groups,
                                 const int *group_of, int64_t n, int want_ids, int64_t *cursor, fs_typed_picks_t *out,
                                 fs_error_t *err)
{
    int64_t total = 0;
    for (int g = 0; g < groups; g++)
        if (ans[g]) total += ans[g]->off[ans[g]->n];
    if (grow(&b->off, &b->off_cap, (size_t)n + 1) || grow(&b->src, &b->src_cap, (size_t)total + 1) ||
        (want_ids && grow(&b->eid, &b->eid_cap, (size_t)total + 1)))
        return fs_error(err, FS_ERR_NOMEM, "picks: out of memory merging %lld picks", (long long)total);
    for (int g = 0; g < groups; g++) cursor[g] = 0;
    int64_t e = 0;
    b->off[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        const fs_typed_picks_t *a = ans[group_of[i]];
        int64_t row = cursor[group_of[i]]++, first = a->off[row], m = a->off[row + 1] - first;
        memcpy(b->src + e, a->src + first, (size_t)m * sizeof *b->src);
        if (want_ids) memcpy(b->eid + e, a->eid + first, (size_t)m * sizeof *b->eid);
        e += m;
        b->off[i + 1] = e;
    }
    *out = (fs_typed_picks_t){.n = n, .off = b->off, .src = b->src, .eid = want_ids ? b->eid : NULL};
    return FS_OK;
}

void fs_typed_picks_buf_free(fs_typed_picks_buf_t *b)
{
    free(b->off), free(b->src), free(b->eid);
    *b = (fs_typed_picks_buf_t){0};
}
