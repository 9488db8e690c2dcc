#!/usr/bin/python3
"""bench_cluster.py — a sharded featstore on N "machines" of one host, and
DistDGL 2.1 on the same machines in the same run (issue 48).

Each machine i is a network namespace of cluster_net.sh (10.77.0.(i+1),
its link capped by tbf to --rate both ways; no netem here, so bandwidth
caps only). It runs one shard server (`featstore serve PARTS --parts auto
--shards N --shard i`, every part p with p % N == i of a --parts-way
partitioning, with a unix socket unless --local 0, so the machine's
trainer answers its own shard in process) and one trainer, whose seeds are
the train nodes its shard holds (--local-seeds, as DistDGL's node_split;
0: its rank's share of the whole split); etcd runs on machine 0. A trainer connects
to etcd://10.77.0.1:2379/bench and loads GraphSAGE node-classification
batches as a trainer would, with an epoch stream (node_stream: its rank's
share of the train split, shuffled; [15, 10, 5] x 1024 with the rows of
"feat" and the seeds' labels; --producers threads, --prefetch deep). After --warmup batches every trainer waits at a
gate; the driver reads the machines' veth tx bytes (WIRE_BYTES), opens the
gate, each trainer times --batches batches, and the driver reads the bytes
again before any trainer leaves.

    sudo bench/bench_cluster.py [--dataset DIR] [--shards 1,2,4] [--rate 1gbit] [--rounds K] [--distdgl]

RESULT bench=cluster shards=N batches_per_s=<sum over trainers> scaling_efficiency=<agg(N) / (N agg(1))>
       efficiency_rounds=<each round's, --rounds K: every count run in turn K times, the line the median round's>
       wire_bytes_per_batch=... wire_bytes_per_epoch=... remote_rows_per_batch=<the trainers' own counters>
       rate=... cache_mb=... local=...
(--cache-mb: each trainer process keeps the rows of the partitioning's
hottest nodes, up to that budget: cluster/fs_cluster.h; 0 turns it off.)
RESULT bench=cluster peer=distdgl shards=N ratio_batches_per_s=<featstore / DistDGL> ratio_wire_bytes=<same>
(with --distdgl: bench/peers/distdgl_cluster.py in the DGL venv of
bench/peers/setup.sh, on its own METIS partitions of the same graph, the
same task, the same machines and caps, right after featstore's run at N.)

Every process of a machine shares this host's cores: on a 2-core machine N
machines have 2/N cores each, so aggregate throughput is bounded by the
cores, not by the links, unless the links are slow enough to bind first.
--cores-per-machine C caps each machine at C cores (a cgroup cpu quota), so
that with N x C <= the host's cores every machine has its own, as in a
cluster of equal machines: the scaling efficiency is then measured.
Needs root (namespaces), python3-numpy, etcd, and a build (--build).
"""
import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from cluster_harness import (Proc, cpus_up, log, net, on_machine, parse_kv, teardown, wait_for,  # noqa: E402
                             wait_port, wire_bytes)

FANOUTS = [15, 10, 5]
ETCD = "10.77.0.1:2379"
SHARD_PORT = 7000


# ---- a trainer (on a machine) -------------------------------------------------------------

def connect(uri, timeout):
    """The cluster's connection, once every part has its shard (shards
    register as they start: until the last has, connecting is refused)."""
    import featstore
    end = time.time() + timeout
    while True:
        try:
            return featstore.connect(uri)
        except featstore.Error:
            if time.time() > end:
                raise
            time.sleep(0.3)


def trainer_counts(c):
    """This trainer process's own counters (docs/metrics.md, "Trainers of a
    cluster"): {"calls_total": n, "rows_remote": n, ...}."""
    import re
    out = {}
    for name, path, value in re.findall(r'^featstore_trainer_(\w+?)(?:\{path="(\w+)"\})? (\d+)$', c.stats(), re.M):
        out[name.replace("_total", "") + ("_" + path if path else "") if path else name] = int(value)
    return out


def trainer(args):
    """The loader a trainer uses: an epoch stream of node batches (its
    rank's share of the split, a seeded shuffle) with the rows of "feat"
    and the seeds' labels, made ahead by --producers threads, --prefetch
    batches deep: the same batches as sample_gather + gather, one by one."""
    c = connect(args.uri, args.start_timeout)
    state = {"epoch": 0, "stream": None, "nodes": 0}
    # its seeds: the train nodes its machine's shard holds (fs_split_local, as DistDGL's node_split), or
    # its rank's share of the whole split
    seeds, rank, world = ("train", args.rank, args.world) if not args.local_seeds else \
        (c.split("train", local=True), 0, 1)

    def next_batch():
        while True:
            if state["stream"] is None:
                state["stream"] = iter(c.node_stream(
                    seeds, batch_size=args.batch, num_neighbors=FANOUTS, table="feat", labels="labels",
                    seed=7, epoch=state["epoch"], rank=rank, world_size=world, prefetch=args.prefetch,
                    producers=args.producers))
            try:
                return next(state["stream"])
            except StopIteration:
                state["stream"], state["epoch"] = None, state["epoch"] + 1

    def step():
        b = next_batch()
        assert b.features.shape[0] == len(b.batch.nodes) and len(b.labels) == len(b.seeds)
        state["nodes"] += len(b.batch.nodes)
        b.release()

    def phase(count, limit):
        t0 = time.time()
        done = 0
        while done < count and time.time() - t0 < limit:
            step()
            done += 1
        return done, time.time() - t0

    print("FSB READY rank=%d" % args.rank, flush=True)
    phase(args.warmup, args.phase_timeout)
    print("FSB WARM", flush=True)
    if sys.stdin.readline().strip() != "GO":  # the stream's buffer is full here, and again at the end:
        sys.exit("trainer: no GO from the driver")  # the window makes as many batches as it takes
    state["nodes"] = 0
    before = trainer_counts(c)
    n, dt = phase(args.batches, args.phase_timeout)
    after = trainer_counts(c)
    rows = {k: (after[k] - before[k]) / max(n, 1) for k in ("rows_remote", "rows_local", "rows_cache")}
    # (rows the process's producers gathered while n batches were taken: their buffer is full at both ends)
    print("FSB DONE batches=%d seconds=%.4f input_nodes=%d remote_rows_per_batch=%.0f local_rows_per_batch=%.0f "
          "cached_rows_per_batch=%.0f local_shards=%d" % (n, dt, state["nodes"], rows["rows_remote"],
                                                          rows["rows_local"], rows["rows_cache"],
                                                          after["local_shards"]), flush=True)
    sys.stdin.readline()  # EXIT: leave only after the driver read the counters
    c.close()


# ---- the driver ---------------------------------------------------------------------------

def dataset_and_parts(args):
    if not args.dataset:
        args.dataset = "/tmp/featstore-bench/rmat-s18-e16-d128"
        if not os.path.exists(os.path.join(args.dataset, "manifest.json")):
            subprocess.run([args.featstore, "gen", "rmat", "--scale", "18", "--edge-factor", "16", "--dim", "128",
                            "--out", args.dataset], check=True, stdout=subprocess.DEVNULL)
    parts = os.path.join(args.workdir, "parts-%s-v%d%s" % (os.path.basename(os.path.abspath(args.dataset)),
                                                          args.parts, "" if args.method == "stream" else "-" + args.method))
    book = os.path.join(parts, "partition.json")
    fresh = os.path.exists(book) and all("hot" in t for t in json.load(open(book))["node_types"])
    if not fresh:  # none yet, or from a featstore before hot lists
        subprocess.run([args.featstore, "partition", args.dataset, "--parts", str(args.parts), "--method",
                        args.method, "--out", parts, "--force"], check=True)
    return parts


def run_cluster(args, parts, n, trainer_argv, env_extra=None, tag="fs"):
    """n machines, each with a shard of parts (a unix socket with --local)
    and a trainer (trainer_argv(i)), etcd on machine 0: the trainers warm
    up, the driver opens their gate, and reads the links' bytes before and
    after their measured phase. (each trainer's DONE fields, wire bytes)."""
    run = os.path.join(args.workdir, "%s-n%d" % (tag, n))
    shutil.rmtree(run, ignore_errors=True)
    os.makedirs(run)
    procs, shards, trainers = [], [], []
    env = {"FEATSTORE_LIB": args.lib, "PYTHONPATH": os.path.join(ROOT, "client-lib", "python"),
           "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1", "FEATSTORE_CACHE_MB": str(args.cache_mb)}
    env.update(env_extra or {})

    def start(name, i, argv, group):
        pr = Proc(name, on_machine(i, None, env, argv), open(os.path.join(run, name + ".log"), "w"))
        group.append(pr)
        procs.append(pr)
        return pr

    try:
        log(net("up", str(n), args.rate).strip())
        cpus_up(n, args.cores_per_machine)
        etcd = start("etcd", 0, ["etcd", "--data-dir", os.path.join(run, "etcd"), "--listen-client-urls",
                                 "http://" + ETCD, "--advertise-client-urls", "http://" + ETCD,
                                 "--listen-peer-urls", "http://127.0.0.1:2380", "--initial-advertise-peer-urls",
                                 "http://127.0.0.1:2380", "--initial-cluster", "default=http://127.0.0.1:2380"], [])
        host, port = ETCD.split(":")
        wait_port(0, host, int(port), args.start_timeout, watch=etcd)  # shards join it at start
        for i in range(n):  # with --local, each machine's trainer answers its own shard in process (unix://)
            local = ["--socket", os.path.join(run, "shard%d.sock" % i)] if args.local else []
            start("shard%d" % i, i, [args.featstore, "serve", parts, "--parts", "auto", "--shards", str(n),
                                     "--shard", str(i), "--listen", "10.77.0.%d:%d" % (i + 1, SHARD_PORT),
                                     "--insecure", "--cluster", "etcd://%s/bench" % ETCD] + local, shards)
        wait_for(shards, "READY", args.start_timeout, watch=[etcd])
        for i in range(n):
            start("trainer%d" % i, i, trainer_argv(i), trainers)
        servers = shards + [etcd]  # read while waiting, so that no pipe fills
        wait_for(trainers, "READY", args.start_timeout, watch=servers)
        wait_for(trainers, "WARM", args.phase_timeout + 60, watch=servers)
        before = wire_bytes()
        for p in trainers:
            p.send("GO")
        done = [parse_kv(l) for l in wait_for(trainers, "DONE", args.phase_timeout + 60, watch=servers)]
        after = wire_bytes()
        for p in trainers:
            p.send("EXIT")
        return done, after - before
    finally:
        teardown(list(reversed(procs)))  # trainers first, etcd last


def run_featstore(args, parts, n):
    """One run at n machines: (aggregate batches/s, wire bytes per batch, batches, remote rows per batch)."""
    def trainer_argv(i):
        return [sys.executable, os.path.abspath(__file__), "--role", "trainer", "--uri", "etcd://%s/bench" % ETCD,
                "--rank", str(i), "--world", str(n), "--local-seeds", str(args.local_seeds),
                "--batch", str(args.batch), "--warmup", str(args.warmup),
                "--batches", str(args.batches), "--phase-timeout", str(args.phase_timeout),
                "--producers", str(args.producers), "--prefetch", str(args.prefetch),
                "--start-timeout", str(args.start_timeout)]

    done, wire = run_cluster(args, parts, n, trainer_argv)
    rates = [int(d["batches"]) / float(d["seconds"]) for d in done]
    batches = sum(int(d["batches"]) for d in done)
    for i, (d, r) in enumerate(zip(done, rates)):
        log("featstore trainer%d: %s batches in %s s = %.2f batches/s, %s input nodes; rows per batch: %s remote, %s "
            "local, %s cached; %s shards in process" % (i, d["batches"], d["seconds"], r, d["input_nodes"],
                                                         d["remote_rows_per_batch"], d["local_rows_per_batch"],
                                                         d["cached_rows_per_batch"], d["local_shards"]))
    remote_rows = sum(float(d["remote_rows_per_batch"]) for d in done) / len(done)
    return sum(rates), wire / batches, batches, remote_rows


def run_distdgl(args, n):
    """DistDGL's RESULT fields at n machines, or None (its failure logged)."""
    cmd = [args.dgl_python, os.path.join(HERE, "peers", "distdgl_cluster.py"), "--dataset", args.dataset,
           "--machines", str(n), "--rate", args.rate, "--workdir", os.path.join(args.workdir, "distdgl"),
           "--batches", str(args.batches), "--warmup", str(args.warmup),
           "--cores-per-machine", str(args.cores_per_machine)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.phase_timeout * 2 + 900,
                       env=dict(os.environ, OMP_NUM_THREADS="1"))
    sys.stderr.write(r.stderr[-2000:])
    for line in r.stdout.splitlines():
        if line.startswith("RESULT bench=cluster peer=distdgl"):
            print(line, flush=True)
            return parse_kv(line)
    log("DistDGL at %d machines gave no RESULT (exit %d)" % (n, r.returncode))
    return None


def prepare(args):
    """A driver's start: SIGTERM exits (its finally blocks tear down), the
    workdir, the dataset and its parts. (parts root, train nodes)."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    os.makedirs(args.workdir, exist_ok=True)
    args.workdir = os.path.abspath(args.workdir)
    parts = dataset_and_parts(args)
    with open(os.path.join(args.dataset, "manifest.json")) as f:
        manifest = json.load(f)
    import numpy as np
    return parts, len(np.load(os.path.join(args.dataset, manifest["splits"]["train"]), mmap_mode="r"))


def driver(args):
    """Each round runs every machine count in turn; a round's efficiencies
    divide by that round's one-machine figure, so a host whose speed drifts
    between runs minutes apart (a shared VM's memory bandwidth) moves both
    sides of a ratio alike. With several rounds the RESULT line is the
    median round's (by efficiency at the largest count), and every round
    is logged."""
    parts, train = prepare(args)
    per_epoch = math.ceil(train / args.batch)
    counts = [int(x) for x in args.shards.split(",")]
    rounds = []
    for r in range(args.rounds):
        runs = {n: run_featstore(args, parts, n) for n in counts}
        rounds.append(runs)
        if args.rounds > 1:
            log("round %d: %s" % (r + 1, ", ".join("%d machines %.2f batches/s" % (n, runs[n][0]) for n in counts)))
    top = counts[-1]
    key = lambda runs: runs[top][0] / (top * runs[1][0]) if 1 in runs else 0.0  # noqa: E731
    runs = sorted(rounds, key=key)[len(rounds) // 2]
    base = runs[1][0] if 1 in runs else None
    for n in counts:
        agg, per_batch, batches, remote_rows = runs[n]
        eff = "%.3f" % (agg / (n * base)) if base else "na"
        effs = ",".join("%.3f" % (rr[n][0] / (n * rr[1][0])) for rr in rounds) if base else "na"
        print("RESULT bench=cluster shards=%d trainers=%d batches_per_s=%.2f scaling_efficiency=%s "
              "efficiency_rounds=%s wire_bytes_per_batch=%d wire_bytes_per_epoch=%d remote_rows_per_batch=%.0f "
              "rate=%s parts=%d cache_mb=%d cores_per_machine=%g local=%d local_seeds=%d batches=%d"
              % (n, n, agg, eff, effs, per_batch, per_batch * per_epoch, remote_rows, args.rate, args.parts,
                 args.cache_mb, args.cores_per_machine, args.local, args.local_seeds, batches), flush=True)
        if args.distdgl:
            d = run_distdgl(args, n)
            if d:
                dgl_rate, dgl_bytes = float(d["batches_per_s"]), float(d["wire_bytes_per_batch"])
                ratio_bytes = "%.3f" % (per_batch / dgl_bytes) if dgl_bytes > 0 else "na"
                print("RESULT bench=cluster peer=distdgl shards=%d ratio_batches_per_s=%.3f ratio_wire_bytes=%s "
                      "featstore_batches_per_s=%.2f distdgl_batches_per_s=%.2f" % (
                          n, agg / dgl_rate, ratio_bytes, agg, dgl_rate), flush=True)


def cluster_args(ap, workdir):
    """The options of a run of machines, bench_cluster's and bench_hopgnn's."""
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--dataset", help="a featstore dataset (default: R-MAT scale 18, 128 features, generated)")
    ap.add_argument("--parts", type=int, default=16, help="virtual partitions (dealt p %% N to the shards)")
    ap.add_argument("--method", choices=["stream", "metis"], default="stream",
                    help="featstore partition's method (metis: a build with libmetis)")
    ap.add_argument("--rate", default="1gbit")
    ap.add_argument("--cores-per-machine", type=float, default=0,
                    help="cap each machine's processes to this many cores (cgroup cpu quota; 0: no cap), so N "
                         "machines have cores of their own up to the host's (2 cores: 0.5 for 4 machines)")
    ap.add_argument("--cache-mb", type=int, default=256,
                    help="each trainer process's cache of the hottest rows (FEATSTORE_CACHE_MB; 0: none)")
    ap.add_argument("--local", type=int, default=1,
                    help="1: each shard has a unix socket, so its machine's trainer answers it in process (the "
                         "unix:// path); 0: every shard over gRPC")
    ap.add_argument("--workdir", default=workdir)
    ap.add_argument("--distdgl", action="store_true", help="DistDGL at each count too (bench/peers/setup.sh)")
    ap.add_argument("--dgl-python", default=os.path.expanduser("~/.cache/featstore-peers/dgl/bin/python"))
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--batches", type=int, default=40)
    ap.add_argument("--phase-timeout", type=int, default=120, help="seconds a warm or measured phase may run")
    ap.add_argument("--start-timeout", type=int, default=120)
    ap.add_argument("--uri")
    ap.add_argument("--rank", type=int)
    ap.add_argument("--world", type=int)


def cluster_paths(args, who):
    """The build's CLI and library into args; root needed for the namespaces."""
    args.featstore = os.path.join(args.build, "cli", "featstore")
    args.lib = os.path.join(args.build, "client-lib", "libfeatstore.so")
    if os.geteuid() != 0:
        sys.exit("%s: needs root (network namespaces)" % who)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--role", choices=["driver", "trainer"], default="driver")
    cluster_args(ap, "/tmp/featstore-bench/cluster")
    ap.add_argument("--shards", default="1,2,4", help="machine counts, one run each (1 first: the baseline)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="rounds of every count in turn; the RESULT is the median round's (efficiency at the "
                         "largest count), every round's efficiencies beside it")
    ap.add_argument("--local-seeds", type=int, default=None,
                    help="1 (the default with --local 1): each trainer's seeds are the train nodes its machine's "
                         "shard holds (fs_split_local), as DistDGL's node_split gives its trainers; 0: its rank's "
                         "share of the whole split")
    ap.add_argument("--producers", type=int, default=2, help="a trainer's stream: threads making batches")
    ap.add_argument("--prefetch", type=int, default=4, help="a trainer's stream: batches made ahead")
    args = ap.parse_args()
    if args.local_seeds is None:
        args.local_seeds = args.local
    if args.role == "trainer":
        return trainer(args)
    cluster_paths(args, "bench_cluster")
    driver(args)


if __name__ == "__main__":
    main()
