/* import_ogb_hetero.c — OGB heterogeneous node-property datasets (ogbn-mag)
 * as downloaded, into a typed (version-2) dataset:
 *   raw/num-node-dict.csv[.gz]           a header line of node type names, a line of counts
 *   raw/relations/<src>___<rel>___<dst>/ one directory per edge type:
 *       edge.csv[.gz]                    "src,dst" per line (ids of the src and dst types)
 *       num-edge-list.csv[.gz]           E (optional; checked)
 *       edge_year.csv[.gz]               one integer per edge: the edge's time (optional)
 *       edge_feat / edge-feat.csv[.gz]   F floats per edge: edge table "feat" (optional)
 *       edge_reltype.csv[.gz]            ignored: the directory names the relation
 *   raw/node-feat/<type>/node-feat.csv[.gz]     F floats per node: table "feat"
 *   raw/node-label/<type>/node-label.csv[.gz]   one label per node, "nan" = unlabelled
 *   raw/node_year/<type>/node_year.csv[.gz]     one integer per node: the node's time
 *   split/<name>/<type>/{train,valid,test}.csv[.gz]   ids of that type
 * Node types keep num-node-dict's order; edge types follow the relation
 * directories sorted by name, each followed by its reverse (dst, rev_<rel>,
 * src) with --add-reverse. Without a split directory, labelled types get
 * the seeded random --split.
 *
 * Design: the typed builder lays out every edge type (typed_build.h), so
 * this file only reads text. Every id is checked while it is read, so a bad
 * one is named by file and line, not by an edge position the user never
 * sees. Feature rows go straight into the mapped tables; edges and the
 * small per-node columns are held in memory (O(E)). */
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "import.h"
#include "progress.h"
#include "textin.h"
#include "typed_build.h"

#define PATH_LEN 4400

typedef struct {
    const char *dir;              /* the OGB directory */
    const fs_import_opts_t *o;
    fs_typed_t *b;
    int num_types;
    char (*names)[FS_TYPE_NAME_MAX];
    int64_t *counts;
    int64_t **labels;             /* [num_types]: each type's labels, or NULL */
    int num_relations;
    int64_t num_edges;            /* over all relations, reverses not counted */
} imp_t;

static fs_status_t line_error(fs_textin_t *t, const char *want, const char *line, fs_error_t *err)
{
    return fs_error(err, FS_ERR_FORMAT, "%s:%lld: expected %s, got '%.60s'", fs_textin_path(t),
                    (long long)fs_textin_lineno(t), want, line);
}

static int dir_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int type_index(const imp_t *m, const char *name, size_t len)
{
    for (int i = 0; i < m->num_types; i++)
        if (strlen(m->names[i]) == len && strncmp(m->names[i], name, len) == 0) return i;
    return -1;
}

/* ---- growing int64 columns ---------------------------------------------------------- */

typedef struct {
    int64_t *v;
    int64_t n, cap;
} column_t;

static int push(column_t *c, int64_t x)
{
    if (c->n == c->cap) {
        int64_t cap = c->cap ? 2 * c->cap : 4096;
        int64_t *grown = realloc(c->v, (size_t)cap * sizeof *grown);
        if (!grown) return -1;
        c->v = grown, c->cap = cap;
    }
    c->v[c->n++] = x;
    return 0;
}

/* One integer per line (blank lines skipped): node years, edge years, split
 * ids, labels. With nan_ok "nan" reads as -1; values outside [lo, hi) are
 * errors naming `what`. */
static fs_status_t read_ints(const char *path, const char *what, int nan_ok, int64_t lo, int64_t hi, column_t *out,
                             fs_error_t *err)
{
    fs_textin_t *t;
    fs_status_t s = fs_textin_open(path, &t, err);
    if (s != FS_OK) return s;
    char *line, want[96];
    snprintf(want, sizeof want, "one %s%s", what, nan_ok ? " or nan" : "");
    while (s == FS_OK && (line = fs_textin_line(t, NULL))) {
        char *p = line;
        int64_t v;
        if (fs_parse_at_end(p)) continue;
        while (*p == ' ') p++;
        if (nan_ok && strncasecmp(p, "nan", 3) == 0 && fs_parse_at_end(p + 3)) v = -1;
        else if (fs_parse_i64(&p, &v) || !fs_parse_at_end(p)) {
            s = line_error(t, want, line, err);
            break;
        } else if (v < lo || v >= hi) {
            s = fs_error(err, FS_ERR_FORMAT, "%s:%lld: %s %lld is outside [%lld, %lld)", path,
                         (long long)fs_textin_lineno(t), what, (long long)v, (long long)lo, (long long)hi);
            break;
        }
        if (push(out, v)) s = fs_error(err, FS_ERR_NOMEM, "out of memory reading %s", path);
    }
    if (s == FS_OK) s = fs_textin_error(t, err);
    fs_textin_close(t);
    return s;
}

/* read_ints of exactly n values into dst. */
static fs_status_t read_ints_into(const char *path, const char *what, int nan_ok, int64_t lo, int64_t hi, int64_t n,
                                  const char *per, int64_t *dst, fs_error_t *err)
{
    column_t c = {0};
    fs_status_t s = read_ints(path, what, nan_ok, lo, hi, &c, err);
    if (s == FS_OK && c.n != n)
        s = fs_error(err, FS_ERR_FORMAT, "%s: %lld lines for %lld %ss (one per %s)", path, (long long)c.n, (long long)n,
                     per, per);
    if (s == FS_OK && n) memcpy(dst, c.v, (size_t)n * sizeof *dst);
    free(c.v);
    return s;
}

/* ---- feature tables --------------------------------------------------------------------- */

/* Where a table goes: a node type's or an edge type's "feat". */
typedef struct {
    fs_typed_t *b;
    int edge, type;
    int64_t rows;
} table_dest_t;

static fs_status_t create_table(const table_dest_t *d, int64_t dim, float **rows, fs_error_t *err)
{
    return d->edge ? fs_typed_edge_table(d->b, d->type, "feat", FS_DTYPE_F32, dim, (void **)rows, err)
                   : fs_typed_node_table(d->b, d->type, "feat", FS_DTYPE_F32, dim, (void **)rows, err);
}

/* Comma-separated floats, one row per line; the first row fixes the width. */
static fs_status_t read_table(const char *path, const table_dest_t *d, fs_error_t *err)
{
    fs_textin_t *t;
    fs_status_t s = fs_textin_open(path, &t, err);
    if (s != FS_OK) return s;
    float *table = NULL;
    int64_t dim = 0, row = 0;
    char *line;
    while (s == FS_OK && (line = fs_textin_line(t, NULL))) {
        if (fs_parse_at_end(line)) continue;
        if (!table) {
            for (char *p = line; *p; p++) dim += *p == ',';
            if ((s = create_table(d, ++dim, &table, err))) break;
        }
        if (row >= d->rows) {
            s = fs_error(err, FS_ERR_FORMAT, "%s:%lld: more than %lld feature rows (one per %s)", path,
                         (long long)fs_textin_lineno(t), (long long)d->rows, d->edge ? "edge" : "node");
            break;
        }
        char *p = line;
        float *out = table + row * dim;
        for (int64_t k = 0; k < dim && s == FS_OK; k++)
            if (fs_parse_f32(&p, &out[k])) s = line_error(t, "a float", line, err);
        if (s == FS_OK && !fs_parse_at_end(p)) s = line_error(t, "the same number of columns as the first row", line, err);
        row++;
    }
    if (s == FS_OK) s = fs_textin_error(t, err);
    if (s == FS_OK && row != d->rows)
        s = fs_error(err, FS_ERR_FORMAT, "%s: %lld feature rows for %lld %ss", path, (long long)row,
                     (long long)d->rows, d->edge ? "edge" : "node");
    fs_textin_close(t);
    return s;
}

/* ---- num-node-dict ------------------------------------------------------------------------ */

/* Line 1: type names; takes them into m->names. */
static fs_status_t parse_type_names(imp_t *m, fs_textin_t *t, char *line, fs_error_t *err)
{
    int cap = 1;
    for (char *p = line; *p; p++) cap += *p == ',';
    m->names = calloc((size_t)cap, sizeof *m->names);
    m->counts = calloc((size_t)cap, sizeof *m->counts);
    m->labels = calloc((size_t)cap, sizeof *m->labels);
    if (!m->names || !m->counts || !m->labels) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    for (char *p = line;; p++) {
        size_t n = strcspn(p, ",");
        while (n && (p[n - 1] == ' ' || p[n - 1] == '"')) n--; /* pandas may quote the header */
        while (n && (*p == ' ' || *p == '"')) p++, n--;
        if (n < FS_TYPE_NAME_MAX) memcpy(m->names[m->num_types], p, n); /* calloc'd: NUL-terminated */
        if (!fs_type_name_valid(m->names[m->num_types]) || n >= FS_TYPE_NAME_MAX)
            return line_error(t, "node type names of letters, digits or underscores", line, err);
        if (type_index(m, p, n) >= 0) return line_error(t, "each node type named once", line, err);
        m->num_types++;
        p += strcspn(p, ",");
        if (!*p) return FS_OK;
    }
}

static fs_status_t read_node_dict(imp_t *m, const char *path, fs_error_t *err)
{
    fs_textin_t *t;
    fs_status_t s = fs_textin_open(path, &t, err);
    if (s != FS_OK) return s;
    char *line = fs_textin_line(t, NULL);
    if (line) s = parse_type_names(m, t, line, err);
    else if (!(s = fs_textin_error(t, err))) s = fs_error(err, FS_ERR_FORMAT, "%s: empty file", path);
    if (s == FS_OK && !(line = fs_textin_line(t, NULL)) && !(s = fs_textin_error(t, err)))
        s = fs_error(err, FS_ERR_FORMAT, "%s: no line of counts under the node type names", path);
    char *p = line;
    for (int i = 0; s == FS_OK && i < m->num_types; i++)
        if (fs_parse_i64(&p, &m->counts[i]) || m->counts[i] < 0 || m->counts[i] == INT64_MAX)
            s = line_error(t, "one node count per type named on line 1", line, err);
    if (s == FS_OK && !fs_parse_at_end(p)) s = line_error(t, "one node count per type named on line 1", line, err);
    fs_textin_close(t);
    return s;
}

/* ---- node types -------------------------------------------------------------------------- */

/* raw/<sub>/<type>/<file>.csv[.gz] into path; 0 if absent. */
static int node_file(const imp_t *m, const char *sub, int type, const char *file, char *path)
{
    char d[PATH_LEN];
    snprintf(d, sizeof d, "%s/raw/%s/%s", m->dir, sub, m->names[type]);
    return fs_find_csv(d, file, path, PATH_LEN);
}

static fs_status_t import_node_type(imp_t *m, int type, fs_error_t *err)
{
    char path[PATH_LEN];
    int64_t n = m->counts[type];
    fs_status_t s = FS_OK;
    if (node_file(m, "node-feat", type, "node-feat", path)) {
        table_dest_t d = {.b = m->b, .edge = 0, .type = type, .rows = n};
        s = read_table(path, &d, err);
    }
    if (s == FS_OK && node_file(m, "node-label", type, "node-label", path)) {
        int64_t *labels;
        if (!(s = fs_typed_node_labels(m->b, type, -1, &labels, err)) &&
            !(s = read_ints_into(path, "label", 1, -1, INT64_MAX, n, "node", labels, err)))
            m->labels[type] = labels;
    }
    if (s == FS_OK && node_file(m, "node_year", type, "node_year", path)) {
        int64_t *time;
        if (!(s = fs_typed_node_time(m->b, type, &time, err)))
            s = read_ints_into(path, "year", 0, INT64_MIN, INT64_MAX, n, "node", time, err);
    }
    return s;
}

/* ---- relations --------------------------------------------------------------------------- */

/* "<src>___<rel>___<dst>" into its parts; the types must be known. */
static fs_status_t parse_relation(const imp_t *m, const char *rdir, const char *name, int *src,
                                  char rel[FS_TYPE_NAME_MAX], int *dst, fs_error_t *err)
{
    const char *a = strstr(name, "___"), *b = a ? strstr(a + 3, "___") : NULL;
    if (a && b) snprintf(rel, FS_TYPE_NAME_MAX, "%.*s", (int)(b - a - 3), a + 3);
    if (!a || !b || strstr(b + 3, "___") || b - a - 3 >= FS_TYPE_NAME_MAX || !fs_type_name_valid(rel))
        return fs_error(err, FS_ERR_FORMAT, "%s/%s: a relation directory is named <src>___<rel>___<dst>, each a name "
                        "of letters, digits or underscores", rdir, name);
    *src = type_index(m, name, (size_t)(a - name));
    *dst = type_index(m, b + 3, strlen(b + 3));
    if (*src < 0 || *dst < 0)
        return fs_error(err, FS_ERR_FORMAT, "%s/%s: node type '%.*s' is not in raw/num-node-dict", rdir, name,
                        *src < 0 ? (int)(a - name) : (int)strlen(b + 3), *src < 0 ? name : b + 3);
    return FS_OK;
}

typedef struct {
    column_t src, dst;
} edges_t;

/* edge.csv: "src,dst" per line, each id in range of its type. */
static fs_status_t read_edges(const imp_t *m, const char *path, const char *relation, int st, int dt, edges_t *e,
                              fs_error_t *err)
{
    fs_textin_t *t;
    fs_status_t s = fs_textin_open(path, &t, err);
    if (s != FS_OK) return s;
    fs_progress_t pr;
    char label[64];
    snprintf(label, sizeof label, "import %.56s", relation);
    fs_progress_start(&pr, label);
    char *line;
    while (s == FS_OK && (line = fs_textin_line(t, NULL))) {
        char *p = line;
        int64_t u, v;
        if (fs_parse_at_end(p)) continue;
        if (fs_parse_i64(&p, &u) || fs_parse_i64(&p, &v) || !fs_parse_at_end(p)) s = line_error(t, "\"src,dst\"", line, err);
        else if (u < 0 || u >= m->counts[st] || v < 0 || v >= m->counts[dt]) {
            int bad_src = u < 0 || u >= m->counts[st];
            s = fs_error(err, FS_ERR_FORMAT, "%s:%lld: %s id %lld is outside [0, %lld), the ids of node type '%s'",
                         path, (long long)fs_textin_lineno(t), bad_src ? "source" : "destination",
                         (long long)(bad_src ? u : v), (long long)m->counts[bad_src ? st : dt], m->names[bad_src ? st : dt]);
        } else if (push(&e->src, u) || push(&e->dst, v))
            s = fs_error(err, FS_ERR_NOMEM, "out of memory reading %s", path);
        if ((e->src.n & 65535) == 0) fs_progress_update(&pr, fs_textin_fraction(t), e->src.n, "edges");
    }
    if (s == FS_OK) s = fs_textin_error(t, err);
    if (s == FS_OK) fs_progress_done(&pr, e->src.n, "edges");
    fs_textin_close(t);
    return s;
}

/* num-edge-list.csv, when there, must agree with edge.csv. */
static fs_status_t check_edge_count(const char *rd, int64_t n, fs_error_t *err)
{
    char path[PATH_LEN];
    if (!fs_find_csv(rd, "num-edge-list", path, sizeof path)) return FS_OK;
    column_t c = {0};
    fs_status_t s = read_ints(path, "edge count", 0, 0, INT64_MAX, &c, err);
    if (s == FS_OK && (c.n != 1 || c.v[0] != n))
        s = fs_error(err, FS_ERR_FORMAT, "%s: says %lld edges, but edge.csv has %lld", path,
                     (long long)(c.n ? c.v[0] : -1), (long long)n);
    free(c.v);
    return s;
}

static fs_status_t import_relation(imp_t *m, const char *rdir, const char *name, fs_error_t *err)
{
    char rd[PATH_LEN], path[PATH_LEN], rel[FS_TYPE_NAME_MAX], rev[80];
    int st = -1, dt = -1, index = -1;
    fs_status_t s = parse_relation(m, rdir, name, &st, rel, &dt, err);
    if (s) return s;
    if (snprintf(rd, sizeof rd, "%s/%s", rdir, name) >= (int)sizeof rd)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s/%s: path too long", rdir, name);
    if (!fs_find_csv(rd, "edge", path, sizeof path))
        return fs_error(err, FS_ERR_NOT_FOUND, "%s: no edge.csv[.gz]", rd);
    edges_t e = {0};
    column_t time = {0};
    s = read_edges(m, path, name, st, dt, &e, err);
    int64_t n = e.src.n;
    if (!s) s = check_edge_count(rd, n, err);
    if (!s && fs_find_csv(rd, "edge_year", path, sizeof path) &&
        !(s = read_ints(path, "year", 0, INT64_MIN, INT64_MAX, &time, err)) && time.n != n)
        s = fs_error(err, FS_ERR_FORMAT, "%s: %lld years for %lld edges (one per edge)", path, (long long)time.n,
                     (long long)n);
    snprintf(rev, sizeof rev, "rev_%s", rel);
    fs_typed_edges_t te = {.src = m->names[st], .rel = rel, .dst = m->names[dt], .num_edges = n, .src_ids = e.src.v,
                           .dst_ids = e.dst.v, .time = time.n ? time.v : NULL,
                           .reverse = m->o->add_reverse ? rev : NULL};
    if (!s) s = fs_typed_edge_type(m->b, &te, &index, err);
    m->num_relations++, m->num_edges += n;
    free(e.src.v), free(e.dst.v), free(time.v);
    if (!s && (fs_find_csv(rd, "edge_feat", path, sizeof path) || fs_find_csv(rd, "edge-feat", path, sizeof path))) {
        table_dest_t d = {.b = m->b, .edge = 1, .type = index, .rows = n};
        s = read_table(path, &d, err);
    }
    return s;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every relation directory, in name order (a stable order of edge types). */
static fs_status_t import_relations(imp_t *m, fs_error_t *err)
{
    char rdir[PATH_LEN];
    snprintf(rdir, sizeof rdir, "%s/raw/relations", m->dir);
    DIR *d = opendir(rdir);
    if (!d) return fs_error(err, FS_ERR_NOT_FOUND, "%s: no relations directory (raw/relations/<src>___<rel>___<dst>/)", rdir);
    char **names = NULL;
    size_t n = 0;
    fs_status_t s = FS_OK;
    struct dirent *ent;
    while (s == FS_OK && (ent = readdir(d))) {
        if (ent->d_name[0] == '.') continue;
        char **grown = realloc(names, (n + 1) * sizeof *names);
        if (!grown || !(grown[n] = strdup(ent->d_name))) s = fs_error(err, FS_ERR_NOMEM, "out of memory");
        if (grown) names = grown, n += s == FS_OK;
    }
    closedir(d);
    if (s == FS_OK && n == 0) s = fs_error(err, FS_ERR_FORMAT, "%s: no relation directories", rdir);
    if (n) qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n && s == FS_OK; i++) s = import_relation(m, rdir, names[i], err);
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return s;
}

/* ---- splits ------------------------------------------------------------------------------- */

static fs_status_t import_split_file(imp_t *m, int type, const char *path, const char *split, fs_error_t *err)
{
    column_t c = {0};
    int64_t *ids;
    char what[96];
    snprintf(what, sizeof what, "%s id", m->names[type]);
    fs_status_t s = read_ints(path, what, 0, 0, m->counts[type], &c, err);
    if (s == FS_OK && !(s = fs_typed_node_split(m->b, type, split, c.n, &ids, err)) && c.n)
        memcpy(ids, c.v, (size_t)c.n * sizeof *ids);
    free(c.v);
    return s;
}

/* split/<name>/<type>/{train,valid,test}; without a split directory, the
 * random split of each labelled type. */
static fs_status_t import_splits(imp_t *m, fs_error_t *err)
{
    static const char *const names[3] = {"train", "valid", "test"};
    char sdir[PATH_LEN], tdir[PATH_LEN + 80], path[PATH_LEN + 160];
    fs_status_t s = fs_ogb_split_dir(m->dir, m->o->split_name, sdir, sizeof sdir, err);
    if (s != FS_OK) return s;
    int found = 0;
    for (int i = 0; i < m->num_types && s == FS_OK; i++) {
        if (!sdir[0]) {
            if (m->labels[i]) s = fs_typed_random_splits(m->b, i, m->labels[i], m->o->split_pct, m->o->seed, err);
            continue;
        }
        snprintf(tdir, sizeof tdir, "%s/%s", sdir, m->names[i]);
        if (!dir_exists(tdir)) continue;
        found++;
        for (int k = 0; k < 3 && s == FS_OK; k++) {
            if (!fs_find_csv(tdir, names[k], path, sizeof path))
                return fs_error(err, FS_ERR_NOT_FOUND, "%s: missing %s.csv[.gz]", tdir, names[k]);
            s = import_split_file(m, i, path, names[k], err);
        }
    }
    if (s == FS_OK && sdir[0] && !found)
        s = fs_error(err, FS_ERR_FORMAT, "%s: no directory named after a node type (split/<name>/<type>/train.csv.gz)",
                     sdir);
    return s;
}

/* ---- the dataset --------------------------------------------------------------------------- */

static fs_status_t set_meta(fs_writer_t *w, const char *dir, const fs_import_opts_t *o, const char *split,
                            fs_error_t *err)
{
    char name[128];
    fs_basename_noext(dir, name, sizeof name);
    fs_writer_set_meta(w, o->name ? o->name : name, 0, 0, 0, 0);
    json_t *j = json_pack("{s:s, s:s, s:b, s:s?}", "importer", "ogb-hetero", "input", dir, "add_reverse",
                          o->add_reverse, "split", split);
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!text) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    fs_status_t s = fs_writer_set_source(w, text, err);
    free(text);
    return s;
}

static fs_status_t import_graph(imp_t *m, fs_error_t *err)
{
    fs_status_t s = FS_OK;
    for (int i = 0; i < m->num_types && s == FS_OK; i++) s = fs_typed_node_type(m->b, m->names[i], m->counts[i], NULL, err);
    for (int i = 0; i < m->num_types && s == FS_OK; i++) s = import_node_type(m, i, err);
    if (s == FS_OK) s = import_relations(m, err);
    if (s == FS_OK) s = import_splits(m, err);
    return s;
}

fs_status_t fs_import_ogb_hetero(const char *dir, const fs_import_opts_t *o, fs_error_t *err)
{
    const fs_edge_opts_t *eo = &o->edges;
    if (eo->symmetrize || eo->dedup || eo->drop_self_loops || eo->reverse || eo->compact_ids || o->weighted)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s: an OGB heterogeneous dataset is imported as it is: no "
                        "--symmetrize, --dedup, --drop-self-loops, --reverse, --compact-ids or --weighted (--add-reverse "
                        "adds each relation's reverse)", dir);
    char raw[PATH_LEN], path[PATH_LEN];
    snprintf(raw, sizeof raw, "%s/raw", dir);
    if (!fs_find_csv(raw, "num-node-dict", path, sizeof path))
        return fs_error(err, FS_ERR_NOT_FOUND, "%s: no raw/num-node-dict.csv[.gz] (is this an OGB heterogeneous "
                        "dataset directory?)", dir);
    imp_t m = {.dir = dir, .o = o};
    fs_writer_t *w = NULL;
    fs_status_t s = read_node_dict(&m, path, err);
    if (!s) s = fs_writer_create(o->out_dir, o->force, &w, err);
    if (!s) s = fs_typed_create(w, o->threads, &m.b, err);
    if (!s) s = import_graph(&m, err);
    if (!s) {
        s = fs_typed_finish(m.b, err);
        m.b = NULL;
    }
    char sdir[PATH_LEN];
    if (!s && !(s = fs_ogb_split_dir(dir, o->split_name, sdir, sizeof sdir, err)))
        s = set_meta(w, dir, o, sdir[0] ? strrchr(sdir, '/') + 1 : NULL, err);
    fs_typed_free(m.b);
    free(m.names), free(m.counts), free(m.labels);
    if (s != FS_OK) {
        fs_writer_abort(w);
        return s;
    }
    fprintf(stderr, "import: %d node types, %d relations%s, %lld edges\n", m.num_types, m.num_relations,
            o->add_reverse ? " (and their reverses)" : "", (long long)m.num_edges);
    return fs_writer_commit(w, err);
}
