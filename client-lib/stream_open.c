/* stream_open.c — opening a stream: its options (a stream_spec_t, which
 * stream_kinds.c makes from the per-kind calls and the 1.4 form) read into
 * its state (stream_internal.h): the kind of batches (node, hetero, link, rows), the
 * requests deep-copied so the caller's options need not outlive the call,
 * the tables checked against fs_info, the seeds copied from a split or an
 * array, the epoch planned (kernels/fs_epoch.h), a typed request probed
 * with one seed so a bad type, fanout or table is named at open, then the
 * stream's own connection and producer thread started (docs/api.md §11).
 * Its epoch plan is made where fs_stream_plan_open makes one (make_plan),
 * and its default prefetch is what fs_stream_default_prefetch reports, so
 * that callers making batches with explicit calls follow the same plan. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_codec.h"
#include "fs_info.h"
#include "fs_parallel.h"
#include "stream_internal.h"

/* ---- the epoch plan: a stream's, and fs_stream_plan_open's -------------------------- */

/* The one place a stream's options become an epoch plan, so that a stream
 * and a plan opened with the same options deal the same batches. */
static fs_status_t make_plan(const fs_stream_plan_opts_t *po, fs_epoch_t *out, fs_error_t *err)
{
    static const fs_epoch_order_t orders[] = {[FS_ORDER_RANDOM] = FS_EPOCH_RANDOM,
                                              [FS_ORDER_SEQUENTIAL] = FS_EPOCH_SEQUENTIAL,
                                              [FS_ORDER_CHUNKED] = FS_EPOCH_CHUNKED};
    if ((unsigned)po->order > FS_ORDER_CHUNKED)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "unknown order %d", (int)po->order);
    int world = po->world_size == 0 && po->rank == 0 ? 1 : po->world_size; /* 0, 0: a single trainer */
    fs_epoch_opts_t eo = {.num_items = po->num_seeds, .batch_size = po->batch_size, .drop_last = po->drop_last,
                          .order = orders[po->order], .chunk = po->chunk, .seed = po->seed, .epoch = po->epoch,
                          .rank = po->rank, .world_size = world};
    return fs_epoch_plan(&eo, out, err);
}

struct fs_stream_plan {
    fs_epoch_t e;
    fs_error_t err;
};

FS_API fs_status_t fs_stream_plan_open(const fs_stream_plan_opts_t *opts, fs_stream_plan_t **out)
{
    if (!out) return FS_ERR_INVALID_ARGUMENT;
    fs_stream_plan_t *p = *out = calloc(1, sizeof *p);
    if (!p) return FS_ERR_NOMEM;
    fs_stream_plan_opts_t po;
    if (!opts) return fs_error(&p->err, FS_ERR_INVALID_ARGUMENT, "plan: no options");
    if (fs_struct_read(&po, sizeof po, opts, sizeof po, "fs_stream_plan_opts_t", &p->err) != FS_OK) return p->err.code;
    return make_plan(&po, &p->e, &p->err);
}

FS_API int64_t fs_stream_plan_num_batches(const fs_stream_plan_t *p)
{
    return p && p->err.code == FS_OK ? p->e.num_batches : 0;
}

FS_API int64_t fs_stream_plan_batch(const fs_stream_plan_t *p, int64_t b, int64_t *positions)
{
    return p && p->err.code == FS_OK && positions ? fs_epoch_batch(&p->e, b, positions) : 0;
}

FS_API uint64_t fs_stream_plan_batch_seed(const fs_stream_plan_t *p, int64_t b)
{
    return p && p->err.code == FS_OK ? fs_epoch_batch_seed(&p->e, b) : 0;
}

FS_API const char *fs_stream_plan_errstr(const fs_stream_plan_t *p)
{
    return p ? p->err.msg : "out of memory";
}

FS_API void fs_stream_plan_free(fs_stream_plan_t *p)
{
    free(p);
}

/* ---- opening ------------------------------------------------------------------ */

static const fs_table_info_t *find_table(const fs_info_t *info, const char *name)
{
    for (size_t i = 0; i < info->num_tables; i++)
        if (strcmp(info->tables[i].name, name) == 0) return &info->tables[i];
    return NULL;
}

static const char *info_table_name(const void *info, int i)
{
    return ((const fs_info_t *)info)->tables[i].name;
}

/* NOT_FOUND naming the tables there are, as the stream's error; `role`
 * says which option named it. */
static fs_status_t no_table(fs_client_t *c, const fs_info_t *info, const char *role, const char *name)
{
    fs_error_t err = {0};
    fs_table_not_found(&err, info->dataset, "feature", name, (int)info->num_tables, info_table_name, info);
    return fs_client_fail(c, FS_ERR_NOT_FOUND, "stream: %s: %s", role, err.msg);
}

static fs_status_t copy_name(fs_client_t *c, char *dst, size_t cap, const char *what, const char *v)
{
    if (strlen(v) >= cap) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: %s '%.40s...' is too long", what, v);
    strcpy(dst, v);
    return FS_OK;
}

/* Whether a server can make a node stream's batches in one Stream call:
 * over grpc:// (this process makes them over unix://), 1.5 or later. */
static int server_can_make_batches(const fs_client_t *c, const fs_info_t *info)
{
    int major = 0, minor = 0;
    if (!c->ops->epoch_open || !info->server_version) return 0;
    if (sscanf(info->server_version, "%d.%d", &major, &minor) != 2) return 0;
    return major > 1 || (major == 1 && minor >= 5);
}

/* s->remote: whether the server makes this node stream's batches, as
 * `calls` says. AUTO: where it can, unless FEATSTORE_STREAM_CALLS=batch,
 * the 1.5 fallback kept for programs of the 1.4 form, which has no `calls`;
 * STREAM where it cannot is refused, naming why. */
static fs_status_t choose_calls(fs_client_t *c, fs_stream_t *s, fs_stream_calls_t calls, const fs_info_t *info)
{
    const char *env = getenv("FEATSTORE_STREAM_CALLS");
    int can = s->kind == STREAM_NODES && server_can_make_batches(c, info);
    if (calls == FS_STREAM_CALLS_STREAM && !can)
        return fs_client_fail(c, FS_ERR_UNSUPPORTED, "stream: calls = FS_STREAM_CALLS_STREAM, but %s: use "
                              "FS_STREAM_CALLS_AUTO (or _BATCH)", !c->ops->epoch_open ?
                              "over unix:// this process makes the batches itself" :
                              "this server cannot make a stream's batches (a 1.5 server or later can)");
    s->remote = calls == FS_STREAM_CALLS_STREAM ||
                (calls == FS_STREAM_CALLS_AUTO && can && !(env && strcmp(env, "batch") == 0));
    return FS_OK;
}

static int is_row_table(const fs_info_t *info, const char *name)
{
    for (size_t i = 0; i < info->num_row_tables; i++)
        if (strcmp(info->row_tables[i], name) == 0) return 1;
    return 0;
}

/* A row stream over row tables (a labelled layout): all its tables are row
 * tables or none are, and its split has rows in them. */
static fs_status_t resolve_row_layout(fs_client_t *c, fs_stream_t *s, const fs_stream_opts_t *o, const fs_info_t *info)
{
    size_t rows = 0;
    for (size_t k = 0; k < o->num_tables; k++) rows += is_row_table(info, o->tables[k]);
    if (rows == 0) return FS_OK;
    if (rows < o->num_tables)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: '%s' is a row table (read by row) and other tables "
                              "are not (read by node): a row stream reads one kind", o->tables[0]);
    if (!o->split)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: row tables are read by row: give a split (its "
                              "rows are the epoch), not a seed array");
    for (size_t i = 0; i < info->num_row_splits; i++)
        if (strcmp(info->row_splits[i].name, o->split) == 0) {
            s->row_layout = 1;
            s->split_rows[0] = info->row_splits[i].offset, s->split_rows[1] = info->row_splits[i].count;
            return FS_OK;
        }
    return fs_client_fail(c, FS_ERR_NOT_FOUND, "stream: split '%s' has no rows in the row tables of dataset '%s'",
                          o->split, info->dataset);
}

/* The tables: the features' (unless sampling only) and the labels'; and
 * who makes a node stream's batches. */
static fs_status_t resolve_tables(fs_client_t *c, fs_stream_t *s, const fs_stream_opts_t *o, fs_stream_calls_t calls)
{
    if (s->kind == STREAM_TYPED || s->kind == STREAM_LINK) /* a hetero request gathers its own tables */
        return FS_OK;
    fs_info_t *info;
    fs_status_t st = fs_info(c, &info);
    if (st != FS_OK) return st;
    if (info->typed) st = fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: '%s' is a heterogeneous graph: open a "
                                         "hetero stream (fs_stream_open_hetero; fs_stream_open_link for link "
                                         "prediction)", info->dataset);
    for (size_t k = 0; st == FS_OK && k < o->num_tables; k++)
        if (!o->tables[k] || !find_table(info, o->tables[k]))
            st = no_table(c, info, "tables", o->tables[k] ? o->tables[k] : "(null)");
    const fs_table_info_t *t = o->table ? find_table(info, o->table) : NULL;
    if (st == FS_OK && o->table && !t) st = no_table(c, info, "table", o->table);
    if (st == FS_OK && t) { /* the rows' form: from the table's stored one (a compressed table's), else its listed one */
        const fs_compressed_info_t *z = fs_info_find_compressed(info, t->name);
        fs_error_t err = {0};
        if (fs_codec_served(z ? fs_codec_from_name(z->codec) : FS_CODEC_NONE, z ? z->stored_dtype : t->dtype,
                            z ? z->stored_dim : t->dim, o->out_dtype, t->name, &s->row_dtype, &s->dim, &err) != FS_OK)
            st = fs_client_fail(c, err.code, "stream: %s", err.msg);
    }
    const char *labels = o->labels ? o->labels : find_table(info, "labels") ? "labels" : "";
    if (st == FS_OK && labels[0] && !find_table(info, labels))
        st = no_table(c, info, "labels", labels);
    if (st == FS_OK && o->table) st = copy_name(c, s->table, sizeof s->table, "table", o->table);
    if (st == FS_OK) st = copy_name(c, s->labels, sizeof s->labels, "label table", labels);
    if (st == FS_OK && s->kind == STREAM_ROWS) st = resolve_row_layout(c, s, o, info);
    if (st == FS_OK) st = choose_calls(c, s, calls, info);
    fs_info_free(info);
    return st;
}

/* The seeds, copied: a split's ids or the caller's array. */
static fs_status_t take_seeds(fs_client_t *c, fs_stream_t *s, const fs_stream_opts_t *o, int64_t *n)
{
    if (!!o->split == !!o->seeds)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: give the seeds as a split name or as an array, "
                              "not %s", o->split ? "both" : "neither");
    fs_ids_t *ids = NULL;
    const int64_t *src = o->seeds;
    *n = o->num_seeds;
    if (s->row_layout) { /* the split's rows: the epoch's items are row numbers */
        *n = s->split_rows[1];
        if (!(s->items = malloc(sizeof *s->items * (size_t)(*n > 0 ? *n : 1))))
            return fs_client_fail(c, FS_ERR_NOMEM, "stream: out of memory for %lld rows", (long long)*n);
        for (int64_t i = 0; i < *n; i++) s->items[i] = s->split_rows[0] + i;
        return FS_OK;
    }
    if (o->split) {
        fs_status_t st = fs_split(c, o->split, &ids);
        if (st != FS_OK) return st;
        src = ids->ids, *n = ids->n;
        snprintf(s->split, sizeof s->split, "%s", o->split); /* shorter: fs_split refuses longer names */
    } else if (o->num_seeds < 0) {
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: num_seeds is %lld", (long long)o->num_seeds);
    }
    s->items = malloc(sizeof *s->items * (size_t)(*n > 0 ? *n : 1));
    if (s->items) memcpy(s->items, src, sizeof *s->items * (size_t)*n);
    fs_ids_free(ids);
    return s->items ? FS_OK : fs_client_fail(c, FS_ERR_NOMEM, "stream: out of memory for %lld seeds", (long long)*n);
}

/* ---- opening typed and link streams ------------------------------------------- */

static size_t str_size(const char *v) { return v ? strlen(v) + 1 : 0; }

static const char *put_str(char **at, const char *v)
{
    if (!v) return NULL;
    size_t n = strlen(v) + 1;
    char *r = memcpy(*at, v, n);
    *at += n;
    return r;
}

/* s->typed: the caller's typed request, its fanouts and table names copied. */
static fs_status_t copy_typed_request(fs_client_t *c, fs_stream_t *s, const fs_hetero_req_t *in)
{
    fs_hetero_req_t r;
    fs_error_t err = {0};
    if (fs_struct_read(&r, sizeof r, in, sizeof r, "fs_hetero_req_t", &err) != FS_OK)
        return fs_client_fail(c, err.code, "%s", err.msg);
    if ((r.num_fanouts && !r.fanouts) || (r.num_node_tables && !r.node_tables) || (r.num_edge_tables && !r.edge_tables))
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: the typed request counts fanouts or tables it "
                              "does not give");
    size_t nf = r.num_fanouts, nt = r.num_node_tables, et = r.num_edge_tables, strings = 1;
    for (size_t i = 0; i < nf; i++)
        strings += str_size(r.fanouts[i].src) + str_size(r.fanouts[i].rel) + str_size(r.fanouts[i].dst);
    for (size_t i = 0; i < nt; i++) strings += str_size(r.node_tables[i]);
    for (size_t i = 0; i < et; i++) strings += str_size(r.edge_tables[i]);
    char *mem = malloc(sizeof(fs_hetero_fanout_t) * nf + sizeof(char *) * (nt + et) + strings);
    if (!mem) return fs_client_fail(c, FS_ERR_NOMEM, "stream: out of memory");
    fs_hetero_fanout_t *f = (fs_hetero_fanout_t *)mem;
    const char **tables = (const char **)(f + nf);
    char *at = (char *)(tables + nt + et);
    for (size_t i = 0; i < nf; i++) {
        f[i] = r.fanouts[i];
        f[i].src = put_str(&at, r.fanouts[i].src), f[i].rel = put_str(&at, r.fanouts[i].rel);
        f[i].dst = put_str(&at, r.fanouts[i].dst);
    }
    for (size_t i = 0; i < nt; i++) tables[i] = put_str(&at, r.node_tables[i]);
    for (size_t i = 0; i < et; i++) tables[nt + i] = put_str(&at, r.edge_tables[i]);
    r.fanouts = f, r.node_tables = tables, r.edge_tables = tables + nt;
    s->typed = (hetero_copy_t){.req = r, .mem = mem};
    return FS_OK;
}

/* s->link: the caller's link template, its edge type's names copied. */
static fs_status_t copy_link(fs_client_t *c, fs_stream_t *s, const fs_link_req_t *in)
{
    fs_error_t err = {0};
    if (fs_struct_read(&s->link, sizeof s->link, in, sizeof s->link, "fs_link_req_t", &err) != FS_OK)
        return fs_client_fail(c, err.code, "%s", err.msg);
    const char *names[3] = {s->link.src, s->link.rel, s->link.dst};
    for (int i = 0; i < 3; i++) {
        if (!names[i]) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: the link request's edge type needs "
                                             "src, rel and dst");
        fs_status_t st = copy_name(c, s->link_names[i], sizeof s->link_names[i], "edge type name", names[i]);
        if (st != FS_OK) return st;
    }
    s->link.src = s->link_names[0], s->link.rel = s->link_names[1], s->link.dst = s->link_names[2];
    s->link.count = 0, s->link.src_ids = s->link.dst_ids = s->link.label = s->link.time = NULL;
    return FS_OK;
}

/* A link stream's edges: the link split's src and dst, and its labels and
 * times when it has them, copied. */
static fs_status_t take_link_edges(fs_client_t *c, fs_stream_t *s, const fs_stream_opts_t *o, int64_t *n)
{
    static const char *const column[4] = {"src", "dst", "label", "time"};
    if (!o->split || o->seeds)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: a link stream's seeds are a link split: give its "
                              "name as split, and no seed array");
    for (int a = 0; a < 4; a++) {
        char name[300];
        fs_ids_t *ids;
        snprintf(name, sizeof name, "link/%s/%s", o->split, column[a]);
        fs_status_t st = fs_split(c, name, &ids);
        if (st == FS_ERR_NOT_FOUND && a >= 2) continue; /* no labels, no times */
        if (st != FS_OK) return st;
        if (a == 0) *n = ids->n;
        if (ids->n == *n && (s->link_arrays[a] = malloc(sizeof(int64_t) * (size_t)(*n + 1))))
            memcpy(s->link_arrays[a], ids->ids, sizeof(int64_t) * (size_t)*n);
        int64_t got = ids->n;
        fs_ids_free(ids);
        if (got != *n)
            return fs_client_fail(c, FS_ERR_FORMAT, "stream: link split '%s' has %lld %s but %lld src", o->split,
                                  (long long)got, column[a], (long long)*n);
        if (!s->link_arrays[a]) return fs_client_fail(c, FS_ERR_NOMEM, "stream: out of memory for %lld edges", (long long)*n);
    }
    return FS_OK;
}

/* A typed stream's node type: given, or its typed split's "TYPE/" prefix. */
static fs_status_t seed_type(fs_client_t *c, fs_stream_t *s, const fs_stream_opts_t *o)
{
    const char *slash = o->split ? strchr(o->split, '/') : NULL;
    if (o->seed_type) return copy_name(c, s->seed_type, sizeof s->seed_type, "seed type", o->seed_type);
    if (!slash || (size_t)(slash - o->split) >= sizeof s->seed_type)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: give seed_type, the seeds' node type (a typed "
                              "split 'TYPE/NAME' names it)");
    memcpy(s->seed_type, o->split, (size_t)(slash - o->split));
    return FS_OK;
}

/* The request on the caller's connection with no seeds, so a bad type,
 * fanout or table is named at open, and nothing is read (the metrics count
 * only what the batches read). */
static fs_status_t probe_typed(fs_client_t *c, fs_stream_t *s)
{
    fs_hetero_batch_t *hb = NULL;
    fs_status_t st;
    if (s->kind == STREAM_TYPED) {
        fs_hetero_seeds_t g = {.type = s->seed_type, .count = 0, .ids = s->items};
        st = fs_hetero_sample(c, &g, 1, &s->typed.req, &hb);
    } else {
        fs_link_req_t l = s->link;
        l.count = 0, l.src_ids = s->link_arrays[0], l.dst_ids = s->link_arrays[1], l.label = s->link_arrays[2];
        l.time = s->link_arrays[3];
        st = fs_link_sample(c, &l, &s->typed.req, &hb);
    }
    fs_hetero_batch_free(hb);
    return st;
}

/* s->row_tables: the caller's table names, copied. */
static fs_status_t copy_row_tables(fs_client_t *c, fs_stream_t *s, const fs_stream_opts_t *o)
{
    size_t bytes = sizeof(char *) * o->num_tables;
    for (size_t k = 0; k < o->num_tables; k++) bytes += str_size(o->tables[k]);
    if (!(s->row_tables = malloc(bytes + 1))) return fs_client_fail(c, FS_ERR_NOMEM, "stream: out of memory");
    char *at = (char *)(s->row_tables + o->num_tables);
    for (size_t k = 0; k < o->num_tables; k++) s->row_tables[k] = (char *)put_str(&at, o->tables[k]);
    s->num_row_tables = o->num_tables;
    return FS_OK;
}

/* The request(s), tables and seeds of any kind of stream; *n the seed count. */
static fs_status_t take_request(fs_client_t *c, fs_stream_t *s, const stream_spec_t *spec, int64_t *n)
{
    const fs_stream_opts_t *o = &spec->o;
    fs_status_t st = FS_OK;
    if (s->kind == STREAM_NODES) st = fs_client_sample_request(c, o->sample, &s->req);
    else if (s->kind == STREAM_ROWS) st = copy_row_tables(c, s, o);
    else st = copy_typed_request(c, s, o->hetero);
    if (st == FS_OK && s->kind == STREAM_LINK) st = copy_link(c, s, o->link);
    if (st == FS_OK) st = resolve_tables(c, s, o, spec->calls);
    if (st == FS_OK) st = s->kind == STREAM_LINK ? take_link_edges(c, s, o, n) : take_seeds(c, s, o, n);
    if (st == FS_OK && s->kind == STREAM_TYPED) st = seed_type(c, s, o);
    return st;
}

/* The result slots a stream's connection needs (stream.c's opening
 * comment): a live batch holds one, two with a delta, one per table in a
 * row stream; the window's samples wait in theirs; one more for a
 * transient gather (labels). */
static int slots_needed(const fs_stream_opts_t *o)
{
    int per_batch = o->num_tables ? (int)o->num_tables : o->delta != FS_DELTA_OFF ? 2 : 1;
    return per_batch * (o->prefetch + o->hold + 1) + o->window + 1;
}

/* Producers by default where the connection's threads were not given:
 * one per core this process may use, up to this many. A trainer that sets
 * nothing thus makes batches on every core it has, as one that passes
 * threads = cores did: on 2 cores with x.sum() in torch beside it, 1.5x
 * the batches/s of one producer (torch at 1 thread) and 1.2x (at 2);
 * docs/benchmarks.md, "Peers". At most four, so that on a box of many
 * cores, which several trainers share, each keeps at most 8 batches made
 * ahead (two per producer) and 4 connections. */
#define AUTO_PRODUCERS_MAX 4

static int auto_producers(void)
{
    int cores = fs_cpu_count();
    return cores < AUTO_PRODUCERS_MAX ? cores : AUTO_PRODUCERS_MAX;
}

/* How many producers the options ask for: one for a delta stream (each
 * batch is matched against the one before it); else the option, or by
 * default where the engines run in this process (unix://) the
 * connection's threads if given (each producer then running an equal
 * share of them), else one per core (AUTO_PRODUCERS_MAX). Over grpc://
 * too, where each batch is a call: while the server makes one batch,
 * another producer receives the last one and puts its cached rows in
 * place; with one, the cores idled 28% of the time (2 cores, PyG's
 * loader, x.sum() in torch: 67 batches/s, 80 with two producers, 87
 * with three; docs/benchmarks.md, "Peers"). */
static int producers_wanted(const fs_client_t *c, const fs_stream_opts_t *o)
{
    if (o->delta != FS_DELTA_OFF) return 1;
    int n = o->producers;
    if (!n) n = c->ops->in_process && c->threads_given ? c->opts.threads : auto_producers();
    return n < 1 ? 1 : n;
}

/* prefetch = 0: two batches ahead per producer asked for, one being made
 * and one ready. With one each, a producer that finished waited for the
 * trainer to take the batch before its own: at two threads the cores
 * idled 29% of the time, and two each made 1.17x the batches/s
 * (docs/benchmarks.md, "Peers"). Read before the stream knows whether the
 * server makes its batches (its one call then reads that many ahead). */
static int default_prefetch(const fs_client_t *c, const fs_stream_opts_t *o)
{
    int n = 2 * producers_wanted(c, o);
    return n < MAX_PREFETCH ? n : MAX_PREFETCH;
}

FS_API int fs_stream_default_prefetch(const fs_client_t *c, const fs_stream_opts_t *opts)
{
    fs_stream_opts_t o = FS_STREAM_OPTS_INIT;
    fs_error_t err = {0};
    if (opts && fs_struct_read(&o, sizeof o, opts, sizeof o, "fs_stream_opts_t", &err) != FS_OK)
        o = (fs_stream_opts_t)FS_STREAM_OPTS_INIT; /* unreadable options: every default */
    return c ? default_prefetch(c, &o) : 2;
}

static fs_status_t check_counts(fs_client_t *c, fs_stream_opts_t *o)
{
    if (o->prefetch == 0) o->prefetch = default_prefetch(c, o);
    if (o->hold == 0) o->hold = 2;
    if (o->world_size == 0 && o->rank == 0) o->world_size = 1;
    if (o->prefetch < 1 || o->prefetch > MAX_PREFETCH)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: prefetch %d, must be 1..%d (0 = two per producer)", o->prefetch,
                              MAX_PREFETCH);
    if (o->hold < 1 || o->hold > MAX_HOLD)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: hold %d, must be 1..%d (0 = 2)", o->hold, MAX_HOLD);
    if ((unsigned)o->order > FS_ORDER_CHUNKED)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: unknown order %d", (int)o->order);
    if ((unsigned)o->delta > FS_DELTA_ONLY)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: unknown delta mode %d", (int)o->delta);
    if (o->producers < 0 || o->producers > MAX_PRODUCERS)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: %d producers, must be 1..%d (0 = automatic)",
                              o->producers, MAX_PRODUCERS);
    if (o->window == 0) o->window = 1;
    if (o->window < 1 || o->window > MAX_WINDOW)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: a window of %d batches, must be 1..%d (0 = 1)",
                              o->window, MAX_WINDOW);
    if (o->window > 1 && o->delta == FS_DELTA_OFF)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: a window of %d batches reorders for Match: it needs "
                              "a delta mode (FS_DELTA_FULL or FS_DELTA_ONLY)", o->window);
    if (o->delta != FS_DELTA_OFF && !o->table)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: a delta mode fetches a table's rows: give a table");
    int slots = slots_needed(o);
    if (slots > FS_MAX_SLOTS)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: prefetch %d, hold %d and window %d need %d result "
                              "slots, over %d", o->prefetch, o->hold, o->window, slots, FS_MAX_SLOTS);
    return FS_OK;
}

static fs_status_t plan_epoch(fs_client_t *c, fs_stream_t *s, const fs_stream_opts_t *o, int64_t n)
{
    fs_stream_plan_opts_t po = {.struct_size = sizeof po, .num_seeds = n, .batch_size = o->batch_size,
                                .drop_last = o->drop_last, .order = o->order, .chunk = o->chunk, .seed = o->seed,
                                .epoch = o->epoch, .rank = o->rank, .world_size = o->world_size};
    fs_error_t err = {0};
    if (make_plan(&po, &s->plan, &err) != FS_OK) return fs_client_fail(c, err.code, "stream: %s", err.msg);
    if (o->start_batch < 0 || o->start_batch > s->plan.num_batches)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "stream: start_batch %lld, but this rank's epoch has %lld "
                              "batches", (long long)o->start_batch, (long long)s->plan.num_batches);
    return FS_OK;
}

/* A producer's threads, for fs_client_clone (0: the owner's): the
 * producers share the owner's cores. */
static int producer_threads(const fs_stream_t *s)
{
    int threads = s->owner->opts.threads / s->num_producers;
    return s->num_producers > 1 ? (threads > 1 ? threads : 1) : 0;
}

fs_status_t fs_stream_connect(const fs_stream_t *s, fs_client_t **out)
{
    return fs_client_clone(s->owner, s->slots, producer_threads(s), out);
}

/* How many producers: one for a server-made stream (one call), else
 * producers_wanted, but never more than prefetch: no more batches than
 * that are made at once. */
static int producers(const fs_client_t *c, const fs_stream_t *s, const fs_stream_opts_t *o)
{
    if (s->remote) return 1;
    int n = producers_wanted(c, o);
    return n > o->prefetch ? o->prefetch : n;
}

static fs_status_t start(fs_client_t *c, fs_stream_t *s, const fs_stream_opts_t *o)
{
    s->slots = slots_needed(o);
    s->num_producers = producers(c, s, o);
    for (int k = 0; k < s->num_producers; k++) {
        producer_t *p = &s->prod[k];
        *p = (producer_t){.s = s, .req = s->req, .treq = s->typed.req};
        fs_status_t st = fs_client_take(c, s->slots, producer_threads(s), &p->conn); /* the last stream's, if idle */
        if (st != FS_OK) return fs_client_fail(c, st, "stream: its connection: %s", fs_client_errstr(p->conn));
    }
    for (int k = 0; k < s->num_producers; k++) {
        if (pthread_create(&s->prod[k].thread, NULL, fs_stream_produce, &s->prod[k]) != 0)
            return fs_client_fail(c, FS_ERR_RESOURCE, "stream: cannot start its threads");
        s->prod[k].started = 1;
    }
    return FS_OK;
}

/* Which kind of stream and which of the 1.4 struct's fields that kind
 * uses are stream_kinds.c's business: spec holds only those. */
fs_status_t fs_stream_open_spec(fs_client_t *c, const stream_spec_t *spec, fs_stream_t **out)
{
    *out = NULL;
    fs_stream_opts_t o = spec->o;
    fs_error_t err = {0};
    fs_stream_t *s = calloc(1, sizeof *s);
    if (!s) return fs_client_fail(c, FS_ERR_NOMEM, "stream: out of memory");
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->refs = 1;
    s->owner = c;
    s->kind = spec->kind;
    int64_t n = 0;
    fs_status_t st = check_counts(c, &o);
    if (st == FS_OK) st = take_request(c, s, spec, &n);
    if (st == FS_OK) st = plan_epoch(c, s, &o, n);
    if (st == FS_OK && n > 0 && (s->kind == STREAM_TYPED || s->kind == STREAM_LINK)) st = probe_typed(c, s);
    s->sample_only = !o.table, s->out_dtype = o.out_dtype;
    s->prefetch = o.prefetch, s->hold = o.hold, s->window = o.window, s->delta = o.delta;
    if (st == FS_OK && o.delta != FS_DELTA_OFF && fs_reorder_ws_create(&s->rws, &err) != FS_OK)
        st = fs_client_fail(c, err.code, "stream: %s", err.msg);
    s->start = s->next = s->taken = o.start_batch;
    if (st == FS_OK && s->remote && !(s->labels_in = malloc(sizeof *s->labels_in * (size_t)o.batch_size)))
        st = fs_client_fail(c, FS_ERR_NOMEM, "stream: out of memory");
    if (st == FS_OK) st = start(c, s, &o);
    if (st != FS_OK) {
        fs_stream_close(s);
        return st;
    }
    *out = s;
    return FS_OK;
}
