/* fs_pb.h — nanopb helpers that need no gRPC, shared by both transports and
 * both ends: lists of any length as callback fields, and the conversion
 * between featstore.v1.InfoResponse and the plain C fs_info_t the engine
 * produces and the client returns.
 *
 * Why callbacks for lists: a static `repeated` field has a fixed count in
 * nanopb, and anything past it would be dropped or refused; a callback
 * encodes and decodes one element at a time, so a list has the length of
 * the data (docs/api.md: no silent caps).
 *
 * Ownership: the prepared messages borrow what they encode until encoding
 * ends. Thread-safety: no shared state. */
#ifndef FS_PB_H
#define FS_PB_H

#include <pb_decode.h>
#include <pb_encode.h>

#include "featstore.pb.h"
#include "fs_types.h"

/* A repeated submessage field, for encoding (get set) or decoding (put
 * set): nanopb keeps one callback per field. Encoding: `count` elements, element i
 * filled by get() into a zeroed struct of the element type. Decoding: each
 * element, decoded, goes to put(). get/put return false to fail the
 * message. */
typedef struct {
    void *items;
    size_t count, cap;
} fs_pb_array_t;

typedef struct fs_pb_list {
    const pb_msgdesc_t *type;
    size_t size;             /* sizeof the element's struct */
    size_t count;
    bool (*get)(void *ctx, size_t i, void *elem);
    bool (*put)(void *ctx, const void *elem);
    void *ctx;
    const void *items;       /* fs_pb_list_from_array's */
    fs_pb_array_t *into;     /* fs_pb_list_into_array's */
    /* Decoding, optional: called on the zeroed element before it is
     * decoded, to point its own callback fields (lists inside a list
     * element) somewhere. get does the same when encoding. */
    bool (*start)(void *ctx, void *elem);
} fs_pb_list_t;

void fs_pb_set_list(pb_callback_t *cb, fs_pb_list_t *list);

/* The common case: a list encoded from, or decoded into, an array of the
 * element type's own struct. A decoded array grows by doubling; the caller
 * frees array->items. */
void fs_pb_list_from_array(fs_pb_list_t *list, const pb_msgdesc_t *type, size_t size, const void *items,
                           size_t count);
void fs_pb_list_into_array(fs_pb_list_t *list, const pb_msgdesc_t *type, size_t size, fs_pb_array_t *array);

/* The same with the element's type name: FS_PB_FROM_ARRAY(&l, featstore_local_Tier, tiers, n). */
#define FS_PB_FROM_ARRAY(list, T, items, count) fs_pb_list_from_array(list, T##_fields, sizeof(T), items, count)
#define FS_PB_INTO_ARRAY(list, T, array) fs_pb_list_into_array(list, T##_fields, sizeof(T), array)

/* A repeated string field, the same way (put gets the bytes, not
 * NUL-terminated). */
typedef struct {
    size_t count;
    const char *(*get)(void *ctx, size_t i);
    bool (*put)(void *ctx, const char *s, size_t len);
    void *ctx;
} fs_pb_strings_t;

void fs_pb_set_strings(pb_callback_t *cb, fs_pb_strings_t *strings);

/* Encodes msg into a malloc'ed buffer (*out, *len); FS_ERR_INTERNAL or
 * FS_ERR_NOMEM naming `what`. */
fs_status_t fs_pb_encode_alloc(const pb_msgdesc_t *type, const void *msg, const char *what, void **out, size_t *len,
                               fs_error_t *err);
/* Decodes buf into msg; FS_ERR_FORMAT naming `what` and nanopb's reason. */
fs_status_t fs_pb_decode_buffer(const void *buf, size_t len, const pb_msgdesc_t *type, void *msg, const char *what,
                                fs_error_t *err);

/* ---- Info ----------------------------------------------------------------------- */

/* Encoding: msg describes `info` (borrowed) once prepared. */
typedef struct {
    const fs_info_t *info;
    fs_pb_list_t tables, tiers, readers;
    fs_pb_strings_t splits, row_tables;
    fs_pb_list_t node_types, edge_types, link_splits, row_splits;
    fs_pb_list_t type_tables;        /* the node or edge type being encoded: its tables ... */
    fs_pb_strings_t type_splits;     /* ... and a node type's split names */
} fs_pb_info_out_t;

void fs_pb_info_prepare_encode(const fs_info_t *info, featstore_v1_InfoResponse *msg, fs_pb_info_out_t *out);

/* Decoding: prepare msg (zeroed here) before pb_decode, then take the info
 * (the caller owns it: fs_info_free); on a failed decode release it with
 * fs_pb_info_abandon (in->oom says the failure was memory, not the bytes).
 * Taking checks what the bytes claim about the graph's types (names
 * present, counts not negative, dtypes known, every edge type index in
 * range, endpoints among the node types): FS_ERR_FORMAT naming the field,
 * and the info is abandoned. */
typedef struct {
    fs_info_t *info;
    fs_pb_list_t tables, tiers, readers;
    fs_pb_strings_t splits, row_tables;
    fs_pb_list_t node_types, edge_types, link_splits, row_splits;
    fs_pb_list_t node_type_tables, edge_type_tables;  /* into the last node / edge type */
    fs_pb_strings_t node_type_splits;
    int oom;
} fs_pb_info_in_t;

fs_status_t fs_pb_info_prepare_decode(featstore_v1_InfoResponse *msg, fs_pb_info_in_t *in, fs_error_t *err);
fs_status_t fs_pb_info_take(const featstore_v1_InfoResponse *msg, fs_pb_info_in_t *in, fs_info_t **out,
                            fs_error_t *err);
void fs_pb_info_abandon(fs_pb_info_in_t *in);

#endif
