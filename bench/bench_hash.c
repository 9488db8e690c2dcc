/* bench_hash — the one checksum (kernels/fs_hash.h) on each vector unit
 * this CPU has, against the baseline variant (what Debian's libxxhash
 * runs: SSE2 on x86-64) in the same run.
 *
 * Two shapes, as featstore hashes: a file hashed as a stream of 8 MiB
 * pieces (the manifest's checksums on a first start, the served copy of
 * what stays in memory), and a table's rows hashed one by one (the row
 * checksums every disk read is held to), at 512 B and 1280 B rows. The
 * variants take turns within each round; a figure is the median of the
 * rounds.
 *
 *   bench_hash [--mib 512] [--rounds 7] */
#include <stdint.h>

#include "bench_util.h"
#include "fs_hash.h"

#define PIECE ((size_t)8 << 20)
#define ROWS_BYTES ((size_t)64 << 20) /* rows hashed per round: beyond the caches, as a table's are */
#define MAX_ROUNDS 64

static const char *isas[] = {"baseline", "avx2", "avx512"};
#define N_ISAS 3

static uint64_t sink; /* keeps the hashes from being optimised away */

static double file_gb_per_s(const unsigned char *buf, size_t len)
{
    double t0 = bench_now();
    fs_hash_t *h = fs_hash_new();
    for (size_t off = 0; off < len; off += PIECE) fs_hash_update(h, buf + off, len - off < PIECE ? len - off : PIECE);
    sink ^= fs_hash_digest(h);
    fs_hash_free(h);
    return (double)len / (bench_now() - t0) / 1e9;
}

static double rows_per_s(const unsigned char *buf, size_t row)
{
    size_t rows = ROWS_BYTES / row;
    double t0 = bench_now();
    for (size_t r = 0; r < rows; r++) sink ^= fs_hash64(buf + r * row, row);
    return (double)rows / (bench_now() - t0);
}

int main(int argc, char **argv)
{
    size_t len = (size_t)bench_arg(argc, argv, "--mib", 512) << 20;
    int rounds = (int)bench_arg(argc, argv, "--rounds", 7);
    if (len < ROWS_BYTES || rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "bench_hash: --mib must be at least %zu and --rounds 1..%d\n", ROWS_BYTES >> 20, MAX_ROUNDS);
        return 2;
    }
    unsigned char *buf = malloc(len);
    if (!buf) {
        fprintf(stderr, "bench_hash: cannot allocate %zu MiB\n", len >> 20);
        return 1;
    }
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < len; i++) x ^= x << 13, x ^= x >> 7, x ^= x << 17, buf[i] = (unsigned char)x;

    const char *chosen = fs_hash_isa(); /* before any fs_hash_use: the default */
    static double file[N_ISAS][MAX_ROUNDS], r512[N_ISAS][MAX_ROUNDS], r1280[N_ISAS][MAX_ROUNDS];
    int have[N_ISAS];
    for (int i = 0; i < N_ISAS; i++) have[i] = fs_hash_use(isas[i]) == 0;
    for (int k = 0; k < rounds; k++)
        for (int i = 0; i < N_ISAS; i++) {
            if (!have[i]) continue;
            fs_hash_use(isas[i]);
            file[i][k] = file_gb_per_s(buf, len);
            r512[i][k] = rows_per_s(buf, 512);
            r1280[i][k] = rows_per_s(buf, 1280);
        }
    double base_file = bench_percentile(file[0], rounds, 0.5), base_512 = bench_percentile(r512[0], rounds, 0.5),
           base_1280 = bench_percentile(r1280[0], rounds, 0.5);
    for (int i = 0; i < N_ISAS; i++) {
        if (!have[i]) {
            printf("bench_hash: %s: not on this CPU or build, skipped\n", isas[i]);
            continue;
        }
        double f = bench_percentile(file[i], rounds, 0.5), a = bench_percentile(r512[i], rounds, 0.5),
               b = bench_percentile(r1280[i], rounds, 0.5);
        printf("RESULT bench=hash isa=%s file_mib=%zu file_gb_per_s=%.2f rows512_per_s=%.0f rows1280_per_s=%.0f "
               "ratio_file_vs_baseline=%.3f ratio_rows512_vs_baseline=%.3f ratio_rows1280_vs_baseline=%.3f\n",
               isas[i], len >> 20, f, a, b, f / base_file, a / base_512, b / base_1280);
    }
    printf("bench_hash: the default here is %s (sink %llx)\n", chosen, (unsigned long long)(sink & 0xf));
    free(buf);
    return 0;
}
