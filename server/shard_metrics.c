/* shard_metrics.c — a shard server's counters and their Prometheus text
 * (shard_metrics.h says what). Lock-free counters; the peer table takes a
 * lock only to add a peer, and a peer once added keeps its slot, so a
 * call's recording reads the table without it. */
#include "shard_metrics.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    _Atomic uint64_t calls, errors, ids, bytes, micros;
} call_stats_t;

typedef struct {
    char name[64];                 /* the peer's address without its port; "" = free */
    _Atomic uint64_t rows, bytes;
} peer_t;

struct fs_shard_metrics {
    int shard_id;
    _Atomic int parts_held;
    _Atomic uint64_t part_loads, part_drops, part_load_errors; /* following an assignment */
    char partitioning[32];
    call_stats_t call[FS_SHARD_CALL_COUNT_];
    _Atomic uint64_t hop_calls[FS_MAX_HOPS], hop_ids[FS_MAX_HOPS];
    _Atomic int64_t revision;
    _Atomic int etcd_up;           /* -1: not in a cluster on etcd */
    _Atomic int64_t rejoins;
    pthread_mutex_t peers_mu;
    _Atomic int num_peers;         /* slots [0, num_peers) are filled */
    peer_t peer[FS_SHARD_METRICS_PEERS + 1]; /* the last: "other" */
};

static const char *const CALL_NAMES[FS_SHARD_CALL_COUNT_] = {"ShardPicks", "ShardRows", "ShardFile", "ShardEdges"};

fs_shard_metrics_t *fs_shard_metrics_create(int shard_id, const char *partitioning, int parts_held)
{
    fs_shard_metrics_t *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->shard_id = shard_id;
    atomic_init(&m->parts_held, parts_held);
    atomic_init(&m->etcd_up, -1);
    snprintf(m->partitioning, sizeof m->partitioning, "%s", partitioning ? partitioning : "");
    snprintf(m->peer[FS_SHARD_METRICS_PEERS].name, sizeof m->peer[0].name, "other");
    pthread_mutex_init(&m->peers_mu, NULL);
    return m;
}

void fs_shard_metrics_destroy(fs_shard_metrics_t *m)
{
    if (!m) return;
    pthread_mutex_destroy(&m->peers_mu);
    free(m);
}

/* "ipv4:10.0.0.7:51234" -> "10.0.0.7", "ipv6:[::1]:5" -> "[::1]": one
 * series per machine, not per connection. */
static void peer_name(const char *peer, char *out, size_t len)
{
    const char *p = peer ? peer : "unknown", *colon = strchr(p, ':');
    if (colon && (strncmp(p, "ipv4:", 5) == 0 || strncmp(p, "ipv6:", 5) == 0)) p = colon + 1;
    const char *port = strrchr(p, ':');
    size_t n = port && port != p && (p[0] != '[' || port[-1] == ']') ? (size_t)(port - p) : strlen(p);
    snprintf(out, len, "%.*s", (int)n, p);
    for (char *c = out; *c; c++) /* a label value of safe characters only */
        if (!(*c == '.' || *c == ':' || *c == '[' || *c == ']' || *c == '-' || (*c >= '0' && *c <= '9') ||
              (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
            *c = '_';
}

static peer_t *find_peer(fs_shard_metrics_t *m, const char *peer)
{
    char name[64];
    peer_name(peer, name, sizeof name);
    int n = atomic_load(&m->num_peers);
    for (int i = 0; i < n; i++)
        if (strcmp(m->peer[i].name, name) == 0) return &m->peer[i];
    pthread_mutex_lock(&m->peers_mu);
    peer_t *p = NULL;
    n = atomic_load(&m->num_peers);
    for (int i = 0; i < n && !p; i++)
        if (strcmp(m->peer[i].name, name) == 0) p = &m->peer[i];
    if (!p && n < FS_SHARD_METRICS_PEERS) {
        p = &m->peer[n];
        snprintf(p->name, sizeof p->name, "%s", name);
        atomic_store(&m->num_peers, n + 1); /* published after its name */
    }
    pthread_mutex_unlock(&m->peers_mu);
    return p ? p : &m->peer[FS_SHARD_METRICS_PEERS];
}

void fs_shard_metrics_call(fs_shard_metrics_t *m, fs_shard_call_t call, const char *peer, fs_status_t status,
                           int64_t ids, uint64_t bytes, int hop, double seconds)
{
    if (!m || (unsigned)call >= FS_SHARD_CALL_COUNT_) return;
    call_stats_t *c = &m->call[call];
    atomic_fetch_add_explicit(&c->calls, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->micros, (uint64_t)(seconds > 0 ? seconds * 1e6 : 0), memory_order_relaxed);
    if (status != FS_OK) {
        atomic_fetch_add_explicit(&c->errors, 1, memory_order_relaxed);
        return;
    }
    atomic_fetch_add_explicit(&c->ids, (uint64_t)(ids > 0 ? ids : 0), memory_order_relaxed);
    atomic_fetch_add_explicit(&c->bytes, bytes, memory_order_relaxed);
    if (call == FS_SHARD_CALL_PICKS && hop >= 0 && hop < FS_MAX_HOPS) {
        atomic_fetch_add_explicit(&m->hop_calls[hop], 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&m->hop_ids[hop], (uint64_t)(ids > 0 ? ids : 0), memory_order_relaxed);
    }
    if (call == FS_SHARD_CALL_FILE) return; /* rows and bytes to trainers: the data path's */
    peer_t *p = find_peer(m, peer);
    if (call == FS_SHARD_CALL_ROWS) atomic_fetch_add_explicit(&p->rows, (uint64_t)(ids > 0 ? ids : 0), memory_order_relaxed);
    atomic_fetch_add_explicit(&p->bytes, bytes, memory_order_relaxed);
}

void fs_shard_metrics_set_revision(fs_shard_metrics_t *m, int64_t revision)
{
    if (m) atomic_store_explicit(&m->revision, revision, memory_order_relaxed);
}

void fs_shard_metrics_set_parts(fs_shard_metrics_t *m, int held)
{
    atomic_store_explicit(&m->parts_held, held, memory_order_relaxed);
}

void fs_shard_metrics_parts_moved(fs_shard_metrics_t *m, int loaded, int dropped, int failed)
{
    atomic_fetch_add_explicit(&m->part_loads, (uint64_t)loaded, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->part_drops, (uint64_t)dropped, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->part_load_errors, (uint64_t)failed, memory_order_relaxed);
}

uint64_t fs_shard_metrics_calls(fs_shard_metrics_t *m)
{
    uint64_t n = 0;
    for (int c = 0; m && c < FS_SHARD_CALL_COUNT_; c++) n += atomic_load_explicit(&m->call[c].calls, memory_order_relaxed);
    return n;
}

void fs_shard_metrics_set_etcd(fs_shard_metrics_t *m, int up, int64_t rejoins)
{
    if (!m) return;
    atomic_store_explicit(&m->etcd_up, up ? 1 : 0, memory_order_relaxed);
    atomic_store_explicit(&m->rejoins, rejoins, memory_order_relaxed);
}

static uint64_t ld(_Atomic uint64_t *p)
{
    return atomic_load_explicit(p, memory_order_relaxed);
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void render_calls(fs_shard_metrics_t *m, FILE *f)
{
    static const struct {
        const char *name, *help;
        size_t off;
    } series[] = {
        {"featstore_shard_calls_total", "Shard* calls answered, by method", offsetof(call_stats_t, calls)},
        {"featstore_shard_errors_total", "Shard* calls that failed, by method", offsetof(call_stats_t, errors)},
        {"featstore_shard_ids_total", "Ids asked in successful Shard* calls (destinations, rows), by method",
         offsetof(call_stats_t, ids)},
        {"featstore_shard_bytes_total", "Bytes answered by successful Shard* calls, by method",
         offsetof(call_stats_t, bytes)},
    };
    for (size_t s = 0; s < sizeof series / sizeof *series; s++) {
        family(f, series[s].name, "counter", series[s].help);
        for (int c = 0; c < FS_SHARD_CALL_COUNT_; c++)
            fprintf(f, "%s{method=\"%s\"} %llu\n", series[s].name, CALL_NAMES[c],
                    (unsigned long long)ld((_Atomic uint64_t *)((char *)&m->call[c] + series[s].off)));
    }
    family(f, "featstore_shard_seconds_total", "counter", "Seconds spent answering Shard* calls, by method");
    for (int c = 0; c < FS_SHARD_CALL_COUNT_; c++)
        fprintf(f, "featstore_shard_seconds_total{method=\"%s\"} %.6f\n", CALL_NAMES[c], ld(&m->call[c].micros) * 1e-6);
}

static void render_hops(fs_shard_metrics_t *m, FILE *f)
{
    family(f, "featstore_shard_hop_calls_total", "counter", "ShardPicks calls by hop (requests per hop)");
    for (int h = 0; h < FS_MAX_HOPS; h++)
        fprintf(f, "featstore_shard_hop_calls_total{hop=\"%d\"} %llu\n", h, (unsigned long long)ld(&m->hop_calls[h]));
    family(f, "featstore_shard_hop_ids_total", "counter", "Destinations picked by hop");
    for (int h = 0; h < FS_MAX_HOPS; h++)
        fprintf(f, "featstore_shard_hop_ids_total{hop=\"%d\"} %llu\n", h, (unsigned long long)ld(&m->hop_ids[h]));
}

static void render_peers(fs_shard_metrics_t *m, FILE *f)
{
    int n = atomic_load(&m->num_peers);
    family(f, "featstore_shard_peer_rows_total", "counter", "Feature rows served to each peer (ShardRows)");
    for (int i = 0; i <= FS_SHARD_METRICS_PEERS; i++)
        if (i < n || (i == FS_SHARD_METRICS_PEERS && ld(&m->peer[i].bytes)))
            fprintf(f, "featstore_shard_peer_rows_total{peer=\"%s\"} %llu\n", m->peer[i].name,
                    (unsigned long long)ld(&m->peer[i].rows));
    family(f, "featstore_shard_peer_bytes_total", "counter", "Bytes of picks and rows served to each peer");
    for (int i = 0; i <= FS_SHARD_METRICS_PEERS; i++)
        if (i < n || (i == FS_SHARD_METRICS_PEERS && ld(&m->peer[i].bytes)))
            fprintf(f, "featstore_shard_peer_bytes_total{peer=\"%s\"} %llu\n", m->peer[i].name,
                    (unsigned long long)ld(&m->peer[i].bytes));
}

char *fs_shard_metrics_render(fs_shard_metrics_t *m)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    family(f, "featstore_shard_info", "gauge", "This shard: its number and partitioning");
    fprintf(f, "featstore_shard_info{shard=\"%d\",partitioning=\"%s\"} 1\n", m->shard_id, m->partitioning);
    family(f, "featstore_shard_parts", "gauge", "The parts this shard holds now (owned and copies)");
    fprintf(f, "featstore_shard_parts %d\n", atomic_load(&m->parts_held));
    family(f, "featstore_shard_part_loads_total", "counter",
           "Parts loaded while serving, given to this shard by the cluster's assignment");
    fprintf(f, "featstore_shard_part_loads_total %llu\n", (unsigned long long)ld(&m->part_loads));
    family(f, "featstore_shard_part_drops_total", "counter",
           "Parts dropped while serving, once the map named other holders for them");
    fprintf(f, "featstore_shard_part_drops_total %llu\n", (unsigned long long)ld(&m->part_drops));
    family(f, "featstore_shard_part_load_errors_total", "counter",
           "Parts the assignment gave this shard that it failed to load (missing, or of another partitioning); "
           "tried again every few seconds");
    fprintf(f, "featstore_shard_part_load_errors_total %llu\n", (unsigned long long)ld(&m->part_load_errors));
    family(f, "featstore_shard_map_revision", "gauge", "The revision of the shard map this shard holds (0: none)");
    fprintf(f, "featstore_shard_map_revision %lld\n", (long long)atomic_load(&m->revision));
    if (atomic_load(&m->etcd_up) >= 0) {
        family(f, "featstore_shard_etcd_up", "gauge",
               "1 when etcd answered the membership's last call; 0 while it cannot be reached (the shard serves on "
               "its last map and membership changes wait)");
        fprintf(f, "featstore_shard_etcd_up %d\n", atomic_load(&m->etcd_up));
        family(f, "featstore_shard_rejoins_total", "counter",
               "Registrations made again after the shard's lease lapsed (etcd away longer than the lease)");
        fprintf(f, "featstore_shard_rejoins_total %lld\n", (long long)atomic_load(&m->rejoins));
    }
    render_calls(m, f);
    render_hops(m, f);
    render_peers(m, f);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}
