/* gpu_skip.h — how a GPU test binary says it cannot run here. Included once
 * by each such suite (test_cuda.c, test_typed_cuda.c): it defines the
 * suite's PRE_ALL hook.
 *
 * ctest runs those binaries with FS_TEST_NEEDS_GPU set: without a real GPU
 * the binary prints the reason and exits 77, which ctest reports as
 * skipped, so the summary says so. Simulated GPUs (FEATSTORE_SIM_GPUS,
 * tested by test_device_sim) are not a GPU, and with them set
 * fs_devices_query answers for the simulation. */
#ifndef FS_GPU_SKIP_H
#define FS_GPU_SKIP_H

#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fs_device.h"

/* Whether a real GPU answers (the reason in err when not). */
static int have_gpu(fs_error_t *err)
{
    fs_devices_t d;
    if (fs_devices_simulated() > 0) {
        snprintf(err->msg, sizeof err->msg, "simulated GPUs are not a GPU (FEATSTORE_SIM_GPUS=%d)",
                 fs_devices_simulated());
        return 0;
    }
    return fs_devices_query(&d, err) == FS_OK;
}

ReportHook(PRE_ALL)(struct criterion_test_set *tests)
{
    (void)tests;
    fs_error_t err = {0};
    if (getenv("FS_TEST_NEEDS_GPU") && !have_gpu(&err)) {
        printf("SKIPPED: no CUDA device: %s\n", err.msg);
        fflush(stdout);
        _exit(77);
    }
}

#endif
