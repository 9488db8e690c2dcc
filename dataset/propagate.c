/* propagate.c — `featstore propagate`: hop tables hop_0 .. hop_R added to a
 * dataset in place (docs/algorithms.md §8; the contract is propagate.h).
 *
 * Design. The dataset is opened and verified like `info` does, under an
 * exclusive flock on its directory. The products run in
 * kernels/fs_propagate.c over two ping-pong buffers of c ⊙ X_r; each block
 * of rows a thread finishes goes straight into the hop table's file (mapped,
 * converted to the table's dtype; with --rows labelled only the splits'
 * rows, at their place in the row order). Files are made in a scratch
 * directory inside the dataset (DIR/.propagate-<pid>: same file system, so
 * moving them in is a rename). The commit, with SIGINT/SIGTERM/SIGHUP held
 * back: check the manifest is still the one read, write the new manifest
 * (the old one plus the tables, their checksums and a "propagation" object)
 * into the scratch directory, rename each table into the dataset under a
 * name no file has (RENAME_NOREPLACE), then rename the manifest over the old
 * one and fsync the directory. Before that last rename nothing the dataset
 * names has changed; a failed rename moves the tables back out. Files of a
 * replaced propagation (--force) are unlinked after the commit. Leftover
 * scratch directories (a SIGKILLed run) are removed by the next run. */
#include "propagate.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "fs_rng.h"
#include "fs_npy.h"
#include "progress.h"

#define SCRATCH_PREFIX ".propagate-"
/* Test-only: sleep this long after each block, so a test can interrupt a run mid-way. */
#define TEST_DELAY_ENV "FEATSTORE_PROPAGATE_TEST_DELAY_MS"
#define ROW_ORDER_STREAM 0x70726f70ULL /* "prop": the row order's random stream under --seed */

typedef struct {
    char table[64];            /* "hop_r", or "" for the row order's arrays */
    char base[64];             /* its file name without ".npy" */
    char file[128];            /* its name in the dataset */
    char path[4400];           /* in the scratch directory */
    fs_dtype_t dtype;
    int ndim;
    int64_t shape[2];
    int fd;
    char *map;                 /* header + data */
    size_t len;
    char xxh3[17];
    int moved;                 /* renamed into the dataset */
} out_t;

typedef struct {
    const fs_propagate_opts_t *o;
    fs_propagate_report_t *rep;
    fs_error_t *err;
    fs_dataset_t *ds;
    json_t *m;                 /* the manifest as read; the commit writes an edited copy */
    int dir_fd;                /* holds the lock */
    char scratch[4300];
    int scratch_made;
    const fs_table_t *src;
    fs_dtype_t dtype;
    int symmetrize;
    int64_t rows;              /* per hop table */
    int64_t *row_nodes;        /* labelled: [rows] the node of each row */
    int64_t *row_index;        /* labelled: [N] the row of each node or -1 */
    out_t *outs;               /* hops + 1 tables, then (labelled) row_nodes, row_index */
    int num_outs;
    int delay_ms;
    fs_progress_t progress;
    int64_t pass_rows;
} job_t;

void fs_propagate_defaults(fs_propagate_opts_t *o)
{
    *o = (fs_propagate_opts_t){.norm = FS_PROP_SYM, .self_loops = 1, .dtype = FS_DTYPE_INVALID, .seed = 1};
}

static int stop_requested(const job_t *j) { return j->o->stop && *j->o->stop; }

static fs_status_t stopped(job_t *j)
{
    j->rep->stopped = 1;
    return fs_error(j->err, FS_ERR_IO, "propagate: interrupted before the commit; %s is unchanged", j->o->dir);
}

/* ---- scratch files ----------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static void rm_tree(const char *path) { nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* Scratch directories left by runs that were killed (we hold the lock: none is running). */
static void remove_stale_scratch(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strncmp(e->d_name, SCRATCH_PREFIX, strlen(SCRATCH_PREFIX)) == 0) {
            char path[4400];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            rm_tree(path);
        }
    if (d) closedir(d);
}

static fs_status_t out_create(job_t *j, out_t *o)
{
    size_t bytes = fs_dtype_size(o->dtype);
    for (int i = 0; i < o->ndim; i++) bytes *= (size_t)o->shape[i];
    o->len = FS_NPY_WRITE_HEADER_LEN + bytes;
    snprintf(o->path, sizeof o->path, "%s/%s.npy", j->scratch, o->base);
    o->fd = open(o->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (o->fd < 0) return fs_error(j->err, FS_ERR_IO, "cannot create %s: %s", o->path, strerror(errno));
    int e = posix_fallocate(o->fd, 0, (off_t)o->len);
    if (e != 0)
        return fs_error(j->err, FS_ERR_IO, "%s: cannot reserve %zu bytes for it: %s", o->path, o->len, strerror(e));
    void *m = mmap(NULL, o->len, PROT_READ | PROT_WRITE, MAP_SHARED, o->fd, 0);
    if (m == MAP_FAILED) return fs_error(j->err, FS_ERR_IO, "%s: cannot map: %s", o->path, strerror(errno));
    o->map = m;
    fs_npy_format(o->map, o->dtype, o->ndim, o->shape);
    return FS_OK;
}

/* Flushes a finished file to disk, records its checksum (the writer's: xxh3
 * of the whole file) and unmaps it, so its pages are clean page cache. */
static fs_status_t out_finish(job_t *j, out_t *o)
{
    snprintf(o->xxh3, sizeof o->xxh3, "%016llx", (unsigned long long)XXH3_64bits(o->map, o->len));
    int rc = msync(o->map, o->len, MS_SYNC);
    munmap(o->map, o->len);
    o->map = NULL;
    if (rc == 0) rc = fsync(o->fd);
    close(o->fd);
    o->fd = -1;
    if (rc != 0) return fs_error(j->err, FS_ERR_IO, "%s: write failed: %s", o->path, strerror(errno));
    return FS_OK;
}

static void out_close(out_t *o)
{
    if (o->map) munmap(o->map, o->len);
    if (o->fd >= 0) close(o->fd);
    o->map = NULL, o->fd = -1;
}

/* A file name in the dataset that no file has (nor an earlier output). */
static void name_output(job_t *j, out_t *o)
{
    for (int g = 1;; g++) {
        if (g == 1) snprintf(o->file, sizeof o->file, "%s.npy", o->base);
        else snprintf(o->file, sizeof o->file, "%s.%d.npy", o->base, g);
        int taken = faccessat(j->dir_fd, o->file, F_OK, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT;
        for (out_t *p = j->outs; p < o && !taken; p++) taken = strcmp(p->file, o->file) == 0;
        if (!taken) return;
    }
}

/* ---- the request ---------------------------------------------------------------- */

static fs_status_t lock_and_open(job_t *j)
{
    const char *dir = j->o->dir;
    j->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (j->dir_fd < 0)
        return fs_error(j->err, errno == ENOENT ? FS_ERR_NOT_FOUND : FS_ERR_IO, "%s: cannot open: %s", dir, strerror(errno));
    if (flock(j->dir_fd, LOCK_EX | LOCK_NB) != 0)
        return fs_error(j->err, FS_ERR_EXISTS, "%s: another featstore propagate is running on it (its directory is "
                        "locked); wait for it to finish", dir);
    fs_status_t s = fs_dataset_open(dir, FS_OPEN_VERIFY, j->o->threads, &j->ds, j->err);
    if (s != FS_OK) return s;
    json_error_t jerr;
    j->m = json_loadb(j->ds->manifest, j->ds->manifest_len, 0, &jerr);
    if (!j->m) return fs_error(j->err, FS_ERR_FORMAT, "%s/%s: %s", dir, FS_MANIFEST, jerr.text);
    remove_stale_scratch(dir);
    fs_status_t whole = fs_dataset_need_whole(j->ds, "propagate", j->err);
    if (whole != FS_OK) return whole;
    if (fs_dataset_is_typed(j->ds))
        return fs_error(j->err, FS_ERR_UNSUPPORTED, "propagate: %s is a typed graph (%d node types, %d edge types); "
                        "propagate takes a dataset of one node type and one edge type, and does not project a typed "
                        "graph onto one node type (not yet supported)", dir, j->ds->num_node_types,
                        j->ds->num_edge_types);
    return FS_OK;
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
    j->num_outs = hops + 1 + (j->o->labelled ? 2 : 0);
    j->outs = calloc((size_t)j->num_outs, sizeof *j->outs);
    if (!j->outs) return fs_error(j->err, FS_ERR_NOMEM, "out of memory");
    for (int i = 0; i < j->num_outs; i++) {
        out_t *o = &j->outs[i];
        if (i <= hops) {
            *o = (out_t){.fd = -1, .dtype = j->dtype, .ndim = 2, .shape = {j->rows, j->src->dim}};
            snprintf(o->table, sizeof o->table, "hop_%d", i);
            snprintf(o->base, sizeof o->base, "table_hop_%d", i);
        } else {
            int nodes = i == hops + 1;
            *o = (out_t){.fd = -1, .dtype = FS_DTYPE_I64, .ndim = 1, .shape = {nodes ? j->rows : j->ds->num_nodes}};
            snprintf(o->base, sizeof o->base, nodes ? "hop_row_nodes" : "hop_row_index");
        }
        name_output(j, o);
    }
    snprintf(j->scratch, sizeof j->scratch, "%s/%s%ld", j->o->dir, SCRATCH_PREFIX, (long)getpid());
    if (mkdir(j->scratch, 0755) != 0)
        return fs_error(j->err, FS_ERR_IO, "cannot create %s: %s", j->scratch, strerror(errno));
    j->scratch_made = 1;
    for (int i = 0; i < j->num_outs; i++) {
        fs_status_t s = out_create(j, &j->outs[i]);
        if (s != FS_OK) return s;
    }
    if (j->o->labelled) {
        memcpy(j->outs[hops + 1].map + FS_NPY_WRITE_HEADER_LEN, j->row_nodes, (size_t)j->rows * sizeof(int64_t));
        memcpy(j->outs[hops + 2].map + FS_NPY_WRITE_HEADER_LEN, j->row_index,
               (size_t)j->ds->num_nodes * sizeof(int64_t));
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
    size_t row_bytes = (size_t)dim * fs_dtype_size(j->dtype);
    char *data = s->out->map + FS_NPY_WRITE_HEADER_LEN;
    for (int64_t q = b; q < e; q++) {
        int64_t r = s->scatter ? j->row_index[q] : q;
        if (r >= 0) fs_convert_from_f32(rows + (q - b) * dim, (size_t)dim, j->dtype, data + (size_t)r * row_bytes);
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
    if (s == FS_OK && !halted) s = out_finish(j, &j->outs[0]);
    for (int r = 1; r <= j->o->hops && s == FS_OK && !halted; r++) {
        int last = r == j->o->hops;
        p.nodes = last && j->o->labelled ? j->row_nodes : NULL;
        p.num_rows = p.nodes ? j->rows : 0;
        int64_t rows = p.nodes ? j->rows : g->num_nodes;
        pass_begin(j, &p, r, &sink, rows);
        s = fs_prop_hop(&p, za, last ? NULL : zb, &halted, j->err);
        pass_end(j, rows);
        if (s == FS_OK && !halted) s = out_finish(j, &j->outs[r]); /* one table mapped at a time */
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

/* The features object the hop tables go into (version 2: the one node type's). */
static json_t *features_of(json_t *m)
{
    json_t *owner = m;
    if (json_integer_value(json_object_get(m, "version")) >= 2) owner = json_array_get(json_object_get(m, "node_types"), 0);
    json_t *f = json_object_get(owner, "features");
    if (!json_is_object(f)) {
        f = json_object();
        json_object_set_new(owner, "features", f);
    }
    return f;
}

static json_t *files_of(json_t *m)
{
    json_t *f = json_object_get(m, "files");
    if (!json_is_object(f)) {
        f = json_object();
        json_object_set_new(m, "files", f);
    }
    return f;
}

/* Takes an earlier propagation out of m; its files go into `gone`. */
static void drop_old(json_t *m, json_t *gone)
{
    json_t *p = json_object_get(m, "propagation");
    if (!p) return;
    json_t *feats = features_of(m), *files = files_of(m);
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
    size_t i;
    json_t *f;
    json_array_foreach(gone, i, f) if (json_string_value(f)) json_object_del(files, json_string_value(f));
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

/* j->m becomes the new manifest; `gone` gets the files it no longer names. */
static void edit_manifest(job_t *j, json_t *gone)
{
    drop_old(j->m, gone);
    json_t *tables = j->o->labelled ? json_object() : features_of(j->m), *files = files_of(j->m);
    for (int r = 0; r <= j->o->hops; r++)
        json_object_set_new(tables, j->outs[r].table, json_pack("{s:s, s:s}", "file", j->outs[r].file, "dtype",
                                                                 fs_dtype_name(j->dtype)));
    json_object_set_new(j->m, "propagation", propagation_json(j, tables));
    if (j->o->labelled) json_decref(tables);
    for (int i = 0; i < j->num_outs; i++)
        json_object_set_new(files, j->outs[i].file,
                            json_pack("{s:I, s:s}", "bytes", (json_int_t)j->outs[i].len, "xxh3", j->outs[i].xxh3));
    json_incref(files); /* "files" stays the last key, as the writer puts it */
    json_object_del(j->m, "files");
    json_object_set_new(j->m, "files", files);
}

static fs_status_t write_manifest(job_t *j, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) return fs_error(j->err, FS_ERR_IO, "cannot create %s: %s", path, strerror(errno));
    int rc = json_dumpf(j->m, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    rc |= fputc('\n', f) == EOF;
    rc |= fflush(f) != 0 || fsync(fileno(f)) != 0;
    rc |= fclose(f) != 0;
    if (rc) return fs_error(j->err, FS_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    return FS_OK;
}

/* The manifest on disk is still the one the tables were made from. */
static fs_status_t manifest_unchanged(job_t *j)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", j->o->dir, FS_MANIFEST);
    FILE *f = fopen(path, "rb");
    char *buf = malloc(j->ds->manifest_len + 1);
    size_t n = f && buf ? fread(buf, 1, j->ds->manifest_len + 1, f) : 0;
    int same = n == j->ds->manifest_len && memcmp(buf, j->ds->manifest, n) == 0;
    if (f) fclose(f);
    free(buf);
    if (same) return FS_OK;
    return fs_error(j->err, FS_ERR_IO, "propagate: %s changed while the tables were being made; nothing was committed "
                    "(run it again)", path);
}

static void move_back(job_t *j)
{
    for (int i = 0; i < j->num_outs; i++)
        if (j->outs[i].moved && renameat(j->dir_fd, j->outs[i].file, AT_FDCWD, j->outs[i].path) == 0) j->outs[i].moved = 0;
}

/* Renames o into the dataset, never over a file (a file system without
 * RENAME_NOREPLACE: link, which refuses an existing name, then unlink). */
static int rename_new(job_t *j, const out_t *o)
{
    if (renameat2(AT_FDCWD, o->path, j->dir_fd, o->file, RENAME_NOREPLACE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS) return -1;
    if (linkat(AT_FDCWD, o->path, j->dir_fd, o->file, 0) != 0) return -1;
    return unlink(o->path);
}

static fs_status_t move_in(job_t *j, const char *manifest_tmp)
{
    for (int i = 0; i < j->num_outs; i++) {
        out_t *o = &j->outs[i];
        if (rename_new(j, o) != 0) {
            fs_status_t s = fs_error(j->err, FS_ERR_IO, "cannot move %s to %s/%s: %s", o->path, j->o->dir, o->file,
                                     strerror(errno));
            move_back(j);
            return s;
        }
        o->moved = 1;
    }
    if (renameat(AT_FDCWD, manifest_tmp, j->dir_fd, FS_MANIFEST) != 0) {
        fs_status_t s = fs_error(j->err, FS_ERR_IO, "cannot replace %s/%s: %s", j->o->dir, FS_MANIFEST, strerror(errno));
        move_back(j);
        return s;
    }
    fsync(j->dir_fd);
    return FS_OK;
}

static fs_status_t commit(job_t *j)
{
    sigset_t hold, before;
    sigemptyset(&hold);
    sigaddset(&hold, SIGINT), sigaddset(&hold, SIGTERM), sigaddset(&hold, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &hold, &before);
    fs_status_t s = stop_requested(j) ? stopped(j) : manifest_unchanged(j);
    json_t *gone = json_array();
    char manifest_tmp[4400];
    snprintf(manifest_tmp, sizeof manifest_tmp, "%s/%s", j->scratch, FS_MANIFEST);
    if (s == FS_OK) {
        edit_manifest(j, gone);
        s = write_manifest(j, manifest_tmp);
    }
    if (s == FS_OK) s = move_in(j, manifest_tmp);
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    size_t i;
    json_t *f;
    if (s == FS_OK)
        json_array_foreach(gone, i, f) if (json_string_value(f)) unlinkat(j->dir_fd, json_string_value(f), 0);
    json_decref(gone);
    return s;
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
    if (o->dtype != FS_DTYPE_INVALID && o->dtype != FS_DTYPE_F32 && o->dtype != FS_DTYPE_F16 && o->dtype != FS_DTYPE_BF16)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "propagate: --dtype must be float32, float16 or bfloat16");
    return FS_OK;
}

static void job_free(job_t *j)
{
    for (int i = 0; j->outs && i < j->num_outs; i++) out_close(&j->outs[i]);
    if (j->scratch_made) rm_tree(j->scratch); /* after a commit: only the emptied directory */
    free(j->outs);
    free(j->row_nodes);
    free(j->row_index);
    json_decref(j->m);
    fs_dataset_close(j->ds);
    if (j->dir_fd >= 0) close(j->dir_fd); /* releases the lock */
}

fs_status_t fs_propagate(const fs_propagate_opts_t *o, fs_propagate_report_t *rep, fs_error_t *err)
{
    fs_propagate_report_t dummy;
    if (!rep) rep = &dummy;
    memset(rep, 0, sizeof *rep);
    fs_status_t s = check_opts(o, err);
    if (s != FS_OK) return s;
    job_t j = {.o = o, .rep = rep, .err = err, .dir_fd = -1};
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
    for (int i = 0; s == FS_OK && i < j.num_outs; i++)
        if (j.outs[i].map) s = out_finish(&j, &j.outs[i]); /* the row order's arrays */
    if (s == FS_OK) s = commit(&j);
    if (j.src) {
        rep->rows = j.rows, rep->dim = j.src->dim, rep->dtype = j.dtype;
        snprintf(rep->source_table, sizeof rep->source_table, "%s", j.src->name);
        snprintf(rep->graph, sizeof rep->graph, "%s", j.symmetrize ? "symmetrized" : "stored");
    }
    rep->seconds = fs_now() - t0;
    job_free(&j);
    return s;
}
