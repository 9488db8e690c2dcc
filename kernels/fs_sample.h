/* fs_sample.h — homogeneous k-hop neighbour sampling with fused dedup and
 * relabel (FastGL Fused-Map, docs/algorithms.md §6): the typed engine
 * (fs_typed.h) on one node type and one edge type, with DGL's blocks.
 *
 * Request: seeds, per-hop fanout and mode, an RNG seed. Every random choice is
 * a pure function of (seed, hop, node id), so the same request gives the same
 * result on any thread count and on CPU or GPU.
 *
 * Result: one global-to-local map in first-appearance order. Unique seeds get
 * local ids 0..S-1; every node first reached at hop h gets the next ids. Hop
 * h's block (DGL convention) has dst = local ids [0, num_dst) — the frontier —
 * and src = [0, num_src), a superset with the dst as prefix; its edges are
 * (dst_local, src_local) in CSC order (grouped by dst, dst_offsets[d] ..
 * dst_offsets[d+1]), with global edge ids (CSR positions) on request. The
 * next hop's frontier is this hop's src set. result.nodes[local] = global id.
 *
 * Modes: uniform without replacement (O(fanout) per node, Floyd's algorithm:
 * fanout draws, never a full scan — docs/algorithms.md §5; degree <= fanout takes
 * every neighbour), uniform with replacement, and edge-weighted with or
 * without replacement (weighted modes read the row's weights, O(degree)).
 *
 * Ownership: results live in the sampler's workspace (or the output memory
 * it was given: fs_sampler_set_output) until its next call or its
 * destruction. Thread-safety: one sampler per thread; views are shared. */
#ifndef FS_SAMPLE_H
#define FS_SAMPLE_H

#include "fs_gather.h"
#include "fs_pool.h"
#include "fs_typed.h"
#include "fs_types.h"


/* fs_csr_view_t, the topology as a reader sees it, is fs_typed.h's. */

/* fs_sample_mode_t, fs_sample_req_t and fs_block_t are public: featstore/types.h. */

typedef struct {
    int num_hops;
    fs_block_t block[FS_MAX_HOPS];
    int64_t num_nodes;           /* = block[num_hops-1].num_src */
    const int64_t *nodes;        /* [num_nodes] global id of each local id */
    int64_t num_seeds;
    const int64_t *seed_local;   /* [num_seeds] local id of each input seed */
} fs_sample_result_t;

typedef struct fs_sampler fs_sampler_t;

fs_status_t fs_sampler_create(fs_sampler_t **out, fs_error_t *err);
void fs_sampler_destroy(fs_sampler_t *s);

/* Checks a request against a graph: hops, fanouts, modes, seed ids, and
 * the locality field, which must be 0 or 1 here: the plain samplers
 * (fs_sample_cpu, fs_sample_cuda) never boost; a boost s > 1 is
 * fs_sample_locality_cpu's (fs_locality.h), which needs the reader's
 * preferred sets. */
fs_status_t fs_sample_check(const fs_csr_view_t *g, const int64_t *seeds, int64_t n, const fs_sample_req_t *req,
                            fs_error_t *err);

/* The value of fs_sample_req_t.locality: 0 or 1 (off) or finite > 1.
 * FS_LOCALITY_AUTO is refused too — the client library resolves it to the
 * connection's boost before a request goes anywhere. */
fs_status_t fs_locality_value_check(double locality, fs_error_t *err);

/* Samples with the typed engine (fs_typed_sample_cpu on the view as one
 * edge type, FS_FRONTIER_ALL). topo (may be NULL) counts neighbour lists
 * and index bytes read per part. */
fs_status_t fs_sample_cpu(fs_sampler_t *s, const fs_csr_view_t *g, const int64_t *seeds, int64_t n,
                          const fs_sample_req_t *req, fs_sample_result_t *res, fs_gather_counters_t *topo,
                          fs_error_t *err);

/* Lets fs_sample_cpu split each large hop over pool's threads (NULL, the
 * default: one thread). The result is bit-identical at any pool size.
 * Borrowed: the pool must outlive the sampler's calls. A pool busy with
 * another caller's job runs this one's phases on the calling thread
 * (fs_pool.h), so samplers of concurrent requests may share one pool. */
void fs_sampler_set_pool(fs_sampler_t *s, fs_pool_t *pool);

/* Output memory for the next request's result arrays: they are laid out
 * in [base, base + cap) (each at its worst case for the hop, 64-byte
 * aligned) as far as they fit, the rest in the sampler's own memory; so a
 * caller that wants the result in memory of its own (a result slot) copies
 * only the arrays outside it. The next call of fs_sample_cpu,
 * fs_sample_reference or fs_sample_locality_cpu takes it; later calls use
 * the sampler's memory again unless given another. base NULL: none.
 * Borrowed: the memory must stay mapped while the result is used. */
void fs_sampler_set_output(fs_sampler_t *s, void *base, size_t cap);

/* How many bytes at the start of the output memory the last request's
 * result arrays took (gaps included); 0 when it was given none. */
size_t fs_sampler_output_used(const fs_sampler_t *s);

/* The naive reference: the same random choices, made the obvious way — copy
 * each full neighbour list (O(degree)), relabel through a dense N-entry
 * array. Tests compare the engine against it; benchmarks use it as the
 * baseline. Same ownership as fs_sample_cpu. */
fs_status_t fs_sample_reference(fs_sampler_t *s, const fs_csr_view_t *g, const int64_t *seeds, int64_t n,
                                const fs_sample_req_t *req, fs_sample_result_t *res, fs_error_t *err);

/* A plain CSR as a one-part view. */
void fs_csr_view_init(fs_csr_view_t *v, int64_t num_nodes, const int64_t *indptr, const void *indices,
                      fs_dtype_t index_dtype, const float *weights);

/* Adds to topo what fs_sample_cpu would have counted for `res`, a result
 * of `req` on `g`: per part, a neighbour list per destination of each hop
 * and the ids read from it (the row's picks, its whole degree on weighted
 * hops) at the index width. For fs_sample_cuda's results, which count
 * nothing: it reads only the route and part 0's indptr (a list's degree is
 * the same in every part), which a GPU trainer's host can read. */
void fs_sample_count_topology(const fs_csr_view_t *g, const fs_sample_req_t *req, const fs_sample_result_t *res,
                              fs_gather_counters_t *topo);

/* CUDA: the same sampling on `device`; the view's parts must
 * be device-readable. Seeds are host memory; the result is copied back into
 * the sampler's workspace and is bit-identical to fs_sample_cpu.
 * FS_ERR_NO_DEVICE without CUDA or a GPU. With FEATSTORE_SIM_GPUS set it is
 * fs_sample_cpu on a simulated GPU, behind the same checks (fanout <= 256,
 * and weighted hops not -1: FS_ERR_UNSUPPORTED otherwise). */
fs_status_t fs_sample_cuda(fs_sampler_t *s, int device, const fs_csr_view_t *g, const int64_t *seeds, int64_t n,
                           const fs_sample_req_t *req, fs_sample_result_t *res, fs_error_t *err);

#endif
