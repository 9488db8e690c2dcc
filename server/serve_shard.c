/* serve_shard.c — `featstore serve ROOT --parts LIST`: a shard server of a
 * partitioned dataset (docs/design.md, owner-routed sampling).
 *
 * It holds the listed parts (server/shard.h) and answers the Shard* methods
 * and Stats over gRPC, with the same admission, deadlines, TLS and token as
 * a whole server (grpc_server.h), and /metrics with --metrics
 * (server/shard_metrics.h). With --socket, trainers on its machine take
 * its parts' files from a unix socket and answer their own picks and rows
 * (local_shard.h). With --cluster etcd://HOST:PORT/NAME and --shard N it
 * registers in that cluster's membership (cluster/fs_member.h) under a
 * lease, where it is and on which machine (fs_shard_machine), so the shard
 * map names it while it lives, and leaves the map when it stops. Once the
 * cluster has an assignment (`featstore cluster`), the shard starts with
 * the parts it gives it and follows it while serving (shard_follow.h);
 * `--parts assigned` starts a shard with none, to be added. */
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs_addr.h"
#include "fs_cluster.h"
#include "fs_member.h"
#include "http.h"
#include "local_shard.h"
#include "serve.h"
#include "shard_follow.h"
#include "shard_metrics.h"

/* "0,3,6" or "0-15" (or both: "0-3,8") into a new array of part numbers;
 * `opt` names the option in errors. */
static fs_status_t parse_parts(const char *opt, const char *text, int **out, int *n, fs_error_t *err)
{
    int cap = 16, k = 0, *p = malloc(sizeof *p * (size_t)cap);
    const char *s = text;
    while (p && *s) {
        char *end;
        long a = strtol(s, &end, 10), b = a;
        if (end == s || a < 0) break;
        if (*end == '-') {
            s = end + 1;
            b = strtol(s, &end, 10);
            if (end == s || b < a) break;
        }
        for (long x = a; x <= b && p; x++) {
            if (k == cap) p = realloc(p, sizeof *p * (size_t)(cap *= 2));
            if (p) p[k++] = (int)x;
            if (k > FS_PARTITION_MAX_PARTS) break;
        }
        if (k > FS_PARTITION_MAX_PARTS || (*end != ',' && *end != 0)) break;
        s = *end ? end + 1 : end;
    }
    if (!p) return fs_error(err, FS_ERR_NOMEM, "%s: out of memory", opt);
    if (*s || k == 0 || k > FS_PARTITION_MAX_PARTS) {
        free(p);
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "%s '%s': expected part numbers and ranges such as "
                        "0,3,6 or 0-15 (at most %d)", opt, text, FS_PARTITION_MAX_PARTS);
    }
    *out = p, *n = k;
    return FS_OK;
}

/* --parts auto: the parts dealt to shard o->shard_id of o->shards
 * (fs_shard_dealt_parts) from the root's V. */
static fs_status_t dealt_parts(const fs_serve_opts_t *o, int **out, int *n, fs_error_t *err)
{
    int V = 0;
    fs_status_t st = fs_shard_root_parts(o->dataset, &V, err);
    if (st != FS_OK) return st;
    int *p = malloc(sizeof *p * (size_t)V);
    if (!p) return fs_error(err, FS_ERR_NOMEM, "--parts auto: out of memory");
    if ((st = fs_shard_dealt_parts(o->shard_id, o->shards, V, p, n, err)) != FS_OK) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        free(p);
        return fs_error(err, st, "--parts auto in %s: %s", o->dataset, why);
    }
    *out = p;
    return FS_OK;
}

/* In a cluster on etcd with an assignment, the parts it gives this shard
 * (owned: where it is first; copies: the others) and its replica count:
 * what the shard starts with, whatever --parts says. FS_ERR_NOT_FOUND when
 * the cluster has no assignment (or this is no cluster on etcd). */
static fs_status_t assigned_parts(const fs_serve_opts_t *o, int **owns, int *n, int **copies, int *nc, int *replicas,
                                  fs_error_t *err)
{
    fs_addr_t where;
    *owns = *copies = NULL, *n = *nc = 0;
    if (!o->cluster || fs_addr_uri(o->cluster, &where, err) != FS_OK || where.kind != FS_ADDR_CLUSTER ||
        where.map_file[0])
        return FS_ERR_NOT_FOUND;
    fs_etcd_t *e = NULL;
    fs_shard_map_t a = {0};
    fs_status_t st = fs_etcd_open(where.target, 1000, &e, err);
    if (st == FS_OK) st = fs_cluster_read_assign(e, where.cluster, &a, err);
    fs_etcd_close(e);
    if (st == FS_ERR_NOT_FOUND) return st;
    if (st != FS_OK) return fs_error_prefix(err, "--cluster %s: reading its assignment", o->cluster), st;
    *owns = malloc(sizeof **owns * (size_t)(a.parts + 1));
    *copies = malloc(sizeof **copies * (size_t)(a.parts + 1));
    if (!*owns || !*copies) st = fs_error(err, FS_ERR_NOMEM, "out of memory");
    for (int p = 0; st == FS_OK && p < a.parts; p++) {
        int r = fs_shard_map_rank(&a, p, o->shard_id);
        if (r == 0) (*owns)[(*n)++] = p;
        else if (r > 0) (*copies)[(*nc)++] = p;
    }
    *replicas = a.replicas;
    fs_shard_map_free(&a);
    if (st != FS_OK) free(*owns), free(*copies), *owns = *copies = NULL;
    return st;
}

/* The parts this shard holds copies of: --copies, or with --parts auto and
 * --replicas R > 1 those dealt to the R - 1 shards before it; none of them
 * one it owns. */
static fs_status_t copies_of(const fs_serve_opts_t *o, const int *owns, int n, int **out, int *nc, fs_error_t *err)
{
    *out = NULL, *nc = 0;
    fs_status_t st = FS_OK;
    if (o->copies) {
        st = parse_parts("--copies", o->copies, out, nc, err);
    } else if (strcmp(o->parts, "auto") == 0 && o->replicas > 1) {
        int V = 0;
        if ((st = fs_shard_root_parts(o->dataset, &V, err)) != FS_OK) return st;
        if (!(*out = malloc(sizeof **out * (size_t)V))) return fs_error(err, FS_ERR_NOMEM, "--replicas: out of memory");
        st = fs_shard_dealt_copies(o->shard_id, o->shards, V, o->replicas, *out, nc, err);
        if (st != FS_OK) fs_error_prefix(err, "--replicas %d in %s", o->replicas, o->dataset);
    }
    for (int i = 0; st == FS_OK && i < *nc; i++)
        for (int j = 0; j < n; j++)
            if ((*out)[i] == owns[j])
                st = fs_error(err, FS_ERR_INVALID_ARGUMENT, "--copies: part %d is also one of --parts (a shard owns "
                              "a part or holds a copy of it, not both)", owns[j]);
    if (st != FS_OK) free(*out), *out = NULL, *nc = 0;
    return st;
}

/* The parts this shard starts with: its cluster's assignment's, else
 * --parts (LIST, auto, or none for assigned) and the copies of copies_of. */
static fs_status_t starting_parts(const fs_serve_opts_t *o, int **owns, int *n, int **copies, int *nc, int *replicas,
                                  fs_error_t *err)
{
    *replicas = o->replicas > 0 ? o->replicas : 1;
    *owns = *copies = NULL, *n = *nc = 0;
    fs_status_t st;
    int V = 0;
    if (strcmp(o->parts, "assigned") == 0) { /* nothing yet: `featstore cluster add` gives it parts */
        st = fs_shard_root_parts(o->dataset, &V, err);
        if (st == FS_OK && !(*owns = malloc(sizeof **owns))) st = fs_error(err, FS_ERR_NOMEM, "out of memory");
    } else {
        st = strcmp(o->parts, "auto") == 0 ? dealt_parts(o, owns, n, err) : parse_parts("--parts", o->parts, owns, n, err);
        if (st == FS_OK) st = copies_of(o, *owns, *n, copies, nc, err);
    }
    int *ao, an, *ac, anc;
    fs_status_t sa = st == FS_OK ? assigned_parts(o, &ao, &an, &ac, &anc, replicas, err) : st;
    if (sa == FS_OK) {
        fprintf(stderr, "featstore: cluster %s has an assignment: this shard starts with the %d parts and %d copies "
                "it gives shard %d (not --parts %s)\n", o->cluster, an, anc, o->shard_id, o->parts);
        free(*owns), free(*copies);
        *owns = ao, *n = an, *copies = ac, *nc = anc;
    }
    if (sa != FS_OK && sa != FS_ERR_NOT_FOUND) free(*owns), free(*copies), *owns = *copies = NULL;
    return sa == FS_ERR_NOT_FOUND ? FS_OK : sa;
}

/* /metrics: the shard's counters, rendered per scrape (http.h). */
static char *render_metrics(void *metrics)
{
    return fs_shard_metrics_render(metrics);
}

/* A static cluster (--cluster file:PATH): nothing to join, but the map
 * must be this shard's: the same partitioning, and exactly the parts it
 * holds given to its --shard number. */
static fs_status_t check_static(const fs_serve_opts_t *o, const fs_addr_t *where, const fs_shard_t *shard,
                                fs_error_t *err)
{
    fs_shard_map_t m;
    fs_status_t st = fs_cluster_read_map_file(where->map_file, &m, err);
    if (st != FS_OK) return st;
    const int *held;
    int n = fs_shard_held(shard, &held), k = 0;
    if (strcmp(m.partitioning, fs_shard_partitioning(shard)) != 0 || m.parts != fs_shard_num_parts(shard))
        st = fs_error(err, FS_ERR_FORMAT, "cluster map %s is of partitioning %s of %d parts, this shard's is %s of %d",
                      where->map_file, m.partitioning, m.parts, fs_shard_partitioning(shard), fs_shard_num_parts(shard));
    for (int p = 0; st == FS_OK && p < m.parts; p++) {
        int mine = k < n && held[k] == p;
        k += mine;
        if (mine != fs_shard_map_holds(&m, p, o->shard_id))
            st = fs_error(err, FS_ERR_INVALID_ARGUMENT, "cluster map %s %s part %d to shard %d, but this shard "
                          "%s it", where->map_file, mine ? "does not give" : "gives", p, o->shard_id,
                          mine ? "holds" : "does not hold");
    }
    fs_shard_map_free(&m);
    return st;
}

/* The membership's etcd state into the metrics, and into the log when it
 * changes; etcd's state now. */
static int note_etcd(fs_member_t *member, fs_shard_metrics_t *metrics, const char *cluster, int was_up)
{
    fs_member_status_t ms;
    fs_member_status(member, &ms);
    fs_shard_metrics_set_etcd(metrics, ms.etcd_ok, ms.rejoins);
    if (was_up && !ms.etcd_ok)
        fprintf(stderr, "featstore: %s: etcd cannot be reached (%s): serving on the map of revision %lld; "
                "membership changes wait\n", cluster, ms.last_error, (long long)ms.revision);
    else if (!was_up && ms.etcd_ok)
        fprintf(stderr, "featstore: %s: etcd answers again: map revision %lld, %lld registrations made again\n",
                cluster, (long long)ms.revision, (long long)ms.rejoins);
    return ms.etcd_ok;
}

/* After leaving the map: answering on while calls still come (trainers that
 * have not yet seen the new map), until none came for DRAIN_IDLE_MS, at
 * most DRAIN_MAX_MS, or another signal; then the server stops, finishing
 * the calls in flight. */
#define DRAIN_IDLE_MS 100
#define DRAIN_MAX_MS 3000
static void drain(fs_shard_metrics_t *metrics, const sigset_t *sigs)
{
    uint64_t seen = fs_shard_metrics_calls(metrics);
    for (int waited = 0; waited < DRAIN_MAX_MS; waited += DRAIN_IDLE_MS) {
        struct timespec idle = {0, DRAIN_IDLE_MS * 1000L * 1000L};
        if (sigtimedwait(sigs, NULL, &idle) > 0) return;
        uint64_t now = fs_shard_metrics_calls(metrics);
        if (now == seen) return;
        if (waited == 0) fprintf(stderr, "featstore: out of the map; answering the calls that still come\n");
        seen = now;
    }
}

static int by_part(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* This shard's registration: its parts (owned, and copies) and where it answers. */
static fs_status_t join(const fs_serve_opts_t *o, const fs_shard_t *shard, int *owns, int n, int *copies, int nc,
                        int replicas, const char *grpc_addr, const char *unix_path, fs_member_t **m, fs_error_t *err)
{
    fs_addr_t where;
    fs_status_t st = fs_addr_uri(o->cluster, &where, err);
    if (st == FS_OK && where.kind != FS_ADDR_CLUSTER)
        st = fs_error(err, FS_ERR_INVALID_ARGUMENT, "--cluster '%s': expected etcd://HOST:PORT/CLUSTER or "
                      "file:/ABS/PATH", o->cluster);
    if (st != FS_OK) return st;
    if (where.map_file[0]) return check_static(o, &where, shard, err);
    fs_shard_reg_t self = {.parts = fs_shard_num_parts(shard)};
    self.addr.id = o->shard_id;
    snprintf(self.addr.grpc, sizeof self.addr.grpc, "%s", grpc_addr);
    snprintf(self.addr.unix_path, sizeof self.addr.unix_path, "%s", unix_path);
    fs_shard_machine(self.addr.host, sizeof self.addr.host);
    snprintf(self.partitioning, sizeof self.partitioning, "%s", fs_shard_partitioning(shard));
    if (n) qsort(owns, (size_t)n, sizeof *owns, by_part);
    if (nc) qsort(copies, (size_t)nc, sizeof *copies, by_part); /* copies is NULL when there are none */
    self.owns = owns, self.num_owned = n;
    self.copies = copies, self.num_copies = nc;
    self.replicas = replicas;
    fs_member_opts_t mo = {.endpoint = where.target, .name = where.cluster};
    return fs_member_join(&mo, &self, m, err);
}

/* --socket: the path trainers dial, absolute (it is registered for them),
 * and the socket serving it with the server's allow-list. */
static fs_status_t listen_local(const fs_serve_opts_t *o, fs_shard_live_t *live, char *path, size_t len,
                                fs_local_shard_t **out, fs_error_t *err)
{
    char cwd[PATH_MAX], full[2 * PATH_MAX];
    if (o->socket_path[0] == '/') snprintf(full, sizeof full, "%s", o->socket_path);
    else if (getcwd(cwd, sizeof cwd)) snprintf(full, sizeof full, "%s/%s", cwd, o->socket_path);
    else return fs_error(err, FS_ERR_IO, "--socket %s: cannot make it absolute", o->socket_path);
    if (strlen(full) > FS_CLUSTER_UNIX_MAX || strlen(full) >= len)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "--socket %s: longer than a socket path may be (%d bytes)",
                        full, FS_CLUSTER_UNIX_MAX);
    memcpy(path, full, strlen(full) + 1);
    fs_local_allow_t allow;
    fs_status_t st = fs_local_allow_init(&allow, geteuid(), o->allow_uids, o->num_allow_uids, o->allow_gids,
                                         o->num_allow_gids, err);
    if (st == FS_OK) st = fs_local_shard_start(path, live, o->shard_id, &allow, out, err);
    fs_local_allow_free(&allow);
    return st;
}

/* owns then copies, in one new array (what the shard loads). */
static int *held_parts(const int *owns, int n, const int *copies, int nc)
{
    int *all = malloc(sizeof *all * (size_t)(n + nc + 1));
    if (all) {
        memcpy(all, owns, sizeof *all * (size_t)n);
        if (nc) memcpy(all + n, copies, sizeof *all * (size_t)nc);
    }
    return all;
}

/* The server's pieces, for one teardown. */
typedef struct {
    fs_shard_live_t *live;
    fs_grpc_server_t *grpc;
    fs_member_t *member;
    fs_shard_follow_t *follow;
    fs_shard_metrics_t *metrics;
    fs_http_t *http;
    fs_local_shard_t *local;
} shard_server_t;

static void shard_server_stop(shard_server_t *v)
{
    fs_shard_follow_stop(v->follow);
    fs_local_shard_stop(v->local);
    fs_grpc_server_stop(v->grpc);
    fs_http_stop(v->http);
    fs_shard_metrics_destroy(v->metrics);
    fs_shard_live_destroy(v->live);
}

/* Serves until a signal to stop (SIGHUP is ignored), or until the cluster's
 * assignment drained this shard; the map's revision is passed on to the
 * workers every 100 ms. The signal, or 0 when drained. */
static int serve_until_stopped(const fs_serve_opts_t *o, shard_server_t *v, const sigset_t *sigs)
{
    int etcd_up = 1;
    for (;;) {
        if (v->member) {
            int64_t served = fs_member_revision(v->member);
            fs_grpc_server_set_map_revision(v->grpc, served);
            fs_shard_metrics_set_revision(v->metrics, served);
            etcd_up = note_etcd(v->member, v->metrics, o->cluster, etcd_up);
            if (v->follow && fs_shard_follow_step(v->follow, served)) return 0;
        }
        struct timespec tick = {0, 100 * 1000 * 1000};
        int sig = sigtimedwait(sigs, NULL, &tick);
        if (sig > 0 && sig != SIGHUP) return sig;
    }
}

int fs_serve_shard(const fs_serve_opts_t *o)
{
    sigset_t sigs;
    fs_serve_block_signals(&sigs);
    fs_error_t err = {0};
    int *parts = NULL, n = 0, port = 0, *copies = NULL, nc = 0, *all = NULL, replicas = 1;
    fs_shard_t *shard = NULL;
    shard_server_t v = {0};
    int metrics_port = 0;
    char addr[FS_CLUSTER_ADDR_MAX + 1] = "", unix_path[FS_CLUSTER_UNIX_MAX + 2] = "";
    fs_status_t st = !o->listen ? fs_error(&err, FS_ERR_INVALID_ARGUMENT, "a shard server needs --listen HOST:PORT")
                                : starting_parts(o, &parts, &n, &copies, &nc, &replicas, &err);
    if (st == FS_OK && !(all = held_parts(parts, n, copies, nc))) st = fs_error(&err, FS_ERR_NOMEM, "out of memory");
    if (st == FS_OK) st = fs_shard_open(o->dataset, all, n + nc, o->threads, &shard, &err);
    if (st == FS_OK) st = fs_shard_live_create(shard, &v.live, &err); /* it takes the shard */
    if (st == FS_OK) {
        fs_grpc_server_opts_t go;
        fs_serve_grpc_opts(o, &go);
        st = fs_grpc_server_listen(&go, &o->limits, &v.grpc, &port, &err);
    }
    if (st == FS_OK && !(v.metrics = fs_shard_metrics_create(o->cluster ? o->shard_id : -1, fs_shard_partitioning(shard),
                                                             n + nc)))
        st = fs_error(&err, FS_ERR_NOMEM, "out of memory");
    if (st == FS_OK && o->metrics) st = fs_http_listen(o->metrics, &v.http, &metrics_port, &err);
    if (st == FS_OK && v.http) st = fs_http_serve(v.http, render_metrics, v.metrics, &err);
    if (st == FS_OK) st = fs_grpc_server_serve_shard(v.grpc, v.live, v.metrics, &err);
    if (st == FS_OK && o->socket_path) st = listen_local(o, v.live, unix_path, sizeof unix_path, &v.local, &err);
    if (st == FS_OK) snprintf(addr, sizeof addr, "%.*s:%d", (int)(strrchr(o->listen, ':') - o->listen), o->listen, port);
    if (st == FS_OK && o->cluster)
        st = join(o, shard, parts, n, copies, nc, replicas, addr, unix_path, &v.member, &err);
    if (st == FS_OK && v.member)
        st = fs_shard_follow_start(o->dataset, o->threads, o->shard_id, v.live, v.member, v.metrics, &v.follow, &err);
    if (st != FS_OK) {
        fprintf(stderr, "featstore: error: %s [%s]\n", err.msg, fs_strerror(err.code));
        fs_member_leave(v.member);
        shard_server_stop(&v);
        free(parts), free(copies), free(all);
        return 1;
    }
    char machine[FS_CLUSTER_HOST_MAX + 1];
    fs_shard_machine(machine, sizeof machine);
    fprintf(stderr, "featstore: shard %d of partitioning %s: %d of its %d parts and copies of %d (%d replicas), "
            "ShardPicks on %s%s%s%s%s; machine %s\n", o->shard_id, fs_shard_partitioning(shard), n,
            fs_shard_num_parts(shard), nc, replicas, addr,
            v.local ? ", its parts to this machine's trainers on unix://" : "", unix_path, o->cluster ? ", in " : "",
            o->cluster ? o->cluster : "", machine[0] ? machine : "unknown");
    printf("READY unix=%s grpc=%s metrics=%d\n", v.local ? unix_path : "-", addr, metrics_port);
    fflush(stdout);
    int sig = serve_until_stopped(o, &v, &sigs);
    fprintf(stderr, "featstore: %s, shutting down\n", sig == SIGTERM ? "SIGTERM received" : sig ? "SIGINT received"
                                                    : "drained: out of the cluster's assignment and holding no part");
    if (v.member) {
        fs_member_leave(v.member); /* out of the map first: trainers watching it move off this shard */
        drain(v.metrics, &sigs);
    }
    shard_server_stop(&v);
    free(parts), free(copies), free(all);
    fprintf(stderr, "featstore: stopped\n");
    return 0;
}
