/* fs_npy.c — the .npy header, core because the dataset and a cluster's
 * trainer both read it. The header is a Python dict literal; numpy writes
 * it in one fixed style, but users may hand-write files, so the parser accepts
 * any key order and spacing while staying strict about what it understands.
 * Every length is checked against the buffer before it is used. */
#include "fs_npy.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct { const char *descr; fs_dtype_t dt; } descr_map[] = {
    {"|b1", FS_DTYPE_BOOL}, {"|i1", FS_DTYPE_I8},  {"|u1", FS_DTYPE_U8},
    {"<i1", FS_DTYPE_I8},   {"<u1", FS_DTYPE_U8},  {"<i2", FS_DTYPE_I16},
    {"<u2", FS_DTYPE_U16},  {"<i4", FS_DTYPE_I32}, {"<u4", FS_DTYPE_U32},
    {"<i8", FS_DTYPE_I64},  {"<u8", FS_DTYPE_U64}, {"<f2", FS_DTYPE_F16},
    {"<f4", FS_DTYPE_F32},  {"<f8", FS_DTYPE_F64},
};

static const char *descr_of(fs_dtype_t dt)
{
    if (dt == FS_DTYPE_BF16) return "<u2"; /* numpy has no bfloat16: raw bits */
    for (size_t i = 0; i < sizeof descr_map / sizeof descr_map[0]; i++)
        if (descr_map[i].dt == dt && descr_map[i].descr[0] != '|') return descr_map[i].descr;
    if (dt == FS_DTYPE_BOOL) return "|b1";
    if (dt == FS_DTYPE_I8) return "|i1";
    if (dt == FS_DTYPE_U8) return "|u1";
    return "";
}

/* Finds 'key' in the dict text and returns a pointer just past its colon. */
static const char *find_key(const char *dict, const char *key)
{
    char pat[32];
    snprintf(pat, sizeof pat, "'%s'", key);
    const char *p = strstr(dict, pat);
    if (!p) {
        snprintf(pat, sizeof pat, "\"%s\"", key);
        p = strstr(dict, pat);
    }
    if (!p) return NULL;
    p += strlen(pat);
    while (isspace((unsigned char)*p)) p++;
    if (*p != ':') return NULL;
    p++;
    while (isspace((unsigned char)*p)) p++;
    return p;
}

static fs_status_t parse_descr(const char *dict, const char *what, fs_npy_header_t *out,
                               fs_error_t *err)
{
    const char *p = find_key(dict, "descr");
    if (!p || (*p != '\'' && *p != '"'))
        return fs_error(err, FS_ERR_FORMAT, "%s: npy header has no 'descr' string", what);
    char q = *p++;
    const char *end = strchr(p, q);
    if (!end || end - p >= (ptrdiff_t)sizeof out->descr)
        return fs_error(err, FS_ERR_FORMAT, "%s: npy header 'descr' is malformed", what);
    memcpy(out->descr, p, (size_t)(end - p));
    out->descr[end - p] = '\0';
    for (size_t i = 0; i < sizeof descr_map / sizeof descr_map[0]; i++)
        if (strcmp(out->descr, descr_map[i].descr) == 0) out->dtype = descr_map[i].dt;
    if (out->dtype != FS_DTYPE_INVALID) return FS_OK;
    if (out->descr[0] == '>' && out->descr[1] != '\0' && strchr("iuf", out->descr[1]))
        return fs_error(err, FS_ERR_UNSUPPORTED, "%s: big-endian dtype '%s' is not supported "
                        "(convert with arr.astype(arr.dtype.newbyteorder('<')))", what, out->descr);
    if (strcmp(out->descr, "|O") == 0)
        return fs_error(err, FS_ERR_UNSUPPORTED, "%s: object array (pickled Python objects) "
                        "cannot be read", what);
    return fs_error(err, FS_ERR_UNSUPPORTED, "%s: dtype '%s' is not supported", what, out->descr);
}

static fs_status_t parse_shape(const char *dict, const char *what, fs_npy_header_t *out,
                               fs_error_t *err)
{
    const char *p = find_key(dict, "shape");
    if (!p || *p != '(') return fs_error(err, FS_ERR_FORMAT, "%s: npy header has no 'shape' tuple", what);
    p++;
    out->ndim = 0;
    for (;;) {
        while (isspace((unsigned char)*p)) p++;
        if (*p == ')') break;
        if (!isdigit((unsigned char)*p))
            return fs_error(err, FS_ERR_FORMAT, "%s: npy header 'shape' is malformed", what);
        errno = 0;
        char *e;
        long long v = strtoll(p, &e, 10);
        if (errno || v < 0) return fs_error(err, FS_ERR_FORMAT, "%s: npy shape value out of range", what);
        if (out->ndim == FS_NPY_MAX_DIMS)
            return fs_error(err, FS_ERR_UNSUPPORTED, "%s: arrays of more than %d dimensions are not "
                            "supported", what, FS_NPY_MAX_DIMS);
        out->shape[out->ndim++] = v;
        p = e;
        while (isspace((unsigned char)*p)) p++;
        if (*p == 'L') p++; /* Python 2 longs */
        if (*p == ',') p++;
        else if (*p != ')') return fs_error(err, FS_ERR_FORMAT, "%s: npy header 'shape' is malformed", what);
    }
    return FS_OK;
}

fs_status_t fs_npy_parse(const void *buf, size_t len, const char *what, fs_npy_header_t *out,
                         fs_error_t *err)
{
    const unsigned char *b = buf;
    memset(out, 0, sizeof *out);
    if (len < 10 || memcmp(b, "\x93NUMPY", 6) != 0)
        return fs_error(err, FS_ERR_FORMAT, "%s: not a .npy file (bad magic or shorter than 10 bytes)", what);
    size_t dict_len, pre;
    if (b[6] == 1) {
        dict_len = (size_t)b[8] | (size_t)b[9] << 8;
        pre = 10;
    } else if (b[6] == 2 || b[6] == 3) {
        if (len < 12) return fs_error(err, FS_ERR_FORMAT, "%s: truncated npy header", what);
        dict_len = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        pre = 12;
    } else {
        return fs_error(err, FS_ERR_UNSUPPORTED, "%s: npy format version %d.%d is not supported", what,
                        b[6], b[7]);
    }
    if (dict_len > 1 << 20 || pre + dict_len > len)
        return fs_error(err, FS_ERR_FORMAT, "%s: truncated npy header (needs %zu bytes, file has %zu)",
                        what, pre + dict_len, len);
    char *dict = malloc(dict_len + 1);
    if (!dict) return fs_error(err, FS_ERR_NOMEM, "%s: out of memory", what);
    memcpy(dict, b + pre, dict_len);
    dict[dict_len] = '\0';

    fs_status_t st = FS_OK;
    const char *fo = find_key(dict, "fortran_order");
    if (!fo) st = fs_error(err, FS_ERR_FORMAT, "%s: npy header has no 'fortran_order'", what);
    if (st == FS_OK) st = parse_shape(dict, what, out, err);
    if (st == FS_OK && strncmp(fo, "True", 4) == 0 && out->ndim > 1)
        st = fs_error(err, FS_ERR_UNSUPPORTED, "%s: Fortran-ordered arrays are not supported "
                      "(save with np.ascontiguousarray)", what);
    if (st == FS_OK) st = parse_descr(dict, what, out, err);
    free(dict);
    out->header_len = pre + dict_len;
    if (st != FS_OK) return st;

    size_t item = fs_dtype_size(out->dtype), total = item;
    for (int i = 0; i < out->ndim; i++) {
        if (out->shape[i] != 0 && total > SIZE_MAX / (size_t)out->shape[i])
            return fs_error(err, FS_ERR_FORMAT, "%s: npy shape is too large", what);
        total *= (size_t)out->shape[i];
    }
    out->data_len = total;
    return FS_OK;
}

void fs_npy_format(char buf[FS_NPY_WRITE_HEADER_LEN], fs_dtype_t dt, int ndim, const int64_t *shape)
{
    char dict[256];
    int n;
    if (ndim == 1)
        n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%lld,), }",
                     descr_of(dt), (long long)shape[0]);
    else
        n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%lld, %lld), }",
                     descr_of(dt), (long long)shape[0], (long long)shape[1]);
    memset(buf, ' ', FS_NPY_WRITE_HEADER_LEN);
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (char)((FS_NPY_WRITE_HEADER_LEN - 10) & 0xff); /* little-endian uint16 */
    buf[9] = (char)((FS_NPY_WRITE_HEADER_LEN - 10) >> 8);
    memcpy(buf + 10, dict, (size_t)n);
    buf[FS_NPY_WRITE_HEADER_LEN - 1] = '\n';
}
