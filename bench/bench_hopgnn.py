#!/usr/bin/python3
"""bench_hopgnn.py — HopGNN's owner-routed training on a sharded featstore
(issue 49): the model-centric loop against micrographs, pre-gathering and
the hot-row cache, on the machines of bench_cluster.py (network namespaces,
tbf-capped links, a cpu quota per machine), in one run, beside DistDGL's
wire bytes.

Every mode runs N machines, each with a shard (a unix socket: its trainer
answers it in process) and a trainer of rank i. Iteration t's global batch
is the same for every mode: the train split shuffled per epoch (seed 7 +
epoch), N x --batch roots at a time. A trainer then loads its part of it
(with --model none, the default, no model runs: the loader's rate, as
bench_cluster.py and DistDGL's measure it; --model sage trains
examples/train_graphsage.py's GraphSAGE on each batch in the trainer's
process, one torch thread, its step sharing the machine's quota with the
loader, the same in every mode):

  model_centric                the usual DDP loop: rank i takes roots
                               i, i + N, ... and sample_gather's their
                               batch, its rows wherever they are;
  micrograph                   the roots its machine's shard owns
                               (split_by_owner: HopGNN's model goes to its
                               data), sampled, and each root's micrograph's
                               rows gathered on their own (fs_gather per
                               micrograph: no pre-gathering);
  micrograph_pregather         the same roots and sample, and one
                               pregather of their micrographs' union: each
                               row once, one request per owner;
  micrograph_pregather_cache   the same with each trainer process's cache of
                               the hottest rows (--cache-mb; the others run
                               without).

RESULT bench=hopgnn mode=M model=none|sage shards=N wire_bytes_per_epoch=... batches_per_s=<sum over trainers of its
       iterations/s> r_micro=<pairs on the root's shard / pairs> ratio_wire_bytes_vs_model_centric=...
       ratio_batches_per_s_vs_model_centric=... ratio_wire_bytes_vs_distdgl=... (with --distdgl)
       dedup_saved=<rows saved / rows requested> (pregather modes)
RESULT bench=hopgnn_rmicro dataset=D partition=stream|metis shards=N r_micro=...: R_micro of
       --rmicro-batches batches of --batch train roots over one server of D (unix://), D partitioned
       into N parts, part p on shard p (HopGNN's METIS over 4 servers: 0.89-0.92 on its graphs);
       D is the bench's graph and Cora.

    sudo bench/bench_hopgnn.py [--dataset DIR] [--shards 4] [--cores-per-machine 0.4] [--distdgl]

Needs root (namespaces), python3-numpy, etcd and a build (--build).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bench_cluster import (ETCD, FANOUTS, cluster_args, cluster_paths, connect, prepare, run_cluster,  # noqa: E402
                           run_distdgl)
from cluster_harness import log  # noqa: E402

MODES = ["model_centric", "micrograph", "micrograph_pregather", "micrograph_pregather_cache"]


# ---- a trainer (on a machine) -------------------------------------------------------------

class Loader:
    """One rank's part of each global batch, loaded as mode `mode` says."""

    def __init__(self, c, args):
        import numpy as np
        self.np, self.c, self.args = np, c, args
        self.train = c.split("train")
        self.epoch, self.at, self.perm, self.t = 0, 0, None, 0
        self.stats = dict(rows=0, requested=0, saved=0, pairs=0, colocated=0, roots=0)
        self.model = Model(c, args) if args.model == "sage" else None

    def global_batch(self):
        np, gb = self.np, self.args.batch * self.args.world
        if self.perm is None or self.at + gb > len(self.perm):
            if self.perm is not None:
                self.epoch += 1
            self.perm, self.at = np.random.default_rng(7 + self.epoch).permutation(self.train), 0
        g = self.perm[self.at:self.at + gb]
        self.at, self.t = self.at + gb, self.t + 1
        return g

    def step(self):
        np, c, a, s = self.np, self.c, self.args, self.stats
        g = self.global_batch()
        if a.mode == "model_centric":
            roots = g[a.rank::a.world]
            with c.sample_gather(roots, FANOUTS, "feat", seed=self.t, dtype="float32") as b:
                s["rows"] += b.rows
                s["roots"] += b.num_seeds
                if self.model:
                    self.model.step(roots, b, b.torch().features)
            return
        groups = c.split_by_owner(g)
        roots = g[groups.positions[groups.group_of(a.rank)]]
        b = c.sample(roots, FANOUTS, seed=self.t)
        m = c.micrographs(b)
        s["pairs"] += m.pairs
        s["colocated"] += m.pairs_colocated
        s["roots"] += len(roots)
        if a.mode == "micrograph":  # each micrograph's rows on their own
            node_of_pair = np.repeat(np.arange(m.num_nodes), np.diff(m.root_ptr))[np.argsort(m.root, kind="stable")]
            ends = np.cumsum(np.bincount(m.root, minlength=len(roots)))
            nodes, start = b.nodes, 0
            for end in ends:
                rows = c.gather(nodes[node_of_pair[start:end]], "feat")
                s["rows"] += rows.rows
                rows.release()
                start = end
        else:
            rows, st = c.pregather(b, m, np.arange(len(roots)), "feat", max_rows=a.max_rows, dtype="float32")
            s["rows"] += st.rows
            s["requested"] += st.rows_requested
            s["saved"] += st.rows_saved
            if self.model:  # the rows of every root's micrograph: the batch's nodes, in local-id order
                import torch
                self.model.step(roots, b, torch.from_numpy(rows.features))
            rows.release()
        b.release()


class Model:
    """examples/train_graphsage.py's GraphSAGE (a layer per hop, --hidden
    wide) and its Adam, trained on a trainer's batches: one step each."""

    def __init__(self, c, args):
        import torch
        sys.path.insert(0, os.path.join(ROOT, "examples"))
        from train_graphsage import GraphSAGE
        torch.set_num_threads(1)
        torch.manual_seed(args.rank)
        info = c.info()
        self.torch, self.c = torch, c
        self.net = GraphSAGE(info.tables["feat"].dim, args.hidden, info.num_classes, len(FANOUTS))
        self.opt = torch.optim.Adam(self.net.parameters(), lr=0.01)

    def step(self, roots, batch, x):
        """One optimiser step on `roots`' cross-entropy; x: the batch's rows."""
        import torch.nn.functional as F
        with self.c.gather(roots, "labels") as labels:
            y = self.torch.from_numpy(labels.features.reshape(-1).astype("int64"))
        t = batch.torch()
        loss = F.cross_entropy(self.net(x, t.blocks)[t.seed_local], y)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()


def trainer(args):
    c = connect(args.uri, args.start_timeout)
    loader = Loader(c, args)

    def phase(count, limit):
        t0 = time.time()
        done = 0
        while done < count and time.time() - t0 < limit:
            loader.step()
            done += 1
        return done, time.time() - t0

    print("FSB READY rank=%d" % args.rank, flush=True)
    phase(args.warmup, args.phase_timeout)
    print("FSB WARM", flush=True)
    if sys.stdin.readline().strip() != "GO":
        sys.exit("trainer: no GO from the driver")
    for k in loader.stats:
        loader.stats[k] = 0
    n, dt = phase(args.batches, args.phase_timeout)
    print("FSB DONE batches=%d seconds=%.4f %s" % (n, dt, " ".join("%s=%d" % kv for kv in loader.stats.items())),
          flush=True)
    sys.stdin.readline()  # EXIT: leave only after the driver read the links' bytes
    c.close()


# ---- R_micro of a partitioning, measured on one server ----------------------------------------

def r_micro(args, dataset, parts, n):
    """R_micro of --rmicro-batches batches of --batch train roots over one
    server of `dataset` (unix://), part p's nodes on shard p % n."""
    import numpy as np
    sys.path.insert(0, os.path.join(ROOT, "client-lib", "python"))
    os.environ["FEATSTORE_LIB"] = args.lib
    import featstore
    book = json.load(open(os.path.join(parts, "partition.json")))
    owner = np.full(book["node_types"][0]["count"], -1, np.int64)
    for p, d in enumerate(book["part_dirs"]):
        owner[np.load(os.path.join(parts, d["dir"], "node.orig_ids.npy"))] = p % n
    with tempfile.TemporaryDirectory(prefix="featstore-rmicro-") as tmp:
        sock = os.path.join(tmp, "s.sock")
        proc = subprocess.Popen([args.featstore, "serve", dataset, "--socket", sock, "--metrics", "127.0.0.1:0"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            line = proc.stdout.readline()
            if not line.startswith("READY"):
                raise RuntimeError("featstore serve %s: no READY (%r)" % (dataset, line))
            with featstore.connect("unix://" + sock) as c:
                train = c.split("train")
                rng = np.random.default_rng(3)
                pairs = colocated = 0
                for t in range(args.rmicro_batches):
                    with c.sample(rng.choice(train, min(args.batch, len(train)), replace=False), FANOUTS,
                                  seed=t) as b:
                        m = c.micrographs(b)
                        node = np.repeat(np.arange(m.num_nodes), np.diff(m.root_ptr))
                        home = b.seed_local[m.root]
                        other = node != home
                        pairs += int(other.sum())
                        colocated += int((owner[b.nodes[node[other]]] == owner[b.nodes[home[other]]]).sum())
            return colocated / max(pairs, 1)
        finally:
            proc.terminate()
            proc.wait(10)


def rmicro_report(args, n):
    """R_micro with the streaming partitioner and METIS, on the bench's
    dataset and on Cora, at n shards."""
    cora = os.path.join(args.workdir, "cora")
    if not os.path.exists(os.path.join(cora, "manifest.json")):
        subprocess.run([args.featstore, "import", "npz", os.path.join(ROOT, "tests", "data", "cora.npz"), "--out",
                        cora, "--symmetrize"], check=True, stdout=subprocess.DEVNULL)
    for dataset in (args.dataset, cora):
        for method in ("stream", "metis"):
            parts = os.path.join(args.workdir, "rmicro-%s-%s-v%d" % (os.path.basename(dataset), method, n))
            if not os.path.exists(os.path.join(parts, "partition.json")):
                r = subprocess.run([args.featstore, "partition", dataset, "--parts", str(n), "--method",
                                    method, "--out", parts, "--force"], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True)
                if r.returncode != 0:
                    log("partition --method %s of %s failed: %s" % (method, dataset, r.stderr.strip()[-300:]))
                    continue
            print("RESULT bench=hopgnn_rmicro dataset=%s partition=%s shards=%d parts=%d r_micro=%.3f"
                  % (os.path.basename(dataset), method, n, n, r_micro(args, dataset, parts, n)), flush=True)


# ---- the driver ---------------------------------------------------------------------------

def run_mode(args, parts, n, mode):
    """One mode at n machines: (iterations/s summed over trainers, wire bytes per iteration, stats)."""
    def trainer_argv(i):
        return [sys.executable, os.path.abspath(__file__), "--role", "trainer", "--mode", mode, "--uri",
                "etcd://%s/bench" % ETCD, "--rank", str(i), "--world", str(n), "--batch", str(args.batch),
                "--warmup", str(args.warmup), "--batches", str(args.batches), "--max-rows", str(args.max_rows),
                "--phase-timeout", str(args.phase_timeout), "--start-timeout", str(args.start_timeout),
                "--model", args.model, "--hidden", str(args.hidden)]

    cache = args.cache_mb if mode.endswith("_cache") else 0
    done, wire = run_cluster(args, parts, n, trainer_argv, {"FEATSTORE_CACHE_MB": str(cache)}, "hop-" + mode)
    rate = sum(int(d["batches"]) / float(d["seconds"]) for d in done)
    iterations = min(int(d["batches"]) for d in done)
    total = {k: sum(int(d[k]) for d in done) for k in ("rows", "requested", "saved", "pairs", "colocated", "roots")}
    log("%s: %s" % (mode, ", ".join("trainer%d %s iterations in %s s" % (i, d["batches"], d["seconds"])
                                    for i, d in enumerate(done))))
    return rate, wire / max(iterations, 1), total


def driver(args):
    parts, train = prepare(args)
    n = args.shards
    per_epoch = math.ceil(train / (args.batch * n))  # iterations of a global batch
    dgl_epoch = None
    if args.distdgl and args.modes:
        d = run_distdgl(args, n)
        if d:  # its trainers' batches are --batch roots each
            dgl_epoch = float(d["wire_bytes_per_batch"]) * math.ceil(train / args.batch)
    base = None
    for mode in [m for m in args.modes.split(",") if m]:
        rate, per_iter, t = run_mode(args, parts, n, mode)
        epoch = per_iter * per_epoch
        if mode == "model_centric":
            base = (rate, epoch)
        ratio = lambda x, y: "%.3f" % (x / y) if y else "na"  # noqa: E731
        print("RESULT bench=hopgnn mode=%s model=%s shards=%d wire_bytes_per_epoch=%d batches_per_s=%.2f "
              "r_micro=%s ratio_wire_bytes_vs_model_centric=%s ratio_batches_per_s_vs_model_centric=%s "
              "ratio_wire_bytes_vs_distdgl=%s dedup_saved=%s rows_per_root=%.1f rate=%s cores_per_machine=%g "
              "cache_mb=%d batch=%d iterations=%d"
              % (mode, args.model, n, epoch, rate, ratio(t["colocated"], t["pairs"]), ratio(epoch, base[1] if base else 0),
                 ratio(rate, base[0] if base else 0), ratio(epoch, dgl_epoch or 0),
                 ratio(t["saved"], t["requested"]), t["rows"] / max(t["roots"], 1), args.rate,
                 args.cores_per_machine, args.cache_mb if mode.endswith("_cache") else 0, args.batch, args.batches),
              flush=True)
    if args.rmicro:
        rmicro_report(args, n)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--role", choices=["driver", "trainer"], default="driver")
    cluster_args(ap, "/tmp/featstore-bench/cluster")
    ap.add_argument("--shards", type=int, default=4, help="machines")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--mode", choices=MODES, help="(a trainer's)")
    ap.add_argument("--max-rows", type=int, default=1 << 22, help="a pre-gather's buffer, in rows")
    ap.add_argument("--model", choices=["none", "sage"], default="none",
                    help="sage: a GraphSAGE training step on every batch, in the trainer (torch)")
    ap.add_argument("--hidden", type=int, default=128, help="--model sage's hidden width")
    ap.add_argument("--rmicro", type=int, default=1, help="1: the R_micro report of stream and METIS partitions")
    ap.add_argument("--rmicro-batches", type=int, default=5)
    args = ap.parse_args()
    if args.role == "trainer":
        return trainer(args)
    cluster_paths(args, "bench_hopgnn")
    driver(args)


if __name__ == "__main__":
    main()
