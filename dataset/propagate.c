/* propagate.c — `featstore propagate`: hop tables hop_0 .. hop_R added to a
 * dataset in place (docs/algorithms.md §8; the contract is propagate.h).
 *
 * Design. The dataset is opened, locked and amended through amend.h: the
 * products run in kernels/fs_propagate.c over two ping-pong buffers of
 * c ⊙ X_r; each block of rows a thread finishes goes straight into the hop
 * table's file (mapped, converted to the table's dtype; with --rows
 * labelled only the splits' rows, at their place in the row order). The
 * commit's edit replaces an earlier propagation (--force) and records this
 * one in a "propagation" object. */
#include "propagate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "amend.h"
#include "fs_codec.h"
#include "fs_rng.h"
#include "fs_npy.h"
#include "progress.h"

/* Test-only: sleep this long after each block, so a test can interrupt a run mid-way. */
#define TEST_DELAY_ENV "FEATSTORE_PROPAGATE_TEST_DELAY_MS"
#define ROW_ORDER_STREAM 0x70726f70ULL /* "prop": the row order's random stream under --seed */

typedef fs_amend_file_t out_t;

typedef struct {
    const fs_propagate_opts_t *o;
    fs_propagate_report_t *rep;
    fs_error_t *err;
    fs_amend_t a;              /* the dataset (a.ds), its lock and the new files */
    fs_dataset_t *ds;          /* a.ds */
    const fs_table_t *src;
    fs_dtype_t dtype;
    int symmetrize;
    int64_t rows;              /* per hop table */
    int64_t *row_nodes;        /* labelled: [rows] the node of each row */
    int64_t *row_index;        /* labelled: [N] the row of each node or -1 */
    out_t *outs;               /* a.files: hops + 1 tables, then (labelled) row_nodes, row_index */
    int delay_ms;
    fs_progress_t progress;
    int64_t pass_rows;
} job_t;

void fs_propagate_defaults(fs_propagate_opts_t *o)
{
    *o = (fs_propagate_opts_t){.norm = FS_PROP_SYM, .self_loops = 1, .dtype = FS_DTYPE_INVALID, .seed = 1};
}

static int stop_requested(const job_t *j) { return fs_amend_stop_requested(&j->a); }

static fs_status_t stopped(job_t *j)
{
    j->rep->stopped = 1;
    return fs_amend_stopped(&j->a);
}

/* ---- the request ---------------------------------------------------------------- */

static fs_status_t lock_and_open(job_t *j)
{
    fs_status_t s = fs_amend_open(&j->a, j->o->dir, "propagate", j->o->threads, j->o->stop, j->err);
    j->ds = j->a.ds;
    return s;
}

static int is_float_table(const fs_table_t *t)
{
    return t->dtype == FS_DTYPE_F32 || t->dtype == FS_DTYPE_F16 || t->dtype == FS_DTYPE_BF16;
}

/* The dataset's float tables, "a, b, c", for messages. */
static void table_list(const fs_dataset_t *ds, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < ds->num_tables && n < len; i++)
        if (is_float_table(&ds->tables[i]))
            n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", ds->tables[i].name);
    if (!buf[0]) snprintf(buf, len, "none");
}

static fs_status_t pick_source(job_t *j)
{
    const fs_dataset_t *ds = j->ds;
    const char *want = j->o->table;
    char names[256];
    table_list(ds, names, sizeof names);
    if (!want) {
        const fs_table_t *only = NULL;
        int floats = 0;
        for (int i = 0; i < ds->num_tables; i++)
            if (is_float_table(&ds->tables[i])) floats++, only = &ds->tables[i];
        want = fs_dataset_table(ds, "feat") ? "feat" : floats == 1 ? only->name : NULL;
        if (!want)
            return fs_error(j->err, FS_ERR_INVALID_ARGUMENT, "propagate: %s has no table 'feat'; name the table to "
                            "propagate with --table (its feature tables: %s)", ds->dir, names);
    }
    j->src = fs_dataset_table(ds, want);
    if (!j->src || !is_float_table(j->src))
        return fs_error(j->err, FS_ERR_NOT_FOUND, "propagate: --table %s: %s has no feature table '%s' (its feature "
                        "tables: %s)", want, ds->dir, want, names);
    const fs_propagation_t *old = ds->propagation;
    for (int r = 0; old && r < old->num_tables; r++)
        if (!old->labelled && strcmp(old->tables[r].name, j->src->name) == 0)
            return fs_error(j->err, FS_ERR_INVALID_ARGUMENT, "propagate: --table %s is a hop table of an earlier "
                            "propagate; propagate its source table (%s) instead", want, old->source_table);
    j->dtype = j->o->dtype == FS_DTYPE_INVALID ? j->src->dtype : j->o->dtype;
    return FS_OK;
}

/* hop_r must be new names, or the tables of an earlier propagate with --force. */
static fs_status_t check_names(job_t *j)
{
    const fs_dataset_t *ds = j->ds;
    const fs_propagation_t *old = ds->propagation;
    if (old && !j->o->force)
        return fs_error(j->err, FS_ERR_EXISTS, "propagate: %s already has hop tables hop_0..hop_%d (from %s, norm %s, "
                        "%s rows); --force replaces them", ds->dir, old->hops, old->source_table, old->norm,
                        old->labelled ? "labelled" : "all");
    for (int r = 0; r <= j->o->hops; r++) {
        char name[64];
        snprintf(name, sizeof name, "hop_%d", r);
        int from_old = 0;
        for (int i = 0; old && !old->labelled && i < old->num_tables; i++) from_old |= strcmp(old->tables[i].name, name) == 0;
        if (fs_dataset_table(ds, name) && !from_old)
            return fs_error(j->err, FS_ERR_EXISTS, "propagate: %s already has a table '%s' that propagate did not make; "
                            "refusing to touch it", ds->dir, name);
    }
    return FS_OK;
}

/* --rows labelled: the splits' nodes, split after split in manifest order,
 * each split's in one seeded random order (Fisher-Yates under one stream). */
static fs_status_t plan_rows(job_t *j)
{
    const fs_dataset_t *ds = j->ds;
    int64_t n = ds->num_nodes, k = 0;
    if (!j->o->labelled) {
        j->rows = n;
        return FS_OK;
    }
    if (ds->num_splits == 0)
        return fs_error(j->err, FS_ERR_INVALID_ARGUMENT, "propagate: --rows labelled keeps the rows of the splits' "
                        "nodes, but %s has no splits (import it with --split, or use --rows all)", ds->dir);
    for (int s = 0; s < ds->num_splits; s++) k += ds->splits[s].count;
    j->row_index = malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    j->row_nodes = malloc((size_t)(k ? k : 1) * sizeof(int64_t));
    if (!j->row_index || !j->row_nodes) return fs_error(j->err, FS_ERR_NOMEM, "propagate: out of memory for the row order");
    for (int64_t v = 0; v < n; v++) j->row_index[v] = -1;
    fs_rng_t rng = fs_rng_make(j->o->seed, ROW_ORDER_STREAM);
    int64_t at = 0;
    for (int s = 0; s < ds->num_splits; s++) {
        const fs_idset_t *set = &ds->splits[s];
        for (int64_t q = 0; q < set->count; q++) {
            int64_t v = set->ids[q];
            if (j->row_index[v] >= 0)
                return fs_error(j->err, FS_ERR_INVALID_ARGUMENT, "propagate: --rows labelled needs disjoint splits, but "
                                "node %lld is in split %s and in split %s", (long long)v,
                                ds->splits[j->row_index[v]].name, set->name);
            j->row_index[v] = s;
            j->row_nodes[at + q] = v;
        }
        for (int64_t q = set->count - 1; q > 0; q--) {
            int64_t p = (int64_t)fs_rng_below(&rng, (uint64_t)q + 1), t = j->row_nodes[at + q];
            j->row_nodes[at + q] = j->row_nodes[at + p], j->row_nodes[at + p] = t;
        }
        at += set->count;
    }
    for (int64_t r = 0; r < k; r++) j->row_index[j->row_nodes[r]] = r;
    j->rows = k;
    return FS_OK;
}

static fs_status_t make_outputs(job_t *j)
{
    int hops = j->o->hops;
    fs_status_t s = fs_amend_add_files(&j->a, hops + 1 + (j->o->labelled ? 2 : 0));
    if (s != FS_OK) return s;
    j->outs = j->a.files;
    for (int i = 0; i < j->a.num_files; i++) {
        out_t *o = &j->outs[i];
        if (i <= hops) {
            int64_t dim = j->dtype == FS_DTYPE_I8 ? j->src->dim + FS_CODEC_INT8_HEAD : j->src->dim;
            *o = (out_t){.fd = -1, .dtype = j->dtype, .ndim = 2, .shape = {j->rows, dim}};
            snprintf(o->table, sizeof o->table, "hop_%d", i);
            snprintf(o->base, sizeof o->base, "table_hop_%d", i);
        } else {
            int nodes = i == hops + 1;
            *o = (out_t){.fd = -1, .dtype = FS_DTYPE_I64, .ndim = 1, .shape = {nodes ? j->rows : j->ds->num_nodes}};
            snprintf(o->base, sizeof o->base, nodes ? "hop_row_nodes" : "hop_row_index");
        }
    }
    if ((s = fs_amend_create(&j->a)) != FS_OK) return s;
    if (j->o->labelled) {
        memcpy(fs_amend_data(&j->outs[hops + 1]), j->row_nodes, (size_t)j->rows * sizeof(int64_t));
        memcpy(fs_amend_data(&j->outs[hops + 2]), j->row_index, (size_t)j->ds->num_nodes * sizeof(int64_t));
    }
    return FS_OK;
}

/* ---- the products --------------------------------------------------------------- */

typedef struct {
    job_t *j;
    out_t *out;                /* the hop table being written */
    int scatter;               /* iteration q is node q; its row is row_index[q] (labelled, every node) */
} sink_t;

static void write_rows(void *ctx, int64_t b, int64_t e, const float *rows, int worker)
{
    (void)worker;
    sink_t *s = ctx;
    job_t *j = s->j;
    int64_t dim = j->src->dim;
    size_t row_bytes = (size_t)s->out->shape[1] * fs_dtype_size(j->dtype);
    char *data = fs_amend_data(s->out);
    for (int64_t q = b; q < e; q++) {
        int64_t r = s->scatter ? j->row_index[q] : q;
        if (r < 0) continue;
        if (j->dtype == FS_DTYPE_I8) fs_int8_quantize_row(rows + (q - b) * dim, dim, data + (size_t)r * row_bytes, NULL);
        else fs_convert_from_f32(rows + (q - b) * dim, (size_t)dim, j->dtype, data + (size_t)r * row_bytes);
    }
    if (j->delay_ms > 0) usleep((useconds_t)j->delay_ms * 1000);
}

static void show_progress(void *ctx, int64_t done)
{
    job_t *j = ctx;
    if (!j->o->quiet) fs_progress_update(&j->progress, (double)done / (double)(j->pass_rows ? j->pass_rows : 1), done, "rows");
}

static void pass_begin(job_t *j, fs_prop_pass_t *p, int hop, sink_t *sink, int64_t rows)
{
    char label[64];
    snprintf(label, sizeof label, "propagate hop %d/%d", hop, j->o->hops);
    j->pass_rows = rows;
    if (!j->o->quiet) fs_progress_start(&j->progress, label);
    *sink = (sink_t){.j = j, .out = &j->outs[hop], .scatter = j->o->labelled && !p->nodes};
    p->sink_ctx = sink;
}

static void pass_end(job_t *j, int64_t rows)
{
    if (!j->o->quiet) fs_progress_done(&j->progress, rows, "rows");
}

/* Two N x F buffers; refused up front when the machine has not the memory. */
static fs_status_t alloc_buffers(job_t *j, float **a, float **b)
{
    size_t floats = (size_t)j->ds->num_nodes * (size_t)j->src->dim;
    size_t need = 2 * floats * sizeof(float), avail = SIZE_MAX;
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    unsigned long long kb;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) avail = (size_t)kb * 1024;
    if (f) fclose(f);
    if (need > avail)
        return fs_error(j->err, FS_ERR_NOMEM, "propagate: its two buffers of %lld x %lld float32 need %.2f GiB, but only "
                        "%.2f GiB of memory are available", (long long)j->ds->num_nodes, (long long)j->src->dim,
                        (double)need / (1 << 30), (double)avail / (1 << 30));
    *a = fs_prop_buffer(floats);
    *b = fs_prop_buffer(floats);
    if (!*a || !*b) return fs_error(j->err, FS_ERR_NOMEM, "propagate: out of memory for two %zu-float buffers", floats);
    return FS_OK;
}

/* X_0 .. X_R into the tables, over graph g with scales sc. */
static fs_status_t run_hops(job_t *j, const fs_prop_graph_t *g, const fs_prop_scales_t *sc)
{
    float *za = NULL, *zb = NULL;
    fs_status_t s = alloc_buffers(j, &za, &zb);
    fs_prop_pass_t p = {.graph = g, .scales = sc, .dim = j->src->dim, .threads = j->o->threads, .sink = write_rows,
                        .progress = show_progress, .progress_ctx = j, .stop = j->o->stop};
    sink_t sink;
    int halted = 0;
    if (s == FS_OK) {
        pass_begin(j, &p, 0, &sink, g->num_nodes);
        s = fs_prop_start(&p, j->src->data, j->src->dtype, za, &halted, j->err);
        pass_end(j, g->num_nodes);
    }
    if (s == FS_OK && !halted) s = fs_amend_finish(&j->a, &j->outs[0]);
    for (int r = 1; r <= j->o->hops && s == FS_OK && !halted; r++) {
        int last = r == j->o->hops;
        p.nodes = last && j->o->labelled ? j->row_nodes : NULL;
        p.num_rows = p.nodes ? j->rows : 0;
        int64_t rows = p.nodes ? j->rows : g->num_nodes;
        pass_begin(j, &p, r, &sink, rows);
        s = fs_prop_hop(&p, za, last ? NULL : zb, &halted, j->err);
        pass_end(j, rows);
        if (s == FS_OK && !halted) s = fs_amend_finish(&j->a, &j->outs[r]); /* one table mapped at a time */
        float *t = za;
        za = zb, zb = t;
    }
    free(za);
    free(zb);
    if (s == FS_OK && halted) s = stopped(j);
    return s;
}

static fs_status_t compute(job_t *j)
{
    const fs_dataset_t *ds = j->ds;
    fs_prop_graph_t stored = {.num_nodes = ds->num_nodes, .indptr = ds->indptr, .indices = ds->indices,
                              .index_dtype = ds->index_dtype};
    fs_prop_owned_graph_t sym = {0};
    fs_prop_scales_t sc = {0};
    const fs_prop_graph_t *g = &stored;
    fs_status_t s = FS_OK;
    if (j->symmetrize) {
        s = fs_prop_symmetrize(&stored, j->o->threads, &sym, j->err);
        g = &sym.g;
    }
    if (s == FS_OK && stop_requested(j)) s = stopped(j);
    if (s == FS_OK) s = fs_prop_scales_make(g, j->o->norm, j->o->self_loops, &sc, j->err);
    if (s == FS_OK) {
        j->rep->edges = g->indptr[g->num_nodes];
        s = run_hops(j, g, &sc);
    }
    fs_prop_scales_free(&sc);
    fs_prop_graph_free(&sym);
    return s;
}

/* ---- the commit ----------------------------------------------------------------- */

/* Takes an earlier propagation out of m; its files go into `gone`. */
static void drop_old(json_t *m, json_t *gone)
{
    json_t *p = json_object_get(m, "propagation");
    if (!p) return;
    json_t *feats = fs_amend_features(m);
    if (json_is_object(json_object_get(p, "row_tables"))) {
        const char *name;
        json_t *t;
        json_object_foreach(json_object_get(p, "row_tables"), name, t)
            json_array_append(gone, json_object_get(t, "file"));
        json_array_append(gone, json_object_get(p, "row_nodes"));
        json_array_append(gone, json_object_get(p, "row_index"));
    } else {
        size_t i;
        json_t *name;
        json_array_foreach(json_object_get(p, "tables"), i, name) {
            const char *n = json_string_value(name);
            json_t *t = n ? json_object_get(feats, n) : NULL;
            if (!t) continue;
            json_array_append(gone, json_object_get(t, "file"));
            json_object_del(feats, n);
        }
    }
    json_object_del(m, "propagation");
}

/* The "propagation" object; `tables` ({name: {file, dtype}}) is where the
 * hop tables go: the features (rows all) or its "row_tables" (labelled). */
static json_t *propagation_json(job_t *j, json_t *tables)
{
    const fs_propagate_opts_t *o = j->o;
    json_t *names = json_array();
    for (int r = 0; r <= o->hops; r++) json_array_append_new(names, json_string(j->outs[r].table));
    json_t *p = json_pack("{s:o, s:s, s:i, s:s, s:b, s:s, s:s, s:s, s:s, s:s}", "tables", names, "source_table",
                          j->src->name, "hops", o->hops, "norm", fs_prop_norm_name(o->norm), "self_loops", o->self_loops,
                          "graph", j->symmetrize ? "symmetrized" : "stored", "dtype", fs_dtype_name(j->dtype),
                          "accumulate", "float32", "rows", o->labelled ? "labelled" : "all", "made_by",
                          "featstore propagate");
    if (!o->labelled) return p;
    json_t *splits = json_object();
    int64_t at = 0;
    for (int s = 0; s < j->ds->num_splits; s++) {
        json_object_set_new(splits, j->ds->splits[s].name, json_pack("{s:I, s:I}", "offset", (json_int_t)at, "count",
                                                                     (json_int_t)j->ds->splits[s].count));
        at += j->ds->splits[s].count;
    }
    json_object_set_new(p, "seed", json_integer((json_int_t)o->seed));
    json_object_set_new(p, "num_rows", json_integer(j->rows));
    json_object_set(p, "row_tables", tables);
    json_object_set_new(p, "row_nodes", json_string(j->outs[o->hops + 1].file));
    json_object_set_new(p, "row_index", json_string(j->outs[o->hops + 2].file));
    json_object_set_new(p, "row_splits", splits);
    return p;
}

/* The manifest m becomes the new one; `gone` gets the files it no longer names. */
static void edit_manifest(void *ctx, json_t *m, json_t *gone)
{
    job_t *j = ctx;
    drop_old(m, gone);
    json_t *tables = j->o->labelled ? json_object() : fs_amend_features(m);
    for (int r = 0; r <= j->o->hops; r++) {
        json_t *t = json_pack("{s:s, s:s}", "file", j->outs[r].file, "dtype", fs_dtype_name(j->dtype));
        if (j->dtype == FS_DTYPE_I8) json_object_set_new(t, "codec", json_string(fs_codec_name(FS_CODEC_INT8)));
        json_object_set_new(tables, j->outs[r].table, t);
    }
    json_object_set_new(m, "propagation", propagation_json(j, tables));
    if (j->o->labelled) json_decref(tables);
}

/* ---- the whole -------------------------------------------------------------------- */

static fs_status_t check_opts(const fs_propagate_opts_t *o, fs_error_t *err)
{
    if (!o->dir) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "propagate: no dataset given");
    if (o->hops < 1 || o->hops > FS_PROP_MAX_HOPS)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "propagate: --hops must be in [1, %d], got %d", FS_PROP_MAX_HOPS,
                        o->hops);
    if (o->norm != FS_PROP_SYM && o->norm != FS_PROP_RW && o->norm != FS_PROP_NONE)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "propagate: unknown norm %d", (int)o->norm);
    if (o->dtype != FS_DTYPE_INVALID && o->dtype != FS_DTYPE_F32 && o->dtype != FS_DTYPE_F16 &&
        o->dtype != FS_DTYPE_BF16 && o->dtype != FS_DTYPE_I8)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "propagate: --dtype must be float32, float16, bfloat16 or int8");
    return FS_OK;
}

static void job_free(job_t *j)
{
    free(j->row_nodes);
    free(j->row_index);
    fs_amend_close(&j->a);
}

fs_status_t fs_propagate(const fs_propagate_opts_t *o, fs_propagate_report_t *rep, fs_error_t *err)
{
    fs_propagate_report_t dummy;
    if (!rep) rep = &dummy;
    memset(rep, 0, sizeof *rep);
    fs_status_t s = check_opts(o, err);
    if (s != FS_OK) return s;
    job_t j = {.o = o, .rep = rep, .err = err, .a = {.dir_fd = -1}};
    const char *delay = getenv(TEST_DELAY_ENV);
    j.delay_ms = delay ? atoi(delay) : 0;
    double t0 = fs_now();
    s = lock_and_open(&j);
    if (s == FS_OK) s = pick_source(&j);
    if (s == FS_OK) s = check_names(&j);
    if (s == FS_OK) s = plan_rows(&j);
    if (s == FS_OK) {
        j.symmetrize = !o->as_stored && !j.ds->symmetric;
        s = make_outputs(&j);
    }
    if (s == FS_OK && stop_requested(&j)) s = stopped(&j);
    if (s == FS_OK) s = compute(&j);
    for (int i = 0; s == FS_OK && i < j.a.num_files; i++)
        if (j.outs[i].map) s = fs_amend_finish(&j.a, &j.outs[i]); /* the row order's arrays */
    if (s == FS_OK) s = fs_amend_commit(&j.a, edit_manifest, &j);
    if (j.a.stopped) rep->stopped = 1;
    if (j.src) {
        rep->rows = j.rows, rep->dim = j.src->dim, rep->dtype = j.dtype;
        snprintf(rep->source_table, sizeof rep->source_table, "%s", j.src->name);
        snprintf(rep->graph, sizeof rep->graph, "%s", j.symmetrize ? "symmetrized" : "stored");
    }
    rep->seconds = fs_now() - t0;
    job_free(&j);
    return s;
}
