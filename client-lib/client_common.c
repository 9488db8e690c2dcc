/* client_common.c — what both the library and its gRPC plugin need from the
 * connection: recording a failure, knowing whether this process opened it.
 * Compiled into each (client_internal.h). */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "client_internal.h"

fs_status_t fs_client_fail(fs_client_t *c, fs_status_t st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->errstr, sizeof c->errstr, fmt, ap);
    va_end(ap);
    return st;
}

/* getpid() rather than a pthread_atfork flag: it also sees a child made by
 * a raw clone(), which runs no fork handlers, for one system call a call. */
int fs_client_foreign(const fs_client_t *c) { return c->opener != getpid(); }
