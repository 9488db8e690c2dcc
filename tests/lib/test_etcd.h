/* test_etcd.h — a private etcd for a test: Debian's etcd on two free
 * loopback ports with its data in a temporary directory, stopped (and the
 * directory removed) by tu_etcd_stop or when the test process dies. */
#ifndef FS_TEST_ETCD_H
#define FS_TEST_ETCD_H

#include <sys/types.h>

typedef struct {
    pid_t pid;
    char *dir;
    int port;             /* the client port */
    char endpoint[64];    /* "127.0.0.1:port" */
} tu_etcd_t;

/* The etcd binary, or NULL when none is installed (the test is then skipped). */
const char *tu_etcd_bin(void);
/* Starts one and waits (up to 20 s) until it answers; fails the test otherwise. */
void tu_etcd_start(tu_etcd_t *e);
void tu_etcd_stop(tu_etcd_t *e);
/* A loopback port nothing listens on now. */
int tu_free_port(void);

#endif
