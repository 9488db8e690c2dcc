/* cmd_dataset.c — the dataset tooling's commands: `featstore import`
 * (edge lists, npz, OGB and OGB heterogeneous), `featstore gen` (R-MAT,
 * plain or --typed) and `featstore info` (dataset/). Options come from the
 * shared parser (cli.h); a bad value is a usage error (exit 2). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "dataset.h"
#include "gen.h"
#include "import.h"
#include "info.h"
#include "partition.h"

static fs_edge_opts_t edge_opts(const cli_t *c)
{
    return (fs_edge_opts_t){.symmetrize = cli_has(c, OPT_SYM), .drop_self_loops = cli_has(c, OPT_NOLOOP),
                            .dedup = cli_has(c, OPT_DEDUP), .reverse = cli_has(c, OPT_REVERSE),
                            .compact_ids = cli_has(c, OPT_COMPACT)};
}

/* The options import and gen share: threads, seed and split. */
static fs_status_t common_values(cli_t *c, int *threads, uint64_t *seed, int split[3], fs_error_t *err)
{
    long long t = 0, s = (long long)*seed;
    fs_status_t st = cli_int(c, OPT_THREADS, 1, 256, &t, err);
    if (st == FS_OK) st = cli_int(c, OPT_SEED, 0, INT64_MAX, &s, err);
    if (st == FS_OK) st = cli_split(c, split, err);
    *threads = (int)t;
    *seed = (uint64_t)s;
    return st;
}

int cmd_import(int argc, char **argv)
{
    static const cli_opt_t allowed[] = {OPT_OUT, OPT_NAME, OPT_SYM, OPT_NOLOOP, OPT_DEDUP, OPT_REVERSE, OPT_COMPACT,
                                        OPT_DENSE, OPT_WEIGHTED, OPT_SPLIT, OPT_NOSPLIT, OPT_SPLITNAME, OPT_SEED,
                                        OPT_THREADS, OPT_FORCE, OPT_ADD_REVERSE, 0};
    cli_t c;
    int rc = cli_parse(&c, argc, argv, allowed);
    if (rc) return rc;
    if (c.num_args != 2 || !cli_has(&c, OPT_OUT))
        return cli_usage("%s", "usage: featstore import edgelist|npz|ogb|ogb-hetero INPUT --out DIR [options]");
    const char *fmt = c.args[0], *input = c.args[1];
    int is_edgelist = strcmp(fmt, "edgelist") == 0 || strcmp(fmt, "snap") == 0;
    if (!is_edgelist && (cli_has(&c, OPT_COMPACT) || cli_has(&c, OPT_DENSE) || cli_has(&c, OPT_WEIGHTED)))
        return cli_usage("--compact-ids, --dense-ids and --weighted apply to edge lists only, not '%s'", fmt);
    if (cli_has(&c, OPT_COMPACT) && cli_has(&c, OPT_DENSE))
        return cli_usage("%s", "--compact-ids renumbers the ids and --dense-ids keeps them as given: pass one");
    int is_ogb = strcmp(fmt, "ogb") == 0 || strcmp(fmt, "ogb-hetero") == 0;
    if (cli_has(&c, OPT_SPLITNAME) && !is_ogb)
        return cli_usage("--split-name applies to ogb and ogb-hetero only, not '%s'", fmt);
    if (cli_has(&c, OPT_ADD_REVERSE) && !is_ogb)
        return cli_usage("--add-reverse applies to OGB heterogeneous datasets only, not '%s'", fmt);
    fs_import_opts_t o = {.out_dir = c.text[OPT_OUT], .name = c.text[OPT_NAME], .force = cli_has(&c, OPT_FORCE),
                          .edges = edge_opts(&c), .weighted = cli_has(&c, OPT_WEIGHTED), .seed = 1,
                          .dense_ids = cli_has(&c, OPT_DENSE),
                          .split_pct = {60, 20, 20}, .split_name = c.text[OPT_SPLITNAME],
                          .add_reverse = cli_has(&c, OPT_ADD_REVERSE)};
    fs_error_t err = {0};
    if (common_values(&c, &o.threads, &o.seed, o.split_pct, &err) != FS_OK) return cli_usage("%s", err.msg);
    fs_status_t s;
    if (is_edgelist) s = fs_import_edgelist(input, &o, &err);
    else if (strcmp(fmt, "npz") == 0) s = fs_import_npz(input, &o, &err);
    else if (strcmp(fmt, "ogb") == 0) s = fs_import_ogb(input, &o, &err); /* hands a heterogeneous one over */
    else if (strcmp(fmt, "ogb-hetero") == 0) s = fs_import_ogb_hetero(input, &o, &err);
    else return cli_usage("unknown import format '%s' (want edgelist, npz, ogb or ogb-hetero)", fmt);
    if (s != FS_OK) return cli_fail(&err);
    fprintf(stderr, "import: wrote %s\n", o.out_dir);
    return 0;
}

int cmd_gen(int argc, char **argv)
{
    static const cli_opt_t allowed[] = {OPT_OUT, OPT_NAME, OPT_SYM, OPT_NOLOOP, OPT_DEDUP, OPT_SPLIT, OPT_NOSPLIT,
                                        OPT_SEED, OPT_THREADS, OPT_FORCE, OPT_SCALE, OPT_EF, OPT_DIM, OPT_DTYPE,
                                        OPT_CLASSES, OPT_PERMUTE, OPT_ABC, OPT_TYPED, 0};
    cli_t c;
    int rc = cli_parse(&c, argc, argv, allowed);
    if (rc) return rc;
    if (c.num_args != 1 || strcmp(c.args[0], "rmat") != 0 || !cli_has(&c, OPT_OUT))
        return cli_usage("%s", "usage: featstore gen rmat [--typed] --out DIR [--scale S --edge-factor E --dim D ...]");
    if (cli_has(&c, OPT_TYPED) && (cli_has(&c, OPT_SYM) || cli_has(&c, OPT_NOLOOP) || cli_has(&c, OPT_DEDUP) ||
                                   cli_has(&c, OPT_PERMUTE)))
        return cli_usage("%s", "gen rmat --typed takes none of --symmetrize, --drop-self-loops, --dedup, --permute "
                         "(its edge types come with their reverses)");
    fs_rmat_opts_t o;
    fs_rmat_defaults(&o);
    o.out_dir = c.text[OPT_OUT];
    o.name = c.text[OPT_NAME];
    o.force = cli_has(&c, OPT_FORCE);
    o.permute = cli_has(&c, OPT_PERMUTE);
    o.edges = edge_opts(&c);
    long long scale = o.scale, ef = o.edge_factor, dim = o.dim, classes = o.num_classes;
    double abc[3] = {o.a, o.b, o.c};
    fs_error_t err = {0};
    fs_status_t st = common_values(&c, &o.threads, &o.seed, o.split_pct, &err);
    if (st == FS_OK) st = cli_int(&c, OPT_SCALE, 1, 36, &scale, &err);
    if (st == FS_OK) st = cli_int(&c, OPT_EF, 1, 1024, &ef, &err);
    if (st == FS_OK) st = cli_int(&c, OPT_DIM, 0, 65536, &dim, &err);
    if (st == FS_OK) st = cli_int(&c, OPT_CLASSES, 1, 1 << 20, &classes, &err);
    if (st == FS_OK) st = cli_dtype(&c, OPT_DTYPE, 0, &o.dtype, &err);
    if (st == FS_OK) st = cli_abc(&c, abc, &err);
    if (st != FS_OK) return cli_usage("%s", err.msg);
    o.scale = (int)scale, o.edge_factor = (int)ef, o.dim = dim, o.num_classes = (int)classes;
    o.a = abc[0], o.b = abc[1], o.c = abc[2];
    if ((cli_has(&c, OPT_TYPED) ? fs_gen_rmat_typed(&o, &err) : fs_gen_rmat(&o, &err)) != FS_OK) return cli_fail(&err);
    fprintf(stderr, "gen: wrote %s\n", o.out_dir);
    return 0;
}

/* `featstore info DIR` on a partition root: the whole root verified. */
static int info_partitioned(const char *dir, int threads)
{
    fs_partition_summary_t sum;
    fs_error_t err = {0};
    if (fs_partition_verify(dir, threads, &sum, &err) != FS_OK) {
        fprintf(stderr, "featstore: partitioned dataset %s is NOT valid\n", dir);
        return cli_fail(&err);
    }
    printf("partitioned %s\n", dir);
    printf("id        %s\n", sum.id);
    printf("source    %s: %lld nodes of %d node types, %lld edges of %d edge types\n", sum.name[0] ? sum.name :
           "(unnamed)", (long long)sum.nodes, sum.num_node_types, (long long)sum.edges, sum.num_edge_types);
    printf("parts     %d, by %s\n", sum.parts, sum.method);
    printf("edge cut  %lld of %lld edges (%.2f%%)\n", (long long)sum.cut, (long long)sum.edges, 100 * sum.cut_fraction);
    printf("balance   max / mean over parts, worst node type: nodes %.3f, train %.3f, edges %.3f\n", sum.balance_nodes,
           sum.balance_train, sum.balance_edges);
    printf("valid     yes: the book, every part once with its id and manifest checksum, each part a valid dataset "
           "(checksums match), node maps bijective and matching the parts' orig_ids\n");
    return 0;
}

int cmd_info(int argc, char **argv)
{
    static const cli_opt_t allowed[] = {OPT_NOVERIFY, OPT_THREADS, 0};
    cli_t c;
    int rc = cli_parse(&c, argc, argv, allowed);
    if (rc) return rc;
    if (c.num_args != 1) return cli_usage("%s", "usage: featstore info DIR [--no-verify]");
    long long threads = 0;
    fs_error_t err = {0};
    if (cli_int(&c, OPT_THREADS, 1, 256, &threads, &err) != FS_OK) return cli_usage("%s", err.msg);
    if (fs_partition_is_root(c.args[0])) return info_partitioned(c.args[0], (int)threads);
    fs_dataset_t *ds;
    unsigned flags = cli_has(&c, OPT_NOVERIFY) ? 0 : FS_OPEN_VERIFY;
    if (fs_dataset_open(c.args[0], flags, (int)threads, &ds, &err) != FS_OK) {
        fprintf(stderr, "featstore: dataset %s is NOT valid\n", c.args[0]);
        return cli_fail(&err);
    }
    fs_degree_stats_t deg;
    if (fs_degree_stats(ds, &deg, &err) != FS_OK) {
        fs_dataset_close(ds);
        return cli_fail(&err);
    }
    fs_info_print(stdout, ds, &deg);
    fs_dataset_close(ds);
    return 0;
}
