/* fuzz_grpc.c — libFuzzer harness for the grpc:// messages (proto/
 * featstore.proto through proto/fs_wire.c, fs_wire_sample.c and fs_pb.c):
 * every request the server decodes (server/grpc_server.c) and every
 * response the client decodes (client-lib/client_grpc_*.c), each set up as
 * that end sets it up (bytes fields borrowed from the input where aligned,
 * lists into arrays).
 *
 * Input: byte 0 picks the message; byte 1 cuts the rest into up to four
 * slices of one gRPC byte buffer (as the network delivers it), so fields
 * and borrowed arrays straddle slice boundaries. Checks: the codec's fixed
 * point (fuzz_codec.h), then what the receiver does next — the sampling
 * request's hops and modes (fs_wire_sample_req_from_msg), whole int64
 * arrays, aligned when borrowed (fs_wire_int64s), a sample response's array
 * lengths against its block counts (fs_wire_sample_result), a shard's
 * ShardEdges answer within the trainer's bytes, a ShardRows answer within
 * the caller's rows, a ShardPicks request's int64 lists whole and its
 * answer as the trainer reads it (fs_wire_picks_answer), a ShardFile
 * request's name terminated, each array read end to end (ASan and UBSan
 * watch the reads). */
#include <grpc/grpc.h>
#include <grpc/slice.h>

#include "fs_wire.h"
#include "fuzz_codec.h"

enum { INFO_REQ, SAMPLE_REQ, GATHER_REQ, SAMPLE_GATHER_REQ, SPLIT_REQ, STATS_REQ, SAMPLE_RESP, GATHER_CHUNK,
       SAMPLE_GATHER_CHUNK, INFO_RESP, STATS_RESP, STREAM_REQ, STREAM_CHUNK, SHARD_EDGES_REQ, SHARD_EDGES_RESP,
       SHARD_PICKS_REQ, SHARD_PICKS_RESP, SHARD_ROWS_REQ, SHARD_ROWS_RESP, SHARD_FILE_REQ, SHARD_FILE_RESP, KINDS };

static uint8_t slicing; /* this run's byte 1 */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    grpc_init();
    return 0;
}

/* ---- bytes -> gRPC byte buffer -> pb_decode (fs_wire_decode) ----------------------- */

static fs_status_t decode_bb(const codec_t *c, const uint8_t *p, size_t n, int first, void *msg, void **keep,
                             fs_error_t *err)
{
    grpc_slice s[4];
    size_t k = 0, off = 0, step = 1 + (slicing >> 2);
    int pieces = first ? 1 + (slicing & 3) : 1;
    while (k + 1 < (size_t)pieces && off + step < n) s[k++] = grpc_slice_from_copied_buffer((const char *)p + off, step), off += step;
    s[k++] = grpc_slice_from_copied_buffer((const char *)p + off, n - off);
    grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(s, k);
    for (size_t i = 0; i < k; i++) grpc_slice_unref(s[i]);
    *keep = bb; /* borrowed bytes fields point into its slices */
    return fs_wire_decode(bb, c->type, msg, c->name, err);
}

static void drop_bb(void *keep)
{
    if (keep) grpc_byte_buffer_destroy(keep);
}

static const fuzz_decoder_t bb_decoder = {decode_bb, drop_bb};

/* ---- what the receiver checks next ------------------------------------------------- */

static volatile uint64_t sink; /* keeps the reads below */
static volatile float fsink;

/* Reads an array as its receiver will: int64 ids, or float32 weights. */
static void read_all(const void *data, size_t len, size_t elem)
{
    FUZZ_CHECK(len == 0 || ((uintptr_t)data % elem == 0), "an array of %zu-byte values at %p", elem, data);
    for (size_t i = 0; i < len / elem; i++) {
        if (elem == 8) sink ^= (uint64_t)((const int64_t *)data)[i];
        else fsink += ((const float *)data)[i];
    }
}

/* Ids as the server takes them: whole int64 values, read in place. */
static void check_ids(const fs_wire_buf_t *b, const char *what)
{
    const int64_t *ids;
    int64_t n;
    fs_error_t err = {0};
    fs_status_t st = fs_wire_int64s(b, what, &ids, &n, &err);
    FUZZ_CHECK((st == FS_OK) == (b->len % 8 == 0), "%s: %zu bytes, status %d", what, b->len, st);
    if (st != FS_OK) {
        FUZZ_CHECK_REFUSAL(st, err);
        return;
    }
    FUZZ_CHECK((size_t)n * 8 == b->len, "%s: %lld ids in %zu bytes", what, (long long)n, b->len);
    read_all(ids, b->len, 8);
}

static void check_sample_request(const featstore_v1_SampleRequest *m)
{
    fs_sample_req_t r;
    fs_error_t err = {0};
    fs_status_t st = fs_wire_sample_req_from_msg(m, &r, &err);
    if (st != FS_OK) {
        FUZZ_CHECK_REFUSAL(st, err);
        FUZZ_CHECK(st == FS_ERR_INVALID_ARGUMENT, "status %d", st);
        return;
    }
    FUZZ_CHECK(r.num_hops >= 1 && r.num_hops <= FS_MAX_HOPS && r.num_hops == (int)m->fanouts_count, "%d hops",
               r.num_hops);
    for (int h = 0; h < r.num_hops; h++)
        FUZZ_CHECK(r.fanout[h] == m->fanouts[h] && (unsigned)r.mode[h] < FS_SAMPLE_MODE_COUNT_, "hop %d", h);
}

/* ---- requests ------------------------------------------------------------------------ */

typedef struct {
    fs_wire_buf_t in;     /* decoded */
    fs_wire_bytes_t out;  /* re-encoded */
} bytes_state_t;

static void bytes_free(void *state) { fs_wire_buf_free(&((bytes_state_t *)state)->in); }

/* The server's setup: ids borrowed in place when 8-byte aligned. */
static void borrow_into(pb_callback_t *cb, bytes_state_t *s)
{
    s->in = (fs_wire_buf_t){.flags = FS_WIRE_BORROW, .align = sizeof(int64_t)};
    fs_wire_set_buf(cb, &s->in);
}

static void sample_req_decode(void *msg, void *state) { borrow_into(&((featstore_v1_SampleRequest *)msg)->seeds, state); }
static int sample_req_encode(void *msg, void *state)
{
    bytes_state_t *s = state;
    fs_wire_set_bytes(&((featstore_v1_SampleRequest *)msg)->seeds, &s->out, s->in.data, s->in.len);
    return 0;
}
static void sample_req_check(const void *msg, void *state)
{
    check_sample_request(msg);
    check_ids(&((bytes_state_t *)state)->in, "seeds");
}

static void gather_req_decode(void *msg, void *state) { borrow_into(&((featstore_v1_GatherRequest *)msg)->ids, state); }
static int gather_req_encode(void *msg, void *state)
{
    bytes_state_t *s = state;
    fs_wire_set_bytes(&((featstore_v1_GatherRequest *)msg)->ids, &s->out, s->in.data, s->in.len);
    return 0;
}
static void gather_req_check(const void *msg, void *state)
{
    const featstore_v1_GatherRequest *m = msg;
    FUZZ_CHECK(memchr(m->table, '\0', sizeof m->table) && memchr(m->out_dtype, '\0', sizeof m->out_dtype),
               "strings unterminated");
    check_ids(&((bytes_state_t *)state)->in, "ids");
}

static void sample_gather_req_decode(void *msg, void *state)
{
    borrow_into(&((featstore_v1_SampleGatherRequest *)msg)->sample.seeds, state);
}
static int sample_gather_req_encode(void *msg, void *state)
{
    bytes_state_t *s = state;
    fs_wire_set_bytes(&((featstore_v1_SampleGatherRequest *)msg)->sample.seeds, &s->out, s->in.data, s->in.len);
    return 0;
}
static void sample_gather_req_check(const void *msg, void *state)
{
    const featstore_v1_SampleGatherRequest *m = msg;
    if (!m->has_sample) return; /* refused by the server before anything else */
    check_sample_request(&m->sample);
    check_ids(&((bytes_state_t *)state)->in, "seeds");
}

static void stream_req_decode(void *msg, void *state) { borrow_into(&((featstore_v1_StreamRequest *)msg)->seeds, state); }
static int stream_req_encode(void *msg, void *state)
{
    bytes_state_t *s = state;
    fs_wire_set_bytes(&((featstore_v1_StreamRequest *)msg)->seeds, &s->out, s->in.data, s->in.len);
    return 0;
}
static void stream_req_check(const void *msg, void *state)
{
    const featstore_v1_StreamRequest *m = msg;
    FUZZ_CHECK(memchr(m->table, '\0', sizeof m->table) && memchr(m->labels, '\0', sizeof m->labels) &&
               memchr(m->split, '\0', sizeof m->split) && memchr(m->order, '\0', sizeof m->order) &&
               memchr(m->out_dtype, '\0', sizeof m->out_dtype), "strings unterminated");
    if (m->has_sample) check_sample_request(&m->sample);
    check_ids(&((bytes_state_t *)state)->in, "seeds");
}

/* A shard's ShardEdges request: both lists borrowed, as the server takes them. */
typedef struct {
    bytes_state_t dst, src;
} pairs_state_t;

static void pairs_free(void *state)
{
    pairs_state_t *s = state;
    fs_wire_buf_free(&s->dst.in), fs_wire_buf_free(&s->src.in);
}
static void shard_edges_req_decode(void *msg, void *state)
{
    featstore_v1_ShardEdgesRequest *m = msg;
    pairs_state_t *s = state;
    borrow_into(&m->dst, &s->dst), borrow_into(&m->src, &s->src);
}
static int shard_edges_req_encode(void *msg, void *state)
{
    featstore_v1_ShardEdgesRequest *m = msg;
    pairs_state_t *s = state;
    fs_wire_set_bytes(&m->dst, &s->dst.out, s->dst.in.data, s->dst.in.len);
    fs_wire_set_bytes(&m->src, &s->src.out, s->src.in.data, s->src.in.len);
    return 0;
}
static void shard_edges_req_check(const void *msg, void *state)
{
    (void)msg;
    check_ids(&((pairs_state_t *)state)->dst.in, "dst");
    check_ids(&((pairs_state_t *)state)->src.in, "src");
}

/* ---- responses ------------------------------------------------------------------------ */

/* A ShardEdges answer lands in the trainer's bytes, one per pair asked
 * (fs_shard_client_edges): a fixed buffer, longer answers refused. */
#define EDGES_ASKED 64
typedef struct {
    fs_wire_buf_t in;
    fs_wire_bytes_t out;
    uint8_t mem[EDGES_ASKED];
} edges_state_t;

static void shard_edges_resp_decode(void *msg, void *state)
{
    edges_state_t *s = state;
    s->in = (fs_wire_buf_t){.mem = s->mem, .cap = sizeof s->mem, .flags = FS_WIRE_FIXED};
    fs_wire_set_buf(&((featstore_v1_ShardEdgesResponse *)msg)->is_edge, &s->in);
}
static int shard_edges_resp_encode(void *msg, void *state)
{
    edges_state_t *s = state;
    fs_wire_set_bytes(&((featstore_v1_ShardEdgesResponse *)msg)->is_edge, &s->out, s->in.data, s->in.len);
    return 0;
}
static void shard_edges_resp_check(const void *msg, void *state)
{
    (void)msg;
    const edges_state_t *s = state;
    FUZZ_CHECK(s->in.len <= sizeof s->mem && (s->in.len == 0 || s->in.data == s->mem), "%zu answers at %p",
               s->in.len, s->in.data);
    for (size_t i = 0; i < s->in.len; i++) sink ^= ((const uint8_t *)s->in.data)[i];
}



typedef struct {
    fs_wire_sample_dst_t dst;
    fs_wire_sample_src_t src;
    bytes_state_t data; /* SampleGatherChunk's features */
} sample_state_t;

static void sample_resp_setup(featstore_v1_SampleResponse *m, sample_state_t *s)
{
    fs_wire_sample_response_prepare(m, &s->dst);
}

static void sample_resp_reencode(featstore_v1_SampleResponse *m, sample_state_t *s)
{
    fs_wire_set_bytes(&m->nodes, &s->src.nodes, s->dst.nodes.data, s->dst.nodes.len);
    fs_wire_set_bytes(&m->seed_local, &s->src.seed_local, s->dst.seed_local.data, s->dst.seed_local.len);
    for (int h = 0; h < FS_MAX_HOPS; h++) {
        pb_callback_t *cb[FS_WIRE_BLOCK_ARRAYS] = {&m->blocks[h].dst_offsets, &m->blocks[h].edge_dst,
                                                   &m->blocks[h].edge_src, &m->blocks[h].edge_ids,
                                                   &m->blocks[h].edge_weights};
        for (int k = 0; k < FS_WIRE_BLOCK_ARRAYS; k++)
            fs_wire_set_bytes(cb[k], &s->src.arr[h][k], s->dst.arr[h][k].data, s->dst.arr[h][k].len);
    }
}

/* The client's next step: the arrays against the block counts, then read. */
static void sample_resp_validate(const featstore_v1_SampleResponse *m, sample_state_t *s)
{
    fs_sample_result_t r;
    fs_error_t err = {0};
    fs_status_t st = fs_wire_sample_result(m, &s->dst, &r, &err);
    if (st != FS_OK) {
        FUZZ_CHECK_REFUSAL(st, err);
        return;
    }
    FUZZ_CHECK(r.num_hops >= 1 && r.num_hops <= FS_MAX_HOPS && r.num_nodes == r.block[r.num_hops - 1].num_src,
               "%d hops, %lld nodes", r.num_hops, (long long)r.num_nodes);
    read_all(r.nodes, (size_t)r.num_nodes * 8, 8);
    read_all(r.seed_local, (size_t)r.num_seeds * 8, 8);
    for (int h = 0; h < r.num_hops; h++) {
        const fs_block_t *b = &r.block[h];
        FUZZ_CHECK(b->num_dst >= 0 && b->num_src >= b->num_dst && b->num_edges >= 0, "block %d counts", h);
        read_all(b->dst_offsets, (size_t)(b->num_dst + 1) * 8, 8);
        read_all(b->edge_dst, (size_t)b->num_edges * 8, 8);
        read_all(b->edge_src, (size_t)b->num_edges * 8, 8);
        if (b->edge_ids) read_all(b->edge_ids, (size_t)b->num_edges * 8, 8);
        if (b->edge_weights) read_all(b->edge_weights, (size_t)b->num_edges * 4, 4);
    }
}

static void sample_state_free(void *state)
{
    sample_state_t *s = state;
    fs_wire_sample_dst_free(&s->dst);
    fs_wire_buf_free(&s->data.in);
}

static void sample_resp_decode(void *msg, void *state) { sample_resp_setup(msg, state); }
static int sample_resp_encode(void *msg, void *state)
{
    sample_resp_reencode(msg, state);
    return 0;
}
static void sample_resp_check(const void *msg, void *state) { sample_resp_validate(msg, state); }

static void gather_chunk_decode(void *msg, void *state)
{
    bytes_state_t *s = state;
    fs_wire_set_buf(&((featstore_v1_GatherChunk *)msg)->data, &s->in);
}
static int gather_chunk_encode(void *msg, void *state)
{
    bytes_state_t *s = state;
    fs_wire_set_bytes(&((featstore_v1_GatherChunk *)msg)->data, &s->out, s->in.data, s->in.len);
    return 0;
}

static void sg_chunk_decode(void *msg, void *state)
{
    featstore_v1_SampleGatherChunk *m = msg;
    sample_state_t *s = state;
    sample_resp_setup(&m->sample, s);
    fs_wire_set_buf(&m->features.data, &s->data.in);
}
static int sg_chunk_encode(void *msg, void *state)
{
    featstore_v1_SampleGatherChunk *m = msg;
    sample_state_t *s = state;
    sample_resp_reencode(&m->sample, s);
    fs_wire_set_bytes(&m->features.data, &s->data.out, s->data.in.data, s->data.in.len);
    return 0;
}
static void sg_chunk_check(const void *msg, void *state)
{
    const featstore_v1_SampleGatherChunk *m = msg;
    if (m->has_sample) sample_resp_validate(&m->sample, state);
}

typedef struct {
    sample_state_t sample;
    bytes_state_t labels;
} stream_state_t;

static void stream_state_free(void *state)
{
    stream_state_t *s = state;
    sample_state_free(&s->sample);
    fs_wire_buf_free(&s->labels.in);
}
static void stream_chunk_decode(void *msg, void *state)
{
    featstore_v1_StreamChunk *m = msg;
    stream_state_t *s = state;
    sample_resp_setup(&m->sample, &s->sample);
    fs_wire_set_buf(&m->features.data, &s->sample.data.in);
    fs_wire_set_buf(&m->labels, &s->labels.in);
}
static int stream_chunk_encode(void *msg, void *state)
{
    featstore_v1_StreamChunk *m = msg;
    stream_state_t *s = state;
    sample_resp_reencode(&m->sample, &s->sample);
    fs_wire_set_bytes(&m->features.data, &s->sample.data.out, s->sample.data.in.data, s->sample.data.in.len);
    fs_wire_set_bytes(&m->labels, &s->labels.out, s->labels.in.data, s->labels.in.len);
    return 0;
}
/* The client's next steps: edge_dst rebuilt from the offsets where left out,
 * the sample as SampleGather's, the labels as int64s. */
static void stream_chunk_check(const void *msg, void *state)
{
    const featstore_v1_StreamChunk *m = msg;
    stream_state_t *s = state;
    fs_error_t err = {0};
    fs_status_t st = m->has_sample ? fs_wire_sample_fill_edge_dst(&m->sample, &s->sample.dst, &err) : FS_OK;
    if (st != FS_OK) FUZZ_CHECK_REFUSAL(st, err);
    else if (m->has_sample) sample_resp_validate(&m->sample, &s->sample);
    check_ids(&s->labels.in, "labels");
}

static void stats_decode(void *msg, void *state)
{
    fs_wire_set_buf(&((featstore_v1_StatsResponse *)msg)->prometheus_text, &((bytes_state_t *)state)->in);
}
static int stats_encode(void *msg, void *state)
{
    bytes_state_t *s = state;
    fs_wire_set_bytes(&((featstore_v1_StatsResponse *)msg)->prometheus_text, &s->out, s->in.data, s->in.len);
    return 0;
}

/* ---- a shard's other messages (owner-routed sampling) ------------------------------- */

/* ShardPicks: the request's five int64 lists, borrowed as the shard takes
 * them; the answer's three, into the trainer's aligned buffers. */
#define PICKS_LISTS 5
static const char *const picks_list[PICKS_LISTS] = {"ids", "time", "batch", "excl_at", "excl_src"};
typedef struct {
    bytes_state_t b[PICKS_LISTS];
} lists_state_t;

static pb_callback_t *picks_req_field(featstore_v1_ShardPicksRequest *m, int i)
{
    pb_callback_t *f[PICKS_LISTS] = {&m->ids, &m->time, &m->batch, &m->excl_at, &m->excl_src};
    return f[i];
}
static pb_callback_t *picks_resp_field(featstore_v1_ShardPicksResponse *m, int i)
{
    pb_callback_t *f[3] = {&m->counts, &m->sources, &m->edge_ids};
    return f[i];
}
static void lists_free(void *state)
{
    for (int i = 0; i < PICKS_LISTS; i++) fs_wire_buf_free(&((lists_state_t *)state)->b[i].in);
}
static void shard_picks_req_decode(void *msg, void *state)
{
    for (int i = 0; i < PICKS_LISTS; i++) borrow_into(picks_req_field(msg, i), &((lists_state_t *)state)->b[i]);
}
static int shard_picks_req_encode(void *msg, void *state)
{
    lists_state_t *s = state;
    for (int i = 0; i < PICKS_LISTS; i++)
        fs_wire_set_bytes(picks_req_field(msg, i), &s->b[i].out, s->b[i].in.data, s->b[i].in.len);
    return 0;
}
static void shard_picks_req_check(const void *msg, void *state)
{
    (void)msg;
    for (int i = 0; i < PICKS_LISTS; i++) check_ids(&((lists_state_t *)state)->b[i].in, picks_list[i]);
}
static void shard_picks_resp_decode(void *msg, void *state)
{
    lists_state_t *s = state;
    for (int i = 0; i < 3; i++) {
        s->b[i].in = (fs_wire_buf_t){.align = sizeof(int64_t)};
        fs_wire_set_buf(picks_resp_field(msg, i), &s->b[i].in);
    }
}
static int shard_picks_resp_encode(void *msg, void *state)
{
    lists_state_t *s = state;
    for (int i = 0; i < 3; i++)
        fs_wire_set_bytes(picks_resp_field(msg, i), &s->b[i].out, s->b[i].in.data, s->b[i].in.len);
    return 0;
}
/* The trainer's reading of the answer (fs_wire_picks_answer) for as many
 * rows as the counts end varints, one fewer and one more, with and
 * without edge ids: refused with a message, or offsets that ascend to the
 * sources' count, every source read. */
static void shard_picks_resp_check(const void *msg, void *state)
{
    const featstore_v1_ShardPicksResponse *m = msg;
    lists_state_t *s = state;
    const fs_wire_buf_t *counts = &s->b[0].in;
    int64_t ends = 0;
    for (size_t i = 0; i < counts->len; i++) ends += !(((const uint8_t *)counts->data)[i] & 0x80);
    for (int64_t n = ends > 0 ? ends - 1 : 0; n <= ends + 1; n++)
        for (int want_ids = 0; want_ids < 2; want_ids++) {
            fs_wire_picks_buf_t b = {0};
            fs_typed_picks_t out;
            fs_error_t err = {0};
            fs_status_t st = fs_wire_picks_answer(counts, &s->b[1].in, m->wide_sources, &s->b[2].in, want_ids, n, &b,
                                                  &out, &err);
            if (st != FS_OK) {
                FUZZ_CHECK_REFUSAL(st, err);
                fs_wire_picks_buf_free(&b);
                continue;
            }
            FUZZ_CHECK(n == ends && out.n == n && out.off[0] == 0, "%lld rows read of %lld ends", (long long)n,
                       (long long)ends);
            for (int64_t i = 0; i < n; i++) FUZZ_CHECK(out.off[i + 1] >= out.off[i], "offsets fall at row %lld", (long long)i);
            size_t width = m->wide_sources ? 8 : 4;
            FUZZ_CHECK((size_t)out.off[n] * width == s->b[1].in.len, "%lld picks in %zu bytes of sources",
                       (long long)out.off[n], s->b[1].in.len);
            read_all(out.src, (size_t)out.off[n] * sizeof *out.src, 8);
            if (want_ids) read_all(out.eid, (size_t)out.off[n] * sizeof *out.eid, 8);
            fs_wire_picks_buf_free(&b);
        }
}

/* ShardRows: the request's ids borrowed; the answer into the caller's rows,
 * a fixed buffer (fs_shard_client_rows), longer answers refused. */
static void shard_rows_req_decode(void *msg, void *state)
{
    borrow_into(&((featstore_v1_ShardRowsRequest *)msg)->ids, state);
}
static int shard_rows_req_encode(void *msg, void *state)
{
    bytes_state_t *s = state;
    fs_wire_set_bytes(&((featstore_v1_ShardRowsRequest *)msg)->ids, &s->out, s->in.data, s->in.len);
    return 0;
}
static void shard_rows_req_check(const void *msg, void *state)
{
    const featstore_v1_ShardRowsRequest *m = msg;
    FUZZ_CHECK(memchr(m->table, '\0', sizeof m->table) != NULL, "table unterminated");
    check_ids(&((bytes_state_t *)state)->in, "ids");
}
static void shard_rows_resp_decode(void *msg, void *state)
{
    edges_state_t *s = state; /* the same fixed buffer */
    s->in = (fs_wire_buf_t){.mem = s->mem, .cap = sizeof s->mem, .flags = FS_WIRE_FIXED};
    fs_wire_set_buf(&((featstore_v1_ShardRowsResponse *)msg)->rows, &s->in);
}
static int shard_rows_resp_encode(void *msg, void *state)
{
    edges_state_t *s = state;
    fs_wire_set_bytes(&((featstore_v1_ShardRowsResponse *)msg)->rows, &s->out, s->in.data, s->in.len);
    return 0;
}

/* ShardFile: the name a shard checks against its allowlist, terminated;
 * the answer's piece, read end to end. */
static void shard_file_req_check(const void *msg, void *state)
{
    (void)state;
    const featstore_v1_ShardFileRequest *m = msg;
    FUZZ_CHECK(memchr(m->name, '\0', sizeof m->name) != NULL, "name unterminated");
}
static void shard_file_resp_decode(void *msg, void *state)
{
    bytes_state_t *s = state;
    s->in = (fs_wire_buf_t){0};
    fs_wire_set_buf(&((featstore_v1_ShardFileResponse *)msg)->data, &s->in);
}
static int shard_file_resp_encode(void *msg, void *state)
{
    bytes_state_t *s = state;
    fs_wire_set_bytes(&((featstore_v1_ShardFileResponse *)msg)->data, &s->out, s->in.data, s->in.len);
    return 0;
}
static void shard_file_resp_check(const void *msg, void *state)
{
    (void)msg;
    const bytes_state_t *s = state;
    for (size_t i = 0; i < s->in.len; i++) sink ^= ((const uint8_t *)s->in.data)[i];
}

#define CODEC(T, state_t, prefix, free_fn, check_fn) \
    {#T, T##_fields, sizeof(T), sizeof(state_t), prefix##_decode, prefix##_encode, free_fn, check_fn, NULL}

static const codec_t codecs[KINDS] = {
    [INFO_REQ] = FUZZ_STATIC_CODEC(featstore_v1_InfoRequest, NULL),
    [SAMPLE_REQ] = CODEC(featstore_v1_SampleRequest, bytes_state_t, sample_req, bytes_free, sample_req_check),
    [GATHER_REQ] = CODEC(featstore_v1_GatherRequest, bytes_state_t, gather_req, bytes_free, gather_req_check),
    [SAMPLE_GATHER_REQ] = CODEC(featstore_v1_SampleGatherRequest, bytes_state_t, sample_gather_req, bytes_free,
                                sample_gather_req_check),
    [SPLIT_REQ] = FUZZ_STATIC_CODEC(featstore_v1_SplitRequest, NULL),
    [STATS_REQ] = FUZZ_STATIC_CODEC(featstore_v1_StatsRequest, NULL),
    [SAMPLE_RESP] = CODEC(featstore_v1_SampleResponse, sample_state_t, sample_resp, sample_state_free,
                          sample_resp_check),
    [GATHER_CHUNK] = CODEC(featstore_v1_GatherChunk, bytes_state_t, gather_chunk, bytes_free, NULL),
    [SAMPLE_GATHER_CHUNK] = CODEC(featstore_v1_SampleGatherChunk, sample_state_t, sg_chunk, sample_state_free,
                                  sg_chunk_check),
    [INFO_RESP] = FUZZ_INFO_CODEC,
    [STATS_RESP] = CODEC(featstore_v1_StatsResponse, bytes_state_t, stats, bytes_free, NULL),
    [STREAM_REQ] = CODEC(featstore_v1_StreamRequest, bytes_state_t, stream_req, bytes_free, stream_req_check),
    [STREAM_CHUNK] = CODEC(featstore_v1_StreamChunk, stream_state_t, stream_chunk, stream_state_free,
                           stream_chunk_check),
    [SHARD_EDGES_REQ] = CODEC(featstore_v1_ShardEdgesRequest, pairs_state_t, shard_edges_req, pairs_free,
                              shard_edges_req_check),
    [SHARD_EDGES_RESP] = CODEC(featstore_v1_ShardEdgesResponse, edges_state_t, shard_edges_resp, NULL,
                               shard_edges_resp_check),
    [SHARD_PICKS_REQ] = CODEC(featstore_v1_ShardPicksRequest, lists_state_t, shard_picks_req, lists_free,
                              shard_picks_req_check),
    [SHARD_PICKS_RESP] = CODEC(featstore_v1_ShardPicksResponse, lists_state_t, shard_picks_resp, lists_free,
                               shard_picks_resp_check),
    [SHARD_ROWS_REQ] = CODEC(featstore_v1_ShardRowsRequest, bytes_state_t, shard_rows_req, bytes_free,
                             shard_rows_req_check),
    [SHARD_ROWS_RESP] = CODEC(featstore_v1_ShardRowsResponse, edges_state_t, shard_rows_resp, NULL,
                              shard_edges_resp_check),
    [SHARD_FILE_REQ] = FUZZ_STATIC_CODEC(featstore_v1_ShardFileRequest, shard_file_req_check),
    [SHARD_FILE_RESP] = CODEC(featstore_v1_ShardFileResponse, bytes_state_t, shard_file_resp, bytes_free,
                              shard_file_resp_check),
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_bytes_t in = {data, size};
    int kind = fuzz_take_u8(&in) % KINDS;
    slicing = fuzz_take_u8(&in);
    fuzz_codec_run(&codecs[kind], &bb_decoder, in.p, in.n);
    return 0;
}
