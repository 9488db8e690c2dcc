/* textin.h — a line reader over plain or gzip-compressed text files, with
 * bounded memory (one fixed buffer) and progress. Gzip is detected by its
 * magic bytes, not the file name; a ".gz" name on a non-gzip file, a corrupt
 * stream and a truncated stream are all errors naming the file and line.
 * Not thread-safe: one reader per thread. */
#ifndef FS_TEXTIN_H
#define FS_TEXTIN_H

#include "fs_types.h"

typedef struct fs_textin fs_textin_t;

fs_status_t fs_textin_open(const char *path, fs_textin_t **out, fs_error_t *err);

/* Next line without its newline (NUL-terminated, writable until the next
 * call), or NULL at end of input or on error: then fs_textin_error() says
 * which. Lines longer than the buffer (64 MiB) are an error. */
char *fs_textin_line(fs_textin_t *t, size_t *len);

/* FS_OK at a clean end of input, else the error (message in err). */
fs_status_t fs_textin_error(fs_textin_t *t, fs_error_t *err);

int64_t fs_textin_lineno(const fs_textin_t *t);
const char *fs_textin_path(const fs_textin_t *t);
double fs_textin_fraction(fs_textin_t *t); /* compressed bytes consumed / size */
void fs_textin_close(fs_textin_t *t);

/* Field parsing helpers for the importers: skip separators (space, tab,
 * comma), then parse one number. Return 0 on success. */
int fs_parse_i64(char **p, int64_t *out);
int fs_parse_f32(char **p, float *out);
/* 1 if only separators / line end remain. */
int fs_parse_at_end(const char *p);

#endif
