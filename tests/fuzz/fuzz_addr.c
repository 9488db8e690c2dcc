/* fuzz_addr.c — libFuzzer harness for the address parser (kernels/fs_addr.c):
 * --listen, --metrics and --socket values and client URIs, which come from
 * command lines, --config files and trainers' code.
 *
 * Byte 0 % 3 picks the entry point: 0 fs_addr_listen, 1 fs_addr_socket,
 * 2 fs_addr_uri; the rest is the text (cut at its first NUL, as C reads it).
 * An accepted etcd:// URI has etcd's host and port as above and a valid
 * cluster name, and is made again from them to the same; a file: URI an
 * absolute path that fits.
 * Beyond "no crash": an accepted TCP address has a host of its kind (a name
 * of letters, digits, '-' and '.'; a dotted quad; an IPv6 address that
 * inet_pton reads) and a port in range (0 only for a server), and its
 * target parses back to the same host and port; an accepted socket path is
 * the end of the text, non-empty and shorter than sun_path. A refusal is
 * FS_ERR_INVALID_ARGUMENT with a message that names the option and the
 * expected form, fits, and is printable ASCII whatever the input bytes. */
#include <arpa/inet.h>

#include "fs_addr.h"
#include "fuzz_common.h"

static void check_refusal(fs_status_t st, const fs_error_t *err, const char *what)
{
    FUZZ_CHECK_REFUSAL(st, *err);
    FUZZ_CHECK(st == FS_ERR_INVALID_ARGUMENT, "status %d", (int)st);
    FUZZ_CHECK(strncmp(err->msg, what, strlen(what)) == 0, "the message does not name %s: %s", what, err->msg);
    FUZZ_CHECK(strstr(err->msg, "(expected ") != NULL, "no expected form: %s", err->msg);
    size_t n = strlen(err->msg);
    FUZZ_CHECK(n < sizeof err->msg - 1, "the message was cut: %s", err->msg);
    for (size_t i = 0; i < n; i++)
        FUZZ_CHECK(err->msg[i] >= 0x20 && err->msg[i] < 0x7f, "byte %zu of the message is 0x%02x", i,
                   (unsigned char)err->msg[i]);
}

static void check_host(const fs_addr_t *a)
{
    size_t n = strlen(a->host);
    FUZZ_CHECK(n > 0 && n <= FS_ADDR_HOST_MAX, "host of %zu characters", n);
    struct in_addr v4;
    struct in6_addr v6;
    if (a->host_kind == FS_HOST_IPV6) {
        FUZZ_CHECK(inet_pton(AF_INET6, a->host, &v6) == 1, "IPv6 host '%s'", a->host);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        char ch = a->host[i];
        FUZZ_CHECK((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
                   ch == '.', "host '%s' has byte 0x%02x", a->host, (unsigned char)ch);
    }
    FUZZ_CHECK(a->host[0] != '.' && a->host[0] != '-' && a->host[n - 1] != '.' && !strstr(a->host, ".."),
               "host '%s' has an empty or '-' label edge", a->host);
    if (a->host_kind == FS_HOST_IPV4) FUZZ_CHECK(inet_pton(AF_INET, a->host, &v4) == 1, "IPv4 host '%s'", a->host);
    else FUZZ_CHECK(a->host_kind == FS_HOST_NAME, "host kind %d", a->host_kind);
}

/* The target parses back to the same address, through the same entry. */
static void check_tcp(const fs_addr_t *a, int server)
{
    FUZZ_CHECK(a->kind == FS_ADDR_TCP, "kind %d", a->kind);
    FUZZ_CHECK(a->port >= (server ? 0 : 1) && a->port <= 65535, "port %d", a->port);
    check_host(a);
    char again[sizeof a->target + 16];
    snprintf(again, sizeof again, "%s%s", server ? "" : a->tls ? "grpcs://" : "grpc://", a->target);
    fs_addr_t b;
    fs_error_t err = {0};
    fs_status_t st = server ? fs_addr_listen("--listen", again, &b, &err) : fs_addr_uri(again, &b, &err);
    FUZZ_CHECK(st == FS_OK, "'%s' does not parse back: %s", again, err.msg);
    FUZZ_CHECK(b.port == a->port && b.tls == a->tls && b.host_kind == a->host_kind && strcmp(b.host, a->host) == 0 &&
               strcmp(b.target, a->target) == 0, "'%s' parses back to another address", again);
}

/* An etcd:// cluster: etcd's host and port as a client URI's, a valid
 * name, and the URI made again from them parses to the same. */
static void check_cluster(const fs_addr_t *a)
{
    fs_error_t err = {0};
    if (a->map_file[0]) { /* file:/ABS/PATH */
        FUZZ_CHECK(a->map_file[0] == '/' && strlen(a->map_file) < FS_ADDR_FILE_MAX, "map file '%s'", a->map_file);
        return;
    }
    FUZZ_CHECK(a->port >= 1 && a->port <= 65535, "port %d", a->port);
    check_host(a);
    FUZZ_CHECK(fs_cluster_name_check(a->cluster, &err) == FS_OK, "cluster name '%s': %s", a->cluster, err.msg);
    char again[sizeof a->target + sizeof a->cluster + 16];
    snprintf(again, sizeof again, "etcd://%s/%s", a->target, a->cluster);
    fs_addr_t b;
    FUZZ_CHECK(fs_addr_uri(again, &b, &err) == FS_OK, "'%s' does not parse back: %s", again, err.msg);
    FUZZ_CHECK(b.kind == FS_ADDR_CLUSTER && b.port == a->port && strcmp(b.host, a->host) == 0 &&
               strcmp(b.cluster, a->cluster) == 0, "'%s' parses back to another address", again);
}

static void check_unix(const fs_addr_t *a, const char *text)
{
    size_t n = strlen(a->path), t = strlen(text);
    FUZZ_CHECK(a->kind == FS_ADDR_UNIX, "kind %d", a->kind);
    FUZZ_CHECK(n > 0 && n < FS_ADDR_PATH_MAX, "path of %zu bytes", n);
    FUZZ_CHECK(n <= t && strcmp(text + t - n, a->path) == 0, "path '%s' is not the end of the text", a->path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_bytes_t in = {data, size};
    int which = fuzz_take_u8(&in) % 3;
    char *text = malloc(in.n + 1);
    if (!text) return 0;
    memcpy(text, in.p, in.n);
    text[in.n] = '\0';
    fs_addr_t a;
    fs_error_t err = {0};
    static const char *const what[3] = {"--listen", "--socket", "URI"};
    fs_status_t st = which == 0   ? fs_addr_listen("--listen", text, &a, &err)
                     : which == 1 ? fs_addr_socket("--socket", text, &a, &err)
                                  : fs_addr_uri(text, &a, &err);
    if (st != FS_OK) check_refusal(st, &err, what[which]);
    else if (a.kind == FS_ADDR_UNIX) check_unix(&a, text);
    else if (a.kind == FS_ADDR_CLUSTER) check_cluster(&a);
    else check_tcp(&a, which == 0);
    FUZZ_CHECK(st != FS_OK || which == 2 || a.kind != FS_ADDR_CLUSTER, "a server address gave a cluster");
    FUZZ_CHECK(st != FS_OK || which != 1 || a.kind == FS_ADDR_UNIX, "--socket gave a TCP address");
    free(text);
    return 0;
}
