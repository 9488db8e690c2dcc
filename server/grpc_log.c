/* grpc_log.c — see grpc_log.h. */
#include "grpc_log.h"

#include <grpc/support/log.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "fs_types.h"

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static double window_start; /* the current one-second window */
static int written;         /* lines written in it */
static unsigned long left_out;

/* One gRPC line as one featstore line: newlines inside become spaces. */
static void write_line(const gpr_log_func_args *a)
{
    const char *level = a->severity == GPR_LOG_SEVERITY_ERROR ? "error: " : "";
    const char *debug = a->severity == GPR_LOG_SEVERITY_DEBUG ? "debug: " : "";
    char line[2048];
    snprintf(line, sizeof line, "%s", a->message ? a->message : "");
    for (char *p = line; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
    if (left_out)
        fprintf(stderr, "featstore: %sgrpc: %s%s (and %lu more gRPC lines left out before it)\n", level, debug, line,
                left_out);
    else
        fprintf(stderr, "featstore: %sgrpc: %s%s\n", level, debug, line);
    left_out = 0;
}

static void to_featstore(gpr_log_func_args *a)
{
    pthread_mutex_lock(&log_mu);
    double now = fs_now();
    if (now - window_start >= 1.0) window_start = now, written = 0;
    /* an assertion's line comes right before gRPC aborts: never left out */
    int fatal = a->message && strncmp(a->message, "assertion failed", 16) == 0;
    if (written < FS_GRPC_LOG_PER_S || fatal) {
        written++;
        write_line(a);
    } else {
        left_out++;
    }
    pthread_mutex_unlock(&log_mu);
}

static void install(void) { gpr_set_log_function(to_featstore); }

void fs_grpc_log_to_featstore(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install);
}
