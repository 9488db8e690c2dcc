/* fuzz_hetero.c — libFuzzer harness for typed batches on the network: the
 * batch image a grpc:// client receives (fs_hetero_index, proto/
 * fs_hetero.c) and the typed requests the gRPC server decodes
 * (HeteroSampleRequest and LinkSampleRequest through fs_wire_hetero_* and
 * fs_wire_link_*, proto/fs_wire_typed.c).
 *
 * Input: byte 0 picks the mode; the rest is the image or the message.
 *   0  an image, in a buffer of exactly its length (8-byte aligned, as
 *      the client's): indexed or refused. Accepted: the header's total is
 *      the length; every array of the batch lies inside the buffer and is
 *      read end to end (ASan watches); every local id, offset and index is
 *      in range for its type's node count.
 *   1  a HeteroSampleRequest, 2  a LinkSampleRequest, decoded as the server
 *      decodes them (ids borrowed from the input where aligned) and taken.
 *      Taken: counts consistent (a fanout per hop, a time per id, a label
 *      per edge), arrays readable; then encoded again as the client encodes
 *      (fs_wire_hetero_request / fs_wire_link_request), decoded and taken:
 *      the same request (the fixed point).
 * Every refusal must carry its reason (FUZZ_CHECK_REFUSAL). */
#include "fs_hetero.h"
#include "fs_wire.h"
#include "fuzz_common.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    return 0;
}

static volatile uint64_t sink;

static void read_bytes(const void *base, size_t len, const void *p, size_t bytes, const char *what)
{
    const char *b = base, *q = p;
    FUZZ_CHECK(bytes == 0 || (q >= b && q <= b + len && bytes <= (size_t)(b + len - q)), "%s: %zu bytes at %p "
               "outside the image [%p, +%zu)", what, bytes, p, base, len);
    for (size_t i = 0; i < bytes; i++) sink += (unsigned char)q[i];
}

static void ids_below(const void *base, size_t len, const int64_t *a, int64_t n, int64_t limit, const char *what)
{
    if (n <= 0) return;
    FUZZ_CHECK(a != NULL, "%s: %lld values, no array", what, (long long)n);
    read_bytes(base, len, a, (size_t)n * 8, what);
    for (int64_t i = 0; i < n; i++) FUZZ_CHECK(a[i] >= 0 && a[i] < limit, "%s[%lld] = %lld, limit %lld", what,
                                               (long long)i, (long long)a[i], (long long)limit);
}

static void check_rows(const void *base, size_t len, const fs_rows_t *r, int64_t rows, const char *what)
{
    FUZZ_CHECK(r->rows == rows, "%s: %lld rows for %lld", what, (long long)r->rows, (long long)rows);
    if (!r->data) return;
    size_t es = fs_dtype_size(r->dtype);
    FUZZ_CHECK(es > 0 && r->dim >= 0, "%s: dtype %d, dim %lld", what, (int)r->dtype, (long long)r->dim);
    read_bytes(base, len, r->data, (size_t)r->rows * (size_t)r->dim * es, what);
}

static void check_image(const uint8_t *p, size_t n)
{
    void *img = malloc(n ? n : 1); /* exactly n bytes, malloc-aligned as the client's buffer */
    if (!img) abort();
    if (n) memcpy(img, p, n);
    fs_hetero_index_t ix;
    fs_error_t err = {0};
    fs_status_t st = fs_hetero_index(img, n, 1, &ix, &err);
    if (st != FS_OK) {
        FUZZ_CHECK_REFUSAL(st, err);
        free(img);
        return;
    }
    FUZZ_CHECK(fs_hetero_image_bytes(img, n) == n, "accepted an image whose header says %llu bytes, of %zu",
               (unsigned long long)fs_hetero_image_bytes(img, n), n);
    const fs_hetero_batch_t *b = &ix.batch;
    int H = b->num_hops, T = b->num_node_types, E = b->num_edge_types;
    FUZZ_CHECK(H >= 1 && H <= FS_MAX_HOPS && T >= 1 && E >= 0, "hops %d, types %d, edge types %d", H, T, E);
    for (int t = 0; t < T; t++) {
        const fs_hetero_nodes_t *x = &b->types[t];
        FUZZ_CHECK(x->name && x->num_nodes >= 0, "node type %d", t);
        sink += strlen(x->name);
        read_bytes(img, n, x->nodes, (size_t)x->num_nodes * 8, "nodes");
        if (x->batch) read_bytes(img, n, x->batch, (size_t)x->num_nodes * 8, "batch");
        if (x->time) read_bytes(img, n, x->time, (size_t)x->num_nodes * 8, "time");
        for (int h = 0; h <= H; h++)
            FUZZ_CHECK(x->count_after[h] >= (h ? x->count_after[h - 1] : 0) && x->count_after[h] <= x->num_nodes,
                       "type %d count_after[%d]", t, h);
        for (size_t k = 0; k < b->num_node_tables; k++) check_rows(img, n, &x->tables[k], x->num_nodes, "node table");
    }
    for (int e = 0; e < E; e++) {
        const fs_hetero_etype_t *et = &b->etypes[e];
        FUZZ_CHECK(et->src_type >= 0 && et->src_type < T && et->dst_type >= 0 && et->dst_type < T, "edge type %d", e);
        sink += strlen(et->src) + strlen(et->rel) + strlen(et->dst);
    }
    for (int i = 0; i < H * E; i++) {
        const fs_block_t *k = &b->blocks[i];
        const fs_hetero_etype_t *et = &b->etypes[i % E];
        int64_t nsrc = b->types[et->src_type].num_nodes, ndst = b->types[et->dst_type].num_nodes;
        FUZZ_CHECK(k->num_dst >= 0 && k->num_dst <= ndst && k->num_src >= 0 && k->num_src <= nsrc && k->num_edges >= 0,
                   "block %d: %lld dst, %lld src, %lld edges", i, (long long)k->num_dst, (long long)k->num_src,
                   (long long)k->num_edges);
        read_bytes(img, n, k->dst_offsets, (size_t)(k->num_dst + 1) * 8, "dst_offsets");
        FUZZ_CHECK(k->dst_offsets[0] == 0 && k->dst_offsets[k->num_dst] == k->num_edges, "block %d offsets", i);
        for (int64_t d = 0; d < k->num_dst; d++)
            FUZZ_CHECK(k->dst_offsets[d + 1] >= k->dst_offsets[d], "block %d offsets fall at %lld", i, (long long)d);
        ids_below(img, n, k->edge_dst, k->num_edges, ndst, "edge_dst");
        ids_below(img, n, k->edge_src, k->num_edges, k->num_src, "edge_src");
        if (k->edge_ids) read_bytes(img, n, k->edge_ids, (size_t)k->num_edges * 8, "edge_ids");
        for (size_t j = 0; j < b->num_edge_tables; j++)
            check_rows(img, n, &b->edge_tables[(size_t)i * b->num_edge_tables + j], k->num_edges, "edge table");
    }
    for (int g = 0; g < b->num_groups; g++) {
        FUZZ_CHECK(b->group_type[g] >= 0 && b->group_type[g] < T && b->group_count[g] >= 0, "group %d", g);
        ids_below(img, n, b->seed_local[g], b->group_count[g], b->types[b->group_type[g]].num_nodes, "seed_local");
    }
    if (b->num_labels || b->num_pos) {
        FUZZ_CHECK(b->link_src_type >= 0 && b->link_src_type < T && b->link_dst_type >= 0 && b->link_dst_type < T,
                   "link endpoint types %d, %d", b->link_src_type, b->link_dst_type);
        int64_t ns = b->types[b->link_src_type].num_nodes, nd = b->types[b->link_dst_type].num_nodes;
        ids_below(img, n, b->label_src, b->num_labels, ns, "label_src");
        ids_below(img, n, b->label_dst, b->num_labels, nd, "label_dst");
        if (b->num_labels) read_bytes(img, n, b->label, (size_t)b->num_labels * 8, "label");
        if (b->label_time) read_bytes(img, n, b->label_time, (size_t)b->num_labels * 8, "label_time");
        ids_below(img, n, b->src_index, b->num_pos, ns, "src_index");
        ids_below(img, n, b->dst_pos_index, b->num_pos, nd, "dst_pos_index");
        ids_below(img, n, b->dst_neg_index, b->num_pos * b->num_neg_per_src, nd, "dst_neg_index");
    }
    fs_hetero_index_free(&ix);
    free(img);
}

/* ---- requests --------------------------------------------------------------------- */

typedef struct {
    int link;
    featstore_v1_HeteroSampleRequest h;
    featstore_v1_LinkSampleRequest l;
    fs_wire_hetero_in_t in;
} taken_t;

/* Decodes and takes as the server does; FS_OK or a refusal with its reason. */
static fs_status_t take(int link, const uint8_t *p, size_t n, taken_t *t, fs_error_t *err)
{
    t->link = link;
    if (link) fs_wire_link_prepare(&t->l, &t->in);
    else fs_wire_hetero_prepare(&t->h, &t->in);
    fs_status_t st = link ? fs_pb_decode_buffer(p, n, featstore_v1_LinkSampleRequest_fields, &t->l, "request", err)
                          : fs_pb_decode_buffer(p, n, featstore_v1_HeteroSampleRequest_fields, &t->h, "request", err);
    if (st == FS_OK) st = link ? fs_wire_link_take(&t->l, &t->in, err) : fs_wire_hetero_take(&t->h, &t->in, err);
    return st;
}

static void read_i64s(const int64_t *a, int64_t n)
{
    FUZZ_CHECK(n >= 0 && (n == 0 || (a && (uintptr_t)a % 8 == 0)), "%lld values at %p", (long long)n, (const void *)a);
    for (int64_t i = 0; i < n; i++) sink += (uint64_t)a[i];
}

static void check_taken(const taken_t *t)
{
    const fs_hetero_req_t *r = &t->in.req;
    FUZZ_CHECK(r->struct_size == sizeof *r && r->num_hops >= 1 && r->num_hops <= FS_MAX_HOPS, "hops %d", r->num_hops);
    for (size_t i = 0; i < r->num_fanouts; i++)
        sink += strlen(r->fanouts[i].src) + strlen(r->fanouts[i].rel) + strlen(r->fanouts[i].dst);
    FUZZ_CHECK(r->num_node_tables <= FS_WIRE_MAX_TABLES && r->num_edge_tables <= FS_WIRE_MAX_TABLES, "tables");
    for (size_t k = 0; k < r->num_node_tables; k++) sink += strlen(r->node_tables[k]);
    for (size_t k = 0; k < r->num_edge_tables; k++) sink += strlen(r->edge_tables[k]);
    if (t->link) {
        const fs_link_req_t *l = &t->in.link;
        read_i64s(l->src_ids, l->count), read_i64s(l->dst_ids, l->count);
        if (l->label) read_i64s(l->label, l->count);
        if (l->time) read_i64s(l->time, l->count);
        sink += strlen(l->src) + strlen(l->rel) + strlen(l->dst);
        return;
    }
    FUZZ_CHECK(t->in.num_groups <= FS_WIRE_MAX_GROUPS, "%zu groups", t->in.num_groups);
    for (size_t i = 0; i < t->in.num_groups; i++) {
        const fs_hetero_seeds_t *g = &t->in.groups[i];
        read_i64s(g->ids, g->count);
        if (g->time) read_i64s(g->time, g->count);
        sink += strlen(g->type);
    }
}

static void same_i64s(const int64_t *a, const int64_t *b, int64_t n, const char *what)
{
    FUZZ_CHECK(n == 0 || memcmp(a, b, (size_t)n * 8) == 0, "%s differs after a round trip", what);
}

/* The request the server took, as the client would send it again. */
static void check_fixed_point(const taken_t *t)
{
    const fs_hetero_req_t *r = &t->in.req;
    fs_wire_hetero_out_t out;
    featstore_v1_HeteroSampleRequest h;
    featstore_v1_LinkSampleRequest l;
    fs_error_t err = {0};
    fs_status_t st = t->link ? fs_wire_link_request(&t->in.link, r, &out, &l, &err)
                             : fs_wire_hetero_request(t->in.groups, t->in.num_groups, r, &out, &h, &err);
    FUZZ_CHECK(st == FS_OK, "a taken request does not encode: %s", err.msg);
    void *buf;
    size_t len;
    st = t->link ? fs_pb_encode_alloc(featstore_v1_LinkSampleRequest_fields, &l, "request", &buf, &len, &err)
                 : fs_pb_encode_alloc(featstore_v1_HeteroSampleRequest_fields, &h, "request", &buf, &len, &err);
    FUZZ_CHECK(st == FS_OK, "cannot encode: %s", err.msg);
    taken_t *u = calloc(1, sizeof *u);
    if (!u) abort();
    st = take(t->link, buf, len, u, &err);
    FUZZ_CHECK(st == FS_OK, "a re-encoded request is refused: %s", err.msg);
    const fs_hetero_req_t *s = &u->in.req;
    FUZZ_CHECK(s->num_hops == r->num_hops && s->num_fanouts == r->num_fanouts && s->seed == r->seed &&
               s->want_edge_ids == r->want_edge_ids && s->frontier == r->frontier && s->disjoint == r->disjoint &&
               s->temporal == r->temporal && s->strict == r->strict && s->window == r->window &&
               s->out_dtype == r->out_dtype && s->num_node_tables == r->num_node_tables &&
               s->num_edge_tables == r->num_edge_tables, "the sampling fields differ after a round trip");
    for (int hop = 0; hop < r->num_hops; hop++) FUZZ_CHECK(s->mode[hop] == r->mode[hop], "mode of hop %d", hop);
    for (size_t i = 0; i < r->num_fanouts; i++) {
        const fs_hetero_fanout_t *a = &r->fanouts[i], *b = &s->fanouts[i];
        FUZZ_CHECK(!strcmp(a->src, b->src) && !strcmp(a->rel, b->rel) && !strcmp(a->dst, b->dst) &&
                   !memcmp(a->fanout, b->fanout, (size_t)r->num_hops * sizeof(int)), "fanout %zu", i);
    }
    for (size_t k = 0; k < r->num_node_tables; k++) FUZZ_CHECK(!strcmp(r->node_tables[k], s->node_tables[k]), "table");
    for (size_t k = 0; k < r->num_edge_tables; k++) FUZZ_CHECK(!strcmp(r->edge_tables[k], s->edge_tables[k]), "table");
    int timed = r->temporal != FS_TEMPORAL_OFF;
    if (t->link) {
        const fs_link_req_t *a = &t->in.link, *b = &u->in.link;
        FUZZ_CHECK(!strcmp(a->src, b->src) && !strcmp(a->rel, b->rel) && !strcmp(a->dst, b->dst) &&
                   a->count == b->count && a->neg == b->neg && a->neg_weighted == b->neg_weighted &&
                   a->strict == b->strict && a->keep_seed_edges == b->keep_seed_edges &&
                   (a->amount == b->amount || (a->amount != a->amount && b->amount != b->amount)) &&
                   !a->label == !b->label && (timed ? !a->time == !b->time : !b->time), "link fields");
        same_i64s(a->src_ids, b->src_ids, a->count, "src_ids");
        same_i64s(a->dst_ids, b->dst_ids, a->count, "dst_ids");
        if (a->label) same_i64s(a->label, b->label, a->count, "label");
        if (timed && a->time) same_i64s(a->time, b->time, a->count, "time");
    } else {
        FUZZ_CHECK(u->in.num_groups == t->in.num_groups, "groups");
        for (size_t i = 0; i < t->in.num_groups; i++) {
            const fs_hetero_seeds_t *a = &t->in.groups[i], *b = &u->in.groups[i];
            FUZZ_CHECK(!strcmp(a->type, b->type) && a->count == b->count && (timed ? !a->time == !b->time : !b->time),
                       "group %zu", i);
            same_i64s(a->ids, b->ids, a->count, "seed ids");
            if (timed && a->time) same_i64s(a->time, b->time, a->count, "seed times");
        }
    }
    fs_wire_hetero_in_free(&u->in);
    free(u);
    free(buf);
}

static void check_request(int link, const uint8_t *p, size_t n)
{
    uint8_t *copy = malloc(n ? n : 1); /* an exact buffer: reads past it are caught */
    if (!copy) abort();
    if (n) memcpy(copy, p, n);
    taken_t *t = calloc(1, sizeof *t);
    if (!t) abort();
    fs_error_t err = {0};
    fs_status_t st = take(link, copy, n, t, &err);
    if (st != FS_OK) {
        FUZZ_CHECK_REFUSAL(st, err);
    } else {
        check_taken(t);
        check_fixed_point(t);
    }
    fs_wire_hetero_in_free(&t->in);
    free(t);
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_bytes_t in = {data, size};
    switch (fuzz_take_u8(&in) % 3) {
    case 0: check_image(in.p, in.n); break;
    case 1: check_request(0, in.p, in.n); break;
    default: check_request(1, in.p, in.n); break;
    }
    return 0;
}
