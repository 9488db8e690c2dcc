/* test_typed_info.c — a typed dataset described and served: the engine's
 * fs_info_t (node types, edge types, link splits; a version-1 dataset as its
 * one node and one edge type), the InfoResponse codec both ways and its
 * refusal of bad indices, the homogeneous calls refused by name, and a
 * typed dataset served by `featstore serve` over unix:// and grpc://: the
 * same Info on both, typed split names with the dataset's own ids, and
 * placement refused. Expected values come from the fixtures' known contents
 * (tests/data/ogb_hetero_tiny, test_import.c) and from the dataset opened
 * here, not from the code that builds the info. */
#include <criterion/criterion.h>
#include <signal.h>
#include <string.h>

#include "engine.h"
#include "featstore/admin.h"
#include "featstore/client.h"
#include "fs_info.h"
#include "fs_pb.h"
#include "metrics.h"
#include "test_util.h"

TU_SCRATCH_DIR
TestSuite(typed_info, .init = setup, .fini = teardown);

/* tests/data/ogb_hetero_tiny with its reverses, imported into dir/name. */
static char *import_hetero(const char *name)
{
    char *d = tu_path(dir, name), *out;
    cr_assert_eq(tu_run(&out, "%s import ogb-hetero %s --add-reverse --out %s", tu_bin(), tu_data("ogb_hetero_tiny"), d),
                 0, "%s", out);
    free(out);
    return d;
}

typedef struct {
    fs_dataset_t *ds;
    fs_store_t *store;
    fs_engine_t *engine;
} served_t;

static void serve_in_process(served_t *s, fs_dataset_t *ds)
{
    fs_error_t err = {0};
    s->ds = ds;
    cr_assert_eq(fs_store_create(ds, &s->store, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_store_freeze(s->store, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(fs_engine_create(ds, s->store, NULL, &s->engine, &err), FS_OK, "%s", err.msg);
}

static void stop_in_process(served_t *s)
{
    fs_engine_destroy(s->engine);
    fs_store_destroy(s->store);
    fs_dataset_close(s->ds);
}

static const fs_table_info_t *table_named(const fs_table_info_t *t, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(t[i].name, name) == 0) return &t[i];
    return NULL;
}

static int edge_type_index(const fs_info_t *info, const char *src, const char *rel, const char *dst)
{
    for (size_t i = 0; i < info->num_edge_types; i++) {
        const fs_edge_type_info_t *e = &info->edge_types[i];
        if (!strcmp(e->src, src) && !strcmp(e->rel, rel) && !strcmp(e->dst, dst)) return (int)i;
    }
    return -1;
}

/* What test_import.c knows of ogb_hetero_tiny (--add-reverse). */
static void expect_hetero_tiny(const fs_info_t *info)
{
    cr_assert_str_eq(info->dataset, "ogb_hetero_tiny");
    cr_assert(info->typed);
    cr_assert_eq(info->num_nodes, 0, "the version-1 fields stay empty");
    cr_assert_eq(info->num_tables, 0);
    cr_assert_eq(info->num_splits, 0);
    cr_assert_eq(info->num_node_types, 4);
    static const char *const types[4] = {"author", "field_of_study", "institution", "paper"};
    static const int64_t counts[4] = {4, 3, 2, 6};
    for (int i = 0; i < 4; i++) {
        cr_assert_str_eq(info->node_types[i].name, types[i], "the server's order");
        cr_assert_eq(info->node_types[i].count, counts[i]);
    }
    const fs_node_type_info_t *paper = &info->node_types[3];
    cr_assert_eq(paper->num_tables, 2, "feat, then labels");
    cr_assert_str_eq(paper->tables[0].name, "feat");
    cr_assert(paper->tables[0].dtype == FS_DTYPE_F32 && paper->tables[0].rows == 6 && paper->tables[0].dim == 3);
    const fs_table_info_t *labels = table_named(paper->tables, paper->num_tables, "labels");
    cr_assert(labels && labels->dtype == FS_DTYPE_I64 && labels->rows == 6 && labels->dim == 1);
    cr_assert_eq(paper->num_classes, 3);
    cr_assert(paper->timed);
    cr_assert_eq(paper->num_splits, 3);
    cr_assert_str_eq(paper->splits[0], "train");
    cr_assert_str_eq(paper->splits[2], "test");
    cr_assert_eq(info->node_types[0].num_tables, 0, "authors have no features");
    cr_assert_not(info->node_types[0].timed);
    cr_assert_eq(info->num_edge_types, 8);
    int w = edge_type_index(info, "author", "writes", "paper");
    int rw = edge_type_index(info, "paper", "rev_writes", "author");
    int c = edge_type_index(info, "paper", "cites", "paper");
    cr_assert(w >= 0 && rw == w + 1 && c >= 0, "each relation followed by its reverse");
    cr_assert_eq(info->edge_types[w].reverse, rw);
    cr_assert_eq(info->edge_types[rw].reverse, w);
    cr_assert_eq(info->edge_types[w].num_edges, 8);
    cr_assert_not(info->edge_types[w].timed);
    const fs_edge_type_info_t *cites = &info->edge_types[c];
    cr_assert(cites->num_edges == 7 && cites->timed && !cites->weighted);
    cr_assert_eq(cites->num_tables, 1);
    cr_assert(!strcmp(cites->tables[0].name, "feat") && cites->tables[0].rows == 7 && cites->tables[0].dim == 2);
    cr_assert_eq(info->num_link_splits, 0);
}

Test(typed_info, the_engine_describes_every_type)
{
    char *d = import_hetero("h");
    served_t s;
    serve_in_process(&s, tu_open_dataset(d));
    fs_info_t *info;
    fs_error_t err = {0};
    cr_assert_eq(fs_engine_info(s.engine, &info, &err), FS_OK, "%s", err.msg);
    expect_hetero_tiny(info);
    fs_metrics_t *m = fs_metrics_create(s.ds, s.store);
    cr_assert_not_null(m);
    cr_assert_eq(fs_metrics_info(m, info), FS_OK);
    char *text = fs_metrics_render(m);
    cr_assert_not_null(strstr(text, "featstore_dataset_bytes{dataset=\"ogb_hetero_tiny\"}"), "%s", text);
    free(text);
    fs_metrics_destroy(m);
    fs_info_free(info);
    stop_in_process(&s);
    free(d);
}

Test(typed_info, a_version_1_dataset_is_one_node_type_and_one_edge_type)
{
    char *d = tu_path(dir, "v1");
    static const int64_t ip[5] = {0, 2, 3, 4, 4};
    static const int32_t ix[4] = {1, 2, 2, 0};
    tu_make_dataset(d, 4, ip, ix, 3);
    served_t s;
    serve_in_process(&s, tu_open_dataset(d));
    fs_info_t *info;
    fs_error_t err = {0};
    cr_assert_eq(fs_engine_info(s.engine, &info, &err), FS_OK, "%s", err.msg);
    cr_assert_not(info->typed);
    cr_assert_eq(info->num_nodes, 4);
    cr_assert_eq(info->num_node_types, 1);
    const fs_node_type_info_t *t = &info->node_types[0];
    cr_assert_str_eq(t->name, "node");
    cr_assert_eq(t->count, 4);
    cr_assert_eq(t->num_tables, info->num_tables);
    for (size_t i = 0; i < t->num_tables; i++) {
        cr_assert_str_eq(t->tables[i].name, info->tables[i].name);
        cr_assert(t->tables[i].dim == info->tables[i].dim && t->tables[i].dtype == info->tables[i].dtype);
    }
    cr_assert_eq(info->num_edge_types, 1);
    const fs_edge_type_info_t *e = &info->edge_types[0];
    cr_assert(!strcmp(e->src, "node") && !strcmp(e->rel, "to") && !strcmp(e->dst, "node"));
    cr_assert(e->num_edges == 4 && e->reverse == -1 && !e->timed && !e->weighted);
    cr_assert_eq(info->num_link_splits, 0);
    fs_info_free(info);
    /* the homogeneous calls still work on it */
    fs_dtype_t dt = FS_DTYPE_INVALID;
    size_t row_bytes;
    int64_t dim;
    cr_assert_eq(fs_engine_table(s.engine, "feat", &dt, &row_bytes, &dim, &err), FS_OK, "%s", err.msg);
    stop_in_process(&s);
    free(d);
}

Test(typed_info, homogeneous_calls_on_a_typed_dataset_say_which_call_to_use)
{
    char *d = import_hetero("h");
    served_t s;
    serve_in_process(&s, tu_open_dataset(d));
    fs_error_t err = {0};
    fs_sampler_t *sampler;
    cr_assert_eq(fs_sampler_create(&sampler, &err), FS_OK);
    fs_sample_result_t res = {0};
    int64_t seed = 0;
    fs_sample_req_t req = SAMPLE_REQ(.num_hops = 1, .fanout = {2});
    cr_assert_eq(fs_engine_sample(s.engine, sampler, &seed, 1, &req, NULL, FS_DTYPE_INVALID, &res, &err),
                 FS_ERR_UNSUPPORTED);
    cr_assert_not_null(strstr(err.msg, "dataset 'ogb_hetero_tiny' is typed (4 node types, 8 edge types): use "
                                       "HeteroSample/fs_hetero_sample"), "%s", err.msg);
    err = (fs_error_t){0};
    fs_dtype_t dt = FS_DTYPE_INVALID;
    size_t row_bytes;
    int64_t dim;
    cr_assert_eq(fs_engine_table(s.engine, "feat", &dt, &row_bytes, &dim, &err), FS_ERR_UNSUPPORTED);
    cr_assert_not_null(strstr(err.msg, "is typed (4 node types, 8 edge types)"), "%s", err.msg);
    float row[3];
    cr_assert_eq(fs_engine_gather(s.engine, "feat", &seed, 1, FS_DTYPE_INVALID, row, &err), FS_ERR_UNSUPPORTED);
    const fs_idset_t *split;
    cr_assert_eq(fs_engine_split(s.engine, "paper/valid", &split, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(split, &s.ds->node_types[3].splits[1]);
    cr_assert_eq(fs_engine_split(s.engine, "train", &split, &err), FS_ERR_NOT_FOUND);
    cr_assert_not_null(strstr(err.msg, "ask for paper/train"), "%s", err.msg);
    cr_assert_eq(fs_engine_split(s.engine, "paper/dev", &split, &err), FS_ERR_NOT_FOUND);
    cr_assert_not_null(strstr(err.msg, "its splits: train, valid, test"), "%s", err.msg);
    fs_sampler_destroy(sampler);
    stop_in_process(&s);
    free(d);
}

/* ---- the InfoResponse codec ---------------------------------------------------------- */

static fs_status_t round_trip(const fs_info_t *in, fs_info_t **out, fs_error_t *err)
{
    featstore_v1_InfoResponse msg;
    fs_pb_info_out_t enc;
    fs_pb_info_prepare_encode(in, &msg, &enc);
    void *buf;
    size_t len;
    cr_assert_eq(fs_pb_encode_alloc(featstore_v1_InfoResponse_fields, &msg, "Info", &buf, &len, err), FS_OK, "%s",
                 err->msg);
    fs_pb_info_in_t dec;
    cr_assert_eq(fs_pb_info_prepare_decode(&msg, &dec, err), FS_OK);
    fs_status_t st = fs_pb_decode_buffer(buf, len, featstore_v1_InfoResponse_fields, &msg, "Info", err);
    if (st == FS_OK) st = fs_pb_info_take(&msg, &dec, out, err);
    else fs_pb_info_abandon(&dec);
    free(buf);
    return st;
}

static void same_tables(const fs_table_info_t *a, const fs_table_info_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        cr_assert_str_eq(a[i].name, b[i].name);
        cr_assert(a[i].dtype == b[i].dtype && a[i].rows == b[i].rows && a[i].dim == b[i].dim, "%s", a[i].name);
    }
}

static void same_types(const fs_info_t *a, const fs_info_t *b)
{
    cr_assert_eq(a->typed, b->typed);
    cr_assert_eq(a->num_node_types, b->num_node_types);
    for (size_t i = 0; i < a->num_node_types; i++) {
        const fs_node_type_info_t *x = &a->node_types[i], *y = &b->node_types[i];
        cr_assert_str_eq(x->name, y->name);
        cr_assert(x->count == y->count && x->num_classes == y->num_classes && x->timed == y->timed, "%s", x->name);
        cr_assert(x->num_tables == y->num_tables && x->num_splits == y->num_splits, "%s", x->name);
        same_tables(x->tables, y->tables, x->num_tables);
        for (size_t k = 0; k < x->num_splits; k++) cr_assert_str_eq(x->splits[k], y->splits[k]);
    }
    cr_assert_eq(a->num_edge_types, b->num_edge_types);
    for (size_t i = 0; i < a->num_edge_types; i++) {
        const fs_edge_type_info_t *x = &a->edge_types[i], *y = &b->edge_types[i];
        cr_assert(!strcmp(x->src, y->src) && !strcmp(x->rel, y->rel) && !strcmp(x->dst, y->dst));
        cr_assert(x->num_edges == y->num_edges && x->weighted == y->weighted && x->timed == y->timed &&
                  x->reverse == y->reverse && x->num_tables == y->num_tables, "%s", x->rel);
        same_tables(x->tables, y->tables, x->num_tables);
    }
    cr_assert_eq(a->num_link_splits, b->num_link_splits);
    for (size_t i = 0; i < a->num_link_splits; i++) {
        const fs_link_split_info_t *x = &a->link_splits[i], *y = &b->link_splits[i];
        cr_assert_str_eq(x->name, y->name);
        cr_assert(x->edge_type == y->edge_type && x->count == y->count && x->labelled == y->labelled &&
                  x->timed == y->timed && x->num_neg == y->num_neg, "%s", x->name);
    }
}

/* A typed info as the engine builds one, with a link split. */
static fs_info_t *typed_info(void)
{
    fs_info_t *info = fs_info_new();
    fs_info_set_text(&info->server_version, "1.3.0");
    fs_info_set_text(&info->dataset, "g");
    info->typed = 1;
    static const char *const names[2] = {"paper", "author"};
    for (int i = 0; i < 2; i++) {
        fs_node_type_info_t *t = fs_info_add_node_type(info);
        fs_info_set_text(&t->name, names[i]);
        t->count = 10 * (i + 1);
    }
    fs_node_type_info_t *p = (fs_node_type_info_t *)&info->node_types[0];
    fs_table_info_t *tab = fs_info_add_node_type_table(p);
    fs_info_set_text(&tab->name, "feat");
    tab->dtype = FS_DTYPE_BF16, tab->rows = 10, tab->dim = 5;
    fs_info_set_text(fs_info_add_node_type_split(p), "train");
    p->timed = 1, p->num_classes = 4;
    static const char *const rel[3][3] = {{"author", "writes", "paper"}, {"paper", "written_by", "author"},
                                          {"paper", "cites", "paper"}};
    for (int i = 0; i < 3; i++) {
        fs_edge_type_info_t *e = fs_info_add_edge_type(info);
        fs_info_set_text(&e->src, rel[i][0]);
        fs_info_set_text(&e->rel, rel[i][1]);
        fs_info_set_text(&e->dst, rel[i][2]);
        e->num_edges = 30 + i, e->reverse = i < 2 ? 1 - i : -1, e->weighted = i == 2, e->timed = i == 0;
    }
    fs_table_info_t *et = fs_info_add_edge_type_table((fs_edge_type_info_t *)&info->edge_types[2]);
    fs_info_set_text(&et->name, "w");
    et->dtype = FS_DTYPE_F16, et->rows = 32, et->dim = 2;
    fs_link_split_info_t *l = fs_info_add_link_split(info);
    fs_info_set_text(&l->name, "train");
    l->edge_type = 2, l->count = 12, l->labelled = 1, l->num_neg = 3;
    return info;
}

Test(typed_info, the_codec_round_trips_the_types)
{
    fs_info_t *a = typed_info(), *b;
    fs_error_t err = {0};
    cr_assert_eq(round_trip(a, &b, &err), FS_OK, "%s", err.msg);
    same_types(a, b);
    fs_info_free(b);
    fs_info_free(a);
}

/* Ways a server's bytes can lie about the types: spoil(info, k) makes lie k,
 * SPOILED[k] is what the refusal says. */
static const char *const SPOILED[] = {
    "link split 'train': edge_type 3 is not an index into the 3 edge_types",
    "edge type (paper, cites, paper): reverse 7 is not -1 or an index",
    "edge type (author, writes, paper): reverse -2",
    "node_types[1].name is empty",
    "edge type (paper, cites, venue): 'venue' is not among node_types",
    "node type 'author': count -1",
    "link split 'train': count 12 and num_neg -3",
    "node type 'paper': table 'feat' has dtype invalid",
    "edge_types[1] needs src, rel and dst names",
    "link split 'train': edge_type -1",
    "node type 'paper': splits[0] is empty",
};

static void spoil(fs_info_t *i, int k)
{
    fs_node_type_info_t *nt = (fs_node_type_info_t *)i->node_types;
    fs_edge_type_info_t *et = (fs_edge_type_info_t *)i->edge_types;
    fs_link_split_info_t *ls = (fs_link_split_info_t *)i->link_splits;
    switch (k) {
    case 0: ls[0].edge_type = 3; break;
    case 1: et[2].reverse = 7; break;
    case 2: et[0].reverse = -2; break;
    case 3: fs_info_set_text(&nt[1].name, ""); break;
    case 4: fs_info_set_text(&et[2].dst, "venue"); break;
    case 5: nt[1].count = -1; break;
    case 6: ls[0].num_neg = -3; break;
    case 7: ((fs_table_info_t *)nt[0].tables)[0].dtype = FS_DTYPE_INVALID; break;
    case 8: fs_info_set_text(&et[1].rel, ""); break;
    case 9: ls[0].edge_type = -1; break;
    case 10: fs_info_set_text((const char **)&nt[0].splits[0], ""); break;
    }
}

Test(typed_info, the_codec_refuses_bad_types_naming_the_field)
{
    for (int k = 0; k < (int)(sizeof SPOILED / sizeof *SPOILED); k++) {
        fs_info_t *a = typed_info(), *b = NULL;
        spoil(a, k);
        fs_error_t err = {0};
        cr_assert_eq(round_trip(a, &b, &err), FS_ERR_FORMAT, "case %d: %s", k, err.msg);
        cr_assert_null(b);
        cr_assert_not_null(strstr(err.msg, SPOILED[k]), "'%s' not in: %s", SPOILED[k], err.msg);
        fs_info_free(a);
    }
}

/* ---- served: featstore serve, over unix:// and grpc:// -------------------------------- */

static void expect_ids(fs_client_t *c, const char *name, const fs_idset_t *want)
{
    fs_ids_t *ids;
    cr_assert_eq(fs_split(c, name, &ids), FS_OK, "%s: %s", name, fs_client_errstr(c));
    cr_assert_eq(ids->n, want->count, "%s", name);
    cr_assert(want->count == 0 || memcmp(ids->ids, want->ids, (size_t)want->count * 8) == 0, "%s: other ids", name);
    fs_ids_free(ids);
}

static void expect_refused(fs_client_t *c, fs_status_t st, fs_status_t want, const char *needle)
{
    cr_assert_eq(st, want, "%s", fs_client_errstr(c));
    cr_assert_not_null(strstr(fs_client_errstr(c), needle), "'%s' not in: %s", needle, fs_client_errstr(c));
}

Test(typed_info, a_typed_dataset_is_served_over_both_transports, .timeout = 300)
{
    char *d = tu_path(dir, "rmat"), *out;
    cr_assert_eq(tu_run(&out, "%s gen rmat --typed --scale 6 --edge-factor 4 --dim 4 --threads 2 --out %s", tu_bin(), d),
                 0, "%s", out);
    free(out);
    served_t local;
    serve_in_process(&local, tu_open_dataset(d)); /* the facts and ids to expect */
    fs_info_t *want;
    fs_error_t err = {0};
    cr_assert_eq(fs_engine_info(local.engine, &want, &err), FS_OK, "%s", err.msg);
    cr_assert(want->typed && want->num_node_types == 3 && want->num_edge_types == 6 && want->num_link_splits == 3);

    char *sock = tu_path(dir, "s.sock");
    tu_server_t srv;
    cr_assert_eq(tu_serve(&srv, d, sock, ""), 0, "a typed dataset is served");
    char uris[2][4200];
    snprintf(uris[0], sizeof uris[0], "unix://%s", sock);
    snprintf(uris[1], sizeof uris[1], "grpc://127.0.0.1:%d", srv.grpc_port);
    for (int k = 0; k < 2; k++) {
        fs_client_t *c;
        cr_assert_eq(fs_connect(uris[k], NULL, &c), FS_OK, "%s: %s", uris[k], fs_client_errstr(c));
        fs_info_t *info;
        cr_assert_eq(fs_info(c, &info), FS_OK, "%s", fs_client_errstr(c));
        same_types(want, info);
        cr_assert_eq(info->num_nodes, 0);
        fs_info_free(info);
        expect_ids(c, "paper/train", fs_dataset_split(local.ds, "paper/train"));
        expect_ids(c, "paper/test", &local.ds->node_types[0].splits[2]);
        const fs_link_split_t *l = &local.ds->link_splits[1];
        cr_assert_str_eq(l->name, "valid");
        expect_ids(c, "link/valid/src", &(fs_idset_t){.count = l->count, .ids = l->src});
        expect_ids(c, "link/valid/dst", &(fs_idset_t){.count = l->count, .ids = l->dst});
        expect_ids(c, "link/valid/time", &(fs_idset_t){.count = l->count, .ids = l->time});
        fs_ids_t *ids;
        expect_refused(c, fs_split(c, "train", &ids), FS_ERR_NOT_FOUND, "ask for paper/train");
        expect_refused(c, fs_split(c, "link/valid/label", &ids), FS_ERR_NOT_FOUND,
                       "link split 'valid' has no array 'label'; it has src, dst, time");
        int64_t id = 0;
        fs_batch_t *b;
        expect_refused(c, fs_gather(c, &id, 1, "feat", FS_DTYPE_INVALID, &b), FS_ERR_UNSUPPORTED, "typed");
        fs_close(c);
    }
    fs_client_t *admin;
    cr_assert_eq(fs_connect(uris[0], NULL, &admin), FS_OK, "%s", fs_client_errstr(admin));
    fs_replan_opts_t ro = FS_REPLAN_OPTS_INIT;
    ro.topology = "pcie4";
    expect_refused(admin, fs_replan(admin, &ro, NULL), FS_ERR_UNSUPPORTED, "re-plan: placement plans one graph");
    fs_close(admin);
    char *metrics = tu_metrics_with(srv.metrics_port, "featstore_dataset_bytes");
    cr_assert_not_null(strstr(metrics, "rmat-typed"), "%s", metrics);
    free(metrics);
    cr_assert_eq(tu_serve_stop(&srv, SIGTERM), 0);

    cr_assert_neq(tu_run(&out, "timeout 60 %s serve %s --listen 127.0.0.1:0 --metrics 127.0.0.1:0 --topology pcie4 "
                               "--gpu-budget 0.5", tu_bin(), d), 0);
    cr_assert_not_null(strstr(out, "serve: placement plans one graph; dataset"), "%s", out);
    cr_assert_not_null(strstr(out, "is typed (3 node types, 6 edge types): serve it without --topology, --plan"), "%s",
                       out);
    free(out);
    fs_info_free(want);
    stop_in_process(&local);
    free(sock);
    free(d);
}
