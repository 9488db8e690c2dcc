/* fs_hash_avx2.c — fs_hash on AVX2 (built with -mavx2; called only where the CPU has it). */
#include <stddef.h>
#include <stdint.h>
#define FS_HASH_VARIANT avx2
#include "fs_hash_variant.h"
