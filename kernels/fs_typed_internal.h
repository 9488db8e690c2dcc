/* fs_typed_internal.h — lets the CUDA typed sampler (fs_typed.cu) fill the
 * CPU typed sampler's workspace, so both hand out results with one
 * ownership model (fs_typed.h: valid until the sampler's next call or its
 * destruction). Not a public interface; the functions sit at the end of
 * fs_typed.c, next to the workspace they hand out.
 *
 * Protocol: fs_typed_ws_shape for the request's shape, then any of the
 * arrays (each call may move what an earlier call for the same array
 * returned), then fs_typed_ws_result once every array is written. */
#ifndef FS_TYPED_INTERNAL_H
#define FS_TYPED_INTERNAL_H

#include "fs_typed.h"

enum { FS_TWS_NODES, FS_TWS_BATCH, FS_TWS_TIME };          /* a node type's arrays */
enum { FS_TWS_OFF, FS_TWS_EDST, FS_TWS_ESRC, FS_TWS_EID }; /* a block's arrays */

/* Room for `types` node types, `blocks` (hops * edge types) blocks and
 * `groups` seed groups: 0, or -1 when out of memory. */
int fs_typed_ws_shape(fs_typed_sampler_t *s, int types, int blocks, int groups);

/* A workspace array with room for n entries (never NULL for n = 0), or
 * NULL when out of memory. block is hop * num_edge_types + edge type. */
int64_t *fs_typed_ws_node_array(fs_typed_sampler_t *s, int type, int kind, size_t n);
int64_t *fs_typed_ws_block_array(fs_typed_sampler_t *s, int block, int kind, size_t n);
int64_t *fs_typed_ws_seed_local(fs_typed_sampler_t *s, int group, size_t n);

/* Fills *res from the workspace, as fs_typed_sample_cpu does. after:
 * [(num_hops + 1) * types], each type's node count after the seeds (row 0)
 * and after each hop; num_dst, num_edges: [num_hops * edge types]. */
void fs_typed_ws_result(fs_typed_sampler_t *s, const fs_typed_view_t *g, const fs_typed_req_t *req, int num_groups,
                        const int64_t *after, const int64_t *num_dst, const int64_t *num_edges,
                        fs_typed_result_t *res);

/* An extension's workspace hung off the sampler (fs_link.c's arrays), made
 * zeroed at `size` bytes on first use and freed by free_fn with the sampler,
 * so it follows the sampler's ownership rule. NULL when out of memory. */
void *fs_typed_sampler_ext(fs_typed_sampler_t *s, size_t size, void (*free_fn)(void *));

#endif
