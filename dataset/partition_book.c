/* partition_book.c — the partition root's own files: one node map per node
 * type, the hot lists, each edge type's degree arrays and the book,
 * partition.json (docs/format.md "Partitioned datasets").
 *
 * Why this shape: the book is what a sharded client and server read first
 * (which part owns which range, which parts belong together), so it
 * carries everything needed to check the root without trusting it: the
 * partitioning's random id (every part repeats it), each part manifest's
 * xxh3 and the node maps' bytes and xxh3, as a dataset's manifest does for
 * its files; and the quality measured while the parts were written (edge
 * cut, balance), so `featstore partition` prints the figures it saved. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs_fileio.h"
#include "fs_hash.h"
#include "fs_limits.h"
#include "fs_npy.h"
#include "partition_internal.h"
#include "window.h"

fs_status_t pt_file_hash(const char *path, char hex[17], fs_error_t *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fs_error(err, errno == ENOENT ? FS_ERR_NOT_FOUND : FS_ERR_IO, "%s: cannot open: %s", path,
                                strerror(errno));
    fs_hash_t *st = fs_hash_new();
    char buf[1 << 16];
    ssize_t got = 0;
    while (st && (got = read(fd, buf, sizeof buf)) > 0) fs_hash_update(st, buf, (size_t)got);
    int e = errno;
    close(fd);
    if (!st || got < 0) {
        fs_hash_free(st);
        return fs_error(err, st ? FS_ERR_IO : FS_ERR_NOMEM, "%s: cannot read: %s", path, st ? strerror(e) : "no memory");
    }
    snprintf(hex, 17, "%016llx", (unsigned long long)fs_hash_digest(st));
    fs_hash_free(st);
    return FS_OK;
}

/* dir/file as an int64 [n] .npy with featstore's .npy header; its size and xxh3 into files. */
static fs_status_t write_i64_npy(const char *dir, const char *file, const int64_t *a, int64_t n, json_t *files,
                                 fs_error_t *err)
{
    char path[4400], header[FS_NPY_WRITE_HEADER_LEN], hex[17];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    fs_npy_format(header, FS_DTYPE_I64, 1, &n);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int bad = fd < 0 || fs_write_full(fd, header, sizeof header) || fs_write_full(fd, a, (size_t)n * sizeof *a) || fsync(fd);
    int e = errno;
    if (fd >= 0) close(fd);
    if (bad) return fs_error(err, FS_ERR_IO, "%s: cannot write: %s", path, strerror(e));
    fs_hash_t *st = fs_hash_new();
    if (!st) return fs_error(err, FS_ERR_NOMEM, "out of memory hashing %s", path);
    fs_hash_update(st, header, sizeof header);
    fs_hash_update(st, a, (size_t)n * sizeof *a);
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)fs_hash_digest(st));
    fs_hash_free(st);
    json_object_set_new(files, file, json_pack("{s:I, s:s}", "bytes", (json_int_t)(sizeof header + (size_t)n * 8),
                                               "xxh3", hex));
    return FS_OK;
}

/* The hot list of type t: the quarter of its nodes that the most lists
 * hold (ties by id), or with the highest given hotness (opts.hotness),
 * hottest first, as new ids, into `file`. A trainer of the cluster keeps
 * the rows of as many of them as its cache holds (cluster/fs_cluster.h).
 * By lists, found without a full sort: a histogram of the counts gives the
 * threshold, and only the nodes above it are sorted. */
typedef struct {
    uint32_t uses;
    int64_t id;
} hot_t;

static int hotter(const void *a, const void *b)
{
    const hot_t *x = a, *y = b;
    if (x->uses != y->uses) return x->uses < y->uses ? 1 : -1;
    return (x->id > y->id) - (x->id < y->id);
}

#define HOT_BUCKETS 65536

typedef struct {
    double p;
    int64_t id;
} ranked_t;

static int ranked_hotter(const void *a, const void *b)
{
    const ranked_t *x = a, *y = b;
    if (x->p != y->p) return x->p < y->p ? 1 : -1;
    return (x->id > y->id) - (x->id < y->id);
}

/* The hot list by the given hotness: every node sorted (the option's cost,
 * 16 bytes a node; the default needs none). */
static fs_status_t write_hot_ranked(pt_job_t *j, int t, const char *file, json_t *files)
{
    int64_t n = j->ds->node_types[t].count, want = FS_HOT_LIST_LEN(n);
    ranked_t *r = malloc(sizeof *r * (size_t)(n + 1));
    int64_t *ids = malloc(sizeof *ids * (size_t)(want + 1));
    if (!r || !ids) {
        free(r), free(ids);
        return fs_error(j->err, FS_ERR_NOMEM, "out of memory for the hot list of %lld nodes", (long long)want);
    }
    for (int64_t v = 0; v < n; v++) r[v] = (ranked_t){j->o->hotness[v], j->new_id[t][v]};
    qsort(r, (size_t)n, sizeof *r, ranked_hotter);
    for (int64_t i = 0; i < want; i++) ids[i] = r[i].id;
    fs_status_t s = write_i64_npy(j->tmp_dir, file, ids, want, files, j->err);
    free(r), free(ids);
    return s;
}

static fs_status_t write_hot(pt_job_t *j, int t, const char *file, json_t *files)
{
    if (j->o->hotness) return write_hot_ranked(j, t, file, files);
    int64_t n = j->ds->node_types[t].count, want = FS_HOT_LIST_LEN(n), above = 0, k = 0;
    const uint32_t *uses = j->uses[t];
    uint64_t *hist = calloc(HOT_BUCKETS, sizeof *hist);
    hot_t *hot = malloc(sizeof *hot * (size_t)(want + 1));
    int64_t *ids = malloc(sizeof *ids * (size_t)(want + 1));
    if (!hist || !hot || !ids) {
        free(hist), free(hot), free(ids);
        return fs_error(j->err, FS_ERR_NOMEM, "out of memory for the hot list of %lld nodes", (long long)want);
    }
    for (int64_t v = 0; v < n; v++) hist[uses[v] < HOT_BUCKETS - 1 ? uses[v] : HOT_BUCKETS - 1]++;
    uint32_t thr = HOT_BUCKETS - 1; /* the lowest count that still makes the list */
    while (thr > 0 && above + (int64_t)hist[thr] < want) above += (int64_t)hist[thr--];
    for (int64_t v = 0; v < n && k < want; v++) /* every node above it, then the threshold's by id */
        if (uses[v] > thr || (uses[v] == thr && above++ < want)) hot[k++] = (hot_t){uses[v], j->new_id[t][v]};
    qsort(hot, (size_t)k, sizeof *hot, hotter);
    for (int64_t i = 0; i < k; i++) ids[i] = hot[i].id;
    fs_status_t s = write_i64_npy(j->tmp_dir, file, ids, k, files, j->err);
    free(hist), free(hot), free(ids);
    return s;
}

/* max over parts / mean, or null when the mean is 0 (nothing to balance). */
static json_t *balance(const int64_t *load, int V, double total, double *worst)
{
    if (total <= 0) return json_null();
    int64_t max = 0;
    for (int p = 0; p < V; p++) max = load[p] > max ? load[p] : max;
    double b = (double)max / (total / V);
    if (b > *worst) *worst = b;
    return json_real(b);
}

static json_t *node_types_json(pt_job_t *j, json_t *files, fs_partition_report_t *rep, json_t *bal, fs_status_t *s)
{
    const fs_dataset_t *ds = j->ds;
    json_t *list = json_array();
    for (int t = 0; t < ds->num_node_types && *s == FS_OK; t++) {
        const fs_node_type_t *nt = &ds->node_types[t];
        char file[128];
        snprintf(file, sizeof file, "%s.node_map.npy", nt->name);
        json_t *first = json_array();
        for (int p = 0; p <= j->V; p++) json_array_append_new(first, json_integer(j->first[t][p]));
        /* Each split as the source orders it (source ids): a trainer of
         * the cluster reads it whole, so its epochs are one server's. */
        json_t *splits = json_object();
        *s = write_i64_npy(j->tmp_dir, file, j->new_id[t], nt->count, files, j->err);
        for (int i = 0; i < nt->num_splits && *s == FS_OK; i++) {
            char split_file[FS_SPLIT_NAME_MAX + 160];
            snprintf(split_file, sizeof split_file, "%s.split_%s.npy", nt->name, nt->splits[i].name);
            json_object_set_new(splits, nt->splits[i].name, json_string(split_file));
            *s = write_i64_npy(j->tmp_dir, split_file, nt->splits[i].ids, nt->splits[i].count, files, j->err);
        }
        /* and what a trainer serves from the shards: the tables' shapes */
        json_t *tables = json_array();
        for (int i = 0; i < nt->num_tables; i++) {
            json_t *tb = json_pack("{s:s, s:s, s:I}", "name", nt->tables[i].name, "dtype",
                                   fs_dtype_name(nt->tables[i].dtype), "dim", (json_int_t)nt->tables[i].dim);
            if (nt->tables[i].codec != FS_CODEC_NONE)
                json_object_set_new(tb, "codec", json_string(fs_codec_name(nt->tables[i].codec)));
            json_array_append_new(tables, tb);
        }
        char hot_file[160];
        snprintf(hot_file, sizeof hot_file, "%s.hot.npy", nt->name);
        if (*s == FS_OK) *s = write_hot(j, t, hot_file, files);
        json_array_append_new(list, json_pack("{s:s, s:I, s:o, s:s, s:o, s:o, s:I, s:b, s:s}", "name", nt->name,
                                              "count", (json_int_t)nt->count, "first", first, "node_map", file,
                                              "splits", splits, "tables", tables, "num_classes",
                                              (json_int_t)nt->num_classes, "timed", nt->time != NULL, "hot",
                                              hot_file));
        const pt_load_t *l = &j->load[t];
        json_array_append_new(bal, json_pack("{s:s, s:o, s:o, s:o}", "name", nt->name, "nodes",
                                             balance(l->nodes, j->V, (double)nt->count, &rep->balance_nodes), "train",
                                             balance(l->train, j->V, (double)j->train_total[t], &rep->balance_train),
                                             "edges", balance(l->edges, j->V, (double)j->in_edges[t], &rep->balance_edges)));
    }
    return list;
}

/* Edge type i's degrees, in new ids' order, as int64 .npy files: the
 * destinations' in-degrees (their rows' lengths) and the sources'
 * out-degrees (counted over its edges), what one server's degree-weighted
 * negatives read from its rows and a cluster's trainer reads from these
 * (cluster/fs_cluster.h). One array at a time, the source's topology read
 * forward through windows. */
#define DEGREE_CHUNK 65536

static fs_status_t write_degrees(pt_job_t *j, int i, json_t *files, json_t **degrees)
{
    const fs_edge_type_t *e = &j->ds->edge_types[i];
    int64_t nd = j->ds->node_types[e->dst_type].count, ns = j->ds->node_types[e->src_type].count;
    int64_t *deg = calloc((size_t)(nd > ns ? nd : ns) + 1, sizeof *deg);
    if (!deg) return fs_error(j->err, FS_ERR_NOMEM, "out of memory for the degrees of %lld nodes",
                              (long long)(nd > ns ? nd : ns));
    char in[64], out[64];
    snprintf(in, sizeof in, "edges_%d.in_degree.npy", i), snprintf(out, sizeof out, "edges_%d.out_degree.npy", i);
    fs_window_t w;
    fs_window_init(&w, e->indptr, sizeof *e->indptr * (size_t)(nd + 1));
    for (int64_t v = 0; v < nd; v++) {
        fs_window_touch(&w, e->indptr + v, 2 * sizeof *e->indptr);
        deg[j->new_id[e->dst_type][v]] = e->indptr[v + 1] - e->indptr[v];
    }
    fs_window_drop(&w);
    fs_status_t s = write_i64_npy(j->tmp_dir, in, deg, nd, files, j->err);
    memset(deg, 0, sizeof *deg * (size_t)ns);
    size_t width = fs_dtype_size(e->index_dtype);
    fs_window_init(&w, e->indices, width * (size_t)e->num_edges);
    for (int64_t q = 0; s == FS_OK && q < e->num_edges; q++) {
        if (q % DEGREE_CHUNK == 0)
            fs_window_touch(&w, (const char *)e->indices + (size_t)q * width,
                            width * (size_t)(e->num_edges - q < DEGREE_CHUNK ? e->num_edges - q : DEGREE_CHUNK));
        deg[j->new_id[e->src_type][pt_source(e, q)]]++;
    }
    fs_window_drop(&w);
    if (s == FS_OK) s = write_i64_npy(j->tmp_dir, out, deg, ns, files, j->err);
    free(deg);
    *degrees = json_pack("{s:s, s:s}", "out", out, "in", in);
    return s;
}

static json_t *edge_types_json(pt_job_t *j, json_t *files, json_t *cuts, fs_partition_report_t *rep, fs_status_t *s)
{
    const fs_dataset_t *ds = j->ds;
    json_t *list = json_array();
    for (int i = 0; i < ds->num_edge_types; i++) {
        const fs_edge_type_t *e = &ds->edge_types[i];
        json_t *degrees = NULL;
        if (*s == FS_OK) *s = write_degrees(j, i, files, &degrees);
        json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:I, s:b, s:b, s:i, s:b, s:o*}", "src", e->src, "rel",
                                              e->rel, "dst", e->dst, "num_edges", (json_int_t)e->num_edges,
                                              "weighted", e->weights != NULL, "timed", e->time != NULL, "reverse",
                                              e->reverse, "symmetric", e->symmetric, "degrees", degrees));
        json_array_append_new(cuts, json_pack("{s:s, s:s, s:s, s:I, s:f}", "src", e->src, "rel", e->rel, "dst", e->dst,
                                              "count", (json_int_t)j->cut[i], "fraction",
                                              e->num_edges ? (double)j->cut[i] / (double)e->num_edges : 0.0));
        rep->edges += e->num_edges, rep->cut += j->cut[i];
    }
    rep->cut_fraction = rep->edges ? (double)rep->cut / (double)rep->edges : 0;
    return list;
}

/* Each link split whole, as the source has it (source ids, its order),
 * for a cluster's trainers: link.<name>.<array>.npy beside the node maps. */
static json_t *link_splits_json(pt_job_t *j, json_t *files, fs_status_t *s)
{
    const fs_dataset_t *ds = j->ds;
    json_t *list = json_array();
    for (int i = 0; i < ds->num_link_splits && *s == FS_OK; i++) {
        const fs_link_split_t *l = &ds->link_splits[i];
        const fs_edge_type_t *e = &ds->edge_types[l->edge_type];
        const int64_t *arr[5] = {l->src, l->dst, l->label, l->time, l->neg_dst};
        const char *names[5] = {"src", "dst", "label", "time", "neg_dst"};
        json_t *arrays = json_object();
        for (int a = 0; a < 5 && *s == FS_OK; a++) {
            if (!arr[a]) continue;
            char file[FS_SPLIT_NAME_MAX + 32];
            snprintf(file, sizeof file, "link.%s.%s.npy", l->name, names[a]);
            json_object_set_new(arrays, names[a], json_string(file));
            *s = write_i64_npy(j->tmp_dir, file, arr[a], a == 4 ? l->count * l->num_neg : l->count, files, j->err);
        }
        json_array_append_new(list, json_pack("{s:s, s:[s, s, s], s:I, s:I, s:o}", "name", l->name, "edge_type",
                                              e->src, e->rel, e->dst, "count", (json_int_t)l->count, "num_neg",
                                              (json_int_t)l->num_neg, "arrays", arrays));
    }
    return list;
}

static json_t *parts_json(const pt_job_t *j)
{
    json_t *list = json_array();
    for (int p = 0; p < j->V; p++) {
        char dir[32];
        snprintf(dir, sizeof dir, PT_PART_DIR, p);
        json_array_append_new(list, json_pack("{s:s, s:s}", "dir", dir, "manifest_xxh3", j->part_hash[p]));
    }
    return list;
}

static json_t *method_json(const pt_job_t *j)
{
    if (j->o->method == FS_PARTITION_METIS)
        return json_pack("{s:s, s:f, s:I}", "name", "metis", "imbalance", j->o->imbalance, "seed",
                         (json_int_t)j->o->seed);
    return json_pack("{s:s, s:f, s:s, s:f}", "name", "stream", "imbalance", j->o->imbalance, "algorithm", "fennel",
                     "gamma", 1.5);
}

static fs_status_t save_json(const char *path, json_t *book, fs_error_t *err)
{
    FILE *f = fopen(path, "w");
    int bad = !f || json_dumpf(book, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0 || fputc('\n', f) == EOF ||
              fflush(f) != 0 || fsync(fileno(f)) != 0;
    int e = errno;
    if (f && fclose(f) != 0) bad = 1;
    return bad ? fs_error(err, FS_ERR_IO, "cannot write %s: %s", path, strerror(e)) : FS_OK;
}

fs_status_t pt_write_book(pt_job_t *j, fs_partition_report_t *rep)
{
    char path[4400], src_hash[17];
    snprintf(path, sizeof path, "%s/%s", j->o->dataset, FS_MANIFEST);
    fs_status_t s = pt_file_hash(path, src_hash, j->err);
    if (s != FS_OK) return s;
    json_t *files = json_object(), *cuts = json_array(), *bal = json_array();
    json_t *nts = node_types_json(j, files, rep, bal, &s), *ets = edge_types_json(j, files, cuts, rep, &s);
    json_t *lss = link_splits_json(j, files, &s);
    json_t *book = json_pack("{s:s, s:i, s:s, s:{s:s, s:s, s:s}, s:o, s:i, s:o, s:o, s:o, "
                             "s:{s:{s:I, s:f, s:o}, s:{s:o}}, s:o, s:o}",
                             "format", FS_PARTITION_FORMAT, "version", FS_PARTITION_VERSION, "id", j->id, "dataset",
                             "name", j->ds->name, "path", j->o->dataset, "manifest_xxh3", src_hash, "method",
                             method_json(j), "parts", j->V, "node_types", nts, "edge_types", ets, "link_splits", lss,
                             "quality",
                             "edge_cut", "count", (json_int_t)rep->cut, "fraction", rep->cut_fraction, "edge_types",
                             cuts, "balance", "node_types", bal, "part_dirs", parts_json(j), "files", files);
    snprintf(path, sizeof path, "%s/%s", j->tmp_dir, FS_PARTITION_BOOK);
    if (s == FS_OK) s = book ? save_json(path, book, j->err) : fs_error(j->err, FS_ERR_NOMEM, "out of memory");
    json_decref(book);
    return s;
}
