/* partition.c — `featstore partition` (partition.h): the checks, the node
 * arrays, the renumbering, and the root written atomically.
 *
 * Why this shape: everything the partitioner keeps is per node (owner, new
 * id, source id, a training bit) or per part; the topology and the node
 * tables are only ever read through windows (window.h), from a source
 * opened windowed, so the resident set stays the node arrays plus a few
 * windows however large the dataset (the acceptance figure: peak RSS at
 * most twice that on R-MAT scale 24). Every refusal that needs no work
 * (the options, an existing output, edge feature tables, METIS's size
 * limit) comes before the assignment. The root is written under
 * DIR.tmp-<pid> (parts, node maps, book; each file fsynced) and renamed
 * into place last, so a failure leaves no partial root. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "partition_internal.h"
#include "writer.h"

void fs_partition_defaults(fs_partition_opts_t *o)
{
    *o = (fs_partition_opts_t){.method = FS_PARTITION_STREAM, .imbalance = FS_PARTITION_DEFAULT_IMBALANCE, .seed = 1};
}

/* ---- checks ---------------------------------------------------------------------- */

static fs_status_t check_options(const fs_partition_opts_t *o, fs_error_t *err)
{
    if (o->parts < 1 || o->parts > FS_PARTITION_MAX_PARTS)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "--parts must be in [1, %d], got %d", FS_PARTITION_MAX_PARTS,
                        o->parts);
    if (!(o->imbalance >= 0 && o->imbalance <= FS_PARTITION_MAX_IMBALANCE))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "--imbalance must be in [0, %g], got %g",
                        FS_PARTITION_MAX_IMBALANCE, o->imbalance);
    if (o->method == FS_PARTITION_METIS && !fs_partition_have_metis())
        return fs_error(err, FS_ERR_UNSUPPORTED, "--method metis: this build of featstore lacks METIS (install "
                        "libmetis-dev and rebuild); --method stream needs nothing more");
    struct stat st;
    if (stat(o->out_dir, &st) != 0) return FS_OK;
    if (!o->force) return fs_error(err, FS_ERR_EXISTS, "%s already exists (use --force to replace it)", o->out_dir);
    if (!fs_partition_is_root(o->out_dir))
        return fs_error(err, FS_ERR_EXISTS, "%s exists and is not a featstore partitioning (no %s); refusing to "
                        "replace it even with --force", o->out_dir, FS_PARTITION_BOOK);
    return FS_OK;
}

static fs_status_t check_source(const pt_job_t *j)
{
    const fs_dataset_t *ds = j->ds;
    int64_t nodes = 0, edges = 0;
    for (int t = 0; t < ds->num_node_types; t++) nodes += ds->node_types[t].count;
    for (int i = 0; i < ds->num_edge_types; i++) {
        const fs_edge_type_t *e = &ds->edge_types[i];
        edges += e->num_edges;
        if (e->num_tables)
            return fs_error(j->err, FS_ERR_UNSUPPORTED, "%s: edge type (%s, %s, %s) has the edge feature table '%s' "
                            "(%s); partitioning edge feature tables is not supported yet", ds->dir, e->src, e->rel,
                            e->dst, e->tables[0].name, e->tables[0].file);
    }
    if (j->V > nodes)
        return fs_error(j->err, FS_ERR_INVALID_ARGUMENT, "--parts %d is more than the dataset's %lld nodes: every "
                        "part needs a node (%s)", j->V, (long long)nodes, ds->dir);
    if (j->o->hotness && ds->num_node_types != 1)
        return fs_error(j->err, FS_ERR_UNSUPPORTED, "%s: --hotness ranks one node type's nodes, and this graph has "
                        "%d: leave it out (the hot lists then rank by in-degree)", ds->dir, ds->num_node_types);
    if (ds->propagation && ds->propagation->labelled)
        return fs_error(j->err, FS_ERR_UNSUPPORTED, "%s: hop tables of --rows labelled are row tables, not node "
                        "tables; partitioning them is not supported (propagate with --rows all)", ds->dir);
    return j->o->method == FS_PARTITION_METIS ? fs_partition_metis_fits(nodes, edges, j->err) : FS_OK;
}

/* ---- node arrays ------------------------------------------------------------------ */

static void *node_array(pt_job_t *j, size_t n, size_t size)
{
    j->node_bytes += n * size;
    return calloc(n ? n : 1, size);
}

/* The training split of each type as bits, and the in-edges of each type. */
static void read_train(pt_job_t *j)
{
    const fs_dataset_t *ds = j->ds;
    for (int i = 0; i < ds->num_edge_types; i++) j->in_edges[ds->edge_types[i].dst_type] += ds->edge_types[i].num_edges;
    for (int t = 0; t < ds->num_node_types; t++) {
        const fs_node_type_t *nt = &ds->node_types[t];
        for (int i = 0; i < nt->num_splits; i++) {
            if (strcmp(nt->splits[i].name, PT_TRAIN_SPLIT) != 0 || !j->train_bits[t]) continue;
            for (int64_t k = 0; k < nt->splits[i].count; k++) {
                int64_t v = nt->splits[i].ids[k];
                j->train_total[t] += !(j->train_bits[t][v >> 6] >> (v & 63) & 1);
                j->train_bits[t][v >> 6] |= 1ULL << (v & 63);
            }
        }
    }
}

static int has_train(const fs_node_type_t *nt)
{
    for (int i = 0; i < nt->num_splits; i++)
        if (strcmp(nt->splits[i].name, PT_TRAIN_SPLIT) == 0) return 1;
    return 0;
}

static fs_status_t alloc_job(pt_job_t *j)
{
    const fs_dataset_t *ds = j->ds;
    int T = ds->num_node_types, E = ds->num_edge_types, L = ds->num_link_splits, ok = 1;
    j->owner = calloc((size_t)T, sizeof *j->owner), j->new_id = calloc((size_t)T, sizeof *j->new_id);
    j->orig = calloc((size_t)T, sizeof *j->orig), j->first = calloc((size_t)T, sizeof *j->first);
    j->uses = calloc((size_t)T, sizeof *j->uses);
    j->train_bits = calloc((size_t)T, sizeof *j->train_bits), j->splits = calloc((size_t)T, sizeof *j->splits);
    j->in_edges = calloc((size_t)T, sizeof *j->in_edges), j->train_total = calloc((size_t)T, sizeof *j->train_total);
    j->load = calloc((size_t)T, sizeof *j->load), j->cut = calloc((size_t)E + 1, sizeof *j->cut);
    j->links = calloc((size_t)L + 1, sizeof *j->links), j->part_hash = calloc((size_t)j->V, sizeof *j->part_hash);
    ok = j->owner && j->new_id && j->orig && j->first && j->uses && j->train_bits && j->splits && j->in_edges && j->train_total &&
         j->load && j->cut && j->links && j->part_hash;
    for (int t = 0; ok && t < T; t++) {
        const fs_node_type_t *nt = &ds->node_types[t];
        size_t n = (size_t)nt->count;
        j->owner[t] = node_array(j, n, sizeof **j->owner), j->new_id[t] = node_array(j, n, sizeof **j->new_id);
        j->orig[t] = node_array(j, n, sizeof **j->orig), j->first[t] = calloc((size_t)j->V + 1, sizeof **j->first);
        j->uses[t] = node_array(j, n, sizeof **j->uses);
        j->splits[t] = calloc((size_t)nt->num_splits + 1, sizeof **j->splits);
        if (has_train(nt)) ok &= (j->train_bits[t] = node_array(j, n / 64 + 1, sizeof(uint64_t))) != NULL;
        j->load[t].nodes = calloc((size_t)j->V, sizeof(int64_t)), j->load[t].train = calloc((size_t)j->V, sizeof(int64_t));
        j->load[t].edges = calloc((size_t)j->V, sizeof(int64_t));
        ok &= j->owner[t] && j->new_id[t] && j->orig[t] && j->first[t] && j->uses[t] && j->splits[t] && j->load[t].nodes &&
              j->load[t].train && j->load[t].edges;
    }
    if (!ok) return fs_error(j->err, FS_ERR_NOMEM, "out of memory for the node arrays (%zu bytes so far)", j->node_bytes);
    read_train(j);
    return FS_OK;
}

static void free_groups(pt_groups_t *g)
{
    free(g->ids), free(g->off);
}

static void free_job(pt_job_t *j)
{
    const fs_dataset_t *ds = j->ds;
    for (int t = 0; ds && t < ds->num_node_types; t++) {
        if (j->owner) free(j->owner[t]);
        if (j->new_id) free(j->new_id[t]);
        if (j->orig) free(j->orig[t]);
        if (j->first) free(j->first[t]);
        if (j->uses) free(j->uses[t]);
        if (j->train_bits) free(j->train_bits[t]);
        for (int i = 0; j->splits && j->splits[t] && i < ds->node_types[t].num_splits; i++) free_groups(&j->splits[t][i]);
        if (j->splits) free(j->splits[t]);
        if (j->load) free(j->load[t].nodes), free(j->load[t].train), free(j->load[t].edges);
    }
    for (int i = 0; ds && j->links && i < ds->num_link_splits; i++) free_groups(&j->links[i]);
    free(j->owner), free(j->new_id), free(j->orig), free(j->first), free(j->uses), free(j->train_bits), free(j->splits);
    free(j->in_edges), free(j->train_total), free(j->load), free(j->cut), free(j->links), free(j->part_hash);
}

/* ---- renumbering ------------------------------------------------------------------- */

/* Part p owns the new ids [first[p], first[p+1]) of each type, its nodes
 * in ascending source id. */
static void renumber(pt_job_t *j)
{
    for (int t = 0; t < j->ds->num_node_types; t++) {
        int64_t n = j->ds->node_types[t].count, *first = j->first[t];
        memset(first, 0, ((size_t)j->V + 1) * sizeof *first);
        for (int64_t v = 0; v < n; v++) first[j->owner[t][v] + 1]++;
        for (int p = 0; p < j->V; p++) first[p + 1] += first[p];
        for (int64_t v = 0; v < n; v++) {
            int64_t id = first[j->owner[t][v]]++;
            j->new_id[t][v] = id, j->orig[t][id] = v;
        }
        for (int p = j->V; p > 0; p--) first[p] = first[p - 1];
        first[0] = 0;
    }
}

/* ids[0..k) grouped by the part `of(ids[i])` returns, in the given order:
 * values[i] (or i when values is NULL) for each. */
static fs_status_t group_by_part(pt_job_t *j, const int64_t *ids, int64_t k, const int32_t *owner,
                                 const int64_t *values, pt_groups_t *g)
{
    g->off = calloc((size_t)j->V + 1, sizeof *g->off);
    g->ids = node_array(j, (size_t)k, sizeof *g->ids);
    if (!g->off || !g->ids) return fs_error(j->err, FS_ERR_NOMEM, "out of memory grouping %lld ids by part", (long long)k);
    for (int64_t i = 0; i < k; i++) g->off[owner[ids[i]] + 1]++;
    for (int p = 0; p < j->V; p++) g->off[p + 1] += g->off[p];
    for (int64_t i = 0; i < k; i++) g->ids[g->off[owner[ids[i]]]++] = values ? values[ids[i]] : i;
    for (int p = j->V; p > 0; p--) g->off[p] = g->off[p - 1];
    g->off[0] = 0;
    return FS_OK;
}

/* Splits as new ids and link splits' positives as positions, by owner. */
static fs_status_t group_sets(pt_job_t *j)
{
    const fs_dataset_t *ds = j->ds;
    fs_status_t s = FS_OK;
    for (int t = 0; t < ds->num_node_types && !s; t++)
        for (int i = 0; i < ds->node_types[t].num_splits && !s; i++)
            s = group_by_part(j, ds->node_types[t].splits[i].ids, ds->node_types[t].splits[i].count, j->owner[t],
                              j->new_id[t], &j->splits[t][i]);
    for (int i = 0; i < ds->num_link_splits && !s; i++) {
        const fs_link_split_t *l = &ds->link_splits[i];
        s = group_by_part(j, l->dst, l->count, j->owner[ds->edge_types[l->edge_type].dst_type], NULL, &j->links[i]);
    }
    return s;
}

/* ---- the root ---------------------------------------------------------------------- */

static fs_status_t make_root(pt_job_t *j)
{
    uint64_t id = 0;
    if (getrandom(&id, sizeof id, 0) != sizeof id) id = (uint64_t)getpid() * 0x9e3779b97f4a7c15ULL ^ (uint64_t)time(NULL);
    snprintf(j->id, sizeof j->id, "%016llx", (unsigned long long)id);
    size_t len = strlen(j->o->out_dir);
    while (len > 1 && j->o->out_dir[len - 1] == '/') len--;
    snprintf(j->tmp_dir, sizeof j->tmp_dir, "%.*s.tmp-%ld", (int)len, j->o->out_dir, (long)getpid());
    fs_rm_tree(j->tmp_dir);
    if (mkdir(j->tmp_dir, 0755) != 0)
        return fs_error(j->err, FS_ERR_IO, "cannot create %s: %s", j->tmp_dir, strerror(errno));
    return FS_OK;
}

static fs_status_t commit_root(pt_job_t *j)
{
    int fd = open(j->tmp_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) fsync(fd), close(fd);
    struct stat st;
    if (j->o->force && stat(j->o->out_dir, &st) == 0) fs_rm_tree(j->o->out_dir); /* a root: checked first */
    if (rename(j->tmp_dir, j->o->out_dir) != 0)
        return fs_error(j->err, FS_ERR_IO, "cannot rename %s to %s: %s", j->tmp_dir, j->o->out_dir, strerror(errno));
    return FS_OK;
}

/* ---- phases -------------------------------------------------------------------------- */

static void phase_start(pt_job_t *j, const char *label)
{
    if (!j->o->quiet) fs_progress_start(&j->progress, label);
}

static void phase_done(pt_job_t *j, int64_t count, const char *unit)
{
    if (!j->o->quiet) fs_progress_done(&j->progress, count, unit);
}

static int64_t total_nodes(const fs_dataset_t *ds)
{
    int64_t n = 0;
    for (int t = 0; t < ds->num_node_types; t++) n += ds->node_types[t].count;
    return n;
}

static fs_status_t assign(pt_job_t *j)
{
    phase_start(j, j->o->method == FS_PARTITION_METIS ? "partition: METIS" : "partition: streaming (Fennel)");
    fs_status_t s = j->o->method == FS_PARTITION_METIS ? pt_assign_metis(j) : pt_assign_stream(j);
    if (s == FS_OK) renumber(j);
    if (s == FS_OK) s = group_sets(j);
    if (s == FS_OK) phase_done(j, total_nodes(j->ds), "nodes placed");
    return s;
}

static fs_status_t write_parts(pt_job_t *j)
{
    fs_status_t s = FS_OK;
    phase_start(j, "partition: parts written");
    for (int t = 0; t < j->ds->num_node_types; t++)
        for (int p = 0; p < j->V; p++) j->load[t].edges[p] = 0;
    for (int p = 0; p < j->V && s == FS_OK; p++) {
        s = pt_write_part(j, p);
        if (!j->o->quiet) fs_progress_update(&j->progress, (double)(p + 1) / j->V, p + 1, "parts");
    }
    if (s == FS_OK) phase_done(j, j->V, "parts");
    return s;
}

fs_status_t fs_partition(const fs_partition_opts_t *o, fs_partition_report_t *rep, fs_error_t *err)
{
    memset(rep, 0, sizeof *rep);
    double t0 = fs_now();
    pt_job_t j = {.o = o, .V = o->parts, .err = err};
    fs_status_t s = check_options(o, err);
    if (s != FS_OK) return s;
    fs_dataset_t *ds = NULL;
    phase_start(&j, "partition: source opened and checked");
    if ((s = fs_dataset_open(o->dataset, FS_OPEN_WINDOWED, o->threads, &ds, err)) != FS_OK) return s;
    j.ds = ds;
    phase_done(&j, total_nodes(ds), "nodes");
    if (!(s = check_source(&j)) && !(s = alloc_job(&j)) && !(s = assign(&j)) && !(s = make_root(&j))) {
        s = write_parts(&j);
        if (s == FS_OK) s = pt_write_book(&j, rep);
        if (s == FS_OK) s = commit_root(&j);
        if (s != FS_OK) fs_rm_tree(j.tmp_dir);
    }
    rep->node_array_bytes = j.node_bytes;
    snprintf(rep->id, sizeof rep->id, "%s", j.id);
    rep->seconds = fs_now() - t0;
    free_job(&j);
    fs_dataset_close(ds);
    return s;
}
