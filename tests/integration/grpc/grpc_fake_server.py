#!/usr/bin/python3
"""grpc_fake_server.py — a gRPC server that is not featstore's, answering
Sample with a response featstore's server never sends but a peer may: every
hop (FS_MAX_HOPS, 8) with every array of its block, edge ids and edge
weights included, for tests/integration/grpc/test_grpc_errors.c (the client must own all of them).

    /usr/bin/python3 tests/integration/grpc/grpc_fake_server.py

Binds 127.0.0.1 on an ephemeral port, prints "READY <port>" and serves
until killed. The response is encoded by hand (featstore.proto's
SampleResponse and Block), so no generated classes are needed."""
import struct
import sys
import time
from concurrent import futures

import grpc

from grpc_stalled_client import varint  # this script's directory

HOPS = 8


def field(number, payload):
    """A length-delimited field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def block():
    """One destination, one source, one edge: every array of Block filled."""
    i64 = struct.Struct("<q")
    counts = b"\x08\x01\x10\x01\x18\x01"  # num_dst, num_src, num_edges = 1
    arrays = [field(4, i64.pack(0) + i64.pack(1)), field(5, i64.pack(0)), field(6, i64.pack(0)),
              field(7, i64.pack(7)), field(8, struct.pack("<f", 1.0))]
    return counts + b"".join(arrays)


def sample_response(_request, _context):
    nodes = struct.pack("<q", 42)
    seed_local = struct.pack("<q", 0)
    return b"\x08\x01" + field(2, nodes) + field(3, seed_local) + b"".join(field(4, block()) for _ in range(HOPS))


def main():
    handler = grpc.method_handlers_generic_handler(
        "featstore.v1.FeatStore", {"Sample": grpc.unary_unary_rpc_method_handler(sample_response)})
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2), handlers=[handler])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print("READY %d" % port, flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
