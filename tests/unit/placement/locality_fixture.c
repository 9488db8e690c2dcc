/* locality_fixture.c — see locality_fixture.h. */
#include "locality_fixture.h"

#include <criterion/criterion.h>
#include <stdlib.h>

#include "argsort.h"
#include "gen.h"
#include "test_util.h"

char *dir;
fs_dataset_t *rmat;
fs_sampler_t *plain, *las;

void setup(void)
{
    dir = tu_mkdtemp();
    fs_error_t err = {0};
    fs_rmat_opts_t g;
    fs_rmat_defaults(&g);
    g.scale = 12, g.edge_factor = 8, g.dim = 0, g.edges.symmetrize = 1;
    rmat = tu_gen_rmat(dir, "rmat", &g);
    cr_assert_eq(fs_sampler_create(&plain, &err), FS_OK);
    cr_assert_eq(fs_sampler_create(&las, &err), FS_OK);
}

void teardown(void)
{
    fs_sampler_destroy(plain);
    fs_sampler_destroy(las);
    fs_dataset_close(rmat);
    tu_rm_rf(dir);
    free(dir);
}

/* ---- helpers ----------------------------------------------------------------- */

fs_csr_view_t view_of(const fs_dataset_t *ds)
{
    fs_csr_view_t g;
    fs_csr_view_init(&g, ds->num_nodes, ds->indptr, ds->indices, ds->index_dtype, NULL);
    return g;
}

static fs_csr_ref_t ref_of(const fs_dataset_t *ds)
{
    return (fs_csr_ref_t){ds->num_nodes, ds->indptr, ds->indices, ds->index_dtype, NULL};
}

int64_t nbr(const fs_csr_view_t *g, int64_t pos)
{
    return g->index_dtype == FS_DTYPE_I32 ? ((const int32_t *)g->part[0].indices)[pos]
                                          : ((const int64_t *)g->part[0].indices)[pos];
}

fs_sample_req_t req_of(int hops, const int *fanout, uint64_t seed)
{
    fs_sample_req_t r = {.num_hops = hops, .seed = seed, .want_edge_ids = 1};
    for (int h = 0; h < hops; h++) r.fanout[h] = fanout[h], r.mode[h] = FS_SAMPLE_UNIFORM;
    return r;
}

/* B = the top `frac` of nodes by degree (the plan a GPU budget would give). */
int64_t *top_degree_rows(const fs_dataset_t *ds, double frac, int64_t *count)
{
    int64_t n = ds->num_nodes, *order = malloc(sizeof *order * (size_t)n);
    double *deg = malloc(sizeof *deg * (size_t)n);
    for (int64_t v = 0; v < n; v++) deg[v] = (double)(ds->indptr[v + 1] - ds->indptr[v]);
    fs_error_t err = {0};
    cr_assert_eq(fs_argsort_desc(deg, n, 1, order, &err), FS_OK, "%s", err.msg);
    free(deg);
    *count = (int64_t)(frac * (double)n);
    return order;
}

fs_las_sets_t *build_sets(const fs_dataset_t *ds, const int64_t *b, int64_t nb, int levels, int64_t k,
                          int threads)
{
    fs_csr_ref_t g = ref_of(ds);
    fs_las_opts_t o;
    fs_las_defaults(&o);
    o.num_levels = levels, o.k = k, o.threads = threads;
    fs_las_sets_t *sets;
    fs_error_t err = {0};
    cr_assert_eq(fs_las_sets_build(&g, b, nb, &o, &sets, &err), FS_OK, "%s", err.msg);
    return sets;
}
