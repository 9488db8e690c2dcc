/* fs_shard.c — a shard's parts and its answers (fs_shard.h says what and why).
 *
 * A request's ids are placed by binary search over the held parts' ranges
 * of the destination type, grouped by part (each group keeps the request's
 * order), picked per part with fs_typed_picks on that part's view, the RNG
 * keyed by the part's orig_ids, and merged back into the request's order.
 * Each part picks with a sampler of its own in the workspace, so every
 * part's answer is still there when the merge reads it: no copies. */
#include "fs_shard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "typed_view.h"

/* A held part, shared by the shards that hold it (fs_shard_regroup): the
 * last one closed closes it. */
typedef struct {
    int index;
    fs_dataset_t *ds;
    fs_typed_graph_t g;
    int refs;           /* atomic */
} held_t;

struct fs_shard {
    char *name;
    char id[FS_PARTITION_ID_LEN + 1];
    int parts;          /* V of the partitioning */
    int num_held;
    held_t **held;      /* ascending index */
    int *indices;       /* [num_held] */
};

struct fs_shard_ws {
    fs_typed_sampler_t **sampler; /* one per held part */
    int num_samplers;
    fs_typed_picks_t *ans;        /* [held] each part's answer, in its sampler */
    fs_typed_picks_t **ansp;      /* [held] pointers to them, for the merge */
    int *part_of;                 /* [n] each id's part */
    int64_t *rows, *keys, *start, *cursor;
    int64_t *time, *batch;        /* a temporal or disjoint pass's, laid out as rows */
    int64_t *at;                  /* [n] each id's place in the layout */
    int64_t *x_at, *x_src, *x_start; /* exclusions by part, at places in the part's group; [held + 1] */
    size_t x_cap;
    size_t cap;
    fs_typed_picks_buf_t merged;
};

static int by_index(const void *a, const void *b)
{
    const held_t *x = *(held_t *const *)a, *y = *(held_t *const *)b;
    return (x->index > y->index) - (x->index < y->index);
}

/* Part h's facts checked against the first's: one partitioning. */
static fs_status_t check_part(fs_shard_t *s, const fs_dataset_t *ds, fs_error_t *err)
{
    const fs_part_of_t *po = &ds->partition;
    if (po->parts == 0)
        return fs_error(err, FS_ERR_FORMAT, "shard %s: %s is a whole dataset, not a part of a partitioned one",
                        s->name, ds->dir);
    if (s->parts == 0) {
        memcpy(s->id, po->id, sizeof s->id);
        s->parts = po->parts;
    } else if (strcmp(s->id, po->id) != 0 || s->parts != po->parts) {
        return fs_error(err, FS_ERR_FORMAT, "shard %s: %s is part of partitioning %s of %d parts, not %s of %d",
                        s->name, ds->dir, po->id, po->parts, s->id, s->parts);
    }
    if (po->index < 0 || po->index >= po->parts)
        return fs_error(err, FS_ERR_FORMAT, "shard %s: %s says it is part %d of %d", s->name, ds->dir, po->index,
                        po->parts);
    return FS_OK;
}

static void part_release(held_t *h)
{
    if (!h || __atomic_sub_fetch(&h->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
    fs_typed_graph_free(&h->g);
    fs_dataset_close(h->ds);
    free(h);
}

/* A shard named `name` with room for n parts, none yet. */
static fs_shard_t *shard_new(const char *name, int n)
{
    fs_shard_t *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->held = calloc(n ? (size_t)n : 1, sizeof *s->held);
    s->indices = malloc((n ? (size_t)n : 1) * sizeof *s->indices);
    s->name = strdup(name);
    if (!s->held || !s->indices || !s->name) fs_shard_close(s), s = NULL;
    return s;
}

/* Sorts the held parts and lists their indices; FS_ERR_INVALID_ARGUMENT
 * for a part held twice. */
static fs_status_t index_parts(fs_shard_t *s, fs_error_t *err)
{
    qsort(s->held, (size_t)s->num_held, sizeof *s->held, by_index);
    for (int i = 0; i < s->num_held; i++) {
        s->indices[i] = s->held[i]->index;
        if (i > 0 && s->indices[i] == s->indices[i - 1])
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "shard %s: part %d is held twice", s->name, s->indices[i]);
    }
    return FS_OK;
}

/* Takes the open parts parts[0..n) into s (each set to NULL; all closed on
 * an error), checked to be of s's partitioning. */
static fs_status_t take_parts(fs_shard_t *s, fs_dataset_t **parts, int n, fs_error_t *err)
{
    fs_status_t st = FS_OK;
    for (int i = 0; st == FS_OK && i < n; i++) {
        held_t *h = calloc(1, sizeof *h);
        if (!h) {
            st = fs_error(err, FS_ERR_NOMEM, "shard: out of memory");
            break;
        }
        st = check_part(s, parts[i], err);
        *h = (held_t){.index = parts[i]->partition.index, .ds = parts[i], .refs = 1};
        parts[i] = NULL;
        s->held[s->num_held++] = h;
        if (st == FS_OK) st = fs_typed_graph_init(&h->g, h->ds, err);
    }
    for (int i = 0; i < n; i++) fs_dataset_close(parts[i]), parts[i] = NULL; /* those not taken, on an error */
    return st;
}

fs_status_t fs_shard_adopt(const char *name, fs_dataset_t **parts, int n, fs_shard_t **out, fs_error_t *err)
{
    *out = NULL;
    fs_shard_t *s = n > 0 ? shard_new(name, n) : NULL;
    fs_status_t st = n <= 0 ? fs_error(err, FS_ERR_INVALID_ARGUMENT, "shard %s: no parts to hold", name)
                     : !s   ? fs_error(err, FS_ERR_NOMEM, "shard: out of memory")
                            : take_parts(s, parts, n, err);
    if (st == FS_OK) st = index_parts(s, err);
    for (int i = 0; !s && i < n; i++) fs_dataset_close(parts[i]), parts[i] = NULL;
    if (st != FS_OK) {
        fs_shard_close(s);
        return st;
    }
    *out = s;
    return FS_OK;
}

fs_status_t fs_shard_empty(const char *name, const char *partitioning, int parts, fs_shard_t **out, fs_error_t *err)
{
    *out = NULL;
    if (strlen(partitioning) != FS_PARTITION_ID_LEN || parts < 1 || parts > FS_PARTITION_MAX_PARTS)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "shard %s: partitioning '%s' of %d parts", name, partitioning,
                        parts);
    fs_shard_t *s = shard_new(name, 0);
    if (!s) return fs_error(err, FS_ERR_NOMEM, "shard: out of memory");
    memcpy(s->id, partitioning, FS_PARTITION_ID_LEN + 1);
    s->parts = parts;
    *out = s;
    return FS_OK;
}

fs_status_t fs_shard_regroup(const fs_shard_t *from, const int *drop, int num_drop, fs_dataset_t **add, int num_add,
                             fs_shard_t **out, fs_error_t *err)
{
    *out = NULL;
    fs_shard_t *s = shard_new(from->name, from->num_held + num_add);
    if (!s) {
        for (int i = 0; i < num_add; i++) fs_dataset_close(add[i]), add[i] = NULL;
        return fs_error(err, FS_ERR_NOMEM, "shard: out of memory");
    }
    memcpy(s->id, from->id, sizeof s->id);
    s->parts = from->parts;
    for (int i = 0; i < from->num_held; i++) {
        int dropped = 0;
        for (int j = 0; j < num_drop; j++) dropped |= drop[j] == from->indices[i];
        if (dropped) continue;
        __atomic_add_fetch(&from->held[i]->refs, 1, __ATOMIC_ACQ_REL);
        s->held[s->num_held++] = from->held[i];
    }
    fs_status_t st = take_parts(s, add, num_add, err);
    if (st == FS_OK) st = index_parts(s, err);
    if (st != FS_OK) {
        fs_shard_close(s);
        return st;
    }
    *out = s;
    return FS_OK;
}

void fs_shard_close(fs_shard_t *s)
{
    if (!s) return;
    for (int i = 0; s->held && i < s->num_held; i++) part_release(s->held[i]);
    free(s->held);
    free(s->indices);
    free(s->name);
    free(s);
}

const char *fs_shard_name(const fs_shard_t *s)
{
    return s->name;
}

const char *fs_shard_partitioning(const fs_shard_t *s)
{
    return s->id;
}

int fs_shard_num_parts(const fs_shard_t *s)
{
    return s->parts;
}

int fs_shard_held(const fs_shard_t *s, const int **parts)
{
    *parts = s->indices;
    return s->num_held;
}

const fs_dataset_t *fs_shard_part(const fs_shard_t *s, int part)
{
    for (int i = 0; i < s->num_held; i++)
        if (s->held[i]->index == part) return s->held[i]->ds;
    return NULL;
}

/* A request to a shard that holds no part (yet, or any more). */
static fs_status_t held_none(const fs_shard_t *s, fs_error_t *err)
{
    return fs_error(err, FS_ERR_NOT_FOUND, "shard %s holds no part (the shard map is stale: fetch it again)", s->name);
}

/* ---- picks ---------------------------------------------------------------------- */

fs_status_t fs_shard_ws_create(fs_shard_ws_t **out, fs_error_t *err)
{
    *out = calloc(1, sizeof **out);
    return *out ? FS_OK : fs_error(err, FS_ERR_NOMEM, "shard: out of memory");
}

void fs_shard_ws_destroy(fs_shard_ws_t *w)
{
    if (!w) return;
    for (int h = 0; h < w->num_samplers; h++) fs_typed_sampler_destroy(w->sampler[h]);
    free(w->sampler), free(w->ans), free(w->ansp);
    free(w->part_of), free(w->rows), free(w->keys), free(w->start), free(w->cursor), free(w->time), free(w->batch);
    free(w->at), free(w->x_at), free(w->x_src), free(w->x_start);
    fs_typed_picks_buf_free(&w->merged);
    free(w);
}

static int grow(int64_t **p, size_t n)
{
    int64_t *q = realloc(*p, (n ? n : 1) * sizeof *q);
    if (!q) return -1;
    *p = q;
    return 0;
}

/* Room for n ids over H held parts, and a sampler per part: each part's
 * answer stays in its own sampler until the merge has read it. */
static fs_status_t ws_reserve(fs_shard_ws_t *w, size_t n, int H, fs_error_t *err)
{
    if (n > w->cap) {
        int *po = realloc(w->part_of, (n ? n : 1) * sizeof *po);
        if (po) w->part_of = po;
        if (!po || grow(&w->rows, n) || grow(&w->keys, n) || grow(&w->time, n) || grow(&w->batch, n) ||
            grow(&w->at, n))
            return fs_error(err, FS_ERR_NOMEM, "shard: out of memory for %zu ids", n);
        w->cap = n;
    }
    if (H > w->num_samplers) {
        fs_typed_sampler_t **p = realloc(w->sampler, (size_t)H * sizeof *p);
        fs_typed_picks_t *a = p ? realloc(w->ans, (size_t)H * sizeof *a) : NULL;
        fs_typed_picks_t **ap = a ? realloc(w->ansp, (size_t)H * sizeof *ap) : NULL;
        if (p) w->sampler = p;
        if (a) w->ans = a;
        if (ap) w->ansp = ap;
        if (!p || !a || !ap || grow(&w->start, (size_t)H + 1) || grow(&w->cursor, (size_t)H) ||
            grow(&w->x_start, (size_t)H + 1))
            return fs_error(err, FS_ERR_NOMEM, "shard: out of memory");
        for (; w->num_samplers < H; w->num_samplers++) {
            fs_status_t st = fs_typed_sampler_create(&w->sampler[w->num_samplers], err);
            if (st != FS_OK) return st;
        }
    }
    return FS_OK;
}

/* The held part (its position in s->held) owning global id x of node type
 * t; -1 when none does. Parts' ranges ascend with their index, so a binary
 * search over the held ones finds it. */
static int find_part(const fs_shard_t *s, int t, int64_t x)
{
    int lo = 0, hi = s->num_held - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        const fs_node_type_t *nt = &s->held[mid]->ds->node_types[t];
        if (x < nt->first) hi = mid - 1;
        else if (x >= nt->first + nt->count) lo = mid + 1;
        else return mid;
    }
    return -1;
}

/* Places every id: its part in part_of[i], and the groups' rows and keys
 * laid out part after part from start[part], each group in the request's
 * order. */
static fs_status_t place_ids(const fs_shard_t *s, fs_shard_ws_t *w, int t, const fs_typed_picks_req_t *q,
                             const int64_t *ids, int64_t n, fs_error_t *err)
{
    int H = s->num_held;
    for (int h = 0; h <= H; h++) w->start[h] = 0;
    for (int64_t i = 0; i < n; i++) {
        int h = find_part(s, t, ids[i]);
        if (h < 0)
            return fs_error(err, FS_ERR_NOT_FOUND, "shard: node %lld (entry %lld) is in no part this shard holds "
                            "(the shard map is stale: fetch it again)", (long long)ids[i], (long long)i);
        w->part_of[i] = h;
        w->start[h + 1]++;
    }
    for (int h = 0; h < H; h++) w->start[h + 1] += w->start[h], w->cursor[h] = w->start[h];
    for (int64_t i = 0; i < n; i++) {
        int h = w->part_of[i];
        const fs_node_type_t *nt = &s->held[h]->ds->node_types[t];
        int64_t at = w->cursor[h]++, row = ids[i] - nt->first;
        w->at[i] = at;
        w->rows[at] = row;
        w->keys[at] = nt->orig_ids ? nt->orig_ids[row] : ids[i];
        if (q && q->time) w->time[at] = q->time[i];
        if (q && q->batch) w->batch[at] = q->batch[i];
    }
    return FS_OK;
}

/* A pass's exclusions by part, each at its row's place in the part's group
 * (ascending: places keep the request's order). */
static fs_status_t place_exclusions(fs_shard_ws_t *w, const fs_typed_picks_req_t *q, int H, int64_t n, fs_error_t *err)
{
    size_t X = (size_t)q->num_excl;
    for (size_t j = 0; j < X; j++)
        if (q->excl_at[j] < 0 || q->excl_at[j] >= n)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "shard: exclusion %zu is at entry %lld of %lld", j,
                            (long long)q->excl_at[j], (long long)n);
    if (X > w->x_cap) {
        if (grow(&w->x_at, X) || grow(&w->x_src, X)) return fs_error(err, FS_ERR_NOMEM, "shard: out of memory");
        w->x_cap = X;
    }
    for (int h = 0; h <= H; h++) w->x_start[h] = 0;
    for (size_t j = 0; j < X; j++) w->x_start[w->part_of[q->excl_at[j]] + 1]++;
    for (int h = 0; h < H; h++) w->x_start[h + 1] += w->x_start[h], w->cursor[h] = w->x_start[h];
    for (size_t j = 0; j < X; j++) {
        int64_t i = q->excl_at[j], h = w->part_of[i], x = w->cursor[h]++;
        w->x_at[x] = w->at[i] - w->start[h], w->x_src[x] = q->excl_src[j];
    }
    return FS_OK;
}

fs_status_t fs_shard_picks(const fs_shard_t *s, fs_shard_ws_t *w, const fs_typed_picks_req_t *q, const int64_t *ids,
                           int64_t n, fs_typed_picks_t *out, fs_error_t *err)
{
    if (s->num_held == 0) return held_none(s, err);
    const fs_dataset_t *ds0 = s->held[0]->ds;
    if (q->etype < 0 || q->etype >= ds0->num_edge_types)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "shard: edge type %d of %d", q->etype, ds0->num_edge_types);
    int H = s->num_held, t = ds0->edge_types[q->etype].dst_type;
    fs_status_t st = ws_reserve(w, (size_t)n, H, err);
    if (st == FS_OK) st = place_ids(s, w, t, q, ids, n, err);
    if (st == FS_OK && q->num_excl) st = place_exclusions(w, q, H, n, err);
    for (int h = 0; st == FS_OK && h < H; h++) { /* each part's group through the engine */
        const held_t *hp = s->held[h];
        fs_typed_picks_req_t mine = *q; /* with the group's times and batches */
        if (q->time) mine.time = w->time + w->start[h];
        if (q->batch) mine.batch = w->batch + w->start[h];
        if (q->num_excl)
            mine.num_excl = w->x_start[h + 1] - w->x_start[h], mine.excl_at = w->x_at + w->x_start[h],
            mine.excl_src = w->x_src + w->x_start[h];
        st = fs_typed_picks(w->sampler[h], &hp->g.view.etype[q->etype], hp->ds->node_types[t].count, &mine,
                            w->rows + w->start[h], w->keys + w->start[h], w->start[h + 1] - w->start[h], &w->ans[h],
                            err);
    }
    for (int h = 0; st == FS_OK && h < H; h++) w->ansp[h] = &w->ans[h];
    return st == FS_OK ? fs_typed_picks_merge(&w->merged, (const fs_typed_picks_t *const *)w->ansp, H, w->part_of, n,
                                              q->want_edge_ids, w->cursor, out, err)
                       : st;
}

/* ---- edges ---------------------------------------------------------------------- */

fs_status_t fs_shard_edges(const fs_shard_t *s, int etype, const int64_t *dst, const int64_t *src, int64_t n,
                           uint8_t *is_edge, fs_error_t *err)
{
    if (s->num_held == 0) return held_none(s, err);
    const fs_dataset_t *ds0 = s->held[0]->ds;
    if (etype < 0 || etype >= ds0->num_edge_types)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "shard: edge type %d of %d", etype, ds0->num_edge_types);
    int t = ds0->edge_types[etype].dst_type;
    for (int64_t i = 0; i < n; i++) {
        int h = find_part(s, t, dst[i]);
        if (h < 0)
            return fs_error(err, FS_ERR_NOT_FOUND, "shard: node %lld (entry %lld) is in no part this shard holds "
                            "(the shard map is stale: fetch it again)", (long long)dst[i], (long long)i);
        const fs_typed_etype_t *et = &s->held[h]->g.view.etype[etype];
        int64_t row = dst[i] - s->held[h]->ds->node_types[t].first, found = 0;
        for (int64_t q = et->indptr[row]; q < et->indptr[row + 1] && !found; q++)
            found = fs_typed_source(et, q) == src[i];
        is_edge[i] = (uint8_t)found;
    }
    return FS_OK;
}

/* ---- rows ----------------------------------------------------------------------- */

/* Table `name` of type t in held part h: its index, or -1. */
static int table_index(const fs_shard_t *s, int h, int t, const char *name)
{
    const fs_node_type_t *nt = &s->held[h]->ds->node_types[t];
    for (int i = 0; i < nt->num_tables; i++)
        if (strcmp(nt->tables[i].name, name) == 0) return i;
    return -1;
}

fs_status_t fs_shard_table(const fs_shard_t *s, int t, const char *table, size_t *row_bytes, fs_error_t *err)
{
    if (s->num_held == 0) return held_none(s, err);
    if (t < 0 || t >= s->held[0]->ds->num_node_types)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "shard: node type %d of %d", t, s->held[0]->ds->num_node_types);
    if (strcmp(table, FS_CLUSTER_NODE_TIME_TABLE) == 0) { /* the nodes' timestamps */
        if (!s->held[0]->ds->node_types[t].time)
            return fs_error(err, FS_ERR_NOT_FOUND, "shard: node type '%s' has no timestamps",
                            s->held[0]->ds->node_types[t].name);
        *row_bytes = sizeof(int64_t);
        return FS_OK;
    }
    int i = table_index(s, 0, t, table);
    if (i < 0)
        return fs_error(err, FS_ERR_NOT_FOUND, "shard: node type '%s' has no table '%s'",
                        s->held[0]->ds->node_types[t].name, table);
    *row_bytes = s->held[0]->ds->node_types[t].tables[i].row_bytes;
    return FS_OK;
}

fs_status_t fs_shard_rows(const fs_shard_t *s, int t, const char *table, const int64_t *ids, int64_t n, void *out,
                          fs_error_t *err)
{
    size_t row_bytes;
    fs_status_t st = fs_shard_table(s, t, table, &row_bytes, err);
    int last = -1, col = -1, times = strcmp(table, FS_CLUSTER_NODE_TIME_TABLE) == 0;
    for (int64_t i = 0; st == FS_OK && i < n; i++) {
        int h = find_part(s, t, ids[i]);
        if (h < 0)
            return fs_error(err, FS_ERR_NOT_FOUND, "shard: node %lld (entry %lld) is in no part this shard holds "
                            "(the shard map is stale: fetch it again)", (long long)ids[i], (long long)i);
        if (h != last && !times) col = table_index(s, h, t, table); /* every part has the book's tables */
        last = h;
        const fs_node_type_t *nt = &s->held[h]->ds->node_types[t];
        const char *data = times ? (const char *)nt->time : (const char *)nt->tables[col].data;
        memcpy((char *)out + (size_t)i * row_bytes, data + (size_t)(ids[i] - nt->first) * row_bytes, row_bytes);
    }
    return st;
}
