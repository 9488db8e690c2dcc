/* fuzz_topology.c — libFuzzer harness for topology files (placement/
 * hardware.c: `featstore plan|serve --topology file.json`).
 *
 * The input is the file's text. An accepted description must pass
 * fs_hw_validate (the checks a hand-built one gets), and must survive a
 * round trip: written back as JSON (jansson, every number exact) and parsed
 * again, it is the same description. A refusal is FS_ERR_FORMAT with a
 * message. */
#include "fuzz_common.h"
#include "fuzz_hw_json.h"

static void check_round_trip(const fs_hardware_t *hw)
{
    int name_written;
    char *text = fuzz_hw_to_json(hw, &name_written);
    fs_hardware_t again;
    fs_error_t err = {0};
    fs_status_t st = fs_hw_parse_json(text, &again, &err);
    FUZZ_CHECK(st == FS_OK, "written back, refused: %s\n%s", err.msg, text);
    FUZZ_CHECK(!name_written || strcmp(hw->name, again.name) == 0, "name '%s' became '%s'", hw->name, again.name);
    FUZZ_CHECK(hw->num_gpus == again.num_gpus && hw->fabric == again.fabric, "GPUs %d/%d fabric %d/%d",
               hw->num_gpus, again.num_gpus, hw->fabric, again.fabric);
    for (int i = 0; i < FS_HW_MAX_GPUS; i++) { /* == rather than bits: -0.0 and 0 are both "no link" */
        FUZZ_CHECK(hw->memory_bytes[i] == again.memory_bytes[i] && hw->host_gbps[i] == again.host_gbps[i] &&
                   hw->local_gbps[i] == again.local_gbps[i], "GPU %d changed in a round trip:\n%s", i, text);
        for (int j = 0; j < FS_HW_MAX_GPUS; j++)
            FUZZ_CHECK(hw->link_gbps[i][j] == again.link_gbps[i][j], "link %d-%d changed in a round trip:\n%s", i, j,
                       text);
    }
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1); /* the parser takes a C string */
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    fs_hardware_t hw;
    fs_error_t err = {0};
    fs_status_t st = fs_hw_parse_json(text, &hw, &err);
    free(text);
    if (st != FS_OK) {
        FUZZ_CHECK_REFUSAL(st, err);
        FUZZ_CHECK(st == FS_ERR_FORMAT, "status %d: %s", st, err.msg);
        return 0;
    }
    FUZZ_CHECK(memchr(hw.name, '\0', sizeof hw.name) != NULL, "name not terminated");
    st = fs_hw_validate(&hw, &err);
    FUZZ_CHECK(st == FS_OK, "accepted, but fs_hw_validate says: %s", err.msg);
    for (int i = 0; i < hw.num_gpus; i++)
        for (int j = 0; j < hw.num_gpus; j++)
            FUZZ_CHECK(fs_hw_linked(&hw, i, j) == fs_hw_linked(&hw, j, i), "link %d-%d one way", i, j);
    for (int i = hw.num_gpus; i < FS_HW_MAX_GPUS; i++)
        FUZZ_CHECK(hw.memory_bytes[i] == 0 && hw.host_gbps[i] == 0 && fs_hw_peer_mask(&hw, i) == 0,
                   "GPU %d beyond the %d described is not empty", i, hw.num_gpus);
    check_round_trip(&hw);
    return 0;
}
