#!/usr/bin/python3
"""train_graphsage_ddp.py — examples/train_graphsage.py's GraphSAGE trained
with PyTorch DistributedDataParallel, each rank reading its share of every
epoch from a featstore stream.

``--world-size`` processes (2 by default, started with
torch.multiprocessing's spawn) form a gloo process group (CPU) and wrap the
same model in ``DistributedDataParallel``. Every epoch each rank opens
``client.node_stream("train", ..., seed=--seed, epoch=epoch, rank=rank,
world_size=world)``: the same shuffle seed and epoch on every rank, so the
ranks get equal, disjoint shares of one permutation of the training nodes
(torch's DistributedSampler's plan) and the same number of batches, and
DDP's gradient all-reduces line up step for step. The stream samples,
gathers the features and the seeds' labels ahead of the trainer on a
background thread. Each rank takes ``--batch-size / world`` seeds per
step, so a step averages the gradients of ``--batch-size`` seeds, as one
step of train_graphsage.py does.

Rank 0 evaluates as train_graphsage.py does (its model, helpers and
``evaluate`` are imported from it): validation accuracy after every epoch,
then the test accuracy of the weights of the best validation epoch, on
sampled neighbourhoods with fixed request seeds. The other ranks go on to
the next epoch and wait for rank 0 at its first all-reduce.

    /usr/bin/python3 examples/train_graphsage_ddp.py --uri unix:///tmp/fs.sock --epochs 10

Prints (rank 0) train_graphsage.py's lines: the dataset, one line per epoch
(loss averaged over the ranks, validation accuracy, each rank's
mini-batches/s) and a final ``test_acc=…`` line. Deterministic given
``--seed``, the same over unix:// and grpc://. Needs the featstore Python
package on PYTHONPATH (client-lib/python; added when run from the
repository) and libfeatstore.so 1.4 (``FEATSTORE_LIB``).
"""
import gc
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "client-lib", "python"))
import featstore  # noqa: E402  (found through the path set just above when run from the repository)
from train_graphsage import (Progress, arg_parser, check_dataset, evaluate, make_model, optimise,  # noqa: E402
                             parse_args, seed_logits)


def say(line):
    """Rank 0's output, at once (a spawned process's stdout may be a pipe)."""
    print(line, flush=True)


def train_epoch(client, model, opt, args, epoch, rank, world):
    """One epoch of this rank's share; (mean loss over every rank, this rank's mini-batches/s)."""
    model.train()
    total_loss, batches, t0 = 0.0, 0, time.perf_counter()
    with client.node_stream("train", batch_size=args.batch_size // world, num_neighbors=args.fanouts,
                            table=args.table, dtype="float32", seed=args.seed, epoch=epoch, rank=rank,
                            world_size=world) as stream:
        for b in stream:
            with b:  # released after backward(): autograd keeps the input features for the weight gradients
                y = torch.from_numpy(np.array(b.labels))
                total_loss += optimise(opt, seed_logits(model, b.batch, args.sparse_input), y)
            batches += 1
    rate = batches / (time.perf_counter() - t0)
    figures = torch.tensor([total_loss, batches], dtype=torch.float64)
    dist.all_reduce(figures)
    return float(figures[0] / max(figures[1], 1)), rate


def rank_main(rank, world, args, store):
    """One DDP rank: its process group, connection, model and epochs."""
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    torch.set_num_threads(args.torch_threads or max(1, (os.cpu_count() or 1) // world))
    torch.manual_seed(args.seed)  # DDP broadcasts rank 0's weights anyway
    try:
        with featstore.connect(args.uri, device=args.device) as client:
            info = check_dataset(client, args)
            model, opt = make_model(info, args)
            ddp = DistributedDataParallel(model)
            torch.manual_seed(args.seed * world + rank + 1)  # each rank its own dropout
            if rank == 0:
                splits = {s: client.split(s) for s in ("train", "valid", "test")}
                say(f"dataset={info.dataset} transport={client.transport} train={len(splits['train'])} "
                    f"valid={len(splits['valid'])} test={len(splits['test'])} fanouts={args.fanouts} "
                    f"batch={args.batch_size} world_size={world}")
                progress = Progress(say)
            for epoch in range(1, args.epochs + 1):
                loss, rate = train_epoch(client, ddp, opt, args, epoch, rank, world)
                if rank == 0:
                    progress.epoch(epoch, model, loss, evaluate(client, model, splits["valid"], args, salt=-1), rate)
            if rank == 0:
                progress.test(client, model, splits["test"], args)
            # torch 1.13's gloo group can deadlock at exit when DDP's reducer is
            # destroyed with work objects still queued on the group's thread (that
            # thread waits for the GIL the destructor holds): let every rank
            # finish its collectives, then drop DDP before the group goes
            dist.barrier()
            del ddp
            gc.collect()
    finally:
        dist.destroy_process_group()


def main():
    p = arg_parser("GraphSAGE trained by DDP ranks, each reading its share of every epoch from a featstore stream.")
    p.add_argument("--world-size", type=int, default=2, help="DDP ranks (processes)")
    args = parse_args(parser=p)
    if args.world_size < 1 or args.batch_size % args.world_size:
        p.error(f"--batch-size {args.batch_size} must split evenly over --world-size {args.world_size}")
    with featstore.connect(args.uri, device=args.device) as client:
        check_dataset(client, args)  # refused here, before any rank starts
    spawn(rank_main, args)


def spawn(rank_main, args):
    """args.world_size processes running rank_main(rank, world, args, store),
    store a file for the gloo group's rendezvous, removed after."""
    tmp = tempfile.mkdtemp(prefix="featstore-ranks-")
    try:
        mp.spawn(rank_main, args=(args.world_size, args, os.path.join(tmp, "store")), nprocs=args.world_size)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    except featstore.Error as e:
        sys.exit(f"train_graphsage_ddp: {e}")
