/* local_fixture.h — what the test_local_* suites share: a generated R-MAT
 * dataset served over unix:// by a server in the test's own process, made
 * afresh for each test (TestSuite(local, .init = setup, .fini = teardown)),
 * clients of it, and their batches checked against the engines run right
 * here. Compiled into each of those suites (tests/integration/local/CMakeLists.txt). */
#ifndef FS_LOCAL_FIXTURE_H
#define FS_LOCAL_FIXTURE_H

#include <stdint.h>

#include "engine.h"
#include "featstore/client.h"
#include "local.h"
#include "metrics.h"
#include "store.h"

/* The served dataset and what serves it; a test may stop and replace them. */
extern char *dir, sock[256], uri[300];
extern fs_dataset_t *ds;
extern fs_store_t *store;
extern fs_engine_t *engine;
extern fs_metrics_t *metrics;
extern fs_local_server_t *server;

/* Starts the unix:// transport for `engine` on path, speaking local
 * protocol 6.minor (lower only to stand in for an older server). */
fs_status_t serve_on(const char *path, unsigned minor, fs_error_t *err);
/* A store and an engine (`limits`; NULL: the defaults) on ds, served on sock. */
void start_server(const fs_limits_t *limits);
/* The suite's .init and .fini: the dataset generated and served, then all of it gone. */
void setup(void);
void teardown(void);
/* A unix:// connection to the server, which must succeed. */
fs_client_t *connect_ok(void);
/* 3 hops (fanouts 10, 5, 3) with edge ids. */
fs_sample_req_t req3(uint64_t seed);
/* n seeds spread over the graph, different for each salt. */
void seeds_for(int64_t *seeds, int n, int salt);
/* Compares a batch with the engines run right here; returns 0 if identical. */
int differs(const fs_batch_t *b, const int64_t *seeds, int n, const fs_sample_req_t *req);
/* A bare socket to the server, for speaking the protocol by hand. */
int raw_connect(void);

#endif
