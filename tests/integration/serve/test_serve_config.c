/* test_serve_config.c — `featstore serve --config FILE` takes every server
 * option (cli/config.c): each key refuses a bad value naming the file and
 * the key, with the command line's own check; a config holding every key
 * is applied (seen from outside wherever a key can be: grpcs with mTLS and
 * a token, limits, the placement and its saved plan, the copy's directory,
 * the per-uid cap, the handshake timeout, the admin uid, --plan-dir); and
 * docs/cli.md's complete example names exactly these keys and serves, its
 * paths pointed at the test's files. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "featstore/admin.h"
#include "featstore/client.h"
#include "test_util.h"

static char *dir, *data, *cfg, *pki, sock[256];

static void setup(void)
{
    dir = tu_mkdtemp();
    data = tu_path(dir, "g");
    cfg = tu_path(dir, "featstore.json");
    pki = tu_path(dir, "pki");
    snprintf(sock, sizeof sock, "%s/s.sock", dir);
    char *log;
    cr_assert_eq(tu_run(&log, "%s gen rmat --scale 11 --edge-factor 8 --dim 16 --out %s", tu_bin(), data), 0, "%s", log);
    free(log);
}

static void teardown(void)
{
    tu_rm_rf(dir);
    free(dir), free(data), free(cfg), free(pki);
}

TestSuite(serve_config, .init = setup, .fini = teardown, .timeout = 180);

/* ---- every key refuses a bad value ------------------------------------------------ */

/* A key, a config holding a bad value of it (with what else the check
 * needs), and what the refusal says after `"key" in FILE` (%s: the file). */
static const struct {
    const char *key, *json, *want;
} bad_values[] = {
    {"dataset", "{\"dataset\": 5}", "\"dataset\" in %s must be a non-empty string (a path), not an integer"},
    {"socket", "{\"socket\": \"\"}", "\"socket\" in %s is empty"},
    {"listen", "{\"listen\": \"127.0.0.1\"}", "\"listen\" in %s '127.0.0.1': no ':PORT'"},
    {"metrics", "{\"metrics\": \"127.0.0.1:70000\"}", "\"metrics\" in %s '127.0.0.1:70000': port 70000 is outside"},
    {"threads", "{\"threads\": 0}", "\"threads\" in %s must be a whole number in [1, 256], got '0'"},
    {"verify", "{\"verify\": \"yes\"}", "\"verify\" in %s must be true or false, not a string"},
    {"prefault", "{\"prefault\": 1}", "\"prefault\" in %s must be true or false, not an integer"},
    {"copy", "{\"copy\": \"disk\"}", "\"copy\" in %s must be auto, memory or file, not 'disk'"},
    {"copy_dir", "{\"copy_dir\": 5}", "\"copy_dir\" in %s must be a string, not an integer"},
    {"mem_budget", "{\"mem_budget\": \"lots\"}",
     "\"mem_budget\" in %s 'lots': want a size in bytes, e.g. 4096, 512M, 2G"},
    {"limits.max_ids", "{\"limits\": {\"max_ids\": 0}}",
     "\"limits.max_ids\" in %s must be a whole number in [1, 9223372036854775807], got '0'"},
    {"limits.max_fanout_product", "{\"limits\": {\"max_fanout_product\": -1}}",
     "\"limits.max_fanout_product\" in %s must be a whole number in [1, 9223372036854775807], got '-1'"},
    {"limits.max_response_bytes", "{\"limits\": {\"max_response_bytes\": \"4G\"}}",
     "\"limits.max_response_bytes\" in %s must be an integer, not a string"},
    {"grpc_max_calls", "{\"listen\": \"127.0.0.1:0\", \"grpc_max_calls\": 0}",
     "\"grpc_max_calls\" in %s must be a whole number in [1, 1000000], got '0'"},
    {"request_timeout", "{\"listen\": \"127.0.0.1:0\", \"request_timeout\": \"2h\"}",
     "\"request_timeout\" in %s must be a duration such as 250ms, 5s or 2m"},
    {"tls_cert", "{\"listen\": \"127.0.0.1:0\", \"tls_cert\": \"c.pem\"}",
     "\"tls_cert\" in %s and --tls-key go together"},
    {"tls_key", "{\"listen\": \"127.0.0.1:0\", \"tls_key\": true}", "\"tls_key\" in %s must be a string, not a boolean"},
    {"tls_client_ca", "{\"listen\": \"127.0.0.1:0\", \"tls_client_ca\": \"ca.pem\"}",
     "\"tls_client_ca\" in %s (mTLS) needs --tls-cert and --tls-key"},
    {"token_file", "{\"token_file\": \"t\"}", "\"token_file\" in %s is a gRPC option: it needs --listen"},
    {"insecure", "{\"listen\": \"0.0.0.0:0\", \"insecure\": \"yes\"}", "\"insecure\" in %s must be true or false"},
    {"handshake_timeout", "{\"handshake_timeout\": \"soon\"}",
     "\"handshake_timeout\" in %s must be a duration such as 250ms, 5s or 2m"},
    {"max_conns_per_uid", "{\"max_conns_per_uid\": -1}",
     "\"max_conns_per_uid\" in %s must be a whole number in [0, 1000000], got '-1'"},
    {"allow_uid", "{\"allow_uid\": [\"no-such-user-fs46\"]}",
     "\"allow_uid\" in %s wants up to 64 user ids or names separated by commas, e.g. 1000,1001; 'no-such-user-fs46'"},
    {"allow_gid", "{\"allow_gid\": []}", "\"allow_gid\" in %s: the list is empty"},
    {"admin_uid", "{\"admin_uid\": 4294967295}", "\"admin_uid\" in %s wants up to 1 user ids or names"},
    {"plan_dir", "{\"plan_dir\": [\"/tmp\"]}", "\"plan_dir\" in %s must be a string, not an array"},
    {"topology", "{\"topology\": 4}", "\"topology\" in %s must be a string, not an integer"},
    {"gpu_budget", "{\"topology\": \"pcie4\", \"gpu_budget\": 2}",
     "\"gpu_budget\" in %s must be a fraction in (0, 1], got '2'"},
    {"reserve", "{\"topology\": \"pcie4\", \"reserve\": \"much\"}", "\"reserve\" in %s: --reserve 'much'"},
    {"order", "{\"topology\": \"pcie4\", \"order\": \"sideways\"}", "\"order\" in %s: unknown order 'sideways'"},
    {"feature_first", "{\"topology\": \"pcie4\", \"feature_first\": true, \"order\": \"topology-first\"}",
     "\"order\" in %s and \"feature_first\" in %s say different orders"},
    {"topology_first", "{\"topology_first\": true}", "\"topology_first\" in %s shapes a placement: it needs --topology"},
    {"hotness", "{\"topology\": \"pcie4\", \"hotness\": \"pagerank\"}",
     "\"hotness\" in %s: unknown hotness estimator 'pagerank'"},
    {"alpha", "{\"topology\": \"pcie4\", \"alpha\": \"nvlink=-1\"}", "\"alpha\" in %s: alpha 'nvlink=-1'"},
    {"table", "{\"table\": \"feat\"}", "\"table\" in %s shapes a placement: it needs --topology"},
    {"plan", "{\"plan\": \"p.plan\"}", "\"plan\" in %s shapes a placement: it needs --topology"},
    {"save_plan", "{\"save_plan\": \"\"}", "\"save_plan\" in %s is empty"},
};

#define NUM_BAD (sizeof bad_values / sizeof *bad_values)

Test(serve_config, every_key_refuses_a_bad_value_naming_the_file_and_the_key)
{
    for (size_t i = 0; i < NUM_BAD; i++) {
        char *log, want[1200];
        tu_write(cfg, bad_values[i].json, strlen(bad_values[i].json));
        snprintf(want, sizeof want, bad_values[i].want, cfg, cfg);
        int rc = tu_run(&log, "timeout 60 %s serve %s --socket %s --config %s", tu_bin(), data, sock, cfg);
        cr_assert_eq(rc, 1, "%s: %s exited %d: %s", bad_values[i].key, bad_values[i].json, rc, log);
        cr_assert_not_null(strstr(log, want), "%s: want \"%s\" in: %s", bad_values[i].key, want, log);
        cr_assert_null(strstr(log, "featstore: bound"), "%s: refused only after binding: %s", bad_values[i].key, log);
        free(log);
    }
}

Test(serve_config, unknown_keys_are_refused_and_the_nearest_named)
{
    static const struct {
        const char *json, *want;
    } cases[] = {
        {"{\"tls_crt\": \"c.pem\"}", "unknown key \"tls_crt\"; did you mean \"tls_cert\"?"},
        {"{\"tls-cert\": \"c.pem\"}", "unknown key \"tls-cert\"; did you mean \"tls_cert\"?"},
        {"{\"config\": \"other.json\"}", "unknown key \"config\""},
        {"{\"max_ids\": 5}", "unknown key \"max_ids\""}, /* the limits live in "limits" */
        {"{\"limits\": {\"max_id\": 5}}", "limits: unknown key \"max_id\" (allowed: max_ids, max_fanout_product, "
                                          "max_response_bytes)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *log;
        tu_write(cfg, cases[i].json, strlen(cases[i].json));
        cr_assert_eq(tu_run(&log, "timeout 60 %s serve %s --socket %s --config %s", tu_bin(), data, sock, cfg), 1, "%s",
                     log);
        cr_assert_not_null(strstr(log, cases[i].want), "%s: want \"%s\" in: %s", cases[i].json, cases[i].want, log);
        cr_assert_not_null(strstr(log, cfg), "%s: the file is not named: %s", cases[i].json, log);
        free(log);
    }
}

/* ---- a config with every key, applied ------------------------------------------- */

static void make_pki(void)
{
    char *log;
    cr_assert_eq(tu_run(&log, "sh %s/make_test_certs.sh %s && printf 'tok-46\\n' > %s/token", FS_TESTS_LIB_DIR, pki,
                        pki), 0, "%s", log);
    free(log);
}

/* The server behind the READY line of `serve --config cfg` (stderr to log_path). */
static void start_from_config(tu_server_t *s, const char *json, const char *log_path)
{
    tu_write(cfg, json, strlen(json));
    s->pid = tu_spawn(&s->out, "%s serve --config %s 2>%s", tu_bin(), cfg, log_path);
    char line[512];
    char *log = NULL;
    if (!fgets(line, sizeof line, s->out)) log = tu_read(log_path, NULL);
    cr_assert_null(log, "serve --config exited before READY: %s", log);
    cr_assert(sscanf(line, "READY unix=%*s grpc=%*[^:]:%d metrics=%d", &s->grpc_port, &s->metrics_port) == 2, "%s",
              line);
}

/* A unix:// connection that sends nothing is closed by the handshake timeout. */
static void assert_handshake_timeout(void)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    cr_assert_lt(strlen(sock), sizeof a.sun_path);
    memcpy(a.sun_path, sock, strlen(sock) + 1);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    cr_assert_eq(poll(&p, 1, 60000), 1, "a silent connection was not closed by \"handshake_timeout\"");
    close(fd);
}

Test(serve_config, a_config_with_every_key_is_applied)
{
    make_pki();
    char json[4096], *log_path = tu_path(dir, "serve.log"), *plan = tu_path(dir, "saved.plan");
    snprintf(json, sizeof json,
             "{\"dataset\": \"%s\", \"socket\": \"%s\", \"listen\": \"127.0.0.1:0\", \"metrics\": \"127.0.0.1:0\", "
             "\"threads\": 2, \"verify\": true, \"prefault\": true, \"copy\": \"file\", \"copy_dir\": \"%s\", "
             "\"mem_budget\": \"24G\", "
             "\"limits\": {\"max_ids\": 7, \"max_fanout_product\": 1000, \"max_response_bytes\": 1000000000}, "
             "\"grpc_max_calls\": 8, \"request_timeout\": 30, \"tls_cert\": \"%s/server.pem\", "
             "\"tls_key\": \"%s/server.key\", \"tls_client_ca\": \"%s/ca.pem\", \"token_file\": \"%s/token\", "
             "\"insecure\": false, \"handshake_timeout\": \"200ms\", \"max_conns_per_uid\": 2, "
             "\"allow_uid\": [%d], \"allow_gid\": \"%d\", \"admin_uid\": 4000000000, \"plan_dir\": \"%s\", "
             "\"topology\": \"nvlink-pairs\", \"gpu_budget\": 0.2, \"reserve\": \"1K\", \"order\": \"feature-first\", "
             "\"feature_first\": true, \"topology_first\": false, \"hotness\": \"degree\", \"alpha\": 0, "
             "\"table\": \"feat\", \"save_plan\": \"%s\"}",
             data, sock, dir, pki, pki, pki, pki, (int)getuid(), (int)getgid(), dir, plan);
    tu_server_t s;
    start_from_config(&s, json, log_path);

    /* grpcs with mTLS and the token; without the token: refused */
    char uri[64], ca[600], cert[600], key[600];
    snprintf(uri, sizeof uri, "grpcs://localhost:%d", s.grpc_port);
    snprintf(ca, sizeof ca, "%s/ca.pem", pki), snprintf(cert, sizeof cert, "%s/client.pem", pki);
    snprintf(key, sizeof key, "%s/client.key", pki);
    fs_connect_opts_t o = FS_CONNECT_OPTS_INIT;
    o.tls_ca_file = ca, o.tls_cert_file = cert, o.tls_key_file = key, o.token = "tok-46";
    fs_client_t *g;
    fs_info_t *info;
    cr_assert_eq(fs_connect(uri, &o, &g), FS_OK, "%s", fs_client_errstr(g));
    cr_assert_eq(fs_info(g, &info), FS_OK, "%s", fs_client_errstr(g));
    cr_assert_eq(info->num_readers, 4, "the nvlink-pairs placement: one reader per planned GPU");
    fs_info_free(info);
    int64_t ids[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    fs_batch_t *b = NULL;
    cr_assert_eq(fs_gather(g, ids, 8, "feat", FS_DTYPE_INVALID, &b), FS_ERR_RESOURCE, "limits.max_ids = 7");
    fs_close(g);
    o.token = "tok-wrong";
    cr_assert_eq(fs_connect(uri, &o, &g), FS_OK, "%s", fs_client_errstr(g));
    cr_assert_eq(fs_info(g, &info), FS_ERR_PERMISSION, "token_file");
    fs_close(g);

    /* unix://: a silent connection closed by the handshake timeout; two connections per uid, the third
     * refused; re-planning is admin_uid's only */
    assert_handshake_timeout();
    free(tu_metrics_with(s.metrics_port, "featstore_local_handshake_timeouts_total 1\n"));
    char local[300];
    snprintf(local, sizeof local, "unix://%s", sock);
    fs_client_t *u[3];
    cr_assert_eq(fs_connect(local, NULL, &u[0]), FS_OK, "%s", fs_client_errstr(u[0]));
    cr_assert_eq(fs_connect(local, NULL, &u[1]), FS_OK, "%s", fs_client_errstr(u[1]));
    cr_assert_eq(fs_connect(local, NULL, &u[2]), FS_ERR_RESOURCE, "max_conns_per_uid = 2");
    fs_close(u[2]);
    fs_replan_opts_t r = FS_REPLAN_OPTS_INIT;
    uint64_t gen;
    cr_assert_eq(fs_replan(u[0], &r, &gen), FS_ERR_PERMISSION);
    cr_assert_not_null(strstr(fs_client_errstr(u[0]), "only its admin uid 4000000000"), "%s", fs_client_errstr(u[0]));
    fs_close(u[0]), fs_close(u[1]);
    cr_assert_eq(tu_serve_stop(&s, SIGTERM), 0);

    char *log = tu_read(log_path, NULL), want[700];
    snprintf(want, sizeof want, "dataset copied into unnamed read-only files in %s", dir);
    cr_assert_not_null(strstr(log, want), "copy and copy_dir: %s", log);
    cr_assert_not_null(strstr(log, "(client certificates required) (bearer token required)"), "%s", log);
    cr_assert_not_null(strstr(log, "feature-first"), "order: %s", log);
    cr_assert_eq(access(plan, F_OK), 0, "save_plan wrote no %s: %s", plan, log);
    free(log);
    free(log_path), free(plan);
}

Test(serve_config, a_saved_plan_and_plan_dir_from_the_config)
{
    char json[2048], *log_path = tu_path(dir, "serve.log"), *plan = tu_path(dir, "p.plan"), *log;
    cr_assert_eq(tu_run(&log, "%s plan %s --topology nvlink-pairs --gpu-budget 0.2 --save %s", tu_bin(), data, plan), 0,
                 "%s", log);
    free(log);
    snprintf(json, sizeof json,
             "{\"dataset\": \"%s\", \"socket\": \"%s\", \"listen\": \"127.0.0.1:0\", \"metrics\": \"127.0.0.1:0\", "
             "\"topology\": \"nvlink-pairs\", \"plan\": \"%s\", \"plan_dir\": \"%s\"}", data, sock, plan, dir);
    tu_server_t s;
    start_from_config(&s, json, log_path);
    char local[300], *saved = tu_path(dir, "again.plan");
    snprintf(local, sizeof local, "unix://%s", sock);
    fs_client_t *u;
    cr_assert_eq(fs_connect(local, NULL, &u), FS_OK, "%s", fs_client_errstr(u));
    fs_replan_opts_t r = FS_REPLAN_OPTS_INIT;
    r.save = "again.plan";
    uint64_t gen;
    cr_assert_eq(fs_replan(u, &r, &gen), FS_OK, "%s", fs_client_errstr(u));
    cr_assert_eq(access(saved, F_OK), 0, "the re-plan's save did not land in \"plan_dir\"");
    fs_close(u);
    cr_assert_eq(tu_serve_stop(&s, SIGTERM), 0);
    free(log_path), free(plan), free(saved);
}

/* ---- docs/cli.md's complete example ------------------------------------------- */

/* Every key of a config, "limits.X" for the limits. */
static int has_key(json_t *cfg, const char *key)
{
    const char *dot = strchr(key, '.');
    if (!dot) return json_object_get(cfg, key) != NULL;
    json_t *lim = json_object_get(cfg, "limits");
    return lim && json_object_get(lim, dot + 1) != NULL;
}

static size_t num_keys(json_t *cfg)
{
    json_t *lim = json_object_get(cfg, "limits");
    return json_object_size(cfg) - (lim ? 1 : 0) + (lim ? json_object_size(lim) : 0);
}

static void set_text(json_t *cfg, const char *key, const char *value)
{
    cr_assert_not_null(json_object_get(cfg, key), "the example has no \"%s\"", key);
    json_object_set_new(cfg, key, json_string(value));
}

Test(serve_config, the_documented_example_names_every_key_and_serves)
{
    char *text = tu_doc_block("cli.md", "Every key, with example values", "json");
    json_error_t jerr;
    json_t *ex = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    cr_assert_not_null(ex, "docs/cli.md's example: line %d: %s", jerr.line, jerr.text);
    for (size_t i = 0; i < NUM_BAD; i++)
        cr_assert(has_key(ex, bad_values[i].key), "docs/cli.md's example lacks \"%s\"", bad_values[i].key);
    cr_assert_eq(num_keys(ex), NUM_BAD, "docs/cli.md's example has keys this test does not know");

    /* its paths pointed at this test's files, addresses at free loopback ports, a reserve the tiny test GPUs hold */
    make_pki();
    char p[16][600], *log;
    snprintf(p[0], sizeof p[0], "%s/server.pem", pki), snprintf(p[1], sizeof p[1], "%s/server.key", pki);
    snprintf(p[2], sizeof p[2], "%s/ca.pem", pki), snprintf(p[3], sizeof p[3], "%s/token", pki);
    snprintf(p[4], sizeof p[4], "%s/current.plan", dir), snprintf(p[5], sizeof p[5], "%s/started.plan", dir);
    cr_assert_eq(tu_run(&log, "%s plan %s --topology %s --gpu-budget 0.2 --feature-first --save %s", tu_bin(), data,
                        json_string_value(json_object_get(ex, "topology")), p[4]), 0, "%s", log);
    free(log);
    const char *keys[] = {"dataset", "socket", "listen", "metrics", "copy_dir", "tls_cert", "tls_key", "tls_client_ca",
                          "token_file", "plan_dir", "plan", "save_plan", "reserve"};
    const char *values[] = {data, sock, "127.0.0.1:0", "127.0.0.1:0", dir, p[0], p[1], p[2], p[3], dir, p[4], p[5], "1K"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) set_text(ex, keys[i], values[i]);
    char *json = json_dumps(ex, JSON_INDENT(2));
    char *log_path = tu_path(dir, "example.log");
    tu_server_t s;
    start_from_config(&s, json, log_path);
    char uri[64], cert[600], key[600];
    snprintf(uri, sizeof uri, "grpcs://127.0.0.1:%d", s.grpc_port);
    snprintf(cert, sizeof cert, "%s/client.pem", pki), snprintf(key, sizeof key, "%s/client.key", pki);
    fs_connect_opts_t o = FS_CONNECT_OPTS_INIT;
    o.tls_ca_file = p[2], o.tls_cert_file = cert, o.tls_key_file = key, o.token = "tok-46";
    fs_client_t *g;
    fs_info_t *info;
    cr_assert_eq(fs_connect(uri, &o, &g), FS_OK, "%s", fs_client_errstr(g));
    cr_assert_eq(fs_info(g, &info), FS_OK, "%s", fs_client_errstr(g));
    fs_info_free(info);
    fs_close(g);
    cr_assert_eq(tu_serve_stop(&s, SIGTERM), 0);
    cr_assert_eq(access(p[5], F_OK), 0, "\"save_plan\" wrote nothing");
    free(json), free(text), free(log_path);
    json_decref(ex);
}
