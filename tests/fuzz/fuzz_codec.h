/* fuzz_codec.h — the message fixed-point check fuzz_local and fuzz_grpc
 * share. A codec says how a message's callback fields (lists, bytes) are
 * decoded into a state and encoded back from it, the way the receiving end
 * does it; a decoder says how bytes reach pb_decode (a plain buffer for
 * unix:// payloads, gRPC byte buffers of several slices for grpc://).
 *
 * fuzz_codec_run: bytes that decode must be a fixed point of the codec —
 * encode(decode(encode(decode(x)))) = encode(decode(x)) — so what the
 * receiver understood is exactly what the sender could have meant; bytes
 * that do not decode are FS_ERR_FORMAT with a message. */
#ifndef FS_FUZZ_CODEC_H
#define FS_FUZZ_CODEC_H

#include "fs_info.h"
#include "fs_pb.h"
#include "fuzz_common.h"

typedef struct {
    const char *name;
    const pb_msgdesc_t *type;
    size_t size, state_size;
    void (*decode_setup)(void *msg, void *state); /* NULL: no callback fields */
    int (*encode_setup)(void *msg, void *state);  /* 0, or -1 when a decoded message cannot be re-encoded */
    void (*state_free)(void *state);
    void (*check)(const void *msg, void *state);  /* what the receiver checks next, on a decoded message */
} codec_t;

#define FUZZ_STATIC_CODEC(T, check_fn) {#T, T##_fields, sizeof(T), 0, NULL, NULL, NULL, check_fn}

typedef struct {
    /* first: the fuzzer's own bytes (a decoder may cut them into pieces);
     * *keep: whatever borrowed data must outlive the decoded message */
    fs_status_t (*decode)(const codec_t *c, const uint8_t *p, size_t n, int first, void *msg, void **keep,
                          fs_error_t *err);
    void (*drop)(void *keep);
} fuzz_decoder_t;

typedef struct {
    void *msg, *state, *keep;
} fuzz_decoded_t;

static inline fs_status_t fuzz_decode(const codec_t *c, const fuzz_decoder_t *d, const uint8_t *p, size_t n, int first,
                               fuzz_decoded_t *out, fs_error_t *err)
{
    out->msg = calloc(1, c->size); /* all zero = every message's _init_zero */
    out->state = calloc(1, c->state_size ? c->state_size : 1);
    out->keep = NULL;
    if (!out->msg || !out->state) abort();
    if (c->decode_setup) c->decode_setup(out->msg, out->state);
    return d->decode(c, p, n, first, out->msg, &out->keep, err);
}

static inline void fuzz_release(const codec_t *c, const fuzz_decoder_t *d, fuzz_decoded_t *m)
{
    if (c->state_free) c->state_free(m->state);
    if (d->drop) d->drop(m->keep);
    free(m->state), free(m->msg);
}

static inline void fuzz_encode(const codec_t *c, fuzz_decoded_t *m, void **buf, size_t *len)
{
    fs_error_t err = {0};
    if (c->encode_setup && c->encode_setup(m->msg, m->state) != 0) abort(); /* only out of memory */
    FUZZ_CHECK(fs_pb_encode_alloc(c->type, m->msg, c->name, buf, len, &err) == FS_OK,
               "%s: a decoded message does not encode: %s", c->name, err.msg);
}

static inline void fuzz_codec_run(const codec_t *c, const fuzz_decoder_t *d, const uint8_t *p, size_t n)
{
    fuzz_decoded_t first, second;
    fs_error_t err = {0};
    fs_status_t st = fuzz_decode(c, d, p, n, 1, &first, &err);
    if (st != FS_OK) {
        FUZZ_CHECK_REFUSAL(st, err);
        FUZZ_CHECK(st == FS_ERR_FORMAT, "%s: status %d", c->name, st);
        fuzz_release(c, d, &first);
        return;
    }
    if (c->check) c->check(first.msg, first.state);
    void *enc1, *enc2;
    size_t len1, len2;
    fuzz_encode(c, &first, &enc1, &len1);
    st = fuzz_decode(c, d, enc1, len1, 0, &second, &err);
    FUZZ_CHECK(st == FS_OK, "%s: our own encoding does not decode: %s", c->name, err.msg);
    fuzz_encode(c, &second, &enc2, &len2);
    FUZZ_CHECK(len1 == len2 && memcmp(enc1, enc2, len1) == 0,
               "%s: encode(decode(encode(m))) != encode(m) (%zu, %zu bytes)", c->name, len1, len2);
    free(enc1), free(enc2);
    fuzz_release(c, d, &first), fuzz_release(c, d, &second);
}

/* ---- lists into arrays (both transports' list fields) ------------------------------ */

typedef struct {
    fs_pb_array_t a[4];
    fs_pb_list_t l[4];
} fuzz_lists_t;

static inline void fuzz_lists_free(void *state)
{
    fuzz_lists_t *s = state;
    for (int i = 0; i < 4; i++) free(s->a[i].items);
}

/* ---- InfoResponse: into an fs_info_t (what a client returns) and back out
 * of it as a server encodes its own (proto/fs_pb.c) ---------------------------------- */

typedef struct {
    fs_pb_info_in_t in;
    fs_info_t *info;
    fs_pb_info_out_t out;
} fuzz_info_state_t;

static inline void fuzz_info_decode(void *msg, void *state)
{
    fuzz_info_state_t *s = state;
    fs_error_t err;
    if (fs_pb_info_prepare_decode(msg, &s->in, &err) != FS_OK) abort();
}

static inline int fuzz_info_encode(void *msg, void *state)
{
    fuzz_info_state_t *s = state;
    fs_error_t err;
    if (fs_pb_info_take(msg, &s->in, &s->info, &err) != FS_OK) return -1;
    fs_pb_info_prepare_encode(s->info, msg, &s->out);
    return 0;
}

static inline void fuzz_info_free(void *state)
{
    fuzz_info_state_t *s = state;
    fs_pb_info_abandon(&s->in);
    fs_info_free(s->info);
}

#define FUZZ_INFO_CODEC                                                                                     \
    {"featstore_v1_InfoResponse", featstore_v1_InfoResponse_fields, sizeof(featstore_v1_InfoResponse),   \
     sizeof(fuzz_info_state_t), fuzz_info_decode, fuzz_info_encode, fuzz_info_free, NULL}

#endif
