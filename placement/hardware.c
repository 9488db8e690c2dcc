/* hardware.c — hardware presets, the JSON topology reader and validation.
 *
 * Presets are tables, not code: one function per preset would hide that
 * they differ only in numbers. The JSON reader fills a zeroed description
 * field by field and validates the result with the same checks a hand-built
 * description gets, so both paths reject the same mistakes. */
#include "hardware.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fs_json.h"

#define GIB (1LL << 30)

static const char *const fabric_names[FS_FABRIC_COUNT_] = {"pcie", "nvlink", "nvswitch"};

const char *fs_fabric_name(fs_fabric_t f)
{
    return (unsigned)f < FS_FABRIC_COUNT_ ? fabric_names[f] : "unknown";
}

/* ---- presets ---------------------------------------------------------------- */

typedef struct {
    int a, b;
    double gbps;
} link_t;

typedef struct {
    const char *name;
    fs_fabric_t fabric;
    int num_gpus;
    int64_t memory_bytes;
    double host_gbps, local_gbps;
    int all_to_all;        /* every pair linked at all_gbps (links ignored) */
    double all_gbps;
    int num_links;
    link_t links[16];
} preset_t;

/* DGX-1 V100 hybrid cube-mesh in the numbering of the XGNN paper's Fig. 7/8 (P1, docs/papers.md).
 * The paper does not print the adjacency, so it is the standard DGX-1V
 * topology (two NVLink 4-cliques, one cross link per GPU, 6 NVLinks of
 * 25 GB/s per GPU, doubled links = 50 GB/s) relabelled to match every fact
 * the paper states: GPU0 cannot reach GPU4, 5, 7; G0..G3 form a clique
 * (4G_f); G0, G1, G6, G7 form a ring (4G_c); W4 reads from GPU2, 4, 5, 6, 7. */
static const preset_t presets[] = {
    {.name = "pcie4", .fabric = FS_FABRIC_PCIE, .num_gpus = 4, .memory_bytes = 32 * GIB,
     .host_gbps = 25.0, .local_gbps = 900.0},
    {.name = "nvlink-pairs", .fabric = FS_FABRIC_NVLINK, .num_gpus = 4, .memory_bytes = 32 * GIB,
     .host_gbps = 25.0, .local_gbps = 900.0, .num_links = 2, .links = {{0, 1, 50.0}, {2, 3, 50.0}}},
    {.name = "dgx1-v100", .fabric = FS_FABRIC_NVLINK, .num_gpus = 8, .memory_bytes = 16 * GIB,
     .host_gbps = 12.0, .local_gbps = 900.0, .num_links = 16,
     .links = {{0, 1, 25}, {0, 2, 25}, {0, 3, 50}, {1, 2, 50}, {1, 3, 25}, {2, 3, 50},   /* clique 0-3 */
               {4, 5, 50}, {4, 6, 25}, {4, 7, 50}, {5, 6, 50}, {5, 7, 25}, {6, 7, 25},   /* clique 4-7 */
               {0, 6, 50}, {1, 7, 50}, {2, 4, 25}, {3, 5, 25}}},                         /* cross links */
    {.name = "nvswitch8", .fabric = FS_FABRIC_NVSWITCH, .num_gpus = 8, .memory_bytes = 80 * GIB,
     .host_gbps = 25.0, .local_gbps = 2000.0, .all_to_all = 1, .all_gbps = 300.0},
};
enum { NUM_PRESETS = sizeof presets / sizeof presets[0] };

const char *fs_hw_preset_name(int i)
{
    return i >= 0 && i < NUM_PRESETS ? presets[i].name : NULL;
}

static void set_link(fs_hardware_t *hw, int a, int b, double gbps)
{
    hw->link_gbps[a][b] = hw->link_gbps[b][a] = gbps;
}

static void fill_preset(const preset_t *p, fs_hardware_t *hw)
{
    memset(hw, 0, sizeof *hw);
    snprintf(hw->name, sizeof hw->name, "%s", p->name);
    hw->num_gpus = p->num_gpus;
    hw->fabric = p->fabric;
    for (int g = 0; g < p->num_gpus; g++) {
        hw->memory_bytes[g] = p->memory_bytes;
        hw->host_gbps[g] = p->host_gbps;
        hw->local_gbps[g] = p->local_gbps;
        for (int h = 0; h < p->num_gpus && p->all_to_all; h++)
            if (h != g) hw->link_gbps[g][h] = p->all_gbps;
    }
    for (int l = 0; l < p->num_links; l++) set_link(hw, p->links[l].a, p->links[l].b, p->links[l].gbps);
}

fs_status_t fs_hw_preset(const char *name, fs_hardware_t *out, fs_error_t *err)
{
    if (!name || !out) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "hardware preset: NULL argument");
    for (int i = 0; i < NUM_PRESETS; i++) {
        if (strcmp(name, presets[i].name) == 0) {
            fill_preset(&presets[i], out);
            return FS_OK;
        }
    }
    char known[256] = "";
    for (int i = 0; i < NUM_PRESETS; i++) {
        size_t len = strlen(known);
        snprintf(known + len, sizeof known - len, "%s%s", i ? ", " : "", presets[i].name);
    }
    return fs_error(err, FS_ERR_NOT_FOUND, "unknown hardware preset '%s' (known: %s)", name, known);
}

/* ---- validation -------------------------------------------------------------- */

uint32_t fs_hw_peer_mask(const fs_hardware_t *hw, int i)
{
    uint32_t m = 0;
    for (int j = 0; j < hw->num_gpus; j++)
        if (fs_hw_linked(hw, i, j)) m |= 1u << j;
    return m;
}

static int bad_gbps(double v)
{
    return !isfinite(v) || v < 0;
}

fs_status_t fs_hw_validate(const fs_hardware_t *hw, fs_error_t *err)
{
    if (!hw) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "hardware: NULL description");
    int n = hw->num_gpus;
    if (n < 1 || n > FS_HW_MAX_GPUS)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "hardware '%s': %d GPUs (need 1..%d)", hw->name, n,
                        FS_HW_MAX_GPUS);
    if ((unsigned)hw->fabric >= FS_FABRIC_COUNT_)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "hardware '%s': unknown fabric %d", hw->name, hw->fabric);
    for (int i = 0; i < n; i++) {
        if (hw->memory_bytes[i] < 0)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "hardware '%s': GPU %d has negative memory (%lld bytes)",
                            hw->name, i, (long long)hw->memory_bytes[i]);
        if (bad_gbps(hw->host_gbps[i]) || hw->host_gbps[i] == 0)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "hardware '%s': GPU %d host bandwidth %g GB/s (need > 0)",
                            hw->name, i, hw->host_gbps[i]);
        if (bad_gbps(hw->local_gbps[i]))
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "hardware '%s': GPU %d local bandwidth %g GB/s", hw->name,
                            i, hw->local_gbps[i]);
        if (hw->link_gbps[i][i] != 0)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "hardware '%s': GPU %d has a link to itself", hw->name, i);
        for (int j = 0; j < n; j++) {
            if (bad_gbps(hw->link_gbps[i][j]))
                return fs_error(err, FS_ERR_INVALID_ARGUMENT, "hardware '%s': link %d-%d bandwidth %g GB/s",
                                hw->name, i, j, hw->link_gbps[i][j]);
            if (hw->link_gbps[i][j] != hw->link_gbps[j][i])
                return fs_error(err, FS_ERR_INVALID_ARGUMENT,
                                "hardware '%s': link %d-%d is %g GB/s one way and %g the other (links are symmetric)",
                                hw->name, i, j, hw->link_gbps[i][j], hw->link_gbps[j][i]);
        }
    }
    return FS_OK;
}

fs_status_t fs_hw_scale_memory(fs_hardware_t *hw, double factor, fs_error_t *err)
{
    if (!hw) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "scale memory: NULL hardware");
    if (!isfinite(factor) || factor <= 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "scale memory: factor %g (need > 0)", factor);
    for (int g = 0; g < hw->num_gpus; g++) {
        double scaled = floor((double)hw->memory_bytes[g] * factor);
        if (scaled > (double)INT64_MAX)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "scale memory: GPU %d memory overflows", g);
        hw->memory_bytes[g] = (int64_t)scaled;
    }
    return FS_OK;
}

fs_status_t fs_hw_set_memory(fs_hardware_t *hw, int64_t bytes, fs_error_t *err)
{
    if (!hw) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "set memory: NULL hardware");
    if (bytes < 0) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "set memory: negative size %lld", (long long)bytes);
    for (int g = 0; g < hw->num_gpus; g++) hw->memory_bytes[g] = bytes;
    return FS_OK;
}

fs_status_t fs_hw_first_gpus(fs_hardware_t *hw, int num_gpus, fs_error_t *err)
{
    if (!hw) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "select GPUs: NULL hardware");
    if (num_gpus < 1 || num_gpus > hw->num_gpus)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "select GPUs: %d GPUs asked, '%s' has %d", num_gpus, hw->name,
                        hw->num_gpus);
    for (int g = num_gpus; g < hw->num_gpus; g++) { /* forget the dropped GPUs' links, both ways */
        hw->memory_bytes[g] = 0, hw->host_gbps[g] = hw->local_gbps[g] = 0;
        for (int h = 0; h < FS_HW_MAX_GPUS; h++) hw->link_gbps[g][h] = hw->link_gbps[h][g] = 0;
    }
    if (num_gpus < hw->num_gpus) {
        size_t len = strlen(hw->name);
        snprintf(hw->name + len, sizeof hw->name - len, "[0..%d]", num_gpus - 1);
    }
    hw->num_gpus = num_gpus;
    return FS_OK;
}

/* ---- JSON -------------------------------------------------------------------- */

/* A non-negative finite number (integer or real) from a JSON value. */
static int json_gbps(const json_t *v, double *out)
{
    if (!json_is_number(v)) return 0;
    *out = json_number_value(v);
    return isfinite(*out) && *out >= 0;
}

/* The keys a topology file may hold (docs/serving.md, "--topology"); any
 * other is refused by name, so a misspelt "fabric" is not silently inferred. */
static const char *const root_keys[] = {"name", "gpus", "links", "host_gbps", "fabric", NULL};
static const char *const gpu_keys[] = {"memory_bytes", "local_gbps", NULL};

static fs_status_t parse_gpus(const json_t *root, fs_hardware_t *hw, fs_error_t *err)
{
    const json_t *gpus = json_object_get(root, "gpus");
    if (!json_is_array(gpus) || json_array_size(gpus) == 0)
        return fs_error(err, FS_ERR_FORMAT, "topology: \"gpus\" must be a non-empty array");
    if (json_array_size(gpus) > FS_HW_MAX_GPUS)
        return fs_error(err, FS_ERR_FORMAT, "topology: %zu GPUs (at most %d)", json_array_size(gpus),
                        FS_HW_MAX_GPUS);
    hw->num_gpus = (int)json_array_size(gpus);
    for (int g = 0; g < hw->num_gpus; g++) {
        const json_t *gpu = json_array_get(gpus, (size_t)g);
        const json_t *mem = json_object_get(gpu, "memory_bytes");
        if (!json_is_object(gpu) || !json_is_integer(mem))
            return fs_error(err, FS_ERR_FORMAT, "topology: gpus[%d] needs an integer \"memory_bytes\"", g);
        char where[32];
        snprintf(where, sizeof where, "topology: gpus[%d]", g);
        fs_status_t st = fs_json_only_keys(gpu, gpu_keys, where, err);
        if (st != FS_OK) return st;
        if (json_integer_value(mem) < 0)
            return fs_error(err, FS_ERR_FORMAT, "topology: gpus[%d].memory_bytes is negative (%lld)", g,
                            (long long)json_integer_value(mem));
        hw->memory_bytes[g] = json_integer_value(mem);
        hw->local_gbps[g] = 900.0; /* HBM2-class default when the file does not say */
        const json_t *local = json_object_get(gpu, "local_gbps");
        if (local && !json_gbps(local, &hw->local_gbps[g]))
            return fs_error(err, FS_ERR_FORMAT, "topology: gpus[%d].local_gbps must be a number >= 0", g);
    }
    return FS_OK;
}

static fs_status_t parse_links(const json_t *root, fs_hardware_t *hw, fs_error_t *err)
{
    const json_t *links = json_object_get(root, "links");
    if (!links) return FS_OK; /* no peer links: a PCIe-only machine */
    if (!json_is_array(links)) return fs_error(err, FS_ERR_FORMAT, "topology: \"links\" must be an array");
    for (size_t l = 0; l < json_array_size(links); l++) {
        const json_t *link = json_array_get(links, l);
        const json_t *a = json_array_get(link, 0), *b = json_array_get(link, 1);
        double gbps;
        if (!json_is_array(link) || json_array_size(link) != 3 || !json_is_integer(a) || !json_is_integer(b) ||
            !json_gbps(json_array_get(link, 2), &gbps))
            return fs_error(err, FS_ERR_FORMAT, "topology: links[%zu] must be [gpu, gpu, gbps >= 0]", l);
        json_int_t i = json_integer_value(a), j = json_integer_value(b);
        if (i < 0 || j < 0 || i >= hw->num_gpus || j >= hw->num_gpus)
            return fs_error(err, FS_ERR_FORMAT, "topology: links[%zu] names GPU %lld-%lld but there are %d GPUs", l,
                            (long long)i, (long long)j, hw->num_gpus);
        if (i == j)
            return fs_error(err, FS_ERR_FORMAT, "topology: links[%zu] links GPU %lld to itself", l, (long long)i);
        if (hw->link_gbps[i][j] != 0 && hw->link_gbps[i][j] != gbps)
            return fs_error(err, FS_ERR_FORMAT, "topology: links[%zu] repeats link %lld-%lld with another bandwidth", l,
                            (long long)i, (long long)j);
        set_link(hw, (int)i, (int)j, gbps);
    }
    return FS_OK;
}

static fs_status_t parse_host(const json_t *root, fs_hardware_t *hw, fs_error_t *err)
{
    const json_t *host = json_object_get(root, "host_gbps");
    if (!host) return fs_error(err, FS_ERR_FORMAT, "topology: missing \"host_gbps\"");
    for (int g = 0; g < hw->num_gpus; g++) {
        const json_t *v = json_is_array(host) ? json_array_get(host, (size_t)g) : host;
        if (json_is_array(host) && json_array_size(host) != (size_t)hw->num_gpus)
            return fs_error(err, FS_ERR_FORMAT, "topology: host_gbps has %zu entries for %d GPUs",
                            json_array_size(host), hw->num_gpus);
        if (!json_gbps(v, &hw->host_gbps[g]) || hw->host_gbps[g] == 0)
            return fs_error(err, FS_ERR_FORMAT, "topology: host_gbps must be a number > 0 (or one per GPU)");
    }
    return FS_OK;
}

/* Without an explicit fabric: all-to-all with one bandwidth reads as a switch. */
static fs_fabric_t infer_fabric(const fs_hardware_t *hw)
{
    int any = 0, uniform = 1;
    double first = 0;
    for (int i = 0; i < hw->num_gpus; i++)
        for (int j = 0; j < hw->num_gpus; j++) {
            if (i == j) continue;
            double b = hw->link_gbps[i][j];
            if (b > 0 && !any) first = b;
            any |= b > 0;
            uniform &= b > 0 && (first == 0 || b == first);
        }
    if (!any) return FS_FABRIC_PCIE;
    return uniform && hw->num_gpus > 2 ? FS_FABRIC_NVSWITCH : FS_FABRIC_NVLINK;
}

fs_status_t fs_hw_detected(int count, const int64_t *free_bytes, const unsigned char peer[][FS_HW_MAX_GPUS],
                           fs_hardware_t *out, fs_error_t *err)
{
    if (count < 1 || count > FS_HW_MAX_GPUS || !free_bytes || !peer)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "detected hardware: %d GPUs (need 1..%d)", count,
                        FS_HW_MAX_GPUS);
    fs_hardware_t hw = {.name = "detected", .num_gpus = count};
    for (int i = 0; i < count; i++) {
        hw.memory_bytes[i] = free_bytes[i];
        hw.host_gbps[i] = FS_HW_DETECTED_HOST_GBPS;
        hw.local_gbps[i] = 900.0;
        for (int j = 0; j < count; j++)
            hw.link_gbps[i][j] = i != j && peer[i][j] && peer[j][i] ? FS_HW_DETECTED_LINK_GBPS : 0;
    }
    hw.fabric = infer_fabric(&hw);
    fs_status_t st = fs_hw_validate(&hw, err);
    if (st == FS_OK) *out = hw;
    return st;
}

static fs_status_t parse_fabric(const json_t *root, fs_hardware_t *hw, fs_error_t *err)
{
    const json_t *f = json_object_get(root, "fabric");
    if (!f) {
        hw->fabric = infer_fabric(hw);
        return FS_OK;
    }
    for (int i = 0; i < FS_FABRIC_COUNT_ && json_is_string(f); i++) {
        if (strcmp(json_string_value(f), fabric_names[i]) == 0) {
            hw->fabric = (fs_fabric_t)i;
            return FS_OK;
        }
    }
    return fs_error(err, FS_ERR_FORMAT, "topology: \"fabric\" must be \"pcie\", \"nvlink\" or \"nvswitch\"");
}

static fs_status_t parse_root(const json_t *root, fs_hardware_t *hw, fs_error_t *err)
{
    if (!json_is_object(root)) return fs_error(err, FS_ERR_FORMAT, "topology: the top level must be an object");
    fs_status_t st = fs_json_only_keys(root, root_keys, "topology", err);
    const json_t *name = json_object_get(root, "name");
    const char *text = "custom";
    if (st == FS_OK && name) st = fs_json_string(name, "topology", "name", &text, err);
    if (st == FS_OK && strlen(text) >= sizeof hw->name)
        st = fs_error(err, FS_ERR_FORMAT, "topology: \"name\" is %zu characters (at most %zu)", strlen(text),
                      sizeof hw->name - 1);
    if (st != FS_OK) return st;
    snprintf(hw->name, sizeof hw->name, "%s", text);
    st = parse_gpus(root, hw, err);
    if (st == FS_OK) st = parse_links(root, hw, err);
    if (st == FS_OK) st = parse_host(root, hw, err);
    if (st == FS_OK) st = parse_fabric(root, hw, err);
    if (st == FS_OK && fs_hw_validate(hw, err) != FS_OK) {
        /* the file, not the caller, is wrong: report it as malformed input */
        if (err) err->code = FS_ERR_FORMAT;
        st = FS_ERR_FORMAT;
    }
    return st;
}

fs_status_t fs_hw_parse_json(const char *text, fs_hardware_t *out, fs_error_t *err)
{
    if (!text || !out) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "topology: NULL argument");
    memset(out, 0, sizeof *out);
    json_error_t jerr;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return fs_error(err, FS_ERR_FORMAT, "topology: JSON error at line %d column %d: %s", jerr.line, jerr.column,
                        jerr.text);
    fs_status_t st = parse_root(root, out, err);
    json_decref(root);
    return st;
}

fs_status_t fs_hw_load_json(const char *path, fs_hardware_t *out, fs_error_t *err)
{
    if (!path || !out) return fs_error(err, FS_ERR_INVALID_ARGUMENT, "topology: NULL argument");
    memset(out, 0, sizeof *out);
    json_error_t jerr;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        if (json_error_code(&jerr) == json_error_cannot_open_file)
            return fs_error(err, FS_ERR_IO, "topology %s: %s", path, jerr.text);
        return fs_error(err, FS_ERR_FORMAT, "topology %s: JSON error at line %d column %d: %s", path, jerr.line,
                        jerr.column, jerr.text);
    }
    fs_status_t st = parse_root(root, out, err);
    json_decref(root);
    if (st != FS_OK) fs_error_prefix(err, "%s", path);
    return st;
}
