/* main.c — the `featstore` command line: one subcommand per job.
 *
 *   featstore import edgelist|npz|ogb INPUT --out DIR [options]
 *   featstore gen rmat --scale S --edge-factor E --dim D --out DIR [options]
 *   featstore info DIR [--no-verify]
 *   featstore devices
 *
 * Exit status: 0 success, 1 the operation failed (message on stderr naming
 * the problem), 2 the command line was wrong. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataset.h"
#include "featstore/client.h"
#include "fs_device.h"
#include "gen.h"
#include "import.h"
#include "info.h"
#include "progress.h"
#include "serve.h"

#define EXIT_USAGE 2

static const char *const usage_text =
    "usage: featstore <command> [options]\n"
    "\n"
    "commands:\n"
    "  import edgelist|npz|ogb INPUT --out DIR   convert a graph into a featstore dataset\n"
    "  gen rmat --out DIR [--scale S --edge-factor E --dim D]   generate an R-MAT dataset\n"
    "  info DIR [--no-verify]                    describe and validate a dataset\n"
    "  serve DATASET [--socket PATH] [--listen HOST:PORT] [--metrics HOST:PORT]\n"
    "        [--config FILE] [--threads N] [--verify] [--prefault]   run the store until SIGTERM/SIGINT\n"
    "        [--topology PRESET|FILE [--gpu-budget F] [--plan FILE] [--save-plan FILE] [--table T]\n"
    "         [--feature-first | --order topology-first|feature-first|auto] [--reserve SIZE]\n"
    "         [--hotness degree|reach|presample] [--alpha A|nvlink=A,nvswitch=A]]\n"
    "                                            place hot data on (simulated) GPUs:\n"
    "                                            pcie4, nvlink-pairs, dgx1-v100, nvswitch8, or detect\n"
    "  plan DATASET --topology PRESET|FILE [--gpus N] [--gpu-budget F] [--feature-first | --order O]\n"
    "       [--reserve SIZE] [--policy P] [--alpha A] [--hotness degree|reach|presample]\n"
    "       [--fanouts 15,10,5 --batch 1024] [--save FILE] [--replay N] [--threads N]\n"
    "                                            explain a placement: per-GPU contents, predicted (and replayed) traffic\n"
    "  replan unix:///PATH [--topology PRESET|FILE] [--gpu-budget F] [--hotness H] [--alpha A]\n"
    "         [--reserve SIZE] [--feature-first | --topology-first | --order auto] [--plan FILE]\n"
    "         [--save-plan FILE]\n"
    "                                            re-plan a running server's placement\n"
    "                                            (unset options keep the server's; no restart)\n"
    "  stats URI                                 print a running server's metrics (unix:// or grpc://)\n"
    "  devices                                   list usable GPUs (or why there are none)\n"
    "  version                                   print the version\n"
    "\n"
    "import options:\n"
    "  --out DIR            output dataset directory (required)\n"
    "  --name NAME          dataset name (default: input file name)\n"
    "  --symmetrize         store every edge in both directions\n"
    "  --drop-self-loops    drop edges (v, v)\n"
    "  --dedup              merge duplicate edges (weights are summed)\n"
    "  --reverse            store dst -> src (in-neighbours) instead of src -> dst\n"
    "  --compact-ids        edgelist only: renumber sparse ids to 0..N-1 (originals kept)\n"
    "  --weighted           edgelist only: column 3 is an edge weight\n"
    "  --split T,V,T        random train/valid/test percentages when the input has none\n"
    "                       (default 60,20,20; --no-split for none)\n"
    "  --split-name NAME    ogb only: which split/<NAME> directory to use\n"
    "  --seed S             seed of the random split (default 1)\n"
    "  --threads N          worker threads (default: all CPUs)\n"
    "  --force              replace an existing dataset at --out\n"
    "\n"
    "gen rmat options (plus --out --name --symmetrize --drop-self-loops --dedup --split --seed\n"
    "--threads --force as above):\n"
    "  --scale S            2^S nodes (default 16)\n"
    "  --edge-factor E      E * 2^S generated edges (default 16)\n"
    "  --dim D              feature width, 0 for none (default 128)\n"
    "  --dtype T            float32 | float16 | bfloat16 (default float32)\n"
    "  --classes C          number of label classes (default 16)\n"
    "  --permute            randomly relabel nodes (Graph500 style: hubs are scattered)\n"
    "  --abc A,B,C          R-MAT quadrant probabilities (default 0.57,0.19,0.19)\n";

static void usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "featstore: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nrun 'featstore help' for usage\n");
}

static int fail(const fs_error_t *err)
{
    fprintf(stderr, "featstore: error: %s [%s]\n", err->msg, fs_strerror(err->code));
    return 1;
}

/* ---- shared option parsing ------------------------------------------------- */

enum {
    OPT_OUT = 256, OPT_NAME, OPT_SYM, OPT_NOLOOP, OPT_DEDUP, OPT_REVERSE, OPT_COMPACT, OPT_WEIGHTED, OPT_SPLIT,
    OPT_NOSPLIT, OPT_SPLITNAME, OPT_SEED, OPT_THREADS, OPT_FORCE, OPT_SCALE, OPT_EF, OPT_DIM, OPT_DTYPE,
    OPT_CLASSES, OPT_PERMUTE, OPT_ABC, OPT_NOVERIFY, OPT_SOCKET, OPT_LISTEN, OPT_METRICS, OPT_CONFIG, OPT_PREFAULT,
    OPT_VERIFY, OPT_TOPOLOGY, OPT_GPU_BUDGET, OPT_PLAN, OPT_SAVE_PLAN, OPT_TABLE, OPT_HOTNESS, OPT_FEATURE_FIRST,
    OPT_TOPOLOGY_FIRST, OPT_ALPHA, OPT_ORDER, OPT_RESERVE, OPT_COUNT_
};

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
    {"listen", required_argument, 0, OPT_LISTEN},    {"metrics", required_argument, 0, OPT_METRICS},
    {"config", required_argument, 0, OPT_CONFIG},    {"verify", no_argument, 0, OPT_VERIFY},
    {"prefault", no_argument, 0, OPT_PREFAULT},      {"topology", required_argument, 0, OPT_TOPOLOGY},
    {"gpu-budget", required_argument, 0, OPT_GPU_BUDGET}, {"plan", required_argument, 0, OPT_PLAN},
    {"save-plan", required_argument, 0, OPT_SAVE_PLAN}, {"table", required_argument, 0, OPT_TABLE},
    {"feature-first", no_argument, 0, OPT_FEATURE_FIRST}, {"hotness", required_argument, 0, OPT_HOTNESS},
    {"topology-first", no_argument, 0, OPT_TOPOLOGY_FIRST}, {"alpha", required_argument, 0, OPT_ALPHA},
    {"order", required_argument, 0, OPT_ORDER},      {"reserve", required_argument, 0, OPT_RESERVE},
    {0, 0, 0, 0},
};

typedef struct {
    const char *out, *name, *split_name, *socket, *listen, *metrics, *config, *topology, *plan, *save_plan, *table;
    const char *hotness, *alpha, *order, *reserve;
    double gpu_budget;
    fs_edge_opts_t edges;
    int weighted, force, threads, split[3], permute, verify, prefault;
    uint64_t seed;
    long long scale, ef, dim, classes;
    fs_dtype_t dtype;
    double abc[3];
    int seen[OPT_COUNT_];
} cli_t;

static int parse_int(const char *s, long long lo, long long hi, long long *out)
{
    char *e;
    long long v = strtoll(s, &e, 10);
    if (!*s || *e || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* --feature-first, --topology-first and --order X say one thing, once. */
static int set_order(cli_t *c, const char *order)
{
    if (c->order && strcmp(c->order, order) != 0) {
        usage_error("%s", "give one of --feature-first, --topology-first and --order");
        return -1;
    }
    c->order = order;
    return 0;
}

/* The placement options given as text, checked before anything is loaded:
 * usage errors (exit 2) naming the bad value. */
static int check_place_text(const cli_t *c, fs_place_opts_t *po)
{
    fs_error_t err = {0};
    if (fs_place_opts_from_text(po, c->hotness, c->order, c->reserve, c->alpha, &err) != FS_OK) {
        usage_error("%s", err.msg);
        return -1;
    }
    return 0;
}

static int parse_option(cli_t *c, int opt, const char *arg)
{
    long long v;
    c->seen[opt] = 1;
    switch (opt) {
    case OPT_OUT: c->out = arg; return 0;
    case OPT_NAME: c->name = arg; return 0;
    case OPT_SYM: c->edges.symmetrize = 1; return 0;
    case OPT_NOLOOP: c->edges.drop_self_loops = 1; return 0;
    case OPT_DEDUP: c->edges.dedup = 1; return 0;
    case OPT_REVERSE: c->edges.reverse = 1; return 0;
    case OPT_COMPACT: c->edges.compact_ids = 1; return 0;
    case OPT_WEIGHTED: c->weighted = 1; return 0;
    case OPT_NOSPLIT: memset(c->split, 0, sizeof c->split); return 0;
    case OPT_SPLITNAME: c->split_name = arg; return 0;
    case OPT_FORCE: c->force = 1; return 0;
    case OPT_PERMUTE: c->permute = 1; return 0;
    case OPT_NOVERIFY: c->verify = 0; return 0;
    case OPT_VERIFY: c->verify = 2; return 0;
    case OPT_SOCKET: c->socket = arg; return 0;
    case OPT_LISTEN: c->listen = arg; return 0;
    case OPT_METRICS: c->metrics = arg; return 0;
    case OPT_CONFIG: c->config = arg; return 0;
    case OPT_PREFAULT: c->prefault = 1; return 0;
    case OPT_TOPOLOGY: c->topology = arg; return 0;
    case OPT_PLAN: c->plan = arg; return 0;
    case OPT_SAVE_PLAN: c->save_plan = arg; return 0;
    case OPT_TABLE: c->table = arg; return 0;
    case OPT_FEATURE_FIRST: return set_order(c, "feature-first");
    case OPT_TOPOLOGY_FIRST: return set_order(c, "topology-first");
    case OPT_ORDER: return set_order(c, arg);
    case OPT_HOTNESS: c->hotness = arg; return 0;
    case OPT_ALPHA: c->alpha = arg; return 0;
    case OPT_RESERVE: c->reserve = arg; return 0;
    case OPT_GPU_BUDGET: {
        char *e;
        c->gpu_budget = strtod(arg, &e);
        if (*e || !(c->gpu_budget > 0 && c->gpu_budget <= 1)) break;
        return 0;
    }
    case OPT_SPLIT:
        if (sscanf(arg, "%d,%d,%d", &c->split[0], &c->split[1], &c->split[2]) != 3 || c->split[0] < 0 ||
            c->split[1] < 0 || c->split[2] < 0 || c->split[0] + c->split[1] + c->split[2] > 100) {
            usage_error("--split wants three percentages summing to at most 100, e.g. 60,20,20; got '%s'", arg);
            return -1;
        }
        return 0;
    case OPT_SEED:
        if (parse_int(arg, 0, INT64_MAX, &v)) break;
        c->seed = (uint64_t)v;
        return 0;
    case OPT_THREADS:
        if (parse_int(arg, 1, 256, &v)) break;
        c->threads = (int)v;
        return 0;
    case OPT_SCALE: if (parse_int(arg, 1, 36, &c->scale)) break; return 0;
    case OPT_EF: if (parse_int(arg, 1, 1024, &c->ef)) break; return 0;
    case OPT_DIM: if (parse_int(arg, 0, 65536, &c->dim)) break; return 0;
    case OPT_CLASSES: if (parse_int(arg, 1, 1 << 20, &c->classes)) break; return 0;
    case OPT_DTYPE:
        c->dtype = fs_dtype_from_name(arg);
        if (c->dtype != FS_DTYPE_F32 && c->dtype != FS_DTYPE_F16 && c->dtype != FS_DTYPE_BF16) {
            usage_error("--dtype must be float32, float16 or bfloat16, got '%s'", arg);
            return -1;
        }
        return 0;
    case OPT_ABC:
        if (sscanf(arg, "%lf,%lf,%lf", &c->abc[0], &c->abc[1], &c->abc[2]) != 3) break;
        return 0;
    }
    usage_error("bad option value '%s' (see 'featstore help' for the allowed range)", arg);
    return -1;
}

/* Parses argv; options not in `allowed` are usage errors. */
static int parse_cli(cli_t *c, int argc, char **argv, const int *allowed)
{
    *c = (cli_t){.split = {60, 20, 20}, .seed = 1, .verify = 1, .scale = 16, .ef = 16, .dim = 128,
                 .classes = 16, .dtype = FS_DTYPE_F32, .abc = {0.57, 0.19, 0.19}};
    optind = 1;
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
        int ok = 0;
        for (const int *a = allowed; *a; a++) ok |= *a == opt;
        if (opt == '?' || opt == ':' || !ok) {
            usage_error("unknown or misplaced option '%s'", argv[optind - 1]);
            return -1;
        }
        if (parse_option(c, opt, optarg) != 0) return -1;
    }
    return 0;
}

/* ---- commands -------------------------------------------------------------- */

static int cmd_import(int argc, char **argv)
{
    static const int allowed[] = {OPT_OUT, OPT_NAME, OPT_SYM, OPT_NOLOOP, OPT_DEDUP, OPT_REVERSE, OPT_COMPACT,
                                  OPT_WEIGHTED, OPT_SPLIT, OPT_NOSPLIT, OPT_SPLITNAME, OPT_SEED, OPT_THREADS,
                                  OPT_FORCE, 0};
    cli_t c;
    if (parse_cli(&c, argc, argv, allowed) != 0) return EXIT_USAGE;
    if (argc - optind != 2 || !c.out) {
        usage_error("%s", "usage: featstore import edgelist|npz|ogb INPUT --out DIR [options]");
        return EXIT_USAGE;
    }
    const char *fmt = argv[optind], *input = argv[optind + 1];
    int is_edgelist = strcmp(fmt, "edgelist") == 0 || strcmp(fmt, "snap") == 0;
    if (!is_edgelist && (c.edges.compact_ids || c.weighted)) {
        usage_error("--compact-ids and --weighted apply to edge lists only, not '%s'", fmt);
        return EXIT_USAGE;
    }
    if (c.split_name && strcmp(fmt, "ogb") != 0) {
        usage_error("--split-name applies to ogb only, not '%s'", fmt);
        return EXIT_USAGE;
    }
    fs_import_opts_t o = {.out_dir = c.out, .name = c.name, .force = c.force, .threads = c.threads,
                          .edges = c.edges, .weighted = c.weighted, .seed = c.seed, .split_name = c.split_name};
    memcpy(o.split_pct, c.split, sizeof o.split_pct);
    fs_error_t err = {0};
    fs_status_t s;
    if (is_edgelist) s = fs_import_edgelist(input, &o, &err);
    else if (strcmp(fmt, "npz") == 0) s = fs_import_npz(input, &o, &err);
    else if (strcmp(fmt, "ogb") == 0) s = fs_import_ogb(input, &o, &err);
    else {
        usage_error("unknown import format '%s' (want edgelist, npz or ogb)", fmt);
        return EXIT_USAGE;
    }
    if (s != FS_OK) return fail(&err);
    fprintf(stderr, "import: wrote %s\n", c.out);
    return 0;
}

static int cmd_gen(int argc, char **argv)
{
    static const int allowed[] = {OPT_OUT, OPT_NAME, OPT_SYM, OPT_NOLOOP, OPT_DEDUP, OPT_SPLIT, OPT_NOSPLIT,
                                  OPT_SEED, OPT_THREADS, OPT_FORCE, OPT_SCALE, OPT_EF, OPT_DIM, OPT_DTYPE,
                                  OPT_CLASSES, OPT_PERMUTE, OPT_ABC, 0};
    cli_t c;
    if (parse_cli(&c, argc, argv, allowed) != 0) return EXIT_USAGE;
    if (argc - optind != 1 || strcmp(argv[optind], "rmat") != 0 || !c.out) {
        usage_error("%s", "usage: featstore gen rmat --out DIR [--scale S --edge-factor E --dim D ...]");
        return EXIT_USAGE;
    }
    fs_rmat_opts_t o;
    fs_rmat_defaults(&o);
    o.out_dir = c.out;
    o.name = c.name;
    o.force = c.force;
    o.threads = c.threads;
    o.scale = (int)c.scale;
    o.edge_factor = (int)c.ef;
    o.a = c.abc[0], o.b = c.abc[1], o.c = c.abc[2];
    o.seed = c.seed;
    o.permute = c.permute;
    o.edges = c.edges;
    o.dim = c.dim;
    o.dtype = c.dtype;
    o.num_classes = (int)c.classes;
    memcpy(o.split_pct, c.split, sizeof o.split_pct);
    fs_error_t err = {0};
    if (fs_gen_rmat(&o, &err) != FS_OK) return fail(&err);
    fprintf(stderr, "gen: wrote %s\n", c.out);
    return 0;
}

static int cmd_info(int argc, char **argv)
{
    static const int allowed[] = {OPT_NOVERIFY, OPT_THREADS, 0};
    cli_t c;
    if (parse_cli(&c, argc, argv, allowed) != 0) return EXIT_USAGE;
    if (argc - optind != 1) {
        usage_error("%s", "usage: featstore info DIR [--no-verify]");
        return EXIT_USAGE;
    }
    fs_error_t err = {0};
    fs_dataset_t *ds;
    if (fs_dataset_open(argv[optind], c.verify ? FS_OPEN_VERIFY : 0, c.threads, &ds, &err) != FS_OK) {
        fprintf(stderr, "featstore: dataset %s is NOT valid\n", argv[optind]);
        return fail(&err);
    }
    fs_degree_stats_t deg;
    if (fs_degree_stats(ds, &deg, &err) != FS_OK) {
        fs_dataset_close(ds);
        return fail(&err);
    }
    fs_info_print(stdout, ds, &deg);
    fs_dataset_close(ds);
    return 0;
}

static int cmd_serve(int argc, char **argv)
{
    static const int allowed[] = {OPT_SOCKET, OPT_LISTEN, OPT_METRICS, OPT_CONFIG, OPT_THREADS, OPT_VERIFY, OPT_PREFAULT,
                                  OPT_TOPOLOGY, OPT_GPU_BUDGET, OPT_PLAN, OPT_SAVE_PLAN, OPT_TABLE, OPT_FEATURE_FIRST,
                                  OPT_HOTNESS, OPT_ALPHA, OPT_TOPOLOGY_FIRST, OPT_ORDER, OPT_RESERVE, 0};
    cli_t c;
    if (parse_cli(&c, argc, argv, allowed) != 0) return EXIT_USAGE;
    if (argc - optind != 1) {
        usage_error("%s", "usage: featstore serve DATASET [--socket PATH] [--listen HOST:PORT] [--metrics HOST:PORT] "
                          "[--config FILE] [--threads N] [--verify]");
        return EXIT_USAGE;
    }
    fs_serve_opts_t o;
    fs_serve_defaults(&o);
    o.dataset = argv[optind];
    o.socket_path = c.socket, o.listen = c.listen, o.metrics = c.metrics, o.config = c.config;
    o.threads = c.threads, o.verify = c.verify == 2, o.prefault = c.prefault;
    o.place = (fs_place_opts_t){.topology = c.topology, .gpu_budget = c.gpu_budget, .table = c.table,
                                .plan_in = c.plan, .plan_out = c.save_plan};
    if ((c.plan || c.save_plan || c.seen[OPT_GPU_BUDGET] || c.table || c.order || c.hotness || c.alpha || c.reserve) &&
        !c.topology) {
        usage_error("%s", "--gpu-budget, --plan, --save-plan, --table, --feature-first, --order, --hotness, --alpha "
                          "and --reserve need --topology");
        return EXIT_USAGE;
    }
    if (check_place_text(&c, &o.place) != 0) return EXIT_USAGE;
    fs_error_t err = {0};
    if (fs_serve_load_config(&o, &err) != FS_OK) return fail(&err);
    if (!o.socket_path && !o.listen) {
        static char def[128];
        snprintf(def, sizeof def, "/tmp/featstore-%d.sock", (int)getuid());
        o.socket_path = def;
    }
    if (!o.metrics) o.metrics = "127.0.0.1:9464";
    return fs_serve(&o);
}

static int cmd_stats(int argc, char **argv)
{
    if (argc != 2) {
        usage_error("%s", "usage: featstore stats unix:///PATH | grpc://HOST:PORT");
        return EXIT_USAGE;
    }
    fs_client_t *c;
    char *text = NULL;
    fs_status_t st = fs_connect(argv[1], &c);
    if (st == FS_OK) st = fs_stats(c, &text);
    if (st != FS_OK) fprintf(stderr, "featstore: error: %s [%s]\n", fs_client_errstr(c), fs_strerror(st));
    else fputs(text, stdout);
    fs_stats_free(text);
    fs_close(c);
    return st == FS_OK ? 0 : 1;
}

static int cmd_replan(int argc, char **argv)
{
    static const int allowed[] = {OPT_TOPOLOGY, OPT_GPU_BUDGET, OPT_HOTNESS, OPT_FEATURE_FIRST, OPT_TOPOLOGY_FIRST,
                                  OPT_ORDER, OPT_PLAN, OPT_SAVE_PLAN, OPT_ALPHA, OPT_RESERVE, 0};
    cli_t c;
    if (parse_cli(&c, argc, argv, allowed) != 0) return EXIT_USAGE;
    if (argc - optind != 1) {
        usage_error("%s", "usage: featstore replan unix:///PATH [--topology PRESET|FILE] [--gpu-budget F] "
                          "[--hotness H] [--alpha A] [--reserve SIZE] [--order topology-first|feature-first|auto] "
                          "[--plan FILE] [--save-plan FILE]");
        return EXIT_USAGE;
    }
    fs_replan_opts_t o = {.topology = c.topology, .gpu_budget = c.gpu_budget, .hotness = c.hotness,
                          .order = c.order, .plan = c.plan, .save = c.save_plan, .alpha = c.alpha,
                          .reserve = c.reserve};
    fs_client_t *cl;
    uint64_t gen = 0;
    double t0 = fs_now();
    fs_status_t st = fs_connect(argv[optind], &cl);
    if (st == FS_OK) st = fs_replan(cl, &o, &gen);
    if (st != FS_OK) fprintf(stderr, "featstore: error: %s [%s]\n", fs_client_errstr(cl), fs_strerror(st));
    else printf("re-planned in %.2f s: placement generation %llu is served\n", fs_now() - t0, (unsigned long long)gen);
    fs_close(cl);
    return st == FS_OK ? 0 : 1;
}

static int cmd_devices(void)
{
    fs_devices_t d;
    fs_error_t err = {0};
    if (fs_devices_query(&d, &err) != FS_OK) {
        printf("gpus      0 (%s)\n", err.msg);
        return 0;
    }
    printf("gpus      %d\n", d.count);
    for (int i = 0; i < d.count; i++) {
        printf("gpu %-5d %s  sm_%d%d  %.1f / %.1f GiB free  peers:", i, d.dev[i].name, d.dev[i].cc_major,
               d.dev[i].cc_minor, (double)d.dev[i].free_bytes / (1 << 30), (double)d.dev[i].total_bytes / (1 << 30));
        for (int j = 0; j < d.count; j++)
            if (d.peer[i][j]) printf(" %d", j);
        printf("\n");
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_text, stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "import") == 0) return cmd_import(argc - 1, argv + 1);
    if (strcmp(cmd, "gen") == 0) return cmd_gen(argc - 1, argv + 1);
    if (strcmp(cmd, "info") == 0) return cmd_info(argc - 1, argv + 1);
    if (strcmp(cmd, "serve") == 0) return cmd_serve(argc - 1, argv + 1);
    if (strcmp(cmd, "plan") == 0) return fs_plan_cmd(argc - 1, argv + 1);
    if (strcmp(cmd, "stats") == 0) return cmd_stats(argc - 1, argv + 1);
    if (strcmp(cmd, "replan") == 0) return cmd_replan(argc - 1, argv + 1);
    if (strcmp(cmd, "devices") == 0) return cmd_devices();
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("featstore %s (CUDA kernels: %s)\n", FS_VERSION, fs_built_with_cuda() ? "yes" : "no");
        return 0;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        fputs(usage_text, stdout);
        return 0;
    }
    usage_error("unknown command '%s'", cmd);
    return EXIT_USAGE;
}
