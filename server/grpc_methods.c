/* grpc_methods.c — what each gRPC method computes (grpc_internal.h): a
 * request decoded and checked, its answer computed on the request
 * executor's server host (server/engine.h: limits, sampling, the result
 * check, gathers, the reads counted in the store) and sent, unary or as a
 * stream (grpc_stream.c). Deadlines are checked before and after the
 * compute.
 *
 * Stream calls (an epoch stream, server/epoch_run.c) chain such streams:
 * each batch is a head message and then its rows chunks, and the next batch
 * is made only once the last chunk's send completed, so a reader that stops
 * reading parks the call like any other stream. Every batch renews the
 * call's server deadline. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_pb.h"
#include "grpc_internal.h"

static fs_status_t decode_request(call_t *c, const pb_msgdesc_t *fields, void *msg, const char *what)
{
    if (fs_wire_decode(c->request, fields, msg, what, &c->err) == FS_OK) return FS_OK;
    return c->err.code = FS_ERR_INVALID_ARGUMENT; /* undecodable bytes are the caller's mistake */
}

/* The version-1 methods: api_version 1, or 2 (a client speaking 2 sends it everywhere). */
static fs_status_t check_api(call_t *c, uint32_t version)
{
    if (version >= FS_WIRE_API_VERSION && version <= FS_WIRE_API_VERSION_MAX) return FS_OK;
    c->code_override = GRPC_STATUS_FAILED_PRECONDITION;
    return fs_error(&c->err, FS_ERR_UNSUPPORTED, "api_version %u is not supported: this server speaks "
                    "featstore.v1 api_version %d and %d", (unsigned)version, FS_WIRE_API_VERSION,
                    FS_WIRE_API_VERSION_MAX);
}

/* The typed methods exist since api_version 2; 1 does not have them. */
static fs_status_t check_api_typed(call_t *c, uint32_t version, const char *method)
{
    if (version >= FS_WIRE_API_VERSION_TYPED && version <= FS_WIRE_API_VERSION_MAX) return FS_OK;
    c->code_override = GRPC_STATUS_FAILED_PRECONDITION;
    return fs_error(&c->err, FS_ERR_UNSUPPORTED, "api_version %u is not supported by %s: it needs api_version %d "
                    "(this server speaks featstore.v1 api_version %d and %d; %s is new in %d)", (unsigned)version,
                    method, FS_WIRE_API_VERSION_TYPED, FS_WIRE_API_VERSION, FS_WIRE_API_VERSION_MAX, method,
                    FS_WIRE_API_VERSION_TYPED);
}

/* "" = the table's default form, "stored", or a dtype name (fs_codec.h). */
static fs_status_t parse_out_dtype(call_t *c, const char *name, fs_dtype_t *out)
{
    int ok;
    *out = fs_out_dtype_from_name(name, &ok);
    if (!ok) return fs_error(&c->err, FS_ERR_INVALID_ARGUMENT, "out_dtype '%s' is not a dtype name or \"stored\"", name);
    return FS_OK;
}

static fs_status_t do_info(call_t *c, int *streaming)
{
    (void)streaming;
    featstore_v1_InfoRequest req = featstore_v1_InfoRequest_init_zero;
    fs_status_t st = decode_request(c, featstore_v1_InfoRequest_fields, &req, "InfoRequest");
    if (st == FS_OK) st = check_api(c, req.api_version);
    if (st != FS_OK) return st;
    fs_info_t *info;
    if ((st = fs_engine_info(c->srv->engine, &info, &c->err)) != FS_OK) return st;
    if (c->srv->metrics && fs_metrics_info(c->srv->metrics, info) != FS_OK)
        st = fs_error(&c->err, FS_ERR_NOMEM, "out of memory describing the placement");
    featstore_v1_InfoResponse resp;
    fs_pb_info_out_t enc;
    fs_pb_info_prepare_encode(info, &resp, &enc);
    if (st == FS_OK) c->response = fs_wire_encode(featstore_v1_InfoResponse_fields, &resp, &c->err);
    fs_info_free(info);
    return st != FS_OK ? st : c->response ? FS_OK : c->err.code;
}

static fs_status_t do_sample(call_t *c, int *streaming)
{
    (void)streaming;
    featstore_v1_SampleRequest req = featstore_v1_SampleRequest_init_zero;
    fs_wire_buf_t seeds_buf = {.flags = FS_WIRE_BORROW, .align = sizeof(int64_t)};
    fs_wire_set_buf(&req.seeds, &seeds_buf);
    const int64_t *seeds = NULL;
    int64_t n = 0;
    fs_sample_req_t sreq;
    fs_sample_result_t res;
    fs_status_t st = decode_request(c, featstore_v1_SampleRequest_fields, &req, "SampleRequest");
    if (st == FS_OK) st = check_api(c, req.api_version);
    if (st == FS_OK) st = fs_wire_sample_req_from_msg(&req, &sreq, &c->err);
    if (st == FS_OK) st = fs_wire_int64s(&seeds_buf, "seeds", &seeds, &n, &c->err);
    if (st == FS_OK) st = fs_grpc_check_deadline(c, "before sampling");
    if (st == FS_OK)
        st = fs_engine_sample(c->srv->engine, c->w->sampler, seeds, n, &sreq, NULL, FS_DTYPE_INVALID, &res, &c->err);
    if (st == FS_OK) st = fs_grpc_check_deadline(c, "while sampling");
    if (st == FS_OK) {
        fs_wire_sample_src_t src;
        featstore_v1_SampleResponse resp;
        fs_wire_sample_response(&res, &src, &resp);
        c->response = fs_wire_encode(featstore_v1_SampleResponse_fields, &resp, &c->err);
        if (!c->response) st = c->err.code;
    }
    fs_wire_buf_free(&seeds_buf);
    return st;
}

static fs_status_t do_gather(call_t *c, int *streaming)
{
    featstore_v1_GatherRequest req = featstore_v1_GatherRequest_init_zero;
    c->ids_buf = (fs_wire_buf_t){.flags = FS_WIRE_BORROW, .align = sizeof(int64_t)}; /* freed with the call */
    fs_wire_set_buf(&req.ids, &c->ids_buf);
    fs_engine_t *e = c->srv->engine;
    rows_job_t *j = &c->job;
    fs_status_t st = decode_request(c, featstore_v1_GatherRequest_fields, &req, "GatherRequest");
    if (st == FS_OK) st = check_api(c, req.api_version);
    if (st == FS_OK) st = parse_out_dtype(c, req.out_dtype, &j->dtype);
    if (st == FS_OK) st = fs_wire_int64s(&c->ids_buf, "ids", &j->ids, &j->n, &c->err);
    if (st == FS_OK) st = fs_engine_table(e, req.table, &j->dtype, &j->row_bytes, &j->dim, &c->err);
    if (st == FS_OK) st = fs_engine_gather_check(e, req.table, j->ids, j->n, j->dtype, &c->err);
    if (st == FS_OK) st = fs_grpc_check_deadline(c, "before gathering");
    snprintf(j->table, sizeof j->table, "%s", req.table);
    /* the ids stay in the request, which the call keeps */
    return st == FS_OK ? fs_grpc_stream_begin(c, 0, streaming) : st;
}

static fs_status_t do_sample_gather(call_t *c, int *streaming)
{
    featstore_v1_SampleGatherRequest req = featstore_v1_SampleGatherRequest_init_zero;
    fs_wire_buf_t seeds_buf = {.flags = FS_WIRE_BORROW, .align = sizeof(int64_t)};
    fs_wire_set_buf(&req.sample.seeds, &seeds_buf);
    fs_engine_t *e = c->srv->engine;
    rows_job_t *j = &c->job;
    const int64_t *seeds = NULL;
    int64_t n = 0;
    fs_sample_req_t sreq;
    fs_sample_result_t res;
    fs_status_t st = decode_request(c, featstore_v1_SampleGatherRequest_fields, &req, "SampleGatherRequest");
    if (st == FS_OK) st = check_api(c, req.api_version);
    if (st == FS_OK && !req.has_sample)
        st = fs_error(&c->err, FS_ERR_INVALID_ARGUMENT, "SampleGatherRequest has no sample request");
    if (st == FS_OK) st = parse_out_dtype(c, req.out_dtype, &j->dtype);
    if (st == FS_OK) st = fs_engine_table(e, req.table, &j->dtype, &j->row_bytes, &j->dim, &c->err);
    if (st == FS_OK) st = fs_wire_sample_req_from_msg(&req.sample, &sreq, &c->err);
    if (st == FS_OK) st = fs_wire_int64s(&seeds_buf, "seeds", &seeds, &n, &c->err);
    if (st == FS_OK) st = fs_grpc_check_deadline(c, "before sampling");
    if (st == FS_OK) st = fs_engine_sample(e, c->w->sampler, seeds, n, &sreq, req.table, j->dtype, &res, &c->err);
    if (st == FS_OK) st = fs_grpc_check_deadline(c, "after sampling");
    if (st == FS_OK) {
        fs_wire_sample_src_t src;
        featstore_v1_SampleResponse sample;
        fs_wire_sample_response(&res, &src, &sample);
        snprintf(j->table, sizeof j->table, "%s", req.table);
        j->wrap = 1, j->ids = res.nodes, j->n = res.num_nodes, j->sample = &sample;
        st = fs_grpc_stream_begin(c, 1, streaming); /* the nodes lie in this worker's sampler: copied if needed later */
    }
    fs_wire_buf_free(&seeds_buf);
    return st;
}

/* SplitRequest.hot: the hot list's first ids (server/engine.h), each chunk
 * naming this server's instance, which the trainer's Stream requests name
 * back (StreamRequest.cache_instance). */
static fs_status_t split_hot(call_t *c, const featstore_v1_SplitRequest *req, int *streaming)
{
    if (req->hot < 0 || req->name[0])
        return fs_error(&c->err, FS_ERR_INVALID_ARGUMENT, "SplitRequest: give a split's name or hot > 0, not both "
                        "(name '%s', hot %lld)", req->name, (long long)req->hot);
    const int64_t *order;
    const int32_t *rank;
    int64_t len;
    fs_status_t st = fs_engine_hot(c->srv->engine, &order, &len, &rank, &c->err);
    if (st != FS_OK) return st;
    c->job = (rows_job_t){.contig = (const char *)order, .n = req->hot < len ? req->hot : len, .dtype = FS_DTYPE_I64,
                          .row_bytes = sizeof(int64_t), .dim = 1, .instance = c->srv->instance}; /* the engine's */
    return fs_grpc_stream_begin(c, 0, streaming);
}

static fs_status_t do_split(call_t *c, int *streaming)
{
    featstore_v1_SplitRequest req = featstore_v1_SplitRequest_init_zero;
    fs_status_t st = decode_request(c, featstore_v1_SplitRequest_fields, &req, "SplitRequest");
    if (st == FS_OK) st = check_api(c, req.api_version);
    if (st == FS_OK && req.hot) return split_hot(c, &req, streaming);
    const fs_idset_t *split = NULL;
    if (st == FS_OK) st = fs_engine_split(c->srv->engine, req.name, &split, &c->err);
    if (st != FS_OK) return st;
    c->job = (rows_job_t){.contig = (const char *)split->ids, .n = split->count, .dtype = FS_DTYPE_I64,
                          .row_bytes = sizeof(int64_t), .dim = 1}; /* the dataset's memory: lives as long as the server */
    return fs_grpc_stream_begin(c, 0, streaming);
}

/* A typed batch's image goes to the call (the executor's region), which
 * drops its reference however the call ends; chunks in flight keep theirs
 * (image_ref_t). */
static fs_status_t alloc_image(fs_exec_region_t *into, size_t bytes, fs_error_t *err)
{
    call_t *c = into->ctx;
    fs_grpc_image_unref(c->image);
    into->base = NULL, into->cap = 0;
    if (!bytes) bytes = 1;
    c->image = calloc(1, sizeof *c->image);
    if (c->image && !(c->image->mem = fs_grpc_image_take(bytes, &c->image->cap))) {
        c->image->mem = malloc(bytes);
        c->image->cap = bytes;
    }
    if (c->image && !c->image->mem) {
        free(c->image);
        c->image = NULL;
    }
    if (!c->image) return fs_error(err, FS_ERR_NOMEM, "out of memory for a typed batch of %zu bytes", bytes);
    atomic_init(&c->image->refs, 1);
    into->base = c->image->mem, into->cap = c->image->cap;
    return FS_OK;
}

/* A decode that failed on a list too long says which. */
static fs_status_t decode_typed(call_t *c, const pb_msgdesc_t *fields, void *msg, const char *what,
                                const fs_wire_hetero_in_t *in)
{
    fs_status_t st = decode_request(c, fields, msg, what);
    if (st != FS_OK && in->problem[0]) st = fs_error(&c->err, FS_ERR_INVALID_ARGUMENT, "%s: %s", what, in->problem);
    return st;
}

/* Samples, gathers and lays the batch out as one image (fs_engine_typed),
 * then streams it as BatchImageChunks of about 1 MiB, but for the rows the
 * trainer caches when it says so for this server's instance. */
static fs_status_t run_typed(call_t *c, const fs_wire_hetero_in_t *in, int link, int *streaming)
{
    fs_exec_region_t image = {.ctx = c, .grow = alloc_image};
    size_t len = 0;
    fs_engine_cached_t cached = {.rows = in->cache_instance == c->srv->instance ? in->cached : 0, /* else all */
                                 .table = in->cached_table};
    fs_status_t st = in->cached < 0 ? fs_error(&c->err, FS_ERR_INVALID_ARGUMENT, "TypedSampling: cached %lld is "
                                               "negative", (long long)in->cached)
                                    : fs_grpc_check_deadline(c, "before sampling");
    if (st == FS_OK) /* the pool splits the gathers too */
        st = fs_engine_typed(c->srv->engine, c->w->typed, c->srv->pool, link ? NULL : in->groups,
                             link ? 0 : in->num_groups, link ? &in->link : NULL, &in->req, in->joined_edges, &cached,
                             &image, &len, &c->err);
    if (st == FS_OK) st = fs_grpc_check_deadline(c, "after sampling");
    if (st != FS_OK) return st;
    c->job = (rows_job_t){.contig = image.base, .image = c->image, .n = (int64_t)(len / 8), .dtype = FS_DTYPE_I64,
                          .row_bytes = 8, .dim = 1, /* an image is whole 8-byte words */
                          .hole_at = cached.hole_at, .hole_end = cached.hole_end};
    return fs_grpc_stream_begin(c, 0, streaming);
}

static fs_status_t do_hetero_sample(call_t *c, int *streaming)
{
    featstore_v1_HeteroSampleRequest req;
    fs_wire_hetero_in_t in;
    fs_wire_hetero_prepare(&req, &in);
    fs_status_t st = decode_typed(c, featstore_v1_HeteroSampleRequest_fields, &req, "HeteroSampleRequest", &in);
    if (st == FS_OK) st = check_api_typed(c, req.api_version, "HeteroSample");
    if (st == FS_OK) st = fs_wire_hetero_take(&req, &in, &c->err);
    if (st == FS_OK) st = run_typed(c, &in, 0, streaming); /* in's ids point into c->request, which the call keeps */
    fs_wire_hetero_in_free(&in);
    return st;
}

static fs_status_t do_link_sample(call_t *c, int *streaming)
{
    featstore_v1_LinkSampleRequest req;
    fs_wire_hetero_in_t in;
    fs_wire_link_prepare(&req, &in);
    fs_status_t st = decode_typed(c, featstore_v1_LinkSampleRequest_fields, &req, "LinkSampleRequest", &in);
    if (st == FS_OK) st = check_api_typed(c, req.api_version, "LinkSample");
    if (st == FS_OK) st = fs_wire_link_take(&req, &in, &c->err);
    if (st == FS_OK) st = run_typed(c, &in, 1, streaming);
    fs_wire_hetero_in_free(&in);
    return st;
}

static bool encode_text_cb(pb_ostream_t *stream, const pb_field_t *field, void *const *arg)
{
    const char *text = *arg;
    return pb_encode_tag_for_field(stream, field) && pb_encode_string(stream, (const pb_byte_t *)text, strlen(text));
}

static fs_status_t do_stats(call_t *c, int *streaming)
{
    (void)streaming;
    featstore_v1_StatsRequest req = featstore_v1_StatsRequest_init_zero;
    fs_status_t st = decode_request(c, featstore_v1_StatsRequest_fields, &req, "StatsRequest");
    if (st == FS_OK) st = check_api(c, req.api_version);
    if (st != FS_OK) return st;
    fs_metrics_t *m = c->srv->metrics;
    fs_shard_metrics_t *sm = c->srv->shard_metrics; /* a shard server's */
    char *text = m ? fs_metrics_render(m) : sm ? fs_shard_metrics_render(sm) : NULL;
    if ((m || sm) && !text) return fs_error(&c->err, FS_ERR_NOMEM, "out of memory rendering the metrics");
    featstore_v1_StatsResponse resp = featstore_v1_StatsResponse_init_zero;
    resp.api_version = FS_WIRE_API_VERSION;
    resp.prometheus_text.funcs.encode = encode_text_cb;
    resp.prometheus_text.arg = text ? text : "";
    c->response = fs_wire_encode(featstore_v1_StatsResponse_fields, &resp, &c->err);
    free(text);
    return c->response ? FS_OK : c->err.code;
}

/* Makes the run's next batch and sends its head (the sample, the batch's
 * numbers and labels), with the gatherers asked for its first rows chunk;
 * FS_END after the last batch. On FS_OK the step is over. */
static fs_status_t epoch_send_next(call_t *c)
{
    fs_grpc_renew_deadline(c); /* a stream lasts an epoch: the server's timeout counts from each batch */
    fs_epoch_run_batch_t b;
    fs_status_t st = fs_epoch_run_next(c->run, c->w->sampler, &b, &c->err);
    if (st == FS_OK) st = fs_grpc_check_deadline(c, "after sampling");
    if (st != FS_OK) return st;
    featstore_v1_StreamChunk head = featstore_v1_StreamChunk_init_zero;
    fs_wire_sample_src_t src;
    fs_wire_bytes_t labels;
    head.api_version = FS_WIRE_API_VERSION_TYPED;
    head.has_sample = true;
    fs_wire_sample_response(&b.sample, &src, &head.sample);
    for (int h = 0; h < b.sample.num_hops; h++) /* implied by dst_offsets: the receiver rebuilds it */
        fs_wire_set_bytes(&head.sample.blocks[h].edge_dst, &src.arr[h][1], NULL, 0);
    head.batch = b.index, head.plan_batch = b.plan_index;
    if (b.labels) fs_wire_set_bytes(&head.labels, &labels, b.labels, sizeof(int64_t) * (size_t)b.sample.num_seeds);
    grpc_byte_buffer *bb = fs_wire_encode(featstore_v1_StreamChunk_fields, &head, &c->err);
    if (!bb) return c->err.code;
    c->job.ids = b.rows, c->job.n = b.num_rows; /* the run's memory, until its next batch */
    c->chunks = c->job.table[0] ? fs_grpc_chunk_count(&c->job) : 0;
    c->sent_chunks = 0;
    if (c->chunks) fs_grpc_ahead_submit(&c->srv->gatherers, c, 0);
    c->sending_head = 1;
    return fs_grpc_send_message(c, bb);
}

/* A Stream call's send completed (ok) or failed: the batch's next rows
 * chunk, or the next batch, or the end. */
void fs_grpc_epoch_sent(call_t *c, int ok)
{
    fs_status_t st;
    if (!ok) {
        st = fs_grpc_past_deadline(c) ? fs_grpc_check_deadline(c, "while streaming batches")
                              : fs_error(&c->err, FS_ERR_UNAVAILABLE, "the client went away after %lld of %lld "
                                         "batches", (long long)c->batches_sent,
                                         (long long)fs_epoch_run_num_batches(c->run));
    } else if (c->sending_head ? c->chunks > 0 : ++c->sent_chunks < c->chunks) {
        c->sending_head = 0;
        st = fs_grpc_check_deadline(c, "while streaming rows");
        if (st == FS_OK && (st = fs_grpc_send_ready(c)) == FS_OK) return;
    } else {
        c->sending_head = 0;
        c->batches_sent++;
        if ((st = epoch_send_next(c)) == FS_OK) return;
        if (st == FS_END) st = FS_OK;
    }
    fs_grpc_finish_call(c, st);
}

/* The request's plan (fs_epoch_plan checks the values). */
static fs_status_t plan_from_msg(call_t *c, const featstore_v1_StreamRequest *m, fs_epoch_opts_t *p)
{
    *p = (fs_epoch_opts_t){.batch_size = m->batch_size, .drop_last = m->drop_last, .chunk = m->chunk,
                           .seed = m->shuffle_seed, .epoch = m->epoch, .rank = m->rank,
                           .world_size = m->world_size ? m->world_size : 1};
    return fs_wire_order_from_name(m->order, &p->order, &c->err);
}

static fs_status_t do_stream(call_t *c, int *streaming)
{
    featstore_v1_StreamRequest req = featstore_v1_StreamRequest_init_zero;
    fs_wire_buf_t seeds_buf = {.flags = FS_WIRE_BORROW, .align = sizeof(int64_t)};
    fs_wire_set_buf(&req.seeds, &seeds_buf);
    fs_epoch_run_opts_t o = {.window = 1};
    fs_status_t st = decode_request(c, featstore_v1_StreamRequest_fields, &req, "StreamRequest");
    if (st == FS_OK) st = check_api_typed(c, req.api_version, "Stream");
    if (st == FS_OK && !req.has_sample)
        st = fs_error(&c->err, FS_ERR_INVALID_ARGUMENT, "StreamRequest has no sample request");
    if (st == FS_OK) st = fs_wire_sample_req_from_msg(&req.sample, &o.sample, &c->err);
    if (st == FS_OK) st = fs_wire_int64s(&seeds_buf, "seeds", &o.seeds, &o.num_seeds, &c->err);
    if (st == FS_OK) st = parse_out_dtype(c, req.out_dtype, &o.out_dtype);
    if (st == FS_OK) st = plan_from_msg(c, &req, &o.plan);
    if (st == FS_OK) {
        o.split = req.split, o.table = req.table, o.labels = req.labels, o.delta = req.delta;
        o.window = req.window ? req.window : 1, o.start_batch = req.start_batch;
        if (req.cached < 0)
            st = fs_error(&c->err, FS_ERR_INVALID_ARGUMENT, "StreamRequest: cached %lld is negative",
                          (long long)req.cached);
        o.cached = req.cache_instance == c->srv->instance ? req.cached : 0; /* another server's cache: every row */
    }
    if (st == FS_OK) st = fs_epoch_run_open(c->srv->engine, &o, &c->run, &c->err); /* the seeds are copied */
    fs_wire_buf_free(&seeds_buf);
    if (st != FS_OK) return st;
    rows_job_t *j = &c->job;
    snprintf(j->table, sizeof j->table, "%s", req.table);
    fs_epoch_run_rows(c->run, &j->dtype, &j->row_bytes, &j->dim);
    j->wrap = 1; /* rows messages are SampleGatherChunks with features alone: StreamChunk's fields 1 and 3 */
    st = epoch_send_next(c);
    *streaming = st == FS_OK;
    return st == FS_END ? FS_OK : st; /* resumed at the end: no batch */
}

/* A Shard* call in the shard's counters (shard_metrics.h): its answer's
 * bytes, its time since the call began. */
static void count_shard_call(call_t *c, fs_shard_call_t call, fs_status_t st, int64_t ids, int hop)
{
    uint64_t bytes = st == FS_OK && c->response ? (uint64_t)grpc_byte_buffer_length(c->response) : 0;
    fs_shard_metrics_call(c->srv->shard_metrics, call, c->peer, st, ids, bytes, hop, fs_grpc_now() - c->t0);
}

/* A Shard* request routed by an older map than this shard holds: the
 * caller is told, and fetches the map again (a part may have moved). */
static fs_status_t check_revision(call_t *c, int64_t theirs)
{
    int64_t mine = __atomic_load_n(&c->srv->map_revision, __ATOMIC_RELAXED);
    if (theirs > 0 && mine > theirs)
        return fs_error(&c->err, FS_ERR_NOT_FOUND, "stale shard map: the request was routed by revision %lld, this "
                        "shard holds revision %lld: fetch the map again", (long long)theirs, (long long)mine);
    return FS_OK;
}

/* A shard's picks as the answer (proto/fs_wire_picks.c): counts as varints,
 * the sources in 4 bytes each when they fit, sent from the memory they were
 * narrowed into. */
static fs_status_t picks_answer(call_t *c, const fs_typed_picks_t *out, int64_t n)
{
    int64_t picks = out->off[n];
    uint8_t *counts = malloc(fs_wire_counts_bound(n));
    int32_t *narrow = malloc((size_t)picks * sizeof *narrow + 1);
    if (!counts || !narrow) {
        free(counts), free(narrow);
        return fs_error(&c->err, FS_ERR_NOMEM, "ShardPicks: out of memory for %lld picks", (long long)picks);
    }
    featstore_v1_ShardPicksResponse resp = featstore_v1_ShardPicksResponse_init_zero;
    fs_wire_bytes_t b[2];
    fs_wire_set_bytes(&resp.counts, &b[0], counts, fs_wire_put_counts(out->off, n, counts));
    if (out->eid) fs_wire_set_bytes(&resp.edge_ids, &b[1], out->eid, (size_t)picks * sizeof *out->eid);
    grpc_slice sources;
    if (fs_wire_narrow_ids(out->src, picks, narrow)) {
        sources = grpc_slice_new(narrow, (size_t)picks * sizeof *narrow, free);
    } else {
        free(narrow);
        resp.wide_sources = true;
        sources = grpc_slice_from_copied_buffer((const char *)out->src, (size_t)picks * sizeof *out->src);
    }
    c->response = fs_wire_encode_data(featstore_v1_ShardPicksResponse_fields, &resp,
                                      featstore_v1_ShardPicksResponse_sources_tag, sources, &c->err);
    grpc_slice_unref(sources);
    free(counts);
    return c->response ? FS_OK : c->err.code;
}

/* Owner-routed sampling's shard side: the picks of the given destinations,
 * answered from the shard's parts (server/shard.h). */
static fs_status_t do_shard_picks(call_t *c, int *streaming)
{
    (void)streaming;
    const fs_shard_t *shard = fs_shard_live_get(c->srv->shard); /* the parts now, until this call ends */
    featstore_v1_ShardPicksRequest req = featstore_v1_ShardPicksRequest_init_zero;
    fs_wire_buf_t ids_buf = {.flags = FS_WIRE_BORROW, .align = sizeof(int64_t)}, time_buf = ids_buf, batch_buf = ids_buf,
                  xat_buf = ids_buf, xsrc_buf = ids_buf;
    fs_wire_set_buf(&req.ids, &ids_buf);
    fs_wire_set_buf(&req.time, &time_buf);
    fs_wire_set_buf(&req.batch, &batch_buf);
    fs_wire_set_buf(&req.excl_at, &xat_buf);
    fs_wire_set_buf(&req.excl_src, &xsrc_buf);
    const int64_t *ids = NULL, *time = NULL, *batch = NULL, *xat = NULL, *xsrc = NULL;
    int64_t n = 0, nt = 0, nb = 0, nxa = 0, nxs = 0;
    fs_status_t st = decode_request(c, featstore_v1_ShardPicksRequest_fields, &req, "ShardPicksRequest");
    if (st == FS_OK) st = check_api_typed(c, req.api_version, "ShardPicks");
    if (st == FS_OK) st = check_revision(c, req.map_revision);
    if (st == FS_OK) st = fs_wire_int64s(&ids_buf, "ids", &ids, &n, &c->err);
    if (st == FS_OK && time_buf.len) st = fs_wire_int64s(&time_buf, "time", &time, &nt, &c->err);
    if (st == FS_OK && batch_buf.len) st = fs_wire_int64s(&batch_buf, "batch", &batch, &nb, &c->err);
    if (st == FS_OK && xat_buf.len) st = fs_wire_int64s(&xat_buf, "excl_at", &xat, &nxa, &c->err);
    if (st == FS_OK && xsrc_buf.len) st = fs_wire_int64s(&xsrc_buf, "excl_src", &xsrc, &nxs, &c->err);
    if (st == FS_OK && ((time && nt != n) || (batch && nb != n) || nxa != nxs))
        st = fs_error(&c->err, FS_ERR_INVALID_ARGUMENT, "ShardPicks: %lld times, %lld batches and %lld/%lld "
                      "exclusions for %lld ids", (long long)nt, (long long)nb, (long long)nxa, (long long)nxs,
                      (long long)n);
    if (st == FS_OK && !c->w->shard_ws) st = fs_shard_ws_create(&c->w->shard_ws, &c->err);
    fs_typed_picks_req_t q = {.hop = req.hop, .etype = req.edge_type, .fanout = req.fanout,
                              .mode = (fs_sample_mode_t)req.mode, .seed = req.seed, .want_edge_ids = req.want_edge_ids,
                              .temporal = (fs_temporal_t)req.temporal, .strict = req.strict, .window = req.window,
                              .disjoint = req.disjoint, .time = time, .batch = batch, .num_excl = nxa,
                              .excl_at = xat, .excl_src = xsrc};
    fs_typed_picks_t out;
    if (st == FS_OK) st = fs_shard_picks(shard, c->w->shard_ws, &q, ids, n, &out, &c->err);
    if (st == FS_OK) st = fs_grpc_check_deadline(c, "while picking");
    if (st == FS_OK) st = picks_answer(c, &out, n);
    fs_wire_buf_free(&ids_buf), fs_wire_buf_free(&time_buf), fs_wire_buf_free(&batch_buf);
    fs_wire_buf_free(&xat_buf), fs_wire_buf_free(&xsrc_buf);
    fs_shard_live_put(c->srv->shard, shard);
    count_shard_call(c, FS_SHARD_CALL_PICKS, st, n, req.hop);
    return st;
}

/* A gather grouped by owner, the shard's side: its nodes' stored rows. */
static fs_status_t do_shard_rows(call_t *c, int *streaming)
{
    (void)streaming;
    const fs_shard_t *shard = fs_shard_live_get(c->srv->shard); /* the parts now, until this call ends */
    featstore_v1_ShardRowsRequest req = featstore_v1_ShardRowsRequest_init_zero;
    fs_wire_buf_t ids_buf = {.flags = FS_WIRE_BORROW, .align = sizeof(int64_t)};
    fs_wire_set_buf(&req.ids, &ids_buf);
    const int64_t *ids = NULL;
    int64_t n = 0;
    size_t row_bytes = 0;
    void *rows = NULL;
    fs_status_t st = decode_request(c, featstore_v1_ShardRowsRequest_fields, &req, "ShardRowsRequest");
    if (st == FS_OK) st = check_api_typed(c, req.api_version, "ShardRows");
    if (st == FS_OK) st = check_revision(c, req.map_revision);
    if (st == FS_OK) st = fs_wire_int64s(&ids_buf, "ids", &ids, &n, &c->err);
    if (st == FS_OK) st = fs_shard_table(shard, req.node_type, req.table, &row_bytes, &c->err);
    if (st == FS_OK) st = fs_limits_check(&c->srv->limits, n, NULL, row_bytes, &c->err);
    if (st == FS_OK && !(rows = malloc((size_t)n * row_bytes + 1)))
        st = fs_error(&c->err, FS_ERR_NOMEM, "ShardRows: out of memory for %lld rows", (long long)n);
    if (st == FS_OK) st = fs_shard_rows(shard, req.node_type, req.table, ids, n, rows, &c->err);
    if (st == FS_OK) st = fs_grpc_check_deadline(c, "while reading rows");
    if (st == FS_OK) { /* the rows go out from where they were read (a trainer's remote rows: most of its bytes) */
        featstore_v1_ShardRowsResponse resp = featstore_v1_ShardRowsResponse_init_zero;
        grpc_slice data = grpc_slice_new(rows, (size_t)n * row_bytes, free);
        rows = NULL; /* the slice's now */
        c->response = fs_wire_encode_data(featstore_v1_ShardRowsResponse_fields, &resp,
                                          featstore_v1_ShardRowsResponse_rows_tag, data, &c->err);
        grpc_slice_unref(data);
        if (!c->response) st = c->err.code;
    }
    free(rows);
    fs_wire_buf_free(&ids_buf);
    fs_shard_live_put(c->srv->shard, shard);
    count_shard_call(c, FS_SHARD_CALL_ROWS, st, n, -1);
    return st;
}

/* A piece of one of the partitioning's small files, for a trainer to see
 * the whole cluster (the book, node maps, splits, part manifests). */
static fs_status_t do_shard_file(call_t *c, int *streaming)
{
    (void)streaming;
    const fs_shard_t *shard = fs_shard_live_get(c->srv->shard); /* the parts now, until this call ends */
    featstore_v1_ShardFileRequest req = featstore_v1_ShardFileRequest_init_zero;
    fs_status_t st = decode_request(c, featstore_v1_ShardFileRequest_fields, &req, "ShardFileRequest");
    if (st == FS_OK) st = check_api_typed(c, req.api_version, "ShardFile");
    int64_t max = req.max_bytes < FS_WIRE_SHARD_FILE_CHUNK ? req.max_bytes : FS_WIRE_SHARD_FILE_CHUNK, len = 0, size = 0;
    void *buf = st == FS_OK && max > 0 ? malloc((size_t)max) : NULL;
    if (st == FS_OK && max > 0 && !buf) st = fs_error(&c->err, FS_ERR_NOMEM, "ShardFile: out of memory");
    if (st == FS_OK) st = fs_shard_file(shard, req.name, req.offset, max, buf, &len, &size, &c->err);
    if (st == FS_OK) {
        featstore_v1_ShardFileResponse resp = {.size = size};
        fs_wire_bytes_t b;
        fs_wire_set_bytes(&resp.data, &b, buf, (size_t)len);
        c->response = fs_wire_encode(featstore_v1_ShardFileResponse_fields, &resp, &c->err);
        if (!c->response) st = c->err.code;
    }
    free(buf);
    fs_shard_live_put(c->srv->shard, shard);
    count_shard_call(c, FS_SHARD_CALL_FILE, st, 0, -1);
    return st;
}

/* A link batch's strict negatives, the shard's side: which of a round's
 * pairs are edges, for the destinations it holds. */
static fs_status_t do_shard_edges(call_t *c, int *streaming)
{
    (void)streaming;
    const fs_shard_t *shard = fs_shard_live_get(c->srv->shard); /* the parts now, until this call ends */
    featstore_v1_ShardEdgesRequest req = featstore_v1_ShardEdgesRequest_init_zero;
    fs_wire_buf_t dst_buf = {.flags = FS_WIRE_BORROW, .align = sizeof(int64_t)}, src_buf = dst_buf;
    fs_wire_set_buf(&req.dst, &dst_buf);
    fs_wire_set_buf(&req.src, &src_buf);
    const int64_t *dst = NULL, *src = NULL;
    int64_t n = 0, ns = 0;
    uint8_t *ans = NULL;
    fs_status_t st = decode_request(c, featstore_v1_ShardEdgesRequest_fields, &req, "ShardEdgesRequest");
    if (st == FS_OK) st = check_api_typed(c, req.api_version, "ShardEdges");
    if (st == FS_OK) st = check_revision(c, req.map_revision);
    if (st == FS_OK) st = fs_wire_int64s(&dst_buf, "dst", &dst, &n, &c->err);
    if (st == FS_OK) st = fs_wire_int64s(&src_buf, "src", &src, &ns, &c->err);
    if (st == FS_OK && ns != n)
        st = fs_error(&c->err, FS_ERR_INVALID_ARGUMENT, "ShardEdges: %lld sources for %lld destinations",
                      (long long)ns, (long long)n);
    if (st == FS_OK) st = fs_limits_check(&c->srv->limits, n, NULL, 0, &c->err);
    if (st == FS_OK && !(ans = malloc((size_t)n + 1)))
        st = fs_error(&c->err, FS_ERR_NOMEM, "ShardEdges: out of memory for %lld pairs", (long long)n);
    if (st == FS_OK) st = fs_shard_edges(shard, req.edge_type, dst, src, n, ans, &c->err);
    if (st == FS_OK) st = fs_grpc_check_deadline(c, "while testing edges");
    if (st == FS_OK) {
        featstore_v1_ShardEdgesResponse resp = featstore_v1_ShardEdgesResponse_init_zero;
        fs_wire_bytes_t b;
        fs_wire_set_bytes(&resp.is_edge, &b, ans, (size_t)n);
        c->response = fs_wire_encode(featstore_v1_ShardEdgesResponse_fields, &resp, &c->err);
        if (!c->response) st = c->err.code;
    }
    free(ans);
    fs_wire_buf_free(&dst_buf), fs_wire_buf_free(&src_buf);
    fs_shard_live_put(c->srv->shard, shard);
    count_shard_call(c, FS_SHARD_CALL_EDGES, st, n, -1);
    return st;
}

const fs_grpc_method_t fs_grpc_methods[] = {
    {FS_WIRE_METHOD_INFO, FS_METHOD_INFO, do_info, 0},
    {FS_WIRE_METHOD_SAMPLE, FS_METHOD_SAMPLE, do_sample, 0},
    {FS_WIRE_METHOD_GATHER, FS_METHOD_GATHER, do_gather, 0},
    {FS_WIRE_METHOD_SAMPLE_GATHER, FS_METHOD_SAMPLE_GATHER, do_sample_gather, 0},
    {FS_WIRE_METHOD_STATS, FS_METHOD_STATS, do_stats, 2},
    {FS_WIRE_METHOD_SPLIT, FS_METHOD_SPLIT, do_split, 0},
    {FS_WIRE_METHOD_HETERO_SAMPLE, FS_METHOD_HETERO_SAMPLE, do_hetero_sample, 0},
    {FS_WIRE_METHOD_LINK_SAMPLE, FS_METHOD_LINK_SAMPLE, do_link_sample, 0},
    {FS_WIRE_METHOD_STREAM, FS_METHOD_STREAM, do_stream, 0},
    {FS_WIRE_METHOD_SHARD_PICKS, FS_METHOD_SHARD_PICKS, do_shard_picks, 1},
    {FS_WIRE_METHOD_SHARD_ROWS, FS_METHOD_SHARD_ROWS, do_shard_rows, 1},
    {FS_WIRE_METHOD_SHARD_FILE, FS_METHOD_SHARD_FILE, do_shard_file, 1},
    {FS_WIRE_METHOD_SHARD_EDGES, FS_METHOD_SHARD_EDGES, do_shard_edges, 1},
};
_Static_assert(sizeof fs_grpc_methods / sizeof fs_grpc_methods[0] == FS_GRPC_NUM_METHODS, "FS_GRPC_NUM_METHODS");

int fs_grpc_find_method(grpc_slice path)
{
    for (int i = 0; i < FS_GRPC_NUM_METHODS; i++)
        if (grpc_slice_str_cmp(path, fs_grpc_methods[i].path) == 0) return i;
    return -1;
}

