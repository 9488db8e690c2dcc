/* client_checks.h — checks of the client API that read the same over every
 * transport, shared by test_local (unix://) and test_grpc (grpc://). */
#ifndef FS_CLIENT_CHECKS_H
#define FS_CLIENT_CHECKS_H

#include "dataset.h"
#include "featstore/client.h"

/* Every split of ds comes back id for id; labels gather as the int64 table
 * "labels"; an unknown split is FS_ERR_NOT_FOUND naming it, and the
 * connection keeps working; a batch's rows lie inside fs_batch_region. */
void tc_labels_and_splits(fs_client_t *c, const fs_dataset_t *ds);

#endif
