// fs_typed.cu — the typed k-hop sampler on a GPU: fs_rt_typed_sample, the
// CUDA backend of fs_typed_sample_cuda (fs_device.c checks the request
// first). It returns exactly what fs_typed_sample_cpu (fs_typed.c) returns:
// the same local ids, blocks and edge ids (docs/algorithms.md §9).
//
// The CPU engine runs one pass per (hop, edge type), in that order, each
// adding what it picks to the source type's nodes in pick order. So does
// this file, each pass being the Fused-Map pipeline (§6) over the
// destination type's frontier:
//   1. count each row's picks: its eligible edges are a position range
//      [lo, hi) (binary search on its times) less the positions whose
//      source is excluded for (edge type, row);
//   2. scan the counts into the block's offsets;
//   3. rows with excluded positions list them (and, weighted, copy their
//      weights with those zeroed), as the CPU engine does;
//   4. pick with the shared picks of fs_sample_pick.h from the row's
//      stream (fs_typed_internal.h's row_rng), writing each pick's map key
//      (tag, node) — tag = the type, or batch * types + type when
//      disjoint — and its edge id;
//   5. the fused map: CAS insert (a key is new iff the CAS saw EMPTY),
//      first position by atomicMin, new keys ranked by a scan, so each
//      type's new ids follow first appearance in pick order exactly as on
//      the CPU; a new node inherits the batch and time of the destination
//      that reached it first;
//   6. relabel every pick to its local id.
// One table holds every type's keys, as on the CPU. It and the per-type
// node arrays grow between passes (the table rehashed from the node
// arrays), so memory follows the request, not a worst case.
//
// Where the CPU fills an array of picks this streams whatever needs none:
// runs of surviving positions (fanout -1, rows with no more edges than the
// fanout, temporal 'last') and draws with replacement. Only Floyd's and
// the weighted picks hold k entries per thread — hence fs_device.c's
// limits: fanout <= FS_CUDA_SAMPLE_MAX_FANOUT, no weighted fanout -1.
extern "C" {
#include "fs_device_rt.h" /* this file is the backend's fs_rt_typed_sample; fs_device.c owns fs_typed_sample_cuda */
#include "fs_typed.h"
#include "fs_typed_internal.h"
}
#include "fs_sample_pick.h"

// Placement new only: nothing here may need libstdc++, whose template
// instances would leak from the client library (tests/lib/check_exports.py).
#include <new>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cub/cub.cuh>
#include <cuda_runtime.h>

#define MAX_FANOUT FS_CUDA_SAMPLE_MAX_FANOUT
#define EMPTY_KEY 0xffffffffffffffffULL /* never a key: tags stay below 2^23 */
#define NODE_BITS 40                    /* fs_typed_internal.h's FS_KEY_NODE_BITS */
#define NODE_MASK ((1ULL << NODE_BITS) - 1)
#define NO_FIRST 0x7fffffffffffffffLL

namespace {

typedef unsigned long long u64;

struct Table {
    u64 *keys;
    long long *vals;   // local id within the key's type; -1 = new in this pass
    long long *first;  // first candidate position of a new key
    u64 mask;
    int shift;
};

// One (hop, edge type) pass, by value into every kernel: the edge type's
// arrays, the request's rule for it, and the frontier (rows 0..n-1 are
// local ids d0.. of the destination type).
struct Pass {
    const int64_t *indptr;
    const void *indices;
    int wide;                   // int64 source ids
    const int64_t *edge_ids;    // or NULL: the position
    const float *weights;
    const int64_t *etime;       // edge times, with temporal sampling
    const int64_t *frontier;    // the destination type's nodes from d0
    const int64_t *fbatch;      // their batches (disjoint) or NULL
    const int64_t *ftime;       // their times (temporal) or NULL
    int64_t d0, n;
    int mode, k, hop, temporal, strict, disjoint, num_types, src_type, etype;
    int64_t window;
    u64 seed;                   // the request seed mixed with the edge type
    const fs_typed_exclude_t *x; // sorted by (etype, dst, src), or NULL
    int64_t nx;
    const uint64_t *route;      // a routed pass (fs_typed_etype_t.tiers): row v is in part[TIER(route[v])]
    fs_csr_part_t part[FS_MAX_TIERS];
};

// A row: its node, where its list starts in its part (ind, w) and in part
// 0 (gb: its edges' ids), its eligible range and its exclusion entries
// [xfirst, xend).
struct Row {
    int64_t v, b, gb, deg, lo, hi, xfirst, xend;
    const void *ind;
    const float *w;
};

__device__ __forceinline__ u64 key_of(u64 tag, int64_t node) { return (tag << NODE_BITS) | (u64)node; }

__device__ __forceinline__ u64 tag_of(int disjoint, int types, int type, int64_t batch)
{
    return disjoint ? (u64)(batch * types + type) : (u64)type;
}

__device__ __forceinline__ unsigned long long slot_of(const Table &t, u64 key)
{
    unsigned long long h = (key * 0x9e3779b97f4a7c15ULL) >> t.shift;
    for (;;) {
        unsigned long long old = atomicCAS(&t.keys[h], EMPTY_KEY, key);
        if (old == EMPTY_KEY || old == key) return h;
        h = (h + 1) & t.mask;
    }
}

// The source at position q of row r.
__device__ __forceinline__ int64_t src_at(const Pass &p, const Row &r, int64_t q)
{
    return p.wide ? ((const int64_t *)r.ind)[r.b + q] : (int64_t)((const int32_t *)r.ind)[r.b + q];
}

__device__ __forceinline__ bool x_before(const fs_typed_exclude_t &a, int etype, int64_t dst)
{
    return a.etype < etype || (a.etype == etype && a.dst < dst);
}

__device__ __forceinline__ bool x_after(const fs_typed_exclude_t &a, int etype, int64_t dst)
{
    return a.etype > etype || (a.etype == etype && a.dst > dst);
}

// Whether src is among the sorted sources of entries [first, end).
__device__ __forceinline__ bool excluded(const Pass &p, const Row &r, int64_t src)
{
    int64_t lo = r.xfirst, hi = r.xend;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (p.x[mid].src < src) lo = mid + 1;
        else hi = mid;
    }
    return lo < r.xend && p.x[lo].src == src;
}

__device__ Row row_of(const Pass &p, int64_t d)
{
    Row r;
    r.v = p.frontier[d];
    r.ind = p.indices, r.w = p.weights;
    if (p.route) { // fs_typed_pass.c's pass_bound_routed
        uint64_t route = p.route[r.v];
        const fs_csr_part_t &pt = p.part[FS_ROUTE_TIER(route)];
        int64_t row = FS_ROUTE_ROW(route);
        r.b = pt.indptr[row], r.deg = pt.indptr[row + 1] - r.b;
        r.ind = pt.indices, r.w = pt.weights;
        r.gb = p.indptr[r.v];
    } else {
        r.b = r.gb = p.indptr[r.v];
        r.deg = p.indptr[r.v + 1] - r.b;
    }
    r.lo = 0, r.hi = r.deg;
    if (p.temporal) { // fs_typed_pass.c's fs_typed_eligible_ranges
        int64_t t = p.ftime[d];
        const int64_t *tm = p.etime + r.b;
        r.hi = fs_pick_time_bound(tm, r.deg, t, !p.strict);
        if (p.window > 0) r.lo = fs_pick_time_bound(tm, r.hi, t - p.window, 0);
    }
    r.xfirst = r.xend = 0;
    if (p.nx) { // the entries of (etype, v): two binary searches
        int64_t lo = 0, hi = p.nx;
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (x_before(p.x[mid], p.etype, r.v)) lo = mid + 1;
            else hi = mid;
        }
        r.xfirst = lo, hi = p.nx;
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (x_after(p.x[mid], p.etype, r.v)) hi = mid;
            else lo = mid + 1;
        }
        r.xend = lo;
    }
    return r;
}

// How many picks a row gives: what fs_typed_internal.h's pick_row returns
// for c surviving positions, `positive` of them with a weight > 0.
__device__ __forceinline__ int64_t row_picks(const Pass &p, int64_t c, int64_t positive)
{
    if (c <= 0) return 0;
    int64_t k = p.k == FS_FANOUT_ALL ? c : p.k;
    if (p.temporal == FS_TEMPORAL_LAST || p.mode == FS_SAMPLE_UNIFORM) return c < k ? c : k;
    if (p.mode == FS_SAMPLE_UNIFORM_REPLACE) return k;
    if (p.mode == FS_SAMPLE_WEIGHTED) return positive < k ? positive : k;
    return positive ? k : 0;
}

// Per row: its picks; the CPU's worst case for it (fs_typed_pass.c's
// pass_bound, for the same 2^31 refusal); with exclusions, how many
// positions it loses and, weighted, the length of its weight copy.
__global__ void count_kernel(Pass p, int64_t *cnt, int64_t *bound, int64_t *nskip, int64_t *wlen)
{
    for (int64_t d = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; d < p.n; d += (int64_t)gridDim.x * blockDim.x) {
        Row r = row_of(p, d);
        bool weighted = p.mode >= FS_SAMPLE_WEIGHTED, any_x = r.xend > r.xfirst;
        int64_t nx = 0, positive = 0;
        if (weighted || any_x)
            for (int64_t q = r.lo; q < r.hi; q++) {
                bool x = any_x && excluded(p, r, src_at(p, r, q));
                nx += x;
                positive += weighted && !x && r.w[r.b + q] > 0;
            }
        cnt[d] = row_picks(p, r.hi - r.lo - nx, positive);
        bound[d] = p.k == FS_FANOUT_ALL || (p.mode == FS_SAMPLE_UNIFORM && r.deg < p.k) ? r.deg : p.k;
        if (nskip) nskip[d] = nx;
        if (wlen) wlen[d] = weighted && nx ? r.hi - r.lo : 0;
    }
}

// Rows that lose positions: fs_typed_pass.c's fs_typed_excluded_positions
// (ascending, relative to the row's start) and its zeroed weight copy of
// [lo, hi).
__global__ void exclude_kernel(Pass p, const int64_t *skip_off, int64_t *skip, const int64_t *w_off, float *wcopy)
{
    for (int64_t d = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; d < p.n; d += (int64_t)gridDim.x * blockDim.x) {
        if (skip_off[d + 1] == skip_off[d]) continue;
        Row r = row_of(p, d);
        int64_t *out = skip + skip_off[d];
        float *w = wcopy ? wcopy + w_off[d] : nullptr;
        for (int64_t q = r.lo; q < r.hi; q++) {
            bool x = excluded(p, r, src_at(p, r, q));
            if (x) *out++ = q;
            if (w) w[q - r.lo] = x ? 0.0f : r.w[r.b + q];
        }
    }
}

// The position of surviving position number i counted from lo: the i-th
// of [lo, hi) less the nx skipped ones (fs_typed_internal.h's pick_row).
__device__ __forceinline__ int64_t survivor(int64_t q, const int64_t *skip, int64_t nx)
{
    for (int64_t j = 0; j < nx && skip[j] <= q; j++) q++;
    return q;
}

enum { RUN, INDEX, DRAW, POSITION };

// Each row's picks from its stream, as keys of the source type's map.
__global__ void pick_kernel(Pass p, const int64_t *off, const int64_t *skip_off, const int64_t *skip,
                            const int64_t *w_off, const float *wcopy, u64 *cand, int64_t *edst, int64_t *eid)
{
    int64_t pos[MAX_FANOUT];
    double key[MAX_FANOUT]; // weighted: heap keys, or sorted draws
    int order[MAX_FANOUT];
    for (int64_t d = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; d < p.n; d += (int64_t)gridDim.x * blockDim.x) {
        int64_t o = off[d], m = off[d + 1] - o; // count_kernel's row_picks, scanned
        if (m == 0) continue;
        Row r = row_of(p, d);
        int64_t nx = skip_off ? skip_off[d + 1] - skip_off[d] : 0;
        const int64_t *sk = nx ? skip + skip_off[d] : nullptr;
        int64_t c = r.hi - r.lo - nx, k = p.k == FS_FANOUT_ALL ? c : p.k;
        int64_t batch = p.fbatch ? p.fbatch[d] : 0;
        u64 seed = p.seed; // fs_typed_internal.h's row_rng
        if (p.disjoint) seed ^= fs_mix64((u64)batch + 0x632be59bd9b4e019ULL);
        fs_rng_t rng = fs_pick_rng(seed, p.hop, r.v);
        u64 tag = tag_of(p.disjoint, p.num_types, p.src_type, batch);
        int how = POSITION;
        if (p.temporal == FS_TEMPORAL_LAST || (p.mode == FS_SAMPLE_UNIFORM && c <= k)) how = RUN; // the top m
        else if (p.mode == FS_SAMPLE_UNIFORM) fs_pick_uniform(&rng, c, k, pos), how = INDEX;
        else if (p.mode == FS_SAMPLE_UNIFORM_REPLACE) how = DRAW;
        else { // weighted over [lo, hi), the excluded weights zeroed in a copy
            const float *w = nx ? wcopy + w_off[d] : r.w + r.b + r.lo;
            if (p.mode == FS_SAMPLE_WEIGHTED) fs_pick_weighted(&rng, w, r.hi - r.lo, k, key, pos);
            else fs_pick_weighted_replace_walk(&rng, w, r.hi - r.lo, k, key, order, pos);
        }
        for (int64_t q = 0; q < m; q++) {
            int64_t at, i;
            if (how == RUN) at = survivor(r.lo + c - m + q, sk, nx);
            else if (how == INDEX) at = survivor(r.lo + pos[q], sk, nx);
            else if (how == DRAW) fs_pick_replace(&rng, c, 1, &i), at = survivor(r.lo + i, sk, nx);
            else at = r.lo + pos[q];
            cand[o + q] = key_of(tag, src_at(p, r, at));
            edst[o + q] = p.d0 + d;
            if (eid) eid[o + q] = p.edge_ids ? p.edge_ids[r.gb + at] : r.gb + at;
        }
    }
}

// ---- the fused map (§6), over one type's candidates ---------------------

__global__ void insert_kernel(Table t, const u64 *cand, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        unsigned long long h = slot_of(t, cand[i]);
        if (t.vals[h] < 0) atomicMin(&t.first[h], (long long)i);
    }
}

__global__ void flag_kernel(Table t, const u64 *cand, int64_t n, int64_t *flag)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        unsigned long long h = slot_of(t, cand[i]);
        flag[i] = t.vals[h] < 0 && t.first[h] == i;
    }
}

// New key i gets id base + rank[i]; its node inherits the batch and time
// at from[i] (the destination that reached it; for seeds, i itself).
__global__ void assign_kernel(Table t, const u64 *cand, int64_t n, const int64_t *flag, const int64_t *rank,
                              int64_t base, int64_t *nodes, int64_t *batch, int64_t *time, const int64_t *from,
                              const int64_t *ibatch, const int64_t *itime)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        if (!flag[i]) continue;
        int64_t id = base + rank[i], j = from ? from[i] : i;
        t.vals[slot_of(t, cand[i])] = id;
        nodes[id] = (int64_t)(cand[i] & NODE_MASK);
        if (batch) batch[id] = ibatch[j];
        if (time) time[id] = itime[j];
    }
}

__global__ void relabel_kernel(Table t, const u64 *cand, int64_t n, int64_t *out)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        out[i] = t.vals[slot_of(t, cand[i])];
}

// A grown table takes back a type's keys with their ids.
__global__ void rehash_kernel(Table t, const int64_t *nodes, const int64_t *batch, int64_t n, int disjoint, int types,
                              int type)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        t.vals[slot_of(t, key_of(tag_of(disjoint, types, type, batch ? batch[i] : 0), nodes[i]))] = i;
}

__global__ void fill_kernel(long long *p, int64_t n, long long v)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        p[i] = v;
}

// Seeds without given times take their node's timestamp.
__global__ void gather_kernel(const int64_t *table, const int64_t *ids, int64_t n, int64_t *out)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        out[i] = table[ids[i]];
}

int grid_for(int64_t n) { return (int)(n / 256 + 1 < 65535 ? n / 256 + 1 : 65535); }

// A device array that grows by doubling; freed with its owner.
template <class T> struct DevVec {
    T *p = nullptr;
    size_t cap = 0;
    DevVec() = default;
    DevVec(const DevVec &) = delete;
    DevVec &operator=(const DevVec &) = delete;
    ~DevVec() { cudaFree(p); }
    // Room for n entries; the first `keep` survive a move.
    cudaError_t reserve(size_t n, size_t keep = 0)
    {
        if (p && n <= cap) return cudaSuccess;
        size_t c = cap ? cap : 1024;
        while (c < n) c *= 2;
        T *q;
        cudaError_t rc = cudaMalloc((void **)&q, c * sizeof(T));
        if (rc != cudaSuccess) return rc;
        if (keep && (rc = cudaMemcpy(q, p, keep * sizeof(T), cudaMemcpyDeviceToDevice)) != cudaSuccess) {
            cudaFree(q);
            return rc;
        }
        cudaFree(p);
        p = q, cap = c;
        return cudaSuccess;
    }
};

// A host array that grows by doubling; freed with its owner.
template <class T> struct HostVec {
    T *p = nullptr;
    size_t cap = 0;
    HostVec() = default;
    HostVec(const HostVec &) = delete;
    HostVec &operator=(const HostVec &) = delete;
    ~HostVec() { free(p); }
    bool reserve(size_t n) // false when out of memory
    {
        if (p && n <= cap) return true;
        size_t c = cap ? cap : 64;
        while (c < n) c *= 2;
        T *q = (T *)realloc(p, c * sizeof(T));
        if (!q) return false;
        p = q, cap = c;
        return true;
    }
};

struct TypeDev { // one node type's nodes so far, in local-id order
    DevVec<int64_t> nodes, batch, time;
    int64_t n = 0;
};

struct State {
    int types = 0, disjoint = 0, temporal = 0;
    TypeDev *type = nullptr;
    Table t = {};
    u64 cap = 0;
    DevVec<u64> keys, cand;
    DevVec<long long> vals, first;
    DevVec<fs_typed_exclude_t> x;
    int64_t nx = 0;
    HostVec<char> etype_x;      // whether edge type e has exclusions
    HostVec<u64> hkeys;         // the seeds' keys and batches, host side
    HostVec<int64_t> hbatch;
    // scratch, reused by every pass
    DevVec<int64_t> cnt, off, bound, nskip, skip_off, wlen, w_off, skip, edst, esrc, eid, flag, rank, sum;
    DevVec<int64_t> seed_batch, seed_time, seed_ids;
    DevVec<float> wcopy;
    DevVec<unsigned char> tmp;  // cub's
    ~State()
    {
        for (int t = 0; type && t < types; t++) type[t].~TypeDev();
        free(type);
    }
    bool make_types(int n) // placement-constructed, so no operator new
    {
        if (!(type = (TypeDev *)malloc((size_t)(n > 0 ? n : 1) * sizeof *type))) return false;
        for (int t = 0; t < n; t++) new (&type[t]) TypeDev();
        types = n;
        return true;
    }
};

// Exclusive scan of in[0, n + 1), in[n] being 0, into out: out[n] is the
// total, returned in *total.
cudaError_t scan(State &st, int64_t *in, int64_t *out, int64_t n, int64_t *total)
{
    size_t bytes = 0;
    cudaError_t rc;
    if ((rc = cudaMemset(in + n, 0, sizeof *in)) != cudaSuccess) return rc;
    cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, (int)(n + 1));
    if ((rc = st.tmp.reserve(bytes)) != cudaSuccess) return rc;
    if ((rc = cub::DeviceScan::ExclusiveSum(st.tmp.p, bytes, in, out, (int)(n + 1))) != cudaSuccess) return rc;
    return cudaMemcpy(total, out + n, sizeof *total, cudaMemcpyDeviceToHost);
}

cudaError_t reduce(State &st, const int64_t *in, int64_t n, int64_t *total)
{
    size_t bytes = 0;
    cudaError_t rc;
    *total = 0;
    if (n == 0) return cudaSuccess;
    if ((rc = st.sum.reserve(1)) != cudaSuccess) return rc;
    cub::DeviceReduce::Sum(nullptr, bytes, in, st.sum.p, (int)n);
    if ((rc = st.tmp.reserve(bytes)) != cudaSuccess) return rc;
    if ((rc = cub::DeviceReduce::Sum(st.tmp.p, bytes, in, st.sum.p, (int)n)) != cudaSuccess) return rc;
    return cudaMemcpy(total, st.sum.p, sizeof *total, cudaMemcpyDeviceToHost);
}

// Room for `extra` more nodes of `type`, and a table at load <= 1/2 for
// them: grown tables take every type's keys back (fs_typed_map.c's
// tmap_reserve). May move the type's arrays.
cudaError_t make_room(State &st, int type, int64_t extra)
{
    TypeDev &td = st.type[type];
    size_t need = (size_t)(td.n + extra) + 1, keep = (size_t)td.n;
    cudaError_t rc;
    if ((rc = td.nodes.reserve(need, keep)) != cudaSuccess ||
        (st.disjoint && (rc = td.batch.reserve(need, keep)) != cudaSuccess) ||
        (st.temporal && (rc = td.time.reserve(need, keep)) != cudaSuccess))
        return rc;
    int64_t total = extra;
    for (int t = 0; t < st.types; t++) total += st.type[t].n;
    if (2 * (u64)total <= st.cap) return cudaSuccess;
    u64 cap = st.cap ? st.cap : 1024;
    while (cap < 2 * (u64)total) cap *= 2;
    if ((rc = st.keys.reserve(cap)) != cudaSuccess || (rc = st.vals.reserve(cap)) != cudaSuccess ||
        (rc = st.first.reserve(cap)) != cudaSuccess)
        return rc;
    st.cap = cap;
    st.t = Table{st.keys.p, st.vals.p, st.first.p, cap - 1, 64 - __builtin_ctzll(cap)};
    if ((rc = cudaMemset(st.t.keys, 0xff, cap * sizeof *st.t.keys)) != cudaSuccess ||
        (rc = cudaMemset(st.t.vals, 0xff, cap * sizeof *st.t.vals)) != cudaSuccess)
        return rc;
    fill_kernel<<<grid_for((int64_t)cap), 256>>>(st.t.first, (int64_t)cap, NO_FIRST);
    for (int t = 0; t < st.types; t++)
        if (st.type[t].n)
            rehash_kernel<<<grid_for(st.type[t].n), 256>>>(st.t, st.type[t].nodes.p,
                                                           st.disjoint ? st.type[t].batch.p : nullptr, st.type[t].n,
                                                           st.disjoint, st.types, t);
    return cudaGetLastError();
}

// Adds the n keys cand[] of `type` in first-appearance order and writes
// each one's local id to local[]. A new node takes its batch and time from
// ibatch/itime at from[i] (or i). make_room(st, type, n) came first.
cudaError_t fused_map(State &st, int type, const u64 *cand, int64_t n, const int64_t *from, const int64_t *ibatch,
                      const int64_t *itime, int64_t *local)
{
    if (n == 0) return cudaSuccess;
    TypeDev &td = st.type[type];
    int64_t added = 0;
    cudaError_t rc;
    if ((rc = st.flag.reserve((size_t)n + 1)) != cudaSuccess || (rc = st.rank.reserve((size_t)n + 1)) != cudaSuccess)
        return rc;
    insert_kernel<<<grid_for(n), 256>>>(st.t, cand, n);
    flag_kernel<<<grid_for(n), 256>>>(st.t, cand, n, st.flag.p);
    if ((rc = scan(st, st.flag.p, st.rank.p, n, &added)) != cudaSuccess) return rc;
    assign_kernel<<<grid_for(n), 256>>>(st.t, cand, n, st.flag.p, st.rank.p, td.n, td.nodes.p,
                                        st.disjoint ? td.batch.p : nullptr, st.temporal ? td.time.p : nullptr, from,
                                        ibatch, itime);
    relabel_kernel<<<grid_for(n), 256>>>(st.t, cand, n, local);
    td.n += added;
    return cudaGetLastError();
}

int cmp_excl(const void *pa, const void *pb) // by (etype, dst, src), as fs_typed_pass.c sorts them
{
    const fs_typed_exclude_t *a = (const fs_typed_exclude_t *)pa, *b = (const fs_typed_exclude_t *)pb;
    if (a->etype != b->etype) return a->etype < b->etype ? -1 : 1;
    if (a->dst != b->dst) return a->dst < b->dst ? -1 : 1;
    return (a->src > b->src) - (a->src < b->src);
}

const char *etype_name(const fs_typed_view_t *g, int e, char *buf, size_t len)
{
    if (g->etype[e].name) return g->etype[e].name;
    snprintf(buf, len, "edge type #%d", e);
    return buf;
}

fs_status_t cuda_fail(fs_error_t *err, const char *what, cudaError_t rc)
{
    return fs_error(err, rc == cudaErrorMemoryAllocation ? FS_ERR_NOMEM : FS_ERR_INTERNAL, "typed sample (CUDA): %s: %s",
                    what, cudaGetErrorString(rc));
}

} // namespace

#define CK(call)                                                  \
    do {                                                          \
        cudaError_t rc_ = (call);                                 \
        if (rc_ != cudaSuccess) return cuda_fail(err, #call, rc_); \
    } while (0)
#define HOST_NOMEM() fs_error(err, FS_ERR_NOMEM, "typed sample (CUDA): out of host memory")

// Sorted exclusions on the device, and which edge types have any.
static fs_status_t upload_exclusions(State &st, const fs_typed_view_t *g, const fs_typed_exclude_t *excl, int64_t n,
                                     fs_error_t *err)
{
    if (!st.etype_x.reserve((size_t)g->num_edge_types + 1)) return HOST_NOMEM();
    memset(st.etype_x.p, 0, (size_t)g->num_edge_types + 1);
    st.nx = n;
    if (n == 0) return FS_OK;
    HostVec<fs_typed_exclude_t> sorted;
    if (!sorted.reserve((size_t)n)) return HOST_NOMEM();
    memcpy(sorted.p, excl, (size_t)n * sizeof *excl);
    qsort(sorted.p, (size_t)n, sizeof *sorted.p, cmp_excl);
    for (int64_t i = 0; i < n; i++) st.etype_x.p[sorted.p[i].etype] = 1;
    CK(st.x.reserve((size_t)n));
    CK(cudaMemcpy(st.x.p, sorted.p, (size_t)n * sizeof *excl, cudaMemcpyHostToDevice));
    return FS_OK;
}

// fs_typed.c's add_seeds: group by group, in order; duplicates merge, the
// first keeping its batch and time.
static fs_status_t add_seeds(State &st, fs_typed_sampler_t *s, const fs_typed_view_t *g,
                             const fs_typed_seeds_t *groups, int num_groups, fs_error_t *err)
{
    int64_t next_batch = 0;
    for (int i = 0; i < num_groups; i++) {
        const fs_typed_seeds_t *sg = &groups[i];
        int64_t n = sg->count;
        int64_t *local = fs_typed_ws_seed_local(s, i, (size_t)n);
        if (!local) return HOST_NOMEM();
        if (!st.hkeys.reserve((size_t)n + 1) || !st.hbatch.reserve((size_t)n + 1)) return HOST_NOMEM();
        u64 *keys = st.hkeys.p;
        int64_t *batch = st.hbatch.p;
        for (int64_t j = 0; j < n; j++) {
            batch[j] = sg->batch ? sg->batch[j] : next_batch + j;
            u64 tag = st.disjoint ? (u64)(batch[j] * st.types + sg->type) : (u64)sg->type;
            keys[j] = (tag << NODE_BITS) | (u64)sg->ids[j];
        }
        if (!sg->batch) next_batch += n;
        else
            for (int64_t j = 0; j < n; j++)
                if (sg->batch[j] + 1 > next_batch) next_batch = sg->batch[j] + 1;
        if (n == 0) continue;
        CK(make_room(st, sg->type, n));
        CK(st.cand.reserve((size_t)n));
        CK(st.esrc.reserve((size_t)n));
        CK(cudaMemcpy(st.cand.p, keys, (size_t)n * sizeof(u64), cudaMemcpyHostToDevice));
        if (st.disjoint) {
            CK(st.seed_batch.reserve((size_t)n));
            CK(cudaMemcpy(st.seed_batch.p, batch, (size_t)n * 8, cudaMemcpyHostToDevice));
        }
        if (st.temporal) { // given times, else the node timestamps (fs_typed_check saw one or the other)
            CK(st.seed_time.reserve((size_t)n));
            if (sg->time) {
                CK(cudaMemcpy(st.seed_time.p, sg->time, (size_t)n * 8, cudaMemcpyHostToDevice));
            } else {
                CK(st.seed_ids.reserve((size_t)n));
                CK(cudaMemcpy(st.seed_ids.p, sg->ids, (size_t)n * 8, cudaMemcpyHostToDevice));
                gather_kernel<<<grid_for(n), 256>>>(g->node_time[sg->type], st.seed_ids.p, n, st.seed_time.p);
            }
        }
        CK(fused_map(st, sg->type, st.cand.p, n, nullptr, st.seed_batch.p, st.seed_time.p, st.esrc.p));
        CK(cudaMemcpy(local, st.esrc.p, (size_t)n * 8, cudaMemcpyDeviceToHost));
    }
    return FS_OK;
}

static Pass make_pass(const State &st, const fs_typed_view_t *g, const fs_typed_req_t *req, int hop, int e,
                      int64_t d0, int64_t n)
{
    const fs_typed_etype_t *et = &g->etype[e];
    const TypeDev &dt = st.type[et->dst_type];
    Pass p;
    p.indptr = et->indptr, p.indices = et->indices, p.wide = et->index_dtype != FS_DTYPE_I32;
    p.edge_ids = et->edge_ids, p.weights = et->weights, p.etime = et->time;
    p.frontier = dt.nodes.p + d0;
    p.fbatch = st.disjoint ? dt.batch.p + d0 : nullptr;
    p.ftime = st.temporal ? dt.time.p + d0 : nullptr;
    p.d0 = d0, p.n = n;
    p.mode = req->mode[hop], p.k = req->fanout[e * req->num_hops + hop], p.hop = hop;
    p.temporal = req->temporal, p.strict = req->strict, p.window = req->window;
    p.disjoint = st.disjoint, p.num_types = st.types, p.src_type = et->src_type, p.etype = e;
    p.seed = req->seed ^ (e ? fs_mix64((u64)e * 0x2545f4914f6cdd1dULL) : 0); // pass_seed (fs_typed_internal.h)
    p.x = st.etype_x.p[e] ? st.x.p : nullptr;
    p.nx = st.etype_x.p[e] ? st.nx : 0;
    // routed as the CPU's plain passes are (fs_typed_run_pass); the others read part 0
    bool full = p.temporal || p.disjoint || p.nx;
    p.route = !full && et->tiers ? et->tiers->route : nullptr;
    for (int k = 0; p.route && k < et->tiers->num_parts; k++) p.part[k] = et->tiers->part[k];
    return p;
}

// Edge type e at hop h for destinations d0..d1-1 (fs_typed_pass.c's
// fs_typed_run_pass); the block lands in the sampler's workspace.
static fs_status_t run_pass(State &st, fs_typed_sampler_t *s, const fs_typed_view_t *g, const fs_typed_req_t *req,
                            int h, int e, int64_t d0, int64_t d1, int64_t *num_dst, int64_t *num_edges,
                            fs_error_t *err)
{
    const fs_typed_etype_t *et = &g->etype[e];
    if (req->fanout[e * req->num_hops + h] == 0) d1 = d0; // not sampled at this hop: an empty block
    int64_t n = d1 - d0, E = 0, bound = 0, nskip = 0, nw = 0;
    Pass p = make_pass(st, g, req, h, e, d0, n);
    bool xrows = p.nx > 0, xweights = xrows && p.mode >= FS_SAMPLE_WEIGHTED;
    CK(st.cnt.reserve((size_t)n + 1));
    CK(st.off.reserve((size_t)n + 1));
    CK(st.bound.reserve((size_t)n + 1));
    if (xrows) {
        CK(st.nskip.reserve((size_t)n + 1));
        CK(st.skip_off.reserve((size_t)n + 1));
    }
    if (xweights) {
        CK(st.wlen.reserve((size_t)n + 1));
        CK(st.w_off.reserve((size_t)n + 1));
    }
    if (n)
        count_kernel<<<grid_for(n), 128>>>(p, st.cnt.p, st.bound.p, xrows ? st.nskip.p : nullptr,
                                           xweights ? st.wlen.p : nullptr);
    CK(cudaGetLastError());
    CK(scan(st, st.cnt.p, st.off.p, n, &E));
    CK(reduce(st, st.bound.p, n, &bound));
    char nb[64];
    if (st.type[et->src_type].n + bound >= INT32_MAX) // fs_typed_pass.c's refusal, word for word
        return fs_error(err, FS_ERR_RESOURCE, "typed sample: hop %d of %s could reach %lld nodes, over the 2^31 "
                        "per-request limit; use smaller fanouts or fewer seeds", h, etype_name(g, e, nb, sizeof nb),
                        (long long)(st.type[et->src_type].n + bound));
    if (xrows) {
        CK(scan(st, st.nskip.p, st.skip_off.p, n, &nskip));
        CK(st.skip.reserve((size_t)nskip + 1));
        if (xweights) {
            CK(scan(st, st.wlen.p, st.w_off.p, n, &nw));
            CK(st.wcopy.reserve((size_t)nw + 1));
        }
        if (nskip)
            exclude_kernel<<<grid_for(n), 128>>>(p, st.skip_off.p, st.skip.p, xweights ? st.w_off.p : nullptr,
                                                 xweights ? st.wcopy.p : nullptr);
    }
    CK(make_room(st, et->src_type, E));
    p = make_pass(st, g, req, h, e, d0, n); // make_room may have moved the frontier (same type)
    CK(st.cand.reserve((size_t)E + 1));
    CK(st.edst.reserve((size_t)E + 1));
    CK(st.esrc.reserve((size_t)E + 1));
    if (req->want_edge_ids) CK(st.eid.reserve((size_t)E + 1));
    if (E)
        pick_kernel<<<grid_for(n), 128>>>(p, st.off.p, xrows && nskip ? st.skip_off.p : nullptr, st.skip.p,
                                          xweights ? st.w_off.p : nullptr, xweights ? st.wcopy.p : nullptr, st.cand.p,
                                          st.edst.p, req->want_edge_ids ? st.eid.p : nullptr);
    CK(cudaGetLastError());
    const TypeDev &dt = st.type[et->dst_type];
    CK(fused_map(st, et->src_type, st.cand.p, E, st.edst.p, st.disjoint ? dt.batch.p : nullptr,
                 st.temporal ? dt.time.p : nullptr, st.esrc.p));
    int b = h * g->num_edge_types + e;
    int64_t *ho = fs_typed_ws_block_array(s, b, FS_TWS_OFF, (size_t)n + 1),
            *hd = fs_typed_ws_block_array(s, b, FS_TWS_EDST, (size_t)E),
            *hs = fs_typed_ws_block_array(s, b, FS_TWS_ESRC, (size_t)E),
            *hi = req->want_edge_ids ? fs_typed_ws_block_array(s, b, FS_TWS_EID, (size_t)E) : nullptr;
    if (!ho || !hd || !hs || (req->want_edge_ids && !hi)) return HOST_NOMEM();
    CK(cudaMemcpy(ho, st.off.p, ((size_t)n + 1) * 8, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hd, st.edst.p, (size_t)E * 8, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hs, st.esrc.p, (size_t)E * 8, cudaMemcpyDeviceToHost));
    if (hi) CK(cudaMemcpy(hi, st.eid.p, (size_t)E * 8, cudaMemcpyDeviceToHost));
    num_dst[b] = n;
    num_edges[b] = E;
    return FS_OK;
}

// Every type's nodes (and batches, times) into the workspace.
static fs_status_t copy_nodes(State &st, fs_typed_sampler_t *s, fs_error_t *err)
{
    for (int t = 0; t < st.types; t++) {
        TypeDev &td = st.type[t];
        size_t n = (size_t)td.n;
        int64_t *hn = fs_typed_ws_node_array(s, t, FS_TWS_NODES, n),
                *hb = st.disjoint ? fs_typed_ws_node_array(s, t, FS_TWS_BATCH, n) : nullptr,
                *ht = st.temporal ? fs_typed_ws_node_array(s, t, FS_TWS_TIME, n) : nullptr;
        if (!hn || (st.disjoint && !hb) || (st.temporal && !ht)) return HOST_NOMEM();
        if (n == 0) continue;
        CK(cudaMemcpy(hn, td.nodes.p, n * 8, cudaMemcpyDeviceToHost));
        if (hb) CK(cudaMemcpy(hb, td.batch.p, n * 8, cudaMemcpyDeviceToHost));
        if (ht) CK(cudaMemcpy(ht, td.time.p, n * 8, cudaMemcpyDeviceToHost));
    }
    return FS_OK;
}

extern "C" fs_status_t fs_rt_typed_sample(fs_typed_sampler_t *s, int device, const fs_typed_view_t *g,
                                          const fs_typed_req_t *req, const fs_typed_seeds_t *groups, int num_groups,
                                          const fs_typed_exclude_t *excl, int64_t num_excl, fs_typed_result_t *res,
                                          fs_error_t *err)
{
    /* the request was checked by fs_typed_sample_cuda (fs_device.c) */
    if (cudaSetDevice(device) != cudaSuccess)
        return fs_error(err, FS_ERR_NO_DEVICE, "typed sample (CUDA): no device %d", device);
    int T = g->num_node_types, E = g->num_edge_types, H = req->num_hops;
    if (fs_typed_ws_shape(s, T, H * E, num_groups)) return HOST_NOMEM();
    State st;
    st.temporal = req->temporal != FS_TEMPORAL_OFF;
    st.disjoint = req->disjoint || st.temporal;
    HostVec<int64_t> after, num_dst, num_edges;
    if (!st.make_types(T) || !after.reserve((size_t)(H + 1) * (size_t)T + 1) ||
        !num_dst.reserve((size_t)(H * E) + 1) || !num_edges.reserve((size_t)(H * E) + 1))
        return HOST_NOMEM();
    fs_status_t rc = upload_exclusions(st, g, excl, num_excl, err);
    if (rc == FS_OK) rc = add_seeds(st, s, g, groups, num_groups, err);
    if (rc != FS_OK) return rc;
    for (int t = 0; t < T; t++) after.p[t] = st.type[t].n;
    for (int h = 0; h < H; h++) { /* fs_typed_sample_cpu's order: hop by hop, edge type by edge type */
        for (int e = 0; e < E; e++) {
            int dt = g->etype[e].dst_type;
            int64_t d0 = req->frontier == FS_FRONTIER_NEW && h > 0 ? after.p[(h - 1) * T + dt] : 0;
            rc = run_pass(st, s, g, req, h, e, d0, after.p[h * T + dt], num_dst.p, num_edges.p, err);
            if (rc != FS_OK) return rc;
        }
        for (int t = 0; t < T; t++) after.p[(h + 1) * T + t] = st.type[t].n;
    }
    if ((rc = copy_nodes(st, s, err)) != FS_OK) return rc;
    fs_typed_ws_result(s, g, req, num_groups, after.p, num_dst.p, num_edges.p, res);
    return FS_OK;
}
