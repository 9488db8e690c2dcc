/* grpc_fixture.h — what the test_grpc_* suites share: one served dataset
 * behind an in-process gRPC server on an ephemeral port, clients of it, the
 * engines run in-process to compare answers with bit for bit, raw gRPC calls
 * and the server's metrics. Compiled into each of those suites
 * (tests/integration/grpc/CMakeLists.txt). Every test starts its own server (Criterion runs
 * each in a fresh process) and never asserts a timing. */
#ifndef FS_GRPC_FIXTURE_H
#define FS_GRPC_FIXTURE_H

#include <grpc/grpc.h>
#include <stdint.h>

#include "engine.h"
#include "featstore/client.h"
#include "grpc_server.h"
#include "metrics.h"
#include "store.h"

/* One served dataset: generated, opened, and behind a gRPC server. */
typedef struct {
    char *dir, *data;
    fs_dataset_t *ds;
    fs_store_t *store;
    fs_engine_t *engine;
    fs_metrics_t *metrics;
    fs_grpc_server_t *server;
    int port;
    char uri[64];
} env_t;

/* go: the server's options (NULL: plaintext, 2 workers); go->listen is set here. */
void env_open_with(env_t *e, fs_dtype_t dtype, int64_t dim, const fs_limits_t *limits,
                   const fs_grpc_server_opts_t *go);
void env_open(env_t *e, fs_dtype_t dtype, int64_t dim, const fs_limits_t *limits);
void env_close(env_t *e);
/* A grpc:// connection to e's server, which must succeed. */
fs_client_t *connect_to(const env_t *e);
/* n ids in [0, bound), with repeats, deterministic; the caller frees. */
int64_t *some_ids(int64_t n, int64_t bound, uint64_t salt);
/* The batch's sample part equals an in-process result. */
void assert_same_sample(const fs_batch_t *b, const fs_sample_result_t *r);
/* The CPU sampler on e's store, as the server runs it; must succeed. */
void sample_in_process(const env_t *e, fs_sampler_t *s, const int64_t *seeds, int64_t n,
                       const fs_sample_req_t *req, fs_sample_result_t *res);
/* Rows as the store serves them in-process; the caller frees. */
void *gather_in_process(const env_t *e, const char *table, const int64_t *ids, int64_t n, fs_dtype_t dt,
                        size_t row_bytes);
/* A call made with gRPC alone: arbitrary bytes to any method (tu_grpc_call). */
grpc_status_code raw_call(int port, const char *method, const void *payload, size_t len, char *details,
                          size_t details_size);
/* A metric's value (the first line starting with `key `), -1 if absent. */
long long metric(fs_metrics_t *m, const char *key);

#endif
