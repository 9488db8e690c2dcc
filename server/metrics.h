/* metrics.h — the server's counters and their Prometheus text rendering
 * (exposition format 0.0.4): requests and errors by method and transport,
 * latency histograms, connected clients, and — read from the store and the
 * dataset at render time — rows/bytes per (reader, source tier), memory per
 * tier and dataset facts; and, when a placement plan is served, each
 * reader GPU's feature bytes by source (local / peer / host) as the plan
 * predicts them next to what was measured.
 *
 * Thread-safety: recording is lock-free (relaxed atomics) from any thread;
 * rendering may run concurrently with recording. */
#ifndef FS_METRICS_H
#define FS_METRICS_H

#include "dataset.h"
#include "store.h"

/* The metrics' methods: the server's own numbering, never a wire's (a
 * unix:// REPORT names its method in the local protocol's enum, mapped by
 * local_report.c). UNKNOWN counts a reported method this release does not
 * know (a newer client's). */
typedef enum { FS_METHOD_INFO, FS_METHOD_SAMPLE, FS_METHOD_GATHER, FS_METHOD_SAMPLE_GATHER, FS_METHOD_STATS,
               FS_METHOD_SPLIT, FS_METHOD_HETERO_SAMPLE, FS_METHOD_LINK_SAMPLE, FS_METHOD_STREAM,
               FS_METHOD_SHARD_PICKS, FS_METHOD_SHARD_ROWS, FS_METHOD_SHARD_FILE, FS_METHOD_SHARD_EDGES, FS_METHOD_UNKNOWN,
               FS_METHOD_COUNT_ } fs_method_t;
typedef enum { FS_TRANSPORT_UNIX, FS_TRANSPORT_GRPC, FS_TRANSPORT_COUNT_ } fs_transport_t;

const char *fs_method_name(fs_method_t m);
const char *fs_transport_name(fs_transport_t t);

typedef struct fs_metrics fs_metrics_t;

fs_metrics_t *fs_metrics_create(const fs_dataset_t *ds, fs_store_t *store); /* retains the store */
void fs_metrics_destroy(fs_metrics_t *m);

/* One finished request: its outcome and its latency in seconds. */
void fs_metrics_request(fs_metrics_t *m, fs_method_t method, fs_transport_t t, fs_status_t status, double seconds);
void fs_metrics_client(fs_metrics_t *m, fs_transport_t t, int delta); /* +1 connect, -1 disconnect */
/* Rows/bytes that a local client reading as `reader` (FS_READER_CPU or a
 * GPU id) read in its own process, per tier of placement `generation`
 * (ignored when that placement has been replaced since). */
void fs_metrics_client_reads(fs_metrics_t *m, int reader, uint64_t generation, const fs_gather_counters_t *features,
                             const fs_gather_counters_t *topo);

/* A re-plan: the new placement's store (retained) and generation. The
 * per-placement figures (per-tier reads, predictions, measured bytes)
 * start again from zero; the new predictions follow by
 * fs_metrics_set_predicted. Thread-safe against every other call. */
void fs_metrics_replace_store(fs_metrics_t *m, fs_store_t *store, uint64_t generation);
/* One re-plan request finished with `status`. */
void fs_metrics_replan(fs_metrics_t *m, fs_status_t status);
/* Dataset file `file` (fs_dataset_file_name) changed under the server
 * (featstore_dataset_file_changes_total{file, change}). */
void fs_metrics_file_change(fs_metrics_t *m, int file, fs_file_change_t change);
/* The tables served from disk, read at each scrape (borrowed: it must
 * outlive the metrics; NULL: none). */
struct fs_disk_tables;
void fs_metrics_set_disk(fs_metrics_t *m, const struct fs_disk_tables *disk);

/* Where a reader's feature bytes come from, relative to the reader: its own
 * GPU's tiers, another GPU's, or host memory. */
enum { FS_SOURCE_LOCAL, FS_SOURCE_PEER, FS_SOURCE_HOST, FS_SOURCE_COUNT_ };
const char *fs_source_name(int source);

/* The plan's prediction for GPU `reader`: feature bytes per mini-batch by
 * source (for the workload the plan was costed with). Setup-time call. */
void fs_metrics_set_predicted(fs_metrics_t *m, int reader, const double bytes[FS_SOURCE_COUNT_]);



/* Adds the placement's readers (prediction next to measurement, one per
 * reader GPU with a prediction) and its generation to `info`.
 * FS_ERR_NOMEM when a reader cannot be added. */
fs_status_t fs_metrics_info(fs_metrics_t *m, fs_info_t *info);

/* Local clients by version (featstore_local_clients_by_version): a client
 * connected speaking local protocol major.minor with library release
 * `library` (NULL or "" when its protocol predates saying so: "unknown")
 * is counted under the entry joined returns, and its disconnect passes
 * that entry to left. At most FS_METRICS_MAX_VERSIONS - 1 combinations are
 * counted apart at once; a combination whose clients all left frees its
 * entry for the next new one, and while every entry is held the rest are
 * counted together as "other". */
#define FS_METRICS_MAX_VERSIONS 16
#define FS_METRICS_LIBRARY_LEN 32
int fs_metrics_local_version_joined(fs_metrics_t *m, unsigned major, unsigned minor, const char *library);
void fs_metrics_local_version_left(fs_metrics_t *m, int entry);

/* gRPC admission and deadlines (grpc_server.c): calls being served now
 * (delta +1 admitted, -1 finished), calls refused before any work and why,
 * and calls ended because their deadline passed. */
typedef enum { FS_GRPC_REFUSED_MAX_CALLS, FS_GRPC_REFUSED_UNAUTHENTICATED, FS_GRPC_REFUSED_COUNT_ } fs_grpc_refusal_t;
void fs_metrics_grpc_in_flight(fs_metrics_t *m, int delta);
void fs_metrics_grpc_refused(fs_metrics_t *m, fs_grpc_refusal_t why);
void fs_metrics_grpc_deadline_exceeded(fs_metrics_t *m);

/* The unix:// transport's guards (local.c): accept() failures by reason
 * (the loop backs off instead of spinning), connections refused at accept
 * by reason, handshakes that timed out, and REPLANs refused to a peer that
 * is not the admin uid. */
typedef enum { FS_LOCAL_ACCEPT_EMFILE, FS_LOCAL_ACCEPT_ENFILE, FS_LOCAL_ACCEPT_OTHER, FS_LOCAL_ACCEPT_COUNT_ }
    fs_local_accept_error_t;
typedef enum { FS_LOCAL_REFUSED_UID_CAP, FS_LOCAL_REFUSED_NOT_ALLOWED, FS_LOCAL_REFUSED_COUNT_ } fs_local_refusal_t;
void fs_metrics_local_accept_error(fs_metrics_t *m, fs_local_accept_error_t why);
void fs_metrics_local_refused(fs_metrics_t *m, fs_local_refusal_t why);
void fs_metrics_local_handshake_timeout(fs_metrics_t *m);
void fs_metrics_local_admin_refused(fs_metrics_t *m);

/* The exposition text; the caller frees it. NULL when out of memory. */
char *fs_metrics_render(fs_metrics_t *m);

#endif
