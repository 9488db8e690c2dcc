/* test_cli.c — the featstore command as a user runs it: import + info on
 * Cora, exit codes, a corrupted copy of every dataset file, and numpy
 * interoperability both ways. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

TU_SCRATCH_DIR
TestSuite(cli, .init = setup, .fini = teardown, .timeout = 300);

static char *import_cora(void)
{
    char *out = tu_path(dir, "cora"), *log;
    int rc = tu_run(&log, "%s import npz %s --out %s", tu_bin(), tu_data("cora.npz"), out);
    cr_assert_eq(rc, 0, "%s", log);
    free(log);
    return out;
}

/* --out's missing parents are made (mkdir -p), a trailing slash names the
 * directory itself, and a parent that is a file is refused by name. */
Test(cli, out_paths_are_made_normalised_and_refused_clearly)
{
    char *deep = tu_path(dir, "a/b/g/"), *made = tu_path(dir, "a/b/g/manifest.json"), *log;
    cr_assert_eq(tu_run(&log, "%s gen rmat --scale 8 --out %s", tu_bin(), deep), 0, "%s", log);
    free(log);
    cr_assert_eq(access(made, F_OK), 0, "the dataset is a/b/g itself, not a/b/g/.tmp-*");
    char *file = tu_path(dir, "plain"), *under = tu_path(dir, "plain/g");
    tu_write(file, "x", 1);
    cr_assert_eq(tu_run(&log, "%s gen rmat --scale 8 --out %s", tu_bin(), under), 1, "%s", log);
    cr_assert(strstr(log, "is not a directory") && strstr(log, file), "%s", log);
    free(log);
    free(deep), free(made), free(file), free(under);
}

Test(cli, import_then_info_reports_cora)
{
    char *out = import_cora(), *log;
    cr_assert_eq(tu_run(&log, "%s info %s", tu_bin(), out), 0, "%s", log);
    cr_assert_not_null(strstr(log, "nodes     2708"), "%s", log);
    cr_assert_not_null(strstr(log, "edges     5429"), "%s", log);
    cr_assert_not_null(strstr(log, "[2708 x 1433]"), "%s", log);
    cr_assert_not_null(strstr(log, "7 classes"), "%s", log);
    cr_assert_not_null(strstr(log, "checksums match"), "%s", log);
    cr_assert_not_null(strstr(log, "degree    min 0 / median 1 / p99"), "%s", log);
    free(log);
    cr_assert_eq(tu_run(&log, "%s import npz %s --out %s", tu_bin(), tu_data("cora.npz"), out), 1);
    cr_assert_not_null(strstr(log, "already exists"), "%s", log);
    free(log);
    cr_assert_eq(tu_run(&log, "%s import npz %s --out %s --force", tu_bin(), tu_data("cora.npz"), out), 0, "%s", log);
    free(log);
    free(out);
}

Test(cli, usage_errors_exit_2)
{
    const char *bad[] = {"", "bogus", "import", "import npz", "import xml in --out o", "gen rmat",
                         "gen rmat --out o --scale 99", "gen rmat --out o --dtype int8", "info",
                         "import npz x --out o --compact-ids", "import edgelist x --out o --split 90,20,20",
                         "import npz x --out o --dense-ids", "import edgelist x --out o --compact-ids --dense-ids",
                         "info x --scale 3"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *log;
        int rc = tu_run(&log, "%s %s", tu_bin(), bad[i]);
        cr_assert_eq(rc, 2, "'featstore %s' exited %d: %s", bad[i], rc, log);
        free(log);
    }
    cr_assert_eq(tu_run(NULL, "%s help", tu_bin()), 0);
    cr_assert_eq(tu_run(NULL, "%s devices", tu_bin()), 0);
}

/* The SNAP file (an id of 10^9 among 2 edges) is refused at once,
 * with no more than 1 GiB of address space (ids as given would need 8 GB
 * to count degrees), naming --compact-ids; --compact-ids imports it. Under
 * ASan, which reserves terabytes of shadow address space at start, the
 * address-space cap is left to the plain build. */
#ifdef __SANITIZE_ADDRESS__
#define ONE_GIB_OF_ADDRESS_SPACE ""
#else
#define ONE_GIB_OF_ADDRESS_SPACE "ulimit -v 1048576; "
#endif
Test(cli, import_refuses_sparse_ids_naming_compact_ids)
{
    char *in = tu_path(dir, "sparse.txt"), *out = tu_path(dir, "g"), *log;
    tu_write(in, "1000000000 5\n5 7\n", 17);
    int rc = tu_run(&log, ONE_GIB_OF_ADDRESS_SPACE "%s import edgelist %s --out %s", tu_bin(), in, out);
    cr_assert_eq(rc, 1, "%s", log);
    cr_assert(strstr(log, "node ids are sparse") && strstr(log, "--compact-ids") && strstr(log, "1000000001 nodes"),
              "%s", log);
    cr_assert_eq(access(out, F_OK), -1, "nothing written");
    free(log);
    cr_assert_eq(tu_run(&log, "%s import edgelist %s --out %s --compact-ids", tu_bin(), in, out), 0, "%s", log);
    cr_assert_not_null(strstr(log, "3 nodes, 2 edges"), "%s", log);
    free(log);
    free(in), free(out);
}

/* Every file of the dataset, corrupted in a copy, makes info fail and name it. */
Test(cli, corrupted_copy_of_any_file_is_detected)
{
    char *src = import_cora();
    DIR *d = opendir(src);
    struct dirent *e;
    int checked = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        for (int mode = 0; mode < 2; mode++) {
            char *copy = tu_path(dir, "copy"), *log;
            tu_run(NULL, "rm -rf %s && cp -r %s %s", copy, src, copy);
            char *victim = tu_path(copy, e->d_name);
            size_t len;
            char *bytes = tu_read(victim, &len);
            if (mode == 0) bytes[len / 2] ^= 0x01; /* one flipped bit */
            tu_write(victim, bytes, mode == 0 ? len : len - 3); /* or truncated */
            int rc = tu_run(&log, "%s info %s", tu_bin(), copy);
            cr_assert_eq(rc, 1, "corrupt %s (mode %d) passed: %s", e->d_name, mode, log);
            cr_assert_not_null(strstr(log, e->d_name), "message does not name %s: %s", e->d_name, log);
            free(log), free(bytes), free(victim), free(copy);
            checked++;
        }
    }
    closedir(d);
    cr_assert_geq(checked, 14, "manifest + 6 arrays, two corruptions each");
    free(src);
}

Test(cli, gen_same_seed_is_byte_identical)
{
    char *a = tu_path(dir, "a"), *b = tu_path(dir, "b"), *log;
    cr_assert_eq(tu_run(&log, "%s gen rmat --scale 12 --edge-factor 4 --dim 8 --seed 7 --out %s --threads 2", tu_bin(), a), 0,
                 "%s", log);
    free(log);
    cr_assert_eq(tu_run(&log, "%s gen rmat --scale 12 --edge-factor 4 --dim 8 --seed 7 --out %s --threads 1", tu_bin(), b), 0,
                 "%s", log);
    free(log);
    cr_assert_eq(tu_run(&log, "diff -r %s %s", a, b), 0, "%s", log);
    free(log), free(a), free(b);
}

Test(cli, numpy_reads_our_files_and_writes_datasets_we_read)
{
    if (!tu_have_numpy()) cr_skip_test("/usr/bin/python3 has no numpy");
    char *out = import_cora(), *log;
    int rc = tu_run(&log,
                    "/usr/bin/python3 -c \"import numpy as np; d='%s';"
                    "x=np.load(d+'/table_feat.npy'); ip=np.load(d+'/indptr.npy'); ix=np.load(d+'/indices.npy');"
                    "assert x.shape==(2708,1433) and x.dtype==np.float32 and x.sum()==49216;"
                    "assert ip[-1]==5429 and ix.dtype==np.int32; print('ok')\"",
                    out);
    cr_assert_eq(rc, 0, "%s", log);
    free(log);
    char *mine = tu_path(dir, "mine");
    rc = tu_run(&log,
                "/usr/bin/python3 -c \"import numpy as np, json, os; d='%s'; os.mkdir(d);"
                "np.save(d+'/indptr.npy', np.array([0,2,3,3], dtype=np.int64));"
                "np.save(d+'/indices.npy', np.array([1,2,0], dtype=np.int64));"
                "np.save(d+'/x.npy', np.ones((3,5), dtype=np.float16));"
                "np.save(d+'/tr.npy', np.array([0,2]));"
                "json.dump({'format':'featstore-dataset','version':1,'num_nodes':3,'num_edges':3,"
                "'topology':{'indptr':'indptr.npy','indices':'indices.npy'},"
                "'features':{'x':{'file':'x.npy','dtype':'float16'}},'splits':{'train':'tr.npy'}}, open(d+'/manifest.json','w'))\"",
                mine);
    cr_assert_eq(rc, 0, "%s", log);
    free(log);
    cr_assert_eq(tu_run(&log, "%s info %s", tu_bin(), mine), 0, "%s", log);
    cr_assert_not_null(strstr(log, "float16  [3 x 5]"), "%s", log);
    cr_assert_not_null(strstr(log, "checksums not verified"), "%s", log);
    free(log), free(mine), free(out);
}

/* ==== featstore plan ========================================================= */

static char *gen_tiny(void)
{
    char *out = tu_path(dir, "g"), *log;
    int rc = tu_run(&log, "%s gen rmat --scale 11 --edge-factor 8 --dim 8 --symmetrize --dedup --out %s", tu_bin(),
                    out);
    cr_assert_eq(rc, 0, "%s", log);
    free(log);
    return out;
}

Test(cli, plan_prints_gpus_prediction_and_replay)
{
    char *ds = gen_tiny(), *saved = tu_path(dir, "plan.bin"), *log;
    int rc = tu_run(&log,
                    "%s plan %s --topology nvlink-pairs --gpu-budget 0.2 --feature-first --policy algo1 "
                    "--hotness presample --fanouts 5,3 --batch 64 --replay 3 --save %s --threads 2",
                    tu_bin(), ds, saved);
    cr_assert_eq(rc, 0, "%s", log);
    static const char *const gpu_lines[4] = {"\ngpu 0 ", "\ngpu 1 ", "\ngpu 2 ", "\ngpu 3 "};
    for (int g = 0; g < 4; g++) cr_assert_not_null(strstr(log, gpu_lines[g]), "no line for GPU %d: %s", g, log);
    cr_assert_not_null(strstr(log, "policy algo1, hotness presample"), "%s", log);
    cr_assert_not_null(strstr(log, "replication factor"), "%s", log);
    cr_assert_not_null(strstr(log, "predicted feature bytes per mini-batch"), "%s", log);
    cr_assert_not_null(strstr(log, "[5,3] x 64 seeds"), "%s", log);
    cr_assert_not_null(strstr(log, "replay: 12 mini-batches (3 per reader;"), "%s", log);
    cr_assert_not_null(strstr(log, "measured"), "%s", log);
    cr_assert_not_null(strstr(log, "mean     host"), "%s", log);
    size_t len;
    free(tu_read(saved, &len));
    cr_assert_gt(len, 0, "--save wrote the plan");
    free(log);
    /* a baseline policy, default hotness */
    rc = tu_run(&log, "%s plan %s --topology pcie4 --policy naive", tu_bin(), ds);
    cr_assert_eq(rc, 0, "%s", log);
    cr_assert_not_null(strstr(log, "policy naive, hotness degree"), "%s", log);
    free(log);
    /* alpha per link class: the GPU lines show it, 1 copies the pair's rows to both GPUs */
    rc = tu_run(&log, "%s plan %s --topology nvlink-pairs --gpu-budget 0.2 --feature-first --alpha nvswitch=0.5,nvlink=1",
                tu_bin(), ds);
    cr_assert_eq(rc, 0, "%s", log);
    cr_assert_not_null(strstr(log, "  1.00      0\n"), "gpu 0: alpha 1.00, group 0: %s", log);
    cr_assert_not_null(strstr(log, "replication factor 4.000"), "4 GPUs, the same rows: %s", log);
    free(log);
    /* this box's own GPUs: none in CI, and then the error says what to do */
    rc = tu_run(&log, "%s plan %s --topology detect", tu_bin(), ds);
    cr_assert(rc == 0 ? strstr(log, "detected") != NULL
                      : rc == 1 && strstr(log, "--topology detect: ") && strstr(log, "simulated GPUs"),
              "rc %d: %s", rc, log);
    free(log);
    /* the order picked by the cost model, and a reserve */
    rc = tu_run(&log, "%s plan %s --topology nvlink-pairs --gpu-budget 0.2 --order auto --reserve 1K", tu_bin(), ds);
    cr_assert_eq(rc, 0, "%s", log);
    cr_assert_not_null(strstr(log, "order auto chose "), "%s", log);
    cr_assert_not_null(strstr(log, "1.00 KiB per GPU reserved"), "%s", log);
    free(log), free(saved), free(ds);
}

Test(cli, plan_errors_name_the_problem)
{
    char *ds = gen_tiny(), *log;
    static const struct {
        const char *args, *msg;
        int rc;
    } cases[] = {
        {"--topology dgx9", "unknown hardware preset 'dgx9'", 1},
        {"--topology nvlink-pairs --gpu-budget 2", "--gpu-budget must be a fraction in (0, 1], got '2'", 1},
        {"--topology nvlink-pairs --gpu-budget x", "--gpu-budget must be a fraction", 1},
        {"--topology nvlink-pairs --policy metis", "unknown placement policy 'metis'", 1},
        {"--topology nvlink-pairs --hotness pagerank", "unknown hotness estimator 'pagerank'", 1},
        {"--topology nvlink-pairs --alpha fast", "alpha 'fast': not a number in [0, 1]", 1},
        {"--topology nvlink-pairs --order sideways", "unknown order 'sideways'", 1},
        {"--topology nvlink-pairs --reserve 2X", "--reserve '2X'", 1},
        {"--topology nvlink-pairs --feature-first --order auto", "give one of --feature-first", 2},
        {"--topology nvlink-pairs --alpha pcie=0.1", "alpha 'pcie=0.1'", 1},
        {"--topology nvlink-pairs --fanouts 5,0", "--fanouts", 1},
        {"--topology nvswitch8 --gpus 9", "9 GPUs", 1},
        {"--topology nvlink-pairs --replay 0", "--replay must be a whole number", 1},
        {"", "--topology PRESET|FILE is required", 2},
        {"--topology nvlink-pairs --bogus", "unknown or misplaced option '--bogus'", 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int rc = tu_run(&log, "%s plan %s %s", tu_bin(), ds, cases[i].args);
        cr_assert_eq(rc, cases[i].rc, "'plan %s' exited %d: %s", cases[i].args, rc, log);
        cr_assert_not_null(strstr(log, cases[i].msg), "'plan %s' does not say '%s': %s", cases[i].args, cases[i].msg,
                           log);
        free(log);
    }
    int rc = tu_run(&log, "%s plan %s/nope --topology pcie4", tu_bin(), dir);
    cr_assert_eq(rc, 1, "%s", log);
    cr_assert_not_null(strstr(log, "nope"), "%s", log);
    free(log), free(ds);
}

/* serve's placement options are checked before anything is served */
Test(cli, serve_placement_options_need_topology_and_valid_values)
{
    char *ds = gen_tiny(), *log;
    static const struct {
        const char *args, *msg;
    } cases[] = {
        {"--hotness presample", "--hotness shapes a placement: it needs --topology"},
        {"--alpha 0", "--alpha shapes a placement: it needs --topology"},
        {"--order auto", "--order shapes a placement: it needs --topology"},
        {"--topology nvlink-pairs --hotness pagerank", "unknown hotness estimator 'pagerank'"},
        {"--topology nvlink-pairs --reserve much", "--reserve 'much'"},
        {"--topology nvlink-pairs --alpha nvlink=-1", "alpha 'nvlink=-1'"},
        {"--topology nvlink-pairs --order sideways", "unknown order 'sideways'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int rc = tu_run(&log, "%s serve %s %s", tu_bin(), ds, cases[i].args);
        cr_assert_eq(rc, 2, "'serve %s' exited %d: %s", cases[i].args, rc, log);
        cr_assert_not_null(strstr(log, cases[i].msg), "'serve %s' does not say '%s': %s", cases[i].args,
                           cases[i].msg, log);
        free(log);
    }
    free(ds);
}
