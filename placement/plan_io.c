/* plan_io.c — saving and loading a plan.
 *
 * Layout (little-endian, the only byte order featstore runs on; an endian
 * tag makes a foreign file fail loudly rather than load garbage):
 *
 *   "FSPLAN\r\n"  u32 version  u32 endian tag  u64 file bytes
 *   scalars, budgets, solver result, topology split, per-GPU arrays
 *   u64 XXH3-64 of every byte before it
 *
 * One serialiser serves two passes: the first only counts bytes (so the
 * header can carry the file length, which tells truncation from
 * corruption), the second writes and hashes as it streams, so a plan of
 * tens of millions of rows is never copied into a second buffer. Saving
 * goes through a temporary file and rename, so a crash never leaves half a
 * plan under the real name. Loading reads the file, checks header, length
 * and checksum before parsing, bounds-checks every array against the bytes
 * left, and then checks the plan's invariants (ids in range, reader masks
 * within the GPU count, the relabelling a permutation). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_hash.h"
#include "plan.h"

static const char MAGIC[8] = {'F', 'S', 'P', 'L', 'A', 'N', '\r', '\n'};
#define ENDIAN_TAG 0x01020304u
#define HEADER_BYTES 24

/* ---- writing ------------------------------------------------------------------------ */

typedef struct {
    FILE *f;               /* NULL while measuring */
    fs_hash_t *hash;
    uint64_t bytes;
    int failed;
} sink_t;

static void put(sink_t *s, const void *data, size_t len)
{
    s->bytes += len;
    if (!s->f || s->failed || len == 0) return;
    fs_hash_update(s->hash, data, len);
    if (fwrite(data, 1, len, s->f) != len) s->failed = 1;
}

static void put_i32(sink_t *s, int32_t v) { put(s, &v, sizeof v); }
static void put_u32(sink_t *s, uint32_t v) { put(s, &v, sizeof v); }
static void put_i64(sink_t *s, int64_t v) { put(s, &v, sizeof v); }
static void put_f64(sink_t *s, double v) { put(s, &v, sizeof v); }

static void put_header(sink_t *s, uint64_t file_bytes)
{
    put(s, MAGIC, sizeof MAGIC);
    put_u32(s, FS_PLAN_VERSION);
    put_u32(s, ENDIAN_TAG);
    put(s, &file_bytes, sizeof file_bytes);
}

static void put_solver(sink_t *s, const fs_plan_t *p)
{
    int n = p->num_gpus;
    for (int g = 0; g < n; g++) put_u32(s, p->xgnn.holds[g]);
    for (int g = 0; g < n; g++) put(s, p->xgnn.source[g], (size_t)n);
    put_i32(s, p->xgnn.max_load);
    put_i32(s, p->xgnn.replicas);
    put_f64(s, p->xgnn.min_bandwidth);
    put_i32(s, p->xgnn.exact);
    put_i64(s, p->xgnn.search_nodes);
}

static void put_topo(sink_t *s, const fs_topo_split_t *t)
{
    put_i32(s, t->num_parts);
    put_i64(s, t->num_nodes);
    put_i64(s, t->hot);
    for (int q = 0; q < t->num_parts; q++) put_i64(s, t->part_rows[q]), put_i64(s, t->part_bytes[q]);
    put_i32(s, t->old_of_new != NULL);
    if (t->old_of_new) put(s, t->old_of_new, sizeof(int64_t) * (size_t)t->num_nodes);
}

static void put_gpu(sink_t *s, const fs_plan_gpu_t *G)
{
    put_u32(s, G->topo_parts);
    put_u32(s, G->feat_parts);
    put_i64(s, G->num_rows);
    put(s, G->rows, sizeof(int64_t) * (size_t)G->num_rows);
    put(s, G->readers, sizeof(uint32_t) * (size_t)G->num_rows);
    put_i64(s, G->num_topo);
    put(s, G->topo_rows, sizeof(int64_t) * (size_t)G->num_topo);
    put(s, G->topo_readers, sizeof(uint32_t) * (size_t)G->num_topo);
}

static void put_plan(sink_t *s, const fs_plan_t *p, uint64_t file_bytes)
{
    int n = p->num_gpus;
    put_header(s, file_bytes);
    put_i32(s, n);
    put_i32(s, p->policy);
    put_i64(s, p->num_nodes);
    put_i64(s, p->row_bytes);
    put_i64(s, p->feat_hot);
    put_i64(s, p->distinct_rows);
    put_f64(s, p->replication);
    for (int g = 0; g < n; g++) put_i32(s, p->group[g]), put_f64(s, p->alpha[g]);
    put_i32(s, p->budget.feature_first);
    for (int g = 0; g < n; g++) {
        put_i64(s, p->budget.avail_bytes[g]), put_i64(s, p->budget.topo_bytes[g]);
        put_i64(s, p->budget.feat_bytes[g]), put_i64(s, p->budget.bsize[g]);
    }
    put_solver(s, p);
    put_topo(s, &p->topo);
    for (int g = 0; g < n; g++) put_gpu(s, &p->gpu[g]);
}

static fs_status_t write_file(const fs_plan_t *plan, const char *tmp, uint64_t file_bytes, fs_error_t *err)
{
    sink_t s = {.f = fopen(tmp, "wb"), .hash = fs_hash_new()};
    if (!s.f || !s.hash) {
        if (s.f) fclose(s.f);
        fs_hash_free(s.hash);
        return fs_error(err, FS_ERR_IO, "save plan: cannot create %s", tmp);
    }
    put_plan(&s, plan, file_bytes);
    uint64_t sum = fs_hash_digest(s.hash);
    if (!s.failed && fwrite(&sum, sizeof sum, 1, s.f) != 1) s.failed = 1;
    if (fclose(s.f) != 0) s.failed = 1;
    fs_hash_free(s.hash);
    return s.failed ? fs_error(err, FS_ERR_IO, "save plan: write to %s failed", tmp) : FS_OK;
}

fs_status_t fs_plan_save(const fs_plan_t *plan, const char *path, fs_error_t *err)
{
    if (!plan || !path) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "save plan: NULL argument");
    sink_t measure = {0};
    put_plan(&measure, plan, 0);
    uint64_t file_bytes = measure.bytes + sizeof(uint64_t);
    size_t len = strlen(path) + 8;
    char *tmp = malloc(len);
    if (!tmp) return fs_error(err, FS_ERR_NOMEM, "save plan: out of memory");
    snprintf(tmp, len, "%s.tmp", path);
    fs_status_t st = write_file(plan, tmp, file_bytes, err);
    if (st == FS_OK && rename(tmp, path) != 0) st = fs_error(err, FS_ERR_IO, "save plan: cannot rename to %s", path);
    if (st != FS_OK) remove(tmp);
    free(tmp);
    return st;
}

/* ---- reading ------------------------------------------------------------------------- */

typedef struct {
    const unsigned char *data;
    size_t len, pos;
    const char *field;      /* what was being read when the data ran out */
    int short_read;
} source_t;

static int take(source_t *s, void *out, size_t len, const char *field)
{
    if (s->short_read) return 0;
    if (len > s->len - s->pos) {
        s->short_read = 1, s->field = field;
        return 0;
    }
    memcpy(out, s->data + s->pos, len);
    s->pos += len;
    return 1;
}

static int32_t get_i32(source_t *s, const char *f) { int32_t v = 0; take(s, &v, sizeof v, f); return v; }
static uint32_t get_u32(source_t *s, const char *f) { uint32_t v = 0; take(s, &v, sizeof v, f); return v; }
static int64_t get_i64(source_t *s, const char *f) { int64_t v = 0; take(s, &v, sizeof v, f); return v; }
static double get_f64(source_t *s, const char *f) { double v = 0; take(s, &v, sizeof v, f); return v; }

/* An array of count elements: checked against the bytes left before any
 * allocation, so a corrupt count cannot ask for terabytes. */
static void *get_array(source_t *s, int64_t count, size_t elem, const char *field)
{
    if (s->short_read) return NULL;
    if (count < 0 || (uint64_t)count > (s->len - s->pos) / elem) {
        s->short_read = 1, s->field = field;
        return NULL;
    }
    void *a = malloc(elem * (size_t)(count > 0 ? count : 1));
    if (!a) s->short_read = 1, s->field = "(out of memory)";
    else if (count > 0) take(s, a, elem * (size_t)count, field);
    return a;
}

static void get_solver(source_t *s, fs_plan_t *p)
{
    int n = p->num_gpus;
    for (int g = 0; g < n; g++) p->xgnn.holds[g] = get_u32(s, "solver holds");
    for (int g = 0; g < n; g++) take(s, p->xgnn.source[g], (size_t)n, "solver sources");
    p->xgnn.num_gpus = n;
    p->xgnn.max_load = get_i32(s, "solver max load");
    p->xgnn.replicas = get_i32(s, "solver replicas");
    p->xgnn.min_bandwidth = get_f64(s, "solver bandwidth");
    p->xgnn.exact = get_i32(s, "solver exact");
    p->xgnn.search_nodes = get_i64(s, "solver nodes");
}

static void get_topo(source_t *s, fs_topo_split_t *t)
{
    t->num_parts = get_i32(s, "topology partitions");
    t->num_nodes = get_i64(s, "topology nodes");
    t->hot = get_i64(s, "topology hot prefix");
    if (t->num_parts < 0 || t->num_parts > FS_HW_MAX_GPUS) {
        s->short_read = 1, s->field = "topology partitions";
        return;
    }
    for (int q = 0; q < t->num_parts; q++) {
        t->part_rows[q] = get_i64(s, "topology partition rows");
        t->part_bytes[q] = get_i64(s, "topology partition bytes");
    }
    if (get_i32(s, "topology order flag"))
        t->old_of_new = get_array(s, t->num_nodes, sizeof(int64_t), "topology order");
}

static void get_gpu(source_t *s, fs_plan_gpu_t *G)
{
    G->topo_parts = get_u32(s, "GPU topology partitions");
    G->feat_parts = get_u32(s, "GPU feature partitions");
    G->num_rows = get_i64(s, "GPU row count");
    G->rows = get_array(s, G->num_rows, sizeof(int64_t), "GPU rows");
    G->readers = get_array(s, G->num_rows, sizeof(uint32_t), "GPU readers");
    G->num_topo = get_i64(s, "GPU topology count");
    G->topo_rows = get_array(s, G->num_topo, sizeof(int64_t), "GPU topology rows");
    G->topo_readers = get_array(s, G->num_topo, sizeof(uint32_t), "GPU topology readers");
}

static void get_plan(source_t *s, fs_plan_t *p)
{
    p->num_gpus = get_i32(s, "GPU count");
    if (p->num_gpus < 1 || p->num_gpus > FS_HW_MAX_GPUS) return; /* checked by the caller */
    int n = p->num_gpus;
    p->policy = (fs_feat_policy_t)get_i32(s, "policy");
    p->num_nodes = get_i64(s, "node count");
    p->row_bytes = get_i64(s, "row bytes");
    p->feat_hot = get_i64(s, "feature prefix");
    p->distinct_rows = get_i64(s, "distinct rows");
    p->replication = get_f64(s, "replication");
    for (int g = 0; g < n; g++) p->group[g] = get_i32(s, "group"), p->alpha[g] = get_f64(s, "alpha");
    p->budget.num_gpus = n;
    p->budget.feature_first = get_i32(s, "budget order") != 0;
    for (int g = 0; g < n; g++) {
        p->budget.avail_bytes[g] = get_i64(s, "budget"), p->budget.topo_bytes[g] = get_i64(s, "budget");
        p->budget.feat_bytes[g] = get_i64(s, "budget"), p->budget.bsize[g] = get_i64(s, "budget");
    }
    get_solver(s, p);
    get_topo(s, &p->topo);
    for (int g = 0; g < n; g++) get_gpu(s, &p->gpu[g]);
}

/* ---- invariants ------------------------------------------------------------------------- */

static fs_status_t check_ids(const int64_t *ids, const uint32_t *readers, int64_t count, const fs_plan_t *p,
                             const char *what, int g, fs_error_t *err)
{
    uint32_t valid = (1u << p->num_gpus) - 1; /* num_gpus <= 16 */
    for (int64_t k = 0; k < count; k++) {
        if ((uint64_t)ids[k] >= (uint64_t)p->num_nodes)
            return fs_error(err, FS_ERR_FORMAT, "GPU %d %s[%lld] = %lld is not a node id", g, what, (long long)k,
                            (long long)ids[k]);
        if (readers[k] & ~valid)
            return fs_error(err, FS_ERR_FORMAT, "GPU %d %s[%lld] names a reader beyond %d GPUs", g, what,
                            (long long)k, p->num_gpus);
    }
    return FS_OK;
}

static fs_status_t check_topo(fs_plan_t *p, fs_error_t *err)
{
    fs_topo_split_t *t = &p->topo;
    if (!t->old_of_new) return t->hot == 0 ? FS_OK : fs_error(err, FS_ERR_FORMAT, "topology prefix without an order");
    if (t->num_nodes != p->num_nodes || t->hot < 0 || t->hot > t->num_nodes || t->num_parts != p->num_gpus)
        return fs_error(err, FS_ERR_FORMAT, "topology split does not match the plan's sizes");
    t->new_of_old = malloc(sizeof(int64_t) * (size_t)(t->num_nodes > 0 ? t->num_nodes : 1));
    if (!t->new_of_old) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    for (int64_t v = 0; v < t->num_nodes; v++) t->new_of_old[v] = -1;
    for (int64_t k = 0; k < t->num_nodes; k++) {
        int64_t v = t->old_of_new[k];
        if ((uint64_t)v >= (uint64_t)t->num_nodes || t->new_of_old[v] >= 0)
            return fs_error(err, FS_ERR_FORMAT, "topology order is not a permutation (position %lld)", (long long)k);
        t->new_of_old[v] = k;
    }
    return FS_OK;
}

static fs_status_t check_plan(fs_plan_t *p, fs_error_t *err)
{
    if ((unsigned)p->policy >= FS_FEAT_POLICY_COUNT_ || p->policy == FS_FEAT_AUTO)
        return fs_error(err, FS_ERR_FORMAT, "unknown feature policy %d", (int)p->policy);
    if (p->num_nodes < 0 || p->row_bytes <= 0)
        return fs_error(err, FS_ERR_FORMAT, "%lld nodes of %lld bytes", (long long)p->num_nodes,
                        (long long)p->row_bytes);
    for (int g = 0; g < p->num_gpus; g++) {
        for (int q = 0; q < p->num_gpus; q++)
            if (p->xgnn.source[g][q] < -1 || p->xgnn.source[g][q] >= p->num_gpus)
                return fs_error(err, FS_ERR_FORMAT, "solver source [%d][%d] = %d", g, q, p->xgnn.source[g][q]);
        const fs_plan_gpu_t *G = &p->gpu[g];
        fs_status_t st = check_ids(G->rows, G->readers, G->num_rows, p, "rows", g, err);
        if (st == FS_OK) st = check_ids(G->topo_rows, G->topo_readers, G->num_topo, p, "topology rows", g, err);
        if (st != FS_OK) return st;
    }
    return check_topo(p, err);
}

/* ---- load ------------------------------------------------------------------------------------ */

static fs_status_t read_all(const char *path, unsigned char **data, size_t *len, fs_error_t *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) return fs_error(err, FS_ERR_NOT_FOUND, "load plan: cannot open %s", path);
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return fs_error(err, FS_ERR_IO, "load plan: cannot size %s", path);
    }
    *data = malloc((size_t)size + 1);
    if (!*data) {
        fclose(f);
        return fs_error(err, FS_ERR_NOMEM, "load plan: cannot buffer %ld bytes", size);
    }
    *len = fread(*data, 1, (size_t)size, f);
    int failed = ferror(f);
    fclose(f);
    return failed ? fs_error(err, FS_ERR_IO, "load plan: read error on %s", path) : FS_OK;
}

static fs_status_t check_envelope(const unsigned char *data, size_t len, fs_error_t *err)
{
    if (len < HEADER_BYTES + sizeof(uint64_t))
        return fs_error(err, FS_ERR_FORMAT, "truncated: %zu bytes is shorter than a plan header", len);
    if (memcmp(data, MAGIC, sizeof MAGIC) != 0) return fs_error(err, FS_ERR_FORMAT, "not a featstore plan (bad magic)");
    uint32_t version, tag;
    uint64_t file_bytes, stored, computed;
    memcpy(&version, data + 8, 4), memcpy(&tag, data + 12, 4), memcpy(&file_bytes, data + 16, 8);
    if (tag != ENDIAN_TAG) return fs_error(err, FS_ERR_FORMAT, "written on a machine of the other byte order");
    if (version != FS_PLAN_VERSION)
        return fs_error(err, FS_ERR_UNSUPPORTED, "plan format version %u (this build reads %d)", version,
                        FS_PLAN_VERSION);
    if (len < file_bytes)
        return fs_error(err, FS_ERR_FORMAT, "truncated: %zu of %llu bytes", len, (unsigned long long)file_bytes);
    if (len > file_bytes)
        return fs_error(err, FS_ERR_FORMAT, "%zu trailing bytes after the plan", len - (size_t)file_bytes);
    memcpy(&stored, data + len - 8, 8);
    computed = fs_hash64(data, len - 8);
    if (stored != computed)
        return fs_error(err, FS_ERR_FORMAT, "checksum mismatch (stored %016llx, computed %016llx): file is corrupt",
                        (unsigned long long)stored, (unsigned long long)computed);
    return FS_OK;
}

static fs_status_t parse(const unsigned char *data, size_t len, fs_plan_t *p, fs_error_t *err)
{
    source_t s = {.data = data, .len = len - 8, .pos = HEADER_BYTES};
    get_plan(&s, p);
    if (p->num_gpus < 1 || p->num_gpus > FS_HW_MAX_GPUS)
        return fs_error(err, FS_ERR_FORMAT, "%d GPUs (need 1..%d)", p->num_gpus, FS_HW_MAX_GPUS);
    if (s.short_read) return fs_error(err, FS_ERR_FORMAT, "field '%s' runs past the end of the data", s.field);
    if (s.pos != s.len) return fs_error(err, FS_ERR_FORMAT, "%zu unread bytes before the checksum", s.len - s.pos);
    return check_plan(p, err);
}

fs_status_t fs_plan_load_buffer(const void *data, size_t len, fs_plan_t **out, fs_error_t *err)
{
    if (!data || !out) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "load plan: NULL argument");
    *out = NULL;
    fs_plan_t *plan = NULL;
    fs_status_t st = check_envelope(data, len, err);
    if (st == FS_OK && !(plan = calloc(1, sizeof *plan))) st = fs_error(err, FS_ERR_NOMEM, "out of memory");
    if (st == FS_OK) st = parse(data, len, plan, err);
    if (st != FS_OK) {
        fs_plan_free(plan);
        return st;
    }
    *out = plan;
    return FS_OK;
}

fs_status_t fs_plan_load(const char *path, fs_plan_t **out, fs_error_t *err)
{
    if (!path || !out) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "load plan: NULL argument");
    *out = NULL;
    unsigned char *data = NULL;
    size_t len = 0;
    fs_status_t st = read_all(path, &data, &len, err);
    if (st == FS_OK) st = fs_plan_load_buffer(data, len, out, err);
    free(data);
    if (st != FS_OK && err && st != FS_ERR_NOT_FOUND && st != FS_ERR_NOMEM) fs_error_prefix(err, "load plan %s", path);
    return st;
}
