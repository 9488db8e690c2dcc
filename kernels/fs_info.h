/* fs_info.h — building an fs_info_t (featstore/types.h), the facts a server
 * reports about itself: the server's engine and metrics fill one, the
 * transports encode it (proto/fs_pb.h) and decode it on the client's side,
 * and the caller frees it with fs_info_free.
 *
 * Every string and array of an fs_info_t is its own heap block, owned by
 * the info. The adders return a zeroed new element (or NULL when out of
 * memory); arrays grow by doubling.
 *
 * Thread-safety: an info is built by one thread, then only read. */
#ifndef FS_INFO_H
#define FS_INFO_H

#include "featstore/types.h"
#include "fs_codec.h"

fs_info_t *fs_info_new(void);

/* *field = a copy of text (NULL stays NULL). 0, or -1 when out of memory. */
int fs_info_set_text(const char **field, const char *text);

fs_table_info_t *fs_info_add_table(fs_info_t *info);
const char **fs_info_add_split(fs_info_t *info);   /* set it with fs_info_set_text */
fs_tier_info_t *fs_info_add_tier(fs_info_t *info);
fs_reader_info_t *fs_info_add_reader(fs_info_t *info);

/* The graph's types (since 1.3): a node type's tables and split names, an
 * edge type's tables, and the link splits. */
fs_node_type_info_t *fs_info_add_node_type(fs_info_t *info);
fs_table_info_t *fs_info_add_node_type_table(fs_node_type_info_t *t);
const char **fs_info_add_node_type_split(fs_node_type_info_t *t);
fs_edge_type_info_t *fs_info_add_edge_type(fs_info_t *info);
fs_table_info_t *fs_info_add_edge_type_table(fs_edge_type_info_t *e);
fs_link_split_info_t *fs_info_add_link_split(fs_info_t *info);
const char **fs_info_add_row_table(fs_info_t *info);
fs_row_split_info_t *fs_info_add_row_split(fs_info_t *info);
fs_compressed_info_t *fs_info_add_compressed(fs_info_t *info);
/* Describes a table in t as a gather serves it by default (a compressed
 * one as float32) and, when `listed` and compressed, adds its stored form
 * to info->compressed. t may be NULL (an adder out of memory): -1, as when
 * out of memory here; else 0. */
int fs_info_set_table(fs_info_t *info, fs_table_info_t *t, const char *name, fs_dtype_t stored_dtype, int64_t rows,
                      int64_t stored_dim, fs_codec_t codec, int listed);
/* The compressed entry of table `name`, or NULL. */
const fs_compressed_info_t *fs_info_find_compressed(const fs_info_t *info, const char *name);

#endif
