"""featstore.pyg.stores — PyG's remote-backend interfaces on a featstore
server: ``FeatureStore`` (node tables as read-only PyG attributes: "feat"
as ``x``, "labels" as ``y``) and ``GraphStore`` (every edge type,
read-only, in CSC layout), ``stores`` (the pair on one connection), and
``_client_of``, how a sampler or loader reaches the server from its
``data`` argument.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch_geometric.data import FeatureStore as _PygFeatureStore
from torch_geometric.data import GraphStore as _PygGraphStore
from torch_geometric.data.feature_store import TensorAttr
from torch_geometric.data.graph_store import EdgeAttr, EdgeLayout

from ..client import Client
from .schema import ATTR_NAMES, ReadOnlyError, _check_options, _connect, _long, _open, _Schema

__all__ = ["FeatureStore", "GraphStore", "stores"]

Source = Any  # a URI (str or os.PathLike) or a featstore.Client


class _Served:
    """What both stores share: the connection (a URI, or a shared Client),
    the served dataset's schema, pickling for spawned DataLoader workers (by
    URI and connection options: they reconnect) and close()."""

    client: Client
    schema: _Schema
    _owns: bool

    def _serve(self, source: Source, connect_kwargs: dict[str, Any]) -> None:
        self.client, self._owns = _connect(source, connect_kwargs, type(self))
        self._source = source if not isinstance(source, Client) else source.uri
        self._connect_kwargs = connect_kwargs
        self.schema = _Schema(self.client.info())

    def __getstate__(self) -> dict[str, Any]:
        return {"source": self._source, "kwargs": self._connect_kwargs}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["source"], **state["kwargs"])  # type: ignore[misc]

    def close(self) -> None:
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

    def __init__(self, source: Source, **connect_kwargs: Any) -> None:
        super().__init__()
        self._serve(source, connect_kwargs)

    def _put_tensor(self, tensor: Any, attr: TensorAttr) -> bool:
        raise ReadOnlyError("FeatureStore")

    def _remove_tensor(self, attr: TensorAttr) -> bool:
        raise ReadOnlyError("FeatureStore")

    def _get_tensor_size(self, attr: TensorAttr) -> tuple[int, ...]:
        node_type = self.schema.node_type(attr.group_name)
        table = self.schema.table(node_type, attr.attr_name)
        info = self.schema.node_types[node_type][1][table]
        return (info.rows,) if table == "labels" else (info.rows, info.dim)

    def get_all_tensor_attrs(self) -> list[TensorAttr]:
        return [TensorAttr(group_name=self.schema.group(t), attr_name=ATTR_NAMES.get(k, k))
                for t, (_, tables) in self.schema.node_types.items() for k in tables]

    def _get_tensor(self, attr: TensorAttr) -> torch.Tensor:
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

    def _gather(self, node_type: str, table: str, ids: np.ndarray) -> torch.Tensor:
        """Rows ids of table, copied out in chunks (the result outlives any batch)."""
        info = self.schema.node_types[node_type][1][table]
        chunks: list[np.ndarray] = []
        for start in range(0, max(len(ids), 1), 1 << 16):
            part = ids[start:start + (1 << 16)]
            if self.schema.homogeneous:
                with self.client.gather(part, table) as b:
                    rows = np.array(b.features)
            else:  # heterogeneous graphs: a zero-fanout hetero request gathers the seeds' rows
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

    def __init__(self, source: Source, **connect_kwargs: Any) -> None:
        super().__init__()
        self._serve(source, connect_kwargs)

    def _put_edge_index(self, edge_index: Any, edge_attr: EdgeAttr) -> bool:
        raise ReadOnlyError("GraphStore")

    def _remove_edge_index(self, edge_attr: EdgeAttr) -> bool:
        raise ReadOnlyError("GraphStore")

    def get_all_edge_attrs(self) -> list[EdgeAttr]:
        out: list[EdgeAttr] = []
        for e in self.schema.edge_types:
            size = (self.schema.node_types[e[0]][0], self.schema.node_types[e[2]][0])
            out.append(EdgeAttr(None if self.schema.homogeneous else e, EdgeLayout.CSC, True, size))
        return out

    def _get_edge_index(self, edge_attr: EdgeAttr) -> tuple[torch.Tensor, torch.Tensor]:
        e = self.schema.edge_type(edge_attr.edge_type)
        if edge_attr.layout != EdgeLayout.CSC:
            raise ValueError(f"featstore serves edge type {e!r} in CSC layout (ask for layout='csc'); "
                             f"torch_geometric converts it with to_torch_coo / to_torch_csr")
        num_dst = self.schema.node_types[e[2]][0]
        colptr: list[np.ndarray] = [np.zeros(1, np.int64)]
        rows: list[np.ndarray] = []
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


def stores(source: Source, **connect_kwargs: Any) -> tuple[FeatureStore, GraphStore]:
    """(FeatureStore, GraphStore) sharing one connection: PyG's ``data=``."""
    client, _ = _connect(source, connect_kwargs, stores)
    fs, gs = FeatureStore(client), GraphStore(client)
    fs._owns = True  # the pair's connection closes with the feature store
    return fs, gs


def _client_of(data: Any, connect_kwargs: dict[str, Any], caller: Any) -> tuple[Client, _Schema, bool]:
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
