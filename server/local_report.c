/* local_report.c — see local_report.h.
 *
 * The map is a table indexed by wire number, so adding a method to the
 * protocol is one line here, and a number beyond it (or negative) is
 * "unknown" by construction. Its entries are checked against the
 * generated enum at compile time: renumbering the .proto fails the build. */
#include "local_report.h"

#include "fs_local.h"
#include "fs_pb.h"

static const fs_method_t by_wire[] = {
    [featstore_local_Method_METHOD_INFO] = FS_METHOD_INFO,
    [featstore_local_Method_METHOD_SAMPLE] = FS_METHOD_SAMPLE,
    [featstore_local_Method_METHOD_GATHER] = FS_METHOD_GATHER,
    [featstore_local_Method_METHOD_SAMPLE_GATHER] = FS_METHOD_SAMPLE_GATHER,
    [featstore_local_Method_METHOD_STATS] = FS_METHOD_STATS,
    [featstore_local_Method_METHOD_SPLIT] = FS_METHOD_SPLIT,
    [featstore_local_Method_METHOD_HETERO_SAMPLE] = FS_METHOD_HETERO_SAMPLE,
    [featstore_local_Method_METHOD_LINK_SAMPLE] = FS_METHOD_LINK_SAMPLE,
};

/* The numbers clients since 1.0 send: never renumbered (featstore_local.proto). */
_Static_assert(featstore_local_Method_METHOD_SAMPLE_GATHER == 3 && featstore_local_Method_METHOD_LINK_SAMPLE == 7,
               "featstore_local.Method's numbers are the wire's: never renumber them");
_Static_assert(sizeof by_wire / sizeof by_wire[0] == _featstore_local_Method_MAX + 1,
               "every featstore_local.Method has its metrics method");

fs_method_t fs_local_report_method(int32_t wire)
{
    return wire >= 0 && (size_t)wire < sizeof by_wire / sizeof by_wire[0] ? by_wire[wire] : FS_METHOD_UNKNOWN;
}

static bool add_count(void *ctx, const void *elem)
{
    fs_gather_counters_t *c = ctx;
    const featstore_local_TierCount *t = elem;
    if (t->tier >= FS_MAX_TIERS) return false;
    c->rows[t->tier] += t->rows;
    c->bytes[t->tier] += t->bytes;
    return true;
}

void fs_local_report(fs_metrics_t *m, int reader, const void *msg, size_t len)
{
    fs_gather_counters_t f = {0}, t = {0};
    featstore_local_Report r = featstore_local_Report_init_zero;
    fs_pb_list_t features = {featstore_local_TierCount_fields, sizeof(featstore_local_TierCount), .put = add_count,
                            .ctx = &f};
    fs_pb_list_t topology = {featstore_local_TierCount_fields, sizeof(featstore_local_TierCount), .put = add_count,
                            .ctx = &t};
    fs_pb_set_list(&r.features, &features);
    fs_pb_set_list(&r.topology, &topology);
    fs_error_t err;
    if (fs_local_decode(msg, len, featstore_local_Report_fields, &r, "REPORT", &err) != FS_OK) return;
    fs_metrics_request(m, fs_local_report_method(r.method), FS_TRANSPORT_UNIX, (fs_status_t)r.status,
                       (double)r.latency_ns * 1e-9);
    fs_metrics_client_reads(m, reader, r.generation, &f, &t);
}
