/* fs_wire.h — nanopb helpers shared by the gRPC server and the gRPC client:
 * raw arrays in and out of `bytes` fields, decoding straight from gRPC's
 * slices, messages into gRPC byte buffers (large payloads referenced, not
 * copied), the sampling request/result conversions, the status-code mapping
 * and the channel arguments both ends use.
 *
 * Why callbacks: Debian's nanopb caps static arrays at 65,535 bytes, so every
 * large array of featstore.proto is a callback field (featstore.options).
 * Encoding writes an array from memory with one pb_encode_string; decoding
 * reads it with one pb_read into its destination, or borrows it from the
 * input when it lies contiguous and aligned there.
 *
 * Ownership: fs_wire_bytes_t borrows what it encodes; fs_wire_buf_t owns what
 * it allocated (fs_wire_buf_free / fs_wire_buf_detach) and borrowed data is
 * valid while the decoded input lives. Byte buffers returned here belong to
 * the caller (grpc_byte_buffer_destroy). Thread-safety: no shared state.
 *
 * Sources: fs_wire.c (channel arguments, status codes, arrays, messages and
 * chunks, small files), fs_wire_sample.c (the sampling messages and the
 * Stream orders), fs_wire_typed.c (the typed requests) and fs_wire_picks.c
 * (ShardPicks answers). */
#ifndef FS_WIRE_H
#define FS_WIRE_H

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <pb_decode.h>
#include <pb_encode.h>

#include "featstore.pb.h"
#include "fs_epoch.h"
#include "fs_pb.h"
#include "fs_sample.h"
#include "fs_typed.h"
#include "fs_types.h"

/* The version-1 methods are sent with api_version 1 (so a client works
 * with servers before 1.3); the typed methods (HeteroSample, LinkSample)
 * with 2. A server speaks 1..FS_WIRE_API_VERSION_MAX (featstore.proto). */
#define FS_WIRE_API_VERSION 1
#define FS_WIRE_API_VERSION_TYPED 2
#define FS_WIRE_API_VERSION_MAX 2
/* Feature rows travel in messages of about this many bytes (whole rows). */
#define FS_WIRE_CHUNK_BYTES (1u << 20)

#define FS_WIRE_METHOD_INFO "/featstore.v1.FeatStore/Info"
#define FS_WIRE_METHOD_SAMPLE "/featstore.v1.FeatStore/Sample"
#define FS_WIRE_METHOD_GATHER "/featstore.v1.FeatStore/Gather"
#define FS_WIRE_METHOD_SAMPLE_GATHER "/featstore.v1.FeatStore/SampleGather"
#define FS_WIRE_METHOD_STATS "/featstore.v1.FeatStore/Stats"
#define FS_WIRE_METHOD_SPLIT "/featstore.v1.FeatStore/Split"
#define FS_WIRE_METHOD_HETERO_SAMPLE "/featstore.v1.FeatStore/HeteroSample"
#define FS_WIRE_METHOD_LINK_SAMPLE "/featstore.v1.FeatStore/LinkSample"
#define FS_WIRE_METHOD_STREAM "/featstore.v1.FeatStore/Stream"
#define FS_WIRE_METHOD_SHARD_PICKS "/featstore.v1.FeatStore/ShardPicks"
#define FS_WIRE_METHOD_SHARD_ROWS "/featstore.v1.FeatStore/ShardRows"
#define FS_WIRE_METHOD_SHARD_FILE "/featstore.v1.FeatStore/ShardFile"
#define FS_WIRE_METHOD_SHARD_EDGES "/featstore.v1.FeatStore/ShardEdges"
/* ShardFile answers at most this many bytes a call (the caller pages on). */
#define FS_WIRE_SHARD_FILE_CHUNK (4 << 20)

/* ---- channel arguments and status codes ------------------------------------ */

#define FS_WIRE_MAX_ARGS 8
/* Fills args (FS_WIRE_MAX_ARGS entries) with the settings both ends share:
 * message size limits (max_receive bytes, -1 = unlimited; sends unlimited)
 * and HTTP/2 window and read sizes tuned for streams of 1 MiB messages.
 * `server` adds SO_REUSEPORT off, so a port in use fails instead of being
 * silently shared. Returns the number of entries filled. */
size_t fs_wire_channel_args(grpc_arg *args, int max_receive, int server);

grpc_status_code fs_wire_grpc_status(fs_status_t st);
fs_status_t fs_wire_fs_status(grpc_status_code code);

/* Small files both gRPC ends read (certificates, keys, the token), whole,
 * NUL-terminated, into a string the caller frees with fs_wire_free_secret
 * (which wipes it first). At most 1 MiB; empty or unreadable files are
 * errors naming `what` and the path. fs_wire_read_pem also wants `marker`
 * in the text (gRPC parses the PEM itself later). */
fs_status_t fs_wire_read_file(const char *path, const char *what, char **out, fs_error_t *err);
fs_status_t fs_wire_read_pem(const char *path, const char *what, const char *marker, char **out, fs_error_t *err);
void fs_wire_free_secret(char *text);

/* ---- bytes fields: encoding from memory ------------------------------------- */

typedef struct {
    const void *data;
    size_t len;
} fs_wire_bytes_t;

/* Makes cb write b (borrowed until encoding ends) as its bytes field;
 * an empty array writes nothing (proto3's default). */
void fs_wire_set_bytes(pb_callback_t *cb, fs_wire_bytes_t *b, const void *data, size_t len);

/* ---- bytes fields: decoding ----------------------------------------------------- */

enum {
    FS_WIRE_FIXED = 1 << 0,  /* decode into mem (cap bytes, caller's); longer input fails */
    FS_WIRE_BORROW = 1 << 1, /* point into the input when it is contiguous and aligned */
};

typedef struct {
    const void *data;  /* the field's bytes: in mem, or inside the input when borrowed */
    size_t len;
    void *mem;         /* storage: the caller's (FS_WIRE_FIXED) or grown here */
    size_t cap;
    unsigned flags;
    size_t align;      /* alignment a borrowed pointer needs (e.g. 8 for int64); 0 = 1 */
    int seen;          /* the field was present */
} fs_wire_buf_t;

/* Makes cb decode its bytes field into b. Later occurrences replace earlier
 * ones, as protobuf specifies for a singular field. */
void fs_wire_set_buf(pb_callback_t *cb, fs_wire_buf_t *b);
/* What fs_wire_set_buf's callback does, for custom callbacks: reads the rest
 * of a field's stream into b. */
bool fs_wire_read_buf(pb_istream_t *stream, fs_wire_buf_t *b);
/* The bytes as a malloc'ed block the caller owns: b->data itself when it was
 * grown here (pointers into it stay valid), else a copy; NULL when empty or
 * out of memory (check b->len first). b is left empty. */
void *fs_wire_buf_detach(fs_wire_buf_t *b);
void fs_wire_buf_free(fs_wire_buf_t *b);

/* Reads len bytes of the stream zero-copy: a pointer into the input when
 * they lie contiguous there and at an `align`-multiple address, else NULL
 * (and nothing is consumed). Works on gRPC and plain-buffer streams. */
const void *fs_wire_borrow(pb_istream_t *stream, size_t len, size_t align);

/* An int64 array from a decoded field; its length must be a multiple of 8.
 * `what` names the field in the error. */
fs_status_t fs_wire_int64s(const fs_wire_buf_t *b, const char *what, const int64_t **out, int64_t *n,
                           fs_error_t *err);

/* ---- gRPC byte buffers ------------------------------------------------------------ */

/* A pb_istream_t reading a byte buffer by walking its slices in place. */
typedef struct {
    grpc_byte_buffer_reader reader;
    grpc_slice *slice;  /* current slice (owned by the buffer), NULL before the first */
    size_t off;
    int open;
} fs_wire_reader_t;

fs_status_t fs_wire_istream(fs_wire_reader_t *r, grpc_byte_buffer *bb, pb_istream_t *out, fs_error_t *err);
void fs_wire_reader_close(fs_wire_reader_t *r);

/* Decodes a whole message; FS_ERR_FORMAT naming `what` and nanopb's reason. */
fs_status_t fs_wire_decode(grpc_byte_buffer *bb, const pb_msgdesc_t *fields, void *msg, const char *what,
                           fs_error_t *err);

/* Encodes a message into one heap slice handed to gRPC without a copy. */
grpc_byte_buffer *fs_wire_encode(const pb_msgdesc_t *fields, const void *msg, fs_error_t *err);

/* msg encoded, followed by its bytes field data_tag holding the slice `data`
 * (referenced, not copied, as fs_wire_gather_chunk's): a large answer sent
 * from the memory it was made in. msg's own field data_tag must be empty
 * (protobuf takes fields in any order, so the last one may be any). */
grpc_byte_buffer *fs_wire_encode_data(const pb_msgdesc_t *fields, const void *msg, uint32_t data_tag, grpc_slice data,
                                     fs_error_t *err);

/* A GatherChunk whose `data` is the slice `data` (referenced, not copied:
 * the buffer takes its own reference, the caller still drops its own, and the
 * slice's free function runs once gRPC has sent it). With wrap, the chunk is the
 * `features` of a SampleGatherChunk that also carries `sample` (if not
 * NULL). hdr->data must not have an encode callback. */
grpc_byte_buffer *fs_wire_gather_chunk(const featstore_v1_GatherChunk *hdr, grpc_slice data, int wrap,
                                       const featstore_v1_SampleResponse *sample, fs_error_t *err);

/* ---- sampling requests and results ------------------------------------------------ */

/* A SampleRequest for (seeds, req), locality included; seed_bytes holds the
 * seeds' reference. */
void fs_wire_sample_request(const fs_sample_req_t *req, const int64_t *seeds, int64_t n, fs_wire_bytes_t *seed_bytes,
                            featstore_v1_SampleRequest *out);
/* The request's hops, modes, flags and locality (seeds are a callback
 * field, decoded separately). Checks what the message alone can tell:
 * counts and modes; the locality value is the limits' check
 * (fs_limits_check), as for every transport. */
fs_status_t fs_wire_sample_req_from_msg(const featstore_v1_SampleRequest *in, fs_sample_req_t *out, fs_error_t *err);

/* A block's arrays on the wire: dst_offsets, edge_dst, edge_src, edge_ids
 * (int64) and edge_weights (float32), in this order. */
#define FS_WIRE_BLOCK_ARRAYS 5

/* Encoding a result: the arrays stay in the sampler until encoding ends. */
typedef struct {
    fs_wire_bytes_t nodes, seed_local, arr[FS_MAX_HOPS][FS_WIRE_BLOCK_ARRAYS];
} fs_wire_sample_src_t;
void fs_wire_sample_response(const fs_sample_result_t *r, fs_wire_sample_src_t *src, featstore_v1_SampleResponse *out);

/* Decoding a result: prepare before pb_decode, then read it out; arrays are
 * malloc'ed (fs_wire_sample_dst_free, or take them with fs_wire_buf_detach). */
typedef struct {
    fs_wire_buf_t nodes, seed_local, arr[FS_MAX_HOPS][FS_WIRE_BLOCK_ARRAYS];
} fs_wire_sample_dst_t;
void fs_wire_sample_response_prepare(featstore_v1_SampleResponse *msg, fs_wire_sample_dst_t *dst);
/* Checks every array's length against the block counts and points out at
 * dst's arrays (dst keeps owning them). Absent edge ids or weights (an
 * empty field) leave the block's pointer NULL. */
fs_status_t fs_wire_sample_result(const featstore_v1_SampleResponse *msg, const fs_wire_sample_dst_t *dst,
                                  fs_sample_result_t *out, fs_error_t *err);
void fs_wire_sample_dst_free(fs_wire_sample_dst_t *dst);
/* Stream's samples leave Block.edge_dst out: edge e belongs to the dst d
 * with dst_offsets[d] <= e < dst_offsets[d + 1]. Fills each block's absent
 * edge_dst from its offsets (which must run from 0 up to num_edges, never
 * falling, with edge_src whole) before fs_wire_sample_result. */
fs_status_t fs_wire_sample_fill_edge_dst(const featstore_v1_SampleResponse *msg, fs_wire_sample_dst_t *dst,
                                         fs_error_t *err);

/* ---- epoch streams (Stream) ------------------------------------------------------------ */

/* StreamRequest.order: the name of an epoch order, and back ("" = random);
 * an unknown name is FS_ERR_INVALID_ARGUMENT naming it. */
const char *fs_wire_order_name(fs_epoch_order_t order);
fs_status_t fs_wire_order_from_name(const char *name, fs_epoch_order_t *out, fs_error_t *err);

/* ---- typed requests and batch images (api_version 2) -------------------------------- */

/* What one request may list: more is refused by name (a request's memory
 * on the server stays proportional to what a valid request needs). */
#define FS_WIRE_MAX_GROUPS 65536       /* seed groups */
#define FS_WIRE_MAX_FANOUTS 65536      /* edge types with fanouts */
#define FS_WIRE_MAX_TABLES 4096        /* node tables, and edge tables */

/* Encoding (the client): a HeteroSampleRequest from (groups, req), or a
 * LinkSampleRequest from (link, req); everything is borrowed until encoding
 * ends. Refuses what cannot be encoded (hops outside 1..FS_MAX_HOPS, a name
 * of 64 characters or more, a NULL array with a count) with
 * FS_ERR_INVALID_ARGUMENT; the rest is the server's to check, so both
 * transports refuse the same requests with the same words. Times are sent
 * only with a temporal request (ignored otherwise). */
typedef struct {
    const fs_hetero_req_t *req;
    const fs_hetero_seeds_t *groups;
    fs_pb_list_t fanouts, group_list;
    fs_pb_strings_t node_tables, edge_tables;
    fs_wire_bytes_t gids, gtime;   /* the seed group being encoded */
    fs_wire_bytes_t src_ids, dst_ids, label, time;
} fs_wire_hetero_out_t;

fs_status_t fs_wire_hetero_request(const fs_hetero_seeds_t *groups, size_t num_groups, const fs_hetero_req_t *req,
                                   fs_wire_hetero_out_t *out, featstore_v1_HeteroSampleRequest *msg, fs_error_t *err);
fs_status_t fs_wire_link_request(const fs_link_req_t *link, const fs_hetero_req_t *req, fs_wire_hetero_out_t *out,
                                 featstore_v1_LinkSampleRequest *msg, fs_error_t *err);

/* Decoding (the server): prepare (zeroes msg and in) before pb_decode,
 * then take the request: in->req with in->groups (HeteroSample) or
 * in->link (LinkSample), full-size public structs pointing into `in` and
 * into the decoded input (ids are borrowed from it when aligned), so the
 * input must outlive their use. Taking checks the message's structure:
 * fanout and mode counts against num_hops, int64 arrays whole, times and
 * labels one per id, list lengths (FS_WIRE_MAX_*); values (names, ids,
 * modes, ratios) are fs_hetero_run's to check. When a decode failed
 * because a list was too long, in->problem says so. Free with
 * fs_wire_hetero_in_free whatever happened. */
typedef struct {
    featstore_v1_SeedGroup msg;    /* the type name */
    fs_wire_buf_t ids, time;
} fs_wire_group_t;

typedef struct {
    char **v;
    size_t n, cap;
} fs_wire_names_t;

typedef struct {
    fs_hetero_req_t req;
    fs_hetero_seeds_t *groups;
    size_t num_groups;
    fs_link_req_t link;
    /* storage */
    fs_pb_array_t fanout_msgs;     /* featstore_v1_Fanout */
    fs_hetero_fanout_t *fanouts;
    fs_wire_group_t *group_bufs;
    size_t num_group_bufs, cap_group_bufs;
    fs_wire_names_t node_tables, edge_tables;
    char link_src[FS_TYPE_NAME_MAX], link_rel[FS_TYPE_NAME_MAX], link_dst[FS_TYPE_NAME_MAX];
    fs_wire_buf_t src_ids, dst_ids, label, time;
    fs_pb_list_t fanout_list, group_list;
    fs_pb_strings_t node_table_list, edge_table_list;
    int joined_edges;              /* the client reads F_JOINED images (TypedSampling.joined_edges) */
    int64_t cached;                /* TypedSampling.cached, cache_instance and cached_table, as sent */
    uint64_t cache_instance;
    int cached_table;
    char problem[128];
} fs_wire_hetero_in_t;

void fs_wire_hetero_prepare(featstore_v1_HeteroSampleRequest *msg, fs_wire_hetero_in_t *in);
void fs_wire_link_prepare(featstore_v1_LinkSampleRequest *msg, fs_wire_hetero_in_t *in);
fs_status_t fs_wire_hetero_take(const featstore_v1_HeteroSampleRequest *msg, fs_wire_hetero_in_t *in,
                                fs_error_t *err);
fs_status_t fs_wire_link_take(const featstore_v1_LinkSampleRequest *msg, fs_wire_hetero_in_t *in, fs_error_t *err);
void fs_wire_hetero_in_free(fs_wire_hetero_in_t *in);

/* ---- ShardPicks answers (fs_wire_picks.c) ------------------------------------------ */

/* The shard's side: room for n rows' counts; the counts of off[0..n] (its
 * rows' picks) as varints into out, their length returned. */
size_t fs_wire_counts_bound(int64_t n);
size_t fs_wire_put_counts(const int64_t *off, int64_t n, uint8_t *out);
/* ids[0..n) as int32 into out; 1 when every one fits (0..2^31-1), else 0
 * (send them as int64). */
int fs_wire_narrow_ids(const int64_t *ids, int64_t n, int32_t *out);

/* The trainer's side: an answer's decoded fields for a request of n rows
 * read back into int64 offsets and sources (into b, grown as needed and
 * kept for the next answer), the edge ids borrowed from edge_ids, all
 * checked: n counts exactly, sources and edge ids as many as they sum to.
 * FS_ERR_FORMAT naming what is wrong. */
typedef struct {
    int64_t *off, *src;
    size_t off_cap, src_cap;
} fs_wire_picks_buf_t;

fs_status_t fs_wire_picks_answer(const fs_wire_buf_t *counts, const fs_wire_buf_t *sources, int wide_sources,
                                 const fs_wire_buf_t *edge_ids, int want_ids, int64_t n, fs_wire_picks_buf_t *b,
                                 fs_typed_picks_t *out, fs_error_t *err);
void fs_wire_picks_buf_free(fs_wire_picks_buf_t *b);

/* A BatchImageChunk (api_version 2) carrying `data` (referenced, not
 * copied, as fs_wire_gather_chunk's) at `offset` of an image of `total`
 * bytes. */
grpc_byte_buffer *fs_wire_image_chunk(uint64_t total, uint64_t offset, grpc_slice data, fs_error_t *err);

#endif
