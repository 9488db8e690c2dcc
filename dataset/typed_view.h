/* typed_view.h — a typed dataset as the typed sampler reads it
 * (fs_typed_view_t, kernels/fs_typed.h): the dataset's arrays, borrowed,
 * plus the per-type tables the view points at and names for messages
 * ("(paper, cites, paper)"). A version-1 dataset is its one node type and
 * one edge type.
 *
 * Each timed edge type also gets its rows' time summaries
 * (fs_typed_time_rows: 32 bytes per destination), built once here, which
 * spare temporal sampling most of its searches.
 *
 * Ownership: the graph borrows the dataset (which must outlive it) and owns
 * its tables and summaries; free with fs_typed_graph_free. Thread-safety:
 * read-only after init, shared by any number of samplers. */
#ifndef FS_TYPED_VIEW_H
#define FS_TYPED_VIEW_H

#include "dataset.h"
#include "fs_typed.h"

typedef struct {
    fs_typed_view_t view;
    /* storage behind the view */
    int64_t *count;
    const char **type_name;
    const int64_t **node_time;
    fs_typed_etype_t *etype;
    char (*etype_name)[3 * FS_TYPE_NAME_MAX + 8];
    fs_time_row_t **time_rows;          /* [num_edge_types], NULL for untimed ones */
    int num_edge_types;
} fs_typed_graph_t;

fs_status_t fs_typed_graph_init(fs_typed_graph_t *g, const fs_dataset_t *ds, fs_error_t *err);
void fs_typed_graph_free(fs_typed_graph_t *g);

#endif
