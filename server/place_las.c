/* place_las.c — see place_las.h. */
#include "place_las.h"

#include <stdlib.h>
#include <string.h>


static fs_csr_ref_t csr_of(const fs_dataset_t *ds)
{
    return (fs_csr_ref_t){.num_nodes = ds->num_nodes, .indptr = ds->indptr, .indices = ds->indices,
                          .index_dtype = ds->index_dtype, .weights = ds->edge_weights};
}

fs_status_t fs_place_locality(fs_store_t *st, const fs_dataset_t *ds, const fs_plan_t *plan, const fs_las_opts_t *o,
                              FILE *log, fs_error_t *err)
{
    if (!st || !ds || !plan) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality sets: NULL argument");
    if (plan->num_nodes != ds->num_nodes)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality sets: the plan is for %lld nodes, the dataset has "
                        "%lld", (long long)plan->num_nodes, (long long)ds->num_nodes);
    if (plan->num_gpus > FS_MAX_DEVICES)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "locality sets: %d planned GPUs, the store has readers for %d",
                        plan->num_gpus, FS_MAX_DEVICES);
    fs_las_opts_t opts;
    fs_las_defaults(&opts);
    opts.num_levels = FS_PLACE_LAS_LEVELS;
    if (o) opts = *o;
    fs_csr_ref_t g = csr_of(ds);
    double t0 = fs_now();
    int64_t *rows[FS_MAX_DEVICES] = {0}, count[FS_MAX_DEVICES] = {0};
    fs_las_sets_t *sets[FS_MAX_DEVICES] = {0};
    int built = 0;
    fs_status_t s = FS_OK;
    for (int r = 0; r < plan->num_gpus && s == FS_OK; r++) {
        s = fs_las_reader_rows(plan, r, &rows[r], &count[r], err);
        /* GPUs of a replicated group read the same B: one build serves them all */
        for (int q = 0; s == FS_OK && q < r && !sets[r]; q++)
            if (count[q] == count[r] && sets[q] && memcmp(rows[q], rows[r], (size_t)count[r] * sizeof **rows) == 0)
                sets[r] = sets[q];
        if (s == FS_OK && !sets[r]) {
            s = fs_las_sets_build(&g, rows[r], count[r], &opts, &sets[r], err);
            built += s == FS_OK;
        }
        if (s == FS_OK) {
            fs_locality_t loc;
            fs_las_locality(sets[r], 1, &loc);
            s = fs_store_set_locality(st, r, &loc, err); /* shares the copy of an equal earlier reader */
        }
    }
    if (s == FS_OK && log)
        fprintf(log, "locality: preferred sets for %d reader GPU(s) (%d distinct), %d levels, K = %lld, built in "
                "%.2f s\n", plan->num_gpus, built, opts.num_levels, (long long)opts.k, fs_now() - t0);
    for (int r = 0; r < plan->num_gpus; r++) {
        int first = 1; /* free each distinct build once */
        for (int q = 0; q < r; q++) first &= sets[q] != sets[r];
        if (first) fs_las_sets_free(sets[r]);
        free(rows[r]);
    }
    if (s != FS_OK) fs_error_prefix(err, "locality-aware sampling");
    return s;
}
