/* routed_fixture.c — the partitioned datasets and the bit-for-bit check
 * of routed batches (routed_fixture.h). */
#include "routed_fixture.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "typed_view.h"

static fs_error_t err;

/* Edge feature tables are not partitioned yet: the typed R-MAT's one goes. */
#define DROP_EDGE_TABLES                                                                                     \
    "import json,sys,os; d=sys.argv[1]; m=json.load(open(d+'/manifest.json'))\n"                             \
    "for e in m.get('edge_types',[]):\n"                                                                           \
    "  for t in e.pop('features',{}).values(): m['files'].pop(t['file']); os.remove(d+'/'+t['file'])\n"   \
    "json.dump(m,open(d+'/manifest.json','w'))"

void rf_make(const char *dir, const char *gen, const char *name, int parts)
{
    cr_assert_eq(tu_run(NULL, "%s gen rmat %s --edge-factor 8 --dim 4 --out %s/%s", tu_bin(), gen, dir, name), 0);
    cr_assert_eq(tu_run(NULL, "/usr/bin/python3 -c \"%s\" %s/%s", DROP_EDGE_TABLES, dir, name), 0);
    cr_assert_eq(tu_run(NULL, "%s partition %s/%s --parts %d --out %s/%s.parts", tu_bin(), dir, name, parts, dir, name),
                 0);
}

void rf_meta_open(rf_meta_t *m, const char *root, int parts)
{
    memset(m, 0, sizeof *m);
    cr_assert_leq(parts, RF_MAX_PARTS);
    m->parts = parts;
    int all[RF_MAX_PARTS];
    for (int p = 0; p < parts; p++) all[p] = p;
    cr_assert_eq(fs_shard_open(root, all, parts, 1, &m->all, &err), FS_OK, "%s", err.msg);
    m->any = fs_shard_part(m->all, 0);
    m->num_types = m->any->num_node_types;
    m->first = calloc((size_t)m->num_types, sizeof *m->first);
    m->new_of = calloc((size_t)m->num_types, sizeof *m->new_of);
    m->orig_of = calloc((size_t)m->num_types, sizeof *m->orig_of);
    m->count = calloc((size_t)m->num_types, sizeof *m->count);
    for (int t = 0; t < m->num_types; t++) {
        int64_t total = m->any->node_types[t].total;
        m->count[t] = total;
        m->new_of[t] = malloc(sizeof(int64_t) * (size_t)(total ? total : 1));
        m->orig_of[t] = malloc(sizeof(int64_t) * (size_t)(total ? total : 1));
        for (int p = 0; p < parts; p++) {
            const fs_node_type_t *nt = &fs_shard_part(m->all, p)->node_types[t];
            m->first[t][p] = nt->first;
            for (int64_t r = 0; r < nt->count; r++) {
                m->new_of[t][nt->orig_ids[r]] = nt->first + r;
                m->orig_of[t][nt->first + r] = nt->orig_ids[r];
            }
        }
        m->first[t][parts] = total;
    }
}

void rf_meta_close(rf_meta_t *m)
{
    for (int t = 0; t < m->num_types; t++) free(m->new_of[t]), free(m->orig_of[t]);
    free(m->first), free(m->new_of), free(m->orig_of), free(m->count);
    fs_shard_close(m->all);
}

static fs_router_t *router_of(const rf_meta_t *m, const fs_route_transport_t *t)
{
    const int64_t *first[16];
    int owner[RF_MAX_PARTS], etype_dst[16];
    for (int ty = 0; ty < m->num_types; ty++) first[ty] = m->first[ty];
    for (int p = 0; p < m->parts; p++) owner[p] = p % RF_SHARDS;
    for (int e = 0; e < m->any->num_edge_types; e++) etype_dst[e] = m->any->edge_types[e].dst_type;
    fs_route_map_t rm = {.num_node_types = m->num_types, .first = first, .parts = m->parts, .owner = owner,
                         .num_shards = RF_SHARDS, .num_edge_types = m->any->num_edge_types, .etype_dst = etype_dst};
    fs_router_t *r;
    cr_assert_eq(fs_router_create(&rm, t, &r, &err), FS_OK, "%s", err.msg);
    return r;
}

/* One engine on the source against the routed engine on the parts. */
void rf_same_batches(const char *source, const rf_meta_t *m, const fs_route_transport_t *t, fs_frontier_t frontier,
                     fs_sample_mode_t mode, int seed_type)
{
    fs_dataset_t *ds;
    fs_typed_graph_t whole;
    cr_assert_eq(fs_dataset_open(source, 0, 1, &ds, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_typed_graph_init(&whole, ds, &err), FS_OK, "%s", err.msg);
    fs_router_t *router = router_of(m, t);
    int E = whole.view.num_edge_types, hops = 3;
    fs_typed_remote_t remote = {.picks = fs_router_picks, .ctx = router};
    fs_typed_etype_t *ret = calloc((size_t)E, sizeof *ret);
    for (int e = 0; e < E; e++)
        ret[e] = (fs_typed_etype_t){.src_type = whole.view.etype[e].src_type, .dst_type = whole.view.etype[e].dst_type,
                                    .name = whole.view.etype[e].name, .reverse = -1, .remote = &remote};
    fs_typed_view_t routed = {.num_node_types = m->num_types, .count = m->count, .num_edge_types = E, .etype = ret};
    int *fanout = malloc(sizeof(int) * (size_t)(E * hops));
    for (int e = 0; e < E; e++)
        for (int h = 0; h < hops; h++) fanout[e * hops + h] = h == 2 && e == 0 ? FS_FANOUT_ALL : 6 - 2 * h + e % 2;
    fs_typed_req_t req = {.num_hops = hops, .fanout = fanout, .seed = 42, .want_edge_ids = 1, .frontier = frontier,
                          .mode = {mode, mode, mode}};
    int64_t n = 200, seeds[200], mapped[200];
    for (int i = 0; i < n; i++) {
        seeds[i] = (i * 7919) % ds->node_types[seed_type].count;
        mapped[i] = m->new_of[seed_type][seeds[i]];
    }
    fs_typed_seeds_t a = {.type = seed_type, .count = n, .ids = seeds}, b = {.type = seed_type, .count = n, .ids = mapped};
    fs_typed_sampler_t *s1, *s2;
    fs_typed_result_t r1, r2;
    cr_assert_eq(fs_typed_sampler_create(&s1, &err), FS_OK);
    cr_assert_eq(fs_typed_sampler_create(&s2, &err), FS_OK);
    cr_assert_eq(fs_typed_sample_cpu(s1, &whole.view, &req, &a, 1, NULL, 0, &r1, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_typed_sample_cpu(s2, &routed, &req, &b, 1, NULL, 0, &r2, &err), FS_OK, "%s", err.msg);
    int64_t edges = 0;
    for (int t = 0; t < m->num_types; t++) {
        cr_assert_eq(r1.type[t].num_nodes, r2.type[t].num_nodes, "type %d's node count", t);
        for (int64_t i = 0; i < r1.type[t].num_nodes; i++)
            cr_assert_eq(r1.type[t].nodes[i], m->orig_of[t][r2.type[t].nodes[i]], "type %d node %lld", t, (long long)i);
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
    fs_router_destroy(router);
    free(ret), free(fanout);
    fs_typed_graph_free(&whole);
    fs_dataset_close(ds);
}

