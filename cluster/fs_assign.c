/* fs_assign.c — planning a cluster's assignment (fs_assign.h says what and
 * why): loads counted per member, copies moved one at a time. */
#include "fs_assign.h"

#include <stdlib.h>
#include <string.h>

static int holders_of(const fs_shard_map_t *a, int p, int **h)
{
    *h = &a->holders[p * a->replicas];
    int n = 0;
    while (n < a->replicas && (*h)[n] >= 0) n++;
    return n;
}

int fs_assign_load(const fs_shard_map_t *a, int id)
{
    int load = 0;
    for (int i = 0; i < a->parts * a->replicas; i++) load += a->holders[i] == id;
    return load;
}

static int member_index(const fs_shard_map_t *a, int id)
{
    for (int i = 0; i < a->num_shards; i++)
        if (a->shard[i].id == id) return i;
    return -1;
}

/* Whether member i is one of part p's holders when the parts are dealt
 * round-robin over the members (serve --parts auto --replicas R: p's
 * holders are the R consecutive members from p mod M). */
static int dealt_to(const fs_shard_map_t *a, int p, int i)
{
    for (int j = 0; j < a->replicas; j++)
        if ((p + j) % a->num_shards == i) return 1;
    return 0;
}

/* The copies placed (and `more` about to be), over the members, rounded
 * up: a member's share at most. */
static int share_cap(const fs_shard_map_t *a, int more)
{
    int copies = more;
    for (int i = 0; i < a->parts * a->replicas; i++) copies += a->holders[i] >= 0;
    return a->num_shards ? (copies + a->num_shards - 1) / a->num_shards : 0;
}

/* Where a copy of part p goes (-1: every member holds p): the member the
 * round-robin deal gives p, while it holds less than its share, else the
 * least loaded member not holding p, the lowest id among equals. So a shard
 * added to a dealt cluster and then drained gives every copy back where it
 * came from. */
static int least_loaded(const fs_shard_map_t *a, int p, int more)
{
    int best = -1, best_load = 0, cap = share_cap(a, more);
    for (int i = 0; i < a->num_shards; i++) {
        int id = a->shard[i].id, load = fs_assign_load(a, id);
        if (fs_shard_map_rank(a, p, id) >= 0) continue;
        if (dealt_to(a, p, i) && load < cap) return id;
        if (best < 0 || load < best_load) best = id, best_load = load;
    }
    return best;
}

fs_status_t fs_assign_from_map(const fs_shard_map_t *m, int partial, fs_shard_map_t *out, fs_error_t *err)
{
    for (int p = 0; !partial && p < m->parts; p++) {
        int *h, n = holders_of(m, p, &h);
        if (n < m->replicas)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "cluster %s: part %d has %d of its %d holders in the map: a "
                            "shard is down (wait for it to serve again, or `featstore cluster remove` it)", m->name, p,
                            n, m->replicas);
    }
    fs_status_t st = fs_shard_map_copy(m, out, err);
    if (st != FS_OK) return st;
    out->revision = 0;
    int k = 0;
    for (int i = 0; i < out->num_shards; i++) { /* members, by id only: the shards holding parts */
        int id = out->shard[i].id;
        if (fs_assign_load(out, id) == 0) continue; /* registered empty: waiting to be added */
        memset(&out->shard[k], 0, sizeof out->shard[k]);
        out->shard[k++].id = id;
    }
    out->num_shards = k;
    return FS_OK;
}

fs_status_t fs_assign_add(fs_shard_map_t *a, int id, int *moved, fs_error_t *err)
{
    *moved = 0;
    if (id < 0 || id >= FS_CLUSTER_SHARDS_MAX)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "shard %d: ids are 0 to %d", id, FS_CLUSTER_SHARDS_MAX - 1);
    if (member_index(a, id) >= 0)
        return fs_error(err, FS_ERR_EXISTS, "cluster %s: shard %d is a member already", a->name, id);
    fs_shard_addr_t *s = realloc(a->shard, sizeof *s * (size_t)(a->num_shards + 1));
    if (!s) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    a->shard = s;
    int at = a->num_shards;
    while (at > 0 && s[at - 1].id > id) s[at] = s[at - 1], at--;
    memset(&s[at], 0, sizeof s[at]);
    s[at].id = id;
    a->num_shards++;
    int copies = 0;
    for (int i = 0; i < a->parts * a->replicas; i++) copies += a->holders[i] >= 0;
    int share = copies / a->num_shards;
    while (fs_assign_load(a, id) < share) {
        int donor = -1, donor_load = 0; /* the most loaded other member */
        for (int i = 0; i < a->num_shards; i++) {
            int d = a->shard[i].id, load = fs_assign_load(a, d);
            if (d != id && load > donor_load) donor = d, donor_load = load;
        }
        int p = a->parts - 1;
        while (p >= 0 && !(fs_shard_map_rank(a, p, donor) >= 0 && fs_shard_map_rank(a, p, id) < 0)) p--;
        if (donor < 0 || p < 0 || donor_load <= share) break; /* balanced as far as copies allow */
        a->holders[p * a->replicas + fs_shard_map_rank(a, p, donor)] = id;
        (*moved)++;
    }
    for (int p = 0; p < a->parts; p++) a->owner[p] = a->holders[p * a->replicas];
    return FS_OK;
}

/* Copies moved from the most loaded member to the least loaded, one at a
 * time, until they are within one of each other (or no part can move):
 * what the deal-first placement above can leave when a part's only
 * candidates are already full. */
static void rebalance(fs_shard_map_t *a, int *moved)
{
    for (int step = 0; step < a->parts * a->replicas; step++) {
        int lo = -1, hi = -1, lo_load = 0, hi_load = 0;
        for (int i = 0; i < a->num_shards; i++) {
            int id = a->shard[i].id, load = fs_assign_load(a, id);
            if (lo < 0 || load < lo_load) lo = id, lo_load = load;
            if (hi < 0 || load > hi_load) hi = id, hi_load = load;
        }
        if (hi_load - lo_load <= 1) return;
        int p = a->parts - 1;
        while (p >= 0 && !(fs_shard_map_rank(a, p, hi) >= 0 && fs_shard_map_rank(a, p, lo) < 0)) p--;
        if (p < 0) return;
        a->holders[p * a->replicas + fs_shard_map_rank(a, p, hi)] = lo;
        (*moved)++;
    }
}

fs_status_t fs_assign_remove(fs_shard_map_t *a, int id, int *moved, fs_error_t *err)
{
    *moved = 0;
    int at = member_index(a, id);
    if (at < 0) return fs_error(err, FS_ERR_NOT_FOUND, "cluster %s: shard %d is not a member", a->name, id);
    if (a->num_shards - 1 < a->replicas)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "cluster %s: without shard %d, %d shards would be left for %d "
                        "replicas of each part (a part's replicas are on different shards)", a->name, id,
                        a->num_shards - 1, a->replicas);
    memmove(&a->shard[at], &a->shard[at + 1], sizeof *a->shard * (size_t)(a->num_shards - at - 1));
    a->num_shards--;
    for (int p = 0; p < a->parts; p++) {
        int r = fs_shard_map_rank(a, p, id);
        if (r < 0) continue;
        int *h, n = holders_of(a, p, &h);
        int to = least_loaded(a, p, 0); /* id still holds its place (counted): no longer a member, never chosen */
        if (to >= 0) {
            h[r] = to;
            (*moved)++;
        } else { /* no member left to take it: the part has one holder fewer */
            memmove(&h[r], &h[r + 1], sizeof *h * (size_t)(n - r - 1));
            h[n - 1] = -1;
        }
    }
    rebalance(a, moved);
    for (int p = 0; p < a->parts; p++) a->owner[p] = a->holders[p * a->replicas];
    return FS_OK;
}

fs_status_t fs_assign_fill(fs_shard_map_t *a, int *moved, fs_error_t *err)
{
    *moved = 0;
    if (a->num_shards == 0) return fs_error(err, FS_ERR_NOT_FOUND, "cluster %s has no member", a->name);
    for (int p = 0; p < a->parts; p++) {
        int *h, n = holders_of(a, p, &h);
        for (int to; n < a->replicas && (to = least_loaded(a, p, 1)) >= 0; n++) {
            h[n] = to;
            (*moved)++;
        }
    }
    rebalance(a, moved);
    for (int p = 0; p < a->parts; p++) a->owner[p] = a->holders[p * a->replicas];
    return FS_OK;
}

int fs_assign_settled(const fs_shard_map_t *a, const fs_shard_map_t *m, int *pending)
{
    int differ = 0;
    for (int p = 0; p < a->parts; p++) {
        int *h, n = holders_of(a, p, &h), *g, k = p < m->parts ? holders_of(m, p, &g) : -1, same = n == k;
        for (int i = 0; same && i < n; i++) same = fs_shard_map_rank(m, p, h[i]) >= 0;
        differ += !same;
    }
    if (pending) *pending = differ;
    return differ == 0 && a->parts == m->parts;
}
