/* test_npy.c — the .npy header parser on good and hostile headers. */
#include <criterion/criterion.h>
#include <string.h>

#include "fs_npy.h"

static size_t make_header(char *buf, int version, const char *dict)
{
    size_t pre = version == 1 ? 10 : 12, n = strlen(dict);
    size_t total = (pre + n + 1 + 63) / 64 * 64;
    memset(buf, ' ', total);
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (char)version;
    buf[7] = 0;
    size_t dl = total - pre;
    buf[8] = (char)(dl & 0xff);
    buf[9] = (char)(dl >> 8);
    if (version != 1) buf[10] = buf[11] = 0;
    memcpy(buf + pre, dict, n);
    buf[total - 1] = '\n';
    return total;
}

Test(npy, parses_numpy_v1_and_v2_headers)
{
    char buf[256];
    fs_npy_header_t h;
    fs_error_t e = {0};
    size_t n = make_header(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }");
    cr_assert_eq(fs_npy_parse(buf, n, "x.npy", &h, &e), FS_OK, "%s", e.msg);
    cr_assert_eq(h.dtype, FS_DTYPE_F32);
    cr_assert_eq(h.ndim, 2);
    cr_assert_eq(h.shape[0], 3);
    cr_assert_eq(h.shape[1], 4);
    cr_assert_eq(h.header_len, n);
    cr_assert_eq(h.data_len, 48);
    n = make_header(buf, 2, "{\"shape\": (7,), \"fortran_order\": False, \"descr\": \"<i8\"}");
    cr_assert_eq(fs_npy_parse(buf, n, "x.npy", &h, &e), FS_OK, "%s", e.msg);
    cr_assert_eq(h.dtype, FS_DTYPE_I64);
    cr_assert_eq(h.shape[0], 7);
    n = make_header(buf, 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (), }");
    cr_assert_eq(fs_npy_parse(buf, n, "x.npy", &h, &e), FS_OK);
    cr_assert_eq(h.ndim, 0);
}

Test(npy, written_headers_parse_back)
{
    char buf[FS_NPY_WRITE_HEADER_LEN];
    int64_t shape[2] = {123456789012LL, 1433};
    fs_npy_format(buf, FS_DTYPE_F16, 2, shape);
    fs_npy_header_t h;
    cr_assert_eq(fs_npy_parse(buf, sizeof buf, "w.npy", &h, NULL), FS_OK);
    cr_assert_eq(h.dtype, FS_DTYPE_F16);
    cr_assert_eq(h.shape[0], 123456789012LL);
    cr_assert_eq(h.header_len, FS_NPY_WRITE_HEADER_LEN);
    fs_npy_format(buf, FS_DTYPE_BF16, 1, shape); /* bf16 is stored as raw <u2 */
    cr_assert_eq(fs_npy_parse(buf, sizeof buf, "w.npy", &h, NULL), FS_OK);
    cr_assert_eq(h.dtype, FS_DTYPE_U16);
}

static void expect_error(const char *dict, fs_status_t code, const char *needle)
{
    char buf[256];
    fs_npy_header_t h;
    fs_error_t e = {0};
    size_t n = make_header(buf, 1, dict);
    cr_assert_eq(fs_npy_parse(buf, n, "bad.npy", &h, &e), code, "%s -> %s", dict, e.msg);
    cr_assert_not_null(strstr(e.msg, "bad.npy"), "message names the file: %s", e.msg);
    cr_assert_not_null(strstr(e.msg, needle), "message '%s' mentions '%s'", e.msg, needle);
}

Test(npy, rejects_unsupported_and_malformed_headers)
{
    expect_error("{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }", FS_ERR_UNSUPPORTED, "big-endian");
    expect_error("{'descr': '<f4', 'fortran_order': True, 'shape': (3, 2), }", FS_ERR_UNSUPPORTED, "Fortran");
    expect_error("{'descr': '|O', 'fortran_order': False, 'shape': (), }", FS_ERR_UNSUPPORTED, "object array");
    expect_error("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", FS_ERR_UNSUPPORTED, "<c8");
    expect_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 2), }", FS_ERR_UNSUPPORTED, "dimensions");
    expect_error("{'descr': '<f4', 'fortran_order': False, }", FS_ERR_FORMAT, "shape");
    expect_error("{'descr': '<f4', 'fortran_order': False, 'shape': (x,), }", FS_ERR_FORMAT, "shape");
    expect_error("{'fortran_order': False, 'shape': (3,), }", FS_ERR_FORMAT, "descr");
    expect_error("{'descr': '<f4', 'shape': (3,), }", FS_ERR_FORMAT, "fortran_order");
    expect_error("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", FS_ERR_FORMAT,
                 "range");
}

Test(npy, rejects_bad_magic_and_truncation)
{
    char buf[256];
    fs_npy_header_t h;
    fs_error_t e = {0};
    size_t n = make_header(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }");
    cr_assert_eq(fs_npy_parse(buf, 5, "t.npy", &h, &e), FS_ERR_FORMAT);
    cr_assert_eq(fs_npy_parse(buf, n - 20, "t.npy", &h, &e), FS_ERR_FORMAT);
    cr_assert_not_null(strstr(e.msg, "truncated"), "%s", e.msg);
    buf[1] = 'X';
    cr_assert_eq(fs_npy_parse(buf, n, "t.npy", &h, &e), FS_ERR_FORMAT);
    cr_assert_not_null(strstr(e.msg, "magic"), "%s", e.msg);
    buf[1] = 'N';
    buf[6] = 9;
    cr_assert_eq(fs_npy_parse(buf, n, "t.npy", &h, &e), FS_ERR_UNSUPPORTED);
}
