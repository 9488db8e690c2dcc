/* watch.c — see watch.h. One thread waits in poll() on an inotify
 * descriptor watching the dataset's directory, an eventfd that stops it, and
 * a period. Activity is let settle (a copy over a file is one change, not
 * one per write) before every file's name is compared with what it was last
 * time (fs_dataset_file_check), so each change is logged and counted once.
 * Detection is by name: the server keeps no descriptor of the original files
 * (dataset.c), so inotify events and stat() are the only witnesses, and
 * stat() also catches what inotify misses (writes through a mapping, an
 * inotify limit reached). */
#include "watch.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#define SETTLE_MS 100        /* quiet time before looking: one change per burst of events */
#define SETTLE_MAX_MS 2000   /* ... but a file written for longer is still looked at */

struct fs_watch {
    const fs_dataset_t *ds;
    fs_metrics_t *metrics;
    FILE *log;
    int period_ms;
    int inotify_fd, stop_fd;
    fs_file_state_t *last;   /* [file]: what its name pointed at when last looked at */
    pthread_t thread;
};

/* Reads and discards every pending inotify event; 1 if there were any. */
static int drain(int fd)
{
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    int any = 0;
    while (fd >= 0 && read(fd, buf, sizeof buf) > 0) any = 1;
    return any;
}

static void check_files(fs_watch_t *w)
{
    for (int i = 0; i < fs_dataset_num_files(w->ds); i++) {
        char what[200];
        fs_file_change_t c = fs_dataset_file_check(w->ds, i, &w->last[i], what, sizeof what);
        if (c == FS_FILE_SAME) continue;
        fs_metrics_file_change(w->metrics, i, c);
        fprintf(w->log, "featstore: error: dataset file %s/%s changed while being served: %s; %s\n", w->ds->dir,
                fs_dataset_file_name(w->ds, i), what,
                fs_dataset_file_on_disk(w->ds, i)
                    ? "still serving it from disk: rows that no longer match their checksums, or lie past its end, "
                      "fail their requests"
                : w->ds->served_copy ? "still serving the copy verified at start"
                                     : "serving it as it is now");
        fflush(w->log);
    }
}

/* 1 when stopped; otherwise waits for a burst of inotify events to end. */
static int settle(fs_watch_t *w)
{
    struct pollfd p[2] = {{.fd = w->stop_fd, .events = POLLIN}, {.fd = w->inotify_fd, .events = POLLIN}};
    for (int waited = 0; waited < SETTLE_MAX_MS; waited += SETTLE_MS) {
        int n = poll(p, 2, SETTLE_MS);
        if (n > 0 && p[0].revents) return 1;
        if (n <= 0 || !drain(w->inotify_fd)) break;
    }
    return 0;
}

static void *watch_main(void *arg)
{
    fs_watch_t *w = arg;
    struct pollfd p[2] = {{.fd = w->stop_fd, .events = POLLIN}, {.fd = w->inotify_fd, .events = POLLIN}};
    for (;;) {
        int n = poll(p, 2, w->period_ms);
        if (n < 0 && errno != EINTR) break;
        if (n > 0 && p[0].revents) break;
        if (n > 0 && p[1].revents && drain(w->inotify_fd) && settle(w)) break;
        check_files(w);
    }
    return NULL;
}

fs_status_t fs_watch_start(const fs_dataset_t *ds, fs_metrics_t *metrics, FILE *log, int period_ms, fs_watch_t **out,
                           fs_error_t *err)
{
    *out = NULL;
    fs_watch_t *w = calloc(1, sizeof *w);
    int files = fs_dataset_num_files(ds);
    if (!w || !(w->last = calloc((size_t)files + 1, sizeof *w->last))) {
        free(w);
        return fs_error(err, FS_ERR_NOMEM, "out of memory");
    }
    *w = (fs_watch_t){.ds = ds, .metrics = metrics, .log = log, .period_ms = period_ms > 0 ? period_ms : 1000,
                      .last = w->last, .inotify_fd = -1};
    for (int i = 0; i < files; i++) fs_dataset_file_validated(ds, i, &w->last[i]);
    w->stop_fd = eventfd(0, EFD_CLOEXEC);
    if (w->stop_fd < 0) {
        free(w->last), free(w);
        return fs_error(err, FS_ERR_IO, "watch: eventfd: %s", strerror(errno));
    }
    /* Without inotify (its instance or watch limit reached) the period still catches every change. */
    w->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (w->inotify_fd >= 0 &&
        inotify_add_watch(w->inotify_fd, ds->dir, IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE |
                                                      IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF) < 0) {
        close(w->inotify_fd);
        w->inotify_fd = -1;
    }
    int rc = pthread_create(&w->thread, NULL, watch_main, w);
    if (rc != 0) {
        if (w->inotify_fd >= 0) close(w->inotify_fd);
        close(w->stop_fd);
        free(w->last), free(w);
        return fs_error(err, FS_ERR_RESOURCE, "watch: cannot start its thread: %s", strerror(rc));
    }
    *out = w;
    return FS_OK;
}

void fs_watch_stop(fs_watch_t *w)
{
    if (!w) return;
    uint64_t one = 1;
    if (write(w->stop_fd, &one, sizeof one) != sizeof one) { /* cannot happen with a fresh eventfd */ }
    pthread_join(w->thread, NULL);
    if (w->inotify_fd >= 0) close(w->inotify_fd);
    close(w->stop_fd);
    free(w->last);
    free(w);
}
