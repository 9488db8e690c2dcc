/* fs_typed.c — the typed k-hop sampler (fs_typed.h): the homogeneous
 * engine's Fused-Map (docs/algorithms.md §6) over (node type, batch, node)
 * keys, with per-type local id counters, per-edge-type blocks, temporal
 * eligibility and exclusions.
 *
 * This file is the sampler's life (create, destroy, the edge types' time
 * summaries, an extension's workspace), its workspace, the request (the
 * check, the seeds, then one pass per hop and edge type) and the CUDA
 * sampler's access to the workspace. The rest of the engine, a file each:
 *   fs_typed_check.c     the request check and the names its messages use;
 *   fs_typed_map.c       the id maps, sized (their inserts are inline in
 *                        fs_typed_internal.h);
 *   fs_typed_pass.c      one (hop, edge type) pass: exclusions, eligible
 *                        ranges, the serial pass, its sizing, and the choice
 *                        of serial or pool;
 *   fs_typed_parallel.c  a pass on the pool, partitioned or with the
 *                        in-order inserter;
 *   fs_typed_internal.h  what they share. */
#include "fs_typed.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fs_typed_internal.h"

fs_status_t fs_typed_sampler_create(fs_typed_sampler_t **out, fs_error_t *err)
{
    *out = calloc(1, sizeof **out);
    if (!*out) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    return FS_OK;
}

static void free_vec(fs_i64vec_t *v)
{
    free(v->p);
    v->p = NULL;
    v->cap = 0;
}

static void free_out(outvec_t *v)
{
    free_vec(&v->heap);
    v->p = NULL;
    v->cap = 0;
}

void fs_typed_sampler_destroy(fs_typed_sampler_t *s)
{
    if (!s) return;
    fs_table_mem_free(s->map, s->map_cap * sizeof *s->map);
    for (int t = 0; t < s->cap_types; t++) {
        type_ws_t *w = &s->tw[t];
        free_out(&w->nodes), free_vec(&w->batch), free_vec(&w->time);
        fs_table_mem_free(w->dm.slot, w->dm.cap * sizeof *w->dm.slot);
    }
    for (int b = 0; b < s->cap_blocks; b++)
        free_out(&s->bw[b].off), free_out(&s->bw[b].edst), free_out(&s->bw[b].esrc), free_out(&s->bw[b].eid);
    for (int g = 0; g < s->cap_groups; g++) free_out(&s->seed_local[g]);
    free(s->tw), free(s->bw), free(s->out_nodes), free(s->out_blocks), free(s->seed_local), free(s->out_seed_local);
    for (int w = -1; w < s->worker_cap; w++) {
        pick_ws_t *pw = w < 0 ? &s->pw : &s->worker[w];
        free_vec(&pw->pos), free_vec(&pw->skip), free_vec(&pw->range), free_vec(&pw->left);
        free(pw->wbuf), free(pw->wcopy);
    }
    free(s->worker);
    fs_chunked_free(&s->par);
    free_vec(&s->keys), free_vec(&s->rows), free_vec(&s->known), free_vec(&s->parts);
    free_vec(&s->pk_off), free_vec(&s->pk_src), free_vec(&s->pk_eid), free_vec(&s->rx_at), free_vec(&s->rx_src);
    free_vec(&s->seed_time);
    free(s->x.e), free(s->x.index);
    for (int x = 0; x < FS_TEXT_COUNT; x++)
        if (s->ext_free[x]) s->ext_free[x](s->ext[x]);
    free(s);
}

fs_status_t fs_typed_time_rows(fs_typed_etype_t *et, int64_t ndst, fs_time_row_t **out, fs_error_t *err)
{
    const int64_t *ip = et->indptr, *t = et->time;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int64_t d = 0; d < ndst; d++)
        if (ip[d + 1] > ip[d]) {
            if (t[ip[d]] < lo) lo = t[ip[d]];
            if (t[ip[d + 1] - 1] > hi) hi = t[ip[d + 1] - 1];
        }
    if (lo > hi) lo = hi = 0; /* no edges */
    uint64_t span = (uint64_t)hi - (uint64_t)lo;
    int shift = 0;
    while ((span >> shift) >= INT32_MAX) shift++; /* a step rounded up still fits */
    fs_time_row_t *rows = fs_table_mem_alloc(((size_t)ndst + 1) * sizeof *rows);
    if (!rows) return fs_error(err, FS_ERR_NOMEM, "out of memory summarising the times of %lld rows", (long long)ndst);
    uint64_t below = ((uint64_t)1 << shift) - 1;
    for (int64_t d = 0; d < ndst; d++) {
        fs_time_row_t *r = &rows[d];
        int64_t deg = ip[d + 1] - ip[d];
        *r = (fs_time_row_t){.start = ip[d], .degree = deg > INT32_MAX ? -1 : (int32_t)deg};
        if (deg == 0) continue;
        uint64_t first = (uint64_t)t[ip[d]] - (uint64_t)lo, last = (uint64_t)t[ip[d + 1] - 1] - (uint64_t)lo;
        r->step[0] = (int32_t)(first >> shift);
        r->step[FS_TIME_PIVOTS - 1] = (int32_t)((last >> shift) + ((last & below) != 0));
        for (int j = 1; shift == 0 && j < FS_TIME_PIVOTS - 1; j++)
            r->step[j] = (int32_t)(t[ip[d] + pivot_at(deg, j)] - lo);
    }
    rows[ndst] = (fs_time_row_t){.start = ndst > 0 ? ip[ndst] : 0};
    et->time_rows = rows, et->time_base = lo, et->time_shift = shift;
    *out = rows;
    return FS_OK;
}

void fs_typed_time_rows_free(fs_time_row_t *rows, int64_t ndst)
{
    fs_table_mem_free(rows, ((size_t)ndst + 1) * sizeof *rows);
}

void *fs_typed_sampler_ext(fs_typed_sampler_t *s, int slot, size_t size, void (*free_fn)(void *))
{
    if (!s->ext[slot]) {
        s->ext[slot] = calloc(1, size);
        s->ext_free[slot] = free_fn;
    }
    return s->ext[slot];
}

/* ---- result arrays ---------------------------------------------------------
 *
 * A server writes a result into a shared slot. Rather than copy the arrays
 * there afterwards, the sampler lays them out in the slot as it makes them
 * (fs_typed_sampler_set_output), each at its worst case for the pass,
 * as far as they fit; the rest go to the sampler's own arrays. */

void fs_typed_sampler_set_output(fs_typed_sampler_t *s, void *base, size_t cap)
{
    s->out.base = base;
    s->out.cap = base ? cap : 0;
    s->out.armed = 1;
}

size_t fs_typed_sampler_output_used(const fs_typed_sampler_t *s)
{
    return s->out.base ? s->out.top : 0;
}

static void out_reset(outvec_t *v, int mine)
{
    v->p = v->heap.p;
    v->cap = mine ? v->heap.cap : 0;
}

/* A request begins: it takes the output memory it was given, if any
 * (every array then starts empty, to be placed there), else every array
 * is the sampler's own again. */
static void out_begin(fs_typed_sampler_t *s)
{
    if (!s->out.armed) s->out.base = NULL, s->out.cap = 0;
    s->out.armed = 0;
    s->out.top = 0;
    int mine = s->out.base == NULL;
    for (int t = 0; t < s->cap_types; t++) out_reset(&s->tw[t].nodes, mine);
    for (int b = 0; b < s->cap_blocks; b++)
        out_reset(&s->bw[b].off, mine), out_reset(&s->bw[b].edst, mine), out_reset(&s->bw[b].esrc, mine),
            out_reset(&s->bw[b].eid, mine);
    for (int g = 0; g < s->cap_groups; g++) out_reset(&s->seed_local[g], mine);
}

int fs_typed_out_reserve(fs_typed_sampler_t *s, outvec_t *v, size_t n, size_t keep)
{
    if (n <= v->cap) return 0;
    if (keep > v->cap) keep = v->cap;
    size_t at = (s->out.top + 63) & ~(size_t)63;
    if (s->out.base && at <= s->out.cap && n <= (s->out.cap - at) / sizeof(int64_t)) {
        int64_t *p = (int64_t *)(s->out.base + at);
        if (keep) memmove(p, v->p, keep * sizeof *p);
        s->out.top = at + n * sizeof *p;
        v->p = p, v->cap = n;
        return 0;
    }
    int moving = v->p != v->heap.p; /* from the output memory into our own */
    if (fs_i64vec_reserve(&v->heap, n)) return -1;
    if (moving && keep) memcpy(v->heap.p, v->p, keep * sizeof *v->p);
    v->p = v->heap.p, v->cap = v->heap.cap;
    return 0;
}

/* ---- workspace ------------------------------------------------------------ */

static int reserve_shape(fs_typed_sampler_t *s, int types, int blocks, int groups)
{
    int ct = s->cap_types, cb = s->cap_blocks, cg = s->cap_groups;
    if (fs_grow_zeroed((void **)&s->tw, &ct, types, sizeof *s->tw)) return -1;
    ct = s->cap_types;
    if (fs_grow_zeroed((void **)&s->out_nodes, &ct, types, sizeof *s->out_nodes)) return -1;
    s->cap_types = ct;
    if (fs_grow_zeroed((void **)&s->bw, &cb, blocks, sizeof *s->bw)) return -1;
    cb = s->cap_blocks;
    if (fs_grow_zeroed((void **)&s->out_blocks, &cb, blocks, sizeof *s->out_blocks)) return -1;
    s->cap_blocks = cb;
    if (fs_grow_zeroed((void **)&s->seed_local, &cg, groups, sizeof *s->seed_local)) return -1;
    cg = s->cap_groups;
    if (fs_grow_zeroed((void **)&s->out_seed_local, &cg, groups, sizeof *s->out_seed_local)) return -1;
    s->cap_groups = cg;
    return 0;
}

int fs_typed_reserve_picks(pick_ws_t *s, int64_t n)
{
    if (fs_i64vec_reserve(&s->pos, (size_t)n + 1) || fs_i64vec_reserve(&s->skip, (size_t)n + 1)) return -1;
    if ((size_t)n + 1 <= s->wcap) return 0;
    double *w = realloc(s->wbuf, ((size_t)n + 1) * sizeof *w);
    if (w) s->wbuf = w;
    float *c = realloc(s->wcopy, ((size_t)n + 1) * sizeof *c);
    if (c) s->wcopy = c;
    if (!w || !c) return -1;
    s->wcap = (size_t)n + 1;
    return 0;
}

/* ---- the request ---------------------------------------------------------- */

/* Whether a group's seeds take their nodes' timestamps from elsewhere
 * (fs_typed_view_t.remote_time): a temporal request, no times given, and
 * none here. */
static int times_elsewhere(const fs_typed_sampler_t *s, const fs_typed_view_t *g, const fs_typed_seeds_t *sg)
{
    return s->temporal && !sg->time && !(g->node_time && g->node_time[sg->type]) && g->remote_time &&
           g->remote_time->timed[sg->type] && sg->count > 0;
}

/* Those timestamps, every such group's in turn, into s->seed_time: one
 * call per group, before any seed is added (a remote call may fail). */
static fs_status_t fetch_seed_times(fs_typed_sampler_t *s, const fs_typed_view_t *g, const fs_typed_seeds_t *groups,
                                    int num_groups, fs_error_t *err)
{
    int64_t total = 0, at = 0;
    for (int i = 0; i < num_groups; i++) total += times_elsewhere(s, g, &groups[i]) ? groups[i].count : 0;
    if (total == 0) return FS_OK;
    if (fs_i64vec_reserve(&s->seed_time, (size_t)total + 1))
        return fs_error(err, FS_ERR_NOMEM, "typed sample: out of memory for %lld seed times", (long long)total);
    for (int i = 0; i < num_groups; i++) {
        const fs_typed_seeds_t *sg = &groups[i];
        if (!times_elsewhere(s, g, sg)) continue;
        fs_status_t st = g->remote_time->times(g->remote_time->ctx, sg->type, sg->ids, sg->count, s->seed_time.p + at,
                                               err);
        if (st != FS_OK) {
            fs_error_prefix(err, "typed sample: the timestamps of seed group %d", i);
            return st;
        }
        at += sg->count;
    }
    return FS_OK;
}

static fs_status_t add_seeds(fs_typed_sampler_t *s, const fs_typed_view_t *g, const fs_typed_seeds_t *groups,
                             int num_groups, fs_error_t *err)
{
    int64_t next_batch = 0, fetched = 0;
    for (int i = 0; i < num_groups; i++) {
        const fs_typed_seeds_t *sg = &groups[i];
        if (fs_typed_out_reserve(s, &s->seed_local[i], (size_t)sg->count + 1, 0) ||
            fs_typed_key_reserve(s, sg->type, sg->count))
            return fs_error(err, FS_ERR_NOMEM, "typed sample: out of memory for %lld seeds", (long long)sg->count);
        const int64_t *nt = g->node_time ? g->node_time[sg->type] : NULL, *rt = NULL;
        if (times_elsewhere(s, g, sg)) rt = s->seed_time.p + fetched, fetched += sg->count; /* fetch_seed_times' */
        dput_t dp = {0};
        if (s->disjoint) dput_open(&dp, s, sg->type);
        for (int64_t j = 0; j < sg->count; j++) {
            int64_t v = sg->ids[j], batch = sg->batch ? sg->batch[j] : next_batch + j;
            int64_t t = sg->time ? sg->time[j] : rt ? rt[j] : nt ? nt[v] : 0;
            uint64_t key = key_of(tag_of(s, sg->type, batch), v);
            s->seed_local[i].p[j] = s->disjoint ? dput(&dp, key, batch, t)
                                                : tmap_add_at(s, sg->type, key, tmap_hash(s, key), batch, t);
        }
        if (s->disjoint) dput_close(&dp, s, sg->type);
        next_batch = batches_after(sg, next_batch);
        s->out_seed_local[i] = s->seed_local[i].p;
    }
    return FS_OK;
}

fs_status_t fs_typed_sample_cpu(fs_typed_sampler_t *s, const fs_typed_view_t *g, const fs_typed_req_t *req,
                                const fs_typed_seeds_t *groups, int num_groups, const fs_typed_exclude_t *excl,
                                int64_t num_excl, fs_typed_result_t *res, fs_error_t *err)
{
    int T = g->num_node_types, E = g->num_edge_types;
    fs_status_t st = fs_typed_check(g, req, groups, num_groups, excl, num_excl, err);
    if (st == FS_OK && (reserve_shape(s, T, req->num_hops * E, num_groups) || fs_typed_excl_build(&s->x, excl, num_excl)))
        st = fs_error(err, FS_ERR_NOMEM, "typed sample: out of memory");
    out_begin(s); /* after the shape: every array the request may use starts empty */
    if (st != FS_OK) return st;
    s->num_types = T;
    s->temporal = req->temporal != FS_TEMPORAL_OFF;
    s->disjoint = req->disjoint || s->temporal;
    for (int t = 0; t < T; t++) s->tw[t].n = 0;
    fs_typed_tmap_begin(s);
    if (s->disjoint && fs_typed_dmap_begin(s))
        return fs_error(err, FS_ERR_NOMEM, "typed sample: out of memory for the id map");
    s->par.active = 0;
    if ((st = fetch_seed_times(s, g, groups, num_groups, err)) || (st = add_seeds(s, g, groups, num_groups, err)))
        return st;
    int64_t after[FS_MAX_HOPS + 1][T > 0 ? T : 1];
    for (int t = 0; t < T; t++) after[0][t] = s->tw[t].n;
    for (int h = 0; h < req->num_hops; h++) {
        for (int e = 0; e < E; e++) {
            int dt = g->etype[e].dst_type;
            int64_t d0 = req->frontier == FS_FRONTIER_NEW && h > 0 ? after[h - 1][dt] : 0;
            if ((st = fs_typed_run_pass(s, g, req, h, e, d0, after[h][dt], err))) return st;
        }
        for (int t = 0; t < T; t++) after[h + 1][t] = s->tw[t].n;
        for (int e = 0; e < E; e++) /* a block's sources: every node of the type after the hop */
            s->out_blocks[h * E + e].num_src = after[h + 1][g->etype[e].src_type];
    }
    for (int t = 0; t < T; t++) {
        if (s->disjoint) s->tw[t].dm.last_n = s->tw[t].n;
        fs_typed_nodes_t *o = &s->out_nodes[t];
        *o = (fs_typed_nodes_t){.num_nodes = s->tw[t].n, .nodes = s->tw[t].nodes.p,
                                .batch = s->disjoint ? s->tw[t].batch.p : NULL,
                                .time = s->temporal ? s->tw[t].time.p : NULL};
        for (int h = 0; h <= req->num_hops; h++) o->count_after[h] = after[h][t];
    }
    *res = (fs_typed_result_t){.num_hops = req->num_hops, .num_node_types = T, .num_edge_types = E,
                               .type = s->out_nodes, .block = s->out_blocks, .num_groups = num_groups,
                               .seed_local = s->out_seed_local};
    return FS_OK;
}

/* ---- the CUDA sampler's access to the workspace (fs_typed_internal.h) ---- */

int fs_typed_ws_shape(fs_typed_sampler_t *s, int types, int blocks, int groups)
{
    if (reserve_shape(s, types, blocks, groups)) return -1;
    out_begin(s);
    return 0;
}

int64_t *fs_typed_ws_node_array(fs_typed_sampler_t *s, int type, int kind, size_t n)
{
    type_ws_t *w = &s->tw[type];
    if (kind == FS_TWS_NODES) return fs_typed_out_reserve(s, &w->nodes, n + 1, SIZE_MAX) ? NULL : w->nodes.p;
    fs_i64vec_t *v = kind == FS_TWS_BATCH ? &w->batch : &w->time;
    return fs_i64vec_reserve(v, n + 1) ? NULL : v->p;
}

int64_t *fs_typed_ws_block_array(fs_typed_sampler_t *s, int block, int kind, size_t n)
{
    block_ws_t *w = &s->bw[block];
    outvec_t *v = kind == FS_TWS_OFF ? &w->off : kind == FS_TWS_EDST ? &w->edst : kind == FS_TWS_ESRC ? &w->esrc
                                                                                                   : &w->eid;
    return fs_typed_out_reserve(s, v, n + 1, SIZE_MAX) ? NULL : v->p;
}

int64_t *fs_typed_ws_seed_local(fs_typed_sampler_t *s, int group, size_t n)
{
    if (fs_typed_out_reserve(s, &s->seed_local[group], n + 1, SIZE_MAX)) return NULL;
    s->out_seed_local[group] = s->seed_local[group].p;
    return s->seed_local[group].p;
}

void fs_typed_ws_result(fs_typed_sampler_t *s, const fs_typed_view_t *g, const fs_typed_req_t *req, int num_groups,
                        const int64_t *after, const int64_t *num_dst, const int64_t *num_edges,
                        fs_typed_result_t *res)
{
    int T = g->num_node_types, E = g->num_edge_types, H = req->num_hops;
    s->num_types = T;
    s->temporal = req->temporal != FS_TEMPORAL_OFF;
    s->disjoint = req->disjoint || s->temporal;
    for (int b = 0; b < H * E; b++) {
        block_ws_t *w = &s->bw[b];
        int64_t num_src = after[(b / E + 1) * T + g->etype[b % E].src_type]; /* every node of the type after the hop */
        s->out_blocks[b] = (fs_block_t){.num_dst = num_dst[b], .num_src = num_src, .num_edges = num_edges[b],
                                        .dst_offsets = w->off.p, .edge_dst = w->edst.p, .edge_src = w->esrc.p,
                                        .edge_ids = req->want_edge_ids ? w->eid.p : NULL};
    }
    for (int t = 0; t < T; t++) {
        type_ws_t *w = &s->tw[t];
        w->n = after[H * T + t];
        fs_typed_nodes_t *o = &s->out_nodes[t];
        *o = (fs_typed_nodes_t){.num_nodes = w->n, .nodes = w->nodes.p, .batch = s->disjoint ? w->batch.p : NULL,
                                .time = s->temporal ? w->time.p : NULL};
        for (int h = 0; h <= H; h++) o->count_after[h] = after[h * T + t];
    }
    *res = (fs_typed_result_t){.num_hops = H, .num_node_types = T, .num_edge_types = E, .type = s->out_nodes,
                               .block = s->out_blocks, .num_groups = num_groups, .seed_local = s->out_seed_local};
}
