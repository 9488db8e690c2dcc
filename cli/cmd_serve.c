/* cmd_serve.c — running the store and talking to a running one:
 * `featstore serve` (server/serve.h), `featstore replan` and
 * `featstore stats` (through the client library, as any trainer would),
 * and `featstore devices`. A bad option value is a usage error (exit 2),
 * checked before anything is loaded. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "featstore/admin.h"
#include "featstore/client.h"
#include "fs_addr.h"
#include "fs_device.h"
#include "serve.h"

/* The placement options given as text (serve and its re-plans share the
 * checks: place.h), into *po. */
static int check_place_text(const cli_t *c, fs_place_opts_t *po)
{
    fs_error_t err = {0};
    if (fs_place_opts_from_text(po, c->text[OPT_HOTNESS], c->order, c->text[OPT_RESERVE], c->text[OPT_ALPHA], &err) !=
        FS_OK)
        return cli_usage("%s", err.msg);
    return 0;
}

/* --socket, --listen and --metrics, from the command line or from --config,
 * are parsed before anything is loaded or started (kernels/fs_addr.h): a
 * mistyped address is refused by name, never served somewhere else. A bad
 * one on the command line is a usage error (2); one in the --config file
 * fails like the file's other errors (1), naming the file. */
static int check_address(const cli_t *c, cli_opt_t opt, const char *key, const char *text, const char *config,
                         fs_addr_t *a)
{
    if (!text) return 0;
    char what[600];
    fs_error_t err = {0};
    int given = cli_has(c, opt);
    if (given) snprintf(what, sizeof what, "--%s", key);
    else snprintf(what, sizeof what, "\"%s\" in %s", key, config ? config : "the configuration");
    fs_status_t st = opt == OPT_SOCKET ? fs_addr_socket(what, text, a, &err) : fs_addr_listen(what, text, a, &err);
    if (st == FS_OK) return 0;
    return given ? cli_usage("%s", err.msg) : cli_fail(&err);
}

/* The three addresses; a unix:///PATH socket becomes its PATH. */
static int check_addresses(const cli_t *c, fs_serve_opts_t *o)
{
    static char socket_path[FS_ADDR_PATH_MAX];
    fs_addr_t a;
    int rc = check_address(c, OPT_SOCKET, "socket", o->socket_path, o->config, &a);
    if (!rc && o->socket_path) {
        memcpy(socket_path, a.path, sizeof socket_path);
        o->socket_path = socket_path;
    }
    if (!rc) rc = check_address(c, OPT_LISTEN, "listen", o->listen, o->config, &a);
    if (!rc) rc = check_address(c, OPT_METRICS, "metrics", o->metrics, o->config, &a);
    return rc;
}

int cmd_serve(int argc, char **argv)
{
    static const cli_opt_t allowed[] = {OPT_SOCKET, OPT_LISTEN, OPT_METRICS, OPT_CONFIG, OPT_THREADS, OPT_VERIFY,
                                        OPT_PREFAULT, OPT_TOPOLOGY, OPT_GPU_BUDGET, OPT_PLAN, OPT_SAVE_PLAN, OPT_TABLE,
                                        OPT_FEATURE_FIRST, OPT_HOTNESS, OPT_ALPHA, OPT_TOPOLOGY_FIRST, OPT_ORDER,
                                        OPT_RESERVE, OPT_GRPC_MAX_CALLS, OPT_REQUEST_TIMEOUT, OPT_TLS_CERT, OPT_TLS_KEY,
                                        OPT_TLS_CLIENT_CA, OPT_TOKEN_FILE, OPT_INSECURE, OPT_HANDSHAKE_TIMEOUT,
                                        OPT_MAX_CONNS_PER_UID, OPT_ALLOW_UID, OPT_ALLOW_GID, OPT_ADMIN_UID,
                                        OPT_PLAN_DIR, OPT_COPY, OPT_COPY_DIR, 0};
    cli_t c;
    int rc = cli_parse(&c, argc, argv, allowed);
    if (rc) return rc;
    if (c.num_args != 1)
        return cli_usage("%s", "usage: featstore serve DATASET [--socket PATH] [--listen HOST:PORT] "
                               "[--metrics HOST:PORT] [--config FILE] [--threads N] [--verify] [--prefault] [--copy auto|memory|file] [--copy-dir DIR] [--grpc-max-calls N] [--request-timeout 60s] "
                               "[--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]] [--token-file FILE] "
                               "[--insecure] [--handshake-timeout 5s] [--max-conns-per-uid N] "
                               "[--allow-uid U,...] [--allow-gid G,...] [--admin-uid U] [--plan-dir DIR]");
    fs_serve_opts_t o;
    fs_serve_defaults(&o);
    o.dataset = c.args[0];
    o.socket_path = c.text[OPT_SOCKET], o.listen = c.text[OPT_LISTEN], o.metrics = c.text[OPT_METRICS];
    o.config = c.text[OPT_CONFIG];
    o.verify = cli_has(&c, OPT_VERIFY), o.prefault = cli_has(&c, OPT_PREFAULT);
    o.copy_medium = c.text[OPT_COPY], o.copy.dir = c.text[OPT_COPY_DIR];
    o.place = (fs_place_opts_t){.topology = c.text[OPT_TOPOLOGY], .table = c.text[OPT_TABLE],
                                .plan_in = c.text[OPT_PLAN], .plan_out = c.text[OPT_SAVE_PLAN]};
    long long threads = 0;
    fs_error_t err = {0};
    if (fs_serve_copy_medium(o.copy_medium, "--copy", &o.copy.medium, &err) != FS_OK) return cli_usage("%s", err.msg);
    if (o.copy.medium == FS_COPY_MEMFD && o.copy.dir)
        return cli_usage("%s", "--copy-dir is where file copies go: it needs --copy file or auto, not memory");
    fs_status_t st = cli_int(&c, OPT_THREADS, 1, 256, &threads, &err);
    if (st == FS_OK) st = cli_fraction(&c, OPT_GPU_BUDGET, &o.place.gpu_budget, &err);
    if (st != FS_OK) return cli_usage("%s", err.msg);
    o.threads = (int)threads;
    /* gRPC admission and security: pairs checked here, the rest by fs_serve (it knows the final --listen) */
    long long max_calls = 0;
    if (cli_int(&c, OPT_GRPC_MAX_CALLS, 1, 1000000, &max_calls, &err) != FS_OK) return cli_usage("%s", err.msg);
    o.grpc_max_calls = (int)max_calls;
    if (cli_duration_ms(&c, OPT_REQUEST_TIMEOUT, 3600 * 1000, &o.request_timeout_ms, &err) != FS_OK)
        return cli_usage("%s", err.msg);
    if (cli_has(&c, OPT_REQUEST_TIMEOUT) && o.request_timeout_ms == 0)
        return cli_usage("%s", "--request-timeout must be above 0 (every gRPC call gets this long at most)");
    o.tls_cert = c.text[OPT_TLS_CERT], o.tls_key = c.text[OPT_TLS_KEY], o.tls_client_ca = c.text[OPT_TLS_CLIENT_CA];
    o.token_file = c.text[OPT_TOKEN_FILE], o.insecure = cli_has(&c, OPT_INSECURE);
    if (!o.tls_cert != !o.tls_key) return cli_usage("%s", "--tls-cert and --tls-key go together");
    if (o.tls_client_ca && !o.tls_cert) return cli_usage("%s", "--tls-client-ca (mTLS) needs --tls-cert and --tls-key");
    /* unix:// guards and administration (server/local.h; docs/serving.md "Local security") */
    _Static_assert(sizeof(uid_t) == sizeof(unsigned) && sizeof(gid_t) == sizeof(unsigned), "ids are unsigned int");
    static unsigned allow_uids[64], allow_gids[64];
    unsigned admin = 0;
    int admins = 0;
    long long per_uid = o.max_conns_per_uid;
    st = cli_duration_ms(&c, OPT_HANDSHAKE_TIMEOUT, 3600 * 1000, &o.handshake_timeout_ms, &err);
    if (st == FS_OK) st = cli_int(&c, OPT_MAX_CONNS_PER_UID, 0, 1000000, &per_uid, &err);
    if (st == FS_OK) st = cli_id_list(&c, OPT_ALLOW_UID, 0, allow_uids, 64, &o.num_allow_uids, &err);
    if (st == FS_OK) st = cli_id_list(&c, OPT_ALLOW_GID, 1, allow_gids, 64, &o.num_allow_gids, &err);
    if (st == FS_OK) st = cli_id_list(&c, OPT_ADMIN_UID, 0, &admin, 1, &admins, &err);
    if (st != FS_OK) return cli_usage("%s", err.msg);
    o.max_conns_per_uid = (int)per_uid;
    o.allow_uids = (const uid_t *)allow_uids, o.allow_gids = (const gid_t *)allow_gids;
    if (admins) o.admin_uid = admin;
    o.plan_dir = c.text[OPT_PLAN_DIR];
    int placed = cli_has(&c, OPT_PLAN) || cli_has(&c, OPT_SAVE_PLAN) || cli_has(&c, OPT_GPU_BUDGET) ||
                 cli_has(&c, OPT_TABLE) || c.order || cli_has(&c, OPT_HOTNESS) || cli_has(&c, OPT_ALPHA) ||
                 cli_has(&c, OPT_RESERVE);
    if (placed && !cli_has(&c, OPT_TOPOLOGY))
        return cli_usage("%s", "--gpu-budget, --plan, --save-plan, --table, --feature-first, --order, --hotness, "
                               "--alpha and --reserve need --topology");
    if ((rc = check_place_text(&c, &o.place))) return rc;
    if (fs_serve_load_config(&o, &err) != FS_OK) return cli_fail(&err);
    if ((rc = check_addresses(&c, &o))) return rc;
    if (!o.socket_path && !o.listen) {
        static char def[128];
        snprintf(def, sizeof def, "/tmp/featstore-%d.sock", (int)getuid());
        o.socket_path = def;
    }
    if (!o.metrics) o.metrics = "127.0.0.1:9464";
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

int cmd_stats(int argc, char **argv)
{
    int rc;
    if (argc != 2) return cli_usage("%s", "usage: featstore stats unix:///PATH | grpc://HOST:PORT | grpcs://HOST:PORT");
    if ((rc = check_uri(argv[1]))) return rc;
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
