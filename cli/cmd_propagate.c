/* cmd_propagate.c — `featstore propagate DATASET --hops R`: pre-propagation's
 * hop tables hop_0 .. hop_R added to a dataset (docs/algorithms.md §8). The
 * work and the all-or-nothing commit are dataset/propagate.c; here are the
 * options and the signals: SIGINT, SIGTERM and SIGHUP only raise a flag,
 * which the products check at every block of rows, so an interrupted run
 * removes its scratch files and leaves the dataset as it was (exit 1). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "propagate.h"

/* The options' values into o; a usage error's message in err. */
static fs_status_t read_options(cli_t *c, fs_propagate_opts_t *o, fs_error_t *err)
{
    long long hops = 0, threads = 0, seed = (long long)o->seed;
    const char *norm = c->text[OPT_NORM], *rows = c->text[OPT_ROWS];
    fs_status_t s = cli_int(c, OPT_HOPS, 1, FS_PROP_MAX_HOPS, &hops, err);
    if (s == FS_OK) s = cli_int(c, OPT_THREADS, 1, 256, &threads, err);
    if (s == FS_OK) s = cli_int(c, OPT_SEED, 0, INT64_MAX, &seed, err);
    if (s == FS_OK) s = cli_dtype(c, OPT_DTYPE, 1, &o->dtype, err);
    if (s != FS_OK) return s;
    if (norm && fs_prop_norm_from_name(norm) < 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "--norm must be sym, rw or none, got '%s'", norm);
    if (rows && strcmp(rows, "labelled") && strcmp(rows, "labeled") && strcmp(rows, "all"))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "--rows must be labelled or all, got '%s'", rows);
    if (cli_has(c, OPT_SELF_LOOPS) && cli_has(c, OPT_NO_SELF_LOOPS))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "give one of --self-loops and --no-self-loops");
    if (cli_has(c, OPT_SEED) && !(rows && strcmp(rows, "all")))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "--seed orders the rows of --rows labelled; it means nothing "
                        "without it");
    o->hops = (int)hops, o->threads = (int)threads, o->seed = (uint64_t)seed;
    if (norm) o->norm = (fs_prop_norm_t)fs_prop_norm_from_name(norm);
    o->self_loops = !cli_has(c, OPT_NO_SELF_LOOPS);
    o->as_stored = cli_has(c, OPT_AS_STORED);
    o->labelled = rows && strcmp(rows, "all") != 0;
    o->table = c->text[OPT_TABLE];
    o->force = cli_has(c, OPT_FORCE);
    return FS_OK;
}

int cmd_propagate(int argc, char **argv)
{
    static const cli_opt_t allowed[] = {OPT_HOPS, OPT_NORM, OPT_SELF_LOOPS, OPT_NO_SELF_LOOPS, OPT_AS_STORED, OPT_TABLE,
                                        OPT_DTYPE, OPT_ROWS, OPT_SEED, OPT_THREADS, OPT_FORCE, 0};
    cli_t c;
    int rc = cli_parse(&c, argc, argv, allowed);
    if (rc) return rc;
    if (c.num_args != 1 || !cli_has(&c, OPT_HOPS))
        return cli_usage("%s", "usage: featstore propagate DATASET --hops R [--norm sym|rw|none] [--self-loops | "
                         "--no-self-loops] [--as-stored] [--table T] [--dtype f32|f16|bf16|int8] [--rows labelled|all "
                         "[--seed S]] [--threads N] [--force]");
    fs_propagate_opts_t o;
    fs_propagate_defaults(&o);
    o.dir = c.args[0];
    fs_error_t err = {0};
    if (read_options(&c, &o, &err) != FS_OK) return cli_usage("%s", err.msg);
    o.stop = cli_stop_on_signals();
    fs_propagate_report_t rep;
    if (fs_propagate(&o, &rep, &err) != FS_OK) {
        if (!rep.stopped) return cli_fail(&err);
        fprintf(stderr, "featstore: propagate stopped by signal %d (%s) before its commit: %s is unchanged\n",
                (int)*o.stop, strsignal(*o.stop), o.dir);
        return EXIT_FAILED;
    }
    fprintf(stderr, "propagate: wrote hop_0..hop_%d (%s [%lld x %lld], %s rows) from %s into %s in %.2f s\n", o.hops,
            fs_dtype_name(rep.dtype), (long long)rep.rows, (long long)rep.dim, o.labelled ? "labelled" : "all",
            rep.source_table, o.dir, rep.seconds);
    return 0;
}
