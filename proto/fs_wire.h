/* fs_wire.h — nanopb helpers shared by both transports (placeholder). */
#ifndef FS_WIRE_H
#define FS_WIRE_H
#include "featstore.pb.h"
#endif
