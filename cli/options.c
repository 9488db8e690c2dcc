/* options.c — the one option parser behind every `featstore` subcommand
 * (cli.h): a single table of long options, getopt_long over it, and the
 * value checks that name the option and what it allows. */
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "place.h"

static const struct option long_opts[] = {
    {"out", required_argument, 0, OPT_OUT},          {"name", required_argument, 0, OPT_NAME},
    {"symmetrize", no_argument, 0, OPT_SYM},         {"symmetrise", no_argument, 0, OPT_SYM},
    {"drop-self-loops", no_argument, 0, OPT_NOLOOP}, {"dedup", no_argument, 0, OPT_DEDUP},
    {"reverse", no_argument, 0, OPT_REVERSE},        {"compact-ids", no_argument, 0, OPT_COMPACT},
    {"weighted", no_argument, 0, OPT_WEIGHTED},      {"split", required_argument, 0, OPT_SPLIT},
    {"no-split", no_argument, 0, OPT_NOSPLIT},       {"split-name", required_argument, 0, OPT_SPLITNAME},
    {"seed", required_argument, 0, OPT_SEED},        {"threads", required_argument, 0, OPT_THREADS},
    {"force", no_argument, 0, OPT_FORCE},            {"scale", required_argument, 0, OPT_SCALE},
    {"edge-factor", required_argument, 0, OPT_EF},   {"dim", required_argument, 0, OPT_DIM},
    {"dtype", required_argument, 0, OPT_DTYPE},      {"classes", required_argument, 0, OPT_CLASSES},
    {"permute", no_argument, 0, OPT_PERMUTE},        {"abc", required_argument, 0, OPT_ABC},
    {"no-verify", no_argument, 0, OPT_NOVERIFY},     {"socket", required_argument, 0, OPT_SOCKET},
    {"typed", no_argument, 0, OPT_TYPED},            {"add-reverse", no_argument, 0, OPT_ADD_REVERSE},
    {"dense-ids", no_argument, 0, OPT_DENSE},
    {"listen", required_argument, 0, OPT_LISTEN},    {"metrics", required_argument, 0, OPT_METRICS},
    {"config", required_argument, 0, OPT_CONFIG},    {"verify", no_argument, 0, OPT_VERIFY},
    {"prefault", no_argument, 0, OPT_PREFAULT},      {"topology", required_argument, 0, OPT_TOPOLOGY},
    {"gpu-budget", required_argument, 0, OPT_GPU_BUDGET}, {"plan", required_argument, 0, OPT_PLAN},
    {"save-plan", required_argument, 0, OPT_SAVE_PLAN}, {"table", required_argument, 0, OPT_TABLE},
    {"feature-first", no_argument, 0, OPT_FEATURE_FIRST}, {"hotness", required_argument, 0, OPT_HOTNESS},
    {"topology-first", no_argument, 0, OPT_TOPOLOGY_FIRST}, {"alpha", required_argument, 0, OPT_ALPHA},
    {"order", required_argument, 0, OPT_ORDER},      {"reserve", required_argument, 0, OPT_RESERVE},
    {"gpus", required_argument, 0, OPT_GPUS},        {"policy", required_argument, 0, OPT_POLICY},
    {"fanouts", required_argument, 0, OPT_FANOUTS},  {"batch", required_argument, 0, OPT_BATCH},
    {"presample-batches", required_argument, 0, OPT_PRESAMPLE}, {"save", required_argument, 0, OPT_SAVE},
    {"replay", required_argument, 0, OPT_REPLAY},
    /* gRPC admission and security (serve) */
    {"grpc-max-calls", required_argument, 0, OPT_GRPC_MAX_CALLS},
    {"request-timeout", required_argument, 0, OPT_REQUEST_TIMEOUT}, {"tls-cert", required_argument, 0, OPT_TLS_CERT},
    {"tls-key", required_argument, 0, OPT_TLS_KEY},  {"tls-client-ca", required_argument, 0, OPT_TLS_CLIENT_CA},
    {"token-file", required_argument, 0, OPT_TOKEN_FILE}, {"insecure", no_argument, 0, OPT_INSECURE},
    /* unix:// guards and administration (serve) */
    {"handshake-timeout", required_argument, 0, OPT_HANDSHAKE_TIMEOUT},
    {"max-conns-per-uid", required_argument, 0, OPT_MAX_CONNS_PER_UID},
    {"allow-uid", required_argument, 0, OPT_ALLOW_UID},  {"allow-gid", required_argument, 0, OPT_ALLOW_GID},
    {"admin-uid", required_argument, 0, OPT_ADMIN_UID},  {"plan-dir", required_argument, 0, OPT_PLAN_DIR},
    {"copy", required_argument, 0, OPT_COPY},            {"copy-dir", required_argument, 0, OPT_COPY_DIR},
    {"mem-budget", required_argument, 0, OPT_MEM_BUDGET},
    /* the engine's per-request limits (serve) */
    {"max-ids", required_argument, 0, OPT_MAX_IDS},      {"max-fanout-product", required_argument, 0, OPT_MAX_FANOUT_PRODUCT},
    {"max-response-bytes", required_argument, 0, OPT_MAX_RESPONSE_BYTES},
    /* featstore propagate */
    {"hops", required_argument, 0, OPT_HOPS},          {"norm", required_argument, 0, OPT_NORM},
    {"self-loops", no_argument, 0, OPT_SELF_LOOPS},    {"no-self-loops", no_argument, 0, OPT_NO_SELF_LOOPS},
    {"as-stored", no_argument, 0, OPT_AS_STORED},      {"rows", required_argument, 0, OPT_ROWS},
    /* featstore partition */
    {"parts", required_argument, 0, OPT_PARTS},        {"method", required_argument, 0, OPT_METHOD},
    /* a shard server (serve) */
    {"cluster", required_argument, 0, OPT_CLUSTER},    {"shard", required_argument, 0, OPT_SHARD},
    {"shards", required_argument, 0, OPT_SHARDS},      {"imbalance", required_argument, 0, OPT_IMBALANCE},
    {"replicas", required_argument, 0, OPT_REPLICAS},  {"copies", required_argument, 0, OPT_COPIES},
    /* featstore cluster */
    {"wait", required_argument, 0, OPT_WAIT},
    /* featstore compress */
    {"to", required_argument, 0, OPT_TO},
    {0, 0, 0, 0},
};

const char *cli_long_name(cli_opt_t o)
{
    for (const struct option *p = long_opts; p->name; p++)
        if (p->val == (int)o) return p->name;
    return "?";
}

int cli_takes_value(cli_opt_t o)
{
    for (const struct option *p = long_opts; p->name; p++)
        if (p->val == (int)o) return p->has_arg != no_argument;
    return 0;
}

const char *cli_name(const cli_t *c, cli_opt_t o)
{
    static char dashed[OPT_COUNT_][48]; /* "--name", made once per option */
    if (c->where[o]) return c->where[o];
    if (!dashed[o][0]) snprintf(dashed[o], sizeof dashed[o], "--%s", cli_long_name(o));
    return dashed[o];
}

int cli_refuse(const cli_t *c, cli_opt_t o, const fs_error_t *err)
{
    return c->where[o] ? cli_fail(err) : cli_usage("%s", err->msg);
}

int cli_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "featstore: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nrun 'featstore help' for usage\n");
    va_end(ap);
    return EXIT_USAGE;
}

int cli_fail(const fs_error_t *err)
{
    fprintf(stderr, "featstore: error: %s [%s]\n", err->msg, fs_strerror(err->code));
    return EXIT_FAILED;
}

fs_status_t cli_set_order(cli_t *c, cli_opt_t o, const char *text, fs_error_t *err)
{
    const char *order = o == OPT_FEATURE_FIRST ? "feature-first" : o == OPT_TOPOLOGY_FIRST ? "topology-first" : text;
    if (c->order && strcmp(c->order, order) != 0)
        return cli_bad(c, o, err, "and %s say different orders: give one of --feature-first, --topology-first and "
                       "--order", cli_name(c, c->order_opt));
    c->order = order, c->order_opt = o;
    return FS_OK;
}

int cli_parse(cli_t *c, int argc, char **argv, const cli_opt_t *allowed)
{
    memset(c, 0, sizeof *c);
    optind = 1;
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
        int ok = 0;
        for (const cli_opt_t *a = allowed; *a; a++) ok |= (int)*a == opt;
        if (opt == '?' || opt == ':' || !ok) return cli_usage("unknown or misplaced option '%s'", argv[optind - 1]);
        c->text[opt] = optarg ? optarg : "";
        fs_error_t err = {0};
        int is_order = opt == OPT_FEATURE_FIRST || opt == OPT_TOPOLOGY_FIRST || opt == OPT_ORDER;
        if (is_order && cli_set_order(c, (cli_opt_t)opt, optarg, &err) != FS_OK) return cli_usage("%s", err.msg);
    }
    c->num_args = argc - optind;
    c->args = argv + optind;
    return 0;
}

/* ---- values -------------------------------------------------------------------- */

fs_status_t cli_bad(cli_t *c, cli_opt_t o, fs_error_t *err, const char *fmt, ...)
{
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    c->failed = o;
    return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s %s", cli_name(c, o), what);
}

fs_status_t cli_int(cli_t *c, cli_opt_t o, long long lo, long long hi, long long *out, fs_error_t *err)
{
    const char *s = c->text[o];
    if (!s) return FS_OK;
    char *e;
    long long v = strtoll(s, &e, 10);
    if (!*s || *e || v < lo || v > hi)
        return cli_bad(c, o, err, "must be a whole number in [%lld, %lld], got '%s'", lo, hi, s);
    *out = v;
    return FS_OK;
}

fs_status_t cli_bytes(cli_t *c, cli_opt_t o, size_t min, size_t *out, fs_error_t *err)
{
    const char *s = c->text[o];
    if (!s) return FS_OK;
    int64_t v;
    fs_status_t st = fs_place_size_parse(s, cli_name(c, o), &v, err); /* the one size grammar (--reserve's) */
    if (st != FS_OK) {
        c->failed = o;
        return st;
    }
    if ((uint64_t)v < min) return cli_bad(c, o, err, "must be at least %zu bytes, got '%s'", min, s);
    *out = (size_t)v;
    return FS_OK;
}

fs_status_t cli_fraction(cli_t *c, cli_opt_t o, double *out, fs_error_t *err)
{
    const char *s = c->text[o];
    if (!s) return FS_OK;
    char *e;
    double v = strtod(s, &e);
    if (!*s || *e || !(v > 0 && v <= 1))
        return cli_bad(c, o, err, "must be a fraction in (0, 1], got '%s'", s);
    *out = v;
    return FS_OK;
}

fs_status_t cli_split(const cli_t *c, int out[3], fs_error_t *err)
{
    if (cli_has(c, OPT_NOSPLIT)) {
        out[0] = out[1] = out[2] = 0;
        return FS_OK;
    }
    const char *s = c->text[OPT_SPLIT];
    if (!s) return FS_OK;
    int v[3];
    if (sscanf(s, "%d,%d,%d", &v[0], &v[1], &v[2]) != 3 || v[0] < 0 || v[1] < 0 || v[2] < 0 || v[0] + v[1] + v[2] > 100)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT,
                        "--split wants three percentages summing to at most 100, e.g. 60,20,20; got '%s'", s);
    memcpy(out, v, sizeof v);
    return FS_OK;
}

fs_status_t cli_dtype(const cli_t *c, cli_opt_t o, int int8, fs_dtype_t *out, fs_error_t *err)
{
    const char *s = c->text[o];
    if (!s) return FS_OK;
    fs_dtype_t d = strcmp(s, "f32") == 0                             ? FS_DTYPE_F32
                   : strcmp(s, "f16") == 0 || strcmp(s, "fp16") == 0 ? FS_DTYPE_F16
                   : strcmp(s, "bf16") == 0                          ? FS_DTYPE_BF16
                                                                     : fs_dtype_from_name(s);
    if (d != FS_DTYPE_F32 && d != FS_DTYPE_F16 && d != FS_DTYPE_BF16 && !(int8 && d == FS_DTYPE_I8))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s must be %sfloat32, float16 or bfloat16 (or %sf32, f16, "
                        "bf16), got '%s'", cli_name(c, o), int8 ? "int8, " : "", int8 ? "int8, " : "", s);
    *out = d;
    return FS_OK;
}

fs_status_t cli_abc(const cli_t *c, double out[3], fs_error_t *err)
{
    const char *s = c->text[OPT_ABC];
    if (!s) return FS_OK;
    double v[3];
    char tail;
    if (sscanf(s, "%lf,%lf,%lf%c", &v[0], &v[1], &v[2], &tail) != 3)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "--abc wants three probabilities, e.g. 0.57,0.19,0.19; got '%s'",
                        s);
    memcpy(out, v, sizeof v);
    return FS_OK;
}

/* ---- unix:// guards: durations and id lists (serve) ------------------------------ */

fs_status_t cli_duration_ms(cli_t *c, cli_opt_t o, long long max_ms, int *out, fs_error_t *err)
{
    const char *s = c->text[o];
    if (!s) return FS_OK;
    char *e;
    double v = strtod(s, &e), scale = 1000; /* a bare number is seconds */
    if (strcmp(e, "ms") == 0) scale = 1;
    else if (strcmp(e, "m") == 0) scale = 60000;
    else if (*e && strcmp(e, "s") != 0) scale = -1;
    double ms = v * scale;
    if (!*s || e == s || scale < 0 || !(ms >= 0 && ms <= (double)max_ms))
        return cli_bad(c, o, err, "must be a duration such as 250ms, 5s or 2m (0 to 1 h, %lld ms at most), got '%s'",
                       max_ms, s);
    *out = (int)(ms + 0.5);
    return FS_OK;
}

/* One id: a number, or a user or group name. */
static int parse_id(const char *tok, int is_group, unsigned *id)
{
    char *e;
    unsigned long long v = strtoull(tok, &e, 10);
    if (*tok && !*e && tok[0] != '-') {
        *id = (unsigned)v;
        return v < 4294967295ULL ? 0 : -1; /* (uid_t)-1 means "no id" to the kernel */
    }
    if (is_group) {
        const struct group *g = getgrnam(tok);
        return g ? (*id = g->gr_gid, 0) : -1;
    }
    const struct passwd *p = getpwnam(tok);
    return p ? (*id = p->pw_uid, 0) : -1;
}

fs_status_t cli_id_list(cli_t *c, cli_opt_t o, int is_group, unsigned *out, int cap, int *count,
                        fs_error_t *err)
{
    const char *s = c->text[o];
    if (!s) return FS_OK;
    char buf[1024], *save = NULL;
    snprintf(buf, sizeof buf, "%s", s);
    int n = 0;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == cap || parse_id(tok, is_group, &out[n]) != 0)
            return cli_bad(c, o, err, "wants up to %d %s ids or names separated by commas, e.g. 1000,1001; '%s' is %s",
                           cap, is_group ? "group" : "user", n == cap ? s : tok, n == cap ? "too many" : "not one");
        n++;
    }
    if (n == 0)
        return cli_bad(c, o, err, "wants at least one %s id, got '%s'", is_group ? "group" : "user", s);
    *count = n;
    return FS_OK;
}

/* ---- signals ------------------------------------------------------------------- */

static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig) { stop_signal = sig; }

const volatile sig_atomic_t *cli_stop_on_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    return &stop_signal;
}
