/* pkg_probe.c — a program built the way users build against an installed
 * libfeatstore (pkg-config featstore), for test_install_venv.py and
 * test_deb.py. For each URI it connects, reads fs_info and gathers rows 0..2
 * of "feat"; then it prints which libfeatstore and which gRPC plugin it
 * mapped, so the test can check they are the installed ones.
 *
 *   pkg_probe URI...      prints LIB path, per URI "NODES uri n dim", PLUGIN path|none
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <featstore/client.h>

/* The gRPC plugin is dlopen'ed: only the process's mappings say which file. */
static void print_plugin(void)
{
    char line[4096];
    FILE *f = fopen("/proc/self/maps", "r");
    while (f && fgets(line, sizeof line, f)) {
        char *p = strchr(line, '/');
        if (p && strstr(p, "libfeatstore-grpc.so")) {
            printf("PLUGIN %s", p);
            fclose(f);
            return;
        }
    }
    if (f) fclose(f);
    printf("PLUGIN none\n");
}

int main(int argc, char **argv)
{
    Dl_info where;
    if (!dladdr((void *)fs_version, &where) || !where.dli_fname) return 1;
    printf("LIB %s\nVERSION %s\n", where.dli_fname, fs_version());
    for (int i = 1; i < argc; i++) {
        fs_connect_opts_t opts = FS_CONNECT_OPTS_INIT;
        opts.timeout_ms = 10000;
        fs_client_t *c = NULL;
        fs_info_t *info = NULL;
        fs_batch_t *b = NULL;
        const int64_t ids[3] = {0, 1, 2};
        fs_status_t st = fs_connect(argv[i], &opts, &c);
        if (st == FS_OK) st = fs_info(c, &info);
        if (st == FS_OK) st = fs_gather(c, ids, 3, "feat", FS_DTYPE_F32, &b);
        if (st != FS_OK) {
            fprintf(stderr, "%s: %s: %s\n", argv[i], fs_strerror(st), c ? fs_client_errstr(c) : "");
            fs_close(c);
            return 1;
        }
        printf("NODES %s %lld %lld\n", argv[i], (long long)info->num_nodes, (long long)b->dim);
        fs_batch_free(b);
        fs_info_free(info);
        fs_close(c);
    }
    print_plugin();
    return 0;
}
