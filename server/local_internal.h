/* local_internal.h — the unix:// server's state, shared by local.c (the
 * loop: accepting, the guards, the clients' requests, start and stop) and
 * local_welcome.c (what a WELCOME tells a client: the dataset's
 * descriptors and its reader's placement). Not installed. */
#ifndef FS_LOCAL_INTERNAL_H
#define FS_LOCAL_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "fs_local.h"
#include "fs_pb.h"
#include "local.h"
#include "local_socket.h"

typedef struct client {
    int fd;
    int slots[FS_LOCAL_MAX_SLOTS];
    int num_slots;
    int welcomed;
    int reader;             /* from HELLO: whose placement it reads through */
    fs_store_t *store;      /* the placement its last WELCOME described, held while it may read it
                               (device tiers live only while the server holds them) */
    unsigned minor;         /* the local protocol's minor version negotiated with it */
    int version_entry;      /* welcomed: the entry of featstore_local_clients_by_version counting it */
    struct client *next;
    /* guards: who the peer is (SO_PEERCRED at accept), and until it is
     * welcomed its place in the handshake queue, in deadline order */
    uid_t uid;
    gid_t gid;
    pid_t pid;
    double deadline;
    struct client *hs_prev, *hs_next;
    int in_hs_queue;
} client_t;

typedef struct uid_count { /* connections per uid, for the cap; few distinct uids, so a list */
    uid_t uid;
    int n;
    struct uid_count *next;
} uid_count_t;

struct fs_local_server {
    fs_local_socket_t sock;               /* its file and listening descriptor */
    int epoll_fd, wake_fd;
    int serving;                          /* the loop thread runs (fs_local_server_serve) */
    unsigned minor;                       /* the minor version this server speaks */
    pthread_t thread;
    fs_engine_t *engine;
    fs_metrics_t *metrics;
    featstore_local_Welcome welcome;      /* the dataset's part of every WELCOME */
    featstore_local_Table *tables;        /* [num_tables]: the dataset's tables */
    size_t num_tables;
    fs_fd_list_t data_fds;                   /* indptr, indices, [weights], tables, the notice page */
    fs_fd_list_t file_fds;                /* 6.3: the manifest's memfd, then every dataset file */
    _Atomic uint64_t *notice;             /* the notice page: the generation served */
    fs_replan_fn replan;
    void *replan_ctx;
    pthread_t replan_thread;
    _Atomic int replan_state;             /* 0 none, 1 running, 2 finished (thread to join) */
    client_t *clients;
    _Atomic int num_clients;
    /* guards (local.h) */
    int handshake_ms, max_per_uid;
    fs_local_allow_t allow;
    uid_count_t *uid_counts;
    client_t *hs_head, *hs_tail;          /* handshaking clients, oldest (earliest deadline) first */
    int reserve_fd;                       /* /dev/null, given up to shed a connection when out of descriptors */
    double paused_until;                  /* listening paused (out of descriptors) until then; 0 = listening */
    double last_log;                      /* rate-limits the guards' log lines */
    unsigned long unlogged;
    _Alignas(16) char buf[FS_LOCAL_MAX_MSG];
};

/* The dataset's part of every WELCOME, and its descriptors (the validated
 * copies, never a path opened again), made once when serving starts. */
fs_status_t fs_local_prepare_welcome(fs_local_server_t *s, fs_error_t *err);
/* Sends a WELCOME describing the placement served now to c's reader, with
 * new result slots when `slots` > 0 (HELLO) and none otherwise (RELAYOUT).
 * 0, or -1 to drop the client. */
int fs_local_send_welcome(fs_local_server_t *s, client_t *c, int slots);

#endif
