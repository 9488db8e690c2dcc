#!/usr/bin/python3
"""test_no_grpc_loaded.py — a unix-only trainer never loads gRPC (ctest: test_no_grpc_loaded).

    /usr/bin/python3 tests/package/test_no_grpc_loaded.py --featstore BUILD/cli/featstore --probe BUILD/tests/abi_probe

Imports tests/data/cora.npz into a scratch directory, starts `featstore serve`
on a Unix socket and an ephemeral gRPC port (as tests/python/test_python.py does),
then runs tests/package/abi_probe.c — a trainer linked to the SHARED libfeatstore.so —
twice:

1. over unix:// only, under LD_DEBUG=files: the probe's /proc/self/maps,
   read before connecting, while a sampled batch is held, and at the end,
   must show libfeatstore.so and no gRPC stack (libgrpc, libgpr,
   libfeatstore-grpc, libprotobuf, absl, upb, ssl, c-ares, re2); and the
   dynamic loader's own log must not show one loaded at any moment (a
   dlopen later dlclosed would leave no trace in the maps).
2. over unix:// and then grpc://: the same holds until the grpc://
   connection, after which libfeatstore-grpc.so and libgrpc ARE mapped (so
   the check in 1 is looking at the right names).

Exit status: 0 pass, 1 fail, 77 (ctest's skip) without /proc/self/maps.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tests/lib: fs_serve
import fs_serve  # noqa: E402

SKIP = 77
GRPC_STACK = re.compile(r"/lib(grpc|gpr|featstore-grpc|protobuf|absl|upb|ssl|cares|re2)[^/]*$")
PLUGIN = re.compile(r"/libfeatstore-grpc\.so[^/]*$")
LIBGRPC = re.compile(r"/libgrpc\.so[^/]*$")
SHARED_LIB = re.compile(r"/libfeatstore\.so[^/]*$")

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def run_probe(probe, uris, env=None):
    """{phase: [mapped .so paths]}, the DONE lines, the stderr text."""
    t0 = time.monotonic()
    r = subprocess.run([probe] + uris, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120,
                       env=env)
    print(f"probe {' '.join(uris)}: exit {r.returncode} in {time.monotonic() - t0:.2f} s")
    maps, done = {}, {}
    for line in r.stdout.splitlines():
        parts = line.split(" ", 2)
        if parts[0] == "MAP" and len(parts) == 3:
            maps.setdefault(parts[1], []).append(parts[2])
        elif parts[0] == "DONE" and len(parts) == 3:
            done[parts[1]] = parts[2]
            print("  " + line)
        elif parts[0] in ("VERSION", "NOMAPS"):
            print("  " + line)
            if parts[0] == "NOMAPS":
                print("SKIP: the probe cannot read /proc/self/maps")
                sys.exit(SKIP)
    if r.returncode != 0:
        fail(f"abi_probe {' '.join(uris)} exited {r.returncode}: {r.stderr.strip()[-2000:]}")
    return maps, done, r.stderr


def no_grpc_in(maps, phases, what):
    for phase in phases:
        if phase not in maps:
            fail(f"{what}: the probe printed no maps for phase {phase}")
            continue
        bad = [p for p in maps[phase] if GRPC_STACK.search(p)]
        if bad:
            fail(f"{what}: at phase {phase} the gRPC stack is mapped: {', '.join(bad)}")
        if not any(SHARED_LIB.search(p) for p in maps[phase]):
            fail(f"{what}: at phase {phase} libfeatstore.so is not mapped: the probe is not linked to the "
                 f"shared library (maps: {', '.join(maps[phase])})")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--featstore", required=True, help="the featstore CLI")
    p.add_argument("--probe", required=True, help="the abi_probe program")
    args = p.parse_args()
    if not os.path.exists("/proc/self/maps"):
        print("SKIP: no /proc/self/maps on this system")
        return SKIP

    tmp = tempfile.mkdtemp(prefix="featstore-nogrpc-")
    proc = None
    try:
        dataset, sock = os.path.join(tmp, "cora"), os.path.join(tmp, "s.sock")
        subprocess.run([args.featstore, "import", "npz", fs_serve.CORA_NPZ, "--out", dataset,
                        "--symmetrize"], check=True, stdout=subprocess.DEVNULL)
        proc, ready = fs_serve.start(args.featstore, dataset, sock)
        unix, grpc = "unix://" + ready["unix"], "grpc://" + ready["grpc"]

        # 1. unix:// only, with the loader logging every object it loads.
        env = dict(os.environ, LD_DEBUG="files")
        maps, done, log = run_probe(args.probe, [unix], env)
        if "transport=unix" not in done.get("unix", ""):
            fail(f"unix-only run: no unix:// batch (DONE lines: {done})")
        no_grpc_in(maps, ["start", "unix", "end"], "unix-only run")
        loaded = re.findall(r"file=(\S+)", log)
        if not loaded:
            print("note: LD_DEBUG=files logged nothing (secure-execution mode?): checked /proc/self/maps only")
        else:
            bad = sorted({f for f in loaded if GRPC_STACK.search("/" + os.path.basename(f))})
            if bad:
                fail(f"unix-only run: the dynamic loader loaded {', '.join(bad)}")
            print(f"unix-only run: the loader loaded {len(set(loaded))} objects, none of the gRPC stack")
        print(f"unix-only run: mapped at the end: {', '.join(os.path.basename(m) for m in maps.get('end', []))}")

        # 2. unix:// then grpc://: the plugin and gRPC arrive with the first grpc:// connection.
        maps, done, _ = run_probe(args.probe, [unix, grpc])
        if "transport=grpc" not in done.get("grpc", ""):
            fail(f"unix+grpc run: no grpc:// batch (DONE lines: {done})")
        no_grpc_in(maps, ["start", "unix"], "unix+grpc run")
        after = maps.get("grpc", [])
        for pattern, name in ((PLUGIN, "libfeatstore-grpc.so"), (LIBGRPC, "libgrpc.so")):
            hits = [m for m in after if pattern.search(m)]
            if not hits:
                fail(f"unix+grpc run: {name} is not mapped after the grpc:// connection")
            else:
                print(f"unix+grpc run: after grpc:// {hits[0]} is mapped")
    finally:
        if proc:
            fs_serve.stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
