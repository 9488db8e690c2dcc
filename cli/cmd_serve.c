/* cmd_serve.c — running the store and talking to a running one:
 * `featstore serve` (server/serve.h), `featstore replan` and
 * `featstore stats` (through the client library, as any trainer would),
 * and `featstore devices`.
 *
 * serve's options come from the command line and from `--config FILE`
 * (config.c) into one cli_t, and are checked here, once, whichever way
 * they came, before anything is loaded: a bad value typed is a usage error
 * (exit 2), one read from the file a failure naming the file and the key
 * (exit 1). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "featstore/admin.h"
#include "featstore/client.h"
#include "fs_addr.h"
#include "fs_cluster.h"
#include "fs_device.h"
#include "grpc_server.h"
#include "fs_shardmap.h"
#include "serve.h"

#define SERVE_USAGE                                                                                                    \
    "usage: featstore serve DATASET [--socket PATH] [--listen HOST:PORT] [--metrics HOST:PORT] [--config FILE] "       \
    "[--threads N] [--verify] [--prefault] [--copy auto|memory|file] [--copy-dir DIR] [--mem-budget SIZE] [--max-ids N] "                 \
    "[--max-fanout-product N] [--max-response-bytes N] [--grpc-max-calls N] [--request-timeout 60s] "                 \
    "[--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]] [--token-file FILE] [--insecure] "                       \
    "[--handshake-timeout 5s] [--max-conns-per-uid N] [--allow-uid U,...] [--allow-gid G,...] [--admin-uid U] "       \
    "[--plan-dir DIR] [--topology PRESET|FILE ...]; DATASET may come from --config (\"dataset\"); "              \
    "a shard server: featstore serve ROOT --parts LIST|auto|assigned --listen HOST:PORT [--cluster etcd://HOST:PORT/NAME "     \
    "--shard N|ordinal [--shards COUNT]] [--replicas R [--copies LIST]] (--parts auto: every part p with "          \
    "p % COUNT == N, and with --replicas R copies of those of the R - 1 shards before N)"

/* The options that mean something only with --listen, or with --topology. */
static const cli_opt_t grpc_opts[] = {OPT_TLS_CERT, OPT_TLS_KEY, OPT_TLS_CLIENT_CA, OPT_TOKEN_FILE, OPT_INSECURE,
                                      OPT_GRPC_MAX_CALLS, OPT_REQUEST_TIMEOUT, 0};
static const cli_opt_t placement_opts[] = {OPT_GPU_BUDGET, OPT_PLAN, OPT_SAVE_PLAN, OPT_TABLE, OPT_FEATURE_FIRST,
                                           OPT_TOPOLOGY_FIRST, OPT_ORDER, OPT_HOTNESS, OPT_ALPHA, OPT_RESERVE, 0};

/* What a shard server does not have (serve_shard.c): a unix:// socket, a
 * metrics endpoint, a placement, the served copy's options. */
static const cli_opt_t not_for_shards[] = {OPT_VERIFY, OPT_PREFAULT, OPT_TOPOLOGY, OPT_COPY, OPT_COPY_DIR, OPT_MEM_BUDGET,
                                           OPT_HANDSHAKE_TIMEOUT, OPT_MAX_CONNS_PER_UID, OPT_ADMIN_UID,
                                           OPT_PLAN_DIR, 0};

/* --shard ordinal: this shard's number from its host name's trailing -N
 * (a StatefulSet pod's; fs_shard_ordinal), FS_SHARD_HOSTNAME overriding
 * gethostname(). The host name is the environment's, not a value typed:
 * a name without an ordinal is a failure (exit 1), naming it. */
static int shard_ordinal(const cli_t *c, long long *id)
{
    char host[256] = "";
    const char *env = getenv("FS_SHARD_HOSTNAME"), *from = env && *env ? "FS_SHARD_HOSTNAME" : "gethostname()";
    if (env && *env) snprintf(host, sizeof host, "%s", env);
    else if (gethostname(host, sizeof host - 1) != 0) host[0] = 0;
    fs_error_t err = {0}, named = {0};
    int v = 0;
    if (fs_shard_ordinal(host, &v, &err) != FS_OK) {
        fs_error(&named, err.code, "%s ordinal: %s (host name from %s)", cli_name(c, OPT_SHARD), err.msg, from);
        return cli_fail(&named);
    }
    *id = v;
    return 0;
}

/* A shard server: --parts of a partition root (or "auto" with --shards),
 * --listen, and with --cluster its --shard number (or "ordinal"). */
static int check_shard(cli_t *c, fs_serve_opts_t *o)
{
    if (!cli_has(c, OPT_PARTS)) {
        if (cli_has(c, OPT_CLUSTER) || cli_has(c, OPT_SHARD) || cli_has(c, OPT_SHARDS) || cli_has(c, OPT_REPLICAS) ||
            cli_has(c, OPT_COPIES))
            return cli_usage("%s needs --parts: a shard server holds parts of a partitioned dataset",
                             cli_name(c, cli_has(c, OPT_CLUSTER) ? OPT_CLUSTER : cli_has(c, OPT_SHARD) ? OPT_SHARD
                                                                                                     : OPT_SHARDS));
        return 0;
    }
    for (int i = 0; not_for_shards[i]; i++)
        if (cli_has(c, not_for_shards[i]))
            return cli_usage("%s: a shard server (--parts) has no placement, served copy, re-planning or handshake "
                             "guards of its own yet",
                             cli_name(c, not_for_shards[i]));
    if (!cli_has(c, OPT_LISTEN)) return cli_usage("--parts: a shard server answers over gRPC: give --listen HOST:PORT");
    if (cli_has(c, OPT_CLUSTER) != cli_has(c, OPT_SHARD))
        return cli_usage("--cluster and --shard go together: the cluster to join, and this shard's number in it");
    if (strcmp(c->text[OPT_PARTS], "assigned") == 0 &&
        (!cli_has(c, OPT_CLUSTER) || strncmp(c->text[OPT_CLUSTER], "etcd://", 7) != 0 || cli_has(c, OPT_COPIES)))
        return cli_usage("--parts assigned: the parts the cluster's assignment gives this shard (none until "
                         "`featstore cluster add`): it needs --cluster etcd://HOST:PORT/NAME, and no --copies");
    int dealt = strcmp(c->text[OPT_PARTS], "auto") == 0;
    if (dealt != cli_has(c, OPT_SHARDS) || (dealt && !cli_has(c, OPT_SHARD)))
        return cli_usage("--parts auto, --shards COUNT and --shard N go together: shard N of COUNT holds every part p "
                         "with p %% COUNT == N");
    fs_error_t err = {0};
    long long id = 0, shards = 0;
    int ordinal = cli_has(c, OPT_SHARD) && strcmp(c->text[OPT_SHARD], "ordinal") == 0, rc;
    if (ordinal && (rc = shard_ordinal(c, &id))) return rc;
    if (!ordinal && cli_int(c, OPT_SHARD, 0, FS_CLUSTER_SHARDS_MAX - 1, &id, &err) != FS_OK)
        return cli_refuse(c, OPT_SHARD, &err);
    if (cli_int(c, OPT_SHARDS, 1, FS_CLUSTER_SHARDS_MAX, &shards, &err) != FS_OK) return cli_refuse(c, OPT_SHARDS, &err);
    if (dealt && id >= shards) {
        if (ordinal)
            cli_bad(c, OPT_SHARD, &err, "ordinal is shard %lld here, not below %s %lld: more replicas than shards?", id,
                    cli_name(c, OPT_SHARDS), shards);
        else
            cli_bad(c, OPT_SHARD, &err, "%lld is not below %s %lld (shards are numbered 0..%lld)", id,
                    cli_name(c, OPT_SHARDS), shards, shards - 1);
        return ordinal ? cli_fail(&err) : cli_refuse(c, OPT_SHARD, &err);
    }
    long long replicas = 1;
    if (cli_int(c, OPT_REPLICAS, 1, FS_CLUSTER_REPLICAS_MAX, &replicas, &err) != FS_OK)
        return cli_refuse(c, OPT_REPLICAS, &err);
    if (dealt && replicas > shards) {
        cli_bad(c, OPT_REPLICAS, &err, "%lld is more than %s %lld: a part's replicas are on different shards",
                replicas, cli_name(c, OPT_SHARDS), shards);
        return cli_refuse(c, OPT_REPLICAS, &err);
    }
    if (cli_has(c, OPT_COPIES) && (dealt || replicas < 2))
        return cli_usage("--copies LIST goes with --parts LIST and --replicas R >= 2 (with --parts auto the copies "
                         "are dealt)");
    o->parts = c->text[OPT_PARTS], o->cluster = c->text[OPT_CLUSTER], o->shard_id = (int)id, o->shards = (int)shards;
    o->replicas = (int)replicas, o->copies = c->text[OPT_COPIES];
    if (!cli_has(c, OPT_SOCKET)) o->socket_path = NULL; /* only if asked: for trainers on its machine */
    o->metrics = cli_has(c, OPT_METRICS) ? c->text[OPT_METRICS] : NULL;
    return 0;
}

/* 0, or the refusal of the first option of `opts` given without `needed`. */
static int check_needs(cli_t *c, const cli_opt_t *opts, cli_opt_t needed, const char *what)
{
    fs_error_t err = {0};
    for (const cli_opt_t *p = opts; *p; p++)
        if (cli_has(c, *p) && !cli_has(c, needed)) {
            cli_bad(c, *p, &err, "%s: it needs --%s (\"%s\" in a --config file)", what, cli_long_name(needed),
                    cli_long_name(needed));
            return cli_refuse(c, *p, &err);
        }
    return 0;
}

/* --socket, --listen and --metrics are parsed before anything is loaded or
 * started (kernels/fs_addr.h): a mistyped address is refused by name,
 * never served somewhere else. A unix:///PATH socket becomes its PATH. */
static int check_addresses(cli_t *c, fs_serve_opts_t *o)
{
    static char socket_path[FS_ADDR_PATH_MAX];
    static const cli_opt_t addrs[] = {OPT_SOCKET, OPT_LISTEN, OPT_METRICS};
    for (int i = 0; i < 3; i++) {
        const char *text = c->text[addrs[i]], *what = cli_name(c, addrs[i]);
        fs_addr_t a;
        fs_error_t err = {0};
        if (!text) continue;
        fs_status_t st = addrs[i] == OPT_SOCKET ? fs_addr_socket(what, text, &a, &err) : fs_addr_listen(what, text, &a, &err);
        if (st != FS_OK) return cli_refuse(c, addrs[i], &err);
        if (addrs[i] == OPT_SOCKET) memcpy(socket_path, a.path, sizeof socket_path);
    }
    o->socket_path = c->text[OPT_SOCKET] ? socket_path : NULL;
    o->listen = c->text[OPT_LISTEN], o->metrics = c->text[OPT_METRICS];
    if (!o->socket_path && !o->listen) { /* the defaults (docs/cli.md "serve") */
        static char def[128];
        snprintf(def, sizeof def, FS_SERVE_DEFAULT_SOCKET, (int)getuid());
        o->socket_path = def;
    }
    if (!o->metrics) o->metrics = FS_SERVE_DEFAULT_METRICS;
    return 0;
}

/* What holds the served copy, threads, and the engine's per-request limits. */
static int check_engine(cli_t *c, fs_serve_opts_t *o)
{
    static const cli_opt_t limits[] = {OPT_MAX_IDS, OPT_MAX_FANOUT_PRODUCT, OPT_MAX_RESPONSE_BYTES};
    int64_t *dst[] = {&o->limits.max_ids, &o->limits.max_fanout_product, &o->limits.max_response_bytes};
    fs_error_t err = {0};
    o->verify = cli_has(c, OPT_VERIFY), o->prefault = cli_has(c, OPT_PREFAULT);
    o->copy.dir = c->text[OPT_COPY_DIR];
    if (fs_serve_copy_medium(c->text[OPT_COPY], cli_name(c, OPT_COPY), &o->copy.medium, &err) != FS_OK)
        return cli_refuse(c, OPT_COPY, &err);
    long long threads = 0;
    fs_status_t st = FS_OK;
    if (o->copy.medium == FS_COPY_MEMFD && o->copy.dir)
        st = cli_bad(c, OPT_COPY_DIR, &err, "is where file copies go: it needs the copy medium file or auto, and %s "
                     "says memory", cli_name(c, OPT_COPY));
    if (st == FS_OK) st = cli_int(c, OPT_THREADS, 1, 256, &threads, &err);
    if (st == FS_OK) st = cli_bytes(c, OPT_MEM_BUDGET, (size_t)1 << 20, &o->copy.mem_budget, &err);
    for (int i = 0; i < 3 && st == FS_OK; i++) {
        long long limit = *dst[i];
        if ((st = cli_int(c, limits[i], 1, INT64_MAX, &limit, &err)) == FS_OK) *dst[i] = limit;
    }
    if (st != FS_OK) return cli_refuse(c, c->failed, &err);
    o->threads = (int)threads;
    return 0;
}

/* gRPC admission and security. gRPC reachable beyond this machine without
 * TLS would hand the dataset (and any bearer token) to whoever listens on
 * the network: refused unless --insecure says so, and then warned about. */
static int check_grpc(cli_t *c, fs_serve_opts_t *o)
{
    int rc = check_needs(c, grpc_opts, OPT_LISTEN, "is a gRPC option");
    if (rc) return rc;
    fs_error_t err = {0};
    long long max_calls = 0;
    fs_status_t st = cli_int(c, OPT_GRPC_MAX_CALLS, 1, 1000000, &max_calls, &err);
    if (st == FS_OK) st = cli_duration_ms(c, OPT_REQUEST_TIMEOUT, 3600 * 1000, &o->request_timeout_ms, &err);
    if (st == FS_OK && cli_has(c, OPT_REQUEST_TIMEOUT) && o->request_timeout_ms == 0)
        st = cli_bad(c, OPT_REQUEST_TIMEOUT, &err, "must be above 0 (every gRPC call gets this long at most)");
    if (st == FS_OK && !cli_has(c, OPT_TLS_CERT) != !cli_has(c, OPT_TLS_KEY)) {
        cli_opt_t given = cli_has(c, OPT_TLS_CERT) ? OPT_TLS_CERT : OPT_TLS_KEY;
        st = cli_bad(c, given, &err, "and %s go together", cli_name(c, given == OPT_TLS_CERT ? OPT_TLS_KEY : OPT_TLS_CERT));
    }
    if (st == FS_OK && cli_has(c, OPT_TLS_CLIENT_CA) && !cli_has(c, OPT_TLS_CERT))
        st = cli_bad(c, OPT_TLS_CLIENT_CA, &err, "(mTLS) needs %s and %s", cli_name(c, OPT_TLS_CERT),
                     cli_name(c, OPT_TLS_KEY));
    int exposed = cli_has(c, OPT_LISTEN) && !cli_has(c, OPT_TLS_CERT) && !fs_grpc_listen_is_loopback(c->text[OPT_LISTEN]);
    if (st == FS_OK && exposed && !cli_has(c, OPT_INSECURE))
        st = cli_bad(c, OPT_LISTEN, &err, "'%s' is not a loopback address, and gRPC without TLS would expose the data "
                     "there: give --tls-cert and --tls-key (and --token-file), or --insecure to serve plaintext anyway",
                     c->text[OPT_LISTEN]);
    if (st != FS_OK) return cli_refuse(c, c->failed, &err);
    if (exposed)
        fprintf(stderr, "featstore: warning: %s: gRPC on %s is plaintext; anyone who can reach it can read the "
                "dataset%s\n", cli_name(c, OPT_INSECURE), c->text[OPT_LISTEN],
                cli_has(c, OPT_TOKEN_FILE) ? " and the bearer token" : ", and no token is asked for");
    o->grpc_max_calls = (int)max_calls;
    o->tls_cert = c->text[OPT_TLS_CERT], o->tls_key = c->text[OPT_TLS_KEY], o->tls_client_ca = c->text[OPT_TLS_CLIENT_CA];
    o->token_file = c->text[OPT_TOKEN_FILE];
    return 0;
}

/* unix:// guards and administration (server/local.h; docs/serving.md "Local security"). */
static int check_guards(cli_t *c, fs_serve_opts_t *o)
{
    _Static_assert(sizeof(uid_t) == sizeof(unsigned) && sizeof(gid_t) == sizeof(unsigned), "ids are unsigned int");
    static unsigned allow_uids[64], allow_gids[64];
    unsigned admin = 0;
    int admins = 0;
    long long per_uid = o->max_conns_per_uid;
    fs_error_t err = {0};
    fs_status_t st = cli_duration_ms(c, OPT_HANDSHAKE_TIMEOUT, 3600 * 1000, &o->handshake_timeout_ms, &err);
    if (st == FS_OK) st = cli_int(c, OPT_MAX_CONNS_PER_UID, 0, 1000000, &per_uid, &err);
    if (st == FS_OK) st = cli_id_list(c, OPT_ALLOW_UID, 0, allow_uids, 64, &o->num_allow_uids, &err);
    if (st == FS_OK) st = cli_id_list(c, OPT_ALLOW_GID, 1, allow_gids, 64, &o->num_allow_gids, &err);
    if (st == FS_OK) st = cli_id_list(c, OPT_ADMIN_UID, 0, &admin, 1, &admins, &err);
    if (st != FS_OK) return cli_refuse(c, c->failed, &err);
    o->max_conns_per_uid = (int)per_uid;
    o->allow_uids = (const uid_t *)allow_uids, o->allow_gids = (const gid_t *)allow_gids;
    if (admins) o->admin_uid = admin;
    o->plan_dir = c->text[OPT_PLAN_DIR];
    return 0;
}

/* The placement: --topology and the options that shape its plan. Hotness,
 * order, reserve and alpha are place.h's checks (re-plans share them), one
 * at a time, so a refusal from the config file can be given its name. */
static int check_placement(cli_t *c, fs_serve_opts_t *o)
{
    int rc = check_needs(c, placement_opts, OPT_TOPOLOGY, "shapes a placement");
    if (rc) return rc;
    o->place = (fs_place_opts_t){.topology = c->text[OPT_TOPOLOGY], .table = c->text[OPT_TABLE],
                                 .plan_in = c->text[OPT_PLAN], .plan_out = c->text[OPT_SAVE_PLAN]};
    fs_error_t err = {0};
    if (cli_fraction(c, OPT_GPU_BUDGET, &o->place.gpu_budget, &err) != FS_OK) return cli_refuse(c, OPT_GPU_BUDGET, &err);
    const cli_opt_t opts[4] = {OPT_HOTNESS, c->order_opt, OPT_RESERVE, OPT_ALPHA};
    for (int i = 0; i < 4; i++) {
        const char *t[4] = {NULL, NULL, NULL, NULL};
        t[i] = i == 1 ? c->order : c->text[opts[i]];
        if (!t[i] || fs_place_opts_from_text(&o->place, t[0], t[1], t[2], t[3], &err) == FS_OK) continue;
        if (c->where[opts[i]]) {
            fs_error_t named = {0};
            fs_error(&named, err.code, "%s: %s", c->where[opts[i]], err.msg);
            return cli_fail(&named);
        }
        return cli_usage("%s", err.msg);
    }
    return 0;
}

int cmd_serve(int argc, char **argv)
{
    static const cli_opt_t allowed[] = {OPT_SOCKET, OPT_LISTEN, OPT_METRICS, OPT_CONFIG, OPT_THREADS, OPT_VERIFY,
                                        OPT_PREFAULT, OPT_TOPOLOGY, OPT_GPU_BUDGET, OPT_PLAN, OPT_SAVE_PLAN, OPT_TABLE,
                                        OPT_FEATURE_FIRST, OPT_HOTNESS, OPT_ALPHA, OPT_TOPOLOGY_FIRST, OPT_ORDER,
                                        OPT_RESERVE, OPT_GRPC_MAX_CALLS, OPT_REQUEST_TIMEOUT, OPT_TLS_CERT, OPT_TLS_KEY,
                                        OPT_TLS_CLIENT_CA, OPT_TOKEN_FILE, OPT_INSECURE, OPT_HANDSHAKE_TIMEOUT,
                                        OPT_MAX_CONNS_PER_UID, OPT_ALLOW_UID, OPT_ALLOW_GID, OPT_ADMIN_UID,
                                        OPT_PLAN_DIR, OPT_COPY, OPT_COPY_DIR, OPT_MEM_BUDGET, OPT_MAX_IDS,
                                        OPT_MAX_FANOUT_PRODUCT,
                                        OPT_MAX_RESPONSE_BYTES, OPT_PARTS, OPT_CLUSTER, OPT_SHARD, OPT_SHARDS,
                                        OPT_REPLICAS, OPT_COPIES, 0};
    cli_t c;
    fs_error_t err = {0};
    int rc = cli_parse(&c, argc, argv, allowed);
    if (rc) return rc;
    if (c.num_args > 1) return cli_usage("%s", SERVE_USAGE);
    if (cli_has(&c, OPT_CONFIG) && cli_config(&c, c.text[OPT_CONFIG], allowed, "dataset", &err) != FS_OK)
        return cli_fail(&err);
    if (c.num_args != 1)
        return cli_usage("serve needs a DATASET directory: give it first, or as \"dataset\" in --config FILE\n%s",
                         SERVE_USAGE);
    fs_serve_opts_t o;
    fs_serve_defaults(&o);
    o.dataset = c.args[0];
    if ((rc = check_addresses(&c, &o)) || (rc = check_engine(&c, &o)) || (rc = check_grpc(&c, &o)) ||
        (rc = check_guards(&c, &o)) || (rc = check_placement(&c, &o)) || (rc = check_shard(&c, &o)))
        return rc;
    return fs_serve(&o);
}

/* Prints a failed client call the way every command reports errors. */
static int client_failed(fs_client_t *cl, fs_status_t st)
{
    fprintf(stderr, "featstore: error: %s [%s]\n", fs_client_errstr(cl), fs_strerror(st));
    return EXIT_FAILED;
}

/* A URI on the command line: a usage error (2) unless it is one of the
 * documented forms (kernels/fs_addr.h), before anything connects. */
static int check_uri(const char *uri)
{
    fs_addr_t a;
    fs_error_t err = {0};
    return fs_addr_uri(uri, &a, &err) == FS_OK ? 0 : cli_usage("%s", err.msg);
}

/* A cluster's: the map, then every shard's metrics summed (fs_cluster_stats),
 * without reading what a trainer reads (the book, node maps, cache). */
static int cluster_stats(const fs_addr_t *where)
{
    fs_shard_map_t m;
    fs_error_t err = {0};
    char *text = NULL;
    fs_status_t st = fs_cluster_read_map_at(where, 0, &m, &err);
    if (st == FS_OK) {
        st = fs_cluster_stats(&m, NULL, FS_CLUSTER_DEFAULT_TIMEOUT_MS, &text, &err);
        fs_shard_map_free(&m);
    }
    if (st != FS_OK) return cli_fail(&err);
    fputs(text, stdout);
    free(text);
    return 0;
}

int cmd_stats(int argc, char **argv)
{
    int rc;
    if (argc != 2)
        return cli_usage("%s", "usage: featstore stats unix:///PATH | grpc://HOST:PORT | grpcs://HOST:PORT | "
                               "etcd://HOST:PORT/CLUSTER | file:/ABS/PATH");
    if ((rc = check_uri(argv[1]))) return rc;
    fs_addr_t where;
    fs_error_t aerr = {0};
    if (fs_addr_uri(argv[1], &where, &aerr) == FS_OK && where.kind == FS_ADDR_CLUSTER) return cluster_stats(&where);
    fs_client_t *cl;
    char *text = NULL;
    fs_status_t st = fs_connect(argv[1], NULL, &cl);
    if (st == FS_OK) st = fs_stats(cl, &text);
    if (st == FS_OK) fputs(text, stdout);
    rc = st == FS_OK ? 0 : client_failed(cl, st);
    fs_stats_free(text);
    fs_close(cl);
    return rc;
}

int cmd_replan(int argc, char **argv)
{
    static const cli_opt_t allowed[] = {OPT_TOPOLOGY, OPT_GPU_BUDGET, OPT_HOTNESS, OPT_FEATURE_FIRST,
                                        OPT_TOPOLOGY_FIRST, OPT_ORDER, OPT_PLAN, OPT_SAVE_PLAN, OPT_ALPHA,
                                        OPT_RESERVE, 0};
    cli_t c;
    int rc = cli_parse(&c, argc, argv, allowed);
    if (rc) return rc;
    if (c.num_args != 1)
        return cli_usage("%s", "usage: featstore replan unix:///PATH [--topology PRESET|FILE] [--gpu-budget F] "
                               "[--hotness H] [--alpha A] [--reserve SIZE] [--order topology-first|feature-first|auto] "
                               "[--plan FILE] [--save-plan FILE]");
    if ((rc = check_uri(c.args[0]))) return rc;
    fs_replan_opts_t o = FS_REPLAN_OPTS_INIT;
    fs_error_t err = {0};
    if (cli_fraction(&c, OPT_GPU_BUDGET, &o.gpu_budget, &err) != FS_OK) return cli_usage("%s", err.msg);
    o.topology = c.text[OPT_TOPOLOGY], o.hotness = c.text[OPT_HOTNESS], o.order = c.order;
    o.plan = c.text[OPT_PLAN], o.save = c.text[OPT_SAVE_PLAN], o.alpha = c.text[OPT_ALPHA];
    o.reserve = c.text[OPT_RESERVE];
    fs_client_t *cl;
    uint64_t gen = 0;
    double t0 = fs_now();
    fs_status_t st = fs_connect(c.args[0], NULL, &cl);
    if (st == FS_OK) st = fs_replan(cl, &o, &gen);
    rc = st == FS_OK ? 0 : client_failed(cl, st);
    if (st == FS_OK)
        printf("re-planned in %.2f s: placement generation %llu is served\n", fs_now() - t0, (unsigned long long)gen);
    fs_close(cl);
    return rc;
}

int cmd_devices(int argc, char **argv)
{
    (void)argv;
    if (argc != 1) return cli_usage("%s", "usage: featstore devices");
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
