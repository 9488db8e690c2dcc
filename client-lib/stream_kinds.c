/* stream_kinds.c — the stream open calls: one per kind of batch
 * (fs_stream_open_nodes, _hetero, _link, _rows; since 1.5) and the 1.4
 * form, fs_stream_open, which forwards to them.
 *
 * Design: every call reads its versioned structs into one stream_spec_t
 * (stream_internal.h) — the kind, and the 1.4 struct's fields that kind
 * uses — and hands it to fs_stream_open_spec (stream_open.c), so both
 * forms open the same stream from the same values, bit for bit. A per-kind
 * struct cannot carry another kind's field; the 1.4 struct can, so before
 * it forwards, fs_stream_open refuses by name every field set that does not
 * apply to the kind the others make (one table, foreign_field, says which
 * kinds each field applies to) instead of ignoring it. What every form must
 * give its kind (a request, tables) is checked once, in check_kind. */
#include <stdio.h>
#include <string.h>

#include "stream_internal.h"

#define KIND(k) (1u << (k))

static const char *kind_name(stream_kind_t k)
{
    static const char *const names[] = {[STREAM_NODES] = "node", [STREAM_TYPED] = "hetero",
                                        [STREAM_LINK] = "link", [STREAM_ROWS] = "row"};
    return names[k];
}

/* "node", "node and row", "node, hetero and row": the kinds in mask. */
static void kinds_text(unsigned mask, char *out, size_t cap)
{
    const char *names[4];
    int n = 0;
    for (int k = STREAM_NODES; k <= STREAM_ROWS; k++)
        if (mask & KIND(k)) names[n++] = kind_name((stream_kind_t)k);
    size_t at = 0;
    out[0] = '\0';
    for (int i = 0; i < n && at < cap; i++)
        at += (size_t)snprintf(out + at, cap - at, "%s%s", i == 0 ? "" : i == n - 1 ? " and " : ", ", names[i]);
}

/* What a refusal adds for the kind it names, so the message says what to
 * do instead. */
static const char *kind_hint(const char *field, stream_kind_t kind)
{
    if (kind == STREAM_ROWS) return " (it gathers its tables' rows without sampling)";
    if (strcmp(field, "labels") == 0) return ": put the label table in the hetero request's node_tables";
    if (strcmp(field, "tables") == 0) return ": put them in the hetero request's node_tables";
    return "";
}

/* The first field of o that is set but does not apply to kind: its name
 * and the kinds it applies to; NULL if none. "Set" is what its zero (or,
 * for window, its 1) is not: the value that changes nothing. */
static const char *foreign_field(const fs_stream_opts_t *o, stream_kind_t kind, unsigned *applies)
{
    const unsigned nodes = KIND(STREAM_NODES), rows = KIND(STREAM_ROWS), typed = KIND(STREAM_TYPED);
    const struct {
        const char *name;
        unsigned kinds;
        int set;
    } fields[] = {
        {"sample", nodes, o->sample != NULL},
        {"table", nodes, o->table != NULL},
        {"delta", nodes, o->delta != FS_DELTA_OFF},
        {"window", nodes, o->window > 1},
        {"out_dtype", nodes | rows, o->out_dtype != FS_DTYPE_INVALID},
        {"labels", nodes | rows, o->labels && o->labels[0]},
        {"seed_type", typed, o->seed_type != NULL},
        {"tables", rows, o->tables != NULL || o->num_tables != 0},
    };
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        if (fields[i].set && !(fields[i].kinds & KIND(kind))) {
            *applies = fields[i].kinds;
            return fields[i].name;
        }
    return NULL;
}

/* What the kind itself needs, whichever form gave it: its request(s), its
 * tables, a known `calls`. */
static fs_status_t check_kind(fs_client_t *c, const stream_spec_t *spec)
{
    const fs_stream_opts_t *o = &spec->o;
    switch (spec->kind) {
    case STREAM_NODES:
        if (!o->sample) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: no sampling request (sample)");
        if ((unsigned)spec->calls > FS_STREAM_CALLS_BATCH)
            return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: unknown calls %d (FS_STREAM_CALLS_AUTO, "
                                  "_STREAM or _BATCH)", (int)spec->calls);
        return FS_OK;
    case STREAM_LINK:
    case STREAM_TYPED:
        if (spec->kind == STREAM_LINK && !o->link)
            return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: a link stream needs link, the seed edges' "
                                  "type and negatives");
        if (!o->hetero)
            return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: a %s stream needs hetero, the request that "
                                  "samples %s", kind_name(spec->kind), spec->kind == STREAM_LINK ?
                                  "the endpoints' neighbourhoods" : "each batch");
        return FS_OK;
    case STREAM_ROWS:
        if (o->num_tables == 0)
            return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: a row stream needs tables (num_tables is 0)");
        if (o->num_tables > 16)
            return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: %zu tables, at most 16 per row stream",
                                  o->num_tables);
        if (!o->tables)
            return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: num_tables is %zu but no tables given",
                                  o->num_tables);
        return FS_OK;
    }
    return FS_ERR_INTERNAL;
}

static fs_status_t open_spec(fs_client_t *c, const stream_spec_t *spec, fs_stream_t **out)
{
    fs_status_t st = check_kind(c, spec);
    return st == FS_OK ? fs_stream_open_spec(c, spec, out) : st;
}

/* ---- the 1.4 form ------------------------------------------------------------------ */

FS_API fs_status_t fs_stream_open(fs_client_t *c, const fs_stream_opts_t *opts, fs_stream_t **out)
{
    if (!c || !out) return FS_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (!opts) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: no options");
    stream_spec_t spec = {.calls = FS_STREAM_CALLS_AUTO};
    fs_error_t err = {0};
    if (fs_struct_read(&spec.o, sizeof spec.o, opts, sizeof spec.o, "fs_stream_opts_t", &err) != FS_OK)
        return fs_client_fail(c, err.code, "%s", err.msg);
    const fs_stream_opts_t *o = &spec.o;
    spec.kind = o->link ? STREAM_LINK : o->hetero ? STREAM_TYPED : o->num_tables ? STREAM_ROWS : STREAM_NODES;
    unsigned applies = 0;
    const char *field = foreign_field(o, spec.kind, &applies);
    if (field) {
        char kinds[64];
        kinds_text(applies, kinds, sizeof kinds);
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: %s applies to %s streams only; this is a %s "
                              "stream%s", field, kinds, kind_name(spec.kind), kind_hint(field, spec.kind));
    }
    return open_spec(c, &spec, out);
}

/* ---- one call per kind -------------------------------------------------------------- */

/* spec's kind and the common options: the 1.4 struct's fields of the same
 * names. */
static fs_status_t read_common(fs_client_t *c, const fs_stream_common_t *common, stream_kind_t kind,
                               stream_spec_t *spec)
{
    fs_stream_common_t m;
    fs_error_t err = {0};
    if (!common) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: no common options (fs_stream_common_t)");
    if (fs_struct_read(&m, sizeof m, common, sizeof m, "fs_stream_common_t", &err) != FS_OK)
        return fs_client_fail(c, err.code, "%s", err.msg);
    *spec = (stream_spec_t){.kind = kind, .calls = FS_STREAM_CALLS_AUTO};
    fs_stream_opts_t *o = &spec->o;
    *o = (fs_stream_opts_t)FS_STREAM_OPTS_INIT;
    o->split = m.split, o->seeds = m.seeds, o->num_seeds = m.num_seeds, o->batch_size = m.batch_size;
    o->drop_last = m.drop_last, o->seed = m.seed, o->epoch = m.epoch, o->chunk = m.chunk;
    o->start_batch = m.start_batch, o->order = m.order, o->rank = m.rank, o->world_size = m.world_size;
    o->prefetch = m.prefetch, o->hold = m.hold, o->producers = m.producers;
    return FS_OK;
}

/* A kind's own options struct, read as `what` into dst (dst_size bytes). */
static fs_status_t read_kind(fs_client_t *c, void *dst, size_t dst_size, const void *src, const char *what)
{
    fs_error_t err = {0};
    if (!src) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: no %s", what);
    if (fs_struct_read(dst, dst_size, src, dst_size, what, &err) != FS_OK)
        return fs_client_fail(c, err.code, "%s", err.msg);
    return FS_OK;
}

FS_API fs_status_t fs_stream_open_nodes(fs_client_t *c, const fs_stream_common_t *common,
                                        const fs_stream_node_opts_t *opts, fs_stream_t **out)
{
    if (!c || !out) return FS_ERR_INVALID_ARGUMENT;
    *out = NULL;
    stream_spec_t spec;
    fs_stream_node_opts_t n;
    fs_status_t st = read_common(c, common, STREAM_NODES, &spec);
    if (st == FS_OK) st = read_kind(c, &n, sizeof n, opts, "fs_stream_node_opts_t");
    if (st != FS_OK) return st;
    spec.o.sample = n.sample, spec.o.table = n.table, spec.o.labels = n.labels, spec.o.out_dtype = n.out_dtype;
    spec.o.delta = n.delta, spec.o.window = n.window, spec.calls = n.calls;
    return open_spec(c, &spec, out);
}

FS_API fs_status_t fs_stream_open_hetero(fs_client_t *c, const fs_stream_common_t *common,
                                         const fs_stream_hetero_opts_t *opts, fs_stream_t **out)
{
    if (!c || !out) return FS_ERR_INVALID_ARGUMENT;
    *out = NULL;
    stream_spec_t spec;
    fs_stream_hetero_opts_t h;
    fs_status_t st = read_common(c, common, STREAM_TYPED, &spec);
    if (st == FS_OK) st = read_kind(c, &h, sizeof h, opts, "fs_stream_hetero_opts_t");
    if (st != FS_OK) return st;
    spec.o.hetero = h.request, spec.o.seed_type = h.seed_type;
    return open_spec(c, &spec, out);
}

FS_API fs_status_t fs_stream_open_link(fs_client_t *c, const fs_stream_common_t *common,
                                       const fs_stream_link_opts_t *opts, fs_stream_t **out)
{
    if (!c || !out) return FS_ERR_INVALID_ARGUMENT;
    *out = NULL;
    stream_spec_t spec;
    fs_stream_link_opts_t l;
    fs_status_t st = read_common(c, common, STREAM_LINK, &spec);
    if (st == FS_OK) st = read_kind(c, &l, sizeof l, opts, "fs_stream_link_opts_t");
    if (st != FS_OK) return st;
    spec.o.hetero = l.request, spec.o.link = l.link;
    return open_spec(c, &spec, out);
}

FS_API fs_status_t fs_stream_open_rows(fs_client_t *c, const fs_stream_common_t *common,
                                       const fs_stream_rows_opts_t *opts, fs_stream_t **out)
{
    if (!c || !out) return FS_ERR_INVALID_ARGUMENT;
    *out = NULL;
    stream_spec_t spec;
    fs_stream_rows_opts_t r;
    fs_status_t st = read_common(c, common, STREAM_ROWS, &spec);
    if (st == FS_OK) st = read_kind(c, &r, sizeof r, opts, "fs_stream_rows_opts_t");
    if (st != FS_OK) return st;
    spec.o.tables = r.tables, spec.o.num_tables = r.num_tables, spec.o.labels = r.labels;
    spec.o.out_dtype = r.out_dtype;
    return open_spec(c, &spec, out);
}
