// fs_sample.cu — GPU k-hop sampling with the fused ID map (FastGL Fused-Map,
// docs/algorithms.md §6, both fixes), deterministic: it returns exactly what
// fs_sample_cpu returns for the same request.
//
// Per hop: (1) count each frontier node's picks, (2) exclusive-scan them into
// CSC offsets, (3) pick neighbours with the shared Floyd code
// (fs_sample_pick.h, same RNG streams as the CPU), (4) insert candidates into
// a device hash table with atomicCAS — a key is new iff the CAS saw EMPTY
// (Fix 1) — recording each new key's first position with atomicMin, (5) rank
// new keys by first position with a scan, so local ids follow first
// appearance exactly as on the CPU (the deterministic mode; the id comes from
// the scan, never from a racing write, Fix 2), (6) rewrite edge endpoints.
// Weighted modes use the same shared picks, keys in per-thread arrays of
// the fanout; weighted with fanout -1 (all) is left to the CPU engine.
extern "C" {
#include "fs_device_rt.h" /* this file is the backend's fs_rt_sample; fs_device.c owns fs_sample_cuda */
#include "fs_sample.h"
#include "fs_sample_internal.h"
}
#include "fs_sample_pick.h"

#include <cub/cub.cuh>
#include <cuda_runtime.h>

#define CUDA_MAX_FANOUT FS_CUDA_SAMPLE_MAX_FANOUT /* fs_device_rt.h: the simulation checks it too */
#define EMPTY_KEY 0xffffffffffffffffULL

namespace {

struct Table {
    unsigned long long *keys;
    long long *vals;       // local id, -1 = new in this hop
    long long *first;      // first candidate position of a new key
    unsigned long long mask;
    int shift;
};

__device__ __forceinline__ unsigned long long slot_of(const Table &t, long long key)
{
    unsigned long long h = ((unsigned long long)key * 0x9e3779b97f4a7c15ULL) >> t.shift;
    for (;;) {
        unsigned long long old = atomicCAS(&t.keys[h], EMPTY_KEY, (unsigned long long)key);
        if (old == EMPTY_KEY || old == (unsigned long long)key) return h;
        h = (h + 1) & t.mask;
    }
}

__device__ __forceinline__ void row_of(const fs_csr_view_t &g, long long v, long long *b, long long *deg, int *part)
{
    long long row = v;
    *part = 0;
    if (g.route) {
        unsigned long long r = g.route[v];
        *part = (int)(r >> 48);
        row = (long long)(r & ((1ULL << 48) - 1));
    }
    const long long *ip = (const long long *)g.part[*part].indptr;
    *b = ip[row];
    *deg = ip[row + 1] - *b;
}

__device__ __forceinline__ long long nbr(const fs_csr_view_t &g, int part, long long p)
{
    return g.index_dtype == FS_DTYPE_I32 ? (long long)((const int *)g.part[part].indices)[p]
                                         : ((const long long *)g.part[part].indices)[p];
}

// How many picks a row gives: what fs_sample.c's pick() returns. Weighted
// rows count their positive weights (k = fanout; -1 never reaches here).
__device__ __forceinline__ long long picks(const float *w, long long deg, int k, int mode)
{
    if (mode == FS_SAMPLE_UNIFORM_REPLACE) return deg ? (k == FS_FANOUT_ALL ? deg : k) : 0;
    if (mode == FS_SAMPLE_UNIFORM) return k == FS_FANOUT_ALL || deg <= k ? deg : k;
    long long positive = 0;
    for (long long p = 0; p < deg; p++) positive += w[p] > 0;
    if (mode == FS_SAMPLE_WEIGHTED) return positive < k ? positive : k;
    return positive ? k : 0;
}

__global__ void count_kernel(fs_csr_view_t g, const long long *frontier, long long n, int k, int mode, long long *cnt)
{
    for (long long d = blockIdx.x * (long long)blockDim.x + threadIdx.x; d < n; d += (long long)gridDim.x * blockDim.x) {
        long long b, deg;
        int part;
        row_of(g, frontier[d], &b, &deg, &part);
        cnt[d] = picks(g.part[part].weights ? g.part[part].weights + b : nullptr, deg, k, mode);
    }
}

__global__ void pick_kernel(fs_csr_view_t g, const long long *frontier, long long n, int k, int mode, int hop,
                            unsigned long long seed, const long long *off, long long *cand, long long *edst,
                            long long *eid)
{
    long long pos[CUDA_MAX_FANOUT];
    double key[CUDA_MAX_FANOUT]; // weighted: heap keys, or sorted draws
    int order[CUDA_MAX_FANOUT];
    for (long long d = blockIdx.x * (long long)blockDim.x + threadIdx.x; d < n; d += (long long)gridDim.x * blockDim.x) {
        long long v = frontier[d], b, deg;
        int part;
        row_of(g, v, &b, &deg, &part);
        const float *w = g.part[part].weights ? g.part[part].weights + b : nullptr;
        long long o = off[d], m = off[d + 1] - o; // count_kernel's picks(), scanned
        long long gb = part == 0 ? b : ((const long long *)g.part[0].indptr)[v];
        fs_rng_t rng = fs_pick_rng(seed, hop, v);
        bool all = mode == FS_SAMPLE_UNIFORM && m == deg;
        // With replacement and fanout -1 a row takes deg picks, more than pos
        // holds: draw each as it is written, the stream fs_pick_replace reads.
        bool each = mode == FS_SAMPLE_UNIFORM_REPLACE;
        if (!all && !each && m > 0) {
            if (mode == FS_SAMPLE_UNIFORM) fs_pick_uniform(&rng, deg, m, (int64_t *)pos);
            else if (mode == FS_SAMPLE_WEIGHTED) fs_pick_weighted(&rng, w, deg, k, key, (int64_t *)pos);
            else fs_pick_weighted_replace_walk(&rng, w, deg, k, key, order, (int64_t *)pos);
        }
        for (long long q = 0; q < m; q++) {
            long long p = all ? q : each ? (long long)fs_rng_below(&rng, (uint64_t)deg) : pos[q];
            cand[o + q] = nbr(g, part, b + p);
            edst[o + q] = d;
            if (eid) eid[o + q] = gb + p;
        }
    }
}

__global__ void insert_kernel(Table t, const long long *cand, long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        unsigned long long h = slot_of(t, cand[i]);
        if (t.vals[h] < 0) atomicMin(&t.first[h], i);
    }
}

__global__ void flag_kernel(Table t, const long long *cand, long long n, long long *flag)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        unsigned long long h = slot_of(t, cand[i]);
        flag[i] = t.vals[h] < 0 && t.first[h] == i;
    }
}

__global__ void assign_kernel(Table t, const long long *cand, long long n, const long long *flag,
                              const long long *rank, long long base, long long *nodes)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        if (!flag[i]) continue;
        unsigned long long h = slot_of(t, cand[i]);
        t.vals[h] = base + rank[i];
        nodes[base + rank[i]] = cand[i];
    }
}

__global__ void relabel_kernel(Table t, const long long *cand, long long n, long long *out)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        out[i] = t.vals[slot_of(t, cand[i])];
}

__global__ void fill_kernel(long long *p, long long n, long long v)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        p[i] = v;
}

int grid_for(long long n) { return (int)(n / 256 + 1 < 65535 ? n / 256 + 1 : 65535); }

struct Scratch { // device buffers, freed together
    void *p[16];
    int n = 0;
    ~Scratch() { for (int i = 0; i < n; i++) cudaFree(p[i]); }
    template <class T> cudaError_t get(T **out, size_t count)
    {
        cudaError_t rc = cudaMalloc((void **)out, (count ? count : 1) * sizeof(T));
        if (rc == cudaSuccess) p[n++] = *out;
        return rc;
    }
};

// Exclusive scan of n counts into out; returns the total.
cudaError_t scan(const long long *in, long long *out, long long n, long long *total)
{
    void *tmp = nullptr;
    size_t bytes = 0;
    cub::DeviceScan::ExclusiveSum(tmp, bytes, in, out, (int)n);
    cudaError_t rc = cudaMalloc(&tmp, bytes ? bytes : 1);
    if (rc != cudaSuccess) return rc;
    cub::DeviceScan::ExclusiveSum(tmp, bytes, in, out, (int)n);
    cudaFree(tmp);
    long long last_in = 0, last_out = 0;
    if (n > 0) {
        cudaMemcpy(&last_in, in + n - 1, sizeof last_in, cudaMemcpyDeviceToHost);
        cudaMemcpy(&last_out, out + n - 1, sizeof last_out, cudaMemcpyDeviceToHost);
    }
    *total = last_in + last_out;
    return cudaGetLastError();
}

// Adds the n candidates' new keys to the map in first-appearance order and
// writes each candidate's local id to local[]. *u grows by the new count.
cudaError_t fused_map(Table t, const long long *cand, long long n, long long *local, long long *nodes, long long *u,
                      Scratch &sc)
{
    if (n == 0) return cudaSuccess;
    long long *flag, *rank, added = 0;
    cudaError_t rc;
    if ((rc = sc.get(&flag, n)) || (rc = sc.get(&rank, n))) return rc;
    insert_kernel<<<grid_for(n), 256>>>(t, cand, n);
    flag_kernel<<<grid_for(n), 256>>>(t, cand, n, flag);
    if ((rc = scan(flag, rank, n, &added))) return rc;
    assign_kernel<<<grid_for(n), 256>>>(t, cand, n, flag, rank, *u, nodes);
    relabel_kernel<<<grid_for(n), 256>>>(t, cand, n, local);
    *u += added;
    return cudaGetLastError();
}

} // namespace

#define CK(call)                                                                                         \
    do {                                                                                                 \
        cudaError_t rc_ = (call);                                                                        \
        if (rc_ != cudaSuccess) return fs_error(err, FS_ERR_INTERNAL, "sample (CUDA): %s: %s", #call,    \
                                                cudaGetErrorString(rc_));                                \
    } while (0)

extern "C" fs_status_t fs_rt_sample(fs_sampler_t *s, int device, const fs_csr_view_t *g, const int64_t *seeds,
                                    int64_t n, const fs_sample_req_t *req, fs_sample_result_t *res, fs_error_t *err)
{
    /* the request was checked by fs_sample_cuda (fs_device.c): fanouts <= CUDA_MAX_FANOUT */
    if (cudaSetDevice(device) != cudaSuccess)
        return fs_error(err, FS_ERR_NO_DEVICE, "sample (CUDA): no device %d", device);

    // Worst-case unique nodes (never more than the graph has), for the table.
    long long cap_nodes = n, limit = g->num_nodes > n ? g->num_nodes : n;
    for (int h = 0; h < req->num_hops; h++) {
        long long f = req->fanout[h] == FS_FANOUT_ALL ? limit : req->fanout[h];
        cap_nodes = cap_nodes >= limit / (f + 1) ? limit : cap_nodes + cap_nodes * f;
    }
    Scratch sc;
    Table t;
    unsigned long long cap = 1024;
    while (cap < 2ULL * (unsigned long long)cap_nodes) cap *= 2;
    t.mask = cap - 1;
    t.shift = 64 - __builtin_ctzll(cap);
    long long *nodes, *seed_dev, *seed_local_dev;
    CK(sc.get(&t.keys, cap));
    CK(sc.get(&t.vals, cap));
    CK(sc.get(&t.first, cap));
    CK(sc.get(&nodes, cap_nodes));
    CK(sc.get(&seed_dev, n));
    CK(sc.get(&seed_local_dev, n));
    CK(cudaMemset(t.keys, 0xff, cap * sizeof *t.keys));
    CK(cudaMemset(t.vals, 0xff, cap * sizeof *t.vals));
    fill_kernel<<<grid_for(cap), 256>>>(t.first, cap, 0x7fffffffffffffffLL);
    CK(cudaMemcpy(seed_dev, seeds, n * sizeof *seeds, cudaMemcpyHostToDevice));

    long long u = 0;
    CK(fused_map(t, seed_dev, n, seed_local_dev, nodes, &u, sc));
    int64_t *host_seed_local = fs_sampler_workspace(s, FS_WS_SEED_LOCAL, 0, n);
    if (!host_seed_local) return fs_error(err, FS_ERR_NOMEM, "sample (CUDA): out of host memory");
    CK(cudaMemcpy(host_seed_local, seed_local_dev, n * sizeof *seeds, cudaMemcpyDeviceToHost));

    int64_t u_after[FS_MAX_HOPS], num_dst[FS_MAX_HOPS], num_edges[FS_MAX_HOPS];
    for (int h = 0; h < req->num_hops; h++) {
        long long D = u, E = 0, *cnt, *off, *cand, *edst, *esrc, *eid = nullptr;
        CK(sc.get(&cnt, D + 1));
        CK(sc.get(&off, D + 1));
        count_kernel<<<grid_for(D), 256>>>(*g, nodes, D, req->fanout[h], req->mode[h], cnt);
        CK(cudaMemset(cnt + D, 0, sizeof *cnt)); // scanning D + 1 counts puts the total in off[D]
        CK(scan(cnt, off, D + 1, &E));
        Scratch hs; // per-hop edge buffers
        CK(hs.get(&cand, E));
        CK(hs.get(&edst, E));
        CK(hs.get(&esrc, E));
        if (req->want_edge_ids) CK(hs.get(&eid, E));
        pick_kernel<<<grid_for(D), 128>>>(*g, nodes, D, req->fanout[h], req->mode[h], h, req->seed, off, cand, edst, eid);
        CK(cudaGetLastError());
        CK(fused_map(t, cand, E, esrc, nodes, &u, sc));
        int64_t *ho = fs_sampler_workspace(s, FS_WS_OFF, h, D + 1), *hd = fs_sampler_workspace(s, FS_WS_EDST, h, E),
                *hsrc = fs_sampler_workspace(s, FS_WS_ESRC, h, E),
                *hid = req->want_edge_ids ? fs_sampler_workspace(s, FS_WS_EID, h, E) : nullptr;
        if (!ho || !hd || !hsrc || (req->want_edge_ids && !hid))
            return fs_error(err, FS_ERR_NOMEM, "sample (CUDA): out of host memory");
        CK(cudaMemcpy(ho, off, D * sizeof *ho, cudaMemcpyDeviceToHost));
        ho[D] = E;
        CK(cudaMemcpy(hd, edst, E * sizeof *hd, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(hsrc, esrc, E * sizeof *hsrc, cudaMemcpyDeviceToHost));
        if (hid) CK(cudaMemcpy(hid, eid, E * sizeof *hid, cudaMemcpyDeviceToHost));
        num_dst[h] = D;
        num_edges[h] = E;
        u_after[h] = u;
    }
    int64_t *hn = fs_sampler_workspace(s, FS_WS_NODES, 0, u);
    if (!hn) return fs_error(err, FS_ERR_NOMEM, "sample (CUDA): out of host memory");
    CK(cudaMemcpy(hn, nodes, u * sizeof *hn, cudaMemcpyDeviceToHost));
    fs_sampler_result(s, req, n, u_after, num_dst, num_edges, res);
    return FS_OK;
}
