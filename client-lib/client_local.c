/* client_local.c — placeholder until the local transport lands. */
#include "client_internal.h"

fs_status_t fs_local_connect(struct fs_client *c, const char *path)
{
    return fs_client_fail(c, FS_ERR_UNSUPPORTED, "unix://%s: the local transport is not built yet", path);
}
