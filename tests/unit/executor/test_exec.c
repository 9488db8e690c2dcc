/* test_exec.c — the request executor (exec/fs_exec.h) on its own, as a host
 * drives it: a small R-MAT's CPU views and a region in ordinary memory.
 *
 * run: fs_exec_run gives what the engines give when called by hand (the
 * sample bit for bit, the rows byte for byte), whether the sampler wrote
 * into the region, partly, or not at all and whether the region moved as it
 * grew; and the reads it counts are what it wrote: one feature row per row
 * at the stored size, and the topology the sampler read.
 * refusals: each stage refuses by its own name — limits before the region
 * is taken, the region's own refusal, the sampler's boost without sets (in
 * the host's words), the result check (its one message), the gather's bad
 * id — and a refused stage counts nothing it did not read.
 * typed: a typed batch counts the rows its image holds and the lists its
 * blocks read; a refused one takes no memory and counts nothing. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "fs_exec.h"
#include "fs_hetero.h"
#include "store.h"
#include "test_util.h"

static char *dir;
static fs_dataset_t *ds, *typed;
static fs_store_t *store;
static fs_csr_view_t graph;
static fs_table_view_t feat;
static fs_limits_t limits;

static void setup(void)
{
    dir = tu_mkdtemp();
    fs_rmat_opts_t g;
    fs_rmat_defaults(&g);
    g.scale = 10, g.edge_factor = 8, g.dim = 8;
    ds = tu_gen_rmat(dir, "rmat", &g);
    fs_rmat_defaults(&g);
    g.scale = 8;
    g.out_dir = tu_path(dir, "typed");
    fs_error_t err = {0};
    cr_assert_eq(fs_gen_rmat_typed(&g, &err), FS_OK, "%s", err.msg);
    typed = tu_open_dataset(g.out_dir);
    free((char *)g.out_dir);
    cr_assert_eq(fs_store_create(ds, &store, &err), FS_OK, "%s", err.msg);
    fs_store_csr_view(store, FS_READER_CPU, &graph);
    cr_assert_eq(fs_store_table_view(store, "feat", FS_READER_CPU, &feat, &err), FS_OK, "%s", err.msg);
    fs_limits_default(&limits);
    limits.num_nodes = ds->num_nodes, limits.num_edges = ds->num_edges;
}

static void teardown(void)
{
    fs_store_destroy(store);
    fs_dataset_close(ds);
    fs_dataset_close(typed);
    tu_rm_rf(dir);
    free(dir);
}

TestSuite(exec, .init = setup, .fini = teardown, .timeout = 120);

/* ---- a host's region: heap memory that moves as it grows --------------------------- */

typedef struct {
    size_t first;          /* what take() starts the region with */
    int takes, grows, moved;
    fs_status_t refuse;    /* take() refuses with this when not FS_OK */
} heap_t;

static fs_status_t heap_take(fs_exec_region_t *r, fs_error_t *err)
{
    heap_t *h = r->ctx;
    h->takes++;
    if (h->refuse != FS_OK) return fs_error(err, h->refuse, "the host has no memory to give");
    r->base = h->first ? malloc(h->first) : NULL, r->cap = h->first;
    return FS_OK;
}

static fs_status_t heap_grow(fs_exec_region_t *r, size_t bytes, fs_error_t *err)
{
    heap_t *h = r->ctx;
    h->grows++;
    if (bytes <= r->cap) return FS_OK;
    char *p = malloc(bytes); /* always elsewhere: what was written must follow */
    if (!p) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    if (r->cap) {
        memcpy(p, r->base, r->cap);
        memset(r->base, 0xa5, r->cap); /* the old place is gone */
        h->moved++;
    }
    free(r->base);
    r->base = p, r->cap = bytes;
    return FS_OK;
}

static fs_exec_region_t heap_region(heap_t *h)
{
    return (fs_exec_region_t){.ctx = h, .take = heap_take, .grow = heap_grow};
}

static fs_exec_t cpu_host(fs_exec_reads_t *reads, fs_sampler_t *s)
{
    return (fs_exec_t){.limits = &limits, .reads = reads, .graph = &graph, .device = -1,
                       .no_las = "this host has no preferred sets", .sampler = s};
}

static int64_t *seeds_of(int64_t n, uint64_t salt)
{
    int64_t *s = malloc((size_t)n * sizeof *s);
    for (int64_t i = 0; i < n; i++) s[i] = (int64_t)((i * 2654435761u + salt * 97) % (uint64_t)ds->num_nodes);
    return s;
}

static int same(const void *a, const void *b, size_t bytes) { return bytes == 0 || memcmp(a, b, bytes) == 0; }

static void assert_same_sample(const fs_sample_result_t *got, const fs_sample_result_t *want)
{
    cr_assert_eq(got->num_hops, want->num_hops);
    cr_assert_eq(got->num_nodes, want->num_nodes);
    cr_assert_eq(got->num_seeds, want->num_seeds);
    cr_assert(same(got->nodes, want->nodes, (size_t)want->num_nodes * 8), "nodes");
    cr_assert(same(got->seed_local, want->seed_local, (size_t)want->num_seeds * 8), "seed_local");
    for (int h = 0; h < want->num_hops; h++) {
        const fs_block_t *g = &got->block[h], *w = &want->block[h];
        cr_assert(g->num_dst == w->num_dst && g->num_src == w->num_src && g->num_edges == w->num_edges, "hop %d", h);
        cr_assert(same(g->dst_offsets, w->dst_offsets, (size_t)(w->num_dst + 1) * 8), "hop %d offsets", h);
        cr_assert(same(g->edge_dst, w->edge_dst, (size_t)w->num_edges * 8), "hop %d dst", h);
        cr_assert(same(g->edge_src, w->edge_src, (size_t)w->num_edges * 8), "hop %d src", h);
        cr_assert_eq(!g->edge_ids, !w->edge_ids, "hop %d edge ids", h);
        if (w->edge_ids) cr_assert(same(g->edge_ids, w->edge_ids, (size_t)w->num_edges * 8), "hop %d ids", h);
    }
}

/* ---- run ------------------------------------------------------------------------- */

Test(exec, run_gives_what_the_engines_give_and_counts_what_it_wrote)
{
    fs_sampler_t *s, *ref;
    fs_error_t err = {0};
    cr_assert_eq(fs_sampler_create(&s, &err), FS_OK);
    cr_assert_eq(fs_sampler_create(&ref, &err), FS_OK);
    int64_t *seeds = seeds_of(256, 1);
    fs_sample_req_t req = SAMPLE_REQ(.num_hops = 3, .fanout = {15, 10, 5}, .seed = 42, .want_edge_ids = 1);
    size_t row = (size_t)feat.dim * fs_dtype_size(feat.dtype);
    /* the region: none at first, then slivers of every size up to room for
     * everything: the sampler writes what fits, the rest is copied after,
     * and growing moves what it wrote (all of it, for some size) */
    size_t firsts[40] = {0, 4096};
    for (int k = 2; k < 40; k++) firsts[k] = (size_t)(k - 1) * (16 << 10);
    int moved = 0;
    for (size_t f = 0; f < sizeof firsts / sizeof firsts[0]; f++) {
        fs_exec_reads_t reads = {0};
        fs_exec_t x = cpu_host(&reads, s);
        heap_t h = {.first = firsts[f]};
        fs_exec_region_t into = heap_region(&h);
        fs_exec_req_t r = {.ids = seeds, .n = 256, .sample = &req, .table = &feat, .dtype = feat.dtype};
        fs_exec_result_t got;
        cr_assert_eq(fs_exec_run(&x, &r, &into, &got, &err), FS_OK, "%s", err.msg);

        fs_sample_result_t want;
        fs_gather_counters_t topo = {0};
        cr_assert_eq(fs_sample_cpu(ref, &graph, seeds, 256, &req, &want, &topo, &err), FS_OK, "%s", err.msg);
        assert_same_sample(&got.sample, &want);
        char *rows = malloc((size_t)want.num_nodes * row);
        cr_assert_eq(fs_gather_cpu(&feat, want.nodes, want.num_nodes, feat.dtype, rows, NULL, NULL, &err), FS_OK);
        cr_assert_eq(got.num_rows, want.num_nodes);
        cr_assert_eq(got.rows_device, -1);
        cr_assert(same(got.rows, rows, (size_t)want.num_nodes * row), "region of %zu: the rows", firsts[f]);
        cr_assert((const char *)got.rows >= into.base && (const char *)got.rows < into.base + into.cap);

        cr_assert_eq(reads.features.rows[0], (uint64_t)want.num_nodes, "one feature row per row written");
        cr_assert_eq(reads.features.bytes[0], (uint64_t)want.num_nodes * feat.row_bytes);
        cr_assert_eq(reads.topology.rows[0], topo.rows[0], "the lists the sampler read");
        cr_assert_eq(reads.topology.bytes[0], topo.bytes[0]);
        cr_assert_eq(h.takes, 1);
        moved += h.moved;
        free(rows);
        free(into.base);
    }
    cr_assert(moved > 0, "some region moved as it grew");
    free(seeds);
    fs_sampler_destroy(s);
    fs_sampler_destroy(ref);
}

Test(exec, a_gather_writes_the_ids_rows_and_counts_them)
{
    int64_t *ids = seeds_of(1000, 7);
    fs_exec_reads_t reads = {0};
    fs_exec_t x = cpu_host(&reads, NULL);
    heap_t h = {0};
    fs_exec_region_t into = heap_region(&h);
    fs_exec_req_t r = {.ids = ids, .n = 1000, .table = &feat, .dtype = FS_DTYPE_F32};
    fs_exec_result_t got;
    fs_error_t err = {0};
    cr_assert_eq(fs_exec_run(&x, &r, &into, &got, &err), FS_OK, "%s", err.msg);
    size_t row = (size_t)feat.dim * sizeof(float);
    char *want = malloc(1000 * row);
    cr_assert_eq(fs_gather_cpu(&feat, ids, 1000, FS_DTYPE_F32, want, NULL, NULL, &err), FS_OK);
    cr_assert_eq(got.num_rows, 1000);
    cr_assert(same(got.rows, want, 1000 * row));
    cr_assert_eq(got.sample.num_nodes, 0, "no sample asked for");
    cr_assert_eq(reads.features.rows[0], 1000);
    cr_assert_eq(reads.features.bytes[0], 1000 * feat.row_bytes);
    cr_assert_eq(reads.topology.rows[0], 0);
    free(want), free(ids), free(into.base);
}

/* ---- refusals -------------------------------------------------------------------- */

static int nothing_read(const fs_exec_reads_t *r)
{
    static const fs_exec_reads_t zero;
    return memcmp(r, &zero, sizeof zero) == 0;
}

Test(exec, each_stage_refuses_by_name_and_counts_only_what_it_read)
{
    fs_sampler_t *s;
    fs_error_t err = {0};
    cr_assert_eq(fs_sampler_create(&s, &err), FS_OK);
    int64_t *seeds = seeds_of(64, 3);
    fs_sample_req_t req = SAMPLE_REQ(.num_hops = 2, .fanout = {10, 5}, .seed = 9);
    fs_exec_req_t r = {.ids = seeds, .n = 64, .sample = &req, .table = &feat, .dtype = feat.dtype};
    fs_exec_result_t got;

    /* stage 1, limits: before the region is taken */
    fs_exec_reads_t reads = {0};
    fs_exec_t x = cpu_host(&reads, s);
    fs_limits_t few = limits;
    few.max_ids = 10;
    x.limits = &few;
    heap_t h = {0};
    fs_exec_region_t into = heap_region(&h);
    cr_assert_eq(fs_exec_run(&x, &r, &into, &got, &err), FS_ERR_RESOURCE);
    cr_assert_str_eq(err.msg, "64 ids in one request; the limit is 10 (max_ids)");
    cr_assert_eq(h.takes, 0, "a refused request takes no memory");
    cr_assert(nothing_read(&reads));

    /* the host's region refuses */
    x.limits = &limits;
    h = (heap_t){.refuse = FS_ERR_RESOURCE};
    into = heap_region(&h);
    cr_assert_eq(fs_exec_run(&x, &r, &into, &got, &err), FS_ERR_RESOURCE);
    cr_assert_str_eq(err.msg, "the host has no memory to give");
    cr_assert(nothing_read(&reads));

    /* stage 2, the sampler: a boost needs the reader's preferred sets, in the host's words */
    fs_sample_req_t boost = req;
    boost.locality = 2;
    fs_exec_req_t rb = r;
    rb.sample = &boost;
    cr_assert_eq(fs_exec_sample(&x, &rb, &got.sample, &err), FS_ERR_UNSUPPORTED);
    cr_assert_str_eq(err.msg, "locality = 2: this host has no preferred sets");
    uint64_t *bits = calloc((size_t)(ds->num_nodes + 63) / 64, sizeof *bits);
    fs_locality_t one_level = {.num_levels = 1, .num_nodes = ds->num_nodes, .pref = {bits}};
    x.las = &one_level;
    cr_assert_eq(fs_exec_sample(&x, &rb, &got.sample, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "serve requests of up to 1 hops; this one has 2"), "%s", err.msg);
    x.las = NULL, x.device = 3; /* a GPU reader's boost: its engine is the CPU's */
    cr_assert_eq(fs_exec_sample(&x, &rb, &got.sample, &err), FS_ERR_UNSUPPORTED);
    cr_assert(strstr(err.msg, "cannot read gpu:3's tiers in GPU memory"), "%s", err.msg);
    x.device = -1;
    cr_assert(nothing_read(&reads));

    /* stage 3, the result check: its one message, after the sample was read */
    fs_limits_t tight = limits;
    tight.max_response_bytes = 1000;
    x.limits = &tight;
    cr_assert_eq(fs_exec_sample(&x, &r, &got.sample, &err), FS_ERR_RESOURCE);
    fs_error_t want = {0};
    cr_assert_eq(fs_limits_check_result(&tight, &got.sample, (size_t)feat.dim * fs_dtype_size(feat.dtype), &want),
                 FS_ERR_RESOURCE);
    cr_assert_str_eq(err.msg, want.msg, "the one post-sample message");
    cr_assert(reads.topology.rows[0] > 0, "the sample was drawn: its lists were read");
    cr_assert_eq(reads.features.rows[0], 0);

    /* stage 4, the gather: a bad id, named; no row counted */
    memset(&reads, 0, sizeof reads);
    x.limits = &limits;
    int64_t bad[] = {0, 1, ds->num_nodes};
    char out[3 * 64 * 8];
    cr_assert_eq(fs_exec_gather(&x, &feat, bad, 3, feat.dtype, out, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "at position 2 is outside"), "the bad id, named: %s", err.msg);
    cr_assert(nothing_read(&reads));

    free(bits), free(seeds);
    fs_sampler_destroy(s);
}

/* ---- typed ----------------------------------------------------------------------- */

Test(exec, a_typed_batch_counts_what_its_image_holds)
{
    fs_exec_typed_graph_t g;
    fs_typed_sampler_t *s;
    fs_error_t err = {0};
    cr_assert_eq(fs_exec_typed_graph_init(&g, typed, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_typed_sampler_create(&s, &err), FS_OK);
    fs_limits_t l;
    fs_limits_default(&l);
    fs_exec_reads_t reads = {0};
    fs_exec_t x = {.limits = &l, .reads = &reads, .typed = &g, .typed_sampler = s};
    int64_t papers[] = {1, 2, 3, 5, 8, 13};
    fs_hetero_seeds_t seeds = {"paper", 6, papers, NULL};
    fs_hetero_fanout_t f[] = {{"paper", "cites", "paper", {4, 3}}, {"author", "writes", "paper", {2, 0}}};
    const char *tables[] = {"feat"};
    fs_hetero_req_t req = FS_HETERO_REQ_INIT;
    req.num_hops = 2, req.fanouts = f, req.num_fanouts = 2, req.seed = 5;
    req.node_tables = tables, req.num_node_tables = 1;

    heap_t h = {0};
    fs_exec_region_t into = heap_region(&h);
    into.take = NULL; /* the host's memory is taken already, as the unix:// client takes its slot */
    size_t len;
    cr_assert_eq(fs_exec_typed(&x, &seeds, 1, NULL, &req, 1, &into, &len, &err), FS_OK, "%s", err.msg);
    fs_hetero_index_t ix;
    cr_assert_eq(fs_hetero_index(into.base, len, 1, &ix, &err), FS_OK, "%s", err.msg);
    const fs_hetero_batch_t *b = &ix.batch;
    uint64_t rows = 0, bytes = 0, lists = 0, list_bytes = 0;
    for (int t = 0; t < b->num_node_types; t++) {
        const fs_node_type_t *nt = &typed->node_types[fs_dataset_node_type(typed, b->types[t].name)];
        for (int k = 0; k < nt->num_tables && b->types[t].tables[0].data; k++)
            if (strcmp(nt->tables[k].name, "feat") == 0) {
                rows += (uint64_t)b->types[t].num_nodes;
                bytes += (uint64_t)b->types[t].num_nodes * nt->tables[k].row_bytes;
            }
    }
    for (int hop = 0; hop < 2; hop++)
        for (int e = 0; e < b->num_edge_types; e++) {
            const fs_hetero_etype_t *et = &b->etypes[e];
            int fanned = 0;
            for (int k = 0; k < 2; k++)
                fanned |= strcmp(f[k].src, et->src) == 0 && strcmp(f[k].rel, et->rel) == 0 &&
                          strcmp(f[k].dst, et->dst) == 0 && f[k].fanout[hop] != 0;
            if (!fanned) continue;
            const fs_block_t *blk = &b->blocks[hop * b->num_edge_types + e];
            lists += (uint64_t)blk->num_dst;
            list_bytes += (uint64_t)blk->num_edges * fs_dtype_size(g.graph.view.etype[e].index_dtype);
        }
    cr_assert(rows > 0);
    cr_assert_eq(reads.features.rows[0], rows, "the rows the image holds");
    cr_assert_eq(reads.features.bytes[0], bytes);
    cr_assert_eq(reads.topology.rows[0], lists, "a list per destination of a block with a fanout");
    cr_assert_eq(reads.topology.bytes[0], list_bytes, "the ids taken from them, at the index width");
    fs_hetero_index_free(&ix);

    /* refused: nothing taken, nothing counted */
    fs_exec_reads_t before = reads;
    int grows = h.grows;
    fs_hetero_seeds_t nobody = {"venue_x", 1, papers, NULL};
    cr_assert_eq(fs_exec_typed(&x, &nobody, 1, NULL, &req, 1, &into, &len, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "no node type 'venue_x'"), "%s", err.msg);
    l.max_ids = 2;
    cr_assert_eq(fs_exec_typed(&x, &seeds, 1, NULL, &req, 1, &into, &len, &err), FS_ERR_RESOURCE);
    cr_assert(strstr(err.msg, "(max_ids)"), "%s", err.msg);
    cr_assert_eq(h.grows, grows, "a refused batch takes no memory");
    cr_assert(memcmp(&reads, &before, sizeof reads) == 0, "a refused batch counts nothing");

    free(into.base);
    fs_typed_sampler_destroy(s);
    fs_exec_typed_graph_free(&g);
}
