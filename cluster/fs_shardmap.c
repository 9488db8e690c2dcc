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

static fs_status_t header(const json_t *root, const char *format, const char *where, fs_error_t *err)
{
    json_t *v;
    const char *s = "";
    int version;
    if (!json_is_object(root)) return fs_error(err, FS_ERR_FORMAT, "%s: not a JSON object", where);
    fs_status_t st = need(root, "format", where, &v, err);
    if (st == FS_OK) st = fs_json_string(v, where, "format", &s, err);
    if (st == FS_OK && strcmp(s, format) != 0)
        return fs_error(err, FS_ERR_FORMAT, "%s: \"format\" is \"%s\", not \"%s\"", where, s, format);
    if (st == FS_OK) st = int_field(root, "version", where, 1, 1000, &version, err);
    if (st == FS_OK && version != 1)
        return fs_error(err, FS_ERR_VERSION, "%s: version %d; this featstore reads version 1", where, version);
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

static json_t *parse_json(const char *text, size_t len, const char *where, fs_error_t *err)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) fs_error(err, FS_ERR_FORMAT, "%s: not valid JSON: %s (line %d)", where, je.text, je.line);
    return root;
}

/* ---- registrations -------------------------------------------------------------- */

static const char *const REG_KEYS[] = {"format", "version", "id", "grpc", "unix", "host", "partitioning",
                                       "parts", "owns", NULL};

char *fs_shard_reg_format(const fs_shard_reg_t *r)
{
    json_t *owns = json_array();
    for (int i = 0; i < r->num_owned; i++) json_array_append_new(owns, json_integer(r->owns[i]));
    json_t *root = json_pack("{s:s, s:i, s:i, s:s, s:s, s:s, s:s, s:i, s:o}", "format", REG_FORMAT, "version", 1, "id",
                             r->addr.id, "grpc", r->addr.grpc, "unix", r->addr.unix_path, "host", r->addr.host,
                             "partitioning", r->partitioning, "parts", r->parts, "owns", owns);
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
    fs_status_t st = header(root, REG_FORMAT, where, err);
    if (st == FS_OK) st = fs_json_only_keys(root, REG_KEYS, where, err);
    if (st == FS_OK) st = addr_fields(root, where, &out->addr, err);
    if (st == FS_OK) st = partitioning_field(root, where, out->partitioning, err);
    if (st == FS_OK) st = int_field(root, "parts", where, 1, FS_PARTITION_MAX_PARTS, &out->parts, err);
    if (st == FS_OK)
        st = int_array(root, "owns", where, (size_t)out->parts, 0, out->parts - 1, &out->owns, &out->num_owned, err);
    for (int i = 1; st == FS_OK && i < out->num_owned; i++)
        if (out->owns[i] <= out->owns[i - 1])
            st = fs_error(err, FS_ERR_FORMAT, "%s: shard %d's \"owns\" must ascend without repeats (entry %d)", where,
                          out->addr.id, i);
    json_decref(root);
    if (st != FS_OK) fs_shard_reg_free(out);
    return st;
}

void fs_shard_reg_free(fs_shard_reg_t *r)
{
    free(r->owns);
    memset(r, 0, sizeof *r);
}

/* ---- the map ---------------------------------------------------------------------- */

static int by_id(const void *a, const void *b)
{
    const fs_shard_reg_t *x = *(const fs_shard_reg_t *const *)a, *y = *(const fs_shard_reg_t *const *)b;
    return (x->addr.id > y->addr.id) - (x->addr.id < y->addr.id);
}

static fs_status_t map_alloc(fs_shard_map_t *m, int parts, int shards, fs_error_t *err)
{
    m->owner = malloc((size_t)parts * sizeof *m->owner);
    m->shard = calloc(shards ? (size_t)shards : 1, sizeof *m->shard);
    if (!m->owner || !m->shard) return fs_error(err, FS_ERR_NOMEM, "shard map: out of memory");
    for (int p = 0; p < parts; p++) m->owner[p] = -1;
    m->parts = parts;
    m->num_shards = shards;
    return FS_OK;
}

fs_status_t fs_shard_map_build(const char *name, const fs_shard_reg_t *regs, int n, fs_shard_map_t *out,
                               fs_error_t *err)
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
    memcpy(out->partitioning, sorted[0]->partitioning, sizeof out->partitioning);
    st = map_alloc(out, sorted[0]->parts, n, err);
    for (int i = 0; st == FS_OK && i < n; i++) {
        const fs_shard_reg_t *r = sorted[i];
        if (i > 0 && r->addr.id == sorted[i - 1]->addr.id)
            st = fs_error(err, FS_ERR_EXISTS, "cluster %s: shard %d is registered twice", name, r->addr.id);
        else if (strcmp(r->partitioning, out->partitioning) != 0 || r->parts != out->parts)
            st = fs_error(err, FS_ERR_FORMAT,
                          "cluster %s: shard %d serves partitioning %s of %d parts, shard %d %s of %d: one cluster "
                          "serves one partitioning",
                          name, r->addr.id, r->partitioning, r->parts, sorted[0]->addr.id, out->partitioning, out->parts);
        out->shard[i] = r->addr;
        for (int j = 0; st == FS_OK && j < r->num_owned; j++) {
            int p = r->owns[j];
            if (out->owner[p] >= 0)
                st = fs_error(err, FS_ERR_EXISTS, "cluster %s: part %d is held by both shard %d and shard %d", name, p,
                              out->owner[p], r->addr.id);
            out->owner[p] = r->addr.id;
        }
    }
    free(sorted);
    if (st != FS_OK) fs_shard_map_free(out);
    return st;
}

static const char *const MAP_KEYS[] = {"format", "version", "name", "partitioning", "parts", "shards", "owners", NULL};
static const char *const ADDR_KEYS[] = {"id", "grpc", "unix", "host", NULL};

char *fs_shard_map_format(const fs_shard_map_t *m)
{
    json_t *shards = json_array(), *owners = json_array();
    for (int i = 0; i < m->num_shards; i++) {
        const fs_shard_addr_t *a = &m->shard[i];
        json_array_append_new(shards, json_pack("{s:i, s:s, s:s, s:s}", "id", a->id, "grpc", a->grpc, "unix",
                                                a->unix_path, "host", a->host));
    }
    for (int p = 0; p < m->parts; p++) json_array_append_new(owners, json_integer(m->owner[p]));
    json_t *root = json_pack("{s:s, s:i, s:s, s:s, s:i, s:o, s:o}", "format", MAP_FORMAT, "version", 1, "name",
                             m->name, "partitioning", m->partitioning, "parts", m->parts, "shards", shards, "owners",
                             owners);
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

fs_status_t fs_shard_map_parse(const char *json, size_t len, fs_shard_map_t *out, fs_error_t *err)
{
    const char *where = "shard map";
    memset(out, 0, sizeof *out);
    json_t *root = parse_json(json, len, where, err);
    if (!root) return FS_ERR_FORMAT;
    int n = 0;
    fs_status_t st = header(root, MAP_FORMAT, where, err);
    if (st == FS_OK) st = fs_json_only_keys(root, MAP_KEYS, where, err);
    if (st == FS_OK) st = str_field(root, "name", where, FS_CLUSTER_NAME_MAX, 0, out->name, err);
    if (st == FS_OK) st = fs_cluster_name_check(out->name, err);
    if (st == FS_OK) st = partitioning_field(root, where, out->partitioning, err);
    if (st == FS_OK) st = int_field(root, "parts", where, 1, FS_PARTITION_MAX_PARTS, &out->parts, err);
    if (st == FS_OK) st = map_shards(root, where, out, err);
    if (st == FS_OK)
        st = int_array(root, "owners", where, (size_t)out->parts, -1, FS_CLUSTER_SHARDS_MAX - 1, &out->owner, &n, err);
    if (st == FS_OK && n != out->parts)
        st = fs_error(err, FS_ERR_FORMAT, "%s: \"owners\" has %d entries for %d parts", where, n, out->parts);
    for (int p = 0; st == FS_OK && p < out->parts; p++)
        if (out->owner[p] >= 0 && !has_shard(out, out->owner[p]))
            st = fs_error(err, FS_ERR_FORMAT, "%s: part %d's owner, shard %d, is not in \"shards\"", where, p,
                          out->owner[p]);
    json_decref(root);
    if (st != FS_OK) fs_shard_map_free(out);
    return st;
}

fs_status_t fs_shard_map_copy(const fs_shard_map_t *m, fs_shard_map_t *out, fs_error_t *err)
{
    *out = *m;
    out->owner = malloc(sizeof *out->owner * (size_t)(m->parts + 1));
    out->shard = malloc(sizeof *out->shard * (size_t)(m->num_shards + 1));
    if (!out->owner || !out->shard) {
        free(out->owner), free(out->shard);
        memset(out, 0, sizeof *out);
        return fs_error(err, FS_ERR_NOMEM, "out of memory copying the shard map");
    }
    memcpy(out->owner, m->owner, sizeof *out->owner * (size_t)m->parts);
    memcpy(out->shard, m->shard, sizeof *out->shard * (size_t)m->num_shards);
    return FS_OK;
}

void fs_shard_map_free(fs_shard_map_t *m)
{
    free(m->owner);
    free(m->shard);
    memset(m, 0, sizeof *m);
}

int fs_shard_map_same(const fs_shard_map_t *a, const fs_shard_map_t *b)
{
    if (strcmp(a->name, b->name) || strcmp(a->partitioning, b->partitioning) || a->parts != b->parts ||
        a->num_shards != b->num_shards)
        return 0;
    for (int i = 0; i < a->num_shards; i++) {
        const fs_shard_addr_t *x = &a->shard[i], *y = &b->shard[i];
        if (x->id != y->id || strcmp(x->grpc, y->grpc) || strcmp(x->unix_path, y->unix_path) || strcmp(x->host, y->host))
            return 0;
    }
    return memcmp(a->owner, b->owner, (size_t)a->parts * sizeof *a->owner) == 0;
}

const fs_shard_addr_t *fs_shard_map_owner(const fs_shard_map_t *m, int p)
{
    if (p < 0 || p >= m->parts || m->owner[p] < 0) return NULL;
    for (int i = 0; i < m->num_shards; i++)
        if (m->shard[i].id == m->owner[p]) return &m->shard[i];
    return NULL;
}
