/* bench_common.c — see bench_common.h. */
#include "bench_common.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_util.h"
#include "gen.h"

const char *bench_dataset(int argc, char **argv, int scale) { return bench_dataset_rmat(argc, argv, scale, 16, 0, 1); }

const char *bench_dataset_dim(int argc, char **argv, int scale, int dim)
{
    return bench_dataset_rmat(argc, argv, scale, 16, dim, 1);
}

const char *bench_dataset_rmat(int argc, char **argv, int scale, int edge_factor, int dim, int symmetrize)
{
    const char *dir = bench_str(argc, argv, "--dataset", NULL);
    if (dir) return dir;
    static char path[256];
    snprintf(path, sizeof path, "/tmp/featstore-bench/rmat-s%d-e%d%s-d%d", scale, edge_factor, symmetrize ? "-sym" : "",
             dim);
    char manifest[300];
    snprintf(manifest, sizeof manifest, "%s/manifest.json", path);
    struct stat st;
    if (stat(manifest, &st) == 0) return path;
    mkdir("/tmp/featstore-bench", 0755);
    fs_rmat_opts_t o;
    fs_rmat_defaults(&o);
    o.out_dir = path, o.scale = scale, o.edge_factor = edge_factor, o.dim = dim, o.force = 1;
    o.edges.symmetrize = o.edges.dedup = symmetrize;
    fs_error_t err = {0};
    if (fs_gen_rmat(&o, &err) != FS_OK) {
        fprintf(stderr, "bench: %s\n", err.msg);
        exit(1);
    }
    return path;
}

void bench_spawn(bench_child_t *c, const char *cmd)
{
    int out[2], in[2];
    if (pipe2(out, O_CLOEXEC) || pipe2(in, O_CLOEXEC)) exit(1); /* children must not inherit each other's pipes */
    if ((c->pid = fork()) == 0) {
        dup2(out[1], 1), dup2(in[0], 0);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(out[1]), close(in[0]);
    c->out = fdopen(out[0], "r");
    c->in = in[1];
}

int bench_wait_line(bench_child_t *c, const char *word, char *line, size_t len)
{
    while (fgets(line, (int)len, c->out))
        if (strstr(line, word)) return 0;
    return -1;
}

const char *bench_typed_dataset(int scale, int edge_factor)
{
    static char dir[256];
    snprintf(dir, sizeof dir, "/tmp/featstore-bench/typed-s%d-e%d", scale, edge_factor);
    struct stat st;
    if (stat(dir, &st) == 0) return dir;
    mkdir("/tmp/featstore-bench", 0755);
    fs_rmat_opts_t o;
    fs_rmat_defaults(&o);
    o.out_dir = dir, o.name = "bench-typed", o.scale = scale, o.edge_factor = edge_factor, o.dim = 0, o.threads = 2;
    fs_error_t err = {0};
    fprintf(stderr, "bench: generating %s\n", dir);
    if (fs_gen_rmat_typed(&o, &err) != FS_OK) {
        fprintf(stderr, "bench: %s\n", err.msg);
        exit(1);
    }
    return dir;
}
