/* local_fixture.c — see local_fixture.h. */
#include "local_fixture.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fs_local.h"
#include "gen.h"
#include "test_util.h"

char *dir, sock[256], uri[300];
fs_dataset_t *ds;
fs_store_t *store;
fs_engine_t *engine;
fs_metrics_t *metrics;
fs_local_server_t *server;

/* Starts the unix:// transport for `engine` on path, speaking local
 * protocol 6.minor (lower only to stand in for an older server). */
fs_status_t serve_on(const char *path, unsigned minor, fs_error_t *err)
{
    fs_local_server_opts_t o;
    fs_local_server_defaults(&o);
    o.socket_path = path, o.protocol_minor = minor;
    return fs_local_server_start(&o, engine, metrics, &server, err);
}

void start_server(const fs_limits_t *limits)
{
    fs_error_t err = {0};
    cr_assert_eq(fs_store_create(ds, &store, &err), FS_OK);
    cr_assert_eq(fs_engine_create(ds, store, limits, &engine, &err), FS_OK);
    metrics = fs_metrics_create(ds, store);
    cr_assert_eq(serve_on(sock, FS_LOCAL_MINOR, &err), FS_OK, "%s", err.msg);
}

void setup(void)
{
    signal(SIGPIPE, SIG_IGN);
    dir = tu_mkdtemp();
    fs_error_t err = {0};
    fs_rmat_opts_t g;
    fs_rmat_defaults(&g);
    char *out = tu_path(dir, "g");
    g.out_dir = out, g.scale = 12, g.edge_factor = 8, g.dim = 32, g.edges.symmetrize = 1;
    cr_assert_eq(fs_gen_rmat(&g, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_dataset_open(out, 0, 1, &ds, &err), FS_OK, "%s", err.msg);
    snprintf(sock, sizeof sock, "%s/fs.sock", dir);
    snprintf(uri, sizeof uri, "unix://%s", sock);
    start_server(NULL);
    free(out);
}

void teardown(void)
{
    fs_local_server_stop(server);
    fs_metrics_destroy(metrics);
    fs_engine_destroy(engine);
    fs_store_destroy(store);
    fs_dataset_close(ds);
    tu_rm_rf(dir);
    free(dir);
}

fs_client_t *connect_ok(void)
{
    fs_client_t *c;
    fs_status_t st = fs_connect(uri, NULL, &c);
    cr_assert_eq(st, FS_OK, "connect: %s", fs_client_errstr(c));
    return c;
}

fs_sample_req_t req3(uint64_t seed)
{
    return SAMPLE_REQ(.num_hops = 3, .fanout = {10, 5, 3}, .seed = seed, .want_edge_ids = 1);
}

void seeds_for(int64_t *seeds, int n, int salt)
{
    for (int i = 0; i < n; i++) seeds[i] = ((int64_t)i * 7919 + salt * 104729) % ds->num_nodes;
}

/* Compares a batch with the engines run right here; returns 0 if identical. */
int differs(const fs_batch_t *b, const int64_t *seeds, int n, const fs_sample_req_t *req)
{
    fs_sampler_t *s;
    fs_error_t err = {0};
    fs_sampler_create(&s, &err);
    fs_csr_view_t g;
    fs_csr_view_init(&g, ds->num_nodes, ds->indptr, ds->indices, ds->index_dtype, ds->edge_weights);
    fs_sample_result_t r;
    int bad = fs_sample_cpu(s, &g, seeds, n, req, &r, NULL, &err) != FS_OK;
    bad |= r.num_nodes != b->num_nodes || memcmp(r.nodes, b->nodes, 8 * (size_t)r.num_nodes) != 0;
    bad |= memcmp(r.seed_local, b->seed_local, 8 * (size_t)n) != 0;
    for (int h = 0; !bad && h < req->num_hops; h++) {
        const fs_block_t *x = &r.block[h], *y = &b->blocks[h];
        size_t eb = 8 * (size_t)x->num_edges;
        bad |= x->num_edges != y->num_edges || x->num_dst != y->num_dst || x->num_src != y->num_src;
        bad |= !bad && (memcmp(x->edge_src, y->edge_src, eb) || memcmp(x->edge_dst, y->edge_dst, eb) ||
                        memcmp(x->edge_ids, y->edge_ids, eb) ||
                        memcmp(x->dst_offsets, y->dst_offsets, 8 * (size_t)(x->num_dst + 1)));
    }
    if (!bad && b->features) { /* features[i] must be the row of nodes[i] */
        const fs_table_t *t = &ds->tables[0];
        for (int64_t i = 0; i < b->num_nodes && !bad; i++)
            bad |= memcmp((const char *)b->features + i * t->row_bytes,
                          (const char *)t->data + b->nodes[i] * t->row_bytes, t->row_bytes) != 0;
    }
    fs_sampler_destroy(s);
    return bad;
}

/* A bare socket to the server, for speaking the protocol by hand. */
int raw_connect(void)
{
    int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    strcpy(a.sun_path, sock);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}
