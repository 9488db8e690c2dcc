/* test_partition.c — `featstore partition` refusing bad input and
 * `featstore info` refusing a damaged partition root, each with its exit
 * status and a message naming the problem; and METIS's size check, a pure
 * function tried at the 32-bit limits without a graph that large. The
 * parts' contents are checked by the numpy oracle
 * (tests/integration/partition/test_partition_oracle.py). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "partition.h"
#include "test_util.h"

TU_SCRATCH_DIR
TestSuite(partition, .init = setup, .fini = teardown, .timeout = 300);

/* A small R-MAT at dir/g (1,024 nodes). */
static void make_graph(const char *name)
{
    cr_assert_eq(tu_run(NULL, "%s gen rmat --scale 10 --edge-factor 4 --dim 4 --symmetrize --dedup --out %s/%s",
                        tu_bin(), dir, name), 0);
}

/* `featstore partition` with arguments; its exit status, its output in *out. */
static int partition(char **out, const char *args)
{
    return tu_run(out, "%s partition %s", tu_bin(), args);
}

static void expect_output(int rc, char *out, int want_rc, const char *want_text)
{
    cr_expect_eq(rc, want_rc, "exit %d, want %d: %s", rc, want_rc, out);
    cr_expect(strstr(out, want_text) != NULL, "no '%s' in: %s", want_text, out);
    free(out);
}

/* Runs `call` (which writes its output to out_) and expects its exit status and text. */
#define EXPECT(call, want_rc, want_text)                 \
    do {                                                 \
        char *out_ = NULL;                               \
        int rc_ = (call);                                \
        expect_output(rc_, out_, want_rc, want_text);    \
    } while (0)

Test(partition, metis_size_check_at_the_32_bit_limits)
{
    fs_error_t err = {0};
    cr_expect_eq(fs_partition_metis_fits(1000, 5000, &err), FS_OK);
    cr_expect_eq(fs_partition_metis_fits(INT32_MAX, INT32_MAX / 2, &err), FS_OK);
    cr_expect_eq(fs_partition_metis_fits((int64_t)INT32_MAX + 1, 10, &err), FS_ERR_UNSUPPORTED);
    cr_expect(strstr(err.msg, "--method stream") != NULL, "%s", err.msg);
    memset(&err, 0, sizeof err);
    cr_expect_eq(fs_partition_metis_fits(1000, INT32_MAX / 2 + 1, &err), FS_ERR_UNSUPPORTED);
    cr_expect(strstr(err.msg, "--method stream") && strstr(err.msg, "32 bits"), "%s", err.msg);
    cr_expect_eq(fs_partition_metis_fits(1000, INT64_MAX, &err), FS_ERR_UNSUPPORTED);
}

Test(partition, bad_options_and_inputs_are_refused_clearly)
{
    make_graph("g");
    EXPECT(partition(&out_, "/nowhere --parts 0 --out /tmp/x"), 2, "--parts must be a whole number in [1, 4096]");
    EXPECT(partition(&out_, "/nowhere --parts 4097 --out /tmp/x"), 2, "--parts");
    EXPECT(tu_run(&out_, "%s partition %s/g --parts 1025 --out %s/p", tu_bin(), dir, dir), 1,
           "--parts 1025 is more than the dataset's 1024 nodes");
    EXPECT(tu_run(&out_, "%s partition %s/missing --parts 2 --out %s/p", tu_bin(), dir, dir), 1,
           "missing/manifest.json: no such file");
    EXPECT(tu_run(&out_, "%s partition %s/g --parts 2 --out %s/p --method kway", tu_bin(), dir, dir), 2,
           "--method must be stream or metis");
    EXPECT(tu_run(&out_, "%s partition %s/g --parts 2 --out %s/p --imbalance 2", tu_bin(), dir, dir), 2,
           "--imbalance must be a number in [0, 1]");
    cr_assert_eq(tu_run(NULL, "%s partition %s/g --parts 2 --out %s/p", tu_bin(), dir, dir), 0);
    EXPECT(tu_run(&out_, "%s partition %s/g --parts 2 --out %s/p", tu_bin(), dir, dir), 1,
           "already exists (use --force to replace it)");
    cr_expect_eq(tu_run(NULL, "%s partition %s/g --parts 3 --out %s/p --force", tu_bin(), dir, dir), 0);
    EXPECT(tu_run(&out_, "%s partition %s/g --parts 2 --out %s/g --force", tu_bin(), dir, dir), 1,
           "is not a featstore partitioning");
    cr_assert_eq(tu_run(NULL, "%s info %s/g", tu_bin(), dir), 0, "the dataset --force refused to replace is intact");
}

Test(partition, edge_feature_tables_are_refused_naming_the_table)
{
    cr_assert_eq(tu_run(NULL, "%s gen rmat --typed --scale 8 --dim 4 --out %s/typed", tu_bin(), dir), 0);
    EXPECT(tu_run(&out_, "%s partition %s/typed --parts 2 --out %s/p", tu_bin(), dir, dir), 1,
           "edge type (paper, cites, paper) has the edge feature table 'feat'");
    char *p = tu_path(dir, "p");
    cr_expect(access(p, F_OK) != 0, "nothing written");
    free(p);
}

Test(partition, a_part_of_a_partitioned_dataset_is_not_served)
{
    make_graph("g");
    cr_assert_eq(tu_run(NULL, "%s partition %s/g --parts 2 --out %s/p", tu_bin(), dir, dir), 0);
    cr_expect_eq(tu_run(NULL, "%s info %s/p/part-00001", tu_bin(), dir), 0, "a part verifies on its own");
    EXPECT(tu_run(&out_, "%s plan %s/p/part-00001 --topology pcie4", tu_bin(), dir), 1, "part 1 of 2");
}

/* A partitioned root at dir/p (4 parts) and another at dir/q, for damage. */
static void two_roots(void)
{
    make_graph("g");
    cr_assert_eq(tu_run(NULL, "%s partition %s/g --parts 4 --out %s/p", tu_bin(), dir, dir), 0);
    cr_assert_eq(tu_run(NULL, "%s partition %s/g --parts 4 --out %s/q", tu_bin(), dir, dir), 0);
    cr_assert_eq(tu_run(NULL, "%s info %s/p", tu_bin(), dir), 0);
}

static int info(char **out) { return tu_run(out, "%s info %s/p", tu_bin(), dir); }

Test(partition, info_names_a_missing_part)
{
    two_roots();
    cr_assert_eq(tu_run(NULL, "rm -r %s/p/part-00002", dir), 0);
    EXPECT(info(&out_), 1, "part 2 of 4");
}

Test(partition, info_names_a_duplicated_part)
{
    two_roots();
    cr_assert_eq(tu_run(NULL, "rm -r %s/p/part-00002 && cp -r %s/p/part-00001 %s/p/part-00002", dir, dir, dir), 0);
    EXPECT(info(&out_), 1, "part 2 is a duplicate of part 1");
}

Test(partition, info_names_a_part_from_another_partitioning)
{
    two_roots();
    cr_assert_eq(tu_run(NULL, "rm -r %s/p/part-00003 && cp -r %s/q/part-00003 %s/p/", dir, dir, dir), 0);
    EXPECT(info(&out_), 1, "part 3 comes from another partitioning");
}

Test(partition, info_names_a_corrupted_node_map)
{
    two_roots();
    char *map = tu_path(dir, "p/node.node_map.npy");
    size_t len;
    unsigned char *bytes = tu_read(map, &len);
    bytes[200] ^= 0x01; /* a bit of a node's new id */
    tu_write(map, bytes, len);
    free(bytes);
    free(map);
    EXPECT(info(&out_), 1, "node.node_map.npy: checksum mismatch");
}
