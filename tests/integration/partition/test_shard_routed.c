/* test_shard_routed.c — a partitioned dataset sampled owner-routed, in one
 * process: `featstore partition` writes the parts, three shards
 * (server/shard.h) hold them part % 3, and a trainer's engine whose edge
 * types are remote asks each destination's shard for its picks, routed by
 * the cluster's router (cluster/fs_route.h) over an in-process transport. For the
 * same seeds the batch, mapped back through the parts' orig_ids, must be
 * one engine's on the source dataset, bit for bit: a homogeneous R-MAT
 * (DGL's blocks and PyG's frontier, with replacement too) and a typed one
 * (three node types, six edge types). Checks the partitioner's promise
 * (rows whole and in order, source edge ids, orig_ids) as much as the
 * routing. The network between them is the cluster's, tested elsewhere. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "fs_route.h"
#include "partition.h"
#include "shard.h"
#include "test_util.h"
#include "typed_view.h"

#define SHARDS 3

static fs_error_t err;

/* The trainer's picture of the cluster: every part's ranges, and the shards. */
typedef struct {
    int parts, num_types;
    int64_t (*first)[64 + 1];   /* [type][part]: the part's first global id */
    fs_shard_t *shard[SHARDS];
    fs_shard_ws_t *ws[SHARDS];
    int64_t **new_of;           /* [type][source id] */
    int64_t **orig_of;          /* [type][global id] */
    int64_t *count;             /* [type] */
    const fs_dataset_t *any;    /* a part, for the edge types */
    fs_router_t *router;
} cluster_t;

/* The transport: shard k in this process. */
static fs_status_t in_process(void *ctx, int k, const fs_typed_picks_req_t *q, const int64_t *ids, int64_t n,
                              fs_typed_picks_t *out, fs_error_t *e)
{
    cluster_t *c = ctx;
    return fs_shard_picks(c->shard[k], c->ws[k], q, ids, n, out, e);
}

static void open_cluster(cluster_t *c, const char *root, int parts)
{
    memset(c, 0, sizeof *c);
    c->parts = parts;
    for (int k = 0; k < SHARDS; k++) {
        int held[64], n = 0;
        for (int p = k; p < parts; p += SHARDS) held[n++] = p;
        cr_assert_eq(fs_shard_open(root, held, n, 1, &c->shard[k], &err), FS_OK, "%s", err.msg);
        cr_assert_eq(fs_shard_ws_create(&c->ws[k], &err), FS_OK);
    }
    c->any = fs_shard_part(c->shard[0], 0);
    c->num_types = c->any->num_node_types;
    c->first = calloc((size_t)c->num_types, sizeof *c->first);
    c->new_of = calloc((size_t)c->num_types, sizeof *c->new_of);
    c->orig_of = calloc((size_t)c->num_types, sizeof *c->orig_of);
    c->count = calloc((size_t)c->num_types, sizeof *c->count);
    for (int t = 0; t < c->num_types; t++) {
        int64_t total = c->any->node_types[t].total;
        c->count[t] = total;
        c->new_of[t] = malloc(sizeof(int64_t) * (size_t)(total ? total : 1));
        c->orig_of[t] = malloc(sizeof(int64_t) * (size_t)(total ? total : 1));
        for (int p = 0; p < parts; p++) {
            const fs_node_type_t *nt = &fs_shard_part(c->shard[p % SHARDS], p)->node_types[t];
            c->first[t][p] = nt->first;
            for (int64_t r = 0; r < nt->count; r++) {
                c->new_of[t][nt->orig_ids[r]] = nt->first + r;
                c->orig_of[t][nt->first + r] = nt->orig_ids[r];
            }
        }
        c->first[t][parts] = total;
    }
    const int64_t *first[16];
    int owner[64], etype_dst[16];
    for (int t = 0; t < c->num_types; t++) first[t] = c->first[t];
    for (int p = 0; p < parts; p++) owner[p] = p % SHARDS;
    for (int e = 0; e < c->any->num_edge_types; e++) etype_dst[e] = c->any->edge_types[e].dst_type;
    fs_route_map_t m = {.num_node_types = c->num_types, .first = first, .parts = parts, .owner = owner,
                        .num_shards = SHARDS, .num_edge_types = c->any->num_edge_types, .etype_dst = etype_dst};
    fs_route_transport_t tr = {.picks = in_process, .ctx = c};
    cr_assert_eq(fs_router_create(&m, &tr, &c->router, &err), FS_OK, "%s", err.msg);
}

static void close_cluster(cluster_t *c)
{
    for (int k = 0; k < SHARDS; k++) fs_shard_ws_destroy(c->ws[k]), fs_shard_close(c->shard[k]);
    for (int t = 0; t < c->num_types; t++) free(c->new_of[t]), free(c->orig_of[t]);
    fs_router_destroy(c->router);
    free(c->first), free(c->new_of), free(c->orig_of), free(c->count);
}

/* One engine on the source against the routed engine on the parts. */
static void same_batches(const char *source, const char *root, int parts, fs_frontier_t frontier, fs_sample_mode_t mode,
                         int seed_type)
{
    fs_dataset_t *ds;
    fs_typed_graph_t whole;
    cr_assert_eq(fs_dataset_open(source, 0, 1, &ds, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_typed_graph_init(&whole, ds, &err), FS_OK, "%s", err.msg);
    cluster_t c;
    open_cluster(&c, root, parts);
    int E = whole.view.num_edge_types, hops = 3;
    fs_typed_remote_t remote = {.picks = fs_router_picks, .ctx = c.router};
    fs_typed_etype_t *ret = calloc((size_t)E, sizeof *ret);
    for (int e = 0; e < E; e++)
        ret[e] = (fs_typed_etype_t){.src_type = whole.view.etype[e].src_type, .dst_type = whole.view.etype[e].dst_type,
                                    .name = whole.view.etype[e].name, .reverse = -1, .remote = &remote};
    fs_typed_view_t routed = {.num_node_types = c.num_types, .count = c.count, .num_edge_types = E, .etype = ret};
    int *fanout = malloc(sizeof(int) * (size_t)(E * hops));
    for (int e = 0; e < E; e++)
        for (int h = 0; h < hops; h++) fanout[e * hops + h] = h == 2 && e == 0 ? FS_FANOUT_ALL : 6 - 2 * h + e % 2;
    fs_typed_req_t req = {.num_hops = hops, .fanout = fanout, .seed = 42, .want_edge_ids = 1, .frontier = frontier,
                          .mode = {mode, mode, mode}};
    int64_t n = 200, seeds[200], mapped[200];
    for (int i = 0; i < n; i++) {
        seeds[i] = (i * 7919) % ds->node_types[seed_type].count;
        mapped[i] = c.new_of[seed_type][seeds[i]];
    }
    fs_typed_seeds_t a = {.type = seed_type, .count = n, .ids = seeds}, b = {.type = seed_type, .count = n, .ids = mapped};
    fs_typed_sampler_t *s1, *s2;
    fs_typed_result_t r1, r2;
    cr_assert_eq(fs_typed_sampler_create(&s1, &err), FS_OK);
    cr_assert_eq(fs_typed_sampler_create(&s2, &err), FS_OK);
    cr_assert_eq(fs_typed_sample_cpu(s1, &whole.view, &req, &a, 1, NULL, 0, &r1, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_typed_sample_cpu(s2, &routed, &req, &b, 1, NULL, 0, &r2, &err), FS_OK, "%s", err.msg);
    int64_t edges = 0;
    for (int t = 0; t < c.num_types; t++) {
        cr_assert_eq(r1.type[t].num_nodes, r2.type[t].num_nodes, "type %d's node count", t);
        for (int64_t i = 0; i < r1.type[t].num_nodes; i++)
            cr_assert_eq(r1.type[t].nodes[i], c.orig_of[t][r2.type[t].nodes[i]], "type %d node %lld", t, (long long)i);
    }
    for (int k = 0; k < hops * E; k++) {
        const fs_block_t *x = &r1.block[k], *y = &r2.block[k];
        cr_assert(x->num_dst == y->num_dst && x->num_src == y->num_src && x->num_edges == y->num_edges, "block %d", k);
        cr_assert_arr_eq(x->dst_offsets, y->dst_offsets, sizeof(int64_t) * (size_t)(x->num_dst + 1), "block %d", k);
        cr_assert_arr_eq(x->edge_src, y->edge_src, sizeof(int64_t) * (size_t)x->num_edges, "block %d", k);
        cr_assert_arr_eq(x->edge_dst, y->edge_dst, sizeof(int64_t) * (size_t)x->num_edges, "block %d", k);
        cr_assert_arr_eq(x->edge_ids, y->edge_ids, sizeof(int64_t) * (size_t)x->num_edges, "block %d", k);
        edges += x->num_edges;
    }
    cr_assert_gt(edges, 1000, "a batch worth comparing (%lld edges)", (long long)edges);
    fs_typed_sampler_destroy(s1), fs_typed_sampler_destroy(s2);
    close_cluster(&c);
    free(ret), free(fanout);
    fs_typed_graph_free(&whole);
    fs_dataset_close(ds);
}

static char *dir;

/* Edge feature tables are not partitioned yet: the typed R-MAT's one goes. */
#define DROP_EDGE_TABLES                                                                                     \
    "import json,sys,os; d=sys.argv[1]; m=json.load(open(d+'/manifest.json'))\n"                             \
    "for e in m.get('edge_types',[]):\n"                                                                           \
    "  for t in e.pop('features',{}).values(): m['files'].pop(t['file']); os.remove(d+'/'+t['file'])\n"   \
    "json.dump(m,open(d+'/manifest.json','w'))"

static void make(const char *gen, const char *name, int parts)
{
    cr_assert_eq(tu_run(NULL, "%s gen rmat %s --edge-factor 8 --dim 4 --out %s/%s", tu_bin(), gen, dir, name), 0);
    cr_assert_eq(tu_run(NULL, "/usr/bin/python3 -c \"%s\" %s/%s", DROP_EDGE_TABLES, dir, name), 0);
    cr_assert_eq(tu_run(NULL, "%s partition %s/%s --parts %d --out %s/%s.parts", tu_bin(), dir, name, parts, dir, name),
                 0);
}

static void up(void)
{
    dir = tu_mkdtemp();
}

static void down(void)
{
    tu_rm_rf(dir);
    free(dir);
}

TestSuite(shard_routed, .init = up, .fini = down, .timeout = 300);

Test(shard_routed, homogeneous)
{
    make("--scale 11 --symmetrize --dedup --drop-self-loops --permute", "h", 8);
    char src[PATH_MAX], root[PATH_MAX];
    snprintf(src, sizeof src, "%s/h", dir);
    snprintf(root, sizeof root, "%s/h.parts", dir);
    same_batches(src, root, 8, FS_FRONTIER_ALL, FS_SAMPLE_UNIFORM, 0);
    same_batches(src, root, 8, FS_FRONTIER_NEW, FS_SAMPLE_UNIFORM_REPLACE, 0);
}

Test(shard_routed, typed)
{
    make("--typed --scale 10", "t", 6);
    char src[PATH_MAX], root[PATH_MAX];
    snprintf(src, sizeof src, "%s/t", dir);
    snprintf(root, sizeof root, "%s/t.parts", dir);
    same_batches(src, root, 6, FS_FRONTIER_NEW, FS_SAMPLE_UNIFORM, 0);
    same_batches(src, root, 6, FS_FRONTIER_ALL, FS_SAMPLE_UNIFORM, 1);
}

Test(shard_routed, refusals)
{
    make("--scale 8 --symmetrize --dedup", "r", 4);
    char root[PATH_MAX];
    snprintf(root, sizeof root, "%s/r.parts", dir);
    fs_shard_t *s;
    int bad[] = {1, 1};
    cr_assert_eq(fs_shard_open(root, bad, 2, 1, &s, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "listed twice"), "%s", err.msg);
    int missing[] = {7};
    cr_assert_neq(fs_shard_open(root, missing, 1, 1, &s, &err), FS_OK, "a part the root does not have");
    int one[] = {2};
    cr_assert_eq(fs_shard_open(root, one, 1, 1, &s, &err), FS_OK, "%s", err.msg);
    fs_shard_ws_t *w;
    cr_assert_eq(fs_shard_ws_create(&w, &err), FS_OK);
    const fs_node_type_t *nt = &fs_shard_part(s, 2)->node_types[0];
    int64_t ids[2] = {nt->first, nt->first + nt->count}; /* the second is the next part's */
    fs_typed_picks_req_t q = {.hop = 0, .etype = 0, .fanout = 3, .mode = FS_SAMPLE_UNIFORM, .seed = 1};
    fs_typed_picks_t out;
    cr_assert_eq(fs_shard_picks(s, w, &q, ids, 2, &out, &err), FS_ERR_NOT_FOUND);
    cr_assert(strstr(err.msg, "stale"), "%s", err.msg);
    cr_assert_eq(fs_shard_picks(s, w, &q, ids, 1, &out, &err), FS_OK, "%s", err.msg);
    q.etype = 5;
    cr_assert_eq(fs_shard_picks(s, w, &q, ids, 1, &out, &err), FS_ERR_INVALID_ARGUMENT);
    fs_shard_ws_destroy(w);
    fs_shard_close(s);
}
