/* fuzz_shardmap.c — libFuzzer harness for the cluster's JSON from etcd
 * (cluster/fs_shardmap.c): the shard map every client and shard reads, and
 * the shards' registrations it is built from, and the cluster's assignment.
 *
 * Byte 0 % 3 picks fs_shard_map_parse (0), fs_shard_reg_parse (1) or
 * fs_shard_assign_parse (2); the
 * rest is the text. Beyond "no crash": a refusal has a status and a
 * message; an accepted map has every owner -1 or a listed shard and its
 * part's first holder, every holder listed, ids ascending, and formats to a text that parses to the same map and formats
 * to the same bytes; an accepted registration owns and copies ascending parts below
 * its count and survives its own format the same way; an accepted
 * assignment gives parts only to its members, and survives its format too. */
#include "fs_shardmap.h"
#include "fuzz_common.h"

static void check_map(const fs_shard_map_t *m)
{
    FUZZ_CHECK(m->parts >= 1 && m->parts <= FS_PARTITION_MAX_PARTS, "parts %d", m->parts);
    for (int i = 1; i < m->num_shards; i++) FUZZ_CHECK(m->shard[i].id > m->shard[i - 1].id, "shard ids at %d", i);
    FUZZ_CHECK(m->replicas >= 1 && m->replicas <= FS_CLUSTER_REPLICAS_MAX, "replicas %d", m->replicas);
    for (int p = 0; p < m->parts; p++) {
        FUZZ_CHECK(m->owner[p] == -1 || fs_shard_map_owner(m, p) != NULL, "part %d's owner %d", p, m->owner[p]);
        FUZZ_CHECK(m->owner[p] == m->holders[p * m->replicas], "part %d's owner is not its first holder", p);
        for (int i = 0; i < m->replicas && m->holders[p * m->replicas + i] >= 0; i++)
            FUZZ_CHECK(fs_shard_map_holds(m, p, m->holders[p * m->replicas + i]), "part %d's holder %d", p, i);
    }
    char *text = fs_shard_map_format(m);
    FUZZ_CHECK(text != NULL, "format failed");
    fs_shard_map_t back;
    fs_error_t err = {0};
    FUZZ_CHECK(fs_shard_map_parse(text, strlen(text), &back, &err) == FS_OK, "its own text refused: %s", err.msg);
    FUZZ_CHECK(fs_shard_map_same(m, &back), "the map changed through its text");
    char *again = fs_shard_map_format(&back);
    FUZZ_CHECK(again && strcmp(text, again) == 0, "two texts for one map");
    free(text);
    free(again);
    fs_shard_map_free(&back);
}

static void check_reg(const fs_shard_reg_t *r)
{
    for (int i = 0; i < r->num_owned; i++)
        FUZZ_CHECK(r->owns[i] >= 0 && r->owns[i] < r->parts && (i == 0 || r->owns[i] > r->owns[i - 1]), "owns[%d]", i);
    for (int i = 0; i < r->num_copies; i++)
        FUZZ_CHECK(r->copies[i] >= 0 && r->copies[i] < r->parts && (i == 0 || r->copies[i] > r->copies[i - 1]),
                   "copies[%d]", i);
    char *text = fs_shard_reg_format(r);
    FUZZ_CHECK(text != NULL, "format failed");
    fs_shard_reg_t back;
    fs_error_t err = {0};
    FUZZ_CHECK(fs_shard_reg_parse(text, strlen(text), &back, &err) == FS_OK, "its own text refused: %s", err.msg);
    FUZZ_CHECK(back.addr.id == r->addr.id && back.parts == r->parts && back.num_owned == r->num_owned &&
               strcmp(back.addr.grpc, r->addr.grpc) == 0 && strcmp(back.partitioning, r->partitioning) == 0 &&
               (r->num_owned == 0 || memcmp(back.owns, r->owns, (size_t)r->num_owned * sizeof *r->owns) == 0) &&
               back.replicas == r->replicas && back.num_copies == r->num_copies &&
               (r->num_copies == 0 || memcmp(back.copies, r->copies, (size_t)r->num_copies * sizeof *r->copies) == 0),
               "the registration changed through its text");
    free(text);
    fs_shard_reg_free(&back);
}

static void check_assign(const fs_shard_map_t *a)
{
    FUZZ_CHECK(a->parts >= 1 && a->replicas >= 1 && a->replicas <= FS_CLUSTER_REPLICAS_MAX, "parts %d replicas %d",
               a->parts, a->replicas);
    for (int i = 1; i < a->num_shards; i++) FUZZ_CHECK(a->shard[i].id > a->shard[i - 1].id, "member ids at %d", i);
    for (int p = 0; p < a->parts * a->replicas; p++) {
        int member = a->holders[p] < 0;
        for (int i = 0; i < a->num_shards; i++) member |= a->shard[i].id == a->holders[p];
        FUZZ_CHECK(member, "part %d given to shard %d, no member", p / a->replicas, a->holders[p]);
    }
    char *text = fs_shard_assign_format(a);
    FUZZ_CHECK(text != NULL, "format failed");
    fs_shard_map_t back;
    fs_error_t err = {0};
    FUZZ_CHECK(fs_shard_assign_parse(text, strlen(text), &back, &err) == FS_OK, "its own text refused: %s", err.msg);
    FUZZ_CHECK(fs_shard_map_same(a, &back), "the assignment changed through its text");
    char *again = fs_shard_assign_format(&back);
    FUZZ_CHECK(again && strcmp(text, again) == 0, "two texts for one assignment");
    free(text);
    free(again);
    fs_shard_map_free(&back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    fs_error_t err = {0};
    if (data[0] % 3 == 2) {
        fs_shard_map_t a;
        fs_status_t st = fs_shard_assign_parse(text, len, &a, &err);
        if (st != FS_OK) {
            FUZZ_CHECK_REFUSAL(st, err);
            return 0;
        }
        check_assign(&a);
        fs_shard_map_free(&a);
    } else if (data[0] % 3 == 0) {
        fs_shard_map_t m;
        fs_status_t st = fs_shard_map_parse(text, len, &m, &err);
        if (st != FS_OK) {
            FUZZ_CHECK_REFUSAL(st, err);
            return 0;
        }
        check_map(&m);
        fs_shard_map_free(&m);
    } else {
        fs_shard_reg_t r;
        fs_status_t st = fs_shard_reg_parse(text, len, &r, &err);
        if (st != FS_OK) {
            FUZZ_CHECK_REFUSAL(st, err);
            return 0;
        }
        check_reg(&r);
        fs_shard_reg_free(&r);
    }
    return 0;
}
