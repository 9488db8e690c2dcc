/* cmd_partition.c — `featstore partition DATASET --parts V --out DIR`: a
 * dataset split into V parts for a sharded featstore (dataset/partition.h,
 * docs/cli.md). Here are the options and the report: the edge cut and the
 * balance the book saved, the peak resident set (getrusage) and the time,
 * so a run's memory can be read against the node arrays it needed.
 * --hotness ranks the hot list (the trainers' cache) by the placement
 * engine's estimator (server/place.h) instead of in-degree. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cli.h"
#include "partition.h"
#include "place.h"

static const char *const usage =
    "usage: featstore partition DATASET --parts V --out DIR [--method stream|metis] [--imbalance 0.05] [--seed S] "
    "[--hotness degree|reach|presample] [--threads N] [--force]";

static fs_status_t read_imbalance(cli_t *c, double *out, fs_error_t *err)
{
    const char *s = c->text[OPT_IMBALANCE];
    if (!s) return FS_OK;
    char *e;
    double v = strtod(s, &e);
    if (!*s || *e || !(v >= 0 && v <= FS_PARTITION_MAX_IMBALANCE))
        return cli_bad(c, OPT_IMBALANCE, err, "must be a number in [0, %g] (0.05: a part may hold 5%% more than the "
                       "mean), got '%s'", FS_PARTITION_MAX_IMBALANCE, s);
    *out = v;
    return FS_OK;
}

static fs_status_t read_options(cli_t *c, fs_partition_opts_t *o, fs_error_t *err)
{
    long long parts = 0, threads = 0, seed = (long long)o->seed;
    const char *method = c->text[OPT_METHOD];
    fs_status_t s = cli_int(c, OPT_PARTS, 1, FS_PARTITION_MAX_PARTS, &parts, err);
    if (s == FS_OK) s = cli_int(c, OPT_THREADS, 1, 256, &threads, err);
    if (s == FS_OK) s = cli_int(c, OPT_SEED, 0, INT32_MAX, &seed, err);
    if (s == FS_OK) s = read_imbalance(c, &o->imbalance, err);
    if (s == FS_OK && method && strcmp(method, "stream") && strcmp(method, "metis"))
        s = cli_bad(c, OPT_METHOD, err, "must be stream or metis, got '%s'", method);
    o->parts = (int)parts, o->threads = (int)threads, o->seed = (uint64_t)seed;
    o->method = method && strcmp(method, "metis") == 0 ? FS_PARTITION_METIS : FS_PARTITION_STREAM;
    o->force = cli_has(c, OPT_FORCE);
    return s;
}

static void print_report(const fs_partition_opts_t *o, const fs_partition_report_t *r)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    fprintf(stderr, "partition: wrote %s: %d parts of %s by %s (partitioning %s)\n", o->out_dir, o->parts, o->dataset,
            o->method == FS_PARTITION_METIS ? "METIS" : "the streaming partitioner", r->id);
    fprintf(stderr, "partition: edge cut %lld of %lld edges (%.2f%%); balance, max / mean over parts (worst node type): "
            "nodes %.3f, train %.3f, edges %.3f\n", (long long)r->cut, (long long)r->edges, 100 * r->cut_fraction,
            r->balance_nodes, r->balance_train, r->balance_edges);
    fprintf(stderr, "partition: peak RSS %.1f MiB (node arrays %.1f MiB), %.2f s\n", (double)ru.ru_maxrss / 1024,
            (double)r->node_array_bytes / (1 << 20), r->seconds);
}

/* --hotness: every node's estimate for the hot list, [nodes] (the caller's
 * to free), from the source opened on its own (a graph of one node type:
 * the estimators' CSR). */
static fs_status_t hotness_of(const char *dataset, const char *name, int threads, double **out, fs_error_t *err)
{
    fs_place_opts_t po = {.threads = threads};
    fs_status_t st = fs_place_opts_from_text(&po, name, NULL, NULL, NULL, err);
    fs_dataset_t *ds = NULL;
    if (st == FS_OK) st = fs_dataset_open(dataset, 0, threads, &ds, err);
    if (st == FS_OK && ds->num_node_types != 1)
        st = fs_error(err, FS_ERR_UNSUPPORTED, "%s: --hotness ranks one node type's nodes, and this graph has %d: "
                      "leave it out (the hot lists then rank by in-degree)", dataset, ds->num_node_types);
    if (st == FS_OK && !(*out = malloc(sizeof **out * (size_t)(ds->num_nodes + 1))))
        st = fs_error(err, FS_ERR_NOMEM, "out of memory for the hotness of %lld nodes", (long long)ds->num_nodes);
    if (st == FS_OK && (st = fs_place_hotness(ds, &po, *out, err)) != FS_OK) free(*out), *out = NULL;
    fs_dataset_close(ds);
    return st;
}

int cmd_partition(int argc, char **argv)
{
    static const cli_opt_t allowed[] = {OPT_PARTS, OPT_OUT, OPT_METHOD, OPT_IMBALANCE, OPT_SEED, OPT_HOTNESS,
                                        OPT_THREADS, OPT_FORCE, 0};
    cli_t c;
    int rc = cli_parse(&c, argc, argv, allowed);
    if (rc) return rc;
    if (c.num_args != 1 || !cli_has(&c, OPT_PARTS) || !cli_has(&c, OPT_OUT)) return cli_usage("%s", usage);
    fs_partition_opts_t o;
    fs_partition_defaults(&o);
    o.dataset = c.args[0];
    o.out_dir = c.text[OPT_OUT];
    fs_error_t err = {0};
    if (read_options(&c, &o, &err) != FS_OK) return cli_usage("%s", err.msg);
    double *hot = NULL;
    if (cli_has(&c, OPT_HOTNESS) && hotness_of(o.dataset, c.text[OPT_HOTNESS], o.threads, &hot, &err) != FS_OK)
        return err.code == FS_ERR_INVALID_ARGUMENT ? cli_usage("%s", err.msg) : cli_fail(&err);
    o.hotness = hot;
    fs_partition_report_t rep;
    fs_status_t st = fs_partition(&o, &rep, &err);
    free(hot);
    if (st != FS_OK) return cli_fail(&err);
    print_report(&o, &rep);
    return 0;
}
