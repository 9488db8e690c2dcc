/* test_hopgnn.c — HopGNN's owner-routed batches on a cluster of two shards
 * (parts 0 and 2 on shard 0, answered in the trainer's process; 1 and 3 on
 * shard 1, over gRPC) beside one server of the whole graph:
 *
 *   - fs_split_by_owner against the parts' own node lists (orig_ids), read
 *     from the partitioning's files: the oracle;
 *   - fs_batch_micrographs against a second, naive walk (every edge of a
 *     block tried against a per-root membership array, a hop at a time),
 *     the same over both connections (their batches are the same), and
 *     R_micro counted again from the oracle's owners;
 *   - the errors: a batch without a sample, a connection without shards,
 *     a seed whose shard is down (the map that says so reaches the trainer
 *     through its watch on etcd, without a call). */
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "featstore/client.h"
#include "fs_npy.h"
#include "test_etcd.h"
#include "test_util.h"

static char *dir;
static tu_etcd_t etcd;

static void up(void) { tu_cluster_up(&dir, &etcd); }
static void down(void) { tu_cluster_down(&dir, &etcd); }

TestSuite(hopgnn, .init = up, .fini = down, .timeout = 120);

#define NODES 1024
#define PARTS 4

/* An int64 .npy file of the partitioning: its values, n of them (malloc'd). */
static int64_t *read_i64(const char *path, int64_t *n)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    static char buf[1 << 16];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    fs_npy_header_t h;
    fs_error_t err;
    cr_assert_eq(fs_npy_parse(buf, len, path, &h, &err), FS_OK, "%s", err.msg);
    cr_assert(h.dtype == FS_DTYPE_I64 && h.ndim == 1 && h.header_len + h.data_len == len, "%s", path);
    int64_t *v = malloc((size_t)h.shape[0] * 8 + 8);
    memcpy(v, buf + h.header_len, h.data_len);
    *n = h.shape[0];
    return v;
}

/* Each source id's shard by the parts' files: part p's orig_ids, p on
 * shard p % 2. */
static void oracle_owner(const char *root, int *owner)
{
    for (int v = 0; v < NODES; v++) owner[v] = -1;
    for (int p = 0; p < PARTS; p++) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, "%s/part-%05d/node.orig_ids.npy", root, p);
        int64_t n, *ids = read_i64(path, &n);
        for (int64_t i = 0; i < n; i++) owner[ids[i]] = p % 2;
        free(ids);
    }
    for (int v = 0; v < NODES; v++) cr_assert_geq(owner[v], 0, "node %d in no part", v);
}

static fs_client_t *connect_to(const char *uri)
{
    fs_client_t *c;
    cr_assert_eq(fs_connect(uri, NULL, &c), FS_OK, "%s: %s", uri, fs_client_errstr(c));
    return c;
}

/* The naive walk: root r's members after each block, by trying every edge. */
static void naive_members(const fs_batch_t *b, int64_t r, char *in, char *next)
{
    memset(in, 0, (size_t)b->num_nodes);
    in[b->seed_local[r]] = 1;
    for (int h = 0; h < b->num_hops; h++) {
        const fs_block_t *k = &b->blocks[h];
        memcpy(next, in, (size_t)b->num_nodes);
        for (int64_t d = 0; d < k->num_dst; d++)
            for (int64_t e = k->dst_offsets[d]; e < k->dst_offsets[d + 1]; e++)
                if (in[k->edge_dst[e]]) next[k->edge_src[e]] = 1;
        memcpy(in, next, (size_t)b->num_nodes);
    }
}

/* m against the naive walk; R_micro against the oracle's owners (NULL: none). */
static void check_micrographs(const fs_batch_t *b, const fs_micrographs_t *m, const int *owner)
{
    cr_assert_eq(m->num_nodes, b->num_nodes);
    cr_assert_eq(m->num_roots, b->num_seeds);
    char *in = malloc((size_t)b->num_nodes), *next = malloc((size_t)b->num_nodes);
    int64_t *seen = calloc((size_t)b->num_nodes, sizeof *seen); /* roots of each node checked so far */
    int64_t pairs = 0, colocated = 0;
    for (int64_t r = 0; r < b->num_seeds; r++) {
        naive_members(b, r, in, next);
        int64_t home = b->seed_local[r];
        for (int64_t v = 0; v < b->num_nodes; v++) {
            if (!in[v]) continue;
            int64_t at = m->root_offsets[v] + seen[v]++;
            cr_assert_lt(at, m->root_offsets[v + 1], "node %lld lacks root %lld", (long long)v, (long long)r);
            cr_assert_eq(m->roots[at], r, "node %lld's roots: %lld where %lld", (long long)v, (long long)m->roots[at],
                         (long long)r);
            if (v != home && owner) pairs++, colocated += owner[b->nodes[v]] == owner[b->nodes[home]];
        }
    }
    for (int64_t v = 0; v < b->num_nodes; v++)
        cr_assert_eq(m->root_offsets[v] + seen[v], m->root_offsets[v + 1], "node %lld has extra roots", (long long)v);
    if (owner) {
        cr_assert_not_null(m->owner);
        for (int64_t v = 0; v < b->num_nodes; v++) cr_assert_eq(m->owner[v], owner[b->nodes[v]]);
        cr_assert(m->pairs == pairs && m->pairs_colocated == colocated, "pairs %lld/%lld, oracle %lld/%lld",
                  (long long)m->pairs_colocated, (long long)m->pairs, (long long)colocated, (long long)pairs);
        cr_assert_float_eq(m->r_micro, (double)colocated / (double)pairs, 1e-12);
    } else {
        cr_assert_null(m->owner);
        cr_assert(isnan(m->r_micro));
    }
    free(in), free(next), free(seen);
}

/* fs_pregather of the roots on shard 0, then of every root: the union's
 * rows (against the whole server's rows, local id for local id), the
 * stats against the naive walk and the oracle's owners, and its errors. */
static void pregather(fs_client_t *many, fs_client_t *one, const fs_batch_t *b, const fs_micrographs_t *m,
                      const fs_batch_t *whole, const int *owner)
{
    int64_t roots[200], n = 0;
    for (int64_t r = 0; r < b->num_seeds; r++)
        if (owner[b->nodes[b->seed_local[r]]] == 0) roots[n++] = r;
    char *in = malloc((size_t)b->num_nodes), *next = malloc((size_t)b->num_nodes), *any = calloc((size_t)b->num_nodes, 1);
    int64_t requested = 0, rows = 0, remote = 0;
    for (int64_t i = 0; i < n; i++) {
        naive_members(b, roots[i], in, next);
        for (int64_t v = 0; v < b->num_nodes; v++) requested += in[v], any[v] |= in[v];
    }
    for (int64_t v = 0; v < b->num_nodes; v++) rows += any[v], remote += any[v] && owner[b->nodes[v]] != 0;
    fs_batch_t *rb;
    fs_pregather_stats_t st;
    cr_assert_eq(fs_pregather(many, b, m, roots, n, "feat", FS_DTYPE_INVALID, 1 << 20, &rb, &st), FS_OK, "%s",
                 fs_client_errstr(many));
    cr_assert(st.rows == rows && st.rows_requested == requested && st.rows_saved == requested - rows &&
              st.rows_remote == remote && st.remote_shards == (remote > 0),
              "stats %lld/%lld/%lld/%lld, oracle %lld/%lld/%lld", (long long)st.rows, (long long)st.rows_requested,
              (long long)st.rows_remote, (long long)st.remote_shards, (long long)rows, (long long)requested,
              (long long)remote);
    cr_assert_gt(st.rows_saved, 0, "micrographs overlap");
    size_t row = (size_t)whole->dim * 4;
    cr_assert_eq(rb->rows, rows);
    for (int64_t v = 0, i = 0; v < b->num_nodes; v++)
        if (any[v]) cr_assert(memcmp((const char *)rb->features + row * (size_t)i++,
                                     (const char *)whole->features + row * (size_t)v, row) == 0, "node %lld's row",
                              (long long)v);
    fs_batch_free(rb);
    int64_t all[200];
    for (int64_t r = 0; r < b->num_seeds; r++) all[r] = r;
    cr_assert_eq(fs_pregather(one, b, m, all, b->num_seeds, "feat", FS_DTYPE_INVALID, b->num_nodes, &rb, &st), FS_OK);
    cr_assert(st.rows == b->num_nodes && st.rows_remote == 0 && rb->rows == b->num_nodes, "unix://: no owners");
    cr_assert(memcmp(rb->features, whole->features, row * (size_t)b->num_nodes) == 0, "every root: the batch's rows");
    fs_batch_free(rb);
    cr_assert_eq(fs_pregather(many, b, m, all, b->num_seeds, "feat", FS_DTYPE_INVALID, 10, &rb, &st), FS_ERR_RESOURCE);
    cr_assert(strstr(fs_client_errstr(many), "past the buffer's 10"), "%s", fs_client_errstr(many));
    all[3] = 999;
    cr_assert_eq(fs_pregather(many, b, m, all, 5, "feat", FS_DTYPE_INVALID, 1 << 20, &rb, &st), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(fs_client_errstr(many), "999"), "%s", fs_client_errstr(many));
    free(in), free(next), free(any);
}

/* A series of the trainer's fs_stats ("NAME{LABELS} " with its space). */
static long long series(fs_client_t *c, const char *want)
{
    char *text;
    cr_assert_eq(fs_stats(c, &text), FS_OK, "%s", fs_client_errstr(c));
    const char *at = strstr(text, want);
    cr_assert_not_null(at, "%s", want);
    long long v = atoll(at + strlen(want));
    fs_stats_free(text);
    return v;
}

static long long rows_by(fs_client_t *c, const char *path)
{
    char want[96];
    snprintf(want, sizeof want, "featstore_trainer_rows_total{path=\"%s\"} ", path);
    return series(c, want);
}

/* The cache under a budget of CACHE_MB (CACHE_ROWS rows of 2,048 float32
 * features and a label): the hot list's rows of the shards this process
 * does not answer first, then those of shard `here` (shard 0 at first; after
 * the move every part is this machine's). A gather of every node must read
 * the cached ones from the cache and the rest where they are. */
#define DIM 2048
#define CACHE_MB "1"
#define CACHE_ROWS ((1 << 20) / (DIM * 4 + 8))

static void cache_prefers_other_shards(fs_client_t *many, const char *root, const int *owner, int all_here)
{
    char path[PATH_MAX + 32];
    int64_t n_hot, n_map;
    snprintf(path, sizeof path, "%s/node.hot.npy", root);
    int64_t *hot = read_i64(path, &n_hot);
    snprintf(path, sizeof path, "%s/node.node_map.npy", root);
    int64_t *global_of = read_i64(path, &n_map); /* source id -> global id */
    cr_assert_eq(n_map, NODES);
    int64_t *source_of = malloc(NODES * sizeof *source_of);
    for (int v = 0; v < NODES; v++) source_of[global_of[v]] = v;
    long long hot_there = 0, here = 0;
    for (int64_t i = 0; i < n_hot; i++) hot_there += !all_here && owner[source_of[hot[i]]] == 1;
    for (int v = 0; v < NODES; v++) here += all_here || owner[v] == 0;
    long long cap = CACHE_ROWS, there_cached = hot_there < cap ? hot_there : cap;
    long long here_cached = n_hot - hot_there < cap - there_cached ? n_hot - hot_there : cap - there_cached;
    cr_assert(n_hot > cap && (hot_there > 0) == !all_here, "a hot list the budget cannot hold");
    int64_t all[NODES];
    for (int v = 0; v < NODES; v++) all[v] = v;
    long long before[3] = {rows_by(many, "local"), rows_by(many, "cache"), rows_by(many, "remote")};
    fs_batch_t *b;
    cr_assert_eq(fs_gather(many, all, NODES, "feat", FS_DTYPE_INVALID, &b), FS_OK, "%s", fs_client_errstr(many));
    fs_batch_free(b);
    long long got[3] = {rows_by(many, "local") - before[0], rows_by(many, "cache") - before[1],
                        rows_by(many, "remote") - before[2]};
    long long want[3] = {here - here_cached, there_cached + here_cached, NODES - here - there_cached};
    cr_assert(got[0] == want[0] && got[1] == want[1] && got[2] == want[2],
              "rows local/cache/remote %lld/%lld/%lld, expected %lld/%lld/%lld", got[0], got[1], got[2], want[0],
              want[1], want[2]);
    free(hot), free(global_of), free(source_of);
}

Test(hopgnn, owner_groups_and_micrographs)
{
    char g[PATH_MAX], root[PATH_MAX], sock[PATH_MAX], uri[PATH_MAX + 16], extra[PATH_MAX + 16];
    snprintf(g, sizeof g, "%s/g", dir), snprintf(root, sizeof root, "%s/parts", dir);
    snprintf(sock, sizeof sock, "%s/whole.sock", dir);
    cr_assert_eq(tu_run(NULL, "%s gen rmat --scale 10 --edge-factor 8 --dim %d --out %s", tu_bin(), DIM, g), 0);
    cr_assert_eq(tu_run(NULL, "%s partition %s --parts %d --out %s", tu_bin(), g, PARTS, root), 0);
    static int owner[NODES];
    oracle_owner(root, owner);
    tu_server_t whole;
    cr_assert_eq(tu_serve(&whole, g, sock, ""), 0);
    tu_shard_t s[2];
    snprintf(extra, sizeof extra, "--socket %s/h-0.sock", dir);
    tu_shard_start(&s[0], &etcd, root, "h", "0,2", 0, extra);
    tu_shard_start(&s[1], &etcd, root, "h", "1,3", 1, NULL);
    snprintf(uri, sizeof uri, "unix://%s", sock);
    fs_client_t *one = connect_to(uri);
    snprintf(uri, sizeof uri, "etcd://%s/h", etcd.endpoint);
    setenv("FEATSTORE_CACHE_MB", CACHE_MB, 1);
    fs_client_t *many = connect_to(uri);
    cache_prefers_other_shards(many, root, owner, 0);
    const char *budgets[] = {"12abc", "-3", "999999999999"}; /* a cache budget it cannot use: named at connect */
    for (int i = 0; i < 3; i++) {
        fs_client_t *x;
        setenv("FEATSTORE_CACHE_MB", budgets[i], 1);
        cr_assert_eq(fs_connect(uri, NULL, &x), FS_ERR_INVALID_ARGUMENT, "budget %s", budgets[i]);
        cr_assert(strstr(fs_client_errstr(x), "FEATSTORE_CACHE_MB"), "%s", fs_client_errstr(x));
        cr_assert(i < 2 || strstr(fs_client_errstr(x), "memory"), "%s", fs_client_errstr(x));
        fs_close(x);
    }
    setenv("FEATSTORE_CACHE_MB", CACHE_MB, 1);

    int64_t seeds[200];
    for (int i = 0; i < 200; i++) seeds[i] = (i * 577 + 3) % NODES;
    seeds[199] = seeds[10]; /* a duplicate: two roots of one node */
    fs_owner_groups_t *og;
    cr_assert_eq(fs_split_by_owner(many, NULL, seeds, 200, &og), FS_OK, "%s", fs_client_errstr(many));
    cr_assert_eq(og->num_groups, 2);
    cr_assert(og->owner[0] == 0 && og->owner[1] == 1 && og->offsets[0] == 0 && og->offsets[2] == 200);
    cr_assert_gt(og->map_revision, 0);
    for (int k = 0; k < 2; k++)
        for (int64_t i = og->offsets[k]; i < og->offsets[k + 1]; i++) {
            cr_assert_eq(og->seeds[i], seeds[og->positions[i]], "the tag leads back to the seed");
            cr_assert_eq(owner[og->seeds[i]], og->owner[k], "seed %lld's owner", (long long)og->seeds[i]);
            if (i > og->offsets[k]) cr_assert_gt(og->positions[i], og->positions[i - 1], "the input's order");
        }
    fs_owner_groups_free(og);
    cr_assert_eq(fs_split_by_owner(one, NULL, seeds, 200, &og), FS_ERR_UNSUPPORTED);
    cr_assert(strstr(fs_client_errstr(one), "sharded"), "%s", fs_client_errstr(one));
    int64_t bad = NODES + 5;
    cr_assert_eq(fs_split_by_owner(many, NULL, &bad, 1, &og), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(fs_client_errstr(many), "1029"), "%s", fs_client_errstr(many));

    int fan[2][3] = {{4, 3, 0}, {3, 2, 2}};
    for (int t = 0; t < 2; t++) {
        fs_sample_req_t req = {.struct_size = sizeof req, .num_hops = fan[t][2] ? 3 : 2, .seed = 9u + (unsigned)t};
        for (int h = 0; h < 3; h++) req.fanout[h] = fan[t][h];
        fs_batch_t *b[2];
        cr_assert_eq(fs_sample_gather(one, seeds, 200, &req, "feat", FS_DTYPE_INVALID, &b[0]), FS_OK);
        cr_assert_eq(fs_sample(many, seeds, 200, &req, &b[1]), FS_OK, "%s", fs_client_errstr(many));
        fs_micrographs_t *m[2];
        for (int k = 0; k < 2; k++)
            cr_assert_eq(fs_batch_micrographs(k ? many : one, b[k], &m[k]), FS_OK, "%s",
                         fs_client_errstr(k ? many : one));
        check_micrographs(b[0], m[0], NULL);
        check_micrographs(b[1], m[1], owner);
        int64_t np = m[0]->root_offsets[m[0]->num_nodes];
        cr_assert(np == m[1]->root_offsets[m[1]->num_nodes] &&
                  memcmp(m[0]->root_offsets, m[1]->root_offsets, (size_t)(b[0]->num_nodes + 1) * 8) == 0 &&
                  memcmp(m[0]->roots, m[1]->roots, (size_t)np * 8) == 0, "the same micrographs over both");
        cr_assert_gt(m[1]->pairs, 200 * 4, "micrographs worth checking");
        pregather(many, one, b[1], m[1], b[0], owner);
        cr_assert(m[1]->r_micro > 0.0 && m[1]->r_micro < 1.0, "R_micro %f", m[1]->r_micro);
        fs_micrographs_free(m[0]), fs_micrographs_free(m[1]);
        fs_batch_free(b[0]), fs_batch_free(b[1]);
    }
    fs_batch_t *x; /* a gather has no micrographs */
    fs_micrographs_t *m;
    cr_assert_eq(fs_gather(many, seeds, 4, "feat", FS_DTYPE_INVALID, &x), FS_OK);
    cr_assert_eq(fs_batch_micrographs(many, x, &m), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(fs_client_errstr(many), "no sample"), "%s", fs_client_errstr(many));
    fs_batch_free(x);

    /* etcd goes away: the trainer says its map is no longer watched and the shards say etcd
     * is away (featstore_shard_etcd_up), and both keep their maps and serve the batches;
     * when etcd is back the watch opens again and the shards say so */
    const char *shard_etcd = "\nfeatstore_shard_etcd_up{shard=\"1\"} "; /* shard 1's, through its Stats */
    cr_assert_eq(series(many, shard_etcd), 1);
    tu_etcd_kill(&etcd);
    for (int i = 0; i < 100 && series(many, "\nfeatstore_trainer_map_watched ") != 0; i++) usleep(50 * 1000);
    cr_assert_eq(series(many, "\nfeatstore_trainer_map_watched "), 0, "the watch is down with etcd");
    for (int i = 0; i < 100 && series(many, shard_etcd) != 0; i++) usleep(50 * 1000);
    cr_assert_eq(series(many, shard_etcd), 0, "the shard says etcd is away");
    cr_assert_eq(fs_gather(many, seeds, 4, "feat", FS_DTYPE_INVALID, &x), FS_OK, "%s", fs_client_errstr(many));
    fs_batch_free(x);
    tu_etcd_revive(&etcd);
    for (int i = 0; i < 200 && series(many, "\nfeatstore_trainer_map_watched ") != 1; i++) usleep(50 * 1000);
    cr_assert_eq(series(many, "\nfeatstore_trainer_map_watched "), 1, "the watch opened again");
    for (int i = 0; i < 100 && series(many, shard_etcd) != 1; i++) usleep(50 * 1000);
    cr_assert_eq(series(many, shard_etcd), 1, "the shard says etcd answers again");

    /* shard 1 leaves: its seeds have no owner now, and the error says so; shard 0's still group.
     * The new map reaches the trainer through its watch on etcd, with no call of its own (the
     * metrics ask the shards, not etcd); the split then reads the map it holds */
    cr_assert_eq(series(many, "\nfeatstore_trainer_map_watched "), 1, "the trainer watches the map");
    long long updates = series(many, "\nfeatstore_trainer_map_updates_total ");
    tu_shard_stop(&s[1], SIGTERM);
    tu_wait_owner(&etcd, "h", 1, -1, 5);
    for (int i = 0; i < 100 && series(many, "\nfeatstore_trainer_map_updates_total ") == updates; i++)
        usleep(50 * 1000);
    cr_assert_gt(series(many, "\nfeatstore_trainer_map_updates_total "), updates, "the watch installed the map");
    int64_t mine[2], theirs = -1, n = 0;
    for (int v = 0; v < NODES && (n < 2 || theirs < 0); v++) {
        if (owner[v] == 0 && n < 2) mine[n++] = v;
        if (owner[v] == 1 && theirs < 0) theirs = v;
    }
    cr_assert_eq(fs_split_by_owner(many, NULL, &theirs, 1, &og), FS_ERR_UNAVAILABLE);
    cr_assert(strstr(fs_client_errstr(many), "down"), "%s", fs_client_errstr(many));
    cr_assert_eq(fs_split_by_owner(many, NULL, mine, 2, &og), FS_OK, "%s", fs_client_errstr(many));
    cr_assert(og->num_groups == 1 && og->owner[0] == 0 && og->offsets[1] == 2);
    fs_owner_groups_free(og);

    /* shard 1's parts come back on a shard of this machine: the map moves a shard onto it, so
     * the cache is filled anew, with this machine's hot rows now */
    long long fills = series(many, "\nfeatstore_trainer_cache_fills_total ");
    cr_assert_eq(fills, 1, "one cache so far, not %lld", fills);
    tu_shard_t back;
    snprintf(extra, sizeof extra, "--socket %s/h-2.sock", dir);
    tu_shard_start(&back, &etcd, root, "h", "1,3", 2, extra);
    tu_wait_owner(&etcd, "h", 1, 2, 5);
    int64_t all[NODES];
    for (int v = 0; v < NODES; v++) all[v] = v;
    fs_batch_t *y; /* the first finds shard 1 gone and the map moved on: it reads the map and retries */
    cr_assert_eq(fs_gather(many, all, NODES, "feat", FS_DTYPE_INVALID, &y), FS_OK, "%s", fs_client_errstr(many));
    fs_batch_free(y);
    cache_prefers_other_shards(many, root, owner, 1);
    cr_assert_eq(series(many, "\nfeatstore_trainer_cache_fills_total "), 2, "the cache invalidated by the new map");
    tu_shard_stop(&back, SIGTERM);

    unsetenv("FEATSTORE_CACHE_MB");
    fs_close(one), fs_close(many);
    tu_shard_stop(&s[0], SIGTERM);
    tu_serve_stop(&whole, SIGTERM);
}
