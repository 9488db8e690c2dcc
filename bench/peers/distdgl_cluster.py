#!/usr/bin/env python3
"""distdgl_cluster.py — DistDGL 2.1 as the peer of bench_cluster (issue 48):
GraphSAGE node-classification *loading* (no model) over N "machines", each a
network namespace of bench/cluster_net.sh with its link capped by tbf.

Each machine i (namespace fsbench<i>, 10.77.0.(i+1)) runs one DistDGL server
(KVServer + graph partition i) and T trainers, started by hand with the
environment DGL's tools/launch.py would give them (no ssh). A trainer does
DistNodeDataLoader + NeighborSampler over its node_split() share of the train
split, [15, 10, 5] (seeds sample 15; DGL lists fanouts input layer first),
batch 1024, and fetches g.ndata['feat'][input_nodes] and
g.ndata['label'][seeds] every batch. After --warmup batches all trainers
stop at a gate; the driver reads WIRE_BYTES (tx bytes of every machine's
veth), opens the gate, and each trainer times --batches batches (or what
--phase-timeout seconds allow); the driver reads WIRE_BYTES again once all
have reported, before any of them exits.

Every machine also gets a /dev/shm of its own (a bind mount of a directory
of the host's /dev/shm, in the process's private mount namespace): DistDGL
names its shared-memory segments by graph name only (shared_mem_utils.py
_get_ndata_path, DistGraphServer's _copy_graph_to_shared_mem), so servers of
two machines on one host would otherwise open each other's segments.

    ~/.cache/featstore-peers/dgl/bin/python bench/peers/distdgl_cluster.py \\
        --dataset /tmp/dd/r18 --machines 4 --rate 1gbit --trainers-per-machine 1 --workdir /tmp/dd/work

RESULT bench=cluster peer=distdgl machines=N trainers=N*T batches_per_s=<sum over trainers>
       wire_bytes_per_batch=... wire_bytes_per_epoch=... rate=...
(wire_bytes_per_epoch = wire_bytes_per_batch x ceil(train nodes / 1024).)
Needs root (namespaces) and the DGL venv of bench/peers/setup.sh.
"""
import argparse
import hashlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from cluster_harness import (Proc, cpus_up, log, net, on_machine, parse_kv, teardown, wait_for,  # noqa: E402
                             wire_bytes)
FANOUTS = [15, 10, 5]          # featstore's order: the seeds' hop first
GRAPH = "fsbench"
DGL_PORT = 30050
TORCH_PORT = 29517


# ---- partitioning (driver, cached) ---------------------------------------------------

def dataset_key(path):
    with open(os.path.join(path, "manifest.json")) as f:
        m = json.load(f)
    h = hashlib.sha1(json.dumps(m.get("files", m), sort_keys=True).encode()).hexdigest()[:12]
    return "%s-%s" % (m.get("name", "ds"), h), m


def partition(args):
    key, m = dataset_key(args.dataset)
    out = os.path.join(args.workdir, "parts", "%s-n%d-%s" % (key, args.machines, args.part_method))
    conf = os.path.join(out, GRAPH + ".json")
    if os.path.exists(conf):
        log("partition cached:", out)
        return conf, m
    import dgl
    import numpy as np
    import torch
    t0 = time.time()
    load = lambda name: np.load(os.path.join(args.dataset, name), mmap_mode="r")  # noqa: E731
    indptr = torch.from_numpy(np.asarray(load(m["topology"]["indptr"]), dtype=np.int64))
    indices = torch.from_numpy(np.asarray(load(m["topology"]["indices"]), dtype=np.int64))
    n = len(indptr) - 1
    # CSC: node v's in-neighbours (the nodes it samples from) are row v of the featstore CSR
    g = dgl.graph(("csc", (indptr, indices, torch.arange(len(indices)))), num_nodes=n)
    g.ndata["feat"] = torch.from_numpy(np.array(load(m["features"]["feat"]["file"])))
    g.ndata["label"] = torch.from_numpy(np.array(load(m["labels"]["file"]), dtype=np.int64))
    mask = torch.zeros(n, dtype=torch.bool)
    mask[torch.from_numpy(np.asarray(load(m["splits"]["train"]), dtype=np.int64))] = True
    g.ndata["train_mask"] = mask
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    dgl.distributed.partition_graph(g, GRAPH, args.machines, tmp, num_hops=1, part_method=args.part_method,
                                    balance_ntypes=mask, balance_edges=True)
    os.rename(tmp, out)
    log("partitioned %d nodes, %d edges into %d (%s) in %.1f s: %s"
        % (n, len(indices), args.machines, args.part_method, time.time() - t0, out))
    return conf, m


# ---- the processes on the machines ---------------------------------------------------

def server(args):
    import dgl
    dgl.distributed.initialize(args.ip_config)   # serves until the trainers shut it down; exits


def trainer(args):
    import dgl
    import torch
    torch.set_num_threads(1)
    dgl.distributed.initialize(args.ip_config)
    torch.distributed.init_process_group("gloo", init_method="tcp://10.77.0.1:%d" % TORCH_PORT,
                                         world_size=args.world, rank=args.rank)
    g = dgl.distributed.DistGraph(GRAPH, part_config=args.part_config)
    train = dgl.distributed.node_split(g.ndata["train_mask"], g.get_partition_book(), force_even=True)
    sampler = dgl.dataloading.NeighborSampler(FANOUTS[::-1])
    torch.manual_seed(args.rank)
    loader = dgl.dataloading.DistNodeDataLoader(g, train, sampler, batch_size=args.batch, shuffle=True,
                                                drop_last=False)
    state = {"it": iter(loader), "nodes": 0}

    def step():
        try:
            input_nodes, seeds, blocks = next(state["it"])
        except StopIteration:
            state["it"] = iter(loader)
            input_nodes, seeds, blocks = next(state["it"])
        x = g.ndata["feat"][input_nodes]
        y = g.ndata["label"][seeds]
        assert x.shape == (len(input_nodes), g.ndata["feat"].shape[1]) and len(y) == len(seeds)
        state["nodes"] += len(input_nodes)

    def phase(count, limit):
        t0 = time.time()
        done = 0
        while done < count and time.time() - t0 < limit:
            step()
            done += 1
        return done, time.time() - t0

    # one check of the direction and the fanout: each seed of a batch samples
    # min(15, its in-degree) in-edges, its in-degree being its featstore row length
    _, seeds, blocks = next(iter(loader))
    got = torch.bincount(blocks[-1].edges()[1], minlength=len(seeds))
    want = torch.clamp(g.in_degrees(seeds), max=FANOUTS[0])
    assert torch.equal(got, want), "seeds' sampled in-edges differ from min(fanout, in-degree)"
    print("FSB READY rank=%d train=%d" % (args.rank, len(train)), flush=True)
    phase(args.warmup, args.phase_timeout)
    print("FSB WARM", flush=True)
    if sys.stdin.readline().strip() != "GO":
        sys.exit("trainer: no GO from the driver")
    state["nodes"] = 0
    n, dt = phase(args.batches, args.phase_timeout)
    print("FSB DONE batches=%d seconds=%.4f input_nodes=%d" % (n, dt, state["nodes"]), flush=True)
    sys.stdin.readline()                          # EXIT: leave only after the driver read the counters
    torch.distributed.destroy_process_group()


# ---- driver ----------------------------------------------------------------------------

def driver(args):
    # SIGTERM (timeout(1), a harness) unwinds like Ctrl-C, so the finally below cleans up
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    os.makedirs(args.workdir, exist_ok=True)
    args.workdir = os.path.abspath(args.workdir)
    conf, manifest = partition(args)
    n, t = args.machines, args.trainers_per_machine
    run = os.path.join(args.workdir, "run-n%d" % n)
    os.makedirs(run, exist_ok=True)
    ip_config = os.path.join(run, "ip_config.txt")
    with open(ip_config, "w") as f:
        f.writelines("10.77.0.%d %d\n" % (i + 1, DGL_PORT) for i in range(n))
    shms = ["/dev/shm/fsbench-distdgl-m%d" % i for i in range(n)]
    procs, servers, trainers = [], [], []
    me = [sys.executable, os.path.abspath(__file__), "--ip-config", ip_config, "--part-config", conf]
    common = {"DGL_DIST_MODE": "distributed", "DGL_IP_CONFIG": ip_config, "DGL_CONF_PATH": conf,
              "DGL_NUM_SERVER": "1", "DGL_NUM_CLIENT": str(n * t), "DGL_NUM_SAMPLER": "0",
              "DGL_GRAPH_FORMAT": "csc", "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    try:
        for s in shms:
            shutil.rmtree(s, ignore_errors=True)
            os.makedirs(s)
        log(net("up", str(n), args.rate).strip())
        cpus_up(n, args.cores_per_machine)
        for i in range(n):
            env = dict(common, DGL_ROLE="server", DGL_SERVER_ID=str(i))
            lf = open(os.path.join(run, "server%d.log" % i), "w")
            pr = Proc("server%d" % i, on_machine(i, shms[i], env, me + ["--role", "server"]), lf)
            servers.append(pr)
            procs.append(pr)
        for i in range(n):
            for k in range(t):
                rank = i * t + k
                env = dict(common, DGL_ROLE="client", DGL_GROUP_ID="0", GLOO_SOCKET_IFNAME="fsb%d" % i,
                           MASTER_ADDR="10.77.0.1", MASTER_PORT=str(TORCH_PORT), RANK=str(rank),
                           WORLD_SIZE=str(n * t))
                lf = open(os.path.join(run, "trainer%d.log" % rank), "w")
                argv = me + ["--role", "trainer", "--rank", str(rank), "--world", str(n * t),
                             "--batch", str(args.batch), "--warmup", str(args.warmup),
                             "--batches", str(args.batches), "--phase-timeout", str(args.phase_timeout)]
                pr = Proc("trainer%d" % rank, on_machine(i, shms[i], env, argv), lf)
                trainers.append(pr)
                procs.append(pr)
        t0 = time.time()
        ready = wait_for(trainers, "READY", args.start_timeout, watch=servers)
        log("all %d trainers ready in %.1f s (%s)" % (len(trainers), time.time() - t0,
                                                      ", ".join(r.split()[2] for r in ready)))
        wait_for(trainers, "WARM", args.phase_timeout + 60, watch=servers)
        before = wire_bytes()
        for p in trainers:
            p.send("GO")
        done = [parse_kv(l) for l in wait_for(trainers, "DONE", args.phase_timeout + 60, watch=servers)]
        after = wire_bytes()
        for p in trainers:
            p.send("EXIT")
        batches = sum(int(d["batches"]) for d in done)
        per_trainer = [int(d["batches"]) / float(d["seconds"]) for d in done]
        agg = sum(per_trainer)
        per_batch = (after - before) / batches
        import numpy as np
        train_nodes = len(np.load(os.path.join(args.dataset, manifest["splits"]["train"]), mmap_mode="r"))
        per_epoch = per_batch * math.ceil(train_nodes / args.batch)
        for p, d, r in zip(trainers, done, per_trainer):
            log("%s: %s batches in %s s = %.2f batches/s, %s input nodes"
                % (p.name, d["batches"], d["seconds"], r, d["input_nodes"]))
        # let them leave cleanly: DGL's exit barrier, then rank 0 shuts the servers down
        end = time.time() + args.exit_timeout
        for p in procs:
            try:
                p.p.wait(max(0.1, end - time.time()))
            except subprocess.TimeoutExpired:
                log("%s did not exit within %d s; killed" % (p.name, args.exit_timeout))
            p.pump()
        print("RESULT bench=cluster peer=distdgl machines=%d trainers=%d batches_per_s=%.2f "
              "wire_bytes_per_batch=%d wire_bytes_per_epoch=%d rate=%s part_method=%s batches=%d"
              % (n, n * t, agg, per_batch, per_epoch, args.rate, args.part_method, batches), flush=True)
    finally:
        teardown(procs)
        for s in shms:
            shutil.rmtree(s, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--role", choices=["driver", "server", "trainer"], default="driver")
    ap.add_argument("--dataset", help="featstore dataset directory")
    ap.add_argument("--machines", type=int, default=2)
    ap.add_argument("--rate", default="1gbit")
    ap.add_argument("--trainers-per-machine", type=int, default=1)
    ap.add_argument("--workdir", default="/tmp/fsbench-distdgl")
    ap.add_argument("--part-method", default="metis", choices=["metis", "random"])
    ap.add_argument("--cores-per-machine", type=float, default=0, help="each machine's cpu cap (0: none)")
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--phase-timeout", type=int, default=120, help="seconds a warm or a measured phase may run")
    ap.add_argument("--start-timeout", type=int, default=300, help="seconds for servers and trainers to start")
    ap.add_argument("--exit-timeout", type=int, default=60)
    ap.add_argument("--ip-config")
    ap.add_argument("--part-config")
    ap.add_argument("--rank", type=int)
    ap.add_argument("--world", type=int)
    args = ap.parse_args()
    if args.role == "server":
        server(args)
    elif args.role == "trainer":
        trainer(args)
    else:
        if not args.dataset:
            ap.error("--dataset is required")
        driver(args)


if __name__ == "__main__":
    main()
