/* client_hopgnn.c — HopGNN's owner-routed batches over any connection
 * (docs/papers.md; docs/algorithms.md §7): a global batch's roots grouped
 * by owning shard (fs_split_by_owner), a sampled batch's micrographs, each
 * node's roots, with R_micro (fs_batch_micrographs), and the rows of a
 * group of micrographs gathered each once (fs_pregather).
 *
 * All are computed here, in the trainer, from what the connection already
 * knows: the owners come from a sharded cluster's map (the transport's
 * `owners`), and the micrographs from the batch's blocks, so that every
 * transport's batches have them and no message changes.
 *
 * Micrographs follow the blocks as a model does: root r's set starts as
 * {r}; block h adds the sources of every edge whose destination is in the
 * set so far. One pass per root with a stamp per node; a node's roots come
 * out ascending because the roots are walked in order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"
#include "fs_shardmap.h" /* FS_CLUSTER_SHARDS_MAX: shard ids are below it (the header alone) */

/* ---- owner groups -------------------------------------------------------------------- */

/* The owners of ids[0..n) and the map's shards, or why not. */
static fs_status_t owners_of(fs_client_t *c, const char *node_type, const int64_t *ids, int64_t n, int fresh,
                             int **owner, int **shards, int *num_shards, int64_t *revision)
{
    *shards = NULL;
    if (!c->ops->owners)
        return fs_client_fail(c, FS_ERR_UNSUPPORTED, "a %s:// connection has no shards: owners are a sharded "
                              "cluster's (etcd:// or file:)", c->ops->name);
    if (!(*owner = malloc(((size_t)n + 1) * sizeof **owner)))
        return fs_client_fail(c, FS_ERR_NOMEM, "out of memory (%lld owners)", (long long)n);
    fs_status_t st = c->ops->owners(c, node_type, ids, n, fresh, *owner, shards, num_shards, revision);
    if (st != FS_OK) {
        free(*owner);
        *owner = NULL;
    }
    return st;
}

/* The group of shard id `id` among the ascending ids. */
static int group_of(const int *shards, int num_shards, int id)
{
    int lo = 0, hi = num_shards - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (shards[mid] < id) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

FS_API fs_status_t fs_split_by_owner(fs_client_t *c, const char *node_type, const int64_t *seeds, int64_t n,
                                     fs_owner_groups_t **out)
{
    fs_status_t st = fs_client_usable(c);
    if (st != FS_OK) return st;
    if (!out) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "out must not be NULL");
    *out = NULL;
    if (n < 0 || (n > 0 && !seeds))
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "bad seed array (n=%lld)", (long long)n);
    int *owner, *shards, k;
    int64_t revision;
    if ((st = owners_of(c, node_type, seeds, n, 1, &owner, &shards, &k, &revision)) != FS_OK) return st;
    /* one block: the struct, then offsets, seeds, positions, owners */
    size_t bytes = sizeof(fs_owner_groups_t) + ((size_t)k + 1 + 2 * (size_t)n) * sizeof(int64_t) +
                   ((size_t)k + 1) * sizeof(int);
    fs_owner_groups_t *g = calloc(1, bytes);
    if (!g) {
        free(owner), free(shards);
        return fs_client_fail(c, FS_ERR_NOMEM, "out of memory (%lld seeds' groups)", (long long)n);
    }
    int64_t *offsets = (int64_t *)(g + 1), *grouped = offsets + k + 1, *positions = grouped + n;
    int *ids = (int *)(positions + n);
    for (int64_t i = 0; i < n; i++) offsets[group_of(shards, k, owner[i]) + 1]++;
    for (int j = 0; j < k; j++) offsets[j + 1] += offsets[j];
    for (int64_t i = 0; i < n; i++) { /* stable: each group keeps the input's order */
        int64_t at = offsets[group_of(shards, k, owner[i])]++;
        grouped[at] = seeds[i], positions[at] = i;
    }
    for (int j = k; j > 0; j--) offsets[j] = offsets[j - 1]; /* the fill moved each start to the next's */
    offsets[0] = 0;
    memcpy(ids, shards, (size_t)k * sizeof *ids);
    free(owner), free(shards);
    g->num_groups = k, g->owner = ids, g->offsets = offsets, g->seeds = grouped, g->positions = positions;
    g->map_revision = revision;
    *out = g;
    return FS_OK;
}

FS_API void fs_owner_groups_free(fs_owner_groups_t *g) { free(g); }

/* ---- micrographs ------------------------------------------------------------------------- */

/* The batch's blocks and seeds checked against its nodes, so that the walk
 * below stays inside every array. */
static fs_status_t check_sample(fs_client_t *c, const fs_batch_t *b)
{
    if (!(b->kind & FS_BATCH_SAMPLE) || b->num_hops < 0 || b->num_hops > FS_MAX_HOPS || b->num_nodes < 0)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "the batch holds no sample (kind %d): micrographs are a "
                              "sample's", (int)b->kind);
    for (int64_t i = 0; i < b->num_seeds; i++)
        if (b->seed_local[i] < 0 || b->seed_local[i] >= b->num_nodes)
            return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "seed %lld's local id %lld is not a node of the batch",
                                  (long long)i, (long long)b->seed_local[i]);
    for (int h = 0; h < b->num_hops; h++) {
        const fs_block_t *k = &b->blocks[h];
        int fits = k->num_dst >= 0 && k->num_dst <= b->num_nodes && k->dst_offsets[0] == 0 &&
                   k->dst_offsets[k->num_dst] == k->num_edges;
        for (int64_t d = 0; fits && d < k->num_dst; d++) fits = k->dst_offsets[d] <= k->dst_offsets[d + 1];
        if (!fits)
            return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "block %d does not fit the batch's %lld nodes", h,
                                  (long long)b->num_nodes);
        for (int64_t e = 0; e < k->num_edges; e++)
            if (k->edge_src[e] < 0 || k->edge_src[e] >= b->num_nodes)
                return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "block %d's edge %lld leaves the batch", h,
                                      (long long)e);
    }
    return FS_OK;
}

/* Root r's micrograph into set[0..*len) (stamp[v] == r marks a member). A
 * member that is not a destination of block h has no edges there. */
static int64_t walk(const fs_batch_t *b, int64_t r, int64_t *stamp, int64_t *set)
{
    int64_t len = 0, v = b->seed_local[r];
    stamp[v] = r, set[len++] = v;
    for (int h = 0; h < b->num_hops; h++) {
        const fs_block_t *k = &b->blocks[h];
        for (int64_t i = 0, m = len; i < m; i++) {
            int64_t d = set[i];
            if (d >= k->num_dst) continue;
            for (int64_t e = k->dst_offsets[d]; e < k->dst_offsets[d + 1]; e++) {
                int64_t s = k->edge_src[e];
                if (stamp[s] != r) stamp[s] = r, set[len++] = s;
            }
        }
    }
    return len;
}

/* Every (node, root) pair, root-major: pairs[0..*n). */
static fs_status_t all_pairs(fs_client_t *c, const fs_batch_t *b, int64_t **pairs, int64_t **root_of, int64_t *n)
{
    int64_t *stamp = malloc(((size_t)b->num_nodes + 1) * sizeof *stamp);
    int64_t *set = malloc(((size_t)b->num_nodes + 1) * sizeof *set), cap = 0, len = 0;
    int64_t *p = NULL, *q = NULL;
    fs_status_t st = stamp && set ? FS_OK : FS_ERR_NOMEM;
    for (int64_t v = 0; st == FS_OK && v < b->num_nodes; v++) stamp[v] = -1;
    for (int64_t r = 0; st == FS_OK && r < b->num_seeds; r++) {
        int64_t m = walk(b, r, stamp, set);
        if (len + m > FS_MICROGRAPH_PAIRS_MAX) {
            st = fs_client_fail(c, FS_ERR_RESOURCE, "micrographs: more than %lld (node, root) pairs by root %lld "
                                "of %lld: sample fewer seeds per batch", (long long)FS_MICROGRAPH_PAIRS_MAX,
                                (long long)r, (long long)b->num_seeds);
            break;
        }
        if (len + m > cap) {
            int64_t want = cap * 2 > len + m ? cap * 2 : len + m;
            int64_t *np = realloc(p, (size_t)want * sizeof *p), *nq = np ? realloc(q, (size_t)want * sizeof *q) : NULL;
            if (np) p = np;
            if (nq) q = nq;
            if (!np || !nq) st = FS_ERR_NOMEM;
            else cap = want;
        }
        for (int64_t i = 0; st == FS_OK && i < m; i++) p[len] = set[i], q[len++] = r;
    }
    free(stamp), free(set);
    if (st == FS_ERR_NOMEM) st = fs_client_fail(c, st, "out of memory (micrographs of %lld pairs)", (long long)len);
    if (st != FS_OK) {
        free(p), free(q);
        return st;
    }
    *pairs = p, *root_of = q, *n = len;
    return FS_OK;
}

/* R_micro's counts: pairs other than (root, root), and those whose node's
 * shard is the root's. */
static void count_colocated(fs_micrographs_t *m, const fs_batch_t *b, const int64_t *node, const int64_t *root,
                            int64_t n, const int *owner)
{
    for (int64_t i = 0; i < n; i++) {
        int64_t home = b->seed_local[root[i]];
        if (node[i] == home) continue;
        m->pairs++;
        m->pairs_colocated += owner[node[i]] == owner[home];
    }
    m->r_micro = m->pairs ? (double)m->pairs_colocated / (double)m->pairs : NAN;
}

FS_API fs_status_t fs_batch_micrographs(fs_client_t *c, const fs_batch_t *b, fs_micrographs_t **out)
{
    fs_status_t st = fs_client_usable(c);
    if (st != FS_OK) return st;
    if (!out || !b) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "%s must not be NULL", out ? "b" : "out");
    *out = NULL;
    if ((st = check_sample(c, b)) != FS_OK) return st;
    int *owner = NULL, *shards = NULL, k;
    int64_t revision, *node, *root, n;
    if (c->ops->owners && (st = owners_of(c, NULL, b->nodes, b->num_nodes, 0, &owner, &shards, &k, &revision)) != FS_OK)
        return st;
    free(shards);
    if ((st = all_pairs(c, b, &node, &root, &n)) != FS_OK) {
        free(owner);
        return st;
    }
    size_t bytes = sizeof(fs_micrographs_t) + ((size_t)b->num_nodes + 1 + (size_t)n) * sizeof(int64_t) +
                   (size_t)b->num_nodes * sizeof(int);
    fs_micrographs_t *m = calloc(1, bytes);
    if (!m) {
        free(owner), free(node), free(root);
        return fs_client_fail(c, FS_ERR_NOMEM, "out of memory (micrographs of %lld pairs)", (long long)n);
    }
    int64_t *offsets = (int64_t *)(m + 1), *roots = offsets + b->num_nodes + 1;
    for (int64_t i = 0; i < n; i++) offsets[node[i] + 1]++;
    for (int64_t v = 0; v < b->num_nodes; v++) offsets[v + 1] += offsets[v];
    for (int64_t i = 0; i < n; i++) roots[offsets[node[i]]++] = root[i]; /* root-major in: ascending out */
    for (int64_t v = b->num_nodes; v > 0; v--) offsets[v] = offsets[v - 1];
    offsets[0] = 0;
    m->num_nodes = b->num_nodes, m->num_roots = b->num_seeds, m->root_offsets = offsets, m->roots = roots;
    m->r_micro = NAN;
    if (owner) {
        int *o = (int *)(roots + n);
        memcpy(o, owner, (size_t)b->num_nodes * sizeof *o);
        m->owner = o;
        count_colocated(m, b, node, root, n, o);
        if (c->ops->count_hopgnn) c->ops->count_hopgnn(c, m->pairs, m->pairs_colocated, 0, 0);
    }
    free(owner), free(node), free(root);
    *out = m;
    return FS_OK;
}

FS_API void fs_micrographs_free(fs_micrographs_t *m) { free(m); }

/* ---- pre-gathering -------------------------------------------------------------------- */

/* The union of the micrographs of roots[0..n): its node ids into *ids (b's
 * global ids, ascending local id) and the stats but rows_saved. */
static fs_status_t union_of(fs_client_t *c, const fs_batch_t *b, const fs_micrographs_t *m, const int64_t *roots,
                            int64_t n, int64_t **ids, int64_t *count, fs_pregather_stats_t *st)
{
    char *want = calloc((size_t)m->num_roots + 1, 1);
    char *home = calloc(FS_CLUSTER_SHARDS_MAX, 1), *seen = calloc(FS_CLUSTER_SHARDS_MAX, 1);
    int64_t *out = malloc(((size_t)m->num_nodes + 1) * sizeof *out), k = 0;
    fs_status_t rc = want && home && seen && out ? FS_OK : fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; rc == FS_OK && i < n; i++) {
        if (roots[i] < 0 || roots[i] >= m->num_roots) {
            rc = fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "root %lld (position %lld) is not one of the batch's "
                                "%lld seeds", (long long)roots[i], (long long)i, (long long)m->num_roots);
            break;
        }
        want[roots[i]] = 1;
        if (m->owner) home[m->owner[b->seed_local[roots[i]]] % FS_CLUSTER_SHARDS_MAX] = 1;
    }
    for (int64_t v = 0; rc == FS_OK && v < m->num_nodes; v++) {
        int in = 0;
        for (int64_t j = m->root_offsets[v]; j < m->root_offsets[v + 1]; j++)
            if (want[m->roots[j]]) st->rows_requested++, in = 1;
        if (!in) continue;
        out[k++] = b->nodes[v];
        int shard = m->owner ? m->owner[v] % FS_CLUSTER_SHARDS_MAX : 0;
        if (m->owner && !home[shard]) st->rows_remote++, st->remote_shards += !seen[shard], seen[shard] = 1;
    }
    free(want), free(home), free(seen);
    if (rc != FS_OK) {
        free(out);
        return rc;
    }
    *ids = out, *count = k;
    return FS_OK;
}

FS_API fs_status_t fs_pregather(fs_client_t *c, const fs_batch_t *b, const fs_micrographs_t *m, const int64_t *roots,
                                int64_t n, const char *table, fs_dtype_t dtype, int64_t max_rows, fs_batch_t **out,
                                fs_pregather_stats_t *stats)
{
    fs_status_t st = fs_client_usable(c);
    if (st != FS_OK) return st;
    if (!out || !b || !m || (n > 0 && !roots) || n < 0)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "fs_pregather: %s", !out ? "out must not be NULL"
                              : !b || !m ? "the batch and its micrographs are needed" : "bad root array");
    *out = NULL;
    if (m->num_nodes != b->num_nodes || m->num_roots != b->num_seeds)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "fs_pregather: micrographs of %lld nodes and %lld roots "
                              "are not this batch's (%lld and %lld)", (long long)m->num_nodes, (long long)m->num_roots,
                              (long long)b->num_nodes, (long long)b->num_seeds);
    fs_pregather_stats_t s = {0};
    int64_t *ids, k;
    if ((st = union_of(c, b, m, roots, n, &ids, &k, &s)) != FS_OK) return st;
    s.rows = k, s.rows_saved = s.rows_requested - k;
    if (k > max_rows)
        st = fs_client_fail(c, FS_ERR_RESOURCE, "fs_pregather: the micrographs of %lld roots hold %lld rows, past the "
                            "buffer's %lld: pre-gather fewer roots at a time or raise max_rows", (long long)n,
                            (long long)k, (long long)max_rows);
    else
        st = fs_gather(c, ids, k, table, dtype, out);
    free(ids);
    if (st == FS_OK && c->ops->count_hopgnn) c->ops->count_hopgnn(c, 0, 0, s.rows_requested, s.rows);
    if (st == FS_OK && stats) *stats = s;
    return st;
}
