/* fs_cluster_stats.c — a cluster's metrics in one text (fs_cluster.h's
 * fs_cluster_stats): a trainer's own counters when asked through its
 * connection; every shard's Stats, asked one after another with the
 * deadline each, then
 *   - the cluster's sums: each counter series of the shards
 *     (featstore_shard_X{labels}) summed over them as featstore_cluster_X
 *     with the same labels;
 *   - every shard's own series, with a shard="N" label added.
 * A shard that does not answer is said in a comment and in
 * featstore_cluster_shard_up{shard="N"} 0; the rest are still summed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_cluster.h"
#include "fs_shard_client.h"

typedef struct {
    char *key;     /* "featstore_cluster_X{labels}" */
    double sum;
} series_t;

typedef struct {
    series_t *s;
    size_t n, cap;
} sums_t;

static int add_sum(sums_t *t, const char *key, size_t klen, double v)
{
    for (size_t i = 0; i < t->n; i++)
        if (strlen(t->s[i].key) == klen && memcmp(t->s[i].key, key, klen) == 0) return t->s[i].sum += v, 0;
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        series_t *s = realloc(t->s, cap * sizeof *s);
        if (!s) return -1;
        t->s = s, t->cap = cap;
    }
    if (!(t->s[t->n].key = strndup(key, klen))) return -1;
    t->s[t->n++].sum = v;
    return 0;
}

/* A family's TYPE line: whether it is a counter (summed). */
static int counters_of(const char *line, char *family, size_t len)
{
    char type[32];
    if (sscanf(line, "# TYPE %200s %31s", family, type) != 2) return -1;
    (void)len;
    return strcmp(type, "counter") == 0;
}

/* One shard's text: its counters into the sums, its series (shard label
 * added) and, from the first shard, the families' comments into out. */
static int take_shard(const char *text, int id, int first, sums_t *sums, FILE *out)
{
    char family[256] = "";
    int counter = 0;
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        if (line[0] == '#') {
            char lb[320];
            snprintf(lb, sizeof lb, "%.*s", (int)(n < sizeof lb - 1 ? n : sizeof lb - 1), line);
            int c = counters_of(lb, family, sizeof family);
            if (c >= 0) counter = c;
            if (first) fprintf(out, "%.*s\n", (int)n, line);
        } else if (n > 0) {
            const char *sp = memchr(line, ' ', n), *brace = memchr(line, '{', n);
            if (!sp) goto next;
            double v = strtod(sp + 1, NULL);
            size_t name_len = brace && brace < sp ? (size_t)(brace - line) : (size_t)(sp - line);
            if (counter && name_len > 16 && strncmp(line, "featstore_shard_", 16) == 0) {
                char key[512];
                int k = snprintf(key, sizeof key, "featstore_cluster_%.*s", (int)(sp - line - 16), line + 16);
                if (k > 0 && (size_t)k < sizeof key && add_sum(sums, key, (size_t)k, v)) return -1;
            }
            if (brace && brace < sp) /* name{a="b"} -> name{shard="N",a="b"} */
                fprintf(out, "%.*s{shard=\"%d\",%.*s\n", (int)name_len, line, id, (int)(n - name_len - 1), brace + 1);
            else
                fprintf(out, "%.*s{shard=\"%d\"}%.*s\n", (int)name_len, line, id, (int)(n - name_len), sp);
        }
    next:
        line = end ? end + 1 : line + n;
    }
    return 0;
}

/* A trainer's own counters (docs/metrics.md, "Trainers"). */
static void trainer_series(FILE *out, const fs_cluster_counts_t *t)
{
    fprintf(out, "# HELP featstore_trainer_calls_total Calls of this trainer process that made a batch\n"
            "# TYPE featstore_trainer_calls_total counter\nfeatstore_trainer_calls_total %llu\n"
            "# HELP featstore_trainer_pick_ids_total Destinations whose picks its batches asked for, by where they "
            "were answered (local: a shard on this machine, in process; remote: over gRPC)\n"
            "# TYPE featstore_trainer_pick_ids_total counter\n"
            "featstore_trainer_pick_ids_total{path=\"local\"} %llu\nfeatstore_trainer_pick_ids_total{path=\"remote\"} %llu\n"
            "# HELP featstore_trainer_rows_total Rows its batches gathered, by where they came from (cache: the "
            "hot-row cache)\n# TYPE featstore_trainer_rows_total counter\n"
            "featstore_trainer_rows_total{path=\"local\"} %llu\nfeatstore_trainer_rows_total{path=\"remote\"} %llu\n"
            "featstore_trainer_rows_total{path=\"cache\"} %llu\n"
            "# HELP featstore_trainer_remote_calls_total ShardPicks and ShardRows calls it sent over gRPC\n"
            "# TYPE featstore_trainer_remote_calls_total counter\nfeatstore_trainer_remote_calls_total %llu\n"
            "# HELP featstore_trainer_local_shards Shards its newest connection answers in process (unix://)\n"
            "# TYPE featstore_trainer_local_shards gauge\nfeatstore_trainer_local_shards %d\n",
            (unsigned long long)t->calls, (unsigned long long)t->pick_ids_local,
            (unsigned long long)t->pick_ids_remote, (unsigned long long)t->rows_local,
            (unsigned long long)t->rows_remote, (unsigned long long)t->rows_cached,
            (unsigned long long)t->calls_remote, t->shards_local);
    fprintf(out, "# HELP featstore_trainer_micrograph_pairs_total Micrographs' (node, root) pairs but the roots' own, "
            "by whether the node is on the root's shard (R_micro: yes / all)\n"
            "# TYPE featstore_trainer_micrograph_pairs_total counter\n"
            "featstore_trainer_micrograph_pairs_total{colocated=\"yes\"} %llu\n"
            "featstore_trainer_micrograph_pairs_total{colocated=\"no\"} %llu\n"
            "# HELP featstore_trainer_pregather_rows_total Pre-gathers' rows: requested, the micrographs' one by one; "
            "gathered, each once\n# TYPE featstore_trainer_pregather_rows_total counter\n"
            "featstore_trainer_pregather_rows_total{kind=\"requested\"} %llu\n"
            "featstore_trainer_pregather_rows_total{kind=\"gathered\"} %llu\n",
            (unsigned long long)t->micro_pairs_colocated,
            (unsigned long long)(t->micro_pairs - t->micro_pairs_colocated),
            (unsigned long long)t->pregather_requested, (unsigned long long)t->pregather_rows);
    fprintf(out, "# HELP featstore_trainer_cache_fills_total Hot-row caches filled: the first, and one per shard map "
            "that moved a shard onto or off this machine\n# TYPE featstore_trainer_cache_fills_total counter\n"
            "featstore_trainer_cache_fills_total %llu\n", (unsigned long long)t->cache_fills);
    fprintf(out, "# HELP featstore_trainer_map_updates_total Shard maps its watch on etcd installed\n"
            "# TYPE featstore_trainer_map_updates_total counter\nfeatstore_trainer_map_updates_total %llu\n"
            "# HELP featstore_trainer_map_watched 1 while its watch on etcd is open (the map it holds is etcd's)\n"
            "# TYPE featstore_trainer_map_watched gauge\nfeatstore_trainer_map_watched %d\n"
            "# HELP featstore_trainer_shard_failures_total Calls to a shard that failed as unreachable or past their "
            "deadline (each asked again of another holder of its parts, when there is one)\n"
            "# TYPE featstore_trainer_shard_failures_total counter\nfeatstore_trainer_shard_failures_total %llu\n",
            (unsigned long long)t->map_updates, t->map_watched, (unsigned long long)t->shard_failures);
}

fs_status_t fs_cluster_stats(const fs_shard_map_t *m, const fs_cluster_counts_t *trainer, int timeout_ms, char **text,
                             fs_error_t *err)
{
    char *shards = NULL, *all = NULL;
    size_t slen = 0, alen = 0;
    FILE *per = open_memstream(&shards, &slen), *out = per ? open_memstream(&all, &alen) : NULL;
    sums_t sums = {0};
    int bad = !per || !out, answered = 0;
    if (!bad && trainer) trainer_series(out, trainer);
    if (!bad)
        fprintf(out, "# featstore cluster %s: partitioning %s, %d parts, %d shards, map revision %lld\n"
                "# TYPE featstore_cluster_shard_up gauge\n", m->name, m->partitioning, m->parts, m->num_shards,
                (long long)m->revision);
    for (int k = 0; k < m->num_shards && !bad; k++) {
        fs_shard_client_t *c;
        char *t = NULL;
        fs_error_t e = {0};
        fs_status_t st = fs_shard_client_open(m->shard[k].grpc, timeout_ms, &c, &e);
        if (st == FS_OK) st = fs_shard_client_stats(c, &t, &e), fs_shard_client_close(c);
        fprintf(out, "featstore_cluster_shard_up{shard=\"%d\",grpc=\"%s\"} %d\n", m->shard[k].id, m->shard[k].grpc,
                st == FS_OK);
        if (st != FS_OK) fprintf(out, "# shard %d (%s): %s\n", m->shard[k].id, m->shard[k].grpc, e.msg);
        else bad = take_shard(t, m->shard[k].id, answered++ == 0, &sums, per) != 0;
        free(t);
    }
    if (!bad) {
        fprintf(out, "# the shards' counters summed (featstore_shard_X as featstore_cluster_X), then each shard's\n");
        for (size_t i = 0; i < sums.n; i++) fprintf(out, "%s %.17g\n", sums.s[i].key, sums.s[i].sum);
        fflush(per);
        fwrite(shards, 1, slen, out);
    }
    for (size_t i = 0; i < sums.n; i++) free(sums.s[i].key);
    free(sums.s);
    if (per) fclose(per);
    free(shards);
    if (out && fclose(out) != 0) bad = 1;
    if (bad) {
        free(all);
        return fs_error(err, FS_ERR_NOMEM, "cluster %s: out of memory for its metrics", m->name);
    }
    *text = all;
    return FS_OK;
}
