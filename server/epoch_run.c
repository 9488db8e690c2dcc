/* epoch_run.c — an epoch stream's batches, made by the server (see
 * epoch_run.h).
 *
 * Batches are made a window at a time, by the steps the trainer's own
 * producers take (exec/fs_exec_epoch.h): each of the window's plan batches
 * is sampled through the executor (fs_engine_sample) into the worker's
 * sampler and copied out at once (the sampler is reused by the next
 * sample, and by the worker's next call), and with a delta the window is
 * ordered from its first batch. Then each batch in that order is matched
 * against the previous one handed out and only its new ids are named for
 * gathering (the gRPC handler gathers them chunk by chunk). Without a
 * delta the window is one batch and every node's row goes out, or, for a
 * trainer that caches the hot list's rows, those of the nodes not in it.
 *
 * Sampling ahead: a window's first batch can go out only once the whole
 * window is sampled, which would leave the link idle for a window's worth
 * of sampling at every window. So with each batch handed out the run also
 * samples one batch of the next window: when a window ends the next one is
 * sampled already and only its order is left to compute. (A batch that
 * fails to sample ahead is sampled again in its turn, and fails there.)
 *
 * Memory: two windows' samples (at most 2 FS_EPOCH_RUN_MAX_WINDOW) and the
 * previous batch's node ids; freed as the run moves on. */
#include "epoch_run.h"

#include <stdlib.h>
#include <string.h>

#include "fs_exec.h"
#include "fs_exec_epoch.h"
#include "fs_limits.h"

/* A sampled batch, copied out of the sampler into one block. */
typedef struct {
    int64_t plan_index;
    fs_sample_result_t res;
    int64_t *labels;
    void *mem;
} sampled_t;

struct fs_epoch_run {
    fs_engine_t *engine;
    fs_epoch_t plan;
    const int64_t *items;          /* the split's ids (the dataset's) or own_items */
    int64_t *own_items;
    fs_sample_req_t req;
    char table[256], labels[256];
    fs_dtype_t dtype;
    size_t row_bytes;
    int64_t dim;
    int delta, window;
    int64_t cached;                /* > 0: rows of nodes ranked below it stay home */
    const int32_t *hot_rank;       /* the engine's (fs_engine_hot), with cached */
    int64_t next;                  /* the next batch to hand out (stream position) */
    int64_t win_first;             /* the window loaded: positions win_first .. + win_k - 1 */
    int win_k;
    int order[FS_EPOCH_RUN_MAX_WINDOW];
    sampled_t win[FS_EPOCH_RUN_MAX_WINDOW];
    sampled_t ahead[FS_EPOCH_RUN_MAX_WINDOW]; /* the next window's first ahead_n batches */
    int ahead_n;
    sampled_t current;             /* the batch handed out last (owns its block) */
    int64_t *pos;                  /* scratch: a batch's plan positions, then its seeds */
    int64_t *take, *new_pos, *new_ids; /* delta scratch, cap entries each */
    size_t cap;
    fs_reorder_ws_t *rws;
};

/* ---- sampled batches ------------------------------------------------------------ */

static void sampled_free(sampled_t *s)
{
    free(s->mem);
    memset(s, 0, sizeof *s);
}

static size_t round8(size_t n) { return (n + 7) & ~(size_t)7; }

/* Copies src's array of n elements of `size` bytes to *at, returning the copy. */
static const void *copy_array(char **at, const void *src, int64_t n, size_t size)
{
    if (!src) return NULL;
    void *dst = *at;
    memcpy(dst, src, (size_t)n * size);
    *at += round8((size_t)n * size);
    return dst;
}

/* A deep copy of r (and room for num_labels labels) in one block. */
static fs_status_t sampled_copy(const fs_sample_result_t *r, int64_t num_labels, sampled_t *out, fs_error_t *err)
{
    size_t bytes = round8((size_t)r->num_nodes * 8) + round8((size_t)r->num_seeds * 8) +
                   round8((size_t)num_labels * 8);
    for (int h = 0; h < r->num_hops; h++) {
        const fs_block_t *b = &r->block[h];
        bytes += round8((size_t)(b->num_dst + 1) * 8) + 2 * round8((size_t)b->num_edges * 8);
        if (b->edge_ids) bytes += round8((size_t)b->num_edges * 8);
        if (b->edge_weights) bytes += round8((size_t)b->num_edges * sizeof(float));
    }
    char *at = malloc(bytes ? bytes : 1);
    if (!at) return fs_error(err, FS_ERR_NOMEM, "stream: out of memory for a sample of %zu bytes", bytes);
    out->mem = at;
    out->res = *r;
    out->res.nodes = copy_array(&at, r->nodes, r->num_nodes, 8);
    out->res.seed_local = copy_array(&at, r->seed_local, r->num_seeds, 8);
    for (int h = 0; h < r->num_hops; h++) {
        const fs_block_t *b = &r->block[h];
        fs_block_t *o = &out->res.block[h];
        o->dst_offsets = copy_array(&at, b->dst_offsets, b->num_dst + 1, 8);
        o->edge_dst = copy_array(&at, b->edge_dst, b->num_edges, 8);
        o->edge_src = copy_array(&at, b->edge_src, b->num_edges, 8);
        o->edge_ids = copy_array(&at, b->edge_ids, b->num_edges, 8);
        o->edge_weights = copy_array(&at, b->edge_weights, b->num_edges, sizeof(float));
    }
    out->labels = num_labels ? (int64_t *)at : NULL;
    return FS_OK;
}

/* Plan batch p: sampled with its request seed, copied, its labels gathered. */
static fs_status_t sample_batch(fs_epoch_run_t *r, fs_sampler_t *sampler, int64_t p, sampled_t *out, fs_error_t *err)
{
    int64_t n = fs_epoch_batch(&r->plan, p, r->pos);
    for (int64_t k = 0; k < n; k++) r->pos[k] = r->items[r->pos[k]];
    fs_sample_req_t req = r->req;
    req.seed = fs_epoch_batch_seed(&r->plan, p);
    fs_sample_result_t res;
    fs_status_t st = fs_engine_sample(r->engine, sampler, r->pos, n, &req, NULL, FS_DTYPE_INVALID, &res, err);
    if (st == FS_OK) st = sampled_copy(&res, r->labels[0] ? n : 0, out, err);
    if (st == FS_OK && r->labels[0]) st = fs_engine_gather(r->engine, r->labels, r->pos, n, FS_DTYPE_I64, out->labels, err);
    out->plan_index = p;
    return st;
}

/* ---- windows ------------------------------------------------------------------- */

static void drop_window(fs_epoch_run_t *r)
{
    for (int j = 0; j < r->win_k; j++) sampled_free(&r->win[j]);
    r->win_k = 0;
}

static void drop_ahead(fs_epoch_run_t *r)
{
    for (int j = 0; j < r->ahead_n; j++) sampled_free(&r->ahead[j]);
    r->ahead_n = 0;
}

/* One more batch of the window after the current one, if there is one. */
static void sample_ahead(fs_epoch_run_t *r, fs_sampler_t *sampler)
{
    int64_t p = r->win_first + r->win_k + r->ahead_n;
    if (r->window < 2 || r->ahead_n >= r->window || p >= r->plan.num_batches) return;
    fs_error_t ignored = {0};
    if (sample_batch(r, sampler, p, &r->ahead[r->ahead_n], &ignored) == FS_OK) r->ahead_n++;
    else sampled_free(&r->ahead[r->ahead_n]);
}

/* Samples and orders the window holding position r->next: what was sampled
 * ahead of it, and the rest. */
static fs_status_t load_window(fs_epoch_run_t *r, fs_sampler_t *sampler, fs_error_t *err)
{
    int64_t first = r->next - r->next % r->window, left = r->plan.num_batches - first;
    int ahead = r->win_k > 0 && first == r->win_first + r->win_k ? r->ahead_n : 0;
    int k = (int)(left < r->window ? left : r->window);
    drop_window(r);
    if (!ahead) drop_ahead(r); /* a resumed run starts anew */
    r->win_first = first;
    for (int j = 0; j < ahead; j++) r->win[j] = r->ahead[j];
    r->win_k = ahead, r->ahead_n = 0;
    memset(r->ahead, 0, sizeof r->ahead);
    for (int j = ahead; j < k; j++) {
        r->win_k = j + 1;
        fs_status_t st = sample_batch(r, sampler, first + j, &r->win[j], err);
        if (st != FS_OK) return st;
    }
    fs_rowset_t sets[FS_EPOCH_RUN_MAX_WINDOW];
    for (int j = 0; j < k; j++) sets[j] = (fs_rowset_t){r->win[j].res.num_nodes, r->win[j].res.nodes};
    return fs_exec_epoch_order(r->rws, sets, k, r->order, err);
}

/* Grows the delta scratch to n ids. */
static fs_status_t reserve(fs_epoch_run_t *r, int64_t n, fs_error_t *err)
{
    if ((size_t)n <= r->cap) return FS_OK;
    size_t cap = (size_t)n;
    int64_t *take = realloc(r->take, cap * 3 * sizeof *take);
    if (!take) return fs_error(err, FS_ERR_NOMEM, "stream: out of memory for %lld ids", (long long)n);
    r->take = take, r->new_pos = take + cap, r->new_ids = take + 2 * cap, r->cap = cap;
    return FS_OK;
}

fs_status_t fs_epoch_run_next(fs_epoch_run_t *r, fs_sampler_t *sampler, fs_epoch_run_batch_t *out, fs_error_t *err)
{
    if (r->next >= r->plan.num_batches) return FS_END;
    fs_status_t st = FS_OK;
    if (r->win_k == 0 || r->next >= r->win_first + r->win_k) st = load_window(r, sampler, err);
    if (st != FS_OK) return st;
    sampled_t *b = &r->win[r->order[r->next - r->win_first]];
    const int64_t *ids = b->res.nodes, *prev = r->current.mem ? r->current.res.nodes : NULL;
    int64_t n = b->res.num_nodes, num_rows = n;
    if (r->delta) {
        if ((st = reserve(r, n + 1, err)) != FS_OK) return st;
        int64_t prev_n = prev ? r->current.res.num_nodes : 0;
        st = fs_exec_epoch_delta(r->rws, prev, prev_n, ids, n, r->take, r->new_pos, r->new_ids, &num_rows, err);
        if (st != FS_OK) return st;
        ids = r->new_ids;
    } else if (r->cached) {
        if ((st = reserve(r, n + 1, err)) != FS_OK) return st;
        num_rows = fs_exec_uncached(r->hot_rank, r->cached, ids, n, r->new_ids);
        ids = r->new_ids;
    }
    sampled_free(&r->current); /* the window's entry moves to current */
    r->current = *b;
    memset(b, 0, sizeof *b);
    *out = (fs_epoch_run_batch_t){.index = r->next, .plan_index = r->current.plan_index, .sample = r->current.res,
                                  .labels = r->current.labels, .rows = r->table[0] ? ids : NULL,
                                  .num_rows = r->table[0] ? num_rows : 0};
    r->next++;
    sample_ahead(r, sampler);
    return FS_OK;
}

/* ---- opening ------------------------------------------------------------------- */

static fs_status_t copy_name(char *dst, size_t size, const char *what, const char *name, fs_error_t *err)
{
    if (strlen(name) >= size) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "stream: %s name is too long", what);
    memcpy(dst, name, strlen(name) + 1);
    return FS_OK;
}

static fs_status_t open_seeds(fs_epoch_run_t *r, const fs_epoch_run_opts_t *o, int64_t *num, fs_error_t *err)
{
    if (o->split && o->split[0]) {
        if (o->num_seeds) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "stream: give the seeds as a split name or "
                                          "as an array, not both");
        const fs_idset_t *split;
        fs_status_t st = fs_engine_split(r->engine, o->split, &split, err);
        if (st != FS_OK) return st;
        r->items = split->ids, *num = split->count;
        return FS_OK;
    }
    if (o->num_seeds < 1) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "stream: no seeds: give a split or a seed array");
    if (!(r->own_items = malloc(sizeof *r->own_items * (size_t)o->num_seeds)))
        return fs_error(err, FS_ERR_NOMEM, "stream: out of memory for %lld seeds", (long long)o->num_seeds);
    memcpy(r->own_items, o->seeds, sizeof *r->own_items * (size_t)o->num_seeds);
    r->items = r->own_items, *num = o->num_seeds;
    return FS_OK;
}

static fs_status_t open_tables(fs_epoch_run_t *r, const fs_epoch_run_opts_t *o, fs_error_t *err)
{
    fs_status_t st = copy_name(r->table, sizeof r->table, "table", o->table ? o->table : "", err);
    if (st == FS_OK) st = copy_name(r->labels, sizeof r->labels, "label table", o->labels ? o->labels : "", err);
    r->dtype = o->out_dtype;
    if (st == FS_OK && r->table[0]) st = fs_engine_table(r->engine, r->table, &r->dtype, &r->row_bytes, &r->dim, err);
    if (st != FS_OK || !r->labels[0]) return st;
    fs_dtype_t ldt = FS_DTYPE_INVALID;
    size_t lbytes;
    int64_t ldim;
    if ((st = fs_engine_table(r->engine, r->labels, &ldt, &lbytes, &ldim, err)) != FS_OK) return st;
    if (ldt != FS_DTYPE_I64 || ldim != 1)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "stream: label table '%s' is %s of dim %lld, not int64 of dim 1",
                        r->labels, fs_dtype_name(ldt), (long long)ldim);
    return FS_OK;
}

static fs_status_t check_options(const fs_epoch_run_t *r, const fs_epoch_run_opts_t *o, fs_error_t *err)
{
    if (o->window < 1 || o->window > FS_EPOCH_RUN_MAX_WINDOW)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "stream: window %d is outside 1..%d", o->window,
                        FS_EPOCH_RUN_MAX_WINDOW);
    if (o->window > 1 && !o->delta)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "stream: a window of %d reorders batches for Match, which needs "
                        "a delta", o->window);
    if (o->delta && !r->table[0])
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "stream: a delta needs a feature table");
    if (o->cached && (o->delta || !r->table[0]))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "stream: cached rows are for a stream of every batch's rows, "
                        "not with %s", o->delta ? "a delta" : "no feature table");
    if (o->start_batch < 0 || o->start_batch > r->plan.num_batches)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "stream: start_batch %lld is outside 0..%lld",
                        (long long)o->start_batch, (long long)r->plan.num_batches);
    return fs_limits_check(fs_engine_limits(r->engine), o->plan.batch_size, &o->sample, r->row_bytes, err);
}

fs_status_t fs_epoch_run_open(fs_engine_t *e, const fs_epoch_run_opts_t *o, fs_epoch_run_t **out, fs_error_t *err)
{
    *out = NULL;
    fs_epoch_run_t *r = calloc(1, sizeof *r);
    if (!r) return fs_error(err, FS_ERR_NOMEM, "stream: out of memory");
    r->engine = e;
    r->req = o->sample;
    r->delta = o->delta, r->window = o->window;
    fs_epoch_opts_t plan = o->plan;
    fs_status_t st = open_seeds(r, o, &plan.num_items, err);
    if (st == FS_OK) st = fs_epoch_plan(&plan, &r->plan, err);
    if (st == FS_OK) st = open_tables(r, o, err);
    if (st == FS_OK) st = check_options(r, o, err);
    if (st == FS_OK && !(r->pos = malloc(sizeof *r->pos * (size_t)plan.batch_size)))
        st = fs_error(err, FS_ERR_NOMEM, "stream: out of memory for a batch of %lld", (long long)plan.batch_size);
    if (st == FS_OK && o->delta) st = fs_reorder_ws_create(&r->rws, err);
    if (st == FS_OK && o->cached) st = fs_engine_hot(e, NULL, NULL, &r->hot_rank, err);
    r->cached = o->cached;
    if (st != FS_OK) {
        fs_epoch_run_free(r);
        return st;
    }
    r->next = o->start_batch;
    *out = r;
    return FS_OK;
}

int64_t fs_epoch_run_num_batches(const fs_epoch_run_t *r) { return r->plan.num_batches; }

void fs_epoch_run_rows(const fs_epoch_run_t *r, fs_dtype_t *dtype, size_t *row_bytes, int64_t *dim)
{
    *dtype = r->dtype, *row_bytes = r->row_bytes, *dim = r->dim;
}

void fs_epoch_run_free(fs_epoch_run_t *r)
{
    if (!r) return;
    drop_window(r);
    drop_ahead(r);
    sampled_free(&r->current);
    fs_reorder_ws_destroy(r->rws);
    free(r->own_items);
    free(r->pos);
    free(r->take);
    free(r);
}
