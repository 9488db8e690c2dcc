"""featstore.pyg — PyG's remote backend on a featstore server (since 1.5).

PyG's own loaders and layers on featstore's sampler and stores, over
unix:// (zero-copy) or grpc://, for any number of independent jobs::

    from featstore.pyg import NeighborLoader, LinkNeighborLoader
    loader = NeighborLoader("unix:///run/fs.sock", num_neighbors=[15, 10, 5], input_nodes="train",
                            batch_size=1024, shuffle=True)
    for data in loader:          # torch_geometric.data.Data: x, y, edge_index, n_id, batch_size, ...
        out = model(data.x, data.edge_index)[:data.batch_size]

Three layers, each usable alone (docs/api.md §12):

- ``FeatureStore`` and ``GraphStore``: PyG's remote-backend interfaces,
  read-only views of the served dataset. Node tables appear as PyG
  attributes: "feat" as ``x``, "labels" as ``y`` (int64 [n]), every other
  table under its own name; the graph's edge types in CSC layout, as the
  sampler reads them. ``put``/``remove`` raise ``ReadOnlyError``.
- ``NeighborSampler``: a ``torch_geometric.sampler.BaseSampler`` that
  samples on featstore (typed, weighted, temporal, disjoint; link batches
  with binary or triplet negatives), so PyG's ``NodeLoader(data=(fs, gs),
  node_sampler=...)`` and ``LinkLoader`` run on it. Each call samples and
  gathers every node table in one request (seed 002's fused map-and-gather);
  the FeatureStore then hands PyG the rows already fetched.
- ``NeighborLoader`` and ``LinkNeighborLoader``: PyG's argument names and
  output fields, backed by featstore epoch streams (docs/api.md §11): the
  next batches are made by background threads while the model trains, and
  ``rank``/``world_size`` give each DDP rank its disjoint share.

Sampling semantics are PyG's: hop h expands only the nodes first reached
at hop h-1 (frontier "new"), seeds come first in ``n_id``, edges point from
the sampled neighbour to the node that sampled it (``edge_index[0]`` source,
``edge_index[1]`` destination), ``num_sampled_nodes``/``num_sampled_edges``
count per hop. Two differences, both deliberate: sampling is without
replacement (``replace=True`` is refused), and a link batch leaves its seed
edges (and their reverses) out of the sampled subgraph, so a model never
reads the label it predicts (``keep_seed_edges=True`` keeps them, as PyG
does). Randomness comes from torch's generator: ``torch.manual_seed`` makes
runs repeatable.

Lifetime: tensors of a loader's batch are zero-copy views of featstore's
result memory (over unix://, a shared slot); a loader lets the caller hold
``hold`` batches (default 4) and raises ``featstore.Error`` naming the fix
when one more is asked for. Keep ``.clone()`` copies of anything kept
across batches, or pass ``copy=True``.
"""
import difflib
import inspect
import os
from dataclasses import dataclass

import numpy as np
import torch
from torch_geometric.data import Data, HeteroData
from torch_geometric.data import FeatureStore as _PygFeatureStore
from torch_geometric.data import GraphStore as _PygGraphStore
from torch_geometric.data.feature_store import TensorAttr
from torch_geometric.data.graph_store import EdgeAttr, EdgeLayout
from torch_geometric.sampler import (BaseSampler, EdgeSamplerInput, HeteroSamplerOutput, NegativeSampling,
                                     NodeSamplerInput, SamplerOutput)

from .client import Client, Error, Status

__all__ = ["FeatureStore", "GraphStore", "NeighborSampler", "NeighborLoader", "LinkNeighborLoader", "ReadOnlyError",
           "ATTR_NAMES", "stores"]

ATTR_NAMES = {"feat": "x", "labels": "y"}     # featstore table -> PyG attribute (other tables keep their names)
EDGE_ATTR_NAMES = {"feat": "edge_attr"}       # edge table -> PyG attribute


class ReadOnlyError(Error, TypeError):
    """A write to a featstore store: the server's dataset is read-only."""

    def __init__(self, what):
        super().__init__(Status.UNSUPPORTED, f"featstore's {what} is read-only: the served dataset cannot be changed "
                                         f"from a client (write a new dataset and serve it instead)")


def _parameters(f):
    """The keyword names f (a function or a class) takes, **kwargs aside."""
    return [p.name for p in inspect.signature(f).parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def _check_options(caller, connect_kwargs):
    """Every name in connect_kwargs (caller's **kwargs, handed on to
    featstore.Client) is a connection option; else the TypeError Python
    would raise for caller itself, naming what it takes (a misspelt
    batch_size would otherwise surface as Client.__init__'s)."""
    options = [n for n in _parameters(Client) if n != "uri"]
    bad = [k for k in connect_kwargs if k not in options]
    if not bad:
        return
    own = _parameters(caller)
    close = difflib.get_close_matches(bad[0], own + options, n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    raise TypeError(f"{caller.__name__}() got an unexpected keyword argument '{bad[0]}'{hint}; it takes "
                    f"{', '.join(own)}, and featstore.Client's connection options {', '.join(options)}")


def _connect(source, connect_kwargs, caller):
    """A Client from a URI or a Client (shared, not owned), for caller
    (whose **connect_kwargs they are)."""
    _check_options(caller, connect_kwargs)
    return _open(source, connect_kwargs)


def _open(source, connect_kwargs):
    if isinstance(source, Client):
        if connect_kwargs:
            raise TypeError(f"connection options {sorted(connect_kwargs)} given with an open Client")
        return source, False
    if isinstance(source, (str, os.PathLike)):
        return Client(os.fspath(source), **connect_kwargs), True
    raise TypeError(f"expected a featstore URI (unix://..., grpc://...) or a featstore.Client, got {source!r}")


def _tensor(array):
    """torch.from_numpy on a read-only featstore view, without torch's
    warning that it cannot protect read-only memory (the lifetime rule
    already says these tensors are read-only)."""
    from ._torch import tensor
    return tensor(array)


def _long(values, what):
    """An int64 numpy array from a tensor, array or list of ids."""
    if isinstance(values, torch.Tensor):
        if values.dtype == torch.bool:
            values = values.nonzero().view(-1)
        values = values.detach().to("cpu", torch.int64).numpy()
    arr = np.ascontiguousarray(values, dtype=np.int64)
    if arr.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional, got shape {arr.shape}")
    return arr


class _Schema:
    """What the stores and the sampler need to know of the served dataset:
    node types with their counts and tables, edge types with theirs, and
    whether it is homogeneous (then PyG's group names are None)."""

    def __init__(self, info):
        self.homogeneous = not info.typed
        self.node_types = {name: (t.count, dict(t.tables)) for name, t in info.node_types.items()}
        self.edge_types = {tuple(e): (e.num_edges, dict(e.tables), e.weighted, e.timed) for e in info.edge_types}
        if not self.node_types:  # a server before 1.3: the homogeneous graph's default names
            self.node_types = {"node": (info.num_nodes, dict(info.tables))}
            self.edge_types = {("node", "to", "node"): (info.num_edges, {}, info.weighted, False)}
        # a homogeneous graph's one node type and edge type ("node", ("node", "to", "node") unless named)
        self.node, self.edge = next(iter(self.node_types)), next(iter(self.edge_types))
        self.num_classes = info.num_classes
        self.link_splits = dict(info.link_splits)

    def group(self, node_type):
        """PyG's group name of a node type (None for a homogeneous graph)."""
        return None if self.homogeneous else node_type

    def node_type(self, group):
        if self.homogeneous and group in (None, self.node):
            return self.node
        if group not in self.node_types or self.homogeneous:
            raise KeyError(f"no node type {group!r} (the graph has {', '.join(self.node_types)})")
        return group

    def edge_type(self, key):
        if self.homogeneous and key in (None, self.edge):
            return self.edge
        key = tuple(key) if isinstance(key, (list, tuple)) else key
        if key not in self.edge_types or self.homogeneous:
            raise KeyError(f"no edge type {key!r} (the graph has {', '.join(map(str, self.edge_types))})")
        return key

    def table(self, node_type, attr_name):
        """The featstore table behind PyG attribute attr_name of node_type."""
        tables = self.node_types[node_type][1]
        for table in tables:
            if ATTR_NAMES.get(table, table) == attr_name:
                return table
        names = [ATTR_NAMES.get(t, t) for t in tables]
        raise KeyError(f"node type {node_type!r} has no attribute {attr_name!r} (it has {', '.join(names) or 'none'})")

    def fanouts(self, num_neighbors):
        """PyG's num_neighbors (a list for every edge type, or a dict per
        edge type) as featstore's dict (src, rel, dst) -> fanouts."""
        if isinstance(num_neighbors, dict):
            out = {}
            for key, fanouts in num_neighbors.items():
                out[self.edge_type(key)] = [int(f) for f in fanouts]
            hops = {len(f) for f in out.values()}
            if len(hops) > 1:
                raise ValueError(f"num_neighbors: every edge type needs the same number of hops, got {sorted(hops)}")
            n = hops.pop() if hops else 0
            return {**{e: [0] * n for e in self.edge_types}, **out}
        if isinstance(num_neighbors, (list, tuple)) and num_neighbors:
            return {e: [int(f) for f in num_neighbors] for e in self.edge_types}
        raise TypeError(f"num_neighbors must be a list of fanouts per hop or a dict edge type -> list, "
                        f"got {num_neighbors!r}")


def _sampling_options(schema, *, replace=False, subgraph_type="directional", disjoint=False,
                      temporal_strategy="uniform", time_attr=None, weight_attr=None, directed=True):
    """PyG's sampler options as featstore's request options; what featstore
    does not do is refused by name."""
    if replace:
        raise ValueError("replace=True: featstore samples without replacement (the fanout's distinct neighbours, "
                         "or all of them when fewer)")
    if str(getattr(subgraph_type, "value", subgraph_type)) != "directional" or not directed:
        raise ValueError(f"subgraph_type={subgraph_type!r}: featstore samples directional subgraphs only")
    if temporal_strategy not in ("uniform", "last"):
        raise ValueError(f"temporal_strategy {temporal_strategy!r}: one of 'uniform', 'last'")
    if weight_attr is not None and not any(w for _, _, w, _ in schema.edge_types.values()):
        raise ValueError(f"weight_attr={weight_attr!r}: the served graph has no edge weights")
    if time_attr is not None and not schema.homogeneous and not any(t for *_, t in schema.edge_types.values()):
        raise ValueError(f"time_attr={time_attr!r}: the served graph has no edge times")
    return {"disjoint": bool(disjoint) or time_attr is not None,
            "temporal": temporal_strategy if time_attr is not None else None,
            "mode": "weighted" if weight_attr is not None else "uniform"}


def _node_tables(schema):
    """Every node table of any type, in a fixed order (the fused gather's list)."""
    seen = []
    for _, tables in schema.node_types.values():
        seen += [t for t in tables if t not in seen]
    return tuple(seen)


def _edge_tables(schema):
    seen = []
    for _, tables, _, _ in schema.edge_types.values():
        seen += [t for t in tables if t not in seen]
    return tuple(seen)


def _request_seed():
    """A sampling seed from torch's generator, so torch.manual_seed repeats a run."""
    return int(torch.randint(0, 2**62, (1,)).item())


# ---- batches: a featstore HeteroBatch as PyG's fields ---------------------------------

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


def _end_to_end(parts, shape):
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


def _joined(parts, copy):
    """The hops' arrays (numpy) as one tensor: a view when they lie end to
    end (or there is one), else their concatenation (copied with copy); None
    without any. numpy, not torch.cat: a torch op would wake torch's OpenMP
    threads, whose spinning takes the cores the stream's producer samples
    on."""
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    if len(parts) == 1:
        return _as_tensor(parts[0], copy)
    view = _end_to_end(parts, (sum(len(p) for p in parts),))
    if view is not None:
        return _as_tensor(view, copy)
    return torch.from_numpy(np.concatenate(parts))


def _edge_index(blocks, copy=False):
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


def _as_tensor(array, copy):
    """A view of a batch's array, or (copy) a tensor of its own, copied by
    numpy for the reason _joined gives."""
    if array is None:
        return None
    return torch.from_numpy(np.array(array)) if copy else _tensor(array)


def _rows(h, type_, table, array, copy):
    t = _as_tensor(array, copy)
    if h.dtype(type_, table) == "bfloat16":
        t = t.view(torch.bfloat16)
    return t.view(-1) if table == "labels" else t


def _edge_rows(h, edge_type, table, hops, copy):
    """An edge table's rows of every hop as one tensor."""
    t = _joined(hops, copy)
    return t.view(torch.bfloat16) if h.dtype(edge_type, table) == "bfloat16" else t


def _read_batch(h, copy=False):
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


def _link_fields(h, triplet, copy=False):
    """A link batch's label fields: (edge_label_index, edge_label,
    edge_label_time) or (src_index, dst_pos_index, dst_neg_index)."""
    opt = lambda a: _as_tensor(a, copy)  # noqa: E731
    if triplet:
        neg = opt(h.dst_neg_index)
        return opt(h.src_index), opt(h.dst_pos_index), None if neg is None else neg.view(neg.size(0), -1)
    return opt(h.edge_label_index), opt(h.edge_label), opt(h.edge_label_time)


def _to_data(schema, s):
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


def _to_hetero_data(schema, s):
    """A typed batch as torch_geometric.data.HeteroData."""
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


def _to_pyg(schema, s):
    return _to_data(schema, s) if schema.homogeneous else _to_hetero_data(schema, s)


# ---- the stores --------------------------------------------------------------------

class _Served:
    """What both stores share: the connection (a URI, or a shared Client),
    the served dataset's schema, pickling for spawned DataLoader workers (by
    URI and connection options: they reconnect) and close()."""

    def _serve(self, source, connect_kwargs):
        self.client, self._owns = _connect(source, connect_kwargs, type(self))
        self._source = source if not isinstance(source, Client) else source.uri
        self._connect_kwargs = connect_kwargs
        self.schema = _Schema(self.client.info())

    def __getstate__(self):
        return {"source": self._source, "kwargs": self._connect_kwargs}

    def __setstate__(self, state):
        self.__init__(state["source"], **state["kwargs"])

    def close(self):
        """Closes the connection when the store made it (not a shared Client's)."""
        if self._owns:
            self.client.close()


class FeatureStore(_Served, _PygFeatureStore):
    """PyG's FeatureStore over a featstore server: one read-only attribute
    per node table (``x`` for "feat", ``y`` for "labels", int64 [n]), group
    name the node type (None on a homogeneous graph). ``get_tensor`` with an
    index gathers those rows on the server; rows that ``NeighborSampler``
    fetched with a batch are handed over without a second request.

    `source`: a URI or a ``featstore.Client`` (shared; then no connection
    options). Thread-safety: as the Client's (calls are serialised)."""

    def __init__(self, source, **connect_kwargs):
        super().__init__()
        self._serve(source, connect_kwargs)

    def _put_tensor(self, tensor, attr):
        raise ReadOnlyError("FeatureStore")

    def _remove_tensor(self, attr):
        raise ReadOnlyError("FeatureStore")

    def _get_tensor_size(self, attr):
        node_type = self.schema.node_type(attr.group_name)
        table = self.schema.table(node_type, attr.attr_name)
        info = self.schema.node_types[node_type][1][table]
        return (info.rows,) if table == "labels" else (info.rows, info.dim)

    def get_all_tensor_attrs(self):
        return [TensorAttr(group_name=self.schema.group(t), attr_name=ATTR_NAMES.get(k, k))
                for t, (_, tables) in self.schema.node_types.items() for k in tables]

    def _get_tensor(self, attr):
        node_type = self.schema.node_type(attr.group_name)
        table = self.schema.table(node_type, attr.attr_name)
        index = attr.index
        fetched = getattr(index, "_featstore_rows", None) if isinstance(index, torch.Tensor) else None
        if fetched is not None and (node_type, attr.attr_name) in fetched:
            return fetched[(node_type, attr.attr_name)]
        count = self.schema.node_types[node_type][0]
        if index is None:
            ids = np.arange(count, dtype=np.int64)
        elif isinstance(index, slice):
            ids = np.arange(count, dtype=np.int64)[index]
        else:
            ids = _long(index, "index")
        if len(ids) and (ids.min() < 0 or ids.max() >= count):
            bad = ids[(ids < 0) | (ids >= count)][0]
            raise IndexError(f"index {bad} out of range for node type {node_type!r} ({count} nodes)")
        return self._gather(node_type, table, ids)

    def _gather(self, node_type, table, ids):
        """Rows ids of table, copied out in chunks (the result outlives any batch)."""
        info = self.schema.node_types[node_type][1][table]
        chunks = []
        for start in range(0, max(len(ids), 1), 1 << 16):
            part = ids[start:start + (1 << 16)]
            if self.schema.homogeneous:
                with self.client.gather(part, table) as b:
                    rows = np.array(b.features)
            else:  # typed graphs: a zero-fanout typed request gathers the seeds' rows
                num = {e: [0] for e in self.schema.edge_types}
                with self.client.hetero_sample({node_type: part}, num, node_tables=(table,)) as h:
                    rows = np.array(h.x[node_type][table])[np.asarray(h.seed_local[node_type])]
            chunks.append(rows)
        rows = np.concatenate(chunks) if len(chunks) > 1 else chunks[0]
        t = torch.from_numpy(rows)
        if info.dtype == "bfloat16":
            t = t.view(torch.bfloat16)
        return t.view(-1) if table == "labels" else t


class GraphStore(_Served, _PygGraphStore):
    """PyG's GraphStore over a featstore server: every edge type of the
    served graph, read-only, in CSC layout (featstore stores each node's
    in-neighbours, the edges it samples). ``get_edge_index`` reads the
    whole edge type from the server (one full-fanout hop over every
    destination, in chunks): meant for inspection and small graphs; the
    loaders never call it."""

    def __init__(self, source, **connect_kwargs):
        super().__init__()
        self._serve(source, connect_kwargs)

    def _put_edge_index(self, edge_index, edge_attr):
        raise ReadOnlyError("GraphStore")

    def _remove_edge_index(self, edge_attr):
        raise ReadOnlyError("GraphStore")

    def get_all_edge_attrs(self):
        out = []
        for e in self.schema.edge_types:
            size = (self.schema.node_types[e[0]][0], self.schema.node_types[e[2]][0])
            out.append(EdgeAttr(None if self.schema.homogeneous else e, EdgeLayout.CSC, True, size))
        return out

    def _get_edge_index(self, edge_attr):
        e = self.schema.edge_type(edge_attr.edge_type)
        if edge_attr.layout != EdgeLayout.CSC:
            raise ValueError(f"featstore serves edge type {e!r} in CSC layout (ask for layout='csc'); "
                             f"torch_geometric converts it with to_torch_coo / to_torch_csr")
        num_dst = self.schema.node_types[e[2]][0]
        colptr, rows = [np.zeros(1, np.int64)], []
        fanouts = {k: [-1 if k == e else 0] for k in self.schema.edge_types}
        for start in range(0, num_dst, 1 << 14):
            dst = np.arange(start, min(num_dst, start + (1 << 14)), dtype=np.int64)
            with self.client.hetero_sample({e[2]: dst}, fanouts) as h:
                block = h.blocks[e][0]
                src_nodes = np.asarray(h.nodes[e[0]])
                offsets = np.asarray(block.dst_offsets)[:len(dst) + 1]
                rows.append(src_nodes[np.asarray(block.edge_src)[:offsets[-1]]])
                colptr.append(offsets[1:] + colptr[-1][-1])
        return torch.from_numpy(np.concatenate(rows)), torch.from_numpy(np.concatenate(colptr))


def stores(source, **connect_kwargs):
    """(FeatureStore, GraphStore) sharing one connection: PyG's ``data=``."""
    client, _ = _connect(source, connect_kwargs, stores)
    fs, gs = FeatureStore(client), GraphStore(client)
    fs._owns = True  # the pair's connection closes with the feature store
    return fs, gs


def _client_of(data, connect_kwargs, caller):
    """The Client behind a loader's or sampler's (caller's) `data`: a URI,
    a Client, a FeatureStore, or PyG's (FeatureStore, GraphStore) pair of
    ours."""
    _check_options(caller, connect_kwargs)
    if isinstance(data, tuple) and len(data) == 2 and isinstance(data[0], FeatureStore):
        data = data[0]
    if isinstance(data, (FeatureStore, GraphStore)):
        if connect_kwargs:
            raise TypeError(f"connection options {sorted(connect_kwargs)} given with a store (it is connected)")
        return data.client, data.schema, False
    client, owns = _open(data, connect_kwargs)
    return client, _Schema(client.info()), owns


# ---- the sampler ---------------------------------------------------------------------

class NeighborSampler(BaseSampler):
    """PyG's BaseSampler on featstore: ``sample_from_nodes`` and
    ``sample_from_edges`` each make one featstore request (hetero_sample or
    link_sample) that samples and gathers every node and edge table, so
    PyG's ``NodeLoader(data=(fs, gs), node_sampler=s)`` and ``LinkLoader``
    need no further round trip for features.

    `data`: a URI, a ``featstore.Client``, or the (FeatureStore, GraphStore)
    pair of ``featstore.pyg.stores`` (their connection is shared). Options
    have PyG's NeighborSampler names and meanings: `num_neighbors` a list
    (every edge type) or a dict per edge type; `disjoint`;
    `temporal_strategy` with `time_attr` (any name: featstore samples by the
    dataset's edge times, the seeds' times defaulting to the nodes'
    timestamps); `weight_attr` (any name: the dataset's edge weights).
    featstore's own: `keep_seed_edges` (link batches), `neg_weighted`
    (negative endpoints by degree^0.75, not src_weight/dst_weight) and
    `dtype` ("float32" widens half-precision tables). Every output tensor is
    a copy, so PyG may keep them as long as it likes."""

    def __init__(self, data, num_neighbors, subgraph_type="directional", replace=False, disjoint=False,
                 temporal_strategy="uniform", time_attr=None, weight_attr=None, directed=True, keep_seed_edges=False,
                 neg_weighted=False, dtype=None, **connect_kwargs):
        self.client, self.schema, self._owns = _client_of(data, connect_kwargs, type(self))
        self.num_neighbors = self.schema.fanouts(num_neighbors)
        self.options = _sampling_options(self.schema, replace=replace, subgraph_type=subgraph_type,
                                         disjoint=disjoint, temporal_strategy=temporal_strategy,
                                         time_attr=time_attr, weight_attr=weight_attr, directed=directed)
        self.keep_seed_edges, self.neg_weighted, self.dtype = bool(keep_seed_edges), bool(neg_weighted), dtype
        self.node_tables, self.edge_tables = _node_tables(self.schema), _edge_tables(self.schema)

    def _request(self):
        return dict(seed=_request_seed(), node_tables=self.node_tables, edge_tables=self.edge_tables,
                    dtype=self.dtype, want_edge_ids=True, **self.options)

    def sample_from_nodes(self, index: NodeSamplerInput, **kwargs):
        t = self.schema.node_type(index.input_type)
        seeds = _long(index.node, "seed nodes")
        times = None
        if index.time is not None and self.options["temporal"] is not None:
            times = {t: _long(index.time, "seed times")}
        with self.client.hetero_sample({t: seeds}, self.num_neighbors, seed_time=times, **self._request()) as h:
            s = _read_batch(h, copy=True)
        return self._output(s, (index.input_id, index.time))

    def sample_from_edges(self, index: EdgeSamplerInput, neg_sampling: NegativeSampling = None):
        e = self.schema.edge_type(index.input_type)
        neg, amount = _negatives(neg_sampling)
        label = None if index.label is None else _long(index.label, "edge labels")
        if label is not None and neg == "binary":
            label = label - 1  # PyG's LinkLoader made 0 mean "negative" already; featstore adds the 1 itself
        time = None if index.time is None else _long(index.time, "edge times")
        with self.client.link_sample(e, _long(index.row, "source nodes"), _long(index.col, "destination nodes"),
                                     num_neighbors=self.num_neighbors, label=label, time=time, neg=neg,
                                     amount=amount, neg_weighted=self.neg_weighted,
                                     keep_seed_edges=self.keep_seed_edges, **self._request()) as h:
            s = _read_batch(h, copy=True)
            fields = _link_fields(h, neg == "triplet", copy=True)
        if neg == "triplet":
            metadata = (index.input_id, fields[0], fields[1], fields[2].squeeze(-1), index.time)
        else:
            metadata = (index.input_id, *fields)
        return self._output(s, metadata)

    def _output(self, s, metadata):
        """PyG's SamplerOutput (homogeneous) or HeteroSamplerOutput, the
        gathered rows riding on the node tensors for FeatureStore."""
        for t, node in s.node.items():
            node._featstore_rows = {(t, k): v for k, v in s.x[t].items()}
        if self.schema.homogeneous:
            n, e = self.schema.node, self.schema.edge
            return SamplerOutput(node=s.node[n], row=s.row[e], col=s.col[e], edge=s.edge[e], batch=s.batch[n],
                                 num_sampled_nodes=s.num_sampled_nodes[n], num_sampled_edges=s.num_sampled_edges[e],
                                 metadata=metadata)
        batch = s.batch if self.options["disjoint"] else None
        return HeteroSamplerOutput(node=s.node, row=s.row, col=s.col, edge=s.edge, batch=batch,
                                   num_sampled_nodes=s.num_sampled_nodes, num_sampled_edges=s.num_sampled_edges,
                                   metadata=metadata)


def _negatives(neg_sampling):
    """PyG's NegativeSampling as featstore's (neg, amount)."""
    if neg_sampling is None:
        return None, 1.0
    neg_sampling = NegativeSampling.cast(neg_sampling)
    if neg_sampling.src_weight is not None or neg_sampling.dst_weight is not None:
        raise ValueError("neg_sampling with src_weight/dst_weight: featstore draws negative endpoints uniformly, or "
                         "by degree^0.75 with neg_weighted=True")
    mode = str(getattr(neg_sampling.mode, "value", neg_sampling.mode))
    return mode, float(neg_sampling.amount)


# ---- the loaders ---------------------------------------------------------------------

def _positions(ids):
    """A lookup from id to its first position in ids: (order, sorted ids)."""
    order = np.argsort(ids, kind="stable")
    return order, ids[order]


def _find(lookup, values):
    order, sorted_ids = lookup
    at = np.searchsorted(sorted_ids, values)
    return torch.from_numpy(order[np.minimum(at, len(order) - 1)])


def _dist(rank, world_size):
    """rank, world_size: given, else torch.distributed's when initialised, else 0, 1."""
    if rank is None and world_size is None and torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return (0 if rank is None else int(rank)), (1 if world_size is None else int(world_size))


# torch DataLoader options PyG's loaders pass on, and what featstore's do instead
_DATALOADER_OPTIONS = {
    "num_workers": "batches are made ahead by the stream's own thread in this process (prefetch=), and a "
                   "connection's threads= splits each batch over cores: no worker processes are needed",
    "persistent_workers": "there are no worker processes (see num_workers)",
    "prefetch_factor": "use prefetch= (batches made ahead)",
    "pin_memory": "batches are views of featstore's memory; pin or copy them yourself if you need to",
    "sampler": "the order is the stream's plan: shuffle=, seed=, rank=/world_size= (DistributedSampler's)",
    "batch_sampler": "the order is the stream's plan: shuffle=, seed=, rank=/world_size= (DistributedSampler's)",
    "collate_fn": "batches are PyG's Data/HeteroData; use transform=",
}


def _refuse_dataloader_options(kwargs):
    """A torch DataLoader option given to a featstore loader: a ValueError
    saying what to do instead (rather than Client's unexpected keyword)."""
    for name, instead in _DATALOADER_OPTIONS.items():
        if name in kwargs:
            raise ValueError(f"{name}: featstore.pyg's loaders are not torch DataLoaders: {instead}")


class _Loader:
    """What NeighborLoader and LinkNeighborLoader share: the connection,
    the epoch counter, the stream's options and the batch conversion."""

    def __init__(self, data, num_neighbors, batch_size, shuffle, drop_last, sampler_options, transform, rank,
                 world_size, seed, prefetch, hold, copy, dtype, connect_kwargs):
        _refuse_dataloader_options(connect_kwargs)
        self.client, self.schema, self._owns = _client_of(data, connect_kwargs, type(self))
        self.num_neighbors = self.schema.fanouts(num_neighbors)
        self.options = _sampling_options(self.schema, **sampler_options)
        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.batch_size, self.shuffle, self.drop_last = int(batch_size), bool(shuffle), bool(drop_last)
        self.transform, self.copy, self.dtype = transform, bool(copy), dtype
        self.rank, self.world_size = _dist(rank, world_size)
        if not 0 <= self.rank < self.world_size:
            raise ValueError(f"rank {self.rank} must be in [0, world_size={self.world_size})")
        self.seed = _request_seed() if seed is None else int(seed)  # the shuffle's; the same on every DDP rank
        self.prefetch = _default_prefetch(self.client) if prefetch is None else int(prefetch)
        self.hold = int(hold)
        self.epoch, self._epoch_set = 0, False
        self.node_tables, self.edge_tables = _node_tables(self.schema), _edge_tables(self.schema)

    def set_epoch(self, epoch):
        """DDP's convention: the next iteration is epoch `epoch` (else each
        iteration is the next epoch, a new shuffle)."""
        self.epoch, self._epoch_set = int(epoch), True

    def _next_epoch(self):
        epoch = self.epoch
        if not self._epoch_set:
            self.epoch += 1
        self._epoch_set = False
        return epoch

    def _stream_options(self, epoch):
        return dict(batch_size=self.batch_size, num_neighbors=self.num_neighbors, node_tables=self.node_tables,
                    edge_tables=self.edge_tables, want_edge_ids=True, dtype=self.dtype, seed=self.seed, epoch=epoch,
                    rank=self.rank, world_size=self.world_size, drop_last=self.drop_last,
                    order="random" if self.shuffle else "sequential", prefetch=self.prefetch, hold=self.hold,
                    frontier="new", mode=self.options["mode"], disjoint=self.options["disjoint"],
                    temporal=self.options["temporal"])

    def _num_batches(self, n):
        share = n // self.world_size if self.drop_last else -(-n // self.world_size)
        return share // self.batch_size if self.drop_last else -(-share // self.batch_size)

    def _share(self, n, epoch):
        """This rank's positions of an epoch of n inputs, as DistributedSampler
        deals them (the streams' plan, for batches made by calls here): one
        permutation per (seed, epoch), padded by repeating its start, or cut
        with drop_last, to equal shares."""
        g = torch.Generator().manual_seed((self.seed * 1000003 + epoch) % (1 << 63))
        order = torch.randperm(n, generator=g).numpy() if self.shuffle else np.arange(n)
        W = self.world_size
        if self.drop_last:
            order = order[:n // W * W]
        elif n % W:
            order = np.concatenate([order, order[:W - n % W]])
        return order[self.rank::W]

    def _held_too_many(self, err):
        """RESOURCE from the stream or the slots: the lifetime rule, named."""
        if err.status != Status.RESOURCE:
            return err
        return Error(err.status, f"{err.message}; featstore.pyg: batches are views of featstore's memory and at "
                                 f"most hold={self.hold} may be alive at once: keep .clone() copies of what you keep, "
                                 f"or pass copy=True (or a larger hold=, up to 16)")

    def _stream(self, **options):
        stream = self.client.stream(**options)
        try:
            for b in stream:
                try:
                    yield b
                finally:
                    b.release()
        except Error as err:
            raise self._held_too_many(err) from None
        finally:
            stream.close()

    def _connection(self):
        """The connection batches made by calls come from: one of the loader's
        own, with a result slot for each batch in flight (prefetch), each the
        caller may hold (hold), and the one being made."""
        if getattr(self, "_conn", None) is None:
            self._conn = self.client._with_slots(self.prefetch + self.hold + 1)
        return self._conn

    def _sampled(self, call, *args, **kwargs):
        """One featstore call of the per-call path, the lifetime rule named."""
        try:
            return call(*args, **kwargs)
        except Error as err:
            raise self._held_too_many(err) from None

    def _finish(self, data):
        return data if self.transform is None else self.transform(data)

    def _input_id(self, b):
        """A stream batch's input_id: its seeds' positions in the seed list,
        from the stream (None from an older library: then looked up). A
        copy (8 bytes a seed), as the lookup's was: callers keep input_id
        across batches, and a view would hold its batch."""
        return None if b.positions is None else _as_tensor(b.positions, True)

    def close(self):
        """Closes the loader's own connection, and the client when the loader made it."""
        if getattr(self, "_conn", None) is not None:
            self._conn.close()
        if self._owns:
            self.client.close()


class NeighborLoader(_Loader):
    """PyG's NeighborLoader on a featstore server, backed by an epoch
    stream: batches of `batch_size` seeds from `input_nodes`, sampled with
    `num_neighbors` and joined with every node (and edge) table, as
    ``Data`` (homogeneous) or ``HeteroData`` with PyG's fields: ``x``,
    ``y``, ``edge_index``, ``edge_attr``, ``n_id``, ``e_id``,
    ``num_sampled_nodes``, ``num_sampled_edges``, ``input_id``,
    ``batch_size`` (the seeds are the first batch_size nodes), ``batch``
    (disjoint), ``time`` and ``seed_time`` (temporal).

    `data`: a URI, a ``featstore.Client`` or ``featstore.pyg.stores``'s
    pair. `input_nodes`: ids (a tensor, bool mask or array), a split name
    ("train"; "paper/train" or ("paper", "train") on a typed graph), a node
    type, (type, ids) or None (every node). `input_time`: per-seed times
    for temporal sampling (then batches are sampled per call, not streamed).
    `shuffle`: a new order each epoch (each iteration is the next epoch;
    ``set_epoch`` as with DistributedSampler). `rank`/`world_size`: this DDP
    rank's share (default: torch.distributed's). `seed`: the shuffle seed,
    the same on every rank (default: drawn from torch's generator).
    `prefetch`: batches made ahead by the stream's producer threads (by
    default two per producer; over unix:// a connection has one producer per
    `threads`). `hold`, `copy`: the module comment's lifetime rule. Other
    options as ``NeighborSampler``'s. A loader is used by one thread at a
    time."""

    def __init__(self, data, num_neighbors, input_nodes=None, input_time=None, batch_size=1, shuffle=False,
                 drop_last=False, replace=False, subgraph_type="directional", disjoint=False,
                 temporal_strategy="uniform", time_attr=None, weight_attr=None, transform=None, rank=None,
                 world_size=None, seed=None, prefetch=None, hold=4, copy=False, dtype=None, **connect_kwargs):
        super().__init__(data, num_neighbors, batch_size, shuffle, drop_last,
                         dict(replace=replace, subgraph_type=subgraph_type, disjoint=disjoint,
                              temporal_strategy=temporal_strategy, time_attr=time_attr, weight_attr=weight_attr),
                         transform, rank, world_size, seed, prefetch, hold, copy, dtype, connect_kwargs)
        self.input_type, self.split, self.input_nodes = self._inputs(input_nodes)
        self._lookup = _positions(self.input_nodes)
        self.input_time = None if input_time is None else _long(input_time, "input_time")
        if self.input_time is not None:
            if self.options["temporal"] is None:
                raise ValueError("input_time is given but time_attr is None: times only matter to temporal sampling")
            if len(self.input_time) != len(self.input_nodes):
                raise ValueError(f"input_time has {len(self.input_time)} times for {len(self.input_nodes)} nodes")

    def _inputs(self, input_nodes):
        """(node type, split name or None, the seed ids as int64)."""
        schema = self.schema
        if isinstance(input_nodes, tuple) and len(input_nodes) == 2 and isinstance(input_nodes[0], str):
            t, ids = schema.node_type(input_nodes[0]), input_nodes[1]
            if isinstance(ids, str):
                return t, f"{t}/{ids}", self.client.split(f"{t}/{ids}")
            if ids is None:
                return t, None, np.arange(schema.node_types[t][0], dtype=np.int64)
            return t, None, self._checked(t, _long(ids, "input_nodes"))
        if isinstance(input_nodes, str):
            if not schema.homogeneous and input_nodes in schema.node_types:
                return input_nodes, None, np.arange(schema.node_types[input_nodes][0], dtype=np.int64)
            t = schema.node if schema.homogeneous else input_nodes.split("/", 1)[0]
            if not schema.homogeneous and ("/" not in input_nodes or t not in schema.node_types):
                raise ValueError(f"input_nodes {input_nodes!r}: a typed graph needs a node type, "
                                 f"'TYPE/SPLIT' or (TYPE, ids)")
            return t, input_nodes, self.client.split(input_nodes)
        if not schema.homogeneous:
            raise ValueError("input_nodes: a typed graph needs a node type, 'TYPE/SPLIT' or (TYPE, ids)")
        if input_nodes is None:
            return schema.node, None, np.arange(schema.node_types[schema.node][0], dtype=np.int64)
        return schema.node, None, self._checked(schema.node, _long(input_nodes, "input_nodes"))

    def _checked(self, node_type, ids):
        count = self.schema.node_types[node_type][0]
        if len(ids) and (ids.min() < 0 or ids.max() >= count):
            bad = ids[(ids < 0) | (ids >= count)][0]
            raise ValueError(f"input_nodes: id {bad} out of range for node type {node_type!r} ({count} nodes)")
        return ids

    def __len__(self):
        return self._num_batches(len(self.input_nodes))

    def __iter__(self):
        epoch = self._next_epoch()
        if self.input_time is not None:
            return self._calls(epoch)
        seeds = dict(split=self.split) if self.split is not None else dict(seeds=self.input_nodes)
        return (self._convert(b.hetero, b.seeds, input_id=self._input_id(b)) for b in
                self._stream(seed_type=self.input_type, **seeds, **self._stream_options(epoch)))

    def _calls(self, epoch):
        """Temporal batches with given seed times: one hetero_sample per batch
        over this rank's share of a torch-seeded permutation."""
        share = self._share(len(self.input_nodes), epoch)
        for start in range(0, len(share), self.batch_size):
            pos = share[start:start + self.batch_size]
            if self.drop_last and len(pos) < self.batch_size:
                break
            seeds = self.input_nodes[pos]
            req = dict(seed=_request_seed(), node_tables=self.node_tables, edge_tables=self.edge_tables,
                       dtype=self.dtype, want_edge_ids=True, frontier="new", **self.options)
            h = self._sampled(self._connection().hetero_sample, {self.input_type: seeds}, self.num_neighbors,
                              seed_time={self.input_type: self.input_time[pos]}, **req)
            data = self._convert(h, seeds, input_id=torch.from_numpy(pos),
                                 seed_time=torch.from_numpy(self.input_time[pos]))
            h.release()  # its arrays keep it (and its slot) while the batch's tensors live
            yield data

    def _convert(self, h, seeds, input_id=None, seed_time=None):
        data = _to_pyg(self.schema, _read_batch(h, copy=self.copy))
        store = data if self.schema.homogeneous else data[self.input_type]
        seeds = np.asarray(seeds)
        store.input_id = input_id if input_id is not None else _find(self._lookup, seeds)
        store.batch_size = len(seeds)
        if self.options["temporal"] is not None:
            times = store.time if "time" in store else None
            store.seed_time = seed_time if seed_time is not None else (None if times is None else
                                                                      _as_tensor(times[:len(seeds)].numpy(), True))
        return self._finish(data)


class LinkNeighborLoader(_Loader):
    """PyG's LinkNeighborLoader on a featstore server: batches of
    `batch_size` seed edges (`edge_label_index`), both endpoints' neighbourhoods
    sampled with `num_neighbors`, with negatives (`neg_sampling`:
    "binary"/"triplet" or a NegativeSampling; or `neg_sampling_ratio`), as
    ``Data``/``HeteroData`` with ``edge_label_index`` and ``edge_label``
    (binary or none) or ``src_index``/``dst_pos_index``/``dst_neg_index``
    (triplet), ``input_id`` and NeighborLoader's fields.

    `edge_label_index`: a [2, m] tensor of (source, destination) ids, (edge
    type, tensor), (edge type, None) (every edge of the type) or the name
    of one of the dataset's link splits ("train"; its edges, labels and
    times; batches then come from a link stream). `edge_label`: int labels
    (PyG's rule: with binary negatives 0 becomes "negative" after a shift of
    + 1). `edge_label_time`: per-edge times (temporal). Seed edges and their
    reverses are left out of each batch's subgraph unless
    `keep_seed_edges`. Explicit edges are sampled one request per batch on
    a background thread, `prefetch` ahead. Other options as
    NeighborLoader's."""

    def __init__(self, data, num_neighbors, edge_label_index=None, edge_label=None, edge_label_time=None,
                 neg_sampling=None, neg_sampling_ratio=None, batch_size=1, shuffle=False, drop_last=False,
                 replace=False, subgraph_type="directional", disjoint=False, temporal_strategy="uniform",
                 time_attr=None, weight_attr=None, transform=None, rank=None, world_size=None, seed=None,
                 prefetch=None, hold=4, copy=False, dtype=None, keep_seed_edges=False, neg_weighted=False,
                 **connect_kwargs):
        super().__init__(data, num_neighbors, batch_size, shuffle, drop_last,
                         dict(replace=replace, subgraph_type=subgraph_type, disjoint=disjoint,
                              temporal_strategy=temporal_strategy, time_attr=time_attr, weight_attr=weight_attr),
                         transform, rank, world_size, seed, prefetch, hold, copy, dtype, connect_kwargs)
        if neg_sampling is None and neg_sampling_ratio:
            neg_sampling = NegativeSampling("binary", neg_sampling_ratio)
        self.neg, self.amount = _negatives(neg_sampling)
        self.keep_seed_edges, self.neg_weighted = bool(keep_seed_edges), bool(neg_weighted)
        self.edge_type, self.split, src, dst, label, time = self._edges(edge_label_index, edge_label,
                                                                         edge_label_time)
        if self.neg == "triplet" and label is not None:
            raise ValueError("edge_label with triplet negatives: use src_index, dst_pos_index and dst_neg_index "
                             "of each batch instead (as PyG)")
        if label is not None and self.neg == "binary" and len(label) and label.min() != 0:
            label = label - 1  # PyG shifts only labels that use 0; featstore always adds 1
        if time is not None and self.options["temporal"] is None:
            raise ValueError("edge_label_time is given but time_attr is None: times only matter to temporal "
                             "sampling")
        self.src, self.dst, self.label, self.time = src, dst, label, time
        num_dst = self.schema.node_types[self.edge_type[2]][0]
        self._lookup = _positions(src * num_dst + dst)
        self._num_dst = num_dst

    def _edges(self, edge_label_index, edge_label, edge_label_time):
        """(edge type, link split or None, src, dst, label, time) as int64 arrays."""
        schema = self.schema
        if isinstance(edge_label_index, str):
            if edge_label_index not in schema.link_splits:
                raise ValueError(f"edge_label_index {edge_label_index!r}: no such link split (the dataset has "
                                 f"{', '.join(schema.link_splits) or 'none'})")
            if edge_label is not None or edge_label_time is not None:
                raise ValueError("edge_label/edge_label_time with a link split: the split has its own")
            sp = schema.link_splits[edge_label_index]
            get = lambda what: self.client.split(f"link/{edge_label_index}/{what}")  # noqa: E731
            return (tuple(sp.edge_type), edge_label_index, get("src"), get("dst"),
                    get("label") if sp.labelled else None, get("time") if sp.timed else None)
        edge_type, index = schema.edge, edge_label_index
        if isinstance(edge_label_index, tuple) and len(edge_label_index) == 2 and not isinstance(
                edge_label_index[0], torch.Tensor) and isinstance(edge_label_index[0], (tuple, list, str)):
            edge_type, index = schema.edge_type(tuple(edge_label_index[0])), edge_label_index[1]
        elif not schema.homogeneous:
            raise ValueError("edge_label_index: a typed graph needs (edge type, [2, m] ids), (edge type, None) or a "
                             "link split name")
        if index is None:  # every edge of the type, as PyG does for a Data's edge_index
            gs = GraphStore(self.client)
            row, colptr = gs._get_edge_index(EdgeAttr(edge_type, EdgeLayout.CSC, True))
            dst = torch.repeat_interleave(torch.arange(colptr.numel() - 1), colptr.diff())
            index = torch.stack([row, dst])
        index = index if isinstance(index, torch.Tensor) else torch.as_tensor(np.asarray(index))
        if index.dim() != 2 or index.size(0) != 2:
            raise ValueError(f"edge_label_index must have shape [2, m], got {list(index.shape)}")
        src, dst = _long(index[0], "edge_label_index[0]"), _long(index[1], "edge_label_index[1]")
        for ids, t, what in ((src, edge_type[0], "source"), (dst, edge_type[2], "destination")):
            count = schema.node_types[t][0]
            if len(ids) and (ids.min() < 0 or ids.max() >= count):
                bad = ids[(ids < 0) | (ids >= count)][0]
                raise ValueError(f"edge_label_index: {what} id {bad} out of range for node type {t!r} "
                                 f"({count} nodes)")
        label = None if edge_label is None else _long(edge_label, "edge_label")
        time = None if edge_label_time is None else _long(edge_label_time, "edge_label_time")
        for arr, what in ((label, "edge_label"), (time, "edge_label_time")):
            if arr is not None and len(arr) != len(src):
                raise ValueError(f"{what} has {len(arr)} values for {len(src)} edges")
        return edge_type, None, src, dst, label, time

    def __len__(self):
        return self._num_batches(len(self.src))

    def _link(self):
        return dict(neg=self.neg, amount=self.amount, neg_weighted=self.neg_weighted,
                    keep_seed_edges=self.keep_seed_edges)

    def __iter__(self):
        epoch = self._next_epoch()
        if self.split is not None:
            link = dict(edge_type=self.edge_type, **self._link())
            return (self._convert(b.hetero, input_id=self._input_id(b)) for b in
                    self._stream(split=self.split, link=link, **self._stream_options(epoch)))
        return _prefetched(self._calls(epoch), self.prefetch)

    def _calls(self, epoch):
        """One link_sample per batch over this rank's share of a seeded
        permutation (the stream's plan, made here for explicit edges)."""
        share = self._share(len(self.src), epoch)
        pick = lambda a, p: None if a is None else a[p]  # noqa: E731
        for start in range(0, len(share), self.batch_size):
            pos = share[start:start + self.batch_size]
            if self.drop_last and len(pos) < self.batch_size:
                break
            req = dict(seed=_request_seed(), node_tables=self.node_tables, edge_tables=self.edge_tables,
                       dtype=self.dtype, want_edge_ids=True, frontier="new", **self.options, **self._link())
            h = self._sampled(self._connection().link_sample, self.edge_type, self.src[pos], self.dst[pos],
                              num_neighbors=self.num_neighbors, label=pick(self.label, pos), time=pick(self.time, pos),
                              **req)
            data = self._convert(h, input_id=torch.from_numpy(pos))
            h.release()  # its arrays keep it (and its slot) while the batch's tensors live
            yield data

    def _convert(self, h, input_id=None):
        copy = self.copy
        data = _to_pyg(self.schema, _read_batch(h, copy=copy))
        triplet = self.neg == "triplet"
        fields = _link_fields(h, triplet, copy=copy)
        s, _, d = self.edge_type
        if input_id is None:  # a link stream's batch: find its positives in the split
            eli = h.edge_label_index if not triplet else np.stack([h.src_index, h.dst_pos_index])
            # positives come first; with binary negatives they are the nonzero labels
            pos = len(h.src_index) if triplet else int(np.count_nonzero(h.edge_label))
            src = np.asarray(h.nodes[s])[np.asarray(eli[0][:pos])]
            dst = np.asarray(h.nodes[d])[np.asarray(eli[1][:pos])]
            input_id = _find(self._lookup, src * self._num_dst + dst)
        if self.schema.homogeneous:
            store_src = store_dst = store_edge = data
        else:
            store_src, store_dst, store_edge = data[s], data[d], data[self.edge_type]
        store_edge.input_id = input_id
        if triplet:
            store_src.src_index, store_dst.dst_pos_index = fields[0], fields[1]
            store_dst.dst_neg_index = fields[2].squeeze(-1)
        else:
            store_edge.edge_label_index, store_edge.edge_label = fields[0], fields[1]
            if fields[2] is not None:
                store_edge.edge_label_time = fields[2]
        return self._finish(data)


def _default_prefetch(client):
    """Two batches ahead per producer: one being made, one ready. A stream
    over unix:// has a producer per connection thread (client.h), elsewhere
    one. With only one batch ahead each, a producer that finished waits for
    the trainer to take the batch before its own, and at two threads the
    cores were idle 29% of the time (docs/benchmarks.md, "Peers"). This is
    the streams' own default (stream_open.c, default_prefetch); the loader
    needs the number before its stream exists (its per-call path's
    connection and thread), so it is worked out here too."""
    producers = max(1, int(client._opts.threads)) if client.transport == "unix" else 1
    return min(16, 2 * producers)


def _prefetched(batches, depth):
    """Iterates `batches` on a background thread, `depth` ahead (featstore's
    calls release the GIL, so sampling overlaps the caller's training)."""
    import queue
    import threading
    if depth < 1:
        yield from batches
        return
    q, done, stop = queue.Queue(maxsize=depth), object(), threading.Event()

    def produce():
        try:
            for item in batches:
                while not stop.is_set():
                    try:
                        q.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            q.put(done)
        except BaseException as err:  # handed to the consumer
            q.put(err)

    thread = threading.Thread(target=produce, name="featstore-pyg-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            item = q.get()
            if item is done:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        thread.join()
