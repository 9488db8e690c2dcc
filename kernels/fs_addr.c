/* fs_addr.c — see fs_addr.h. One scanner behind every address featstore
 * reads, so the server and the client accept exactly the same forms and
 * refuse the rest in the same words. The text is split by hand: no sscanf
 * or strtol, which skip spaces, take signs and wrap values (a port of 99999
 * once became 34463). Each part (scheme, host, port, path) is checked by a
 * small function that says what is wrong with it, and every refusal goes
 * through refuse(), which names the option and the text as given (escaped:
 * the bytes may be anything) and the form that was expected. Nothing is
 * resolved, bound or connected here, so a server can refuse a bad address
 * before it loads a dataset or starts a listener. */
#include "fs_addr.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>

_Static_assert(sizeof(((struct sockaddr_un *)0)->sun_path) == FS_ADDR_PATH_MAX, "FS_ADDR_PATH_MAX is sun_path's size");

#define EXPECT_TCP "HOST:PORT or [IPv6]:PORT"
#define EXPECT_SOCKET "a socket PATH or unix:///ABS/PATH"
#define EXPECT_URI "unix:///ABS/PATH, grpc://HOST:PORT, grpcs://HOST:PORT, etcd://HOST:PORT/CLUSTER or file:/ABS/PATH"
#define EXPECT_UNIX "unix:///ABS/PATH"

/* What is being parsed, for the messages. */
typedef struct {
    const char *what;   /* "--listen", "URI", ... */
    const char *text;   /* the whole text as given */
    const char *expect; /* the form(s) expected */
    fs_error_t *err;
} ctx_t;

/* s[0..n) for a message: printable ASCII as it is, other bytes (and '\')
 * as \xNN, and a long text cut short with "...". */
static const char *shown(const char *s, size_t n, char *buf, size_t size)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (o + 8 > size) {
            memcpy(buf + o, "...", 4);
            return buf;
        }
        if (ch >= 0x20 && ch < 0x7f && ch != '\\') buf[o++] = (char)ch;
        else o += (size_t)snprintf(buf + o, size - o, "\\x%02x", ch);
    }
    buf[o] = '\0';
    return buf;
}

static int starts(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* "<what> '<text>': <problem> (expected <form>)", FS_ERR_INVALID_ARGUMENT. */
__attribute__((format(printf, 2, 3))) static fs_status_t refuse(const ctx_t *c, const char *fmt, ...)
{
    char problem[320], text[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(problem, sizeof problem, fmt, ap);
    va_end(ap);
    return fs_error(c->err, FS_ERR_INVALID_ARGUMENT, "%s '%s': %s (expected %s)", c->what,
                    shown(c->text, strlen(c->text), text, sizeof text), problem, c->expect);
}

/* ---- ports and hosts ------------------------------------------------------------- */

/* Digits only, 1..65535 (0 too where allow0: a server's "any free port"). */
static fs_status_t parse_port(const ctx_t *c, const char *s, int allow0, int *port)
{
    char sh[48];
    size_t n = strlen(s);
    long v = 0;
    if (n == 0) return refuse(c, "no port after ':'");
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return refuse(c, "port '%s' is not a number (digits only)", shown(s, n, sh, sizeof sh));
        if (v <= 65535) v = v * 10 + (s[i] - '0'); /* stops growing once out of range: no wrap */
    }
    if (v > 65535 || (v == 0 && !allow0))
        return refuse(c, "port %s is outside 1..65535%s", shown(s, n, sh, sizeof sh),
                      allow0 ? " (or 0 for any free port)" : "");
    *port = (int)v;
    return FS_OK;
}

/* Four numbers 0..255 separated by dots, no leading zeros (which some
 * parsers read as octal). */
static int is_ipv4(const char *s, size_t n)
{
    size_t i = 0;
    for (int part = 0; part < 4; part++) {
        size_t start = i;
        int v = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9' && i - start < 3) v = v * 10 + (s[i++] - '0');
        size_t len = i - start;
        if (len == 0 || v > 255 || (len > 1 && s[start] == '0')) return 0;
        if (part < 3 && (i >= n || s[i++] != '.')) return 0;
    }
    return i == n;
}

static int only_digits_and_dots(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!(s[i] == '.' || (s[i] >= '0' && s[i] <= '9'))) return 0;
    return 1;
}

static int name_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.';
}

/* RFC 1123: labels of 1..63 letters, digits and '-' (not first or last),
 * dots between them, 253 characters at most. */
static fs_status_t check_name(const ctx_t *c, const char *s, size_t n)
{
    char sh[96], bad[8];
    for (size_t i = 0; i < n; i++)
        if (!name_char(s[i]))
            return refuse(c, "host '%s' has '%s' in it: a host name has letters, digits, '-' and '.' only",
                          shown(s, n, sh, sizeof sh), shown(s + i, 1, bad, sizeof bad));
    if (n > FS_ADDR_HOST_MAX) return refuse(c, "the host is %zu characters long; a host name has at most %d", n,
                                            FS_ADDR_HOST_MAX);
    size_t label = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '.') {
            if (++label > 63) return refuse(c, "host '%s' has a label over 63 characters", shown(s, n, sh, sizeof sh));
            continue;
        }
        if (label == 0)
            return refuse(c, "host '%s' has an empty label (a '.' at either end, or two together)",
                          shown(s, n, sh, sizeof sh));
        if (s[i - label] == '-' || s[i - 1] == '-')
            return refuse(c, "host '%s' has a label that starts or ends with '-'", shown(s, n, sh, sizeof sh));
        label = 0;
    }
    return FS_OK;
}

/* A host outside brackets: a dotted quad, or a name. */
static fs_status_t check_host(const ctx_t *c, const char *s, size_t n, fs_addr_t *out)
{
    char sh[96];
    if (n == 0) return refuse(c, "the host is empty");
    if (only_digits_and_dots(s, n)) {
        if (!is_ipv4(s, n))
            return refuse(c, "host '%s' is not an IPv4 address (four numbers 0..255 separated by dots, no leading "
                          "zeros)", shown(s, n, sh, sizeof sh));
        out->host_kind = FS_HOST_IPV4;
    } else {
        fs_status_t st = check_name(c, s, n);
        if (st != FS_OK) return st;
        out->host_kind = FS_HOST_NAME;
    }
    memcpy(out->host, s, n);
    out->host[n] = '\0';
    return FS_OK;
}

/* What is inside [ ]: an IPv6 address, as inet_pton reads one. */
static fs_status_t check_ipv6(const ctx_t *c, const char *s, size_t n, fs_addr_t *out)
{
    char sh[96], buf[INET6_ADDRSTRLEN];
    struct in6_addr a;
    if (n == 0) return refuse(c, "the brackets are empty");
    if (n >= sizeof buf) return refuse(c, "'[%s]' is not an IPv6 address", shown(s, n, sh, sizeof sh));
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (inet_pton(AF_INET6, buf, &a) != 1)
        return refuse(c, "'[%s]' is not an IPv6 address", shown(s, n, sh, sizeof sh));
    memcpy(out->host, buf, n + 1);
    out->host_kind = FS_HOST_IPV6;
    return FS_OK;
}

/* [IPv6]:PORT; *colon is left at the ':' before the port. */
static fs_status_t split_bracketed(const ctx_t *c, const char *s, fs_addr_t *out, const char **colon)
{
    char sh[48];
    const char *close = strchr(s, ']');
    if (!close) return refuse(c, "'[' without its ']'");
    fs_status_t st = check_ipv6(c, s + 1, (size_t)(close - s - 1), out);
    if (st != FS_OK) return st;
    if (close[1] == '\0') return refuse(c, "no ':PORT' after ']'");
    if (close[1] != ':')
        return refuse(c, "'%s' after ']' where ':PORT' belongs", shown(close + 1, strlen(close + 1), sh, sizeof sh));
    *colon = close + 1;
    return FS_OK;
}

/* HOST:PORT; *colon is left at the ':' before the port. */
static fs_status_t split_plain(const ctx_t *c, const char *s, fs_addr_t *out, const char **colon)
{
    if (strpbrk(s, "[]")) return refuse(c, "'[' and ']' go around a whole IPv6 address, as in [::1]:PORT");
    const char *first = strchr(s, ':');
    if (!first) return refuse(c, "no ':PORT'");
    if (strchr(first + 1, ':'))
        return refuse(c, "more than one ':' (an IPv6 address goes in brackets, as in [::1]:PORT)");
    *colon = first;
    return check_host(c, s, (size_t)(first - s), out);
}

static fs_status_t parse_hostport(const ctx_t *c, const char *s, int allow0, fs_addr_t *out)
{
    const char *colon = NULL;
    if (!*s) return refuse(c, "no HOST:PORT");
    fs_status_t st = s[0] == '[' ? split_bracketed(c, s, out, &colon) : split_plain(c, s, out, &colon);
    if (st == FS_OK) st = parse_port(c, colon + 1, allow0, &out->port);
    if (st != FS_OK) return st;
    int v6 = out->host_kind == FS_HOST_IPV6;
    snprintf(out->target, sizeof out->target, "%s%s%s:%d", v6 ? "[" : "", out->host, v6 ? "]" : "", out->port);
    out->kind = FS_ADDR_TCP;
    return FS_OK;
}

/* ---- unix socket paths ------------------------------------------------------------ */

static fs_status_t check_path(const ctx_t *c, const char *p, fs_addr_t *out)
{
    size_t n = strlen(p);
    if (n == 0) return refuse(c, "the path is empty");
    if (n >= FS_ADDR_PATH_MAX)
        return refuse(c, "the path is %zu bytes; a unix socket's path has at most %d", n, FS_ADDR_PATH_MAX - 1);
    memcpy(out->path, p, n + 1);
    out->kind = FS_ADDR_UNIX;
    return FS_OK;
}

/* What follows "unix://": an absolute path (so three slashes in all). */
static fs_status_t unix_path(const ctx_t *c, const char *rest, fs_addr_t *out)
{
    if (rest[0] != '/')
        return refuse(c, "unix:// is followed by an absolute path, as in unix:///tmp/featstore.sock (three slashes)");
    return check_path(c, rest, out);
}

/* "x://..." (or "unix:..."): the scheme's text, for messages. */
static const char *scheme_of(const char *s, char *buf, size_t size)
{
    const char *sep = strstr(s, "://");
    return shown(s, sep ? (size_t)(sep - s) + 3 : strcspn(s, ":") + 1, buf, size);
}

/* ---- the entry points -------------------------------------------------------------- */

fs_status_t fs_addr_listen(const char *what, const char *text, fs_addr_t *out, fs_error_t *err)
{
    ctx_t c = {what, text ? text : "", EXPECT_TCP, err};
    char sh[48];
    memset(out, 0, sizeof *out);
    if (!text || !*text) return refuse(&c, "the address is empty");
    if (starts(text, "unix:") || starts(text, "unix-abstract:"))
        return refuse(&c, "unix sockets are given with --socket PATH");
    if (strstr(text, "://"))
        return refuse(&c, "'%s' is a URI's scheme: give HOST:PORT alone (unix sockets are given with --socket PATH)",
                      scheme_of(text, sh, sizeof sh));
    return parse_hostport(&c, text, 1, out);
}

fs_status_t fs_addr_socket(const char *what, const char *text, fs_addr_t *out, fs_error_t *err)
{
    ctx_t c = {what, text ? text : "", EXPECT_SOCKET, err};
    char sh[48];
    memset(out, 0, sizeof *out);
    if (!text || !*text) return refuse(&c, "the path is empty");
    if (starts(text, "unix://")) return unix_path(&c, text + 7, out);
    if (starts(text, "unix:")) return refuse(&c, "unix: is followed by // and an absolute path (three slashes)");
    if (starts(text, "grpc://") || starts(text, "grpcs://"))
        return refuse(&c, "'%s' is not a socket: gRPC is given with --listen HOST:PORT", scheme_of(text, sh, sizeof sh));
    if (strstr(text, "://")) return refuse(&c, "'%s' is not a socket's scheme", scheme_of(text, sh, sizeof sh));
    return check_path(&c, text, out);
}

/* What follows grpc:// or grpcs://: HOST:PORT and nothing more. */
static fs_status_t grpc_target(const ctx_t *c, const char *rest, fs_addr_t *out)
{
    char sh[64];
    const char *tail = strpbrk(rest, "/?#");
    if (tail)
        return refuse(c, "'%s' follows HOST:PORT: a gRPC URI has no path, query or fragment",
                      shown(tail, strlen(tail), sh, sizeof sh));
    return parse_hostport(c, rest, 0, out);
}

fs_status_t fs_cluster_name_check(const char *name, fs_error_t *err)
{
    size_t n = name ? strlen(name) : 0;
    char sh[96]; /* the name as given, escaped and cut for the message */
    shown(name ? name : "", n, sh, sizeof sh);
    if (n == 0 || n > FS_CLUSTER_NAME_MAX)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "cluster name '%s': 1 to %d characters", sh,
                        FS_CLUSTER_NAME_MAX);
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return fs_error(err, FS_ERR_INVALID_ARGUMENT,
                            "cluster name '%s': character %zu is not a letter, digit, '_' or '-'", sh, i + 1);
    }
    return FS_OK;
}

/* etcd's HOST:PORT, then '/' and the cluster's name. */
static fs_status_t cluster_target(const ctx_t *c, const char *rest, fs_addr_t *out)
{
    const char *slash = strchr(rest, '/');
    char hostport[FS_ADDR_HOST_MAX + 10];
    if (!slash || (size_t)(slash - rest) >= sizeof hostport) return refuse(c, "no /CLUSTER after HOST:PORT");
    snprintf(hostport, sizeof hostport, "%.*s", (int)(slash - rest), rest);
    fs_status_t st = parse_hostport(c, hostport, 0, out);
    if (st != FS_OK) return st;
    fs_error_t why;
    if (fs_cluster_name_check(slash + 1, &why) != FS_OK) return refuse(c, "%s", why.msg);
    out->kind = FS_ADDR_CLUSTER;
    snprintf(out->cluster, sizeof out->cluster, "%s", slash + 1);
    return FS_OK;
}

fs_status_t fs_addr_uri(const char *text, fs_addr_t *out, fs_error_t *err)
{
    ctx_t c = {"URI", text ? text : "", EXPECT_URI, err};
    char sh[48];
    memset(out, 0, sizeof *out);
    if (!text) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "no URI given (expected %s)", EXPECT_URI);
    if (starts(text, "unix:")) {
        c.expect = EXPECT_UNIX;
        if (!starts(text, "unix://")) return refuse(&c, "unix: is followed by // and an absolute path (three slashes)");
        return unix_path(&c, text + 7, out);
    }
    int tls = starts(text, "grpcs://");
    if (tls || starts(text, "grpc://")) {
        c.expect = tls ? "grpcs://HOST:PORT or grpcs://[IPv6]:PORT" : "grpc://HOST:PORT or grpc://[IPv6]:PORT";
        out->tls = tls;
        return grpc_target(&c, text + (tls ? 8 : 7), out);
    }
    if (starts(text, "etcd://")) {
        c.expect = "etcd://HOST:PORT/CLUSTER";
        return cluster_target(&c, text + 7, out);
    }
    if (starts(text, "file:")) { /* a static cluster's map: file:/ABS/PATH (or file:///ABS/PATH) */
        c.expect = "file:/ABS/PATH";
        const char *path = text + 5;
        if (starts(path, "///")) path += 2;
        if (path[0] != '/') return refuse(&c, "the map file's path must be absolute");
        if (strlen(path) >= FS_ADDR_FILE_MAX)
            return refuse(&c, "the path is %zu bytes; at most %d", strlen(path), FS_ADDR_FILE_MAX - 1);
        out->kind = FS_ADDR_CLUSTER;
        snprintf(out->map_file, sizeof out->map_file, "%s", path);
        return FS_OK;
    }
    if (strstr(text, "://")) return refuse(&c, "unknown scheme '%s'", scheme_of(text, sh, sizeof sh));
    return refuse(&c, "no scheme");
}
