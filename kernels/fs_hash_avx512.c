/* fs_hash_avx512.c — fs_hash on AVX-512F (built with -mavx512f; called only where the CPU has it). */
#include <stddef.h>
#include <stdint.h>
#define FS_HASH_VARIANT avx512
#include "fs_hash_variant.h"
