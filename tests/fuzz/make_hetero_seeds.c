/* make_hetero_seeds.c — writes corpus/fuzz_hetero with real inputs:
 * `make_hetero_seeds <corpus dir>`. A small typed R-MAT (the generator of
 * `featstore gen rmat --typed`) is made in a scratch directory, and typed
 * and link requests are run on it by the same code the gRPC server runs
 * (fs_exec_typed): their batch images are the image seeds (mode byte 0),
 * the requests themselves, encoded as the client encodes them, the request
 * seeds (1: HeteroSampleRequest, 2: LinkSampleRequest). Run it after the
 * image layout or the typed messages change, and commit what changed. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_exec.h"
#include "fs_pb.h"
#include "fs_wire.h"
#include "gen.h"

static char root[4096];
static fs_exec_typed_graph_t graph;
static fs_typed_sampler_t *sampler;
static fs_limits_t limits;

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "make_hetero_seeds: %s: %s\n", what, msg);
    exit(1);
}

static void put(const char *name, uint8_t mode, const void *data, size_t len)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/fuzz_hetero", root);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/fuzz_hetero/%s", root, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(&mode, 1, 1, f) != 1 || (len && fwrite(data, 1, len, f) != len) || fclose(f) != 0)
        die(path, strerror(errno));
}

static fs_status_t alloc_image(fs_exec_region_t *r, size_t bytes, fs_error_t *err)
{
    (void)err;
    free(r->base);
    r->base = malloc(bytes), r->cap = bytes;
    return r->base ? FS_OK : FS_ERR_NOMEM;
}

/* The batch's image in both layouts: as the gRPC server writes it, and
 * joined (the local transport's), named name-joined. */
static void image(const char *name, const fs_hetero_seeds_t *g, size_t ng, const fs_link_req_t *link,
                  const fs_hetero_req_t *req)
{
    fs_exec_reads_t reads = {0};
    fs_exec_t x = {.limits = &limits, .reads = &reads, .typed = &graph, .typed_sampler = sampler};
    for (int joined = 0; joined <= 1; joined++) {
        fs_exec_region_t into = {.grow = alloc_image};
        size_t len;
        fs_error_t err = {0};
        char path[256];
        snprintf(path, sizeof path, "%s%s", name, joined ? "-joined" : "");
        if (fs_exec_typed(&x, g, ng, link, req, joined, &into, &len, &err) != FS_OK) die(path, err.msg);
        put(path, 0, into.base, len);
        free(into.base);
    }
}

static void request(const char *name, const fs_hetero_seeds_t *g, size_t ng, const fs_link_req_t *link,
                    const fs_hetero_req_t *req)
{
    fs_wire_hetero_out_t out;
    featstore_v1_HeteroSampleRequest h;
    featstore_v1_LinkSampleRequest l;
    fs_error_t err = {0};
    void *buf = NULL;
    size_t len = 0;
    fs_status_t st = link ? fs_wire_link_request(link, req, &out, &l, &err)
                          : fs_wire_hetero_request(g, ng, req, &out, &h, &err);
    if (st == FS_OK)
        st = link ? fs_pb_encode_alloc(featstore_v1_LinkSampleRequest_fields, &l, "request", &buf, &len, &err)
                  : fs_pb_encode_alloc(featstore_v1_HeteroSampleRequest_fields, &h, "request", &buf, &len, &err);
    if (st != FS_OK) die(name, err.msg);
    put(name, link ? 2 : 1, buf, len);
    free(buf);
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_hetero_seeds <corpus dir>\n");
        return 2;
    }
    snprintf(root, sizeof root, "%s", argv[1]);
    char tmp[] = "/tmp/make-hetero-seeds-XXXXXX";
    if (!mkdtemp(tmp)) die("mkdtemp", strerror(errno));
    char data[4200];
    snprintf(data, sizeof data, "%s/typed", tmp);
    fs_rmat_opts_t o;
    fs_rmat_defaults(&o);
    o.out_dir = data, o.scale = 5, o.edge_factor = 2, o.dim = 2, o.threads = 1;
    fs_error_t err = {0};
    fs_dataset_t *ds;
    if (fs_gen_rmat_typed(&o, &err) != FS_OK) die("gen", err.msg);
    if (fs_dataset_open(data, 0, 1, &ds, &err) != FS_OK) die("open", err.msg);
    if (fs_exec_typed_graph_init(&graph, ds, &err) != FS_OK || fs_typed_sampler_create(&sampler, &err) != FS_OK)
        die("graph", err.msg);
    fs_limits_default(&limits);

    int64_t papers[] = {1, 2, 3, 5}, authors[] = {0, 7}, times[] = {2000, 2010, 1995, 2025};
    fs_hetero_seeds_t g[] = {{"paper", 4, papers, NULL}, {"author", 2, authors, NULL}};
    const char *ntab[] = {"feat", "labels"}, *etab[] = {"feat"};
    fs_hetero_fanout_t f[] = {{"paper", "cites", "paper", {3, 2}}, {"author", "writes", "paper", {2, 1}},
                              {"paper", "written_by", "author", {0, 2}}};
    fs_hetero_req_t req = FS_HETERO_REQ_INIT;
    req.num_hops = 2, req.fanouts = f, req.num_fanouts = 3, req.seed = 7;
    image("image-plain", g, 2, NULL, &req);
    request("hetero-plain", g, 2, NULL, &req);
    req.node_tables = ntab, req.num_node_tables = 2, req.edge_tables = etab, req.num_edge_tables = 1;
    req.frontier = FS_FRONTIER_ALL, req.out_dtype = FS_DTYPE_F32;
    image("image-tables-dgl", g, 2, NULL, &req);
    request("hetero-tables-dgl", g, 2, NULL, &req);
    req.frontier = FS_FRONTIER_NEW, req.disjoint = 1, req.out_dtype = FS_DTYPE_INVALID;
    image("image-disjoint", g, 1, NULL, &req);
    req.temporal = FS_TEMPORAL_LAST, req.strict = 1, req.window = 5;
    g[0].time = times;
    image("image-temporal", g, 1, NULL, &req);
    request("hetero-temporal", g, 1, NULL, &req);

    int64_t src[] = {1, 2, 3}, dst[] = {4, 5, 6}, label[] = {1, 0, 1};
    fs_hetero_req_t lreq = FS_HETERO_REQ_INIT;
    lreq.num_hops = 2, lreq.fanouts = f, lreq.num_fanouts = 1, lreq.seed = 3;
    lreq.node_tables = ntab, lreq.num_node_tables = 1;
    fs_link_req_t l = FS_LINK_REQ_INIT;
    l.src = "paper", l.rel = "cites", l.dst = "paper", l.count = 3, l.src_ids = src, l.dst_ids = dst;
    l.neg = FS_NEG_BINARY, l.amount = 1;
    image("image-link-binary", NULL, 0, &l, &lreq);
    request("link-binary", NULL, 0, &l, &lreq);
    l.neg = FS_NEG_TRIPLET, l.amount = 2;
    image("image-link-triplet", NULL, 0, &l, &lreq);
    request("link-triplet", NULL, 0, &l, &lreq);
    l.neg = FS_NEG_NONE, l.label = label, l.time = times;
    lreq.temporal = FS_TEMPORAL_UNIFORM;
    image("image-link-labels-timed", NULL, 0, &l, &lreq);
    request("link-labels-timed", NULL, 0, &l, &lreq);

    fs_typed_sampler_destroy(sampler);
    fs_exec_typed_graph_free(&graph);
    fs_dataset_close(ds);
    nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}
