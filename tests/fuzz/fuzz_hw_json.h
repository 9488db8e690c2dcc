/* fuzz_hw_json.h — a hardware description written as a topology file
 * (every field explicit: no defaults, no inference), for fuzz_topology's
 * round trip and make_seeds' preset seeds. */
#ifndef FS_FUZZ_HW_JSON_H
#define FS_FUZZ_HW_JSON_H

#include <jansson.h>
#include <stdlib.h>

#include "hardware.h"

/* The JSON text (free it); *name_written = 0 when hw->name could not be kept. */
static char *fuzz_hw_to_json(const fs_hardware_t *hw, int *name_written)
{
    json_t *root = json_object(), *gpus = json_array(), *links = json_array(), *host = json_array();
    json_t *name = json_string(hw->name); /* NULL when the cut at 63 bytes split a UTF-8 sequence */
    *name_written = name != NULL;
    json_object_set_new(root, "name", name ? name : json_string("renamed"));
    json_object_set_new(root, "fabric", json_string(fs_fabric_name(hw->fabric)));
    for (int g = 0; g < hw->num_gpus; g++) {
        json_array_append_new(gpus, json_pack("{s:I,s:f}", "memory_bytes", (json_int_t)hw->memory_bytes[g],
                                              "local_gbps", hw->local_gbps[g]));
        json_array_append_new(host, json_real(hw->host_gbps[g]));
        for (int h = g + 1; h < hw->num_gpus; h++)
            if (hw->link_gbps[g][h] != 0)
                json_array_append_new(links, json_pack("[i,i,f]", g, h, hw->link_gbps[g][h]));
    }
    json_object_set_new(root, "gpus", gpus);
    json_object_set_new(root, "links", links);
    json_object_set_new(root, "host_gbps", host);
    char *text = json_dumps(root, JSON_REAL_PRECISION(17));
    json_decref(root);
    if (!text) abort();
    return text;
}

#endif
