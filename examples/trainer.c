/* trainer.c — an example trainer process: connects to a running featstore
 * (unix:// or grpc://) and runs mini-batches of sample_gather over seeds
 * drawn from the "train" split, the loop a GNN trainer's data loader runs.
 * It checks every batch's shape, then prints
 * one summary line the Quick start demo aggregates:
 *
 *   TRAINER name=... transport=unix batches=... seconds=... batches_per_s=...
 *           rows=... bytes=... p50_ms=... p99_ms=...
 *
 *   featstore-trainer URI [--batches 50] [--batch 1024] [--fanouts 15,10,5]
 *                         [--table feat] [--seed 1] [--name trainer] [--device gpu:N] [--hold]
 *
 * --device says which (simulated) GPU this trainer runs on, so it reads
 * through that GPU's placement (unix:// only).
 *
 * --hold keeps the process (and its mappings) alive after the summary until
 * standard input closes, so a benchmark can measure its memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "featstore/client.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *arg(int argc, char **argv, const char *name, const char *def)
{
    for (int i = 2; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0) return argv[i + 1];
    return def;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: featstore-trainer URI [--batches N] [--batch B] [--fanouts 15,10,5] [--table T] "
                        "[--seed S] [--name NAME]\n");
        return 2;
    }
    int batches = atoi(arg(argc, argv, "--batches", "50")), batch = atoi(arg(argc, argv, "--batch", "1024"));
    const char *table = arg(argc, argv, "--table", "feat"), *name = arg(argc, argv, "--name", "trainer");
    unsigned long long seed = strtoull(arg(argc, argv, "--seed", "1"), NULL, 10);
    fs_sample_req_t req = FS_SAMPLE_REQ_INIT;
    for (char *f = strdup(arg(argc, argv, "--fanouts", "15,10,5")), *tok = strtok(f, ","); tok && req.num_hops < FS_MAX_HOPS;
         tok = strtok(NULL, ","))
        req.fanout[req.num_hops++] = atoi(tok);
    if (batches < 1 || batch < 1 || req.num_hops < 1) {
        fprintf(stderr, "featstore-trainer: bad arguments\n");
        return 2;
    }

    fs_client_t *c;
    fs_info_t *info = NULL;
    fs_connect_opts_t opts = FS_CONNECT_OPTS_INIT;
    opts.device = arg(argc, argv, "--device", NULL);
    if (fs_connect(argv[1], &opts, &c) != FS_OK || fs_info(c, &info) != FS_OK) {
        fprintf(stderr, "featstore-trainer: %s: %s\n", argv[1], fs_client_errstr(c));
        fs_close(c);
        return 1;
    }
    /* Seeds come from the training split, as in training; without one, from every node. */
    fs_ids_t *train = NULL;
    if (fs_split(c, "train", &train) != FS_OK || train->n == 0) {
        fs_ids_free(train);
        train = NULL;
    }
    int64_t n = train ? train->n : info->num_nodes, *seeds = malloc(sizeof *seeds * (size_t)batch);
    double *lat = malloc(sizeof *lat * (size_t)batches), t0 = now();
    long long rows = 0, bytes = 0;
    unsigned long long x = seed * 0x9e3779b97f4a7c15ULL + 1;
    for (int b = 0; b < batches; b++) {
        for (int i = 0; i < batch; i++) { /* xorshift: this trainer's stream of seed nodes */
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            int64_t k = (int64_t)(x % (unsigned long long)n);
            seeds[i] = train ? train->ids[k] : k;
        }
        req.seed = seed * 1000003ULL + (unsigned long long)b;
        fs_batch_t *mb;
        double t = now();
        if (fs_sample_gather(c, seeds, batch, &req, table, FS_DTYPE_F32, &mb) != FS_OK) {
            fprintf(stderr, "featstore-trainer: batch %d: %s\n", b, fs_client_errstr(c));
            return 1;
        }
        lat[b] = now() - t;
        if (mb->rows != mb->num_nodes || !(mb->kind & FS_BATCH_GATHER) || mb->blocks[0].num_dst > batch || mb->num_hops != req.num_hops) {
            fprintf(stderr, "featstore-trainer: batch %d has an inconsistent shape\n", b);
            return 1;
        }
        rows += mb->rows;
        bytes += mb->rows * mb->dim * 4;
        fs_batch_free(mb);
    }
    double secs = now() - t0;
    qsort(lat, (size_t)batches, sizeof *lat, cmp_double);
    printf("TRAINER name=%s transport=%s batches=%d seconds=%.3f batches_per_s=%.2f rows=%lld bytes=%lld p50_ms=%.2f "
           "p99_ms=%.2f\n",
           name, fs_client_transport(c), batches, secs, batches / secs, rows, bytes, lat[batches / 2] * 1e3,
           lat[(int)(0.99 * (batches - 1))] * 1e3);
    int hold = 0;
    for (int i = 2; i < argc; i++) hold |= strcmp(argv[i], "--hold") == 0;
    if (hold) {
        fs_batch_t *keep; /* the last batch stays resident, as in a training step */
        fs_sample_gather(c, seeds, batch, &req, table, FS_DTYPE_F32, &keep);
        printf("HOLD\n");
        fflush(stdout);
        while (getchar() != EOF) {}
        fs_batch_free(keep);
    }
    fs_info_free(info);
    fs_ids_free(train);
    fs_close(c);
    free(seeds);
    free(lat);
    return 0;
}
