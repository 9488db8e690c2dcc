/* fuzz_plan.c — libFuzzer harness for plan files (placement/plan_io.c:
 * `featstore serve --plan file`, `featstore plan --load`).
 *
 * A plan file ends in an XXH3 checksum of everything before it, so random
 * bytes would almost never get past the envelope. The first input byte picks
 * the mode:
 *   even  the rest is a whole file, as read from disk (envelope checks);
 *   odd   the rest is a plan's body: the harness puts a valid header (magic,
 *         version, endian tag, length) before it and the right checksum after
 *         it, so every run exercises the body parser and the invariants.
 * An accepted plan must hold the invariants the loader promises (ids below
 * num_nodes, reader masks within num_gpus, the topology order a
 * permutation with its inverse), and must round-trip: saved and loaded
 * again it saves to the very same bytes. A refusal is FS_ERR_FORMAT or
 * FS_ERR_UNSUPPORTED (or FS_ERR_NOMEM) with a message. */
#include <unistd.h>
#include <xxhash.h>

#include "fuzz_common.h"
#include "plan.h"

#define HEADER_BYTES 24
static const char MAGIC[8] = {'F', 'S', 'P', 'L', 'A', 'N', '\r', '\n'};
#define ENDIAN_TAG 0x01020304u

static char saved_a[4096], saved_b[4096];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(saved_a, sizeof saved_a, "%s/fs-fuzz-plan-%d-a.plan", dir, (int)getpid());
    snprintf(saved_b, sizeof saved_b, "%s/fs-fuzz-plan-%d-b.plan", dir, (int)getpid());
    return 0;
}

/* A header and a checksum around body. */
static uint8_t *seal(const uint8_t *body, size_t n, size_t *len)
{
    *len = HEADER_BYTES + n + 8;
    uint8_t *f = malloc(*len);
    if (!f) abort();
    uint32_t version = FS_PLAN_VERSION, tag = ENDIAN_TAG;
    uint64_t bytes = *len;
    memcpy(f, MAGIC, 8), memcpy(f + 8, &version, 4), memcpy(f + 12, &tag, 4), memcpy(f + 16, &bytes, 8);
    if (n) memcpy(f + HEADER_BYTES, body, n);
    uint64_t sum = XXH3_64bits(f, *len - 8);
    memcpy(f + *len - 8, &sum, 8);
    return f;
}

static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    FUZZ_CHECK(f != NULL, "cannot reopen %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *d = malloc((size_t)n + 1);
    if (!d) abort();
    *len = fread(d, 1, (size_t)n, f);
    fclose(f);
    return d;
}

static void check_ids(const fs_plan_t *p, const int64_t *ids, const uint32_t *readers, int64_t n, int g)
{
    uint32_t valid = (1u << p->num_gpus) - 1;
    for (int64_t k = 0; k < n; k++)
        FUZZ_CHECK(ids[k] >= 0 && ids[k] < p->num_nodes && !(readers[k] & ~valid), "GPU %d entry %lld: id %lld, "
                   "readers %#x", g, (long long)k, (long long)ids[k], readers[k]);
}

static void check_accepted(const fs_plan_t *p)
{
    FUZZ_CHECK(p->num_gpus >= 1 && p->num_gpus <= FS_HW_MAX_GPUS, "%d GPUs", p->num_gpus);
    FUZZ_CHECK(p->num_nodes >= 0 && p->row_bytes > 0, "%lld nodes of %lld bytes", (long long)p->num_nodes,
               (long long)p->row_bytes);
    FUZZ_CHECK(p->policy > FS_FEAT_AUTO && p->policy < FS_FEAT_POLICY_COUNT_, "policy %d", p->policy);
    for (int g = 0; g < p->num_gpus; g++) {
        const fs_plan_gpu_t *G = &p->gpu[g];
        FUZZ_CHECK(G->num_rows >= 0 && G->num_topo >= 0, "GPU %d counts", g);
        check_ids(p, G->rows, G->readers, G->num_rows, g);
        check_ids(p, G->topo_rows, G->topo_readers, G->num_topo, g);
    }
    const fs_topo_split_t *t = &p->topo;
    if (!t->old_of_new) {
        FUZZ_CHECK(t->hot == 0, "a hot prefix of %lld without an order", (long long)t->hot);
        return;
    }
    FUZZ_CHECK(t->new_of_old && t->num_nodes == p->num_nodes && t->hot >= 0 && t->hot <= t->num_nodes,
               "topology split sizes");
    for (int64_t k = 0; k < t->num_nodes; k++)
        FUZZ_CHECK(t->old_of_new[k] >= 0 && t->old_of_new[k] < t->num_nodes && t->new_of_old[t->old_of_new[k]] == k,
                   "order not a permutation at %lld", (long long)k);
}

static void check_round_trip(const fs_plan_t *p)
{
    fs_error_t err = {0};
    fs_plan_t *again = NULL;
    fs_status_t st = fs_plan_save(p, saved_a, &err);
    FUZZ_CHECK(st == FS_OK, "save: %s", err.msg);
    size_t la, lb;
    uint8_t *a = read_file(saved_a, &la);
    st = fs_plan_load_buffer(a, la, &again, &err);
    FUZZ_CHECK(st == FS_OK, "our own save is refused: %s", err.msg);
    st = fs_plan_save(again, saved_b, &err);
    FUZZ_CHECK(st == FS_OK, "save again: %s", err.msg);
    uint8_t *b = read_file(saved_b, &lb);
    FUZZ_CHECK(la == lb && memcmp(a, b, la) == 0, "save -> load -> save changed the bytes (%zu, %zu)", la, lb);
    fs_plan_free(again);
    free(a), free(b);
    remove(saved_a), remove(saved_b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_bytes_t in = {data, size};
    int sealed = fuzz_take_u8(&in) & 1;
    size_t len = in.n;
    uint8_t *file = sealed ? seal(in.p, in.n, &len) : NULL;
    fs_plan_t *plan = NULL;
    fs_error_t err = {0};
    fs_status_t st = fs_plan_load_buffer(file ? file : in.p, len, &plan, &err);
    free(file);
    if (st != FS_OK) {
        FUZZ_CHECK_REFUSAL(st, err);
        FUZZ_CHECK(st == FS_ERR_FORMAT || st == FS_ERR_UNSUPPORTED || st == FS_ERR_NOMEM, "status %d: %s", st,
                   err.msg);
        FUZZ_CHECK(plan == NULL, "a refused plan was handed out");
        return 0;
    }
    check_accepted(plan);
    check_round_trip(plan);
    fs_plan_free(plan);
    return 0;
}
