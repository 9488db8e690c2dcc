#!/usr/bin/python3
"""peer_loader.py — training-loader throughput of featstore beside its peers,
measured in one run on one graph (bench/README.md, "Peers").

Contenders, each a loop that yields what a trainer's step needs (the
sampled subgraph, the features of its nodes and the labels; no model):

  node task, [15, 10, 5] x --batch seeds from the train split:
    featstore-unix   featstore.pyg.NeighborLoader over unix:// (zero-copy)
    featstore-grpc   featstore.pyg.NeighborLoader over grpc:// on loopback
    pyg              PyG's NeighborLoader on an in-memory Data (torch-sparse's sampler)
    dgl              DGL's NeighborSampler + DataLoader with prefetch_node_feats/labels
    graphbolt        GraphBolt's ItemSampler -> sample_neighbor -> fetch_feature
  link task, --batch positive edges drawn from the graph, one uniform
  negative per positive (binary), the same fanouts:
    featstore-unix   featstore.pyg.LinkNeighborLoader over unix://
    pyg              PyG's LinkNeighborLoader
    dgl              DGL's as_edge_prediction_sampler(Uniform(1))
  train task (issue 53): the node task's loaders, each step a 3-layer
  GraphSAGE's forward, backward and Adam step in the contender's framework
  (peer_train.py); featstore with the loader's defaults. A peer is measured
  at each of --peer-workers (its loader's worker processes: DGL's and PyG's
  DataLoader num_workers, GraphBolt's), its best reported; NAME@compute is
  the compute-only bound, the same model on batches loaded beforehand.

Each is measured twice (--consumer): taking the batch's tensors only, and
with a light stand-in for a model, x.sum() and y[:batch_size].sum() in
torch, which shares the cores with the loader as a real trainer's step does.

Every contender runs in a worker process of its own (PyG and featstore in
the PyG venv, DGL and GraphBolt in the DGL venv of bench/peers/setup.sh),
pinned with its featstore server to the cores measured (taskset: core 0,
or cores 0-1), torch and OpenMP told the same count. Workers load the graph
once, then the driver times them in interleaved rounds (--rounds, each
worker --batches batches after --warmup, the order rotating), so the
machine's drift falls on every contender alike; a contender's figure is its
median round, and each ratio is the median over rounds of that round's
ratio featstore / peer.

    bench/peers/setup.sh      # once: the peers' venvs (~15 minutes, ~6 GB)
    /usr/bin/python3 bench/peers/peer_loader.py [--dataset data/default] [--cores 1,2] [--tasks node,link]

RESULT bench=peer_loader task=node|link peer=NAME cores=C consumer=none|sum batches_per_s=... featstore_batches_per_s=...
       ratio_featstore_vs_peer=... shmem_thp=...   (featstore-unix against each peer; featstore-grpc against each
                                      peer in lines with transport=grpc)
RESULT bench=train peer=NAME cores=C steps_per_s=... featstore_steps_per_s=... ratio_featstore_vs_peer=... workers=W
RESULT bench=train peer=NAME cores=C ratio_step_vs_compute_only=... compute_only_steps_per_s=...
"""
import argparse
import json
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FANOUTS = [15, 10, 5]


# ---- the workers: one contender each ------------------------------------------------

def load_graph(path):
    """The featstore dataset's arrays with numpy: (indptr, indices, feat, labels, train)."""
    import numpy as np
    with open(os.path.join(path, "manifest.json")) as f:
        m = json.load(f)
    load = lambda name: np.load(os.path.join(path, name), mmap_mode="r")  # noqa: E731
    return (np.asarray(load(m["topology"]["indptr"])), np.asarray(load(m["topology"]["indices"])),
            np.asarray(load(m["features"]["feat"]["file"])), np.asarray(load(m["labels"]["file"])),
            np.asarray(load(m["splits"]["train"])))


def link_seeds(indptr, indices, count, seed=7):
    """`count` edges of the graph drawn at random: the link task's positives."""
    import numpy as np
    rng = np.random.default_rng(seed)
    pick = rng.choice(len(indices), size=count, replace=False)
    dst = np.searchsorted(indptr, pick, side="right") - 1
    return indices[pick].astype(np.int64), dst.astype(np.int64)


def featstore_node(args):
    import torch
    from featstore import pyg
    torch.manual_seed(0)
    # the loader's defaults (over unix:// a producer per core), unless a train variant of --fs-threads
    return pyg.NeighborLoader(args.uri, num_neighbors=FANOUTS, input_nodes="train", batch_size=args.batch,
                              shuffle=True, threads=args.workers or None), lambda d: (d.x, d.y, d.edge_index)


def featstore_link(args):
    import torch
    from featstore import pyg
    torch.manual_seed(0)
    fs = pyg.FeatureStore(args.uri)  # the defaults: calls split over the cores a stream would use
    src, dst = link_seeds(*_topology(args.dataset), args.link_edges)
    loader = pyg.LinkNeighborLoader(fs.client, num_neighbors=FANOUTS, edge_label_index=torch.stack(
        [torch.from_numpy(src), torch.from_numpy(dst)]), neg_sampling="binary", batch_size=args.batch, shuffle=True)
    return loader, lambda d: (d.x, d.y, d.edge_index, d.edge_label_index)


def _topology(path):
    indptr, indices, *_ = load_graph(path)
    return indptr, indices


def pyg_data(args):
    import numpy as np
    import torch
    from torch_geometric.data import Data
    indptr, indices, feat, labels, train = load_graph(args.dataset)
    dst = np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))
    data = Data(x=torch.from_numpy(np.array(feat)), y=torch.from_numpy(np.array(labels)),
                edge_index=torch.stack([torch.from_numpy(indices.astype(np.int64)), torch.from_numpy(dst)]))
    return data, torch.from_numpy(train.astype(np.int64)), indptr, indices


def pyg_node(args):
    import torch
    from torch_geometric.loader import NeighborLoader
    data, train, *_ = pyg_data(args)
    torch.manual_seed(0)
    return NeighborLoader(data, num_neighbors=FANOUTS, input_nodes=train, batch_size=args.batch, shuffle=True,
                          num_workers=args.workers, persistent_workers=args.workers > 0), \
        lambda d: (d.x, d.y, d.edge_index)


def pyg_link(args):
    import torch
    from torch_geometric.loader import LinkNeighborLoader
    data, _, indptr, indices = pyg_data(args)
    src, dst = link_seeds(indptr, indices, args.link_edges)
    torch.manual_seed(0)
    loader = LinkNeighborLoader(data, num_neighbors=FANOUTS, edge_label_index=torch.stack(
        [torch.from_numpy(src), torch.from_numpy(dst)]), neg_sampling_ratio=1.0, batch_size=args.batch, shuffle=True)
    return loader, lambda d: (d.x, d.y, d.edge_index, d.edge_label_index)


def dgl_graph(args):
    import dgl
    import numpy as np
    import torch
    indptr, indices, feat, labels, train = load_graph(args.dataset)
    # CSC: node v's in-neighbours are indices[indptr[v]:indptr[v+1]], the ones it samples
    g = dgl.graph(("csc", (torch.from_numpy(indptr.astype(np.int64)), torch.from_numpy(indices.astype(np.int64)),
                           torch.arange(len(indices)))), num_nodes=len(indptr) - 1)
    g.ndata["feat"] = torch.from_numpy(np.array(feat))
    g.ndata["label"] = torch.from_numpy(np.array(labels))
    return g, torch.from_numpy(train.astype(np.int64)), indptr, indices


def dgl_node(args):
    import dgl
    import torch
    g, train, *_ = dgl_graph(args)
    sampler = dgl.dataloading.NeighborSampler(FANOUTS[::-1], prefetch_node_feats=["feat"],
                                              prefetch_labels=["label"])
    torch.manual_seed(0)
    loader = dgl.dataloading.DataLoader(g, train, sampler, batch_size=args.batch, shuffle=True,
                                        num_workers=args.workers, persistent_workers=args.workers > 0)
    return loader, lambda b: (b[2][0].srcdata["feat"], b[2][-1].dstdata["label"])


def dgl_link(args):
    import dgl
    import torch
    g, _, indptr, indices = dgl_graph(args)
    src, dst = link_seeds(indptr, indices, args.link_edges)
    eids = g.edge_ids(torch.from_numpy(src), torch.from_numpy(dst))
    sampler = dgl.dataloading.as_edge_prediction_sampler(
        dgl.dataloading.NeighborSampler(FANOUTS[::-1], prefetch_node_feats=["feat"]),
        negative_sampler=dgl.dataloading.negative_sampler.Uniform(1))
    torch.manual_seed(0)
    loader = dgl.dataloading.DataLoader(g, eids, sampler, batch_size=args.batch, shuffle=True, num_workers=0)
    return loader, lambda b: (b[3][0].srcdata["feat"], b[1], b[2])


def graphbolt_node(args):
    import dgl.graphbolt as gb
    import numpy as np
    import torch
    indptr, indices, feat, labels, train = load_graph(args.dataset)
    graph = gb.fused_csc_sampling_graph(torch.from_numpy(indptr.astype(np.int64)),
                                        torch.from_numpy(indices.astype(np.int64)))
    features = gb.BasicFeatureStore({("node", None, "feat"): gb.TorchBasedFeature(torch.from_numpy(np.array(feat)))})
    seeds = torch.from_numpy(train.astype(np.int64))
    items = gb.ItemSet((seeds, torch.from_numpy(np.array(labels))[seeds]), names=("seed_nodes", "labels"))
    torch.manual_seed(0)
    pipe = gb.ItemSampler(items, batch_size=args.batch, shuffle=True)
    pipe = pipe.sample_neighbor(graph, FANOUTS[::-1])  # input layer first, as DGL's (the seeds' hop last)
    pipe = pipe.fetch_feature(features, node_feature_keys=["feat"])
    return gb.DataLoader(pipe, num_workers=args.workers, persistent_workers=args.workers > 0), \
        lambda mb: (mb.node_features["feat"], mb.labels)


WORKERS = {("node", "featstore-unix"): featstore_node, ("node", "featstore-grpc"): featstore_node,
           ("node", "pyg"): pyg_node, ("node", "dgl"): dgl_node, ("node", "graphbolt"): graphbolt_node,
           ("link", "featstore-unix"): featstore_link, ("link", "pyg"): pyg_link, ("link", "dgl"): dgl_link}


def contender(name):
    """A contender's name taken apart: (loader, worker processes, compute-only).
    "dgl:w1@compute" is DGL's loader with num_workers=1, compute only."""
    base, compute = name.split("@")[0], name.endswith("@compute")
    base, _, workers = base.partition(":w")
    return base, int(workers or 0), compute


def train_step(args):
    """The train task's step: peer_train.trainer on the node task's loader."""
    import numpy as np
    import peer_train
    base, args.workers, compute = contender(args.name)
    with open(os.path.join(args.dataset, "manifest.json")) as f:
        m = json.load(f)
    feat = np.load(os.path.join(args.dataset, m["features"]["feat"]["file"]), mmap_mode="r")
    classes = int(np.load(os.path.join(args.dataset, m["labels"]["file"]), mmap_mode="r").max()) + 1
    loader, _ = WORKERS[("node", base)](args)
    return peer_train.trainer(base, loader, feat.shape[1], classes, compute)


def worker(args):
    """Loads one contender, says READY, then answers each "run N" on stdin
    with the seconds N batches took (after --warmup untimed ones)."""
    import torch
    args.cores = int(args.cores)
    torch.set_num_threads(args.cores)
    if args.task == "train":
        step = train_step(args)
    else:
        step = loader_step(args)
    print("READY", flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            break
        for _ in range(args.warmup):
            step()
        t0 = time.perf_counter()
        for _ in range(int(words[1])):
            step()
        print(json.dumps({"seconds": time.perf_counter() - t0}), flush=True)


def loader_step(args):
    """The node and link tasks' step: the next batch's tensors, and the consumer's work."""
    args.workers = 0
    loader, touch = WORKERS[(args.task, args.name)](args)
    it = iter(loader)

    def step():
        nonlocal it
        try:
            batch = next(it)
        except StopIteration:  # the next epoch
            it = iter(loader)
            batch = next(it)
        tensors = touch(batch)
        if args.consumer == "sum":  # a light stand-in for a model, in torch (issue 53)
            tensors[0].sum()
            if args.task == "node":
                tensors[1][:args.batch].sum()
    return step


# ---- the driver ------------------------------------------------------------------------

def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dataset", default=os.path.join(ROOT, "data", "default"))
    p.add_argument("--featstore", default=os.path.join(ROOT, "build", "cli", "featstore"))
    p.add_argument("--lib", default=os.path.join(ROOT, "build", "client-lib", "libfeatstore.so"))
    p.add_argument("--peers-dir", default=os.environ.get("FS_PEERS_DIR",
                                                         os.path.expanduser("~/.cache/featstore-peers")))
    p.add_argument("--cores", default="1,2")
    p.add_argument("--tasks", default="node,link")
    p.add_argument("--only", default="", help="comma-separated contenders (default: all that are installed)")
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--batches", type=int, default=20, help="timed batches per worker per round")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--link-edges", type=int, default=200000, help="positive edges the link task draws")
    p.add_argument("--consumer", default="none,sum",
                   help="what each step does with a batch, each measured: none (it only takes the tensors) and sum "
                        "(x.sum(), and y[:batch_size].sum() in the node task, in torch)")
    p.add_argument("--peer-workers", default="0,1",
                   help="train task: the peers' loader worker processes to measure (num_workers), the best reported")
    p.add_argument("--fs-threads", default="0",
                   help="train task: featstore's connection threads to measure (0: the loader's default, the one "
                        "compared with the peers; others as featstore-unix:wN)")
    p.add_argument("--featstore-venv", choices=("pyg", "dgl"),
                   help="the peers' venv featstore runs in: pyg (Debian's torch) or dgl (PyPI's torch, DGL's and "
                        "GraphBolt's, with torch_geometric; bench/peers/setup.sh). Default: dgl for the train task "
                        "(the model computes on the same torch build as theirs), else pyg")
    # worker mode
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--task", help=argparse.SUPPRESS)
    p.add_argument("--name", help=argparse.SUPPRESS)
    p.add_argument("--uri", help=argparse.SUPPRESS)
    return p.parse_args()


def pin(pid, cores):
    """Every thread of process pid onto cores 0..cores-1."""
    subprocess.run(["taskset", "-a", "-cp", f"0-{cores - 1}", str(pid)], check=True, stdout=subprocess.DEVNULL)


class Worker:
    def __init__(self, args, task, name, cores, uri, consumer):
        python = os.path.join(args.peers_dir, venv_of(name, task), "bin", "python")
        env = dict(os.environ, OMP_NUM_THREADS=str(cores), MKL_NUM_THREADS=str(cores), FEATSTORE_LIB=args.lib,
                   PYTHONPATH=os.path.join(ROOT, "client-lib", "python"), DGLBACKEND="pytorch")
        cmd = ["taskset", "-c", f"0-{cores - 1}", python, os.path.abspath(__file__), "--worker", "--task", task,
               "--name", name, "--cores", str(cores), "--dataset", args.dataset, "--batch", str(args.batch),
               "--warmup", str(args.warmup), "--link-edges", str(args.link_edges), "--consumer", consumer]
        if uri:
            cmd += ["--uri", uri]
        self.name = name
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)
        line = self._line(600)
        if line.strip() != "READY":
            raise RuntimeError(f"{task}/{name}: worker said {line!r} (exit {self.proc.poll()})")

    def _line(self, timeout):
        if not select.select([self.proc.stdout], [], [], timeout)[0]:
            raise RuntimeError(f"{self.name}: no answer in {timeout} s")
        return self.proc.stdout.readline()

    def run(self, batches):
        self.proc.stdin.write(f"run {batches}\n")
        self.proc.stdin.flush()
        line = self._line(900)
        if not line:
            raise RuntimeError(f"{self.name}: worker died (exit {self.proc.wait()})")
        return batches / json.loads(line)["seconds"]

    def close(self):
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        except Exception:
            self.proc.kill()


def venv_of(name, task):
    base = contender(name)[0]
    if base.startswith("featstore"):
        return ARGS.featstore_venv or ("dgl" if task == "train" else "pyg")
    return "dgl" if base in ("dgl", "graphbolt") else "pyg"


def installed(args, name, task):
    return os.path.exists(os.path.join(args.peers_dir, venv_of(name, task), "bin", "python"))


def serve(args):
    """`featstore serve` on the dataset: (proc, unix URI, grpc URI, scratch dir)."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
    import fs_serve
    tmp = tempfile.mkdtemp(prefix="featstore-peers-")
    proc, ready = fs_serve.start(args.featstore, args.dataset, os.path.join(tmp, "fs.sock"))
    return proc, "unix://" + ready["unix"], "grpc://" + ready["grpc"], tmp


def measure(args, task, cores, names, uris, server, consumer):
    pin(server.pid, cores)
    workers = []
    try:
        for name in names:
            workers.append(Worker(args, task, name, cores, uris.get(contender(name)[0]), consumer))
        rates = {w.name: [] for w in workers}
        for r in range(args.rounds):
            turn = workers[r % len(workers):] + workers[:r % len(workers)]
            for w in turn:
                rates[w.name].append(w.run(args.batches))
        return rates
    finally:
        for w in workers:
            w.close()


def shmem_thp():
    """The host's shmem THP setting: whether featstore's served copy can be in
    2 MiB pages (docs/serving.md "Huge pages"); the peers' memory is not shmem."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/shmem_enabled") as f:
            text = f.read()
        return text[text.index("[") + 1:text.index("]")]
    except (OSError, ValueError):
        return "unknown"


def report(task, cores, rates, consumer):
    base = {"unix": "featstore-unix", "grpc": "featstore-grpc"}
    for transport, ours in base.items():
        if ours not in rates:
            continue
        for peer, peer_rates in rates.items():
            if peer.startswith("featstore"):
                continue
            ratio = statistics.median(a / b for a, b in zip(rates[ours], peer_rates))
            extra = " sampler=torch-sparse" if peer == "pyg" else ""
            print(f"RESULT bench=peer_loader task={task} transport={transport} peer={peer}{extra} cores={cores} "
                  f"consumer={consumer} "
                  f"batch={FANOUTS_S}x{ARGS.batch} batches_per_s={statistics.median(peer_rates):.1f} "
                  f"featstore_batches_per_s={statistics.median(rates[ours]):.1f} "
                  f"ratio_featstore_vs_peer={ratio:.2f} shmem_thp={shmem_thp()}", flush=True)
    for name, r in rates.items():
        print(f"# {task} cores={cores} consumer={consumer} {name}: " + " ".join(f"{x:.1f}" for x in r), flush=True)


def report_train(cores, rates):
    """featstore against each peer at its best worker count, and each
    loader's steps over its compute-only bound."""
    median = statistics.median
    ours = rates.get("featstore-unix")
    loaders = {}  # peer -> its best variant's name
    for name in rates:
        base, _, compute = contender(name)
        if not compute and not base.startswith("featstore"):
            best = loaders.get(base)
            if best is None or median(rates[name]) > median(rates[best]):
                loaders[base] = name
    for peer, name in loaders.items():
        if ours:
            ratio = median(a / b for a, b in zip(ours, rates[name]))
            print(f"RESULT bench=train peer={peer} cores={cores} batch={FANOUTS_S}x{ARGS.batch} "
                  f"steps_per_s={median(rates[name]):.2f} featstore_steps_per_s={median(ours):.2f} "
                  f"ratio_featstore_vs_peer={ratio:.2f} workers={contender(name)[1]}", flush=True)
    variants = [(f"featstore:w{contender(n)[1]}", n) for n in rates if n.startswith("featstore-unix:w")]
    for peer, name in [("featstore", "featstore-unix")] + variants + sorted(loaders.items()):
        bound = rates.get(contender(name)[0] + "@compute")
        if name in rates and bound:
            ratio = median(c / a for a, c in zip(rates[name], bound))
            print(f"RESULT bench=train peer={peer} cores={cores} ratio_step_vs_compute_only={ratio:.3f} "
                  f"steps_per_s={median(rates[name]):.2f} compute_only_steps_per_s={median(bound):.2f}", flush=True)
    for name, r in rates.items():
        print(f"# train cores={cores} {name}: " + " ".join(f"{x:.2f}" for x in r), flush=True)


def train_contenders(args, only):
    """The train task's contenders: featstore-unix, each peer at each
    --peer-workers, and every framework's compute-only bound."""
    names = []
    for (task, base) in WORKERS:
        if task != "node" or base == "featstore-grpc" or (only and base not in only):
            continue
        counts = args.fs_threads if base.startswith("featstore") else args.peer_workers
        names += [base if w == "0" else f"{base}:w{w}" for w in counts.split(",")]
        names.append(base + "@compute")
    return names


FANOUTS_S = ",".join(map(str, FANOUTS))
ARGS = None


def main():
    global ARGS
    args = ARGS = parse_args()
    if args.worker:
        return worker(args)
    if not shutil.which("taskset"):
        sys.exit("peer_loader: needs taskset (util-linux)")
    bad = [c for c in args.consumer.split(",") if c not in ("none", "sum")]
    if bad:
        sys.exit(f"peer_loader: --consumer {','.join(bad)}: expected none, sum or both (none,sum)")
    only = set(filter(None, args.only.split(",")))
    proc, unix, grpc, tmp = serve(args)
    try:
        for task in args.tasks.split(","):
            every = train_contenders(args, only) if task == "train" else \
                [n for (t, n) in WORKERS if t == task and (not only or n in only)]
            names = [n for n in every if installed(args, n, task)]
            missing = [n for n in every if not installed(args, n, task)]
            if missing:
                print(f"# {task}: not installed (run bench/peers/setup.sh): {', '.join(missing)}", flush=True)
            uris = {"featstore-unix": unix, "featstore-grpc": grpc}
            for cores in map(int, args.cores.split(",")):
                if task == "train":
                    report_train(cores, measure(args, task, cores, names, uris, proc, "none"))
                    continue
                for consumer in args.consumer.split(","):
                    report(task, cores, measure(args, task, cores, names, uris, proc, consumer), consumer)
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
