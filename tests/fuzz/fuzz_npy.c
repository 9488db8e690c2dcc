/* fuzz_npy.c — libFuzzer harness for the .npy header parser (kernels/fs_npy.c),
 * which reads every array file of a dataset and every member of an .npz.
 *
 * The input is a whole file. Beyond "no crash", an accepted header must be
 * self-consistent: a known dtype whose descr parses back to it, at most two
 * non-negative dimensions, data_len = product(shape) x itemsize, a
 * header_len within the input; the header alone (the input cut at
 * header_len) parses to the same answer, so the parser never looks past the
 * header; and the header fs_npy_format writes for the same dtype and shape
 * parses back to the same shape and data length. A refusal must carry
 * FS_ERR_FORMAT, FS_ERR_UNSUPPORTED or FS_ERR_NOMEM and a message. */
#include "fuzz_common.h"
#include "fs_npy.h"

static void check_same(const fs_npy_header_t *a, const fs_npy_header_t *b, const char *what)
{
    FUZZ_CHECK(a->dtype == b->dtype && a->ndim == b->ndim && a->data_len == b->data_len, "%s: dtype %d/%d ndim %d/%d "
               "data_len %zu/%zu", what, a->dtype, b->dtype, a->ndim, b->ndim, a->data_len, b->data_len);
    for (int i = 0; i < a->ndim; i++)
        FUZZ_CHECK(a->shape[i] == b->shape[i], "%s: shape[%d] %lld/%lld", what, i, (long long)a->shape[i],
                   (long long)b->shape[i]);
}

static void check_accepted(const uint8_t *data, const fs_npy_header_t *h, size_t size)
{
    size_t item = fs_dtype_size(h->dtype);
    FUZZ_CHECK(h->dtype != FS_DTYPE_INVALID && item > 0, "accepted dtype %d ('%s')", h->dtype, h->descr);
    FUZZ_CHECK(memchr(h->descr, '\0', sizeof h->descr) != NULL, "descr not terminated");
    FUZZ_CHECK(h->ndim >= 0 && h->ndim <= FS_NPY_MAX_DIMS, "ndim %d", h->ndim);
    FUZZ_CHECK(h->header_len >= 10 && h->header_len <= size, "header_len %zu of %zu bytes", h->header_len, size);
    size_t total = item;
    for (int i = 0; i < h->ndim; i++) {
        FUZZ_CHECK(h->shape[i] >= 0, "shape[%d] = %lld", i, (long long)h->shape[i]);
        FUZZ_CHECK(h->shape[i] == 0 || total <= SIZE_MAX / (size_t)h->shape[i], "accepted an overflowing shape");
        total *= (size_t)h->shape[i];
    }
    FUZZ_CHECK(total == h->data_len, "data_len %zu, shape x itemsize %zu", h->data_len, total);

    fs_npy_header_t again;
    fs_error_t err = {0};
    fs_status_t st = fs_npy_parse(data, h->header_len, "fuzz.npy", &again, &err);
    FUZZ_CHECK(st == FS_OK, "the header alone is refused: %s", err.msg);
    check_same(h, &again, "header alone");

    if (h->ndim >= 1) { /* what the writer would write for it (it writes 1 or 2 dimensions) */
        char buf[FS_NPY_WRITE_HEADER_LEN];
        fs_npy_format(buf, h->dtype, h->ndim, h->shape);
        st = fs_npy_parse(buf, sizeof buf, "written.npy", &again, &err);
        FUZZ_CHECK(st == FS_OK, "our own header is refused: %s", err.msg);
        FUZZ_CHECK(again.header_len == FS_NPY_WRITE_HEADER_LEN, "written header_len %zu", again.header_len);
        check_same(h, &again, "written header");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fs_npy_header_t h;
    fs_error_t err = {0};
    fs_status_t st = fs_npy_parse(data, size, "fuzz.npy", &h, &err);
    if (st == FS_OK) {
        check_accepted(data, &h, size);
        return 0;
    }
    FUZZ_CHECK_REFUSAL(st, err);
    FUZZ_CHECK(st == FS_ERR_FORMAT || st == FS_ERR_UNSUPPORTED || st == FS_ERR_NOMEM, "status %d: %s", st, err.msg);
    return 0;
}
