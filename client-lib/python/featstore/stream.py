"""featstore.stream — epoch streams: ``Client.stream``, ``Stream`` and
``StreamBatch`` (fs_stream_*, featstore/client.h and docs/api.md §11; since
1.4).

A stream hands one rank of a training job its share of an epoch, batch
after batch, made ahead by background threads of this process while the
trainer computes::

    for epoch in range(epochs):
        with client.stream(split="train", batch_size=512, fanouts=[25, 10], table="feat", seed=42,
                           epoch=epoch, rank=rank, world_size=world) as stream:
            for b in stream:
                t = b.batch.torch()                      # sample and features, as sample_gather's Batch
                y = torch.from_numpy(np.array(b.labels))  # the seeds' labels
                ...

The plan is torch's DistributedSampler's: every rank an equal, disjoint
share of one shuffle per (seed, epoch), the same number of batches on every
rank. Batch i is exactly ``client.sample_gather(b.seeds, fanouts, table,
seed=b.request_seed)`` and ``client.gather(b.seeds, labels)``, so a stream
opened with ``start_batch=`` an earlier stream's ``position`` continues it
bit for bit (after a restart of the trainer or of the server).

Typed and link streams (docs/api.md §11): with ``num_neighbors`` (a
typed request, as ``Client.hetero_sample``'s) each batch is a typed sample
of seeds of one node type, in ``b.hetero`` (a ``HeteroBatch``); with
``link`` too, each is a link-prediction batch of the link split's edges::

    cites = ("paper", "cites", "paper")
    with client.stream(split="paper/train", batch_size=512, num_neighbors={cites: [10, 5]},
                       node_tables=("feat", "labels"), seed=42, epoch=epoch) as stream:
        for b in stream:                 # b.seeds: the batch's papers; b.hetero: hetero_sample's HeteroBatch
            x, y = b.hetero.x["paper"]["feat"], b.hetero.x["paper"]["labels"]
    links = client.stream(split="train", batch_size=256, num_neighbors={cites: [10, 5]},
                          link={"edge_type": cites, "neg": "binary"})  # link/train/src, .../dst, ...

Batch i is exactly ``client.hetero_sample({seed_type: b.seeds}, num_neighbors,
seed=b.request_seed, ...)``, or ``client.link_sample(edge_type, src, dst,
label=..., time=..., seed=b.request_seed, ...)`` on the edges at its
positions in the link split (``b.seeds`` are their sources). The seeds'
node type is ``seed_type``, by default a typed split's "TYPE/" prefix.

Lifetime: a StreamBatch owns its fs_stream_batch_t as a Batch owns its
fs_batch_t (featstore.client's module comment): ``seeds``, ``labels`` and
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
producer. Over unix:// the Client's streams share one owner, which keeps a
closed stream's producer connections for the next stream (the next epoch
starts warm); over grpc:// each stream has its own. Closing the Client
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
import ctypes
import os
import threading
from dataclasses import dataclass

import numpy as np

from . import _lib
from ._lib import lib
from .client import (_NP_DTYPES, STREAM_ORDERS, Batch, Error, Status, _batch_field, _Closing, _dtype_code, _Handle,
                     _ids, _name, _Releasable, _sample_req, _SlotUse, _view)
from .hetero import HeteroBatch, _Link, _Request, require_typed

__all__ = ["Stream", "StreamBatch", "StreamLink"]


def require_streams():
    """An Error (UNSUPPORTED) unless the loaded library has the stream calls."""
    if not _lib.streams:
        raise Error(Status.UNSUPPORTED, f"{_lib.path} is libfeatstore {_lib.version}, which has no epoch streams "
                                        f"(fs_stream_open): install libfeatstore 1.4 or later")


# ---- opening ------------------------------------------------------------------------

def _labels(value):
    """fs_stream_opts_t.labels: None (the dataset's "labels", if any), "" (none) or a table name."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"labels must be a table name, \"\" (no labels) or None (the dataset's), got {value!r}")
    return value.encode()


@dataclass(frozen=True)
class StreamLink:
    """What makes a stream a link stream (``Client.stream(link=...)``; a
    dict with these keys does too): the seed edges' `edge_type` (src, rel,
    dst), and their negatives as in ``Client.link_sample``: `neg` (None,
    "binary" or "triplet"), `amount`, `neg_weighted`, `strict` (a negative
    is never an edge of the graph) and `keep_seed_edges`. The edges
    themselves, with their labels and times when it has them, are the link
    split the stream's `split` names."""
    edge_type: tuple
    neg: object = None
    amount: float = 1.0
    neg_weighted: bool = False
    strict: bool = False
    keep_seed_edges: bool = False


_LINK_KEYS = tuple(StreamLink.__dataclass_fields__)


def _link(value):
    """link= as a _Link template (no edges: the stream's split gives them):
    from a dict, a StreamLink or an object with StreamLink's attributes."""
    if isinstance(value, dict):
        unknown = sorted(set(value) - set(_LINK_KEYS), key=str)
        if unknown:
            raise TypeError(f"link: unknown key(s) {', '.join(map(repr, unknown))} (known: {', '.join(_LINK_KEYS)})")
        if "edge_type" not in value:
            raise TypeError("link: give its edge_type, the seed edges' (src, rel, dst)")
        value = StreamLink(**value)
    elif not hasattr(value, "edge_type"):
        raise TypeError(f"link must be a dict or a featstore.StreamLink ({', '.join(_LINK_KEYS)}), got "
                        f"{type(value).__name__}")
    defaults = StreamLink(None)
    kw = {k: getattr(value, k, getattr(defaults, k)) for k in _LINK_KEYS}
    return _Link(**kw, what="link")


def _refuse(given, why):
    """A ValueError naming the options in `given` (name -> given?) that were given."""
    names = [name for name, is_given in given.items() if is_given]
    if names:
        raise ValueError(f"{', '.join(names)}: {why}")


def _options(split, seeds, batch_size, sample, table, dtype, labels, seed, epoch, rank, world_size, drop_last,
             prefetch, hold, order, chunk, start_batch, delta, window, hetero=None, seed_type=None, link=None,
             tables=None, producers=0):
    """An fs_stream_opts_t from Python values, checked, and what its
    pointers reach (the seed array, the table names: keep them alive through
    fs_stream_open; the requests sample, hetero and link, ctypes structs or
    None, too)."""
    if order not in _lib.FS_ORDER:
        raise ValueError(f"unknown stream order {order!r} (one of {', '.join(STREAM_ORDERS)})")
    if delta not in _lib.FS_DELTA:
        raise ValueError(f"unknown delta mode {delta!r} (one of {', '.join(_lib.FS_DELTA)})")
    if not 0 <= int(seed) < 2**64:
        raise ValueError(f"seed {seed} must be in [0, 2**64)")
    if int(window) == 0:  # the C struct's 0 means "unset" (1); from Python it is a mistake
        raise ValueError("window 0: a Match-Reorder window is 1 batch (no reorder) or more")
    ids = None if seeds is None else _ids(seeds, "seeds")
    ptr = lambda struct: None if struct is None else ctypes.pointer(struct)  # noqa: E731
    names = None if tables is None else (ctypes.c_char_p * max(len(tables), 1))(*[_name(t) for t in tables])
    opts = _lib.StreamOpts.new(
        split=None if split is None else _name(split),
        seeds=None if ids is None else ids.ctypes.data_as(_lib._p_i64), num_seeds=0 if ids is None else len(ids),
        batch_size=int(batch_size), drop_last=int(bool(drop_last)), sample=ptr(sample),
        table=None if table is None else _name(table), out_dtype=_dtype_code(dtype), labels=_labels(labels),
        seed=int(seed), epoch=int(epoch), rank=int(rank), world_size=int(world_size), prefetch=int(prefetch),
        order=_lib.FS_ORDER[order], chunk=int(chunk), start_batch=int(start_batch), hold=int(hold),
        delta=_lib.FS_DELTA[delta], window=int(window), hetero=ptr(hetero),
        seed_type=None if seed_type is None else _name(seed_type), link=ptr(link), tables=names,
        num_tables=0 if tables is None else len(tables), producers=int(producers))
    return opts, (ids, names)


def _requests(fanouts, table, dtype, mode, edge_ids, delta, window, num_neighbors, frontier, disjoint, temporal,
              strict, time_window, node_tables, edge_tables, want_edge_ids, seed_type, link, tables=None):
    """The stream's requests as (fs_sample_req_t or None, _Request or None,
    _Link or None): a node stream's sample request, or a typed stream's
    typed request (and link template), or none for a row stream (tables),
    each option checked against the kind of stream it belongs to."""
    if tables is not None:  # a row stream: no sampling
        _refuse({"fanouts": fanouts is not None, "num_neighbors": num_neighbors is not None, "table": table is not None,
                 "delta": delta != "off", "window": int(window) > 1, "link": link is not None, "edge_ids": edge_ids},
                "not for a row stream (tables= gathers the seeds' rows of each table, without sampling)")
        if isinstance(tables, (str, bytes)) or not len(tables):
            raise ValueError(f"tables must be a non-empty list of table names, got {tables!r}")
        return None, None, None
    if num_neighbors is None and link is None:  # a node stream
        _refuse({"frontier": frontier != "new", "disjoint": disjoint, "temporal": temporal is not None,
                 "strict": strict, "time_window": time_window, "node_tables": node_tables, "edge_tables": edge_tables,
                 "want_edge_ids": want_edge_ids, "seed_type": seed_type is not None},
                "options of typed streams: give num_neighbors (a dict (src, rel, dst) -> fanouts) for one")
        if fanouts is None:
            raise ValueError("fanouts: a node stream needs one fanout per hop (or give num_neighbors for a typed "
                             "stream)")
        return _sample_req(fanouts, mode, 0, edge_ids), None, None  # its seed is set per batch
    require_typed()
    _refuse({"fanouts": fanouts is not None, "table": table is not None, "delta": delta != "off",
             "window": int(window) > 1, "edge_ids": edge_ids},
            "not for a typed stream (num_neighbors is its request: put its tables in node_tables and "
            "edge_tables, ask for edge ids with want_edge_ids)")
    # a link stream without num_neighbors goes on to fs_stream_open, which names what it lacks
    typed = None if num_neighbors is None else _Request(
        num_neighbors, 0, mode, frontier, disjoint, temporal, strict, time_window, node_tables, edge_tables, dtype,
        want_edge_ids)
    return None, typed, None if link is None else _link(link)


def open_stream(client, *, split, seeds, batch_size, fanouts, table, dtype, labels, seed, epoch, rank, world_size,
                drop_last, prefetch, hold, order, chunk, start_batch, mode, edge_ids, delta="off", window=1,
                num_neighbors=None, frontier="new", disjoint=False, temporal=None, strict=False, time_window=0,
                node_tables=(), edge_tables=(), want_edge_ids=False, seed_type=None, link=None, tables=None,
                producers=0):
    """Client.stream (see there)."""
    require_streams()
    if client.closed:
        raise ValueError("featstore client is closed")
    sample, typed, lk = _requests(fanouts, table, dtype, mode, edge_ids, delta, window, num_neighbors, frontier,
                                  disjoint, temporal, strict, time_window, node_tables, edge_tables, want_edge_ids,
                                  seed_type, link, tables)
    # the requests and ids stay alive (locals) through fs_stream_open, which copies what it needs
    opts, keep = _options(split, seeds, batch_size, sample, table, dtype if sample or tables else None, labels, seed,
                          epoch, rank, world_size, drop_last, prefetch, hold, order, chunk, start_batch, delta,
                          window, hetero=None if typed is None else typed.c, seed_type=seed_type,
                          link=None if lk is None else lk.c, tables=tables, producers=producers)
    for attempt in range(2):
        owner = _Owner.take(client)
        out = ctypes.c_void_p()
        with owner.lock:  # fs_stream_open uses the owner: one thread at a time
            st = lib.fs_stream_open(owner.c, ctypes.byref(opts), ctypes.byref(out))
            message = "" if st == Status.OK else lib.fs_client_errstr(owner.c).decode(errors="replace")
        if st == Status.OK:
            break
        owner.retire(client)
        if st != Status.UNAVAILABLE or attempt:
            raise Error(st, message)
        # a kept owner whose server went away (restarted between epochs): once more on a new one
    tables = None if typed is None else (typed.node_tables, typed.edge_tables)
    return Stream(client.uri, owner, out, tables)


class _Owner:
    """The C connection streams are opened on (fs_stream_open's owner: they
    copy its URI and options). A unix:// Client keeps one for all its
    streams: a closed stream leaves its producers' connections with it, and
    the next one, the next epoch's, starts on them, their engines warm and
    the dataset already mapped and checked (docs/api.md §11, "Connections
    kept between epochs").
    Closed when the Client and its every stream have let go of it. A
    grpc:// stream gets one of its own: gRPC's threads do not survive a fork
    (client.py, _before_fork), so a Client keeps no gRPC connection open
    between calls but its own."""

    _refs_lock = threading.Lock()

    def __init__(self, c, refs):
        self.c, self.refs, self.pid = c, refs, os.getpid()
        self.lock = threading.Lock()

    @classmethod
    def take(cls, client):
        """A reference to client's owner (made if it has none, or its one is
        a parent process's), or a new one of the stream's own."""
        if client.transport != "unix":
            return cls(client._open("stream: ", slots=1), 1)
        with client._lock:
            kept = client.__dict__.get("_stream_owner")
            if kept is None or kept.pid != os.getpid():
                kept = client._stream_owner = cls(client._open("stream: ", slots=1), 1)  # the Client's reference
            kept.acquire()
            return kept

    def acquire(self):
        with self._refs_lock:
            self.refs += 1

    def release(self):
        """Drops one reference; the last closes the connection (and the
        producers' connections it keeps). In a forked child: nothing (the
        parent's)."""
        with self._refs_lock:
            self.refs -= 1
            last = self.refs == 0
        if last and self.pid == os.getpid():
            lib.fs_close(self.c)

    def retire(self, client):
        """After a failed fs_stream_open: the stream's reference dropped, and
        the Client's too, so that the next stream connects anew."""
        with client._lock:
            if client.__dict__.get("_stream_owner") is self:
                client._stream_owner = None
                self.release()
        self.release()


# ---- the stream ---------------------------------------------------------------------

class Stream(_Closing):
    """One rank's share of an epoch (fs_stream_t *): an iterator of
    ``StreamBatch``, from ``Client.stream``. A context manager; ``close()``
    is idempotent and also happens when the Stream is garbage. See the
    module comment."""

    def __init__(self, uri, owner, ptr, tables=None):
        self.uri = uri
        self._tables = tables  # a typed stream's (node tables, edge tables): its batches' x and edge_attr keys
        self._lock = threading.Lock()
        self._owner, self._s = owner, ptr
        self._pid = os.getpid()
        self._use = _SlotUse()  # its batches: held, and released but kept by arrays
        self.num_batches = lib.fs_stream_num_batches(ptr)
        self._position = lib.fs_stream_position(ptr)  # kept for reading after close()

    def _forked(self):
        """True in a process forked after the stream was opened. Checked
        before taking the lock, which a thread of the parent may have held
        at the fork."""
        return self._pid != os.getpid()

    def _refuse_in_fork(self, what):
        if self._forked():
            raise Error(Status.INVALID_ARGUMENT, f"stream opened by process {self._pid} before it forked: {what} "
                                                 f"cannot be used in process {os.getpid()} (its producer thread is "
                                                 f"the parent's); open a stream in this process")

    def _live(self, what):
        """The C stream (the caller holds the lock), or a ValueError once closed."""
        if self._s is None:
            raise ValueError(f"featstore stream is closed: {what} needs an open one")
        return self._s

    def __iter__(self):
        return self

    def __next__(self):
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
    def position(self):
        """The index of the batch the next ``next()`` returns: the cursor to
        resume from (``start_batch=``). After close(), where it stopped."""
        self._refuse_in_fork("position")
        with self._lock:
            if self._s is not None:
                self._position = lib.fs_stream_position(self._s)
            return self._position

    @property
    def ready(self):
        """Batches made ahead and waiting (0..prefetch); 0 once closed."""
        self._refuse_in_fork("ready")
        with self._lock:
            return lib.fs_stream_ready(self._s) if self._s is not None else 0

    @property
    def held_batches(self):
        """This stream's batches not yet freed: not released, or released but
        held by arrays (what ``hold`` counts)."""
        return self._use.held

    @property
    def closed(self):
        return self._s is None

    def close(self):
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
            owner.release()  # after the stream: its producers reconnect through the owner

    def __repr__(self):
        state = "closed" if self.closed else f"at batch {self._position}"
        return f"<featstore.Stream {self.uri} {self.num_batches} batches, {state}>"


# ---- its batches ----------------------------------------------------------------------

class _StreamHandle(_Handle):
    """Owns one fs_stream_batch_t * (as _Handle owns an fs_batch_t *). In a
    forked child it frees nothing: fs_stream_batch_free takes the stream's
    lock, which a thread the child does not have may have held at the fork."""

    _FREE = "fs_stream_batch_free"

    def __init__(self, ptr, use):
        super().__init__(ptr, use)
        self.pid = os.getpid()

    def __del__(self):
        if self.pid != os.getpid():
            self.ptr = None
            return
        super().__del__()


def _match_fields(h, b):
    """A batch's features and Match's delta as zero-copy views."""
    dtype = _NP_DTYPES.get(b.dtype)
    nodes = b.batch.contents.num_nodes if b.batch else 0
    rows = lambda p, n: _view(h, ctypes.cast(p, ctypes.c_void_p), (n, b.dim), dtype) if p and dtype else None  # noqa: E731
    return {"features": rows(b.features, nodes), "new_rows": rows(b.new_rows, b.num_new),
            "take": _view(h, b.take, (nodes,), np.int64) if b.take else None}


class StreamBatch(_Releasable):
    """One batch of a stream (fs_stream_batch_t *): ``batch``, a ``Batch``
    holding the sample and the features (released with this StreamBatch,
    never on its own), its place ``index`` in the epoch, the
    ``request_seed`` it was sampled with, its ``seeds`` and their
    ``labels``. A typed or link stream's batch has ``hetero`` instead, a
    ``HeteroBatch`` (likewise released with this StreamBatch), ``batch``
    and ``labels`` None, and a link batch's ``seeds`` are its seed edges'
    sources. See the module comment for the lifetime rule."""

    _NAME = "StreamBatch"
    _COPY_HINT = "np.array(b.seeds)"

    def __init__(self, ptr, use, tables=None):
        h = _StreamHandle(ptr, use)
        b = ptr.contents
        n = b.num_seeds
        self._pid = os.getpid()
        typed = bool(b.hetero)
        if typed:  # region(): the typed batch's memory
            self._REGION = "fs_hetero_batch_region"
        node_tables, edge_tables = tables or ((), ())
        self._fields = {
            "handle": h,
            "ptr": b.hetero if typed else b.batch,  # region(): the memory of the sample and the features
            "batch": Batch(b.batch, handle=h) if b.batch else None,
            "tables": [Batch(b.tables[k], handle=h) for k in range(b.num_tables)] if b.num_tables else None,
            "hetero": HeteroBatch(b.hetero, node_tables=node_tables, edge_tables=edge_tables, handle=h)
            if typed else None,
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
                                  "in a typed or link stream")
    tables = _batch_field("tables", "a row stream's batches: one Batch per table (kind \"gather\", row i for "
                                    "seeds[i]), ended with this StreamBatch; None in other streams")
    hetero = _batch_field("hetero", "a typed or link stream's batch: a HeteroBatch as Client.hetero_sample's or "
                                    "link_sample's, ended with this StreamBatch; None in a node stream")
    index = _batch_field("index", "its place in this rank's epoch, 0..num_batches-1")
    request_seed = _batch_field("request_seed", "the sampling seed it was made with (sample_gather's seed=)")
    num_seeds = _batch_field("num_seeds", "len(seeds)")
    seeds = _batch_field("seeds", "int64 [num_seeds]: the batch's seeds (global ids), in order; a link batch's "
                                  "seed edges' sources")
    labels = _batch_field("labels", "int64 [num_seeds]: the seeds' labels, None when the stream has no label table "
                                    "(a typed stream's are in hetero.x[type]['labels'] when node_tables has them)")
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

    def release(self):
        """Ends this StreamBatch and its ``batch`` or ``hetero`` (see
        Batch.release); the C batch goes back once no array taken from them
        is alive."""
        fields = self._fields
        if fields is not None:
            for inner in (fields["batch"], fields["hetero"], *(fields["tables"] or ())):
                if inner is not None:
                    inner.release()
        super().release()

    def __repr__(self):
        if self.released:
            return "<featstore.StreamBatch released>"
        if self._pid != os.getpid():
            return f"<featstore.StreamBatch of process {self._pid}>"
        f = self._fields
        kind = "" if f["hetero"] is None else " link" if f["hetero"].link_types else " typed"
        return f"<featstore.StreamBatch index={f['index']} seeds={f['num_seeds']}{kind}>"
