/* client_checks.c — see client_checks.h. */
#include "client_checks.h"

#include <criterion/criterion.h>
#include <string.h>

static void check_split(fs_client_t *c, const fs_dataset_t *ds, const fs_idset_t *want)
{
    fs_ids_t *ids = NULL;
    cr_assert_eq(fs_split(c, want->name, &ids), FS_OK, "split %s: %s", want->name, fs_client_errstr(c));
    cr_assert_eq(ids->n, want->count, "split %s", want->name);
    cr_assert(want->count == 0 || memcmp(ids->ids, want->ids, (size_t)want->count * 8) == 0, "split %s differs",
              want->name);
    /* the split's labels, gathered like features */
    fs_batch_t *b = NULL;
    cr_assert_eq(fs_gather(c, ids->ids, ids->n, FS_LABELS_TABLE, FS_DTYPE_INVALID, &b), FS_OK, "%s",
                 fs_client_errstr(c));
    cr_assert_eq(b->dtype, FS_DTYPE_I64);
    cr_assert_eq(b->dim, 1);
    cr_assert_eq(b->rows, ids->n);
    const int64_t *labels = b->features;
    for (int64_t i = 0; i < ids->n; i++)
        cr_assert_eq(labels[i], ds->labels[ids->ids[i]], "label of node %lld", (long long)ids->ids[i]);
    const void *base;
    size_t len;
    cr_assert_eq(fs_batch_region(b, &base, &len), FS_OK);
    const char *lo = base, *p = b->features;
    cr_assert(p >= lo && p + (size_t)b->rows * 8 <= lo + len, "rows outside the batch's region");
    fs_batch_free(b);
    fs_ids_free(ids);
}

void tc_labels_and_splits(fs_client_t *c, const fs_dataset_t *ds)
{
    cr_assert_not_null(ds->labels, "the fixture must have labels");
    cr_assert_gt(ds->num_splits, 0, "the fixture must have splits");
    for (int i = 0; i < ds->num_splits; i++) check_split(c, ds, &ds->splits[i]);

    fs_ids_t *ids = (fs_ids_t *)1;
    fs_status_t st = fs_split(c, "no-such-split", &ids);
    cr_assert_eq(st, FS_ERR_NOT_FOUND, "%s: %s", fs_strerror(st), fs_client_errstr(c));
    cr_assert_null(ids);
    cr_assert_not_null(strstr(fs_client_errstr(c), "no-such-split"), "%s", fs_client_errstr(c));
    cr_assert_eq(fs_split(c, "", &ids), FS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fs_split(c, NULL, &ids), FS_ERR_INVALID_ARGUMENT);

    fs_info_t *info;
    cr_assert_eq(fs_info(c, &info), FS_OK, "the connection survives: %s", fs_client_errstr(c));
    int found = 0;
    for (size_t i = 0; i < info->num_tables; i++)
        if (strcmp(info->tables[i].name, FS_LABELS_TABLE) == 0)
            found = info->tables[i].dtype == FS_DTYPE_I64 && info->tables[i].dim == 1;
    cr_assert(found, "Info lists the labels table as int64 [N x 1]");
    fs_info_free(info);

    int64_t bad = ds->num_nodes;
    fs_batch_t *b = NULL;
    cr_assert_eq(fs_gather(c, &bad, 1, FS_LABELS_TABLE, FS_DTYPE_INVALID, &b), FS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fs_gather(c, &bad, 1, FS_LABELS_TABLE, FS_DTYPE_F32, &b), FS_ERR_INVALID_ARGUMENT,
                 "labels are not converted to float");
}
