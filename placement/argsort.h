/* argsort.h — the one sort the planners need: node ids by hotness,
 * descending, ties broken by ascending id (so plans are deterministic).
 *
 * A parallel LSD radix sort on the bit patterns of the (non-negative)
 * doubles: O(N) per pass, and passes over bytes that are equal in every key
 * are skipped (integer-valued hotness such as degrees needs about 4 of 8).
 * qsort with a comparator is ~10x slower at 10M keys.
 *
 * Ownership: the caller owns p and order. Thread-safety: reentrant. */
#ifndef FS_ARGSORT_H
#define FS_ARGSORT_H

#include <stdint.h>

#include "fs_types.h"

/* order[k] = the id with the k-th largest p. p must be finite and >= 0
 * (FS_ERR_INVALID_ARGUMENT naming the first bad index otherwise). threads
 * <= 0 uses every CPU; the result does not depend on it. */
fs_status_t fs_argsort_desc(const double *p, int64_t n, int threads, int64_t *order, fs_error_t *err);

/* Validates a hotness array: finite and >= 0 everywhere. `what` names it in
 * the error message. */
fs_status_t fs_hotness_check(const double *p, int64_t n, const char *what, int threads, fs_error_t *err);

#endif
