/* fs_etcd.c — etcd's v3 API over gRPC core (fs_etcd.h says what and why).
 *
 * Each call is one request and its answer (fs_unary.h) on the handle's
 * own completion queue, with the handle's deadline. LeaseKeepAlive is a
 * bidirectional stream in etcd's API; a renewal here is one request on a
 * fresh stream that the client half-closes at once, which etcd answers and
 * then ends, so it is one call too. Messages go through proto/fs_wire's nanopb helpers; keys and
 * values are bytes fields read into buffers of their own. */
#include "fs_etcd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/grpc.h>
#include <pb_decode.h>
#include <pb_encode.h>

#include "etcd.pb.h"
#include "fs_unary.h"
#include "fs_wire.h"

struct fs_etcd {
    char endpoint[FS_ETCD_ENDPOINT_MAX + 1];
    int timeout_ms;
    grpc_channel *channel;
    grpc_completion_queue *cq;
};

/* etcd's enums (etcd.proto keeps them as int32 fields). */
enum { CMP_EQUAL = 0 };
enum { CMP_TARGET_MOD = 2 };

/* ---- the handle ------------------------------------------------------------- */

fs_status_t fs_etcd_open(const char *endpoint, int timeout_ms, fs_etcd_t **out, fs_error_t *err)
{
    *out = NULL;
    if (!endpoint || !endpoint[0] || strlen(endpoint) > FS_ETCD_ENDPOINT_MAX || !strchr(endpoint, ':'))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "etcd: the endpoint must be host:port (got '%s')",
                        endpoint ? endpoint : "(null)");
    if (timeout_ms <= 0) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "etcd %s: the timeout must be positive", endpoint);
    fs_etcd_t *e = calloc(1, sizeof *e);
    if (!e) return fs_error(err, FS_ERR_NOMEM, "etcd %s: out of memory", endpoint);
    snprintf(e->endpoint, sizeof e->endpoint, "%s", endpoint);
    e->timeout_ms = timeout_ms;
    if (fs_unary_open(endpoint, &e->channel, &e->cq)) {
        free(e);
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "etcd %s: not a valid endpoint", endpoint);
    }
    *out = e;
    return FS_OK;
}

void fs_etcd_close(fs_etcd_t *e)
{
    if (!e) return;
    fs_unary_close(e->channel, e->cq);
    free(e);
}

const char *fs_etcd_endpoint(const fs_etcd_t *e)
{
    return e->endpoint;
}

/* ---- one call ------------------------------------------------------------------ */

/* One request and its answer on the handle's channel (fs_unary.h). */
static fs_status_t call(fs_etcd_t *e, const char *method, const pb_msgdesc_t *req_fields, const void *req,
                        const pb_msgdesc_t *resp_fields, void *resp, fs_error_t *err)
{
    char who[FS_ETCD_ENDPOINT_MAX + 8];
    snprintf(who, sizeof who, "etcd %s", e->endpoint);
    return fs_unary(e->channel, e->cq, who, method, e->timeout_ms, req_fields, req, resp_fields, resp, err);
}

/* ---- keys and values ------------------------------------------------------------ */

void fs_etcd_kvs_free(fs_etcd_kvs_t *kvs)
{
    for (size_t i = 0; i < kvs->n; i++) {
        free(kvs->kv[i].key);
        free(kvs->kv[i].value);
    }
    free(kvs->kv);
    memset(kvs, 0, sizeof *kvs);
}

/* A NUL-terminated copy of a decoded bytes field. */
static char *dup_bytes(const fs_wire_buf_t *b)
{
    char *s = malloc(b->len + 1);
    if (s) {
        if (b->len) memcpy(s, b->data, b->len);
        s[b->len] = 0;
    }
    return s;
}

/* Appends a decoded KeyValue (its key and value in their buffers, which
 * are freed here) to out. */
static bool kvs_add(fs_etcd_kvs_t *out, bool ok, const etcdserverpb_KeyValue *kv, fs_wire_buf_t *key,
                    fs_wire_buf_t *value, int deleted)
{
    if (ok && out->n == out->cap) {
        size_t cap = out->cap ? out->cap * 2 : 8;
        fs_etcd_kv_t *p = realloc(out->kv, cap * sizeof *p);
        if (p) out->kv = p, out->cap = cap;
        else ok = false;
    }
    if (ok) {
        fs_etcd_kv_t *k = &out->kv[out->n];
        *k = (fs_etcd_kv_t){.key = dup_bytes(key), .value = dup_bytes(value), .key_len = key->len,
                            .value_len = value->len, .create_revision = kv->create_revision,
                            .mod_revision = kv->mod_revision, .lease = kv->lease, .deleted = deleted};
        if (k->key && k->value) out->n++;
        else free(k->key), free(k->value), ok = false;
    }
    fs_wire_buf_free(key);
    fs_wire_buf_free(value);
    return ok;
}

/* nanopb callback: one KeyValue of a repeated kvs field, appended to *arg. */
static bool read_kv(pb_istream_t *stream, const pb_field_t *field, void **arg)
{
    (void)field;
    etcdserverpb_KeyValue kv = etcdserverpb_KeyValue_init_zero;
    fs_wire_buf_t key = {0}, value = {0};
    fs_wire_set_buf(&kv.key, &key);
    fs_wire_set_buf(&kv.value, &value);
    bool ok = pb_decode(stream, etcdserverpb_KeyValue_fields, &kv);
    return kvs_add(*arg, ok, &kv, &key, &value, 0);
}

/* The end of the range of keys under `prefix`: the prefix with its last
 * byte below 0xff incremented (etcd's convention), into end (len + 1). */
static size_t prefix_end(const char *prefix, char *end)
{
    size_t n = strlen(prefix);
    memcpy(end, prefix, n + 1);
    while (n > 0 && (unsigned char)end[n - 1] == 0xff) n--;
    if (n == 0) { /* every key: etcd's "\0" */
        end[0] = 0;
        return 1;
    }
    end[n - 1]++;
    return n;
}

/* A RangeRequest for key or the keys under it; range_end's storage in end. */
static void range_request(etcdserverpb_RangeRequest *r, const char *key, int prefix, char *end,
                          fs_wire_bytes_t *kb, fs_wire_bytes_t *eb)
{
    *r = (etcdserverpb_RangeRequest)etcdserverpb_RangeRequest_init_zero;
    fs_wire_set_bytes(&r->key, kb, key, strlen(key));
    if (prefix) fs_wire_set_bytes(&r->range_end, eb, end, prefix_end(key, end));
}

static fs_status_t check_key(const fs_etcd_t *e, const char *key, fs_error_t *err)
{
    if (!key || !key[0]) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "etcd %s: an empty key", e->endpoint);
    return FS_OK;
}

fs_status_t fs_etcd_get(fs_etcd_t *e, const char *key, int prefix, fs_etcd_kvs_t *out, fs_error_t *err)
{
    fs_etcd_kvs_free(out);
    fs_status_t st = check_key(e, key, err);
    if (st != FS_OK) return st;
    char *end = malloc(strlen(key) + 2);
    if (!end) return fs_error(err, FS_ERR_NOMEM, "etcd %s: out of memory", e->endpoint);
    etcdserverpb_RangeRequest req;
    fs_wire_bytes_t kb, eb;
    range_request(&req, key, prefix, end, &kb, &eb);
    etcdserverpb_RangeResponse resp = etcdserverpb_RangeResponse_init_zero;
    resp.kvs.funcs.decode = read_kv;
    resp.kvs.arg = out;
    st = call(e, "/etcdserverpb.KV/Range", etcdserverpb_RangeRequest_fields, &req, etcdserverpb_RangeResponse_fields,
              &resp, err);
    free(end);
    if (st != FS_OK) fs_etcd_kvs_free(out);
    else out->revision = resp.header.revision;
    return st;
}

fs_status_t fs_etcd_put(fs_etcd_t *e, const char *key, const void *value, size_t len, int64_t lease,
                        int64_t *revision, fs_error_t *err)
{
    fs_status_t st = check_key(e, key, err);
    if (st != FS_OK) return st;
    etcdserverpb_PutRequest req = etcdserverpb_PutRequest_init_zero;
    fs_wire_bytes_t kb, vb;
    fs_wire_set_bytes(&req.key, &kb, key, strlen(key));
    fs_wire_set_bytes(&req.value, &vb, value, len);
    req.lease = lease;
    etcdserverpb_PutResponse resp = etcdserverpb_PutResponse_init_zero;
    st = call(e, "/etcdserverpb.KV/Put", etcdserverpb_PutRequest_fields, &req, etcdserverpb_PutResponse_fields, &resp,
              err);
    if (st == FS_OK && revision) *revision = resp.header.revision;
    return st;
}

/* nanopb callback: one ResponseOp of a transaction's failure branch, whose
 * range answer's keys go to *arg. */
static bool read_response_op(pb_istream_t *stream, const pb_field_t *field, void **arg)
{
    (void)field;
    etcdserverpb_ResponseOp op = etcdserverpb_ResponseOp_init_zero;
    op.response_range.kvs.funcs.decode = read_kv;
    op.response_range.kvs.arg = *arg;
    return pb_decode(stream, etcdserverpb_ResponseOp_fields, &op);
}

fs_status_t fs_etcd_put_if(fs_etcd_t *e, const char *key, const void *value, size_t len, int64_t lease,
                           int64_t expect, int *swapped, fs_etcd_kvs_t *current, int64_t *revision,
                           fs_error_t *err)
{
    *swapped = 0;
    fs_etcd_kvs_t ignored = {0}, *now = current ? current : &ignored;
    fs_etcd_kvs_free(now);
    fs_status_t st = check_key(e, key, err);
    if (st != FS_OK) return st;
    size_t klen = strlen(key);
    etcdserverpb_TxnRequest req = etcdserverpb_TxnRequest_init_zero;
    fs_wire_bytes_t kb[3], vb;
    /* the key's mod revision is `expect` (0 is also what etcd compares for a key it does not have) */
    req.compare_count = 1;
    req.compare[0].result = CMP_EQUAL;
    req.compare[0].target = CMP_TARGET_MOD;
    fs_wire_set_bytes(&req.compare[0].key, &kb[0], key, klen);
    req.compare[0].mod_revision = expect;
    req.success_count = 1;
    req.success[0].has_request_put = true;
    fs_wire_set_bytes(&req.success[0].request_put.key, &kb[1], key, klen);
    fs_wire_set_bytes(&req.success[0].request_put.value, &vb, value, len);
    req.success[0].request_put.lease = lease;
    req.failure_count = 1;
    req.failure[0].has_request_range = true;
    fs_wire_set_bytes(&req.failure[0].request_range.key, &kb[2], key, klen);
    etcdserverpb_TxnResponse resp = etcdserverpb_TxnResponse_init_zero;
    resp.responses.funcs.decode = read_response_op;
    resp.responses.arg = now;
    st = call(e, "/etcdserverpb.KV/Txn", etcdserverpb_TxnRequest_fields, &req, etcdserverpb_TxnResponse_fields, &resp,
              err);
    if (st == FS_OK) {
        *swapped = resp.succeeded;
        now->revision = resp.header.revision;
        if (revision) *revision = resp.header.revision;
    }
    if (st != FS_OK || now == &ignored) fs_etcd_kvs_free(now);
    return st;
}

fs_status_t fs_etcd_delete(fs_etcd_t *e, const char *key, int prefix, int64_t *deleted, fs_error_t *err)
{
    fs_status_t st = check_key(e, key, err);
    if (st != FS_OK) return st;
    char *end = malloc(strlen(key) + 2);
    if (!end) return fs_error(err, FS_ERR_NOMEM, "etcd %s: out of memory", e->endpoint);
    etcdserverpb_DeleteRangeRequest req = etcdserverpb_DeleteRangeRequest_init_zero;
    fs_wire_bytes_t kb, eb;
    fs_wire_set_bytes(&req.key, &kb, key, strlen(key));
    if (prefix) fs_wire_set_bytes(&req.range_end, &eb, end, prefix_end(key, end));
    etcdserverpb_DeleteRangeResponse resp = etcdserverpb_DeleteRangeResponse_init_zero;
    st = call(e, "/etcdserverpb.KV/DeleteRange", etcdserverpb_DeleteRangeRequest_fields, &req,
              etcdserverpb_DeleteRangeResponse_fields, &resp, err);
    free(end);
    if (st == FS_OK && deleted) *deleted = resp.deleted;
    return st;
}

/* ---- leases --------------------------------------------------------------------- */

fs_status_t fs_etcd_lease_grant(fs_etcd_t *e, int64_t ttl_s, int64_t *id, fs_error_t *err)
{
    if (ttl_s <= 0) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "etcd %s: a lease's TTL must be positive", e->endpoint);
    etcdserverpb_LeaseGrantRequest req = {.TTL = ttl_s};
    etcdserverpb_LeaseGrantResponse resp = etcdserverpb_LeaseGrantResponse_init_zero;
    fs_status_t st = call(e, "/etcdserverpb.Lease/LeaseGrant", etcdserverpb_LeaseGrantRequest_fields, &req,
                          etcdserverpb_LeaseGrantResponse_fields, &resp, err);
    if (st != FS_OK) return st;
    if (resp.error[0] || resp.ID == 0)
        return fs_error(err, FS_ERR_RESOURCE, "etcd %s: LeaseGrant: %s", e->endpoint,
                        resp.error[0] ? resp.error : "no lease id in the answer");
    *id = resp.ID;
    return FS_OK;
}

fs_status_t fs_etcd_lease_keepalive(fs_etcd_t *e, int64_t id, int64_t *ttl_s, fs_error_t *err)
{
    etcdserverpb_LeaseKeepAliveRequest req = {.ID = id};
    etcdserverpb_LeaseKeepAliveResponse resp = etcdserverpb_LeaseKeepAliveResponse_init_zero;
    fs_status_t st = call(e, "/etcdserverpb.Lease/LeaseKeepAlive", etcdserverpb_LeaseKeepAliveRequest_fields, &req,
                          etcdserverpb_LeaseKeepAliveResponse_fields, &resp, err);
    if (st != FS_OK) return st;
    if (resp.TTL <= 0) /* etcd answers an expired or unknown lease with TTL 0 */
        return fs_error(err, FS_ERR_NOT_FOUND, "etcd %s: lease %llx has expired", e->endpoint, (unsigned long long)id);
    if (ttl_s) *ttl_s = resp.TTL;
    return FS_OK;
}

fs_status_t fs_etcd_lease_revoke(fs_etcd_t *e, int64_t id, fs_error_t *err)
{
    etcdserverpb_LeaseRevokeRequest req = {.ID = id};
    etcdserverpb_LeaseRevokeResponse resp = etcdserverpb_LeaseRevokeResponse_init_zero;
    return call(e, "/etcdserverpb.Lease/LeaseRevoke", etcdserverpb_LeaseRevokeRequest_fields, &req,
                etcdserverpb_LeaseRevokeResponse_fields, &resp, err);
}

/* ---- watching a key ---------------------------------------------------------------- */

enum { EVENT_DELETE = 1 };

struct fs_etcd_watch {
    fs_call_stream_t *stream;
    char endpoint[FS_ETCD_ENDPOINT_MAX + 1];
};

/* nanopb callback: one Event of a WatchResponse, its KeyValue appended to *arg. */
static bool read_event(pb_istream_t *stream, const pb_field_t *field, void **arg)
{
    (void)field;
    etcdserverpb_Event ev = etcdserverpb_Event_init_zero;
    fs_wire_buf_t key = {0}, value = {0};
    fs_wire_set_buf(&ev.kv.key, &key);
    fs_wire_set_buf(&ev.kv.value, &value);
    bool ok = pb_decode(stream, etcdserverpb_Event_fields, &ev);
    return kvs_add(*arg, ok, &ev.kv, &key, &value, ev.type == EVENT_DELETE);
}

/* The stream's next answer (waiting wait_ms at most, 0: until the
 * period's end) into out, its events appended; *created says whether it is
 * the answer to the watch's creation. */
static fs_status_t watch_answer(fs_etcd_watch_t *w, int wait_ms, fs_etcd_kvs_t *out, int *created, fs_error_t *err)
{
    etcdserverpb_WatchResponse resp = etcdserverpb_WatchResponse_init_zero;
    resp.events.funcs.decode = read_event;
    resp.events.arg = out;
    fs_status_t st = fs_call_stream_next(w->stream, wait_ms, etcdserverpb_WatchResponse_fields, &resp, err);
    if (st != FS_OK) return st;
    if (resp.canceled && resp.compact_revision > 0)
        return fs_error(err, FS_ERR_NOT_FOUND, "etcd %s: Watch: the revisions it was to start from were compacted "
                        "(the oldest kept is %lld)", w->endpoint, (long long)resp.compact_revision);
    if (resp.canceled) return fs_error(err, FS_ERR_UNAVAILABLE, "etcd %s: Watch: etcd cancelled it", w->endpoint);
    out->revision = resp.header.revision;
    *created = resp.created;
    return FS_OK;
}

fs_status_t fs_etcd_watch_open(const char *endpoint, const char *key, int64_t start_revision, int period_ms,
                               int timeout_ms, fs_etcd_watch_t **out, fs_error_t *err)
{
    *out = NULL;
    if (!endpoint || !endpoint[0] || strlen(endpoint) > FS_ETCD_ENDPOINT_MAX || !strchr(endpoint, ':'))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "etcd: the endpoint must be host:port (got '%s')",
                        endpoint ? endpoint : "(null)");
    if (!key || !key[0] || period_ms <= 0 || timeout_ms <= 0 || start_revision < 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "etcd %s: a watch needs a key, a positive period and "
                        "timeout, and a revision >= 0", endpoint);
    fs_etcd_watch_t *w = calloc(1, sizeof *w);
    if (!w) return fs_error(err, FS_ERR_NOMEM, "etcd %s: out of memory", endpoint);
    snprintf(w->endpoint, sizeof w->endpoint, "%s", endpoint);
    etcdserverpb_WatchRequest req = etcdserverpb_WatchRequest_init_zero;
    req.has_create_request = true;
    fs_wire_bytes_t kb;
    fs_wire_set_bytes(&req.create_request.key, &kb, key, strlen(key));
    req.create_request.start_revision = start_revision;
    char who[FS_ETCD_ENDPOINT_MAX + 8];
    snprintf(who, sizeof who, "etcd %s", endpoint);
    fs_status_t st = fs_call_stream_open(endpoint, who, "/etcdserverpb.Watch/Watch", period_ms, timeout_ms,
                                         etcdserverpb_WatchRequest_fields, &req, &w->stream, err);
    fs_etcd_kvs_t none = {0};
    int created = 0;
    if (st == FS_OK) st = watch_answer(w, timeout_ms, &none, &created, err); /* etcd's first: the watch is made */
    if (st == FS_OK && !created)
        st = fs_error(err, FS_ERR_FORMAT, "etcd %s: Watch: the first answer did not say the watch was made", endpoint);
    fs_etcd_kvs_free(&none);
    if (st != FS_OK) {
        fs_etcd_watch_close(w);
        return st;
    }
    *out = w;
    return FS_OK;
}

fs_status_t fs_etcd_watch_next(fs_etcd_watch_t *w, fs_etcd_kvs_t *out, fs_error_t *err)
{
    fs_etcd_kvs_free(out);
    for (;;) { /* answers without events (progress) are skipped; the stream's deadline bounds the wait */
        int created = 0;
        fs_status_t st = watch_answer(w, 0, out, &created, err);
        if (st != FS_OK) {
            fs_etcd_kvs_free(out);
            return st;
        }
        if (out->n > 0) return FS_OK;
    }
}

void fs_etcd_watch_cancel(fs_etcd_watch_t *w)
{
    if (w) fs_call_stream_cancel(w->stream);
}

void fs_etcd_watch_close(fs_etcd_watch_t *w)
{
    if (!w) return;
    fs_call_stream_close(w->stream);
    free(w);
}
