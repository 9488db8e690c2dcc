/* fs_wire.c — nanopb helpers shared by both ends of the gRPC transport (see
 * fs_wire.h): channel arguments and status codes, arrays in `bytes`
 * fields, the slice stream, whole messages and the chunk messages that
 * carry feature rows and typed batch images, and the small files both ends
 * read. The sampling messages are fs_wire_sample.c, the typed requests
 * fs_wire_typed.c: both build on the array helpers here.
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
    case FS_ERR_IO: return GRPC_STATUS_DATA_LOSS; /* a read the server could not make (a disk table: design.md) */
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

/* -- batch images (BatchImageChunk, the typed methods' answer) -- */

grpc_byte_buffer *fs_wire_encode_data(const pb_msgdesc_t *fields, const void *msg, uint32_t data_tag, grpc_slice data,
                                     fs_error_t *err)
{
    size_t data_len = GRPC_SLICE_LENGTH(data), msg_size;
    if (!pb_get_encoded_size(&msg_size, fields, msg)) {
        fs_error(err, FS_ERR_INTERNAL, "cannot size a message");
        return NULL;
    }
    /* message = head || [tag data_tag, len, data] */
    size_t cap = msg_size + (data_len ? varint_size((uint64_t)data_tag << 3 | PB_WT_STRING) + varint_size(data_len) : 0);
    if (cap + data_len > INT32_MAX) {
        fs_error(err, FS_ERR_RESOURCE, "a message of %zu bytes is over protobuf's 2 GiB limit", cap + data_len);
        return NULL;
    }
    pb_byte_t *head = malloc(cap ? cap : 1);
    if (!head) {
        fs_error(err, FS_ERR_NOMEM, "out of memory for a message");
        return NULL;
    }
    pb_ostream_t os = pb_ostream_from_buffer(head, cap);
    bool ok = pb_encode(&os, fields, msg);
    if (ok && data_len) ok = encode_string_head(&os, data_tag, data_len);
    return chunk_message(head, cap, &os, ok, data, err);
}

grpc_byte_buffer *fs_wire_image_chunk(uint64_t total, uint64_t offset, grpc_slice data, fs_error_t *err)
{
    featstore_v1_BatchImageChunk hdr = featstore_v1_BatchImageChunk_init_zero;
    hdr.api_version = FS_WIRE_API_VERSION_TYPED;
    hdr.total_bytes = total, hdr.offset = offset;
    return fs_wire_encode_data(featstore_v1_BatchImageChunk_fields, &hdr, featstore_v1_BatchImageChunk_data_tag, data,
                               err);
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
