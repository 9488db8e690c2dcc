"""featstore.pyg.loader — ``NeighborLoader`` and ``LinkNeighborLoader``:
PyG's loaders, with PyG's arguments and output fields, backed by featstore
epoch streams (docs/api.md §11): the next batches are made by background
threads while the model trains, and ``rank``/``world_size`` give each DDP
rank its disjoint share.

Seeds a stream cannot take (explicit seed edges, seeds with given times)
are sampled one explicit call per batch, over the plan the stream would
follow (``featstore.EpochPlan``, the C library's) with its request seeds:
explicit edges equal to a link split's give the split's batches. The C
library also decides the loaders' default ``prefetch``
(``Client.default_prefetch``), so nothing of the plan is decided twice.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence

import numpy as np
import torch
from torch_geometric.data import Data, HeteroData
from torch_geometric.data.graph_store import EdgeAttr, EdgeLayout
from torch_geometric.sampler import NegativeSampling

from .. import _lib
from ..client import Client
from ..errors import Error, Status
from ..hetero import HeteroBatch
from ..plan import EpochPlan
from ..stream import StreamBatch
from .convert import _as_tensor, _link_fields, _read_batch, _to_pyg
from .prefetch import prefetched
from .sampler import _negatives
from .schema import _edge_tables, _long, _node_tables, _request_seed, _sampling_options
from .stores import GraphStore, _client_of

__all__ = ["NeighborLoader", "LinkNeighborLoader"]

Batch = Any  # a torch_geometric Data or HeteroData, or what transform makes of it


def _positions(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A lookup from id to its first position in ids: (order, sorted ids)."""
    order = np.argsort(ids, kind="stable")
    return order, ids[order]


def _find(lookup: tuple[np.ndarray, np.ndarray], values: np.ndarray) -> torch.Tensor:
    order, sorted_ids = lookup
    at = np.searchsorted(sorted_ids, values)
    return torch.from_numpy(order[np.minimum(at, len(order) - 1)])


def _dist(rank: int | None, world_size: int | None) -> tuple[int, int]:
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


def _refuse_dataloader_options(kwargs: dict[str, Any]) -> None:
    """A torch DataLoader option given to a featstore loader: a ValueError
    saying what to do instead (rather than Client's unexpected keyword)."""
    for name, instead in _DATALOADER_OPTIONS.items():
        if name in kwargs:
            raise ValueError(f"{name}: featstore.pyg's loaders are not torch DataLoaders: {instead}")


class _Loader:
    """What NeighborLoader and LinkNeighborLoader share: the connection,
    the epoch counter, the stream's options and the batch conversion."""

    def __init__(self, data: Any, num_neighbors: Any, batch_size: int, shuffle: bool, drop_last: bool,
                 sampler_options: dict[str, Any], transform: Callable[[Batch], Batch] | None, rank: int | None,
                 world_size: int | None, seed: int | None, prefetch: int | None, hold: int, copy: bool,
                 dtype: str | None, connect_kwargs: dict[str, Any]) -> None:
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
        self.prefetch = int(prefetch) if prefetch is not None else _default_prefetch(self.client)
        self.hold = int(hold)
        self.epoch, self._epoch_set = 0, False
        self.node_tables, self.edge_tables = _node_tables(self.schema), _edge_tables(self.schema)

    def set_epoch(self, epoch: int) -> None:
        """DDP's convention: the next iteration is epoch `epoch` (else each
        iteration is the next epoch, a new shuffle)."""
        self.epoch, self._epoch_set = int(epoch), True

    def _next_epoch(self) -> int:
        epoch = self.epoch
        if not self._epoch_set:
            self.epoch += 1
        self._epoch_set = False
        return epoch

    def _order(self) -> str:
        return "random" if self.shuffle else "sequential"

    def _stream_options(self, epoch: int) -> dict[str, Any]:
        """A hetero or link stream's options (Client.hetero_stream, link_stream) for `epoch`."""
        return dict(batch_size=self.batch_size, num_neighbors=self.num_neighbors, node_tables=self.node_tables,
                    edge_tables=self.edge_tables, edge_ids=True, dtype=self.dtype, seed=self.seed, epoch=epoch,
                    rank=self.rank, world_size=self.world_size, drop_last=self.drop_last, order=self._order(),
                    prefetch=self.prefetch, hold=self.hold, frontier="new", mode=self.options["mode"],
                    disjoint=self.options["disjoint"], temporal=self.options["temporal"])

    def _plan(self, n: int, epoch: int) -> EpochPlan | tuple[()]:
        """This rank's epoch of n seeds: the plan the loader's stream follows
        (the C library's), for batches made by calls here and for len(). No
        seeds, no batches (C plans none: it refuses an empty epoch)."""
        if n == 0:
            return ()
        return EpochPlan(n, self.batch_size, order=self._order(), drop_last=self.drop_last, seed=self.seed,
                         epoch=epoch, rank=self.rank, world_size=self.world_size)

    def _held_too_many(self, err: Error) -> Error:
        """RESOURCE from the stream or the slots: the lifetime rule, named."""
        if err.status != Status.RESOURCE:
            return err
        return Error(err.status, f"{err.message}; featstore.pyg: batches are views of featstore's memory and at "
                                 f"most hold={self.hold} may be alive at once: keep .clone() copies of what you keep, "
                                 f"or pass copy=True (or a larger hold=, up to 16)")

    def _stream(self, open_stream: Callable[..., Any], *args: Any, **options: Any) -> Iterator[StreamBatch]:
        """The batches of the stream open_stream(*args, **options) opens
        (a Client's hetero_stream or link_stream), each released when the
        next is taken, the stream closed when the caller stops."""
        stream = open_stream(*args, **options)
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

    def _connection(self) -> Client:
        """The connection batches made by calls come from: one of the loader's
        own, with a result slot for each batch in flight (prefetch), each the
        caller may hold (hold), and the one being made; each call split over
        the cores a stream would make batches on (its producers, the C
        library's default) unless the client's threads were given."""
        if getattr(self, "_conn", None) is None:
            self._conn = self.client._with_slots(self.prefetch + self.hold + 1, threads=_default_producers(self.client))
        return self._conn

    def _sampled(self, call: Callable[..., HeteroBatch], *args: Any, **kwargs: Any) -> HeteroBatch:
        """One featstore call of the per-call path, the lifetime rule named."""
        try:
            return call(*args, **kwargs)
        except Error as err:
            raise self._held_too_many(err) from None

    def _finish(self, data: Data | HeteroData) -> Batch:
        return data if self.transform is None else self.transform(data)

    def _input_id(self, b: StreamBatch) -> torch.Tensor | None:
        """A stream batch's input_id: its seeds' positions in the seed list,
        from the stream (None from an older library: then looked up). A
        copy (8 bytes a seed), as the lookup's was: callers keep input_id
        across batches, and a view would hold its batch."""
        return None if b.positions is None else _as_tensor(b.positions, True)

    def close(self) -> None:
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
    ("train"; "paper/train" or ("paper", "train") on a heterogeneous graph), a node
    type, (type, ids) or None (every node). `input_time`: per-seed times
    for temporal sampling (then batches are sampled per call, not streamed).
    `shuffle`: a new order each epoch (each iteration is the next epoch;
    ``set_epoch`` as with DistributedSampler). `rank`/`world_size`: this DDP
    rank's share (default: torch.distributed's). `seed`: the shuffle seed,
    the same on every rank (default: drawn from torch's generator).
    `prefetch`: batches made ahead by the stream's producer threads (by
    default two per producer; over unix:// a connection has one producer per
    `threads`, or per core this process may use, up to 4, when `threads` is
    not given). `hold`, `copy`: the module comment's lifetime rule. Other
    options as ``NeighborSampler``'s. A loader is used by one thread at a
    time."""

    def __init__(self, data: Any, num_neighbors: Sequence[int] | dict[Any, Sequence[int]], input_nodes: Any = None,
                 input_time: Any = None, batch_size: int = 1, shuffle: bool = False, drop_last: bool = False,
                 replace: bool = False, subgraph_type: Any = "directional", disjoint: bool = False,
                 temporal_strategy: str = "uniform", time_attr: str | None = None, weight_attr: str | None = None,
                 transform: Callable[[Batch], Batch] | None = None, rank: int | None = None,
                 world_size: int | None = None, seed: int | None = None, prefetch: int | None = None, hold: int = 4,
                 copy: bool = False, dtype: str | None = None, **connect_kwargs: Any) -> None:
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

    def _inputs(self, input_nodes: Any) -> tuple[str, str | None, np.ndarray]:
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
                raise ValueError(f"input_nodes {input_nodes!r}: a heterogeneous graph needs a node type, "
                                 f"'TYPE/SPLIT' or (TYPE, ids)")
            return t, input_nodes, self.client.split(input_nodes)
        if not schema.homogeneous:
            raise ValueError("input_nodes: a heterogeneous graph needs a node type, 'TYPE/SPLIT' or (TYPE, ids)")
        if input_nodes is None:
            return schema.node, None, np.arange(schema.node_types[schema.node][0], dtype=np.int64)
        return schema.node, None, self._checked(schema.node, _long(input_nodes, "input_nodes"))

    def _checked(self, node_type: str, ids: np.ndarray) -> np.ndarray:
        count = self.schema.node_types[node_type][0]
        if len(ids) and (ids.min() < 0 or ids.max() >= count):
            bad = ids[(ids < 0) | (ids >= count)][0]
            raise ValueError(f"input_nodes: id {bad} out of range for node type {node_type!r} ({count} nodes)")
        return ids

    def __len__(self) -> int:
        return len(self._plan(len(self.input_nodes), 0))

    def __iter__(self) -> Iterator[Batch]:
        epoch = self._next_epoch()
        if self.input_time is not None:
            return self._calls(epoch)
        seeds = self.split if self.split is not None else self.input_nodes
        return (self._convert(b.hetero, b.seeds, input_id=self._input_id(b)) for b in
                self._stream(self.client.hetero_stream, seeds, seed_type=self.input_type,
                             **self._stream_options(epoch)))

    def _calls(self, epoch: int) -> Iterator[Batch]:
        """Temporal batches with given seed times: one hetero_sample per batch
        over this rank's share of the stream's plan, with its request seeds."""
        times = self.input_time
        assert times is not None  # the temporal path: __iter__ checked it
        for pos, request_seed in self._plan(len(self.input_nodes), epoch):
            seeds = self.input_nodes[pos]
            req = dict(seed=request_seed, node_tables=self.node_tables, edge_tables=self.edge_tables,
                       dtype=self.dtype, edge_ids=True, frontier="new", **self.options)
            h = self._sampled(self._connection().hetero_sample, {self.input_type: seeds}, self.num_neighbors,
                              seed_time={self.input_type: times[pos]}, **req)
            data = self._convert(h, seeds, input_id=torch.from_numpy(pos), seed_time=torch.from_numpy(times[pos]))
            h.release()  # its arrays keep it (and its slot) while the batch's tensors live
            yield data

    def _convert(self, h: HeteroBatch, seeds: Any, input_id: torch.Tensor | None = None,
                 seed_time: torch.Tensor | None = None) -> Batch:
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
    a background thread, `prefetch` ahead, each split over the connection's
    `threads`, by default the cores a stream would make batches on (one
    per core, up to 4). Other options as NeighborLoader's."""

    def __init__(self, data: Any, num_neighbors: Sequence[int] | dict[Any, Sequence[int]],
                 edge_label_index: Any = None, edge_label: Any = None, edge_label_time: Any = None,
                 neg_sampling: NegativeSampling | str | None = None, neg_sampling_ratio: float | None = None,
                 batch_size: int = 1, shuffle: bool = False, drop_last: bool = False, replace: bool = False,
                 subgraph_type: Any = "directional", disjoint: bool = False, temporal_strategy: str = "uniform",
                 time_attr: str | None = None, weight_attr: str | None = None,
                 transform: Callable[[Batch], Batch] | None = None, rank: int | None = None,
                 world_size: int | None = None, seed: int | None = None, prefetch: int | None = None, hold: int = 4,
                 copy: bool = False, dtype: str | None = None, keep_seed_edges: bool = False,
                 neg_weighted: bool = False, **connect_kwargs: Any) -> None:
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

    def _edges(self, edge_label_index: Any, edge_label: Any, edge_label_time: Any) -> tuple[Any, ...]:
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
        edge_type, index = schema.edge, edge_label_index  # index: a tensor, an array or ids
        if isinstance(edge_label_index, tuple) and len(edge_label_index) == 2 and not isinstance(
                edge_label_index[0], torch.Tensor) and isinstance(edge_label_index[0], (tuple, list, str)):
            edge_type, index = schema.edge_type(tuple(edge_label_index[0])), edge_label_index[1]
        elif not schema.homogeneous:
            raise ValueError("edge_label_index: a heterogeneous graph needs (edge type, [2, m] ids), (edge type, None) or a "
                             "link split name")
        if index is None:  # every edge of the type, as PyG does for a Data's edge_index
            gs = GraphStore(self.client)
            row, colptr = gs._get_edge_index(EdgeAttr(edge_type, EdgeLayout.CSC, True))
            col = torch.repeat_interleave(torch.arange(colptr.numel() - 1), colptr.diff())
            index = torch.stack([row, col])
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

    def __len__(self) -> int:
        return len(self._plan(len(self.src), 0))

    def _link(self) -> dict[str, Any]:
        return dict(neg=self.neg, amount=self.amount, neg_weighted=self.neg_weighted,
                    keep_seed_edges=self.keep_seed_edges)

    def __iter__(self) -> Iterator[Batch]:
        epoch = self._next_epoch()
        if self.split is not None:
            return (self._convert(b.hetero, input_id=self._input_id(b)) for b in
                    self._stream(self.client.link_stream, self.split, edge_type=self.edge_type, **self._link(),
                                 **self._stream_options(epoch)))
        return prefetched(self._calls(epoch), self.prefetch)

    def _calls(self, epoch: int) -> Iterator[Batch]:
        """One link_sample per batch over this rank's share of the stream's
        plan, with its request seeds: explicit edges equal to a link split's
        make the split's batches."""
        pick = lambda a, p: None if a is None else a[p]  # noqa: E731
        for pos, request_seed in self._plan(len(self.src), epoch):
            req = dict(seed=request_seed, node_tables=self.node_tables, edge_tables=self.edge_tables,
                       dtype=self.dtype, edge_ids=True, frontier="new", **self.options, **self._link())
            h = self._sampled(self._connection().link_sample, self.edge_type, self.src[pos], self.dst[pos],
                              num_neighbors=self.num_neighbors, edge_label=pick(self.label, pos),
                              edge_label_time=pick(self.time, pos), **req)
            data = self._convert(h, input_id=torch.from_numpy(pos))
            h.release()  # its arrays keep it (and its slot) while the batch's tensors live
            yield data

    def _convert(self, h: HeteroBatch, input_id: torch.Tensor | None = None) -> Batch:
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


def _default_producers(client: Client) -> int | None:
    """The producers a stream on `client` has by default (over unix:// one
    per core, up to 4, unless threads were given): half its default
    prefetch, which the C library decides. None before 1.5."""
    return client.default_prefetch() // 2 if _lib.plans else None


def _default_prefetch(client: Client) -> int:
    """The prefetch of the loader's stream when none is given: the stream's
    own default, which the C library decides (two batches per producer,
    Client.default_prefetch). A library before 1.5 cannot say it: then 0,
    which a stream takes as that default."""
    return client.default_prefetch() if _lib.plans else 0
