#!/usr/bin/python3
"""train_graphsage.py — GraphSAGE (mean aggregator) trained through featstore.

Every mini-batch comes from a running `featstore serve`: the train/valid/test
node ids from ``client.split``, each batch's sampled neighbourhood and input
features from one ``sample_gather`` call, and its labels from
``gather(seeds, "labels")``. The model is plain PyTorch (no PyG/DGL): the
sampled blocks are the message-passing graph, as DGL's blocks would be.

Hop order: block 0 is the hop from the seeds, the last block reaches
farthest. The features cover every sampled node, so the layer nearest the
input runs on the *last* block and the output layer on block 0, whose dst
nodes are the seeds.

Evaluation samples too (``--eval-fanouts``), through featstore, with a fixed
request seed per batch, so it is reproducible.

    /usr/bin/python3 examples/train_graphsage.py --uri unix:///tmp/fs.sock --epochs 20

Prints one line per epoch (loss, validation accuracy, mini-batches/s) and a
final ``test_acc=…`` line: the test accuracy of the epoch with the best
validation accuracy. Needs the featstore Python package on PYTHONPATH
(client-lib/python; this script adds it when run from the repository) and
libfeatstore.so (``FEATSTORE_LIB``).
"""
import argparse
import copy
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "client-lib", "python"))
import featstore  # noqa: E402  (found through the path set just above when run from the repository)


# ---- the model ------------------------------------------------------------------

def block_mean(h_src, block):
    """Mean of each dst node's sampled in-neighbours' rows of h_src (zeros
    for a node with none): a scatter-add over the block's edges divided by
    the in-degree from its CSC offsets."""
    dst, src = block.edge_dst, block.edge_src
    out = h_src.new_zeros(block.num_dst, h_src.shape[1])
    out.index_add_(0, dst, h_src.index_select(0, src))
    deg = (block.dst_offsets[1:] - block.dst_offsets[:-1]).clamp_(min=1)
    return out / deg.unsqueeze(1).to(h_src.dtype)


class SAGEConv(nn.Module):
    """h_dst' = W_self h_dst + W_neigh mean(h_src over sampled neighbours).
    dst nodes are a prefix of src nodes, so h_dst = h_src[:num_dst].

    A sparse h_src (bag-of-words input) is projected first and averaged
    after: the mean commutes with the linear map, and a sparse product costs
    nnz x out_dim instead of rows x in_dim x out_dim."""

    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.lin_self = nn.Linear(in_dim, out_dim)
        self.lin_neigh = nn.Linear(in_dim, out_dim, bias=False)

    def forward(self, h_src, block):
        if h_src.is_sparse:
            h_self = torch.sparse.mm(h_src, self.lin_self.weight.t())[:block.num_dst] + self.lin_self.bias
            return h_self + block_mean(torch.sparse.mm(h_src, self.lin_neigh.weight.t()), block)
        return self.lin_self(h_src[:block.num_dst]) + self.lin_neigh(block_mean(h_src, block))


class GraphSAGE(nn.Module):
    def __init__(self, in_dim, hidden, num_classes, num_layers=2, dropout=0.5):
        super().__init__()
        dims = [in_dim] + [hidden] * (num_layers - 1) + [num_classes]
        self.layers = nn.ModuleList(SAGEConv(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, blocks):
        """x: features of every sampled node (dense or sparse COO); blocks:
        featstore's, hop 0 first. Returns one row of logits per dst node of
        block 0 (the unique seeds). Dropout acts between layers, as in the
        GraphSAGE paper's and DGL's models."""
        h = x
        for i, (layer, block) in enumerate(zip(self.layers, reversed(blocks))):
            h = layer(h, block)
            if i < len(self.layers) - 1:
                h = self.dropout(F.relu(h))
        return h


# ---- mini-batches from featstore --------------------------------------------------

def minibatch(client, seeds, fanouts, table, request_seed):
    """One sampled mini-batch: (feature batch, label batch). Both are featstore
    Batches whose tensors view their memory, so the caller releases them only
    after backward() (autograd keeps the input features for the weight
    gradients)."""
    feats = client.sample_gather(seeds, fanouts, table, seed=request_seed, dtype="float32")
    labels = client.gather(seeds, "labels")
    return feats, labels


def model_input(x, sparse):
    """The features as the model takes them: the zero-copy tensor itself, or
    (sparse "on", or "auto" and under 10% non-zeros, as bag-of-words rows are)
    a sparse COO copy, much cheaper to multiply on a CPU."""
    if sparse == "on" or (sparse == "auto" and int(torch.count_nonzero(x)) < 0.1 * x.numel()):
        return x.to_sparse()
    return x


def seed_logits(model, feats, sparse="auto"):
    """The model's logits for a sampled batch's input seeds, one row each."""
    t = feats.torch()
    return model(model_input(t.features, sparse), t.blocks)[t.seed_local]


def forward_batch(model, feats, labels, sparse="auto"):
    """Logits and labels, one row per input seed."""
    return seed_logits(model, feats, sparse), labels.torch().features.view(-1)


def optimise(opt, logits, y):
    """One optimiser step on the cross-entropy of logits against y; the loss."""
    loss = F.cross_entropy(logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


def request_seed(run_seed, epoch, step):
    """A distinct, reproducible sampling seed per (run, epoch, step)."""
    return (run_seed * 1_000_003 + epoch * 10_007 + step) & (2**64 - 1)


def train_epoch(client, model, opt, train_ids, args, epoch, rng):
    model.train()
    perm = train_ids[rng.permutation(len(train_ids))]
    total_loss, batches, t0 = 0.0, 0, time.perf_counter()
    for step, start in enumerate(range(0, len(perm), args.batch_size)):
        seeds = perm[start:start + args.batch_size]
        feats, labels = minibatch(client, seeds, args.fanouts, args.table, request_seed(args.seed, epoch, step))
        with feats, labels:
            total_loss += optimise(opt, *forward_batch(model, feats, labels, args.sparse_input))
        batches += 1
    return total_loss / max(batches, 1), batches / (time.perf_counter() - t0)


@torch.no_grad()
def evaluate(client, model, ids, args, salt):
    """Accuracy over `ids`, each batch sampled through featstore with a fixed seed."""
    model.eval()
    correct = 0
    for step, start in enumerate(range(0, len(ids), args.eval_batch_size)):
        seeds = ids[start:start + args.eval_batch_size]
        feats, labels = minibatch(client, seeds, args.eval_fanouts, args.table, request_seed(args.seed, salt, step))
        with feats, labels:
            logits, y = forward_batch(model, feats, labels, args.sparse_input)
            correct += int((logits.argmax(1) == y).sum())
    return correct / max(len(ids), 1)


# ---- the run --------------------------------------------------------------------------

def check_dataset(client, args):
    """The server's Info, after checking it has the feature table and labels."""
    info = client.info()
    if args.table not in info.tables:
        raise SystemExit(f"no table {args.table!r} (the server has {', '.join(info.tables)})")
    if "labels" not in info.tables:
        raise SystemExit("the dataset has no labels")
    return info


def make_model(info, args):
    """The GraphSAGE for the served dataset and its Adam optimiser."""
    model = GraphSAGE(info.tables[args.table].dim, args.hidden, info.num_classes, len(args.fanouts), args.dropout)
    return model, torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)


class Progress:
    """The epochs' figures and the weights of the best validation epoch."""

    def __init__(self, log):
        self.log = log
        self.rates, self.loss = [], float("nan")
        self.valid_acc, self.best_epoch, self.weights = -1.0, 0, None

    def epoch(self, epoch, model, loss, valid_acc, rate):
        self.rates.append(rate)
        self.loss = loss
        self.log(f"epoch {epoch:3d}  loss {loss:.4f}  valid_acc {valid_acc:.4f}  {rate:.1f} mini-batches/s")
        if valid_acc > self.valid_acc:
            self.valid_acc, self.best_epoch, self.weights = valid_acc, epoch, copy.deepcopy(model.state_dict())

    def test(self, client, model, test_ids, args):
        """Tests the weights of the epoch that did best on validation, as is
        standard, and logs the final line. Returns {"test_acc", "valid_acc",
        "best_epoch", "loss", "batches_per_s"}."""
        if self.weights is not None:
            model.load_state_dict(self.weights)
        test_acc = evaluate(client, model, test_ids, args, salt=-2)
        result = {"test_acc": test_acc, "valid_acc": self.valid_acc, "best_epoch": self.best_epoch,
                  "loss": self.loss, "batches_per_s": float(np.mean(self.rates)) if self.rates else 0.0}
        self.log(f"test_acc={test_acc:.4f} valid_acc={self.valid_acc:.4f} best_epoch={self.best_epoch} "
                 f"batches_per_s={result['batches_per_s']:.1f}")
        return result


def run(args, log=print):
    """Trains, then tests the weights of the best validation epoch. Returns
    {"test_acc", "valid_acc", "best_epoch", "loss", "batches_per_s"}."""
    torch.manual_seed(args.seed)
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    rng = np.random.default_rng(args.seed)
    with featstore.connect(args.uri, device=args.device) as client:
        info = check_dataset(client, args)
        train_ids, valid_ids, test_ids = (client.split(s) for s in ("train", "valid", "test"))
        model, opt = make_model(info, args)
        log(f"dataset={info.dataset} transport={client.transport} train={len(train_ids)} valid={len(valid_ids)} "
            f"test={len(test_ids)} fanouts={args.fanouts} batch={args.batch_size}")
        progress = Progress(log)
        for epoch in range(1, args.epochs + 1):
            loss, rate = train_epoch(client, model, opt, train_ids, args, epoch, rng)
            progress.epoch(epoch, model, loss, evaluate(client, model, valid_ids, args, salt=-1), rate)
        return progress.test(client, model, test_ids, args)


def fanout_list(text):
    return [int(f) for f in text.split(",")]


def arg_parser(description="GraphSAGE trained on mini-batches served by featstore."):
    """The options (examples/train_graphsage_ddp.py adds its own to them)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--uri", required=True, help="unix:///path/to/socket or grpc://host:port")
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--seed", type=int, default=0, help="torch, shuffling and sampling seed")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--eval-batch-size", type=int, default=512)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--table", default="feat", help="the feature table")
    p.add_argument("--fanouts", type=fanout_list, default=[25, 10], help="per hop, from the seeds out")
    p.add_argument("--eval-fanouts", type=fanout_list, default=[25, 10])
    p.add_argument("--device", default=None, help="featstore device for unix:// (cpu, gpu:N)")
    p.add_argument("--sparse-input", choices=["auto", "on", "off"], default="auto",
                   help="multiply the input features as a sparse matrix (auto: when under 10%% non-zeros)")
    p.add_argument("--torch-threads", type=int, default=0, help="0 = torch's default")
    return p


def parse_args(argv=None, parser=None):
    p = parser or arg_parser()
    args = p.parse_args(argv)
    if len(args.eval_fanouts) != len(args.fanouts):
        p.error("--eval-fanouts needs as many hops as --fanouts")
    return args


if __name__ == "__main__":
    try:
        run(parse_args())
    except featstore.Error as e:
        sys.exit(f"train_graphsage: {e}")
