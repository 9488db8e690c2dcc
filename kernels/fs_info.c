/* fs_info.c — see fs_info.h. The public struct has no capacity fields, so
 * an array's capacity is implied by its count: the next power of two. */
#include "fs_info.h"

#include "fs_codec.h"

#include <stdlib.h>
#include <string.h>

fs_info_t *fs_info_new(void) { return calloc(1, sizeof(fs_info_t)); }

int fs_info_set_text(const char **field, const char *text)
{
    char *copy = NULL;
    if (text && !(copy = strdup(text))) return -1;
    free((char *)*field);
    *field = copy;
    return 0;
}

/* Room for element `count` of an array of `size`-byte elements: grows when
 * count is 0 or a power of two. Returns the zeroed element or NULL. */
static void *grow(const void *const *array, size_t *count, size_t size)
{
    size_t n = *count;
    char *a = (char *)*array;
    if (n == 0 || (n & (n - 1)) == 0) {
        size_t cap = n ? 2 * n : 1;
        a = realloc(a, cap * size);
        if (!a) return NULL;
        *(void **)array = a;
    }
    memset(a + n * size, 0, size);
    (*count)++;
    return a + n * size;
}

fs_table_info_t *fs_info_add_table(fs_info_t *info)
{
    return grow((const void *const *)&info->tables, &info->num_tables, sizeof *info->tables);
}

const char **fs_info_add_split(fs_info_t *info)
{
    return grow((const void *const *)&info->splits, &info->num_splits, sizeof *info->splits);
}

fs_tier_info_t *fs_info_add_tier(fs_info_t *info)
{
    return grow((const void *const *)&info->tiers, &info->num_tiers, sizeof *info->tiers);
}

fs_reader_info_t *fs_info_add_reader(fs_info_t *info)
{
    return grow((const void *const *)&info->readers, &info->num_readers, sizeof *info->readers);
}

fs_node_type_info_t *fs_info_add_node_type(fs_info_t *info)
{
    return grow((const void *const *)&info->node_types, &info->num_node_types, sizeof *info->node_types);
}

fs_table_info_t *fs_info_add_node_type_table(fs_node_type_info_t *t)
{
    return grow((const void *const *)&t->tables, &t->num_tables, sizeof *t->tables);
}

const char **fs_info_add_node_type_split(fs_node_type_info_t *t)
{
    return grow((const void *const *)&t->splits, &t->num_splits, sizeof *t->splits);
}

fs_edge_type_info_t *fs_info_add_edge_type(fs_info_t *info)
{
    return grow((const void *const *)&info->edge_types, &info->num_edge_types, sizeof *info->edge_types);
}

fs_table_info_t *fs_info_add_edge_type_table(fs_edge_type_info_t *e)
{
    return grow((const void *const *)&e->tables, &e->num_tables, sizeof *e->tables);
}

fs_link_split_info_t *fs_info_add_link_split(fs_info_t *info)
{
    return grow((const void *const *)&info->link_splits, &info->num_link_splits, sizeof *info->link_splits);
}

static void free_tables(const fs_table_info_t *tables, size_t n)
{
    for (size_t i = 0; i < n; i++) free((char *)tables[i].name);
    free((void *)tables);
}

static void free_node_type(const fs_node_type_info_t *t)
{
    free((char *)t->name);
    free_tables(t->tables, t->num_tables);
    for (size_t i = 0; i < t->num_splits; i++) free((char *)t->splits[i]);
    free((void *)t->splits);
}

static void free_edge_type(const fs_edge_type_info_t *e)
{
    free((char *)e->src);
    free((char *)e->rel);
    free((char *)e->dst);
    free_tables(e->tables, e->num_tables);
}

const char **fs_info_add_row_table(fs_info_t *info)
{
    return grow((const void *const *)&info->row_tables, &info->num_row_tables, sizeof *info->row_tables);
}

fs_row_split_info_t *fs_info_add_row_split(fs_info_t *info)
{
    return grow((const void *const *)&info->row_splits, &info->num_row_splits, sizeof *info->row_splits);
}

fs_compressed_info_t *fs_info_add_compressed(fs_info_t *info)
{
    return grow((const void *const *)&info->compressed, &info->num_compressed, sizeof *info->compressed);
}

int fs_info_set_table(fs_info_t *info, fs_table_info_t *t, const char *name, fs_dtype_t stored_dtype, int64_t rows,
                      int64_t stored_dim, fs_codec_t codec, int listed)
{
    if (!t || fs_info_set_text(&t->name, name)) return -1;
    t->rows = rows;
    if (fs_codec_served(codec, stored_dtype, stored_dim, FS_DTYPE_INVALID, name, &t->dtype, &t->dim, NULL))
        t->dtype = stored_dtype, t->dim = stored_dim; /* a codec the caller's table cannot carry: as stored */
    if (!listed || codec == FS_CODEC_NONE) return 0;
    fs_compressed_info_t *c = fs_info_add_compressed(info);
    if (!c || fs_info_set_text(&c->table, name) || fs_info_set_text(&c->codec, fs_codec_name(codec)))
        return -1;
    c->stored_dtype = stored_dtype, c->stored_dim = stored_dim;
    return 0;
}

const fs_compressed_info_t *fs_info_find_compressed(const fs_info_t *info, const char *name)
{
    for (size_t i = 0; i < info->num_compressed; i++)
        if (info->compressed[i].table && strcmp(info->compressed[i].table, name) == 0) return &info->compressed[i];
    return NULL;
}

void fs_info_free(fs_info_t *info)
{
    if (!info) return;
    for (size_t i = 0; i < info->num_compressed; i++) {
        free((char *)info->compressed[i].table);
        free((char *)info->compressed[i].codec);
    }
    free((void *)info->compressed);
    for (size_t i = 0; i < info->num_node_types; i++) free_node_type(&info->node_types[i]);
    for (size_t i = 0; i < info->num_edge_types; i++) free_edge_type(&info->edge_types[i]);
    for (size_t i = 0; i < info->num_link_splits; i++) free((char *)info->link_splits[i].name);
    for (size_t i = 0; i < info->num_row_splits; i++) free((char *)info->row_splits[i].name);
    for (size_t i = 0; i < info->num_row_tables; i++) free((char *)info->row_tables[i]);
    free((void *)info->row_tables);
    free((void *)info->node_types);
    free((void *)info->edge_types);
    free((void *)info->link_splits);
    free((void *)info->row_splits);
    for (size_t i = 0; i < info->num_tables; i++) free((char *)info->tables[i].name);
    for (size_t i = 0; i < info->num_splits; i++) free((char *)info->splits[i]);
    for (size_t i = 0; i < info->num_tiers; i++) free((char *)info->tiers[i].kind);
    free((void *)info->tables);
    free((void *)info->splits);
    free((void *)info->tiers);
    free((void *)info->readers);
    free((char *)info->server_version);
    free((char *)info->dataset);
    free(info);
}
