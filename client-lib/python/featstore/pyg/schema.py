"""featstore.pyg.schema — what featstore.pyg's stores, sampler and
loaders share: the served dataset as PyG sees it (``_Schema``: node and
edge types, tables as PyG attributes, ``ATTR_NAMES``), the connection
(a URI or a shared ``featstore.Client``, its options checked by name),
PyG's sampler options as featstore's request options, and
``ReadOnlyError``.
"""
from __future__ import annotations

import difflib
import inspect
import os
from typing import Any, Callable, Sequence, Tuple

import numpy as np
import torch

from ..client import Client
from ..errors import Error, Status
from ..info import Info

__all__ = ["ATTR_NAMES", "EDGE_ATTR_NAMES", "ReadOnlyError"]

EdgeType = Tuple[str, str, str]  # (src, rel, dst); PyG's EdgeType

ATTR_NAMES = {"feat": "x", "labels": "y"}     # featstore table -> PyG attribute (other tables keep their names)
EDGE_ATTR_NAMES = {"feat": "edge_attr"}       # edge table -> PyG attribute


class ReadOnlyError(Error, TypeError):
    """A write to a featstore store: the server's dataset is read-only."""

    def __init__(self, what: str) -> None:
        super().__init__(Status.UNSUPPORTED, f"featstore's {what} is read-only: the served dataset cannot be changed "
                                         f"from a client (write a new dataset and serve it instead)")


def _parameters(f: Callable[..., Any]) -> list[str]:
    """The keyword names f (a function or a class) takes, **kwargs aside."""
    return [p.name for p in inspect.signature(f).parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def _check_options(caller: Callable[..., Any], connect_kwargs: dict[str, Any]) -> None:
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


def _connect(source: str | os.PathLike[str] | Client, connect_kwargs: dict[str, Any],
             caller: Callable[..., Any]) -> tuple[Client, bool]:
    """A Client from a URI or a Client (shared, not owned), for caller
    (whose **connect_kwargs they are)."""
    _check_options(caller, connect_kwargs)
    return _open(source, connect_kwargs)


def _open(source: Any, connect_kwargs: dict[str, Any]) -> tuple[Client, bool]:
    if isinstance(source, Client):
        if connect_kwargs:
            raise TypeError(f"connection options {sorted(connect_kwargs)} given with an open Client")
        return source, False
    if isinstance(source, (str, os.PathLike)):
        return Client(os.fspath(source), **connect_kwargs), True
    raise TypeError(f"expected a featstore URI (unix://..., grpc://...) or a featstore.Client, got {source!r}")


def _tensor(array: np.ndarray) -> torch.Tensor:
    """torch.from_numpy on a read-only featstore view, without torch's
    warning that it cannot protect read-only memory (the lifetime rule
    already says these tensors are read-only)."""
    from .._torch import tensor
    return tensor(array)


def _long(values: Any, what: str) -> np.ndarray:
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

    def __init__(self, info: Info) -> None:
        self.homogeneous = not info.hetero
        self.node_types = {name: (t.count, dict(t.tables)) for name, t in info.node_types.items()}
        self.edge_types = {tuple(e): (e.num_edges, dict(e.tables), e.weighted, e.timed) for e in info.edge_types}
        if not self.node_types:  # a server before 1.3: the homogeneous graph's default names
            self.node_types = {"node": (info.num_nodes, dict(info.tables))}
            self.edge_types = {("node", "to", "node"): (info.num_edges, {}, info.weighted, False)}
        # a homogeneous graph's one node type and edge type ("node", ("node", "to", "node") unless named)
        self.node, self.edge = next(iter(self.node_types)), next(iter(self.edge_types))
        self.num_classes = info.num_classes
        self.link_splits = dict(info.link_splits)

    def group(self, node_type: str) -> str | None:
        """PyG's group name of a node type (None for a homogeneous graph)."""
        return None if self.homogeneous else node_type

    def node_type(self, group: str | None) -> str:
        if self.homogeneous and group in (None, self.node):
            return self.node
        if group not in self.node_types or self.homogeneous:
            raise KeyError(f"no node type {group!r} (the graph has {', '.join(self.node_types)})")
        return group

    def edge_type(self, key: Any) -> EdgeType:
        if self.homogeneous and key in (None, self.edge):
            return self.edge
        key = tuple(key) if isinstance(key, (list, tuple)) else key
        if key not in self.edge_types or self.homogeneous:
            raise KeyError(f"no edge type {key!r} (the graph has {', '.join(map(str, self.edge_types))})")
        return key

    def table(self, node_type: str, attr_name: str) -> str:
        """The featstore table behind PyG attribute attr_name of node_type."""
        tables = self.node_types[node_type][1]
        for table in tables:
            if ATTR_NAMES.get(table, table) == attr_name:
                return table
        names = [ATTR_NAMES.get(t, t) for t in tables]
        raise KeyError(f"node type {node_type!r} has no attribute {attr_name!r} (it has {', '.join(names) or 'none'})")

    def fanouts(self, num_neighbors: Sequence[int] | dict[Any, Sequence[int]]) -> dict[EdgeType, list[int]]:
        """PyG's num_neighbors (a list for every edge type, or a dict per
        edge type) as featstore's dict (src, rel, dst) -> fanouts."""
        if isinstance(num_neighbors, dict):
            out: dict[EdgeType, list[int]] = {}
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


def _sampling_options(schema: _Schema, *, replace: bool = False, subgraph_type: Any = "directional",
                      disjoint: bool = False, temporal_strategy: str = "uniform", time_attr: str | None = None,
                      weight_attr: str | None = None, directed: bool = True) -> dict[str, Any]:
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


def _node_tables(schema: _Schema) -> tuple[str, ...]:
    """Every node table of any type, in a fixed order (the fused gather's list)."""
    seen: list[str] = []
    for _, tables in schema.node_types.values():
        seen += [t for t in tables if t not in seen]
    return tuple(seen)


def _edge_tables(schema: _Schema) -> tuple[str, ...]:
    seen: list[str] = []
    for _, tables, _, _ in schema.edge_types.values():
        seen += [t for t in tables if t not in seen]
    return tuple(seen)


def _request_seed() -> int:
    """A sampling seed from torch's generator, so torch.manual_seed repeats a run."""
    return int(torch.randint(0, 2**62, (1,)).item())
