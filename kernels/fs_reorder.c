/* fs_reorder.c — FastGL's Match (delta batches) and Reorder (a greedy order
 * of a window of batches), on the CPU; docs/algorithms.md §6, "Match-Reorder
 * as implemented", states the rules this file follows.
 *
 * Overlap: one open-addressing map id -> 64-bit mask of the window's sets
 * that hold the id, then a second map mask -> number of distinct ids with it;
 * each distinct mask adds its count to every pair of its bits, so the cost is
 * O(total ids + distinct masks * popcount^2). The previous batch (for
 * fs_reorder_window) is one more pass over the first map, marking each id
 * once, so a window keeps all 64 bits for its own sets.
 *
 * Delta: the same map, id -> index into concat(P's rows, new rows): P's ids
 * go in first at their first position; a C id not found is a new row and
 * takes the next index past prev_n, so one lookup per row gives take[i].
 *
 * Maps carry an epoch stamp per slot: a call bumps the epoch instead of
 * clearing, and the maps only grow (load <= 1/2, sized before inserting). */
#include "fs_reorder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAP_MIN_CAP 1024

typedef struct {
    int64_t key;
    uint64_t val;   /* a mask, a count or a concat index */
    uint32_t epoch; /* the slot is filled in this call iff epoch == map's */
    uint32_t mark;  /* counted once already (the previous batch's pass) */
} slot_t;

typedef struct {
    slot_t *slot;
    size_t cap; /* a power of two, or 0 before the first call */
    int shift;  /* 64 - log2(cap) */
    uint32_t epoch;
    size_t *used; /* the slots filled in this epoch, in insertion order */
    size_t num_used, used_cap;
} map_t;

struct fs_reorder_ws {
    map_t ids;   /* id -> mask of sets (overlap) or concat index (delta) */
    map_t masks; /* mask -> number of distinct ids with exactly that mask */
    int64_t ov[FS_REORDER_MAX_WINDOW * FS_REORDER_MAX_WINDOW];
    int64_t prev_ov[FS_REORDER_MAX_WINDOW];
};

/* ---- the map --------------------------------------------------------------- */

/* Readies m for up to `keys` distinct keys in a new epoch. -1: out of memory. */
static int map_begin(map_t *m, size_t keys)
{
    if (keys > m->used_cap) {
        size_t cap = keys > 2 * m->used_cap ? keys : 2 * m->used_cap;
        size_t *u = realloc(m->used, cap * sizeof *u);
        if (!u) return -1;
        m->used = u;
        m->used_cap = cap;
    }
    size_t need = keys * 2;
    if (need > m->cap || !m->slot) { /* lookups need a table even for 0 keys */
        size_t cap = m->cap ? m->cap : MAP_MIN_CAP;
        while (cap < need) cap *= 2;
        slot_t *s = calloc(cap, sizeof *s);
        if (!s) return -1;
        free(m->slot);
        m->slot = s;
        m->cap = cap;
        m->shift = 64 - __builtin_ctzll(cap);
        m->epoch = 0;
    }
    if (++m->epoch == 0) { /* wrapped: stale stamps could match, clear once */
        memset(m->slot, 0, m->cap * sizeof *m->slot);
        m->epoch = 1;
    }
    m->num_used = 0;
    return 0;
}

static void map_free(map_t *m)
{
    free(m->slot);
    free(m->used);
}

static inline size_t map_home(const map_t *m, int64_t key)
{
    return (size_t)(((uint64_t)key * 0x9e3779b97f4a7c15ULL) >> m->shift);
}

/* The slot of key, filled (val = 0) if key is new in this epoch. */
static inline slot_t *map_upsert(map_t *m, int64_t key, int *added)
{
    size_t mask = m->cap - 1;
    for (size_t h = map_home(m, key);; h = (h + 1) & mask) {
        slot_t *s = &m->slot[h];
        if (s->epoch != m->epoch) {
            *s = (slot_t){.key = key, .val = 0, .epoch = m->epoch, .mark = 0};
            m->used[m->num_used++] = h;
            *added = 1;
            return s;
        }
        if (s->key == key) {
            *added = 0;
            return s;
        }
    }
}

/* The slot of key, or NULL if key is not in the map this epoch. */
static inline slot_t *map_find(map_t *m, int64_t key)
{
    size_t mask = m->cap - 1;
    for (size_t h = map_home(m, key);; h = (h + 1) & mask) {
        slot_t *s = &m->slot[h];
        if (s->epoch != m->epoch) return NULL;
        if (s->key == key) return s;
    }
}

fs_status_t fs_reorder_ws_create(fs_reorder_ws_t **out, fs_error_t *err)
{
    if (!out) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "reorder: the workspace out-pointer is NULL");
    *out = calloc(1, sizeof **out);
    if (!*out) return fs_error(err, FS_ERR_NOMEM, "reorder: out of memory for the workspace");
    return FS_OK;
}

void fs_reorder_ws_destroy(fs_reorder_ws_t *ws)
{
    if (!ws) return;
    map_free(&ws->ids);
    map_free(&ws->masks);
    free(ws);
}

/* ---- argument checks ------------------------------------------------------- */

static fs_status_t check_ws(const fs_reorder_ws_t *ws, fs_error_t *err)
{
    if (!ws) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "reorder: the workspace is NULL");
    return FS_OK;
}

/* `index` names the set in a message: its position in the window, or -1 for
 * the previous batch. */
static fs_status_t check_set(const fs_rowset_t *s, int index, fs_error_t *err)
{
    char name[32];
    if (index < 0) snprintf(name, sizeof name, "the previous batch");
    else snprintf(name, sizeof name, "set %d", index);
    if (s->n < 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "reorder: %s has n = %lld ids, must be >= 0", name,
                        (long long)s->n);
    if (s->n > 0 && !s->ids)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "reorder: %s has %lld ids but a NULL id array", name,
                        (long long)s->n);
    return FS_OK;
}

static fs_status_t check_window(const fs_rowset_t *sets, int n, fs_error_t *err)
{
    if (n < 1 || n > FS_REORDER_MAX_WINDOW)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "reorder: a window of %d batches, must be 1..%d", n,
                        FS_REORDER_MAX_WINDOW);
    if (!sets) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "reorder: the window's set array is NULL");
    for (int i = 0; i < n; i++) {
        fs_status_t st = check_set(&sets[i], i, err);
        if (st != FS_OK) return st;
    }
    return FS_OK;
}

/* ---- overlap --------------------------------------------------------------- */

/* ids map: each distinct id -> the mask of the sets holding it. */
static int map_members(fs_reorder_ws_t *ws, const fs_rowset_t *sets, int n)
{
    size_t total = 0;
    for (int i = 0; i < n; i++) total += (size_t)sets[i].n;
    if (map_begin(&ws->ids, total)) return -1;
    int added;
    for (int i = 0; i < n; i++)
        for (int64_t k = 0; k < sets[i].n; k++) map_upsert(&ws->ids, sets[i].ids[k], &added)->val |= 1ULL << i;
    return 0;
}

/* masks map: each mask of two or more sets -> how many distinct ids have it. */
static int count_masks(fs_reorder_ws_t *ws)
{
    if (map_begin(&ws->masks, ws->ids.num_used)) return -1;
    int added;
    for (size_t u = 0; u < ws->ids.num_used; u++) {
        uint64_t mask = ws->ids.slot[ws->ids.used[u]].val;
        if (__builtin_popcountll(mask) >= 2) map_upsert(&ws->masks, (int64_t)mask, &added)->val++;
    }
    return 0;
}

/* ov[i*n+j] += count for every pair i != j of each counted mask's bits. */
static void expand_masks(const fs_reorder_ws_t *ws, int n, int64_t *ov)
{
    memset(ov, 0, (size_t)n * (size_t)n * sizeof *ov);
    for (size_t u = 0; u < ws->masks.num_used; u++) {
        const slot_t *s = &ws->masks.slot[ws->masks.used[u]];
        int bits[FS_REORDER_MAX_WINDOW], nb = 0;
        for (uint64_t m = (uint64_t)s->key; m; m &= m - 1) bits[nb++] = __builtin_ctzll(m);
        for (int a = 0; a < nb; a++)
            for (int b = a + 1; b < nb; b++) {
                ov[bits[a] * n + bits[b]] += (int64_t)s->val;
                ov[bits[b] * n + bits[a]] += (int64_t)s->val;
            }
    }
}

/* prev_ov[i] = |prev ∩ S_i|, from the ids map (each id of prev counted once). */
static void count_prev_overlaps(fs_reorder_ws_t *ws, const fs_rowset_t *prev, int n, int64_t *prev_ov)
{
    memset(prev_ov, 0, (size_t)n * sizeof *prev_ov);
    for (int64_t k = 0; k < prev->n; k++) {
        slot_t *s = map_find(&ws->ids, prev->ids[k]);
        if (!s || s->mark) continue;
        s->mark = 1;
        for (uint64_t m = s->val; m; m &= m - 1) prev_ov[__builtin_ctzll(m)]++;
    }
}

/* ov (n*n) for the window and, when prev is given, prev_ov (n). Checked args. */
static fs_status_t window_overlaps(fs_reorder_ws_t *ws, const fs_rowset_t *prev, const fs_rowset_t *sets, int n,
                                   int64_t *ov, int64_t *prev_ov, fs_error_t *err)
{
    if (map_members(ws, sets, n) || count_masks(ws))
        return fs_error(err, FS_ERR_NOMEM, "reorder: out of memory for the overlap maps of a %d-batch window", n);
    expand_masks(ws, n, ov);
    if (prev) count_prev_overlaps(ws, prev, n, prev_ov);
    return FS_OK;
}

fs_status_t fs_reorder_overlap(fs_reorder_ws_t *ws, const fs_rowset_t *sets, int n, int64_t *ov, fs_error_t *err)
{
    fs_status_t st = check_ws(ws, err);
    if (st == FS_OK) st = check_window(sets, n, err);
    if (st != FS_OK) return st;
    if (!ov) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "reorder: the overlap matrix (ov) is NULL");
    return window_overlaps(ws, NULL, sets, n, ov, NULL, err);
}

/* ---- the greedy order ------------------------------------------------------ */

/* The unvisited j with the largest row[j], ties to the lowest j. */
static int best_unvisited(const int64_t *row, int n, uint64_t visited)
{
    int best = -1;
    for (int j = 0; j < n; j++)
        if (!(visited >> j & 1) && (best < 0 || row[j] > row[best])) best = j;
    return best;
}

/* The greedy path into path[n]; returns its total overlap. prev_ov NULL: no
 * previous batch, the path starts at set 0. */
static int64_t greedy_path(const int64_t *ov, const int64_t *prev_ov, int n, int *path)
{
    int64_t total = 0;
    int cur = 0;
    if (prev_ov) {
        cur = best_unvisited(prev_ov, n, 0);
        total += prev_ov[cur];
    }
    uint64_t visited = 1ULL << cur;
    path[0] = cur;
    for (int k = 1; k < n; k++) {
        int next = best_unvisited(&ov[cur * n], n, visited);
        total += ov[cur * n + next];
        visited |= 1ULL << next;
        path[k] = cur = next;
    }
    return total;
}

static int64_t identity_path_total(const int64_t *ov, const int64_t *prev_ov, int n)
{
    int64_t total = prev_ov ? prev_ov[0] : 0;
    for (int k = 0; k + 1 < n; k++) total += ov[k * n + k + 1];
    return total;
}

fs_status_t fs_reorder_window(fs_reorder_ws_t *ws, const fs_rowset_t *prev, const fs_rowset_t *sets, int n, int *order,
                              int64_t *total, int64_t *identity_total, fs_error_t *err)
{
    fs_status_t st = check_ws(ws, err);
    if (st == FS_OK) st = check_window(sets, n, err);
    if (st == FS_OK && prev) st = check_set(prev, -1, err);
    if (st != FS_OK) return st;
    if (!order) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "reorder: the order array is NULL");
    int64_t *prev_ov = prev ? ws->prev_ov : NULL;
    st = window_overlaps(ws, prev, sets, n, ws->ov, prev_ov, err);
    if (st != FS_OK) return st;
    int path[FS_REORDER_MAX_WINDOW];
    int64_t greedy = greedy_path(ws->ov, prev_ov, n, path);
    int64_t identity = identity_path_total(ws->ov, prev_ov, n);
    int keep_identity = identity >= greedy;
    for (int k = 0; k < n; k++) order[k] = keep_identity ? k : path[k];
    if (total) *total = keep_identity ? identity : greedy;
    if (identity_total) *identity_total = identity;
    return FS_OK;
}

/* ---- the delta ------------------------------------------------------------- */

static fs_status_t check_delta(const fs_reorder_ws_t *ws, const int64_t *prev_ids, int64_t prev_n, const int64_t *ids,
                               int64_t n, const int64_t *take, const int64_t *new_pos, const int64_t *num_new,
                               fs_error_t *err)
{
    fs_status_t st = check_ws(ws, err);
    if (st != FS_OK) return st;
    if (prev_n < 0 || n < 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "reorder delta: prev_n = %lld, n = %lld: must be >= 0",
                        (long long)prev_n, (long long)n);
    if (prev_n > 0 && !prev_ids)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "reorder delta: the previous batch has %lld ids but a NULL "
                        "id array", (long long)prev_n);
    if (n > 0 && !ids)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "reorder delta: the batch has %lld ids but a NULL id array",
                        (long long)n);
    if (n > 0 && (!take || !new_pos))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "reorder delta: the %s array is NULL",
                        !take ? "take" : "new_pos");
    if (!num_new) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "reorder delta: num_new is NULL");
    return FS_OK;
}

fs_status_t fs_reorder_delta(fs_reorder_ws_t *ws, const int64_t *prev_ids, int64_t prev_n, const int64_t *ids,
                             int64_t n, int64_t *take, int64_t *new_pos, int64_t *num_new, fs_error_t *err)
{
    fs_status_t st = check_delta(ws, prev_ids, prev_n, ids, n, take, new_pos, num_new, err);
    if (st != FS_OK) return st;
    if (map_begin(&ws->ids, (size_t)prev_n + (size_t)n))
        return fs_error(err, FS_ERR_NOMEM, "reorder delta: out of memory for the map of %lld ids",
                        (long long)(prev_n + n));
    int added;
    for (int64_t j = 0; j < prev_n; j++) {
        slot_t *s = map_upsert(&ws->ids, prev_ids[j], &added);
        if (added) s->val = (uint64_t)j; /* the first position wins */
    }
    int64_t fresh = 0;
    for (int64_t i = 0; i < n; i++) {
        slot_t *s = map_upsert(&ws->ids, ids[i], &added);
        if (added) { /* not in P, first time in C: a new row */
            s->val = (uint64_t)(prev_n + fresh);
            new_pos[fresh++] = i;
        }
        take[i] = (int64_t)s->val;
    }
    *num_new = fresh;
    return FS_OK;
}
