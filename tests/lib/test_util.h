/* test_util.h — small helpers shared by the Criterion suites: scratch
 * directories, whole-file I/O, running the CLI, and a tiny dataset builder. */
#ifndef FS_TEST_UTIL_H
#define FS_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

#include "dataset.h"
#include "gen.h"
#include "fs_types.h"

/* A sampling request as a caller of the client library writes one, with
 * its struct_size set (featstore/types.h); engines ignore the field. */
#define SAMPLE_REQ(...) ((fs_sample_req_t){.struct_size = sizeof(fs_sample_req_t), __VA_ARGS__})

/* Creates a fresh directory under $TMPDIR (or /tmp); returns a static-free
 * heap string the caller frees. Removed by rm_rf. */
char *tu_mkdtemp(void);
void tu_rm_rf(const char *path);
/* A fresh scratch directory `dir` for each test of a suite: defines dir,
 * setup and teardown for TestSuite(name, .init = setup, .fini = teardown). */
#define TU_SCRATCH_DIR                        \
    static char *dir;                         \
    static void setup(void)                   \
    {                                         \
        dir = tu_mkdtemp();                   \
    }                                         \
    static void teardown(void)                \
    {                                         \
        tu_rm_rf(dir);                        \
        free(dir);                            \
    }
char *tu_path(const char *dir, const char *name);          /* heap "dir/name" */
void tu_write(const char *path, const void *data, size_t len);
void *tu_read(const char *path, size_t *len);              /* heap, NUL-terminated */
int tu_files_equal(const char *a, const char *b);
/* Runs a shell command, captures stdout+stderr into a heap string (*out may be
 * NULL), returns the exit status (or -1 if it did not exit normally). */
int tu_run(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* fs_dataset_open(dir) that must succeed (mapped, not copied, not verified). */
fs_dataset_t *tu_open_dataset(const char *dir);
/* tests/data/cora.npz imported into dir/cora (symmetrised, deduplicated),
 * then opened as tu_open_dataset does. */
fs_dataset_t *tu_import_cora(const char *dir);
/* An R-MAT graph made with `g` (its out_dir is set here) into dir/name, opened. */
fs_dataset_t *tu_gen_rmat(const char *dir, const char *name, fs_rmat_opts_t *g);
/* Starts `sh -c "exec CMD"` as a child that dies with the test
 * (PR_SET_PDEATHSIG), its stdout readable from *out; returns its pid. */
pid_t tu_spawn(FILE **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *tu_data(const char *name);                     /* tests/data/name ($FEATSTORE_TEST_DATA/name if set) */
const char *tu_bin(void);                                  /* the featstore CLI ($FEATSTORE_TEST_BIN if set) */
/* `featstore serve DATA --socket SOCK` with gRPC and metrics on ephemeral
 * loopback ports and `extra` arguments, waited for until READY (-1: it
 * exited first); stopped with a signal, giving its exit status (128+sig
 * when killed by it). */
typedef struct {
    pid_t pid;
    FILE *out;
    int grpc_port, metrics_port;
} tu_server_t;
int tu_serve(tu_server_t *s, const char *data, const char *sock, const char *extra);
int tu_serve_stop(tu_server_t *s, int sig);
char *tu_http_get(int port, const char *path);             /* heap: headers + body of GET 127.0.0.1:port */
char *tu_metrics_with(int port, const char *want);         /* heap: /metrics once `want` is in it (polled) */
int tu_have_numpy(void);
/* One unary or server-streaming call made with gRPC alone (insecure, to
 * 127.0.0.1:port): `payload` as the request to `method`, whatever its
 * bytes. Returns the grpc_status_code; details gets the status text and
 * *got_message (may be NULL) whether a first message came back. */
int tu_grpc_call(int port, const char *method, const void *payload, size_t len, char *details, size_t details_size,
                 int *got_message);

/* Writes a small dataset (via fs_writer) with the given CSR and an optional
 * float32 table of dim columns filled with v*1000+j. */
void tu_make_dataset(const char *dir, int64_t n, const int64_t *indptr, const int32_t *indices, int64_t dim);

/* Rewrites dir/manifest.json without its "files" checksums so structural
 * validation is what a test exercises. */
void tu_strip_checksums(const char *dir);

/* The text of the first ```lang block after `marker` in a document of the
 * repository (docs/NAME.md), heap; fails the test when there is none.
 * For tests that run what the docs show, as written. */
char *tu_doc_block(const char *doc, const char *marker, const char *lang);

#endif
