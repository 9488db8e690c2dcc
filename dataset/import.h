/* import.h — converting users' graphs into the native dataset format.
 *
 * Each importer streams its input (memory bounded by O(N), never O(E) or the
 * feature bytes), writes through fs_writer (so output appears atomically),
 * and reports bad input as FS_ERR_FORMAT with the file and line or offset.
 *
 *   edgelist  SNAP-style text: "src dst [weight]" per line, '#'/'%' comments,
 *             tab/space/comma separated, optionally gzip-compressed. Ids as
 *             given that are too sparse (id_census.h's rule: N = largest id
 *             + 1 above 1 M and above 4x the distinct ids) are refused before
 *             anything per id is allocated, unless dense_ids; compact_ids
 *             renumbers them.
 *   npz       scipy-sparse .npz (gnn-benchmark layout: adj_* CSR adjacency,
 *             attr_* CSR or attr_matrix dense features, labels).
 *   ogb       an OGB node-property dataset directory (raw/NAME.csv[.gz] and
 *             split/<name>/{train,valid,test}.csv[.gz]).
 *   ogb-hetero  OGB's heterogeneous node-property layout (ogbn-mag:
 *             raw/num-node-dict, raw/relations/<src>___<rel>___<dst>/, per-type
 *             node files, split/<name>/<type>/), into a typed (version-2)
 *             dataset; `ogb` hands such a directory over by itself. Edges
 *             are held in memory while each edge type is laid out (O(E)). */
#ifndef FS_IMPORT_H
#define FS_IMPORT_H

#include "csr_build.h"
#include "writer.h"

typedef struct {
    const char *out_dir;
    const char *name;        /* dataset name; default: from the input path */
    int force;               /* replace an existing dataset at out_dir */
    int threads;
    fs_edge_opts_t edges;
    int weighted;            /* edgelist: column 3 is the weight; npz: adj_data */
    int dense_ids;           /* edgelist: keep ids as given even when they are sparse */
    int split_pct[3];        /* train/valid/test % when the input has no split */
    uint64_t seed;           /* for the random split */
    const char *split_name;  /* ogb: which split/<name> to use */
    int add_reverse;         /* ogb-hetero: also write (dst, rev_<rel>, src) for each relation */
} fs_import_opts_t;

fs_status_t fs_import_edgelist(const char *path, const fs_import_opts_t *o, fs_error_t *err);
fs_status_t fs_import_npz(const char *path, const fs_import_opts_t *o, fs_error_t *err);
fs_status_t fs_import_ogb(const char *dir, const fs_import_opts_t *o, fs_error_t *err);
fs_status_t fs_import_ogb_hetero(const char *dir, const fs_import_opts_t *o, fs_error_t *err);

/* Shared by the OGB importers: finds dir/base.csv.gz or dir/base.csv into
 * out (0 if neither exists); picks dir/split/<want>, else the first split
 * directory by name (out "" when there is none). */
int fs_find_csv(const char *dir, const char *base, char *out, size_t len);
fs_status_t fs_ogb_split_dir(const char *dir, const char *want, char *out, size_t len, fs_error_t *err);

/* Shared by the importers and the generator. */

/* Writes split_train/valid/test: a seeded random partition of the labelled
 * nodes (all nodes if labels is NULL) by pct[]. No-op if pct sums to 0. */
fs_status_t fs_write_random_splits(fs_writer_t *w, int64_t n, const int64_t *labels, const int pct[3],
                                   uint64_t seed, fs_error_t *err);
/* That partition itself: pool[0..n) receives the train ids, then the valid
 * ones, then the test ones, each part sorted; cnt[] their sizes. */
fs_status_t fs_random_partition(int64_t n, const int64_t *labels, const int pct[3], uint64_t seed, int64_t *pool,
                                int64_t cnt[3], fs_error_t *err);

/* max(label) + 1 over labels >= 0; 0 when none are labelled. */
int64_t fs_count_classes(const int64_t *labels, int64_t n);

/* Records the manifest's name (o->name, else the input's base name), counts,
 * class count (from labels, may be NULL) and provenance ("source"). */
fs_status_t fs_import_set_meta(fs_writer_t *w, const char *importer, const char *input,
                               const fs_import_opts_t *o, int64_t num_nodes, int64_t num_edges,
                               const int64_t *labels, fs_error_t *err);

/* "dir/file.npz" -> "file" (for default dataset names). */
void fs_basename_noext(const char *path, char *out, size_t len);

#endif
