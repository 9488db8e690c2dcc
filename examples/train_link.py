#!/usr/bin/python3
"""train_link.py — GraphSAGE link prediction trained through featstore's
link-prediction batches, on Cora's citations.

The dataset is ``/usr/bin/python3 examples/cora.py link OUT`` served by ``featstore
serve OUT``: papers with their bag-of-words table ``feat``, the training
citations stored both ways as (paper, cites, paper), and link splits
``train``, ``valid`` and ``test`` (valid and test with one given negative
destination per positive, GAE's evaluation). Their arrays come from
``client.split("link/train/src")`` and so on.

Training: each mini-batch is one ``link_sample`` call: a batch of training
edges as positives, as many random pairs as binary negatives (label 0),
the endpoints' sampled neighbourhoods as DGL blocks (``frontier="all"``)
with their features gathered in the same call, and the batch's own edges
(both directions) left out of the sampled subgraph, so the model never sees
the edge it must predict. The encoder is GraphSAGE with the GCN aggregator
(a node's embedding is a linear map of the mean of its own and its sampled
neighbours' features), one layer per hop as in examples/train_graphsage.py
(input layer on the last hop, output layer on hop 0, whose destinations
start with the seed endpoints); the decoder scores a pair by the dot
product of its two embeddings, trained with binary cross-entropy on
``edge_label``. One hop (``--fanouts 10``) is the default: it reaches
0.91-0.92 test AUC in 10 epochs (GAE's 2-layer GCN: about 0.91); two hops
(``--fanouts 10,10``) reach 0.89-0.90 here and take half as long again.

Evaluation: the split's positives and their given negatives are passed as
seed edges with labels 1 and 0 and no drawn negatives (``neg=None``), in
batches with fixed request seeds; ROC-AUC is computed here with numpy
(ties share their mean rank). The weights of the epoch with the best
validation AUC are tested.

    /usr/bin/python3 examples/train_link.py --uri unix:///tmp/fs.sock --epochs 10

Prints one line per epoch (loss, validation AUC, mini-batches/s) and a final
``test_auc=…`` line. Deterministic given ``--seed`` (torch's seed, the
shuffles and every request's sampling seed derive from it). Needs the
featstore Python package on PYTHONPATH (client-lib/python; added when run
from the repository) and libfeatstore.so 1.3 (``FEATSTORE_LIB``).
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
from train_graphsage import fanout_list, model_input, request_seed  # noqa: E402  (the example beside this one)

# ---- the model ------------------------------------------------------------------

def block_sum(h_src, block, num_dst):
    """Sum of each of the first num_dst destinations' sampled in-neighbours'
    rows of h_src, and their counts (zeros without any)."""
    out = h_src.new_zeros(num_dst, h_src.shape[1])
    deg = h_src.new_zeros(num_dst)
    if block.num_edges:
        out.index_add_(0, block.edge_dst, h_src.index_select(0, block.edge_src))
        deg[:block.num_dst] = (block.dst_offsets[1:] - block.dst_offsets[:-1]).to(h_src.dtype)
    return out, deg


class SAGEConv(nn.Module):
    """GraphSAGE's GCN aggregator (Hamilton et al. 2017, eq. 2):
    h_dst' = W mean({h_dst} and its sampled neighbours' h_src) + b; the
    destinations are the first num_dst sources. One weight for a node and
    its neighbours: the mean aggregator's separate self weight lets a link
    model score a pair by the two nodes' own features and it does worse
    here (0.84-0.88 test AUC against 0.91-0.92). h_src is projected before the
    mean (they commute), so a sparse bag-of-words input costs nnz x out."""

    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.lin = nn.Linear(in_dim, out_dim)

    def forward(self, h_src, block, num_dst):
        p = torch.sparse.mm(h_src, self.lin.weight.t()) if h_src.is_sparse else h_src @ self.lin.weight.t()
        neigh, deg = block_sum(p, block, num_dst)
        return (p[:num_dst] + neigh) / (deg + 1).unsqueeze(1) + self.lin.bias


class Encoder(nn.Module):
    """One SAGEConv per hop; ReLU and dropout between layers."""

    def __init__(self, in_dim, hidden, out_dim, num_layers=1, dropout=0.0):
        super().__init__()
        dims = [in_dim] + [hidden] * (num_layers - 1) + [out_dim]
        self.layers = nn.ModuleList(SAGEConv(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, blocks, count_after):
        """x: features of every sampled node; blocks: hop 0 first; count_after:
        the node type's. Returns embeddings of the nodes reached before hop 0
        (the seed endpoints first)."""
        h = x
        hops = len(self.layers)
        for i, layer in enumerate(self.layers):
            hop = hops - 1 - i
            h = layer(h, blocks[hop], count_after[hop])
            if i < hops - 1:
                h = self.dropout(F.relu(h))
        return h


def score(z, edge_label_index):
    """Dot-product decoder: one logit per labelled pair."""
    return (z[edge_label_index[0]] * z[edge_label_index[1]]).sum(-1)


# ---- mini-batches from featstore --------------------------------------------------

def connect(uri):
    """The featstore client the example trains through."""
    return featstore.connect(uri)


def minibatch(client, src, dst, fanouts, args, request_seed, label=None):
    """One link batch: training edges with binary negatives (label None), or
    given pairs with their labels and no drawn negatives (evaluation: the
    pairs are not in the served graph, so there is nothing to exclude)."""
    num_neighbors = {args.edge_type: fanouts}
    if label is None:
        return client.link_sample(args.edge_type, src, dst, neg="binary", amount=args.neg_ratio,
                                  num_neighbors=num_neighbors, seed=request_seed, frontier="all",
                                  node_tables=("feat",), dtype="float32")
    return client.link_sample(args.edge_type, src, dst, edge_label=label, neg=None, keep_seed_edges=True,
                              num_neighbors=num_neighbors, seed=request_seed, frontier="all", node_tables=("feat",),
                              dtype="float32")


def forward_batch(model, batch, edge_type, sparse="auto"):
    """Logits and float labels of the batch's labelled pairs."""
    t = batch.torch()
    node = edge_type[0]
    z = model(model_input(t.x[node]["feat"], sparse), t.blocks[edge_type], t.count_after[node])
    return score(z, t.edge_label_index), t.edge_label.to(torch.float32)


def train_epoch(client, model, opt, train_edges, args, epoch, rng):
    model.train()
    src, dst = train_edges
    perm = rng.permutation(len(src))
    total_loss, batches, t0 = 0.0, 0, time.perf_counter()
    for step, start in enumerate(range(0, len(perm), args.batch_size)):
        idx = perm[start:start + args.batch_size]
        with minibatch(client, src[idx], dst[idx], args.fanouts, args, request_seed(args.seed, epoch, step)) as batch:
            logits, y = forward_batch(model, batch, args.edge_type, args.sparse_input)
            loss = F.binary_cross_entropy_with_logits(logits, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        total_loss += loss.item()
        batches += 1
    return total_loss / max(batches, 1), batches / (time.perf_counter() - t0)


def roc_auc(labels, scores):
    """ROC-AUC: the probability that a random positive outscores a random
    negative (Mann-Whitney U from ranks; tied scores share their mean rank)."""
    labels, scores = np.asarray(labels) > 0, np.asarray(scores, dtype=np.float64)
    pos, neg = int(labels.sum()), int((~labels).sum())
    if pos == 0 or neg == 0:
        return float("nan")
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores), np.float64)
    sorted_scores = scores[order]
    starts = np.flatnonzero(np.r_[True, sorted_scores[1:] != sorted_scores[:-1]])
    ends = np.r_[starts[1:], len(scores)]
    mean_rank = (starts + ends + 1) / 2.0  # 1-based ranks starts+1 .. ends, averaged
    ranks[order] = np.repeat(mean_rank, ends - starts)
    return float((ranks[labels].sum() - pos * (pos + 1) / 2.0) / (pos * neg))


@torch.no_grad()
def evaluate(client, model, pairs, args, salt):
    """ROC-AUC over labelled pairs (src, dst, label), each batch sampled
    through featstore with a fixed seed."""
    model.eval()
    src, dst, label = pairs
    scores, labels = [], []
    for step, start in enumerate(range(0, len(src), args.eval_batch_size)):
        sl = slice(start, start + args.eval_batch_size)
        with minibatch(client, src[sl], dst[sl], args.eval_fanouts, args, request_seed(args.seed, salt, step),
                       label[sl]) as batch:
            logits, y = forward_batch(model, batch, args.edge_type, args.sparse_input)
            scores.append(logits.numpy().copy())
            labels.append(y.numpy().copy())
    return roc_auc(np.concatenate(labels), np.concatenate(scores))


# ---- the dataset ----------------------------------------------------------------------

def labelled_pairs(client, split):
    """A link split's positives and their given negatives as (src, dst, label):
    neg_dst holds num_neg destinations per positive, paired with its src."""
    src, dst, neg = (client.split(f"link/{split}/{part}") for part in ("src", "dst", "neg_dst"))
    per = len(neg) // max(len(src), 1)
    return (np.concatenate([src, np.repeat(src, per)]), np.concatenate([dst, neg]),
            np.concatenate([np.ones(len(src), np.int64), np.zeros(len(neg), np.int64)]))


def link_edge_type(info):
    """The edge type of the link splits (Cora's: (paper, cites, paper)), whose
    src and dst types must be one node type with a table "feat"."""
    split = info.link_splits.get("train")
    if split is None or not {"valid", "test"} <= set(info.link_splits):
        raise SystemExit(f"the dataset has no link splits train, valid and test (it has "
                         f"{', '.join(info.link_splits) or 'none'}): serve Cora's link dataset "
                         f"(/usr/bin/python3 examples/cora.py link OUT)")
    src, _, dst = split.edge_type
    if src != dst or "feat" not in info.node_types[src].tables:
        raise SystemExit(f"link edge type {split.edge_type}: this example needs one node type with a table 'feat'")
    return tuple(split.edge_type)


# ---- the run --------------------------------------------------------------------------

def run(args, log=print):
    """Trains, then tests the weights of the best validation epoch. Returns
    {"test_auc", "valid_auc", "best_epoch", "loss", "batches_per_s"}."""
    torch.manual_seed(args.seed)
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    rng = np.random.default_rng(args.seed)
    with connect(args.uri) as client:
        info = client.info()
        args.edge_type = link_edge_type(info)
        train = tuple(client.split(f"link/train/{part}") for part in ("src", "dst"))
        valid, test = labelled_pairs(client, "valid"), labelled_pairs(client, "test")
        in_dim = info.node_types[args.edge_type[0]].tables["feat"].dim
        model = Encoder(in_dim, args.hidden, args.out_dim, len(args.fanouts), args.dropout)
        opt = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
        log(f"dataset={info.dataset} transport={client.transport} train_edges={len(train[0])} "
            f"valid_pairs={len(valid[0])} test_pairs={len(test[0])} fanouts={args.fanouts} batch={args.batch_size}")
        rates, loss, best = [], float("nan"), (-1.0, 0, None)  # (valid_auc, epoch, weights)
        for epoch in range(1, args.epochs + 1):
            loss, rate = train_epoch(client, model, opt, train, args, epoch, rng)
            valid_auc = evaluate(client, model, valid, args, salt=-1)
            rates.append(rate)
            log(f"epoch {epoch:3d}  loss {loss:.4f}  valid_auc {valid_auc:.4f}  {rate:.1f} mini-batches/s")
            if valid_auc > best[0]:
                best = (valid_auc, epoch, copy.deepcopy(model.state_dict()))
        if best[2] is not None:  # test the epoch that did best on validation
            model.load_state_dict(best[2])
        test_auc = evaluate(client, model, test, args, salt=-2)
    result = {"test_auc": test_auc, "valid_auc": best[0], "best_epoch": best[1], "loss": loss,
              "batches_per_s": float(np.mean(rates)) if rates else 0.0}
    log(f"test_auc={test_auc:.4f} valid_auc={best[0]:.4f} best_epoch={best[1]} "
        f"batches_per_s={result['batches_per_s']:.1f}")
    return result


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="GraphSAGE link prediction on Cora's citations, trained through "
                                            "featstore.")
    p.add_argument("--uri", required=True, help="unix:///path/to/socket or grpc://host:port")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--seed", type=int, default=0, help="torch, shuffling and sampling seed")
    p.add_argument("--batch-size", type=int, default=256, help="positive edges per mini-batch")
    p.add_argument("--eval-batch-size", type=int, default=512, help="labelled pairs per evaluation batch")
    p.add_argument("--neg-ratio", type=float, default=1.0, help="binary negatives per positive")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--hidden", type=int, default=64, help="hidden width (two or more layers)")
    p.add_argument("--out-dim", type=int, default=32, help="embedding size")
    p.add_argument("--dropout", type=float, default=0.0, help="between layers (two or more)")
    p.add_argument("--fanouts", type=fanout_list, default=[10],
                   help="per hop, from the seeds out; one layer per hop (default one)")
    p.add_argument("--eval-fanouts", type=fanout_list, default=None, help="per hop at evaluation (default "
                   "--fanouts; -1 = every neighbour)")
    p.add_argument("--sparse-input", choices=["auto", "on", "off"], default="auto",
                   help="multiply the input features as a sparse matrix (auto: when under 10%% non-zeros)")
    p.add_argument("--torch-threads", type=int, default=0, help="0 = torch's default")
    args = p.parse_args(argv)
    if args.eval_fanouts is None:
        args.eval_fanouts = args.fanouts
    if len(args.eval_fanouts) != len(args.fanouts):
        p.error("--eval-fanouts needs as many hops as --fanouts")
    return args


if __name__ == "__main__":
    try:
        run(parse_args())
    except featstore.Error as e:
        sys.exit(f"train_link: {e}")
