#!/usr/bin/python3
"""compress_link.py — a grpc:// loader over a shaped link, reading a table
as float32 and reading its int8 copy as stored (issue 51, item 5).

The loader is an epoch stream (``Client.node_stream``) of [15, 10, 5]
sampled batches of 1,024 training seeds with their features, over
grpc:// from a server on this machine whose port `bench/with_link.sh`
shapes to a link rate (run it inside; without it the link is loopback's).
Two arms, in interleaved rounds (the first a warm-up):

- float32: table "feat", served as float32 (the default);
- int8: table "feat_int8" (``featstore compress --to int8``), asked for as
  stored (``dtype="stored"``), each batch decoded to float32 by the trainer
  (``featstore.dequantize`` on a torch tensor, on the CPU here: what a GPU
  box would do on the GPU).

Both arms hand the training step the same thing: a float32 tensor of the
batch's rows. Prints batches/s per arm and their ratio, the feature bytes
the loader received per batch and their ratio, and, when the link is shaped
(tc's class 7:1 of with_link.sh is there), the bytes the link carried.

Data: R-MAT scale 20, edge factor 16, symmetrised, 128 float32 features,
plus its int8 copy, cached under /tmp/featstore-bench/rmat-s20-e16-sym-d128-int8
(or ``--dataset DIR`` with "feat" and "feat_int8").

    bench/with_link.sh 2gbit 47311 /usr/bin/python3 bench/compress_link.py --port 47311

RESULT bench=compress_link link=... f32_batches_per_s=... int8_batches_per_s=... ratio_batches_per_s=...
       f32_feature_mb_per_batch=... int8_feature_mb_per_batch=... ratio_feature_bytes=... ratio_link_bytes=...
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pp_loader import cached_rmat, serve  # noqa: E402  (the same server start as the other Python benchmarks)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--featstore", default=os.path.join(ROOT, "build", "cli", "featstore"))
    p.add_argument("--lib", default=os.environ.get("FEATSTORE_LIB",
                                                   os.path.join(ROOT, "build", "client-lib", "libfeatstore.so")))
    p.add_argument("--dataset", default=None)
    p.add_argument("--port", type=int, default=47311, help="the server's gRPC port (the one with_link.sh shapes)")
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--batches", type=int, default=8, help="batches per arm per round")
    p.add_argument("--rounds", type=int, default=3)
    return p.parse_args()


def dataset(args):
    return args.dataset or cached_rmat(args.featstore, "rmat-s20-e16-sym-d128-int8", 20, 128,
                                       [["compress", "{dir}", "--table", "feat", "--to", "int8"]])


def link_bytes():
    """Bytes sent so far by with_link.sh's shaped class (None: no shaped link)."""
    try:
        out = subprocess.run(["tc", "-s", "class", "show", "dev", "lo", "classid", "7:1"], capture_output=True,
                             text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"Sent (\d+) bytes", out)
    return int(m.group(1)) if m else None


def link_rate():
    try:
        out = subprocess.run(["tc", "class", "show", "dev", "lo", "classid", "7:1"], capture_output=True, text=True,
                             timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return "loopback"
    m = re.search(r"rate (\S+)", out)
    return m.group(1) if m else "loopback"


def arm(client, torch, featstore, table, dtype, seeds, epoch, batches, batch):
    """`batches` batches of one arm: seconds, feature bytes received, link bytes."""
    feature_bytes, before = 0, link_bytes()
    t0 = time.perf_counter()
    stream = client.node_stream(seeds, batch_size=batch, num_neighbors=[15, 10, 5], table=table, dtype=dtype,
                                seed=7, epoch=epoch)
    for k, sb in enumerate(stream):
        if k == batches:
            break
        rows = sb.batch.features
        feature_bytes += rows.nbytes
        x = torch.from_numpy(np.asarray(rows))
        x = featstore.dequantize(x) if dtype == "stored" else x.clone()
        assert x.dtype == torch.float32 and x.shape == (sb.batch.num_nodes, 128)
        del x, rows
        sb.release()
    stream.close()
    seconds = time.perf_counter() - t0
    after = link_bytes()
    return seconds, feature_bytes, (after - before) if before is not None and after is not None else None


def main():
    args = parse_args()
    os.environ["FEATSTORE_LIB"] = args.lib
    sys.path.insert(0, os.path.join(ROOT, "client-lib", "python"))
    import torch
    import featstore
    warnings.filterwarnings("ignore", message="The given NumPy array is not writable")  # rows are only read

    path = dataset(args)
    tmp = tempfile.mkdtemp(prefix="fs-compress-link-")
    proc = serve(args.featstore, path, os.path.join(tmp, "s.sock"), listen=f"127.0.0.1:{args.port}")
    arms = {"f32": ("feat", None), "int8": ("feat_int8", "stored")}
    secs, feats, wire = ({a: [] for a in arms} for _ in range(3))
    try:
        with featstore.connect(f"grpc://127.0.0.1:{args.port}") as c:
            seeds = np.random.default_rng(1).permutation(c.split("train"))[:args.batch * args.batches * 2]
            for r in range(args.rounds + 1):
                order = list(arms) if r % 2 == 0 else list(arms)[::-1]
                for a in order:
                    s, f, w = arm(c, torch, featstore, *arms[a], seeds, r, args.batches, args.batch)
                    if r > 0:  # round 0 warms both up
                        secs[a].append(s), feats[a].append(f), wire[a].append(w)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    n = args.batches * args.rounds
    bps = {a: n / sum(secs[a]) for a in arms}
    ratio = float(np.median([f / i for f, i in zip(secs["f32"], secs["int8"])]))
    mb = {a: sum(feats[a]) / n / 1e6 for a in arms}
    link = "n/a" if None in wire["f32"] + wire["int8"] else f"{sum(wire['int8']) / sum(wire['f32']):.3f}"
    print(f"RESULT bench=compress_link link={link_rate()} batch={args.batch} fanouts=15,10,5 batches={n} "
          f"f32_batches_per_s={bps['f32']:.2f} int8_batches_per_s={bps['int8']:.2f} ratio_batches_per_s={ratio:.2f} "
          f"f32_feature_mb_per_batch={mb['f32']:.1f} int8_feature_mb_per_batch={mb['int8']:.1f} "
          f"ratio_feature_bytes={mb['int8'] / mb['f32']:.3f} ratio_link_bytes={link}", flush=True)


if __name__ == "__main__":
    main()
