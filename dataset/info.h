/* info.h — the report behind `featstore info`. */
#ifndef FS_INFO_H
#define FS_INFO_H

#include <stdio.h>

#include "dataset.h"

typedef struct {
    int64_t min, median, p99, max, isolated;
    double mean;
} fs_degree_stats_t;

/* Degree distribution of the CSR rows (multi-threaded scan, exact). */
fs_status_t fs_degree_stats(const fs_dataset_t *ds, fs_degree_stats_t *out, fs_error_t *err);

/* bytes as "1.5 GiB" (binary units, one decimal) into buf. */
void fs_bytes_str(double bytes, char *buf, size_t len);

/* Writes the human-readable report for an open dataset. */
void fs_info_print(FILE *out, const fs_dataset_t *ds, const fs_degree_stats_t *deg);

#endif
