"""featstore.hetero — heterogeneous-graph sampling: HeteroBatch and the requests of
``Client.hetero_sample`` and ``Client.link_sample`` (fs_hetero_sample,
fs_link_sample; featstore/types.h and featstore/client.h, since 1.3).

A hetero batch holds every node type and edge type of the served graph, in
the server's order. Per node type, local ids are the seeds first (in the
order given, duplicates merged), then first appearance. Per (hop, edge type)
a ``Block`` (featstore.batch) joins destinations of the edge type's dst
type to sources of its src type (messages flow src -> dst):

- ``frontier="all"`` (DGL blocks; use it for layered models): block h of
  edge type (s, r, d) has destinations ``[0, num_dst)`` of type d, that is
  every d node reached before hop h (``count_after[d][h]``), and sources
  ``[0, num_src)`` of type s, every s node after hop h
  (``count_after[s][h + 1]``). A model of L layers runs its input layer on
  hop L-1 and its output layer on hop 0, whose destinations start with the
  seeds. An edge type with fanout 0 at a hop has an empty block there
  (``num_dst`` 0, not ``count_after``): take the destination count from
  ``count_after``.
- ``frontier="new"`` (PyG): hop h expands only the nodes first reached at
  hop h-1 (the seeds at hop 0): ``edge_dst`` holds their local ids, and
  ``dst_offsets`` counts from the first of them (``count_after[d][h-1]``).

Lifetime: a HeteroBatch owns its fs_hetero_batch_t exactly as a Batch owns
its fs_batch_t (featstore.batch's module comment): arrays are read-only
zero-copy views that hold the C batch (and, over unix://, its result slot)
until they are gone; after ``release()`` (``free()``, the end of a ``with``
block) every attribute raises ``BatchReleasedError``. The HeteroBatch of a
hetero or link stream's batch (``StreamBatch.hetero``, featstore.stream) is
a view of memory its StreamBatch owns: it ends with the StreamBatch.
"""
from __future__ import annotations

import ctypes
import os
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from . import _lib
from ._convert import NP_DTYPES as _NP_DTYPES
from ._convert import dtype_code as _dtype_code
from ._convert import dtype_name as _dtype_name
from ._convert import ids as _ids
from ._convert import SAMPLE_MODES, address, seed64
from ._lib import lib
from .batch import _batch_field as _field
from .batch import _block, _Handle, _Releasable, _SlotUse, _view
from .errors import Error, Status

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ._torch import TorchHeteroBatch

    EdgeType = tuple[str, str, str]  # (src, rel, dst)

__all__ = ["HeteroBatch", "FRONTIERS", "TEMPORAL", "NEGATIVES"]

FRONTIERS = tuple(_lib.FS_FRONTIER)                              # "new", "all"
TEMPORAL = tuple(t for t in _lib.FS_TEMPORAL if t is not None)   # "uniform", "last"
NEGATIVES = tuple(n for n in _lib.FS_NEG if n is not None)       # "binary", "triplet"


def require_hetero() -> None:
    """An Error (UNSUPPORTED) unless the loaded library has the hetero calls."""
    if not _lib.typed:
        raise Error(Status.UNSUPPORTED, f"{_lib.path} is libfeatstore {_lib.version}, which has no hetero sampling "
                                        f"(fs_hetero_sample, fs_link_sample): install libfeatstore 1.3 or later")


def require_typed() -> None:
    """Deprecated since 1.5: ``require_hetero`` ("hetero" is the API's word)."""
    from ._deprecation import deprecated
    deprecated("featstore.hetero.require_typed is deprecated: use require_hetero")
    require_hetero()


# ---- requests ---------------------------------------------------------------------

def _etype(key: Any, what: str) -> EdgeType:
    """An edge type key as a (src, rel, dst) tuple of non-empty strings, or a TypeError naming it."""
    if not (isinstance(key, tuple) and len(key) == 3 and all(isinstance(k, str) and k for k in key)):
        raise TypeError(f"{what}: edge type {key!r} must be a (src, rel, dst) tuple of names")
    return key


def _type_name(name: Any, what: str) -> str:
    if not isinstance(name, str) or not name:
        raise TypeError(f"{what}: node type {name!r} must be a non-empty string")
    return name


def _times(values: ArrayLike, n: int, what: str) -> np.ndarray:
    """An int64 array of n times (any sign), or a clear error."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional, got shape {arr.shape}")
    if arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"{what} must be integers, got dtype {arr.dtype}")
    if len(arr) != n:
        raise ValueError(f"{what} has {len(arr)} entries for {n} seeds")
    return np.ascontiguousarray(arr, dtype=np.int64)


def _names(values: str | Sequence[str] | None, what: str) -> tuple[str, ...]:
    """A tuple of table names (a single string is one name; None is none)."""
    if values is None:
        return ()
    if isinstance(values, str):
        values = (values,)
    out = tuple(values)
    for v in out:
        if not isinstance(v, str) or not v:
            raise TypeError(f"{what}: table name {v!r} must be a non-empty string")
    return out


def _seed_groups(seeds: Any) -> list[tuple[str, np.ndarray]]:
    """[(type, int64 ids)] from a dict type -> ids (one group per key, in
    dict order) or a sequence of (type, ids) pairs (several groups of one
    type allowed)."""
    items: Any
    if isinstance(seeds, dict):
        items = list(seeds.items())
    else:
        try:
            items = [tuple(pair) for pair in seeds]
        except TypeError:
            items = None
        if items is None or any(len(pair) != 2 for pair in items):
            raise TypeError("seeds must be a dict node type -> ids (or a list of (type, ids) pairs), got "
                            f"{type(seeds).__name__}")
    groups = [(_type_name(t, "seeds"), _ids(ids, f"seeds[{t!r}]")) for t, ids in items]
    if not groups:
        raise ValueError("seeds: no seed group (give a dict node type -> ids)")
    return groups


class _Request:
    """An fs_hetero_req_t and everything its pointers reach (kept alive with it)."""

    def __init__(self, num_neighbors: Mapping[EdgeType, Sequence[int]], seed: int, mode: str | Sequence[str],
                 frontier: str, disjoint: bool, temporal: str | None, time_strict: bool, time_window: int,
                 node_tables: str | Sequence[str] | None, edge_tables: str | Sequence[str] | None,
                 dtype: str | None, edge_ids: bool) -> None:
        if not isinstance(num_neighbors, dict) or not num_neighbors:
            raise ValueError("num_neighbors must be a non-empty dict (src, rel, dst) -> fanout per hop")
        hops: int | None = None
        entries = []
        for key, fanouts in num_neighbors.items():
            key = _etype(key, "num_neighbors")
            if isinstance(fanouts, (int, np.integer)) or isinstance(fanouts, str):
                raise TypeError(f"num_neighbors[{key!r}] must be a list of fanouts, one per hop, got {fanouts!r}")
            fanouts = [int(f) for f in fanouts]
            if hops is None:
                hops = len(fanouts)
                if not 1 <= hops <= _lib.FS_MAX_HOPS:
                    raise ValueError(f"num_neighbors[{key!r}]: need 1..{_lib.FS_MAX_HOPS} hops, got {hops}")
            elif len(fanouts) != hops:
                raise ValueError(f"num_neighbors[{key!r}] has {len(fanouts)} hops, others {hops}: every edge type "
                                 f"needs one fanout per hop")
            for h, f in enumerate(fanouts):
                if f < _lib.FS_FANOUT_ALL:
                    raise ValueError(f"num_neighbors[{key!r}][{h}] = {f}: must be > 0, 0 (none) or -1 (all)")
            entries.append((key, fanouts))
        hops = int(hops or 0)  # num_neighbors is not empty: set by its first entry
        modes = [mode] * hops if isinstance(mode, str) else list(mode)
        if len(modes) != hops:
            raise ValueError(f"mode: {len(modes)} modes for {hops} hops")
        for m in modes:
            if m not in SAMPLE_MODES:
                raise ValueError(f"unknown sampling mode {m!r} (one of {', '.join(SAMPLE_MODES)})")
        if frontier not in _lib.FS_FRONTIER:
            raise ValueError(f"frontier {frontier!r}: one of {', '.join(FRONTIERS)}")
        if temporal not in _lib.FS_TEMPORAL:
            raise ValueError(f"temporal {temporal!r}: None, or one of {', '.join(TEMPORAL)}")
        seed64(seed)
        if int(time_window) < 0:
            raise ValueError(f"window {time_window} must be >= 0 (0 = no window)")
        self.num_hops = hops
        self.fanouts = (_lib.HeteroFanout * len(entries))()
        for i, ((s, r, d), fanouts) in enumerate(entries):
            self.fanouts[i].src, self.fanouts[i].rel, self.fanouts[i].dst = s.encode(), r.encode(), d.encode()
            for h, f in enumerate(fanouts):
                self.fanouts[i].fanout[h] = f
        self.node_tables = _names(node_tables, "node_tables")
        self.edge_tables = _names(edge_tables, "edge_tables")
        self._nt = (ctypes.c_char_p * max(len(self.node_tables), 1))(*[t.encode() for t in self.node_tables])
        self._et = (ctypes.c_char_p * max(len(self.edge_tables), 1))(*[t.encode() for t in self.edge_tables])
        self.c = _lib.HeteroReq.new(
            num_hops=hops, num_fanouts=len(entries), fanouts=self.fanouts, seed=int(seed),
            want_edge_ids=int(bool(edge_ids)), frontier=_lib.FS_FRONTIER[frontier], disjoint=int(bool(disjoint)),
            temporal=_lib.FS_TEMPORAL[temporal], strict=int(bool(time_strict)), window=int(time_window),
            num_node_tables=len(self.node_tables), node_tables=self._nt if self.node_tables else None,
            num_edge_tables=len(self.edge_tables), edge_tables=self._et if self.edge_tables else None,
            out_dtype=_dtype_code(dtype))
        for h, m in enumerate(modes):
            self.c.mode[h] = SAMPLE_MODES[m]


def _p(arr: np.ndarray | None) -> Any:
    return arr.ctypes.data_as(_lib._p_i64) if arr is not None else None


class _Seeds:
    """An fs_hetero_seeds_t array and the arrays it points to."""

    def __init__(self, seeds: Any, seed_time: Mapping[str, ArrayLike] | None, temporal: str | None) -> None:
        self.groups = _seed_groups(seeds)
        times = {}
        if seed_time is not None:
            if temporal is None:
                raise ValueError("seed_time is given but temporal is None: times only matter to a temporal request")
            if not isinstance(seed_time, dict):
                raise TypeError("seed_time must be a dict node type -> int64 times (one per seed of that type)")
            types = [t for t, _ in self.groups]
            for t in seed_time:
                if t not in types:
                    raise ValueError(f"seed_time[{t!r}]: no seed group of node type {t!r}")
                if types.count(t) > 1:
                    raise ValueError(f"seed_time[{t!r}]: several seed groups of type {t!r}; give (type, ids) pairs "
                                     f"one type at a time")
            times = {t: _times(v, len(dict(self.groups)[t]), f"seed_time[{t!r}]") for t, v in seed_time.items()}
        self.times = [times.get(t) for t, _ in self.groups]
        self.c = (_lib.HeteroSeeds * len(self.groups))()
        for i, ((t, ids), tm) in enumerate(zip(self.groups, self.times)):
            self.c[i].type, self.c[i].count, self.c[i].ids, self.c[i].time = t.encode(), len(ids), _p(ids), _p(tm)


def hetero_call(client: Any, seeds: Any, num_neighbors: Mapping[EdgeType, Sequence[int]], seed: int = 0,
                mode: str | Sequence[str] = "uniform", frontier: str = "new", disjoint: bool = False,
                temporal: str | None = None, seed_time: Mapping[str, ArrayLike] | None = None,
                time_strict: bool = False, time_window: int = 0, node_tables: Sequence[str] = (),
                edge_tables: Sequence[str] = (), dtype: str | None = None, edge_ids: bool = False) -> HeteroBatch:
    """Client.hetero_sample (see there)."""
    require_hetero()
    req = _Request(num_neighbors, seed, mode, frontier, disjoint, temporal, time_strict, time_window, node_tables,
                   edge_tables, dtype, edge_ids)
    groups = _Seeds(seeds, seed_time, temporal)
    out = ctypes.POINTER(_lib.HeteroBatchC)()
    use = client._call(lib.fs_hetero_sample, groups.c, len(groups.groups), ctypes.byref(req.c), ctypes.byref(out))
    return HeteroBatch(out, use, req.node_tables, req.edge_tables)


class _Link:
    """An fs_link_req_t and the arrays its pointers reach (kept alive with
    it): a link_sample call's seed edges, or none (src None: a link
    stream's template, whose edges the stream takes from its link split)."""

    def __init__(self, edge_type: EdgeType | list[str], neg: str | None = None, amount: float = 1.0,
                 neg_weighted: bool = False, neg_strict: bool = False, keep_seed_edges: bool = False,
                 src: ArrayLike | None = None, dst: ArrayLike | None = None, edge_label: ArrayLike | None = None,
                 edge_label_time: ArrayLike | None = None, what: str = "link_sample") -> None:
        s, r, d = _etype(tuple(edge_type) if isinstance(edge_type, list) else edge_type, what)
        src_ids = dst_ids = labels = times = None
        if src is not None:
            src_ids, dst_ids = _ids(src, "src"), _ids(dst if dst is not None else [], "dst")
            if len(src_ids) != len(dst_ids):
                raise ValueError(f"src has {len(src_ids)} ids and dst {len(dst_ids)}: one of each per seed edge")
            labels = None if edge_label is None else _times(edge_label, len(src_ids), "label")
            times = None if edge_label_time is None else _times(edge_label_time, len(src_ids), "time")
        if neg not in _lib.FS_NEG:
            raise ValueError(f"neg {neg!r}: None, or one of {', '.join(NEGATIVES)}")
        amount = float(amount)
        if not amount >= 0 or amount == float("inf"):
            raise ValueError(f"amount {amount!r}: must be a finite number >= 0")
        if neg == "triplet" and (amount < 1 or amount != int(amount)):
            raise ValueError(f"amount {amount!r}: triplet negatives need an integer k >= 1 per positive")
        self.arrays = (src_ids, dst_ids, labels, times)
        self.c = _lib.LinkReq.new(src=s.encode(), rel=r.encode(), dst=d.encode(),
                                  count=0 if src_ids is None else len(src_ids), src_ids=_p(src_ids),
                                  dst_ids=_p(dst_ids), label=_p(labels), time=_p(times), neg=_lib.FS_NEG[neg],
                                  amount=amount,
                                  neg_weighted=int(bool(neg_weighted)), strict=int(bool(neg_strict)),
                                  keep_seed_edges=int(bool(keep_seed_edges)))


def link_call(client: Any, edge_type: EdgeType, src: ArrayLike, dst: ArrayLike,
              num_neighbors: Mapping[EdgeType, Sequence[int]], edge_label: ArrayLike | None = None,
              edge_label_time: ArrayLike | None = None, neg: str | None = None, amount: float = 1.0,
              neg_weighted: bool = False, neg_strict: bool = False, keep_seed_edges: bool = False, seed: int = 0,
              mode: str | Sequence[str] = "uniform", frontier: str = "new", disjoint: bool = False,
              temporal: str | None = None, time_strict: bool = False, time_window: int = 0,
              node_tables: Sequence[str] = (), edge_tables: Sequence[str] = (), dtype: str | None = None,
              edge_ids: bool = False) -> HeteroBatch:
    """Client.link_sample (see there)."""
    require_hetero()
    link = _Link(edge_type, neg, amount, neg_weighted, neg_strict, keep_seed_edges, src=src, dst=dst,
                 edge_label=edge_label, edge_label_time=edge_label_time)
    req = _Request(num_neighbors, seed, mode, frontier, disjoint, temporal, time_strict, time_window, node_tables,
                   edge_tables, dtype, edge_ids)
    out = ctypes.POINTER(_lib.HeteroBatchC)()
    use = client._call(lib.fs_link_sample, ctypes.byref(link.c), ctypes.byref(req.c), ctypes.byref(out))
    return HeteroBatch(out, use, req.node_tables, req.edge_tables)


# ---- the batch --------------------------------------------------------------------------

class _HeteroHandle(_Handle):
    """Owns one fs_hetero_batch_t * (as _Handle owns an fs_batch_t *)."""
    _FREE = "fs_hetero_batch_free"


def _rows(h: _Handle, r: Any) -> np.ndarray | None:
    """One fs_rows_t as an array, None when the type has no such table."""
    if not r.data or r.dtype not in _NP_DTYPES:
        return None
    return _view(h, r.data, (r.rows, r.dim), _NP_DTYPES[r.dtype])


def _opt(h: _Handle, pointer: Any, shape: tuple) -> np.ndarray | None:
    return _view(h, pointer, shape, np.int64) if pointer else None


def _label_index(h: _Handle, src: Any, dst: Any, n: int) -> np.ndarray:
    """edge_label_index [2, n]: one view when the library put the two rows
    end to end, else a stacked copy (2 x n ids)."""
    a, b = address(src), address(dst)
    if n and b == a + 8 * n:
        return _view(h, src, (2, n), np.int64)
    return np.stack([_view(h, src, (n,), np.int64), _view(h, dst, (n,), np.int64)])


def _read(h: _Handle, b: Any, node_tables: tuple[str, ...], edge_tables: tuple[str, ...]) -> dict[str, Any]:
    """Every field of a live fs_hetero_batch_t as Python values and views."""
    H, T, E = b.num_hops, b.num_node_types, b.num_edge_types
    types = [b.types[t] for t in range(T)]
    names = [t.name.decode() for t in types]
    etypes = [(e.src.decode(), e.rel.decode(), e.dst.decode()) for e in (b.etypes[i] for i in range(E))]
    f: dict[str, Any] = {"node_types": names, "edge_types": etypes, "num_hops": H, "nodes": {}, "batch": {},
                         "time": {}, "count_after": {}, "x": {}, "dtypes": {}, "blocks": {}, "edge_attr": {}}
    for name, t in zip(names, types):
        n = t.num_nodes
        f["nodes"][name] = _view(h, t.nodes, (n,), np.int64)
        f["batch"][name] = _opt(h, t.batch, (n,))
        f["time"][name] = _opt(h, t.time, (n,))
        f["count_after"][name] = tuple(int(t.count_after[i]) for i in range(H + 1)) if t.count_after else (n,) * (H + 1)
        x: dict[str, Any] = {}
        for k, table in enumerate(node_tables[:b.num_node_tables]):
            rows = t.tables[k] if t.tables else None
            if rows is not None and rows.data:
                x[table] = _rows(h, rows)
                f["dtypes"][(name, table)] = _dtype_name(rows.dtype)
        f["x"][name] = x
    K = b.num_edge_tables
    for e, et in enumerate(etypes):
        f["blocks"][et] = [_block(h, b.blocks[hop * E + e]) for hop in range(H)]
        attrs = []
        for hop in range(H):
            a: dict[str, Any] = {}
            for k, table in enumerate(edge_tables[:K] if b.edge_tables else ()):
                rows = b.edge_tables[(hop * E + e) * K + k]
                if rows.data:
                    a[table] = _rows(h, rows)
                    f["dtypes"][(et, table)] = _dtype_name(rows.dtype)
            attrs.append(a)
        f["edge_attr"][et] = attrs
    groups = []
    for g in range(b.num_groups):
        groups.append((names[b.group_type[g]], _view(h, b.seed_local[g], (b.group_count[g],), np.int64)))
    f["seed_groups"] = groups
    per_type: dict[str, list[np.ndarray]] = {}
    for t, ids in groups:
        per_type.setdefault(t, []).append(ids)
    f["seed_local"] = {t: v[0] for t, v in per_type.items() if len(v) == 1}
    # link prediction
    L = b.num_labels
    link = b.label_src or b.src_index
    f["link_types"] = (names[b.link_src_type], names[b.link_dst_type]) if link else None
    f["edge_label_index"] = _label_index(h, b.label_src, b.label_dst, L) if b.label_src and b.label_dst else None
    f["edge_label"] = _opt(h, b.label, (L,))
    f["edge_label_time"] = _opt(h, b.label_time, (L,))
    P, k = b.num_pos, b.num_neg_per_src
    f["src_index"] = _opt(h, b.src_index, (P,))
    f["dst_pos_index"] = _opt(h, b.dst_pos_index, (P,))
    f["dst_neg_index"] = _opt(h, b.dst_neg_index, (P, k))
    return f


class HeteroBatch(_Releasable):
    """One hetero or link-prediction batch (fs_hetero_batch_t *). See the
    module comment for local ids, blocks and the lifetime rule.

    `handle`: the batch lies inside a larger result that handle owns (a
    hetero or link stream's batch, ``StreamBatch.hetero``): the HeteroBatch
    views it and frees nothing itself.

    Every dict is keyed by node type name (``nodes``, ``x``, ...) or by edge
    type tuple ``(src, rel, dst)`` (``blocks``, ``edge_attr``), covering every
    type of the graph in the server's order (``node_types``, ``edge_types``).
    """

    _NAME = "HeteroBatch"
    _COPY_HINT = "np.array(b.nodes['paper'])"
    _REGION = "fs_hetero_batch_region"

    def __init__(self, ptr: Any, use: _SlotUse | None = None, node_tables: Sequence[str] = (),
                 edge_tables: Sequence[str] = (), handle: _Handle | None = None) -> None:
        h = handle if handle is not None else _HeteroHandle(ptr, use if use is not None else _SlotUse())
        self._owns_handle = handle is None
        self._pid = os.getpid()
        self._fields = _read(h, ptr.contents, tuple(node_tables), tuple(edge_tables))
        self._fields.update(handle=h, ptr=ptr)  # region(): this batch's memory, whoever owns the handle

    node_types = _field("node_types", "node type names, in the server's order")
    edge_types = _field("edge_types", "edge types as (src, rel, dst) tuples, in the server's order")
    num_hops = _field("num_hops", "hops sampled")
    nodes = _field("nodes", "type -> int64 [n]: the global id (of that type) of each local id")
    batch = _field("batch", "type -> int64 [n]: the seed each node descends from (disjoint), or None")
    time = _field("time", "type -> int64 [n]: each node's time (temporal), or None")
    count_after = _field("count_after", "type -> (nodes after the seeds, after hop 0, ..., after the last hop)")
    x = _field("x", "type -> {table: [n, dim] rows of every node of the type}, only the tables the type has "
                    "(bfloat16 as uint16 bits)")
    seed_groups = _field("seed_groups", "[(type, int64 local ids)] per seed group, in the request's order (a "
                                        "link batch: the seed edges' sources, then their destinations)")
    seed_local = _field("seed_local", "type -> int64 local ids of that type's seed group; types with several "
                                      "groups are only in seed_groups")
    blocks = _field("blocks", "(src, rel, dst) -> [Block per hop]; hop 0 starts from the seeds")
    edge_attr = _field("edge_attr", "(src, rel, dst) -> [{table: rows of the block's edges} per hop]")
    link_types = _field("link_types", "(src type, dst type) of a link batch's seed edges, None otherwise")
    edge_label_index = _field("edge_label_index", "int64 [2, L] local ids (src type, dst type) of the labelled "
                                                  "pairs: positives, then negatives; or None. A view when the "
                                                  "library keeps the two rows end to end, else a copy")
    edge_label = _field("edge_label", "int64 [L]: given labels (+ 1 with binary negatives), 1 without, 0 for "
                                      "negatives; or None")
    edge_label_time = _field("edge_label_time", "int64 [L] each pair's time when the seed edges had times, or None")
    src_index = _field("src_index", "triplet: int64 [P] local ids of the positives' sources, else None")
    dst_pos_index = _field("dst_pos_index", "triplet: int64 [P] local ids of the positives' destinations, else None")
    dst_neg_index = _field("dst_neg_index", "triplet: int64 [P, k] local ids of each positive's negatives, else None")

    def dtype(self, type_: str | EdgeType, table: str) -> str:
        """The featstore dtype name ("float32", "bfloat16", ...) of
        x[type_][table] (type_ a node type) or of edge_attr[type_][hop][table]
        (type_ an edge type tuple)."""
        return self._live("dtype()")["dtypes"][(type_, table)]

    free = _Releasable.release

    def torch(self) -> TorchHeteroBatch:
        """The arrays as torch tensors sharing their memory (torch.from_numpy):
        a ``TorchHeteroBatch`` with the same fields and dicts. Same lifetime
        rule; the tensors must not be written to."""
        self._live("torch()")
        from ._torch import hetero_to_torch  # torch is optional: imported only here
        return hetero_to_torch(self)

    def __repr__(self) -> str:
        if self.released:
            return "<featstore.HeteroBatch released>"
        if self._pid != os.getpid():
            return f"<featstore.HeteroBatch of process {self._pid}>"
        f = self._live("repr")
        sizes = " ".join(f"{t}={len(f['nodes'][t])}" for t in f["node_types"])
        return f"<featstore.HeteroBatch hops={f['num_hops']} {sizes}>"
