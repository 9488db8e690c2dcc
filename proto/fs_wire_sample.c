/* fs_wire_sample.c — the version-1 sampling messages on both gRPC ends (see
 * fs_wire.h): a SampleRequest from and to fs_sample_req_t, a SampleResponse
 * from an fs_sample_result_t and back, and the Stream method's order names.
 *
 * A response comes from the network, so every array it decodes is checked
 * against its block's counts before a result points into it, and an
 * edge_dst the server left out is rebuilt only from offsets that run from
 * 0 to the block's edges. Its own file: this is the field-by-field mapping
 * of the methods of 1.0-1.2, while the arrays go through fs_wire.c's `bytes`
 * helpers and the typed requests are fs_wire_typed.c. */
#include "fs_wire.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
