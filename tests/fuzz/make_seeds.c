/* make_seeds.c — writes the seed corpora of tests/fuzz/corpus with the
 * project's own encoders, so every seed is an input the real writers
 * produce (plus a few edge cases each): `make_seeds <corpus dir>`. Run it
 * after a wire format changes and commit what changed; the harnesses'
 * regression seeds (crash-* files) are not touched.
 *
 * Seed file layout per harness (its first bytes pick a mode: see each
 * harness): fuzz_npy whole files; fuzz_manifest manifest texts (for the
 * fixture of fuzz_dataset_fixture.h); fuzz_topology JSON texts; fuzz_plan
 * mode byte + plan file or body; fuzz_local kind byte + payload (frames:
 * + option byte + datagram); fuzz_grpc kind byte + slicing byte + message. */
#include <errno.h>
#include <ftw.h>
#include <sys/socket.h>
#include <unistd.h>
#include <xxhash.h>

#include "fs_info.h"
#include "fs_local.h"
#include "fs_pb.h"
#include "fs_wire.h"
#include "fuzz_common.h"
#include "fuzz_dataset_fixture.h"
#include "fuzz_hw_json.h"
#include "plan.h"

static char root[4096];
static int seeds;

static void put(const char *harness, const char *name, const void *prefix, size_t plen, const void *data, size_t len)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", root, harness);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/%s", root, harness, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(prefix, 1, plen, f) != plen || (len && fwrite(data, 1, len, f) != len) || fclose(f) != 0) {
        fprintf(stderr, "make_seeds: cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
    seeds++;
}

static void put_text(const char *harness, const char *name, const char *text)
{
    put(harness, name, "", 0, text, strlen(text));
}

/* ---- fuzz_npy ------------------------------------------------------------------------ */

static void npy_with_dict(const char *name, int version, const char *dict, const void *data, size_t len)
{
    uint8_t buf[512];
    size_t pre = version == 1 ? 10 : 12, dl = strlen(dict);
    size_t total = (pre + dl + 1 + 15) / 16 * 16; /* numpy pads with spaces and a newline to 16 bytes */
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (uint8_t)version, buf[7] = 0;
    size_t n = total - pre;
    for (size_t i = 0; i < (version == 1 ? 2u : 4u); i++) buf[8 + i] = (uint8_t)(n >> (8 * i));
    memset(buf + pre, ' ', n);
    memcpy(buf + pre, dict, dl);
    buf[total - 1] = '\n';
    put("fuzz_npy", name, buf, total, data, len);
}

static void npy_seeds(void)
{
    static const struct { fs_dtype_t dt; int ndim; int64_t shape[2]; const char *name; } w[] = {
        {FS_DTYPE_I64, 1, {7, 0}, "writer-indptr-i64"}, {FS_DTYPE_I32, 1, {8, 0}, "writer-indices-i32"},
        {FS_DTYPE_F32, 2, {6, 4}, "writer-table-f32"},   {FS_DTYPE_F16, 2, {6, 3}, "writer-table-f16"},
        {FS_DTYPE_BF16, 2, {6, 2}, "writer-table-bf16"}, {FS_DTYPE_BOOL, 1, {3, 0}, "writer-bool"},
        {FS_DTYPE_F64, 2, {0, 5}, "writer-empty-f64"},
    };
    uint8_t data[256] = {0};
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        char h[FS_NPY_WRITE_HEADER_LEN];
        fs_npy_format(h, w[i].dt, w[i].ndim, w[i].shape);
        size_t bytes = fs_dtype_size(w[i].dt) * (size_t)w[i].shape[0] * (size_t)(w[i].ndim == 2 ? w[i].shape[1] : 1);
        put("fuzz_npy", w[i].name, h, sizeof h, data, bytes < sizeof data ? bytes : sizeof data);
    }
    npy_with_dict("numpy-v1-2d", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", data, 24);
    npy_with_dict("numpy-v2", 2, "{'descr': '<i8', 'fortran_order': False, 'shape': (4,), }", data, 32);
    npy_with_dict("numpy-v3-scalar", 3, "{'descr': '<u2', 'fortran_order': False, 'shape': (), }", data, 2);
    npy_with_dict("keys-any-order", 1, "{\"shape\": (3L, 2L), \"fortran_order\": True, \"descr\": \"|u1\"}", data, 6);
    npy_with_dict("fortran-1d", 1, "{'descr': '<f8', 'fortran_order': True, 'shape': (2,), }", data, 16);
    npy_with_dict("fortran-2d", 1, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 2), }", data, 32);
    npy_with_dict("object", 1, "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", data, 8);
    npy_with_dict("big-endian", 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", data, 4);
    npy_with_dict("three-dims", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1), }", data, 4);
    npy_with_dict("huge-shape", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (9223372036854775807, 4), }",
                  data, 0);
    npy_with_dict("struct-dtype", 1, "{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (1,), }", data, 4);
    static const char truncated[] = "\x93NUMPY\x01\x00\xff\x00{'descr'";
    put("fuzz_npy", "truncated-header", truncated, sizeof truncated - 1, NULL, 0);
}

/* ---- fuzz_manifest ------------------------------------------------------------------- */

static char fixture[4096];

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* "name": {"bytes": ..., "xxh3": "..."} of a fixture file, as the writer records it. */
static void file_entry(char *out, size_t cap, const char *file)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", fixture, file);
    FILE *f = fopen(path, "rb");
    uint8_t buf[4096];
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f) fclose(f);
    size_t len = strlen(out);
    snprintf(out + len, cap - len, "%s\"%s\": {\"bytes\": %zu, \"xxh3\": \"%016llx\"}", len > 1 ? ", " : "", file, n,
             (unsigned long long)XXH3_64bits(buf, n));
}

static void manifest_seeds(void)
{
    snprintf(fixture, sizeof fixture, "%s/fs-make-seeds-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(fixture) || fuzz_dataset_fixture(fixture) != 0) {
        fprintf(stderr, "make_seeds: cannot write the dataset fixture\n");
        exit(1);
    }
    const char *head = "\"format\": \"featstore-dataset\", \"version\": 1, \"name\": \"fixture\", \"num_nodes\": 6, "
                       "\"num_edges\": 8";
    char files[4096] = "{", text[8192];
    const char *all[] = {"indptr.npy", "indices.npy", "edge_weights.npy", "table_feat.npy", "table_half.npy",
                         "table_bf16.npy", "labels.npy", "split_train.npy", "node_ids.npy"};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) file_entry(files, sizeof files, all[i]);
    snprintf(files + strlen(files), sizeof files - strlen(files), "}");
    snprintf(text, sizeof text,
             "{%s, \"symmetric\": false,\n \"topology\": {\"indptr\": \"indptr.npy\", \"indices\": \"indices.npy\", "
             "\"edge_weights\": \"edge_weights.npy\"},\n \"features\": {\"feat\": {\"file\": \"table_feat.npy\", "
             "\"dtype\": \"float32\"}, \"half\": {\"file\": \"table_half.npy\", \"dtype\": \"float16\"}, \"bf\": "
             "{\"file\": \"table_bf16.npy\", \"dtype\": \"bfloat16\"}},\n \"labels\": {\"file\": \"labels.npy\", "
             "\"num_classes\": 3},\n \"splits\": {\"train\": \"split_train.npy\"},\n \"node_ids\": \"node_ids.npy\",\n"
             " \"source\": {\"importer\": \"fuzz\"},\n \"files\": %s}\n", head, files);
    put_text("fuzz_manifest", "full-with-checksums", text);
    /* hop tables as `featstore propagate --rows all` records them (dataset/dataset_prop.c) */
    snprintf(text, sizeof text,
             "{%s, \"symmetric\": true,\n \"topology\": {\"indptr\": \"indptr.npy\", \"indices\": \"indices.npy\"},\n"
             " \"features\": {\"feat\": {\"file\": \"table_feat.npy\", \"dtype\": \"float32\"}, \"hop_0\": {\"file\": "
             "\"table_feat.npy\", \"dtype\": \"float32\"}, \"hop_1\": {\"file\": \"table_feat.npy\", \"dtype\": "
             "\"float32\"}},\n \"propagation\": {\"tables\": [\"hop_0\", \"hop_1\"], \"source_table\": \"feat\", "
             "\"hops\": 1, \"norm\": \"sym\", \"self_loops\": true, \"graph\": \"stored\", \"dtype\": \"float32\", "
             "\"accumulate\": \"float32\", \"rows\": \"all\", \"made_by\": \"featstore propagate\"},\n \"files\": %s}\n",
             head, files);
    put_text("fuzz_manifest", "propagated", text);
    snprintf(text, sizeof text, "{%s, \"topology\": {\"indptr\": \"indptr.npy\", \"indices\": \"indices.npy\"}}", head);
    put_text("fuzz_manifest", "minimal", text);
    /* compressed tables as `featstore compress` records them, and codecs that do not fit */
    snprintf(text, sizeof text, "{%s, \"topology\": {\"indptr\": \"indptr.npy\", \"indices\": \"indices.npy\"}, "
             "\"features\": {\"q\": {\"file\": \"table_q8.npy\", \"dtype\": \"int8\", \"codec\": \"int8\", "
             "\"source\": \"feat\", \"max_abs_error\": 0.5}, \"h\": {\"file\": \"table_half.npy\", \"dtype\": "
             "\"float16\", \"codec\": \"narrow\"}, \"x\": {\"file\": \"table_feat.npy\", \"codec\": \"int8\"}}}",
             head);
    put_text("fuzz_manifest", "compressed", text);
    snprintf(text, sizeof text, "{%s, \"topology\": {\"indptr\": \"indptr.npy\", \"indices\": \"indices64.npy\"}, "
             "\"features\": {\"feat\": {\"file\": \"table_feat.npy\"}}, \"splits\": {\"train\": \"split_train.npy\", "
             "\"bad\": \"split_bad.npy\"}}", head);
    put_text("fuzz_manifest", "int64-indices-bad-split", text);
    snprintf(text, sizeof text, "{%s, \"topology\": {\"indptr\": \"indptr_bad.npy\", \"indices\": \"indices.npy\", "
             "\"edge_weights\": \"weights_nan.npy\"}}", head);
    put_text("fuzz_manifest", "non-monotone-nan", text);
    snprintf(text, sizeof text, "{%s, \"topology\": {\"indptr\": \"indptr.npy\", \"indices\": \"indices.npy\"}, "
             "\"features\": {\"labels\": {\"file\": \"table_short.npy\"}, \"x\": {\"file\": \"../indptr.npy\"}}, "
             "\"labels\": {\"file\": \"labels.npy\", \"num_classes\": -1}}", head);
    put_text("fuzz_manifest", "reserved-name-escape", text);
    snprintf(text, sizeof text, "{%s, \"topology\": {\"indptr\": \"garbage.npy\", \"indices\": \"empty.npy\"}, "
             "\"node_ids\": \"truncated.npy\", \"splits\": {\"d\": \"subdir.npy\"}}", head);
    put_text("fuzz_manifest", "broken-files", text);
    put_text("fuzz_manifest", "huge-counts",
             "{\"format\": \"featstore-dataset\", \"version\": 1, \"num_nodes\": 9223372036854775807, "
             "\"num_edges\": 9223372036854775807, \"topology\": {\"indptr\": \"indptr.npy\", \"indices\": \"indices.npy\"}}");
    put_text("fuzz_manifest", "wrong-version", "{\"format\": \"featstore-dataset\", \"version\": 3}");
    /* version 2: two node types over the fixture's arrays, two edge types (one the other's reverse), a link split */
    put_text("fuzz_manifest", "typed",
             "{\"format\": \"featstore-dataset\", \"version\": 2, \"node_types\": ["
             "{\"name\": \"a\", \"count\": 6, \"time\": \"node_ids.npy\", \"features\": {\"feat\": {\"file\": "
             "\"table_feat.npy\"}}, \"labels\": {\"file\": \"labels.npy\", \"num_classes\": 3}, \"splits\": "
             "{\"train\": \"split_train.npy\"}}, {\"name\": \"b\", \"count\": 6}],\n \"edge_types\": ["
             "{\"src\": \"a\", \"rel\": \"r\", \"dst\": \"b\", \"num_edges\": 8, \"indptr\": \"indptr.npy\", "
             "\"indices\": \"indices.npy\", \"edge_ids\": \"edge_ids.npy\", \"time\": \"edge_time.npy\", "
             "\"weights\": \"edge_weights.npy\", \"reverse\": \"rev\"},\n {\"src\": \"b\", \"rel\": \"rev\", "
             "\"dst\": \"a\", \"num_edges\": 8, \"indptr\": \"indptr.npy\", \"indices\": \"indices64.npy\", "
             "\"reverse\": \"r\"}],\n \"link_splits\": {\"train\": {\"edge_type\": [\"a\", \"r\", \"b\"], "
             "\"src\": \"split_train.npy\", \"dst\": \"split_train.npy\", \"label\": \"split_train.npy\"}}}");
    put_text("fuzz_manifest", "typed-broken",
             "{\"format\": \"featstore-dataset\", \"version\": 2, \"node_types\": [{\"name\": \"a\", \"count\": 6}],"
             " \"edge_types\": [{\"src\": \"a\", \"rel\": \"r\", \"dst\": \"a\", \"num_edges\": 8, \"indptr\": "
             "\"indptr.npy\", \"indices\": \"indices.npy\", \"edge_ids\": \"edge_ids_dup.npy\", \"time\": "
             "\"edge_time_bad.npy\", \"features\": {\"x\": {\"file\": \"table_feat.npy\"}}}]}");
    nftw(fixture, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

/* ---- fuzz_topology ----------------------------------------------------------------------- */

static void topology_seeds(void)
{
    for (int i = 0; fs_hw_preset_name(i); i++) {
        fs_hardware_t hw;
        fs_error_t err;
        int kept;
        if (fs_hw_preset(fs_hw_preset_name(i), &hw, &err) != FS_OK) exit(1);
        char *text = fuzz_hw_to_json(&hw, &kept), name[64];
        snprintf(name, sizeof name, "preset-%s", fs_hw_preset_name(i));
        put_text("fuzz_topology", name, text);
        free(text);
    }
    put_text("fuzz_topology", "readme-example",
             "{\"name\": \"two-pairs\", \"gpus\": [{\"memory_bytes\": 17179869184}, {\"memory_bytes\": 17179869184, "
             "\"local_gbps\": 900}, {\"memory_bytes\": 0}], \"links\": [[0, 1, 50.0], [1, 2, 25]], \"host_gbps\": 25}");
    put_text("fuzz_topology", "host-per-gpu-inferred-switch",
             "{\"gpus\": [{\"memory_bytes\": 1}, {\"memory_bytes\": 2}, {\"memory_bytes\": 3}], \"links\": "
             "[[0, 1, 300], [0, 2, 300], [1, 2, 300]], \"host_gbps\": [12, 12.5, 1e3]}");
    put_text("fuzz_topology", "bad-fields",
             "{\"name\": 7, \"fabric\": \"infiniband\", \"gpus\": [{\"memory_bytes\": -1, \"local_gbps\": -0.0}], "
             "\"links\": [[0, 0, 1], [0, 16, 1], [0, 1]], \"host_gbps\": [0]}");
    put_text("fuzz_topology", "duplicate-key", "{\"gpus\": [], \"gpus\": [{\"memory_bytes\": 1}], \"host_gbps\": 1}");
}

/* ---- fuzz_plan ----------------------------------------------------------------------------- */

static void plan_seed(const char *preset, fs_feat_policy_t policy, int topology, const char *name)
{
    enum { N = 24 };
    int64_t indptr[N + 1];
    double p[N];
    for (int v = 0; v <= N; v++) indptr[v] = 2 * v;
    for (int v = 0; v < N; v++) p[v] = 1.0 / (1 + v);
    fs_hardware_t hw;
    fs_error_t err;
    fs_plan_opts_t o;
    fs_plan_t *plan;
    fs_plan_defaults(&o);
    o.policy = policy;
    o.threads = 1;
    fs_plan_input_t in = {.num_nodes = N, .p = p, .row_bytes = 16, .indptr = topology ? indptr : NULL,
                          .index_bytes = 4};
    if (fs_hw_preset(preset, &hw, &err) != FS_OK || fs_hw_set_memory(&hw, 256, &err) != FS_OK ||
        fs_plan_build(&hw, &in, &o, &plan, &err) != FS_OK) {
        fprintf(stderr, "make_seeds: plan %s: %s\n", name, err.msg);
        exit(1);
    }
    char path[8192], mode_name[256];
    snprintf(path, sizeof path, "%s/.make-seeds-%d.plan", root, (int)getpid());
    if (fs_plan_save(plan, path, &err) != FS_OK) exit(1);
    fs_plan_free(plan);
    FILE *f = fopen(path, "rb");
    static uint8_t buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    remove(path);
    snprintf(mode_name, sizeof mode_name, "file-%s", name);
    put("fuzz_plan", mode_name, "\x00", 1, buf, n);
    snprintf(mode_name, sizeof mode_name, "body-%s", name); /* the harness seals it again */
    put("fuzz_plan", mode_name, "\x01", 1, buf + 24, n - 32);
}

static void plan_seeds(void)
{
    plan_seed("pcie4", FS_FEAT_RULE1, 0, "pcie4-rule1");
    plan_seed("nvlink-pairs", FS_FEAT_ALGO1, 1, "pairs-algo1-topology");
    plan_seed("dgx1-v100", FS_FEAT_XGNN, 1, "dgx1-xgnn-topology");
    plan_seed("nvswitch8", FS_FEAT_DEGREE, 0, "nvswitch8-degree");
    put("fuzz_plan", "file-short", "\x00" "FSPLAN\r\n", 9, NULL, 0);
}

/* ---- fuzz_local ------------------------------------------------------------------------------ */

enum { L_FRAME, L_HELLO, L_WELCOME, L_REPORT, L_SPLIT_REQ, L_SPLIT_REPLY, L_REPLAN_REQ, L_REPLAN_REPLY, L_ERROR,
       L_INFO_REPLY, L_NEGOTIATE, L_SESSION, L_SHARD_HELLO, L_SHARD_PART };

static void put_msg(const char *harness, const char *name, const uint8_t *prefix, size_t plen,
                    const pb_msgdesc_t *type, const void *msg)
{
    void *buf;
    size_t len;
    fs_error_t err;
    if (fs_pb_encode_alloc(type, msg, name, &buf, &len, &err) != FS_OK) {
        fprintf(stderr, "make_seeds: %s: %s\n", name, err.msg);
        exit(1);
    }
    put(harness, name, prefix, plen, buf, len);
    free(buf);
}

static fs_tier_info_t *tier_host(fs_info_t *info)
{
    fs_tier_info_t *k = fs_info_add_tier(info);
    fs_info_set_text(&k->kind, "host");
    k->device = -1;
    return k;
}

static fs_info_t *sample_info(void)
{
    fs_info_t *info = fs_info_new();
    fs_info_set_text(&info->server_version, "1.0.0");
    fs_info_set_text(&info->dataset, "cora");
    info->num_nodes = 2708, info->num_edges = 5429, info->num_classes = 7, info->weighted = 1;
    fs_table_info_t *t = fs_info_add_table(info);
    fs_info_set_text(&t->name, "feat");
    t->dtype = FS_DTYPE_F32, t->rows = 2708, t->dim = 1433;
    t = fs_info_add_table(info);
    fs_info_set_text(&t->name, "labels");
    t->dtype = FS_DTYPE_I64, t->rows = 2708, t->dim = 1;
    fs_info_set_text(fs_info_add_split(info), "train");
    fs_info_set_text(fs_info_add_split(info), "test");
    fs_tier_info_t *k = tier_host(info);
    k = fs_info_add_tier(info);
    fs_info_set_text(&k->kind, "sim_device");
    k->device = 0, k->capacity_bytes = 1 << 20, k->used_bytes = 4096;
    *fs_info_add_reader(info) = (fs_reader_info_t){0, {1e6, 2e5, 3e4}, {100, 20, 3}};
    info->placement_generation = 2;
    return info;
}

static void add_type_table(fs_table_info_t *t, const char *name, fs_dtype_t dt, int64_t rows, int64_t dim)
{
    fs_info_set_text(&t->name, name);
    t->dtype = dt, t->rows = rows, t->dim = dim;
}

/* A typed graph's Info (since 1.3): node types with tables and splits, edge
 * types with reverses and edge tables, link splits. bad_index: a link
 * split's edge type out of range, which decodes but is refused when taken. */
static fs_info_t *typed_info(int bad_index)
{
    fs_info_t *info = fs_info_new();
    fs_info_set_text(&info->server_version, "1.3.0");
    fs_info_set_text(&info->dataset, "rmat-typed");
    info->typed = 1;
    static const char *const types[3] = {"paper", "author", "venue"};
    static const int64_t counts[3] = {64, 32, 16};
    for (int i = 0; i < 3; i++) {
        fs_node_type_info_t *t = fs_info_add_node_type(info);
        fs_info_set_text(&t->name, types[i]);
        t->count = counts[i];
        add_type_table(fs_info_add_node_type_table(t), "feat", FS_DTYPE_F32, counts[i], 4);
        if (i == 0) {
            add_type_table(fs_info_add_node_type_table(t), "labels", FS_DTYPE_I64, counts[i], 1);
            t->num_classes = 16, t->timed = 1;
            fs_info_set_text(fs_info_add_node_type_split(t), "train");
            fs_info_set_text(fs_info_add_node_type_split(t), "valid");
        }
    }
    static const char *const rel[4][3] = {{"author", "writes", "paper"}, {"paper", "written_by", "author"},
                                          {"paper", "cites", "paper"}, {"paper", "published_in", "venue"}};
    for (int i = 0; i < 4; i++) {
        fs_edge_type_info_t *e = fs_info_add_edge_type(info);
        fs_info_set_text(&e->src, rel[i][0]);
        fs_info_set_text(&e->rel, rel[i][1]);
        fs_info_set_text(&e->dst, rel[i][2]);
        e->num_edges = 100 + i, e->timed = 1, e->weighted = i == 2;
        e->reverse = i < 2 ? 1 - i : -1;
        if (i == 2) add_type_table(fs_info_add_edge_type_table(e), "feat", FS_DTYPE_F16, 102, 8);
    }
    fs_link_split_info_t *l = fs_info_add_link_split(info);
    fs_info_set_text(&l->name, "train");
    l->edge_type = bad_index ? 4 : 2, l->count = 80, l->labelled = 1, l->timed = 1, l->num_neg = 3;
    tier_host(info);
    return info;
}

static void local_frame_seeds(void)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) != 0) exit(1);
    featstore_local_Hello h = {.major = FS_LOCAL_MAJOR, .minor = FS_LOCAL_MINOR, .slots = 4, .pid = 1234, .reader = -1};
    snprintf(h.library_version, sizeof h.library_version, "1.0.0");
    uint8_t buf[4096], prefix[2] = {L_FRAME, 0};
    fs_local_send_msg(sv[0], FS_LOCAL_HELLO, featstore_local_Hello_fields, &h, NULL, 0, 0);
    ssize_t n = recv(sv[1], buf, sizeof buf, 0);
    put("fuzz_local", "frame-hello", prefix, 2, buf, (size_t)n);
    prefix[1] = 0x05; /* one descriptor sent, one wanted */
    put("fuzz_local", "frame-hello-fd", prefix, 2, buf, (size_t)n);
    prefix[1] = 0x10; /* a 4-byte buffer: truncated */
    put("fuzz_local", "frame-hello-truncated", prefix, 2, buf, (size_t)n);
    fs_local_send(sv[0], FS_LOCAL_INFO, NULL, 0, NULL, 0, 0);
    n = recv(sv[1], buf, sizeof buf, 0);
    prefix[1] = 0;
    put("fuzz_local", "frame-info", prefix, 2, buf, (size_t)n);
    fs_local_send_legacy_error(sv[0], 5, FS_ERR_VERSION, "upgrade");
    n = recv(sv[1], buf, sizeof buf, 0);
    put("fuzz_local", "frame-legacy-major5", prefix, 2, buf, (size_t)n);
    close(sv[0]), close(sv[1]);
}

static void local_session_seeds(void);

static void local_seeds(void)
{
    local_session_seeds();
    local_frame_seeds();
    uint8_t k;
    featstore_local_Hello h = {.major = FS_LOCAL_MAJOR, .minor = FS_LOCAL_MINOR, .slots = 8, .pid = 4242, .reader = 0};
    snprintf(h.library_version, sizeof h.library_version, "1.0.0");
    k = L_HELLO, put_msg("fuzz_local", "hello-6.1", &k, 1, featstore_local_Hello_fields, &h);
    h.minor = 0, h.library_version[0] = '\0';
    put_msg("fuzz_local", "hello-6.0", &k, 1, featstore_local_Hello_fields, &h);
    h.major = 7;
    put_msg("fuzz_local", "hello-7.0", &k, 1, featstore_local_Hello_fields, &h);
    featstore_local_ShardHello sh = {.major = FS_LOCAL_MAJOR, .minor = FS_LOCAL_MINOR, .partitioning = "0123456789abcdef",
                                     .pid = 4242};
    k = L_SHARD_HELLO, put_msg("fuzz_local", "shard-hello", &k, 1, featstore_local_ShardHello_fields, &sh);
    featstore_local_ShardPart part = {.partitioning = "0123456789abcdef", .parts = 8, .index = 3, .held = 2, .shard = 1,
                                    .manifest_bytes = 900};
    k = L_SHARD_PART, put_msg("fuzz_local", "shard-part", &k, 1, featstore_local_ShardPart_fields, &part);

    featstore_local_Table tables[2] = {{.name = "feat", .dtype = "float32", .rows = 6, .dim = 4, .data_offset = 128,
                                        .routed = true},
                                       {.name = "labels", .dtype = "int64", .rows = 6, .dim = 1, .data_offset = 128}};
    featstore_local_Tier tiers[2] = {{.kind = "host", .device = -1}, {.kind = "sim_device", .device = 0}};
    featstore_local_Slice slices[1] = {{.table = 0, .tier = 1, .rows = 3}};
    featstore_local_TopoPart parts[1] = {{.tier = 1, .rows = 2}};
    featstore_local_Welcome w = {.major = 6, .minor = 1, .num_slots = 8, .index_dtype = "int32", .has_weights = true,
                                 .num_nodes = 6, .num_edges = 8, .indptr_offset = 128, .indices_offset = 128,
                                 .weights_offset = 128, .max_ids = 1 << 20, .max_fanout_product = 1 << 16,
                                 .max_response_bytes = 1 << 30, .dataset = "fixture", .reader = 0, .topo_route = true,
                                 .las_levels = 3, .las_counts = true, .generation = 1, .num_fds = 12};
    fs_pb_list_t l[4];
    FS_PB_FROM_ARRAY(&l[0], featstore_local_Table, tables, 2);
    FS_PB_FROM_ARRAY(&l[1], featstore_local_Tier, tiers, 2);
    FS_PB_FROM_ARRAY(&l[2], featstore_local_Slice, slices, 1);
    FS_PB_FROM_ARRAY(&l[3], featstore_local_TopoPart, parts, 1);
    fs_pb_set_list(&w.tables, &l[0]), fs_pb_set_list(&w.tiers, &l[1]);
    fs_pb_set_list(&w.slices, &l[2]), fs_pb_set_list(&w.topo_parts, &l[3]);
    k = L_WELCOME, put_msg("fuzz_local", "welcome", &k, 1, featstore_local_Welcome_fields, &w);

    featstore_local_TierCount counts[2] = {{.tier = 0, .rows = 10, .bytes = 160}, {.tier = 1, .rows = 5, .bytes = 80}};
    featstore_local_Report r = {.method = 1, .status = 0, .latency_ns = 125000, .generation = 1};
    FS_PB_FROM_ARRAY(&l[0], featstore_local_TierCount, counts, 2);
    FS_PB_FROM_ARRAY(&l[1], featstore_local_TierCount, counts, 1);
    fs_pb_set_list(&r.features, &l[0]), fs_pb_set_list(&r.topology, &l[1]);
    k = L_REPORT, put_msg("fuzz_local", "report", &k, 1, featstore_local_Report_fields, &r);

    featstore_local_Report neg = {.method = -1, .status = INT32_MAX, .latency_ns = INT64_MIN, .generation = UINT64_MAX};
    put_msg("fuzz_local", "report-extreme", &k, 1, featstore_local_Report_fields, &neg);
    w = (featstore_local_Welcome){.major = UINT32_MAX, .minor = UINT32_MAX, .num_nodes = INT64_MIN, .num_edges = -1,
                                  .reader = INT32_MIN, .las_levels = UINT32_MAX, .num_fds = UINT32_MAX};
    k = L_WELCOME, put_msg("fuzz_local", "welcome-extreme", &k, 1, featstore_local_Welcome_fields, &w);

    featstore_local_SplitRequest sr = {.name = "train"};
    k = L_SPLIT_REQ, put_msg("fuzz_local", "split-request", &k, 1, featstore_local_SplitRequest_fields, &sr);
    featstore_local_SplitReply sp = {.count = 140, .offset = 128};
    k = L_SPLIT_REPLY, put_msg("fuzz_local", "split-reply", &k, 1, featstore_local_SplitReply_fields, &sp);
    featstore_local_ReplanRequest rq = {.topology = "nvlink-pairs", .hotness = "presample", .order = "auto",
                                        .alpha = "nvlink=0.2", .reserve = "1K", .gpu_budget = 0.2};
    k = L_REPLAN_REQ, put_msg("fuzz_local", "replan-request", &k, 1, featstore_local_ReplanRequest_fields, &rq);
    featstore_local_ReplanReply rr = {.generation = 3, .seconds = 0.25};
    k = L_REPLAN_REPLY, put_msg("fuzz_local", "replan-reply", &k, 1, featstore_local_ReplanReply_fields, &rr);
    featstore_local_Error e = {.status = FS_ERR_INVALID_ARGUMENT, .message = "slots must be 1..64"};
    k = L_ERROR, put_msg("fuzz_local", "error", &k, 1, featstore_local_Error_fields, &e);

    static const char *const info_names[3] = {"info-reply", "info-reply-typed", "info-reply-typed-bad-index"};
    for (int i = 0; i < 3; i++) {
        fs_info_t *info = i ? typed_info(i == 2) : sample_info();
        featstore_v1_InfoResponse im;
        fs_pb_info_out_t out;
        fs_pb_info_prepare_encode(info, &im, &out);
        k = L_INFO_REPLY, put_msg("fuzz_local", info_names[i], &k, 1, featstore_v1_InfoResponse_fields, &im);
        fs_info_free(info);
    }

    static const uint8_t nego[][10] = {{L_NEGOTIATE, 2, 0, 0, 0, 6, 0, 0, 0, 1}, {L_NEGOTIATE, 3, 0, 0, 0, 6, 0, 0, 0, 3},
                                      {L_NEGOTIATE, 0, 0, 0, 0, 5, 0, 0, 0, 0}};
    put("fuzz_local", "negotiate-6.1", nego[0], 10, NULL, 0);
    put("fuzz_local", "negotiate-gap", nego[1], 10, NULL, 0);
    put("fuzz_local", "negotiate-legacy", nego[2], 10, NULL, 0);
}

/* SESSION operations (fuzz_local_server.h): each op, connection, frame type
 * and length, then what the op takes. */
enum { S_CONNECT, S_CLOSE, S_FRAME, S_BYTES, S_REPORT, S_STATS };

typedef struct {
    uint8_t b[1024];
    size_t n;
} ops_t;

static void op(ops_t *o, uint8_t what, uint8_t conn, uint8_t type, const void *data, uint8_t len)
{
    uint8_t head[4] = {what, conn, type, len};
    memcpy(o->b + o->n, head, 4), o->n += 4;
    if (data) memcpy(o->b + o->n, data, len), o->n += len;
}

/* A HELLO of protocol option `opt` (fuzz_local_server.h) from library release `name`. */
static void op_connect(ops_t *o, uint8_t opt, const char *name)
{
    uint8_t hello[2] = {opt, (uint8_t)strlen(name)};
    op(o, S_CONNECT, 0, 0, NULL, 0);
    memcpy(o->b + o->n, hello, 2), o->n += 2;
    memcpy(o->b + o->n, name, strlen(name)), o->n += strlen(name);
}

static void local_session_seeds(void)
{
    uint8_t kind = L_SESSION;
    ops_t o = {.n = 0};
    char name[16];
    /* more releases than the version table holds, in one session: 16 open, 8 gone, 8 more */
    for (int i = 0; i < 24; i++) {
        if (i == 16)
            for (int k = 0; k < 8; k++) op(&o, S_CLOSE, 0, 0, NULL, 0);
        snprintf(name, sizeof name, "1.%d.0", i);
        op_connect(&o, 0, name);
    }
    op(&o, S_STATS, 3, 0, NULL, 0);
    put("fuzz_local", "session-24-releases", &kind, 1, o.b, o.n);

    /* every kind of op on two clients of two minors, one of them a GPU reader */
    static const uint8_t report[10] = {2, 0, 1, 1, 0, 7, 1, 0, 9, 2};
    o.n = 0;
    op_connect(&o, 0, FS_VERSION); /* this release (tests/fuzz/CMakeLists.txt) */
    op_connect(&o, 1 | 16, "");
    op(&o, S_FRAME, 0, 3, NULL, 0);                /* INFO */
    op(&o, S_FRAME, 1, 9, "\x0a\x05train", 7);    /* SPLIT "train" */
    op(&o, S_REPORT, 0, 0, report, 10);
    op(&o, S_BYTES, 1, 0, "FSL1garbage", 11);
    op(&o, S_STATS, 0, 0, NULL, 0);
    op(&o, S_CLOSE, 1, 0, NULL, 0);
    op(&o, S_STATS, 0, 0, NULL, 0);
    put("fuzz_local", "session-every-op", &kind, 1, o.b, o.n);
}

/* ---- fuzz_grpc --------------------------------------------------------------------------------- */

enum { G_INFO_REQ, G_SAMPLE_REQ, G_GATHER_REQ, G_SAMPLE_GATHER_REQ, G_SPLIT_REQ, G_STATS_REQ, G_SAMPLE_RESP,
       G_GATHER_CHUNK, G_SAMPLE_GATHER_CHUNK, G_INFO_RESP, G_STATS_RESP, G_STREAM_REQ, G_STREAM_CHUNK,
       G_SHARD_EDGES_REQ, G_SHARD_EDGES_RESP, G_SHARD_PICKS_REQ, G_SHARD_PICKS_RESP, G_SHARD_ROWS_REQ, G_SHARD_ROWS_RESP,
       G_SHARD_FILE_REQ, G_SHARD_FILE_RESP };

static void put_grpc(const char *name, uint8_t kind, uint8_t slicing, const pb_msgdesc_t *type, const void *msg)
{
    uint8_t prefix[2] = {kind, slicing};
    put_msg("fuzz_grpc", name, prefix, 2, type, msg);
}

/* A byte buffer's bytes, for the chunks fs_wire_gather_chunk builds as slices. */
static void put_bb(const char *name, uint8_t kind, grpc_byte_buffer *bb)
{
    grpc_byte_buffer_reader r;
    grpc_slice all;
    uint8_t prefix[2] = {kind, 0x0d};
    if (!bb || !grpc_byte_buffer_reader_init(&r, bb)) exit(1);
    all = grpc_byte_buffer_reader_readall(&r);
    put("fuzz_grpc", name, prefix, 2, GRPC_SLICE_START_PTR(all), GRPC_SLICE_LENGTH(all));
    grpc_slice_unref(all);
    grpc_byte_buffer_reader_destroy(&r);
    grpc_byte_buffer_destroy(bb);
}

static void grpc_seeds(void)
{
    grpc_init();
    featstore_v1_InfoRequest ir = {.api_version = FS_WIRE_API_VERSION};
    put_grpc("info-request", G_INFO_REQ, 0, featstore_v1_InfoRequest_fields, &ir);
    featstore_v1_StatsRequest str = {.api_version = FS_WIRE_API_VERSION};
    put_grpc("stats-request", G_STATS_REQ, 0, featstore_v1_StatsRequest_fields, &str);
    featstore_v1_SplitRequest spr = {.api_version = FS_WIRE_API_VERSION, .name = "train"};
    put_grpc("split-request", G_SPLIT_REQ, 0, featstore_v1_SplitRequest_fields, &spr);

    static const int64_t ids[6] = {0, 5, 2, 2, 4, 1};
    fs_sample_req_t req = {.struct_size = sizeof req, .num_hops = 3, .fanout = {15, 10, -1},
                           .mode = {FS_SAMPLE_UNIFORM, FS_SAMPLE_WEIGHTED, FS_SAMPLE_UNIFORM_REPLACE}, .seed = 7,
                           .want_edge_ids = 1, .locality = 2.0};
    fs_wire_bytes_t seed_bytes, id_bytes;
    featstore_v1_SampleRequest sm;
    fs_wire_sample_request(&req, ids, 6, &seed_bytes, &sm);
    put_grpc("sample-request", G_SAMPLE_REQ, 0, featstore_v1_SampleRequest_fields, &sm);
    put_grpc("sample-request-sliced", G_SAMPLE_REQ, 0x0b, featstore_v1_SampleRequest_fields, &sm);
    featstore_v1_GatherRequest gr = {.api_version = FS_WIRE_API_VERSION, .table = "feat", .out_dtype = "float32"};
    fs_wire_set_bytes(&gr.ids, &id_bytes, ids, sizeof ids);
    put_grpc("gather-request", G_GATHER_REQ, 0, featstore_v1_GatherRequest_fields, &gr);
    put_grpc("gather-request-sliced", G_GATHER_REQ, 0x1e, featstore_v1_GatherRequest_fields, &gr);
    featstore_v1_SampleGatherRequest sg = {.api_version = FS_WIRE_API_VERSION, .has_sample = true, .table = "half"};
    fs_wire_sample_request(&req, ids, 6, &seed_bytes, &sg.sample);
    put_grpc("sample-gather-request", G_SAMPLE_GATHER_REQ, 0, featstore_v1_SampleGatherRequest_fields, &sg);

    /* a 2-hop result: 2 seeds -> 3 nodes -> 4 nodes */
    static const int64_t nodes[4] = {10, 11, 12, 13}, seed_local[2] = {0, 1};
    static const int64_t off0[3] = {0, 1, 2}, dst0[2] = {0, 1}, src0[2] = {2, 0}, eid0[2] = {7, 9};
    static const int64_t off1[4] = {0, 1, 1, 2}, dst1[2] = {0, 2}, src1[2] = {3, 1};
    static const float w1[2] = {1.5f, 2.0f};
    fs_sample_result_t res = {.num_hops = 2, .num_nodes = 4, .nodes = nodes, .num_seeds = 2, .seed_local = seed_local};
    res.block[0] = (fs_block_t){2, 3, 2, off0, dst0, src0, eid0, NULL};
    res.block[1] = (fs_block_t){3, 4, 2, off1, dst1, src1, NULL, w1};
    fs_wire_sample_src_t src;
    featstore_v1_SampleResponse resp;
    fs_wire_sample_response(&res, &src, &resp);
    put_grpc("sample-response", G_SAMPLE_RESP, 0, featstore_v1_SampleResponse_fields, &resp);
    put_grpc("sample-response-sliced", G_SAMPLE_RESP, 0x27, featstore_v1_SampleResponse_fields, &resp);

    /* edge cases: counts at the ends of their range, unknown modes, NaN */
    featstore_v1_SampleResponse extreme = {.api_version = 1, .blocks_count = 1};
    extreme.blocks[0] = (featstore_v1_Block){.num_dst = INT64_MAX, .num_src = INT64_MAX, .num_edges = INT64_MAX};
    put_grpc("sample-response-extreme-counts", G_SAMPLE_RESP, 0, featstore_v1_SampleResponse_fields, &extreme);
    extreme.blocks[0] = (featstore_v1_Block){.num_dst = 0, .num_src = INT64_MIN, .num_edges = -1};
    put_grpc("sample-response-negative-counts", G_SAMPLE_RESP, 0, featstore_v1_SampleResponse_fields, &extreme);
    featstore_v1_SampleRequest odd = {.api_version = 7, .fanouts_count = 2, .fanouts = {INT32_MIN, INT32_MAX},
                                      .modes_count = 2, .modes = {(featstore_v1_SampleMode)99, (featstore_v1_SampleMode)-1},
                                      .seed = UINT64_MAX, .locality = -1.0 / 0.0};
    put_grpc("sample-request-extreme", G_SAMPLE_REQ, 0, featstore_v1_SampleRequest_fields, &odd);

    static const float rows[4 * 3] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    featstore_v1_GatherChunk hdr = {.api_version = 1, .dtype = "float32", .dim = 3, .total_rows = 4, .first_row = 0,
                                    .rows = 4};
    fs_error_t err;
    put_bb("gather-chunk", G_GATHER_CHUNK,
           fs_wire_gather_chunk(&hdr, grpc_slice_from_static_buffer(rows, sizeof rows), 0, NULL, &err));
    fs_wire_sample_response(&res, &src, &resp);
    put_bb("sample-gather-chunk", G_SAMPLE_GATHER_CHUNK,
           fs_wire_gather_chunk(&hdr, grpc_slice_from_static_buffer(rows, sizeof rows), 1, &resp, &err));

    /* Stream: a request by split with a delta window, one by seed array; a batch's head (sample without edge_dst,
     * labels), and a rows message (a SampleGatherChunk with features alone, read as a StreamChunk) */
    featstore_v1_StreamRequest stq = {.api_version = 2, .has_sample = true, .table = "feat", .labels = "labels",
                                      .split = "train", .batch_size = 64, .order = "chunked", .chunk = 8,
                                      .shuffle_seed = 3, .epoch = 1, .rank = 1, .world_size = 2, .delta = true,
                                      .window = 8, .start_batch = 2};
    fs_wire_sample_request(&req, NULL, 0, &seed_bytes, &stq.sample);
    put_grpc("stream-request", G_STREAM_REQ, 0, featstore_v1_StreamRequest_fields, &stq);
    stq.split[0] = '\0';
    fs_wire_set_bytes(&stq.seeds, &id_bytes, ids, sizeof ids);
    put_grpc("stream-request-seeds-sliced", G_STREAM_REQ, 0x13, featstore_v1_StreamRequest_fields, &stq);
    featstore_v1_StreamChunk head = {.api_version = 2, .has_sample = true, .batch = 3, .plan_batch = 5};
    fs_wire_bytes_t label_bytes;
    fs_wire_sample_response(&res, &src, &head.sample);
    for (int h = 0; h < res.num_hops; h++) fs_wire_set_bytes(&head.sample.blocks[h].edge_dst, &src.arr[h][1], NULL, 0);
    fs_wire_set_bytes(&head.labels, &label_bytes, seed_local, sizeof seed_local);
    put_grpc("stream-head", G_STREAM_CHUNK, 0, featstore_v1_StreamChunk_fields, &head);
    put_bb("stream-rows", G_STREAM_CHUNK,
           fs_wire_gather_chunk(&hdr, grpc_slice_from_static_buffer(rows, sizeof rows), 1, NULL, &err));

    static const char *const info_names[3] = {"info-response", "info-response-typed", "info-response-typed-bad-index"};
    for (int i = 0; i < 3; i++) {
        fs_info_t *info = i ? typed_info(i == 2) : sample_info();
        featstore_v1_InfoResponse im;
        fs_pb_info_out_t out;
        fs_pb_info_prepare_encode(info, &im, &out);
        put_grpc(info_names[i], G_INFO_RESP, i == 1 ? 0x2d : 0, featstore_v1_InfoResponse_fields, &im);
        fs_info_free(info);
    }
    fs_wire_bytes_t text_bytes;
    static const char text[] = "# HELP featstore_requests_total Requests.\nfeatstore_requests_total 1\n";
    featstore_v1_StatsResponse sr = {.api_version = 1};
    fs_wire_set_bytes(&sr.prometheus_text, &text_bytes, text, sizeof text - 1);
    put_grpc("stats-response", G_STATS_RESP, 0, featstore_v1_StatsResponse_fields, &sr);

    /* ShardEdges: a round of strict tries to one shard, sliced, and its answer */
    static const int64_t pair_dst[2] = {5, 9}, pair_src[2] = {1, 700};
    static const uint8_t answers[2] = {1, 0};
    fs_wire_bytes_t db, sb, ab;
    featstore_v1_ShardEdgesRequest er = {.api_version = 2, .edge_type = 2, .map_revision = 7};
    fs_wire_set_bytes(&er.dst, &db, pair_dst, sizeof pair_dst);
    fs_wire_set_bytes(&er.src, &sb, pair_src, sizeof pair_src);
    put_grpc("shard-edges-request", G_SHARD_EDGES_REQ, 0x05, featstore_v1_ShardEdgesRequest_fields, &er);
    featstore_v1_ShardEdgesResponse ea = featstore_v1_ShardEdgesResponse_init_zero;
    fs_wire_set_bytes(&ea.is_edge, &ab, answers, sizeof answers);
    put_grpc("shard-edges-response", G_SHARD_EDGES_RESP, 0, featstore_v1_ShardEdgesResponse_fields, &ea);

    /* ShardPicks: a temporal, disjoint pass with an exclusion, and its answer */
    static const int64_t dst[2] = {5, 9}, when[2] = {2000, 2010}, trees[2] = {0, 1}, x_at[1] = {1}, x_src[1] = {700};
    static const uint8_t counts[2] = {2, 1};
    static const int32_t sources[3] = {1, 4, 8};
    fs_wire_bytes_t pb[5], qb[2];
    featstore_v1_ShardPicksRequest pr = {.api_version = 2, .hop = 1, .edge_type = 0, .fanout = 2, .seed = 11,
                                         .temporal = featstore_v1_Temporal_TEMPORAL_UNIFORM, .disjoint = true,
                                         .map_revision = 7};
    fs_wire_set_bytes(&pr.ids, &pb[0], dst, sizeof dst), fs_wire_set_bytes(&pr.time, &pb[1], when, sizeof when);
    fs_wire_set_bytes(&pr.batch, &pb[2], trees, sizeof trees);
    fs_wire_set_bytes(&pr.excl_at, &pb[3], x_at, sizeof x_at), fs_wire_set_bytes(&pr.excl_src, &pb[4], x_src, sizeof x_src);
    put_grpc("shard-picks-request", G_SHARD_PICKS_REQ, 0x06, featstore_v1_ShardPicksRequest_fields, &pr);
    featstore_v1_ShardPicksResponse pa = featstore_v1_ShardPicksResponse_init_zero;
    fs_wire_set_bytes(&pa.counts, &qb[0], counts, sizeof counts);
    fs_wire_set_bytes(&pa.sources, &qb[1], sources, sizeof sources);
    put_grpc("shard-picks-response", G_SHARD_PICKS_RESP, 0x05, featstore_v1_ShardPicksResponse_fields, &pa);

    /* ShardRows of two ids' labels, and their rows; ShardFile of the book, and a piece of it */
    static const char row_bytes[16] = "\1\0\0\0\0\0\0\0\3";
    fs_wire_bytes_t rb[2];
    featstore_v1_ShardRowsRequest rr = {.api_version = 2, .node_type = 0, .table = "labels", .map_revision = 7};
    fs_wire_set_bytes(&rr.ids, &rb[0], dst, sizeof dst);
    put_grpc("shard-rows-request", G_SHARD_ROWS_REQ, 0, featstore_v1_ShardRowsRequest_fields, &rr);
    featstore_v1_ShardRowsResponse ra = featstore_v1_ShardRowsResponse_init_zero;
    fs_wire_set_bytes(&ra.rows, &rb[1], row_bytes, sizeof row_bytes);
    put_grpc("shard-rows-response", G_SHARD_ROWS_RESP, 0, featstore_v1_ShardRowsResponse_fields, &ra);
    featstore_v1_ShardFileRequest fr = {.api_version = 2, .name = "partition.json", .offset = 0, .max_bytes = 65536};
    put_grpc("shard-file-request", G_SHARD_FILE_REQ, 0, featstore_v1_ShardFileRequest_fields, &fr);
    static const char book[] = "{\"format\": \"featstore-partitions\", \"version\": 1}";
    fs_wire_bytes_t fb;
    featstore_v1_ShardFileResponse fa = {.size = sizeof book - 1};
    fs_wire_set_bytes(&fa.data, &fb, book, sizeof book - 1);
    put_grpc("shard-file-response", G_SHARD_FILE_RESP, 0x03, featstore_v1_ShardFileResponse_fields, &fa);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_seeds <corpus directory, e.g. tests/fuzz/corpus>\n");
        return 2;
    }
    snprintf(root, sizeof root, "%s", argv[1]);
    mkdir(root, 0755);
    npy_seeds();
    manifest_seeds();
    topology_seeds();
    plan_seeds();
    local_seeds();
    grpc_seeds();
    printf("make_seeds: %d seeds written under %s\n", seeds, root);
    return 0;
}
