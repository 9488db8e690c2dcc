/* bench_propagate.c — pre-propagation's products (kernels/fs_propagate.h,
 * docs/algorithms.md §8) against scipy.sparse in the same run:
 *
 *   ours    X_0 -> c ⊙ X_0, then R products y = B x with
 *           B = D~^-1/2 (A+I) D~^-1/2 at --threads threads, each hop's rows
 *           stored into an N x dim float32 output (as `propagate` stores a
 *           table) and c ⊙ X_r into the next ping-pong buffer.
 *   scipy   Debian's python3-scipy on /usr/bin/python3: the same B built
 *           as a float32 CSR matrix from the dataset's own .npy files
 *           (indptr, indices, table_feat), then R times y = B @ y
 *           (csr @ dense, one thread: scipy has no other).
 *
 * Both time only the products, after loading (scipy's B is built before
 * its clock starts; so are our scales); each takes the best of --rounds.
 * The graph is R-MAT, symmetrised and deduplicated (bench_dataset_rmat), so
 * "as stored" is A on both sides and both do exactly the same product. A
 * check: the sum and the sum of squares of X_R (in float64) must agree to
 * 1e-4 relative, or the bench says so and exits 1.
 *
 *   bench_propagate [--scale 20] [--dim 128] [--hops 3] [--threads 2]
 *                   [--rounds 3] [--dataset DIR]
 *
 * Prints `RESULT bench=propagate graph=rmat-s20 dim=128 hops=3 threads=2
 * seconds=... ratio_vs_scipy=...` (ratio = scipy seconds / ours), then
 * scipy_seconds, edges, and GB/s of rows read by ours. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"
#include "bench_util.h"
#include "dataset.h"
#include "fs_propagate.h"

static const char *const scipy_script =
    "import sys, time\n"
    "import numpy as np\n"
    "import scipy.sparse as sp\n"
    "d, hops, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])\n"
    "ip = np.load(d + '/indptr.npy'); ix = np.load(d + '/indices.npy'); x = np.load(d + '/table_feat.npy')\n"
    "n = ip.shape[0] - 1\n"
    "a = sp.csr_matrix((np.ones(ix.shape[0], np.float32), ix, ip), shape=(n, n))\n"
    "a = (a + sp.identity(n, dtype=np.float32, format='csr')).tocsr()\n"
    "deg = np.asarray(a.sum(axis=1), dtype=np.float64).ravel()\n"
    "s = sp.diags((1.0 / np.sqrt(deg)).astype(np.float32))\n"
    "b = (s @ a @ s).tocsr().astype(np.float32)\n"
    "x = np.ascontiguousarray(x, dtype=np.float32)\n"
    "best = float('inf')\n"
    "for r in range(rounds):\n"
    "    t = time.perf_counter(); y = x\n"
    "    for h in range(hops): y = b @ y\n"
    "    best = min(best, time.perf_counter() - t)\n"
    "print('SCIPY seconds=%.6f nnz=%d sum=%.17g sumsq=%.17g' % (best, b.nnz, float(y.sum(dtype=np.float64)),\n"
    "      float(np.square(y, dtype=np.float64).sum())))\n";

typedef struct {
    float *y;                  /* N x dim: the hop's X rows */
    int64_t dim;
} store_t;

static void store_rows(void *ctx, int64_t b, int64_t e, const float *rows, int worker)
{
    (void)worker;
    store_t *s = ctx;
    memcpy(s->y + b * s->dim, rows, (size_t)(e - b) * (size_t)s->dim * sizeof(float));
}

/* R hops from the table; returns seconds; *y holds X_R. */
static double run_ours(const fs_dataset_t *ds, const fs_table_t *t, const fs_prop_scales_t *sc, int hops, int threads,
                       float *za, float *zb, float *y)
{
    fs_prop_graph_t g = {.num_nodes = ds->num_nodes, .indptr = ds->indptr, .indices = ds->indices,
                         .index_dtype = ds->index_dtype};
    store_t st = {y, t->dim};
    fs_prop_pass_t p = {.graph = &g, .scales = sc, .dim = t->dim, .threads = threads, .sink = store_rows, .sink_ctx = &st};
    fs_error_t err = {0};
    int stopped = 0;
    double t0 = bench_now();
    fs_status_t s = fs_prop_start(&p, t->data, t->dtype, za, &stopped, &err);
    for (int r = 1; r <= hops && s == FS_OK; r++) {
        s = fs_prop_hop(&p, za, r < hops ? zb : NULL, &stopped, &err);
        float *tmp = za;
        za = zb, zb = tmp;
    }
    double dt = bench_now() - t0;
    if (s != FS_OK) {
        fprintf(stderr, "bench_propagate: %s\n", err.msg);
        exit(1);
    }
    return dt;
}

/* Runs the scipy side; 0 and its figures, or -1 (printed why). */
static int run_scipy(const char *dir, int hops, int rounds, double *seconds, double *sum, double *sumsq, long long *nnz)
{
    char path[] = "/tmp/bench_propagate_XXXXXX.py";
    int fd = mkstemps(path, 3);
    if (fd < 0 || write(fd, scipy_script, strlen(scipy_script)) != (ssize_t)strlen(scipy_script)) return -1;
    close(fd);
    char cmd[1024], line[512];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s %d %d 2>&1", path, dir, hops, rounds);
    FILE *p = popen(cmd, "r");
    int found = 0;
    while (p && fgets(line, sizeof line, p)) {
        if (sscanf(line, "SCIPY seconds=%lf nnz=%lld sum=%lf sumsq=%lf", seconds, nnz, sum, sumsq) == 4) found = 1;
        else fprintf(stderr, "scipy: %s", line);
    }
    if (p) pclose(p);
    unlink(path);
    return found ? 0 : -1;
}

int main(int argc, char **argv)
{
    int scale = (int)bench_arg(argc, argv, "--scale", 20), dim = (int)bench_arg(argc, argv, "--dim", 128);
    int hops = (int)bench_arg(argc, argv, "--hops", 3), threads = (int)bench_arg(argc, argv, "--threads", 2);
    int rounds = (int)bench_arg(argc, argv, "--rounds", 3);
    const char *dir = bench_dataset_rmat(argc, argv, scale, 16, dim, 1);
    fs_dataset_t *ds;
    fs_error_t err = {0};
    if (fs_dataset_open(dir, 0, 0, &ds, &err) != FS_OK || !fs_dataset_table(ds, "feat")) {
        fprintf(stderr, "bench_propagate: %s: %s\n", dir, err.msg[0] ? err.msg : "no table feat");
        return 1;
    }
    fs_dataset_prefault(ds);
    const fs_table_t *t = fs_dataset_table(ds, "feat");
    fs_prop_graph_t g = {.num_nodes = ds->num_nodes, .indptr = ds->indptr, .indices = ds->indices,
                         .index_dtype = ds->index_dtype};
    fs_prop_scales_t sc;
    if (fs_prop_scales_make(&g, FS_PROP_SYM, 1, &sc, &err) != FS_OK) return 1;
    size_t floats = (size_t)ds->num_nodes * (size_t)t->dim;
    float *za = fs_prop_buffer(floats), *zb = fs_prop_buffer(floats), *y = fs_prop_buffer(floats);
    if (!za || !zb || !y) return 1;
    memset(za, 0, floats * sizeof(float)), memset(zb, 0, floats * sizeof(float)), memset(y, 0, floats * sizeof(float));
    double ours = INFINITY;
    for (int r = 0; r < rounds; r++) {
        double dt = run_ours(ds, t, &sc, hops, threads, za, zb, y);
        fprintf(stderr, "ours: round %d: %.3f s\n", r, dt);
        ours = dt < ours ? dt : ours;
    }
    double sum = 0, sumsq = 0;
    for (size_t i = 0; i < floats; i++) sum += y[i], sumsq += (double)y[i] * y[i];
    double py_s, py_sum, py_sumsq;
    long long nnz = 0;
    int64_t edges = ds->indptr[ds->num_nodes];
    double gb = (double)hops * (double)(edges + ds->num_nodes) * (double)t->dim * sizeof(float) / 1e9;
    if (run_scipy(dir, hops, rounds, &py_s, &py_sum, &py_sumsq, &nnz) != 0) {
        printf("RESULT bench=propagate graph=rmat-s%d dim=%d hops=%d threads=%d seconds=%.3f ratio_vs_scipy=nan "
               "note=no-scipy edges=%lld gbps=%.2f\n", scale, dim, hops, threads, ours, (long long)edges, gb / ours);
        return 0;
    }
    int agree = fabs(sum - py_sum) <= 1e-4 * fabs(py_sum) + 1e-6 && fabs(sumsq - py_sumsq) <= 1e-4 * py_sumsq + 1e-6;
    fprintf(stderr, "check: sum %.9g vs scipy %.9g, sum of squares %.9g vs %.9g: %s\n", sum, py_sum, sumsq, py_sumsq,
            agree ? "agree" : "DIFFER");
    printf("RESULT bench=propagate graph=rmat-s%d dim=%d hops=%d threads=%d seconds=%.3f ratio_vs_scipy=%.2f "
           "scipy_seconds=%.3f edges=%lld gbps=%.2f\n", scale, dim, hops, threads, ours, py_s / ours, py_s,
           (long long)edges, gb / ours);
    free(za), free(zb), free(y);
    fs_prop_scales_free(&sc);
    fs_dataset_close(ds);
    return agree ? 0 : 1;
}
