#!/usr/bin/python3
"""pyg_node_classification.py — node classification with PyG's own layers,
trained on featstore.pyg.NeighborLoader batches (docs/api.md §12).

Serve a labelled dataset with ``featstore serve``, then::

    .venv-pyg/bin/python examples/pyg_node_classification.py --uri unix:///tmp/fs.sock   # or grpc://host:port; the venv: scripts/pyg-venv.sh

A homogeneous graph (Cora: ``featstore import npz tests/data/cora.npz
--symmetrize``) trains PyG's GraphSAGE (``SAGEConv``, mean aggregation, one
layer per hop) over the rows projected to --embed-dim. A typed graph (typed Cora: ``/usr/bin/python3 examples/cora.py
typed OUT --split 60,20,20``) trains the same model made heterogeneous by
PyG's ``to_hetero`` on the labelled node type (--target, default the one
with labels); node types with a feature table are projected to --embed-dim once per
batch, those without get a learned embedding of that size per node,
looked up by ``n_id``.

Each batch is PyG's ``Data``/``HeteroData`` as PyG's NeighborLoader makes
it: seeds first (``batch_size`` of them), ``x``, ``y``, ``edge_index``, ``n_id``.
The weights of the epoch with the best validation accuracy are tested.
Prints one line per epoch and a final ``test_acc=…`` line; deterministic
given --seed (torch's seed, from which the loaders' shuffles and sampling
seeds come). Needs torch_geometric (scripts/pyg-venv.sh) and the featstore
package on PYTHONPATH (added when run from the repository).
"""
import argparse
import copy
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import SAGEConv, to_hetero

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "client-lib", "python"))
import featstore  # noqa: E402  (found through the path set just above when run from the repository)
from featstore.pyg import NeighborLoader  # noqa: E402
from train_graphsage import model_input  # noqa: E402  (the example beside this one: dense or sparse rows)
from train_hetero import project  # noqa: E402


class SAGE(nn.Module):
    """GraphSAGE: one SAGEConv per hop, ReLU and dropout between."""

    def __init__(self, hidden, out_dim, layers, dropout):
        super().__init__()
        dims = [hidden] * (layers - 1) + [out_dim]
        self.convs = nn.ModuleList(SAGEConv((-1, -1), d) for d in dims)
        self.dropout = dropout

    def forward(self, x, edge_index):
        for i, conv in enumerate(self.convs):
            x = conv(x, edge_index)
            if i < len(self.convs) - 1:
                x = F.dropout(F.relu(x), p=self.dropout, training=self.training)
        return x


class HeteroModel(nn.Module):
    """to_hetero(SAGE) over --embed-dim inputs: each node type with a
    feature table projected once per batch (one Linear, rather than one per
    edge type and layer on the raw rows: Cora's are 1,433 wide; a sparse
    product for bag-of-words rows), a learned embedding for the featureless
    ones."""

    def __init__(self, info, target, args):
        super().__init__()
        self.target = target
        types = info.node_types
        self.embed = nn.ModuleDict({t: nn.Embedding(types[t].count, args.embed_dim) for t in types
                                    if "feat" not in types[t].tables})
        self.project = nn.ModuleDict({t: nn.Linear(types[t].tables["feat"].dim, args.embed_dim) for t in types
                                      if "feat" in types[t].tables})
        metadata = (list(types), [tuple(e) for e in info.edge_types])
        self.gnn = to_hetero(SAGE(args.hidden, types[target].num_classes, len(args.fanouts), args.dropout),
                             metadata, aggr="sum")

    def forward(self, data):
        x = {t: self.embed[t](data[t].n_id) if t in self.embed else
             project(model_input(data[t].x, "auto"), self.project[t]) + self.project[t].bias for t in data.node_types}
        return self.gnn(x, data.edge_index_dict)[self.target]


class HomogeneousModel(nn.Module):
    """SAGE over the rows projected to --embed-dim once per batch (a sparse
    product for bag-of-words rows, as HeteroModel's)."""

    def __init__(self, info, args):
        super().__init__()
        self.project = nn.Linear(info.tables["feat"].dim, args.embed_dim)
        self.gnn = SAGE(args.hidden, info.num_classes, len(args.fanouts), args.dropout)

    def forward(self, data):
        x = project(model_input(data.x, "auto"), self.project) + self.project.bias
        return self.gnn(x, data.edge_index)


def labelled(data, target):
    """(seed rows of the batch's logits' type, their labels): the first batch_size nodes."""
    store = data if target is None else data[target]
    n = store.batch_size
    return n, store.y[:n]


def logits(model, data, target):
    return model(data)


def train_epoch(model, opt, loader, target):
    model.train()
    total, count, t0 = 0.0, 0, time.perf_counter()
    for data in loader:
        opt.zero_grad()
        n, y = labelled(data, target)
        loss = F.cross_entropy(logits(model, data, target)[:n], y)
        loss.backward()
        opt.step()
        total, count = total + float(loss) * n, count + n
    return total / max(count, 1), len(loader) / (time.perf_counter() - t0)


@torch.no_grad()
def accuracy(model, loader, target):
    model.eval()
    right = seen = 0
    for data in loader:
        n, y = labelled(data, target)
        right += int((logits(model, data, target)[:n].argmax(-1) == y).sum())
        seen += n
    return right / max(seen, 1)


def split(info, target, name):
    """PyG's input_nodes for split `name` ("train", ...)."""
    return name if target is None else (target, name)


def run(args, log=print):
    """Trains, then tests the weights of the best validation epoch: {"test_acc", ...}."""
    torch.manual_seed(args.seed)
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    with featstore.connect(args.uri) as client:
        info = client.info()
        target = None
        if info.typed:
            target = args.target or next(t for t, i in info.node_types.items() if "labels" in i.tables)
        loader = lambda name, bs, shuffle: NeighborLoader(  # noqa: E731
            client, num_neighbors=args.fanouts, input_nodes=split(info, target, name), batch_size=bs,
            shuffle=shuffle, seed=args.seed)
        train, valid, test = (loader("train", args.batch_size, True), loader("valid", args.eval_batch_size, False),
                              loader("test", args.eval_batch_size, False))
        model = HomogeneousModel(info, args) if target is None else HeteroModel(info, target, args)
        with torch.no_grad():  # PyG's lazy (-1) input sizes are set by a first forward pass
            logits(model, next(iter(valid)), target)
        opt = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
        log(f"dataset={info.dataset} transport={client.transport} model={'to_hetero(SAGE)' if target else 'SAGE'} "
            f"fanouts={args.fanouts} batch={args.batch_size}")
        best, rates = (-1.0, 0, None), []
        for epoch in range(1, args.epochs + 1):
            loss, rate = train_epoch(model, opt, train, target)
            acc = accuracy(model, valid, target)
            rates.append(rate)
            log(f"epoch {epoch:3d}  loss {loss:.4f}  valid_acc {acc:.4f}  {rate:.1f} batches/s")
            if acc > best[0]:
                best = (acc, epoch, copy.deepcopy(model.state_dict()))
        model.load_state_dict(best[2])
        test_acc = accuracy(model, test, target)
    log(f"test_acc={test_acc:.4f} valid_acc={best[0]:.4f} best_epoch={best[1]} "
        f"batches_per_s={sum(rates) / max(len(rates), 1):.1f}")
    return {"test_acc": test_acc, "valid_acc": best[0], "best_epoch": best[1]}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Node classification with PyG's SAGEConv (to_hetero on typed graphs) "
                                            "on featstore.pyg.NeighborLoader batches.")
    p.add_argument("--uri", required=True, help="unix:///path/to/socket or grpc://host:port")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--fanouts", default="10,10", help="neighbours per hop, comma-separated (layers = hops)")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--eval-batch-size", type=int, default=512)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--embed-dim", type=int, default=64, help="learned embedding of featureless node types")
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--lr", type=float, default=0.005)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--target", default=None, help="typed graphs: the node type to classify")
    p.add_argument("--torch-threads", type=int, default=0, help="0 = torch's default")
    args = p.parse_args(argv)
    args.fanouts = [int(f) for f in args.fanouts.split(",")]
    return args


if __name__ == "__main__":
    run(parse_args())
