/* client_grpc.c — the grpc:// transport: featstore.proto over gRPC's C core.
 * This file opens and closes connections: the channel and its
 * credentials, the token, gRPC started in a process that may fork, and the
 * table of the transport's operations, whose methods are its siblings
 * (client_grpc_internal.h maps them).
 *
 * Security: grpcs:// is gRPC's SSL channel credentials (the server checked
 * against tls_ca_file or gRPC's default roots; a client certificate for
 * mTLS); grpc:// is plaintext and refuses TLS files rather than ignore them.
 * A token goes out as `authorization: Bearer <token>` initial metadata on
 * every call. Each option falls back to its environment variable
 * (client.h); a token is never written into an error message.
 *
 * Fork: a forked child's fs_close leaves the inherited channel to the
 * parent (g_close), and the child can open a channel of its own only if
 * gRPC was not running in the parent when it forked (grpc_start).
 *
 * Built into the static library, and on its own into libfeatstore-grpc.so,
 * which the shared library loads on the first grpc:// connection
 * (client_internal.h); the plugin exports only FS_GRPC_PLUGIN_SYMBOL. */
#include <grpc/grpc_security.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_grpc_internal.h"

#define CONNECT_TIMEOUT_MS 10000
#define MAX_TOKEN_BYTES 4096

/* ---- starting gRPC, closing ------------------------------------------------------ */

/* gRPC's threads (timers, executor) start with grpc_init and exist only in
 * the process that started them. A process forked while gRPC was running
 * (a connection open, or a gRPC server in the same process) inherits
 * gRPC's state without them: a channel made there never connects, not even
 * by its deadline, whose timer thread is gone. A fork handler notes whether
 * gRPC was running at the fork, and such a child's connections are refused
 * at once, with the reason, rather than left to hang. A child forked while
 * gRPC was not running starts its own. The handler is installed by the
 * process's first grpc:// connection: forks before it are not watched. The
 * Python binding closes its grpc:// connections before os.fork, so that
 * its children can connect (client-lib/python/featstore/client.py). */
static pthread_once_t watch_once = PTHREAD_ONCE_INIT;
static int running_at_fork; /* fork_prepare's reading, in the forking process */
static pid_t forking_pid;
static pid_t forked_from;   /* in a child forked while gRPC ran: its parent; else 0 */

static void fork_prepare(void)
{
    running_at_fork = grpc_is_initialized(); /* every thread still exists here: its lock is safe to take */
    forking_pid = getpid();
}

static void fork_child(void)
{
    if (running_at_fork) forked_from = forking_pid;
}

static void watch_forks(void) { pthread_atfork(fork_prepare, NULL, fork_child); }

static fs_status_t grpc_start(fs_client_t *c, const char *scheme)
{
    pthread_once(&watch_once, watch_forks);
    if (forked_from)
        return fs_client_fail(c, FS_ERR_UNSUPPORTED, "%s:// cannot connect in process %ld: it was forked from process "
                              "%ld while that was running gRPC, whose threads do not survive fork() (a channel here "
                              "would never connect). Fork while no grpc:// connection is open (close them first; the "
                              "Python binding does), start workers with spawn, or use unix://", scheme,
                              (long)getpid(), (long)forked_from);
    grpc_init();
    return FS_OK;
}

static void conn_destroy(conn_t *k)
{
    if (k->channel) grpc_channel_destroy(k->channel);
    if (k->cq) {
        grpc_completion_queue_shutdown(k->cq);
        while (grpc_completion_queue_next(k->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
               GRPC_QUEUE_SHUTDOWN) {
        }
        grpc_completion_queue_destroy(k->cq);
    }
    if (k->rows_cache) fs_gc_cache_close(k->rows_cache);
    fs_gc_hot_free(k->hot);
    if (k->has_auth) grpc_slice_unref(k->auth.value);
    free(k);
    grpc_shutdown(); /* pairs with fs_grpc_connect's grpc_start */
}

/* In a forked child the channel and queue are left alone: gRPC's threads,
 * which they depend on, exist only in the opener, and shutting them down
 * here could wait forever. Only the child's plain memory is freed. */
static void g_close(fs_client_t *c)
{
    conn_t *k = c->impl;
    c->impl = NULL;
    if (!k) return;
    if (!fs_client_foreign(c)) {
        conn_destroy(k);
        return;
    }
    if (k->rows_cache) fs_gc_cache_close(k->rows_cache);
    fs_gc_hot_free(k->hot);
    free(k);
}

/* A closed stream's connection may serve the next one as it is: batches
 * own their memory (the row cache is reference counted), and a channel
 * broken since reconnects by itself or fails the call as UNAVAILABLE,
 * which a stream meets by connecting anew (stream.c, reconnect). */
static int g_idle(fs_client_t *c)
{
    return c->impl != NULL;
}

static const fs_transport_ops_t grpc_ops = {
    .name = "grpc",
    .info = fs_gc_info,
    .sample = fs_gc_sample,
    .gather = fs_gc_gather,
    .sample_gather = fs_gc_sample_gather,
    .stats = fs_gc_stats,
    .split = fs_gc_split,
    .hetero = fs_gc_hetero,
    .epoch_open = fs_gc_epoch_open,
    .epoch_next = fs_gc_epoch_next,
    .epoch_close = fs_gc_epoch_close,
    .close = g_close,
    .idle = g_idle,
};

/* ---- connecting ---------------------------------------------------------------- */

/* Waits until the channel is connected; a refused or unreachable server
 * shows as TRANSIENT_FAILURE at once. */
static fs_status_t wait_connected(fs_client_t *c, conn_t *k)
{
    /* timeout_ms is meant for calls; a tiny one must not make connecting fail */
    int ms = c->opts.timeout_ms > CONNECT_TIMEOUT_MS ? c->opts.timeout_ms : CONNECT_TIMEOUT_MS;
    gpr_timespec deadline = fs_gc_deadline_in(ms);
    grpc_connectivity_state state = grpc_channel_check_connectivity_state(k->channel, 1);
    while (state != GRPC_CHANNEL_READY) {
        if (state == GRPC_CHANNEL_TRANSIENT_FAILURE || state == GRPC_CHANNEL_SHUTDOWN)
            return fs_client_fail(c, FS_ERR_UNAVAILABLE, "%s://%s: cannot connect: %s", k->scheme, k->target,
                                  strcmp(k->scheme, "grpcs") == 0
                                      ? "no TLS connection could be made (no server there, a server without TLS, a "
                                        "certificate not signed by the trusted CA or not for this host name, or a "
                                        "client certificate required)"
                                      : "no featstore server answers there (refused or unreachable; or a server that "
                                        "wants TLS: grpcs://)");
        grpc_channel_watch_connectivity_state(k->channel, state, deadline, k->cq, TAG_CONNECT);
        if (!fs_gc_wait_tag(k))
            return fs_client_fail(c, FS_ERR_UNAVAILABLE, "%s://%s: cannot connect: no connection within %d ms",
                                  k->scheme, k->target, ms);
        state = grpc_channel_check_connectivity_state(k->channel, 0);
    }
    return FS_OK;
}

/* An option, or its environment variable when the option is unset (client.h). */
static const char *opt_or_env(const char *opt, const char *env)
{
    if (opt) return opt;
    const char *v = getenv(env);
    return v && v[0] ? v : NULL;
}

/* A PEM file (certificates, a key), whole, into a string the caller frees. */
static fs_status_t read_pem(fs_client_t *c, const char *path, const char *what, char **out)
{
    fs_error_t err = {0};
    fs_status_t st = fs_wire_read_pem(path, what, "-----BEGIN ", out, &err);
    return st == FS_OK ? FS_OK : fs_client_fail(c, st, "grpcs://: %s", err.msg);
}

/* Plaintext for grpc://; for grpcs:// TLS with the CA, and the client's
 * certificate and key when given (mTLS). */
static fs_status_t channel_credentials(fs_client_t *c, const char *target, int tls, grpc_channel_credentials **out)
{
    const fs_connect_opts_t *o = &c->opts;
    *out = NULL;
    if (!tls) {
        const char *set = o->tls_ca_file ? "tls_ca_file" : o->tls_cert_file ? "tls_cert_file"
                        : o->tls_key_file ? "tls_key_file" : NULL;
        if (set)
            return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "grpc://%s is plaintext, but %s is set: use grpcs://%s "
                                  "for TLS", target, set, target);
        *out = grpc_insecure_credentials_create();
        return FS_OK;
    }
    const char *ca = opt_or_env(o->tls_ca_file, "FEATSTORE_TLS_CA");
    const char *cert = opt_or_env(o->tls_cert_file, "FEATSTORE_TLS_CERT");
    const char *key = opt_or_env(o->tls_key_file, "FEATSTORE_TLS_KEY");
    if (!cert != !key)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "grpcs://%s: a client certificate needs its private key and "
                              "a key its certificate (tls_cert_file and tls_key_file, or $FEATSTORE_TLS_CERT and "
                              "$FEATSTORE_TLS_KEY): only the %s is given", target, cert ? "certificate" : "key");
    char *ca_pem = NULL, *cert_pem = NULL, *key_pem = NULL;
    fs_status_t st = ca ? read_pem(c, ca, "CA file", &ca_pem) : FS_OK;
    if (st == FS_OK && cert) st = read_pem(c, cert, "client certificate", &cert_pem);
    if (st == FS_OK && key) st = read_pem(c, key, "client key", &key_pem);
    if (st == FS_OK) {
        grpc_ssl_pem_key_cert_pair pair = {.private_key = key_pem, .cert_chain = cert_pem};
        *out = grpc_ssl_credentials_create(ca_pem, cert_pem ? &pair : NULL, NULL, NULL);
        if (!*out) st = fs_client_fail(c, FS_ERR_INTERNAL, "grpcs://%s: gRPC refused the TLS settings", target);
    }
    free(ca_pem);
    free(cert_pem);
    fs_wire_free_secret(key_pem);
    return st;
}

/* The token (option or $FEATSTORE_TOKEN) as the metadata every call sends.
 * It must fit an HTTP/2 header; the message never shows it. */
static fs_status_t set_token(fs_client_t *c, conn_t *k)
{
    const char *token = opt_or_env(c->opts.token, "FEATSTORE_TOKEN");
    if (!token) return FS_OK;
    size_t n = strlen(token);
    if (n == 0 || n > MAX_TOKEN_BYTES)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "the token is %s", n ? "longer than 4096 bytes" : "empty");
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)token[i] < 0x21 || (unsigned char)token[i] > 0x7e)
            return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "character %zu of the token is not visible ASCII (a "
                                  "token travels in an HTTP/2 header)", i + 1);
    char *value = malloc(n + 8);
    if (!value) return fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    snprintf(value, n + 8, "Bearer %s", token);
    k->auth.key = grpc_slice_from_static_string("authorization");
    k->auth.value = grpc_slice_from_copied_string(value);
    k->has_auth = 1;
    fs_wire_free_secret(value);
    return FS_OK;
}

fs_status_t fs_grpc_connect(struct fs_client *c, const char *target, int tls)
{
    const char *scheme = tls ? "grpcs" : "grpc";
    if (!target) return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "%s:// needs host:port", scheme);
    if (!target[0] || strlen(target) >= sizeof ((conn_t *)0)->target)
        return fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "%s:// needs host:port (got '%s')", scheme, target);
    conn_t *k = calloc(1, sizeof *k);
    if (!k) return fs_client_fail(c, FS_ERR_NOMEM, "out of memory");
    if (grpc_start(c, scheme) != FS_OK) {
        free(k);
        return FS_ERR_UNSUPPORTED;
    }
    snprintf(k->target, sizeof k->target, "%s", target);
    k->scheme = scheme;
    grpc_arg args[FS_WIRE_MAX_ARGS];
    grpc_channel_args chargs = {.num_args = fs_wire_channel_args(args, -1, 0), .args = args};
    grpc_channel_credentials *creds = NULL;
    fs_status_t st = set_token(c, k);
    if (st == FS_OK) st = channel_credentials(c, target, tls, &creds);
    if (st == FS_OK) {
        k->channel = grpc_channel_create(target, creds, &chargs);
        grpc_channel_credentials_release(creds);
    }
    k->cq = grpc_completion_queue_create_for_next(NULL);
    k->rows_cache = fs_gc_cache_new();
    if (st == FS_OK)
        st = !k->rows_cache ? fs_client_fail(c, FS_ERR_NOMEM, "out of memory")
           : k->channel    ? wait_connected(c, k)
                           : fs_client_fail(c, FS_ERR_INVALID_ARGUMENT, "%s://%s: not a valid target", scheme, target);
    if (st != FS_OK) {
        conn_destroy(k);
        return st;
    }
    c->impl = k;
    c->ops = &grpc_ops;
    return FS_OK;
}

#ifdef FS_GRPC_PLUGIN
/* The plugin's one exported symbol (client_internal.h). */
__attribute__((visibility("default"))) const fs_grpc_plugin_t fs_grpc_plugin_v1 = {
    .version = FS_LIB_VERSION,
    .client_size = sizeof(struct fs_client),
    .connect = fs_grpc_connect,
    .cluster_connect = fs_cluster_connect,
};
#endif
