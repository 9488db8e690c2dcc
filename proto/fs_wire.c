/* fs_wire.c — nanopb helpers shared by both transports (placeholder). */
#include "fs_wire.h"
