/* test_serve.c — `featstore serve` as operators run it: a child process on a
 * socket and an ephemeral metrics port, trainers in other processes, the
 * HTTP endpoint checked strictly (tests/lib/check_exposition.py), bad configuration refused with a clear
 * message, and SIGTERM leading to a clean exit 0 with the socket removed.
 * Security: gRPC on a non-loopback address needs TLS or --insecure (warned
 * about); over grpcs:// with a bearer token a trainer gets the unix://
 * results bit for bit, and the CLI takes TLS and token from the environment. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "featstore/admin.h"
#include "featstore/client.h"
#include "fs_shm.h"
#include "test_util.h"
#include "writer.h"

static char *dir, *data, sock[256];

static void setup(void)
{
    dir = tu_mkdtemp();
    data = tu_path(dir, "g");
    snprintf(sock, sizeof sock, "%s/s.sock", dir);
    char *log;
    cr_assert_eq(tu_run(&log, "%s gen rmat --scale 11 --edge-factor 8 --dim 16 --symmetrize --out %s", tu_bin(), data), 0,
                 "%s", log);
    free(log);
}

static void teardown(void)
{
    tu_rm_rf(dir);
    free(dir);
    free(data);
}

TestSuite(serve, .init = setup, .fini = teardown, .timeout = 120);

typedef tu_server_t server_t;

/* Starts `featstore serve` on this suite's dataset and socket with extra arguments. */
static int start(server_t *s, const char *extra) { return tu_serve(s, data, sock, extra); }

static int stop(server_t *s, int sig) { return tu_serve_stop(s, sig); }

/* Runs tests/lib/check_exposition.py (prometheus_client's parser plus HELP/TYPE,
 * names and histogram rules) on an exposition text: its exit status, and its
 * output in *log. No skip when python3-prometheus-client is missing: the
 * import error fails the test, as a missing promtool never did. */
static int check_exposition(const char *text, char **log)
{
    char *file = tu_path(dir, "metrics.txt");
    tu_write(file, text, strlen(text));
    int rc = tu_run(log, "/usr/bin/python3 %s %s", FS_CHECK_EXPOSITION, file);
    free(file);
    return rc;
}

Test(serve, serves_trainers_exposes_metrics_and_stops_cleanly)
{
    server_t s;
    cr_assert_eq(start(&s, "--copy memory"), 0); /* the memfd, whose pages the shmem setting decides (below) */
    char *log;
    int rc = tu_run(&log, "%s/../examples/featstore-trainer unix://%s --batches 5 --batch 64 --fanouts 5,3 & "
                          "%s/../examples/featstore-trainer unix://%s --batches 5 --batch 64 --fanouts 5,3 --seed 2 & "
                          "%s/../examples/featstore-trainer grpc://127.0.0.1:%d --batches 5 --batch 64 --fanouts 5,3; wait",
                    FS_BIN_DIR, sock, FS_BIN_DIR, sock, FS_BIN_DIR, s.grpc_port);
    cr_assert_eq(rc, 0, "%s", log);
    cr_assert_not_null(strstr(log, "TRAINER name=trainer transport=unix batches=5"), "%s", log);
    cr_assert_not_null(strstr(log, "TRAINER name=trainer transport=grpc batches=5"), "%s", log);
    free(log);

    /* one bad gather per transport: counted under its status code */
    for (int t = 0; t < 2; t++) {
        char uri[300];
        if (t == 0) snprintf(uri, sizeof uri, "unix://%s", sock);
        else snprintf(uri, sizeof uri, "grpc://127.0.0.1:%d", s.grpc_port);
        fs_client_t *c;
        cr_assert_eq(fs_connect(uri, NULL, &c), FS_OK, "%s", fs_client_errstr(c));
        int64_t bad[1] = {1 << 20};
        fs_batch_t *b = NULL;
        cr_assert_eq(fs_gather(c, bad, 1, "feat", FS_DTYPE_INVALID, &b), FS_ERR_INVALID_ARGUMENT);
        fs_close(c);
    }

    char *health = tu_http_get(s.metrics_port, "/healthz");
    cr_assert_not_null(strstr(health, "200 OK"), "%s", health);
    free(health);
    char *metrics = NULL;
    for (int i = 0; i < 100; i++) { /* reports are asynchronous */
        free(metrics);
        metrics = tu_http_get(s.metrics_port, "/metrics");
        if (strstr(metrics, "featstore_requests_total{method=\"SampleGather\",transport=\"unix\"} 10\n") &&
            strstr(metrics, "featstore_request_errors_by_code_total{transport=\"unix\",code=\"invalid_argument\"} 1\n"))
            break;
        usleep(20000);
    }
    cr_assert_not_null(strstr(metrics, "featstore_requests_total{method=\"SampleGather\",transport=\"unix\"} 10\n"),
                       "%s", metrics);
    cr_assert_not_null(strstr(metrics, "featstore_dataset_nodes{dataset=\"rmat-s11-e8\"} 2048"), "%s", metrics);
    /* the copy's huge pages: known, at most the copy, none where the host's shmem setting forbids them */
    const char *huge = strstr(metrics, "featstore_dataset_huge_page_bytes{dataset=\"rmat-s11-e8\"} ");
    const char *total = strstr(metrics, "featstore_dataset_bytes{dataset=\"rmat-s11-e8\"} ");
    cr_assert(huge && total, "%s", metrics);
    long long huge_bytes = atoll(strchr(huge, '}') + 2), total_bytes = atoll(strchr(total, '}') + 2);
    char setting[32];
    cr_assert(huge_bytes >= 0 && huge_bytes <= total_bytes, "%lld of %lld", huge_bytes, total_bytes);
    if (strcmp(fs_shm_huge_setting(setting, sizeof setting), "never") == 0) cr_assert_eq(huge_bytes, 0);
    cr_assert_not_null(strstr(metrics, "featstore_requests_total{method=\"SampleGather\",transport=\"grpc\"} 5\n"),
                       "%s", metrics);
    cr_assert_not_null(strstr(metrics, "featstore_tier_used_bytes{tier=\"0\",kind=\"host\""), "%s", metrics);
    for (int t = 0; t < 2; t++) {
        char want[128];
        snprintf(want, sizeof want, "featstore_request_errors_by_code_total{transport=\"%s\",code=\"invalid_argument\"} 1\n",
                 t ? "grpc" : "unix");
        cr_assert_not_null(strstr(metrics, want), "%s", metrics);
    }
    cr_assert_not_null(strstr(metrics, "featstore_request_errors_by_code_total{transport=\"unix\",code=\"not_found\"} 0\n"),
                       "%s", metrics);
    char *body = strstr(metrics, "\r\n\r\n");
    cr_assert_not_null(body);
    cr_assert_eq(check_exposition(body + 4, &log), 0, "%s", log);
    free(log);
    free(metrics);
    char *nf = tu_http_get(s.metrics_port, "/nope");
    cr_assert_not_null(strstr(nf, "404"), "%s", nf);
    free(nf);

    cr_assert_eq(stop(&s, SIGTERM), 0, "SIGTERM gives exit 0");
    cr_assert_neq(access(sock, F_OK), 0, "socket removed on shutdown");
}

/* Broken expositions and the words check_exposition must say about each: the
 * check is only worth what it refuses. */
static const struct {
    const char *text, *want;
} bad_expositions[] = {
    {"# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"1\" 3\n", "cannot parse"},
    {"# TYPE a_total counter\na_total 3\n", "a_total: # TYPE without # HELP"},
    {"# HELP a A.\n# TYPE a gauge\nb 3\n", "sample b of no declared family"},
    {"# HELP a A.\n# TYPE a gauge\na 3\na 4\n", "series repeated"},
    {"# HELP a A.\n# TYPE a gauge\na 3", "does not end with a line feed"},
    {"# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 5\nh_bucket{le=\"2\"} 4\nh_bucket{le=\"+Inf\"} 5\n"
     "h_sum 1\nh_count 5\n", "buckets not cumulative"},
    {"# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 5\nh_bucket{le=\"+Inf\"} 6\nh_sum 1\nh_count 7\n",
     "+Inf bucket 6.0 != _count 7.0"},
    {"# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 5\nh_sum 1\nh_count 5\n", "no le=\"+Inf\" bucket"},
};

Test(serve, the_exposition_check_refuses_broken_text)
{
    char *log;
    cr_assert_eq(check_exposition("# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"1\"} 3\n", &log), 0, "%s",
                 log);
    free(log);
    for (size_t i = 0; i < sizeof bad_expositions / sizeof *bad_expositions; i++) {
        cr_assert_neq(check_exposition(bad_expositions[i].text, &log), 0, "accepted: %s", bad_expositions[i].text);
        cr_assert_not_null(strstr(log, bad_expositions[i].want), "case %zu: want \"%s\" in: %s", i,
                           bad_expositions[i].want, log);
        free(log);
    }
}

Test(serve, sigint_also_stops_cleanly_and_clients_see_it)
{
    server_t s;
    cr_assert_eq(start(&s, ""), 0);
    fs_client_t *c;
    char uri[300];
    snprintf(uri, sizeof uri, "unix://%s", sock);
    cr_assert_eq(fs_connect(uri, NULL, &c), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(stop(&s, SIGINT), 0);
    fs_info_t *info;
    cr_assert_eq(fs_info(c, &info), FS_ERR_UNAVAILABLE);
    /* the engines run in this process, but a stopped server is seen on every call */
    int64_t ids[2] = {0, 1};
    fs_batch_t *b = NULL;
    cr_assert_eq(fs_gather(c, ids, 2, "feat", FS_DTYPE_INVALID, &b), FS_ERR_UNAVAILABLE);
    cr_assert_not_null(strstr(fs_client_errstr(c), "the server stopped"), "%s", fs_client_errstr(c));
    fs_close(c);
}

/* Each bad --config file and the words its error must contain: the key, the
 * allowed range or type, and what was found; %s is the file's path. */
static const struct {
    const char *json, *want;
} bad_configs[] = {
    {"{\"limits\": {\"max_ids\": -3}}", "\"limits.max_ids\" in %s must be a whole number in [1, 9223372036854775807], got '-3'"},
    {"{\"limits\": {\"max_idz\": 5}}", "limits: unknown key \"max_idz\" (allowed: max_ids, max_fanout_product, "
                                      "max_response_bytes)"},
    {"{\"limits\": [1]}", "\"limits\" must be an object with keys max_ids"},
    {"{\"limits\": {\"max_response_bytes\": 1.5}}", "\"limits.max_response_bytes\" in %s must be an integer, not a real number"},
    {"{\"bogus\": 1}", "%s: unknown key \"bogus\" (the keys are the options of serve with '_' for '-'"},
    {"{\"copy\": \"disk\"}", "\"copy\" in %s must be auto, memory or file, not 'disk'"},
    {"{\"copy\": true}", "\"copy\" in %s must be a string, not a boolean"},
    {"{\"copy\": \"memory\", \"copy_dir\": \"/tmp\"}", "\"copy_dir\" in %s is where file copies go: it needs the copy "
                                                   "medium file or auto, and \"copy\" in %s says memory"},
    {"{\"threds\": 4}", "%s: unknown key \"threds\"; did you mean \"threads\"?"},
    {"{\"threads\": \"4\"}", "\"threads\" in %s must be an integer, not a string"},
    {"{\"threads\": 0}", "\"threads\" in %s must be a whole number in [1, 256], got '0'"},
    {"{\"threads\": 100000}", "\"threads\" in %s must be a whole number in [1, 256], got '100000'"},
    {"{\"verify\": \"yes\"}", "\"verify\" in %s must be true or false, not a string"},
    {"{\"prefault\": 1}", "\"prefault\" in %s must be true or false, not an integer"},
    {"{\"socket\": 5}", "\"socket\" in %s must be a string, not an integer"},
    {"{\"listen\": \"\"}", "\"listen\" in %s is empty"},
    {"{\"threads\": 2, \"threads\": 3}", "duplicate object key"},
    {"[1, 2]", "must be a JSON object"},
    {"{\"threads\": 2", "line 1"},
};

Test(serve, refuses_bad_configuration_with_a_clear_message)
{
    char *log, *cfg = tu_path(dir, "bad.json");
    for (size_t i = 0; i < sizeof bad_configs / sizeof *bad_configs; i++) {
        tu_write(cfg, bad_configs[i].json, strlen(bad_configs[i].json));
        cr_assert_eq(tu_run(&log, "timeout 30 %s serve %s --socket %s --config %s", tu_bin(), data, sock, cfg), 1,
                     "config %s was accepted: %s", bad_configs[i].json, log);
        char want[1200];
        snprintf(want, sizeof want, bad_configs[i].want, cfg, cfg);
        cr_assert_not_null(strstr(log, want), "config %s: want \"%s\" in: %s", bad_configs[i].json, want, log);
        cr_assert_not_null(strstr(log, cfg), "config %s: the message does not name the file: %s", bad_configs[i].json,
                           log);
        free(log);
    }
    cr_assert_eq(tu_run(&log, "timeout 30 %s serve %s/nope --socket %s --metrics 127.0.0.1:0", tu_bin(), dir, sock), 1);
    cr_assert_not_null(strstr(log, "manifest.json"), "%s", log);
    free(log);
    cr_assert_eq(tu_run(&log, "timeout 30 %s serve %s --socket %s --metrics nonsense", tu_bin(), data, sock), 2);
    cr_assert_not_null(strstr(log, "--metrics 'nonsense': no ':PORT' (expected HOST:PORT"), "%s", log);
    free(log);
    cr_assert_eq(tu_run(&log, "timeout 30 %s serve %s --socket %s --copy disk", tu_bin(), data, sock), 2);
    cr_assert_not_null(strstr(log, "--copy must be auto, memory or file, not 'disk'"), "%s", log);
    free(log);
    cr_assert_eq(tu_run(&log, "timeout 30 %s serve %s --socket %s --copy memory --copy-dir /tmp", tu_bin(), data, sock),
                 2);
    cr_assert_not_null(strstr(log, "--copy-dir is where file copies go"), "%s", log);
    free(log);
    free(cfg);
}

Test(serve, a_good_configuration_file_is_used_and_the_command_line_wins)
{
    char *cfg = tu_path(dir, "good.json");
    const char *json = "{\"threads\": 2, \"verify\": true, \"limits\": {\"max_ids\": 7}, \"copy\": \"memory\"}";
    tu_write(cfg, json, strlen(json));
    server_t s;
    char extra[1200], *log_path = tu_path(dir, "good.log");
    snprintf(extra, sizeof extra, "--config %s --copy file --copy-dir %s 2>%s", cfg, dir, log_path);
    cr_assert_eq(start(&s, extra), 0);
    fs_client_t *c;
    char uri[300];
    snprintf(uri, sizeof uri, "unix://%s", sock);
    cr_assert_eq(fs_connect(uri, NULL, &c), FS_OK, "%s", fs_client_errstr(c));
    int64_t ids[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    fs_batch_t *b = NULL;
    cr_assert_eq(fs_gather(c, ids, 7, "feat", FS_DTYPE_INVALID, &b), FS_OK, "%s", fs_client_errstr(c));
    fs_batch_free(b);
    cr_assert_eq(fs_gather(c, ids, 8, "feat", FS_DTYPE_INVALID, &b), FS_ERR_RESOURCE, "limits.max_ids=7 not applied");
    cr_assert_not_null(strstr(fs_client_errstr(c), "7"), "%s", fs_client_errstr(c));
    fs_close(c);
    cr_assert_eq(stop(&s, SIGTERM), 0);
    char *log = tu_read(log_path, NULL), want[600];
    snprintf(want, sizeof want, "dataset copied into unnamed read-only files in %s", dir);
    cr_assert_not_null(strstr(log, want), "--copy file beats the file's \"copy\": \"memory\": %s", log);
    free(log), free(log_path);
    free(cfg);
}

Test(serve, a_second_server_on_a_live_socket_is_refused)
{
    server_t s;
    cr_assert_eq(start(&s, ""), 0);
    char *log;
    cr_assert_eq(tu_run(&log, "timeout 30 %s serve %s --socket %s --metrics 127.0.0.1:0", tu_bin(), data, sock), 1);
    cr_assert_not_null(strstr(log, "in use"), "%s", log);
    free(log);
    cr_assert_eq(stop(&s, SIGTERM), 0);
}

Test(serve, a_preset_places_data_on_simulated_gpus_and_trainers_read_it)
{
    server_t s;
    char *plan = tu_path(dir, "plan.bin"), extra[512];
    snprintf(extra, sizeof extra, "--topology nvlink-pairs --gpu-budget 0.2 --feature-first --save-plan %s", plan);
    cr_assert_eq(start(&s, extra), 0);
    char *log;
    cr_assert_eq(tu_run(&log, "%s/../examples/featstore-trainer unix://%s --batches 5 --batch 64 --fanouts 5,3 --device gpu:0",
                        FS_BIN_DIR, sock), 0, "%s", log);
    free(log);
    char *metrics = NULL, *line = NULL;
    for (int i = 0; i < 100 && !line; i++) {
        free(metrics);
        metrics = tu_http_get(s.metrics_port, "/metrics");
        if (strstr(metrics, "featstore_requests_total{method=\"SampleGather\",transport=\"unix\"} 5\n"))
            line = strstr(metrics, "featstore_feature_rows_read_total{reader=\"local\",tier=\"1\",kind=\"sim_device\",device=\"0\"}");
        else usleep(20000);
    }
    cr_assert_not_null(line, "%s", metrics);
    cr_assert_gt(atoll(strchr(line, '}') + 2), 0, "the trainer on gpu:0 read rows from its simulated GPU");
    free(metrics);
    cr_assert_eq(stop(&s, SIGTERM), 0);
    /* the saved plan reloads and serves the same placement */
    snprintf(extra, sizeof extra, "--topology nvlink-pairs --gpu-budget 0.2 --feature-first --plan %s", plan);
    cr_assert_eq(start(&s, extra), 0);
    cr_assert_eq(stop(&s, SIGTERM), 0);
    cr_assert_eq(tu_run(&log, "timeout 30 %s serve %s --socket %s --topology nope --metrics 127.0.0.1:0", tu_bin(), data, sock),
                 1);
    cr_assert_not_null(strstr(log, "nope"), "%s", log);
    free(log);
    cr_assert_eq(tu_run(&log, "timeout 30 %s serve %s --socket %s --gpu-budget 0.1", tu_bin(), data, sock), 2);
    cr_assert_not_null(strstr(log, "--gpu-budget shapes a placement: it needs --topology"), "%s", log);
    free(log);
    cr_assert_eq(tu_run(&log, "timeout 30 %s serve %s --socket %s --topology dgx1-v100 --plan %s --metrics 127.0.0.1:0",
                        tu_bin(), data, sock, plan), 1);
    cr_assert_not_null(strstr(log, "GPUs"), "a plan for another topology is refused: %s", log);
    free(log);
    free(plan);
}

/* The share of a reader's feature bytes from `source`, predicted or measured. */
static double share(const char *metrics, const char *kind, const char *reader, const char *source)
{
    char key[200];
    snprintf(key, sizeof key, "featstore_placement_%s_share{reader=\"%s\",source=\"%s\"} ", kind, reader, source);
    const char *p = strstr(metrics, key);
    cr_assert_not_null(p, "no %s in %s", key, metrics);
    return atof(p + strlen(key));
}

Test(serve, the_plans_prediction_sits_next_to_what_trainers_read)
{
    server_t s;
    cr_assert_eq(start(&s, "--topology nvlink-pairs --gpu-budget 0.2 --feature-first"), 0);
    char *log;
    cr_assert_eq(tu_run(&log, "%s/../examples/featstore-trainer unix://%s --batches 20 --device gpu:1", FS_BIN_DIR, sock),
                 0, "%s", log);
    free(log);
    char *metrics = NULL;
    for (int i = 0; i < 100; i++) {
        free(metrics);
        metrics = tu_http_get(s.metrics_port, "/metrics");
        if (strstr(metrics, "featstore_requests_total{method=\"SampleGather\",transport=\"unix\"} 20\n")) break;
        usleep(20000);
    }
    /* the trainer runs the workload the plan was costed with ([15,10,5] x 1024) */
    const char *src[] = {"local", "peer", "host"};
    double sum = 0;
    for (int k = 0; k < 3; k++) {
        double want = share(metrics, "predicted", "gpu1", src[k]), got = share(metrics, "measured", "gpu1", src[k]);
        cr_assert(fabs(want - got) < 0.03, "%s: predicted %.4f, measured %.4f", src[k], want, got);
        sum += got;
    }
    cr_assert(fabs(sum - 1) < 1e-3, "shares add up to 1");
    cr_assert_gt(share(metrics, "measured", "gpu1", "local"), 0.05, "gpu:1 reads its own copy");
    cr_assert_eq(share(metrics, "measured", "gpu0", "local"), 0, "nobody read as gpu:0");
    free(metrics);

    /* Info carries the same, per reader */
    fs_client_t *c;
    char uri[300];
    snprintf(uri, sizeof uri, "unix://%s", sock);
    cr_assert_eq(fs_connect(uri, NULL, &c), FS_OK, "%s", fs_client_errstr(c));
    fs_info_t *info;
    cr_assert_eq(fs_info(c, &info), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(info->num_readers, 4, "one entry per planned GPU");
    cr_assert_eq(info->readers[1].reader, 1);
    cr_assert_gt(info->readers[1].predicted_bytes[0], 0);
    cr_assert_gt(info->readers[1].measured_bytes[0] + info->readers[1].measured_bytes[2], 0);
    cr_assert_eq(info->readers[0].measured_bytes[0] + info->readers[0].measured_bytes[1] +
                 info->readers[0].measured_bytes[2], 0);
    fs_info_free(info);
    fs_close(c);
    cr_assert_eq(stop(&s, SIGTERM), 0);
}

/* featstore_placement_generation, or -1 when absent. */
static long generation_in(const char *metrics)
{
    const char *p = strstr(metrics, "\nfeatstore_placement_generation ");
    return p ? atol(p + strlen("\nfeatstore_placement_generation ")) : -1;
}

/* Mini-batch b of the workload plans are costed with: epochs of the
 * shuffled train split cut into batches of up to 1024 seeds. *n receives
 * the batch's size. */
static void epoch_batch(const fs_ids_t *train, int b, int64_t *seeds, int64_t *n)
{
    int64_t per_epoch = (train->n + 1023) / 1024, k = b % per_epoch, epoch = b / per_epoch;
    int64_t *order = malloc((size_t)train->n * 8);
    memcpy(order, train->ids, (size_t)train->n * 8);
    unsigned rng = (unsigned)epoch + 1;
    for (int64_t i = train->n - 1; i > 0; i--) {
        int64_t j = (int64_t)(rand_r(&rng) % (unsigned)(i + 1)), t = order[i];
        order[i] = order[j], order[j] = t;
    }
    *n = train->n - k * 1024 < 1024 ? train->n - k * 1024 : 1024;
    memcpy(seeds, order + k * 1024, (size_t)*n * 8);
    free(order);
}

/* n mini-batches of that workload ([15,10,5] uniform); the first one's
 * nodes and features are copied to *nodes / *feat when given. */
static void run_batches(fs_client_t *c, const fs_ids_t *train, int n, int64_t **nodes, int64_t *num_nodes, float **feat)
{
    fs_sample_req_t req = SAMPLE_REQ(.num_hops = 3, .fanout = {15, 10, 5});
    for (int b = 0; b < n; b++) {
        int64_t seeds[1024], ns;
        epoch_batch(train, b, seeds, &ns);
        req.seed = (uint64_t)b + 1;
        fs_batch_t *batch;
        cr_assert_eq(fs_sample_gather(c, seeds, ns, &req, "feat", FS_DTYPE_INVALID, &batch), FS_OK, "%s",
                     fs_client_errstr(c));
        if (b == 0 && nodes) {
            *num_nodes = batch->num_nodes;
            *nodes = malloc((size_t)batch->num_nodes * 8);
            *feat = malloc((size_t)batch->rows * (size_t)batch->dim * 4);
            memcpy(*nodes, batch->nodes, (size_t)batch->num_nodes * 8);
            memcpy(*feat, batch->features, (size_t)batch->rows * (size_t)batch->dim * 4);
        }
        fs_batch_free(batch);
    }
}

Test(serve, a_replan_switches_a_running_server_and_its_trainers_follow)
{
    server_t s;
    cr_assert_eq(start(&s, "--topology nvlink-pairs --gpu-budget 0.05 --feature-first"), 0);
    char uri[300], guri[64];
    snprintf(uri, sizeof uri, "unix://%s", sock);
    snprintf(guri, sizeof guri, "grpc://127.0.0.1:%d", s.grpc_port);
    fs_connect_opts_t as_gpu1 = {.struct_size = sizeof(fs_connect_opts_t), .device = "gpu:1"};
    fs_client_t *trainer, *admin, *remote;
    cr_assert_eq(fs_connect(uri, &as_gpu1, &trainer), FS_OK, "%s", fs_client_errstr(trainer));
    cr_assert_eq(fs_connect(uri, NULL, &admin), FS_OK);
    cr_assert_eq(fs_connect(guri, NULL, &remote), FS_OK, "%s", fs_client_errstr(remote));
    fs_ids_t *train;
    cr_assert_eq(fs_split(trainer, "train", &train), FS_OK);
    int64_t *nodes0, n0, *nodes1, n1;
    float *feat0, *feat1;
    run_batches(trainer, train, 20, &nodes0, &n0, &feat0);
    char *m = tu_metrics_with(s.metrics_port, "featstore_requests_total{method=\"SampleGather\",transport=\"unix\"} 20\n");
    cr_assert(fabs(share(m, "predicted", "gpu1", "host") - share(m, "measured", "gpu1", "host")) < 0.03);
    cr_assert_eq(generation_in(m), 1);
    double local_before = share(m, "predicted", "gpu1", "local");
    free(m);

    /* the new plan: four times the memory per GPU */
    fs_replan_opts_t more = {.struct_size = sizeof(fs_replan_opts_t), .gpu_budget = 0.2};
    uint64_t gen = 0;
    cr_assert_eq(fs_replan(admin, &more, &gen), FS_OK, "%s", fs_client_errstr(admin));
    cr_assert_eq(gen, 2);

    /* bad requests name the problem and change nothing */
#define REPLAN(...) {.struct_size = sizeof(fs_replan_opts_t), __VA_ARGS__}
    fs_replan_opts_t bad_hot = REPLAN(.hotness = "bogus"), bad_plan = REPLAN(.plan = "/nonexistent/plan.bin"),
                     bad_budget = REPLAN(.gpu_budget = 1.5), bad_order = REPLAN(.order = "sideways"),
                     bad_alpha = REPLAN(.alpha = "nvlink=2"), bad_reserve = REPLAN(.reserve = "lots");
#undef REPLAN
    cr_assert_eq(fs_replan(admin, &bad_hot, &gen), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(fs_client_errstr(admin), "bogus"), "%s", fs_client_errstr(admin));
    cr_assert_neq(fs_replan(admin, &bad_plan, &gen), FS_OK);
    cr_assert_not_null(strstr(fs_client_errstr(admin), "/nonexistent/plan.bin"), "%s", fs_client_errstr(admin));
    cr_assert_eq(fs_replan(admin, &bad_budget, &gen), FS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fs_replan(admin, &bad_order, &gen), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(fs_client_errstr(admin), "sideways"), "%s", fs_client_errstr(admin));
    cr_assert_eq(fs_replan(admin, &bad_alpha, &gen), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(fs_client_errstr(admin), "nvlink=2"), "%s", fs_client_errstr(admin));
    cr_assert_eq(fs_replan(admin, &bad_reserve, &gen), FS_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(fs_client_errstr(admin), "'lots'"), "%s", fs_client_errstr(admin));
    cr_assert_eq(fs_replan(remote, &more, &gen), FS_ERR_UNSUPPORTED, "administration stays on the server's machine");
    fs_info_t *info;
    cr_assert_eq(fs_info(remote, &info), FS_OK);
    cr_assert_eq(info->placement_generation, 2, "failed re-plans left generation 2 serving");
    fs_info_free(info);

    /* the connected trainer follows: same results, the new plan's traffic */
    run_batches(trainer, train, 20, &nodes1, &n1, &feat1);
    cr_assert_eq(n1, n0);
    cr_assert_arr_eq(nodes1, nodes0, (size_t)n0 * 8, "sampling does not depend on the placement");
    cr_assert_arr_eq(feat1, feat0, (size_t)n0 * 16 * 4, "rows read through the new plan are the same bytes");
    m = tu_metrics_with(s.metrics_port, "featstore_requests_total{method=\"SampleGather\",transport=\"unix\"} 40\n");
    cr_assert_eq(generation_in(m), 2);
    double local_after = share(m, "predicted", "gpu1", "local");
    cr_assert_gt(local_after, local_before + 0.05, "more memory, more local rows: %.3f -> %.3f", local_before, local_after);
    const char *src[] = {"local", "peer", "host"};
    for (int k = 0; k < 3; k++) {
        double p = share(m, "predicted", "gpu1", src[k]), got = share(m, "measured", "gpu1", src[k]);
        cr_assert(fabs(p - got) < 0.03, "after the re-plan, %s: predicted %.4f, measured %.4f", src[k], p, got);
    }
    cr_assert_not_null(strstr(m, "featstore_replans_total{result=\"ok\"} 1\n"), "%s", m);
    cr_assert_not_null(strstr(m, "featstore_replans_total{result=\"error\"} 5\n"), "%s", m); /* hotness, plan, order, alpha, reserve */
    free(m);

    /* gRPC results do not change either */
    fs_sample_req_t req = SAMPLE_REQ(.num_hops = 3, .fanout = {15, 10, 5}, .seed = 1);
    int64_t seeds[1024], ns;
    epoch_batch(train, 0, seeds, &ns);
    fs_batch_t *b;
    cr_assert_eq(fs_sample_gather(remote, seeds, ns, &req, "feat", FS_DTYPE_INVALID, &b), FS_OK);
    cr_assert_arr_eq(b->nodes, nodes0, (size_t)n0 * 8);
    cr_assert_arr_eq(b->features, feat0, (size_t)n0 * 16 * 4);
    fs_batch_free(b);

    /* the command line, and SIGHUP (re-plan with the current options) */
    char *log;
    cr_assert_eq(tu_run(&log, "%s replan %s --gpu-budget 0.1 --order auto --reserve 1K", tu_bin(), uri), 0, "%s", log);
    cr_assert_not_null(strstr(log, "generation 3"), "%s", log);
    free(log);
    cr_assert_eq(tu_run(&log, "%s replan %s --hotness nope", tu_bin(), uri), 1);
    cr_assert_not_null(strstr(log, "nope"), "%s", log);
    free(log);
    cr_assert_eq(tu_run(&log, "%s replan %s --feature-first --topology-first", tu_bin(), uri), 2);
    free(log);
    cr_assert_eq(tu_run(&log, "%s replan %s --alpha nvlink=7", tu_bin(), uri), 1);
    cr_assert_not_null(strstr(log, "nvlink=7"), "%s", log);
    free(log);
    /* alpha 1: every GPU of a pair holds the same rows, so nobody reads a peer */
    cr_assert_eq(tu_run(&log, "%s replan %s --alpha 1", tu_bin(), uri), 0, "%s", log);
    free(log);
    m = tu_metrics_with(s.metrics_port, "\nfeatstore_placement_generation 4\n");
    cr_assert_lt(share(m, "predicted", "gpu1", "peer"), 1e-12, "alpha 1 replicates: no peer reads predicted");
    free(m);
    kill(s.pid, SIGHUP);
    m = tu_metrics_with(s.metrics_port, "\nfeatstore_placement_generation 5\n");
    cr_assert_lt(share(m, "predicted", "gpu1", "peer"), 1e-12, "SIGHUP keeps the alpha the last re-plan set");
    free(m);
    run_batches(trainer, train, 2, NULL, NULL, NULL);
    m = tu_metrics_with(s.metrics_port, "featstore_requests_total{method=\"SampleGather\",transport=\"unix\"} 42\n");
    cr_assert_lt(share(m, "measured", "gpu1", "peer"), 1e-12, "and none measured");
    free(m);

    free(nodes0), free(feat0), free(nodes1), free(feat1);
    fs_ids_free(train);
    fs_close(trainer), fs_close(admin), fs_close(remote);
    cr_assert_eq(stop(&s, SIGTERM), 0);
}

/* ---- a dataset with many tables and splits ------------------------------------- */

#define WIDE_TABLES 20
#define WIDE_SPLITS 10
#define WIDE_NODES 50

/* Table k: dim k+1, float32 for even k and float16 for odd; row v holds
 * v*40+k+j (exact in both). Split k: the nodes v with v % 10 == k, in
 * descending order (so neither the order nor the length is a default). */
static char *make_wide_dataset(void)
{
    char *d = tu_path(dir, "wide");
    fs_writer_t *w;
    fs_error_t err = {0};
    cr_assert_eq(fs_writer_create(d, 0, &w, &err), FS_OK, "%s", err.msg);
    int64_t *ip, shape[2] = {WIDE_NODES + 1, 0};
    int32_t *ix;
    cr_assert_eq(fs_writer_array(w, FS_ROLE_INDPTR, NULL, FS_DTYPE_I64, 1, shape, (void **)&ip, &err), FS_OK);
    for (int v = 0; v <= WIDE_NODES; v++) ip[v] = v; /* a ring: v -> v+1 */
    shape[0] = WIDE_NODES;
    cr_assert_eq(fs_writer_array(w, FS_ROLE_INDICES, NULL, FS_DTYPE_I32, 1, shape, (void **)&ix, &err), FS_OK);
    for (int v = 0; v < WIDE_NODES; v++) ix[v] = (v + 1) % WIDE_NODES;
    for (int k = 0; k < WIDE_TABLES; k++) {
        char name[16];
        snprintf(name, sizeof name, "t%02d", k);
        fs_dtype_t dt = k % 2 ? FS_DTYPE_F16 : FS_DTYPE_F32;
        int64_t ts[2] = {WIDE_NODES, k + 1};
        void *t;
        cr_assert_eq(fs_writer_array(w, FS_ROLE_FEATURES, name, dt, 2, ts, &t, &err), FS_OK, "%s", err.msg);
        for (int v = 0; v < WIDE_NODES; v++)
            for (int j = 0; j <= k; j++) {
                float x = (float)(v * 40 + k + j); /* < 2048: exact in float16 */
                if (dt == FS_DTYPE_F32) ((float *)t)[v * (k + 1) + j] = x;
                else ((uint16_t *)t)[v * (k + 1) + j] = fs_f32_to_f16(x);
            }
    }
    for (int k = 0; k < WIDE_SPLITS; k++) {
        char name[16];
        snprintf(name, sizeof name, "split%d", k);
        int64_t ss[1] = {WIDE_NODES / WIDE_SPLITS}, *ids;
        cr_assert_eq(fs_writer_array(w, FS_ROLE_SPLIT, name, FS_DTYPE_I64, 1, ss, (void **)&ids, &err), FS_OK);
        for (int i = 0; i < ss[0]; i++) ids[i] = (ss[0] - 1 - i) * WIDE_SPLITS + k;
    }
    fs_writer_set_meta(w, "wide", WIDE_NODES, WIDE_NODES, 0, 0);
    cr_assert_eq(fs_writer_commit(w, &err), FS_OK, "%s", err.msg);
    return d;
}

static void check_wide(fs_client_t *c)
{
    const char *via = fs_client_transport(c);
    fs_info_t *info;
    cr_assert_eq(fs_info(c, &info), FS_OK, "%s: %s", via, fs_client_errstr(c));
    cr_assert_eq(info->num_tables, WIDE_TABLES, "%s: %zu tables", via, info->num_tables);
    cr_assert_eq(info->num_splits, WIDE_SPLITS, "%s: %zu splits", via, info->num_splits);
    int seen_table[WIDE_TABLES] = {0}, seen_split[WIDE_SPLITS] = {0};
    for (size_t i = 0; i < info->num_tables; i++) {
        const fs_table_info_t *t = &info->tables[i];
        int k;
        cr_assert_eq(sscanf(t->name, "t%d", &k), 1, "%s: table %s", via, t->name);
        cr_assert(k >= 0 && k < WIDE_TABLES && !seen_table[k]++, "%s: table %s twice or unknown", via, t->name);
        cr_assert_eq(t->dim, k + 1, "%s: %s", via, t->name);
        cr_assert_eq(t->rows, WIDE_NODES);
        cr_assert_eq(t->dtype, k % 2 ? FS_DTYPE_F16 : FS_DTYPE_F32, "%s: %s", via, t->name);
    }
    for (size_t i = 0; i < info->num_splits; i++) {
        int k;
        cr_assert_eq(sscanf(info->splits[i], "split%d", &k), 1, "%s: split %s", via, info->splits[i]);
        cr_assert(k >= 0 && k < WIDE_SPLITS && !seen_split[k]++, "%s: split %s", via, info->splits[i]);
        fs_ids_t *ids;
        cr_assert_eq(fs_split(c, info->splits[i], &ids), FS_OK, "%s: %s", via, fs_client_errstr(c));
        cr_assert_eq(ids->n, WIDE_NODES / WIDE_SPLITS);
        for (int64_t j = 0; j < ids->n; j++) cr_assert_eq(ids->ids[j], (ids->n - 1 - j) * WIDE_SPLITS + k);
        fs_ids_free(ids);
    }
    fs_info_free(info);
    /* and the last table's rows are served */
    int64_t ids[3] = {49, 0, 7};
    fs_batch_t *b;
    cr_assert_eq(fs_gather(c, ids, 3, "t19", FS_DTYPE_F32, &b), FS_OK, "%s: %s", via, fs_client_errstr(c));
    cr_assert_eq(b->kind, FS_BATCH_GATHER);
    cr_assert_eq(b->dim, 20);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 20; j++)
            cr_assert_float_eq(((const float *)b->features)[i * 20 + j], (float)(ids[i] * 40 + 19 + j), 0);
    fs_batch_free(b);
}

Test(serve, info_lists_every_table_and_split_over_both_transports)
{
    char *keep = data;
    data = make_wide_dataset();
    server_t s;
    cr_assert_eq(start(&s, ""), 0);
    char uri[320];
    fs_client_t *c;
    snprintf(uri, sizeof uri, "unix://%s", sock);
    cr_assert_eq(fs_connect(uri, NULL, &c), FS_OK, "%s", fs_client_errstr(c));
    check_wide(c);
    fs_close(c);
    snprintf(uri, sizeof uri, "grpc://127.0.0.1:%d", s.grpc_port);
    cr_assert_eq(fs_connect(uri, NULL, &c), FS_OK, "%s", fs_client_errstr(c));
    check_wide(c);
    fs_close(c);
    cr_assert_eq(stop(&s, SIGTERM), 0);
    free(data);
    data = keep;
}

/* ---- gRPC security ---------------------------------------------------------------- */

Test(serve, grpc_beyond_loopback_needs_tls_or_insecure)
{
    char *log;
    cr_assert_eq(tu_run(&log, "timeout 30 %s serve %s --socket %s --listen 0.0.0.0:0 --metrics 127.0.0.1:0", tu_bin(),
                        data, sock), 2, "%s", log);
    cr_assert(strstr(log, "--listen '0.0.0.0:0' is not a loopback address") && strstr(log, "--tls-cert and --tls-key") &&
              strstr(log, "--insecure"), "%s", log);
    free(log);
    const struct {
        const char *args, *want;
        int rc;
    } bad[] = {
        {"--listen 127.0.0.1:0 --tls-cert x.pem", "--tls-cert and --tls-key go together", 2},
        {"--listen 127.0.0.1:0 --tls-client-ca ca.pem", "--tls-client-ca (mTLS) needs --tls-cert and --tls-key", 2},
        {"--listen 127.0.0.1:0 --grpc-max-calls 0", "--grpc-max-calls must be a whole number in [1, 1000000]", 2},
        {"--token-file t", "--token-file is a gRPC option: it needs --listen", 2},
        {"--request-timeout 5s", "--request-timeout is a gRPC option: it needs --listen", 2},
        {"--listen 127.0.0.1:0 --request-timeout 0", "--request-timeout must be above 0", 2},
        {"--listen 127.0.0.1:0 --request-timeout 2h", "--request-timeout must be a duration", 2},
        {"--listen 127.0.0.1:0 --token-file /nonexistent/t", "token file '/nonexistent/t'", 1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(tu_run(&log, "timeout 30 %s serve %s --socket %s --metrics 127.0.0.1:0 %s", tu_bin(), data, sock,
                            bad[i].args), bad[i].rc, "%s: %s", bad[i].args, log);
        cr_assert(strstr(log, bad[i].want), "%s: want \"%s\" in: %s", bad[i].args, bad[i].want, log);
        free(log);
    }
    /* --insecure serves there anyway, and says what that means */
    char *errlog = tu_path(dir, "insecure.log"), extra[600];
    snprintf(extra, sizeof extra, "--listen 0.0.0.0:0 --insecure 2>%s", errlog);
    server_t s;
    cr_assert_eq(start(&s, extra), 0);
    char uri[64];
    snprintf(uri, sizeof uri, "grpc://127.0.0.1:%d", s.grpc_port);
    fs_client_t *c;
    fs_info_t *info;
    cr_assert_eq(fs_connect(uri, NULL, &c), FS_OK, "%s", fs_client_errstr(c));
    cr_assert_eq(fs_info(c, &info), FS_OK, "%s", fs_client_errstr(c));
    fs_info_free(info);
    fs_close(c);
    cr_assert_eq(stop(&s, SIGTERM), 0);
    char *err = tu_read(errlog, NULL);
    cr_assert(strstr(err, "warning: --insecure: gRPC on 0.0.0.0:0 is plaintext"), "%s", err);
    free(err), free(errlog);
}

/* Two batches hold the same sample and rows, bit for bit. */
static void assert_same_batch(const fs_batch_t *a, const fs_batch_t *b)
{
    cr_assert_eq(a->kind, b->kind);
    cr_assert_eq(a->num_hops, b->num_hops);
    cr_assert_eq(a->num_nodes, b->num_nodes);
    cr_assert_eq(a->num_seeds, b->num_seeds);
    cr_assert(a->num_nodes == 0 || memcmp(a->nodes, b->nodes, (size_t)a->num_nodes * 8) == 0, "nodes differ");
    cr_assert(a->num_seeds == 0 || memcmp(a->seed_local, b->seed_local, (size_t)a->num_seeds * 8) == 0);
    for (int h = 0; h < a->num_hops; h++) {
        const fs_block_t *x = &a->blocks[h], *y = &b->blocks[h];
        cr_assert_eq(x->num_edges, y->num_edges, "hop %d", h);
        cr_assert_eq(x->num_dst, y->num_dst, "hop %d", h);
        cr_assert(memcmp(x->dst_offsets, y->dst_offsets, (size_t)(x->num_dst + 1) * 8) == 0, "hop %d", h);
        cr_assert(x->num_edges == 0 || (memcmp(x->edge_dst, y->edge_dst, (size_t)x->num_edges * 8) == 0 &&
                                        memcmp(x->edge_src, y->edge_src, (size_t)x->num_edges * 8) == 0), "hop %d", h);
    }
    cr_assert_eq(a->rows, b->rows);
    cr_assert_eq(a->dim, b->dim);
    cr_assert_eq(a->dtype, b->dtype);
    size_t bytes = (size_t)a->rows * (size_t)a->dim * fs_dtype_size(a->dtype);
    cr_assert(bytes == 0 || memcmp(a->features, b->features, bytes) == 0, "rows differ");
}

Test(serve, grpcs_with_a_token_gives_the_unix_results_bit_for_bit)
{
    if (tu_run(NULL, "command -v openssl") != 0) cr_skip_test("the openssl command is missing (Debian: openssl)");
    char *pki = tu_path(dir, "pki"), *token = tu_path(dir, "token"), *log, extra[1200];
    cr_assert_eq(tu_run(&log, "sh %s/make_test_certs.sh %s", FS_TESTS_LIB_DIR, pki), 0, "%s", log);
    free(log);
    tu_write(token, "tok-3e1f\n", 9);
    snprintf(extra, sizeof extra, "--tls-cert %s/server.pem --tls-key %s/server.key --token-file %s", pki, pki, token);
    server_t s;
    cr_assert_eq(start(&s, extra), 0);
    char unix_uri[300], grpcs_uri[64], ca[600];
    snprintf(unix_uri, sizeof unix_uri, "unix://%s", sock);
    snprintf(grpcs_uri, sizeof grpcs_uri, "grpcs://127.0.0.1:%d", s.grpc_port);
    snprintf(ca, sizeof ca, "%s/ca.pem", pki);
    fs_connect_opts_t o = FS_CONNECT_OPTS_INIT;
    o.tls_ca_file = ca, o.token = "tok-3e1f";
    fs_client_t *u, *g;
    cr_assert_eq(fs_connect(unix_uri, &o, &u), FS_OK, "unix:// ignores the TLS fields: %s", fs_client_errstr(u));
    cr_assert_eq(fs_connect(grpcs_uri, &o, &g), FS_OK, "%s", fs_client_errstr(g));
    fs_ids_t *tu = NULL, *tg = NULL;
    cr_assert_eq(fs_split(u, "train", &tu), FS_OK, "%s", fs_client_errstr(u));
    cr_assert_eq(fs_split(g, "train", &tg), FS_OK, "%s", fs_client_errstr(g));
    cr_assert_eq(tu->n, tg->n);
    cr_assert(memcmp(tu->ids, tg->ids, (size_t)tu->n * 8) == 0, "split ids differ");
    int64_t n = tu->n < 512 ? tu->n : 512;
    fs_sample_req_t req = SAMPLE_REQ(.num_hops = 2, .fanout = {10, 5}, .seed = 9);
    for (int k = 0; k < 2; k++) {
        fs_batch_t *a, *b;
        cr_assert_eq(fs_sample_gather(u, tu->ids, n, &req, "feat", FS_DTYPE_F32, &a), FS_OK, "%s", fs_client_errstr(u));
        cr_assert_eq(fs_sample_gather(g, tu->ids, n, &req, "feat", FS_DTYPE_F32, &b), FS_OK, "%s", fs_client_errstr(g));
        assert_same_batch(a, b);
        fs_batch_free(a), fs_batch_free(b);
        cr_assert_eq(fs_gather(u, tu->ids, n, "feat", FS_DTYPE_F32, &a), FS_OK, "%s", fs_client_errstr(u));
        cr_assert_eq(fs_gather(g, tu->ids, n, "feat", FS_DTYPE_F32, &b), FS_OK, "%s", fs_client_errstr(g));
        assert_same_batch(a, b);
        fs_batch_free(a), fs_batch_free(b);
        req.seed++;
    }
    fs_ids_free(tu), fs_ids_free(tg);
    fs_close(u), fs_close(g);
    /* a wrong token is told without showing either token; plaintext fails cleanly */
    o.token = "tok-wrong";
    fs_info_t *info;
    cr_assert_eq(fs_connect(grpcs_uri, &o, &g), FS_OK, "%s", fs_client_errstr(g));
    cr_assert_eq(fs_info(g, &info), FS_ERR_PERMISSION);
    cr_assert(strstr(fs_client_errstr(g), "not this server's") && !strstr(fs_client_errstr(g), "tok-"), "%s",
              fs_client_errstr(g));
    fs_close(g);
    char plain[64];
    snprintf(plain, sizeof plain, "grpc://127.0.0.1:%d", s.grpc_port);
    cr_assert_eq(fs_connect(plain, NULL, &g), FS_ERR_UNAVAILABLE, "%s", fs_client_errstr(g));
    fs_close(g);
    /* the CLI, like any program, takes TLS and the token from the environment */
    cr_assert_eq(tu_run(&log, "FEATSTORE_TLS_CA=%s FEATSTORE_TOKEN=tok-3e1f %s stats %s", ca, tu_bin(), grpcs_uri), 0,
                 "%s", log);
    cr_assert(strstr(log, "featstore_grpc_calls_refused_total{reason=\"unauthenticated\"} 1\n"), "%s", log);
    cr_assert(strstr(log, "featstore_requests_total{method=\"SampleGather\",transport=\"grpc\"} 2\n"), "%s", log);
    free(log);
    cr_assert_eq(stop(&s, SIGTERM), 0);
    free(pki), free(token);
}

/* A raw gRPC log line: "E1129 10:31:02.120 4211 file.cc:12] ..." (severity, MMDD, time). */
static int is_raw_grpc_line(const char *line)
{
    return strchr("DIE", line[0]) && strspn(line + 1, "0123456789") == 4 && line[5] == ' ' &&
           strspn(line + 6, "0123456789") == 2 && line[8] == ':';
}

Test(serve, grpc_log_lines_go_through_featstores_log)
{
    if (tu_run(NULL, "command -v openssl") != 0) cr_skip_test("the openssl command is missing (Debian: openssl)");
    char *pki = tu_path(dir, "pki"), *errlog = tu_path(dir, "tls.log"), *log, extra[1200], plain[64];
    cr_assert_eq(tu_run(&log, "sh %s/make_test_certs.sh %s", FS_TESTS_LIB_DIR, pki), 0, "%s", log);
    free(log);
    snprintf(extra, sizeof extra, "--tls-cert %s/server.pem --tls-key %s/server.key 2>%s", pki, pki, errlog);
    server_t s;
    cr_assert_eq(start(&s, extra), 0);
    snprintf(plain, sizeof plain, "grpc://127.0.0.1:%d", s.grpc_port);
    fs_client_t *g;
    fs_info_t *info;
    cr_assert_neq(fs_connect(plain, NULL, &g) == FS_OK && fs_info(g, &info) == FS_OK, 1, "plaintext on a TLS port");
    fs_close(g);
    cr_assert_eq(stop(&s, SIGTERM), 0);
    char *text = tu_read(errlog, NULL), *save = NULL;
    cr_assert_not_null(strstr(text, "featstore: error: grpc: Handshake failed"), "gRPC's line, as featstore's: %s",
                       text);
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        cr_assert(!is_raw_grpc_line(line), "a raw gRPC line on the server's stderr: %s", line);
    free(text), free(errlog), free(pki);
}

/* s with its first `from` (which must be there) replaced by `to`, heap. */
static char *replaced(const char *s, const char *from, const char *to)
{
    const char *at = strstr(s, from);
    cr_assert_not_null(at, "no \"%s\" in: %s", from, s);
    size_t n = strlen(s) - strlen(from) + strlen(to) + 1;
    char *out = malloc(n);
    snprintf(out, n, "%.*s%s%s", (int)(at - s), s, to, at + strlen(from));
    return out;
}

Test(serve, the_tls_recipe_of_serving_md_works_as_written)
{
    if (tu_run(NULL, "command -v openssl") != 0) cr_skip_test("the openssl command is missing (Debian: openssl)");
    char *recipe = tu_doc_block("serving.md", "**TLS: a CA and a server certificate.**", "sh");
    char *a = replaced(recipe, "NAME=feat1.example.org\n", "NAME=localhost\n");
    char *b = replaced(a, "IP=10.0.0.5\n", "IP=127.0.0.1\n");
    char *pki = tu_path(dir, "recipe"), *script = tu_path(dir, "recipe.sh"), *log, extra[1200];
    tu_write(script, b, strlen(b));
    cr_assert_eq(tu_run(&log, "mkdir -p %s && cd %s && sh -e %s", pki, pki, script), 0, "%s", log);
    free(log);
    snprintf(extra, sizeof extra, "--tls-cert %s/server.pem --tls-key %s/server.key --token-file %s/token", pki, pki, pki);
    server_t s;
    cr_assert_eq(start(&s, extra), 0);
    char ca[600], *token_path = tu_path(pki, "token"), *token = tu_read(token_path, NULL);
    token[strcspn(token, "\n")] = '\0';
    snprintf(ca, sizeof ca, "%s/ca.pem", pki);
    fs_connect_opts_t o = FS_CONNECT_OPTS_INIT;
    o.tls_ca_file = ca, o.token = token;
    const char *hosts[] = {"localhost", "127.0.0.1"}; /* the subjectAltName's DNS name and IP address */
    for (int i = 0; i < 2; i++) {
        char uri[64];
        fs_client_t *g;
        fs_info_t *info;
        snprintf(uri, sizeof uri, "grpcs://%s:%d", hosts[i], s.grpc_port);
        cr_assert_eq(fs_connect(uri, &o, &g), FS_OK, "%s: %s", uri, fs_client_errstr(g));
        cr_assert_eq(fs_info(g, &info), FS_OK, "%s: %s", uri, fs_client_errstr(g));
        fs_info_free(info);
        fs_close(g);
    }
    /* the trainer's side, as the doc writes it */
    char *client = tu_doc_block("serving.md", "with a copy of `ca.pem`", "sh"), port[64], *bin = strdup(tu_bin());
    snprintf(port, sizeof port, "grpcs://localhost:%d", s.grpc_port);
    char *line = replaced(client, "grpcs://feat1.example.org:50051", port);
    tu_write(script, line, strlen(line));
    *strrchr(bin, '/') = '\0';
    cr_assert_eq(tu_run(&log, "cd %s && PATH=%s:$PATH sh -e %s", pki, bin, script), 0, "%s", log);
    cr_assert_not_null(strstr(log, "featstore_requests_total"), "%s", log);
    free(log);
    cr_assert_eq(stop(&s, SIGTERM), 0);
    free(recipe), free(a), free(b), free(pki), free(script), free(token_path), free(token), free(client), free(line);
    free(bin);
}
