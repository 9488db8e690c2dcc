/* test_placement_hardware.c — the machines a plan is made for
 * (placement/hardware.h) and the memory it may use: presets with their
 * documented links (DGX-1's hybrid cube mesh), topology files and 14
 * malformed ones named, detected GPUs (pairs, all-to-all, one-way access)
 * turned into a description, the first N GPUs of one, memory scaling for
 * simulated devices; and budgets (placement/plan.h): topology or features
 * first, the reserve, partitions, ratios, bad budgets named. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hardware.h"
#include "placement_fixture.h"
#include "plan.h"
#include "test_util.h"

/* ==== hardware ============================================================== */

Test(hardware, presets_have_the_documented_links)
{
    for (int i = 0; fs_hw_preset_name(i); i++) {
        fs_hardware_t hw = preset(fs_hw_preset_name(i));
        fs_error_t err = {0};
        cr_assert_eq(fs_hw_validate(&hw, &err), FS_OK, "%s: %s", hw.name, err.msg);
    }
    fs_hardware_t pcie = preset("pcie4"), pairs = preset("nvlink-pairs"), sw = preset("nvswitch8");
    cr_assert_eq(pcie.num_gpus, 4);
    for (int g = 0; g < 4; g++) cr_assert_eq(fs_hw_peer_mask(&pcie, g), 0u);
    cr_assert_eq(fs_hw_peer_mask(&pairs, 0), 0x2u);
    cr_assert_eq(fs_hw_peer_mask(&pairs, 1), 0x1u);
    cr_assert_eq(fs_hw_peer_mask(&pairs, 2), 0x8u);
    cr_assert_eq(fs_hw_peer_mask(&pairs, 3), 0x4u);
    cr_assert_eq(sw.num_gpus, 8);
    cr_assert_eq(sw.fabric, FS_FABRIC_NVSWITCH);
    for (int g = 0; g < 8; g++) cr_assert_eq(fs_hw_peer_mask(&sw, g), 0xffu & ~(1u << g));
}

Test(hardware, dgx1_is_the_hybrid_cube_mesh_of_seed_001)
{
    fs_hardware_t hw = preset("dgx1-v100");
    cr_assert_eq(hw.num_gpus, 8);
    /* GPU0 cannot reach GPU4, 5, 7 (P1 §4.2, docs/papers.md); reaches 1, 2, 3, 6 */
    cr_assert_eq(fs_hw_peer_mask(&hw, 0), (1u << 1) | (1u << 2) | (1u << 3) | (1u << 6));
    int nv_links_total = 0;
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(__builtin_popcount(fs_hw_peer_mask(&hw, i)), 4, "GPU %d", i);
        int links = 0; /* 6 NVLinks of 25 GB/s per V100 */
        for (int j = 0; j < 8; j++) {
            double b = hw.link_gbps[i][j];
            cr_assert(b == 0 || b == 25 || b == 50);
            cr_assert_eq(b, hw.link_gbps[j][i]);
            links += (int)(b / 25);
        }
        cr_assert_eq(links, 6, "GPU %d has %d NVLinks", i, links);
        nv_links_total += links;
    }
    cr_assert_eq(nv_links_total, 48);
    /* G0..G3 a clique (4G_f), G0, G1, G6, G7 a ring (4G_c) */
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) cr_assert(i == j || fs_hw_linked(&hw, i, j));
    cr_assert(fs_hw_linked(&hw, 0, 1) && fs_hw_linked(&hw, 1, 7) && fs_hw_linked(&hw, 7, 6) && fs_hw_linked(&hw, 6, 0));
    cr_assert(!fs_hw_linked(&hw, 0, 7) && !fs_hw_linked(&hw, 1, 6));
}

Test(hardware, unknown_preset_names_the_known_ones)
{
    fs_hardware_t hw;
    fs_error_t err = {0};
    cr_assert_eq(fs_hw_preset("dgx2", &hw, &err), FS_ERR_NOT_FOUND);
    cr_assert(strstr(err.msg, "dgx2") && strstr(err.msg, "nvswitch8"), "%s", err.msg);
}

Test(hardware, json_topology_file)
{
    const char *text = "{\"gpus\": [{\"memory_bytes\": 1000}, {\"memory_bytes\": 2000, \"local_gbps\": 100},"
                       " {\"memory_bytes\": 3000}],"
                       " \"links\": [[0, 1, 50.0], [1, 2, 25]], \"host_gbps\": 12}";
    fs_hardware_t hw;
    fs_error_t err = {0};
    cr_assert_eq(fs_hw_parse_json(text, &hw, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(hw.num_gpus, 3);
    cr_assert_eq(hw.memory_bytes[1], 2000);
    cr_assert_eq(hw.local_gbps[1], 100);
    cr_assert_eq(hw.link_gbps[1][0], 50.0);
    cr_assert_eq(hw.link_gbps[2][1], 25.0);
    cr_assert_eq(hw.link_gbps[0][2], 0.0);
    cr_assert_eq(hw.host_gbps[2], 12.0);
    cr_assert_eq(hw.fabric, FS_FABRIC_NVLINK);

    char *dir = tu_mkdtemp(), *path = tu_path(dir, "topo.json");
    tu_write(path, text, strlen(text));
    fs_hardware_t from_file;
    cr_assert_eq(fs_hw_load_json(path, &from_file, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(memcmp(&from_file.link_gbps, &hw.link_gbps, sizeof hw.link_gbps), 0);
    char *missing = tu_path(dir, "nope.json");
    cr_assert_eq(fs_hw_load_json(missing, &from_file, &err), FS_ERR_IO);
    tu_rm_rf(dir);
    free(missing), free(path), free(dir);

    const char *clique = "{\"gpus\": [{\"memory_bytes\": 1}, {\"memory_bytes\": 1}, {\"memory_bytes\": 1}],"
                         " \"links\": [[0,1,100],[0,2,100],[1,2,100]], \"host_gbps\": [10, 20, 30]}";
    cr_assert_eq(fs_hw_parse_json(clique, &hw, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(hw.fabric, FS_FABRIC_NVSWITCH);
    cr_assert_eq(hw.host_gbps[2], 30.0);
}

Test(hardware, malformed_topology_files_name_the_problem)
{
    struct {
        const char *text, *needle;
    } cases[] = {
        {"{\"gpus\": [", "line"},
        {"[1, 2]", "object"},
        {"{\"host_gbps\": 1}", "gpus"},
        {"{\"gpus\": [], \"host_gbps\": 1}", "gpus"},
        {"{\"gpus\": [{\"memory_bytes\": -5}], \"host_gbps\": 1}", "negative"},
        {"{\"gpus\": [{\"memory\": 5}], \"host_gbps\": 1}", "memory_bytes"},
        {"{\"gpus\": [{\"memory_bytes\": 5}]}", "host_gbps"},
        {"{\"gpus\": [{\"memory_bytes\": 5}], \"host_gbps\": 0}", "host_gbps"},
        {"{\"gpus\": [{\"memory_bytes\": 5}, {\"memory_bytes\": 5}], \"links\": [[0, 2, 5]], \"host_gbps\": 1}",
         "GPU 0-2"},
        {"{\"gpus\": [{\"memory_bytes\": 5}], \"links\": [[0, 0, 5]], \"host_gbps\": 1}", "itself"},
        {"{\"gpus\": [{\"memory_bytes\": 5}, {\"memory_bytes\": 5}], \"links\": [[0, 1]], \"host_gbps\": 1}",
         "links[0]"},
        {"{\"gpus\": [{\"memory_bytes\": 5}, {\"memory_bytes\": 5}], \"links\": [[0, 1, -3]], \"host_gbps\": 1}",
         "links[0]"},
        {"{\"gpus\": [{\"memory_bytes\": 5}], \"host_gbps\": 1, \"fabric\": \"infiniband\"}", "fabric"},
        /* strict keys and types: a misspelt key is named, never ignored */
        {"{\"gpus\": [{\"memory_bytes\": 5}], \"host_gbps\": 1, \"fabirc\": \"nvlink\"}",
         "topology: unknown key \"fabirc\" (allowed: name, gpus, links, host_gbps, fabric)"},
        {"{\"gpus\": [{\"memory_bytes\": 5, \"local_gpbs\": 9}], \"host_gbps\": 1}",
         "topology: gpus[0]: unknown key \"local_gpbs\" (allowed: memory_bytes, local_gbps)"},
        {"{\"name\": 5, \"gpus\": [{\"memory_bytes\": 5}], \"host_gbps\": 1}", "\"name\" must be a string, not an integer"},
        {"{\"name\": \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\", "
         "\"gpus\": [{\"memory_bytes\": 5}], \"host_gbps\": 1}", "characters (at most 63)"},
        {"{\"gpus\": [{\"memory_bytes\": 5}], \"host_gbps\": 1, \"host_gbps\": 2}", "duplicate"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fs_hardware_t hw;
        fs_error_t err = {0};
        cr_assert_eq(fs_hw_parse_json(cases[i].text, &hw, &err), FS_ERR_FORMAT, "case %zu: %s", i, cases[i].text);
        cr_assert(strstr(err.msg, cases[i].needle), "case %zu: '%s' lacks '%s'", i, err.msg, cases[i].needle);
    }
    char big[4096] = "{\"host_gbps\": 1, \"gpus\": [";
    for (int g = 0; g < 17; g++) strcat(big, g ? ", {\"memory_bytes\": 1}" : "{\"memory_bytes\": 1}");
    strcat(big, "]}");
    fs_hardware_t hw;
    fs_error_t err = {0};
    cr_assert_eq(fs_hw_parse_json(big, &hw, &err), FS_ERR_FORMAT);
    cr_assert(strstr(err.msg, "17 GPUs"), "%s", err.msg);
}

Test(hardware, memory_scaling_for_simulated_devices)
{
    fs_hardware_t hw = preset("dgx1-v100");
    fs_error_t err = {0};
    int64_t before = hw.memory_bytes[3];
    cr_assert_eq(fs_hw_scale_memory(&hw, 1.0 / 1024, &err), FS_OK);
    cr_assert_eq(hw.memory_bytes[3], before / 1024);
    cr_assert_eq(fs_hw_scale_memory(&hw, -2, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fs_hw_scale_memory(&hw, NAN, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fs_hw_set_memory(&hw, 4096, &err), FS_OK);
    cr_assert_eq(hw.memory_bytes[7], 4096);
    cr_assert_eq(fs_hw_set_memory(&hw, -1, &err), FS_ERR_INVALID_ARGUMENT);
    hw.memory_bytes[2] = -7;
    cr_assert_eq(fs_hw_validate(&hw, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "GPU 2") && strstr(err.msg, "negative"), "%s", err.msg);
}

Test(hardware, detected_gpus_become_a_description)
{
    fs_error_t err = {0};
    fs_hardware_t hw;
    int64_t free_bytes[4] = {40LL << 30, 39LL << 30, 40LL << 30, 38LL << 30};
    unsigned char pairs[FS_HW_MAX_GPUS][FS_HW_MAX_GPUS] = {{0, 1}, {1, 0}, {0, 0, 0, 1}, {0, 0, 1, 0}};
    cr_assert_eq(fs_hw_detected(4, free_bytes, (const unsigned char(*)[FS_HW_MAX_GPUS])pairs, &hw, &err), FS_OK,
                 "%s", err.msg);
    cr_assert_str_eq(hw.name, "detected");
    cr_assert_eq(hw.fabric, FS_FABRIC_NVLINK);
    cr_assert(fs_hw_linked(&hw, 0, 1) && fs_hw_linked(&hw, 2, 3) && !fs_hw_linked(&hw, 1, 2));
    cr_assert_eq(hw.link_gbps[0][1], FS_HW_DETECTED_LINK_GBPS);
    for (int g = 0; g < 4; g++) cr_assert_eq(hw.memory_bytes[g], free_bytes[g], "free memory, not total");

    unsigned char all[FS_HW_MAX_GPUS][FS_HW_MAX_GPUS];
    memset(all, 1, sizeof all);
    for (int g = 0; g < FS_HW_MAX_GPUS; g++) all[g][g] = 0;
    cr_assert_eq(fs_hw_detected(4, free_bytes, (const unsigned char(*)[FS_HW_MAX_GPUS])all, &hw, &err), FS_OK);
    cr_assert_eq(hw.fabric, FS_FABRIC_NVSWITCH, "all to all at one speed");

    unsigned char one_way[FS_HW_MAX_GPUS][FS_HW_MAX_GPUS] = {{0, 1}};
    cr_assert_eq(fs_hw_detected(2, free_bytes, (const unsigned char(*)[FS_HW_MAX_GPUS])one_way, &hw, &err), FS_OK);
    cr_assert_eq(hw.fabric, FS_FABRIC_PCIE, "access one way only is no link");
    cr_assert(!fs_hw_linked(&hw, 0, 1));

    cr_assert_eq(fs_hw_detected(0, free_bytes, (const unsigned char(*)[FS_HW_MAX_GPUS])pairs, &hw, &err),
                 FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "0 GPUs"), "%s", err.msg);
    int64_t negative[1] = {-1};
    cr_assert_eq(fs_hw_detected(1, negative, (const unsigned char(*)[FS_HW_MAX_GPUS])pairs, &hw, &err),
                 FS_ERR_INVALID_ARGUMENT);
}

Test(hardware, first_gpus_keeps_the_links_among_them)
{
    fs_hardware_t hw = preset("nvswitch8");
    fs_error_t err = {0};
    cr_assert_eq(fs_hw_first_gpus(&hw, 4, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(hw.num_gpus, 4);
    cr_assert_eq(hw.fabric, FS_FABRIC_NVSWITCH);
    cr_assert_eq(fs_hw_validate(&hw, &err), FS_OK, "%s", err.msg);
    for (int g = 0; g < 4; g++) cr_assert_eq(fs_hw_peer_mask(&hw, g), 0xfu & ~(1u << g));
    cr_assert(strstr(hw.name, "nvswitch8"), "%s", hw.name);
    cr_assert_eq(fs_hw_first_gpus(&hw, 5, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "5 GPUs") && strstr(err.msg, "has 4"), "%s", err.msg);
    cr_assert_eq(fs_hw_first_gpus(&hw, 0, &err), FS_ERR_INVALID_ARGUMENT);
    fs_hardware_t pairs = preset("nvlink-pairs");
    cr_assert_eq(fs_hw_first_gpus(&pairs, 3, &err), FS_OK);
    cr_assert_eq(fs_hw_peer_mask(&pairs, 2), 0u, "GPU 3's link went with it");
}

/* ==== budgets =============================================================== */

Test(budget, topology_first_feature_first_and_reserve)
{
    fs_hardware_t hw = preset("pcie4");
    fs_error_t err = {0};
    cr_assert_eq(fs_hw_set_memory(&hw, 1000, &err), FS_OK);
    fs_budget_opts_t o;
    fs_budget_defaults(&o);
    o.reserve_bytes = 100;
    fs_data_size_t d = {.num_rows = 100, .row_bytes = 10, .topo_bytes = 400};
    fs_budget_t b;
    cr_assert_eq(fs_budget_split(&hw, &o, &d, NULL, NULL, &b, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(b.avail_bytes[0], 900);
    cr_assert_eq(b.topo_bytes[0], 400);
    cr_assert_eq(b.feat_bytes[0], 500);
    cr_assert_eq(b.bsize[0], 50);
    o.feature_first = 1;
    cr_assert_eq(fs_budget_split(&hw, &o, &d, NULL, NULL, &b, &err), FS_OK);
    cr_assert_eq(b.feat_bytes[1], 900);
    cr_assert_eq(b.topo_bytes[1], 0);
    cr_assert_eq(b.bsize[1], 90);
    /* partitioned data: a GPU storing 2 of 4 partitions wants half */
    o.feature_first = 0;
    int parts[4] = {2, 2, 1, 4};
    cr_assert_eq(fs_budget_split(&hw, &o, &d, parts, parts, &b, &err), FS_OK);
    cr_assert_eq(b.topo_bytes[0], 200);
    cr_assert_eq(b.feat_bytes[0], 500);
    cr_assert_eq(b.topo_bytes[2], 100);
    cr_assert_eq(b.bsize[2], 25);
    cr_assert_eq(b.bsize[3], 50);
    /* ratios */
    o.topo_ratio = 0.5, o.feat_ratio = 0.1;
    cr_assert_eq(fs_budget_split(&hw, &o, &d, NULL, NULL, &b, &err), FS_OK);
    cr_assert_eq(b.topo_bytes[0], 200);
    cr_assert_eq(b.bsize[0], 10);
    /* everything fits: BSIZE is capped at N */
    cr_assert_eq(fs_hw_set_memory(&hw, 1 << 20, &err), FS_OK);
    fs_budget_defaults(&o);
    cr_assert_eq(fs_budget_split(&hw, &o, &d, NULL, NULL, &b, &err), FS_OK);
    cr_assert_eq(b.bsize[0], 100);
}

Test(budget, bad_budgets_are_named)
{
    fs_hardware_t hw = preset("pcie4");
    fs_error_t err = {0};
    fs_hw_set_memory(&hw, 1000, &err);
    fs_budget_opts_t o;
    fs_budget_defaults(&o);
    fs_data_size_t d = {.num_rows = 100, .row_bytes = 10, .topo_bytes = 400};
    fs_budget_t b;
    o.reserve_bytes = -1;
    cr_assert_eq(fs_budget_split(&hw, &o, &d, NULL, NULL, &b, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "negative reserve"), "%s", err.msg);
    o.reserve_bytes = 2000;
    cr_assert_eq(fs_budget_split(&hw, &o, &d, NULL, NULL, &b, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "exceeds GPU 0"), "%s", err.msg);
    fs_budget_defaults(&o);
    o.feat_ratio = 1.5;
    cr_assert_eq(fs_budget_split(&hw, &o, &d, NULL, NULL, &b, &err), FS_ERR_INVALID_ARGUMENT);
    fs_budget_defaults(&o);
    d.row_bytes = 0;
    cr_assert_eq(fs_budget_split(&hw, &o, &d, NULL, NULL, &b, &err), FS_ERR_INVALID_ARGUMENT);
    d.row_bytes = 10;
    hw.memory_bytes[1] = -1;
    cr_assert_eq(fs_budget_split(&hw, &o, &d, NULL, NULL, &b, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "negative memory"), "%s", err.msg);
}
