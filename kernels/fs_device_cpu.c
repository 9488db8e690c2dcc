/* fs_device_cpu.c — the device query of a build without CUDA: there is never
 * a device, and the reason says so. */
#include "fs_device.h"

#include <string.h>

int fs_built_with_cuda(void) { return 0; }

fs_status_t fs_devices_query(fs_devices_t *out, fs_error_t *err)
{
    memset(out, 0, sizeof *out);
    return fs_error(err, FS_ERR_NO_DEVICE, "this build has no CUDA support (FS_WITH_CUDA=OFF or no nvcc at build time)");
}
