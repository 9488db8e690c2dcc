"""featstore.pyg.convert — a featstore ``HeteroBatch`` as PyG's fields:
``n_id``, ``edge_index``, ``e_id``, ``x``/``y``/``edge_attr``,
``num_sampled_nodes``/``num_sampled_edges``, ``batch``, ``time`` and a link
batch's label fields, as torch tensors that view the batch (zero-copy) or,
with ``copy``, own their data; then as ``Data`` or ``HeteroData``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence, overload

import numpy as np
import torch
from torch_geometric.data import Data, HeteroData

from ..batch import Block
from ..hetero import HeteroBatch
from .schema import ATTR_NAMES, EDGE_ATTR_NAMES, _Schema, _tensor


@dataclass
class _Sampled:
    """One batch's PyG fields per type, torch tensors (views of the batch)."""
    node: dict               # type -> n_id
    edge_index: dict         # edge type -> [2, E]: row and col below are its two rows
    row: dict                # edge type -> local source ids, every hop
    col: dict                # edge type -> local destination ids
    edge: dict               # edge type -> e_id or None
    batch: dict              # type -> seed index per node (disjoint) or None
    num_sampled_nodes: dict  # type -> [seeds, hop 1, ...]
    num_sampled_edges: dict  # edge type -> [hop 0, ...]
    x: dict                  # type -> {PyG attr: rows}
    edge_attr: dict          # edge type -> {PyG attr: rows of every hop}
    time: dict               # type -> node times or None


def _end_to_end(parts: Sequence[np.ndarray], shape: tuple) -> np.ndarray | None:
    """One read-only view of `shape` over the parts (numpy int64 arrays) when
    each starts where the one before ends, as the hops' edge arrays of a
    local or 1.5 server's batch do (proto/fs_hetero.c, F_JOINED); else None.
    The view keeps the first part, and so the batch, alive."""
    parts = [p for p in parts if len(p)]
    if not parts:
        return None
    at = parts[0].__array_interface__["data"][0]
    for p in parts:
        if p.__array_interface__["data"][0] != at or not p.flags.c_contiguous:
            return None
        at += p.nbytes
    strides = (8 * shape[1], 8) if len(shape) == 2 else (8,)
    return np.lib.stride_tricks.as_strided(parts[0], shape=shape, strides=strides, writeable=False)


def _joined(parts: Sequence[np.ndarray | None], copy: bool) -> torch.Tensor | None:
    """The hops' arrays (numpy) as one tensor: a view when they lie end to
    end (or there is one), else their concatenation (copied with copy); None
    without any. numpy, not torch.cat: a torch op would wake torch's OpenMP
    threads, whose spinning takes the cores the stream's producer samples
    on."""
    present = [p for p in parts if p is not None]
    if not present:
        return None
    if len(present) == 1:
        return _as_tensor(present[0], copy)
    view = _end_to_end(present, (sum(len(p) for p in present),))
    if view is not None:
        return _as_tensor(view, copy)
    return torch.from_numpy(np.concatenate(present))


def _edge_index(blocks: Sequence[Block], copy: bool = False) -> torch.Tensor:
    """[2, E] int64 (sources, then destinations) of every hop: a view of the
    batch when its edge arrays lie end to end, else one pass of copies."""
    n = sum(b.num_edges for b in blocks)
    view = _end_to_end([b.edge_src for b in blocks] + [b.edge_dst for b in blocks], (2, n))
    if view is not None:
        return _as_tensor(view, copy)
    out = np.empty((2, n), np.int64)
    at = 0
    for b in blocks:
        out[0, at:at + b.num_edges] = b.edge_src
        out[1, at:at + b.num_edges] = b.edge_dst
        at += b.num_edges
    return torch.from_numpy(out)


@overload
def _as_tensor(array: np.ndarray, copy: bool) -> torch.Tensor: ...


@overload
def _as_tensor(array: None, copy: bool) -> None: ...


def _as_tensor(array: np.ndarray | None, copy: bool) -> torch.Tensor | None:
    """A view of a batch's array, or (copy) a tensor of its own, copied by
    numpy for the reason _joined gives."""
    if array is None:
        return None
    return torch.from_numpy(np.array(array)) if copy else _tensor(array)


def _rows(h: HeteroBatch, type_: str, table: str, array: np.ndarray, copy: bool) -> torch.Tensor:
    t = _as_tensor(array, copy)
    if h.dtype(type_, table) == "bfloat16":
        t = t.view(torch.bfloat16)
    return t.view(-1) if table == "labels" else t


def _edge_rows(h: HeteroBatch, edge_type: Any, table: str, hops: Sequence[np.ndarray], copy: bool
               ) -> torch.Tensor:
    """An edge table's rows of every hop (at least one) as one tensor."""
    t = _joined(hops, copy)
    assert t is not None
    return t.view(torch.bfloat16) if h.dtype(edge_type, table) == "bfloat16" else t


def _read_batch(h: HeteroBatch, copy: bool = False) -> _Sampled:
    """The PyG fields of a live HeteroBatch (featstore.hetero: blocks per
    (hop, edge type) with local ids of the whole batch, frontier "new")."""
    opt = lambda a: _as_tensor(a, copy)  # noqa: E731
    out = _Sampled({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {})
    for t in h.node_types:
        out.node[t] = opt(h.nodes[t])
        out.batch[t] = opt(h.batch[t])
        out.time[t] = opt(h.time[t])
        after = h.count_after[t]
        out.num_sampled_nodes[t] = [after[0]] + [after[i] - after[i - 1] for i in range(1, len(after))]
        out.x[t] = {ATTR_NAMES.get(k, k): _rows(h, t, k, a, copy) for k, a in h.x[t].items()}
    for e in h.edge_types:
        blocks = h.blocks[e]
        out.edge_index[e] = _edge_index(blocks, copy)
        out.row[e], out.col[e] = out.edge_index[e][0], out.edge_index[e][1]
        out.edge[e] = _joined([b.edge_ids for b in blocks], copy)
        out.num_sampled_edges[e] = [b.num_edges for b in blocks]
        tables = h.edge_attr[e][0] if h.edge_attr[e] else {}
        out.edge_attr[e] = {EDGE_ATTR_NAMES.get(k, k): _edge_rows(h, e, k, [hop[k] for hop in h.edge_attr[e]], copy)
                            for k in tables}
    return out


def _link_fields(h: HeteroBatch, triplet: bool, copy: bool = False) -> tuple[Any, Any, Any]:
    """A link batch's label fields: (edge_label_index, edge_label,
    edge_label_time) or (src_index, dst_pos_index, dst_neg_index)."""
    opt = lambda a: _as_tensor(a, copy)  # noqa: E731
    if triplet:
        neg = opt(h.dst_neg_index)
        return opt(h.src_index), opt(h.dst_pos_index), None if neg is None else neg.view(neg.size(0), -1)
    return opt(h.edge_label_index), opt(h.edge_label), opt(h.edge_label_time)


def _to_data(schema: _Schema, s: _Sampled) -> Data:
    """A homogeneous batch as torch_geometric.data.Data."""
    n, e = schema.node, schema.edge
    data = Data(edge_index=s.edge_index[e])
    for k, v in s.x[n].items():
        data[k] = v
    for k, v in s.edge_attr[e].items():
        data[k] = v
    data.n_id = s.node[n]
    data.num_nodes = int(s.node[n].numel())
    if s.edge[e] is not None:
        data.e_id = s.edge[e]
    if s.batch[n] is not None:
        data.batch = s.batch[n]
    if s.time[n] is not None:
        data.time = s.time[n]
    data.num_sampled_nodes = s.num_sampled_nodes[n]
    data.num_sampled_edges = s.num_sampled_edges[e]
    return data


def _to_hetero_data(schema: _Schema, s: _Sampled) -> HeteroData:
    """A hetero batch as torch_geometric.data.HeteroData."""
    data = HeteroData()
    for t in schema.node_types:
        store = data[t]
        for k, v in s.x[t].items():
            store[k] = v
        store.n_id = s.node[t]
        store.num_nodes = int(s.node[t].numel())
        if s.batch[t] is not None:
            store.batch = s.batch[t]
        if s.time[t] is not None:
            store.time = s.time[t]
        store.num_sampled_nodes = s.num_sampled_nodes[t]
    for e in schema.edge_types:
        store = data[e]
        store.edge_index = s.edge_index[e]
        if s.edge[e] is not None:
            store.e_id = s.edge[e]
        for k, v in s.edge_attr[e].items():
            store[k] = v
        store.num_sampled_edges = s.num_sampled_edges[e]
    return data


def _to_pyg(schema: _Schema, s: _Sampled) -> Data | HeteroData:
    return _to_data(schema, s) if schema.homogeneous else _to_hetero_data(schema, s)
