/* compress.c — `featstore compress` (the contract is compress.h). Rows are
 * coded block by block (BLOCK rows, split over the threads), each thread
 * keeping its own error sums; a block with a value that cannot be coded
 * records the first such position and the run stops there. */
#include "compress.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amend.h"
#include "fs_codec.h"
#include "fs_parallel.h"
#include "progress.h"

#define BLOCK 65536 /* rows per block: the unit of progress and of stopping */
#define MAX_WORKERS 256

typedef struct {
    double max_err, sum_err, bound;
    int64_t bad_row, bad_col; /* the first value that cannot be coded, or -1 */
} stats_t;

typedef struct {
    const fs_table_t *src;
    fs_amend_file_t *out;
    fs_dtype_t to;
    int64_t begin;            /* the block's first row */
    stats_t per[MAX_WORKERS];
} block_t;

/* One source row as float32 (into buf when it must be converted). */
static const float *row_f32(const fs_table_t *t, int64_t r, float *buf)
{
    const char *p = (const char *)t->data + (size_t)r * t->row_bytes;
    if (t->dtype == FS_DTYPE_F32) return (const float *)p;
    fs_convert_to_f32(t->dtype, p, (size_t)t->dim, buf);
    return buf;
}

/* The first value of x[0..dim) that is not finite, or -1. */
static int64_t non_finite(const float *x, int64_t dim)
{
    for (int64_t j = 0; j < dim; j++)
        if (!isfinite(x[j])) return j;
    return -1;
}

static void note_bad(stats_t *s, int64_t row, int64_t col)
{
    if (s->bad_row < 0 || row < s->bad_row) s->bad_row = row, s->bad_col = col;
}

static void code_int8(const float *x, int64_t dim, char *dst, stats_t *s)
{
    s->max_err = fmax(s->max_err, fs_int8_quantize_row(x, dim, dst, &s->sum_err));
    float scale;
    memcpy(&scale, dst, 4);
    s->bound = fmax(s->bound, (double)scale / 2);
}

/* float16 / bfloat16: round to nearest; float16 refuses what it cannot hold. */
static int64_t code_narrow(const float *x, int64_t dim, fs_dtype_t to, char *dst, stats_t *s)
{
    uint16_t *h = (uint16_t *)dst;
    const double half_ulp = to == FS_DTYPE_F16 ? ldexp(1, -11) : ldexp(1, -8);
    for (int64_t j = 0; j < dim; j++) {
        h[j] = to == FS_DTYPE_F16 ? fs_f32_to_f16(x[j]) : fs_f32_to_bf16(x[j]);
        float back = to == FS_DTYPE_F16 ? fs_f16_to_f32(h[j]) : fs_bf16_to_f32(h[j]);
        if (isinf(back)) return j;
        double e = fabs((double)back - (double)x[j]);
        s->max_err = fmax(s->max_err, e);
        s->sum_err += e;
        s->bound = fmax(s->bound, fabs((double)x[j]) * half_ulp);
    }
    return -1;
}

static void code_rows(void *ctx, int64_t b, int64_t e, int worker)
{
    block_t *k = ctx;
    stats_t *s = &k->per[worker];
    const fs_table_t *t = k->src;
    float *buf = t->dtype == FS_DTYPE_F32 ? NULL : malloc((size_t)t->dim * sizeof(float) + 1);
    size_t out_row = (size_t)k->out->shape[1] * fs_dtype_size(k->to);
    for (int64_t i = b; i < e && (t->dtype == FS_DTYPE_F32 || buf); i++) {
        int64_t r = k->begin + i;
        const float *x = row_f32(t, r, buf);
        char *dst = fs_amend_data(k->out) + (size_t)r * out_row;
        int64_t bad = non_finite(x, t->dim);
        if (bad < 0 && k->to == FS_DTYPE_I8) code_int8(x, t->dim, dst, s);
        else if (bad < 0) bad = code_narrow(x, t->dim, k->to, dst, s);
        if (bad >= 0) {
            note_bad(s, r, bad);
            break;
        }
    }
    if (t->dtype != FS_DTYPE_F32 && !buf) note_bad(s, k->begin + b, -1); /* out of memory: refused below */
    free(buf);
}

/* ---- the request ---------------------------------------------------------------- */

typedef struct {
    const fs_compress_opts_t *o;
    fs_compress_report_t *rep;
    fs_error_t *err;
    fs_amend_t a;
    const fs_table_t *src[FS_COMPRESS_MAX_TABLES];
    int replaces[FS_COMPRESS_MAX_TABLES]; /* the new name is an earlier compress's table (force) */
    fs_progress_t progress;
} job_t;

static fs_status_t check_opts(const fs_compress_opts_t *o, fs_error_t *err)
{
    if (!o->dir) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "compress: no dataset given");
    if (o->num_tables < 1 || o->num_tables > FS_COMPRESS_MAX_TABLES || !o->tables)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "compress: give 1 to %d tables, got %d", FS_COMPRESS_MAX_TABLES,
                        o->num_tables);
    if (o->to != FS_DTYPE_I8 && o->to != FS_DTYPE_F16 && o->to != FS_DTYPE_BF16)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "compress: --to must be int8, float16 (fp16) or bfloat16 (bf16)");
    if (o->name && o->num_tables != 1)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "compress: --name names one new table, but %d tables were given",
                        o->num_tables);
    return FS_OK;
}

/* Which tables, and their new names: each source a float table not itself
 * compressed; each new name free, or an earlier compress's with force. */
static fs_status_t pick_tables(job_t *j)
{
    const fs_dataset_t *ds = j->a.ds;
    for (int i = 0; i < j->o->num_tables; i++) {
        const char *want = j->o->tables[i];
        const fs_table_t *t = want ? fs_dataset_table(ds, want) : NULL;
        if (!t) return fs_dataset_table_not_found(ds, want ? want : "(null)", j->err);
        if (!fs_dtype_is_float(t->dtype) || t->codec != FS_CODEC_NONE)
            return fs_error(j->err, FS_ERR_INVALID_ARGUMENT, "compress: table '%s' is %s%s: only float32, float16 and "
                            "bfloat16 tables are compressed", t->name, t->codec ? "compressed already, " : "",
                            fs_dtype_name(t->dtype));
        if (t->dtype == j->o->to)
            return fs_error(j->err, FS_ERR_INVALID_ARGUMENT, "compress: table '%s' is %s already", t->name,
                            fs_dtype_name(t->dtype));
        fs_compress_table_report_t *r = &j->rep->table[i];
        int n = j->o->name ? snprintf(r->name, sizeof r->name, "%s", j->o->name)
                           : snprintf(r->name, sizeof r->name, "%s_%s", t->name, fs_dtype_name(j->o->to));
        if (n <= 0 || (size_t)n >= sizeof r->name || strcmp(r->name, FS_LABELS_TABLE) == 0)
            return fs_error(j->err, FS_ERR_INVALID_ARGUMENT, "compress: '%s' cannot name a table (1 to %zu characters, "
                            "not '%s')", r->name, sizeof r->name - 1, FS_LABELS_TABLE);
        const fs_table_t *old = fs_dataset_table(ds, r->name);
        json_t *entry = json_object_get(fs_amend_features(j->a.m), r->name);
        j->replaces[i] = old && json_string_value(json_object_get(entry, "source")) && old->codec != FS_CODEC_NONE;
        if (old && !(j->replaces[i] && j->o->force))
            return fs_error(j->err, FS_ERR_EXISTS, "compress: %s already has a table '%s'%s", ds->dir, r->name,
                            j->replaces[i] ? " (from an earlier compress; --force replaces it)"
                                           : " that compress did not make; refusing to touch it (give --name)");
        for (int k = 0; k < i; k++)
            if (strcmp(j->rep->table[k].name, r->name) == 0)
                return fs_error(j->err, FS_ERR_INVALID_ARGUMENT, "compress: table '%s' is given twice", t->name);
        j->src[i] = t;
        snprintf(r->source, sizeof r->source, "%s", t->name);
        r->rows = t->rows, r->dim = t->dim, r->from = t->dtype;
        r->bytes_in = (uint64_t)t->rows * t->row_bytes;
    }
    return FS_OK;
}

static fs_status_t make_outputs(job_t *j)
{
    fs_status_t s = fs_amend_add_files(&j->a, j->o->num_tables);
    for (int i = 0; s == FS_OK && i < j->o->num_tables; i++) {
        fs_amend_file_t *f = &j->a.files[i];
        const fs_table_t *t = j->src[i];
        int64_t dim = j->o->to == FS_DTYPE_I8 ? t->dim + FS_CODEC_INT8_HEAD : t->dim;
        *f = (fs_amend_file_t){.fd = -1, .dtype = j->o->to, .ndim = 2, .shape = {t->rows, dim}};
        snprintf(f->table, sizeof f->table, "%s", j->rep->table[i].name);
        char base[sizeof f->table + 8];
        snprintf(base, sizeof base, "table_%s", f->table);
        snprintf(f->base, sizeof f->base, "%.*s", (int)sizeof f->base - 1, base); /* a long name: its file's is cut */
        j->rep->table[i].bytes_out = (uint64_t)t->rows * (uint64_t)dim * fs_dtype_size(j->o->to);
    }
    return s == FS_OK ? fs_amend_create(&j->a) : s;
}

/* The value at (row, col) that no code holds, named; col -1: out of memory. */
static fs_status_t refuse_value(job_t *j, const fs_table_t *t, int64_t row, int64_t col)
{
    if (col < 0)
        return fs_error(j->err, FS_ERR_NOMEM, "compress: table '%s': out of memory converting row %lld", t->name,
                        (long long)row);
    float x;
    fs_convert_to_f32(t->dtype, (const char *)t->data + (size_t)row * t->row_bytes + (size_t)col * fs_dtype_size(t->dtype),
                      1, &x);
    return fs_error(j->err, FS_ERR_INVALID_ARGUMENT, "compress: table '%s', row %lld, column %lld: value %g %s", t->name,
                    (long long)row, (long long)col, (double)x,
                    isfinite(x) ? "does not fit float16 (largest 65504): use bfloat16 or int8"
                                : "is not finite: no code holds it");
}

/* Codes table i into its file, block by block. */
static fs_status_t code_table(job_t *j, int i)
{
    const fs_table_t *t = j->src[i];
    fs_compress_table_report_t *r = &j->rep->table[i];
    int threads = j->o->threads > 0 ? j->o->threads : fs_cpu_count();
    threads = threads > MAX_WORKERS ? MAX_WORKERS : threads;
    block_t *k = calloc(1, sizeof *k);
    if (!k) return fs_error(j->err, FS_ERR_NOMEM, "out of memory");
    *k = (block_t){.src = t, .out = &j->a.files[i], .to = j->o->to};
    for (int w = 0; w < MAX_WORKERS; w++) k->per[w].bad_row = -1;
    char label[sizeof t->name + sizeof r->name + 16];
    snprintf(label, sizeof label, "compress %s -> %s", t->name, r->name);
    if (!j->o->quiet) fs_progress_start(&j->progress, label);
    fs_status_t s = FS_OK;
    stats_t all = {.bad_row = -1};
    for (k->begin = 0; k->begin < t->rows && s == FS_OK; k->begin += BLOCK) {
        int64_t n = t->rows - k->begin < BLOCK ? t->rows - k->begin : BLOCK;
        fs_parallel_for(threads, n, code_rows, k);
        for (int w = 0; w < threads; w++)
            if (k->per[w].bad_row >= 0) note_bad(&all, k->per[w].bad_row, k->per[w].bad_col);
        if (all.bad_row >= 0) break;
        if (fs_amend_stop_requested(&j->a)) s = fs_amend_stopped(&j->a);
        if (!j->o->quiet) fs_progress_update(&j->progress, (double)(k->begin + n) / (double)t->rows, k->begin + n, "rows");
    }
    for (int w = 0; w < threads; w++) {
        all.max_err = fmax(all.max_err, k->per[w].max_err);
        all.sum_err += k->per[w].sum_err;
        all.bound = fmax(all.bound, k->per[w].bound);
    }
    free(k);
    if (!j->o->quiet) fs_progress_done(&j->progress, t->rows, "rows");
    if (s == FS_OK && all.bad_row >= 0) return refuse_value(j, t, all.bad_row, all.bad_col);
    r->max_abs_error = all.max_err, r->bound = all.bound;
    r->mean_abs_error = t->rows && t->dim ? all.sum_err / ((double)t->rows * (double)t->dim) : 0;
    return s == FS_OK ? fs_amend_finish(&j->a, &j->a.files[i]) : s;
}

/* The new tables in "features", each with its codec and source; a replaced
 * one's file goes. */
static void edit_manifest(void *ctx, json_t *m, json_t *gone)
{
    job_t *j = ctx;
    json_t *feats = fs_amend_features(m);
    for (int i = 0; i < j->o->num_tables; i++) {
        const fs_compress_table_report_t *r = &j->rep->table[i];
        if (j->replaces[i]) json_array_append(gone, json_object_get(json_object_get(feats, r->name), "file"));
        json_t *e = json_pack("{s:s, s:s, s:s, s:s, s:f}", "file", j->a.files[i].file, "dtype", fs_dtype_name(j->o->to),
                              "codec", fs_codec_name(j->o->to == FS_DTYPE_I8 ? FS_CODEC_INT8 : FS_CODEC_NARROW),
                              "source", r->source, "max_abs_error", r->max_abs_error);
        json_object_set_new(feats, r->name, e);
    }
}

fs_status_t fs_compress(const fs_compress_opts_t *o, fs_compress_report_t *rep, fs_error_t *err)
{
    static fs_compress_report_t dummy;
    if (!rep) rep = &dummy;
    memset(rep, 0, sizeof *rep);
    fs_status_t s = check_opts(o, err);
    if (s != FS_OK) return s;
    job_t *j = calloc(1, sizeof *j);
    if (!j) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    *j = (job_t){.o = o, .rep = rep, .err = err, .a = {.dir_fd = -1}};
    double t0 = fs_now();
    s = fs_amend_open(&j->a, o->dir, "compress", o->threads, o->stop, err);
    if (s == FS_OK) s = pick_tables(j);
    if (s == FS_OK) s = make_outputs(j);
    for (int i = 0; s == FS_OK && i < o->num_tables; i++) s = code_table(j, i);
    if (s == FS_OK) s = fs_amend_commit(&j->a, edit_manifest, j);
    rep->num_tables = s == FS_OK ? o->num_tables : 0;
    rep->stopped = j->a.stopped;
    rep->seconds = fs_now() - t0;
    fs_amend_close(&j->a);
    free(j);
    return s;
}
