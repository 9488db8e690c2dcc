#!/usr/bin/python3
"""py_loop.py — one trainer's Python loop over unix:// at 1, 2 and all
client threads, each against the 1-thread loop in the same run.

The loop is what a GraphSAGE trainer's data path does per step, nothing
else: ``client.sample_gather(seeds, [15, 10, 5], "feat")`` on 1,024 seeds
drawn from the train split, ``client.gather(seeds, "labels")``, both as
torch tensors, then both batches released. The client's ``threads`` option
(``featstore.connect(uri, threads=N)``) splits each batch's sampling hops
(docs/algorithms.md §6, parallel relabel) and its gather over N threads of
the trainer process; the server only hands out the shared mappings.

Data: R-MAT scale 20, edge factor 16, symmetrised, 128 float32 features
(``featstore gen rmat --scale 20 --dim 128 --symmetrize``), cached under
/tmp/featstore-bench/rmat-s20-e16-sym-d128 (or ``--dataset DIR``: a dataset
with a "feat" table, labels and a train split). Thread counts are timed in
interleaved rounds (``--rounds`` of ``--batches`` each, the order rotating),
so the machine's drift falls on every count alike; the first round is a
warm-up. ratio_vs_1_thread is the median over rounds of the round's ratio.

    /usr/bin/python3 bench/py_loop.py [--featstore build/cli/featstore] [--lib build/client-lib/libfeatstore.so]
                                      [--dataset DIR] [--batch 1024] [--batches 40] [--rounds 5]

RESULT bench=py_loop transport=unix threads=N fanouts=15,10,5 batch=B batches=K batches_per_s=...
       ratio_vs_1_thread=...
"""
import argparse
import os
import shutil
import signal
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pp_loader import cached_rmat, serve  # noqa: E402  (the same server start as the other Python benchmark)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--featstore", default=os.path.join(ROOT, "build", "cli", "featstore"))
    p.add_argument("--lib", default=os.environ.get("FEATSTORE_LIB",
                                                   os.path.join(ROOT, "build", "client-lib", "libfeatstore.so")))
    p.add_argument("--dataset", default=None)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--batches", type=int, default=40, help="batches per thread count per round")
    p.add_argument("--rounds", type=int, default=10)
    return p.parse_args()


def dataset(args):
    return args.dataset or cached_rmat(args.featstore, "rmat-s20-e16-sym-d128", 20, 128)


def loop(client, seeds, step0, batches, batch):
    """`batches` training steps' data: sample + features, and labels."""
    for i in range(step0, step0 + batches):
        s = seeds[(i * batch) % (len(seeds) - batch):][:batch]
        b = client.sample_gather(s, [15, 10, 5], "feat", seed=i + 1)
        y = client.gather(s, "labels")
        x, labels = b.torch().features, y.torch().features.view(-1)
        assert x.shape[0] == b.num_nodes and labels.shape == (batch,)
        del x, labels  # a batch's slot comes back once its arrays are gone
        b.release()
        y.release()


def main():
    args = parse_args()
    os.environ["FEATSTORE_LIB"] = args.lib
    sys.path.insert(0, os.path.join(ROOT, "client-lib", "python"))
    import featstore

    path = dataset(args)
    tmp = tempfile.mkdtemp(prefix="fs-pyloop-")
    proc = serve(args.featstore, path, os.path.join(tmp, "s.sock"))
    counts = sorted({1, 2, os.cpu_count() or 1})
    try:
        clients = {t: featstore.connect("unix://" + os.path.join(tmp, "s.sock"), threads=t) for t in counts}
        seeds = np.random.default_rng(1).permutation(clients[1].split("train"))
        secs = {t: [] for t in counts}
        for r in range(args.rounds + 1):
            for k in range(len(counts)):
                t = counts[(k + r) % len(counts)]  # rotate which count goes first
                t0 = time.perf_counter()
                loop(clients[t], seeds, r * args.batches, args.batches, args.batch)
                if r > 0:  # round 0 warms every client up
                    secs[t].append(time.perf_counter() - t0)
        for t in counts:
            # the median over rounds of the round's ratio: robust to a burst of noise in one round
            ratio = float(np.median([one / mine for one, mine in zip(secs[1], secs[t])]))
            done = args.batches * args.rounds
            print(f"RESULT bench=py_loop transport=unix threads={t} fanouts=15,10,5 batch={args.batch} "
                  f"batches={done} batches_per_s={done / sum(secs[t]):.1f} ratio_vs_1_thread={ratio:.2f}", flush=True)
        for c in clients.values():
            c.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
