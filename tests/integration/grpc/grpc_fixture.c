/* grpc_fixture.c — see grpc_fixture.h. */
#include "grpc_fixture.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "test_util.h"

/* go: the server's options (NULL: plaintext, 2 workers); go->listen is set here. */
void env_open_with(env_t *e, fs_dtype_t dtype, int64_t dim, const fs_limits_t *limits,
                   const fs_grpc_server_opts_t *go)
{
    memset(e, 0, sizeof *e);
    fs_error_t err = {0};
    e->dir = tu_mkdtemp();
    e->data = tu_path(e->dir, "g");
    fs_rmat_opts_t g;
    fs_rmat_defaults(&g);
    g.out_dir = e->data, g.scale = 11, g.edge_factor = 8, g.dim = dim, g.dtype = dtype, g.edges.symmetrize = 1;
    g.threads = 1;
    cr_assert_eq(fs_gen_rmat(&g, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_dataset_open(e->data, 0, 1, &e->ds, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_store_create(e->ds, &e->store, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_engine_create(e->ds, e->store, limits, &e->engine, &err), FS_OK, "%s", err.msg);
    e->metrics = fs_metrics_create(e->ds, e->store);
    fs_grpc_server_opts_t o;
    if (go) o = *go;
    else fs_grpc_server_defaults(&o), o.threads = 2;
    o.listen = "127.0.0.1:0";
    cr_assert_eq(fs_grpc_server_start_opts(&o, e->engine, e->metrics, &e->server, &e->port, &err), FS_OK, "%s",
                 err.msg);
    cr_assert_gt(e->port, 0);
    snprintf(e->uri, sizeof e->uri, "grpc://127.0.0.1:%d", e->port);
}

void env_open(env_t *e, fs_dtype_t dtype, int64_t dim, const fs_limits_t *limits)
{
    env_open_with(e, dtype, dim, limits, NULL);
}

void env_close(env_t *e)
{
    fs_grpc_server_stop(e->server);
    fs_metrics_destroy(e->metrics);
    fs_engine_destroy(e->engine);
    fs_store_destroy(e->store);
    fs_dataset_close(e->ds);
    tu_rm_rf(e->dir);
    free(e->data);
    free(e->dir);
}

fs_client_t *connect_to(const env_t *e)
{
    fs_client_t *c;
    fs_status_t st = fs_connect(e->uri, NULL, &c);
    cr_assert_eq(st, FS_OK, "connect %s: %s", e->uri, fs_client_errstr(c));
    cr_assert_str_eq(fs_client_transport(c), "grpc");
    return c;
}

/* n ids in [0, bound), with repeats, deterministic. */
int64_t *some_ids(int64_t n, int64_t bound, uint64_t salt)
{
    int64_t *ids = malloc(sizeof *ids * (size_t)(n ? n : 1));
    uint64_t x = 0x9e3779b97f4a7c15ULL ^ salt;
    for (int64_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        ids[i] = (int64_t)(x % (uint64_t)bound);
    }
    return ids;
}

static void assert_i64_eq(const int64_t *got, const int64_t *want, int64_t n, const char *what)
{
    cr_assert(n == 0 || (got && want), "%s: missing array", what);
    if (n > 0) cr_assert(memcmp(got, want, (size_t)n * 8) == 0, "%s differs", what);
}

/* The batch's sample part equals an in-process result. */
void assert_same_sample(const fs_batch_t *b, const fs_sample_result_t *r)
{
    cr_assert_eq(b->num_hops, r->num_hops);
    cr_assert_eq(b->num_nodes, r->num_nodes);
    cr_assert_eq(b->num_seeds, r->num_seeds);
    assert_i64_eq(b->nodes, r->nodes, r->num_nodes, "nodes");
    assert_i64_eq(b->seed_local, r->seed_local, r->num_seeds, "seed_local");
    for (int h = 0; h < r->num_hops; h++) {
        const fs_block_t *x = &b->blocks[h], *y = &r->block[h];
        cr_assert_eq(x->num_dst, y->num_dst, "hop %d", h);
        cr_assert_eq(x->num_src, y->num_src, "hop %d", h);
        cr_assert_eq(x->num_edges, y->num_edges, "hop %d", h);
        assert_i64_eq(x->dst_offsets, y->dst_offsets, y->num_dst + 1, "dst_offsets");
        assert_i64_eq(x->edge_dst, y->edge_dst, y->num_edges, "edge_dst");
        assert_i64_eq(x->edge_src, y->edge_src, y->num_edges, "edge_src");
        cr_assert_eq(x->edge_ids != NULL, y->edge_ids != NULL, "hop %d: edge ids present on one side only", h);
        if (y->edge_ids) assert_i64_eq(x->edge_ids, y->edge_ids, y->num_edges, "edge_ids");
    }
}

void sample_in_process(const env_t *e, fs_sampler_t *s, const int64_t *seeds, int64_t n,
                       const fs_sample_req_t *req, fs_sample_result_t *res)
{
    fs_csr_view_t g;
    fs_store_csr_view(e->store, FS_READER_CPU, &g);
    fs_error_t err = {0};
    cr_assert_eq(fs_sample_cpu(s, &g, seeds, n, req, res, NULL, &err), FS_OK, "%s", err.msg);
}

/* Rows as the store serves them in-process. */
void *gather_in_process(const env_t *e, const char *table, const int64_t *ids, int64_t n, fs_dtype_t dt,
                        size_t row_bytes)
{
    void *out = malloc(row_bytes * (size_t)(n ? n : 1));
    fs_error_t err = {0};
    cr_assert_eq(fs_store_gather(e->store, table, FS_READER_CPU, ids, n, dt, out, NULL, &err), FS_OK, "%s", err.msg);
    return out;
}

/* A call made with gRPC alone: arbitrary bytes to any method (tu_grpc_call). */
grpc_status_code raw_call(int port, const char *method, const void *payload, size_t len, char *details,
                          size_t details_size)
{
    return (grpc_status_code)tu_grpc_call(port, method, payload, len, details, details_size, NULL);
}

/* A metric's value (the first line starting with `key `), -1 if absent. */
long long metric(fs_metrics_t *m, const char *key)
{
    char *text = fs_metrics_render(m), pat[256];
    snprintf(pat, sizeof pat, "\n%s ", key);
    const char *p = strstr(text, pat);
    long long v = p ? strtoll(p + strlen(pat), NULL, 10) : -1;
    free(text);
    return v;
}
