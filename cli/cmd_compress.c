/* cmd_compress.c — `featstore compress DATASET --table T --to int8|fp16|bf16`:
 * compressed copies of feature tables added to a dataset (kernels/fs_codec.h;
 * the work and the all-or-nothing commit are dataset/compress.c). Prints
 * each new table's size and error bound. Signals as propagate's: an
 * interrupted run leaves the dataset as it was (exit 1). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "compress.h"

/* --table a,b,c into names (pointers into list, which it edits). */
static fs_status_t read_tables(char *list, const char **names, int *n, fs_error_t *err)
{
    *n = 0;
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (*n == FS_COMPRESS_MAX_TABLES)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "--table: at most %d tables at once", FS_COMPRESS_MAX_TABLES);
        names[(*n)++] = t;
    }
    if (*n == 0) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "--table: name at least one table");
    return FS_OK;
}

static void print_report(const fs_compress_opts_t *o, const fs_compress_report_t *rep)
{
    for (int i = 0; i < rep->num_tables; i++) {
        const fs_compress_table_report_t *r = &rep->table[i];
        fprintf(stderr, "compress: %s -> %s: %lld x %lld %s (%.1f MiB) as %s (%.1f MiB, %.3fx); |error| max %.3g, "
                "mean %.3g, bound %.3g (%s)\n", r->source, r->name, (long long)r->rows, (long long)r->dim,
                fs_dtype_name(r->from), (double)r->bytes_in / (1 << 20),
                o->to == FS_DTYPE_I8 ? "int8 with a float32 scale and bias per row" : fs_dtype_name(o->to),
                (double)r->bytes_out / (1 << 20), r->bytes_in ? (double)r->bytes_out / (double)r->bytes_in : 0,
                r->max_abs_error, r->mean_abs_error, r->bound,
                o->to == FS_DTYPE_I8 ? "half a step of the widest row: (max - min) / 510"
                                     : "half an ulp of the largest value");
    }
    fprintf(stderr, "compress: %d table%s added to %s in %.2f s; served as float32 unless the stored form is asked "
            "for\n", rep->num_tables, rep->num_tables == 1 ? "" : "s", o->dir, rep->seconds);
}

int cmd_compress(int argc, char **argv)
{
    static const cli_opt_t allowed[] = {OPT_TABLE, OPT_TO, OPT_NAME, OPT_THREADS, OPT_FORCE, 0};
    cli_t c;
    int rc = cli_parse(&c, argc, argv, allowed);
    if (rc) return rc;
    if (c.num_args != 1 || !cli_has(&c, OPT_TABLE) || !cli_has(&c, OPT_TO))
        return cli_usage("%s", "usage: featstore compress DATASET --table T[,T2...] --to int8|fp16|bf16 [--name NEW] "
                         "[--threads N] [--force]");
    fs_compress_opts_t o = {.dir = c.args[0], .name = c.text[OPT_NAME], .force = cli_has(&c, OPT_FORCE)};
    const char *names[FS_COMPRESS_MAX_TABLES];
    char *list = strdup(c.text[OPT_TABLE]);
    long long threads = 0;
    fs_error_t err = {0};
    fs_status_t s = list ? read_tables(list, names, &o.num_tables, &err) : fs_error(&err, FS_ERR_NOMEM, "out of memory");
    if (s == FS_OK) s = cli_dtype(&c, OPT_TO, 1, &o.to, &err);
    if (s == FS_OK) s = cli_int(&c, OPT_THREADS, 1, 256, &threads, &err);
    if (s != FS_OK) {
        free(list);
        return cli_usage("%s", err.msg);
    }
    o.tables = names, o.threads = (int)threads;
    o.stop = cli_stop_on_signals();
    fs_compress_report_t *rep = calloc(1, sizeof *rep);
    s = rep ? fs_compress(&o, rep, &err) : fs_error(&err, FS_ERR_NOMEM, "out of memory");
    if (s == FS_OK) print_report(&o, rep);
    else if (rep && rep->stopped)
        fprintf(stderr, "featstore: compress stopped by signal %d (%s) before its commit: %s is unchanged\n",
                (int)*o.stop, strsignal(*o.stop), o.dir);
    else cli_fail(&err);
    free(rep);
    free(list);
    return s == FS_OK ? 0 : EXIT_FAILED;
}
