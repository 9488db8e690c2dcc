/* test_grpc_security.c — who may call a gRPC server (1.1): the bearer token
 * checked on every call (missing, wrong, from $FEATSTORE_TOKEN) and never
 * echoed, token files the server cannot use named; TLS and mTLS with a
 * throw-away PKI (tests/lib/make_test_certs.sh) serving grpcs:// clients, C and
 * Python, and refusing plaintext, untrusted and certificate-less ones, with
 * unusable certificate and key files named; a 1.0 program's smaller
 * fs_connect_opts_t still connecting; and loopback listen addresses told
 * from the rest (serve refuses plaintext gRPC elsewhere without --insecure). */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "featstore/client.h"
#include "fs_wire.h"
#include "grpc_fixture.h"
#include "test_util.h"

TestSuite(grpc, .timeout = 120);
/* ---- security: tokens, TLS, mTLS --------------------------------------------------------- */

#define TOKEN "s3cret-Token_42"

static char *write_file(const env_t *e, const char *name, const char *text)
{
    char *path = tu_path(e->dir, name);
    tu_write(path, text, strlen(text));
    return path;
}

/* A throw-away PKI in dir/pki (tests/lib/make_test_certs.sh). */
static char *make_certs(const char *dir)
{
    if (tu_run(NULL, "command -v openssl") != 0) cr_skip_test("the openssl command is missing (Debian: openssl)");
    char *pki = tu_path(dir, "pki"), *log = NULL;
    int rc = tu_run(&log, "sh %s/make_test_certs.sh %s", FS_TESTS_LIB_DIR, pki);
    cr_assert_eq(rc, 0, "make_test_certs.sh: %s", log);
    free(log);
    return pki;
}

static fs_status_t try_connect(const char *uri, const fs_connect_opts_t *o, char *why, size_t why_size)
{
    fs_client_t *c;
    fs_status_t st = fs_connect(uri, o, &c);
    fs_info_t *info = NULL;
    if (st == FS_OK) st = fs_info(c, &info);
    snprintf(why, why_size, "%s", fs_client_errstr(c));
    fs_info_free(info);
    fs_close(c);
    return st;
}

Test(grpc, a_token_is_checked_on_every_call_and_never_echoed)
{
    env_t e;
    env_open(&e, FS_DTYPE_F32, 16, NULL);
    char *token_file = write_file(&e, "token", TOKEN "\n");
    fs_grpc_server_stop(e.server); /* the same store behind a server that asks for the token */
    fs_grpc_server_opts_t go;
    fs_grpc_server_defaults(&go);
    go.listen = "127.0.0.1:0", go.token_file = token_file;
    fs_error_t err = {0};
    cr_assert_eq(fs_grpc_server_start_opts(&go, e.engine, e.metrics, &e.server, &e.port, &err), FS_OK, "%s", err.msg);
    snprintf(e.uri, sizeof e.uri, "grpc://127.0.0.1:%d", e.port);
    char why[512];
    fs_connect_opts_t o = FS_CONNECT_OPTS_INIT;
    unsetenv("FEATSTORE_TOKEN");
    cr_assert_eq(try_connect(e.uri, &o, why, sizeof why), FS_ERR_PERMISSION);
    cr_assert(strstr(why, "requires a bearer token") && strstr(why, "authorization: Bearer <token>"), "%s", why);
    o.token = "guess-Token_42";
    cr_assert_eq(try_connect(e.uri, &o, why, sizeof why), FS_ERR_PERMISSION);
    cr_assert(strstr(why, "bearer token in 'authorization' is not this server's"), "%s", why);
    cr_assert(!strstr(why, TOKEN) && !strstr(why, "guess"), "no token in the message: %s", why);
    o.token = TOKEN;
    cr_assert_eq(try_connect(e.uri, &o, why, sizeof why), FS_OK, "%s", why);
    o.token = NULL;
    setenv("FEATSTORE_TOKEN", TOKEN, 1);
    cr_assert_eq(try_connect(e.uri, &o, why, sizeof why), FS_OK, "$FEATSTORE_TOKEN: %s", why);
    unsetenv("FEATSTORE_TOKEN");
    /* every call, not only the first: a stream, by a foreign client */
    char details[512];
    const unsigned char v1[] = {0x08, 0x01};
    cr_assert_eq(raw_call(e.port, FS_WIRE_METHOD_GATHER, v1, sizeof v1, details, sizeof details),
                 GRPC_STATUS_UNAUTHENTICATED, "%s", details);
    cr_assert_eq(metric(e.metrics, "featstore_grpc_calls_refused_total{reason=\"unauthenticated\"}"), 3);
    /* a token that cannot travel in a header is refused by the client, unseen */
    o.token = "two words";
    cr_assert_eq(try_connect(e.uri, &o, why, sizeof why), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(why, "character 4 of the token is not visible ASCII") && !strstr(why, "words"), "%s", why);
    /* token files the server cannot use are named */
    fs_grpc_server_t *other = NULL;
    const char *bad[][2] = {{"empty", "\n"}, {"spaced", "a b\n"}};
    const char *says[] = {"the token (its first line) is empty", "character 2 of the token is not visible ASCII"};
    for (int i = 0; i < 2; i++) {
        go.token_file = write_file(&e, bad[i][0], bad[i][1]);
        cr_assert_eq(fs_grpc_server_start_opts(&go, e.engine, e.metrics, &other, NULL, &err), FS_ERR_FORMAT);
        cr_assert(strstr(err.msg, go.token_file) && strstr(err.msg, says[i]), "%s", err.msg);
        cr_assert_null(other);
        free((char *)go.token_file);
    }
    go.token_file = "/nonexistent/token";
    cr_assert_eq(fs_grpc_server_start_opts(&go, e.engine, e.metrics, &other, NULL, &err), FS_ERR_IO);
    cr_assert(strstr(err.msg, "token file '/nonexistent/token'"), "%s", err.msg);
    free(token_file);
    env_close(&e);
}

/* A second server on the same engine, with TLS (and mTLS when client_ca). */
static fs_grpc_server_t *tls_server(env_t *e, const char *pki, int mtls, const char *token_file, char *uri,
                                    size_t uri_size)
{
    char cert[512], key[512], ca[512];
    snprintf(cert, sizeof cert, "%s/server.pem", pki);
    snprintf(key, sizeof key, "%s/server.key", pki);
    snprintf(ca, sizeof ca, "%s/ca.pem", pki);
    fs_grpc_server_opts_t go;
    fs_grpc_server_defaults(&go);
    go.listen = "127.0.0.1:0", go.tls_cert = cert, go.tls_key = key, go.tls_client_ca = mtls ? ca : NULL;
    go.token_file = token_file;
    fs_grpc_server_t *s;
    int port;
    fs_error_t err = {0};
    cr_assert_eq(fs_grpc_server_start_opts(&go, e->engine, e->metrics, &s, &port, &err), FS_OK, "%s", err.msg);
    snprintf(uri, uri_size, "127.0.0.1:%d", port);
    return s;
}

Test(grpc, tls_serves_grpcs_clients_and_refuses_plaintext_and_untrusted_ones)
{
    env_t e;
    env_open(&e, FS_DTYPE_F32, 24, NULL);
    char *pki = make_certs(e.dir), *token_file = write_file(&e, "token", TOKEN), target[64], uri[96], why[512];
    fs_grpc_server_t *tls = tls_server(&e, pki, 0, token_file, target, sizeof target);
    char ca[512], other_ca[512];
    snprintf(ca, sizeof ca, "%s/ca.pem", pki);
    snprintf(other_ca, sizeof other_ca, "%s/other-ca.pem", pki);
    fs_connect_opts_t o = FS_CONNECT_OPTS_INIT;
    o.tls_ca_file = ca, o.token = TOKEN;
    snprintf(uri, sizeof uri, "grpcs://%s", target);
    fs_client_t *c;
    cr_assert_eq(fs_connect(uri, &o, &c), FS_OK, "%s", fs_client_errstr(c));
    int64_t n = 20000;
    int64_t *ids = some_ids(n, e.ds->num_nodes, 5);
    void *want = gather_in_process(&e, "feat", ids, n, FS_DTYPE_F32, 96);
    fs_batch_t *b;
    cr_assert_eq(fs_gather(c, ids, n, "feat", FS_DTYPE_F32, &b), FS_OK, "%s", fs_client_errstr(c));
    cr_assert(memcmp(b->features, want, (size_t)n * 96) == 0, "rows over TLS differ");
    fs_batch_free(b);
    fs_close(c);
    /* the wrong token over TLS, untrusted servers, plaintext to TLS and TLS to plaintext fail cleanly */
    o.token = "guess";
    cr_assert_eq(try_connect(uri, &o, why, sizeof why), FS_ERR_PERMISSION);
    cr_assert(strstr(why, "not this server's"), "%s", why);
    o.token = TOKEN, o.tls_ca_file = other_ca;
    cr_assert_eq(try_connect(uri, &o, why, sizeof why), FS_ERR_UNAVAILABLE);
    cr_assert(strstr(why, "no TLS connection could be made"), "%s", why);
    o.tls_ca_file = NULL; /* gRPC's default roots do not know the test CA */
    unsetenv("FEATSTORE_TLS_CA");
    cr_assert_eq(try_connect(uri, &o, why, sizeof why), FS_ERR_UNAVAILABLE, "%s", why);
    setenv("FEATSTORE_TLS_CA", ca, 1);
    cr_assert_eq(try_connect(uri, &o, why, sizeof why), FS_OK, "$FEATSTORE_TLS_CA: %s", why);
    unsetenv("FEATSTORE_TLS_CA");
    snprintf(uri, sizeof uri, "grpc://%s", target);
    cr_assert_eq(try_connect(uri, &o, why, sizeof why), FS_ERR_UNAVAILABLE, "plaintext to a TLS server");
    cr_assert(strstr(why, "cannot connect"), "%s", why);
    snprintf(uri, sizeof uri, "grpcs://127.0.0.1:%d", e.port);
    o.tls_ca_file = ca;
    cr_assert_eq(try_connect(uri, &o, why, sizeof why), FS_ERR_UNAVAILABLE, "TLS to a plaintext server");
    /* TLS files with a plaintext URI, half a client certificate, a missing CA: told, not ignored */
    snprintf(uri, sizeof uri, "grpc://%s", target);
    cr_assert_eq(try_connect(uri, &o, why, sizeof why), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(why, "is plaintext, but tls_ca_file is set: use grpcs://"), "%s", why);
    snprintf(uri, sizeof uri, "grpcs://%s", target);
    o.tls_cert_file = ca;
    cr_assert_eq(try_connect(uri, &o, why, sizeof why), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(why, "only the certificate is given"), "%s", why);
    o.tls_cert_file = NULL, o.tls_ca_file = "/nonexistent/ca.pem";
    cr_assert_eq(try_connect(uri, &o, why, sizeof why), FS_ERR_IO);
    cr_assert(strstr(why, "CA file '/nonexistent/ca.pem'"), "%s", why);
    fs_grpc_server_stop(tls);
    free(want), free(ids), free(pki), free(token_file);
    env_close(&e);
}

Test(grpc, mtls_requires_a_client_certificate_from_the_ca)
{
    env_t e;
    env_open(&e, FS_DTYPE_F32, 16, NULL);
    char *pki = make_certs(e.dir), target[64], uri[96], why[512], ca[512], cert[512], key[512];
    fs_grpc_server_t *tls = tls_server(&e, pki, 1, NULL, target, sizeof target);
    snprintf(ca, sizeof ca, "%s/ca.pem", pki);
    snprintf(cert, sizeof cert, "%s/client.pem", pki);
    snprintf(key, sizeof key, "%s/client.key", pki);
    snprintf(uri, sizeof uri, "grpcs://%s", target);
    fs_connect_opts_t o = FS_CONNECT_OPTS_INIT;
    o.tls_ca_file = ca;
    cr_assert_eq(try_connect(uri, &o, why, sizeof why), FS_ERR_UNAVAILABLE, "no client certificate");
    cr_assert(strstr(why, "client certificate required"), "%s", why);
    o.tls_cert_file = cert, o.tls_key_file = key;
    cr_assert_eq(try_connect(uri, &o, why, sizeof why), FS_OK, "%s", why);
    fs_grpc_server_stop(tls);
    free(pki);
    env_close(&e);
}

Test(grpc, tls_files_the_server_cannot_use_are_named)
{
    env_t e;
    env_open(&e, FS_DTYPE_F32, 16, NULL);
    char *pki = make_certs(e.dir), *junk = write_file(&e, "junk.pem", "not a key\n"), cert[512], key[512], other[512];
    snprintf(cert, sizeof cert, "%s/server.pem", pki);
    snprintf(key, sizeof key, "%s/server.key", pki);
    snprintf(other, sizeof other, "%s/client.key", pki);
    fs_grpc_server_opts_t go;
    fs_grpc_server_defaults(&go);
    go.listen = "127.0.0.1:0";
    fs_grpc_server_t *s = NULL;
    fs_error_t err = {0};
    go.tls_cert = "/nonexistent/server.pem", go.tls_key = key;
    cr_assert_eq(fs_grpc_server_start_opts(&go, e.engine, e.metrics, &s, NULL, &err), FS_ERR_IO);
    cr_assert(strstr(err.msg, "TLS certificate '/nonexistent/server.pem'"), "%s", err.msg);
    go.tls_cert = cert, go.tls_key = junk;
    cr_assert_eq(fs_grpc_server_start_opts(&go, e.engine, e.metrics, &s, NULL, &err), FS_ERR_FORMAT);
    cr_assert(strstr(err.msg, junk) && strstr(err.msg, "is not PEM"), "%s", err.msg);
    go.tls_key = other; /* a key of another certificate */
    cr_assert_eq(fs_grpc_server_start_opts(&go, e.engine, e.metrics, &s, NULL, &err), FS_ERR_IO);
    cr_assert(strstr(err.msg, "do not belong together"), "%s", err.msg);
    go.tls_cert = NULL, go.tls_key = NULL, go.tls_client_ca = cert;
    cr_assert_eq(fs_grpc_server_start_opts(&go, e.engine, e.metrics, &s, NULL, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "needs TLS"), "%s", err.msg);
    cr_assert_null(s);
    free(pki), free(junk);
    env_close(&e);
}

Test(grpc, tls_and_tokens_as_a_third_party_client_sees_them)
{
    if (tu_run(NULL, "/usr/bin/python3 -c 'import grpc, numpy, google.protobuf' && command -v protoc") != 0)
        cr_skip_test("/usr/bin/python3 lacks grpc, numpy or protobuf, or protoc is missing");
    env_t e;
    env_open(&e, FS_DTYPE_F32, 24, NULL);
    char *pki = make_certs(e.dir), *token_file = write_file(&e, "token", TOKEN), target[64], mtarget[64];
    fs_grpc_server_t *tls = tls_server(&e, pki, 0, token_file, target, sizeof target);
    fs_grpc_server_t *mtls = tls_server(&e, pki, 1, NULL, mtarget, sizeof mtarget);
    const char *py = "/usr/bin/python3 " FS_TESTS_SRC_DIR "/grpc_third_party.py";
    struct {
        const char *target, *args, *expect;
    } runs[] = {
        {target, "--tls-ca %s/ca.pem --token " TOKEN, NULL}, /* every check, over TLS with the token */
        {target, "--tls-ca %s/ca.pem --token wrong-token", "UNAUTHENTICATED"},
        {target, "--tls-ca %s/ca.pem", "UNAUTHENTICATED"},
        {target, "", "UNAVAILABLE"}, /* plaintext to a TLS server */
        {target, "--tls-ca %s/other-ca.pem --token " TOKEN, "UNAVAILABLE"},
        {mtarget, "--tls-ca %s/ca.pem", "UNAVAILABLE"}, /* no client certificate */
        {mtarget, "--tls-ca %s/ca.pem --client-cert %s/client.pem --client-key %s/client.key", "OK"},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        char args[1024], expect[64] = "";
        snprintf(args, sizeof args, runs[i].args, pki, pki, pki);
        if (runs[i].expect) snprintf(expect, sizeof expect, "--expect %s", runs[i].expect);
        char *out = NULL;
        int rc = tu_run(&out, "%s --port %s --dataset %s %s %s", py, strchr(runs[i].target, ':') + 1, e.data, args,
                        expect);
        cr_assert_eq(rc, 0, "run %zu (%s %s) failed (%d):\n%s", i, args, expect, rc, out);
        cr_assert(strstr(out, "third-party client: OK"), "run %zu: %s", i, out);
        free(out);
    }
    fs_grpc_server_stop(mtls);
    fs_grpc_server_stop(tls);
    free(pki), free(token_file);
    env_close(&e);
}

/* A program built against 1.0 passes a 32-byte fs_connect_opts_t: whatever
 * lies past it in its memory must not be read as 1.1's TLS files or token. */
Test(grpc, options_from_a_1_0_program_still_connect)
{
    env_t e;
    env_open(&e, FS_DTYPE_F32, 16, NULL);
    cr_assert_eq(offsetof(fs_connect_opts_t, tls_ca_file), 32, "1.0's fs_connect_opts_t ends at device (LP64)");
    fs_connect_opts_t o;
    memset(&o, 0xab, sizeof o); /* 1.1's fields: garbage a 1.0 program never set */
    o.struct_size = offsetof(fs_connect_opts_t, tls_ca_file);
    o.slots = 0, o.threads = 0, o.timeout_ms = 0, o.device = NULL;
    char why[512];
    cr_assert_eq(try_connect(e.uri, &o, why, sizeof why), FS_OK, "%s", why);
    o.struct_size = 31;
    cr_assert_eq(try_connect(e.uri, &o, why, sizeof why), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(why, "smaller than any version of fs_connect_opts_t (32)"), "%s", why);
    env_close(&e);
}

Test(grpc, loopback_listen_addresses_are_told_from_the_rest)
{
    const char *local[] = {"127.0.0.1:0", "127.3.2.1:50051", "localhost:0", "LocalHost:1", "[::1]:0", "::1:0",
                           "[::ffff:127.0.0.1]:0", "unix:/tmp/x.sock"};
    const char *remote[] = {"0.0.0.0:0", "[::]:0", ":50051", "10.0.0.1:0", "128.0.0.1:0", "example.com:0",
                            "localhost.example.com:0", "[::2]:0", "[::1", "nonsense", ""};
    for (size_t i = 0; i < sizeof local / sizeof *local; i++)
        cr_assert(fs_grpc_listen_is_loopback(local[i]), "%s is loopback", local[i]);
    for (size_t i = 0; i < sizeof remote / sizeof *remote; i++)
        cr_assert(!fs_grpc_listen_is_loopback(remote[i]), "%s is not loopback", remote[i]);
    cr_assert(!fs_grpc_listen_is_loopback(NULL));
}
