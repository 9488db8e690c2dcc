/* naive_sample.c — see naive_sample.h. Written the obvious way on purpose. */
#include "naive_sample.h"

#include <stdlib.h>
#include <string.h>

#include "fs_rng.h"

typedef struct {
    int64_t key, val;
} pair_t;

struct naive_sampler {
    int64_t *nodes, *copy, *sampled, *src_local;
    pair_t *index;
    size_t cap_nodes, cap_copy, cap_sampled, cap_index, cap_src;
};

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 1024;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

naive_sampler_t *naive_create(void) { return calloc(1, sizeof(naive_sampler_t)); }

void naive_destroy(naive_sampler_t *s)
{
    if (!s) return;
    free(s->nodes), free(s->copy), free(s->sampled), free(s->src_local), free(s->index);
    free(s);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_pair(const void *a, const void *b) { return cmp_i64(a, b); }

static int64_t lookup(const pair_t *idx, int64_t n, int64_t key)
{
    int64_t lo = 0, hi = n - 1;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (idx[mid].key < key) lo = mid + 1;
        else hi = mid;
    }
    return n > 0 && idx[lo].key == key ? idx[lo].val : -1;
}

int64_t naive_sample(naive_sampler_t *s, const fs_csr_view_t *g, const int64_t *seeds, int64_t n,
                     const fs_sample_req_t *req)
{
    const int64_t *ip = g->part[0].indptr;
    if (grow((void **)&s->nodes, &s->cap_nodes, (size_t)n + 1, 8)) return -1;
    memcpy(s->nodes, seeds, (size_t)n * 8);
    qsort(s->nodes, (size_t)n, 8, cmp_i64); /* unique seeds */
    int64_t u = 0, total = 0;
    for (int64_t i = 0; i < n; i++)
        if (i == 0 || s->nodes[i] != s->nodes[i - 1]) s->nodes[u++] = s->nodes[i];
    for (int hop = 0; hop < req->num_hops; hop++) {
        int64_t k = req->fanout[hop], m = 0, frontier = u;
        fs_rng_t rng = fs_rng_make(req->seed, (uint64_t)hop);
        for (int64_t d = 0; d < frontier; d++) { /* sample: copy + reservoir */
            int64_t v = s->nodes[d], deg = ip[v + 1] - ip[v];
            if (grow((void **)&s->copy, &s->cap_copy, (size_t)deg + 1, 8) ||
                grow((void **)&s->sampled, &s->cap_sampled, (size_t)(m + deg) + 1, 8))
                return -1;
            for (int64_t q = 0; q < deg; q++)
                s->copy[q] = g->index_dtype == FS_DTYPE_I32 ? ((const int32_t *)g->part[0].indices)[ip[v] + q]
                                                            : ((const int64_t *)g->part[0].indices)[ip[v] + q];
            int64_t take = k < 0 || deg <= k ? deg : k;
            for (int64_t q = take; q < deg; q++) { /* Algorithm R */
                int64_t r = (int64_t)fs_rng_below(&rng, (uint64_t)q + 1);
                if (r < take) s->copy[r] = s->copy[q];
            }
            memcpy(s->sampled + m, s->copy, (size_t)take * 8);
            m += take;
        }
        /* dedup: sort the frontier's (id, local) pairs and the new ids, separately */
        if (grow((void **)&s->index, &s->cap_index, (size_t)(u + m) + 1, sizeof(pair_t)) ||
            grow((void **)&s->nodes, &s->cap_nodes, (size_t)(u + m) + 1, 8) ||
            grow((void **)&s->src_local, &s->cap_src, (size_t)m + 1, 8))
            return -1;
        for (int64_t i = 0; i < u; i++) s->index[i] = (pair_t){s->nodes[i], i};
        qsort(s->index, (size_t)u, sizeof(pair_t), cmp_pair);
        int64_t *fresh = malloc((size_t)(m + 1) * 8), nf = 0;
        if (!fresh) return -1;
        for (int64_t i = 0; i < m; i++)
            if (lookup(s->index, u, s->sampled[i]) < 0) fresh[nf++] = s->sampled[i];
        qsort(fresh, (size_t)nf, 8, cmp_i64);
        int64_t before = u;
        for (int64_t i = 0; i < nf; i++)
            if (i == 0 || fresh[i] != fresh[i - 1]) s->nodes[u++] = fresh[i];
        free(fresh);
        /* relabel: a second sorted index over every node, binary search per edge */
        for (int64_t i = before; i < u; i++) s->index[i] = (pair_t){s->nodes[i], i};
        qsort(s->index, (size_t)u, sizeof(pair_t), cmp_pair);
        for (int64_t i = 0; i < m; i++) s->src_local[i] = lookup(s->index, u, s->sampled[i]);
        total += m;
    }
    return total;
}
