#!/usr/bin/python3
"""bench_elastic.py — what growing and shrinking a cluster costs its trainers
(issue 50, item 4: `featstore cluster add|drain`).

A private etcd on loopback, a partitioned R-MAT (--scale, --dim float32
features, --parts parts) on 4 shards at R = 1, each with a unix socket, and a
trainer (this process, etcd://, rows from the shards: no cache) issuing
[15, 10, 5] x 1,024 batches without pause, each checked against the same
batch taken before anything moved. Three phases of --seconds each are
measured: steady on 4 shards (the baseline), the add of a fifth shard
(started with --parts assigned; `featstore cluster add --wait`) with the
trainer's batches during it, and its drain (`featstore cluster drain
--wait`). A batch that fails or differs is counted, never retried.

RESULT bench=cluster_elastic phase=add|drain parts=V moved=<part copies> moved_bytes=<their bytes on disk>
       settle_s=<the command's wait> batches_per_s=<the trainer's, from the change to settled>
       steady_batches_per_s=<the baseline> ratio_vs_steady=... failed=... wrong=...

    bench/bench_elastic.py [--scale 18] [--dim 128] [--parts 20] [--seconds 5]

Needs etcd, python3-numpy and a build (--build).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import fs_serve  # noqa: E402

SHARDS, FANOUTS, BATCH = 4, [15, 10, 5], 1024


def dir_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


class Trainer(threading.Thread):
    """Batches in a loop until stopped; each compared with the first."""

    def __init__(self, client, seeds, want, np):
        super().__init__(daemon=True)
        self.c, self.seeds, self.want, self.np = client, seeds, want, np
        self.batches = self.failed = self.wrong = 0
        self.stop = threading.Event()
        self.start()

    def run(self):
        while not self.stop.is_set():
            try:
                with self.c.sample_gather(self.seeds, FANOUTS, "feat", seed=7) as b:
                    self.wrong += not self.np.array_equal(self.np.array(b.features), self.want)
            except Exception:  # noqa: BLE001 - featstore.Error: counted, never retried
                self.failed += 1
            self.batches += 1

    def rate_over(self, seconds):
        n0, t0 = self.batches, time.monotonic()
        time.sleep(seconds)
        return (self.batches - n0) / (time.monotonic() - t0)


def change(featstore, etcd, verb, shard, trainer):
    """`featstore cluster VERB ... --wait`: (copies moved, seconds to settle, the trainer's batches/s meanwhile)."""
    n0, t0 = trainer.batches, time.monotonic()
    out = subprocess.run([featstore, "cluster", verb, "etcd://%s/elastic" % etcd, str(shard), "--wait", "120s"],
                         capture_output=True, text=True, timeout=180)
    settle = time.monotonic() - t0
    if out.returncode != 0:
        raise RuntimeError("featstore cluster %s: %s" % (verb, out.stdout + out.stderr))
    moved = int(re.search(r"(\d+) part copies move", out.stdout).group(1))
    return moved, settle, (trainer.batches - n0) / settle


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--scale", type=int, default=18)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--parts", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--workdir", default="/tmp/featstore-bench/elastic")
    args = ap.parse_args()
    if not fs_serve.etcd_bin():
        print("bench_elastic: no etcd installed", file=sys.stderr)
        return 77
    featstore = os.path.join(args.build, "cli", "featstore")
    os.environ["FEATSTORE_LIB"] = os.path.join(args.build, "client-lib", "libfeatstore.so")
    os.environ["FEATSTORE_CACHE_MB"] = "0"  # every row from its shard
    sys.path.insert(0, os.path.join(ROOT, "client-lib", "python"))
    import featstore as fs
    import numpy as np
    os.makedirs(args.workdir, exist_ok=True)
    data = os.path.join(args.workdir, "rmat-s%d-d%d" % (args.scale, args.dim))
    if not os.path.exists(os.path.join(data, "manifest.json")):
        subprocess.run([featstore, "gen", "rmat", "--scale", str(args.scale), "--edge-factor", "8", "--dim",
                        str(args.dim), "--out", data], check=True, stdout=subprocess.DEVNULL)
    root = "%s.parts%d" % (data, args.parts)
    if not os.path.exists(os.path.join(root, "partition.json")):
        subprocess.run([featstore, "partition", data, "--parts", str(args.parts), "--out", root], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    part_bytes = dir_bytes(os.path.join(root, "part-00000"))
    tmp = tempfile.mkdtemp(prefix="featstore-elastic-")
    procs, trainer = {}, None
    try:
        procs["etcd"], etcd = fs_serve.start_etcd(tmp)
        def shard(k, parts):
            cmd = [featstore, "serve", root, "--parts", parts, "--shard", str(k), "--listen", "127.0.0.1:0",
                   "--socket", os.path.join(tmp, "s%d.sock" % k), "--cluster", "etcd://%s/elastic" % etcd]
            return fs_serve.spawn_ready(cmd + (["--shards", str(SHARDS)] if parts == "auto" else []),
                                        stderr=subprocess.DEVNULL)[0]
        for k in range(SHARDS):
            procs[k] = shard(k, "auto")
        with fs.connect("etcd://%s/elastic" % etcd) as c:
            seeds = c.split("train")[:BATCH]
            with c.sample_gather(seeds, FANOUTS, "feat", seed=7) as b:
                want = np.array(b.features)
            trainer = Trainer(c, seeds, want, np)
            steady = trainer.rate_over(args.seconds)
            procs[SHARDS] = shard(SHARDS, "assigned")
            for verb in ("add", "drain"):
                moved, settle, during = change(featstore, etcd, verb, SHARDS, trainer)
                after = trainer.rate_over(args.seconds)
                print("RESULT bench=cluster_elastic phase=%s parts=%d moved=%d moved_bytes=%d settle_s=%.2f "
                      "batches_per_s=%.2f after_batches_per_s=%.2f steady_batches_per_s=%.2f ratio_vs_steady=%.3f "
                      "failed=%d wrong=%d" % (verb, args.parts, moved, moved * part_bytes, settle, during, after,
                                              steady, during / steady, trainer.failed, trainer.wrong), flush=True)
            if procs[SHARDS].wait(timeout=30) != 0:
                raise RuntimeError("the drained shard exited %d" % procs[SHARDS].returncode)
            trainer.stop.set()
            trainer.join()
    finally:
        if trainer:
            trainer.stop.set()
        for p in procs.values():
            fs_serve.stop(p)
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if trainer and (trainer.failed or trainer.wrong) else 0


if __name__ == "__main__":
    sys.exit(main())
