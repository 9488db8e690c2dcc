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
    /* NULL, or what the receiver does with a message that decoded before it
     * counts as accepted (fs_pb_info_take's checks): FS_ERR_FORMAT refuses
     * the bytes like a failed decode */
    fs_status_t (*accept)(void *msg, void *state, fs_error_t *err);
} codec_t;

#define FUZZ_STATIC_CODEC(T, check_fn) {#T, T##_fields, sizeof(T), 0, NULL, NULL, NULL, check_fn, NULL}

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
    fs_status_t st = d->decode(c, p, n, first, out->msg, &out->keep, err);
    if (st == FS_OK && c->accept) st = c->accept(out->msg, out->state, err);
    return st;
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
 * of it as a server encodes its own (proto/fs_pb.c). Taking the info checks
 * the graph's types (indices in range, names present): a refusal there is
 * a refusal of the bytes, and what is taken must encode back the same. ------ */

typedef struct {
    fs_pb_info_in_t in;
    fs_info_t *info;
    fs_pb_info_out_t out;
} fuzz_info_state_t;

/* What a client may rely on in an info it was given: every type's names
 * there, every index in range (the reads below touch each). */
static inline void fuzz_info_check(const fs_info_t *info)
{
    size_t chars = 0;
    for (size_t i = 0; i < info->num_node_types; i++) {
        const fs_node_type_info_t *t = &info->node_types[i];
        FUZZ_CHECK(t->name && t->name[0] && t->count >= 0, "node type %zu", i);
        for (size_t k = 0; k < t->num_tables; k++) chars += strlen(t->tables[k].name);
        for (size_t k = 0; k < t->num_splits; k++) chars += strlen(t->splits[k]);
    }
    for (size_t i = 0; i < info->num_edge_types; i++) {
        const fs_edge_type_info_t *e = &info->edge_types[i];
        FUZZ_CHECK(e->src[0] && e->rel[0] && e->dst[0] && e->num_edges >= 0, "edge type %zu", i);
        FUZZ_CHECK(e->reverse >= -1 && e->reverse < (int)info->num_edge_types, "edge type %zu: reverse %d", i,
                   e->reverse);
        if (e->reverse >= 0) chars += strlen(info->edge_types[e->reverse].rel);
        for (size_t k = 0; k < e->num_tables; k++) chars += strlen(e->tables[k].name);
    }
    for (size_t i = 0; i < info->num_link_splits; i++) {
        const fs_link_split_info_t *l = &info->link_splits[i];
        FUZZ_CHECK(l->name[0] && l->edge_type >= 0 && (size_t)l->edge_type < info->num_edge_types && l->count >= 0,
                   "link split %zu", i);
        chars += strlen(info->edge_types[l->edge_type].src);
    }
    (void)chars;
}

static inline void fuzz_info_decode(void *msg, void *state)
{
    fuzz_info_state_t *s = state;
    fs_error_t err;
    if (fs_pb_info_prepare_decode(msg, &s->in, &err) != FS_OK) abort();
}

static inline fs_status_t fuzz_info_take(void *msg, void *state, fs_error_t *err)
{
    fuzz_info_state_t *s = state;
    fs_status_t st = fs_pb_info_take(msg, &s->in, &s->info, err);
    if (st == FS_OK) fuzz_info_check(s->info);
    return st;
}

static inline int fuzz_info_encode(void *msg, void *state)
{
    fuzz_info_state_t *s = state;
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
     sizeof(fuzz_info_state_t), fuzz_info_decode, fuzz_info_encode, fuzz_info_free, NULL, fuzz_info_take}

#endif
