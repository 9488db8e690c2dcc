#!/usr/bin/python3
"""pp_loader.py — loading pre-propagated hop tables for SIGN-style training
(the loader chain of the pre-propagation GNN study, P4 in docs/papers.md;
docs/algorithms.md §8), each stage against a
per-sample PyTorch loader in the same run.

Data: R-MAT scale 20 (1,048,576 nodes, every one labelled, 128 float32
features), generated once with ``featstore gen rmat --scale 20 --dim 128
--symmetrize`` and pre-propagated with ``featstore propagate --hops 2``: 3
hop tables hop_0..hop_2, all rows (``--rows all``), cached under
/tmp/featstore-bench/rmat-s20-e16-sym-d128-hops2 (or ``--dataset DIR``, a
dataset with tables hop_0..hop_R and labels). The labelled rows a training
epoch walks are **all** 1,048,576 nodes (not only the train split). Batches
of 8000 rows (the pre-propagation study's default batch and chunk size; ``--batch``), each
delivering, as torch tensors, the batch's rows of every hop table and its
labels. A `featstore serve` the script starts serves the dataset on
unix:// (a scratch socket).

Stages (one RESULT line each, with batches/s over ``per_sample``'s):

  per_sample       a torch.utils.data.Dataset whose __getitem__ returns one
                   node's row of each hop table (numpy memmaps of the
                   dataset's .npy files) and its label, through a default
                   DataLoader(batch_size=8000, shuffle=True, num_workers=0);
  gather           one featstore ``client.gather`` per batch per hop table
                   (and one for the labels) over unix://, ids in random order;
  gather_prefetch  the same batches made by a row stream (``client.stream(
                   tables=[hop_0, ...], order="random", prefetch=2)``);
  chunked          a row stream with order "chunked", chunk = batch size,
                   prefetch 2: each batch is one run of consecutive rows;
  chunked_rows     the same over the labelled layout (``propagate --rows
                   labelled``, cached beside the other): the train split's
                   rows read by row, each batch one run copied in bulk
                   (``StreamBatch.ranges``), its seeds the rows' nodes.

Each stage is timed over a fixed number of batches (``--batches``;
``--per-sample-batches`` for the slow first stage), the stream's opening
included; nothing else runs in the loop (a pure loader benchmark, so
prefetch only hides the client's own Python work).

    /usr/bin/python3 bench/pp_loader.py [--featstore build/cli/featstore] [--lib build/client-lib/libfeatstore.so]
                                        [--dataset DIR] [--hops 2] [--batch 8000] [--batches 1000]
                                        [--per-sample-batches 12]

RESULT bench=pp_loader stage=per_sample|gather|gather_prefetch|chunked|chunked_rows rows=N tables=R+1 dim=D batch=B
       batches=K seconds=... batches_per_s=... ratio_vs_per_sample=...
"""
import argparse
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--featstore", default=os.path.join(ROOT, "build", "cli", "featstore"))
    p.add_argument("--lib", default=os.environ.get("FEATSTORE_LIB",
                                                   os.path.join(ROOT, "build", "client-lib", "libfeatstore.so")))
    p.add_argument("--dataset", default=None, help="a dataset with hop tables (default: generated and cached)")
    p.add_argument("--scale", type=int, default=20)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--hops", type=int, default=2, help="R: the tables hop_0..hop_R")
    p.add_argument("--batch", type=int, default=8000)
    p.add_argument("--batches", type=int, default=1000, help="batches timed per featstore stage")
    p.add_argument("--per-sample-batches", type=int, default=12, help="batches timed for per_sample")
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args()


# ---- the dataset and the server -------------------------------------------------------

def cached_rmat(featstore, name, scale, dim, then=()):
    """/tmp/featstore-bench/NAME: a symmetrized R-MAT (`featstore gen`) made on first use,
    each `featstore` command of `then` run on it ("{dir}" standing for it), then renamed in,
    so an interrupted build is never taken for a finished one."""
    path = os.path.join("/tmp/featstore-bench", name)
    if not os.path.exists(os.path.join(path, "manifest.json")):
        os.makedirs("/tmp/featstore-bench", exist_ok=True)
        tmp = path + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run([featstore, "gen", "rmat", "--scale", str(scale), "--dim", str(dim), "--symmetrize", "--out",
                        tmp], check=True, stdout=subprocess.DEVNULL)
        for cmd in then:
            subprocess.run([featstore] + [a.replace("{dir}", tmp) for a in cmd], check=True, stdout=subprocess.DEVNULL)
        os.rename(tmp, path)
    return path


def dataset(args, rows="all"):
    """The cached pre-propagated R-MAT."""
    if args.dataset and rows == "all":
        return args.dataset
    name = f"rmat-s{args.scale}-e16-sym-d{args.dim}-hops{args.hops}" + ("-labelled" if rows == "labelled" else "")
    return cached_rmat(args.featstore, name, args.scale, args.dim,
                       [["propagate", "{dir}", "--hops", str(args.hops), "--rows", rows]])


def serve(featstore, path, sock, listen="127.0.0.1:0"):
    """`featstore serve path` on a Unix socket (and gRPC on `listen`): the
    process, once it printed READY."""
    proc = subprocess.Popen([featstore, "serve", path, "--socket", sock, "--listen", listen,
                             "--metrics", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    line, deadline = b"", time.monotonic() + 300
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        ch = os.read(proc.stdout.fileno(), 1) if left > 0 and select.select([proc.stdout], [], [], left)[0] else b""
        if not ch:
            proc.kill()
            raise SystemExit(f"pp_loader: featstore serve {path} did not get ready (status {proc.wait()})")
        line += ch
    if not line.startswith(b"READY"):
        proc.kill()
        raise SystemExit(f"pp_loader: featstore serve: {line!r}")
    return proc


# ---- the stages -------------------------------------------------------------------------

class HopRows(torch.utils.data.Dataset):
    """One node's row of every hop table and its label, read through numpy
    memmaps of the dataset's .npy files."""

    def __init__(self, path, tables):
        with open(os.path.join(path, "manifest.json")) as f:
            m = json.load(f)
        self.tables = [np.load(os.path.join(path, m["features"][t]["file"]), mmap_mode="r") for t in tables]
        self.labels = np.load(os.path.join(path, m["labels"]["file"]), mmap_mode="r")

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return [np.array(t[i]) for t in self.tables], int(self.labels[i])


def per_sample(path, tables, args, batches):
    loader = torch.utils.data.DataLoader(HopRows(path, tables), batch_size=args.batch, shuffle=True, num_workers=0)
    done = 0
    for xs, y in loader:
        assert len(xs) == len(tables) and xs[0].shape == (args.batch, args.dim) and y.shape == (args.batch,)
        done += 1
        if done == batches:
            return done
    return done


def gather(client, tables, ids, args, batches):
    rng = np.random.default_rng(args.seed)
    perm, done = rng.permutation(ids), 0
    while done < batches:
        for start in range(0, len(perm) - args.batch + 1, args.batch):
            seeds = perm[start:start + args.batch]
            got = [client.gather(seeds, t) for t in tables + ["labels"]]
            xs, y = [b.torch().features for b in got[:-1]], got[-1].torch().features.view(-1)
            assert xs[0].shape == (args.batch, args.dim) and y.shape == (args.batch,)
            del xs, y  # a batch's result slot comes back once its arrays are gone
            for b in got:
                b.release()
            done += 1
            if done == batches:
                break
        perm = rng.permutation(ids)
    return done


def stream(client, tables, ids, args, batches, order, split=None):
    """Row streams: over `ids` (node ids), or over the row tables' `split`."""
    done, epoch = 0, 0
    while done < batches:
        chunk = args.batch if order == "chunked" else 0
        seeds = dict(split=split) if split else dict(seeds=ids)
        with client.stream(**seeds, batch_size=args.batch, tables=tables, order=order, chunk=chunk, prefetch=2,
                           seed=args.seed, epoch=epoch, drop_last=True) as s:
            for sb in s:
                assert split is None or len(sb.ranges) == 1, "a chunk of row tables is one run"
                xs, y = [b.torch().features for b in sb.tables], torch.from_numpy(sb.labels)
                assert xs[0].shape == (args.batch, args.dim) and y.shape == (args.batch,)
                del xs, y
                done += 1
                if done == batches:
                    break
        epoch += 1
    return done


def main():
    args = parse_args()
    os.environ["FEATSTORE_LIB"] = args.lib
    sys.path.insert(0, os.path.join(ROOT, "client-lib", "python"))
    import featstore
    path = dataset(args)
    tables = [f"hop_{r}" for r in range(args.hops + 1)]
    n = len(np.load(os.path.join(path, json.load(open(os.path.join(path, "manifest.json")))["labels"]["file"]),
                    mmap_mode="r"))
    ids = np.arange(n, dtype=np.int64)  # every node is labelled: the rows an epoch walks
    tmp = tempfile.mkdtemp(prefix="featstore-pp-loader-")
    proc = serve(args.featstore, path, os.path.join(tmp, "s.sock"))
    rows_proc = serve(args.featstore, dataset(args, "labelled"), os.path.join(tmp, "r.sock"))
    try:
        with featstore.connect("unix://" + os.path.join(tmp, "s.sock")) as client, \
                featstore.connect("unix://" + os.path.join(tmp, "r.sock")) as rows_client:
            stages = [("per_sample", lambda k: per_sample(path, tables, args, k), args.per_sample_batches),
                      ("gather", lambda k: gather(client, tables, ids, args, k), args.batches),
                      ("gather_prefetch", lambda k: stream(client, tables, ids, args, k, "random"), args.batches),
                      ("chunked", lambda k: stream(client, tables, ids, args, k, "chunked"), args.batches),
                      ("chunked_rows", lambda k: stream(rows_client, tables, None, args, k, "chunked", "train"),
                       args.batches)]
            base = None
            for name, fn, k in stages:
                t0 = time.perf_counter()
                done = fn(k)
                seconds = time.perf_counter() - t0
                rate = done / seconds
                base = base or rate
                print(f"RESULT bench=pp_loader stage={name} rows={n} tables={len(tables)} dim={args.dim} "
                      f"batch={args.batch} batches={done} seconds={seconds:.2f} batches_per_s={rate:.2f} "
                      f"ratio_vs_per_sample={rate / base:.2f}", flush=True)
    finally:
        for p in (proc, rows_proc):
            p.send_signal(signal.SIGTERM)
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
