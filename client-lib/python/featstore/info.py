"""featstore.info — what ``Client.info()`` reports (fs_info_t): ``Info``
with its tables (``TableInfo``), memory tiers (``TierInfo``), readers
(``ReaderInfo``) and, since 1.3, the graph's types (``NodeTypeInfo``,
``EdgeTypeInfo``, ``LinkSplitInfo``). Plain frozen values, copied out of
the C struct: they outlive the call and the connection.
"""
from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass, field
from typing import Any

from . import _lib
from ._convert import dtype_name

__all__ = ["TableInfo", "TierInfo", "ReaderInfo", "NodeTypeInfo", "EdgeTypeInfo", "LinkSplitInfo", "Info"]


@dataclass(frozen=True)
class TableInfo:
    """A table as a gather serves it by default (dtype None). A compressed
    table (``featstore compress``, since 1.5) is served as float32 [rows,
    dim]; ``codec`` ("narrow" or "int8") and its stored form, which
    ``dtype="stored"`` returns, are set only for one: an int8 table's
    stored rows are ``stored_dim`` = 8 + dim bytes (``featstore.dequantize``)."""
    name: str
    dtype: str
    rows: int
    dim: int
    codec: str | None = None
    stored_dtype: str | None = None
    stored_dim: int | None = None


@dataclass(frozen=True)
class TierInfo:
    """One memory tier of the served placement (tier 0: the dataset's files)."""
    kind: str            # "host", "pinned", "device", "sim_device"
    device: int          # -1 for host tiers
    capacity_bytes: int  # 0 = unlimited
    used_bytes: int


@dataclass(frozen=True)
class ReaderInfo:
    """A reader GPU's feature bytes by source ("local", "peer", "host"): the
    placement's prediction per mini-batch and what was measured since that
    placement started serving."""
    reader: int
    predicted_bytes: dict[str, float]
    measured_bytes: dict[str, int]


@dataclass(frozen=True)
class NodeTypeInfo:
    """A node type (since 1.3): ids 0..count-1; its splits are fetched with
    ``Client.split("TYPE/NAME")``."""
    name: str
    count: int
    tables: dict[str, TableInfo] = field(default_factory=dict)  # features, then "labels" when labelled
    num_classes: int = 0
    timed: bool = False    # has node timestamps
    splits: tuple[str, ...] = ()  # split names ("train", ...)


class EdgeTypeInfo(namedtuple("EdgeType", "src rel dst")):  # type: ignore[misc]
    """An edge type (since 1.3): the tuple (src, rel, dst) — equal to, and
    a dict key like, the plain tuple — with its facts as attributes:
    num_edges, weighted, timed, reverse (the edge type holding each edge
    reversed, as a (src, rel, dst) tuple, or None) and tables (name ->
    TableInfo, edge features by edge id)."""

    num_edges: int
    weighted: bool
    timed: bool
    reverse: tuple[str, str, str] | None
    tables: dict[str, TableInfo]

    def __new__(cls, src: str, rel: str, dst: str, num_edges: int = 0, weighted: bool = False, timed: bool = False,
                reverse: tuple[str, str, str] | None = None, tables: dict[str, TableInfo] | None = None
                ) -> EdgeTypeInfo:
        self = super().__new__(cls, src, rel, dst)
        self.num_edges, self.weighted, self.timed = num_edges, weighted, timed
        self.reverse, self.tables = reverse, dict(tables or {})
        return self

    def __repr__(self) -> str:
        return (f"EdgeTypeInfo({self.src!r}, {self.rel!r}, {self.dst!r}, num_edges={self.num_edges}, "
                f"weighted={self.weighted}, timed={self.timed}, reverse={self.reverse!r}, "
                f"tables={sorted(self.tables)!r})")


@dataclass(frozen=True)
class LinkSplitInfo:
    """A link-prediction split (since 1.3): `count` positive edges of
    `edge_type` (a (src, rel, dst) tuple). Its int64 arrays are fetched with
    ``Client.split("link/NAME/src")``, ".../dst", and when present
    ".../label" (labelled), ".../time" (timed) and ".../neg_dst" (num_neg > 0:
    [count * num_neg], reshape to (count, num_neg))."""
    name: str
    edge_type: tuple[str, str, str]
    count: int
    labelled: bool = False
    timed: bool = False
    num_neg: int = 0


@dataclass(frozen=True)
class Info:
    """What fs_info reports about the server: every list whole.

    Since 1.3 the graph's types too: node_types (name -> NodeTypeInfo),
    edge_types (EdgeTypeInfo, each a (src, rel, dst) tuple, in the server's
    order) and link_splits (name -> LinkSplitInfo). A homogeneous dataset is
    the node type "node" and the edge type ("node", "to", "node"); a
    heterogeneous one (``hetero``) leaves num_nodes, num_edges, tables and
    splits empty. ``typed`` is ``hetero`` under its 1.3 name (fs_info_t's
    field), kept."""
    server_version: str
    dataset: str
    num_nodes: int
    num_edges: int
    num_classes: int
    symmetric: bool
    weighted: bool
    tables: dict[str, TableInfo] = field(default_factory=dict)
    splits: tuple[str, ...] = ()
    tiers: tuple[TierInfo, ...] = ()
    readers: tuple[ReaderInfo, ...] = ()   # with a placement
    placement_generation: int = 1
    typed: bool = False
    node_types: dict[str, NodeTypeInfo] = field(default_factory=dict)  # in the server's order
    edge_types: tuple[EdgeTypeInfo, ...] = ()                          # in the server's order
    link_splits: dict[str, LinkSplitInfo] = field(default_factory=dict)
    row_tables: tuple[str, ...] = ()                     # 1.5: a labelled layout's row tables (by row)
    row_splits: dict[str, tuple[int, int]] = field(default_factory=dict)  # 1.5: name -> (first row, rows)

    @property
    def hetero(self) -> bool:
        """A heterogeneous graph: more than one node or edge type (only the
        hetero calls apply). The same as ``typed``, the 1.3 name."""
        return self.typed


def _table_infos(tables: Any, n: int) -> dict[str, TableInfo]:
    out = {}
    for t in tables[:n]:
        name = t.name.decode()
        out[name] = TableInfo(name, dtype_name(t.dtype), t.rows, t.dim)
    return out


def _info_types(i: Any) -> dict[str, Any]:
    """Info's 1.3 fields from an InfoC."""
    keys = [(e.src.decode(), e.rel.decode(), e.dst.decode()) for e in i.edge_types[:i.num_edge_types]]
    edge_types = tuple(
        EdgeTypeInfo(*keys[k], num_edges=e.num_edges, weighted=bool(e.weighted), timed=bool(e.timed),
                     reverse=keys[e.reverse] if 0 <= e.reverse < len(keys) else None,
                     tables=_table_infos(e.tables, e.num_tables))
        for k, e in enumerate(i.edge_types[:i.num_edge_types]))
    node_types = {}
    for t in i.node_types[:i.num_node_types]:
        name = t.name.decode()
        node_types[name] = NodeTypeInfo(name, t.count, _table_infos(t.tables, t.num_tables), t.num_classes,
                                        bool(t.timed), tuple(s.decode() for s in t.splits[:t.num_splits]))
    link_splits = {}
    for lsp in i.link_splits[:i.num_link_splits]:
        name = lsp.name.decode()
        link_splits[name] = LinkSplitInfo(name, keys[lsp.edge_type], lsp.count, bool(lsp.labelled), bool(lsp.timed),
                                          lsp.num_neg)
    return {"typed": bool(i.typed), "node_types": node_types, "edge_types": edge_types, "link_splits": link_splits}


def read_info(i: Any) -> Info:
    """An Info from a live fs_info_t (fields a library before 1.3 or 1.5
    lacks are left at their defaults)."""
    tables = _table_infos(i.tables, i.num_tables)
    for z in i.compressed[:i.num_compressed] if _lib.compressed else ():
        t = tables[z.table.decode()]
        tables[t.name] = TableInfo(t.name, t.dtype, t.rows, t.dim, z.codec.decode(), dtype_name(z.stored_dtype),
                                   z.stored_dim)
    sources = ("local", "peer", "host")
    tiers = tuple(TierInfo(t.kind.decode(), t.device, t.capacity_bytes, t.used_bytes) for t in i.tiers[:i.num_tiers])
    readers = tuple(ReaderInfo(r.reader, dict(zip(sources, r.predicted_bytes)), dict(zip(sources, r.measured_bytes)))
                    for r in i.readers[:i.num_readers])
    types = _info_types(i) if _lib.typed else {}  # a library before 1.3 has no such fields
    if _lib.rows:
        types["row_tables"] = tuple(i.row_tables[k].decode() for k in range(i.num_row_tables))
        types["row_splits"] = {r.name.decode(): (r.offset, r.count) for r in i.row_splits[:i.num_row_splits]}
    return Info(i.server_version.decode(), i.dataset.decode(), i.num_nodes, i.num_edges, i.num_classes,
                bool(i.symmetric), bool(i.weighted), tables, tuple(s.decode() for s in i.splits[:i.num_splits]), tiers,
                readers, i.placement_generation, **types)
