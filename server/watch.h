/* watch.h — notices the dataset's files changing under the running server
 * and says so: one log line per change naming the file and what changed
 * (deleted, replaced, truncated, grown, written), and the counter
 * featstore_dataset_file_changes_total{file, change}. Serving is not
 * affected: it reads the sealed copies made when the dataset was opened
 * (dataset.c), which nobody can change.
 *
 * Ownership: the watcher borrows the dataset and the metrics; stop it before
 * either is freed. Thread-safety: one thread of its own; start and stop from
 * one thread. */
#ifndef FS_WATCH_H
#define FS_WATCH_H

#include <stdio.h>

#include "dataset.h"
#include "metrics.h"

typedef struct fs_watch fs_watch_t;

/* Looks at the files when inotify reports activity in the dataset's
 * directory, and every period_ms anyway (inotify does not see writes made
 * through a shared mapping, nor anything when it is unavailable). */
fs_status_t fs_watch_start(const fs_dataset_t *ds, fs_metrics_t *metrics, FILE *log, int period_ms, fs_watch_t **out,
                           fs_error_t *err);
void fs_watch_stop(fs_watch_t *w); /* NULL is a no-op */

#endif
