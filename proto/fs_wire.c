/* fs_wire.c — nanopb helpers shared by both ends of the gRPC transport (see
 * fs_wire.h).
 *
 * Design: large arrays never go through per-element protobuf coding. A
 * `bytes` field is written from memory with one pb_encode_string and read
 * with one pb_read, which the slice stream below turns into one memcpy per
 * received slice, straight into the destination. Feature chunks are not
 * encoded at all: the message head is encoded into a small slice and the
 * rows follow as a second slice that references the gathered buffer, which is
 * valid protobuf because a message is the concatenation of its fields. */
#include "fs_wire.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- channel arguments and status codes ------------------------------------ */

static grpc_arg int_arg(const char *key, int value)
{
    grpc_arg a;
    a.type = GRPC_ARG_INTEGER;
    a.key = (char *)key;
    a.value.integer = value;
    return a;
}

size_t fs_wire_channel_args(grpc_arg *args, int max_receive, int server)
{
    size_t n = 0;
    args[n++] = int_arg(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, max_receive);
    args[n++] = int_arg(GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, -1);
    /* A receive window of several messages keeps a 1 MiB-message stream
     * flowing while the reader decodes (the default starts at 64 KiB). */
    args[n++] = int_arg(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 8 << 20);
    if (server) args[n++] = int_arg(GRPC_ARG_ALLOW_REUSEPORT, 0);
    /* Each client connection its own TCP connection: gRPC would otherwise
     * share one among every channel of a process, so two trainer threads
     * would share one HTTP/2 flow-control window (and look like one client). */
    if (!server) args[n++] = int_arg(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    return n;
}

grpc_status_code fs_wire_grpc_status(fs_status_t st)
{
    switch (st) {
    case FS_OK: return GRPC_STATUS_OK;
    case FS_ERR_INVALID_ARGUMENT:
    case FS_ERR_FORMAT: return GRPC_STATUS_INVALID_ARGUMENT;
    case FS_ERR_NOT_FOUND: return GRPC_STATUS_NOT_FOUND;
    case FS_ERR_UNSUPPORTED: return GRPC_STATUS_UNIMPLEMENTED;
    case FS_ERR_NOMEM:
    case FS_ERR_RESOURCE: return GRPC_STATUS_RESOURCE_EXHAUSTED;
    case FS_ERR_EXISTS: return GRPC_STATUS_ALREADY_EXISTS;
    case FS_ERR_NO_DEVICE:
    case FS_ERR_VERSION: return GRPC_STATUS_FAILED_PRECONDITION;
    case FS_ERR_UNAVAILABLE: return GRPC_STATUS_UNAVAILABLE;
    case FS_ERR_TIMEOUT: return GRPC_STATUS_DEADLINE_EXCEEDED;
    case FS_ERR_PERMISSION: return GRPC_STATUS_PERMISSION_DENIED;
    case FS_ERR_IO:
    case FS_ERR_INTERNAL:
    default: return GRPC_STATUS_INTERNAL;
    }
}

fs_status_t fs_wire_fs_status(grpc_status_code code)
{
    switch (code) {
    case GRPC_STATUS_OK: return FS_OK;
    case GRPC_STATUS_INVALID_ARGUMENT:
    case GRPC_STATUS_OUT_OF_RANGE: return FS_ERR_INVALID_ARGUMENT;
    case GRPC_STATUS_NOT_FOUND: return FS_ERR_NOT_FOUND;
    case GRPC_STATUS_ALREADY_EXISTS: return FS_ERR_EXISTS;
    case GRPC_STATUS_RESOURCE_EXHAUSTED: return FS_ERR_RESOURCE;
    case GRPC_STATUS_UNIMPLEMENTED:
    case GRPC_STATUS_FAILED_PRECONDITION: return FS_ERR_UNSUPPORTED;
    case GRPC_STATUS_DEADLINE_EXCEEDED: return FS_ERR_TIMEOUT;
    case GRPC_STATUS_UNAVAILABLE:
    case GRPC_STATUS_CANCELLED: return FS_ERR_UNAVAILABLE;
    case GRPC_STATUS_PERMISSION_DENIED:
    case GRPC_STATUS_UNAUTHENTICATED: return FS_ERR_PERMISSION; /* a missing or wrong token: retrying will not help */
    case GRPC_STATUS_DATA_LOSS: return FS_ERR_IO;
    default: return FS_ERR_INTERNAL;
    }
}

/* ---- bytes fields: encoding --------------------------------------------------- */

static bool encode_bytes_cb(pb_ostream_t *stream, const pb_field_t *field, void *const *arg)
{
    const fs_wire_bytes_t *b = *arg;
    if (!b || b->len == 0) return true;
    return pb_encode_tag_for_field(stream, field) && pb_encode_string(stream, b->data, b->len);
}

void fs_wire_set_bytes(pb_callback_t *cb, fs_wire_bytes_t *b, const void *data, size_t len)
{
    b->data = data;
    b->len = len;
    cb->funcs.encode = encode_bytes_cb;
    cb->arg = b;
}

/* ---- the slice stream ------------------------------------------------------------ */

/* Positions r on a slice with unread bytes; 0 at the end of the buffer. */
static int reader_fill(fs_wire_reader_t *r)
{
    while (!r->slice || r->off == GRPC_SLICE_LENGTH(*r->slice)) {
        if (!grpc_byte_buffer_reader_peek(&r->reader, &r->slice)) return 0;
        r->off = 0;
    }
    return 1;
}

static bool slice_read(pb_istream_t *stream, pb_byte_t *buf, size_t count)
{
    fs_wire_reader_t *r = stream->state;
    while (count > 0) {
        if (!reader_fill(r)) return false;
        size_t avail = GRPC_SLICE_LENGTH(*r->slice) - r->off, n = avail < count ? avail : count;
        if (buf) {
            memcpy(buf, GRPC_SLICE_START_PTR(*r->slice) + r->off, n);
            buf += n;
        }
        r->off += n;
        count -= n;
    }
    return true;
}

fs_status_t fs_wire_istream(fs_wire_reader_t *r, grpc_byte_buffer *bb, pb_istream_t *out, fs_error_t *err)
{
    memset(r, 0, sizeof *r);
    memset(out, 0, sizeof *out);
    if (!bb) return fs_error(err, FS_ERR_FORMAT, "no message");
    if (!grpc_byte_buffer_reader_init(&r->reader, bb))
        return fs_error(err, FS_ERR_FORMAT, "the message cannot be read (unknown or corrupt compression)");
    r->open = 1;
    out->callback = slice_read;
    out->state = r;
    out->bytes_left = grpc_byte_buffer_length(r->reader.buffer_out);
    return FS_OK;
}

void fs_wire_reader_close(fs_wire_reader_t *r)
{
    if (r->open) grpc_byte_buffer_reader_destroy(&r->reader);
    r->open = 0;
}

/* ---- bytes fields: decoding ---------------------------------------------------- */

/* nanopb's plain-buffer stream keeps its read position in `state`; its
 * callback is private, so we learn its address from a stream it makes. */
static int is_buffer_stream(const pb_istream_t *s)
{
    pb_istream_t probe = pb_istream_from_buffer(NULL, 0);
    return s->callback == probe.callback;
}

const void *fs_wire_borrow(pb_istream_t *stream, size_t len, size_t align)
{
    if (align == 0) align = 1;
    if (len == 0 || stream->bytes_left < len) return NULL;
    const pb_byte_t *p = NULL;
    if (is_buffer_stream(stream)) {
        p = stream->state;
        if ((uintptr_t)p % align) return NULL;
        stream->state = (pb_byte_t *)p + len;
    } else if (stream->callback == slice_read) {
        fs_wire_reader_t *r = stream->state;
        if (!reader_fill(r) || GRPC_SLICE_LENGTH(*r->slice) - r->off < len) return NULL;
        p = GRPC_SLICE_START_PTR(*r->slice) + r->off;
        if ((uintptr_t)p % align) return NULL;
        r->off += len;
    } else {
        return NULL;
    }
    stream->bytes_left -= len;
    return p;
}

bool fs_wire_read_buf(pb_istream_t *stream, fs_wire_buf_t *b)
{
    size_t len = stream->bytes_left;
    b->seen = 1;
    b->data = b->mem;
    b->len = 0;
    if (len == 0) return true;
    if (b->flags & FS_WIRE_BORROW) {
        const void *p = fs_wire_borrow(stream, len, b->align);
        if (p) {
            b->data = p;
            b->len = len;
            return true;
        }
    }
    if (len > b->cap) {
        if (b->flags & FS_WIRE_FIXED) PB_RETURN_ERROR(stream, "bytes field longer than its destination");
        free(b->mem); /* the old contents are replaced, so no realloc copy */
        b->mem = malloc(len);
        b->cap = b->mem ? len : 0;
        b->data = b->mem;
        if (!b->mem) PB_RETURN_ERROR(stream, "out of memory for a bytes field");
    }
    if (!pb_read(stream, b->mem, len)) return false;
    b->len = len;
    return true;
}

static bool decode_buf_cb(pb_istream_t *stream, const pb_field_t *field, void **arg)
{
    (void)field;
    return fs_wire_read_buf(stream, *arg);
}

void fs_wire_set_buf(pb_callback_t *cb, fs_wire_buf_t *b)
{
    cb->funcs.decode = decode_buf_cb;
    cb->arg = b;
}

void *fs_wire_buf_detach(fs_wire_buf_t *b)
{
    void *out = NULL;
    if (b->len > 0 && b->data == b->mem && !(b->flags & FS_WIRE_FIXED)) {
        out = b->mem;
        b->mem = NULL;
    } else if (b->len > 0 && (out = malloc(b->len))) {
        memcpy(out, b->data, b->len);
    }
    fs_wire_buf_free(b);
    return out;
}

void fs_wire_buf_free(fs_wire_buf_t *b)
{
    if (!(b->flags & FS_WIRE_FIXED)) {
        free(b->mem);
        b->mem = NULL;
        b->cap = 0;
    }
    b->data = NULL;
    b->len = 0;
}

fs_status_t fs_wire_int64s(const fs_wire_buf_t *b, const char *what, const int64_t **out, int64_t *n,
                           fs_error_t *err)
{
    if (b->len % sizeof(int64_t))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s: %zu bytes is not a whole number of int64 values", what,
                        b->len);
    *out = b->data;
    *n = (int64_t)(b->len / sizeof(int64_t));
    return FS_OK;
}

/* ---- whole messages --------------------------------------------------------------- */

fs_status_t fs_wire_decode(grpc_byte_buffer *bb, const pb_msgdesc_t *fields, void *msg, const char *what,
                           fs_error_t *err)
{
    fs_wire_reader_t r;
    pb_istream_t s;
    fs_status_t st = fs_wire_istream(&r, bb, &s, err);
    if (st != FS_OK) {
        fs_error_prefix(err, "%s", what);
        return st;
    }
    if (!pb_decode(&s, fields, msg))
        st = fs_error(err, FS_ERR_FORMAT, "%s: not a valid message: %s", what, PB_GET_ERROR(&s));
    fs_wire_reader_close(&r);
    return st;
}

static void free_slice_mem(void *p) { free(p); }

grpc_byte_buffer *fs_wire_encode(const pb_msgdesc_t *fields, const void *msg, fs_error_t *err)
{
    size_t size;
    if (!pb_get_encoded_size(&size, fields, msg)) {
        fs_error(err, FS_ERR_INTERNAL, "cannot size a response message");
        return NULL;
    }
    if (size > INT32_MAX) {
        fs_error(err, FS_ERR_RESOURCE, "a message of %zu bytes is over protobuf's 2 GiB limit", size);
        return NULL;
    }
    pb_byte_t *buf = malloc(size ? size : 1);
    if (!buf) {
        fs_error(err, FS_ERR_NOMEM, "out of memory encoding a message of %zu bytes", size);
        return NULL;
    }
    pb_ostream_t os = pb_ostream_from_buffer(buf, size);
    if (!pb_encode(&os, fields, msg)) {
        fs_error(err, FS_ERR_INTERNAL, "cannot encode a message: %s", PB_GET_ERROR(&os));
        free(buf);
        return NULL;
    }
    grpc_slice slice = grpc_slice_new(buf, os.bytes_written, free_slice_mem);
    grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&slice, 1);
    grpc_slice_unref(slice);
    return bb;
}

static size_t varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) v >>= 7, n++;
    return n;
}

/* Writes a length-delimited field's tag and length: its value follows. */
static bool encode_string_head(pb_ostream_t *os, uint32_t tag, uint64_t len)
{
    return pb_encode_tag(os, PB_WT_STRING, tag) && pb_encode_varint(os, len);
}

/* A chunk message: its encoded head (cap bytes, written by os; ok: the
 * encoding succeeded), then the data slice as it is, without a copy. The
 * message takes head (and frees it on failure). */
static grpc_byte_buffer *chunk_message(pb_byte_t *head, size_t cap, const pb_ostream_t *os, bool ok, grpc_slice data,
                                       fs_error_t *err)
{
    if (!ok || os->bytes_written != cap) {
        fs_error(err, FS_ERR_INTERNAL, "cannot encode a chunk message: %s", ok ? "size mismatch" : PB_GET_ERROR(os));
        free(head);
        return NULL;
    }
    grpc_slice slices[2] = {grpc_slice_new(head, cap, free_slice_mem), data};
    grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(slices, GRPC_SLICE_LENGTH(data) ? 2 : 1); /* refs both */
    grpc_slice_unref(slices[0]);
    return bb;
}

grpc_byte_buffer *fs_wire_gather_chunk(const featstore_v1_GatherChunk *hdr, grpc_slice data, int wrap,
                                       const featstore_v1_SampleResponse *sample, fs_error_t *err)
{
    size_t data_len = GRPC_SLICE_LENGTH(data), hdr_size, outer_size = 0;
    featstore_v1_SampleGatherChunk *outer = NULL;
    if (wrap) {
        outer = calloc(1, sizeof *outer);
        if (!outer) {
            fs_error(err, FS_ERR_NOMEM, "out of memory for a chunk");
            return NULL;
        }
        outer->api_version = hdr->api_version;
        if (sample) outer->has_sample = true, outer->sample = *sample;
    }
    if (!pb_get_encoded_size(&hdr_size, featstore_v1_GatherChunk_fields, hdr) ||
        (outer && !pb_get_encoded_size(&outer_size, featstore_v1_SampleGatherChunk_fields, outer))) {
        free(outer);
        fs_error(err, FS_ERR_INTERNAL, "cannot size a chunk message");
        return NULL;
    }
    /* chunk = head || [tag 7, len, data]; wrapped: outer || [tag 3, len, chunk] */
    size_t inner = hdr_size + (data_len ? 1 + varint_size(data_len) + data_len : 0);
    size_t cap = outer_size + (outer ? 1 + varint_size(inner) : 0) + inner - data_len;
    if (cap + data_len > INT32_MAX) {
        free(outer);
        fs_error(err, FS_ERR_RESOURCE, "a message of %zu bytes is over protobuf's 2 GiB limit", cap + data_len);
        return NULL;
    }
    pb_byte_t *head = malloc(cap);
    if (!head) {
        free(outer);
        fs_error(err, FS_ERR_NOMEM, "out of memory for a chunk of %zu bytes", cap);
        return NULL;
    }
    pb_ostream_t os = pb_ostream_from_buffer(head, cap);
    bool ok = true;
    if (outer)
        ok = pb_encode(&os, featstore_v1_SampleGatherChunk_fields, outer) &&
             encode_string_head(&os, featstore_v1_SampleGatherChunk_features_tag, inner);
    ok = ok && pb_encode(&os, featstore_v1_GatherChunk_fields, hdr);
    if (ok && data_len) ok = encode_string_head(&os, featstore_v1_GatherChunk_data_tag, data_len);
    free(outer);
    return chunk_message(head, cap, &os, ok, data, err);
}

/* ---- sampling requests and results ------------------------------------------------ */

void fs_wire_sample_request(const fs_sample_req_t *req, const int64_t *seeds, int64_t n, fs_wire_bytes_t *seed_bytes,
                            featstore_v1_SampleRequest *out)
{
    memset(out, 0, sizeof *out);
    out->api_version = FS_WIRE_API_VERSION;
    fs_wire_set_bytes(&out->seeds, seed_bytes, seeds, (size_t)n * sizeof(int64_t));
    int hops = req->num_hops < 0 ? 0 : req->num_hops > FS_MAX_HOPS ? FS_MAX_HOPS : req->num_hops;
    out->fanouts_count = (pb_size_t)hops;
    out->modes_count = (pb_size_t)hops;
    for (int h = 0; h < hops; h++) {
        out->fanouts[h] = req->fanout[h];
        out->modes[h] = (featstore_v1_SampleMode)req->mode[h];
    }
    out->seed = req->seed;
    out->want_edge_ids = req->want_edge_ids != 0;
    out->locality = req->locality;
}

fs_status_t fs_wire_sample_req_from_msg(const featstore_v1_SampleRequest *in, fs_sample_req_t *out, fs_error_t *err)
{
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    if (in->fanouts_count < 1)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "sample request has no fanouts (one per hop, 1..%d)",
                        FS_MAX_HOPS);
    if (in->modes_count != 0 && in->modes_count != in->fanouts_count)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "sample request has %u modes for %u hops (give one per hop or "
                        "none)", (unsigned)in->modes_count, (unsigned)in->fanouts_count);
    out->num_hops = in->fanouts_count;
    for (int h = 0; h < out->num_hops; h++) {
        out->fanout[h] = in->fanouts[h];
        int mode = in->modes_count ? (int)in->modes[h] : 0;
        if (mode < 0 || mode >= FS_SAMPLE_MODE_COUNT_)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "sample request: mode %d of hop %d is unknown", mode, h);
        out->mode[h] = (fs_sample_mode_t)mode;
    }
    out->seed = in->seed;
    out->want_edge_ids = in->want_edge_ids;
    out->locality = in->locality;
    return FS_OK;
}

static void set_i64s(pb_callback_t *cb, fs_wire_bytes_t *b, const int64_t *p, int64_t n)
{
    fs_wire_set_bytes(cb, b, p, p && n > 0 ? (size_t)n * sizeof(int64_t) : 0);
}

void fs_wire_sample_response(const fs_sample_result_t *r, fs_wire_sample_src_t *src, featstore_v1_SampleResponse *out)
{
    memset(out, 0, sizeof *out);
    out->api_version = FS_WIRE_API_VERSION;
    set_i64s(&out->nodes, &src->nodes, r->nodes, r->num_nodes);
    set_i64s(&out->seed_local, &src->seed_local, r->seed_local, r->num_seeds);
    out->blocks_count = (pb_size_t)r->num_hops;
    for (int h = 0; h < r->num_hops; h++) {
        const fs_block_t *b = &r->block[h];
        featstore_v1_Block *o = &out->blocks[h];
        o->num_dst = b->num_dst;
        o->num_src = b->num_src;
        o->num_edges = b->num_edges;
        set_i64s(&o->dst_offsets, &src->arr[h][0], b->dst_offsets, b->num_dst + 1);
        set_i64s(&o->edge_dst, &src->arr[h][1], b->edge_dst, b->num_edges);
        set_i64s(&o->edge_src, &src->arr[h][2], b->edge_src, b->num_edges);
        set_i64s(&o->edge_ids, &src->arr[h][3], b->edge_ids, b->num_edges);
        fs_wire_set_bytes(&o->edge_weights, &src->arr[h][4], b->edge_weights,
                          b->edge_weights && b->num_edges > 0 ? (size_t)b->num_edges * sizeof(float) : 0);
    }
}

void fs_wire_sample_response_prepare(featstore_v1_SampleResponse *msg, fs_wire_sample_dst_t *dst)
{
    fs_wire_set_buf(&msg->nodes, &dst->nodes);
    fs_wire_set_buf(&msg->seed_local, &dst->seed_local);
    for (int h = 0; h < FS_MAX_HOPS; h++) {
        fs_wire_set_buf(&msg->blocks[h].dst_offsets, &dst->arr[h][0]);
        fs_wire_set_buf(&msg->blocks[h].edge_dst, &dst->arr[h][1]);
        fs_wire_set_buf(&msg->blocks[h].edge_src, &dst->arr[h][2]);
        fs_wire_set_buf(&msg->blocks[h].edge_ids, &dst->arr[h][3]);
        fs_wire_set_buf(&msg->blocks[h].edge_weights, &dst->arr[h][4]);
    }
}

/* An int64 array of exactly `want` values (an absent field is 0 values). */
static fs_status_t expect_i64s(const fs_wire_buf_t *b, int64_t want, const char *what, int h, const int64_t **out,
                               fs_error_t *err)
{
    if (want < 0 || b->len % sizeof(int64_t) || (uint64_t)b->len / sizeof(int64_t) != (uint64_t)want)
        return fs_error(err, FS_ERR_FORMAT, "sample response: block %d's %s has %zu bytes, expected %lld int64 "
                        "values", h, what, b->len, (long long)want);
    *out = b->len ? b->data : NULL;
    return FS_OK;
}

fs_status_t fs_wire_sample_result(const featstore_v1_SampleResponse *msg, const fs_wire_sample_dst_t *dst,
                                  fs_sample_result_t *out, fs_error_t *err)
{
    memset(out, 0, sizeof *out);
    fs_status_t st = fs_wire_int64s(&dst->nodes, "sample response nodes", &out->nodes, &out->num_nodes, err);
    if (st == FS_OK)
        st = fs_wire_int64s(&dst->seed_local, "sample response seed_local", &out->seed_local, &out->num_seeds, err);
    if (st != FS_OK) return st;
    if (msg->blocks_count < 1 || msg->blocks_count > FS_MAX_HOPS)
        return fs_error(err, FS_ERR_FORMAT, "sample response has %u blocks, expected 1..%d",
                        (unsigned)msg->blocks_count, FS_MAX_HOPS);
    out->num_hops = msg->blocks_count;
    for (int h = 0; h < out->num_hops && st == FS_OK; h++) {
        const featstore_v1_Block *in = &msg->blocks[h];
        fs_block_t *b = &out->block[h];
        b->num_dst = in->num_dst, b->num_src = in->num_src, b->num_edges = in->num_edges;
        /* num_dst + 1 offsets follow: INT64_MAX would overflow that count (found by tests/fuzz/fuzz_grpc) */
        if (b->num_dst < 0 || b->num_dst == INT64_MAX || b->num_src < b->num_dst || b->num_edges < 0)
            return fs_error(err, FS_ERR_FORMAT, "sample response: block %d has num_dst %lld, num_src %lld, "
                            "num_edges %lld", h, (long long)b->num_dst, (long long)b->num_src,
                            (long long)b->num_edges);
        st = expect_i64s(&dst->arr[h][0], b->num_dst + 1, "dst_offsets", h, &b->dst_offsets, err);
        if (st == FS_OK) st = expect_i64s(&dst->arr[h][1], b->num_edges, "edge_dst", h, &b->edge_dst, err);
        if (st == FS_OK) st = expect_i64s(&dst->arr[h][2], b->num_edges, "edge_src", h, &b->edge_src, err);
        if (st == FS_OK && dst->arr[h][3].len)
            st = expect_i64s(&dst->arr[h][3], b->num_edges, "edge_ids", h, &b->edge_ids, err);
        if (st == FS_OK && dst->arr[h][4].len) {
            const fs_wire_buf_t *w = &dst->arr[h][4];
            if (w->len % sizeof(float) || (uint64_t)w->len / sizeof(float) != (uint64_t)b->num_edges)
                return fs_error(err, FS_ERR_FORMAT, "sample response: block %d's edge_weights has %zu bytes, "
                                "expected %lld float32 values", h, w->len, (long long)b->num_edges);
            b->edge_weights = w->data;
        }
    }
    if (st == FS_OK && out->num_nodes != out->block[out->num_hops - 1].num_src)
        st = fs_error(err, FS_ERR_FORMAT, "sample response has %lld nodes but its last block %lld sources",
                      (long long)out->num_nodes, (long long)out->block[out->num_hops - 1].num_src);
    return st;
}

fs_status_t fs_wire_sample_fill_edge_dst(const featstore_v1_SampleResponse *msg, fs_wire_sample_dst_t *dst,
                                         fs_error_t *err)
{
    for (pb_size_t h = 0; h < msg->blocks_count && h < FS_MAX_HOPS; h++) {
        const featstore_v1_Block *in = &msg->blocks[h];
        const fs_wire_buf_t *off = &dst->arr[h][0], *src = &dst->arr[h][2];
        fs_wire_buf_t *out = &dst->arr[h][1];
        if (out->len || in->num_edges == 0) continue; /* sent, or nothing to imply */
        /* edge_src was received whole: it bounds what is allocated here */
        if (in->num_dst < 0 || in->num_dst == INT64_MAX || in->num_edges < 0 || off->len % 8 || src->len % 8 ||
            off->len / 8 != (uint64_t)in->num_dst + 1 || src->len / 8 != (uint64_t)in->num_edges)
            return fs_error(err, FS_ERR_FORMAT, "sample response: block %u leaves edge_dst out, but its dst_offsets "
                            "(%zu bytes) and edge_src (%zu bytes) do not fit num_dst %lld and num_edges %lld",
                            (unsigned)h, off->len, src->len, (long long)in->num_dst, (long long)in->num_edges);
        const int64_t *o = off->data;
        int64_t *d = malloc((size_t)in->num_edges * sizeof *d), e = 0;
        if (!d) return fs_error(err, FS_ERR_NOMEM, "out of memory for %lld edges", (long long)in->num_edges);
        for (int64_t v = 0; v < in->num_dst && o[v] == e && o[v + 1] >= e && o[v + 1] <= in->num_edges; v++)
            for (; e < o[v + 1]; e++) d[e] = v;
        if (e != in->num_edges || o[in->num_dst] != e) {
            free(d);
            return fs_error(err, FS_ERR_FORMAT, "sample response: block %u's dst_offsets do not run from 0 up to "
                            "its %lld edges", (unsigned)h, (long long)in->num_edges);
        }
        fs_wire_buf_free(out);
        out->flags &= ~(unsigned)FS_WIRE_FIXED;
        out->mem = d, out->data = d, out->len = out->cap = (size_t)in->num_edges * sizeof *d, out->seen = 1;
    }
    return FS_OK;
}

void fs_wire_sample_dst_free(fs_wire_sample_dst_t *dst)
{
    fs_wire_buf_free(&dst->nodes);
    fs_wire_buf_free(&dst->seed_local);
    for (int h = 0; h < FS_MAX_HOPS; h++)
        for (int k = 0; k < FS_WIRE_BLOCK_ARRAYS; k++) fs_wire_buf_free(&dst->arr[h][k]);
}

/* ---- epoch streams (Stream) ------------------------------------------------------------ */

static const char *const order_names[] = {[FS_EPOCH_SEQUENTIAL] = "sequential", [FS_EPOCH_RANDOM] = "random",
                                          [FS_EPOCH_CHUNKED] = "chunked"};

const char *fs_wire_order_name(fs_epoch_order_t order)
{
    return (unsigned)order <= FS_EPOCH_CHUNKED ? order_names[order] : "";
}

fs_status_t fs_wire_order_from_name(const char *name, fs_epoch_order_t *out, fs_error_t *err)
{
    *out = FS_EPOCH_RANDOM;
    for (int k = 0; name[0] && k <= FS_EPOCH_CHUNKED; k++)
        if (strcmp(name, order_names[k]) == 0) {
            *out = (fs_epoch_order_t)k;
            return FS_OK;
        }
    return name[0] ? fs_error(err, FS_ERR_INVALID_ARGUMENT, "order '%s' is not random, sequential or chunked", name)
                   : FS_OK;
}

/* ---- typed requests (api_version 2) ------------------------------------------------ */

/* -- encoding -- */

/* Type and relation names travel in fields of FS_TYPE_NAME_MAX bytes
 * (featstore.options' max_size): the one name limit (fs_types.h). */
#define SAME_AS_NAME_LIMIT(type, field) \
    _Static_assert(sizeof(((type *)0)->field) == FS_TYPE_NAME_MAX, #type "." #field ": max_size != FS_TYPE_NAME_MAX")
SAME_AS_NAME_LIMIT(featstore_v1_Fanout, src);
SAME_AS_NAME_LIMIT(featstore_v1_Fanout, rel);
SAME_AS_NAME_LIMIT(featstore_v1_Fanout, dst);
SAME_AS_NAME_LIMIT(featstore_v1_SeedGroup, type);
SAME_AS_NAME_LIMIT(featstore_v1_LinkSampleRequest, src);
SAME_AS_NAME_LIMIT(featstore_v1_LinkSampleRequest, rel);
SAME_AS_NAME_LIMIT(featstore_v1_LinkSampleRequest, dst);
SAME_AS_NAME_LIMIT(featstore_v1_NodeTypeInfo, name);
SAME_AS_NAME_LIMIT(featstore_v1_EdgeTypeInfo, src);
SAME_AS_NAME_LIMIT(featstore_v1_EdgeTypeInfo, rel);
SAME_AS_NAME_LIMIT(featstore_v1_EdgeTypeInfo, dst);

static fs_status_t check_name(const char *name, const char *what, fs_error_t *err)
{
    if (name && strlen(name) >= FS_TYPE_NAME_MAX)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s: name '%.40s...' is longer than %d characters (type and "
                        "relation names are 1..%d)", what, name, FS_TYPE_NAME_MAX - 1, FS_TYPE_NAME_MAX - 1);
    return FS_OK;
}

static void copy_name(char *field, const char *name) { snprintf(field, FS_TYPE_NAME_MAX, "%s", name ? name : ""); }

static bool get_fanout(void *ctx, size_t i, void *elem)
{
    const fs_wire_hetero_out_t *o = ctx;
    const fs_hetero_fanout_t *f = &o->req->fanouts[i];
    featstore_v1_Fanout *m = elem;
    copy_name(m->src, f->src), copy_name(m->rel, f->rel), copy_name(m->dst, f->dst);
    m->fanout_count = (pb_size_t)o->req->num_hops;
    for (int h = 0; h < o->req->num_hops; h++) m->fanout[h] = f->fanout[h];
    return true;
}

static const char *get_node_table(void *ctx, size_t i) { return ((const fs_wire_hetero_out_t *)ctx)->req->node_tables[i]; }
static const char *get_edge_table(void *ctx, size_t i) { return ((const fs_wire_hetero_out_t *)ctx)->req->edge_tables[i]; }

static bool get_group(void *ctx, size_t i, void *elem)
{
    fs_wire_hetero_out_t *o = ctx;
    const fs_hetero_seeds_t *g = &o->groups[i];
    featstore_v1_SeedGroup *m = elem;
    size_t bytes = g->count > 0 ? (size_t)g->count * sizeof(int64_t) : 0;
    copy_name(m->type, g->type);
    fs_wire_set_bytes(&m->ids, &o->gids, g->ids, bytes);
    fs_wire_set_bytes(&m->time, &o->gtime, g->time, o->req->temporal != FS_TEMPORAL_OFF && g->time ? bytes : 0);
    return true;
}

/* The sampling half: what encoding needs to be right (the rest the server checks). */
static fs_status_t sampling_out(const fs_hetero_req_t *req, fs_wire_hetero_out_t *o, featstore_v1_TypedSampling *m,
                                fs_error_t *err)
{
    if (req->num_hops < 1 || req->num_hops > FS_MAX_HOPS)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%d hops requested, must be 1..%d", req->num_hops, FS_MAX_HOPS);
    if (req->num_fanouts > 0 && !req->fanouts)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "num_fanouts is %zu but fanouts is NULL", req->num_fanouts);
    if ((req->num_node_tables && !req->node_tables) || (req->num_edge_tables && !req->edge_tables))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "a table count is set but its name list is NULL");
    if (req->out_dtype != FS_DTYPE_INVALID && !fs_dtype_size(req->out_dtype))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "unknown out_dtype %d", (int)req->out_dtype);
    for (size_t i = 0; i < req->num_fanouts; i++) {
        const fs_hetero_fanout_t *f = &req->fanouts[i];
        fs_status_t st = check_name(f->src, "fanouts", err);
        if (st == FS_OK) st = check_name(f->rel, "fanouts", err);
        if (st == FS_OK) st = check_name(f->dst, "fanouts", err);
        if (st != FS_OK) return st;
    }
    for (size_t k = 0; k < req->num_node_tables; k++)
        if (!req->node_tables[k]) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "node table %zu is NULL", k);
    for (size_t k = 0; k < req->num_edge_tables; k++)
        if (!req->edge_tables[k]) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "edge table %zu is NULL", k);
    o->req = req;
    o->fanouts = (fs_pb_list_t){featstore_v1_Fanout_fields, sizeof(featstore_v1_Fanout), req->num_fanouts,
                                .get = get_fanout, .ctx = o};
    o->node_tables = (fs_pb_strings_t){req->num_node_tables, get_node_table, NULL, o};
    o->edge_tables = (fs_pb_strings_t){req->num_edge_tables, get_edge_table, NULL, o};
    *m = (featstore_v1_TypedSampling)featstore_v1_TypedSampling_init_zero;
    m->num_hops = (uint32_t)req->num_hops;
    fs_pb_set_list(&m->fanouts, &o->fanouts);
    m->modes_count = (pb_size_t)req->num_hops;
    for (int h = 0; h < req->num_hops; h++) m->modes[h] = (featstore_v1_SampleMode)req->mode[h];
    m->seed = req->seed;
    m->want_edge_ids = req->want_edge_ids != 0;
    m->frontier = (featstore_v1_Frontier)req->frontier;
    m->disjoint = req->disjoint != 0;
    m->temporal = (featstore_v1_Temporal)req->temporal;
    m->strict = req->strict != 0;
    m->window = req->window;
    m->joined_edges = true; /* this library reads both layouts (fs_hetero.c) */
    fs_pb_set_strings(&m->node_tables, &o->node_tables);
    fs_pb_set_strings(&m->edge_tables, &o->edge_tables);
    snprintf(m->out_dtype, sizeof m->out_dtype, "%s",
             req->out_dtype == FS_DTYPE_INVALID ? "" : fs_dtype_name(req->out_dtype));
    return FS_OK;
}

fs_status_t fs_wire_hetero_request(const fs_hetero_seeds_t *groups, size_t num_groups, const fs_hetero_req_t *req,
                                   fs_wire_hetero_out_t *out, featstore_v1_HeteroSampleRequest *msg, fs_error_t *err)
{
    memset(out, 0, sizeof *out);
    *msg = (featstore_v1_HeteroSampleRequest)featstore_v1_HeteroSampleRequest_init_zero;
    if (num_groups > 0 && !groups)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%zu seed groups but the array is NULL", num_groups);
    for (size_t i = 0; i < num_groups; i++) {
        const fs_hetero_seeds_t *g = &groups[i];
        fs_status_t st = check_name(g->type, "seeds", err);
        if (st != FS_OK) return st;
        if (g->count < 0 || (g->count > 0 && !g->ids))
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "seeds of '%s': count %lld with %s ids",
                            g->type ? g->type : "(null)", (long long)g->count, g->ids ? "some" : "no");
    }
    fs_status_t st = sampling_out(req, out, &msg->sampling, err);
    if (st != FS_OK) return st;
    out->groups = groups;
    out->group_list = (fs_pb_list_t){featstore_v1_SeedGroup_fields, sizeof(featstore_v1_SeedGroup), num_groups,
                                     .get = get_group, .ctx = out};
    msg->api_version = FS_WIRE_API_VERSION_TYPED;
    msg->has_sampling = true;
    fs_pb_set_list(&msg->groups, &out->group_list);
    return FS_OK;
}

fs_status_t fs_wire_link_request(const fs_link_req_t *link, const fs_hetero_req_t *req, fs_wire_hetero_out_t *out,
                                 featstore_v1_LinkSampleRequest *msg, fs_error_t *err)
{
    memset(out, 0, sizeof *out);
    *msg = (featstore_v1_LinkSampleRequest)featstore_v1_LinkSampleRequest_init_zero;
    fs_status_t st = check_name(link->src, "link seed edges", err);
    if (st == FS_OK) st = check_name(link->rel, "link seed edges", err);
    if (st == FS_OK) st = check_name(link->dst, "link seed edges", err);
    if (st != FS_OK) return st;
    if (link->count < 0 || (link->count > 0 && (!link->src_ids || !link->dst_ids)))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "link sample: bad seed edge arrays (count %lld, src_ids %s, "
                        "dst_ids %s)", (long long)link->count, link->src_ids ? "set" : "NULL",
                        link->dst_ids ? "set" : "NULL");
    if ((st = sampling_out(req, out, &msg->sampling, err)) != FS_OK) return st;
    size_t bytes = link->count > 0 ? (size_t)link->count * sizeof(int64_t) : 0;
    msg->api_version = FS_WIRE_API_VERSION_TYPED;
    msg->has_sampling = true;
    copy_name(msg->src, link->src), copy_name(msg->rel, link->rel), copy_name(msg->dst, link->dst);
    fs_wire_set_bytes(&msg->src_ids, &out->src_ids, link->src_ids, bytes);
    fs_wire_set_bytes(&msg->dst_ids, &out->dst_ids, link->dst_ids, bytes);
    fs_wire_set_bytes(&msg->label, &out->label, link->label, link->label ? bytes : 0);
    fs_wire_set_bytes(&msg->time, &out->time, link->time, req->temporal != FS_TEMPORAL_OFF && link->time ? bytes : 0);
    msg->neg = (featstore_v1_NegativeMode)link->neg;
    msg->amount = link->amount;
    msg->neg_weighted = link->neg_weighted != 0;
    msg->strict_negatives = link->strict != 0;
    msg->keep_seed_edges = link->keep_seed_edges != 0;
    return FS_OK;
}

/* -- decoding -- */

static bool refuse(fs_wire_hetero_in_t *in, const char *what, size_t max)
{
    snprintf(in->problem, sizeof in->problem, "more than %zu %s", max, what);
    return false;
}

static bool put_fanout(void *ctx, const void *elem)
{
    fs_wire_hetero_in_t *in = ctx;
    if (in->fanout_msgs.count >= FS_WIRE_MAX_FANOUTS) return refuse(in, "fanouts (edge types)", FS_WIRE_MAX_FANOUTS);
    fs_pb_array_t *a = &in->fanout_msgs;
    if (a->count == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 8;
        void *p = realloc(a->items, cap * sizeof(featstore_v1_Fanout));
        if (!p) return false;
        a->items = p, a->cap = cap;
    }
    memcpy((featstore_v1_Fanout *)a->items + a->count++, elem, sizeof(featstore_v1_Fanout));
    return true;
}

static bool put_name_into(fs_wire_hetero_in_t *in, fs_wire_names_t *l, const char *s, const char *what)
{
    if (l->n >= FS_WIRE_MAX_TABLES) return refuse(in, what, FS_WIRE_MAX_TABLES);
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 4;
        char **p = realloc(l->v, cap * sizeof *p);
        if (!p) return false;
        l->v = p, l->cap = cap;
    }
    if (!(l->v[l->n] = strdup(s))) return false;
    l->n++;
    return true;
}

static bool put_node_table(void *ctx, const char *s, size_t len)
{
    (void)len;
    fs_wire_hetero_in_t *in = ctx;
    return put_name_into(in, &in->node_tables, s, "node tables");
}

static bool put_edge_table(void *ctx, const char *s, size_t len)
{
    (void)len;
    fs_wire_hetero_in_t *in = ctx;
    return put_name_into(in, &in->edge_tables, s, "edge tables");
}

static void init_i64_buf(fs_wire_buf_t *b) { *b = (fs_wire_buf_t){.flags = FS_WIRE_BORROW, .align = sizeof(int64_t)}; }

/* A seed group's element: its arrays decode into a fresh record. */
static bool start_group(void *ctx, void *elem)
{
    fs_wire_hetero_in_t *in = ctx;
    featstore_v1_SeedGroup *m = elem;
    if (in->num_group_bufs >= FS_WIRE_MAX_GROUPS) return refuse(in, "seed groups", FS_WIRE_MAX_GROUPS);
    if (in->num_group_bufs == in->cap_group_bufs) {
        size_t cap = in->cap_group_bufs ? 2 * in->cap_group_bufs : 4;
        fs_wire_group_t *p = realloc(in->group_bufs, cap * sizeof *p);
        if (!p) return false;
        in->group_bufs = p, in->cap_group_bufs = cap;
    }
    fs_wire_group_t *g = &in->group_bufs[in->num_group_bufs++];
    memset(g, 0, sizeof *g);
    init_i64_buf(&g->ids), init_i64_buf(&g->time);
    fs_wire_set_buf(&m->ids, &g->ids);
    fs_wire_set_buf(&m->time, &g->time);
    return true;
}

static bool put_group(void *ctx, const void *elem)
{
    fs_wire_hetero_in_t *in = ctx;
    const featstore_v1_SeedGroup *m = elem;
    memcpy(in->group_bufs[in->num_group_bufs - 1].msg.type, m->type, sizeof m->type);
    return true;
}

static void prepare_sampling(featstore_v1_TypedSampling *m, fs_wire_hetero_in_t *in)
{
    in->fanout_list = (fs_pb_list_t){featstore_v1_Fanout_fields, sizeof(featstore_v1_Fanout), .put = put_fanout, .ctx = in};
    in->node_table_list = (fs_pb_strings_t){.put = put_node_table, .ctx = in};
    in->edge_table_list = (fs_pb_strings_t){.put = put_edge_table, .ctx = in};
    fs_pb_set_list(&m->fanouts, &in->fanout_list);
    fs_pb_set_strings(&m->node_tables, &in->node_table_list);
    fs_pb_set_strings(&m->edge_tables, &in->edge_table_list);
}

void fs_wire_hetero_prepare(featstore_v1_HeteroSampleRequest *msg, fs_wire_hetero_in_t *in)
{
    memset(in, 0, sizeof *in);
    *msg = (featstore_v1_HeteroSampleRequest)featstore_v1_HeteroSampleRequest_init_zero;
    prepare_sampling(&msg->sampling, in);
    in->group_list = (fs_pb_list_t){featstore_v1_SeedGroup_fields, sizeof(featstore_v1_SeedGroup), .put = put_group,
                                    .ctx = in, .start = start_group};
    fs_pb_set_list(&msg->groups, &in->group_list);
}

void fs_wire_link_prepare(featstore_v1_LinkSampleRequest *msg, fs_wire_hetero_in_t *in)
{
    memset(in, 0, sizeof *in);
    *msg = (featstore_v1_LinkSampleRequest)featstore_v1_LinkSampleRequest_init_zero;
    prepare_sampling(&msg->sampling, in);
    init_i64_buf(&in->src_ids), init_i64_buf(&in->dst_ids), init_i64_buf(&in->label), init_i64_buf(&in->time);
    fs_wire_set_buf(&msg->src_ids, &in->src_ids);
    fs_wire_set_buf(&msg->dst_ids, &in->dst_ids);
    fs_wire_set_buf(&msg->label, &in->label);
    fs_wire_set_buf(&msg->time, &in->time);
}

static fs_status_t take_sampling(const char *what, bool has, const featstore_v1_TypedSampling *m,
                                 fs_wire_hetero_in_t *in, fs_error_t *err)
{
    in->joined_edges = has && m->joined_edges;
    if (!has) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s has no sampling (TypedSampling)", what);
    if (m->num_hops < 1 || m->num_hops > FS_MAX_HOPS)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%u hops requested, must be 1..%d", (unsigned)m->num_hops,
                        FS_MAX_HOPS);
    int H = (int)m->num_hops;
    if (m->modes_count != 0 && m->modes_count != (pb_size_t)H)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s has %u modes for %d hops (give one per hop or none)", what,
                        (unsigned)m->modes_count, H);
    const featstore_v1_Fanout *fm = in->fanout_msgs.items;
    size_t nf = in->fanout_msgs.count;
    if (!(in->fanouts = calloc(nf + 1, sizeof *in->fanouts))) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < nf; i++) {
        if (fm[i].fanout_count != (pb_size_t)H)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "fanouts of (%s, %s, %s): %u values for %d hops",
                            fm[i].src, fm[i].rel, fm[i].dst, (unsigned)fm[i].fanout_count, H);
        fs_hetero_fanout_t *f = &in->fanouts[i];
        f->src = fm[i].src, f->rel = fm[i].rel, f->dst = fm[i].dst;
        for (int h = 0; h < H; h++) f->fanout[h] = fm[i].fanout[h];
    }
    fs_dtype_t dt = FS_DTYPE_INVALID;
    if (m->out_dtype[0] && (dt = fs_dtype_from_name(m->out_dtype)) == FS_DTYPE_INVALID)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "out_dtype '%s' is not a dtype name", m->out_dtype);
    fs_hetero_req_t *r = &in->req;
    *r = (fs_hetero_req_t)FS_HETERO_REQ_INIT;
    r->num_hops = H;
    r->num_fanouts = nf, r->fanouts = in->fanouts;
    for (int h = 0; h < H; h++) r->mode[h] = m->modes_count ? (fs_sample_mode_t)m->modes[h] : FS_SAMPLE_UNIFORM;
    r->seed = m->seed;
    r->want_edge_ids = m->want_edge_ids;
    r->frontier = (fs_frontier_t)m->frontier; /* values: the engine's to check, in the same words for both transports */
    r->disjoint = m->disjoint;
    r->temporal = (fs_temporal_t)m->temporal;
    r->strict = m->strict;
    r->out_dtype = dt;
    r->window = m->window;
    r->num_node_tables = in->node_tables.n, r->node_tables = (const char *const *)in->node_tables.v;
    r->num_edge_tables = in->edge_tables.n, r->edge_tables = (const char *const *)in->edge_tables.v;
    return FS_OK;
}

/* An optional int64 array of exactly `count` values (empty: absent). */
static fs_status_t take_per_id(const fs_wire_buf_t *b, int64_t count, const char *what, const int64_t **out,
                               fs_error_t *err)
{
    const int64_t *p = NULL;
    int64_t n = 0;
    fs_status_t st = fs_wire_int64s(b, what, &p, &n, err);
    if (st != FS_OK) return st;
    if (n != 0 && n != count)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s: %lld values for %lld ids (give one per id, or none)", what,
                        (long long)n, (long long)count);
    *out = n ? p : NULL;
    return FS_OK;
}

fs_status_t fs_wire_hetero_take(const featstore_v1_HeteroSampleRequest *msg, fs_wire_hetero_in_t *in,
                                fs_error_t *err)
{
    fs_status_t st = take_sampling("HeteroSampleRequest", msg->has_sampling, &msg->sampling, in, err);
    if (st != FS_OK) return st;
    size_t n = in->num_group_bufs;
    if (!(in->groups = calloc(n + 1, sizeof *in->groups))) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n && st == FS_OK; i++) {
        fs_wire_group_t *g = &in->group_bufs[i];
        fs_hetero_seeds_t *o = &in->groups[i];
        char what[FS_TYPE_NAME_MAX + 32];
        snprintf(what, sizeof what, "seeds of '%s'", g->msg.type);
        o->type = g->msg.type;
        st = fs_wire_int64s(&g->ids, what, &o->ids, &o->count, err);
        snprintf(what, sizeof what, "seed times of '%s'", g->msg.type);
        if (st == FS_OK) st = take_per_id(&g->time, o->count, what, &o->time, err);
        if (o->count == 0) o->ids = NULL;
    }
    in->num_groups = n;
    return st;
}

fs_status_t fs_wire_link_take(const featstore_v1_LinkSampleRequest *msg, fs_wire_hetero_in_t *in, fs_error_t *err)
{
    fs_status_t st = take_sampling("LinkSampleRequest", msg->has_sampling, &msg->sampling, in, err);
    if (st != FS_OK) return st;
    fs_link_req_t *l = &in->link;
    *l = (fs_link_req_t)FS_LINK_REQ_INIT;
    memcpy(in->link_src, msg->src, sizeof in->link_src);
    memcpy(in->link_rel, msg->rel, sizeof in->link_rel);
    memcpy(in->link_dst, msg->dst, sizeof in->link_dst);
    l->src = in->link_src, l->rel = in->link_rel, l->dst = in->link_dst;
    int64_t nd = 0;
    st = fs_wire_int64s(&in->src_ids, "link src_ids", &l->src_ids, &l->count, err);
    if (st == FS_OK) st = fs_wire_int64s(&in->dst_ids, "link dst_ids", &l->dst_ids, &nd, err);
    if (st == FS_OK && nd != l->count)
        st = fs_error(err, FS_ERR_INVALID_ARGUMENT, "link sample: %lld src ids but %lld dst ids", (long long)l->count,
                      (long long)nd);
    if (st == FS_OK) st = take_per_id(&in->label, l->count, "link labels", &l->label, err);
    if (st == FS_OK) st = take_per_id(&in->time, l->count, "link times", &l->time, err);
    if (st != FS_OK) return st;
    if (l->count == 0) l->src_ids = l->dst_ids = NULL;
    l->neg = (fs_neg_mode_t)msg->neg;
    l->amount = msg->amount;
    l->neg_weighted = msg->neg_weighted;
    l->strict = msg->strict_negatives;
    l->keep_seed_edges = msg->keep_seed_edges;
    return FS_OK;
}

static void names_free(fs_wire_names_t *l)
{
    for (size_t i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
}

void fs_wire_hetero_in_free(fs_wire_hetero_in_t *in)
{
    free(in->fanout_msgs.items);
    free(in->fanouts);
    for (size_t i = 0; i < in->num_group_bufs; i++) {
        fs_wire_buf_free(&in->group_bufs[i].ids);
        fs_wire_buf_free(&in->group_bufs[i].time);
    }
    free(in->group_bufs);
    free(in->groups);
    names_free(&in->node_tables);
    names_free(&in->edge_tables);
    fs_wire_buf_free(&in->src_ids);
    fs_wire_buf_free(&in->dst_ids);
    fs_wire_buf_free(&in->label);
    fs_wire_buf_free(&in->time);
    memset(in, 0, sizeof *in);
}

/* -- batch images -- */

grpc_byte_buffer *fs_wire_image_chunk(uint64_t total, uint64_t offset, grpc_slice data, fs_error_t *err)
{
    featstore_v1_BatchImageChunk hdr = featstore_v1_BatchImageChunk_init_zero;
    hdr.api_version = FS_WIRE_API_VERSION_TYPED;
    hdr.total_bytes = total, hdr.offset = offset;
    size_t data_len = GRPC_SLICE_LENGTH(data), hdr_size;
    if (!pb_get_encoded_size(&hdr_size, featstore_v1_BatchImageChunk_fields, &hdr)) {
        fs_error(err, FS_ERR_INTERNAL, "cannot size a chunk message");
        return NULL;
    }
    /* chunk = head || [tag 4, len, data] */
    size_t cap = hdr_size + (data_len ? 1 + varint_size(data_len) : 0);
    if (cap + data_len > INT32_MAX) {
        fs_error(err, FS_ERR_RESOURCE, "a message of %zu bytes is over protobuf's 2 GiB limit", cap + data_len);
        return NULL;
    }
    pb_byte_t *head = malloc(cap);
    if (!head) {
        fs_error(err, FS_ERR_NOMEM, "out of memory for a chunk");
        return NULL;
    }
    pb_ostream_t os = pb_ostream_from_buffer(head, cap);
    bool ok = pb_encode(&os, featstore_v1_BatchImageChunk_fields, &hdr);
    if (ok && data_len) ok = encode_string_head(&os, featstore_v1_BatchImageChunk_data_tag, data_len);
    return chunk_message(head, cap, &os, ok, data, err);
}

/* ---- small files: certificates, keys, the token ------------------------------------ */

#define MAX_SMALL_FILE (1 << 20)

fs_status_t fs_wire_read_file(const char *path, const char *what, char **out, fs_error_t *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return fs_error(err, FS_ERR_IO, "%s '%s': %s", what, path, strerror(errno));
    char *buf = malloc(MAX_SMALL_FILE + 1);
    size_t n = buf ? fread(buf, 1, MAX_SMALL_FILE + 1, f) : 0;
    int failed = ferror(f);
    fclose(f);
    if (!buf) return fs_error(err, FS_ERR_NOMEM, "out of memory reading %s '%s'", what, path);
    if (failed || n == 0 || n > MAX_SMALL_FILE) {
        free(buf);
        return fs_error(err, failed ? FS_ERR_IO : FS_ERR_FORMAT, "%s '%s' is %s", what, path,
                        failed ? "unreadable" : n ? "larger than 1 MiB" : "empty");
    }
    buf[n] = '\0';
    *out = buf;
    return FS_OK;
}

fs_status_t fs_wire_read_pem(const char *path, const char *what, const char *marker, char **out, fs_error_t *err)
{
    fs_status_t st = fs_wire_read_file(path, what, out, err);
    if (st == FS_OK && !strstr(*out, marker)) {
        free(*out);
        *out = NULL;
        return fs_error(err, FS_ERR_FORMAT, "%s '%s' is not PEM: it has no '%s' line", what, path, marker);
    }
    return st;
}

void fs_wire_free_secret(char *text)
{
    if (text) explicit_bzero(text, strlen(text));
    free(text);
}
