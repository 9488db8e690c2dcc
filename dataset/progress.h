/* progress.h — progress lines for long commands. On a terminal the line is
 * redrawn in place at most ten times a second; otherwise only the final
 * summary is printed, so logs stay readable. Not thread-safe. */
#ifndef FS_PROGRESS_H
#define FS_PROGRESS_H

#include <stdint.h>

#include "fs_types.h" /* fs_now */

typedef struct {
    char label[64];
    int tty;
    double t0, last;
} fs_progress_t;

void fs_progress_start(fs_progress_t *p, const char *label);
/* fraction in [0,1], or < 0 when unknown; count of `unit`s done so far. */
void fs_progress_update(fs_progress_t *p, double fraction, int64_t count, const char *unit);
void fs_progress_done(fs_progress_t *p, int64_t count, const char *unit);

#endif
