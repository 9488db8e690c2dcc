#!/usr/bin/python3
"""grpc_cache.py — a grpc:// trainer with and without its cache of the
server's hot rows (docs/api.md §6, "The hot-row cache"; issue 53).

featstore.pyg's NeighborLoader over grpc:// from a `featstore serve` of the
dataset on this machine, [15, 10, 5] x --batch seeds of the train split,
each batch's `x.sum()` and `y[:batch_size].sum()` in torch at its default
threads (the stand-in consumer of bench/peers/peer_loader.py), the server
and the trainer sharing the same --cores. Two arms, each a trainer process
of its own, in interleaved rounds: the cache at its default budget, and
FEATSTORE_CACHE_MB=0. Each round times --batches batches after --warmup
(the first fills the cache); the feature bytes the server read (and sent:
the rows of "feat", and the labels of every node) per batch come from its
/metrics over the same batches.

    /usr/bin/python3 bench/grpc_cache.py [--dataset data/default] [--cores 1,2] [--rounds 5]

Needs torch_geometric (scripts/pyg-venv.sh's venv: --python .venv-pyg/bin/python).

RESULT bench=grpc_cache cores=N batches_per_s=... uncached_batches_per_s=... ratio_batches_per_s=...
       feature_mb_read_per_batch=... uncached_feature_mb_read_per_batch=... nodes_per_batch=...
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import fs_serve  # noqa: E402

# One arm: a trainer timing `batches` batches after `warmup`, printing one
# JSON line (batches/s, the nodes per batch, the server's rows read).
WORKER = r"""
import json, os, re, sys, time, urllib.request
import torch
from featstore import pyg
uri, metrics, batch, warmup, batches = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def bytes_read():
    text = urllib.request.urlopen(metrics, timeout=10).read().decode()
    return sum(float(v) for v in re.findall(r"^featstore_feature_bytes_read_total\{[^}]*\} (\S+)$", text, re.M))
loader = pyg.NeighborLoader(uri, num_neighbors=[15, 10, 5], input_nodes="train", batch_size=batch, shuffle=True)
def batches_of():
    while True:
        yield from loader
it, nodes = batches_of(), 0
for _ in range(warmup):
    d = next(it)
    d.x.sum(), d.y[:d.batch_size].sum()
r0, t0 = bytes_read(), time.perf_counter()
for _ in range(batches):
    d = next(it)
    d.x.sum(), d.y[:d.batch_size].sum()
    nodes += d.num_nodes
seconds = time.perf_counter() - t0
print(json.dumps({"batches_per_s": batches / seconds, "nodes": nodes / batches,
                  "mb_read": (bytes_read() - r0) / batches / 1e6}), flush=True)
os._exit(0)  # the loader's producers may still be reading ahead: none of it counts
"""


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dataset", default=os.path.join(ROOT, "data", "default"))
    p.add_argument("--featstore", default=os.path.join(ROOT, "build", "cli", "featstore"))
    p.add_argument("--lib", default=os.path.join(ROOT, "build", "client-lib", "libfeatstore.so"))
    p.add_argument("--python", default=os.path.join(ROOT, ".venv-pyg", "bin", "python"))
    p.add_argument("--cores", default="1,2", help="core counts, each its own set 0..N-1")
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--batches", type=int, default=100)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--rounds", type=int, default=5)
    return p.parse_args()


def arm(args, uri, metrics, cores, cache_mb):
    env = dict(os.environ, FEATSTORE_LIB=args.lib, FEATSTORE_CACHE_MB=cache_mb,
               PYTHONPATH=os.path.join(ROOT, "client-lib", "python"))
    cpus = ",".join(str(c) for c in range(cores))
    out = subprocess.run(["taskset", "-c", cpus, args.python, "-c", WORKER, uri, metrics, str(args.batch),
                          str(args.warmup), str(args.batches)], env=env, stdout=subprocess.PIPE, text=True,
                         timeout=600, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    args = parse_args()
    tmp = tempfile.mkdtemp(prefix="featstore-grpc-cache-")
    proc, ready = fs_serve.start(args.featstore, args.dataset, os.path.join(tmp, "fs.sock"))
    try:
        uri, metrics = "grpc://" + ready["grpc"], f"http://127.0.0.1:{int(ready['metrics'])}/metrics"
        for cores in (int(c) for c in args.cores.split(",")):
            os.sched_setaffinity(proc.pid, set(range(cores)))
            runs = {"256": [], "0": []}
            for r in range(args.rounds):
                for mb in (("256", "0") if r % 2 == 0 else ("0", "256")):
                    runs[mb].append(arm(args, uri, metrics, cores, mb))
            med = lambda mb, k: statistics.median(x[k] for x in runs[mb])  # noqa: E731
            ratio = statistics.median(a["batches_per_s"] / b["batches_per_s"] for a, b in zip(runs["256"], runs["0"]))
            print(f"RESULT bench=grpc_cache cores={cores} batch=15,10,5x{args.batch} "
                  f"batches_per_s={med('256', 'batches_per_s'):.1f} "
                  f"uncached_batches_per_s={med('0', 'batches_per_s'):.1f} ratio_batches_per_s={ratio:.2f} "
                  f"feature_mb_read_per_batch={med('256', 'mb_read'):.2f} "
                  f"uncached_feature_mb_read_per_batch={med('0', 'mb_read'):.2f} "
                  f"nodes_per_batch={med('256', 'nodes'):.0f}", flush=True)
            for mb, xs in runs.items():
                print(f"# cores={cores} FEATSTORE_CACHE_MB={mb}: " +
                      " ".join(f"{x['batches_per_s']:.1f}" for x in xs), flush=True)
    finally:
        fs_serve.stop(proc)


if __name__ == "__main__":
    main()
