/* fs_sample_internal.h — lets the CUDA sampler (fs_sample.cu) fill the CPU
 * sampler's workspace, so both hand out results with one ownership model.
 * Not a public interface. */
#ifndef FS_SAMPLE_INTERNAL_H
#define FS_SAMPLE_INTERNAL_H

#include "fs_sample.h"

enum { FS_WS_NODES, FS_WS_SEED_LOCAL, FS_WS_OFF, FS_WS_EDST, FS_WS_ESRC, FS_WS_EID };

/* A workspace array with room for n entries, or NULL when out of memory. */
int64_t *fs_sampler_workspace(fs_sampler_t *s, int kind, int hop, size_t n);

/* Fills *res from the workspace once every hop's arrays are written. */
void fs_sampler_result(fs_sampler_t *s, const fs_sample_req_t *req, int64_t n, const int64_t *u_after,
                       const int64_t *num_dst, const int64_t *num_edges, fs_sample_result_t *res);

#endif
