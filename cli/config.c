/* config.c — `featstore serve --config FILE` (cli.h): a JSON file that is a
 * second command line. Its keys are the command's long options with '_'
 * for '-' ("tls_cert" for --tls-cert), and each value becomes that
 * option's text, as if typed, unless the command line gave the option
 * (the command line wins). So every value, from either place, meets the
 * command's one check (options.c, cmd_serve.c); only its JSON type is
 * checked here, strictly: "threads": "4" is refused, not read as 4.
 *
 * The file is read strictly (kernels/fs_json.h): a duplicate key, an
 * unknown key (with the nearest known one suggested), or a value of the
 * wrong type stops the command with the file and the key named. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fs_json.h"

enum { KIND_STRING = 1, KIND_INT = 2, KIND_NUMBER = 4, KIND_LIST = 8, KIND_BOOL = 16 };

/* The JSON an option's value may be: a flag takes true or false; an option
 * not listed here, a non-empty string. */
static const struct {
    cli_opt_t opt;
    unsigned kinds;
} value_kinds[] = {
    {OPT_THREADS, KIND_INT},
    {OPT_GRPC_MAX_CALLS, KIND_INT},
    {OPT_MAX_CONNS_PER_UID, KIND_INT},
    {OPT_MAX_IDS, KIND_INT},
    {OPT_MAX_FANOUT_PRODUCT, KIND_INT},
    {OPT_MAX_RESPONSE_BYTES, KIND_INT},
    {OPT_GPU_BUDGET, KIND_NUMBER},
    {OPT_ALPHA, KIND_STRING | KIND_NUMBER},
    {OPT_RESERVE, KIND_STRING | KIND_INT},
    {OPT_MEM_BUDGET, KIND_STRING | KIND_INT},
    {OPT_REQUEST_TIMEOUT, KIND_STRING | KIND_NUMBER},   /* "60s", or seconds */
    {OPT_HANDSHAKE_TIMEOUT, KIND_STRING | KIND_NUMBER},
    {OPT_ADMIN_UID, KIND_STRING | KIND_INT},
    {OPT_ALLOW_UID, KIND_LIST | KIND_STRING | KIND_INT}, /* [1000, "alice"] or "1000,alice" */
    {OPT_ALLOW_GID, KIND_LIST | KIND_STRING | KIND_INT},
};

/* The options that live in the "limits" object, and only there. */
static const cli_opt_t limit_opts[] = {OPT_MAX_IDS, OPT_MAX_FANOUT_PRODUCT, OPT_MAX_RESPONSE_BYTES, 0};

static unsigned kinds_of(cli_opt_t o)
{
    if (!cli_takes_value(o)) return KIND_BOOL;
    for (size_t i = 0; i < sizeof value_kinds / sizeof *value_kinds; i++)
        if (value_kinds[i].opt == o) return value_kinds[i].kinds;
    return KIND_STRING;
}

static int is_limit(cli_opt_t o)
{
    for (const cli_opt_t *l = limit_opts; *l; l++)
        if (*l == o) return 1;
    return 0;
}

/* An option's key: its long name with '_' for '-'. */
static const char *key_of(cli_opt_t o, char *buf, size_t size)
{
    snprintf(buf, size, "%s", cli_long_name(o));
    for (char *p = buf; *p; p++)
        if (*p == '-') *p = '_';
    return buf;
}

/* Edit distance of two short keys (capped at 9), for "did you mean". */
static int distance(const char *a, const char *b)
{
    size_t n = strlen(b);
    if (strlen(a) > 40 || n > 40) return 9;
    int row[41];
    for (size_t j = 0; j <= n; j++) row[j] = (int)j;
    for (size_t i = 1; a[i - 1]; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= n; j++) {
            int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up, row[j] = best;
        }
    }
    return row[n] < 9 ? row[n] : 9;
}

/* The keys an object may hold, for refusing the others. */
typedef struct {
    const char *key[OPT_COUNT_ + 2];
    cli_opt_t opt[OPT_COUNT_ + 2]; /* 0 for a key that is not an option ("dataset", "limits") */
    char names[OPT_COUNT_ + 2][48];
    int n;
} keys_t;

static void keys_add(keys_t *k, const char *key, cli_opt_t o)
{
    snprintf(k->names[k->n], sizeof k->names[k->n], "%s", key);
    k->key[k->n] = k->names[k->n], k->opt[k->n] = o;
    k->n++;
}

static int keys_find(const keys_t *k, const char *key)
{
    for (int i = 0; i < k->n; i++)
        if (strcmp(k->key[i], key) == 0) return i;
    return -1;
}

/* An unknown key: refused with the nearest known one, or every known one
 * when they are few. */
static fs_status_t unknown_key(const keys_t *k, const char *where, const char *key, fs_error_t *err)
{
    int best = -1, best_d = 3; /* suggest only close misspellings */
    for (int i = 0; i < k->n; i++) {
        int d = distance(key, k->key[i]);
        if (d < best_d) best = i, best_d = d;
    }
    char hint[600] = "";
    if (k->n <= 8) {
        size_t used = (size_t)snprintf(hint, sizeof hint, " (allowed:");
        for (int i = 0; i < k->n && used < sizeof hint; i++)
            used += (size_t)snprintf(hint + used, sizeof hint - used, "%s %s", i ? "," : "", k->key[i]);
        if (used < sizeof hint) snprintf(hint + used, sizeof hint - used, ")");
    } else if (best >= 0) {
        snprintf(hint, sizeof hint, "; did you mean \"%s\"?", k->key[best]);
    } else {
        snprintf(hint, sizeof hint, " (the keys are the options of serve with '_' for '-', such as \"tls_cert\", "
                 "and \"dataset\" and \"limits\": docs/cli.md)");
    }
    return fs_error(err, FS_ERR_FORMAT, "%s: unknown key \"%s\"%s", where, key, hint);
}

/* "a string or a number", for a refused type. */
static const char *kinds_text(unsigned kinds, char *buf, size_t size)
{
    static const struct {
        unsigned kind;
        const char *text;
    } names[] = {{KIND_BOOL, "true or false"}, {KIND_LIST, "a list of ids or names"}, {KIND_STRING, "a string"},
                 {KIND_INT, "an integer"}, {KIND_NUMBER, "a number"}};
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof *names && used < size; i++)
        if (kinds & names[i].kind)
            used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? " or " : "", names[i].text);
    return buf;
}

/* Texts kept for the process's life: each option's text and name (and
 * the dataset's path) at most once, reachable from here until exit. */
static char *kept[2 * OPT_COUNT_ + 2];
static int num_kept;

static const char *keep(const char *text, fs_error_t *err)
{
    char *copy = num_kept < (int)(sizeof kept / sizeof *kept) ? strdup(text) : NULL;
    if (!copy) fs_error(err, FS_ERR_NOMEM, "out of memory keeping \"%s\"", text);
    else kept[num_kept++] = copy;
    return copy;
}

/* A list's elements joined with commas into buf, as the command line takes them. */
static fs_status_t list_text(const json_t *v, const char *name, char *buf, size_t size, fs_error_t *err)
{
    size_t i, used = 0;
    json_t *e;
    json_array_foreach(v, i, e) {
        if (!json_is_integer(e) && !(json_is_string(e) && json_string_length(e) && !strchr(json_string_value(e), ',')))
            return fs_error(err, FS_ERR_FORMAT, "%s: element %zu must be an id (an integer) or a name, not %s", name,
                            i, json_is_string(e) ? "an empty name or one with ','" : fs_json_type_name(e));
        used += json_is_integer(e) ? (size_t)snprintf(buf + used, size - used, "%s%lld", i ? "," : "",
                                                      (long long)json_integer_value(e))
                                   : (size_t)snprintf(buf + used, size - used, "%s%s", i ? "," : "",
                                                      json_string_value(e));
        if (used >= size) return fs_error(err, FS_ERR_FORMAT, "%s: the list is too long", name);
    }
    return used ? FS_OK : fs_error(err, FS_ERR_FORMAT, "%s: the list is empty", name);
}

/* v as the option's text, into buf; *given = 0 for a flag's false (not
 * given), and a flag's true is "". */
static fs_status_t value_text(const json_t *v, cli_opt_t o, const char *name, char *buf, size_t size, int *given,
                              fs_error_t *err)
{
    unsigned kinds = kinds_of(o);
    char want[160];
    *given = 1, buf[0] = '\0';
    if ((kinds & KIND_BOOL) && json_is_boolean(v)) *given = json_is_true(v);
    else if ((kinds & KIND_LIST) && json_is_array(v)) return list_text(v, name, buf, size, err);
    else if ((kinds & KIND_STRING) && json_is_string(v) && !json_string_length(v))
        return fs_error(err, FS_ERR_FORMAT, "%s is empty", name);
    else if ((kinds & KIND_STRING) && json_is_string(v) && json_string_length(v) >= size)
        return fs_error(err, FS_ERR_FORMAT, "%s is longer than %zu bytes", name, size - 1);
    else if ((kinds & KIND_STRING) && json_is_string(v)) snprintf(buf, size, "%s", json_string_value(v));
    else if ((kinds & (KIND_INT | KIND_NUMBER)) && json_is_integer(v))
        snprintf(buf, size, "%lld", (long long)json_integer_value(v));
    else if ((kinds & KIND_NUMBER) && json_is_real(v)) snprintf(buf, size, "%.17g", json_real_value(v));
    else
        return fs_error(err, FS_ERR_FORMAT, "%s must be %s, not %s", name, kinds_text(kinds, want, sizeof want),
                        fs_json_type_name(v));
    return FS_OK;
}

/* One key's value for option o, named `"key" in FILE`: set unless the
 * command line gave o (or, for the order options, any order). */
static fs_status_t set_option(cli_t *c, cli_opt_t o, const json_t *v, const char *key, const char *path,
                              int cli_order, fs_error_t *err)
{
    char name[1200], text[4096];
    int given;
    snprintf(name, sizeof name, "\"%s\" in %s", key, path);
    fs_status_t st = value_text(v, o, name, text, sizeof text, &given, err);
    int is_order = o == OPT_FEATURE_FIRST || o == OPT_TOPOLOGY_FIRST || o == OPT_ORDER;
    if (st != FS_OK || !given || cli_has(c, o) || (is_order && cli_order)) return st;
    if (!(c->text[o] = keep(text, err)) || !(c->where[o] = keep(name, err))) return err->code;
    return is_order ? cli_set_order(c, o, c->text[o], err) : FS_OK;
}

/* "limits": {"max_ids": N, ...}. */
static fs_status_t set_limits(cli_t *c, const json_t *lim, const char *path, fs_error_t *err)
{
    keys_t k = {.n = 0};
    char key[48], where[1100], name[64];
    for (const cli_opt_t *l = limit_opts; *l; l++) keys_add(&k, key_of(*l, key, sizeof key), *l);
    if (!json_is_object(lim))
        return fs_error(err, FS_ERR_FORMAT, "%s: \"limits\" must be an object with keys max_ids, max_fanout_product, "
                        "max_response_bytes, not %s", path, fs_json_type_name(lim));
    snprintf(where, sizeof where, "%s: limits", path);
    const char *lkey;
    json_t *v;
    json_object_foreach((json_t *)lim, lkey, v) {
        int i = keys_find(&k, lkey);
        if (i < 0) return unknown_key(&k, where, lkey, err);
        snprintf(name, sizeof name, "limits.%s", lkey);
        fs_status_t st = set_option(c, k.opt[i], v, name, path, 0, err);
        if (st != FS_OK) return st;
    }
    return FS_OK;
}

/* "dataset": the positional argument, when the command line has none. */
static fs_status_t set_argument(cli_t *c, const json_t *v, const char *key, const char *path, fs_error_t *err)
{
    static char *args[1];
    if (!json_is_string(v) || !json_string_length(v))
        return fs_error(err, FS_ERR_FORMAT, "\"%s\" in %s must be a non-empty string (a path), not %s", key, path,
                        json_is_string(v) ? "an empty one" : fs_json_type_name(v));
    if (c->num_args > 0) return FS_OK;
    if (!(args[0] = (char *)keep(json_string_value(v), err))) return err->code;
    c->args = args, c->num_args = 1;
    return FS_OK;
}

fs_status_t cli_config(cli_t *c, const char *path, const cli_opt_t *allowed, const char *arg_key, fs_error_t *err)
{
    json_error_t jerr;
    json_t *cfg = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!cfg) return fs_error(err, FS_ERR_FORMAT, "%s: line %d: %s", path, jerr.line, jerr.text);
    keys_t k = {.n = 0};
    char key[48];
    keys_add(&k, arg_key, 0);
    keys_add(&k, "limits", 0);
    for (const cli_opt_t *a = allowed; *a; a++)
        if (*a != OPT_CONFIG && !is_limit(*a)) keys_add(&k, key_of(*a, key, sizeof key), *a);
    int cli_order = c->order != NULL;
    fs_status_t st = json_is_object(cfg) ? FS_OK : fs_error(err, FS_ERR_FORMAT, "%s: must be a JSON object", path);
    const char *ckey;
    json_t *v;
    if (st == FS_OK) json_object_foreach(cfg, ckey, v) {
        int i = keys_find(&k, ckey);
        st = i < 0                          ? unknown_key(&k, path, ckey, err)
             : strcmp(ckey, arg_key) == 0   ? set_argument(c, v, ckey, path, err)
             : strcmp(ckey, "limits") == 0  ? set_limits(c, v, path, err)
                                            : set_option(c, k.opt[i], v, ckey, path, cli_order, err);
        if (st != FS_OK) break;
    }
    json_decref(cfg);
    return st;
}
