/* metrics.c — see metrics.h. Histograms use fixed buckets (0.25 ms .. 10 s)
 * stored as per-bucket counts and rendered cumulatively, as Prometheus
 * requires. The text is built in a growing buffer (open_memstream). */
#include "metrics.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "disk_tables.h"
#include "fs_info.h"

static const double buckets[] = {0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
#define NB (sizeof buckets / sizeof buckets[0])

typedef struct {
    _Atomic uint64_t requests, errors, bucket[NB + 1];
    _Atomic uint64_t sum_us;
} method_stats_t;

/* Local clients connected now by (protocol minor, library release). An
 * entry with no clients is free; the last one is "other", for the clients
 * of combinations that found every other entry held. */
typedef struct {
    unsigned major, minor;
    char library[FS_METRICS_LIBRARY_LEN];
    int64_t clients;
} client_version_t;

#define OTHER_VERSIONS (FS_METRICS_MAX_VERSIONS - 1)

struct fs_metrics {
    const fs_dataset_t *ds;
    const fs_disk_tables_t *disk;
    _Atomic uint64_t (*file_changes)[FS_FILE_CHANGE_COUNT_]; /* [dataset file][change] */
    pthread_mutex_t versions_mu;
    client_version_t versions[FS_METRICS_MAX_VERSIONS]; /* [OTHER_VERSIONS] is "other" */
    method_stats_t m[FS_METHOD_COUNT_][FS_TRANSPORT_COUNT_];
    /* errors by status code; the last slot counts codes this release does
     * not know (a newer client's REPORT) */
    _Atomic uint64_t errors_by_code[FS_TRANSPORT_COUNT_][FS_STATUS_COUNT_ + 1];
    _Atomic int64_t clients[FS_TRANSPORT_COUNT_];
    _Atomic uint64_t replans[2]; /* [0] done, [1] failed */
    _Atomic int64_t grpc_in_flight;
    _Atomic uint64_t grpc_refused[FS_GRPC_REFUSED_COUNT_], grpc_deadline_exceeded;
    _Atomic uint64_t local_accept_errors[FS_LOCAL_ACCEPT_COUNT_], local_refused[FS_LOCAL_REFUSED_COUNT_];
    _Atomic uint64_t local_handshake_timeouts, local_admin_refused;
    /* Everything below belongs to one placement and is replaced with it:
     * mu guards the swap against readers of these fields. */
    pthread_mutex_t mu;
    fs_store_t *store;            /* retained */
    uint64_t generation;
    /* local clients' reads, [reader + 1][tier] */
    _Atomic uint64_t local_rows[FS_MAX_READERS][FS_MAX_TIERS], local_bytes[FS_MAX_READERS][FS_MAX_TIERS];
    _Atomic uint64_t local_topo_rows[FS_MAX_READERS][FS_MAX_TIERS], local_topo_bytes[FS_MAX_READERS][FS_MAX_TIERS];
    int predicted_set[FS_MAX_DEVICES];
    double predicted[FS_MAX_DEVICES][FS_SOURCE_COUNT_];
};

const char *fs_method_name(fs_method_t m)
{
    static const char *const n[FS_METHOD_COUNT_] = {"Info", "Sample", "Gather", "SampleGather", "Stats", "Split",
                                                      "HeteroSample", "LinkSample", "Stream", "ShardPicks",
                                                      "ShardRows", "ShardFile", "ShardEdges", "unknown"};
    return (unsigned)m < FS_METHOD_COUNT_ ? n[m] : "unknown";
}

const char *fs_transport_name(fs_transport_t t) { return t == FS_TRANSPORT_UNIX ? "unix" : "grpc"; }

fs_metrics_t *fs_metrics_create(const fs_dataset_t *ds, fs_store_t *store)
{
    fs_metrics_t *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->file_changes = calloc((size_t)fs_dataset_num_files(ds) + 1, sizeof *m->file_changes);
    if (!m->file_changes) {
        free(m);
        return NULL;
    }
    m->ds = ds, m->store = fs_store_retain(store), m->generation = 1;
    pthread_mutex_init(&m->mu, NULL);
    pthread_mutex_init(&m->versions_mu, NULL);
    return m;
}

void fs_metrics_destroy(fs_metrics_t *m)
{
    if (!m) return;
    fs_store_destroy(m->store);
    free(m->file_changes);
    pthread_mutex_destroy(&m->mu);
    pthread_mutex_destroy(&m->versions_mu);
    free(m);
}

static void zero(_Atomic uint64_t (*c)[FS_MAX_TIERS])
{
    for (int r = 0; r < FS_MAX_READERS; r++)
        for (int k = 0; k < FS_MAX_TIERS; k++) atomic_store_explicit(&c[r][k], 0, memory_order_relaxed);
}

void fs_metrics_replace_store(fs_metrics_t *m, fs_store_t *store, uint64_t generation)
{
    pthread_mutex_lock(&m->mu);
    fs_store_t *old = m->store;
    m->store = fs_store_retain(store), m->generation = generation;
    zero(m->local_rows), zero(m->local_bytes), zero(m->local_topo_rows), zero(m->local_topo_bytes);
    for (int r = 0; r < FS_MAX_DEVICES; r++) m->predicted_set[r] = 0;
    pthread_mutex_unlock(&m->mu);
    fs_store_destroy(old);
}

void fs_metrics_file_change(fs_metrics_t *m, int file, fs_file_change_t change)
{
    if (file >= 0 && file < fs_dataset_num_files(m->ds) && change > FS_FILE_SAME && change < FS_FILE_CHANGE_COUNT_)
        atomic_fetch_add_explicit(&m->file_changes[file][change], 1, memory_order_relaxed);
}

void fs_metrics_replan(fs_metrics_t *m, fs_status_t status)
{
    atomic_fetch_add_explicit(&m->replans[status != FS_OK], 1, memory_order_relaxed);
}

void fs_metrics_request(fs_metrics_t *m, fs_method_t method, fs_transport_t t, fs_status_t status, double seconds)
{
    if ((unsigned)method >= FS_METHOD_COUNT_ || (unsigned)t >= FS_TRANSPORT_COUNT_) return;
    if (!(seconds >= 0) || seconds > 1e9) seconds = 0; /* a client's REPORT is untrusted: no NaN, < 0 or absurd */
    method_stats_t *s = &m->m[method][t];
    atomic_fetch_add_explicit(&s->requests, 1, memory_order_relaxed);
    if (status != FS_OK) {
        atomic_fetch_add_explicit(&s->errors, 1, memory_order_relaxed);
        unsigned code = (unsigned)status < FS_STATUS_COUNT_ ? (unsigned)status : FS_STATUS_COUNT_;
        atomic_fetch_add_explicit(&m->errors_by_code[t][code], 1, memory_order_relaxed);
    }
    size_t b = 0;
    while (b < NB && seconds > buckets[b]) b++;
    atomic_fetch_add_explicit(&s->bucket[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->sum_us, (uint64_t)(seconds * 1e6), memory_order_relaxed);
}

void fs_metrics_grpc_in_flight(fs_metrics_t *m, int delta)
{
    atomic_fetch_add_explicit(&m->grpc_in_flight, delta, memory_order_relaxed);
}

void fs_metrics_grpc_refused(fs_metrics_t *m, fs_grpc_refusal_t why)
{
    if ((unsigned)why < FS_GRPC_REFUSED_COUNT_) atomic_fetch_add_explicit(&m->grpc_refused[why], 1, memory_order_relaxed);
}

void fs_metrics_grpc_deadline_exceeded(fs_metrics_t *m)
{
    atomic_fetch_add_explicit(&m->grpc_deadline_exceeded, 1, memory_order_relaxed);
}

void fs_metrics_client(fs_metrics_t *m, fs_transport_t t, int delta)
{
    if ((unsigned)t < FS_TRANSPORT_COUNT_) atomic_fetch_add_explicit(&m->clients[t], delta, memory_order_relaxed);
}

/* A client-supplied release as a label value: [A-Za-z0-9._+-] kept, anything
 * else '_', so the exposition stays valid whatever a client sends. */
static void library_label(const char *in, char *out)
{
    size_t n = 0;
    for (; in && in[n] && n < FS_METRICS_LIBRARY_LEN - 1; n++) {
        char ch = in[n];
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
                 ch == '_' || ch == '+' || ch == '-';
        out[n] = ok ? ch : '_';
    }
    out[n] = '\0';
    if (n == 0) snprintf(out, FS_METRICS_LIBRARY_LEN, "unknown");
}

/* The entry counting (major, minor, label) now, else a free one set to it,
 * else "other". versions_mu held. */
static int version_entry(fs_metrics_t *m, unsigned major, unsigned minor, const char *label)
{
    int free_entry = -1;
    for (int i = 0; i < OTHER_VERSIONS; i++) {
        const client_version_t *v = &m->versions[i];
        if (v->clients > 0 && v->major == major && v->minor == minor && strcmp(v->library, label) == 0) return i;
        if (v->clients == 0 && free_entry < 0) free_entry = i;
    }
    if (free_entry < 0) return OTHER_VERSIONS;
    client_version_t *v = &m->versions[free_entry];
    *v = (client_version_t){.major = major, .minor = minor};
    snprintf(v->library, sizeof v->library, "%s", label);
    return free_entry;
}

int fs_metrics_local_version_joined(fs_metrics_t *m, unsigned major, unsigned minor, const char *library)
{
    char label[FS_METRICS_LIBRARY_LEN];
    library_label(library, label);
    pthread_mutex_lock(&m->versions_mu);
    int i = version_entry(m, major, minor, label);
    m->versions[i].clients++;
    pthread_mutex_unlock(&m->versions_mu);
    return i;
}

void fs_metrics_local_version_left(fs_metrics_t *m, int entry)
{
    if (entry < 0 || entry >= FS_METRICS_MAX_VERSIONS) return;
    pthread_mutex_lock(&m->versions_mu);
    if (m->versions[entry].clients > 0) m->versions[entry].clients--;
    pthread_mutex_unlock(&m->versions_mu);
}

void fs_metrics_client_reads(fs_metrics_t *m, int reader, uint64_t generation, const fs_gather_counters_t *f,
                             const fs_gather_counters_t *topo)
{
    if (reader < FS_READER_CPU || reader >= FS_MAX_DEVICES) return;
    int r = reader + 1;
    pthread_mutex_lock(&m->mu);
    if (generation != m->generation) { /* read through a replaced placement: its tiers are gone */
        pthread_mutex_unlock(&m->mu);
        return;
    }
    for (int k = 0; k < FS_MAX_TIERS; k++) {
        if (f) {
            atomic_fetch_add_explicit(&m->local_rows[r][k], f->rows[k], memory_order_relaxed);
            atomic_fetch_add_explicit(&m->local_bytes[r][k], f->bytes[k], memory_order_relaxed);
        }
        if (topo) {
            atomic_fetch_add_explicit(&m->local_topo_rows[r][k], topo->rows[k], memory_order_relaxed);
            atomic_fetch_add_explicit(&m->local_topo_bytes[r][k], topo->bytes[k], memory_order_relaxed);
        }
    }
    pthread_mutex_unlock(&m->mu);
}

static uint64_t ld(_Atomic uint64_t *p) { return atomic_load_explicit(p, memory_order_relaxed); }

/* A local-client counter summed over readers. */
static uint64_t ld_readers(_Atomic uint64_t (*c)[FS_MAX_TIERS], int k)
{
    uint64_t sum = 0;
    for (int r = 0; r < FS_MAX_READERS; r++) sum += ld(&c[r][k]);
    return sum;
}

/* ---- placement: predicted against measured --------------------------------------- */

const char *fs_source_name(int source)
{
    static const char *const n[FS_SOURCE_COUNT_] = {"local", "peer", "host"};
    return (unsigned)source < FS_SOURCE_COUNT_ ? n[source] : "unknown";
}

void fs_metrics_set_predicted(fs_metrics_t *m, int reader, const double bytes[FS_SOURCE_COUNT_])
{
    if (reader < 0 || reader >= FS_MAX_DEVICES) return;
    pthread_mutex_lock(&m->mu);
    for (int s = 0; s < FS_SOURCE_COUNT_; s++) m->predicted[reader][s] = bytes[s];
    m->predicted_set[reader] = 1;
    pthread_mutex_unlock(&m->mu);
}

/* Tier k's source as reader sees it. */
static int source_of(const fs_store_t *st, int reader, int k)
{
    fs_store_tier_t ti;
    fs_store_tier_info(st, k, &ti);
    if (ti.kind != FS_TIER_DEVICE && ti.kind != FS_TIER_SIM_DEVICE) return FS_SOURCE_HOST;
    return ti.device == reader ? FS_SOURCE_LOCAL : FS_SOURCE_PEER;
}

/* Feature bytes `reader` has read through the current placement, by
 * source: the server's reads for it plus its local clients' (under mu). */
static void measured_bytes(fs_metrics_t *m, int reader, uint64_t bytes[FS_SOURCE_COUNT_])
{
    for (int s = 0; s < FS_SOURCE_COUNT_; s++) bytes[s] = 0;
    if (reader < FS_READER_CPU || reader >= FS_MAX_DEVICES) return;
    fs_gather_counters_t server;
    fs_store_counters(m->store, reader, &server);
    for (int k = 0; k < fs_store_num_tiers(m->store); k++)
        bytes[source_of(m->store, reader, k)] += server.bytes[k] + ld(&m->local_bytes[reader + 1][k]);
}

fs_status_t fs_metrics_info(fs_metrics_t *m, fs_info_t *info)
{
    fs_status_t st = FS_OK;
    pthread_mutex_lock(&m->mu);
    info->placement_generation = m->generation;
    for (int r = 0; r < FS_MAX_DEVICES && st == FS_OK; r++) {
        if (!m->predicted_set[r]) continue;
        fs_reader_info_t *p = fs_info_add_reader(info);
        if (!p) {
            st = FS_ERR_NOMEM;
            break;
        }
        p->reader = r;
        for (int s = 0; s < FS_SOURCE_COUNT_; s++) p->predicted_bytes[s] = m->predicted[r][s];
        measured_bytes(m, r, p->measured_bytes);
    }
    pthread_mutex_unlock(&m->mu);
    return st;
}

/* One family over (reader GPU with a prediction, source): the values, or
 * with `share` each value over its reader's total. */
static void render_by_source(FILE *f, const fs_metrics_t *m, const char *name, const char *type, const char *help,
                             double v[FS_MAX_DEVICES][FS_SOURCE_COUNT_], int share, int digits)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
    for (int r = 0; r < FS_MAX_DEVICES; r++) {
        if (!m->predicted_set[r]) continue;
        double total = v[r][FS_SOURCE_LOCAL] + v[r][FS_SOURCE_PEER] + v[r][FS_SOURCE_HOST];
        for (int s = 0; s < FS_SOURCE_COUNT_; s++)
            fprintf(f, "%s{reader=\"gpu%d\",source=\"%s\"} %.*f\n", name, r, fs_source_name(s), digits,
                    !share ? v[r][s] : total > 0 ? v[r][s] / total : 0.0);
    }
}

/* Per reader GPU with a prediction: predicted bytes per batch and share, and
 * the measured bytes and share, by source. Shares make the two comparable
 * whatever the trainers' batch sizes. */
static void render_placement(fs_metrics_t *m, FILE *f)
{
    int any = 0;
    double measured[FS_MAX_DEVICES][FS_SOURCE_COUNT_] = {{0}};
    for (int r = 0; r < FS_MAX_DEVICES; r++) {
        if (!m->predicted_set[r]) continue;
        any = 1;
        uint64_t meas[FS_SOURCE_COUNT_];
        measured_bytes(m, r, meas);
        for (int s = 0; s < FS_SOURCE_COUNT_; s++) measured[r][s] = (double)meas[s];
    }
    if (!any) return;
    render_by_source(f, m, "featstore_placement_predicted_bytes_per_batch", "gauge",
                     "Feature bytes per mini-batch the plan predicts, by reader GPU and source.", m->predicted, 0, 1);
    render_by_source(f, m, "featstore_placement_predicted_share", "gauge",
                     "Share of a reader's feature bytes the plan predicts from each source.", m->predicted, 1, 6);
    render_by_source(f, m, "featstore_placement_measured_bytes_total", "counter",
                     "Feature bytes read, by reader GPU and source.", measured, 0, 0);
    render_by_source(f, m, "featstore_placement_measured_share", "gauge",
                     "Share of a reader's feature bytes read from each source.", measured, 1, 6);
}

/* Label values of featstore_request_errors_by_code_total: the status names
 * of featstore/types.h, lower case, as gRPC's code names are. */
static const char *const code_label[FS_STATUS_COUNT_ + 1] = {
    [FS_ERR_INVALID_ARGUMENT] = "invalid_argument", [FS_ERR_NOT_FOUND] = "not_found", [FS_ERR_IO] = "io",
    [FS_ERR_FORMAT] = "format", [FS_ERR_UNSUPPORTED] = "unsupported", [FS_ERR_NOMEM] = "nomem",
    [FS_ERR_EXISTS] = "exists", [FS_ERR_RESOURCE] = "resource", [FS_ERR_NO_DEVICE] = "no_device",
    [FS_ERR_INTERNAL] = "internal", [FS_ERR_UNAVAILABLE] = "unavailable", [FS_ERR_TIMEOUT] = "timeout",
    [FS_ERR_VERSION] = "version", [FS_ERR_PERMISSION] = "permission", [FS_END] = "end",
    [FS_STATUS_COUNT_] = "unknown",
};

static void render_errors_by_code(fs_metrics_t *m, FILE *f)
{
    fprintf(f, "# HELP featstore_request_errors_by_code_total Requests answered with an error, by transport and "
               "status code (featstore/types.h).\n"
               "# TYPE featstore_request_errors_by_code_total counter\n");
    for (int t = 0; t < FS_TRANSPORT_COUNT_; t++)
        for (int c = 1; c <= FS_STATUS_COUNT_; c++)
            fprintf(f, "featstore_request_errors_by_code_total{transport=\"%s\",code=\"%s\"} %llu\n",
                    fs_transport_name(t), code_label[c], (unsigned long long)ld(&m->errors_by_code[t][c]));
}

static void render_requests(fs_metrics_t *m, FILE *f)
{
    fprintf(f, "# HELP featstore_requests_total Requests handled, by method and transport.\n"
               "# TYPE featstore_requests_total counter\n");
    for (int i = 0; i < FS_METHOD_COUNT_; i++)
        for (int t = 0; t < FS_TRANSPORT_COUNT_; t++)
            fprintf(f, "featstore_requests_total{method=\"%s\",transport=\"%s\"} %llu\n", fs_method_name(i),
                    fs_transport_name(t), (unsigned long long)ld(&m->m[i][t].requests));
    fprintf(f, "# HELP featstore_request_errors_total Requests answered with an error.\n"
               "# TYPE featstore_request_errors_total counter\n");
    for (int i = 0; i < FS_METHOD_COUNT_; i++)
        for (int t = 0; t < FS_TRANSPORT_COUNT_; t++)
            fprintf(f, "featstore_request_errors_total{method=\"%s\",transport=\"%s\"} %llu\n", fs_method_name(i),
                    fs_transport_name(t), (unsigned long long)ld(&m->m[i][t].errors));
    render_errors_by_code(m, f);
    fprintf(f, "# HELP featstore_request_duration_seconds Request latency.\n"
               "# TYPE featstore_request_duration_seconds histogram\n");
    for (int i = 0; i < FS_METHOD_COUNT_; i++)
        for (int t = 0; t < FS_TRANSPORT_COUNT_; t++) {
            method_stats_t *s = &m->m[i][t];
            uint64_t cum = 0;
            const char *mn = fs_method_name(i), *tn = fs_transport_name(t);
            for (size_t b = 0; b < NB; b++) {
                cum += ld(&s->bucket[b]);
                fprintf(f, "featstore_request_duration_seconds_bucket{method=\"%s\",transport=\"%s\",le=\"%g\"} %llu\n",
                        mn, tn, buckets[b], (unsigned long long)cum);
            }
            cum += ld(&s->bucket[NB]);
            fprintf(f, "featstore_request_duration_seconds_bucket{method=\"%s\",transport=\"%s\",le=\"+Inf\"} %llu\n",
                    mn, tn, (unsigned long long)cum);
            fprintf(f, "featstore_request_duration_seconds_sum{method=\"%s\",transport=\"%s\"} %.6f\n", mn, tn,
                    (double)ld(&s->sum_us) / 1e6);
            fprintf(f, "featstore_request_duration_seconds_count{method=\"%s\",transport=\"%s\"} %llu\n", mn, tn,
                    (unsigned long long)cum);
        }
}

static void tier_labels(const fs_store_t *st, int k, char *buf, size_t n)
{
    fs_store_tier_t ti;
    fs_store_tier_info(st, k, &ti);
    snprintf(buf, n, "tier=\"%d\",kind=\"%s\",device=\"%d\"", k, fs_tier_kind_name(ti.kind), ti.device);
}

/* Rows/bytes read per source tier: server-side reads (the store's counters,
 * reader "server") and what local clients read in-process (reader "local"). */
static void render_reads(fs_metrics_t *m, FILE *f)
{
    static const char *const what[4][2] = {
        {"featstore_feature_rows_read_total", "Feature rows read, by reader and source tier."},
        {"featstore_feature_bytes_read_total", "Feature bytes read, by reader and source tier."},
        {"featstore_topology_lists_read_total", "Neighbour lists read by sampling, by reader and source tier."},
        {"featstore_topology_bytes_read_total", "Neighbour-id bytes read by sampling, by reader and source tier."}};
    fs_gather_counters_t feat, topo;
    fs_store_counters(m->store, FS_READER_CPU, &feat);
    fs_store_topology_counters(m->store, FS_READER_CPU, &topo);
    int tiers = fs_store_num_tiers(m->store);
    for (int w = 0; w < 4; w++) {
        fprintf(f, "# HELP %s %s\n# TYPE %s counter\n", what[w][0], what[w][1], what[w][0]);
        for (int k = 0; k < tiers; k++) {
            char lab[128];
            tier_labels(m->store, k, lab, sizeof lab);
            uint64_t server = w == 0 ? feat.rows[k] : w == 1 ? feat.bytes[k] : w == 2 ? topo.rows[k] : topo.bytes[k];
            uint64_t local = ld_readers(w == 0   ? m->local_rows
                                       : w == 1 ? m->local_bytes
                                       : w == 2 ? m->local_topo_rows
                                                : m->local_topo_bytes, k);
            fprintf(f, "%s{reader=\"server\",%s} %llu\n", what[w][0], lab, (unsigned long long)server);
            fprintf(f, "%s{reader=\"local\",%s} %llu\n", what[w][0], lab, (unsigned long long)local);
        }
    }
}

/* A label value in the exposition format: \\, \" and \\n escaped. */
static void put_label_value(FILE *f, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"') fputc('\\', f);
        if (*v == '\n') fputs("\\n", f);
        else fputc(*v, f);
    }
}

/* Only the (file, change) pairs seen: most datasets never see one. */
static void render_file_changes(fs_metrics_t *m, FILE *f)
{
    fprintf(f, "# HELP featstore_dataset_file_changes_total Changes seen to the dataset's files while serving (the "
               "verified copies made at start keep being served), by file and change.\n"
               "# TYPE featstore_dataset_file_changes_total counter\n");
    for (int i = 0; i < fs_dataset_num_files(m->ds); i++)
        for (int c = FS_FILE_SAME + 1; c < FS_FILE_CHANGE_COUNT_; c++) {
            uint64_t n = ld(&m->file_changes[i][c]);
            if (!n) continue;
            fputs("featstore_dataset_file_changes_total{file=\"", f);
            put_label_value(f, fs_dataset_file_name(m->ds, i));
            fprintf(f, "\",change=\"%s\"} %llu\n", fs_file_change_name(c), (unsigned long long)n);
        }
}

static void render_state(fs_metrics_t *m, FILE *f)
{
    fprintf(f, "# HELP featstore_connected_clients Clients connected now, by transport.\n"
               "# TYPE featstore_connected_clients gauge\n");
    for (int t = 0; t < FS_TRANSPORT_COUNT_; t++)
        fprintf(f, "featstore_connected_clients{transport=\"%s\"} %lld\n", fs_transport_name(t),
                (long long)atomic_load(&m->clients[t]));
    fprintf(f, "# HELP featstore_local_clients_by_version Local (unix://) clients connected now, by the local "
               "protocol version they speak and their library's release (\"other\" while %d other combinations are "
               "connected).\n# TYPE featstore_local_clients_by_version gauge\n", OTHER_VERSIONS);
    pthread_mutex_lock(&m->versions_mu);
    for (int i = 0; i < FS_METRICS_MAX_VERSIONS; i++) {
        const client_version_t *v = &m->versions[i];
        if (v->clients <= 0) continue;
        char protocol[32] = "other", library[FS_METRICS_LIBRARY_LEN] = "other";
        if (i != OTHER_VERSIONS) {
            snprintf(protocol, sizeof protocol, "%u.%u", v->major, v->minor);
            snprintf(library, sizeof library, "%s", v->library);
        }
        fprintf(f, "featstore_local_clients_by_version{protocol=\"%s\",library=\"%s\"} %lld\n", protocol, library,
                (long long)v->clients);
    }
    pthread_mutex_unlock(&m->versions_mu);
    fprintf(f, "# HELP featstore_placement_generation The placement served: 1 at start, +1 per re-plan.\n"
               "# TYPE featstore_placement_generation gauge\nfeatstore_placement_generation %llu\n",
            (unsigned long long)m->generation);
    fprintf(f, "# HELP featstore_replans_total Re-plans requested, by result.\n# TYPE featstore_replans_total counter\n"
               "featstore_replans_total{result=\"ok\"} %llu\nfeatstore_replans_total{result=\"error\"} %llu\n",
            (unsigned long long)ld(&m->replans[0]), (unsigned long long)ld(&m->replans[1]));
    fs_store_live_t live;
    fs_store_live(&live);
    fprintf(f, "# HELP featstore_placements_held Placements in memory: the one served plus older ones that local "
               "trainers still read (each keeps its own until its next call, or until it goes).\n"
               "# TYPE featstore_placements_held gauge\nfeatstore_placements_held %d\n", live.stores);
    fprintf(f, "# HELP featstore_placements_held_bytes Tier memory those placements hold, GPU (device and "
               "simulated-device tiers) or host.\n# TYPE featstore_placements_held_bytes gauge\n"
               "featstore_placements_held_bytes{memory=\"gpu\"} %zu\nfeatstore_placements_held_bytes{memory=\"host\"} %zu\n",
            live.device_bytes, live.host_bytes);
    fprintf(f, "# HELP featstore_tier_used_bytes Bytes held in each memory tier.\n"
               "# TYPE featstore_tier_used_bytes gauge\n");
    for (int k = 0; k < fs_store_num_tiers(m->store); k++) {
        fs_store_tier_t ti;
        char lab[128];
        fs_store_tier_info(m->store, k, &ti);
        tier_labels(m->store, k, lab, sizeof lab);
        fprintf(f, "featstore_tier_used_bytes{%s} %zu\n", lab, ti.used);
    }
    fprintf(f, "# HELP featstore_tier_capacity_bytes Capacity of each memory tier (0 = unlimited).\n"
               "# TYPE featstore_tier_capacity_bytes gauge\n");
    for (int k = 0; k < fs_store_num_tiers(m->store); k++) {
        fs_store_tier_t ti;
        char lab[128];
        fs_store_tier_info(m->store, k, &ti);
        tier_labels(m->store, k, lab, sizeof lab);
        fprintf(f, "featstore_tier_capacity_bytes{%s} %zu\n", lab, ti.capacity);
    }
    const fs_dataset_t *ds = m->ds;
    fprintf(f, "# HELP featstore_dataset_nodes Nodes in the served dataset.\n# TYPE featstore_dataset_nodes gauge\n"
               "featstore_dataset_nodes{dataset=\"%s\"} %lld\n", ds->name, (long long)ds->num_nodes);
    fprintf(f, "# HELP featstore_dataset_edges Stored edges in the served dataset.\n# TYPE featstore_dataset_edges gauge\n"
               "featstore_dataset_edges{dataset=\"%s\"} %lld\n", ds->name, (long long)ds->num_edges);
    fprintf(f, "# HELP featstore_dataset_table_dim Width of each feature table.\n"
               "# TYPE featstore_dataset_table_dim gauge\n");
    for (int i = 0; i < ds->num_tables; i++)
        fprintf(f, "featstore_dataset_table_dim{dataset=\"%s\",table=\"%s\",dtype=\"%s\"} %lld\n", ds->name,
                ds->tables[i].name, fs_dtype_name(ds->tables[i].dtype), (long long)ds->tables[i].dim);
    fprintf(f, "# HELP featstore_dataset_bytes Bytes of the dataset's files.\n# TYPE featstore_dataset_bytes gauge\n"
               "featstore_dataset_bytes{dataset=\"%s\"} %zu\n", ds->name, fs_dataset_bytes(ds));
    fprintf(f, "# HELP featstore_dataset_huge_page_bytes Bytes of the served copy in 2 MiB pages (-1 unknown; see "
               "docs/serving.md \"Huge pages\").\n# TYPE featstore_dataset_huge_page_bytes gauge\n"
               "featstore_dataset_huge_page_bytes{dataset=\"%s\"} %lld\n", ds->name, fs_dataset_huge_bytes(ds));
    render_file_changes(m, f);
}

void fs_metrics_set_disk(fs_metrics_t *m, const fs_disk_tables_t *disk) { m->disk = disk; }

/* The disk tier (docs/design.md "The disk tier"), as the shared caches count
 * it: the server's reads and every local trainer's. Zeros without tables on disk. */
static void render_disk(fs_metrics_t *m, FILE *f)
{
    fs_disk_tables_stats_t d;
    fs_disk_tables_stats(m->disk, &d);
    fprintf(f, "# HELP featstore_disk_tables Feature tables served from disk (they did not fit the memory budget).\n"
               "# TYPE featstore_disk_tables gauge\nfeatstore_disk_tables %d\n"
               "# HELP featstore_disk_queue_depth Reads each disk reader keeps in flight (io_uring or its pread "
               "pool).\n# TYPE featstore_disk_queue_depth gauge\nfeatstore_disk_queue_depth %d\n"
               "# HELP featstore_disk_cache_bytes Bytes of the disk tables' row caches.\n"
               "# TYPE featstore_disk_cache_bytes gauge\nfeatstore_disk_cache_bytes %llu\n"
               "# HELP featstore_disk_cache_hits_total Rows of disk tables found in the row cache.\n"
               "# TYPE featstore_disk_cache_hits_total counter\nfeatstore_disk_cache_hits_total %llu\n"
               "# HELP featstore_disk_cache_misses_total Rows of disk tables read from disk.\n"
               "# TYPE featstore_disk_cache_misses_total counter\nfeatstore_disk_cache_misses_total %llu\n"
               "# HELP featstore_disk_reads_total Reads issued to disk (coalesced rows; continued short reads "
               "included).\n# TYPE featstore_disk_reads_total counter\nfeatstore_disk_reads_total %llu\n"
               "# HELP featstore_disk_read_bytes_total Bytes read from disk.\n"
               "# TYPE featstore_disk_read_bytes_total counter\nfeatstore_disk_read_bytes_total %llu\n"
               "# HELP featstore_disk_read_seconds_total Time spent waiting for a batch's disk reads, summed.\n"
               "# TYPE featstore_disk_read_seconds_total counter\nfeatstore_disk_read_seconds_total %.6f\n"
               "# HELP featstore_disk_checksum_failures_total Rows read from disk that did not match their "
               "checksum (each failed its request).\n# TYPE featstore_disk_checksum_failures_total counter\n"
               "featstore_disk_checksum_failures_total %llu\n",
            d.tables, d.tables ? FS_DISKIO_DEFAULT_DEPTH : 0, (unsigned long long)d.cache_bytes,
            (unsigned long long)d.cache.hits,
            (unsigned long long)(d.cache.misses + d.cache.busy + d.cache.bypass), (unsigned long long)d.cache.io_reads,
            (unsigned long long)d.cache.io_bytes, (double)d.cache.io_ns * 1e-9,
            (unsigned long long)d.cache.checksum_failures);
}

static void render_grpc(fs_metrics_t *m, FILE *f)
{
    fprintf(f, "# HELP featstore_grpc_calls_in_flight gRPC calls being served now (at most serve --grpc-max-calls).\n"
               "# TYPE featstore_grpc_calls_in_flight gauge\nfeatstore_grpc_calls_in_flight %lld\n",
            (long long)atomic_load(&m->grpc_in_flight));
    fprintf(f, "# HELP featstore_grpc_calls_refused_total gRPC calls refused before any work, by reason.\n"
               "# TYPE featstore_grpc_calls_refused_total counter\n"
               "featstore_grpc_calls_refused_total{reason=\"max_calls\"} %llu\n"
               "featstore_grpc_calls_refused_total{reason=\"unauthenticated\"} %llu\n",
            (unsigned long long)ld(&m->grpc_refused[FS_GRPC_REFUSED_MAX_CALLS]),
            (unsigned long long)ld(&m->grpc_refused[FS_GRPC_REFUSED_UNAUTHENTICATED]));
    fprintf(f, "# HELP featstore_grpc_calls_deadline_exceeded_total gRPC calls ended because their deadline passed "
               "(work stopped or the pending send cancelled, and the call freed).\n"
               "# TYPE featstore_grpc_calls_deadline_exceeded_total counter\n"
               "featstore_grpc_calls_deadline_exceeded_total %llu\n",
            (unsigned long long)ld(&m->grpc_deadline_exceeded));
}

void fs_metrics_local_accept_error(fs_metrics_t *m, fs_local_accept_error_t why)
{
    if ((unsigned)why < FS_LOCAL_ACCEPT_COUNT_)
        atomic_fetch_add_explicit(&m->local_accept_errors[why], 1, memory_order_relaxed);
}

void fs_metrics_local_refused(fs_metrics_t *m, fs_local_refusal_t why)
{
    if ((unsigned)why < FS_LOCAL_REFUSED_COUNT_)
        atomic_fetch_add_explicit(&m->local_refused[why], 1, memory_order_relaxed);
}

void fs_metrics_local_handshake_timeout(fs_metrics_t *m)
{
    atomic_fetch_add_explicit(&m->local_handshake_timeouts, 1, memory_order_relaxed);
}

void fs_metrics_local_admin_refused(fs_metrics_t *m)
{
    atomic_fetch_add_explicit(&m->local_admin_refused, 1, memory_order_relaxed);
}

static void render_local_guards(fs_metrics_t *m, FILE *f)
{
    static const char *const accept_reason[] = {"emfile", "enfile", "other"};
    static const char *const refused_reason[] = {"uid_cap", "not_allowed"};
    fprintf(f, "# HELP featstore_local_accept_errors_total unix:// accept() failures, by reason (out of descriptors: "
               "the pending connection is shed and the loop backs off).\n"
               "# TYPE featstore_local_accept_errors_total counter\n");
    for (int i = 0; i < FS_LOCAL_ACCEPT_COUNT_; i++)
        fprintf(f, "featstore_local_accept_errors_total{reason=\"%s\"} %llu\n", accept_reason[i],
                (unsigned long long)ld(&m->local_accept_errors[i]));
    fprintf(f, "# HELP featstore_local_refused_total unix:// connections refused at accept, by reason (serve "
               "--max-conns-per-uid, --allow-uid/--allow-gid).\n# TYPE featstore_local_refused_total counter\n");
    for (int i = 0; i < FS_LOCAL_REFUSED_COUNT_; i++)
        fprintf(f, "featstore_local_refused_total{reason=\"%s\"} %llu\n", refused_reason[i],
                (unsigned long long)ld(&m->local_refused[i]));
    fprintf(f, "# HELP featstore_local_handshake_timeouts_total unix:// connections closed for sending no HELLO within "
               "serve --handshake-timeout.\n# TYPE featstore_local_handshake_timeouts_total counter\n"
               "featstore_local_handshake_timeouts_total %llu\n"
               "# HELP featstore_local_admin_refused_total REPLAN requests refused because the peer is not the admin "
               "uid (serve --admin-uid).\n# TYPE featstore_local_admin_refused_total counter\n"
               "featstore_local_admin_refused_total %llu\n",
            (unsigned long long)ld(&m->local_handshake_timeouts), (unsigned long long)ld(&m->local_admin_refused));
}

char *fs_metrics_render(fs_metrics_t *m)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    render_requests(m, f);
    pthread_mutex_lock(&m->mu);
    render_reads(m, f);
    render_placement(m, f);
    render_state(m, f);
    pthread_mutex_unlock(&m->mu);
    render_grpc(m, f);
    render_local_guards(m, f);
    render_disk(m, f);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}
