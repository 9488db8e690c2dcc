/* abi_probe.c — a trainer as users build one: linked to the SHARED
 * libfeatstore.so and including only the public headers. Driven by
 * tests/package/test_no_grpc_loaded.py (ctest: test_no_grpc_loaded).
 *
 *   abi_probe unix:///PATH [grpc://HOST:PORT]
 *
 * Connects over unix://, reads fs_info and samples + gathers one small
 * batch and, with it still held, prints the shared objects mapped into this
 * process (/proc/self/maps); then, given a grpc:// address, does the same
 * over it; and prints the maps once more at the end.
 * Output, one line each:
 *
 *   MAP <phase> <path>         a mapped file ending in .so or .so.N...
 *   DONE <phase> <what happened>
 *
 * with <phase> "start" (before any connection), "unix", "grpc" or "end". The
 * driver decides what may be mapped when; this program only fails (exit 1,
 * the reason on stderr) when a call does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "featstore/client.h"

static int is_shared_object(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return strstr(base, ".so") != NULL;
}

static void print_maps(const char *phase)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) {
        printf("NOMAPS %s\n", phase);
        return;
    }
    char line[4096], seen[256][512];
    int nseen = 0;
    while (fgets(line, sizeof line, f)) {
        char *path = strchr(line, '/');
        if (!path) continue;
        path[strcspn(path, "\n")] = '\0';
        if (!is_shared_object(path)) continue;
        int dup = 0;
        for (int i = 0; i < nseen && !dup; i++) dup = strcmp(seen[i], path) == 0;
        if (dup) continue;
        if (nseen < 256) snprintf(seen[nseen++], sizeof seen[0], "%s", path);
        printf("MAP %s %s\n", phase, path);
    }
    fclose(f);
    fflush(stdout);
}

/* One connection's worth of work: info, one sample_gather, the maps printed
 * while the batch is held, then everything freed. */
static int exercise(const char *uri, const char *phase)
{
    fs_connect_opts_t opts = FS_CONNECT_OPTS_INIT;
    opts.timeout_ms = 30000;
    fs_client_t *c = NULL;
    fs_status_t st = fs_connect(uri, &opts, &c);
    if (st != FS_OK) {
        fprintf(stderr, "abi_probe: fs_connect(%s): %s: %s\n", uri, fs_strerror(st), c ? fs_client_errstr(c) : "");
        fs_close(c);
        return -1;
    }
    fs_info_t *info = NULL;
    st = fs_info(c, &info);
    if (st != FS_OK || info->num_nodes < 4 || info->num_tables < 1) {
        fprintf(stderr, "abi_probe: fs_info over %s: %s: %s\n", uri, fs_strerror(st), fs_client_errstr(c));
        fs_info_free(info);
        fs_close(c);
        return -1;
    }
    int64_t seeds[4] = {0, 1, info->num_nodes / 2, info->num_nodes - 1};
    fs_sample_req_t req = FS_SAMPLE_REQ_INIT;
    req.num_hops = 2, req.fanout[0] = 10, req.fanout[1] = 5, req.seed = 42;
    fs_batch_t *b = NULL;
    st = fs_sample_gather(c, seeds, 4, &req, info->tables[0].name, FS_DTYPE_INVALID, &b);
    if (st != FS_OK || b->num_seeds != 4 || b->rows != b->num_nodes || b->num_hops != 2) {
        fprintf(stderr, "abi_probe: fs_sample_gather over %s: %s: %s\n", uri, fs_strerror(st), fs_client_errstr(c));
        fs_batch_free(b);
        fs_info_free(info);
        fs_close(c);
        return -1;
    }
    printf("DONE %s transport=%s nodes=%lld rows=%lld dim=%lld table=%s\n", phase, fs_client_transport(c),
           (long long)b->num_nodes, (long long)b->rows, (long long)b->dim, info->tables[0].name);
    print_maps(phase); /* with the connection and its batch still open */
    fs_batch_free(b);
    fs_info_free(info);
    fs_close(c);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: abi_probe unix:///PATH [grpc://HOST:PORT]\n");
        return 2;
    }
    printf("VERSION %s\n", fs_version());
    print_maps("start");
    if (exercise(argv[1], "unix") != 0) return 1;
    if (argc == 3 && exercise(argv[2], "grpc") != 0) return 1;
    print_maps("end");
    return 0;
}
