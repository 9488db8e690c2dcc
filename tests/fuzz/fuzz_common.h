/* fuzz_common.h — what every harness in tests/fuzz shares: the libFuzzer
 * entry point's declaration, a failed-invariant abort that libFuzzer
 * records as a crash (with the input saved), and a small reader over the
 * input's leading bytes (a harness picks a message type or a mode with
 * them; the rest is the parser's input). */
#ifndef FS_FUZZ_COMMON_H
#define FS_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* An invariant of the parser's answer failed: a bug, not bad input. */
#define FUZZ_CHECK(cond, ...)                                                        \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: invariant failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                            \
            fputc('\n', stderr);                                                     \
            abort();                                                                 \
        }                                                                            \
    } while (0)

/* Every refusal must say why: a status and a message naming the problem. */
#define FUZZ_CHECK_REFUSAL(st, err)                                                           \
    FUZZ_CHECK((st) != FS_OK && (err).code == (st) && (err).msg[0] != '\0',                  \
               "status %d, error code %d, message '%s'", (int)(st), (int)(err).code, (err).msg)

/* The input's bytes, taken from the front. */
typedef struct {
    const uint8_t *p;
    size_t n;
} fuzz_bytes_t;

static inline uint8_t fuzz_take_u8(fuzz_bytes_t *b)
{
    if (b->n == 0) return 0;
    b->n--;
    return *b->p++;
}

#endif
