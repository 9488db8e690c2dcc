/* fs_etcd.h — a small synchronous client of etcd's v3 API, for the
 * cluster's membership: keys and values, prefix reads, a put guarded by the
 * key's revision (the shard map's compare-and-swap), and leases.
 *
 * It speaks etcd's gRPC API (proto/etcd.proto) through gRPC core, the
 * transport featstore already links, rather than a home-made protocol or
 * etcd's JSON gateway: one library, and gRPC's deadlines. Every call has a
 * deadline (the handle's timeout): nothing waits longer for an etcd that is
 * down or silent. Errors: FS_ERR_UNAVAILABLE (etcd cannot be reached),
 * FS_ERR_TIMEOUT (no answer within the deadline), FS_ERR_NOT_FOUND (no such
 * key, or a lease that expired), each with a message naming the endpoint
 * and the call.
 *
 * Thread safety: a handle is used by one thread at a time; handles are
 * independent. Ownership: fs_etcd_kvs_t's keys and values are the caller's,
 * freed by fs_etcd_kvs_free. */
#ifndef FS_ETCD_H
#define FS_ETCD_H

#include <stddef.h>
#include <stdint.h>

#include "fs_types.h"

typedef struct fs_etcd fs_etcd_t;

/* The longest endpoint ("host:port") a handle takes. */
#define FS_ETCD_ENDPOINT_MAX 255

/* One key: key and value NUL-terminated (values may hold other bytes too:
 * value_len says how many), and etcd's revisions of it. */
typedef struct {
    char *key, *value;
    size_t key_len, value_len;
    int64_t create_revision, mod_revision, lease;
    int deleted;  /* a watch's event: the key was deleted (value is "") */
} fs_etcd_kv_t;

/* The keys a read found, in key order, and the store's revision then. */
typedef struct {
    fs_etcd_kv_t *kv;
    size_t n, cap;
    int64_t revision;
} fs_etcd_kvs_t;

/* A handle on the etcd at endpoint ("host:port"); calls time out after
 * timeout_ms. Opening does not wait for etcd: the first call finds out. */
fs_status_t fs_etcd_open(const char *endpoint, int timeout_ms, fs_etcd_t **out, fs_error_t *err);
void fs_etcd_close(fs_etcd_t *e);
const char *fs_etcd_endpoint(const fs_etcd_t *e);

/* The key (prefix = 0) or every key under it (prefix = 1) into *out, which
 * is emptied first; no key is not an error here (out->n = 0). */
fs_status_t fs_etcd_get(fs_etcd_t *e, const char *key, int prefix, fs_etcd_kvs_t *out, fs_error_t *err);
void fs_etcd_kvs_free(fs_etcd_kvs_t *kvs);

/* Sets key to value (len bytes), attached to lease (0: none); the store's
 * new revision into *revision (may be NULL). */
fs_status_t fs_etcd_put(fs_etcd_t *e, const char *key, const void *value, size_t len, int64_t lease,
                        int64_t *revision, fs_error_t *err);

/* The same, only if the key's mod revision is still `expect` (0: only if
 * the key does not exist). *swapped says whether it was written; when it
 * was not, the key as it is now goes into *current (if not NULL; empty if
 * the key is gone). */
fs_status_t fs_etcd_put_if(fs_etcd_t *e, const char *key, const void *value, size_t len, int64_t lease,
                           int64_t expect, int *swapped, fs_etcd_kvs_t *current, int64_t *revision,
                           fs_error_t *err);

/* Deletes the key, or every key under it; how many into *deleted (may be
 * NULL). */
fs_status_t fs_etcd_delete(fs_etcd_t *e, const char *key, int prefix, int64_t *deleted, fs_error_t *err);

/* A lease of ttl_s seconds: its id. Keys put with it vanish when it
 * expires or is revoked. */
fs_status_t fs_etcd_lease_grant(fs_etcd_t *e, int64_t ttl_s, int64_t *id, fs_error_t *err);
/* Renews the lease for its full TTL (into *ttl_s, may be NULL);
 * FS_ERR_NOT_FOUND when it has already expired. */
fs_status_t fs_etcd_lease_keepalive(fs_etcd_t *e, int64_t id, int64_t *ttl_s, fs_error_t *err);
fs_status_t fs_etcd_lease_revoke(fs_etcd_t *e, int64_t id, fs_error_t *err);

/* A watch on one key: etcd's Watch stream, reporting every change to the
 * key from start_revision on (0: from now), in order, on a connection of
 * its own. The stream lasts period_ms (its deadline, like every call's):
 * then fs_etcd_watch_next says FS_ERR_TIMEOUT, and the caller opens another
 * from the revision after the last it saw. open returns once etcd has made
 * the watch, waiting timeout_ms at most. Thread safety: one thread opens, reads and closes a watch;
 * fs_etcd_watch_cancel may be called from any thread, and makes a waiting
 * next return (FS_ERR_UNAVAILABLE) at once. */
typedef struct fs_etcd_watch fs_etcd_watch_t;
fs_status_t fs_etcd_watch_open(const char *endpoint, const char *key, int64_t start_revision, int period_ms,
                               int timeout_ms, fs_etcd_watch_t **out, fs_error_t *err);
/* The next changes into *out (emptied first), in order: each a key and its
 * new value, or deleted = 1; out->revision is etcd's then. FS_ERR_NOT_FOUND
 * when start_revision was compacted away: read the key, and watch again
 * from after its revision. */
fs_status_t fs_etcd_watch_next(fs_etcd_watch_t *w, fs_etcd_kvs_t *out, fs_error_t *err);
void fs_etcd_watch_cancel(fs_etcd_watch_t *w);
void fs_etcd_watch_close(fs_etcd_watch_t *w);

#endif
