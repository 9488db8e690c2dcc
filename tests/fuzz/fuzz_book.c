/* fuzz_book.c — libFuzzer harness for what a cluster's trainer reads from
 * a shard (cluster/fs_cluster.h): the partitioning's book (partition.json),
 * its int64 .npy files (node maps, hot lists, splits) and its degree
 * arrays (read at the first degree-weighted negatives).
 *
 * Byte 0 % 3 picks the book (0), parsed against a map of partitioning
 * f2b9e9bde9259f7e in 4 parts, an .npy file (1), or a degree array (2:
 * byte 1 the node count, bytes 2-3 the edge count, little-endian, then
 * the file); the rest is the bytes. Beyond "no crash": a refusal has a
 * status and a message; an accepted book has, per node type, ranges
 * ascending from 0 to its count, tables with a known dtype, a positive dim
 * and row_bytes = dim x the dtype's size, and edge types whose source and
 * destination are its node types, their degree files named in full; an
 * accepted .npy's values lie inside the bytes given; an accepted degree
 * array has one value per node, none negative, summing to the edges. */
#include "fs_cluster.h"
#include "fuzz_common.h"

static void check_book(const fs_cluster_t *c)
{
    FUZZ_CHECK(c->num_types >= 1 && c->parts == 4, "%d types, %d parts", c->num_types, c->parts);
    for (int t = 0; t < c->num_types; t++) {
        const fs_cluster_type_t *ty = &c->types[t];
        FUZZ_CHECK(ty->first[0] == 0 && ty->first[c->parts] == ty->count, "type %d's ranges' ends", t);
        for (int p = 0; p < c->parts; p++) FUZZ_CHECK(ty->first[p] <= ty->first[p + 1], "type %d part %d", t, p);
        for (int i = 0; i < ty->num_tables; i++) {
            const fs_cluster_table_t *tb = &ty->tables[i];
            FUZZ_CHECK(tb->dim >= 1 && fs_dtype_size(tb->dtype) > 0 &&
                       tb->row_bytes == (size_t)tb->dim * fs_dtype_size(tb->dtype), "type %d table %d", t, i);
        }
    }
    for (int e = 0; e < c->num_etypes; e++) {
        const fs_cluster_etype_t *x = &c->etypes[e];
        FUZZ_CHECK(x->src_type >= 0 && x->src_type < c->num_types && x->dst_type >= 0 && x->dst_type < c->num_types &&
                   x->num_edges >= 0, "edge type %d", e);
        FUZZ_CHECK(memchr(x->degree_file[0], 0, sizeof x->degree_file[0]) &&
                   memchr(x->degree_file[1], 0, sizeof x->degree_file[1]) && !x->degree[0] && !x->degree[1] &&
                   !x->degree_file[0][0] == !x->degree_file[1][0], "edge type %d's degree files", e);
    }
}

/* A degree array of byte 1 nodes and bytes 2-3 edges: refused, or whole. */
static void check_degrees(const uint8_t *data, size_t size)
{
    if (size < 4) return;
    int64_t count = data[1], edges = data[2] | data[3] << 8;
    size_t len = size - 4;
    char *copy = malloc(len + 1); /* 8-aligned, as a received file is */
    if (!copy) return;
    memcpy(copy, data + 4, len);
    const int64_t *vals;
    fs_error_t err = {0};
    fs_status_t st = fs_cluster_degree_parse("fuzz.npy", copy, (int64_t)len, count, edges, &vals, &err);
    if (st != FS_OK) {
        FUZZ_CHECK_REFUSAL(st, err);
    } else {
        int64_t sum = 0;
        FUZZ_CHECK((const char *)vals >= copy && (const char *)(vals + count) <= copy + len, "values outside");
        for (int64_t v = 0; v < count; v++) {
            FUZZ_CHECK(vals[v] >= 0 && vals[v] <= edges, "node %lld's degree %lld", (long long)v, (long long)vals[v]);
            sum += vals[v];
        }
        FUZZ_CHECK(sum == edges, "degrees sum to %lld, not %lld", (long long)sum, (long long)edges);
    }
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    if (data[0] % 3 == 2) {
        check_degrees(data, size);
        return 0;
    }
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    fs_error_t err = {0};
    if (data[0] % 3 == 0) {
        fs_shard_map_t map = {.name = "fuzz", .partitioning = "f2b9e9bde9259f7e", .parts = 4};
        fs_cluster_t *c;
        fs_status_t st = fs_cluster_book_parse(text, len, &map, &c, &err);
        if (st != FS_OK) {
            FUZZ_CHECK_REFUSAL(st, err);
            return 0;
        }
        check_book(c);
        fs_cluster_unref(c);
        return 0;
    }
    char *copy = malloc(len + 1); /* 8-aligned, as a received file is */
    if (!copy) return 0;
    memcpy(copy, text, len);
    const int64_t *vals;
    int64_t n;
    fs_status_t st = fs_cluster_npy_i64("fuzz.npy", copy, (int64_t)len, &vals, &n, &err);
    if (st != FS_OK) FUZZ_CHECK_REFUSAL(st, err);
    else FUZZ_CHECK(n >= 0 && (const char *)vals >= copy && (const char *)(vals + n) <= copy + len, "%lld values",
                    (long long)n);
    free(copy);
    return 0;
}
