"""featstore.stream — epoch streams: ``Stream`` and ``StreamBatch``
(fs_stream_*, featstore/client.h and docs/api.md §11; since 1.4), opened
by the Client's per-kind constructors (featstore._stream_calls):
``node_stream``, ``hetero_stream``, ``link_stream`` and ``row_stream``.

A stream hands one rank of a training job its share of an epoch, batch
after batch, made ahead by background threads of this process while the
trainer computes::

    for epoch in range(epochs):
        with client.node_stream("train", batch_size=512, num_neighbors=[25, 10], table="feat", seed=42,
                                epoch=epoch, rank=rank, world_size=world) as stream:
            for b in stream:
                t = b.batch.torch()                      # sample and features, as sample_gather's Batch
                y = torch.from_numpy(np.array(b.labels))  # the seeds' labels
                ...

The plan is torch's DistributedSampler's: every rank an equal, disjoint
share of one shuffle per (seed, epoch), the same number of batches on every
rank (``featstore.EpochPlan`` is that plan without a stream). Batch i is
exactly ``client.sample_gather(b.seeds, num_neighbors, table,
seed=b.request_seed)`` and ``client.gather(b.seeds, labels)``, so a stream
opened with ``start_batch=`` an earlier stream's ``position`` continues it
bit for bit (after a restart of the trainer or of the server).

Hetero and link streams (docs/api.md §11): each batch of a hetero stream is
a hetero sample of seeds of one node type, in ``b.hetero`` (a
``HeteroBatch``); each of a link stream is a link-prediction batch of a
link split's edges::

    cites = ("paper", "cites", "paper")
    with client.hetero_stream("paper/train", batch_size=512, num_neighbors={cites: [10, 5]},
                              node_tables=("feat", "labels"), seed=42, epoch=epoch) as stream:
        for b in stream:                 # b.seeds: the batch's papers; b.hetero: hetero_sample's HeteroBatch
            x, y = b.hetero.x["paper"]["feat"], b.hetero.x["paper"]["labels"]
    links = client.link_stream("train", edge_type=cites, batch_size=256, num_neighbors={cites: [10, 5]},
                               neg="binary")  # the link split's link/train/src, .../dst, ...

Batch i is exactly ``client.hetero_sample({seed_type: b.seeds},
num_neighbors, seed=b.request_seed, ...)``, or ``client.link_sample(edge_type,
src, dst, edge_label=..., edge_label_time=..., seed=b.request_seed, ...)``
on the edges at its positions in the link split (``b.seeds`` are their
sources). The seeds' node type is ``seed_type``, by default a hetero
split's "TYPE/" prefix.

Lifetime: a StreamBatch owns its fs_stream_batch_t as a Batch owns its
fs_batch_t (featstore.batch's module comment): ``seeds``, ``labels`` and
the arrays of ``batch`` and ``hetero`` are read-only zero-copy views that hold the C batch
until they are gone; after ``release()`` (or the end of its ``with`` block)
every attribute of the StreamBatch and of its ``batch`` (or ``hetero``) raises
``BatchReleasedError``. A stream lets the caller hold ``hold`` batches at
once (2 by default): asking for one more raises ``Error`` (RESOURCE) rather
than waiting forever. A ``for`` loop drops each batch when it takes the
next, so it holds one; keep copies (``np.array(x)``), not views, of anything
kept across batches.

Connections: the C stream needs a connection that outlives it, and a
Client may be closed, or reconnect after a fork, while a stream runs; so
streams are opened on a connection of their own to the Client's URI with its
options (the owner, _Owner), and the C stream opens one more for each
producer. The Client's streams share one owner, which keeps a closed
stream's producer connections for the next stream (the next epoch starts
warm); over grpc:// and etcd:// the Client lets go of it before a fork
(gRPC's threads do not survive one: client.py, _before_fork). Closing the Client
leaves its streams running; ``Stream.close()`` stops the producers, the
owner closing once the Client and every stream let go of it, and batches
already handed out stay valid.

Threads and fork: a Stream serialises its calls with a lock. It belongs to
the process that opened it: in a forked child its producer thread does not
exist, so every call raises and nothing of it is freed there (its lock may
have been held by a thread the child does not have); open a new stream in
the child. gRPC's threads do not survive fork() either: close grpc://
streams before forking.
"""
from __future__ import annotations

import ctypes
import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from . import _lib
from ._closing import Closing
from ._convert import NP_DTYPES, dtype_code, seed64
from ._convert import ids as _ids
from ._convert import name as _name
from ._lib import lib
from .batch import Batch, _batch_field, _Handle, _Releasable, _SlotUse, _view
from .errors import Error, Status
from .hetero import HeteroBatch, _Link

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from .client import Client

__all__ = ["Stream", "StreamBatch", "StreamLink"]


def require_streams() -> None:
    """An Error (UNSUPPORTED) unless the loaded library has the stream calls."""
    if not _lib.streams:
        raise Error(Status.UNSUPPORTED, f"{_lib.path} is libfeatstore {_lib.version}, which has no epoch streams "
                                        f"(fs_stream_open): install libfeatstore 1.4 or later")


# ---- opening ------------------------------------------------------------------------

def labels_option(value: str | None) -> bytes | None:
    """fs_stream_opts_t.labels: None (the dataset's "labels", if any), "" (none) or a table name."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"labels must be a table name, \"\" (no labels) or None (the dataset's), got {value!r}")
    return value.encode()


@dataclass(frozen=True)
class StreamLink:
    """What made a stream a link stream in ``Client.stream(link=...)``,
    deprecated since 1.5 (``Client.link_stream`` takes these as its own
    arguments); a dict with these keys does too: the seed edges'
    `edge_type` (src, rel, dst), and their negatives as in
    ``Client.link_sample``: `neg` (None, "binary" or "triplet"), `amount`,
    `neg_weighted`, `strict` (link_sample's `neg_strict`: a negative is
    never an edge of the graph) and `keep_seed_edges`."""
    edge_type: tuple
    neg: str | None = None
    amount: float = 1.0
    neg_weighted: bool = False
    strict: bool = False
    keep_seed_edges: bool = False


@dataclass(frozen=True)
class Epoch:
    """What every kind of stream takes besides its requests: the seeds'
    plan (DistributedSampler's, featstore.plan) and the pipeline."""
    batch_size: int
    seed: int = 0
    epoch: int = 0
    rank: int = 0
    world_size: int = 1
    drop_last: bool = False
    order: str = "random"
    chunk: int = 0
    start_batch: int = 0
    prefetch: int = 0
    hold: int = 2
    producers: int = 0


def split_or_ids(seeds: str | ArrayLike) -> tuple[str | None, np.ndarray | None]:
    """A stream's `seeds`: a split's name, or an array of ids (copied by the stream)."""
    if isinstance(seeds, str):
        return seeds, None
    return None, _ids(seeds, "seeds")


def _per_kind(epoch: Epoch, split: str | None, seeds: np.ndarray | None, sample: Any, table: str | None,
              dtype: str | None, labels: str | None, delta: str, reorder_window: int, hetero: Any,
              seed_type: str | None, link: _Link | None, names: Any, num_tables: int, calls: str
              ) -> tuple[Any, Any, Any]:
    """The per-kind open call (since 1.5) and its two structs: the common
    options and the kind's own (the kind: link, hetero, rows or nodes)."""
    ptr = lambda struct: None if struct is None else ctypes.pointer(struct)  # noqa: E731
    common = _lib.StreamCommon.new(
        split=None if split is None else _name(split),
        seeds=None if seeds is None else seeds.ctypes.data_as(_lib._p_i64),
        num_seeds=0 if seeds is None else len(seeds), batch_size=int(epoch.batch_size),
        drop_last=int(bool(epoch.drop_last)), seed=seed64(epoch.seed), epoch=int(epoch.epoch), chunk=int(epoch.chunk),
        start_batch=int(epoch.start_batch), order=_lib.FS_ORDER[epoch.order], rank=int(epoch.rank),
        world_size=int(epoch.world_size), prefetch=int(epoch.prefetch), hold=int(epoch.hold),
        producers=int(epoch.producers))
    if link is not None:
        return lib.fs_stream_open_link, common, _lib.StreamLinkOpts.new(request=ptr(hetero and hetero.c),
                                                                        link=ptr(link.c))
    if hetero is not None:
        return lib.fs_stream_open_hetero, common, _lib.StreamHeteroOpts.new(
            request=ptr(hetero.c), seed_type=None if seed_type is None else _name(seed_type))
    if names is not None:
        return lib.fs_stream_open_rows, common, _lib.StreamRowsOpts.new(
            tables=names, num_tables=num_tables, labels=labels_option(labels), out_dtype=dtype_code(dtype))
    return lib.fs_stream_open_nodes, common, _lib.StreamNodeOpts.new(
        sample=ptr(sample), table=None if table is None else _name(table), labels=labels_option(labels),
        out_dtype=dtype_code(dtype), delta=_lib.FS_DELTA[delta], window=int(reorder_window),
        calls=_lib.FS_STREAM_CALLS[calls])


def open_stream(client: Any, epoch: Epoch, *, split: str | None, ids: ArrayLike | None,
                sample: _lib.SampleReq | None = None, table: str | None = None, dtype: str | None = None,
                labels: str | None = None, delta: str = "off", reorder_window: int = 1, hetero: Any = None,
                seed_type: str | None = None, link: _Link | None = None, tables: Sequence[str] | None = None,
                calls: str = "auto", legacy: bool = False) -> Stream:
    """A stream on the stream owner of `client` (a Client), with the
    requests of one kind of stream (sample; hetero and link; tables)
    already checked: through the kind's own open call (fs_stream_open_nodes,
    _hetero, _link, _rows), or, for the deprecated Client.stream (`legacy`)
    and libraries before those calls, the 1.4 form fs_stream_open, which
    refuses by name the options of another kind."""
    require_streams()
    if client.closed:
        raise ValueError("featstore client is closed")
    if epoch.order not in _lib.FS_ORDER:
        raise ValueError(f"unknown stream order {epoch.order!r} (one of {', '.join(_lib.FS_ORDER)})")
    if delta not in _lib.FS_DELTA:
        raise ValueError(f"unknown delta mode {delta!r} (one of {', '.join(_lib.FS_DELTA)})")
    if calls not in _lib.FS_STREAM_CALLS:
        raise ValueError(f"unknown calls {calls!r} (one of {', '.join(_lib.FS_STREAM_CALLS)})")
    if int(reorder_window) == 0:  # the C struct's 0 means "unset" (1); from Python it is a mistake
        raise ValueError("window 0: a Match-Reorder window is 1 batch (no reorder) or more")
    per_kind = _lib.stream_kinds and not legacy
    if calls != "auto" and not per_kind:
        raise Error(Status.UNSUPPORTED, f"calls={calls!r} needs fs_stream_open_nodes: {_lib.path} is libfeatstore "
                                        f"{_lib.version}; install libfeatstore 1.5 or later")
    seeds = None if ids is None else _ids(ids, "seeds")
    ptr = lambda struct: None if struct is None else ctypes.pointer(struct)  # noqa: E731
    names = None if tables is None else (ctypes.c_char_p * max(len(tables), 1))(*[_name(t) for t in tables])
    # the requests, ids and names stay alive (locals) through the open call, which copies what it needs
    if per_kind:
        call, common, kind = _per_kind(epoch, split, seeds, sample, table, dtype, labels, delta, reorder_window,
                                       hetero, seed_type, link, names, 0 if tables is None else len(tables), calls)
        args: tuple = (ctypes.byref(common), ctypes.byref(kind))
    else:
        call = lib.fs_stream_open
        args = (ctypes.byref(_lib.StreamOpts.new(
            split=None if split is None else _name(split),
            seeds=None if seeds is None else seeds.ctypes.data_as(_lib._p_i64),
            num_seeds=0 if seeds is None else len(seeds),
            batch_size=int(epoch.batch_size), drop_last=int(bool(epoch.drop_last)), sample=ptr(sample),
            table=None if table is None else _name(table), out_dtype=dtype_code(dtype), labels=labels_option(labels),
            seed=seed64(epoch.seed), epoch=int(epoch.epoch), rank=int(epoch.rank), world_size=int(epoch.world_size),
            prefetch=int(epoch.prefetch), order=_lib.FS_ORDER[epoch.order], chunk=int(epoch.chunk),
            start_batch=int(epoch.start_batch), hold=int(epoch.hold), delta=_lib.FS_DELTA[delta],
            window=int(reorder_window),
            hetero=None if hetero is None else ctypes.pointer(hetero.c),
            seed_type=None if seed_type is None else _name(seed_type), link=None if link is None else ptr(link.c),
            tables=names, num_tables=0 if tables is None else len(tables), producers=int(epoch.producers))),)
    for attempt in range(2):
        owner = _Owner.take(client)
        out = ctypes.c_void_p()
        with owner.lock:  # opening uses the owner: one thread at a time
            st = call(owner.c, *args, ctypes.byref(out))
            message = "" if st == Status.OK else lib.fs_client_errstr(owner.c).decode(errors="replace")
        if st == Status.OK:
            break
        owner.retire(client)
        if st != Status.UNAVAILABLE or attempt:
            raise Error(st, message)
        # a kept owner whose server went away (restarted between epochs): once more on a new one
    node_edge = None if hetero is None else (hetero.node_tables, hetero.edge_tables)
    return Stream(client.uri, owner, out, node_edge)


class _Owner:
    """The C connection streams are opened on (fs_stream_open's owner: they
    copy its URI and options). A Client keeps one for all its streams: a
    closed stream leaves its producers' connections with it, and the next
    one, the next epoch's, starts on them, their engines warm, the dataset
    already mapped and checked over unix://, the channels connected over
    grpc:// and etcd:// (docs/api.md §11, "Connections kept between
    epochs").
    Closed when the Client and its every stream have let go of it. gRPC's
    threads do not survive a fork, so a grpc:// or etcd:// Client lets go
    of its owner before one (client.py, _before_fork): kept only by streams
    still open, which cannot be used in the child anyway."""

    _refs_lock = threading.Lock()

    def __init__(self, c: Any, refs: int) -> None:
        self.c, self.refs, self.pid = c, refs, os.getpid()
        self.lock = threading.Lock()

    @classmethod
    def take(cls, client: Client) -> _Owner:
        """A reference to client's owner (made if it has none, or its one is
        a parent process's)."""
        with client._lock:
            kept = client.__dict__.get("_stream_owner")
            if kept is None or kept.pid != os.getpid():
                kept = client._stream_owner = cls(client._open("stream: ", slots=1), 1)  # the Client's reference
            kept.acquire()
            return kept

    def acquire(self) -> None:
        with self._refs_lock:
            self.refs += 1

    def release(self) -> None:
        """Drops one reference; the last closes the connection (and the
        producers' connections it keeps). In a forked child: nothing (the
        parent's)."""
        with self._refs_lock:
            self.refs -= 1
            last = self.refs == 0
        if last and self.pid == os.getpid():
            lib.fs_close(self.c)

    def retire(self, client: Client) -> None:
        """After a failed fs_stream_open: the stream's reference dropped, and
        the Client's too, so that the next stream connects anew."""
        with client._lock:
            if client.__dict__.get("_stream_owner") is self:
                client._stream_owner = None
                self.release()
        self.release()


# ---- the stream ---------------------------------------------------------------------

class Stream(Closing):
    """One rank's share of an epoch (fs_stream_t *): an iterator of
    ``StreamBatch``, from ``Client.stream``. A context manager; ``close()``
    is idempotent and also happens when the Stream is garbage. See the
    module comment."""

    def __init__(self, uri: str, owner: _Owner, ptr: Any,
                 tables: tuple[tuple[str, ...], tuple[str, ...]] | None = None) -> None:
        self.uri = uri
        self._tables = tables  # a hetero stream's (node tables, edge tables): its batches' x and edge_attr keys
        self._lock = threading.Lock()
        self._owner: _Owner | None = owner
        self._s: Any = ptr
        self._pid = os.getpid()
        self._use = _SlotUse()  # its batches: held, and released but kept by arrays
        self.num_batches = lib.fs_stream_num_batches(ptr)
        self._position = lib.fs_stream_position(ptr)  # kept for reading after close()

    def _forked(self) -> bool:
        """True in a process forked after the stream was opened. Checked
        before taking the lock, which a thread of the parent may have held
        at the fork."""
        return self._pid != os.getpid()

    def _refuse_in_fork(self, what: str) -> None:
        if self._forked():
            raise Error(Status.INVALID_ARGUMENT, f"stream opened by process {self._pid} before it forked: {what} "
                                                 f"cannot be used in process {os.getpid()} (its producer thread is "
                                                 f"the parent's); open a stream in this process")

    def _live(self, what: str) -> Any:
        """The C stream (the caller holds the lock), or a ValueError once closed."""
        if self._s is None:
            raise ValueError(f"featstore stream is closed: {what} needs an open one")
        return self._s

    def __iter__(self) -> Stream:
        return self

    def __next__(self) -> StreamBatch:
        """The next batch, waiting for it if it is not made yet;
        StopIteration at the end of the epoch."""
        self._refuse_in_fork("next()")
        with self._lock:
            s = self._live("next()")
            out = ctypes.POINTER(_lib.StreamBatchC)()
            st = lib.fs_stream_next(s, ctypes.byref(out))
            self._position = lib.fs_stream_position(s)
            if st == Status.END:
                raise StopIteration
            if st != Status.OK:
                hint = self._use.hint("a batch stops counting against the hold") if st == Status.RESOURCE else ""
                raise Error(st, lib.fs_stream_errstr(s).decode(errors="replace") + hint)
            return StreamBatch(out, self._use, self._tables)

    @property
    def position(self) -> int:
        """The index of the batch the next ``next()`` returns: the cursor to
        resume from (``start_batch=``). After close(), where it stopped."""
        self._refuse_in_fork("position")
        with self._lock:
            if self._s is not None:
                self._position = lib.fs_stream_position(self._s)
            return self._position

    @property
    def ready(self) -> int:
        """Batches made ahead and waiting (0..prefetch); 0 once closed."""
        self._refuse_in_fork("ready")
        with self._lock:
            return lib.fs_stream_ready(self._s) if self._s is not None else 0

    @property
    def held_batches(self) -> int:
        """This stream's batches not yet freed: not released, or released but
        held by arrays (what ``hold`` counts)."""
        return self._use.held

    @property
    def closed(self) -> bool:
        return self._s is None

    def close(self) -> None:
        """Stops the producer and closes the stream's connections; batches
        handed out stay valid. In a forked child it only forgets the
        parent's stream."""
        if self._forked():
            self._s = self._owner = None
            return
        with self._lock:
            s, owner, self._s, self._owner = self._s, self._owner, None, None
            if s is None:
                return
            self._position = lib.fs_stream_position(s)
            lib.fs_stream_close(s)  # leaves its connections with the owner for the next stream
            if owner is not None:
                owner.release()  # after the stream: its producers reconnect through the owner

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"at batch {self._position}"
        return f"<featstore.Stream {self.uri} {self.num_batches} batches, {state}>"


# ---- its batches ----------------------------------------------------------------------

class _StreamHandle(_Handle):
    """Owns one fs_stream_batch_t * (as _Handle owns an fs_batch_t *). In a
    forked child it frees nothing: fs_stream_batch_free takes the stream's
    lock, which a thread the child does not have may have held at the fork."""

    _FREE = "fs_stream_batch_free"

    def __init__(self, ptr: Any, use: _SlotUse) -> None:
        super().__init__(ptr, use)
        self.pid = os.getpid()

    def __del__(self) -> None:
        if self.pid != os.getpid():
            self.ptr = None
            return
        super().__del__()


def _match_fields(h: _Handle, b: Any) -> dict[str, Any]:
    """A batch's features and Match's delta as zero-copy views."""
    dtype = NP_DTYPES.get(b.dtype)
    nodes = b.batch.contents.num_nodes if b.batch else 0
    rows = lambda p, n: _view(h, ctypes.cast(p, ctypes.c_void_p), (n, b.dim), dtype) if p and dtype else None  # noqa: E731
    return {"features": rows(b.features, nodes), "new_rows": rows(b.new_rows, b.num_new),
            "take": _view(h, b.take, (nodes,), np.int64) if b.take else None}


class StreamBatch(_Releasable):
    """One batch of a stream (fs_stream_batch_t *): ``batch``, a ``Batch``
    holding the sample and the features (released with this StreamBatch,
    never on its own), its place ``index`` in the epoch, the
    ``request_seed`` it was sampled with, its ``seeds`` and their
    ``labels``. A hetero or link stream's batch has ``hetero`` instead, a
    ``HeteroBatch`` (likewise released with this StreamBatch), ``batch``
    and ``labels`` None, and a link batch's ``seeds`` are its seed edges'
    sources. See the module comment for the lifetime rule."""

    _NAME = "StreamBatch"
    _COPY_HINT = "np.array(b.seeds)"

    def __init__(self, ptr: Any, use: _SlotUse,
                 tables: tuple[tuple[str, ...], tuple[str, ...]] | None = None) -> None:
        h = _StreamHandle(ptr, use)
        b = ptr.contents
        n = b.num_seeds
        self._pid = os.getpid()
        is_hetero = bool(b.hetero)
        if is_hetero:  # region(): the hetero batch's memory
            self._REGION = "fs_hetero_batch_region"
        node_tables, edge_tables = tables or ((), ())
        self._fields = {
            "handle": h,
            "ptr": b.hetero if is_hetero else b.batch,  # region(): the memory of the sample and the features
            "batch": Batch(b.batch, handle=h) if b.batch else None,
            "tables": [Batch(b.tables[k], handle=h) for k in range(b.num_tables)] if b.num_tables else None,
            "hetero": HeteroBatch(b.hetero, node_tables=node_tables, edge_tables=edge_tables, handle=h)
            if is_hetero else None,
            "index": b.index, "request_seed": b.request_seed, "num_seeds": n,
            "seeds": _view(h, b.seeds, (n,), np.int64),
            "labels": _view(h, b.labels, (n,), np.int64) if b.labels else None,
            "plan_index": b.plan_index, "match": b.match, "prev_rows": b.prev_rows,
            "ranges": _view(h, b.ranges, (b.num_ranges, 2), np.int64) if _lib.rows and b.num_ranges else None,
            "positions": _view(h, b.positions, (n,), np.int64) if _lib.rows and b.positions else None,
        }
        self._fields.update(_match_fields(h, b))

    batch = _batch_field("batch", "the sample and the features: a Batch as Client.sample_gather's (kind "
                                  '"sample" when the stream gathers no table), ended with this StreamBatch; None '
                                  "in a hetero or link stream")
    tables = _batch_field("tables", "a row stream's batches: one Batch per table (kind \"gather\", row i for "
                                    "seeds[i]), ended with this StreamBatch; None in other streams")
    hetero = _batch_field("hetero", "a hetero or link stream's batch: a HeteroBatch as Client.hetero_sample's or "
                                    "link_sample's, ended with this StreamBatch; None in a node stream")
    index = _batch_field("index", "its place in this rank's epoch, 0..num_batches-1")
    request_seed = _batch_field("request_seed", "the sampling seed it was made with (sample_gather's seed=)")
    num_seeds = _batch_field("num_seeds", "len(seeds)")
    seeds = _batch_field("seeds", "int64 [num_seeds]: the batch's seeds (global ids), in order; a link batch's "
                                  "seed edges' sources")
    labels = _batch_field("labels", "int64 [num_seeds]: the seeds' labels, None when the stream has no label table "
                                    "(a hetero stream's are in hetero.x[type]['labels'] when node_tables has them)")
    plan_index = _batch_field("plan_index", "the plan's batch number (index, unless a window reordered it)")
    features = _batch_field("features", "[num_nodes, dim]: row i for batch.nodes[i] (delta=\"full\": assembled from "
                                        "the previous batch's rows and new_rows); None with delta=\"only\"")
    new_rows = _batch_field("new_rows", "[num_new, dim]: the rows fetched for this batch (delta: those the previous "
                                        "batch lacked; else all of them)")
    take = _batch_field("take", "int64 [num_nodes] (delta): row i is row take[i] of concat(the previous batch's "
                                "prev_rows rows, new_rows); None without delta")
    prev_rows = _batch_field("prev_rows", "rows of the previous batch that take indexes first (0: all new)")
    match = _batch_field("match", "the match degree |this ∩ previous| / |this| over rows (delta)")
    positions = _batch_field("positions", "int64 [num_seeds]: each seed's position in the stream's seed list (seeds=, "
                                          "the split's ids, a link split's edges): PyG's input_id; None from a "
                                          "library before 1.5")
    ranges = _batch_field("ranges", "int64 [k, 2] (a row stream over row tables): the batch's rows as runs (first "
                                    "row, rows), each copied in bulk; None otherwise")

    def release(self) -> None:
        """Ends this StreamBatch and its ``batch`` or ``hetero`` (see
        Batch.release); the C batch goes back once no array taken from them
        is alive."""
        fields = self._fields
        if fields is not None:
            for inner in (fields["batch"], fields["hetero"], *(fields["tables"] or ())):
                if inner is not None:
                    inner.release()
        super().release()

    def __repr__(self) -> str:
        if self.released:
            return "<featstore.StreamBatch released>"
        if self._pid != os.getpid():
            return f"<featstore.StreamBatch of process {self._pid}>"
        f = self._live("repr")
        kind = "" if f["hetero"] is None else " link" if f["hetero"].link_types else " hetero"
        return f"<featstore.StreamBatch index={f['index']} seeds={f['num_seeds']}{kind}>"
