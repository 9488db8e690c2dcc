#!/usr/bin/python3
"""grpc_stalled_client.py — a gRPC client that stops reading, for the
isolation tests of tests/integration/grpc/test_grpc_isolation.c.

    /usr/bin/python3 tests/integration/grpc/grpc_stalled_client.py --port P [--calls 4] [--ids 200000] [--timeout S] [--stop]

It starts `--calls` Gather calls of `--ids` rows each (node 0 every time),
each on a channel and TCP connection of its own with gRPC's default receive
window, sends the requests and never reads an answer. It prints
"STALLED <calls>" once every request is on its way, then either sleeps until
it is killed or, with --stop, freezes itself with SIGSTOP: its gRPC threads
stop too, so not even its own deadline (--timeout) reaches the server, which
must then notice the deadline by itself.

The request is encoded by hand (featstore.proto's GatherRequest: api_version
1, table, ids), so no generated classes are needed."""
import argparse
import os
import signal
import sys
import time

import grpc

GATHER = "/featstore.v1.FeatStore/Gather"


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def gather_request(table, n):
    ids = b"\0" * (8 * n)  # int64 node 0, n times
    name = table.encode()
    return b"\x08\x01" + b"\x12" + varint(len(name)) + name + b"\x1a" + varint(len(ids)) + ids


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--calls", type=int, default=4)
    ap.add_argument("--ids", type=int, default=200000)
    ap.add_argument("--table", default="feat")
    ap.add_argument("--timeout", type=float, default=None, help="each call's deadline in seconds")
    ap.add_argument("--stop", action="store_true", help="SIGSTOP this process once the calls are started")
    args = ap.parse_args()
    req = gather_request(args.table, args.ids)
    options = [("grpc.use_local_subchannel_pool", 1), ("grpc.max_send_message_length", -1)]
    keep = []
    for _ in range(args.calls):
        channel = grpc.insecure_channel("127.0.0.1:%d" % args.port, options=options)
        grpc.channel_ready_future(channel).result(timeout=30)
        method = channel.unary_stream(GATHER, request_serializer=None, response_deserializer=None)
        keep.append((channel, method(req, timeout=args.timeout)))  # started at once; never iterated
    time.sleep(0.2)  # the requests are written by gRPC's own threads
    print("STALLED %d" % args.calls, flush=True)
    if args.stop:
        os.kill(os.getpid(), signal.SIGSTOP)
    time.sleep(3600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
