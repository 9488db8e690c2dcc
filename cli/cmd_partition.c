/* cmd_partition.c — `featstore partition DATASET --parts V --out DIR`: a
 * dataset split into V parts for a sharded featstore (dataset/partition.h,
 * docs/cli.md). Here are the options and the report: the edge cut and the
 * balance the book saved, the peak resident set (getrusage) and the time,
 * so a run's memory can be read against the node arrays it needed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cli.h"
#include "partition.h"

static const char *const usage =
    "usage: featstore partition DATASET --parts V --out DIR [--method stream|metis] [--imbalance 0.05] [--seed S] "
    "[--threads N] [--force]";

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

int cmd_partition(int argc, char **argv)
{
    static const cli_opt_t allowed[] = {OPT_PARTS, OPT_OUT, OPT_METHOD, OPT_IMBALANCE, OPT_SEED, OPT_THREADS,
                                        OPT_FORCE, 0};
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
    fs_partition_report_t rep;
    if (fs_partition(&o, &rep, &err) != FS_OK) return cli_fail(&err);
    print_report(&o, &rep);
    return 0;
}
