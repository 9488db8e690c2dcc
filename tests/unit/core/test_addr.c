/* test_addr.c — addresses are parsed, not guessed (kernels/fs_addr.h): the
 * one parser behind --listen, --metrics, --socket and the client's URIs,
 * table by table. Every good form is checked field by field (host, its
 * kind, port, the gRPC target, the socket path) and parses back from its
 * target; every bad form is refused with FS_ERR_INVALID_ARGUMENT and a
 * message naming the option, the text as given, what is wrong and the form
 * expected. fs_connect refuses the bad URIs the same way, before any
 * transport is tried. The untrusted-bytes cases (control bytes, very long
 * text) run under ASan/UBSan in the sanitizer build. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "featstore/client.h"
#include "fs_addr.h"

typedef struct {
    const char *text;
    fs_host_kind_t host_kind;
    const char *host;
    int port;
    const char *target;
} good_tcp_t;

typedef struct {
    const char *text, *want; /* want: a fragment of the message */
} bad_t;

#define EXPECT_TCP "(expected HOST:PORT or [IPv6]:PORT)"

static const good_tcp_t good_listen[] = {
    {"127.0.0.1:50051", FS_HOST_IPV4, "127.0.0.1", 50051, "127.0.0.1:50051"},
    {"127.0.0.1:0", FS_HOST_IPV4, "127.0.0.1", 0, "127.0.0.1:0"}, /* a server's "any free port" */
    {"0.0.0.0:1", FS_HOST_IPV4, "0.0.0.0", 1, "0.0.0.0:1"},
    {"255.255.255.255:65535", FS_HOST_IPV4, "255.255.255.255", 65535, "255.255.255.255:65535"},
    {"localhost:9464", FS_HOST_NAME, "localhost", 9464, "localhost:9464"},
    {"LocalHost:1", FS_HOST_NAME, "LocalHost", 1, "LocalHost:1"},
    {"feat-store-1.example.com:443", FS_HOST_NAME, "feat-store-1.example.com", 443, "feat-store-1.example.com:443"},
    {"a:2", FS_HOST_NAME, "a", 2, "a:2"},
    {"10.0.0.1a:2", FS_HOST_NAME, "10.0.0.1a", 2, "10.0.0.1a:2"}, /* not all digits: a name */
    {"[::1]:50051", FS_HOST_IPV6, "::1", 50051, "[::1]:50051"},
    {"[::]:0", FS_HOST_IPV6, "::", 0, "[::]:0"},
    {"[fe80::1:2:3:4]:8080", FS_HOST_IPV6, "fe80::1:2:3:4", 8080, "[fe80::1:2:3:4]:8080"},
    {"[::ffff:127.0.0.1]:7", FS_HOST_IPV6, "::ffff:127.0.0.1", 7, "[::ffff:127.0.0.1]:7"},
    {"[2001:db8:0:0:0:0:0:1]:65535", FS_HOST_IPV6, "2001:db8:0:0:0:0:0:1", 65535, "[2001:db8:0:0:0:0:0:1]:65535"},
};

static const bad_t bad_listen[] = {
    {"127.0.0.1:99999", "port 99999 is outside 1..65535 (or 0 for any free port)"},
    {"127.0.0.1:65536", "port 65536 is outside 1..65535"},
    {"127.0.0.1:4294967297", "port 4294967297 is outside 1..65535"}, /* would wrap to 1 in 32 bits */
    {"127.0.0.1:-1", "port '-1' is not a number (digits only)"},
    {"127.0.0.1:+80", "port '+80' is not a number"},
    {"127.0.0.1: 80", "port ' 80' is not a number"},
    {"127.0.0.1:80 ", "port '80 ' is not a number"},
    {"127.0.0.1:80x", "port '80x' is not a number"},
    {"127.0.0.1:0x50", "port '0x50' is not a number"},
    {"127.0.0.1:80/", "port '80/' is not a number"},
    {"127.0.0.1:", "no port after ':'"},
    {"127.0.0.1", "no ':PORT'"},
    {"localhost", "no ':PORT'"},
    {":50051", "the host is empty"},
    {"", "the address is empty"},
    {" 127.0.0.1:80", "host ' 127.0.0.1' has ' ' in it"},
    {"my host:80", "host 'my host' has ' ' in it: a host name has letters, digits, '-' and '.' only"},
    {"host_name:80", "host 'host_name' has '_' in it"},
    {"user@host:80", "has '@' in it"},
    {"*:80", "host '*' has '*' in it"},
    {"-host:80", "has a label that starts or ends with '-'"},
    {"host-.example:80", "has a label that starts or ends with '-'"},
    {"a..b:80", "has an empty label"},
    {".a:80", "has an empty label"},
    {"a.:80", "has an empty label"},
    {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.b:1", "has a label over 63 characters"},
    {"256.0.0.1:80", "host '256.0.0.1' is not an IPv4 address"},
    {"1.2.3:80", "host '1.2.3' is not an IPv4 address"},
    {"1.2.3.4.5:80", "host '1.2.3.4.5' is not an IPv4 address"},
    {"01.2.3.4:80", "no leading zeros"},
    {"1.2.3.1000:80", "is not an IPv4 address"},
    {"::1:50051", "more than one ':' (an IPv6 address goes in brackets, as in [::1]:PORT)"},
    {"fe80::1:80", "more than one ':'"},
    {"host:80:90", "more than one ':'"},
    {"[::1]", "no ':PORT' after ']'"},
    {"[::1]:", "no port after ':'"},
    {"[::1]50051", "'50051' after ']' where ':PORT' belongs"},
    {"[::1]]:80", "']:80' after ']' where ':PORT' belongs"},
    {"[::1:80", "'[' without its ']'"},
    {"::1]:80", "'[' and ']' go around a whole IPv6 address"},
    {"a[::1]:80", "'[' and ']' go around a whole IPv6 address"},
    {"[]:80", "the brackets are empty"},
    {"[127.0.0.1]:80", "'[127.0.0.1]' is not an IPv6 address"},
    {"[localhost]:80", "'[localhost]' is not an IPv6 address"},
    {"[fe80::1%eth0]:80", "is not an IPv6 address"},
    {"[::1]:99999", "port 99999 is outside 1..65535"},
    {"unix:///tmp/fs.sock", "unix sockets are given with --socket PATH"},
    {"unix:/tmp/fs.sock", "unix sockets are given with --socket PATH"},
    {"unix-abstract:fs", "unix sockets are given with --socket PATH"},
    {"grpc://127.0.0.1:1", "'grpc://' is a URI's scheme: give HOST:PORT alone (unix sockets are given with --socket"},
    {"http://127.0.0.1:1", "'http://' is a URI's scheme"},
};

static const bad_t bad_socket[] = {
    {"", "the path is empty"},
    {"unix://", "unix:// is followed by an absolute path"},
    {"unix://relative.sock", "unix:// is followed by an absolute path, as in unix:///tmp/featstore.sock (three slashes)"},
    {"unix://tmp/fs.sock", "unix:// is followed by an absolute path"},
    {"unix:/tmp/fs.sock", "unix: is followed by // and an absolute path"},
    {"unix:", "unix: is followed by // and an absolute path"},
    {"grpc://127.0.0.1:1", "'grpc://' is not a socket: gRPC is given with --listen HOST:PORT"},
    {"grpcs://h:1", "'grpcs://' is not a socket"},
    {"http://x", "'http://' is not a socket's scheme"},
};

typedef struct {
    const char *text;
    fs_addr_kind_t kind;
    int tls;
    const char *host; /* TCP: the host; UNIX: the path */
    int port;
    const char *target;
} good_uri_t;

static const good_uri_t good_uri[] = {
    {"unix:///tmp/featstore-0.sock", FS_ADDR_UNIX, 0, "/tmp/featstore-0.sock", 0, NULL},
    {"unix:///run/featstore dir/s.sock", FS_ADDR_UNIX, 0, "/run/featstore dir/s.sock", 0, NULL},
    {"unix:///", FS_ADDR_UNIX, 0, "/", 0, NULL},
    {"grpc://127.0.0.1:50051", FS_ADDR_TCP, 0, "127.0.0.1", 50051, "127.0.0.1:50051"},
    {"grpc://localhost:1", FS_ADDR_TCP, 0, "localhost", 1, "localhost:1"},
    {"grpc://[::1]:65535", FS_ADDR_TCP, 0, "::1", 65535, "[::1]:65535"},
    {"grpcs://store.example.com:443", FS_ADDR_TCP, 1, "store.example.com", 443, "store.example.com:443"},
    {"grpcs://[2001:db8::7]:8443", FS_ADDR_TCP, 1, "2001:db8::7", 8443, "[2001:db8::7]:8443"},
    {"etcd://127.0.0.1:2379/demo", FS_ADDR_CLUSTER, 0, "127.0.0.1", 2379, "127.0.0.1:2379"},
    {"etcd://etcd.svc:2379/shards_A-1", FS_ADDR_CLUSTER, 0, "etcd.svc", 2379, "etcd.svc:2379"},
};

static const bad_t bad_uri[] = {
    {"", "URI '': no scheme (expected unix:///ABS/PATH, grpc://HOST:PORT, grpcs://HOST:PORT, etcd://HOST:PORT/CLUSTER or "
         "file:/ABS/PATH)"},
    {"file:relative.json", "the map file's path must be absolute (expected file:/ABS/PATH)"},
    {"file:", "the map file's path must be absolute"},
    {"etcd://127.0.0.1:2379", "no /CLUSTER after HOST:PORT (expected etcd://HOST:PORT/CLUSTER)"},
    {"etcd://127.0.0.1:2379/", "cluster name '': 1 to 63 characters"},
    {"etcd://127.0.0.1:2379/a b", "cluster name 'a b': character 2 is not a letter, digit, '_' or '-'"},
    {"etcd://127.0.0.1:0/c", "port 0 is outside 1..65535"},
    {"etcd://:2379/c", "the host is empty"},
    {"/tmp/fs.sock", "no scheme"},
    {"127.0.0.1:50051", "no scheme"},
    {"http://127.0.0.1:80", "unknown scheme 'http://'"},
    {"GRPC://127.0.0.1:80", "unknown scheme 'GRPC://'"},
    {"grpc+tls://h:1", "unknown scheme 'grpc+tls://'"},
    {"unix://relative.sock", "unix:// is followed by an absolute path, as in unix:///tmp/featstore.sock (three slashes) (expected unix:///ABS/PATH)"},
    {"unix://", "unix:// is followed by an absolute path"},
    {"unix:", "unix: is followed by // and an absolute path"},
    {"unix:/tmp/fs.sock", "unix: is followed by // and an absolute path"},
    {"grpc://127.0.0.1:0", "port 0 is outside 1..65535 (expected grpc://HOST:PORT or grpc://[IPv6]:PORT)"},
    {"grpc://127.0.0.1:99999", "port 99999 is outside 1..65535"},
    {"grpcs://127.0.0.1:99999", "(expected grpcs://HOST:PORT or grpcs://[IPv6]:PORT)"},
    {"grpc://127.0.0.1", "no ':PORT'"},
    {"grpc://", "no HOST:PORT"},
    {"grpc://:50051", "the host is empty"},
    {"grpc://127.0.0.1:80/", "'/' follows HOST:PORT: a gRPC URI has no path, query or fragment"},
    {"grpc://127.0.0.1:80/featstore", "'/featstore' follows HOST:PORT"},
    {"grpc://127.0.0.1:80?tls=1", "'?tls=1' follows HOST:PORT"},
    {"grpc://127.0.0.1:80#x", "'#x' follows HOST:PORT"},
    {"grpc://h:80 ", "port '80 ' is not a number"},
    {"grpc://user@h:80", "has '@' in it"},
    {"grpc://::1:80", "more than one ':'"},
    {"grpc://[::1:80", "'[' without its ']'"},
    {"grpc://[::1]", "no ':PORT' after ']'"},
    {"grpcs://[1.2.3.4]:80", "'[1.2.3.4]' is not an IPv6 address"},
};

#define N(a) (sizeof a / sizeof *a)

/* The message's frame: what, the text quoted, and the expected form. */
static void check_refusal(fs_status_t st, const fs_error_t *err, const char *what, const char *text, const char *want,
                          const char *expect)
{
    char head[600];
    snprintf(head, sizeof head, "%s '%s': ", what, text);
    cr_assert_eq(st, FS_ERR_INVALID_ARGUMENT, "%s '%s' was accepted", what, text);
    cr_assert_eq(err->code, FS_ERR_INVALID_ARGUMENT);
    cr_assert(strncmp(err->msg, head, strlen(head)) == 0, "'%s': the message does not start with [%s]: %s", text, head,
              err->msg);
    cr_assert(strstr(err->msg, want), "'%s': want [%s] in: %s", text, want, err->msg);
    if (expect) cr_assert(strstr(err->msg, expect), "'%s': want [%s] in: %s", text, expect, err->msg);
}

Test(addr, good_listen_and_metrics_addresses_are_parsed_field_by_field)
{
    for (size_t i = 0; i < N(good_listen); i++) {
        const good_tcp_t *g = &good_listen[i];
        for (int m = 0; m < 2; m++) {
            fs_addr_t a, back;
            fs_error_t err = {0};
            cr_assert_eq(fs_addr_listen(m ? "--metrics" : "--listen", g->text, &a, &err), FS_OK, "%s: %s", g->text,
                         err.msg);
            cr_assert_eq(a.kind, FS_ADDR_TCP, "%s", g->text);
            cr_assert_eq(a.host_kind, g->host_kind, "%s: host kind %d", g->text, a.host_kind);
            cr_assert_str_eq(a.host, g->host, "%s", g->text);
            cr_assert_eq(a.port, g->port, "%s: port %d", g->text, a.port);
            cr_assert_str_eq(a.target, g->target, "%s", g->text);
            cr_assert_eq(fs_addr_listen("--listen", a.target, &back, &err), FS_OK, "%s: %s", a.target, err.msg);
            cr_assert(back.port == a.port && strcmp(back.host, a.host) == 0, "%s does not parse back", a.target);
        }
    }
}

Test(addr, bad_listen_and_metrics_addresses_are_refused_by_name)
{
    for (size_t i = 0; i < N(bad_listen); i++) {
        for (int m = 0; m < 2; m++) {
            fs_addr_t a;
            fs_error_t err = {0};
            const char *what = m ? "--metrics" : "--listen";
            check_refusal(fs_addr_listen(what, bad_listen[i].text, &a, &err), &err, what, bad_listen[i].text,
                          bad_listen[i].want, EXPECT_TCP);
        }
    }
    fs_addr_t a;
    fs_error_t err = {0};
    cr_assert_eq(fs_addr_listen("--listen", NULL, &a, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "the address is empty"), "%s", err.msg);
}

/* The whole port range at its edges, both ways: a server may ask for 0,
 * a client may not. */
Test(addr, ports_are_1_to_65535_and_0_only_for_a_server)
{
    static const struct {
        const char *port;
        int server, client;
    } ports[] = {{"0", 1, 0}, {"1", 1, 1}, {"65535", 1, 1}, {"65536", 0, 0}, {"99999", 0, 0}, {"100000", 0, 0},
                 {"18446744073709551617", 0, 0}, {"00080", 1, 1}, {"", 0, 0}, {"8o", 0, 0}, {"1e3", 0, 0}};
    for (size_t i = 0; i < N(ports); i++) {
        char listen[64], uri[80];
        fs_addr_t a;
        fs_error_t err = {0};
        snprintf(listen, sizeof listen, "127.0.0.1:%s", ports[i].port);
        snprintf(uri, sizeof uri, "grpc://%s", listen);
        cr_assert_eq(fs_addr_listen("--listen", listen, &a, &err) == FS_OK, ports[i].server, "--listen %s: %s", listen,
                     err.msg);
        if (ports[i].server) cr_assert_eq(a.port, atoi(ports[i].port));
        cr_assert_eq(fs_addr_uri(uri, &a, &err) == FS_OK, ports[i].client, "%s: %s", uri, err.msg);
    }
}

Test(addr, socket_paths_keep_what_the_server_took_and_unix_uris_are_paths_too)
{
    static const struct {
        const char *text, *path;
    } good[] = {{"/tmp/featstore-0.sock", "/tmp/featstore-0.sock"}, {"relative.sock", "relative.sock"},
                {"./dir/s.sock", "./dir/s.sock"}, {"/tmp/with space.sock", "/tmp/with space.sock"},
                {"unix:///tmp/fs.sock", "/tmp/fs.sock"}, {"host:80", "host:80"} /* a file named so: a path */};
    for (size_t i = 0; i < N(good); i++) {
        fs_addr_t a;
        fs_error_t err = {0};
        cr_assert_eq(fs_addr_socket("--socket", good[i].text, &a, &err), FS_OK, "%s: %s", good[i].text, err.msg);
        cr_assert_eq(a.kind, FS_ADDR_UNIX);
        cr_assert_str_eq(a.path, good[i].path);
    }
    for (size_t i = 0; i < N(bad_socket); i++) {
        fs_addr_t a;
        fs_error_t err = {0};
        check_refusal(fs_addr_socket("--socket", bad_socket[i].text, &a, &err), &err, "--socket", bad_socket[i].text,
                      bad_socket[i].want, "(expected a socket PATH or unix:///ABS/PATH)");
    }
}

/* sun_path holds 107 bytes and the NUL: 107 fit, 108 do not, as a path
 * and as a URI. */
Test(addr, socket_paths_longer_than_sun_path_are_refused)
{
    char path[200], uri[220];
    fs_addr_t a;
    fs_error_t err = {0};
    memset(path, 'a', sizeof path);
    path[0] = '/';
    path[107] = '\0';
    snprintf(uri, sizeof uri, "unix://%s", path);
    cr_assert_eq(fs_addr_socket("--socket", path, &a, &err), FS_OK, "%s", err.msg);
    cr_assert_eq(strlen(a.path), 107);
    cr_assert_eq(fs_addr_uri(uri, &a, &err), FS_OK, "%s", err.msg);
    path[107] = 'a', path[108] = '\0';
    snprintf(uri, sizeof uri, "unix://%s", path);
    cr_assert_eq(fs_addr_socket("--socket", path, &a, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "the path is 108 bytes; a unix socket's path has at most 107"), "%s", err.msg);
    cr_assert_eq(fs_addr_uri(uri, &a, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "the path is 108 bytes"), "%s", err.msg);
}

Test(addr, good_uris_are_parsed_field_by_field)
{
    for (size_t i = 0; i < N(good_uri); i++) {
        const good_uri_t *g = &good_uri[i];
        fs_addr_t a;
        fs_error_t err = {0};
        cr_assert_eq(fs_addr_uri(g->text, &a, &err), FS_OK, "%s: %s", g->text, err.msg);
        cr_assert_eq(a.kind, g->kind, "%s", g->text);
        cr_assert_eq(a.tls, g->tls, "%s", g->text);
        if (g->kind == FS_ADDR_UNIX) {
            cr_assert_str_eq(a.path, g->host, "%s", g->text);
            continue;
        }
        cr_assert_str_eq(a.host, g->host, "%s", g->text);
        cr_assert_eq(a.port, g->port, "%s", g->text);
        cr_assert_str_eq(a.target, g->target, "%s", g->text);
        if (g->kind == FS_ADDR_CLUSTER) cr_assert_str_eq(a.cluster, strrchr(g->text, '/') + 1, "%s", g->text);
    }
    static const char *const files[][2] = {{"file:/etc/featstore/cluster.json", "/etc/featstore/cluster.json"},
                                           {"file:///srv/c.json", "/srv/c.json"}};
    for (size_t i = 0; i < N(files); i++) { /* a static cluster's map file */
        fs_addr_t a;
        fs_error_t err = {0};
        cr_assert_eq(fs_addr_uri(files[i][0], &a, &err), FS_OK, "%s: %s", files[i][0], err.msg);
        cr_assert_eq(a.kind, FS_ADDR_CLUSTER);
        cr_assert_str_eq(a.map_file, files[i][1]);
    }
}

Test(addr, bad_uris_are_refused_by_name)
{
    for (size_t i = 0; i < N(bad_uri); i++) {
        fs_addr_t a;
        fs_error_t err = {0};
        check_refusal(fs_addr_uri(bad_uri[i].text, &a, &err), &err, "URI", bad_uri[i].text, bad_uri[i].want, NULL);
        cr_assert(strstr(err.msg, "(expected "), "%s", err.msg);
    }
    fs_addr_t a;
    fs_error_t err = {0};
    cr_assert_eq(fs_addr_uri(NULL, &a, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "no URI given"), "%s", err.msg);
}

/* The client library takes the same parser: the same refusal, in the
 * connection's error string, before any transport runs (nothing listens
 * anywhere in this test). */
Test(addr, fs_connect_refuses_bad_uris_with_the_parser_s_message)
{
    for (size_t i = 0; i < N(bad_uri); i++) {
        fs_client_t *c = NULL;
        fs_status_t st = fs_connect(bad_uri[i].text, NULL, &c);
        cr_assert_eq(st, FS_ERR_INVALID_ARGUMENT, "%s: %s", bad_uri[i].text, fs_client_errstr(c));
        cr_assert(strstr(fs_client_errstr(c), bad_uri[i].want), "%s: want [%s] in: %s", bad_uri[i].text,
                  bad_uri[i].want, fs_client_errstr(c));
        cr_assert_str_eq(fs_client_transport(c), "none");
        fs_close(c);
    }
}

/* Untrusted bytes: control bytes and backslashes are shown escaped, long
 * text is cut short, and the message always fits. */
Test(addr, messages_show_untrusted_bytes_escaped_and_cut_short)
{
    fs_addr_t a;
    fs_error_t err = {0};
    cr_assert_eq(fs_addr_listen("--listen", "h\x01\x7f\\:80", &a, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "--listen 'h\\x01\\x7f\\x5c:80': host 'h\\x01\\x7f\\x5c' has '\\x01' in it"), "%s",
              err.msg);
    cr_assert_eq(fs_addr_uri("grpc://h\xff\xfe:1", &a, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "has '\\xff' in it"), "%s", err.msg);
    char big[5000];
    memset(big, '\x02', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    cr_assert_eq(fs_addr_listen("--listen", big, &a, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "...") && strlen(err.msg) < sizeof err.msg - 1, "%s", err.msg);
    memset(big, 'a', sizeof big - 1);
    memcpy(big + 4000, ":80", 4);
    cr_assert_eq(fs_addr_listen("--listen", big, &a, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "has a label over 63 characters") || strstr(err.msg, "at most 253"), "%s", err.msg);
    memset(big, 'a', 300);
    memcpy(big + 300, ":80", 4);
    for (int i = 60; i < 300; i += 61) big[i] = '.'; /* labels of 60: only the length is wrong */
    cr_assert_eq(fs_addr_listen("--listen", big, &a, &err), FS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.msg, "the host is 300 characters long; a host name has at most 253"), "%s", err.msg);
}
