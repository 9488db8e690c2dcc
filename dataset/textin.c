/* textin.c — buffered line reading over zlib's gzread, which also passes
 * plain files through unchanged. We check the gzip magic ourselves so that a
 * corrupt ".gz" file is reported as such rather than read as text. */
#include "textin.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#define BUF_SIZE (1u << 20)
#define MAX_LINE (64u << 20)

struct fs_textin {
    char *path;
    gzFile gz;
    int is_gzip;
    char *buf;
    size_t cap, start, end;   /* unread bytes are buf[start..end) */
    int eof;
    int64_t lineno;
    double size;
    fs_error_t err;
};

fs_status_t fs_textin_open(const char *path, fs_textin_t **out, fs_error_t *err)
{
    *out = NULL;
    struct stat st;
    if (stat(path, &st) != 0)
        return fs_error(err, errno == ENOENT ? FS_ERR_NOT_FOUND : FS_ERR_IO, "%s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) return fs_error(err, FS_ERR_IO, "%s: not a regular file", path);
    FILE *f = fopen(path, "rb");
    if (!f) return fs_error(err, FS_ERR_IO, "%s: %s", path, strerror(errno));
    unsigned char magic[2] = {0, 0};
    size_t got = fread(magic, 1, 2, f);
    fclose(f);
    int is_gzip = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    size_t plen = strlen(path);
    if (!is_gzip && plen > 3 && strcmp(path + plen - 3, ".gz") == 0 && st.st_size > 0)
        return fs_error(err, FS_ERR_FORMAT, "%s: named .gz but is not gzip data (bad magic bytes)", path);

    fs_textin_t *t = calloc(1, sizeof *t);
    if (!t) return fs_error(err, FS_ERR_NOMEM, "out of memory");
    t->path = strdup(path);
    t->cap = BUF_SIZE;
    t->buf = malloc(t->cap + 1);
    t->gz = gzopen(path, "rb");
    t->is_gzip = is_gzip;
    t->size = (double)st.st_size;
    if (!t->path || !t->buf || !t->gz) {
        fs_textin_close(t);
        return fs_error(err, FS_ERR_IO, "%s: cannot open", path);
    }
    gzbuffer(t->gz, 1u << 18);
    *out = t;
    return FS_OK;
}

/* Reads more input after the unread bytes; 0 at EOF, -1 on error. */
static int refill(fs_textin_t *t)
{
    if (t->start > 0) {
        memmove(t->buf, t->buf + t->start, t->end - t->start);
        t->end -= t->start;
        t->start = 0;
    }
    if (t->end == t->cap) {
        if (t->cap >= MAX_LINE) {
            fs_error(&t->err, FS_ERR_FORMAT, "%s:%lld: line longer than %u bytes", t->path,
                     (long long)t->lineno + 1, MAX_LINE);
            return -1;
        }
        char *nb = realloc(t->buf, t->cap * 2 + 1);
        if (!nb) {
            fs_error(&t->err, FS_ERR_NOMEM, "out of memory");
            return -1;
        }
        t->buf = nb;
        t->cap *= 2;
    }
    int n = gzread(t->gz, t->buf + t->end, (unsigned)(t->cap - t->end));
    if (n < 0) {
        int zerr;
        const char *msg = gzerror(t->gz, &zerr);
        fs_error(&t->err, FS_ERR_FORMAT, "%s: corrupt %s input near line %lld: %s", t->path,
                 t->is_gzip ? "gzip" : "", (long long)t->lineno + 1, msg);
        return -1;
    }
    if (n == 0) {
        int zerr;
        const char *msg = gzerror(t->gz, &zerr);
        if (zerr != Z_OK && zerr != Z_STREAM_END) {
            fs_error(&t->err, FS_ERR_FORMAT, "%s: corrupt gzip input near line %lld: %s", t->path,
                     (long long)t->lineno + 1, msg);
            return -1;
        }
        t->eof = 1;
        return 0;
    }
    t->end += (size_t)n;
    return 1;
}

char *fs_textin_line(fs_textin_t *t, size_t *len)
{
    if (t->err.code != FS_OK) return NULL;
    size_t scan = t->start;
    for (;;) {
        char *nl = memchr(t->buf + scan, '\n', t->end - scan);
        if (nl) {
            char *line = t->buf + t->start;
            size_t n = (size_t)(nl - line);
            if (n > 0 && line[n - 1] == '\r') n--;
            line[n] = '\0';
            t->start = (size_t)(nl - t->buf) + 1;
            t->lineno++;
            if (len) *len = n;
            return line;
        }
        if (t->eof) break;
        size_t consumed = t->end - t->start;
        int r = refill(t);
        if (r < 0) return NULL;
        scan = t->start + consumed;
        if (r == 0) break;
    }
    if (t->start == t->end) return NULL; /* clean end */
    char *line = t->buf + t->start;      /* last line without newline */
    size_t n = t->end - t->start;
    if (n > 0 && line[n - 1] == '\r') n--;
    line[n] = '\0';
    t->start = t->end;
    t->lineno++;
    if (len) *len = n;
    return line;
}

fs_status_t fs_textin_error(fs_textin_t *t, fs_error_t *err)
{
    if (t->err.code == FS_OK) return FS_OK;
    if (err) *err = t->err;
    return t->err.code;
}

int64_t fs_textin_lineno(const fs_textin_t *t) { return t->lineno; }
const char *fs_textin_path(const fs_textin_t *t) { return t->path; }

double fs_textin_fraction(fs_textin_t *t)
{
    if (t->size <= 0) return -1;
    double off = t->is_gzip ? (double)gzoffset(t->gz) : (double)gztell(t->gz);
    return off / t->size;
}

void fs_textin_close(fs_textin_t *t)
{
    if (!t) return;
    if (t->gz) gzclose(t->gz);
    free(t->buf);
    free(t->path);
    free(t);
}

static void skip_sep(char **p)
{
    while (**p == ' ' || **p == '\t' || **p == ',') (*p)++;
}

int fs_parse_i64(char **p, int64_t *out)
{
    skip_sep(p);
    char *s = *p;
    int neg = 0;
    if (*s == '-' || *s == '+') neg = *s++ == '-';
    if (*s < '0' || *s > '9') return -1;
    uint64_t v = 0;
    while (*s >= '0' && *s <= '9') {
        uint64_t d = (uint64_t)(*s++ - '0');
        if (v > (UINT64_MAX - d) / 10) return -1;
        v = v * 10 + d;
    }
    if (*s == '.') { /* "3.0" written by pandas: accept an all-zero fraction */
        s++;
        while (*s == '0') s++;
        if (*s >= '1' && *s <= '9') return -1;
    }
    if (*s && *s != ' ' && *s != '\t' && *s != ',') return -1;
    if (v > (uint64_t)INT64_MAX + (uint64_t)neg) return -1;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    *p = s;
    return 0;
}

int fs_parse_f32(char **p, float *out)
{
    skip_sep(p);
    char *e;
    errno = 0;
    float v = strtof(*p, &e);
    if (e == *p || (*e && *e != ' ' && *e != '\t' && *e != ',')) return -1;
    *out = v;
    *p = e;
    return 0;
}

int fs_parse_at_end(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == ',') p++;
    return *p == '\0';
}
