/* fs_typed_map.c — the typed sampler's id maps, sized (fs_typed_internal.h).
 *
 * One open-addressing map holds every type's keys; a slot stamped with an
 * older epoch is empty, so a request clears nothing. Disjoint trees (and so
 * temporal sampling) use a table per node type of 4-byte slots instead (the
 * disjoint map, below). Maps are sized before each edge type's pass from
 * that pass's worst case, so inserts never rehash mid-pass.
 *
 * This file holds the sizing, which runs once per pass. The inserts
 * (tmap_add_at, dput) and the hashes are static inline in
 * fs_typed_internal.h: the passes and the seeds call them per pick. */
#include "fs_typed.h"

#include <string.h>

#include "fs_typed_internal.h"

/* ---- the map -------------------------------------------------------------- */

/* Room for `extra` more nodes of `type`. */
int fs_typed_nodes_reserve(fs_typed_sampler_t *s, int type, int64_t extra)
{
    type_ws_t *w = &s->tw[type];
    size_t need_n = (size_t)(w->n + extra) + 1;
    return fs_typed_out_reserve(s, &w->nodes, need_n, (size_t)w->n) || (s->disjoint && fs_i64vec_reserve(&w->batch, need_n)) ||
           (s->temporal && fs_i64vec_reserve(&w->time, need_n));
}

/* Room for `extra` more keys of `type` at map load <= 1/2. */
static int tmap_reserve(fs_typed_sampler_t *s, int type, int64_t extra)
{
    if (fs_typed_nodes_reserve(s, type, extra)) return -1;
    int64_t total = extra;
    for (int t = 0; t < s->num_types; t++) total += s->tw[t].n;
    size_t need = (size_t)total * 2, cap = s->map_cap ? s->map_cap : 1024;
    if (need <= s->map_cap) return 0;
    while (cap < need) cap *= 2;
    if (cap > ((size_t)1 << 32)) return -1; /* pending_t holds 32-bit slots */
    tslot_t *m = fs_table_mem_alloc(cap * sizeof *m);
    if (!m) return -1;
    fs_table_mem_free(s->map, s->map_cap * sizeof *s->map);
    s->map = m;
    s->map_cap = cap;
    s->map_shift = 64 - __builtin_ctzll(cap);
    s->epoch = 1;
    for (int t = 0; t < s->num_types; t++) { /* re-insert every key with its id */
        type_ws_t *tw = &s->tw[t];
        for (int64_t i = 0; i < tw->n; i++) {
            uint64_t key = key_of(tag_of(s, t, s->disjoint ? tw->batch.p[i] : 0), tw->nodes.p[i]);
            size_t h = tmap_hash(s, key);
            while (m[h].epoch == s->epoch) h = (h + 1) & (cap - 1);
            m[h] = (tslot_t){.key = key, .val = (int32_t)i, .epoch = s->epoch};
        }
    }
    return 0;
}

void fs_typed_tmap_begin(fs_typed_sampler_t *s)
{
    if (++s->epoch == 0) {
        if (s->map) memset(s->map, 0, s->map_cap * sizeof *s->map);
        s->epoch = 1;
    }
}

/* ---- the disjoint map -----------------------------------------------------
 *
 * Disjoint keys almost never repeat (0.2% of a temporal batch's picks), so
 * nearly every insert writes an empty slot, and the map's size decides
 * where those writes land. The map above, 16-byte slots at load <= 1/2,
 * spans 4 MB for a 1,024-tree request of 100,000 nodes: past the L2, every
 * write a miss. Here each node type has its own table of 4-byte slots,
 * a quarter the size: a slot holds the local id + 1 in its low `bits` bits
 * (0 = empty) and, above, the key's hash bits just under those that chose
 * the slot. A key is compared with (nodes[id], batch[id]) only where those
 * bits match, which outside a true repeat is about one probe in 2^(32 -
 * bits). With no epoch in the slot, a request clears its tables, sized from
 * the type's last request (docs/benchmarks.md, "Typed sampling"). */

/* Sets type's table to `slots` (a power of two), cleared, with the type's
 * nodes so far in it. */
static int dmap_resize(fs_typed_sampler_t *s, int type, size_t slots)
{
    type_ws_t *w = &s->tw[type];
    dmap_t *m = &w->dm;
    if (slots > m->cap) {
        uint32_t *p = fs_table_mem_alloc(slots * sizeof *p);
        if (!p) return -1;
        fs_table_mem_free(m->slot, m->cap * sizeof *m->slot);
        m->slot = p, m->cap = slots;
    }
    m->bits = __builtin_ctzll(slots);
    memset(m->slot, 0, slots * sizeof *m->slot);
    for (int64_t id = 0; id < w->n; id++) { /* distinct keys: no comparisons */
        uint64_t key = key_of(tag_of(s, type, w->batch.p[id]), w->nodes.p[id]);
        size_t h = dmap_index(m->bits, key);
        while (m->slot[h]) h = (h + 1) & (slots - 1);
        m->slot[h] = dmap_check(m->bits, key) << m->bits | (uint32_t)(id + 1);
    }
    return 0;
}

/* The smallest table at load <= 1/2 for n keys (3/4 was no faster). */
static size_t dmap_slots_for(int64_t n)
{
    size_t slots = 1024;
    while (slots < (size_t)n * 2) slots *= 2;
    return slots;
}

/* Room for `extra` more keys of `type`; every table holds at most 2^31
 * slots, so that an id + 1 and at least one check bit fit a slot. */
static int dmap_reserve(fs_typed_sampler_t *s, int type, int64_t extra)
{
    if (fs_typed_nodes_reserve(s, type, extra)) return -1;
    type_ws_t *w = &s->tw[type];
    size_t slots = dmap_slots_for(w->n + extra);
    if (w->dm.bits && slots <= (size_t)1 << w->dm.bits) return 0;
    if (slots > ((size_t)1 << 31)) return -1;
    return dmap_resize(s, type, slots);
}

/* A request's tables: each type's sized for its last request's nodes and a
 * quarter more, so a steady load never resizes mid-request. */
int fs_typed_dmap_begin(fs_typed_sampler_t *s)
{
    for (int t = 0; t < s->num_types; t++)
        if (dmap_resize(s, t, dmap_slots_for(s->tw[t].dm.last_n + s->tw[t].dm.last_n / 4))) return -1;
    return 0;
}

/* ---- keys, in whichever map the request uses ------------------------------ */

int fs_typed_key_reserve(fs_typed_sampler_t *s, int type, int64_t extra)
{
    return s->disjoint ? dmap_reserve(s, type, extra) : tmap_reserve(s, type, extra);
}
