/* client_checks.h — checks of the client API that read the same over every
 * transport, shared by test_local_results (unix://), test_grpc_results
 * (grpc://), the typed transports' tests and the stream tests. */
#ifndef FS_CLIENT_CHECKS_H
#define FS_CLIENT_CHECKS_H

#include "dataset.h"
#include "featstore/client.h"

/* Every split of ds comes back id for id; labels gather as the int64 table
 * "labels"; an unknown split is FS_ERR_NOT_FOUND naming it, and the
 * connection keeps working; a batch's rows lie inside fs_batch_region. */
void tc_labels_and_splits(fs_client_t *c, const fs_dataset_t *ds);

/* The image a typed batch's arrays index (proto/fs_hetero.h), checked to
 * lie in its region; returns its size. */
size_t tc_hetero_image(const fs_hetero_batch_t *b, const void **base);

/* a and b (two transports, or a stream and an explicit call) are the same
 * image and the same batch, field by field. */
void tc_same_hetero_batch(const fs_hetero_batch_t *a, const fs_hetero_batch_t *b);

#endif
