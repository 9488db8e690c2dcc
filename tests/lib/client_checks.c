/* client_checks.c — see client_checks.h. */
#include "client_checks.h"

#include <criterion/criterion.h>
#include <string.h>

#include "fs_hetero.h"

static void check_split(fs_client_t *c, const fs_dataset_t *ds, const fs_idset_t *want)
{
    fs_ids_t *ids = NULL;
    cr_assert_eq(fs_split(c, want->name, &ids), FS_OK, "split %s: %s", want->name, fs_client_errstr(c));
    cr_assert_eq(ids->n, want->count, "split %s", want->name);
    cr_assert(want->count == 0 || memcmp(ids->ids, want->ids, (size_t)want->count * 8) == 0, "split %s differs",
              want->name);
    /* the split's labels, gathered like features */
    fs_batch_t *b = NULL;
    cr_assert_eq(fs_gather(c, ids->ids, ids->n, FS_LABELS_TABLE, FS_DTYPE_INVALID, &b), FS_OK, "%s",
                 fs_client_errstr(c));
    cr_assert_eq(b->dtype, FS_DTYPE_I64);
    cr_assert_eq(b->dim, 1);
    cr_assert_eq(b->rows, ids->n);
    const int64_t *labels = b->features;
    for (int64_t i = 0; i < ids->n; i++)
        cr_assert_eq(labels[i], ds->labels[ids->ids[i]], "label of node %lld", (long long)ids->ids[i]);
    const void *base;
    size_t len;
    cr_assert_eq(fs_batch_region(b, &base, &len), FS_OK);
    const char *lo = base, *p = b->features;
    cr_assert(p >= lo && p + (size_t)b->rows * 8 <= lo + len, "rows outside the batch's region");
    fs_batch_free(b);
    fs_ids_free(ids);
}

void tc_labels_and_splits(fs_client_t *c, const fs_dataset_t *ds)
{
    cr_assert_not_null(ds->labels, "the fixture must have labels");
    cr_assert_gt(ds->num_splits, 0, "the fixture must have splits");
    for (int i = 0; i < ds->num_splits; i++) check_split(c, ds, &ds->splits[i]);

    fs_ids_t *ids = (fs_ids_t *)1;
    fs_status_t st = fs_split(c, "no-such-split", &ids);
    cr_assert_eq(st, FS_ERR_NOT_FOUND, "%s: %s", fs_strerror(st), fs_client_errstr(c));
    cr_assert_null(ids);
    cr_assert_not_null(strstr(fs_client_errstr(c), "no-such-split"), "%s", fs_client_errstr(c));
    cr_assert_eq(fs_split(c, "", &ids), FS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fs_split(c, NULL, &ids), FS_ERR_INVALID_ARGUMENT);

    fs_info_t *info;
    cr_assert_eq(fs_info(c, &info), FS_OK, "the connection survives: %s", fs_client_errstr(c));
    int found = 0;
    for (size_t i = 0; i < info->num_tables; i++)
        if (strcmp(info->tables[i].name, FS_LABELS_TABLE) == 0)
            found = info->tables[i].dtype == FS_DTYPE_I64 && info->tables[i].dim == 1;
    cr_assert(found, "Info lists the labels table as int64 [N x 1]");
    fs_info_free(info);

    int64_t bad = ds->num_nodes;
    fs_batch_t *b = NULL;
    cr_assert_eq(fs_gather(c, &bad, 1, FS_LABELS_TABLE, FS_DTYPE_INVALID, &b), FS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fs_gather(c, &bad, 1, FS_LABELS_TABLE, FS_DTYPE_F32, &b), FS_ERR_INVALID_ARGUMENT,
                 "labels are not converted to float");
}

/* ---- typed batches ---------------------------------------------------------------- */

size_t tc_hetero_image(const fs_hetero_batch_t *b, const void **base)
{
    size_t len;
    cr_assert_eq(fs_hetero_batch_region(b, base, &len), FS_OK);
    uint64_t n = fs_hetero_image_bytes(*base, len);
    cr_assert(n >= FS_HETERO_HEADER_BYTES && n <= len, "image of %llu bytes in a region of %zu",
              (unsigned long long)n, len);
    return (size_t)n;
}

static void same_i64s(const int64_t *a, const int64_t *b, int64_t n, const char *what, long long at)
{
    cr_assert_eq(!a, !b, "%s %lld: present in one batch only", what, at);
    if (a && n > 0) cr_assert_eq(memcmp(a, b, (size_t)n * 8), 0, "%s %lld differs", what, at);
}

static void same_rows(const fs_rows_t *a, const fs_rows_t *b, const char *what, long long at)
{
    cr_assert_eq(a->rows, b->rows, "%s %lld", what, at);
    cr_assert_eq(a->dim, b->dim, "%s %lld", what, at);
    cr_assert_eq(!a->data, !b->data, "%s %lld: rows in one batch only", what, at);
    if (!a->data) return;
    cr_assert_eq(a->dtype, b->dtype, "%s %lld", what, at);
    size_t bytes = (size_t)a->rows * (size_t)a->dim * fs_dtype_size(a->dtype);
    cr_assert_eq(memcmp(a->data, b->data, bytes), 0, "%s %lld: rows differ", what, at);
}

void tc_same_hetero_batch(const fs_hetero_batch_t *a, const fs_hetero_batch_t *b)
{
    const void *ia, *ib;
    size_t na = tc_hetero_image(a, &ia), nb = tc_hetero_image(b, &ib);
    cr_assert_eq(na, nb, "images of %zu and %zu bytes", na, nb);
    cr_assert_eq(memcmp(ia, ib, na), 0, "the images differ");

    cr_assert_eq(a->num_hops, b->num_hops);
    cr_assert_eq(a->num_node_types, b->num_node_types);
    cr_assert_eq(a->num_edge_types, b->num_edge_types);
    cr_assert_eq(a->num_node_tables, b->num_node_tables);
    cr_assert_eq(a->num_edge_tables, b->num_edge_tables);
    for (int t = 0; t < a->num_node_types; t++) {
        const fs_hetero_nodes_t *x = &a->types[t], *y = &b->types[t];
        cr_assert_str_eq(x->name, y->name);
        cr_assert_eq(x->num_nodes, y->num_nodes, "type %s", x->name);
        same_i64s(x->nodes, y->nodes, x->num_nodes, "nodes of type", t);
        same_i64s(x->batch, y->batch, x->num_nodes, "batch of type", t);
        same_i64s(x->time, y->time, x->num_nodes, "time of type", t);
        same_i64s(x->count_after, y->count_after, a->num_hops + 1, "count_after of type", t);
        for (size_t k = 0; k < a->num_node_tables; k++) same_rows(&x->tables[k], &y->tables[k], "node table of type", t);
    }
    for (int e = 0; e < a->num_edge_types; e++) {
        cr_assert_str_eq(a->etypes[e].src, b->etypes[e].src);
        cr_assert_str_eq(a->etypes[e].rel, b->etypes[e].rel);
        cr_assert_str_eq(a->etypes[e].dst, b->etypes[e].dst);
        cr_assert_eq(a->etypes[e].src_type, b->etypes[e].src_type);
        cr_assert_eq(a->etypes[e].dst_type, b->etypes[e].dst_type);
    }
    for (int i = 0; i < a->num_hops * a->num_edge_types; i++) {
        const fs_block_t *x = &a->blocks[i], *y = &b->blocks[i];
        cr_assert_eq(x->num_dst, y->num_dst, "block %d", i);
        cr_assert_eq(x->num_src, y->num_src, "block %d", i);
        cr_assert_eq(x->num_edges, y->num_edges, "block %d", i);
        same_i64s(x->dst_offsets, y->dst_offsets, x->num_dst + 1, "dst_offsets of block", i);
        same_i64s(x->edge_dst, y->edge_dst, x->num_edges, "edge_dst of block", i);
        same_i64s(x->edge_src, y->edge_src, x->num_edges, "edge_src of block", i);
        same_i64s(x->edge_ids, y->edge_ids, x->num_edges, "edge_ids of block", i);
        for (size_t k = 0; k < a->num_edge_tables; k++)
            same_rows(&a->edge_tables[i * a->num_edge_tables + k], &b->edge_tables[i * b->num_edge_tables + k],
                      "edge table of block", i);
    }
    cr_assert_eq(a->num_groups, b->num_groups);
    for (int g = 0; g < a->num_groups; g++) {
        cr_assert_eq(a->group_type[g], b->group_type[g]);
        cr_assert_eq(a->group_count[g], b->group_count[g]);
        same_i64s(a->seed_local[g], b->seed_local[g], a->group_count[g], "seed_local of group", g);
    }
    cr_assert_eq(a->link_src_type, b->link_src_type);
    cr_assert_eq(a->link_dst_type, b->link_dst_type);
    cr_assert_eq(a->num_labels, b->num_labels);
    same_i64s(a->label_src, b->label_src, a->num_labels, "label_src", 0);
    same_i64s(a->label_dst, b->label_dst, a->num_labels, "label_dst", 0);
    same_i64s(a->label, b->label, a->num_labels, "label", 0);
    same_i64s(a->label_time, b->label_time, a->num_labels, "label_time", 0);
    cr_assert_eq(a->num_pos, b->num_pos);
    cr_assert_eq(a->num_neg_per_src, b->num_neg_per_src);
    same_i64s(a->src_index, b->src_index, a->num_pos, "src_index", 0);
    same_i64s(a->dst_pos_index, b->dst_pos_index, a->num_pos, "dst_pos_index", 0);
    same_i64s(a->dst_neg_index, b->dst_neg_index, a->num_pos * a->num_neg_per_src, "dst_neg_index", 0);
}

