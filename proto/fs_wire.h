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
 * the caller (grpc_byte_buffer_destroy). Thread-safety: no shared state. */
#ifndef FS_WIRE_H
#define FS_WIRE_H

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <pb_decode.h>
#include <pb_encode.h>

#include "featstore.pb.h"
#include "fs_sample.h"
#include "fs_types.h"

#define FS_WIRE_API_VERSION 1
/* Feature rows travel in messages of about this many bytes (whole rows). */
#define FS_WIRE_CHUNK_BYTES (1u << 20)

#define FS_WIRE_METHOD_INFO "/featstore.v1.FeatStore/Info"
#define FS_WIRE_METHOD_SAMPLE "/featstore.v1.FeatStore/Sample"
#define FS_WIRE_METHOD_GATHER "/featstore.v1.FeatStore/Gather"
#define FS_WIRE_METHOD_SAMPLE_GATHER "/featstore.v1.FeatStore/SampleGather"
#define FS_WIRE_METHOD_STATS "/featstore.v1.FeatStore/Stats"
#define FS_WIRE_METHOD_SPLIT "/featstore.v1.FeatStore/Split"

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

#endif
