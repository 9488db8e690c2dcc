/* test_etcd.h — a private etcd for a test: Debian's etcd on two free
 * loopback ports with its data in a temporary directory, stopped (and the
 * directory removed) by tu_etcd_stop or when the test process dies; and
 * the shard servers of a cluster registered on it. */
#ifndef FS_TEST_ETCD_H
#define FS_TEST_ETCD_H

#include <stdio.h>
#include <sys/types.h>

typedef struct {
    pid_t pid;
    char *dir;
    int port;             /* the client port */
    int peer_port;
    char endpoint[64];    /* "127.0.0.1:port" */
} tu_etcd_t;

/* The etcd binary, or NULL when none is installed (the test is then skipped). */
const char *tu_etcd_bin(void);
/* Starts one and waits (up to 20 s) until it answers; fails the test otherwise. */
void tu_etcd_start(tu_etcd_t *e);
void tu_etcd_stop(tu_etcd_t *e);
/* Kills it (SIGKILL), keeping its data; revive starts it again on the same
 * ports and data, and waits until it answers. */
void tu_etcd_kill(tu_etcd_t *e);
void tu_etcd_revive(tu_etcd_t *e);
/* A cluster test's suite init and fini: a temporary directory and an etcd. */
void tu_cluster_up(char **dir, tu_etcd_t *e);
void tu_cluster_down(char **dir, tu_etcd_t *e);
/* A loopback port nothing listens on now. */
int tu_free_port(void);

/* A shard server: `featstore serve ROOT --parts PARTS --listen 127.0.0.1:0
 * --cluster etcd://E/CLUSTER --shard ID EXTRA`, waited for until its READY
 * line (its gRPC address and metrics port, 0 without --metrics). */
typedef struct {
    pid_t pid;
    FILE *out;
    char grpc[64];
    int metrics_port;
} tu_shard_t;

void tu_shard_start(tu_shard_t *p, const tu_etcd_t *e, const char *root, const char *cluster, const char *parts, int id,
                    const char *extra);
/* Reads a shard started otherwise (p->pid, p->out set) up to its READY line. */
void tu_shard_ready(tu_shard_t *p, const char *cluster, int id);
/* Sends sig, waits, and returns the wait status. */
int tu_shard_stop(tu_shard_t *p, int sig);
/* Waits (up to secs) until cluster's map on e gives part `part` to shard `owner` (-1: none). */
void tu_wait_owner(const tu_etcd_t *e, const char *cluster, int part, int owner, double secs);

#endif
