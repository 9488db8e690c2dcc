/* placement_fixture.h — what the test_placement_* suites share (the planning
 * core in placement/): presets, generated R-MAT graphs, hotness orders,
 * power-law hotness, plans built and their routes checked. Compiled into
 * each of those suites (tests/unit/placement/CMakeLists.txt). Their graphs are hand-made or
 * generated in-process; nothing outside the repository is read and no
 * timing is asserted. */
#ifndef FS_PLACEMENT_FIXTURE_H
#define FS_PLACEMENT_FIXTURE_H

#include <stdint.h>

#include "dataset.h"
#include "hardware.h"
#include "plan.h"

/* A preset that must exist. */
fs_hardware_t preset(const char *name);
/* A permuted R-MAT graph (edge factor 8) in a fresh directory *dir, opened as *ds. */
void open_rmat(char **dir, fs_dataset_t **ds, int scale, int dim, int symmetric);
/* Row ids by descending p (fs_argsort_desc, which must succeed); the caller frees. */
int64_t *sorted_order(const double *p, int64_t n);
/* n power-law hotness values, their ranks shuffled by seed; the caller frees. */
double *powerlaw(int64_t n, uint64_t seed);
/* fs_plan_build, which must succeed. */
fs_plan_t *build(const fs_hardware_t *hw, const fs_plan_input_t *in, const fs_plan_opts_t *o);
/* Each reader's feature route agrees with the rule (local, else a linked
 * holder, else host) and every GPU's rows fit its BSIZE. */
void check_routes(const fs_hardware_t *hw, const fs_plan_t *plan);
/* FNV-1a over both route arrays of every reader: one routing, one hash. */
uint64_t routing_hash(const fs_plan_t *plan);
/* A plan of `policy` on preset hw_name (its first `gpus` GPUs; 0: all) with
 * room for `rows` 32-byte rows a GPU; *hw_out (may be NULL) gets the hardware. */
fs_plan_t *baseline_plan(const char *hw_name, int gpus, fs_feat_policy_t policy, int64_t N, int64_t rows,
                         const double *p, fs_hardware_t *hw_out);

#endif
