/* fs_hetero.c — the typed batch image's codec (fs_hetero.h): write a
 * described batch as one image, and read an image back, checked.
 *
 * Design: the image's layout is a pure function of its header and shape
 * (layout_arrays() below). The writer fills the shape from the batch's
 * description, lays out, allocates once and writes every array in place —
 * the host's rows callback gathers rows straight into it, no staging copy.
 * The reader checks the shape's counts, runs the same layout_arrays()
 * against the received length, and, for bytes received, checks the arrays'
 * contents (local ids, offsets) before handing out pointers. Both
 * transports go through both halves, so their batches are bit-identical by
 * construction (docs/api.md section 10). */
#include "fs_hetero.h"

#include <stdlib.h>
#include <string.h>

#define MAGIC "FSHBAT01"
#define ALIGN 64

/* Header words (int64 each, after the 8-byte magic). */
enum { H_TOTAL = 1, H_HOPS, H_TYPES, H_ETYPES, H_GROUPS, H_NTABLES, H_ETABLES, H_FLAGS, H_LABELS, H_POS, H_K,
       H_LSRC, H_LDST, H_NAMES, H_WORDS_ };

/* ---- the image's layout ------------------------------------------------------- */

/* The header's counts and where each array lies. */
typedef struct {
    int64_t w[H_WORDS_];         /* header words; w[0] unused (the magic) */
    int64_t H, T, E, G, NT, ET, flags;
    const int64_t *meta;         /* the shape */
    size_t meta_words;
    /* offsets, 0 = absent */
    size_t names, *nodes, *batch, *time, *ntab, *seed, *doff, *edst, *esrc, *eid, *etab;
    size_t lsrc, ldst, label, ltime, sidx, dpos, dneg;
    size_t total;
    size_t *mem;                 /* the offset arrays above, one allocation */
} layout_t;

/* Shape indices. */
static size_t m_type(const layout_t *L, int64_t t) { return (size_t)(t * (L->H + 2)); }
static size_t m_ntab(const layout_t *L, int64_t t, int64_t k) { return (size_t)(L->T * (L->H + 2) + 2 * (t * L->NT + k)); }
static size_t m_etype(const layout_t *L, int64_t e) { return m_ntab(L, L->T, 0) + (size_t)(2 * e); }
static size_t m_etab(const layout_t *L, int64_t e, int64_t k) { return m_etype(L, L->E) + (size_t)(2 * (e * L->ET + k)); }
static size_t m_group(const layout_t *L, int64_t g) { return m_etab(L, L->E, 0) + (size_t)(2 * g); }
static size_t m_block(const layout_t *L, int64_t b) { return m_group(L, L->G) + (size_t)(3 * b); }
static size_t meta_words(const layout_t *L) { return m_block(L, L->H * L->E); }

#define COUNT_CAP (INT64_C(1) << 40)

/* Counts from the header words: FS_ERR_FORMAT when one is out of range. */
static fs_status_t layout_counts(layout_t *L, fs_error_t *err)
{
    L->H = L->w[H_HOPS], L->T = L->w[H_TYPES], L->E = L->w[H_ETYPES], L->G = L->w[H_GROUPS];
    L->NT = L->w[H_NTABLES], L->ET = L->w[H_ETABLES], L->flags = L->w[H_FLAGS];
    if (L->H < 1 || L->H > FS_MAX_HOPS || L->T < 1 || L->T > (1 << 20) || L->E < 0 || L->E > (1 << 20) ||
        L->G < 0 || L->G > (1 << 24) || L->NT < 0 || L->NT > 4096 || L->ET < 0 || L->ET > 4096 ||
        (L->flags & ~INT64_C(127)) || L->w[H_LABELS] < 0 || L->w[H_LABELS] > COUNT_CAP || L->w[H_POS] < 0 ||
        L->w[H_POS] > COUNT_CAP || L->w[H_K] < 0 || L->w[H_K] > COUNT_CAP || L->w[H_NAMES] < 0 ||
        L->w[H_NAMES] > (1 << 28) || (double)L->NT * (double)L->T > (1 << 24) ||
        (double)L->ET * (double)L->E * L->H > (1 << 24))
        return fs_error(err, FS_ERR_FORMAT, "typed batch: header counts out of range");
    if ((L->flags & FS_HETERO_LINK) &&
        (L->w[H_LSRC] < 0 || L->w[H_LSRC] >= L->T || L->w[H_LDST] < 0 || L->w[H_LDST] >= L->T))
        return fs_error(err, FS_ERR_FORMAT, "typed batch: link endpoint types out of range");
    if ((L->flags & (FS_HETERO_TRIPLET | FS_HETERO_LABEL_TIME)) && !(L->flags & FS_HETERO_LINK))
        return fs_error(err, FS_ERR_FORMAT, "typed batch: link flags on a batch that is no link batch");
    L->meta_words = meta_words(L);
    return FS_OK;
}

/* Reserves `bytes` at the next 64-byte boundary; 0 on overflow. */
static int take(layout_t *L, size_t *at, int64_t count, int64_t elem)
{
    size_t bytes;
    if (count < 0 || elem < 0 || __builtin_mul_overflow((size_t)count, (size_t)elem, &bytes)) return 0;
    size_t start = (L->total + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    if (start < L->total || __builtin_add_overflow(start, bytes, &L->total)) return 0;
    *at = start;
    return 1;
}

static int64_t row_size(const int64_t *pick) /* dtype, dim */
{
    size_t s = fs_dtype_size((fs_dtype_t)pick[0]);
    return pick[0] > 0 && pick[0] < FS_DTYPE_COUNT_ && s && pick[1] >= 0 && pick[1] <= (1 << 24) ? (int64_t)s * pick[1] : -1;
}

/* FS_HETERO_JOINED: every edge type's one region of the hops' sources then
 * destinations, and one of their edge ids; each block's arrays inside
 * them, hop after hop. 0 on an overflow. */
static int join_edges(layout_t *L)
{
    const int64_t *m = L->meta;
    for (int64_t e = 0; e < L->E; e++) {
        int64_t total = 0;
        for (int64_t h = 0; h < L->H; h++) total += m[m_block(L, h * L->E + e) + 2];
        size_t pair, ids = 0;
        if (!take(L, &pair, 2 * total, 8) || ((L->flags & FS_HETERO_EDGE_IDS) && !take(L, &ids, total, 8))) return 0;
        size_t at = 0;
        for (int64_t h = 0; h < L->H; h++) {
            int64_t b = h * L->E + e;
            L->esrc[b] = pair + at, L->edst[b] = pair + 8 * (size_t)total + at, L->eid[b] = ids + at;
            at += 8 * (size_t)m[m_block(L, b) + 2];
        }
    }
    return 1;
}

/* Where every array lies, from the counts and the shape (which must be
 * in-range already: see check_shape). 0 on an overflow. */
static int layout_arrays(layout_t *L)
{
    int64_t T = L->T, E = L->E, G = L->G, B = L->H * L->E;
    size_t n = (size_t)(3 * T + T * L->NT + G + 4 * B + B * L->ET) + 1;
    if (!(L->mem = calloc(n, sizeof *L->mem))) return 0;
    size_t *p = L->mem;
    L->nodes = p, p += T, L->batch = p, p += T, L->time = p, p += T, L->ntab = p, p += T * L->NT;
    L->seed = p, p += G, L->doff = p, p += B, L->edst = p, p += B, L->esrc = p, p += B, L->eid = p, p += B;
    L->etab = p;
    const int64_t *m = L->meta;
    L->total = (size_t)(8 * H_WORDS_ + 8 * (int64_t)L->meta_words);
    int ok = take(L, &L->names, L->w[H_NAMES], 1);
    for (int64_t t = 0; t < T && ok; t++) {
        int64_t nn = m[m_type(L, t)];
        ok = take(L, &L->nodes[t], nn, 8) && (!(L->flags & FS_HETERO_BATCH) || take(L, &L->batch[t], nn, 8)) &&
             (!(L->flags & FS_HETERO_TIME) || take(L, &L->time[t], nn, 8));
        for (int64_t k = 0; k < L->NT && ok; k++) {
            const int64_t *pick = &m[m_ntab(L, t, k)];
            if (pick[0]) ok = take(L, &L->ntab[t * L->NT + k], nn, row_size(pick));
        }
    }
    for (int64_t g = 0; g < G && ok; g++) ok = take(L, &L->seed[g], m[m_group(L, g) + 1], 8);
    if (L->flags & FS_HETERO_JOINED) ok = ok && join_edges(L);
    for (int64_t b = 0; b < B && ok; b++) {
        const int64_t *blk = &m[m_block(L, b)];
        ok = take(L, &L->doff[b], blk[0] + 1, 8) &&
             ((L->flags & FS_HETERO_JOINED) ||
              (take(L, &L->edst[b], blk[2], 8) && take(L, &L->esrc[b], blk[2], 8) &&
               (!(L->flags & FS_HETERO_EDGE_IDS) || take(L, &L->eid[b], blk[2], 8))));
        for (int64_t k = 0; k < L->ET && ok; k++) {
            const int64_t *pick = &m[m_etab(L, b % E, k)];
            if (pick[0]) ok = take(L, &L->etab[b * L->ET + k], blk[2], row_size(pick));
        }
    }
    if (ok && (L->flags & FS_HETERO_LINK) && !(L->flags & FS_HETERO_TRIPLET)) {
        int64_t nl = L->w[H_LABELS];
        /* edge_label_index is one [2, nl] array: src row, then dst row (zero-copy for PyG) */
        ok = take(L, &L->lsrc, 2 * nl, 8) && take(L, &L->label, nl, 8) &&
             (!(L->flags & FS_HETERO_LABEL_TIME) || take(L, &L->ltime, nl, 8));
        L->ldst = L->lsrc + (size_t)nl * 8;
    }
    if (ok && (L->flags & FS_HETERO_TRIPLET)) {
        int64_t np = L->w[H_POS], kk;
        ok = !__builtin_mul_overflow(np, L->w[H_K], &kk) && take(L, &L->sidx, np, 8) && take(L, &L->dpos, np, 8) &&
             take(L, &L->dneg, kk, 8);
    }
    L->total = (L->total + 7) & ~(size_t)7;
    return ok;
}

static void layout_free(layout_t *L) { free(L->mem); }

/* ---- writing an image ----------------------------------------------------------- */

/* A table's (dtype, dim) in the shape: (0, 0) when absent. */
static void put_pick(int64_t *m, const fs_rows_t *t)
{
    if (t->dtype != FS_DTYPE_INVALID) m[0] = t->dtype, m[1] = t->dim;
}

static int64_t *put_meta(layout_t *L, const fs_hetero_batch_t *b)
{
    int64_t *m = calloc(L->meta_words + 1, sizeof *m);
    if (!m) return NULL;
    for (int64_t t = 0; t < L->T; t++) {
        const fs_hetero_nodes_t *n = &b->types[t];
        m[m_type(L, t)] = n->num_nodes;
        for (int64_t h = 0; h <= L->H; h++) m[m_type(L, t) + 1 + (size_t)h] = n->count_after[h];
        for (int64_t k = 0; k < L->NT; k++) put_pick(&m[m_ntab(L, t, k)], &n->tables[k]);
    }
    for (int64_t e = 0; e < L->E; e++) {
        m[m_etype(L, e)] = b->etypes[e].src_type, m[m_etype(L, e) + 1] = b->etypes[e].dst_type;
        for (int64_t k = 0; k < L->ET; k++) put_pick(&m[m_etab(L, e, k)], &b->edge_tables[e * L->ET + k]);
    }
    for (int64_t gi = 0; gi < L->G; gi++)
        m[m_group(L, gi)] = b->group_type[gi], m[m_group(L, gi) + 1] = b->group_count[gi];
    for (int64_t i = 0; i < L->H * L->E; i++) {
        const fs_block_t *blk = &b->blocks[i];
        m[m_block(L, i)] = blk->num_dst, m[m_block(L, i) + 1] = blk->num_src, m[m_block(L, i) + 2] = blk->num_edges;
    }
    return m;
}

static size_t names_bytes(const fs_hetero_batch_t *b)
{
    size_t n = 0;
    for (int t = 0; t < b->num_node_types; t++) n += strlen(b->types[t].name) + 1;
    for (int e = 0; e < b->num_edge_types; e++) n += strlen(b->etypes[e].rel) + 1;
    return n;
}

static void put_names(char *at, const fs_hetero_batch_t *b)
{
    for (int t = 0; t < b->num_node_types; t++) at = stpcpy(at, b->types[t].name) + 1;
    for (int e = 0; e < b->num_edge_types; e++) at = stpcpy(at, b->etypes[e].rel) + 1;
}

/* Zeroes the padding after an array that ends at `end`, up to the next
 * array's aligned start (or the image's end). The image is not cleared as
 * a whole: the feature rows are most of it and every array is written in
 * full, so clearing first cost a seventh of a batch's time; this way no
 * byte is left unset either (stale slot or heap bytes never reach a
 * client). */
static void zero_padding(char *img, const layout_t *L, size_t end)
{
    size_t next = (end + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    if (next > L->total) next = L->total;
    if (next > end) memset(img + end, 0, next - end);
}

static void put(char *img, const layout_t *L, size_t at, const void *src, int64_t count)
{
    size_t bytes = count > 0 ? (size_t)count * 8 : 0;
    if (src) memcpy(img + at, src, bytes);
    else memset(img + at, 0, bytes);
    zero_padding(img, L, at + bytes);
}

/* FS_HETERO_JOINED's regions: each hop's arrays in place, the padding zeroed only
 * after a region's end (after one hop's array lies the next hop's). */
static void put_joined(char *img, const layout_t *L, const fs_block_t *blocks)
{
    for (int64_t e = 0; e < L->E; e++) {
        size_t end = 0, ids_end = 0;
        for (int64_t h = 0; h < L->H; h++) {
            int64_t b = h * L->E + e;
            const fs_block_t *blk = &blocks[b];
            size_t bytes = (size_t)blk->num_edges * 8;
            if (bytes) memcpy(img + L->esrc[b], blk->edge_src, bytes), memcpy(img + L->edst[b], blk->edge_dst, bytes);
            end = L->edst[b] + bytes;
            if (L->flags & FS_HETERO_EDGE_IDS) {
                if (bytes) memcpy(img + L->eid[b], blk->edge_ids, bytes);
                ids_end = L->eid[b] + bytes;
            }
        }
        zero_padding(img, L, end);
        if (L->flags & FS_HETERO_EDGE_IDS) zero_padding(img, L, ids_end);
    }
}

/* The rows of one table, by the writer's callback. */
typedef struct {
    fs_hetero_rows_fn fn;
    void *ctx;
} rows_cb_t;

static fs_status_t put_rows(char *img, const layout_t *L, size_t at, const fs_rows_t *t, int edge, int64_t owner,
                            int64_t k, const int64_t *ids, int64_t n, const rows_cb_t *cb, fs_error_t *err)
{
    zero_padding(img, L, at + (n > 0 ? (size_t)n * fs_dtype_size(t->dtype) * (size_t)t->dim : 0));
    return n > 0 ? cb->fn(cb->ctx, edge, owner, k, ids, n, img + at, err) : FS_OK;
}

static fs_status_t put_types(char *img, const layout_t *L, const fs_hetero_batch_t *b, const rows_cb_t *cb,
                             fs_error_t *err)
{
    fs_status_t st = FS_OK;
    for (int64_t t = 0; t < L->T && !st; t++) {
        const fs_hetero_nodes_t *tn = &b->types[t];
        put(img, L, L->nodes[t], tn->nodes, tn->num_nodes);
        if (L->flags & FS_HETERO_BATCH) put(img, L, L->batch[t], tn->batch, tn->num_nodes);
        if (L->flags & FS_HETERO_TIME) put(img, L, L->time[t], tn->time, tn->num_nodes);
        for (int64_t k = 0; k < L->NT && !st; k++)
            if (tn->tables[k].dtype != FS_DTYPE_INVALID)
                st = put_rows(img, L, L->ntab[t * L->NT + k], &tn->tables[k], 0, t, k, tn->nodes, tn->num_nodes, cb,
                              err);
    }
    return st;
}

static fs_status_t put_blocks(char *img, const layout_t *L, const fs_hetero_batch_t *b, const rows_cb_t *cb,
                              fs_error_t *err)
{
    fs_status_t st = FS_OK;
    if (L->flags & FS_HETERO_JOINED) put_joined(img, L, b->blocks);
    for (int64_t i = 0; i < L->H * L->E && !st; i++) {
        const fs_block_t *blk = &b->blocks[i];
        put(img, L, L->doff[i], blk->dst_offsets, blk->num_dst + 1);
        if (!(L->flags & FS_HETERO_JOINED)) {
            put(img, L, L->edst[i], blk->edge_dst, blk->num_edges);
            put(img, L, L->esrc[i], blk->edge_src, blk->num_edges);
            if (L->flags & FS_HETERO_EDGE_IDS) put(img, L, L->eid[i], blk->edge_ids, blk->num_edges);
        }
        for (int64_t k = 0; k < L->ET && !st; k++) {
            const fs_rows_t *t = &b->edge_tables[(i % L->E) * L->ET + k]; /* described by hop 0's block */
            if (t->dtype != FS_DTYPE_INVALID)
                st = put_rows(img, L, L->etab[i * L->ET + k], t, 1, i % L->E, k, blk->edge_ids, blk->num_edges, cb,
                              err);
        }
    }
    return st;
}

static void put_link(char *img, const layout_t *L, const fs_hetero_batch_t *b)
{
    if (!(L->flags & FS_HETERO_LINK)) return;
    if (!(L->flags & FS_HETERO_TRIPLET)) {
        put(img, L, L->lsrc, b->label_src, b->num_labels);
        put(img, L, L->ldst, b->label_dst, b->num_labels);
        put(img, L, L->label, b->label, b->num_labels);
        if (L->flags & FS_HETERO_LABEL_TIME) put(img, L, L->ltime, b->label_time, b->num_labels);
        return;
    }
    put(img, L, L->sidx, b->src_index, b->num_pos);
    put(img, L, L->dpos, b->dst_pos_index, b->num_pos);
    put(img, L, L->dneg, b->dst_neg_index, b->num_pos * b->num_neg_per_src);
}

/* Every array after the shape, in the layout's order. */
static fs_status_t put_arrays(char *img, const layout_t *L, const fs_hetero_batch_t *b, const rows_cb_t *cb,
                              fs_error_t *err)
{
    zero_padding(img, L, (size_t)(8 * H_WORDS_ + 8 * (int64_t)L->meta_words)); /* before the names */
    put_names(img + L->names, b);
    zero_padding(img, L, L->names + (size_t)L->w[H_NAMES]);
    fs_status_t st = put_types(img, L, b, cb, err);
    for (int64_t gi = 0; gi < L->G && !st; gi++) put(img, L, L->seed[gi], b->seed_local[gi], b->group_count[gi]);
    if (!st) st = put_blocks(img, L, b, cb, err);
    if (!st) put_link(img, L, b);
    return st;
}

static void header_words(layout_t *L, const fs_hetero_batch_t *b, int flags)
{
    int64_t *w = L->w;
    memset(w, 0, sizeof L->w);
    w[H_HOPS] = b->num_hops, w[H_TYPES] = b->num_node_types, w[H_ETYPES] = b->num_edge_types;
    w[H_GROUPS] = b->num_groups;
    w[H_NTABLES] = (int64_t)b->num_node_tables, w[H_ETABLES] = (int64_t)b->num_edge_tables;
    if (flags & FS_HETERO_LINK) {
        w[H_LSRC] = b->link_src_type, w[H_LDST] = b->link_dst_type;
        w[H_LABELS] = b->num_labels, w[H_POS] = b->num_pos, w[H_K] = b->num_neg_per_src;
    }
    w[H_FLAGS] = flags;
    w[H_NAMES] = (int64_t)names_bytes(b);
}

fs_status_t fs_hetero_encode(const fs_hetero_batch_t *b, int flags, fs_hetero_alloc_fn alloc, void *alloc_ctx,
                             fs_hetero_rows_fn rows, void *rows_ctx, void **image, size_t *len, fs_error_t *err)
{
    layout_t L = {0};
    *image = NULL, *len = 0;
    header_words(&L, b, flags);
    fs_status_t st = layout_counts(&L, err);
    int64_t *meta = NULL;
    if (st == FS_OK && !(meta = put_meta(&L, b)))
        st = fs_error(err, FS_ERR_NOMEM, "out of memory for a typed batch's shape");
    L.meta = meta;
    if (st == FS_OK && !layout_arrays(&L)) st = fs_error(err, FS_ERR_RESOURCE, "typed batch: too large to lay out");
    char *img = NULL;
    if (st == FS_OK && !(img = alloc(alloc_ctx, L.total, err))) st = err->code ? err->code : FS_ERR_NOMEM;
    if (st == FS_OK) {
        L.w[H_TOTAL] = (int64_t)L.total;
        memcpy(img, MAGIC, 8);
        memcpy(img + 8, &L.w[1], 8 * (H_WORDS_ - 1));
        memcpy(img + 8 * H_WORDS_, meta, L.meta_words * 8);
        st = put_arrays(img, &L, b, &(rows_cb_t){rows, rows_ctx}, err);
    }
    if (st == FS_OK) *image = img, *len = L.total;
    free(meta);
    layout_free(&L);
    return st;
}

/* ---- reading an image back ---------------------------------------------------------- */

uint64_t fs_hetero_image_bytes(const void *head, size_t len)
{
    int64_t total;
    if (len < FS_HETERO_HEADER_BYTES || memcmp(head, MAGIC, 8) != 0) return 0;
    memcpy(&total, (const char *)head + 8 * H_TOTAL, 8);
    return total >= FS_HETERO_HEADER_BYTES ? (uint64_t)total : 0;
}

/* The shape's values, before any array is laid out. */
static fs_status_t check_shape(const layout_t *L, fs_error_t *err)
{
    const int64_t *m = L->meta;
    for (int64_t t = 0; t < L->T; t++) {
        const int64_t *x = &m[m_type(L, t)];
        if (x[0] < 0 || x[0] > COUNT_CAP) return fs_error(err, FS_ERR_FORMAT, "typed batch: node type %lld's count", (long long)t);
        for (int64_t h = 0; h <= L->H; h++)
            if (x[1 + h] < (h ? x[h] : 0) || x[1 + h] > x[0])
                return fs_error(err, FS_ERR_FORMAT, "typed batch: node type %lld's count after hop %lld", (long long)t,
                                (long long)h);
        for (int64_t k = 0; k < L->NT; k++) {
            const int64_t *p = &m[m_ntab(L, t, k)];
            if (p[0] != 0 && row_size(p) < 0)
                return fs_error(err, FS_ERR_FORMAT, "typed batch: node table %lld of type %lld", (long long)k, (long long)t);
        }
    }
    for (int64_t e = 0; e < L->E; e++) {
        const int64_t *x = &m[m_etype(L, e)];
        if (x[0] < 0 || x[0] >= L->T || x[1] < 0 || x[1] >= L->T)
            return fs_error(err, FS_ERR_FORMAT, "typed batch: edge type %lld's endpoint types", (long long)e);
        for (int64_t k = 0; k < L->ET; k++) {
            const int64_t *p = &m[m_etab(L, e, k)];
            if (p[0] != 0 && row_size(p) < 0)
                return fs_error(err, FS_ERR_FORMAT, "typed batch: edge table %lld of edge type %lld", (long long)k,
                                (long long)e);
        }
    }
    for (int64_t gi = 0; gi < L->G; gi++) {
        const int64_t *x = &m[m_group(L, gi)];
        if (x[0] < 0 || x[0] >= L->T || x[1] < 0 || x[1] > COUNT_CAP)
            return fs_error(err, FS_ERR_FORMAT, "typed batch: seed group %lld", (long long)gi);
    }
    for (int64_t b = 0; b < L->H * L->E; b++) {
        const int64_t *x = &m[m_block(L, b)];
        int64_t src_n = m[m_type(L, m[m_etype(L, b % L->E)])], dst_n = m[m_type(L, m[m_etype(L, b % L->E) + 1])];
        if (x[0] < 0 || x[0] > dst_n || x[1] < 0 || x[1] > src_n || x[2] < 0 || x[2] > COUNT_CAP)
            return fs_error(err, FS_ERR_FORMAT, "typed batch: block %lld's counts", (long long)b);
    }
    return FS_OK;
}

static int ids_below(const int64_t *a, int64_t n, int64_t limit)
{
    for (int64_t i = 0; i < n; i++)
        if ((uint64_t)a[i] >= (uint64_t)limit) return 0;
    return 1;
}

#define AT(off) ((const int64_t *)(base + (off)))

/* The arrays' contents: offsets and local ids. */
static fs_status_t check_arrays(const layout_t *L, const char *base, fs_error_t *err)
{
    const int64_t *m = L->meta;
    for (int64_t gi = 0; gi < L->G; gi++)
        if (!ids_below(AT(L->seed[gi]), m[m_group(L, gi) + 1], m[m_type(L, m[m_group(L, gi)])]))
            return fs_error(err, FS_ERR_FORMAT, "typed batch: seed group %lld has a local id out of range", (long long)gi);
    for (int64_t b = 0; b < L->H * L->E; b++) {
        const int64_t *x = &m[m_block(L, b)], *off = AT(L->doff[b]);
        int64_t dst_n = m[m_type(L, m[m_etype(L, b % L->E) + 1])];
        int bad = off[0] != 0 || off[x[0]] != x[2];
        for (int64_t d = 0; d < x[0] && !bad; d++) bad = off[d + 1] < off[d];
        if (bad || !ids_below(AT(L->edst[b]), x[2], dst_n) || !ids_below(AT(L->esrc[b]), x[2], x[1]))
            return fs_error(err, FS_ERR_FORMAT, "typed batch: block %lld (hop %lld) has an offset or local id out of "
                            "range", (long long)b, (long long)(b / L->E));
    }
    int link = (L->flags & FS_HETERO_LINK) != 0; /* endpoint types are checked (layout_counts) only on link batches */
    int64_t ns = link ? m[m_type(L, L->w[H_LSRC])] : 0, nd = link ? m[m_type(L, L->w[H_LDST])] : 0;
    if ((L->flags & FS_HETERO_LINK) && !(L->flags & FS_HETERO_TRIPLET) &&
        (!ids_below(AT(L->lsrc), L->w[H_LABELS], ns) || !ids_below(AT(L->ldst), L->w[H_LABELS], nd)))
        return fs_error(err, FS_ERR_FORMAT, "typed batch: edge_label_index has a local id out of range");
    if ((L->flags & FS_HETERO_TRIPLET) &&
        (!ids_below(AT(L->sidx), L->w[H_POS], ns) || !ids_below(AT(L->dpos), L->w[H_POS], nd) ||
         !ids_below(AT(L->dneg), L->w[H_POS] * L->w[H_K], nd)))
        return fs_error(err, FS_ERR_FORMAT, "typed batch: a triplet index is out of range");
    return FS_OK;
}

/* Names: T node type names, then E relation names, each NUL-terminated. */
static fs_status_t read_names(const layout_t *L, const char *base, const char **names, fs_error_t *err)
{
    const char *p = base + L->names, *end = p + L->w[H_NAMES];
    for (int64_t i = 0; i < L->T + L->E; i++) {
        const char *z = memchr(p, 0, (size_t)(end - p));
        if (!z) return fs_error(err, FS_ERR_FORMAT, "typed batch: the names end early");
        names[i] = p, p = z + 1;
    }
    return FS_OK;
}

/* The public batch's tables, one allocation. */
typedef struct {
    fs_hetero_nodes_t *types;
    fs_hetero_etype_t *etypes;
    fs_block_t *blocks;
    fs_rows_t *ntab, *etab;
    int *group_type;
    int64_t *group_count;
    const int64_t **seed_local;
    const char **names;
} tables_t;

static void *carve(char **p, size_t bytes)
{
    void *r = *p;
    *p += (bytes + 15) & ~(size_t)15;
    return r;
}

static void *alloc_tables(const layout_t *L, tables_t *x)
{
    size_t T = (size_t)L->T, E = (size_t)L->E, B = (size_t)(L->H * L->E), G = (size_t)L->G;
    size_t sizes[] = {T * sizeof *x->types, E * sizeof *x->etypes, B * sizeof *x->blocks,
                      T * (size_t)L->NT * sizeof *x->ntab, B * (size_t)L->ET * sizeof *x->etab,
                      G * sizeof *x->group_type, G * sizeof *x->group_count, G * sizeof *x->seed_local,
                      (T + E) * sizeof *x->names};
    size_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) total += (sizes[i] + 15) & ~(size_t)15;
    char *mem = calloc(1, total + 16), *p = mem;
    if (!mem) return NULL;
    x->types = carve(&p, sizes[0]), x->etypes = carve(&p, sizes[1]), x->blocks = carve(&p, sizes[2]);
    x->ntab = carve(&p, sizes[3]), x->etab = carve(&p, sizes[4]), x->group_type = carve(&p, sizes[5]);
    x->group_count = carve(&p, sizes[6]), x->seed_local = carve(&p, sizes[7]), x->names = carve(&p, sizes[8]);
    return mem;
}

static void rows_at(fs_rows_t *out, const char *base, size_t off, const int64_t *pick, int64_t rows)
{
    *out = pick[0] ? (fs_rows_t){.rows = rows, .dim = pick[1], .dtype = (fs_dtype_t)pick[0], .data = base + off}
                   : (fs_rows_t){.rows = rows};
}

static void fill_batch(const layout_t *L, const char *base, const tables_t *x, fs_hetero_batch_t *b)
{
    const int64_t *m = L->meta;
    int64_t T = L->T, E = L->E;
    for (int64_t t = 0; t < T; t++) {
        int64_t n = m[m_type(L, t)];
        for (int64_t k = 0; k < L->NT; k++) rows_at(&x->ntab[t * L->NT + k], base, L->ntab[t * L->NT + k], &m[m_ntab(L, t, k)], n);
        x->types[t] = (fs_hetero_nodes_t){.name = x->names[t], .num_nodes = n, .nodes = AT(L->nodes[t]),
                                          .batch = (L->flags & FS_HETERO_BATCH) ? AT(L->batch[t]) : NULL,
                                          .time = (L->flags & FS_HETERO_TIME) ? AT(L->time[t]) : NULL,
                                          .count_after = &m[m_type(L, t) + 1], .tables = &x->ntab[t * L->NT]};
    }
    for (int64_t e = 0; e < E; e++) {
        int s = (int)m[m_etype(L, e)], d = (int)m[m_etype(L, e) + 1];
        x->etypes[e] = (fs_hetero_etype_t){.src = x->names[s], .rel = x->names[T + e], .dst = x->names[d],
                                           .src_type = s, .dst_type = d};
    }
    for (int64_t i = 0; i < L->H * E; i++) {
        const int64_t *c = &m[m_block(L, i)];
        x->blocks[i] = (fs_block_t){.num_dst = c[0], .num_src = c[1], .num_edges = c[2], .dst_offsets = AT(L->doff[i]),
                                    .edge_dst = AT(L->edst[i]), .edge_src = AT(L->esrc[i]),
                                    .edge_ids = (L->flags & FS_HETERO_EDGE_IDS) ? AT(L->eid[i]) : NULL};
        for (int64_t k = 0; k < L->ET; k++) rows_at(&x->etab[i * L->ET + k], base, L->etab[i * L->ET + k], &m[m_etab(L, i % E, k)], c[2]);
    }
    for (int64_t gi = 0; gi < L->G; gi++) {
        x->group_type[gi] = (int)m[m_group(L, gi)], x->group_count[gi] = m[m_group(L, gi) + 1];
        x->seed_local[gi] = AT(L->seed[gi]);
    }
    *b = (fs_hetero_batch_t){.num_hops = (int)L->H, .num_node_types = (int)T, .num_edge_types = (int)E,
                             .types = x->types, .etypes = x->etypes, .blocks = x->blocks,
                             .num_node_tables = (size_t)L->NT, .num_edge_tables = (size_t)L->ET, .edge_tables = x->etab,
                             .num_groups = (int)L->G, .group_type = x->group_type, .group_count = x->group_count,
                             .seed_local = x->seed_local};
    if (!(L->flags & FS_HETERO_LINK)) return;
    b->link_src_type = (int)L->w[H_LSRC], b->link_dst_type = (int)L->w[H_LDST];
    if (L->flags & FS_HETERO_TRIPLET) {
        b->num_pos = L->w[H_POS], b->num_neg_per_src = L->w[H_K];
        b->src_index = AT(L->sidx), b->dst_pos_index = AT(L->dpos), b->dst_neg_index = AT(L->dneg);
    } else {
        b->num_labels = L->w[H_LABELS];
        b->label_src = AT(L->lsrc), b->label_dst = AT(L->ldst), b->label = AT(L->label);
        b->label_time = (L->flags & FS_HETERO_LABEL_TIME) ? AT(L->ltime) : NULL;
    }
}

fs_status_t fs_hetero_index(const void *image, size_t len, int received, fs_hetero_index_t *ix, fs_error_t *err)
{
    const char *base = image;
    layout_t L = {0};
    tables_t x = {0};
    memset(ix, 0, sizeof *ix);
    if (((uintptr_t)image & 7) || len < 8 * H_WORDS_ || memcmp(base, MAGIC, 8) != 0)
        return fs_error(err, FS_ERR_FORMAT, "typed batch: not a batch image (%zu bytes)", len);
    memcpy(&L.w[1], base + 8, 8 * (H_WORDS_ - 1));
    fs_status_t st = layout_counts(&L, err);
    if (st == FS_OK && (L.w[H_TOTAL] < 0 || (uint64_t)L.w[H_TOTAL] != len))
        st = fs_error(err, FS_ERR_FORMAT, "typed batch: %zu bytes received, the header says %lld", len,
                      (long long)L.w[H_TOTAL]);
    if (st == FS_OK && (len - 8 * H_WORDS_) / 8 < L.meta_words)
        st = fs_error(err, FS_ERR_FORMAT, "typed batch: the shape is cut short");
    L.meta = (const int64_t *)(base + 8 * H_WORDS_);
    if (st == FS_OK) st = check_shape(&L, err);
    if (st == FS_OK && (!layout_arrays(&L) || L.total != len))
        st = fs_error(err, FS_ERR_FORMAT, "typed batch: its arrays need %zu bytes, it has %zu", L.total, len);
    if (st == FS_OK && received) st = check_arrays(&L, base, err);
    if (st == FS_OK && !(ix->mem = alloc_tables(&L, &x)))
        st = fs_error(err, FS_ERR_NOMEM, "out of memory reading a typed batch");
    if (st == FS_OK) st = read_names(&L, base, x.names, err);
    if (st == FS_OK) fill_batch(&L, base, &x, &ix->batch);
    layout_free(&L);
    if (st != FS_OK) fs_hetero_index_free(ix);
    return st;
}

void fs_hetero_index_free(fs_hetero_index_t *ix)
{
    free(ix->mem);
    memset(ix, 0, sizeof *ix);
}
