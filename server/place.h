/* place.h — from a dataset and a hardware description to a placed store:
 * hotness (in-degree), a plan (placement/plan.h), then one store tier per
 * planned GPU holding the plan's feature rows and neighbour lists, routed
 * exactly as the plan says. Without a GPU (or when asked) the tiers are
 * simulated devices whose capacity is the plan's budget, so the whole data
 * path runs for real with every tier in host memory. */
#ifndef FS_PLACE_H
#define FS_PLACE_H

#include "dataset.h"
#include "hardware.h"
#include "plan.h"
#include "store.h"

typedef struct {
    const char *topology;  /* preset name (pcie4, nvlink-pairs, dgx1-v100, nvswitch8) or JSON file */
    double gpu_budget;     /* bytes per GPU as a fraction of the table's bytes (e.g. 0.1); 0 = the hardware's memory */
    const char *table;     /* the feature table to place; NULL = the first */
    const char *plan_in;   /* load this plan instead of computing one */
    const char *plan_out;  /* save the plan here */
    int feature_first;     /* budget features before topology */
    int threads;
} fs_place_opts_t;

/* Loads the hardware and builds (or loads) the plan. */
fs_status_t fs_place_plan(const fs_dataset_t *ds, const fs_place_opts_t *o, fs_hardware_t *hw, fs_plan_t **plan,
                          fs_error_t *err);

/* Adds one simulated-device tier per planned GPU and places the plan. */
fs_status_t fs_place_apply(fs_store_t *st, const fs_dataset_t *ds, const fs_plan_t *plan, const char *table,
                           fs_error_t *err);

/* One line per GPU: what it holds and the replication (for logs). */
void fs_place_describe(FILE *out, const fs_plan_t *plan, const fs_hardware_t *hw);

#endif
