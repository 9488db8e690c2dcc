/* featstore/client.h — the featstore client library: what trainers link.
 *
 *   fs_client_t *c;
 *   if (fs_connect("unix:///run/featstore.sock", &c) != FS_OK) {
 *       fprintf(stderr, "%s\n", fs_client_errstr(c));   // c may be NULL only on OOM
 *       fs_close(c);
 *       return;
 *   }
 *   fs_sample_req_t req = {.num_hops = 2, .fanout = {25, 10}, .seed = step};
 *   fs_batch_t *b;
 *   if (fs_sample_gather(c, seeds, n, &req, "feat", FS_DTYPE_F32, &b) == FS_OK) {
 *       train(b->block, b->num_hops, b->features, b->num_nodes, b->dim);
 *       fs_batch_free(b);
 *   }
 *   fs_close(c);
 *
 * Transports: "unix:///path/to/socket" for trainers on the server's machine
 * (the dataset is mapped read-only into this process and shared with every
 * other trainer; results land in shared slots, zero copies) and
 * "grpc://host:port" for remote trainers. Every call behaves the same over
 * both and returns bit-identical results.
 *
 * Errors: every call returns an fs_status_t (fs_strerror() names it); the
 * connection keeps the last error's detail in fs_client_errstr().
 *
 * Ownership: a batch, info or stats result belongs to the caller until its
 * free call; its arrays stay valid until then and are read-only. Over unix://
 * a connection has a fixed number of result slots (FS_DEFAULT_SLOTS unless
 * set in the options): holding that many batches makes the next call fail
 * with FS_ERR_RESOURCE until one is freed.
 *
 * Thread-safety: a connection may be used by one thread at a time (give each
 * thread its own, or lock around calls); results may be read and freed from
 * any thread. Nothing here is signal-safe. */
#ifndef FEATSTORE_CLIENT_H
#define FEATSTORE_CLIENT_H

#include "featstore/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FS_CLIENT_API_VERSION 1
#define FS_DEFAULT_SLOTS 4

typedef struct fs_client fs_client_t;

typedef struct {
    int slots;          /* unix://: result slots (>= 1); 0 = FS_DEFAULT_SLOTS */
    int threads;        /* unix://: worker threads for in-process engines; 0 = 1 */
    int timeout_ms;     /* per call deadline; 0 = none */
    const char *device; /* unix://: the device this trainer computes on, whose
                           placement it reads through: NULL or "cpu", or
                           "gpu:N" (a GPU or simulated GPU id) */
} fs_connect_opts_t;

/* Connects. On failure *out is still set (unless out of memory) so the
 * reason can be read with fs_client_errstr(); always fs_close() it. */
fs_status_t fs_connect(const char *uri, fs_client_t **out);
fs_status_t fs_connect_opts(const char *uri, const fs_connect_opts_t *opts, fs_client_t **out);
void fs_close(fs_client_t *c);

/* The detail of the last failed call on this connection ("" if none). */
const char *fs_client_errstr(const fs_client_t *c);
/* "unix" or "grpc". */
const char *fs_client_transport(const fs_client_t *c);

/* ---- dataset facts --------------------------------------------------------- */

typedef struct {
    char name[64];
    fs_dtype_t dtype;
    int64_t rows, dim;
} fs_table_info_t;

typedef struct {
    char server_version[32];
    char dataset[128];
    int64_t num_nodes, num_edges, num_classes;
    int symmetric, weighted;
    int num_tables;
    fs_table_info_t tables[16];
    int num_splits;
    char splits[8][64];
    /* With a placement: per reader GPU, feature bytes by source ([0] its own
     * GPU, [1] peer GPUs, [2] host): the plan's prediction per mini-batch of
     * the workload it was costed with, and what was read through it.
     * Compare shares: the trainers' batches need not match that workload. */
    int num_readers;
    struct {
        int reader;
        double predicted_bytes[3];
        uint64_t measured_bytes[3];
    } placement[16];
    /* Which placement is served: 1 at start, +1 per re-plan (fs_replan).
     * Measurements above count from the current placement's start. */
    uint64_t placement_generation;
} fs_info_t;

fs_status_t fs_info(fs_client_t *c, fs_info_t **out);
void fs_info_free(fs_info_t *info);

/* ---- mini-batches ------------------------------------------------------------ */

/* One result. A sample fills the sample part (num_hops > 0); a gather the
 * feature part (rows > 0); sample_gather both, with features[i] the row of
 * nodes[i]. */
typedef struct {
    /* sample */
    int num_hops;
    fs_block_t block[FS_MAX_HOPS];
    int64_t num_nodes;
    const int64_t *nodes;        /* [num_nodes] global id of each local id */
    int64_t num_seeds;
    const int64_t *seed_local;   /* [num_seeds] local id of each input seed */
    /* features */
    int64_t rows, dim;
    fs_dtype_t dtype;
    const void *features;        /* [rows][dim] of dtype, row-major */
} fs_batch_t;

/* Uniform/weighted k-hop sampling from `seeds` (see fs_sample_req_t). */
fs_status_t fs_sample(fs_client_t *c, const int64_t *seeds, int64_t n, const fs_sample_req_t *req, fs_batch_t **out);

/* Rows `ids` of feature table `table`. out_dtype: the stored dtype
 * (FS_DTYPE_INVALID means "as stored") or FS_DTYPE_F32 for half tables. */
fs_status_t fs_gather(fs_client_t *c, const char *table, const int64_t *ids, int64_t n, fs_dtype_t out_dtype,
                      fs_batch_t **out);

/* One mini-batch: sample, then gather the sampled nodes' features. */
fs_status_t fs_sample_gather(fs_client_t *c, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
                             const char *table, fs_dtype_t out_dtype, fs_batch_t **out);

/* Releases a batch (and its result slot). NULL is a no-op. */
void fs_batch_free(fs_batch_t *b);

/* ---- locality-aware sampling ---------------------------------------------------- */

/* Requests with fs_sample_req_t.locality > 1 boost neighbours that lead to
 * rows in the reader's GPU memory and return per-edge importance weights
 * (fs_block_t.edge_weights); see featstore/types.h. Over unix:// with
 * device "gpu:N" and a server with a placement; elsewhere such a request
 * fails with FS_ERR_UNSUPPORTED and a message saying what is missing.
 *
 * Algorithm 2 (ALGORITHMS §4) picks s per epoch from the time the trainer
 * spends loading: call this once per epoch with r = loading time / total
 * time of that epoch, in [0, 1]. The connection's controller (s starts at
 * 1; thresholds 0.15 and 0.2; at most 8) updates s — doubling while r >
 * 0.2, backing off halfway to the previous s after an overshoot (r < 0.15),
 * settling for good once r is in range or s reached 8 — and writes the s
 * for the next epoch to *locality (may be NULL). Requests with locality =
 * FS_LOCALITY_AUTO use the current s (plain sampling while it is 1). A bad
 * r (NaN, outside [0, 1]) is FS_ERR_INVALID_ARGUMENT and changes nothing.
 * Kept per connection on both transports. */
fs_status_t fs_report_load_ratio(fs_client_t *c, double load_ratio, double *locality);

/* The memory a batch's feature rows live in: over unix:// its shared result
 * slot (every array of the batch is inside it), over grpc:// the buffer the
 * rows were received into. For checking zero-copy claims and for pinning
 * or registering the memory; valid until fs_batch_free. */
fs_status_t fs_batch_region(const fs_batch_t *b, const void **base, size_t *len);

/* ---- labels and splits ---------------------------------------------------------- */

/* Labels, when the dataset has them, are the table "labels" (int64, dim 1,
 * -1 = unlabelled): fs_gather(c, "labels", ids, n, FS_DTYPE_INVALID, &b). */

typedef struct {
    int64_t n;
    const int64_t *ids;          /* [n] node ids */
} fs_ids_t;

/* The node ids of a named split ("train", "valid", "test"; fs_info lists
 * them). Over unix:// the ids are the dataset's file, mapped read-only.
 * FS_ERR_NOT_FOUND for an unknown name. Free with fs_ids_free. */
fs_status_t fs_split(fs_client_t *c, const char *name, fs_ids_t **out);
void fs_ids_free(fs_ids_t *ids);

/* ---- operations ----------------------------------------------------------------- */

/* The server's metrics in Prometheus text format (as GET /metrics). Free the
 * string with fs_stats_free. */
fs_status_t fs_stats(fs_client_t *c, char **text);
void fs_stats_free(char *text);

/* Re-plans a running server's placement (ALGORITHMS §2-§5) and switches
 * to it without a restart. Unset fields keep what the server runs with now;
 * paths are on the server's machine. The server builds the whole new
 * placement beside the served one, then switches: requests in flight
 * finish, trainers connected over unix:// follow the new plan from their
 * next call (one load of a shared page per call tells them), results never
 * change (only where rows are read from). A bad option or a failed plan is
 * an error naming the problem and changes nothing; a second re-plan while
 * one runs is FS_ERR_UNAVAILABLE. Over unix:// only (FS_ERR_UNSUPPORTED over
 * grpc://): it is administration, reserved to the server's machine.
 * Blocks until the new placement serves; *generation (may be NULL) gets
 * its number. opts may be NULL: re-plan with the current options (a plan
 * file is read again; presampled hotness is sampled again). */
typedef struct {
    const char *topology;  /* preset (pcie4, nvlink-pairs, dgx1-v100, nvswitch8) or topology file */
    double gpu_budget;     /* bytes per GPU as a fraction of the feature table's bytes, in (0, 1] */
    const char *hotness;   /* "degree", "reach" or "presample" */
    const char *order;     /* "topology-first", "feature-first" (ALGORITHMS §5) or "auto" (the faster of the
                              two by the cost model, neighbour-list reads included) */
    const char *plan;      /* a plan file (`featstore plan --save`) to load instead of planning */
    const char *save;      /* save the new plan to this file */
    const char *alpha;     /* Algorithm 1's alpha: "0.1" for every link class, or "nvlink=0.2,nvswitch=0"
                              (0 = no copies inside a group, least host traffic; -> 1 = copies everywhere) */
    const char *reserve;   /* GPU memory kept free per GPU for the trainer's model and activations: "2G" */
} fs_replan_opts_t;

fs_status_t fs_replan(fs_client_t *c, const fs_replan_opts_t *opts, uint64_t *generation);

#ifdef __cplusplus
}
#endif

#endif
