/* fs_shard_client.c — ShardPicks to one shard (fs_shard_client.h says what
 * and why): the ids sent as one bytes field, the answer's counts and
 * sources read back into the connection's buffers and checked whole
 * (proto/fs_wire_picks.c); ShardRows and ShardEdges answers land in the
 * caller's memory, their lengths checked. */
#include "fs_shard_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "featstore.pb.h"
#include "fs_unary.h"
#include "fs_wire.h"

struct fs_shard_client {
    char addr[256];
    char who[272];
    int timeout_ms;
    int64_t revision;
    grpc_channel *channel;
    grpc_completion_queue *cq;
    fs_wire_buf_t counts, src, eid;  /* the last answer's fields */
    fs_wire_picks_buf_t picks;       /* and its offsets and sources, read back */
};

fs_status_t fs_shard_client_open(const char *addr, int timeout_ms, fs_shard_client_t **out, fs_error_t *err)
{
    *out = NULL;
    if (!addr || !strchr(addr, ':') || strlen(addr) >= sizeof ((fs_shard_client_t *)0)->addr)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "shard: the address must be host:port (got '%s')",
                        addr ? addr : "(null)");
    if (timeout_ms <= 0) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "shard %s: the timeout must be positive", addr);
    fs_shard_client_t *c = calloc(1, sizeof *c);
    if (!c) return fs_error(err, FS_ERR_NOMEM, "shard %s: out of memory", addr);
    snprintf(c->addr, sizeof c->addr, "%s", addr);
    snprintf(c->who, sizeof c->who, "shard %s", addr);
    c->timeout_ms = timeout_ms;
    if (fs_unary_open(addr, &c->channel, &c->cq)) {
        free(c);
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "shard %s: not a valid address", addr);
    }
    *out = c;
    return FS_OK;
}

void fs_shard_client_set_revision(fs_shard_client_t *c, int64_t revision)
{
    c->revision = revision;
}

void fs_shard_client_close(fs_shard_client_t *c)
{
    if (!c) return;
    fs_unary_close(c->channel, c->cq);
    fs_wire_buf_free(&c->counts), fs_wire_buf_free(&c->src), fs_wire_buf_free(&c->eid);
    fs_wire_picks_buf_free(&c->picks);
    free(c);
}

fs_status_t fs_shard_client_picks(fs_shard_client_t *c, const fs_typed_picks_req_t *q, const int64_t *ids, int64_t n,
                                  fs_typed_picks_t *out, fs_error_t *err)
{
    featstore_v1_ShardPicksRequest req = {.api_version = FS_WIRE_API_VERSION_TYPED, .hop = q->hop,
                                          .edge_type = q->etype, .fanout = q->fanout,
                                          .mode = (featstore_v1_SampleMode)q->mode, .seed = q->seed,
                                          .want_edge_ids = q->want_edge_ids != 0, .map_revision = c->revision};
    fs_wire_bytes_t idb, tb, bb, xa, xs;
    fs_wire_set_bytes(&req.ids, &idb, ids, (size_t)n * sizeof *ids);
    req.temporal = (featstore_v1_Temporal)q->temporal, req.strict = q->strict != 0, req.window = q->window;
    req.disjoint = q->disjoint != 0;
    if (q->time) fs_wire_set_bytes(&req.time, &tb, q->time, (size_t)n * sizeof *q->time);
    if (q->batch) fs_wire_set_bytes(&req.batch, &bb, q->batch, (size_t)n * sizeof *q->batch);
    if (q->num_excl) {
        fs_wire_set_bytes(&req.excl_at, &xa, q->excl_at, (size_t)q->num_excl * sizeof *q->excl_at);
        fs_wire_set_bytes(&req.excl_src, &xs, q->excl_src, (size_t)q->num_excl * sizeof *q->excl_src);
    }
    featstore_v1_ShardPicksResponse resp = featstore_v1_ShardPicksResponse_init_zero;
    c->src.align = c->eid.align = sizeof(int64_t);
    fs_wire_set_buf(&resp.counts, &c->counts);
    fs_wire_set_buf(&resp.sources, &c->src);
    fs_wire_set_buf(&resp.edge_ids, &c->eid);
    c->counts.len = c->src.len = c->eid.len = 0;
    fs_status_t st = fs_unary(c->channel, c->cq, c->who, FS_WIRE_METHOD_SHARD_PICKS, c->timeout_ms,
                              featstore_v1_ShardPicksRequest_fields, &req, featstore_v1_ShardPicksResponse_fields,
                              &resp, err);
    if (st != FS_OK) return st;
    st = fs_wire_picks_answer(&c->counts, &c->src, resp.wide_sources, &c->eid, q->want_edge_ids, n, &c->picks, out,
                              err);
    if (st != FS_OK) fs_error_prefix(err, "%s: ShardPicks", c->who);
    return st;
}

fs_status_t fs_shard_client_rows(fs_shard_client_t *c, int t, const char *table, const int64_t *ids, int64_t n,
                                 size_t row_bytes, void *out, fs_error_t *err)
{
    featstore_v1_ShardRowsRequest req = {.api_version = FS_WIRE_API_VERSION_TYPED, .node_type = t,
                                         .map_revision = c->revision};
    if (strlen(table) >= sizeof req.table)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s: ShardRows: table name '%s' too long", c->who, table);
    snprintf(req.table, sizeof req.table, "%s", table);
    fs_wire_bytes_t idb;
    fs_wire_set_bytes(&req.ids, &idb, ids, (size_t)n * sizeof *ids);
    featstore_v1_ShardRowsResponse resp = featstore_v1_ShardRowsResponse_init_zero;
    /* the rows land in the caller's memory: a borrowed buffer of exactly their size */
    fs_wire_buf_t rows = {.mem = out, .cap = (size_t)n * row_bytes, .flags = FS_WIRE_FIXED};
    fs_wire_set_buf(&resp.rows, &rows);
    fs_status_t st = fs_unary(c->channel, c->cq, c->who, FS_WIRE_METHOD_SHARD_ROWS, c->timeout_ms,
                              featstore_v1_ShardRowsRequest_fields, &req, featstore_v1_ShardRowsResponse_fields, &resp,
                              err);
    if (st == FS_OK && rows.len != (size_t)n * row_bytes)
        st = fs_error(err, FS_ERR_FORMAT, "%s: ShardRows: %zu bytes for %lld rows of %zu", c->who, rows.len,
                      (long long)n, row_bytes);
    return st;
}

fs_status_t fs_shard_client_edges(fs_shard_client_t *c, int etype, const int64_t *dst, const int64_t *src, int64_t n,
                                  uint8_t *is_edge, fs_error_t *err)
{
    featstore_v1_ShardEdgesRequest req = {.api_version = FS_WIRE_API_VERSION_TYPED, .edge_type = etype,
                                          .map_revision = c->revision};
    fs_wire_bytes_t db, sb;
    fs_wire_set_bytes(&req.dst, &db, dst, (size_t)n * sizeof *dst);
    fs_wire_set_bytes(&req.src, &sb, src, (size_t)n * sizeof *src);
    featstore_v1_ShardEdgesResponse resp = featstore_v1_ShardEdgesResponse_init_zero;
    fs_wire_buf_t ans = {.mem = is_edge, .cap = (size_t)n, .flags = FS_WIRE_FIXED}; /* into the caller's bytes */
    fs_wire_set_buf(&resp.is_edge, &ans);
    fs_status_t st = fs_unary(c->channel, c->cq, c->who, FS_WIRE_METHOD_SHARD_EDGES, c->timeout_ms,
                              featstore_v1_ShardEdgesRequest_fields, &req, featstore_v1_ShardEdgesResponse_fields,
                              &resp, err);
    if (st == FS_OK && ans.len != (size_t)n)
        st = fs_error(err, FS_ERR_FORMAT, "%s: ShardEdges: %zu answers for %lld pairs", c->who, ans.len, (long long)n);
    for (int64_t i = 0; st == FS_OK && i < n; i++)
        if (is_edge[i] > 1)
            st = fs_error(err, FS_ERR_FORMAT, "%s: ShardEdges: answer %lld is %d, not 0 or 1", c->who, (long long)i,
                          is_edge[i]);
    return st;
}

fs_status_t fs_shard_client_file(fs_shard_client_t *c, const char *name, int64_t max_bytes, char **data, int64_t *len,
                                 fs_error_t *err)
{
    *data = NULL, *len = 0;
    featstore_v1_ShardFileRequest req = {.api_version = FS_WIRE_API_VERSION_TYPED, .max_bytes = FS_WIRE_SHARD_FILE_CHUNK};
    if (strlen(name) >= sizeof req.name)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s: ShardFile: name '%s' too long", c->who, name);
    snprintf(req.name, sizeof req.name, "%s", name);
    char *buf = NULL;
    int64_t size = -1;
    fs_status_t st = FS_OK;
    while (st == FS_OK && (size < 0 || req.offset < size)) {
        featstore_v1_ShardFileResponse resp = featstore_v1_ShardFileResponse_init_zero;
        fs_wire_buf_t piece = {0};
        fs_wire_set_buf(&resp.data, &piece);
        st = fs_unary(c->channel, c->cq, c->who, FS_WIRE_METHOD_SHARD_FILE, c->timeout_ms,
                      featstore_v1_ShardFileRequest_fields, &req, featstore_v1_ShardFileResponse_fields, &resp, err);
        if (st == FS_OK && size < 0) { /* the first piece says how big it is */
            size = resp.size;
            if (size < 0 || size > max_bytes)
                st = fs_error(err, FS_ERR_RESOURCE, "%s: ShardFile %s: %lld bytes, more than the %lld expected",
                              c->who, name, (long long)size, (long long)max_bytes);
            else if (!(buf = malloc((size_t)size + 1)))
                st = fs_error(err, FS_ERR_NOMEM, "%s: ShardFile %s: out of memory", c->who, name);
        }
        if (st == FS_OK && (resp.size != size || piece.len == 0 || req.offset + (int64_t)piece.len > size) &&
            req.offset < size)
            st = fs_error(err, FS_ERR_FORMAT, "%s: ShardFile %s: a piece of %zu bytes at %lld of %lld (the file "
                          "changed while read?)", c->who, name, piece.len, (long long)req.offset, (long long)size);
        if (st == FS_OK && piece.len) memcpy(buf + req.offset, piece.data, piece.len);
        req.offset += (int64_t)piece.len;
        fs_wire_buf_free(&piece);
    }
    if (st != FS_OK) {
        free(buf);
        return st;
    }
    buf[size] = 0;
    *data = buf, *len = size;
    return FS_OK;
}

fs_status_t fs_shard_client_stats(fs_shard_client_t *c, char **text, fs_error_t *err)
{
    featstore_v1_StatsRequest req = {.api_version = FS_WIRE_API_VERSION};
    featstore_v1_StatsResponse resp = featstore_v1_StatsResponse_init_zero;
    fs_wire_buf_t buf = {0};
    fs_wire_set_buf(&resp.prometheus_text, &buf);
    *text = NULL;
    fs_status_t st = fs_unary(c->channel, c->cq, c->who, FS_WIRE_METHOD_STATS, c->timeout_ms,
                              featstore_v1_StatsRequest_fields, &req, featstore_v1_StatsResponse_fields, &resp, err);
    if (st == FS_OK && !(*text = malloc(buf.len + 1))) st = fs_error(err, FS_ERR_NOMEM, "%s: out of memory", c->who);
    if (st == FS_OK) {
        if (buf.len) memcpy(*text, buf.data, buf.len);
        (*text)[buf.len] = 0;
    }
    fs_wire_buf_free(&buf);
    return st;
}
