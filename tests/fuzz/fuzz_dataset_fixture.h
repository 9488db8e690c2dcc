/* fuzz_dataset_fixture.h — the small dataset directory fuzz_manifest's
 * manifests point into, written by the harness at start and, identically,
 * by make_seeds (whose seed manifests carry these files' sizes and xxh3
 * checksums). 6 nodes, 8 edges; besides one file of every role, files that
 * must be refused: a NaN weight, a non-monotone indptr, an out-of-range
 * split id, a table with too few rows, garbage, an empty file, a truncated
 * array and a directory. Arrays are written with the dataset writer's own
 * header (fs_npy_format). */
#ifndef FS_FUZZ_DATASET_FIXTURE_H
#define FS_FUZZ_DATASET_FIXTURE_H

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fs_npy.h"

#define FIXTURE_NODES 6
#define FIXTURE_EDGES 8

static int fixture_npy(const char *dir, const char *file, fs_dtype_t dt, int ndim, int64_t rows, int64_t dim,
                       const void *values, size_t cut)
{
    char path[4096], header[FS_NPY_WRITE_HEADER_LEN];
    int64_t shape[2] = {rows, dim};
    snprintf(path, sizeof path, "%s/%s", dir, file);
    fs_npy_format(header, dt, ndim, shape);
    size_t bytes = (size_t)rows * (size_t)(ndim == 2 ? dim : 1) * fs_dtype_size(dt);
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fwrite(header, 1, sizeof header, f) == sizeof header &&
             fwrite(values, 1, bytes - cut, f) == bytes - cut;
    return fclose(f) == 0 && ok ? 0 : -1;
}

static int fixture_bytes(const char *dir, const char *file, const void *bytes, size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fwrite(bytes, 1, len, f) == len;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* Writes the fixture into the existing directory dir; 0, or -1. */
static int fuzz_dataset_fixture(const char *dir)
{
    static const int64_t indptr[FIXTURE_NODES + 1] = {0, 2, 3, 5, 6, 8, 8};
    static const int64_t indptr_bad[FIXTURE_NODES + 1] = {0, 2, 1, 5, 6, 8, 8};
    static const int32_t indices[FIXTURE_EDGES] = {1, 2, 0, 3, 4, 5, 0, 1};
    static const int64_t indices64[FIXTURE_EDGES] = {1, 2, 0, 3, 4, 5, 0, 1};
    static const float weights[FIXTURE_EDGES] = {1, 0.5f, 2, 0, 3, 1, 1, 0.25f};
    float weights_nan[FIXTURE_EDGES] = {1, 1, 1, NAN, 1, 1, 1, 1};
    static const int64_t labels[FIXTURE_NODES] = {0, 1, 2, -1, 1, 0};
    static const int64_t train[3] = {0, 2, 4}, split_bad[2] = {1, 9};
    static const int64_t node_ids[FIXTURE_NODES] = {10, 11, 12, 13, 14, 15};
    /* version 2: a permutation of the edges, times sorted within each row, one that is not */
    static const int64_t edge_ids[FIXTURE_EDGES] = {3, 1, 0, 2, 7, 6, 4, 5}, edge_ids_dup[FIXTURE_EDGES] = {0, 1, 2, 3, 4, 5, 6, 0};
    static const int64_t edge_time[FIXTURE_EDGES] = {1, 5, 2, 0, 9, 3, 4, 4}, edge_time_bad[FIXTURE_EDGES] = {5, 1, 2, 0, 9, 3, 4, 4};
    float feat[FIXTURE_NODES * 4];
    uint16_t half[FIXTURE_NODES * 3], bf16[FIXTURE_NODES * 2];
    int8_t q8[FIXTURE_NODES * 12]; /* an int8 table's rows: scale, bias, 4 codes (kernels/fs_codec.h) */
    for (int i = 0; i < FIXTURE_NODES * 12; i++) q8[i] = (int8_t)(i * 37);
    for (int i = 0; i < FIXTURE_NODES * 4; i++) feat[i] = (float)i * 0.5f;
    for (int i = 0; i < FIXTURE_NODES * 3; i++) half[i] = (uint16_t)(0x3c00 + i);
    for (int i = 0; i < FIXTURE_NODES * 2; i++) bf16[i] = (uint16_t)(0x3f80 + i);
    static const char garbage[] = "\x93NUMPY\x01\x00\x20\x00{'descr': '<i8', 'shape': (", empty[1] = {0};
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/subdir.npy", dir);
    if (mkdir(sub, 0700) != 0) return -1;
    return fixture_npy(dir, "indptr.npy", FS_DTYPE_I64, 1, FIXTURE_NODES + 1, 0, indptr, 0) ||
           fixture_npy(dir, "indptr_bad.npy", FS_DTYPE_I64, 1, FIXTURE_NODES + 1, 0, indptr_bad, 0) ||
           fixture_npy(dir, "indices.npy", FS_DTYPE_I32, 1, FIXTURE_EDGES, 0, indices, 0) ||
           fixture_npy(dir, "indices64.npy", FS_DTYPE_I64, 1, FIXTURE_EDGES, 0, indices64, 0) ||
           fixture_npy(dir, "edge_weights.npy", FS_DTYPE_F32, 1, FIXTURE_EDGES, 0, weights, 0) ||
           fixture_npy(dir, "weights_nan.npy", FS_DTYPE_F32, 1, FIXTURE_EDGES, 0, weights_nan, 0) ||
           fixture_npy(dir, "table_feat.npy", FS_DTYPE_F32, 2, FIXTURE_NODES, 4, feat, 0) ||
           fixture_npy(dir, "table_half.npy", FS_DTYPE_F16, 2, FIXTURE_NODES, 3, half, 0) ||
           fixture_npy(dir, "table_bf16.npy", FS_DTYPE_BF16, 2, FIXTURE_NODES, 2, bf16, 0) ||
           fixture_npy(dir, "table_q8.npy", FS_DTYPE_I8, 2, FIXTURE_NODES, 12, q8, 0) ||
           fixture_npy(dir, "table_short.npy", FS_DTYPE_F32, 2, FIXTURE_NODES - 1, 4, feat, 0) ||
           fixture_npy(dir, "labels.npy", FS_DTYPE_I64, 1, FIXTURE_NODES, 0, labels, 0) ||
           fixture_npy(dir, "split_train.npy", FS_DTYPE_I64, 1, 3, 0, train, 0) ||
           fixture_npy(dir, "split_bad.npy", FS_DTYPE_I64, 1, 2, 0, split_bad, 0) ||
           fixture_npy(dir, "node_ids.npy", FS_DTYPE_I64, 1, FIXTURE_NODES, 0, node_ids, 0) ||
           fixture_npy(dir, "edge_ids.npy", FS_DTYPE_I64, 1, FIXTURE_EDGES, 0, edge_ids, 0) ||
           fixture_npy(dir, "edge_ids_dup.npy", FS_DTYPE_I64, 1, FIXTURE_EDGES, 0, edge_ids_dup, 0) ||
           fixture_npy(dir, "edge_time.npy", FS_DTYPE_I64, 1, FIXTURE_EDGES, 0, edge_time, 0) ||
           fixture_npy(dir, "edge_time_bad.npy", FS_DTYPE_I64, 1, FIXTURE_EDGES, 0, edge_time_bad, 0) ||
           fixture_npy(dir, "truncated.npy", FS_DTYPE_I64, 1, FIXTURE_NODES, 0, node_ids, 5) ||
           fixture_bytes(dir, "garbage.npy", garbage, sizeof garbage - 1) ||
           fixture_bytes(dir, "empty.npy", empty, 0)
               ? -1
               : 0;
}

#endif
