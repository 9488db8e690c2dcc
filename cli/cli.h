/* cli.h — what the `featstore` subcommands share: one table of options and
 * one parser for all of them, the value checks, and how failures are
 * reported.
 *
 * A command lists the options it accepts; cli_parse() records the text of
 * each one given (and turns --feature-first / --topology-first / --order
 * into one order), `serve --config FILE` adds the file's values for the
 * options the command line left out (config.c), and the command converts
 * values with the cli_* helpers, which name the option as its source spells
 * it ("--threads", or "\"threads\" in FILE") and the allowed range when a
 * value is wrong: one check for both sources.
 *
 * Exit status of every command: 0 success, 1 the operation failed (the
 * message names the problem), 2 the command line was wrong. */
#ifndef FS_CLI_H
#define FS_CLI_H

#include <signal.h>
#include <stdint.h>

#include "fs_types.h"

#define EXIT_FAILED 1
#define EXIT_USAGE 2

typedef enum {
    OPT_NONE_ = 0,
    /* dataset tooling */
    OPT_OUT = 256, /* above getopt_long's own answers ('?' is 63, ':' 58): no option may equal one */
    OPT_NAME, OPT_SYM, OPT_NOLOOP, OPT_DEDUP, OPT_REVERSE, OPT_COMPACT, OPT_WEIGHTED, OPT_SPLIT,
    OPT_NOSPLIT, OPT_SPLITNAME, OPT_SEED, OPT_THREADS, OPT_FORCE, OPT_SCALE, OPT_EF, OPT_DIM, OPT_DTYPE,
    OPT_CLASSES, OPT_PERMUTE, OPT_ABC, OPT_NOVERIFY, OPT_TYPED, OPT_ADD_REVERSE, OPT_DENSE,
    /* serving */
    OPT_SOCKET, OPT_LISTEN, OPT_METRICS, OPT_CONFIG, OPT_PREFAULT, OPT_VERIFY,
    /* placement */
    OPT_TOPOLOGY, OPT_GPU_BUDGET, OPT_PLAN, OPT_SAVE_PLAN, OPT_TABLE, OPT_HOTNESS, OPT_FEATURE_FIRST,
    OPT_TOPOLOGY_FIRST, OPT_ALPHA, OPT_ORDER, OPT_RESERVE,
    /* featstore plan */
    OPT_GPUS, OPT_POLICY, OPT_FANOUTS, OPT_BATCH, OPT_PRESAMPLE, OPT_SAVE, OPT_REPLAY,
    /* gRPC admission and security (serve) */
    OPT_GRPC_MAX_CALLS, OPT_REQUEST_TIMEOUT, OPT_TLS_CERT, OPT_TLS_KEY, OPT_TLS_CLIENT_CA, OPT_TOKEN_FILE, OPT_INSECURE,
    /* unix:// guards and administration (serve) */
    OPT_HANDSHAKE_TIMEOUT, OPT_MAX_CONNS_PER_UID, OPT_ALLOW_UID, OPT_ALLOW_GID, OPT_ADMIN_UID, OPT_PLAN_DIR,
    OPT_COPY, OPT_COPY_DIR, OPT_MEM_BUDGET, /* where serve keeps its copy of the dataset, and how much */
    OPT_MAX_IDS, OPT_MAX_FANOUT_PRODUCT, OPT_MAX_RESPONSE_BYTES, /* the engine's per-request limits (serve) */
    /* featstore propagate */
    OPT_HOPS, OPT_NORM, OPT_SELF_LOOPS, OPT_NO_SELF_LOOPS, OPT_AS_STORED, OPT_ROWS,
    /* featstore partition */
    OPT_PARTS, OPT_METHOD, OPT_IMBALANCE,
    /* a shard server (serve; OPT_PARTS too) */
    OPT_CLUSTER, OPT_SHARD, OPT_SHARDS, OPT_REPLICAS, OPT_COPIES,
    /* featstore cluster */
    OPT_WAIT,
    /* featstore compress */
    OPT_TO,
    OPT_COUNT_
} cli_opt_t;

typedef struct {
    const char *text[OPT_COUNT_];  /* an option's argument as given; "" for a flag; NULL when absent */
    const char *where[OPT_COUNT_]; /* NULL: from the command line; else its name in the --config file
                                      ("\"threads\" in FILE"), which messages use instead of "--threads" */
    const char *order;             /* "feature-first", "topology-first" or --order's text; NULL when absent */
    cli_opt_t order_opt;           /* the option that set it */
    cli_opt_t failed;              /* the option whose value a cli_* check refused last */
    int num_args;                  /* the positional arguments after the options */
    char **args;
} cli_t;

/* Parses argv[1..] (argv[0] is the command's name). Options not in
 * `allowed` (0-terminated) are usage errors, printed here. 0 or EXIT_USAGE. */
int cli_parse(cli_t *c, int argc, char **argv, const cli_opt_t *allowed);

static inline int cli_has(const cli_t *c, cli_opt_t o) { return c->text[o] != NULL; }

/* The option's long name without "--"; whether it takes a value (not a flag). */
const char *cli_long_name(cli_opt_t o);
int cli_takes_value(cli_opt_t o);
/* How messages name option o: "--threads", or where[o] when it came from
 * the --config file. The text lives as long as the process. */
const char *cli_name(const cli_t *c, cli_opt_t o);

/* Reads `serve --config FILE` (config.c): a JSON object whose keys are the
 * long names of `allowed` with '_' for '-' ("tls_cert"), "limits" holding
 * max_ids, max_fanout_product and max_response_bytes, and `arg_key` (e.g.
 * "dataset") standing for the one positional argument. Each value the
 * command line did not give is set in c as text, with where[o] naming the
 * key and the file; the command line's own values are kept (it wins). The
 * JSON type is checked here (a string, a number, true/false, a list of
 * ids: as the option takes), the value by the command's cli_* checks.
 * Errors name the file and the key. */
fs_status_t cli_config(cli_t *c, const char *path, const cli_opt_t *allowed, const char *arg_key, fs_error_t *err);

/* Prints "featstore: <message>" and the hint to `featstore help`; returns EXIT_USAGE. */
int cli_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "featstore: error: <message> [<status>]"; returns EXIT_FAILED. */
int cli_fail(const fs_error_t *err);
/* A bad value of option o: a usage error (EXIT_USAGE) when it came from the
 * command line, a failure (EXIT_FAILED) when from the --config file. */
int cli_refuse(const cli_t *c, cli_opt_t o, const fs_error_t *err);
/* FS_ERR_INVALID_ARGUMENT "<o's name> <fmt...>", and c->failed = o: how
 * every check refuses a value. */
fs_status_t cli_bad(cli_t *c, cli_opt_t o, fs_error_t *err, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* --feature-first, --topology-first and --order TEXT say one order, once:
 * a second, different one is refused naming both. */
fs_status_t cli_set_order(cli_t *c, cli_opt_t o, const char *text, fs_error_t *err);

/* Value checks: each leaves *out unchanged when the option is absent and
 * fails with FS_ERR_INVALID_ARGUMENT naming the option, the text and what
 * is allowed (cli_bad). */
fs_status_t cli_int(cli_t *c, cli_opt_t o, long long lo, long long hi, long long *out, fs_error_t *err);
fs_status_t cli_fraction(cli_t *c, cli_opt_t o, double *out, fs_error_t *err);  /* in (0, 1] */
/* A size: bytes, or a number with K, M, G or T (KiB, MiB, ...: powers of
 * 1024; "B" and "iB" optional), at least `min` bytes. */
fs_status_t cli_bytes(cli_t *c, cli_opt_t o, size_t min, size_t *out, fs_error_t *err);
fs_status_t cli_split(const cli_t *c, int out[3], fs_error_t *err);                   /* --split / --no-split */
/* A feature dtype (or f32, f16/fp16, bf16) of option o (--dtype, --to); int8
 * too when `int8` (a compressed table: scale, bias and codes a row). */
fs_status_t cli_dtype(const cli_t *c, cli_opt_t o, int int8, fs_dtype_t *out, fs_error_t *err);
fs_status_t cli_abc(const cli_t *c, double out[3], fs_error_t *err);
/* A duration: "250ms", "5s", "2m", or a number of seconds ("1.5"); "0" is
 * 0 (off, where the option allows it). Whole milliseconds in [0, max_ms]. */
fs_status_t cli_duration_ms(cli_t *c, cli_opt_t o, long long max_ms, int *out, fs_error_t *err);
/* A comma-separated list of user (is_group = 0) or group ids, each a
 * number or a name looked up in the system's databases; at most `cap`. */
fs_status_t cli_id_list(cli_t *c, cli_opt_t o, int is_group, unsigned *out, int cap, int *count,
                        fs_error_t *err);

/* For commands that change a dataset in place (propagate, compress):
 * SIGINT, SIGTERM and SIGHUP only set the returned flag (to the signal's
 * number), which the work checks at every block, so an interrupted run
 * leaves the dataset as it was. */
const volatile sig_atomic_t *cli_stop_on_signals(void);

/* The subcommands; argv[0] is the command's name. */
int cmd_import(int argc, char **argv);
int cmd_gen(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_replan(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_devices(int argc, char **argv);
int cmd_propagate(int argc, char **argv);
int cmd_partition(int argc, char **argv);
int cmd_cluster(int argc, char **argv);
int cmd_compress(int argc, char **argv);

#endif
