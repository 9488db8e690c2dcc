/* fs_shardmap.c — shard registrations and the shard map, as JSON, and the
 * map built from the registrations (fs_shardmap.h says what each is).
 *
 * Everything read here comes from etcd or a file someone wrote, so the
 * readers are strict and bounded: fs_json.h's checks for every field,
 * lengths against the limits in fs_shardmap.h, ids unique, owners naming
 * shards the map lists. The writers emit the same fields in a fixed order,
 * so two maps that say the same thing are the same bytes. */
#include "fs_shardmap.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs_json.h"

#define REG_FORMAT "featstore-shard"
#define MAP_FORMAT "featstore-shard-map"
#define ASSIGN_FORMAT "featstore-assignment"

/* ---- a shard's id and parts from its orchestrator ------------------------------- */

fs_status_t fs_shard_ordinal(const char *host, int *id, fs_error_t *err)
{
    const char *h = host ? host : "";
    size_t len = strcspn(h, "."); /* the first label */
    size_t digits = 0;
    while (digits < len && h[len - 1 - digits] >= '0' && h[len - 1 - digits] <= '9') digits++;
    const char *num = h + len - digits;
    long v = -1;
    /* NAME "-" N: a name, a dash, digits without a leading zero, in range */
    if (digits > 0 && digits <= 4 && len >= digits + 2 && num[-1] == '-' && !(num[0] == '0' && digits > 1)) {
        v = 0;
        for (size_t i = 0; i < digits; i++) v = v * 10 + (num[i] - '0');
    }
    if (v < 0 || v >= FS_CLUSTER_SHARDS_MAX)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT,
                        "host name '%s' has no StatefulSet ordinal: expected NAME-N, N in 0..%d without leading "
                        "zeros (a StatefulSet's pods are NAME-0, NAME-1, ...)", h, FS_CLUSTER_SHARDS_MAX - 1);
    *id = (int)v;
    return FS_OK;
}

void fs_shard_machine(char *out, size_t len)
{
    char boot[64] = "";
    struct stat ns;
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    int ok = f && fgets(boot, sizeof boot, f) && stat("/proc/self/ns/net", &ns) == 0;
    if (f) fclose(f);
    boot[strcspn(boot, "\n")] = 0;
    if (ok && boot[0]) snprintf(out, len, "%s/%llu", boot, (unsigned long long)ns.st_ino);
    else if (len) out[0] = 0;
}

fs_status_t fs_shard_dealt_parts(int shard, int shards, int parts, int *out, int *n, fs_error_t *err)
{
    if (shards < 1 || shards > FS_CLUSTER_SHARDS_MAX)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%d shards: expected 1..%d", shards, FS_CLUSTER_SHARDS_MAX);
    if (shard < 0 || shard >= shards)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "shard %d of %d shards: shard ids are 0..%d", shard, shards,
                        shards - 1);
    if (shard >= parts)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "shard %d of %d shards gets no part of a partitioning of %d "
                        "parts: partition into at least as many parts as shards", shard, shards, parts);
    int k = 0;
    for (int p = shard; p < parts; p += shards) out[k++] = p;
    *n = k;
    return FS_OK;
}

fs_status_t fs_shard_dealt_copies(int shard, int shards, int parts, int replicas, int *out, int *n,
                                  fs_error_t *err)
{
    int owned;
    fs_status_t st = fs_shard_dealt_parts(shard, shards, parts, out, &owned, err); /* checks shard, shards, parts */
    if (st != FS_OK) return st;
    if (replicas < 1 || replicas > FS_CLUSTER_REPLICAS_MAX || replicas > shards)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%d replicas with %d shards: expected 1..%d, and no more than "
                        "the shards (a part's holders are different shards)", replicas, shards,
                        FS_CLUSTER_REPLICAS_MAX);
    int k = 0;
    for (int p = 0; p < parts; p++) {
        int behind = ((shard - p % shards) % shards + shards) % shards; /* how far p's owner is before this shard */
        if (behind >= 1 && behind < replicas) out[k++] = p;
    }
    *n = k;
    return FS_OK;
}

/* ---- reading fields ----------------------------------------------------------- */

static fs_status_t need(const json_t *obj, const char *key, const char *where, json_t **out, fs_error_t *err)
{
    *out = json_object_get(obj, key);
    if (!*out) return fs_error(err, FS_ERR_FORMAT, "%s: \"%s\" is missing", where, key);
    return FS_OK;
}

static fs_status_t int_field(const json_t *obj, const char *key, const char *where, long long lo, long long hi,
                             int *out, fs_error_t *err)
{
    json_t *v;
    long long x = 0;
    fs_status_t st = need(obj, key, where, &v, err);
    if (st == FS_OK) st = fs_json_int_in(v, where, key, lo, hi, &x, err);
    if (st == FS_OK) *out = (int)x;
    return st;
}

/* A string of at most max bytes into out (max + 1); `optional` allows it absent (""). */
static fs_status_t str_field(const json_t *obj, const char *key, const char *where, size_t max, int optional,
                             char *out, fs_error_t *err)
{
    json_t *v = json_object_get(obj, key);
    out[0] = 0;
    if (!v && optional) return FS_OK;
    const char *s = "";
    fs_status_t st = need(obj, key, where, &v, err);
    if (st == FS_OK) st = fs_json_string(v, where, key, &s, err);
    if (st != FS_OK) return st;
    if (strlen(s) > max) return fs_error(err, FS_ERR_FORMAT, "%s: \"%s\" is longer than %zu bytes", where, key, max);
    memcpy(out, s, strlen(s) + 1);
    return FS_OK;
}

/* The format's name and a version this featstore reads (1..newest) into *version. */
static fs_status_t header(const json_t *root, const char *format, const char *where, int newest, int *version,
                          fs_error_t *err)
{
    json_t *v;
    const char *s = "";
    if (!json_is_object(root)) return fs_error(err, FS_ERR_FORMAT, "%s: not a JSON object", where);
    fs_status_t st = need(root, "format", where, &v, err);
    if (st == FS_OK) st = fs_json_string(v, where, "format", &s, err);
    if (st == FS_OK && strcmp(s, format) != 0)
        return fs_error(err, FS_ERR_FORMAT, "%s: \"format\" is \"%s\", not \"%s\"", where, s, format);
    if (st == FS_OK) st = int_field(root, "version", where, 1, 1000, version, err);
    if (st == FS_OK && *version > newest)
        return fs_error(err, FS_ERR_VERSION, "%s: version %d; this featstore reads versions 1 to %d", where, *version,
                        newest);
    return st;
}

static fs_status_t partitioning_field(const json_t *obj, const char *where, char *out, fs_error_t *err)
{
    fs_status_t st = str_field(obj, "partitioning", where, FS_PARTITION_ID_LEN, 0, out, err);
    if (st != FS_OK) return st;
    if (strlen(out) != FS_PARTITION_ID_LEN || strspn(out, "0123456789abcdef") != FS_PARTITION_ID_LEN)
        return fs_error(err, FS_ERR_FORMAT, "%s: \"partitioning\" must be %d lowercase hex digits (got \"%s\")", where,
                        FS_PARTITION_ID_LEN, out);
    return FS_OK;
}

static fs_status_t addr_fields(const json_t *obj, const char *where, fs_shard_addr_t *a, fs_error_t *err)
{
    fs_status_t st = int_field(obj, "id", where, 0, FS_CLUSTER_SHARDS_MAX - 1, &a->id, err);
    if (st == FS_OK) st = str_field(obj, "grpc", where, FS_CLUSTER_ADDR_MAX, 0, a->grpc, err);
    if (st == FS_OK && !strchr(a->grpc, ':'))
        st = fs_error(err, FS_ERR_FORMAT, "%s: \"grpc\" must be host:port (got \"%s\")", where, a->grpc);
    if (st == FS_OK) st = str_field(obj, "unix", where, FS_CLUSTER_UNIX_MAX, 1, a->unix_path, err);
    if (st == FS_OK) st = str_field(obj, "host", where, FS_CLUSTER_HOST_MAX, 1, a->host, err);
    return st;
}

/* An array of at most max ints, each in [lo, hi], into a new array. */
static fs_status_t int_array(const json_t *obj, const char *key, const char *where, size_t max, int lo, int hi,
                             int **out, int *n, fs_error_t *err)
{
    json_t *v;
    fs_status_t st = need(obj, key, where, &v, err);
    if (st != FS_OK) return st;
    if (!json_is_array(v)) return fs_error(err, FS_ERR_FORMAT, "%s: \"%s\" must be an array", where, key);
    size_t len = json_array_size(v);
    if (len > max) return fs_error(err, FS_ERR_FORMAT, "%s: \"%s\" has %zu entries, over %zu", where, key, len, max);
    *out = calloc(len ? len : 1, sizeof **out);
    if (!*out) return fs_error(err, FS_ERR_NOMEM, "%s: out of memory", where);
    *n = (int)len;
    for (size_t i = 0; i < len; i++) {
        json_t *x = json_array_get(v, i);
        long long val;
        if (!json_is_integer(x) || (val = json_integer_value(x)) < lo || val > hi)
            return fs_error(err, FS_ERR_FORMAT, "%s: \"%s\"[%zu] must be an integer in [%d, %d]", where, key, i, lo, hi);
        (*out)[i] = (int)val;
    }
    return FS_OK;
}

/* int_array, or an empty array when the key is absent. */
static fs_status_t optional_int_array(const json_t *obj, const char *key, const char *where, size_t max, int lo,
                                      int hi, int **out, int *n, fs_error_t *err)
{
    if (json_object_get(obj, key)) return int_array(obj, key, where, max, lo, hi, out, n, err);
    *n = 0;
    *out = calloc(1, sizeof **out);
    return *out ? FS_OK : fs_error(err, FS_ERR_NOMEM, "%s: out of memory", where);
}

/* Whether a[0..n) ascends without repeats; the first index that does not, else -1. */
static int not_ascending(const int *a, int n)
{
    for (int i = 1; i < n; i++)
        if (a[i] <= a[i - 1]) return i;
    return -1;
}

static json_t *parse_json(const char *text, size_t len, const char *where, fs_error_t *err)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) fs_error(err, FS_ERR_FORMAT, "%s: not valid JSON: %s (line %d)", where, je.text, je.line);
    return root;
}

/* ---- registrations -------------------------------------------------------------- */

static const char *const REG_KEYS[] = {"format", "version", "id", "grpc", "unix", "host", "partitioning",
                                       "parts", "owns", "copies", "replicas", NULL};

static json_t *int_list(const int *a, int n)
{
    json_t *v = json_array();
    for (int i = 0; v && i < n; i++) json_array_append_new(v, json_integer(a[i]));
    return v;
}

char *fs_shard_reg_format(const fs_shard_reg_t *r)
{
    json_t *root = json_pack("{s:s, s:i, s:i, s:s, s:s, s:s, s:s, s:i, s:o, s:o, s:i}", "format", REG_FORMAT,
                             "version", 1, "id", r->addr.id, "grpc", r->addr.grpc, "unix", r->addr.unix_path, "host",
                             r->addr.host, "partitioning", r->partitioning, "parts", r->parts, "owns",
                             int_list(r->owns, r->num_owned), "copies", int_list(r->copies, r->num_copies),
                             "replicas", r->replicas > 0 ? r->replicas : 1);
    char *s = root ? json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(root);
    return s;
}

fs_status_t fs_shard_reg_parse(const char *json, size_t len, fs_shard_reg_t *out, fs_error_t *err)
{
    const char *where = "shard registration";
    memset(out, 0, sizeof *out);
    json_t *root = parse_json(json, len, where, err);
    if (!root) return FS_ERR_FORMAT;
    int version;
    fs_status_t st = header(root, REG_FORMAT, where, 1, &version, err);
    if (st == FS_OK) st = fs_json_only_keys(root, REG_KEYS, where, err);
    if (st == FS_OK) st = addr_fields(root, where, &out->addr, err);
    if (st == FS_OK) st = partitioning_field(root, where, out->partitioning, err);
    if (st == FS_OK) st = int_field(root, "parts", where, 1, FS_PARTITION_MAX_PARTS, &out->parts, err);
    if (st == FS_OK)
        st = int_array(root, "owns", where, (size_t)out->parts, 0, out->parts - 1, &out->owns, &out->num_owned, err);
    if (st == FS_OK)
        st = optional_int_array(root, "copies", where, (size_t)out->parts, 0, out->parts - 1, &out->copies,
                                &out->num_copies, err);
    out->replicas = 1; /* a registration without it: no replication */
    if (st == FS_OK && json_object_get(root, "replicas"))
        st = int_field(root, "replicas", where, 1, FS_CLUSTER_REPLICAS_MAX, &out->replicas, err);
    int bad;
    if (st == FS_OK && (bad = not_ascending(out->owns, out->num_owned)) >= 0)
        st = fs_error(err, FS_ERR_FORMAT, "%s: shard %d's \"owns\" must ascend without repeats (entry %d)", where,
                      out->addr.id, bad);
    if (st == FS_OK && (bad = not_ascending(out->copies, out->num_copies)) >= 0)
        st = fs_error(err, FS_ERR_FORMAT, "%s: shard %d's \"copies\" must ascend without repeats (entry %d)", where,
                      out->addr.id, bad);
    for (int i = 0, j = 0; st == FS_OK && i < out->num_owned && j < out->num_copies;) {
        if (out->owns[i] == out->copies[j])
            st = fs_error(err, FS_ERR_FORMAT, "%s: shard %d both owns part %d and holds a copy of it", where,
                          out->addr.id, out->owns[i]);
        else if (out->owns[i] < out->copies[j]) i++;
        else j++;
    }
    if (st == FS_OK && out->num_copies > 0 && out->replicas < 2)
        st = fs_error(err, FS_ERR_FORMAT, "%s: shard %d holds copies in a cluster of 1 replica", where, out->addr.id);
    json_decref(root);
    if (st != FS_OK) fs_shard_reg_free(out);
    return st;
}

void fs_shard_reg_free(fs_shard_reg_t *r)
{
    free(r->owns);
    free(r->copies);
    memset(r, 0, sizeof *r);
}

/* ---- the map ---------------------------------------------------------------------- */

static int by_id(const void *a, const void *b)
{
    const fs_shard_reg_t *x = *(const fs_shard_reg_t *const *)a, *y = *(const fs_shard_reg_t *const *)b;
    return (x->addr.id > y->addr.id) - (x->addr.id < y->addr.id);
}

static fs_status_t map_alloc(fs_shard_map_t *m, int parts, int replicas, int shards, fs_error_t *err)
{
    m->owner = malloc((size_t)parts * sizeof *m->owner);
    m->holders = malloc((size_t)parts * (size_t)replicas * sizeof *m->holders);
    m->shard = calloc(shards ? (size_t)shards : 1, sizeof *m->shard);
    if (!m->owner || !m->holders || !m->shard) return fs_error(err, FS_ERR_NOMEM, "shard map: out of memory");
    for (int p = 0; p < parts; p++) m->owner[p] = -1;
    for (int i = 0; i < parts * replicas; i++) m->holders[i] = -1;
    m->parts = parts;
    m->replicas = replicas;
    m->num_shards = shards;
    return FS_OK;
}

/* Part p's holder count. */
static int holder_count(const fs_shard_map_t *m, int p)
{
    int n = 0;
    while (n < m->replicas && m->holders[p * m->replicas + n] >= 0) n++;
    return n;
}

/* owner[p] from the holders: the first. */
static void set_owners(fs_shard_map_t *m)
{
    for (int p = 0; p < m->parts; p++) m->owner[p] = m->holders[p * m->replicas];
}

/* Adds shard `id` to part p's holders: as its owner (slot 0, shifting any
 * copies right) or after the copies so far. */
static fs_status_t add_holder(fs_shard_map_t *m, const char *name, int p, int id, int owns, fs_error_t *err)
{
    int *h = &m->holders[p * m->replicas], n = holder_count(m, p);
    if (owns && n > 0 && m->owner[p] >= 0)
        return fs_error(err, FS_ERR_EXISTS, "cluster %s: part %d is held by both shard %d and shard %d", name, p,
                        m->owner[p], id);
    if (n == m->replicas)
        return fs_error(err, FS_ERR_EXISTS, "cluster %s: part %d is held by shard %d and %d others, over the "
                        "cluster's %d replicas", name, p, id, n, m->replicas);
    if (owns) {
        memmove(h + 1, h, (size_t)n * sizeof *h);
        h[0] = id;
        m->owner[p] = id; /* marks an owner while building; set_owners rewrites it */
    } else {
        h[n] = id;
    }
    return FS_OK;
}

fs_status_t fs_shard_map_empty(const char *name, const char *partitioning, int parts, int replicas,
                               fs_shard_map_t *out, fs_error_t *err)
{
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", name);
    snprintf(out->partitioning, sizeof out->partitioning, "%s", partitioning);
    fs_status_t st = map_alloc(out, parts, replicas > 0 ? replicas : 1, 0, err);
    if (st != FS_OK) fs_shard_map_free(out);
    return st;
}

/* Whether the sorted list a[0..n) has x. */
static int listed(const int *a, int n, int x)
{
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (a[mid] == x) return 1;
        if (a[mid] < x) lo = mid + 1;
        else hi = mid - 1;
    }
    return 0;
}

/* With an assignment: part p's holders are the registered shards holding
 * it, those it assigns first in its order, then the others (owners, then
 * by id), the first R of them. A shard loading a part it was given is
 * not yet among them; one giving a part away stays until enough of the
 * assigned holders hold it. */
static void assigned_holders(fs_shard_map_t *m, const fs_shard_reg_t **regs, int n, const fs_shard_map_t *assign)
{
    int R = m->replicas;
    for (int p = 0; p < m->parts; p++) {
        long best_key[FS_CLUSTER_REPLICAS_MAX + 1];
        int best[FS_CLUSTER_REPLICAS_MAX + 1], k = 0;
        for (int i = 0; i < n; i++) {
            const fs_shard_reg_t *r = regs[i];
            int owns = listed(r->owns, r->num_owned, p);
            if (!owns && !listed(r->copies, r->num_copies, p)) continue;
            int rank = fs_shard_map_rank(assign, p, r->addr.id);
            long key = rank >= 0 ? rank : (long)(R + !owns) * FS_CLUSTER_SHARDS_MAX + r->addr.id;
            int at = k; /* insertion into the best R so far, by ascending key */
            if (k == R && key >= best_key[R - 1]) continue;
            if (k == R) at = R - 1;
            else k++;
            for (; at > 0 && best_key[at - 1] > key; at--) best_key[at] = best_key[at - 1], best[at] = best[at - 1];
            best_key[at] = key, best[at] = r->addr.id;
        }
        for (int j = 0; j < k; j++) m->holders[p * R + j] = best[j];
    }
}

/* A registration that does not belong with the first (sorted[0]) or the
 * assignment: FS_ERR_EXISTS or FS_ERR_FORMAT naming both. */
static fs_status_t check_reg(const char *name, const fs_shard_reg_t **sorted, int i, const fs_shard_map_t *out,
                             const fs_shard_map_t *assign, fs_error_t *err)
{
    const fs_shard_reg_t *r = sorted[i];
    if (i > 0 && r->addr.id == sorted[i - 1]->addr.id)
        return fs_error(err, FS_ERR_EXISTS, "cluster %s: shard %d is registered twice", name, r->addr.id);
    if (strcmp(r->partitioning, out->partitioning) != 0 || r->parts != out->parts)
        return fs_error(err, FS_ERR_FORMAT,
                        "cluster %s: shard %d serves partitioning %s of %d parts, %s %s of %d: one cluster serves one "
                        "partitioning", name, r->addr.id, r->partitioning, r->parts,
                        assign ? "the assignment" : "the first shard", out->partitioning, out->parts);
    if ((r->replicas > 0 ? r->replicas : 1) != out->replicas)
        return fs_error(err, FS_ERR_FORMAT, "cluster %s: shard %d has %d replicas, %s %d: one cluster has one replica "
                        "count", name, r->addr.id, r->replicas, assign ? "the assignment" : "the first shard",
                        out->replicas);
    return FS_OK;
}

fs_status_t fs_shard_map_build(const char *name, const fs_shard_reg_t *regs, int n, const fs_shard_map_t *assign,
                               fs_shard_map_t *out, fs_error_t *err)
{
    memset(out, 0, sizeof *out);
    fs_status_t st = fs_cluster_name_check(name, err);
    if (st != FS_OK) return st;
    if (n <= 0) return fs_error(err, FS_ERR_NOT_FOUND, "cluster %s: no shard is registered", name);
    const fs_shard_reg_t **sorted = malloc((size_t)n * sizeof *sorted);
    if (!sorted) return fs_error(err, FS_ERR_NOMEM, "shard map: out of memory");
    for (int i = 0; i < n; i++) sorted[i] = &regs[i];
    qsort(sorted, (size_t)n, sizeof *sorted, by_id);
    snprintf(out->name, sizeof out->name, "%s", name);
    memcpy(out->partitioning, assign ? assign->partitioning : sorted[0]->partitioning, sizeof out->partitioning);
    int replicas = assign ? assign->replicas : sorted[0]->replicas > 0 ? sorted[0]->replicas : 1;
    st = map_alloc(out, assign ? assign->parts : sorted[0]->parts, replicas, n, err);
    for (int i = 0; st == FS_OK && i < n; i++) {
        const fs_shard_reg_t *r = sorted[i];
        st = check_reg(name, sorted, i, out, assign, err);
        out->shard[i] = r->addr;
        for (int j = 0; !assign && st == FS_OK && j < r->num_owned; j++)
            st = add_holder(out, name, r->owns[j], r->addr.id, 1, err);
        for (int j = 0; !assign && st == FS_OK && j < r->num_copies; j++)
            st = add_holder(out, name, r->copies[j], r->addr.id, 0, err);
    }
    if (st == FS_OK && assign) assigned_holders(out, sorted, n, assign);
    free(sorted);
    if (st != FS_OK) fs_shard_map_free(out);
    else set_owners(out);
    return st;
}

static const char *const MAP_KEYS_V1[] = {"format", "version", "name", "partitioning", "parts", "shards", "owners",
                                          NULL};
static const char *const MAP_KEYS[] = {"format", "version", "name", "partitioning", "parts", "replicas", "shards",
                                       "holders", NULL};
static const char *const ADDR_KEYS[] = {"id", "grpc", "unix", "host", NULL};

char *fs_shard_map_format(const fs_shard_map_t *m)
{
    json_t *shards = json_array(), *holders = json_array();
    for (int i = 0; i < m->num_shards; i++) {
        const fs_shard_addr_t *a = &m->shard[i];
        json_array_append_new(shards, json_pack("{s:i, s:s, s:s, s:s}", "id", a->id, "grpc", a->grpc, "unix",
                                                a->unix_path, "host", a->host));
    }
    for (int p = 0; p < m->parts; p++)
        json_array_append_new(holders, int_list(&m->holders[p * m->replicas], holder_count(m, p)));
    json_t *root = json_pack("{s:s, s:i, s:s, s:s, s:i, s:i, s:o, s:o}", "format", MAP_FORMAT, "version", 2, "name",
                             m->name, "partitioning", m->partitioning, "parts", m->parts, "replicas", m->replicas,
                             "shards", shards, "holders", holders);
    char *s = root ? json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(root);
    return s;
}

/* The map's shards: ids ascending and unique. */
static fs_status_t map_shards(const json_t *root, const char *where, fs_shard_map_t *m, fs_error_t *err)
{
    json_t *v;
    fs_status_t st = need(root, "shards", where, &v, err);
    if (st != FS_OK) return st;
    if (!json_is_array(v) || json_array_size(v) > FS_CLUSTER_SHARDS_MAX)
        return fs_error(err, FS_ERR_FORMAT, "%s: \"shards\" must be an array of at most %d", where,
                        FS_CLUSTER_SHARDS_MAX);
    m->num_shards = (int)json_array_size(v);
    m->shard = calloc(m->num_shards ? (size_t)m->num_shards : 1, sizeof *m->shard);
    if (!m->shard) return fs_error(err, FS_ERR_NOMEM, "%s: out of memory", where);
    for (int i = 0; st == FS_OK && i < m->num_shards; i++) {
        json_t *s = json_array_get(v, (size_t)i);
        if (!json_is_object(s)) return fs_error(err, FS_ERR_FORMAT, "%s: \"shards\"[%d] must be an object", where, i);
        st = fs_json_only_keys(s, ADDR_KEYS, where, err);
        if (st == FS_OK) st = addr_fields(s, where, &m->shard[i], err);
        if (st == FS_OK && i > 0 && m->shard[i].id <= m->shard[i - 1].id)
            st = fs_error(err, FS_ERR_FORMAT, "%s: shard ids must ascend without repeats (\"shards\"[%d])", where, i);
    }
    return st;
}

static int has_shard(const fs_shard_map_t *m, int id)
{
    for (int i = 0; i < m->num_shards; i++)
        if (m->shard[i].id == id) return 1;
    return 0;
}

/* Version 1's "owners": one holder a part, -1 for none. */
static fs_status_t map_owners_v1(const json_t *root, const char *where, fs_shard_map_t *m, fs_error_t *err)
{
    int *owners = NULL, n = 0;
    fs_status_t st = int_array(root, "owners", where, (size_t)m->parts, -1, FS_CLUSTER_SHARDS_MAX - 1, &owners, &n, err);
    if (st == FS_OK && n != m->parts)
        st = fs_error(err, FS_ERR_FORMAT, "%s: \"owners\" has %d entries for %d parts", where, n, m->parts);
    for (int p = 0; st == FS_OK && p < m->parts; p++) m->holders[p] = owners[p];
    free(owners);
    return st;
}

/* Version 2's "holders": per part an array of at most R shard ids, no repeats. */
static fs_status_t map_holders(const json_t *root, const char *where, fs_shard_map_t *m, fs_error_t *err)
{
    json_t *v;
    fs_status_t st = need(root, "holders", where, &v, err);
    if (st != FS_OK) return st;
    if (!json_is_array(v) || json_array_size(v) != (size_t)m->parts)
        return fs_error(err, FS_ERR_FORMAT, "%s: \"holders\" must be an array of %d entries, one a part", where,
                        m->parts);
    for (int p = 0; st == FS_OK && p < m->parts; p++) {
        json_t *h = json_array_get(v, (size_t)p);
        if (!json_is_array(h) || json_array_size(h) > (size_t)m->replicas)
            return fs_error(err, FS_ERR_FORMAT, "%s: \"holders\"[%d] must be an array of at most %d shard ids", where,
                            p, m->replicas);
        for (size_t i = 0; st == FS_OK && i < json_array_size(h); i++) {
            json_t *x = json_array_get(h, i);
            long long id = json_is_integer(x) ? json_integer_value(x) : -1;
            if (id < 0 || id >= FS_CLUSTER_SHARDS_MAX)
                return fs_error(err, FS_ERR_FORMAT, "%s: \"holders\"[%d][%zu] must be a shard id in [0, %d]", where,
                                p, i, FS_CLUSTER_SHARDS_MAX - 1);
            for (size_t j = 0; j < i; j++)
                if (m->holders[p * m->replicas + (int)j] == id)
                    return fs_error(err, FS_ERR_FORMAT, "%s: part %d names shard %lld twice", where, p, id);
            m->holders[p * m->replicas + (int)i] = (int)id;
        }
    }
    return st;
}

fs_status_t fs_shard_map_parse(const char *json, size_t len, fs_shard_map_t *out, fs_error_t *err)
{
    const char *where = "shard map";
    memset(out, 0, sizeof *out);
    json_t *root = parse_json(json, len, where, err);
    if (!root) return FS_ERR_FORMAT;
    int version = 1, parts = 0, replicas = 1;
    fs_status_t st = header(root, MAP_FORMAT, where, 2, &version, err);
    if (st == FS_OK) st = fs_json_only_keys(root, version == 1 ? MAP_KEYS_V1 : MAP_KEYS, where, err);
    if (st == FS_OK) st = str_field(root, "name", where, FS_CLUSTER_NAME_MAX, 0, out->name, err);
    if (st == FS_OK) st = fs_cluster_name_check(out->name, err);
    if (st == FS_OK) st = partitioning_field(root, where, out->partitioning, err);
    if (st == FS_OK) st = int_field(root, "parts", where, 1, FS_PARTITION_MAX_PARTS, &parts, err);
    if (st == FS_OK && version > 1)
        st = int_field(root, "replicas", where, 1, FS_CLUSTER_REPLICAS_MAX, &replicas, err);
    if (st == FS_OK) st = map_alloc(out, parts, replicas, 0, err);
    free(out->shard), out->shard = NULL;
    if (st == FS_OK) st = map_shards(root, where, out, err);
    if (st == FS_OK) st = version == 1 ? map_owners_v1(root, where, out, err) : map_holders(root, where, out, err);
    for (int i = 0; st == FS_OK && i < parts * replicas; i++)
        if (out->holders[i] >= 0 && !has_shard(out, out->holders[i]))
            st = fs_error(err, FS_ERR_FORMAT, "%s: part %d's %s, shard %d, is not in \"shards\"", where, i / replicas,
                          i % replicas ? "copy" : "owner", out->holders[i]);
    json_decref(root);
    if (st != FS_OK) fs_shard_map_free(out);
    else set_owners(out);
    return st;
}

/* ---- assignments ------------------------------------------------------------------ */

static const char *const ASSIGN_KEYS[] = {"format", "version", "name", "partitioning", "parts", "replicas", "shards",
                                          "holders", NULL};

char *fs_shard_assign_format(const fs_shard_map_t *a)
{
    json_t *shards = json_array(), *holders = json_array();
    for (int i = 0; i < a->num_shards; i++) json_array_append_new(shards, json_integer(a->shard[i].id));
    for (int p = 0; p < a->parts; p++)
        json_array_append_new(holders, int_list(&a->holders[p * a->replicas], holder_count(a, p)));
    json_t *root = json_pack("{s:s, s:i, s:s, s:s, s:i, s:i, s:o, s:o}", "format", ASSIGN_FORMAT, "version", 1,
                             "name", a->name, "partitioning", a->partitioning, "parts", a->parts, "replicas",
                             a->replicas, "shards", shards, "holders", holders);
    char *s = root ? json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(root);
    return s;
}

fs_status_t fs_shard_assign_parse(const char *json, size_t len, fs_shard_map_t *out, fs_error_t *err)
{
    const char *where = "shard assignment";
    memset(out, 0, sizeof *out);
    json_t *root = parse_json(json, len, where, err);
    if (!root) return FS_ERR_FORMAT;
    int version = 1, parts = 0, replicas = 1, *ids = NULL, n = 0, bad;
    fs_status_t st = header(root, ASSIGN_FORMAT, where, 1, &version, err);
    if (st == FS_OK) st = fs_json_only_keys(root, ASSIGN_KEYS, where, err);
    if (st == FS_OK) st = str_field(root, "name", where, FS_CLUSTER_NAME_MAX, 0, out->name, err);
    if (st == FS_OK) st = fs_cluster_name_check(out->name, err);
    if (st == FS_OK) st = partitioning_field(root, where, out->partitioning, err);
    if (st == FS_OK) st = int_field(root, "parts", where, 1, FS_PARTITION_MAX_PARTS, &parts, err);
    if (st == FS_OK) st = int_field(root, "replicas", where, 1, FS_CLUSTER_REPLICAS_MAX, &replicas, err);
    if (st == FS_OK)
        st = int_array(root, "shards", where, FS_CLUSTER_SHARDS_MAX, 0, FS_CLUSTER_SHARDS_MAX - 1, &ids, &n, err);
    if (st == FS_OK && (bad = not_ascending(ids, n)) >= 0)
        st = fs_error(err, FS_ERR_FORMAT, "%s: \"shards\" must ascend without repeats (entry %d)", where, bad);
    if (st == FS_OK) st = map_alloc(out, parts, replicas, n, err);
    for (int i = 0; st == FS_OK && i < n; i++) out->shard[i].id = ids[i];
    if (st == FS_OK) st = map_holders(root, where, out, err);
    for (int i = 0; st == FS_OK && i < parts * replicas; i++)
        if (out->holders[i] >= 0 && !has_shard(out, out->holders[i]))
            st = fs_error(err, FS_ERR_FORMAT, "%s: part %d is given to shard %d, which is not in \"shards\"", where,
                          i / replicas, out->holders[i]);
    free(ids);
    json_decref(root);
    if (st != FS_OK) fs_shard_map_free(out);
    else set_owners(out);
    return st;
}

int fs_shard_map_rank(const fs_shard_map_t *m, int p, int id)
{
    if (p < 0 || p >= m->parts) return -1;
    for (int i = 0; i < m->replicas && m->holders[p * m->replicas + i] >= 0; i++)
        if (m->holders[p * m->replicas + i] == id) return i;
    return -1;
}

fs_status_t fs_shard_map_copy(const fs_shard_map_t *m, fs_shard_map_t *out, fs_error_t *err)
{
    *out = *m;
    size_t nh = (size_t)m->parts * (size_t)m->replicas;
    out->owner = malloc(sizeof *out->owner * (size_t)(m->parts + 1));
    out->holders = malloc(sizeof *out->holders * (nh + 1));
    out->shard = malloc(sizeof *out->shard * (size_t)(m->num_shards + 1));
    if (!out->owner || !out->holders || !out->shard) {
        free(out->owner), free(out->holders), free(out->shard);
        memset(out, 0, sizeof *out);
        return fs_error(err, FS_ERR_NOMEM, "out of memory copying the shard map");
    }
    memcpy(out->owner, m->owner, sizeof *out->owner * (size_t)m->parts);
    memcpy(out->holders, m->holders, sizeof *out->holders * nh);
    memcpy(out->shard, m->shard, sizeof *out->shard * (size_t)m->num_shards);
    return FS_OK;
}

void fs_shard_map_free(fs_shard_map_t *m)
{
    free(m->owner);
    free(m->holders);
    free(m->shard);
    memset(m, 0, sizeof *m);
}

int fs_shard_map_same(const fs_shard_map_t *a, const fs_shard_map_t *b)
{
    if (strcmp(a->name, b->name) || strcmp(a->partitioning, b->partitioning) || a->parts != b->parts ||
        a->replicas != b->replicas || a->num_shards != b->num_shards)
        return 0;
    for (int i = 0; i < a->num_shards; i++) {
        const fs_shard_addr_t *x = &a->shard[i], *y = &b->shard[i];
        if (x->id != y->id || strcmp(x->grpc, y->grpc) || strcmp(x->unix_path, y->unix_path) || strcmp(x->host, y->host))
            return 0;
    }
    return memcmp(a->holders, b->holders, (size_t)a->parts * (size_t)a->replicas * sizeof *a->holders) == 0;
}

const fs_shard_addr_t *fs_shard_map_owner(const fs_shard_map_t *m, int p)
{
    if (p < 0 || p >= m->parts || m->owner[p] < 0) return NULL;
    for (int i = 0; i < m->num_shards; i++)
        if (m->shard[i].id == m->owner[p]) return &m->shard[i];
    return NULL;
}

int fs_shard_map_holds(const fs_shard_map_t *m, int p, int id)
{
    return fs_shard_map_rank(m, p, id) >= 0;
}
