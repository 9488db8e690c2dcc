/* client_grpc.c — placeholder until the gRPC transport lands. */
#include "client_internal.h"

fs_status_t fs_grpc_connect(struct fs_client *c, const char *target)
{
    return fs_client_fail(c, FS_ERR_UNSUPPORTED, "grpc://%s: the gRPC transport is not built yet", target);
}
