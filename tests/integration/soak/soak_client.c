/* soak_client.c — one trainer of the soak test (scripts/soak.sh): it samples
 * and gathers for as long as it runs and checks every batch against its own
 * copy of the dataset, read once at start from a pristine directory that
 * the soak never touches (the served one is truncated and replaced on
 * purpose). Linked to the public API only.
 *
 *   soak_client URI PRISTINE_DATASET_DIR SEED
 *
 * Every batch: each sampled edge must be an edge of the graph (the source's
 * id in the destination's row), every seed must map to itself, and each
 * gathered row must equal the dataset's row byte for byte. When the server
 * goes away (a restart) it reconnects by itself, with back-off, for as long
 * as it runs. Output, one flushed line each (the driver counts them, so a
 * client killed with SIGKILL loses nothing it already said):
 *
 *   OK <batches so far>          every 20 batches
 *   WRONG <what>                 a batch that disagrees with the dataset
 *   RECONNECT <status>           a new connection after a failure
 *   ERROR <status> <message>     a call that failed for another reason
 *
 * Runs until SIGTERM; exits 0. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "featstore/client.h"

typedef struct {
    size_t elem;           /* bytes per element */
    int64_t count;         /* elements */
    unsigned char *data;   /* malloc'd copy */
} array_t;

typedef struct {
    array_t indptr, indices, feat;
    int64_t num_nodes, dim;
} graph_t;

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

/* A whole .npy file into memory: header checked just enough to find the
 * element size and count (the dataset's own reader validated the file). */
static int load_npy(const char *dir, const char *name, array_t *a)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    unsigned char head[10];
    if (fread(head, 1, 10, f) != 10 || memcmp(head, "\x93NUMPY", 6) != 0 || head[6] != 1) return fclose(f), -1;
    size_t hlen = head[8] | (size_t)head[9] << 8;
    char *h = calloc(1, hlen + 1);
    if (!h || fread(h, 1, hlen, f) != hlen) return free(h), fclose(f), -1;
    const char *d = strstr(h, "'descr': '");
    a->elem = d ? (size_t)atoi(d + 12) : 0;
    fseek(f, 0, SEEK_END);
    long bytes = ftell(f) - (long)(10 + hlen);
    fseek(f, (long)(10 + hlen), SEEK_SET);
    a->count = a->elem ? bytes / (long)a->elem : 0;
    a->data = malloc(bytes > 0 ? (size_t)bytes : 1);
    int ok = a->elem && a->data && fread(a->data, 1, (size_t)bytes, f) == (size_t)bytes;
    free(h);
    fclose(f);
    return ok ? 0 : -1;
}

static int64_t at(const array_t *a, int64_t i)
{
    if (a->elem == 4) return ((const int32_t *)a->data)[i];
    return ((const int64_t *)a->data)[i];
}

static int is_edge(const graph_t *g, int64_t dst, int64_t src)
{
    if (dst < 0 || dst >= g->num_nodes) return 0;
    for (int64_t k = at(&g->indptr, dst); k < at(&g->indptr, dst + 1); k++)
        if (at(&g->indices, k) == src) return 1;
    return 0;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

/* 0 when the batch agrees with the dataset; otherwise says WRONG once. */
static int check(const graph_t *g, const fs_batch_t *b, const int64_t *seeds, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (b->nodes[b->seed_local[i]] != seeds[i]) return say("WRONG seed %lld maps to %lld", (long long)seeds[i],
                                                                (long long)b->nodes[b->seed_local[i]]), 1;
    for (int h = 0; h < b->num_hops; h++) {
        const fs_block_t *k = &b->blocks[h];
        for (int64_t e = 0; e < k->num_edges; e++) {
            int64_t dst = b->nodes[k->edge_dst[e]], src = b->nodes[k->edge_src[e]];
            if (!is_edge(g, dst, src))
                return say("WRONG hop %d edge %lld -> %lld is not in the graph", h, (long long)dst, (long long)src), 1;
        }
    }
    size_t row = (size_t)g->dim * g->feat.elem;
    if (b->rows != b->num_nodes || b->dim != g->dim) return say("WRONG shape %lld x %lld", (long long)b->rows,
                                                                 (long long)b->dim), 1;
    for (int64_t i = 0; i < b->rows; i++)
        if (memcmp((const unsigned char *)b->features + (size_t)i * row, g->feat.data + (size_t)b->nodes[i] * row,
                   row) != 0)
            return say("WRONG row of node %lld", (long long)b->nodes[i]), 1;
    return 0;
}

static fs_client_t *connect_retrying(const char *uri, int first)
{
    useconds_t wait = 20000;
    while (!stop) {
        fs_connect_opts_t opts = FS_CONNECT_OPTS_INIT;
        opts.timeout_ms = 5000;
        fs_client_t *c = NULL;
        fs_status_t st = fs_connect(uri, &opts, &c);
        if (st == FS_OK) {
            if (!first) say("RECONNECT %s", fs_strerror(st));
            return c;
        }
        fs_close(c);
        usleep(wait);
        wait = wait < 500000 ? wait * 2 : wait;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: soak_client URI PRISTINE_DATASET_DIR SEED\n");
        return 2;
    }
    graph_t g = {0};
    if (load_npy(argv[2], "indptr.npy", &g.indptr) || load_npy(argv[2], "indices.npy", &g.indices) ||
        load_npy(argv[2], "table_feat.npy", &g.feat)) {
        fprintf(stderr, "soak_client: cannot read the dataset in %s\n", argv[2]);
        return 2;
    }
    g.num_nodes = g.indptr.count - 1;
    g.dim = g.feat.count / g.num_nodes;
    signal(SIGTERM, on_term);
    srand((unsigned)atoi(argv[3]));
    fs_client_t *c = connect_retrying(argv[1], 1);
    long long batches = 0;
    while (!stop && c) {
        int64_t seeds[128];
        for (int i = 0; i < 128; i++) seeds[i] = rand() % g.num_nodes;
        fs_sample_req_t req = FS_SAMPLE_REQ_INIT;
        req.num_hops = 2, req.fanout[0] = 10, req.fanout[1] = 5, req.seed = (uint64_t)rand();
        fs_batch_t *b = NULL;
        fs_status_t st = fs_sample_gather(c, seeds, 128, &req, "feat", FS_DTYPE_INVALID, &b);
        if (st == FS_OK) {
            check(&g, b, seeds, 128);
            if (++batches % 20 == 0) say("OK %lld", batches);
        } else if (st == FS_ERR_UNAVAILABLE || st == FS_ERR_IO) {
            fs_close(c); /* the server went away: a restart */
            c = connect_retrying(argv[1], 0);
        } else {
            say("ERROR %s %s", fs_strerror(st), fs_client_errstr(c));
            usleep(100000);
        }
        fs_batch_free(b);
    }
    fs_close(c);
    say("DONE %lld", batches);
    return 0;
}
