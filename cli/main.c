/* main.c — `featstore`, the command line: one subcommand per job, all
 * parsed by one option parser (cli.h, options.c).
 *
 *   dataset tooling   import, gen, info          (cmd_dataset.c -> dataset/)
 *                     propagate                  (cmd_propagate.c -> dataset/propagate.h)
 *                     compress                   (cmd_compress.c -> dataset/compress.h)
 *                     partition                  (cmd_partition.c -> dataset/partition.h)
 *   planning          plan                       (cmd_plan.c -> server/place.h, placement/)
 *   serving           serve, replan, stats       (cmd_serve.c -> server/, client-lib/)
 *                     cluster                    (cmd_cluster.c -> cluster/fs_cluster_admin.h)
 *   this machine      devices, version, help
 *
 * Exit status: 0 success, 1 the operation failed (message on stderr naming
 * the problem), 2 the command line was wrong. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "fs_device.h"

/* jemalloc's built-in options (read before MALLOC_CONF, which overrides
 * them). oversize_threshold:0 keeps allocations over 8 MiB in the ordinary
 * arenas, whose freed pages are reused for 10 s, instead of an arena that
 * hands them back at once: a server making a ~20 MB typed batch image per
 * gRPC call faulted in and zeroed fresh pages for every one (2 cores: 35-37
 * -> 46 batches/s of [15,10,5] x 1024 over grpc://). */
__attribute__((visibility("default"))) const char *malloc_conf = "oversize_threshold:0";

static const char *const usage_text =
    "usage: featstore <command> [options]\n"
    "\n"
    "commands:\n"
    "  import edgelist|npz|ogb|ogb-hetero INPUT --out DIR   convert a graph into a featstore dataset\n"
    "  gen rmat [--typed] --out DIR [--scale S --edge-factor E --dim D]   generate an R-MAT dataset\n"
    "  info DIR [--no-verify]                    describe and validate a dataset\n"
    "  propagate DATASET --hops R [--norm sym|rw|none] [--self-loops | --no-self-loops] [--as-stored]\n"
    "            [--table T] [--dtype f32|f16|bf16|int8] [--rows labelled|all [--seed S]] [--threads N] [--force]\n"
    "                                            add hop tables hop_0..hop_R = B^r X (pre-propagation)\n"
    "  compress DATASET --table T[,T2...] --to int8|fp16|bf16 [--name NEW] [--threads N] [--force]\n"
    "                                            add compressed copies of tables, served as float32 (or as\n"
    "                                            stored on request): int8 with a scale and bias per row\n"
    "  partition DATASET --parts V --out DIR [--method stream|metis] [--imbalance 0.05] [--seed S] [--hotness H]\n"
    "            [--force]\n"
    "                                            split a dataset into V parts, each a dataset, for a sharded\n"
    "                                            featstore (info DIR verifies them)\n"
    "  serve DATASET [--socket PATH] [--listen HOST:PORT] [--metrics HOST:PORT]\n"
    "        [--config FILE] [--threads N] [--verify] [--prefault]   run the store until SIGTERM/SIGINT\n"
    "                                            defaults: --socket /tmp/featstore-UID.sock (without\n"
    "                                            --listen), --metrics 127.0.0.1:9464: a second server\n"
    "                                            needs its own; --config FILE: JSON, keys = these options\n"
    "                                            with _ for - (docs/cli.md), the command line wins\n"
    "        [--copy auto|memory|file] [--copy-dir DIR]   what holds the served copy of the dataset\n"
    "                                            (auto: 2 MiB pages where the host gives them)\n"
    "                                            addresses: HOST:PORT or [IPv6]:PORT (port 0: any free\n"
    "                                            one); --socket PATH or unix:///ABS/PATH\n"
    "        [--max-ids N] [--max-fanout-product N] [--max-response-bytes N]   per-request limits\n"
    "        [--topology PRESET|FILE [--gpu-budget F] [--plan FILE] [--save-plan FILE] [--table T]\n"
    "         [--feature-first | --order topology-first|feature-first|auto] [--reserve SIZE]\n"
    "         [--hotness degree|reach|presample] [--alpha A|nvlink=A,nvswitch=A]]\n"
    "                                            place hot data on (simulated) GPUs:\n"
    "                                            pcie4, nvlink-pairs, dgx1-v100, nvswitch8, or detect\n"
    "        [--grpc-max-calls N] [--request-timeout 60s] [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]]\n"
    "        [--token-file FILE] [--insecure]    gRPC: calls at once, TLS (mTLS), bearer token;\n"
    "                                            a non-loopback --listen needs TLS or --insecure\n"
    "        [--handshake-timeout 5s] [--max-conns-per-uid 256] [--allow-uid U,..] [--allow-gid G,..]\n"
    "        [--admin-uid U] [--plan-dir DIR]    unix:// guards; who may re-plan, where plans are saved\n"
    "  plan DATASET --topology PRESET|FILE [--gpus N] [--gpu-budget F] [--feature-first | --order O]\n"
    "       [--reserve SIZE] [--policy P] [--alpha A] [--hotness degree|reach|presample]\n"
    "       [--fanouts 15,10,5 --batch 1024] [--save FILE] [--replay N] [--threads N]\n"
    "                                            explain a placement: per-GPU contents, predicted (and replayed) traffic\n"
    "  replan unix:///PATH [--topology PRESET|FILE] [--gpu-budget F] [--hotness H] [--alpha A]\n"
    "         [--reserve SIZE] [--feature-first | --topology-first | --order auto] [--plan FILE]\n"
    "         [--save-plan FILE]\n"
    "                                            re-plan a running server's placement\n"
    "                                            (unset options keep the server's; no restart)\n"
    "  stats URI                                 print a running server's metrics (unix:///ABS/PATH,\n"
    "                                            grpc://HOST:PORT or grpcs://HOST:PORT, [IPv6] in brackets;\n"
    "                                            $FEATSTORE_TLS_CA and $FEATSTORE_TOKEN), or a cluster's, summed\n"
    "                                            over its shards (etcd://HOST:PORT/CLUSTER or file:/ABS/PATH)\n"
    "  cluster status|add|drain|remove etcd://HOST:PORT/CLUSTER [SHARD] [--wait 60s]\n"
    "                                            a running cluster's parts and shards; add a shard started\n"
    "                                            with --parts assigned, drain one (it hands its parts over,\n"
    "                                            then stops), or remove a dead one; --wait: until the map\n"
    "                                            holds what the new assignment gives (docs/cli.md)\n"
    "  devices                                   list usable GPUs (or why there are none)\n"
    "  version                                   print the version\n"
    "\n"
    "import options:\n"
    "  --out DIR            output dataset directory (required)\n"
    "  --name NAME          dataset name (default: input file name)\n"
    "  --symmetrize         store every edge in both directions\n"
    "  --drop-self-loops    drop edges (v, v)\n"
    "  --dedup              merge duplicate edges (weights are summed)\n"
    "  --reverse            store dst -> src (in-neighbours) instead of src -> dst\n"
    "  --compact-ids        edgelist only: renumber sparse ids to 0..N-1 (originals kept)\n"
    "  --dense-ids          edgelist only: keep ids as given even when sparse (N = largest id + 1;\n"
    "                       without it, ids above 1 M nodes and 4x the distinct ids are refused)\n"
    "  --weighted           edgelist only: column 3 is an edge weight\n"
    "  --split T,V,T        random train/valid/test percentages when the input has none\n"
    "                       (default 60,20,20; --no-split for none)\n"
    "  --split-name NAME    ogb, ogb-hetero: which split/<NAME> directory to use\n"
    "  --add-reverse        ogb-hetero: also store each relation reversed, as (dst, rev_<rel>, src)\n"
    "  --seed S             seed of the random split (default 1)\n"
    "  --threads N          worker threads (default: all CPUs)\n"
    "  --force              replace an existing dataset at --out\n"
    "\n"
    "gen rmat options (plus --out --name --symmetrize --drop-self-loops --dedup --split --seed\n"
    "--threads --force as above):\n"
    "  --scale S            2^S nodes (default 16)\n"
    "  --edge-factor E      E * 2^S generated edges (default 16)\n"
    "  --dim D              feature width, 0 for none (default 128)\n"
    "  --dtype T            float32 | float16 | bfloat16 (default float32)\n"
    "  --classes C          number of label classes (default 16)\n"
    "  --permute            randomly relabel nodes (Graph500 style: hubs are scattered)\n"
    "  --abc A,B,C          R-MAT quadrant probabilities (default 0.57,0.19,0.19)\n"
    "  --typed              a typed graph (format version 2): papers, authors, venues; writes,\n"
    "                       cites (R-MAT, weighted, edge features), published_in and their\n"
    "                       reverses; times; a link split of cites (schema: docs/cli.md, dataset/gen.h)\n"
    "\n"
    "propagate options (docs/algorithms.md section 8):\n"
    "  --hops R             make X_1..X_R (1..64); hop_0 is the table itself\n"
    "  --norm N             sym: B = D^-1/2 (A+I) D^-1/2 (default); rw: D^-1 (A+I); none: A+I\n"
    "  --no-self-loops      A instead of A+I (and D its row sums); --self-loops is the default\n"
    "  --as-stored          a directed graph's rows as stored (row v sums the neighbours stored in it);\n"
    "                       by default a graph not marked symmetric is symmetrised first (A | A^T)\n"
    "  --table T            the table to propagate (default: feat, or the only feature table)\n"
    "  --dtype T            the hop tables' dtype (default: the table's); computed in float32; int8:\n"
    "                       a scale and bias per row (served as float32, like `compress --to int8`)\n"
    "  --rows labelled      keep only the splits' nodes' rows, split after split, each split's rows in\n"
    "                       a random order (--seed S, default 1); hop_row_index.npy maps node -> row\n"
    "  --force              replace the hop tables of an earlier propagate\n"
    "  --threads N          worker threads (default: all CPUs)\n"
    "\n"
    "partition options (docs/cli.md, docs/format.md \"Partitioned datasets\"):\n"
    "  --parts V            virtual parts, 1..4096 and at most the dataset's nodes (e.g. 64 for 8 servers)\n"
    "  --method M           stream: one pass, Fennel, memory per node only (default); metis: METIS on\n"
    "                       the symmetrised graph (a build with libmetis; graphs under 2^31 entries)\n"
    "  --imbalance F        a part's nodes, training nodes and in-edges stay within (1 + F) x the mean\n"
    "                       (default 0.05)\n"
    "  --seed S             METIS's seed (default 1)\n"
    "  --hotness H          rank the hot list (the trainers' cache) by degree, reach or presample\n"
    "                       (docs/algorithms.md 1; one node type); default: the lists that hold a node\n"
    "  --force              replace an existing partition root at --out\n";

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
} commands[] = {
    {"import", cmd_import}, {"gen", cmd_gen},         {"info", cmd_info},   {"plan", cmd_plan},
    {"serve", cmd_serve},   {"replan", cmd_replan},   {"stats", cmd_stats}, {"devices", cmd_devices},
    {"propagate", cmd_propagate}, {"partition", cmd_partition}, {"cluster", cmd_cluster},
    {"compress", cmd_compress},
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_text, stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (strcmp(cmd, commands[i].name) == 0) return commands[i].run(argc - 1, argv + 1);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("featstore %s (CUDA kernels: %s)\n", FS_VERSION, fs_built_with_cuda() ? "yes" : "no");
        return 0;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        fputs(usage_text, stdout);
        return 0;
    }
    return cli_usage("unknown command '%s'", cmd);
}
