/* cli.h — what the `featstore` subcommands share: one table of options and
 * one parser for all of them, the value checks, and how failures are
 * reported.
 *
 * A command lists the options it accepts; cli_parse() records the text of
 * each one given (and turns --feature-first / --topology-first / --order
 * into one order), and the command converts values with the cli_* helpers,
 * which name the option and the allowed range when a value is wrong.
 *
 * Exit status of every command: 0 success, 1 the operation failed (the
 * message names the problem), 2 the command line was wrong. */
#ifndef FS_CLI_H
#define FS_CLI_H

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
    OPT_COPY, OPT_COPY_DIR, /* where serve keeps its copy of the dataset */
    /* featstore propagate */
    OPT_HOPS, OPT_NORM, OPT_SELF_LOOPS, OPT_NO_SELF_LOOPS, OPT_AS_STORED, OPT_ROWS,
    OPT_COUNT_
} cli_opt_t;

typedef struct {
    const char *text[OPT_COUNT_]; /* an option's argument as given; "" for a flag; NULL when absent */
    const char *order;            /* "feature-first", "topology-first" or --order's text; NULL when absent */
    int num_args;                 /* the positional arguments after the options */
    char **args;
} cli_t;

/* Parses argv[1..] (argv[0] is the command's name). Options not in
 * `allowed` (0-terminated) are usage errors, printed here. 0 or EXIT_USAGE. */
int cli_parse(cli_t *c, int argc, char **argv, const cli_opt_t *allowed);

static inline int cli_has(const cli_t *c, cli_opt_t o) { return c->text[o] != NULL; }

/* Prints "featstore: <message>" and the hint to `featstore help`; returns EXIT_USAGE. */
int cli_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "featstore: error: <message> [<status>]"; returns EXIT_FAILED. */
int cli_fail(const fs_error_t *err);

/* Value checks: each leaves *out unchanged when the option is absent and
 * fails with FS_ERR_INVALID_ARGUMENT naming the option, the text and what
 * is allowed. */
fs_status_t cli_int(const cli_t *c, cli_opt_t o, long long lo, long long hi, long long *out, fs_error_t *err);
fs_status_t cli_fraction(const cli_t *c, cli_opt_t o, double *out, fs_error_t *err);  /* in (0, 1] */
fs_status_t cli_split(const cli_t *c, int out[3], fs_error_t *err);                   /* --split / --no-split */
fs_status_t cli_dtype(const cli_t *c, fs_dtype_t *out, fs_error_t *err);             /* a feature dtype (or f32, f16, bf16) */
fs_status_t cli_abc(const cli_t *c, double out[3], fs_error_t *err);
/* A duration: "250ms", "5s", "2m", or a number of seconds ("1.5"); "0" is
 * 0 (off, where the option allows it). Whole milliseconds in [0, max_ms]. */
fs_status_t cli_duration_ms(const cli_t *c, cli_opt_t o, long long max_ms, int *out, fs_error_t *err);
/* A comma-separated list of user (is_group = 0) or group ids, each a
 * number or a name looked up in the system's databases; at most `cap`. */
fs_status_t cli_id_list(const cli_t *c, cli_opt_t o, int is_group, unsigned *out, int cap, int *count,
                        fs_error_t *err);

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

#endif
