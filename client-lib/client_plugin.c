/* client_plugin.c — grpc:// and etcd:// for the shared library: libfeatstore.so does
 * not link gRPC; the first grpc:// or etcd:// connection loads libfeatstore-grpc.so
 * (client_grpc*.c, client_cluster.c and gRPC) with dlopen and goes through its constructor.
 * A unix-only trainer therefore never maps gRPC, absl or ssl.
 *
 * Where: next to libfeatstore.so itself (the build tree, or the install's
 * lib directory), then the dynamic linker's search path. The plugin must
 * come from the same release (its version and struct layout are checked):
 * a mismatch is FS_ERR_VERSION naming both. Loaded once per process and
 * never unloaded (gRPC's threads outlive any one connection). */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "client_internal.h"

#define PLUGIN_FILE "libfeatstore-grpc.so." FS_LIB_SOVERSION

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const fs_grpc_plugin_t *plugin;
static fs_status_t load_status; /* why plugin is NULL */
static char load_error[600];

/* This library's directory, from the address of one of its functions. */
static int own_dir(char *dir, size_t len)
{
    Dl_info info;
    if (!dladdr((void *)fs_version, &info) || !info.dli_fname) return -1;
    const char *slash = strrchr(info.dli_fname, '/');
    if (!slash) return -1;
    snprintf(dir, len, "%.*s", (int)(slash - info.dli_fname), info.dli_fname);
    return 0;
}

static void load(void)
{
    char dir[PATH_MAX], path[PATH_MAX + 64];
    void *h = NULL;
    if (own_dir(dir, sizeof dir) == 0) {
        snprintf(path, sizeof path, "%s/%s", dir, PLUGIN_FILE);
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
    if (!h) h = dlopen(PLUGIN_FILE, RTLD_NOW | RTLD_LOCAL);
    load_status = FS_ERR_UNSUPPORTED;
    if (!h) {
        snprintf(load_error, sizeof load_error, "grpc:// needs %s (the gRPC part of libfeatstore), which cannot be "
                 "loaded: %s", PLUGIN_FILE, dlerror());
        return;
    }
    const fs_grpc_plugin_t *p = dlsym(h, FS_GRPC_PLUGIN_SYMBOL);
    if (!p) {
        snprintf(load_error, sizeof load_error, "%s has no %s: not a featstore gRPC plugin", PLUGIN_FILE,
                 FS_GRPC_PLUGIN_SYMBOL);
        return;
    }
    if (strcmp(p->version, FS_LIB_VERSION) != 0 || p->client_size != sizeof(struct fs_client)) {
        load_status = FS_ERR_VERSION;
        snprintf(load_error, sizeof load_error, "%s is from featstore %s, libfeatstore from %s: install both from "
                 "one release", PLUGIN_FILE, p->version, FS_LIB_VERSION);
        return;
    }
    plugin = p;
}

fs_status_t fs_grpc_connect(struct fs_client *c, const char *target, int tls)
{
    pthread_once(&once, load);
    if (!plugin) return fs_client_fail(c, load_status, "%s", load_error);
    return plugin->connect(c, target, tls);
}

fs_status_t fs_cluster_connect(struct fs_client *c, const fs_addr_t *a)
{
    pthread_once(&once, load);
    if (!plugin) return fs_client_fail(c, load_status, "%s", load_error);
    return plugin->cluster_connect(c, a);
}
