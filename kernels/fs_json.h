/* fs_json.h — strict reading of the project's JSON inputs (serve --config,
 * topology files): every object may hold only the keys its reader knows, so
 * a misspelt or unsupported key is an error that names it and lists the
 * allowed ones, never an option silently ignored; every value is checked for
 * its type and range by the helpers below, with the key in the message.
 *
 * Header-only: it needs jansson, which only the modules that read JSON link.
 * Thread-safe (pure functions). */
#ifndef FS_JSON_H
#define FS_JSON_H

#include <jansson.h>
#include <math.h>
#include <string.h>

#include "fs_types.h"

/* FS_ERR_FORMAT naming the first key of obj that is not in allowed (a
 * NULL-terminated list); FS_OK when every key is known. */
static inline fs_status_t fs_json_only_keys(const json_t *obj, const char *const *allowed, const char *where,
                                            fs_error_t *err)
{
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)obj, key, value) {
        int known = 0;
        for (int i = 0; allowed[i] && !known; i++) known = strcmp(key, allowed[i]) == 0;
        if (known) continue;
        char list[512] = "";
        size_t used = 0;
        for (int i = 0; allowed[i] && used < sizeof list; i++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", allowed[i]);
        return fs_error(err, FS_ERR_FORMAT, "%s: unknown key \"%s\" (allowed: %s)", where, key, list);
    }
    (void)value;
    return FS_OK;
}

/* The JSON type of v, for messages ("a string", "an array", ...). */
static inline const char *fs_json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE: case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* An integer in [lo, hi] at key, or FS_ERR_FORMAT naming key, range and what
 * was found. */
static inline fs_status_t fs_json_int_in(const json_t *v, const char *where, const char *key, long long lo,
                                         long long hi, long long *out, fs_error_t *err)
{
    if (!json_is_integer(v))
        return fs_error(err, FS_ERR_FORMAT, "%s: \"%s\" must be an integer in [%lld, %lld], not %s", where, key, lo, hi,
                        fs_json_type_name(v));
    long long x = (long long)json_integer_value(v);
    if (x < lo || x > hi)
        return fs_error(err, FS_ERR_FORMAT, "%s: \"%s\" is %lld, outside [%lld, %lld]", where, key, x, lo, hi);
    *out = x;
    return FS_OK;
}

/* A finite number (integer or real) in [lo, hi] at key. */
static inline fs_status_t fs_json_number_in(const json_t *v, const char *where, const char *key, double lo, double hi,
                                            double *out, fs_error_t *err)
{
    if (!json_is_number(v))
        return fs_error(err, FS_ERR_FORMAT, "%s: \"%s\" must be a number in [%g, %g], not %s", where, key, lo, hi,
                        fs_json_type_name(v));
    double x = json_number_value(v);
    if (!isfinite(x) || x < lo || x > hi)
        return fs_error(err, FS_ERR_FORMAT, "%s: \"%s\" is %g, outside [%g, %g]", where, key, x, lo, hi);
    *out = x;
    return FS_OK;
}

/* A string at key (borrowed from v). */
static inline fs_status_t fs_json_string(const json_t *v, const char *where, const char *key, const char **out,
                                         fs_error_t *err)
{
    if (!json_is_string(v))
        return fs_error(err, FS_ERR_FORMAT, "%s: \"%s\" must be a string, not %s", where, key, fs_json_type_name(v));
    *out = json_string_value(v);
    return FS_OK;
}

/* true or false at key. */
static inline fs_status_t fs_json_bool(const json_t *v, const char *where, const char *key, int *out, fs_error_t *err)
{
    if (!json_is_boolean(v))
        return fs_error(err, FS_ERR_FORMAT, "%s: \"%s\" must be true or false, not %s", where, key,
                        fs_json_type_name(v));
    *out = json_is_true(v);
    return FS_OK;
}

#endif
