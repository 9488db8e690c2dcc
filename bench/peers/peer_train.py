"""peer_train.py — the `train` task of peer_loader.py (issue 53): a training
step on every batch, the model each framework's own, so that the loader
shares the cores with real compute as in a trainer.

The model is a 3-layer GraphSAGE (hidden 128, mean aggregation, ReLU
between layers), cross-entropy on the seeds' labels, Adam (lr 0.003):

  featstore, PyG   the SAGEConv layers of torch_geometric's GraphSAGE, layer
                   by layer over the hops where the batch says its hops' sizes
                   (num_sampled_nodes/edges, featstore's batches: pyg_layers),
                   else over the whole subgraph (PyG's sampler gives the sizes
                   only with pyg-lib, which is not on PyPI)
  DGL, GraphBolt   three dgl.nn.SAGEConv over the batch's blocks

A contender `NAME@compute` is the compute-only bound: the same model on
batches loaded beforehand and held in memory (COMPUTE_BATCHES of them,
taken in turn), no loader running.
"""
from __future__ import annotations

from typing import Any, Callable

HIDDEN = 128
LAYERS = 3
LR = 0.003
COMPUTE_BATCHES = 16


def _torch_major() -> int:
    import torch
    return int(torch.__version__.split(".")[0])


FUSED = _torch_major() >= 2  # torch.sparse.mm(csr, x, reduce="mean"): torch 2.0 on


def pyg_step(in_dim: int, classes: int) -> Callable[[Any], float]:
    """A training step of PyG's SAGEConv layers on a PyG Data batch
    (featstore.pyg's or PyG's): layer by layer over the hops (pyg_layers)
    where the batch says its hops' sizes, else PyG's GraphSAGE over the
    whole subgraph."""
    import torch
    import torch.nn.functional as F
    from torch_geometric.nn.models import GraphSAGE
    torch.manual_seed(0)
    model = GraphSAGE(in_dim, HIDDEN, num_layers=LAYERS, out_channels=classes)
    opt = torch.optim.Adam(model.parameters(), lr=LR)

    def step(d: Any) -> float:
        bs = int(d.batch_size)
        opt.zero_grad()
        if "num_sampled_nodes" in d:
            out = pyg_layers(model, d)
        else:  # PyG's sampler gives the hops' sizes only with pyg-lib
            out = model(d.x, d.edge_index)[:bs]
        loss = F.cross_entropy(out, d.y.view(-1)[:bs].long())
        loss.backward()
        opt.step()
        return float(loss)
    return step


def pyg_layers(model: Any, d: Any) -> Any:
    """The model's SAGEConv layers as PyG's hierarchical examples run them:
    layer l computes only the nodes the next needs (the hops the later
    layers still reach: x_dst = x[:n_dst], bipartite), over those hops'
    edges. A batch's edges are grouped by hop and, within, by destination
    (featstore's are: each node's sampled edges together), so the layer's
    adjacency is a CSR matrix at no sorting cost; on torch >= 2.0 SAGEConv
    then aggregates with one fused sparse-dense product (PyG's
    message_and_aggregate), else by edge_index."""
    import torch
    import torch.nn.functional as F
    check_grouped(d)  # ~0.1 ms: a batch in another order would be computed wrong, not slower
    nodes = [int(n) for n in d.num_sampled_nodes]
    edges = [int(n) for n in d.num_sampled_edges]
    x, ei = d.x, d.edge_index
    last = len(model.convs) - 1
    for i, conv in enumerate(model.convs):
        hops = len(model.convs) - i
        n_dst, n_edges = sum(nodes[:hops]), sum(edges[:hops])
        src, dst = ei[0, :n_edges], ei[1, :n_edges]
        if FUSED:
            crow = torch.zeros(n_dst + 1, dtype=torch.int64)
            torch.cumsum(torch.bincount(dst, minlength=n_dst), 0, out=crow[1:])
            adj = torch.sparse_csr_tensor(crow, src, torch.ones(n_edges), size=(n_dst, x.size(0)))
            x = conv((x, x[:n_dst]), adj)
        else:
            x = conv((x, x[:n_dst]), torch.stack([src, dst]), size=(x.size(0), n_dst))
        if i < last:
            x = F.relu(x)
    return x


def check_grouped(d: Any) -> None:
    """pyg_layers' precondition: edges in hop order, and within a hop by
    destination (a ValueError naming the first edge out of order)."""
    import torch
    dst = d.edge_index[1]
    bad = torch.nonzero(dst[1:] < dst[:-1])
    if len(bad):
        raise ValueError(f"edge {int(bad[0]) + 1}: destinations not grouped (pyg_layers needs them in order)")


def dgl_model(in_dim: int, classes: int) -> Any:
    import dgl.nn as dglnn
    import torch
    import torch.nn.functional as F

    class SAGE(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            dims = [in_dim] + [HIDDEN] * (LAYERS - 1) + [classes]
            self.layers = torch.nn.ModuleList(dglnn.SAGEConv(a, b, "mean") for a, b in zip(dims, dims[1:]))

        def forward(self, blocks: list[Any], x: Any) -> Any:
            for i, (layer, block) in enumerate(zip(self.layers, blocks)):
                x = layer(block, x)
                if i < len(self.layers) - 1:
                    x = F.relu(x)
            return x
    torch.manual_seed(0)
    return SAGE()


def dgl_step(in_dim: int, classes: int) -> Callable[[Any], float]:
    """A training step of DGL's SAGE on (blocks, x, y)."""
    import torch
    import torch.nn.functional as F
    model = dgl_model(in_dim, classes)
    opt = torch.optim.Adam(model.parameters(), lr=LR)

    def step(batch: Any) -> float:
        blocks, x, y = batch
        opt.zero_grad()
        loss = F.cross_entropy(model(blocks, x), y.view(-1).long())
        loss.backward()
        opt.step()
        return float(loss)
    return step


def dgl_classic_batch(b: Any) -> tuple[Any, Any, Any]:
    """(blocks, x, y) of a DGL DataLoader batch (input_nodes, output_nodes, blocks)."""
    blocks = b[2]
    return blocks, blocks[0].srcdata["feat"], blocks[-1].dstdata["label"]


def graphbolt_batch(mb: Any) -> tuple[Any, Any, Any]:
    """(blocks, x, y) of a GraphBolt MiniBatch."""
    return mb.blocks, mb.node_features["feat"], mb.labels


STEPS = {"featstore-unix": (pyg_step, lambda d: d), "featstore-grpc": (pyg_step, lambda d: d),
         "pyg": (pyg_step, lambda d: d), "dgl": (dgl_step, dgl_classic_batch),
         "graphbolt": (dgl_step, graphbolt_batch)}


def trainer(name: str, loader: Any, in_dim: int, classes: int, compute_only: bool) -> Callable[[], float]:
    """One training step per call: on the loader's next batch, or with
    compute_only on batches taken from it beforehand (held, cycled)."""
    make_step, unpack = STEPS[name]
    step = make_step(in_dim, classes)
    it = iter(loader)

    def next_batch() -> Any:
        nonlocal it
        try:
            return next(it)
        except StopIteration:  # the next epoch
            it = iter(loader)
            return next(it)

    if not compute_only:
        return lambda: step(unpack(next_batch()))
    held = [_held(unpack(next_batch())) for _ in range(COMPUTE_BATCHES)]
    del it  # the loader stops: nothing runs beside the model
    turn = 0

    def cached() -> float:
        nonlocal turn
        turn = (turn + 1) % len(held)
        return step(held[turn])
    return cached


def _held(batch: Any) -> Any:
    """A batch that outlives its loader: featstore's are views of its
    memory, so their tensors are cloned; the peers' are already owned."""
    if hasattr(batch, "clone") and type(batch).__module__.startswith("torch_geometric"):
        return batch.clone()
    return batch
