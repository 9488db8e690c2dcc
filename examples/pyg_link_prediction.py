#!/usr/bin/python3
"""pyg_link_prediction.py — link prediction with PyG's own layers, trained
on featstore.pyg.LinkNeighborLoader batches (docs/api.md §12).

Serve Cora's link dataset (``/usr/bin/python3 examples/cora.py link OUT``, then
``featstore serve OUT``): papers with their bag-of-words ``feat``, the
training citations as (paper, cites, paper), and link splits ``train``,
``valid`` and ``test`` (valid and test with one given negative destination
per positive, GAE's evaluation). Then::

    .venv-pyg/bin/python examples/pyg_link_prediction.py --uri unix:///tmp/fs.sock   # or grpc://host:port; the venv: scripts/pyg-venv.sh

Training batches come from ``LinkNeighborLoader(edge_label_index="train",
neg_sampling="binary")``: a link stream over the split, each batch its
positives and as many random pairs labelled 0, both endpoints'
neighbourhoods sampled with the batch's own edges left out (the model
never reads the citation it predicts). The encoder is PyG's GCN
(``GCNConv``, one per hop; --conv sage for ``SAGEConv``), the decoder the dot product of the two
endpoints' embeddings, the loss binary cross-entropy on ``edge_label``.
Evaluation passes each split's positives and given negatives as
``edge_label_index`` with ``edge_label`` 1 and 0 and no drawn negatives;
ROC-AUC as examples/train_link.py computes it. The weights of the epoch
with the best validation AUC are tested. Prints one line per epoch and a
final ``test_auc=…`` line; deterministic given --seed.
"""
import argparse
import copy
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch_geometric.nn import GCNConv
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "client-lib", "python"))
import featstore  # noqa: E402  (found through the path set just above when run from the repository)
from featstore.pyg import LinkNeighborLoader  # noqa: E402
from train_link import labelled_pairs, link_edge_type, roc_auc  # noqa: E402  (the example beside this one)
from pyg_node_classification import SAGE  # noqa: E402
from train_graphsage import model_input  # noqa: E402
from train_hetero import project  # noqa: E402


class GCN(nn.Module):
    """GCN encoder: one GCNConv per hop (self loops, symmetric degree
    normalisation over the sampled subgraph), ReLU and dropout between."""

    def __init__(self, hidden, out_dim, layers, dropout):
        super().__init__()
        dims = [hidden] * (layers - 1) + [out_dim]
        self.convs = nn.ModuleList(GCNConv(-1, d) for d in dims)
        self.dropout = dropout

    def forward(self, x, edge_index):
        for i, conv in enumerate(self.convs):
            x = conv(x, edge_index)
            if i < len(self.convs) - 1:
                x = F.dropout(F.relu(x), p=self.dropout, training=self.training)
        return x


class Encoder(nn.Module):
    """The rows projected to --hidden once per batch (a sparse product for
    bag-of-words rows; a GCN's first layer is linear before it propagates,
    so this is the same model, multiplied cheaply), then the convolutions."""

    def __init__(self, in_dim, conv, args):
        super().__init__()
        self.project = nn.Linear(in_dim, args.hidden)
        self.gnn = conv(args.hidden, args.hidden, len(args.fanouts), args.dropout)

    def forward(self, x, edge_index):
        return self.gnn(project(model_input(x, "auto"), self.project) + self.project.bias, edge_index)


def scores(model, data):
    z = model(data.x, data.edge_index)
    src, dst = data.edge_label_index
    return (z[src] * z[dst]).sum(-1)


def train_epoch(model, opt, loader):
    model.train()
    total, count, t0 = 0.0, 0, time.perf_counter()
    for data in loader:
        opt.zero_grad()
        loss = F.binary_cross_entropy_with_logits(scores(model, data), data.edge_label.float())
        loss.backward()
        opt.step()
        total, count = total + float(loss) * data.edge_label.numel(), count + data.edge_label.numel()
    return total / max(count, 1), len(loader) / (time.perf_counter() - t0)


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    out, labels = [], []
    for data in loader:
        out.append(scores(model, data).numpy())
        labels.append(data.edge_label.numpy().copy())
    return roc_auc(np.concatenate(labels), np.concatenate(out))


def run(args, log=print):
    """Trains, then tests the weights of the best validation epoch: {"test_auc", ...}."""
    torch.manual_seed(args.seed)
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    with featstore.connect(args.uri) as client:
        info = client.info()
        edge_type = link_edge_type(info)

        def pairs(name):
            src, dst, label = labelled_pairs(client, name)
            return LinkNeighborLoader(client, num_neighbors=args.fanouts, edge_label_index=(edge_type, torch.stack(
                [torch.from_numpy(src), torch.from_numpy(dst)])) if info.typed else torch.stack(
                [torch.from_numpy(src), torch.from_numpy(dst)]), edge_label=torch.from_numpy(label),
                batch_size=args.eval_batch_size, seed=args.seed)

        train = LinkNeighborLoader(client, num_neighbors=args.fanouts, edge_label_index="train",
                                   neg_sampling="binary", batch_size=args.batch_size, shuffle=True, seed=args.seed)
        valid, test = pairs("valid"), pairs("test")
        in_dim = info.node_types[edge_type[0]].tables["feat"].dim
        model = Encoder(in_dim, {"gcn": GCN, "sage": SAGE}[args.conv], args)
        with torch.no_grad():  # PyG's lazy (-1) input sizes are set by a first forward pass
            scores(model, next(iter(valid)))
        opt = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
        log(f"dataset={info.dataset} transport={client.transport} model={args.conv} fanouts={args.fanouts} "
            f"batch={args.batch_size}")
        best, rates = (-1.0, 0, None), []
        for epoch in range(1, args.epochs + 1):
            loss, rate = train_epoch(model, opt, train)
            auc = evaluate(model, valid)
            rates.append(rate)
            log(f"epoch {epoch:3d}  loss {loss:.4f}  valid_auc {auc:.4f}  {rate:.1f} batches/s")
            if auc > best[0]:
                best = (auc, epoch, copy.deepcopy(model.state_dict()))
        model.load_state_dict(best[2])
        test_auc = evaluate(model, test)
    log(f"test_auc={test_auc:.4f} valid_auc={best[0]:.4f} best_epoch={best[1]} "
        f"batches_per_s={sum(rates) / max(len(rates), 1):.1f}")
    return {"test_auc": test_auc, "valid_auc": best[0], "best_epoch": best[1]}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Link prediction with PyG's SAGEConv on featstore.pyg."
                                            "LinkNeighborLoader batches (Cora's citations).")
    p.add_argument("--uri", required=True, help="unix:///path/to/socket or grpc://host:port")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--fanouts", default="10", help="neighbours per hop, comma-separated (layers = hops)")
    p.add_argument("--batch-size", type=int, default=256, help="positive edges per batch")
    p.add_argument("--eval-batch-size", type=int, default=512)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--lr", type=float, default=0.002)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--conv", choices=["gcn", "sage"], default="gcn", help="PyG's GCNConv or SAGEConv")
    p.add_argument("--torch-threads", type=int, default=0, help="0 = torch's default")
    args = p.parse_args(argv)
    args.fanouts = [int(f) for f in args.fanouts.split(",")]
    return args


if __name__ == "__main__":
    run(parse_args())
