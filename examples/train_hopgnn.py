#!/usr/bin/python3
"""train_hopgnn.py — HopGNN's owner-routed training (docs/papers.md) on a
sharded featstore: examples/train_graphsage.py's GraphSAGE, each global
batch split by the shard that owns its roots, every rank computing the
micrographs of its owners, the gradients all-reduced (torch.distributed,
gloo).

``--world-size`` processes (2 by default, torch.multiprocessing's spawn)
connect to ``--uri etcd://HOST:PORT/CLUSTER`` (or ``file:`` a static
cluster). Every rank walks the same shuffle of the train split (``--seed``)
in global batches of ``--batch-size`` roots. Per step:

  --mode hopgnn (the default): ``split_by_owner`` groups the global batch's
      roots by owning shard; rank r takes the groups of the shards at
      positions r, r + world, ... of the map (with a trainer per machine and
      as many ranks as shards, its own machine's: the model goes to the
      data, as HopGNN's migration does). Each group is one time step: its
      roots are sampled, their micrographs' rows pre-gathered (each row
      once, one request per owner: ``pregather``), and the group's loss
      backpropagated; the gradients accumulate over the time steps.
  --mode ddp: the model-centric baseline, the usual DDP loop: rank r takes
      roots r, r + world, ... and ``sample_gather``'s them, its rows
      wherever they are.

Every group is sampled with the step's seed, the one train_graphsage.py uses
for the same global batch: featstore draws a node's neighbours from (seed,
hop, node), so a group's sample is its roots' part of the global batch's
(but for a node that the global batch reaches at an earlier hop through
another group's root). Either way a step's loss is the global batch's summed cross-entropy divided
by its size, and the ranks' gradients are summed (all-reduce) before the
optimiser steps: the same update as one process training on the whole
global batch (train_graphsage.py with the same --batch-size). Rank 0
evaluates as train_graphsage.py does and prints its lines: one per epoch
(mean loss, validation accuracy, rank 0's steps/s, and in hopgnn mode
R_micro, the rows read per root and the share pre-gathering saved) and the
final ``test_acc=…`` line.

    /usr/bin/python3 examples/train_hopgnn.py --uri etcd://127.0.0.1:2379/cora --world-size 4

Needs the featstore Python package on PYTHONPATH (client-lib/python; added
when run from the repository), libfeatstore.so 1.5 (``FEATSTORE_LIB``) and
torch with gloo.
"""
import gc
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "client-lib", "python"))
import featstore  # noqa: E402  (found through the path set just above when run from the repository)
from train_graphsage import (Progress, arg_parser, check_dataset, evaluate, make_model, model_input,  # noqa: E402
                             parse_args, request_seed)
from train_graphsage_ddp import spawn  # noqa: E402


def my_groups(client, roots, rank, world, mode):
    """This rank's time steps of a global batch: a list of root positions."""
    if mode == "ddp":
        return [np.arange(rank, len(roots), world)]
    groups = client.split_by_owner(roots)
    return [groups.positions[k] for k in range(rank, len(groups.owner), world)]


def group_loss(client, model, roots, args, seed, scale, figures):
    """One time step: the summed cross-entropy of `roots`, backpropagated
    times `scale` (1 / the global batch's size: the group's share of its
    mean), and its batch's figures added to `figures` (pairs, pairs on the
    root's shard, rows, rows requested)."""
    labels = client.gather(roots, "labels")
    y = torch.from_numpy(np.array(labels.features).reshape(-1))
    labels.release()
    if args.mode == "ddp":
        with client.sample_gather(roots, args.fanouts, args.table, seed=seed, dtype="float32") as b:
            t = b.torch()
            loss = F.cross_entropy(model(model_input(t.features, args.sparse_input), t.blocks)[t.seed_local], y,
                                   reduction="sum")
            figures += torch.tensor([0, 0, b.rows, b.rows], dtype=torch.float64)
            (loss * scale).backward()  # before the batch goes: autograd keeps its rows
            return float(loss)
    with client.sample(roots, args.fanouts, seed=seed) as b:
        m = client.micrographs(b)
        rows, st = client.pregather(b, m, np.arange(len(roots)), args.table, dtype="float32")
        with rows:  # every root's micrographs: the batch's nodes, in its local-id order
            t = b.torch()
            x = torch.from_numpy(rows.features)
            loss = F.cross_entropy(model(model_input(x, args.sparse_input), t.blocks)[t.seed_local], y,
                                   reduction="sum")
            figures += torch.tensor([m.pairs, m.pairs_colocated, st.rows, st.rows_requested], dtype=torch.float64)
            (loss * scale).backward()
            return float(loss)


def all_reduce_grads(model):
    """Sums every rank's gradients (zeros for a rank that had no roots)."""
    params = list(model.parameters())
    flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in params])
    dist.all_reduce(flat)
    at = 0
    for p in params:
        p.grad = flat[at:at + p.numel()].view_as(p).clone()
        at += p.numel()


def train_epoch(client, model, opt, train_ids, args, epoch, rng, rank, world):
    """One epoch; (mean loss over the global batches, rank 0's steps/s, the figures summed over ranks)."""
    model.train()
    perm = train_ids[rng.permutation(len(train_ids))]
    total, steps, t0 = 0.0, 0, time.perf_counter()
    figures = torch.zeros(5, dtype=torch.float64)
    for step, start in enumerate(range(0, len(perm), args.batch_size)):
        roots = perm[start:start + args.batch_size]
        opt.zero_grad()
        loss, seed = 0.0, request_seed(args.seed, epoch, step)
        for pos in my_groups(client, roots, rank, world, args.mode):
            if len(pos):
                loss += group_loss(client, model, roots[pos], args, seed, 1.0 / len(roots), figures[:4])
        all_reduce_grads(model)
        opt.step()
        figures[4] += loss / len(roots)
        steps += 1
    rate = steps / (time.perf_counter() - t0)
    dist.all_reduce(figures)
    return float(figures[4]) / max(steps, 1), rate, figures


def say(line):
    print(line, flush=True)


def rank_main(rank, world, args, store):
    """One rank: its process group, connection, model and epochs."""
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    torch.set_num_threads(args.torch_threads or max(1, (os.cpu_count() or 1) // world))
    torch.manual_seed(args.seed)  # the same initial weights on every rank
    try:
        with featstore.connect(args.uri) as client:
            info = check_dataset(client, args)
            model, opt = make_model(info, args)
            torch.manual_seed(args.seed * world + rank + 1)  # each rank its own dropout
            rng = np.random.default_rng(args.seed)  # the same global batches on every rank
            train = client.split("train")
            if rank == 0:
                valid, test = client.split("valid"), client.split("test")
                say(f"dataset={info.dataset} transport={client.transport} mode={args.mode} train={len(train)} "
                    f"valid={len(valid)} test={len(test)} fanouts={args.fanouts} batch={args.batch_size} "
                    f"world_size={world}")
                progress = Progress(say)
            for epoch in range(1, args.epochs + 1):
                loss, rate, f = train_epoch(client, model, opt, train, args, epoch, rng, rank, world)
                if rank == 0:
                    if args.mode == "hopgnn":
                        say(f"epoch {epoch:3d}  r_micro {float(f[1] / max(f[0], 1)):.3f}  rows/root "
                            f"{float(f[2]) / len(train):.1f}  pregather saved {float(1 - f[2] / max(f[3], 1)):.3f}")
                    progress.epoch(epoch, model, loss, evaluate(client, model, valid, args, salt=-1), rate)
            if rank == 0:
                progress.test(client, model, test, args)
            dist.barrier()
            gc.collect()
    finally:
        dist.destroy_process_group()


def main():
    p = arg_parser("GraphSAGE trained HopGNN's way: owner-routed micrographs over a sharded featstore.")
    p.add_argument("--world-size", type=int, default=2, help="ranks (processes), ideally one per shard")
    p.add_argument("--mode", choices=["hopgnn", "ddp"], default="hopgnn",
                   help="hopgnn: owner-routed micrographs, pre-gathered; ddp: the model-centric baseline")
    args = parse_args(parser=p)
    if args.world_size < 1:
        p.error("--world-size must be at least 1")
    with featstore.connect(args.uri) as client:
        check_dataset(client, args)  # refused here, before any rank starts
        if args.mode == "hopgnn":
            client.split_by_owner([])  # a cluster's: refused here for one server, naming why
    spawn(rank_main, args)


if __name__ == "__main__":
    try:
        main()
    except featstore.Error as e:
        sys.exit(f"train_hopgnn: {e}")
